"""The quick loop's share of the suite (tests/quick.py): what it leaves out, and what every other run keeps."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from hypothesis import settings

from tests.quick import QUICK_EXAMPLES, examples, kept_in_quick_loop, spread


@contextmanager
def profile(name: str) -> Iterator[None]:
    before = settings.get_current_profile_name()
    settings.load_profile(name)
    try:
        yield
    finally:
        settings.load_profile(before)


def test_a_tests_own_budget_is_scaled_down_in_the_quick_loop_only() -> None:
    with profile("metalog"):
        assert examples(40) == 40 and examples(400) == 400
    with profile("ci"):  # twice the default budget there, but a test's own is never raised
        assert examples(40) == 40
    with profile("quick"):
        assert settings.default.max_examples == QUICK_EXAMPLES
        assert examples(40) == 10 and examples(400) == 100 and examples(8) == 5


@pytest.mark.subset(keep=lambda n: n == 1)
@pytest.mark.parametrize("n", [1, 2])
def test_a_subset_keeps_the_cases_its_keep_picks(request: pytest.FixtureRequest, n: int) -> None:
    assert kept_in_quick_loop(request.node) is (n == 1)


def test_a_test_not_marked_is_kept(request: pytest.FixtureRequest) -> None:
    assert kept_in_quick_loop(request.node)


def test_a_spread_meets_every_value_of_every_parameter() -> None:
    kept = [(a, b, c) for a in range(11) for b in range(23) for c in range(2) if spread(a, b, c, every=4)]
    assert {a for a, _, _ in kept} == set(range(11)) and {b for _, b, _ in kept} == set(range(23))
    assert len(kept) in range(11 * 23 * 2 // 4 - 2, 11 * 23 * 2 // 4 + 3)
