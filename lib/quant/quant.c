/* SPDX-License-Identifier: Apache-2.0 */
/*
 * quant.c - scalar reference kernels, CPU probe, kernel selection and the
 * exponent helpers of the block floating point scheme (see quant.h).
 *
 * The C kernels define the results: the SIMD kernels in x86/ must match them
 * bit for bit, so every rounding step here is spelled out rather than left to
 * rintf/lrintf or to the int->float conversion, whose result follows the
 * caller's floating point rounding mode. The only operation that does round
 * in the caller's mode is the multiply by mul, which is exact whenever mul is
 * a power of two and the product is a normal float (the scheme's case); the
 * SIMD kernels perform the very same IEEE multiply, so they still agree in
 * every mode, and under FTZ/DAZ too (scalar and vector SSE/AVX arithmetic
 * obey the same MXCSR bits).
 *
 * Word values for out-of-range input (all kernels):
 *   rne(x * mul) >= 2^31, +Inf         -> INT32_MAX, counted
 *   rne(x * mul) <  -2^31, -Inf, NaN   -> INT32_MIN, counted
 *   -2^31 exactly                      -> INT32_MIN, not counted
 * NaN goes to INT32_MIN because that is what the x86 conversions produce
 * for it ("integer indefinite"), so the vector kernels need no extra step.
 */
#include "quant/quant.h"

#include <math.h>
#include <string.h>

#include "proto/wire.h"

/* The x86 tables live in x86/quant_avx2.c and x86/quant_avx512.c, built
 * with their own -m flags (meson defines SR_QUANT_HAVE_* when they are).
 * They are declared here rather than in quant.h because nothing else may
 * call a variant without the CPU check that sr_quant_init* does. */
#if SR_QUANT_HAVE_AVX2
extern const sr_quant_kernels sr_quant_kernels_avx2;
#endif
#if SR_QUANT_HAVE_AVX512
extern const sr_quant_kernels sr_quant_kernels_avx512;
#endif

/* Bit patterns of |x|, in the same order as |x| for every non-NaN float
 * (and NaN above +Inf): max and "is finite" become integer operations that
 * neither the rounding mode nor DAZ can change. */
#define ABS_MASK 0x7fffffffu
#define INF_BITS 0x7f800000u

