/* fuzz_batch_norm.c - libFuzzer target: random bytes -> one call of
   nbwd_batch_norm_bwd_workspace_size and nbwd_batch_norm_bwd, or of the
   two-phase pair (reduce, then apply with its sums) (rank, layout, dims,
   strides, pointers, aliasing, workspace, forced ISA all decoded). The same
   checks as fuzz_layer_norm.c. The fused ReLU (NBWD_FUSE_RELU,
   NBWD_FUSE_ADD_RELU, args.dst and args.diff_src_add with their strides,
   modes and aliases, and special dst values) comes from the bytes after the
   two-phase byte: an input that ends before them keeps its meaning (no
   relu, neither tensor).

   Built with -DFZ_STANDALONE (no libFuzzer): a main that runs each file
   named on the command line once and prints how many bytes each decodes
   (for padding seeds before appending a byte for a new choice). */
#if !defined(FZ_SEPARATE_IMPL) /* else linked in from tests/impl.c */
#define NORM_BWD_IMPLEMENTATION
#endif
#include "norm_bwd.h"
#include "fuzz_common.h"

/* T_N0: the tensors decoded from the start (their mode bytes, alias
   targets); dst and diff_src_add come after the two-phase byte */
enum { T_SRC, T_XHAT, T_DY, T_MEAN, T_VAR, T_RSTD, T_STD, T_GAMMA, T_DX, T_DG, T_DB, T_N0, T_DST = T_N0, T_DSA, T_N };
/* FZ_STANDALONE prints them: the relu byte's position, the bytes decoded, the call's status */
static size_t g_fz_relu_at, g_fz_decoded;
static int g_fz_relu, g_fz_two;

/* Strides whose block [from, to) should be dense; dims outside it padded,
   one of them possibly negative; or arbitrary. */
static const int64_t *fz_strides(fz_rd *r, int rank, const int64_t *dims, int from, int to, int64_t *out) {
    uint8_t m = fz_u8(r);
    int64_t s = 1, inner;
    int d;
    if (m < 128) return NULL;
    for (d = rank - 1; d >= to; --d) { /* NCX has no dims after the block; NXC: none either */
        out[d] = s;
        s *= dims[d] > 0 && dims[d] < ((int64_t)1 << 20) ? dims[d] : 1;
    }
    inner = s;
    for (d = to - 1; d >= from; --d) {
        out[d] = m >= 208 ? fz_stride(r, s) : s;
        s *= dims[d] > 0 && dims[d] < ((int64_t)1 << 20) ? dims[d] : 1;
    }
    (void)inner;
    for (d = from - 1; d >= 0; --d) {
        if (m >= 208) {
            out[d] = fz_stride(r, s);
        } else {
            int64_t pad = fz_u8(r) % 3;
            out[d] = (m & 1) && d == 0 ? -(s + pad) : s + pad;
            s += pad;
        }
        s *= dims[d] > 0 && dims[d] < ((int64_t)1 << 20) ? dims[d] : 1;
    }
    return out;
}

static int dense_block(const int64_t *dims, const int64_t *st, int from, int to) {
    int64_t expect = 1;
    int d;
    if (!st) return 1;
    for (d = to - 1; d >= from; --d) {
        if (dims[d] != 1 && st[d] != expect) return 0;
        expect *= dims[d] > 0 ? dims[d] : 1;
    }
    return 1;
}

/* two: nbwd_batch_norm_bwd_reduce over the whole batch as one slice, then
   nbwd_batch_norm_bwd_apply with its sums and count: the plain call's
   results (the same sums), so the same oracle holds. C: the channels
   (< 0: not known, the plain call).
   An accepted reduce writes diff_src_add (NBWD_FUSE_ADD_RELU) though apply
   may then refuse (an output that overlaps diff_src_add only in apply's
   args): with w (the world, snapshot taken), that case is checked here,
   apply wrote nothing and reduce only diff_src_add's elements, and
   *checked says so (the caller's nothing-written check does not hold). */
