/* test_batch_norm.c - the BatchNorm training backward matrix against the
   float64 reference: NCX and NXC, ranks 2..5, every stats form and dtype
   combination, gamma present/absent, diff_gamma+diff_beta present/absent
   (absent: gamma is ignored), diff_src absent, strided (padded, negative)
   tensors, in-place, accumulate, channel counts 1..64, spatial sizes 1..3136,
   a >= 2^20 element case, degenerate N = 0, C = 0, N * spatial = 1,
   frozen (global) statistics, the two-phase calls (the batch split into
   slices: reduce per slice, the sums added, apply per slice), and the fused
   ReLU (NBWD_FUSE_RELU, NBWD_FUSE_ADD_RELU: diff_dst masked by dst > 0),
   also with diff_dst strided inside its NCX spatial dims. */
#include "nbwd_test.h"

enum { B_DENSE = 0, B_PADDED = 1, B_NEGATIVE = 2 };
/* BD_CONSTANT_HUGE: every channel constant at +-1e38 to 3.3e38 (|mean| * rstd
   past FLT_MAX with epsilon 1e-5) */
enum { BD_NORMAL = 0, BD_CONSTANT = 1, BD_BIG_MEAN = 2, BD_CONSTANT_HUGE = 3 };
enum { BIP_NONE = 0, BIP_DY = 1, BIP_X = 2 };
/* the fused ReLU's in-place forms: diff_src_add is diff_dst or dst; diff_src is dst */
enum { BRA_NONE = 0, BRA_ADD_DY = 1, BRA_ADD_DST = 2, BRA_DX_DST = 3 };
/* NCX diff_dst strided inside the spatial dims (the fused ReLU reads it
   elementwise): an innermost stride of 2, or rows W + 3 elements apart */
enum { BDS_NONE = 0, BDS_INNER2 = 1, BDS_PITCH = 2 };

typedef struct bn_cfg {
    int rank;
    int64_t dims[NBWD_MAX_RANK];
    nbwd_layout layout;
    nbwd_stats_form form;
    nbwd_dtype dt, sdt, pdt;
    int gamma;  /* pass gamma */
    int params; /* request diff_gamma and diff_beta */
    int want_dx;
    int strides;
    int inplace;
    int accumulate;
    int global_stats; /* NBWD_USE_GLOBAL_STATS */
    float eps;
    int data;
    int threads;
    int caller_ws;
    int null_empty;
    int split; /* > 1: the batch in that many slices through reduce and apply */
    unsigned relu;  /* 0, NBWD_FUSE_RELU or NBWD_FUSE_ADD_RELU */
    int relu_alias; /* BRA_* */
    int dy_spatial; /* BDS_* (NCX, with the fused ReLU; not with inplace, relu_alias or split) */
    uint64_t seed;
} bn_cfg;

static void bn_defaults(bn_cfg *c) {
    memset(c, 0, sizeof *c);
    c->layout = NBWD_NCX;
    c->form = NBWD_STATS_MEAN_VARIANCE;
    c->dt = c->sdt = c->pdt = NBWD_F32;
    c->gamma = c->params = c->want_dx = 1;
    c->eps = 1e-5f;
    c->seed = 1;
}

static void bn_set_dims(bn_cfg *c, int rank, const int64_t *d) {
    int k;
    c->rank = rank;
    for (k = 0; k < rank; ++k) c->dims[k] = d[k];
}

static int bn_cdim(const bn_cfg *c) { return c->layout == NBWD_NCX ? 1 : c->rank - 1; }

/* A tensor's slice of batch entries from n0: the same strides, dims[0]
   smaller. */
static const void *bn_slice(const void *base, const int64_t *st, int64_t n0, nbwd_dtype dt) {
    return base ? (const char *)base + n0 * (st ? st[0] : 0) * (int64_t)(dt == NBWD_F32 ? 4 : 2) : NULL;
}

/* The batch split into c->split slices (as processes would hold it): reduce
   on each, the f32 sums and counts added, then apply on each. Each slice but
   the last writes diff_gamma/diff_beta into a copy of its own (as each
   process has one), checked against the reference here; the last into
   args' own, checked by the caller. */
static nbwd_status bn_split_call(const bn_cfg *c, const nbwd_batch_norm_bwd_desc *desc,
                                 const nbwd_batch_norm_bwd_args *args, const t_buf *bdg, const t_buf *bdb,
                                 const double *rdg, const double *rdg_tol, const double *rdb, const double *rdb_tol,
                                 int64_t M) {
    int64_t C = desc->dims[desc->layout == NBWD_NCX ? 1 : desc->rank - 1], N = desc->dims[0], Cn = C > 0 ? C : 1;
    int64_t count = 0, part_count, i, dense[NBWD_MAX_RANK];
    float *sdy = (float *)t_xmalloc((size_t)Cn * 4), *sdyx = (float *)t_xmalloc((size_t)Cn * 4);
    float *pdy = (float *)t_xmalloc((size_t)Cn * 4), *pdyx = (float *)t_xmalloc((size_t)Cn * 4);
    nbwd_status st = NBWD_OK;
    int k, phase;
    int d;
    /* strides of the slices: desc's, or dense over the whole batch */
    dense[desc->rank - 1] = 1;
    for (d = desc->rank - 2; d >= 0; --d) dense[d] = dense[d + 1] * desc->dims[d + 1];
    for (i = 0; i < C; ++i) sdy[i] = sdyx[i] = 0.0f;
    for (phase = 0; phase < 2 && st == NBWD_OK; ++phase)
        for (k = 0; k < c->split && st == NBWD_OK; ++k) {
            int64_t n0 = N * k / c->split, n1 = N * (k + 1) / c->split;
            nbwd_batch_norm_bwd_desc sd = *desc;
            nbwd_batch_norm_bwd_args sa = *args;
            const int64_t *sx = desc->src_strides ? desc->src_strides : dense;
            const int64_t *sy = desc->diff_dst_strides ? desc->diff_dst_strides : dense;
            const int64_t *sdx = desc->diff_src_strides ? desc->diff_src_strides : dense;
            const int64_t *sdst = desc->dst_strides ? desc->dst_strides : dense;
            const int64_t *sadd = desc->diff_src_add_strides ? desc->diff_src_add_strides : dense;
            t_buf own_dg, own_db;
            size_t bytes = 0;
            void *ws = NULL;
            sd.dims[0] = n1 - n0;
            sd.src_strides = sx; sd.diff_dst_strides = sy; sd.diff_src_strides = sdx;
            sd.dst_strides = sdst; sd.diff_src_add_strides = sadd;
            sa.src = bn_slice(args->src, sx, n0, desc->data_dtype);
            sa.xhat = bn_slice(args->xhat, sx, n0, desc->data_dtype);
            sa.diff_dst = bn_slice(args->diff_dst, sy, n0, desc->data_dtype);
            sa.diff_src = (void *)bn_slice(args->diff_src, sdx, n0, desc->data_dtype);
            sa.dst = bn_slice(args->dst, sdst, n0, desc->data_dtype);
            sa.diff_src_add = (void *)bn_slice(args->diff_src_add, sadd, n0, desc->data_dtype);
            if (c->caller_ws) { /* deliberately misaligned */
                CHECK_STATUS(nbwd_batch_norm_bwd_workspace_size(&sd, &bytes), NBWD_OK);
                ws = (char *)t_xmalloc(bytes + 8) + 4;
            }
            if (phase == 0) {
                sa.diff_src = sa.diff_gamma = sa.diff_beta = NULL; /* diff_src_add stays: both phases write it */
                st = nbwd_batch_norm_bwd_reduce(&sd, &sa, pdy, pdyx, &part_count, ws, bytes);
                if (ws) free((char *)ws - 4);
                CHECK(part_count == (n1 - n0) * (N > 0 ? M / N : 0), "reduce: count %lld for %lld batch entries",
                      (long long)part_count, (long long)(n1 - n0));
                count += part_count;
                for (i = 0; i < C; ++i) {
                    sdy[i] += pdy[i];
                    sdyx[i] += pdyx[i];
                }
                continue;
            }
            if (k < c->split - 1 && args->diff_gamma) {
                if (!t_buf_alloc(&own_dg, 1, &C, bdg->strides, bdg->dt) ||
                    !t_buf_alloc(&own_db, 1, &C, bdb->strides, bdb->dt)) {
                    fprintf(stderr, "out of memory\n");
                    exit(2);
                }
                for (i = 0; i < C; ++i) {
                    t_buf_set(&own_dg, i, t_buf_get(bdg, i));
                    t_buf_set(&own_db, i, t_buf_get(bdb, i));
                }
                sa.diff_gamma = own_dg.base;
                sa.diff_beta = own_db.base;
            }
            st = nbwd_batch_norm_bwd_apply(&sd, &sa, sdy, sdyx, count, ws, bytes);
            if (ws) free((char *)ws - 4);
            if (k < c->split - 1 && args->diff_gamma) {
                if (st == NBWD_OK) {
                    T_COMPARE_BUF("diff_gamma (an earlier slice's)", &own_dg, rdg, rdg_tol);
                    T_COMPARE_BUF("diff_beta (an earlier slice's)", &own_db, rdb, rdb_tol);
                }
                t_buf_free(&own_dg);
                t_buf_free(&own_db);
            }
        }
    CHECK(st != NBWD_OK || count == M, "the slices' counts add up to %lld, not %lld", (long long)count, (long long)M);
    free(sdy); free(sdyx); free(pdy); free(pdyx);
    return st;
}

