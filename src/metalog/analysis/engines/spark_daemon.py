"""The daemon Spark forks its Python workers from on ``local[*]`` masters (``spark.python.daemon.module``):
pyspark's own, after importing the modules the engine's tasks run (the replay, the writers, the growth pass, the
report's reading), so that each worker has them from the fork rather than importing them again. pyarrow is not
imported here: it starts threads as it loads, and a process should fork with one thread (pyspark's daemon imports
its worker after the fork for that reason); the tasks import it themselves."""

from __future__ import annotations

import importlib

TASK_MODULES = ("metalog.analysis.engines.spark_tables", "metalog.analysis.engines.spark",
                "metalog.analysis.outputs.growth_tables", "metalog.analysis.outputs.report")


def preload() -> None:
    for module in TASK_MODULES:
        importlib.import_module(module)


if __name__ == "__main__":
    preload()
    from pyspark import daemon

    daemon.manager()
