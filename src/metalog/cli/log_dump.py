"""``metalog log dump``: segments, snapshots, ``.index`` and ``.timeindex`` files, as kafka-dump-log prints them,
filtered by record type, offset and time."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from metalog.errors import CorruptBatchError, MetalogError
from metalog.text import escape, path_text

if TYPE_CHECKING:
    from metalog.replay.points import Point

DUMP_EXAMPLES = """\
examples:
  metalog log dump /var/lib/kafka/metadata                  # every segment and snapshot, as kafka-dump-log
  metalog log dump --files 00000000000000000000.log,00000000000000000000.index     # kafka-dump-log's spelling
  metalog log dump --type PARTITION_CHANGE_RECORD --type TopicRecord LOGDIR        # Kafka's or metalog's names
  metalog log dump --type LEADER_CHANGE LOGDIR                                     # control records too
  metalog log dump --from 1000 --to 2000 --skip-record-metadata LOGDIR                # offsets 1000 to 2000
  metalog log dump --from 2024-05-01T10:30:00Z --to 2024-05-01T10:45:00Z LOGDIR      # record timestamps
  metalog log dump --max-bytes 1048576 00000000000000000000.log                    # the first MiB only
  metalog log dump --json __cluster_metadata-0/00000000000000000000.log | jq .records[].payload.type
  metalog log dump 00000000000000000000.timeindex           # entries, then what disagrees with the segment

