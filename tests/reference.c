/* reference.c - an independent float64 reference for norm_bwd, written from
   the formulas (not from the library):
       rstd = 1 / sqrt(var + eps); xhat = (x - mean) * rstd; g = dy * gamma
       dx   = rstd * (g - mean(g) - xhat * mean(g * xhat))
       dgamma = sum dy * xhat; dbeta = sum dy
   and for RMSNorm (no mean): rstd = 1 / sqrt(mean(x^2) + eps),
       xhat = x * rstd; dx = rstd * (g - xhat * mean(g * xhat))
   over a LayerNorm row (dims [axis, rank)) or a BatchNorm channel (batch and
   spatial positions). Inputs are read from the very memory given to the
   library (16-bit values widened exactly by this file's own decoding), with
   the same strides. It also returns the f32 tolerance of every output,
   computed from the error scales defined in nbwd_test.h. */
#include "nbwd_test.h"

/* ------------------------------------------------------------- access */
double ref_load(const void *p, nbwd_dtype dt, int64_t offset) {
    if (dt == NBWD_F32) return (double)((const float *)p)[offset];
    if (dt == NBWD_F16) return t_f16_to_double(((const uint16_t *)p)[offset]);
    if (dt == NBWD_BF16) return t_bf16_to_double(((const uint16_t *)p)[offset]);
    if (dt == T_F64) return ((const double *)p)[offset];
    return NAN;
}

int64_t ref_offset(int rank, const int64_t *dims, const int64_t *strides, int64_t linear) {
    int64_t off = 0;
    int d;
    if (!strides) return linear;
    for (d = rank - 1; d >= 0; --d) {
        int64_t i = dims[d] > 0 ? linear % dims[d] : 0;
        linear = dims[d] > 0 ? linear / dims[d] : 0;
        off += i * strides[d];
    }
    return off;
}

double ref_get(ref_tensor t, int rank, const int64_t *dims, int64_t linear) {
    return ref_load(t.p, t.dt, ref_offset(rank, dims, t.strides, linear));
}

/* A row-major cursor over a strided tensor, cheaper than ref_offset per
   element for long loops. */
typedef struct ref_cursor {
    int rank;
    int64_t dims[NBWD_MAX_RANK], st[NBWD_MAX_RANK], idx[NBWD_MAX_RANK], off;
} ref_cursor;

static void ref_cursor_init(ref_cursor *c, int rank, const int64_t *dims, const int64_t *strides) {
    int d;
    int64_t s = 1;
    c->rank = rank;
    for (d = rank - 1; d >= 0; --d) {
        c->dims[d] = dims[d];
        c->st[d] = strides ? strides[d] : s;
        s *= dims[d] > 0 ? dims[d] : 1;
        c->idx[d] = 0;
    }
    c->off = 0;
}

static void ref_cursor_next(ref_cursor *c) {
    int d;
    for (d = c->rank - 1; d >= 0; --d) {
        c->off += c->st[d];
        if (++c->idx[d] < c->dims[d]) return;
        c->off -= c->st[d] * c->dims[d];
        c->idx[d] = 0;
    }
}

static int64_t ref_count(const int64_t *dims, int from, int to) {
    int64_t c = 1;
    int d;
    for (d = from; d < to; ++d) c *= dims[d];
    return c;
}

static double ref_rstd(nbwd_stats_form form, double spread, double eps) {
    if (form == NBWD_STATS_MEAN_VARIANCE) return 1.0 / sqrt(spread + eps);
    if (form == NBWD_STATS_MEAN_RSTD || form == NBWD_STATS_DST_RSTD) return spread;
    return 1.0 / spread; /* XHAT_STD: spread is std = sqrt(var + eps) */
}

/* ---------------------------------------------------------- LayerNorm */
/* xhat from the forward output y = xhat * gamma + beta, as documented: a
   scale under FLT_MIN in magnitude (0 or subnormal) leaves no trace of
   xhat, which is then taken as 0 (times y - beta, so NaN stays NaN) */
