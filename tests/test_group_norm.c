/* test_group_norm.c - the GroupNorm/InstanceNorm backward matrix against the
   float64 reference (ref_group_norm_bwd): NCX and NXC, ranks 2..5, every
   statistics form (MEAN_VARIANCE, MEAN_RSTD, XHAT_STD, DST_RSTD with and
   without beta) and dtype combination, affine on/off, every choice of
   optional outputs (and gamma absent where it is not read), groups 1, 2,
   C/2 and C (InstanceNorm), channel counts 1..64, spatial sizes 1..100 and
   tensors past the library's 32768-element chunks (NCX planes cut in
   pieces, NXC samples of many row blocks, >= 2^20 elements), padded and
   negative data strides, strided [N, groups] statistics and [C] parameters,
   in place (diff_src = diff_dst, = src/xhat/dst), accumulate, a caller's
   workspace, constant sets, |mean| >> std, tiny and large epsilon, gamma 0,
   -0, subnormal or tiny enough that gamma cannot be folded into the
   coefficients, empty tensors (N = 0, a spatial dim 0, C = 0). Also bits:
   thread counts 1, 2, 3, 7, a subset of the outputs, the other workspace
   choice and dense copies of strided tensors give the bits of the call
   itself; one-element sets give exact zeros; a NaN or Inf changes only its
   own set's diff_src and its channel's (group's, for a statistic)
   diff_gamma/diff_beta, everything else keeping its clean bits. */
#include "nbwd_test.h"

enum { GO_DX = 1, GO_DG = 2, GO_DB = 4, GO_ALL = 7 };
enum { GS_DENSE = 0, GS_PADDED = 1, GS_NEGATIVE = 2 };
enum { GIP_NONE = 0, GIP_DY = 1, GIP_X = 2 };
/* data: normal; every set constant; |mean| >> std; some gamma 0, -0 or
   subnormal; some gamma tiny (normal) next to large ones in a group, so that
   mean(g) / gamma overflows and that channel cannot be folded; every set
   constant at +-1e38 to 3.3e38 (in the manual's range: no deviation; a sum
   of a few such x passes FLT_MAX) */
enum { GD_NORMAL = 0, GD_CONSTANT = 1, GD_BIG_MEAN = 2, GD_ZERO_GAMMA = 3, GD_TINY_GAMMA = 4, GD_CONSTANT_HUGE = 5 };

typedef struct gn_cfg {
    int rank;
    int64_t dims[NBWD_MAX_RANK];
    nbwd_layout layout;
    int64_t groups;
    nbwd_stats_form form;
    nbwd_dtype dt, sdt, pdt;
    int affine;
    unsigned outputs;
    int no_beta;    /* DST_RSTD: args.beta NULL (the forward had no bias) */
    int no_gamma;   /* args.gamma NULL (valid where it is not read) */
    int strides;    /* GS_* */
    int inplace;    /* GIP_* */
    int accumulate;
    float eps;
    int data;       /* GD_* */
    int threads;
    int caller_ws;  /* a workspace of exactly the queried size, misaligned */
    int null_empty; /* tensors without elements passed as NULL */
    int det;        /* also: the bits of threads 1/2/3/7, output subsets, the other workspace, dense copies */
    uint64_t seed;
} gn_cfg;

static uint64_t g_gseed = 7000;

static void gn_defaults(gn_cfg *c) {
    memset(c, 0, sizeof *c);
    c->layout = NBWD_NCX;
    c->groups = 1;
    c->form = NBWD_STATS_MEAN_VARIANCE;
    c->dt = c->sdt = c->pdt = NBWD_F32;
    c->affine = 1;
    c->outputs = GO_ALL;
    c->eps = 1e-5f;
    c->seed = ++g_gseed;
}

/* NCX dims [N, C, sp...]; NXC [N, sp..., C] */
static void gn_shape(gn_cfg *c, nbwd_layout layout, int64_t N, int64_t C, int64_t groups, int nsp, const int64_t *sp) {
    int k;
    c->layout = layout;
    c->groups = groups;
    c->rank = 2 + nsp;
    c->dims[0] = N;
    for (k = 0; k < nsp; ++k) c->dims[layout == NBWD_NCX ? 2 + k : 1 + k] = sp[k];
    c->dims[layout == NBWD_NCX ? 1 : 1 + nsp] = C;
}

static void gn_combo(gn_cfg *c, int k) {
    c->dt = t_combos[k].dt;
    c->sdt = t_combos[k].sdt;
    c->pdt = t_combos[k].pdt;
}

/* The problem's geometry. */
typedef struct gn_geo {
    int cd;
    int64_t N, C, S, G, Cg, K, total;
} gn_geo;

static void gn_geometry(int rank, const int64_t *dims, nbwd_layout layout, int64_t groups, gn_geo *g) {
    int d;
    g->cd = layout == NBWD_NCX ? 1 : rank - 1;
    g->N = dims[0];
    g->C = dims[g->cd];
    g->S = 1;
    for (d = 1; d < rank; ++d)
        if (d != g->cd) g->S *= dims[d];
    g->G = groups;
    g->Cg = groups > 0 && g->C > 0 ? g->C / groups : 1;
    g->K = g->Cg * g->S;
    g->total = g->N * g->C * g->S;
}
/* Logical (row-major) element e: its channel and its set n * groups + c / Cg. */
static int64_t gn_chan(const gn_geo *g, nbwd_layout layout, int64_t e) {
    return layout == NBWD_NCX ? (e / g->S) % g->C : e % g->C;
}
static int64_t gn_set(const gn_geo *g, nbwd_layout layout, int64_t e) {
    return e / (g->C * g->S) * g->G + gn_chan(g, layout, e) / g->Cg;
}

static void gn_oom(void) {
    fprintf(stderr, "out of memory\n");
    exit(2);
}

/* A dense copy of a tensor (same values, bit for bit). */
static void gn_dense_copy(const t_buf *src, t_buf *dst) {
    double *v = (double *)t_xmalloc((size_t)(src->count > 0 ? src->count : 1) * sizeof(double));
    if (!t_buf_alloc(dst, src->rank, src->dims, NULL, src->dt)) gn_oom();
    t_buf_to_dense(src, v);
    t_buf_from_dense(dst, v);
    free(v);
}

/* Same logical values, bit for bit (16-bit and f32 values widen to double
   exactly; -0 and NaN payloads kept by comparing the doubles' bytes). */
static int gn_same_values(const t_buf *a, const t_buf *b) {
    double *va, *vb;
    int same;
    if (a->count != b->count) return 0;
    if (a->count == 0) return 1;
    va = (double *)t_xmalloc((size_t)a->count * sizeof(double));
    vb = (double *)t_xmalloc((size_t)a->count * sizeof(double));
    t_buf_to_dense(a, va);
    t_buf_to_dense(b, vb);
    same = memcmp(va, vb, (size_t)a->count * sizeof(double)) == 0;
    free(va);
    free(vb);
    return same;
}

/* The bits: the call of gn_run (desc, args; outputs at pdx, bdg, bdb, the
   previous parameter gradients prev_*) repeated with 1, 2, 3 and 7 threads,
   with each output alone, with the other workspace choice, and (strided
   layouts) with dense copies of every tensor: every output must keep its
   bits. */
