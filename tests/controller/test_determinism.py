"""Random command sequences: the same commands give the same log and state, the log replays to the
controller's state, and refused commands leave no trace."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from metalog.codec import message_class
from metalog.codec.framing import decode_metadata_record, encode_metadata_record
from metalog.codec.uuid import Uuid
from metalog.controller.commands import (
    AlterPartition,
    CreateTopic,
    DeleteTopic,
    SetFeatureLevel,
    UnregisterBroker,
)
from metalog.controller.controller import Controller
from metalog.log import LogConfig, MetadataLog, Mode
from metalog.state.loader import MetadataLoader
from metalog.state.records import image_digest
from tests.controller.helpers import CLUSTER_ID, assign_request, dir_id, heartbeat, registration

# A step names a command and its raw choices; it is resolved against the state when it runs, so the same
# steps make the same commands on the same state (and anything refused is refused the same way).
steps = st.lists(st.one_of(
    st.tuples(st.just("register"), st.integers(0, 3), st.integers(0, 3), st.sampled_from([None, "a", "b"])),
    st.tuples(st.just("heartbeat"), st.integers(0, 3), st.booleans(), st.integers(-1, 2)),
    st.tuples(st.just("create"), st.integers(0, 4), st.integers(0, 4), st.integers(0, 3)),
    st.tuples(st.just("assign"), st.integers(0, 3), st.integers(0, 4), st.integers(0, 3)),
    st.tuples(st.just("alter"), st.integers(0, 4), st.integers(0, 3), st.integers(0, 3)),
    st.tuples(st.just("delete"), st.integers(0, 4), st.just(0), st.just(0)),
    st.tuples(st.just("unregister"), st.integers(0, 3), st.just(0), st.just(0)),
    st.tuples(st.just("mv"), st.sampled_from([17, 18, 21, 23]), st.just(0), st.just(0)),
), max_size=30)


def command(c: Controller, step: tuple[Any, ...]) -> Any:
    kind, a, b, x = step
    img = c.image
    epoch = img.brokers[a].epoch if a in img.brokers else 0
    topics = sorted(img.topics_by_name)
    if kind == "register":
        return registration(a, [dir_id(a, i) for i in range(b)], x, incarnation=b)
    if kind == "heartbeat":
        offline = [dir_id(a, x)] if x >= 0 else []
        return heartbeat(a, epoch, want_fence=b, offline=offline)
    if kind == "create":
        return CreateTopic(f"t{a}", Uuid.of(1000 + a, len(topics) + 1), b, x, a)
    if kind == "assign" and topics:
        topic = img.topics_by_name[topics[b % len(topics)]]
        return assign_request(a, epoch, [(dir_id(a, x), topic.id, p) for p in sorted(topic.partitions)[:2]])
    if kind == "alter" and topics:
        topic = img.topics_by_name[topics[a % len(topics)]]
        p = topic.partitions[min(topic.partitions)]
        leader_epoch = img.brokers[p.leader].epoch if p.leader in img.brokers else 0
        isr = tuple(r for r in p.replicas if r == p.leader or r in (b, x))
        return AlterPartition(p.leader, leader_epoch, topic.id, min(topic.partitions), p.leader_epoch,
                              p.partition_epoch, isr)
    if kind == "delete":
        return DeleteTopic(f"t{a}")
    if kind == "unregister":
        return UnregisterBroker(a)
    return SetFeatureLevel("metadata.version", a if kind == "mv" else 17)


def run(step_list: list[tuple[Any, ...]], log: MetadataLog | None = None) -> tuple[Controller, list[bytes]]:
    c = Controller(log, cluster_id=CLUSTER_ID)
    written: list[bytes] = []
    for step in [("mv", 17, 0, 0), *step_list]:
        before, offset = c.image, c.next_offset
        result = c.submit(command(c, step))
        if not result.records:
            assert c.image is before and c.next_offset == offset
        written += [encode_metadata_record(r, v) for r, v in result.records]
    return c, written


# Three registered, unfenced brokers first, so random steps reach topics, directories and the ISR.
PREFIX = [("register", 0, 2, "a"), ("register", 1, 2, "b"), ("register", 2, 1, "a"),
          ("heartbeat", 0, False, -1), ("heartbeat", 1, False, -1), ("heartbeat", 2, False, -1)]


@given(steps)
def test_same_commands_same_log_same_state(step_list: list[tuple[Any, ...]]) -> None:
    step_list = PREFIX + step_list
    a, log_a = run(step_list)
    b, log_b = run(step_list)
    assert log_a == log_b
    assert image_digest(a.image) == image_digest(b.image)
    # the log alone rebuilds the controller's state
    loader = MetadataLoader()
    loader.replay_all((offset, decode_metadata_record(value).message) for offset, value in enumerate(log_a))
    assert image_digest(loader.image) == image_digest(a.image)


def test_commands_through_a_real_log(tmp_path: Path) -> None:
    plan = [("register", 0, 2, "a"), ("register", 1, 1, "b"), ("heartbeat", 0, False, -1),
            ("heartbeat", 1, False, -1), ("create", 0, 3, 2), ("assign", 0, 0, 1), ("heartbeat", 0, False, 1)]
    with MetadataLog.open(tmp_path / "meta", Mode.CREATE, config=LogConfig(cluster_id=CLUSTER_ID)) as log:
        c, written = run(plan, log)
        assert log.log_end_offset == c.next_offset == c.loader.offset + 1
    with MetadataLog.open(tmp_path / "meta") as log:
        values = [r.value for r in log.records()]
    loader = MetadataLoader()
    loader.replay_all((offset, decode_metadata_record(value).message) for offset, value in enumerate(values))
    assert image_digest(loader.image) == image_digest(c.image)
    assert values == written


def test_the_controller_loads_the_batches_the_log_writes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The controller's commands write Begin/End only; should a command's records hold an abort with records after
    it, the log ends the batch at the abort and the controller's state is what a reader of those batches sees."""
    import metalog.controller.controller as controller_module
    from metalog.controller.commands import Result
    from metalog.log.verify import verify_log

    def rec(message: str, /, **fields: Any) -> tuple[Any, int]:
        return message_class(message)(**fields), 0

    records = [rec("BeginTransactionRecord", name="t"), rec("FeatureLevelRecord", name="metadata.version",
                                                             feature_level=7),
               rec("AbortTransactionRecord"), rec("FeatureLevelRecord", name="metadata.version", feature_level=21)]
    monkeypatch.setattr(controller_module, "execute", lambda image, command, ctx: Result(None, records))
    with MetadataLog.open(tmp_path / "meta", Mode.CREATE, config=LogConfig(cluster_id=CLUSTER_ID)) as log:
        c = Controller(log, cluster_id=CLUSTER_ID)
        c.submit(object())
        assert [(b.base_offset, b.last_offset) for b in log.batches()] == [(0, 2), (3, 3)]
    assert c.image.features.metadata_version == 21 and c.image.offset == 3
    assert verify_log(tmp_path / "meta").warnings == []
