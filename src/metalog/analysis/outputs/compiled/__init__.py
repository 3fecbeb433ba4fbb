"""The analysis outputs' compiled twins, hand-written Cython built at install where a C compiler is present
(setup.py), each chosen by the module of its pure twin (``METALOG_PURE=1`` runs the pure twins): the growth pass'
counting (``growth_count``, for ``metalog.analysis.outputs.growth``), controller_metrics.om's sample lines
(``om_text``, for ``openmetrics``) and the report's series' decimation and JSON arrays (``report_series``, for
``report.series``)."""
