"""``metalog history`` on Kafka's KIP-858 files: a table or JSON lines, ranges of offsets and times, errors."""

from __future__ import annotations

import json

import pytest

from tests.cli.running import help_text, run


def test_help_has_examples(capsys: pytest.CaptureFixture[str]) -> None:
    out = help_text(["history"], capsys)
    assert "examples:" in out and "--broker 3" in out and "epoch milliseconds" in out


def test_a_partitions_history_as_a_table(jbod_dir, capsys) -> None:
    code, out, _ = run(["history", str(jbod_dir), "--topic", "foo", "--partition", "0"], capsys)
    lines = out.splitlines()
    assert code == 0 and lines[0].split() == ["OFFSET", "TIME", "RECORD", "WHAT", "CHANGE"]
    assert lines[1].split()[:5] == ["12", "2023-11-14T22:13:24.000Z", "TOPIC_RECORD@9", "PARTITION_RECORD@10",
                                    "foo-0"]
    assert lines[4].split() == ["16", "2023-11-14T22:13:26.000Z", "PARTITION_CHANGE_RECORD@15", "foo-0", "isr",
                                "[1,2,3]", "->", "[2,3]"]


def test_json_lines_one_per_change(jbod_dir, capsys) -> None:
    code, out, _ = run(["history", str(jbod_dir), "--broker", "3", "--json"], capsys)
    changes = [json.loads(line) for line in out.splitlines()]
    assert code == 0
    fenced = [c for c in changes if c["field"] == "fenced"]
    assert [(c["offset"], c["before"], c["after"]) for c in fenced] == [(8, True, False), (24, False, True)]
    assert fenced[1]["records"] == [{"offset": 22, "type": "BROKER_REGISTRATION_CHANGE_RECORD"},
                                    {"offset": 24, "type": "BROKER_REGISTRATION_CHANGE_RECORD"}]
    # broker 3 led bar-0 from its creation (offset 19) until bar was removed (offset 21): not a record that
    # names broker 3, found all the same
    assert [(c["offset"], c["before"], c["after"]) for c in changes if c["entity"] == "bar-0" and
            c["field"] == "leader"] == [(20, None, 3), (24, 3, None)]


def test_offsets_and_times_narrow_the_changes(jbod_dir, capsys) -> None:
    _, everything, _ = run(["history", str(jbod_dir), "--broker", "3", "--json"], capsys)
    rows = [json.loads(line) for line in everything.splitlines()]
    _, ranged, _ = run(["history", str(jbod_dir), "--broker", "3", "--json", "--from", "13", "--to", "20"], capsys)
    assert [json.loads(line) for line in ranged.splitlines()] == [r for r in rows if 13 <= r["offset"] <= 20]
    # 22:13:27 is the batch ending at offset 20; a time --to ends with it, a time --from starts with it
    _, timed, _ = run(["history", str(jbod_dir), "--broker", "3", "--json", "--from", "2023-11-14T22:13:27Z",
                       "--to", "2023-11-14T22:13:27.999Z"], capsys)
    assert [json.loads(line) for line in timed.splitlines()] == [r for r in rows if r["offset"] == 20]


def test_nothing_found_says_so(jbod_dir, capsys) -> None:
    # a subject no published state held says it never existed (a name mistyped, or the wrong log); one that
    # existed and did not change says that
    code, out, err = run(["history", str(jbod_dir), "--topic", "nope"], capsys)
    assert (code, out, err) == (0, "", "topic nope never existed in offsets 0..24: no published state there holds "
                                       "it\n")
    for subject, name in ((["--broker", "9"], "broker 9"), (["--topic", "foo", "--partition", "7"],
                                                           "topic foo partition 7"),
                          (["--config", "BROKER/1"], "config resource BROKER/1")):
        code, out, err = run(["history", str(jbod_dir), *subject], capsys)
        assert (code, out, err) == (0, "", f"{name} never existed in offsets 0..24: no published state there holds "
                                           "it\n")
    code, out, err = run(["history", str(jbod_dir), "--config", "TOPIC/foo", "--from", "13"], capsys)
    assert (code, out, err) == (0, "", "no committed change in offsets 13..24\n")
    code, out, err = run(["history", str(jbod_dir), "--topic", "foo", "--from", "2030-01-01T00:00:00Z"], capsys)
    assert (code, out) == (0, "") and err == ("no batch of the log lies between --from 2030-01-01T00:00:00.000Z and "
                                              "--to end\n")


@pytest.mark.parametrize(("argv", "message"), [
    (["--partition", "0", "--broker", "1"], "metalog: error: --partition needs --topic"),
    (["--config", "FOO/x"], "metalog: error: not a config resource: 'FOO/x' (give TYPE/name, TYPE one of TOPIC, "
                            "BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP)"),
    (["--topic", "foo", "--from", "9", "--to", "3"], "metalog: error: --from 9 is after --to 3"),
])
def test_errors_are_one_line(jbod_dir, capsys, argv: list[str], message: str) -> None:
    code, out, err = run(["history", str(jbod_dir), *argv], capsys)
    assert code == 1 and out == "" and err.startswith(message) and err.count("\n") == 1
