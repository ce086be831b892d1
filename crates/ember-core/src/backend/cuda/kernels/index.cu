// Indexing (`index.rs`): advanced-index get and put, gather/scatter along a dim, nonzero,
// masked_select and tril/triu. Index values are checked on the device: a kernel that finds one
// out of range records the smallest such position in a flag word (`atomicMin`) and the host
// raises the IndexError; writes to an existing tensor only run after the check passed.
//
// Kernels that only move elements are instantiated per element width (`_w1` .. `_w16`, as the
// CPU's `with_width`); those that compute, per dtype.
typedef unsigned long long u64;
typedef unsigned short w2;
typedef unsigned w4;
typedef unsigned long long w8;
typedef u8 w1;
struct __align__(8) w16 { u64 lo, hi; };
#define FOR_EACH_WIDTH(X) X(w1) X(w2) X(w4) X(w8) X(w16)

__device__ __forceinline__ void record_bad(u64* bad, i64 position) { atomicMin(bad, (u64)position); }

// ---- advanced indexing ----
// `offsets[e] += index[e] * stride` over the broadcast index positions, the index wrapped
// (negative values count from the end) when `wrap`; an index outside [0, size) is recorded in
// `bad`. A null `offsets` only checks.
template <class I>
__device__ void index_offsets(const I* index, Strided li, i64 size, i64 stride, int wrap, i64* offsets, i64 n, u64* bad) {
    FOR_EACH_ELEMENT(e, n) {
        i64 v = (i64)index[at(li, e)];
        i64 w = wrap && v < 0 ? v + size : v;
        if (w < 0 || w >= size) {
            record_bad(bad, e);
        } else if (offsets) {
            offsets[e] += w * stride;
        }
    }
}
#define INDEX_OFFSETS(I, N) \
    extern "C" __global__ void index_offsets_##N(const I* index, Strided li, i64 size, i64 stride, int wrap, \
                                                 i64* offsets, i64 n, u64* bad) { \
        index_offsets(index, li, size, stride, wrap, offsets, n, bad); \
    }
INDEX_OFFSETS(i32, i32)
INDEX_OFFSETS(i64, i64)

// Element e of the indexing result, in its work order (index dims first, then the rest dims):
// index position e / rest_n at `offsets`, rest position e % rest_n through `x_rest` (which
// carries x's storage offset).
__device__ __forceinline__ i64 x_position(const Strided& x_rest, const i64* offsets, i64 rest_n, i64 e) {
    i64 b = e / rest_n;
    return offsets[b] + at(x_rest, e - b * rest_n);
}

#define INDEX_MOVES(W) \
    extern "C" __global__ void index_get_##W(const W* x, Strided x_rest, const i64* offsets, W* out, Strided work, \
                                             i64 rest_n, i64 n) { \
        FOR_EACH_ELEMENT(e, n) out[at(work, e)] = x[x_position(x_rest, offsets, rest_n, e)]; \
    } \
    extern "C" __global__ void index_set_##W(W* x, Strided x_rest, const i64* offsets, const W* values, Strided work, \
                                             i64 rest_n, i64 n) { \
        FOR_EACH_ELEMENT(e, n) x[x_position(x_rest, offsets, rest_n, e)] = values[at(work, e)]; \
    }
FOR_EACH_WIDTH(INDEX_MOVES)

// ---- combining values where several meet: the CPU's `combine` (floats in their compute type,
// integers wrapping, bools as logic) ----
struct reduce_sum {
    template <class C> __device__ static C floats(C a, C b) { return a + b; }
    __device__ static i64 ints(i64 a, i64 b) { return (i64)((u64)a + (u64)b); }
    __device__ static bool bools(bool a, bool b) { return a || b; }
};
struct reduce_prod {
    template <class C> __device__ static C floats(C a, C b) { return a * b; }
    __device__ static i64 ints(i64 a, i64 b) { return (i64)((u64)a * (u64)b); }
    __device__ static bool bools(bool a, bool b) { return a && b; }
};
// amax/amin propagate NaN.
struct reduce_amax {
    template <class C> __device__ static C floats(C a, C b) { return isnan(a) || isnan(b) ? a + b : (a > b ? a : b); }
    __device__ static i64 ints(i64 a, i64 b) { return a > b ? a : b; }
    __device__ static bool bools(bool a, bool b) { return a || b; }
};
struct reduce_amin {
    template <class C> __device__ static C floats(C a, C b) { return isnan(a) || isnan(b) ? a + b : (a < b ? a : b); }
    __device__ static i64 ints(i64 a, i64 b) { return a < b ? a : b; }
    __device__ static bool bools(bool a, bool b) { return a && b; }
};

