// Reductions, `reduce_<shape>_<op>_<dtype>`: the input seen as [outputs, count], element (o, k)
// at `at(kept, o) + along(red, k)` (kept dims by reduced dims, as reduce.rs builds them). Every
// op is an accumulator type `A` with `init`, `load` (an element and its index k), an associative
// `step` and `store` (the result, as ops::reduce types it). Three shapes:
// - rows: `group` threads (a warp, or the whole block) per output, folding a run of k;
// - cols: a thread per output (threadIdx.x), blockDim.y threads splitting its k;
// - final: a warp per output folding the partial results of the splits.
// An output's k may be split in `splits` chunks over more blocks, each writing its partial
// accumulator to `partial[o * splits + s]`, which `final` folds in order: no atomics, so the
// results do not vary between runs.
typedef unsigned long long u64;

// Sums and products: float for the half types and float32, double for float64, i64 (wrapping)
// for integers and bool; their results: the input's float dtype, else int64.
template <class T> struct Wide { typedef i64 type; };
template <> struct Wide<f16> { typedef float type; };
template <> struct Wide<bf16> { typedef float type; };
template <> struct Wide<float> { typedef float type; };
template <> struct Wide<double> { typedef double type; };
template <class T> struct WideOut { typedef i64 type; };
template <> struct WideOut<f16> { typedef f16 type; };
template <> struct WideOut<bf16> { typedef bf16 type; };
template <> struct WideOut<float> { typedef float type; };
template <> struct WideOut<double> { typedef double type; };

// Extremes compare in the compute type of floats, in i64 for integers and bool.
template <class T> struct Key { typedef i64 type; };
template <> struct Key<f16> { typedef float type; };
template <> struct Key<bf16> { typedef float type; };
template <> struct Key<float> { typedef float type; };
template <> struct Key<double> { typedef double type; };

// all/any write bool, uint8 for uint8 input.
template <class T> struct TestOut { typedef bool type; };
template <> struct TestOut<u8> { typedef u8 type; };

__device__ __forceinline__ i64 plus(i64 a, i64 b) { return (i64)((u64)a + (u64)b); }
__device__ __forceinline__ float plus(float a, float b) { return a + b; }
__device__ __forceinline__ double plus(double a, double b) { return a + b; }
__device__ __forceinline__ i64 times(i64 a, i64 b) { return (i64)((u64)a * (u64)b); }
__device__ __forceinline__ float times(float a, float b) { return a * b; }
__device__ __forceinline__ double times(double a, double b) { return a * b; }

template <class T> __device__ __forceinline__ bool nonzero(T v) {
    typedef typename Compute<T>::type C;
    return cast<C>(v) != (C)0;
}

// Where `store` writes: the result, and the index of arg reductions.
struct Sink {
    void* out;
    i64 out_at;
    i64* idx;
    i64 idx_at;
};

template <class T> struct Sum {
    typedef typename Wide<T>::type A;
    __device__ static A init() { return (A)0; }
    __device__ static A load(T v, i64) { return cast<A>(v); }
    __device__ static A step(A a, A b) { return plus(a, b); }
    __device__ static void store(Sink s, A a, i64) {
        typedef typename WideOut<T>::type O;
        ((O*)s.out)[s.out_at] = cast<O>(a);
    }
};

template <class T> struct Mean : Sum<T> {
    typedef typename Sum<T>::A A;
    __device__ static void store(Sink s, A a, i64 count) { ((T*)s.out)[s.out_at] = cast<T>(a / (A)count); }
};

template <class T> struct Prod {
    typedef typename Wide<T>::type A;
    __device__ static A init() { return (A)1; }
    __device__ static A load(T v, i64) { return cast<A>(v); }
    __device__ static A step(A a, A b) { return times(a, b); }
    __device__ static void store(Sink s, A a, i64) {
        typedef typename WideOut<T>::type O;
        ((O*)s.out)[s.out_at] = cast<O>(a);
    }
};

// amax/amin: NaN wins (in any order, so the fold may be a tree).
template <class T, bool MAX> struct Extreme {
    typedef typename Key<T>::type A;
    __device__ static A init() { return MAX ? lowest<A>() : highest<A>(); }
    __device__ static A load(T v, i64) { return cast<A>(v); }
    __device__ static A step(A a, A b) { return (MAX ? a > b : a < b) || a != a ? a : b; }
    __device__ static void store(Sink s, A a, i64) { ((T*)s.out)[s.out_at] = cast<T>(a); }
};
template <class T> struct Amax : Extreme<T, true> {};
template <class T> struct Amin : Extreme<T, false> {};

