"""``metalog quorum describe|history``: kafka-metadata-quorum's lines for what the log knows, JSON with
DescribeQuorum's names, names from the log escaped, errors in one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from metalog.log import MetadataLog, Mode
from tests.cli.running import help_text, run
from tests.replay.test_quorum import election, new_log, voters_record


@pytest.mark.parametrize("verb", ["describe", "history"])
def test_help_has_examples(verb: str, capsys: pytest.CaptureFixture[str]) -> None:
    out = help_text(["quorum", verb], capsys)
    assert "examples:" in out and f"metalog quorum {verb} LOGDIR --json" in out and "high watermark" in out


def test_describe_kafkas_log(jbod_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(["quorum", "describe", str(jbod_dir)], capsys)
    assert (code, err) == (0, "")
    assert out.splitlines() == [
        "ClusterId:              - (no meta.properties)",
        "LeaderId:               3000",
        "LeaderEpoch:            1",
        "HighWatermark:          unknown: not kept on disk, and no snapshot proves a committed offset",
        'CurrentVoters:          [{"id": 3000, "directoryId": null}]',
        "LeaderSince:            offset 0 at 2023-11-14T22:13:20.000Z (LEADER_CHANGE@0)",
        "VotersFrom:             LEADER_CHANGE@0: the voter ids it names (kraft.version 0 keeps the voters in "
        "controller.quorum.voters, outside the log)",
        "KRaftVersion:           0",
        "LogStartOffset:         0",
        "LogEndOffset:           25 (last batch at 2023-11-14T22:13:28.000Z)",
        "NodeId:                 - (no meta.properties)",
        "QuorumState:            - (no quorum-state file)",
    ]


def test_describe_json_has_describe_quorums_names(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with new_log(tmp_path / "q") as log:
        log.append_control([election(3001, [3000, 3001]), voters_record(3000, 3001)], epoch=2, timestamp=5)
    code, out, _ = run(["quorum", "describe", str(tmp_path / "q"), "--json"], capsys)
    d = json.loads(out)
    assert code == 0 and (d["leaderId"], d["leaderEpoch"], d["highWatermark"], d["clusterId"]) == \
        (3001, 2, None, "MkU3OEVBNTcwNTJENDM2Qg")
    assert d["voters"] == [
        {"replicaId": 3000, "replicaDirectoryId": "AAAAAAAAAAAAAAAAAAALuQ", "endpoints": ["CONTROLLER://c3000:9093"]},
        {"replicaId": 3001, "replicaDirectoryId": "AAAAAAAAAAAAAAAAAAALug", "endpoints": ["CONTROLLER://c3001:9093"]}]
    assert d["votersFrom"] == {"offset": 1, "record": "KRAFT_VOTERS@1"} and d["nodeId"] == "3000"


def test_history_rows(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with new_log(tmp_path / "q") as log:
        log.append_control([election(1, [1, 2, 3])], epoch=1, timestamp=1700000000000)
        log.append_control([election(2, [1, 2, 3], [2, 3])], epoch=2, timestamp=1700000060000)
    code, out, _ = run(["quorum", "history", str(tmp_path / "q")], capsys)
    assert code == 0 and out.splitlines() == [
        "OFFSET  TIME                      EPOCH  LEADER  VOTERS   RECORD           CHANGE",
        "0       2023-11-14T22:13:20.000Z  1      1       [1,2,3]  LEADER_CHANGE@0  1 leads epoch 1 (votes from 1)",
        "1       2023-11-14T22:14:20.000Z  2      2       [1,2,3]  LEADER_CHANGE@1  2 leads epoch 2 (votes from 2,3)",
    ]
    code, out, _ = run(["quorum", "history", str(tmp_path / "q"), "--json"], capsys)
    second = json.loads(out.splitlines()[1])
    assert second == {"offset": 1, "time": "2023-11-14T22:14:20.000Z", "timestamp": 1700000060000,
                      "event": "election", "leaderId": 2, "leaderEpoch": 2,
                      "voters": [{"replicaId": i, "replicaDirectoryId": None, "endpoints": []} for i in (1, 2, 3)],
                      "kraftVersion": 0, "record": "LEADER_CHANGE@1", "grantingVoters": [2, 3]}


def test_names_from_the_log_are_escaped(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with new_log(tmp_path / "q") as log:
        log.append_control([election(1, [1]), voters_record(1, host="\x1b]0;owned\x07")], epoch=1, timestamp=5)
    _, out, _ = run(["quorum", "describe", str(tmp_path / "q")], capsys)
    assert "\x1b" not in out and "\x07" not in out
    assert '"endpoints": ["CONTROLLER://\\x1b]0;owned\\x071:9093"]' in out
    _, out, _ = run(["quorum", "describe", str(tmp_path / "q"), "--json"], capsys)
    assert json.loads(out)["voters"][0]["endpoints"] == ["CONTROLLER://\x1b]0;owned\x071:9093"]


def test_not_a_log_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(["quorum", "describe", str(tmp_path)], capsys)
    assert (code, out) == (1, "") and err.count("\n") == 1 and "not a KRaft metadata log directory" in err


def test_an_empty_log_has_no_history(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    MetadataLog.open(tmp_path / "q", Mode.CREATE).close()
    code, out, err = run(["quorum", "history", str(tmp_path / "q")], capsys)
    assert (code, out, err) == (0, "", "no election, voter set or kraft.version in the log\n")
