"""Every number option is checked against the field it fills (metalog.cli.options): in range it is taken, at one
past either bound it is one line naming the option (exit status 2, argparse's), never a traceback."""

from __future__ import annotations

import argparse
import io
import math
import shutil
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from metalog.cli import options
from metalog.cli.main import build_parser, main

INT16 = (-(2**15), 2**15 - 1)
INT32 = (-(2**31), 2**31 - 1)
INT64 = (-(2**63), 2**63 - 1)
NON_NEGATIVE_INT16 = (0, INT16[1])
NON_NEGATIVE_INT32, POSITIVE_INT32 = (0, INT32[1]), (1, INT32[1])
NON_NEGATIVE_INT64, POSITIVE_INT64 = (0, INT64[1]), (1, INT64[1])

# (the command before the option, the option, its range, what follows the option)
INTEGER_OPTIONS = [
    (["history", "L"], "--broker", INT32, []),
    (["history", "L", "--topic", "t"], "--partition", NON_NEGATIVE_INT32, []),
    (["why", "L"], "--broker", INT32, []),
    (["snapshot", "images", "L"], "--every", POSITIVE_INT64, []),
    (["log", "append", "L"], "--batch-size", POSITIVE_INT32, []),
    (["log", "append", "L"], "--epoch", NON_NEGATIVE_INT32, []),
    (["log", "append", "L"], "--node-id", NON_NEGATIVE_INT32, []),
    (["log", "append", "L"], "--segment-bytes", POSITIVE_INT32, []),
    (["log", "dump", "L"], "--max-bytes", NON_NEGATIVE_INT64, []),
    (["codec", "explain", "NoOpRecord"], "", NON_NEGATIVE_INT16, ["00"]),  # the positional VERSION
    (["generate", "L"], "--brokers", POSITIVE_INT32, []),
    (["generate", "L"], "--topics", POSITIVE_INT32, []),
    (["generate", "L"], "--partitions", POSITIVE_INT32, []),
    (["generate", "L"], "--records", POSITIVE_INT64, []),
    (["generate", "L"], "--snapshot-every", POSITIVE_INT64, []),
    (["demo"], "--records", POSITIVE_INT64, []),
    (["simulate", "L"], "--partitions", POSITIVE_INT32, []),
    (["assign", "--brokers", "1"], "--partitions", INT32, ["--replication-factor", "1"]),
    (["assign", "--brokers", "1", "--partitions", "1"], "--replication-factor", INT16, []),
    (["assign", "--brokers", "1", "--partitions", "1", "--replication-factor", "1"], "--start-index", INT32, []),
    (["assign", "--brokers", "1", "--partitions", "1", "--replication-factor", "1"], "--start-partition", INT32,
     []),
    (["format", "--log-dirs", "L", "--cluster-id", "UXyU9i5ARn6W00ON2taeWA"], "--node-id", NON_NEGATIVE_INT32, []),
    (["bench"], "--records", POSITIVE_INT64, []),
    (["bench"], "--repeat", POSITIVE_INT32, []),
    (["bench"], "--version", NON_NEGATIVE_INT16, []),
]
PARSER = build_parser()  # (parsing keeps nothing in the parser)
SECONDS_OPTIONS = [(["log", "follow", "L"], "--poll", 86_400), (["bench"], "--min-time", 3_600)]


def argv_of(before: list[str], option: str, value: str, after: list[str]) -> list[str]:
    return [*before, *([f"{option}={value}"] if option else [value]), *after]


