"""``why``: the states of a partition, a broker and a directory as Kafka defines them, since which published point,
the records that made them, and the chain behind them. Incidents told record by record (a fenced broker, a failed
disk, an unclean leader election), Kafka's own files, a generated failed disk, and an oracle over random
histories (each state computed from the images Kafka's loader published at every offset)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from metalog.codec.messages import (
    ConfigRecord,
    FeatureLevelRecord,
    PartitionChangeRecord,
    PartitionRecord,
    RegisterBrokerRecord,
    TopicRecord,
)
from metalog.codec.uuid import Uuid
from metalog.errors import MetalogError, PointError
from metalog.log import Durability, LogConfig, MetadataLog, Mode
from metalog.replay.history import MetadataHistory
from metalog.replay.points import END, parse_point
from metalog.replay.why import Answer, ask, parse_partition, render, why_broker, why_directory, why_partition
from metalog.state.image import MetadataImage
from tests.state.histories import histories

TOPIC = Uuid.of(9, 9)
DIRS = {b: Uuid.of(5, b) for b in (1, 2, 3)}


def register(broker: int, *, dirs: list[Uuid] | None = None, epoch: int = 1) -> tuple[Any, int]:
    return RegisterBrokerRecord(broker_id=broker, incarnation_id=Uuid.of(7, broker), broker_epoch=epoch,
                                rack=None, fenced=False, log_dirs=[DIRS[broker]] if dirs is None else dirs), 3


def change(**fields: Any) -> tuple[Any, int]:
    return PartitionChangeRecord(partition_id=0, topic_id=TOPIC, **fields), 2


def broker_change(broker: int, **fields: Any) -> tuple[Any, int]:
    from metalog.codec.messages import BrokerRegistrationChangeRecord

    return BrokerRegistrationChangeRecord(broker_id=broker, broker_epoch=1, **fields), 2


def incident(path: Path, *steps: list[tuple[Any, int]]) -> Path:
    """A log whose batches are ``steps`` (one batch each, a second apart), after a cluster of three brokers with a
    topic ``orders`` of one partition on all three, led by 1, min.insync.replicas 2."""
    setup = [(FeatureLevelRecord(name="metadata.version", feature_level=21), 0), register(1), register(2),
             register(3), (TopicRecord(name="orders", topic_id=TOPIC), 0),
             (PartitionRecord(partition_id=0, topic_id=TOPIC, replicas=[1, 2, 3], isr=[1, 2, 3], leader=1,
                              leader_epoch=0, partition_epoch=0, directories=[DIRS[1], DIRS[2], DIRS[3]]), 2),
             (ConfigRecord(resource_type=2, resource_name="orders", name="min.insync.replicas", value="2"), 0)]
    with MetadataLog.open(path, Mode.CREATE, config=LogConfig(durability=Durability.NONE)) as log:
        log.append(setup, epoch=1, timestamp=1_700_000_000_000)
        for i, step in enumerate(steps, 1):
            log.append(step, epoch=1, timestamp=1_700_000_000_000 + 1000 * i)
    return path


def states(a: Answer) -> dict[str, tuple[int | None, list[str]]]:
    return {c.state: (None if c.since is None else c.since.offset,
                      [] if c.since is None else [f"{r.type}@{r.offset}" for r in c.since.records])
            for c in a.conditions}


def chain(a: Answer) -> list[tuple[int, str, str]]:
    return [(x.offset, x.what, x.change) for x in a.chain]


def why(path: Path, question: str, at: str | None = None) -> Answer:
    with MetadataHistory(path) as h:
        return ask(h, h.state_at_point(END if at is None else parse_point(at)), question)


# ---- incidents told record by record ----------------------------------------------------------------------------
def test_a_fenced_broker_takes_its_replicas_out_of_the_isr(tmp_path: Path) -> None:
    """The controller fences broker 1 and moves leadership and the ISR away in one batch (offsets 7..8)."""
    log = incident(tmp_path / "log", [broker_change(1, fenced=1), change(isr=[2, 3], leader=2)])
    a = why(log, "orders-0")
    assert states(a) == {
        "under-replicated": (8, ["PARTITION_CHANGE_RECORD@8"]),
        "offline replicas": (8, ["BROKER_REGISTRATION_CHANGE_RECORD@7", "PARTITION_CHANGE_RECORD@8"])}
    assert chain(a) == [(8, "broker 1 fenced", "false -> true"), (8, "orders-0 isr", "[1,2,3] -> [2,3]"),
                        (8, "orders-0 leader", "1 -> 2"), (8, "orders-0 leaderEpoch", "0 -> 1")]
    b = why(log, "broker 1")
    assert states(b) == {"fenced": (8, ["BROKER_REGISTRATION_CHANGE_RECORD@7"]),
                         "offline replicas": (8, ["BROKER_REGISTRATION_CHANGE_RECORD@7"])}
    assert b.facts["offlineReplicas"] == ["orders-0"] and (b.facts["leads"], b.facts["inIsr"]) == (0, 0)
    assert states(why(log, "orders-0", at="6")) == {}  # before: healthy


def test_a_failed_disk_and_the_partition_left_without_a_leader(tmp_path: Path) -> None:
    """Broker 1 loses its only directory while the ISR is [1]: leadership cannot move (KIP-858)."""
    log = incident(tmp_path / "log", [change(isr=[1])], [broker_change(1, log_dirs=[Uuid.of(5, 99)]),
                                                          change(leader=-1)])
    a = why(log, "orders-0")
    assert states(a) == {
        "offline": (9, ["PARTITION_CHANGE_RECORD@9"]),
        "under min ISR": (7, ["PARTITION_CHANGE_RECORD@7"]),
        "under-replicated": (7, ["PARTITION_CHANGE_RECORD@7"]),
        "offline replicas": (9, ["BROKER_REGISTRATION_CHANGE_RECORD@8", "PARTITION_CHANGE_RECORD@9"])}
    details = {c.state: c.detail for c in a.conditions}
    assert details["under min ISR"] == "isr [1] is smaller than min.insync.replicas 2 (TOPIC config)"
    assert details["offline replicas"] == f"replica 1 (directory {DIRS[1]} is not among broker 1's log dirs)"
    assert chain(a) == [(7, "orders-0 isr", "[1,2,3] -> [1]"),
                        (9, "broker 1 directories", f"[{DIRS[1]}] -> [{Uuid.of(5, 99)}]"),
                        (9, "orders-0 leader", "1 -> -1"), (9, "orders-0 leaderEpoch", "0 -> 1")]
    d = why(log, f"directory {DIRS[1]}")
    assert states(d) == {"lost": (9, ["BROKER_REGISTRATION_CHANGE_RECORD@8"])}
    assert d.facts["offlinePartitions"] == ["orders-0"] and d.facts["brokers"] == [1]
    assert states(why(log, "broker 1")) == {"lost directories": (9, ["BROKER_REGISTRATION_CHANGE_RECORD@8"]),
                                            "offline replicas": (9, ["BROKER_REGISTRATION_CHANGE_RECORD@8"])}


def test_an_unclean_leader_election(tmp_path: Path) -> None:
    """The ISR shrinks to [1], broker 1 is fenced and the partition goes offline; then broker 3, not in the ISR,
    is elected (unclean.leader.election.enable): ISR [3], leaderRecoveryState RECOVERING."""
    log = incident(tmp_path / "log", [change(isr=[1])], [broker_change(1, fenced=1), change(leader=-1)],
                   [change(leader=3, isr=[3], leader_recovery_state=1)])
    offline = why(log, "orders-0", at="9")
    assert list(states(offline)) == ["offline", "under min ISR", "under-replicated", "offline replicas"]
    a = why(log, "orders-0")
    assert states(a) == {
        "leader recovering": (10, ["PARTITION_CHANGE_RECORD@10"]),
        "under min ISR": (7, ["PARTITION_CHANGE_RECORD@7"]),
        "under-replicated": (7, ["PARTITION_CHANGE_RECORD@7"]),
        "offline replicas": (9, ["BROKER_REGISTRATION_CHANGE_RECORD@8", "PARTITION_CHANGE_RECORD@9"])}
    assert (10, "orders-0 leader", "-1 -> 3 (unclean: 3 was not in the ISR [1])") in chain(a)
    assert (9, "broker 1 fenced", "false -> true") in chain(a)


def test_a_leader_from_the_elr_is_not_unclean(tmp_path: Path) -> None:
    """KIP-966: a replica in the ELR is elected cleanly though not in the ISR."""
    log = incident(tmp_path / "log", [change(isr=[1], eligible_leader_replicas=[2])],
                   [broker_change(1, fenced=1), change(leader=2, isr=[2], eligible_leader_replicas=[])])
    assert all("unclean" not in x.change for x in why(log, "orders-0").chain)


def test_min_isr_from_the_cluster_default(tmp_path: Path) -> None:
    """No topic config: the cluster default (BROKER/ with an empty name) applies, else Kafka's 1."""
    log = incident(tmp_path / "log", [(ConfigRecord(resource_type=2, resource_name="orders",
                                                    name="min.insync.replicas", value=None), 0), change(isr=[1, 2])],
                   [(ConfigRecord(resource_type=4, resource_name="", name="min.insync.replicas", value="3"), 0)])
    a = why(log, "orders-0")
    assert states(a)["under min ISR"] == (9, ["CONFIG_RECORD@9"])
    assert a.facts["minInsyncReplicas"] == 3 and a.facts["minInsyncReplicasFrom"] == "cluster default BROKER/"
    assert "under min ISR" not in states(why(log, "orders-0", at="8"))


