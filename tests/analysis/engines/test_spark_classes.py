"""The driver JVM's class archive (``spark_classes``): written once, as the process exits after clean sessions,
under a temporary name renamed into place; used only when whole; a bad or missing file costs speed, never the run;
nothing in the cache directory removed that metalog did not write there."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from metalog.analysis.engines.spark_classes import (
    OPT_OUT,
    STALE_AFTER,
    ClassArchive,
    archive_key,
    cache_dir,
    class_archive,
    prune,
)


def spark_home(root: Path) -> Path:
    (root / "jars").mkdir(parents=True)
    for name in ("spark-core.jar", "scala-library.jar"):
        (root / "jars" / name).write_bytes(name.encode())
    return root


def installed(where: Path, data: bytes) -> ClassArchive:
    archive = ClassArchive(where / "spark-key.jsa")
    written = archive.temporary()
    written.write_bytes(data)
    archive.install(written)
    assert not written.exists()
    return archive


def test_an_archive_is_used_only_whole(tmp_path: Path) -> None:
    """Before: no check (a truncated archive crashes the JVM with SIGBUS before its own checks refuse it)."""
    archive = installed(tmp_path, os.urandom(3 << 20))
    assert archive.usable()
    data = archive.path.read_bytes()
    archive.path.write_bytes(data[: len(data) // 2])  # truncated
    assert not archive.usable()
    archive.path.write_bytes(data[:100] + bytes([data[100] ^ 1]) + data[101:])  # one bit flipped
    assert not archive.usable()
    archive.path.write_bytes(data)
    assert archive.usable()
    archive.sums.unlink()  # (renamed into place, its sidecar not yet)
    assert not archive.usable()
    assert not ClassArchive(tmp_path / "none.jsa").usable()


def test_only_this_modules_own_stale_temporary_files_are_removed(tmp_path: Path) -> None:
    archive = ClassArchive(tmp_path / "spark-key.jsa")
    old = time.time() - STALE_AFTER - 60
    stale = [tmp_path / "spark-key.jsa.123-abcd1234.tmp", tmp_path / "spark-key.jsa.123-abcd1234.tmp.sum"]
    kept = [tmp_path / "spark-key.jsa.456-abcd1234.tmp",  # a run writing now
            tmp_path / "notes.txt", tmp_path / "spark-other.jsa.789-abcd1234.tmp.bak", tmp_path / "spark-key.jsa"]
    for path in stale + kept:
        path.write_text("x")
        if path.name != "spark-key.jsa.456-abcd1234.tmp":
            os.utime(path, (old, old))
    written = archive.temporary()
    assert written.parent == tmp_path and written.name.startswith(f"spark-key.jsa.{os.getpid()}-")
    assert not any(p.exists() for p in stale) and all(p.exists() for p in kept)


def test_the_cache_directory_and_the_opt_out(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = spark_home(tmp_path / "spark")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv(OPT_OUT)
    assert cache_dir() == tmp_path / "cache" / "metalog"
    archive = class_archive(sys.executable, home)
    assert archive is not None and archive.path.parent == tmp_path / "cache" / "metalog" / "spark-classes"
    assert archive.path.parent.is_dir() and not archive.usable()
    for off in ("off", "0", "no", "False"):
        monkeypatch.setenv(OPT_OUT, off)
        assert class_archive(sys.executable, home) is None
    monkeypatch.setenv(OPT_OUT, "on")
    assert class_archive(sys.executable, tmp_path / "no-spark") is None  # no jars: nothing to archive
    monkeypatch.setenv("XDG_CACHE_HOME", "relative")  # ignored, as the XDG spec says
    assert cache_dir() == Path.home() / ".cache" / "metalog"


def test_the_key_changes_with_the_jars(tmp_path: Path) -> None:
    home = spark_home(tmp_path / "spark")
    key = archive_key(sys.executable, home)
    assert archive_key(sys.executable, home) == key
    jar = home / "jars" / "spark-core.jar"
    os.utime(jar, ns=(jar.stat().st_atime_ns, jar.stat().st_mtime_ns + 1_000_000))
    assert archive_key(sys.executable, home) != key


def for_install(where: Path, java: str, home: Path) -> ClassArchive:
    """An archive installed for ``java`` and Spark ``home``, as ``class_archive`` names it."""
    archive = ClassArchive(where / f"spark-{archive_key(java, home)}.jsa", java, home)
    written = archive.temporary()
    written.write_bytes(b"classes")
    archive.install(written)
    return archive


def test_only_the_archives_of_installations_gone_or_changed_are_removed(tmp_path: Path) -> None:
    """Before: an archive per Spark installation ever used (70 MB each), none ever removed. As an archive is
    installed, those whose ``.for`` names an installation removed (b) or changed since (c: a jar replaced) go with
    their sidecars; an archive of an installation still there (a), one without ``.for`` (written before it
    existed), one whose ``.for`` this module did not write, and any other file stay."""
    where = tmp_path / "cache"
    where.mkdir()
    java = tmp_path / "jdk" / "bin" / "java"
    java.parent.mkdir(parents=True)
    java.write_bytes(b"java")
    homes = {name: spark_home(tmp_path / name) for name in "abcd"}
    a, b, c = (for_install(where, str(java), homes[name]) for name in "abc")
    assert all(p.exists() for archive in (a, b, c) for p in (archive.path, archive.sums, archive.owner))
    older = where / f"spark-{'0' * 20}.jsa"
    others = [older, older.with_name(older.name + ".sum"), where / "notes.txt", where / "spark-mine.jsa",
              where / "spark-mine.jsa.for", where / f"spark-{'1' * 20}.jsa", where / f"spark-{'1' * 20}.jsa.for"]
    for path in others:
        path.write_text("x")
    (where / "spark-mine.jsa.for").write_text('{"java": "/gone", "spark_home": "/gone"}')  # not an archive's name
    shutil.rmtree(homes["b"])
    jar = homes["c"] / "jars" / "spark-core.jar"
    os.utime(jar, ns=(jar.stat().st_atime_ns, jar.stat().st_mtime_ns + 1_000_000))
    d = for_install(where, str(java), homes["d"])
    gone = [p for archive in (b, c) for p in (archive.path, archive.sums, archive.owner)]
    assert not any(p.exists() for p in gone)
    assert all(p.exists() for archive in (a, d) for p in (archive.path, archive.sums, archive.owner))
    assert all(p.exists() for p in others)
    java.unlink()  # the JDK removed: its archives go at the next install
    assert sorted(prune(where)) == sorted(p for archive in (a, d) for p in (archive.path, archive.sums,
                                                                          archive.owner))
    assert sorted(where.iterdir()) == sorted(others)


SESSION = """
import sys
from pathlib import Path
from metalog.analysis.engines.spark_session import jvm_pid, spark_context

