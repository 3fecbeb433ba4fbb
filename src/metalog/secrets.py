"""What metalog never prints unless asked: the secrets a metadata log holds, and the one rule every printer applies.

A metadata log holds two kinds of secret:

- **SCRAM credentials** (``UserScramCredentialRecord``): the salt, the stored key and the server key. With them a
  password can be attacked offline, and with the stored key a client can log in as the user (RFC 5802). Kafka's
  own shell prints them as ``[redacted]`` (``ScramCredentialDataNode`` under ``MetadataNodeRedactionCriteria``).
- **The values of sensitive configs** (``ConfigRecord``): the configs Kafka defines with type
  ``ConfigDef.Type.PASSWORD``, which ``kafka-configs --describe`` shows as ``sensitive=true`` and no value, and
  Kafka's shell as ``[redacted]``. A ZooKeeper cluster kept them encrypted with ``password.encoder.secret``; the
  migration to KRaft writes them into the metadata log in the clear.

A ``DelegationTokenRecord`` holds no secret: a token's HMAC (its password) is not in the log but computed from
its id with ``delegation.token.secret.key``, a broker config, which is itself redacted here.

``Secrets`` is the policy a printer is given: ``KEPT`` (the default everywhere: each secret shown as
``[redacted]``) or ``SHOWN`` (``--show-secrets``). Every printer of a config value goes through
``Secrets.config``, every printer of a record's fields through ``Secrets.record``; the codec's own ``encode``,
``decode`` and ``explain`` are the wire and show everything.

Which config names are sensitive (``sensitive_config``), a name compared in lower case:

1. a name in ``PASSWORD_CONFIGS``, the configs Kafka defines with type PASSWORD for a broker (each entry names
   the Kafka class that defines it; no topic, group or client-metrics config is of that type);
2. the same name after any prefix ending in a dot: a listener's override, ``listener.name.<listener>.`` and
   ``listener.name.<listener>.<sasl mechanism>.`` (Kafka's ``DynamicBrokerConfig.brokerConfigSynonyms`` gives
   it the type of the name it overrides), and a client's prefix such as a remote log manager's
   ``remote.log.metadata.common.client.`` or a plugin's own;
3. a name that holds ``password`` (Kafka's ``KafkaConfigSchema.isSensitive``: a key whose upper-cased name
   contains ``PASSWORD`` is sensitive whatever its type).

Where metalog differs: Kafka's shell and ``kafka-configs`` also hide the value of every name their Kafka does not
define (a plugin's config, a config of a newer release), since they cannot tell its type. metalog shows such a
value unless rule 2 or 3 makes it sensitive: it cannot know which names the Kafka that wrote the log defines,
and hiding every name outside one release's list would hide most of a log's configs from an operator.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

REDACTED = "[redacted]"  # Kafka's shell's word for a value it does not show

# The configs Kafka defines with ConfigDef.Type.PASSWORD, each with the class that defines it.
PASSWORD_CONFIGS: Mapping[str, str] = {
    "ssl.key.password": "SslConfigs, BrokerSecurityConfigs",
    "ssl.keystore.password": "SslConfigs, BrokerSecurityConfigs",
    "ssl.keystore.key": "SslConfigs, BrokerSecurityConfigs",
    "ssl.keystore.certificate.chain": "SslConfigs, BrokerSecurityConfigs",
    "ssl.truststore.password": "SslConfigs, BrokerSecurityConfigs",
    "ssl.truststore.certificates": "SslConfigs, BrokerSecurityConfigs",
    "sasl.jaas.config": "SaslConfigs, BrokerSecurityConfigs",
    "sasl.oauthbearer.client.credentials.client.secret": "SaslConfigs (KIP-1139, Kafka 4.1)",
    "sasl.oauthbearer.assertion.private.key.passphrase": "SaslConfigs (KIP-1139, Kafka 4.1)",
    "password.encoder.secret": "PasswordEncoderConfigs",
    "password.encoder.old.secret": "PasswordEncoderConfigs",
    "delegation.token.secret.key": "DelegationTokenManagerConfigs",
    "delegation.token.master.key": "KafkaConfig (its name before KAFKA-10692, deprecated)",
    "zookeeper.ssl.keystore.password": "ZkConfigs",
    "zookeeper.ssl.truststore.password": "ZkConfigs",
}

# The fields of a record that are secrets, by the record's name, as the codec's JSON form names them.
SECRET_FIELDS: Mapping[str, tuple[str, ...]] = {
    "UserScramCredentialRecord": ("salt", "storedKey", "serverKey"),
}
_CONFIG_RECORD = "ConfigRecord"


def sensitive_config(name: str) -> bool:
    """Whether a config's value is a secret (the rules in the module's doc; the resource type does not matter)."""
    lowered = name.lower()
    if "password" in lowered or lowered in PASSWORD_CONFIGS:
        return True
    return any(lowered.endswith("." + secret) for secret in PASSWORD_CONFIGS)


@dataclass(frozen=True)
class Secrets:
    """Whether a printer shows secrets (``SHOWN``) or ``[redacted]`` in their place (``KEPT``)."""

    shown: bool

    def config(self, name: str, value: str | None) -> str | None:
        """A config's value as printed: ``[redacted]`` for a sensitive one (None, a deleted value, stays None)."""
        if value is None or self.shown or not sensitive_config(name):
            return value
        return REDACTED

    def secret(self, value: Any) -> Any:
        """A value that is always a secret (a salt, a key): itself when shown, else ``[redacted]``."""
        return value if self.shown else REDACTED

    def hides(self, message_name: str, data: Mapping[str, Any]) -> bool:
        """Whether ``record`` would hide something of this record (its JSON form ``data``)."""
        if self.shown:
            return False
        if message_name == _CONFIG_RECORD:
            return data.get("value") is not None and sensitive_config(str(data.get("name", "")))
        return message_name in SECRET_FIELDS

    def record(self, message_name: str, data: dict[str, Any]) -> dict[str, Any]:
        """A record's fields in the codec's JSON form, its secrets ``[redacted]`` (a new dict when any is)."""
        if not self.hides(message_name, data):
            return data
        out = dict(data)
        if message_name == _CONFIG_RECORD:
            out["value"] = REDACTED
        for field in SECRET_FIELDS.get(message_name, ()):
            if field in out:
                out[field] = REDACTED
        return out


KEPT = Secrets(shown=False)
SHOWN = Secrets(shown=True)
