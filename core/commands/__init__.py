"""Sub-commands of ``python -m core``; see ``core.cli.COMMAND_MODULES``."""
