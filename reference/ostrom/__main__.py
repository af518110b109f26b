"""``python -m ostrom`` is the ``ostrom`` command."""

from ostrom.cli.main import main

main()