static void gn_det(const gn_cfg *c, const nbwd_group_norm_bwd_desc *desc, const nbwd_group_norm_bwd_args *args,
                   const t_buf *pdx, const t_buf *bdg, const t_buf *bdb, const double *prev_dg, const double *prev_db,
                   const t_buf *bx, const t_buf *bdy, const t_buf *bm, const t_buf *bv, const t_buf *bg,
                   const t_buf *bb) {
    static const int th[4] = {1, 2, 3, 7};
    int v;
    int64_t i, C = bdg->count;
    for (v = 0; v < 9; ++v) {
        nbwd_group_norm_bwd_desc d = *desc;
        nbwd_group_norm_bwd_args a = *args;
        t_buf dx2, dg2, db2, cx, cdy, cm, cv, cg, cb;
        void *ws = NULL;
        size_t ws_bytes = 0;
        nbwd_status st;
        int dense = v == 8;
        if (v == 4 && !args->diff_src) continue;
        if (v == 5 && !args->diff_gamma) continue;
        if (v == 6 && !args->diff_beta) continue;
        if (dense && !c->strides) continue;
        memset(&dx2, 0, sizeof dx2);
        if (dense) {
            if (pdx && !t_buf_alloc(&dx2, pdx->rank, pdx->dims, NULL, pdx->dt)) gn_oom();
            if (!t_buf_alloc(&dg2, 1, &C, NULL, bdg->dt) || !t_buf_alloc(&db2, 1, &C, NULL, bdb->dt)) gn_oom();
            gn_dense_copy(bx, &cx); gn_dense_copy(bdy, &cdy); gn_dense_copy(bm, &cm); gn_dense_copy(bv, &cv);
            gn_dense_copy(bg, &cg); gn_dense_copy(bb, &cb);
            d.src_strides = d.diff_dst_strides = d.diff_src_strides = NULL;
            d.mean_strides = d.var_strides = NULL;
            d.gamma_strides = d.beta_strides = d.diff_gamma_strides = d.diff_beta_strides = NULL;
            if (a.src) a.src = cx.base;
            if (a.xhat) a.xhat = cx.base;
            if (a.dst) a.dst = cx.base;
            if (a.diff_dst) a.diff_dst = cdy.base;
            if (a.mean) a.mean = cm.base;
            if (a.variance) a.variance = cv.base;
            if (a.rstd) a.rstd = cv.base;
            if (a.std) a.std = cv.base;
            if (a.gamma) a.gamma = cg.base;
            if (a.beta) a.beta = cb.base;
        } else {
            if (pdx && !t_buf_alloc(&dx2, pdx->rank, pdx->dims, pdx->strides, pdx->dt)) gn_oom();
            if (!t_buf_alloc(&dg2, 1, &C, bdg->strides, bdg->dt) || !t_buf_alloc(&db2, 1, &C, bdb->strides, bdb->dt))
                gn_oom();
        }
        if (c->accumulate)
            for (i = 0; i < C; ++i) {
                t_buf_set(&dg2, i, prev_dg[i]);
                t_buf_set(&db2, i, prev_db[i]);
            }
        /* v 4, 5, 6: that output alone */
        a.diff_src = args->diff_src && v != 5 && v != 6 ? dx2.base : NULL;
        a.diff_gamma = args->diff_gamma && v != 4 && v != 6 ? dg2.base : NULL;
        a.diff_beta = args->diff_beta && v != 4 && v != 5 ? db2.base : NULL;
        if (v < 4) d.num_threads = th[v];
        if (v == 7 && !c->caller_ws) {
            CHECK_STATUS(nbwd_group_norm_bwd_workspace_size(&d, &ws_bytes), NBWD_OK);
            ws = t_xmalloc(ws_bytes + 16);
        }
        st = nbwd_group_norm_bwd(&d, &a, ws ? (char *)ws + 12 : NULL, ws_bytes);
        CHECK_STATUS(st, NBWD_OK);
        if (st == NBWD_OK) {
            static const char *const what[9] = {"1 thread", "2 threads", "3 threads", "7 threads", "diff_src alone",
                                                "diff_gamma alone", "diff_beta alone", "the other workspace choice",
                                                "dense copies of the strided tensors"};
            if (a.diff_src)
                CHECK(dense ? gn_same_values(pdx, &dx2) : t_buf_same_bytes(pdx, &dx2),
                      "diff_src: other bits with %s (threads %d in the call)", what[v], c->threads);
            if (a.diff_gamma)
                CHECK(dense ? gn_same_values(bdg, &dg2) : t_buf_same_bytes(bdg, &dg2),
                      "diff_gamma: other bits with %s (threads %d in the call)", what[v], c->threads);
            if (a.diff_beta)
                CHECK(dense ? gn_same_values(bdb, &db2) : t_buf_same_bytes(bdb, &db2),
                      "diff_beta: other bits with %s (threads %d in the call)", what[v], c->threads);
        }
        free(ws);
        if (dx2.alloc) t_buf_free(&dx2);
        t_buf_free(&dg2);
        t_buf_free(&db2);
        if (dense) {
            t_buf_free(&cx); t_buf_free(&cdy); t_buf_free(&cm); t_buf_free(&cv); t_buf_free(&cg); t_buf_free(&cb);
        }
    }
}

/* NBWD_STATS_NONE: the call's f32 statistics may differ from the float64
   ones rounded to f32 by the manual's bound, which moves xhat by e =
   T_NONE_XHAT_ERR (per set, as LayerNorm's rows); diff_src: rstd
   (|mean(g xhat)| e + |xhat| mean(|g| e)) + u |dx|; diff_gamma: |dy| e
   per element. */
static void gn_none_tolerance(const gn_cfg *c, const gn_geo *geo, const t_buf *bx, const t_buf *bdy, const t_buf *bg,
                              const double *mean, const double *var, ref_out ro) {
    const int64_t NG = geo->N * geo->G;
    double *sgx = (double *)t_xmalloc((size_t)NG * sizeof(double)), *sge = (double *)t_xmalloc((size_t)NG * sizeof(double));
    const double per_set = (double)(geo->total / (NG > 0 ? NG : 1));
    int64_t e, s;
    for (s = 0; s < NG; ++s) sgx[s] = sge[s] = 0.0;
    for (e = 0; e < geo->total; ++e) {
        const int64_t ch = gn_chan(geo, c->layout, e);
        const double rs = 1.0 / sqrt(var[s = gn_set(geo, c->layout, e)] + (double)c->eps);
        const double xh = (t_buf_get(bx, e) - mean[s]) * rs, dy = t_buf_get(bdy, e);
        const double g = dy * (c->affine ? t_buf_get(bg, ch) : 1.0), err = T_NONE_XHAT_ERR(mean[s], rs, xh);
        sgx[s] += g * xh;
        sge[s] += fabs(g) * err;
        if (ro.dg_tol) ro.dg_tol[ch] += fabs(dy) * err;
    }
    for (e = 0; e < geo->total && ro.dx_tol; ++e) {
        const double rs = 1.0 / sqrt(var[s = gn_set(geo, c->layout, e)] + (double)c->eps);
        const double xh = (t_buf_get(bx, e) - mean[s]) * rs, err = T_NONE_XHAT_ERR(mean[s], rs, xh);
        ro.dx_tol[e] += rs * (fabs(sgx[s] / per_set) * err + fabs(xh) * sge[s] / per_set) + T_U * fabs(ro.dx[e]);
    }
    free(sgx);
    free(sge);
}

