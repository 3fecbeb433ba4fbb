"""``metalog simulate``: a KIP-858 story played by a controller and brokers over real directories."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

EXAMPLES = """\
examples:
  metalog simulate /tmp/story            # then: metalog replay /tmp/story/controller
  metalog simulate /tmp/story --seed 3 --partitions 12
"""


def register(sub: Any) -> None:
    from metalog.cli import options

    p = sub.add_parser("simulate", help="play a KIP-858 story: brokers with several log dirs, a failed disk",
                       description="Three brokers format their log directories (3, 2 and 1 dirs) and register; a "
                                   "topic is created with KIP-36 placement; each broker reconciles its "
                                   "directories with the metadata and reports them with AssignReplicasToDirs; "
                                   "then broker 1's first disk fails. The controller's metadata log is written "
                                   "to OUTDIR/controller, the brokers' log dirs to OUTDIR/broker<N>/d<i>.",
                       epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("outdir", help="an empty or new directory")
    p.add_argument("--seed", type=int, default=1, help="the placement's start index comes from it")
    p.add_argument("--partitions", type=options.positive_int32("a partition count"), default=6,
                   help="partitions of the topic foo (default 6)")
    p.set_defaults(func=_simulate)


def _simulate(args: argparse.Namespace) -> int:
    from metalog.cli.replay import _ids
    from metalog.errors import MetalogError
    from metalog.replay.diff import table
    from metalog.storage.simulation import Simulation
    from metalog.text import path_text

    out = Path(args.outdir)
    if out.exists() and any(out.iterdir()):
        raise MetalogError(f"{out} is not empty; choose a new directory")
    sim = Simulation(out, seed=args.seed)
    try:
        for broker_id, n_dirs, rack in ((1, 3, "rack-a"), (2, 2, "rack-b"), (3, 1, "rack-c")):
            sim.add_broker(broker_id, n_dirs, rack)
        print("1. brokers 1, 2, 3 formatted 3, 2 and 1 log dirs and registered (fenced)")
        sim.settle(1)
        print("2. heartbeats: every broker caught up and unfenced")
        sim.controller.create_topic("foo", args.partitions, 3)
        print(f"3. topic foo created with {args.partitions} partitions (KIP-36 placement); brokers with several "
              "dirs get UNASSIGNED replicas")
        reports = {b: sim.reconcile(b) for b in sorted(sim.brokers)}
        print(f"4. each broker placed its replicas and reported them: {reports}")
        print(_partitions(sim, _ids, table))
        sim.fail_dir(1, 0)
        print("5. broker 1's first log dir failed: leadership and ISR move away from its replicas there")
        print(_partitions(sim, _ids, table))
        root = path_text(sim.log.root)
        print(f"the controller's metadata log: {root} (offsets 0..{sim.log.log_end_offset - 1})\n"
              f"   metalog replay {root} --partitions\n   metalog diff {root} --from start --to end")
    finally:
        sim.close()
    return 0


def _partitions(sim: Any, ids: Any, table: Any) -> str:
    image = sim.controller.image
    names = {d.id: f"b{b.id}/{d.path.name}" for b in sim.brokers.values() for d in b.dirs()}
    rows = [("PARTITION", "LEADER", "ISR", "OFFLINE", "DIRECTORIES")]
    for pid, p in sorted(image.topic("foo").partitions.items()):
        offline = image.offline_replicas(p)
        rows.append((f"foo-{pid}", str(p.leader), ids(p.isr), ids(offline) if offline else "-",
                     ",".join(names.get(d, str(d)[:8]) for d in p.directories)))
    return "\n".join("   " + line for line in table(rows))