with spark_context("local[1]", app="metalog tests") as sc:
    flags = Path(f"/proc/{jvm_pid()}/cmdline").read_bytes().decode().split("\\0")
    print(" ".join(f for f in flags if "Archive" in f or f.startswith("-Xlog")), flush=True)
    assert sc.parallelize([1, 2], 1).count() == 2
    if sys.argv[1] == "fail":
        raise ValueError("the analysis failed")
"""


def session(cache: Path, how: str = "ok") -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != OPT_OUT} | {"XDG_CACHE_HOME": str(cache)}
    return subprocess.run([sys.executable, "-c", SESSION, how], env=env, capture_output=True, text=True,
                          timeout=600)


@pytest.mark.slow  # four JVMs, two of which write an archive as they exit
def test_the_first_session_writes_the_archive_and_the_next_maps_it(spark_java: None, tmp_path: Path) -> None:
    where = tmp_path / "metalog" / "spark-classes"
    failed = session(tmp_path, "fail")
    assert failed.returncode == 1 and "ValueError: the analysis failed" in failed.stderr
    assert "-XX:ArchiveClassesAtExit=" in failed.stdout
    assert list(where.iterdir()) == []  # a session that failed keeps no archive, and leaves no temporary file

    first = session(tmp_path)
    assert first.returncode == 0, first.stderr
    assert "-XX:ArchiveClassesAtExit=" in first.stdout and "-Xlog:cds*=off" in first.stdout
    (archive,) = where.glob("*.jsa")
    assert sorted(p.name for p in where.iterdir()) == [archive.name, archive.name + ".for", archive.name + ".sum"]
    assert "cds" not in first.stdout.replace("-Xlog:cds*=off", "") + first.stderr  # the JVM's notices silenced

    second = session(tmp_path)
    assert second.returncode == 0, second.stderr
    assert f"-XX:SharedArchiveFile={archive}" in second.stdout and "ArchiveClassesAtExit" not in second.stdout

    data = archive.read_bytes()
    archive.chmod(0o644)
    archive.write_bytes(data[: len(data) // 2])  # truncated (its sidecar says otherwise): not given to the JVM
    third = session(tmp_path)
    assert third.returncode == 0, third.stderr
    assert "-XX:ArchiveClassesAtExit=" in third.stdout  # written again, whole
    assert ClassArchive(archive).usable() and sorted(p.name for p in where.iterdir()) == [
        archive.name, archive.name + ".for", archive.name + ".sum"]


@pytest.mark.slow  # a JVM that exits at its start
def test_a_jvm_that_does_not_start_leaves_no_archive(spark_java: None, tmp_path: Path) -> None:
    """Before: a JVM refusing its master wrote its archive to the temporary name as it exited, and nothing removed
    it (70 MB until a later run's clean-up a day on)."""
    script = ("from metalog.analysis.engines.spark_session import spark_context\n"
              "from metalog.errors import MetalogError\n"
              "try:\n    with spark_context('bogus://x'):\n        pass\n"
              "except MetalogError as e:\n    print(e)\n")
    env = {k: v for k, v in os.environ.items() if k != OPT_OUT} | {"XDG_CACHE_HOME": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
    assert done.stdout.startswith("Spark did not start: "), done.stdout + done.stderr
    assert list((tmp_path / "metalog" / "spark-classes").iterdir()) == []
