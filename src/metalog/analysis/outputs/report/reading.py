"""A cluster's report (``data.Cluster``) built from its tables' columns as they are read, never from their rows:
the analysis' Parquet tables a record batch at a time (``read_cluster``, with pyarrow). Each column's change points
feed a builder (``series.StepsBuilder``: every change of a lane; a line decimated as the page draws it, holding a
bounded number of points; ``series.EnvelopeBuilder``: the PNG's envelope), so what a cluster's report holds is
bounded by what it draws, not by its log's length."""

from __future__ import annotations

from array import array
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from metalog.analysis.domain.columns import int64s
from metalog.analysis.outputs.kernels import cast, decoded, kept, kernel, take
from metalog.analysis.outputs.report.data import (
    BROKER_LINES,
    LANES,
    PICTURE_BUCKETS,
    BrokerNow,
    Cluster,
    DirectoryNow,
    Failure,
    KeyView,
    broker_code,
    cluster_charts,
    directory_code,
    drawn,
    read_span,
)
from metalog.analysis.outputs.report.series import FINE, EnvelopeBuilder, StepsBuilder
from metalog.analysis.outputs.report.summary import Latest
from metalog.codec import core

Span = tuple[int, int]
# the columns each table's report reads (the timeline's: ``ClusterBuilder.timeline_columns`` and Latest's)
BROKER_COLUMNS = ("timestamp", "broker", "state", "controlled_shutdown", "zk", "log_dirs", "replicas_assigned",
                  "replicas_migrating", "replicas_unassigned", "replicas_lost", "offline_replicas", "leaders")
DIRECTORY_COLUMNS = ("timestamp", "broker", "directory", "online", "replicas", "leaders", "offline_replicas",
                     "offline_partitions")


class FailureRow(NamedTuple):
    """A directory_failures row (``FAILURE_COLUMNS``): a directory's failure, and a partition it held."""

    offset: int
    timestamp: int
    broker: int
    directory: str
    topic: str
    partition: int  # -1: a row for a directory that held none
    leader: int  # the partition's leader after the failure


FAILURE_COLUMNS = FailureRow._fields
# the timeline's columns the report never shows (neither drawn nor in ``Latest``): not read
UNREAD = ("zk_migration_state", "open_transaction")


class KeyBuilder:
    """One broker's or directory's series as its rows arrive: its lane (every change), a broker's ZooKeeper
    stripe, and its lines decimated on the cluster's span."""

    def __init__(self, lines: Sequence[str], span: Span, stripe: bool, fine: int) -> None:
        self.lane = StepsBuilder()
        self.stripe = StepsBuilder() if stripe else None
        self.lines = {name: StepsBuilder(span, fine) for name in lines}

    def view(self) -> KeyView:
        return KeyView(self.lane.result(), {name: b.result() for name, b in self.lines.items()},
                       None if self.stripe is None else self.stripe.result())


