/* nbwd_test.h - the test harness of norm_bwd: counters, check macros, the
   fixed-seed PRNG, typed strided test buffers with canary bytes, the ONE place
   where every tolerance is defined, and the float64 reference's declarations.

   Counting: every CHECK(...) and every array comparison (t_compare_*) is one
   check; the runner prints "N passed, N failed" over checks. */
#ifndef NBWD_TEST_H
#define NBWD_TEST_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "norm_bwd.h"

/* ------------------------------------------------------------ globals */
extern nbwd_isa g_test_isa; /* every test puts it into desc.isa */
extern int g_quick;         /* --quick: smaller sweeps */
extern int g_verbose;       /* --verbose: print every case */
extern long g_pass, g_fail; /* checks */
extern char g_case[512];    /* the current case, printed with each failure */
extern int g_case_fail_prints; /* mismatch lines printed in the current case */

/* The suites (each in its own file). */
void test_reference(void);
void test_convert(void);
void test_layer_norm(void);
void test_batch_norm(void);
void test_status(void);
void test_determinism(void);
void test_bounds(void); /* test_bounds.c: tails ending at a PROT_NONE page */
void test_layouts(void); /* test_layouts.c: strides never change bits; empty problems; interleaving */
void test_diagnostics(void); /* test_diagnostics.c: desc_init stamps, nbwd_last_error, NORM_BWD_VERBOSE */
void test_group_norm(void); /* test_group_norm.c: GroupNorm/InstanceNorm backward against the reference */

#if defined(__MINGW32__) && defined(__MINGW_PRINTF_FORMAT)
/* MinGW: ms_printf (no %zu) unless built with __USE_MINGW_ANSI_STDIO=1 */
#define T_PRINTF(a, b) __attribute__((format(__MINGW_PRINTF_FORMAT, a, b)))
#elif defined(__GNUC__) || defined(__clang__)
#define T_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define T_PRINTF(a, b)
#endif

/* Sets the case description (also resets the per-case print budget). */
void t_case(const char *fmt, ...) T_PRINTF(1, 2);
/* Records one check; on failure prints the case, file:line and message. */
int t_check(int ok, const char *file, int line, const char *fmt, ...) T_PRINTF(4, 5);
#define CHECK(cond, ...) t_check((cond) ? 1 : 0, __FILE__, __LINE__, __VA_ARGS__)
/* Prints the current case's "FAIL in case" header once (for suites that print
   their own mismatch details before recording the failing check). */
void t_print_case_header(void);
/* Exact status check; evaluates `got` once (it is often the call itself). */
static inline int t_check_status(nbwd_status got, nbwd_status want, const char *file, int line) {
    return t_check(got == want, file, line, "status %d (%s), expected %d (%s)", (int)got, nbwd_status_string(got),
                   (int)want, nbwd_status_string(want));
}
#define CHECK_STATUS(got, want) t_check_status((got), (want), __FILE__, __LINE__)

#define T_MAX_PRINTS 5 /* mismatches printed per case before only the maximum is reported */

/* ------------------------------------------------------------- PRNG */
/* splitmix64: tiny, fixed-seed, reproducible across platforms. */
typedef struct t_rng {
    uint64_t s;
    double spare; /* Box-Muller makes normals in pairs */
    int have_spare;
} t_rng;
void t_rng_seed(t_rng *r, uint64_t seed);
uint64_t t_rng_u64(t_rng *r);
double t_rng_uniform(t_rng *r, double lo, double hi); /* [lo, hi) */
double t_rng_normal(t_rng *r);                        /* N(0, 1), Box-Muller */
int64_t t_rng_int(t_rng *r, int64_t lo, int64_t hi);  /* [lo, hi] */

/* ---------------------------------------------- independent conversions */
/* Written from the format definitions, not from the library. */
double t_bf16_to_double(uint16_t h);
double t_f16_to_double(uint16_t h);
uint16_t t_double_to_bf16(double v); /* round to nearest even (directly from double) */
uint16_t t_double_to_f16(double v);  /* round to nearest even (directly from double) */
size_t t_esize(nbwd_dtype dt);
const char *t_dtype_name(nbwd_dtype dt);
const char *t_form_name(nbwd_stats_form f);
/* Round v to dt and return the stored value, widened. */
double t_round_to(nbwd_dtype dt, double v);
/* Spacing of dt's representable numbers at |v| (subnormal spacing below the
   smallest normal). */
