"""``python -m semmap.manifest``: the ``semmap-manifest`` command (see :mod:`semmap.manifest._cli`)."""

import sys

from semmap.manifest._cli import main

sys.exit(main())
