from __future__ import annotations

import pytest

from metalog.codec import LOST, MIGRATING, UNASSIGNED, ZERO, Uuid


def test_reserved_directory_ids_are_kafkas() -> None:
    assert (MIGRATING.most_significant_bits, MIGRATING.least_significant_bits) == (0, 0)
    assert (UNASSIGNED.most_significant_bits, UNASSIGNED.least_significant_bits) == (0, 1)
    assert (LOST.most_significant_bits, LOST.least_significant_bits) == (0, 2)
    assert MIGRATING == ZERO


@pytest.mark.parametrize(("most", "least", "reserved"), [
    (0, 0, True), (0, 99, True), (0, 100, False), (1, 0, False), (0, -1, False), (-1, 5, False),
])
def test_reserved_is_high_half_zero_and_low_half_below_100(most: int, least: int, reserved: bool) -> None:
    assert Uuid.of(most, least).is_reserved is reserved


def test_signed_halves_round_trip() -> None:
    u = Uuid.of(-2, 2**63 - 1)
    assert (u.most_significant_bits, u.least_significant_bits) == (-2, 2**63 - 1)
    assert Uuid.parse(str(u)) == u


@pytest.mark.parametrize("bad", ["", "AAAA", "A" * 23, "!" * 22, "AAAAAAAAAAAAAAAAAAAAA/", None])
def test_parse_rejects_what_is_not_a_uuid(bad: object) -> None:
    with pytest.raises(ValueError):
        Uuid.parse(bad)  # type: ignore[arg-type]


def test_random_is_never_reserved() -> None:
    assert not any(Uuid.random().is_reserved for _ in range(200))


def test_wrong_length_is_refused() -> None:
    with pytest.raises(ValueError, match="16 bytes"):
        Uuid(b"\0" * 15)
