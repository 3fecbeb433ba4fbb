"""Migration-phase analysis: per-batch timelines of ZooKeeper migration and JBOD transition, events, a report.

- ``domain``: the per-batch step (counts kept from the loader's deltas), each table's schema, rows as columns;
- ``clusters``: which clusters an analysis reads and what each is called (``NAME=LOGDIR``, ``cluster.id``);
- ``outputs``: the tables on disk (``layout``, ``tables``, ``writers``), controller_metrics.om (``openmetrics``,
  ``sampling``), the growth tables (``growth``, ``growth_tables``) and the report (``report``);
- ``engines``: the python, parallel and Spark engines, one interface (``engines.request``: a request in, the
  tables on disk and a summary out).

Imports point down that list's reverse: engines over outputs over the domain (an import contract).
"""
