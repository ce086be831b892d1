"""Runs a family's worker (fuzz_worker.py) in a subprocess and turns what it reports, or how it
died, into one result: counts per op and a list of findings, each with a one-line reproducer.

A worker that crashes (segfault, abort) or stops making progress (a hang) is reported with the
case it was running, and the family is run again without that op, so that one crash does not hide
the rest of the family.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
MAX_RESTARTS = 6


def examples_per_family(default=400):
    return int(os.environ.get("EMBER_FUZZ_EXAMPLES", default))


def run_family(family, examples, seed=None, torch=False, hang_seconds=60, extra_skip=(), engine="hypothesis"):
    """Returns {"counts", "failures", "missing", "crashes", "seconds"}."""
    skip = list(extra_skip)
    total = {"counts": {}, "failures": {}, "missing": [], "crashes": [], "seconds": 0.0}
    started = time.perf_counter()
    for _ in range(MAX_RESTARTS + 1):
        with tempfile.TemporaryDirectory(prefix=f"ember-fuzz-{family}-") as out:
            rc, died = _run_worker(family, examples, seed, torch, skip, out, hang_seconds, engine)
            result_path = os.path.join(out, "result.json")
            if rc == 0 and os.path.exists(result_path):
                with open(result_path) as f:
                    _merge(total, json.load(f))
                break
            op, repro = _last_case(out)
            total["crashes"].append({"op": op, "repro": repro, "how": died})
            if not op or op in skip:
                break
            skip.append(op)
    total["seconds"] = time.perf_counter() - started
    return total


def _run_worker(family, examples, seed, torch, skip, out, hang_seconds, engine):
    cmd = [sys.executable, os.path.join(HERE, "fuzz_worker.py"), family, "--examples", str(examples),
           "--out", out, "--skip", ",".join(skip), "--engine", engine]
    if seed is not None:
        cmd += ["--seed", str(seed)]
    if torch:
        cmd.append("--torch")
    return run_isolated(cmd, out, "current.py", hang_seconds)


def run_isolated(cmd, out, progress_file, hang_seconds):
    """Runs cmd, killing it when `out/progress_file` (rewritten before each case) stays unchanged
    for hang_seconds. Returns (returncode, None or how it died with the tail of its output)."""
    env = dict(os.environ, RUST_BACKTRACE="0", PYTHONFAULTHANDLER="1")
    log = open(os.path.join(out, "log.txt"), "w")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)
    current = os.path.join(out, progress_file)
    last_change, last_mtime = time.monotonic(), None
    while proc.poll() is None:
        time.sleep(0.2)
        mtime = os.stat(current).st_mtime_ns if os.path.exists(current) else None
        if mtime != last_mtime:
            last_change, last_mtime = time.monotonic(), mtime
        elif time.monotonic() - last_change > hang_seconds:
            # SIGABRT first: faulthandler prints where every thread is stuck
            proc.send_signal(signal.SIGABRT)
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            log.close()
            tail = open(os.path.join(out, "log.txt"), errors="replace").read()[-3000:]
            return -1, f"hang: no progress for {hang_seconds} s\n{tail}"
    log.close()
    if proc.returncode == 0:
        return 0, None
    tail = open(os.path.join(out, "log.txt"), errors="replace").read()[-1500:]
    if proc.returncode < 0:
        how = f"killed by {signal.Signals(-proc.returncode).name}"
    else:
        how = f"exit status {proc.returncode}"
    return proc.returncode, how + "\n" + tail


def _last_case(out):
    path = os.path.join(out, "current.py")
    if not os.path.exists(path):
        return None, None
    text = open(path).read().split("\n", 1)
    return text[0], (text[1].strip() if len(text) > 1 else "")


def _merge(total, part):
    for op, c in part["counts"].items():
        t = total["counts"].setdefault(op, {"cases": 0, "refused": 0, "skipped": 0})
        for k in t:
            t[k] += c[k]
    for kind, f in part["failures"].items():
        t = total["failures"].setdefault(kind, {"count": 0, "examples": []})
        t["count"] += f["count"]
        t["examples"] = (t["examples"] + f["examples"])[:2]
    total["missing"] = sorted(set(total["missing"]) | set(part.get("missing", [])))


def cases(result):
    return sum(c["cases"] for c in result["counts"].values())


def report(family, result):
    """A readable list of the findings (empty when there are none)."""
    lines = []
    for c in result["crashes"]:
        lines.append(f"CRASH in {family}/{c['op']} ({c['how'].splitlines()[0] if c['how'] else '?'}):\n"
                     f"    {c['repro']}\n" + "".join(f"      | {ln}\n" for ln in (c["how"] or "").splitlines()[1:][-8:]))
    for kind, f in sorted(result["failures"].items()):
        lines.append(f"{kind}  ({f['count']} cases)")
        for repro, message in f["examples"][:1]:
            lines.append(f"    {repro}\n      -> {message}")
    return "\n".join(lines)
