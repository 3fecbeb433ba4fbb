"""``why``: what is wrong with a partition, a broker or a log directory at a point of the log, since when, which
record did it, and the chain of committed changes behind it, each with its offset.

The states are Kafka's:
- a partition is *offline* when it has no leader (leader -1: ``PartitionRegistration.hasLeader``, what the
  controller's OfflinePartitionsCount counts); its leader is *recovering* after an unclean election
  (leaderRecoveryState RECOVERING); it is *under min ISR* when its ISR is smaller than min.insync.replicas (the
  topic's config, else the cluster default ``BROKER/``'s, else Kafka's default 1), *under-replicated* when its
  ISR is smaller than its replicas, and it has *offline replicas* when a replica's broker is missing or fenced
  or its directory is not online on that broker (KIP-858, as ``MetadataImage.offline_replicas``);
- a broker is *unregistered*, *fenced* or *in controlled shutdown*, and has *lost directories* when its
  replicas name directories it no longer registers;
- a directory is *lost* when its broker no longer registers it, and offline while that broker is fenced.

Each state's *since* is the published point where its current run began, with the records that made it.
Everything comes from one pass of ``metalog.replay.changes`` over the log up to the point (a ``Timeline``), and
the point is a state Kafka's loader published (``ReplayResult``).
"""

from __future__ import annotations

import re

from metalog.errors import MetalogError
from metalog.replay.history import MetadataHistory
from metalog.replay.points import ReplayResult
from metalog.replay.why.answer import Answer, Condition, Link, Since, render
from metalog.replay.why.broker import why_broker
from metalog.replay.why.directory import why_directory
from metalog.replay.why.partition import parse_partition, why_partition

__all__ = ["Answer", "Condition", "Link", "Since", "ask", "parse_partition", "render", "why_broker", "why_directory",
           "why_partition"]


def ask(history: MetadataHistory, result: ReplayResult, question: str) -> Answer:
    """``TOPIC-N``, ``broker N`` or ``directory UUID`` (as the shell takes it)."""
    words = question.split()
    if len(words) == 2 and words[0] == "broker":
        if not re.fullmatch(r"-?\d+", words[1]):
            raise MetalogError(f"not a broker id: {words[1]!r}")
        return why_broker(history, result, int(words[1]))
    if len(words) == 2 and words[0] in ("directory", "dir"):
        return why_directory(history, result, words[1])
    if len(words) == 1:
        return why_partition(history, result, *parse_partition(words[0]))
    raise MetalogError(f"why what? {question!r} (give TOPIC-N, broker N or directory UUID)")
