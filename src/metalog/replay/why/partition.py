"""``why TOPIC-N``: a partition's states as Kafka defines them (see ``metalog.replay.why``), their runs, and the
chain: its own changes since its trouble began and the broker registrations that explain its replicas."""

from __future__ import annotations

from metalog.codec.uuid import LOST, MIGRATING, UNASSIGNED
from metalog.errors import MetalogError
from metalog.replay.changes import Change, value_text
from metalog.replay.history import MetadataHistory
from metalog.replay.points import ReplayResult
from metalog.replay.subjects import BrokersSubject, ConfigSubject, Key, TopicSubject, Watch
from metalog.replay.timeline import Fields, Timeline
from metalog.replay.why.answer import BROKER_FIELDS, Answer, Condition, Link, Runs, link
from metalog.state import enums as V
from metalog.state.image import MetadataImage

MIN_ISR = "min.insync.replicas"
KAFKA_MIN_ISR = 1  # Kafka's default min.insync.replicas
_ONLINE_PLACEHOLDERS = (str(UNASSIGNED), str(MIGRATING))


def parse_partition(text: str) -> tuple[str, int]:
    """``TOPIC-N``: the topic (which may hold dashes itself) and the partition."""
    topic, dash, number = text.rpartition("-")
    if not dash or not topic or not number.isdigit():
        raise MetalogError(f"not a partition: {text!r} (give TOPIC-N, such as orders-3)")
    return topic, int(number)


def why_partition(history: MetadataHistory, result: ReplayResult, topic: str, partition: int) -> Answer:
    image = result.image
    t = image.topics_by_name.get(topic)
    p = None if t is None else t.partitions.get(partition)
    if p is None:
        what = f"no topic {topic!r}" if t is None else f"topic {topic!r} has no partition {partition}"
        raise MetalogError(f"{what} at offset {result.offset}")
    watch = Watch({"p": TopicSubject(topic, partition=partition), "b": BrokersSubject(),
                   "t": ConfigSubject(V.TOPIC_RESOURCE, topic, MIN_ISR),
                   "c": ConfigSubject(V.CONFIG_RESOURCE_IDS["BROKER"], "", MIN_ISR)})
    me: Key = ("p", "partition", partition)
    tracker = Runs(lambda values: _partition_states(values, me), lambda state, c: _bears_on(state, c, me))
    timeline = Timeline(history, watch)
    kept: list[Change] = []
    unclean: dict[int, str] = {}
    for at in tracker.follow(timeline, result.offset):
        kept += at.changes
        note = _unclean(timeline.before.get(me), timeline.values.get(me))
        if note:
            unclean[at.offset] = note
    min_isr, source = _min_isr(image, topic)
    states = _partition_states(timeline.values, me)
    conditions = [Condition(s, states[s], tracker.since.get(s)) for s in _PARTITION_ORDER if s in states]
    chain = _partition_chain(kept, conditions, me, timeline.values, unclean, history.log.log_start_offset)
    label = f"{topic}-{partition}"
    facts = {"leader": p.leader, "leaderEpoch": p.leader_epoch, "replicas": list(p.replicas), "isr": list(p.isr),
             "elr": list(p.elr), "lastKnownElr": list(p.last_known_elr),
             "leaderRecoveryState": V.LEADER_RECOVERY_STATES[p.leader_recovery_state],
             "offlineReplicas": image.offline_replicas(p), "minInsyncReplicas": min_isr,
             "minInsyncReplicasFrom": source}
    text = (f"leader {p.leader}, leader epoch {p.leader_epoch}, replicas {value_text(list(p.replicas))}, isr "
            f"{value_text(list(p.isr))}, elr {value_text(list(p.elr))}, min.insync.replicas {min_isr} ({source})")
    return Answer(label, result, facts, conditions, chain, text)


_PARTITION_ORDER = ("offline", "leader recovering", "under min ISR", "under-replicated", "offline replicas")


def _bears_on(state: str, c: Change, me: Key) -> bool:
    """Whether a change can have made a partition's state: its own, its min.insync.replicas', its brokers'."""
    if c.key == me:
        return c.field != "partitionEpoch"
    if state == "under min ISR":
        return c.key[:1] in (("t",), ("c",))
    return state == "offline replicas" and c.key[:1] == ("b",)


def _partition_states(values: dict[Key, Fields], me: Key) -> dict[str, str]:
    """The partition's bad states in ``values`` (each with why it holds)."""
    p = values.get(me)
    if p is None:
        return {}
    out = {}
    isr, replicas = p.get("isr") or [], p.get("replicas") or []
    if p.get("leader") == -1:
        out["offline"] = "no leader (leader -1)"
    if p.get("leaderRecoveryState") == "RECOVERING":
        out["leader recovering"] = f"leader {p.get('leader')} was elected from outside the ISR (unclean)"
    min_isr, source = _min_isr_of(values)
    if len(isr) < min_isr:
        out["under min ISR"] = f"isr {value_text(isr)} is smaller than min.insync.replicas {min_isr} ({source})"
    if len(isr) < len(replicas):
        out["under-replicated"] = f"isr {value_text(isr)} is smaller than replicas {value_text(replicas)}"
    offline = [f"{r} ({why})" for r, why in _offline_replicas(values, p)]
    if offline:
        out["offline replicas"] = "replica " + ", ".join(offline)
    return out


