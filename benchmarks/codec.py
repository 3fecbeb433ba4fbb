"""Codec throughput: metalog's generated fast path against kio, kafka-python and metalog's construct reference.

    python benchmarks/codec.py            # full run (about a minute on 2 cores)
    python benchmarks/codec.py --quick    # a few seconds, for a smoke test
    python benchmarks/codec.py --profile  # where metalog's fast path spends its time (cProfile)

Every implementation encodes the same values and must produce metalog's bytes, and decodes those
bytes back to its own equal object, before anything is timed. Rates are best-of-N (timeit style) of
this process's CPU time, the implementations' repeats alternating.
Peers: kio 0.6.2 (its Rust ``entity_reader`` and Python ``entity_writer``; the two metadata records,
which kio lacks, are declared as kio entity dataclasses the way kio's generated schema classes are),
kafka-python (its generic JSON-schema message classes with compiled codecs, given a Kafka-style spec
written from our definitions, the way kafka-python declares its own classes; for the two records, which
are data rather than RPCs, the faster of its ApiData and ApiMessage paths is used).
"""

# No ``from __future__ import annotations``: kio reads the entity dataclasses' field types at runtime.
import argparse
import dataclasses
import datetime
import io
import json
import sys
import tempfile
import time
import timeit
import types
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from kafka.protocol.api_data import ApiData
from kafka.protocol.api_message import ApiMessage
from kio.schema.assign_replicas_to_dirs.v0.request import AssignReplicasToDirsRequest as KioAssignReplicasToDirs
from kio.schema.errors import ErrorCode
from kio.schema.types import BrokerId
from kio.schema.update_metadata.v8.request import UpdateMetadataRequest as KioUpdateMetadata
from kio.serial import entity_reader, entity_writer
from kio.serial._introspect import EntityField, EntityTupleField, PrimitiveTupleField, classify_field
from kio.static.constants import EntityType
from kio.static.primitive import i8, i16, i32

from metalog.codec import Uuid, message_class
from metalog.codec.definitions import MESSAGES
from metalog.codec.schema import NULL, F, Message, snake

Op = Callable[[], Any]


# ---- the four inputs --------------------------------------------------------------------------
def uid(n: int) -> Uuid:
    return Uuid(uuid.UUID(int=(n * 0x9E3779B97F4A7C15 + 1) % (1 << 128)).bytes)


def partition_record() -> Any:
    return message_class("PartitionRecord")(
        partition_id=7, topic_id=uid(1), replicas=[1, 2, 3], isr=[1, 2, 3], leader=1, leader_epoch=5,
        partition_epoch=9, directories=[uid(11), uid(12), uid(13)])


def partition_change_record() -> Any:
    return message_class("PartitionChangeRecord")(partition_id=7, topic_id=uid(1), isr=[1, 3], leader=3)


def update_metadata_request() -> Any:
    cls = message_class("UpdateMetadataRequest")
    m = sys.modules[cls.__module__]
    brokers = [m.UpdateMetadataBroker(
        id=b, endpoints=[m.UpdateMetadataEndpoint(port=9092, host=f"broker-{b}.kafka.internal", listener="PLAINTEXT",
                                                  security_protocol=0)],
        rack=f"rack-{b % 3}" if b % 2 else None) for b in range(50)]
    topics = [m.UpdateMetadataTopicState(topic_name=f"topic-{t}", topic_id=uid(100 + t), partition_states=[
        m.UpdateMetadataPartitionState(partition_index=p, controller_epoch=3, leader=(t + p) % 50, leader_epoch=4,
                                       isr=[(t + p + i) % 50 for i in range(3)], zk_version=0,
                                       replicas=[(t + p + i) % 50 for i in range(3)])
        for p in range(10)]) for t in range(20)]
    return cls(controller_id=1000, is_k_raft_controller=True, controller_epoch=3, broker_epoch=42,
               topic_states=topics, live_brokers=brokers)


def assign_replicas_to_dirs_request() -> Any:
    cls = message_class("AssignReplicasToDirsRequest")
    m = sys.modules[cls.__module__]
    dirs = [m.DirectoryData(id=uid(200 + d), topics=[
        m.TopicData(topic_id=uid(100 + t), partitions=[m.PartitionData(partition_index=p) for p in range(10)])
        for t in range(20)]) for d in range(10)]
    return cls(broker_id=1, broker_epoch=42, directories=dirs)


