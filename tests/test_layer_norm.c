/* test_layer_norm.c - the LayerNorm backward matrix against the float64
   reference: stats forms x dtype combinations x affine x optional outputs
   (fully crossed on two shapes), then sweeps of row lengths, ranks and axes,
   strides (padding, negative and zero input strides), in-place, accumulate,
   large tensors, degenerate shapes and data, and row invariants. RMSNorm
   runs through the same harness (ln_cfg.rms: nbwd_rms_norm_bwd against the
   reference's RMSNorm, statistics from the mean square). */
#include "nbwd_test.h"

enum { O_DX = 1, O_DG = 2, O_DB = 4, O_ALL = 7 };
enum { L_DENSE = 0, L_PADDED = 1, L_NEGATIVE = 2, L_ZERO = 3, L_NEG_OUT = 4 };
/* D_CONSTANT_HUGE: every row constant at +-1e38 to 3.3e38 (the NONE form's
   range holds it: no deviation; the sum of a vector of such x passes
   FLT_MAX, and with epsilon 1e-5 so does |mean| * rstd). D_FAR_HEAD:
   normal rows whose first 16 elements are 3e18, or whose first is 7e18
   (the NONE form's shift, the mean of the first vector, lies so far out
   that the squares about it pass FLT_MAX on every path; the squared
   deviations from the mean do not) */
enum { D_NORMAL = 0, D_BIG_MEAN = 1, D_CONSTANT = 2, D_CONSISTENT = 3, D_GAMMA1 = 4, D_CONSTANT_HUGE = 5,
       D_FAR_HEAD = 6 };
enum { IP_NONE = 0, IP_DY = 1, IP_X = 2 };
/* the forms that take x (or xhat) and the statistics, and NONE: x alone
   (DST_RSTD has cases of its own) */
static const nbwd_stats_form k_forms[4] = {NBWD_STATS_MEAN_VARIANCE, NBWD_STATS_MEAN_RSTD, NBWD_STATS_XHAT_STD,
                                           NBWD_STATS_NONE};
/* args.diff_residual: none, a tensor of its own, or diff_src itself (accumulate in place);
   RES_FLAG: no diff_residual, NBWD_ACCUMULATE_DIFF_SRC (diff_src += the gradient), the same sum */
enum { RES_NONE = 0, RES_OWN = 1, RES_INPLACE = 2, RES_FLAG = 3 };

typedef struct ln_cfg {
    int rank;
    int64_t dims[NBWD_MAX_RANK];
    int64_t axis; /* as given to the descriptor */
    nbwd_stats_form form;
    nbwd_dtype dt, sdt, pdt;
    int affine;
    unsigned outputs;
    int layout;
    int inplace;
    int accumulate;
    float eps;
    int data;
    int threads;
    int caller_ws; /* 0: NULL workspace; 1: exactly the queried size, misaligned */
    int null_empty; /* pass NULL for tensors without elements */
    int invariants;
    float gamma_offset; /* desc.gamma_offset */
    int rms;            /* RMSNorm: nbwd_rms_norm_bwd, no mean */
    int residual;       /* RES_*: args.diff_residual added to diff_src */
    int no_beta;        /* DST_RSTD form: args.beta NULL (the forward had no bias) */
    int zero_gamma;     /* some gamma + gamma_offset exactly 0 or subnormal */
    uint64_t seed;
} ln_cfg;

static void ln_defaults(ln_cfg *c) {
    memset(c, 0, sizeof *c);
    c->axis = -1;
    c->form = NBWD_STATS_MEAN_VARIANCE;
    c->dt = c->sdt = c->pdt = NBWD_F32;
    c->affine = 1;
    c->outputs = O_ALL;
    c->eps = 1e-5f;
    c->seed = 1;
}

static void ln_describe(const ln_cfg *c, char *buf, size_t size) {
    char dims[128];
    int d, k = 0;
    dims[0] = 0;
    for (d = 0; d < c->rank; ++d)
        k += snprintf(dims + k, sizeof dims - (size_t)k, "%s%lld", d ? "x" : "", (long long)c->dims[d]);
    snprintf(buf, size,
             "%s dims=%s axis=%lld form=%s dt=%s/%s/%s affine=%d offset=%g out=%s%s%s layout=%d inplace=%d acc=%d "
             "eps=%g data=%d threads=%d ws=%d res=%d nobeta=%d zerog=%d seed=%llu isa=%s",
             c->rms ? "RMS" : "LN", c->rank ? dims : "()", (long long)c->axis, t_form_name(c->form), t_dtype_name(c->dt),
             t_dtype_name(c->sdt), t_dtype_name(c->pdt), c->affine, (double)c->gamma_offset,
             c->outputs & O_DX ? "dx" : "",
             c->outputs & O_DG ? "+dg" : "", c->outputs & O_DB ? "+db" : "", c->layout, c->inplace, c->accumulate,
             (double)c->eps, c->data, c->threads, c->caller_ws, c->residual, c->no_beta, c->zero_gamma,
             (unsigned long long)c->seed,
             nbwd_isa_name(g_test_isa));
}

/* NBWD_STATS_NONE: the call's own f32 statistics may differ from the
   reference's (the float64 ones rounded to f32) by the manual's bound:
   the mean by u |mean| + 26 u std, rstd by 13 u, which moves xhat_i by
   e_i = T_NONE_XHAT_ERR. The tolerances grow by what that does to each
   output: dx_i: rstd (|mean(g xhat)| e_i + |xhat_i| mean(|g| e)) + u
   |dx_i|; diff_gamma: |dy| e_i per row. */
static void none_tolerance(const ln_cfg *c, int64_t rows, int64_t n, const t_buf *bx, const t_buf *bdy,
                           const t_buf *bg, const double *mean, const double *var, ref_out ro) {
    int64_t r, i;
    for (r = 0; r < rows; ++r) {
        const double m = c->rms ? 0.0 : mean[r], rs = 1.0 / sqrt(var[r] + (double)c->eps);
        double sgx = 0.0, sge = 0.0;
        for (i = 0; i < n; ++i) {
            double xh = (t_buf_get(bx, r * n + i) - m) * rs, dy = t_buf_get(bdy, r * n + i);
            double g = dy * (c->affine ? t_buf_get(bg, i) + (double)c->gamma_offset : 1.0);
            double e = T_NONE_XHAT_ERR(m, rs, xh);
            sgx += g * xh;
            sge += fabs(g) * e;
            if (ro.dg_tol) ro.dg_tol[i] += fabs(dy) * e;
        }
        for (i = 0; i < n && ro.dx_tol; ++i) {
            double xh = (t_buf_get(bx, r * n + i) - m) * rs, e = T_NONE_XHAT_ERR(m, rs, xh);
            ro.dx_tol[r * n + i] += rs * (fabs(sgx / (double)n) * e + fabs(xh) * sge / (double)n) +
                                    T_U * fabs(ro.dx[r * n + i]);
        }
    }
}

