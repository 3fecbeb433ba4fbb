"""``metalog replay`` and ``metalog diff`` as a person runs them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from metalog.cli.main import main
from tests.conftest import kafka_final_image, load_vectors

SCENARIO = load_vectors()["scenarioJbod"]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_replay_json_is_the_final_image(capsys: pytest.CaptureFixture[str], jbod_dir: Path) -> None:
    code, out, _ = run(capsys, "replay", str(jbod_dir), "--format", "json")
    assert code == 0 and json.loads(out) == kafka_final_image(SCENARIO)


def test_replay_table(capsys: pytest.CaptureFixture[str], jbod_dir: Path) -> None:
    code, out, _ = run(capsys, "replay", str(jbod_dir), "--at", "12", "--partitions")
    assert code == 0
    assert out.startswith("offset 12 at 2023-11-14T22:13:24.000Z (from empty, 12 data records replayed)")
    assert "foo-0      1       0      [1,2,3]   [1,2,3]  -        UNASSIGNED,Fg3mFhcV,bv9TEYi4" in out


def test_replay_at_time(capsys: pytest.CaptureFixture[str], jbod_dir: Path) -> None:
    code, out, _ = run(capsys, "replay", str(jbod_dir), "--at", "2023-11-14T22:13:24Z", "--format", "json")
    assert code == 0 and json.loads(out)["topics"]["foo"]["partitions"]["0"]["leader"] == 1


def test_diff_json(capsys: pytest.CaptureFixture[str], jbod_dir: Path) -> None:
    code, out, _ = run(capsys, "diff", str(jbod_dir), "--from", "12", "--to", "end", "--json")
    d = json.loads(out)
    assert code == 0 and d["brokers"]["fenced"] == [3] and (d["fromOffset"], d["toOffset"]) == (12, 24)
    code, out, _ = run(capsys, "diff", str(jbod_dir), "--from", "start", "--to", "12")
    assert code == 0 and "brokers registered: 1, 2, 3" in out and "topics created: foo" in out
    # the empty state before the log is "start", its metadata.version absent ("-"), not -1 and None
    assert out.splitlines()[:2] == ["changes from start to offset 12", "  metadata.version: - -> 3.7-IV2"]


def test_replay_inside_a_batch_says_which_state_it_shows(capsys: pytest.CaptureFixture[str], jbod_dir: Path,
                                                        tmp_path: Path) -> None:
    code, out, err = run(capsys, "replay", str(jbod_dir), "--at", "15")
    assert code == 0 and err == ""
    assert out.splitlines()[:2] == ["offset 14 at 2023-11-14T22:13:25.000Z (from empty, 15 data records replayed)",
                                    "offset 15 is inside batch 15..16; the state shown is the one published at 14"]
    code, out, err = run(capsys, "replay", str(jbod_dir), "--at", "15", "--format", "json")
    assert code == 0 and err == "offset 15 is inside batch 15..16; the state shown is the one published at 14\n"
    assert json.loads(out)["topics"]["foo"]["partitions"]["0"]["leader"] == 1  # broker 2 leads from 16 on


def test_save_image_only_at_a_batch_end(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    from tests.analysis import crafted as c

    root = c.write(tmp_path / "h", [[c.feature(17), c.broker(1, 10), c.begin(), c.broker(2, 20)], [c.end()]])
    code, out, err = run(capsys, "replay", str(root), "--at", "3", "--save-image")
    assert code == 0 and out.splitlines()[1] == ("a transaction open since offset 2 is not committed at 3; the "
                                                 "state shown is the one published at 1")
    assert err == ("warning: no state image written: the state shown was published at offset 1, inside batch "
                   "0..3: state images are written only at batch ends\n")
    code, out, err = run(capsys, "replay", str(root), "--save-image")
    assert code == 0 and err == f"state image written: {root / 'metalog-images' / f'{4:020d}.image'}\n"


def test_diff_compares_published_states_and_names_them(capsys: pytest.CaptureFixture[str], jbod_dir: Path) -> None:
    code, out, err = run(capsys, "diff", str(jbod_dir), "--from", "15", "--to", "2023-11-14T22:13:26.5Z", "--json")
    assert err == "--from 15: offset 15 is inside batch 15..16; the state compared is the one published at 14\n"
    d = json.loads(out)
    assert code == 0 and (d["fromOffset"], d["toOffset"]) == (14, 16)
    assert d["partitions"][0]["changes"]["leader"] == {"from": 1, "to": 2}


@pytest.mark.parametrize("verb", [["replay"], ["diff"], ["snapshot", "create"], ["log", "append"]])
def test_every_verb_taking_a_time_names_the_forms(capsys: pytest.CaptureFixture[str], verb: list[str]) -> None:
    with pytest.raises(SystemExit):
        main([*verb, "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "ISO 8601" in text and "epoch milliseconds" in text


@pytest.mark.parametrize(("argv", "message"), [
    (["replay", "/nonexistent/dir"], "no __cluster_metadata-0 directory"),
    (["replay", "{jbod}", "--at", "99"], "metalog: error: --at: offset 99 is past the end of the log (last offset 24)"),
    (["replay", "{jbod}", "--at=-1"], "--at: offset -1 is before the log"),
    (["replay", "{jbod}", "--at", "1700000000"],
     "--at: offset 1700000000 is past the end of the log (last offset 24); 1700000000 looks like epoch seconds: "
     "that time is 1700000000000ms"),
    (["replay", "{jbod}", "--at", "2023-11-14T22:13:19Z"],
     "--at: 2023-11-14T22:13:19.000Z is before the log's first batch (offset 0, at 2023-11-14T22:13:20.000Z)"),
    (["diff", "{jbod}", "--from", "20", "--to", "10"], "--from 20 (offset 20) is after --to 10 (offset 10)"),
    (["diff", "{jbod}", "--from", "0", "--to", "1700000005000"],
     "--to: offset 1700000005000 is past the end of the log (last offset 24); for a time in epoch milliseconds "
     "write 1700000005000ms"),
    (["snapshot", "create", "{jbod}", "--timestamp", "1700000000"], "looks like seconds"),
])
def test_errors_are_one_line(capsys: pytest.CaptureFixture[str], jbod_dir: Path, argv: list[str],
                             message: str) -> None:
    code, out, err = run(capsys, *[a.replace("{jbod}", str(jbod_dir)) for a in argv])
    assert code == 1 and out == ""
    assert err.count("\n") == 1 and message in err and "Traceback" not in err
