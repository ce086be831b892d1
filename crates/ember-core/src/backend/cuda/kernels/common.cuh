// Shared by every kernel family (prepended to each family's source before NVRTC compiles it,
// so no include path is needed): element types, casts like Ember's `.to(dtype)`, and strided
// indexing.
typedef unsigned char u8;
typedef signed char i8;
typedef short i16;
typedef int i32;
typedef long long i64;

// float16 and bfloat16 as their bits; arithmetic widens them to float, as the CPU kernels do.
struct f16 { unsigned short bits; };
struct bf16 { unsigned short bits; };

__device__ __forceinline__ float to_float(f16 h) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h.bits));
    return f;
}
__device__ __forceinline__ float to_float(bf16 h) { return __uint_as_float(((unsigned)h.bits) << 16); }
__device__ __forceinline__ f16 f16_from(float f) {
    f16 h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h.bits) : "f"(f));
    return h;
}
// Round to nearest even; a NaN stays a (quiet) NaN.
__device__ __forceinline__ bf16 bf16_from(float f) {
    unsigned u = __float_as_uint(f);
    bf16 h;
    if ((u & 0x7fffffffu) > 0x7f800000u) {
        h.bits = (unsigned short)((u >> 16) | 0x40u);
    } else {
        h.bits = (unsigned short)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
    }
    return h;
}

// cast<O>(x): C's conversions (anything to bool tests non-zero, float to int truncates), the
// half types through float.
template <class O> struct Cast {
    template <class I> __device__ static O from(I x) { return (O)x; }
    __device__ static O from(f16 x) { return (O)to_float(x); }
    __device__ static O from(bf16 x) { return (O)to_float(x); }
};
template <> struct Cast<f16> {
    template <class I> __device__ static f16 from(I x) { return f16_from((float)x); }
    __device__ static f16 from(f16 x) { return x; }
    __device__ static f16 from(bf16 x) { return f16_from(to_float(x)); }
};
template <> struct Cast<bf16> {
    template <class I> __device__ static bf16 from(I x) { return bf16_from((float)x); }
    __device__ static bf16 from(f16 x) { return bf16_from(to_float(x)); }
    __device__ static bf16 from(bf16 x) { return x; }
};
template <class O, class I> __device__ __forceinline__ O cast(I x) { return Cast<O>::from(x); }

// The type arithmetic runs in: float for the half types, the type itself otherwise.
template <class T> struct Compute { typedef T type; };
template <> struct Compute<f16> { typedef float type; };
template <> struct Compute<bf16> { typedef float type; };

// One operand's layout over the op's shape, in elements (`Strided` in strided.rs). `ndim == 0`
// marks an operand laid out contiguously in the op's order: element i is at `offset + i`.
#define MAX_DIMS 8
struct Strided {
    i64 offset;
    i64 ndim;
    i64 shape[MAX_DIMS];
    i64 strides[MAX_DIMS];
};

// Out of line, so a family's many kernels share one copy of the divisions; 32-bit ones while the
// index and the dim fit (almost always), which cost a fraction of 64-bit ones.
__device__ __noinline__ i64 strided_at(const Strided& s, i64 i) {
    i64 off = s.offset;
    int d = (int)s.ndim - 1;
    for (; d >= 0 && i <= 0xffffffffll && s.shape[d] <= 0xffffffffll; --d) {
        unsigned u = (unsigned)i, n = (unsigned)s.shape[d];
        off += (i64)(u % n) * s.strides[d];
        i = u / n;
    }
    for (; d >= 0; --d) {
        i64 n = s.shape[d];
        off += (i % n) * s.strides[d];
        i /= n;
    }
    return off;
}

__device__ __forceinline__ i64 at(const Strided& s, i64 i) { return s.ndim == 0 ? s.offset + i : strided_at(s, i); }

// Every thread takes elements i, i + threads, ...: any grid covers any n.
#define FOR_EACH_ELEMENT(i, n) \
    for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += (i64)gridDim.x * blockDim.x)

