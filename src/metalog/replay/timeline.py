"""The fields of a few watched entities after every published point of a log: ``changes`` (one pass with
Kafka's loader) folded into their values, so a question can ask what held at each point and since when.

``Timeline.run`` yields each published point's changes after applying them; ``values`` then holds every
entity's fields (values as ``history`` shows them: lists, not membership tests), and ``before`` the fields
the point's changes replaced (None: the entity was not there).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from metalog.replay.changes import Change, changes, state_before
from metalog.replay.history import MetadataHistory
from metalog.replay.subjects import ALL, Key, Subject, shown

Fields = dict[str, Any]


@dataclass(frozen=True)
class Point:
    """A published point where something watched changed."""

    offset: int
    timestamp: int | None
    changes: tuple[Change, ...]


class Timeline:
    def __init__(self, history: MetadataHistory, subject: Subject) -> None:
        self.history = history
        self.subject = subject
        self.values: dict[Key, Fields] = {}
        self.before: dict[Key, Fields | None] = {}

    def run(self, last: int) -> Iterator[Point]:
        """From the state the log starts from (``values`` holds it before the first point) to ``last``."""
        log_start = self.history.log.log_start_offset
        start = state_before(self.history, log_start)
        self.values = {k: {f: shown(v) for f, v in fields.items()}
                       for k, fields in self.subject.view(start, [ALL]).items()}
        group: list[Change] = []
        for change in changes(self.history, self.subject, log_start, last):
            if group and change.offset != group[0].offset:
                yield self._point(group)
                group = []
            group.append(change)
        if group:
            yield self._point(group)

    def _point(self, group: list[Change]) -> Point:
        self.before = {}
        for c in group:
            self._apply(c)
        return Point(group[0].offset, group[0].timestamp, tuple(group))

    def _apply(self, c: Change) -> None:
        key = c.key
        if key not in self.before:
            old = self.values.get(key)
            self.before[key] = None if old is None else dict(old)
        if c.field is None:  # the whole entity appeared or went
            if c.after is None:
                self.values.pop(key, None)
            else:
                self.values[key] = dict(c.after)
            return
        fields = self.values.setdefault(key, {})
        if c.after is None:
            fields.pop(c.field, None)
        else:
            fields[c.field] = c.after
