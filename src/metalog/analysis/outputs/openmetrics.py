"""``OUT/controller_metrics.om``: Kafka's controller metrics over time as OpenMetrics text, for the dashboards
operators already have (``promtool tsdb create-blocks-from openmetrics`` backfills a Prometheus with it).

The metric names are the ones the common Prometheus JMX-exporter rules give Kafka's controller MBeans
(``kafka.controller:type=KafkaController,name=ActiveBrokerCount`` -> ``kafka_controller_kafkacontroller_
activebrokercount``), each with a ``cluster`` label (the log directory's name); ZkMigrationState is Kafka's
numeric id (NONE 0, MIGRATION 1, PRE_MIGRATION 2, POST_MIGRATION 3, ZK 4). Kafka has no metric for replicas by
directory state or for offline replicas: those are metalog's own, under ``metalog_``.

A series' value at a batch time is its value after the last batch of that millisecond (what a scrape at that
time would have seen). Its samples (``outputs.sampling`` says exactly which) are its first and last batch
times, each batch time where its value changes, and otherwise at least one a minute of log time while the log
has batches: read as a step function, as Prometheus reads it, the series has its value at every batch time, and
it never goes stale. ``every_batch`` (``--metrics-every-batch``) gives every batch time a sample of every series
instead. OpenMetrics wants a family's samples together and one ``# EOF``: the file is written family by family,
each family cluster by cluster (each series whole, in time order). The Spark engine's executors write each
(family, cluster) block; the driver concatenates the blocks' files in that order (a file copy, no rows).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import islice
from operator import gt, itemgetter
from pathlib import Path
from typing import Any, BinaryIO, TextIO

from metalog.analysis.domain.columns import Coded, ColumnData
from metalog.analysis.outputs.kernels import take
from metalog.analysis.outputs.sampling import Sampler, Samples, int64_array
from metalog.codec import core
from metalog.state.enums import ZK_MIGRATION_VALUES

FILE = "controller_metrics.om"
_KAFKA = "kafka_controller_kafkacontroller_"


@dataclass(frozen=True)
class Family:
    name: str
    help: str
    column: str  # the timeline column it reads (zk_migration_state: its numeric id)
    label: tuple[str, str] | None = None  # an extra label (name, value) beside cluster


FAMILIES: tuple[Family, ...] = (
    Family(_KAFKA + "activebrokercount", "ActiveBrokerCount: registered brokers not fenced (metalog: from the "
           "metadata log)", "brokers_unfenced"),
    Family(_KAFKA + "fencedbrokercount", "FencedBrokerCount: registered brokers that are fenced", "brokers_fenced"),
    Family(_KAFKA + "controlledshutdownbrokercount", "ControlledShutdownBrokerCount: registered brokers in "
           "controlled shutdown", "brokers_controlled_shutdown"),
    Family(_KAFKA + "migratingzkbrokercount", "MigratingZkBrokerCount: registered ZooKeeper brokers being "
           "migrated", "brokers_zk"),
    Family(_KAFKA + "globaltopiccount", "GlobalTopicCount: topics", "topics"),
    Family(_KAFKA + "globalpartitioncount", "GlobalPartitionCount: partitions", "partitions"),
    Family(_KAFKA + "offlinepartitionscount", "OfflinePartitionsCount: partitions without a leader",
           "offline_partitions"),
    Family(_KAFKA + "preferredreplicaimbalancecount", "PreferredReplicaImbalanceCount: partitions not led by "
           "their preferred replica", "preferred_replica_imbalance"),
    Family(_KAFKA + "zkmigrationstate", "ZkMigrationState: NONE 0, MIGRATION 1, PRE_MIGRATION 2, "
           "POST_MIGRATION 3, ZK 4", "zk_migration_state"),
    Family("metalog_replicas", "metalog's own: replicas by the state of their log directory (KIP-858)",
           "replicas_migrating", ("directory_state", "migrating")),
    Family("metalog_replicas", "", "replicas_unassigned", ("directory_state", "unassigned")),
    Family("metalog_replicas", "", "replicas_lost", ("directory_state", "lost")),
    Family("metalog_replicas", "", "replicas_assigned", ("directory_state", "assigned")),
    Family("metalog_offline_replicas", "metalog's own: replicas whose broker is fenced or missing or whose "
           "directory is offline", "offline_replicas"),
)
COLUMNS = tuple(dict.fromkeys(f.column for f in FAMILIES))


def escape(label: str) -> str:
    """An OpenMetrics label value: backslash, double quote and newline escaped."""
    return label.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def seconds(ms: int) -> str:
    """Epoch milliseconds as OpenMetrics' timestamp (seconds, exactly: no float rounding)."""
    sign, ms = ("-", -ms) if ms < 0 else ("", ms)
    return f"{sign}{ms // 1000}.{ms % 1000:03d}"


def series(family: Family, cluster: str) -> str:
    labels = f'cluster="{escape(cluster)}"'
    if family.label is not None:
        labels += f',{family.label[0]}="{escape(family.label[1])}"'
    return f"{family.name}{{{labels}}}"


def header(family: Family) -> str:
    """The family's HELP and TYPE lines, before its first series ("" for a later series of the same family)."""
    if not family.help:
        return ""
    return f"# HELP {family.name} {family.help}\n# TYPE {family.name} gauge\n"


