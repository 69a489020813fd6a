/* main.c - the test runner and the harness behind nbwd_test.h.

   usage: nbwd_tests [--isa scalar|sse|avx2|avx512|avx512_bf16|neon|neon_bf16|auto] [--quick]
                     [--suite NAME]... [--verbose]
   Runs every suite (or the named ones) with every descriptor's isa set to
   the chosen path. An ISA this build or CPU cannot run is reported as
   skipped (exit 0, counted neither as passed nor failed). The last line is
   "N passed, N failed" (checks); the exit status is 1 if any check failed. */
#if !defined(_POSIX_C_SOURCE) && !defined(_WIN32)
#define _POSIX_C_SOURCE 200112L /* clock_gettime */
#endif
#include "nbwd_test.h"

#include <stdarg.h>
#include <time.h>

nbwd_isa g_test_isa = NBWD_ISA_AUTO;
int g_quick = 0;
int g_verbose = 0;
long g_pass = 0, g_fail = 0;
char g_case[512] = "";
int g_case_fail_prints = 0;
static int g_case_printed = 0; /* the current case's header was printed */
/* largest |err| / tolerance of the passing comparisons in a suite: [0] f32
   outputs, [1] 16-bit outputs (tolerance including one ulp of the format) */
static double g_worst_ratio[2] = {0.0, 0.0};
static char g_worst_case[2][512];

/* ------------------------------------------------------------ checks */
void t_case(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g_case, sizeof g_case, fmt, ap);
    va_end(ap);
    g_case_fail_prints = 0;
    g_case_printed = 0;
    if (g_verbose) printf("  case: %s\n", g_case);
}

void t_print_case_header(void) {
    if (!g_case_printed) {
        printf("  FAIL in case: %s\n", g_case);
        g_case_printed = 1;
    }
}

int t_check(int ok, const char *file, int line, const char *fmt, ...) {
    if (ok) {
        ++g_pass;
        return 1;
    }
    ++g_fail;
    t_print_case_header();
    if (g_case_fail_prints < 3 * T_MAX_PRINTS) {
        va_list ap;
        printf("    %s:%d: ", file, line);
        va_start(ap, fmt);
        vprintf(fmt, ap);
        va_end(ap);
        printf("\n");
    }
    ++g_case_fail_prints;
    fflush(stdout);
    return 0;
}

double t_now(void) {
#if defined(CLOCK_MONOTONIC)
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
#else
    return (double)clock() / CLOCKS_PER_SEC;
#endif
}

