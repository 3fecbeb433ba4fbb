"""``why broker N``: a broker's registration states (unregistered, fenced, in controlled shutdown), the
directories its replicas name that it no longer registers, and its offline replicas."""

from __future__ import annotations

from typing import Any

from metalog.codec.uuid import LOST
from metalog.errors import MetalogError
from metalog.replay.changes import Change, value_text
from metalog.replay.history import MetadataHistory
from metalog.replay.points import ReplayResult
from metalog.replay.subjects import BrokerSubject, Key, Watch
from metalog.replay.timeline import Fields, Timeline
from metalog.replay.why.answer import BROKER_FIELDS, Answer, Condition, Runs, Since, count, link, natural, some
from metalog.state.image import MetadataImage


def why_broker(history: MetadataHistory, result: ReplayResult, broker_id: int) -> Answer:
    image = result.image
    me: Key = ("b", "broker")
    tracker = Runs(lambda values: _broker_states(values, me))
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
            some(impact["offlineReplicas"])
    since = dict(tracker.since)
    for derived in ("lost directories", "offline replicas"):
        if derived in states:
            since[derived] = _last_directories_change(kept) if derived == "lost directories" else \
                _earliest(since, states)
    conditions = [Condition(s, states[s], since.get(s)) for s in _BROKER_ORDER if s in states]
    start = min((c.since.offset if c.since is not None else -1) for c in conditions) if conditions else None
    chain = [] if start is None else [link(c) for c in kept if c.offset >= start and
                                      c.field in (None, *BROKER_FIELDS)]
    facts: dict[str, Any] = {"registered": b is not None, "epoch": None if b is None else b.epoch,
                             "fenced": None if b is None else b.fenced,
                             "inControlledShutdown": None if b is None else b.in_controlled_shutdown,
                             "directories": [] if b is None else [str(d) for d in b.directories], **impact}
    text = ("not registered" if b is None else
            f"epoch {b.epoch}, {'fenced' if b.fenced else 'unfenced'}"
            f"{', in controlled shutdown' if b.in_controlled_shutdown else ''}, directories "
            f"{value_text([str(d) for d in b.directories])}") + \
        f"; replica of {count(impact['replicas'], 'partition')}, leader of {impact['leads']}, in the ISR of " \
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
    return {"replicas": replicas, "leads": leads, "inIsr": in_isr, "offlineReplicas": sorted(offline, key=natural),
            "lostDirectories": sorted(lost)}


def _last_directories_change(kept: list[Change]) -> Since | None:
    found = [c for c in kept if c.field == "directories" or (c.field is None and c.after is not None)]
    return None if not found else Since(found[-1].offset, found[-1].timestamp, found[-1].records)


def _earliest(since: dict[str, Since | None], states: dict[str, str]) -> Since | None:
    causes = [since.get(s) for s in ("unregistered", "fenced", "lost directories") if s in states]
    known = [c for c in causes if c is not None]
    return min(known, key=lambda s: s.offset) if known and len(known) == len(causes) else None
