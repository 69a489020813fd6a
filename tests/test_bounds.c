/* test_bounds.c - tails and bounds on every path: every row length from 1 to
   4 x 16 + 3 (16 floats: the widest vector, AVX-512) for LayerNorm rows,
   BatchNorm NXC channels and NCX spatial planes, in every data type. Every
   tensor ends exactly at a PROT_NONE (Windows: PAGE_NOACCESS) page, so a kernel that reads or writes
   one element past its end faults; results are also checked against the
   float64 reference. */
#define _DEFAULT_SOURCE 1 /* mmap, MAP_ANONYMOUS under -std=c99 */
#include "nbwd_test.h"

#if defined(__unix__) || defined(__APPLE__)
#include <sys/mman.h>
#include <unistd.h>
#define T_HAVE_GUARD 1
#elif defined(_WIN32)
#include <windows.h>
#define T_HAVE_GUARD 1
#endif

#define T_WIDEST 16
#define T_MAX_LEN (4 * T_WIDEST + 3)

#if defined(T_HAVE_GUARD)
/* bytes placed so that the byte after the last one is a PROT_NONE page */
typedef struct guarded {
    void *map;
    size_t map_bytes;
    void *p;
} guarded;

#if defined(_WIN32) && !defined(__unix__)
static void *guarded_alloc(guarded *g, size_t bytes) {
    SYSTEM_INFO si;
    size_t page, data_pages;
    DWORD old;
    GetSystemInfo(&si);
    page = (size_t)si.dwPageSize;
    data_pages = (bytes + page - 1) / page + 1;
    g->map_bytes = (data_pages + 1) * page;
    g->map = VirtualAlloc(NULL, g->map_bytes, MEM_RESERVE | MEM_COMMIT, PAGE_READWRITE);
    if (!g->map || !VirtualProtect((char *)g->map + data_pages * page, page, PAGE_NOACCESS, &old)) {
        fprintf(stderr, "VirtualAlloc/VirtualProtect failed\n");
        exit(2);
    }
    g->p = (char *)g->map + data_pages * page - bytes;
    return g->p;
}
static void guarded_free(guarded *g) { VirtualFree(g->map, 0, MEM_RELEASE); }
#else
static void *guarded_alloc(guarded *g, size_t bytes) {
    size_t page = (size_t)sysconf(_SC_PAGESIZE), data_pages = (bytes + page - 1) / page + 1;
    g->map_bytes = (data_pages + 1) * page;
    g->map = mmap(NULL, g->map_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (g->map == MAP_FAILED) {
        fprintf(stderr, "mmap failed\n");
        exit(2);
    }
    if (mprotect((char *)g->map + data_pages * page, page, PROT_NONE) != 0) {
        fprintf(stderr, "mprotect failed\n");
        exit(2);
    }
    g->p = (char *)g->map + data_pages * page - bytes;
    return g->p;
}
static void guarded_free(guarded *g) { munmap(g->map, g->map_bytes); }
#endif

static void put(void *p, nbwd_dtype dt, int64_t i, double v) {
    if (dt == NBWD_F32) ((float *)p)[i] = (float)v;
    else if (dt == NBWD_F16) ((uint16_t *)p)[i] = t_double_to_f16(v);
    else ((uint16_t *)p)[i] = t_double_to_bf16(v);
}
static double get(const void *p, nbwd_dtype dt, int64_t i) { return ref_load(p, dt, i); }

/* One problem: data [count] of dtype dt, stats and params f32 [nstat]/[nparam]. */
typedef struct bounds_case {
    guarded gx, gdy, gdx, gmean, gvar, ggamma, gdg, gdb;
    void *x, *dy, *dx;
    float *mean, *var, *gamma, *dg, *db;
} bounds_case;

static void case_alloc(bounds_case *c, nbwd_dtype dt, int64_t count, int64_t nstat, int64_t nparam, t_rng *r) {
    int64_t i;
    size_t es = t_esize(dt);
    c->x = guarded_alloc(&c->gx, (size_t)count * es);
    c->dy = guarded_alloc(&c->gdy, (size_t)count * es);
    c->dx = guarded_alloc(&c->gdx, (size_t)count * es);
    c->mean = (float *)guarded_alloc(&c->gmean, (size_t)nstat * 4);
    c->var = (float *)guarded_alloc(&c->gvar, (size_t)nstat * 4);
    c->gamma = (float *)guarded_alloc(&c->ggamma, (size_t)nparam * 4);
    c->dg = (float *)guarded_alloc(&c->gdg, (size_t)nparam * 4);
    c->db = (float *)guarded_alloc(&c->gdb, (size_t)nparam * 4);
    for (i = 0; i < count; ++i) {
        put(c->x, dt, i, t_rng_normal(r) + 0.5);
        put(c->dy, dt, i, t_rng_normal(r));
    }
    for (i = 0; i < nparam; ++i) c->gamma[i] = (float)t_rng_uniform(r, 0.5, 1.5);
}
static void case_free(bounds_case *c) {
    guarded_free(&c->gx); guarded_free(&c->gdy); guarded_free(&c->gdx); guarded_free(&c->gmean);
    guarded_free(&c->gvar); guarded_free(&c->ggamma); guarded_free(&c->gdg); guarded_free(&c->gdb);
}

static void check_outputs(bounds_case *c, nbwd_dtype dt, int64_t count, int64_t nparam, const ref_out *o) {
    T_COMPARE_DENSE("diff_src", dt, c->dx, count, o->dx, o->dx_tol);
    T_COMPARE_DENSE("diff_gamma", NBWD_F32, c->dg, nparam, o->dg, o->dg_tol);
    T_COMPARE_DENSE("diff_beta", NBWD_F32, c->db, nparam, o->db, o->db_tol);
}

static void layer_norm_rows(nbwd_dtype dt, int64_t n, t_rng *r) {
    int64_t rows = 64, dims[2], count = rows * n, i; /* from n = 64 on, over the tests' 16 KiB streaming threshold */
    bounds_case c;
    double *mean = (double *)t_xmalloc(sizeof(double) * (size_t)rows);
    double *var = (double *)t_xmalloc(sizeof(double) * (size_t)rows);
    double *buf = (double *)t_xmalloc(sizeof(double) * (size_t)(2 * count + 4 * n));
    ref_out o;
    ref_tensor tx, tdy, tm, tv, tg;
    nbwd_layer_norm_bwd_desc d;
    nbwd_layer_norm_bwd_args a;
    dims[0] = rows; dims[1] = n;
    case_alloc(&c, dt, count, rows, n, r);
    tx.p = c.x; tx.dt = dt; tx.strides = NULL;
    ref_layer_norm_stats(2, dims, 1, tx, mean, var);
    for (i = 0; i < rows; ++i) { c.mean[i] = (float)mean[i]; c.var[i] = (float)var[i]; }
    nbwd_layer_norm_bwd_desc_init(&d, 2, dims);
    d.data_dtype = dt;
    d.isa = g_test_isa;
    memset(&a, 0, sizeof a);
    a.src = c.x; a.diff_dst = c.dy; a.mean = c.mean; a.variance = c.var; a.gamma = c.gamma;
    a.diff_src = c.dx; a.diff_gamma = c.dg; a.diff_beta = c.db;
    t_case("bounds: LayerNorm %lldx%lld %s isa=%s", (long long)rows, (long long)n, t_dtype_name(dt),
           nbwd_isa_name(g_test_isa));
    CHECK_STATUS(nbwd_layer_norm_bwd(&d, &a, NULL, 0), NBWD_OK);
    tdy = tx; tdy.p = c.dy;
    tm.p = c.mean; tm.dt = NBWD_F32; tm.strides = NULL;
    tv = tm; tv.p = c.var;
    tg = tm; tg.p = c.gamma;
    o.dx = buf; o.dx_tol = buf + count; o.dg = buf + 2 * count; o.dg_tol = o.dg + n; o.db = o.dg_tol + n;
    o.db_tol = o.db + n;
    ref_layer_norm_bwd(2, dims, 1, NBWD_STATS_MEAN_VARIANCE, 1e-5, tx, tdy, tm, tv, tg, o);
    check_outputs(&c, dt, count, n, &o);
    /* in place over diff_dst: dx written where dy is read, still inside the guard */
    a.diff_src = c.dy;
    CHECK_STATUS(nbwd_layer_norm_bwd(&d, &a, NULL, 0), NBWD_OK);
    T_COMPARE_DENSE("diff_src in place", dt, c.dy, count, o.dx, o.dx_tol);
    case_free(&c);
    free(mean); free(var); free(buf);
}

/* BatchNorm with the tail in the channels (NXC [3, n]) or in the spatial
   plane (NCX [2, 3, n]). */
static void batch_norm_tail(nbwd_dtype dt, int64_t n, nbwd_layout layout, t_rng *r) {
    int rank = layout == NBWD_NXC ? 2 : 3, i;
    int64_t dims[3], C, count;
    bounds_case c;
    double *mean, *var, *buf;
    ref_out o;
    ref_tensor tx, tdy, tm, tv, tg;
    nbwd_batch_norm_bwd_desc d;
    nbwd_batch_norm_bwd_args a;
    if (layout == NBWD_NXC) { dims[0] = 3; dims[1] = n; C = n; count = 3 * n; }
    else { dims[0] = 2; dims[1] = 3; dims[2] = n; C = 3; count = 6 * n; }
    mean = (double *)t_xmalloc(sizeof(double) * (size_t)C);
    var = (double *)t_xmalloc(sizeof(double) * (size_t)C);
    buf = (double *)t_xmalloc(sizeof(double) * (size_t)(2 * count + 4 * C));
    case_alloc(&c, dt, count, C, C, r);
    tx.p = c.x; tx.dt = dt; tx.strides = NULL;
    ref_batch_norm_stats(rank, dims, layout, tx, mean, var);
    for (i = 0; i < C; ++i) { c.mean[i] = (float)mean[i]; c.var[i] = (float)var[i] + 0.01f; }
    nbwd_batch_norm_bwd_desc_init(&d, rank, dims, layout, 1e-5f);
    d.data_dtype = dt;
    d.isa = g_test_isa;
    memset(&a, 0, sizeof a);
    a.src = c.x; a.diff_dst = c.dy; a.mean = c.mean; a.variance = c.var; a.gamma = c.gamma;
    a.diff_src = c.dx; a.diff_gamma = c.dg; a.diff_beta = c.db;
    t_case("bounds: BatchNorm %s tail %lld %s isa=%s", layout == NBWD_NXC ? "NXC" : "NCX", (long long)n,
           t_dtype_name(dt), nbwd_isa_name(g_test_isa));
    CHECK_STATUS(nbwd_batch_norm_bwd(&d, &a, NULL, 0), NBWD_OK);
    tdy = tx; tdy.p = c.dy;
    tm.p = c.mean; tm.dt = NBWD_F32; tm.strides = NULL;
    tv = tm; tv.p = c.var;
    tg = tm; tg.p = c.gamma;
    o.dx = buf; o.dx_tol = buf + count; o.dg = buf + 2 * count; o.dg_tol = o.dg + C; o.db = o.dg_tol + C;
    o.db_tol = o.db + C;
    ref_batch_norm_bwd(rank, dims, layout, NBWD_STATS_MEAN_VARIANCE, 1e-5, tx, tdy, tm, tv, tg, o);
    check_outputs(&c, dt, count, C, &o);
    case_free(&c);
    free(mean); free(var); free(buf);
}

void test_bounds(void) {
    static const nbwd_dtype dts[3] = {NBWD_F32, NBWD_F16, NBWD_BF16};
    t_rng r;
    int64_t n;
    int k;
    (void)get;
    t_rng_seed(&r, 0xB0B0);
    for (k = 0; k < 3; ++k)
        for (n = 1; n <= T_MAX_LEN; ++n) {
            if (g_quick && n > 20 && n % 16 > 1 && n % 16 != 15) continue;
            layer_norm_rows(dts[k], n, &r);
            batch_norm_tail(dts[k], n, NBWD_NXC, &r);
            batch_norm_tail(dts[k], n, NBWD_NCX, &r);
        }
}
#else
void test_bounds(void) { printf("bounds: skipped (no guard pages on this platform: mmap or VirtualAlloc)\n"); }
#endif
