"""``metalog codec``: JSON lines in, one answer line per input line out, errors in-band."""

from __future__ import annotations

import io
import json
import sys

import pytest

from metalog.cli.main import main

FEATURE = {"name": "metadata.version", "featureLevel": 17}
FEATURE_HEX = "116d657461646174612e76657273696f6e001100"


def run(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], argv: list[str],
        stdin: str = "") -> tuple[int, list[str], str]:
    monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out.splitlines(), err


def test_encode_and_decode(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    line = json.dumps({"name": "FeatureLevelRecord", "version": 0, "data": FEATURE})
    code, out, _ = run(monkeypatch, capsys, ["codec", "encode"], line + "\n\n" + line + "\n")
    assert code == 0 and [json.loads(x) for x in out] == [{"hex": FEATURE_HEX}] * 2
    line = json.dumps({"name": "FeatureLevelRecord", "version": 0, "hex": FEATURE_HEX})
    code, out, _ = run(monkeypatch, capsys, ["codec", "decode"], line)
    assert code == 0 and json.loads(out[0]) == {"data": FEATURE}


def test_framed(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    line = json.dumps({"name": "FeatureLevelRecord", "version": 0, "data": FEATURE})
    code, out, _ = run(monkeypatch, capsys, ["codec", "encode", "--framed"], line)
    framed = json.loads(out[0])["hex"]
    assert framed == "010c00" + FEATURE_HEX
    code, out, _ = run(monkeypatch, capsys, ["codec", "decode", "--framed"], json.dumps({"hex": framed}))
    assert json.loads(out[0]) == {"name": "FeatureLevelRecord", "version": 0, "data": FEATURE}


def test_errors_are_in_band_and_the_exit_status_says_so(monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    lines = [
        json.dumps({"name": "FeatureLevelRecord", "version": 0, "data": FEATURE}),
        "not json",
        json.dumps({"name": "FeatureLevelRecrd", "version": 0, "data": {}}),
        json.dumps({"name": "FeatureLevelRecord", "version": 9, "data": FEATURE}),
        json.dumps({"name": "FeatureLevelRecord", "version": 0, "hex": "zz"}),
        json.dumps({"name": "FeatureLevelRecord", "version": 0, "hex": FEATURE_HEX[:-2]}),
    ]
    code, out, err = run(monkeypatch, capsys, ["codec", "decode"], "\n".join(lines[:1]).replace('"data"', '"x"'))
    assert code == 1
    code, out, err = run(monkeypatch, capsys, ["codec", "encode"], "\n".join(lines[:4]))
    answers = [json.loads(x) for x in out]
    assert code == 1 and len(answers) == 4 and answers[0] == {"hex": FEATURE_HEX}
    assert answers[1]["error"].startswith("line 2: ")
    assert "did you mean FeatureLevelRecord" in answers[2]["error"]
    assert "unsupported version 9" in answers[3]["error"]
    assert "3 line(s) failed" in err
    code, out, _ = run(monkeypatch, capsys, ["codec", "decode"], "\n".join(lines[4:]))
    answers = [json.loads(x) for x in out]
    assert code == 1 and "not hex" in answers[0]["error"]
    assert "FeatureLevelRecord v0" in answers[1]["error"] and "byte 19" in answers[1]["error"]


def test_explain(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(monkeypatch, capsys, ["codec", "explain", "FeatureLevelRecord", "0", FEATURE_HEX])
    assert code == 0
    assert out[0].split() == ["offset", "len", "field", "type", "hex", "value"]
    assert "FeatureLevel" in out[3] and "0011" in out[3] and out[3].rstrip().endswith("17")
    code, out, _ = run(monkeypatch, capsys, ["codec", "explain", "FeatureLevelRecord", "0", "-"], FEATURE_HEX[:-2])
    assert code == 1 and "truncated" in out[-1]
    code, _, err = run(monkeypatch, capsys, ["codec", "explain", "Nope", "0", "00"])
    assert code == 1 and "unknown message 'Nope'" in err


def test_list(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(monkeypatch, capsys, ["codec", "list"])
    assert code == 0 and len(out) == 45
    assert any(line.split()[:4] == ["PartitionRecord", "metadata", "3", "0-2"] for line in out)
