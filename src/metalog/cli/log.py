"""``metalog log``: dump, append to and verify Kafka's ``__cluster_metadata`` log on disk."""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from pathlib import Path
from typing import Any

from metalog.errors import MetalogError
from metalog.text import escape, path_text

VERIFY_EXAMPLES = """\
  metalog log verify /var/lib/kafka/metadata && echo intact
  metalog log verify --quiet LOGDIR                         # problems only
"""
RECOVER_EXAMPLES = """\
  metalog log recover /var/lib/kafka/metadata              # check every segment; damage: exit status 1
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
                           description="Checks every segment of the log first and refuses to append after damage "
                                       "in its middle (a torn write at its end is cut, as Kafka does, and "
                                       "reported); then appends, fsyncs and prints the committed offsets. Up to "
                                       "--batch-size lines make one batch. A batch ends after an "
                                       "AbortTransactionRecord: the records after it start a new batch (Kafka's "
                                       "loader would keep the aborted transaction's records if more followed "
                                       "in the batch). The quorum's control messages (LeaderChangeMessage, "
                                       "KRaftVersionRecord, VotersRecord) go into control batches of their own, "
                                       "as a KRaft leader writes them.", epilog="examples:\n" + APPEND_EXAMPLES,
                           formatter_class=fmt)
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
                                       "Kafka's recovery does: a torn write at the end is cut, indexes and "
                                       "leader-epoch-checkpoint that disagree with the batches are rebuilt. Damage "
                                       "anywhere else is an error (exit status 1) unless --repair. Snapshots are "
                                       "left as they are.",
                           epilog="examples:\n" + RECOVER_EXAMPLES, formatter_class=fmt)
    rec.add_argument("logdir", metavar="LOGDIR", help="a log directory (holding __cluster_metadata-0)")
    rec.add_argument("--repair", action="store_true",
                     help="also truncate at damage in the middle of the log, losing everything after it")
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
    from metalog.log import MetadataLog
    from metalog.replay.points import parse_time

    _require_log(args.logdir, "--create makes a new one" if not args.create else None)
    timestamp = None if args.timestamp is None else parse_time(args.timestamp)
    # every segment is checked before anything is appended: never append after damage in the middle
    with MetadataLog.open(args.logdir, create=args.create, check_all=True, durability=args.durability,
                          segment_bytes=args.segment_bytes, cluster_id=args.cluster_id,
                          node_id=args.node_id) as log:
        lines = (line for line in sys.stdin if line.strip())
        lineno = 0
        while True:
            chunk = list(itertools.islice(lines, args.batch_size))
            if not chunk:
                break
            records = []
            for line in chunk:
                lineno += 1
                records.append(_parse_record(line, lineno))
            for control, run in itertools.groupby(records, key=_is_control):
                if control:
                    _report(log.append_control(list(run), epoch=args.epoch, timestamp=timestamp))
                    continue
                for b in log.append(run, epoch=args.epoch, timestamp=timestamp, batch_size=args.batch_size):
                    _report(b)
        if args.durability == "none":
            log.flush()
            print(json.dumps({"committedOffset": log.committed_offset - 1}))
    return 0


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


def _is_control(record: tuple[Any, int]) -> bool:
    return record[0].NAME in _LOG_CONTROL


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
    from metalog.log.verify import verify_log
    from metalog.snapshots.verify import verify_snapshots

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
    print(f"{path_text(args.logdir)}: {v.batches} batches, {v.records} records, {v.bytes} bytes, {v.snapshots} "
          f"snapshots: {verdict}")
    return 0 if v.ok else 1


def _recover(args: argparse.Namespace) -> int:
    from metalog.log import MetadataLog

    _require_log(args.logdir, "nothing to recover")
    with MetadataLog.open(args.logdir, check_all=True, repair=args.repair) as log:
        for line in log.recovery.lines():
            print(escape(line))
        print(f"{path_text(args.logdir)}: log start offset {log.log_start_offset}, log end offset {log.log_end_offset}"
              f"{'' if log.recovery else ', nothing to recover'}")
    return 0
