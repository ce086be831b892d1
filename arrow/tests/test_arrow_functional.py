import math
import random
from collections import Counter, defaultdict

import numpy as np
import pyarrow as pa
import pytest

import emberarrow as ta
import emberarrow.dtypes as dt
from emberarrow import functional as F

M64 = (1 << 64) - 1


# ---- a reference sigrid_hash in Python integers, following Velox's C++ step by step ----

def _twang(key):
    key = ((~key) + (key << 21)) & M64
    key ^= key >> 24
    key = (key + (key << 3) + (key << 8)) & M64
    key ^= key >> 14
    key = (key + (key << 2) + (key << 4)) & M64
    key ^= key >> 28
    return (key + (key << 31)) & M64


def _hash_128_to_64(upper, lower):
    mul = 0x9DDFEA08EB382D69
    a = ((lower ^ upper) * mul) & M64
    a ^= a >> 47
    b = ((upper ^ a) * mul) & M64
    b ^= b >> 47
    return (b * mul) & M64


def _signed(x):
    return x - (1 << 64) if x >> 63 else x


def _reference_sigrid(value, salt, max_value):
    if max_value == 1:
        return 0
    hashed = _signed(_hash_128_to_64(salt & M64, _twang(value & M64)))
    # computeMultiperAndShift(max_value, 63) and the multiply-shift division of the C++ code
    l = math.ceil(math.log2(max_value))
    low = (1 << (64 + l)) // max_value
    high = ((1 << (64 + l)) + (1 << (64 + l - 63))) // max_value
    while low // 2 < high // 2 and l > 0:
        low, high, l = low // 2, high // 2, l - 1
    sign = hashed >> 63  # arithmetic shift: 0 or -1
    q = sign ^ ((high * ((sign ^ hashed) & M64)) >> (64 + l))
    return hashed - q * max_value


def test_sigrid_hash_torcharrow_vectors():
    assert list(F.sigrid_hash(ta.column(list(range(16))), 0, 100)) == [6, 60, 54, 54, 9, 4, 91, 11, 67, 79, 2, 25, 92, 98, 83, 66]
    lists = ta.column([[0, 1, 2, 3], [4, 5, 6], [7, 8, 9]])
    assert list(F.sigrid_hash(lists, 0, 100)) == [[6, 60, 54, 54], [9, 4, 91], [11, 67, 79]]
    assert list(F.sigrid_hash(ta.column([1, 2, 3, 5, 8, 10, 11]), 0, 100)) == [60, 54, 54, 4, 67, 2, 25]


def test_sigrid_hash_matches_the_reference_bit_for_bit():
    rng = random.Random(7)
    values = [0, 1, -1, 2**63 - 1, -(2**63)] + [rng.randrange(-(2**63), 2**63) for _ in range(300)]
    col = ta.column(values)
    for salt in [0, 1, -5, 2**40 + 3]:
        for max_value in [1, 2, 100, 1_000_003, 2**62 + 1]:
            got = list(F.sigrid_hash(col, salt, max_value))
            assert got == [_reference_sigrid(v, salt, max_value) for v in values], (salt, max_value)


def test_sigrid_hash_nulls_slices_and_errors():
    arr = pa.array([5, 1, None, 3]).slice(1)
    out = F.sigrid_hash(ta.from_arrow(arr), 0, 100)
    assert list(out) == [60, None, 54] and out.dtype == dt.Int64(True)
    lists = ta.from_arrow(pa.array([[9], [1, None], None, [14, 15, 16]]).slice(1))
    # a list holding a null gives null, as Velox's callNullFree
    assert list(F.sigrid_hash(lists, 0, 100)) == [None, None, [83, 66, 2]]
    assert list(F.bucketize(lists, [2])) == [None, None, [1, 1, 1]]
    assert list(F.firstx(lists, 1)) == [None, None, [14]]
    assert list(F.clamp_list(lists, 0, 15)) == [None, None, [14, 15, 15]]
    with pytest.raises(ValueError, match="maxValue"):
        F.sigrid_hash(ta.column([1]), 0, 0)
    with pytest.raises(TypeError):
        F.sigrid_hash(ta.column([1.5]), 0, 10)
    strings = F.sigrid_hash(ta.column(["a", "", None, "68fd1e64"]), 3, 1000)
    assert strings[2] is None and all(0 <= v < 1000 for v in strings if v is not None)


def test_hex_to_int():
    values = ["68fd1e64", "FF", "", None, "0", "7fffffffffffffff"]
    assert list(F.hex_to_int(ta.column(values))) == [0x68FD1E64, 255, None, None, 0, 2**63 - 1]
    with pytest.raises(ValueError, match="hex digit"):
        F.hex_to_int(ta.column(["12g4"]))
    with pytest.raises(TypeError):
        F.hex_to_int(ta.column([1]))