class ClusterBuilder:
    """One cluster's report data, fed its tables' columns a chunk at a time (each table's chunks in log order).
    ``span``: the cluster's (start, end); ``picture``: the PNG's time axis (its own span, or the fleet's)."""

    def __init__(self, name: str, columns: Collection[str], span: Span, picture: Span | None = None, *,
                 fine: int = FINE) -> None:
        self.name, self.span, self.picture, self.fine = name, span, picture or span, fine
        self.columns = frozenset(columns)
        charts = cluster_charts("offline_partitions" in self.columns)
        self.charts = {s.column: StepsBuilder(span, fine) for spec in charts for s in spec.series
                       if s.column in self.columns}
        self.lanes = {column: StepsBuilder() for column in LANES}
        self.envelopes = {column: EnvelopeBuilder(*self.picture, PICTURE_BUCKETS) for column in drawn(self.columns)}
        self.brokers: dict[int, KeyBuilder] = {}
        self.broker_now: dict[int, BrokerNow] = {}
        self.directories: dict[tuple[int, str], KeyBuilder] = {}
        self.directory_now: dict[tuple[int, str], DirectoryNow] = {}
        self.failures: dict[tuple[int, int, int, str], list[tuple[str, int, int]]] = {}
        self.events: list[dict[str, Any]] = []
        self.batches = 0
        self.last: Mapping[str, Any] | None = None

    @property
    def timeline_columns(self) -> list[str]:
        """The timeline columns drawn (lanes, charts), whose change points ``timeline`` takes."""
        return [*LANES, *(c for c in self.charts if c not in LANES)]

    def timeline(self, column: str, times: Sequence[int], values: Sequence[Any]) -> None:
        """A timeline column's values at ``times`` (the batches after those before; a chunk may leave out a
        batch whose value equals the one before it). A chart's column may come as ``array('q')`` of its change
        points (``StepsBuilder.extend_changes``)."""
        lane, chart, envelope = self.lanes.get(column), self.charts.get(column), self.envelopes.get(column)
        if lane is not None:
            lane.extend(times, values)
        if chart is not None:
            if isinstance(times, array) and isinstance(values, array):
                changes: tuple[Sequence[int], Sequence[Any]] = chart.extend_changes(times, values)
            else:
                changes = chart.extend(times, values)
            if envelope is not None:  # (a drawn column is a chart's)
                envelope.extend(*changes)

    def batches_read(self, count: int, last: Mapping[str, Any]) -> None:
        """``count`` timeline rows read, the last of them ``last`` (its columns by name)."""
        self.batches += count
        self.last = last

    def broker(self, broker: int, rows: Any) -> None:
        """One broker's broker_timeline rows (an Arrow record batch of ``BROKER_COLUMNS``), after those before:
        of each series only its change points become Python values (found in Arrow)."""
        key = self.brokers.get(broker)
        if key is None:
            key = self.brokers[broker] = KeyBuilder(BROKER_LINES, self.span, True, self.fine)
        times = rows.column("timestamp")
        at, (states, shutdowns) = _changes(times, rows.column("state"), rows.column("controlled_shutdown"))
        key.lane.extend(at, list(map(broker_code, states, shutdowns)))
        assert key.stripe is not None
        key.stripe.extend(*_change(times, rows.column("zk")))
        key.lines["leaders"].extend_changes(*_change_ints(times, rows.column("leaders")))
        key.lines["offline_replicas"].extend_changes(*_change_ints(times, rows.column("offline_replicas")))
        key.lines["homeless"].extend_changes(*_change_ints(times, _sum(rows.column("replicas_migrating"),
                                                                       rows.column("replicas_unassigned"))))
        last = _last_row(rows)
        self.broker_now[broker] = BrokerNow(
            broker, broker_code(last["state"], last["controlled_shutdown"]),
            *(last[c] for c in ("zk", "log_dirs", "replicas_assigned", "replicas_migrating", "replicas_unassigned",
                                "replicas_lost", "offline_replicas", "leaders", "timestamp")))

    def directory(self, where: tuple[int, str], rows: Any) -> None:
        """One (broker, directory)'s directory_timeline rows (an Arrow record batch of ``DIRECTORY_COLUMNS``),
        after those before: its lane's code changes only where ``online`` does or ``replicas`` comes to or leaves
        zero."""
        key = self.directories.get(where)
        if key is None:
            key = self.directories[where] = KeyBuilder(("replicas",), self.span, False, self.fine)
        times, replicas = rows.column("timestamp"), rows.column("replicas")
        at, (online, held) = _changes(times, rows.column("online"), _nonzero(replicas))
        key.lane.extend(at, list(map(directory_code, online, held)))
        key.lines["replicas"].extend_changes(*_change_ints(times, replicas))
        last = _last_row(rows)
        self.directory_now[where] = DirectoryNow(
            *where, directory_code(last["online"], last["replicas"]),
            *(last[c] for c in ("replicas", "leaders", "offline_replicas", "offline_partitions", "timestamp")))

    def failure(self, row: FailureRow) -> None:
        """A directory_failures row: a directory failure, and one partition it held (none: ``partition`` -1)."""
        partitions = self.failures.setdefault((row.offset, row.timestamp, row.broker, row.directory), [])
        if row.partition >= 0:
            partitions.append((row.topic, row.partition, row.leader))

    def finish(self) -> Cluster:
        if self.last is None:
            raise ValueError(f"cluster {self.name}: no timeline rows")
        lanes = {column: builder.result() for column, builder in self.lanes.items()}
        start, end = self.span
        keys = self.key_tables()
        return Cluster(
            self.name, start, end, self.batches, Latest.of_row(self.last, lanes["phase"].times[-1]), self.columns,
            lanes, {column: builder.result() for column, builder in self.charts.items()},
            {(column, *self.picture): b.result(end) for column, b in self.envelopes.items()},
            keys.brokers, keys.directories, keys.broker_views, keys.directory_views, keys.failures, keys.events)

    def key_tables(self) -> KeyTables:
        """What the per-key tables gave (``Cluster``'s fields of the same names)."""
        brokers, directories = sorted(self.brokers), sorted(self.directories)
        return KeyTables([self.broker_now[b] for b in brokers], [self.directory_now[d] for d in directories],
                         [self.brokers[b].view() for b in brokers], [self.directories[d].view() for d in directories],
                         [Failure(*key, partitions) for key, partitions in self.failures.items()], self.events)