/* diff_dst's strides for c->dy_spatial: an innermost stride of 2
   (BDS_INNER2) or a row pitch of W + 3 (BDS_PITCH), the N and C strides
   padded by one element more in strided layouts (as t_padded_strides) */
static void bn_dy_spatial_strides(const bn_cfg *c, int64_t *st) {
    int64_t s = c->dy_spatial == BDS_INNER2 ? 2 : 1;
    int d;
    for (d = c->rank - 1; d >= 0; --d) {
        st[d] = s;
        s *= c->dims[d] > 0 ? c->dims[d] : 1;
        if (d == c->rank - 1 && c->dy_spatial == BDS_PITCH) s += 3;
        if (d <= 2 && c->strides) s += 1;
    }
}

/* The same call on a dense copy of diff_dst (into outputs of the same
   strides, diff_gamma/diff_beta holding the same previous values) must
   give every output's bits: the library promises them for any strides. */
static int bn_dense_dy_bits(const bn_cfg *c, const nbwd_batch_norm_bwd_desc *desc,
                            const nbwd_batch_norm_bwd_args *args, const t_buf *bdy, const t_buf *pdx, const t_buf *bdg,
                            const t_buf *bdb, const t_buf *padd, const double *prev_dg, const double *prev_db) {
    nbwd_batch_norm_bwd_desc d2 = *desc;
    nbwd_batch_norm_bwd_args a2 = *args;
    t_buf ddy, dx2, dg2, db2, add2;
    int64_t e, C = bdg->dims[0];
    size_t esz = t_esize(c->dt);
    int ok = 1;
    memset(&dx2, 0, sizeof dx2);
    memset(&add2, 0, sizeof add2);
    if (!t_buf_alloc(&ddy, c->rank, c->dims, NULL, c->dt) || !t_buf_alloc(&dg2, 1, &C, bdg->strides, bdg->dt) ||
        !t_buf_alloc(&db2, 1, &C, bdb->strides, bdb->dt) ||
        (pdx && !t_buf_alloc(&dx2, c->rank, c->dims, pdx->strides, c->dt)) ||
        (padd && !t_buf_alloc(&add2, c->rank, c->dims, padd->strides, c->dt))) {
        fprintf(stderr, "out of memory\n");
        exit(2);
    }
    for (e = 0; e < ddy.count; ++e) /* the bits, element by element */
        memcpy(ddy.base + t_buf_offset(&ddy, e) * (int64_t)esz, bdy->base + t_buf_offset(bdy, e) * (int64_t)esz, esz);
    for (e = 0; e < C && c->accumulate; ++e) {
        t_buf_set(&dg2, e, prev_dg[e]);
        t_buf_set(&db2, e, prev_db[e]);
    }
    d2.diff_dst_strides = ddy.strides;
    a2.diff_dst = ddy.base;
    if (a2.diff_src) a2.diff_src = dx2.base;
    if (a2.diff_gamma) { a2.diff_gamma = dg2.base; a2.diff_beta = db2.base; }
    if (a2.diff_src_add) a2.diff_src_add = add2.base;
    ok &= CHECK_STATUS(nbwd_batch_norm_bwd(&d2, &a2, NULL, 0), NBWD_OK);
    if (pdx) ok &= CHECK(t_buf_same_bytes(pdx, &dx2), "diff_src: not the bits of the call on a dense diff_dst");
    ok &= CHECK(t_buf_same_bytes(bdg, &dg2) && t_buf_same_bytes(bdb, &db2),
                "diff_gamma/diff_beta: not the bits of the call on a dense diff_dst");
    if (padd) ok &= CHECK(t_buf_same_bytes(padd, &add2), "diff_src_add: not the bits of the call on a dense diff_dst");
    t_buf_free(&ddy); t_buf_free(&dg2); t_buf_free(&db2);
    if (dx2.alloc) t_buf_free(&dx2);
    if (add2.alloc) t_buf_free(&add2);
    return ok;
}

