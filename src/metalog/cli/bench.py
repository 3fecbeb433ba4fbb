"""``metalog bench``: codec, log and replay throughput on this machine, in one table.

The figures come from the same code as the scripts in ``benchmarks/`` (``metalog.bench``); peers
(kio, kafka-python) are compared when the ``bench`` extra is installed.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from metalog.errors import MetalogError

EXAMPLES = """\
examples:
  metalog bench                        # codec, log and replay, quick (about half a minute)
  metalog bench codec --full           # the issue-sized runs: steadier figures, takes minutes
  metalog bench log --records 200000
  metalog bench codec --message PartitionRecord --version 1 --json my-record.json
      (my-record.json: Kafka's JSON form of the message, {"partitionId": 0, "topicId": ...};
       `metalog log dump --json` prints records in that form under "data")
"""

EXTRA_HINT = "pip install 'metalog[bench]'"


@dataclass
class Row:
    bench: str
    what: str
    rate: float  # operations (or records) per second
    unit: str
    mb_s: float | None
    vs: dict[str, float | None]  # peer -> metalog's rate / the peer's


@dataclass
class Sizes:
    min_time: float
    repeat: int
    records: int


def register(sub: Any) -> None:
    from metalog.cli import options

    p = sub.add_parser("bench", help="measure codec, log and replay throughput on this machine",
                       description="Times metalog's codec (encode/decode of four messages, or your own), its log "
                                   "reader and writer, and replay, and prints one table: rates, MB/s and metalog's "
                                   "ratio to kio and kafka-python measured in the same run (when the bench extra "
                                   f"is installed: {EXTRA_HINT}). Rates are best-of-N of this process's CPU time.",
                       epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("what", nargs="?", choices=["codec", "log", "replay", "all"], default="all",
                   help="what to time (default all)")
    p.add_argument("--full", action="store_true", help="issue-sized runs (1M-record logs, longer timings)")
    p.add_argument("--records", type=options.positive_int64("a number of records"), metavar="N",
                   help="records in the log and replay benchmarks")
    p.add_argument("--repeat", type=options.positive_int32("a number of repeats"), metavar="N",
                   help="timed repeats per figure (the best is kept)")
    p.add_argument("--min-time", type=options.seconds("a repeat's time", 3600), metavar="S",
                   help="seconds per timed codec repeat")
    p.add_argument("--message", metavar="NAME", help="time this message instead of the built-in four")
    p.add_argument("--version", type=options.API_VERSION, metavar="V", help="the message's version (with --message)")
    p.add_argument("--json", metavar="FILE", help="the message's data in Kafka's JSON form (with --message)")
    p.set_defaults(func=_bench)


def _bench(args: argparse.Namespace) -> int:
    custom = _custom_case(args)
    sizes = Sizes(0.2, 5, 1_000_000) if args.full else Sizes(0.02, 3, 50_000)
    sizes.min_time = args.min_time or sizes.min_time
    sizes.repeat = args.repeat or sizes.repeat
    sizes.records = args.records or sizes.records
    parts = ["codec", "log", "replay"] if args.what == "all" else [args.what]
    if custom is not None:
        parts = ["codec"]
    notes: list[str] = []
    rows: list[Row] = []
    runners: dict[str, Callable[[Sizes, list[str]], list[Row]]] = {
        "codec": lambda s, n: _codec(s, n, custom), "log": _log, "replay": _replay}
    from metalog.codec import core

    cores = [f"codec: {core.status()}"] * any(p in ("codec", "replay") for p in parts) + \
        [f"log: {core.log_status()}"] * any(p in ("log", "replay") for p in parts)
    print(f"metalog bench ({'full' if args.full else 'quick'}; Python {sys.version.split()[0]}; best of "
          f"{sizes.repeat}, CPU time)", *cores, sep="\n", flush=True)
    for part in parts:
        rows += runners[part](sizes, notes)
    print(render(rows, parts))
    for note in dict.fromkeys(notes):
        print(f"note: {note}")
    return 0


PEERS = ["kio", "aiokafka", "kafka-python"]  # kio for the codec, aiokafka for the log, kafka-python for both
PEERS_OF = {"codec": ("kio", "kafka-python"), "log": ("aiokafka", "kafka-python"), "replay": ()}


def render(rows: list[Row], parts: list[str]) -> str:
    """One table; a column per peer of the parts run (a peer that none of them is compared with has none)."""
    peers = [p for p in PEERS if any(p in PEERS_OF[part] for part in parts)]
    head = ["benchmark", "what", "rate", "MB/s"] + [f"metalog/{p}" for p in peers]
    table = [head] + [[r.bench, r.what, f"{r.rate:,.0f} {r.unit}", "-" if r.mb_s is None else f"{r.mb_s:,.1f}"]
                      + [_ratio(r.vs.get(p)) for p in peers] for r in rows]
    widths = [max(len(line[i]) for line in table) for i in range(len(head))]
    right = set(range(2, len(head)))
    lines = ["  ".join(c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(line, widths,
                                                                                          strict=True)))
             for line in table]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(line.rstrip() for line in lines)


def _ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x"


# ---- codec ----------------------------------------------------------------------------------------
def _custom_case(args: argparse.Namespace) -> Any:
    """The user's message as a bench Case, or None; the checks happen before anything is timed."""
    given = [args.message is not None, args.version is not None, args.json is not None]
    if not any(given):
        return None
    if not all(given):
        raise MetalogError("--message, --version and --json go together (see the examples in --help)")
    from metalog.bench.codec import Case
    from metalog.codec import message_class
    from metalog.codec.definitions import MESSAGES

    try:
        cls = message_class(args.message)
    except KeyError as e:
        raise MetalogError(str(e.args[0])) from None
    valid = MESSAGES[args.message].valid_versions
    if args.version not in valid:
        raise MetalogError(f"{args.message} has no version {args.version} (valid versions: {valid})")
    from metalog.codec.jsonform import loads

    try:
        data = loads(Path(args.json).read_text())
    except ValueError as e:
        raise MetalogError(f"{args.json} is not JSON: {e}") from None
    if isinstance(data, dict) and isinstance(data.get("data"), dict) and ("type" in data or "name" in data):
        data = data["data"]  # a `log dump --json` payload or a `codec encode` line
    obj = cls.from_json(data, args.version)
    return Case(f"{args.message} v{args.version}", args.message, args.version, lambda: obj)


