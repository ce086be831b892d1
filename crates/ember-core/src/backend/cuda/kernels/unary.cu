// One-input elementwise ops, `unary_<op>_<dtype>`, in three shapes (`UnaryKind` in unary.rs):
// float ops compute in float (double for float64) with up to three double parameters; integer
// ops compute in i64, wrapping, with two i64 parameters; predicates write bool.

// `y = f(x)` elementwise, through the contiguous loop where both operands allow it.
template <class X, class Y, class F>
__device__ __forceinline__ void map(const X* x, const Strided& lx, Y* y, const Strided& ly, i64 n, F f) {
    if (lx.ndim == 0 && ly.ndim == 0) {
        x += lx.offset;
        y += ly.offset;
        for_each_loaded(n, [&](i64 i) { return f(x[i]); }, [&](i64 i, Y v) { y[i] = v; });
    } else {
        for_each_element(n, [&](i64 i) { y[at(ly, i)] = f(x[at(lx, i)]); });
    }
}

template <class T, class Op>
__device__ void float_map(const T* x, const Strided& lx, T* y, const Strided& ly, i64 n, double p0, double p1, double p2) {
    typedef typename Compute<T>::type C;
    Op op;
    map(x, lx, y, ly, n, [&](T v) { return cast<T>(op(cast<C>(v), (C)p0, (C)p1, (C)p2)); });
}

template <class T, class Op>
__device__ void int_map(const T* x, const Strided& lx, T* y, const Strided& ly, i64 n, i64 p0, i64 p1) {
    Op op;
    map(x, lx, y, ly, n, [&](T v) { return (T)op((i64)v, p0, p1); });
}

template <class T, class Op>
__device__ void predicate_map(const T* x, const Strided& lx, bool* y, const Strided& ly, i64 n) {
    typedef typename Compute<T>::type C;
    Op op;
    map(x, lx, y, ly, n, [&](T v) { return op(cast<C>(v)); });
}

// ---- float ops: `v` and the parameters `a`, `b`, `c` in the compute type ----
#define FLOAT_OP(name, expr) \
    struct float_##name { \
        template <class C> __device__ C operator()(C v, C a, C b, C c) const { return (expr); } \
    };

template <class C> __device__ __forceinline__ C softplus(C v, C beta, C threshold) {
    return v * beta > threshold ? v : log1p(exp(v * beta)) / beta;
}

