"""``metalog replay`` and ``metalog diff`` as a person runs them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from metalog.cli.main import main
from tests.conftest import load_vectors

SCENARIO = load_vectors()["scenarioJbod"]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_replay_json_is_the_final_image(capsys: pytest.CaptureFixture[str], jbod_dir: Path) -> None:
    code, out, _ = run(capsys, "replay", str(jbod_dir), "--format", "json")
    assert code == 0 and json.loads(out) == SCENARIO["finalImage"]


def test_replay_table(capsys: pytest.CaptureFixture[str], jbod_dir: Path) -> None:
    code, out, _ = run(capsys, "replay", str(jbod_dir), "--to-offset", "12", "--partitions")
    assert code == 0
    assert out.startswith("offset 12 at 2023-11-14T22:13:24.000Z (from empty, 12 records replayed)")
    assert "foo-0      1       0      [1,2,3]   [1,2,3]  -        UNASSIGNED,Fg3mFhcV,bv9TEYi4" in out


def test_replay_at_time(capsys: pytest.CaptureFixture[str], jbod_dir: Path) -> None:
    code, out, _ = run(capsys, "replay", str(jbod_dir), "--at-time", "2023-11-14T22:13:24Z", "--format", "json")
    assert code == 0 and json.loads(out)["topics"]["foo"]["partitions"]["0"]["leader"] == 1


def test_diff_json(capsys: pytest.CaptureFixture[str], jbod_dir: Path) -> None:
    code, out, _ = run(capsys, "diff", str(jbod_dir), "--from", "12", "--to", "end", "--json")
    d = json.loads(out)
    assert code == 0 and d["brokers"]["fenced"] == [3] and (d["fromOffset"], d["toOffset"]) == (12, 24)
    code, out, _ = run(capsys, "diff", str(jbod_dir), "--from", "start", "--to", "12")
    assert code == 0 and "brokers registered: 1, 2, 3" in out and "topics created: foo" in out


@pytest.mark.parametrize(("argv", "message"), [
    (["replay", "/nonexistent/dir"], "no __cluster_metadata-0 directory"),
    (["replay", "{jbod}", "--to-offset", "99"], "past the end of the log"),
    (["replay", "{jbod}", "--at-time", "soon"], "not a time"),
    (["diff", "{jbod}", "--from", "20", "--to", "10"], "is after --to"),
])
def test_errors_are_one_line(capsys: pytest.CaptureFixture[str], jbod_dir: Path, argv: list[str],
                             message: str) -> None:
    code, out, err = run(capsys, *[a.replace("{jbod}", str(jbod_dir)) for a in argv])
    assert code == 1 and out == ""
    assert err.count("\n") == 1 and message in err and "Traceback" not in err