/* Runs one case against the reference; returns 1 if every check passed. */
static int gn_run(const gn_cfg *c) {
    char dims[128];
    int d, k = 0, ok = 1;
    const int dst_form = c->form == NBWD_STATS_DST_RSTD, xhat_form = c->form == NBWD_STATS_XHAT_STD;
    const int none_form = c->form == NBWD_STATS_NONE, mean_form = !dst_form && !xhat_form;
    /* NBWD_STATS_NONE: the call finds the statistics itself: the reference
       is the MEAN_VARIANCE form's with the float64 statistics rounded to f32 */
    const nbwd_dtype sdt = none_form ? NBWD_F32 : c->sdt;
    const nbwd_stats_form ref_form = none_form ? NBWD_STATS_MEAN_VARIANCE : c->form;
    const int want_dx = (c->outputs & GO_DX) != 0, want_dg = (c->outputs & GO_DG) != 0;
    const int want_db = (c->outputs & GO_DB) != 0;
    gn_geo geo;
    int64_t i, e, s, NG, sd[2], st_x[NBWD_MAX_RANK], st_dy[NBWD_MAX_RANK], st_dx[NBWD_MAX_RANK], st_m[2], st_v[2];
    int64_t cst[4] = {1, 1, 1, 1}; /* gamma, beta, diff_gamma, diff_beta */
    int dense_from = c->layout == NBWD_NCX ? 2 : c->rank - 1;
    t_buf bx, bdy, bdx, bm, bv, bg, bb, bdg, bdb, *pdx = NULL;
    double *mean, *var, *xd = NULL, *rdx = NULL, *rdx_tol = NULL, *rdg, *rdg_tol, *rdb, *rdb_tol, *prev_dg, *prev_db;
    t_snap s_x, s_dy, s_m, s_v, s_g, s_b, s_dg, s_db;
    t_rng rng;
    ref_out ro;
    ref_tensor tx, tdy, tm, tv, tg, tb;
    nbwd_group_norm_bwd_desc desc;
    nbwd_group_norm_bwd_args args;
    nbwd_status st;
    void *ws = NULL;
    size_t ws_bytes = 0;
    long fails0 = g_fail, allocs0, frees0;

    gn_geometry(c->rank, c->dims, c->layout, c->groups, &geo);
    NG = geo.N * geo.G;
    dims[0] = 0;
    for (d = 0; d < c->rank; ++d)
        k += snprintf(dims + k, sizeof dims - (size_t)k, "%s%lld", d ? "x" : "", (long long)c->dims[d]);
    t_case("GN %s dims=%s groups=%lld form=%s dt=%s/%s/%s affine=%d out=%s%s%s nobeta=%d nogamma=%d strides=%d "
           "inplace=%d acc=%d eps=%g data=%d threads=%d ws=%d null=%d det=%d seed=%llu isa=%s",
           c->layout == NBWD_NCX ? "NCX" : "NXC", dims, (long long)c->groups, t_form_name(c->form),
           t_dtype_name(c->dt), t_dtype_name(c->sdt), t_dtype_name(c->pdt), c->affine, want_dx ? "dx" : "",
           want_dg ? "+dg" : "", want_db ? "+db" : "", c->no_beta, c->no_gamma, c->strides, c->inplace, c->accumulate,
           (double)c->eps, c->data, c->threads, c->caller_ws, c->null_empty, c->det, (unsigned long long)c->seed,
           nbwd_isa_name(g_test_isa));
    t_rng_seed(&rng, c->seed);

    /* strides: the dense block is the spatial dims (NCX) or C (NXC); NCX
       rank 2 has no spatial dim, so C itself is strided there */
    t_padded_strides(c->rank, c->dims, dense_from, c->strides ? 3 : 0, st_x);
    t_padded_strides(c->rank, c->dims, dense_from, c->strides ? 1 : 0, st_dy);
    t_padded_strides(c->rank, c->dims, dense_from, c->strides ? 2 : 0, st_dx);
    if (c->strides == GS_NEGATIVE) { /* an outer dim of each input runs backwards */
        int nd = c->layout == NBWD_NCX || c->rank > 2 ? 1 : 0;
        st_x[0] = -st_x[0];
        st_dy[nd] = -st_dy[nd];
    }
    if (c->inplace == GIP_DY) memcpy(st_dx, st_dy, sizeof st_dx);
    if (c->inplace == GIP_X) memcpy(st_dx, st_x, sizeof st_dx);
    sd[0] = geo.N;
    sd[1] = geo.G;
    t_padded_strides(2, sd, c->strides ? 2 : 0, c->strides ? 1 : 0, st_m); /* strided: gaps between all */
    t_padded_strides(2, sd, c->strides ? 2 : 0, c->strides ? 2 : 0, st_v);
    if (c->strides == GS_NEGATIVE) {
        st_m[1] = -st_m[1];
        st_v[0] = -st_v[0];
    }
    if (c->strides) {
        int neg = c->strides == GS_NEGATIVE ? -1 : 1;
        cst[0] = 4 * neg; cst[1] = 3; cst[2] = 2; cst[3] = 3 * neg;
    }
    if (!t_buf_alloc(&bx, c->rank, c->dims, st_x, c->dt) || !t_buf_alloc(&bdy, c->rank, c->dims, st_dy, c->dt) ||
        !t_buf_alloc(&bm, 2, sd, st_m, sdt) || !t_buf_alloc(&bv, 2, sd, st_v, sdt) ||
        !t_buf_alloc(&bg, 1, &geo.C, &cst[0], c->pdt) || !t_buf_alloc(&bb, 1, &geo.C, &cst[1], c->pdt) ||
        !t_buf_alloc(&bdg, 1, &geo.C, &cst[2], c->pdt) || !t_buf_alloc(&bdb, 1, &geo.C, &cst[3], c->pdt))
        gn_oom();
    memset(&bdx, 0, sizeof bdx);
    if (want_dx) {
        if (c->inplace == GIP_DY) pdx = &bdy;
        else if (c->inplace == GIP_X) pdx = &bx;
        else {
            if (!t_buf_alloc(&bdx, c->rank, c->dims, st_dx, c->dt)) gn_oom();
            pdx = &bdx;
        }
    }

    /* inputs: x with an offset per channel (a set's channels differ) */
    mean = (double *)t_xmalloc((size_t)(NG > 0 ? NG : 1) * sizeof(double));
    var = (double *)t_xmalloc((size_t)(NG > 0 ? NG : 1) * sizeof(double));
    if (c->data == GD_CONSTANT || c->data == GD_CONSTANT_HUGE) {
        for (s = 0; s < NG; ++s)
            mean[s] = c->data == GD_CONSTANT ? t_rng_uniform(&rng, -2.0, 2.0)
                                             : (s % 2 ? -1e38 : 1e38) * t_rng_uniform(&rng, 1.0, 3.3);
        for (e = 0; e < geo.total; ++e) t_buf_set(&bx, e, mean[gn_set(&geo, c->layout, e)]);
    } else if (c->data == GD_BIG_MEAN) {
        t_buf_fill_normal(&bx, &rng, c->dt == NBWD_F16 ? 1000.0 : 1e4,
                          c->dt == NBWD_F32 ? 0.01 : c->dt == NBWD_F16 ? 5.0 : 500.0);
    } else {
        for (e = 0; e < geo.total; ++e)
            t_buf_set(&bx, e, 0.2 * (double)(gn_chan(&geo, c->layout, e) % 5) - 0.4 + 1.3 * t_rng_normal(&rng));
    }
    t_buf_fill_normal(&bdy, &rng, 0.1, 1.0);
    for (i = 0; i < geo.C; ++i) {
        double gv = 1.0 + 0.5 * t_rng_normal(&rng);
        if (c->data == GD_ZERO_GAMMA) { /* 0, -0 and subnormal scales: no xhat in dst, no fold */
            if (i % 5 == 2) gv = 0.0;
            else if (i % 7 == 4) gv = -0.0;
            else if (i % 7 == 6) gv = c->pdt == NBWD_F16 ? 6e-8 : -1e-39;
        }
        if (c->data == GD_TINY_GAMMA) { /* mean(g) / gamma overflows fp32 for the tiny ones */
            if (i % 4 == 1) gv = c->pdt == NBWD_F16 ? 6.2e-5 : 2e-38;
            else if (i % 4 == 3) gv = c->pdt == NBWD_F16 ? -3000.0 : -1e4;
        }
        t_buf_set(&bg, i, gv);
        t_buf_set(&bb, i, t_rng_normal(&rng));
    }
    /* statistics from the rounded x in float64, then rounded to their dtype */
    tx.p = bx.base; tx.dt = c->dt; tx.strides = bx.strides;
    ref_group_norm_stats(c->rank, c->dims, c->layout, c->groups, tx, mean, var);
    if ((xhat_form || dst_form) && geo.total > 0) {
        /* the input becomes xhat = (x - mean) / std, or the forward output
           y = xhat * gamma + beta (affine; beta 0 without it), rounded */
        xd = (double *)t_xmalloc((size_t)geo.total * sizeof(double));
        t_buf_to_dense(&bx, xd);
        for (e = 0; e < geo.total; ++e) {
            int64_t ch = gn_chan(&geo, c->layout, e);
            s = gn_set(&geo, c->layout, e);
            xd[e] = (xd[e] - mean[s]) / sqrt(var[s] + (double)c->eps);
            if (dst_form && c->affine)
                xd[e] = xd[e] * t_buf_get(&bg, ch) + (c->no_beta ? 0.0 : t_buf_get(&bb, ch));
        }
        t_buf_from_dense(&bx, xd);
        free(xd);
        xd = NULL;
    }
    for (s = 0; s < NG; ++s) {
        double spread = c->form == NBWD_STATS_MEAN_VARIANCE || none_form ? var[s]
                        : xhat_form                         ? sqrt(var[s] + (double)c->eps)
                                                            : 1.0 / sqrt(var[s] + (double)c->eps);
        if (mean_form) t_buf_set(&bm, s, mean[s]);
        t_buf_set(&bv, s, spread);
    }
    prev_dg = (double *)t_xmalloc((size_t)(geo.C > 0 ? geo.C : 1) * sizeof(double));
    prev_db = (double *)t_xmalloc((size_t)(geo.C > 0 ? geo.C : 1) * sizeof(double));
    for (i = 0; i < geo.C; ++i) {
        prev_dg[i] = prev_db[i] = 0.0;
        if (c->accumulate) {
            prev_dg[i] = t_buf_set(&bdg, i, t_rng_normal(&rng));
            prev_db[i] = t_buf_set(&bdb, i, t_rng_normal(&rng));
        }
    }

    /* the reference (before the call: in place overwrites an input) */
    memset(&ro, 0, sizeof ro);
    if (want_dx) {
        rdx = ro.dx = (double *)t_xmalloc((size_t)(geo.total > 0 ? geo.total : 1) * sizeof(double));
        rdx_tol = ro.dx_tol = (double *)t_xmalloc((size_t)(geo.total > 0 ? geo.total : 1) * sizeof(double));
    }
    rdg = ro.dg = (double *)t_xmalloc((size_t)(geo.C > 0 ? geo.C : 1) * sizeof(double));
    rdg_tol = ro.dg_tol = (double *)t_xmalloc((size_t)(geo.C > 0 ? geo.C : 1) * sizeof(double));
    rdb = ro.db = (double *)t_xmalloc((size_t)(geo.C > 0 ? geo.C : 1) * sizeof(double));
    rdb_tol = ro.db_tol = (double *)t_xmalloc((size_t)(geo.C > 0 ? geo.C : 1) * sizeof(double));
    tdy.p = bdy.base; tdy.dt = c->dt; tdy.strides = bdy.strides;
    tm.p = bm.base; tm.dt = sdt; tm.strides = bm.strides;
    tv.p = bv.base; tv.dt = sdt; tv.strides = bv.strides;
    tg.p = c->affine ? bg.base : NULL; tg.dt = c->pdt; tg.strides = bg.strides;
    tb.p = dst_form && c->affine && !c->no_beta ? bb.base : NULL; tb.dt = c->pdt; tb.strides = bb.strides;
    ref_group_norm_bwd(c->rank, c->dims, c->layout, c->groups, ref_form, (double)c->eps, tx, tdy, tm, tv, tg, tb, ro);
    if (none_form && geo.total > 0) gn_none_tolerance(c, &geo, &bx, &bdy, &bg, mean, var, ro);
    for (i = 0; i < geo.C; ++i) {
        rdg[i] += prev_dg[i];
        rdb[i] += prev_db[i];
        rdg_tol[i] += 2.0 * T_U * fabs(prev_dg[i]);
        rdb_tol[i] += 2.0 * T_U * fabs(prev_db[i]);
    }
#if defined(__arm__) && !defined(__aarch64__)
    /* 32-bit Arm NEON flushes subnormals to zero (README: paths): a tiny
       gamma's channel computes through subnormals there, which become 0 */
    if (want_dx && g_test_isa == NBWD_ISA_NEON)
        for (i = 0; i < geo.total; ++i) rdx_tol[i] += 16.0 * 1.17549435e-38;
#endif

    nbwd_group_norm_bwd_desc_init(&desc, c->rank, c->dims, c->layout, c->groups, c->eps);
    desc.use_affine = c->affine;
    desc.stats_form = c->form;
    desc.data_dtype = c->dt;
    desc.stats_dtype = c->sdt;
    desc.param_dtype = c->pdt;
    desc.flags = c->accumulate ? NBWD_ACCUMULATE_PARAM_GRADS : 0u;
    desc.num_threads = c->threads;
    desc.isa = g_test_isa;
    if (c->strides || c->inplace) {
        desc.src_strides = bx.strides;
        desc.diff_dst_strides = bdy.strides;
        desc.diff_src_strides = pdx ? pdx->strides : NULL;
    }
    if (c->strides) {
        desc.mean_strides = bm.strides;
        desc.var_strides = bv.strides;
        desc.gamma_strides = &cst[0];
        desc.beta_strides = &cst[1];
        desc.diff_gamma_strides = &cst[2];
        desc.diff_beta_strides = &cst[3];
    }
    memset(&args, 0, sizeof args);
    {
        int ne = c->null_empty && geo.total == 0, ns = c->null_empty && NG == 0, nc = c->null_empty && geo.C == 0;
        const void *xp = ne ? NULL : bx.base;
        if (xhat_form) args.xhat = xp;
        else if (dst_form) args.dst = xp;
        else args.src = xp;
        args.diff_dst = ne ? NULL : bdy.base;
        if (mean_form && !none_form) args.mean = ns ? NULL : bm.base;
        if (c->form == NBWD_STATS_MEAN_VARIANCE) args.variance = ns ? NULL : bv.base;
        else if (xhat_form) args.std = ns ? NULL : bv.base;
        else if (!none_form) args.rstd = ns ? NULL : bv.base;
        if (c->affine && !c->no_gamma) args.gamma = nc ? NULL : bg.base;
        if (c->affine && dst_form && !c->no_beta) args.beta = nc ? NULL : bb.base;
        args.diff_src = pdx && !ne ? pdx->base : NULL;
        if (want_dg) args.diff_gamma = nc ? NULL : bdg.base;
        if (want_db) args.diff_beta = nc ? NULL : bdb.base;
    }
    s_x = t_snap_take(&bx); s_dy = t_snap_take(&bdy); s_m = t_snap_take(&bm); s_v = t_snap_take(&bv);
    s_g = t_snap_take(&bg); s_b = t_snap_take(&bb); s_dg = t_snap_take(&bdg); s_db = t_snap_take(&bdb);
    allocs0 = t_hook_allocs();
    frees0 = t_hook_frees();
    if (c->caller_ws) {
        st = nbwd_group_norm_bwd_workspace_size(&desc, &ws_bytes);
        CHECK_STATUS(st, NBWD_OK);
        ws = t_xmalloc(ws_bytes + 8);
        st = nbwd_group_norm_bwd(&desc, &args, (char *)ws + 4, ws_bytes); /* deliberately misaligned */
    } else {
        st = nbwd_group_norm_bwd(&desc, &args, NULL, 0);
    }
    ok &= CHECK_STATUS(st, NBWD_OK);
    ok &= CHECK(t_hook_allocs() - allocs0 == t_hook_frees() - frees0, "the call allocated %ld blocks and freed %ld",
                t_hook_allocs() - allocs0, t_hook_frees() - frees0);
    if (c->caller_ws)
        ok &= CHECK(t_hook_allocs() == allocs0, "the call allocated %ld blocks although given a workspace",
                    t_hook_allocs() - allocs0);
    if (geo.total == 0)
        ok &= CHECK(t_hook_allocs() == allocs0, "an empty problem allocated %ld blocks", t_hook_allocs() - allocs0);
    if (st == NBWD_OK) {
        if (want_dx && geo.total > 0) ok &= T_COMPARE_BUF("diff_src", pdx, rdx, rdx_tol);
        if (want_dg) ok &= T_COMPARE_BUF("diff_gamma", &bdg, rdg, rdg_tol);
        else ok &= CHECK(t_snap_same(&s_dg, &bdg), "diff_gamma not requested but written");
        if (want_db) ok &= T_COMPARE_BUF("diff_beta", &bdb, rdb, rdb_tol);
        else ok &= CHECK(t_snap_same(&s_db, &bdb), "diff_beta not requested but written");
        if (pdx) ok &= CHECK(t_buf_canary_ok(pdx), "diff_src: a byte outside its elements was written");
        ok &= CHECK(t_buf_canary_ok(&bdg) && t_buf_canary_ok(&bdb),
                    "diff_gamma/diff_beta: a byte outside their elements was written");
        if (c->inplace != GIP_X) ok &= CHECK(t_snap_same(&s_x, &bx), "src/xhat/dst was modified");
        if (c->inplace != GIP_DY) ok &= CHECK(t_snap_same(&s_dy, &bdy), "diff_dst was modified");
        ok &= CHECK(t_snap_same(&s_m, &bm) && t_snap_same(&s_v, &bv), "the statistics were modified");
        ok &= CHECK(t_snap_same(&s_g, &bg) && t_snap_same(&s_b, &bb), "gamma/beta were modified");
        if (c->det && c->inplace == GIP_NONE)
            gn_det(c, &desc, &args, pdx, &bdg, &bdb, prev_dg, prev_db, &bx, &bdy, &bm, &bv, &bg, &bb);
    }
    free(ws);
    t_snap_free(&s_x); t_snap_free(&s_dy); t_snap_free(&s_m); t_snap_free(&s_v); t_snap_free(&s_g);
    t_snap_free(&s_b); t_snap_free(&s_dg); t_snap_free(&s_db);
    free(mean); free(var); free(rdx); free(rdx_tol); free(rdg); free(rdg_tol); free(rdb); free(rdb_tol);
    free(prev_dg); free(prev_db);
    t_buf_free(&bx); t_buf_free(&bdy); t_buf_free(&bm); t_buf_free(&bv); t_buf_free(&bg); t_buf_free(&bb);
    t_buf_free(&bdg); t_buf_free(&bdb);
    if (bdx.alloc) t_buf_free(&bdx);
    return ok && g_fail == fails0;
}

