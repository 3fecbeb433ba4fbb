"""The numbers and points a person types, checked against the field each one fills: argparse ``type=`` callables.

An option's number ends in a Kafka field (a broker id is an int32, an offset an int64, an epoch a non-negative
int32) or in a count that must be positive. Checked here, when argparse reads it, a number out of range is one
line naming the option (``argument --broker: 99999999999999999999 is out of range: a broker id is an int32,
-2147483648 to 2147483647``), never an OverflowError or struct.error from deep inside. Seconds are finite and
above zero; nan and inf are refused.
"""

from __future__ import annotations

import argparse
import math
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from metalog.codec.schema import INT_RANGES
from metalog.errors import PointError
from metalog.replay.points import Point, parse_point
from metalog.secrets import KEPT, SHOWN, Secrets

INT16_MAX = INT_RANGES["int16"][1]
INT32_MIN, INT32_MAX = INT_RANGES["int32"]
INT64_MAX = INT_RANGES["int64"][1]
_INTEGER = re.compile(r"\s*[-+]?[0-9]+\s*")
_MAX_DIGITS = 40  # longer than any int64: out of range without converting (int() refuses 4,300 digits and more)


def integer(what: str, low: int, high: int, kind: str) -> Callable[[str], int]:
    """A ``type=`` for an integer option that fills ``what``, from ``low`` to ``high`` (``kind`` names the range:
    "an int32", "a positive int32", ...)."""

    def parse(text: str) -> int:
        if _INTEGER.fullmatch(text) is None:
            raise argparse.ArgumentTypeError(f"{text} is not an integer ({what}: {kind}, {low} to {high})")
        value = int(text) if len(text) <= _MAX_DIGITS else None
        if value is None or not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{text.strip()} is out of range: {what} is {kind}, {low} to {high}")
        return value

    parse.__name__ = what  # argparse names the type in its own messages
    return parse


def int32(what: str) -> Callable[[str], int]:
    return integer(what, INT32_MIN, INT32_MAX, "an int32")


def non_negative_int32(what: str) -> Callable[[str], int]:
    return integer(what, 0, INT32_MAX, "a non-negative int32")


def positive_int32(what: str) -> Callable[[str], int]:
    return integer(what, 1, INT32_MAX, "a positive int32")


def non_negative_int64(what: str) -> Callable[[str], int]:
    return integer(what, 0, INT64_MAX, "a non-negative int64")


def positive_int64(what: str) -> Callable[[str], int]:
    return integer(what, 1, INT64_MAX, "a positive int64")


def seconds(what: str, most: float) -> Callable[[str], float]:
    """A ``type=`` for a number of seconds above 0 and at most ``most`` (nan, inf and 0 refused)."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text} is not a number of seconds") from None
        if not (math.isfinite(value) and 0 < value <= most):
            raise argparse.ArgumentTypeError(f"{text.strip()}: {what} is a number of seconds above 0 and at most "
                                             f"{most:g}")
        return value

    parse.__name__ = what
    return parse


# the fields options fill, each once
BROKER_ID = int32("a broker id")
PARTITION_ID = non_negative_int32("a partition id")
NODE_ID = non_negative_int32("a node id")
LEADER_EPOCH = non_negative_int32("a leader epoch")
REPLICATION_FACTOR = integer("a replication factor", INT_RANGES["int16"][0], INT16_MAX, "an int16")
API_VERSION = integer("a message version", 0, INT16_MAX, "a non-negative int16")


# ---- points: the POINT grammar every verb reads (metalog.replay.points) --------------------------------------
POINT_HELP = "an offset, a TIME (ISO 8601, or epoch milliseconds written with ms), start or end"
STATE_HELP = "an offset, a TIME (ISO 8601, or epoch milliseconds written with ms) or end"  # (start: no state)


def point(text: str) -> Point:
    """A ``type=`` for ``--at``, ``--from`` and ``--to``: ``parse_point``, its error naming the option."""
    try:
        return parse_point(text)
    except PointError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


point.__name__ = "POINT"


@contextmanager
def resolving(option: str) -> Iterator[None]:
    """A point that names nothing in the log (past its end, before its first batch, inside nothing Kafka's
    loader published) is one line naming the option: ``--to: offset 99 is past the end of the log``."""
    try:
        yield
    except PointError as e:
        raise PointError(f"{option}: {e}") from None


# ---- secrets: --show-secrets (metalog.secrets) -----------------------------------------------------------------
def show_secrets(parser: argparse.ArgumentParser) -> None:
    """``--show-secrets`` for a verb that can print a secret (SCRAM salts and keys, sensitive config values)."""
    parser.add_argument("--show-secrets", action="store_true",
                        help="show SCRAM salts and keys and the values of sensitive configs (password-type, "
                             "sasl.jaas.config, ...) instead of [redacted]")


def secrets_of(args: argparse.Namespace) -> Secrets:
    return SHOWN if getattr(args, "show_secrets", False) else KEPT


def log_directory(path: str, verb: str, instead: str = "") -> None:
    """A verb that writes to a log or follows one refuses a single ``.checkpoint`` file (which the reading verbs
    open, as kafka-metadata-shell --snapshot does) in one line naming it."""
    from pathlib import Path

    from metalog.errors import LogError
    from metalog.log.files import METADATA_PARTITION_DIR
    from metalog.log.snapshot_files import SUFFIX

    if Path(path).suffix == SUFFIX and not Path(path).is_dir():
        raise LogError(f"a single snapshot file, not a log: {verb} needs a log directory (holding "
                       f"{METADATA_PARTITION_DIR}){instead}", file=path)