static double ref_unscale(double y, double gamma, double beta) {
    return fabs(gamma) < 1.17549435082228751e-38 ? (y - beta) * 0.0 : (y - beta) / gamma;
}

/* rms: RMSNorm (mean 0 and no mean(g) term); spread in the first form is the
   mean square. The DST_RSTD form: x is the forward output, beta (p NULL: 0)
   its bias, gamma the effective scale. */
static void ref_norm_rows_bwd(int rms, int rank, const int64_t *dims, int axis, nbwd_stats_form form, double eps,
                              ref_tensor x, ref_tensor dy, ref_tensor mean, ref_tensor spread, ref_tensor gamma,
                              ref_tensor beta, ref_out out) {
    int64_t rows = ref_count(dims, 0, axis), n = ref_count(dims, axis, rank), r, i;
    double *xh = NULL, *g = NULL, *dg_abs = NULL, *db_abs = NULL;
    ref_cursor cx, cdy, cm, cs;
    if (n > 0) {
        xh = (double *)malloc((size_t)n * sizeof(double));
        g = (double *)malloc((size_t)n * sizeof(double));
        dg_abs = (double *)calloc((size_t)n, sizeof(double));
        db_abs = (double *)calloc((size_t)n, sizeof(double));
        if (!xh || !g || !dg_abs || !db_abs) { fprintf(stderr, "reference: out of memory\n"); exit(2); }
    }
    for (i = 0; i < n; ++i) {
        if (out.dg) out.dg[i] = 0.0;
        if (out.db) out.db[i] = 0.0;
    }
    if (rows > 0 && n > 0) {
        ref_cursor_init(&cx, rank, dims, x.strides);
        ref_cursor_init(&cdy, rank, dims, dy.strides);
        ref_cursor_init(&cm, axis, dims, mean.strides);
        ref_cursor_init(&cs, axis, dims, spread.strides);
    }
    for (r = 0; r < rows && n > 0; ++r) {
        double m = 0.0, rstd, sg = 0.0, sgx = 0.0, sag = 0.0, sagx = 0.0, mg, mgx, mag, magx;
        if ((form == NBWD_STATS_MEAN_VARIANCE || form == NBWD_STATS_MEAN_RSTD) && !rms)
            m = ref_load(mean.p, mean.dt, cm.off);
        rstd = ref_rstd(form, ref_load(spread.p, spread.dt, cs.off), eps);
        for (i = 0; i < n; ++i) {
            double xv = ref_load(x.p, x.dt, cx.off), d = ref_load(dy.p, dy.dt, cdy.off);
            double gm = gamma.p ? ref_load(gamma.p, gamma.dt, i) : 1.0;
            xh[i] = form == NBWD_STATS_XHAT_STD ? xv
                    : form == NBWD_STATS_DST_RSTD
                        ? ref_unscale(xv, gm, beta.p ? ref_load(beta.p, beta.dt, i) : 0.0)
                        : (xv - m) * rstd;
            g[i] = d * gm;
            sg += g[i];
            sgx += g[i] * xh[i];
            sag += fabs(g[i]);
            sagx += fabs(g[i] * xh[i]);
            if (out.dg) out.dg[i] += d * xh[i];
            if (out.db) out.db[i] += d;
            dg_abs[i] += fabs(d * xh[i]);
            db_abs[i] += fabs(d);
            ref_cursor_next(&cx);
            ref_cursor_next(&cdy);
        }
        mg = rms ? 0.0 : sg / (double)n;
        mgx = sgx / (double)n;
        mag = rms ? 0.0 : sag / (double)n;
        magx = sagx / (double)n;
        for (i = 0; i < n; ++i) {
            int64_t k = r * n + i;
            if (out.dx) out.dx[k] = rstd * (g[i] - mg - xh[i] * mgx);
            if (out.dx_tol) {
                double s1 = fabs(rstd) * (fabs(g[i]) + fabs(mg) + fabs(xh[i]) * fabs(mgx));
                double s2 = fabs(rstd) * (mag + fabs(xh[i]) * magx);
                out.dx_tol[k] = t_tol_dx(s1, s2, n);
            }
        }
        ref_cursor_next(&cm);
        ref_cursor_next(&cs);
    }
    for (i = 0; i < n; ++i) {
        if (out.dg_tol) out.dg_tol[i] = t_tol_param(dg_abs[i], rows, 0.0);
        if (out.db_tol) out.db_tol[i] = t_tol_param(db_abs[i], rows, 0.0);
    }
    free(xh);
    free(g);
    free(dg_abs);
    free(db_abs);
}