/* -------------------------------------------------------------- PRNG */
void t_rng_seed(t_rng *r, uint64_t seed) {
    r->s = seed;
    r->spare = 0.0;
    r->have_spare = 0;
}
uint64_t t_rng_u64(t_rng *r) {
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
double t_rng_uniform(t_rng *r, double lo, double hi) {
    return lo + (hi - lo) * ((double)(t_rng_u64(r) >> 11) * (1.0 / 9007199254740992.0));
}
double t_rng_normal(t_rng *r) {
    double u1, u2, rad;
    if (r->have_spare) {
        r->have_spare = 0;
        return r->spare;
    }
    u1 = t_rng_uniform(r, 0.0, 1.0);
    u2 = t_rng_uniform(r, 0.0, 1.0);
    if (u1 < 1e-300) u1 = 1e-300;
    rad = sqrt(-2.0 * log(u1));
    r->spare = rad * sin(6.283185307179586 * u2);
    r->have_spare = 1;
    return rad * cos(6.283185307179586 * u2);
}
int64_t t_rng_int(t_rng *r, int64_t lo, int64_t hi) {
    return lo + (int64_t)(t_rng_u64(r) % (uint64_t)(hi - lo + 1));
}

/* ---------------------------------------------- independent conversions */
/* 2^k for -1022 <= k <= 1023, built from the binary64 encoding (exact). */
static double t_pow2(int k) {
    uint64_t u = (uint64_t)(k + 1023) << 52;
    double d;
    memcpy(&d, &u, 8);
    return d;
}
/* floor(log2(a)) for finite a > 0 that is a normal double. */
static int t_ilog2(double a) {
    uint64_t u;
    int e;
    memcpy(&u, &a, 8);
    e = (int)((u >> 52) & 0x7ff);
    if (e == 0) { /* subnormal double: never the widening of a float, but be exact anyway */
        frexp(a, &e);
        return e - 1;
    }
    return e - 1023;
}

double t_bf16_to_double(uint16_t h) {
    /* bf16 is the upper half of an IEEE binary32 */
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return (double)f;
}

/* f16: sign, 5 exponent bits (bias 15), 10 fraction bits; exponent 0 is
   subnormal (m * 2^-24), 31 is infinity / NaN. */
static double t_f16_decode(uint16_t h) {
    int sign = (h >> 15) & 1, e = (h >> 10) & 31, m = h & 1023;
    double v;
    if (e == 31) v = m ? NAN : INFINITY;
    else if (e == 0) v = (double)m * t_pow2(-24);
    else v = (double)(1024 + m) * t_pow2(e - 25);
    return sign ? -v : v;
}
double t_f16_to_double(uint16_t h) {
    /* a table of the arithmetic decoding, built on first use (the main thread) */
    static double table[65536];
    static int built = 0;
    if (!built) {
        uint32_t i;
        for (i = 0; i < 65536u; ++i) table[i] = t_f16_decode((uint16_t)i);
        built = 1;
    }
    return table[h];
}

/* The encoding, sign left out, of finite a >= 0 rounded to nearest even in
   a binary format of p significant bits whose least normal exponent is emin
   (quantum 2^(emin - p + 1) below 2^emin). Integer work on the double's
   53-bit significand: the bits shifted out decide the rounding, and a carry
   out of the significand moves the exponent field up by itself (to the
   infinity encoding past the format's largest finite value, which the
   callers then clamp). No floating-point division or rounding call: the
   suites convert every 16-bit element they write through here. */
static uint32_t t_encode_format(double a, int p, int emin) {
    uint64_t u, sig, m;
    int e, shift;
    memcpy(&u, &a, 8);
    e = (int)((u >> 52) & 0x7ff);
    if (e == 0) return 0; /* 0 or a subnormal double: far below half of either format's least subnormal */
    e -= 1023;            /* a in [2^e, 2^(e+1)) */
    sig = (u & 0xfffffffffffffULL) | (1ULL << 52);
    shift = 53 - p + (e < emin ? emin - e : 0);
    if (shift > 53) return 0; /* a < half the least subnormal */
    /* nearest even, without a branch on random data: add just under half a
       quantum, and one more where the kept part is odd, then truncate */
    m = (sig + (1ULL << (shift - 1)) - 1 + ((sig >> shift) & 1)) >> shift;
    /* normal: ((e - emin + 1) << (p - 1)) + (m - 2^(p - 1)); subnormal: m */
    return ((uint32_t)((e < emin ? emin : e) - emin) << (p - 1)) + (uint32_t)m;
}

uint16_t t_double_to_bf16(double v) {
    uint16_t sign = signbit(v) ? 0x8000u : 0u;
    uint32_t enc;
    if (isnan(v)) return (uint16_t)(sign | 0x7fc0u);
    enc = isinf(v) ? 0x7f80u : t_encode_format(fabs(v), 8, -126);
    return (uint16_t)(sign | (enc < 0x7f80u ? enc : 0x7f80u));
}

uint16_t t_double_to_f16(double v) {
    uint16_t sign = signbit(v) ? 0x8000u : 0u;
    uint32_t enc;
    if (isnan(v)) return (uint16_t)(sign | 0x7e00u);
    enc = isinf(v) ? 0x7c00u : t_encode_format(fabs(v), 11, -14);
    return (uint16_t)(sign | (enc < 0x7c00u ? enc : 0x7c00u));
}

size_t t_esize(nbwd_dtype dt) { return dt == NBWD_F32 ? 4u : 2u; }
const char *t_dtype_name(nbwd_dtype dt) {
    return dt == NBWD_F32 ? "f32" : dt == NBWD_F16 ? "f16" : dt == NBWD_BF16 ? "bf16" : "bad";
}
const char *t_form_name(nbwd_stats_form f) {
    return f == NBWD_STATS_MEAN_VARIANCE ? "mean_var" : f == NBWD_STATS_MEAN_RSTD ? "mean_rstd"
           : f == NBWD_STATS_XHAT_STD ? "xhat_std" : f == NBWD_STATS_DST_RSTD ? "dst_rstd"
           : f == NBWD_STATS_NONE     ? "none"
                                      : "bad";
}

double t_round_to(nbwd_dtype dt, double v) {
    switch (dt) {
    case NBWD_F32: return (double)(float)v;
    case NBWD_F16: return t_f16_to_double(t_double_to_f16(v));
    case NBWD_BF16: return t_bf16_to_double(t_double_to_bf16(v));
    }
    return NAN;
}

double t_ulp(nbwd_dtype dt, double v) {
    int p = dt == NBWD_F32 ? 24 : dt == NBWD_F16 ? 11 : 8;
    int emin = dt == NBWD_F16 ? -14 : -126, e;
    double a = fabs(v);
    if (a == 0.0 || isnan(a) || isinf(a)) return t_pow2(emin - p + 1);
    e = t_ilog2(a);
    if (e < emin) e = emin;
    if (e - p + 1 < -1022) return ldexp(1.0, e - p + 1);
    return t_pow2(e - p + 1);
}

double t_max_finite(nbwd_dtype dt) {
    return dt == NBWD_F32 ? 3.4028234663852886e38 : dt == NBWD_F16 ? 65504.0 : 3.3895313892515355e38;
}

/* ------------------------------------------------------------ buffers */
#define T_LEAD_MAX (63 + 16) /* the most bytes placed before the elements to align them (t_buf_alloc) */
int t_buf_alloc(t_buf *b, int rank, const int64_t *dims, const int64_t *strides, nbwd_dtype dt) {
    static unsigned serial; /* buffers allocated so far */
    unsigned serial_hash;
    int64_t lo = 0, hi = 0, s = 1, count = 1;
    int d, empty = 0;
    size_t esz = t_esize(dt), lead;
    memset(b, 0, sizeof *b);
    b->rank = rank;
    b->dt = dt;
    for (d = rank - 1; d >= 0; --d) {
        b->dims[d] = dims[d];
        b->strides[d] = strides ? strides[d] : s;
        s *= dims[d] > 0 ? dims[d] : 1;
        count *= dims[d];
        if (dims[d] == 0) empty = 1;
    }
    b->count = count;
    if (!empty)
        for (d = 0; d < rank; ++d) {
            int64_t span = b->strides[d] * (dims[d] - 1);
            if (span < 0) lo += span; else hi += span;
        }
    /* The lowest element lies on a 64-byte line or 16 bytes into one, a
       hash of the buffer's serial number choosing, so that both the
       non-temporal dx stores (rows that start on a line) and the ordinary
       ones run: malloc alone gives 16-byte alignment, mostly not 64. */
    serial_hash = (unsigned)(serial++ * 2654435761u) >> 31;
    b->alloc_bytes = (size_t)(empty ? 0 : (hi - lo + 1)) * esz + 2 * T_GUARD + T_LEAD_MAX;
    b->alloc = (unsigned char *)malloc(b->alloc_bytes);
    if (!b->alloc) return 0;
    memset(b->alloc, T_CANARY, b->alloc_bytes);
    lead = (64 - (size_t)((uintptr_t)(b->alloc + T_GUARD) % 64)) % 64 + (serial_hash ? 16 : 0);
    b->span = b->alloc + lead;
    b->span_bytes = b->alloc_bytes - T_LEAD_MAX;
    b->base = (char *)b->span + T_GUARD + (size_t)(-lo) * esz;
    return 1;
}

int t_buf_same_bytes(const t_buf *a, const t_buf *b) {
    return a->span_bytes == b->span_bytes && memcmp(a->span, b->span, a->span_bytes) == 0;
}

void t_buf_free(t_buf *b) {
    free(b->alloc);
    b->alloc = NULL;
    b->base = NULL;
}

int64_t t_buf_offset(const t_buf *b, int64_t linear) { return ref_offset(b->rank, b->dims, b->strides, linear); }

double t_buf_get(const t_buf *b, int64_t linear) { return ref_load(b->base, b->dt, t_buf_offset(b, linear)); }

static void t_store(void *p, nbwd_dtype dt, int64_t off, double v) {
    if (dt == NBWD_F32) ((float *)p)[off] = (float)v;
    else if (dt == NBWD_F16) ((uint16_t *)p)[off] = t_double_to_f16(v);
    else ((uint16_t *)p)[off] = t_double_to_bf16(v);
}

double t_buf_set(t_buf *b, int64_t linear, double v) {
    int64_t off = t_buf_offset(b, linear);
    t_store(b->base, b->dt, off, v);
    return ref_load(b->base, b->dt, off);
}

/* Visits every element offset in row-major order. */
typedef struct t_iter {
    int rank;
    int64_t idx[NBWD_MAX_RANK], off;
} t_iter;
static void t_iter_next(const t_buf *b, t_iter *it) {
    int d;
    for (d = b->rank - 1; d >= 0; --d) {
        it->off += b->strides[d];
        if (++it->idx[d] < b->dims[d]) return;
        it->off -= b->strides[d] * b->dims[d];
        it->idx[d] = 0;
    }
}

void t_buf_to_dense(const t_buf *b, double *out) {
    t_iter it;
    int64_t e;
    memset(&it, 0, sizeof it);
    for (e = 0; e < b->count; ++e) {
        out[e] = ref_load(b->base, b->dt, it.off);
        t_iter_next(b, &it);
    }
}

void t_buf_from_dense(t_buf *b, const double *in) {
    t_iter it;
    int64_t e;
    memset(&it, 0, sizeof it);
    for (e = 0; e < b->count; ++e) {
        t_store(b->base, b->dt, it.off, in[e]);
        t_iter_next(b, &it);
    }
}

/* Tensors take a sum of four uniforms (about normal, within 3.5 deviations),
   one 64-bit draw per element: Box-Muller's log and sincos per pair took a
   quarter of the suite's time natively and half of it under qemu, where
   libm runs emulated. Single draws (t_rng_normal) stay normal. */
void t_buf_fill_normal(t_buf *b, t_rng *r, double mu, double sigma) {
    t_iter it;
    int64_t e;
    memset(&it, 0, sizeof it);
    for (e = 0; e < b->count; ++e) {
        uint64_t u = t_rng_u64(r);
        /* mean 4 * 65535 / 2, deviation sqrt(4 * (65536^2 - 1) / 12) */
        double s = (double)(u & 0xffff) + (double)((u >> 16) & 0xffff) + (double)((u >> 32) & 0xffff) +
                   (double)(u >> 48);
        t_store(b->base, b->dt, it.off, mu + sigma * (s - 131070.0) / 37837.23);
        t_iter_next(b, &it);
    }
}

int t_buf_canary_ok(const t_buf *b) {
    /* Copy, stamp canary over the element positions, then everything must be canary. */
    unsigned char *tmp = (unsigned char *)malloc(b->alloc_bytes);
    char *base;
    size_t esz = t_esize(b->dt), i;
    t_iter it;
    int64_t e;
    int ok = 1;
    if (!tmp) { fprintf(stderr, "out of memory\n"); exit(2); }
    memcpy(tmp, b->alloc, b->alloc_bytes);
    base = (char *)tmp + (b->base - (char *)b->alloc);
    memset(&it, 0, sizeof it);
    for (e = 0; e < b->count; ++e) {
        memset(base + it.off * (int64_t)esz, T_CANARY, esz);
        t_iter_next(b, &it);
    }
    for (i = 0; i < b->alloc_bytes; ++i)
        if (tmp[i] != T_CANARY) { ok = 0; break; }
    free(tmp);
    return ok;
}

void t_padded_strides(int rank, const int64_t *dims, int dense_from, int64_t pad, int64_t *out) {
    int64_t s = dense_from >= rank ? 1 + pad : 1; /* no dense block: gaps between all elements */
    int d;
    for (d = rank - 1; d >= 0; --d) {
        out[d] = s;
        s *= dims[d] > 0 ? dims[d] : 1;
        if (d <= dense_from) s += pad; /* the next (outer) stride gets padding */
    }
}

/* --------------------------------------------------------- tolerances */
double t_tol_dx(double s1, double s2, int64_t n) { return T_U * (T_DX_C1 * s1 + T_DX_C2(n) * s2); }

double t_tol_param(double abs_sum, int64_t rows, double prev) {
    return T_U * (T_PG_C(rows) * abs_sum + 2.0 * fabs(prev));
}

/* The 16-bit part of the bound: the f32 result v is within tol32 of ref, and
   rounding it to nearest moves it by at most half the spacing at |v| <=
   |ref| + tol32 (a truncating or otherwise wrong rounding exceeds it). */
static double t_round16_tol(nbwd_dtype dt, double ref, double tol32) {
    return dt == NBWD_F32 ? 0.0 : 0.5 * t_ulp(dt, fabs(ref) + tol32);
}

int t_within(nbwd_dtype dt, double got, double ref, double tol32) {
    double tol = tol32;
    if (isnan(ref)) return isnan(got);
    if (isnan(got)) return 0;
    if (dt != NBWD_F32) {
        double maxf = t_max_finite(dt), thr = maxf + 0.5 * t_ulp(dt, maxf); /* overflow threshold */
        if (isinf(got)) return (got > 0) == (ref > 0) && fabs(ref) + tol32 >= thr;
        tol += t_round16_tol(dt, ref, tol32);
    } else if (isinf(got)) {
        return isinf(ref) && (got > 0) == (ref > 0);
    }
    return fabs(got - ref) <= tol;
}

static int t_compare_impl(const char *what, nbwd_dtype dt, const t_buf *buf, const void *dense, int64_t count,
                          const double *ref, const double *tol32, const char *file, int line) {
    int64_t e, bad = 0, worst = -1;
    double worst_ratio = 0.0;
    t_iter it;
    memset(&it, 0, sizeof it);
    for (e = 0; e < count; ++e) {
        double got = buf ? ref_load(buf->base, dt, it.off) : ref_load(dense, dt, e);
        double tol = tol32 ? tol32[e] : 0.0, err = fabs(got - ref[e]);
        double full = tol + t_round16_tol(dt, ref[e], tol), ratio;
        if (buf) t_iter_next(buf, &it);
        ratio = full > 0 ? err / full : (err > 0 ? INFINITY : 0.0);
        if (isnan(got) != isnan(ref[e])) ratio = INFINITY;
        if (!t_within(dt, got, ref[e], tol)) {
            if (bad == 0) {
                ++g_fail;
                t_print_case_header();
            }
            ++bad;
            if (g_case_fail_prints < T_MAX_PRINTS) {
                printf("    %s:%d: %s[%lld]: got %.9g, expected %.9g, |err| %.3g > tol %.3g (%s)\n", file, line, what,
                       (long long)e, got, ref[e], err, full, t_dtype_name(dt));
                ++g_case_fail_prints;
            }
        }
        if (!(ratio <= worst_ratio)) { worst_ratio = ratio; worst = e; }
    }
    if (!bad && worst_ratio > g_worst_ratio[dt != NBWD_F32] && !isinf(worst_ratio)) {
        g_worst_ratio[dt != NBWD_F32] = worst_ratio;
        snprintf(g_worst_case[dt != NBWD_F32], sizeof g_worst_case[0], "%.40s: %.400s", what, g_case);
    }
    if (bad) {
        printf("    %s:%d: %s: %lld of %lld elements out of tolerance; max |err|/tol = %.3g at [%lld]\n", file, line,
               what, (long long)bad, (long long)count, worst_ratio, (long long)worst);
        fflush(stdout);
        return 0;
    }
    ++g_pass;
    return 1;
}

int t_compare_buf(const char *what, const t_buf *got, const double *ref, const double *tol32, const char *file,
                  int line) {
    return t_compare_impl(what, got->dt, got, NULL, got->count, ref, tol32, file, line);
}

int t_compare_dense(const char *what, nbwd_dtype dt, const void *got, int64_t count, const double *ref,
                    const double *tol32, const char *file, int line) {
    return t_compare_impl(what, dt, NULL, got, count, ref, tol32, file, line);
}

/* The library's allocator hooks; calls may come from several threads at once
   (test_determinism calls the library inside a parallel region). */
int g_malloc_fail = 0;
static long g_allocs = 0, g_frees = 0;
#if defined(__GNUC__) || defined(__clang__)
#define T_ATOMIC_INC(p) __atomic_fetch_add((p), 1, __ATOMIC_RELAXED)
#define T_ATOMIC_GET(p) __atomic_load_n((p), __ATOMIC_RELAXED)
#else
#define T_ATOMIC_INC(p) (++*(p))
#define T_ATOMIC_GET(p) (*(p))
#endif
void *t_hook_malloc(size_t size) {
    if (g_malloc_fail) return NULL;
    T_ATOMIC_INC(&g_allocs);
    return malloc(size);
}
void t_hook_free(void *ptr) {
    if (ptr) T_ATOMIC_INC(&g_frees);
    free(ptr);
}
long t_hook_allocs(void) { return T_ATOMIC_GET(&g_allocs); }
long t_hook_frees(void) { return T_ATOMIC_GET(&g_frees); }

void *t_xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "out of memory (%lu bytes)\n", (unsigned long)n);
        exit(2);
    }
    return p;
}

