"""What the report shows, per cluster: chart series in change form, lanes, the per-broker and per-directory
views, the fleet overview, directory failures and event annotations (plain data; the page renders it). A
``Cluster`` holds what is drawn, never a table's rows: ``report.reading`` builds it from the tables' columns."""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from metalog.analysis.domain.schema import DIR_TRANSITIONS, PHASES
from metalog.analysis.outputs.growth import ClusterGrowth
from metalog.analysis.outputs.report.growth import growth_view, trimmed
from metalog.analysis.outputs.report.series import Steps, json_pieces, packed
from metalog.analysis.outputs.report.summary import Latest

PHASE_COLORS = dict(zip(PHASES, ("#b0b0b0", "#f6c85f", "#ef8a62", "#6f9fd8", "#4daf4a"), strict=True))
DIR_COLORS = dict(zip(DIR_TRANSITIONS, ("#dddddd", "#fdb863", "#5aae61"), strict=True))
BROKER_STATE_COLORS = {"unfenced": "#66a61e", "controlled-shutdown": "#e6ab02", "fenced": "#d7301f",
                       "unregistered": "#d9d9d9"}
ZK_COLOR = "#8c6d31"
DIRECTORY_COLORS = {"online": "#1b9e77", "offline": "#d7301f", "gone": "#d9d9d9"}
# events drawn on every chart of their cluster (aborted transactions are too many: they stay in the table)
ANNOTATED = {"phase-change": "#ef8a62", "dir-transition": "#5aae61", "metadata-version": "#6a3d9a",
             "directory-failure": "#d7301f", "controller-leader": "#969696",
             "snapshot": "#35978f"}  # (snapshots: marked on the growth view's bytes chart only)
PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
           "#17becf", "#393b79", "#637939", "#8c6d31", "#843c39", "#7b4173", "#3182bd")


@dataclass(frozen=True)
class SeriesSpec:
    column: str
    label: str
    color: str


@dataclass(frozen=True)
class ChartSpec:
    name: str
    title: str
    unit: str
    series: tuple[SeriesSpec, ...]


def cluster_charts(new_columns: bool) -> tuple[ChartSpec, ...]:
    """The cluster-wide charts. ``new_columns``: the timeline has Kafka's controller metrics (offline_partitions
    and the rest): brokers_unfenced then counts every broker not fenced, in controlled shutdown or not, and
    brokers_controlled_shutdown overlaps both others; drawn as lines, never stacked, either way."""
    active = "active (not fenced)" if new_columns else "unfenced, not shutting down"
    return (
        ChartSpec("brokers", "Brokers by state", "brokers", (
            SeriesSpec("brokers_unfenced", active, "#66a61e"), SeriesSpec("brokers_fenced", "fenced", "#d7301f"),
            SeriesSpec("brokers_controlled_shutdown", "in controlled shutdown", "#e6ab02"),
            SeriesSpec("brokers_zk", "on ZooKeeper (migrating)", ZK_COLOR))),
        ChartSpec("offline", "Offline replicas and partitions", "replicas, partitions", (
            SeriesSpec("offline_replicas", "offline replicas", "#7570b3"),
            SeriesSpec("offline_partitions", "offline partitions (no leader)", "#d7301f"))),
        ChartSpec("replicas", "Replicas by directory state", "replicas", (
            SeriesSpec("replicas_assigned", "in a real directory", "#1b9e77"),
            SeriesSpec("replicas_migrating", "MIGRATING", "#e6ab02"),
            SeriesSpec("replicas_unassigned", "UNASSIGNED", "#80b1d3"),
            SeriesSpec("replicas_lost", "LOST", "#d7301f"))),
        ChartSpec("sizes", "Topics, partitions and leadership", "topics, partitions", (
            SeriesSpec("partitions", "partitions", "#1f77b4"), SeriesSpec("topics", "topics", "#9467bd"),
            SeriesSpec("preferred_replica_imbalance", "not led by their preferred replica", "#ff7f0e"))),
    )


LANES = ("phase", "dir_transition", "metadata_version")  # timeline columns drawn as lanes (every change kept)
PICTURE_BUCKETS = 1200  # the PNG's envelope buckets per panel: about its width in pixels


def drawn(columns: Collection[str]) -> list[str]:
    """The timeline columns the PNG draws as lines, of those a timeline has."""
    charts = {c.name: c for c in cluster_charts("offline_partitions" in columns)}
    return [*(s.column for s in charts["replicas"].series),
            *(s.column for name in ("brokers", "offline") for s in charts[name].series if s.column in columns)]