void ref_layer_norm_bwd(int rank, const int64_t *dims, int axis, nbwd_stats_form form, double eps, ref_tensor x,
                        ref_tensor dy, ref_tensor mean, ref_tensor spread, ref_tensor gamma, ref_out out) {
    ref_tensor none;
    none.p = NULL; none.dt = T_F64; none.strides = NULL;
    ref_norm_rows_bwd(0, rank, dims, axis, form, eps, x, dy, mean, spread, gamma, none, out);
}
void ref_rms_norm_bwd(int rank, const int64_t *dims, int axis, nbwd_stats_form form, double eps, ref_tensor x,
                      ref_tensor dy, ref_tensor spread, ref_tensor gamma, ref_out out) {
    ref_tensor none;
    none.p = NULL; none.dt = T_F64; none.strides = NULL;
    ref_norm_rows_bwd(1, rank, dims, axis, form, eps, x, dy, none, spread, gamma, none, out);
}
void ref_norm_dst_bwd(int rms, int rank, const int64_t *dims, int axis, ref_tensor y, ref_tensor dy,
                      ref_tensor rstd, ref_tensor gamma, ref_tensor beta, ref_out out) {
    ref_tensor none;
    none.p = NULL; none.dt = T_F64; none.strides = NULL;
    ref_norm_rows_bwd(rms, rank, dims, axis, NBWD_STATS_DST_RSTD, 0.0, y, dy, none, rstd, gamma, beta, out);
}

void ref_rms_norm_stats(int rank, const int64_t *dims, int axis, ref_tensor x, double *mean_square) {
    int64_t rows = ref_count(dims, 0, axis), n = ref_count(dims, axis, rank), r, i;
    ref_cursor c;
    ref_cursor_init(&c, rank, dims, x.strides);
    for (r = 0; r < rows; ++r) {
        double s2 = 0.0;
        for (i = 0; i < n; ++i) {
            double v = ref_load(x.p, x.dt, c.off);
            s2 += v * v;
            ref_cursor_next(&c);
        }
        mean_square[r] = n > 0 ? s2 / (double)n : 0.0;
    }
}

void ref_rms_norm_fwd(int rank, const int64_t *dims, int axis, double eps, const double *x, const double *gamma,
                      double *y) {
    int64_t rows = ref_count(dims, 0, axis), n = ref_count(dims, axis, rank), r, i;
    for (r = 0; r < rows; ++r) {
        const double *xr = x + r * n;
        double s2 = 0.0, rstd;
        for (i = 0; i < n; ++i) s2 += xr[i] * xr[i];
        rstd = 1.0 / sqrt(s2 / (double)n + eps);
        for (i = 0; i < n; ++i) y[r * n + i] = xr[i] * rstd * (gamma ? gamma[i] : 1.0);
    }
}

