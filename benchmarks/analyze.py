"""metalog analyze: python engine versus Spark on local[1] and local[2], on one generated log.

    python benchmarks/analyze.py                    # the issue's run: 5M records (the log is generated once, kept)
    python benchmarks/analyze.py --records 500000   # quicker
    python benchmarks/analyze.py --images 1000000   # state images every 1M offsets: ranges start from them
    python benchmarks/analyze.py --fleet 5 20 --records 1000000    # the issue's fleet: 20 x 1M (cached)
    python benchmarks/analyze.py --fleet 4 16 --records 50000      # two fleet sizes: is the driver's memory flat?
    python benchmarks/analyze.py --fleet 5 20 --records 1000000 --large-local2-only   # 20M on local[2] only
    python benchmarks/analyze.py --fleet 5 0 --records 1000000     # one fleet
    python benchmarks/analyze.py --python-scaling 1000000 4000000  # the python engine: CPU vs replay, memory
    python benchmarks/analyze.py --om --records 1000000            # controller_metrics.om: bytes, writers' CPU

Each engine runs the whole command (tables, controller_metrics.om, growth tables, report) on the log or fleet in
a fresh process of its own: python, Spark local[1], Spark local[2]. Printed for each: wall seconds, records/s, the
peak resident set (VmHWM) of the Python driver and of its JVM, its CPU seconds (the process tree's: the driver,
the JVM and its Python workers, read from /proc just before the session stops, so a loaded machine does not
change them), the CPU seconds the whole machine was busy meanwhile (on a quiet machine, the same); then Spark's
CPU against the python engine's (the issue's target: <= 1.15x) and its wall against the python engine's. With
--fleet the same for two fleet sizes: the driver's memory must not grow with them.

With --om: the size of controller_metrics.om per record of the log (and against its Parquet timeline), and the
CPU seconds of its writer (both engines run the same one), in this process.

Spark's runs map the driver JVM's class archive (``analysis.engines.spark_classes``), as a user's runs do after
their first; a first session writes it if there is none, and what that costs (once) is printed.

The load average is printed before and after: above the core count, the wall clock says little.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from metalog.analysis.engines.replay import log_records
from metalog.generate.generator import HistorySettings
from metalog.generate.writer import write_history
from metalog.replay.history import MetadataHistory
from metalog.replay.images import IMAGE_DIR


def build(records: int, seed: int, images: int = 0) -> Path:
    path = Path(tempfile.gettempdir()) / f"metalog-bench-analyze-{records}-{seed}"
    if not (path / "__cluster_metadata-0").exists():
        print(f"generating {records:,} records (mixed scenario) in {path} ...", flush=True)
        write_history(path, seed, HistorySettings(brokers=12, topics=60, partitions=12, records=records,
                                                  scenario="mixed"), snapshot_every=10**12)
    if images:
        with MetadataHistory(path) as history:
            print(f"state images every {images:,} offsets: {len(history.write_images(images))} new", flush=True)
    else:
        for old in (path / IMAGE_DIR).glob("*.image") if (path / IMAGE_DIR).is_dir() else ():
            old.unlink()  # the plain run replays from deltas only
    return path


# ---- the fleet: the driver's memory at two sizes --------------------------------------------------------------
def build_fleet(clusters: int, records: int, seed: int) -> list[Path]:
    """``clusters`` generated logs of ``records`` each, cached under the temp dir (reused by later runs)."""
    root = Path(tempfile.gettempdir()) / "metalog-bench-fleet"
    paths = []
    for n in range(clusters):
        path = root / f"cluster-{n:03d}-{records}-{seed + n}"
        if not (path / "__cluster_metadata-0").exists():
            print(f"generating {path.name} ...", flush=True)
            write_history(path, seed + n, HistorySettings(brokers=12, topics=60, partitions=12, records=records,
                                                          scenario="mixed"), snapshot_every=10**12)
        paths.append(path)
    return paths


def high_water_kb(pid: int | str = "self") -> int:
    """The peak resident set of a process (VmHWM), in kB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return 0


