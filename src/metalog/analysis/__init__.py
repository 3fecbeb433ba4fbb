"""Migration-phase analysis: per-batch timelines of ZooKeeper migration and JBOD transition, events, a report.

Builds on replay (one pass over each log); no I/O beyond reading logs and writing the output directory.
"""

from metalog.analysis.engines.replay import Analysis, analyze_log, analyze_python

__all__ = ["Analysis", "analyze_log", "analyze_python"]
