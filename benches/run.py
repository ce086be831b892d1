"""Runs every benchmark script in benches/ and rewrites benches/RESULTS.md with the machine, the
library versions and each script's tables. `make bench` calls it after installing
requirements-bench.txt."""
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
every PyTorch number below runs on the CPU."""


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


def main():
    scripts = sorted(p for p in BENCHES.glob("*.py") if p.name != pathlib.Path(__file__).name)
    started = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    sections = [
        "# Benchmark results",
        f"Written by `make bench` (`benches/run.py`) on {started}; do not edit by hand.",
        machine_section(),
    ]
    ok = True
    for script in scripts:
        section, succeeded = run_script(script)
        sections.append(section)
        ok = ok and succeeded
    RESULTS.write_text("\n\n".join(sections) + "\n")
    print(f"wrote {RESULTS}", file=sys.stderr)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