/* Runs one case; returns 1 if every check passed. */
static int ln_run(const ln_cfg *c) {
    char desc_str[512];
    int axis = (int)(c->axis < 0 ? c->axis + c->rank : c->axis), d, ok = 1;
    int64_t rows = 1, n = 1, r, i, total;
    int64_t st_x[NBWD_MAX_RANK], st_dy[NBWD_MAX_RANK], st_dx[NBWD_MAX_RANK], st_m[NBWD_MAX_RANK],
        st_v[NBWD_MAX_RANK], st_res[NBWD_MAX_RANK];
    int want_dx = (c->outputs & O_DX) != 0, want_dg = (c->outputs & O_DG) != 0, want_db = (c->outputs & O_DB) != 0;
    int strided = c->layout != L_DENSE;
    t_buf bx, bdy, bdx, bm, bv, bg, bb, bdg, bdb, bgs, bres, *pdx = NULL;
    const int dst_form = c->form == NBWD_STATS_DST_RSTD, none_form = c->form == NBWD_STATS_NONE;
    const int mean_form = !dst_form && !none_form && c->form != NBWD_STATS_XHAT_STD;
    /* NBWD_STATS_NONE: the call finds the statistics itself, in f32: the
       reference is the MEAN_VARIANCE form's with the float64 statistics
       rounded to f32 (what a correct computation rounds them to) */
    const nbwd_dtype sdt = none_form ? NBWD_F32 : c->sdt;
    const nbwd_stats_form ref_form = none_form ? NBWD_STATS_MEAN_VARIANCE : c->form;
    /* strided layouts give the parameter tensors (shape dims[axis..rank))
       strides of their own; bg stays dense for the reference, bgs is the
       strided gamma the call reads */
    int pstrided = strided && c->layout != L_ZERO, nn = c->rank - axis;
    int64_t st_g[NBWD_MAX_RANK], st_b[NBWD_MAX_RANK], st_dg[NBWD_MAX_RANK], st_db[NBWD_MAX_RANK];
    double *gamma_eff = NULL, *xd = NULL, *mean = NULL, *var = NULL, *rdx = NULL, *rdx_tol = NULL, *rdg = NULL, *rdg_tol = NULL,
           *rdb = NULL, *rdb_tol = NULL, *prev_dg = NULL, *prev_db = NULL, *res_d = NULL, *beta_d = NULL;
    t_snap s_x, s_dy, s_m, s_v, s_g, s_b, s_dg, s_db, s_res;
    t_rng rng;
    ref_out ro;
    ref_tensor tx, tdy, tm, tv, tg, tb;
    nbwd_layer_norm_bwd_desc desc;
    nbwd_layer_norm_bwd_args args;
    nbwd_rms_norm_bwd_args rargs;
    nbwd_status st;
    void *ws = NULL;
    size_t ws_bytes = 0;
    long fails0 = g_fail, allocs0, frees0;

    ln_describe(c, desc_str, sizeof desc_str);
    t_case("%s", desc_str);
    t_rng_seed(&rng, c->seed);
    for (d = 0; d < axis; ++d) rows *= c->dims[d];
    for (d = axis; d < c->rank; ++d) n *= c->dims[d];
    total = rows * n;

    /* strides */
    t_padded_strides(c->rank, c->dims, axis, strided ? 3 : 0, st_x);
    t_padded_strides(c->rank, c->dims, axis, strided ? 1 : 0, st_dy);
    t_padded_strides(c->rank, c->dims, axis, strided ? 5 : 0, st_dx);
    t_padded_strides(c->rank, c->dims, axis, strided ? 4 : 0, st_res);
    t_padded_strides(axis, c->dims, axis, strided ? 1 : 0, st_m);
    t_padded_strides(axis, c->dims, axis, strided ? 2 : 0, st_v);
    if (!strided) { /* dense: strides of stats must be dense too */
        t_padded_strides(axis, c->dims, 0, 0, st_m);
        t_padded_strides(axis, c->dims, 0, 0, st_v);
    }
    if ((c->layout == L_NEGATIVE || c->layout == L_NEG_OUT) && axis >= 1) {
        st_x[0] = -st_x[0];
        st_dy[0] = -st_dy[0];
        st_m[0] = -st_m[0];
        if (c->layout == L_NEG_OUT) st_dx[0] = -st_dx[0];
    }
    if (c->layout == L_ZERO && axis >= 1) { /* x and its stats broadcast along dim 0 */
        st_x[0] = 0;
        st_m[0] = 0;
        st_v[0] = 0;
    }
    if (c->inplace == IP_DY) memcpy(st_dx, st_dy, sizeof st_dx);
    if (c->inplace == IP_X) memcpy(st_dx, st_x, sizeof st_dx);
    if (c->residual >= RES_INPLACE) memcpy(st_res, st_dx, sizeof st_res);
    t_padded_strides(nn, c->dims + axis, pstrided ? nn : 0, pstrided ? 2 : 0, st_g);
    t_padded_strides(nn, c->dims + axis, pstrided ? nn : 0, pstrided ? 1 : 0, st_b);
    t_padded_strides(nn, c->dims + axis, pstrided ? nn : 0, pstrided ? 3 : 0, st_dg);
    t_padded_strides(nn, c->dims + axis, pstrided ? nn : 0, pstrided ? 1 : 0, st_db);
    if (pstrided && (c->layout == L_NEGATIVE || c->layout == L_NEG_OUT)) {
        st_g[0] = -st_g[0];
        if (c->layout == L_NEG_OUT) st_db[0] = -st_db[0];
    }

    if (!t_buf_alloc(&bx, c->rank, c->dims, st_x, c->dt) || !t_buf_alloc(&bdy, c->rank, c->dims, st_dy, c->dt) ||
        !t_buf_alloc(&bm, axis, c->dims, st_m, sdt) || !t_buf_alloc(&bv, axis, c->dims, st_v, sdt) ||
        !t_buf_alloc(&bg, 1, &n, NULL, c->pdt) || !t_buf_alloc(&bgs, nn, c->dims + axis, st_g, c->pdt) ||
        !t_buf_alloc(&bb, nn, c->dims + axis, st_b, c->pdt) || !t_buf_alloc(&bdg, nn, c->dims + axis, st_dg, c->pdt) ||
        !t_buf_alloc(&bdb, nn, c->dims + axis, st_db, c->pdt) || !t_buf_alloc(&bres, c->rank, c->dims, st_res, c->dt)) {
        fprintf(stderr, "out of memory\n");
        exit(2);
    }
    memset(&bdx, 0, sizeof bdx);
    if (want_dx) {
        if (c->inplace == IP_DY) pdx = &bdy;
        else if (c->inplace == IP_X) pdx = &bx;
        else if (c->residual >= RES_INPLACE) pdx = &bres;
        else {
            if (!t_buf_alloc(&bdx, c->rank, c->dims, st_dx, c->dt)) { fprintf(stderr, "out of memory\n"); exit(2); }
            pdx = &bdx;
        }
    }

    /* inputs */
    {
        double mu = 0.3, sigma = 1.0;
        if (c->data == D_BIG_MEAN) {
            mu = c->dt == NBWD_F16 ? 1000.0 : 1e4;
            sigma = c->dt == NBWD_F32 ? 0.01 : c->dt == NBWD_F16 ? 5.0 : 500.0;
        }
        if (c->data == D_CONSTANT || c->data == D_CONSTANT_HUGE) {
            /* every row constant: the value of its first element */
            xd = (double *)t_xmalloc((size_t)(rows > 0 ? rows : 1) * sizeof(double));
            for (r = 0; r < rows; ++r)
                xd[r] = c->data == D_CONSTANT ? t_rng_uniform(&rng, -2.0, 2.0)
                                              : (r % 2 ? -1e38 : 1e38) * t_rng_uniform(&rng, 1.0, 3.3);
            for (r = 0; r < rows; ++r)
                for (i = 0; i < n; ++i) t_buf_set(&bx, r * n + i, xd[r]);
            free(xd);
            xd = NULL;
        } else {
            t_buf_fill_normal(&bx, &rng, mu, sigma);
            if (c->data == D_FAR_HEAD) /* even rows: 16 elements at 3e18; odd rows: the first at 7e18 */
                for (r = 0; r < rows; ++r)
                    for (i = 0; i < (r % 2 ? 1 : 16) && i < n; ++i) t_buf_set(&bx, r * n + i, r % 2 ? 7e18 : 3e18);
        }
    }
    t_buf_fill_normal(&bdy, &rng, 0.0, 1.0);
    for (i = 0; i < n; ++i) {
        double gv = c->data == D_GAMMA1 || c->data == D_CONSISTENT ? 1.0 : 1.0 + 0.5 * t_rng_normal(&rng);
        /* a scale of exactly 0, or subnormal: xhat cannot come back from dst there */
        if (c->zero_gamma && i % 5 == 2) gv = -(double)c->gamma_offset;
        if (c->zero_gamma && i % 7 == 3 && c->gamma_offset == 0.0f) gv = 1e-39;
        t_buf_set(&bgs, i, t_buf_set(&bg, i, gv));
        t_buf_set(&bb, i, t_rng_normal(&rng));
    }
    if (c->residual != RES_NONE) t_buf_fill_normal(&bres, &rng, 0.0, 1.0);
    /* statistics from the rounded x, in float64, then rounded to their dtype */
    mean = (double *)t_xmalloc((size_t)(rows > 0 ? rows : 1) * sizeof(double));
    var = (double *)t_xmalloc((size_t)(rows > 0 ? rows : 1) * sizeof(double));
    tx.p = bx.base; tx.dt = c->dt; tx.strides = bx.strides;
    if (c->rms) { /* no mean; the mean square takes the variance's place */
        ref_rms_norm_stats(c->rank, c->dims, axis, tx, var);
        for (r = 0; r < rows; ++r) mean[r] = 0.0;
    } else {
        ref_layer_norm_stats(c->rank, c->dims, axis, tx, mean, var);
    }
    if (c->form == NBWD_STATS_XHAT_STD && total > 0) {
        /* the input becomes xhat = (x - mean) / std, computed from a copy of x */
        xd = (double *)t_xmalloc((size_t)total * sizeof(double));
        t_buf_to_dense(&bx, xd);
        for (r = 0; r < rows; ++r) {
            double sd = sqrt(var[r] + (double)c->eps);
            for (i = 0; i < n; ++i) xd[r * n + i] = (xd[r * n + i] - mean[r]) / sd;
        }
        t_buf_from_dense(&bx, xd);
        free(xd);
        xd = NULL;
    }
    if (dst_form && total > 0) {
        /* the input becomes the forward output y = xhat * (gamma + offset)
           + beta, from a copy of x, rounded to the data type */
        xd = (double *)t_xmalloc((size_t)total * sizeof(double));
        t_buf_to_dense(&bx, xd);
        for (r = 0; r < rows; ++r) {
            double rs = 1.0 / sqrt(var[r] + (double)c->eps);
            for (i = 0; i < n; ++i) {
                double ge = c->affine ? t_buf_get(&bg, i) + (double)c->gamma_offset : 1.0;
                double be = c->affine && !c->no_beta ? t_buf_get(&bb, i) : 0.0;
                xd[r * n + i] = (xd[r * n + i] - mean[r]) * rs * ge + be;
            }
        }
        t_buf_from_dense(&bx, xd);
        free(xd);
        xd = NULL;
    }
    for (r = 0; r < rows; ++r) {
        double spread;
        if (c->form == NBWD_STATS_MEAN_VARIANCE || none_form) spread = var[r];
        else if (c->form == NBWD_STATS_MEAN_RSTD || dst_form)
            spread = c->data == D_CONSISTENT ? 1.0 / sqrt(var[r]) : 1.0 / sqrt(var[r] + (double)c->eps);
        else spread = sqrt(var[r] + (double)c->eps);
        if ((mean_form || none_form) && !c->rms) t_buf_set(&bm, r, mean[r]);
        t_buf_set(&bv, r, spread);
    }
    /* previous values of the parameter gradients (accumulate mode) */
    prev_dg = (double *)t_xmalloc((size_t)(n > 0 ? n : 1) * sizeof(double));
    prev_db = (double *)t_xmalloc((size_t)(n > 0 ? n : 1) * sizeof(double));
    for (i = 0; i < n; ++i) {
        prev_dg[i] = prev_db[i] = 0.0;
        if (c->accumulate) {
            prev_dg[i] = t_buf_set(&bdg, i, t_rng_normal(&rng));
            prev_db[i] = t_buf_set(&bdb, i, t_rng_normal(&rng));
        }
    }

    /* reference (before the call: in-place overwrites an input) */
    memset(&ro, 0, sizeof ro);
    if (want_dx) {
        rdx = ro.dx = (double *)t_xmalloc((size_t)(total > 0 ? total : 1) * sizeof(double));
        rdx_tol = ro.dx_tol = (double *)t_xmalloc((size_t)(total > 0 ? total : 1) * sizeof(double));
    }
    rdg = ro.dg = (double *)t_xmalloc((size_t)(n > 0 ? n : 1) * sizeof(double));
    rdg_tol = ro.dg_tol = (double *)t_xmalloc((size_t)(n > 0 ? n : 1) * sizeof(double));
    rdb = ro.db = (double *)t_xmalloc((size_t)(n > 0 ? n : 1) * sizeof(double));
    rdb_tol = ro.db_tol = (double *)t_xmalloc((size_t)(n > 0 ? n : 1) * sizeof(double));
    tx.p = bx.base; tx.dt = c->dt; tx.strides = bx.strides;
    tdy.p = bdy.base; tdy.dt = c->dt; tdy.strides = bdy.strides;
    tm.p = bm.base; tm.dt = sdt; tm.strides = bm.strides;
    tv.p = bv.base; tv.dt = sdt; tv.strides = bv.strides;
    tg.p = c->affine ? bg.base : NULL; tg.dt = c->pdt; tg.strides = NULL;
    if (c->affine && c->gamma_offset != 0.0f) { /* the reference's scale: gamma + offset, exact */
        gamma_eff = (double *)t_xmalloc((size_t)(n > 0 ? n : 1) * sizeof(double));
        for (i = 0; i < n; ++i) gamma_eff[i] = t_buf_get(&bg, i) + (double)c->gamma_offset;
        tg.p = gamma_eff; tg.dt = T_F64;
    }
    tb.p = NULL; tb.dt = T_F64; tb.strides = NULL;
    if (dst_form && c->affine && !c->no_beta) {
        beta_d = (double *)t_xmalloc((size_t)(n > 0 ? n : 1) * sizeof(double));
        for (i = 0; i < n; ++i) beta_d[i] = t_buf_get(&bb, i);
        tb.p = beta_d;
    }
    if (dst_form) ref_norm_dst_bwd(c->rms, c->rank, c->dims, axis, tx, tdy, tv, tg, tb, ro);
    else if (c->rms) ref_rms_norm_bwd(c->rank, c->dims, axis, ref_form, (double)c->eps, tx, tdy, tv, tg, ro);
    else ref_layer_norm_bwd(c->rank, c->dims, axis, ref_form, (double)c->eps, tx, tdy, tm, tv, tg, ro);
    free(gamma_eff);
    free(beta_d);
    if (none_form && total > 0) none_tolerance(c, rows, n, &bx, &bdy, &bg, mean, var, ro);
    if (c->residual != RES_NONE && want_dx && total > 0) { /* dx + the residual gradient, one more rounding */
        res_d = (double *)t_xmalloc((size_t)total * sizeof(double));
        t_buf_to_dense(&bres, res_d);
        for (i = 0; i < total; ++i) {
            rdx[i] += res_d[i];
            rdx_tol[i] += 2.0 * T_U * (fabs(rdx[i]) + fabs(res_d[i]));
        }
        free(res_d);
    }
    for (i = 0; i < n; ++i) {
        rdg[i] += prev_dg[i];
        rdb[i] += prev_db[i];
        rdg_tol[i] += 2.0 * T_U * fabs(prev_dg[i]);
        rdb_tol[i] += 2.0 * T_U * fabs(prev_db[i]);
    }

    /* the call */
    if (c->rms) nbwd_rms_norm_bwd_desc_init(&desc, c->rank, c->dims);
    else nbwd_layer_norm_bwd_desc_init(&desc, c->rank, c->dims);
    desc.begin_norm_axis = c->axis;
    desc.use_affine = c->affine;
    desc.gamma_offset = c->gamma_offset;
    desc.epsilon = c->eps;
    desc.stats_form = c->form;
    desc.data_dtype = c->dt;
    desc.stats_dtype = c->sdt;
    desc.param_dtype = c->pdt;
    desc.flags = (c->accumulate ? NBWD_ACCUMULATE_PARAM_GRADS : 0u) | (c->residual == RES_FLAG ? NBWD_ACCUMULATE_DIFF_SRC : 0u);
    desc.num_threads = c->threads;
    desc.isa = g_test_isa;
    if (strided || c->inplace) {
        desc.src_strides = bx.strides;
        desc.diff_dst_strides = bdy.strides;
        desc.diff_src_strides = pdx ? pdx->strides : NULL;
        desc.mean_strides = bm.strides;
        desc.var_strides = bv.strides;
    }
    if (strided || c->residual == RES_INPLACE) desc.diff_residual_strides = bres.strides;
    if (pstrided) {
        desc.gamma_strides = bgs.strides;
        desc.beta_strides = bb.strides;
        desc.diff_gamma_strides = bdg.strides;
        desc.diff_beta_strides = bdb.strides;
    }
    memset(&args, 0, sizeof args);
    {
        int ne = c->null_empty && total == 0, nr = c->null_empty && rows == 0, nn0 = c->null_empty && n == 0;
        if (c->form == NBWD_STATS_XHAT_STD) args.xhat = ne ? NULL : bx.base;
        else if (dst_form) args.dst = ne ? NULL : bx.base;
        else args.src = ne ? NULL : bx.base;
        args.diff_dst = ne ? NULL : bdy.base;
        if (mean_form) args.mean = nr ? NULL : bm.base;
        if (c->form == NBWD_STATS_MEAN_VARIANCE) args.variance = nr ? NULL : bv.base;
        else if (c->form == NBWD_STATS_MEAN_RSTD || dst_form) args.rstd = nr ? NULL : bv.base;
        else if (!none_form) args.std = nr ? NULL : bv.base;
        if (c->affine) {
            args.gamma = nn0 ? NULL : bgs.base;
            args.beta = nn0 || c->no_beta ? NULL : bb.base;
        }
        if (c->residual != RES_NONE && c->residual != RES_FLAG && want_dx) args.diff_residual = ne ? NULL : bres.base;
        args.diff_src = pdx && !ne ? pdx->base : NULL;
        args.diff_gamma = want_dg && !nn0 ? bdg.base : NULL;
        args.diff_beta = want_db && !nn0 ? bdb.base : NULL;
    }
    if (c->rms) { /* the same tensors in RMSNorm's struct: no mean, the mean square for the variance */
        memset(&rargs, 0, sizeof rargs);
        rargs.src = args.src; rargs.xhat = args.xhat; rargs.diff_dst = args.diff_dst;
        rargs.mean_square = args.variance; rargs.rstd = args.rstd; rargs.std = args.std; rargs.gamma = args.gamma;
        rargs.diff_src = args.diff_src; rargs.diff_gamma = args.diff_gamma; rargs.diff_beta = args.diff_beta;
        rargs.beta = args.beta; rargs.dst = args.dst; rargs.diff_residual = args.diff_residual;
    }
    s_x = t_snap_take(&bx); s_dy = t_snap_take(&bdy); s_m = t_snap_take(&bm); s_v = t_snap_take(&bv);
    s_g = t_snap_take(&bgs); s_b = t_snap_take(&bb); s_dg = t_snap_take(&bdg); s_db = t_snap_take(&bdb);
    s_res = t_snap_take(&bres);
    allocs0 = t_hook_allocs();
    frees0 = t_hook_frees();
    if (c->caller_ws) {
        st = c->rms ? nbwd_rms_norm_bwd_workspace_size(&desc, &ws_bytes)
                    : nbwd_layer_norm_bwd_workspace_size(&desc, &ws_bytes);
        CHECK_STATUS(st, NBWD_OK);
        ws = t_xmalloc(ws_bytes + 8);
        /* deliberately misaligned */
        st = c->rms ? nbwd_rms_norm_bwd(&desc, &rargs, (char *)ws + 4, ws_bytes)
                    : nbwd_layer_norm_bwd(&desc, &args, (char *)ws + 4, ws_bytes);
    } else {
        st = c->rms ? nbwd_rms_norm_bwd(&desc, &rargs, NULL, 0) : nbwd_layer_norm_bwd(&desc, &args, NULL, 0);
    }
    ok &= CHECK_STATUS(st, NBWD_OK);
    ok &= CHECK(t_hook_allocs() - allocs0 == t_hook_frees() - frees0,
                "the call allocated %ld blocks and freed %ld", t_hook_allocs() - allocs0, t_hook_frees() - frees0);
    if (c->caller_ws)
        ok &= CHECK(t_hook_allocs() == allocs0, "the call allocated %ld blocks although given a workspace",
                    t_hook_allocs() - allocs0);

    if (st == NBWD_OK) {
        if (want_dx && total > 0) ok &= T_COMPARE_BUF("diff_src", pdx, rdx, rdx_tol);
        if (want_dg) ok &= T_COMPARE_BUF("diff_gamma", &bdg, rdg, rdg_tol);
        if (want_db) ok &= T_COMPARE_BUF("diff_beta", &bdb, rdb, rdb_tol);
        if (!want_dg) ok &= CHECK(t_snap_same(&s_dg, &bdg), "diff_gamma not requested but written");
        if (!want_db) ok &= CHECK(t_snap_same(&s_db, &bdb), "diff_beta not requested but written");
        if (pdx) ok &= CHECK(t_buf_canary_ok(pdx), "diff_src: a byte outside its elements was written");
        ok &= CHECK(t_buf_canary_ok(&bdg) && t_buf_canary_ok(&bdb),
                    "diff_gamma/diff_beta: a byte outside their elements was written");
        if (c->inplace != IP_X) ok &= CHECK(t_snap_same(&s_x, &bx), "src/xhat was modified");
        if (c->inplace != IP_DY) ok &= CHECK(t_snap_same(&s_dy, &bdy), "diff_dst was modified");
        if (c->residual < RES_INPLACE) ok &= CHECK(t_snap_same(&s_res, &bres), "diff_residual was modified");
        ok &= CHECK(t_snap_same(&s_m, &bm) && t_snap_same(&s_v, &bv), "statistics were modified");
        ok &= CHECK(t_snap_same(&s_g, &bgs) && t_snap_same(&s_b, &bb), "gamma/beta were modified");
    }

    /* invariants: gamma = 1, f32, consistent statistics (rstd = 1/sqrt(var)) */
    if (st == NBWD_OK && c->invariants && !c->rms && want_dx && rows > 0 && n > 0) {
        int64_t worst_row = -1;
        double worst = 0.0;
        for (r = 0; r < rows; ++r) {
            double m = t_buf_get(&bm, r), rs = t_buf_get(&bv, r), sg = 0, sgx = 0, mg, mgx, s1n = 0, sdx = 0,
                   sdxx = 0, bound;
            for (i = 0; i < n; ++i) {
                double xh = (t_buf_get(&bx, r * n + i) - m) * rs, g = t_buf_get(&bdy, r * n + i);
                sg += g;
                sgx += g * xh;
            }
            mg = sg / (double)n;
            mgx = sgx / (double)n;
            for (i = 0; i < n; ++i) {
                double xh = (t_buf_get(&bx, r * n + i) - m) * rs, g = t_buf_get(&bdy, r * n + i);
                double s1 = rs * (fabs(g) + fabs(mg) + fabs(xh * mgx)), dxv = t_buf_get(pdx, r * n + i);
                s1n += s1 * s1;
                sdx += dxv;
                sdxx += dxv * xh;
            }
            bound = T_U * T_INV_C * sqrt((double)n) * sqrt(s1n);
            if (fabs(sdx) / bound > worst) { worst = fabs(sdx) / bound; worst_row = r; }
            if (fabs(sdxx) / bound > worst) { worst = fabs(sdxx) / bound; worst_row = r; }
        }
        ok &= CHECK(worst <= 1.0, "row invariants sum dx = 0, sum dx*xhat = 0 violated: max |sum|/bound = %.3g (row %lld)",
                    worst, (long long)worst_row);
    }

    if (ws) free(ws);
    t_snap_free(&s_x); t_snap_free(&s_dy); t_snap_free(&s_m); t_snap_free(&s_v); t_snap_free(&s_g);
    t_snap_free(&s_b); t_snap_free(&s_dg); t_snap_free(&s_db); t_snap_free(&s_res);
    free(mean); free(var); free(rdx); free(rdx_tol); free(rdg); free(rdg_tol); free(rdb); free(rdb_tol);
    free(prev_dg); free(prev_db);
    t_buf_free(&bx); t_buf_free(&bdy); t_buf_free(&bm); t_buf_free(&bv); t_buf_free(&bg); t_buf_free(&bb);
    t_buf_free(&bdg); t_buf_free(&bdb); t_buf_free(&bgs); t_buf_free(&bres);
    if (bdx.alloc) t_buf_free(&bdx);
    return ok && g_fail == fails0;
}

