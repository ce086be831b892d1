// `out = cond ? a : b`, `where_<dtype>`.
template <class T>
__device__ void where_strided(const bool* c, Strided lc, const T* a, Strided la, const T* b, Strided lb, T* out,
                              Strided lo, i64 n) {
    FOR_EACH_ELEMENT(i, n) out[at(lo, i)] = c[at(lc, i)] ? a[at(la, i)] : b[at(lb, i)];
}

#define WHERE(T, N) \
    extern "C" __global__ void where_##N(const bool* c, Strided lc, const T* a, Strided la, const T* b, Strided lb, \
                                         T* out, Strided lo, i64 n) { \
        where_strided(c, lc, a, la, b, lb, out, lo, n); \
    }
FOR_EACH_DTYPE(WHERE)