static nbwd_status fz_bn_call(int two, const nbwd_batch_norm_bwd_desc *d, const nbwd_batch_norm_bwd_args *a, void *ws,
                              size_t ws_bytes, int64_t C, const fz_world *w, int *checked) {
    nbwd_batch_norm_bwd_args ra;
    float *sums;
    int64_t count = -5;
    nbwd_status s;
    *checked = 0;
    if (!two || C < 0 || C > FZ_CAP_ELEMS) return nbwd_batch_norm_bwd(d, a, ws, ws_bytes);
    sums = (float *)malloc((size_t)(2 * C + 1) * sizeof(float));
    if (!sums) FZ_FAIL("out of memory");
    if (a) {
        ra = *a;
        ra.diff_src = ra.diff_gamma = ra.diff_beta = NULL;
    }
    s = nbwd_batch_norm_bwd_reduce(d, a ? &ra : NULL, sums, sums + C, &count, ws, ws_bytes);
    if (s == NBWD_OK) {
        unsigned char *after[FZ_MAXT + 2];
        int k;
        size_t b;
        for (k = 0; w && k < w->na; ++k) {
            if (!(after[k] = (unsigned char *)malloc(w->a[k].bytes))) FZ_FAIL("out of memory");
            memcpy(after[k], w->a[k].mem, w->a[k].bytes);
        }
        s = nbwd_batch_norm_bwd_apply(d, a, sums, sums + C, count, ws, ws_bytes);
        for (k = 0; w && k < w->na; ++k) {
            for (b = 0; s != NBWD_OK && b < w->a[k].bytes; ++b) {
                FZ_ASSERT(w->a[k].mem[b] == after[k][b], "a refused apply changed byte %zu of allocation %d", b, k);
                FZ_ASSERT(w->a[k].mem[b] == w->a[k].snap[b] || (w->a[k].owners[b] & (1u << T_DSA)),
                          "reduce changed byte %zu of allocation %d, not diff_src_add's", b, k);
            }
            free(after[k]);
        }
        *checked = w && s != NBWD_OK;
    } else {
        FZ_ASSERT(count == -5, "a refused reduce wrote count");
    }
    free(sums);
    return s;
}

#define REJECT(rule) (must_reject = 1, why = why ? why : (rule))

/* The fused ReLU's dst: uniform [-1, 1), and by `special` one element NaN
   (either sign), -0, +0, +inf, -inf or the smallest positive subnormal, or
   a quarter of them +-0 (stored as bits: no conversion involved). */
static void fz_fill_dst(fz_world *w, fz_rng *g, int special) {
    fz_tensor *x = &w->t[T_DST];
    int64_t e, n;
    int f32 = x->dt == NBWD_F32, bf = x->dt == NBWD_BF16;
    uint32_t bits = 0;
    fz_fill(w, T_DST, g, -1, 1, 0);
    if (!special || x->count == 0) return;
    switch (special) {
    case 1: bits = fz_next(g) & 1 ? (f32 ? 0xFFC00001u : bf ? 0xFFC1u : 0xFE01u) : (f32 ? 0x7FC00000u : bf ? 0x7FC0u : 0x7E00u); break;
    case 2: bits = f32 ? 0x80000000u : 0x8000u; break;
    case 3: bits = 0; break;
    case 4: bits = f32 ? 0x7F800000u : bf ? 0x7F80u : 0x7C00u; break;
    case 5: bits = f32 ? 0xFF800000u : bf ? 0xFF80u : 0xFC00u; break;
    case 6: bits = 1; break;
    default: break;
    }
    for (n = 0; n < (special == 7 ? x->count / 4 + 1 : 1); ++n) {
        unsigned char *p;
        e = (int64_t)(fz_next(g) % (uint64_t)x->count);
        p = x->base + fz_offset(x->rank, x->dims, x->st, e) * (int64_t)fz_esz(x->dt);
        if (special == 7) bits = fz_next(g) & 1 ? (f32 ? 0x80000000u : 0x8000u) : 0;
        if (f32) memcpy(p, &bits, 4);
        else { uint16_t h = (uint16_t)bits; memcpy(p, &h, 2); }
    }
}

/* The fused ReLU's dy at logical element lin: dy where dst > 0 (a float
   comparison: NaN and -0 fail it), else 0; the values before the call. */
