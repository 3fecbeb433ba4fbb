"""controller_metrics.om: OpenMetrics that Prometheus' own parser reads, its samples the timeline's at each batch
time, under the names the JMX exporter's common rules give Kafka's controller metrics
(core/src/main/scala/kafka/controller/... and metadata/src/main/java/org/apache/kafka/controller/metrics/
QuorumControllerMetrics.java, ControllerMetadataMetrics.java name the MBeans)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metalog.analysis.openmetrics import FAMILIES, FILE, escape, last_per_ms, seconds, value, write_openmetrics
from metalog.analysis.pipeline import analyze_python, write_outputs
from metalog.analysis.result import cluster_name
from metalog.generate.generator import HistorySettings
from metalog.generate.writer import write_history
from metalog.state.enums import ZK_MIGRATION_VALUES

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


@pytest.mark.slow  # 1.5 s or more of CPU: the full suite runs it, --quick does not
def test_the_file_parses_and_its_samples_are_the_timeline_at_each_batch_time(fleet: list[Path],
                                                                             tmp_path: Path) -> None:
    result = analyze_python(fleet)
    write_outputs(tmp_path, result, 60_000, csv=False)
    text = (tmp_path / FILE).read_text()
    assert text.endswith("# EOF\n") and text.count("# EOF") == 1
    families = {f.name: f for f in parser.text_string_to_metric_families(text)}
    assert set(families) == {f.name for f in FAMILIES}
    for family in FAMILIES:
        found = families[family.name]
        assert found.type == "gauge"
        for name in map(cluster_name, fleet):
            expected = last_per_ms(r for r in result.rows if r["cluster"] == name)
            labels = {"cluster": name, **(dict([family.label]) if family.label else {})}
            got = [s for s in found.samples if s.labels == labels]
            assert [(s.value, s.timestamp) for s in got] == [
                (value(family, r), parser.Timestamp(r["timestamp"] // 1000, r["timestamp"] % 1000 * 1_000_000))
                for r in expected], (family.name, name)
    first = [r for r in result.rows if r["cluster"] == cluster_name(fleet[0])]
    times = [r["timestamp"] for r in first]
    assert len(last_per_ms(first)) == len(set(times)) < len(times)


def test_a_sample_per_millisecond_is_the_last_batch_of_it_in_time_order() -> None:
    rows = [{"timestamp": t, "last_offset": o} for o, t in enumerate((5, 5, 7, 6, 7, 9))]
    assert [(r["timestamp"], r["last_offset"]) for r in last_per_ms(rows)] == [(5, 1), (6, 3), (7, 4), (9, 5)]
    assert seconds(1_700_000_000_005) == "1700000000.005" and seconds(-1) == "-0.001"


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


_ZK_NAMES = [*ZK_MIGRATION_VALUES, "", "SOMETHING_NEWER"]
_TIMES = st.sampled_from([-1_001, -1, 0, 1, 999, 1_000, 2_002]) | st.integers(-3_000, 3_000)  # collisions


@settings(max_examples=60)
@given(data=st.data(),
       clusters=st.lists(st.text(st.characters(codec="utf-8", exclude_characters="\x00"), min_size=1, max_size=6),
                         min_size=1, max_size=3, unique=True))  # directory names: no NUL
def test_the_executors_series_are_the_python_engines_lines_whatever_the_batches(
        tmp_path_factory: pytest.TempPathFactory, data: st.DataObject, clusters: list[str]) -> None:
    """The Spark engine's executors write each cluster's series from Arrow batches sorted by cluster, time and
    log order (``spark_tables._series_task``), cut wherever Spark cuts them: the file is the python engine's."""
    pa = pytest.importorskip("pyarrow")
    from metalog.analysis.openmetrics import COLUMNS, concatenate
    from metalog.analysis.spark_tables import SEQ, _series_path, _series_task

    root = tmp_path_factory.mktemp("series")
    fleet = []
    for name in clusters:
        rows = []
        for seq in range(data.draw(st.integers(0, 40), label="rows")):
            row: dict[str, object] = {c: data.draw(st.integers(0, 2**40)) for c in COLUMNS}
            row["zk_migration_state"] = data.draw(st.sampled_from(_ZK_NAMES))
            rows.append(row | {"timestamp": data.draw(_TIMES), SEQ: seq, "cluster": name})
        fleet.append((name, rows))
    write_openmetrics(root / "python.om", fleet)
    ordered = sorted((r for _, rows in fleet for r in rows), key=lambda r: (r["cluster"], r["timestamp"], r[SEQ]))
    schema = pa.schema([("cluster", pa.string()), ("timestamp", pa.timestamp("us", tz="UTC")), (SEQ, pa.int64()),
                        *((c, pa.string() if c == "zk_migration_state" else pa.int64()) for c in COLUMNS)])
    cuts = sorted(data.draw(st.lists(st.integers(0, len(ordered)), max_size=6), label="cuts"))
    batches = []
    for lo, hi in zip([0, *cuts], [*cuts, len(ordered)], strict=True):
        part = ordered[lo:hi]
        batches.append(pa.RecordBatch.from_pydict(
            {f.name: [r[f.name] * 1000 if f.name == "timestamp" else r[f.name] for r in part] for f in schema},
            schema=schema))
    parts = root / "parts"
    (done,) = _series_task(str(parts))(iter(batches))
    assert done.to_pydict() == {"cluster": sorted(n for n, rows in fleet if rows),
                                "samples": [len(last_per_ms(rows)) for _, rows in sorted(fleet) if rows]}
    concatenate(root / "spark.om", lambda i, c: [p] if (p := _series_path(parts, i, c)).exists() else [], clusters)
    assert (root / "spark.om").read_bytes() == (root / "python.om").read_bytes()


@pytest.mark.parametrize("kernel", ["whole", "none", "part then refuses", "absent"])
def test_blocks_are_concatenated_whole_however_the_kernel_copies(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                  kernel: str) -> None:
    import errno
    import os

    from metalog.analysis.openmetrics import concatenate, header

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
