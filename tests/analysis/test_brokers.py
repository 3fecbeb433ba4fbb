"""broker_timeline, directory_timeline and directory_failures: narrated crafted histories, the change form read
back equal to a from-scratch count after every batch, both engines equal, and the files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from metalog.analysis.domain.schema import BROKERS, DIRECTORIES, FAILURES
from metalog.analysis.tables import read_table
from metalog.generate.generator import HistorySettings
from metalog.generate.writer import write_history
from metalog.replay.history import MetadataHistory
from tests.analysis import crafted as c
from tests.analysis.domain import recount
from tests.analysis.oracle import BrokerTables, analyze_log, analyze_parallel, analyze_python, write_outputs
from tests.analysis.test_timeline import jbod_transition, zk_migration

D1A, D1B, D2A = str(c.uuid(501)), str(c.uuid(502)), str(c.uuid(601))
BROKER_COLUMNS, DIRECTORY_COLUMNS, FAILURE_COLUMNS = BROKERS.names, DIRECTORIES.names, FAILURES.names


def brokers(a: Any) -> list[tuple[Any, ...]]:
    """(offset, broker, state, controlled shutdown, zk, log dirs, migrating, unassigned, lost, assigned,
    offline, leaders) of each broker_timeline row."""
    return [tuple(r[k] for k in list(BROKER_COLUMNS)[1:2] + list(BROKER_COLUMNS)[3:]) for r in a.by_broker.brokers]


def directories(a: Any) -> list[tuple[Any, ...]]:
    """(offset, broker, directory, online, replicas, leaders, offline replicas, offline partitions)."""
    return [tuple(r[k] for k in list(DIRECTORY_COLUMNS)[1:2] + list(DIRECTORY_COLUMNS)[3:])
            for r in a.by_broker.directories]


def test_jbod_transition_per_broker_and_directory(tmp_path: Path) -> None:
    """The KIP-858 story per broker and directory: MIGRATING replicas, brokers registering their log dirs,
    replicas reporting a directory, a directory failing (ReplicationControlManager.handleDirectoriesOffline's
    trigger: a BrokerRegistrationChangeRecord without it, same epoch) and its replica moved to LOST."""
    a = analyze_log(jbod_transition(tmp_path / "jbod"))
    assert brokers(a) == [
        (7, 1, "unfenced", 0, 0, 0, 2, 0, 0, 0, 0, 1),   # two MIGRATING replicas, leads t1-0
        (7, 2, "unfenced", 0, 0, 0, 2, 0, 0, 0, 0, 1),   # leads t1-1
        (10, 1, "unfenced", 0, 0, 2, 2, 0, 0, 0, 0, 1),  # registered again with two log dirs
        (12, 2, "unfenced", 0, 0, 1, 2, 0, 0, 0, 0, 1),
        (13, 1, "unfenced", 0, 0, 2, 1, 0, 0, 1, 0, 1),  # t1-0 in d1a (broker 1) and d2a (broker 2)
        (13, 2, "unfenced", 0, 0, 1, 1, 0, 0, 1, 0, 1),
        (14, 1, "unfenced", 0, 0, 2, 0, 0, 0, 2, 0, 1),  # t1-1 in d2a and d1b
        (14, 2, "unfenced", 0, 0, 1, 0, 0, 0, 2, 0, 1),
        (15, 1, "unfenced", 0, 0, 1, 0, 0, 0, 2, 1, 1),  # d1b failed: its replica of t1-1 is offline
        (16, 1, "unfenced", 0, 0, 1, 0, 0, 1, 1, 1, 1),  # that replica's directory is LOST now
    ]
    assert directories(a) == [
        (10, 1, D1A, 1, 0, 0, 0, 0), (10, 1, D1B, 1, 0, 0, 0, 0),  # listed, no replica yet
        (12, 2, D2A, 1, 0, 0, 0, 0),
        (13, 1, D1A, 1, 1, 1, 0, 0), (13, 2, D2A, 1, 1, 0, 0, 0),
        (14, 1, D1B, 1, 1, 0, 0, 0), (14, 2, D2A, 1, 2, 1, 0, 0),
        (15, 1, D1B, 0, 1, 0, 1, 0),  # offline, still holding the replica
        (16, 1, D1B, 0, 0, 0, 0, 0),  # no longer named by anything: its last row has the zero values
    ]
    assert a.by_broker.failures == [{"cluster": "jbod", "offset": 15, "timestamp": c.T0 + 6000, "broker": 1,
                                     "directory": D1B, "topic": "t1", "partition": 1, "leader": 2}]
    assert [list(r) for r in a.by_broker.brokers[:1] + a.by_broker.directories[:1] + a.by_broker.failures] == \
        [list(BROKER_COLUMNS), list(DIRECTORY_COLUMNS), list(FAILURE_COLUMNS)]


def test_zk_brokers_and_the_aborted_load(tmp_path: Path) -> None:
    """ZooKeeper brokers carry zk=1 until they register on KRaft; the aborted initial load never shows."""
    a = analyze_log(zk_migration(tmp_path / "zk"))
    assert brokers(a) == [
        (5, 1, "unfenced", 0, 1, 0, 0, 0, 0, 0, 0, 0), (5, 2, "unfenced", 0, 1, 0, 0, 0, 0, 0, 0, 0),
        (15, 1, "unfenced", 0, 1, 0, 2, 0, 0, 0, 0, 1), (15, 2, "unfenced", 0, 1, 0, 2, 0, 0, 0, 0, 1),
        (18, 1, "unfenced", 0, 0, 0, 2, 0, 0, 0, 0, 1),  # broker 1 on KRaft
        (20, 2, "unfenced", 0, 0, 0, 2, 0, 0, 0, 0, 1),
    ]
    assert directories(a) == [] and a.by_broker.failures == []


def test_fenced_shutdown_unregistered_and_leaderless(tmp_path: Path) -> None:
    """Offline replicas follow state.image.offline_replicas (a fenced or unregistered broker; Kafka's
    DirectoryId.isOnline), a broker in controlled shutdown keeps its state, a replica on a broker that never
    registered names it as unregistered, and a partition without a leader counts in its directories' offline
    partitions."""
    d = [c.uuid(700 + i) for i in range(3)]
    root = c.write(tmp_path / "h", [
        [c.feature(17), *(c.broker(b, b * 10, dirs=[d[b - 1]]) for b in (1, 2)), c.unfence(1, 10), c.unfence(2, 20),
         *c.topic(1, [[1, 2], [2, 9]], dirs=[[d[0], d[1]], [d[1], d[2]]])],        # 0..7: broker 9 never registers
        [c.rec("BrokerRegistrationChangeRecord", 1, broker_id=2, broker_epoch=20, in_controlled_shutdown=1)],  # 8
        [c.rec("BrokerRegistrationChangeRecord", broker_id=2, broker_epoch=20, fenced=1)],                     # 9
        [c.rec("PartitionChangeRecord", partition_id=1, topic_id=c.uuid(1), leader=-1)],                      # 10
        [c.rec("UnregisterBrokerRecord", broker_id=2, broker_epoch=20)],                                       # 11
    ])
    a = analyze_log(root)
    assert brokers(a) == [
        (7, 1, "unfenced", 0, 0, 1, 0, 0, 0, 1, 0, 1),
        (7, 2, "unfenced", 0, 0, 1, 0, 0, 0, 2, 0, 1),
        (7, 9, "unregistered", 0, 0, 0, 0, 0, 0, 1, 1, 0),
        (8, 2, "unfenced", 1, 0, 1, 0, 0, 0, 2, 0, 1),
        (9, 2, "fenced", 1, 0, 1, 0, 0, 0, 2, 2, 1),
        (10, 2, "fenced", 1, 0, 1, 0, 0, 0, 2, 2, 0),
        (11, 2, "unregistered", 0, 0, 0, 0, 0, 0, 2, 2, 0),
    ]
    assert directories(a) == [
        (7, 1, str(d[0]), 1, 1, 1, 0, 0), (7, 2, str(d[1]), 1, 2, 1, 0, 0), (7, 9, str(d[2]), 0, 1, 0, 1, 0),
        (9, 2, str(d[1]), 1, 2, 1, 2, 0),   # fenced: its replicas are offline, its directory still listed
        (10, 2, str(d[1]), 1, 2, 0, 2, 1), (10, 9, str(d[2]), 0, 1, 0, 1, 1),  # t1-1 has no leader
        (11, 2, str(d[1]), 0, 2, 0, 2, 1),  # unregistered: not online
    ]


def current(tables: BrokerTables, through: int) -> tuple[dict[int, tuple[Any, ...]],
                                                          dict[tuple[int, str], tuple[int, ...]]]:
    """The values the rows of ``tables`` (one cluster) give each broker and directory after offset ``through``
    (the zero values left out): the change form read back."""
    brokers: dict[int, tuple[Any, ...]] = {}
    dirs: dict[tuple[int, str], tuple[int, ...]] = {}
    for row in tables.brokers:
        if row["last_offset"] <= through:
            brokers[row["broker"]] = tuple(row[c] for c in BROKER_COLUMNS[4:])
    for row in tables.directories:
        if row["last_offset"] <= through:
            dirs[(row["broker"], row["directory"])] = tuple(row[c] for c in DIRECTORY_COLUMNS[5:])
    return ({k: v for k, v in brokers.items() if v != recount.BROKER_ZERO},
            {k: v for k, v in dirs.items() if v != recount.DIRECTORY_ZERO})


def read_back_equals_scratch(tables: BrokerTables, image_at: list[tuple[int, int, Any]]) -> None:
    """After every batch, the values the rows give every broker and directory are counted from the image."""
    for last, _, image in image_at:
        assert current(tables, last) == recount.brokers_and_directories(image), f"after offset {last}"


@pytest.mark.slow  # 1.5 s or more of CPU: the full suite runs it, --quick does not
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**16), scenario=st.sampled_from(["native", "zk-migration", "jbod-transition", "mixed"]))
def test_rows_equal_a_full_count_after_every_batch(tmp_path_factory: pytest.TempPathFactory, seed: int,
                                                   scenario: str) -> None:
    root = tmp_path_factory.mktemp("gen")
    write_history(root, seed, HistorySettings(brokers=4, topics=4, partitions=3, records=1500, scenario=scenario),
                  snapshot_every=10_000)
    a = analyze_log(root, "c")
    with MetadataHistory(root) as h:
        states = list(h.states())
    read_back_equals_scratch(a.by_broker, states)
    # a row only where something changed: no two rows of one broker (directory) in a row carry equal values
    for rows, key, skip in ((a.by_broker.brokers, ("broker",), 4), (a.by_broker.directories, ("broker", "directory"),
                                                                     5)):
        last: dict[Any, Any] = {}
        for r in rows:
            k, values = tuple(r[x] for x in key), tuple(r.values())[skip:]
            assert last.get(k) != values
            last[k] = values


def test_the_mixed_scenario_fails_a_directory_and_names_its_partitions(tmp_path: Path) -> None:
    root = tmp_path / "mixed"
    write_history(root, 3, HistorySettings(brokers=4, topics=6, partitions=3, records=8000, scenario="mixed"),
                  snapshot_every=10**9)
    a = analyze_log(root, "c")
    failures = [e for e in a.events if e["event"] == "directory-failure"]
    assert failures and a.by_broker.failures
    named = {(f["offset"], f"broker {f['broker']} lost directory {f['directory']}") for f in a.by_broker.failures}
    assert named <= {(e["offset"], e["detail"]) for e in failures}  # every row belongs to a failure event
    with MetadataHistory(root) as h:
        for f in a.by_broker.failures:
            image = h.state_at(f["offset"]).image
            part = image.topic(f["topic"]).partitions[f["partition"]]
            assert str(part.directory(f["broker"])) == f["directory"] and part.leader == f["leader"]


def test_parallel_ranges_join_to_the_sequential_tables(tmp_path: Path) -> None:
    """Every cut of a crafted history: each range starts from the state after the range before, so its rows are
    the changes from there and the ranges' tables join as they are."""
    root = jbod_transition(tmp_path / "h")
    sequential = analyze_log(root, "c")
    for n in range(1, 9):
        got = analyze_parallel(root, n, "c").by_broker
        assert (got.brokers, got.directories, got.failures) == \
            (sequential.by_broker.brokers, sequential.by_broker.directories, sequential.by_broker.failures), n


