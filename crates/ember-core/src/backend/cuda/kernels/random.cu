// Random draws from the counter-based Philox4x32-10 stream of `ops/random.rs`: element i of a
// draw is a pure function of (key, base, i), so the GPU draws the CPU's numbers for a seed.
// Double arithmetic goes through the `_rn` intrinsics, which NVRTC never fuses into an FMA
// (the CPU rounds every product and sum), so uniform and integer draws are bit-identical.
typedef unsigned long long u64;

struct Philox { unsigned r[4]; };

// Four 32-bit outputs for (key, counter), as `philox` in ops/random.rs.
__device__ __forceinline__ Philox philox(u64 key, u64 counter) {
    const u64 M0 = 0xD2511F53ull, M1 = 0xCD9E8D57ull;
    const unsigned W0 = 0x9E3779B9u, W1 = 0xBB67AE85u;
    unsigned c0 = (unsigned)counter, c1 = (unsigned)(counter >> 32), c2 = 0, c3 = 0;
    unsigned k0 = (unsigned)key, k1 = (unsigned)(key >> 32);
    for (int round = 0; round < 10; ++round) {
        u64 p0 = M0 * c0, p1 = M1 * c2;
        unsigned n0 = (unsigned)(p1 >> 32) ^ c1 ^ k0, n1 = (unsigned)p1;
        unsigned n2 = (unsigned)(p0 >> 32) ^ c3 ^ k1, n3 = (unsigned)p0;
        c0 = n0; c1 = n1; c2 = n2; c3 = n3;
        k0 += W0;
        k1 += W1;
    }
    Philox out = {{c0, c1, c2, c3}};
    return out;
}

// The two 64-bit draws of one Philox block (draws 2j and 2j + 1 of the stream).
__device__ __forceinline__ u64 high_draw(const Philox& r) { return ((u64)r.r[0] << 32) | r.r[1]; }
__device__ __forceinline__ u64 low_draw(const Philox& r) { return ((u64)r.r[2] << 32) | r.r[3]; }

// Uniform on [0, 1) with 53 random bits (`unit`).
__device__ __forceinline__ double unit(u64 bits) { return __dmul_rn((double)(bits >> 11), 1.0 / 9007199254740992.0); }

__device__ __forceinline__ double uniform(u64 bits, double low, double high) {
    return __dadd_rn(low, __dmul_rn(__dsub_rn(high, low), unit(bits)));
}

// low + bits % (high - low), wrapping in 64 bits (the range always fits: high > low).
__device__ __forceinline__ i64 integer(u64 bits, i64 low, i64 high) {
    u64 range = (u64)high - (u64)low;
    return (i64)((u64)low + bits % range);
}

// Every kernel takes the distribution's two float and two integer parameters (`random.rs`).
// One Philox block per thread step serves elements 2j and 2j + 1.
extern "C" __global__ void random_uniform_f64(double* out, i64 n, u64 key, u64 base, double low, double high, i64, i64) {
    FOR_EACH_ELEMENT(j, (n + 1) / 2) {
        Philox r = philox(key, base + (u64)j);
        out[2 * j] = uniform(high_draw(r), low, high);
        if (2 * j + 1 < n) out[2 * j + 1] = uniform(low_draw(r), low, high);
    }
}

extern "C" __global__ void random_integers_i64(i64* out, i64 n, u64 key, u64 base, double, double, i64 low, i64 high) {
    FOR_EACH_ELEMENT(j, (n + 1) / 2) {
        Philox r = philox(key, base + (u64)j);
        out[2 * j] = integer(high_draw(r), low, high);
        if (2 * j + 1 < n) out[2 * j + 1] = integer(low_draw(r), low, high);
    }
}

// Box–Muller on draws 2i and 2i + 1, which are the two halves of block i.
extern "C" __global__ void random_normal_f64(double* out, i64 n, u64 key, u64 base, double mean, double std, i64, i64) {
    FOR_EACH_ELEMENT(i, n) {
        Philox r = philox(key, base + (u64)i);
        double u1 = __dsub_rn(1.0, unit(high_draw(r)));
        double u2 = unit(low_draw(r));
        double radius = sqrt(__dmul_rn(-2.0, log(u1)));
        double angle = cos(__dmul_rn(6.283185307179586, u2));
        out[i] = __dadd_rn(mean, __dmul_rn(__dmul_rn(std, radius), angle));
    }
}