static int bn_run(const bn_cfg *c) {
    char dims[128];
    int d, k = 0, cd = bn_cdim(c), ok = 1;
    int64_t C = c->dims[cd], total = 1, M, i, e;
    int64_t st_x[NBWD_MAX_RANK], st_dy[NBWD_MAX_RANK], st_dx[NBWD_MAX_RANK];
    int64_t st_dst[NBWD_MAX_RANK], st_add[NBWD_MAX_RANK];
    int dense_from = c->layout == NBWD_NCX ? 2 : c->rank - 1;
    t_buf bx, bdy, bdx, bm, bv, bg, bdg, bdb, *pdx = NULL;
    t_buf bdst, badd, bmasked, *padd = NULL; /* the fused ReLU's dst, diff_src_add, masked dy (dense) */
    double *mean, *var, *rdx = NULL, *rdx_tol = NULL, *rdg, *rdg_tol, *rdb, *rdb_tol, *prev_dg, *prev_db;
    double *masked = NULL, *zero_tol = NULL;
    t_snap s_x, s_dy, s_m, s_v, s_g, s_dg, s_db, s_dst;
    t_rng rng;
    ref_out ro;
    ref_tensor tx, tdy, tm, tv, tg;
    nbwd_batch_norm_bwd_desc desc;
    nbwd_batch_norm_bwd_args args;
    nbwd_status st;
    void *ws = NULL;
    size_t ws_bytes = 0;
    long fails0 = g_fail, allocs0, frees0;
    int64_t Cn = C > 0 ? C : 1, cst[5] = {1, 1, 1, 1, 1}; /* mean, spread, gamma, diff_gamma, diff_beta */

    dims[0] = 0;
    for (d = 0; d < c->rank; ++d) {
        k += snprintf(dims + k, sizeof dims - (size_t)k, "%s%lld", d ? "x" : "", (long long)c->dims[d]);
        total *= c->dims[d];
    }
    M = C > 0 ? total / C : 0;
    t_case("BN %s dims=%s form=%s dt=%s/%s/%s gamma=%d params=%d dx=%d strides=%d inplace=%d acc=%d global=%d eps=%g "
           "data=%d threads=%d ws=%d split=%d relu=%u/%d dy_spatial=%d seed=%llu isa=%s",
           c->layout == NBWD_NCX ? "NCX" : "NXC", dims, t_form_name(c->form), t_dtype_name(c->dt),
           t_dtype_name(c->sdt), t_dtype_name(c->pdt), c->gamma, c->params, c->want_dx, c->strides, c->inplace,
           c->accumulate, c->global_stats, (double)c->eps, c->data, c->threads, c->caller_ws, c->split, c->relu,
           c->relu_alias, c->dy_spatial, (unsigned long long)c->seed, nbwd_isa_name(g_test_isa));
    t_rng_seed(&rng, c->seed);

    /* strides: the dense block is the spatial dims (NCX) or C (NXC); with
       rank 2 NCX there is no spatial dim, so C itself may be strided */
    t_padded_strides(c->rank, c->dims, dense_from, c->strides ? 3 : 0, st_x);
    t_padded_strides(c->rank, c->dims, dense_from, c->strides ? 1 : 0, st_dy);
    t_padded_strides(c->rank, c->dims, dense_from, c->strides ? 2 : 0, st_dx);
    if (c->dy_spatial) bn_dy_spatial_strides(c, st_dy);
    if (c->strides == B_NEGATIVE) { /* an outer dim of each input runs backwards */
        int nd = c->layout == NBWD_NCX || c->rank > 2 ? 1 : 0; /* NCX: C; NXC: the first spatial dim */
        st_x[0] = -st_x[0];
        st_dy[nd] = -st_dy[nd];
    }
    if (c->inplace == BIP_DY) memcpy(st_dx, st_dy, sizeof st_dx);
    if (c->inplace == BIP_X) memcpy(st_dx, st_x, sizeof st_dx);
    /* the [C] tensors: strided layouts give each a stride of its own
       (negative for gamma and diff_beta in the B_NEGATIVE layout) */
    if (c->strides) {
        int neg = c->strides == B_NEGATIVE ? -1 : 1;
        cst[0] = 2; cst[1] = 3; cst[2] = 4 * neg; cst[3] = 2; cst[4] = 3 * neg;
    }
    if (!t_buf_alloc(&bx, c->rank, c->dims, st_x, c->dt) || !t_buf_alloc(&bdy, c->rank, c->dims, st_dy, c->dt) ||
        !t_buf_alloc(&bm, 1, &C, &cst[0], c->sdt) || !t_buf_alloc(&bv, 1, &C, &cst[1], c->sdt) ||
        !t_buf_alloc(&bg, 1, &C, &cst[2], c->pdt) || !t_buf_alloc(&bdg, 1, &C, &cst[3], c->pdt) ||
        !t_buf_alloc(&bdb, 1, &C, &cst[4], c->pdt)) {
        fprintf(stderr, "out of memory\n");
        exit(2);
    }
    /* dst has no dense block when strided (it may not), unless it doubles
       as an output; diff_src_add has padding of its own */
    memset(&bdst, 0, sizeof bdst);
    memset(&badd, 0, sizeof badd);
    memset(&bmasked, 0, sizeof bmasked);
    if (c->relu) {
        int out_alias = c->relu_alias == BRA_ADD_DST || c->relu_alias == BRA_DX_DST;
        t_padded_strides(c->rank, c->dims, c->strides && !out_alias ? c->rank : dense_from, c->strides ? 2 : 0,
                         st_dst);
        if (c->relu_alias == BRA_DX_DST) memcpy(st_dst, st_dx, sizeof st_dst);
        t_padded_strides(c->rank, c->dims, dense_from, c->strides ? 5 : 0, st_add);
        if (!t_buf_alloc(&bdst, c->rank, c->dims, st_dst, c->dt) || !t_buf_alloc(&bmasked, c->rank, c->dims, NULL, c->dt)) {
            fprintf(stderr, "out of memory\n");
            exit(2);
        }
        if (c->relu == NBWD_FUSE_ADD_RELU) {
            if (c->relu_alias == BRA_ADD_DY) padd = &bdy;
            else if (c->relu_alias == BRA_ADD_DST) padd = &bdst;
            else {
                if (!t_buf_alloc(&badd, c->rank, c->dims, st_add, c->dt)) { fprintf(stderr, "out of memory\n"); exit(2); }
                padd = &badd;
            }
        }
    }
    memset(&bdx, 0, sizeof bdx);
    if (c->want_dx) {
        if (c->relu_alias == BRA_DX_DST) pdx = &bdst;
        else if (c->inplace == BIP_DY) pdx = &bdy;
        else if (c->inplace == BIP_X) pdx = &bx;
        else {
            if (!t_buf_alloc(&bdx, c->rank, c->dims, st_dx, c->dt)) { fprintf(stderr, "out of memory\n"); exit(2); }
            pdx = &bdx;
        }
    }

    /* inputs */
    mean = (double *)t_xmalloc((size_t)Cn * sizeof(double));
    var = (double *)t_xmalloc((size_t)Cn * sizeof(double));
    if (c->data == BD_CONSTANT || c->data == BD_CONSTANT_HUGE) {
        for (i = 0; i < C; ++i)
            mean[i] = c->data == BD_CONSTANT ? t_rng_uniform(&rng, -2.0, 2.0)
                                             : (i % 2 ? -1e38 : 1e38) * t_rng_uniform(&rng, 1.0, 3.3);
        for (e = 0; e < total; ++e) {
            int64_t ch = c->layout == NBWD_NCX ? (e / (M / (c->dims[0] > 0 ? c->dims[0] : 1))) % C : e % C;
            t_buf_set(&bx, e, mean[ch]);
        }
    } else if (c->data == BD_BIG_MEAN) {
        t_buf_fill_normal(&bx, &rng, c->dt == NBWD_F16 ? 1000.0 : 1e4,
                          c->dt == NBWD_F32 ? 0.01 : c->dt == NBWD_F16 ? 5.0 : 500.0);
    } else {
        t_buf_fill_normal(&bx, &rng, -0.2, 1.3);
    }
    t_buf_fill_normal(&bdy, &rng, 0.1, 1.0);
    if (c->relu) { /* dst: zeros, -0, negatives, NaN, +infinity, subnormal and normal positives */
        double *dyd = (double *)t_xmalloc((size_t)(total > 0 ? total : 1) * sizeof(double));
        double tiny = c->dt == NBWD_F16 ? 1e-6 : 1e-39;
        masked = (double *)t_xmalloc((size_t)(total > 0 ? total : 1) * sizeof(double));
        zero_tol = (double *)t_xmalloc((size_t)(total > 0 ? total : 1) * sizeof(double));
        t_buf_to_dense(&bdy, dyd);
        for (e = 0; e < total; ++e) {
            double u = t_rng_uniform(&rng, 0.0, 1.0), v;
            v = u < 0.3 ? 0.0 : u < 0.35 ? -0.0 : u < 0.45 ? -fabs(t_rng_normal(&rng)) : u < 0.47 ? NAN
                : u < 0.48 ? INFINITY : u < 0.5 ? tiny : fabs(t_rng_normal(&rng)) + 0.01;
            v = t_buf_set(&bdst, e, v);
            masked[e] = v > 0.0 ? dyd[e] : 0.0;
            zero_tol[e] = 0.0;
        }
        t_buf_from_dense(&bmasked, masked);
        free(dyd);
    }
    for (i = 0; i < C; ++i) t_buf_set(&bg, i, 1.0 + 0.5 * t_rng_normal(&rng));
    tx.p = bx.base; tx.dt = c->dt; tx.strides = bx.strides;
    ref_batch_norm_stats(c->rank, c->dims, c->layout, tx, mean, var);
    if (c->form == NBWD_STATS_XHAT_STD && total > 0) {
        double *xd = (double *)t_xmalloc((size_t)total * sizeof(double));
        int64_t S = c->dims[0] > 0 && C > 0 ? total / (c->dims[0] * C) : 1;
        t_buf_to_dense(&bx, xd);
        for (e = 0; e < total; ++e) {
            int64_t ch = c->layout == NBWD_NCX ? (e / S) % C : e % C;
            xd[e] = (xd[e] - mean[ch]) / sqrt(var[ch] + (double)c->eps);
        }
        t_buf_from_dense(&bx, xd);
        free(xd);
    }
    for (i = 0; i < C; ++i) {
        double spread = c->form == NBWD_STATS_MEAN_VARIANCE ? var[i]
                        : c->form == NBWD_STATS_MEAN_RSTD   ? 1.0 / sqrt(var[i] + (double)c->eps)
                                                            : sqrt(var[i] + (double)c->eps);
        if (c->form != NBWD_STATS_XHAT_STD) t_buf_set(&bm, i, mean[i]);
        t_buf_set(&bv, i, spread);
    }
    prev_dg = (double *)t_xmalloc((size_t)Cn * sizeof(double));
    prev_db = (double *)t_xmalloc((size_t)Cn * sizeof(double));
    for (i = 0; i < C; ++i) {
        prev_dg[i] = prev_db[i] = 0.0;
        if (c->accumulate) {
            prev_dg[i] = t_buf_set(&bdg, i, t_rng_normal(&rng));
            prev_db[i] = t_buf_set(&bdb, i, t_rng_normal(&rng));
        }
    }

    /* reference: gamma applies only when diff_gamma/diff_beta are requested */
    memset(&ro, 0, sizeof ro);
    if (c->want_dx) {
        rdx = ro.dx = (double *)t_xmalloc((size_t)(total > 0 ? total : 1) * sizeof(double));
        rdx_tol = ro.dx_tol = (double *)t_xmalloc((size_t)(total > 0 ? total : 1) * sizeof(double));
    }
    rdg = ro.dg = (double *)t_xmalloc((size_t)Cn * sizeof(double));
    rdg_tol = ro.dg_tol = (double *)t_xmalloc((size_t)Cn * sizeof(double));
    rdb = ro.db = (double *)t_xmalloc((size_t)Cn * sizeof(double));
    rdb_tol = ro.db_tol = (double *)t_xmalloc((size_t)Cn * sizeof(double));
    tdy.p = c->relu ? bmasked.base : bdy.base; tdy.dt = c->dt; tdy.strides = c->relu ? bmasked.strides : bdy.strides;
    tm.p = bm.base; tm.dt = c->sdt; tm.strides = bm.strides;
    tv.p = bv.base; tv.dt = c->sdt; tv.strides = bv.strides;
    tg.p = c->gamma && c->params ? bg.base : NULL; tg.dt = c->pdt; tg.strides = bg.strides;
    if (c->global_stats)
        ref_batch_norm_bwd_global(c->rank, c->dims, c->layout, c->form, (double)c->eps, tx, tdy, tm, tv, tg, ro);
    else
        ref_batch_norm_bwd(c->rank, c->dims, c->layout, c->form, (double)c->eps, tx, tdy, tm, tv, tg, ro);
    for (i = 0; i < C; ++i) {
        rdg[i] += prev_dg[i];
        rdb[i] += prev_db[i];
        rdg_tol[i] += 2.0 * T_U * fabs(prev_dg[i]);
        rdb_tol[i] += 2.0 * T_U * fabs(prev_db[i]);
    }

    nbwd_batch_norm_bwd_desc_init(&desc, c->rank, c->dims, c->layout, c->eps);
    desc.stats_form = c->form;
    desc.data_dtype = c->dt;
    desc.stats_dtype = c->sdt;
    desc.param_dtype = c->pdt;
    desc.flags = (c->accumulate ? NBWD_ACCUMULATE_PARAM_GRADS : 0u) | (c->global_stats ? NBWD_USE_GLOBAL_STATS : 0u) |
                 c->relu;
    desc.num_threads = c->threads;
    desc.isa = g_test_isa;
    if (c->strides || c->inplace || c->dy_spatial) {
        desc.src_strides = bx.strides;
        desc.diff_dst_strides = bdy.strides;
        desc.diff_src_strides = pdx ? pdx->strides : NULL;
        desc.mean_strides = &cst[0];
        desc.var_strides = &cst[1];
        desc.gamma_strides = &cst[2];
        desc.diff_gamma_strides = &cst[3];
        desc.diff_beta_strides = &cst[4];
    }
    if (c->relu) {
        desc.dst_strides = bdst.strides;
        desc.diff_src_add_strides = padd ? padd->strides : NULL;
    }
    memset(&args, 0, sizeof args);
    {
        int ne = c->null_empty && total == 0, nc = c->null_empty && C == 0;
        if (c->form == NBWD_STATS_XHAT_STD) args.xhat = ne ? NULL : bx.base;
        else args.src = ne ? NULL : bx.base;
        args.diff_dst = ne ? NULL : bdy.base;
        if (c->form != NBWD_STATS_XHAT_STD) args.mean = nc ? NULL : bm.base;
        if (c->form == NBWD_STATS_MEAN_VARIANCE) args.variance = nc ? NULL : bv.base;
        else if (c->form == NBWD_STATS_MEAN_RSTD) args.rstd = nc ? NULL : bv.base;
        else args.std = nc ? NULL : bv.base;
        if (c->gamma) args.gamma = nc ? NULL : bg.base;
        args.diff_src = pdx && !ne ? pdx->base : NULL;
        if (c->params) {
            args.diff_gamma = nc ? NULL : bdg.base;
            args.diff_beta = nc ? NULL : bdb.base;
        }
        if (c->relu) args.dst = ne ? NULL : bdst.base;
        if (padd) args.diff_src_add = ne ? NULL : padd->base;
    }
    s_x = t_snap_take(&bx); s_dy = t_snap_take(&bdy); s_m = t_snap_take(&bm); s_v = t_snap_take(&bv);
    s_g = t_snap_take(&bg); s_dg = t_snap_take(&bdg); s_db = t_snap_take(&bdb);
    if (c->relu) s_dst = t_snap_take(&bdst);
    else memset(&s_dst, 0, sizeof s_dst);
    allocs0 = t_hook_allocs();
    frees0 = t_hook_frees();
    if (c->split > 1) {
        st = bn_split_call(c, &desc, &args, &bdg, &bdb, rdg, rdg_tol, rdb, rdb_tol, M);
    } else if (c->caller_ws) {
        st = nbwd_batch_norm_bwd_workspace_size(&desc, &ws_bytes);
        CHECK_STATUS(st, NBWD_OK);
        ws = t_xmalloc(ws_bytes + 8);
        st = nbwd_batch_norm_bwd(&desc, &args, (char *)ws + 4, ws_bytes); /* deliberately misaligned */
    } else {
        st = nbwd_batch_norm_bwd(&desc, &args, NULL, 0);
    }
    ok &= CHECK_STATUS(st, NBWD_OK);
    ok &= CHECK(t_hook_allocs() - allocs0 == t_hook_frees() - frees0,
                "the call allocated %ld blocks and freed %ld", t_hook_allocs() - allocs0, t_hook_frees() - frees0);
    if (c->caller_ws)
        ok &= CHECK(t_hook_allocs() == allocs0, "the call allocated %ld blocks although given a workspace",
                    t_hook_allocs() - allocs0);
    if (c->relu == NBWD_FUSE_ADD_RELU && !c->want_dx && !c->params) /* the mask pass alone */
        ok &= CHECK(t_hook_allocs() == allocs0, "diff_src_add alone allocated %ld blocks",
                    t_hook_allocs() - allocs0);
    if (st == NBWD_OK) {
        if (c->want_dx && total > 0) ok &= T_COMPARE_BUF("diff_src", pdx, rdx, rdx_tol);
        if (c->params) {
            ok &= T_COMPARE_BUF("diff_gamma", &bdg, rdg, rdg_tol);
            ok &= T_COMPARE_BUF("diff_beta", &bdb, rdb, rdb_tol);
        } else {
            int same = 1;
            if (c->accumulate) {
                for (i = 0; i < C; ++i)
                    if (t_buf_get(&bdg, i) != prev_dg[i] || t_buf_get(&bdb, i) != prev_db[i]) same = 0;
            } else {
                same = t_snap_same(&s_dg, &bdg) && t_snap_same(&s_db, &bdb);
            }
            ok &= CHECK(same, "diff_gamma/diff_beta not requested but written");
        }
        if (pdx) ok &= CHECK(t_buf_canary_ok(pdx), "diff_src: a byte outside its elements was written");
        ok &= CHECK(t_buf_canary_ok(&bdg) && t_buf_canary_ok(&bdb),
                    "diff_gamma/diff_beta: a byte outside their elements was written");
        if (padd && total > 0) {
            ok &= T_COMPARE_BUF("diff_src_add (the masked diff_dst, exactly)", padd, masked, zero_tol);
            ok &= CHECK(t_buf_canary_ok(padd), "diff_src_add: a byte outside its elements was written");
        }
        if (c->relu && c->relu_alias != BRA_ADD_DST && c->relu_alias != BRA_DX_DST)
            ok &= CHECK(t_snap_same(&s_dst, &bdst), "dst was modified");
        if (c->inplace != BIP_X) ok &= CHECK(t_snap_same(&s_x, &bx), "src/xhat was modified");
        if (c->inplace != BIP_DY && c->relu_alias != BRA_ADD_DY)
            ok &= CHECK(t_snap_same(&s_dy, &bdy), "diff_dst was modified");
        ok &= CHECK(t_snap_same(&s_m, &bm) && t_snap_same(&s_v, &bv) && t_snap_same(&s_g, &bg),
                    "statistics or gamma were modified");
        if (c->dy_spatial) ok &= bn_dense_dy_bits(c, &desc, &args, &bdy, pdx, &bdg, &bdb, padd, prev_dg, prev_db);
    }
    if (ws) free(ws);
    t_snap_free(&s_x); t_snap_free(&s_dy); t_snap_free(&s_m); t_snap_free(&s_v); t_snap_free(&s_g);
    t_snap_free(&s_dg); t_snap_free(&s_db); t_snap_free(&s_dst);
    free(masked); free(zero_tol);
    if (bdst.alloc) t_buf_free(&bdst);
    if (badd.alloc) t_buf_free(&badd);
    if (bmasked.alloc) t_buf_free(&bmasked);
    free(mean); free(var); free(rdx); free(rdx_tol); free(rdg); free(rdg_tol); free(rdb); free(rdb_tol);
    free(prev_dg); free(prev_db);
    t_buf_free(&bx); t_buf_free(&bdy); t_buf_free(&bm); t_buf_free(&bv); t_buf_free(&bg); t_buf_free(&bdg);
    t_buf_free(&bdb);
    if (bdx.alloc) t_buf_free(&bdx);
    return ok && g_fail == fails0;
}

