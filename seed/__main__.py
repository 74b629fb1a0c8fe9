"""python -m seed COMMAND: the `seed` command (seed/cli.py)."""
from seed import cli

cli.run()