double t_ulp(nbwd_dtype dt, double v);
/* Largest finite value of dt. */
double t_max_finite(nbwd_dtype dt);

/* ------------------------------------------------------------ buffers */
/* A typed tensor with arbitrary element strides inside one allocation that
   has T_GUARD canary bytes on both sides; every byte not holding an element
   (padding, guards) is canary so that any write outside the elements shows. */
#define T_GUARD 64
#define T_CANARY 0xA5
typedef struct t_buf {
    unsigned char *alloc;
    size_t alloc_bytes;
    unsigned char *span; /* the elements with T_GUARD bytes either side (alloc may hold more) */
    size_t span_bytes;
    char *base; /* element (0, ..., 0) */
    int rank;
    int64_t dims[NBWD_MAX_RANK];
    int64_t strides[NBWD_MAX_RANK];
    nbwd_dtype dt;
    int64_t count; /* logical elements */
} t_buf;

/* strides NULL: dense row-major. Returns 0 on allocation failure. */
int t_buf_alloc(t_buf *b, int rank, const int64_t *dims, const int64_t *strides, nbwd_dtype dt);
void t_buf_free(t_buf *b);
/* The same bytes in the elements, padding and guards (same shape and strides). */
int t_buf_same_bytes(const t_buf *a, const t_buf *b);
/* Logical (row-major) index -> element offset. */
int64_t t_buf_offset(const t_buf *b, int64_t linear);
double t_buf_get(const t_buf *b, int64_t linear);
/* Rounds v to the buffer's dtype, stores it and returns the stored value. */
double t_buf_set(t_buf *b, int64_t linear, double v);
/* All elements in logical (row-major) order, widened / rounded and stored. */
void t_buf_to_dense(const t_buf *b, double *out);
void t_buf_from_dense(t_buf *b, const double *in);
/* Fills every element with (rounded) random values of mean mu and deviation
   sigma, about normal (a sum of four uniforms: no tails past 3.5 sigma). */
void t_buf_fill_normal(t_buf *b, t_rng *r, double mu, double sigma);
/* 1 if every byte that is not an element is still canary. */
int t_buf_canary_ok(const t_buf *b);
/* Row-major strides of dims where dims [dense_from, rank) stay a dense block
   and every outer stride is `pad` elements larger than the extent inside it
   (dense_from >= rank: the innermost stride is 1 + pad as well). */
void t_padded_strides(int rank, const int64_t *dims, int dense_from, int64_t pad, int64_t *out);