void ref_layer_norm_stats(int rank, const int64_t *dims, int axis, ref_tensor x, double *mean, double *var) {
    int64_t rows = ref_count(dims, 0, axis), n = ref_count(dims, axis, rank), r, i;
    ref_cursor c1, c2;
    ref_cursor_init(&c1, rank, dims, x.strides);
    c2 = c1;
    for (r = 0; r < rows; ++r) {
        double s = 0.0, s2 = 0.0, m;
        for (i = 0; i < n; ++i) { s += ref_load(x.p, x.dt, c1.off); ref_cursor_next(&c1); }
        m = n > 0 ? s / (double)n : 0.0;
        for (i = 0; i < n; ++i) {
            double d = ref_load(x.p, x.dt, c2.off) - m;
            s2 += d * d;
            ref_cursor_next(&c2);
        }
        mean[r] = m;
        var[r] = n > 0 ? s2 / (double)n : 0.0;
    }
}

void ref_layer_norm_fwd(int rank, const int64_t *dims, int axis, double eps, const double *x, const double *gamma,
                        const double *beta, double *y) {
    int64_t rows = ref_count(dims, 0, axis), n = ref_count(dims, axis, rank), r, i;
    for (r = 0; r < rows; ++r) {
        const double *xr = x + r * n;
        double s = 0.0, s2 = 0.0, m, rstd;
        for (i = 0; i < n; ++i) s += xr[i];
        m = s / (double)n;
        for (i = 0; i < n; ++i) s2 += (xr[i] - m) * (xr[i] - m);
        rstd = 1.0 / sqrt(s2 / (double)n + eps);
        for (i = 0; i < n; ++i)
            y[r * n + i] = (xr[i] - m) * rstd * (gamma ? gamma[i] : 1.0) + (beta ? beta[i] : 0.0);
    }
}

/* ---------------------------------------------------------- BatchNorm */
static int64_t ref_bn_channel_dim(int rank, nbwd_layout layout) { return layout == NBWD_NCX ? 1 : rank - 1; }

