"""``metalog history``: every committed change to a topic, a partition, a broker, a config or the quorum."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from metalog.errors import MetalogError
from metalog.text import escape, path_text

EXAMPLES = """\
examples:
  metalog history LOGDIR --topic orders                    # created, deleted, partitions, configs
  metalog history LOGDIR --topic orders --partition 3      # one partition's leader, ISR, ELR, replicas, dirs
  metalog history LOGDIR --broker 3                        # registration, fencing, shutdown, dirs, and every
                                                           # replica, ISR, ELR, leader or directory of broker 3
  metalog history LOGDIR --config TOPIC/orders             # also BROKER/1, BROKER/ (the cluster default)
  metalog history LOGDIR --controller                      # the quorum's leader changes, controller registrations
  metalog history LOGDIR --features                        # metadata.version, the ZK migration state, features
  metalog history LOGDIR --broker 3 --from 2024-05-01T10:00:00Z --to 2024-05-01T11:00:00Z --json | jq .
  metalog history LOGDIR --topic orders --from 1000 --to 2000     # changes published at offsets 1000 to 2000
  metalog history 00000000000000005001-0000000003.checkpoint --topic orders   # what one snapshot holds of it

Each change is reported at the point where Kafka's loader published it: the end of the batch that holds its
record (or just before a BeginTransactionRecord in it), or, inside a metadata transaction, the end of the batch
that commits it. An aborted transaction changes nothing, and no state inside a batch is shown. RECORD names the
records that made the change (type@offset). A change of a whole thing (a topic, a partition or a broker that
appears or goes) is one row; otherwise one row per field, before -> after ("-": absent).

--from and --to take a POINT: %s. Both ends are included: a time
--from starts at the first batch whose timestamp is at or after it, a time --to ends with the last batch whose
timestamp is at or before it.
"""


def register(sub: Any) -> None:
    from metalog.cli import options
    from metalog.replay.points import END, POINT_FORMS, START

    p = sub.add_parser("history", help="every committed change to a topic, partition, broker, config or the quorum",
                       description="List, in log order, the committed changes to one thing, each at the offset "
                                   "where Kafka's loader published it, with the records that made it.",
                       epilog=EXAMPLES % POINT_FORMS, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("logdir", metavar="LOGDIR", help="a log directory (holding __cluster_metadata-0), or one "
                                                     ".checkpoint snapshot file (its state)")
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--topic", metavar="NAME", help="a topic by name (its id may change: deleted, created again)")
    what.add_argument("--broker", type=options.BROKER_ID, metavar="ID",
                      help="a broker, and its part in every partition")
    what.add_argument("--config", metavar="RESOURCE", help="a config resource: TOPIC/name, BROKER/id, BROKER/, ...")
    what.add_argument("--controller", action="store_true", help="the quorum's leaders and controller registrations")
    what.add_argument("--features", action="store_true", help="metadata.version, the ZK migration state, features")
    p.add_argument("--partition", type=options.PARTITION_ID, metavar="P", help="with --topic: that partition only")
    p.add_argument("--from", dest="from_", type=options.point, default=START, metavar="POINT",
                   help=f"changes published at or after this point: {options.POINT_HELP} (default: start)")
    p.add_argument("--to", type=options.point, default=END, metavar="POINT",
                   help="changes published at or before this point (default: end)")
    p.add_argument("--json", action="store_true", help="one JSON object per change instead of a table")
    options.show_secrets(p)
    p.set_defaults(func=_history)


def subject_of(args: argparse.Namespace) -> Any:
    from metalog.cli.options import secrets_of
    from metalog.replay import subjects as S

    if args.partition is not None and args.topic is None:
        raise MetalogError("--partition needs --topic")
    if args.topic is not None:
        return S.TopicSubject(args.topic, partition=args.partition, secrets=secrets_of(args))
    if args.broker is not None:
        return S.BrokerSubject(args.broker)
    if args.config is not None:
        return S.ConfigSubject(*S.parse_resource(args.config), secrets=secrets_of(args))
    if args.controller:
        return S.ControllerSubject()
    return S.FeaturesSubject()


def _history(args: argparse.Namespace) -> int:
    from metalog.replay.changes import changes, offset_range, render
    from metalog.replay.history import MetadataHistory

    subject = subject_of(args)
    first, last = args.from_, args.to
    if first.kind == last.kind and first.value is not None and last.value is not None and first.value > last.value:
        raise MetalogError(f"--from {first} is after --to {last}")
    with MetadataHistory(args.logdir) as history:
        span = offset_range(history, first, last)
        found = [] if span is None else changes(history, subject, *span)
        count = 0
        if args.json:
            for change in found:
                sys.stdout.write(json.dumps(change.to_json(), separators=(",", ":")) + "\n")
                count += 1
        else:
            rows = list(found)
            count = len(rows)
            if rows:
                print("\n".join(render(rows)))
        never = span is not None and not count and _never_there(history, subject, span[0])
        single = _snapshot_line(history)
    if single is not None:
        print(single, file=sys.stderr)
    if span is None:
        where = "the snapshot's state is not" if single is not None else "no batch of the log lies"
        print(f"{where} between --from {first} and --to {last}", file=sys.stderr)
    elif never:
        print(f"{escape(_named(args))} never existed in offsets {span[0]}..{span[1]}: no published state there "
              "holds it", file=sys.stderr)
    elif not count:
        print(f"no committed change in offsets {span[0]}..{span[1]}", file=sys.stderr)
    return 0


def _snapshot_line(history: Any) -> str | None:
    """For a single snapshot file: what its history is (None for a log)."""
    from metalog.replay.points import format_time

    if history.snapshot is None:
        return None
    return (f"{path_text(history.log.snapshot_file)} is one snapshot: it keeps no history, only its state at offset "
            f"{history.end_offset} ({format_time(history.snapshot.last_contained_log_timestamp)}), each entity "
            "in it shown as created there")


def _never_there(history: Any, subject: Any, first: int) -> bool:
    """With no change in a range: whether the subject was absent from the state published before it, and so from
    every state published in it (a topic, broker or config the log never held there, or a name mistyped)."""
    from metalog.replay.changes import state_before
    from metalog.replay.subjects import ALL

    return not subject.view(state_before(history, first), [ALL])


def _named(args: argparse.Namespace) -> str:
    """The subject asked about, as a person names it."""
    if args.topic is not None:
        return f"topic {args.topic}" + ("" if args.partition is None else f" partition {args.partition}")
    if args.broker is not None:
        return f"broker {args.broker}"
    if args.config is not None:
        return f"config resource {args.config}"
    return "the controllers" if args.controller else "the features"
