"""Every command's --help has examples; bad inputs give one clear line and a non-zero exit, no traceback."""

from __future__ import annotations

import argparse
import io
import re
from pathlib import Path

import pytest

from metalog.cli.main import build_parser, main
from metalog.errors import MetalogError


def _commands(parser: argparse.ArgumentParser, path: list[str]) -> list[list[str]]:
    found = [path]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found += _commands(sub, path + [name])
    return found


COMMANDS = _commands(build_parser(), [])


def test_every_verb_is_walked() -> None:
    verbs = {c[0] for c in COMMANDS if c}
    assert {"codec", "log", "snapshot", "replay", "diff", "generate", "demo", "bench"} <= verbs
    assert ["log", "dump"] in COMMANDS and ["codec", "list"] in COMMANDS


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c) or "metalog")
def test_help_has_examples(command: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main([*command, "--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    assert "usage: metalog" in out and "\nexamples:\n" in out
    assert "metalog " in out.split("\nexamples:\n", 1)[1]  # the examples run metalog


LEAVES = [c for c in COMMANDS if c and not any(len(o) > len(c) and o[:len(c)] == c for o in COMMANDS)]


@pytest.mark.parametrize("command", LEAVES, ids=lambda c: " ".join(c))
def test_a_leaf_verb_shows_its_own_examples(command: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main([*command, "--help"])
    examples = capsys.readouterr().out.split("\nexamples:\n", 1)[1].split("\n\n", 1)[0]
    commands = "\n".join(line.split(" #", 1)[0] for line in examples.splitlines())  # (not the comments)
    named = {tuple(m.split()[1:1 + len(command)]) for m in re.findall(r"metalog(?: [a-z]+)+", commands)}
    siblings = {tuple(c) for c in LEAVES if len(c) == len(command) > 1 and c[:-1] == command[:-1]}
    assert tuple(command) in named and named & siblings == {tuple(command)} & siblings, named  # not its group's


def _arguments(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                found += _arguments(sub)
        elif not isinstance(action, argparse._HelpAction) and action.dest != "version":
            found.append(action)
    return found


def test_every_option_says_what_it_is() -> None:
    assert [a.option_strings or a.dest for a in _arguments(build_parser()) if not a.help] == []


@pytest.fixture
def places(tmp_path: Path) -> dict[str, str]:
    (tmp_path / "file.txt").write_text("not a metadata log\n")
    (tmp_path / "00000000000000000000.log").write_text("not a metadata log\n")
    (tmp_path / "empty").mkdir()
    return {"MISSING": str(tmp_path / "missing"), "FILE": str(tmp_path / "file.txt"),
            "SEGMENT": str(tmp_path / "00000000000000000000.log"), "EMPTY": str(tmp_path / "empty")}


BAD = [
    (["log", "dump", "MISSING"], "No such file or directory"),
    (["log", "dump", "EMPTY"], "no .log segments"),
    (["log", "dump", "FILE"], "file.txt: not a log file (a .log segment, .checkpoint snapshot, .index or .timeindex)"),
    (["log", "dump", "SEGMENT"], "00000000000000000000.log, byte 0: batch: unsupported magic"),
    (["log", "append", "MISSING"], "no such directory (--create makes a new one)"),
    (["log", "append", "EMPTY"], "not a KRaft metadata log directory (--create makes a new one)"),
    (["log", "recover", "EMPTY"], "not a KRaft metadata log directory (nothing to recover)"),
    (["snapshot", "list", "MISSING"], "No such file or directory"),
    (["snapshot", "create", "MISSING"], "not a KRaft metadata log directory"),
    (["snapshot", "images", "EMPTY"], "not a KRaft metadata log directory"),
    (["replay", "MISSING"], "not a KRaft metadata log directory"),
    (["replay", "FILE"], "not a KRaft metadata log directory"),
    (["diff", "EMPTY", "--from", "0", "--to", "1"], "not a KRaft metadata log directory"),
    (["codec", "explain", "PartitionRecrd", "0", "00"], "unknown message 'PartitionRecrd'; did you mean"),
    (["codec", "explain", "PartitionRecord", "9", "00"], "PartitionRecord has no version 9 (valid versions: 0-2)"),
    (["codec", "explain", "PartitionRecord", "0", "zz"], "'hex' is not hex"),
    (["generate", "FILE"], "is a file; give a new or empty directory"),
    (["simulate", "FILE"], "Not a directory"),
    (["bench", "--message", "NoSuchRecord", "--version", "0", "--json", "FILE"], "unknown message 'NoSuchRecord'"),
    (["bench", "--message", "NoOpRecord", "--version", "3", "--json", "FILE"], "NoOpRecord has no version 3"),
    (["log", "verify", "MISSING"], "missing: no such directory (nothing to verify)"),
    (["log", "verify", "EMPTY"], "not a KRaft metadata log directory (nothing to verify)"),
    (["snapshot", "list", "EMPTY"], "empty: no .checkpoint files and no __cluster_metadata-0 directory here"),
    (["format", "--log-dirs", "FILE", "--node-id", "1", "--cluster-id", "UXyU9i5ARn6W00ON2taeWA"],
     "file.txt is a file, not a log directory"),
    (["demo", "--out", "FILE"], "file.txt exists and is not a metalog demo directory; choose another --out"),
    (["analyze", "MISSING", "--out", "EMPTY", "--engine", "python"], "not a KRaft metadata log directory"),
    (["analyze", "EMPTY", "--out", "EMPTY", "--engine", "python"], "not a KRaft metadata log directory"),
    (["analyze", "EMPTY", "--out", "EMPTY", "--driver-memory", "200m"], "Spark's driver needs at least 512m"),
    (["analyze", "EMPTY", "--out", "EMPTY", "--driver-memory", "lots"], "give a size such as 4g or 768m"),
]


@pytest.mark.parametrize(("argv", "message"), BAD, ids=lambda v: " ".join(v) if isinstance(v, list) else "")
def test_bad_input_gives_one_clear_line(argv: list[str], message: str, places: dict[str, str],
                                        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(""))
    argv = [places.get(a, a) for a in argv]
    assert main(argv) == 1
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("metalog"), err
    assert message in lines[0] and "Traceback" not in err


def test_debug_shows_the_traceback(places: dict[str, str]) -> None:
    with pytest.raises(MetalogError, match="not a KRaft metadata log directory"):
        main(["--debug", "replay", places["MISSING"]])
    with pytest.raises(FileNotFoundError):
        main(["--debug", "log", "dump", places["MISSING"]])


def test_a_closed_pipe_is_not_an_error(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    def closed(args: argparse.Namespace) -> int:
        raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr("metalog.cli.codec._list", closed)
    assert main(["codec", "list"]) == 0
    assert capsys.readouterr().err == ""


DEEP = "[" * 100_000 + "]" * 100_000  # json.loads raises RecursionError for it
NOOP = '{"name": "NoOpRecord", "version": 0, "data": {}}'


@pytest.mark.parametrize(("line", "message"), [
    ("garbage", "input line 1 is not JSON: Expecting value"),
    ('{"name": "Nope", "version": 0, "data": {}}', "input line 1: unknown message 'Nope' (`metalog codec list`"),
    ('{"name": "NoOpRecord", "version": 0}', 'input line 1: expected {"name", "version", "data"}'),
    (DEEP, "input line 1 is not JSON: arrays or objects nested too deeply to read"),
    (NOOP + "\n" + '{"data": ' * 50_000 + "0" + "}" * 50_000,
     "input line 2 is not JSON: arrays or objects nested too deeply to read"),
], ids=["garbage", "unknown-message", "no-data", "deeply-nested", "deeply-nested-object-second-line"])
def test_log_append_names_the_bad_line(line: str, message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(line + "\n"))
    assert main(["log", "append", str(tmp_path / "log"), "--create"]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"metalog: error: {message}") and err.count("\n") == 1, err


def test_codec_says_a_line_is_not_json(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("not json\n"))
    assert main(["codec", "decode"]) == 1
    out, err = capsys.readouterr()
    assert out.startswith('{"error": "line 1: not JSON: Expecting value') and err == "metalog: 1 line(s) failed\n"


@pytest.mark.parametrize("verb", ["encode", "decode"])
def test_codec_says_a_deeply_nested_line_is_not_json(verb: str, monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    good = {"encode": '{"name": "NoOpRecord", "version": 0, "data": {}}',
            "decode": '{"name": "NoOpRecord", "version": 0, "hex": "00"}'}[verb]
    monkeypatch.setattr("sys.stdin", io.StringIO(f"{DEEP}\n{good}\n"))
    assert main(["codec", verb]) == 1
    out, err = capsys.readouterr()
    first, second = out.splitlines()
    assert first == '{"error": "line 1: not JSON: arrays or objects nested too deeply to read"}'
    assert "error" not in second  # the next line is answered as usual
    assert err == "metalog: 1 line(s) failed\n"


def test_spark_errors_become_one_line() -> None:
    from metalog.analysis.engines.spark_session import spark_errors

    class Py4JJavaError(Exception):  # what py4j raises for a failed Java call, with Java's trace after it
        __module__ = "py4j.protocol"

    with pytest.raises(MetalogError) as e, spark_errors():
        raise Py4JJavaError("An error occurred while calling o1.collect.\n: org.apache.spark.SparkException: "
                            "Job aborted\n\tat org.apache.spark.scheduler.DAGScheduler.failJobAndIndependentStages")
    assert "\n" not in str(e.value) and "org.apache.spark.SparkException: Job aborted" in str(e.value)
    assert "--driver-memory" not in str(e.value)  # only when the JVM ran out of memory (test_spark.py)
    with pytest.raises(ValueError), spark_errors():  # anything else is not Spark's to explain
        raise ValueError("a bug of ours")


def test_a_deeply_nested_quorum_state_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(NOOP + "\n"))
    assert main(["log", "append", str(tmp_path / "log"), "--create"]) == 0
    (tmp_path / "log" / "__cluster_metadata-0" / "quorum-state").write_text(DEEP + "\n")
    capsys.readouterr()
    assert main(["log", "verify", str(tmp_path / "log")]) == 1  # verify reports it as a problem of the log
    out = capsys.readouterr().out
    assert "quorum-state: malformed quorum-state: arrays or objects nested too deeply to read" in out
    monkeypatch.setattr("sys.stdin", io.StringIO(NOOP + "\n"))
    assert main(["log", "append", str(tmp_path / "log")]) == 1  # append cannot open the log: one line
    err = capsys.readouterr().err
    assert err.startswith("metalog: error: ") and err.endswith("quorum-state: malformed quorum-state: arrays or "
                                                               "objects nested too deeply to read\n"), err
    assert err.count("\n") == 1