/* ============================================================================
   TOLERANCES - the one place. u = 2^-24 is the unit roundoff of fp32, in
   which the library does all its arithmetic (per-set scalars in fp64).
   ============================================================================
   diff_src, per element i of a set of n elements (row or channel), compared
   with the float64 reference on the same rounded inputs:
       S1_i = rstd * (|g_i| + |mean(g)| + |xhat_i| * |mean(g xhat)|)
       S2_i = rstd * (mean|g| + |xhat_i| * mean|g xhat|)
       |got - ref| <= u * (T_DX_C1 * S1_i + T_DX_C2(n) * S2_i)
   T_DX_C1 = 16: the per-element chain has about 8 roundings of values bounded
     by the S1 terms (x - mean, * rstd, rstd itself, dy * gamma, the fma with
     mean(g xhat), the subtraction, the final * rstd, the division of the
     sums by n), each <= u relative, with a factor 2 margin.
   T_DX_C2(n) = 8 + 4 sqrt(n): the error of mean(g) and mean(g xhat), two fp32
     sums of n terms (SIMD lanes summed serially, then horizontally). The
     worst case is (n - 1) u sum|t|; for the tests' independent random data
     the roundings add like a random walk: the error of such a mean is about
     u mean|t| for zero-mean terms and grows to about sqrt(n)/3 u mean|t|
     when the partial sums grow linearly (biased terms). 4 sqrt(n) leaves a
     wide margin and still catches any 16-bit accumulation (2^-8 relative).
   Measured: the largest |error| / bound over the whole suite is about 0.15
   (f32 outputs) on every path: scalar, sse, avx2, avx512 and avx512_bf16
   (natively on a Zen 4), the emulated avx512/avx512_bf16/neon, and neon,
   neon_bf16 and sse under qemu-aarch64 (--quick there: 0.14).
   diff_gamma / diff_beta, per column j over R rows (or a BatchNorm channel's
   N * spatial elements):
       |got - ref| <= u * T_PG_C(R) * sum_rows |dy * xhat|   (resp. |dy|)
                      + 2 u |previous value|                 (accumulate mode)
   T_PG_C(R) = 16 + 2 log2(R + 1) + 4 sqrt(R): the products and xhat carry
     ~4 roundings (16 with margin); the library sums blocks of rows serially
     (random-walk growth, bounded by 4 sqrt(R) as above) and combines the
     blocks pairwise (log2 of the block count <= log2 R, doubled for margin).
     The final f32 addition to a previous value in accumulate mode adds u.
   16-bit outputs (f16/bf16 diff_src, diff_gamma, diff_beta): the f32 result
   above, then rounded once to nearest even, so
       |got - ref| <= (the f32 bound) + ulp16(|ref| + the f32 bound) / 2
     i.e. at most half an ulp of that format away from the exact value when
     the f32 error is small (a truncating narrowing is caught); the f32 error
     may push the value across a rounding boundary, hence the sum. A result
     beyond the format's overflow threshold must be the infinity of the same
     sign.
   Invariants (gamma = 1, f32, consistent statistics, rstd = 1/sqrt(var)):
     |sum_i dx_i| and |sum_i dx_i xhat_i| <= u * T_INV_C * sqrt(n) * ||S1||_2.
   T_INV_C = 64: the per-element errors (bounded by the dx tolerance, whose
     C2 part is correlated across the row) add at most like n times the
     per-element mean error; with the mean and rstd rounded to fp32 the exact
     sums are themselves O(u sqrt(n) ||S1||) rather than 0.
   Reference self-test (float64 reference vs central finite differences of a
     float64 forward, step h = 1e-5 * max(1, |x|)): truncation O(h^2) ~ 1e-10
     relative, roundoff ~ 1e-16 / h ~ 1e-11: T_FD_REL = 1e-6 relative to the
     largest |gradient| of the case.
   ========================================================================== */
#define T_U (1.0 / 16777216.0)
/* NBWD_STATS_NONE: how far xhat may move with the statistics a call finds
   itself (the manual's bound: the mean within u |mean| + 26 u std, rstd
   within 13 u, u = 2^-24): u (|mean| rstd + 32 + 16 |xhat|) */
#define T_NONE_XHAT_ERR(mean, rstd, xh) (T_U * (fabs(mean) * (rstd) + 32.0 + 16.0 * fabs(xh)))
#define T_DX_C1 16.0
#define T_DX_C2(n) (8.0 + 4.0 * sqrt((double)(n)))
#define T_PG_C(rows) (16.0 + 2.0 * log2((double)(rows) + 1.0) + 4.0 * sqrt((double)(rows)))
#define T_INV_C 64.0
#define T_FD_REL 1e-6

double t_tol_dx(double s1, double s2, int64_t n);              /* f32 bound */
double t_tol_param(double abs_sum, int64_t rows, double prev); /* f32 bound */
/* Does got (stored in dt) match ref within the f32 bound tol32 plus one ulp
   of dt for 16-bit formats? */
int t_within(nbwd_dtype dt, double got, double ref, double tol32);

/* Compares count values of an output tensor with the reference: got from
   the buffer (logical order), ref[i] and tol32[i] (tol32 NULL: exact).
   Counts one check; prints at most T_MAX_PRINTS mismatches per case and the
   largest |error| / tolerance. Returns 1 when all match. */
