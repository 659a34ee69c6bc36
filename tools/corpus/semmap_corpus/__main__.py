"""``python -m semmap_corpus DEST [--slice NAME]``: see :mod:`semmap_corpus.corpus`."""

import sys

from semmap_corpus.corpus import main

sys.exit(main())
