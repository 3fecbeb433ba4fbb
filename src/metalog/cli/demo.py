"""``metalog demo``: a realistic cluster history generated, replayed and compared, in one command."""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path
from typing import Any

from metalog.cli.progress import Progress

EXAMPLES = """\
examples:
  metalog demo                      # writes ./metalog-demo
  metalog demo --out /tmp/demo --records 200000
"""


def register(sub: Any) -> None:
    p = sub.add_parser("demo", help="generate a cluster history, replay it at a few points, show a diff",
                       description="Generates a realistic KRaft metadata log with snapshots, shows the cluster "
                                   "state at a few points in time, what changed between two of them, and where "
                                   "to look next.",
                       epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", default="metalog-demo", help="output directory (replaced if it holds a demo)")
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--records", type=int, default=50_000)
    p.set_defaults(func=_demo)


def _demo(args: argparse.Namespace) -> int:
    from metalog.cli.replay import render_state
    from metalog.errors import MetalogError
    from metalog.generate import HistorySettings
    from metalog.generate.writer import write_history
    from metalog.replay.diff import diff_images, render_diff
    from metalog.replay.history import MetadataHistory, format_time

    out = Path(args.out)
    log_dir = out / "log"
    if out.exists():
        if not (out / ".metalog-demo").exists():
            raise MetalogError(f"{out} exists and is not a metalog demo directory; choose another --out")
        shutil.rmtree(out)
    out.mkdir(parents=True)
    (out / ".metalog-demo").write_text("written by metalog demo\n")

    print(f"== 1. generating a cluster history ({args.records:,} records, seed {args.seed}): a ZooKeeper "
          "migration, the move to several log dirs per broker, a failed disk")
    settings = HistorySettings(brokers=6, topics=12, partitions=6, records=args.records,
                               scenario="mixed")
    with Progress("generating") as bar:
        gen = write_history(log_dir, args.seed, settings, snapshot_every=max(args.records // 4, 1000),
                            progress=bar.update)
    print(f"   {gen.records:,} records in {gen.batches:,} batches, offsets 0..{gen.end_offset:,}, "
          f"{len(gen.snapshots)} snapshots in {log_dir}/__cluster_metadata-0")

    with MetadataHistory(log_dir) as history:
        points = [history.end_offset // 4, history.end_offset // 2, history.end_offset]
        results = []
        for i, offset in enumerate(points, start=2):
            result = history.state_at(offset)
            results.append(result)
            print(f"\n== {i}. the state at offset {offset:,} ({format_time(result.timestamp)})")
            print(_indent(render_state(result)))
        print(f"\n== {len(points) + 2}. what changed between offsets {points[1]:,} and {points[2]:,}")
        print(_indent(render_diff(diff_images(results[1].image, results[2].image)), limit=40))
    print(f"\n== next: look at it yourself\n"
          f"   metalog replay {log_dir} --at-time {format_time(results[0].timestamp)}\n"
          f"   metalog diff {log_dir} --from {points[0]} --to end\n"
          f"   metalog log dump {log_dir} | less\n"
          f"   metalog snapshot list {log_dir}")
    return 0


def _indent(text: str, limit: int = 30) -> str:
    lines = text.splitlines()
    shown = lines[:limit] + ([f"... ({len(lines) - limit} more lines)"] if len(lines) > limit else [])
    return "\n".join("   " + line for line in shown)
