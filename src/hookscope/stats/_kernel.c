/* One pass over a dense CPU tensor: shifted sum and sum of squares, min, max, non-zeros.
 *
 * Eager PyTorch needs three passes for these (sum, dot, aminmax); this reads
 * every element once. hookscope.stats.native compiles this file with the
 * system C compiler on first use and calls hs_reduce through ctypes.
 *
 * Accuracy: the moments are of d = x - shift, where shift is the first
 * finite element; with |mean| >> std, d stays near the spread, so the
 * variance keeps its digits. d is summed in float lanes over blocks of BLOCK
 * elements (each lane adds BLOCK / 16 values) and block sums are added in
 * double. A block whose float sums overflow (|x| above ~1e19) is summed
 * again in double, so finite input gives finite sums. float64 input is summed
 * in double lanes throughout (its sum of squares can overflow above ~1e154;
 * the caller rescales then).
 *
 * Threads: the tensor is cut into parts whose size depends only on n, and
 * parts are combined in order, so results never depend on the thread count
 * or on scheduling. Tensors below two full parts (128 Ki elements) run on
 * the calling thread alone.
 * Larger ones invite helper threads for idle cores only (helpers_now; started
 * once, sleeping on a condition
 * variable, never spinning); the caller claims parts too and waits only for
 * parts a helper has already started, never for a helper that has not been
 * scheduled (on busy cores it may not be for milliseconds). Where torch runs on
 * libgomp, the library is built with -fopenmp and the parts go to torch's own
 * OpenMP workers instead (run_parallel), under the same idle-core rule.
 *
 * Where the compiler targets AVX-512 (-march=native on such a CPU), float32
 * runs 16 lanes per instruction instead of 8, about 1.7x faster, with results
 * bit for bit those of the 8-lane loop (same lanes, same folding order).
 *
 * min and max ignore NaN; a NaN shows in the sum, which the caller checks
 * before trusting min and max.
 */
#include <fcntl.h>
#ifdef __AVX512F__
#include <immintrin.h>
#endif
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define BLOCK 2048
/* Elements to prefetch ahead: 4 KiB of float32 (measured: ~20% faster on data
 * just written by the previous layer, which is partly out of cache). */
#define PREFETCH 1024
/* Smallest part: 64 Ki elements, 4-40 us of work on one core (from AVX-512 on
 * cached data to 8 lanes on data in DRAM). */
#define PART_MIN 65536
#define MAX_PARTS 256
#define MAX_HELPERS 63

typedef float v8f __attribute__((vector_size(32)));
typedef int32_t v8i __attribute__((vector_size(32)));
typedef uint16_t v8u16 __attribute__((vector_size(16)));
typedef double v4d __attribute__((vector_size(32)));
typedef int64_t v4l __attribute__((vector_size(32)));

typedef struct {
    double sum, sumsq, min, max, nonzero;
    /* hs_reduce_relu only: sums of max(x, 0) - max(shift, 0) and count of x > 0. */
    double rsum, rsumsq, positive;
} hs_stats;

/* Lane-wise select (mask lanes are all ones or all zeros). */
#define SEL8(mask, a, b) ((v8f)((((v8i)(a)) & (mask)) | (((v8i)(b)) & ~(mask))))
#define SEL4(mask, a, b) ((v4d)((((v4l)(a)) & (mask)) | (((v4l)(b)) & ~(mask))))

