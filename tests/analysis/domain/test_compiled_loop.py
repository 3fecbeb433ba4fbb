"""The compiled per-batch loop against the pure one, each under the log's compiled and pure scans: the same chunks of
every table, handed over at the same batches, and the same records, for random histories written as logs in random
batch shapes (control batches, transactions across and inside batches, compressed batches, small segments) and read
from inside their first batch, as a log that starts inside its first batch is."""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metalog.analysis.domain import loop as pure
from metalog.analysis.domain.twins import LOOP
from metalog.analysis.engines.replay import TimelineReplay
from metalog.codec import core, message_class
from metalog.codec.framing import encode_metadata_record
from metalog.codec.uuid import Uuid
from metalog.errors import MetalogError
from metalog.generate.generator import HistorySettings
from metalog.generate.writer import write_history
from metalog.log import Durability, LogConfig, MetadataLog, Mode
from metalog.log.builder import build_data_batch
from metalog.state.image import EMPTY
from tests.analysis.domain.test_step import HISTORIES, batches
from tests.log.damage import leader_change

compiled = LOOP.loaded
pytestmark = pytest.mark.skipif(compiled is None, reason=f"the compiled loop is not built or not asked for "
                                                         f"({LOOP.why_not or 'METALOG_PURE'})")

T0 = 1_700_000_000_000
# a record the log holds before its start offset (a snapshot holds it): replayed, it would count a broker
BEFORE_START = encode_metadata_record(message_class("RegisterBrokerRecord")(
    broker_id=99, broker_epoch=1, incarnation_id=Uuid.of(9, 99), fenced=True), 0)


@st.composite
def shaped_logs(draw: st.DrawFn) -> dict[str, Any]:
    """A history cut into batches: ``skip`` records before the log's start in its first batch, then batches of
    the sizes ``cuts`` gives in turn (0: a control batch), some compressed."""
    values = draw(HISTORIES)
    head = draw(st.integers(1, 4))
    return {"skip": draw(st.integers(0, 3)), "head": values[:head],
            "rest": batches(values[head:], draw(st.lists(st.integers(0, 5), min_size=1, max_size=6))),
            "gzip": draw(st.lists(st.booleans(), min_size=1, max_size=5)),
            "segment_bytes": draw(st.sampled_from([300, 1500, 1 << 20])),
            "chunk_batches": draw(st.sampled_from([1, 2, 3, 4096]))}


def write_log(root: Path, shape: dict[str, Any]) -> int:
    """The log of ``shape`` in ``root``; its first offset to replay (inside its first batch when ``skip``)."""
    gzip, epoch = shape["gzip"], 1
    config = LogConfig(durability=Durability.NONE, segment_bytes=shape["segment_bytes"])
    with MetadataLog.open(root, Mode.CREATE, config=config) as log:
        log.append_batch(build_data_batch(0, [BEFORE_START] * shape["skip"] + shape["head"], epoch=epoch,
                                          timestamp=T0))
        for n, (_, _, values) in enumerate(shape["rest"], 1):
            timestamp = T0 + n * 1000 - 7 * (n % 3)  # (times may step back)
            if not values:
                epoch += 1
                log.append_control([leader_change(epoch)], epoch=epoch, timestamp=timestamp)
            else:
                log.append_batch(build_data_batch(0, values, epoch=epoch, timestamp=timestamp,
                                                  compression="gzip" if gzip[n % len(gzip)] else "none"))
    return shape["skip"]


@contextlib.contextmanager
def twins(loop: str, scan: str) -> Iterator[None]:
    """The loop's twin (with the step's) and the scan's (with the loader's dispatch), each "compiled" or "pure"."""
    with contextlib.ExitStack() as stack:
        if loop == "pure":
            stack.enter_context(core.pure_twins("analysis"))
        if scan == "pure":
            stack.enter_context(core.pure_twins("log"))
        yield


def analysed(root: Path, first: int, chunk_batches: int) -> Any:
    """The chunks the loop hands over (table, rows, column types), in order, and the data records replayed; or the
    error."""
    chunks: list[tuple[str, list[tuple[int | str, ...]], list[type]]] = []
    try:
        with MetadataLog.open(root) as log:
            replay = TimelineReplay(log, "c", EMPTY, chunk_batches=chunk_batches)
            records = replay.run(first, log.log_end_offset - 1, lambda c: chunks.append(
                (c.table.name, list(c.tuples()), [type(column) for column in c.columns])))
    except MetalogError as e:
        return "error", str(e)
    return records, chunks


@pytest.mark.slow  # about 10 s of CPU: the full suite runs it, --quick does not
@settings(max_examples=120, deadline=None)
@given(shape=shaped_logs())
def test_the_compiled_loop_hands_over_the_pure_loops_chunks(shape: dict[str, Any]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "log"
        first = write_log(root, shape)
        got = {}
        for loop in ("pure", "compiled"):
            for scan in ("pure", "compiled"):
                with twins(loop, scan):
                    got[loop, scan] = analysed(root, first, shape["chunk_batches"])
    reference = got["pure", "pure"]
    assert reference[0] == sum(len(v) for v in [shape["head"], *(b[2] for b in shape["rest"])])
    for which, answer in got.items():
        assert answer == reference, which


def test_the_analysis_runs_the_compiled_loop_where_built_and_the_pure_one_when_asked() -> None:
    from metalog.analysis.domain import twins as chosen

    assert compiled is not None
    assert chosen.batch_loop() is compiled.BatchLoop
    with core.pure_twins("analysis"):
        assert chosen.batch_loop() is pure.BatchLoop
    assert chosen.batch_loop() is compiled.BatchLoop


@pytest.mark.slow  # about 4 s of CPU (the pure loop over a thousand batches, twice)
@pytest.mark.parametrize("chunk_batches", [500, 65_536])
def test_thousands_of_batches_a_chunk_come_as_the_pure_loops(tmp_path: Path, chunk_batches: int) -> None:
    """The compiled step's rows grow from 256 a table to thousands between hand-overs (its columns' block made
    again larger, each column moved) and its block is reused after each: the pure twins' chunks all the same."""
    write_history(tmp_path / "log", 5, HistorySettings(brokers=4, topics=5, partitions=3, records=1_500,
                                                      scenario="mixed"), snapshot_every=10**9)
    got = {}
    for loop in ("pure", "compiled"):
        with twins(loop, "compiled"):
            got[loop] = analysed(tmp_path / "log", 0, chunk_batches)
    timeline = [rows for table, rows, _ in got["pure"][1] if table == "timeline_batches"]
    assert sum(map(len, timeline)) > 1_000 and max(map(len, timeline)) >= min(chunk_batches, 1_000)
    assert got["compiled"] == got["pure"]
