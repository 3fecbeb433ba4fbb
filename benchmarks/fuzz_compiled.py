"""Fuzz the compiled codec readers: crashes, leaks and disagreements with the pure readers.

    python benchmarks/fuzz_compiled.py                    # 1,000,000 inputs (a few minutes on 2 cores)
    python benchmarks/fuzz_compiled.py --inputs 50000     # a quick look

Inputs are Kafka-written messages of every kind (tests/data/kafka/codec-random.jsonl) and the four benchmark
messages, mutated: bit flips, bytes that matter to lengths and varints (00 01 7f 80 ff), huge lengths, cuts,
insertions, deletions and splices of two messages, as bytes, bytearray or memoryview, read from byte 0 or from
inside a larger buffer, with direct slot stores for half of the run and the portable path for the other half.

For every input the compiled reader and the pure reader must agree (equal objects of the same types, or the same
exception). A crash ends the process (the exit status says so). Memory: the resident set size and the reference
counts of the objects readers hand out most (None, True, False, small ints, the zero Uuid) are taken after a
warm-up and at the end; growth beyond noise is reported as a leak. Not part of CI (it takes minutes).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path
from typing import Any

import fuzzing  # benchmarks/fuzzing.py, beside this script

from metalog.bench.codec import CASES
from metalog.codec import core, message_class
from metalog.codec.runtime import READER_ERRORS, KafkaStruct
from metalog.codec.uuid import ZERO

DATA = Path(__file__).resolve().parents[1] / "tests" / "data" / "kafka" / "codec-random.jsonl"


def seeds() -> list[tuple[Any, int, bytes]]:
    """(class, version, valid bytes) of every Kafka-written message and the four benchmark messages."""
    out = []
    for line in DATA.read_text().splitlines():
        if line.strip():
            case = json.loads(line)
            out.append((message_class(case["name"]), case["version"], bytes.fromhex(case["hex"])))
    for case in CASES:
        obj = case.build()
        out.append((type(obj), case.version, obj.encode(case.version)))
    return out


def mutate(rng: random.Random, raw: bytes, other: bytes) -> bytes:
    return fuzzing.mutate(rng, raw, other, edits=4, splice=64)


def same(a: Any, b: Any) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, KafkaStruct):
        return all(same(getattr(a, s), getattr(b, s)) for s in type(a).__slots__)
    if isinstance(a, list | tuple):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and a != a:
        return b != b
    return bool(a == b)


def outcome(read: Any, buf: Any, pos: int) -> tuple[str, Any]:
    try:
        return "read", read(buf, pos)
    except READER_ERRORS as e:  # (anything else is a bug in a reader: the fuzzing stops on it)
        return "raised", (type(e), e.args)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--inputs", type=int, default=1_000_000, help="how many mutated inputs (default 1,000,000)")
    ap.add_argument("--seed", type=int, default=858)
    args = ap.parse_args(argv)
    if not core.compiled_active():
        print(f"the compiled readers do not run here: codec {core.status()}", file=sys.stderr)
        return 2
    rng = random.Random(args.seed)
    pool = seeds()
    counts = {"read": 0, "raised": 0}
    disagreements: list[str] = []
    warm = min(100_000, args.inputs // 10)
    base_rss = base_refs = None
    start = time.process_time()
    core.direct_stores(True)
    for i in range(args.inputs):
        if i == warm:
            base_rss, base_refs = fuzzing.rss_kb(), fuzzing.refcounts(**{"ZERO uuid": ZERO})
        if i == args.inputs // 2:
            core.direct_stores(False)  # the second half: the portable path (object.__new__ and setattr)
        cls, version, raw = rng.choice(pool)
        data = mutate(rng, raw, rng.choice(pool)[2]) if rng.random() < 0.95 else raw
        pos = 0
        if rng.random() < 0.2:
            prefix = rng.randbytes(rng.randint(1, 5))
            data, pos = prefix + data, len(prefix)
        buf: Any = (data, bytearray(data), memoryview(data))[rng.randrange(3)]
        fast = outcome(core.compiled_readers(cls)[version], buf, pos)
        pure = outcome(core.pure_readers(cls)[version], buf, pos)
        counts[fast[0]] += 1
        if fast[0] != pure[0] or (fast[1] != pure[1] if fast[0] == "raised" else not same(fast[1], pure[1])):
            disagreements.append(f"{cls.__name__} v{version} from {pos}: {bytes(buf).hex()}")
        if (i + 1) % 200_000 == 0:
            print(f"{i + 1:,} inputs, {fuzzing.rss_kb():,} KB resident, {len(disagreements)} disagreements", flush=True)
    core.direct_stores(True)
    end_rss, end_refs = fuzzing.rss_kb(), fuzzing.refcounts(**{"ZERO uuid": ZERO})
    seconds = time.process_time() - start
    print(f"\n{args.inputs:,} inputs in {seconds:,.0f} CPU s: {counts['read']:,} read, {counts['raised']:,} refused")
    from metalog.codec import runtime

    print(f"resident set: {base_rss:,} KB after {warm:,} inputs, {end_rss:,} KB at the end (the pure path's shared "
          f"Uuid table, bounded at {runtime._UUIDS_MAX:,}, holds {len(runtime._UUIDS):,})")
    grown = {k: end_refs[k] - base_refs[k] for k in end_refs} if base_refs else {}
    print(f"reference counts since the warm-up: {grown}")
    return fuzzing.verdict(disagreements, "the pure readers", 10, base_rss, end_rss, grown, clip=None)


if __name__ == "__main__":
    raise SystemExit(main())