static inline v8f load_f32(const void *p) {
    v8f v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline float one_f32(const void *p, int64_t i) { return ((const float *)p)[i]; }

/* bfloat16 is the top half of a float32. */
static inline v8f load_bf16(const void *p) {
    v8u16 h;
    memcpy(&h, p, sizeof h);
    return (v8f)(__builtin_convertvector(h, v8i) << 16);
}

static inline float one_bf16(const void *p, int64_t i) {
    uint32_t u = (uint32_t)((const uint16_t *)p)[i] << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

#ifdef __FLT16_MAX__
#define HS_HAVE_F16 1
typedef _Float16 v8h __attribute__((vector_size(16)));
static inline v8f load_f16(const void *p) {
    v8h h;
    memcpy(&h, p, sizeof h);
    return __builtin_convertvector(h, v8f);
}
static inline float one_f16(const void *p, int64_t i) { return (float)((const _Float16 *)p)[i]; }
#endif

/* The 4-byte-and-narrower loop: 16 float lanes, int32 non-zero lanes. */
#define DEFINE_RANGE(NAME, SIZE, LOAD, ONE)                                          \
    /* Sum and sum of squares of x[a:b] - shift in double (the rare, slow path). */  \
    static void NAME##_double(const char *p, int64_t a, int64_t b, double shift,     \
                              double *sum, double *sumsq) {                          \
        double s = 0, q = 0;                                                         \
        for (int64_t i = a; i < b; i++) {                                            \
            double d = (double)ONE(p, i) - shift;                                    \
            s += d;                                                                  \
            q += d * d;                                                              \
        }                                                                            \
        *sum = s;                                                                    \
        *sumsq = q;                                                                  \
    }                                                                                \
    static void NAME(const char *p, int64_t n, double shift, hs_stats *out) {        \
        const float c = (float)shift;                                                \
        const v8f inf = {INFINITY, INFINITY, INFINITY, INFINITY,                     \
                         INFINITY, INFINITY, INFINITY, INFINITY};                    \
        const v8f zero = {0};                                                        \
        const v8f cv = zero + c;                                                     \
        v8f lo0 = inf, lo1 = inf, hi0 = -inf, hi1 = -inf;                            \
        double sum = 0, sumsq = 0;                                                   \
        int64_t nonzero = 0, i = 0;                                                  \
        for (; i + BLOCK <= n; i += BLOCK) {                                         \
            v8f s0 = zero, s1 = zero, q0 = zero, q1 = zero;                          \
            v8i z0 = {0}, z1 = {0};                                                  \
            for (int64_t k = i; k < i + BLOCK; k += 16) {                            \
                __builtin_prefetch(p + (k + PREFETCH) * (SIZE));                     \
                v8f a = LOAD(p + k * (SIZE)), b = LOAD(p + (k + 8) * (SIZE));        \
                lo0 = SEL8(a < lo0, a, lo0);                                         \
                lo1 = SEL8(b < lo1, b, lo1);                                         \
                hi0 = SEL8(a > hi0, a, hi0);                                         \
                hi1 = SEL8(b > hi1, b, hi1);                                         \
                z0 -= (a != zero);                                                   \
                z1 -= (b != zero);                                                   \
                a -= cv;                                                             \
                b -= cv;                                                             \
                s0 += a;                                                             \
                s1 += b;                                                             \
                q0 += a * a;                                                         \
                q1 += b * b;                                                         \
            }                                                                        \
            s0 += s1;                                                                \
            q0 += q1;                                                                \
            z0 += z1;                                                                \
            double bs = 0, bq = 0;                                                   \
            for (int j = 0; j < 8; j++) {                                            \
                bs += s0[j];                                                         \
                bq += q0[j];                                                         \
                nonzero += z0[j];                                                    \
            }                                                                        \
            if (__builtin_expect(!isfinite(bs + bq), 0))                             \
                NAME##_double(p, i, i + BLOCK, shift, &bs, &bq);                     \
            sum += bs;                                                               \
            sumsq += bq;                                                             \
        }                                                                            \
        float mn = INFINITY, mx = -INFINITY;                                         \
        for (int j = 0; j < 8; j++) {                                                \
            mn = lo0[j] < mn ? lo0[j] : mn;                                          \
            mn = lo1[j] < mn ? lo1[j] : mn;                                          \
            mx = hi0[j] > mx ? hi0[j] : mx;                                          \
            mx = hi1[j] > mx ? hi1[j] : mx;                                          \
        }                                                                            \
        for (; i < n; i++) {                                                         \
            float v = ONE(p, i);                                                     \
            double d = (double)v - shift;                                            \
            sum += d;                                                                \
            sumsq += d * d;                                                          \
            mn = v < mn ? v : mn;                                                    \
            mx = v > mx ? v : mx;                                                    \
            nonzero += v != 0.0f;                                                    \
        }                                                                            \
        out->sum = sum;                                                              \
        out->sumsq = sumsq;                                                          \
        out->min = mn;                                                               \
        out->max = mx;                                                               \
        out->nonzero = (double)nonzero;                                              \
    }                                                                                \
    static double NAME##_at(const char *p, int64_t i) { return ONE(p, i); }

/* The sums of max(x, 0) - c over elements i..end in double (a block whose float
 * sums overflowed or met a NaN/Inf; NaN counts as 0). */
static void relu_double(const char *p, int64_t i, int64_t end, float c, double *sum, double *sumsq) {
    double bs = 0, bq = 0;
    for (int64_t k = i; k < end; k++) {
        float v = one_f32(p, k);
        double d = (double)(v > 0 ? v : 0) - c;
        bs += d;
        bq += d * d;
    }
    *sum = bs;
    *sumsq = bq;
}

#ifdef __AVX512F__
DEFINE_RANGE(range_f32_v8, 4, load_f32, one_f32)
#define range_f32_at range_f32_v8_at

/* Lanes as one 16-wide vector: lane j holds what lane j of the two 8-wide
 * vectors above holds (elements k..k+7 and k+8..k+15), and a block's lanes
 * are folded to 8 in the same order, so results are bit for bit those of
 * range_f32_v8. min_ps(a, lo) is (a < lo ? a : lo), NaN included. */
static inline double fold16(__m512 v) {
    /* The upper half through a double extract: AVX512F only, no AVX512DQ. */
    v8f upper = (v8f)_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1));
    v8f h = (v8f)_mm512_castps512_ps256(v) + upper;
    double s = 0;
    for (int j = 0; j < 8; j++) s += h[j];
    return s;
}

/* range_f32's AVX-512 body; with `relu` (a constant where it is inlined) also
 * range_f32_relu's sums of max(x, 0) in the same loop. Each sum has its own
 * accumulators, added in the same order as in two separate passes, so the
 * results are bit for bit those of the two-pass version (which other CPUs run). */