/* The choices of optional outputs with affine (without: diff_src alone). */
static const unsigned k_gn_outputs[7] = {GO_ALL, GO_DX, GO_DG, GO_DB, GO_DG | GO_DB, GO_DX | GO_DB, GO_DX | GO_DG};

/* 1. layout x form x dtype combination x affine x outputs, fully crossed
   (quick: every output choice on a third of the combinations); DST_RSTD
   with and without beta; gamma absent where no output reads it. */
static void gn_full_cross(void) {
    static const int64_t sp[2] = {3, 5};
    int lay, f, k, a, o;
    for (lay = 0; lay < 2; ++lay)
        for (f = 0; f < 5; ++f)
            for (k = 0; k < T_NCOMBOS; ++k)
                for (a = 1; a >= 0; --a)
                    for (o = 0; o < (a ? 7 : 1); ++o) {
                        gn_cfg c;
                        if (g_quick && o > 1 && (k + f) % 3) continue;
                        gn_defaults(&c);
                        gn_shape(&c, lay ? NBWD_NCX : NBWD_NXC, 2, 4, 2, 2, sp);
                        c.form = (nbwd_stats_form)f;
                        gn_combo(&c, k);
                        c.affine = a;
                        c.outputs = a ? k_gn_outputs[o] : (unsigned)GO_DX;
                        c.no_beta = c.form == NBWD_STATS_DST_RSTD && o % 2;
                        /* gamma is read for diff_src, and in DST_RSTD for diff_gamma too */
                        c.no_gamma = a && !(c.outputs & GO_DX) && (c.form != NBWD_STATS_DST_RSTD || !(c.outputs & GO_DG));
                        c.strides = (f + k + o) % 3;
                        gn_run(&c);
                    }
    { /* no outputs at all, with and without affine: a valid no-op */
        gn_cfg c;
        static const int64_t sp1[1] = {7};
        for (a = 0; a < 2; ++a) {
            gn_defaults(&c);
            gn_shape(&c, a ? NBWD_NCX : NBWD_NXC, 3, 6, 3, 1, sp1);
            c.affine = a;
            c.outputs = 0;
            gn_run(&c);
        }
    }
}

