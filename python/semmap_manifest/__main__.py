"""``python -m semmap_manifest``: see :mod:`semmap_manifest.cli`."""

import sys

from semmap_manifest.cli import main

sys.exit(main())
