"""The driver JVM's class-data-sharing archive of Spark's classes (the JDK's dynamic AppCDS archive): a JVM that maps
the classes Spark loads already parsed, verified and laid out starts on about 1.1 s less CPU (2.5 s against 1.4 s
for a context and one small job; load 4, 2026-11-28), which every Spark analysis pays once.

Where: ``$XDG_CACHE_HOME/metalog/spark-classes`` (else ``~/.cache/metalog/spark-classes``), an archive per JDK and
Spark installation (``archive_key``), about 70 MB each. ``METALOG_SPARK_CLASS_ARCHIVE=off`` (or ``0``, ``no``)
neither uses nor writes one.

How it is written: a JVM started without a usable archive is asked to write one as it exits
(``-XX:ArchiveClassesAtExit``), under a temporary name of its own. The JVM exits only when this process lets it go
(pyspark keeps one JVM per process), so this process does that at its own exit (``atexit``): it ends the JVM, waits
for it to write the archive (about 5.6 s of CPU and 4 s of wall time, once: the first Spark analysis takes that much
longer), and renames the file into place with a sidecar holding its size and CRC-32C, but only if the JVM exited
cleanly after sessions that all ended cleanly; otherwise the temporary file is removed.

How it is trusted: a JVM is given the archive only if its size and CRC-32C match the sidecar (a truncated archive
crashes the JVM with SIGBUS before its own header checks can refuse it); a JVM of another build or with other
jars refuses a mismatched one by itself and starts without it. So a bad or missing file costs speed, never the
run. The JVM's notices about the archive are silenced (``-Xlog:cds*=off``): they went to the user's stdout.

What goes: an archive is written with a second sidecar (``.for``) naming the java binary and the Spark home it was
made for. As a new archive is installed, every archive whose ``.for`` names an installation that is gone or has
changed (its key, computed again from the files it names, is no longer the archive's: a venv removed, pyspark or
the JDK upgraded in place) is removed with its sidecars (``prune``): one archive per installation the user
has, not one per installation they ever had. Archives without a ``.for`` (written before it existed) are left: what
they were made for is unknown.

Only files named here are written or removed in that directory: the archives, their sidecars, and temporary files
of this module's own naming that a process which died before renaming left there (removed after a day).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import subprocess
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["DUMP_TIMEOUT", "OPT_OUT", "SILENT", "ClassArchive", "archive_key", "cache_dir", "class_archive", "finish",
           "prune"]

OPT_OUT = "METALOG_SPARK_CLASS_ARCHIVE"  # "off", "0", "no", "false": no archive used or written
SILENT = "-Xlog:cds*=off"  # the JVM's notices about its archives (a mismatch, a class it skips) go to stdout
DUMP_TIMEOUT = 300.0  # seconds the exiting JVM has to write the archive before it is killed (and the file dropped)
STALE_AFTER = 86_400.0  # seconds after which a temporary archive no process renamed is removed
_READ = 1 << 20
_ARCHIVE = re.compile(r"spark-([0-9a-f]{20})\.jsa")  # an archive's name: its key (``archive_key``)


def cache_dir() -> Path:
    """metalog's cache directory: ``$XDG_CACHE_HOME/metalog``, else ``~/.cache/metalog``."""
    base = os.environ.get("XDG_CACHE_HOME")
    return (Path(base) if base and Path(base).is_absolute() else Path.home() / ".cache") / "metalog"