@dataclass(frozen=True)
class KeyTables:
    """What a cluster's per-key tables, directory failures and events give (``ClusterBuilder.key_tables``; of the
    per-broker table, failures and events alone from ``read_keys``): ``Cluster``'s fields of the same names."""

    brokers: list[BrokerNow]
    directories: list[DirectoryNow]
    broker_views: list[KeyView]
    directory_views: list[KeyView]
    failures: list[Failure]
    events: list[dict[str, Any]]


# ---- from the Parquet tables ----------------------------------------------------------------------------
@dataclass(frozen=True)
class TableReading:
    """How a cluster's tables are read for its report: ``fine``, the buckets a line is decimated into
    (``series.m4``); ``batch_rows``, the rows of a record batch read at once."""

    fine: int = FINE
    batch_rows: int = 65_536


def read_cluster(out: Path, name: str, picture: Span | None = None, *, span: Span | None = None,
                 reading: TableReading = TableReading(), brokers: bool = True) -> Cluster | None:
    """One cluster's report from ``out``'s Parquet tables (``analysis.layout``), a record batch at a time: of each
    drawn timeline column only its change points become Python values (found in Arrow), and the per-broker and
    per-directory tables feed each key's builders. ``picture``: the PNG's time axis (default: the cluster's
    own); ``span``: the cluster's own (start, end) where the caller has read it (``data.read_span``; else read
    here); ``reading``: how the tables are read (``TableReading``); ``brokers``: read the per-broker table,
    directory failures and events too (else ``read_keys`` reads them). None when it has no timeline rows."""
    span = span or read_span(out, name)
    builder = None if span is None else _read_timeline(out, name, span, picture, reading)
    if builder is None:
        return None
    _read_directories(out, name, builder, reading.batch_rows)
    if brokers:
        _read_brokers(out, name, builder, reading.batch_rows)
    return builder.finish()


def read_keys(out: Path, name: str, span: Span, *, reading: TableReading = TableReading()) -> KeyTables:
    """The part of ``read_cluster`` that ``brokers=False`` leaves out, read on its own on the cluster's ``span``
    (so that two cores may share one cluster's report, each about half of it: the 5M-record log's per-broker
    table costs about what its timeline and per-directory table cost together): its per-broker table, directory
    failures and events (its ``directories`` and ``directory_views`` empty: ``read_cluster`` reads them)."""
    builder = ClusterBuilder(name, (), span, fine=reading.fine)
    _read_brokers(out, name, builder, reading.batch_rows)
    return builder.key_tables()


