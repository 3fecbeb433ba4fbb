"""Secrets kept (``metalog.secrets``): SCRAM salts and keys and the values of sensitive configs appear in no output
of any verb, in any form a person would recognise (the text, its hex, the base64 a JSON form writes bytes in),
unless ``--show-secrets`` is given; with it, each output shows every secret it covers.

A log written here holds sensitive configs of brokers, the cluster default and a topic (Kafka's password-type
names, behind listener and client prefixes, names that hold "password"), a secret changed to another, and SCRAM
credentials of random bytes, beside a config that is no secret.
"""

from __future__ import annotations

import base64
import io
import json
import random
import string
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from metalog.cli.main import main
from metalog.codec import Uuid, message_class
from metalog.codec.framing import encode_metadata_record
from metalog.log import Durability, LogConfig, MetadataLog, Mode
from metalog.log.builder import build_data_batch
from metalog.secrets import KEPT, PASSWORD_CONFIGS, REDACTED, SHOWN, sensitive_config
from tests.log.test_follow import Follower

TS = 1_700_000_000_000
TOPIC, BROKER = 2, 4
PLAIN = ("retention.ms", "604800017")  # no secret: shown always


def rec(name: str, /, **fields: Any) -> Any:
    return message_class(name)(**fields)


# ---- the rule ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", [*PASSWORD_CONFIGS, "listener.name.internal.ssl.key.password",
                                  "listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config",
                                  "listener.name.client.ssl.keystore.certificate.chain",
                                  "remote.log.metadata.common.client.sasl.jaas.config",
                                  "my.plugin.password", "Some.PassWord", "SASL.JAAS.CONFIG"])
def test_sensitive_configs(name: str) -> None:
    # Kafka's PASSWORD-type names, behind any prefix (DynamicBrokerConfig.brokerConfigSynonyms: a listener's
    # override has its name's type), and any name holding "password" (KafkaConfigSchema.isSensitive)
    assert sensitive_config(name)
    assert KEPT.config(name, "s3cret") == REDACTED and SHOWN.config(name, "s3cret") == "s3cret"
    assert KEPT.config(name, None) is None  # a deleted value


@pytest.mark.parametrize("name", ["retention.ms", "min.insync.replicas", "ssl.keystore.location",
                                  "listener.name.internal.ssl.keystore.type", "sasl.enabled.mechanisms",
                                  "ssl.truststore.type", "xsasl.jaas.config", "cleanup.policy"])
def test_configs_that_are_no_secret(name: str) -> None:
    assert not sensitive_config(name)
    assert KEPT.config(name, "v") == "v"


# ---- every output of every verb ---------------------------------------------------------------------------------
@dataclass
class Story:
    """What a log holds: ``final`` the secrets of its last state, ``gone`` those only in its history."""

    configs: list[tuple[int, str, str, str]]  # (resource type, resource name, config name, value), in log order
    scram: list[tuple[str, int, bytes, bytes, bytes]]  # (user, mechanism, salt, stored key, server key)

    def config_values(self, final: bool) -> set[str]:
        last: dict[tuple[int, str, str], str] = {}
        for rt, rn, name, value in self.configs:
            last[(rt, rn, name)] = value
        values = set(last.values()) if final else {c[3] for c in self.configs}
        return {v for v in values if v != PLAIN[1]}

    def published_values(self, resource: str | None = None) -> set[str]:
        """The config values some published state holds (of ``resource``'s configs only, if named): the last of
        each config at the end of each of the two batches ``write`` makes (a value overwritten within its batch was
        never published, so no history shows it; the log dump does). Per resource: one value can be set on two
        resources and published for one of them only (drawn values repeat when hypothesis shrinks them)."""
        half = len(self.configs) // 2
        last: dict[tuple[int, str, str], str] = {}
        values: set[str] = set()
        for batch in (self.configs[:half], self.configs[half:]):
            for rt, rn, name, value in batch:
                last[(rt, rn, name)] = value
            values |= {v for (rt, rn, _), v in last.items() if resource in (None, _resource(rt, rn))}
        return {v for v in values if v != PLAIN[1]}

    def scram_bytes(self) -> set[bytes]:
        return {b for _, _, *keys in self.scram for b in keys}

    def resources(self) -> set[str]:
        return {_resource(rt, rn) for rt, rn, _, _ in self.configs}


