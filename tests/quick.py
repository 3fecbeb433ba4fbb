"""What the quick loop (``scripts/test.sh --quick``, pytest ``--quick``) runs less of; the whole suite, which CI
runs, runs all of it.

- A parametrised test marked ``subset`` runs, in the quick loop, only the cases its ``keep`` picks: a function
  of the case's parameters, by name, chosen so that the subset still meets every kind of case (every message
  at its first and last version; every verb, and every crafted batch, at least once)::

      @pytest.mark.subset(keep=lambda name, version: is_edge_version(name, version))

- Hypothesis draws a quarter of the examples: the tests that set no budget take the ``quick`` profile's
  (``QUICK_EXAMPLES``), and a test that sets its own writes ``max_examples=examples(n)``.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from hypothesis import settings

QUICK_EXAMPLES = 25  # the quick profile's budget, against Hypothesis' 100
_FULL_EXAMPLES = 100


def examples(n: int) -> int:
    """A test's own example budget ``n``, scaled as the profile loaded scales Hypothesis' default (down only: a
    quarter of it in the quick loop, at least 5; ``n`` in every other run, CI's included)."""
    scale = min(settings.default.max_examples, _FULL_EXAMPLES)
    return n if scale >= _FULL_EXAMPLES else max(5, n * scale // _FULL_EXAMPLES)


def kept_in_quick_loop(item: pytest.Item) -> bool:
    marker = item.get_closest_marker("subset")
    if marker is None:
        return True
    params = getattr(item, "callspec", None)
    return bool(marker.kwargs["keep"](**(params.params if params is not None else {})))


def spread(*positions: int, every: int) -> bool:
    """One case in ``every`` of a grid of parameters, by the sum of its positions in their lists: each value of each
    parameter is still met, with a different partner each time (a diagonal through the grid)."""
    return sum(positions) % every == 0


def position(values: Sequence[object], value: object) -> int:
    return list(values).index(value)