template <class T> struct Reducer {
    template <class Op> __device__ static T combine(T a, T b) { return (T)Op::ints((i64)a, (i64)b); }
};
template <> struct Reducer<bool> {
    template <class Op> __device__ static bool combine(bool a, bool b) { return Op::bools(a, b); }
};
#define FLOAT_REDUCER(T) \
    template <> struct Reducer<T> { \
        template <class Op> __device__ static T combine(T a, T b) { \
            typedef typename Compute<T>::type C; \
            return cast<T>(Op::floats(cast<C>(a), cast<C>(b))); \
        } \
    };
FLOAT_REDUCER(f16)
FLOAT_REDUCER(bf16)
FLOAT_REDUCER(float)
FLOAT_REDUCER(double)

// `*p = combine(*p, v)` atomically, by compare-and-swap on the word holding `*p` (the aligned
// 32-bit word around a 1- or 2-byte element, whose neighbours the swap leaves as they are).
template <class T, class Op>
__device__ void cas_combine(T* p, T v) {
    if constexpr (sizeof(T) == 8) {
        u64* word = (u64*)p;
        u64 old = *word, assumed;
        do {
            assumed = old;
            T cur, next;
            memcpy(&cur, &assumed, 8);
            next = Reducer<T>::template combine<Op>(cur, v);
            u64 bits;
            memcpy(&bits, &next, 8);
            if (bits == assumed) return;
            old = atomicCAS(word, assumed, bits);
        } while (old != assumed);
    } else {
        unsigned* word = (unsigned*)((size_t)p & ~(size_t)3);
        unsigned shift = sizeof(T) == 4 ? 0 : ((unsigned)(size_t)p & 3u) * 8u;
        unsigned mask = sizeof(T) == 4 ? 0xffffffffu : (sizeof(T) == 2 ? 0xffffu : 0xffu) << shift;
        unsigned old = *word, assumed;
        do {
            assumed = old;
            unsigned field = (assumed & mask) >> shift, bits = 0;
            T cur, next;
            memcpy(&cur, &field, sizeof(T));
            next = Reducer<T>::template combine<Op>(cur, v);
            memcpy(&bits, &next, sizeof(T));
            unsigned updated = (assumed & ~mask) | ((bits << shift) & mask);
            if (updated == assumed) return;
            old = atomicCAS(word, assumed, updated);
        } while (old != assumed);
    }
}

// The hardware's atomic adds where there is one; compare-and-swap otherwise.
template <class T, class Op> struct Atomic {
    __device__ static void apply(T* p, T v) { cas_combine<T, Op>(p, v); }
};
template <> struct Atomic<float, reduce_sum> {
    __device__ static void apply(float* p, float v) { atomicAdd(p, v); }
};
#if __CUDA_ARCH__ >= 600
template <> struct Atomic<double, reduce_sum> {
    __device__ static void apply(double* p, double v) { atomicAdd(p, v); }
};
#endif
template <> struct Atomic<i32, reduce_sum> {
    __device__ static void apply(i32* p, i32 v) { atomicAdd(p, v); }
};
// Two's complement: the unsigned add is the signed wrapping add.
template <> struct Atomic<i64, reduce_sum> {
    __device__ static void apply(i64* p, i64 v) { atomicAdd((u64*)p, (u64)v); }
};

// `x[indices] += values`, in any order (equal up to float rounding to the CPU's index order).
#define INDEX_ADD(T, N) \
    extern "C" __global__ void index_add_##N(T* x, Strided x_rest, const i64* offsets, const T* values, Strided work, \
                                             i64 rest_n, i64 n) { \
        FOR_EACH_ELEMENT(e, n) Atomic<T, reduce_sum>::apply(&x[x_position(x_rest, offsets, rest_n, e)], values[at(work, e)]); \
    }
FOR_EACH_DTYPE(INDEX_ADD)