#define k_combos t_combos
#define N_COMBOS T_NCOMBOS
/* every set of outputs (Ascend's output_mask: each of its 8 masks, the empty
   one with affine off) */
static const unsigned k_outputs[] = {O_DX, O_DG, O_DB, O_ALL, O_DG | O_DB, O_DX | O_DB, O_DX | O_DG};
#define K_NOUT ((int)(sizeof k_outputs / sizeof k_outputs[0]))

static void set_dims(ln_cfg *c, int rank, int64_t d0, int64_t d1, int64_t d2, int64_t d3) {
    int64_t d[4];
    int k;
    d[0] = d0; d[1] = d1; d[2] = d2; d[3] = d3;
    c->rank = rank;
    for (k = 0; k < rank; ++k) c->dims[k] = d[k];
}

static uint64_t g_seed = 1000;

/* 1. The important axes fully crossed on two shapes. */
static void ln_full_cross(void) {
    int shape, f, k, a, o;
    for (shape = 0; shape < 2; ++shape)
        for (f = 0; f < 4; ++f)
            for (k = 0; k < N_COMBOS; ++k)
                for (a = 1; a >= 0; --a)
                    for (o = 0; o < (a ? K_NOUT : 1); ++o) {
                        ln_cfg c;
                        ln_defaults(&c);
                        if (shape == 0) set_dims(&c, 2, 5, 33, 0, 0);
                        else { set_dims(&c, 3, 3, 4, 17, 0); c.axis = 1; c.layout = L_PADDED; }
                        c.form = k_forms[f];
                        c.dt = k_combos[k].dt; c.sdt = k_combos[k].sdt; c.pdt = k_combos[k].pdt;
                        c.affine = a;
                        c.outputs = a ? k_outputs[o] : O_DX;
                        c.seed = ++g_seed;
                        ln_run(&c);
                    }
    /* no affine and no outputs at all: a valid no-op */
    {
        ln_cfg c;
        ln_defaults(&c);
        set_dims(&c, 2, 4, 9, 0, 0);
        c.affine = 0;
        c.outputs = 0;
        c.seed = ++g_seed;
        ln_run(&c);
    }
}

/* 2. Row lengths (vector widths +-1, tails, long rows) x every dtype combo.
   32 and 64: the widest rows of the narrow-row kernel (four vectors) on
   avx2 and on AVX-512, with no partial vector. */
static void ln_row_lengths(void) {
    /* 1024 and 1025: the last row length whose g and xhat the 16-bit kernels
       keep, and the first they recompute (NBWD__KEEP_COLS); 9 rows of them
       stream dx in bf16 under the test build's NORM_BWD_STREAM_BYTES; every
       other combo of them asks for dx alone (the kernels' dx-with-gamma case) */
    static const int64_t lens[] = {1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 1000, 1024, 1025, 4097};
    int li, k;
    for (li = 0; li < (int)(sizeof lens / sizeof lens[0]); ++li)
        for (k = 0; k < N_COMBOS; ++k) {
            ln_cfg c;
            int keep_edge = lens[li] == 1024 || lens[li] == 1025;
            if (g_quick && k % 3 != 0) continue;
            ln_defaults(&c);
            set_dims(&c, 2, keep_edge ? 9 : lens[li] >= 1000 ? 6 : 13, lens[li], 0, 0);
            c.form = k_forms[(li + k) % 4];
            c.dt = k_combos[k].dt; c.sdt = k_combos[k].sdt; c.pdt = k_combos[k].pdt;
            c.layout = (li + k) % 2 ? L_PADDED : L_DENSE;
            c.caller_ws = k % 4 == 1;
            if (keep_edge && k % 2) c.outputs = O_DX;
            c.seed = ++g_seed;
            ln_run(&c);
        }
}

