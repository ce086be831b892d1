// Max and mean pooling over the last 1-3 dims, `pool_max_<dtype>` / `pool_mean_<dtype>`, and the
// max pool's gradient, `pool_max_backward_<dtype>`. Float dtypes only; the half types compare
// and sum in float, as the CPU kernels do.
//
// The input is `planes` independent planes of D x H x W (unit dims in front for fewer spatial
// dims), read through any strides; the outputs are contiguous, one thread per output element.
// Each output position of a spatial axis reads a run of input positions, a `Window`, from
// the table the host built from the op's windows.

// The input positions one output position of one axis reads: `first + k * step` for k below
// `count`; `padded` is the window's size counting padding (`count_include_pad`'s divisor).
struct Window {
    i64 first;
    i64 step;
    i64 count;
    i64 padded;
};

// Sizes and strides of a pool (`Geometry` in pool.rs): output sizes, the input plane's sizes
// (for the flat indices the max pool returns) and its strides in elements.
struct Geometry {
    i64 od, oh, ow;
    i64 ih, iw;
    i64 sd, sh, sw;
};

// How a mean pool divides each window's sum (`Divisor` in ops/pool.rs).
#define DIVIDE_BY_TAPS 0
#define DIVIDE_BY_PADDED 1
#define DIVIDE_BY_FIXED 2

// Output element `i` (row-major over [planes, od, oh, ow]) as its plane and its three windows.
struct Site {
    i64 plane;
    Window d, h, w;
};

__device__ __forceinline__ Site site_of(i64 i, const Geometry& g, const Window* wd, const Window* wh,
                                        const Window* ww) {
    Site s;
    i64 r = i / g.ow;
    s.w = ww[i - r * g.ow];
    i64 q = r / g.oh;
    s.h = wh[r - q * g.oh];
    s.plane = q / g.od;
    s.d = wd[q - s.plane * g.od];
    return s;
}

// Each window's maximum and the flat index of its maximum within the input plane: the first
// of equal maxima, or the last NaN (a NaN always takes over), as the CPU's loop picks; -inf
// and -1 for a window with no taps.
template <class T>
__device__ void max_pool(const T* x, Strided planes, Geometry g, const Window* wd, const Window* wh, const Window* ww,
                         T* out, i64* indices, i64 n) {
    typedef typename Compute<T>::type C;
    const C lowest = (C)(-__int_as_float(0x7f800000));
    FOR_EACH_ELEMENT(i, n) {
        Site s = site_of(i, g, wd, wh, ww);
        const T* src = x + at(planes, s.plane);
        T best = cast<T>(lowest);
        C best_value = lowest;
        i64 best_at = -1;
        for (i64 a = 0; a < s.d.count; ++a) {
            i64 d = s.d.first + a * s.d.step;
            for (i64 b = 0; b < s.h.count; ++b) {
                i64 h = s.h.first + b * s.h.step;
                const T* row = src + d * g.sd + h * g.sh;
                i64 row_at = (d * g.ih + h) * g.iw;
                for (i64 c = 0; c < s.w.count; ++c) {
                    i64 w = s.w.first + c * s.w.step;
                    T v = row[w * g.sw];
                    C value = cast<C>(v);
                    if (best_at < 0 || value > best_value || isnan(value)) {
                        best = v;
                        best_value = value;
                        best_at = row_at + w;
                    }
                }
            }
        }
        out[i] = best;
        indices[i] = best_at;
    }
}

// Each window's sum (in the compute type, taps in row-major order as the CPU adds them)
// divided as `divide_by` says; 0 for a window with no taps.
template <class T>
__device__ void mean_pool(const T* x, Strided planes, Geometry g, const Window* wd, const Window* wh, const Window* ww,
                          int divide_by, i64 fixed, T* out, i64 n) {
    typedef typename Compute<T>::type C;
    FOR_EACH_ELEMENT(i, n) {
        Site s = site_of(i, g, wd, wh, ww);
        const T* src = x + at(planes, s.plane);
        C sum = (C)0;
        for (i64 a = 0; a < s.d.count; ++a) {
            i64 d = s.d.first + a * s.d.step;
            for (i64 b = 0; b < s.h.count; ++b) {
                const T* row = src + d * g.sd + (s.h.first + b * s.h.step) * g.sh;
                for (i64 c = 0; c < s.w.count; ++c) sum += cast<C>(row[(s.w.first + c * s.w.step) * g.sw]);
            }
        }
        i64 count = s.d.count * s.h.count * s.w.count;
        i64 by = divide_by == DIVIDE_BY_TAPS ? count
                 : divide_by == DIVIDE_BY_PADDED ? s.d.padded * s.h.padded * s.w.padded
                                                 : fixed;
        out[i] = cast<T>(count == 0 ? (C)0 : sum / (C)by);
    }
}

// Atomic adds; float64's is native from sm_60, a compare-and-swap loop before.
__device__ __forceinline__ void atomic_add(float* at, float v) { atomicAdd(at, v); }
__device__ __forceinline__ void atomic_add(double* at, double v) {
#if __CUDA_ARCH__ >= 600
    atomicAdd(at, v);
#else
    unsigned long long* word = (unsigned long long*)at;
    unsigned long long seen = *word, expected;
    do {
        expected = seen;
        seen = atomicCAS(word, expected, __double_as_longlong(__longlong_as_double(expected) + v));
    } while (seen != expected);
#endif
}

// The max pool's gradient: element `i` of `g` ([planes, outputs], any strides) added at
// `out[plane][indices[i]]` in the zeroed contiguous `out` ([planes, inputs], of the compute
// type: float for the half types, converted after). Windows may overlap, so the adds are
// atomic. An index outside the plane (an empty window's -1) has nowhere to go.
template <class T>
__device__ void max_pool_backward(const T* g, Strided lg, const i64* indices, Strided li,
                                  typename Compute<T>::type* out, i64 outputs, i64 inputs, i64 n) {
    FOR_EACH_ELEMENT(i, n) {
        i64 to = indices[at(li, i)];
        if (to < 0 || to >= inputs) continue;
        atomic_add(out + (i / outputs) * inputs + to, cast<typename Compute<T>::type>(g[at(lg, i)]));
    }
}

#define POOL(T, N) \
    extern "C" __global__ void pool_max_##N(const T* x, Strided planes, Geometry g, const Window* wd, \
                                            const Window* wh, const Window* ww, T* out, i64* indices, i64 n) { \
        max_pool(x, planes, g, wd, wh, ww, out, indices, n); \
    } \
    extern "C" __global__ void pool_mean_##N(const T* x, Strided planes, Geometry g, const Window* wd, \
                                             const Window* wh, const Window* ww, int divide_by, i64 fixed, \
                                             T* out, i64 n) { \
        mean_pool(x, planes, g, wd, wh, ww, divide_by, fixed, out, n); \
    } \
    extern "C" __global__ void pool_max_backward_##N(const T* g, Strided lg, const i64* indices, Strided li, \
                                                     Compute<T>::type* out, i64 outputs, i64 inputs, i64 n) { \
        max_pool_backward(g, lg, indices, li, out, outputs, inputs, n); \
    }
FOR_EACH_FLOAT(POOL)
