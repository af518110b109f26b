"""``python -m ostrom`` is the ``ostrom`` command."""

from ostrom.cli.main import main

__all__: list[str] = []  # a script: running it is its use

main()