/* 3. Ranks 1..4 and every axis (positive and negative). */
static void ln_ranks_axes(void) {
    static const int64_t shapes[4][4] = {{37, 0, 0, 0}, {6, 19, 0, 0}, {3, 5, 11, 0}, {2, 3, 4, 9}};
    int rank, ax, k, layout;
    for (rank = 1; rank <= 4; ++rank)
        for (ax = -rank; ax < rank; ++ax)
            for (k = 0; k < 3; ++k) {
                ln_cfg c;
                static const int kk[3] = {0, 4, 8};
                ln_defaults(&c);
                set_dims(&c, rank, shapes[rank - 1][0], shapes[rank - 1][1], shapes[rank - 1][2],
                         shapes[rank - 1][3]);
                c.axis = ax;
                c.dt = k_combos[kk[k]].dt; c.sdt = k_combos[kk[k]].sdt; c.pdt = k_combos[kk[k]].pdt;
                c.form = k_forms[(rank + ax + 3 + k) % 4];
                layout = (rank + ax + k + 8) % 4; /* dense, padded, negative, zero input strides */
                c.layout = layout;
                c.seed = ++g_seed;
                ln_run(&c);
            }
}

/* 3b. Ranks 5..NBWD_MAX_RANK (the specifications allow any rank): every axis,
   dense and padded layouts. */
static void ln_high_ranks(void) {
    static const int64_t shape[NBWD_MAX_RANK] = {2, 3, 1, 2, 5, 3, 2, 4};
    int rank, ax, d;
    for (rank = 5; rank <= NBWD_MAX_RANK; ++rank)
        for (ax = -rank; ax < rank; ++ax) {
            ln_cfg c;
            if (g_quick && ax % 2) continue;
            ln_defaults(&c);
            c.rank = rank;
            for (d = 0; d < rank; ++d) c.dims[d] = shape[d];
            c.axis = ax;
            c.form = k_forms[(rank + ax + 16) % 4];
            c.layout = (rank + ax + 16) % 2 ? L_PADDED : L_DENSE;
            c.seed = ++g_seed;
            ln_run(&c);
        }
}

/* 4. Strides: padding, negative input strides, zero input strides, negative
   output stride, each form and data type, with every output. */
static void ln_strides(void) {
    int layout, f, k;
    for (layout = L_PADDED; layout <= L_NEG_OUT; ++layout)
        for (f = 0; f < 4; ++f)
            for (k = 0; k < N_COMBOS; k += 4) {
                ln_cfg c;
                ln_defaults(&c);
                set_dims(&c, 4, 3, 2, 5, 24);
                c.axis = layout % 2 ? 2 : -1;
                c.layout = layout;
                c.form = k_forms[f];
                c.dt = k_combos[k].dt; c.sdt = k_combos[k].sdt; c.pdt = k_combos[k].pdt;
                c.seed = ++g_seed;
                ln_run(&c);
            }
}

/* 5. In-place (diff_src == diff_dst, diff_src == src/xhat), dense and padded. */
static void ln_inplace(void) {
    int ip, f, k, layout;
    for (ip = IP_DY; ip <= IP_X; ++ip)
        for (f = 0; f < 4; ++f)
            for (k = 0; k < N_COMBOS; k += 2)
                for (layout = 0; layout < 2; ++layout) {
                    ln_cfg c;
                    ln_defaults(&c);
                    if (layout) { set_dims(&c, 3, 4, 3, 65, 0); c.axis = 2; }
                    else set_dims(&c, 2, 9, 40, 0, 0);
                    c.layout = layout;
                    c.inplace = ip;
                    c.form = k_forms[f];
                    c.dt = k_combos[k].dt; c.sdt = k_combos[k].sdt; c.pdt = k_combos[k].pdt;
                    c.seed = ++g_seed;
                    ln_run(&c);
                }
}

/* 6. Accumulate mode with every output set and dtype combo. */
static void ln_accumulate(void) {
    int o, k;
    for (o = 0; o < K_NOUT; ++o)
        for (k = 0; k < N_COMBOS; ++k) {
            ln_cfg c;
            if (g_quick && k % 2) continue;
            ln_defaults(&c);
            set_dims(&c, 2, 50, 17, 0, 0);
            c.accumulate = 1;
            c.outputs = k_outputs[o];
            c.form = k_forms[k % 4];
            c.dt = k_combos[k].dt; c.sdt = k_combos[k].sdt; c.pdt = k_combos[k].pdt;
            c.seed = ++g_seed;
            ln_run(&c);
        }
}

/* 7. Large tensors (>= 2^20 elements; many short rows). */
static void ln_large(void) {
    ln_cfg c;
    ln_defaults(&c);
    set_dims(&c, 2, 512, 2048, 0, 0);
    c.seed = ++g_seed;
    ln_run(&c);
    c.dt = NBWD_BF16; c.sdt = NBWD_F32; c.pdt = NBWD_BF16;
    c.form = NBWD_STATS_MEAN_RSTD;
    c.seed = ++g_seed;
    ln_run(&c);
    /* NBWD_STATS_NONE over many statistics batches, two threads */
    ln_defaults(&c);
    set_dims(&c, 2, 700, 1031, 0, 0);
    c.form = NBWD_STATS_NONE;
    c.threads = 2;
    c.data = D_BIG_MEAN;
    c.seed = ++g_seed;
    ln_run(&c);
    if (g_quick) return;
    ln_defaults(&c);
    set_dims(&c, 2, 500000, 24, 0, 0);
    c.seed = ++g_seed;
    ln_run(&c);
    c.form = NBWD_STATS_NONE;
    c.threads = 2;
    c.seed = ++g_seed;
    ln_run(&c);
    c.threads = 1;
    c.dt = NBWD_F16; c.sdt = NBWD_F32; c.pdt = NBWD_F32;
    c.form = NBWD_STATS_XHAT_STD;
    c.layout = L_PADDED;
    c.seed = ++g_seed;
    ln_run(&c);
    ln_defaults(&c); /* one row of 2^20 elements, and two of 300001 in bf16 */
    set_dims(&c, 2, 1, 1 << 20, 0, 0);
    c.seed = ++g_seed;
    ln_run(&c);
    set_dims(&c, 2, 2, 300001, 0, 0);
    c.dt = c.pdt = NBWD_BF16;
    c.form = NBWD_STATS_XHAT_STD;
    c.seed = ++g_seed;
    ln_run(&c);
    ln_defaults(&c); /* rank 3, normalized over two axes, accumulate, 2 threads */
    set_dims(&c, 3, 64, 128, 160, 0);
    c.axis = 1;
    c.accumulate = 1;
    c.threads = 2;
    c.dt = c.sdt = c.pdt = NBWD_BF16;
    c.seed = ++g_seed;
    ln_run(&c);
}

/* Exactly-zero checks for N = 1: dx = 0 and dgamma = 0 (xhat = 0 exactly). */
static void ln_n_equals_1(void) {
    int k, f;
    for (k = 0; k < N_COMBOS; ++k)
        for (f = 0; f < 2; ++f) { /* the x/mean forms: xhat = (x - mean) * rstd = 0 */
            nbwd_layer_norm_bwd_desc d;
            nbwd_layer_norm_bwd_args a;
            int64_t dims[3] = {7, 5, 1}, rows = 35, i;
            t_buf bx, bdy, bdx, bm, bv, bg, bdg, bdb;
            t_rng rng;
            nbwd_status s;
            int zero_dx = 1, zero_dg = 1;
            double db_err = 0.0;
            t_case("LN N=1 exact zeros: dims 7x5x1 axis 2 form=%s dt=%s/%s/%s", t_form_name((nbwd_stats_form)f),
                   t_dtype_name(k_combos[k].dt), t_dtype_name(k_combos[k].sdt), t_dtype_name(k_combos[k].pdt));
            t_rng_seed(&rng, ++g_seed);
            t_buf_alloc(&bx, 3, dims, NULL, k_combos[k].dt);
            t_buf_alloc(&bdy, 3, dims, NULL, k_combos[k].dt);
            t_buf_alloc(&bdx, 3, dims, NULL, k_combos[k].dt);
            t_buf_alloc(&bm, 2, dims, NULL, k_combos[k].sdt);
            t_buf_alloc(&bv, 2, dims, NULL, k_combos[k].sdt);
            t_buf_alloc(&bg, 1, dims + 2, NULL, k_combos[k].pdt);
            t_buf_alloc(&bdg, 1, dims + 2, NULL, k_combos[k].pdt);
            t_buf_alloc(&bdb, 1, dims + 2, NULL, k_combos[k].pdt);
            t_buf_fill_normal(&bdy, &rng, 0.0, 1.0);
            t_buf_set(&bg, 0, 1.7);
            for (i = 0; i < rows; ++i) {
                /* x rounded to the data type; the mean of one element is that element
                   (exactly representable in the stats type when x is) */
                double x = t_round_to(k_combos[k].sdt, t_buf_set(&bx, i, 3.0 * t_rng_normal(&rng)));
                t_buf_set(&bx, i, x);
                t_buf_set(&bm, i, x);
                t_buf_set(&bv, i, f == 0 ? 0.0 : 1.0 / sqrt(1e-5));
            }
            nbwd_layer_norm_bwd_desc_init(&d, 3, dims);
            d.begin_norm_axis = 2;
            d.stats_form = (nbwd_stats_form)f;
            d.data_dtype = k_combos[k].dt; d.stats_dtype = k_combos[k].sdt; d.param_dtype = k_combos[k].pdt;
            d.isa = g_test_isa;
            memset(&a, 0, sizeof a);
            a.src = bx.base; a.diff_dst = bdy.base; a.mean = bm.base;
            if (f == 0) a.variance = bv.base; else a.rstd = bv.base;
            a.gamma = bg.base; a.diff_src = bdx.base; a.diff_gamma = bdg.base; a.diff_beta = bdb.base;
            s = nbwd_layer_norm_bwd(&d, &a, NULL, 0);
            CHECK_STATUS(s, NBWD_OK);
            for (i = 0; i < rows; ++i)
                if (t_buf_get(&bdx, i) != 0.0) zero_dx = 0;
            if (t_buf_get(&bdg, 0) != 0.0) zero_dg = 0;
            {
                double sum = 0.0, abs = 0.0;
                for (i = 0; i < rows; ++i) { sum += t_buf_get(&bdy, i); abs += fabs(t_buf_get(&bdy, i)); }
                db_err = fabs(t_buf_get(&bdb, 0) - sum);
                CHECK(t_within(k_combos[k].pdt, t_buf_get(&bdb, 0), sum, t_tol_param(abs, rows, 0.0)),
                      "N=1: diff_beta %.9g, expected %.9g (err %.3g)", t_buf_get(&bdb, 0), sum, db_err);
            }
            CHECK(zero_dx, "N=1: diff_src must be exactly 0");
            CHECK(zero_dg, "N=1: diff_gamma must be exactly 0, got %.9g", t_buf_get(&bdg, 0));
            t_buf_free(&bx); t_buf_free(&bdy); t_buf_free(&bdx); t_buf_free(&bm); t_buf_free(&bv);
            t_buf_free(&bg); t_buf_free(&bdg); t_buf_free(&bdb);
        }
}

/* A NaN statistic whose payload fills the mantissa (0x7fffffff) makes its
   row's dx NaN with that payload. Narrowed to bf16 or f16, every element of
   that row must stay a NaN: rounding such a payload up carries into the
   exponent and sign (0x8000, -0) unless NaNs are handled apart. The other
   rows stay finite, diff_gamma is NaN and diff_beta finite. Widths: the
   narrow-row kernel (24), a partial last vector (37), rows kept in f32 (768)
   and recomputed (2056). */
