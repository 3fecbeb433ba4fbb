"""The property "damage is never answered silently", over every batch of a small log with its indexes.

Each header field outside the CRC (baseOffset, batchLength, partitionLeaderEpoch, magic) and one byte inside
it, damaged one at a time in every batch: every reader either fails with a one-line error naming file and
byte or gives exactly the undamaged answer (the log's last batch may instead be cut as a torn tail on open,
which is reported, as Kafka's recovery does: LogSegment.recover); then ``log recover --repair`` and ``log
verify`` pass and the state at the end is the undamaged state before the damaged batch (LogLoader.recoverLog
cuts at the first invalid batch and drops what follows).
"""

from __future__ import annotations

import contextlib
import io
import re
import shutil
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from metalog.analysis.pipeline import analyze_log
from metalog.cli.main import main
from metalog.errors import MetalogError
from metalog.log import MetadataLog
from metalog.log.verify import verify_log
from metalog.replay.history import MetadataHistory
from metalog.state.image import EMPTY
from tests.log.damage import DAMAGES, PARTITION_DIR, BatchAt, build_log, damage

# one line that names the segment and the byte: "[metalog: error: ]<...>.log, byte N: ..."
ONE_LINE = re.compile(r"^(metalog: (error|notice): )?\S+/\d{20}\.log, byte \d+: [^\n]+$")


def _scan_into(log: MetadataLog) -> list[tuple[int, bytes | None]]:
    got: list[tuple[int, bytes | None]] = []
    for _ in log.scan_into(log.log_start_offset, log.log_end_offset - 1, lambda v, o: got.append((o, v))):
        pass
    return got


LOG_READERS: dict[str, Callable[[MetadataLog], Any]] = {
    "batches": lambda log: [(b.base_offset, b.last_offset, b.partition_leader_epoch, b.max_timestamp, b.crc)
                            for b in log.batches()],
    "records": lambda log: [(r.offset, r.timestamp, r.value) for r in log.records()],
    "scan": lambda log: list(log.scan()),
    "scan_into": _scan_into,
}


def state(path: Path, offset: int | None = None) -> Any:
    """The state published at ``offset`` (default: the end); before the log's first batch, and in a log that
    repair emptied (damage in its first batch), that is the empty state."""
    with MetadataHistory(path) as history:
        if history.end_offset < 0 or (offset is not None and offset < 0):
            return EMPTY
        return history.state_at(offset).image


def analysis(path: Path) -> Any:
    result = analyze_log(path, "cluster")
    return result.rows, result.events, result.records


def dump(path: Path) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(["log", "dump", "--no-records", str(path)])
    return rc, out.getvalue(), err.getvalue()


def answers(path: Path) -> dict[str, Any]:
    """Every reader's answer, or the one-line error it failed with (as ``("error", message)``)."""
    got: dict[str, Any] = {}
    try:
        log = MetadataLog.open(path, writable=False)
    except MetalogError as e:
        return {"open": ("error", str(e))}
    with log:
        got["recovery"] = log.recovery.damage_lines()
        for name, reader in LOG_READERS.items():
            got[name] = _answer(lambda reader=reader: reader(log))  # type: ignore[misc]
    got["state_at"] = _answer(lambda: state(path))
    got["analysis"] = _answer(lambda: analysis(path))
    rc, out, err = dump(path)
    got["dump"] = ("error", err.rstrip("\n")) if rc else out
    return got


def _answer(read: Callable[[], Any]) -> Any:
    try:
        return read()
    except MetalogError as e:
        return "error", str(e)


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[BatchAt], dict[str, Any]]:
    path = tmp_path_factory.mktemp("pristine")
    batches = build_log(path, records=140, seed=11, segment_bytes=3500, index_interval_bytes=700,
                        batches_per_epoch=25)
    assert len({b.segment for b in batches}) >= 4 and len(batches) >= 100
    return path, batches, answers(path)


@pytest.mark.slow
def test_every_damage_to_every_batch_is_an_error_or_the_undamaged_answer(pristine, tmp_path):
    path, batches, undamaged = pristine
    assert all(not (isinstance(v, tuple) and v[:1] == ("error",)) for v in undamaged.values()), undamaged
    state_before = cache(lambda offset: state(path, offset))
    cases = 0
    for n, at in enumerate(batches):
        for field, byte in DAMAGES.items():
            work = tmp_path / f"{n}-{field}"
            shutil.copytree(path, work)
            target = BatchAt(work / PARTITION_DIR / at.segment.name, at.position, at.base_offset, at.last_offset,
                             at.is_control)
            damage(target, byte)
            where = f"batch {n} at {at.segment.name}:{at.position}, {field}"
            got = answers(work)
            torn = n == len(batches) - 1 and got.get("recovery")
            if torn:  # the log's last batch: cut on open as a torn write, and said so
                assert got["recovery"] == [f"truncated (read-only, the file is unchanged) {target.segment} at "
                                           f"byte {at.position}, {target.segment.stat().st_size - at.position} bytes "
                                           f"(offsets from {at.base_offset} on): " + got["recovery"][0].split(
                                               " on): ", 1)[1]], where
            caught = 0
            for reader, answer in got.items():
                if reader == "recovery":
                    continue
                if isinstance(answer, tuple) and answer[:1] == ("error",):
                    caught += 1
                    assert ONE_LINE.match(answer[1]) and f"/{at.segment.name}, byte " in answer[1], \
                        (where, reader, answer)
                elif not torn:
                    assert answer == undamaged[reader], (where, reader)
            # not only "an error or the undamaged answer": every read that reaches the damage finds it
            assert torn or caught == len(got) - ("recovery" in got), (where, got.keys(), caught)
            assert main(["log", "recover", "--repair", str(work)]) == 0, where
            verified = verify_log(work)
            assert verified.ok, (where, verified.problems)
            assert state(work) == state_before(at.base_offset - 1), where
            shutil.rmtree(work)
            cases += 1
    assert cases == len(DAMAGES) * len(batches)