def test_an_unregistered_broker(tmp_path: Path) -> None:
    from metalog.codec.messages import UnregisterBrokerRecord

    log = incident(tmp_path / "log", [(UnregisterBrokerRecord(broker_id=3, broker_epoch=1), 0),
                                      change(isr=[1, 2])])
    b = why(log, "broker 3")
    assert states(b) == {"unregistered": (8, ["UNREGISTER_BROKER_RECORD@7"]),
                         "offline replicas": (8, ["UNREGISTER_BROKER_RECORD@7"])}
    a = why(log, "orders-0")
    assert (8, "broker 3", "unregistered") in chain(a)
    assert {c.state: c.detail for c in a.conditions}["offline replicas"] == \
        "replica 3 (broker 3 is not registered)"


def test_questions_that_have_no_answer(tmp_path: Path) -> None:
    log = incident(tmp_path / "log", [change(isr=[1, 2])])
    with MetadataHistory(log) as h:
        end = h.state_at()
        with pytest.raises(MetalogError, match="no topic 'nope' at offset 7"):
            why_partition(h, end, "nope", 0)
        with pytest.raises(MetalogError, match="topic 'orders' has no partition 4 at offset 7"):
            why_partition(h, end, "orders", 4)
        with pytest.raises(MetalogError, match="broker 9 is not registered at offset 7, and was not before"):
            why_broker(h, end, 9)
        with pytest.raises(MetalogError, match="no broker registers directory AAAAAAAAAAAAAAAAAAAAZw"):
            why_directory(h, end, str(Uuid.of(0, 103)))
        with pytest.raises(PointError):
            h.state_at_point(parse_point("99"))
    with pytest.raises(MetalogError, match="not a partition: 'orders'"):
        parse_partition("orders")
    assert parse_partition("my-topic-12") == ("my-topic", 12)