static void ln_nan_stat(void) {
    static const int64_t widths[] = {24, 37, 768, 2056};
    static const nbwd_dtype dts[] = {NBWD_BF16, NBWD_F16};
    const int64_t rows = 5, nan_row = 2;
    const uint32_t payload = 0x7fffffffu;
    int wi, di;
    for (di = 0; di < 2; ++di)
        for (wi = 0; wi < 4; ++wi) {
            nbwd_layer_norm_bwd_desc d;
            nbwd_layer_norm_bwd_args a;
            int64_t dims[2], i, j;
            t_buf bx, bdy, bdx, bm, bv, bg, bdg, bdb;
            t_rng rng;
            long not_nan = 0, not_finite = 0, bad_dg = 0, bad_db = 0;
            dims[0] = rows;
            dims[1] = widths[wi];
            t_case("LN NaN mean (payload 0x%08x) in row %lld: %lldx%lld dt=%s/f32/f32", (unsigned)payload,
                   (long long)nan_row, (long long)rows, (long long)widths[wi], t_dtype_name(dts[di]));
            t_rng_seed(&rng, ++g_seed);
            t_buf_alloc(&bx, 2, dims, NULL, dts[di]);
            t_buf_alloc(&bdy, 2, dims, NULL, dts[di]);
            t_buf_alloc(&bdx, 2, dims, NULL, dts[di]);
            t_buf_alloc(&bm, 1, dims, NULL, NBWD_F32);
            t_buf_alloc(&bv, 1, dims, NULL, NBWD_F32);
            t_buf_alloc(&bg, 1, dims + 1, NULL, NBWD_F32);
            t_buf_alloc(&bdg, 1, dims + 1, NULL, NBWD_F32);
            t_buf_alloc(&bdb, 1, dims + 1, NULL, NBWD_F32);
            t_buf_fill_normal(&bx, &rng, 0.5, 2.0);
            t_buf_fill_normal(&bdy, &rng, 0.0, 1.0);
            t_buf_fill_normal(&bg, &rng, 1.0, 0.5);
            for (i = 0; i < rows; ++i) {
                t_buf_set(&bm, i, 0.5);
                t_buf_set(&bv, i, 4.0);
            }
            memcpy(bm.base + t_buf_offset(&bm, nan_row) * 4, &payload, 4);
            nbwd_layer_norm_bwd_desc_init(&d, 2, dims);
            d.data_dtype = dts[di];
            d.isa = g_test_isa;
            memset(&a, 0, sizeof a);
            a.src = bx.base; a.diff_dst = bdy.base; a.mean = bm.base; a.variance = bv.base; a.gamma = bg.base;
            a.diff_src = bdx.base; a.diff_gamma = bdg.base; a.diff_beta = bdb.base;
            CHECK_STATUS(nbwd_layer_norm_bwd(&d, &a, NULL, 0), NBWD_OK);
            for (i = 0; i < rows; ++i)
                for (j = 0; j < widths[wi]; ++j) {
                    double v = t_buf_get(&bdx, i * widths[wi] + j);
                    if (i == nan_row && !isnan(v)) ++not_nan;
                    if (i != nan_row && (isnan(v) || isinf(v))) ++not_finite;
                }
            for (j = 0; j < widths[wi]; ++j) {
                if (!isnan(t_buf_get(&bdg, j))) ++bad_dg;
                if (isnan(t_buf_get(&bdb, j)) || isinf(t_buf_get(&bdb, j))) ++bad_db;
            }
            CHECK(not_nan == 0, "NaN row: %ld of %lld dx elements are not NaN", not_nan, (long long)widths[wi]);
            CHECK(not_finite == 0, "other rows: %ld dx elements are not finite", not_finite);
            CHECK(bad_dg == 0, "%ld diff_gamma elements are not NaN", bad_dg);
            CHECK(bad_db == 0, "%ld diff_beta elements are not finite", bad_db);
            CHECK(t_buf_canary_ok(&bdx), "dx written outside its elements");
            t_buf_free(&bx); t_buf_free(&bdy); t_buf_free(&bdx); t_buf_free(&bm); t_buf_free(&bv);
            t_buf_free(&bg); t_buf_free(&bdg); t_buf_free(&bdb);
        }
}

/* Zero rows: diff_gamma = diff_beta = 0 written (accumulate: unchanged). */
static void ln_zero_rows(void) {
    int acc, nul, k;
    for (k = 0; k < N_COMBOS; k += 4)
        for (acc = 0; acc < 2; ++acc)
            for (nul = 0; nul < 2; ++nul) {
                nbwd_layer_norm_bwd_desc d;
                nbwd_layer_norm_bwd_args a;
                int64_t dims[3] = {3, 0, 16}, n = 16, i;
                t_buf bx, bdy, bdx, bm, bv, bg, bdg, bdb;
                nbwd_status s;
                int ok_dg = 1, ok_db = 1;
                double prev = 0.75;
                t_case("LN zero rows: dims 3x0x16 axis 2 dt=%s acc=%d null_inputs=%d", t_dtype_name(k_combos[k].dt),
                       acc, nul);
                t_buf_alloc(&bx, 3, dims, NULL, k_combos[k].dt);
                t_buf_alloc(&bdy, 3, dims, NULL, k_combos[k].dt);
                t_buf_alloc(&bdx, 3, dims, NULL, k_combos[k].dt);
                t_buf_alloc(&bm, 2, dims, NULL, k_combos[k].sdt);
                t_buf_alloc(&bv, 2, dims, NULL, k_combos[k].sdt);
                t_buf_alloc(&bg, 1, &n, NULL, k_combos[k].pdt);
                t_buf_alloc(&bdg, 1, &n, NULL, k_combos[k].pdt);
                t_buf_alloc(&bdb, 1, &n, NULL, k_combos[k].pdt);
                for (i = 0; i < n; ++i) {
                    t_buf_set(&bg, i, 1.0);
                    if (acc) { t_buf_set(&bdg, i, prev); t_buf_set(&bdb, i, -prev); }
                }
                nbwd_layer_norm_bwd_desc_init(&d, 3, dims);
                d.data_dtype = k_combos[k].dt; d.stats_dtype = k_combos[k].sdt; d.param_dtype = k_combos[k].pdt;
                d.flags = acc ? NBWD_ACCUMULATE_PARAM_GRADS : 0u;
                d.isa = g_test_isa;
                memset(&a, 0, sizeof a);
                if (!nul) {
                    a.src = bx.base; a.diff_dst = bdy.base; a.mean = bm.base; a.variance = bv.base;
                    a.diff_src = bdx.base;
                }
                a.gamma = bg.base; a.diff_gamma = bdg.base; a.diff_beta = bdb.base;
                s = nbwd_layer_norm_bwd(&d, &a, NULL, 0);
                CHECK_STATUS(s, NBWD_OK);
                for (i = 0; i < n; ++i) {
                    if (t_buf_get(&bdg, i) != (acc ? prev : 0.0)) ok_dg = 0;
                    if (t_buf_get(&bdb, i) != (acc ? -prev : 0.0)) ok_db = 0;
                }
                CHECK(ok_dg && ok_db, "zero rows: diff_gamma/diff_beta must be %s", acc ? "unchanged" : "0");
                CHECK(t_buf_canary_ok(&bdx), "zero rows: diff_src (no elements) written");
                t_buf_free(&bx); t_buf_free(&bdy); t_buf_free(&bdx); t_buf_free(&bm); t_buf_free(&bv);
                t_buf_free(&bg); t_buf_free(&bdg); t_buf_free(&bdb);
            }
}

/* 8. Degenerate shapes and data. */
static void ln_degenerate(void) {
    int f, k;
    ln_cfg c;
    ln_zero_rows();
    /* zero rows through the generic runner too (accumulate on/off, NULL inputs) */
    for (k = 0; k < 4; ++k) {
        ln_defaults(&c);
        set_dims(&c, 2, 0, 24, 0, 0);
        c.accumulate = k & 1;
        c.null_empty = (k >> 1) & 1;
        c.seed = ++g_seed;
        ln_run(&c);
    }
    /* zero-length normalized dim: nothing to compute, nothing written */
    for (k = 0; k < 2; ++k) {
        ln_defaults(&c);
        if (k) { set_dims(&c, 3, 2, 0, 3, 0); c.axis = 1; }
        else set_dims(&c, 2, 4, 0, 0, 0);
        c.null_empty = 1;
        c.seed = ++g_seed;
        ln_run(&c);
    }
    ln_n_equals_1();
    ln_nan_stat();
    /* N = 1 through the runner (XHAT form, all dtypes): checked against the reference */
    for (k = 0; k < N_COMBOS; k += 2) {
        ln_defaults(&c);
        set_dims(&c, 3, 4, 1, 1, 0);
        c.axis = 1;
        c.form = NBWD_STATS_XHAT_STD;
        c.dt = k_combos[k].dt; c.sdt = k_combos[k].sdt; c.pdt = k_combos[k].pdt;
        c.seed = ++g_seed;
        ln_run(&c);
    }
    /* constant rows (zero variance), every form and dtype combo; at +-1e38
       the forms with a mean have |mean| * rstd past FLT_MAX, so the lanes
       past a row's end in its last, partial vector would have an infinite
       xhat: such rows (45, 29 and 11 end in one on every vector path)
       must run elsewhere; widths the wide-row loop (45) and the narrow-row
       kernels (29, 11) would take */
    for (f = 0; f < 4; ++f)
        for (k = 0; k < N_COMBOS; ++k) {
            static const int64_t widths[3] = {45, 29, 11};
            int w;
            ln_defaults(&c);
            set_dims(&c, 2, 6, 45, 0, 0);
            c.data = D_CONSTANT;
            c.form = k_forms[f];
            c.dt = k_combos[k].dt; c.sdt = k_combos[k].sdt; c.pdt = k_combos[k].pdt;
            c.seed = ++g_seed;
            ln_run(&c);
            /* (f16 holds no such x or mean; XHAT_STD takes no mean) */
            if (c.dt == NBWD_F16 || c.sdt == NBWD_F16 || c.form == NBWD_STATS_XHAT_STD) continue;
            for (w = 0; w < (c.form == NBWD_STATS_NONE ? 1 : 3); ++w) {
                set_dims(&c, 2, 6, widths[w], 0, 0);
                c.data = D_CONSTANT_HUGE;
                c.seed = ++g_seed;
                ln_run(&c);
            }
        }
    /* |mean| >> std */
    for (f = 0; f < 4; ++f)
        for (k = 0; k < N_COMBOS; ++k) {
            ln_defaults(&c);
            set_dims(&c, 2, 8, 100, 0, 0);
            c.data = D_BIG_MEAN;
            c.form = k_forms[f];
            c.dt = k_combos[k].dt; c.sdt = k_combos[k].sdt; c.pdt = k_combos[k].pdt;
            if (c.sdt != NBWD_F32) continue; /* a 16-bit mean of 1e4 is off by many std: covered elsewhere */
            c.seed = ++g_seed;
            ln_run(&c);
        }
    /* NONE: a first vector far from the rest (summed again around the mean) */
    for (k = 0; k < N_COMBOS; ++k) {
        ln_defaults(&c);
        set_dims(&c, 2, 4, 1024, 0, 0);
        c.data = D_FAR_HEAD;
        c.form = NBWD_STATS_NONE;
        c.dt = k_combos[k].dt; c.sdt = k_combos[k].sdt; c.pdt = k_combos[k].pdt;
        if (c.dt == NBWD_F16) continue; /* (f16 holds no such x) */
        c.seed = ++g_seed;
        ln_run(&c);
    }
    /* tiny and large epsilon */
    for (k = 0; k < N_COMBOS; ++k) {
        ln_defaults(&c);
        set_dims(&c, 2, 6, 77, 0, 0);
        c.eps = k % 2 ? 1e-12f : 10.0f;
        c.form = k_forms[k % 4]; /* MEAN_RSTD / XHAT_STD must ignore epsilon */
        c.dt = k_combos[k].dt; c.sdt = k_combos[k].sdt; c.pdt = k_combos[k].pdt;
        c.seed = ++g_seed;
        ln_run(&c);
        /* constant rows with tiny epsilon: rstd = 1e6; in f16 most of dx overflows to +-inf
           (round to nearest on store), which the comparison requires */
        if (c.eps < 1e-6f) {
            c.data = D_CONSTANT;
            c.seed = ++g_seed;
            ln_run(&c);
        }
    }
}

/* 9. Invariants: sum dx = 0 and sum dx * xhat = 0 per row (gamma = 1). */
static void ln_invariants(void) {
    static const int64_t lens[] = {7, 64, 1000, 4097};
    int li, aff;
    for (li = 0; li < 4; ++li)
        for (aff = 0; aff < 2; ++aff) {
            ln_cfg c;
            ln_defaults(&c);
            set_dims(&c, 2, 9, lens[li], 0, 0);
            c.form = NBWD_STATS_MEAN_RSTD;
            c.data = D_CONSISTENT; /* gamma = 1 and rstd = 1/sqrt(var) */
            c.affine = aff;
            c.invariants = 1;
            c.outputs = O_DX;
            c.seed = ++g_seed;
            ln_run(&c);
        }
}

