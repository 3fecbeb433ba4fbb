"""``metalog demo``: a realistic cluster history generated, replayed, compared and analysed, in one command."""

from __future__ import annotations

import argparse
import importlib.util
import io
import shutil
import sys
import time
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

from metalog.cli.progress import Progress

EXAMPLES = """\
examples:
  metalog demo                      # writes ./metalog-demo; Spark when pyspark and a JDK are there
  metalog demo --out /tmp/demo --records 200000
  metalog demo --engine python      # the analysis in this process, no JVM
"""
QUIET_EVENTS = {"aborted-transaction"}  # frequent: counted, not listed


def register(sub: Any) -> None:
    from metalog.cli import options

    p = sub.add_parser("demo", help="generate a cluster history, replay it, diff it, analyse it",
                       description="Generates a realistic KRaft metadata log with snapshots (a ZooKeeper migration, "
                                   "then the move to several log dirs per broker and a failed disk), shows the "
                                   "cluster state at a few points in time and what changed between two of them, "
                                   "runs the migration-phase analysis (report.html, report.png, CSV timelines) "
                                   "and says where to look next.",
                       epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", default="metalog-demo", help="output directory (replaced if it holds a demo)")
    p.add_argument("--seed", type=int, default=42, help="the generated history's seed (default 42)")
    p.add_argument("--records", type=options.positive_int64("a number of records"), default=50_000,
                   help="about how many records to generate (default 50,000)")
    p.add_argument("--engine", choices=["spark", "python"],
                   help="the analysis engine (default: spark when pyspark and a JDK are there, else python)")
    p.set_defaults(func=_demo)


def _demo(args: argparse.Namespace) -> int:
    from metalog.errors import MetalogError

    out = Path(args.out)
    if out.exists():
        if not (out / ".metalog-demo").exists():
            raise MetalogError(f"{out} exists and is not a metalog demo directory; choose another --out")
        shutil.rmtree(out)
    engine, why = (args.engine, None) if args.engine else default_engine()
    out.mkdir(parents=True)
    (out / ".metalog-demo").write_text("written by metalog demo\n")
    log_dir = out / "log"
    step = _generate(log_dir, args.seed, args.records)
    points, first_time = _replay(log_dir, step)
    step += len(points) + 1
    written = _analyze(log_dir, out / "analysis", engine, why, step)
    _where(log_dir, written, points, first_time)
    return 0


def default_engine() -> tuple[str, str | None]:
    """``spark`` when pyspark and a Java runtime are there; else ``python`` and one line saying why."""
    from metalog.analysis.engines.spark_session import find_java
    from metalog.errors import MetalogError

    if importlib.util.find_spec("pyspark") is None:
        return "python", ("pyspark is not installed, so the analysis runs on the python engine "
                          "(for Spark: pip install 'metalog[spark]' and a JDK 17 or 21)")
    try:
        find_java()
    except MetalogError:
        return "python", ("no Java runtime found (JAVA_HOME or java on PATH), so the analysis runs on the python "
                          "engine (for Spark: install a JDK 17 or 21, e.g. apt-get install openjdk-17-jre-headless)")
    return "spark", None


def _generate(log_dir: Path, seed: int, records: int) -> int:
    from metalog.generate import HistorySettings
    from metalog.generate.writer import write_history

    print(f"== 1. generating a cluster history ({records:,} data records, seed {seed}): a ZooKeeper "
          "migration, the move to several log dirs per broker, a failed disk")
    settings = HistorySettings(brokers=6, topics=12, partitions=6, records=records, scenario="mixed")
    with Progress("generating") as bar:
        gen = write_history(log_dir, seed, settings, snapshot_every=max(records // 4, 1000), progress=bar.update)
    print(f"   {gen.records:,} data records in {gen.batches:,} batches, offsets 0..{gen.end_offset:,}, "
          f"{len(gen.snapshots)} snapshots in {log_dir}/__cluster_metadata-0")
    return 2


def _replay(log_dir: Path, step: int) -> tuple[list[int], str]:
    from metalog.cli.replay import render_state
    from metalog.replay.diff import diff_images, render_diff
    from metalog.replay.history import MetadataHistory
    from metalog.replay.points import format_time

    with MetadataHistory(log_dir) as history:
        points = [history.end_offset // 4, history.end_offset // 2, history.end_offset]
        results = []
        for i, offset in enumerate(points, start=step):
            result = history.state_at(offset)
            results.append(result)
            print(f"\n== {i}. the state at offset {offset:,} ({format_time(result.timestamp)})")
            print(_indent(render_state(result), limit=16))  # the brokers and the first topics
        print(f"\n== {step + len(points)}. what changed between offsets {points[1]:,} and {points[2]:,}")
        print(_indent(render_diff(diff_images(results[1].image, results[2].image)), limit=40))
    return points, format_time(results[0].timestamp)


def _analyze(log_dir: Path, out: Path, engine: str, why: str | None, step: int) -> list[Path]:
    """``metalog analyze`` itself, on the demo's log: its outputs, then the summary and the events."""
    from metalog.analysis.outputs.report import summary
    from metalog.analysis.outputs.tables import read_table
    from metalog.cli.main import build_parser

    where = "Spark on local[*]" if engine == "spark" else "the python engine"
    print(f"\n== {step}. the migration-phase analysis ({where}): timelines, events, report")
    if why:
        print(f"   note: {why}")
    sys.stdout.flush()
    args = build_parser("analyze").parse_args(["analyze", str(log_dir), "--out", str(out), "--engine", engine, "--csv"])
    started = time.monotonic()
    paths = io.StringIO()
    with redirect_stdout(paths):  # analyze prints the files it wrote; they are listed under "where to look"
        args.func(args)
    print(f"   done in {time.monotonic() - started:.1f} s")
    rows = read_table(out / "timeline_batches.csv")
    events = read_table(out / "events.csv")
    for cluster in dict.fromkeys(r["cluster"] for r in rows):
        print(_indent(summary(cluster, [r for r in rows if r["cluster"] == cluster], events)))
    shown = [e for e in events if e["event"] not in QUIET_EVENTS]
    print(f"   events: {len(events)}, {len(events) - len(shown)} of them aborted metadata transactions; the others:")
    width = max([len("EVENT"), *(len(e["event"]) for e in shown)]) + 2
    lines = [f"{'OFFSET':>8}  {'EVENT':<{width}}DETAIL"]
    lines += [f"{e['offset']:>8,}  {e['event']:<{width}}{e['detail']}" for e in shown]
    print(_indent("\n".join(lines)))
    return [Path(line) for line in paths.getvalue().splitlines() if line]


def _where(log_dir: Path, written: list[Path], points: list[int], first_time: str) -> None:
    by_name = {p.name: p for p in written}
    places = []
    if "report.html" in by_name:
        places.append(("the report (open it in a browser)", by_name["report.html"].resolve().as_uri()))
    if "report.png" in by_name:
        places.append(("its main chart", str(by_name["report.png"])))
    tables = [p for p in written if p.suffix == ".csv"]
    if tables:
        also = ", and Parquet in TABLE/cluster=NAME/" if any(p.name == "timeline_batches" for p in written) else ""
        places.append((f"the timelines and events (CSV{also})", f"{tables[0].parent}/"))
    places.append(("the log", str(log_dir)))
    width = max(len(label) for label, _ in places) + 2
    print("\n== where to look")
    for label, place in places:
        print(f"   {label + ':':<{width}}{place}")
    print(f"\n== next: look at it yourself\n"
          f"   metalog replay {log_dir} --at {first_time}\n"
          f"   metalog diff {log_dir} --from {points[0]} --to end\n"
          f"   metalog log dump {log_dir} | less\n"
          f"   metalog snapshot list {log_dir}\n"
          f"   metalog analyze {log_dir} --out my-analysis --bucket 5m")


def _indent(text: str, limit: int = 30) -> str:
    lines = text.splitlines()
    shown = lines[:limit] + ([f"... ({len(lines) - limit} more lines)"] if len(lines) > limit else [])
    return "\n".join("   " + line for line in shown)
