"""``python -m fusedmoe ...``: the command line of :mod:`fusedmoe.cli`."""

from .cli import main

raise SystemExit(main())
