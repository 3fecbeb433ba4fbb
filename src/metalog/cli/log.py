"""``metalog log``: dump, append to and verify Kafka's ``__cluster_metadata`` log on disk."""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from pathlib import Path
from typing import Any, NamedTuple

from metalog.errors import MetalogError
from metalog.text import escape, path_text

VERIFY_EXAMPLES = """\
  metalog log verify /var/lib/kafka/metadata && echo intact
  metalog log verify --quiet LOGDIR                         # problems only
"""
RECOVER_EXAMPLES = """\
  metalog log recover /var/lib/kafka/metadata              # check every segment; damage: exit status 1
  metalog log recover --repair --dry-run /var/lib/kafka/metadata   # what a repair would cut, changing nothing
  metalog log recover --repair /var/lib/kafka/metadata     # truncate at damage, saying what is lost
"""
APPEND_EXAMPLES = """\
  echo '{"name": "NoOpRecord", "version": 0, "data": {}}' | metalog log append --create /tmp/metadata
  metalog log append LOGDIR --timestamp 2024-05-01T10:32:00Z < records.jsonl   # one JSON record a line
"""
EXAMPLES = f"""\
examples:
  metalog log dump /var/lib/kafka/metadata                  # every segment and snapshot, as kafka-dump-log
  metalog log dump --type PARTITION_CHANGE_RECORD --from 1000 --to 2000 LOGDIR
  metalog log dump --files 00000000000000000000.index,00000000000000000000.timeindex
  metalog log follow /var/lib/kafka/metadata --changes     # what the controller commits, as it commits it
{VERIFY_EXAMPLES}{RECOVER_EXAMPLES}{APPEND_EXAMPLES}"""


def register(sub: Any) -> None:
    fmt = argparse.RawDescriptionHelpFormatter
    p = sub.add_parser("log", help="dump, append to and verify the metadata log on disk",
                       description="Kafka's __cluster_metadata log directory: segments, indexes, snapshots.",
                       epilog=EXAMPLES, formatter_class=fmt)
    verbs = p.add_subparsers(dest="log_verb", metavar="COMMAND", required=True)

    from metalog.cli import options
    from metalog.cli.log_dump import add_dump
    from metalog.cli.log_follow import add_follow

    add_dump(verbs, fmt)
    add_follow(verbs, fmt)

    app = verbs.add_parser("append", help='append JSON lines {"name", "version", "data"} as batches',
                           description="Reads every line first, then replays the records over the state at "
                                       "the log's end, as a controller does before it writes them: a record "
                                       "replay refuses (a PartitionChangeRecord for a topic that does not exist, "
                                       "say) is an error naming its line, and nothing is appended. Checks every "
                                       "segment of the log and refuses to append after damage or lost offsets (a "
                                       "torn write at its end is cut, as Kafka does, and reported); then appends, "
                                       "fsyncs and prints the committed offsets. Up to --batch-size lines make one "
                                       "batch. A batch ends after an AbortTransactionRecord: the records after it "
                                       "start a new batch (Kafka's loader would keep the aborted transaction's "
                                       "records if more followed in the batch). The quorum's control messages "
                                       "(LeaderChangeMessage, KRaftVersionRecord, VotersRecord) go into control "
                                       "batches of their own, as a KRaft leader writes them.",
                           epilog="examples:\n" + APPEND_EXAMPLES, formatter_class=fmt)
    app.add_argument("logdir", metavar="LOGDIR", help="a log directory (holding __cluster_metadata-0)")
    app.add_argument("--batch-size", type=options.positive_int32("records per batch"), default=1000,
                     help="records per batch (default 1000)")
    app.add_argument("--epoch", type=options.LEADER_EPOCH,
                     help="leader epoch of the batches (default: the log's latest, or 1)")
    app.add_argument("--timestamp", metavar="TIME",
                     help="append time: ISO 8601 or epoch milliseconds, as every TIME (default: now)")
    app.add_argument("--durability", choices=["batch", "append", "none"], default="batch",
                     help="fsync after every batch (default), once at the end, or only at close")
    app.add_argument("--create", action="store_true", help="create the log directory if it does not exist")
    app.add_argument("--cluster-id", help="cluster.id for a new meta.properties (default: random)")
    app.add_argument("--node-id", type=options.NODE_ID, default=1, help="node.id for a new meta.properties (default 1)")
    app.add_argument("--segment-bytes", type=options.positive_int32("a segment size in bytes"), default=1024 ** 3,
                     help="roll segments at this size")
    app.add_argument("--no-validate", action="store_true",
                     help="append without replaying the records over the log's state first (for test logs that "
                          "must hold records replay refuses; every later replay then stops at them)")
    app.set_defaults(func=_append)

    ver = verbs.add_parser("verify", help="check every CRC, index, epoch and snapshot; exit status 0 = intact",
                           description="Problems make the exit status 1. Warnings do not: they name batches "
                                       "metalog reads differently from Kafka's loader (records after an "
                                       "AbortTransactionRecord in the same batch).",
                           epilog="examples:\n" + VERIFY_EXAMPLES, formatter_class=fmt)
    ver.add_argument("logdir", metavar="LOGDIR", help="a log directory (holding __cluster_metadata-0)")
    ver.add_argument("--quiet", "-q", action="store_true", help="print problems only")
    ver.set_defaults(func=_verify, reports_recovery=True)

    rec = verbs.add_parser("recover", help="check every segment; cut a torn tail, rebuild indexes; report what changed",
                           description="Opens the log for writing and checks every batch of every segment, as "
                                       "Kafka's recovery does, and the records of each as every read decodes them: "
                                       "a torn write at the end is cut, indexes and leader-epoch-checkpoint that "
                                       "disagree with the batches are rebuilt. Damage anywhere else, and offsets "
                                       "the log's own files name past its end (lost), are an error (exit status 1) "
                                       "unless --repair: it cuts the log at the damage, saying which offsets it "
                                       "cuts, or accepts the loss. Snapshots are left as they are.",
                           epilog="examples:\n" + RECOVER_EXAMPLES, formatter_class=fmt)
    rec.add_argument("logdir", metavar="LOGDIR", help="a log directory (holding __cluster_metadata-0)")
    rec.add_argument("--repair", action="store_true",
                     help="also truncate at damage in the middle of the log, losing everything after it, and rebuild "
                          "what names lost offsets")
    rec.add_argument("--dry-run", action="store_true",
                     help="say what would be done, and change nothing (the log is opened read-only)")
    rec.set_defaults(func=_recover, reports_recovery=True)


