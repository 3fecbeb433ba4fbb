"""``metalog replay`` and ``metalog diff``: the state of a metadata log at a point in time, and what changed."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from metalog.cli.progress import Progress
from metalog.errors import MetalogError
from metalog.secrets import KEPT, Secrets

if TYPE_CHECKING:
    from metalog.replay.history import MetadataHistory
    from metalog.replay.points import Point, ReplayResult
    from metalog.state.image import MetadataImage

REPLAY_EXAMPLES = """\
examples:
  metalog replay /var/lib/kafka/metadata                   # the state at the end of the log
  metalog replay LOGDIR --at 1200 --format json            # the state published at or before offset 1200
  metalog replay LOGDIR --at 2024-05-01T10:32:00Z          # as it was at 10:32 UTC
  metalog replay LOGDIR --at 1714559520000ms --partitions  # a time in epoch milliseconds; every partition
  metalog replay LOGDIR --at 5000 --save-image             # and keep a state image for faster replays
  metalog replay 00000000000000005001-0000000003.checkpoint   # one snapshot's state (at offset 5000)

The state shown is one Kafka's loader published: at the end of a batch (none while a metadata transaction
is open), or just before a BeginTransactionRecord inside a batch. An offset inside a batch or inside an open
transaction shows the state published last before it, and one line says so. A TIME means the end of the
last batch whose timestamp is at or before it. A POINT is
  %s;
start, the empty state before the log, is no state Kafka's loader published.
A single .checkpoint file is the state Kafka's loader publishes from it: at its end offset - 1, at the time its
header names; it is read whole first (every check snapshot verify makes).
"""

DIFF_EXAMPLES = """\
examples:
  metalog diff LOGDIR --from 100 --to 2000                     # offsets
  metalog diff LOGDIR --from 2024-05-01T10:30:00Z --to 2024-05-01T10:45:00Z
  metalog diff LOGDIR --from 1714559400000ms --to end --json   # a plain integer is an offset: "ms" makes a time
  metalog diff LOGDIR --from start --to 5000                   # everything up to offset 5000
  metalog diff prod/metadata staging/metadata                  # two clusters, each at its end
  metalog diff prod/metadata staging/metadata --from 2024-05-01T10:30:00Z --json   # prod as it was then
  metalog diff backup/00000000000000005001-0000000003.checkpoint prod/metadata       # a snapshot against now

A POINT is
  %s;
start is the empty state before the log. Each point compares the state Kafka's loader published last at or
before it; a line says which one when it is not the point itself.

