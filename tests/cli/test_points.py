"""One way to name a point, in every verb: ``--at POINT`` for a state (replay, shell, snapshot create, why),
``--from POINT`` / ``--to POINT`` for a range (diff, history, log dump, log follow).
A POINT is an offset (a plain integer), a time (ISO 8601, or epoch milliseconds written ``<N>ms``), ``start`` or
``end``; one parser (``metalog.replay.points.parse_point``) and one error text.

The table runs on Kafka's KIP-858 files, whose batches are 0..0 (22:13:20), 1..2, 3..5, 6..8, 9..12, 13..14,
15..16 (22:13:26), 17..20 and 21..24 (22:13:28): offset 16, 2023-11-14T22:13:26Z and 1700000006000ms all name
the batch 15..16.
"""

from __future__ import annotations

import io
import json
import re
import shutil
from collections.abc import Callable
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from metalog.cli.main import main
from metalog.errors import PointError
from metalog.replay.points import END, START, Point, parse_point
from tests.log.test_follow import Follower

TS = 1_700_000_000_000
FORMS = {"offset": "16", "iso": "2023-11-14T22:13:26Z", "ms": "1700000006000ms", "start": "start", "end": "end"}
NEVER = "start is the empty state before the log, which Kafka's loader never published (give an offset, a time or end)"
NOT_A_POINT = ("not a point: 'nope' (give an offset (a plain integer), a time (ISO 8601 such as "
               "2024-05-01T10:32:00Z, +02:00 or naive meaning UTC, or epoch milliseconds written 1714559520000ms), "
               "start or end)")


def run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as e:
            code = int(e.code or 0)
    return code, out.getvalue(), err.getvalue()


def first_number(pattern: str) -> Callable[[str, str], int | str]:
    def named(out: str, err: str) -> int | str:
        m = re.search(pattern, out + err)
        return (err or out).strip() if m is None else int(m[1]) if m[1].isdigit() else m[1]
    return named


def record_offsets(out: str, err: str) -> int | str:
    offsets = [r["offset"] for line in out.splitlines() for r in json.loads(line).get("records", [])]
    return err.strip() if not offsets else f"{offsets[0]}..{offsets[-1]}"


# (the verb with {P} for the point, what the verb's output says the point named, and that for each form)
TABLE = [
    (["replay", "{log}", "--at", "{P}"], first_number(r"^offset (\d+) at "),
     {"offset": 16, "iso": 16, "ms": 16, "end": 24, "start": f"metalog: error: --at: {NEVER}"}),
    (["shell", "{log}", "--at", "{P}", "-c", "cat /image/provenance"], first_number(r"^offset (\d+), epoch"),
     {"offset": 16, "iso": 16, "ms": 16, "end": 24, "start": f"metalog: error: --at: {NEVER}"}),
    (["shell", "{log}", "-c", "at {P}"], first_number(r"^offset (\d+) at "),
     {"offset": 16, "iso": 16, "ms": 16, "end": 24, "start": f"at: {NEVER}"}),
    (["why", "{log}", "foo-0", "--at", "{P}"], first_number(r"^foo-0 at offset (\d+) "),
     {"offset": 16, "iso": 16, "ms": 16, "end": 24, "start": f"metalog: error: --at: {NEVER}"}),
    (["snapshot", "create", "{copy}", "--at", "{P}"], first_number(r"the state through offset (\d+)"),
     {"offset": 16, "iso": 16, "ms": 16, "end": 24, "start": f"metalog: error: --at: {NEVER}"}),
    (["diff", "{log}", "--from", "{P}", "--to", "end"], first_number(r"^changes from (?:offset )?(\d+|start) to"),
     {"offset": 16, "iso": 16, "ms": 16, "end": 24, "start": "start"}),
    (["diff", "{log}", "--from", "start", "--to", "{P}"], first_number(r"^changes from start to offset (\d+)"),
     {"offset": 16, "iso": 16, "ms": 16, "end": 24, "start": "changes from start to start\n  no changes"}),
    (["history", "{log}", "--topic", "nope", "--from", "{P}"], first_number(r"offsets (\d+)\.\."),
     {"offset": 16, "iso": 15, "ms": 15, "end": 24, "start": 0}),
    (["history", "{log}", "--topic", "nope", "--to", "{P}"], first_number(r"offsets 0\.\.(\d+)"),
     {"offset": 16, "iso": 16, "ms": 16, "end": 24,
      "start": "no batch of the log lies between --from start and --to start"}),
    (["log", "dump", "--json", "--from", "{P}", "{log}"], record_offsets,
     {"offset": "16..24", "iso": "15..24", "ms": "15..24", "start": "0..24",
      "end": "metalog: error: --from end: a dump takes start as --from and end as --to, or an offset or a time"}),
    (["log", "dump", "--json", "--to", "{P}", "{log}"], record_offsets,
     {"offset": "0..16", "iso": "0..16", "ms": "0..16", "end": "0..24",
      "start": "metalog: error: --to start: a dump takes start as --from and end as --to, or an offset or a time"}),
]