static double fz_bn_dy(const fz_world *w, int relu, int rank, const int64_t *dims, int64_t lin) {
    const fz_tensor *ty = &w->t[T_DY], *td = &w->t[T_DST];
    double yv = fz_load(fz_snap_base(w, T_DY), ty->dt, fz_offset(rank, dims, ty->st, lin));
    if (relu && !(fz_load(fz_snap_base(w, T_DST), td->dt, fz_offset(rank, dims, td->st, lin)) > 0.0)) yv = 0.0;
    return yv;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    int why = 0; /* the first rule that made the call invalid, for the report */
    fz_rd rd = {data, size, 0};
    nbwd_batch_norm_bwd_desc d;
    nbwd_batch_norm_bwd_args a;
    int64_t sx[NBWD_MAX_RANK], sdy[NBWD_MAX_RANK], sdx[NBWD_MAX_RANK], sdst[NBWD_MAX_RANK], sdsa[NBWD_MAX_RANK];
    int64_t cst[T_N]; /* the [C] tensors' strides (T_MEAN .. T_STD share var_strides) */
    int64_t dims[NBWD_MAX_RANK], N = 0, C = 0, S = 1, total = 1, nz = 1;
    int rank, i, must_reject = 0, overflow = 0, too_big = 0, natural = 1, force, force_ok = 0, nxc = 1;
    int mode[T_N], want[T_N], ws_mode, args_null, special, injected = 0, isa_runnable, bfrom = 0, bto = 0;
    int alias_of[T_N], two_phase, reduce_checked = 0, shape_rej, dense7, relu = 0, dst_special = 0;
    int64_t Cd = -1; /* the channels for the two-phase calls' sums, where the rank and layout are valid */
    int64_t alias_delta[T_N];
    size_t ws_bytes = 0, qbytes = 777;
    nbwd_status sq, s;
    nbwd_layout layout;
    fz_world w;
    fz_rng g;
    void *ws = NULL, *ws_alloc = NULL;
    static const int rank_tab[16] = {2, 3, 4, 4, 3, 2, 5, 4, 3, 8, 1, 0, 9, -1, 6, 2};
    rank = rank_tab[fz_u8(&rd) % 16];
    layout = (nbwd_layout)fz_enum(&rd, 2);
    for (i = 0; i < NBWD_MAX_RANK; ++i) dims[i] = i < rank ? fz_dim(&rd) : 0;
    nbwd_batch_norm_bwd_desc_init(&d, rank, dims, layout, fz_eps(&rd));
    d.stats_form = (nbwd_stats_form)fz_enum(&rd, 3);
    d.data_dtype = (nbwd_dtype)fz_enum(&rd, 3);
    { uint8_t b = fz_u8(&rd); d.stats_dtype = (nbwd_dtype)(b < 128 ? NBWD_F32 : b < 224 ? (int)d.data_dtype : fz_enum(&rd, 3)); }
    { uint8_t b = fz_u8(&rd); d.param_dtype = (nbwd_dtype)(b < 128 ? NBWD_F32 : b < 224 ? (int)d.data_dtype : fz_enum(&rd, 3)); }
    { uint8_t b = fz_u8(&rd); d.flags = b < 140 ? 0u : b < 200 ? 1u : b < 220 ? 2u : b < 240 ? 3u : (unsigned)b << 1; }
    { uint8_t b = fz_u8(&rd); d.num_threads = b < 200 ? b % 3 : -1 - (int)(b % 3); }
    d.isa = (nbwd_isa)fz_enum(&rd, NBWD_ISA_COUNT);
    force = fz_u8(&rd);
    force = force < 192 ? -1 : fz_enum(&rd, NBWD_ISA_COUNT);

    if (rank < 2 || rank > NBWD_MAX_RANK || ((int)layout != NBWD_NXC && (int)layout != NBWD_NCX)) REJECT(1);
    for (i = 0; i < rank && i < NBWD_MAX_RANK; ++i) {
        if (dims[i] < 0) REJECT(2);
        else if (dims[i] == 0) total = 0;
        else if (nz > FZ_MAX_ELEMS / dims[i]) overflow = 1;
        else nz *= dims[i];
    }
    if (overflow) REJECT(3);
    if ((int)d.stats_form < 0 || (int)d.stats_form > 2 || (d.flags & ~3u) || d.num_threads < 0 || (int)d.isa < 0 ||
        (int)d.isa >= NBWD_ISA_COUNT)
        REJECT(4);
    if (d.stats_form == NBWD_STATS_MEAN_VARIANCE && !(d.epsilon > 0 && d.epsilon <= FLT_MAX)) REJECT(5);
    if (!fz_dt_ok(d.data_dtype) || !fz_dt_ok(d.stats_dtype) || !fz_dt_ok(d.param_dtype) ||
        (d.stats_dtype != NBWD_F32 && d.stats_dtype != d.data_dtype) ||
        (d.param_dtype != NBWD_F32 && d.param_dtype != d.data_dtype))
        REJECT(6);
    if (!must_reject) {
        nxc = layout == NBWD_NXC || rank == 2;
        N = dims[0];
        C = nxc ? dims[rank - 1] : dims[1];
        for (i = nxc ? 1 : 2; i < (nxc ? rank - 1 : rank); ++i) S *= dims[i];
        total = total ? nz : 0;
        bfrom = layout == NBWD_NXC && rank > 2 ? rank - 1 : 2; /* [N, C]: no dense block, C strided freely */
        bto = rank;
    }
    shape_rej = must_reject;
    d.src_strides = fz_strides(&rd, must_reject ? 0 : rank, dims, bfrom, bto, sx);
    d.diff_dst_strides = fz_strides(&rd, must_reject ? 0 : rank, dims, bfrom, bto, sdy);
    d.diff_src_strides = fz_strides(&rd, must_reject ? 0 : rank, dims, bfrom, bto, sdx);
    /* rule 7 once the relu byte is read: with a relu flag diff_dst may have any strides */
    dense7 = dense_block(dims, d.src_strides, bfrom, bto) && dense_block(dims, d.diff_src_strides, bfrom, bto);
    if (d.src_strides || d.diff_dst_strides || d.diff_src_strides) natural = 0;
    /* the [C] tensors: NULL (dense), a padded or negative stride, or anything */
    for (i = 0; i < T_N; ++i) cst[i] = 1;
    {
        static const int ct[5] = {T_MEAN, T_VAR, T_GAMMA, T_DG, T_DB};
        const int64_t **slot[5];
        int k;
        slot[0] = &d.mean_strides; slot[1] = &d.var_strides; slot[2] = &d.gamma_strides;
        slot[3] = &d.diff_gamma_strides; slot[4] = &d.diff_beta_strides;
        for (k = 0; k < 5; ++k) {
            uint8_t m = fz_u8(&rd);
            if (m < 160) continue;
            cst[ct[k]] = m < 208 ? ((m & 1) ? -1 : 1) * (int64_t)(1 + m % 3) : fz_stride(&rd, 1);
            *slot[k] = &cst[ct[k]];
            natural = 0;
        }
        cst[T_RSTD] = cst[T_STD] = cst[T_VAR];
    }

    for (i = 0; i < T_N0; ++i) {
        uint8_t m = fz_u8(&rd);
        int form = (int)d.stats_form;
        int needed = i == T_DY || (i == T_SRC && form != 2) || (i == T_XHAT && form == 2) ||
                     (i == T_MEAN && form != 2) || (i == T_VAR && form == 0) || (i == T_RSTD && form == 1) ||
                     (i == T_STD && form == 2) || (i == T_GAMMA && (m & 1));
        if (i == T_DX) needed = m % 4 != 0;
        if (i == T_DG || i == T_DB) needed = m % 4 != 0;
        if (!fz_pointer_mode(&rd, m, needed, i, T_N0, mode, want, alias_of, alias_delta)) natural = 0;
    }
    if (mode[T_DG] == 0 && mode[T_DB] == 0) want[T_DB] = want[T_DG]; /* natural: both or neither */
    if (want[T_DG] != want[T_DB]) REJECT(8);
    ws_mode = fz_u8(&rd) % 8;
    args_null = fz_u8(&rd) == 255;
    g.s = fz_u64(&rd);
    special = fz_u8(&rd);
    special = special >= 224 ? 1 + special % 5 : 0;
    two_phase = fz_u8(&rd) >= 128;
    /* The fused ReLU, after the two-phase byte: 0 .. 127 none (dst and
       diff_src_add natural: absent), then FUSE_RELU, FUSE_ADD_RELU, both
       (refused); the byte's low bits pick special dst values. Then each
       tensor's mode (as the others') and strides (dst: any, diff_src_add:
       a dense block as diff_src's). */
    g_fz_relu_at = rd.i;
    {
        uint8_t b = fz_u8(&rd);
        relu = b < 128 ? 0 : b < 176 ? (int)NBWD_FUSE_RELU : b < 240 ? (int)NBWD_FUSE_ADD_RELU
                                                                   : (int)(NBWD_FUSE_RELU | NBWD_FUSE_ADD_RELU);
        dst_special = b % 8;
        d.flags |= (unsigned)relu;
    }
    for (i = T_DST; i <= T_DSA; ++i) {
        uint8_t m = fz_u8(&rd);
        int needed = i == T_DST ? relu != 0 : relu == (int)NBWD_FUSE_ADD_RELU;
        /* alias: any tensor placed before it: diff_src_add onto dst too */
        if (!fz_pointer_mode(&rd, m, needed, i, T_N, mode, want, alias_of, alias_delta)) natural = 0;
    }
    d.dst_strides = fz_strides(&rd, shape_rej ? 0 : rank, dims, bfrom, bto, sdst);
    d.diff_src_add_strides = fz_strides(&rd, shape_rej ? 0 : rank, dims, bfrom, bto, sdsa);
    if (d.dst_strides || d.diff_src_add_strides) natural = 0;
    g_fz_decoded = rd.i;
    g_fz_relu = relu;
    g_fz_two = two_phase;
    if (!shape_rej && (!dense7 || (!relu && !dense_block(dims, d.diff_dst_strides, bfrom, bto)))) REJECT(7);
    if (relu == (int)(NBWD_FUSE_RELU | NBWD_FUSE_ADD_RELU)) REJECT(9); /* one ReLU, after an add or not */
    if ((!relu && (want[T_DST] || want[T_DSA])) || (relu == (int)NBWD_FUSE_RELU && want[T_DSA])) REJECT(10);
    if (!shape_rej && relu == (int)NBWD_FUSE_ADD_RELU && !dense_block(dims, d.diff_src_add_strides, bfrom, bto))
        REJECT(11);
    if (rank >= 2 && rank <= NBWD_MAX_RANK && ((int)layout == NBWD_NXC || (int)layout == NBWD_NCX))
        Cd = layout == NBWD_NXC || rank == 2 ? dims[rank - 1] : dims[1];
    if (force >= 0) {
        nbwd_status fs = nbwd_force_isa((nbwd_isa)force);
        force_ok = force == NBWD_ISA_AUTO || (force > 0 && force < NBWD_ISA_COUNT && nbwd_isa_supported((nbwd_isa)force));
        FZ_ASSERT((fs == NBWD_OK) == force_ok, "nbwd_force_isa(%d) returned %d", force, (int)fs);
    }
    isa_runnable = d.isa == NBWD_ISA_AUTO ? nbwd_active_isa() != NBWD_ISA_AUTO
                                          : (int)d.isa > 0 && (int)d.isa < NBWD_ISA_COUNT &&
                                                nbwd_isa_supported(d.isa);

    FZ_ASSERT(nbwd_batch_norm_bwd_workspace_size(&d, NULL) == NBWD_ERR_NULL_POINTER, "bytes NULL");
    FZ_ASSERT(nbwd_batch_norm_bwd_workspace_size(NULL, &qbytes) == NBWD_ERR_NULL_POINTER, "NULL desc");
    sq = nbwd_batch_norm_bwd_workspace_size(&d, &qbytes);
    if (sq != NBWD_OK) FZ_ASSERT(qbytes == 777, "a failed workspace_size wrote *bytes");

    memset(&w, 0, sizeof w);
    w.nt = T_N;
    if (!must_reject) {
        int64_t ddx[NBWD_MAX_RANK];
        fz_dense(rank, dims, ddx);
        for (i = 0; i < T_N; ++i) {
            fz_tensor *t = &w.t[i];
            const int64_t *st = i == T_SRC || i == T_XHAT ? d.src_strides : i == T_DY ? d.diff_dst_strides
                                : i == T_DX ? d.diff_src_strides : i == T_DST ? d.dst_strides
                                : i == T_DSA ? d.diff_src_add_strides : NULL;
            int k, data = i <= T_DY || i == T_DX || i == T_DST || i == T_DSA;
            t->present = want[i];
            t->is_output = i == T_DX || i == T_DG || i == T_DB || i == T_DSA;
            t->dt = data ? (int)d.data_dtype : i <= T_STD ? (int)d.stats_dtype : (int)d.param_dtype;
            if (data) {
                t->rank = rank;
                for (k = 0; k < rank; ++k) { t->dims[k] = dims[k]; t->st[k] = st ? st[k] : ddx[k]; }
            } else {
                t->rank = 1; t->dims[0] = C; t->st[0] = cst[i];
            }
            if (!fz_size_tensor(t)) too_big = 1;
        }
        if (total > FZ_CAP_ELEMS || C > FZ_CAP_ELEMS) too_big = 1;
    }
    if (must_reject || too_big) {
        unsigned char bufs[T_N][64], small_ws[64];
        void *p[T_N];
        memset(bufs, FZ_CANARY, sizeof bufs);
        for (i = 0; i < T_N; ++i) p[i] = must_reject && want[i] ? bufs[i] : NULL;
        memset(&a, 0, sizeof a);
        a.src = p[T_SRC]; a.xhat = p[T_XHAT]; a.diff_dst = p[T_DY]; a.mean = p[T_MEAN]; a.variance = p[T_VAR];
        a.rstd = p[T_RSTD]; a.std = p[T_STD]; a.gamma = p[T_GAMMA]; a.diff_src = p[T_DX];
        a.diff_gamma = p[T_DG]; a.diff_beta = p[T_DB]; a.dst = p[T_DST]; a.diff_src_add = p[T_DSA];
        /* A small workspace: a huge accepted descriptor stops at
           INSUFFICIENT_WORKSPACE instead of allocating gigabytes. */
        /* rule 8 (diff_gamma without diff_beta) is the outputs': reduce, which
           takes none, would accept the call and read these small buffers */
        int checked;
        s = fz_bn_call(two_phase, &d, args_null ? NULL : &a, must_reject ? NULL : small_ws,
                       must_reject ? 0 : sizeof small_ws, must_reject && why == 8 ? -1 : Cd, NULL, &checked);
        fz_set_status(s);
        if (sq != NBWD_OK) FZ_ASSERT(s == sq, "workspace_size said %d, the call %d", (int)sq, (int)s);
        if (must_reject) {
            FZ_ASSERT(s != NBWD_OK, "accepted a call the manual calls invalid (rule %d; rank %d, layout %d, dims %lld %lld %lld)",
                      why, rank, (int)layout, (long long)dims[0], (long long)dims[1], (long long)dims[2]);
            for (i = 0; i < T_N; ++i) {
                int k;
                for (k = 0; k < 64; ++k) FZ_ASSERT(bufs[i][k] == FZ_CANARY, "a rejected call wrote tensor %d", i);
            }
        }
        if (force >= 0) nbwd_force_isa(NBWD_ISA_AUTO);
        return 0;
    }

    {
        for (i = 0; i < T_N; ++i)
            if (w.t[i].present) fz_place(&w, i, mode[i] == 3 ? alias_of[i] : -1, alias_delta[i]);
    }
    {
        int form = (int)d.stats_form, sp = form == 0 ? T_VAR : form == 1 ? T_RSTD : T_STD;
        for (i = 0; i < T_N; ++i) {
            if (!w.t[i].present) continue;
            if (i == T_SRC || i == T_XHAT) injected |= fz_fill(&w, i, &g, -2, 2, special == 1);
            else if (i == T_DY) injected |= fz_fill(&w, i, &g, -1, 1, special == 2);
            else if (i == T_MEAN) injected |= fz_fill(&w, i, &g, -0.5, 0.5, special == 3);
            else if (i == sp) injected |= fz_fill(&w, i, &g, 0.25, 4, special == 4);
            else if (i == T_GAMMA) injected |= fz_fill(&w, i, &g, -2, 2, special == 5);
            else if (i == T_VAR || i == T_RSTD || i == T_STD) fz_fill(&w, i, &g, 0.25, 4, 0);
            else if (i == T_DG || i == T_DB) fz_fill(&w, i, &g, -1, 1, 0);
            else if (i == T_DST) fz_fill_dst(&w, &g, dst_special);
        }
        for (i = 0; i < T_N; ++i) w.t[i].used = w.t[i].present;
        w.t[T_SRC].used &= form != 2; w.t[T_XHAT].used &= form == 2; w.t[T_MEAN].used &= form != 2;
        w.t[T_VAR].used &= form == 0; w.t[T_RSTD].used &= form == 1; w.t[T_STD].used &= form == 2;
        w.t[T_GAMMA].used &= w.t[T_DG].present; /* without diff_gamma/diff_beta gamma is ignored */
        w.t[T_DST].used &= relu != 0;
    }
    for (i = 0; i < T_N; ++i)
        if (w.t[i].present) fz_mark(&w, i);
    if (sq == NBWD_OK) ws = fz_workspace(ws_mode, qbytes, g.s, &ws_bytes, &ws_alloc);
    fz_snapshot(&w);
    memset(&a, 0, sizeof a);
#define P(k) (w.t[k].present ? (void *)w.t[k].base : NULL)
    a.src = P(T_SRC); a.xhat = P(T_XHAT); a.diff_dst = P(T_DY); a.mean = P(T_MEAN); a.variance = P(T_VAR);
    a.rstd = P(T_RSTD); a.std = P(T_STD); a.gamma = P(T_GAMMA); a.diff_src = P(T_DX);
    a.diff_gamma = P(T_DG); a.diff_beta = P(T_DB); a.dst = P(T_DST); a.diff_src_add = P(T_DSA);
#undef P
    s = fz_bn_call(two_phase, &d, args_null ? NULL : &a, ws, ws_bytes, Cd, &w, &reduce_checked);
    fz_set_status(s);
    if (force >= 0) nbwd_force_isa(NBWD_ISA_AUTO);
    fz_check_status(s, sq, args_null, ws, ws_bytes, qbytes);
    if (natural && !args_null && (ws_mode <= 3 || ws_mode == 5 || ws_mode == 7) && isa_runnable &&
        (force < 0 || force_ok))
        FZ_ASSERT(s == NBWD_OK, "rejected a valid call: %s (rank %d, layout %d, dims %lld %lld %lld, form %d, dt %d)",
                  nbwd_status_string(s), rank, (int)layout, (long long)dims[0], (long long)dims[1],
                  (long long)(rank > 2 ? dims[2] : -1), (int)d.stats_form, (int)d.data_dtype);
    if (!reduce_checked) fz_check_untouched(&w, s == NBWD_OK, "batch_norm");
    if (s == NBWD_OK) {
        unsigned char allowed[FZ_MAXT][FZ_MAXT];
        int form = (int)d.stats_form, sp = form == 0 ? T_VAR : form == 1 ? T_RSTD : T_STD;
        int xi = form == 2 ? T_XHAT : T_SRC, with_params = w.t[T_DG].present;
        int global = (d.flags & NBWD_USE_GLOBAL_STATS) != 0;
        int64_t c, e, M = N * S;
        memset(allowed, 0, sizeof allowed);
        allowed[T_DX][xi] = (unsigned char)fz_same_view(&w.t[T_DX], &w.t[xi]);
        allowed[T_DX][T_DY] = (unsigned char)fz_same_view(&w.t[T_DX], &w.t[T_DY]);
        allowed[T_DX][T_DST] = (unsigned char)fz_same_view(&w.t[T_DX], &w.t[T_DST]);
        allowed[T_DSA][T_DY] = (unsigned char)fz_same_view(&w.t[T_DSA], &w.t[T_DY]);
        allowed[T_DSA][T_DST] = (unsigned char)fz_same_view(&w.t[T_DSA], &w.t[T_DST]);
        fz_allow_unread(&w, allowed);
        fz_check_overlap(&w, allowed, "batch_norm");
        FZ_ASSERT(total == 0 || (w.t[xi].present && w.t[T_DY].present), "accepted without x/dy");
        FZ_ASSERT(total == 0 || !relu || w.t[T_DST].present, "accepted a relu flag without dst");
        FZ_ASSERT(total == 0 || relu != (int)NBWD_FUSE_ADD_RELU || w.t[T_DSA].present,
                  "accepted NBWD_FUSE_ADD_RELU without diff_src_add");
        /* Two phases refuse diff_src_add exactly dst: reduce would overwrite
           dst with the masked dy, which apply's mask then reads. */
        FZ_ASSERT(!(two_phase && Cd >= 0 && Cd <= FZ_CAP_ELEMS && total > 0 && relu == (int)NBWD_FUSE_ADD_RELU &&
                    fz_same_view(&w.t[T_DSA], &w.t[T_DST])),
                  "the two-phase calls accepted diff_src_add == dst");
        if (relu == (int)NBWD_FUSE_ADD_RELU) { /* diff_src_add: dy's bits where dst > 0, else +0 */
            const fz_tensor *ty = &w.t[T_DY], *td = &w.t[T_DST], *ta = &w.t[T_DSA];
            size_t es = fz_esz(ty->dt);
            for (e = 0; e < total; ++e) {
                static const unsigned char zero[4] = {0, 0, 0, 0};
                const unsigned char *src = fz_snap_base(&w, T_DY) + fz_offset(rank, dims, ty->st, e) * (int64_t)es;
                const unsigned char *got = ta->base + fz_offset(rank, dims, ta->st, e) * (int64_t)es;
                int pos = fz_load(fz_snap_base(&w, T_DST), td->dt, fz_offset(rank, dims, td->st, e)) > 0.0;
                if (memcmp(got, pos ? src : zero, es) != 0)
                    FZ_FAIL("batch_norm diff_src_add element %lld: got %.9g, want %.9g (dst %.9g) dt %d layout %d",
                            (long long)e, fz_load(got, ta->dt, 0), pos ? fz_load(src, ty->dt, 0) : 0.0,
                            fz_load(fz_snap_base(&w, T_DST), td->dt, fz_offset(rank, dims, td->st, e)),
                            (int)d.data_dtype, (int)layout);
            }
        }
        FZ_ASSERT(C == 0 || (w.t[sp].present && (form == 2 || w.t[T_MEAN].present)), "accepted without stats");
        for (c = 0; c < C; ++c) {
            const fz_tensor *tx = &w.t[xi], *tdx = &w.t[T_DX];
            const unsigned char *xb = M > 0 ? fz_snap_base(&w, xi) : NULL;
            double mean = 0, rstd, sdy = 0, sdyx = 0, ady = 0, adyx = 0, gm = 1.0, prev;
            double spread = fz_load(fz_snap_base(&w, sp), w.t[sp].dt, c * cst[sp]);
            if (form != 2) mean = fz_load(fz_snap_base(&w, T_MEAN), w.t[T_MEAN].dt, c * cst[T_MEAN]);
            rstd = form == 0 ? (double)(float)(1.0 / sqrt(spread + (double)d.epsilon)) : form == 1 ? spread : 1.0 / spread;
            if (with_params && w.t[T_GAMMA].present) gm = fz_load(fz_snap_base(&w, T_GAMMA), w.t[T_GAMMA].dt, c * cst[T_GAMMA]);
            /* element e of channel c: batch n = e / S, spatial s = e % S */
#define LIN(e_) (nxc ? (((e_) / S) * S + (e_) % S) * C + c : (((e_) / S) * C + c) * S + (e_) % S)
            for (e = 0; e < M; ++e) {
                double xv = fz_load(xb, tx->dt, fz_offset(rank, dims, tx->st, LIN(e)));
                double yv = fz_bn_dy(&w, relu, rank, dims, LIN(e));
                double xh = form == 2 ? xv : (xv - mean) * rstd;
                sdy += yv; sdyx += yv * xh; ady += fabs(yv); adyx += fabs(yv * xh);
            }
            if (w.t[T_DX].present && M > 0 && fabs(rstd * gm) < 1e30 && (global || fabs(sdyx) < 1e30)) {
                for (e = 0; e < M; ++e) {
                    double xv = fz_load(xb, tx->dt, fz_offset(rank, dims, tx->st, LIN(e)));
                    double yv = fz_bn_dy(&w, relu, rank, dims, LIN(e));
                    double xh = form == 2 ? xv : (xv - mean) * rstd;
                    /* global statistics: dy * gamma * rstd, x no part (a non-finite x - mean: NaN, unchecked) */
                    double want_v = global ? rstd * gm * yv : rstd * gm * (yv - sdy / (double)M - xh * sdyx / (double)M);
                    double s1 = global ? fabs(want_v)
                                       : fabs(rstd * gm) * (fabs(yv) + fabs(sdy / (double)M) + fabs(xh) * fabs(sdyx / (double)M));
                    double s2 = global ? 0.0 : fabs(rstd * gm) * (ady / (double)M + fabs(xh) * adyx / (double)M);
                    double tol = ldexp(1.0, -24) * (32 * s1 + 2.0 * ((double)M + 8) * s2);
                    double got = fz_load(tdx->base, tdx->dt, fz_offset(rank, dims, tdx->st, LIN(e)));
                    if (global && !(fabs(xv - (form == 2 ? 0.0 : mean)) < 1e37)) continue;
                    if (s1 + s2 < 1e35 && !fz_close(tdx->dt, got, want_v, tol)) /* else fp32 intermediates may overflow */
                        FZ_FAIL("batch_norm dx channel %lld element %lld: got %.9g, want %.9g (tol %.3g), form %d dt %d "
                                "layout %d isa %d%s", (long long)c, (long long)e, got, want_v, tol, form,
                                (int)d.data_dtype, (int)layout, (int)d.isa, injected ? " (special values)" : "");
                }
            }
#undef LIN
            if (with_params) {
                int acc = (d.flags & 1u) != 0;
                double tolc = ldexp(1.0, -24) * (16.0 + 2.0 * (double)M), got;
                prev = acc ? fz_load(fz_snap_base(&w, T_DG), w.t[T_DG].dt, c * cst[T_DG]) : 0.0;
                got = fz_load(w.t[T_DG].base, w.t[T_DG].dt, c * cst[T_DG]);
                if (adyx < 1e35 && !fz_close(w.t[T_DG].dt, got, prev + sdyx, tolc * adyx + ldexp(1.0, -23) * fabs(prev)))
                    FZ_FAIL("batch_norm dgamma[%lld]: got %.9g, want %.9g", (long long)c, got, prev + sdyx);
                prev = acc ? fz_load(fz_snap_base(&w, T_DB), w.t[T_DB].dt, c * cst[T_DB]) : 0.0;
                got = fz_load(w.t[T_DB].base, w.t[T_DB].dt, c * cst[T_DB]);
                if (ady < 1e35 && !fz_close(w.t[T_DB].dt, got, prev + sdy, tolc * ady + ldexp(1.0, -23) * fabs(prev)))
                    FZ_FAIL("batch_norm dbeta[%lld]: got %.9g, want %.9g", (long long)c, got, prev + sdy);
            }
        }
    }
    free(ws_alloc);
    fz_world_free(&w);
    return 0;
}

#if defined(FZ_STANDALONE)
static void fz_report(const char *path, long n) {
    printf("%s: %ld bytes, the relu byte at %zu, %zu decoded, relu %d, two-phase %d, status %s\n", path, n,
           g_fz_relu_at, g_fz_decoded, g_fz_relu, g_fz_two, fz_status_name());
}
#endif
