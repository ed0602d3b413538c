"""htam_core.cli: the ``htam`` subcommands, one module each (:data:`htam_core.cli.main.SUBCOMMANDS`).

Every subcommand module is imported to build ``htam --help``, so each one imports the engine inside its
``run`` function, not at module level: that is for start-up speed only (torch, openai and the compilers load
for the command that needs them), never to dodge an import cycle (``tests/test_architecture.py``).
"""