static uint64_t g_bseed = 5000;

/* NCX dims from N, C and the spatial dims; NXC puts C last. */
static void bn_shape(bn_cfg *c, nbwd_layout layout, int64_t N, int64_t C, int nsp, const int64_t *sp) {
    int64_t d[NBWD_MAX_RANK];
    int k;
    d[0] = N;
    if (layout == NBWD_NCX) {
        d[1] = C;
        for (k = 0; k < nsp; ++k) d[2 + k] = sp[k];
    } else {
        for (k = 0; k < nsp; ++k) d[1 + k] = sp[k];
        d[1 + nsp] = C;
    }
    c->layout = layout;
    bn_set_dims(c, 2 + nsp, d);
}

/* 1. layout x form x dtype combo x gamma x params x diff_src, fully crossed. */
static void bn_full_cross(void) {
    int lay, f, k, g, p, dx;
    static const int64_t sp[2] = {4, 5};
    for (lay = 0; lay < 2; ++lay)
        for (f = 0; f < 3; ++f)
            for (k = 0; k < T_NCOMBOS; ++k)
                for (g = 0; g < 2; ++g)
                    for (p = 0; p < 2; ++p)
                        for (dx = 0; dx < 2; ++dx) {
                            bn_cfg c;
                            bn_defaults(&c);
                            bn_shape(&c, lay ? NBWD_NCX : NBWD_NXC, 2, 3, 2, sp);
                            c.form = (nbwd_stats_form)f;
                            c.dt = t_combos[k].dt; c.sdt = t_combos[k].sdt; c.pdt = t_combos[k].pdt;
                            c.gamma = g;
                            c.params = p;
                            c.want_dx = dx;
                            c.strides = (f + k) % 2;
                            c.seed = ++g_bseed;
                            bn_run(&c);
                        }
}

/* 2. Ranks 2..5, C = 1, 3, 16, 64, spatial 1 .. 3136, both layouts. */
static void bn_shapes(void) {
    static const int64_t Cs[4] = {1, 3, 16, 64};
    static const int64_t sp1[4] = {1, 7, 17, 65};
    static const int64_t sp2[3][2] = {{7, 9}, {56, 56}, {1, 13}};
    static const int64_t sp3[3] = {3, 4, 5};
    int lay, ci, v, idx = 0;
    for (lay = 0; lay < 2; ++lay)
        for (ci = 0; ci < 4; ++ci) {
            nbwd_layout L = lay ? NBWD_NCX : NBWD_NXC;
            for (v = 0; v < 9; ++v) {
                bn_cfg c;
                int k = (idx * 5) % T_NCOMBOS;
                ++idx;
                if (g_quick && idx % 3) continue;
                bn_defaults(&c);
                if (v == 0) bn_shape(&c, L, 37, Cs[ci], 0, NULL);
                else if (v <= 4) bn_shape(&c, L, 3, Cs[ci], 1, &sp1[v - 1]);
                else if (v <= 7) {
                    if (v == 6 && Cs[ci] > 16) continue; /* 56x56 with C <= 16 */
                    bn_shape(&c, L, v == 6 ? 2 : 3, Cs[ci], 2, sp2[v - 5]);
                } else bn_shape(&c, L, 2, Cs[ci], 3, sp3);
                c.form = (nbwd_stats_form)(idx % 3);
                c.dt = t_combos[k].dt; c.sdt = t_combos[k].sdt; c.pdt = t_combos[k].pdt;
                c.gamma = idx % 4 != 3;
                c.strides = idx % 3 == 1;
                c.caller_ws = idx % 5 == 2;
                c.seed = ++g_bseed;
                bn_run(&c);
            }
        }
}

