/* fuzz_group_norm.c - libFuzzer target: random bytes -> one call of
   nbwd_group_norm_bwd_workspace_size and nbwd_group_norm_bwd (rank, layout,
   dims, groups (divisors, C itself, non-divisors, zero, negative, huge),
   use_affine, the four statistics forms, dtypes, flags, threads, strides of
   the data, the [N, groups] statistics and the [C] parameters, pointers
   (natural, NULL, forced, aliases), in-place diff_src, workspace and forced
   ISA all decoded).
   Checks, as fuzz_layer_norm.c: no crash or sanitizer report; the query and
   the call agree on descriptor errors; a rejected call writes no byte; an
   accepted call writes only output elements, has no illegal overlap, and
   matches a float64 recomputation from the manual's formulas (per set: one
   sample's group of C / groups channels over the spatial positions); a call
   valid by the manual's rules is accepted. Special values (NaN, +-Inf,
   negative spreads, a gamma of 0, subnormal, tiny, huge or not finite, a
   huge diff_dst) change only their own set's diff_src: every other set is
   still compared with the reference. In the NONE form a set out of the
   manual's Range (squared deviations past FLT_MAX: no fp32 statistics) is
   skipped the same way: its diff_src and its channels' diff_gamma.

   Built with -DFZ_STANDALONE (no libFuzzer): a main that runs each file
   named on the command line once and prints what it decoded. */
#if !defined(FZ_SEPARATE_IMPL) /* else linked in from tests/impl.c */
#define NORM_BWD_IMPLEMENTATION
#endif
#include "norm_bwd.h"
#include "fuzz_common.h"

enum { T_SRC, T_XHAT, T_DST, T_DY, T_MEAN, T_VAR, T_RSTD, T_STD, T_GAMMA, T_BETA, T_DX, T_DG, T_DB, T_N };
/* FZ_STANDALONE prints them */
static size_t g_fz_decoded;
static int g_fz_rank, g_fz_layout, g_fz_form, g_fz_dt, g_fz_inplace;
static long long g_fz_groups, g_fz_c;

/* groups: mostly a divisor of C (when C is small and known), or C
   (InstanceNorm), or 1 (LayerNorm over [C, spatial]); sometimes any small
   number (a non-divisor), zero, negative or huge */
static int64_t fz_groups(fz_rd *r, int64_t C) {
    static const int64_t special[8] = {0, -1, INT64_MIN, INT64_MAX, (int64_t)1 << 40, -2, 3, 7};
    uint8_t b = fz_u8(r);
    if (b < 144 && C > 0 && C <= 4096) {
        int64_t divs[64], g;
        int n = 0;
        for (g = 1; g <= C && n < 64; ++g)
            if (C % g == 0) divs[n++] = g;
        return divs[b % n];
    }
    if (b < 184) return C > 0 ? C : 1;
    if (b < 208) return 1;
    if (b < 232) return 1 + b % 9;
    if (b < 240) return C >= 0 && C < ((int64_t)1 << 40) ? C + 1 + b % 2 : 2;
    return special[b % 8];
}

/* A gamma that cannot be folded into the coefficients (0, -0, subnormal,
   not finite), or whose quotients are large (tiny normal values, down to
   just above FLT_MIN), or huge */
static void fz_special_gamma(fz_world *w, fz_rng *g) {
    static const double v[12] = {0.0, -0.0, 1e-40, NAN, INFINITY, -INFINITY, 1e-30, -2e-36, 3e38, 1e-3, 1.5e-38, -1.2e-38};
    fz_tensor *x = &w->t[T_GAMMA];
    int64_t k, n;
    if (x->count == 0) return;
    n = 1 + (int64_t)(fz_next(g) % 3);
    for (k = 0; k < n; ++k) {
        int64_t e = (int64_t)(fz_next(g) % (uint64_t)x->count);
        fz_store(x->base, x->dt, fz_offset(x->rank, x->dims, x->st, e), v[fz_next(g) % 12]);
    }
}

/* rules 1-8 are the descriptor's (the size query refuses them too), 9 the args' */
#define REJECT(rule) (must_reject = 1, desc_bad |= (rule) != 9, why = why ? why : (rule))

/* xhat of an element in the DST_RSTD form (unscale: gamma read), as the
   manual says: (dst - beta) * (1 / gamma) in fp32, 0 for |gamma| < FLT_MIN
   (also NaN) */