t_snap t_snap_take(const t_buf *b) {
    t_snap s;
    s.n = b->alloc ? b->alloc_bytes : 0;
    s.bytes = (unsigned char *)t_xmalloc(s.n);
    if (s.n) memcpy(s.bytes, b->alloc, s.n);
    return s;
}
int t_snap_same(const t_snap *s, const t_buf *b) { return s->n == 0 || memcmp(s->bytes, b->alloc, s->n) == 0; }
void t_snap_free(t_snap *s) {
    free(s->bytes);
    s->bytes = NULL;
}

const t_combo t_combos[T_NCOMBOS] = {
    {NBWD_F32, NBWD_F32, NBWD_F32},   {NBWD_F16, NBWD_F32, NBWD_F32},   {NBWD_F16, NBWD_F16, NBWD_F32},
    {NBWD_F16, NBWD_F32, NBWD_F16},   {NBWD_F16, NBWD_F16, NBWD_F16},   {NBWD_BF16, NBWD_F32, NBWD_F32},
    {NBWD_BF16, NBWD_BF16, NBWD_F32}, {NBWD_BF16, NBWD_F32, NBWD_BF16}, {NBWD_BF16, NBWD_BF16, NBWD_BF16},
};

/* ------------------------------------------------------------- runner */
typedef struct t_suite {
    const char *name;
    void (*fn)(void);
} t_suite;