@dataclass
class Case:
    label: str
    name: str
    version: int
    build: Callable[[], Any]


CASES = [
    Case("(a) PartitionRecord v1", "PartitionRecord", 1, partition_record),
    Case("(b) PartitionChangeRecord v1", "PartitionChangeRecord", 1, partition_change_record),
    Case("(c) UpdateMetadataRequest v8", "UpdateMetadataRequest", 8, update_metadata_request),
    Case("(d) AssignReplicasToDirsRequest v0", "AssignReplicasToDirsRequest", 0, assign_replicas_to_dirs_request),
]


# ---- kio --------------------------------------------------------------------------------------
# The two metadata records as kio entities, declared the way kio's generated schema classes are.
@dataclass(frozen=True, slots=True, kw_only=True)
class KioPartitionRecord:
    __type__: ClassVar = EntityType.data
    __version__: ClassVar[i16] = i16(1)
    __flexible__: ClassVar[bool] = True
    partition_id: i32 = field(metadata={"kafka_type": "int32"}, default=i32(-1))
    topic_id: uuid.UUID | None = field(metadata={"kafka_type": "uuid"})
    replicas: tuple[BrokerId, ...] = field(metadata={"kafka_type": "int32"}, default=())
    isr: tuple[BrokerId, ...] = field(metadata={"kafka_type": "int32"}, default=())
    removing_replicas: tuple[BrokerId, ...] = field(metadata={"kafka_type": "int32"}, default=())
    adding_replicas: tuple[BrokerId, ...] = field(metadata={"kafka_type": "int32"}, default=())
    leader: BrokerId = field(metadata={"kafka_type": "int32"}, default=BrokerId(-1))
    leader_recovery_state: i8 = field(metadata={"kafka_type": "int8", "tag": 0}, default=i8(0))
    leader_epoch: i32 = field(metadata={"kafka_type": "int32"}, default=i32(-1))
    partition_epoch: i32 = field(metadata={"kafka_type": "int32"}, default=i32(-1))
    directories: tuple[uuid.UUID, ...] = field(metadata={"kafka_type": "uuid"}, default=())


@dataclass(frozen=True, slots=True, kw_only=True)
class KioPartitionChangeRecord:
    __type__: ClassVar = EntityType.data
    __version__: ClassVar[i16] = i16(1)
    __flexible__: ClassVar[bool] = True
    partition_id: i32 = field(metadata={"kafka_type": "int32"}, default=i32(-1))
    topic_id: uuid.UUID | None = field(metadata={"kafka_type": "uuid"})
    isr: tuple[BrokerId, ...] | None = field(metadata={"kafka_type": "int32", "tag": 0}, default=None)
    leader: BrokerId = field(metadata={"kafka_type": "int32", "tag": 1}, default=BrokerId(-2))
    replicas: tuple[BrokerId, ...] | None = field(metadata={"kafka_type": "int32", "tag": 2}, default=None)
    removing_replicas: tuple[BrokerId, ...] | None = field(metadata={"kafka_type": "int32", "tag": 3}, default=None)
    adding_replicas: tuple[BrokerId, ...] | None = field(metadata={"kafka_type": "int32", "tag": 4}, default=None)
    leader_recovery_state: i8 = field(metadata={"kafka_type": "int8", "tag": 5}, default=i8(-1))
    directories: tuple[uuid.UUID, ...] | None = field(metadata={"kafka_type": "uuid", "tag": 8}, default=None)


KIO_CLASSES = {"PartitionRecord": KioPartitionRecord, "PartitionChangeRecord": KioPartitionChangeRecord,
               "UpdateMetadataRequest": KioUpdateMetadata, "AssignReplicasToDirsRequest": KioAssignReplicasToDirs}
KIO_RENAMES = {"throttle_time": "throttle_time_ms"}  # beyond a trailing underscore (id_, type_)


def kio_scalar(kafka_type: str, value: Any) -> Any:
    if kafka_type == "uuid":  # kio, like Kafka's JSON form, holds the zero uuid as None
        return None if value == Uuid() else uuid.UUID(bytes=bytes(value))
    if kafka_type == "error_code":
        return ErrorCode(value)
    if kafka_type == "timedelta_i32":
        return datetime.timedelta(milliseconds=value)
    return value


