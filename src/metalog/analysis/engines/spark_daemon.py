"""The daemon Spark forks its Python workers from on ``local[*]`` masters (``spark.python.daemon.module``):
pyspark's own, after importing the modules the engine's tasks run (the replay, the writers, the growth pass, the
report's reading, every record type's generated reader, and pyspark's worker loop itself), so that each worker has
them from the fork rather than importing them again. pyarrow is not imported here: it starts threads as it loads,
and a process should fork with one thread (pyspark's daemon imports its worker after the fork for that reason:
``pyspark.worker`` starts none, and a test keeps the daemon at one thread); the tasks import it themselves.

What the daemon imported is then frozen out of the cyclic garbage collector (``gc.freeze``, made for a process
that forks without exec): a reused worker runs ``gc.collect()`` after every task, which walked every object of
those modules each time (about 15 ms a task on a small job: 0.36 s of each worker's CPU over 21 tasks, against
0.05 s frozen; load 3.5, 2026-11-28), and the pages the collector no longer writes stay shared with the daemon.

Spark puts its ``pyspark.zip`` and py4j's zip first on the workers' path. Python compiles every module it imports
from a zip anew in each process (zipimport keeps no bytecode cache): 190 modules, about 0.4 s of CPU in the daemon
and more in each worker, every run. Where a zip is the copy a pip-installed pyspark (or py4j) carries of itself,
of the same version, the installed package is imported instead: the same code, from its cached bytecode."""

from __future__ import annotations

import gc
import importlib
import importlib.machinery
import os
import re
import sys
import zipfile
from pathlib import Path

TASK_MODULES = ("metalog.analysis.engines.spark_tables", "metalog.analysis.engines.spark",
                "metalog.analysis.outputs.growth_tables", "metalog.analysis.outputs.report",
                "pyspark.worker")  # (each worker imports pyspark's worker loop after the fork otherwise)
ARROW_MODULES = ("pyarrow", "pyarrow.parquet", "pyarrow.compute", "pyarrow.ipc")  # what the tasks import of it
# the environment under which pyarrow loads without starting a thread: its jemalloc's settings (Arrow builds it with
# the ``je_arrow_`` prefix, so it reads JE_ARROW_MALLOC_CONF) and numpy's OpenBLAS threads
THREAD_FREE = {"JE_ARROW_MALLOC_CONF": "background_thread:false", "OPENBLAS_NUM_THREADS": "1"}
_VERSION = re.compile(r"""__version__[^=]*=\s*['"]([^'"]+)['"]""")


def preload() -> None:
    """The modules every task runs, imported: ``TASK_MODULES``, and each record type's generated reader (a replay
    imports those of the records it meets, as it meets them)."""
    from metalog.codec.core import load_all

    for module in TASK_MODULES:
        importlib.import_module(module)
    load_all()


def preload_arrow(environ: os._Environ[str] | dict[str, str]) -> bool:
    """pyarrow's modules the tasks use imported (``ARROW_MODULES``), where ``environ`` lets them load without a
    thread (``THREAD_FREE``, set where the user set neither variable); whether they were (not where the user chose
    otherwise, or without pyarrow)."""
    for name, value in THREAD_FREE.items():
        if environ.setdefault(name, value) != value:
            return False
    try:
        for module in ARROW_MODULES:
            importlib.import_module(module)
    except ImportError:
        return False
    return True


def prepare(path: list[str]) -> None:
    """The daemon made ready to fork workers: the installed pyspark and py4j imported rather than Spark's zips of
    them (``installed_copies``, dropped from ``path``), the tasks' modules and pyarrow imported (``preload``,
    ``preload_arrow``), and all of it frozen out of the cyclic garbage collector's reach (``gc.freeze``)."""
    for copy in installed_copies(path):
        path.remove(copy)
        # (and the zip's importer Python cached on the way here: a worker's first task invalidates the import
        # caches, which reads every cached zip's directory again, 0.02 s a worker for these two)
        sys.path_importer_cache.pop(copy, None)
    preload_arrow(os.environ)  # (first: its environment is set before anything could load pyarrow or numpy)
    preload()
    gc.freeze()


def installed_copies(path: list[str]) -> list[str]:
    """The entries of ``path`` that are zips of a package installed elsewhere on ``path`` at the same version
    (pyspark's ``pyspark.zip``, py4j's ``py4j-*-src.zip``): the zips the workers need not import from."""
    unzipped = [entry for entry in path if not entry.endswith(".zip")]
    out = []
    for entry in path:
        name = Path(entry).name
        package = "pyspark" if name == "pyspark.zip" else "py4j" if re.fullmatch(r"py4j-.*-src\.zip", name) else None
        if package is None:
            continue
        spec = importlib.machinery.PathFinder.find_spec(package, unzipped)
        if spec is None or not spec.submodule_search_locations:
            continue
        installed = Path(next(iter(spec.submodule_search_locations))) / "version.py"
        zipped = _version_in_zip(entry, f"{package}/version.py")
        if zipped is not None and installed.is_file() and _version_of(installed.read_text(errors="replace")) == zipped:
            out.append(entry)
    return out


def _version_of(text: str) -> str | None:
    match = _VERSION.search(text)
    return match[1] if match else None


def _version_in_zip(zip_path: str, member: str) -> str | None:
    try:
        with zipfile.ZipFile(zip_path) as z:
            return _version_of(z.read(member).decode(errors="replace"))
    except (OSError, KeyError, zipfile.BadZipFile):
        return None


if __name__ == "__main__":
    prepare(sys.path)
    from pyspark import daemon

    daemon.manager()
