"""Codec throughput: metalog's generated codec against kio, kafka-python and metalog's construct reference.

    python benchmarks/codec.py            # full run (about a minute on 2 cores)
    python benchmarks/codec.py --quick    # a few seconds, for a smoke test
    python benchmarks/codec.py --profile  # where metalog's fast path spends its time (cProfile)

metalog decodes with its compiled readers where they were built (``metalog pure`` is its pure Python core,
timed in the same run, and ``metalog pure/kio`` its ratio); writers are pure Python either way. The first line
says which codec core runs.
Every implementation encodes the same values and must produce metalog's bytes, and decodes those
bytes back to its own equal object, before anything is timed. Rates are best-of-N (timeit style) of
this process's CPU time, the implementations' repeats alternating.
Peers: kio 0.6.2 (its Rust ``entity_reader`` and Python ``entity_writer``; the two metadata records,
which kio lacks, are declared as kio entity dataclasses the way kio's generated schema classes are),
kafka-python (its generic JSON-schema message classes with compiled codecs, given a Kafka-style spec
written from our definitions, the way kafka-python declares its own classes; for the two records, which
are data rather than RPCs, the faster of its ApiData and ApiMessage paths is used).
"""

import argparse
import sys
import time
from pathlib import Path

from metalog.bench.codec import CASES, NotComparable, metalog_ops, pure_decode_op, reference_ops
from metalog.bench.kafka_python_peer import KafkaPythonClasses, kafka_python_ops
from metalog.bench.kio_peer import kio_ops
from metalog.bench.timing import Op, Timer

# ---- the table --------------------------------------------------------------------------------
PEERS = ["metalog", "metalog pure", "kio", "kafka-python", "construct ref"]
# (case letter, op) -> minimum metalog/peer ratio (decode: the compiled core's)
TARGETS = {
    "kio": {**{(c, "encode"): 5 for c in "abcd"}, **{(c, "decode"): 2 for c in "abcd"}},
    "kafka-python": {(c, op): 2 for c in "abcd" for op in ("encode", "decode")},
}


def fmt_rate(ops: float | None, size: int) -> str:
    if ops is None:
        return "-"
    return f"{ops:,.0f} ({ops * size / 1e6:,.1f})"


def run(timer: Timer) -> tuple[list[str], list[bool]]:
    kp_classes = KafkaPythonClasses()
    notes: list[str] = []
    rows: list[list[str]] = []
    met: list[bool] = []
    for case in CASES:
        obj = case.build()
        data = obj.encode(case.version)
        ops: dict[str, tuple[Op, Op] | None] = {
            "metalog": metalog_ops(case, obj, data),
            "kio": kio_ops(case, obj, data),
            "kafka-python": kafka_python_ops(kp_classes, case, obj, data, timer.rate),
        }
        pure = pure_decode_op(case, obj, data)
        ops["metalog pure"] = None if pure is None else (None, pure)  # type: ignore[assignment]
        try:
            ops["construct ref"] = reference_ops(case, obj, data)
        except (ImportError, AttributeError) as e:
            ops["construct ref"] = None
            notes.append(f"construct reference skipped for {case.name}: {type(e).__name__}: {e}")
        letter = case.label[1]
        for i, op in enumerate(("encode", "decode")):  # the order of each (encode, decode) pair
            rates: dict[str, float | None] = dict.fromkeys(PEERS)
            rates.update(timer.rates({p: o[i] for p, o in ops.items() if o and o[i]}))
            ours = rates["metalog"]
            assert ours is not None
            row = [case.label, op, str(len(data))] + [fmt_rate(rates[p], len(data)) for p in PEERS]
            for peer in ("kio", "kafka-python"):
                ratio = ours / rates[peer]  # type: ignore[operator]
                goal = TARGETS[peer][(letter, op)]
                met.append(ratio >= goal)
                row.append(f"{ratio:.2f}x {'ok' if ratio >= goal else 'MISS'} (>= {goal:g}x)")
            pure_rate = rates["metalog pure"]
            row.append("-" if pure_rate is None else f"{pure_rate / rates['kio']:.2f}x")  # type: ignore[operator]
            ref = rates["construct ref"]
            row.append("-" if ref is None else f"{ours / ref:,.0f}x")
            rows.append(row)
            print_row(row, first=len(rows) == 1)
    return notes, met


HEADERS = ["case", "op", "bytes"] + [f"{p} ops/s (MB/s)" for p in PEERS] + \
    ["metalog/kio", "metalog/kafka-python", "metalog pure/kio", "metalog/ref"]
WIDTHS = [36, 6, 6, 22, 22, 20, 22, 18, 24, 24, 16, 11]


def print_row(row: list[str], first: bool) -> None:
    if first:
        print("  ".join(h.ljust(w) for h, w in zip(HEADERS, WIDTHS, strict=True)))
        print("  ".join("-" * w for w in WIDTHS))
    print("  ".join(c.ljust(w) for c, w in zip(row, WIDTHS, strict=True)), flush=True)


def profile(rows: int) -> None:
    """Where metalog's fast path spends its time: cProfile of each case, generated code vs C calls."""
    import cProfile
    import pstats

    for case in CASES:
        obj = case.build()
        data = obj.encode(case.version)
        for op, fn in zip(("encode", "decode"), metalog_ops(case, obj, data), strict=True):
            n = max(1, 200_000 // len(data))
            prof = cProfile.Profile()
            prof.runcall(lambda fn=fn, n=n: [fn() for _ in range(n)])
            stats = {k: v for k, v in pstats.Stats(prof).stats.items()  # type: ignore[attr-defined]
                     if k[0] != __file__}  # not this script's own loop
            total = sum(tt for _, _, tt, _, _ in stats.values())
            top = sorted(stats.items(), key=lambda kv: -kv[1][2])[:rows]
            print(f"\n{case.label} {op}: {total / n * 1e6:.1f} us per call under cProfile")
            for (file, line, func), (_, calls, tt, _, _) in top:
                where = func if file == "~" else f"{Path(file).name}:{line} {func}"
                print(f"  {tt / total:6.1%}  {calls // n:6d} calls/op  {where}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="short timing runs (a smoke test, noisy figures)")
    ap.add_argument("--repeat", type=int, help="timed repeats per figure (best is kept)")
    ap.add_argument("--min-time", type=float, help="seconds per timed repeat")
    ap.add_argument("--wall", action="store_true", help="time with the wall clock instead of this process's CPU time")
    ap.add_argument("--profile", action="store_true", help="instead of timing, profile metalog's fast path")
    args = ap.parse_args(argv)
    if args.profile:
        profile(rows=6)
        return 0
    timer = Timer(min_time=0.02, repeat=3) if args.quick else Timer(min_time=0.2, repeat=5)
    if args.repeat:
        timer.repeat = args.repeat
    if args.min_time:
        timer.min_time = args.min_time
    if args.wall:
        timer.clock = time.perf_counter
    clock = "wall clock" if args.wall else "process CPU time"
    import os

    from metalog.codec import core

    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"Python {sys.version.split()[0]}; codec: {core.status()}; load average {load} on {os.cpu_count()} cores\n"
          f"best of {timer.repeat} x >= {timer.min_time:g}s of {clock}; rates as ops/s (MB/s of message bytes)\n")
    try:
        notes, met = run(timer)
    except NotComparable as e:
        raise SystemExit(str(e)) from None
    print(f"\ntargets met: {sum(met)}/{len(met)}")
    for n in notes:
        print("note:", n)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
