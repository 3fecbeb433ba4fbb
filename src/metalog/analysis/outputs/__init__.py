"""The analysis' outputs, from the domain's columns: where each table lives on disk (``layout``), the output
directory and CSV cells (``tables``), the tables written as the replay goes (``writers``), controller_metrics.om
(``openmetrics``, its samples chosen by ``sampling``), the growth tables (``growth_tables``) and the report
(``report``)."""
