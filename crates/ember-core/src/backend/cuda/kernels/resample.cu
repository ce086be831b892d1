// One pass of a separable resize, `resample_<dtype>` (float32 and float64): `x` is
// `[outer, n_in, inner]` and `out` `[outer, n_out, inner]`, both contiguous; output row `j` is
// the weighted sum of the input rows its taps name.
//
// `table` holds each output position's tap count (`n_out` words), then `width` input rows per
// position (`n_out * width`), then as many weights, as float64 bits; each weight is rounded to
// the dtype before use, as the CPU's are.
template <class T>
__device__ void resample_rows(const T* x, const i64* table, i64 n_in, i64 n_out, i64 inner, i64 width, T* out, i64 n) {
    const i64* counts = table;
    const i64* rows = table + n_out;
    const i64* weights = rows + n_out * width;
    FOR_EACH_ELEMENT(i, n) {
        i64 outer = i / inner;
        i64 k = i - outer * inner;
        i64 b = outer / n_out;
        i64 j = outer - b * n_out;
        const T* plane = x + b * n_in * inner + k;
        T sum = (T)0;
        for (i64 t = 0; t < counts[j]; ++t) {
            T w = (T)__longlong_as_double(weights[j * width + t]);
            sum += w * plane[rows[j * width + t] * inner];
        }
        out[i] = sum;
    }
}

#define RESAMPLE(T, N) \
    extern "C" __global__ void resample_##N(const T* x, const i64* table, i64 n_in, i64 n_out, i64 inner, i64 width, \
                                            T* out, i64 n) { \
        resample_rows(x, table, n_in, n_out, inner, width, out, n); \
    }
RESAMPLE(float, f32)
RESAMPLE(double, f64)
