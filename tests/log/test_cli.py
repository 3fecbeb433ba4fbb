"""``metalog log`` and ``metalog snapshot`` on Kafka's files."""

from __future__ import annotations

import json
import shutil

import pytest

from metalog.cli.main import main
from tests.cli.running import run


def test_dump_text_like_kafka_dump_log(jbod_dir, capsys):
    rc, out, _ = run(["log", "dump", str(jbod_dir)], capsys)
    lines = out.splitlines()
    assert rc == 0
    assert lines[0] == f"Dumping {jbod_dir / '__cluster_metadata-0' / '00000000000000000000.log'}"
    assert lines[1] == "Log starting offset: 0"
    assert lines[2] == ("baseOffset: 0 lastOffset: 0 count: 1 baseSequence: -1 lastSequence: -1 producerId: -1 "
                        "producerEpoch: -1 partitionLeaderEpoch: 1 isTransactional: false isControl: true "
                        "deleteHorizonMs: OptionalLong.empty position: 0 CreateTime: 1700000000000 size: 91 "
                        "magic: 2 compresscodec: none crc: 3881388376 isvalid: true")
    assert lines[3].startswith("| offset: 0 CreateTime: 1700000000000 keySize: 4 valueSize: 19 sequence: -1 "
                               "headerKeys: [] LeaderChange: {\"version\":0,\"leaderId\":3000,")
    assert ('| offset: 1 CreateTime: 1700000001000 keySize: -1 valueSize: 23 sequence: -1 headerKeys: [] '
            'payload: {"type":"FEATURE_LEVEL_RECORD","version":0,"data":{"name":"metadata.version",'
            '"featureLevel":17}}') in lines
    assert sum(line.startswith("| offset:") for line in lines) == 25


def test_dump_json_matches_kafkas_decoding(jbod_dir, kafka_vectors, capsys):
    rc, out, _ = run(["log", "dump", "--json", str(jbod_dir / "__cluster_metadata-0")], capsys)
    batches = [json.loads(line) for line in out.splitlines()]
    assert rc == 0 and len(batches) == 9
    for got, exp in zip(batches, kafka_vectors["scenarioJbod"]["batches"], strict=True):
        assert (got["baseOffset"], got["lastOffset"], got["count"], got["crc"], got["sizeInBytes"],
                got["isControl"], got["maxTimestamp"], got["compression"]) == (
            exp["baseOffset"], exp["lastOffset"], exp["recordCount"], exp["crc"], exp["sizeInBytes"],
            exp["isControlBatch"], exp["maxTimestamp"], exp["compression"])
        for rec, erec in zip(got["records"], exp["records"], strict=True):
            assert (rec["offset"], rec["key"], rec["value"]) == (erec["offset"], erec["keyHex"], erec["valueHex"])
            if got["isControl"]:
                assert rec["control"]["type"] == erec["controlType"]
            else:
                assert rec["payload"] == {"type": erec["type"], "version": erec["version"], "data": erec["data"]}


def test_dump_snapshot_and_trailing_garbage(jbod_dir, tmp_path, capsys):
    snap = jbod_dir / "snapshot-kraft-v1" / "00000000000000000025-0000000001.checkpoint"
    rc, out, _ = run(["log", "dump", str(snap)], capsys)
    assert rc == 0 and out.splitlines()[1] == "Snapshot end offset: 25, epoch: 1"
    assert 'SnapshotFooter: {"version":0}' in out and 'KRaftVersion: {"version":0,"kRaftVersion":1}' in out
    torn = tmp_path / "00000000000000000000.log"
    torn.write_bytes((jbod_dir / "__cluster_metadata-0" / "00000000000000000000.log").read_bytes()[:1900])
    rc, out, _ = run(["log", "dump", str(torn)], capsys)
    assert rc == 1 and out.splitlines()[-1] == "Found 151 invalid bytes at the end of 00000000000000000000.log"


def test_append_then_verify(tmp_path, capsys):
    lines = [json.dumps({"name": "NoOpRecord", "version": 0, "data": {}}),
             json.dumps({"name": "TOPIC_RECORD", "version": 0,
                         "data": {"name": "foo", "topicId": "UXyU9i5ARn6W00ON2taeWA"}}),
             json.dumps({"name": "FeatureLevelRecord", "version": 0,
                         "data": {"name": "metadata.version", "featureLevel": 17}})]
    rc, out, _ = run(["log", "append", "--create", "--batch-size", "2", "--epoch", "4", str(tmp_path)], capsys,
                     "\n".join(lines) + "\n")
    assert rc == 0
    assert [json.loads(x) for x in out.splitlines()] == [
        {"baseOffset": 0, "lastOffset": 1, "epoch": 4, "committed": True},
        {"baseOffset": 2, "lastOffset": 2, "epoch": 4, "committed": True}]
    rc, out, _ = run(["log", "verify", str(tmp_path)], capsys)
    size = (tmp_path / "__cluster_metadata-0" / "00000000000000000000.log").stat().st_size
    assert rc == 0 and out.strip().endswith(f"2 batches, 3 data records, 0 control records, {size} bytes, 0 "
                                            "snapshots: intact")
    rc, _, err = run(["log", "append", str(tmp_path)], capsys, '{"name": "NoSuchRecord", "version": 0, "data": {}}')
    assert rc == 1 and "input line 1" in err


