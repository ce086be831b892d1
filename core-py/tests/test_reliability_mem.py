"""Issue 28, sizes and allocation: sizes from user input that overflow are refused before any
memory is touched, a failed allocation is a RuntimeError rather than an abort, and a Rust panic
is an exception that `except Exception` catches."""
import io
import subprocess
import sys
import textwrap

import pytest

import ember
import ember.nn.functional as F

OVERFLOW = "Storage size calculation overflowed"


@pytest.mark.parametrize(
    "make",
    [
        lambda: ember.rand(2**62),
        lambda: ember.zeros(2**62, 4),
        lambda: ember.empty(2**40, 2**40),
        lambda: ember.full((2**62,), 1.0),
        lambda: ember.arange(0, 1e20),
        lambda: ember.linspace(0, 1, 2**62),
        lambda: ember.eye(2**40),
        lambda: ember.zeros(4).expand(2**62, 4).sum(1),
    ],
    ids=["rand", "zeros", "empty", "full", "arange", "linspace", "eye", "expand_sum"],
)
def test_overflowing_sizes_are_refused(make):
    with pytest.raises(RuntimeError, match=OVERFLOW):
        make()


def test_a_broadcast_view_whose_element_count_overflows_is_refused():
    with pytest.raises(RuntimeError, match=OVERFLOW):
        ember.zeros(1).expand(2**32, 2**32)
    assert ember.zeros(1).expand(2**31, 2**31).shape == (2**31, 2**31)


def test_as_strided_with_an_overflowing_reach_is_refused():
    with pytest.raises(RuntimeError):
        ember.zeros(4).as_strided((2**62, 4), (2**62, 1))
    with pytest.raises(RuntimeError, match=OVERFLOW):
        ember.zeros(4).as_strided((2**40, 2**40), (0, 0))


def test_a_checkpoint_of_a_huge_stride_0_tensor_loads_and_refuses_a_copy():
    buf = io.BytesIO()
    ember.save({"t": ember.zeros(1).as_strided((2**31, 2**31), (0, 0))}, buf)
    assert len(buf.getvalue()) < 4096
    t = ember.load(io.BytesIO(buf.getvalue()))["t"]
    assert t.shape == (2**31, 2**31) and t.stride() == (0, 0)
    with pytest.raises(RuntimeError, match=OVERFLOW):
        t.contiguous()
    assert ember.ones(3).sum().item() == 3.0


# Each line runs in a child limited to 4 GiB of address space; every one must raise RuntimeError
# (a failed allocation or an overflowing size) and leave the process able to go on.
UNDER_LIMIT = {
    "zeros": "ember.zeros(2**34)",
    "ones_int64": "ember.ones(2**31, dtype=ember.int64)",
    "repeat": "ember.ones(2).repeat(2**33)",
    "tile": "ember.ones(2, 1).tile((1, 2**33))",
    "one_hot": "F.one_hot(ember.tensor([0, 1]), num_classes=2**33)",
    "conv2d_padding": "F.conv2d(ember.ones(1, 1, 1, 1), ember.ones(1, 1, 1, 1), padding=2**40)",
    "conv2d_padding_fits": "F.conv2d(ember.ones(1, 1, 1, 1), ember.ones(1, 1, 1, 1), padding=2**16)",
    "pad": "F.pad(ember.ones(1, 4), (2**33, 0))",
    "pad_replicate": "F.pad(ember.ones(1, 1, 4), (2**33, 0), mode='replicate')",
    "fft_n": "ember.fft.fft(ember.ones(4), n=2**33)",
    "rfft_n": "ember.fft.rfft(ember.ones(4), n=2**34)",
    "interpolate": "F.interpolate(ember.ones(1, 1, 4), scale_factor=1e10)",
    "cat": "ember.cat([ember.ones(1).expand(2**31)] * 2)",
    "contiguous": "ember.ones(1).expand(2**33).contiguous()",
    "clone": "ember.ones(1).expand(2**33).clone()",
    "to_dtype": "ember.ones(1).expand(2**33).double()",
}

CHILD = textwrap.dedent(
    """
    import resource, sys
    resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))
    import ember
    import ember.nn.functional as F
    for name, expr in {cases!r}.items():
        try:
            eval(expr)
            print(name, "returned")
        except RuntimeError as e:
            print(name, "RuntimeError", str(e).splitlines()[0][:120])
        except Exception as e:
            print(name, type(e).__name__, e)
    assert ember.ones(1000).sum().item() == 1000.0
    print("alive")
    """
)


def run_limited(cases):
    code = CHILD.format(cases=cases)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, f"child died ({r.returncode}):\n{r.stdout}\n{r.stderr[-3000:]}"
    *cases_out, last = r.stdout.splitlines()
    assert last == "alive", r.stdout
    return dict(line.split(" ", 1) for line in cases_out)


@pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_AS is Linux's")
def test_failed_allocations_raise_and_the_process_survives():
    results = run_limited(UNDER_LIMIT)
    wrong = {k: v for k, v in results.items() if not v.startswith("RuntimeError")}
    assert not wrong, wrong
    assert "DefaultCPUAllocator: can't allocate memory" in results["zeros"]
    assert "you tried to allocate 68719476736 bytes" in results["zeros"]


def test_a_rust_panic_is_an_exception_that_except_exception_catches():
    try:
        ember._C._panic_for_test("boom")
    except Exception as e:  # noqa: BLE001 - the point: not a BaseException only
        assert isinstance(e, RuntimeError) and "boom" in str(e)
    else:
        pytest.fail("no exception")


def test_a_caught_panic_prints_nothing_without_rust_backtrace():
    code = "import ember\ntry:\n    ember._C._panic_for_test('quiet')\nexcept RuntimeError:\n    print('caught')\n"
    env = {k: v for k, v in __import__("os").environ.items() if k != "RUST_BACKTRACE"}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 0 and r.stdout.strip() == "caught"
    assert "panicked" not in r.stderr


HUGE_MEMO_INDEX = textwrap.dedent(
    """
    import io, pickle, resource, struct, zipfile
    import ember
    resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:  # {} memoised at index 2**32-2, which an array memo grows to
        z.writestr("archive/data.pkl", b"\\x80\\x02}" + pickle.LONG_BINPUT + struct.pack("<I", 2**32 - 2) + b".")
    buf.seek(0)
    print(ember.load(buf))
    """
)


@pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_AS is Linux's")
def test_a_checkpoint_with_a_huge_memo_index_loads_in_little_memory():
    r = subprocess.run([sys.executable, "-c", HUGE_MEMO_INDEX], capture_output=True, text=True, timeout=120)
    assert (r.returncode, r.stdout) == (0, "{}\n"), r.stderr[-2000:]


HUGE_BYTEARRAY = textwrap.dedent(
    """
    import io, pickle, resource, struct, zipfile
    import ember
    resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:  # a BYTEARRAY8 that claims 6.8 GB and holds 3 bytes
        z.writestr("archive/data.pkl", b"\\x80\\x05" + pickle.BYTEARRAY8 + struct.pack("<Q", 6817606733) + b"abc.")
    buf.seek(0)
    try:
        ember.load(buf)
    except pickle.UnpicklingError as e:
        print(e)
    """
)


@pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_AS is Linux's")
def test_a_checkpoint_declaring_a_huge_bytearray_is_refused_without_allocating_it():
    # Found by atheris (`make fuzz`): pickle's own BYTEARRAY8 allocates the declared length first.
    r = subprocess.run([sys.executable, "-c", HUGE_BYTEARRAY], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "BYTEARRAY8 declares 6817606733 bytes, but the stream holds only 4" in r.stdout, r.stderr[-2000:]


# ---- conv and pool geometry near 2**63: refused or right, never wrapped ----

BIG = 2**62
GEOMETRY_OVERFLOWS = {
    "conv1d padding 2**63-1": lambda: F.conv1d(ember.ones(1, 1, 4), ember.ones(1, 1, 2), padding=2**63 - 1),
    "conv2d padding 2**63-1": lambda: F.conv2d(ember.ones(1, 1, 4, 4), ember.ones(1, 1, 2, 2), padding=2**63 - 1),
    "conv_transpose2d output 2**64+1": lambda: F.conv_transpose2d(ember.ones(1, 1, 4, 4), ember.ones(1, 1, 2, 2), stride=BIG, output_padding=BIG - 1),
    "adaptive_avg_pool2d 2**62": lambda: F.adaptive_avg_pool2d(ember.ones(1, 1, 4, 4), (BIG, BIG)),
    "adaptive_max_pool2d 2**62": lambda: F.adaptive_max_pool2d(ember.ones(1, 1, 4, 4), (BIG, 1)),
    "max_pool1d dilation 2**62": lambda: F.max_pool1d(ember.ones(1, 1, 4), 4, dilation=BIG, padding=1),
}


@pytest.mark.parametrize("name", list(GEOMETRY_OVERFLOWS))
def test_geometry_that_overflows_is_refused(name):
    with pytest.raises(RuntimeError, match="overflowed|can't allocate memory|Output size is too small"):
        GEOMETRY_OVERFLOWS[name]()


def test_a_pool_window_far_wider_than_its_input_reads_only_the_input():
    x = ember.arange(4.0).reshape(1, 1, 4)
    assert F.max_pool1d(x, BIG, padding=BIG // 2).tolist() == [[[3.0]]]
    assert F.avg_pool1d(x, BIG, padding=BIG // 2, count_include_pad=False).tolist() == [[[1.5]]]
    assert F.max_pool1d(x, 2, stride=2**63 - 1).tolist() == [[[1.0]]]