void ref_batch_norm_bwd(int rank, const int64_t *dims, nbwd_layout layout, nbwd_stats_form form, double eps,
                        ref_tensor x, ref_tensor dy, ref_tensor mean, ref_tensor spread, ref_tensor gamma,
                        ref_out out) {
    int cd = (int)ref_bn_channel_dim(rank, layout);
    int64_t C = dims[cd], total = ref_count(dims, 0, rank), M = C > 0 ? total / C : 0, c, e;
    double *m, *rstd, *gm, *sg, *sgx, *sag, *sagx, *sdy, *sady, *sadyx, *sdyx;
    ref_cursor cx, cdy;
    size_t cb = (size_t)(C > 0 ? C : 1) * sizeof(double);
    m = (double *)malloc(cb); rstd = (double *)malloc(cb); gm = (double *)malloc(cb);
    sg = (double *)calloc(1, cb); sgx = (double *)calloc(1, cb); sag = (double *)calloc(1, cb);
    sagx = (double *)calloc(1, cb); sdy = (double *)calloc(1, cb); sady = (double *)calloc(1, cb);
    sadyx = (double *)calloc(1, cb); sdyx = (double *)calloc(1, cb);
    if (!m || !rstd || !gm || !sg || !sgx || !sag || !sagx || !sdy || !sady || !sadyx || !sdyx) {
        fprintf(stderr, "reference: out of memory\n");
        exit(2);
    }
    for (c = 0; c < C; ++c) {
        m[c] = form == NBWD_STATS_XHAT_STD ? 0.0 : ref_get(mean, 1, &C, c); /* [C] tensors: any stride */
        rstd[c] = ref_rstd(form, ref_get(spread, 1, &C, c), eps);
        gm[c] = gamma.p ? ref_get(gamma, 1, &C, c) : 1.0;
    }
    /* pass 1: the channel sums */
    ref_cursor_init(&cx, rank, dims, x.strides);
    ref_cursor_init(&cdy, rank, dims, dy.strides);
    for (e = 0; e < total; ++e) {
        double xv, d, xh, g;
        c = cx.idx[cd];
        xv = ref_load(x.p, x.dt, cx.off);
        d = ref_load(dy.p, dy.dt, cdy.off);
        xh = form == NBWD_STATS_XHAT_STD ? xv : (xv - m[c]) * rstd[c];
        g = d * gm[c];
        sg[c] += g; sgx[c] += g * xh; sag[c] += fabs(g); sagx[c] += fabs(g * xh);
        sdy[c] += d; sady[c] += fabs(d); sdyx[c] += d * xh; sadyx[c] += fabs(d * xh);
        ref_cursor_next(&cx);
        ref_cursor_next(&cdy);
    }
    /* pass 2: diff_src */
    if (out.dx || out.dx_tol) {
        ref_cursor_init(&cx, rank, dims, x.strides);
        ref_cursor_init(&cdy, rank, dims, dy.strides);
        for (e = 0; e < total; ++e) {
            double xv, d, xh, g, mg, mgx;
            c = cx.idx[cd];
            xv = ref_load(x.p, x.dt, cx.off);
            d = ref_load(dy.p, dy.dt, cdy.off);
            xh = form == NBWD_STATS_XHAT_STD ? xv : (xv - m[c]) * rstd[c];
            g = d * gm[c];
            mg = sg[c] / (double)M;
            mgx = sgx[c] / (double)M;
            if (out.dx) out.dx[e] = rstd[c] * (g - mg - xh * mgx);
            if (out.dx_tol) {
                double s1 = fabs(rstd[c]) * (fabs(g) + fabs(mg) + fabs(xh) * fabs(mgx));
                double s2 = fabs(rstd[c]) * (sag[c] / (double)M + fabs(xh) * sagx[c] / (double)M);
                out.dx_tol[e] = t_tol_dx(s1, s2, M);
            }
            ref_cursor_next(&cx);
            ref_cursor_next(&cdy);
        }
    }
    for (c = 0; c < C; ++c) {
        if (out.dg) out.dg[c] = sdyx[c];
        if (out.db) out.db[c] = sdy[c];
        if (out.dg_tol) out.dg_tol[c] = t_tol_param(sadyx[c], M, 0.0);
        if (out.db_tol) out.db_tol[c] = t_tol_param(sady[c], M, 0.0);
    }
    free(m); free(rstd); free(gm); free(sg); free(sgx); free(sag); free(sagx); free(sdy); free(sady); free(sadyx); free(sdyx);
}

void ref_batch_norm_bwd_global(int rank, const int64_t *dims, nbwd_layout layout, nbwd_stats_form form, double eps,
                               ref_tensor x, ref_tensor dy, ref_tensor mean, ref_tensor spread, ref_tensor gamma,
                               ref_out out) {
    int cd = (int)ref_bn_channel_dim(rank, layout);
    int64_t C = dims[cd], total = ref_count(dims, 0, rank), e;
    ref_out sums = out;
    ref_cursor cdy;
    sums.dx = sums.dx_tol = NULL; /* diff_gamma, diff_beta: as in training */
    ref_batch_norm_bwd(rank, dims, layout, form, eps, x, dy, mean, spread, gamma, sums);
    if (!out.dx && !out.dx_tol) return;
    ref_cursor_init(&cdy, rank, dims, dy.strides);
    for (e = 0; e < total; ++e) {
        int64_t c = cdy.idx[cd];
        double rstd = ref_rstd(form, ref_get(spread, 1, &C, c), eps), gm = gamma.p ? ref_get(gamma, 1, &C, c) : 1.0;
        double v = rstd * gm * ref_load(dy.p, dy.dt, cdy.off);
        if (out.dx) out.dx[e] = v;
        if (out.dx_tol) out.dx_tol[e] = t_tol_dx(fabs(v), 0.0, 1);
        ref_cursor_next(&cdy);
    }
}