/* 3. Strides: padding on N and C (NCX) or N and spatial (NXC), negative
   input strides, NCX rank 2 with a strided C (no spatial block). */
static void bn_strides(void) {
    int lay, s, f, k;
    static const int64_t sp[2] = {3, 8};
    for (lay = 0; lay < 2; ++lay)
        for (s = B_PADDED; s <= B_NEGATIVE; ++s)
            for (f = 0; f < 3; ++f)
                for (k = 0; k < T_NCOMBOS; k += 4) {
                    bn_cfg c;
                    bn_defaults(&c);
                    bn_shape(&c, lay ? NBWD_NCX : NBWD_NXC, 3, 5, 2, sp);
                    c.strides = s;
                    c.form = (nbwd_stats_form)f;
                    c.dt = t_combos[k].dt; c.sdt = t_combos[k].sdt; c.pdt = t_combos[k].pdt;
                    c.seed = ++g_bseed;
                    bn_run(&c);
                }
    for (lay = 0; lay < 2; ++lay) { /* [N, C]: NCX has no spatial dims, so C's stride is an outer stride */
        bn_cfg c;
        bn_defaults(&c);
        bn_shape(&c, lay ? NBWD_NCX : NBWD_NXC, 19, 6, 0, NULL);
        c.strides = B_PADDED;
        c.seed = ++g_bseed;
        bn_run(&c);
    }
}

/* 4. In-place and accumulate. */
static void bn_inplace_accumulate(void) {
    int lay, ip, k, acc;
    static const int64_t sp[1] = {33};
    for (lay = 0; lay < 2; ++lay)
        for (ip = 0; ip <= BIP_X; ++ip)
            for (acc = 0; acc < 2; ++acc)
                for (k = 0; k < T_NCOMBOS; k += 2) {
                    bn_cfg c;
                    if (ip == BIP_NONE && !acc) continue;
                    bn_defaults(&c);
                    bn_shape(&c, lay ? NBWD_NCX : NBWD_NXC, 5, 4, 1, sp);
                    c.inplace = ip;
                    c.accumulate = acc;
                    c.strides = k % 4 == 0 ? B_PADDED : B_DENSE;
                    c.form = (nbwd_stats_form)((k / 2 + ip) % 3);
                    c.dt = t_combos[k].dt; c.sdt = t_combos[k].sdt; c.pdt = t_combos[k].pdt;
                    c.seed = ++g_bseed;
                    bn_run(&c);
                }
}

/* 5. Data: zero variance channels, |mean| >> std, tiny and large epsilon. */
static void bn_data(void) {
    int lay, f, k;
    static const int64_t sp[2] = {5, 6};
    for (lay = 0; lay < 2; ++lay)
        for (f = 0; f < 3; ++f)
            for (k = 0; k < T_NCOMBOS; k += 2) {
                bn_cfg c;
                bn_defaults(&c);
                bn_shape(&c, lay ? NBWD_NCX : NBWD_NXC, 4, 3, 2, sp);
                c.data = BD_CONSTANT;
                c.form = (nbwd_stats_form)f;
                c.dt = t_combos[k].dt; c.sdt = t_combos[k].sdt; c.pdt = t_combos[k].pdt;
                c.seed = ++g_bseed;
                bn_run(&c);
                if (c.dt != NBWD_F16 && c.sdt != NBWD_F16) { /* (f16 holds no such x or mean) */
                    /* NCX planes of 30 end in a partial vector, whose lanes
                       past the plane would have an infinite xhat (such
                       planes must run elsewhere) */
                    c.data = BD_CONSTANT_HUGE;
                    c.seed = ++g_bseed;
                    bn_run(&c);
                }
                if (c.sdt == NBWD_F32) {
                    c.data = BD_BIG_MEAN;
                    c.seed = ++g_bseed;
                    bn_run(&c);
                }
                c.data = BD_NORMAL;
                c.form = NBWD_STATS_MEAN_VARIANCE;
                c.eps = f == 0 ? 1e-12f : 10.0f;
                c.seed = ++g_bseed;
                bn_run(&c);
            }
}

/* 6. Degenerate: N = 0, C = 0, N * spatial = 1. */
static void bn_degenerate(void) {
    int lay, acc, nul;
    for (lay = 0; lay < 2; ++lay)
        for (acc = 0; acc < 2; ++acc)
            for (nul = 0; nul < 2; ++nul) {
                bn_cfg c;
                static const int64_t sp[1] = {5};
                bn_defaults(&c);
                bn_shape(&c, lay ? NBWD_NCX : NBWD_NXC, 0, 3, 1, sp); /* N = 0 */
                c.accumulate = acc;
                c.null_empty = nul;
                c.seed = ++g_bseed;
                bn_run(&c);
                bn_shape(&c, lay ? NBWD_NCX : NBWD_NXC, 4, 0, 1, sp); /* C = 0 */
                c.seed = ++g_bseed;
                bn_run(&c);
                {
                    static const int64_t z[1] = {0}; /* spatial size 0 */
                    bn_shape(&c, lay ? NBWD_NCX : NBWD_NXC, 4, 3, 1, z);
                    c.seed = ++g_bseed;
                    bn_run(&c);
                }
            }
    /* M = N * spatial = 1: xhat = 0, so dx = 0 and diff_gamma = 0 exactly */
    for (lay = 0; lay < 2; ++lay) {
        int k;
        for (k = 0; k < T_NCOMBOS; ++k) {
            nbwd_batch_norm_bwd_desc d;
            nbwd_batch_norm_bwd_args a;
            int64_t dims[4], C = 6, i;
            t_buf bx, bdy, bdx, bm, bv, bg, bdg, bdb;
            t_rng rng;
            nbwd_status s;
            int zdx = 1, zdg = 1, dbok = 1;
            dims[0] = 1; dims[1] = lay ? C : 1; dims[2] = 1; dims[3] = lay ? 1 : C;
            t_case("BN M=1 exact zeros: %s 1x..x1 C=%lld dt=%s/%s/%s", lay ? "NCX" : "NXC", (long long)C,
                   t_dtype_name(t_combos[k].dt), t_dtype_name(t_combos[k].sdt), t_dtype_name(t_combos[k].pdt));
            t_rng_seed(&rng, ++g_bseed);
            t_buf_alloc(&bx, 4, dims, NULL, t_combos[k].dt);
            t_buf_alloc(&bdy, 4, dims, NULL, t_combos[k].dt);
            t_buf_alloc(&bdx, 4, dims, NULL, t_combos[k].dt);
            t_buf_alloc(&bm, 1, &C, NULL, t_combos[k].sdt);
            t_buf_alloc(&bv, 1, &C, NULL, t_combos[k].sdt);
            t_buf_alloc(&bg, 1, &C, NULL, t_combos[k].pdt);
            t_buf_alloc(&bdg, 1, &C, NULL, t_combos[k].pdt);
            t_buf_alloc(&bdb, 1, &C, NULL, t_combos[k].pdt);
            t_buf_fill_normal(&bdy, &rng, 0.0, 1.0);
            for (i = 0; i < C; ++i) {
                double x = t_round_to(t_combos[k].sdt, t_buf_set(&bx, i, 2.0 * t_rng_normal(&rng)));
                t_buf_set(&bx, i, x);
                t_buf_set(&bm, i, x);
                t_buf_set(&bv, i, 0.0);
                t_buf_set(&bg, i, 0.5 + (double)i);
            }
            nbwd_batch_norm_bwd_desc_init(&d, 4, dims, lay ? NBWD_NCX : NBWD_NXC, 1e-5f);
            d.data_dtype = t_combos[k].dt; d.stats_dtype = t_combos[k].sdt; d.param_dtype = t_combos[k].pdt;
            d.isa = g_test_isa;
            memset(&a, 0, sizeof a);
            a.src = bx.base; a.diff_dst = bdy.base; a.mean = bm.base; a.variance = bv.base; a.gamma = bg.base;
            a.diff_src = bdx.base; a.diff_gamma = bdg.base; a.diff_beta = bdb.base;
            s = nbwd_batch_norm_bwd(&d, &a, NULL, 0);
            CHECK_STATUS(s, NBWD_OK);
            for (i = 0; i < C; ++i) {
                if (t_buf_get(&bdx, i) != 0.0) zdx = 0;
                if (t_buf_get(&bdg, i) != 0.0) zdg = 0;
                if (!t_within(t_combos[k].pdt, t_buf_get(&bdb, i), t_buf_get(&bdy, i), 0.0)) dbok = 0;
            }
            CHECK(zdx, "M=1: diff_src must be exactly 0");
            CHECK(zdg, "M=1: diff_gamma must be exactly 0");
            CHECK(dbok, "M=1: diff_beta must equal diff_dst (rounded)");
            t_buf_free(&bx); t_buf_free(&bdy); t_buf_free(&bdx); t_buf_free(&bm); t_buf_free(&bv);
            t_buf_free(&bg); t_buf_free(&bdg); t_buf_free(&bdb);
        }
    }
}

