"""Small text rules shared by every layer that shows a knowledge-base guidance to a person.

:func:`first_sentence` is the one rule that cuts "how to apply it" out of a strategy's guidance (the ranker's
rationale, the refusal of a strategy with no transform, the hover's advice).
"""

from __future__ import annotations

import re

__all__ = ["first_sentence"]

#: A sentence ends at ``.``, ``!`` or ``?`` (an ellipsis included) followed by white space and a capital letter,
#: a digit or an opening bracket/quote; "e.g. the" and "x.y" do not end one.
_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9(\"'`])")


def first_sentence(text: str, *, stop: bool = True) -> str:
    """The first sentence of ``text`` on one line (white space collapsed), whole; ``""`` for empty text.

    ``stop=False`` drops a final full stop (an ellipsis stays), for a sentence that goes on inside another.
    """
    flat = " ".join(text.split())
    first = _END.split(flat, maxsplit=1)[0] if flat else ""
    if not stop and first.endswith(".") and not first.endswith(".."):
        first = first[:-1]
    return first