/* 2. Shapes: ranks 2..5, C 1..64, spatial sizes around the vector widths
   (1, 3, 7, 8, 17, 33, 100; 2-D and 3-D), groups 1, 2, C/2 and C. */
static void gn_shapes(void) {
    static const int64_t Cs[6] = {1, 2, 6, 16, 24, 64};
    static const int64_t sp1[7] = {1, 3, 7, 8, 17, 33, 100};
    static const int64_t sp2[3][2] = {{3, 5}, {8, 8}, {1, 17}};
    static const int64_t sp3[3] = {2, 3, 4};
    int lay, ci, v, gi, idx = 0;
    for (lay = 0; lay < 2; ++lay)
        for (ci = 0; ci < 6; ++ci) {
            int64_t C = Cs[ci], gl[4];
            int ng = 0, j;
            /* the distinct values of 1, 2, C/2, C that divide C */
            {
                int64_t cand[4];
                cand[0] = 1; cand[1] = 2; cand[2] = C / 2; cand[3] = C;
                for (gi = 0; gi < 4; ++gi) {
                    int dup = cand[gi] < 1 || C % cand[gi] != 0;
                    for (j = 0; j < ng && !dup; ++j) dup = gl[j] == cand[gi];
                    if (!dup) gl[ng++] = cand[gi];
                }
            }
            for (v = 0; v < 12; ++v)
                for (gi = 0; gi < ng; ++gi) {
                    gn_cfg c;
                    nbwd_layout L = lay ? NBWD_NCX : NBWD_NXC;
                    int64_t N = 1 + (idx % 3);
                    ++idx;
                    if (g_quick && idx % 4) continue;
                    /* the largest shapes with a single groups value each */
                    if (C == 64 && (v == 7 || v == 9) && gi != idx % ng) continue;
                    gn_defaults(&c);
                    if (v == 0) gn_shape(&c, L, 5, C, gl[gi], 0, NULL);
                    else if (v <= 7) gn_shape(&c, L, N, C, gl[gi], 1, &sp1[v - 1]);
                    else if (v <= 10) gn_shape(&c, L, N, C, gl[gi], 2, sp2[v - 8]);
                    else gn_shape(&c, L, 2, C, gl[gi], 3, sp3);
                    c.form = (nbwd_stats_form)(idx % 5);
                    gn_combo(&c, (idx * 5) % T_NCOMBOS);
                    c.strides = idx % 3 == 1 ? GS_PADDED : GS_DENSE;
                    c.caller_ws = idx % 5 == 2;
                    c.affine = idx % 7 != 3;
                    c.outputs = !c.affine || idx % 6 == 5 ? GO_DX : GO_ALL;
                    c.threads = idx % 4 == 3 ? 2 : 0;
                    gn_run(&c);
                }
        }
}

/* 3. Strides: padding on every outer dim, negative input strides, strided
   [N, groups] statistics and [C] parameters (negative ones too); [N, C]
   NCX, whose channels are an outer dim (no spatial block). */
static void gn_strides(void) {
    static const int64_t sp[2] = {3, 8};
    int lay, s, f, k;
    for (lay = 0; lay < 2; ++lay)
        for (s = GS_PADDED; s <= GS_NEGATIVE; ++s)
            for (f = 0; f < 5; ++f)
                for (k = 0; k < T_NCOMBOS; k += 4) {
                    gn_cfg c;
                    gn_defaults(&c);
                    gn_shape(&c, lay ? NBWD_NCX : NBWD_NXC, 3, 6, f % 2 ? 3 : 2, 2, sp);
                    c.strides = s;
                    c.form = (nbwd_stats_form)f;
                    gn_combo(&c, k);
                    c.det = k == 0 && f == 0;
                    gn_run(&c);
                }
    for (lay = 0; lay < 2; ++lay)
        for (s = GS_PADDED; s <= GS_NEGATIVE; ++s) { /* [N, C] */
            gn_cfg c;
            gn_defaults(&c);
            gn_shape(&c, lay ? NBWD_NCX : NBWD_NXC, 19, 12, s == GS_PADDED ? 3 : 12, 0, NULL);
            c.strides = s;
            c.det = 1;
            gn_run(&c);
        }
}

/* 4. In place (diff_src = diff_dst; = src, xhat or dst) and accumulate. */
static void gn_inplace_accumulate(void) {
    static const int64_t sp[1] = {33};
    int lay, ip, acc, k, f;
    for (lay = 0; lay < 2; ++lay)
        for (ip = GIP_NONE; ip <= GIP_X; ++ip)
            for (acc = 0; acc < 2; ++acc)
                for (k = 0; k < T_NCOMBOS; k += 2) {
                    gn_cfg c;
                    if (ip == GIP_NONE && !acc) continue;
                    gn_defaults(&c);
                    gn_shape(&c, lay ? NBWD_NCX : NBWD_NXC, 3, 8, k % 4 ? 4 : 8, 1, sp);
                    c.inplace = ip;
                    c.accumulate = acc;
                    c.strides = k % 4 == 0 ? GS_PADDED : GS_DENSE;
                    c.form = (nbwd_stats_form)((k / 2 + ip + acc) % 5);
                    gn_combo(&c, k);
                    gn_run(&c);
                }
    for (f = 0; f < 5; ++f) /* accumulate with a subset of the outputs, without diff_src */
        for (k = 0; k < 3; ++k) {
            gn_cfg c;
            gn_defaults(&c);
            gn_shape(&c, f % 2 ? NBWD_NCX : NBWD_NXC, 2, 6, 3, 1, sp);
            c.accumulate = 1;
            c.form = (nbwd_stats_form)f;
            c.outputs = k == 0 ? GO_DG : k == 1 ? GO_DB : GO_DG | GO_DB;
            c.det = 1;
            gn_run(&c);
        }
}

/* 5. Data: constant sets (variance 0; NONE also at +-1e38 and more, where
   the sums of x pass FLT_MAX), |mean| >> std, epsilon 1e-12 and 10,
   gamma 0, -0 or subnormal (every form: DST_RSTD takes xhat = 0 there), gamma
   too small to be folded into the coefficients next to large ones. */
static void gn_data(void) {
    static const int64_t sp[2] = {5, 6};
    int lay, f, k;
    for (lay = 0; lay < 2; ++lay)
        for (f = 0; f < 5; ++f)
            for (k = 0; k < T_NCOMBOS; k += 2) {
                gn_cfg c;
                nbwd_layout L = lay ? NBWD_NCX : NBWD_NXC;
                gn_defaults(&c);
                gn_shape(&c, L, 3, 6, (k / 2) % 2 ? 3 : 6, 2, sp);
                c.form = (nbwd_stats_form)f;
                gn_combo(&c, k);
                c.data = GD_CONSTANT;
                gn_run(&c);
                if (c.dt != NBWD_F16 && c.sdt != NBWD_F16) { /* (f16 holds no such x or mean) */
                    /* sets constant at +-1e38: |mean| * rstd passes FLT_MAX,
                       and NCX planes of 30 end in a partial vector, whose
                       lanes past the plane would have an infinite xhat
                       (such planes must run elsewhere) */
                    gn_cfg h = c;
                    h.data = GD_CONSTANT_HUGE;
                    h.seed = ++g_gseed;
                    gn_run(&h);
                }
                if (c.sdt == NBWD_F32) {
                    c.data = GD_BIG_MEAN;
                    c.seed = ++g_gseed;
                    gn_run(&c);
                }
                c.data = GD_ZERO_GAMMA;
                c.seed = ++g_gseed;
                gn_run(&c);
                if (f != NBWD_STATS_DST_RSTD) { /* (a tiny gamma leaves no xhat in dst: not that form) */
                    c.data = GD_TINY_GAMMA;
                    c.seed = ++g_gseed;
                    gn_run(&c);
                }
                if (!g_quick || k == 0) {
                    c.data = GD_NORMAL;
                    c.form = f == NBWD_STATS_NONE ? NBWD_STATS_NONE : NBWD_STATS_MEAN_VARIANCE;
                    c.eps = f % 2 ? 1e-12f : 10.0f;
                    c.seed = ++g_gseed;
                    gn_run(&c);
                }
            }
    for (lay = 0; lay < 2; ++lay) /* zero gamma with threads (NXC: every channel through the gain) */
        for (k = 0; k < 2; ++k) {
            gn_cfg c;
            static const int64_t sp1[1] = {40};
            gn_defaults(&c);
            gn_shape(&c, lay ? NBWD_NCX : NBWD_NXC, 4, 20, k ? 20 : 4, 1, sp1);
            c.data = k ? GD_TINY_GAMMA : GD_ZERO_GAMMA;
            c.threads = 3;
            c.det = 1;
            gn_run(&c);
        }
}

/* 6. Empty tensors: N = 0, a spatial dim 0, C = 0 (diff_gamma/diff_beta 0,
   or unchanged when accumulating; NULL pointers for tensors without
   elements); and one-element sets (InstanceNorm of one position): xhat = 0,
   so diff_gamma is exactly 0, diff_src 0 (within its tolerance) and
   diff_beta the sum of diff_dst. */