def to_kio(obj: Any, cls: type) -> Any:
    kwargs = {}
    for f in dataclasses.fields(cls):
        value = getattr(obj, KIO_RENAMES.get(f.name, f.name.rstrip("_")))
        kind = classify_field(f)
        if value is None:
            pass
        elif isinstance(kind, EntityTupleField):
            value = tuple(to_kio(v, kind.type_) for v in value)
        elif isinstance(kind, EntityField):
            value = to_kio(value, kind.type_)
        elif isinstance(kind, PrimitiveTupleField):
            value = tuple(kio_scalar(f.metadata["kafka_type"], v) for v in value)
        else:
            value = kio_scalar(f.metadata["kafka_type"], value)
        kwargs[f.name] = value
    return cls(**kwargs)


def kio_ops(case: Case, obj: Any, data: bytes) -> tuple[Op, Op]:
    cls = KIO_CLASSES[case.name]
    entity = to_kio(obj, cls)
    write, read = entity_writer(cls), entity_reader(cls)

    def encode() -> bytes:
        buf = io.BytesIO()
        write(buf, entity)
        return buf.getvalue()

    check(encode() == data, "kio wrote different bytes")
    check(read(data, 0) == (entity, len(data)), "kio read different values")
    return encode, lambda: read(data, 0)


# ---- kafka-python -----------------------------------------------------------------------------
def kafka_spec(msg: Message, name: str, kind: str) -> dict[str, Any]:
    """A Kafka-style JSON message spec for kafka-python, written from our definition."""

    def spec(f: F) -> dict[str, Any]:
        j: dict[str, Any] = {"name": f.name, "type": f.type, "versions": f.versions}
        if f.nullable:
            j["nullableVersions"] = f.nullable
        if f.tagged:
            j.update(taggedVersions=f.tagged, tag=f.tag)
        if f.flexible:
            j["flexibleVersions"] = f.flexible
        if f.default is NULL:
            j["default"] = "null"
        elif f.default is not None:
            j["default"] = str(f.default).lower()
        if f.is_struct:
            j["fields"] = [spec(x) for x in msg.structs[f.element].fields]
        return j

    return {"name": name, "type": kind, "apiKey": msg.api_key, "validVersions": msg.valid,
            "flexibleVersions": msg.flexible, "fields": [spec(f) for f in msg.fields]}


class KafkaPythonClasses:
    """kafka-python message classes loaded from specs in a throwaway package (``load_json=``)."""

    PACKAGE = "metalog_bench_kafka_specs"

    def __init__(self) -> None:
        self.tmp = tempfile.TemporaryDirectory()
        self.pkg = Path(self.tmp.name) / self.PACKAGE
        self.pkg.mkdir()
        (self.pkg / "__init__.py").write_text("")
        sys.path.insert(0, self.tmp.name)

    def define(self, msg: Message, kind: str) -> Any:
        name = msg.name + ("Data" if kind == "data" else "")
        (self.pkg / f"{name}.json").write_text(json.dumps(kafka_spec(msg, name, kind)))
        base = ApiData if kind == "data" else ApiMessage
        return types.new_class(name, (base,), {"load_json": self.PACKAGE})


def to_kafka_python(obj: Any, struct: Any, cls: Any, version: int) -> Any:
    kwargs = {}
    for f in struct._fields:
        if not f.for_version_q(version):
            continue
        value = getattr(obj, snake(f._name))
        if f.is_struct_array() and value is not None:
            item_cls = getattr(cls, f.type_str)  # nested classes hang off their parent's class
            value = [to_kafka_python(v, f, item_cls, version) for v in value]
        elif isinstance(value, Uuid):
            value = None if value == Uuid() else uuid.UUID(bytes=bytes(value))
        elif isinstance(value, list) and value and isinstance(value[0], Uuid):
            value = [uuid.UUID(bytes=bytes(u)) for u in value]
        kwargs[f.name] = value
    return cls(version=version, **kwargs)


