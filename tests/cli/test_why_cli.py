"""``metalog why`` and the shell's ``why``: the states at a point, since when, the chain; JSON; names escaped;
errors in one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from metalog.codec.messages import PartitionRecord, TopicRecord
from metalog.codec.uuid import Uuid
from tests.cli.running import help_text, run
from tests.replay.test_why import register


def test_help_has_examples_and_kafkas_definitions(capsys: pytest.CaptureFixture[str]) -> None:
    out = help_text(["why"], capsys)
    assert "examples:" in out and "metalog why LOGDIR --broker 5" in out and "leader -1" in out
    assert "min.insync.replicas" in out and "epoch milliseconds" in out


def test_a_partition_of_kafkas_log(jbod_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(["why", str(jbod_dir), "foo-0", "--at", "16"], capsys)
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0] == "foo-0 at offset 16 (2023-11-14T22:13:26.000Z): under-replicated, offline replicas"
    assert lines[1] == "  leader 2, leader epoch 1, replicas [1,2,3], isr [2,3], elr [], min.insync.replicas 2 " \
                       "(TOPIC config)"
    assert lines[3].split() == ["STATE", "SINCE", "TIME", "RECORD", "WHY"]
    assert lines[4].split()[:4] == ["under-replicated", "16", "2023-11-14T22:13:26.000Z", "PARTITION_CHANGE_RECORD@15"]
    assert lines[7] == "the chain:" and lines[8].split() == ["OFFSET", "TIME", "RECORD", "WHAT", "CHANGE"]
    assert lines[9].split() == ["16", "2023-11-14T22:13:26.000Z", "BROKER_REGISTRATION_CHANGE_RECORD@16", "broker",
                                "1", "directories", "[upjfkCrUR9GNn1i94ip1wg,bCF3l0RIQjOKhUqgbivHZA]", "->",
                                "[upjfkCrUR9GNn1i94ip1wg]"]


def test_json(jbod_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["why", str(jbod_dir), "--broker", "3", "--json"], capsys)
    answer = json.loads(out)
    assert code == 0 and answer["subject"] == "broker 3" and answer["offset"] == 24
    assert [c["state"] for c in answer["conditions"]] == ["fenced", "in controlled shutdown", "offline replicas"]
    assert answer["conditions"][0]["since"]["records"] == [
        {"offset": 22, "type": "BROKER_REGISTRATION_CHANGE_RECORD"},
        {"offset": 24, "type": "BROKER_REGISTRATION_CHANGE_RECORD"}]
    assert answer["state"]["offlineReplicas"] == ["foo-0", "foo-1"]


@pytest.mark.parametrize(("argv", "error"), [
    (["foo-0", "--broker", "1"], "give one of TOPIC-N, --broker ID or --directory UUID"),
    ([], "give one of TOPIC-N, --broker ID or --directory UUID"),
    (["foo"], "not a partition: 'foo' (give TOPIC-N, such as orders-3)"),
    (["bar-0"], "no topic 'bar' at offset 24"),
    (["foo-0", "--at", "99"], "--at: offset 99 is past the end of the log (last offset 24)"),
    (["--directory", "nope"], "not a directory id: 'nope' (give its 22-character Uuid)")])
def test_errors_are_one_line(jbod_dir: Path, capsys: pytest.CaptureFixture[str], argv: list[str], error: str) -> None:
    code, out, err = run(["why", str(jbod_dir), *argv], capsys)
    assert (code, out, err) == (1, "", f"metalog: error: {error}\n")


def test_names_from_the_log_are_escaped(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from metalog.log import Durability, LogConfig, MetadataLog, Mode

    topic = Uuid.of(4, 4)
    with MetadataLog.open(tmp_path / "log", Mode.CREATE, config=LogConfig(durability=Durability.NONE)) as log:
        log.append([register(1), (TopicRecord(name="\x1b[2Jx", topic_id=topic), 0),
                    (PartitionRecord(partition_id=0, topic_id=topic, replicas=[1, 2], isr=[1], leader=1), 2)],
                   epoch=1, timestamp=0)
    code, out, _ = run(["why", str(tmp_path / "log"), "\x1b[2Jx-0"], capsys)
    assert code == 0 and "\x1b" not in out and out.startswith("\\x1b[2Jx-0 at offset 2")
    code, out, _ = run(["why", str(tmp_path / "log"), "\x1b[2Jx-0", "--json"], capsys)
    assert json.loads(out)["subject"] == "\x1b[2Jx-0"


def test_the_shell_asks_why_at_its_point(jbod_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["shell", str(jbod_dir), "--at", "14", "-c", "why foo-0; at 16; why foo-0; help"], capsys)
    lines = out.splitlines()
    assert code == 0 and lines[0] == "foo-0 at offset 14 (2023-11-14T22:13:25.000Z): healthy"
    assert "foo-0 at offset 16 (2023-11-14T22:13:26.000Z): under-replicated, offline replicas" in lines
    assert any(line.strip().startswith("why TOPIC-N | broker N | directory UUID") for line in lines)
    code, _, err = run(["shell", str(jbod_dir), "-c", "why; why broker x; why foo-9"], capsys)
    assert code == 1 and err.splitlines() == ["why: give TOPIC-N, broker N or directory UUID",
                                              "why: not a broker id: 'x'",
                                              "why: topic 'foo' has no partition 9 at offset 24"]