def _codec(sizes: Sizes, notes: list[str], custom: Any) -> list[Row]:
    from metalog.bench.codec import CASES, metalog_ops, pure_decode_op
    from metalog.bench.timing import Timer
    from metalog.errors import NotComparable

    timer = Timer(min_time=sizes.min_time, repeat=sizes.repeat)
    peers = _codec_peers(notes, custom is not None)
    rows = []
    for case in [custom] if custom is not None else CASES:
        obj = case.build()
        data = obj.encode(case.version)
        ops = {"metalog": metalog_ops(case, obj, data)}
        for peer, make in peers.items():
            try:
                ops[peer] = make(case, obj, data, timer)
            except NotComparable as e:
                notes.append(f"{peer} not compared on {case.label}: {e}")
        pure = pure_decode_op(case, obj, data)  # the pure Python core beside the compiled one, in the same run
        label = case.label.split(") ", 1)[-1]
        for i, op in enumerate(("encode", "decode")):
            fns = {p: pair[i] for p, pair in ops.items()}
            if op == "decode" and pure is not None:
                fns["pure"] = pure
            rates = timer.rates(fns)
            for who, what in (("metalog", ""), ("pure", ", pure Python core")):
                if who in rates:
                    ours = rates[who]
                    vs = {p: ours / rates[p] if p in rates else None for p in peers}
                    rows.append(Row("codec", f"{label} {op}{what} ({len(data):,} B)", ours, "msg/s",
                                    ours * len(data) / 1e6, vs))
    return rows


def _codec_peers(notes: list[str], custom: bool) -> dict[str, Callable[..., Any]]:
    peers: dict[str, Callable[..., Any]] = {}
    if custom:
        notes.append("kio is compared on the built-in messages only")
    else:
        try:
            from metalog.bench.kio_peer import kio_ops
        except ImportError:
            notes.append(f"kio not installed, not compared ({EXTRA_HINT})")
        else:
            peers["kio"] = lambda case, obj, data, timer: kio_ops(case, obj, data)
    try:
        from metalog.bench.kafka_python_peer import KafkaPythonClasses, kafka_python_ops
    except ImportError:
        notes.append(f"kafka-python not installed, not compared ({EXTRA_HINT})")
    else:
        classes = KafkaPythonClasses()
        peers["kafka-python"] = lambda case, obj, data, timer: kafka_python_ops(classes, case, obj, data, timer.rate)
    return peers