Two logs are two clusters: the first at --from, the second at --to (each by default its end), compared by
name, since two clusters share no ids. The exit status is 0 whether they differ or not (an error is 1); --json's
"identical" says which.
"""


def register(sub: Any) -> None:
    from metalog.cli import options
    from metalog.replay.points import END, POINT_FORMS

    p = sub.add_parser("replay", help="the state of a metadata log at an offset or time",
                       description="Rebuild the controller state Kafka's loader published, from the nearest "
                                   "snapshot or state image before the target plus the tail of the log.",
                       epilog=REPLAY_EXAMPLES % POINT_FORMS, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("logdir", help="a log directory (holding __cluster_metadata-0), the partition directory, or one "
                                  ".checkpoint snapshot file (its state)")
    p.add_argument("--at", type=options.point, default=END, metavar="POINT",
                   help=f"the state published last at or before this point: {options.STATE_HELP} (default: end)")
    p.add_argument("--format", choices=["table", "json"], default="table",
                   help="a table of brokers, topics, unhealthy partitions and configs (default), or the whole "
                        "image as JSON in the shape of Kafka's own replay")
    p.add_argument("--partitions", action="store_true", help="list every partition in the table")
    p.add_argument("--no-snapshots", action="store_true", help="replay from offset 0, ignoring snapshots/images")
    p.add_argument("--save-image", action="store_true",
                   help="write a state image of the result beside the log (when it was published at a batch end)")
    options.show_secrets(p)
    p.set_defaults(func=_replay)

    d = sub.add_parser("diff", help="what changed between two points of a metadata log, or differs between two",
                       description="One log: brokers registered, fenced or restarted, log directories lost, topics "
                                   "created and removed, partitions whose leader, ISR, replicas or directories "
                                   "changed, configs. Two logs (two clusters): topics, partition counts and "
                                   "replication factors, configs, ACLs, client quotas, SCRAM users and features "
                                   "that differ, by name.",
                       epilog=DIFF_EXAMPLES % POINT_FORMS, formatter_class=argparse.RawDescriptionHelpFormatter)
    d.add_argument("logdir", help="a log directory (holding __cluster_metadata-0), the partition directory, or one "
                                  ".checkpoint snapshot file (its state)")
    d.add_argument("other", nargs="?", metavar="OTHER_LOGDIR",
                   help="another cluster's log directory (or .checkpoint file): compare the two clusters by name")
    d.add_argument("--from", dest="from_", type=options.point, metavar="POINT",
                   help=f"the state before: {options.POINT_HELP} (start: the empty state before the log); with "
                        "two logs, the first log's point (default: end)")
    d.add_argument("--to", type=options.point, metavar="POINT",
                   help=f"the state after: {options.POINT_HELP}; with two logs, the second log's point "
                        "(default: end)")
    d.add_argument("--json", action="store_true", help="print the diff as JSON")
    options.show_secrets(d)
    d.set_defaults(func=_diff)


def _replay(args: argparse.Namespace) -> int:
    from metalog.cli.options import resolving, secrets_of
    from metalog.errors import PointError
    from metalog.replay.history import MetadataHistory
    from metalog.state.jsonimage import image_to_json

    with MetadataHistory(args.logdir) as history, Progress("replaying") as bar:
        with resolving("--at"):
            result = history.state_at_point(args.at, use_snapshots=not args.no_snapshots, progress=bar.update)
        if args.save_image:
            try:
                print(f"state image written: {history.save_image(result)}", file=sys.stderr)
            except PointError as e:
                print(f"warning: no state image written: {e}", file=sys.stderr)
    if args.format == "json":
        if (note := result.note()) is not None:
            print(note, file=sys.stderr)
        print(json.dumps(image_to_json(result.image, secrets_of(args)), indent=2))
    else:
        print(render_state(result, all_partitions=args.partitions, secrets=secrets_of(args)))
    return 0


def _state(history: MetadataHistory, point: Point, option: str) -> ReplayResult | None:
    """The published state a diff point names (None: start, the empty state before the log)."""
    from metalog.cli.options import resolving

    if point.kind == "start":
        return None
    with resolving(option):
        return history.state_at_point(point)


def _diff(args: argparse.Namespace) -> int:
    from metalog.cli.options import secrets_of
    from metalog.replay.diff import diff_images, render_diff
    from metalog.replay.history import MetadataHistory
    from metalog.state.image import EMPTY

    if args.other is not None:
        return _compare(args)
    missing = [option for option, point in (("--from", args.from_), ("--to", args.to)) if point is None]
    if missing:
        raise MetalogError(f"{' and '.join(missing)} needed: the two points of the log to compare (or give two "
                           "log directories, to compare two clusters)")
    with MetadataHistory(args.logdir) as history:
        a, b = _state(history, args.from_, "--from"), _state(history, args.to, "--to")
    asked = [-1 if r is None else r.requested for r in (a, b)]
    if asked[0] > asked[1]:
        raise MetalogError(f"--from {args.from_} (offset {asked[0]}) is after --to {args.to} (offset {asked[1]})")
    for option, point, r in (("--from", args.from_, a), ("--to", args.to, b)):
        if r is not None and (note := r.note("the state compared is the one published at")) is not None:
            print(f"{option} {point}: {note}", file=sys.stderr)
    d = diff_images(EMPTY if a is None else a.image, EMPTY if b is None else b.image, secrets_of(args))
    print(json.dumps(d.to_json(), indent=2) if args.json else render_diff(d))
    return 0


def _compare(args: argparse.Namespace) -> int:
    """``metalog diff A B``: two clusters, A at --from and B at --to (each by default its end), by name."""
    from metalog.cli.options import secrets_of
    from metalog.replay.compare import compare_images, render_compare
    from metalog.replay.history import MetadataHistory
    from metalog.replay.points import END
    from metalog.state.image import EMPTY
    from metalog.text import path_text

    images = []
    for logdir, option, point in ((args.logdir, "--from", args.from_), (args.other, "--to", args.to)):
        with MetadataHistory(logdir) as history:
            r = _state(history, END if point is None else point, option)
        if r is not None and (note := r.note("the state compared is the one published at")) is not None:
            print(f"{option} {point}: {note}", file=sys.stderr)
        images.append(EMPTY if r is None else r.image)
    d = compare_images(images[0], images[1], secrets_of(args))
    if args.json:
        print(json.dumps(d.to_json(), indent=2))
    else:
        print("\n".join(render_compare(d, path_text(args.logdir), path_text(args.other))))
    return 0


def render_state(result: ReplayResult, *, all_partitions: bool = False, secrets: Secrets = KEPT) -> str:
    from metalog.replay.diff import table
    from metalog.replay.points import format_time
    from metalog.state.enums import CONFIG_RESOURCE_TYPES, ZK_MIGRATION_STATES, metadata_version_name
    from metalog.text import escape

    img = result.image
    f = img.features
    start = result.start
    lines = [
        f"offset {result.offset} at {format_time(result.timestamp)}"
        f" (from {start.kind}{'' if start.kind == 'empty' else f' at offset {start.offset}'},"
        f" {result.records_replayed:,} data records replayed)",
        f"metadata.version {metadata_version_name(f.metadata_version) or '-'}"
        f"   ZK migration {ZK_MIGRATION_STATES.get(f.zk_migration_state, f.zk_migration_state)}"
        + (f"   features {', '.join(f'{escape(k)}={v}' for k, v in sorted(f.finalized.items()))}"
           if f.finalized else ""),
    ]
    if (note := result.note()) is not None:
        lines.insert(1, note)
    rows = [("BROKER", "EPOCH", "RACK", "STATE", "LOG DIRS")]
    for bid in sorted(img.brokers):
        b = img.brokers[bid]
        state = "fenced" if b.fenced else "unfenced"
        if b.in_controlled_shutdown:
            state += ", shutting down"
        if b.is_migrating_zk_broker:
            state += ", zk"
        rows.append((str(bid), str(b.epoch), b.rack or "-", state, ", ".join(map(str, b.directories)) or "-"))
    lines += ["", f"brokers: {len(img.brokers)}"] + table(rows)
    lines += ["", f"topics: {len(img.topics)}"] + _topics(img, all_partitions)
    if img.configs:
        config_rows = [("RESOURCE", "KEY", "VALUE")]
        for (rt, name), cfg in sorted(img.configs.items()):
            config_rows += [(f"{CONFIG_RESOURCE_TYPES.get(rt, rt)}/{name}", k, str(secrets.config(k, v)))
                            for k, v in sorted(cfg.items())]
        lines += ["", f"configs: {len(config_rows) - 1}"] + table(config_rows)
    return "\n".join(lines)


def _topics(img: MetadataImage, all_partitions: bool) -> list[str]:
    from metalog.codec.uuid import LOST, MIGRATING, UNASSIGNED
    from metalog.replay.diff import table

    names = {MIGRATING: "MIGRATING", UNASSIGNED: "UNASSIGNED", LOST: "LOST"}
    rows = [("TOPIC", "PARTITIONS", "OFFLINE REPLICAS", "NO LEADER", "UNDER-REPLICATED")]
    part_rows = [("PARTITION", "LEADER", "EPOCH", "REPLICAS", "ISR", "OFFLINE", "DIRECTORIES")]
    for name, t in sorted(img.topics_by_name.items()):
        offline = leaderless = under = 0
        for pid in sorted(t.partitions):
            p = t.partitions[pid]
            off = img.offline_replicas(p)
            offline += len(off)
            leaderless += p.leader < 0
            under += len(p.isr) < len(p.replicas)
            if all_partitions or off or p.leader < 0:
                dirs = ",".join(names.get(d, str(d)[:8]) for d in p.directories)
                part_rows.append((f"{name}-{pid}", str(p.leader), str(p.leader_epoch), _ids(p.replicas), _ids(p.isr),
                                  _ids(off) if off else "-", dirs))
        rows.append((name, str(len(t.partitions)), str(offline), str(leaderless), str(under)))
    out = table(rows) if len(rows) > 1 else []
    if len(part_rows) > 1:
        out += ["", "partitions" + ("" if all_partitions else " with offline replicas or no leader") + ":"]
        out += table(part_rows)
    return out


def _ids(ids: Iterable[int]) -> str:
    return "[" + ",".join(map(str, ids)) + "]"