void ref_batch_norm_stats(int rank, const int64_t *dims, nbwd_layout layout, ref_tensor x, double *mean,
                          double *var) {
    int cd = (int)ref_bn_channel_dim(rank, layout);
    int64_t C = dims[cd], total = ref_count(dims, 0, rank), M = C > 0 ? total / C : 0, c, e;
    ref_cursor cx;
    for (c = 0; c < C; ++c) mean[c] = var[c] = 0.0;
    ref_cursor_init(&cx, rank, dims, x.strides);
    for (e = 0; e < total; ++e) {
        mean[cx.idx[cd]] += ref_load(x.p, x.dt, cx.off);
        ref_cursor_next(&cx);
    }
    for (c = 0; c < C; ++c) mean[c] = M > 0 ? mean[c] / (double)M : 0.0;
    ref_cursor_init(&cx, rank, dims, x.strides);
    for (e = 0; e < total; ++e) {
        double d = ref_load(x.p, x.dt, cx.off) - mean[cx.idx[cd]];
        var[cx.idx[cd]] += d * d;
        ref_cursor_next(&cx);
    }
    for (c = 0; c < C; ++c) var[c] = M > 0 ? var[c] / (double)M : 0.0;
}

void ref_batch_norm_fwd(int rank, const int64_t *dims, nbwd_layout layout, double eps, const double *x,
                        const double *gamma, const double *beta, double *y) {
    int cd = (int)ref_bn_channel_dim(rank, layout);
    int64_t C = dims[cd], total = ref_count(dims, 0, rank), e, c;
    double *mean = (double *)malloc((size_t)C * sizeof(double)), *var = (double *)malloc((size_t)C * sizeof(double));
    ref_cursor cx;
    if (!mean || !var) { fprintf(stderr, "reference: out of memory\n"); exit(2); }
    /* mean and variance of the double input, recomputed here */
    for (c = 0; c < C; ++c) mean[c] = var[c] = 0.0;
    ref_cursor_init(&cx, rank, dims, NULL);
    for (e = 0; e < total; ++e) { mean[cx.idx[cd]] += x[e]; ref_cursor_next(&cx); }
    for (c = 0; c < C; ++c) mean[c] /= (double)(total / C);
    ref_cursor_init(&cx, rank, dims, NULL);
    for (e = 0; e < total; ++e) {
        double d = x[e] - mean[cx.idx[cd]];
        var[cx.idx[cd]] += d * d;
        ref_cursor_next(&cx);
    }
    for (c = 0; c < C; ++c) var[c] /= (double)(total / C);
    ref_cursor_init(&cx, rank, dims, NULL);
    for (e = 0; e < total; ++e) {
        c = cx.idx[cd];
        y[e] = (x[e] - mean[c]) / sqrt(var[c] + eps) * (gamma ? gamma[c] : 1.0) + (beta ? beta[c] : 0.0);
        ref_cursor_next(&cx);
    }
    free(mean);
    free(var);
}

/* ---------------------------------------------------------- GroupNorm */
/* A set is one sample's group: channels [g * C/groups, (g + 1) * C/groups)
   over every spatial position, K = C/groups * spatial elements. Each
   element is visited through a cursor over the whole tensor; its set is
   (idx[0], idx[channel dim] / (C/groups)). */
static int ref_gn_channel_dim(int rank, nbwd_layout layout) { return layout == NBWD_NCX ? 1 : rank - 1; }

