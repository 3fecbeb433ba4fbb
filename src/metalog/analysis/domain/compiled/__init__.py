"""The analysis' compiled twins, hand-written Cython built at install where a C compiler is present (setup.py), chosen
by ``metalog.analysis.domain.twins`` (``METALOG_PURE=1`` runs the pure twins):

- ``step``: the per-batch step (``metalog.analysis.domain.step.ClusterStep``);
- ``loop``: the per-batch loop (``metalog.analysis.domain.loop.BatchLoop``), told of each batch's end by the log's
  compiled scan in C.
"""
