"""``metalog why``: is a partition offline, leaderless, under-replicated or under min ISR at a point, since when,
which record did it, and the chain behind it; the same for a broker and a log directory."""

from __future__ import annotations

import argparse
import json
from typing import Any

from metalog.errors import MetalogError

EXAMPLES = """\
examples:
  metalog why LOGDIR orders-3                          # the partition at the end of the log
  metalog why LOGDIR orders-3 --at 2024-05-01T10:32:00Z   # ... as it was at 10:32 UTC (or --at OFFSET)
  metalog why LOGDIR --broker 5                        # fenced, in controlled shutdown, unregistered, lost dirs
  metalog why LOGDIR --directory dJhF1wI8CgKo77hxWegJeg   # a log directory (KIP-858): lost, its broker fenced
  metalog why LOGDIR orders-3 --json | jq .conditions
  metalog why 00000000000000005001-0000000003.checkpoint orders-3   # in one snapshot's state

A partition is offline when it has no leader (leader -1, Kafka's OfflinePartitionsCount: "leaderless" is the
same), its leader is recovering after an unclean election (leaderRecoveryState RECOVERING), it is under min ISR
when its ISR is smaller than min.insync.replicas (the topic's, else the cluster default BROKER/'s, else Kafka's
default 1; a broker's server.properties is not in the log), under-replicated when its ISR is smaller than its
replicas, and it has offline replicas when a replica's broker is fenced or not registered or its directory is
not online. SINCE is the published point where the state's current run began ("start": it held when the log
begins) and RECORD the records there that made it. The chain lists the committed changes behind it: the
partition's ISR, ELR, leader and directories since its trouble began, and the broker registrations (fenced,
controlled shutdown, unregistered, directories) that explain its replicas, each at the offset Kafka's loader
published it. A POINT is %s; start, the empty state before the log, is no state Kafka's
loader published.
"""


def register(sub: Any) -> None:
    from metalog.cli import options
    from metalog.replay.points import END, POINT_FORMS

    p = sub.add_parser("why", help="why a partition is offline or under-replicated, a broker fenced, a directory "
                                   "lost: since when, which record, the chain behind it",
                       description="What is wrong with a partition, a broker or a log directory at a point of the "
                                   "log, since which offset, which record did it, and the committed changes behind "
                                   "it.", epilog=EXAMPLES % POINT_FORMS,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("logdir", metavar="LOGDIR", help="a log directory (holding __cluster_metadata-0), or one "
                                                     ".checkpoint snapshot file (its state)")
    p.add_argument("partition", nargs="?", metavar="TOPIC-N", help="a partition, such as orders-3")
    p.add_argument("--broker", type=options.BROKER_ID, metavar="ID", help="a broker instead of a partition")
    p.add_argument("--directory", metavar="UUID", help="a log directory's id instead of a partition")
    p.add_argument("--at", type=options.point, default=END, metavar="POINT",
                   help=f"the state published at or before this point: {options.STATE_HELP} (default: end)")
    p.add_argument("--json", action="store_true", help="one JSON object")
    p.set_defaults(func=_why)


def _question(args: argparse.Namespace) -> str:
    given = [q for q in (args.partition, None if args.broker is None else f"broker {args.broker}",
                         None if args.directory is None else f"directory {args.directory}") if q is not None]
    if len(given) != 1:
        raise MetalogError("give one of TOPIC-N, --broker ID or --directory UUID")
    return given[0] if args.partition is None else args.partition.strip()


def _why(args: argparse.Namespace) -> int:
    from metalog.cli.options import resolving
    from metalog.replay.history import MetadataHistory
    from metalog.replay.why import ask, parse_partition, render, why_partition

    question = _question(args)
    with MetadataHistory(args.logdir) as history:
        with resolving("--at"):
            result = history.state_at_point(args.at)
        answer = why_partition(history, result, *parse_partition(question)) if args.partition is not None else \
            ask(history, result, question)
    if args.json:
        print(json.dumps(answer.to_json()))
    else:
        print("\n".join(render(answer)))
    return 0