def test_bucketize():
    a = ta.column([1, 2, 3, 5, 8, 10, 11])
    assert list(F.bucketize(a, [2, 5, 10])) == [0, 0, 1, 1, 2, 2, 3]
    assert list(F.bucketize(a.cast(dt.float64), [np.int32(2), np.int32(5), np.int32(10)])) == [0, 0, 1, 1, 2, 2, 3]
    assert F.bucketize(a, [2]).dtype == dt.Int32(True)
    # a border repeated twice makes a bucket of its own (Velox's computeBucketId)
    assert list(F.bucketize(ta.column([1, 2, 3]), [2, 2, 4])) == [0, 1, 2]
    assert list(F.bucketize(ta.column([[1.0, 2.0, 3.0], None], dt.List(dt.float32, True)), [2.0])) == [[0, 0, 1], None]
    assert list(F.bucketize(ta.column([None, 7]), [5])) == [None, 1]
    for bad, message in [([], "empty"), ([3, 1], "non-decreasing"), ([1, 1, 1], "more than 2")]:
        with pytest.raises(ValueError, match=message):
            F.bucketize(a, bad)


def test_list_transforms():
    lists = ta.column([[1, 2, 3], [5, 8], [13], []])
    assert list(F.firstx(lists, 2)) == [[1, 2], [5, 8], [13], []]
    assert list(F.clamp_list(ta.column([[0, 1, 2, 3], [-100, 100, 10], [0, -1, -2, -3]]), 0, 20)) == [[0, 1, 2, 3], [0, 20, 10], [0, 0, 0, 0]]
    with pytest.raises(ValueError, match="Lo > hi"):
        F.clamp_list(lists, 3, 1)
    indices = F.add_tokens(F.add_tokens(ta.column([[1, 2], [3, 4, 5], []]), [0], begin=True), [6], begin=False)
    assert list(indices) == [[0, 1, 2, 6], [0, 3, 4, 5, 6], [0, 6]]
    words = F.add_tokens(ta.column([["Hello", "world"], None]), ["<bos>", "<x>"], begin=True)
    assert list(words) == [["<bos>", "<x>", "Hello", "world"], None]
    arrays = F.array_constructor(ta.column([1, 2, 3, 10, -1]), ta.column([2, 3, 5, 29, None]))
    assert list(arrays) == [[1, 2], [2, 3], [3, 5], [10, 29], [-1, None]]
    with pytest.raises(TypeError, match="dtype"):
        F.array_constructor(ta.column([1]), ta.column(["a"]))


# ---- id overlap features against a straight port of Velox's per-row definitions ----

def _ref_row(kind, a, b, sa=None, sb=None):
    ca, cb = Counter(a), Counter(b)
    if kind == "has_id_overlap":
        return 1.0 if set(a) & set(b) else 0.0
    if kind == "id_overlap_count":
        return float(sum((ca & cb).values()))
    if kind == "get_max_count":
        return float(sum(max(ca[i], cb[i]) for i in ca if i in cb))
    if kind == "get_jaccard_similarity":
        n = sum((ca & cb).values())
        return n / (len(a) + len(b) - n) if len(a) + len(b) - n else math.nan
    wa, wb = defaultdict(float), defaultdict(float)
    for i, s in zip(a, sa or []):
        wa[i] += s
    for i, s in zip(b, sb):
        wb[i] += s
    if kind == "get_score_sum":
        return sum(wb[i] for i in wa if i in wb)
    if kind == "get_cosine_similarity":
        dot = sum(wa[i] * wb[i] for i in wa if i in wb)
        return dot / math.sqrt(sum(v * v for v in wa.values())) / math.sqrt(sum(v * v for v in wb.values()))
    pick = min if kind == "get_score_min" else max
    best = {}
    for i, s in zip(b, sb):
        best[i] = pick(best.get(i, s), s)
    found = [best[i] for i in a if i in best]
    return pick(found) if found else 0.0


def _random_lists(rng, n, allow_empty=True):
    return [[rng.randrange(6) for _ in range(rng.randrange(0 if allow_empty else 1, 6))] for _ in range(n)]


@pytest.mark.parametrize("kind", ["has_id_overlap", "id_overlap_count", "get_max_count", "get_jaccard_similarity"])
def test_overlap_features(kind):
    rng = random.Random(kind)
    a, b = _random_lists(rng, 60), _random_lists(rng, 60)
    got = list(getattr(F, kind)(ta.column(a, dt.List(dt.int64)), ta.column(b, dt.List(dt.int64))))
    want = [_ref_row(kind, x, y) for x, y in zip(a, b)]
    assert got == [pytest.approx(w, nan_ok=True) for w in want]


