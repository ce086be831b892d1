// Softmax, layer norm and row statistics over contiguous rows of `n` elements, `<kernel>_<dtype>`
// for the float dtypes, computing in float (double for float64). `group` threads share a row:
// a warp for short rows, the whole block for long ones. With `cached`, each row is read from
// global memory once, into the dynamic shared memory (`n` compute values per group), and the
// later passes read it there; without, every pass reads global memory.
extern __shared__ __align__(16) unsigned char row_cache[];

struct Add {
    template <class C> __device__ static C step(C a, C b) { return a + b; }
};
// NaN is dropped here: a NaN element makes its row's sum of exponentials NaN anyway.
struct Max {
    template <class C> __device__ static C step(C a, C b) { return fmax(a, b); }
};

#define FOR_EACH_ROW(r, rows, group) \
    for (i64 r = (i64)blockIdx.x * (blockDim.x / (group)) + threadIdx.x / (group); r < (rows); \
         r += (i64)gridDim.x * (blockDim.x / (group)))

// One row as its group reads it: thread `lane` takes elements lane, lane + group, ..., or with
// `vec` (a cached row of whole 16-byte vectors) vectors lane, lane + group, ..., so that global
// and shared memory move 16 bytes per access.
template <class T> struct Row {
    typedef typename Compute<T>::type C;
    enum { V = 16 / sizeof(T) };
    struct __align__(16) Raw {
        T v[V];
    };
    struct __align__(16) Pack {
        C v[V];
    };
    const T* x;
    C* cache;
    i64 n, lane, group;
    bool vec;

    __device__ C operator[](i64 k) const { return cache ? cache[k] : cast<C>(x[k]); }

    // The first pass: the elements folded with `Op` (and cached).
    template <class Op> __device__ C first_pass(C init, C* scratch) const {
        C acc = init;
        if (vec) {
            // LOADS vectors in flight before any is stored.
            const int LOADS = 4;
            for (i64 j0 = lane; j0 < n / V; j0 += LOADS * group) {
                Raw r[LOADS];
#pragma unroll
                for (int u = 0; u < LOADS; ++u) {
                    if (j0 + u * group < n / V) r[u] = ((const Raw*)x)[j0 + u * group];
                }
#pragma unroll
                for (int u = 0; u < LOADS; ++u) {
                    if (j0 + u * group >= n / V) break;
                    Pack p;
#pragma unroll
                    for (int q = 0; q < V; ++q) {
                        p.v[q] = cast<C>(r[u].v[q]);
                        acc = Op::step(acc, p.v[q]);
                    }
                    ((Pack*)cache)[j0 + u * group] = p;
                }
            }
        } else {
#pragma unroll 4
            for (i64 k = lane; k < n; k += group) {
                C v = cast<C>(x[k]);
                if (cache) cache[k] = v;
                acc = Op::step(acc, v);
            }
        }
        return group_fold<Op>(acc, (int)group, scratch);
    }

    // Calls f(k, element k) for each of this thread's elements (the ones it cached).
    template <class F> __device__ void each(F f) const {
        if (vec) {
            for (i64 j = lane; j < n / V; j += group) {
                Pack p = ((const Pack*)cache)[j];
#pragma unroll
                for (int q = 0; q < V; ++q) f(j * V + q, p.v[q]);
            }
        } else {
            for (i64 k = lane; k < n; k += group) f(k, (*this)[k]);
        }
    }

    // y[k] = f(k, element k) for each of this thread's elements.
    template <class F> __device__ void write(T* y, F f) const {
        if (vec) {
            for (i64 j = lane; j < n / V; j += group) {
                Pack p = ((const Pack*)cache)[j];
                Raw r;
#pragma unroll
                for (int q = 0; q < V; ++q) r.v[q] = cast<T>(f(j * V + q, p.v[q]));
                ((Raw*)y)[j] = r;
            }
        } else {
            for (i64 k = lane; k < n; k += group) y[k] = cast<T>(f(k, (*this)[k]));
        }
    }

    // The mean and biased variance (two passes, as the CPU computes them).
    __device__ void moments(C* scratch, C* mean, C* var) const {
        C m = first_pass<Add>((C)0, scratch) / (C)n;
        C s = 0;
        each([&](i64, C v) { s += (v - m) * (v - m); });
        *mean = m;
        *var = group_fold<Add>(s, (int)group, scratch) / (C)n;
    }
};

// Row r of `x`; `y` (or null) is where it is written, which vector access needs aligned too.
template <class T>
__device__ Row<T> row(const T* x, const T* y, i64 r, i64 n, int group, int cached) {
    typedef typename Compute<T>::type C;
    Row<T> view;
    view.x = x + r * n;
    view.cache = cached ? (C*)row_cache + (i64)(threadIdx.x / group) * n : (C*)0;
    view.n = n;
    view.lane = threadIdx.x % group;
    view.group = group;
    unsigned long long bases = (unsigned long long)x | (unsigned long long)y;
    view.vec = cached && n % Row<T>::V == 0 && bases % 16 == 0;
    return view;
}

