"""``metalog snapshot``: list, verify and create Kafka's ``.checkpoint`` snapshots, and state images."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from metalog.errors import MetalogError
from metalog.text import escape, path_text

LIST_EXAMPLES = """\
  metalog snapshot list /var/lib/kafka/metadata
  metalog snapshot list --json /var/lib/kafka/metadata/__cluster_metadata-0
"""
VERIFY_EXAMPLES = """\
  metalog snapshot verify 00000000000000000025-0000000001.checkpoint && echo complete
  metalog snapshot verify /var/lib/kafka/metadata                   # every snapshot of the log
"""
CREATE_EXAMPLES = """\
  metalog snapshot create /var/lib/kafka/metadata --at 5000         # Kafka's format, Kafka's bytes
  metalog snapshot create LOGDIR --at 2024-05-01T10:32:00Z          # the state at the end of a batch by then
  metalog snapshot create LOGDIR --timestamp 2024-05-01T12:00:00Z   # its batches' timestamps (default: now)
"""
IMAGES_EXAMPLES = """\
  metalog snapshot images /var/lib/kafka/metadata --every 50000     # metalog state images, for fast replays
"""
EXAMPLES = "examples:\n" + LIST_EXAMPLES + VERIFY_EXAMPLES + CREATE_EXAMPLES + IMAGES_EXAMPLES


def register(sub: Any) -> None:
    from metalog.cli import options
    from metalog.replay.points import END, POINT_FORMS, TIME_FORMS

    fmt = argparse.RawDescriptionHelpFormatter
    p = sub.add_parser("snapshot", help="list and verify KRaft snapshots (.checkpoint files)",
                       description="Kafka's snapshot files: <end offset>-<epoch>.checkpoint.",
                       epilog=EXAMPLES, formatter_class=fmt)
    verbs = p.add_subparsers(dest="snapshot_verb", metavar="COMMAND", required=True)
    lst = verbs.add_parser("list", help="the snapshots of a log directory, with their header facts",
                           epilog="examples:\n" + LIST_EXAMPLES, formatter_class=fmt)
    lst.add_argument("paths", nargs="+", metavar="PATH", help="a log directory, a partition directory or files")
    lst.add_argument("--json", action="store_true", help="one JSON object per snapshot")
    lst.set_defaults(func=_list)
    ver = verbs.add_parser("verify", help="read every batch; check CRCs, offsets, header and footer",
                           epilog="examples:\n" + VERIFY_EXAMPLES, formatter_class=fmt)
    ver.add_argument("paths", nargs="+", metavar="PATH",
                     help="a .checkpoint file, or a log or partition directory (its snapshots)")
    ver.set_defaults(func=_verify)
    cre = verbs.add_parser("create", help="write a Kafka snapshot of the state at a point",
                           description="Replays the log to the point and writes <end offset>-<epoch>.checkpoint "
                                       "into __cluster_metadata-0 exactly as Kafka's RecordsSnapshotWriter does: "
                                       "header, the state as metadata records, footer. A snapshot ends at the end "
                                       "of a batch with no transaction open, so Kafka reads whole batches after "
                                       "it: an offset inside a batch or a transaction rounds down to the last such "
                                       "state before it, and a line says so.",
                           epilog=f"examples:\n{CREATE_EXAMPLES}\nA POINT is {POINT_FORMS}.\nA TIME is {TIME_FORMS}.\n",
                           formatter_class=fmt)
    cre.add_argument("logdir", metavar="LOGDIR", help="a log directory (holding __cluster_metadata-0)")
    cre.add_argument("--at", type=options.point, default=END, metavar="POINT",
                     help="the snapshot holds the state published at the last batch end at or before this point: "
                          f"{options.STATE_HELP} (default: end)")
    cre.add_argument("--kraft-version", type=int, choices=[0, 1], default=0,
                     help="1 also writes KRaftVersionRecord and the VotersRecord found in the log")
    cre.add_argument("--timestamp", metavar="TIME", help="the snapshot's batch timestamps (default: now)")
    cre.set_defaults(func=_create)
    img = verbs.add_parser("images", help="write metalog state images every N offsets (one pass over the log)",
                           description="State images (msgpack, checksummed) load much faster than replaying; "
                                       "metalog replay and diff start from the nearest one. They live in "
                                       "LOGDIR/metalog-images, where Kafka never looks.",
                           epilog="examples:\n" + IMAGES_EXAMPLES, formatter_class=fmt)
    img.add_argument("logdir", metavar="LOGDIR", help="a log directory (holding __cluster_metadata-0)")
    img.add_argument("--every", type=options.positive_int64("an interval of offsets"), default=50_000, metavar="N",
                     help="offsets between images")
    img.set_defaults(func=_images)


def _snapshot_files(path: Path) -> list[Path]:
    from metalog.log.files import METADATA_PARTITION_DIR
    from metalog.log.snapshot_files import list_snapshots

    if not path.is_dir():
        if not path.exists():
            raise FileNotFoundError(2, "No such file or directory", str(path))
        return [path]
    if (path / METADATA_PARTITION_DIR).is_dir():
        path = path / METADATA_PARTITION_DIR
    found = [path / sid.file_name for sid in list_snapshots(path)]
    if not found and path.name != METADATA_PARTITION_DIR:  # a log without snapshots lists none; this is no log
        raise MetalogError(f"{path}: no .checkpoint files and no {METADATA_PARTITION_DIR} directory here: not a "
                           "KRaft metadata log directory")
    return found


def _list(args: argparse.Namespace) -> int:
    from metalog.snapshots import SnapshotReader

    failed = 0
    rows: list[dict[str, object]] = []
    for path in (f for p in args.paths for f in _snapshot_files(Path(p))):
        try:
            s = SnapshotReader(path).verify()
        except MetalogError as e:
            failed += 1
            rows.append({"file": str(path), "error": str(e)})
            continue
        rows.append({
            "file": str(path), "endOffset": s.snapshot_id.end_offset if s.snapshot_id else None,
            "epoch": s.snapshot_id.epoch if s.snapshot_id else None, "sizeInBytes": s.size_in_bytes,
            "batches": s.batches, "records": s.records, "kraftVersion": s.kraft_version,
            "lastContainedLogTimestamp": s.last_contained_log_timestamp,
        })
    if args.json:
        for row in rows:
            print(json.dumps(row))
    else:
        print(f"{'END OFFSET':>12} {'EPOCH':>6} {'BYTES':>10} {'DATA RECORDS':>12} {'KRAFT':>5}  FILE")
        for r in rows:
            if "error" in r:
                print(f"{'-':>12} {'-':>6} {'-':>10} {'-':>12} {'-':>5}  {escape(str(r['file']))}  "
                      f"ERROR: {escape(str(r['error']))}")
            else:
                print(f"{r['endOffset']:>12} {r['epoch']:>6} {r['sizeInBytes']:>10} {r['records']:>12} "
                      f"{r['kraftVersion']:>5}  {escape(str(r['file']))}")
    return 1 if failed else 0


def _verify(args: argparse.Namespace) -> int:
    from metalog.snapshots import SnapshotReader

    failed = 0
    files = [f for p in args.paths for f in _snapshot_files(Path(p))]
    if not files:
        raise MetalogError("no snapshots found")
    for path in files:
        try:
            s = SnapshotReader(path).verify()
            print(f"{path_text(path)}: ok ({s.batches} batches, {s.records} data records, {s.control_records} control "
                  f"records, kraft.version {s.kraft_version}, "
                  f"lastContainedLogTimestamp {s.last_contained_log_timestamp})")
        except MetalogError as e:
            failed += 1
            print(f"{path_text(path)}: FAILED: {escape(str(e))}")
    return 1 if failed else 0


def _create(args: argparse.Namespace) -> int:
    from metalog.cli import options
    from metalog.cli.options import resolving
    from metalog.replay.history import MetadataHistory
    from metalog.replay.points import parse_time
    from metalog.snapshots import SnapshotHeader, SnapshotId, SnapshotWriter
    from metalog.state.records import image_records, lost_in_image

    options.log_directory(args.logdir, "snapshot create")
    time_ms = None if args.timestamp is None else parse_time(args.timestamp)
    with MetadataHistory(args.logdir) as history:
        with resolving("--at"):
            result = history.batch_end_state(history.offset_of(args.at))
        image = result.image
        if image.offset < 0:
            raise MetalogError("nothing to snapshot: Kafka's loader published no state at or before that offset")
        log = history.log
        batch = next(log.batches(image.offset))
        epoch = log.epochs.epoch_for(image.offset) or batch.partition_leader_epoch
        voters = _voters_through(log, image.offset) if args.kraft_version == 1 else None
        for loss in lost_in_image(image):
            print(f"warning: metadata.version cannot carry {loss}; it is left out", file=sys.stderr)
        header = SnapshotHeader(last_contained_log_timestamp=batch.max_timestamp, kraft_version=args.kraft_version,
                                voters=voters)
        with SnapshotWriter(log.directory, SnapshotId(image.offset + 1, epoch), header, time_ms=time_ms) as writer:
            writer.append(image_records(image))
            path = writer.freeze()
    if (note := result.note("the snapshot holds the state through")) is not None:
        print(note, file=sys.stderr)
    print(f"{path_text(path)}: the state through offset {image.offset}")
    return 0



def _voters_through(log: Any, offset: int) -> Any:
    """The voter set the last VotersRecord at or before ``offset`` holds (a kraft.version 1 snapshot's)."""
    from metalog.log.control import ControlType, decode_control

    voters = None
    for b in log.batches(0):
        if b.base_offset > offset:
            break
        if b.is_control:
            for rec in b.records():
                control = decode_control(rec.key, rec.value)
                if control.type == ControlType.KRAFT_VOTERS:
                    voters = control.message
    if voters is None:
        raise MetalogError("--kraft-version 1 needs a VotersRecord in the log; none was found")
    return voters


def _images(args: argparse.Namespace) -> int:
    from metalog.cli.progress import Progress
    from metalog.replay.history import MetadataHistory

    with MetadataHistory(args.logdir) as history, Progress("writing images") as bar:
        paths = history.write_images(args.every, progress=bar.update)
    for path in paths:
        print(path_text(path))
    print(f"{len(paths)} state image(s) written", file=sys.stderr)
    return 0