void test_detect(void); /* test_detect.c: CPU detection checked against cpuid/xgetbv/HWCAP2 */

static const t_suite g_suites[] = {
    {"detect", test_detect},         {"reference", test_reference},   {"convert", test_convert}, {"layer_norm", test_layer_norm},
    {"batch_norm", test_batch_norm}, {"status", test_status},   {"determinism", test_determinism},
    {"bounds", test_bounds},         {"layouts", test_layouts}, {"diagnostics", test_diagnostics},
    {"group_norm", test_group_norm},
};
#define T_NSUITES ((int)(sizeof g_suites / sizeof g_suites[0]))

static int t_parse_isa(const char *s, nbwd_isa *out) {
    int i;
    for (i = 0; i < NBWD_ISA_COUNT; ++i)
        if (strcmp(s, nbwd_isa_name((nbwd_isa)i)) == 0) { *out = (nbwd_isa)i; return 1; }
    return 0;
}

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
static int t_cpu_has_avx512(void) {
    unsigned a, b, c, d;
    if (__get_cpuid_max(0, NULL) < 7) return 0;
    __cpuid_count(7, 0, a, b, c, d);
    (void)a; (void)c; (void)d;
    return (b & (1u << 16)) && (b & (1u << 17)) && (b & (1u << 30)) && (b & (1u << 31)); /* AVX-512 F, DQ, BW, VL */
}
static int t_cpu_has_avx512_bf16(void) {
    unsigned a, b, c, d;
    if (!t_cpu_has_avx512()) return 0;
    __cpuid_count(7, 0, a, b, c, d);
    if (a < 1) return 0;
    __cpuid_count(7, 1, a, b, c, d);
    (void)b; (void)c; (void)d;
    return (a & (1u << 5)) != 0;
}
#define T_X86 1
#endif

