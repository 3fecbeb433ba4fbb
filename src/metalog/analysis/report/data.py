"""What the report shows, per cluster: chart series in change form, lanes, the per-broker and per-directory
views, the fleet overview, directory failures and event annotations (plain data; the page renders it)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from operator import itemgetter
from pathlib import Path
from typing import Any

from metalog.analysis.domain.schema import DIR_TRANSITIONS, PHASES
from metalog.analysis.growth import ClusterGrowth
from metalog.analysis.report.growth import growth_view, trimmed
from metalog.analysis.report.series import Steps, m4, packed, steps

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


@dataclass
class Cluster:
    """One cluster's rows and tables, in log order."""

    name: str
    rows: list[dict[str, Any]]
    events: list[dict[str, Any]] = field(default_factory=list)
    brokers: list[dict[str, Any]] = field(default_factory=list)
    directories: list[dict[str, Any]] = field(default_factory=list)
    failures: list[dict[str, Any]] = field(default_factory=list)
    _steps: dict[str, Steps] = field(default_factory=dict, repr=False)
    count: int | None = None  # batches, when ``rows`` holds only the rows where a value changed
    chart_json: str | None = None  # chart_data as the page's JSON, once ``compact`` made it
    chart_index: int = -1  # the place on the page it was made for
    chart_file: Path | None = None  # where compact put chart_json, when it was told to
    envelopes: dict[tuple[str, int, int], Any] | None = None  # the PNG's, when compact was given them
    growth: ClusterGrowth | None = None  # the growth tables' rows (report.growth), when the analysis wrote them

    def compact(self, index: int, envelopes: dict[tuple[str, int, int], Any] | None = None,
                spill: Path | None = None) -> None:
        """Keep only what the page and the PNG still need once the page's data is made (``index``: the cluster's
        place on the page): that data as JSON text (in the file ``spill`` when given, read back as the page is
        written), the PNG's envelopes (``png.envelopes``; without them, the series drawn in change form), the
        rows the summaries read (the first, the last and where its last phase began) and the last row of each
        broker and directory. A fleet's report then holds per cluster about what its picture shows, not its
        rows nor its page data."""
        text, self.chart_index = chart_json(index, self), index
        if spill is None:
            self.chart_json = text
        else:
            spill.write_text(text, encoding="utf-8")
            self.chart_json, self.chart_file = "", spill
        if envelopes is not None:
            self.envelopes = envelopes
            self._steps = {"phase": self.steps("phase")}  # the PNG's background: the phases' runs
        if self.growth is not None:
            self.growth = trimmed(self.growth)
        rows = self.rows
        k = len(rows) - 1
        while k > 0 and rows[k - 1]["phase"] == rows[-1]["phase"]:
            k -= 1
        self.rows = [rows[i] for i in sorted({0, max(k - 1, 0), k, len(rows) - 1})]  # what phase_since reads
        self.__dict__.pop("times", None)
        self.brokers = last_rows(self.brokers, ("broker",))
        self.directories = last_rows(self.directories, ("broker", "directory"))

    @property
    def batches(self) -> int:
        return len(self.rows) if self.count is None else self.count

    @cached_property
    def times(self) -> list[int]:
        return list(map(itemgetter("timestamp"), self.rows))

    def steps(self, column: str) -> Steps:
        """A timeline column in change form (computed once: the page and the PNG both draw it)."""
        found = self._steps.get(column)
        if found is None:
            if self.chart_json is not None:  # compacted: its rows are gone, so never a series made from a few
                raise KeyError(f"cluster {self.name}: the report drew no series {column!r} before it was compacted")
            found = self._steps[column] = steps(self.times, list(map(itemgetter(column), self.rows)))
        return found

    @property
    def start(self) -> int:
        return int(self.rows[0]["timestamp"])

    @property
    def end(self) -> int:
        return span_end(self.start, self.rows[-1]["timestamp"])


def span_end(start: int, last: int) -> int:
    """A cluster's time span ends at its last batch's time, at least a second after the first (never empty)."""
    return max(last, start + 1000)


def read_span(out: Path, name: str) -> tuple[int, int] | None:
    """A cluster's (start, end), as its ``read_cluster`` has them, from the timeline's time column alone (None:
    no rows): a fleet's shared time axis is known before any cluster is read whole."""
    from metalog.analysis.layout import iter_cluster_batches

    first = last = None
    for batch in iter_cluster_batches(out / "timeline_batches", name, ["timestamp"]):
        if batch.num_rows:
            column = batch.column(0)
            first = column[0].as_py() if first is None else first
            last = column[batch.num_rows - 1].as_py()
    return None if first is None or last is None else (first, span_end(first, last))