// `f(i)` for every element i < n, as FOR_EACH_ELEMENT.
template <class F> __device__ __forceinline__ void for_each_element(i64 n, F f) {
    FOR_EACH_ELEMENT(i, n) f(i);
}

// `store(i, load(i))` for every element i < n, four elements a trip, all four loaded before any
// is stored: a load per thread in flight is too few to keep HBM busy, and loads cannot pass a
// store the compiler cannot prove apart from them.
template <class Load, class Store>
__device__ __forceinline__ void for_each_loaded(i64 n, Load load, Store store) {
    i64 step = (i64)gridDim.x * blockDim.x, i = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    for (; i + 3 * step < n; i += 4 * step) {
        auto v0 = load(i);
        auto v1 = load(i + step);
        auto v2 = load(i + 2 * step);
        auto v3 = load(i + 3 * step);
        store(i, v0);
        store(i + step, v1);
        store(i + 2 * step, v2);
        store(i + 3 * step, v3);
    }
    for (; i < n; i += step) store(i, load(i));
}

// Elementwise families take one loop for operands all laid out contiguously (element i at
// offset + i, no layout reads) and one through `at` for the rest. Layouts are passed by
// reference: a copy per element would cost more than the element.

// (C type, Ember's dtype name) of every real dtype, for the families to instantiate.
#define FOR_EACH_DTYPE(X) \
    X(bool, bool) X(u8, u8) X(i8, i8) X(i16, i16) X(i32, i32) X(i64, i64) \
    X(f16, f16) X(bf16, bf16) X(float, f32) X(double, f64)
#define FOR_EACH_INT(X) X(u8, u8) X(i8, i8) X(i16, i16) X(i32, i32) X(i64, i64)
#define FOR_EACH_FLOAT(X) X(f16, f16) X(bf16, bf16) X(float, f32) X(double, f64)

// ---- for the families that fold many values into one (reduce, norm) ----
// The identity of max and min in a compute type: ±infinity for floats, the i64 extremes.
template <class C> __device__ __forceinline__ C lowest();
template <class C> __device__ __forceinline__ C highest();
template <> __device__ __forceinline__ float lowest<float>() { return -__int_as_float(0x7f800000); }
template <> __device__ __forceinline__ float highest<float>() { return __int_as_float(0x7f800000); }
template <> __device__ __forceinline__ double lowest<double>() { return -__longlong_as_double(0x7ff0000000000000ll); }
template <> __device__ __forceinline__ double highest<double>() { return __longlong_as_double(0x7ff0000000000000ll); }
template <> __device__ __forceinline__ i64 lowest<i64>() { return (i64)0x8000000000000000ull; }
template <> __device__ __forceinline__ i64 highest<i64>() { return (i64)0x7fffffffffffffffull; }

__device__ __forceinline__ int shfl_xor(int v, int m) { return __shfl_xor_sync(0xffffffffu, v, m); }
__device__ __forceinline__ i64 shfl_xor(i64 v, int m) { return __shfl_xor_sync(0xffffffffu, v, m); }
__device__ __forceinline__ float shfl_xor(float v, int m) { return __shfl_xor_sync(0xffffffffu, v, m); }
__device__ __forceinline__ double shfl_xor(double v, int m) { return __shfl_xor_sync(0xffffffffu, v, m); }

// `v` folded with `Op::step` over a group of `group` threads: a warp (32), or the whole block
// (a multiple of 32, every thread calling, `scratch` holding 32 values). Every thread gets the
// result; the order of the steps is fixed, so results do not vary between runs.
template <class Op, class A>
__device__ A group_fold(A v, int group, A* scratch) {
    for (int m = 16; m > 0; m >>= 1) v = Op::step(v, shfl_xor(v, m));
    if (group == 32) return v;
    __syncthreads();  // the previous call's readers are done with `scratch`
    if ((threadIdx.x & 31) == 0) scratch[threadIdx.x >> 5] = v;
    __syncthreads();
    v = scratch[0];
    for (int w = 1; w < (group >> 5); ++w) v = Op::step(v, scratch[w]);
    return v;
}
