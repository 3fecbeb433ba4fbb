"""What names a cluster in the analysis' tables."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from metalog.analysis.result import cluster_name
from metalog.analysis.tables import read_table
from metalog.cli.main import main
from tests.analysis.test_timeline import jbod_transition


def test_a_directory_name_that_is_not_utf8_has_its_bytes_escaped(tmp_path: Path) -> None:
    assert cluster_name(Path(os.fsdecode(b"caf\xe9-\xff"))) == "caf\\xe9-\\xff"
    assert cluster_name(tmp_path / "café") == "café"


def test_analyze_a_log_directory_whose_name_is_not_utf8(tmp_path: Path) -> None:
    """Before: UnicodeEncodeError from pyarrow (and from the CSV and report writers)."""
    pytest.importorskip("pyarrow")
    log = jbod_transition(tmp_path / os.fsdecode(b"caf\xe9"))
    out = tmp_path / "out"
    assert main(["analyze", str(log), "--out", str(out), "--engine", "python", "--csv"]) == 0
    rows = read_table(out / "timeline_batches")
    assert rows and {r["cluster"] for r in rows} == {"caf\\xe9"}
    assert read_table(out / "timeline_batches.csv") == rows
    assert 'cluster="caf\\\\xe9"' in (out / "controller_metrics.om").read_text()
