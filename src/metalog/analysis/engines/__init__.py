"""The engines of the analysis: the python engine, the parallel replay and Spark."""