/* 10. Thread counts (results are checked against the reference here; bitwise
   equality across thread counts is test_determinism's job). */
static void ln_threads(void) {
    static const int threads[] = {1, 2, 3, 5};
    int t;
    for (t = 0; t < 4; ++t) { /* in-place and padded with several threads */
        ln_cfg c;
        ln_defaults(&c);
        set_dims(&c, 3, 40, 9, 97, 0);
        c.threads = threads[t];
        c.inplace = t % 2 ? IP_DY : IP_X;
        c.layout = L_PADDED;
        c.form = k_forms[t % 4];
        c.dt = t % 2 ? NBWD_F16 : NBWD_F32;
        c.seed = ++g_seed;
        ln_run(&c);
    }
    for (t = 0; t < 4; ++t) { /* many short rows over several outer dims, negative / zero input strides */
        ln_cfg c;
        ln_defaults(&c);
        set_dims(&c, 3, 500, 40, 8, 0);
        c.axis = 2;
        c.threads = threads[t];
        c.layout = t % 2 ? L_ZERO : L_NEG_OUT;
        c.dt = t < 2 ? NBWD_F32 : NBWD_BF16;
        c.form = t % 2 ? NBWD_STATS_NONE : NBWD_STATS_MEAN_VARIANCE;
        c.accumulate = t == 3;
        c.seed = ++g_seed;
        ln_run(&c);
    }
    for (t = 0; t < 4; ++t) {
        ln_cfg c;
        ln_defaults(&c);
        set_dims(&c, 2, 301, 130, 0, 0);
        c.threads = threads[t];
        c.accumulate = t % 2;
        c.dt = t % 2 ? NBWD_BF16 : NBWD_F32;
        c.seed = ++g_seed;
        ln_run(&c);
    }
}

/* 12. gamma_offset (zero-centred gamma): the scale is gamma + offset for
   diff_src, diff_gamma unchanged; every form and dtype combination, the
   row-length sweep's kernels (short, vector-wide, long rows), strided
   gamma, accumulate, two threads; and the refusals (NaN, infinite, nonzero
   without affine). */
static void ln_gamma_offset(void) {
    static const float offsets[3] = {1.0f, -0.75f, 3.0e-3f};
    static const int64_t lens[4] = {7, 64, 333, 4099};
    int f, k, o, l;
    for (f = 0; f < 4; ++f)
        for (k = 0; k < N_COMBOS; ++k)
            for (o = 0; o < 3; ++o) {
                ln_cfg c;
                ln_defaults(&c);
                set_dims(&c, 2, 5, 33, 0, 0);
                c.form = k_forms[f];
                c.dt = k_combos[k].dt; c.sdt = k_combos[k].sdt; c.pdt = k_combos[k].pdt;
                c.gamma_offset = offsets[o];
                c.outputs = o == 2 ? O_DX : O_ALL;
                c.seed = ++g_seed;
                ln_run(&c);
            }
    for (l = 0; l < 4; ++l) {
        ln_cfg c;
        ln_defaults(&c);
        set_dims(&c, 2, 9, lens[l], 0, 0);
        c.gamma_offset = 1.0f;
        c.layout = l % 2 ? L_PADDED : L_DENSE;
        c.accumulate = l == 3;
        c.threads = 2;
        c.seed = ++g_seed;
        ln_run(&c);
    }
    {
        int64_t dims[2] = {2, 3};
        float buf[16] = {0};
        nbwd_layer_norm_bwd_desc d;
        nbwd_layer_norm_bwd_args a;
        static const float bad[3] = {0.0f, 0.0f, 1.0f};
        int b;
        t_case("LN gamma_offset refusals");
        memset(&a, 0, sizeof a);
        a.src = buf; a.diff_dst = buf; a.mean = buf; a.variance = buf; a.gamma = buf; a.diff_src = buf + 8;
        for (b = 0; b < 3; ++b) {
            nbwd_layer_norm_bwd_desc_init(&d, 2, dims);
            d.gamma_offset = b == 0 ? (float)NAN : b == 1 ? (float)INFINITY : bad[b];
            if (b == 2) { d.use_affine = 0; a.gamma = NULL; }
            CHECK_STATUS(nbwd_layer_norm_bwd(&d, &a, NULL, 0), NBWD_ERR_BAD_PARAM);
            CHECK(strstr(nbwd_last_error(), "gamma_offset") != NULL, "the message names gamma_offset: %s",
                  nbwd_last_error());
            CHECK(buf[8] == 0.0f, "a refused call wrote diff_src");
        }
    }
}

/* 13. RMSNorm through the same harness: every form x dtype combination x
   affine x outputs on two shapes, data with a large mean (centring would
   change the result), the row lengths of every kernel (narrow rows, vector
   widths and tails, long rows, the AVX-512 sweep), ranks and axes, strides,
   in-place, accumulate, gamma_offset, threads; then its refusals. */
static void rms_cases(void) {
    static const int64_t lens[] = {1, 3, 8, 16, 24, 31, 32, 33, 64, 65, 768, 1025, 4097};
    int shape, f, k, a, o, li;
    for (shape = 0; shape < 2; ++shape)
        for (f = 0; f < 4; ++f)
            for (k = 0; k < N_COMBOS; ++k)
                for (a = 1; a >= 0; --a)
                    for (o = 0; o < (a ? K_NOUT : 1); ++o) {
                        ln_cfg c;
                        if (g_quick && (k + o) % 3) continue;
                        ln_defaults(&c);
                        c.rms = 1;
                        if (shape == 0) set_dims(&c, 2, 5, 33, 0, 0);
                        else { set_dims(&c, 3, 3, 4, 17, 0); c.axis = 1; c.layout = L_PADDED; }
                        c.form = k_forms[f];
                        c.dt = k_combos[k].dt; c.sdt = k_combos[k].sdt; c.pdt = k_combos[k].pdt;
                        c.affine = a;
                        c.outputs = a ? k_outputs[o] : O_DX;
                        c.data = (k + o) % 4 == 0 ? D_BIG_MEAN : D_NORMAL;
                        c.seed = ++g_seed;
                        ln_run(&c);
                    }
    for (li = 0; li < (int)(sizeof lens / sizeof lens[0]); ++li)
        for (k = 0; k < N_COMBOS; k += 2) {
            ln_cfg c;
            ln_defaults(&c);
            c.rms = 1;
            set_dims(&c, 2, lens[li] >= 1000 ? 6 : 13, lens[li], 0, 0);
            c.form = k_forms[(li + k) % 4];
            c.dt = k_combos[k].dt; c.sdt = k_combos[k].sdt; c.pdt = k_combos[k].pdt;
            c.layout = (li + k) % 2 ? L_PADDED : L_DENSE;
            c.caller_ws = k % 4 == 2;
            c.outputs = (li + k) % 5 == 0 ? O_DX : O_ALL;
            c.seed = ++g_seed;
            ln_run(&c);
        }
    for (k = 0; k < 8; ++k) { /* ranks and axes, strides, in-place, accumulate, offset, threads */
        ln_cfg c;
        ln_defaults(&c);
        c.rms = 1;
        set_dims(&c, 4, 2, 3, 4, 9);
        c.axis = k % 4 - 3;
        c.layout = k % 5;
        c.inplace = k == 5 ? IP_DY : k == 6 ? IP_X : IP_NONE;
        if (c.inplace) c.layout = L_DENSE;
        c.accumulate = k % 3 == 1;
        c.gamma_offset = k % 2 ? 1.0f : 0.0f;
        c.threads = 1 + k % 3;
        c.form = k_forms[k % 4];
        c.dt = k_combos[(3 * k) % N_COMBOS].dt; c.sdt = k_combos[(3 * k) % N_COMBOS].sdt;
        c.pdt = k_combos[(3 * k) % N_COMBOS].pdt;
        c.seed = ++g_seed;
        ln_run(&c);
    }
    if (!g_quick) { /* large: the sweep (f32, both outputs) and 16-bit streaming; 2 threads */
        ln_cfg c;
        ln_defaults(&c);
        c.rms = 1;
        set_dims(&c, 2, 512, 2048, 0, 0);
        c.threads = 2;
        c.seed = ++g_seed;
        ln_run(&c);
        c.dt = c.pdt = NBWD_BF16;
        c.form = NBWD_STATS_RSTD;
        c.gamma_offset = 1.0f;
        c.seed = ++g_seed;
        ln_run(&c);
        c.form = NBWD_STATS_NONE; /* many statistics batches */
        c.threads = 3;
        c.seed = ++g_seed;
        ln_run(&c);
    }
    {
        int64_t dims[2] = {2, 3};
        float buf[16] = {0};
        nbwd_rms_norm_bwd_desc d;
        nbwd_layer_norm_bwd_desc ld;
        nbwd_rms_norm_bwd_args a;
        nbwd_layer_norm_bwd_args la;
        size_t bytes = 0;
        t_case("RMSNorm refusals");
        memset(&a, 0, sizeof a);
        a.src = buf; a.diff_dst = buf; a.mean_square = buf; a.gamma = buf; a.diff_src = buf + 8;
        /* a LayerNorm descriptor is not an RMSNorm one, nor the reverse */
        nbwd_layer_norm_bwd_desc_init(&ld, 2, dims);
        CHECK_STATUS(nbwd_rms_norm_bwd(&ld, &a, NULL, 0), NBWD_ERR_NOT_INITIALIZED);
        CHECK(strstr(nbwd_last_error(), "nbwd_rms_norm_bwd_desc_init") != NULL &&
                  strstr(nbwd_last_error(), "LayerNorm") != NULL,
              "the message names the init function and the descriptor's operation: %s", nbwd_last_error());
        CHECK_STATUS(nbwd_rms_norm_bwd_workspace_size(&ld, &bytes), NBWD_ERR_NOT_INITIALIZED);
        nbwd_rms_norm_bwd_desc_init(&d, 2, dims);
        memset(&la, 0, sizeof la);
        la.src = buf; la.diff_dst = buf; la.mean = buf; la.variance = buf; la.gamma = buf; la.diff_src = buf + 8;
        CHECK_STATUS(nbwd_layer_norm_bwd(&d, &la, NULL, 0), NBWD_ERR_NOT_INITIALIZED);
        CHECK(strstr(nbwd_last_error(), "made for RMSNorm") != NULL, "message: %s", nbwd_last_error());
        /* a form's input missing or another form's given, in RMSNorm's words */
        a.mean_square = NULL;
        CHECK_STATUS(nbwd_rms_norm_bwd(&d, &a, NULL, 0), NBWD_ERR_NULL_POINTER);
        CHECK(strstr(nbwd_last_error(), "args.mean_square is NULL") != NULL &&
                  strstr(nbwd_last_error(), "NBWD_STATS_MEAN_SQUARE") != NULL,
              "message: %s", nbwd_last_error());
        a.rstd = buf;
        CHECK_STATUS(nbwd_rms_norm_bwd(&d, &a, NULL, 0), NBWD_ERR_BAD_PARAM);
        CHECK(strstr(nbwd_last_error(), "args.rstd is set") != NULL &&
                  strstr(nbwd_last_error(), "NBWD_STATS_RSTD") != NULL,
              "message: %s", nbwd_last_error());
        a.mean_square = buf; a.rstd = NULL;
        d.flags = NBWD_USE_GLOBAL_STATS;
        CHECK_STATUS(nbwd_rms_norm_bwd(&d, &a, NULL, 0), NBWD_ERR_BAD_PARAM);
        d.flags = 0;
        d.epsilon = 0.0f; /* the message names RMSNorm's form */
        CHECK_STATUS(nbwd_rms_norm_bwd(&d, &a, NULL, 0), NBWD_ERR_BAD_PARAM);
        CHECK(strstr(nbwd_last_error(), "NBWD_STATS_MEAN_SQUARE") != NULL &&
                  strstr(nbwd_last_error(), "MEAN_VARIANCE") == NULL,
              "message: %s", nbwd_last_error());
        d.stats_form = NBWD_STATS_NONE; /* (no mean square given) */
        a.mean_square = NULL;
        CHECK_STATUS(nbwd_rms_norm_bwd(&d, &a, NULL, 0), NBWD_ERR_BAD_PARAM);
        CHECK(strstr(nbwd_last_error(), "NBWD_STATS_NONE") != NULL, "message: %s", nbwd_last_error());
        d.epsilon = 1e-5f;
        a.mean_square = buf; /* the NONE form reads src alone */
        CHECK_STATUS(nbwd_rms_norm_bwd(&d, &a, NULL, 0), NBWD_ERR_BAD_PARAM);
        CHECK(strstr(nbwd_last_error(), "args.mean_square is set") != NULL, "message: %s", nbwd_last_error());
        /* diff_src += the gradient is the residual route: not both */
        a.mean_square = NULL;
        d.flags = NBWD_ACCUMULATE_DIFF_SRC;
        a.diff_residual = buf + 8;
        CHECK_STATUS(nbwd_rms_norm_bwd(&d, &a, NULL, 0), NBWD_ERR_BAD_PARAM);
        CHECK(strstr(nbwd_last_error(), "NBWD_ACCUMULATE_DIFF_SRC") != NULL, "message: %s", nbwd_last_error());
        a.diff_residual = NULL;
        d.flags = 0;
        d.stats_form = NBWD_STATS_MEAN_SQUARE;
        a.mean_square = buf;
        /* use_affine = 0 reads no gamma: a gamma given is refused, as an unread statistic is */
        d.use_affine = 0;
        CHECK_STATUS(nbwd_rms_norm_bwd(&d, &a, NULL, 0), NBWD_ERR_BAD_PARAM);
        CHECK(strstr(nbwd_last_error(), "args.gamma is set but desc.use_affine = 0") != NULL, "message: %s",
              nbwd_last_error());
        d.use_affine = 1;
        CHECK(buf[8] == 0.0f, "a refused call wrote diff_src");
        CHECK_STATUS(nbwd_rms_norm_bwd(&d, NULL, NULL, 0), NBWD_ERR_NULL_POINTER);
        CHECK_STATUS(nbwd_rms_norm_bwd(NULL, &a, NULL, 0), NBWD_ERR_NULL_POINTER);
        a.diff_src = buf; /* diff_src over x: allowed (in place) only as the very same view, here it is */
        a.diff_gamma = buf + 1; /* diff_gamma inside diff_src's bytes: refused */
        CHECK_STATUS(nbwd_rms_norm_bwd(&d, &a, NULL, 0), NBWD_ERR_BAD_ALIAS);
        CHECK(buf[8] == 0.0f && buf[1] == 0.0f, "a refused call wrote an output");
    }
    { /* mean_strides is not read by RMSNorm: even absurd ones change nothing (they were once multiplied) */
        int64_t dims[2] = {3, 5}, huge[1] = {INT64_MAX};
        float x[15], dy[15], ms[3] = {1.5f, 0.75f, 2.0f}, g[5] = {1, 2, 3, 4, 5}, dx1[15], dx2[15];
        nbwd_rms_norm_bwd_desc d;
        nbwd_rms_norm_bwd_args a;
        int i;
        t_case("RMSNorm ignores mean_strides");
        for (i = 0; i < 15; ++i) { x[i] = 0.25f * (float)(i - 7); dy[i] = 0.5f - 0.125f * (float)i; }
        memset(&a, 0, sizeof a);
        a.src = x; a.diff_dst = dy; a.mean_square = ms; a.gamma = g; a.diff_src = dx1;
        nbwd_rms_norm_bwd_desc_init(&d, 2, dims);
        CHECK_STATUS(nbwd_rms_norm_bwd(&d, &a, NULL, 0), NBWD_OK);
        d.mean_strides = huge;
        a.diff_src = dx2;
        CHECK_STATUS(nbwd_rms_norm_bwd(&d, &a, NULL, 0), NBWD_OK);
        CHECK(memcmp(dx1, dx2, sizeof dx1) == 0, "mean_strides changed RMSNorm's diff_src");
    }
}

