// `lerp_<dtype>`: start + weight * (end - start) in float64 for every float dtype, in PyTorch's
// form that is exact at weight 0 and 1, as the CPU computes it (the `_rn` intrinsics keep
// NVRTC from fusing a product and a sum the CPU rounds apart).
__device__ __forceinline__ double lerp(double s, double e, double w) {
    return fabs(w) < 0.5 ? __dadd_rn(s, __dmul_rn(w, __dsub_rn(e, s))) : __dsub_rn(e, __dmul_rn(__dsub_rn(e, s), __dsub_rn(1.0, w)));
}

#define LERP(T, N) \
    extern "C" __global__ void lerp_##N(const T* s, Strided ls, const T* e, Strided le, const T* w, Strided lw, T* out, \
                                        Strided lo, i64 n) { \
        FOR_EACH_ELEMENT(i, n) \
            out[at(lo, i)] = cast<T>(lerp(cast<double>(s[at(ls, i)]), cast<double>(e[at(le, i)]), cast<double>(w[at(lw, i)]))); \
    }
FOR_EACH_FLOAT(LERP)