def _read_brokers(out: Path, name: str, builder: ClusterBuilder, batch_rows: int) -> None:
    for where, cols in _keyed(out / "broker_timeline", name, BROKER_COLUMNS, ("broker",), batch_rows):
        builder.broker(where[0], cols)
    _read_failures_and_events(out, name, builder)


def _read_directories(out: Path, name: str, builder: ClusterBuilder, batch_rows: int) -> None:
    for where, cols in _keyed(out / "directory_timeline", name, DIRECTORY_COLUMNS, ("broker", "directory"),
                              batch_rows):
        builder.directory((where[0], where[1]), cols)


def _read_timeline(out: Path, name: str, span: Span, picture: Span | None, reading: TableReading,
                   ) -> ClusterBuilder | None:
    """The timeline's drawn columns: of each, only its change points (found in Arrow) become Python values."""
    from metalog.analysis.outputs.layout import cluster_columns, iter_cluster_batches

    root = out / "timeline_batches"
    names = cluster_columns(root, name)
    builder: ClusterBuilder | None = None
    for batch in iter_cluster_batches(root, name, [c for c in names if c not in UNREAD],
                                      batch_rows=reading.batch_rows, dictionaries=True):
        if batch.num_rows == 0:
            continue
        if builder is None:
            builder = ClusterBuilder(name, names, span, picture, fine=reading.fine)
        times = batch.column("timestamp")
        for column in builder.timeline_columns:
            values = batch.column(column)
            if column in builder.charts:
                builder.timeline(column, *_change_ints(times, values))
            else:
                builder.timeline(column, *_change(times, values))
        builder.batches_read(batch.num_rows, batch.slice(batch.num_rows - 1, 1).to_pylist()[0])
    return builder


def _read_failures_and_events(out: Path, name: str, builder: ClusterBuilder) -> None:
    from metalog.analysis.outputs.layout import iter_cluster, iter_cluster_batches

    if (out / "directory_failures").is_dir():
        for batch in iter_cluster_batches(out / "directory_failures", name, FAILURE_COLUMNS):
            for row in map(FailureRow, *(column.to_pylist() for column in batch.columns)):
                builder.failure(row)
    if (out / "events").is_dir():
        builder.events = [e for rows in iter_cluster(out / "events", name) for e in rows]


def change_points(values: Any) -> Any:
    """A boolean Arrow array: the first value, and each that differs from the one before it (a null differs
    from a value, not from another null). Of a dictionary array, where its code does (a value may have two
    codes: a change point more, which a builder's ``extend`` drops)."""
    import pyarrow as pa

    if pa.types.is_dictionary(values.type):
        values = values.indices
    n = len(values)
    after, before = values.slice(1), values.slice(0, n - 1)
    differs = kernel("not_equal", after, before)
    if values.null_count:  # where either is null: whether just one is (no Python scalar here: see layout.arrow_array)
        differs = kernel("coalesce", differs, kernel("xor", kernel("is_null", after), kernel("is_null", before)))
    first = pa.Array.from_buffers(pa.bool_(), 1, [None, pa.py_buffer(b"\x01")])  # (pa.array: see layout.arrow_array)
    return pa.concat_arrays([first, differs])


def _keyed(root: Path, name: str, columns: Sequence[str], key: tuple[str, ...], batch_rows: int,
           ) -> Iterator[tuple[tuple[Any, ...], Any]]:
    """A per-key table's rows, a record batch at a time, split by ``key`` in Arrow: (key, its rows as an Arrow
    record batch)."""
    from metalog.analysis.outputs.layout import iter_cluster_batches

    if not root.is_dir():
        return
    for batch in iter_cluster_batches(root, name, columns, batch_rows, dictionaries=True):
        yield from split_by_key(batch, key)


def _change(times: Any, values: Any) -> tuple[list[int], list[Any]]:
    """The first of ``values`` and each that differs from the one before it, with their ``times``, as Python
    values (a builder's ``extend`` takes them as it takes every value: it keeps the changes)."""
    changed = change_points(values)
    return kept(times, changed).to_pylist(), kept(values, changed).to_pylist()


