"""The daemon Spark forks its Python workers from on ``local[*]`` masters (``spark.python.daemon.module``):
pyspark's own, after importing the modules the engine's tasks run (the replay, the writers, the growth pass, the
report's reading), so that each worker has them from the fork rather than importing them again. pyarrow is not
imported here: it starts threads as it loads, and a process should fork with one thread (pyspark's daemon imports
its worker after the fork for that reason); the tasks import it themselves.

Spark puts its ``pyspark.zip`` and py4j's zip first on the workers' path. Python compiles every module it imports
from a zip anew in each process (zipimport keeps no bytecode cache): 190 modules, about 0.4 s of CPU in the daemon
and more in each worker, every run. Where a zip is the copy a pip-installed pyspark (or py4j) carries of itself,
of the same version, the installed package is imported instead: the same code, from its cached bytecode."""

from __future__ import annotations

import importlib
import importlib.machinery
import re
import sys
import zipfile
from pathlib import Path

TASK_MODULES = ("metalog.analysis.engines.spark_tables", "metalog.analysis.engines.spark",
                "metalog.analysis.outputs.growth_tables", "metalog.analysis.outputs.report")
_VERSION = re.compile(r"""__version__[^=]*=\s*['"]([^'"]+)['"]""")


def preload() -> None:
    for module in TASK_MODULES:
        importlib.import_module(module)


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
    for copy in installed_copies(sys.path):
        sys.path.remove(copy)
    preload()
    from pyspark import daemon

    daemon.manager()
