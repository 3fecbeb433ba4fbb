"""metalog: Kafka's KRaft cluster-metadata log in Python."""

__version__ = "0.1.0"