def test_a_point_inside_a_batch_shows_the_state_published_before_it(tmp_path: Path) -> None:
    log = incident(tmp_path / "log", [change(isr=[1, 2]), change(isr=[1])])
    a = why(log, "orders-0", at="7")
    assert (a.result.requested, a.result.offset) == (7, 6) and states(a) == {}
    assert render(a)[:2] == ["orders-0 at offset 6 (2023-11-14T22:13:20.000Z): healthy",
                             "  (offset 7 is inside batch 7..8; the state shown is the one published at 6)"]


# ---- Kafka's files and a generated failed disk ----------------------------------------------------------------
def test_kafkas_jbod_scenario(jbod_dir: Path) -> None:
    """Offset 15..16: broker 1's directory bCF3l0RI goes (BrokerRegistrationChangeRecord@16) and foo-0's ISR
    shrinks to [2,3]; at 24 broker 3 is fenced and enters controlled shutdown (22, 24), foo-1's ISR shrinks."""
    a = why(jbod_dir, "foo-0")
    assert states(a) == {"under-replicated": (16, ["PARTITION_CHANGE_RECORD@15"]),
                         "offline replicas": (16, ["PARTITION_CHANGE_RECORD@15",
                                                   "BROKER_REGISTRATION_CHANGE_RECORD@16"])}
    assert (24, "broker 3 fenced", "false -> true") in chain(a)
    assert (16, "broker 1 directories", "[upjfkCrUR9GNn1i94ip1wg,bCF3l0RIQjOKhUqgbivHZA] -> "
                                        "[upjfkCrUR9GNn1i94ip1wg]") in chain(a)
    b = why(jbod_dir, "broker 3")
    assert list(states(b)) == ["fenced", "in controlled shutdown", "offline replicas"]
    assert states(b)["fenced"][1] == ["BROKER_REGISTRATION_CHANGE_RECORD@22", "BROKER_REGISTRATION_CHANGE_RECORD@24"]


