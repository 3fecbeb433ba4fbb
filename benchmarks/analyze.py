"""metalog analyze: python engine versus Spark on local[1] and local[2], on one generated log.

    python benchmarks/analyze.py                    # the issue's run: 5M records (the log is generated once, kept)
    python benchmarks/analyze.py --records 500000   # quicker
    python benchmarks/analyze.py --fixed 10000      # each engine on 10k records first: Spark's CPU beyond it
    python benchmarks/analyze.py --images 1000000   # state images every 1M offsets: ranges start from them
    python benchmarks/analyze.py --fleet 5 20 --records 1000000    # the issue's fleet: 20 x 1M (cached)
    python benchmarks/analyze.py --fleet 4 16 --records 50000      # two fleet sizes: is the driver's memory flat?
    python benchmarks/analyze.py --fleet 5 20 --records 1000000 --large-local2-only   # 20M on local[2] only
    python benchmarks/analyze.py --fleet 5 0 --records 1000000     # one fleet
    python benchmarks/analyze.py --python-scaling 1000000 4000000  # the python engine: CPU vs replay, memory
    python benchmarks/analyze.py --om --records 1000000            # controller_metrics.om: bytes, writers' CPU
    python benchmarks/analyze.py --python-split 1000000            # the python engine's CPU by part vs replay
    python benchmarks/analyze.py --timeline 2                      # one local[2] run's timeline: tasks, CPU
    python benchmarks/analyze.py --timeline 2 --fleet 5 0 --records 1000000   # the same for the fleet

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
import contextlib
import gc
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

# (metalog's modules are imported where they are used: a child measured by --python-split pays, before its clock
# starts, only what a ``metalog`` command would too)


def build(records: int, seed: int, images: int = 0) -> Path:
    from metalog.generate.generator import HistorySettings
    from metalog.generate.writer import write_history
    from metalog.replay.history import MetadataHistory
    from metalog.replay.images import IMAGE_DIR

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
    from metalog.generate.generator import HistorySettings
    from metalog.generate.writer import write_history

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
            sampled = TreeSampler()

            def measured_stop(started: Any) -> None:  # the JVM's peak and the process tree's CPU, before it stops
                pid = ss.jvm_pid()
                if pid is not None:
                    jvm["kb"] = high_water_kb(pid)
                    tree["cpu"] = sampled.finish()
                    tree["sampler"] = sampled.own
                stop(started)

            ss._stop = measured_stop
        t = time.perf_counter()
        args = ["analyze", *paths, "--out", out, "--engine", engine]
        if engine == "spark":
            args += ["--master", f"local[{cores}]"]
        assert cli(args) == 0
        wall = time.perf_counter() - t
    own = resource.getrusage(resource.RUSAGE_SELF)
    sampling = tree.get("sampler", 0.0)  # (the measurement's own CPU, not the driver's)
    print(json.dumps({"wall": wall, "python_kb": high_water_kb(), "jvm_kb": jvm.get("kb", 0),
                      "jvm_cpu": tree.get("cpu", 0.0), "driver_cpu": own.ru_utime + own.ru_stime - sampling,
                      "sampler_cpu": sampling}))
    gc.freeze()  # (the process then ends as a metalog command's does: see cli.main.run)


def own_cpus(pid: int) -> dict[int, float]:
    """CPU seconds of each process under ``pid`` (not ``pid`` itself), each its own (/proc: utime and stime; not
    what it reaped, which would count a process twice: once sampled alive, once in its parent's reaped count)."""
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
        spent[child] = (int(fields[11]) + int(fields[12])) / tick
    found: dict[int, float] = {}
    todo = [c for c, parent in parents.items() if parent == pid]
    while todo:
        at = todo.pop()
        found[at] = spent.get(at, 0.0)
        todo += [c for c, parent in parents.items() if parent == at]
    return found


class TreeSampler:
    """The CPU seconds of every process under this one (the JVM, its daemon, the workers' daemon made ready ahead
    and the workers under it, the start states' process), sampled ten times a second from a thread: a worker is
    reaped by a daemon that may ignore SIGCHLD, so its CPU need reach no parent's reaped-children count, and a
    reading at the end alone would miss it; each process keeps its last sample (at most a tenth of a second of a
    process that exits early is missed). ``own``: the sampling thread's own CPU seconds (a few ms a sample: it
    reads every process's /proc entry), which the driver's CPU then leaves out."""

    def __init__(self) -> None:
        self.seen: dict[int, float] = {}
        self.own = 0.0
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.done.wait(0.1):
            self._sample()
        self.own = time.thread_time()

    def _sample(self) -> None:
        for process, cpu in own_cpus(os.getpid()).items():
            self.seen[process] = max(self.seen.get(process, 0.0), cpu)

    def finish(self) -> float:
        self.done.set()
        self.thread.join()
        self._sample()
        return sum(self.seen.values())


def run_child(engine: str, cores: int, paths: list[Path]) -> dict[str, float]:
    """The child's figures; ``cpu``: its CPU seconds, every process's under it included (the JVM, the workers, the
    driver's helpers: ``TreeSampler``'s, read until the session stops: the same on a loaded machine as on a quiet one);
    ``busy``: the CPU seconds the whole machine was busy meanwhile (on a quiet machine, the run's)."""
    busy = machine_busy()
    done = subprocess.run([sys.executable, __file__, "--child", engine, "--cores", str(cores), *map(str, paths)],
                          capture_output=True, text=True, check=True)
    got: dict[str, float] = json.loads(done.stdout.splitlines()[-1])
    got["busy"] = machine_busy() - busy
    got["cpu"] = got["driver_cpu"] + got["jvm_cpu"]
    return got


def engines_on(label: str, paths: list[Path], runs: tuple[tuple[str, int], ...],
               fixed: dict[str, dict[str, float]] | None = None) -> dict[str, dict[str, float]]:
    """Each engine of ``runs`` end to end on ``paths`` in a process of its own: wall, records/s, peak resident
    sets, CPU seconds (its process tree's) and the machine's; then Spark's CPU against the python engine's and
    local[2]'s wall against the python engine's; with ``fixed`` (the same engines' figures on a small log, just
    before), also each engine's CPU beyond that fixed cost against the python engine's (``beyond_fixed``)."""
    from metalog.analysis.engines.replay import log_records

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
        return found
    for name, got in found.items():
        if name != "python":
            print(f"    {name}: CPU / python CPU {got['cpu'] / py['cpu']:.2f}x (target <= 1.15x), wall / python wall "
                  f"{got['wall'] / py['wall']:.2f}x", flush=True)
    if fixed is not None:
        beyond_fixed(found, fixed)
    return found


def beyond_fixed(found: dict[str, dict[str, float]], fixed: dict[str, dict[str, float]]) -> None:
    """Each Spark run's CPU beyond its fixed cost (its CPU on the small log: the JVM, pyspark, the daemon, a task
    per stage) against the python engine's beyond its own: what each costs per record of the large log."""
    py = found["python"]["cpu"] - fixed["python"]["cpu"]
    for name, got in found.items():
        if name != "python" and name in fixed:
            own = got["cpu"] - fixed[name]["cpu"]
            print(f"    {name}: CPU beyond the fixed cost ({fixed[name]['cpu']:.1f} s against python's "
                  f"{fixed['python']['cpu']:.1f} s) / python's beyond its own {own / py:.2f}x", flush=True)


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
    cached_bytecode()
    class_archive_ready()
    print(f"load average {os.getloadavg()[0]:.1f} before, on {os.cpu_count()} cores", flush=True)
    for paths in (small, large) if args.fleet[1] else (small,):
        runs = EVERY if paths is small or not args.large_local2_only else (("spark", 2),)
        engines_on(f"{len(paths)} x {args.records:,}", paths, runs)
    print(f"load average {os.getloadavg()[0]:.1f} after")


# ---- a Spark run's timeline: where local[2]'s wall goes -------------------------------------------------------
SLOT = 0.25  # seconds per row of the timeline's CPU table
SAMPLE = 0.05  # seconds between two readings of the process tree's CPU


def process_start() -> float:
    """When this process started, in ``time.time()``'s seconds (its /proc start time after the machine's boot)."""
    boot = next(float(line.split()[1]) for line in Path("/proc/stat").read_text().splitlines()
                if line.startswith("btime "))
    ticks = int(Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()[19])
    return boot + ticks / os.sysconf("SC_CLK_TCK")


def process_kinds(pid: int) -> dict[int, str]:
    """The processes under ``pid`` (itself included) by kind: the driver, the launcher JVM (spark-submit's), the
    driver's JVM, the workers' daemon (the JVM's child, or the driver's ready process that took its part, and
    then the JVM's child its stand-in), the workers (the daemon's), and other (spark-submit's shell scripts before
    they exec a JVM, the start states' process)."""
    parents: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, IndexError):
            parents[int(stat.parent.name)] = int(stat.read_text().rsplit(")", 1)[1].split()[1])
    kinds = {pid: "driver"}
    todo = [pid]
    while todo:
        at = todo.pop()
        for child_pid in [c for c, parent in parents.items() if parent == at]:
            try:
                line = Path(f"/proc/{child_pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if Path(line.split(" ", 1)[0]).name == "java":
                kind = "launcher" if "launcher.Main" in line else "jvm"
            elif kinds[at] != "daemon" and "spark_daemon --ahead" in line:  # (the driver's ready daemon)
                kind = "daemon"
            else:
                kind = {"jvm": "daemon", "daemon": "workers"}.get(kinds[at], "other")
            kinds[child_pid] = kind
            todo.append(child_pid)
    return kinds


class TimelineSampler:
    """The CPU seconds of each process under the driver, by kind (``process_kinds``), read every ``SAMPLE``
    seconds from a thread: (time, {kind: CPU seconds so far}); each process keeps its last reading (a worker that
    exits keeps what it had). ``own``: this thread's own CPU seconds (left out of the driver's)."""

    def __init__(self) -> None:
        self.samples: list[tuple[float, dict[str, float]]] = []
        self.cpu: dict[int, tuple[str, float]] = {}
        self.own = 0.0
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        tick = os.sysconf("SC_CLK_TCK")
        me = os.getpid()
        while not self.done.wait(SAMPLE):
            for process, kind in process_kinds(me).items():
                with contextlib.suppress(OSError, IndexError):
                    fields = Path(f"/proc/{process}/stat").read_text().rsplit(")", 1)[1].split()
                    if kind == "other" and process in self.cpu:  # (an exited process's command line reads empty)
                        kind = self.cpu[process][0]
                    self.cpu[process] = (kind, sum(int(f) for f in fields[11:13]) / tick)  # utime, stime
            by_kind: dict[str, float] = {}
            for kind, seconds in self.cpu.values():
                by_kind[kind] = by_kind.get(kind, 0.0) + seconds
            by_kind["driver"] = by_kind.get("driver", 0.0) - time.thread_time()  # (not this thread's)
            self.samples.append((time.time(), by_kind))
        self.own = time.thread_time()

    def finish(self) -> list[tuple[float, dict[str, float]]]:
        self.done.set()
        self.thread.join()
        return self.samples


def timeline_child(cores: int, paths: list[str]) -> None:
    """One Spark analysis in this (fresh) process, as the command runs it, with its timeline as JSON: the
    driver's marks (the context's start, each stage, the report, the stop), every task of the executors (its
    stage, start, end, CPU seconds and worker), and the process tree's CPU by kind over time."""
    import metalog.analysis.engines.spark as spark
    import metalog.analysis.engines.spark_meanwhile as meanwhile
    import metalog.analysis.engines.spark_session as ss
    import metalog.analysis.outputs.openmetrics as om
    import metalog.analysis.outputs.report as report
    from metalog.cli.main import main as cli

    marks: list[tuple[float, str]] = [(process_start(), "process start"), (time.time(), "benchmark ready")]
    tasks: list[dict[str, Any]] = []
    current = ["report"]

    def mark(name: str) -> None:
        marks.append((time.time(), name))

    def around(owner: Any, name: str, label: str) -> None:
        inner = getattr(owner, name)

        def run(*args: Any, **kwargs: Any) -> Any:
            mark(f"{label} begins")
            try:
                return inner(*args, **kwargs)
            finally:
                mark(f"{label} ends")

        setattr(owner, name, run)

    around(ss, "quiet_gateway", "JVM launch")
    if hasattr(meanwhile, "DriverGrowth"):  # (before the range tasks counted the growth: a base to compare with)
        around(meanwhile.DriverGrowth, "_run", "growth passes on the driver")
    else:
        around(meanwhile.MeanwhileStarts, "_run", "start states planned on the driver")
    around(ss, "_start", "SparkContext")
    around(ss, "_stop", "stop")
    around(spark.SparkEngine, "analyze", "analyze")
    around(report, "write_report_from_tables", "report")
    around(report, "read_span", "a cluster's span read")
    around(om, "concatenate", "controller_metrics.om joined")
    around(spark.shutil, "rmtree", "a directory removed")
    around(report, "write_html", "report.html")
    around(report, "write_png", "report.png")
    stage = spark.StageReport.stage

    @contextlib.contextmanager
    def staged(self: Any, name: str, records: int) -> Any:
        current[0] = name
        mark(f"stage {name} begins")
        with stage(self, name, records):
            yield
        mark(f"stage {name} ends")
        current[0] = "report"

    spark.StageReport.stage = staged  # type: ignore[method-assign]
    on_partitions = spark._on_partitions

    def timed(fn: Any) -> Any:
        def run(item: Any) -> Any:
            start, cpu = time.time(), time.process_time()
            got = fn(item)
            return got, (start, time.time(), time.process_time() - cpu, os.getpid(), getattr(item, "name", ""))
        return run

    def timed_partitions(sc: Any, fn: Callable[[Any], Any], work: spark.Placed, partitions: int | None,
                         cpu: list[float]) -> list[Any]:
        got = on_partitions(sc, timed(fn), work, partitions, cpu)
        for _, (start, end, seconds, pid, name) in got:
            tasks.append({"stage": current[0], "start": start, "end": end, "cpu": seconds, "pid": pid,
                          "what": name})
        return [result for result, _ in got]

    spark._on_partitions = timed_partitions
    sampler = TimelineSampler()
    with tempfile.TemporaryDirectory() as out:
        mark("CLI begins")
        assert cli(["analyze", *paths, "--out", out, "--engine", "spark", "--master", f"local[{cores}]"]) == 0
        mark("CLI ends")
    samples = sampler.finish()
    print(json.dumps({"marks": marks, "tasks": tasks, "samples": samples, "sampler": sampler.own}))


def timeline_main(args: argparse.Namespace) -> None:
    """``--timeline``: one Spark analysis of the log (with ``--fleet``: of its first fleet) on local[CORES] with
    its timeline: the driver's marks and the executors' tasks from the process's start, then the CPU each kind of
    process used in each quarter second (in cores: 2.0 is both cores of a 2-core machine busy) and the cores this
    run left unused."""
    paths = build_fleet(args.fleet[0], args.records, args.seed) if args.fleet else \
        [build(args.records, args.seed, args.images)]
    cached_bytecode()
    class_archive_ready()
    print(f"load average {os.getloadavg()[0]:.1f} before, on {os.cpu_count()} cores", flush=True)
    done = subprocess.run([sys.executable, __file__, "--child", "spark-timeline", "--cores", str(args.timeline),
                           *map(str, paths)], capture_output=True, text=True, check=True)
    got = json.loads(done.stdout.splitlines()[-1])
    print(f"load average {os.getloadavg()[0]:.1f} after")
    print_timeline(got, args.timeline)


def print_timeline(got: dict[str, Any], cores: int) -> None:
    zero = got["marks"][0][0]
    events = [(at, f"driver: {name}") for at, name in got["marks"]]
    for n, task in enumerate(sorted(got["tasks"], key=lambda t: t["start"])):
        label = f"task {n} ({task['stage']}{': ' + task['what'] if task['what'] else ''}, worker {task['pid']})"
        events += [(task["start"], f"{label} begins"),
                   (task["end"], f"{label} ends: {task['end'] - task['start']:.2f} s wall, {task['cpu']:.2f} s CPU")]
    for at, text in sorted(events):
        print(f"  {at - zero:7.2f} s  {text}")
    samples = got["samples"]
    kinds = ["driver", "other", "launcher", "jvm", "daemon", "workers"]
    print(f"\n  {'from':>6}  " + "".join(f"{k:>9}" for k in kinds) + f"{'unused':>9}"
          f"   (cores busy in each {SLOT} s; unused: by this run)")
    before: dict[str, float] = {}
    slot_start, slot_used = zero, dict.fromkeys(kinds, 0.0)
    totals = dict.fromkeys(kinds, 0.0)
    for at, cpu in samples:
        for kind in kinds:
            used = cpu.get(kind, 0.0) - before.get(kind, 0.0)
            slot_used[kind] += used
            totals[kind] += used
        before = cpu
        if at - slot_start >= SLOT:
            span = at - slot_start
            busy = sum(slot_used.values()) / span
            print(f"  {slot_start - zero:6.2f}  " + "".join(f"{slot_used[k] / span:>9.2f}" for k in kinds)
                  + f"{max(cores - busy, 0.0):>9.2f}")
            slot_start, slot_used = at, dict.fromkeys(kinds, 0.0)
    print("  CPU seconds by kind (from the process start): " + ", ".join(f"{k} {totals[k]:.2f}" for k in kinds)
          + f"; the sampler's own {got['sampler']:.2f} (not in the driver's)")
    stages: dict[str, list[float]] = {}
    for task in got["tasks"]:
        stages.setdefault(task["stage"], []).append(task["cpu"])
    for name, cpus in stages.items():
        print(f"  {name}: {len(cpus)} tasks, CPU " + ", ".join(f"{c:.2f}" for c in cpus) + f" (sum {sum(cpus):.2f})")


# ---- the python engine against the replay it wraps, and its memory by log size ---------------------------------
def children_cpu() -> float:
    """CPU seconds of this process's reaped children."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def cached_bytecode() -> None:
    """The children this process starts from now on read their modules' bytecode from a cache (under the
    environment's ``pycache``, as scripts/test.sh keeps it), as an installed metalog does: with
    PYTHONDONTWRITEBYTECODE set (some shells set it) and no ``__pycache__`` in a source checkout, each would compile
    every module it imports from source, about a quarter of the replay's CPU on the 1M log, which a user's runs do
    not spend. Said in the output."""
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    os.environ.setdefault("PYTHONPYCACHEPREFIX", str(Path(sys.prefix) / "pycache"))
    print(f"bytecode cached in {os.environ['PYTHONPYCACHEPREFIX']} (the children compile no module from source)")


def warm(path: Path) -> None:
    """One replay and one analysis, unmeasured: the bytecode cache holds every module they import."""
    subprocess.run([sys.executable, "-m", "metalog.cli.main", "replay", str(path), "--no-snapshots"],
                   capture_output=True, check=True)
    subprocess.run([sys.executable, __file__, "--child", "split-modules", str(path)], capture_output=True, check=True)


def python_scaling(sizes: list[int], seed: int) -> None:
    """For each size: ``metalog replay --no-snapshots`` and ``metalog analyze --engine python`` (the tables,
    controller_metrics.om and the report, as the command writes them) on the same log, each in a process of its
    own (``cached_bytecode``): their CPU seconds, the analysis' speed as a share of the replay's, and its peak
    resident set."""
    paths = [build(size, seed) for size in sizes]
    cached_bytecode()
    warm(paths[0])
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


# ---- the python engine's CPU by part ---------------------------------------------------------------------------
WRITERS = (("ParquetPart", ("add", "close")), ("BucketRows", ("add", "close")), ("SeriesBlocks", ("add", "close")),
           ("CsvTable", ("add", "close")), ("TableWriters", ("close",)))


def python_split(records: int, seed: int, runs: int) -> None:
    """``metalog analyze --engine python`` on the generated log, its CPU split into the imports it needs (done
    first, timed), the per-batch loop (the replay and the step), the table writers (Parquet, timeline_buckets,
    controller_metrics.om, CSV), the growth pass and the report; against ``metalog replay --no-snapshots``'s
    CPU, each in a process of its own (``cached_bytecode``), ``runs`` times (the fastest run is printed). Both
    totals are a whole process's, as this process sees its reaped child: from the interpreter's start to its
    exit, teardown included."""
    path = build(records, seed)
    cached_bytecode()
    warm(path)
    found = subprocess.run([sys.executable, __file__, "--child", "split-modules", str(path)], capture_output=True,
                           text=True, check=True).stdout.splitlines()[-1]  # (the modules the analysis imports)
    print(f"load average {os.getloadavg()[0]:.1f} before, on {os.cpu_count()} cores", flush=True)
    replays, splits = [], []
    for _ in range(runs):
        cpu = children_cpu()
        subprocess.run([sys.executable, "-m", "metalog.cli.main", "replay", str(path), "--no-snapshots"],
                       capture_output=True, check=True)
        replays.append(children_cpu() - cpu)
        cpu = children_cpu()
        done = subprocess.run([sys.executable, __file__, "--child", "split", str(path)], input=found,
                              capture_output=True, text=True, check=True)
        splits.append({**json.loads(done.stdout.splitlines()[-1]), "total": children_cpu() - cpu})
    replay, split = min(replays), min(splits, key=lambda got: got["total"])
    other = split["total"] - sum(split[k] for k in ("imports", "loop", "writers", "growth", "report"))
    print(f"  replay {replay:.2f} s CPU; analyze {split['total']:.2f} s CPU: {replay / split['total']:.3f}x the "
          f"replay's speed\n  imports {split['imports']:.2f}, loop {split['loop']:.2f}, writers "
          f"{split['writers']:.2f}, growth {split['growth']:.2f}, report {split['report']:.2f} (png "
          f"{split['png']:.2f}), the rest {other:.2f} (the interpreter, the CLI, the output directory, the teardown)")
    print(f"  the loop's {split['loop']:.2f} s: {split['loop_system']:.3f} s of it in the kernel, "
          f"{split['loop_faults']:,} page faults (memory touched for the first time)")
    print(f"load average {os.getloadavg()[0]:.1f} after")


def split_child(path: str) -> None:
    """One python-engine analysis in this (fresh) process, CPU seconds by part, as JSON: the modules the run
    imports (found by a run in a process of its own, read from standard input) imported first, then each part
    timed where it runs; the process then ends as ``metalog`` ends (``cli.main.run``: its exit status, its
    teardown), which the parent counts in the total."""
    import importlib

    names = json.loads(sys.stdin.read())
    started = time.process_time()  # (what the interpreter did before is in "the rest")
    from metalog.cli.analyze import one_blas_thread

    one_blas_thread()  # (as the command does before pyarrow, and numpy with it, is first imported)
    for name in names:
        with contextlib.suppress(Exception):  # (one that imports only from its package's code: imported there)
            importlib.import_module(name)
    parts = {"imports": time.process_time() - started}
    timers = split_timers()
    from metalog.cli.main import run

    out = tempfile.mkdtemp()
    try:
        run(["analyze", path, "--out", out, "--engine", "python"])
    except SystemExit as done:
        assert done.code == 0
        parts.update({k: timers[k] for k in ("writers", "growth", "report", "png")})
        parts["loop"] = timers["replay"] - timers["writers"]
        parts["loop_system"] = timers["replay_system"] - timers["writers_system"]
        parts["loop_faults"] = int(timers["replay_faults"] - timers["writers_faults"])
        print(json.dumps(parts), flush=True)
        raise
    finally:
        shutil.rmtree(out)


def modules_child(path: str) -> None:
    """The modules a python-engine analysis imports beyond the interpreter's own, in import order, as JSON."""
    before = set(sys.modules)
    from metalog.cli.main import main as cli

    with tempfile.TemporaryDirectory() as out:
        assert cli(["analyze", path, "--out", out, "--engine", "python"]) == 0
    print(json.dumps([name for name in sys.modules if name not in before and not name.startswith("__")]))


def split_timers() -> dict[str, float]:
    """CPU seconds spent in each part, filled as the analysis runs: its functions wrapped (a writer's calls into
    another writer counted once); for the replay and the writers also the system CPU seconds and the page faults
    (``PART_system``, ``PART_faults``)."""
    import metalog.analysis.engines.python as engine
    import metalog.analysis.outputs.report as report
    import metalog.analysis.outputs.report.png as png
    from metalog.analysis.outputs import writers

    timers = {"writers": 0.0, "growth": 0.0, "report": 0.0, "png": 0.0, "replay": 0.0}
    for part in ("replay", "writers"):
        timers[f"{part}_system"] = timers[f"{part}_faults"] = 0.0
    depth = [0]

    def kernel() -> tuple[float, int]:
        used = resource.getrusage(resource.RUSAGE_SELF)
        return used.ru_stime, used.ru_minflt + used.ru_majflt

    def timed(owner: Any, name: str, part: str) -> None:
        inner = getattr(owner, name)

        def run(*args: Any, **kwargs: Any) -> Any:
            depth[0] += part == "writers"
            start, (system, faults) = time.process_time(), kernel()
            try:
                return inner(*args, **kwargs)
            finally:
                if part != "writers" or depth[0] == 1:
                    timers[part] += time.process_time() - start
                    if f"{part}_system" in timers:
                        now_system, now_faults = kernel()
                        timers[f"{part}_system"] += now_system - system
                        timers[f"{part}_faults"] += now_faults - faults
                depth[0] -= part == "writers"

        setattr(owner, name, run)

    for cls, methods in WRITERS:
        for method in methods:
            timed(getattr(writers, cls), method, "writers")
    timed(engine, "replay_cluster", "replay")
    timed(engine, "write_growth_tables", "growth")
    timed(report, "write_report_from_tables", "report")
    timed(report, "write_png", "png")
    timed(png, "write_png", "png")  # (where report calls it through its module)
    return timers


# ---- controller_metrics.om: its size and its writers' CPU ----------------------------------------------------
def om_main(args: argparse.Namespace) -> None:
    from metalog.analysis.engines.python import PythonEngine
    from metalog.analysis.engines.request import AnalysisRequest

    path = build(args.records, args.seed)
    print(f"load average {os.getloadavg()[0]:.1f} before, on {os.cpu_count()} cores", flush=True)
    with tempfile.TemporaryDirectory() as out:
        summary = PythonEngine().analyze(AnalysisRequest.of([path], out))
        records, name = summary.records, summary.clusters[0]
        parquet = sum(f.stat().st_size for f in (Path(out) / "timeline_batches").rglob("*.parquet"))
        chunks = timeline_chunks(Path(out), name)
        print(f"{records:,} records, {sum(map(len, chunks)):,} batches; the Parquet timeline {parquet:,} bytes")
        for every_batch in (False, True):
            size, python = om_writer(Path(out), name, chunks, every_batch)
            print(f"  controller_metrics.om{' --metrics-every-batch' if every_batch else '':<23}{size:>14,} bytes"
                  f"{size / records:>9.1f} bytes/record{size / parquet:>8.2f}x the Parquet timeline; writer CPU "
                  f"{python:.1f} s (the Spark engine's executors run the same writer)", flush=True)
    print(f"load average {os.getloadavg()[0]:.1f} after")


def timeline_chunks(out: Path, name: str) -> list[Any]:
    """The cluster's timeline read back from its Parquet file as the chunks the replay hands the writers (of
    ``CHUNK_BATCHES`` rows each)."""
    from array import array

    from metalog.analysis.domain.columns import Chunk, Coded
    from metalog.analysis.domain.schema import TIMELINE, Kind
    from metalog.analysis.engines.replay import CHUNK_BATCHES
    from metalog.analysis.outputs.layout import iter_cluster_batches

    def column(values: Any, kind: Kind) -> Any:
        if kind is not Kind.TEXT:
            return array("q", values.to_pylist())
        coded = values.dictionary_encode()  # text is coded into a small vocabulary, as the step codes it
        return Coded(array("q", coded.indices.to_pylist()), coded.dictionary.to_pylist())

    return [Chunk(TIMELINE, name, tuple(column(batch.column(c.name), c.kind) for c in TIMELINE.values))
            for batch in iter_cluster_batches(out / TIMELINE.name, name, batch_rows=CHUNK_BATCHES)]


def om_writer(out: Path, name: str, chunks: list[Any], every_batch: bool) -> tuple[int, float]:
    """controller_metrics.om's bytes, and the CPU seconds of its writer: the one the python engine and the Spark
    engine's executors run (``writers.SeriesBlocks``, its blocks joined by ``openmetrics.concatenate``), fed the
    timeline's chunks."""
    from metalog.analysis.outputs import openmetrics as om
    from metalog.analysis.outputs.writers import SeriesBlocks

    with tempfile.TemporaryDirectory(dir=out) as scratch:
        cpu = time.process_time()
        series = SeriesBlocks(Path(scratch), 0, name, every_batch=every_batch)
        for chunk in chunks:
            series.add(chunk)
        series.close()
        om.concatenate(out / "python.om", lambda i, _: [series.paths[i]], [name])
        cpu = time.process_time() - cpu
    return (out / "python.om").stat().st_size, cpu


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
    ap.add_argument("--python-split", type=int, metavar="RECORDS",
                    help="the python engine's CPU on a generated log split into imports, the per-batch loop, the "
                         "writers, the growth pass and the report, against the replay's")
    ap.add_argument("--runs", type=int, default=3, help="with --python-split: runs (the fastest is printed)")
    ap.add_argument("--om", action="store_true",
                    help="controller_metrics.om only: its bytes per record and its writers' CPU")
    ap.add_argument("--timeline", type=int, metavar="CORES",
                    help="one Spark analysis of the log on local[CORES], with its timeline: the driver's marks, "
                         "each task of the executors and the CPU of each kind of process over time")
    ap.add_argument("--child", choices=["python", "spark", "spark-timeline", "split", "split-modules"],
                    help=argparse.SUPPRESS)
    ap.add_argument("--cores", type=int, default=1, help=argparse.SUPPRESS)
    ap.add_argument("paths", nargs="*", help=argparse.SUPPRESS)
    ap.add_argument("--fixed", type=int, metavar="RECORDS",
                    help="each engine on a generated log of RECORDS records first (its fixed cost), then each "
                         "Spark run's CPU beyond its fixed cost against the python engine's beyond its own")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--images", type=int, default=0, metavar="EVERY",
                    help="write state images every EVERY offsets first (default: none, deltas only)")
    args = ap.parse_args()
    if args.child == "split":
        return split_child(args.paths[0])
    if args.child == "split-modules":
        return modules_child(args.paths[0])
    if args.child == "spark-timeline":
        return timeline_child(args.cores, args.paths)
    if args.child:
        return child(args.child, args.cores, args.paths)
    if args.timeline:
        return timeline_main(args)
    if args.fleet:
        return fleet_main(args)
    if args.python_scaling:
        return python_scaling(args.python_scaling, args.seed)
    if args.python_split:
        return python_split(args.python_split, args.seed, args.runs)
    if args.om:
        return om_main(args)
    path = build(args.records, args.seed, args.images)
    cached_bytecode()
    class_archive_ready()
    print(f"load average {os.getloadavg()[0]:.1f} before, on {os.cpu_count()} cores", flush=True)
    fixed = engines_on(f"{args.fixed:,}", [build(args.fixed, args.seed)], EVERY) if args.fixed else None
    engines_on(f"{args.records:,}", [path], EVERY, fixed)
    print(f"load average {os.getloadavg()[0]:.1f} after")

if __name__ == "__main__":
    main()
