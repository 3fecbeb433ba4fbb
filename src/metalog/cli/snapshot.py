"""``metalog snapshot``: list and verify Kafka's ``.checkpoint`` snapshot files.

``create`` is pending: a real snapshot holds the state image's records, which needs the state
model; the writer itself (``metalog.snapshots.SnapshotWriter``) is ready for it.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from metalog.errors import MetalogError

EXAMPLES = """\
examples:
  metalog snapshot list /var/lib/kafka/metadata
  metalog snapshot list --json /var/lib/kafka/metadata/__cluster_metadata-0
  metalog snapshot verify 00000000000000000025-0000000001.checkpoint && echo complete

'snapshot create' (write a snapshot of the state at an offset) is not available yet: it needs the
state model's image records.
"""


def register(sub: Any) -> None:
    fmt = argparse.RawDescriptionHelpFormatter
    p = sub.add_parser("snapshot", help="list and verify KRaft snapshots (.checkpoint files)",
                       description="Kafka's snapshot files: <end offset>-<epoch>.checkpoint.",
                       epilog=EXAMPLES, formatter_class=fmt)
    verbs = p.add_subparsers(dest="snapshot_verb", metavar="COMMAND", required=True)
    lst = verbs.add_parser("list", help="the snapshots of a log directory, with their header facts",
                           epilog=EXAMPLES, formatter_class=fmt)
    lst.add_argument("paths", nargs="+", metavar="PATH", help="a log directory, a partition directory or files")
    lst.add_argument("--json", action="store_true", help="one JSON object per snapshot")
    lst.set_defaults(func=_list)
    ver = verbs.add_parser("verify", help="read every batch; check CRCs, offsets, header and footer",
                           epilog=EXAMPLES, formatter_class=fmt)
    ver.add_argument("paths", nargs="+", metavar="PATH")
    ver.set_defaults(func=_verify)


def _snapshot_files(path: Path) -> list[Path]:
    from metalog.log.files import METADATA_PARTITION_DIR
    from metalog.snapshots.files import list_snapshots

    if not path.is_dir():
        if not path.exists():
            raise FileNotFoundError(2, "No such file or directory", str(path))
        return [path]
    if (path / METADATA_PARTITION_DIR).is_dir():
        path = path / METADATA_PARTITION_DIR
    return [path / sid.file_name for sid in list_snapshots(path)]


def _list(args: argparse.Namespace) -> int:
    from metalog.snapshots import SnapshotReader

    failed = 0
    rows = []
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
            "lastContainedLogTimestamp": s.header.last_contained_log_timestamp,
        })
    if args.json:
        for row in rows:
            print(json.dumps(row))
    else:
        print(f"{'END OFFSET':>12} {'EPOCH':>6} {'BYTES':>10} {'RECORDS':>8} {'KRAFT':>5}  FILE")
        for r in rows:
            if "error" in r:
                print(f"{'-':>12} {'-':>6} {'-':>10} {'-':>8} {'-':>5}  {r['file']}  ERROR: {r['error']}")
            else:
                print(f"{r['endOffset']:>12} {r['epoch']:>6} {r['sizeInBytes']:>10} {r['records']:>8} "
                      f"{r['kraftVersion']:>5}  {r['file']}")
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
            print(f"{path}: ok ({s.batches} batches, {s.records} records, kraft.version {s.kraft_version}, "
                  f"lastContainedLogTimestamp {s.header.last_contained_log_timestamp})")
        except MetalogError as e:
            failed += 1
            print(f"{path}: FAILED: {e}")
    return 1 if failed else 0
