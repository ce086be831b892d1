// `out = cond ? a : b`, `where_<dtype>`.
template <class T>
__device__ void where_strided(const bool* c, const Strided& lc, const T* a, const Strided& la, const T* b,
                              const Strided& lb, T* out, const Strided& lo, i64 n) {
    if (lc.ndim == 0 && la.ndim == 0 && lb.ndim == 0 && lo.ndim == 0) {
        c += lc.offset;
        a += la.offset;
        b += lb.offset;
        out += lo.offset;
        for_each_loaded(n, [&](i64 i) { return c[i] ? a[i] : b[i]; }, [&](i64 i, T v) { out[i] = v; });
    } else {
        for_each_element(n, [&](i64 i) { out[at(lo, i)] = c[at(lc, i)] ? a[at(la, i)] : b[at(lb, i)]; });
    }
}

#define WHERE(T, N) \
    extern "C" __global__ void where_##N(const bool* c, Strided lc, const T* a, Strided la, const T* b, Strided lb, \
                                         T* out, Strided lo, i64 n) { \
        where_strided(c, lc, a, la, b, lb, out, lo, n); \
    }
FOR_EACH_DTYPE(WHERE)
