"""``log append`` validates like the controller: the records are replayed over the state at the log's end (the state
layer's own rules, metalog.replay.append_check) before anything is written; a record replay refuses is an error
naming its input line, and the log is unchanged. Before, a PartitionChangeRecord for a topic that does not exist was
"committed": true, and every later replay, shell, diff and history of the log failed at it while ``log verify``
said intact.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from metalog.replay.history import MetadataHistory
from tests.log.test_cli import run
from tests.log.test_hostile_batches import files

TOPIC_ID = "x1_Ll-GX_Jk87FjjJmXfNA"


def line(name: str, data: dict[str, object], version: int = 0) -> str:
    return json.dumps({"name": name, "version": version, "data": data}) + "\n"


FEATURE = line("FeatureLevelRecord", {"name": "metadata.version", "featureLevel": 20})
TOPIC = line("TopicRecord", {"name": "t", "topicId": TOPIC_ID})
PARTITION = line("PartitionRecord", {"partitionId": 0, "topicId": TOPIC_ID, "replicas": [1], "isr": [1],
                                     "removingReplicas": [], "addingReplicas": [], "leader": 1, "leaderEpoch": 0,
                                     "partitionEpoch": 0})
CHANGE = line("PartitionChangeRecord", {"partitionId": 0, "topicId": TOPIC_ID, "isr": [1]})
BEGIN = line("BeginTransactionRecord", {"name": "x"})
END = line("EndTransactionRecord", {})
NOOP = line("NoOpRecord", {})


@pytest.fixture
def log(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    path = tmp_path / "log"
    rc, _, err = run(["log", "append", "--create", str(path), "--timestamp", "1700000000000"], capsys, FEATURE)
    assert rc == 0, err
    return path


@pytest.mark.parametrize(("records", "refused", "why"), [
    ([CHANGE], 1, f"offset 1, PARTITION_CHANGE_RECORD: unknown topic id {TOPIC_ID}"),
    ([NOOP, NOOP, CHANGE], 3, f"offset 3, PARTITION_CHANGE_RECORD: unknown topic id {TOPIC_ID}"),
    ([END], 1, "offset 1, END_TRANSACTION_RECORD: no transaction is open"),
    ([BEGIN, NOOP, BEGIN], 3, "offset 3, BEGIN_TRANSACTION_RECORD: a transaction is already open (since offset 1)"),
])
def test_a_record_replay_refuses_is_refused_and_nothing_is_appended(log, capsys, records, refused, why):
    before = files(log)
    rc, out, err = run(["log", "append", str(log)], capsys, "".join(records))
    assert rc == 1 and out == ""
    assert err.splitlines() == [f"metalog: error: input line {refused}: {why}: replay refuses it over the log's state "
                                "at its end, so a controller never writes it; nothing was appended (--no-validate "
                                "appends it all the same)"]
    assert files(log) == before


def test_records_are_checked_over_the_ones_before_them_and_the_open_transaction(log, capsys):
    """A record may rest on one earlier in the same input, or in a transaction the log leaves open."""
    rc, out, err = run(["log", "append", str(log), "--batch-size", "1"], capsys, TOPIC + PARTITION + BEGIN)
    assert rc == 0, err
    rc, out, err = run(["log", "append", str(log)], capsys, CHANGE + END)
    assert rc == 0, err
    with MetadataHistory(log) as history:
        assert history.state_at().image.topic("t").partitions[0].isr == (1,)


def test_no_validate_appends_it_with_a_warning(log, capsys):
    rc, out, err = run(["log", "append", "--no-validate", str(log)], capsys, CHANGE)
    assert rc == 0 and out.startswith('{"baseOffset": 1, ')
    assert err.splitlines() == ["metalog: warning: --no-validate: the records are appended without being replayed over "
                                "the log's state; a record replay refuses stops every later replay of the log at it"]
    rc, _, err = run(["replay", str(log)], capsys)
    assert rc == 1 and f"unknown topic id {TOPIC_ID}" in err


def test_a_line_that_does_not_encode_names_its_line_and_nothing_is_appended(log, capsys):
    before = files(log)
    rc, _, err = run(["log", "append", str(log)], capsys, NOOP + line("NoOpRecord", {}, version=7))
    assert rc == 1 and err.startswith("metalog: error: input line 2: ") and len(err.splitlines()) == 1
    assert files(log) == before


def test_a_log_whose_own_records_do_not_replay_cannot_be_checked_against(log, capsys):
    assert run(["log", "append", "--no-validate", str(log)], capsys, CHANGE)[0] == 0
    before = files(log)
    rc, out, err = run(["log", "append", str(log)], capsys, NOOP)
    assert rc == 1 and out == ""
    assert err.splitlines() == ["metalog: error: the state at the log's end cannot be replayed to check records "
                                f"against it (offset 1, PARTITION_CHANGE_RECORD: unknown topic id {TOPIC_ID}); "
                                "nothing was appended "
                                "(--no-validate appends without replaying)"]
    assert files(log) == before