@dataclass(frozen=True)
class BrokerNow:
    """A broker's values after the log's last batch (its last broker_timeline row); ``state``: its lane's code."""

    broker: int
    state: str
    zk: int
    log_dirs: int
    replicas_assigned: int
    replicas_migrating: int
    replicas_unassigned: int
    replicas_lost: int
    offline_replicas: int
    leaders: int
    timestamp: int  # of its last change


@dataclass(frozen=True)
class DirectoryNow:
    """A log directory's values after the log's last batch (its last directory_timeline row)."""

    broker: int
    directory: str
    state: str  # its lane's code: online, offline, gone
    replicas: int
    leaders: int
    offline_replicas: int
    offline_partitions: int
    timestamp: int


@dataclass
class KeyView:
    """One broker's or directory's series: its lane (every change), the ZooKeeper stripe (a broker's) and its
    lines (decimated as the page draws them), by name."""

    lane: Steps
    lines: dict[str, Steps]
    stripe: Steps | None = None


@dataclass(frozen=True)
class Failure:
    offset: int
    timestamp: int
    broker: int
    directory: str
    partitions: list[tuple[str, int, int]]  # (topic, partition, leader after)

    @property
    def taken_offline(self) -> list[tuple[str, int]]:
        return [(t, p) for t, p, leader in self.partitions if leader == -1]


@dataclass
class Cluster:
    """One cluster as the report draws it. ``lanes``: the timeline's lane columns, every change; ``charts``: its
    chart columns decimated on [start, end) (``series.m4``); ``envelopes``: the PNG's, by (column, its time
    axis); ``brokers``/``directories``: the values after the last batch, by key, and (until ``compact``) each
    key's series; ``columns``: the timeline's columns."""

    name: str
    start: int
    end: int
    batches: int
    latest: Latest
    columns: frozenset[str]
    lanes: dict[str, Steps]
    charts: dict[str, Steps]
    envelopes: dict[tuple[str, int, int], tuple[list[Any], list[Any]]] = field(default_factory=dict)
    brokers: list[BrokerNow] = field(default_factory=list)
    directories: list[DirectoryNow] = field(default_factory=list)
    broker_views: list[KeyView] = field(default_factory=list)
    directory_views: list[KeyView] = field(default_factory=list)
    failures: list[Failure] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    growth: ClusterGrowth | None = None  # the growth tables' rows (report.growth), when the analysis wrote them
    chart_json: str | None = None  # chart_data as the page's JSON, once ``compact`` made it
    chart_index: int = -1  # the place on the page it was made for
    chart_file: Path | None = None  # where compact put chart_json, when it was told to

    def compact(self, index: int, spill: Path | None = None) -> None:
        """Keep only what the page and the PNG still need once the page's data is made (``index``: the cluster's
        place on the page): that data as JSON text (in the file ``spill`` when given, read back as the page is
        written), the phases' runs (the PNG's background), the envelopes and the values after the last batch."""
        if spill is None:
            self.chart_json = chart_json(index, self)
        else:
            with open(spill, "w", encoding="utf-8") as f:
                f.writelines(_chart_pieces(index, self))
        self.drop_series(index, spill)

    def drop_series(self, index: int, chart_file: Path | None = None) -> None:
        """``compact``'s end, the page's data made: in the file ``chart_file`` (where ``compact`` spilled it, or
        where the driver joins a cluster's two parts: ``report.split_parts``) or in ``chart_json``."""
        if chart_file is not None:
            self.chart_json, self.chart_file = "", chart_file
        self.chart_index = index
        if self.growth is not None:
            self.growth = trimmed(self.growth)
        self.lanes = {"phase": self.lanes["phase"]}
        self.charts, self.broker_views, self.directory_views = {}, [], []

    def steps(self, column: str) -> Steps:
        """A lane column in change form, or a chart column as the page draws it."""
        found = self.lanes.get(column, self.charts.get(column))
        if found is None:
            raise KeyError(f"cluster {self.name}: the report keeps no series {column!r}"
                           f"{' once compacted' if self.chart_json is not None else ''}")
        return found


def span_end(start: int, last: int) -> int:
    """A cluster's time span ends at its last batch's time, at least a second after the first (never empty)."""
    return max(last, start + 1000)


def read_span(out: Path, name: str) -> tuple[int, int] | None:
    """A cluster's (start, end), as its ``read_cluster`` has them, from the timeline's time column alone (None:
    no rows): a fleet's shared time axis is known before any cluster is read whole."""
    from metalog.analysis.outputs.layout import iter_cluster_batches

    first = last = None
    for batch in iter_cluster_batches(out / "timeline_batches", name, ["timestamp"]):
        if batch.num_rows:
            column = batch.column(0)
            first = column[0].as_py() if first is None else first
            last = column[batch.num_rows - 1].as_py()
    return None if first is None or last is None else (first, span_end(first, last))


