"""The committed generated modules (pure and compiled) are exactly what the generator writes from our definitions."""

from __future__ import annotations

from codegen import compiled, pure


def test_generated_modules_are_current() -> None:
    expected = pure.generate_all()
    on_disk = pure.generated_on_disk()
    stale = sorted(name for name in expected.keys() | on_disk.keys() if expected.get(name) != on_disk.get(name))
    assert not stale, f"run `python -m codegen`; stale: {stale}"


def test_generated_compiled_modules_are_current() -> None:
    expected = compiled.generate_all()
    on_disk = compiled.generated_on_disk()
    stale = sorted(name for name in expected.keys() | on_disk.keys() if expected.get(name) != on_disk.get(name))
    assert not stale, f"run `python -m codegen`; stale: {stale}"


def test_every_definition_has_a_module() -> None:
    from metalog.codec import message_class, message_names

    for name in message_names():
        cls = message_class(name)
        assert name == cls.NAME
        assert set(cls.READERS) == set(cls.WRITERS) == set(cls.VERSIONS)
