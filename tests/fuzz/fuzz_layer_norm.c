/* fuzz_layer_norm.c - libFuzzer target: random bytes -> one call of
   nbwd_layer_norm_bwd_workspace_size and nbwd_layer_norm_bwd, or of their
   RMSNorm twins (descriptor, strides, pointers, aliasing, workspace, forced
   ISA all decoded).
   Checks: no crash or sanitizer report; the query and the call agree on
   descriptor errors; a rejected call writes no byte; an accepted call writes
   only output elements, has no illegal overlap, and matches a float64
   reference; a call that is valid by the manual's rules is accepted. Where
   the manual leaves a row's outputs unspecified (NONE sums out of f32's
   range) that row's diff_src and diff_gamma are not compared.
   Built with -DFZ_STANDALONE (no libFuzzer): a main that runs each file
   named on the command line once (fuzz_common.h). */
#if !defined(FZ_SEPARATE_IMPL) /* else linked in from tests/impl.c */
#define NORM_BWD_IMPLEMENTATION
#endif
#include "norm_bwd.h"
#include "fuzz_common.h"

enum { T_SRC, T_XHAT, T_DY, T_MEAN, T_VAR, T_RSTD, T_STD, T_GAMMA, T_BETA, T_DX, T_DG, T_DB, T_N };

#define REJECT(rule) (must_reject = 1, why = why ? why : (rule))

/* The operation's entry points (rms: RMSNorm, given LayerNorm's tensors but
   the mean, with the variance slot as its mean square) */
static nbwd_status fz_query(int rms, const nbwd_layer_norm_bwd_desc *d, size_t *bytes) {
    return rms ? nbwd_rms_norm_bwd_workspace_size(d, bytes) : nbwd_layer_norm_bwd_workspace_size(d, bytes);
}
static nbwd_status fz_call(int rms, const nbwd_layer_norm_bwd_desc *d, const nbwd_layer_norm_bwd_args *a, void *ws,
                           size_t ws_bytes) {
    nbwd_rms_norm_bwd_args ra;
    if (!rms) return nbwd_layer_norm_bwd(d, a, ws, ws_bytes);
    if (!a) return nbwd_rms_norm_bwd(d, NULL, ws, ws_bytes);
    memset(&ra, 0, sizeof ra);
    ra.src = a->src; ra.xhat = a->xhat; ra.diff_dst = a->diff_dst; ra.mean_square = a->variance;
    ra.rstd = a->rstd; ra.std = a->std; ra.gamma = a->gamma; ra.diff_src = a->diff_src;
    ra.diff_gamma = a->diff_gamma; ra.diff_beta = a->diff_beta;
    ra.beta = a->beta; ra.dst = a->dst; ra.diff_residual = a->diff_residual;
    return nbwd_rms_norm_bwd(d, &ra, ws, ws_bytes);
}
/* args.src becomes args.dst in the DST_RSTD form; the residual gradient is
   diff_dst's view (res_mode 1) or diff_src itself (2) */