# ---- append ---------------------------------------------------------------------------------
def _require_log(logdir: str, hint: str | None) -> None:
    """A missing directory says so in words a person can act on (``hint`` None: no check)."""
    if hint is None:
        return
    path = Path(logdir)
    if not path.exists():
        raise MetalogError(f"{logdir}: no such directory ({hint})")
    if path.name != "__cluster_metadata-0" and not (path / "__cluster_metadata-0").is_dir():
        raise MetalogError(f"{logdir}: no __cluster_metadata-0 directory here: not a KRaft metadata log directory "
                           f"({hint})")


def _append(args: argparse.Namespace) -> int:
    from metalog.cli import options
    from metalog.log import Check, Durability, LogConfig, MetadataLog, Mode
    from metalog.replay.points import parse_time

    options.log_directory(args.logdir, "log append")
    _require_log(args.logdir, "--create makes a new one" if not args.create else None)
    timestamp = None if args.timestamp is None else parse_time(args.timestamp)
    records = _read_records(sys.stdin)
    if args.no_validate:
        from metalog.cli.notices import warning

        warning("--no-validate: the records are appended without being replayed over the log's state; a record "
                "replay refuses stops every later replay of the log at it")
    checked_end = None if args.no_validate or not records else _check(args.logdir, records)
    # every segment is checked before anything is appended: never append after damage
    config = LogConfig(segment_bytes=args.segment_bytes, durability=Durability(args.durability),
                       cluster_id=args.cluster_id, node_id=args.node_id)
    with MetadataLog.open(args.logdir, Mode.CREATE if args.create else Mode.WRITE, check=Check.ALL,
                          config=config) as log:
        if checked_end is not None and log.log_end_offset != checked_end:  # another writer appended meanwhile
            _check(args.logdir, records)  # again, under the lock now held
        for control, run in itertools.groupby(records, key=_is_control):
            group = list(run)
            for start in range(0, len(group), args.batch_size):
                piece = group[start:start + args.batch_size]
                if control:
                    _report(log.append_control([(r.message, r.version) for r in piece], epoch=args.epoch,
                                               timestamp=timestamp))
                    continue
                values = [r.value for r in piece if r.value is not None]  # (every one of a data run)
                for b in log.append(values, epoch=args.epoch, timestamp=timestamp, batch_size=args.batch_size):
                    _report(b)
        if args.durability == "none":
            log.flush()
            print(json.dumps({"committedOffset": log.committed_offset - 1}))
    return 0


class _Input(NamedTuple):
    """One record of the input: its line, the message and version, and (a metadata record) its value as the log
    stores it, or None (a control message, written into a control batch)."""

    line: int
    message: Any
    version: int
    value: bytes | None


def _read_records(lines: Any) -> list[_Input]:
    """Every record of the input, read and encoded before anything is appended."""
    from metalog.codec.framing import encode_metadata_record

    out: list[_Input] = []
    lineno = 0
    for line in lines:
        if not line.strip():
            continue
        lineno += 1
        message, version = _parse_record(line, lineno)
        try:
            value = None if message.NAME in _LOG_CONTROL else encode_metadata_record(message, version)
        except MetalogError as e:
            raise MetalogError(f"input line {lineno}: {e}") from None
        out.append(_Input(lineno, message, version, value))
    return out