def shared_axis(clusters: Sequence[Cluster]) -> bool:
    return shared_spans([(c.start, c.end) for c in clusters])


def shared_spans(spans: Sequence[tuple[int, int]]) -> bool:
    """One time axis for the fleet when the clusters' time spans overlap (chained: each starts before the ones
    before it end)."""
    if len(spans) < 2:
        return False
    ordered = sorted(spans)
    reach = ordered[0][1]
    for start, end in ordered[1:]:
        if start > reach:
            return False
        reach = max(reach, end)
    return True


def fleet_span(spans: Sequence[tuple[int, int]]) -> tuple[int, int] | None:
    """The fleet's one time axis, (first start, last end), or None when each cluster has its own."""
    return (min(s for s, _ in spans), max(e for _, e in spans)) if shared_spans(spans) else None


# ---- series -----------------------------------------------------------------------------------------------
def _chart(spec: ChartSpec, cluster: Cluster) -> dict[str, Any] | None:
    present = [s for s in spec.series if s.column in cluster.columns]
    if not present:
        return None
    series = [{"label": s.label, "color": s.color, **packed(cluster.steps(s.column), cluster.start)}
              for s in present]
    return {"name": spec.name, "title": spec.title, "unit": spec.unit, "series": series}


def _lane(label: str, codes: dict[str, str], series: Steps, t0: int, title: str | None = None) -> dict[str, Any]:
    names = list(codes)
    return {"label": label, "title": title or label, "codes": names, "colors": [codes[n] for n in names],
            **packed(Steps(series.times, [names.index(v) for v in series.values]), t0)}


def _phase_lanes(cluster: Cluster) -> list[dict[str, Any]]:
    versions = cluster.steps("metadata_version")
    versions = Steps(versions.times, [v or "unset" for v in versions.values])
    shades = {}
    for i, v in enumerate(dict.fromkeys(versions.values)):
        shades[v] = "#e8e8e8" if v == "unset" else ("#c6dbef", "#9ecae1")[i % 2]
    return [
        _lane("phase", PHASE_COLORS, cluster.steps("phase"), cluster.start, "migration phase"),
        _lane("JBOD", DIR_COLORS, cluster.steps("dir_transition"), cluster.start, "JBOD transition (KIP-858)"),
        _lane("metadata.version", shades, versions, cluster.start),
    ]


def broker_code(state: str, controlled_shutdown: int) -> str:
    """A broker's lane: its state, or controlled-shutdown when unfenced and shutting down."""
    if state == "unfenced" and controlled_shutdown:
        return "controlled-shutdown"
    return str(state)


def directory_code(online: int, replicas: int) -> str:
    """online; offline (not online, holding replicas); gone (neither listed nor holding any: its zero row)."""
    if online:
        return "online"
    return "offline" if replicas else "gone"


BROKER_LINES = ("leaders", "offline_replicas", "homeless")  # a broker's lines (homeless: MIGRATING + UNASSIGNED)


def broker_view(brokers: Sequence[BrokerNow], views: Sequence[KeyView], t0: int) -> dict[str, Any] | None:
    """The brokers' view on the page (a cluster's ``brokers`` and ``broker_views``; its ``start``)."""
    if not views:
        return None
    lanes: list[dict[str, Any]] = []
    lines: dict[str, list[dict[str, Any]]] = {name: [] for name in BROKER_LINES}
    for n, (now, view) in enumerate(zip(brokers, views, strict=True)):
        lane = _lane(f"broker {now.broker}", BROKER_STATE_COLORS, view.lane, t0)
        assert view.stripe is not None
        lane["stripe"] = {"label": "on ZooKeeper", "color": ZK_COLOR, **packed(view.stripe, t0)}
        lanes.append(lane)
        for name in BROKER_LINES:
            lines[name].append({"label": f"broker {now.broker}", "color": PALETTE[n % len(PALETTE)],
                                **packed(view.lines[name], t0)})
    return {"lanes": {"name": "broker-states", "title": "Broker states", "lanes": lanes,
                      "legend": [*BROKER_STATE_COLORS.items(), ("on ZooKeeper (stripe)", ZK_COLOR)]},
            "charts": [
                {"name": "leaders", "title": "Leaders per broker", "unit": "partitions", "series": lines["leaders"]},
                {"name": "broker-offline", "title": "Offline replicas per broker", "unit": "replicas",
                 "series": lines["offline_replicas"]},
                {"name": "homeless", "title": "Replicas without a real directory (MIGRATING or UNASSIGNED) per "
                                             "broker", "unit": "replicas", "series": lines["homeless"]}]}


