"""metalog's message definitions: one ``Message`` per Kafka message spec."""

from __future__ import annotations

from metalog.codec.definitions import control, headers, metadata, rpc
from metalog.codec.schema import Message, Registry

REGISTRY = Registry()
REGISTRY.add(*metadata.ALL, *control.ALL, *rpc.ALL, *headers.ALL)

MESSAGES: dict[str, Message] = REGISTRY.messages
METADATA_BY_API_KEY: dict[int, Message] = {m.api_key: m for m in metadata.ALL if m.api_key is not None}