void ref_group_norm_bwd(int rank, const int64_t *dims, nbwd_layout layout, int64_t groups, nbwd_stats_form form,
                        double eps, ref_tensor x, ref_tensor dy, ref_tensor mean, ref_tensor spread, ref_tensor gamma,
                        ref_tensor beta, ref_out out) {
    int cd = ref_gn_channel_dim(rank, layout);
    int64_t N = dims[0], C = dims[cd], total = ref_count(dims, 0, rank), NG = N * groups, sd[2], c, e, s;
    int64_t Cg = groups > 0 && C > 0 ? C / groups : 1, K = NG > 0 && total > 0 ? total / NG : 0;
    int64_t R = C > 0 ? total / C : 0; /* elements summed into each channel's diff_gamma/diff_beta */
    size_t sb = (size_t)(NG > 0 ? NG : 1) * sizeof(double), cb = (size_t)(C > 0 ? C : 1) * sizeof(double);
    double *m = (double *)calloc(1, sb), *rstd = (double *)calloc(1, sb), *sg = (double *)calloc(1, sb);
    double *sgx = (double *)calloc(1, sb), *sag = (double *)calloc(1, sb), *sagx = (double *)calloc(1, sb);
    double *gm = (double *)calloc(1, cb), *bt = (double *)calloc(1, cb), *sdy = (double *)calloc(1, cb);
    double *sady = (double *)calloc(1, cb), *sdyx = (double *)calloc(1, cb), *sadyx = (double *)calloc(1, cb);
    ref_cursor cx, cdy;
    if (!m || !rstd || !sg || !sgx || !sag || !sagx || !gm || !bt || !sdy || !sady || !sdyx || !sadyx) {
        fprintf(stderr, "reference: out of memory\n");
        exit(2);
    }
    sd[0] = N;
    sd[1] = groups;
    for (s = 0; s < NG; ++s) { /* [N, groups] statistics: any strides */
        m[s] = form == NBWD_STATS_MEAN_VARIANCE || form == NBWD_STATS_MEAN_RSTD ? ref_get(mean, 2, sd, s) : 0.0;
        rstd[s] = ref_rstd(form, ref_get(spread, 2, sd, s), eps);
    }
    for (c = 0; c < C; ++c) { /* [C] parameters: any stride */
        gm[c] = gamma.p ? ref_get(gamma, 1, &C, c) : 1.0;
        bt[c] = beta.p ? ref_get(beta, 1, &C, c) : 0.0;
    }
    /* pass 1: the sums of each set and of each channel */
    ref_cursor_init(&cx, rank, dims, x.strides);
    ref_cursor_init(&cdy, rank, dims, dy.strides);
    for (e = 0; e < total; ++e) {
        double xv = ref_load(x.p, x.dt, cx.off), d = ref_load(dy.p, dy.dt, cdy.off), xh, g;
        c = cx.idx[cd];
        s = cx.idx[0] * groups + c / Cg;
        xh = form == NBWD_STATS_XHAT_STD ? xv
             : form == NBWD_STATS_DST_RSTD ? ref_unscale(xv, gm[c], bt[c])
                                           : (xv - m[s]) * rstd[s];
        g = d * gm[c];
        sg[s] += g; sgx[s] += g * xh; sag[s] += fabs(g); sagx[s] += fabs(g * xh);
        sdy[c] += d; sady[c] += fabs(d); sdyx[c] += d * xh; sadyx[c] += fabs(d * xh);
        ref_cursor_next(&cx);
        ref_cursor_next(&cdy);
    }
    /* pass 2: diff_src */
    if (out.dx || out.dx_tol) {
        ref_cursor_init(&cx, rank, dims, x.strides);
        ref_cursor_init(&cdy, rank, dims, dy.strides);
        for (e = 0; e < total; ++e) {
            double xv = ref_load(x.p, x.dt, cx.off), d = ref_load(dy.p, dy.dt, cdy.off), xh, g, mg, mgx;
            c = cx.idx[cd];
            s = cx.idx[0] * groups + c / Cg;
            xh = form == NBWD_STATS_XHAT_STD ? xv
                 : form == NBWD_STATS_DST_RSTD ? ref_unscale(xv, gm[c], bt[c])
                                               : (xv - m[s]) * rstd[s];
            g = d * gm[c];
            mg = sg[s] / (double)K;
            mgx = sgx[s] / (double)K;
            if (out.dx) out.dx[e] = rstd[s] * (g - mg - xh * mgx);
            if (out.dx_tol) {
                double s1 = fabs(rstd[s]) * (fabs(g) + fabs(mg) + fabs(xh) * fabs(mgx));
                double s2 = fabs(rstd[s]) * (sag[s] / (double)K + fabs(xh) * sagx[s] / (double)K);
                out.dx_tol[e] = t_tol_dx(s1, s2, K);
            }
            ref_cursor_next(&cx);
            ref_cursor_next(&cdy);
        }
    }
    for (c = 0; c < C; ++c) {
        if (out.dg) out.dg[c] = sdyx[c];
        if (out.db) out.db[c] = sdy[c];
        if (out.dg_tol) out.dg_tol[c] = t_tol_param(sadyx[c], R, 0.0);
        if (out.db_tol) out.db_tol[c] = t_tol_param(sady[c], R, 0.0);
    }
    free(m); free(rstd); free(sg); free(sgx); free(sag); free(sagx);
    free(gm); free(bt); free(sdy); free(sady); free(sdyx); free(sadyx);
}

