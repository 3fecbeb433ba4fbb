"""Benchmark building blocks shared by ``metalog bench`` and the scripts in ``benchmarks/``.

Peers (kio, kafka-python, aiokafka) come from the ``bench`` extra; the modules that need them
import them at the top, so importing such a module is the test of whether a peer is installed.
"""