static void fz_extras(nbwd_layer_norm_bwd_args *a, int dst_form, int res_mode) {
    if (dst_form) { a->dst = a->src; a->src = NULL; }
    a->diff_residual = res_mode == 1 ? a->diff_dst : res_mode == 2 ? a->diff_src : NULL;
}
/* xhat of a DST_RSTD element (or the XHAT_STD input itself: unscale 0) */
static double fz_xhat_of(const fz_world *w, int unscale, double y, int64_t g_off, int64_t b_off, float offset) {
    float ge, inv;
    double beta;
    if (!unscale) return y;
    ge = (float)(fz_load(fz_snap_base(w, T_GAMMA), w->t[T_GAMMA].dt, g_off) + (double)offset);
    inv = fabsf(ge) >= FLT_MIN ? 1.0f / ge : 0.0f;
    beta = w->t[T_BETA].present ? fz_load(fz_snap_base(w, T_BETA), w->t[T_BETA].dt, b_off) : 0.0;
    return (double)(float)((float)(y - beta) * inv);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    int why = 0; /* the first rule that made the call invalid, for the report */
    fz_rd rd = {data, size, 0};
    nbwd_layer_norm_bwd_desc d;
    nbwd_layer_norm_bwd_args a;
    int64_t sx[NBWD_MAX_RANK], sdy[NBWD_MAX_RANK], sdx[NBWD_MAX_RANK], sm[NBWD_MAX_RANK], sv[NBWD_MAX_RANK];
    int64_t sp_g[NBWD_MAX_RANK], sp_b[NBWD_MAX_RANK], sp_dg[NBWD_MAX_RANK], sp_db[NBWD_MAX_RANK];
    int nn; /* the parameter tensors' rank: dims [axis, rank) */
    int64_t dims[NBWD_MAX_RANK], raw_axis, rows = 1, n = 1, total = 1, nz = 1;
    int rms, rank, axis = 0, i, arbitrary = 0, must_reject = 0, overflow = 0, too_big = 0, natural = 1, force, force_ok;
    int res_mode, dst_form, acc_dx = 0;
    int mode[T_N], want[T_N], ws_mode, args_null, bytes_null, special, injected = 0, isa_runnable;
    int64_t alias_delta[T_N];
    int alias_of[T_N];
    size_t ws_bytes = 0, qbytes = 777;
    nbwd_status sq, s;
    fz_world w;
    fz_rng g;
    void *ws = NULL, *ws_alloc = NULL;
    static const int rank_tab[16] = {1, 2, 2, 3, 3, 4, 1, 2, 3, 5, 8, 0, 9, -1, 100, 2};
    /* ---- descriptor */
    rank = rank_tab[fz_u8(&rd) % 16];
    for (i = 0; i < NBWD_MAX_RANK; ++i) dims[i] = i < rank ? fz_dim(&rd) : 0;
    nbwd_layer_norm_bwd_desc_init(&d, rank, dims);
    {
        uint8_t b = fz_u8(&rd);
        raw_axis = b < 240 ? (int64_t)(int8_t)b % 12 : (b & 1 ? INT64_MAX : INT64_MIN);
        if (b < 160 && rank >= 1) raw_axis = -1 - (int64_t)(b % (unsigned)(rank > 0 ? rank : 1)); /* valid mostly */
    }
    d.begin_norm_axis = raw_axis;
    { uint8_t b = fz_u8(&rd); d.use_affine = b < 160 ? 1 : b < 224 ? 0 : (int)(b - 220); }
    d.epsilon = fz_eps(&rd);
    d.stats_form = (nbwd_stats_form)fz_enum(&rd, 3);
    /* DST_RSTD (3) and NONE (4) are valid forms, reached through their own
       bytes below, which set up their tensors; as the enum byte's
       out-of-range value they stand for the first invalid one (a call
       with an empty shape and no inputs was accepted as DST_RSTD, rightly,
       where this target expected a rejection) */
    if ((int)d.stats_form == NBWD_STATS_DST_RSTD || (int)d.stats_form == NBWD_STATS_NONE)
        d.stats_form = (nbwd_stats_form)(NBWD_STATS_NONE + 1);
    d.data_dtype = (nbwd_dtype)fz_enum(&rd, 3);
    { uint8_t b = fz_u8(&rd); d.stats_dtype = (nbwd_dtype)(b < 128 ? NBWD_F32 : b < 224 ? (int)d.data_dtype : fz_enum(&rd, 3)); }
    { uint8_t b = fz_u8(&rd); d.param_dtype = (nbwd_dtype)(b < 128 ? NBWD_F32 : b < 224 ? (int)d.data_dtype : fz_enum(&rd, 3)); }
    { uint8_t b = fz_u8(&rd); d.flags = b < 160 ? 0u : b < 240 ? 1u : (unsigned)b << 1; }
    { uint8_t b = fz_u8(&rd); d.num_threads = b < 200 ? b % 3 : -1 - (int)(b % 3); }
    d.isa = (nbwd_isa)fz_enum(&rd, NBWD_ISA_COUNT);
    force = fz_u8(&rd);
    force = force < 192 ? -1 : fz_enum(&rd, NBWD_ISA_COUNT);
    { /* gamma_offset: mostly 0; zero-centred gamma (1), others, and invalid values */
        static const float offsets[4] = {1.0f, -0.5f, 1e30f, 0.0f};
        uint8_t b = fz_u8(&rd);
        d.gamma_offset = b < 200 ? 0.0f : b < 240 ? offsets[b % 4] : b < 248 ? (float)NAN : (float)INFINITY;
    }

    /* ---- what the manual says about the descriptor */
    if (rank < 1 || rank > NBWD_MAX_RANK) REJECT(1);
    for (i = 0; i < rank && i < NBWD_MAX_RANK; ++i) {
        if (dims[i] < 0) REJECT(2);
        else if (dims[i] == 0) total = 0;
        else if (nz > FZ_MAX_ELEMS / dims[i]) overflow = 1;
        else nz *= dims[i];
    }
    if (overflow) REJECT(3); /* BAD_SHAPE, not a wrap-around (zeros do not hide it) */
    if (!must_reject && (raw_axis < -rank || raw_axis >= rank)) REJECT(4);
    if (!must_reject) axis = (int)(raw_axis < 0 ? raw_axis + rank : raw_axis);
    if ((int)d.stats_form < 0 || (int)d.stats_form > 2 || (d.flags & ~1u) || d.num_threads < 0 || (int)d.isa < 0 ||
        (int)d.isa >= NBWD_ISA_COUNT)
        REJECT(5);
    if (d.stats_form == NBWD_STATS_MEAN_VARIANCE && !(d.epsilon > 0 && d.epsilon <= FLT_MAX)) REJECT(6);
    if (!(d.gamma_offset - d.gamma_offset == 0.0f) || (!d.use_affine && d.gamma_offset != 0.0f)) REJECT(6);
    if (!fz_dt_ok(d.data_dtype) || !fz_dt_ok(d.stats_dtype) || !fz_dt_ok(d.param_dtype) ||
        (d.stats_dtype != NBWD_F32 && d.stats_dtype != d.data_dtype) ||
        (d.param_dtype != NBWD_F32 && d.param_dtype != d.data_dtype))
        REJECT(7);
    if (!must_reject) {
        total = nz * (total ? 1 : 0);
        for (i = 0; i < axis; ++i) rows *= dims[i];
        for (i = axis; i < rank; ++i) n *= dims[i];
        if (total == 0) { /* products of the non-zero dims were bounded above */
            rows = n = 1;
            for (i = 0; i < axis; ++i) rows *= dims[i];
            for (i = axis; i < rank; ++i) n *= dims[i];
        }
    }
    d.src_strides = fz_block_strides(&rd, rank > 0 && rank <= 8 ? rank : 0, dims, axis, sx, &arbitrary);
    d.diff_dst_strides = fz_block_strides(&rd, rank > 0 && rank <= 8 ? rank : 0, dims, axis, sdy, &arbitrary);
    d.diff_src_strides = fz_block_strides(&rd, rank > 0 && rank <= 8 ? rank : 0, dims, axis, sdx, &arbitrary);
    d.mean_strides = fz_block_strides(&rd, axis, dims, axis, sm, &arbitrary);
    d.var_strides = fz_block_strides(&rd, axis, dims, axis, sv, &arbitrary);
    /* parameters: every dim may be strided (padded, negative or arbitrary) */
    nn = rank >= 1 && rank <= NBWD_MAX_RANK ? rank - axis : 0;
    d.gamma_strides = fz_block_strides(&rd, nn, dims + axis, nn, sp_g, &arbitrary);
    d.beta_strides = fz_block_strides(&rd, nn, dims + axis, nn, sp_b, &arbitrary);
    d.diff_gamma_strides = fz_block_strides(&rd, nn, dims + axis, nn, sp_dg, &arbitrary);
    d.diff_beta_strides = fz_block_strides(&rd, nn, dims + axis, nn, sp_db, &arbitrary);
    if (!must_reject && (!fz_dense_block(rank, dims, d.src_strides, axis) ||
                         !fz_dense_block(rank, dims, d.diff_dst_strides, axis) ||
                         !fz_dense_block(rank, dims, d.diff_src_strides, axis)))
        REJECT(8);
    if (d.src_strides || d.diff_dst_strides || d.diff_src_strides || d.mean_strides || d.var_strides ||
        d.gamma_strides || d.beta_strides || d.diff_gamma_strides || d.diff_beta_strides)
        natural = 0;

    /* ---- pointers: natural (what the form needs), forced NULL, forced
       present, or an alias of another tensor */
    for (i = 0; i < T_N; ++i) {
        uint8_t m = fz_u8(&rd);
        int form = (int)d.stats_form;
        int needed = i == T_DY || (i == T_SRC && form != 2) || (i == T_XHAT && form == 2) ||
                     (i == T_MEAN && form != 2) || (i == T_VAR && form == 0) || (i == T_RSTD && form == 1) ||
                     (i == T_STD && form == 2) || (i == T_GAMMA && d.use_affine);
        if (i >= T_DX) needed = m % 4 != 0 && (i == T_DX || d.use_affine);
        if (i == T_BETA) needed = d.use_affine && (m & 1);
        if (!fz_pointer_mode(&rd, m, needed, i, T_N, mode, want, alias_of, alias_delta)) natural = 0;
    }
    if ((want[T_DG] || want[T_DB]) && !d.use_affine) REJECT(9);
    ws_mode = fz_u8(&rd) % 8; /* 0,1 NULL; 2,3 exact; 4 exact-1; 5 misaligned exact; 6 size 0; 7 exact, big */
    args_null = fz_u8(&rd) == 255;
    bytes_null = fz_u8(&rd) == 255;
    g.s = fz_u64(&rd);
    special = fz_u8(&rd);
    special = special >= 224 ? 1 + special % 4 : 0;
    /* RMSNorm: decided by the last byte decoded, so that an input made for
       LayerNorm alone (the corpus) still means what it meant. Its args have
       no mean and no beta; its descriptor has its own stamp. */
    rms = fz_u8(&rd) >= 128;
    if (rms) {
        nbwd_rms_norm_bwd_desc stamp;
        nbwd_rms_norm_bwd_desc_init(&stamp, 1, dims);
        d.init_stamp = stamp.init_stamp;
        want[T_MEAN] = want[T_BETA] = 0;
    }
    /* The residual gradient and the DST_RSTD form: the byte after, so older
       inputs keep their meaning (the bytes past an input's end read 0). The
       DST_RSTD form turns the MEAN_RSTD form's src into dst and drops its
       mean; beta is read there (optional, as the pointer byte chose). */
    {
        uint8_t b = fz_u8(&rd);
        res_mode = b % 4 == 3 ? 0 : b % 4;
        dst_form = (b & 4) && d.stats_form == NBWD_STATS_MEAN_RSTD;
        if (dst_form) {
            d.stats_form = NBWD_STATS_DST_RSTD;
            if (mode[T_MEAN] == 0) want[T_MEAN] = 0;
            if (mode[T_BETA] == 0) want[T_BETA] = d.use_affine && (b & 8);
        }
        if (res_mode == 1) d.diff_residual_strides = d.diff_dst_strides;
        if (res_mode == 2) d.diff_residual_strides = d.diff_src_strides;
        /* a residual gradient with nowhere to go */
        if (res_mode == 1 && want[T_DY] && !want[T_DX]) REJECT(10);
    }
    /* The byte after: the NONE form (the MEAN_VARIANCE form's src alone:
       the call finds the statistics) and NBWD_ACCUMULATE_DIFF_SRC (diff_src
       += the gradient; refused beside a residual gradient). */
    {
        uint8_t b = fz_u8(&rd);
        if ((b & 3) == 3 && d.stats_form == NBWD_STATS_MEAN_VARIANCE) {
            d.stats_form = NBWD_STATS_NONE;
            if (mode[T_MEAN] == 0) want[T_MEAN] = 0;
            if (mode[T_VAR] == 0) want[T_VAR] = 0;
        }
        if (b & 4) {
            d.flags |= NBWD_ACCUMULATE_DIFF_SRC;
            acc_dx = 1;
            if (want[T_DX] && (res_mode == 2 || (res_mode == 1 && want[T_DY]))) REJECT(11); /* diff_residual set */
        }
    }
    if (force >= 0) {
        nbwd_status fs = nbwd_force_isa((nbwd_isa)force);
        force_ok = force == NBWD_ISA_AUTO || (force > 0 && force < NBWD_ISA_COUNT && nbwd_isa_supported((nbwd_isa)force));
        FZ_ASSERT((fs == NBWD_OK) == force_ok, "nbwd_force_isa(%d) returned %d", force, (int)fs);
    }
    isa_runnable = d.isa == NBWD_ISA_AUTO ? nbwd_active_isa() != NBWD_ISA_AUTO
                                          : (int)d.isa > 0 && (int)d.isa < NBWD_ISA_COUNT &&
                                                nbwd_isa_supported(d.isa);

    /* ---- the size query */
    sq = fz_query(rms, &d, bytes_null ? NULL : &qbytes);
    if (bytes_null) FZ_ASSERT(sq == NBWD_ERR_NULL_POINTER, "workspace_size(bytes NULL) = %d", (int)sq);
    else if (sq != NBWD_OK) FZ_ASSERT(qbytes == 777, "a failed workspace_size wrote *bytes");
    FZ_ASSERT(fz_query(rms, NULL, &qbytes) == NBWD_ERR_NULL_POINTER, "NULL desc");
    if (bytes_null) sq = fz_query(rms, &d, &qbytes);

    memset(&w, 0, sizeof w);
    w.nt = T_N;
    /* ---- tensor geometry */
    if (!must_reject) {
        int64_t ddx[NBWD_MAX_RANK], dst[NBWD_MAX_RANK], dpar[NBWD_MAX_RANK];
        fz_dense(rank, dims, ddx);
        fz_dense(axis, dims, dst);
        fz_dense(nn, dims + axis, dpar);
        for (i = 0; i < T_N; ++i) {
            fz_tensor *t = &w.t[i];
            const int64_t *st = i == T_SRC || i == T_XHAT ? d.src_strides : i == T_DY ? d.diff_dst_strides
                                : i == T_DX ? d.diff_src_strides : i == T_MEAN ? d.mean_strides
                                : i == T_VAR || i == T_RSTD || i == T_STD ? d.var_strides
                                : i == T_GAMMA ? d.gamma_strides : i == T_BETA ? d.beta_strides
                                : i == T_DG ? d.diff_gamma_strides : d.diff_beta_strides;
            int k;
            t->present = want[i];
            t->is_output = i >= T_DX;
            t->dt = i <= T_DY || i == T_DX ? (int)d.data_dtype : i <= T_STD ? (int)d.stats_dtype : (int)d.param_dtype;
            if (i <= T_DY || i == T_DX) {
                t->rank = rank;
                for (k = 0; k < rank; ++k) { t->dims[k] = dims[k]; t->st[k] = st ? st[k] : ddx[k]; }
            } else if (i <= T_STD) {
                t->rank = axis;
                for (k = 0; k < axis; ++k) { t->dims[k] = dims[k]; t->st[k] = st ? st[k] : dst[k]; }
            } else {
                t->rank = nn;
                for (k = 0; k < nn; ++k) { t->dims[k] = dims[axis + k]; t->st[k] = st ? st[k] : dpar[k]; }
            }
            if (!fz_size_tensor(t)) too_big = 1;
        }
        if (total > FZ_CAP_ELEMS || n > FZ_CAP_ELEMS || rows > FZ_CAP_ELEMS) too_big = 1;
    }

    if (must_reject || too_big) {
        /* Small canary buffers (must_reject) or NULL (too big: no buffer can
           be big enough): the call must not crash, and when the manual says
           it is invalid, it is rejected with nothing written. */
        unsigned char bufs[T_N][64], small_ws[64];
        void *p[T_N];
        memset(bufs, FZ_CANARY, sizeof bufs);
        for (i = 0; i < T_N; ++i) p[i] = must_reject && want[i] ? bufs[i] : NULL;
        memset(&a, 0, sizeof a);
        a.src = p[T_SRC]; a.xhat = p[T_XHAT]; a.diff_dst = p[T_DY]; a.mean = p[T_MEAN]; a.variance = p[T_VAR];
        a.rstd = p[T_RSTD]; a.std = p[T_STD]; a.gamma = p[T_GAMMA]; a.beta = p[T_BETA]; a.diff_src = p[T_DX];
        a.diff_gamma = p[T_DG]; a.diff_beta = p[T_DB];
        fz_extras(&a, dst_form, res_mode);
        /* A small workspace: a huge accepted descriptor stops at
           INSUFFICIENT_WORKSPACE instead of allocating gigabytes. */
        s = fz_call(rms, &d, args_null ? NULL : &a, must_reject ? NULL : small_ws, must_reject ? 0 : sizeof small_ws);
        fz_set_status(s);
        if (sq != NBWD_OK) FZ_ASSERT(s == sq, "workspace_size said %d, the call %d", (int)sq, (int)s);
        if (must_reject) {
            FZ_ASSERT(s != NBWD_OK, "accepted a call the manual calls invalid (rule %d; rank %d, axis %lld)", why, rank,
                      (long long)raw_axis);
            for (i = 0; i < T_N; ++i) {
                int k;
                for (k = 0; k < 64; ++k) FZ_ASSERT(bufs[i][k] == FZ_CANARY, "a rejected call wrote tensor %d", i);
            }
        }
        if (force >= 0) nbwd_force_isa(NBWD_ISA_AUTO);
        return 0;
    }

    /* ---- real buffers: inputs first, so outputs can alias them */
    {
        static const int order[T_N] = {T_SRC, T_XHAT, T_DY, T_MEAN, T_VAR, T_RSTD, T_STD, T_GAMMA, T_BETA, T_DX,
                                       T_DG, T_DB};
        for (i = 0; i < T_N; ++i) {
            int t = order[i];
            if (w.t[t].present) fz_place(&w, t, mode[t] == 3 ? alias_of[t] : -1, alias_delta[t]);
        }
    }
    {
        int form = (int)d.stats_form;
        int sp = form == 0 ? T_VAR : form == 2 ? T_STD : T_RSTD;
        for (i = 0; i < T_N; ++i) {
            int inj = 0;
            if (!w.t[i].present) continue;
            if (i == T_SRC || i == T_XHAT) inj = fz_fill(&w, i, &g, -2, 2, special == 1);
            else if (i == T_DY) inj = fz_fill(&w, i, &g, -1, 1, special == 2);
            else if (i == T_MEAN) inj = fz_fill(&w, i, &g, -0.5, 0.5, special == 3);
            else if (i == T_VAR || i == T_RSTD || i == T_STD) inj = fz_fill(&w, i, &g, 0.25, 4, special == 4 && i == sp);
            else if (i == T_GAMMA) fz_fill(&w, i, &g, -2, 2, 0);
            else if (i == T_BETA) fz_fill(&w, i, &g, -9, 9, 0);
            else if (i == T_DG || i == T_DB || (i == T_DX && (res_mode == 2 || acc_dx))) fz_fill(&w, i, &g, -1, 1, 0);
            injected |= inj;
        }
        /* what the computation reads */
        for (i = 0; i < T_N; ++i) w.t[i].used = w.t[i].present;
        w.t[T_SRC].used &= form != 2; w.t[T_XHAT].used &= form == 2; w.t[T_MEAN].used &= form != 2 && form != 4 && !rms;
        w.t[T_VAR].used &= form == 0; w.t[T_RSTD].used &= form == 1 || form == 3; w.t[T_STD].used &= form == 2;
        w.t[T_GAMMA].used &= d.use_affine && (w.t[T_DX].present || (dst_form && w.t[T_DG].present));
        w.t[T_BETA].used &= dst_form && d.use_affine && (w.t[T_DX].present || w.t[T_DG].present);
        w.t[T_MEAN].used &= !dst_form;
    }
    for (i = 0; i < T_N; ++i)
        if (w.t[i].present) fz_mark(&w, i);
    /* workspace */
    if (sq == NBWD_OK) ws = fz_workspace(ws_mode, qbytes, g.s, &ws_bytes, &ws_alloc);
    fz_snapshot(&w);
    memset(&a, 0, sizeof a);
#define P(k) (w.t[k].present ? (void *)w.t[k].base : NULL)
    a.src = P(T_SRC); a.xhat = P(T_XHAT); a.diff_dst = P(T_DY); a.mean = P(T_MEAN); a.variance = P(T_VAR);
    a.rstd = P(T_RSTD); a.std = P(T_STD); a.gamma = P(T_GAMMA); a.beta = P(T_BETA); a.diff_src = P(T_DX);
    a.diff_gamma = P(T_DG); a.diff_beta = P(T_DB);
    fz_extras(&a, dst_form, res_mode);
#undef P
    s = fz_call(rms, &d, args_null ? NULL : &a, ws, ws_bytes);
    fz_set_status(s);
    if (force >= 0) nbwd_force_isa(NBWD_ISA_AUTO);
    fz_check_status(s, sq, args_null, ws, ws_bytes, qbytes);
    /* A call that follows every rule of the manual must be accepted. */
    if (natural && !args_null && (ws_mode <= 3 || ws_mode == 5 || ws_mode == 7) && isa_runnable &&
        (force < 0 || force_ok))
        FZ_ASSERT(s == NBWD_OK, "rejected a valid call: %s (rank %d, axis %d, dims %lld %lld %lld, form %d, dt %d)",
                  nbwd_status_string(s), rank, axis, (long long)dims[0], (long long)(rank > 1 ? dims[1] : -1),
                  (long long)(rank > 2 ? dims[2] : -1), (int)d.stats_form, (int)d.data_dtype);
    fz_check_untouched(&w, s == NBWD_OK, "layer_norm");
    if (s == NBWD_OK) {
        unsigned char allowed[FZ_MAXT][FZ_MAXT];
        int form = (int)d.stats_form, sp = form == 0 ? T_VAR : form == 2 ? T_STD : T_RSTD;
        int xi = form == 2 ? T_XHAT : T_SRC;
        int64_t r, j;
        double *dgr, *dbr, *dga, *dba, *dge; /* dge: dgamma's extra tolerance in the NONE form */
        int dg_range = 1; /* every row's share of diff_gamma is specified (NONE's Range: below) */
#define PAR_OFF(ti, j) fz_offset(nn, dims + axis, w.t[ti].st, j) /* element j of a parameter tensor */
        memset(allowed, 0, sizeof allowed);
        allowed[T_DX][xi] = (unsigned char)fz_same_view(&w.t[T_DX], &w.t[xi]);
        allowed[T_DX][T_DY] = (unsigned char)fz_same_view(&w.t[T_DX], &w.t[T_DY]);
        fz_allow_unread(&w, allowed);
        fz_check_overlap(&w, allowed, "layer_norm");
        FZ_ASSERT(total == 0 || (w.t[xi].present && w.t[T_DY].present), "accepted without x/dy");
        FZ_ASSERT(rows == 0 || form == NBWD_STATS_NONE ||
                      (w.t[sp].present && (form == 2 || rms || dst_form || w.t[T_MEAN].present)),
                  "accepted without stats");
        /* ---- float64 reference */
        dgr = (double *)calloc((size_t)n + 1, sizeof(double)); dbr = (double *)calloc((size_t)n + 1, sizeof(double));
        dga = (double *)calloc((size_t)n + 1, sizeof(double)); dba = (double *)calloc((size_t)n + 1, sizeof(double));
        dge = (double *)calloc((size_t)n + 1, sizeof(double));
        if (!dgr || !dbr || !dga || !dba || !dge) FZ_FAIL("out of memory");
        for (r = 0; r < rows && n > 0 && total > 0; ++r) {
            const fz_tensor *tx = &w.t[xi], *ty = &w.t[T_DY], *tdx = &w.t[T_DX];
            const unsigned char *xb = fz_snap_base(&w, xi), *yb = fz_snap_base(&w, T_DY);
            double mean = 0, rstd, sg = 0, sgx = 0, ag = 0, agx = 0, axh = 0; /* axh: max |xhat| */
            double spread = form == NBWD_STATS_NONE ? 0.0
                                                    : fz_load(fz_snap_base(&w, sp), w.t[sp].dt, fz_offset(axis, dims, w.t[sp].st, r));
            double none_ge = 0.0; /* NONE: sum of |g| times xhat's error from the call's statistics */
            int use_gamma = d.use_affine && w.t[T_DX].present;
            int row_range = 1;
            /* DST_RSTD: xhat = (dst - beta) * (1 / (gamma + offset)) in fp32
               where gamma is read, 0 for a scale under FLT_MIN */
            int unscale = dst_form && d.use_affine && (w.t[T_DX].present || w.t[T_DG].present);
            if (form != 2 && form != 4 && !rms && !dst_form) mean = fz_load(fz_snap_base(&w, T_MEAN), w.t[T_MEAN].dt, fz_offset(axis, dims, w.t[T_MEAN].st, r));
            if (form == NBWD_STATS_NONE) { /* the manual: the statistics of x, in fp32, as the MEAN_VARIANCE form's */
                double s1 = 0.0, s2 = 0.0;
                for (j = 0; j < n; ++j) s1 += fz_load(xb, tx->dt, fz_offset(rank, dims, tx->st, r * n + j));
                mean = rms ? 0.0 : s1 / (double)n;
                for (j = 0; j < n; ++j) {
                    double dv = fz_load(xb, tx->dt, fz_offset(rank, dims, tx->st, r * n + j)) - mean;
                    s2 += dv * dv;
                }
                spread = (double)(float)(s2 / (double)n);
                mean = (double)(float)mean;
                /* the manual: a row whose f32 sums leave the range (sum of
                   squares about the shift, at most (n + 1) s2, or sum of
                   g (x - shift)) has no fp32 statistics: dx and dgamma
                   are then unspecified there (rstd 0 or NaN) */
                for (j = 0; j < n; ++j) {
                    double gm = use_gamma ? (double)(float)(fz_load(fz_snap_base(&w, T_GAMMA), w.t[T_GAMMA].dt, PAR_OFF(T_GAMMA, j)) + (double)d.gamma_offset) : 1.0;
                    s1 = fabs(fz_load(yb, ty->dt, fz_offset(rank, dims, ty->st, r * n + j)) * gm);
                    if (!(s1 * sqrt((double)(n + 1) * s2) < 0.25 * FLT_MAX)) row_range = 0;
                }
                if (!((double)(n + 1) * s2 < 0.25 * FLT_MAX)) row_range = 0;
                if (!row_range) dg_range = 0;
            }
            rstd = form == 0 || form == 4 ? 1.0 / sqrt(spread + (double)d.epsilon) : form == 1 || dst_form ? spread : 1.0 / spread;
            if (form == 0 || form == 4) rstd = (double)(float)rstd; /* the manual: rstd is one fp32 scalar */
            for (j = 0; j < n; ++j) {
                double xv = fz_load(xb, tx->dt, fz_offset(rank, dims, tx->st, r * n + j));
                double yv = fz_load(yb, ty->dt, fz_offset(rank, dims, ty->st, r * n + j));
                double xh = form == 2 || dst_form ? fz_xhat_of(&w, unscale, xv, PAR_OFF(T_GAMMA, j), PAR_OFF(T_BETA, j), d.gamma_offset)
                                                  : (xv - mean) * rstd;
                double gm = use_gamma ? (double)(float)(fz_load(fz_snap_base(&w, T_GAMMA), w.t[T_GAMMA].dt, PAR_OFF(T_GAMMA, j)) + (double)d.gamma_offset) : 1.0;
                sg += yv * gm; sgx += yv * gm * xh; ag += fabs(yv * gm); agx += fabs(yv * gm * xh);
                if (fabs(xh) > axh) axh = fabs(xh);
                dgr[j] += yv * xh; dga[j] += fabs(yv * xh);
                if (form == NBWD_STATS_NONE) { /* xhat's error with the call's statistics */
                    double e = fz_none_xhat_err(mean, rstd, xh);
                    none_ge += fabs(yv * gm) * e;
                    dge[j] += fabs(yv) * e;
                }
                dbr[j] += yv; dba[j] += fabs(yv);
            }
            /* the kernels work in fp32: where xhat or a partial sum of |g|,
               |g * xhat| leaves its range (inf * 0, inf - inf), dx may be NaN */
            if (w.t[T_DX].present && row_range && fabs(rstd) < 1e30 && fabs(sgx) < 1e30 && axh < 1e37 && ag < 1e37 && agx < 1e37) {
                for (j = 0; j < n; ++j) {
                    double xv = fz_load(xb, tx->dt, fz_offset(rank, dims, tx->st, r * n + j));
                    double yv = fz_load(yb, ty->dt, fz_offset(rank, dims, ty->st, r * n + j));
                    double xh = form == 2 || dst_form ? fz_xhat_of(&w, unscale, xv, PAR_OFF(T_GAMMA, j), PAR_OFF(T_BETA, j), d.gamma_offset)
                                                  : (xv - mean) * rstd;
                    double gm = use_gamma ? (double)(float)(fz_load(fz_snap_base(&w, T_GAMMA), w.t[T_GAMMA].dt, PAR_OFF(T_GAMMA, j)) + (double)d.gamma_offset) : 1.0;
                    double mg = rms ? 0.0 : sg / (double)n, amg = rms ? 0.0 : ag / (double)n; /* RMSNorm: no mean(g) */
                    double gv = yv * gm, want_v = rstd * (gv - mg - xh * sgx / (double)n);
                    double s1 = fabs(rstd) * (fabs(gv) + fabs(mg) + fabs(xh) * fabs(sgx / (double)n));
                    double s2 = fabs(rstd) * (amg + fabs(xh) * agx / (double)n);
                    double tol = ldexp(1.0, -24) * (32 * s1 + 2.0 * ((double)n + 8) * s2);
                    if (form == NBWD_STATS_NONE) /* the call's statistics (see the sums above) */
                        tol += fabs(rstd) * (fabs(sgx / (double)n) * fz_none_xhat_err(mean, rstd, xh) +
                                             fabs(xh) * none_ge / (double)n) + ldexp(1.0, -24) * fabs(want_v);
                    double got = fz_load(tdx->base, tdx->dt, fz_offset(rank, dims, tdx->st, r * n + j));
                    /* rstd scales last: before it, g - (mean_g + xhat * mean_gx) must fit fp32 too */
                    double unscaled = fabs(gv) + fabs(mg) + fabs(xh) * fabs(sgx / (double)n) + amg +
                                      fabs(xh) * agx / (double)n;
                    if (res_mode || acc_dx) { /* + the residual gradient: diff_dst's or diff_src's value before the call */
                        int rt = res_mode == 1 ? T_DY : T_DX;
                        double rv = fz_load(fz_snap_base(&w, rt), w.t[rt].dt, fz_offset(rank, dims, w.t[rt].st, r * n + j));
                        want_v += rv;
                        tol += ldexp(1.0, -23) * (fabs(want_v) + fabs(rv));
                        unscaled += fabs(rv);
                    }
                    if (s1 + s2 < 1e35 && unscaled < 1e37 && /* else fp32 intermediates may overflow */
                        !fz_close(tdx->dt, got, want_v, tol))
                        FZ_FAIL("%s dx[%lld][%lld]: got %.9g, want %.9g (tol %.3g), form %d dt %d isa %d%s",
                                rms ? "rms_norm" : "layer_norm", (long long)r, (long long)j, got, want_v, tol, form, (int)d.data_dtype, (int)d.isa,
                                injected ? " (special values)" : "");
                }
            }
        }
        for (j = 0; j < n && d.use_affine; ++j) {
            int acc = (d.flags & 1u) != 0;
            double tolc = ldexp(1.0, -24) * (16.0 + 2.0 * (double)rows);
            if (w.t[T_DG].present) {
                double prev = acc ? fz_load(fz_snap_base(&w, T_DG), w.t[T_DG].dt, PAR_OFF(T_DG, j)) : 0.0;
                double got = fz_load(w.t[T_DG].base, w.t[T_DG].dt, PAR_OFF(T_DG, j));
                if (dga[j] < 1e35 && dg_range && !fz_close(w.t[T_DG].dt, got, prev + dgr[j], tolc * dga[j] + dge[j] + ldexp(1.0, -23) * fabs(prev)))
                    FZ_FAIL("%s dgamma[%lld]: got %.9g, want %.9g (tol %.3g), form %d, rows %lld, dt %d%s",
                            rms ? "rms_norm" : "layer_norm", (long long)j, got, prev + dgr[j],
                            tolc * dga[j] + dge[j] + ldexp(1.0, -23) * fabs(prev), (int)d.stats_form, (long long)rows,
                            (int)d.data_dtype, injected ? " (special values)" : "");
            }
            if (w.t[T_DB].present) {
                double prev = acc ? fz_load(fz_snap_base(&w, T_DB), w.t[T_DB].dt, PAR_OFF(T_DB, j)) : 0.0;
                double got = fz_load(w.t[T_DB].base, w.t[T_DB].dt, PAR_OFF(T_DB, j));
                if (dba[j] < 1e35 && !fz_close(w.t[T_DB].dt, got, prev + dbr[j], tolc * dba[j] + ldexp(1.0, -23) * fabs(prev)))
                    FZ_FAIL("layer_norm dbeta[%lld]: got %.9g, want %.9g", (long long)j, got, prev + dbr[j]);
            }
        }
        free(dgr); free(dbr); free(dga); free(dba); free(dge);
#undef PAR_OFF
    }
    free(ws_alloc);
    fz_world_free(&w);
    return 0;
}

#if defined(FZ_STANDALONE)
static void fz_report(const char *path, long n) { printf("%s: %ld bytes, status %s\n", path, n, fz_status_name()); }
#endif