/* 7. Thread counts and >= 2^20 elements. */
static void bn_large_threads(void) {
    static const int th[4] = {1, 2, 3, 5};
    static const int64_t sp[2] = {64, 64};
    static const int64_t sp_small[1] = {300};
    int t, lay;
    for (lay = 0; lay < 2; ++lay)
        for (t = 0; t < 4; ++t) {
            bn_cfg c;
            bn_defaults(&c);
            bn_shape(&c, lay ? NBWD_NCX : NBWD_NXC, 40, t % 2 ? 2 : 24, 1, sp_small);
            c.threads = th[t];
            c.accumulate = t == 3;
            c.inplace = t == 1 ? BIP_DY : t == 2 ? BIP_X : BIP_NONE;
            c.strides = t == 3 ? B_PADDED : B_DENSE;
            c.dt = t % 2 ? NBWD_BF16 : NBWD_F32;
            c.seed = ++g_bseed;
            bn_run(&c);
        }
    { /* wide channel counts (NXC column tails) and one long NCX plane */
        static const int64_t sp1[1] = {3}, plane[2] = {512, 513};
        bn_cfg c;
        int i;
        bn_defaults(&c);
        bn_shape(&c, NBWD_NXC, 7, 1000, 1, sp1);
        c.dt = NBWD_F16;
        c.seed = ++g_bseed;
        bn_run(&c);
        bn_shape(&c, NBWD_NXC, 3, 4097, 0, NULL);
        c.dt = NBWD_BF16;
        c.form = NBWD_STATS_MEAN_RSTD;
        c.seed = ++g_bseed;
        bn_run(&c);
        /* the channels' statistics and parameters are read and written 64
           at a time: several batches and a partial one, strided (negative
           for gamma and diff_beta), 16-bit, accumulated, through reduce +
           apply, and frozen */
        for (i = 0; i < 3; ++i) {
            static const int64_t Ns[3] = {5, 6, 4}, Cs[3] = {200, 150, 130};
            static const nbwd_dtype dts[3] = {NBWD_BF16, NBWD_F16, NBWD_F32};
            static const nbwd_stats_form forms[3] = {NBWD_STATS_XHAT_STD, NBWD_STATS_MEAN_RSTD,
                                                     NBWD_STATS_MEAN_VARIANCE};
            bn_defaults(&c);
            bn_shape(&c, i == 2 ? NBWD_NCX : NBWD_NXC, Ns[i], Cs[i], i ? 1 : 0, sp1);
            c.dt = c.sdt = c.pdt = dts[i];
            c.form = forms[i];
            c.strides = i == 0 ? B_NEGATIVE : B_PADDED;
            c.accumulate = i == 0;
            c.split = i == 1 ? 2 : 0;
            c.global_stats = i == 2;
            c.seed = ++g_bseed;
            bn_run(&c);
        }
        if (!g_quick) {
            bn_defaults(&c);
            bn_shape(&c, NBWD_NCX, 1, 3, 2, plane);
            c.seed = ++g_bseed;
            bn_run(&c);
        }
    }
    for (lay = 0; lay < 2; ++lay) {
        bn_cfg c;
        if (g_quick && lay) continue;
        bn_defaults(&c);
        bn_shape(&c, lay ? NBWD_NCX : NBWD_NXC, 4, 64, 2, sp); /* 2^20 elements */
        c.dt = lay ? NBWD_F32 : NBWD_BF16;
        c.pdt = c.dt;
        c.seed = ++g_bseed;
        bn_run(&c);
    }
}

/* 8. Global (frozen) statistics, NBWD_USE_GLOBAL_STATS: dx = dy * gamma *
   rstd in every layout, form and dtype combination, with and without
   diff_gamma/diff_beta (without: the one-pass path), strided, in place,
   accumulated, on two threads; and dx takes the same bits for another
   (finite) x. */
static void bn_global_x_free(nbwd_layout layout, int params) {
    int64_t dims[3] = {4, 3, 8}, total = 96, i;
    float x1[96], x2[96], dy[96], dx1[96], dx2[96], mean[8], var[8], gamma[8], dg[8], db[8];
    nbwd_batch_norm_bwd_desc d;
    nbwd_batch_norm_bwd_args a;
    t_rng rng;
    nbwd_status s1, s2;
    t_case("BN global statistics: dx does not depend on x (%s, params %d, isa %s)",
           layout == NBWD_NCX ? "NCX" : "NXC", params, nbwd_isa_name(g_test_isa));
    if (layout == NBWD_NCX) { dims[1] = 8; dims[2] = 3; }
    t_rng_seed(&rng, 77 + (uint64_t)params);
    for (i = 0; i < total; ++i) {
        x1[i] = (float)t_rng_normal(&rng);
        x2[i] = (float)(1e3 * t_rng_normal(&rng));
        dy[i] = (float)t_rng_normal(&rng);
    }
    for (i = 0; i < 8; ++i) {
        mean[i] = (float)t_rng_normal(&rng);
        var[i] = (float)t_rng_uniform(&rng, 0.1, 2.0);
        gamma[i] = (float)t_rng_uniform(&rng, 0.5, 1.5);
    }
    nbwd_batch_norm_bwd_desc_init(&d, 3, dims, layout, 1e-5f);
    d.flags = NBWD_USE_GLOBAL_STATS;
    d.isa = g_test_isa;
    memset(&a, 0, sizeof a);
    a.src = x1; a.diff_dst = dy; a.mean = mean; a.variance = var; a.gamma = gamma; a.diff_src = dx1;
    if (params) { a.diff_gamma = dg; a.diff_beta = db; }
    s1 = nbwd_batch_norm_bwd(&d, &a, NULL, 0);
    a.src = x2; a.diff_src = dx2;
    s2 = nbwd_batch_norm_bwd(&d, &a, NULL, 0);
    CHECK_STATUS(s1, NBWD_OK);
    CHECK_STATUS(s2, NBWD_OK);
    CHECK(memcmp(dx1, dx2, sizeof dx1) == 0, "diff_src changed with x under NBWD_USE_GLOBAL_STATS");
}

static void bn_global_stats(void) {
    int lay, f, k, p;
    static const int64_t sp2[2] = {4, 5}, sp1[1] = {300};
    for (lay = 0; lay < 2; ++lay)
        for (f = 0; f < 3; ++f)
            for (k = 0; k < T_NCOMBOS; ++k)
                for (p = 0; p < 2; ++p) {
                    bn_cfg c;
                    bn_defaults(&c);
                    bn_shape(&c, lay ? NBWD_NCX : NBWD_NXC, 3, 5, 2, sp2);
                    c.global_stats = 1;
                    c.params = p;
                    c.form = (nbwd_stats_form)f;
                    c.dt = t_combos[k].dt; c.sdt = t_combos[k].sdt; c.pdt = t_combos[k].pdt;
                    c.seed = ++g_bseed;
                    bn_run(&c);
                }
    for (lay = 0; lay < 2; ++lay)
        for (p = 0; p < 2; ++p) {
            bn_cfg c;
            bn_defaults(&c);
            bn_shape(&c, lay ? NBWD_NCX : NBWD_NXC, 8, 16, 1, sp1);
            c.global_stats = 1;
            c.params = p;
            c.strides = p ? B_PADDED : B_NEGATIVE;
            c.accumulate = p;
            c.threads = 2;
            c.seed = ++g_bseed;
            bn_run(&c);
            c.strides = B_DENSE;
            c.inplace = p ? BIP_X : BIP_DY;
            c.dt = NBWD_BF16;
            c.seed = ++g_bseed;
            bn_run(&c);
            bn_global_x_free(lay ? NBWD_NCX : NBWD_NXC, p);
        }
}

/* 9. The two-phase calls: the batch in 2 or 3 slices (an empty one where
   N < slices) through reduce and apply must match the float64 reference of
   the whole batch, in every layout, form and dtype combination, with
   strides, in place, accumulated, frozen statistics, threads and a caller's
   workspace. */