// all/any as 0/1 ints (what warp shuffles take).
template <class T, bool ALL> struct Test {
    typedef int A;
    __device__ static A init() { return ALL; }
    __device__ static A load(T v, i64) { return nonzero(v); }
    __device__ static A step(A a, A b) { return ALL ? a & b : a | b; }
    __device__ static void store(Sink s, A a, i64) {
        typedef typename TestOut<T>::type O;
        ((O*)s.out)[s.out_at] = (O)a;
    }
};
template <class T> struct All : Test<T, true> {};
template <class T> struct Any : Test<T, false> {};

template <class T> struct CountNonzero {
    typedef i64 A;
    __device__ static A init() { return 0; }
    __device__ static A load(T v, i64) { return nonzero(v); }
    __device__ static A step(A a, A b) { return a + b; }
    __device__ static void store(Sink s, A a, i64) { ((i64*)s.out)[s.out_at] = a; }
};

// max/min with the index of the first extreme: NaN counts as the extreme; between equals (NaN
// and NaN too) the smaller index wins, which makes the fold's order not matter.
template <class K> struct Arg {
    K v;
    i64 i;
};
template <class K> __device__ __forceinline__ Arg<K> shfl_xor(Arg<K> a, int m) {
    Arg<K> r;
    r.v = shfl_xor(a.v, m);
    r.i = shfl_xor(a.i, m);
    return r;
}
template <class T, bool MAX> struct ArgExtreme {
    typedef typename Key<T>::type K;
    typedef Arg<K> A;
    __device__ static A init() {
        A a;
        a.v = MAX ? lowest<K>() : highest<K>();
        a.i = highest<i64>();
        return a;
    }
    __device__ static A load(T v, i64 k) {
        A a;
        a.v = cast<K>(v);
        a.i = k;
        return a;
    }
    __device__ static bool beats(A x, A y) { return (x.v != x.v && y.v == y.v) || (MAX ? x.v > y.v : x.v < y.v); }
    __device__ static A step(A a, A b) { return beats(b, a) || (!beats(a, b) && b.i < a.i) ? b : a; }
    __device__ static void store(Sink s, A a, i64) {
        ((T*)s.out)[s.out_at] = cast<T>(a.v);
        s.idx[s.idx_at] = a.i;
    }
};
template <class T> struct Argmax : ArgExtreme<T, true> {};
template <class T> struct Argmin : ArgExtreme<T, false> {};

// Where reduction index k lies: a merged run (ndim 0 or 1) without the divisions of `at`.
__device__ __forceinline__ i64 along(const Strided& s, i64 k) {
    return s.ndim == 0 ? s.offset + k : (s.ndim == 1 ? s.offset + k * s.strides[0] : strided_at(s, k));
}

__device__ __forceinline__ Sink sink(void* out, Strided lo, i64* idx, Strided li, i64 o) {
    Sink s;
    s.out = out;
    s.out_at = at(lo, o);
    s.idx = idx;
    s.idx_at = idx ? at(li, o) : 0;
    return s;
}

// Folds k in [begin, end) by `lanes` threads from `lane` on, four loads in flight at a time.
template <class T, class Op>
__device__ __forceinline__ typename Op::A fold_run(const T* base, const Strided& red, i64 begin, i64 end, i64 lane,
                                                   i64 lanes) {
    typedef typename Op::A A;
    A acc = Op::init();
    i64 k = begin + lane;
    for (; k + 3 * lanes < end; k += 4 * lanes) {
        A a = Op::load(base[along(red, k)], k);
        A b = Op::load(base[along(red, k + lanes)], k + lanes);
        A c = Op::load(base[along(red, k + 2 * lanes)], k + 2 * lanes);
        A d = Op::load(base[along(red, k + 3 * lanes)], k + 3 * lanes);
        acc = Op::step(acc, Op::step(Op::step(a, b), Op::step(c, d)));
    }
    for (; k < end; k += lanes) acc = Op::step(acc, Op::load(base[along(red, k)], k));
    return acc;
}

// Work item w = (output o, split s), `group` threads each.
template <class T, class Op>
__device__ void rows(const T* x, Strided kept, Strided red, i64 outputs, i64 count, i64 splits, i64 chunk, int group,
                     void* partial, void* out, Strided lo, i64* idx, Strided li) {
    typedef typename Op::A A;
    __shared__ A scratch[32];
    i64 lane = threadIdx.x % group, per_block = blockDim.x / group, items = outputs * splits;
    for (i64 w = (i64)blockIdx.x * per_block + threadIdx.x / group; w < items; w += (i64)gridDim.x * per_block) {
        i64 o = w / splits, s = w - o * splits;
        i64 begin = s * chunk, end = begin + chunk < count ? begin + chunk : count;
        A acc = fold_run<T, Op>(x + at(kept, o), red, begin, end, lane, group);
        acc = group_fold<Op>(acc, group, scratch);
        if (lane != 0) continue;
        if (partial) {
            ((A*)partial)[w] = acc;
        } else {
            Op::store(sink(out, lo, idx, li, o), acc, count);
        }
    }
}