static inline __attribute__((always_inline)) void range_f32_v16(const char *p, int64_t n, double shift, hs_stats *out,
                                                                const int relu) {
    const float c = (float)shift, rc = (float)(shift > 0 ? shift : 0);
    const __m512 cv = _mm512_set1_ps(c), rcv = _mm512_set1_ps(rc), zero = _mm512_setzero_ps();
    __m512 lo = _mm512_set1_ps(INFINITY), hi = _mm512_set1_ps(-INFINITY);
    double sum = 0, sumsq = 0, rsum = 0, rsumsq = 0;
    int64_t nonzero = 0, positive = 0, i = 0;
    for (; i + BLOCK <= n; i += BLOCK) {
        __m512 s = zero, q = zero, rs = zero, rq = zero;
        int64_t z = 0;
        for (int64_t k = i; k < i + BLOCK; k += 16) {
            __builtin_prefetch(p + (k + PREFETCH) * 4);
            __m512 a = _mm512_loadu_ps(p + k * 4);
            lo = _mm512_min_ps(a, lo);
            hi = _mm512_max_ps(a, hi);
            z += __builtin_popcount(_mm512_cmp_ps_mask(a, zero, _CMP_NEQ_UQ));
            if (relu) {
                positive += __builtin_popcount(_mm512_cmp_ps_mask(a, zero, _CMP_GT_OQ));
                __m512 r = _mm512_sub_ps(_mm512_max_ps(a, zero), rcv); /* NaN -> 0 */
                rs = _mm512_add_ps(rs, r);
                rq = _mm512_fmadd_ps(r, r, rq);
            }
            a = _mm512_sub_ps(a, cv);
            s = _mm512_add_ps(s, a);
            q = _mm512_fmadd_ps(a, a, q);
        }
        double bs = fold16(s), bq = fold16(q);
        nonzero += z;
        if (__builtin_expect(!isfinite(bs + bq), 0)) range_f32_v8_double(p, i, i + BLOCK, shift, &bs, &bq);
        sum += bs;
        sumsq += bq;
        if (relu) {
            double rbs = fold16(rs), rbq = fold16(rq);
            if (__builtin_expect(!isfinite(rbs + rbq), 0)) relu_double(p, i, i + BLOCK, rc, &rbs, &rbq);
            rsum += rbs;
            rsumsq += rbq;
        }
    }
    float l[16], h[16], mn = INFINITY, mx = -INFINITY;
    _mm512_storeu_ps(l, lo);
    _mm512_storeu_ps(h, hi);
    for (int j = 0; j < 8; j++) { /* range_f32_v8's order: lo0[j], then lo1[j] */
        mn = l[j] < mn ? l[j] : mn;
        mn = l[j + 8] < mn ? l[j + 8] : mn;
        mx = h[j] > mx ? h[j] : mx;
        mx = h[j + 8] > mx ? h[j + 8] : mx;
    }
    for (; i < n; i++) {
        float v = one_f32(p, i);
        double d = (double)v - shift;
        sum += d;
        sumsq += d * d;
        mn = v < mn ? v : mn;
        mx = v > mx ? v : mx;
        nonzero += v != 0.0f;
        if (relu) {
            double r = (double)(v > 0 ? v : 0) - rc;
            rsum += r;
            rsumsq += r * r;
            positive += v > 0;
        }
    }
    out->sum = sum;
    out->sumsq = sumsq;
    out->min = mn;
    out->max = mx;
    out->nonzero = (double)nonzero;
    if (relu) {
        out->rsum = rsum;
        out->rsumsq = rsumsq;
        out->positive = (double)positive;
    }
}

static void range_f32(const char *p, int64_t n, double shift, hs_stats *out) { range_f32_v16(p, n, shift, out, 0); }
#else
DEFINE_RANGE(range_f32, 4, load_f32, one_f32)
#endif
DEFINE_RANGE(range_bf16, 2, load_bf16, one_bf16)
#ifdef HS_HAVE_F16
DEFINE_RANGE(range_f16, 2, load_f16, one_f16)
#endif

static void range_f64(const char *bytes, int64_t n, double shift, hs_stats *out) {
    const double *p = (const double *)bytes;
    const v4d zero = {0};
    const v4d inf = {INFINITY, INFINITY, INFINITY, INFINITY};
    const v4d cv = zero + shift;
    v4d s0 = zero, s1 = zero, q0 = zero, q1 = zero;
    v4d lo0 = inf, lo1 = inf, hi0 = -inf, hi1 = -inf;
    v4l z0 = {0}, z1 = {0};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        v4d a, b;
        __builtin_prefetch(p + i + PREFETCH / 2);
        memcpy(&a, p + i, sizeof a);
        memcpy(&b, p + i + 4, sizeof b);
        lo0 = SEL4(a < lo0, a, lo0);
        lo1 = SEL4(b < lo1, b, lo1);
        hi0 = SEL4(a > hi0, a, hi0);
        hi1 = SEL4(b > hi1, b, hi1);
        z0 -= (a != zero);
        z1 -= (b != zero);
        a -= cv;
        b -= cv;
        s0 += a;
        s1 += b;
        q0 += a * a;
        q1 += b * b;
    }
    s0 += s1;
    q0 += q1;
    z0 += z1;
    double sum = 0, sumsq = 0, mn = INFINITY, mx = -INFINITY;
    int64_t nonzero = 0;
    for (int j = 0; j < 4; j++) {
        sum += s0[j];
        sumsq += q0[j];
        nonzero += z0[j];
        mn = lo0[j] < mn ? lo0[j] : mn;
        mn = lo1[j] < mn ? lo1[j] : mn;
        mx = hi0[j] > mx ? hi0[j] : mx;
        mx = hi1[j] > mx ? hi1[j] : mx;
    }
    for (; i < n; i++) {
        double v = p[i], d = v - shift;
        sum += d;
        sumsq += d * d;
        mn = v < mn ? v : mn;
        mx = v > mx ? v : mx;
        nonzero += v != 0.0;
    }
    out->sum = sum;
    out->sumsq = sumsq;
    out->min = mn;
    out->max = mx;
    out->nonzero = (double)nonzero;
}

static double range_f64_at(const char *p, int64_t i) { return ((const double *)p)[i]; }

/* float32 only: the statistics of x and, in the same pass, the sums of
 * y = max(x, 0) (what an nn.ReLU after this tensor outputs) and the count of
 * x > 0, so a ReLU's output need not be read again (hs_reduce_relu). */
