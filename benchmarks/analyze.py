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

Prints records/s of the python engine and of Spark on one and on two cores, the local[2]/local[1] speed-up
(target >= 1.8x), Spark's per-core rate against the python engine's (target >= 0.8x) and, counting Spark's
cold session start, the log size above which Spark wins. Times are wall-clock for the analysis and the writing
of its Parquet tables and controller_metrics.om (Spark's executors make the rows as they write them), after
each engine ran once on a small log (imports); the session start is measured separately. With --fleet: each
engine runs the whole command (tables, controller_metrics.om, report) in a fresh process, and the peak
resident set (VmHWM) of the Python driver and of its JVM is printed for two fleet sizes: the driver's must not
grow with them. So are the CPU seconds the machine was busy during each run (on a quiet machine, the run's
own) and the cores that kept busy on average: Spark's local[1] keeps more than one busy, as its JVM and its
Python workers run side by side, which bounds what local[2] can gain on two cores.

With --om: the size of controller_metrics.om per record of the log (and against its Parquet timeline), and the
CPU seconds of its two writers, the python engine's and the Spark executors' (fed the timeline as Arrow batches
of 10,000 rows, as Spark hands them; without Spark's shuffle), in this process.

The CPU the machine was busy during each timed run is printed beside it (every process's: on a quiet
machine, the run's own, the JVM and its Python workers included), with the cores that kept busy on average.
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
import time
from pathlib import Path
from typing import Any

from metalog.analysis.pipeline import analyze_python, log_records, write_outputs, write_python
from metalog.generate.generator import HistorySettings
from metalog.generate.writer import write_history
from metalog.replay.history import MetadataHistory
from metalog.replay.images import IMAGE_DIR

WARM_UP = 5_000  # records of the log each engine runs on first, untimed


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


def spark_run(path: Path, cores: int, repeat: int, warm: Path) -> tuple[float, float, float, int]:
    """(session start seconds, best analysis wall seconds, the CPU seconds the machine was busy in that run,
    batches): the analysis and the writing of its tables and metrics, into a temp dir."""
    from metalog.analysis.layout import count_rows
    from metalog.analysis.spark import analyze_spark, spark_session

    t0 = time.perf_counter()
    with spark_session(f"local[{cores}]", app="metalog bench") as session, \
            tempfile.TemporaryDirectory() as out:
        start = time.perf_counter() - t0
        analyze_spark(session, [warm]).write(Path(out), 60_000)  # the workers import metalog first
        best, busy, rows = float("inf"), 0.0, 0
        for _ in range(repeat):
            t, cpu = time.perf_counter(), machine_busy()
            result = analyze_spark(session, [path])
            result.write(Path(out), 60_000)
            wall, used = time.perf_counter() - t, machine_busy() - cpu
            result.unpersist()
            rows = count_rows(Path(out) / "timeline_batches")
            if wall < best:
                best, busy = wall, used
    return start, best, busy, rows


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
        if engine == "spark":
            import metalog.analysis.spark_session as ss

            stop = ss._stop

            def measured_stop(session: object, clean: bool) -> None:  # the JVM's peak, just before it stops
                from pyspark import SparkContext

                proc = getattr(SparkContext._gateway, "proc", None)
                if proc is not None:
                    jvm["kb"] = high_water_kb(proc.pid)
                stop(session, clean)

            ss._stop = measured_stop
        t = time.perf_counter()
        args = ["analyze", *paths, "--out", out, "--engine", engine]
        if engine == "spark":
            args += ["--master", f"local[{cores}]"]
        assert cli(args) == 0
        wall = time.perf_counter() - t
    print(json.dumps({"wall": wall, "python_kb": high_water_kb(), "jvm_kb": jvm.get("kb", 0)}))


def run_child(engine: str, cores: int, paths: list[Path]) -> dict[str, float]:
    """The child's figures, and the CPU seconds the whole machine was busy meanwhile (``cpu``: on a quiet
    machine, the run's: the driver, the JVM and its Python workers)."""
    busy = machine_busy()
    done = subprocess.run([sys.executable, __file__, "--child", engine, "--cores", str(cores), *map(str, paths)],
                          capture_output=True, text=True, check=True)
    got: dict[str, float] = json.loads(done.stdout.splitlines()[-1])
    got["cpu"] = machine_busy() - busy
    return got


def fleet_main(args: argparse.Namespace) -> None:
    small = build_fleet(args.fleet[0], args.records, args.seed)
    large = build_fleet(args.fleet[1], args.records, args.seed)
    print(f"load average {os.getloadavg()[0]:.1f} before, on {os.cpu_count()} cores", flush=True)
    rows = []
    every = (("python", 1), ("spark", 1), ("spark", 2))
    for paths in (small, large) if args.fleet[1] else (small,):
        records = sum(log_records(p) for p in paths)
        wall = {}
        runs = every if paths is small or not args.large_local2_only else (("spark", 2),)
        for engine, cores in runs:
            got = run_child(engine, cores, paths)
            name = "python" if engine == "python" else f"spark local[{cores}]"
            wall[name] = got["wall"]
            rows.append((f"{len(paths)} x {args.records:,}", records, name, got))
            print(f"  {rows[-1][0]:<16}{name:<16}{got['wall']:>8.1f} s{records / got['wall']:>12,.0f} rec/s"
                  f"{got['python_kb'] / 1024:>10,.0f} MB python{got['jvm_kb'] / 1024:>10,.0f} MB JVM"
                  f"{got['cpu']:>9.1f} s CPU ({got['cpu'] / got['wall']:.2f} cores busy)", flush=True)
        if len(wall) < len(every):
            continue
        one, two, py = wall["spark local[1]"], wall["spark local[2]"], wall["python"]
        print(f"    local[2] / local[1] speed-up {one / two:.2f}x (target >= 1.8x); per-core rate / python engine: "
              f"local[1] {py / one:.2f}x, local[2] {py / two / 2:.2f}x (target >= 0.8x)", flush=True)
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
    path = build(args.records, args.seed)
    result = analyze_python([path])
    records, name = result.records, path.name
    print(f"load average {os.getloadavg()[0]:.1f} before, on {os.cpu_count()} cores", flush=True)
    with tempfile.TemporaryDirectory() as out:
        write_outputs(Path(out), result, 60_000, csv=False)
        parquet = sum(f.stat().st_size for f in (Path(out) / "timeline_batches").rglob("*.parquet"))
        print(f"{records:,} records, {len(result.rows):,} batches; the Parquet timeline {parquet:,} bytes")
        for every_batch in (False, True):
            size, python, executors = om_writers(Path(out), name, result.rows, every_batch)
            print(f"  controller_metrics.om{' --metrics-every-batch' if every_batch else '':<23}{size:>14,} bytes"
                  f"{size / records:>9.1f} bytes/record{size / parquet:>8.2f}x the Parquet timeline; writer CPU: "
                  f"python engine {python:.1f} s, Spark executors {executors:.1f} s", flush=True)
    print(f"load average {os.getloadavg()[0]:.1f} after")


def om_writers(out: Path, name: str, rows: list[dict[str, Any]], every_batch: bool) -> tuple[int, float, float]:
    """controller_metrics.om's bytes, and the CPU seconds of the python engine's writer and of the executors'
    (the same file: checked)."""
    import pyarrow as pa

    from metalog.analysis import openmetrics as om
    from metalog.analysis import spark_tables as st

    cpu = time.process_time()
    om.write_openmetrics(out / "python.om", [(name, rows)], every_batch=every_batch)
    python = time.process_time() - cpu
    schema = pa.schema([("cluster", pa.string()), ("timestamp", pa.timestamp("us", tz="UTC")),
                        (st.SEQ, pa.int64()),
                        *((c, pa.string() if c == "zk_migration_state" else pa.int64()) for c in om.COLUMNS)])
    batches = []
    for lo in range(0, len(rows), 10_000):  # what Spark hands mapInArrow: its rows sorted by time then log order
        part = rows[lo:lo + 10_000]
        batches.append(pa.RecordBatch.from_pydict(
            {"cluster": [name] * len(part), "timestamp": [r["timestamp"] * 1000 for r in part],
             st.SEQ: list(range(lo, lo + len(part))), **{c: [r[c] for r in part] for c in om.COLUMNS}},
            schema=schema))
    cpu = time.process_time()
    list(st.series_task(str(out / "parts"), every_batch=every_batch)(iter(batches)))
    om.concatenate(out / "executors.om", lambda i, c: [st.series_path(out / "parts", i, c)], [name])
    executors = time.process_time() - cpu
    assert (out / "python.om").read_bytes() == (out / "executors.om").read_bytes()
    return (out / "python.om").stat().st_size, python, executors


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
    ap.add_argument("--repeat", type=int, default=1, help="Spark runs per session (the best is kept)")
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
    warm = build(WARM_UP, args.seed)
    analyze_python([warm])  # the same imports for the python engine
    load_before = os.getloadavg()[0]

    t, cpu = time.perf_counter(), machine_busy()
    with tempfile.TemporaryDirectory() as out:  # the same tables as Spark writes, as the command writes them
        result = write_python(Path(out), [path], 60_000)
        py, py_cpu = time.perf_counter() - t, machine_busy() - cpu
        om_bytes = (Path(out) / "controller_metrics.om").stat().st_size
    records, batches = result.records, result.batches
    s1_start, s1, m1, rows1 = spark_run(path, 1, args.repeat, warm)
    s2_start, s2, m2, rows2 = spark_run(path, 2, args.repeat, warm)
    assert rows1 == rows2 == batches, "the engines disagree on the number of batches"

    print(f"\n{records:,} records, {batches:,} batches; load average {load_before:.1f} before, "
          f"{os.getloadavg()[0]:.1f} after, on {os.cpu_count()} cores\n")
    print(f"  {'engine':<16}{'seconds':>10}{'records/s':>14}{'per core':>14}{'vs python':>11}{'CPU s':>9}"
          f"{'cores busy':>12}")
    for name, secs, cores, busy in (("python", py, 1, py_cpu), ("spark local[1]", s1, 1, m1),
                                    ("spark local[2]", s2, 2, m2)):
        rate = records / secs
        print(f"  {name:<16}{secs:>10.1f}{rate:>14,.0f}{rate / cores:>14,.0f}{rate * py / records:>10.2f}x"
              f"{busy:>9.1f}{busy / secs:>12.2f}")
    print(f"  local[2] / local[1] speed-up: {s1 / s2:.2f}x (target >= 1.8x)")
    print(f"  per-core rate / python engine: local[1] {py / s1:.2f}x, local[2] {py / s2 / 2:.2f}x (target >= 0.8x)")
    print("  (CPU s: every process's on the machine during the run; on a quiet machine, the run's own)")
    print(f"  controller_metrics.om: {om_bytes:,} bytes, {om_bytes / records:.1f} bytes/record\n")
    cold = max(s1_start, s2_start)  # the second session reuses the first one's JVM: only one start is cold
    warm = min(s1_start, s2_start)
    print(f"spark session start: {cold:.1f} s cold (the second session reuses the JVM: {warm:.1f} s)")
    gain = py / records - s2 / records  # seconds saved per record on local[2]
    if gain > 0:
        print(f"crossover (cold session start included): spark local[2] wins above ~{cold / gain:,.0f} records")
    else:
        print("crossover: none here, the python engine is faster at this size on this machine")


if __name__ == "__main__":
    main()
