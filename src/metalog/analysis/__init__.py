"""Migration-phase analysis: per-batch timelines of ZooKeeper migration and JBOD transition, events, a report.

- ``domain``: the per-batch step (counts kept from the loader's deltas) and each table's schema;
- ``engines``: the python, parallel and Spark engines, one interface (``engines.request``: a request in, the
  tables on disk and a summary out);
- the outputs: ``layout``, ``tables``, ``writers``, ``openmetrics``, ``sampling``, ``growth_tables``, ``report``.
"""
