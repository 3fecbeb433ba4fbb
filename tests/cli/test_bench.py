"""``metalog bench`` on tiny sizes: one table, peers compared, the user's own message, clear errors."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from metalog.bench import cores
from metalog.cli.main import main
from metalog.codec import core

TINY = ["--min-time", "0.001", "--repeat", "1", "--records", "2000"]
# with the compiled codec, each decode row has a row for the pure Python core beside it (timed in the same run)
PURE_ROWS = 1 if core.compiled_active() else 0
# with the compiled log core, the log's read and scan rows have a row for the pure log core beside them
PURE_LOG_ROWS = 1 if cores.compiled_log_core() else 0


def _status_line(out: str) -> None:
    """The table says which codec core and which log core ran."""
    assert f"codec: {core.status()}" in out.splitlines() and f"log: {cores.log_status()}" in out.splitlines()


def _table(out: str) -> list[list[str]]:
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("benchmark"))
    return [line.split("  ") for line in lines[start + 2:] if line and not line.startswith("note:")]


def test_bench_all_prints_one_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", *TINY]) == 0
    out = capsys.readouterr().out
    rows = _table(out)
    kinds = [r[0] for r in rows]
    assert kinds.count("codec") == 8 + 4 * PURE_ROWS and kinds.count("log") == 4 + 3 * PURE_LOG_ROWS
    assert kinds.count("replay") == 1 + PURE_LOG_ROWS
    assert "metalog/kio" in out and "metalog/kafka-python" in out and "metalog/aiokafka" in out
    _status_line(out)
    codec = [line for line in out.splitlines() if line.startswith("codec ")]
    assert len([line for line in codec if "decode, pure Python core" in line]) == 4 * PURE_ROWS
    assert all(line.rstrip().endswith("x") for line in codec)  # both peers are installed in the test env
    assert "from offset 0" in out and "rec/s" in out


def test_bench_log_only(capsys: pytest.CaptureFixture[str]) -> None:
    """The log's readers against kafka-python's and aiokafka's (both installed here), on both log cores."""
    assert main(["bench", "log", *TINY]) == 0
    out = capsys.readouterr().out
    rows = _table(out)
    assert {r[0] for r in rows} == {"log"}
    reads = [line for line in out.splitlines() if line.startswith("log ") and "append" not in line]
    assert len(reads) == 3 + 3 * PURE_LOG_ROWS and all(line.rstrip().endswith("x") for line in reads)
    assert len([line for line in reads if "pure Python log core" in line]) == 3 * PURE_LOG_ROWS


def test_bench_own_message(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    record = {"type": "FEATURE_LEVEL_RECORD", "version": 0,
              "data": {"name": "metadata.version", "featureLevel": 17}}
    (tmp_path / "m.json").write_text(json.dumps(record))
    assert main(["bench", "--message", "FeatureLevelRecord", "--version", "0", "--json", str(tmp_path / "m.json"),
                 *TINY]) == 0
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if line.startswith("codec ")]
    assert len(rows) == 2 + PURE_ROWS and "FeatureLevelRecord v0 encode (20 B)" in rows[0]
    assert f"codec: {core.status()}" in out.splitlines() and "log:" not in out  # (no log core ran)
    assert "kio is compared on the built-in messages only" in out


@pytest.mark.parametrize(("args", "message"), [
    (["--message", "FeatureLevelRecrd", "--version", "0", "--json", "X"], "unknown message 'FeatureLevelRecrd'"),
    (["--message", "FeatureLevelRecord", "--version", "9", "--json", "X"], "has no version 9"),
    (["--message", "FeatureLevelRecord", "--version", "0", "--json", "MISSING"], "No such file or directory"),
    (["--message", "FeatureLevelRecord"], "go together"),
    (["--message", "FeatureLevelRecord", "--version", "0", "--json", "BAD"], "is not JSON"),
    (["--message", "FeatureLevelRecord", "--version", "0", "--json", "DEEP"], "is not JSON: arrays or objects nested"),
])
def test_bench_bad_message(args: list[str], message: str, tmp_path: Path,
                           capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "X").write_text('{"name": "metadata.version", "featureLevel": 1}')
    (tmp_path / "BAD").write_text("{not json")
    (tmp_path / "DEEP").write_text("[" * 100_000 + "]" * 100_000)
    args = [str(tmp_path / a) if a in ("X", "MISSING", "BAD", "DEEP") else a for a in args]
    assert main(["bench", "codec", *args]) == 1
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_bench_without_the_peers(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the bench extra: metalog's own rates, dashes for the peers, and a note saying how to add them."""
    import sys

    for module in ("metalog.bench.kio_peer", "metalog.bench.kafka_python_peer", "kafka.record.memory_records",
                   "aiokafka.record.memory_records"):
        monkeypatch.setitem(sys.modules, module, None)  # makes the import fail
    assert main(["bench", "codec", *TINY]) == 0
    assert main(["bench", "log", *TINY]) == 0
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if line.startswith(("codec ", "log "))]
    assert len(rows) == 12 + 4 * PURE_ROWS + 3 * PURE_LOG_ROWS and all(line.endswith("-") for line in rows)
    assert "kio not installed, not compared (pip install 'metalog[bench]')" in out
    assert "kafka-python not installed" in out and "aiokafka not installed" in out


def _shape(lines: list[str]) -> tuple[list[str], list[str], list[str]]:
    """What a bench output shows apart from the machine's figures and which cores ran: the lines before the table
    by their labels, the table's columns, the notes."""
    table = next(i for i, line in enumerate(lines) if line.startswith("benchmark"))
    return ([line.split(":")[0] for line in lines[1:table]], lines[table].split(),
            [line for line in lines if line.startswith("note:")])


def test_bench_codec_prints_what_the_docs_show(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """docs/benchmarks.md's example of ``bench codec --message``: the same header lines, columns and note (the
    docs' example test does not run benchmarks). On main the output had a log: line and an aiokafka column the
    page lacked."""
    readme = (Path(__file__).resolve().parents[2] / "docs" / "benchmarks.md").read_text().splitlines()
    command = "$ metalog bench codec --message PartitionRecord --version 1 --json my-record.json"
    start = readme.index(command) + 1
    shown = readme[start:next(i for i in range(start, len(readme)) if readme[i].startswith(("$ ", "```")))]
    record = readme[readme.index("$ cat my-record.json") + 1]
    (tmp_path / "my-record.json").write_text(record)
    argv = command[2:].split()[1:]
    assert main([*argv[:-1], str(tmp_path / "my-record.json"), *TINY]) == 0
    out = capsys.readouterr().out.splitlines()
    assert _shape(out) == _shape(shown)
    assert [line.split("  ")[1].strip() for line in out if line.startswith("codec ")] == \
        [line.split("  ")[1].strip() for line in shown if line.startswith("codec ") and
         (PURE_ROWS or "pure Python core" not in line)]


@pytest.mark.parametrize(("part", "labels", "columns"), [
    ("codec", ["codec"], ["metalog/kio", "metalog/kafka-python"]),
    ("log", ["log"], ["metalog/aiokafka", "metalog/kafka-python"]),
])
def test_bench_shows_the_cores_and_peers_of_what_it_ran(part: str, labels: list[str], columns: list[str],
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", part, *TINY]) == 0
    labels_shown, head, _ = _shape(capsys.readouterr().out.splitlines())
    assert labels_shown == labels and head == ["benchmark", "what", "rate", "MB/s", *columns]
    assert re.fullmatch(r"metalog/[a-z-]+", head[-1])