def machine_busy() -> float:
    """CPU seconds this machine has spent busy since it started (every process's; /proc/stat)."""
    fields = [int(f) for f in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle, iowait
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def child(engine: str, cores: int, paths: list[str]) -> None:
    """One engine on the fleet in this (fresh) process, the tables and report written as the command does:
    prints JSON with wall seconds, records and the peak resident sets of this Python driver and its JVM."""
    from metalog.cli.main import main as cli

    with tempfile.TemporaryDirectory() as out:
        jvm: dict[str, int] = {}
        tree: dict[str, float] = {}
        if engine == "spark":
            import metalog.analysis.engines.spark_session as ss

            stop = ss._stop
            sampled = TreeSampler(ss.jvm_pid)

            def measured_stop(started: Any) -> None:  # the JVM's peak and CPU, before it stops
                pid = ss.jvm_pid()
                if pid is not None:
                    jvm["kb"] = high_water_kb(pid)
                    tree["cpu"] = sampled.finish()
                stop(started)

            ss._stop = measured_stop
        t = time.perf_counter()
        args = ["analyze", *paths, "--out", out, "--engine", engine]
        if engine == "spark":
            args += ["--master", f"local[{cores}]"]
        assert cli(args) == 0
        wall = time.perf_counter() - t
    own = resource.getrusage(resource.RUSAGE_SELF)
    print(json.dumps({"wall": wall, "python_kb": high_water_kb(), "jvm_kb": jvm.get("kb", 0),
                      "jvm_cpu": tree.get("cpu", 0.0), "driver_cpu": own.ru_utime + own.ru_stime}))


def tree_cpu(pid: int) -> float:
    """CPU seconds of a process and of every process under it, alive or reaped (/proc: utime, stime, cutime,
    cstime): a JVM's own, and its Python workers' (under its pyspark daemon)."""
    return sum(tree_cpus(pid).values())


def tree_cpus(pid: int) -> dict[int, float]:
    """``tree_cpu``'s seconds by process of the tree."""
    tick = os.sysconf("SC_CLK_TCK")
    parents: dict[int, int] = {}
    spent: dict[int, float] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        child = int(stat.parent.name)
        parents[child] = int(fields[1])
        spent[child] = sum(int(f) for f in fields[11:15]) / tick
    found: dict[int, float] = {}
    todo = [pid]
    while todo:
        at = todo.pop()
        found[at] = spent.get(at, 0.0)
        todo += [c for c, parent in parents.items() if parent == at]
    return found


class TreeSampler:
    """The JVM's process tree's CPU seconds, sampled twice a second from a thread: Spark's Python daemon ignores
    SIGCHLD, so a worker that exits (Spark stops one idle for a minute) is reaped without its CPU reaching the
    daemon's reaped-children count, and a reading at the end alone would miss it; each process keeps its last
    sample (at most half a second of an exited worker's work is missed)."""

    def __init__(self, jvm_pid: Any) -> None:
        self.jvm_pid = jvm_pid
        self.seen: dict[int, float] = {}
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.done.wait(0.5):
            self._sample()

    def _sample(self) -> None:
        pid = self.jvm_pid()
        if pid is not None:
            for process, cpu in tree_cpus(pid).items():
                self.seen[process] = max(self.seen.get(process, 0.0), cpu)

    def finish(self) -> float:
        self.done.set()
        self.thread.join()
        self._sample()
        return sum(self.seen.values())


def run_child(engine: str, cores: int, paths: list[Path]) -> dict[str, float]:
    """The child's figures; ``cpu``: its CPU seconds, the JVM's and its Python workers' included (their
    process tree's, read just before the session stops: the same on a loaded machine as on a quiet one);
    ``busy``: the CPU seconds the whole machine was busy meanwhile (on a quiet machine, the run's)."""
    busy = machine_busy()
    done = subprocess.run([sys.executable, __file__, "--child", engine, "--cores", str(cores), *map(str, paths)],
                          capture_output=True, text=True, check=True)
    got: dict[str, float] = json.loads(done.stdout.splitlines()[-1])
    got["busy"] = machine_busy() - busy
    got["cpu"] = got["driver_cpu"] + got["jvm_cpu"]
    return got


def engines_on(label: str, paths: list[Path], runs: tuple[tuple[str, int], ...]) -> None:
    """Each engine of ``runs`` end to end on ``paths`` in a process of its own: wall, records/s, peak resident
    sets, CPU seconds (its process tree's) and the machine's; then Spark's CPU against the python engine's and
    local[2]'s wall against the python engine's."""
    records = sum(log_records(p) for p in paths)
    found: dict[str, dict[str, float]] = {}
    for engine, cores in runs:
        got = run_child(engine, cores, paths)
        name = "python" if engine == "python" else f"spark local[{cores}]"
        found[name] = got
        print(f"  {label:<16}{name:<16}{got['wall']:>8.1f} s{records / got['wall']:>12,.0f} rec/s"
              f"{got['python_kb'] / 1024:>8,.0f} MB python{got['jvm_kb'] / 1024:>8,.0f} MB JVM"
              f"{got['cpu']:>9.1f} s CPU ({got['cpu'] / got['wall']:.2f} cores){got['busy']:>9.1f} s machine busy",
              flush=True)
    py = found.get("python")
    if py is None:
        return
    for name, got in found.items():
        if name != "python":
            print(f"    {name}: CPU / python CPU {got['cpu'] / py['cpu']:.2f}x (target <= 1.15x), wall / python wall "
                  f"{got['wall'] / py['wall']:.2f}x", flush=True)


EVERY = (("python", 1), ("spark", 1), ("spark", 2))

# a context and one small job, whose JVM writes the class archive as the process exits (spark_classes)
WARM_UP = """
from metalog.analysis.engines.spark_session import spark_context
with spark_context("local[1]", app="metalog benchmark") as sc:
    sc.parallelize([1], 1).count()
"""


def class_archive_ready() -> None:
    """The Spark runs measured map the driver JVM's class archive (``spark_classes``), as a user's do after their
    first: without one, a first session writes it, and its CPU and wall are printed (what that first Spark
    analysis costs more, once)."""
    from metalog.analysis.engines.spark_classes import class_archive
    from metalog.analysis.engines.spark_session import find_java, spark_home

    archive = class_archive(find_java(), spark_home())
    if archive is None:
        print("Spark's class archive: off (METALOG_SPARK_CLASS_ARCHIVE)", flush=True)
        return
    if not archive.usable():
        cpu, wall = children_cpu(), time.perf_counter()
        subprocess.run([sys.executable, "-c", WARM_UP], check=True, capture_output=True)
        print(f"Spark's class archive written by a first session: {children_cpu() - cpu:.1f} s CPU, "
              f"{time.perf_counter() - wall:.1f} s wall (once)", flush=True)
    print(f"Spark's class archive: {archive.path} ({'whole' if archive.usable() else 'NOT usable'})", flush=True)


def fleet_main(args: argparse.Namespace) -> None:
    small = build_fleet(args.fleet[0], args.records, args.seed)
    large = build_fleet(args.fleet[1], args.records, args.seed)
    class_archive_ready()
    print(f"load average {os.getloadavg()[0]:.1f} before, on {os.cpu_count()} cores", flush=True)
    for paths in (small, large) if args.fleet[1] else (small,):
        runs = EVERY if paths is small or not args.large_local2_only else (("spark", 2),)
        engines_on(f"{len(paths)} x {args.records:,}", paths, runs)
    print(f"load average {os.getloadavg()[0]:.1f} after")


# ---- the python engine against the replay it wraps, and its memory by log size ---------------------------------
def children_cpu() -> float:
    """CPU seconds of this process's reaped children."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def python_scaling(sizes: list[int], seed: int) -> None:
    """For each size: ``metalog replay --no-snapshots`` and ``metalog analyze --engine python`` (the tables,
    controller_metrics.om and the report, as the command writes them) on the same log, each in a process of its
    own: their CPU seconds, the analysis' speed as a share of the replay's, and its peak resident set."""
    paths = [build(size, seed) for size in sizes]
    print(f"load average {os.getloadavg()[0]:.1f} before, on {os.cpu_count()} cores", flush=True)
    print(f"  {'records':>12}{'replay CPU s':>14}{'analyze CPU s':>15}{'speed vs replay':>17}{'peak RSS':>11}")
    first = 0.0
    for size, path in zip(sizes, paths, strict=True):
        cpu = children_cpu()
        subprocess.run([sys.executable, "-m", "metalog.cli.main", "replay", str(path), "--no-snapshots"],
                       capture_output=True, check=True)
        replay = children_cpu() - cpu
        cpu = children_cpu()
        got = run_child("python", 1, [path])
        analyze = children_cpu() - cpu
        mb = got["python_kb"] / 1024
        first = first or mb
        print(f"  {size:>12,}{replay:>14.1f}{analyze:>15.1f}{replay / analyze:>16.3f}x{mb:>8,.0f} MB"
              f"  ({mb / first:.2f}x the first)", flush=True)
    print(f"load average {os.getloadavg()[0]:.1f} after")


# ---- controller_metrics.om: its size and its writers' CPU ----------------------------------------------------
def om_main(args: argparse.Namespace) -> None:
    from metalog.analysis.engines.python import PythonEngine
    from metalog.analysis.engines.request import AnalysisRequest
    from metalog.analysis.outputs.layout import read_tables

    path = build(args.records, args.seed)
    print(f"load average {os.getloadavg()[0]:.1f} before, on {os.cpu_count()} cores", flush=True)
    with tempfile.TemporaryDirectory() as out:
        summary = PythonEngine().analyze(AnalysisRequest.of([path], out))
        records, name = summary.records, summary.clusters[0]
        parquet = sum(f.stat().st_size for f in (Path(out) / "timeline_batches").rglob("*.parquet"))
        rows = read_tables(Path(out) / "timeline_batches")
        print(f"{records:,} records, {len(rows):,} batches; the Parquet timeline {parquet:,} bytes")
        for every_batch in (False, True):
            size, python = om_writer(Path(out), name, rows, every_batch)
            print(f"  controller_metrics.om{' --metrics-every-batch' if every_batch else '':<23}{size:>14,} bytes"
                  f"{size / records:>9.1f} bytes/record{size / parquet:>8.2f}x the Parquet timeline; writer CPU "
                  f"{python:.1f} s (the Spark engine's executors run the same writer)", flush=True)
    print(f"load average {os.getloadavg()[0]:.1f} after")


def om_writer(out: Path, name: str, rows: list[dict[str, Any]], every_batch: bool) -> tuple[int, float]:
    """controller_metrics.om's bytes, and the CPU seconds of its writer."""
    from metalog.analysis.outputs import openmetrics as om

    cpu = time.process_time()
    om.write_openmetrics(out / "python.om", [(name, rows)], every_batch=every_batch)
    return (out / "python.om").stat().st_size, time.process_time() - cpu


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", type=int, default=5_000_000, help="records of the log (with --fleet: per cluster)")
    ap.add_argument("--fleet", type=int, nargs=2, metavar=("SMALL", "LARGE"),
                    help="two fleets of SMALL and LARGE clusters: each engine end to end in a process of its own, "
                         "with the peak resident set of the Python driver and of its JVM")
    ap.add_argument("--large-local2-only", action="store_true",
                    help="run only Spark local[2] on the LARGE fleet (the others take most of an hour on 20M)")
    ap.add_argument("--python-scaling", type=int, nargs="+", metavar="RECORDS",
                    help="the python engine alone on generated logs of these sizes: its CPU against the replay's "
                         "and its peak resident set (the issue's: 1000000 4000000 20000000)")
    ap.add_argument("--om", action="store_true",
                    help="controller_metrics.om only: its bytes per record and its writers' CPU")
    ap.add_argument("--child", choices=["python", "spark"], help=argparse.SUPPRESS)
    ap.add_argument("--cores", type=int, default=1, help=argparse.SUPPRESS)
    ap.add_argument("paths", nargs="*", help=argparse.SUPPRESS)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--images", type=int, default=0, metavar="EVERY",
                    help="write state images every EVERY offsets first (default: none, deltas only)")
    args = ap.parse_args()
    if args.child:
        return child(args.child, args.cores, args.paths)
    if args.fleet:
        return fleet_main(args)
    if args.python_scaling:
        return python_scaling(args.python_scaling, args.seed)
    if args.om:
        return om_main(args)
    path = build(args.records, args.seed, args.images)
    class_archive_ready()
    print(f"load average {os.getloadavg()[0]:.1f} before, on {os.cpu_count()} cores", flush=True)
    engines_on(f"{args.records:,}", [path], EVERY)
    print(f"load average {os.getloadavg()[0]:.1f} after")

if __name__ == "__main__":
    main()
