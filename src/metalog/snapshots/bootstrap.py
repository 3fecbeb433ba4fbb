"""``bootstrap.checkpoint``: the metadata a new KRaft cluster starts from, as ``kafka-storage format`` writes it
into every directory it formats and the controller reads it from its metadata directory when the log is empty
(Kafka's ``BootstrapDirectory``; the format of ``BatchFileWriter``).

It is a snapshot in all but name: a control batch with a SnapshotHeaderRecord (lastContainedLogTimestamp 0),
the records in data batches, a control batch with a SnapshotFooterRecord; offsets from 0, every batch of
leader epoch 0. Kafka's reader (``BatchFileReader``) accepts no control record but LeaderChange, SnapshotHeader
and SnapshotFooter, so there is no KRaftVersionRecord or VotersRecord here (newer Kafka writes a dynamic
quorum's voters into ``__cluster_metadata-0/00000000000000000000-0000000000.checkpoint`` instead).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from metalog.codec.framing import decode_metadata_record
from metalog.errors import CodecError, SnapshotError
from metalog.log.control import ControlType
from metalog.log.snapshot_files import SnapshotId
from metalog.snapshots.reader import SnapshotReader
from metalog.snapshots.writer import SnapshotHeader, SnapshotWriter

if TYPE_CHECKING:
    from metalog.codec.runtime import ApiMessage

BOOTSTRAP_FILE = "bootstrap.checkpoint"  # BootstrapDirectory.BINARY_BOOTSTRAP_FILENAME
_BOOTSTRAP_ID = SnapshotId(0, 0)  # offsets from 0, epoch 0
_KAFKA_READS = (ControlType.SNAPSHOT_HEADER, ControlType.SNAPSHOT_FOOTER, ControlType.LEADER_CHANGE)


def write_bootstrap(directory: str | os.PathLike[str], records: Iterable[bytes | tuple[ApiMessage, int]], *,
                    time_ms: int | None = None) -> Path:
    """Write ``directory/bootstrap.checkpoint`` holding ``records`` (through ``bootstrap.checkpoint.tmp``, fsynced
    and renamed, as Kafka moves its temporary file into place); returns its path."""
    with SnapshotWriter(directory, _BOOTSTRAP_ID, SnapshotHeader(last_contained_log_timestamp=0), time_ms=time_ms,
                        file_name=BOOTSTRAP_FILE) as writer:  # (refuses a file that exists)
        writer.append(records)
        return writer.freeze()


def read_bootstrap(path: str | os.PathLike[str]) -> list[Any]:
    """The metadata records of a bootstrap file, checked as Kafka's reader checks it (whole batches, a header
    first and a footer last, control records Kafka's BatchFileReader knows); an error names the file and where."""
    out = []
    reader = SnapshotReader(path)
    for batch, controls in reader.batches():
        if controls is not None:
            for c in controls:
                if c.type not in _KAFKA_READS:
                    raise SnapshotError(f"control record {c.type.name} in batch {batch.base_offset}: Kafka reads "
                                        "none in bootstrap metadata", file=reader.path, position=batch.position)
            continue
        for record in batch.records():
            if record.value is None:
                raise SnapshotError(f"record at offset {record.offset} has no value", file=reader.path,
                                    position=batch.position)
            try:
                out.append(decode_metadata_record(record.value).message)
            except CodecError as e:
                raise SnapshotError(f"record at offset {record.offset}: {e}", file=reader.path,
                                    position=batch.position) from None
    return out