@pytest.mark.parametrize("kind", ["get_score_sum", "get_cosine_similarity", "get_score_min", "get_score_max"])
def test_score_features(kind):
    rng = random.Random(kind)
    a, b = _random_lists(rng, 60, allow_empty=False), _random_lists(rng, 60, allow_empty=False)
    sa = [[round(rng.uniform(0.1, 5), 2) for _ in x] for x in a]
    sb = [[round(rng.uniform(0.1, 5), 2) for _ in y] for y in b]
    cols = [ta.column(v, dt.List(t)) for v, t in [(a, dt.int64), (sa, dt.float32), (b, dt.int64), (sb, dt.float32)]]
    if kind in ("get_score_min", "get_score_max"):
        got = list(getattr(F, kind)(cols[0], cols[2], cols[3]))
    else:
        got = list(getattr(F, kind)(*cols))
    want = [_ref_row(kind, x, y, s, t) for x, y, s, t in zip(a, b, sa, sb)]
    assert got == [pytest.approx(w, rel=1e-5) for w in want]


def test_feature_docs_examples_and_nulls():
    ids, matching = ta.column([[1, 1, 2, 3], [5, 8], [13]]), ta.column([[1, 2, 3], [2, 3], [13, 13, 13, 13, 13]])
    assert list(F.get_max_count(ids, matching)) == [4, 0, 5]
    assert list(F.get_jaccard_similarity(ids, matching)) == pytest.approx([0.75, 0, 0.2])
    score = F.get_cosine_similarity(ta.column([[1, 2, 3]]), ta.column([[1.0, 2.0, 3.0]]), ta.column([[1, 2, 3]]), ta.column([[5.0, 4.0, 3.0]]))
    assert score.dtype == dt.Float32(True) and score[0] == pytest.approx(0.831522, rel=1e-6)
    with_null = ta.column([[1, None], None, [2]], dt.List(dt.Int64(True), True))
    assert list(F.has_id_overlap(with_null, ta.column([[1], [1], [2]]))) == [None, None, 1.0]
    with pytest.raises(ValueError, match="same len"):
        F.get_score_sum(ta.column([[1, 2]]), ta.column([[1.0]]), ta.column([[1]]), ta.column([[1.0]]))
    with pytest.raises(TypeError, match="equal length"):
        F.has_id_overlap(ta.column([[1]]), ta.column([[1], [2]]))
    with pytest.raises(ValueError, match="inner product"):
        F.get_cosine_similarity(ta.column([[1]]), ta.column([[0.0]]), ta.column([[1]]), ta.column([[1.0]]))


def test_scaling():
    assert list(F.scale_to_0_1(ta.column([1, 2, 3]))) == [0.0, 0.5, 1.0]
    # all values equal: the sigmoid, right for x >= 0 too (TorchArrow's was not)
    assert list(F.scale_to_0_1(ta.column([2.0, 2.0], dt.float64))) == pytest.approx([1 / (1 + math.exp(-2))] * 2)
    assert list(F.sigmoid(ta.column([-800.0, 0.0, 800.0], dt.float64))) == [0.0, 0.5, 1.0]
    z = F.scale_to_z_score(ta.column([1.0, 2.0, 3.0], dt.float64))
    assert list(z) == pytest.approx([-1.0, 0.0, 1.0])  # sample std, as TorchArrow computes it
    same = F.scale_to_z_score(ta.column([4, 4]))
    assert same.dtype == dt.float32 and list(same) == [4.0, 4.0]


def _numpy_sigrid(values, salt, max_value):
    """sigrid_hash vectorised in NumPy (emberarrow's implementation before the Rust kernel):
    twang_mix64's shift-and-add steps as multiplications, then hash_128_to_64, then the floor
    remainder."""
    u64 = np.uint64
    key = values.astype(np.int64).view(u64) * u64((1 << 21) - 1) - u64(1)
    key ^= key >> u64(24)
    key *= u64(265)
    key ^= key >> u64(14)
    key *= u64(21)
    key ^= key >> u64(28)
    key *= u64((1 << 31) + 1)
    salt = np.array(salt, dtype=np.int64).view(u64)
    mul = u64(0x9DDFEA08EB382D69)
    a = (key ^ salt) * mul
    a ^= a >> u64(47)
    b = (salt ^ a) * mul
    b ^= b >> u64(47)
    b *= mul
    return np.remainder(b.view(np.int64), np.int64(max_value))


def test_sigrid_hash_kernel_matches_numpy_on_random_ids():
    values = np.random.default_rng(3).integers(-(2**63), 2**63 - 1, 300_000, dtype=np.int64)
    for salt, max_value in [(11, 4096), (-3, 2**62 + 1), (0, 1_000_003)]:
        whole = F._sigrid_hash_values(values, salt, max_value)  # large enough to be split across threads
        assert np.array_equal(whole, _numpy_sigrid(values, salt, max_value)), (salt, max_value)
    assert [int(v) for v in whole[:50]] == [_reference_sigrid(int(v), 0, 1_000_003) for v in values[:50]]