A directory means its .log segments and .checkpoint snapshots. A filter shows the records that match all the
filters given, each batch with a matching record (its header alone with --no-records); a damaged batch is
always shown. --from and --to take a POINT: %s; both ends are
included, and a time compares the records' timestamps.
An .index or .timeindex file prints its entries as Kafka's DumpLogSegments does; the entries that disagree with
the segment beside it (an offset that is not the last of the batch at its position, a timestamp that is not its
batch's largest or does not grow) are listed on stderr at the end, and make the exit status 1.
"""


def add_dump(verbs: Any, fmt: type[argparse.HelpFormatter]) -> None:
    from metalog.cli import options
    from metalog.replay.points import POINT_FORMS

    dump = verbs.add_parser("dump", help="print batches and records (like kafka-dump-log --cluster-metadata-decoder)",
                            description="Print the batches and records of segments and snapshots, and the entries "
                                        "of .index and .timeindex files, as kafka-dump-log does.",
                            epilog=DUMP_EXAMPLES % POINT_FORMS, formatter_class=fmt)
    dump.add_argument("paths", nargs="*", metavar="PATH",
                      help="a .log segment, a .checkpoint snapshot, an .index or .timeindex file, or a log "
                           "directory (its segments and snapshots)")
    dump.add_argument("--files", action="append", default=[], metavar="FILE,FILE",
                      help="comma-separated files to dump (kafka-dump-log's option), as PATH")
    dump.add_argument("--json", action="store_true", help="one JSON object per batch (per index entry) instead of text")
    dump.add_argument("--no-records", action="store_true", help="batch headers only")
    dump.add_argument("--type", action="append", dest="types", metavar="RECORD_TYPE",
                      help="records of this type only (repeatable): PARTITION_CHANGE_RECORD or PartitionChangeRecord,"
                           " LEADER_CHANGE or LeaderChangeMessage, ...")
    dump.add_argument("--from", dest="from_", type=options.point, metavar="POINT",
                      help="records at or after this offset, or whose timestamp is at or after this time "
                           "(or start)")
    dump.add_argument("--to", type=options.point, metavar="POINT",
                      help="records at or before this offset, or whose timestamp is at or before this time (or end)")
    dump.add_argument("--skip-record-metadata", action="store_true",
                      help="print a record's payload only (a control record: an empty line), as kafka-dump-log")
    dump.add_argument("--max-bytes", type=options.non_negative_int64("a number of bytes"), metavar="N",
                      help="read only the whole batches in a file's first N bytes (as kafka-dump-log)")
    dump.add_argument("--verify-index-only", action="store_true",
                      help="index files: print only what disagrees with the segment, not the entries")
    dump.add_argument("--index-sanity-check", action="store_true",
                      help="index files: only check them as opening a log does, and say whether they passed")
    options.show_secrets(dump)
    dump.set_defaults(func=_dump)


def _dump(args: argparse.Namespace) -> int:
    from metalog.cli.notices import error
    from metalog.log.dump import FileDump
    from metalog.log.dump_filter import RecordFilter, record_type

    paths = [*args.paths, *(f for group in args.files for f in group.split(",") if f)]
    if not paths:
        raise MetalogError("give the files to dump (PATH or --files)")
    first, since = _bound("--from", args.from_, "end")
    last, until = _bound("--to", args.to, "start")
    if first is not None and last is not None and first > last or since is not None and until is not None and \
            since > until:
        raise MetalogError(f"--from {args.from_} is after --to {args.to}")
    records = RecordFilter(frozenset(record_type(t) for t in args.types) if args.types else None, first, last,
                           since, until)
    failed, previous, problems = 0, None, []
    for path in _expand(paths):
        kind = kind_of(path)
        if kind is None:
            error(f"{path}: not a log file (a .log segment, .checkpoint snapshot, .index or .timeindex)")
            failed += 1
        elif kind == "index":
            found = _dump_index(path, args)
            problems += found.problem_lines()
            failed += not found.sound
        else:
            previous = FileDump(path, previous, args.max_bytes)
            failed += _dump_file(previous, args, records)
    for line in problems:  # as Kafka's DumpLogSegments: after every file
        print(escape(line), file=sys.stderr)
    _lost_notices([Path(text) for text in paths if Path(text).is_dir()])
    return 1 if failed else 0


def _lost_notices(directories: list[Path]) -> None:
    """What the log directories dumped no longer hold that their own files name (``metalog.log.lost``), as every
    reading verb says it: one line each."""
    from metalog.cli.notices import notice
    from metalog.log import MetadataLog
    from metalog.log.recovery import unannounced

    for directory in directories:
        try:
            with unannounced(), MetadataLog.open(directory) as log:
                missing = list(log.recovery.missing)
        except MetalogError:
            continue  # damage, or no log here: the dump of its files says what it found
        for line in missing:
            notice(f"lost {line}")


def _bound(option: str, point: Point | None, refused: str) -> tuple[int | None, int | None]:
    """A dump's end as its filter takes it: (an offset, a record timestamp), either or both None for none. The
    files dumped may be no log, so start and end are no offsets here: start (as --from) and end (as --to) are no
    bound at all, the other way round nothing could match."""
    if point is not None and point.kind == refused:
        raise MetalogError(f"{option} {point}: a dump takes start as --from and end as --to, or an offset or a time")
    if point is None or point.kind in ("start", "end"):
        return None, None
    return (point.value, None) if point.kind == "offset" else (None, point.value)


def kind_of(path: Path) -> str | None:
    from metalog.log.index_dump import INDEX_SUFFIXES
    from metalog.log.segment import LOG_SUFFIX
    from metalog.log.snapshot_files import SUFFIX

    if path.suffix == LOG_SUFFIX:
        return "segment"
    if path.suffix == SUFFIX:
        return "snapshot"
    return "index" if path.suffix in INDEX_SUFFIXES else None


def _expand(paths: list[str]) -> Iterator[Path]:
    from metalog.log.files import METADATA_PARTITION_DIR
    from metalog.log.snapshot_files import parse_name

    for text in paths:
        path = Path(text)
        if not path.is_dir():
            if not path.exists():
                raise FileNotFoundError(2, "No such file or directory", str(path))
            yield path
            continue
        if (path / METADATA_PARTITION_DIR).is_dir():
            path = path / METADATA_PARTITION_DIR
        logs = sorted(p for p in path.glob("*.log") if p.stem.isdigit())
        snaps = sorted((p for p in path.glob("*.checkpoint") if parse_name(p.name)), key=lambda p: p.name)
        if not logs and not snaps:
            raise MetalogError(f"{path}: no .log segments or .checkpoint snapshots here")
        yield from logs
        yield from snaps


def _dump_index(path: Path, args: argparse.Namespace) -> Any:
    from metalog.log.index_dump import OffsetIndexDump, TimeIndexDump
    from metalog.log.segment import INDEX_SUFFIX

    out = sys.stdout
    if not args.json:
        out.write(f"Dumping {path_text(path)}\n")
    offsets = path.suffix == INDEX_SUFFIX
    dump = (OffsetIndexDump if offsets else TimeIndexDump)(path, sanity_only=args.index_sanity_check)
    for a, b in dump.entries():
        if args.verify_index_only:
            continue
        if args.json:
            entry = {"offset": a, "position": b} if offsets else {"timestamp": a, "offset": b}
            out.write(json.dumps({"file": str(path), **entry}, separators=(",", ":")) + "\n")
        else:
            out.write(f"offset: {a} position: {b}\n" if offsets else f"timestamp: {a} offset: {b}\n")
    result = dump.result
    if result.empty and not args.json:
        out.write(f"{path_text(path)} is empty.\n")
    if args.index_sanity_check and not result.empty:
        if result.sanity is None:
            out.write(f"{path_text(path)} passed sanity check.\n")
        else:
            from metalog.cli.notices import error

            error(f"{path}: {result.sanity}")
    return result


def _dump_file(walk: Any, args: argparse.Namespace, records: Any) -> bool:
    """Print one file's batches; a problem gets one line on stderr. True when the file is not sound."""
    from metalog.cli.notices import error

    out, path = sys.stdout, walk.path
    if not args.json:
        out.write(f"Dumping {path_text(path)}\n")
        if walk.snapshot:
            out.write(f"Snapshot end offset: {walk.snapshot[0].end_offset}, epoch: {walk.snapshot[0].epoch}\n")
        elif walk.base_offset is not None:
            out.write(f"Log starting offset: {walk.base_offset}\n")
    if walk.boundary is not None:
        error(walk.boundary)
    unreadable = False
    for batch in walk:
        # a damaged batch, or one whose records cannot be read, shows its header whatever the filters
        got = None if walk.damage is not None else _records_of(batch)
        if isinstance(got, CorruptBatchError):
            _print_batch(batch, None, args, path)
            error(f"{got} (its records are not shown)")
            unreadable = True
            continue
        if records.active and got is not None:
            if not records.may_match(batch):
                continue
            got = [r for r in got if records.matches(batch, r)]
            if not got:
                continue
        _print_batch(batch, None if args.no_records else got, args, path)
    return _file_damage(walk, args, out) or unreadable or walk.boundary is not None


def _records_of(batch: Any) -> Any:
    """The batch's records as every read decodes them (KRaft's rules), or the error that says why they cannot be."""
    try:
        return batch.records()
    except CorruptBatchError as e:
        return e


def _print_batch(batch: Any, shown: Any, args: argparse.Namespace, path: Path) -> None:
    from metalog.cli.options import secrets_of
    from metalog.log import dump

    out, secrets = sys.stdout, secrets_of(args)
    if args.json:
        obj = dump.batch_json(batch, records=False)
        if shown is not None:
            obj["records"] = [dump.record_json(batch, r, secrets) for r in shown]
        out.write(json.dumps({"file": str(path), **obj}, separators=(",", ":")) + "\n")
    else:
        out.write(dump.batch_text(batch) + "\n")
        if shown is not None:
            out.writelines(dump.record_text(batch, r, skip_metadata=args.skip_record_metadata, secrets=secrets)
                           + "\n" for r in shown)


def _file_damage(walk: Any, args: argparse.Namespace, out: Any) -> bool:
    """Where the file stops making sense, on stderr (and kafka-dump-log's line for a torn tail); True if it does."""
    from metalog.cli.notices import error, notice

    path = walk.path
    damage = walk.damage
    if damage is None:
        return False
    if damage.torn:  # kafka-dump-log's line for the bytes after the last whole batch
        msg = f"Found {damage.invalid_bytes} invalid bytes at the end of {path_text(path.name)}"
        print(json.dumps({"file": str(path), "invalidBytes": damage.invalid_bytes}) if args.json else msg, file=out)
        notice(f"{damage.error} (a torn write: no valid batch in the last {damage.invalid_bytes} bytes)")
    else:
        error(damage.error)
    return True