template <class T>
__device__ void softmax_rows(const T* x, T* y, i64 rows, i64 n, int group, int cached, int take_log) {
    typedef typename Compute<T>::type C;
    __shared__ C scratch[32];
    FOR_EACH_ROW(r, rows, group) {
        Row<T> xr = row(x, y, r, n, group, cached);
        C top = xr.template first_pass<Max>(lowest<C>(), scratch);
        C sum = 0;
        xr.each([&](i64, C v) { sum += exp(v - top); });
        sum = group_fold<Add>(sum, group, scratch);
        if (take_log) {
            C shift = top + log(sum);
            xr.write(y + r * n, [&](i64, C v) { return v - shift; });
        } else {
            C inv = (C)1 / sum;
            xr.write(y + r * n, [&](i64, C v) { return exp(v - top) * inv; });
        }
    }
}

// Softmax along a dim that is not the last: a thread per (outer, inner) column, whose
// elements lie `inner` apart (neighbouring threads read neighbouring elements).
template <class T>
__device__ void softmax_cols(const T* x, T* y, i64 outer, i64 n, i64 inner, int take_log) {
    typedef typename Compute<T>::type C;
    FOR_EACH_ELEMENT(c, outer * inner) {
        i64 o = c / inner, j = c - o * inner;
        const T* xc = x + o * n * inner + j;
        T* yc = y + o * n * inner + j;
        C top = lowest<C>(), sum = 0;
        for (i64 k = 0; k < n; ++k) top = fmax(top, cast<C>(xc[k * inner]));
        for (i64 k = 0; k < n; ++k) sum += exp(cast<C>(xc[k * inner]) - top);
        if (take_log) {
            C shift = top + log(sum);
            for (i64 k = 0; k < n; ++k) yc[k * inner] = cast<T>(cast<C>(xc[k * inner]) - shift);
        } else {
            C inv = (C)1 / sum;
            for (i64 k = 0; k < n; ++k) yc[k * inner] = cast<T>(exp(cast<C>(xc[k * inner]) - top) * inv);
        }
    }
}

// `weight` and `bias` in the compute type, or null (1 and 0).
template <class T>
__device__ void layer_norm_rows(const T* x, T* y, i64 rows, i64 n, int group, int cached,
                                const typename Compute<T>::type* weight, const typename Compute<T>::type* bias,
                                double eps) {
    typedef typename Compute<T>::type C;
    __shared__ C scratch[32];
    FOR_EACH_ROW(r, rows, group) {
        Row<T> xr = row(x, y, r, n, group, cached);
        C mean, var;
        xr.moments(scratch, &mean, &var);
        C rstd = (C)1 / sqrt(var + (C)eps);
        xr.write(y + r * n, [&](i64 k, C v) {
            C w = weight ? weight[k] : (C)1, b = bias ? bias[k] : (C)0;
            return (v - mean) * rstd * w + b;
        });
    }
}

template <class T>
__device__ void moments_rows(const T* x, i64 rows, i64 n, int group, int cached, double* mean, double* var) {
    typedef typename Compute<T>::type C;
    __shared__ C scratch[32];
    FOR_EACH_ROW(r, rows, group) {
        Row<T> xr = row(x, (const T*)0, r, n, group, cached);
        C m, v;
        xr.moments(scratch, &m, &v);
        if (xr.lane == 0) {
            mean[r] = (double)m;
            var[r] = (double)v;
        }
    }
}

// `y = x * scale[r] + shift[r]` for element i of row r = i / n (32-bit division where it fits).
template <class T>
__device__ void affine_rows(const T* x, T* y, i64 n, i64 total, const double* scale, const double* shift) {
    typedef typename Compute<T>::type C;
    bool narrow = total <= 0xffffffffll;
    FOR_EACH_ELEMENT(i, total) {
        i64 r = narrow ? (i64)((unsigned)i / (unsigned)n) : i / n;
        y[i] = cast<T>(cast<C>(x[i]) * (C)scale[r] + (C)shift[r]);
    }
}

#define NORM(T, N) \
    extern "C" __global__ void softmax_rows_##N(const T* x, T* y, i64 rows, i64 n, int group, int cached, int take_log) { \
        softmax_rows(x, y, rows, n, group, cached, take_log); \
    } \
    extern "C" __global__ void softmax_cols_##N(const T* x, T* y, i64 outer, i64 n, i64 inner, int take_log) { \
        softmax_cols(x, y, outer, n, inner, take_log); \
    } \
    extern "C" __global__ void layer_norm_##N(const T* x, T* y, i64 rows, i64 n, int group, int cached, \
                                              const Compute<T>::type* weight, const Compute<T>::type* bias, \
                                              double eps) { \
        layer_norm_rows(x, y, rows, n, group, cached, weight, bias, eps); \
    } \
    extern "C" __global__ void row_moments_##N(const T* x, i64 rows, i64 n, int group, int cached, double* mean, \
                                               double* var) { \
        moments_rows(x, rows, n, group, cached, mean, var); \
    } \
    extern "C" __global__ void affine_rows_##N(const T* x, T* y, i64 n, i64 total, const double* scale, \
                                               const double* shift) { \
        affine_rows(x, y, n, total, scale, shift); \
    }
FOR_EACH_FLOAT(NORM)