static uint32_t f2u(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static float u2f(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* ---- scalar reference kernels ------------------------------------------ */

/* With NaN or Inf present *maxabs is the largest |src[i]| bit pattern, so
 * +Inf, or a NaN (sign cleared) if there is one: a defined value that the
 * vector kernels reproduce with the same integer max. */
static size_t maxabs_c(const float *src, size_t n, float *maxabs)
{
    uint32_t m = 0;
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t a = f2u(src[i]) & ABS_MASK;
        m = a > m ? a : m;
        bad += a >= INF_BITS;
    }
    *maxabs = u2f(m);
    return bad;
}

/* sat(rne(y)) using only exact operations, branch-free in range. */
static int32_t rne_sat(float y, size_t *nsat)
{
    if (y >= 0x1p31f) { /* +Inf too */
        (*nsat)++;
        return INT32_MAX;
    }
    if (!(y >= -0x1p31f)) { /* -Inf and NaN too */
        (*nsat)++;
        return INT32_MIN;
    }
    /* Truncation ignores the rounding mode, and y - t is exact: from 2^23
     * up y is an integer (t == y), below it t and y share sign and binade
     * (or t == 0) so the difference fits in y's precision. */
    int32_t t = (int32_t)y;
    float frac = y - (float)t;
    int odd = t & 1;
    t += ((frac > 0.5f) | ((frac == 0.5f) & odd)) - ((frac < -0.5f) | ((frac == -0.5f) & odd));
    return t;
}

static size_t encode_c(uint8_t *dst, const float *src, size_t n, float mul)
{
    size_t nsat = 0;
    for (size_t i = 0; i < n; i++)
        sr_put_be32(dst + 4 * i, (uint32_t)rne_sat(src[i] * mul, &nsat));
    return nsat;
}

/* (float)v rounded to nearest even whatever the rounding mode. The double
 * is exact (31 bits < 53); its mantissa is then rounded to float's 24 bits
 * in the integer domain, half to even at bit 29 (a carry out of the
 * mantissa correctly bumps the exponent), which makes the final narrowing
 * exact. The x86 AVX2 kernel does the same in vector registers when the
 * caller's mode is not round-to-nearest. */
static float i32_to_f32_rne(int32_t v)
{
    double d = (double)v;
    uint64_t b;
    memcpy(&b, &d, sizeof b);
    b += 0x0fffffffu + ((b >> 29) & 1);
    b &= ~(uint64_t)0x1fffffffu;
    memcpy(&d, &b, sizeof d);
    return (float)d;
}

static void decode_c(float *dst, const uint8_t *src, size_t n, float mul)
{
    for (size_t i = 0; i < n; i++)
        dst[i] = i32_to_f32_rne((int32_t)sr_get_be32(src + 4 * i)) * mul;
}

/* The average in one rounding. Let q = s * 2^k / N be the exact mean
 * (s an int32, 1 <= N <= 64) and hi + lo the multiplier of
 * sr_quant_avg_mul, within 2^-73 of 2^k / N, with s * hi exact (hi has
 * 22 bits) and lo < 2^-21 (hi + lo). In round-to-nearest:
 * - x = s * hi + fl(s * lo) is within 2^-72 |q| of q, and d = fl(x), a
 *   double, within 2^-52 |q|. Where q is a double d == q, since half a
 *   double ulp is at least 2^-54 |q|.
 * - A float midpoint m (where rounding to nearest flips) other than q is
 *   about 2^-31 |q| or more away from q: m = odd * 2^j, so s * 2^k - N * m
 *   is a nonzero multiple of 2^min(k, j) and |q - m| >= 2^min(k, j) / N,
 *   which is about 2^-31 |q| or more because |s| <= 2^31, N <= 64 and
 *   j >= e - 24 for |m| near 2^e (j = -150 in the subnormal range).
 * - So no midpoint lies between q and d, and a q that is a midpoint (a
 *   tie, to be broken to even) is itself a double, d == q: narrowing d to
 *   float gives the float nearest to q, subnormal results and the overflow
 *   to Inf included.
 * In a directed rounding mode d stays within 2^-51 |q| of q, so between
 * the floats around q (the same distance argument holds for floats, j >=
 * e - 23): the result is one of them, within 1 ulp.
 * A single double multiplier 2^k / N is not enough: rounded to 53 bits it
 * is off by up to 2^-53 relative (0.72 * 2^-53 for N = 49), so s * dmul
 * can miss a tie q by a double ulp and round it the wrong way. All steps
 * stay far from double underflow and overflow (|s * lo| >= 2^-210), so
 * DAZ cannot touch them and FTZ only acts on the final narrowing; the SIMD
 * kernels do the same IEEE operations in the same order. */
static void decode_avg_c(float *dst, const uint8_t *src, size_t n, double hi, double lo)
{
    for (size_t i = 0; i < n; i++) {
        double s = (double)(int32_t)sr_get_be32(src + 4 * i);
        dst[i] = (float)(s * hi + s * lo);
    }
}

static const sr_quant_kernels kernels_c = {
    .maxabs = maxabs_c,
    .encode = encode_c,
    .decode = decode_c,
    .decode_avg = decode_avg_c,
    .name = "c",
};

/* ---- CPU probe and selection ------------------------------------------- */

unsigned sr_cpu_features(void)
{
    unsigned f = 0;
#if defined(__x86_64__) && defined(__GNUC__)
    /* __builtin_cpu_supports also checks that the OS saves the YMM/ZMM
     * state (XCR0), not only the CPUID bits. */
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2"))
        f |= SR_CPU_AVX2;
    /* The AVX-512 file is built with -mavx512vl too, so the compiler may
     * use EVEX 256-bit forms anywhere in it. */
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl"))
        f |= SR_CPU_AVX512;
#endif
    return f;
}

/* The table of one variant if it is built and the CPU runs it, else NULL. */
static const void *variant_table(unsigned variant, unsigned features)
{
    switch (variant) {
    case 0:
        return &kernels_c;
#if SR_QUANT_HAVE_AVX2
    case SR_CPU_AVX2:
        return features & SR_CPU_AVX2 ? &sr_quant_kernels_avx2 : NULL;
#endif
#if SR_QUANT_HAVE_AVX512
    case SR_CPU_AVX512:
        return features & SR_CPU_AVX512 ? &sr_quant_kernels_avx512 : NULL;
#endif
    default:
        return NULL;
    }
}

const void *sr_quant_best(sr_quant_variant_fn variant, unsigned mask)
{
    unsigned allowed = sr_cpu_features() & mask;
    /* C first, then each better variant in turn (dav1d's pattern): a bit
     * that is allowed but not built simply leaves the previous choice. */
    static const unsigned order[] = {0, SR_CPU_AVX2, SR_CPU_AVX512};
    const void *best = NULL;
    for (size_t i = 0; i < sizeof order / sizeof order[0]; i++) {
        const void *t = variant(order[i], allowed);
        if (t)
            best = t;
    }
    return best;
}

void sr_quant_init(sr_quant_kernels *k, unsigned mask)
{
    *k = *(const sr_quant_kernels *)sr_quant_best(variant_table, mask);
}

int sr_quant_init_variant(sr_quant_kernels *k, unsigned variant)
{
    const sr_quant_kernels *t = variant_table(variant, sr_cpu_features());
    if (!t)
        return -1;
    *k = *t;
    return 0;
}

/* ---- exponent helpers ---------------------------------------------------- */

int sr_quant_bits(unsigned n_workers)
{
    int lg = 0; /* ceil(log2 n); 0 for n <= 1 */
    while (lg < 32 && (1ull << lg) < n_workers)
        lg++;
    return 30 - lg;
}

int sr_quant_exponent(float maxabs)
{
    /* The biased exponent field is ilogb + 127 for normal floats; zero and
     * subnormals (field 0) lie below 2^-126, far under the clamp. Read from
     * the bits so that DAZ cannot turn a subnormal into a zero. */
    uint32_t field = (f2u(maxabs) & ABS_MASK) >> 23;
    if (field == 0)
        return SR_WIRE_EXP_MIN;
    if (field == 0xff) /* Inf, NaN: callers reject those before */
        return SR_WIRE_EXP_MAX;
    int e = (int)field - 127;
    return e < SR_WIRE_EXP_MIN ? SR_WIRE_EXP_MIN : e > SR_WIRE_EXP_MAX ? SR_WIRE_EXP_MAX : e;
}

/* For exp in [SR_WIRE_EXP_MIN, SR_WIRE_EXP_MAX] and bits in [24, 30] (1 to
 * SR_WIRE_MAX_WORKERS workers) both powers must be normal floats: then
 * ldexpf of 1 is exact, and an exact result does not depend on the
 * rounding mode. */
_Static_assert(30 - 1 - SR_WIRE_EXP_MIN <= 127 && 24 - 1 - SR_WIRE_EXP_MAX >= -126,
               "encode multiplier 2^(bits-1-exp) must stay a normal float");
_Static_assert(SR_WIRE_EXP_MIN + 1 - 30 >= -126 && SR_WIRE_EXP_MAX + 1 - 24 <= 127,
               "decode multiplier 2^(exp+1-bits) must stay a normal float");
_Static_assert(SR_WIRE_MAX_WORKERS <= 64, "bits = 30 - ceil(log2 N) must stay >= 24");

float sr_quant_encode_mul(int exp, int bits)
{
    return ldexpf(1.0f, bits - 1 - exp);
}

float sr_quant_decode_mul(int exp, int bits)
{
    return ldexpf(1.0f, exp + 1 - bits);
}

void sr_quant_avg_mul(int exp, int bits, unsigned n_workers, double *hi, double *lo)
{
    unsigned n = n_workers ? n_workers : 1, a = 0, c = 0;
    while (!(n & 1)) { /* N = 2^a * n, n odd: 2^a divides exactly */
        n >>= 1;
        a++;
    }
    while ((1u << c) < n) /* 2^(c-1) < n <= 2^c */
        c++;
    /* 1/n = 2^-(21+c) * (h + r/n), h in [2^21, 2^22): 22 bits. lo keeps 52
     * bits of r/n, truncated: an error below 2^-52 * 2^-(21+c), which is
     * 2^-73 of 1/n (>= 2^-c). Every integer is exact as a double and the
     * scaling by 2^(k-a) is exact, so no step depends on the rounding mode. */
    uint64_t num = (uint64_t)1 << (21 + c);
    uint64_t h = num / n, r = num % n;
    uint64_t l = (r << 52) / n; /* r < n < 64: no overflow, l < 2^52 */
    int k = exp + 1 - bits - (int)a - 21 - (int)c;
    *hi = ldexp((double)h, k);
    *lo = ldexp((double)l, k - 52);
}

int sr_quant_sum_may_overflow(int exp, int bits)
{
    return exp + 1 + (30 - bits) >= 128;
}