// ---- gather / scatter along a dim ----
// Position e of `index` (row-major over its shape) addresses `base` (a view of the indexed
// tensor with index's shape and a zero stride along the dim) plus `index[e] * stride`.
#define GATHER(W) \
    extern "C" __global__ void gather_##W(const W* x, Strided base, i64 stride, i64 size, const i64* index, Strided li, \
                                          W* out, Strided lo, i64 n, u64* bad) { \
        FOR_EACH_ELEMENT(e, n) { \
            i64 v = index[at(li, e)]; \
            if (v < 0 || v >= size) { \
                record_bad(bad, e); \
                continue; \
            } \
            out[at(lo, e)] = x[at(base, e) + v * stride]; \
        } \
    } \
    extern "C" __global__ void scatter_assign_##W(W* x, Strided base, i64 stride, const i64* index, Strided li, \
                                                  const W* src, Strided ls, i64 n) { \
        FOR_EACH_ELEMENT(e, n) x[at(base, e) + index[at(li, e)] * stride] = src[at(ls, e)]; \
    }
FOR_EACH_WIDTH(GATHER)

// The value a destination starts from without `include_self`: `which` 0 zero, 1 one, 2 the
// dtype's lowest value (amax), 3 its highest (amin).
template <class T> struct Limits;
#define INT_LIMITS(T, low, high) \
    template <> struct Limits<T> { \
        __device__ static T lowest() { return low; } \
        __device__ static T highest() { return high; } \
    };
INT_LIMITS(u8, 0, 255)
INT_LIMITS(i8, -128, 127)
INT_LIMITS(i16, -32768, 32767)
INT_LIMITS(i32, -2147483647 - 1, 2147483647)
INT_LIMITS(i64, -9223372036854775807ll - 1, 9223372036854775807ll)
template <> struct Limits<bool> {
    __device__ static bool lowest() { return false; }
    __device__ static bool highest() { return true; }
};
#define FLOAT_LIMITS(T) \
    template <> struct Limits<T> { \
        __device__ static T lowest() { return cast<T>(-__int_as_float(0x7f800000)); } \
        __device__ static T highest() { return cast<T>(__int_as_float(0x7f800000)); } \
    };
FLOAT_LIMITS(f16)
FLOAT_LIMITS(bf16)
FLOAT_LIMITS(float)
FLOAT_LIMITS(double)

template <class T> __device__ T identity(int which) {
    switch (which) {
        case 1: return cast<T>(1);
        case 2: return Limits<T>::lowest();
        case 3: return Limits<T>::highest();
        default: return cast<T>(0);
    }
}

// A mean scatter's division by its count (>= 1): in float64 for floats, floor division for
// integers, as the CPU's.
template <class T> __device__ T divide(T v, i64 c) {
    i64 a = (i64)v, q = a / c;
    return (T)(a % c != 0 && a < 0 ? q - 1 : q);
}
__device__ f16 divide(f16 v, i64 c) { return cast<f16>(to_float(v) / (double)c); }
__device__ bf16 divide(bf16 v, i64 c) { return cast<bf16>(to_float(v) / (double)c); }
__device__ float divide(float v, i64 c) { return (float)((double)v / (double)c); }
__device__ double divide(double v, i64 c) { return v / (double)c; }

#define SCATTER_OP(op, T, N) \
    extern "C" __global__ void scatter_##op##_##N(T* x, Strided base, i64 stride, const i64* index, Strided li, \
                                                  const T* src, Strided ls, i64 n) { \
        FOR_EACH_ELEMENT(e, n) \
            Atomic<T, reduce_##op>::apply(&x[at(base, e) + index[at(li, e)] * stride], src[at(ls, e)]); \
    }
#define SCATTER(T, N) \
    SCATTER_OP(sum, T, N) SCATTER_OP(prod, T, N) SCATTER_OP(amax, T, N) SCATTER_OP(amin, T, N) \
    extern "C" __global__ void scatter_identity_##N(T* x, Strided base, i64 stride, const i64* index, Strided li, \
                                                    i64 n, int which) { \
        T value = identity<T>(which); \
        FOR_EACH_ELEMENT(e, n) x[at(base, e) + index[at(li, e)] * stride] = value; \
    } \
    extern "C" __global__ void scatter_mean_##N(T* x, Strided lx, const i64* counts, i64 n) { \
        FOR_EACH_ELEMENT(i, n) { \
            i64 c = counts[i]; \
            if (c != 0) x[at(lx, i)] = divide(x[at(lx, i)], c); \
        } \
    }