int t_compare_buf(const char *what, const t_buf *got, const double *ref, const double *tol32, const char *file,
                  int line);
/* The same for a dense array of dtype dt (diff_gamma, diff_beta). */
int t_compare_dense(const char *what, nbwd_dtype dt, const void *got, int64_t count, const double *ref,
                    const double *tol32, const char *file, int line);
#define T_COMPARE_BUF(what, got, ref, tol) t_compare_buf(what, got, ref, tol, __FILE__, __LINE__)
#define T_COMPARE_DENSE(what, dt, got, n, ref, tol) t_compare_dense(what, dt, got, n, ref, tol, __FILE__, __LINE__)

double t_now(void); /* seconds, monotonic */

/* The library's NORM_BWD_MALLOC / NORM_BWD_FREE (see impl.c): counters of
   its allocations and frees, and a switch that makes allocations fail. */
void *t_hook_malloc(size_t size);
void t_hook_free(void *ptr);
long t_hook_allocs(void);
long t_hook_frees(void);
extern int g_malloc_fail;
void *t_xmalloc(size_t n); /* exits on failure */

/* A byte snapshot of a buffer, to prove an input was not written. */
typedef struct t_snap { unsigned char *bytes; size_t n; } t_snap;
t_snap t_snap_take(const t_buf *b);
int t_snap_same(const t_snap *s, const t_buf *b);
void t_snap_free(t_snap *s);

/* The dtype combinations of the manual's DATA TYPES table (data, stats, params). */
typedef struct t_combo { nbwd_dtype dt, sdt, pdt; } t_combo;
#define T_NCOMBOS 9
extern const t_combo t_combos[T_NCOMBOS];

/* ====================================================== float64 reference */
/* An input tensor as the library sees it: typed memory, element strides
   (NULL: dense row-major over the given dims). p NULL: absent (gamma: 1). */
typedef struct ref_tensor {
    const void *p;
    nbwd_dtype dt;
    const int64_t *strides;
} ref_tensor;

/* Reference-only pseudo dtype: float64 tensors (the finite-difference
   self-test of the reference works in float64 end to end). */
#define T_F64 ((nbwd_dtype)64)

/* Outputs in dense logical order; any pointer may be NULL (not wanted).
   dx_tol, dg_tol, db_tol receive the f32 tolerances of nbwd_test.h computed
   from the S1/S2/abs-sum scales (dg/db tolerances without the accumulate
   term). */
typedef struct ref_out {
    double *dx, *dx_tol;
    double *dg, *dg_tol;
    double *db, *db_tol;
} ref_out;

/* LayerNorm backward over dims [axis, rank) (axis already in [0, rank)).
   stats: mean and spread (variance, rstd or std per form) over dims [0, axis)
   with their own strides; xhat form: x holds xhat and mean is ignored. */
void ref_layer_norm_bwd(int rank, const int64_t *dims, int axis, nbwd_stats_form form, double eps, ref_tensor x,
                        ref_tensor dy, ref_tensor mean, ref_tensor spread, ref_tensor gamma, ref_out out);
/* LayerNorm statistics of x (float64): mean and biased variance per row. */
void ref_layer_norm_stats(int rank, const int64_t *dims, int axis, ref_tensor x, double *mean, double *var);
/* LayerNorm forward in float64 from x alone (mean/var recomputed):
   y = (x - mean) / sqrt(var + eps) * gamma + beta; gamma/beta NULL: 1/0.
   x, y dense double. */
void ref_layer_norm_fwd(int rank, const int64_t *dims, int axis, double eps, const double *x, const double *gamma,
                        const double *beta, double *y);

/* RMSNorm backward: as LayerNorm's with mean 0 and without the mean(g)
   term; spread: mean square (MEAN_SQUARE form), rstd or std. */
void ref_rms_norm_bwd(int rank, const int64_t *dims, int axis, nbwd_stats_form form, double eps, ref_tensor x,
                      ref_tensor dy, ref_tensor spread, ref_tensor gamma, ref_out out);
