// Two-input elementwise ops, `binary_<op>_<dtype>`. An operand whose pointer is null is a Python
// number, passed as a kernel argument (`af`/`bf` for float ops, already rounded to the dtype;
// `ai`/`bi` for integer ops). Float ops compute in float (double for float64), integer ops in
// i64 (wrapping, as the CPU's); comparisons and logical ops write bool.

// `out = f(a, b)` elementwise, a number standing in for an operand whose pointer is null; through
// the contiguous loop where every operand allows it (a number's layout is `out`'s).
template <class T, class O, class C, class F>
__device__ __forceinline__ void zip(const T* a, const Strided& la, C as, const T* b, const Strided& lb, C bs, O* out,
                                    const Strided& lo, i64 n, F f) {
    if (la.ndim == 0 && lb.ndim == 0 && lo.ndim == 0) {
        const T* pa = a ? a + la.offset : a;
        const T* pb = b ? b + lb.offset : b;
        out += lo.offset;
        for_each_loaded(n, [&](i64 i) { return f(pa ? cast<C>(pa[i]) : as, pb ? cast<C>(pb[i]) : bs); }, [&](i64 i, O v) { out[i] = v; });
    } else {
        for_each_element(n, [&](i64 i) {
            out[at(lo, i)] = f(a ? cast<C>(a[at(la, i)]) : as, b ? cast<C>(b[at(lb, i)]) : bs);
        });
    }
}

template <class T, class O, class Op>
__device__ void float_zip(const T* a, const Strided& la, double af, const T* b, const Strided& lb, double bf, O* out,
                          const Strided& lo, i64 n) {
    typedef typename Compute<T>::type C;
    Op op;
    zip(a, la, (C)af, b, lb, (C)bf, out, lo, n, [&](C x, C y) { return cast<O>(op(x, y)); });
}

template <class T, class O, class Op>
__device__ void int_zip(const T* a, const Strided& la, i64 ai, const T* b, const Strided& lb, i64 bi, O* out,
                        const Strided& lo, i64 n) {
    Op op;
    zip(a, la, ai, b, lb, bi, out, lo, n, [&](i64 x, i64 y) { return (O)op(x, y); });
}

// ---- float ops ----
#define FLOAT_OP(name, R, expr) \
    struct float_##name { \
        template <class C> __device__ R operator()(C x, C y) const { return (expr); } \
    };

// Python's floor division: the floor of the exact quotient, through fmod to avoid double rounding.
template <class C> __device__ C floor_divide(C x, C y) {
    if (y == (C)0) return x / y;
    C m = fmod(x, y);
    C d = (x - m) / y;
    if (m != (C)0 && ((y < (C)0) != (m < (C)0))) d -= (C)1;
    if (d == (C)0) return (x / y) * (C)0;
    C f = floor(d);
    return d - f > (C)0.5 ? f + (C)1 : f;
}
template <class C> __device__ C python_remainder(C x, C y) {
    C r = fmod(x, y);
    return r != (C)0 && ((r < (C)0) != (y < (C)0)) ? r + y : r;
}

FLOAT_OP(add, C, x + y)
FLOAT_OP(sub, C, x - y)
FLOAT_OP(mul, C, x * y)
FLOAT_OP(div, C, x / y)
FLOAT_OP(floor_div, C, floor_divide(x, y))
FLOAT_OP(trunc_div, C, trunc(x / y))
FLOAT_OP(remainder, C, python_remainder(x, y))
FLOAT_OP(fmod, C, fmod(x, y))
FLOAT_OP(pow, C, pow(x, y))
FLOAT_OP(atan2, C, atan2(x, y))
FLOAT_OP(hypot, C, hypot(x, y))
// maximum/minimum propagate NaN; fmax/fmin ignore it.
FLOAT_OP(maximum, C, isnan(x) || isnan(y) ? x + y : fmax(x, y))
FLOAT_OP(minimum, C, isnan(x) || isnan(y) ? x + y : fmin(x, y))
FLOAT_OP(fmax, C, fmax(x, y))
FLOAT_OP(fmin, C, fmin(x, y))
FLOAT_OP(eq, bool, x == y)
FLOAT_OP(ne, bool, x != y)
FLOAT_OP(lt, bool, x < y)
FLOAT_OP(le, bool, x <= y)
FLOAT_OP(gt, bool, x > y)
FLOAT_OP(ge, bool, x >= y)
FLOAT_OP(logical_and, bool, x != (C)0 && y != (C)0)
FLOAT_OP(logical_or, bool, x != (C)0 || y != (C)0)
FLOAT_OP(logical_xor, bool, (x != (C)0) != (y != (C)0))