#ifdef __AVX512F__
static void range_f32_relu(const char *p, int64_t n, double shift, hs_stats *out) {
    range_f32_v16(p, n, shift, out, 1); /* one pass */
}
#else
static void range_f32_relu(const char *p, int64_t n, double shift, hs_stats *out) {
    range_f32(p, n, shift, out); /* x itself; the part (<= 400 KB) is then in cache for y */
    const float c = (float)(shift > 0 ? shift : 0);
    const v8f zero = {0};
    const v8f cv = zero + c;
    double sum = 0, sumsq = 0;
    int64_t positive = 0, i = 0;
    for (; i + BLOCK <= n; i += BLOCK) {
        v8f s0 = zero, s1 = zero, q0 = zero, q1 = zero;
        v8i z0 = {0}, z1 = {0};
        for (int64_t k = i; k < i + BLOCK; k += 16) {
            v8f a = load_f32(p + k * 4), b = load_f32(p + (k + 8) * 4);
            z0 -= (a > zero);
            z1 -= (b > zero);
            a = SEL8(a > zero, a, zero) - cv;
            b = SEL8(b > zero, b, zero) - cv;
            s0 += a;
            s1 += b;
            q0 += a * a;
            q1 += b * b;
        }
        s0 += s1;
        q0 += q1;
        z0 += z1;
        double bs = 0, bq = 0;
        for (int j = 0; j < 8; j++) {
            bs += s0[j];
            bq += q0[j];
            positive += z0[j];
        }
        if (__builtin_expect(!isfinite(bs + bq), 0)) relu_double(p, i, i + BLOCK, c, &bs, &bq);
        sum += bs;
        sumsq += bq;
    }
    for (; i < n; i++) {
        float v = one_f32(p, i);
        double d = (double)(v > 0 ? v : 0) - c;
        sum += d;
        sumsq += d * d;
        positive += v > 0;
    }
    out->rsum = sum;
    out->rsumsq = sumsq;
    out->positive = (double)positive;
}
#endif

/* ---- a BatchNorm's output, made from its input one block at a time ------- */

/* y = (x - mean[c]) * scale[c] + bias[c], c the element's index along dim 1.
 * In a dense tensor the element at offset g has c = (g / stride) % channels
 * (stride: dim 1's). Where that repeats with a short period (channels-last,
 * 2-D input: stride 1), the parameters are laid out per position once, so the
 * loop runs over plain arrays; otherwise (NCHW) each run of `stride` elements
 * shares one channel. */
#define PATTERN_MAX 65536

typedef struct {
    const float *x;
    int64_t stride, channels;
    const float *mean, *scale, *bias;
    const float *pm, *ps, *pb; /* per position, period + BLOCK long; NULL: runs */
    int64_t period;
    int relu;
} affine_t;

/* y[0:n] for the elements at start..start+n (n <= BLOCK) as torch computes it:
 * sub, then mul, then add, each rounded (never contracted to a fused multiply-add). */
#if defined(__GNUC__) && !defined(__clang__)
__attribute__((optimize("fp-contract=off")))
#endif
static void affine_fill(const affine_t *a, int64_t start, int64_t n, float *y) {
#ifdef __clang__
#pragma clang fp contract(off)
#endif
    const float *x = a->x + start;
    if (a->pm && 64 % a->period == 0 && start % 64 == 0) {
        /* a period of 64 elements or fewer (channels-last with up to 64 channels):
         * its 64 positions stay in registers */
        float m[64], s[64], b[64];
        memcpy(m, a->pm, sizeof m);
        memcpy(s, a->ps, sizeof s);
        memcpy(b, a->pb, sizeof b);
        int64_t j = 0;
        for (; j + 64 <= n; j += 64)
            for (int k = 0; k < 64; k++) {
                float d = x[j + k] - m[k];
                d = d * s[k];
                y[j + k] = d + b[k];
            }
        for (int k = 0; j + k < n; k++) {
            float d = x[j + k] - m[k];
            d = d * s[k];
            y[j + k] = d + b[k];
        }
        return;
    }
    if (a->pm) {
        int64_t r = start % a->period;
        const float *m = a->pm + r, *s = a->ps + r, *b = a->pb + r;
        for (int64_t j = 0; j < n; j++) {
            float d = x[j] - m[j];
            d = d * s[j];
            y[j] = d + b[j];
        }
        return;
    }
    for (int64_t j = 0; j < n;) {
        int64_t g = start + j, c = (g / a->stride) % a->channels;
        int64_t run = a->stride - g % a->stride;
        run = run < n - j ? run : n - j;
        const float m = a->mean[c], s = a->scale[c], b = a->bias[c];
        for (int64_t k = j; k < j + run; k++) {
            float d = x[k] - m;
            d = d * s;
            y[k] = d + b;
        }
        j += run;
    }
}

/* range_f32 (with relu: range_f32_relu) of y over elements start..start+n,
 * bit for bit: whole blocks go through those functions from a block-sized
 * buffer (a block's sums are added to the running sums in the same order),
 * the tail through the same scalar loops. */
