"""Arrow's compute kernels as the analysis' outputs call them: by name, through ``call_function``, never through
``pyarrow.compute``'s module. Importing that module makes a Python wrapper, with a docstring parsed by numpydoc's
scraper, for each of Arrow's ~290 kernels: 21-30 ms of CPU at an analysis' start, for the dozen kernels the
writers, the sampler and the report use. ``call_function`` and the options classes are defined in
``pyarrow._compute`` (``pyarrow.compute`` re-exports them), which loads in about 4 ms.

An Arrow method that runs a kernel (``Array.take``, ``filter``, ``cast``, ``unique``, ``dictionary_decode``,
``RecordBatch.filter``...) imports ``pyarrow.compute`` itself: the outputs call these functions instead. Each
passes the options that method's ``pyarrow.compute`` function passes by default (so the results are the same)."""

from __future__ import annotations

from functools import cache
from typing import Any


@cache
def _compute() -> Any:
    try:
        import pyarrow._compute as compute
    except ImportError:  # (a pyarrow that moved it: the public module, at its import's price)
        import pyarrow.compute as compute
    return compute


def kernel(name: str, *args: Any, options: Any = None) -> Any:
    """The kernel ``name`` on ``args`` (arrays, record batches or scalars) with ``options`` (None: its defaults),
    as ``pyarrow.compute.<name>(*args)`` gives it."""
    return _compute().call_function(name, list(args), options)


def take(values: Any, indices: Any) -> Any:
    """``values.take(indices)`` (bounds checked), of an array, chunked array or record batch."""
    return kernel("take", values, indices)


def kept(values: Any, mask: Any) -> Any:
    """``values.filter(mask)``: the rows where ``mask`` is true (a null in it drops its row)."""
    return kernel("filter", values, mask)


def cast(values: Any, target: Any) -> Any:
    """``values.cast(target)``: a safe cast (an overflow or a truncation is an error)."""
    return kernel("cast", values, options=_compute().CastOptions.safe(target))


def decoded(values: Any) -> Any:
    """A dictionary array's values (``dictionary_decode``); any other array as it is."""
    import pyarrow as pa

    return take(values.dictionary, values.indices) if pa.types.is_dictionary(values.type) else values