def clusters_of(rows: Sequence[dict[str, Any]], events: Sequence[dict[str, Any]],
                by_broker: Any = None) -> list[Cluster]:
    """Rows and tables split by cluster, in the order the clusters first appear."""
    out: dict[str, Cluster] = {}
    for row in rows:
        cluster = out.get(row["cluster"])
        if cluster is None:
            cluster = out[row["cluster"]] = Cluster(row["cluster"], [])
        cluster.rows.append(row)
    for attr, source in (("events", events), ("brokers", getattr(by_broker, "brokers", ())),
                         ("directories", getattr(by_broker, "directories", ())),
                         ("failures", getattr(by_broker, "failures", ()))):
        for item in source:
            if item["cluster"] in out:
                getattr(out[item["cluster"]], attr).append(item)
    return list(out.values())


def read_cluster(out: Path, name: str) -> Cluster | None:
    """One cluster's tables read back from ``out``'s Parquet (``analysis.layout``), the timeline in change form:
    its first and last rows and every row where a value other than the offset and time changed, which is all the
    charts, lanes and summaries draw (``steps`` keeps exactly those points), so the report of a fleet holds its
    change rows, a cluster at a time as they are read, never every batch. The changes are found column by column
    in Arrow; only the rows kept become dicts. None when it has no timeline rows."""
    from metalog.analysis.layout import batch_rows_of, iter_cluster, iter_cluster_batches

    rows: list[dict[str, Any]] = []
    count, prev_values, last, last_kept = 0, None, None, False
    for batch in iter_cluster_batches(out / "timeline_batches", name):
        n = batch.num_rows
        if n == 0:
            continue
        head = batch_rows_of(batch.slice(0, 1), name)[0]
        keep = [_values(head) != prev_values, *_changed(batch)]  # row i against row i - 1 (row 0: the last batch's)
        kept = batch_rows_of(batch.filter(keep), name) if any(keep) else []
        rows += kept
        last = kept[-1] if keep[-1] else batch_rows_of(batch.slice(n - 1, 1), name)[0]
        last_kept, prev_values = keep[-1], _values(last)
        count += n
    if last is None:
        return None
    if not last_kept:
        rows.append(last)
    tables = {table: [r for b in iter_cluster(out / table, name) for r in b] if (out / table).is_dir() else []
              for table in ("events", "broker_timeline", "directory_timeline", "directory_failures")}
    return Cluster(name, rows, tables["events"], tables["broker_timeline"], tables["directory_timeline"],
                   tables["directory_failures"], count=count)


_UNCOMPARED = ("cluster", "last_offset", "timestamp")  # what may change from row to row without being a change


def _values(row: dict[str, Any]) -> tuple[Any, ...]:
    return tuple(v for k, v in row.items() if k not in _UNCOMPARED)