def _directory_view(cluster: Cluster) -> dict[str, Any] | None:
    if not cluster.directory_views:
        return None
    t0 = cluster.start
    lanes, replicas = [], []
    for n, (now, view) in enumerate(zip(cluster.directories, cluster.directory_views, strict=True)):
        label = f"broker {now.broker} {now.directory[:8]}…"
        lanes.append(_lane(label, DIRECTORY_COLORS, view.lane, t0, f"broker {now.broker}, directory {now.directory}"))
        replicas.append({"label": label, "color": PALETTE[n % len(PALETTE)], **packed(view.lines["replicas"], t0)})
    return {"lanes": {"name": "directory-states", "title": "Log directories", "lanes": lanes,
                      "legend": list(DIRECTORY_COLORS.items())},
            "charts": [{"name": "directory-replicas", "title": "Replicas per log directory", "unit": "replicas",
                        "series": replicas}]}


def _phases(index: int, cluster: Cluster) -> dict[str, Any]:
    return {"name": "phases", "title": "Migration phase, JBOD transition and metadata.version",
            "lanes": _phase_lanes(cluster),
            "legend": [*PHASE_COLORS.items(), *((f"JBOD {k}", v) for k, v in DIR_COLORS.items())]}


def _charts(index: int, cluster: Cluster) -> list[dict[str, Any]]:
    new_columns = "offline_partitions" in cluster.columns
    return [c for c in (_chart(spec, cluster) for spec in cluster_charts(new_columns)) if c is not None]


def growth_data(growth: ClusterGrowth | None, t0: int, t1: int) -> dict[str, Any] | None:
    """The growth view on the page, when the analysis wrote the growth tables (a cluster's ``growth``)."""
    return None if growth is None else growth_view(growth, t0, t1)


def event_marks(events: Sequence[dict[str, Any]]) -> dict[str, list[Any]]:
    """The events marked on a cluster's charts (its ``events``: those ``ANNOTATED``)."""
    annotations = [e for e in events if e["event"] in ANNOTATED]
    return {"t": [e["timestamp"] for e in annotations], "kind": [e["event"] for e in annotations],
            "detail": [f"offset {e['offset']:,}: {e['detail']}" for e in annotations]}


# what the page's script draws for one cluster, field by field in the page's order: each made of the cluster and
# its place on the page (``chart_data``); a cluster read in two parts has each part make its own (``field_pieces``)
CHART_FIELDS: dict[str, Callable[[int, Cluster], Any]] = {
    "name": lambda index, cluster: cluster.name, "id": lambda index, cluster: f"c{index}",
    "t0": lambda index, cluster: cluster.start, "t1": lambda index, cluster: cluster.end,
    "lanes": _phases, "charts": _charts,
    "brokers": lambda index, cluster: broker_view(cluster.brokers, cluster.broker_views, cluster.start),
    "directories": lambda index, cluster: _directory_view(cluster),
    "growth": lambda index, cluster: growth_data(cluster.growth, cluster.start, cluster.end),
    "events": lambda index, cluster: event_marks(cluster.events),
}
FIRST_FIELD = next(iter(CHART_FIELDS))
CHART_END = "}"  # closes the fields' texts (``field_pieces``)


def chart_data(index: int, cluster: Cluster) -> dict[str, Any]:
    """Everything the page's script draws for one cluster (times relative to ``t0``, differences)."""
    return {name: make(index, cluster) for name, make in CHART_FIELDS.items()}


def chart_json(index: int, cluster: Cluster) -> str:
    """``chart_data`` as the page's JSON block holds it (no "<": see ``page.render_html``)."""
    if cluster.chart_json is not None:
        if index != cluster.chart_index:
            raise ValueError(f"cluster {cluster.name}: compacted for place {cluster.chart_index} on the page, "
                             f"not {index}")
        return cluster.chart_file.read_text(encoding="utf-8") if cluster.chart_file else cluster.chart_json
    return "".join(_chart_pieces(index, cluster))


def _chart_pieces(index: int, cluster: Cluster) -> Iterator[str]:
    """``chart_json``'s text in pieces: ``chart_data``'s JSON, no "<"."""
    for name, make in CHART_FIELDS.items():
        yield from field_pieces(name, make(index, cluster))
    yield CHART_END


def field_pieces(name: str, value: Any) -> Iterator[str]:
    """One field of ``chart_data`` (``CHART_FIELDS``), ``value``, as its text in the whole: with what comes before
    it there ("{" or "," and its name), so that the texts of fields made apart (a cluster read in two parts, each
    making what it read: ``report.split_parts``), joined in ``CHART_FIELDS``' order and closed with
    ``CHART_END``, are ``chart_json``'s."""
    yield f"{',' if name != FIRST_FIELD else '{'}{json.dumps(name)}:"
    for piece in json_pieces(value):
        yield piece.replace("<", "\\u003c")
