"""``metalog log dump``'s filters, --skip-record-metadata, --max-bytes and --files (kafka-dump-log's options:
tools/src/main/java/org/apache/kafka/tools/DumpLogSegments.java), and what is not a log file.

A filtered dump is the unfiltered dump filtered here, line by line: a record line is kept when its offset,
timestamp and type match, a batch line when one of its record lines is kept.
"""

from __future__ import annotations

import io
import json
import re
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metalog.cli.main import main
from metalog.codec import Uuid, message_class
from metalog.log import LogConfig, MetadataLog, Mode

TS = 1_700_000_000_000
TYPES = ["TOPIC_RECORD", "PARTITION_RECORD", "PARTITION_CHANGE_RECORD", "CONFIG_RECORD", "NO_OP_RECORD",
         "FEATURE_LEVEL_RECORD", "LEADER_CHANGE", "REGISTER_BROKER_RECORD"]
_LABELS = {"LeaderChange": "LEADER_CHANGE", "SnapshotHeader": "SNAPSHOT_HEADER", "SnapshotFooter": "SNAPSHOT_FOOTER",
           "KRaftVersion": "KRAFT_VERSION", "KRaftVoters": "KRAFT_VOTERS"}


def dump(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(["log", "dump", *argv])
    return code, out.getvalue(), err.getvalue()


def rec(message: str, /, **fields: Any) -> Any:
    return message_class(message)(**fields)


@pytest.fixture(scope="module")
def mixed_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A metalog-written log of several segments: topics, partitions, changes, configs, no-ops, leader changes."""
    root = tmp_path_factory.mktemp("mixed")
    t = Uuid.of(1, 1)
    with MetadataLog.open(root, Mode.CREATE, config=LogConfig(segment_bytes=700, index_interval_bytes=100)) as log:
        log.append_control([(rec("LeaderChangeMessage", leader_id=1, voters=[]), 0)], timestamp=TS)
        log.append([(rec("FeatureLevelRecord", name="metadata.version", feature_level=17), 0)], timestamp=TS + 1000)
        log.append([(rec("TopicRecord", name="t", topic_id=t), 0),
                    (rec("PartitionRecord", partition_id=0, topic_id=t, replicas=[1], isr=[1], leader=1), 0)],
                   timestamp=TS + 2000)
        for i in range(12):
            log.append([(rec("PartitionChangeRecord", partition_id=0, topic_id=t, isr=[1]), 0),
                        (rec("ConfigRecord", resource_type=2, resource_name="t", name="k", value=str(i)), 0),
                        (rec("NoOpRecord"), 0)][:1 + i % 3], timestamp=TS + (3 + i) * 1000)
            if i % 5 == 4:
                log.append_control([(rec("LeaderChangeMessage", leader_id=1 + i % 2, voters=[]), 0)],
                                   epoch=2 + i, timestamp=TS + (3 + i) * 1000 + 500)
    return root


def parse(text: str) -> list[tuple[str, dict[str, Any]]]:
    """The dump's lines, each with what a filter looks at: ("file"|"batch"|"record", facts)."""
    out: list[tuple[str, dict[str, Any]]] = []
    for line in text.splitlines():
        if line.startswith("baseOffset: "):
            out.append(("batch", {"line": line}))
        elif line.startswith("| offset: "):
            m = re.match(r"\| offset: (\d+) \w+: (-?\d+) .*?(?:payload: (\{.*\})|(\w+): \{.*\})$", line)
            assert m is not None, line
            kind = json.loads(m[3])["type"] if m[3] else _LABELS[m[4]]
            out.append(("record", {"line": line, "offset": int(m[1]), "timestamp": int(m[2]), "type": kind}))
        else:
            out.append(("file", {"line": line}))
    return out


def filter_here(text: str, keep: Any, headers_only: bool = False) -> str:
    """The unfiltered dump ``text`` filtered as the filters should: records that ``keep``, and their batches."""
    lines, batch, kept = [], None, []
    for kind, facts in [*parse(text), ("file", {"line": None})]:
        if kind == "record":
            if keep(facts):
                kept.append(facts["line"])
            continue
        if batch is not None and kept:
            lines += [batch] + ([] if headers_only else kept)
        batch, kept = (facts["line"], []) if kind == "batch" else (None, [])
        if kind == "file" and facts["line"] is not None:
            lines.append(facts["line"])
    return "".join(line + "\n" for line in lines)


def _end(edge: str) -> st.SearchStrategy[tuple[str, int | None] | None]:
    """One end of a dump's range: none, ``edge`` (start or end), an offset or a time (seconds after TS)."""
    return st.one_of(st.none(), st.just((edge, None)), st.tuples(st.just("offset"), st.integers(0, 45)),
                     st.tuples(st.just("time"), st.integers(0, 16)))


def _point(end: tuple[str, int | None]) -> str:
    kind, value = end
    return {"offset": str(value), "time": f"{TS + (value or 0) * 1000}ms"}.get(kind, kind)


@settings(max_examples=60)
@given(types=st.one_of(st.none(), st.sets(st.sampled_from(TYPES), min_size=1, max_size=3)), start=_end("start"),
       stop=_end("end"), headers_only=st.booleans())
def test_a_filtered_dump_is_the_unfiltered_one_filtered(mixed_log: Path, types: set[str] | None,
                                                        start: tuple[str, int | None] | None,
                                                        stop: tuple[str, int | None] | None,
                                                        headers_only: bool) -> None:
    base = ["--no-records"] if headers_only else []
    _, everything, _ = dump([str(mixed_log)])
    argv = list(base)
    for t in sorted(types or ()):
        argv += ["--type", t]
    if start is not None:
        argv += ["--from", _point(start)]
    if stop is not None:
        argv += ["--to", _point(stop)]

    def inside(r: dict[str, Any], end: tuple[str, int | None] | None, sign: int) -> bool:
        if end is None or end[1] is None:
            return True
        value = r["offset"] if end[0] == "offset" else (r["timestamp"] - TS) / 1000
        return sign * (value - end[1]) >= 0

    def keep(r: dict[str, Any]) -> bool:
        return (types is None or r["type"] in types) and inside(r, start, 1) and inside(r, stop, -1)

    code, filtered, err = dump([*argv, str(mixed_log)])
    if start and stop and start[0] == stop[0] and start[1] is not None and stop[1] is not None and start[1] > stop[1]:
        assert (code, filtered) == (1, "") and err.startswith("metalog: error: --from ")
        return
    assert (code, err) == (0, "")
    assert filtered == filter_here(everything, keep, headers_only)


def test_filters_on_kafkas_log(jbod_dir: Path) -> None:
    _, everything, _ = dump([str(jbod_dir)])
    code, filtered, _ = dump(["--type", "PartitionChangeRecord", "--type", "leader_change", str(jbod_dir)])
    assert code == 0
    assert filtered == filter_here(everything, lambda r: r["type"] in ("PARTITION_CHANGE_RECORD", "LEADER_CHANGE"))
    assert filtered.count("| offset:") == 5


def test_json_filters_the_records_of_each_batch(mixed_log: Path) -> None:
    _, everything, _ = dump(["--json", str(mixed_log)])
    code, filtered, _ = dump(["--json", "--type", "CONFIG_RECORD", str(mixed_log)])
    expected = []
    for line in everything.splitlines():
        batch = json.loads(line)
        records = [r for r in batch.get("records", []) if r.get("payload", {}).get("type") == "CONFIG_RECORD"]
        if records:
            expected.append({**batch, "records": records})
    assert code == 0 and [json.loads(line) for line in filtered.splitlines()] == expected and expected


def test_skip_record_metadata_prints_the_payload_alone(jbod_dir: Path) -> None:
    # DumpLogSegments.dumpBatchRecords: no metadata; the payload after "| "; a control record's contents are not
    # printed, so it is an empty line
    _, everything, _ = dump([str(jbod_dir)])
    code, skipped, _ = dump(["--skip-record-metadata", str(jbod_dir)])
    expected = []
    for line in everything.splitlines():
        if line.startswith("| offset: "):
            expected.append("| " + line[line.index("payload: "):] if "payload: " in line else "")
        else:
            expected.append(line)
    assert code == 0 and skipped.splitlines() == expected


def test_max_bytes_reads_the_whole_batches_in_the_first_bytes(jbod_dir: Path) -> None:
    # DumpLogSegments.dumpLog: FileRecords.slice(0, maxBytes); the trailing bytes are not reported then
    segment = jbod_dir / "__cluster_metadata-0" / "00000000000000000000.log"
    _, everything, _ = dump(["--no-records", str(segment)])
    batches = [line for line in everything.splitlines() if line.startswith("baseOffset")]
    ends = [int(re.search(r"position: (\d+)", b)[1]) + int(re.search(r"size: (\d+)", b)[1]) for b in batches]
    for limit in (0, 90, 91, 193, 194, 1000, segment.stat().st_size - 1, segment.stat().st_size, 10**9):
        code, out, err = dump(["--no-records", "--max-bytes", str(limit), str(segment)])
        shown = [line for line in out.splitlines() if line.startswith("baseOffset")]
        assert (code, err) == (0, "") and shown == [b for b, end in zip(batches, ends, strict=True) if end <= limit]


def test_max_bytes_still_reports_damage_before_the_limit(jbod_dir: Path, tmp_path: Path) -> None:
    data = bytearray((jbod_dir / "__cluster_metadata-0" / "00000000000000000000.log").read_bytes())
    data[91 + 8:91 + 12] = (10**6).to_bytes(4, "big")  # the second batch announces a megabyte
    segment = tmp_path / "00000000000000000000.log"
    segment.write_bytes(bytes(data))
    code, _, err = dump(["--max-bytes", "1000", str(segment)])
    assert code == 1 and "byte 91" in err


def test_files_is_kafkas_spelling_of_the_paths(mixed_log: Path) -> None:
    segments = sorted((mixed_log / "__cluster_metadata-0").glob("*.log"))
    assert len(segments) > 2
    positional = dump([str(s) for s in segments])
    assert dump(["--files", ",".join(str(s) for s in segments)]) == positional
    assert dump([str(segments[0]), "--files", ",".join(str(s) for s in segments[1:])]) == positional


def test_an_unknown_file_is_not_a_log_file_and_the_others_are_dumped(jbod_dir: Path, tmp_path: Path) -> None:
    other = tmp_path / "notes.txt"
    other.write_text("hello")
    code, out, err = dump([str(other), str(jbod_dir)])
    assert code == 1 and err == (f"metalog: error: {other}: not a log file (a .log segment, .checkpoint snapshot, "
                                 ".index or .timeindex)\n")
    assert out.count("| offset:") == 25


@pytest.mark.parametrize(("argv", "message"), [
    (["--type", "FOO"], "metalog: error: unknown record type 'FOO'"),
    (["--from", "5", "--to", "2"], "metalog: error: --from 5 is after --to 2"),
    (["--from", "end"], "metalog: error: --from end: a dump takes start as --from and end as --to"),
    (["--to", "start"], "metalog: error: --to start: a dump takes start as --from and end as --to"),
    ([], "metalog: error: give the files to dump (PATH or --files)"),
])
def test_bad_options_are_one_line(jbod_dir: Path, argv: list[str], message: str) -> None:
    code, out, err = dump(argv + ([str(jbod_dir)] if argv else []))
    assert code == 1 and out == "" and err.startswith(message) and err.count("\n") == 1


def test_help_shows_the_new_options() -> None:
    out = io.StringIO()
    with redirect_stdout(out), pytest.raises(SystemExit):
        main(["log", "dump", "--help"])
    text = out.getvalue()
    for option in ("--files", "--type", "--from", "--to", "--skip-record-metadata", "--max-bytes",
                   "--verify-index-only", "--index-sanity-check", "examples:"):
        assert option in text, option
