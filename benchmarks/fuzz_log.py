"""Fuzz the compiled log core: crashes, leaks and disagreements with the pure log core.

    python benchmarks/fuzz_log.py                    # 1,000,000 inputs (several minutes on 2 cores)
    python benchmarks/fuzz_log.py --inputs 50000     # a quick look

Inputs are runs of batches as metalog and Kafka write them (KRaft data batches of one and of many records, control
batches, general batches with keys, headers, attributes and log-append time, gzip), mutated: bit flips, bytes that
matter to lengths and varints (00 01 7f 80 ff), huge lengths, cuts, insertions, deletions, splices of two runs; and
with their CRCs made right again for half of them (so the damage reaches the record decoder and the replay, not only
the CRC check). Each input goes through every compiled twin and its pure twin: the record decoder
(RecordBatch.records), the batch loop (iter_batches, with and without CRC checks), replay's read loop (scan_into
into a list) and the replay dispatch (a loader's replay_value, on each record value of the input). They must agree:
the same results, or the same error (type and text). A crash ends the process (the exit status says so). Memory:
the resident set size and the reference counts of None, True, False and small ints after a warm-up and at the end;
growth beyond noise is reported as a leak. Not part of CI (it takes minutes).
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from typing import Any

import crc32c
import fuzzing  # benchmarks/fuzzing.py, beside this script

from metalog.bench.cores import compiled_log_core, log_status, pure_log_core
from metalog.bench.log import values_pool
from metalog.errors import MetalogError
from metalog.log.batch import Record, RecordBatch
from metalog.log.builder import BatchFields, build_batch, build_control_batch, build_data_batch
from metalog.log.chain import BatchChain
from metalog.log.header import ATTRIBUTES_OFFSET, CRC_OFFSET, HEADER_SIZE, LENGTH_OFFSET, LOG_OVERHEAD
from metalog.log.reader import iter_batches
from metalog.log.scan import Scan, scan_into
from metalog.state import MetadataLoader


def seeds(rng: random.Random) -> list[bytes]:
    """Runs of valid batches, offsets running on from 0, of every shape."""
    pool = values_pool(200)
    out = []
    for _ in range(300):
        run, offset = bytearray(), 0
        for _ in range(rng.randint(1, 4)):
            shape = rng.randrange(6)
            vals = [rng.choice(pool) for _ in range(rng.choice([1, 1, 2, 5, 40]))]
            if shape <= 2:
                batch = build_data_batch(offset, vals, epoch=1, timestamp=1_700_000_000_000 + offset,
                                         compression="gzip" if shape == 2 else "none")
            elif shape == 3:
                batch = build_control_batch(offset, [(b"\x00\x00\x00\x02", b"\x00\x00\x00\x01\x00\x00")], epoch=1,
                                            timestamp=1_700_000_000_000)
                vals = [b""]
            else:
                records = [Record(offset + i, 1_700_000_000_000 + rng.randint(-5, 5),
                                  rng.choice([None, b"key"]), v, (("h", b"x"),) if shape == 5 else (), 0)
                           for i, v in enumerate(vals)]
                batch = build_batch(offset, records, BatchFields(
                    partition_leader_epoch=1, log_append_time=1_700_000_000_001 if rng.random() < 0.3 else None))
            run += batch
            offset += len(vals)
        out.append(bytes(run))
    return out


def mutate(rng: random.Random, raw: bytes, other: bytes) -> bytes:
    return fuzzing.mutate(rng, raw, other, edits=3, splice=200)


def fix_crcs(data: bytes) -> bytes:
    """Every batch's CRC made right again, where its frame can be followed (so damage reaches what is after it)."""
    buf, pos = bytearray(data), 0
    while len(buf) - pos >= HEADER_SIZE:
        size = LOG_OVERHEAD + int.from_bytes(buf[pos + LENGTH_OFFSET:pos + LENGTH_OFFSET + 4], "big", signed=True)
        if size < HEADER_SIZE or size > len(buf) - pos:
            break
        buf[pos + CRC_OFFSET:pos + CRC_OFFSET + 4] = crc32c.crc32c(buf[pos + ATTRIBUTES_OFFSET:pos + size]).to_bytes(
            4, "big")
        pos += size
    return bytes(buf)


def readings(data: bytes) -> list[Any]:
    """What every read of ``data`` gives, through whichever log core runs: results, or (error type, text)."""
    out: list[Any] = []

    def read(fn: Any) -> None:
        try:
            out.append(fn())
        except MetalogError as e:
            out.append((type(e).__name__, str(e)))

    read(lambda: [tuple(r) for r in RecordBatch(data, 0, source="fuzz").records()])
    for validate in (True, False):
        read(lambda validate=validate: [(b.position, b.base_offset, b.records_count)
                                        for b in iter_batches(data, source="fuzz", validate=validate)])
    got: list[Any] = []
    read(lambda: (scan_into(Scan(data, len(data), "fuzz", BatchChain(0, -1), 0, 1 << 62,
                                 lambda v, o: got.append((o, v))), 0), list(got)))
    values = [v for _, v in got] or [data[HEADER_SIZE + 7:]]
    for offset, value in enumerate(values[:8]):
        loader = MetadataLoader()
        read(lambda loader=loader, value=value, offset=offset: (loader.replay_value(value, offset), loader.offset))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--inputs", type=int, default=1_000_000, help="how many mutated inputs (default 1,000,000)")
    ap.add_argument("--seed", type=int, default=858)
    args = ap.parse_args(argv)
    if not compiled_log_core():
        print(f"the compiled log core does not run here: {log_status()}", file=sys.stderr)
        return 2
    rng = random.Random(args.seed)
    pool = seeds(rng)
    disagreements: list[str] = []
    errors = 0
    warm = min(100_000, args.inputs // 10)
    base_rss = base_refs = None
    start = time.process_time()
    for i in range(args.inputs):
        if i == warm:
            base_rss, base_refs = fuzzing.rss_kb(), fuzzing.refcounts()
        data = rng.choice(pool)
        if rng.random() < 0.95:
            data = mutate(rng, data, rng.choice(pool))
            if rng.random() < 0.5:
                data = fix_crcs(data)
        compiled = readings(data)
        with pure_log_core():
            pure = readings(data)
        errors += sum(1 for r in compiled if isinstance(r, tuple) and len(r) == 2 and isinstance(r[0], str))
        if compiled != pure:
            disagreements.append(data.hex())
        if (i + 1) % 100_000 == 0:
            print(f"{i + 1:,} inputs, {fuzzing.rss_kb():,} KB resident, {len(disagreements)} disagreements", flush=True)
    end_rss, end_refs = fuzzing.rss_kb(), fuzzing.refcounts()
    seconds = time.process_time() - start
    print(f"\n{args.inputs:,} inputs in {seconds:,.0f} CPU s ({errors:,} reads refused)")
    print(f"resident set: {base_rss:,} KB after {warm:,} inputs, {end_rss:,} KB at the end")
    grown = {k: end_refs[k] - base_refs[k] for k in end_refs} if base_refs else {}
    print(f"reference counts since the warm-up: {grown}")
    return fuzzing.verdict(disagreements, "the pure log core", 5, base_rss, end_rss, grown, clip=400)


if __name__ == "__main__":
    raise SystemExit(main())
