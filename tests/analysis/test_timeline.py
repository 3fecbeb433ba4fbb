"""Timeline rows and events on crafted histories, and the incremental counter against a full recount."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metalog.analysis.domain.schema import TIMELINE
from metalog.analysis.domain.step import ClusterStep
from metalog.codec.uuid import LOST, UNASSIGNED
from metalog.generate.generator import HistorySettings
from metalog.generate.writer import write_history
from metalog.log import MetadataLog
from metalog.replay.history import MetadataHistory, load_scanned
from metalog.state import MetadataDelta, MetadataLoader
from metalog.state.image import EMPTY, MetadataImage
from tests.analysis import crafted as c
from tests.analysis.domain import recount
from tests.analysis.oracle import analyze_log


def _events(analysis: Any, kind: str) -> list[tuple[int, str]]:
    return [(e["offset"], e["detail"]) for e in analysis.events if e["event"] == kind]


def _column(analysis: Any, name: str) -> list[Any]:
    return [r[name] for r in analysis.rows]


def zk_migration(root: Path) -> Path:
    return c.write(root, [
        [c.feature(13), c.zk_state(c.PRE_MIGRATION), c.broker(1, 10, zk=True), c.broker(2, 20, zk=True),
         c.unfence(1, 10), c.unfence(2, 20)],                                     # 0..5
        [c.begin(), *c.topic(1, [[1, 2], [2, 1]])],                                # 6..9 initial load
        [c.abort()],                                                               # 10 fails
        [c.begin(), *c.topic(1, [[1, 2], [2, 1]]), c.end()],                       # 11..15 loaded
        [c.zk_state(c.MIGRATION)],                                                 # 16
        [c.broker(1, 11), c.unfence(1, 11)],                                       # 17..18 broker 1 on KRaft
        [c.broker(2, 21), c.unfence(2, 21)],                                       # 19..20 broker 2 on KRaft
        [c.zk_state(c.POST_MIGRATION)],                                            # 21
    ])


def test_zk_migration_with_an_aborted_initial_load(tmp_path: Path) -> None:
    a = analyze_log(zk_migration(tmp_path / "zk"))
    assert _column(a, "last_offset") == [5, 9, 10, 15, 16, 18, 20, 21]
    assert _column(a, "phase") == ["pre-migration"] * 4 + ["hybrid", "hybrid", "dual-write", "post-migration"]
    assert _column(a, "zk_migration_state") == ["PRE_MIGRATION"] * 4 + ["MIGRATION"] * 3 + ["POST_MIGRATION"]
    assert _column(a, "open_transaction") == [0, 1, 0, 0, 0, 0, 0, 0]
    assert _column(a, "topics") == [0, 0, 0, 1, 1, 1, 1, 1]  # the open, then aborted, load is never visible
    assert _column(a, "partitions") == [0, 0, 0, 2, 2, 2, 2, 2]
    assert _column(a, "brokers_zk") == [2, 2, 2, 2, 2, 1, 0, 0]
    assert _column(a, "metadata_version") == ["3.6-IV1"] * 8
    assert _column(a, "timestamp") == [c.T0 + 1000 * i for i in range(8)]
    assert _events(a, "phase-change") == [(5, "native -> pre-migration"), (16, "pre-migration -> hybrid"),
                                          (20, "hybrid -> dual-write"), (21, "dual-write -> post-migration")]
    assert _events(a, "aborted-transaction") == [(10, "transaction begun at offset 6 aborted")]
    assert _events(a, "metadata-version") == [(5, "unset -> 3.6-IV1")]
    assert _events(a, "directory-failure") == []


def jbod_transition(root: Path) -> Path:
    d1a, d1b, d2a = c.uuid(501), c.uuid(502), c.uuid(601)
    return c.write(root, [
        [c.feature(16), c.broker(1, 10), c.broker(2, 20), c.unfence(1, 10), c.unfence(2, 20),
         *c.topic(1, [[1, 2], [2, 1]])],                                          # 0..7
        [c.feature(17)],                                                           # 8
        [c.broker(1, 11, dirs=[d1a, d1b]), c.unfence(1, 11)],                      # 9..10
        [c.broker(2, 21, dirs=[d2a]), c.unfence(2, 21)],                           # 11..12
        [c.move(1, 0, [d1a, d2a])],                                                # 13
        [c.move(1, 1, [d2a, d1b])],                                                # 14
        [c.rec("BrokerRegistrationChangeRecord", 2, broker_id=1, broker_epoch=11, log_dirs=[d1a])],  # 15 d1b fails
        [c.move(1, 1, [d2a, LOST])],                                               # 16
    ])


def test_jbod_transition_with_a_directory_failure(tmp_path: Path) -> None:
    a = analyze_log(jbod_transition(tmp_path / "jbod"))
    assert _column(a, "last_offset") == [7, 8, 10, 12, 13, 14, 15, 16]
    assert _column(a, "dir_transition") == ["not-started"] * 2 + ["in-progress"] * 3 + ["complete"] * 3
    assert _column(a, "replicas_migrating") == [4, 4, 4, 4, 2, 0, 0, 0]
    assert _column(a, "replicas_assigned") == [0, 0, 0, 0, 2, 4, 4, 3]
    assert _column(a, "replicas_lost") == [0] * 7 + [1]
    assert _column(a, "offline_replicas") == [0] * 6 + [1, 1]  # broker 1's replica in d1b, then in LOST
    assert _column(a, "phase") == ["native"] * 8
    assert _events(a, "metadata-version") == [(7, "unset -> 3.7-IV1"), (8, "3.7-IV1 -> 3.7-IV2")]
    assert _events(a, "dir-transition") == [(10, "not-started -> in-progress"), (14, "in-progress -> complete")]
    assert _events(a, "directory-failure") == [(15, f"broker 1 lost directory {c.uuid(502)}")]
    assert _events(a, "phase-change") == []


def test_native_cluster_with_fenced_and_shutting_down_brokers(tmp_path: Path) -> None:
    d = [c.uuid(700 + i) for i in range(3)]
    root = c.write(tmp_path / "native", [
        [c.feature(17), c.zk_state(c.NONE), *(c.broker(b, b * 10, dirs=[d[b - 1]]) for b in (1, 2, 3)),
         *(c.unfence(b, b * 10) for b in (1, 2, 3)),
         *c.topic(1, [[1, 2, 3]], dirs=[[UNASSIGNED, d[1], d[2]]])],
        [c.rec("BrokerRegistrationChangeRecord", broker_id=3, broker_epoch=30, fenced=1)],
        [c.rec("BrokerRegistrationChangeRecord", 1, broker_id=2, broker_epoch=20, in_controlled_shutdown=1)],
        [c.move(1, 0, [d[0], d[1], d[2]])],
    ])
    a = analyze_log(root)
    assert _column(a, "phase") == ["native"] * 4
    assert _column(a, "zk_migration_state") == ["NONE"] * 4
    assert _column(a, "brokers_fenced") == [0, 1, 1, 1]
    assert _column(a, "brokers_controlled_shutdown") == [0, 0, 1, 1]
    assert _column(a, "brokers_unfenced") == [3, 2, 2, 2]  # ActiveBrokerCount: broker 2 shutting down is active
    assert _column(a, "offline_replicas") == [0, 1, 1, 1]
    assert _column(a, "replicas_unassigned") == [1, 1, 1, 0]
    assert _column(a, "dir_transition") == ["in-progress"] * 3 + ["complete"]
    assert [e["event"] for e in a.events] == ["metadata-version", "dir-transition", "dir-transition"]


@settings(max_examples=6)  # each example generates a 1,500-record log and recounts every state in full
@given(seed=st.integers(0, 2**16), scenario=st.sampled_from(["native", "zk-migration", "jbod-transition", "mixed"]))
def test_rows_equal_a_full_recount_of_every_published_state(tmp_path_factory: pytest.TempPathFactory, seed: int,
                                                            scenario: str) -> None:
    root = tmp_path_factory.mktemp("gen")
    write_history(root, seed, HistorySettings(brokers=4, topics=4, partitions=3, records=1500, scenario=scenario),
                  snapshot_every=10_000)
    a = analyze_log(root, "c")
    loader = MetadataLoader()
    with MetadataLog.open(root) as log:
        batches = list(log.scan(0))
        for row, batch in zip(a.rows, batches, strict=True):  # a row per batch, control batches too
            load_scanned(loader, batch, log.directory)
            assert row == {"cluster": "c", "last_offset": batch[1], "timestamp": batch[2],
                           **recount.timeline(loader.image), "open_transaction": int(loader.in_transaction)}
    with MetadataHistory(root) as h:
        published = {s.offset: s.image for s in h.states()}
    assert {r["last_offset"] for r in a.rows if not r["open_transaction"]} == set(published)
    assert list(a.rows[0]) == list(TIMELINE.names)


# ---- each column is Kafka's controller metric (ControllerMetricsChanges, ControllerMetadataMetricsPublisher) ----
def _image(*records: Any) -> MetadataImage:
    delta = MetadataDelta(EMPTY)
    for offset, (record, _) in enumerate(records):
        delta.replay(record, offset)
    return delta.apply()


def _counts(image: MetadataImage) -> dict[str, Any]:
    """The row both ways: counted from scratch, and by the step (which must agree)."""
    row = recount.timeline(image)
    step = ClusterStep("c", image, lambda: image)
    step.batch(0, 0, False)
    got = dict(zip(TIMELINE.names, next(step.take()[TIMELINE.name].tuples()), strict=True))
    assert got == {"cluster": "c", "last_offset": 0, "timestamp": 0, **row, "open_transaction": 0}
    return row


def _cs(bid: int, epoch: int, *, fenced: int = 0) -> tuple[Any, int]:
    fields: dict[str, Any] = {"in_controlled_shutdown": 1}
    if fenced:
        fields["fenced"] = fenced
    return c.rec("BrokerRegistrationChangeRecord", 1, broker_id=bid, broker_epoch=epoch, **fields)


BROKERS = (c.broker(1, 10), c.broker(2, 20), c.broker(3, 30, zk=True), c.broker(4, 40), c.unfence(1, 10),
           c.unfence(2, 20), c.unfence(3, 30))  # 1, 2, 3 unfenced (3 a ZooKeeper broker); 4 fenced


def test_brokers_unfenced_is_active_broker_count() -> None:
    # ControllerMetricsChanges.handleBrokerChange: active = !fenced, whether in controlled shutdown or not
    assert _counts(_image(*BROKERS))["brokers_unfenced"] == 3
    assert _counts(_image(*BROKERS, _cs(2, 20)))["brokers_unfenced"] == 3


def test_brokers_fenced_is_fenced_broker_count() -> None:
    assert _counts(_image(*BROKERS))["brokers_fenced"] == 1
    assert _counts(_image(*BROKERS, _cs(2, 20), _cs(1, 10, fenced=1)))["brokers_fenced"] == 2


def test_brokers_controlled_shutdown_counts_fenced_brokers_too() -> None:
    # handleBrokerChange counts inControlledShutdown apart from fenced: a fenced broker in shutdown counts
    row = _counts(_image(*BROKERS, _cs(2, 20), _cs(1, 10, fenced=1)))
    assert (row["brokers_controlled_shutdown"], row["brokers_fenced"], row["brokers_unfenced"]) == (2, 2, 2)


def test_brokers_zk_is_migrating_zk_broker_count() -> None:
    # ControllerMetadataMetricsPublisher.publishSnapshot: BrokerRegistration.isMigratingZkBroker, fenced or not
    assert _counts(_image(*BROKERS))["brokers_zk"] == 1
    assert _counts(_image(*BROKERS, c.broker(5, 50, zk=True)))["brokers_zk"] == 2


def _partitions(*leaders_and_replicas: tuple[int, list[int]]) -> MetadataImage:
    image = _image(*BROKERS, *c.topic(1, [replicas or [1] for _, replicas in leaders_and_replicas]))
    topic = image.topics[c.uuid(1)]
    parts = {pid: p._replace(leader=leaders_and_replicas[pid][0], replicas=tuple(leaders_and_replicas[pid][1]),
                             isr=tuple(leaders_and_replicas[pid][1]),
                             directories=(c.MIGRATING,) * len(leaders_and_replicas[pid][1]))
             for pid, p in topic.partitions.items()}
    topic = replace(topic, partitions=parts)
    return replace(image, topics={topic.id: topic}, topics_by_name={topic.name: topic})


def test_offline_partitions_are_partitions_without_a_leader() -> None:
    # PartitionRegistration.hasLeader: leader != LeaderConstants.NO_LEADER (-1)
    row = _counts(_partitions((1, [1, 2]), (-1, [1, 2]), (-1, []), (2, [1, 2])))
    assert (row["partitions"], row["offline_partitions"]) == (4, 2)


def test_preferred_replica_imbalance_counts_partitions_not_led_by_their_first_replica() -> None:
    # PartitionRegistration.hasPreferredLeader: leader == preferredReplica(), replicas[0] or NO_LEADER when empty:
    # a partition without a leader is imbalanced, unless it has no replicas at all
    row = _counts(_partitions((1, [1, 2]), (2, [1, 2]), (-1, [1, 2]), (-1, [])))
    assert row["preferred_replica_imbalance"] == 2


def test_a_control_batch_gets_a_row_and_a_leader_change_an_event(tmp_path: Path) -> None:
    root = c.write(tmp_path / "leaders", [
        c.Leader(3000, 1),                                                         # 0
        [c.feature(17), c.broker(1, 10), c.unfence(1, 10)],                        # 1..3
        [c.begin(), c.broker(2, 20)],                                              # 4..5
        c.Leader(3001, 2),                                                         # 6, inside the transaction
        [c.end()],                                                                 # 7
    ])
    a = analyze_log(root)
    assert _column(a, "last_offset") == [0, 3, 5, 6, 7]
    assert _column(a, "open_transaction") == [0, 0, 1, 1, 0]
    assert _column(a, "brokers_unfenced") == [0, 1, 1, 1, 1]
    assert _column(a, "brokers_fenced") == [0, 0, 0, 0, 1]  # broker 2, registered in the transaction
    assert _events(a, "controller-leader") == [(0, "controller 3000 leads in epoch 1"),
                                               (6, "controller 3001 leads in epoch 2")]


def test_records_after_an_abort_in_a_batch_count_without_the_aborted_ones(tmp_path: Path) -> None:
    """metalog's difference from Kafka's MetadataBatchLoader (which would keep broker 2): see the loader."""
    root = c.write(tmp_path / "abort", [[c.broker(1, 10), c.begin(), c.broker(2, 20), c.abort(), c.broker(3, 30)]])
    a = analyze_log(root)
    assert _column(a, "brokers_fenced") == [2]
    assert _events(a, "aborted-transaction") == [(3, "transaction begun at offset 1 aborted")]
