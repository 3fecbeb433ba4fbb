"""metalog analyze: python engine versus Spark on local[1] and local[2], on one generated log.

    python benchmarks/analyze.py                    # 5M records (the log is generated once and kept)
    python benchmarks/analyze.py --records 500000   # quicker

Prints records/s of the python engine and of Spark's two passes (range deltas, range replay) on one and on
two cores, the local[2]/local[1] speed-up (target >= 1.7x), Spark's per-core rate against the python
engine's (target >= 0.8x) and, counting Spark's session start, the log size above which Spark wins.
Times are wall-clock for the analysis itself (no CSV writing); the session start is measured separately.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from metalog.analysis.pipeline import analyze_python
from metalog.generate.history import HistorySettings
from metalog.generate.writer import write_history


def build(records: int, seed: int) -> Path:
    path = Path(tempfile.gettempdir()) / f"metalog-bench-analyze-{records}-{seed}"
    if not (path / "__cluster_metadata-0").exists():
        print(f"generating {records:,} records (mixed scenario) in {path} ...", flush=True)
        write_history(path, seed, HistorySettings(brokers=12, topics=60, partitions=12, records=records,
                                                  scenario="mixed"), snapshot_every=10**12)
    return path


def spark_run(path: Path, cores: int, repeat: int) -> tuple[float, float, int]:
    """(session start seconds, best analysis seconds, rows)."""
    from metalog.analysis.spark import analyze_spark, spark_session

    t0 = time.perf_counter()
    with spark_session(f"local[{cores}]", app="metalog bench") as session:
        start = time.perf_counter() - t0
        best, rows = float("inf"), 0
        for _ in range(repeat):
            t = time.perf_counter()
            rows = len(analyze_spark(session, [path]).rows)
            best = min(best, time.perf_counter() - t)
    return start, best, rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", type=int, default=5_000_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=1, help="Spark runs per session (the best is kept)")
    args = ap.parse_args()
    path = build(args.records, args.seed)

    t = time.perf_counter()
    result = analyze_python([path])
    py = time.perf_counter() - t
    records = result.records
    py_rate = records / py
    s1_start, s1, rows1 = spark_run(path, 1, args.repeat)
    s2_start, s2, rows2 = spark_run(path, 2, args.repeat)
    assert rows1 == rows2 == len(result.rows), "the engines disagree on the number of batches"

    print(f"\n{records:,} records, {len(result.rows):,} batches\n")
    print(f"{'engine':<16}{'seconds':>10}{'records/s':>14}{'per core':>14}{'vs python':>11}")
    for name, secs, cores in (("python", py, 1), ("spark local[1]", s1, 1), ("spark local[2]", s2, 2)):
        rate = records / secs
        print(f"{name:<16}{secs:>10.1f}{rate:>14,.0f}{rate / cores:>14,.0f}{rate / py_rate:>10.2f}x")
    print(f"\nspark local[2] / local[1] speed-up: {s1 / s2:.2f}x (target >= 1.7x)")
    print(f"spark per-core rate / python engine: {records / s1 / py_rate:.2f}x (target >= 0.8x)")
    cold = max(s1_start, s2_start)  # the second session reuses the first one's JVM: only one start is cold
    warm = min(s1_start, s2_start)
    print(f"spark session start: {cold:.1f} s cold (the second session reuses the JVM: {warm:.1f} s)")
    gain = 1 / py_rate - s2 / records  # seconds saved per record on local[2]
    if gain > 0:
        print(f"crossover (cold session start included): spark local[2] wins above ~{cold / gain:,.0f} records")
    else:
        print("crossover: none here, the python engine is faster at this size on this machine")


if __name__ == "__main__":
    main()
