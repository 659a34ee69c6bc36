"""``python -m semmap_corpus DEST [--slice NAME]``: build the corpus (:mod:`semmap_corpus.corpus`).

``python -m semmap_corpus refresh-manifests --slice NAME``: rewrite its
manifests with forward signatures (:mod:`semmap_corpus.refresh`).
"""

import sys

if sys.argv[1:2] == ["refresh-manifests"]:
    from semmap_corpus.refresh import main

    sys.exit(main(sys.argv[2:]))

from semmap_corpus.corpus import main

sys.exit(main())
