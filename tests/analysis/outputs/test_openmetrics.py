"""controller_metrics.om: OpenMetrics that Prometheus' own parser reads, each series, read as a step function,
the timeline's value at every batch time, with a sample at least a minute of log time apart while the log has
batches, under the names the JMX exporter's common rules give Kafka's controller metrics
(core/src/main/scala/kafka/controller/... and metadata/src/main/java/org/apache/kafka/controller/metrics/
QuorumControllerMetrics.java, ControllerMetadataMetrics.java name the MBeans)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metalog.analysis.clusters import cluster_name
from metalog.analysis.outputs.openmetrics import FAMILIES, FILE, Family, escape, seconds
from metalog.analysis.outputs.sampling import HEARTBEAT_MS
from metalog.generate.generator import HistorySettings
from metalog.generate.writer import write_history
from metalog.state.enums import ZK_MIGRATION_VALUES
from tests.analysis.oracle import analyze_python, write_openmetrics, write_outputs
from tests.quick import examples

parser = pytest.importorskip("prometheus_client.openmetrics.parser")


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    root = tmp_path_factory.mktemp("om")
    paths = []
    for seed, scenario in ((1, "mixed"), (2, "zk-migration"), (3, "jbod-transition")):
        paths.append(root / f"{scenario}")
        write_history(paths[-1], seed, HistorySettings(brokers=4, topics=5, partitions=3, records=2500,
                                                       scenario=scenario), snapshot_every=100_000)
    return paths


def test_the_names_are_the_jmx_exporters_for_kafkas_controller_metrics() -> None:
    kafka = {f.name for f in FAMILIES if not f.name.startswith("metalog_")}
    assert kafka == {f"kafka_controller_kafkacontroller_{n}" for n in (
        "activebrokercount", "fencedbrokercount", "controlledshutdownbrokercount", "migratingzkbrokercount",
        "globaltopiccount", "globalpartitioncount", "offlinepartitionscount", "preferredreplicaimbalancecount",
        "zkmigrationstate")}
    assert {f.name for f in FAMILIES} - kafka == {"metalog_replicas", "metalog_offline_replicas"}
    # Kafka's ZkMigrationState ids (metadata/src/main/java/org/apache/kafka/metadata/migration/ZkMigrationState.java)
    assert ZK_MIGRATION_VALUES == {"NONE": 0, "MIGRATION": 1, "PRE_MIGRATION": 2, "POST_MIGRATION": 3, "ZK": 4}


def last_per_ms(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each batch time's row: the last batch of each millisecond in log order, in time order."""
    last = {row["timestamp"]: row for row in rows}
    return [last[t] for t in sorted(last)]


def value(family: Family, row: dict[str, Any]) -> int:
    """The family's value in a timeline row (zk_migration_state: Kafka's id, -1 for a name it has none for)."""
    if family.column == "zk_migration_state":
        return ZK_MIGRATION_VALUES.get(row["zk_migration_state"], -1)
    return int(row[family.column])


