"""The old name of ``metalog.state.enums`` (Kafka's enumerations and constants), kept for code written against it."""

from metalog.state.enums import *  # noqa: F403
from metalog.state.enums import __all__  # noqa: F401