def test_a_generated_failed_disk(tmp_path: Path) -> None:
    from metalog.generate.generator import HistorySettings
    from metalog.generate.writer import write_history

    events: list[str] = []
    out = write_history(tmp_path / "jbod", 7, HistorySettings(records=4000, scenario="jbod-transition"),
                        snapshot_every=10**9, events=events)
    (lost,) = [e for e in events if "loses log dir" in e]
    offset, broker, directory = int(lost.split()[1].replace(",", "")), int(lost.split()[3]), lost.split()[-1]
    with MetadataHistory(out.path) as h:
        end = h.state_at()
        d = why_directory(h, end, directory)
        (failed,) = [c for c in d.conditions if c.state == "lost"]
        assert failed.since is not None and [(r.type, r.offset) for r in failed.since.records] == \
            [("BROKER_REGISTRATION_CHANGE_RECORD", offset)]
        assert d.facts["brokers"] == [broker] and d.facts["replicas"] == len(d.facts["offlineReplicas"]) > 0
        for label in d.facts["offlinePartitions"]:  # every partition left without a leader names the failure
            a = why_partition(h, end, *parse_partition(label))
            since = {c.state: c.since for c in a.conditions}["offline"]
            assert since is not None and since.offset == failed.since.offset
            assert any(x.what == f"broker {broker} directories" and directory in x.change for x in a.chain)


# ---- an oracle: each state from the image Kafka's loader published at every offset -------------------------
def image_states(image: MetadataImage, topic: str, pid: int) -> set[str]:
    p = image.topics_by_name[topic].partitions[pid]
    out = set()
    if p.leader == -1:
        out.add("offline")
    if p.leader_recovery_state == 1:
        out.add("leader recovering")
    if len(p.isr) < 1:  # no min.insync.replicas in these histories: Kafka's default 1
        out.add("under min ISR")
    if len(p.isr) < len(p.replicas):
        out.add("under-replicated")
    if image.offline_replicas(p):
        out.add("offline replicas")
    return out


def broker_states(image: MetadataImage, broker: int) -> set[str]:
    b = image.brokers.get(broker)
    if b is None:
        return {"unregistered"}
    return {s for s, on in (("fenced", b.fenced), ("in controlled shutdown", b.in_controlled_shutdown)) if on}


def runs(h: MetadataHistory, last: int, states_of: Any) -> dict[str, int]:
    """Each state holding at ``last`` and the first published point of its current run, from the states
    published at or before every offset."""
    since: dict[str, int] = {}
    held: set[str] = set()
    seen = -2
    for offset in range(last + 1):
        try:
            r = h.state_at(offset)
        except PointError:
            continue
        if r.offset == seen:
            continue
        seen = r.offset
        now = states_of(r.image)
        since = {s: since.get(s, r.offset) if s in held else r.offset for s in now}
        held = now
    return since


@pytest.mark.slow  # about 2 s of CPU: every example replays its log once per offset for the oracle
@settings(max_examples=25, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(values=histories(max_size=60), cuts=st.lists(st.integers(1, 6), min_size=1, max_size=30),
       at=st.floats(0.3, 1.0))
def test_states_and_since_agree_with_the_published_images(values: list[bytes], cuts: list[int], at: float,
                                                          tmp_path_factory: pytest.TempPathFactory) -> None:
    path = tmp_path_factory.mktemp("why") / "log"
    with MetadataLog.open(path, Mode.CREATE, config=LogConfig(durability=Durability.NONE)) as log:
        i = 0
        for n in cuts * 20:
            if i >= len(values):
                break
            log.append(values[i:i + n], epoch=1, timestamp=1000 + i)
            i += n
    with MetadataHistory(path) as h:
        try:
            result = h.state_at(int(h.end_offset * at))
        except PointError:  # before the first state published
            assume(False)
        image = result.image
        partitions = [(t.name, pid) for t in image.topics_by_name.values() for pid in t.partitions]
        assume(partitions or image.brokers)
        for topic, pid in partitions:
            a = why_partition(h, result, topic, pid)
            expected = runs(h, result.offset, lambda im, t=topic, p=pid: image_states(im, t, p)
                            if t in im.topics_by_name and p in im.topics_by_name[t].partitions else set())
            assert {c.state: c.since.offset if c.since else None for c in a.conditions} == expected
        for broker in image.brokers:
            b = why_broker(h, result, broker)
            expected = runs(h, result.offset, lambda im, n=broker: broker_states(im, n))
            got = {c.state: c.since.offset if c.since else None for c in b.conditions
                   if c.state in ("unregistered", "fenced", "in controlled shutdown")}
            assert got == expected
