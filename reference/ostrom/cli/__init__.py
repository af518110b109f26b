"""The ``ostrom`` command: one entry point per subcommand."""