# ---- log ------------------------------------------------------------------------------------------
def _log(sizes: Sizes, notes: list[str]) -> list[Row]:
    from metalog.bench.log import expected_check, make_log
    from metalog.bench.timing import best_cpu
    from metalog.log import Durability

    n = sizes.records
    tmp = Path(tempfile.mkdtemp(prefix="metalog-bench-"))
    try:
        append = make_log(tmp / "log", n, Durability.NONE)
        segments = sorted((tmp / "log" / "__cluster_metadata-0").glob("*.log"))
        size = sum(p.stat().st_size for p in segments)
        data = b"".join(p.read_bytes() for p in segments)
        readers = {**_metalog_log_readers(tmp / "log", data), **_peer_log_readers(data, notes)}
        seconds: dict[str, float] = {}
        for _ in range(sizes.repeat):  # rounds interleave the readers, so load from elsewhere hits them alike
            for name, fn in readers.items():
                t, (count, check) = best_cpu(fn, 1)
                if count != n or check not in (expected_check(n), -1):
                    raise MetalogError(f"bench: {name} read {count} records (checksum {check}), expected {n}")
                seconds[name] = min(t, seconds.get(name, t))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    rows = []
    # the peers read bytes in memory; metalog's records and scan stream from the files (mapping their pages costs
    # about half a millisecond per 13 MB), its memory scan reads the same bytes as the peers
    for kind, what in (("records", "read records (CRC checked)"), ("scan", "scan batches (CRC checked)"),
                       ("memory", "scan batches in memory (CRC checked)")):
        for who, label in (("metalog", ""), ("pure", ", pure Python log core")):
            if f"{who} {kind}" in seconds:
                t = seconds[f"{who} {kind}"]
                vs = {p: seconds[f"{p} {kind}"] / t if f"{p} {kind}" in seconds else None for p in PEERS}
                rows.append(Row("log", f"{what}{label}, {n:,} records", n / t, "rec/s", size / t / 1e6, vs))
    rows.append(Row("log", "append, batches of 1000, no fsync", n / append, "rec/s", size / append / 1e6, {}))
    return rows


LogReader = Callable[[], tuple[int, int]]  # () -> (records read, checksum)


def _metalog_log_readers(logdir: Path, data: bytes) -> dict[str, LogReader]:
    """metalog's readers of the log (records, scan, scan in memory), and the pure log core's beside them where the
    compiled one runs, timed in the same run."""
    from metalog.bench.cores import compiled_log_core, pure_log_core
    from metalog.bench.log import read_metalog, scan_in_memory, scan_metalog

    def pure_twin(fn: LogReader) -> LogReader:
        def run() -> tuple[int, int]:
            with pure_log_core():
                return fn()
        return run

    readers: dict[str, LogReader] = {
        "metalog records": lambda: read_metalog(logdir), "metalog scan": lambda: scan_metalog(logdir),
        "metalog memory": lambda: scan_in_memory(data)}
    if compiled_log_core():
        for kind in ("records", "scan", "memory"):
            readers[f"pure {kind}"] = pure_twin(readers[f"metalog {kind}"])
    return readers


def _peer_log_readers(data: bytes, notes: list[str]) -> dict[str, LogReader]:
    """The peers' readers of the same bytes (in memory), each that is installed; a note for each that is not."""
    from metalog.bench.log import peer_reader, peer_scan

    readers: dict[str, LogReader] = {}
    for peer, module in (("kafka-python", "kafka.record.memory_records"),
                         ("aiokafka", "aiokafka.record.memory_records")):
        try:
            memory_records = __import__(module, fromlist=["MemoryRecords"]).MemoryRecords
        except ImportError:
            notes.append(f"{peer} not installed, the log readers are not compared with it ({EXTRA_HINT})")
            continue
        readers[f"{peer} records"] = partial(peer_reader(memory_records), data)
        readers[f"{peer} scan"] = readers[f"{peer} memory"] = partial(peer_scan(memory_records), data)
    return readers


# ---- replay ---------------------------------------------------------------------------------------
def _replay(sizes: Sizes, notes: list[str]) -> list[Row]:
    from metalog.bench.cores import compiled_log_core, pure_log_core
    from metalog.bench.replay import build_log, timed
    from metalog.replay.history import MetadataHistory

    tmp = Path(tempfile.mkdtemp(prefix="metalog-bench-"))
    seconds: dict[str, float] = {}
    try:
        build_log(tmp, sizes.records, seed=1)
        with MetadataHistory(tmp) as h:
            size = h.log.size_in_bytes

            def pure() -> Any:
                with pure_log_core():
                    return h.state_at(use_snapshots=False)

            runs = {"metalog": lambda: h.state_at(use_snapshots=False)}
            if compiled_log_core():  # the pure log core beside the compiled one, the rounds alternating
                runs["pure"] = pure
            for _ in range(sizes.repeat):
                for who, fn in runs.items():
                    t, state = timed(fn, 1)
                    seconds[who] = min(t, seconds.get(who, t))
            replayed = state.records_replayed
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return [Row("replay", f"from offset 0{label}, {replayed:,} records", replayed / seconds[who], "rec/s",
                size / seconds[who] / 1e6, {})
            for who, label in (("metalog", ""), ("pure", ", pure Python log core")) if who in seconds]
