// Padding, `pad_<dtype>`: every element of the contiguous `out` read from `x` (any strides)
// through one position map per dim, or the fill value where a map has no position.
//
// `table` holds, for each of the `ndim` dims, (output size, input stride, where its map starts
// in `table`), then the maps: an input position, or -1 for the fill value. The fill value comes
// as the dtype's bytes in the low bytes of a 64-bit word (little-endian), as fill.cu's.
template <class T>
__device__ void pad_gather(const T* x, i64 offset, const i64* table, int ndim, T* out, i64 n, unsigned long long bits) {
    T fill;
    memcpy(&fill, &bits, sizeof(T));
    FOR_EACH_ELEMENT(i, n) {
        i64 rest = i, at = offset;
        bool inside = true;
        for (int d = ndim - 1; d >= 0 && inside; --d) {
            const i64* dim = table + 3 * d;
            i64 outer = rest / dim[0];
            i64 from = table[dim[2] + (rest - outer * dim[0])];
            rest = outer;
            inside = from >= 0;
            at += from * dim[1];
        }
        out[i] = inside ? x[at] : fill;
    }
}

#define PAD(T, N) \
    extern "C" __global__ void pad_##N(const T* x, i64 offset, const i64* table, int ndim, T* out, i64 n, \
                                       unsigned long long bits) { \
        pad_gather(x, offset, table, ndim, out, n, bits); \
    }
FOR_EACH_DTYPE(PAD)