def family_values(family: Family, column: list[Any]) -> list[int]:
    """The family's sample values from its column of the timeline: the column itself (integers), or Kafka's
    numeric ids of zk_migration_state's names (-1 for a name Kafka has no id for)."""
    if family.column == "zk_migration_state":
        ids = ZK_MIGRATION_VALUES
        return [ids.get(name, -1) for name in column]
    return column


def family_column(family: Family, data: ColumnData) -> Any:
    """``family_values`` of a chunk's column, as an int64 Arrow array (``sampling.int64_array``): an int column
    without a copy, a coded one through its vocabulary's ids."""
    if isinstance(data, Coded):
        return take(int64_array(family_values(family, list(data.names))), int64_array(data.codes))
    return int64_array(family_values(family, data) if isinstance(data, list) else data)


class LineEnds:
    """The ends of sample lines (a space, the time in seconds, a newline) for a list of sample times, made once
    for all the series that share that list (with every_batch, all of a cluster's series share theirs)."""

    def __init__(self) -> None:
        self._made: dict[int, tuple[list[int], list[str]]] = {}  # by the list's id (the list kept: ids stay unique)

    def __call__(self, times: list[int]) -> list[str]:
        made = self._made.get(id(times))
        if made is None:
            made = self._made[id(times)] = (times, line_ends(times))
        return made[1]


def line_ends(times: list[int]) -> list[str]:
    """`` {seconds(t)}\n`` of each of ``times`` (in one comprehension where no time is negative: a call per
    sample costs more)."""
    if times and min(times) < 0:
        return [f" {seconds(t)}\n" for t in times]
    return [f" {t // 1000}.{t % 1000:03d}\n" for t in times]


def write_samples(out: TextIO, family: Family, cluster: str, samples: Samples, ends: LineEnds) -> None:
    """The series' sample lines, written to ``out`` (UTF-8, ``newline="\\n"``) a few thousand at a time (the
    text layer's cost is per write; one string of a million lines costs its memory): by ``sample_lines``' compiled
    twin where it runs (``ends`` unused), else with ``ends``' line ends."""
    prefix = series(family, cluster) + " "
    values, times = samples.values, samples.times
    compiled = SAMPLE_LINES.compiled
    stamps = ends(times) if compiled is None else None
    for lo in range(0, len(values), _LINES):
        some = values[lo:lo + _LINES]
        if stamps is None:
            try:
                out.write(str(compiled(prefix, some, times[lo:lo + _LINES])))
                continue
            except OverflowError:  # (an int beyond int64: the pure twin's lines from here on)
                stamps = ends(times)
        out.write(_lines(prefix, some, stamps[lo:lo + _LINES]))


def sample_lines(prefix: str, values: Sequence[int], times: Sequence[int]) -> str:
    """``prefix`` (a series' name, labels and a space), then each sample's value, a space, its time in seconds
    (``seconds``) and a newline: a series' sample lines. The pure twin of
    ``metalog.analysis.outputs.compiled.om_text.sample_lines``."""
    return _lines(prefix, values, line_ends(list(times)))


def _lines(prefix: str, values: Sequence[int], ends: Sequence[str]) -> str:
    return "".join([f"{prefix}{v}{end}" for v, end in zip(values, ends, strict=True)])


# the sample lines' compiled twin (None: the pure ``sample_lines`` runs), in the "analysis" core
SAMPLE_LINES = core.register_twin("analysis", "metalog.analysis.outputs.compiled.om_text", "sample_lines", sample_lines)


_LINES = 4096


def cluster_samples(rows: Sequence[dict[str, Any]], *, every_batch: bool = False) -> list[list[Samples]]:
    """A cluster's samples from its timeline rows in log order: for each of ``Sampler``'s calls, a ``Samples``
    per family (in FAMILIES' order)."""
    times = list(map(itemgetter("timestamp"), rows))
    if any(map(gt, times, islice(times, 1, None))):  # a batch time stepped back: time order, then log order
        rows = [rows[i] for i in sorted(range(len(rows)), key=times.__getitem__)]
        times = list(map(itemgetter("timestamp"), rows))
    sampler = Sampler(len(FAMILIES), every_batch=every_batch)
    added = sampler.add(times, [family_values(f, list(map(itemgetter(f.column), rows))) for f in FAMILIES])
    return [added, sampler.close()]


def concatenate(path: Path, blocks: Callable[[int, str], list[Path]], clusters: Sequence[str]) -> Path:
    """The file from blocks already written: ``blocks(family index, cluster)``, the files of that series in
    order (the Spark engine's executors wrote them)."""
    with open(path, "wb") as out:
        for i, family in enumerate(FAMILIES):
            out.write(header(family).encode())
            for cluster in clusters:
                for block in blocks(i, cluster):
                    _append(block, out)
        out.write(b"# EOF\n")
    return path


def _append(block: Path, out: BinaryIO) -> None:
    """The block's bytes at the end of ``out``, copied by the kernel where it can (with every batch time a
    sample, a 1M-record cluster's series are about 1 GB), else, or for what is left, through a buffer."""
    out.flush()
    copy = getattr(os, "copy_file_range", None)  # Linux
    with open(block, "rb") as f:
        size, done = os.fstat(f.fileno()).st_size, 0
        try:
            while copy is not None and done < size:
                n = copy(f.fileno(), out.fileno(), size - done)
                if n == 0:
                    break
                done += n
        except OSError:  # not between these filesystems
            pass
        out.seek(0, os.SEEK_END)  # past what the kernel wrote
        f.seek(done)
        shutil.copyfileobj(f, out)
