"""``why``: what is wrong with a partition, a broker or a log directory at a point of the log, since when, which
record did it, and the chain of committed changes behind it, each with its offset.

The states are Kafka's:
- a partition is *offline* when it has no leader (leader -1: ``PartitionRegistration.hasLeader``, what the
  controller's OfflinePartitionsCount counts); its leader is *recovering* after an unclean election
  (leaderRecoveryState RECOVERING); it is *under min ISR* when its ISR is smaller than min.insync.replicas (the
  topic's config, else the cluster default ``BROKER/``'s, else Kafka's default 1), *under-replicated* when its
  ISR is smaller than its replicas, and it has *offline replicas* when a replica's broker is missing or fenced
  or its directory is not online on that broker (KIP-858, as ``MetadataImage.offline_replicas``);
- a broker is *unregistered*, *fenced* or *in controlled shutdown*, and has *lost directories* when its
  replicas name directories it no longer registers;
- a directory is *lost* when its broker no longer registers it, and offline while that broker is fenced.

Each state's *since* is the published point where its current run began, with the records that made it.
Everything comes from one pass of ``metalog.replay.changes`` over the log up to the point (a ``Timeline``), and
the point is a state Kafka's loader published (``ReplayResult``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from metalog.codec.uuid import LOST, MIGRATING, UNASSIGNED, Uuid
from metalog.errors import MetalogError
from metalog.replay.changes import Change, RecordRef, records_text, value_text
from metalog.replay.history import MetadataHistory
from metalog.replay.points import ReplayResult, format_time, parse_time
from metalog.replay.printable import name
from metalog.replay.subjects import (
    BrokersSubject,
    BrokerSubject,
    ConfigSubject,
    Key,
    TopicSubject,
    Watch,
)
from metalog.replay.timeline import Fields, Point, Timeline
from metalog.state import enums as V
from metalog.state.image import MetadataImage

MIN_ISR = "min.insync.replicas"
KAFKA_MIN_ISR = 1  # Kafka's default min.insync.replicas
_ONLINE_PLACEHOLDERS = (str(UNASSIGNED), str(MIGRATING))
_BROKER_FIELDS = ("fenced", "inControlledShutdown", "directories", "epoch")  # the registration facts a chain shows


def point(history: MetadataHistory, text: str | None) -> ReplayResult:
    """The published state a point names: ``end`` (or None), an offset, or a TIME (ISO 8601, epoch milliseconds;
    a number of twelve digits or more past the log's end is a time). The one place ``why`` reads a point: the
    shared POINT grammar replaces this function."""
    s = "end" if text is None else text.strip()
    if s == "end":
        return history.state_at()
    if re.fullmatch(r"-?\d+", s) and not (len(s) >= 12 and int(s) > history.end_offset):
        return history.state_at(int(s))
    return history.state_at_time(parse_time(s))


# ---- the answer ---------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Since:
    """Where a state's current run began: a published point and the records that made it (None: it held at the
    log's first offset already)."""

    offset: int
    timestamp: int | None
    records: tuple[RecordRef, ...]

    def to_json(self) -> dict[str, Any]:
        return {"offset": self.offset, "time": format_time(self.timestamp), "timestamp": self.timestamp,
                "records": [{"offset": r.offset, "type": r.type} for r in self.records]}


@dataclass(frozen=True)
class Condition:
    state: str  # "offline", "under min ISR", "fenced", ...
    detail: str  # why it holds, in a few words
    since: Since | None

    def to_json(self) -> dict[str, Any]:
        return {"state": self.state, "detail": self.detail,
                "since": None if self.since is None else self.since.to_json()}


@dataclass(frozen=True)
class Link:
    """One committed change of the chain: where it was published, the records, what changed."""

    offset: int
    timestamp: int | None
    records: tuple[RecordRef, ...]
    what: str
    change: str

    def to_json(self) -> dict[str, Any]:
        return {"offset": self.offset, "time": format_time(self.timestamp), "timestamp": self.timestamp,
                "records": [{"offset": r.offset, "type": r.type} for r in self.records], "what": self.what,
                "change": self.change}


@dataclass(frozen=True)
class Answer:
    subject: str  # "foo-0", "broker 3", "directory ..."
    result: ReplayResult
    facts: dict[str, Any]  # the subject's state at the point
    conditions: list[Condition]
    chain: list[Link] = field(default_factory=list)
    facts_text: str = ""

    def to_json(self) -> dict[str, Any]:
        r = self.result
        return {"subject": self.subject, "offset": r.offset, "requested": r.requested,
                "time": format_time(r.timestamp), "timestamp": r.timestamp, "note": r.note(), "state": self.facts,
                "conditions": [c.to_json() for c in self.conditions], "chain": [x.to_json() for x in self.chain]}


# ---- a partition --------------------------------------------------------------------------------------------------
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
    tracker = _Runs(lambda values: _partition_states(values, me), lambda state, c: _bears_on(state, c, me))
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
            keep = c.key[2] in replicas and c.field in (None, *_BROKER_FIELDS) and (
                c.offset in at or (last[(c.key, c.field)] == i and (c.key[2], c.field) in causes))
        if keep:
            rows.append(_link(c, unclean.get(c.offset) if c.key == me and c.field == "leader" else None))
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


def _link(c: Change, note: str | None = None) -> Link:
    what = f"{c.entity} {c.field}" if c.field else c.entity
    if c.field is None:
        change = "registered" if c.after is not None and c.key[:2] == ("b", "broker") else \
            ("created " + _brief(c.after) if c.after is not None else ("unregistered" if c.key[:2] == ("b", "broker")
                                                                        else "removed"))
    else:
        change = f"{value_text(c.before)} -> {value_text(c.after)}"
    return Link(c.offset, c.timestamp, c.records, what, change + (f" ({note})" if note else ""))


def _brief(fields: dict[str, Any]) -> str:
    keys = ("replicas", "isr", "leader", "elr")
    return " ".join(f"{k}={value_text(fields[k])}" for k in keys if k in fields) or value_text(fields)


# ---- runs: since when each state has held -----------------------------------------------------------------------
class _Runs:
    """Follows a timeline and notes, for each state ``states(values)`` names, the point its current run began and
    the records there that bear on it (``relevant(state, change)``)."""

    def __init__(self, states: Callable[[dict[Key, Fields]], dict[str, str]],
                 relevant: Callable[[str, Change], bool] = lambda state, change: True) -> None:
        self.states = states
        self.relevant = relevant
        self.since: dict[str, Since | None] = {}

    def follow(self, timeline: Timeline, last: int) -> Iterable[Point]:
        held: set[str] = set()
        first = True
        for at in timeline.run(last):
            if first:  # the states the log starts in
                held = set(self.states_before(timeline))
                self.since = {s: None for s in held}
                first = False
            yield at
            now = set(self.states(timeline.values))
            for s in now - held:
                self.since[s] = Since(at.offset, at.timestamp,
                                      _records(c for c in at.changes if self.relevant(s, c)))
            for s in held - now:
                self.since.pop(s, None)
            held = now
        if first:
            self.since = {s: None for s in self.states(timeline.values)}

    def states_before(self, timeline: Timeline) -> dict[str, str]:
        """The states before the first point: the values with that point's changes undone."""
        values = dict(timeline.values)
        for key, old in timeline.before.items():
            if old is None:
                values.pop(key, None)
            else:
                values[key] = old
        return self.states(values)


def _records(changes: Iterable[Change]) -> tuple[RecordRef, ...]:
    return tuple(sorted({r for c in changes for r in c.records}, key=lambda r: r.offset))


# ---- a broker -----------------------------------------------------------------------------------------------------
def why_broker(history: MetadataHistory, result: ReplayResult, broker_id: int) -> Answer:
    image = result.image
    me: Key = ("b", "broker")
    tracker = _Runs(lambda values: _broker_states(values, me))
    timeline = Timeline(history, Watch({"b": BrokerSubject(broker_id, partitions=False)}))
    kept: list[Change] = []
    ever = False
    for at in tracker.follow(timeline, result.offset):
        kept += at.changes
        ever = True
    b = image.brokers.get(broker_id)
    if b is None and not ever and not timeline.values:
        raise MetalogError(f"broker {broker_id} is not registered at offset {result.offset}, and was not before")
    states = _broker_states(timeline.values, me)
    impact = _broker_impact(image, broker_id)
    if impact["lostDirectories"]:
        states["lost directories"] = "its replicas name " + ", ".join(impact["lostDirectories"]) + \
            ", which it does not register"
    if impact["offlineReplicas"]:
        states["offline replicas"] = f"{len(impact['offlineReplicas'])} of its replicas: " + \
            _some(impact["offlineReplicas"])
    since = dict(tracker.since)
    for derived in ("lost directories", "offline replicas"):
        if derived in states:
            since[derived] = _last_directories_change(kept) if derived == "lost directories" else \
                _earliest(since, states)
    conditions = [Condition(s, states[s], since.get(s)) for s in _BROKER_ORDER if s in states]
    start = min((c.since.offset if c.since is not None else -1) for c in conditions) if conditions else None
    chain = [] if start is None else [_link(c) for c in kept if c.offset >= start and
                                      c.field in (None, *_BROKER_FIELDS)]
    facts: dict[str, Any] = {"registered": b is not None, "epoch": None if b is None else b.epoch,
                             "fenced": None if b is None else b.fenced,
                             "inControlledShutdown": None if b is None else b.in_controlled_shutdown,
                             "directories": [] if b is None else [str(d) for d in b.directories], **impact}
    text = ("not registered" if b is None else
            f"epoch {b.epoch}, {'fenced' if b.fenced else 'unfenced'}"
            f"{', in controlled shutdown' if b.in_controlled_shutdown else ''}, directories "
            f"{value_text([str(d) for d in b.directories])}") + \
        f"; replica of {_count(impact['replicas'], 'partition')}, leader of {impact['leads']}, in the ISR of " \
        f"{impact['inIsr']}"
    return Answer(f"broker {broker_id}", result, facts, conditions, chain, text)


_BROKER_ORDER = ("unregistered", "fenced", "in controlled shutdown", "lost directories", "offline replicas")


def _broker_states(values: dict[Key, Fields], me: Key) -> dict[str, str]:
    b = values.get(me)
    if b is None:
        return {"unregistered": "no registration (UnregisterBrokerRecord, or never registered)"}
    out = {}
    if b.get("fenced"):
        out["fenced"] = "the controller fenced it: its replicas are offline, it leads nothing"
    if b.get("inControlledShutdown"):
        out["in controlled shutdown"] = "it asked to shut down: leadership moves away from it"
    return out


def _broker_impact(image: MetadataImage, broker_id: int) -> dict[str, Any]:
    b = image.brokers.get(broker_id)
    replicas = leads = in_isr = 0
    offline: list[str] = []
    lost: set[str] = set()
    for topic in image.topics.values():
        for pid, p in topic.partitions.items():
            if broker_id not in p.replicas:
                continue
            replicas += 1
            leads += p.leader == broker_id
            in_isr += broker_id in p.isr
            label = f"{topic.name}-{pid}"
            if broker_id in image.offline_replicas(p):
                offline.append(label)
            d = p.directory(broker_id)
            if b is not None and b.directories and not b.has_online_dir(d) and d != LOST:
                lost.add(str(d))
    return {"replicas": replicas, "leads": leads, "inIsr": in_isr, "offlineReplicas": sorted(offline, key=_natural),
            "lostDirectories": sorted(lost)}


def _last_directories_change(kept: list[Change]) -> Since | None:
    found = [c for c in kept if c.field == "directories" or (c.field is None and c.after is not None)]
    return None if not found else Since(found[-1].offset, found[-1].timestamp, found[-1].records)


def _earliest(since: dict[str, Since | None], states: dict[str, str]) -> Since | None:
    causes = [since.get(s) for s in ("unregistered", "fenced", "lost directories") if s in states]
    known = [c for c in causes if c is not None]
    return min(known, key=lambda s: s.offset) if known and len(known) == len(causes) else None


# ---- a directory --------------------------------------------------------------------------------------------------
def why_directory(history: MetadataHistory, result: ReplayResult, text: str) -> Answer:
    try:
        directory = Uuid.parse(text.strip())
    except ValueError:
        raise MetalogError(f"not a directory id: {text!r} (give its 22-character Uuid)") from None
    d = str(directory)
    image = result.image
    placed = _replicas_in(image, directory)
    timeline = Timeline(history, Watch({"b": BrokersSubject()}))
    kept: list[Change] = []
    for at in timeline.run(result.offset):
        kept += [c for c in at.changes if c.field in (None, "directories", "fenced")]
    owners = sorted({b for _, b in placed} | {i for i, r in image.brokers.items() if directory in r.directories})
    had = _registered_by(kept, d)
    if not owners and not had:
        raise MetalogError(f"no broker registers directory {d} and no replica lives in it at offset {result.offset}, "
                           "and no broker registered it before")
    conditions: list[Condition] = []
    for owner in owners or had[-1:]:
        conditions += _directory_states(image, owner, directory, kept)
    start = min((c.since.offset if c.since is not None else -1) for c in conditions) if conditions else None
    chain = [] if start is None else [_link(c) for c in kept if c.offset >= start and _touches(c, d) and
                                      c.key[1:] in {("broker", o) for o in owners or had[-1:]}]
    offline = sorted((f"{t}-{p}" for (t, p), b in placed if not _is_online(image, t, p, b)), key=_natural)
    leaderless = sorted((f"{t}-{p}" for (t, p), _ in placed
                         if image.topics_by_name[t].partitions[p].leader == -1), key=_natural)
    facts = {"directory": d, "brokers": owners or had[-1:], "replicas": len(placed), "offlineReplicas": offline,
             "offlinePartitions": leaderless}
    text_facts = (f"broker {', '.join(map(str, owners or had[-1:]))}; {_count(len(placed), 'replica')} in it, "
                  f"{len(offline)} of them offline, {_count(len(leaderless), 'partition')} without a leader"
                  + (f" ({_some(leaderless)})" if leaderless else ""))
    return Answer(f"directory {d}", result, facts, conditions, chain, text_facts)


def _replicas_in(image: MetadataImage, directory: Uuid) -> list[tuple[tuple[str, int], int]]:
    out = []
    for topic in image.topics.values():
        for pid, p in topic.partitions.items():
            for replica, placed in zip(p.replicas, p.directories, strict=True):
                if placed == directory:
                    out.append(((topic.name, pid), replica))
    return out


def _is_online(image: MetadataImage, topic: str, pid: int, broker: int) -> bool:
    return broker not in image.offline_replicas(image.topics_by_name[topic].partitions[pid])


def _registered_by(kept: list[Change], d: str) -> list[int]:
    """The brokers that registered ``d`` at some point, in the order they last did."""
    seen: dict[int, int] = {}
    for c in kept:
        if c.field not in (None, "directories"):
            continue
        fields = c.after if c.field is None else {"directories": c.after}
        if isinstance(fields, dict) and d in (fields.get("directories") or []):
            seen[c.key[2]] = c.offset
    return sorted(seen, key=lambda b: seen[b])


def _touches(c: Change, d: str) -> bool:
    if c.field == "directories":
        return d in (c.before or []) or d in (c.after or [])
    return True  # fencing and registrations of the directory's broker


def _directory_states(image: MetadataImage, owner: int, directory: Uuid, kept: list[Change]) -> list[Condition]:
    b = image.brokers.get(owner)
    mine = [c for c in kept if c.key[1:] == ("broker", owner)]
    out = []
    if b is None:
        gone = [c for c in mine if c.field is None and c.after is None]
        out.append(Condition("broker unregistered", f"broker {owner} is not registered",
                             _since_of(gone[-1:])))
        return out
    if b.directories and directory not in b.directories:
        left = [c for c in mine if _left(c, str(directory))]
        out.append(Condition("lost", f"broker {owner} no longer registers it among its log dirs "
                                     f"{value_text([str(x) for x in b.directories])}", _since_of(left[-1:])))
    if b.fenced:
        fenced = [c for c in mine if (c.field == "fenced" and c.after is True) or
                  (c.field is None and c.after is not None)]
        out.append(Condition("broker fenced", f"broker {owner} is fenced: the replicas in it are offline",
                             _since_of(fenced[-1:])))
    return out


def _left(c: Change, d: str) -> bool:
    if c.field == "directories":
        return d in (c.before or []) and d not in (c.after or [])
    return c.field is None and c.after is not None and d not in (c.after.get("directories") or [])


def _since_of(changes: list[Change]) -> Since | None:
    return None if not changes else Since(changes[0].offset, changes[0].timestamp, changes[0].records)


def _count(n: int, what: str) -> str:
    return f"{n} {what}{'' if n == 1 else 's'}"


def _some(labels: list[str], limit: int = 5) -> str:
    shown = ", ".join(labels[:limit])
    return shown + (f" and {len(labels) - limit} more" if len(labels) > limit else "")


def _natural(label: str) -> list[Any]:
    return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", label)]


# ---- the text -----------------------------------------------------------------------------------------------------
def render(answer: Answer) -> list[str]:
    """The answer as lines: the subject at the point and its states, then the chain as a table; every name from
    the log escaped (``printable.name``), as the JSON form needs none."""
    from metalog.replay.diff import table

    r = answer.result
    states = ", ".join(c.state for c in answer.conditions) or "healthy"
    lines = [f"{name(answer.subject)} at offset {r.offset} ({format_time(r.timestamp)}): {states}"]
    if (note := r.note()) is not None:
        lines.append(f"  ({note})")
    lines.append(f"  {name(answer.facts_text)}")
    if answer.conditions:
        rows = [("STATE", "SINCE", "TIME", "RECORD", "WHY")]
        for c in answer.conditions:
            s = c.since
            rows.append((c.state, "start" if s is None else str(s.offset),
                         "-" if s is None else format_time(s.timestamp), "-" if s is None else records_text(s.records),
                         name(c.detail)))
        lines += ["", *table(rows)]
    if answer.chain:
        rows = [("OFFSET", "TIME", "RECORD", "WHAT", "CHANGE")]
        rows += [(str(x.offset), format_time(x.timestamp), records_text(x.records), name(x.what), name(x.change))
                 for x in answer.chain]
        lines += ["", "the chain:", *table(rows)]
    return lines


def ask(history: MetadataHistory, result: ReplayResult, question: str) -> Answer:
    """``TOPIC-N``, ``broker N`` or ``directory UUID`` (as the shell takes it)."""
    words = question.split()
    if len(words) == 2 and words[0] == "broker":
        if not re.fullmatch(r"-?\d+", words[1]):
            raise MetalogError(f"not a broker id: {words[1]!r}")
        return why_broker(history, result, int(words[1]))
    if len(words) == 2 and words[0] in ("directory", "dir"):
        return why_directory(history, result, words[1])
    if len(words) == 1:
        return why_partition(history, result, *parse_partition(words[0]))
    raise MetalogError(f"why what? {question!r} (give TOPIC-N, broker N or directory UUID)")