// Outputs blockIdx.x * blockDim.x + threadIdx.x (and on, by the grid), split s = blockIdx.y;
// blockDim.y threads share each output's chunk, then fold through shared memory.
template <class T, class Op>
__device__ void cols(const T* x, Strided kept, Strided red, i64 outputs, i64 count, i64 splits, i64 chunk,
                     void* partial, void* out, Strided lo, i64* idx, Strided li) {
    typedef typename Op::A A;
    __shared__ A lanes[256];
    i64 s = blockIdx.y;
    i64 begin = s * chunk, end = begin + chunk < count ? begin + chunk : count;
    for (i64 first = (i64)blockIdx.x * blockDim.x; first < outputs; first += (i64)gridDim.x * blockDim.x) {
        i64 o = first + threadIdx.x;
        A acc = Op::init();
        if (o < outputs) acc = fold_run<T, Op>(x + at(kept, o), red, begin, end, threadIdx.y, blockDim.y);
        if (blockDim.y > 1) {
            lanes[threadIdx.y * blockDim.x + threadIdx.x] = acc;
            __syncthreads();
            if (threadIdx.y == 0) {
                for (int r = 1; r < blockDim.y; ++r) acc = Op::step(acc, lanes[r * blockDim.x + threadIdx.x]);
            }
            __syncthreads();
        }
        if (threadIdx.y != 0 || o >= outputs) continue;
        if (partial) {
            ((A*)partial)[o * splits + s] = acc;
        } else {
            Op::store(sink(out, lo, idx, li, o), acc, count);
        }
    }
}

// A warp per output folds its `splits` partial results.
template <class T, class Op>
__device__ void final_fold(const void* partial, i64 outputs, i64 splits, i64 count, void* out, Strided lo, i64* idx,
                           Strided li) {
    typedef typename Op::A A;
    const A* p = (const A*)partial;
    i64 lane = threadIdx.x & 31, warps = blockDim.x >> 5;
    for (i64 o = (i64)blockIdx.x * warps + (threadIdx.x >> 5); o < outputs; o += (i64)gridDim.x * warps) {
        A acc = Op::init();
        for (i64 j = lane; j < splits; j += 32) acc = Op::step(acc, p[o * splits + j]);
        acc = group_fold<Op>(acc, 32, (A*)0);
        if (lane == 0) Op::store(sink(out, lo, idx, li, o), acc, count);
    }
}

#define REDUCE(name, OP, T, N) \
    extern "C" __global__ void reduce_rows_##name##_##N(const T* x, Strided kept, Strided red, i64 outputs, i64 count, \
                                                        i64 splits, i64 chunk, int group, void* partial, void* out, \
                                                        Strided lo, i64* idx, Strided li) { \
        rows<T, OP<T> >(x, kept, red, outputs, count, splits, chunk, group, partial, out, lo, idx, li); \
    } \
    extern "C" __global__ void reduce_cols_##name##_##N(const T* x, Strided kept, Strided red, i64 outputs, i64 count, \
                                                        i64 splits, i64 chunk, int group, void* partial, void* out, \
                                                        Strided lo, i64* idx, Strided li) { \
        cols<T, OP<T> >(x, kept, red, outputs, count, splits, chunk, partial, out, lo, idx, li); \
    } \
    extern "C" __global__ void reduce_final_##name##_##N(const void* partial, i64 outputs, i64 splits, i64 count, \
                                                         void* out, Strided lo, i64* idx, Strided li) { \
        final_fold<T, OP<T> >(partial, outputs, splits, count, out, lo, idx, li); \
    }

#define REDUCE_ANY_DTYPE(T, N) \
    REDUCE(sum, Sum, T, N) REDUCE(prod, Prod, T, N) REDUCE(amax, Amax, T, N) REDUCE(amin, Amin, T, N) \
    REDUCE(all, All, T, N) REDUCE(any, Any, T, N) REDUCE(count_nonzero, CountNonzero, T, N) \
    REDUCE(argmax, Argmax, T, N) REDUCE(argmin, Argmin, T, N)
FOR_EACH_DTYPE(REDUCE_ANY_DTYPE)
#define REDUCE_FLOAT(T, N) REDUCE(mean, Mean, T, N)
FOR_EACH_FLOAT(REDUCE_FLOAT)