static void range_affine(const affine_t *a, int64_t start, int64_t n, double shift, hs_stats *out) {
    float buf[BLOCK];
    double sum = 0, sumsq = 0, nonzero = 0, rsum = 0, rsumsq = 0, positive = 0;
    float mn = INFINITY, mx = -INFINITY;
    int64_t i = 0;
    for (; i + BLOCK <= n; i += BLOCK) {
        hs_stats b;
        affine_fill(a, start + i, BLOCK, buf);
        if (a->relu)
            range_f32_relu((const char *)buf, BLOCK, shift, &b);
        else
            range_f32((const char *)buf, BLOCK, shift, &b);
        sum += b.sum;
        sumsq += b.sumsq;
        nonzero += b.nonzero;
        mn = b.min < mn ? (float)b.min : mn;
        mx = b.max > mx ? (float)b.max : mx;
        if (a->relu) {
            rsum += b.rsum;
            rsumsq += b.rsumsq;
            positive += b.positive;
        }
    }
    affine_fill(a, start + i, n - i, buf);
    const float c = (float)(shift > 0 ? shift : 0);
    for (int64_t j = 0; j < n - i; j++) {
        float v = buf[j];
        double d = (double)v - shift;
        sum += d;
        sumsq += d * d;
        mn = v < mn ? v : mn;
        mx = v > mx ? v : mx;
        nonzero += v != 0.0f;
        if (a->relu) {
            double r = (double)(v > 0 ? v : 0) - c;
            rsum += r;
            rsumsq += r * r;
            positive += v > 0;
        }
    }
    out->sum = sum;
    out->sumsq = sumsq;
    out->min = mn;
    out->max = mx;
    out->nonzero = nonzero;
    out->rsum = rsum;
    out->rsumsq = rsumsq;
    out->positive = positive;
}

typedef void (*range_fn)(const char *, int64_t, double, hs_stats *);
typedef double (*at_fn)(const char *, int64_t);

/* dtype codes (kept in step with native.py): 0 float32, 1 bfloat16, 2 float16, 3 float64. */
static int pick(int dtype, range_fn *fn, at_fn *at, int64_t *size) {
    switch (dtype) {
    case 0: *fn = range_f32; *at = range_f32_at; *size = 4; return 0;
    case 1: *fn = range_bf16; *at = range_bf16_at; *size = 2; return 0;
#ifdef HS_HAVE_F16
    case 2: *fn = range_f16; *at = range_f16_at; *size = 2; return 0;
#endif
    case 3: *fn = range_f64; *at = range_f64_at; *size = 8; return 0;
    default: return -1;
    }
}

/* ---- helper threads ---------------------------------------------------- */

typedef struct {
    range_fn fn;
    const char *data;
    int64_t n, part, size, parts;
    double shift;
    hs_stats *out;
    const affine_t *affine; /* set: range_affine over element offsets, not fn over data */
} job_t;

static struct {
    pthread_mutex_t mu;  /* guards everything below except the atomics */
    pthread_cond_t wake;
    int started;          /* helper threads running in this process */
    int invited;          /* helpers still to join the current job */
    uint32_t gen;         /* job number */
    job_t job;
    _Atomic uint64_t next; /* gen << 32 | next unclaimed part */
    _Atomic int64_t done;  /* parts finished in the current job */
} pool = {.mu = PTHREAD_MUTEX_INITIALIZER, .wake = PTHREAD_COND_INITIALIZER};

/* One caller at a time uses the helpers; a concurrent caller runs alone. */
static pthread_mutex_t owner = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;
/* Set in a forked child: libgomp's thread pool does not survive fork() (a parallel
 * region there can hang), so a child uses this file's own helpers instead. */
static int in_forked_child = 0;

static void run_part(const job_t *job, int64_t k) {
    int64_t a = k * job->part;
    int64_t b = a + job->part < job->n ? a + job->part : job->n;
    if (job->affine)
        range_affine(job->affine, a, b - a, job->shift, &job->out[k]);
    else
        job->fn(job->data + a * job->size, b - a, job->shift, &job->out[k]);
}

/* Claim and run parts of job `gen` until none is left; a stale gen claims nothing. */
static void work(const job_t *job, uint32_t gen) {
    uint64_t cur = atomic_load(&pool.next);
    for (;;) {
        if ((uint32_t)(cur >> 32) != gen || (int64_t)(uint32_t)cur >= job->parts) return;
        if (!atomic_compare_exchange_weak(&pool.next, &cur, cur + 1)) continue;
        run_part(job, (int64_t)(uint32_t)cur);
        atomic_fetch_add(&pool.done, 1);
        cur = atomic_load(&pool.next);
    }
}

static void *helper(void *arg) {
    (void)arg;
    uint32_t seen = 0;
    pthread_mutex_lock(&pool.mu);
    for (;;) {
        while (pool.gen == seen || pool.invited == 0) pthread_cond_wait(&pool.wake, &pool.mu);
        seen = pool.gen;
        pool.invited--;
        job_t job = pool.job;
        pthread_mutex_unlock(&pool.mu);
        work(&job, seen);
        pthread_mutex_lock(&pool.mu);
    }
    return NULL;
}

/* fork() copies only the calling thread: the child starts its own helpers. */
static void before_fork(void) {
    pthread_mutex_lock(&owner);
    pthread_mutex_lock(&pool.mu);
}
static void after_fork_parent(void) {
    pthread_mutex_unlock(&pool.mu);
    pthread_mutex_unlock(&owner);
}
static void after_fork_child(void) {
    in_forked_child = 1;
    pool.started = 0;
    pool.invited = 0;
    pthread_cond_init(&pool.wake, NULL);
    pthread_mutex_unlock(&pool.mu);
    pthread_mutex_unlock(&owner);
}
static void register_atfork(void) { pthread_atfork(before_fork, after_fork_parent, after_fork_child); }
/* At load: a child forked before this library's first parallel call must know it too. */
__attribute__((constructor)) static void at_load(void) { pthread_once(&atfork_once, register_atfork); }

/* Start helpers up to `want`; returns how many run. Called with pool.mu held. */
static int ensure_helpers(int want) {
    while (pool.started < want) {
        pthread_t t;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        pthread_attr_setstacksize(&attr, 1 << 16);
        int failed = pthread_create(&t, &attr, helper, NULL);
        pthread_attr_destroy(&attr);
        if (failed) break;
        pool.started++;
    }
    return pool.started < want ? pool.started : want;
}