/* Why an ISA path cannot run here (best guess from the build and the CPU). */
static const char *t_skip_reason(nbwd_isa isa) {
#if defined(T_X86)
    if (isa == NBWD_ISA_NEON) return "NEON is an Arm path (an x86 build runs it only with NORM_BWD_SIMD_EMULATE)";
    if (isa == NBWD_ISA_NEON_BF16) return "an AArch64 path (Armv8.6 BF16), not emulated";
    if (isa == NBWD_ISA_AVX512 && !t_cpu_has_avx512()) return "this CPU lacks AVX-512 F/BW/VL/DQ";
    if (isa == NBWD_ISA_AVX512_BF16 && !t_cpu_has_avx512_bf16()) return "this CPU lacks AVX512_BF16 (or AVX-512 F/BW/VL/DQ)";
#elif defined(__aarch64__) || defined(_M_ARM64)
    if (isa == NBWD_ISA_AVX2 || isa == NBWD_ISA_AVX512 || isa == NBWD_ISA_AVX512_BF16)
        return "an x86 path, and this is AArch64";
    if (isa == NBWD_ISA_NEON_BF16) return "this CPU (or QEMU_CPU) lacks BF16 (HWCAP2_BF16), or the build is not Linux gcc/clang";
#elif defined(__arm__)
    if (isa == NBWD_ISA_NEON) return "this CPU lacks NEON or VFPv4 (HWCAP), or the build is not Linux hard-float Armv7+";
    if (isa != NBWD_ISA_SCALAR && isa != NBWD_ISA_SSE) return "not a 32-bit Arm path";
#endif
    if (isa == NBWD_ISA_SSE)
        return "not compiled in (NORM_BWD_NO_SIMD or NORM_BWD_NO_SSE, SIMDe missing at build time, or 32-bit x86 "
               "without SSE2)";
    return "not compiled into this build (NORM_BWD_NO_SIMD / NORM_BWD_NO_<ISA>) or the OS does not enable it";
}

