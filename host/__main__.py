"""``python -m host``: the same as the ``host`` command."""

import sys

from host.cli import main

sys.exit(main())
