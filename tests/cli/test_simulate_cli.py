"""``metalog simulate`` plays the KIP-858 story and leaves a log that replays to what it printed."""

from __future__ import annotations

from pathlib import Path

import pytest

from metalog.cli.main import main
from metalog.replay.history import MetadataHistory


def test_simulate_then_replay(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "story"
    assert main(["simulate", str(out)]) == 0
    text = capsys.readouterr().out
    assert "4. each broker placed its replicas and reported them: {1: 6, 2: 6, 3: 0}" in text
    assert "5. broker 1's first log dir failed" in text
    with MetadataHistory(out / "controller") as h:
        image = h.state_at().image
    foo = image.topic("foo")
    offline = {pid: image.offline_replicas(p) for pid, p in foo.partitions.items()}
    assert any(offline.values()) and all(o in ([], [1]) for o in offline.values())
    for pid, replicas in offline.items():
        if replicas:
            assert 1 not in foo.partitions[pid].isr and foo.partitions[pid].leader != 1
    assert main(["simulate", str(out)]) == 1  # not over a non-empty directory
    assert "is not empty" in capsys.readouterr().err