static void run_job(job_t *job, int helpers) {
    pthread_once(&atfork_once, register_atfork);
    pthread_mutex_lock(&pool.mu);
    helpers = ensure_helpers(helpers);
    uint32_t gen = ++pool.gen;
    pool.job = *job;
    pool.invited = helpers;
    atomic_store(&pool.done, 0);
    atomic_store(&pool.next, (uint64_t)gen << 32);
    for (int h = 0; h < helpers; h++) pthread_cond_signal(&pool.wake);
    pthread_mutex_unlock(&pool.mu);
    work(job, gen);
    /* Only parts a helper already runs are left (at most one per helper). */
    while (atomic_load(&pool.done) < job->parts) sched_yield();
    pthread_mutex_lock(&pool.mu);
    pool.invited = 0; /* helpers not yet awake skip this job */
    pthread_mutex_unlock(&pool.mu);
}

/* ---- idle cores ------------------------------------------------------------ */

/* A helper pays off only on a core nobody else wants. Where every core is
 * taken (DataLoader workers, a second job, or this process's own OpenMP
 * threads still spinning after a torch op), the woken helper lands on the
 * caller's core and runs while the caller waits, costing two context switches
 * and saving nothing (measured on 2 cores: helpers ran 66-89% of the parts,
 * the caller the rest). Linux says how many threads are runnable right now,
 * the caller included (the fourth field of /proc/loadavg); helpers are
 * invited only for cores left over, that count sampled at most once a
 * millisecond and averaged over about eight samples. Without /proc there
 * is no limit. hs_set_helpers overrides this. Called with `owner` held. */
static struct {
    int fd;        /* /proc/loadavg, -1 when unreadable, -2 before the first try */
    int cpus;      /* online CPUs */
    int ema16;     /* runnable threads x 16, smoothed; -1 before the first sample */
    int64_t last;  /* ns of the last sample */
    int mode;      /* 0: idle cores only, 1: always, 2: never */
} load = {-2, 1, -1, 0, 0};

static int runnable_now(void) {
    char buf[128];
    ssize_t got = pread(load.fd, buf, sizeof buf - 1, 0);
    if (got <= 0) return -1;
    buf[got] = 0;
    const char *p = buf;
    for (int field = 0; field < 3 && p; field++) { /* skip the three load averages */
        p = strchr(p, ' ');
        if (p) p++;
    }
    return p ? atoi(p) : -1;
}

/* How many of `want` helpers to invite now. `own` runnable threads may be this
 * process's own OpenMP workers spinning after a torch op: those cores count as idle. */
static int helpers_now(int want, int own) {
    if (load.mode != 0) return load.mode == 1 ? want : 0;
    if (load.fd == -2) {
        load.fd = open("/proc/loadavg", O_RDONLY | O_CLOEXEC);
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        load.cpus = cpus > 0 ? (int)cpus : 1;
    }
    if (load.fd < 0) return want;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    int64_t now = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
    if (load.ema16 < 0 || now - load.last >= 1000000) {
        int running = runnable_now();
        if (running < 0) return want;
        load.ema16 = load.ema16 < 0 ? 16 * running : load.ema16 - load.ema16 / 8 + 2 * running;
        load.last = now;
    }
    int idle = load.cpus - (load.ema16 + 8) / 16 + own;
    return idle < want ? (idle > 0 ? idle : 0) : want;
}

#ifdef _OPENMP
/* Built with -fopenmp only where torch itself runs on libgomp (hookscope.stats.native
 * checks): this library then links the very libgomp torch loaded, so the parts go to
 * torch's own intra-op workers. Right after a torch op they are still spinning on
 * the other cores, awake: a parallel region starts in microseconds, where a sleeping
 * helper thread of our own would have to be woken, and would then share its core
 * with that spinning worker. Dynamic scheduling: a worker that joins late takes
 * what is left, so the caller never waits for one that has not started a part. */
#define OWN_WORKERS(h) (h)
static void run_parallel(job_t *job, int helpers) {
    if (in_forked_child) {
        run_job(job, helpers);
        return;
    }
#pragma omp parallel for num_threads(helpers + 1) schedule(dynamic, 1)
    for (int64_t k = 0; k < job->parts; k++) run_part(job, k);
}
#else
#define OWN_WORKERS(h) 0
static void run_parallel(job_t *job, int helpers) { run_job(job, helpers); }
#endif

/* Helper policy: 0 (default) helpers only on idle cores, 1 always, 2 never. */
void hs_set_helpers(int mode) {
    pthread_mutex_lock(&owner);
    load.mode = mode;
    pthread_mutex_unlock(&owner);
}

/* ---- entry points -------------------------------------------------------- */

/* 1 when this build handles `dtype`, else 0. */
int hs_supports(int dtype) {
    range_fn fn;
    at_fn at;
    int64_t size;
    return pick(dtype, &fn, &at, &size) == 0;
}

/* Runs `fn` over the parts of x (with `affine`: range_affine over the parts of
 * its y) and combines them in order into `out` (hs_reduce's layout, then
 * rsum, rsumsq, positive; those only with `relu`). */