static void bn_two_phase(void) {
    int lay, f, k, v;
    static const int64_t sp2[2] = {3, 5}, sp1[1] = {700};
    for (lay = 0; lay < 2; ++lay)
        for (f = 0; f < 3; ++f)
            for (k = 0; k < T_NCOMBOS; ++k) {
                bn_cfg c;
                bn_defaults(&c);
                bn_shape(&c, lay ? NBWD_NCX : NBWD_NXC, 5, 6, 2, sp2);
                c.form = (nbwd_stats_form)f;
                c.dt = t_combos[k].dt; c.sdt = t_combos[k].sdt; c.pdt = t_combos[k].pdt;
                c.split = 2 + (k + f) % 2;
                c.seed = ++g_bseed;
                bn_run(&c);
            }
    for (lay = 0; lay < 2; ++lay)
        for (v = 0; v < 8; ++v) {
            bn_cfg c;
            bn_defaults(&c);
            bn_shape(&c, lay ? NBWD_NCX : NBWD_NXC, v == 7 ? 2 : 7, 19, 1, sp1);
            c.split = v % 2 ? 3 : 2;
            switch (v) {
            case 0: c.strides = B_PADDED; break;
            case 1: c.strides = B_NEGATIVE; c.dt = NBWD_BF16; break;
            case 2: c.inplace = BIP_DY; c.accumulate = 1; break;
            case 3: c.inplace = BIP_X; c.gamma = 0; break;
            case 4: c.global_stats = 1; c.threads = 2; break;
            case 5: c.params = 0; c.caller_ws = 1; c.threads = 2; break;
            case 6: c.want_dx = 0; c.accumulate = 1; c.dt = NBWD_F16; break;
            default: c.global_stats = 1; c.params = 0; break; /* N = 2 in 3 slices: one empty */
            }
            c.seed = ++g_bseed;
            bn_run(&c);
        }
    { /* [N, C] (no spatial dims), gathered channels: rank 2 */
        bn_cfg c;
        int64_t d2[2] = {33, 40};
        bn_defaults(&c);
        bn_set_dims(&c, 2, d2);
        c.layout = NBWD_NXC;
        c.split = 3;
        c.strides = B_PADDED;
        c.seed = ++g_bseed;
        bn_run(&c);
    }
}

/* 10. The fused ReLU: dx, diff_gamma and diff_beta of the masked diff_dst
   (against the float64 reference of the masked tensor), diff_src_add equal
   to it exactly; every layout, form, dtype combination, both flags, strided
   (dst without a dense block), in place, frozen statistics, two-phase,
   [N, C], threads; and the same bits as the plain call on a masked copy
   (channels: 0 C = 7; 1 C = 67, more than the narrow rows' 4 vectors on
   every path; 2 C = 80, where NXC rows of whole vectors wider than a
   path's narrow rows read dst in their first pass and keep the mask as
   bits, f32 and 16-bit data: avx2, avx512 and neon). */
#define BN_RELU_MAX 2400
static void bn_relu_bits(nbwd_layout layout, nbwd_dtype dt, unsigned flag, int threads, int channels) {
    int64_t dims[4] = {3, 6, 5, 7}, total = 630, i;
    /* on the heap: WASI's 64 KiB stack does not hold them */
    float *dy = (float *)t_xmalloc(7 * BN_RELU_MAX * sizeof(float)), *dst = dy + BN_RELU_MAX;
    float *masked = dst + BN_RELU_MAX, *x = masked + BN_RELU_MAX, *dx1 = x + BN_RELU_MAX, *dx2 = dx1 + BN_RELU_MAX;
    float *add = dx2 + BN_RELU_MAX;
    uint16_t *dy16 = (uint16_t *)t_xmalloc(3 * BN_RELU_MAX * sizeof(uint16_t)), *dst16 = dy16 + BN_RELU_MAX;
    uint16_t *m16 = dst16 + BN_RELU_MAX;
    float mean[80], var[80], gamma[80], dg1[80], db1[80], dg2[80], db2[80];
    nbwd_batch_norm_bwd_desc d;
    nbwd_batch_norm_bwd_args a;
    t_rng rng;
    nbwd_status s1, s2;
    int wide = dt == NBWD_F32, C = 7;
    size_t esz = wide ? 4 : 2;
    t_case("BN fused ReLU: the bits of the plain call on the masked diff_dst (%s, %s, flags 0x%x, threads %d, C %d, "
           "isa %s)",
           layout == NBWD_NCX ? "NCX" : "NXC", t_dtype_name(dt), flag, threads, channels == 1 ? 67 : channels ? 80 : 7,
           nbwd_isa_name(g_test_isa));
    if (channels) { /* N 2, spatial 3 x 5 */
        C = channels == 1 ? 67 : 80; total = 30 * C;
        dims[0] = 2; dims[1] = 3; dims[2] = 5; dims[3] = C;
    }
    if (layout == NBWD_NCX) { dims[1] = C; dims[3] = channels ? 3 : 6; }
    t_rng_seed(&rng, 91 + (uint64_t)flag + (uint64_t)threads);
    for (i = 0; i < total; ++i) {
        double u = t_rng_uniform(&rng, 0.0, 1.0);
        x[i] = (float)t_rng_normal(&rng);
        dy[i] = (float)t_rng_normal(&rng);
        dst[i] = u < 0.4 ? 0.0f : u < 0.45 ? -0.0f : u < 0.5 ? -1.0f : (float)t_rng_uniform(&rng, 0.01, 3.0);
        masked[i] = dst[i] > 0.0f ? dy[i] : 0.0f;
        dy16[i] = dt == NBWD_BF16 ? nbwd_f32_to_bf16(dy[i]) : nbwd_f32_to_f16(dy[i]);
        dst16[i] = dt == NBWD_BF16 ? nbwd_f32_to_bf16(dst[i]) : nbwd_f32_to_f16(dst[i]);
        m16[i] = dst[i] > 0.0f ? dy16[i] : 0;
        if (!wide) x[i] = dt == NBWD_BF16 ? nbwd_bf16_to_f32(nbwd_f32_to_bf16(x[i])) : x[i];
    }
    for (i = 0; i < C; ++i) {
        mean[i] = (float)(0.1 * t_rng_normal(&rng));
        var[i] = (float)t_rng_uniform(&rng, 0.5, 1.5);
        gamma[i] = (float)t_rng_uniform(&rng, 0.5, 1.5);
    }
    if (!wide) { /* x as 16-bit data too: reuse x's storage as the low halves */
        uint16_t *x16 = (uint16_t *)x;
        for (i = 0; i < total; ++i) x16[i] = dt == NBWD_BF16 ? nbwd_f32_to_bf16(x[i]) : nbwd_f32_to_f16(x[i]);
    }
    nbwd_batch_norm_bwd_desc_init(&d, 4, dims, layout, 1e-5f);
    d.data_dtype = dt;
    d.num_threads = threads;
    d.isa = g_test_isa;
    memset(&a, 0, sizeof a);
    a.src = x; a.mean = mean; a.variance = var; a.gamma = gamma;
    a.diff_gamma = dg1; a.diff_beta = db1; a.diff_src = dx1;
    a.diff_dst = wide ? (const void *)dy : (const void *)dy16;
    a.dst = wide ? (const void *)dst : (const void *)dst16;
    if (flag == NBWD_FUSE_ADD_RELU) a.diff_src_add = add;
    d.flags = flag;
    s1 = nbwd_batch_norm_bwd(&d, &a, NULL, 0);
    d.flags = 0;
    a.dst = NULL; a.diff_src_add = NULL;
    a.diff_dst = wide ? (const void *)masked : (const void *)m16;
    a.diff_gamma = dg2; a.diff_beta = db2; a.diff_src = dx2;
    s2 = nbwd_batch_norm_bwd(&d, &a, NULL, 0);
    CHECK_STATUS(s1, NBWD_OK);
    CHECK_STATUS(s2, NBWD_OK);
    CHECK(memcmp(dx1, dx2, (size_t)total * esz) == 0 && memcmp(dg1, dg2, (size_t)C * 4) == 0 &&
              memcmp(db1, db2, (size_t)C * 4) == 0,
          "the fused call's results differ from the plain call's on the masked diff_dst");
    if (flag == NBWD_FUSE_ADD_RELU)
        CHECK(memcmp(add, wide ? (const void *)masked : (const void *)m16, (size_t)total * esz) == 0,
              "diff_src_add is not the masked diff_dst, bit for bit");
    free(dy);
    free(dy16);
}