void ref_group_norm_stats(int rank, const int64_t *dims, nbwd_layout layout, int64_t groups, ref_tensor x,
                          double *mean, double *var) {
    int cd = ref_gn_channel_dim(rank, layout);
    int64_t N = dims[0], C = dims[cd], total = ref_count(dims, 0, rank), NG = N * groups, e, s;
    int64_t Cg = groups > 0 && C > 0 ? C / groups : 1, K = NG > 0 && total > 0 ? total / NG : 0;
    ref_cursor cx;
    for (s = 0; s < NG; ++s) mean[s] = var[s] = 0.0;
    ref_cursor_init(&cx, rank, dims, x.strides);
    for (e = 0; e < total; ++e) {
        mean[cx.idx[0] * groups + cx.idx[cd] / Cg] += ref_load(x.p, x.dt, cx.off);
        ref_cursor_next(&cx);
    }
    for (s = 0; s < NG; ++s) mean[s] = K > 0 ? mean[s] / (double)K : 0.0;
    ref_cursor_init(&cx, rank, dims, x.strides);
    for (e = 0; e < total; ++e) {
        double d;
        s = cx.idx[0] * groups + cx.idx[cd] / Cg;
        d = ref_load(x.p, x.dt, cx.off) - mean[s];
        var[s] += d * d;
        ref_cursor_next(&cx);
    }
    for (s = 0; s < NG; ++s) var[s] = K > 0 ? var[s] / (double)K : 0.0;
}

void ref_group_norm_fwd(int rank, const int64_t *dims, nbwd_layout layout, int64_t groups, double eps,
                        const double *x, const double *gamma, const double *beta, double *y) {
    int cd = ref_gn_channel_dim(rank, layout);
    int64_t N = dims[0], C = dims[cd], total = ref_count(dims, 0, rank), NG = N * groups, e, s, c;
    int64_t Cg = groups > 0 && C > 0 ? C / groups : 1;
    double *mean = (double *)malloc((size_t)(NG > 0 ? NG : 1) * sizeof(double));
    double *var = (double *)malloc((size_t)(NG > 0 ? NG : 1) * sizeof(double));
    ref_tensor tx;
    ref_cursor cx;
    if (!mean || !var) { fprintf(stderr, "reference: out of memory\n"); exit(2); }
    tx.p = x; tx.dt = T_F64; tx.strides = NULL;
    ref_group_norm_stats(rank, dims, layout, groups, tx, mean, var); /* of the double input, recomputed here */
    ref_cursor_init(&cx, rank, dims, NULL);
    for (e = 0; e < total; ++e) {
        c = cx.idx[cd];
        s = cx.idx[0] * groups + c / Cg;
        y[e] = (x[e] - mean[s]) / sqrt(var[s] + eps) * (gamma ? gamma[c] : 1.0) + (beta ? beta[c] : 0.0);
        ref_cursor_next(&cx);
    }
    free(mean);
    free(var);
}
