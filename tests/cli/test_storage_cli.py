"""``metalog storage info`` as kafka-storage info prints it, with each directory's facts; exit status 1 on a
problem; --config; names escaped."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from metalog.log import files
from metalog.storage.log_dirs import format_log_dirs
from tests.cli.running import help_text, run

CLUSTER = "MkU3OEVBNTcwNTJENDM2Qg"


def test_help_has_examples(capsys: pytest.CaptureFixture[str]) -> None:
    out = help_text(["storage", "info"], capsys)
    assert "examples:" in out and "metalog storage info --config server.properties" in out


def test_info_as_kafka_prints_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ((a, ida),) = format_log_dirs([tmp_path / "a"], 7, CLUSTER)
    code, out, err = run(["storage", "info", str(a), str(tmp_path / "nope")], capsys)
    assert (code, err) == (1, "")
    assert out.splitlines() == [
        "Found log directory:",
        f"  {a}",
        "",
        f"Found metadata: {{cluster.id={CLUSTER}, directory.id={ida}, node.id=7, version=1}}",
        "",
        "Found in each directory:",
        f"  {a}: directory.id={ida}",
        "",
        "Found problem:",
        f"  {tmp_path / 'nope'} does not exist",
    ]


def test_config_names_the_directories(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    done = dict(format_log_dirs([tmp_path / "d1", tmp_path / "d2", tmp_path / "meta"], 3, CLUSTER))
    config = tmp_path / "server.properties"
    config.write_text(f"process.roles=broker\nlog.dirs={tmp_path / 'd1'}, {tmp_path / 'd2'}\n"
                      f"metadata.log.dir={tmp_path / 'meta'}\n")
    code, out, _ = run(["storage", "info", "--config", str(config), "--json"], capsys)
    info = json.loads(out)
    assert code == 0 and info["problems"] == []
    assert [d["metaProperties"]["directory.id"] for d in info["directories"]] == \
        [str(done[tmp_path / n]) for n in ("d1", "d2", "meta")]
    config.write_text("process.roles=broker\n")
    code, out, err = run(["storage", "info", "--config", str(config)], capsys)
    assert (code, out, err) == (1, "", f"metalog: error: {config} names no log.dirs, log.dir or metadata.log.dir\n")
    code, out, err = run(["storage", "info"], capsys)
    assert code == 1 and err.count("\n") == 1


def test_names_from_files_are_escaped(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = tmp_path / "d"
    d.mkdir()
    (d / files.META_PROPERTIES).write_text("version=1\ncluster.id=\x1b[31mred\nnode.id=1\n")
    code, out, _ = run(["storage", "info", str(d)], capsys)
    assert code == 0 and "\x1b" not in out and "cluster.id=\\x1b[31mred" in out
