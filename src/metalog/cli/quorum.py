"""``metalog quorum``: the KRaft quorum from a metadata log directory, offline (``kafka-metadata-quorum``'s
``describe --status`` answered from the files, and every election and voter-set change in the log)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

DESCRIBE_EXAMPLES = """\
  metalog quorum describe /var/lib/kafka/metadata          # leader, epoch, voters, kraft.version, quorum-state
  metalog quorum describe LOGDIR --json | jq .leaderId      # DescribeQuorum's names: leaderId, leaderEpoch, voters
  metalog quorum describe 00000000000000005001-0000000003.checkpoint   # the voters one snapshot holds
"""
HISTORY_EXAMPLES = """\
  metalog quorum history LOGDIR                             # a row per election and voter-set change
  metalog quorum history LOGDIR --json                      # one JSON object per row
"""
ABOUT = """
The leader and its epoch come from the last LeaderChange control record (each leader writes one as the first
batch of its epoch), the voters from the last VotersRecord (kraft.version 1) or else from the voter ids the
last LeaderChange names (kraft.version 0: the static controller.quorum.voters, whose endpoints are not in the
log). The log keeps no high watermark (a live quorum holds it in memory): what the files prove is that every
offset below the latest snapshot's end was committed, since Kafka snapshots only below the high watermark.
Nothing about followers' lag or observers is in the files, so describe shows none.
"""
EXAMPLES = "examples:\n" + DESCRIBE_EXAMPLES + HISTORY_EXAMPLES + ABOUT


def register(sub: Any) -> None:
    fmt = argparse.RawDescriptionHelpFormatter
    p = sub.add_parser("quorum", help="the KRaft quorum from the log: leader, epoch, voters, elections",
                       description="The controller quorum as a metadata log directory records it, without a "
                                   "running cluster.", epilog=EXAMPLES, formatter_class=fmt)
    verbs = p.add_subparsers(dest="quorum_verb", metavar="COMMAND", required=True)
    desc = verbs.add_parser("describe", help="the quorum at the end of the log (kafka-metadata-quorum describe "
                                             "--status)", epilog="examples:\n" + DESCRIBE_EXAMPLES + ABOUT,
                            formatter_class=fmt)
    desc.add_argument("logdir", metavar="LOGDIR", help="a log directory (holding __cluster_metadata-0), or one "
                                                        ".checkpoint snapshot file (the quorum it holds)")
    desc.add_argument("--status", action="store_true", help="accepted for kafka-metadata-quorum's habit: the "
                                                           "status is what describe shows")
    desc.add_argument("--json", action="store_true", help="one JSON object, with DescribeQuorum's key names")
    desc.set_defaults(func=_describe)
    hist = verbs.add_parser("history", help="a row per election, voter-set change and kraft.version change",
                            epilog="examples:\n" + HISTORY_EXAMPLES + ABOUT, formatter_class=fmt)
    hist.add_argument("logdir", metavar="LOGDIR", help="a log directory (holding __cluster_metadata-0), or one "
                                                        ".checkpoint snapshot file (the quorum it holds)")
    hist.add_argument("--json", action="store_true", help="one JSON object per row")
    hist.set_defaults(func=_history)


def _describe(args: argparse.Namespace) -> int:
    from metalog.log import MetadataLog
    from metalog.replay.quorum import describe_quorum

    with MetadataLog.open(args.logdir) as log:
        _check_snapshot_file(log)
        d = describe_quorum(log)
    if args.json:
        print(json.dumps(d.to_json()))
    else:
        print("\n".join(describe_lines(d)))
    return 0


def _check_snapshot_file(log: Any) -> None:
    """A single snapshot file is read whole first, as every verb reads one: its damage is an error."""
    from metalog.snapshots import SnapshotReader

    if log.snapshot_file is not None:
        SnapshotReader(log.snapshot_file).verify()


def describe_lines(d: Any) -> list[str]:
    """Kafka's ``describe --status`` lines for what the log knows, then metalog's own."""
    from metalog.replay.points import format_time
    from metalog.replay.printable import name

    since = d.leader_since
    rows = [("ClusterId", name(d.cluster_id) if d.cluster_id is not None else "- (no meta.properties)"),
            ("LeaderId", str(d.leader_id)), ("LeaderEpoch", str(d.leader_epoch)),
            ("HighWatermark", _high_watermark(d)),
            ("CurrentVoters", "[" + ", ".join(kafka_voter(v) for v in d.voters) + "]"),
            ("LeaderSince", "-" if since is None else
             f"offset {since.offset} at {format_time(since.timestamp)} ({since.record})"),
            ("VotersFrom", _voters_from(d)), ("KRaftVersion", str(d.kraft_version)),
            ("LogStartOffset", str(d.log_start_offset)),
            ("LogEndOffset", f"{d.log_end_offset}" + ("" if d.last_batch_time is None else
                                                      f" (last batch at {format_time(d.last_batch_time)})")),
            ("NodeId", _node(d)), ("QuorumState", _quorum_state(d.quorum_state))]
    width = 24  # kafka-metadata-quorum's column
    return [f"{(k + ':').ljust(width)}{v}" for k, v in rows] + [f"note: {n}" for n in d.notes]


def kafka_voter(v: Any) -> str:
    """A voter as kafka-metadata-quorum prints one: {"id": 1, "directoryId": null, "endpoints": [...]}."""
    from metalog.replay.printable import name

    text = f'{{"id": {v.replica_id}, "directoryId": ' + ("null" if v.directory_id is None else f'"{v.directory_id}"')
    if v.endpoints:
        text += ', "endpoints": [' + ", ".join(f'"{name(e)}"' for e in v.endpoints) + "]"
    return text + "}"


def _high_watermark(d: Any) -> str:
    if d.snapshot_end_offset is None:
        return "unknown: not kept on disk, and no snapshot proves a committed offset"
    return f"unknown: not kept on disk; at least {d.snapshot_end_offset} (snapshot {d.snapshot})"


def _voters_from(d: Any) -> str:
    source = d.voters_from
    if source is None:
        return "- (no LeaderChange or VotersRecord in the log)"
    if source.kind == "election":
        return (f"{source.record}: the voter ids it names (kraft.version 0 keeps the voters in "
                "controller.quorum.voters, outside the log)")
    record: str = source.record
    return record


def _node(d: Any) -> str:
    from metalog.replay.printable import name

    if d.node_id is None:
        return "- (no meta.properties)"
    return f"{name(d.node_id)} (meta.properties; directory.id {name(d.directory_id or '-')})"


def _quorum_state(state: dict[str, Any] | None) -> str:
    from metalog.replay.printable import name

    if state is None:
        return "- (no quorum-state file)"
    shown = " ".join(f"{k}={name(v)}" for k, v in state.items() if k != "data_version")
    return f"{shown} (data_version {state.get('data_version', '-')})"


def _history(args: argparse.Namespace) -> int:
    from metalog.log import MetadataLog
    from metalog.replay.quorum import quorum_history

    with MetadataLog.open(args.logdir) as log:
        _check_snapshot_file(log)
        if args.json:
            events = list(quorum_history(log))  # (elections and voter changes: a few per log)
            count = len(events)
            sys.stdout.writelines(json.dumps(e.to_json(), separators=(",", ":")) + "\n" for e in events)
        else:
            rows = history_lines(list(quorum_history(log)))
            count = len(rows) - 1 if rows else 0
            if rows:
                print("\n".join(rows))
    if not count:
        print("no election, voter set or kraft.version in the log", file=sys.stderr)
    return 0


def history_lines(events: list[Any]) -> list[str]:
    from metalog.replay.diff import table
    from metalog.replay.points import format_time
    from metalog.replay.printable import name

    if not events:
        return []
    rows = [("OFFSET", "TIME", "EPOCH", "LEADER", "VOTERS", "RECORD", "CHANGE")]
    for e in events:
        voters = "[" + ",".join(str(v.replica_id) for v in e.voters) + "]" if e.voters else "-"
        rows.append((str(e.offset), format_time(e.timestamp), str(e.epoch) if e.epoch >= 0 else "-",
                     str(e.leader_id) if e.leader_id >= 0 else "-", voters, name(e.record), name(e.detail)))
    return table(rows)