def write(root: Path, story: Story) -> Path:
    tid = Uuid.of(7, 1)
    first = [rec("FeatureLevelRecord", name="metadata.version", feature_level=17),
             rec("TopicRecord", name="t", topic_id=tid),
             rec("PartitionRecord", partition_id=0, topic_id=tid, replicas=[1], isr=[1], leader=1)]
    first += [rec("UserScramCredentialRecord", name=u, mechanism=m, salt=s, stored_key=k, server_key=v,
                  iterations=4096) for u, m, s, k, v in story.scram]
    configs = [rec("ConfigRecord", resource_type=rt, resource_name=rn, name=n, value=v)
               for rt, rn, n, v in story.configs]
    half = len(configs) // 2
    with MetadataLog.open(root, Mode.CREATE, config=LogConfig(durability=Durability.NONE)) as log:
        for base, batch in ((0, first + configs[:half]), (len(first) + half, configs[half:])):
            if batch:
                values = [encode_metadata_record(r, 0) for r in batch]
                log.append_batch(build_data_batch(base, values, epoch=1, timestamp=TS + base))
    return root


def run(*argv: str) -> str:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(argv))
    assert code == 0, err.getvalue()
    return out.getvalue() + err.getvalue()


def forms_of_text(value: str) -> list[str]:
    return [value, value.encode().hex()]


def forms_of_bytes(value: bytes) -> list[str]:
    return [value.hex(), base64.b64encode(value).decode()]


def outputs(log: Path, story: Story, *flag: str) -> dict[str, tuple[str, set[str], bool]]:
    """Each output: its text, the config values it covers and whether it covers the SCRAM credentials."""
    d, final, ever = str(log), story.config_values(final=True), story.config_values(final=False)
    published = story.published_values()
    out = {
        "replay": (run("replay", d, *flag), final, False),
        "replay json": (run("replay", d, "--format", "json", *flag), final, True),
        "diff": (run("diff", d, "--from", "start", "--to", "end", *flag), final, False),
        "diff json": (run("diff", d, "--from", "start", "--to", "end", "--json", *flag), final, False),
        "shell cat": (run("shell", d, *flag, "-c", "tree /image/configs; tree /image/scram; cat /image/configs/*/*"),
                      final, True),
        "shell history": (run("shell", d, *flag, "-c", "history /image/configs; history /image/scram; "
                                                       "history /image"), published, True),
        "history topic": (run("history", d, "--topic", "t", *flag), story.published_values("TOPIC/t"), False),
        "log dump": (run("log", "dump", d, *flag), ever, True),
        "log dump json": (run("log", "dump", d, "--json", *flag), ever, True),
        "log dump payload": (run("log", "dump", d, "--skip-record-metadata", *flag), ever, True),
    }
    for resource in sorted(story.resources()):
        covered = story.published_values(resource)
        out[f"history {resource}"] = (run("history", d, "--config", resource, *flag), covered, False)
        out[f"history {resource} json"] = (run("history", d, "--config", resource, "--json", *flag), covered, False)
    return out


def _resource(resource_type: int, name: str) -> str:
    """A config resource as ``history --config`` names it: TOPIC/t, BROKER/1, BROKER/ (the cluster default)."""
    return f"{'TOPIC' if resource_type == TOPIC else 'BROKER'}/{name}"


def check(log: Path, story: Story) -> None:
    secrets = [f for v in story.config_values(final=False) for f in forms_of_text(v)]
    secrets += [f for b in story.scram_bytes() for f in forms_of_bytes(b)]
    for name, (text, _, _) in outputs(log, story).items():
        assert PLAIN[1] in text or name.startswith("history") or name == "shell history", name
        leaked = [s for s in secrets if s in text]
        assert not leaked, f"{name} shows {leaked}"
    for name, (text, values, scram) in outputs(log, story, "--show-secrets").items():
        missing = [v for v in values if v not in text]
        if scram:
            missing += [b.hex() for b in story.scram_bytes() if not any(f in text for f in forms_of_bytes(b))]
        assert not missing, f"{name} --show-secrets does not show {missing}"


SALT, STORED, SERVER = bytes(range(20, 52)), bytes(range(60, 92)), bytes(range(100, 132))
FIXED = Story(
    configs=[(BROKER, "1", "listener.name.internal.ssl.key.password", "keypassAAAA1111"),
             (BROKER, "", "sasl.jaas.config", "jaasBBBB2222"), (TOPIC, "t", *PLAIN),
             (BROKER, "", "password.encoder.secret", "encoderCCCC3333"),
             (BROKER, "1", "listener.name.internal.ssl.key.password", "keypassDDDD4444"),  # changed
             (TOPIC, "t", "my.plugin.password", "pluginEEEE5555")],
    scram=[("alice", 1, SALT, STORED, SERVER)])


def test_no_secret_in_any_output_without_show_secrets(tmp_path: Path) -> None:
    check(write(tmp_path / "log", FIXED), FIXED)