static void reduce_parts(range_fn fn, at_fn at, int64_t size, const char *p, int64_t n,
                         int threads, double shift, const affine_t *affine, int relu,
                         double *out) {
    for (int64_t i = 0; isnan(shift) && i < n && i < 64; i++) {
        double v = at(p, i);
        if (isfinite(v)) shift = v;
    }
    if (isnan(shift)) shift = 0;
    /* The part size depends on n only: the same result for any thread count. */
    int64_t part = (n + MAX_PARTS - 1) / MAX_PARTS;
    part = part < PART_MIN ? PART_MIN : (part + BLOCK - 1) / BLOCK * BLOCK;
    int64_t parts = n <= part ? 1 : (n + part - 1) / part;
    hs_stats local[MAX_PARTS];
    job_t job = {fn, p, n, part, size, parts, shift, local, affine};
    /* Helpers only from two full parts on: below that, waking one costs more than it saves. */
    int helpers = n < 2 * PART_MIN ? 0 : threads - 1 < parts - 1 ? threads - 1 : (int)(parts - 1);
    if (helpers > MAX_HELPERS) helpers = MAX_HELPERS;
    if (helpers > 0 && pthread_mutex_trylock(&owner) == 0) {
        helpers = helpers_now(helpers, OWN_WORKERS(helpers));
        if (helpers > 0)
            run_parallel(&job, helpers);
        else
            for (int64_t k = 0; k < parts; k++) run_part(&job, k);
        pthread_mutex_unlock(&owner);
    } else {
        for (int64_t k = 0; k < parts; k++) run_part(&job, k);
    }
    hs_stats r = local[0];
    for (int64_t k = 1; k < parts; k++) {
        r.sum += local[k].sum;
        r.sumsq += local[k].sumsq;
        r.nonzero += local[k].nonzero;
        r.min = local[k].min < r.min ? local[k].min : r.min;
        r.max = local[k].max > r.max ? local[k].max : r.max;
    }
    /* Only the ReLU passes fill the ReLU fields: never read them otherwise. */
    double rsum = 0, rsumsq = 0, positive = 0;
    for (int64_t k = 0; relu && k < parts; k++) {
        rsum += local[k].rsum;
        rsumsq += local[k].rsumsq;
        positive += local[k].positive;
    }
    double values[9] = {r.sum, r.sumsq, r.min, r.max, r.nonzero, shift, rsum, rsumsq, positive};
    memcpy(out, values, sizeof values);
}

/* Reduce n elements at `data` with up to `threads` threads (the caller's included).
 * shift: subtracted before summing; NaN takes the first finite element.
 * out[6]: sum of (x - shift), sum of (x - shift)^2, min, max, non-zero count, shift.
 * Returns 0, or -1 for an unsupported dtype. */
int hs_reduce(int dtype, const void *data, int64_t n, int threads, double shift, double *out) {
    range_fn fn;
    at_fn at;
    int64_t size;
    if (pick(dtype, &fn, &at, &size) != 0) return -1;
    double all[9];
    reduce_parts(fn, at, size, (const char *)data, n, threads, shift, NULL, 0, all);
    memcpy(out, all, 6 * sizeof(double));
    return 0;
}

/* hs_reduce of float32 x, and of y = max(x, 0) in the same pass.
 * out[9]: hs_reduce's six values, then the sum of (y - max(shift, 0)), the
 * sum of its squares, and the count of x > 0 (y's non-zero count).
 * Returns 0, or -1 for a dtype other than float32 (code 0). */
int hs_reduce_relu(int dtype, const void *data, int64_t n, int threads, double shift,
                   double *out) {
    if (dtype != 0) return -1;
    reduce_parts(range_f32_relu, range_f32_at, 4, (const char *)data, n, threads, shift, NULL, 1,
                 out);
    return 0;
}

/* hs_reduce of y = (x - mean[c]) * scale[c] + bias[c] (float32 x, c the index
 * along dim 1, whose stride is `stride`), without making y: each block of y
 * is made in a buffer the size of a block and reduced there, so x is read
 * once. The results are bit for bit hs_reduce's (with relu: hs_reduce_relu's)
 * of y made by torch's sub, mul and add, the shift being y's first finite
 * element; out[9] as hs_reduce_relu's (the last three only with relu).
 * Returns 0, or -1 when memory for the per-position parameters is short. */
int hs_reduce_affine(const float *x, int64_t n, int64_t stride, int64_t channels,
                     const float *mean, const float *scale, const float *bias, int relu,
                     int threads, double *out) {
    affine_t a = {x, stride, channels, mean, scale, bias, NULL, NULL, NULL, 0, relu};
    float *pattern = NULL;
    if (stride < 64 && stride * channels <= PATTERN_MAX) {
        int64_t period = stride * channels, len = period + (n < BLOCK ? n : BLOCK);
        pattern = malloc(3 * len * sizeof(float));
        if (!pattern) return -1;
        for (int64_t c = 0, g = 0; c < channels; c++)
            for (int64_t k = 0; k < stride; k++, g++) {
                pattern[g] = mean[c];
                pattern[len + g] = scale[c];
                pattern[2 * len + g] = bias[c];
            }
        for (int64_t g = period; g < len; g++) { /* then it repeats */
            pattern[g] = pattern[g - period];
            pattern[len + g] = pattern[len + g - period];
            pattern[2 * len + g] = pattern[2 * len + g - period];
        }
        a.pm = pattern;
        a.ps = pattern + len;
        a.pb = pattern + 2 * len;
        a.period = period;
    }
    float head[64];
    int64_t k = n < 64 ? n : 64;
    affine_fill(&a, 0, k, head);
    double shift = 0; /* reduce_parts' rule: the first finite of the first 64, else 0 */
    for (int64_t i = 0; i < k; i++)
        if (isfinite(head[i])) {
            shift = head[i];
            break;
        }
    reduce_parts(range_f32, range_f32_at, 4, (const char *)x, n, threads, shift, &a, relu, out);
    free(pattern);
    return 0;
}

