"""Runs one family's hypothesis loop in its own process (started by test_fuzz_differential.py or
campaign.py), so that a crash of the extension ends this process, not pytest.

Before each case runs, its reproducer is written to <out>/current.py: when this process dies, the
parent reads the case that killed it there. Mismatches do not stop the loop: each is recorded
(the first few of each kind, with their reproducers) in <out>/result.json, with per-op counts.

usage: python fuzz_worker.py FAMILY --examples N --out DIR [--seed S] [--skip op,op] [--torch]
"""
from __future__ import annotations

import argparse
import json
import os
import random
import re
import sys
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from hypothesis import HealthCheck, Phase, given, seed, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from fuzz_case import (Case, Refuse, Skip, compare_with_torch, judge, reference,  # noqa: E402
                       run_module)
from fuzz_core import Mismatch  # noqa: E402
from fuzz_families import FAMILIES  # noqa: E402

KEEP_PER_KIND = 2
ABORT_ON = os.environ.get("EMBER_FUZZ_ABORT_ON")


class Recorder:
    def __init__(self, out_dir):
        self.current = os.open(os.path.join(out_dir, "current.py"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        self.counts = {}        # op -> {"cases", "refused", "skipped"}
        self.failures = {}      # kind -> {"count", "examples": [(repro, message)]}
        self.missing = set()

    def start(self, case):
        data = (case.op.name + "\n" + case.repro() + "\n").encode()
        os.ftruncate(self.current, 0)
        os.pwrite(self.current, data, 0)

    def count(self, op, key):
        c = self.counts.setdefault(op, {"cases": 0, "refused": 0, "skipped": 0})
        c[key] += 1

    def fail(self, case, message):
        form = case.params.get("form", "")
        kind = f"{case.op.family}/{case.op.name}{'/' + form if form else ''}: " + re.sub(
            r"\d+", "N", message.split(":")[0])[:60].strip()
        f = self.failures.setdefault(kind, {"count": 0, "examples": []})
        f["count"] += 1
        if len(f["examples"]) < KEEP_PER_KIND:
            try:
                repro = case.repro()
            except Exception as e:  # noqa: BLE001
                repro = f"<no reproducer: {e!r}> {case!r}"[:600]
            f["examples"].append([repro, message[:600]])


def case_strategy(ops):
    # one strategy per op, built once (a strategy built per example costs a validation)
    return st.one_of([op.gen().hyp().map((lambda op: lambda ip: Case(op, ip[0], ip[1]))(op)) for op in ops])


def fast_cases(ops, n, seed):
    """The fast engine: n cases from a seeded random.Random, no hypothesis."""
    r = random.Random(seed)
    gens = [(op, op.gen()) for op in ops]
    for _ in range(n):
        op, gen = r.choice(gens)
        inputs, params = gen.fast(r)
        yield Case(op, inputs, params)


def run_one(case, rec, torch):
    rec.start(case)
    if case.op.name == ABORT_ON:
        os.abort()          # the harness's own test of crash reporting
    try:
        expect = reference(case)
    except Refuse as r:
        expect = r
    except Skip:
        rec.count(case.op.name, "skipped")
        return
    result, exc = run_module(case, ember)
    if isinstance(exc, AttributeError) and "has no attribute" in str(exc):
        rec.missing.add(str(exc))       # an API ember lacks: listed, not a mismatch
        rec.count(case.op.name, "skipped")
        return
    rec.count(case.op.name, "cases")
    if isinstance(expect, Refuse):
        rec.count(case.op.name, "refused")
    try:
        judge(case, result, exc, expect)
        if torch is not None:
            compare_with_torch(case, result, exc, torch, expect)
    except Mismatch as m:
        rec.fail(case, str(m))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("family")
    p.add_argument("--examples", type=int, required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--seed", type=int)
    p.add_argument("--skip", default="")
    p.add_argument("--torch", action="store_true")
    p.add_argument("--engine", choices=["hypothesis", "fast"], default="hypothesis")
    args = p.parse_args()

    global ember
    import ember
    torch = None
    if args.torch:
        import torch
    skip = set(filter(None, args.skip.split(",")))
    ops = [op for op in FAMILIES[args.family]() if op.name not in skip]
    rec = Recorder(args.out)
    started = time.perf_counter()

    def check(case):
        try:
            run_one(case, rec, torch)
        except Exception:  # a bug in the harness or its reference: report it, don't hide it
            rec.fail(case, "harness error: " + traceback.format_exc(limit=4)[-500:])

    if args.engine == "fast":
        for case in fast_cases(ops, args.examples, args.seed or 0):
            check(case)
    else:
        @settings(max_examples=args.examples, derandomize=args.seed is None, database=None,
                  deadline=None, suppress_health_check=list(HealthCheck), phases=[Phase.generate],
                  print_blob=False)
        @given(case_strategy(ops))
        def loop(case):
            check(case)

        if args.seed is not None:
            loop = seed(args.seed)(loop)
        loop()
    with open(os.path.join(args.out, "result.json"), "w") as f:
        json.dump({"counts": rec.counts, "failures": rec.failures, "missing": sorted(rec.missing),
                   "seconds": time.perf_counter() - started}, f)


if __name__ == "__main__":
    main()
