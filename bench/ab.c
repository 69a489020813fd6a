/* bench/ab.c - A/B of two builds of norm_bwd in one process: the same
   problems, the same buffers, calls interleaved, so that machine noise hits
   both builds alike.

   Build (bench.mk: make bench-ab AB_OLD=<git revision>): each side's
   norm_bwd.h and norm_bwd_simd.h compiled into a shared object of its own
   (bench/ab_lib.c), loaded here with dlopen.

   Run:  nbwd_ab OLD.so NEW.so compare          every case of a broad sweep,
                                                 every path both can run:
                                                 outputs must be the same bytes
         nbwd_ab OLD.so NEW.so time [--isa NAME] [--threads N] [--rounds R]
                 [--calls C] [--shapes LIST] [--dtype f32|bf16|f16]
                                                 per round, C calls of each
                                                 build (the order alternates
                                                 per round), median per build;
                                                 prints the median of the
                                                 rounds' medians and new/old.
   Shapes as nbwd_bench's: ln:RxN, rms:RxN, ln-res:RxN and rms-res:RxN (a
   residual gradient added to diff_src), bn-ncx:NxCxHxW and bn-nxc:NxCxHxW
   RMSNorm cases need both builds to have it (a revision before it: they
   are left out of the sweep). */
#define _POSIX_C_SOURCE 200809L
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "norm_bwd.h"
#include "bench_util.h"

typedef struct lib {
    void *h;
    const char *path;
    nbwd_status (*ln)(const nbwd_layer_norm_bwd_desc *, const nbwd_layer_norm_bwd_args *, void *, size_t);
    void (*ln_init)(nbwd_layer_norm_bwd_desc *, int, const int64_t *);
    nbwd_status (*bn)(const nbwd_batch_norm_bwd_desc *, const nbwd_batch_norm_bwd_args *, void *, size_t);
    void (*bn_init)(nbwd_batch_norm_bwd_desc *, int, const int64_t *, nbwd_layout, float);
    nbwd_status (*rms)(const nbwd_rms_norm_bwd_desc *, const nbwd_rms_norm_bwd_args *, void *, size_t); /* or NULL */
    void (*rms_init)(nbwd_rms_norm_bwd_desc *, int, const int64_t *);
    int (*supported)(nbwd_isa);
    void (*to_bf16_n)(const float *, uint16_t *, int64_t);
    void (*to_f16_n)(const float *, uint16_t *, int64_t);
    void (*from_bf16_n)(const uint16_t *, float *, int64_t);
    void (*from_f16_n)(const uint16_t *, float *, int64_t);
} lib;

static void *sym(lib *l, const char *name) {
    void *p = dlsym(l->h, name);
    if (!p) {
        fprintf(stderr, "nbwd_ab: %s: no %s\n", l->path, name);
        exit(2);
    }
    return p;
}
static void lib_open(lib *l, const char *path) {
    l->path = path;
    l->h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!l->h) {
        fprintf(stderr, "nbwd_ab: %s\n", dlerror());
        exit(2);
    }
    *(void **)&l->ln = sym(l, "nbwd_layer_norm_bwd");
    *(void **)&l->ln_init = sym(l, "nbwd_layer_norm_bwd_desc_init");
    *(void **)&l->bn = sym(l, "nbwd_batch_norm_bwd");
    *(void **)&l->bn_init = sym(l, "nbwd_batch_norm_bwd_desc_init");
    *(void **)&l->rms = dlsym(l->h, "nbwd_rms_norm_bwd");
    *(void **)&l->rms_init = dlsym(l->h, "nbwd_rms_norm_bwd_desc_init");
    if (!l->rms_init) l->rms = NULL;
    *(void **)&l->supported = sym(l, "nbwd_isa_supported");
    *(void **)&l->to_bf16_n = sym(l, "nbwd_f32_to_bf16_n");
    *(void **)&l->to_f16_n = sym(l, "nbwd_f32_to_f16_n");
    *(void **)&l->from_bf16_n = sym(l, "nbwd_bf16_to_f32_n");
    *(void **)&l->from_f16_n = sym(l, "nbwd_f16_to_f32_n");
}