/* ---- rows of the compiled Monitor (hookscope.stats.rowop) ---------------
 * The same reductions, written straight into a float64 row of a statistics
 * buffer instead of handed back to Python: one call per row, no result
 * objects. A forward row is FIELDS (hookscope.stats.traced): calls, numel,
 * sum, sum of squares, min, max, non-zeros, NaNs, Infs. The unshifted sums
 * are native.Moments.sum and .sumsq, the merge rowop's: the same operations
 * in the same order, none contracted, so the rows are bit for bit those of
 * the Python path. Each returns 0; 1 when the sums are not finite (a NaN or
 * Inf: the row is untouched and the caller counts them exactly); -1 when
 * the kernel does not take the tensor. */

/* Moments of a finite tensor as (ssum, ssumsq, min, max, nonzero, shift) -> a row's parts. */
#if defined(__GNUC__) && !defined(__clang__)
__attribute__((optimize("fp-contract=off")))
#endif
static void unshift(int64_t n, const double *m, double *sum, double *sumsq) {
#ifdef __clang__
#pragma clang fp contract(off)
#endif
    double dn = (double)n, c = m[5];
    *sum = m[0] + dn * c;
    *sumsq = m[1] + c * (2.0 * m[0] + dn * c);
}

static void merge_into(double *row, int64_t n, const double *m) {
    double sum, sumsq;
    unshift(n, m, &sum, &sumsq);
    row[0] += 1.0;
    row[1] += (double)n;
    row[2] += sum;
    row[3] += sumsq;
    if (m[2] < row[4]) row[4] = m[2]; /* Python's min(old, new) and max(old, new) */
    if (m[3] > row[5]) row[5] = m[3];
    row[6] += m[4];
    row[7] += 0.0;
    row[8] += 0.0;
}

static void set_row(double *row, int64_t n, const double *m) {
    double sum, sumsq;
    unshift(n, m, &sum, &sumsq);
    double values[9] = {1.0, (double)n, sum, sumsq, m[2], m[3], m[4], 0.0, 0.0};
    memcpy(row, values, sizeof values);
}

/* relu(x)'s moments from a ReLU pass's nine values (native._relu_moments). */
static void relu_part(int64_t n, const double *v, double *m) {
    double positive = v[8];
    m[0] = v[6];
    m[1] = v[7];
    m[2] = positive < (double)n ? 0.0 : v[2];
    m[3] = 0.0 > v[3] ? 0.0 : v[3];
    m[4] = positive;
    m[5] = 0.0 > v[5] ? 0.0 : v[5];
}

static int finite_sums(const double *m) { return isfinite(m[0]) && isfinite(m[1]); }

/* Merge the row of x (with relu: of max(x, 0), float32 only) into row[9]. */
int hs_merge_row(int dtype, const void *data, int64_t n, int threads, int relu, double *row) {
    double v[9];
    if (relu ? hs_reduce_relu(dtype, data, n, threads, NAN, v) : hs_reduce(dtype, data, n, threads, NAN, v))
        return -1;
    if (!finite_sums(v)) return 1;
    if (!relu) {
        merge_into(row, n, v);
        return 0;
    }
    double r[6];
    relu_part(n, v, r);
    if (!finite_sums(r)) return 1;
    merge_into(row, n, r);
    return 0;
}

/* A gradient row (GRAD_FIELDS: numel, sum of squares, NaNs, Infs) of g into out[4]. */
int hs_grad_row(int dtype, const void *data, int64_t n, int threads, double *out) {
    double v[6];
    if (hs_reduce(dtype, data, n, threads, 0.0, v)) return -1;
    if (!isfinite(v[1])) return 1;
    double sum, sumsq;
    unshift(n, v, &sum, &sumsq);
    out[0] = (double)n;
    out[1] = sumsq;
    out[2] = 0.0;
    out[3] = 0.0;
    return 0;
}

/* hs_grad_row's row of g added into row[4] (sizes, sums of squares and counts add). */
int hs_grad_row_add(int dtype, const void *data, int64_t n, int threads, double *row) {
    double out[4];
    int failed = hs_grad_row(dtype, data, n, threads, out);
    if (failed) return failed;
    for (int k = 0; k < 4; k++) row[k] += out[k];
    return 0;
}

/* Merge src[9] into dst[9] (rowop's _merge_values: sums add, min and max combine) and empty src. */
void hs_move_row(double *src, double *dst) {
    for (int k = 0; k < 9; k++) {
        if (k == 4) dst[k] = src[k] < dst[k] ? src[k] : dst[k];
        else if (k == 5) dst[k] = src[k] > dst[k] ? src[k] : dst[k];
        else dst[k] = dst[k] + src[k];
        src[k] = 0.0;
    }
    src[4] = INFINITY;
    src[5] = -INFINITY;
}

/* hs_reduce_affine's y merged into row[9]; with relu, relu(y)'s row replaces spare[9]. */
int hs_affine_row(const float *x, int64_t n, int64_t stride, int64_t channels, const float *mean,
                  const float *scale, const float *bias, int relu, int threads, double *row,
                  double *spare) {
    double v[9], r[6];
    if (hs_reduce_affine(x, n, stride, channels, mean, scale, bias, relu, threads, v)) return -1;
    if (!finite_sums(v)) return 1;
    if (relu) {
        relu_part(n, v, r);
        if (!finite_sums(r)) return 1;
    }
    merge_into(row, n, v);
    if (relu) set_row(spare, n, r);
    return 0;
}