#define FLOAT_KERNEL_TO(name, T, N, O) \
    extern "C" __global__ void binary_##name##_##N(const T* a, Strided la, double af, i64 ai, const T* b, Strided lb, \
                                                   double bf, i64 bi, O* out, Strided lo, i64 n) { \
        float_zip<T, O, float_##name>(a, la, af, b, lb, bf, out, lo, n); \
    }
#define FLOAT_KERNEL(name, T, N) FLOAT_KERNEL_TO(name, T, N, T)
#define FLOAT_TEST(name, T, N) FLOAT_KERNEL_TO(name, T, N, bool)
#define FLOAT_KERNELS(T, N) \
    FLOAT_KERNEL(add, T, N) FLOAT_KERNEL(sub, T, N) FLOAT_KERNEL(mul, T, N) FLOAT_KERNEL(div, T, N) \
    FLOAT_KERNEL(floor_div, T, N) FLOAT_KERNEL(trunc_div, T, N) FLOAT_KERNEL(remainder, T, N) \
    FLOAT_KERNEL(fmod, T, N) FLOAT_KERNEL(pow, T, N) FLOAT_KERNEL(atan2, T, N) FLOAT_KERNEL(hypot, T, N) \
    FLOAT_KERNEL(maximum, T, N) FLOAT_KERNEL(minimum, T, N) FLOAT_KERNEL(fmax, T, N) FLOAT_KERNEL(fmin, T, N) \
    FLOAT_TEST(eq, T, N) FLOAT_TEST(ne, T, N) FLOAT_TEST(lt, T, N) FLOAT_TEST(le, T, N) FLOAT_TEST(gt, T, N) \
    FLOAT_TEST(ge, T, N) FLOAT_TEST(logical_and, T, N) FLOAT_TEST(logical_or, T, N) FLOAT_TEST(logical_xor, T, N)
FOR_EACH_FLOAT(FLOAT_KERNELS)

// ---- integer ops over i64; divisors are checked non-zero first (`any_zero_<dtype>`) ----
typedef unsigned long long u64;
#define INT_OP(name, R, expr) \
    struct int_##name { \
        __device__ R operator()(i64 x, i64 y) const { return (expr); } \
    };

// Wrapping as the CPU's: `i64::MIN / -1` is `i64::MIN`, `x % -1` is 0.
__device__ __forceinline__ i64 wrapping_div(i64 x, i64 y) { return y == -1 ? (i64)(0ull - (u64)x) : x / y; }
__device__ __forceinline__ i64 wrapping_rem(i64 x, i64 y) { return y == -1 ? 0 : x % y; }
__device__ i64 floor_divide_i64(i64 x, i64 y) {
    i64 q = wrapping_div(x, y);
    return wrapping_rem(x, y) != 0 && ((x < 0) != (y < 0)) ? q - 1 : q;
}
__device__ i64 remainder_i64(i64 x, i64 y) {
    i64 r = wrapping_rem(x, y);
    return r != 0 && ((r < 0) != (y < 0)) ? r + y : r;
}
__device__ i64 power_i64(i64 base, i64 exp) {
    if (exp < 0) return base == 1 ? 1 : (base == -1 ? (exp % 2 == 0 ? 1 : -1) : 0);
    u64 result = 1, b = (u64)base;
    for (; exp > 0; exp >>= 1, b *= b)
        if (exp & 1) result *= b;
    return (i64)result;
}

