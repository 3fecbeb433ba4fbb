"""Names and values from a log are data: every table, shell and history printer shows them escaped
(``metalog.text.escape``), so that no line printed holds a character a terminal acts on but its own newline,
and a value never adds a row; JSON output stays JSON and gives the names back exactly. Times no datetime holds
are printed, never raised.

A log written here holds, in every place a name can be (topic, rack, listener host, feature, config key and
value, quota entity, ACL principal and host, SCRAM user, token owner, controller listener), names with escape
sequences that would retitle and clear a terminal, a newline and a fake row, a carriage return, C1 controls,
DEL, a bidi override and a literal backslash escape.
"""

from __future__ import annotations

import io
import json
import tempfile
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from metalog.cli.main import main
from metalog.codec import Uuid, message_class, struct_class
from metalog.codec.framing import encode_metadata_record
from metalog.log import Durability, LogConfig, MetadataLog, Mode
from metalog.log.builder import build_data_batch
from metalog.text import escape
from tests.log.test_follow import Follower
from tests.test_text import HOSTILE

TS = 1_700_000_000_000
EVIL = "evil\x1b]0;pwned\x07\x1b[2J\nfake-row  99  0  0  0\rover\x9b31m\x7f\u202eabc"
LITERAL = "evil\\x1b]0;pwned"  # the escape text itself: must print differently from EVIL
RACK = "r\x1b[31mred\nX"
VALUE = "v\na\rl\x00ue"


def rec(name: str, /, **fields: Any) -> Any:
    return message_class(name)(**fields)


def records(topics: list[str], text: str, timestamp_ms: int = TS) -> list[tuple[Any, int]]:
    """A state with ``topics`` and ``text`` in every other place a name can be."""
    endpoint = struct_class("RegisterBrokerRecord", "BrokerEndpoint")
    feature = struct_class("RegisterBrokerRecord", "BrokerFeature")
    out: list[tuple[Any, int]] = [
        (rec("FeatureLevelRecord", name="metadata.version", feature_level=17), 0),
        (rec("FeatureLevelRecord", name=text or "f", feature_level=1), 0),
        (rec("RegisterBrokerRecord", broker_id=1, broker_epoch=5, incarnation_id=Uuid.of(1, 1),
             end_points=[endpoint(name=text, host=text, port=9092, security_protocol=0)],
             features=[feature(name=text, min_supported_version=0, max_supported_version=1)], rack=RACK,
             log_dirs=[Uuid.of(2, 1)]), 3),
        (rec("RegisterControllerRecord", controller_id=3000, incarnation_id=Uuid.of(3, 1),
             end_points=[struct_class("RegisterControllerRecord", "ControllerEndpoint")(
                 name=text, host=text, port=9093, security_protocol=0)], features=[]), 0),
        (rec("ConfigRecord", resource_type=4, resource_name="1", name=text, value=VALUE), 0),
        (rec("ClientQuotaRecord", entity=[struct_class("ClientQuotaRecord", "EntityData")(
            entity_type="user", entity_name=text)], key=text, value=1.5), 0),
        (rec("AccessControlEntryRecord", id=Uuid.of(4, 1), resource_type=2, resource_name=text, pattern_type=3,
             principal=f"User:{text}", host=text, operation=3, permission_type=3), 0),
        (rec("UserScramCredentialRecord", name=text, mechanism=1, salt=b"s", stored_key=b"k", server_key=b"v",
             iterations=4096), 0),
        (rec("DelegationTokenRecord", owner=f"User:{text}", requester=f"User:{text}", renewers=[], issue_timestamp=0,
             max_timestamp=0, expiration_timestamp=0, token_id=text or "t"), 0),
    ]
    for i, name in enumerate(topics):
        tid = Uuid.of(7, i + 1)
        out += [(rec("TopicRecord", name=name, topic_id=tid), 0),
                (rec("PartitionRecord", partition_id=0, topic_id=tid, replicas=[1], isr=[1], leader=1), 0),
                (rec("ConfigRecord", resource_type=2, resource_name=name, name=text or "k", value=VALUE), 0)]
    return out


def write_log(root: Path, topics: list[str], text: str, timestamp_ms: int = TS) -> Path:
    with MetadataLog.open(root, Mode.CREATE, config=LogConfig(durability=Durability.NONE)) as log:
        values = [encode_metadata_record(r, v) for r, v in records(topics, text)]
        log.append_batch(build_data_batch(0, values, epoch=1, timestamp=timestamp_ms))
    return root


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_log(tmp_path_factory.mktemp("hostile") / "log", [EVIL, LITERAL, "plain"], EVIL)


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def assert_printable(*texts: str) -> None:
    """Every line holds only characters that print: no control character but the terminal's own newline."""
    for text in texts:
        for line in text.split("\n"):
            assert line.isprintable(), repr(line)


