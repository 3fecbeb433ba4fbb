"""The report's growth view of a cluster: which controller led when (a lane of its leader epochs), records per
minute by record type (the most frequent types, the rest as "other"), and the log's and the latest snapshot's
bytes over time with the snapshots marked; all on the cluster's time axis. Read from the growth tables
(``metalog.analysis.outputs.growth_tables``), or given in memory."""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from itertools import accumulate, repeat
from operator import add
from pathlib import Path
from typing import Any

from metalog.analysis.domain.columns import int64s
from metalog.analysis.outputs.growth import (
    MINUTE_MS,
    ROW_TYPES,
    ClusterGrowth,
    Leadership,
    LogMinutes,
    Snapshot,
    TypeMinutes,
)
from metalog.analysis.outputs.kernels import cast
from metalog.analysis.outputs.report.series import Steps, m4, packed, steps

TOP_TYPES = 8  # record types drawn on their own; the others are summed as "other"
OTHER = "other"
LEADER_COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#bcbd22",
                 "#17becf", "#393b79")
TYPE_COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#bcbd22", "#7f7f7f")
UNKNOWN_COLOR = "#d9d9d9"
SNAPSHOT = "snapshot"  # the kind of the marks on the bytes chart (report.js colours it from data.ANNOTATED)
_UNITS = (("bytes", 1), ("KiB", 1 << 10), ("MiB", 1 << 20), ("GiB", 1 << 30), ("TiB", 1 << 40))
_AXIS_MAX = 40_000_000  # the page's integer tick steps reach 1e7: values drawn below this many units


def read_cluster_growth(out: Path, name: str) -> ClusterGrowth | None:
    """One cluster's growth tables read back from ``out``'s Parquet; None when the analysis wrote none."""
    from metalog.analysis.outputs.growth_tables import GROWTH_TABLES
    from metalog.analysis.outputs.layout import iter_cluster_batches

    if not (out / "log_size").is_dir():
        return None
    tables: dict[str, list[list[Any]]] = {}
    for table in ROW_TYPES:
        names = [c for c, _, _ in GROWTH_TABLES[table]]
        found: list[list[Any]] = [[] for _ in names]
        if (out / table).is_dir():
            for batch in iter_cluster_batches(out / table, name, names):
                for column, values in zip(names, found, strict=True):
                    values += _values(batch.column(column))
        tables[table] = found  # (its columns)
    growth, log_size = tables["growth"], tables["log_size"]
    return ClusterGrowth(name, TypeMinutes(array("q", growth[0]), growth[1], array("q", growth[2]),
                                           array("q", growth[3])), LogMinutes(*(array("q", c) for c in log_size)),
                         [Snapshot(*row) for row in zip(*tables["snapshots"], strict=True)],
                         [Leadership(*row) for row in zip(*tables["controller_leadership"], strict=True)])


def _values(column: Any) -> Sequence[Any]:
    """An Arrow column's values: its int64s (times: epoch ms) as ``array('q')``, text as a list of str."""
    import pyarrow as pa

    if pa.types.is_string(column.type):
        return column.to_pylist()  # type: ignore[no-any-return]
    return int64s(cast(column, pa.int64()))


def growth_view(growth: ClusterGrowth, t0: int, t1: int) -> dict[str, Any]:
    """The view's data for the page's script: ``lanes`` (the leadership lane) and ``charts``."""
    return {"lanes": leadership_lanes(growth.leadership, t0),
            "charts": [records_chart(growth.growth, growth.log_size, t0, t1),
                       bytes_chart(growth.log_size, growth.snapshots, t0, t1)]}


def leader_code(row: Leadership) -> str:
    who = "unknown leader" if row.leader < 0 else f"controller {row.leader}"
    return f"{who}, epoch {row.epoch}"


def leadership_steps(rows: Sequence[Leadership]) -> Steps:
    """Each epoch from its start: the time of the batch that opened it, never before the epoch before it began
    (a batch stamped earlier than the one before it is drawn where the one before it is)."""
    times: list[int] = []
    for row in rows:
        times.append(max(row.timestamp, times[-1]) if times else row.timestamp)
    return Steps(times, [leader_code(row) for row in rows])


def leadership_lanes(rows: Sequence[Leadership], t0: int) -> dict[str, Any]:
    leaders = sorted({r.leader for r in rows if r.leader >= 0})
    color = {leader: LEADER_COLORS[i % len(LEADER_COLORS)] for i, leader in enumerate(leaders)}
    series = leadership_steps(rows)
    codes = list(dict.fromkeys(series.values))
    colors = [color.get(r.leader, UNKNOWN_COLOR) for r in {leader_code(r): r for r in rows}.values()]
    lane = {"label": "controller leader", "title": "the active controller and its leader epoch (LeaderChangeMessage)",
            "codes": codes, "colors": colors, "named": True,
            **packed(Steps(series.times, [codes.index(v) for v in series.values]), t0)}
    legend = [(f"controller {leader}", color[leader]) for leader in leaders]
    if any(r.leader < 0 for r in rows):
        legend.append(("unknown leader", UNKNOWN_COLOR))
    return {"name": "controller-leadership", "title": "Controller leadership (leader epochs)", "lanes": [lane],
            "legend": legend}


def _minute_points(minutes: Sequence[int]) -> tuple[list[int], list[int | None]]:
    """The times of a count per minute's points (``_per_minute``), once for every record type: each minute with
    batches, and the end of each one whose next minute has none (None there: a 0)."""
    had = set(minutes)
    times: list[int] = []
    which: list[int | None] = []
    for minute in minutes:
        times.append(minute)
        which.append(minute)
        if minute + MINUTE_MS not in had:
            times.append(minute + MINUTE_MS)
            which.append(None)
    return times, which


