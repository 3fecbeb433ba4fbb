"""What ``why`` answers: a subject's states at a point, since when each has held (``Runs`` follows a
``Timeline`` and notes where each state's current run began), the chain of changes behind them, and the text."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from metalog.replay.changes import Change, RecordRef, records_text, value_text
from metalog.replay.points import ReplayResult, format_time
from metalog.replay.printable import name
from metalog.replay.subjects import Key
from metalog.replay.timeline import Fields, Point, Timeline

BROKER_FIELDS = ("fenced", "inControlledShutdown", "directories", "epoch")  # the registration facts a chain shows


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


def link(c: Change, note: str | None = None) -> Link:
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


class Runs:
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
                                      records_of(c for c in at.changes if self.relevant(s, c)))
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


def records_of(changes: Iterable[Change]) -> tuple[RecordRef, ...]:
    return tuple(sorted({r for c in changes for r in c.records}, key=lambda r: r.offset))


def since_of(changes: list[Change]) -> Since | None:
    return None if not changes else Since(changes[0].offset, changes[0].timestamp, changes[0].records)


def count(n: int, what: str) -> str:
    return f"{n} {what}{'' if n == 1 else 's'}"


def some(labels: list[str], limit: int = 5) -> str:
    shown = ", ".join(labels[:limit])
    return shown + (f" and {len(labels) - limit} more" if len(labels) > limit else "")


def natural(label: str) -> list[Any]:
    return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", label)]


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
