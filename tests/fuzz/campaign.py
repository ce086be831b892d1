"""A long run of the differential suite for `make fuzz`: every family, many seeds, crash-isolated
workers in parallel; prints cases per family and time as a Markdown table (for benches/RESULTS.md)
and every finding with its reproducer.

usage: python tests/fuzz/campaign.py [--total 1000000] [--jobs 2] [--chunk 20000]
                                     [--families a,b] [--time-limit SECONDS] [--report FILE]
                                     [--engine fast|hypothesis]
"""
from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from fuzz_families import FAMILIES  # noqa: E402
from fuzz_parent import _merge, cases, report, run_family  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--total", type=int, default=1_000_000)
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    p.add_argument("--chunk", type=int, default=20_000)
    p.add_argument("--families", default=",".join(sorted(FAMILIES)))
    p.add_argument("--time-limit", type=float, default=None)
    p.add_argument("--report", default=None)
    p.add_argument("--engine", choices=["fast", "hypothesis"], default="fast",
                   help="fast: seeded random draws of the same strategies (several times more "
                        "cases per second than hypothesis's engine, which `make test` uses)")
    args = p.parse_args()

    families = args.families.split(",")
    per_family = max(args.total // len(families), 1)
    # (family, seed, examples) work items, interleaved so that a time limit cuts every family
    chunks = {f: [] for f in families}
    for f in families:
        left, seed = per_family, 0
        while left > 0:
            n = min(args.chunk, left)
            chunks[f].append((f, seed, n))
            left -= n
            seed += 1
    work = [item for group in zip_longest_all(chunks.values()) for item in group]

    started = time.perf_counter()
    results = {f: {"counts": {}, "failures": {}, "missing": [], "crashes": [], "seconds": 0.0} for f in families}

    def run(item):
        family, seed, n = item
        if args.time_limit and time.perf_counter() - started > args.time_limit:
            return family, None
        return family, run_family(family, n, seed=seed, engine=args.engine)

    with ThreadPoolExecutor(args.jobs) as pool:
        for family, res in pool.map(run, work):
            if res is None:
                continue
            total = results[family]
            _merge(total, res)
            total["crashes"] += res["crashes"]
            total["seconds"] += res["seconds"]
            print(f"  {family}: {cases(total)} cases so far ({time.perf_counter() - started:.0f} s)", flush=True)
    elapsed = time.perf_counter() - started

    table = render_table(results, elapsed, args.jobs, args.engine)
    findings = "\n\n".join(f"#### {f}\n{report(f, r)}" for f, r in results.items() if report(f, r))
    text = table + "\n\n### Findings\n\n" + (findings or "none")
    print("\n" + text)
    if args.report:
        with open(args.report, "w") as out:
            out.write(text + "\n")
    return 1 if findings else 0


def zip_longest_all(lists):
    lists = list(lists)
    for i in range(max(len(x) for x in lists)):
        yield [x[i] for x in lists if i < len(x)]


def render_table(results, elapsed, jobs, engine):
    rows = ["| family | cases | refused (both sides) | skipped | findings | crashes | worker s |",
            "|---|---:|---:|---:|---:|---:|---:|"]
    tc = tr = ts = tf = tk = 0
    for f, r in results.items():
        c = cases(r)
        refused = sum(x["refused"] for x in r["counts"].values())
        skipped = sum(x["skipped"] for x in r["counts"].values())
        nf = sum(x["count"] for x in r["failures"].values())
        rows.append(f"| {f} | {c} | {refused} | {skipped} | {nf} | {len(r['crashes'])} | {r['seconds']:.0f} |")
        tc, tr, ts, tf, tk = tc + c, tr + refused, ts + skipped, tf + nf, tk + len(r["crashes"])
    rows.append(f"| **all** | **{tc}** | {tr} | {ts} | {tf} | {tk} | |")
    head = (f"make fuzz: {tc} generated cases in {elapsed:.0f} s wall ({jobs} workers, {engine} engine, "
            f"{platform.machine()}, Python {platform.python_version()})")
    return head + "\n\n" + "\n".join(rows)


if __name__ == "__main__":
    sys.exit(main())