static uint64_t g_rng = 0x9e3779b97f4a7c15ull;
static double rnd(void) { /* [-1, 1) */
    uint64_t z = (g_rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return (double)(z >> 11) / 4503599627370496.0 - 1.0;
}
static size_t esz(int dt) { return dt == NBWD_F32 ? 4 : 2; }
static uint16_t bits16(float f, int dt) { /* round to nearest even, no NaN inputs here */
    uint32_t u;
    memcpy(&u, &f, 4);
    if (dt == NBWD_BF16) return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
    {   /* f16 by a float round trip through the scale, normal range only */
        float a = fabsf(f);
        int e;
        float m = frexpf(a, &e); /* a = m 2^e, m in [0.5, 1) */
        uint16_t s = (uint16_t)(f < 0 ? 0x8000 : 0);
        long q;
        if (a == 0.0f || e < -13) return s;
        q = lrintf(m * 2048.0f); /* 11 significant bits */
        if (q == 2048) { q = 1024; e++; }
        return (uint16_t)(s | ((uint16_t)(e + 14) << 10) | (uint16_t)(q - 1024));
    }
}
/* n values of dtype dt, |v| <= scale, plus a shift */
static void fill(void *p, int dt, size_t n, double scale, double shift) {
    size_t i;
    for (i = 0; i < n; ++i) {
        float v = (float)(rnd() * scale + shift);
        if (dt == NBWD_F32) ((float *)p)[i] = v;
        else ((uint16_t *)p)[i] = bits16(v, dt);
    }
}

/* ---------------------------------------------------------------- problems */
typedef struct problem {
    int bn, layout, rank, dt, sdt, pdt, form, affine, accumulate, threads, isa;
    int want_dx, want_dg, want_db, special;
    int rms; /* RMSNorm (its forms: MEAN_SQUARE, RSTD, XHAT_STD as LayerNorm's 0, 1, 2) */
    int res; /* a residual gradient: 1 its own tensor, 2 diff_src itself (accumulated in place) */
    int64_t dims[NBWD_MAX_RANK];
    int64_t axis;
} problem;

typedef struct buffers {
    void *x, *dy, *mean, *var, *gamma, *dx, *dg, *db, *res;
    size_t n_data, n_stat, n_par;
} buffers;

static void sizes(const problem *p, size_t *nd, size_t *ns, size_t *np) {
    size_t total = 1, outer = 1;
    int d;
    for (d = 0; d < p->rank; ++d) total *= (size_t)p->dims[d];
    if (p->bn) {
        *ns = *np = (size_t)(p->layout == NBWD_NXC ? p->dims[p->rank - 1] : p->dims[1]);
    } else {
        int64_t axis = p->axis < 0 ? p->axis + p->rank : p->axis;
        for (d = 0; d < axis; ++d) outer *= (size_t)p->dims[d];
        *ns = outer;
        *np = total / (outer ? outer : 1);
    }
    *nd = total;
}

static void make_buffers(const problem *p, buffers *b) {
    size_t i;
    sizes(p, &b->n_data, &b->n_stat, &b->n_par);
    b->x = xalloc(b->n_data * esz(p->dt));
    b->dy = xalloc(b->n_data * esz(p->dt));
    b->dx = xalloc(b->n_data * esz(p->dt));
    b->mean = xalloc(b->n_stat * esz(p->sdt));
    b->var = xalloc(b->n_stat * esz(p->sdt));
    b->gamma = xalloc(b->n_par * esz(p->pdt));
    b->dg = xalloc(b->n_par * esz(p->pdt));
    b->db = xalloc(b->n_par * esz(p->pdt));
    b->res = p->res == 1 ? xalloc(b->n_data * esz(p->dt)) : NULL;
    fill(b->x, p->dt, b->n_data, 2.0, 0.3);
    fill(b->dy, p->dt, b->n_data, 1.0, 0.0);
    fill(b->mean, p->sdt, b->n_stat, 0.2, 0.3);
    if (p->form == NBWD_STATS_XHAT_STD) fill(b->var, p->sdt, b->n_stat, 0.4, 1.0); /* std */
    else if (p->form == NBWD_STATS_MEAN_RSTD) fill(b->var, p->sdt, b->n_stat, 0.3, 1.2);
    else fill(b->var, p->sdt, b->n_stat, 0.5, 0.7);
    fill(b->gamma, p->pdt, b->n_par, 1.0, 0.5);
    fill(b->dg, p->pdt, b->n_par, 1.0, 0.0);
    fill(b->db, p->pdt, b->n_par, 1.0, 0.0);
    if (p->res) fill(p->res == 1 ? b->res : b->dx, p->dt, b->n_data, 0.5, 0.1);
    if (p->special && p->dt == NBWD_F32 && b->n_data > 8) { /* NaN, infinities, denormals, -0 */
        float *x = (float *)b->x, *dy = (float *)b->dy;
        uint32_t nan = 0x7fc12345u;
        float fn;
        memcpy(&fn, &nan, 4);
        x[b->n_data / 3] = fn;
        dy[b->n_data / 2] = 1e-41f;
        dy[b->n_data / 2 + 1] = -0.0f;
        dy[b->n_data - 1] = INFINITY;
        for (i = 0; i < b->n_data / 5 && i < 64; ++i) dy[b->n_data / 5 + i] = 1e-39f * (float)(i + 1);
    }
}
static void free_buffers(buffers *b) {
    free(b->x); free(b->dy); free(b->dx); free(b->mean); free(b->var);
    free(b->gamma); free(b->dg); free(b->db); free(b->res);
}

/* The descriptor fields both operations share, and the statistics' inputs
   of the problem's form. */
#define AB_DESC_COMMON(d, p)                                                                              \
    do {                                                                                                  \
        (d).data_dtype = (nbwd_dtype)(p)->dt; (d).stats_dtype = (nbwd_dtype)(p)->sdt;                     \
        (d).param_dtype = (nbwd_dtype)(p)->pdt; (d).stats_form = (nbwd_stats_form)(p)->form;               \
        (d).flags = (p)->accumulate ? NBWD_ACCUMULATE_PARAM_GRADS : 0;                                     \
        (d).num_threads = (p)->threads; (d).isa = (nbwd_isa)(p)->isa;                                     \
    } while (0)
#define AB_ARGS_STATS(a, p, b)                                                                            \
    do {                                                                                                  \
        if ((p)->form == NBWD_STATS_XHAT_STD) { (a).xhat = (b)->x; (a).std = (b)->var; }                 \
        else if ((p)->form == NBWD_STATS_MEAN_RSTD) { (a).src = (b)->x; (a).mean = (b)->mean; (a).rstd = (b)->var; } \
        else { (a).src = (b)->x; (a).mean = (b)->mean; (a).variance = (b)->var; }                        \
        (a).diff_dst = (b)->dy;                                                                           \
        (a).gamma = (p)->affine ? (b)->gamma : NULL;                                                      \
        (a).diff_src = (p)->want_dx ? (b)->dx : NULL;                                                     \
    } while (0)

/* The LayerNorm and RMSNorm descriptor fields and outputs (and residual)
   both set alike. */
#define AB_ROWS_DESC(d, p)                                                                                \
    do {                                                                                                  \
        (d).begin_norm_axis = (p)->axis;                                                                  \
        (d).use_affine = (p)->affine;                                                                     \
        AB_DESC_COMMON(d, p);                                                                             \
    } while (0)
#define AB_ROWS_OUT(a, p, b)                                                                              \
    do {                                                                                                  \
        (a).diff_gamma = (p)->affine && (p)->want_dg ? (b)->dg : NULL;                                    \
        (a).diff_beta = (p)->affine && (p)->want_db ? (b)->db : NULL;                                     \
        if ((p)->res) (a).diff_residual = (p)->res == 1 ? (b)->res : (b)->dx;                             \
    } while (0)

/* One call of lib l on buffers b. */
static nbwd_status call(const lib *l, const problem *p, buffers *b) {
    if (p->bn) {
        nbwd_batch_norm_bwd_desc d;
        nbwd_batch_norm_bwd_args a;
        memset(&a, 0, sizeof a);
        l->bn_init(&d, p->rank, p->dims, (nbwd_layout)p->layout, 1e-5f);
        AB_DESC_COMMON(d, p);
        AB_ARGS_STATS(a, p, b);
        if (p->want_dg) { a.diff_gamma = b->dg; a.diff_beta = b->db; }
        return l->bn(&d, &a, NULL, 0);
    } else if (p->rms) {
        nbwd_rms_norm_bwd_desc d;
        nbwd_rms_norm_bwd_args a;
        memset(&a, 0, sizeof a);
        l->rms_init(&d, p->rank, p->dims);
        AB_ROWS_DESC(d, p);
        if (p->form == NBWD_STATS_XHAT_STD) { a.xhat = b->x; a.std = b->var; }
        else if (p->form == NBWD_STATS_RSTD) { a.src = b->x; a.rstd = b->var; }
        else { a.src = b->x; a.mean_square = b->var; }
        a.diff_dst = b->dy;
        a.gamma = p->affine ? b->gamma : NULL;
        a.diff_src = p->want_dx ? b->dx : NULL;
        AB_ROWS_OUT(a, p, b);
        return l->rms(&d, &a, NULL, 0);
    } else {
        nbwd_layer_norm_bwd_desc d;
        nbwd_layer_norm_bwd_args a;
        memset(&a, 0, sizeof a);
        l->ln_init(&d, p->rank, p->dims);
        AB_ROWS_DESC(d, p);
        AB_ARGS_STATS(a, p, b);
        AB_ROWS_OUT(a, p, b);
        return l->ln(&d, &a, NULL, 0);
    }
}

/* --------------------------------------------------------------- compare */
static long g_cases, g_diff, g_diff_by[NBWD_ISA_COUNT][3];

static void describe(const problem *p, char *s, size_t cap) {
    int d, n = snprintf(s, cap, "%s isa=%d dt=%d/%d/%d form=%d aff=%d acc=%d out=%d%d%d res=%d thr=%d dims=",
                        p->bn ? (p->layout == NBWD_NXC ? "bn-nxc" : "bn-ncx") : p->rms ? "rms" : "ln", p->isa, p->dt,
                        p->sdt, p->pdt, p->form, p->affine, p->accumulate, p->want_dx, p->want_dg, p->want_db, p->res,
                        p->threads);
    for (d = 0; d < p->rank && n < (int)cap; ++d)
        n += snprintf(s + n, cap - (size_t)n, d ? "x%lld" : "%lld", (long long)p->dims[d]);
    if (!p->bn && n < (int)cap) snprintf(s + n, cap - (size_t)n, " axis=%lld", (long long)p->axis);
}

static void compare_one(const lib *a, const lib *b, const problem *p) {
    buffers A, B;
    size_t bytes_x, bytes_p;
    nbwd_status sa, sb;
    char what[256];
    uint64_t keep = g_rng;
    make_buffers(p, &A);
    g_rng = keep;
    make_buffers(p, &B);
    bytes_x = A.n_data * esz(p->dt);
    bytes_p = A.n_par * esz(p->pdt);
    sa = call(a, p, &A);
    sb = call(b, p, &B);
    ++g_cases;
    describe(p, what, sizeof what);
    if (sa != sb || memcmp(A.dx, B.dx, bytes_x) || memcmp(A.dg, B.dg, bytes_p) || memcmp(A.db, B.db, bytes_p))
        ++g_diff_by[p->isa][p->dt];
    if (sa != sb) {
        ++g_diff;
        printf("DIFF status %d vs %d: %s\n", (int)sa, (int)sb, what);
    } else if (memcmp(A.dx, B.dx, bytes_x) || memcmp(A.dg, B.dg, bytes_p) || memcmp(A.db, B.db, bytes_p)) {
        ++g_diff;
        if (g_diff < 40)
            printf("DIFF bits (dx %d dg %d db %d): %s\n", memcmp(A.dx, B.dx, bytes_x) != 0,
                   memcmp(A.dg, B.dg, bytes_p) != 0, memcmp(A.db, B.db, bytes_p) != 0, what);
    }
    free_buffers(&A);
    free_buffers(&B);
}

static void compare_all(const lib *a, const lib *b, int quick) {
    static const int64_t widths[] = {1, 2, 3, 5, 7, 8, 9, 15, 16, 17, 20, 24, 31, 32, 33, 40, 47, 48, 49, 63, 64,
                                     65, 71, 96, 100, 127, 128, 129, 255, 256, 300, 511, 767, 768, 1000, 1023,
                                     1024, 1025, 1100, 2048, 3001, 4100};
    static const int64_t rows_list[] = {1, 2, 3, 7, 64, 65, 130};
    int isa, dt, w, r, v;
    problem p;
    for (isa = 1; isa < NBWD_ISA_COUNT; ++isa) {
        if (!a->supported((nbwd_isa)isa) || !b->supported((nbwd_isa)isa)) continue;
        printf("compare: isa %d\n", isa);
        fflush(stdout);
        for (dt = 0; dt < 3; ++dt)
            for (w = 0; w < (int)(sizeof widths / sizeof widths[0]); ++w)
                for (r = 0; r < (int)(sizeof rows_list / sizeof rows_list[0]); ++r)
                    for (v = 0; v < (quick ? 3 : 15); ++v) {
                        memset(&p, 0, sizeof p);
                        p.isa = isa;
                        p.dt = dt;
                        p.rank = 2;
                        p.dims[0] = rows_list[r];
                        p.dims[1] = widths[w];
                        if (p.dims[0] * p.dims[1] > 300000) continue;
                        p.axis = -1;
                        p.affine = 1;
                        p.want_dx = p.want_dg = p.want_db = 1;
                        p.threads = 1;
                        switch (v) { /* the variants of a call */
                        case 0: break;
                        case 1: p.want_dg = p.want_db = 0; break;
                        case 2: p.affine = 0; p.want_dg = p.want_db = 0; break;
                        case 3: p.want_dx = 0; break;
                        case 4: p.want_db = 0; break;
                        case 5: p.want_dg = 0; p.threads = 2; break;
                        case 6: p.form = NBWD_STATS_MEAN_RSTD; p.sdt = dt; p.pdt = dt; break;
                        case 7: p.form = NBWD_STATS_XHAT_STD; p.accumulate = 1; break;
                        case 8: p.special = 1; p.threads = 2; break;
                        case 9: p.want_dx = 0; p.accumulate = 1; p.pdt = dt; break;
                        case 10: p.rms = 1; break;
                        case 11: p.rms = 1; p.res = 1; p.form = NBWD_STATS_RSTD; p.threads = 2; break;
                        case 12: p.rms = 1; p.res = 2; p.form = NBWD_STATS_XHAT_STD; p.want_db = 0; break;
                        case 13: p.res = 1; break;
                        case 14: p.res = 2; p.form = NBWD_STATS_MEAN_RSTD; p.want_dg = 0; p.threads = 2; break;
                        }
                        if (p.rms && (!a->rms || !b->rms)) continue;
                        compare_one(a, b, &p);
                    }
        /* BatchNorm: both layouts, a few shapes */
        for (dt = 0; dt < 3; ++dt)
            for (v = 0; v < 8; ++v) {
                static const int64_t shapes[][4] = {{2, 3, 5, 7},  {4, 16, 7, 7},  {8, 64, 3, 3}, {3, 19, 1, 11},
                                                    {2, 100, 9, 1}, {16, 8, 16, 16}, {1, 5, 33, 3}, {64, 33, 2, 2}};
                int layout;
                for (layout = 0; layout < 2; ++layout) {
                    int k;
                    memset(&p, 0, sizeof p);
                    p.bn = 1;
                    p.isa = isa;
                    p.dt = dt;
                    p.layout = layout;
                    p.rank = 4;
                    for (k = 0; k < 4; ++k) p.dims[k] = shapes[v][k];
                    p.affine = v != 3;
                    p.want_dx = 1;
                    p.want_dg = v != 5;
                    p.threads = v & 1 ? 2 : 1;
                    p.form = v == 6 ? NBWD_STATS_MEAN_RSTD : v == 7 ? NBWD_STATS_XHAT_STD : 0;
                    p.special = v == 4;
                    compare_one(a, b, &p);
                }
            }
    }
    {
        int i, d;
        for (i = 0; i < NBWD_ISA_COUNT; ++i)
            for (d = 0; d < 3; ++d)
                if (g_diff_by[i][d]) printf("  isa %d dtype %d: %ld cases differ\n", i, d, g_diff_by[i][d]);
    }
    printf("%ld cases, %ld differ\n", g_cases, g_diff);
}

/* ------------------------------------------------------------------ time */
static int parse_shape(const char *s, problem *p) {
    char buf[128], *tok, *save = NULL;
    memset(p, 0, sizeof p[0]);
    p->axis = -1;
    p->affine = 1;
    p->want_dx = p->want_dg = p->want_db = 1;
    if (!strncmp(s, "ln:", 3) || !strncmp(s, "rms:", 4) || !strncmp(s, "ln-res:", 7) || !strncmp(s, "rms-res:", 8)) {
        long long r, n;
        p->rms = s[0] == 'r';
        p->res = strstr(s, "-res:") != NULL;
        if (sscanf(strchr(s, ':') + 1, "%lldx%lld", &r, &n) != 2) return 0;
        p->rank = 2; p->dims[0] = r; p->dims[1] = n;
        return 1;
    }
    if (!strncmp(s, "bn-ncx:", 7) || !strncmp(s, "bn-nxc:", 7)) {
        p->bn = 1;
        p->layout = s[4] == 'c' ? NBWD_NCX : NBWD_NXC; /* bn-nCx or bn-nXc */
        snprintf(buf, sizeof buf, "%s", s + 7);
        for (tok = strtok_r(buf, "x", &save); tok && p->rank < NBWD_MAX_RANK; tok = strtok_r(NULL, "x", &save))
            p->dims[p->rank++] = atoll(tok);
        if (p->layout == NBWD_NXC && p->rank >= 3) { /* given as N x C x spatial: move C last */
            int64_t c = p->dims[1];
            int d;
            for (d = 1; d + 1 < p->rank; ++d) p->dims[d] = p->dims[d + 1];
            p->dims[p->rank - 1] = c;
        }
        return p->rank >= 2;
    }
    return 0;
}

static void time_all(const lib *libs, int isa, int threads, int rounds, int calls, const char *shapes, int dt) {
    char buf[1024], *tok, *save = NULL;
    snprintf(buf, sizeof buf, "%s", shapes);
    printf("%-24s %-5s %3s %10s %10s %7s   (ms: median over %d rounds of the median of %d calls)\n", "shape",
           "dtype", "thr", "old", "new", "new/old", rounds, calls);
    for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        problem p;
        buffers b;
        double per[2][64], one[256];
        int r, k, c;
        if (!parse_shape(tok, &p)) { fprintf(stderr, "nbwd_ab: bad shape %s\n", tok); exit(2); }
        if (p.rms && (!libs[0].rms || !libs[1].rms)) { fprintf(stderr, "nbwd_ab: %s: a build has no RMSNorm\n", tok); exit(2); }
        p.dt = dt;
        p.isa = isa;
        p.threads = threads;
        make_buffers(&p, &b);
        for (k = 0; k < 2; ++k) call(&libs[k], &p, &b); /* warm-up */
        for (r = 0; r < rounds && r < 64; ++r)
            for (k = 0; k < 2; ++k) {
                int which = (r & 1) ? 1 - k : k;
                for (c = 0; c < calls && c < 256; ++c) {
                    double t0 = now_s();
                    call(&libs[which], &p, &b);
                    one[c] = now_s() - t0;
                }
                per[which][r] = median_of(one, calls < 256 ? calls : 256);
            }
        {
            double mo = median_of(per[0], rounds), mn = median_of(per[1], rounds);
            printf("%-24s %-5s %3d %10.4f %10.4f %7.3f\n", tok, dt == 0 ? "f32" : dt == 1 ? "f16" : "bf16", threads,
                   mo * 1e3, mn * 1e3, mn / mo);
            fflush(stdout);
        }
        free_buffers(&b);
    }
}