def parse(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str | None:
    """None when argparse takes ``argv``; else its one line on stderr."""
    try:
        PARSER.parse_args(argv)
    except SystemExit as e:
        err = capsys.readouterr().err
        assert e.code == 2 and err.count("\n") == 1, err
        return err
    return None


def _path(before: list[str]) -> tuple[str, ...]:
    return tuple(t for t in before[:2] if t.isalpha() and t != "L")


def _number_options(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> set[tuple[tuple[str, ...], str]]:
    """(verb, option) of every option with a type of its own and no choices, in every verb's parser."""
    found = set()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found |= _number_options(sub, (*path, name))
        elif action.type not in (None, str, options.point) and not action.choices:
            found.add((path, (action.option_strings or [""])[0]))
    return found


def test_the_matrix_covers_every_number_option() -> None:
    # a new integer or float option of a verb belongs here (analyze's are the analysis' own; a --seed is any
    # integer, as random.Random takes it; a POINT has its own table, tests/cli/test_points.py)
    listed = {(_path(b), o) for b, o, _, _ in INTEGER_OPTIONS} | {(_path(b), o) for b, o, _ in SECONDS_OPTIONS}
    found = {(path, option) for path, option in _number_options(build_parser())
             if path[0] != "analyze" and option != "--seed"}
    assert found - listed == set()


@pytest.mark.parametrize(("before", "option", "bounds", "after"), INTEGER_OPTIONS,
                         ids=[f"{' '.join(b[:2])} {o or 'VERSION'}" for b, o, _, _ in INTEGER_OPTIONS])
def test_integer_options_at_and_beyond_their_bounds(before: list[str], option: str, bounds: tuple[int, int],
                                                   after: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    low, high = bounds
    for value in (low, high):
        assert parse(argv_of(before, option, str(value), after), capsys) is None, value
    for value in (low - 1, high + 1, 10**20, -(10**20), 2**64):
        err = parse(argv_of(before, option, str(value), after), capsys)
        assert err is not None and f"{value} is out of range" in err and f"{low} to {high}" in err, err
        assert f"argument {option or 'version'}:" in err and "Traceback" not in err
    for text in ("x", "1.5", "", "1" * 5000):
        err = parse(argv_of(before, option, text, after), capsys)
        assert err is not None and ("is not an integer" in err or "is out of range" in err), err


@given(st.sampled_from(INTEGER_OPTIONS), st.integers(-(2**70), 2**70))
def test_an_integer_is_taken_exactly_when_its_field_holds_it(case: tuple[list[str], str, tuple[int, int],
                                                                         list[str]], value: int) -> None:
    before, option, (low, high), after = case
    try:
        args = PARSER.parse_args(argv_of(before, option, str(value), after))
    except SystemExit:
        assert not low <= value <= high
    else:
        assert low <= value <= high
        assert value in vars(args).values()


@pytest.mark.parametrize(("before", "option", "most"), SECONDS_OPTIONS, ids=[o for _, o, _ in SECONDS_OPTIONS])
def test_seconds_are_finite_above_zero_and_bounded(before: list[str], option: str, most: int,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    for text in ("0.05", "1", str(most)):
        assert parse([*before, option, text], capsys) is None, text
    for text in ("nan", "NaN", "inf", "-inf", "0", "-1", "1e300", str(most + 1), str(math.nextafter(most, math.inf)),
                 "x"):
        err = parse([*before, f"{option}={text}"], capsys)
        assert err is not None and f"argument {option}:" in err, err


# ---- the cases, end to end -----------------------------------------------------------------------------
@pytest.mark.parametrize("argv", [
    ["history", "{log}", "--broker", "99999999999999999999"],
    ["log", "append", "{log}", "--epoch", "99999999999"],
    ["log", "follow", "{log}", "--poll", "nan"],
    ["log", "append", "{log}", "--batch-size", "99999999999999999999"],
    ["snapshot", "images", "{log}", "--every", "0"],
    ["demo", "--records", "0"],
    ["log", "dump", "{log}", "--max-bytes", "-1"],
], ids=lambda a: " ".join(a[:1] + a[2:]))
def test_an_option_out_of_range_is_one_line_before_anything_runs(argv: list[str], jbod_dir: Path, tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str],
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    log = tmp_path / "log"
    shutil.copytree(jbod_dir, log)
    monkeypatch.setattr("sys.stdin", io.StringIO('{"name": "NoOpRecord", "version": 0, "data": {}}\n'))
    with pytest.raises(SystemExit) as done:
        main([a.replace("{log}", str(log)) for a in argv])
    out, err = capsys.readouterr()
    assert done.value.code == 2 and out == "" and err.count("\n") == 1, err
    assert err.startswith(f"metalog {argv[0]}") and f"argument {argv[-2]}: " in err
    assert sorted(p.name for p in (log / "__cluster_metadata-0").iterdir()) == sorted(
        p.name for p in (jbod_dir / "__cluster_metadata-0").iterdir())  # nothing was appended


@pytest.mark.parametrize("argv", [
    ["snapshot", "create", "{log}", "--timestamp", "99999999999999999999"],
    ["log", "append", "{log}", "--timestamp", "9223372036854775808ms"],
], ids=lambda a: " ".join(a[:2] + a[3:]))
def test_a_time_beyond_int64_is_one_line(argv: list[str], jbod_dir: Path, tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    log = tmp_path / "log"
    shutil.copytree(jbod_dir, log)
    monkeypatch.setattr("sys.stdin", io.StringIO('{"name": "NoOpRecord", "version": 0, "data": {}}\n'))
    assert main([a.replace("{log}", str(log)) for a in argv]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no timestamp is that far from 1970" in err, err