static void gn_degenerate(void) {
    int lay, acc, nul, k;
    for (lay = 0; lay < 2; ++lay)
        for (acc = 0; acc < 2; ++acc)
            for (nul = 0; nul < 2; ++nul) {
                static const int64_t sp[2] = {5, 3}, z[2] = {4, 0};
                nbwd_layout L = lay ? NBWD_NCX : NBWD_NXC;
                gn_cfg c;
                gn_defaults(&c);
                gn_shape(&c, L, 0, 6, 3, 2, sp); /* N = 0 */
                c.accumulate = acc;
                c.null_empty = nul;
                c.form = (nbwd_stats_form)((lay + 2 * acc + nul) % 5);
                gn_run(&c);
                gn_shape(&c, L, 3, 6, 2, 2, z); /* a spatial dim 0 */
                c.seed = ++g_gseed;
                gn_run(&c);
                gn_shape(&c, L, 3, 0, 1 + nul, 2, sp); /* C = 0 (any groups divides it) */
                c.seed = ++g_gseed;
                gn_run(&c);
                gn_shape(&c, L, 0, 4, 4, 0, NULL); /* [0, C] */
                c.seed = ++g_gseed;
                gn_run(&c);
            }
    for (lay = 0; lay < 2; ++lay)
        for (k = 0; k < T_NCOMBOS; ++k) {
            nbwd_group_norm_bwd_desc d;
            nbwd_group_norm_bwd_args a;
            int64_t dims[3], C = 6, N = 2, sd[2], i, n;
            t_buf bx, bdy, bdx, bm, bv, bg, bdg, bdb;
            t_rng rng;
            nbwd_status s;
            int zdx = 1, zdg = 1, dbok = 1;
            dims[0] = N; dims[1] = lay ? C : 1; dims[2] = lay ? 1 : C;
            sd[0] = N; sd[1] = C;
            t_case("GN one-element sets (InstanceNorm, spatial 1): zeros, %s dt=%s/%s/%s isa %s",
                   lay ? "NCX" : "NXC", t_dtype_name(t_combos[k].dt), t_dtype_name(t_combos[k].sdt),
                   t_dtype_name(t_combos[k].pdt), nbwd_isa_name(g_test_isa));
            t_rng_seed(&rng, ++g_gseed);
            if (!t_buf_alloc(&bx, 3, dims, NULL, t_combos[k].dt) || !t_buf_alloc(&bdy, 3, dims, NULL, t_combos[k].dt) ||
                !t_buf_alloc(&bdx, 3, dims, NULL, t_combos[k].dt) || !t_buf_alloc(&bm, 2, sd, NULL, t_combos[k].sdt) ||
                !t_buf_alloc(&bv, 2, sd, NULL, t_combos[k].sdt) || !t_buf_alloc(&bg, 1, &C, NULL, t_combos[k].pdt) ||
                !t_buf_alloc(&bdg, 1, &C, NULL, t_combos[k].pdt) || !t_buf_alloc(&bdb, 1, &C, NULL, t_combos[k].pdt))
                gn_oom();
            t_buf_fill_normal(&bdy, &rng, 0.0, 1.0);
            for (i = 0; i < N * C; ++i) { /* x representable in both dtypes: mean = x exactly */
                double x = t_round_to(t_combos[k].sdt, t_buf_set(&bx, i, 2.0 * t_rng_normal(&rng)));
                t_buf_set(&bx, i, x);
                t_buf_set(&bm, i, x);
                t_buf_set(&bv, i, 0.0);
            }
            for (i = 0; i < C; ++i) t_buf_set(&bg, i, 0.5 + (double)i);
            nbwd_group_norm_bwd_desc_init(&d, 3, dims, lay ? NBWD_NCX : NBWD_NXC, C, 1e-5f);
            d.data_dtype = t_combos[k].dt; d.stats_dtype = t_combos[k].sdt; d.param_dtype = t_combos[k].pdt;
            d.isa = g_test_isa;
            memset(&a, 0, sizeof a);
            a.src = bx.base; a.diff_dst = bdy.base; a.mean = bm.base; a.variance = bv.base; a.gamma = bg.base;
            a.diff_src = bdx.base; a.diff_gamma = bdg.base; a.diff_beta = bdb.base;
            s = nbwd_group_norm_bwd(&d, &a, NULL, 0);
            CHECK_STATUS(s, NBWD_OK);
            /* diff_src within its tolerance of 0 (S1 = rstd (|g| + |mean(g)|) = 2 rstd |dy gamma|),
               not exactly: NXC folds gamma into the coefficients, (dy - dy gamma / gamma) rstd gamma */
            for (i = 0; i < N * C; ++i) {
                double g = t_buf_get(&bdy, i) * t_buf_get(&bg, i % C), rstd = 1.0 / sqrt(1e-5);
                if (!t_within(t_combos[k].dt, t_buf_get(&bdx, i), 0.0, t_tol_dx(2.0 * rstd * fabs(g), 0.0, 1)))
                    zdx = 0;
            }
            for (i = 0; i < C; ++i) {
                double sum = 0.0;
                if (t_buf_get(&bdg, i) != 0.0) zdg = 0;
                for (n = 0; n < N; ++n) sum += t_buf_get(&bdy, n * C + i);
                if (!t_within(t_combos[k].pdt, t_buf_get(&bdb, i), sum, t_tol_param(fabs(sum) + 4.0, N, 0.0)))
                    dbok = 0;
            }
            CHECK(zdx, "one-element sets: diff_src must be 0 (within its tolerance)");
            CHECK(zdg, "one-element sets: diff_gamma must be exactly 0");
            CHECK(dbok, "one-element sets: diff_beta must be the sum of diff_dst over the batch");
            t_buf_free(&bx); t_buf_free(&bdy); t_buf_free(&bdx); t_buf_free(&bm); t_buf_free(&bv);
            t_buf_free(&bg); t_buf_free(&bdg); t_buf_free(&bdb);
        }
}

/* 7. Threads and large tensors: thread counts 1, 2, 3, 7 (the call's own
   and the bits of the others: gn_det), many sets and fewer sets than
   threads (NCX: planes and pieces over the threads), NCX planes of more than
   32768 elements (pieces), NXC samples of many row blocks, >= 2^20 elements. */
static void gn_large_threads(void) {
    static const int th[4] = {1, 2, 3, 7};
    static const int64_t sp1[1] = {300}, sp2[2] = {9, 13};
    int lay, t;
    for (lay = 0; lay < 2; ++lay)
        for (t = 0; t < 4; ++t) {
            gn_cfg c;
            nbwd_layout L = lay ? NBWD_NCX : NBWD_NXC;
            gn_defaults(&c);
            gn_shape(&c, L, t % 2 ? 1 : 12, 16, t % 2 ? 1 : 8, 1, sp1); /* 1 set, or 96 */
            c.threads = th[t];
            c.accumulate = t == 3;
            c.inplace = t == 1 ? GIP_DY : t == 2 ? GIP_X : GIP_NONE;
            c.strides = t == 3 ? GS_PADDED : GS_DENSE;
            c.dt = t % 2 ? NBWD_BF16 : NBWD_F32;
            c.form = (nbwd_stats_form)t;
            c.det = c.inplace == GIP_NONE;
            gn_run(&c);
            gn_shape(&c, L, 3, 12, t % 2 ? 12 : 3, 2, sp2); /* InstanceNorm / groups 3 */
            c.inplace = GIP_NONE;
            c.det = 1;
            c.seed = ++g_gseed;
            gn_run(&c);
        }
    { /* NCX planes in pieces: 1 sample x 2 channels x 40000 (quick), or
         2 x 8 x 300 x 300 = 1.44M elements (groups 2: 4 sets, fewer than
         2 x threads from 3 threads on) */
        static const int64_t big_ncx[2] = {300, 300}, mid_ncx[2] = {200, 200};
        gn_cfg c;
        gn_defaults(&c);
        if (g_quick) gn_shape(&c, NBWD_NCX, 1, 2, 1, 2, mid_ncx);
        else gn_shape(&c, NBWD_NCX, 2, 8, 2, 2, big_ncx);
        c.threads = 2;
        c.det = 1;
        c.form = NBWD_STATS_MEAN_RSTD;
        gn_run(&c);
        c.form = NBWD_STATS_NONE; /* the statistics from the planes in pieces too */
        c.threads = 3;
        c.seed = ++g_gseed;
        gn_run(&c);
        c.threads = 2;
        c.form = NBWD_STATS_MEAN_RSTD;
        if (!g_quick) { /* InstanceNorm, bf16, padded */
            gn_shape(&c, NBWD_NCX, 1, 3, 3, 2, mid_ncx);
            c.dt = c.pdt = NBWD_BF16;
            c.strides = GS_PADDED;
            c.form = NBWD_STATS_DST_RSTD;
            c.threads = 3;
            c.seed = ++g_gseed;
            gn_run(&c);
        }
    }
    { /* NXC: many rows per sample (rows of 8 channels: 4096 rows per block),
         2 x 256 x 256 x 8 = 2^20 elements; quick: 2 x 100 x 100 x 8 */
        static const int64_t big_nxc[2] = {256, 256}, mid_nxc[2] = {100, 100};
        gn_cfg c;
        gn_defaults(&c);
        gn_shape(&c, NBWD_NXC, 2, 8, 2, 2, g_quick ? mid_nxc : big_nxc);
        c.dt = NBWD_BF16;
        c.threads = 3;
        c.det = 1;
        gn_run(&c);
        { /* NONE: the samples' statistics in lanes (70 samples: more than the lanes) */
            static const int64_t sp_q[2] = {5, 7}, sp_f[2] = {20, 20};
            gn_shape(&c, NBWD_NXC, g_quick ? 40 : 70, g_quick ? 64 : 24, 8, 2, g_quick ? sp_q : sp_f);
        }
        c.form = NBWD_STATS_NONE;
        c.dt = NBWD_F32;
        c.data = GD_BIG_MEAN;
        c.seed = ++g_gseed;
        gn_run(&c);
        c.data = GD_NORMAL;
        c.form = NBWD_STATS_MEAN_VARIANCE;
        if (!g_quick) { /* wide channels: 64 x 1000 rows per sample, zero gamma (the gain) */
            static const int64_t sp[1] = {1000};
            gn_shape(&c, NBWD_NXC, 4, 64, 32, 1, sp);
            c.dt = NBWD_F16;
            c.data = GD_ZERO_GAMMA;
            c.form = NBWD_STATS_XHAT_STD;
            c.seed = ++g_gseed;
            gn_run(&c);
        }
    }
}

