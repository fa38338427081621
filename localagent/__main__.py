"""``python -m localagent``: the same as the ``localagent`` command."""

from .cli import main

main()
