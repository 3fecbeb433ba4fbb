"""The workers' daemon imports the installed pyspark and py4j rather than Spark's zips of them, only where those
zips are copies of the same version (``spark_daemon.installed_copies``)."""

from __future__ import annotations

import zipfile
from pathlib import Path

from metalog.analysis.engines.spark_daemon import THREAD_FREE, installed_copies, preload_arrow


def package(root: Path, name: str, version: str) -> Path:
    (root / name).mkdir(parents=True)
    (root / name / "__init__.py").write_text("")
    (root / name / "version.py").write_text(f"__version__: str = '{version}'\n")
    return root


def zipped(path: Path, name: str, version: str) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as z:
        z.writestr(f"{name}/__init__.py", "")
        z.writestr(f"{name}/version.py", f'__version__ = "{version}"\n')
    return str(path)


def test_only_zips_of_an_installed_package_of_the_same_version_are_dropped(tmp_path: Path) -> None:
    site = package(package(tmp_path / "site", "pyspark", "4.3.0"), "py4j", "0.10.9.9")
    spark_zip = zipped(tmp_path / "site" / "pyspark" / "python" / "lib" / "pyspark.zip", "pyspark", "4.3.0")
    py4j_zip = zipped(tmp_path / "site" / "pyspark" / "python" / "lib" / "py4j-0.10.9.9-src.zip", "py4j", "0.10.9.9")
    assert installed_copies([spark_zip, py4j_zip, str(site)]) == [spark_zip, py4j_zip]
    other = zipped(tmp_path / "other" / "pyspark.zip", "pyspark", "4.2.0")  # another Spark's: kept
    old_py4j = zipped(tmp_path / "other" / "py4j-0.10.9.7-src.zip", "py4j", "0.10.9.7")
    assert installed_copies([other, old_py4j, str(site)]) == []
    assert installed_copies([spark_zip, py4j_zip]) == []  # nothing installed besides: the zips are needed
    unrelated = zipped(tmp_path / "site" / "deps.zip", "pyspark", "4.3.0")
    assert installed_copies([unrelated, str(site)]) == []
    broken = tmp_path / "broken" / "pyspark.zip"
    broken.parent.mkdir()
    broken.write_bytes(b"not a zip")
    assert installed_copies([str(broken), str(site)]) == []


def test_pyarrow_is_preloaded_only_where_it_loads_without_a_thread() -> None:
    """The daemon imports pyarrow before it forks only under ``THREAD_FREE`` (no jemalloc background thread, one
    OpenBLAS thread), set where the user set neither variable; a user's own setting is kept, and pyarrow is then
    left to each worker."""
    environ: dict[str, str] = {}
    assert preload_arrow(environ) is True
    assert environ == THREAD_FREE
    for name in THREAD_FREE:
        chosen = {name: "4" if name == "OPENBLAS_NUM_THREADS" else "background_thread:true"}
        assert preload_arrow(dict(chosen)) is False
        mine = dict(chosen)
        preload_arrow(mine)
        assert mine[name] == chosen[name]