def section(out: str, header: str) -> list[str]:
    """The rows of the table under ``header`` (up to the next blank line)."""
    lines = out.split("\n")
    start = next(i for i, line in enumerate(lines) if line.lstrip().startswith(header))
    rows = []
    for line in lines[start + 1:]:
        if not line.strip() or not line.startswith(lines[start][:len(lines[start]) - len(lines[start].lstrip())]):
            break
        rows.append(line)
    return rows


# ---- a matrix: every printer of every verb --------------------------------------------------------------------
def test_replay_table(hostile: Path) -> None:
    code, out, err = run("replay", str(hostile), "--partitions")
    assert code == 0
    assert_printable(out, err)
    assert len(section(out, "TOPIC ")) == 3 and len(section(out, "PARTITION ")) == 3
    assert len(section(out, "BROKER ")) == 1 and len(section(out, "RESOURCE ")) == 4
    assert escape(EVIL) in out and escape(LITERAL) in out and escape(RACK) in out and escape(VALUE) in out
    assert f"features {escape(EVIL)}=1" in out


def test_replay_json_gives_the_names_back(hostile: Path) -> None:
    code, out, err = run("replay", str(hostile), "--format", "json")
    assert code == 0 and out.isascii() and "\x7f" not in out
    assert_printable(out, err)
    image = json.loads(out)
    assert sorted(image["topics"]) == sorted([EVIL, LITERAL, "plain"]) and image["brokers"]["1"]["rack"] == RACK


def test_diff(hostile: Path) -> None:
    code, out, err = run("diff", str(hostile), "--from", "start", "--to", "end")
    assert code == 0
    assert_printable(out, err)
    assert [line for line in out.split("\n") if "topics created" in line] == [
        f"  topics created: {', '.join(map(escape, sorted([EVIL, LITERAL, 'plain'])))}"]
    assert len(section(out, "RESOURCE ")) == 4
    code, out, _ = run("diff", str(hostile), "--from", "start", "--to", "end", "--json")
    assert sorted(json.loads(out)["topics"]["created"]) == sorted([EVIL, LITERAL, "plain"])


@pytest.mark.parametrize(("subject", "rows"), [(["--topic", EVIL], 3), (["--broker", "1"], 13),
                                               (["--config", f"TOPIC/{EVIL}"], 1), (["--features"], 2)])
def test_history(hostile: Path, subject: list[str], rows: int) -> None:
    code, out, err = run("history", str(hostile), *subject)
    assert code == 0
    assert_printable(out, err)
    assert len(out.rstrip("\n").split("\n")) == 1 + rows  # the header and a row per change
    code, out, err = run("history", str(hostile), *subject, "--json")
    changes = [json.loads(line) for line in out.rstrip("\n").split("\n")]
    assert len(changes) == rows and out.isascii()


@pytest.mark.parametrize(("command", "lines"), [
    ("ls /image/topics/byName", 3), ("ls /image/configs", 4), ("ls /image/clientQuotas", 1),
    ("ls /image/scram/SCRAM-SHA-256", 1), ("ls /image/delegationToken", 1), ("ls /image/features", 3),
    ("tree /image/topics", None), ("find /image", None), ("cat /image/cluster/brokers/1", 1),
    ("cat /image/cluster/controllers/3000", 1), ("cat /image/acls/*", 1), ("cat /image/topics/byName/*/name", 3),
    ("cat /image/configs/*/*", 4), ("history /image/topics/byName/*", None), ("history /image/cluster/brokers/1", 2),
    ("cd /image/topics/byName/evil?]*; pwd", 1), ("ls /image/nope\x1b[2J", 0), ("cat /x\x1b[2J; history", 2),
], ids=lambda v: v if isinstance(v, str) else "")
def test_shell(hostile: Path, command: str, lines: int | None) -> None:
    code, out, err = run("shell", str(hostile), "-c", command)
    assert_printable(out, err)
    assert lines is None or len(out.split("\n")) - 1 == lines, out


def test_shell_cd_into_a_name_with_a_line_break(hostile: Path) -> None:
    # a glob reaches it (Java's regex . would not), and pwd shows it escaped
    code, out, _ = run("shell", str(hostile), "-c", "cd /image/topics/byName/evil?]*; pwd")
    assert code == 0 and out == f"/image/topics/byName/{escape(EVIL)}\n"


