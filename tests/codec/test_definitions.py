"""Our definitions agree with Kafka's JSON message specs, field by field, so the two cannot drift.

Kafka's specs are not part of this repository: the check reads them from the shared reference next
to the project (``../shared/kafka-reference/schemas``) and skips, saying why, where that is absent.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from metalog.codec.definitions import MESSAGES
from metalog.codec.schema import NULL, F, Message
from tests.conftest import SHARED_SCHEMAS

pytestmark = pytest.mark.skipif(
    not SHARED_SCHEMAS.is_dir(),
    reason=f"Kafka's JSON specs are not at {SHARED_SCHEMAS} (only the project's shared checkout has them)",
)


def _spec_files() -> list[Path]:
    return sorted(SHARED_SCHEMAS.glob("*.json")) if SHARED_SCHEMAS.is_dir() else []


def _load(path: Path) -> dict[str, Any]:
    # Kafka's spec files carry // comments (the license header), which JSON does not allow.
    return json.loads(re.sub(r"^\s*//.*$", "", path.read_text(), flags=re.M))


def _default(spec: dict[str, Any]) -> object:
    if "default" not in spec:
        return None
    raw, typ = spec["default"], spec["type"]
    if raw == "null":
        return NULL
    if typ == "bool":
        return {"true": True, "false": False}[raw]
    if typ in ("int8", "int16", "int32", "int64", "uint16", "uint32"):
        return int(str(raw), 0)
    if typ == "float64":
        return float(raw)
    return raw


def _compare_fields(ours: tuple[F, ...], theirs: list[dict[str, Any]], where: str) -> None:
    assert [f.name for f in ours] == [t["name"] for t in theirs], where
    for f, t in zip(ours, theirs, strict=True):
        at = f"{where}.{f.name}"
        assert f.type == t["type"], at
        assert f.versions == t["versions"], at
        assert f.nullable == t.get("nullableVersions"), at
        assert f.tagged == t.get("taggedVersions"), at
        assert f.tag == (int(t["tag"]) if "tag" in t else None), at
        assert f.default == _default(t) and type(f.default) is type(_default(t)), at
        assert f.ignorable == t.get("ignorable", False), at
        assert f.entity == t.get("entityType"), at
        assert f.map_key == t.get("mapKey", False), at
        assert f.flexible == t.get("flexibleVersions"), at
        _compare_fields(f.fields, t.get("fields", []), at)


@pytest.mark.parametrize("path", _spec_files(), ids=lambda p: p.stem)
def test_definition_matches_kafka_spec(path: Path) -> None:
    spec = _load(path)
    ours: Message = MESSAGES[spec["name"]]
    assert ours.kind == spec["type"]
    assert ours.api_key == spec.get("apiKey")
    assert ours.valid == spec["validVersions"]
    assert ours.flexible == spec["flexibleVersions"]
    assert ours.listeners == tuple(spec.get("listeners", ()))
    assert ours.deprecated == spec.get("deprecatedVersions")
    _compare_fields(ours.fields, spec["fields"], ours.name)
    common = spec.get("commonStructs", [])
    assert [s.name for s in ours.common_structs] == [s["name"] for s in common]
    for s, t in zip(ours.common_structs, common, strict=True):
        assert s.versions == t["versions"]
        _compare_fields(s.fields, t["fields"], f"{ours.name}.{s.name}")


def test_every_kafka_spec_has_a_definition_and_no_more() -> None:
    assert sorted(_load(p)["name"] for p in _spec_files()) == sorted(MESSAGES)
