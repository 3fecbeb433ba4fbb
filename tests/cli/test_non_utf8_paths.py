"""A log directory whose name is not UTF-8 works with every verb (``analyze`` is the analysis' own), and its name
is printed escaped (``bad\\xff\\xfe``), as on a terminal whose encoding is UTF-8 (stdout strict, as Python sets it
under a UTF-8 locale: a name Python keeps as surrogates cannot be written there raw)."""

from __future__ import annotations

import io
import os
import shutil
import sys
from pathlib import Path

import pytest

from metalog.cli.main import main
from tests.log.test_follow import Follower

NAME = os.fsdecode(b"bad\xff\xfe")  # "bad\udcff\udcfe"
SHOWN = "bad\\xff\\xfe"
NOOP = '{"name": "NoOpRecord", "version": 0, "data": {}}\n'


@pytest.fixture
def bad(jbod_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of Kafka's KIP-858 log in ``bad\xff\xfe``, named relative to the working directory."""
    shutil.copytree(jbod_dir, tmp_path / NAME)
    monkeypatch.chdir(tmp_path)
    return Path(NAME)


def run_on_a_utf8_terminal(argv: list[str], monkeypatch: pytest.MonkeyPatch,
                           stdin: str = "") -> tuple[int, str, str]:
    """``main(argv)`` with stdout and stderr as Python opens them on a UTF-8 terminal: stdout strict, stderr
    backslashreplace."""
    out, err = io.BytesIO(), io.BytesIO()
    stdout = io.TextIOWrapper(out, encoding="utf-8", errors="strict", write_through=True)
    stderr = io.TextIOWrapper(err, encoding="utf-8", errors="backslashreplace", write_through=True)
    monkeypatch.setattr(sys, "stdout", stdout)
    monkeypatch.setattr(sys, "stderr", stderr)
    monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
    code = main(argv)
    return code, out.getvalue().decode(), err.getvalue().decode()


VERBS = [
    (["replay", "{d}"], None),
    (["replay", "{d}", "--format", "json"], None),
    (["diff", "{d}", "--from", "0", "--to", "end"], None),
    (["diff", "{d}", "--from", "0", "--to", "end", "--json"], None),
    (["history", "{d}", "--topic", "foo"], None),
    (["shell", "{d}", "-c", "ls /image; cat /image/provenance"], None),
    (["log", "dump", "{d}"], f"Dumping {SHOWN}/__cluster_metadata-0/00000000000000000000.log"),
    (["log", "dump", "--json", "{d}"], '"file":"bad\\udcff\\udcfe/__cluster_metadata-0/00000000000000000000.log"'),
    (["log", "verify", "{d}"], f"{SHOWN}: 9 batches, 24 data records, 1 control records"),
    (["log", "recover", "{d}"], f"{SHOWN}: log start offset 0, log end offset 25"),
    (["log", "append", "{d}"], '"baseOffset": 25'),
    (["snapshot", "create", "{d}"], f"{SHOWN}/__cluster_metadata-0/00000000000000000025-0000000001.checkpoint: the "
                                    f"state through offset 24"),
    (["snapshot", "images", "{d}", "--every", "10"], f"{SHOWN}/metalog-images/00000000000000000020.image"),
    (["generate", "{d}/generated", "--records", "100"], f"control record to {SHOWN}/generated"),
    (["format", "--log-dirs", "{d}/broker", "--node-id", "1", "--cluster-id", "UXyU9i5ARn6W00ON2taeWA"],
     f"Formatted {SHOWN}/broker: directory.id="),
    (["simulate", "{d}/simulated"], f"metalog replay {SHOWN}/simulated/controller --partitions"),
    (["why", "{d}", "foo-0"], "foo-0 at offset 24"),
    (["quorum", "describe", "{d}"], "LeaderId:               3000"),
]


@pytest.mark.parametrize(("argv", "expected"), VERBS, ids=lambda v: " ".join(v[:3]) if isinstance(v, list) else "")
def test_every_verb_takes_a_directory_whose_name_is_not_utf8(argv: list[str], expected: str | None, bad: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    code, out, err = run_on_a_utf8_terminal([a.replace("{d}", str(bad)) for a in argv], monkeypatch, NOOP)
    assert code == 0, err
    assert expected is None or expected in out, out
    assert all(line.isprintable() for line in (out + err).split("\n"))


def test_the_snapshots_list_and_verify(bad: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert run_on_a_utf8_terminal(["snapshot", "create", str(bad)], monkeypatch)[0] == 0
    snapshot = f"{SHOWN}/__cluster_metadata-0/00000000000000000025-0000000001.checkpoint"
    code, out, _ = run_on_a_utf8_terminal(["snapshot", "list", str(bad)], monkeypatch)
    assert code == 0 and out.split("\n")[1].endswith(f"  {snapshot}")
    code, out, _ = run_on_a_utf8_terminal(["snapshot", "verify", str(bad)], monkeypatch)
    assert code == 0 and out.startswith(f"{snapshot}: ok (")
    code, out, _ = run_on_a_utf8_terminal(["snapshot", "list", "--json", str(bad)], monkeypatch)
    assert code == 0 and '"file": "bad\\udcff\\udcfe/' in out


def test_storage_info(bad: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    formatted = ["--log-dirs", f"{bad}/broker", "--node-id", "1", "--cluster-id", "UXyU9i5ARn6W00ON2taeWA"]
    assert run_on_a_utf8_terminal(["format", *formatted], monkeypatch)[0] == 0
    code, out, err = run_on_a_utf8_terminal(["storage", "info", f"{bad}/broker"], monkeypatch)
    assert code == 0 and out.startswith(f"Found log directory:\n  {SHOWN}/broker\n"), out + err


def test_an_index_dump_names_its_file(bad: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert run_on_a_utf8_terminal(["log", "recover", str(bad)], monkeypatch)[0] == 0  # writes the indexes
    code, out, _ = run_on_a_utf8_terminal(
        ["log", "dump", str(bad / "__cluster_metadata-0" / "00000000000000000000.index")], monkeypatch)
    assert code == 0 and out.startswith(f"Dumping {SHOWN}/__cluster_metadata-0/00000000000000000000.index\n")


def test_an_error_names_the_directory_escaped(bad: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    code, out, err = run_on_a_utf8_terminal(["replay", str(bad / "nope")], monkeypatch)
    assert code == 1 and out == "" and err == (f"metalog: error: {SHOWN}/nope: no __cluster_metadata-0 directory here: "
                                               "not a KRaft metadata log directory\n")


def test_log_follow(bad: Path) -> None:
    follower = Follower(str(bad), "--from", "24", "--json", "--poll", "0.05")
    try:
        line = follower.next()
    finally:
        assert follower.stop() == 0
    assert '"file":"' in line and "bad\\udcff\\udcfe/__cluster_metadata-0/00000000000000000000.log" in line