int main(int argc, char **argv) {
    lib libs[2];
    int i, isa = 0, threads = 1, rounds = 7, calls = 15, dt = 0, quick = 0;
    const char *shapes = "ln:32768x768,ln:8192x1024,ln:4096x4096,ln:131072x64,ln:500000x24,ln:64x768";
    if (argc < 4) {
        fprintf(stderr, "usage: nbwd_ab OLD.so NEW.so compare [--quick] | time [options]\n");
        return 2;
    }
    lib_open(&libs[0], argv[1]);
    lib_open(&libs[1], argv[2]);
    for (i = 4; i < argc; ++i) {
        const char *v = i + 1 < argc ? argv[i + 1] : "";
        if (!strcmp(argv[i], "--quick")) quick = 1;
        else if (!strcmp(argv[i], "--isa")) {
            static const char *names[] = {"auto", "scalar", "sse", "avx2", "avx512", "neon", "avx512_bf16", "neon_bf16"};
            int k;
            for (k = 0; k < 8; ++k)
                if (!strcmp(v, names[k])) isa = k;
            ++i;
        } else if (!strcmp(argv[i], "--threads")) { threads = atoi(v); ++i; }
        else if (!strcmp(argv[i], "--rounds")) { rounds = atoi(v); ++i; }
        else if (!strcmp(argv[i], "--calls")) { calls = atoi(v); ++i; }
        else if (!strcmp(argv[i], "--shapes")) { shapes = v; ++i; }
        else if (!strcmp(argv[i], "--dtype")) { dt = !strcmp(v, "bf16") ? 2 : !strcmp(v, "f16") ? 1 : 0; ++i; }
    }
    if (!strcmp(argv[3], "compare")) {
        compare_all(&libs[0], &libs[1], quick);
        return g_diff != 0;
    }
    time_all(libs, isa, threads, rounds, calls, shapes, dt);
    return 0;
}