FLOAT_OP(neg, -v)
FLOAT_OP(abs, fabs(v))
FLOAT_OP(sign, v > (C)0 ? (C)1 : (v < (C)0 ? (C)-1 : v * (C)0))
FLOAT_OP(square, v * v)
FLOAT_OP(floor, floor(v))
FLOAT_OP(ceil, ceil(v))
FLOAT_OP(round, rint(v))
FLOAT_OP(trunc, trunc(v))
FLOAT_OP(relu, v > (C)0 || isnan(v) ? v : (C)0)
FLOAT_OP(hardtanh, isnan(v) ? v : fmin(fmax(v, a), b))
// Bounds `a`, `b` (±inf when absent); a NaN bound makes NaN, as PyTorch's.
FLOAT_OP(clamp, isnan(v) ? v : (isnan(a) || isnan(b) ? a + b : fmin(fmax(v, a), b)))
FLOAT_OP(exp, exp(v))
FLOAT_OP(exp2, exp2(v))
FLOAT_OP(expm1, expm1(v))
FLOAT_OP(log, log(v))
FLOAT_OP(log2, log2(v))
FLOAT_OP(log10, log10(v))
FLOAT_OP(log1p, log1p(v))
FLOAT_OP(sqrt, sqrt(v))
FLOAT_OP(rsqrt, (C)1 / sqrt(v))
FLOAT_OP(reciprocal, (C)1 / v)
FLOAT_OP(sin, sin(v))
FLOAT_OP(cos, cos(v))
FLOAT_OP(tan, tan(v))
FLOAT_OP(asin, asin(v))
FLOAT_OP(acos, acos(v))
FLOAT_OP(atan, atan(v))
FLOAT_OP(sinh, sinh(v))
FLOAT_OP(cosh, cosh(v))
FLOAT_OP(tanh, tanh(v))
FLOAT_OP(sigmoid, (C)1 / ((C)1 + exp(-v)))
// `b != 0`: clamp to [eps, 1 - eps] first, eps = `a`.
FLOAT_OP(logit, b != (C)0 ? log(fmin(fmax(v, a), (C)1 - a) / ((C)1 - fmin(fmax(v, a), (C)1 - a))) : log(v / ((C)1 - v)))
FLOAT_OP(erf, erf(v))
FLOAT_OP(erfc, erfc(v))
FLOAT_OP(frac, v - trunc(v))
FLOAT_OP(gelu, (C)0.5 * v * ((C)1 + erf(v * (C)0.7071067811865476)))
FLOAT_OP(gelu_tanh, (C)0.5 * v * ((C)1 + tanh((C)0.7978845608028654 * (v + (C)0.044715 * v * v * v))))
FLOAT_OP(silu, v / ((C)1 + exp(-v)))
FLOAT_OP(mish, v * tanh(softplus(v, (C)1, (C)20)))
FLOAT_OP(selu, v > (C)0 ? v * (C)1.0507009873554805 : (exp(v) - (C)1) * (C)(1.0507009873554805 * 1.6732632423543772))
FLOAT_OP(elu, v > (C)0 ? v : (exp(v) - (C)1) * a)
FLOAT_OP(leaky_relu, v > (C)0 ? v : v * a)
FLOAT_OP(softplus, softplus(v, a, b))
FLOAT_OP(hardswish, v * fmin(fmax(v + (C)3, (C)0), (C)6) / (C)6)
FLOAT_OP(hardsigmoid, fmin(fmax(v + (C)3, (C)0), (C)6) / (C)6)
// Replacements for NaN, +inf, -inf: `a`, `b`, `c` (already finite in the dtype).
FLOAT_OP(nan_to_num, isnan(v) ? a : (isinf(v) ? (v > (C)0 ? b : c) : v))
FLOAT_OP(angle, v < (C)0 ? (C)3.141592653589793 : (isnan(v) ? v : (C)0))
FLOAT_OP(identity, v)

#define FLOAT_KERNEL(name, T, N) \
    extern "C" __global__ void unary_##name##_##N(const T* x, Strided lx, T* y, Strided ly, i64 n, double p0, double p1, \
                                                  double p2) { \
        float_map<T, float_##name>(x, lx, y, ly, n, p0, p1, p2); \
    }
#define FLOAT_KERNELS(T, N) \
    FLOAT_KERNEL(neg, T, N) FLOAT_KERNEL(abs, T, N) FLOAT_KERNEL(sign, T, N) FLOAT_KERNEL(square, T, N) \
    FLOAT_KERNEL(floor, T, N) FLOAT_KERNEL(ceil, T, N) FLOAT_KERNEL(round, T, N) FLOAT_KERNEL(trunc, T, N) \
    FLOAT_KERNEL(relu, T, N) FLOAT_KERNEL(hardtanh, T, N) FLOAT_KERNEL(clamp, T, N) FLOAT_KERNEL(exp, T, N) \
    FLOAT_KERNEL(exp2, T, N) FLOAT_KERNEL(expm1, T, N) FLOAT_KERNEL(log, T, N) FLOAT_KERNEL(log2, T, N) \
    FLOAT_KERNEL(log10, T, N) FLOAT_KERNEL(log1p, T, N) FLOAT_KERNEL(sqrt, T, N) FLOAT_KERNEL(rsqrt, T, N) \
    FLOAT_KERNEL(reciprocal, T, N) FLOAT_KERNEL(sin, T, N) FLOAT_KERNEL(cos, T, N) FLOAT_KERNEL(tan, T, N) \
    FLOAT_KERNEL(asin, T, N) FLOAT_KERNEL(acos, T, N) FLOAT_KERNEL(atan, T, N) FLOAT_KERNEL(sinh, T, N) \
    FLOAT_KERNEL(cosh, T, N) FLOAT_KERNEL(tanh, T, N) FLOAT_KERNEL(sigmoid, T, N) FLOAT_KERNEL(logit, T, N) \
    FLOAT_KERNEL(erf, T, N) FLOAT_KERNEL(erfc, T, N) FLOAT_KERNEL(frac, T, N) FLOAT_KERNEL(gelu, T, N) \
    FLOAT_KERNEL(gelu_tanh, T, N) FLOAT_KERNEL(silu, T, N) FLOAT_KERNEL(mish, T, N) FLOAT_KERNEL(selu, T, N) \
    FLOAT_KERNEL(elu, T, N) FLOAT_KERNEL(leaky_relu, T, N) FLOAT_KERNEL(softplus, T, N) \
    FLOAT_KERNEL(hardswish, T, N) FLOAT_KERNEL(hardsigmoid, T, N) FLOAT_KERNEL(nan_to_num, T, N) \
    FLOAT_KERNEL(angle, T, N) FLOAT_KERNEL(identity, T, N)
