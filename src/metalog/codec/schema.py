"""The schema model: Kafka's message-definition rules as plain data.

Our definitions (``definitions/``) are written with ``Message``, ``Struct`` and
``F``; everything else in the codec (generated fast path, construct reference,
JSON form, hypothesis strategies) is derived from these objects.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property

from metalog.errors import SchemaError

PRIMITIVES = frozenset(
    {"bool", "int8", "int16", "uint16", "int32", "uint32", "int64", "float64", "uuid", "string", "bytes",
     "records"}
)
# Fixed-width primitives: struct format character and size.
FIXED = {
    "bool": ("?", 1), "int8": ("b", 1), "int16": ("h", 2), "uint16": ("H", 2), "int32": ("i", 4),
    "uint32": ("I", 4), "int64": ("q", 8), "float64": ("d", 8), "uuid": ("16s", 16),
}
INT_RANGES = {
    "int8": (-(2**7), 2**7 - 1), "int16": (-(2**15), 2**15 - 1), "uint16": (0, 2**16 - 1),
    "int32": (-(2**31), 2**31 - 1), "uint32": (0, 2**32 - 1), "int64": (-(2**63), 2**63 - 1),
}


@dataclass(frozen=True)
class Versions:
    """An inclusive version range; ``hi`` None means open-ended ("3+"), ``lo`` None means none."""

    lo: int | None
    hi: int | None = None

    @classmethod
    def parse(cls, text: str | None) -> Versions:
        if text is None or text == "none":
            return NONE
        m = re.fullmatch(r"(\d+)(\+|-(\d+))?", text.strip())
        if not m:
            raise SchemaError(f"bad version range {text!r}")
        lo = int(m.group(1))
        if m.group(2) == "+":
            return cls(lo, None)
        return cls(lo, int(m.group(3)) if m.group(3) else lo)

    def __contains__(self, version: int) -> bool:
        return self.lo is not None and version >= self.lo and (self.hi is None or version <= self.hi)

    def __str__(self) -> str:
        if self.lo is None:
            return "none"
        if self.hi is None:
            return f"{self.lo}+"
        return str(self.lo) if self.lo == self.hi else f"{self.lo}-{self.hi}"


NONE = Versions(None, None)


def snake(name: str) -> str:
    """Kafka field name -> Python attribute (``LeaderRecoveryState`` -> ``leader_recovery_state``)."""
    s = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", name)
    s = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", s)
    return s.lower()


def camel(name: str) -> str:
    """Kafka field name -> JsonConverter key: the first letter lower-cased, nothing else."""
    return name[:1].lower() + name[1:]


@dataclass(frozen=True)
class F:
    """A field. ``type`` is Kafka's type string: ``int32``, ``[]uuid``, ``[]BrokerEndpoint``, ``Voter``."""

    name: str
    type: str
    versions: str
    nullable: str | None = None
    tagged: str | None = None
    tag: int | None = None
    default: object = None  # None = the type's own default; NULL = Kafka's "null"
    ignorable: bool = False
    entity: str | None = None
    map_key: bool = False
    flexible: str | None = None  # per-field flexibleVersions override
    fields: tuple[F, ...] = ()  # inline struct definition

    # --- derived facts -------------------------------------------------------------
    @cached_property
    def attr(self) -> str:
        return snake(self.name)

    @cached_property
    def json_key(self) -> str:
        return camel(self.name)

    @cached_property
    def valid(self) -> Versions:
        return Versions.parse(self.versions)

    @cached_property
    def nullable_versions(self) -> Versions:
        return Versions.parse(self.nullable)

    @cached_property
    def tagged_versions(self) -> Versions:
        return Versions.parse(self.tagged)

    @cached_property
    def flexible_override(self) -> Versions | None:
        return None if self.flexible is None else Versions.parse(self.flexible)

    @property
    def is_array(self) -> bool:
        return self.type.startswith("[]")

    @property
    def element(self) -> str:
        """The element type of an array, or the type itself."""
        return self.type[2:] if self.is_array else self.type

    @property
    def is_struct(self) -> bool:
        return self.element not in PRIMITIVES

    @property
    def default_is_null(self) -> bool:
        return self.default is NULL


class _Null:
    """Kafka's ``"default": "null"``."""

    _instance: _Null | None = None

    def __new__(cls) -> _Null:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "NULL"


NULL = _Null()


@dataclass(frozen=True)
class Struct:
    """A named struct: a common struct, or the struct an array/struct field defines inline."""

    name: str
    versions: str
    fields: tuple[F, ...]

    @cached_property
    def valid(self) -> Versions:
        return Versions.parse(self.versions)


@dataclass(frozen=True)
class Message:
    """A top-level message: a metadata record, request, response, header or data (control) record."""

    name: str
    kind: str  # metadata | request | response | header | data
    valid: str
    flexible: str
    fields: tuple[F, ...]
    api_key: int | None = None
    common_structs: tuple[Struct, ...] = ()
    listeners: tuple[str, ...] = ()
    deprecated: str | None = None

    @cached_property
    def valid_versions(self) -> Versions:
        return Versions.parse(self.valid)

    @cached_property
    def flexible_versions(self) -> Versions:
        return Versions.parse(self.flexible)

    @property
    def versions(self) -> range:
        v = self.valid_versions
        if v.lo is None or v.hi is None:  # Kafka's validVersions are always a closed range
            raise SchemaError(f"{self.name}: validVersions {self.valid!r} is not a closed range")
        return range(v.lo, v.hi + 1)

    @cached_property
    def structs(self) -> dict[str, Struct]:
        """Every struct the message uses, by name: common ones and those defined inline."""
        found: dict[str, Struct] = {s.name: s for s in self.common_structs}

        def visit(fields: tuple[F, ...]) -> None:
            for f in fields:
                if f.fields:
                    if f.element in found:
                        raise SchemaError(f"{self.name}: struct {f.element} defined twice")
                    found[f.element] = Struct(f.element, f.versions, f.fields)
                    visit(f.fields)

        for s in self.common_structs:
            visit(s.fields)
        visit(self.fields)
        return found

    def field_is_flexible(self, f: F, version: int) -> bool:
        """Whether a field uses compact (varint) lengths at this version."""
        override = f.flexible_override
        return version in (override if override is not None else self.flexible_versions)

    def check(self) -> None:
        """Raise SchemaError where the definition breaks one of Kafka's rules."""
        for owner, fields in [(self.name, self.fields)] + [(s.name, s.fields) for s in self.structs.values()]:
            tags = [f.tag for f in fields if f.tag is not None]
            if len(tags) != len(set(tags)):
                raise SchemaError(f"{self.name}.{owner}: duplicate tag")
            for f in fields:
                if f.is_struct and f.element not in self.structs:
                    raise SchemaError(f"{self.name}.{owner}.{f.name}: unknown type {f.type}")
                if (f.tag is None) != (f.tagged is None):
                    raise SchemaError(f"{self.name}.{owner}.{f.name}: tag and taggedVersions go together")


@dataclass
class Registry:
    """All definitions, by name and by metadata api key."""

    messages: dict[str, Message] = field(default_factory=dict)

    def add(self, *messages: Message) -> None:
        for m in messages:
            if m.name in self.messages:
                raise SchemaError(f"message {m.name} defined twice")
            m.check()
            self.messages[m.name] = m