def _check(logdir: str, records: list[_Input]) -> int | None:
    """Replay the metadata records over the state at the log's end, each at the offset it will have, as a controller
    does before it writes them; the end offset they were checked against. A record replay refuses is an error naming
    its input line. None: the log is damaged, which the writer's open, checking every segment, says in its own
    words."""
    from metalog.errors import CorruptBatchError, ReplayError
    from metalog.replay.append_check import first_refused, state_at_end

    try:
        loader, end = state_at_end(logdir)
    except CorruptBatchError:
        return None
    except ReplayError as e:
        raise MetalogError(f"{e}; nothing was appended (--no-validate appends without replaying)") from None
    data = [(end + i, r) for i, r in enumerate(records) if r.value is not None]
    refused = first_refused(loader, [(offset, r.value) for offset, r in data if r.value is not None])
    if refused is not None:
        raise MetalogError(f"input line {data[refused.index][1].line}: {refused.error}: replay refuses it over the "
                           "log's state at its end, so a controller never writes it; nothing was appended "
                           "(--no-validate appends it all the same)")
    return end


def _parse_record(line: str, lineno: int) -> tuple[Any, int]:
    from metalog.codec import message_class
    from metalog.codec.jsonform import loads

    try:
        req = loads(line)
    except ValueError as e:
        raise MetalogError(f"input line {lineno} is not JSON: {e}") from None
    try:
        if not isinstance(req, dict) or not {"name", "version", "data"} <= req.keys():
            raise ValueError('expected {"name", "version", "data"}')
        cls = message_class(_message_name(req["name"]))
        return cls.from_json(req["data"], req["version"]), req["version"]
    except KeyError as e:  # str() of a KeyError is the repr of its argument: quotes around the message
        raise MetalogError(f"input line {lineno}: {e.args[0] if e.args else e}") from None
    except (MetalogError, ValueError, TypeError) as e:
        raise MetalogError(f"input line {lineno}: {e}") from None


# the control messages a KRaft leader writes into its log (snapshot headers and footers belong to snapshots)
_LOG_CONTROL = ("LeaderChangeMessage", "KRaftVersionRecord", "VotersRecord")


def _is_control(record: _Input) -> bool:
    return record.value is None


def _message_name(name: str) -> str:
    """A spec name (``TopicRecord``) or Kafka's type name (``TOPIC_RECORD``)."""
    if name.isupper():
        from metalog.codec.definitions import METADATA_BY_API_KEY
        from metalog.log.dump import kafka_type_name

        for spec in METADATA_BY_API_KEY.values():
            if kafka_type_name(spec.name) == name:
                return spec.name
    return name


def _report(b: Any) -> None:
    print(json.dumps({"baseOffset": b.base_offset, "lastOffset": b.last_offset, "epoch": b.epoch,
                      "committed": b.committed}), flush=True)


# ---- verify ---------------------------------------------------------------------------------
def _verify(args: argparse.Namespace) -> int:
    from metalog.cli import options
    from metalog.log.verify import verify_log
    from metalog.snapshots.verify import verify_snapshots

    options.log_directory(args.logdir, "log verify", "; metalog snapshot verify FILE checks one")
    _require_log(args.logdir, "nothing to verify")
    v = verify_snapshots(args.logdir, verify_log(args.logdir))
    if not args.quiet:
        for note in v.notes:
            print(f"note: {escape(note)}")
        for warning in v.warnings:
            print(f"warning: {escape(warning)}")
    for problem in v.problems:
        print(f"PROBLEM: {escape(problem)}")
    verdict = "intact" if v.ok else f"{len(v.problems)} problem(s)"
    verdict += f", {len(v.warnings)} warning(s)" if v.warnings else ""
    print(f"{path_text(args.logdir)}: {v.batches} batches, {v.records - v.control_records} data records, "
          f"{v.control_records} control records, {v.bytes} bytes, {v.snapshots} "
          f"snapshots: {verdict}")
    return 0 if v.ok else 1


def _recover(args: argparse.Namespace) -> int:
    from metalog.cli import options
    from metalog.log import Check, MetadataLog, Mode

    options.log_directory(args.logdir, "log recover")
    _require_log(args.logdir, "nothing to recover")
    mode = Mode.READ if args.dry_run else Mode.WRITE
    with MetadataLog.open(args.logdir, mode, check=Check.REPAIR if args.repair else Check.ALL) as log:
        report = log.recovery
        for line in report.lines():
            print(escape(line))
        would = "would be " if args.dry_run else ""
        cut = "" if report.cut is None else \
            f", {report.cut[1] - report.cut[0] + 1} offsets {would}cut ({report.cut[0]}..{report.cut[1]})"
        after = f"after the {'repair' if args.repair else 'recovery'}, " if args.dry_run and report else ""
        print(f"{path_text(args.logdir)}: {after}log start offset {log.log_start_offset}, log end offset "
              f"{log.log_end_offset}{cut}{'' if report else ', nothing to recover'}"
              f"{'; nothing was changed (--dry-run)' * args.dry_run}")
    return 0