FOR_EACH_DTYPE(SCATTER)

// A mean scatter's count of the values that met at each destination.
extern "C" __global__ void scatter_count(i64* counts, Strided base, i64 stride, const i64* index, Strided li, i64 n) {
    FOR_EACH_ELEMENT(e, n) atomicAdd((u64*)&counts[at(base, e) + index[at(li, e)] * stride], 1ull);
}

// ---- tril / triu of the last two dims ----
#define TRI(W) \
    extern "C" __global__ void tri_##W(const W* x, Strided lx, W* out, Strided lo, i64 rows, i64 cols, i64 diagonal, \
                                       int upper, i64 n) { \
        FOR_EACH_ELEMENT(e, n) { \
            i64 j = e % cols, i = (e / cols) % rows; \
            bool keep = upper ? j - i >= diagonal : j - i <= diagonal; \
            out[at(lo, e)] = keep ? x[at(lx, e)] : W{}; \
        } \
    }
FOR_EACH_WIDTH(TRI)

// ---- nonzero and masked_select: block b counts the selected elements of its chunk
// [b * chunk, (b + 1) * chunk) of the row-major order, the host turns the counts into each
// chunk's first output row, and block b writes its chunk's rows in order ----
#define SCAN_THREADS 256
#define MAX_COORD_DIMS 25

// The shape whose row-major coordinates nonzero writes.
struct Dims {
    i64 ndim;
    i64 size[MAX_COORD_DIMS];
};

template <class T> __device__ __forceinline__ bool is_nonzero(T v) { return cast<bool>(v); }

// The number of set flags among the block's threads before this one; `*total` gets them all.
// Every thread of the (SCAN_THREADS-wide) block calls it.
__device__ int block_exclusive_scan(int flag, int* total) {
    __shared__ int warp_sums[SCAN_THREADS / 32];
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    int v = flag;
    for (int o = 1; o < 32; o <<= 1) {
        int u = __shfl_up_sync(0xffffffffu, v, o);
        if (lane >= o) v += u;
    }
    if (lane == 31) warp_sums[warp] = v;
    __syncthreads();
    if (warp == 0) {
        int s = lane < SCAN_THREADS / 32 ? warp_sums[lane] : 0;
        for (int o = 1; o < 32; o <<= 1) {
            int u = __shfl_up_sync(0xffffffffu, s, o);
            if (lane >= o) s += u;
        }
        if (lane < SCAN_THREADS / 32) warp_sums[lane] = s;
    }
    __syncthreads();
    int before = (warp > 0 ? warp_sums[warp - 1] : 0) + v - flag;
    *total = warp_sums[SCAN_THREADS / 32 - 1];
    __syncthreads();
    return before;
}

template <class T>
__device__ void count_nonzero(const T* x, Strided lx, i64 n, i64 chunk, i64* counts) {
    i64 start = (i64)blockIdx.x * chunk, end = min(start + chunk, n);
    i64 found = 0;
    for (i64 e = start + threadIdx.x; e < end; e += blockDim.x) found += is_nonzero(x[at(lx, e)]);
    if (found) atomicAdd((u64*)&counts[blockIdx.x], (u64)found);
}

// Calls `write(row, e)` for each selected element e of block b's chunk, rows numbered from
// `starts[b]` in row-major order.
template <class Selected, class Write>
__device__ void compact(i64 n, i64 chunk, const i64* starts, Selected selected, Write write) {
    i64 start = (i64)blockIdx.x * chunk, end = min(start + chunk, n);
    i64 row = starts[blockIdx.x];
    for (i64 tile = start; tile < end; tile += SCAN_THREADS) {
        i64 e = tile + threadIdx.x;
        int flag = e < end && selected(e);
        int total;
        int before = block_exclusive_scan(flag, &total);
        if (flag) write(row + before, e);
        row += total;
    }
}

#define NONZERO(T, N) \
    extern "C" __global__ void nonzero_count_##N(const T* x, Strided lx, i64 n, i64 chunk, i64* counts) { \
        count_nonzero(x, lx, n, chunk, counts); \
    } \
    extern "C" __global__ void nonzero_write_##N(const T* x, Strided lx, i64 n, i64 chunk, const i64* starts, i64* out, \
                                                 Dims dims) { \
        compact(n, chunk, starts, [&](i64 e) { return is_nonzero(x[at(lx, e)]); }, [&](i64 row, i64 e) { \
            for (int d = (int)dims.ndim - 1; d >= 0; --d) { \
                out[row * dims.ndim + d] = e % dims.size[d]; \
                e /= dims.size[d]; \
            } \
        }); \
    }
