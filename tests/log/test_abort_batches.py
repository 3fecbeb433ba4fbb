"""Records after an AbortTransactionRecord in one batch: Kafka's MetadataBatchLoader keeps the aborted records
(ABORTED -> NO_TRANSACTION on the next record, and the delta is reset only at the flush); metalog drops them.
Its controller never writes such a batch, and neither does any metalog writer; ``log verify`` warns about one."""

from __future__ import annotations

import contextlib
import io
import sys
from pathlib import Path
from typing import Any

from metalog.cli.main import main
from metalog.codec import message_class
from metalog.codec.framing import encode_metadata_record
from metalog.log import MetadataLog, Mode
from metalog.log.builder import build_data_batch
from metalog.log.verify import records_after_abort, verify_log

TS = 1_700_000_000_000


def rec(name: str, /, **fields: Any) -> tuple[Any, int]:
    return message_class(name)(**fields), 0


BEGIN, ABORT = rec("BeginTransactionRecord", name="t"), rec("AbortTransactionRecord")
NOOP = rec("NoOpRecord")


def batches_of(root: Path) -> list[tuple[int, int]]:
    with MetadataLog.open(root) as log:
        return [(b.base_offset, b.last_offset) for b in log.batches()]


def test_append_ends_a_batch_at_an_abort(tmp_path: Path) -> None:
    with MetadataLog.open(tmp_path, Mode.CREATE) as log:
        written = log.append([NOOP, BEGIN, NOOP, ABORT, NOOP, NOOP, BEGIN, ABORT], timestamp=TS)
    assert [(b.base_offset, b.last_offset) for b in written] == [(0, 3), (4, 7)]
    assert batches_of(tmp_path) == [(0, 3), (4, 7)]
    assert verify_log(tmp_path).warnings == []


def test_log_append_says_so_and_does_so(tmp_path: Path, capsys: Any) -> None:
    lines = "".join(f'{{"name": "{name}", "version": 0, "data": {{}}}}\n'
                    for name in ("BeginTransactionRecord", "AbortTransactionRecord", "NoOpRecord", "NoOpRecord"))
    old, sys.stdin = sys.stdin, io.StringIO(lines)
    try:
        assert main(["log", "append", str(tmp_path), "--create", "--timestamp", "2023-11-14T22:13:20Z"]) == 0
    finally:
        sys.stdin = old
    assert batches_of(tmp_path) == [(0, 1), (2, 3)]
    with MetadataLog.open(tmp_path) as log:
        assert next(log.batches()).max_timestamp == TS
    capsys.readouterr()
    with contextlib.suppress(SystemExit):
        main(["log", "append", "--help"])
    assert "A batch ends after an AbortTransactionRecord" in capsys.readouterr().out.replace("\n", " ").replace(
        "  ", " ")


def test_verify_warns_about_records_after_an_abort_in_a_batch(tmp_path: Path, capsys: Any) -> None:
    values = [encode_metadata_record(*r) for r in (NOOP, BEGIN, NOOP, ABORT, NOOP, NOOP)]
    with MetadataLog.open(tmp_path, Mode.CREATE) as log:
        log.append_batch(build_data_batch(0, values, epoch=1, timestamp=TS))  # built whole: nothing splits it
        log.append([BEGIN, ABORT], timestamp=TS)  # an abort last in its batch: nothing to say
    v = verify_log(tmp_path)
    assert v.ok and v.problems == []
    assert len(v.warnings) == 1
    assert v.warnings[0].endswith("byte 0: batch 0..5 has 2 record(s) after the AbortTransactionRecord at offset 3: "
                                  "metalog drops the aborted transaction's records and applies these; Kafka's "
                                  "loader would keep the aborted records too")
    assert main(["log", "verify", str(tmp_path)]) == 0  # a warning, not a problem
    out = capsys.readouterr().out
    assert f"warning: {v.warnings[0]}" in out and out.rstrip().endswith("intact, 1 warning(s)")


def test_the_check_reads_record_types_only() -> None:
    from metalog.log.batch import RecordBatch

    values = [encode_metadata_record(*r) for r in (ABORT, NOOP)]
    assert records_after_abort(RecordBatch(build_data_batch(7, values, epoch=1, timestamp=TS))) is not None
    values = [encode_metadata_record(*r) for r in (NOOP, ABORT)]
    assert records_after_abort(RecordBatch(build_data_batch(7, values, epoch=1, timestamp=TS))) is None
