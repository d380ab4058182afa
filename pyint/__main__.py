"""``python -m pyint ...`` is the ``pyint`` command (:func:`pyint.cli.main`)."""
import sys

from .cli import main

sys.exit(main())
