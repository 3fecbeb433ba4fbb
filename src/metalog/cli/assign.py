"""``metalog assign``: KIP-36 rack-aware replica placement, as Kafka's AdminUtils computes it."""

from __future__ import annotations

import argparse
import json
import random
from typing import Any

EXAMPLES = """\
examples:
  metalog assign --brokers 0:rack1,1:rack3,2:rack3,3:rack2,4:rack2,5:rack1 --partitions 7 --replication-factor 3
  metalog assign --brokers 0,1,2,3,4 --partitions 10 --replication-factor 3 --json
  metalog assign --brokers 0:a,1:b,2:c --partitions 6 --replication-factor 2 --start-index 1 --start-partition 6

Brokers are ID or ID:RACK. Either every broker has a rack or none has. Without --start-index the
start is random, as in Kafka; give --seed to make that random start reproducible.
"""


def register(sub: Any) -> None:
    from metalog.cli import options

    p = sub.add_parser("assign", help="place partition replicas on brokers (KIP-36, Kafka's AdminUtils)",
                       description="Computes the replica assignment Kafka's AdminUtils.assignReplicasToBrokers "
                                   "gives: round-robin over a rack-alternated broker list, followers shifted "
                                   "each round, at most one replica per rack while racks remain.",
                       epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--brokers", required=True, help="comma-separated ID or ID:RACK, e.g. 0:rack1,1:rack3,2:rack2")
    p.add_argument("--partitions", type=options.int32("a partition count"), required=True, help="number of partitions")
    p.add_argument("--replication-factor", type=options.REPLICATION_FACTOR, required=True,
                   help="replicas per partition")
    p.add_argument("--start-index", type=options.int32("a start index"), default=-1,
                   help="index of the first partition's leader in the (rack-alternated) broker list; "
                        "negative: random (default)")
    p.add_argument("--start-partition", type=options.int32("a partition id"), default=-1,
                   help="id of the first partition to place (default 0), e.g. when adding partitions")
    p.add_argument("--seed", type=int, help="seed for the random start index")
    p.add_argument("--json", action="store_true", help='print {"partition": [replicas...], ...}')
    p.set_defaults(func=_assign)


def _assign(args: argparse.Namespace) -> int:
    from metalog.controller.placement import assign_replicas_to_brokers, parse_brokers, rack_alternated_broker_list
    from metalog.errors import MetalogError

    try:
        brokers = parse_brokers(args.brokers)
    except ValueError as e:
        raise MetalogError(f"--brokers: {e}") from None
    rng = random.Random(args.seed) if args.seed is not None else None
    assignment = assign_replicas_to_brokers(brokers, args.partitions, args.replication_factor,
                                            args.start_index, args.start_partition, rng)
    if args.json:
        print(json.dumps({str(p): r for p, r in assignment.items()}))
        return 0
    racks = {b.id: b.rack for b in brokers}
    if all(r is not None for r in racks.values()):
        order = rack_alternated_broker_list({i: r for i, r in racks.items() if r is not None})
        print(f"rack-alternated broker list: {', '.join(map(str, order))}")
    else:
        print(f"rack-unaware, broker order: {', '.join(str(b.id) for b in brokers)}")
    print(render_assignment(assignment, racks))
    return 0


def render_assignment(assignment: dict[int, list[int]], racks: dict[int, str | None]) -> str:
    rows = [("PARTITION", "LEADER", "REPLICAS", "RACKS")]
    for pid, replicas in assignment.items():
        rack_names = ",".join(racks[b] or "-" for b in replicas)
        rows.append((str(pid), str(replicas[0]), ",".join(map(str, replicas)), rack_names))
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    leaders: dict[int, int] = {}
    counts: dict[int, int] = {}
    for replicas in assignment.values():
        leaders[replicas[0]] = leaders.get(replicas[0], 0) + 1
        for b in replicas:
            counts[b] = counts.get(b, 0) + 1
    lines.append("")
    lines.append("per broker: " + ", ".join(f"{b}: {counts.get(b, 0)} replicas/{leaders.get(b, 0)} leaders"
                                            for b in sorted(racks)))
    return "\n".join(lines)
