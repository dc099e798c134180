"""Sub-commands of ``python -m isoscope``; see ``isoscope.cli.COMMAND_MODULES``."""