FOR_EACH_DTYPE(NONZERO)

#define MASKED_SELECT(W) \
    extern "C" __global__ void masked_select_##W(const W* x, Strided lx, const bool* mask, Strided lm, i64 n, i64 chunk, \
                                                 const i64* starts, W* out) { \
        compact(n, chunk, starts, [&](i64 e) { return mask[at(lm, e)]; }, [&](i64 row, i64 e) { out[row] = x[at(lx, e)]; }); \
    }
FOR_EACH_WIDTH(MASKED_SELECT)

// ---- embedding_bag: element e of the fresh [bags, dim] `out` pools column e % dim of the
// rows `index[start, end)` of bag e / dim (`bounds` holds the pairs), in float64 as the CPU:
// `mode` 0 the sum scaled by `weights`, 1 the mean, 2 the maximum; rows equal to `padding`
// (when `has_padding`) are skipped and not counted; an empty bag gives zeros ----
template <class T>
__device__ void embedding_bag(const T* weight, i64 offset, i64 s0, i64 s1, i64 dim, const i64* index, const i64* bounds,
                              const double* weights, int mode, int has_padding, i64 padding, T* out, i64 n) {
    FOR_EACH_ELEMENT(e, n) {
        i64 b = e / dim, j = e - b * dim;
        double acc = mode == 2 ? -__longlong_as_double(0x7ff0000000000000ll) : 0.0;
        i64 members = 0;
        for (i64 k = bounds[2 * b]; k < bounds[2 * b + 1]; ++k) {
            i64 row = index[k];
            if (has_padding && row == padding) continue;
            double v = cast<double>(weight[offset + row * s0 + j * s1]);
            acc = mode == 2 ? fmax(acc, v) : __dadd_rn(acc, __dmul_rn(v, weights[k]));
            ++members;
        }
        if (members == 0) acc = 0.0;
        out[e] = cast<T>(mode == 1 && members > 0 ? acc / (double)members : acc);
    }
}

#define EMBEDDING_BAG(T, N) \
    extern "C" __global__ void embedding_bag_##N(const T* weight, i64 offset, i64 s0, i64 s1, i64 dim, const i64* index, \
                                                 const i64* bounds, const double* weights, int mode, int has_padding, \
                                                 i64 padding, T* out, i64 n) { \
        embedding_bag(weight, offset, s0, s1, dim, index, bounds, weights, mode, has_padding, padding, out, n); \
    }
FOR_EACH_DTYPE(EMBEDDING_BAG)

// ---- embedding_renorm_: each listed (distinct) row of `weight` whose `p`-norm exceeds
// `max_norm` scaled to that norm, in float64 as the CPU (PyTorch's 1e-7 in the divisor) ----
template <class T>
__device__ void embedding_renorm(T* weight, i64 offset, i64 s0, i64 s1, i64 dim, const i64* rows, i64 n, double max_norm,
                                 double p) {
    FOR_EACH_ELEMENT(r, n) {
        T* row = weight + offset + rows[r] * s0;
        double norm = 0.0;
        for (i64 j = 0; j < dim; ++j) {
            double v = fabs(cast<double>(row[j * s1]));
            norm = isinf(p) ? fmax(norm, v) : (p == 0.0 ? norm + (v != 0.0) : __dadd_rn(norm, pow(v, p)));
        }
        if (!isinf(p) && p != 0.0) norm = pow(norm, 1.0 / p);
        if (norm > max_norm) {
            double scale = max_norm / (norm + 1e-7);
            for (i64 j = 0; j < dim; ++j) row[j * s1] = cast<T>(__dmul_rn(cast<double>(row[j * s1]), scale));
        }
    }
}
#define EMBEDDING_RENORM(T, N) \
    extern "C" __global__ void embedding_renorm_##N(T* weight, i64 offset, i64 s0, i64 s1, i64 dim, const i64* rows, i64 n, \
                                                    double max_norm, double p) { \
        embedding_renorm(weight, offset, s0, s1, dim, rows, n, max_norm, p); \
    }
FOR_EACH_FLOAT(EMBEDDING_RENORM)
