"""Loading of the prompt templates (data files under ``htam_core/generate/templates/``).

Templates use :class:`string.Template` syntax (``$name``); every placeholder must be filled
(``substitute``), so a template and the code that fills it cannot drift apart silently.
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from string import Template

from htam_core.generate.errors import GenerationError


@cache
def load_template(name: str) -> Template:
    """The template ``templates/<name>.md`` as a :class:`string.Template`.

    Raises:
        GenerationError: no such template file (the package data is incomplete).
    """
    try:
        text = resources.files("htam_core.generate").joinpath("templates", f"{name}.md").read_text("utf-8")
    except FileNotFoundError as exc:
        raise GenerationError(f"prompt template {name}.md is missing from htam_core/generate/templates; "
                              f"reinstall the package") from exc
    return Template(text)


def render(template_name: str, /, **values: object) -> str:
    """Fill template ``template_name`` with ``values`` (all placeholders required).

    Raises:
        GenerationError: a placeholder has no value.
    """
    try:
        return load_template(template_name).substitute({k: str(v) for k, v in values.items()})
    except KeyError as exc:
        raise GenerationError(f"prompt template {template_name}.md needs a value for {exc}") from exc