def _per_minute(counts: dict[int, int], points: tuple[list[int], list[int | None]]) -> Steps:
    """A count per minute as a step function: its value from each minute with batches, 0 in the minutes
    without (and after the last minute that has batches): ``points`` are ``_minute_points``' (a None, no minute's
    key, gets the 0)."""
    times, which = points
    return steps(times, list(map(counts.get, which, repeat(0))))  # type: ignore[arg-type]


def top_types(rows: TypeMinutes, top: int = TOP_TYPES) -> list[str]:
    """The ``top`` record types with the most records (ties by name); the others are "other"."""
    return _top(_by_type(rows), top)


def _by_type(rows: TypeMinutes) -> dict[str, dict[int, int]]:
    """Each record type's records by minute (a minute that comes twice added up)."""
    found: dict[str, dict[int, int]] = {}
    for name, minute, records in zip(rows.record_type, rows.minute, rows.records, strict=True):
        counts = found.get(name)
        if counts is None:
            found[name] = {minute: records}
        else:
            counts[minute] = counts.get(minute, 0) + records
    return found


def _top(by_type: dict[str, dict[int, int]], top: int) -> list[str]:
    totals = {name: sum(counts.values()) for name, counts in by_type.items()}
    return sorted(totals, key=lambda t: (-totals[t], t))[:top]


def records_chart(rows: TypeMinutes, log_size: LogMinutes, t0: int, t1: int) -> dict[str, Any]:
    by_type = _by_type(rows)
    per_type = {name: by_type[name] for name in _top(by_type, TOP_TYPES)}
    other: dict[int, int] = {}
    for name in sorted(by_type.keys() - per_type.keys()):
        for minute, records in by_type[name].items():
            other[minute] = other.get(minute, 0) + records
    if other:
        per_type[OTHER] = other
    points = _minute_points(log_size.minute)
    series = [{"label": name, "color": TYPE_COLORS[i % len(TYPE_COLORS)],
               **packed(m4(_per_minute(counts, points), t0, t1), t0)} for i, (name, counts) in
              enumerate(per_type.items())]
    return {"name": "records-per-minute", "title": "Records per minute by record type", "unit": "records/minute",
            "series": series}


def _unit(largest: int) -> tuple[str, int]:
    for name, size in _UNITS:
        if largest / size < _AXIS_MAX:
            return name, size
    return _UNITS[-1]


def bytes_chart(log_size: LogMinutes, snapshots: Sequence[Snapshot], t0: int, t1: int) -> dict[str, Any]:
    """The log's bytes (from its start offset, at the end of each minute) and the latest snapshot's."""
    largest = max([0, *log_size.log_bytes, *(s.bytes for s in snapshots)])
    unit, size = _unit(largest)

    def scale(value: int) -> float:
        return value if size == 1 else round(value / size, 1)

    # all of a minute's bytes are there at its end, or at the log's last batch if earlier
    ends = map(min, map(add, log_size.minute, repeat(MINUTE_MS)), repeat(t1))
    times = list(accumulate(ends, max, initial=log_size.minute[0])) if log_size else []
    values = [0.0, *map(scale, log_size.log_bytes)] if log_size else []
    log = Steps(times, values)
    ordered = sorted(snapshots, key=lambda s: (s.timestamp, s.end_offset))
    latest = steps([s.timestamp for s in ordered], [scale(s.bytes) for s in ordered])
    series = [{"label": "log (from its start offset)", "color": "#1f77b4", **packed(m4(steps(log.times, log.values),
                                                                                     t0, t1), t0)}]
    if ordered:
        series.append({"label": "latest snapshot", "color": "#35978f", **packed(m4(latest, t0, t1), t0)})
    marks = {"t": [s.timestamp for s in ordered], "kind": [SNAPSHOT] * len(ordered),
             "detail": [f"snapshot {s.file}: end offset {s.end_offset:,}, {s.records:,} records, {s.bytes:,} bytes"
                        for s in ordered]}
    return {"name": "log-bytes", "title": "Log and snapshot bytes (snapshots marked)", "unit": unit,
            "series": series, "marks": marks}


def trimmed(growth: ClusterGrowth) -> ClusterGrowth:
    """What ``growth_summary`` reads once the page's data is made: the snapshots, the epochs and the last minute
    (not a row per minute and type)."""
    return ClusterGrowth(growth.name, TypeMinutes(), growth.log_size.sliced(-1), growth.snapshots, growth.leadership)


def growth_summary(growth: ClusterGrowth) -> str:
    """The view's line: leader epochs and controllers, the log's bytes, the snapshots and their cadence."""
    leaders = sorted({r.leader for r in growth.leadership if r.leader >= 0})
    parts = [f"{len(growth.leadership):,} leader epoch{'s' if len(growth.leadership) != 1 else ''}"
             + (f" (controller{'s' if len(leaders) != 1 else ''} {', '.join(map(str, leaders))})" if leaders else "")]
    if growth.log_size:
        parts.append(f"the log holds {growth.log_size.log_bytes[-1]:,} bytes of batches from its start offset")
    times = sorted(s.timestamp for s in growth.snapshots)
    if not times:
        parts.append("no snapshot in the directory")
    else:
        latest = max(growth.snapshots, key=lambda s: (s.timestamp, s.end_offset))
        text = f"{len(times):,} snapshot{'s' if len(times) != 1 else ''}, the latest {latest.bytes:,} bytes"
        if len(times) > 1:
            gaps = sorted(b - a for a, b in zip(times, times[1:], strict=False))
            text += f", one every {_duration(gaps[len(gaps) // 2])} of log time (median)"
        parts.append(text)
    return "; ".join(parts) + "."


def _duration(ms: int) -> str:
    seconds = ms / 1000
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    if seconds < 172_800:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86_400:.1f} days"
