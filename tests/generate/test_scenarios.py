"""Scenarios of the history generator: every record valid, the generator's model equals the replayed state."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from metalog.cli.main import main
from metalog.codec.framing import decode_metadata_record, encode_metadata_record
from metalog.codec.uuid import MIGRATING
from metalog.generate.generator import SCENARIOS, HistoryGenerator, HistorySettings, image_model
from metalog.generate.writer import write_history
from metalog.replay.history import MetadataHistory
from metalog.state import MetadataLoader
from metalog.state.records import image_digest

from .test_writer import _same_tree


def _settings(scenario: str, records: int = 2500) -> HistorySettings:
    return HistorySettings(brokers=4, topics=5, partitions=3, records=records, scenario=scenario)


def _replayed(seed: int, settings: HistorySettings) -> tuple[HistoryGenerator, list[tuple[Any, int]], MetadataLoader]:
    """Every record through the codec (bytes and back) and the loader; returns the decoded records too."""
    gen = HistoryGenerator(seed, settings)
    loader = MetadataLoader()
    records = []
    for offset, (_, record, version) in enumerate(gen.records()):
        decoded = decode_metadata_record(encode_metadata_record(record, version))
        assert decoded.version == version
        loader.replay(decoded.message, offset)
        records.append((decoded.message, version))
    loader.end_batch(loader.offset)  # the records as one batch
    return gen, records, loader


@pytest.mark.parametrize("scenario", SCENARIOS)
@pytest.mark.parametrize("seed", [1, 2])
def test_generators_model_is_the_replayed_state(scenario: str, seed: int) -> None:
    gen, records, loader = _replayed(seed, _settings(scenario))
    assert len(records) >= 2500
    assert not loader.in_transaction
    assert image_model(loader.image) == gen.model()


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_scenario_completes_even_when_few_records_are_asked_for(scenario: str) -> None:
    gen, _, loader = _replayed(3, _settings(scenario, records=10))
    assert image_model(loader.image) == gen.model()
    if scenario in ("zk-migration", "mixed"):
        assert gen.zk_state == 3 and "zk migration POST_MIGRATION" in gen.events
    if scenario in ("jbod-transition", "mixed"):
        assert gen.mv == 17 and any("loses log dir" in e for e in gen.events)


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_same_seed_same_files_and_the_log_replays(scenario: str, tmp_path: Path) -> None:
    settings = _settings(scenario, records=1500)
    a = write_history(tmp_path / "a", 4, settings, snapshot_every=500)
    write_history(tmp_path / "b", 4, settings, snapshot_every=500)
    write_history(tmp_path / "c", 5, settings, snapshot_every=500)
    assert _same_tree(tmp_path / "a", tmp_path / "b")
    assert not _same_tree(tmp_path / "a", tmp_path / "c")
    gen, _, loader = _replayed(4, settings)
    with MetadataHistory(a.path) as h:
        image = h.state_at(use_snapshots=False).image
    assert image_digest(image) == a.digest == image_digest(loader.image)
    assert image_model(image) == gen.model()


def _names(records: list[tuple[Any, int]], name: str) -> list[tuple[Any, int]]:
    return [(r, v) for r, v in records if name == r.NAME]


def test_zk_migration_phases() -> None:
    gen, records, loader = _replayed(7, _settings("zk-migration"))
    states = [r.zk_migration_state for r, _ in _names(records, "ZkMigrationStateRecord")]
    assert states == [2, 1, 3]  # PRE_MIGRATION, MIGRATION, POST_MIGRATION (Kafka 3.5+ values)
    markers = [r.NAME for r, _ in records if r.NAME.endswith("TransactionRecord")]
    assert markers[:4] == ["BeginTransactionRecord", "AbortTransactionRecord", "BeginTransactionRecord",
                           "EndTransactionRecord"]
    loads = [r.name for r, _ in _names(records, "BeginTransactionRecord")][:2]
    assert loads == ["Migrate metadata from ZooKeeper"] * 2
    registrations = _names(records, "RegisterBrokerRecord")
    assert all(v >= 2 for _, v in registrations)
    for bid in range(1, 5):
        mine = [r.is_migrating_zk_broker for r, _ in registrations if r.broker_id == bid]
        assert mine[0] is True and mine[-1] is False
    levels = [r.feature_level for r, _ in _names(records, "FeatureLevelRecord")]
    assert levels == sorted(levels) and levels[0] == 13 and levels[-1] > 13
    image = loader.image
    assert image.features.zk_migration_state == 3
    assert not any(b.is_migrating_zk_broker for b in image.brokers.values())
    assert len(image.topics) >= 5


def test_jbod_transition() -> None:
    gen, records, _ = _replayed(8, _settings("jbod-transition"))
    levels = [r.feature_level for r, _ in _names(records, "FeatureLevelRecord")]
    assert levels == [16, 17]
    first = [v for _, v in _names(records, "PartitionRecord")][:15]
    assert set(first) == {0}  # below 3.7-IV2 a PartitionRecord carries no directories
    early = [r for r, _ in _names(records, "RegisterBrokerRecord")][:4]
    assert all(not r.log_dirs for r in early)
    late = [r for r, v in _names(records, "RegisterBrokerRecord") if v == 3]
    assert {r.broker_id for r in late} == {1, 2, 3, 4} and all(len(r.log_dirs) >= 2 for r in late)
    assert any(r.directories for r, v in _names(records, "PartitionChangeRecord") if v >= 1)
    # Replay the disk failure and the partition changes after it: the replicas on the lost dir are offline,
    # out of the ISR (unless they were all of it) and lead nothing.
    loader = MetadataLoader()
    failure = None
    for offset, (r, _) in enumerate(records):
        if failure is not None and r.NAME != "PartitionChangeRecord":
            break
        loader.replay(r, offset)
        if r.NAME == "BrokerRegistrationChangeRecord" and r.log_dirs:
            failure = r
    assert failure is not None and len(failure.log_dirs) == 1
    image = loader.end_batch(loader.offset)
    assert image is not None
    offline = [p for t in image.topics.values() for p in t.partitions.values()
               if failure.broker_id in image.offline_replicas(p)]
    assert offline
    for p in offline:
        assert failure.broker_id not in p.isr or p.isr == (failure.broker_id,)
        assert p.leader != failure.broker_id
    final = gen.model()
    assert all(len(dirs) >= 1 and MIGRATING not in dirs for _, _, _, dirs in final["brokers"].values())


def test_unknown_scenario() -> None:
    with pytest.raises(ValueError, match="unknown scenario"):
        HistoryGenerator(1, HistorySettings(scenario="zk"))


def test_generate_cli_scenario(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["generate", str(tmp_path / "m"), "--scenario", "mixed", "--records", "800", "--brokers", "3",
                 "--topics", "4"]) == 0
    out = capsys.readouterr().out
    assert "scenario mixed" in out and "zk migration POST_MIGRATION" in out and "loses log dir" in out
    with pytest.raises(SystemExit):
        main(["generate", str(tmp_path / "x"), "--scenario", "nope"])


@given(seed=st.integers(0, 2**32), scenario=st.sampled_from(SCENARIOS), brokers=st.integers(1, 6),
       topics=st.integers(1, 4), partitions=st.integers(1, 4), rf=st.integers(1, 3), dirs=st.integers(1, 3),
       records=st.integers(1, 600))
def test_any_settings_replay_to_the_generators_model(seed: int, scenario: str, brokers: int, topics: int,
                                                     partitions: int, rf: int, dirs: int, records: int) -> None:
    s = HistorySettings(brokers=brokers, topics=topics, partitions=partitions, records=records,
                        replication_factor=rf, dirs_per_broker=dirs, scenario=scenario)
    gen, produced, loader = _replayed(seed, s)
    assert len(produced) >= records and not loader.in_transaction
    assert image_model(loader.image) == gen.model()
