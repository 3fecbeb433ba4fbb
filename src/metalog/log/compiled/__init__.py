"""metalog's compiled log core: hand-written Cython twins of the log's hot paths, built at install where a C
compiler is present (setup.py), each registered by the module of its pure twin in ``metalog.codec.core``'s registry
(``METALOG_PURE=1`` forces the pure twins).

- ``records``: RecordBatch's record decoder (``metalog.log.batch._decode_records``), Records made untracked;
- ``reader``: the batch loop's step (``metalog.log.reader.next_batches``);
- ``scan``: replay's read loop (``metalog.log.scan.pure_scan_into``);
- ``tee``: two readers of one scan (``metalog.log.tee``'s ``ValueTee`` and ``EndTee``), told in C.

Each function returns None (or hands over to its pure twin) for input outside the forms it reads, so every
error is the pure path's own. ``tests/log/test_compiled_log.py`` runs both on the same batches.
"""