def _ids() -> list[str]:
    return [f"{' '.join(argv[:2])} {'{P}' in argv and argv[argv.index('{P}') - 1] or argv[-1]} {form}"
            for argv, _, expected in TABLE for form in expected]


@pytest.mark.parametrize(("argv", "named", "expected", "form"),
                         [(argv, named, expected[form], form) for argv, named, expected in TABLE for form in expected],
                         ids=_ids())
def test_every_verb_reads_every_form_of_a_point(argv: list[str], named: Callable[[str, str], int | str],
                                               expected: int | str, form: str, jbod_dir: Path,
                                               tmp_path: Path) -> None:
    copy = tmp_path / "log"
    shutil.copytree(jbod_dir, copy)
    code, out, err = run([a.replace("{log}", str(jbod_dir)).replace("{copy}", str(copy))
                          .replace("{P}", FORMS[form]) for a in argv])
    assert named(out, err) == expected, (out, err)


@pytest.mark.parametrize("argv", [argv for argv, _, _ in TABLE] + [["log", "follow", "{log}", "--from", "{P}"]],
                         ids=lambda a: " ".join(a[:2]) + " " + (a[a.index("{P}") - 1] if "{P}" in a else a[-1]))
@pytest.mark.parametrize(("text", "message"), [
    ("nope", NOT_A_POINT),
    ("99999999999999999999", "99999999999999999999: no offset is that far (offsets are an int64, "
                             "-9223372036854775808 to 9223372036854775807)"),
    ("9223372036854775808ms", "9223372036854775808ms: no timestamp is that far from 1970"),
    ("1.5", "not a point: '1.5'"),
])
def test_a_bad_point_is_the_same_one_line_in_every_verb(argv: list[str], text: str, message: str,
                                                       jbod_dir: Path) -> None:
    code, out, err = run([a.replace("{log}", str(jbod_dir)).replace("{copy}", str(jbod_dir))
                          .replace("at {P}", f"at {text}").replace("{P}", text) for a in argv])
    assert err.count("\n") == 1 and message in err, err
    assert code == (1 if argv[3:4] == ["at {P}"] else 2), err  # argparse's status; the shell's at fails the run


@pytest.mark.parametrize(("form", "base"), [("offset", 15), ("iso", 15), ("ms", 15), ("start", 0)])
def test_log_follow_starts_where_the_point_names(form: str, base: int, jbod_dir: Path) -> None:
    follower = Follower(str(jbod_dir), "--from", FORMS[form], "--json", "--poll", "0.05")
    try:
        assert json.loads(follower.next())["baseOffset"] == base
    finally:
        assert follower.stop() == 0


# ---- the grammar itself ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(("text", "point"), [
    ("16", Point("offset", 16)), (" 16 ", Point("offset", 16)), ("-1", Point("offset", -1)), ("0", Point("offset", 0)),
    ("1700000006000", Point("offset", 1_700_000_006_000)),  # a plain integer is an offset, however long
    ("1700000006000ms", Point("time", TS + 6000)), ("2023-11-14T22:13:26Z", Point("time", TS + 6000)),
    ("2023-11-14T23:13:26+01:00", Point("time", TS + 6000)), ("2023-11-14T22:13:26", Point("time", TS + 6000)),
    ("2023-11-14", Point("time", TS - 80_000_000)), ("start", START), ("end", END),
])
def test_the_forms(text: str, point: Point) -> None:
    assert parse_point(text) == point


@pytest.mark.parametrize("text", ["", "nope", "1.5", "16s", "ms", "END", "start1", "2023-13-01", "٣", "1e3"])
def test_anything_else_is_not_a_point(text: str) -> None:
    with pytest.raises(PointError, match=re.escape(f"not a point: {text!r} (give an offset (a plain integer)")):
        parse_point(text)


@given(st.integers(-(2**63), 2**63 - 1))
def test_every_offset_and_every_time_reads_back_from_its_own_text(n: int) -> None:
    assert parse_point(str(n)) == Point("offset", n)
    assert parse_point(str(Point("time", n))) == Point("time", n)  # (shown as ISO 8601, or <N>ms beyond a datetime)


@given(st.text(max_size=30))
def test_any_text_is_a_point_or_one_point_error(text: str) -> None:
    try:
        point = parse_point(text)
    except PointError as e:
        assert "\n" not in str(e)
    else:
        assert point.kind in ("offset", "time", "start", "end")
