"""``metalog generate``: a realistic KRaft metadata log, written as a real log directory."""

from __future__ import annotations

import argparse
from typing import Any

from metalog.cli.progress import Progress
from metalog.generate.generator import SCENARIOS

EXAMPLES = """\
examples:
  metalog generate /tmp/cluster --seed 7
  metalog generate /tmp/zk --scenario zk-migration     # starts in ZooKeeper mode and migrates
  metalog generate /tmp/mixed --scenario mixed --records 100000
  metalog generate /tmp/big --seed 1 --brokers 30 --topics 200 --partitions 12 --records 1000000
  metalog replay /tmp/cluster                 # then look at it
"""

DESCRIPTION = (
    "Generate a KRaft metadata history (NoOps every 500 ms, leader elections, ISR churn, broker restarts, topics "
    "created and deleted, configs, metadata transactions, replicas getting real log directories) and write it as a "
    "log directory with Kafka snapshots. The same seed gives the same bytes.\n\n"
    "scenarios:\n"
    "  native           KRaft from the start (the default)\n"
    "  zk-migration     starts in ZooKeeper mode: PRE_MIGRATION, an aborted and a committed initial load,\n"
    "                   MIGRATION, ZK brokers restarting as KRaft brokers, POST_MIGRATION, upgrades\n"
    "  jbod-transition  one log dir per broker below 3.7-IV2, the upgrade to 3.7-IV2, brokers with several\n"
    "                   dirs, replicas assigned to them, a failed disk\n"
    "  mixed            all of it in one history")


def register(sub: Any) -> None:
    from metalog.cli import options

    p = sub.add_parser("generate", help="write a realistic, valid KRaft metadata log with snapshots",
                       description=DESCRIPTION,
                       epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("outdir", help="an empty or new directory")
    p.add_argument("--seed", type=int, default=1, help="the same seed writes the same log (default 1)")
    p.add_argument("--brokers", type=options.positive_int32("a number of brokers"), default=6,
                   help="brokers (default 6)")
    p.add_argument("--topics", type=options.positive_int32("a number of topics"), default=20,
                   help="topics (default 20)")
    p.add_argument("--partitions", type=options.positive_int32("a partition count"), default=6,
                   help="partitions per topic")
    p.add_argument("--records", type=options.positive_int64("a number of records"), default=20_000,
                   help="about how many records to write")
    p.add_argument("--scenario", choices=SCENARIOS, default="native", help="the cluster's story (default native)")
    p.add_argument("--snapshot-every", type=options.positive_int64("a number of records"), default=50_000, metavar="N",
                   help="records between snapshots")
    p.set_defaults(func=_generate)


def _generate(args: argparse.Namespace) -> int:
    from pathlib import Path

    from metalog.errors import MetalogError
    from metalog.generate import HistorySettings
    from metalog.generate.writer import write_history
    from metalog.text import path_text

    if Path(args.outdir).exists() and not Path(args.outdir).is_dir():
        raise MetalogError(f"{args.outdir} is a file; give a new or empty directory")
    settings = HistorySettings(brokers=args.brokers, topics=args.topics, partitions=args.partitions,
                               records=args.records, scenario=args.scenario)
    events: list[str] = []
    with Progress("generating") as bar:
        result = write_history(args.outdir, args.seed, settings, snapshot_every=args.snapshot_every,
                               progress=bar.update, events=events)
    print(f"wrote {result.records:,} data records in {result.batches:,} batches and a LeaderChange control record to "
          f"{path_text(result.path)} "
          f"(offsets 0..{result.end_offset:,}), {len(result.snapshots)} snapshot(s)")
    print(f"scenario {args.scenario}" + "".join(f"\n  {event}" for event in events))
    print(f"final state digest {result.digest}")
    return 0