def _offline_replicas(values: dict[Key, Fields], p: Fields) -> list[tuple[int, str]]:
    out = []
    for replica, directory in zip(p.get("replicas") or [], p.get("directories") or [], strict=False):
        broker = values.get(("b", "broker", replica))
        if broker is None:
            out.append((replica, f"broker {replica} is not registered"))
        elif broker.get("fenced"):
            out.append((replica, f"broker {replica} is fenced"))
        elif not _dir_online(broker, directory):
            out.append((replica, f"directory {directory} is not among broker {replica}'s log dirs"
                        if directory != str(LOST) else "its directory is LOST"))
    return out


def _dir_online(broker: Fields, directory: str) -> bool:
    """Kafka's DirectoryId.isOnline (``BrokerRegistration.has_online_dir``) on the fields history shows."""
    if directory in _ONLINE_PLACEHOLDERS:
        return True
    if directory == str(LOST):
        return False
    dirs = broker.get("directories") or []
    return not dirs or directory in dirs


def _min_isr_of(values: dict[Key, Fields]) -> tuple[int, str]:
    for key, source in ((("t", "config"), "topic"), (("c", "config"), "cluster default BROKER/")):
        value = (values.get(key) or {}).get(MIN_ISR)
        if value is not None:
            return _int(value), "TOPIC config" if source == "topic" else source
    return KAFKA_MIN_ISR, "Kafka's default"


def _min_isr(image: MetadataImage, topic: str) -> tuple[int, str]:
    topic_value = image.configs.get((V.TOPIC_RESOURCE, topic), {}).get(MIN_ISR)
    if topic_value is not None:
        return _int(topic_value), "TOPIC config"
    cluster = image.configs.get((V.CONFIG_RESOURCE_IDS["BROKER"], ""), {}).get(MIN_ISR)
    if cluster is not None:
        return _int(cluster), "cluster default BROKER/"
    return KAFKA_MIN_ISR, "Kafka's default"


def _int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        return KAFKA_MIN_ISR  # a value Kafka would have refused; its default applies


def _unclean(before: Fields | None, after: Fields | None) -> str | None:
    """A leader elected from outside the ISR it had (and outside its ELR): Kafka's unclean election."""
    if before is None or after is None or after.get("leader") == before.get("leader"):
        return None
    leader = after.get("leader")
    if leader is None or leader < 0 or leader in (before.get("isr") or []) or leader in (before.get("elr") or []):
        return None
    return f"unclean: {leader} was not in the ISR {value_text(before.get('isr') or [])}"


def _partition_chain(kept: list[Change], conditions: list[Condition], me: Key, values: dict[Key, Fields],
                     unclean: dict[int, str], log_start: int) -> list[Link]:
    """The partition's and its min.insync.replicas' changes since its trouble began; of its replicas' brokers,
    the registration changes published with one of those, and the change that left each broker whose replica
    is offline (or which is in controlled shutdown) as it is, however long ago."""
    if not conditions:
        return []
    start = min((c.since.offset if c.since is not None else log_start - 1) for c in conditions)
    p = values.get(me) or {}
    replicas = set(p.get("replicas") or [])
    at = {c.offset for c in kept if c.key[:1] != ("b",) and c.offset >= start}
    causes = _causes(values, p)
    last: dict[tuple[Key, str | None], int] = {}
    for i, c in enumerate(kept):
        last[(c.key, c.field)] = i
    rows = []
    for i, c in enumerate(kept):
        if c.key[:1] != ("b",):
            keep = c.offset >= start and c.field != "partitionEpoch"
        else:
            keep = c.key[2] in replicas and c.field in (None, *BROKER_FIELDS) and (
                c.offset in at or (last[(c.key, c.field)] == i and (c.key[2], c.field) in causes))
        if keep:
            rows.append(link(c, unclean.get(c.offset) if c.key == me and c.field == "leader" else None))
    return rows


def _causes(values: dict[Key, Fields], p: Fields) -> set[tuple[int, str | None]]:
    """(broker, the registration field that explains it) for each replica that is offline or whose broker is in
    controlled shutdown: None for a broker not registered, ``fenced``, ``directories``, ``inControlledShutdown``."""
    out: set[tuple[int, str | None]] = set()
    for replica in p.get("replicas") or []:
        broker = values.get(("b", "broker", replica))
        if broker is None:
            out.add((replica, None))
            continue
        if broker.get("fenced"):
            out.add((replica, "fenced"))
        if broker.get("inControlledShutdown"):
            out.add((replica, "inControlledShutdown"))
    for replica, _ in _offline_replicas(values, p):
        broker = values.get(("b", "broker", replica))
        if broker is not None and not broker.get("fenced"):
            out.add((replica, "directories"))
    return out