INT_OP(add, i64, (i64)((u64)x + (u64)y))
INT_OP(sub, i64, (i64)((u64)x - (u64)y))
INT_OP(mul, i64, (i64)((u64)x * (u64)y))
INT_OP(floor_div, i64, floor_divide_i64(x, y))
INT_OP(trunc_div, i64, wrapping_div(x, y))
INT_OP(remainder, i64, remainder_i64(x, y))
INT_OP(fmod, i64, wrapping_rem(x, y))
INT_OP(pow, i64, power_i64(x, y))
INT_OP(maximum, i64, x > y ? x : y)
INT_OP(minimum, i64, x < y ? x : y)
INT_OP(bitwise_and, i64, x & y)
INT_OP(bitwise_or, i64, x | y)
INT_OP(bitwise_xor, i64, x ^ y)
INT_OP(left_shift, i64, y >= 0 && y < 64 ? (i64)((u64)x << y) : 0)
INT_OP(right_shift, i64, y >= 0 && y < 64 ? x >> y : (x < 0 ? -1 : 0))
INT_OP(eq, bool, x == y)
INT_OP(ne, bool, x != y)
INT_OP(lt, bool, x < y)
INT_OP(le, bool, x <= y)
INT_OP(gt, bool, x > y)
INT_OP(ge, bool, x >= y)
INT_OP(logical_and, bool, x != 0 && y != 0)
INT_OP(logical_or, bool, x != 0 || y != 0)
INT_OP(logical_xor, bool, (x != 0) != (y != 0))

#define INT_KERNEL_TO(name, T, N, O) \
    extern "C" __global__ void binary_##name##_##N(const T* a, Strided la, double af, i64 ai, const T* b, Strided lb, \
                                                   double bf, i64 bi, O* out, Strided lo, i64 n) { \
        int_zip<T, O, int_##name>(a, la, ai, b, lb, bi, out, lo, n); \
    }
#define INT_KERNEL(name, T, N) INT_KERNEL_TO(name, T, N, T)
#define INT_TEST(name, T, N) INT_KERNEL_TO(name, T, N, bool)
// What bool and the integers share: on bool, add is `or` and mul is `and` (through i64, cast back).
#define LOGIC_KERNELS(T, N) \
    INT_KERNEL(add, T, N) INT_KERNEL(mul, T, N) INT_KERNEL(maximum, T, N) INT_KERNEL(minimum, T, N) \
    INT_KERNEL(bitwise_and, T, N) INT_KERNEL(bitwise_or, T, N) INT_KERNEL(bitwise_xor, T, N) \
    INT_TEST(eq, T, N) INT_TEST(ne, T, N) INT_TEST(lt, T, N) INT_TEST(le, T, N) INT_TEST(gt, T, N) \
    INT_TEST(ge, T, N) INT_TEST(logical_and, T, N) INT_TEST(logical_or, T, N) INT_TEST(logical_xor, T, N)
#define INT_KERNELS(T, N) \
    LOGIC_KERNELS(T, N) INT_KERNEL(sub, T, N) INT_KERNEL(floor_div, T, N) INT_KERNEL(trunc_div, T, N) \
    INT_KERNEL(remainder, T, N) INT_KERNEL(fmod, T, N) INT_KERNEL(pow, T, N) INT_KERNEL(left_shift, T, N) \
    INT_KERNEL(right_shift, T, N)
FOR_EACH_INT(INT_KERNELS)
LOGIC_KERNELS(bool, bool)

// Sets `*found` when an integer divisor holds a zero (the host reads it before dividing).
#define ANY_ZERO(T, N) \
    extern "C" __global__ void any_zero_##N(const T* b, Strided lb, i64 n, int* found) { \
        FOR_EACH_ELEMENT(i, n) if (b[at(lb, i)] == 0) *found = 1; \
    }
FOR_EACH_INT(ANY_ZERO)
