"""The generated classes by name, their fields typed: ``from metalog.codec.messages import PartitionRecord``."""

from __future__ import annotations

import importlib
import subprocess
import sys
import textwrap
import typing
from pathlib import Path

import pytest

from metalog.codec import Uuid, core, message_class, struct_class
from metalog.codec.definitions import MESSAGES

messages = importlib.import_module("metalog.codec.messages")


@pytest.mark.parametrize("name", sorted(MESSAGES))
def test_every_message_class_is_importable_by_name_and_is_message_class(name: str) -> None:
    cls = getattr(messages, name)
    assert cls is message_class(name)
    assert core.is_compiled(cls) == core.compiled_active()  # with the compiled readers where they run


def test_an_unknown_name_is_an_import_error_and_module_names_still_import_modules() -> None:
    with pytest.raises(ImportError, match="PartitionRecrd"):
        exec("from metalog.codec.messages import PartitionRecrd", {})
    from metalog.codec.messages import register_broker_record

    assert register_broker_record.BrokerEndpoint is struct_class("RegisterBrokerRecord", "BrokerEndpoint")


def _classes() -> list[type]:
    return [struct_class(m, s) for m, spec in sorted(MESSAGES.items()) for s in [m, *sorted(spec.structs)]]


@pytest.mark.parametrize("cls", _classes(), ids=lambda c: c.__name__)
def test_annotations_name_the_slots_and_make_no_class_attributes(cls: type) -> None:
    # the compiled readers store into the slots by offset (codec/compiled/_reader.h checks the layout at import):
    # the annotations must add no slot, reorder none and shadow none with a class attribute
    own = cls.__dict__["__annotations__"]
    assert tuple(own) == cls.__slots__ == (*cls.FIELDS, "unknown_tagged_fields")  # type: ignore[attr-defined]
    for slot in cls.__slots__:  # type: ignore[attr-defined]
        assert type(cls.__dict__[slot]).__name__ == "member_descriptor"
    hints = typing.get_type_hints(cls)  # every annotation resolves to real classes
    assert hints["unknown_tagged_fields"] == list[tuple[int, bytes]] | None


def test_field_types_follow_the_schema() -> None:
    from metalog.codec.messages import PartitionRecord, RegisterBrokerRecord
    from metalog.codec.messages.register_broker_record import BrokerEndpoint

    hints = typing.get_type_hints(PartitionRecord)
    assert hints["partition_id"] is int and hints["topic_id"] is Uuid
    assert hints["replicas"] == list[int] and hints["directories"] == list[Uuid]
    assert hints["eligible_leader_replicas"] == list[int] | None  # nullable: X | None
    hints = typing.get_type_hints(RegisterBrokerRecord)
    assert hints["end_points"] == list[BrokerEndpoint]  # nested structs by their class
    assert hints["rack"] == str | None and hints["fenced"] is bool


def test_a_type_checker_sees_the_fields(tmp_path: Path) -> None:
    # what a tool builder's editor sees: mypy knows the fields, their types and the keyword arguments (metalog
    # ships py.typed, PEP 561; without it mypy skips metalog's annotations)
    program = tmp_path / "tool.py"
    program.write_text(textwrap.dedent("""\
        from metalog.codec.messages import PartitionRecord

        record = PartitionRecord.decode(PartitionRecord(partition_id=3).encode(1), 1)
        replicas: list[int] = record.replicas
        wrong: str = record.leader
        PartitionRecord(partition=3)
    """))
    run = subprocess.run([sys.executable, "-m", "mypy", "--no-incremental", "--cache-dir", str(tmp_path / "c"),
                          "--config-file", "", str(program)], capture_output=True, text=True)
    errors = [line.split(": error: ")[1] for line in run.stdout.splitlines() if ": error: " in line]
    assert errors == [
        'Incompatible types in assignment (expression has type "int", variable has type "str")  [assignment]',
        'Unexpected keyword argument "partition" for "PartitionRecord"; did you mean "partition_id"?  [call-arg]',
    ], run.stdout