static void t_usage(const char *argv0) {
    fprintf(stderr, "usage: %s [--isa scalar|sse|avx2|avx512|avx512_bf16|neon|neon_bf16|auto] [--quick] [--verbose] [--suite NAME]...\n",
            argv0);
}

int main(int argc, char **argv) {
    int i, s, k, selected[T_NSUITES], any_selected = 0;
    double t0 = t_now();
    for (s = 0; s < T_NSUITES; ++s) selected[s] = 0;
    for (i = 1; i < argc; ++i) {
        if (strcmp(argv[i], "--isa") == 0 && i + 1 < argc) {
            if (!t_parse_isa(argv[++i], &g_test_isa)) {
                fprintf(stderr, "unknown isa '%s'\n", argv[i]);
                t_usage(argv[0]);
                return 2;
            }
        } else if (strcmp(argv[i], "--quick") == 0) {
            g_quick = 1;
        } else if (strcmp(argv[i], "--verbose") == 0) {
            g_verbose = 1;
        } else if (strcmp(argv[i], "--suite") == 0 && i + 1 < argc) {
            ++i;
            for (s = 0; s < T_NSUITES; ++s)
                if (strcmp(argv[i], g_suites[s].name) == 0) { selected[s] = 1; any_selected = 1; break; }
            if (s == T_NSUITES) {
                fprintf(stderr, "unknown suite '%s'\n", argv[i]);
                t_usage(argv[0]);
                return 2;
            }
        } else {
            t_usage(argv[0]);
            return 2;
        }
    }
    if (g_test_isa != NBWD_ISA_AUTO && !nbwd_isa_supported(g_test_isa)) {
        printf("isa %s skipped: %s (nbwd_isa_supported = 0)\n", nbwd_isa_name(g_test_isa), t_skip_reason(g_test_isa));
        printf("0 passed, 0 failed\n");
        return 0;
    }
    printf("norm_bwd tests: isa %s (auto resolves to %s)%s\n", nbwd_isa_name(g_test_isa),
           nbwd_isa_name(nbwd_active_isa()), g_quick ? ", quick" : "");
    fflush(stdout);
    for (s = 0; s < T_NSUITES; ++s) {
        long p0 = g_pass, f0 = g_fail;
        double ts = t_now();
        if (any_selected && !selected[s]) continue;
        printf("suite %s ...\n", g_suites[s].name);
        fflush(stdout);
        t_case("%s", g_suites[s].name);
        g_suites[s].fn();
        printf("suite %s: %ld passed, %ld failed (%.2f s)\n", g_suites[s].name, g_pass - p0, g_fail - f0,
               t_now() - ts);
        for (k = 0; k < 2; ++k) {
            if (g_worst_ratio[k] > 0.0)
                printf("  largest |error| / tolerance, %s outputs: %.3g%s%s\n", k ? "16-bit" : "f32", g_worst_ratio[k],
                       g_verbose ? " in " : "", g_verbose ? g_worst_case[k] : "");
            g_worst_ratio[k] = 0.0;
        }
        fflush(stdout);
    }
    printf("total time %.2f s, isa %s\n", t_now() - t0, nbwd_isa_name(g_test_isa));
    printf("%ld passed, %ld failed\n", g_pass, g_fail);
    return g_fail ? 1 : 0;
}
