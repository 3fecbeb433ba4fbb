"""``why directory UUID``: a log directory (KIP-858): the broker that registers it or whose replicas live in
it, whether that broker still registers it (lost) or is fenced, and the replicas and partitions it takes down."""

from __future__ import annotations

from metalog.codec.uuid import Uuid
from metalog.errors import MetalogError
from metalog.replay.changes import Change, value_text
from metalog.replay.history import MetadataHistory
from metalog.replay.points import ReplayResult
from metalog.replay.subjects import BrokersSubject, Watch
from metalog.replay.timeline import Timeline
from metalog.replay.why.answer import Answer, Condition, count, link, natural, since_of, some
from metalog.state.image import MetadataImage


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
    chain = [] if start is None else [link(c) for c in kept if c.offset >= start and _touches(c, d) and
                                      c.key[1:] in {("broker", o) for o in owners or had[-1:]}]
    offline = sorted((f"{t}-{p}" for (t, p), b in placed if not _is_online(image, t, p, b)), key=natural)
    leaderless = sorted((f"{t}-{p}" for (t, p), _ in placed
                         if image.topics_by_name[t].partitions[p].leader == -1), key=natural)
    facts = {"directory": d, "brokers": owners or had[-1:], "replicas": len(placed), "offlineReplicas": offline,
             "offlinePartitions": leaderless}
    text_facts = (f"broker {', '.join(map(str, owners or had[-1:]))}; {count(len(placed), 'replica')} in it, "
                  f"{len(offline)} of them offline, {count(len(leaderless), 'partition')} without a leader"
                  + (f" ({some(leaderless)})" if leaderless else ""))
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
                             since_of(gone[-1:])))
        return out
    if b.directories and directory not in b.directories:
        left = [c for c in mine if _left(c, str(directory))]
        out.append(Condition("lost", f"broker {owner} no longer registers it among its log dirs "
                                     f"{value_text([str(x) for x in b.directories])}", since_of(left[-1:])))
    if b.fenced:
        fenced = [c for c in mine if (c.field == "fenced" and c.after is True) or
                  (c.field is None and c.after is not None)]
        out.append(Condition("broker fenced", f"broker {owner} is fenced: the replicas in it are offline",
                             since_of(fenced[-1:])))
    return out


def _left(c: Change, d: str) -> bool:
    if c.field == "directories":
        return d in (c.before or []) and d not in (c.after or [])
    return c.field is None and c.after is not None and d not in (c.after.get("directories") or [])
