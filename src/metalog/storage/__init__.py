"""Brokers' storage on disk: log directories formatted, read and changed to follow the controller's
metadata (``log_dirs``), and a controller and its brokers simulated over real directories (``simulation``).

The thin layer of I/O over ``metalog.controller``, whose commands, placement and reconciliation plans are pure.
"""