/* 8. NaN/Inf isolation: a bad value in one set's x (xhat, dst), diff_dst,
   mean or variance (rstd, std) changes that set's diff_src (all non-finite,
   or exactly 0 for a variance of +Inf) and the diff_gamma of its channel (a
   statistic: its group's channels; XHAT_STD and DST_RSTD: rstd or std does
   not reach xhat, so none) and diff_beta of its channel (diff_dst only);
   every other output keeps the bits of the clean call. */
enum { GN_BAD_X = 0, GN_BAD_DY = 1, GN_BAD_MEAN = 2, GN_BAD_SPREAD = 3 };
static void gn_nan_case(nbwd_layout L, nbwd_dtype dt, nbwd_stats_form form, int threads) {
    static const int64_t sp[2] = {4, 5};
    /* the bad values, in order: x NaN, x +Inf, dy NaN, dy -Inf, mean NaN, spread NaN, spread +Inf */
    static const int bad_where[7] = {GN_BAD_X, GN_BAD_X, GN_BAD_DY, GN_BAD_DY, GN_BAD_MEAN, GN_BAD_SPREAD,
                                     GN_BAD_SPREAD};
    gn_cfg c;
    gn_geo geo;
    t_buf bx, bdy, bm, bv, bg, bb, dx0, dg0, db0, dx1, dg1, db1;
    double *mean, *var, *xd;
    int64_t sd[2], e, s, i;
    int b;
    t_rng rng;
    nbwd_group_norm_bwd_desc d;
    nbwd_group_norm_bwd_args a;
    gn_defaults(&c);
    gn_shape(&c, L, 3, 6, 3, 2, sp);
    gn_geometry(c.rank, c.dims, L, c.groups, &geo);
    sd[0] = geo.N; sd[1] = geo.G;
    t_rng_seed(&rng, c.seed);
    if (!t_buf_alloc(&bx, c.rank, c.dims, NULL, dt) || !t_buf_alloc(&bdy, c.rank, c.dims, NULL, dt) ||
        !t_buf_alloc(&bm, 2, sd, NULL, NBWD_F32) || !t_buf_alloc(&bv, 2, sd, NULL, NBWD_F32) ||
        !t_buf_alloc(&bg, 1, &geo.C, NULL, NBWD_F32) || !t_buf_alloc(&bb, 1, &geo.C, NULL, NBWD_F32) ||
        !t_buf_alloc(&dx0, c.rank, c.dims, NULL, dt) || !t_buf_alloc(&dx1, c.rank, c.dims, NULL, dt) ||
        !t_buf_alloc(&dg0, 1, &geo.C, NULL, NBWD_F32) || !t_buf_alloc(&dg1, 1, &geo.C, NULL, NBWD_F32) ||
        !t_buf_alloc(&db0, 1, &geo.C, NULL, NBWD_F32) || !t_buf_alloc(&db1, 1, &geo.C, NULL, NBWD_F32))
        gn_oom();
    mean = (double *)t_xmalloc((size_t)(geo.N * geo.G) * sizeof(double));
    var = (double *)t_xmalloc((size_t)(geo.N * geo.G) * sizeof(double));
    xd = (double *)t_xmalloc((size_t)geo.total * sizeof(double));
    t_buf_fill_normal(&bx, &rng, 0.3, 1.2);
    t_buf_fill_normal(&bdy, &rng, 0.0, 1.0);
    for (i = 0; i < geo.C; ++i) {
        t_buf_set(&bg, i, 1.0 + 0.3 * t_rng_normal(&rng));
        t_buf_set(&bb, i, t_rng_normal(&rng));
    }
    {
        ref_tensor tx;
        tx.p = bx.base; tx.dt = dt; tx.strides = NULL;
        ref_group_norm_stats(c.rank, c.dims, L, c.groups, tx, mean, var);
    }
    if (form == NBWD_STATS_XHAT_STD || form == NBWD_STATS_DST_RSTD) {
        t_buf_to_dense(&bx, xd);
        for (e = 0; e < geo.total; ++e) {
            int64_t ch = gn_chan(&geo, L, e);
            s = gn_set(&geo, L, e);
            xd[e] = (xd[e] - mean[s]) / sqrt(var[s] + 1e-5);
            if (form == NBWD_STATS_DST_RSTD) xd[e] = xd[e] * t_buf_get(&bg, ch) + t_buf_get(&bb, ch);
        }
        t_buf_from_dense(&bx, xd);
    }
    for (s = 0; s < geo.N * geo.G; ++s) {
        t_buf_set(&bm, s, mean[s]);
        t_buf_set(&bv, s, form == NBWD_STATS_MEAN_VARIANCE ? var[s]
                          : form == NBWD_STATS_XHAT_STD    ? sqrt(var[s] + 1e-5)
                                                           : 1.0 / sqrt(var[s] + 1e-5));
    }
    nbwd_group_norm_bwd_desc_init(&d, c.rank, c.dims, L, c.groups, 1e-5f);
    d.stats_form = form;
    d.data_dtype = dt;
    d.num_threads = threads;
    d.isa = g_test_isa;
    memset(&a, 0, sizeof a);
    if (form == NBWD_STATS_XHAT_STD) a.xhat = bx.base;
    else if (form == NBWD_STATS_DST_RSTD) { a.dst = bx.base; a.beta = bb.base; }
    else a.src = bx.base;
    a.diff_dst = bdy.base;
    if (form == NBWD_STATS_MEAN_VARIANCE || form == NBWD_STATS_MEAN_RSTD) a.mean = bm.base;
    if (form == NBWD_STATS_MEAN_VARIANCE) a.variance = bv.base;
    else if (form == NBWD_STATS_XHAT_STD) a.std = bv.base;
    else if (form != NBWD_STATS_NONE) a.rstd = bv.base;
    a.gamma = bg.base;
    a.diff_src = dx0.base; a.diff_gamma = dg0.base; a.diff_beta = db0.base;
    t_case("GN NaN/Inf isolation: the clean call (%s %s %s threads %d isa %s)", L == NBWD_NCX ? "NCX" : "NXC",
           t_dtype_name(dt), t_form_name(form), threads, nbwd_isa_name(g_test_isa));
    CHECK_STATUS(nbwd_group_norm_bwd(&d, &a, NULL, 0), NBWD_OK);
    for (b = 0; b < 7; ++b) {
        /* the bad value: x and diff_dst at sample 1, channel 3 (group 1),
           spatial position 7; statistics of sample 1, group 2 (channels 4, 5) */
        int where = bad_where[b];
        double bad_v = b == 1 || b == 6 ? INFINITY : b == 3 ? -INFINITY : NAN;
        int64_t n = 1, ch = where <= GN_BAD_DY ? 3 : 4, g = ch / geo.Cg, at;
        int inf_var = where == GN_BAD_SPREAD && isinf(bad_v);
        int dx_ok = 1, dg_ok = 1, db_ok = 1;
        double keep;
        t_buf *tb = where == GN_BAD_X ? &bx : where == GN_BAD_DY ? &bdy : where == GN_BAD_MEAN ? &bm : &bv;
        if ((where == GN_BAD_MEAN && !a.mean) || (where == GN_BAD_SPREAD && form == NBWD_STATS_NONE)) continue;
        if (inf_var && form != NBWD_STATS_MEAN_VARIANCE) continue;
        if (where <= GN_BAD_DY)
            at = L == NBWD_NCX ? (n * geo.C + ch) * geo.S + 7 : (n * geo.S + 7) * geo.C + ch;
        else
            at = n * geo.G + g;
        t_case("GN NaN/Inf isolation: %s = %g at [%lld] (%s %s %s threads %d isa %s)",
               where == GN_BAD_X ? "x" : where == GN_BAD_DY ? "diff_dst" : where == GN_BAD_MEAN ? "mean" : "spread",
               bad_v, (long long)at, L == NBWD_NCX ? "NCX" : "NXC", t_dtype_name(dt), t_form_name(form), threads,
               nbwd_isa_name(g_test_isa));
        keep = t_buf_get(tb, at);
        t_buf_set(tb, at, bad_v);
        memset(dx1.alloc, T_CANARY, dx1.alloc_bytes);
        a.diff_src = dx1.base; a.diff_gamma = dg1.base; a.diff_beta = db1.base;
        CHECK_STATUS(nbwd_group_norm_bwd(&d, &a, NULL, 0), NBWD_OK);
        a.diff_src = dx0.base; a.diff_gamma = dg0.base; a.diff_beta = db0.base;
        t_buf_set(tb, at, keep);
        for (e = 0; e < geo.total; ++e) {
            double v0 = t_buf_get(&dx0, e), v1 = t_buf_get(&dx1, e);
            if (gn_set(&geo, L, e) == n * geo.G + g) {
                if (inf_var ? v1 != 0.0 : isfinite(v1)) dx_ok = 0;
            } else if (memcmp(&v0, &v1, sizeof v0) != 0) {
                dx_ok = 0;
            }
        }
        for (i = 0; i < geo.C; ++i) {
            double g0 = t_buf_get(&dg0, i), g1 = t_buf_get(&dg1, i), b0 = t_buf_get(&db0, i), b1 = t_buf_get(&db1, i);
            /* a statistic reaches xhat only in the mean forms (XHAT_STD: xhat given, DST_RSTD: from dst);
               NONE: a bad x makes its set's statistics non-finite */
            int dg_hit = where == GN_BAD_X && form == NBWD_STATS_NONE ? i / geo.Cg == g
                         : where <= GN_BAD_DY                    ? i == ch
                                                                 : a.mean && i / geo.Cg == g;
            int db_hit = where == GN_BAD_DY && i == ch;
            if (dg_hit ? (inf_var ? !isfinite(g1) : isfinite(g1)) : memcmp(&g0, &g1, sizeof g0) != 0) dg_ok = 0;
            if (db_hit ? isfinite(b1) : memcmp(&b0, &b1, sizeof b0) != 0) db_ok = 0;
        }
        CHECK(dx_ok, "diff_src: the set of the bad value must be all %s and every other element keep its bits",
              inf_var ? "0" : "non-finite");
        CHECK(dg_ok, "diff_gamma: the affected channels must be %s and the others keep their bits",
              inf_var ? "finite" : "non-finite");
        CHECK(db_ok, "diff_beta: only a bad diff_dst's channel may change (to non-finite)");
    }
    free(mean); free(var); free(xd);
    t_buf_free(&bx); t_buf_free(&bdy); t_buf_free(&bm); t_buf_free(&bv); t_buf_free(&bg); t_buf_free(&bb);
    t_buf_free(&dx0); t_buf_free(&dx1); t_buf_free(&dg0); t_buf_free(&dg1); t_buf_free(&db0); t_buf_free(&db1);
}