def archive_key(java: str, spark_home: Path) -> str:
    """What an archive is valid for, as a short hash: the JVM (its binary and its libjvm, by path, size and
    modification time) and Spark's jars (each by name, size and modification time)."""
    digest = hashlib.sha256()
    real = Path(java).resolve()
    for path in (real, *sorted(real.parent.parent.glob("lib/server/libjvm.so"))):
        stat = path.stat()
        digest.update(f"{path}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
    jars = spark_home.resolve() / "jars"
    for jar in sorted(jars.glob("*.jar")):
        stat = jar.stat()
        digest.update(f"{jar.name}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:20]


def _crc32c(path: Path) -> int:
    import crc32c

    value = 0
    with open(path, "rb") as f:
        while chunk := f.read(_READ):
            value = crc32c.crc32c(chunk, value)
    return value


@dataclass(frozen=True)
class ClassArchive:
    """The archive for one JDK and Spark (``path``) and its sidecars (``path`` + ``.sum``: its size and CRC-32C;
    ``path`` + ``.for``: the ``java`` binary and ``spark_home`` it is made for, where known)."""

    path: Path
    java: str | None = None
    spark_home: Path | None = None

    @property
    def sums(self) -> Path:
        return self.path.with_name(self.path.name + ".sum")

    @property
    def owner(self) -> Path:
        return self.path.with_name(self.path.name + ".for")

    def usable(self) -> bool:
        """The archive is there, whole: its size and CRC-32C are those its sidecar was written with."""
        try:
            size, crc = (int(field) for field in self.sums.read_text().split())
            return self.path.stat().st_size == size and _crc32c(self.path) == crc
        except (OSError, ValueError):
            return False

    def temporary(self) -> Path:
        """A name of this process's own for the JVM to write the archive to."""
        self._remove_stale()
        return self.path.with_name(f"{self.path.name}.{os.getpid()}-{uuid.uuid4().hex[:8]}.tmp")

    def install(self, written: Path) -> None:
        """``written`` (a temporary archive, whole) renamed into place, then its sidecars; then the archives of
        installations that are gone or changed removed (``prune``)."""
        sums = self.sums.with_name(f"{written.name}.sum")
        sums.write_text(f"{written.stat().st_size} {_crc32c(written)}\n")
        os.replace(written, self.path)
        os.replace(sums, self.sums)
        if self.java is not None and self.spark_home is not None:
            owner = self.owner.with_name(f"{written.name}.for")
            made_for = {"java": str(Path(self.java).resolve()), "spark_home": str(self.spark_home.resolve())}
            owner.write_text(json.dumps(made_for) + "\n")
            os.replace(owner, self.owner)
        prune(self.path.parent)

    def _remove_stale(self) -> None:
        """Temporary archives (and sidecars) of this module's naming that no process renamed within a day."""
        now = time.time()
        for old in self.path.parent.glob(f"{self.path.name}.*.tmp*"):
            with contextlib.suppress(OSError):
                if now - old.stat().st_mtime > STALE_AFTER:
                    old.unlink()


def prune(where: Path) -> list[Path]:
    """The archives in ``where`` made for an installation that is gone or has changed, removed with their
    sidecars: those whose ``.for`` names a java binary and Spark home whose key (``archive_key``), computed again,
    is not the archive's (a file it names missing counts as changed). An archive without a ``.for``, or with one
    this module cannot read, is left. The files removed."""
    removed = []
    for path in where.glob("spark-*.jsa"):
        match = _ARCHIVE.fullmatch(path.name)
        made_for = _made_for(ClassArchive(path).owner) if match else None
        if match is None or made_for is None:
            continue
        try:
            current = archive_key(*made_for)
        except OSError:
            current = None  # (the java binary is gone)
        if current == match[1]:
            continue
        archive = ClassArchive(path)
        for old in (archive.path, archive.sums, archive.owner):  # (its .for last: a failed removal is retried)
            with contextlib.suppress(OSError):
                old.unlink()
                removed.append(old)
    return removed


def _made_for(owner: Path) -> tuple[str, Path] | None:
    """The java binary and Spark home an archive's ``.for`` names (None: none, or not one this module wrote)."""
    try:
        fields = json.loads(owner.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(fields, dict) or not isinstance(fields.get("java"), str) \
            or not isinstance(fields.get("spark_home"), str):
        return None
    return fields["java"], Path(fields["spark_home"])


def class_archive(java: str, spark_home: Path | None) -> ClassArchive | None:
    """The archive for this JDK and Spark (whether there yet or not), in a cache directory made if need be;
    None when opted out (``METALOG_SPARK_CLASS_ARCHIVE=off``), or when there is no place for one (no Spark home
    with jars, a cache directory that cannot be made, a path the JVM's options could not carry)."""
    if os.environ.get(OPT_OUT, "").strip().lower() in ("off", "0", "no", "false"):
        return None
    if spark_home is None or not (spark_home / "jars").is_dir():
        return None
    where = cache_dir() / "spark-classes"
    try:
        where.mkdir(parents=True, exist_ok=True, mode=0o700)
        key = archive_key(java, spark_home)
    except OSError:
        return None
    if any(c.isspace() or c in "\"'\\" for c in str(where)):  # (Spark's launcher splits the options on these)
        return None
    return ClassArchive(where / f"spark-{key}.jsa", java, spark_home)


def finish(archive: ClassArchive, written: Path, proc: Any, gateway: Any, keep: bool) -> None:
    """At this process's exit: the JVM ended (its stdin closed, as pyspark's gateway server waits for) and waited
    for while it writes ``written``; the archive installed if the JVM exited cleanly and ``keep`` (every session on
    it ended cleanly), else ``written`` removed."""
    if proc.poll() is None:
        with contextlib.suppress(Exception):
            gateway.shutdown()
        with contextlib.suppress(Exception):
            proc.stdin.close()
        try:
            proc.wait(DUMP_TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    try:
        if keep and proc.returncode == 0 and written.is_file() and written.stat().st_size > 0:
            archive.install(written)
    except OSError:
        pass
    finally:
        with contextlib.suppress(OSError):
            written.unlink(missing_ok=True)
