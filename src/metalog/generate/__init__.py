"""Realistic KRaft metadata histories, for demos, tests and benchmarks."""

from metalog.generate.generator import HistoryGenerator, HistorySettings

__all__ = ["HistoryGenerator", "HistorySettings"]