static double fz_xhat_dst(const fz_world *w, int unscale, double y, int64_t c) {
    float ge, inv;
    double beta;
    if (!unscale) return y;
    ge = (float)fz_load(fz_snap_base(w, T_GAMMA), w->t[T_GAMMA].dt, c * w->t[T_GAMMA].st[0]);
    inv = fabsf(ge) >= FLT_MIN ? 1.0f / ge : 0.0f;
    beta = w->t[T_BETA].present ? fz_load(fz_snap_base(w, T_BETA), w->t[T_BETA].dt, c * w->t[T_BETA].st[0]) : 0.0;
    return (double)(float)((float)(y - beta) * inv);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    int why = 0, desc_bad = 0; /* the first rule that made the call invalid, for the report */
    fz_rd rd = {data, size, 0};
    nbwd_group_norm_bwd_desc d;
    nbwd_group_norm_bwd_args a;
    int64_t sx[NBWD_MAX_RANK], sdy[NBWD_MAX_RANK], sdx[NBWD_MAX_RANK], sm[2], sv[2], cst[T_N];
    int64_t dims[NBWD_MAX_RANK], sd[2], N = 0, C = 0, G = 0, S = 1, K = 0, total = 1, nz = 1, Cknown = -1;
    int rank, i, must_reject = 0, overflow = 0, too_big = 0, natural = 1, force, force_ok = 0, nxc = 0, from = 0;
    int mode[T_N], want[T_N], ws_mode, args_null, bytes_null, special, injected = 0, isa_runnable, inplace, form;
    int64_t alias_delta[T_N];
    int alias_of[T_N];
    size_t ws_bytes = 0, qbytes = 777;
    nbwd_status sq, s;
    nbwd_layout layout;
    fz_world w;
    fz_rng g;
    void *ws = NULL, *ws_alloc = NULL;
    static const int rank_tab[16] = {2, 3, 4, 4, 3, 2, 5, 4, 3, 8, 1, 0, 9, -1, 6, 3};
    memset(sx, 0, sizeof sx); memset(sdy, 0, sizeof sdy); memset(sdx, 0, sizeof sdx);
    memset(sm, 0, sizeof sm); memset(sv, 0, sizeof sv);

    /* ---- descriptor */
    rank = rank_tab[fz_u8(&rd) % 16];
    layout = (nbwd_layout)fz_enum(&rd, 2);
    for (i = 0; i < NBWD_MAX_RANK; ++i) dims[i] = i < rank ? fz_dim(&rd) : 0;
    if (rank >= 2 && rank <= NBWD_MAX_RANK && ((int)layout == NBWD_NXC || (int)layout == NBWD_NCX))
        Cknown = layout == NBWD_NXC ? dims[rank - 1] : dims[1];
    G = fz_groups(&rd, Cknown);
    nbwd_group_norm_bwd_desc_init(&d, rank, dims, layout, G, fz_eps(&rd));
    { uint8_t b = fz_u8(&rd); d.use_affine = b < 176 ? 1 : b < 232 ? 0 : (int)(b - 220); }
    d.stats_form = (nbwd_stats_form)fz_enum(&rd, 4);
    d.data_dtype = (nbwd_dtype)fz_enum(&rd, 3);
    { uint8_t b = fz_u8(&rd); d.stats_dtype = (nbwd_dtype)(b < 128 ? NBWD_F32 : b < 224 ? (int)d.data_dtype : fz_enum(&rd, 3)); }
    { uint8_t b = fz_u8(&rd); d.param_dtype = (nbwd_dtype)(b < 128 ? NBWD_F32 : b < 224 ? (int)d.data_dtype : fz_enum(&rd, 3)); }
    /* accumulate; BatchNorm's flags (refused here); anything */
    { uint8_t b = fz_u8(&rd); d.flags = b < 150 ? 0u : b < 230 ? 1u : b < 240 ? 2u << (b % 3) : (unsigned)b << 1; }
    { uint8_t b = fz_u8(&rd); d.num_threads = b < 200 ? b % 4 : -1 - (int)(b % 3); }
    d.isa = (nbwd_isa)fz_enum(&rd, NBWD_ISA_COUNT);
    force = fz_u8(&rd);
    force = force < 192 ? -1 : fz_enum(&rd, NBWD_ISA_COUNT);
    form = (int)d.stats_form;

    /* ---- what the manual says about the descriptor */
    if (rank < 2 || rank > NBWD_MAX_RANK || ((int)layout != NBWD_NXC && (int)layout != NBWD_NCX)) REJECT(1);
    for (i = 0; i < rank && i < NBWD_MAX_RANK; ++i) {
        if (dims[i] < 0) REJECT(2);
        else if (dims[i] == 0) total = 0;
        else if (nz > FZ_MAX_ELEMS / dims[i]) overflow = 1;
        else nz *= dims[i];
    }
    if (overflow) REJECT(3);
    if (form < 0 || form > 3 || (d.flags & ~1u) || d.num_threads < 0 || (int)d.isa < 0 || (int)d.isa >= NBWD_ISA_COUNT)
        REJECT(4);
    if (form == NBWD_STATS_MEAN_VARIANCE && !(d.epsilon > 0 && d.epsilon <= FLT_MAX)) REJECT(5);
    if (!fz_dt_ok(d.data_dtype) || !fz_dt_ok(d.stats_dtype) || !fz_dt_ok(d.param_dtype) ||
        (d.stats_dtype != NBWD_F32 && d.stats_dtype != d.data_dtype) ||
        (d.param_dtype != NBWD_F32 && d.param_dtype != d.data_dtype))
        REJECT(6);
    if (!must_reject) {
        nxc = layout == NBWD_NXC;
        N = dims[0];
        C = nxc ? dims[rank - 1] : dims[1];
        for (i = nxc ? 1 : 2; i < (nxc ? rank - 1 : rank); ++i) S *= dims[i];
        total = total ? nz : 0;
        from = nxc ? rank - 1 : 2; /* the dense block: C (NXC) or the spatial dims (NCX; none at rank 2) */
        if (G < 1 || (C > 0 && C % G != 0) || (N > 0 && G > INT64_MAX / 16 / N)) REJECT(7); /* [N, groups] must fit */
    }
    if (!must_reject) K = C / G * S;
    /* data strides (src/xhat/dst share src_strides), the [N, groups]
       statistics' two entries, the [C] parameters' one */
    d.src_strides = fz_block_strides(&rd, must_reject ? 0 : rank, dims, from, sx, NULL);
    d.diff_dst_strides = fz_block_strides(&rd, must_reject ? 0 : rank, dims, from, sdy, NULL);
    d.diff_src_strides = fz_block_strides(&rd, must_reject ? 0 : rank, dims, from, sdx, NULL);
    sd[0] = N; sd[1] = must_reject ? 0 : G;
    d.mean_strides = fz_block_strides(&rd, 2, sd, 2, sm, NULL);
    d.var_strides = fz_block_strides(&rd, 2, sd, 2, sv, NULL);
    for (i = 0; i < T_N; ++i) cst[i] = 1;
    {
        static const int ct[4] = {T_GAMMA, T_BETA, T_DG, T_DB};
        const int64_t **slot[4];
        int k;
        slot[0] = &d.gamma_strides; slot[1] = &d.beta_strides;
        slot[2] = &d.diff_gamma_strides; slot[3] = &d.diff_beta_strides;
        for (k = 0; k < 4; ++k) {
            uint8_t m = fz_u8(&rd);
            if (m < 160) continue;
            cst[ct[k]] = m < 208 ? ((m & 1) ? -1 : 1) * (int64_t)(1 + m % 3) : fz_stride(&rd, 1);
            *slot[k] = &cst[ct[k]];
        }
    }
    if (d.src_strides || d.diff_dst_strides || d.diff_src_strides || d.mean_strides || d.var_strides ||
        d.gamma_strides || d.beta_strides || d.diff_gamma_strides || d.diff_beta_strides)
        natural = 0;

    /* ---- pointers: natural (what the form needs), forced NULL, forced
       present, or an alias of another tensor */
    for (i = 0; i < T_N; ++i) {
        uint8_t m = fz_u8(&rd);
        int needed = i == T_DY || (i == T_SRC && (form == 0 || form == 1)) || (i == T_XHAT && form == 2) ||
                     (i == T_DST && form == 3) || (i == T_MEAN && (form == 0 || form == 1)) ||
                     (i == T_VAR && form == 0) || (i == T_RSTD && (form == 1 || form == 3)) ||
                     (i == T_STD && form == 2) || (i == T_GAMMA && d.use_affine);
        if (i == T_BETA) needed = form == 3 && d.use_affine && (m & 1);
        if (i == T_DX) needed = m % 4 != 0;
        if (i == T_DG || i == T_DB) needed = m % 4 != 0 && d.use_affine;
        if (!fz_pointer_mode(&rd, m, needed, i, T_N, mode, want, alias_of, alias_delta)) natural = 0;
    }
    if ((want[T_DG] || want[T_DB]) && !d.use_affine) REJECT(9);
    ws_mode = fz_u8(&rd) % 8; /* 0,1 NULL; 2,3 exact; 4 exact-1; 5 misaligned exact; 6 size 0; 7 exact, big */
    args_null = fz_u8(&rd) == 255;
    bytes_null = fz_u8(&rd) == 255;
    g.s = fz_u64(&rd);
    special = fz_u8(&rd);
    special = special >= 200 ? 1 + special % 7 : 0;
    /* in place: diff_src exactly x (src, xhat or dst) or diff_dst, the same
       strides (allowed by the manual, so it stays natural) */
    inplace = fz_u8(&rd);
    inplace = inplace < 208 || !want[T_DX] || mode[T_DX] != 0 ? 0 : 1 + inplace % 2;
    if (inplace) {
        int xi = form == 2 ? T_XHAT : form == 3 ? T_DST : T_SRC, on = inplace == 1 ? xi : T_DY;
        if (want[on] && mode[on] == 0) {
            d.diff_src_strides = inplace == 1 ? d.src_strides : d.diff_dst_strides;
            mode[T_DX] = 3;
            alias_of[T_DX] = on;
            alias_delta[T_DX] = 0;
        } else {
            inplace = 0;
        }
    }
    /* The byte after: the NONE form (the MEAN_VARIANCE form's src alone: the
       call finds the sets' statistics), read last so that older inputs keep
       their meaning */
    if ((fz_u8(&rd) & 3) == 3 && form == NBWD_STATS_MEAN_VARIANCE) {
        d.stats_form = NBWD_STATS_NONE;
        form = NBWD_STATS_NONE;
        if (mode[T_MEAN] == 0) want[T_MEAN] = 0;
        if (mode[T_VAR] == 0) want[T_VAR] = 0;
    }
    /* rule 8 once diff_src's strides are final (in place: x's or dy's) */
    if (!must_reject && (!fz_dense_block(rank, dims, d.src_strides, from) ||
                         !fz_dense_block(rank, dims, d.diff_dst_strides, from) ||
                         !fz_dense_block(rank, dims, d.diff_src_strides, from)))
        REJECT(8);
    g_fz_decoded = rd.i;
    g_fz_rank = rank; g_fz_layout = (int)layout; g_fz_form = form; g_fz_dt = (int)d.data_dtype;
    g_fz_groups = (long long)G; g_fz_c = (long long)C; g_fz_inplace = inplace;
    if (force >= 0) {
        nbwd_status fs = nbwd_force_isa((nbwd_isa)force);
        force_ok = force == NBWD_ISA_AUTO || (force > 0 && force < NBWD_ISA_COUNT && nbwd_isa_supported((nbwd_isa)force));
        FZ_ASSERT((fs == NBWD_OK) == force_ok, "nbwd_force_isa(%d) returned %d", force, (int)fs);
    }
    isa_runnable = d.isa == NBWD_ISA_AUTO ? nbwd_active_isa() != NBWD_ISA_AUTO
                                          : (int)d.isa > 0 && (int)d.isa < NBWD_ISA_COUNT &&
                                                nbwd_isa_supported(d.isa);

    /* ---- the size query */
    sq = nbwd_group_norm_bwd_workspace_size(&d, bytes_null ? NULL : &qbytes);
    if (bytes_null) FZ_ASSERT(sq == NBWD_ERR_NULL_POINTER, "workspace_size(bytes NULL) = %d", (int)sq);
    else if (sq != NBWD_OK) FZ_ASSERT(qbytes == 777, "a failed workspace_size wrote *bytes");
    FZ_ASSERT(nbwd_group_norm_bwd_workspace_size(NULL, &qbytes) == NBWD_ERR_NULL_POINTER, "NULL desc");
    if (bytes_null) sq = nbwd_group_norm_bwd_workspace_size(&d, &qbytes);
    if (desc_bad) FZ_ASSERT(sq != NBWD_OK, "workspace_size accepted an invalid desc (rule %d)", why);

    memset(&w, 0, sizeof w);
    w.nt = T_N;
    /* ---- tensor geometry */
    if (!must_reject) {
        int64_t ddx[NBWD_MAX_RANK], dstat[2];
        fz_dense(rank, dims, ddx);
        fz_dense(2, sd, dstat);
        for (i = 0; i < T_N; ++i) {
            fz_tensor *t = &w.t[i];
            int data = i <= T_DY || i == T_DX, stat = i >= T_MEAN && i <= T_STD, k;
            const int64_t *st = i <= T_DST ? d.src_strides : i == T_DY ? d.diff_dst_strides
                                : i == T_DX ? d.diff_src_strides : i == T_MEAN ? d.mean_strides
                                : stat ? d.var_strides : NULL;
            t->present = want[i];
            t->is_output = i >= T_DX;
            t->dt = data ? (int)d.data_dtype : stat ? (int)d.stats_dtype : (int)d.param_dtype;
            if (data) {
                t->rank = rank;
                for (k = 0; k < rank; ++k) { t->dims[k] = dims[k]; t->st[k] = st ? st[k] : ddx[k]; }
            } else if (stat) {
                t->rank = 2;
                for (k = 0; k < 2; ++k) { t->dims[k] = sd[k]; t->st[k] = st ? st[k] : dstat[k]; }
            } else {
                t->rank = 1; t->dims[0] = C; t->st[0] = cst[i];
            }
            if (!fz_size_tensor(t)) too_big = 1;
        }
        if (total > FZ_CAP_ELEMS || C > FZ_CAP_ELEMS || N > FZ_CAP_ELEMS || (N > 0 && G > FZ_CAP_ELEMS / N)) too_big = 1;
    }

    if (must_reject || too_big) {
        /* Small canary buffers (must_reject) or NULL (too big): no crash,
           and an invalid call is rejected with nothing written. */
        unsigned char bufs[T_N][64], small_ws[64];
        void *p[T_N];
        memset(bufs, FZ_CANARY, sizeof bufs);
        for (i = 0; i < T_N; ++i) p[i] = must_reject && want[i] ? bufs[i] : NULL;
        memset(&a, 0, sizeof a);
        a.src = p[T_SRC]; a.xhat = p[T_XHAT]; a.dst = p[T_DST]; a.diff_dst = p[T_DY]; a.mean = p[T_MEAN];
        a.variance = p[T_VAR]; a.rstd = p[T_RSTD]; a.std = p[T_STD]; a.gamma = p[T_GAMMA]; a.beta = p[T_BETA];
        a.diff_src = p[T_DX]; a.diff_gamma = p[T_DG]; a.diff_beta = p[T_DB];
        /* A small workspace: a huge accepted descriptor stops at
           INSUFFICIENT_WORKSPACE instead of allocating gigabytes. */
        s = nbwd_group_norm_bwd(&d, args_null ? NULL : &a, must_reject ? NULL : small_ws, must_reject ? 0 : sizeof small_ws);
        fz_set_status(s);
        if (sq != NBWD_OK) FZ_ASSERT(s == sq, "workspace_size said %d, the call %d", (int)sq, (int)s);
        if (must_reject) {
            FZ_ASSERT(s != NBWD_OK, "accepted a call the manual calls invalid (rule %d; rank %d, layout %d, groups %lld, "
                      "dims %lld %lld %lld)", why, rank, (int)layout, (long long)G, (long long)dims[0],
                      (long long)dims[1], (long long)dims[2]);
            for (i = 0; i < T_N; ++i) {
                int k;
                for (k = 0; k < 64; ++k) FZ_ASSERT(bufs[i][k] == FZ_CANARY, "a rejected call wrote tensor %d", i);
            }
        }
        if (force >= 0) nbwd_force_isa(NBWD_ISA_AUTO);
        return 0;
    }

    /* ---- real buffers: inputs first, so outputs can alias them */
    for (i = 0; i < T_N; ++i)
        if (w.t[i].present) fz_place(&w, i, mode[i] == 3 ? alias_of[i] : -1, alias_delta[i]);
    /* in place: the very same view (it always fits: the same extent) */
    if (inplace)
        FZ_ASSERT(w.t[T_DX].base == w.t[inplace == 1 ? (form == 2 ? T_XHAT : form == 3 ? T_DST : T_SRC) : T_DY].base,
                  "in place: diff_src not placed on its input");
    {
        int sp = form == 0 ? T_VAR : form == 2 ? T_STD : T_RSTD;
        for (i = 0; i < T_N; ++i) {
            int inj = 0;
            if (!w.t[i].present) continue;
            if (i == T_SRC || i == T_XHAT || i == T_DST) inj = fz_fill(&w, i, &g, -2, 2, special == 1);
            else if (i == T_DY) inj = fz_fill(&w, i, &g, -1, 1, special == 2);
            else if (i == T_MEAN) inj = fz_fill(&w, i, &g, -0.5, 0.5, special == 3);
            else if (i == T_VAR || i == T_RSTD || i == T_STD) inj = fz_fill(&w, i, &g, 0.25, 4, special == 4 && i == sp);
            else if (i == T_GAMMA) fz_fill(&w, i, &g, -2, 2, 0);
            else if (i == T_BETA) fz_fill(&w, i, &g, -9, 9, special == 6);
            else if (i == T_DG || i == T_DB) fz_fill(&w, i, &g, -1, 1, 0);
            injected |= inj;
        }
        if (special == 5 && w.t[T_GAMMA].present) { fz_special_gamma(&w, &g); injected = 1; }
        if (special == 7 && w.t[T_DY].present && w.t[T_DY].count > 0) { /* a huge (finite) diff_dst element */
            fz_tensor *t = &w.t[T_DY];
            int64_t e = (int64_t)(fz_next(&g) % (uint64_t)t->count);
            fz_store(t->base, t->dt, fz_offset(t->rank, t->dims, t->st, e), t->dt == NBWD_F16 ? 6e4 : 1e37);
            injected = 1;
        }
        /* in place: dx starts as x's or dy's values (the same memory), filled above */
        /* what the computation reads */
        for (i = 0; i < T_N; ++i) w.t[i].used = w.t[i].present;
        w.t[T_SRC].used &= form == 0 || form == 1 || form == 4; w.t[T_XHAT].used &= form == 2; w.t[T_DST].used &= form == 3;
        w.t[T_MEAN].used &= form == 0 || form == 1; w.t[T_VAR].used &= form == 0;
        w.t[T_RSTD].used &= form == 1 || form == 3; w.t[T_STD].used &= form == 2;
        w.t[T_GAMMA].used &= d.use_affine && (w.t[T_DX].present || (form == 3 && w.t[T_DG].present));
        w.t[T_BETA].used &= form == 3 && d.use_affine && (w.t[T_DX].present || w.t[T_DG].present);
    }
    for (i = 0; i < T_N; ++i)
        if (w.t[i].present) fz_mark(&w, i);
    /* workspace */
    if (sq == NBWD_OK) ws = fz_workspace(ws_mode, qbytes, g.s, &ws_bytes, &ws_alloc);
    fz_snapshot(&w);
    memset(&a, 0, sizeof a);
#define P(k) (w.t[k].present ? (void *)w.t[k].base : NULL)
    a.src = P(T_SRC); a.xhat = P(T_XHAT); a.dst = P(T_DST); a.diff_dst = P(T_DY); a.mean = P(T_MEAN);
    a.variance = P(T_VAR); a.rstd = P(T_RSTD); a.std = P(T_STD); a.gamma = P(T_GAMMA); a.beta = P(T_BETA);
    a.diff_src = P(T_DX); a.diff_gamma = P(T_DG); a.diff_beta = P(T_DB);
#undef P
    s = nbwd_group_norm_bwd(&d, args_null ? NULL : &a, ws, ws_bytes);
    fz_set_status(s);
    if (force >= 0) nbwd_force_isa(NBWD_ISA_AUTO);
    fz_check_status(s, sq, args_null, ws, ws_bytes, qbytes);
    /* A call that follows every rule of the manual must be accepted. */
    if (natural && !args_null && (ws_mode <= 3 || ws_mode == 5 || ws_mode == 7) && isa_runnable &&
        (force < 0 || force_ok))
        FZ_ASSERT(s == NBWD_OK, "rejected a valid call: %s (%s; rank %d, layout %d, groups %lld, dims %lld %lld %lld, "
                  "form %d, dt %d)", nbwd_status_string(s), nbwd_last_error(), rank, (int)layout, (long long)G,
                  (long long)dims[0], (long long)dims[1], (long long)(rank > 2 ? dims[2] : -1), form,
                  (int)d.data_dtype);
    fz_check_untouched(&w, s == NBWD_OK, "group_norm");
    if (s == NBWD_OK) {
        unsigned char allowed[FZ_MAXT][FZ_MAXT];
        int sp = form == 0 ? T_VAR : form == 2 ? T_STD : T_RSTD;
        int xi = form == 2 ? T_XHAT : form == 3 ? T_DST : T_SRC;
        int use_gamma = d.use_affine && w.t[T_DX].present;
        int unscale = form == 3 && d.use_affine && (w.t[T_DX].present || w.t[T_DG].present);
        int64_t n, gi, c, e, Cg = G > 0 ? C / G : 0;
        double *dgr, *dbr, *dga, *dba, *dge; /* dge: dgamma's extra tolerance in the NONE form */
        unsigned char *dgo; /* NONE: channel c has a share from a set out of the f32 range (see below) */
        memset(allowed, 0, sizeof allowed);
        allowed[T_DX][xi] = (unsigned char)fz_same_view(&w.t[T_DX], &w.t[xi]);
        allowed[T_DX][T_DY] = (unsigned char)fz_same_view(&w.t[T_DX], &w.t[T_DY]);
        fz_allow_unread(&w, allowed);
        fz_check_overlap(&w, allowed, "group_norm");
        FZ_ASSERT(total == 0 || (w.t[xi].present && w.t[T_DY].present), "accepted without x/dy");
        FZ_ASSERT(total == 0 || form == NBWD_STATS_NONE || (w.t[sp].present && (form >= 2 || w.t[T_MEAN].present)),
                  "accepted without stats");
        FZ_ASSERT(total == 0 || !use_gamma || w.t[T_GAMMA].present, "accepted diff_src without gamma (use_affine)");
        /* ---- float64 reference, set by set */
        dgr = (double *)calloc((size_t)C + 1, sizeof(double)); dbr = (double *)calloc((size_t)C + 1, sizeof(double));
        dga = (double *)calloc((size_t)C + 1, sizeof(double)); dba = (double *)calloc((size_t)C + 1, sizeof(double));
        dge = (double *)calloc((size_t)C + 1, sizeof(double));
        dgo = (unsigned char *)calloc((size_t)C + 1, 1);
        if (!dgr || !dbr || !dga || !dba || !dge || !dgo) FZ_FAIL("out of memory");
        /* element (n, c, s)'s logical (row-major) index */
#define LIN(n_, c_, s_) (nxc ? ((n_) * S + (s_)) * C + (c_) : ((n_) * C + (c_)) * S + (s_))
        for (n = 0; n < N && total > 0; ++n)
            for (gi = 0; gi < G; ++gi) {
                const fz_tensor *tx = &w.t[xi], *ty = &w.t[T_DY], *tdx = &w.t[T_DX];
                const unsigned char *xb = fz_snap_base(&w, xi), *yb = fz_snap_base(&w, T_DY);
                double mean = 0, rstd, sg = 0, sgx = 0, ag = 0, agx = 0, axh = 0, none_ge = 0;
                int set_range = 1;
                double spread = form == NBWD_STATS_NONE ? 0.0
                                : fz_load(fz_snap_base(&w, sp), w.t[sp].dt, n * w.t[sp].st[0] + gi * w.t[sp].st[1]);
                if (form <= 1) mean = fz_load(fz_snap_base(&w, T_MEAN), w.t[T_MEAN].dt, n * w.t[T_MEAN].st[0] + gi * w.t[T_MEAN].st[1]);
                if (form == NBWD_STATS_NONE) { /* the manual: the set's statistics of x, as the MEAN_VARIANCE form's, fp32 */
                    double s1 = 0.0, s2 = 0.0;
                    for (c = gi * Cg; c < (gi + 1) * Cg; ++c)
                        for (e = 0; e < S; ++e) s1 += fz_load(xb, tx->dt, fz_offset(rank, dims, tx->st, LIN(n, c, e)));
                    mean = s1 / (double)K;
                    for (c = gi * Cg; c < (gi + 1) * Cg; ++c)
                        for (e = 0; e < S; ++e) {
                            double dv = fz_load(xb, tx->dt, fz_offset(rank, dims, tx->st, LIN(n, c, e))) - mean;
                            s2 += dv * dv;
                        }
                    spread = (double)(float)(s2 / (double)K);
                    mean = (double)(float)mean;
                    /* the manual's Range: the sums are f32 (a plane's or a
                       column's squared deviations from its f32 mean), and a
                       set whose squared deviations add up past FLT_MAX has
                       no fp32 statistics: its diff_src and its share of
                       diff_gamma are then unspecified (rstd 0: 0, or NaN);
                       diff_beta and the other sets are still checked. The
                       bound is fuzz_layer_norm.c's, with the same margin. */
                    if (!((double)(K + 1) * s2 < 0.25 * FLT_MAX)) set_range = 0;
                }
                rstd = form == 0 || form == 4 ? (double)(float)(1.0 / sqrt(spread + (double)d.epsilon)) /* one fp32 value */
                       : form == 2 ? 1.0 / spread : spread;
                for (c = gi * Cg; c < (gi + 1) * Cg && !set_range; ++c) dgo[c] = 1;
                for (c = gi * Cg; c < (gi + 1) * Cg; ++c) {
                    double gm = use_gamma ? fz_load(fz_snap_base(&w, T_GAMMA), w.t[T_GAMMA].dt, c * cst[T_GAMMA]) : 1.0;
                    for (e = 0; e < S; ++e) {
                        double xv = fz_load(xb, tx->dt, fz_offset(rank, dims, tx->st, LIN(n, c, e)));
                        double yv = fz_load(yb, ty->dt, fz_offset(rank, dims, ty->st, LIN(n, c, e)));
                        double xh = form == 3 ? fz_xhat_dst(&w, unscale, xv, c) : form == 2 ? xv : (xv - mean) * rstd;
                        sg += yv * gm; sgx += yv * gm * xh; ag += fabs(yv * gm); agx += fabs(yv * gm * xh);
                        if (!(fabs(xh) <= axh)) axh = fabs(xh);
                        dgr[c] += yv * xh; dga[c] += fabs(yv * xh);
                        if (form == NBWD_STATS_NONE) { /* the call's statistics: xhat off by up to fz_none_xhat_err */
                            double er = fz_none_xhat_err(mean, rstd, xh);
                            none_ge += fabs(yv * gm) * er;
                            dge[c] += fabs(yv) * er;
                        }
                        dbr[c] += yv; dba[c] += fabs(yv);
                    }
                }
                /* fp32 kernels: where xhat or a partial sum leaves its range
                   (inf * 0, inf - inf), dx may be NaN; NaN sums skip too */
                if (!w.t[T_DX].present || !set_range || !(fabs(rstd) < 1e30 && fabs(sgx) < 1e30 && axh < 1e37 && ag < 1e37 && agx < 1e37))
                    continue;
                for (c = gi * Cg; c < (gi + 1) * Cg; ++c) {
                    double gm = use_gamma ? fz_load(fz_snap_base(&w, T_GAMMA), w.t[T_GAMMA].dt, c * cst[T_GAMMA]) : 1.0;
                    for (e = 0; e < S; ++e) {
                        double xv = fz_load(xb, tx->dt, fz_offset(rank, dims, tx->st, LIN(n, c, e)));
                        double yv = fz_load(yb, ty->dt, fz_offset(rank, dims, ty->st, LIN(n, c, e)));
                        double xh = form == 3 ? fz_xhat_dst(&w, unscale, xv, c) : form == 2 ? xv : (xv - mean) * rstd;
                        double mg = sg / (double)K, amg = ag / (double)K;
                        double gv = yv * gm, want_v = rstd * (gv - mg - xh * sgx / (double)K);
                        double s1 = fabs(rstd) * (fabs(gv) + fabs(mg) + fabs(xh) * fabs(sgx / (double)K));
                        double s2 = fabs(rstd) * (amg + fabs(xh) * agx / (double)K);
                        /* (+ fp32's absolute error where g = dy * gamma or a term is
                           subnormal: a few 2^-149, times rstd) */
                        double tol = ldexp(1.0, -24) * (32 * s1 + 2.0 * ((double)K + 8) * s2) +
                                     16.0 * fabs(rstd) * ldexp(1.0, -149);
                        if (form == NBWD_STATS_NONE)
                            tol += fabs(rstd) * (fabs(sgx / (double)K) * fz_none_xhat_err(mean, rstd, xh) +
                                                 fabs(xh) * none_ge / (double)K) + ldexp(1.0, -24) * fabs(want_v);
                        double got = fz_load(tdx->base, tdx->dt, fz_offset(rank, dims, tdx->st, LIN(n, c, e)));
                        double unscaled = fabs(gv) + fabs(mg) + fabs(xh) * fabs(sgx / (double)K) + amg +
                                          fabs(xh) * agx / (double)K;
                        if (s1 + s2 < 1e35 && unscaled < 1e37 && /* else fp32 intermediates may overflow */
                            !fz_close(tdx->dt, got, want_v, tol))
                            FZ_FAIL("group_norm dx (n %lld, c %lld, s %lld) of set (%lld, %lld): got %.9g, want %.9g "
                                    "(tol %.3g), gamma %.9g, rank %d layout %d groups %lld C %lld form %d dt %d pdt %d "
                                    "isa %d%s%s", (long long)n, (long long)c, (long long)e, (long long)n, (long long)gi,
                                    got, want_v, tol, gm, rank, (int)layout, (long long)G, (long long)C, form,
                                    (int)d.data_dtype, (int)d.param_dtype, (int)d.isa,
                                    injected ? " (special values)" : "", inplace ? " (in place)" : "");
                    }
                }
            }
#undef LIN
        for (c = 0; c < C && d.use_affine; ++c) {
            int acc = (d.flags & 1u) != 0;
            double tolc = ldexp(1.0, -24) * (16.0 + 2.0 * (double)(N * S));
            if (w.t[T_DG].present) {
                double prev = acc ? fz_load(fz_snap_base(&w, T_DG), w.t[T_DG].dt, c * cst[T_DG]) : 0.0;
                double got = fz_load(w.t[T_DG].base, w.t[T_DG].dt, c * cst[T_DG]);
                if (dga[c] < 1e35 && !dgo[c] && !fz_close(w.t[T_DG].dt, got, prev + dgr[c], tolc * dga[c] + dge[c] + ldexp(1.0, -23) * fabs(prev)))
                    FZ_FAIL("group_norm dgamma[%lld]: got %.9g, want %.9g (form %d, layout %d, groups %lld)",
                            (long long)c, got, prev + dgr[c], form, (int)layout, (long long)G);
            }
            if (w.t[T_DB].present) {
                double prev = acc ? fz_load(fz_snap_base(&w, T_DB), w.t[T_DB].dt, c * cst[T_DB]) : 0.0;
                double got = fz_load(w.t[T_DB].base, w.t[T_DB].dt, c * cst[T_DB]);
                if (dba[c] < 1e35 && !fz_close(w.t[T_DB].dt, got, prev + dbr[c], tolc * dba[c] + ldexp(1.0, -23) * fabs(prev)))
                    FZ_FAIL("group_norm dbeta[%lld]: got %.9g, want %.9g (layout %d, groups %lld)", (long long)c, got,
                            prev + dbr[c], (int)layout, (long long)G);
            }
        }
        free(dgr); free(dbr); free(dga); free(dba); free(dge); free(dgo);
    }
    free(ws_alloc);
    fz_world_free(&w);
    return 0;
}

#if defined(FZ_STANDALONE)
static void fz_report(const char *path, long n) {
    printf("%s: %ld bytes, %zu decoded, rank %d layout %d C %lld groups %lld form %d dt %d in-place %d, status %s\n",
           path, n, g_fz_decoded, g_fz_rank, g_fz_layout, g_fz_c, g_fz_groups, g_fz_form, g_fz_dt, g_fz_inplace,
           fz_status_name());
}
#endif
