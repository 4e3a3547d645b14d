"""One module per ``cganalysis`` subcommand (see :mod:`cganalysis.cli`)."""
