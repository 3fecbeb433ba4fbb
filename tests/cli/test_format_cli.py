"""``metalog format`` as a person runs it."""

from __future__ import annotations

from pathlib import Path

import pytest

from metalog.cli.main import main
from metalog.codec.uuid import Uuid
from metalog.log import files

CLUSTER = "MkU3OEVBNTcwNTJENDM2Qg"


def test_format_and_refuse_again(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    dirs = ",".join(str(tmp_path / n) for n in "abc")
    assert main(["format", "--log-dirs", dirs, "--node-id", "2", "--cluster-id", CLUSTER]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 3 and out[0].startswith(f"Formatted {tmp_path / 'a'}: directory.id=")
    for n, line in zip("abc", out, strict=True):
        props = files.read_properties(tmp_path / n / "meta.properties")
        assert line.endswith(props["directory.id"]) and not Uuid.parse(props["directory.id"]).is_reserved
        assert (props["node.id"], props["cluster.id"], props["version"]) == ("2", CLUSTER, "1")
    assert main(["format", "--log-dirs", dirs, "--node-id", "2", "--cluster-id", CLUSTER]) == 1
    assert capsys.readouterr().err == (f"metalog: error: Log directory {tmp_path / 'a'} is already formatted. "
                                       "Use --ignore-formatted to skip it.\n")
    assert main(["format", "--log-dirs", dirs + f",{tmp_path / 'd'}", "--node-id", "2", "--cluster-id", CLUSTER,
                 "--ignore-formatted"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "3 directories were already formatted and left as they were"