def test_a_secret_changed_is_a_change_shown_redacted(tmp_path: Path) -> None:
    log = str(write(tmp_path / "log", FIXED))
    rows = [line for line in run("history", log, "--config", "BROKER/1").splitlines() if "key.password" in line]
    assert len(rows) == 2 and rows[1].endswith(f"{REDACTED} -> {REDACTED}")
    cells = [json.loads(line) for line in run("history", log, "--config", "BROKER/1", "--json").splitlines()]
    assert [(c["before"], c["after"]) for c in cells] == [(None, REDACTED), (REDACTED, REDACTED)]
    node = run("shell", log, "-c", "history /image/configs/BROKER:1")
    assert node.count(f"{REDACTED} -> {REDACTED}") == 1 and node.count(f"- -> {REDACTED}") == 1


def test_the_shell_prints_scram_as_kafkas_shell_does(tmp_path: Path) -> None:
    log = str(write(tmp_path / "log", FIXED))
    assert run("shell", log, "-c", "cat /image/scram/SCRAM-SHA-256/alice") == (
        "ScramCredentialData(salt=[redacted], storedKey=[redacted], serverKey=[redacted], iterations=[redacted])\n")
    assert run("shell", log, "--show-secrets", "-c", "cat /image/scram/SCRAM-SHA-256/alice") == (
        f"ScramCredentialData(salt={SALT.hex()}, storedKey={STORED.hex()}, serverKey={SERVER.hex()}, "
        "iterations=4096)\n")
    assert run("shell", log, "cat", "/image/configs/BROKER/sasl.jaas.config") == f"{REDACTED}\n"


@pytest.mark.slow  # (six processes of its own)
def test_log_follow_keeps_secrets(tmp_path: Path) -> None:
    log = str(write(tmp_path / "log", FIXED))
    secrets = [f for v in FIXED.config_values(final=False) for f in forms_of_text(v)]
    secrets += [f for b in FIXED.scram_bytes() for f in forms_of_bytes(b)]
    for mode, count in (([], 12), (["--json"], 2), (["--changes"], 14)):
        for flag in ([], ["--show-secrets"]):
            follower = Follower(log, "--from", "start", "--poll", "0.05", *mode, *flag)
            try:
                lines = [follower.next() for _ in range(count)]
            finally:
                assert follower.stop() == 0
            text = "\n".join(lines)
            shown = [s for s in secrets if s in text]
            assert (shown != []) == bool(flag), (mode, flag, shown)


_NAMES = st.one_of(
    st.sampled_from(sorted(PASSWORD_CONFIGS)),
    st.builds(lambda listener, name: f"listener.name.{listener}.{name}",
              st.text("abcdefgh_", min_size=1, max_size=8), st.sampled_from(sorted(PASSWORD_CONFIGS))),
    st.builds(lambda prefix: f"{prefix}.password", st.text("abcdefgh", min_size=1, max_size=8)),
)
# secrets as random as real ones (a run of zeros would be found in any hex dump, secret or not)
_VALUES = st.builds(lambda seed, n: "".join(random.Random(seed).choices(string.ascii_letters + string.digits, k=n)),
                    st.integers(), st.integers(16, 40))
_RESOURCES = st.sampled_from([(BROKER, "1"), (BROKER, ""), (TOPIC, "t")])
_CONFIGS = st.lists(st.builds(lambda r, n, v: (*r, n, v), _RESOURCES, _NAMES, _VALUES), min_size=1, max_size=6)
_KEYS = st.builds(lambda seed, n: random.Random(seed).randbytes(n), st.integers(), st.integers(16, 64))
_SCRAM = st.lists(st.tuples(st.sampled_from(["alice", "bob", "carol"]), st.sampled_from([1, 2]), _KEYS, _KEYS,
                            _KEYS), max_size=3, unique_by=lambda c: (c[0], c[1]))


@pytest.mark.slow
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(configs=_CONFIGS, scram=_SCRAM)
# one value set on a topic, overwritten in its batch (never published there), and set on a broker: shown in the
# broker's history only (drawn values repeat once hypothesis shrinks their seeds; the old expectation failed here)
@example(configs=[(TOPIC, "t", "a.password", "Aq3Zr8Lm0Pv7Xc2N"), (TOPIC, "t", "a.password", "Bt5Yq1Wk9Hs4Jd6M"),
                  (BROKER, "1", "b.password", "Aq3Zr8Lm0Pv7Xc2N")], scram=[])
def test_random_secrets_appear_only_with_show_secrets(tmp_path_factory: pytest.TempPathFactory,
                                                      configs: list[tuple[int, str, str, str]],
                                                      scram: list[tuple[str, int, bytes, bytes, bytes]]) -> None:
    story = Story([*configs, (TOPIC, "t", *PLAIN)], scram)
    check(write(tmp_path_factory.mktemp("secrets") / "log", story), story)