/* mean(x^2) per row, float64 */
void ref_rms_norm_stats(int rank, const int64_t *dims, int axis, ref_tensor x, double *mean_square);
/* LayerNorm (rms 0) or RMSNorm backward from the forward output y and rstd:
   xhat = (y - beta) / gamma (gamma: the effective scale, NULL p: 1; beta NULL
   p: 0), 0 where |gamma| < FLT_MIN */
void ref_norm_dst_bwd(int rms, int rank, const int64_t *dims, int axis, ref_tensor y, ref_tensor dy,
                      ref_tensor rstd, ref_tensor gamma, ref_tensor beta, ref_out out);
/* y = x / sqrt(mean(x^2) + eps) * gamma (gamma NULL: 1); dense double */
void ref_rms_norm_fwd(int rank, const int64_t *dims, int axis, double eps, const double *x, const double *gamma,
                      double *y);

/* BatchNorm training backward; dims NXC [N, X..., C] or NCX [N, C, X...];
   mean/spread/gamma: [C] dense. gamma.p NULL: 1. */
void ref_batch_norm_bwd(int rank, const int64_t *dims, nbwd_layout layout, nbwd_stats_form form, double eps,
                        ref_tensor x, ref_tensor dy, ref_tensor mean, ref_tensor spread, ref_tensor gamma,
                        ref_out out);
/* The same with frozen statistics (NBWD_USE_GLOBAL_STATS): dx = rstd *
   gamma * dy; dg, db as in training. */
void ref_batch_norm_bwd_global(int rank, const int64_t *dims, nbwd_layout layout, nbwd_stats_form form, double eps,
                               ref_tensor x, ref_tensor dy, ref_tensor mean, ref_tensor spread, ref_tensor gamma,
                               ref_out out);
void ref_batch_norm_stats(int rank, const int64_t *dims, nbwd_layout layout, ref_tensor x, double *mean,
                          double *var);
void ref_batch_norm_fwd(int rank, const int64_t *dims, nbwd_layout layout, double eps, const double *x,
                        const double *gamma, const double *beta, double *y);

/* GroupNorm (InstanceNorm: groups = C) backward; dims NXC [N, X..., C] or
   NCX [N, C, X...]; a set is one sample's group of C/groups consecutive
   channels over every spatial position. mean and spread (variance, rstd or
   std per form): [N, groups], strides of two entries (NULL: dense); gamma,
   beta: [C], one stride entry (p NULL: 1 and 0). XHAT_STD: x holds xhat
   (mean ignored); DST_RSTD: x holds the forward output y = xhat * gamma +
   beta, xhat = (y - beta) / gamma, 0 where |gamma| < FLT_MIN (as
   ref_norm_dst_bwd). dg/db: [C]; their tolerances count the N * spatial
   elements of a channel as rows. */
void ref_group_norm_bwd(int rank, const int64_t *dims, nbwd_layout layout, int64_t groups, nbwd_stats_form form,
                        double eps, ref_tensor x, ref_tensor dy, ref_tensor mean, ref_tensor spread, ref_tensor gamma,
                        ref_tensor beta, ref_out out);
/* Mean and biased variance of each set, float64, dense [N * groups]. */
void ref_group_norm_stats(int rank, const int64_t *dims, nbwd_layout layout, int64_t groups, ref_tensor x,
                          double *mean, double *var);
/* y = (x - mean) / sqrt(var + eps) * gamma[c] + beta[c] per set, the
   statistics recomputed from x; gamma/beta NULL: 1/0; dense double. */
void ref_group_norm_fwd(int rank, const int64_t *dims, nbwd_layout layout, int64_t groups, double eps,
                        const double *x, const double *gamma, const double *beta, double *y);

/* Reads element `linear` (row-major logical index) of a strided tensor. */
double ref_get(ref_tensor t, int rank, const int64_t *dims, int64_t linear);
int64_t ref_offset(int rank, const int64_t *dims, const int64_t *strides, int64_t linear);
double ref_load(const void *p, nbwd_dtype dt, int64_t offset);

#endif /* NBWD_TEST_H */