/* 14. The residual gradient fused into diff_src and the backward from the
   forward output (DST_RSTD), for LayerNorm and RMSNorm: every dtype
   combination, the row lengths of every kernel (narrow rows, 16-bit rows
   kept in f32, long rows), both residual modes (a tensor of its own, and
   diff_src itself), strides, ranks and axes, in-place, accumulate,
   gamma_offset, threads, a bias or none, a zero or subnormal scale, large
   (the sweep, streaming stores); then the refusals. */
static void ln_residual_dst(void) {
    static const int64_t lens[] = {3, 16, 24, 33, 64, 100, 1000, 1025, 4097};
    int op, k, li, m;
    for (op = 0; op < 2; ++op)
        for (k = 0; k < N_COMBOS; ++k)
            for (m = 0; m < 6; ++m) {
                ln_cfg c;
                if (g_quick && (k + m) % 3) continue;
                ln_defaults(&c);
                c.rms = op;
                set_dims(&c, 2, 7, 37, 0, 0);
                c.form = m < 3 ? NBWD_STATS_DST_RSTD : k_forms[(m - 3 + k) % 4];
                c.dt = k_combos[k].dt; c.sdt = k_combos[k].sdt; c.pdt = k_combos[k].pdt;
                c.residual = m % 3 == 0 ? RES_NONE : m % 3 == 1 ? RES_OWN : k % 2 ? RES_INPLACE : RES_FLAG;
                c.affine = m != 2 || k % 2;
                c.no_beta = m == 1;
                c.outputs = c.affine ? k_outputs[(k + m) % K_NOUT] : O_DX;
                if (c.residual && !(c.outputs & O_DX)) c.outputs |= O_DX;
                c.gamma_offset = c.affine && (k + m) % 4 == 1 ? 1.0f : 0.0f;
                c.seed = ++g_seed;
                ln_run(&c);
            }
    for (op = 0; op < 2; ++op)
        for (li = 0; li < (int)(sizeof lens / sizeof lens[0]); ++li)
            for (k = 0; k < N_COMBOS; k += 2) {
                ln_cfg c;
                ln_defaults(&c);
                c.rms = op;
                set_dims(&c, 2, lens[li] >= 1000 ? 6 : 11, lens[li], 0, 0);
                c.form = (li + k) % 2 ? NBWD_STATS_DST_RSTD : NBWD_STATS_MEAN_RSTD;
                c.dt = k_combos[k].dt; c.sdt = k_combos[k].sdt; c.pdt = k_combos[k].pdt;
                c.residual = 1 + (li + k + op) % 3;
                c.layout = (li + op) % 2 ? L_PADDED : L_DENSE;
                c.caller_ws = k % 4 == 2;
                c.zero_gamma = c.form == NBWD_STATS_DST_RSTD && li % 3 == 0;
                c.seed = ++g_seed;
                ln_run(&c);
            }
    for (k = 0; k < 10; ++k) { /* ranks and axes, strides, in-place, accumulate, offset, threads */
        ln_cfg c;
        ln_defaults(&c);
        c.rms = k % 2;
        set_dims(&c, 4, 2, 3, 4, 9);
        c.axis = k % 4 - 3;
        c.layout = k % 5;
        c.form = k % 3 ? NBWD_STATS_DST_RSTD : NBWD_STATS_MEAN_VARIANCE;
        if (c.layout == L_ZERO && c.form == NBWD_STATS_DST_RSTD) c.layout = L_PADDED;
        c.inplace = k == 5 ? IP_DY : k == 6 ? IP_X : IP_NONE;
        c.residual = c.inplace ? RES_OWN : 1 + k % 3;
        if (c.inplace) c.layout = L_DENSE;
        c.accumulate = k % 3 == 1;
        c.gamma_offset = k % 4 == 1 ? 1.0f : 0.0f;
        c.zero_gamma = k == 7;
        c.threads = 1 + k % 3;
        c.dt = k_combos[(3 * k) % N_COMBOS].dt; c.sdt = k_combos[(3 * k) % N_COMBOS].sdt;
        c.pdt = k_combos[(3 * k) % N_COMBOS].pdt;
        c.seed = ++g_seed;
        ln_run(&c);
    }
    if (!g_quick) /* large: the sweep and streaming stores with a residual; DST_RSTD over many staging slots */
        for (k = 0; k < 4; ++k) {
            ln_cfg c;
            ln_defaults(&c);
            c.rms = k % 2;
            set_dims(&c, 2, 640, 2048, 0, 0);
            c.threads = 2;
            c.residual = RES_OWN;
            c.form = k < 2 ? NBWD_STATS_MEAN_RSTD : NBWD_STATS_DST_RSTD;
            if (k == 3) { c.dt = c.pdt = NBWD_BF16; c.gamma_offset = 1.0f; c.residual = RES_INPLACE; }
            if (k == 1) { c.residual = RES_FLAG; c.form = NBWD_STATS_NONE; }
            c.seed = ++g_seed;
            ln_run(&c);
        }
    {
        int64_t dims[2] = {2, 3};
        float buf[32] = {0};
        nbwd_layer_norm_bwd_desc d;
        nbwd_layer_norm_bwd_args a;
        nbwd_rms_norm_bwd_desc rd;
        nbwd_rms_norm_bwd_args ra;
        int i;
        t_case("residual and DST_RSTD refusals");
        nbwd_layer_norm_bwd_desc_init(&d, 2, dims);
        memset(&a, 0, sizeof a);
        a.src = buf; a.diff_dst = buf; a.mean = buf; a.variance = buf; a.gamma = buf;
        a.diff_gamma = buf + 16; a.diff_residual = buf + 8; /* a residual without diff_src */
        CHECK_STATUS(nbwd_layer_norm_bwd(&d, &a, NULL, 0), NBWD_ERR_BAD_PARAM);
        CHECK(strstr(nbwd_last_error(), "diff_residual") != NULL, "message: %s", nbwd_last_error());
        a.diff_src = buf + 9; /* overlapping the residual, not the same view */
        CHECK_STATUS(nbwd_layer_norm_bwd(&d, &a, NULL, 0), NBWD_ERR_BAD_ALIAS);
        CHECK(strstr(nbwd_last_error(), "diff_residual") != NULL, "message: %s", nbwd_last_error());
        a.diff_residual = buf + 17; a.diff_src = buf + 8; /* the residual over diff_gamma (an output) */
        CHECK_STATUS(nbwd_layer_norm_bwd(&d, &a, NULL, 0), NBWD_ERR_BAD_ALIAS);
        a.diff_residual = buf + 24;
        {
            int64_t bad[2] = {3, 2}; /* the normalized dim not dense */
            d.diff_residual_strides = bad;
            CHECK_STATUS(nbwd_layer_norm_bwd(&d, &a, NULL, 0), NBWD_ERR_BAD_STRIDES);
            CHECK(strstr(nbwd_last_error(), "diff_residual_strides") != NULL, "message: %s", nbwd_last_error());
            d.diff_residual_strides = NULL;
        }
        d.stats_form = NBWD_STATS_DST_RSTD; /* src, mean, variance of the other forms */
        CHECK_STATUS(nbwd_layer_norm_bwd(&d, &a, NULL, 0), NBWD_ERR_BAD_PARAM);
        CHECK(strstr(nbwd_last_error(), "NBWD_STATS_DST_RSTD") != NULL, "message: %s", nbwd_last_error());
        a.src = NULL; a.mean = NULL; a.variance = NULL;
        CHECK_STATUS(nbwd_layer_norm_bwd(&d, &a, NULL, 0), NBWD_ERR_NULL_POINTER);
        CHECK(strstr(nbwd_last_error(), "args.dst is NULL") != NULL, "message: %s", nbwd_last_error());
        a.dst = buf; a.rstd = buf + 28; a.gamma = NULL; a.diff_src = NULL; a.diff_residual = NULL;
        CHECK_STATUS(nbwd_layer_norm_bwd(&d, &a, NULL, 0), NBWD_ERR_NULL_POINTER); /* diff_gamma needs gamma */
        CHECK(strstr(nbwd_last_error(), "args.gamma is NULL") != NULL, "message: %s", nbwd_last_error());
        a.gamma = buf; a.beta = buf + 17; /* beta is read: over diff_gamma */
        CHECK_STATUS(nbwd_layer_norm_bwd(&d, &a, NULL, 0), NBWD_ERR_BAD_ALIAS);
        CHECK(strstr(nbwd_last_error(), "args.beta") != NULL, "message: %s", nbwd_last_error());
        for (i = 8; i < 28; ++i) CHECK(buf[i] == 0.0f, "a refused call wrote element %d", i);
        nbwd_rms_norm_bwd_desc_init(&rd, 2, dims);
        rd.stats_form = NBWD_STATS_DST_RSTD;
        memset(&ra, 0, sizeof ra);
        ra.dst = buf; ra.diff_dst = buf; ra.std = buf + 28; ra.gamma = buf; ra.diff_src = buf + 8;
        CHECK_STATUS(nbwd_rms_norm_bwd(&rd, &ra, NULL, 0), NBWD_ERR_BAD_PARAM); /* std is XHAT_STD's */
        ra.std = NULL; ra.rstd = buf + 28;
        CHECK_STATUS(nbwd_rms_norm_bwd(&rd, &ra, NULL, 0), NBWD_OK);
    }
}

