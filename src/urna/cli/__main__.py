"""``python -m urna.cli``: the console script, run as a module."""

from urna.cli import console

console()
