"""The quorum as the log records it: elections from LeaderChange control records (the batch's epoch), the voter set
from VotersRecord (kraft.version 1) or the ids a LeaderChange names (kraft.version 0), kraft.version from
KRaftVersionRecord, and the snapshot a log starts after (Kafka's KRaftControlRecordStateMachine, LeaderState's
appendStartOfEpochControlRecords)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from metalog.codec.messages import KRaftVersionRecord, LeaderChangeMessage, NoOpRecord, VotersRecord
from metalog.codec.messages import leader_change_message as lcm
from metalog.codec.messages import voters_record as vr
from metalog.codec.uuid import Uuid
from metalog.errors import LogError
from metalog.log import Durability, LogConfig, MetadataLog, Mode
from metalog.log import files as log_files
from metalog.replay.quorum import NO_LEADER, Voter, describe_quorum, quorum_history

CM = LeaderChangeMessage
NOOP = (NoOpRecord(), 0)


def election(leader: int, voters: list[int], granting: list[int] | None = None) -> tuple[LeaderChangeMessage, int]:
    return CM(version=0, leader_id=leader, voters=[lcm.Voter(voter_id=v) for v in voters],
              granting_voters=[lcm.Voter(voter_id=v) for v in (granting or [leader])]), 0


def voters_record(*ids: int, host: str = "c") -> tuple[VotersRecord, int]:
    return VotersRecord(version=0, voters=[
        vr.Voter(voter_id=i, voter_directory_id=Uuid.of(0, i + 1),
                           endpoints=[vr.Endpoint(name="CONTROLLER", host=f"{host}{i}", port=9093)],
                           k_raft_version_feature=vr.KRaftVersionFeature(min_supported_version=0,
                                                                                   max_supported_version=1))
        for i in ids]), 0


def kraft(level: int) -> tuple[KRaftVersionRecord, int]:
    return KRaftVersionRecord(version=0, k_raft_version=level), 0


def new_log(path: Path) -> MetadataLog:
    config = LogConfig(durability=Durability.NONE, cluster_id="MkU3OEVBNTcwNTJENDM2Qg", node_id=3000)
    return MetadataLog.open(path, Mode.CREATE, config=config)


def rows(path: Path) -> list[tuple[str, int, int, int, tuple[int, ...], int]]:
    with MetadataLog.open(path) as log:
        return [(e.kind, e.offset, e.epoch, e.leader_id, tuple(v.replica_id for v in e.voters), e.kraft_version)
                for e in quorum_history(log)]


# ---- Kafka's files --------------------------------------------------------------------------------------------
def test_kafkas_log_has_one_election_at_offset_0(jbod_dir: Path) -> None:
    """Kafka's JBOD vector: LeaderChange {leaderId 3000, voters [3000], grantingVoters [3000]} in a control batch
    of partitionLeaderEpoch 1 at offset 0."""
    with MetadataLog.open(jbod_dir) as log:
        (event,) = quorum_history(log)
        d = describe_quorum(log)
    assert (event.kind, event.offset, event.epoch, event.leader_id, event.granting_voters) == \
        ("election", 0, 1, 3000, (3000,))
    assert event.voters == (Voter(3000),) and event.timestamp == 1700000000000 and event.record == "LEADER_CHANGE@0"
    assert (d.leader_id, d.leader_epoch, d.voters, d.kraft_version) == (3000, 1, (Voter(3000),), 0)
    assert (d.log_start_offset, d.log_end_offset, d.last_batch_time) == (0, 25, 1700000008000)
    assert d.voters_from == event and d.leader_since == event
    assert (d.snapshot_end_offset, d.quorum_state, d.cluster_id, d.notes) == (None, None, None, ())


def test_a_log_that_starts_after_kafkas_kraft_version_1_snapshot(tmp_path: Path, jbod_dir: Path) -> None:
    """Retention moved the log's start to 25, Kafka's snapshot 25-1 (kraft.version 1, no VotersRecord) holds
    what came before: its header gives kraft.version; its epoch is known, its leader is not."""
    root = tmp_path / "jbod"
    shutil.copytree(jbod_dir, root)
    shutil.copy(next((root / "snapshot-kraft-v1").iterdir()), root / "__cluster_metadata-0")
    log_files.write_offset_checkpoint(root / log_files.LOG_START_OFFSET_CHECKPOINT, {("__cluster_metadata", 0): 25})
    with MetadataLog.open(root) as log:
        assert log.log_start_offset == 25
        (event,) = quorum_history(log)
        d = describe_quorum(log)
    assert (event.kind, event.offset, event.epoch, event.leader_id, event.kraft_version) == \
        ("snapshot", 24, 1, NO_LEADER, 1)
    assert event.record == "00000000000000000025-0000000001.checkpoint" and event.timestamp == 1700000008000
    assert (d.leader_id, d.leader_epoch, d.kraft_version, d.snapshot_end_offset) == (NO_LEADER, 1, 1, 25)
    assert d.notes == ("epoch 1's LeaderChange is not in the log (it began before the log's first offset 25, or "
                       "its writer wrote none): the leader is unknown",)


# ---- generated logs ------------------------------------------------------------------------------------------
def test_a_generated_log_names_its_controller_and_what_its_snapshots_prove(tmp_path: Path) -> None:
    from metalog.generate.generator import HistorySettings
    from metalog.generate.writer import LEADER_ID, write_history

    out = write_history(tmp_path / "gen", 3, HistorySettings(records=1500), snapshot_every=500)
    with MetadataLog.open(out.path) as log:
        events = list(quorum_history(log))
        d = describe_quorum(log)
        latest = log.snapshot_ids()[-1]
    assert [(e.kind, e.offset, e.epoch, e.leader_id) for e in events] == [("election", 0, 1, LEADER_ID)]
    assert (d.leader_id, d.leader_epoch, d.log_end_offset) == (LEADER_ID, 1, out.end_offset + 1)
    assert (d.snapshot_end_offset, d.snapshot) == (latest.end_offset, latest.file_name)
    assert d.cluster_id is not None and d.node_id is not None


# ---- crafted elections, voter sets and kraft.version -----------------------------------------------------------
def test_elections_voters_and_kraft_version_in_log_order(tmp_path: Path) -> None:
    with new_log(tmp_path / "q") as log:
        log.append_control([election(3000, [3000, 3001, 3002])], epoch=1, timestamp=1000)
        log.append([NOOP], epoch=1, timestamp=1500)
        log.append_control([election(3001, [3000, 3001, 3002], [3001, 3002])], epoch=3, timestamp=2000)
        log.append_control([election(3002, [3000, 3001, 3002]), kraft(1), voters_record(3000, 3001, 3002)],
                           epoch=4, timestamp=3000)
        log.append_control([voters_record(3000, 3001, 3002)], epoch=4, timestamp=3500)  # the same set again
        log.append_control([voters_record(3000, 3002, 3003)], epoch=4, timestamp=4000)
        log.append_control([election(3003, [3000, 3002, 3003])], epoch=5, timestamp=5000)
    assert rows(tmp_path / "q") == [
        ("election", 0, 1, 3000, (3000, 3001, 3002), 0),
        ("election", 2, 3, 3001, (3000, 3001, 3002), 0),
        ("election", 3, 4, 3002, (3000, 3001, 3002), 0),
        ("kraft.version", 4, 4, 3002, (3000, 3001, 3002), 1),
        ("voters", 5, 4, 3002, (3000, 3001, 3002), 1),
        ("voters", 7, 4, 3002, (3000, 3002, 3003), 1),
        ("election", 8, 5, 3003, (3000, 3002, 3003), 1),
    ]
    with MetadataLog.open(tmp_path / "q") as log:
        events = list(quorum_history(log))
        d = describe_quorum(log)
    assert events[1].granting_voters == (3001, 3002) and events[1].detail == "3001 leads epoch 3 (votes from 3001,3002)"
    assert events[5].detail == "voters +3003 -3001"
    assert (d.leader_id, d.leader_epoch, d.kraft_version) == (3003, 5, 1)
    assert d.voters_from is not None and d.voters_from.record == "KRAFT_VOTERS@7"
    assert d.voters[2] == Voter(3003, Uuid.of(0, 3004), ("CONTROLLER://c3003:9093",))
    assert d.quorum_state is not None and d.quorum_state["leaderEpoch"] == 5  # metalog's writer keeps it


def test_leader_change_v1_names_voter_directories(tmp_path: Path) -> None:
    message = CM(version=1, leader_id=1, voters=[lcm.Voter(voter_id=1, voter_directory_id=Uuid.of(7, 7))],
                 granting_voters=[lcm.Voter(voter_id=1, voter_directory_id=Uuid.of(7, 7))])
    with new_log(tmp_path / "q") as log:
        log.append_control([(message, 1)], epoch=1, timestamp=1)
    with MetadataLog.open(tmp_path / "q") as log:
        assert describe_quorum(log).voters == (Voter(1, Uuid.of(7, 7)),)


def test_a_log_without_a_leader_change_has_an_unknown_leader(tmp_path: Path) -> None:
    with new_log(tmp_path / "q") as log:
        log.append([NOOP], epoch=3, timestamp=1)
    assert rows(tmp_path / "q") == [("epoch", 0, 3, NO_LEADER, (), 0)]
    with MetadataLog.open(tmp_path / "q") as log:
        d = describe_quorum(log)
    assert (d.leader_id, d.leader_epoch, d.voters_from) == (NO_LEADER, 3, None)


def test_an_empty_log(tmp_path: Path) -> None:
    new_log(tmp_path / "q").close()
    with MetadataLog.open(tmp_path / "q") as log:
        d = describe_quorum(log)
        assert list(quorum_history(log)) == []
    assert (d.leader_id, d.leader_epoch, d.log_end_offset, d.notes) == (NO_LEADER, -1, 0, ())


def test_quorum_state_is_read_as_kafka_writes_it_and_a_later_epoch_is_noted(tmp_path: Path) -> None:
    with new_log(tmp_path / "q") as log:
        log.append_control([election(1, [1, 2, 3])], epoch=1, timestamp=1)
    state = tmp_path / "q" / "__cluster_metadata-0" / "quorum-state"
    state.write_text('{"leaderId":-1,"leaderEpoch":7,"votedId":2,"votedDirectoryId":"AAAAAAAAAAAAAAAAAAAAAA",'
                     '"extra":{"a":1},"data_version":1}\n')
    with MetadataLog.open(tmp_path / "q") as log:
        d = describe_quorum(log)
    assert d.quorum_state == {"leaderId": -1, "leaderEpoch": 7, "votedId": 2,
                              "votedDirectoryId": "AAAAAAAAAAAAAAAAAAAAAA", "data_version": 1}
    assert d.notes == ("quorum-state is at epoch 7, later than the log's 1: an election this node saw whose "
                       "leader's first batch is not in its log",)


def test_a_control_record_that_does_not_decode_is_one_error_naming_its_offset(tmp_path: Path) -> None:
    from metalog.log.builder import build_control_batch

    with new_log(tmp_path / "q") as log:
        log.append([NOOP], epoch=1, timestamp=1)
        segment = log.segments[-1].path
    with open(segment, "ab") as f:  # (append_batch refuses a batch KRaft's reader cannot read)
        f.write(build_control_batch(1, [(b"\x00\x00\x00\x02", b"\x00\x00\xff")], epoch=1, timestamp=2))
    # every read checks KRaft's rules for records: opening the log meets it
    with pytest.raises(LogError) as e, MetadataLog.open(tmp_path / "q") as log:
        list(quorum_history(log))
    assert "record at offset 1 is not a control record KRaft reads" in str(e.value)
    assert "__cluster_metadata-0" in str(e.value)


# ---- a model: any sequence of elections, voter sets and kraft.version changes -----------------------------------
@st.composite
def quorum_stories(draw: st.DrawFn) -> list[tuple[str, int, tuple[int, ...]]]:
    """(what, leader or kraft.version, voters) steps; epochs rise with each election."""
    steps: list[tuple[str, int, tuple[int, ...]]] = []
    for _ in range(draw(st.integers(1, 12))):
        kind = draw(st.sampled_from(["election", "election", "voters", "kraft", "data"]))
        voters = draw(st.sampled_from([(1,), (1, 2, 3), (2, 3, 4), (1, 2, 3, 4, 5)]))  # sets that come back
        steps.append((kind, draw(st.sampled_from(voters)) if kind == "election" else draw(st.integers(0, 1)),
                      voters))
    return steps


@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(story=quorum_stories())
def test_history_and_describe_follow_any_story(tmp_path_factory: pytest.TempPathFactory,
                                               story: list[tuple[str, int, tuple[int, ...]]]) -> None:
    """The model: an election sets leader and epoch (and, before any VotersRecord, the voters it names); a
    VotersRecord sets the voters when they differ; a KRaftVersionRecord sets kraft.version when it differs."""
    path = tmp_path_factory.mktemp("story") / "q"
    expected = []
    epoch, leader, voters, level, from_record = 0, NO_LEADER, (), 0, False
    with new_log(path) as log:
        log.append_control([election(1, [1])], epoch=1, timestamp=0)
        epoch, leader, voters = 1, 1, (1,)
        expected.append(("election", 0, 1, 1, (1,), 0))
        for kind, value, ids in story:
            offset = log.log_end_offset
            if kind == "election":
                epoch += 1 + value % 2
                leader = value
                log.append_control([election(leader, list(ids))], epoch=epoch, timestamp=offset)
                if not from_record:
                    voters = ids
                expected.append(("election", offset, epoch, leader, voters, level))
            elif kind == "voters":
                log.append_control([voters_record(*ids)], epoch=epoch, timestamp=offset)
                if not from_record or ids != voters:
                    voters, from_record = ids, True
                    expected.append(("voters", offset, epoch, leader, voters, level))
            elif kind == "kraft":
                log.append_control([kraft(value)], epoch=epoch, timestamp=offset)
                if value != level:
                    level = value
                    expected.append(("kraft.version", offset, epoch, leader, voters, level))
            else:
                log.append([NOOP], epoch=epoch, timestamp=offset)
    assert rows(path) == expected
    with MetadataLog.open(path) as log:
        d = describe_quorum(log)
    assert (d.leader_id, d.leader_epoch, tuple(v.replica_id for v in d.voters), d.kraft_version) == \
        (leader, epoch, voters, level)
