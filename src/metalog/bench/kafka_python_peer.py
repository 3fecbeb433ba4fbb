"""kafka-python as a codec peer: its generic JSON-schema message classes with compiled codecs.

It is given a Kafka-style spec written from our definitions, the way kafka-python declares its own
classes; for records (data, not RPCs) the faster of its ApiData and ApiMessage paths is used.
Importing this module needs kafka-python (the ``bench`` extra).
"""

from __future__ import annotations

import functools
import json
import sys
import tempfile
import types
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kafka.protocol.api_data import ApiData
from kafka.protocol.api_message import ApiMessage

from metalog.bench.codec import Case, check
from metalog.bench.timing import Op
from metalog.codec import Uuid
from metalog.codec.definitions import MESSAGES
from metalog.codec.schema import NULL, F, Message, snake


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

    made = 0  # each instance gets its own package: a second one must not find the first's, deleted, modules

    def __init__(self) -> None:
        self.tmp = tempfile.TemporaryDirectory()
        KafkaPythonClasses.made += 1
        self.package = f"metalog_bench_kafka_specs_{KafkaPythonClasses.made}"
        self.pkg = Path(self.tmp.name) / self.package
        self.pkg.mkdir()
        (self.pkg / "__init__.py").write_text("")
        sys.path.insert(0, self.tmp.name)

    def define(self, msg: Message, kind: str) -> Any:
        name = msg.name + ("Data" if kind == "data" else "")
        (self.pkg / f"{name}.json").write_text(json.dumps(kafka_spec(msg, name, kind)))
        base = ApiData if kind == "data" else ApiMessage
        return types.new_class(name, (base,), {"load_json": self.package})


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
        # kafka-python's data classes take header=False, its request classes no header argument
        options = {"header": False} if kind == "data" else {}
        enc: Op = functools.partial(kp.encode, v, **options)
        dec: Op = functools.partial(cls.decode, data, version=v, **options)
        check(enc() == data, f"kafka-python ({kind}) wrote different bytes")
        check(dec() == kp, f"kafka-python ({kind}) read different values")
        encoders.append(enc)
        decoders.append(dec)
    if len(kinds) == 1:
        return encoders[0], decoders[0]
    return max(encoders, key=rate), max(decoders, key=rate)