FOR_EACH_FLOAT(FLOAT_KERNELS)

// ---- integer ops over i64, wrapping as the CPU's (through unsigned arithmetic) ----
#define INT_OP(name, expr) \
    struct int_##name { \
        __device__ i64 operator()(i64 v, i64 a, i64 b) const { return (expr); } \
    };
typedef unsigned long long u64;
INT_OP(neg, (i64)(0ull - (u64)v))
INT_OP(abs, v < 0 ? (i64)(0ull - (u64)v) : v)
INT_OP(sign, (i64)(v > 0) - (i64)(v < 0))
INT_OP(square, (i64)((u64)v * (u64)v))
INT_OP(relu, v > 0 ? v : 0)
// Bounds `a`, `b` (i64's extremes when absent): hardtanh and clamp.
INT_OP(clamp, v < a ? a : (v > b ? b : v))
INT_OP(bitwise_not, ~v)
INT_OP(identity, v)

#define INT_KERNEL(name, T, N) \
    extern "C" __global__ void unary_##name##_##N(const T* x, Strided lx, T* y, Strided ly, i64 n, i64 p0, i64 p1) { \
        int_map<T, int_##name>(x, lx, y, ly, n, p0, p1); \
    }
#define INT_KERNELS(T, N) \
    INT_KERNEL(neg, T, N) INT_KERNEL(abs, T, N) INT_KERNEL(sign, T, N) INT_KERNEL(square, T, N) \
    INT_KERNEL(relu, T, N) INT_KERNEL(clamp, T, N) INT_KERNEL(bitwise_not, T, N) INT_KERNEL(identity, T, N)
FOR_EACH_INT(INT_KERNELS)

// ---- predicates: any dtype to bool; `v` in the compute type ----
#define PREDICATE(name, expr) \
    struct is_##name { \
        template <class C> __device__ bool operator()(C v) const { return (expr); } \
    };
// Integers are never NaN or infinite; `isnan` and friends compile to false for them.
template <class C> __device__ __forceinline__ bool nan_of(C v) { return v != v; }
template <class C> __device__ __forceinline__ bool inf_of(C v) { return v - v != v - v && v == v; }
PREDICATE(nan, nan_of(v))
PREDICATE(inf, inf_of(v))
PREDICATE(posinf, inf_of(v) && v > (C)0)
PREDICATE(neginf, inf_of(v) && !(v > (C)0))
PREDICATE(finite, !nan_of(v) && !inf_of(v))
PREDICATE(signbit, signbit((double)v))
PREDICATE(zero, v == (C)0)

#define PREDICATE_KERNEL(name, T, N) \
    extern "C" __global__ void unary_is_##name##_##N(const T* x, Strided lx, bool* y, Strided ly, i64 n) { \
        predicate_map<T, is_##name>(x, lx, y, ly, n); \
    }
#define PREDICATE_KERNELS(T, N) \
    PREDICATE_KERNEL(nan, T, N) PREDICATE_KERNEL(inf, T, N) PREDICATE_KERNEL(posinf, T, N) \
    PREDICATE_KERNEL(neginf, T, N) PREDICATE_KERNEL(finite, T, N) PREDICATE_KERNEL(signbit, T, N) \
    PREDICATE_KERNEL(zero, T, N)
FOR_EACH_DTYPE(PREDICATE_KERNELS)