def kafka_python_ops(classes: KafkaPythonClasses, case: Case, obj: Any, data: bytes,
                     rate: Callable[[Op], float]) -> tuple[Op, Op]:
    msg = MESSAGES[case.name]
    v = case.version
    kinds = ["request"] if msg.kind == "request" else ["data", "request"]
    encoders, decoders = [], []
    for kind in kinds:
        cls = classes.define(msg, kind)
        kp = to_kafka_python(obj, cls._struct, cls, v)
        if kind == "data":
            enc: Op = lambda kp=kp: kp.encode(v, header=False)  # noqa: E731
            dec: Op = lambda cls=cls: cls.decode(data, version=v, header=False)  # noqa: E731
        else:
            enc = lambda kp=kp: kp.encode(v)  # noqa: E731
            dec = lambda cls=cls: cls.decode(data, version=v)  # noqa: E731
        check(enc() == data, f"kafka-python ({kind}) wrote different bytes")
        check(dec() == kp, f"kafka-python ({kind}) read different values")
        encoders.append(enc)
        decoders.append(dec)
    if len(kinds) == 1:
        return encoders[0], decoders[0]
    return max(encoders, key=rate), max(decoders, key=rate)


# ---- metalog's two codecs ---------------------------------------------------------------------
def metalog_ops(case: Case, obj: Any, data: bytes) -> tuple[Op, Op]:
    cls, v = type(obj), case.version
    check(cls.decode(data, v) == obj, "metalog decode differs")
    return lambda: obj.encode(v), lambda: cls.decode(data, v)


def reference_ops(case: Case, obj: Any, data: bytes) -> tuple[Op, Op]:
    from metalog.codec import reference

    v = case.version
    check(reference.encode(obj, v) == data, "reference wrote different bytes")
    check(reference.decode(case.name, data, v) == obj, "reference read different values")
    return lambda: reference.encode(obj, v), lambda: reference.decode(case.name, data, v)


def check(ok: bool, what: str) -> None:
    if not ok:
        raise SystemExit(f"not timed, inputs differ: {what}")


# ---- timing -----------------------------------------------------------------------------------
@dataclass
class Timer:
    min_time: float  # seconds per timed repeat
    repeat: int
    clock: Callable[[], float] = time.process_time  # CPU time: other processes on the machine do not count

    def rate(self, fn: Op) -> float:
        return self.rates({"": fn})[""]

    def rates(self, fns: dict[str, Op]) -> dict[str, float]:
        """Best-of-``repeat`` operations per second of each function, each timed repeat running for at
        least ``min_time``; the repeats of the functions alternate, so all see the same machine load."""
        timers = {k: timeit.Timer(fn, timer=self.clock) for k, fn in fns.items()}
        loops = {k: self.loops(t) for k, t in timers.items()}
        best = dict.fromkeys(fns, float("inf"))
        for _ in range(self.repeat):
            for k, t in timers.items():
                best[k] = min(best[k], t.timeit(loops[k]) / loops[k])
        return {k: 1 / b for k, b in best.items()}

    def loops(self, t: timeit.Timer) -> int:
        n = 1
        while (elapsed := t.timeit(n)) < self.min_time / 4:
            n *= 4 if elapsed < self.min_time / 40 else 2
        return max(1, int(n * self.min_time / max(elapsed, 1e-9)))


# ---- the table --------------------------------------------------------------------------------
PEERS = ["metalog", "kio", "kafka-python", "construct ref"]
# (case letter, op) -> minimum metalog/peer ratio
TARGETS = {
    "kio": {("a", "encode"): 5, ("b", "encode"): 5, ("c", "encode"): 5, ("d", "encode"): 5,
            ("a", "decode"): 1.2, ("b", "decode"): 1.2, ("c", "decode"): 1.0, ("d", "decode"): 1.0},
    "kafka-python": {(c, op): 2 for c in "abcd" for op in ("encode", "decode")},
}


def fmt_rate(ops: float | None, size: int) -> str:
    if ops is None:
        return "-"
    return f"{ops:,.0f} ({ops * size / 1e6:,.1f})"