def test_codec_decode_is_json_in_printable_ascii(monkeypatch: pytest.MonkeyPatch) -> None:
    value = encode_metadata_record(rec("TopicRecord", name=EVIL, topic_id=Uuid.of(7, 1)), 0).hex()
    monkeypatch.setattr("sys.stdin", io.StringIO(json.dumps({"hex": value}) + "\n"))
    code, out, err = run("codec", "decode", "--framed")
    assert code == 0 and out.isascii()
    assert_printable(out, err)
    assert json.loads(out)["data"]["name"] == EVIL


def test_shell_ls_lists_each_topic_on_one_line(hostile: Path) -> None:
    code, out, _ = run("shell", str(hostile), "-c", "ls /image/topics/byName")
    assert code == 0 and out.split("\n")[:-1] == [escape(n) for n in sorted([EVIL, LITERAL, "plain"])]


def test_log_follow_changes(hostile: Path) -> None:
    follower = Follower(str(hostile), "--from", "0", "--changes", "--poll", "0.05")
    try:
        lines = [follower.next() for _ in range(4)]
    finally:
        assert follower.stop() == 0
    assert_printable(*lines, *follower.errors)
    assert lines[0] == f"offset {len(records([EVIL, LITERAL, 'plain'], EVIL)) - 1} at 2023-11-14T22:13:20.000Z"
    assert lines[3] == f"  topics created: {', '.join(map(escape, sorted([EVIL, LITERAL, 'plain'])))}"


# ---- names drawn at random: every control character, and any unicode ------------------------------------------
# a name in a log is UTF-8: any code point but a surrogate (a file name's bytes that are not UTF-8 are another test's)
names = st.text(st.one_of(st.sampled_from([c for c in HOSTILE if not "\ud800" <= c <= "\udfff"]),
                          st.characters(blacklist_categories=("Cs",)), st.sampled_from("ab\\ -")),
                min_size=1, max_size=12)


@pytest.mark.slow  # (the matrix above runs in the quick loop; this draws 40 logs)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(names, min_size=1, max_size=4, unique=True), names)
@example(["²", "t٣2"], "0")  # a superscript digit (isdigit, not a decimal); an Arabic-Indic one (a decimal)
def test_any_names_print_one_row_each_and_nothing_a_terminal_acts_on(topics: list[str], text: str) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        log = write_log(Path(scratch) / "log", topics, text)
        code, out, err = run("replay", str(log))
        assert code == 0
        assert_printable(out, err)
        assert len(section(out, "TOPIC ")) == len(topics)
        code, out, err = run("shell", str(log), "-c", "ls /image/topics/byName; cat /image/topics/byName/*/name")
        assert code == 0
        assert_printable(out, err)
        assert out.split("\n")[:-1] == [escape(n) for n in sorted(topics)] * 2
        code, out, err = run("history", str(log), f"--topic={topics[0]}")  # (a name may start with "-")
        assert code == 0
        assert_printable(out, err)
        assert len(out.rstrip("\n").split("\n")) == 4  # the header, the topic, its partition and its config


# ---- times no datetime holds ----------------------------------------------------------------------------------
@pytest.mark.parametrize("timestamp", [2**63 - 1, 2**62, -(2**63), -62135596800001])
def test_every_time_printer_takes_any_int64(tmp_path: Path, timestamp: int) -> None:
    log = write_log(tmp_path / "log", ["t"], "x", timestamp)
    shown, last = f"{timestamp}ms", len(records(["t"], "x")) - 1
    for argv, expected in [
        (["replay", str(log)], f"offset {last} at {shown} "),
        (["replay", str(log), f"--at={timestamp}ms"], f"offset {last} at {shown} "),
        (["history", str(log), "--topic", "t"], f"{last}      {shown}  TOPIC_RECORD@{last - 2}"),
        (["history", str(log), "--topic", "t", "--json"], f'"time":"{shown}","timestamp":{timestamp}'),
        (["shell", str(log), "-c", "cat /image/provenance; at end"],
         f"offset {last}, epoch 1, time {shown}\noffset {last}"),
    ]:
        code, out, err = run(*argv)
        assert code == 0 and expected in out, (argv, out, err)
    follower = Follower(str(log), "--from", "0", "--changes", "--poll", "0.05")
    try:
        assert follower.next() == f"offset {last} at {shown}"
    finally:
        assert follower.stop() == 0


def test_replay_before_the_first_batch_names_its_time(tmp_path: Path) -> None:
    log = write_log(tmp_path / "log", ["t"], "x", 2**63 - 1)
    code, out, err = run("replay", str(log), "--at", "2023-11-14T22:13:19Z")
    assert code == 1 and err == ("metalog: error: --at: 2023-11-14T22:13:19.000Z is before the log's first batch "
                                 "(offset 0, at 9223372036854775807ms)\n")
