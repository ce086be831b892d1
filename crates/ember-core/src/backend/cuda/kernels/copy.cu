// Strided copy with a dtype cast: `dst[i] = cast(src[i])`, `copy_<src>_<dst>`.
template <class I, class O>
__device__ void copy_strided(const I* src, const Strided& s, O* dst, const Strided& d, i64 n) {
    if (s.ndim == 0 && d.ndim == 0) {
        src += s.offset;
        dst += d.offset;
        for_each_loaded(n, [&](i64 i) { return cast<O>(src[i]); }, [&](i64 i, O v) { dst[i] = v; });
    } else {
        for_each_element(n, [&](i64 i) { dst[at(d, i)] = cast<O>(src[at(s, i)]); });
    }
}

#define COPY(TI, NI, TO, NO) \
    extern "C" __global__ void copy_##NI##_##NO(const TI* src, Strided s, TO* dst, Strided d, i64 n) { \
        copy_strided(src, s, dst, d, n); \
    }
#define COPY_FROM(TI, NI) \
    COPY(TI, NI, bool, bool) COPY(TI, NI, u8, u8) COPY(TI, NI, i8, i8) COPY(TI, NI, i16, i16) \
    COPY(TI, NI, i32, i32) COPY(TI, NI, i64, i64) COPY(TI, NI, f16, f16) COPY(TI, NI, bf16, bf16) \
    COPY(TI, NI, float, f32) COPY(TI, NI, double, f64)
FOR_EACH_DTYPE(COPY_FROM)