def _change_ints(times: Any, values: Any) -> tuple[Sequence[int], Sequence[Any]]:
    """``_change`` where ``values`` are int64s without a null: as ``array('q')``, no Python int per point (by
    ``change_ints``, compiled where built); else as ``_change`` gives them."""
    import pyarrow as pa

    if values.type != pa.int64() or values.null_count or times.type != pa.int64() or times.null_count:
        return _change(times, values)
    found: tuple[Sequence[int], Sequence[int]] = change_ints_twin()(times, values)
    return found


def change_ints(times: Any, values: Any) -> tuple[array[int], array[int]]:
    """The first of ``values`` and each that differs from the one before it, and their ``times`` (int64 Arrow
    arrays without nulls, of one length), as ``array('q')``s: ``change_points`` in Arrow. The pure twin of
    ``metalog.analysis.outputs.compiled.report_series.change_ints``, which compares the two buffers in C."""
    if len(times) != len(values):
        raise ValueError(f"{len(times)} times for {len(values)} values")
    if not len(values):
        return array("q"), array("q")
    changed = change_points(values)
    return int64s(kept(times, changed)), int64s(kept(values, changed))


# ``change_ints``' compiled twin (``.compiled`` None: the pure one runs), in the "analysis" core.
CHANGE_INTS = core.register_twin("analysis", "metalog.analysis.outputs.compiled.report_series", "change_ints",
                                 change_ints)


def change_ints_twin() -> Any:
    """The ``change_ints`` that runs: the compiled twin where it was built and ``METALOG_PURE`` is not set."""
    return change_ints if CHANGE_INTS.compiled is None else CHANGE_INTS.compiled


def _changes(times: Any, *columns: Any) -> tuple[list[int], list[list[Any]]]:
    """The rows where any of ``columns`` changes (and the first): their times, and each column's values there."""
    changed = change_points(columns[0])
    for column in columns[1:]:
        changed = kernel("or", changed, change_points(column))
    return kept(times, changed).to_pylist(), [kept(column, changed).to_pylist() for column in columns]


def _sum(a: Any, b: Any) -> Any:
    return kernel("add_checked", a, b)


def _nonzero(values: Any) -> Any:
    """Whether each int is not zero (a cast: no Python scalar in a compute call, see ``layout.arrow_array``)."""
    import pyarrow as pa

    return cast(values, pa.bool_())


def _last_row(rows: Any) -> dict[str, Any]:
    last: dict[str, Any] = rows.slice(rows.num_rows - 1, 1).to_pylist()[0]
    return last


def split_by_key(batch: Any, key: Sequence[str]) -> Iterator[tuple[tuple[Any, ...], Any]]:
    """``batch``'s rows by ``key``, each key's rows in their order in ``batch``, the keys in sorted order: the rows'
    order by ``key`` found once (stable sorts, the last column's first, so a key's rows keep their order), cut
    where a key column changes, and each key's rows taken by their run of that order (one key's copy held at a
    time, as a filter per key held it). A text's two codes in one batch may cut a key's rows in two, one after
    the other, as two batches cut them."""
    if not key:
        yield (), batch
        return
    if not batch.num_rows:
        return
    order: Any = kernel("array_sort_indices", batch.column(key[-1]))
    for name in reversed(key[:-1]):
        order = take(order, kernel("array_sort_indices", take(batch.column(name), order)))
    keys = [take(batch.column(name), order) for name in key]
    cuts = change_points(keys[0])
    for column in keys[1:]:
        cuts = kernel("or", cuts, change_points(column))
    starts = kernel("indices_nonzero", cuts)
    values = zip(*(decoded(take(column, starts)).to_pylist() for column in keys), strict=True)
    bounds = [*starts.to_pylist(), batch.num_rows]
    for n, where in enumerate(values):
        yield where, take(batch, order.slice(bounds[n], bounds[n + 1] - bounds[n]))
