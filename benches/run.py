"""Runs every benchmark script in benches/ and rewrites benches/RESULTS.md with the machine, the
library versions and each script's tables. `make bench` calls it after installing
requirements-bench.txt.

`run.py audio.py text.py` runs only the scripts named and replaces their sections (the machine
section is rewritten too); `run.py --section TITLE FILE` puts a report made elsewhere on this
machine (the `make fuzz` campaign's) into RESULTS.md under `## TITLE`, and `run.py --elsewhere
TITLE FILE` one made on another machine that the report names (benches/gpu.sh's bench.md). Sections no script makes are kept by
every run; the hand-written `## Measurement history (from ARCHITECTURE.md)` (the measurements
behind ARCHITECTURE.md's design decisions) is one of them, always placed last."""
import datetime
import os
import pathlib
import platform
import subprocess
import sys
import time

BENCHES = pathlib.Path(__file__).resolve().parent
RESULTS = BENCHES / "RESULTS.md"

PYTORCH_NOTE = """\
PyTorch comes from PyPI as pinned in `requirements-bench.txt`. PyPI has no CPU-only build for
Linux x86_64 (those live on PyTorch's own package index, which this machine cannot reach): its
wheel is the CUDA build, and `pip install torch --no-deps` does not import (`torch/__init__.py`
preloads libcublasLt and the other CUDA libraries and raises when they are missing). So the
CUDA libraries are installed as the wheel's ordinary dependencies (about 3 GB) and never used:
every PyTorch number below runs on the CPU, except in sections made on a GPU machine (which
name it and the PyTorch there)."""


def cpu_model():
    try:
        for line in pathlib.Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def version(module_name):
    try:
        return __import__(module_name).__version__
    except Exception as error:  # report why the anchor is missing instead of failing
        return f"not importable ({type(error).__name__}: {str(error).splitlines()[0][:100] if str(error) else ''})"


def oversubscribed_note():
    if os.getloadavg()[0] <= (os.cpu_count() or 1):
        return ""
    return (
        "\n  - more runnable processes than cores: every library competed for the CPU, thread pools that"
        "\n    spin while they wait (PyTorch's OpenMP, NumPy's OpenBLAS) most of all, so the numbers can"
        "\n    swing by 10x or more between runs; compare them only within one run, and with care"
    )


def machine_section():
    import ember

    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    return "\n".join([
        "## Machine",
        "",
        f"- CPU: {cpu_model()}",
        f"- cores: {os.cpu_count()}; threads used by every library: {os.cpu_count()} "
        f"(ember.get_num_threads() = {ember.get_num_threads()} by default)",
        f"- load average when the run started: {load}{oversubscribed_note()}",
        f"- OS: {platform.platform()}",
        "",
        "## Versions",
        "",
        f"- ember {ember.__version__}",
        f"- numpy {version('numpy')}",
        f"- torch {version('torch')}",
        f"- pyarrow {version('pyarrow')}, pandas {version('pandas')}, polars {version('polars')} (benches/arrow.py)",
        f"- python {platform.python_version()}",
        "",
        PYTORCH_NOTE,
    ])


def run_script(path):
    """(Markdown section, succeeded) for one benchmark script."""
    start = time.perf_counter()
    print(f"running {path.name} ...", file=sys.stderr, flush=True)
    done = subprocess.run([sys.executable, str(path)], stdout=subprocess.PIPE, text=True, check=False)
    minutes = (time.perf_counter() - start) / 60
    header = f"## {path.name}\n\n_{minutes:.1f} minutes._\n\n"
    if done.returncode != 0:
        return header + f"Failed with exit code {done.returncode}; its output:\n\n```\n{done.stdout}\n```", False
    return header + done.stdout.strip(), True


FIRST = ("Machine", "Versions")
LAST = ("Measurement history (from ARCHITECTURE.md)",)


def fresh():
    """The preamble and machine/versions sections of a full run."""
    started = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    head = (f"# Benchmark results\n\nWritten by `make bench` (`benches/run.py`) on {started}; do not edit by "
            "hand. A section rerun alone (`benches/run.py NAME.py`) says when, under what load and with which torch.")
    return head, sections_of(machine_section())[1]


def sections_of(text):
    """Markdown split at its `## ` headings: (what comes before, {title: section})."""
    head, *parts = ("\n" + text).split("\n## ")
    return head.strip(), {p.split("\n", 1)[0]: "## " + p.strip() for p in parts}


def existing():
    return sections_of(RESULTS.read_text()) if RESULTS.exists() else fresh()


def write(head, sections):
    middle = sorted(t for t in sections if t not in FIRST + LAST)
    order = [t for t in FIRST if t in sections] + middle + [t for t in LAST if t in sections]
    RESULTS.write_text("\n\n".join([head] + [sections[t] for t in order]) + "\n")
    print(f"wrote {RESULTS}", file=sys.stderr)


def rerun_alone(section):
    """A section made outside a full run, with its own date, load and torch version."""
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    title, rest = section.split("\n", 1)
    return f"{title}\n\n_Rerun alone on {when} ({cpu_model()}, load average {load}; torch {torch_version()})._\n{rest}"


def torch_version():
    """PyTorch's version where the benchmarks find it: this interpreter, or the one a script
    that runs PyTorch in another venv is pointed at (EMBER_BENCH_TORCH_PYTHON)."""
    python = os.environ.get("EMBER_BENCH_TORCH_PYTHON")
    if not python:
        return version("torch")
    done = subprocess.run([python, "-c", "import torch; print(torch.__version__)"], capture_output=True, text=True)
    return done.stdout.strip() or "not importable"


def main(argv):
    head, sections = existing()
    if argv[:1] == ["--section"]:
        title, report = argv[1], pathlib.Path(argv[2]).read_text().strip()
        sections[title] = rerun_alone(f"## {title}\n\n{report}")
        return write(head, sections)
    if argv[:1] == ["--elsewhere"]:  # made on another machine, which the report names
        title, report = argv[1], pathlib.Path(argv[2]).read_text().strip()
        when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        sections[title] = f"## {title}\n\n_Made on another machine (named below), placed here on {when}._\n\n{report}"
        return write(head, sections)
    everything = not argv
    if everything:  # the reports made elsewhere (`make fuzz`) stay
        kept = {t: s for t, s in sections.items() if t not in FIRST and not t.endswith(".py")}
        head, sections = fresh()
        sections.update(kept)
    names = sorted(p.name for p in BENCHES.glob("*.py") if p.name != pathlib.Path(__file__).name) if everything else argv
    ok = True
    for name in names:
        section, succeeded = run_script(BENCHES / name)
        sections[name] = section if everything else rerun_alone(section)
        ok = ok and succeeded
    write(head, sections)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main(sys.argv[1:])