static void bn_fused_relu(void) {
    int lay, f, k, v, fl;
    static const int64_t sp2[2] = {4, 3}, sp1[1] = {500};
    static const unsigned flags[2] = {NBWD_FUSE_RELU, NBWD_FUSE_ADD_RELU};
    for (lay = 0; lay < 2; ++lay)
        for (f = 0; f < 3; ++f)
            for (k = 0; k < T_NCOMBOS; ++k)
                for (fl = 0; fl < 2; ++fl) {
                    bn_cfg c;
                    bn_defaults(&c);
                    bn_shape(&c, lay ? NBWD_NCX : NBWD_NXC, 3, 5, 2, sp2);
                    c.form = (nbwd_stats_form)f;
                    c.dt = t_combos[k].dt; c.sdt = t_combos[k].sdt; c.pdt = t_combos[k].pdt;
                    c.relu = flags[fl];
                    c.strides = (f + k + fl) % 3;
                    c.params = (k + fl) % 4 != 3;
                    c.seed = ++g_bseed;
                    bn_run(&c);
                }
    for (lay = 0; lay < 2; ++lay)
        for (v = 0; v < 12; ++v) {
            bn_cfg c;
            bn_defaults(&c);
            bn_shape(&c, lay ? NBWD_NCX : NBWD_NXC, v >= 10 ? 2 : 6, 9, 1, sp1);
            c.relu = v % 2 ? NBWD_FUSE_ADD_RELU : NBWD_FUSE_RELU;
            switch (v) {
            case 0: c.relu_alias = BRA_DX_DST; c.strides = B_PADDED; break;
            case 1: c.relu_alias = BRA_ADD_DY; c.dt = NBWD_BF16; break;
            case 2: c.global_stats = 1; c.params = 0; c.threads = 2; break;
            case 3: c.relu_alias = BRA_ADD_DST; c.strides = B_PADDED; c.accumulate = 1; break;
            case 4: c.inplace = BIP_DY; c.split = 3; c.dt = NBWD_F16; break;
            case 5: c.split = 2; c.strides = B_NEGATIVE; c.threads = 2; break;
            case 6: c.global_stats = 1; c.split = 2; c.caller_ws = 1; break;
            case 7: c.want_dx = 0; c.params = 0; break; /* diff_src_add alone */
            case 8: c.inplace = BIP_X; c.caller_ws = 1; c.threads = 2; break;
            case 9: c.relu_alias = BRA_DX_DST; c.split = 3; c.want_dx = 1; c.dt = NBWD_BF16; break;
            case 10: c.split = 3; break; /* N = 2 in 3 slices: one empty */
            default: c.split = 3; c.want_dx = 0; c.accumulate = 1; break;
            }
            c.seed = ++g_bseed;
            bn_run(&c);
        }
    for (k = 0; k < 6; ++k) { /* NXC rows wider than the narrow rows' 4 vectors (the kernels read dst) */
        bn_cfg c;
        bn_defaults(&c);
        bn_shape(&c, NBWD_NXC, 2, 67, 2, sp2);
        c.relu = NBWD_FUSE_RELU;
        c.dt = k % 3 == 0 ? NBWD_F32 : k % 3 == 1 ? NBWD_BF16 : NBWD_F16;
        c.form = (nbwd_stats_form)(k % 3);
        c.threads = 1 + k / 3;
        c.params = k != 4;
        c.inplace = k == 5 ? BIP_DY : c.inplace;
        c.seed = ++g_bseed;
        bn_run(&c);
    }
    for (k = 0; k < 44; ++k) { /* NXC rows that read dst in pass 1 and keep bits for pass 2 (avx2, neon: C 48,
                                  40; avx512: 64 KiB a tensor, case 10), f32, bf16 and f16 (widened dst); then
                                  add + ReLU in f32, whose pass 1 also writes diff_src_add (in place over
                                  diff_dst or dst in cases 0 and 1) */
        static const int64_t sp3[3] = {3, 2, 5}, sp8[2] = {8, 8};
        const nbwd_dtype dt = k < 11 || k >= 33 ? NBWD_F32 : k < 22 ? NBWD_BF16 : NBWD_F16;
        bn_cfg c;
        bn_defaults(&c);
        if (k % 11 == 8) {
            int64_t d2[2] = {33, 48};
            bn_set_dims(&c, 2, d2);
            c.layout = NBWD_NXC;
        } else if (k % 11 == 10) { /* 64 KiB a tensor: dx's non-temporal stores */
            bn_shape(&c, NBWD_NXC, dt == NBWD_F32 ? 4 : 8, 64, 2, sp8);
        } else {
            bn_shape(&c, NBWD_NXC, 2, k % 11 == 9 ? 40 : 48, k % 11 == 9 ? 3 : 2, k % 11 == 9 ? sp3 : sp2);
        }
        c.dt = dt;
        c.relu = k < 33 ? NBWD_FUSE_RELU : NBWD_FUSE_ADD_RELU;
        c.form = (nbwd_stats_form)(k % 3);
        c.threads = 1 + k % 2;
        if (k == 33) c.relu_alias = BRA_ADD_DY;
        if (k == 34) c.relu_alias = BRA_ADD_DST;
        switch (k % 11) {
        case 2: c.relu_alias = BRA_DX_DST; c.strides = B_PADDED; break; /* dst dense as diff_src, in place */
        case 3: c.inplace = BIP_DY; break;
        case 4: c.inplace = BIP_X; c.caller_ws = 1; break;
        case 5: c.global_stats = 1; break;         /* the sums still run: diff_gamma/diff_beta */
        case 6: c.params = 0; c.data = BD_BIG_MEAN; break;
        case 7: c.relu_alias = BRA_DX_DST; c.strides = B_NEGATIVE; break;
        case 9: c.relu_alias = BRA_DX_DST; c.strides = B_PADDED; c.caller_ws = 1; break; /* outer dims unmerged */
        default: break;
        }
        c.seed = ++g_bseed;
        bn_run(&c);
    }
    for (fl = 0; fl < 2; ++fl) { /* [N, C], gathered channels */
        bn_cfg c;
        int64_t d2[2] = {33, 40};
        bn_defaults(&c);
        bn_set_dims(&c, 2, d2);
        c.layout = NBWD_NXC;
        c.relu = flags[fl];
        c.split = fl ? 2 : 0;
        c.strides = B_PADDED;
        c.seed = ++g_bseed;
        bn_run(&c);
    }
    for (lay = 0; lay < 2; ++lay)
        for (k = 0; k < 3; ++k)
            for (fl = 0; fl < 2; ++fl)
                for (v = 0; v < 3; ++v)
                    bn_relu_bits(lay ? NBWD_NCX : NBWD_NXC, k == 0 ? NBWD_F32 : k == 1 ? NBWD_BF16 : NBWD_F16,
                                 flags[fl], 1 + fl, v);
}

/* 11. The fused ReLU on NCX with diff_dst strided inside its spatial dims
   (the mask reads diff_dst elementwise, with any strides; the staging of
   each block of channels' masked diff_dst takes diff_dst dense there only):
   an innermost stride of 2 and a row pitch of W + 3, both flags, f32 and
   bf16, rank 4 and rank 3 (innermost stride 2), 1 and 2 threads, dst dense
   (so that only diff_dst's strides choose the staging), against the
   float64 reference and bit for bit the call on a dense copy of diff_dst;
   then the parameter gradients alone, padded and negative outer strides,
   frozen statistics, accumulate, rank 5 and f16. */
static void bn_relu_dy_spatial(void) {
    int fl, k, t, v, i;
    static const int64_t sp2[2] = {5, 9}, sp1[1] = {37}, sp3[3] = {3, 4, 5};
    static const unsigned flags[2] = {NBWD_FUSE_RELU, NBWD_FUSE_ADD_RELU};
    /* rank 4 with each stride kind, then rank 3, whose innermost stride is
       its only spatial one */
    static const struct { int64_t C; int nsp, kind, form; const int64_t *sp; } shapes[3] = {
        {5, 2, BDS_INNER2, 1, sp2}, {5, 2, BDS_PITCH, 2, sp2}, {4, 1, BDS_INNER2, 0, sp1}};
    for (fl = 0; fl < 2; ++fl)
        for (k = 0; k < 2; ++k)
            for (t = 1; t <= 2; ++t)
                for (i = 0; i < 3; ++i) {
                    bn_cfg c;
                    bn_defaults(&c);
                    bn_shape(&c, NBWD_NCX, 3, shapes[i].C, shapes[i].nsp, shapes[i].sp);
                    c.relu = flags[fl];
                    c.dt = k ? NBWD_BF16 : NBWD_F32;
                    c.dy_spatial = shapes[i].kind;
                    c.threads = t;
                    c.form = (nbwd_stats_form)((fl + k + t + shapes[i].form) % 3);
                    c.seed = ++g_bseed;
                    bn_run(&c);
                }
    for (v = 0; v < 6; ++v) {
        bn_cfg c;
        bn_defaults(&c);
        if (v == 5) bn_shape(&c, NBWD_NCX, 2, 3, 3, sp3);
        else bn_shape(&c, NBWD_NCX, 3, 5, 2, sp2);
        c.relu = flags[v % 2];
        c.dy_spatial = v % 3 == 0 ? BDS_INNER2 : BDS_PITCH;
        c.threads = 1 + v % 2;
        switch (v) {
        case 0: c.want_dx = 0; break; /* diff_gamma/diff_beta alone still stage the blocks */
        case 1: c.strides = B_PADDED; c.dt = NBWD_BF16; break; /* dst then has no dense block */
        case 2: c.strides = B_NEGATIVE; break;
        case 3: c.global_stats = 1; break;
        case 4: c.accumulate = 1; c.dt = NBWD_BF16; break;
        default: c.dt = NBWD_F16; break;
        }
        c.seed = ++g_bseed;
        bn_run(&c);
    }
}

void test_batch_norm(void) {
    static const struct { const char *name; void (*fn)(void); } parts[] = {
        {"full cross", bn_full_cross}, {"shapes", bn_shapes},         {"strides", bn_strides},
        {"in-place/accumulate", bn_inplace_accumulate}, {"data", bn_data}, {"degenerate", bn_degenerate},
        {"large/threads", bn_large_threads}, {"global statistics", bn_global_stats},
        {"two-phase", bn_two_phase}, {"fused ReLU", bn_fused_relu},
        {"fused ReLU, spatially strided diff_dst", bn_relu_dy_spatial},
    };
    int k;
    for (k = 0; k < (int)(sizeof parts / sizeof parts[0]); ++k) {
        double t0 = t_now();
        parts[k].fn();
        if (g_verbose) printf("  batch_norm %s: %.2f s\n", parts[k].name, t_now() - t0);
    }
}