def milliseconds(sample: Any) -> int:
    return int(sample.timestamp.sec * 1000 + sample.timestamp.nsec // 1_000_000)


def check_series(text: str, fleet: list[tuple[str, list[dict[str, Any]]]], *, every_batch: bool = False) -> None:
    """The file parses; each series read as a step function (a sample's value holds until the next) is the
    timeline's value at every batch time; its first and last samples are at the first and last batch times;
    two samples more than HEARTBEAT_MS apart have no batch time between them; and the samples are exactly the
    rule's (``every_batch``: every batch time)."""
    assert text.endswith("\n# EOF\n") and text.split("\n").count("# EOF") == 1  # ("# EOF" may be in a name)
    families = {f.name: f for f in parser.text_string_to_metric_families(text)}
    assert set(families) == {f.name for f in FAMILIES}
    for family in FAMILIES:
        assert families[family.name].type == "gauge"
        for name, rows in fleet:
            labels = {"cluster": name, **(dict([family.label]) if family.label else {})}
            got = [(milliseconds(s), s.value) for s in families[family.name].samples if s.labels == labels]
            batches = [(r["timestamp"], value(family, r)) for r in last_per_ms(rows)]
            assert [t for t, _ in got] == sorted({t for t, _ in got}), (family.name, name)
            assert (got[0][0], got[-1][0]) == (batches[0][0], batches[-1][0]) if batches else got == []
            held, k = None, 0
            for t, v in batches:  # the step function at each batch time
                while k < len(got) and got[k][0] <= t:
                    held, k = got[k][1], k + 1
                assert held == v, (family.name, name, t)
            times = [t for t, _ in batches]
            for (a, _), (b, _) in zip(got, got[1:], strict=False):
                assert b - a <= HEARTBEAT_MS or times.index(b) == times.index(a) + 1, (family.name, name, a, b)
            assert [t for t, _ in got] == (times if every_batch else expected_samples(batches)), (family.name, name)


def expected_samples(batches: list[tuple[int, int]]) -> list[int]:
    """The rule, read literally: the first and last batch times, each change, and a batch time whose next one is
    more than HEARTBEAT_MS after the previous sample."""
    picked: list[int] = []
    for i, (t, v) in enumerate(batches):
        if (i in (0, len(batches) - 1) or v != batches[i - 1][1]
                or batches[i + 1][0] > picked[-1] + HEARTBEAT_MS):
            picked.append(t)
    return picked


@pytest.mark.slow  # 1.5 s or more of CPU: the full suite runs it, --quick does not
@pytest.mark.parametrize("every_batch", [False, True])
def test_the_file_parses_and_its_series_are_the_timeline_at_each_batch_time(
        fleet: list[Path], tmp_path: Path, every_batch: bool) -> None:
    result = analyze_python(fleet)
    write_outputs(tmp_path, result, 60_000, csv=False, metrics_every_batch=every_batch)
    names = [cluster_name(path) for path in fleet]
    timelines = [(name, [r for r in result.rows if r["cluster"] == name]) for name in names]
    check_series((tmp_path / FILE).read_text(), timelines, every_batch=every_batch)
    times = [r["timestamp"] for r in timelines[0][1]]
    assert len(last_per_ms(timelines[0][1])) == len(set(times)) < len(times)  # milliseconds with several batches
    lines = (tmp_path / FILE).read_text().count("\n")
    assert (lines > len(FAMILIES) * len(result.rows) / 2) == every_batch  # the steady series are compact


_ZK_NAMES = [*ZK_MIGRATION_VALUES, "", "SOMETHING_NEWER"]


@st.composite
def timelines(draw: st.DrawFn, times: st.SearchStrategy[int]) -> list[dict[str, Any]]:
    """A cluster's timeline rows in log order: times from ``times`` (ties, steps back), values that change now
    and then, or every time."""
    from metalog.analysis.outputs.openmetrics import COLUMNS

    values = draw(st.sampled_from([st.sampled_from([0, 0, 0, 1, 2**40]), st.integers(0, 2**40)]))
    rows = []
    for _ in range(draw(st.integers(0, 40), label="rows")):
        row: dict[str, Any] = {c: draw(values) for c in COLUMNS}
        row["zk_migration_state"] = draw(st.sampled_from(_ZK_NAMES))
        rows.append(row | {"timestamp": draw(times)})
    if draw(st.booleans()):  # mostly in time order, as Kafka's controllers write them
        rows.sort(key=lambda r: r["timestamp"])
    return rows


_SPAN = st.sampled_from([0, 1, 999, 59_999, 60_000, 60_001, 120_000]) | st.integers(0, 400_000)


@settings(max_examples=examples(60))
@given(fleet=st.lists(st.tuples(st.text(st.characters(codec="utf-8", exclude_characters="\x00\r"), min_size=1,
                                        max_size=6), timelines(_SPAN)),
                      min_size=1, max_size=3, unique_by=lambda c: c[0]),
       every_batch=st.booleans())
def test_each_series_is_its_value_at_every_batch_time_with_a_sample_a_minute(
        tmp_path_factory: pytest.TempPathFactory, fleet: list[tuple[str, list[dict[str, Any]]]],
        every_batch: bool) -> None:
    """Read back with Prometheus' parser (times from 0: it misreads negative ones; no CR in a name: it reads the
    text with universal newlines, though OpenMetrics allows a CR in a label value as it is)."""
    path = tmp_path_factory.mktemp("om") / FILE
    write_openmetrics(path, fleet, every_batch=every_batch)
    check_series(path.read_text(), fleet, every_batch=every_batch)


def test_a_steady_cluster_has_a_sample_a_minute(tmp_path: Path) -> None:
    """Ten minutes of batches every 500 ms that change nothing: 11 samples per series, not 1,201."""
    row = {c: 0 for f in FAMILIES for c in (f.column,)} | {"zk_migration_state": "NONE"}
    write_openmetrics(tmp_path / FILE, [("c", [row | {"timestamp": t} for t in range(0, 600_001, 500)])])
    samples = [s for f in parser.text_string_to_metric_families((tmp_path / FILE).read_text()) for s in f.samples]
    assert len(samples) == 11 * len(FAMILIES)
    assert {milliseconds(s) for s in samples} == set(range(0, 600_001, 60_000))


def test_a_long_series_is_written_whole() -> None:
    """Its lines go out a few thousand at a time: every one of them, in order."""
    import io

    from metalog.analysis.outputs.openmetrics import LineEnds, write_samples
    from metalog.analysis.outputs.sampling import Samples

    out, n = io.StringIO(), 10_007
    write_samples(out, FAMILIES[0], "c", Samples(list(range(n)), [v * 3 for v in range(n)]), LineEnds())
    assert out.getvalue() == "".join(f'{FAMILIES[0].name}{{cluster="c"}} {v * 3} {seconds(v)}\n' for v in range(n))


INT64 = st.integers(-(1 << 63), (1 << 63) - 1)
# the sample lines' twins: the pure one, and the compiled one where it loaded
from metalog.analysis.outputs.openmetrics import SAMPLE_LINES, sample_lines  # noqa: E402

LINES = [pytest.param(sample_lines, id="pure")] + ([] if SAMPLE_LINES.loaded is None else [
    pytest.param(SAMPLE_LINES.loaded.sample_lines, id="compiled")])


@pytest.mark.parametrize("lines", LINES)
@given(samples=st.lists(st.tuples(INT64, INT64), max_size=40), prefix=st.text(max_size=12))
def test_sample_lines_are_each_value_and_its_time_in_seconds(lines: Any, samples: list[tuple[int, int]],
                                                             prefix: str) -> None:
    """Either twin: a line per sample, the prefix, the value, the time in exact seconds (any int64 of either,
    any text of the prefix)."""
    prefix = prefix.encode("utf-8", "replace").decode("utf-8")  # (what a UTF-8 file can hold)
    values, times = [v for v, _ in samples], [t for _, t in samples]
    assert lines(prefix, values, times) == "".join(f"{prefix}{v} {seconds(t)}\n" for v, t in samples)


@pytest.mark.parametrize("big", [1 << 63, -(1 << 63) - 1, 1 << 70])
def test_a_value_beyond_int64_is_written_whole(big: int) -> None:
    """(No table holds one; the compiled twin hands such a block to the pure one.)"""
    import io

    from metalog.analysis.outputs.openmetrics import LineEnds, write_samples
    from metalog.analysis.outputs.sampling import Samples

    out = io.StringIO()
    write_samples(out, FAMILIES[0], "c", Samples([0, 1500], [big, 2]), LineEnds())
    name = f'{FAMILIES[0].name}{{cluster="c"}}'
    assert out.getvalue() == f"{name} {big} 0.000\n{name} 2 1.500\n"


def test_seconds_are_exact() -> None:
    assert seconds(1_700_000_000_005) == "1700000000.005" and seconds(-1) == "-0.001" and seconds(-1500) == "-1.500"


def test_hostile_cluster_names_are_escaped(tmp_path: Path) -> None:
    name = 'a "b" \\ c\nd'
    row = {c: 0 for f in FAMILIES for c in (f.column,)} | {"zk_migration_state": "MIGRATION", "timestamp": 1500}
    write_openmetrics(tmp_path / FILE, [(name, [row])])
    samples = [s for f in parser.text_string_to_metric_families((tmp_path / FILE).read_text()) for s in f.samples]
    assert {s.labels["cluster"] for s in samples} == {name} and escape(name) == 'a \\"b\\" \\\\ c\\nd'
    assert [s.value for s in samples if s.name.endswith("zkmigrationstate")] == [1]


@pytest.mark.skipif(shutil.which("promtool") is None, reason="no promtool (Debian: apt-get install prometheus)")
def test_promtool_backfills_it(fleet: list[Path], tmp_path: Path) -> None:
    write_outputs(tmp_path, analyze_python(fleet), 60_000, csv=False)
    done = subprocess.run(["promtool", "tsdb", "create-blocks-from", "openmetrics", str(tmp_path / FILE),
                           str(tmp_path / "data")], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    series = sum(1 for f in FAMILIES) * len(fleet)
    assert f" {series} " in done.stdout.splitlines()[-1]  # NUM SERIES of the block


@pytest.mark.parametrize("kernel", ["whole", "none", "part then refuses", "absent"])
def test_blocks_are_concatenated_whole_however_the_kernel_copies(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                  kernel: str) -> None:
    import errno
    import os

    from metalog.analysis.outputs.openmetrics import concatenate, header

    real = os.copy_file_range
    calls = []

    def copy(src: int, dst: int, count: int) -> int:
        calls.append(count)
        if kernel == "none" or (kernel == "part then refuses" and len(calls) > 1):
            raise OSError(errno.EXDEV, "cross-device")
        return real(src, dst, min(count, 7) if kernel == "part then refuses" else count)

    monkeypatch.setattr(os, "copy_file_range", copy, raising=True)
    if kernel == "absent":
        monkeypatch.delattr(os, "copy_file_range")
    blocks = {}
    for i in range(len(FAMILIES)):
        blocks[i] = tmp_path / f"{i}.om"
        blocks[i].write_bytes(f"line {i}\n".encode() * (i + 1))
    concatenate(tmp_path / FILE, lambda i, c: [blocks[i]], ["a"])
    expected = "".join(header(f) + f"line {i}\n" * (i + 1) for i, f in enumerate(FAMILIES)) + "# EOF\n"
    assert (tmp_path / FILE).read_text() == expected
    assert bool(calls) == (kernel != "absent")
