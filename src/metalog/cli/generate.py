"""``metalog generate``: a realistic KRaft metadata log, written as a real log directory."""

from __future__ import annotations

import argparse
from typing import Any

from metalog.cli.progress import Progress

EXAMPLES = """\
examples:
  metalog generate /tmp/cluster --seed 7
  metalog generate /tmp/big --seed 1 --brokers 30 --topics 200 --partitions 12 --records 1000000
  metalog replay /tmp/cluster                 # then look at it
"""


def register(sub: Any) -> None:
    p = sub.add_parser("generate", help="write a realistic, valid KRaft metadata log with snapshots",
                       description="Generate a KRaft metadata history (NoOps every 500 ms, leader elections, ISR "
                                   "churn, broker restarts, topics created and deleted, configs, metadata "
                                   "transactions, replicas getting real log directories) and write it as a log "
                                   "directory with Kafka snapshots. The same seed gives the same bytes.",
                       epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("outdir", help="an empty or new directory")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--brokers", type=int, default=6)
    p.add_argument("--topics", type=int, default=20)
    p.add_argument("--partitions", type=int, default=6, help="partitions per topic")
    p.add_argument("--records", type=int, default=20_000, help="about how many records to write")
    p.add_argument("--snapshot-every", type=int, default=50_000, metavar="N", help="records between snapshots")
    p.set_defaults(func=_generate)


def _generate(args: argparse.Namespace) -> int:
    from metalog.errors import MetalogError
    from metalog.generate import HistorySettings
    from metalog.generate.writer import write_history

    for name in ("brokers", "topics", "partitions", "records", "snapshot_every"):
        if getattr(args, name) < 1:
            raise MetalogError(f"--{name.replace('_', '-')} must be at least 1")
    settings = HistorySettings(brokers=args.brokers, topics=args.topics, partitions=args.partitions,
                               records=args.records)
    with Progress("generating") as bar:
        result = write_history(args.outdir, args.seed, settings, snapshot_every=args.snapshot_every,
                               progress=bar.update)
    print(f"wrote {result.records:,} records in {result.batches:,} batches to {result.path} "
          f"(offsets 0..{result.end_offset:,}), {len(result.snapshots)} snapshot(s)")
    print(f"final state digest {result.digest}")
    return 0
