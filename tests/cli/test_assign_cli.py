"""``metalog assign`` as a person runs it."""

from __future__ import annotations

import json

import pytest

from metalog.cli.main import main
from tests.conftest import load_vectors

VECTORS = load_vectors()["adminUtilsAssignReplicasToBrokers"]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _brokers_arg(vector: dict) -> str:
    return ",".join(f"{b['id']}:{b['rack']}" if b["rack"] else str(b["id"]) for b in vector["brokers"])


@pytest.mark.parametrize("vector", VECTORS)
def test_json_matches_kafka(capsys: pytest.CaptureFixture[str], vector: dict) -> None:
    code, out, _ = run(capsys, "assign", "--brokers", _brokers_arg(vector), "--partitions",
                       str(vector["nPartitions"]), "--replication-factor", str(vector["replicationFactor"]),
                       "--start-index", str(vector["fixedStartIndex"]),
                       "--start-partition", str(vector["startPartitionId"]), "--json")
    assert code == 0
    assert out.endswith("\n") and json.loads(out) == vector["assignment"]
    assert out.startswith('{"0": [')


def test_table(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "assign", "--brokers", "0:rack1,1:rack3,2:rack3,3:rack2,4:rack2,5:rack1",
                       "--partitions", "7", "--replication-factor", "3", "--start-index", "0")
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == "rack-alternated broker list: 0, 3, 1, 5, 4, 2"
    assert lines[1].split() == ["PARTITION", "LEADER", "REPLICAS", "RACKS"]
    assert lines[2].split() == ["0", "0", "0,3,1", "rack1,rack2,rack3"]
    assert lines[8].split() == ["6", "0", "0,4,2", "rack1,rack2,rack3"]
    assert lines[-1].startswith("per broker: 0: 4 replicas/2 leaders, 1: 3 replicas/1 leaders")


def test_seed_makes_a_random_start_reproducible(capsys: pytest.CaptureFixture[str]) -> None:
    args = ("assign", "--brokers", "0,1,2,3,4,5,6", "--partitions", "5", "--replication-factor", "2", "--json")
    outs = {run(capsys, *args, "--seed", "3")[1] for _ in range(3)}
    assert len(outs) == 1


@pytest.mark.parametrize(("argv", "message"), [
    (["--brokers", "0:rack1,1:rack3,2", "--partitions", "3", "--replication-factor", "2"],
     "Not all brokers have rack information for replica rack aware assignment."),
    (["--brokers", "0,1", "--partitions", "0", "--replication-factor", "1"],
     "Number of partitions must be larger than 0."),
    (["--brokers", "0,1", "--partitions", "2", "--replication-factor", "3"],
     "Replication factor: 3 larger than available brokers: 2."),
    (["--brokers", "0,x", "--partitions", "2", "--replication-factor", "1"],
     "--brokers: not a broker id: 'x' (expected ID or ID:RACK)"),
])
def test_errors_are_one_line(capsys: pytest.CaptureFixture[str], argv: list[str], message: str) -> None:
    code, out, err = run(capsys, "assign", *argv)
    assert (code, out, err) == (1, "", f"metalog: error: {message}\n")


def test_help_has_examples(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["assign", "--help"])
    out = capsys.readouterr().out
    assert info.value.code == 0
    assert "examples:" in out and "--replication-factor 3" in out and "--start-partition" in out
