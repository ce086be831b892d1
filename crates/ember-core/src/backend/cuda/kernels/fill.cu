// Fill: every element of `dst` set to `value`, given as the dtype's bytes in the low bytes of a
// 64-bit word (little-endian), `fill_<dtype>`.
template <class T>
__device__ void fill_strided(T* dst, const Strided& d, i64 n, unsigned long long bits) {
    T value;
    memcpy(&value, &bits, sizeof(T));
    if (d.ndim == 0) {
        dst += d.offset;
        for_each_element(n, [&](i64 i) { dst[i] = value; });
    } else {
        for_each_element(n, [&](i64 i) { dst[at(d, i)] = value; });
    }
}

#define FILL(T, N) \
    extern "C" __global__ void fill_##N(T* dst, Strided d, i64 n, unsigned long long bits) { fill_strided(dst, d, n, bits); }
FOR_EACH_DTYPE(FILL)
