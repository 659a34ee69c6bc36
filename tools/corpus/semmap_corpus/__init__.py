"""semmap_corpus: builds semmap's fixture corpus (``fixtures/``) for development.

Not part of the ``semmap`` distribution: it builds real models from their
configs, exports them with ``torch.onnx.export`` (semmap.manifest), post-
processes them with the real tools (onnxslim, ONNX Runtime's optimizers and
quantizer, Optimum) and derives each node's ground truth. ``scripts/build-corpus``
runs it; ``fixtures/README.md`` describes the result.

Modules, in dependency order: :mod:`~semmap_corpus.specs` (the architectures
of each slice), :mod:`~semmap_corpus.node_ids`, :mod:`~semmap_corpus.graph_index`,
:mod:`~semmap_corpus.truth`, :mod:`~semmap_corpus.matching`,
:mod:`~semmap_corpus.strip`, :mod:`~semmap_corpus.sanitize`,
:mod:`~semmap_corpus.store` (what a build records), :mod:`~semmap_corpus.variants`
and :mod:`~semmap_corpus.optimum_fixtures` (derived fixtures), and
:mod:`~semmap_corpus.corpus` (the build, ``python -m semmap_corpus``).
"""