static void gn_nan(void) {
    int lay, f, k;
    for (lay = 0; lay < 2; ++lay)
        for (f = 0; f < 5; ++f)
            for (k = 0; k < 3; ++k) {
                if (g_quick && k == 2) continue;
                gn_nan_case(lay ? NBWD_NCX : NBWD_NXC, k == 1 ? NBWD_BF16 : k == 2 ? NBWD_F16 : NBWD_F32,
                            (nbwd_stats_form)f, k == 0 && f % 2 ? 2 : 1);
            }
}

/* NBWD_STATS_NONE, the manual's range: a set whose squared deviations add
   up past FLT_MAX has no fp32 statistics; its diff_src comes out 0 or NaN,
   and every other set's diff_src keeps its bits (those of the same call
   with that set in range), diff_beta too. NCX and NXC. */
static void gn_none_range(void) {
    static const int64_t sp[2] = {4, 5};
    int lay;
    for (lay = 0; lay < 2; ++lay) {
        const nbwd_layout L = lay ? NBWD_NCX : NBWD_NXC;
        const int64_t bad_set = 4; /* sample 1, group 1 */
        gn_cfg c;
        gn_geo geo;
        t_buf bx, bdy, bg, dx[2], dg, db[2];
        t_rng rng;
        int64_t e;
        long bad = 0, moved = 0;
        int k;
        gn_defaults(&c);
        gn_shape(&c, L, 3, 6, 3, 2, sp);
        gn_geometry(c.rank, c.dims, L, c.groups, &geo);
        t_case("GN NONE, set %lld with |x - mean| ~ 1e30: %s 3x6x4x5/3 f32", (long long)bad_set, lay ? "NCX" : "NXC");
        t_rng_seed(&rng, c.seed);
        if (!t_buf_alloc(&bx, c.rank, c.dims, NULL, NBWD_F32) || !t_buf_alloc(&bdy, c.rank, c.dims, NULL, NBWD_F32) ||
            !t_buf_alloc(&bg, 1, &geo.C, NULL, NBWD_F32) || !t_buf_alloc(&dx[0], c.rank, c.dims, NULL, NBWD_F32) ||
            !t_buf_alloc(&dx[1], c.rank, c.dims, NULL, NBWD_F32) || !t_buf_alloc(&dg, 1, &geo.C, NULL, NBWD_F32) ||
            !t_buf_alloc(&db[0], 1, &geo.C, NULL, NBWD_F32) || !t_buf_alloc(&db[1], 1, &geo.C, NULL, NBWD_F32))
            gn_oom();
        t_buf_fill_normal(&bx, &rng, 0.3, 1.2);
        t_buf_fill_normal(&bdy, &rng, 0.0, 1.0);
        t_buf_fill_normal(&bg, &rng, 1.0, 0.3);
        for (k = 0; k < 2; ++k) { /* k = 0: the set out of range; 1: in range */
            nbwd_group_norm_bwd_desc d;
            nbwd_group_norm_bwd_args a;
            for (e = 0; e < geo.total; ++e)
                if (gn_set(&geo, L, e) == bad_set)
                    t_buf_set(&bx, e, k == 0 ? (e & 1 ? 1e30 : -1e30) * (1.0 + 0.01 * (double)(e % 13))
                                             : 0.25 * (double)(e % 7));
            nbwd_group_norm_bwd_desc_init(&d, c.rank, c.dims, L, c.groups, 1e-5f);
            d.stats_form = NBWD_STATS_NONE;
            d.isa = g_test_isa;
            memset(&a, 0, sizeof a);
            a.src = bx.base; a.diff_dst = bdy.base; a.gamma = bg.base;
            a.diff_src = dx[k].base; a.diff_gamma = dg.base; a.diff_beta = db[k].base;
            CHECK_STATUS(nbwd_group_norm_bwd(&d, &a, NULL, 0), NBWD_OK);
        }
        for (e = 0; e < geo.total; ++e) {
            const double v0 = t_buf_get(&dx[0], e), v1 = t_buf_get(&dx[1], e);
            if (gn_set(&geo, L, e) == bad_set) {
                if (!(v0 == 0.0 || isnan(v0))) ++bad;
            } else if (memcmp(&v0, &v1, sizeof v0) != 0) {
                ++moved;
            }
        }
        CHECK(bad == 0, "the out-of-range set: %ld of %lld dx elements are neither 0 nor NaN", bad, (long long)geo.K);
        CHECK(moved == 0, "%ld dx elements of other sets changed with the out-of-range set", moved);
        CHECK(memcmp(db[0].base, db[1].base, (size_t)geo.C * 4) == 0, "diff_beta changed with the out-of-range set");
        CHECK(t_buf_canary_ok(&dx[0]), "dx written outside its elements");
        t_buf_free(&bx); t_buf_free(&bdy); t_buf_free(&bg); t_buf_free(&dx[0]); t_buf_free(&dx[1]);
        t_buf_free(&dg); t_buf_free(&db[0]); t_buf_free(&db[1]);
    }
}

void test_group_norm(void) {
    static const struct { const char *name; void (*fn)(void); } parts[] = {
        {"full cross", gn_full_cross}, {"shapes", gn_shapes},       {"strides", gn_strides},
        {"in-place/accumulate", gn_inplace_accumulate},             {"data", gn_data},
        {"degenerate", gn_degenerate}, {"large/threads", gn_large_threads}, {"NaN/Inf isolation", gn_nan},
        {"none range", gn_none_range},
    };
    int k;
    for (k = 0; k < (int)(sizeof parts / sizeof parts[0]); ++k) {
        double t0 = t_now();
        parts[k].fn();
        if (g_verbose) printf("  group_norm %s: %.2f s\n", parts[k].name, t_now() - t0);
    }
}