def run(timer: Timer) -> tuple[list[str], list[bool]]:
    kp_classes = KafkaPythonClasses()
    notes: list[str] = []
    rows: list[list[str]] = []
    met: list[bool] = []
    for case in CASES:
        obj = case.build()
        data = obj.encode(case.version)
        ops: dict[str, tuple[Op, Op] | None] = {
            "metalog": metalog_ops(case, obj, data),
            "kio": kio_ops(case, obj, data),
            "kafka-python": kafka_python_ops(kp_classes, case, obj, data, timer.rate),
        }
        try:
            ops["construct ref"] = reference_ops(case, obj, data)
        except (ImportError, AttributeError) as e:
            ops["construct ref"] = None
            notes.append(f"construct reference skipped for {case.name}: {type(e).__name__}: {e}")
        letter = case.label[1]
        for i, op in enumerate(("encode", "decode")):  # the order of each (encode, decode) pair
            rates: dict[str, float | None] = dict.fromkeys(PEERS)
            rates.update(timer.rates({p: o[i] for p, o in ops.items() if o}))
            ours = rates["metalog"]
            assert ours is not None
            row = [case.label, op, str(len(data))] + [fmt_rate(rates[p], len(data)) for p in PEERS]
            for peer in ("kio", "kafka-python"):
                ratio = ours / rates[peer]  # type: ignore[operator]
                goal = TARGETS[peer][(letter, op)]
                met.append(ratio >= goal)
                row.append(f"{ratio:.2f}x {'ok' if ratio >= goal else 'MISS'} (>= {goal:g}x)")
            ref = rates["construct ref"]
            row.append("-" if ref is None else f"{ours / ref:,.0f}x")
            rows.append(row)
            print_row(row, first=len(rows) == 1)
    return notes, met


HEADERS = ["case", "op", "bytes"] + [f"{p} ops/s (MB/s)" for p in PEERS] + \
    ["metalog/kio", "metalog/kafka-python", "metalog/ref"]
WIDTHS = [36, 6, 6, 22, 20, 22, 18, 24, 24, 11]


def print_row(row: list[str], first: bool) -> None:
    if first:
        print("  ".join(h.ljust(w) for h, w in zip(HEADERS, WIDTHS, strict=True)))
        print("  ".join("-" * w for w in WIDTHS))
    print("  ".join(c.ljust(w) for c, w in zip(row, WIDTHS, strict=True)), flush=True)


def profile(rows: int) -> None:
    """Where metalog's fast path spends its time: cProfile of each case, generated code vs C calls."""
    import cProfile
    import pstats

    for case in CASES:
        obj = case.build()
        data = obj.encode(case.version)
        for op, fn in zip(("encode", "decode"), metalog_ops(case, obj, data), strict=True):
            n = max(1, 200_000 // len(data))
            prof = cProfile.Profile()
            prof.runcall(lambda fn=fn, n=n: [fn() for _ in range(n)])
            stats = {k: v for k, v in pstats.Stats(prof).stats.items()  # type: ignore[attr-defined]
                     if k[0] != __file__}  # not this script's own loop
            total = sum(tt for _, _, tt, _, _ in stats.values())
            top = sorted(stats.items(), key=lambda kv: -kv[1][2])[:rows]
            print(f"\n{case.label} {op}: {total / n * 1e6:.1f} us per call under cProfile")
            for (file, line, func), (_, calls, tt, _, _) in top:
                where = func if file == "~" else f"{Path(file).name}:{line} {func}"
                print(f"  {tt / total:6.1%}  {calls // n:6d} calls/op  {where}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="short timing runs (a smoke test, noisy figures)")
    ap.add_argument("--repeat", type=int, help="timed repeats per figure (best is kept)")
    ap.add_argument("--min-time", type=float, help="seconds per timed repeat")
    ap.add_argument("--wall", action="store_true", help="time with the wall clock instead of this process's CPU time")
    ap.add_argument("--profile", action="store_true", help="instead of timing, profile metalog's fast path")
    args = ap.parse_args(argv)
    if args.profile:
        profile(rows=6)
        return 0
    timer = Timer(min_time=0.02, repeat=3) if args.quick else Timer(min_time=0.2, repeat=5)
    if args.repeat:
        timer.repeat = args.repeat
    if args.min_time:
        timer.min_time = args.min_time
    if args.wall:
        timer.clock = time.perf_counter
    clock = "wall clock" if args.wall else "process CPU time"
    print(f"Python {sys.version.split()[0]}; best of {timer.repeat} x >= {timer.min_time:g}s of {clock}; "
          "rates as ops/s (MB/s of message bytes)\n")
    notes, met = run(timer)
    print(f"\ntargets met: {sum(met)}/{len(met)}")
    for n in notes:
        print("note:", n)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
