"""Candidate generators: the LLM generator (any OpenAI-compatible endpoint) and the registry that also
exposes the built-in rules engine. Prompts are built from HTAM memory (``prompt.py``, templates in
``templates/``) and code is extracted from replies by ``parse.py``."""