/* 15. The DST_RSTD form against the x form on the same problem (f32, scales
   near 1, y made in float64 from x and rounded once): the manual says the
   two agree within 32 ulps of the size of dx's terms. */
static void ln_dst_vs_x(void) {
    enum { R = 16, N = 300 };
    static float x[R * N], y[R * N], dy[R * N], mean[R], rstd[R], gamma[N], beta[N], dx1[R * N], dx2[R * N];
    static float dg1[N], dg2[N];
    int64_t dims[2] = {R, N};
    t_rng rng;
    int op, r, j;
    t_case("DST_RSTD form against the x form");
    t_rng_seed(&rng, 4242);
    for (j = 0; j < N; ++j) { gamma[j] = (float)(1.0 + 0.25 * t_rng_normal(&rng)); beta[j] = (float)t_rng_normal(&rng); }
    for (op = 0; op < 2; ++op) {
        nbwd_layer_norm_bwd_desc d;
        nbwd_layer_norm_bwd_args a;
        double worst = 0.0;
        for (r = 0; r < R; ++r) {
            double s = 0, s2 = 0, m;
            for (j = 0; j < N; ++j) {
                x[r * N + j] = (float)(0.5 + 2.0 * t_rng_normal(&rng));
                dy[r * N + j] = (float)t_rng_normal(&rng);
                s += x[r * N + j];
            }
            m = op ? 0.0 : s / N;
            for (j = 0; j < N; ++j) s2 += (x[r * N + j] - m) * (x[r * N + j] - m);
            mean[r] = (float)m;
            rstd[r] = (float)(1.0 / sqrt(s2 / N + 1e-5));
            for (j = 0; j < N; ++j)
                y[r * N + j] = (float)(((double)x[r * N + j] - mean[r]) * rstd[r] * gamma[j] + (op ? 0.0 : beta[j]));
        }
        if (op) nbwd_rms_norm_bwd_desc_init(&d, 2, dims);
        else nbwd_layer_norm_bwd_desc_init(&d, 2, dims);
        d.isa = g_test_isa;
        d.stats_form = NBWD_STATS_MEAN_RSTD;
        memset(&a, 0, sizeof a);
        a.src = x; a.diff_dst = dy; a.mean = op ? NULL : mean; a.rstd = rstd; a.gamma = gamma;
        a.diff_src = dx1; a.diff_gamma = dg1;
        if (op) {
            nbwd_rms_norm_bwd_args ra;
            memset(&ra, 0, sizeof ra);
            ra.src = x; ra.diff_dst = dy; ra.rstd = rstd; ra.gamma = gamma; ra.diff_src = dx1; ra.diff_gamma = dg1;
            CHECK_STATUS(nbwd_rms_norm_bwd(&d, &ra, NULL, 0), NBWD_OK);
            d.stats_form = NBWD_STATS_DST_RSTD;
            ra.src = NULL; ra.dst = y; ra.diff_src = dx2; ra.diff_gamma = dg2;
            CHECK_STATUS(nbwd_rms_norm_bwd(&d, &ra, NULL, 0), NBWD_OK);
        } else {
            CHECK_STATUS(nbwd_layer_norm_bwd(&d, &a, NULL, 0), NBWD_OK);
            d.stats_form = NBWD_STATS_DST_RSTD;
            a.src = NULL; a.mean = NULL; a.dst = y; a.beta = beta; a.diff_src = dx2; a.diff_gamma = dg2;
            CHECK_STATUS(nbwd_layer_norm_bwd(&d, &a, NULL, 0), NBWD_OK);
        }
        for (r = 0; r < R; ++r) {
            double sg = 0, sgx = 0, mg, mgx;
            for (j = 0; j < N; ++j) {
                double xh = ((double)x[r * N + j] - mean[r]) * rstd[r], g = (double)dy[r * N + j] * gamma[j];
                sg += g; sgx += g * xh;
            }
            mg = op ? 0.0 : sg / N; mgx = sgx / N;
            for (j = 0; j < N; ++j) {
                double xh = ((double)x[r * N + j] - mean[r]) * rstd[r], g = (double)dy[r * N + j] * gamma[j];
                double scale = rstd[r] * (fabs(g) + fabs(mg) + fabs(xh * mgx)) * ldexp(1.0, -24);
                double e = fabs((double)dx1[r * N + j] - (double)dx2[r * N + j]) / scale;
                if (e > worst) worst = e;
            }
        }
        CHECK(worst <= 32.0, "%s: DST_RSTD and x-form diff_src differ by %.3g ulps of their terms (bound 32)",
              op ? "RMSNorm" : "LayerNorm", worst);
        for (j = 0; j < N; ++j)
            CHECK(fabs((double)dg1[j] - dg2[j]) <= 1e-5 * (1.0 + fabs(dg1[j])), "diff_gamma[%d]: %.9g vs %.9g", j,
                  (double)dg1[j], (double)dg2[j]);
    }
}

/* NBWD_STATS_NONE, the manual's range: a row whose squared deviations add
   up past FLT_MAX has no fp32 statistics; its diff_src comes out 0 or NaN,
   and every other row's diff_src keeps its bits (those of the same call
   with that row in range), diff_beta too. LayerNorm and RMSNorm. */
static void ln_none_range(void) {
    static const int64_t widths[] = {24, 768};
    const int64_t rows = 5, bad_row = 2;
    int wi, rms;
    for (rms = 0; rms < 2; ++rms)
        for (wi = 0; wi < 2; ++wi) {
            const int64_t n = widths[wi];
            int64_t dims[2], i, j;
            t_buf bx, bdy, bdx[2], bg, bdg, bdb[2];
            t_rng rng;
            long bad = 0;
            int k;
            dims[0] = rows;
            dims[1] = n;
            t_case("%s NONE, row %lld with |x - mean| ~ 1e30: %lldx%lld f32", rms ? "RMS" : "LN", (long long)bad_row,
                   (long long)rows, (long long)n);
            t_rng_seed(&rng, ++g_seed);
            t_buf_alloc(&bx, 2, dims, NULL, NBWD_F32);
            t_buf_alloc(&bdy, 2, dims, NULL, NBWD_F32);
            t_buf_alloc(&bdx[0], 2, dims, NULL, NBWD_F32);
            t_buf_alloc(&bdx[1], 2, dims, NULL, NBWD_F32);
            t_buf_alloc(&bg, 1, dims + 1, NULL, NBWD_F32);
            t_buf_alloc(&bdg, 1, dims + 1, NULL, NBWD_F32);
            t_buf_alloc(&bdb[0], 1, dims + 1, NULL, NBWD_F32);
            t_buf_alloc(&bdb[1], 1, dims + 1, NULL, NBWD_F32);
            t_buf_fill_normal(&bx, &rng, 0.5, 2.0);
            t_buf_fill_normal(&bdy, &rng, 0.0, 1.0);
            t_buf_fill_normal(&bg, &rng, 1.0, 0.5);
            for (k = 0; k < 2; ++k) { /* k = 0: the row out of range; 1: in range */
                if (k == 0)
                    for (j = 0; j < n; ++j) t_buf_set(&bx, bad_row * n + j, (j & 1 ? 1e30 : -1e30) * (1.0 + 0.01 * (double)j));
                else
                    for (j = 0; j < n; ++j) t_buf_set(&bx, bad_row * n + j, 0.25 * (double)(j % 7));
                if (rms) {
                    nbwd_rms_norm_bwd_desc d;
                    nbwd_rms_norm_bwd_args a;
                    nbwd_rms_norm_bwd_desc_init(&d, 2, dims);
                    d.stats_form = NBWD_STATS_NONE;
                    d.isa = g_test_isa;
                    memset(&a, 0, sizeof a);
                    a.src = bx.base; a.diff_dst = bdy.base; a.gamma = bg.base;
                    a.diff_src = bdx[k].base; a.diff_gamma = bdg.base; a.diff_beta = bdb[k].base;
                    CHECK_STATUS(nbwd_rms_norm_bwd(&d, &a, NULL, 0), NBWD_OK);
                } else {
                    nbwd_layer_norm_bwd_desc d;
                    nbwd_layer_norm_bwd_args a;
                    nbwd_layer_norm_bwd_desc_init(&d, 2, dims);
                    d.stats_form = NBWD_STATS_NONE;
                    d.isa = g_test_isa;
                    memset(&a, 0, sizeof a);
                    a.src = bx.base; a.diff_dst = bdy.base; a.gamma = bg.base;
                    a.diff_src = bdx[k].base; a.diff_gamma = bdg.base; a.diff_beta = bdb[k].base;
                    CHECK_STATUS(nbwd_layer_norm_bwd(&d, &a, NULL, 0), NBWD_OK);
                }
            }
            for (j = 0; j < n; ++j) {
                double v = t_buf_get(&bdx[0], bad_row * n + j);
                if (!(v == 0.0 || isnan(v))) ++bad;
            }
            CHECK(bad == 0, "the out-of-range row: %ld of %lld dx elements are neither 0 nor NaN", bad, (long long)n);
            for (i = 0; i < rows; ++i)
                if (i != bad_row)
                    CHECK(memcmp(bdx[0].base + i * n * 4, bdx[1].base + i * n * 4, (size_t)n * 4) == 0,
                          "row %lld's dx changed with the out-of-range row", (long long)i);
            CHECK(memcmp(bdb[0].base, bdb[1].base, (size_t)n * 4) == 0, "diff_beta changed with the out-of-range row");
            CHECK(t_buf_canary_ok(&bdx[0]), "dx written outside its elements");
            t_buf_free(&bx); t_buf_free(&bdy); t_buf_free(&bdx[0]); t_buf_free(&bdx[1]); t_buf_free(&bg);
            t_buf_free(&bdg); t_buf_free(&bdb[0]); t_buf_free(&bdb[1]);
        }
}

void test_layer_norm(void) {
    static const struct { const char *name; void (*fn)(void); } parts[] = {
        {"full cross", ln_full_cross}, {"row lengths", ln_row_lengths}, {"ranks and axes", ln_ranks_axes}, {"ranks 5..8", ln_high_ranks},
        {"strides", ln_strides},       {"in-place", ln_inplace},        {"accumulate", ln_accumulate},
        {"degenerate", ln_degenerate}, {"invariants", ln_invariants},   {"threads", ln_threads},
        {"large", ln_large},           {"gamma offset", ln_gamma_offset}, {"rms norm", rms_cases},
        {"residual, dst form", ln_residual_dst}, {"dst form vs x form", ln_dst_vs_x},
        {"none range", ln_none_range},
    };
    int k;
    for (k = 0; k < (int)(sizeof parts / sizeof parts[0]); ++k) {
        double t0 = t_now();
        parts[k].fn();
        if (g_verbose) printf("  layer_norm %s: %.2f s\n", parts[k].name, t_now() - t0);
    }
}
