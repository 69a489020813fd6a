/* test_convert.c - the conversion helpers.
   - all 65536 bf16 patterns -> f32 (bf16 is the upper half of a binary32)
   - all 65536 f16 patterns -> f32, against F16C _cvtsh_ss (when the CPU has
     it) and an independent arithmetic decoding
   - f32 -> bf16 / f16 on ties, rounding boundaries, the overflow boundary
     (65504, 65520), subnormals, zeros, infinities, NaNs (a NaN with the quiet
     bit set and the sign kept), and >= 10 million random floats, against an
     independent float64 round-to-nearest-even (both formats), F16C
     _cvtss_sh and the compiler's _Float16 conversion where available
   - the bulk _n helpers equal the scalar ones. */
#include "nbwd_test.h"

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#define T_HAVE_F16C_CODE 1
#include <cpuid.h>
#include <immintrin.h>

__attribute__((target("f16c"))) static float hw_f16_to_f32(uint16_t h) { return _cvtsh_ss(h); }
__attribute__((target("f16c"))) static uint16_t hw_f32_to_f16(float f) {
    return (uint16_t)_cvtss_sh(f, 0); /* imm 0: round to nearest even */
}
static int cpu_has_f16c(void) {
    unsigned a, b, c, d, lo, hi;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return 0;
    if (!(c & (1u << 29)) || !(c & (1u << 27)) || !(c & (1u << 28))) return 0; /* F16C, OSXSAVE, AVX */
    __asm__ __volatile__("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    (void)hi;
    return (lo & 6u) == 6u; /* the OS saves XMM and YMM state: VEX instructions usable */
}
#else
#define T_HAVE_F16C_CODE 0
static int cpu_has_f16c(void) { return 0; }
#endif

#if defined(__FLT16_MAX__) && !defined(__cplusplus)
#define T_HAVE_FLOAT16 1
__extension__ typedef _Float16 t_float16;
static uint16_t cc_f32_to_f16(float f) {
    t_float16 h = (t_float16)f;
    uint16_t u;
    memcpy(&u, &h, 2);
    return u;
}
#else
#define T_HAVE_FLOAT16 0
#endif

static uint32_t f2u(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static float u2f(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

static int bf16_is_quiet_nan(uint16_t h) { return (h & 0x7f80u) == 0x7f80u && (h & 0x007fu) && (h & 0x0040u); }
static int f16_is_quiet_nan(uint16_t h) { return (h & 0x7c00u) == 0x7c00u && (h & 0x03ffu) && (h & 0x0200u); }

/* Mismatch bookkeeping: one check per test group, first few printed. */
typedef struct group { const char *name; long bad, total; } group;
static void group_start(group *g, const char *name) {
    g->name = name;
    g->bad = g->total = 0;
    t_case("convert: %s", name);
}
static void group_fail(group *g, const char *fmt, uint32_t in, uint32_t got, uint32_t want) {
    if (g->bad < T_MAX_PRINTS) {
        t_print_case_header();
        printf("    %s: ", g->name);
        printf(fmt, in, got, want);
        printf("\n");
    }
    ++g->bad;
}
static void group_end(group *g) {
    CHECK(g->bad == 0, "%s: %ld of %ld conversions wrong", g->name, g->bad, g->total);
}

static void widen_all(void) {
    group g;
    int has = cpu_has_f16c();
    uint32_t i;
    group_start(&g, "bf16 -> f32, all 65536 patterns");
    for (i = 0; i < 65536u; ++i) {
        float got = nbwd_bf16_to_f32((uint16_t)i);
        uint32_t want = i << 16, gu = f2u(got);
        int ok = (want & 0x7fffffffu) > 0x7f800000u ? (isnan(got) && (gu >> 31) == (want >> 31)) : gu == want;
        ++g.total;
        if (!ok) group_fail(&g, "0x%04x -> 0x%08x, want 0x%08x", i, gu, want);
    }
    group_end(&g);

    group_start(&g, "f16 -> f32, all 65536 patterns vs arithmetic decoding");
    for (i = 0; i < 65536u; ++i) {
        float got = nbwd_f16_to_f32((uint16_t)i);
        double want = t_f16_to_double((uint16_t)i);
        uint32_t gu = f2u(got);
        int ok;
        if (isnan(want)) ok = isnan(got) && (gu >> 31) == (i >> 15) && (gu & 0x00400000u); /* quiet NaN, sign */
        else ok = gu == f2u((float)want);
        ++g.total;
        if (!ok) group_fail(&g, "0x%04x -> 0x%08x, want 0x%08x", i, gu, f2u((float)want));
    }
    group_end(&g);

    if (T_HAVE_F16C_CODE && has) {
#if T_HAVE_F16C_CODE
        group_start(&g, "f16 -> f32, all 65536 patterns vs F16C vcvtph2ps");
        for (i = 0; i < 65536u; ++i) {
            uint32_t gu = f2u(nbwd_f16_to_f32((uint16_t)i)), hw = f2u(hw_f16_to_f32((uint16_t)i));
            ++g.total;
            if (gu != hw) group_fail(&g, "0x%04x -> 0x%08x, F16C 0x%08x", i, gu, hw);
        }
        group_end(&g);
#endif
    } else {
        printf("  note: no F16C on this CPU/build: f16 conversions checked against the arithmetic reference only\n");
    }
}

/* Checks one f32 -> 16-bit conversion against every available oracle. */
static void narrow_one(group *gb, group *gh, float f, int has_f16c) {
    uint32_t in = f2u(f);
    uint16_t b = nbwd_f32_to_bf16(f), h = nbwd_f32_to_f16(f);
    ++gb->total;
    ++gh->total;
    if (isnan(f)) {
        if (!bf16_is_quiet_nan(b) || (b >> 15) != (in >> 31)) group_fail(gb, "NaN 0x%08x -> 0x%04x (want quiet NaN, sign kept; e.g. 0x%04x)", in, b, (uint32_t)((in >> 16) | 0x40u));
        if (!f16_is_quiet_nan(h) || (h >> 15) != (in >> 31)) group_fail(gh, "NaN 0x%08x -> 0x%04x (want quiet NaN, sign kept; e.g. 0x%04x)", in, h, (uint32_t)(((in >> 16) & 0x8000u) | 0x7e00u));
        return;
    }
    {
        uint16_t rb = t_double_to_bf16((double)f), rh = t_double_to_f16((double)f);
        if (b != rb) group_fail(gb, "0x%08x -> 0x%04x, want 0x%04x", in, b, rb);
        if (h != rh) group_fail(gh, "0x%08x -> 0x%04x, want 0x%04x", in, h, rh);
#if T_HAVE_F16C_CODE
        if (has_f16c) {
            uint16_t hw = hw_f32_to_f16(f);
            if (h != hw) group_fail(gh, "0x%08x -> 0x%04x, F16C vcvtps2ph 0x%04x", in, h, hw);
            if (rh != hw) group_fail(gh, "test reference disagrees with F16C: 0x%08x -> ref 0x%04x, F16C 0x%04x", in, rh, hw);
        }
#else
        (void)has_f16c;
#endif
#if T_HAVE_FLOAT16
        {
            uint16_t cc = cc_f32_to_f16(f);
            if (h != cc) group_fail(gh, "0x%08x -> 0x%04x, (_Float16) 0x%04x", in, h, cc);
        }
#endif
    }
}

static void narrow_special(void) {
    group gb, gh;
    int has = cpu_has_f16c(), i;
    static const uint32_t bits[] = {
        0x00000000u, 0x80000000u, 0x3f800000u, 0xbf800000u, 0x7f800000u, 0xff800000u, /* zeros, 1, inf */
        0x7f800001u, 0xff800001u, 0x7fc00000u, 0xffc00000u, 0x7fffffffu, 0xffffffffu, /* NaNs: signalling, quiet */
        0x7f810000u, 0x7fa00000u, 0xff80ffffu, 0x7f800100u, 0x7f802000u,             /* NaNs whose top bits are 0 */
        0x3f808000u, 0x3f818000u, 0x3f808001u, 0x3f807fffu, 0xbf808000u,             /* bf16 ties / boundaries */
        0x7f7f8000u, 0x7f7f7fffu, 0x7f7fffffu, 0xff7fffffu, 0x7f7f0000u,             /* bf16 overflow boundary */
        0x00000001u, 0x80000001u, 0x00008000u, 0x00018000u, 0x00007fffu, 0x007fffffu, /* f32 subnormals */
        0x00800000u, 0x007f8000u, 0x00ff8000u,
        0x477fe000u, 0x477fe001u, 0x477fefffu, 0x477ff000u, 0x477ff001u, 0x47800000u, /* 65504, 65520 ... */
        0xc77fefffu, 0xc77ff000u, 0x477fffffu,
        0x38800000u, 0x387fc000u, 0x387fe000u, 0x387ff000u, 0x33800000u, 0x33000000u, /* 2^-14, 2^-24, 2^-25 */
        0x33000001u, 0x33400000u, 0x33a00000u, 0x32ffffffu, 0x32800000u, 0xb3000000u, /* ties around 2^-24 */
        0x3f801000u, 0x3f803000u, 0x3f801001u, 0x3f800fffu, 0x3f805000u, 0x3f807000u, /* f16 ties near 1 */
        0x3a800000u, 0x3a801000u, 0x38801000u, 0x38802000u, 0x38803000u,
    };
    /* hand-checked results for a few boundaries (also validate the oracles) */
    static const struct { uint32_t in; uint16_t bf16, f16; } known[] = {
        {0x00000000u, 0x0000, 0x0000}, {0x80000000u, 0x8000, 0x8000}, {0x3f800000u, 0x3f80, 0x3c00},
        {0x7f800000u, 0x7f80, 0x7c00}, {0xff800000u, 0xff80, 0xfc00}, {0x3f808000u, 0x3f80, 0x3c04},
        {0x3f818000u, 0x3f82, 0x3c0c}, {0x3f808001u, 0x3f81, 0x3c04}, {0x7f7f8000u, 0x7f80, 0x7c00},
        {0x7f7f7fffu, 0x7f7f, 0x7c00}, {0x00008000u, 0x0000, 0x0000}, {0x00018000u, 0x0002, 0x0000},
        {0x477fe000u, 0x4780, 0x7bff}, /* 65504 */
        {0x477fefffu, 0x4780, 0x7bff}, /* just below 65520 */
        {0x477ff000u, 0x4780, 0x7c00}, /* 65520 rounds to infinity */
        {0x33000000u, 0x3300, 0x0000}, /* 2^-25: tie, to even 0 */
        {0x33000001u, 0x3300, 0x0001}, /* just above 2^-25 */
        {0x33c00000u, 0x33c0, 0x0002}, /* 3 * 2^-25 = 1.5 quanta: tie, to even 2 */
        {0x33800000u, 0x3380, 0x0001}, /* 2^-24 */
        {0x387fc000u, 0x3880, 0x03ff}, /* 1023 * 2^-24: largest subnormal */
        {0x387fe000u, 0x3880, 0x0400}, /* 1023.5 * 2^-24: tie, to even 2^-14 */
        {0x38800000u, 0x3880, 0x0400}, /* 2^-14 */
        {0x3f801000u, 0x3f80, 0x3c00}, /* 1 + 2^-11: tie, to even */
        {0x3f803000u, 0x3f80, 0x3c02}, /* 1 + 3 * 2^-11: tie, to even */
        {0x3f801001u, 0x3f80, 0x3c01},
    };
    group_start(&gb, "f32 -> bf16 special values");
    group_start(&gh, "f32 -> f16 special values");
    for (i = 0; i < (int)(sizeof bits / sizeof bits[0]); ++i) {
        narrow_one(&gb, &gh, u2f(bits[i]), has);
        narrow_one(&gb, &gh, -u2f(bits[i]), has);
    }
    for (i = 0; i < (int)(sizeof known / sizeof known[0]); ++i) {
        float f = u2f(known[i].in);
        uint16_t b = nbwd_f32_to_bf16(f), h = nbwd_f32_to_f16(f);
        gb.total += 2;
        gh.total += 2;
        if (b != known[i].bf16) group_fail(&gb, "0x%08x -> 0x%04x, want 0x%04x (hand-checked)", known[i].in, b, known[i].bf16);
        if (h != known[i].f16) group_fail(&gh, "0x%08x -> 0x%04x, want 0x%04x (hand-checked)", known[i].in, h, known[i].f16);
        if (t_double_to_bf16((double)f) != known[i].bf16)
            group_fail(&gb, "TEST REFERENCE wrong: 0x%08x -> 0x%04x, want 0x%04x", known[i].in, t_double_to_bf16((double)f), known[i].bf16);
        if (t_double_to_f16((double)f) != known[i].f16)
            group_fail(&gh, "TEST REFERENCE wrong: 0x%08x -> 0x%04x, want 0x%04x", known[i].in, t_double_to_f16((double)f), known[i].f16);
    }
    /* every f16 value and every midpoint between neighbours (ties), both signs */
    for (i = 0; i < 0x7c00; ++i) {
        double v = t_f16_to_double((uint16_t)i), next = t_f16_to_double((uint16_t)(i + 1));
        double mid = 0.5 * (v + next); /* exactly representable in f32 */
        narrow_one(&gb, &gh, (float)v, has);
        narrow_one(&gb, &gh, (float)mid, has);
        narrow_one(&gb, &gh, nextafterf((float)mid, 0.0f), has);
        narrow_one(&gb, &gh, nextafterf((float)mid, INFINITY), has);
        narrow_one(&gb, &gh, -(float)mid, has);
    }
    /* every bf16 value's midpoint to the next (ties), both signs */
    for (i = 0; i < 0x7f80; ++i) {
        uint32_t lo = (uint32_t)i << 16, mid = lo + 0x8000u;
        narrow_one(&gb, &gh, u2f(mid), has);
        narrow_one(&gb, &gh, u2f(mid - 1), has);
        narrow_one(&gb, &gh, u2f(mid + 1), has);
        narrow_one(&gb, &gh, u2f(mid | 0x80000000u), has);
    }
    group_end(&gb);
    group_end(&gh);
}

static void narrow_random(void) {
    group gb, gh;
    t_rng rng;
    int has = cpu_has_f16c();
    /* 10M per group in the default run for the auto path; the conversions do
       not depend on the ISA path, so re-runs per path and --quick use 1M */
    long count = (g_quick || g_test_isa != NBWD_ISA_AUTO) ? 1000000L : 10000000L, i;
    t_rng_seed(&rng, 31337);
    group_start(&gb, "f32 -> bf16, random bit patterns");
    group_start(&gh, "f32 -> f16, random bit patterns");
    for (i = 0; i < count; ++i) narrow_one(&gb, &gh, u2f((uint32_t)t_rng_u64(&rng)), has);
    group_end(&gb);
    group_end(&gh);
    group_start(&gb, "f32 -> bf16, random floats in the f16 range");
    group_start(&gh, "f32 -> f16, random floats in the f16 range (2^-26 .. 2^17)");
    for (i = 0; i < count; ++i) {
        uint32_t u = (uint32_t)t_rng_u64(&rng);
        uint32_t e = 101u + (uint32_t)((u >> 8) % 43u); /* biased exponents 101..143 */
        narrow_one(&gb, &gh, u2f((u & 0x807fffffu) | (e << 23)), has);
    }
    group_end(&gb);
    group_end(&gh);
}

/* Bulk result vs scalar result. Bitwise, except that SIMDe's emulation of
   the f16 conversion instructions (F16C, FCVTL/FCVTN) does not keep NaN
   payloads: in an emulated build an f16 NaN only has to stay a quiet NaN
   with its sign. Native F16C and FCVTN keep them (checked natively and under
   qemu). */
#if defined(NORM_BWD_SIMD_EMULATE)
#define T_EMULATED_F16_NAN 1
#else
#define T_EMULATED_F16_NAN 0
#endif
static int same_h(uint16_t got, uint16_t want, int is_bf16) {
    if (got == want) return 1;
    return T_EMULATED_F16_NAN && !is_bf16 && f16_is_quiet_nan(got) && (want & 0x7c00u) == 0x7c00u &&
           (want & 0x3ffu) && (got >> 15) == (want >> 15);
}
/* 32-bit x86 returns a float in an x87 register, which quiets a signalling
   NaN: there the single-value widening helpers return the bulk helpers'
   signalling NaNs with the quiet bit set (the manual says so). */
#if defined(__i386__) || defined(_M_IX86)
#define T_RETURN_QUIETS_SNAN 1
#else
#define T_RETURN_QUIETS_SNAN 0
#endif
static int same_f(float got, float want, int from_bf16) {
    if (f2u(got) == f2u(want)) return 1;
    if (T_RETURN_QUIETS_SNAN && isnan(got) && (f2u(got) | 0x400000u) == f2u(want)) return 1;
    return T_EMULATED_F16_NAN && !from_bf16 && isnan(got) && isnan(want) && (f2u(got) >> 31) == (f2u(want) >> 31);
}

/* f32 -> 16-bit through the bulk helper, element by element against the
   scalar conversion (which the groups above check against the oracles). */
static long bulk_narrow_mismatches(const float *f, int64_t n, int to_bf16, uint32_t *first_in) {
    uint16_t *h = (uint16_t *)t_xmalloc((size_t)(n + 1) * 2);
    long bad = 0;
    int64_t i;
    h[n] = 0xabcd;
    if (to_bf16) nbwd_f32_to_bf16_n(f, h, n);
    else nbwd_f32_to_f16_n(f, h, n);
    for (i = 0; i < n; ++i) {
        uint16_t want = to_bf16 ? nbwd_f32_to_bf16(f[i]) : nbwd_f32_to_f16(f[i]);
        if (!same_h(h[i], want, to_bf16)) {
            if (!bad) *first_in = f2u(f[i]);
            ++bad;
        }
    }
    if (h[n] != 0xabcd) ++bad; /* no write past the end */
    free(h);
    return bad;
}

/* The _n helpers run on the dispatched path (here: the path under test), so
   they test each path's vector conversions too: every f32 class (denormals,
   which VCVTNEPS2BF16 alone would flush; NaNs; ties) in every lane. */
static void bulk_helpers(void) {
    t_rng rng;
    int64_t lens[] = {0, 1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 1000, 4099};
    int li, to_bf16;
    long bad = 0;
    nbwd_isa before = nbwd_active_isa();
    if (g_test_isa != NBWD_ISA_AUTO) CHECK_STATUS(nbwd_force_isa(g_test_isa), NBWD_OK);
    t_rng_seed(&rng, 4242);
    t_case("convert: bulk _n helpers on path %s equal the scalar ones", nbwd_isa_name(nbwd_active_isa()));
    for (li = 0; li < (int)(sizeof lens / sizeof lens[0]); ++li) {
        int64_t n = lens[li], i, off;
        for (off = 0; off < 2; ++off) { /* aligned and unaligned starts */
            float *f = (float *)t_xmalloc((size_t)(n + 2) * 4), *fo = (float *)t_xmalloc((size_t)(n + 2) * 4);
            uint16_t *h = (uint16_t *)t_xmalloc((size_t)(n + 2) * 2), *ho = (uint16_t *)t_xmalloc((size_t)(n + 2) * 2);
            for (i = 0; i < n + 2; ++i) {
                uint32_t u = (uint32_t)t_rng_u64(&rng);
                f[i] = i % 3 ? (float)t_rng_normal(&rng) : u2f(u);
                h[i] = (uint16_t)u;
            }
            /* bf16 -> f32 */
            for (i = 0; i < n + 2; ++i) fo[i] = -1234.5f;
            nbwd_bf16_to_f32_n(h + off, fo + off, n);
            for (i = 0; i < n; ++i)
                if (!same_f(fo[off + i], nbwd_bf16_to_f32(h[off + i]), 1)) ++bad;
            if (fo[off + n] != -1234.5f) ++bad; /* no write past the end */
            /* f16 -> f32 */
            for (i = 0; i < n + 2; ++i) fo[i] = -1234.5f;
            nbwd_f16_to_f32_n(h + off, fo + off, n);
            for (i = 0; i < n; ++i)
                if (!same_f(fo[off + i], nbwd_f16_to_f32(h[off + i]), 0)) ++bad;
            if (fo[off + n] != -1234.5f) ++bad;
            /* f32 -> bf16 */
            for (i = 0; i < n + 2; ++i) ho[i] = 0xabcd;
            nbwd_f32_to_bf16_n(f + off, ho + off, n);
            for (i = 0; i < n; ++i)
                if (!same_h(ho[off + i], nbwd_f32_to_bf16(f[off + i]), 1)) ++bad;
            if (ho[off + n] != 0xabcd) ++bad;
            /* f32 -> f16 */
            for (i = 0; i < n + 2; ++i) ho[i] = 0xabcd;
            nbwd_f32_to_f16_n(f + off, ho + off, n);
            for (i = 0; i < n; ++i)
                if (!same_h(ho[off + i], nbwd_f32_to_f16(f[off + i]), 0)) ++bad;
            if (ho[off + n] != 0xabcd) ++bad;
            free(f); free(fo); free(h); free(ho);
        }
    }
    CHECK(bad == 0, "bulk helpers: %ld elements differ from the scalar conversion (or were written past n)", bad);

    for (to_bf16 = 0; to_bf16 < 2; ++to_bf16) {
        const char *name = to_bf16 ? "bf16" : "f16";
        int64_t n = g_quick ? (1 << 16) : (1 << 20), i;
        float *f = (float *)t_xmalloc((size_t)n * 4);
        uint32_t first = 0;
        long b;
        /* 1. a lone special value in each lane of an otherwise normal vector,
              and vectors made only of denormals, zeros or NaNs */
        static const uint32_t special[] = {
            0x00000001u, 0x80000001u, 0x00008000u, 0x00018000u, 0x007fffffu, 0x807f8000u, 0x00400000u,
            0x00000000u, 0x80000000u, 0x00800000u, 0x7f800000u, 0xff800000u, 0x7f800001u, 0xffc00000u,
            0x7f810000u, 0x7fffffffu, 0x3f808000u, 0x3f818000u, 0x7f7fffffu, 0x7f7f8000u, 0x33000000u,
        };
        int64_t ns = (int64_t)(sizeof special / sizeof special[0]), k;
        for (i = 0; i < n; ++i) f[i] = 1.0f + (float)(i % 97) * 0.0078125f;
        for (k = 0; k < ns; ++k) {
            int64_t lane;
            for (lane = 0; lane < 16; ++lane) f[64 * k + 16 * (lane & 1) + lane] = u2f(special[k]);
        }
        for (i = 4096; i < 4096 + 64; ++i) f[i] = u2f((uint32_t)(i * 977u) & 0x807fffffu); /* denormals, zeros */
        for (i = 8192; i < 8192 + 64; ++i) f[i] = u2f(0x7f800001u + (uint32_t)i * 4099u);  /* NaNs */
        b = bulk_narrow_mismatches(f, 8192 + 64, to_bf16, &first);
        CHECK(b == 0, "bulk f32 -> %s on path %s: %ld special values differ from the scalar conversion (first 0x%08x)",
              name, nbwd_isa_name(nbwd_active_isa()), b, first);
        /* 2. random bit patterns, a quarter of them with a zero exponent */
        for (i = 0; i < n; ++i) {
            uint32_t u = (uint32_t)t_rng_u64(&rng);
            f[i] = u2f((u & 3u) == 0 ? (u & 0x807fffffu) : u);
        }
        b = bulk_narrow_mismatches(f, n, to_bf16, &first);
        CHECK(b == 0, "bulk f32 -> %s on path %s: %ld of %lld random patterns differ from the scalar conversion (first 0x%08x)",
              name, nbwd_isa_name(nbwd_active_isa()), b, (long long)n, first);
        free(f);
    }
    CHECK_STATUS(nbwd_force_isa(NBWD_ISA_AUTO), NBWD_OK);
    CHECK(nbwd_active_isa() == before, "force_isa(AUTO) did not restore the automatic path");
}

void test_convert(void) {
    widen_all();
    narrow_special();
    narrow_random();
    bulk_helpers();
}