def _changed(batch: Any) -> list[bool]:
    """For rows 1..n-1 of an Arrow record batch: does any compared column differ from the row before (a null
    differs from a value, not from another null)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    n = batch.num_rows
    changed = pa.array([False] * (n - 1), type=pa.bool_())
    for column, array in zip(batch.schema.names, batch.columns, strict=True):
        if column in _UNCOMPARED:
            continue
        if pa.types.is_dictionary(array.type):
            array = array.dictionary_decode()
        after, before = array.slice(1), array.slice(0, n - 1)
        differs = pc.or_(pc.fill_null(pc.not_equal(after, before), False),
                         pc.xor(pc.is_null(after), pc.is_null(before)))
        changed = pc.or_(changed, differs)
    found: list[bool] = changed.to_pylist()
    return found


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
def _series(times: Sequence[int], values: Sequence[Any], t0: int, t1: int) -> dict[str, list[Any]]:
    return packed(m4(steps(times, values), t0, t1), t0)


def _chart(spec: ChartSpec, cluster: Cluster) -> dict[str, Any] | None:
    present = [s for s in spec.series if s.column in cluster.rows[0]]
    if not present:
        return None
    series = [{"label": s.label, "color": s.color,
               **packed(m4(cluster.steps(s.column), cluster.start, cluster.end), cluster.start)} for s in present]
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


def broker_code(row: dict[str, Any]) -> str:
    if row["state"] == "unfenced" and row["controlled_shutdown"]:
        return "controlled-shutdown"
    return str(row["state"])


def directory_code(row: dict[str, Any]) -> str:
    """online; offline (not online, holding replicas); gone (neither listed nor holding any: its zero row)."""
    if row["online"]:
        return "online"
    return "offline" if row["replicas"] else "gone"


def _by_key(rows: Sequence[dict[str, Any]], key: tuple[str, ...]) -> dict[Any, list[dict[str, Any]]]:
    out: dict[Any, list[dict[str, Any]]] = {}
    for row in rows:
        out.setdefault(tuple(row[k] for k in key), []).append(row)
    return dict(sorted(out.items()))


def _broker_view(cluster: Cluster) -> dict[str, Any] | None:
    by_broker = _by_key(cluster.brokers, ("broker",))
    if not by_broker:
        return None
    t0, t1 = cluster.start, cluster.end
    lanes: list[dict[str, Any]] = []
    leaders: list[dict[str, Any]] = []
    offline: list[dict[str, Any]] = []
    homeless: list[dict[str, Any]] = []
    for n, ((bid,), rows) in enumerate(by_broker.items()):
        times = [r["timestamp"] for r in rows]
        color = PALETTE[n % len(PALETTE)]
        lane = _lane(f"broker {bid}", BROKER_STATE_COLORS, steps(times, [broker_code(r) for r in rows]), t0)
        lane["stripe"] = {"label": "on ZooKeeper", "color": ZK_COLOR,
                          **packed(steps(times, [r["zk"] for r in rows]), t0)}
        lanes.append(lane)
        for out, values in ((leaders, [r["leaders"] for r in rows]), (offline, [r["offline_replicas"] for r in rows]),
                            (homeless, [r["replicas_migrating"] + r["replicas_unassigned"] for r in rows])):
            out.append({"label": f"broker {bid}", "color": color, **_series(times, values, t0, t1)})
    return {"lanes": {"name": "broker-states", "title": "Broker states", "lanes": lanes,
                      "legend": [*BROKER_STATE_COLORS.items(), ("on ZooKeeper (stripe)", ZK_COLOR)]},
            "charts": [
                {"name": "leaders", "title": "Leaders per broker", "unit": "partitions", "series": leaders},
                {"name": "broker-offline", "title": "Offline replicas per broker", "unit": "replicas",
                 "series": offline},
                {"name": "homeless", "title": "Replicas without a real directory (MIGRATING or UNASSIGNED) per "
                                             "broker", "unit": "replicas", "series": homeless}]}


def _directory_view(cluster: Cluster) -> dict[str, Any] | None:
    by_dir = _by_key(cluster.directories, ("broker", "directory"))
    if not by_dir:
        return None
    t0, t1 = cluster.start, cluster.end
    lanes, replicas = [], []
    for n, ((bid, directory), rows) in enumerate(by_dir.items()):
        times = [r["timestamp"] for r in rows]
        label = f"broker {bid} {directory[:8]}…"
        lanes.append(_lane(label, DIRECTORY_COLORS, steps(times, [directory_code(r) for r in rows]), t0,
                           f"broker {bid}, directory {directory}"))
        replicas.append({"label": label, "color": PALETTE[n % len(PALETTE)],
                         **_series(times, [r["replicas"] for r in rows], t0, t1)})
    return {"lanes": {"name": "directory-states", "title": "Log directories", "lanes": lanes,
                      "legend": list(DIRECTORY_COLORS.items())},
            "charts": [{"name": "directory-replicas", "title": "Replicas per log directory", "unit": "replicas",
                        "series": replicas}]}


def chart_data(index: int, cluster: Cluster) -> dict[str, Any]:
    """Everything the page's script draws for one cluster (times relative to ``t0``, differences)."""
    new_columns = "offline_partitions" in cluster.rows[0]
    charts = [c for c in (_chart(spec, cluster) for spec in cluster_charts(new_columns)) if c is not None]
    annotations = [e for e in cluster.events if e["event"] in ANNOTATED]
    return {
        "name": cluster.name, "id": f"c{index}", "t0": cluster.start, "t1": cluster.end,
        "lanes": {"name": "phases", "title": "Migration phase, JBOD transition and metadata.version",
                  "lanes": _phase_lanes(cluster),
                  "legend": [*PHASE_COLORS.items(), *((f"JBOD {k}", v) for k, v in DIR_COLORS.items())]},
        "charts": charts, "brokers": _broker_view(cluster), "directories": _directory_view(cluster),
        "growth": None if cluster.growth is None else growth_view(cluster.growth, cluster.start, cluster.end),
        "events": {"t": [e["timestamp"] for e in annotations], "kind": [e["event"] for e in annotations],
                   "detail": [f"offset {e['offset']:,}: {e['detail']}" for e in annotations]},
    }


def chart_json(index: int, cluster: Cluster) -> str:
    """``chart_data`` as the page's JSON block holds it (no "<": see ``page.render_html``)."""
    if cluster.chart_json is not None:
        if index != cluster.chart_index:
            raise ValueError(f"cluster {cluster.name}: compacted for place {cluster.chart_index} on the page, "
                             f"not {index}")
        return cluster.chart_file.read_text(encoding="utf-8") if cluster.chart_file else cluster.chart_json
    return json.dumps(chart_data(index, cluster), separators=(",", ":")).replace("<", "\\u003c")


# ---- tables -----------------------------------------------------------------------------------------------
def last_rows(rows: Sequence[dict[str, Any]], key: tuple[str, ...]) -> list[dict[str, Any]]:
    """The last row of each key (the values after the log's last batch), sorted by key."""
    return [group[-1] for group in _by_key(rows, key).values()]


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


def failures(cluster: Cluster) -> list[Failure]:
    """Each directory failure with the partitions it held (directory_failures rows, in log order)."""
    held: dict[tuple[int, int, int, str], list[tuple[str, int, int]]] = {}
    for row in cluster.failures:
        partitions = held.setdefault((row["offset"], row["timestamp"], row["broker"], row["directory"]), [])
        if row["partition"] >= 0:
            partitions.append((row["topic"], row["partition"], row["leader"]))
    return [Failure(*key, partitions) for key, partitions in held.items()]
