"""The engines of the analysis, one interface (``request``: a request in, the tables on disk and a summary out):
the python engine (``python``), the parallel replay in one process (``parallel``) and Spark (``spark``), all three
over the loop of ``replay``."""
