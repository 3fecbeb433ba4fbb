"""Two clusters side by side (``metalog diff A B``): compared by name, since two clusters share no ids; each kind
of difference found, and nothing else."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from metalog.cli.main import main
from metalog.codec import Uuid
from metalog.codec.framing import encode_metadata_record
from metalog.log import Durability, LogConfig, MetadataLog, Mode
from metalog.log.builder import build_data_batch
from metalog.replay.compare import compare_images, render_compare
from metalog.secrets import REDACTED, SHOWN
from tests.state.test_jsonimage import build, quota, rec

TOPIC, BROKER = 2, 4


def topic(name: str, tid: Uuid, partitions: int, rf: int) -> list[Any]:
    out = [rec("TopicRecord", name=name, topic_id=tid)]
    out += [rec("PartitionRecord", partition_id=p, topic_id=tid, replicas=list(range(1, rf + 1)),
                isr=list(range(1, rf + 1)), leader=1) for p in range(partitions)]
    return out


def acl(acl_id: Uuid, principal: str, operation: int = 3) -> Any:
    return rec("AccessControlEntryRecord", id=acl_id, resource_type=2, resource_name="orders", pattern_type=3,
               principal=principal, host="*", operation=operation, permission_type=3)


def config(rt: int, name: str, key: str, value: str) -> Any:
    return rec("ConfigRecord", resource_type=rt, resource_name=name, name=key, value=value)


def cluster(seed: int, *extra: Any) -> list[Any]:
    """A cluster: the same names as any other made here, its own ids (from ``seed``)."""
    return [rec("FeatureLevelRecord", name="metadata.version", feature_level=17),
            *topic("orders", Uuid.of(seed, 1), 3, 2), config(TOPIC, "orders", "retention.ms", "3600000"),
            acl(Uuid.of(seed, 2), "User:alice"), quota([("user", "alice")], "producer_byte_rate", 1024.0),
            rec("UserScramCredentialRecord", name="alice", mechanism=1, salt=bytes([seed]) * 16,
                stored_key=b"k" * 32, server_key=b"s" * 32, iterations=4096), *extra]


def test_two_clusters_with_the_same_names_and_other_ids_are_identical() -> None:
    # topic ids, ACL ids and SCRAM salts are each cluster's own: none is a difference
    d = compare_images(build(*cluster(1)), build(*cluster(2)))
    assert d.identical and d.differences == []


def test_each_kind_of_difference() -> None:
    a = build(*cluster(1, *topic("gone", Uuid.of(1, 9), 1, 1), config(BROKER, "", "log.retention.ms", "1"),
                       rec("FeatureLevelRecord", name="group.version", feature_level=1)))
    b = build(*cluster(2, config(TOPIC, "orders", "retention.ms", "7200000"), *topic("orders", Uuid.of(2, 1), 6, 3),
                       acl(Uuid.of(2, 3), "User:bob", operation=4),
                       quota([("user", "alice")], "producer_byte_rate", 2048.0),
                       rec("UserScramCredentialRecord", name="bob", mechanism=2, salt=b"x" * 16, stored_key=b"k" * 32,
                           server_key=b"s" * 32, iterations=4096)))
    found = {(x.kind, x.what, x.field): (x.a, x.b) for x in compare_images(a, b).differences}
    assert found == {
        ("feature", "features", "group.version"): (1, None),
        ("topic", "gone", None): ({"partitions": 1, "replicationFactor": 1}, None),
        ("topic", "orders", "partitions"): (3, 6),
        ("topic", "orders", "replicationFactor"): (2, 3),
        ("config", "BROKER/", "log.retention.ms"): ("1", None),
        ("config", "TOPIC/orders", "retention.ms"): ("3600000", "7200000"),
        ("acl", "ALLOW User:bob from * WRITE TOPIC:LITERAL:orders", None):
            (None, "ALLOW User:bob from * WRITE TOPIC:LITERAL:orders"),
        ("quota", "user(alice)", "producer_byte_rate"): (1024.0, 2048.0),
        ("scram", "SCRAM-SHA-512 bob", None): (None, "SCRAM-SHA-512 bob"),
    }


def test_a_replication_factor_that_varies_within_a_topic() -> None:
    tid = Uuid.of(1, 1)
    a = build(rec("TopicRecord", name="t", topic_id=tid),
              rec("PartitionRecord", partition_id=0, topic_id=tid, replicas=[1, 2], isr=[1, 2], leader=1),
              rec("PartitionRecord", partition_id=1, topic_id=tid, replicas=[1, 2, 3], isr=[1], leader=1))
    b = build(*topic("t", Uuid.of(2, 1), 2, 3))
    assert [(x.field, x.a, x.b) for x in compare_images(a, b).differences] == [("replicationFactor", "2-3", 3)]


def test_a_sensitive_config_is_compared_and_shown_redacted() -> None:
    a = build(config(BROKER, "", "sasl.jaas.config", "one"))
    b = build(config(BROKER, "", "sasl.jaas.config", "two"))
    (kept,) = compare_images(a, b).differences
    assert (kept.a, kept.b) == (REDACTED, REDACTED)
    (shown,) = compare_images(a, b, SHOWN).differences
    assert (shown.a, shown.b) == ("one", "two")
    assert compare_images(a, a).identical


@settings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from(["orders", "payments", "audit", "logs"]), unique=True),
       st.lists(st.sampled_from(["orders", "payments", "audit", "logs"]), unique=True))
def test_the_topics_found_on_one_side_only(names_a: list[str], names_b: list[str]) -> None:
    a = build(*(r for i, n in enumerate(names_a) for r in topic(n, Uuid.of(1, i + 1), 1, 1)))
    b = build(*(r for i, n in enumerate(names_b) for r in topic(n, Uuid.of(2, i + 1), 1, 1)))
    d = compare_images(a, b)
    assert {x.what for x in d.of("topic")} == set(names_a) ^ set(names_b)
    assert all((x.a is None) == (x.what in names_b) for x in d.of("topic"))
    assert "\n".join(render_compare(d, "A", "B")).count("replicationFactor=1") == len(set(names_a) ^ set(names_b))


# ---- the verb ---------------------------------------------------------------------------------------------------
def write(root: Path, records: list[Any]) -> str:
    with MetadataLog.open(root, Mode.CREATE, config=LogConfig(durability=Durability.NONE)) as log:
        values = [encode_metadata_record(r, 0) for r in records]
        log.append_batch(build_data_batch(0, values, epoch=1, timestamp=1_700_000_000_000))
    return str(root)


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def test_diff_of_two_logs(tmp_path: Path) -> None:
    a = write(tmp_path / "a", cluster(1))
    b = write(tmp_path / "b", cluster(2, config(TOPIC, "orders", "retention.ms", "7200000")))
    code, out, _ = run("diff", a, b)
    assert code == 0 and out.splitlines()[2:] == [
        "configs: 1 differ",
        "  RESOURCE      KEY           A        B",
        "  TOPIC/orders  retention.ms  3600000  7200000"]
    code, out, _ = run("diff", a, b, "--json")
    assert code == 0 and json.loads(out)["identical"] is False
    code, out, _ = run("diff", a, a, "--json")
    assert code == 0 and json.loads(out)["identical"] is True


def test_one_log_needs_both_points(tmp_path: Path) -> None:
    a = write(tmp_path / "a", cluster(1))
    code, _, err = run("diff", a, "--from", "start")
    assert code == 1 and err == ("metalog: error: --to needed: the two points of the log to compare (or give two "
                                 "log directories, to compare two clusters)\n")