def test_the_tables_are_written_and_read_back(tmp_path: Path) -> None:
    a = analyze_python([jbod_transition(tmp_path / "jbod"), zk_migration(tmp_path / "zk")])
    written = {p.name for p in write_outputs(tmp_path / "out", a, 60_000)}
    for name, rows in (("broker_timeline", a.by_broker.brokers), ("directory_timeline", a.by_broker.directories),
                       ("directory_failures", a.by_broker.failures)):
        assert f"{name}.csv" in written
        assert read_table(tmp_path / "out" / f"{name}.csv") == rows
        if name in written:  # the Parquet table's directory (clusters in name order: jbod, zk)
            assert read_table(tmp_path / "out" / name) == rows
    assert {r["cluster"] for r in a.by_broker.brokers} == {"jbod", "zk"}


def test_a_failed_directory_that_held_nothing_has_one_row(tmp_path: Path) -> None:
    """The directory-failure event has its row in directory_failures even when no replica was on the directory:
    topic empty, partition -1."""
    d1, d2 = c.uuid(801), c.uuid(802)
    root = c.write(tmp_path / "h", [
        [c.feature(17), c.broker(1, 10, dirs=[d1, d2]), c.unfence(1, 10), *c.topic(1, [[1]], dirs=[[d1]])],
        [c.rec("BrokerRegistrationChangeRecord", 2, broker_id=1, broker_epoch=10, log_dirs=[d1])],  # d2 fails
    ])
    a = analyze_log(root)
    assert [(e["offset"], e["detail"]) for e in a.events if e["event"] == "directory-failure"] == \
        [(5, f"broker 1 lost directory {d2}")]
    assert a.by_broker.failures == [{"cluster": "h", "offset": 5, "timestamp": c.T0 + 1000, "broker": 1,
                                     "directory": str(d2), "topic": "", "partition": -1, "leader": -1}]
    assert directories(a)[-1] == (5, 1, str(d2), 0, 0, 0, 0, 0)  # no longer listed, nothing on it: its zero row
