"""The analysis' domain: its tables (``schema``), rows as typed columns (``columns``) and the per-batch step that
keeps every count from the loader's deltas (``step``). No I/O: deltas in, columns out."""