def test_append_puts_the_quorums_control_messages_in_control_batches(tmp_path, capsys):
    """A KRaft leader writes LeaderChange (and KRaftVersion, Voters) in control batches of their own
    (LeaderState.appendStartOfEpochControlRecords): data records around them make batches of their own."""
    noop = json.dumps({"name": "NoOpRecord", "version": 0, "data": {}})
    lines = [json.dumps({"name": "LeaderChangeMessage", "version": 0, "data": {
                 "version": 0, "leaderId": 7, "voters": [{"voterId": 7}], "grantingVoters": [{"voterId": 7}]}}),
             json.dumps({"name": "KRaftVersionRecord", "version": 0, "data": {"version": 0, "kRaftVersion": 1}}),
             noop, noop]
    rc, out, _ = run(["log", "append", "--create", "--epoch", "3", str(tmp_path)], capsys, "\n".join(lines) + "\n")
    assert rc == 0 and [(b["baseOffset"], b["lastOffset"]) for b in map(json.loads, out.splitlines())] == \
        [(0, 1), (2, 3)]
    rc, out, _ = run(["log", "dump", str(tmp_path)], capsys)
    assert "baseOffset: 0 lastOffset: 1 count: 2" in out and "isControl: true" in out
    assert 'LeaderChange: {"version":0,"leaderId":7' in out and 'KRaftVersion: {"version":0,"kRaftVersion":1}' in out
    rc, _, err = run(["log", "append", str(tmp_path)], capsys, json.dumps(
        {"name": "SnapshotHeaderRecord", "version": 0, "data": {"version": 0, "lastContainedLogTimestamp": 0}}))
    assert rc == 1 and err == "metalog: error: input line 1: SnapshotHeaderRecord v0: not a metadata record\n"


def test_verify_fails_on_damage(jbod_dir, tmp_path, capsys):
    rc, out, _ = run(["log", "verify", str(jbod_dir)], capsys)
    assert rc == 0 and "intact" in out
    shutil.copytree(jbod_dir / "__cluster_metadata-0", tmp_path / "__cluster_metadata-0")
    seg = tmp_path / "__cluster_metadata-0" / "00000000000000000000.log"
    data = bytearray(seg.read_bytes())
    data[300] ^= 0x55
    seg.write_bytes(bytes(data))
    rc, out, _ = run(["log", "verify", str(tmp_path)], capsys)
    assert rc == 1 and f"{seg}, byte 194" in out and "CRC-32C mismatch" in out


def test_snapshot_list_and_verify(jbod_dir, capsys):
    v0, v1 = (jbod_dir / f"snapshot-kraft-v{k}" for k in (0, 1))
    rc, out, _ = run(["snapshot", "list", "--json", str(v0), str(v1)], capsys)
    rows = [json.loads(x) for x in out.splitlines()]
    assert rc == 0 and [(r["endOffset"], r["epoch"], r["records"], r["kraftVersion"]) for r in rows] == [
        (25, 1, 9, 0), (25, 1, 9, 1)]
    rc, out, _ = run(["snapshot", "verify", str(v1)], capsys)
    assert rc == 0 and "ok (3 batches, 9 data records, 3 control records, kraft.version 1" in out


def test_help_has_examples(capsys):
    for verb in (["log", "--help"], ["snapshot", "--help"]):
        with pytest.raises(SystemExit):
            main(verb)
        assert "examples:" in capsys.readouterr().out


def test_verify_reads_the_snapshots_too(jbod_dir, tmp_path, capsys):
    shutil.copytree(jbod_dir / "__cluster_metadata-0", tmp_path / "__cluster_metadata-0")
    snap = jbod_dir / "snapshot-kraft-v1" / "00000000000000000025-0000000001.checkpoint"
    shutil.copy(snap, tmp_path / "__cluster_metadata-0" / snap.name)
    rc, out, _ = run(["log", "verify", str(tmp_path)], capsys)
    assert rc == 0 and f"note: snapshot {snap.name}: 3 batches, 9 data records, 3 control records, kraft.version " \
        "1" in out
    assert out.rstrip().endswith("1 snapshots: intact")
    copy = tmp_path / "__cluster_metadata-0" / snap.name
    copy.write_bytes(copy.read_bytes()[:-20])  # the footer batch is cut short
    rc, out, _ = run(["log", "verify", str(tmp_path)], capsys)
    assert rc == 1 and f"PROBLEM: {copy}, byte " in out and out.rstrip().endswith("0 snapshots: 1 problem(s)")
