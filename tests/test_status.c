/* test_status.c - every status code. For each invalid argument the exact
   status is asserted, and every output buffer (canary-filled, with guard
   bytes) must be byte-for-byte untouched and every input unchanged
   (LayerNorm/RMSNorm, BatchNorm with its two-phase calls and fused ReLU,
   GroupNorm: groups that do not divide C, use_affine 0 with a gamma
   gradient, the forms' inputs, strides, aliasing, workspace). Also:
   nbwd_status_string, the ISA controls, and caller workspaces of exactly the
   queried size (same bits as a NULL workspace). */
#include "nbwd_test.h"

#include <float.h>

/* ------------------------------------------------------------ fixture */
/* One arena per tensor, large enough for any stride used below, so that a
   call that wrongly proceeds writes only canary memory we check. */
#define ARENA_ELEMS 4096
typedef struct arena {
    unsigned char *alloc;
    size_t bytes;
    char *base; /* 1024 bytes after the start: room for small negative offsets */
} arena;

static void arena_init(arena *a) {
    a->bytes = ARENA_ELEMS * 4 + 2048;
    a->alloc = (unsigned char *)t_xmalloc(a->bytes);
    memset(a->alloc, T_CANARY, a->bytes);
    a->base = (char *)a->alloc + 1024;
}
static void arena_fill_floats(arena *a, int64_t count, double base) { /* valid f32 inputs */
    int64_t i;
    for (i = 0; i < count; ++i) ((float *)a->base)[i] = (float)(base + 0.25 * (double)(i % 7) - 0.5);
}
static int arena_all_canary(const arena *a) {
    size_t i;
    for (i = 0; i < a->bytes; ++i)
        if (a->alloc[i] != T_CANARY) return 0;
    return 1;
}

/* inputs before A_DX, outputs from it; dst and diff_src_add: BatchNorm's
   fused ReLU (NBWD_FUSE_RELU, NBWD_FUSE_ADD_RELU) */
enum { A_X, A_DY, A_M, A_V, A_G, A_B, A_DST, A_DX, A_DG, A_DB, A_DSA, A_COUNT };
static const char *const k_arena_names[A_COUNT] = {"src",      "diff_dst",   "mean",      "variance",
                                                     "gamma",    "beta",       "dst",       "diff_src",
                                                     "diff_gamma", "diff_beta", "diff_src_add"};
static arena g_ar[A_COUNT];
static unsigned char *g_in_snap[A_COUNT];

static void fixture_reset(void) {
    int k;
    for (k = 0; k < A_COUNT; ++k) {
        if (!g_ar[k].alloc) arena_init(&g_ar[k]);
        memset(g_ar[k].alloc, T_CANARY, g_ar[k].bytes);
    }
    arena_fill_floats(&g_ar[A_X], 1024, 0.5);
    arena_fill_floats(&g_ar[A_DY], 1024, -0.25);
    arena_fill_floats(&g_ar[A_M], 256, 0.3);
    arena_fill_floats(&g_ar[A_V], 256, 1.5); /* > 0: valid variance / rstd / std */
    arena_fill_floats(&g_ar[A_G], 256, 1.0);
    arena_fill_floats(&g_ar[A_B], 256, 0.0);
    { /* the fused ReLU's forward output: positive, +0, -0 and negative, in another pattern than dy's */
        float *y = (float *)g_ar[A_DST].base;
        int i;
        for (i = 0; i < 1024; ++i) y[i] = i % 11 == 5 ? -0.0f : 0.25f * (float)((i * 3 + 1) % 7) - 0.5f;
    }
}

static void fixture_free(void) {
    int k;
    for (k = 0; k < A_COUNT; ++k) {
        free(g_ar[k].alloc);
        g_ar[k].alloc = NULL;
    }
}

/* Checks that outputs are all canary and inputs unchanged since fixture_reset. */
static void check_untouched(const char *what) {
    int k;
    for (k = 0; k < A_COUNT; ++k) {
        int out = k >= A_DX;
        if (out) {
            CHECK(arena_all_canary(&g_ar[k]), "%s: output %s was written by a failing call", what, k_arena_names[k]);
        } else {
            CHECK(memcmp(g_in_snap[k], g_ar[k].alloc, g_ar[k].bytes) == 0, "%s: input %s was modified", what,
                  k_arena_names[k]);
        }
    }
}

static void snap_inputs(void) {
    int k;
    for (k = 0; k < A_DX; ++k) {
        if (!g_in_snap[k]) g_in_snap[k] = (unsigned char *)t_xmalloc(g_ar[k].bytes);
        memcpy(g_in_snap[k], g_ar[k].alloc, g_ar[k].bytes);
    }
}

/* LayerNorm: a valid dims {4, 8} f32 mean/variance call with every output. */
static int64_t g_ln_dims[2] = {4, 8};
static void ln_valid(nbwd_layer_norm_bwd_desc *d, nbwd_layer_norm_bwd_args *a) {
    fixture_reset();
    nbwd_layer_norm_bwd_desc_init(d, 2, g_ln_dims);
    d->isa = g_test_isa;
    memset(a, 0, sizeof *a);
    a->src = g_ar[A_X].base;
    a->diff_dst = g_ar[A_DY].base;
    a->mean = g_ar[A_M].base;
    a->variance = g_ar[A_V].base;
    a->gamma = g_ar[A_G].base;
    a->beta = g_ar[A_B].base;
    a->diff_src = g_ar[A_DX].base;
    a->diff_gamma = g_ar[A_DG].base;
    a->diff_beta = g_ar[A_DB].base;
}

/* Calls with an invalid setup: exact status, nothing written. desc_level:
   the workspace query must fail the same way. */
static void ln_expect(const char *what, const nbwd_layer_norm_bwd_desc *d, const nbwd_layer_norm_bwd_args *a,
                      void *ws, size_t ws_bytes, nbwd_status want, int desc_level) {
    nbwd_status s;
    t_case("LN status: %s (isa %s)", what, nbwd_isa_name(g_test_isa));
    snap_inputs();
    s = nbwd_layer_norm_bwd(d, a, ws, ws_bytes);
    CHECK_STATUS(s, want);
    if (want != NBWD_OK) check_untouched(what);
    if (desc_level && d) {
        size_t bytes = 12345;
        s = nbwd_layer_norm_bwd_workspace_size(d, &bytes);
        CHECK_STATUS(s, want);
        if (want != NBWD_OK) CHECK(bytes == 12345, "workspace query wrote its result on failure");
    }
}

static nbwd_isa unsupported_isa(void) {
    int i;
    for (i = NBWD_ISA_SCALAR; i < NBWD_ISA_COUNT; ++i)
        if (!nbwd_isa_supported((nbwd_isa)i)) return (nbwd_isa)i;
    return NBWD_ISA_AUTO;
}

static void ln_status_cases(void) {
    nbwd_layer_norm_bwd_desc d;
    nbwd_layer_norm_bwd_args a;
    static const nbwd_dtype bad_combos[][3] = {
        {NBWD_F32, NBWD_F16, NBWD_F32},  {NBWD_F32, NBWD_BF16, NBWD_F32}, {NBWD_F32, NBWD_F32, NBWD_F16},
        {NBWD_F32, NBWD_F32, NBWD_BF16}, {NBWD_F16, NBWD_BF16, NBWD_F32}, {NBWD_F16, NBWD_F32, NBWD_BF16},
        {NBWD_BF16, NBWD_F16, NBWD_F32}, {NBWD_BF16, NBWD_F32, NBWD_F16}, {NBWD_F32, NBWD_F16, NBWD_F16},
    };
    int64_t st_bad_inner[2] = {16, 2}, st_zero_rows[2] = {0, 1}, st_overlap_rows[2] = {4, 1};
    int64_t st_pad[2] = {16, 1};
    int k;
    size_t need = 0;

    /* NULL pointers */
    ln_valid(&d, &a);
    ln_expect("desc NULL", NULL, &a, NULL, 0, NBWD_ERR_NULL_POINTER, 0);
    {
        size_t bytes = 0;
        t_case("LN status: workspace_size(NULL desc / NULL bytes)");
        CHECK_STATUS(nbwd_layer_norm_bwd_workspace_size(NULL, &bytes), NBWD_ERR_NULL_POINTER);
        CHECK_STATUS(nbwd_layer_norm_bwd_workspace_size(&d, NULL), NBWD_ERR_NULL_POINTER);
    }
    ln_expect("args NULL", &d, NULL, NULL, 0, NBWD_ERR_NULL_POINTER, 0);
    ln_valid(&d, &a); a.src = NULL; ln_expect("src NULL", &d, &a, NULL, 0, NBWD_ERR_NULL_POINTER, 0);
    ln_valid(&d, &a); a.diff_dst = NULL; ln_expect("diff_dst NULL", &d, &a, NULL, 0, NBWD_ERR_NULL_POINTER, 0);
    ln_valid(&d, &a); a.mean = NULL; ln_expect("mean NULL", &d, &a, NULL, 0, NBWD_ERR_NULL_POINTER, 0);
    ln_valid(&d, &a); a.variance = NULL; ln_expect("variance NULL", &d, &a, NULL, 0, NBWD_ERR_NULL_POINTER, 0);
    ln_valid(&d, &a); a.gamma = NULL;
    ln_expect("gamma NULL with affine and diff_src", &d, &a, NULL, 0, NBWD_ERR_NULL_POINTER, 0);
    ln_valid(&d, &a); a.gamma = NULL; a.diff_src = NULL;
    ln_expect("gamma NULL without diff_src (valid)", &d, &a, NULL, 0, NBWD_OK, 0);
    ln_valid(&d, &a); d.stats_form = NBWD_STATS_MEAN_RSTD; a.rstd = a.variance; a.variance = NULL; a.rstd = NULL;
    ln_expect("rstd NULL (MEAN_RSTD)", &d, &a, NULL, 0, NBWD_ERR_NULL_POINTER, 0);
    ln_valid(&d, &a); d.stats_form = NBWD_STATS_XHAT_STD; a.std = a.variance; a.variance = NULL; a.mean = NULL;
    a.xhat = NULL; a.src = NULL;
    ln_expect("xhat NULL (XHAT_STD)", &d, &a, NULL, 0, NBWD_ERR_NULL_POINTER, 0);
    ln_valid(&d, &a); d.stats_form = NBWD_STATS_XHAT_STD; a.xhat = a.src; a.src = NULL; a.mean = NULL;
    a.variance = NULL;
    ln_expect("std NULL (XHAT_STD)", &d, &a, NULL, 0, NBWD_ERR_NULL_POINTER, 0);
    ln_valid(&d, &a); a.diff_src = NULL; a.diff_gamma = NULL; a.diff_beta = NULL;
    ln_expect("no outputs at all (valid no-op)", &d, &a, NULL, 0, NBWD_OK, 0);
    check_untouched("no outputs at all");

    /* rank, axis */
    ln_valid(&d, &a); d.rank = 0; ln_expect("rank 0", &d, &a, NULL, 0, NBWD_ERR_BAD_PARAM, 1);
    ln_valid(&d, &a); d.rank = -1; ln_expect("rank -1", &d, &a, NULL, 0, NBWD_ERR_BAD_PARAM, 1);
    ln_valid(&d, &a); d.rank = NBWD_MAX_RANK + 1;
    ln_expect("rank > NBWD_MAX_RANK", &d, &a, NULL, 0, NBWD_ERR_BAD_PARAM, 1);
    ln_valid(&d, &a); d.begin_norm_axis = 2; ln_expect("axis = rank", &d, &a, NULL, 0, NBWD_ERR_BAD_PARAM, 1);
    ln_valid(&d, &a); d.begin_norm_axis = -3; ln_expect("axis = -rank-1", &d, &a, NULL, 0, NBWD_ERR_BAD_PARAM, 1);
    ln_valid(&d, &a); d.begin_norm_axis = INT64_MIN;
    ln_expect("axis = INT64_MIN", &d, &a, NULL, 0, NBWD_ERR_BAD_PARAM, 1);
    ln_valid(&d, &a); d.begin_norm_axis = ((int64_t)1 << 32);
    ln_expect("axis = 2^32", &d, &a, NULL, 0, NBWD_ERR_BAD_PARAM, 1);
    ln_valid(&d, &a); d.begin_norm_axis = -2; ln_expect("axis = -rank (valid)", &d, &a, NULL, 0, NBWD_OK, 1);

    /* epsilon */
    {
        static const float bad_eps[] = {0.0f, -0.0f, -1e-5f};
        for (k = 0; k < 3; ++k) {
            char w[64];
            ln_valid(&d, &a);
            d.epsilon = bad_eps[k];
            snprintf(w, sizeof w, "epsilon %g (MEAN_VARIANCE)", (double)bad_eps[k]);
            ln_expect(w, &d, &a, NULL, 0, NBWD_ERR_BAD_PARAM, 1);
        }
        ln_valid(&d, &a); d.epsilon = (float)NAN; ln_expect("epsilon NaN", &d, &a, NULL, 0, NBWD_ERR_BAD_PARAM, 1);
        ln_valid(&d, &a); d.epsilon = (float)INFINITY;
        ln_expect("epsilon +inf", &d, &a, NULL, 0, NBWD_ERR_BAD_PARAM, 1);
        ln_valid(&d, &a); d.epsilon = FLT_MIN / 4; /* a subnormal is > 0 */
        ln_expect("epsilon subnormal (valid)", &d, &a, NULL, 0, NBWD_OK, 1);
        ln_valid(&d, &a); d.epsilon = (float)NAN; d.stats_form = NBWD_STATS_MEAN_RSTD; a.rstd = a.variance;
        a.variance = NULL;
        ln_expect("epsilon NaN in MEAN_RSTD (not read: valid)", &d, &a, NULL, 0, NBWD_OK, 1);
        ln_valid(&d, &a); d.epsilon = -1.0f; d.stats_form = NBWD_STATS_XHAT_STD; a.std = a.variance;
        a.variance = NULL; a.xhat = a.src; a.src = NULL; a.mean = NULL;
        ln_expect("epsilon -1 in XHAT_STD (not read: valid)", &d, &a, NULL, 0, NBWD_OK, 1);
    }

    /* enums, flags, threads */
    ln_valid(&d, &a); d.data_dtype = (nbwd_dtype)3; ln_expect("data_dtype 3", &d, &a, NULL, 0, NBWD_ERR_BAD_DTYPE, 1);
    ln_valid(&d, &a); d.data_dtype = (nbwd_dtype)-1;
    ln_expect("data_dtype -1", &d, &a, NULL, 0, NBWD_ERR_BAD_DTYPE, 1);
    ln_valid(&d, &a); d.stats_dtype = (nbwd_dtype)7;
    ln_expect("stats_dtype 7", &d, &a, NULL, 0, NBWD_ERR_BAD_DTYPE, 1);
    ln_valid(&d, &a); d.param_dtype = (nbwd_dtype)99;
    ln_expect("param_dtype 99", &d, &a, NULL, 0, NBWD_ERR_BAD_DTYPE, 1);
    ln_valid(&d, &a); d.stats_form = (nbwd_stats_form)5;
    ln_expect("stats_form 5", &d, &a, NULL, 0, NBWD_ERR_BAD_PARAM, 1);
    ln_valid(&d, &a); d.stats_form = (nbwd_stats_form)-1;
    ln_expect("stats_form -1", &d, &a, NULL, 0, NBWD_ERR_BAD_PARAM, 1);
    ln_valid(&d, &a); d.isa = NBWD_ISA_COUNT; ln_expect("isa NBWD_ISA_COUNT", &d, &a, NULL, 0, NBWD_ERR_BAD_PARAM, 1);
    ln_valid(&d, &a); d.isa = (nbwd_isa)-1; ln_expect("isa -1", &d, &a, NULL, 0, NBWD_ERR_BAD_PARAM, 1);
    ln_valid(&d, &a); d.flags = 2u; ln_expect("flags bit 1", &d, &a, NULL, 0, NBWD_ERR_BAD_PARAM, 1);
    ln_valid(&d, &a); d.flags = 0x80000000u | NBWD_ACCUMULATE_PARAM_GRADS;
    ln_expect("flags bit 31", &d, &a, NULL, 0, NBWD_ERR_BAD_PARAM, 1);
    ln_valid(&d, &a); d.num_threads = -1; ln_expect("num_threads -1", &d, &a, NULL, 0, NBWD_ERR_BAD_PARAM, 1);
    ln_valid(&d, &a); d.flags = NBWD_ACCUMULATE_DIFF_SRC | NBWD_ACCUMULATE_PARAM_GRADS;
    ln_expect("flags ACCUMULATE_DIFF_SRC | ACCUMULATE_PARAM_GRADS (valid)", &d, &a, NULL, 0, NBWD_OK, 1);
    ln_valid(&d, &a); d.flags = NBWD_ACCUMULATE_DIFF_SRC; a.diff_residual = a.diff_dst;
    ln_expect("ACCUMULATE_DIFF_SRC with diff_residual", &d, &a, NULL, 0, NBWD_ERR_BAD_PARAM, 0);
    CHECK(strstr(nbwd_last_error(), "NBWD_ACCUMULATE_DIFF_SRC") != NULL, "message: %s", nbwd_last_error());
    ln_valid(&d, &a); d.flags = NBWD_USE_GLOBAL_STATS;
    ln_expect("flags NBWD_USE_GLOBAL_STATS (BatchNorm's)", &d, &a, NULL, 0, NBWD_ERR_BAD_PARAM, 1);
    CHECK(strstr(nbwd_last_error(), "BatchNorm's") != NULL, "message: %s", nbwd_last_error());
    /* NBWD_STATS_NONE: src alone, epsilon read */
    ln_valid(&d, &a); d.stats_form = NBWD_STATS_NONE; a.mean = NULL; a.variance = NULL;
    ln_expect("stats_form NONE, src alone (valid)", &d, &a, NULL, 0, NBWD_OK, 1);
    ln_valid(&d, &a); d.stats_form = NBWD_STATS_NONE; a.variance = NULL;
    ln_expect("stats_form NONE with a mean", &d, &a, NULL, 0, NBWD_ERR_BAD_PARAM, 0);
    CHECK(strstr(nbwd_last_error(), "args.mean is set") != NULL, "message: %s", nbwd_last_error());
    ln_valid(&d, &a); d.stats_form = NBWD_STATS_NONE; a.mean = NULL; a.variance = NULL; a.src = NULL;
    ln_expect("stats_form NONE without src", &d, &a, NULL, 0, NBWD_ERR_NULL_POINTER, 0);
    ln_valid(&d, &a); d.stats_form = NBWD_STATS_NONE; a.mean = NULL; a.variance = NULL; d.epsilon = 0.0f;
    ln_expect("stats_form NONE, epsilon 0", &d, &a, NULL, 0, NBWD_ERR_BAD_PARAM, 1);
    CHECK(strstr(nbwd_last_error(), "NBWD_STATS_NONE") != NULL, "message: %s", nbwd_last_error());

    /* shapes */
    ln_valid(&d, &a); d.dims[1] = -8; ln_expect("dims {4, -8}", &d, &a, NULL, 0, NBWD_ERR_BAD_SHAPE, 1);
    ln_valid(&d, &a); d.dims[0] = -1; ln_expect("dims {-1, 8}", &d, &a, NULL, 0, NBWD_ERR_BAD_SHAPE, 1);
    ln_valid(&d, &a); d.dims[0] = (int64_t)1 << 40; d.dims[1] = (int64_t)1 << 40;
    ln_expect("dims {2^40, 2^40}: element count overflows", &d, &a, NULL, 0, NBWD_ERR_BAD_SHAPE, 1);
    ln_valid(&d, &a); d.dims[0] = INT64_MAX; d.dims[1] = 2;
    ln_expect("dims {INT64_MAX, 2}", &d, &a, NULL, 0, NBWD_ERR_BAD_SHAPE, 1);
    ln_valid(&d, &a); d.rank = 4; d.dims[0] = d.dims[1] = d.dims[2] = d.dims[3] = 65536;
    d.begin_norm_axis = 3;
    ln_expect("dims 65536^4 = 2^64", &d, &a, NULL, 0, NBWD_ERR_BAD_SHAPE, 1);
    {
        int64_t st_huge[2] = {(int64_t)1 << 62, 1}, st_mean_huge[1] = {INT64_MAX / 2};
        ln_valid(&d, &a); d.src_strides = st_huge;
        ln_expect("src outer stride 2^62: byte extent overflows", &d, &a, NULL, 0, NBWD_ERR_BAD_STRIDES, 1);
        ln_valid(&d, &a); d.mean_strides = st_mean_huge;
        ln_expect("mean stride INT64_MAX/2: byte extent overflows", &d, &a, NULL, 0, NBWD_ERR_BAD_STRIDES, 1);
    }

    /* entries past rank are never read: garbage dims there, and stride arrays
       of exactly rank (stats: axis) entries on the heap, so that an
       AddressSanitizer build catches a read past them */
    {
        int64_t *sx = (int64_t *)t_xmalloc(2 * sizeof(int64_t)), *sm = (int64_t *)t_xmalloc(sizeof(int64_t));
        int64_t *sv = (int64_t *)t_xmalloc(sizeof(int64_t));
        sx[0] = 8; sx[1] = 1; sm[0] = 1; sv[0] = 1;
        ln_valid(&d, &a);
        for (k = 2; k < NBWD_MAX_RANK; ++k) d.dims[k] = -7;
        d.src_strides = d.diff_dst_strides = d.diff_src_strides = sx;
        d.mean_strides = sm;
        d.var_strides = sv;
        ln_expect("garbage dims past rank, stride arrays of exactly rank entries (valid)", &d, &a, NULL, 0, NBWD_OK, 1);
        free(sx); free(sm); free(sv);
    }

    /* dtype combinations outside the table */
    for (k = 0; k < (int)(sizeof bad_combos / sizeof bad_combos[0]); ++k) {
        char w[96];
        ln_valid(&d, &a);
        d.data_dtype = bad_combos[k][0]; d.stats_dtype = bad_combos[k][1]; d.param_dtype = bad_combos[k][2];
        snprintf(w, sizeof w, "dtype combo %s/%s/%s", t_dtype_name(bad_combos[k][0]), t_dtype_name(bad_combos[k][1]),
                 t_dtype_name(bad_combos[k][2]));
        ln_expect(w, &d, &a, NULL, 0, NBWD_ERR_BAD_DTYPE, 1);
    }

    /* strides */
    ln_valid(&d, &a); d.src_strides = st_bad_inner;
    ln_expect("src normalized block not dense (inner stride 2)", &d, &a, NULL, 0, NBWD_ERR_BAD_STRIDES, 1);
    ln_valid(&d, &a); d.diff_dst_strides = st_bad_inner;
    ln_expect("diff_dst normalized block not dense", &d, &a, NULL, 0, NBWD_ERR_BAD_STRIDES, 1);
    ln_valid(&d, &a); d.diff_src_strides = st_bad_inner;
    ln_expect("diff_src normalized block not dense", &d, &a, NULL, 0, NBWD_ERR_BAD_STRIDES, 1);
    {
        int64_t dims3[3] = {2, 4, 8}, st3[3] = {100, 10, 1}, st3ok[3] = {100, 8, 1};
        ln_valid(&d, &a); nbwd_layer_norm_bwd_desc_init(&d, 3, dims3); d.isa = g_test_isa; d.begin_norm_axis = 1;
        d.src_strides = st3;
        ln_expect("rank 3 axis 1: block {4, 8} with stride 10 on dim 1", &d, &a, NULL, 0, NBWD_ERR_BAD_STRIDES, 1);
        d.src_strides = st3ok;
        ln_expect("rank 3 axis 1: block dense, outer stride 100 (valid)", &d, &a, NULL, 0, NBWD_OK, 1);
    }
    {
        int64_t dims3[3] = {4, 1, 8}, st3[3] = {8, 0, 1};
        ln_valid(&d, &a); nbwd_layer_norm_bwd_desc_init(&d, 3, dims3); d.isa = g_test_isa; d.begin_norm_axis = 1;
        d.src_strides = st3; d.diff_src_strides = st3;
        ln_expect("size-1 dim with stride 0 inside the block (valid)", &d, &a, NULL, 0, NBWD_OK, 1);
    }
    ln_valid(&d, &a); d.src_strides = st_zero_rows;
    ln_expect("src outer stride 0 (input broadcast: valid)", &d, &a, NULL, 0, NBWD_OK, 0);
    ln_valid(&d, &a); d.diff_src_strides = st_zero_rows;
    ln_expect("diff_src outer stride 0 over 4 rows (self-overlap)", &d, &a, NULL, 0, NBWD_ERR_BAD_STRIDES, 0);
    ln_valid(&d, &a); d.diff_src_strides = st_overlap_rows;
    ln_expect("diff_src rows 4 apart, 8 long (self-overlap)", &d, &a, NULL, 0, NBWD_ERR_BAD_STRIDES, 0);
    ln_valid(&d, &a); d.diff_src_strides = st_pad;
    ln_expect("diff_src padded rows (valid)", &d, &a, NULL, 0, NBWD_OK, 0);
    { /* the parameter tensors' own strides (one entry here: rank 2, axis 1) */
        static const int64_t p0[1] = {0}, p2[1] = {2}, pneg[1] = {-1}, phuge[1] = {INT64_MAX / 4};
        ln_valid(&d, &a); d.diff_gamma_strides = p0;
        ln_expect("diff_gamma stride 0 over 8 elements (self-overlap)", &d, &a, NULL, 0, NBWD_ERR_BAD_STRIDES, 1);
        ln_valid(&d, &a); d.diff_beta_strides = p0;
        ln_expect("diff_beta stride 0 (self-overlap)", &d, &a, NULL, 0, NBWD_ERR_BAD_STRIDES, 1);
        ln_valid(&d, &a); d.gamma_strides = phuge;
        ln_expect("gamma stride INT64_MAX/4: byte extent overflows", &d, &a, NULL, 0, NBWD_ERR_BAD_STRIDES, 1);
        ln_valid(&d, &a); d.beta_strides = phuge;
        ln_expect("beta stride INT64_MAX/4: byte extent overflows", &d, &a, NULL, 0, NBWD_ERR_BAD_STRIDES, 1);
        ln_valid(&d, &a); d.gamma_strides = p0;
        ln_expect("gamma stride 0 (input broadcast: valid)", &d, &a, NULL, 0, NBWD_OK, 0);
        ln_valid(&d, &a); d.diff_gamma_strides = p2; a.diff_beta = (char *)a.diff_gamma + 4;
        ln_expect("diff_beta interleaved with diff_gamma (stride 2)", &d, &a, NULL, 0, NBWD_ERR_BAD_ALIAS, 0);
        ln_valid(&d, &a); d.diff_gamma_strides = p2; a.diff_gamma = (char *)g_ar[A_DX].base + 4 * 20;
        ln_expect("strided diff_gamma reaching into diff_src", &d, &a, NULL, 0, NBWD_ERR_BAD_ALIAS, 0);
        ln_valid(&d, &a); d.gamma_strides = pneg; a.gamma = (const char *)a.gamma + 4 * 7;
        d.diff_beta_strides = p2;
        ln_expect("gamma stride -1, diff_beta stride 2 (valid)", &d, &a, NULL, 0, NBWD_OK, 0);
    }
    {
        int64_t dims3[3] = {3, 5, 8}, st_sw[3] = {8, 24, 1}, st_bad[3] = {8, 16, 1};
        ln_valid(&d, &a); nbwd_layer_norm_bwd_desc_init(&d, 3, dims3); d.isa = g_test_isa;
        d.diff_src_strides = st_sw;
        ln_expect("diff_src outer dims transposed (no overlap: valid)", &d, &a, NULL, 0, NBWD_OK, 0);
        fixture_reset(); /* the valid call wrote the outputs */
        d.diff_src_strides = st_bad;
        ln_expect("diff_src outer dims interleaved (overlap)", &d, &a, NULL, 0, NBWD_ERR_BAD_STRIDES, 0);
    }

    /* aliasing */
    ln_valid(&d, &a); a.diff_beta = a.diff_gamma;
    ln_expect("diff_beta == diff_gamma", &d, &a, NULL, 0, NBWD_ERR_BAD_ALIAS, 0);
    ln_valid(&d, &a); a.diff_beta = (char *)a.diff_gamma + 4 * 7;
    ln_expect("diff_beta overlaps the end of diff_gamma", &d, &a, NULL, 0, NBWD_ERR_BAD_ALIAS, 0);
    ln_valid(&d, &a); a.diff_src = (char *)g_ar[A_DY].base + 4;
    ln_expect("diff_src = diff_dst + 1 element", &d, &a, NULL, 0, NBWD_ERR_BAD_ALIAS, 0);
    ln_valid(&d, &a); a.diff_src = (char *)g_ar[A_DY].base - 4 * 31;
    ln_expect("diff_src ends 1 element into diff_dst", &d, &a, NULL, 0, NBWD_ERR_BAD_ALIAS, 0);
    ln_valid(&d, &a); a.diff_src = (char *)g_ar[A_DY].base - 4 * 32;
    ln_expect("diff_src ends right before diff_dst (valid)", &d, &a, NULL, 0, NBWD_OK, 0);
    ln_valid(&d, &a); a.diff_src = (void *)a.diff_dst; d.diff_dst_strides = st_pad;
    ln_expect("diff_src same base as diff_dst, other strides", &d, &a, NULL, 0, NBWD_ERR_BAD_ALIAS, 0);
    ln_valid(&d, &a); a.diff_src = (void *)a.diff_dst; d.diff_dst_strides = st_pad; d.diff_src_strides = st_pad;
    ln_expect("diff_src == diff_dst, same strides (in-place: valid)", &d, &a, NULL, 0, NBWD_OK, 0);
    ln_valid(&d, &a); a.diff_src = (void *)a.src;
    ln_expect("diff_src == src (in-place: valid)", &d, &a, NULL, 0, NBWD_OK, 0);
    ln_valid(&d, &a); a.diff_src = (char *)g_ar[A_X].base + 4 * 8;
    ln_expect("diff_src = src + 1 row", &d, &a, NULL, 0, NBWD_ERR_BAD_ALIAS, 0);
    ln_valid(&d, &a); a.diff_src = (void *)a.mean;
    ln_expect("diff_src overlaps mean", &d, &a, NULL, 0, NBWD_ERR_BAD_ALIAS, 0);
    ln_valid(&d, &a); a.diff_src = (char *)g_ar[A_V].base - 4 * 30;
    ln_expect("diff_src overlaps variance", &d, &a, NULL, 0, NBWD_ERR_BAD_ALIAS, 0);
    ln_valid(&d, &a); a.diff_gamma = (void *)a.gamma;
    ln_expect("diff_gamma == gamma", &d, &a, NULL, 0, NBWD_ERR_BAD_ALIAS, 0);
    ln_valid(&d, &a); a.diff_beta = (void *)a.beta;
    ln_expect("diff_beta == beta (beta is never read: valid)", &d, &a, NULL, 0, NBWD_OK, 0);
    ln_valid(&d, &a); a.diff_src = NULL; a.diff_gamma = (void *)a.gamma;
    ln_expect("diff_gamma == gamma without diff_src (gamma not read: valid)", &d, &a, NULL, 0, NBWD_OK, 0);
    ln_valid(&d, &a); a.diff_gamma = (char *)g_ar[A_X].base + 4 * 20;
    ln_expect("diff_gamma inside src", &d, &a, NULL, 0, NBWD_ERR_BAD_ALIAS, 0);
    ln_valid(&d, &a); a.diff_beta = (char *)g_ar[A_DX].base + 4 * 24;
    ln_expect("diff_beta inside diff_src", &d, &a, NULL, 0, NBWD_ERR_BAD_ALIAS, 0);
    ln_valid(&d, &a); a.diff_gamma = (char *)g_ar[A_M].base + 4;
    ln_expect("diff_gamma overlaps mean", &d, &a, NULL, 0, NBWD_ERR_BAD_ALIAS, 0);

    /* affine and form mismatches */
    ln_valid(&d, &a); d.use_affine = 0; a.diff_beta = NULL;
    ln_expect("diff_gamma without use_affine", &d, &a, NULL, 0, NBWD_ERR_BAD_PARAM, 0);
    ln_valid(&d, &a); d.use_affine = 0; a.diff_gamma = NULL;
    ln_expect("diff_beta without use_affine", &d, &a, NULL, 0, NBWD_ERR_BAD_PARAM, 0);
    ln_valid(&d, &a); d.use_affine = 0; a.diff_gamma = NULL; a.diff_beta = NULL; a.gamma = NULL; a.beta = NULL;
    ln_expect("no affine, diff_src only (valid)", &d, &a, NULL, 0, NBWD_OK, 0);
    /* the unread-argument rule: an argument of another mode is refused */
    ln_valid(&d, &a); d.use_affine = 0; a.diff_gamma = NULL; a.diff_beta = NULL; a.beta = NULL;
    ln_expect("gamma without use_affine", &d, &a, NULL, 0, NBWD_ERR_BAD_PARAM, 0);
    CHECK(strstr(nbwd_last_error(), "args.gamma is set but desc.use_affine = 0") != NULL, "message: %s",
          nbwd_last_error());
    ln_valid(&d, &a); d.use_affine = 0; a.diff_gamma = NULL; a.diff_beta = NULL; a.gamma = NULL;
    ln_expect("beta without use_affine", &d, &a, NULL, 0, NBWD_ERR_BAD_PARAM, 0);
    CHECK(strstr(nbwd_last_error(), "args.beta is set but desc.use_affine = 0") != NULL, "message: %s",
          nbwd_last_error());
    ln_valid(&d, &a); a.rstd = g_ar[A_V].base + 512;
    ln_expect("rstd given with MEAN_VARIANCE", &d, &a, NULL, 0, NBWD_ERR_BAD_PARAM, 0);
    ln_valid(&d, &a); a.rstd = a.variance; /* README: a statistics tensor of another form given */
    ln_expect("rstd given with MEAN_VARIANCE, same pointer as variance", &d, &a, NULL, 0, NBWD_ERR_BAD_PARAM, 0);
    ln_valid(&d, &a); a.std = g_ar[A_V].base + 512;
    ln_expect("std given with MEAN_VARIANCE", &d, &a, NULL, 0, NBWD_ERR_BAD_PARAM, 0);
    ln_valid(&d, &a); a.xhat = g_ar[A_X].base;
    ln_expect("xhat given with MEAN_VARIANCE", &d, &a, NULL, 0, NBWD_ERR_BAD_PARAM, 0);
    ln_valid(&d, &a); d.stats_form = NBWD_STATS_MEAN_RSTD; a.rstd = g_ar[A_V].base + 512;
    ln_expect("variance given with MEAN_RSTD", &d, &a, NULL, 0, NBWD_ERR_BAD_PARAM, 0);
    ln_valid(&d, &a); d.stats_form = NBWD_STATS_XHAT_STD; a.std = a.variance; a.variance = NULL; a.xhat = a.src;
    ln_expect("src and mean given with XHAT_STD", &d, &a, NULL, 0, NBWD_ERR_BAD_PARAM, 0);
    ln_valid(&d, &a); d.stats_form = NBWD_STATS_XHAT_STD; a.std = a.variance; a.variance = NULL; a.xhat = a.src;
    a.src = NULL;
    ln_expect("mean given with XHAT_STD", &d, &a, NULL, 0, NBWD_ERR_BAD_PARAM, 0);

    /* workspace */
    ln_valid(&d, &a);
    t_case("LN status: workspace query");
    CHECK_STATUS(nbwd_layer_norm_bwd_workspace_size(&d, &need), NBWD_OK);
    if (need > 0) {
        unsigned char *ws = (unsigned char *)t_xmalloc(need + 64);
        memset(ws, T_CANARY, need + 64);
        ln_expect("workspace one byte short", &d, &a, ws, need - 1, NBWD_ERR_INSUFFICIENT_WORKSPACE, 0);
        ln_expect("workspace of 0 bytes (non-NULL)", &d, &a, ws, 0, NBWD_ERR_INSUFFICIENT_WORKSPACE, 0);
        ln_expect("workspace exactly the queried size", &d, &a, ws, need, NBWD_OK, 0);
        free(ws);
    }

    /* the internal workspace allocation fails (NORM_BWD_MALLOC hook, impl.c) */
    ln_valid(&d, &a);
    if (need > 0) {
        g_malloc_fail = 1;
        ln_expect("NULL workspace and the allocation fails", &d, &a, NULL, 0, NBWD_ERR_OUT_OF_MEMORY, 0);
        g_malloc_fail = 0;
    }

    /* an ISA that cannot run here */
    {
        nbwd_isa bad = unsupported_isa();
        if (bad != NBWD_ISA_AUTO) {
            ln_valid(&d, &a); d.isa = bad;
            ln_expect("desc.isa not supported here", &d, &a, NULL, 0, NBWD_ERR_UNSUPPORTED, 0);
        } else {
            printf("  note: every ISA path is supported in this build; the UNSUPPORTED case is not exercised\n");
        }
    }
}

/* ------------------------------------------------------------ BatchNorm */
static void bn_valid(nbwd_batch_norm_bwd_desc *d, nbwd_batch_norm_bwd_args *a, nbwd_layout layout) {
    static const int64_t dims_ncx[3] = {2, 4, 5}, dims_nxc[3] = {2, 5, 4}; /* N = 2, C = 4, X = 5 */
    fixture_reset();
    nbwd_batch_norm_bwd_desc_init(d, 3, layout == NBWD_NCX ? dims_ncx : dims_nxc, layout, 1e-5f);
    d->isa = g_test_isa;
    memset(a, 0, sizeof *a);
    a->src = g_ar[A_X].base;
    a->diff_dst = g_ar[A_DY].base;
    a->mean = g_ar[A_M].base;
    a->variance = g_ar[A_V].base;
    a->gamma = g_ar[A_G].base;
    a->diff_src = g_ar[A_DX].base;
    a->diff_gamma = g_ar[A_DG].base;
    a->diff_beta = g_ar[A_DB].base;
}

static void bn_expect(const char *what, const nbwd_batch_norm_bwd_desc *d, const nbwd_batch_norm_bwd_args *a,
                      void *ws, size_t ws_bytes, nbwd_status want, int desc_level) {
    nbwd_status s;
    t_case("BN status: %s (%s, isa %s)", what, d && d->layout == NBWD_NCX ? "NCX" : "NXC", nbwd_isa_name(g_test_isa));
    snap_inputs();
    s = nbwd_batch_norm_bwd(d, a, ws, ws_bytes);
    CHECK_STATUS(s, want);
    if (want != NBWD_OK) check_untouched(what);
    if (desc_level && d) {
        size_t bytes = 12345;
        s = nbwd_batch_norm_bwd_workspace_size(d, &bytes);
        CHECK_STATUS(s, want);
        if (want != NBWD_OK) CHECK(bytes == 12345, "workspace query wrote its result on failure");
    }
}

static void bn_status_cases(nbwd_layout L) {
    nbwd_batch_norm_bwd_desc d;
    nbwd_batch_norm_bwd_args a;
    int64_t st_inner2_ncx[3] = {40, 10, 2}, st_inner2_nxc[3] = {40, 8, 2};
    int64_t st_n0_ncx[3] = {0, 5, 1}, st_n0_nxc[3] = {0, 4, 1};
    int64_t st_pad_ncx[3] = {30, 7, 1}, st_pad_nxc[3] = {40, 6, 1};
    const int64_t *st_inner2 = L == NBWD_NCX ? st_inner2_ncx : st_inner2_nxc;
    const int64_t *st_n0 = L == NBWD_NCX ? st_n0_ncx : st_n0_nxc;
    const int64_t *st_pad = L == NBWD_NCX ? st_pad_ncx : st_pad_nxc;
    size_t need = 0;
    int k;

    bn_valid(&d, &a, L);
    bn_expect("valid call", &d, &a, NULL, 0, NBWD_OK, 1);
    bn_valid(&d, &a, L);
    bn_expect("desc NULL", NULL, &a, NULL, 0, NBWD_ERR_NULL_POINTER, 0);
    {
        size_t bytes = 0;
        t_case("BN status: workspace_size(NULL desc / NULL bytes)");
        CHECK_STATUS(nbwd_batch_norm_bwd_workspace_size(NULL, &bytes), NBWD_ERR_NULL_POINTER);
        CHECK_STATUS(nbwd_batch_norm_bwd_workspace_size(&d, NULL), NBWD_ERR_NULL_POINTER);
    }
    bn_expect("args NULL", &d, NULL, NULL, 0, NBWD_ERR_NULL_POINTER, 0);
    bn_valid(&d, &a, L); a.src = NULL; bn_expect("src NULL", &d, &a, NULL, 0, NBWD_ERR_NULL_POINTER, 0);
    bn_valid(&d, &a, L); a.diff_dst = NULL; bn_expect("diff_dst NULL", &d, &a, NULL, 0, NBWD_ERR_NULL_POINTER, 0);
    bn_valid(&d, &a, L); a.mean = NULL; bn_expect("mean NULL", &d, &a, NULL, 0, NBWD_ERR_NULL_POINTER, 0);
    bn_valid(&d, &a, L); a.variance = NULL; bn_expect("variance NULL", &d, &a, NULL, 0, NBWD_ERR_NULL_POINTER, 0);
    bn_valid(&d, &a, L); a.gamma = NULL; bn_expect("gamma NULL (optional: valid)", &d, &a, NULL, 0, NBWD_OK, 0);
    bn_valid(&d, &a, L); a.diff_src = NULL;
    bn_expect("diff_src NULL, params only (valid)", &d, &a, NULL, 0, NBWD_OK, 0);
    bn_valid(&d, &a, L); a.diff_gamma = NULL; a.diff_beta = NULL;
    bn_expect("diff_src only (valid)", &d, &a, NULL, 0, NBWD_OK, 0);
    bn_valid(&d, &a, L); a.diff_beta = NULL;
    bn_expect("diff_gamma without diff_beta", &d, &a, NULL, 0, NBWD_ERR_BAD_PARAM, 0);
    bn_valid(&d, &a, L); a.diff_gamma = NULL;
    bn_expect("diff_beta without diff_gamma", &d, &a, NULL, 0, NBWD_ERR_BAD_PARAM, 0);

    {
        int64_t *st = (int64_t *)t_xmalloc(3 * sizeof(int64_t));
        memcpy(st, L == NBWD_NCX ? st_pad_ncx : st_pad_nxc, 3 * sizeof(int64_t));
        bn_valid(&d, &a, L);
        for (k = 3; k < NBWD_MAX_RANK; ++k) d.dims[k] = -7;
        d.src_strides = d.diff_dst_strides = d.diff_src_strides = st;
        a.diff_src = (void *)a.diff_dst; /* in place: the same pointer and strides */
        bn_expect("garbage dims past rank, stride arrays of exactly rank entries (valid)", &d, &a, NULL, 0, NBWD_OK, 1);
        free(st);
    }
    bn_valid(&d, &a, L); d.rank = 1; bn_expect("rank 1", &d, &a, NULL, 0, NBWD_ERR_BAD_PARAM, 1);
    bn_valid(&d, &a, L); d.rank = 0; bn_expect("rank 0", &d, &a, NULL, 0, NBWD_ERR_BAD_PARAM, 1);
    bn_valid(&d, &a, L); d.rank = NBWD_MAX_RANK + 1;
    bn_expect("rank > NBWD_MAX_RANK", &d, &a, NULL, 0, NBWD_ERR_BAD_PARAM, 1);
    bn_valid(&d, &a, L); d.layout = (nbwd_layout)2; bn_expect("layout 2", &d, &a, NULL, 0, NBWD_ERR_BAD_PARAM, 1);
    bn_valid(&d, &a, L); d.layout = (nbwd_layout)-1; bn_expect("layout -1", &d, &a, NULL, 0, NBWD_ERR_BAD_PARAM, 1);
    bn_valid(&d, &a, L); d.epsilon = 0.0f; bn_expect("epsilon 0", &d, &a, NULL, 0, NBWD_ERR_BAD_PARAM, 1);
    bn_valid(&d, &a, L); d.epsilon = -1.0f; bn_expect("epsilon -1", &d, &a, NULL, 0, NBWD_ERR_BAD_PARAM, 1);
    bn_valid(&d, &a, L); d.epsilon = (float)NAN; bn_expect("epsilon NaN", &d, &a, NULL, 0, NBWD_ERR_BAD_PARAM, 1);
    bn_valid(&d, &a, L); d.epsilon = -(float)INFINITY;
    bn_expect("epsilon -inf", &d, &a, NULL, 0, NBWD_ERR_BAD_PARAM, 1);
    bn_valid(&d, &a, L); d.epsilon = (float)INFINITY;
    bn_expect("epsilon +inf", &d, &a, NULL, 0, NBWD_ERR_BAD_PARAM, 1);
    bn_valid(&d, &a, L); d.epsilon = 0.0f; d.stats_form = NBWD_STATS_MEAN_RSTD; a.rstd = a.variance;
    a.variance = NULL;
    bn_expect("epsilon 0 with MEAN_RSTD (not read: valid)", &d, &a, NULL, 0, NBWD_OK, 1);
    bn_valid(&d, &a, L); d.data_dtype = (nbwd_dtype)5; bn_expect("data_dtype 5", &d, &a, NULL, 0, NBWD_ERR_BAD_DTYPE, 1);
    bn_valid(&d, &a, L); d.stats_form = (nbwd_stats_form)9;
    bn_expect("stats_form 9", &d, &a, NULL, 0, NBWD_ERR_BAD_PARAM, 1);
    bn_valid(&d, &a, L); d.stats_form = NBWD_STATS_DST_RSTD; /* LayerNorm's and RMSNorm's alone */
    bn_expect("stats_form DST_RSTD", &d, &a, NULL, 0, NBWD_ERR_BAD_PARAM, 1);
    bn_valid(&d, &a, L); d.isa = (nbwd_isa)77; bn_expect("isa 77", &d, &a, NULL, 0, NBWD_ERR_BAD_PARAM, 1);
    bn_valid(&d, &a, L); d.flags = 16u; bn_expect("flags bit 4", &d, &a, NULL, 0, NBWD_ERR_BAD_PARAM, 1);
    CHECK(strstr(nbwd_last_error(), "NBWD_ACCUMULATE_DIFF_SRC") != NULL, "message: %s", nbwd_last_error());
    bn_valid(&d, &a, L); d.stats_form = NBWD_STATS_NONE; a.mean = NULL; a.variance = NULL;
    bn_expect("stats_form NONE (not BatchNorm's)", &d, &a, NULL, 0, NBWD_ERR_BAD_PARAM, 1);
    bn_valid(&d, &a, L); d.num_threads = -3; bn_expect("num_threads -3", &d, &a, NULL, 0, NBWD_ERR_BAD_PARAM, 1);
    bn_valid(&d, &a, L); d.dims[2] = -1; bn_expect("negative dim", &d, &a, NULL, 0, NBWD_ERR_BAD_SHAPE, 1);
    bn_valid(&d, &a, L); d.dims[0] = (int64_t)1 << 31; d.dims[1] = (int64_t)1 << 31; d.dims[2] = (int64_t)1 << 31;
    bn_expect("dims 2^31 x 2^31 x 2^31 overflows", &d, &a, NULL, 0, NBWD_ERR_BAD_SHAPE, 1);
    for (k = 0; k < 3; ++k) {
        static const nbwd_dtype bad[3][3] = {{NBWD_F32, NBWD_BF16, NBWD_F32},
                                             {NBWD_F16, NBWD_F32, NBWD_BF16},
                                             {NBWD_BF16, NBWD_F16, NBWD_BF16}};
        bn_valid(&d, &a, L);
        d.data_dtype = bad[k][0]; d.stats_dtype = bad[k][1]; d.param_dtype = bad[k][2];
        bn_expect("bad dtype combination", &d, &a, NULL, 0, NBWD_ERR_BAD_DTYPE, 1);
    }
    bn_valid(&d, &a, L); d.src_strides = st_inner2;
    bn_expect("src normalized block not dense", &d, &a, NULL, 0, NBWD_ERR_BAD_STRIDES, 1);
    bn_valid(&d, &a, L); d.diff_src_strides = st_inner2;
    bn_expect("diff_src normalized block not dense", &d, &a, NULL, 0, NBWD_ERR_BAD_STRIDES, 1);
    bn_valid(&d, &a, L); d.src_strides = st_n0;
    bn_expect("src batch stride 0 (input: valid)", &d, &a, NULL, 0, NBWD_OK, 0);
    bn_valid(&d, &a, L); d.diff_src_strides = st_n0;
    bn_expect("diff_src batch stride 0 (self-overlap)", &d, &a, NULL, 0, NBWD_ERR_BAD_STRIDES, 0);
    bn_valid(&d, &a, L); d.diff_src_strides = st_pad; d.src_strides = st_pad;
    bn_expect("padded outer strides (valid)", &d, &a, NULL, 0, NBWD_OK, 0);
    bn_valid(&d, &a, L); a.diff_src = (char *)g_ar[A_DY].base + 8;
    bn_expect("diff_src = diff_dst + 2 elements", &d, &a, NULL, 0, NBWD_ERR_BAD_ALIAS, 0);
    bn_valid(&d, &a, L); a.diff_src = (void *)a.diff_dst;
    bn_expect("diff_src == diff_dst (in-place: valid)", &d, &a, NULL, 0, NBWD_OK, 0);
    bn_valid(&d, &a, L); a.diff_src = (void *)a.src; d.src_strides = st_pad;
    bn_expect("diff_src same base as src, other strides", &d, &a, NULL, 0, NBWD_ERR_BAD_ALIAS, 0);
    { /* the [C] tensors' strides */
        static const int64_t c0[1] = {0}, c3[1] = {3}, cneg[1] = {-2}, chuge[1] = {INT64_MAX / 4};
        bn_valid(&d, &a, L); d.diff_gamma_strides = c0;
        bn_expect("diff_gamma stride 0 over 4 channels (self-overlap)", &d, &a, NULL, 0, NBWD_ERR_BAD_STRIDES, 1);
        bn_valid(&d, &a, L); d.diff_beta_strides = c0;
        bn_expect("diff_beta stride 0 (self-overlap)", &d, &a, NULL, 0, NBWD_ERR_BAD_STRIDES, 1);
        bn_valid(&d, &a, L); d.mean_strides = chuge;
        bn_expect("mean stride INT64_MAX/4: extent overflows", &d, &a, NULL, 0, NBWD_ERR_BAD_STRIDES, 1);
        bn_valid(&d, &a, L); d.var_strides = chuge;
        bn_expect("variance stride INT64_MAX/4: extent overflows", &d, &a, NULL, 0, NBWD_ERR_BAD_STRIDES, 1);
        bn_valid(&d, &a, L); d.gamma_strides = chuge;
        bn_expect("gamma stride INT64_MAX/4: extent overflows", &d, &a, NULL, 0, NBWD_ERR_BAD_STRIDES, 1);
        bn_valid(&d, &a, L); d.diff_gamma_strides = c3; a.diff_gamma = (char *)g_ar[A_DX].base + 4 * 35;
        bn_expect("strided diff_gamma reaching into diff_src", &d, &a, NULL, 0, NBWD_ERR_BAD_ALIAS, 0);
        bn_valid(&d, &a, L); d.diff_gamma_strides = c3; a.diff_beta = (char *)a.diff_gamma + 4;
        bn_expect("diff_beta interleaved with diff_gamma (stride 3)", &d, &a, NULL, 0, NBWD_ERR_BAD_ALIAS, 0);
        bn_valid(&d, &a, L); d.mean_strides = c0; d.var_strides = c3; d.gamma_strides = cneg;
        a.gamma = (const char *)a.gamma + 4 * 6; d.diff_beta_strides = c3;
        bn_expect("mean stride 0, variance 3, gamma -2, diff_beta 3 (valid)", &d, &a, NULL, 0, NBWD_OK, 0);
    }
    bn_valid(&d, &a, L); a.diff_beta = a.diff_gamma;
    bn_expect("diff_beta == diff_gamma", &d, &a, NULL, 0, NBWD_ERR_BAD_ALIAS, 0);
    bn_valid(&d, &a, L); a.diff_beta = (char *)a.diff_gamma + 12;
    bn_expect("diff_beta overlaps diff_gamma", &d, &a, NULL, 0, NBWD_ERR_BAD_ALIAS, 0);
    bn_valid(&d, &a, L); a.diff_gamma = (void *)a.mean;
    bn_expect("diff_gamma == mean", &d, &a, NULL, 0, NBWD_ERR_BAD_ALIAS, 0);
    bn_valid(&d, &a, L); a.diff_beta = (void *)a.gamma;
    bn_expect("diff_beta == gamma", &d, &a, NULL, 0, NBWD_ERR_BAD_ALIAS, 0);
    bn_valid(&d, &a, L); a.diff_gamma = (char *)g_ar[A_DX].base + 4 * 10;
    bn_expect("diff_gamma inside diff_src", &d, &a, NULL, 0, NBWD_ERR_BAD_ALIAS, 0);
    bn_valid(&d, &a, L); a.rstd = g_ar[A_V].base + 512;
    bn_expect("rstd given with MEAN_VARIANCE", &d, &a, NULL, 0, NBWD_ERR_BAD_PARAM, 0);
    bn_valid(&d, &a, L); d.stats_form = NBWD_STATS_XHAT_STD; a.std = a.variance; a.variance = NULL;
    a.xhat = a.src; a.src = NULL;
    bn_expect("mean given with XHAT_STD", &d, &a, NULL, 0, NBWD_ERR_BAD_PARAM, 0);
    bn_valid(&d, &a, L);
    t_case("BN status: workspace query");
    CHECK_STATUS(nbwd_batch_norm_bwd_workspace_size(&d, &need), NBWD_OK);
    if (need > 0) {
        unsigned char *ws = (unsigned char *)t_xmalloc(need + 64);
        bn_expect("workspace one byte short", &d, &a, ws, need - 1, NBWD_ERR_INSUFFICIENT_WORKSPACE, 0);
        bn_expect("workspace exactly the queried size", &d, &a, ws, need, NBWD_OK, 0);
        free(ws);
    }
    bn_valid(&d, &a, L);
    if (need > 0) {
        g_malloc_fail = 1;
        bn_expect("NULL workspace and the allocation fails", &d, &a, NULL, 0, NBWD_ERR_OUT_OF_MEMORY, 0);
        g_malloc_fail = 0;
    }
    {
        nbwd_isa bad = unsupported_isa();
        if (bad != NBWD_ISA_AUTO) {
            bn_valid(&d, &a, L); d.isa = bad;
            bn_expect("desc.isa not supported here", &d, &a, NULL, 0, NBWD_ERR_UNSUPPORTED, 0);
        }
    }
}

/* The two-phase calls. reduce writes its sums (the diff_gamma/diff_beta
   arenas here) and count; apply reads its sums from the beta arena (BatchNorm
   has no beta) and writes the usual outputs. A refused call leaves every
   output, the count included, untouched. */
#define BN_SUMS_AT(k) ((float *)g_ar[A_B].base + (k)*64)
static void bn_reduce_expect(const char *what, const nbwd_batch_norm_bwd_desc *d, const nbwd_batch_norm_bwd_args *a,
                             float *sum_dy, float *sum_dyx, int64_t *count, size_t ws_bytes, nbwd_status want) {
    nbwd_status s;
    int64_t count0 = count ? *count : 0;
    void *ws = ws_bytes ? t_xmalloc(ws_bytes) : NULL;
    t_case("BN reduce status: %s (%s, isa %s)", what, d && d->layout == NBWD_NCX ? "NCX" : "NXC",
           nbwd_isa_name(g_test_isa));
    snap_inputs();
    s = nbwd_batch_norm_bwd_reduce(d, a, sum_dy, sum_dyx, count, ws, ws_bytes);
    CHECK_STATUS(s, want);
    if (want != NBWD_OK) {
        check_untouched(what);
        if (count) CHECK(*count == count0, "%s: count was written by a failing call", what);
    } else {
        CHECK(*count == 10, "%s: count %lld, not N * X = 10", what, (long long)*count);
        CHECK(!arena_all_canary(&g_ar[A_DG]) && arena_all_canary(&g_ar[A_DX]), "%s: the sums not written, or dx was",
              what);
    }
    free(ws);
}
static void bn_apply_expect(const char *what, const nbwd_batch_norm_bwd_desc *d, const nbwd_batch_norm_bwd_args *a,
                            const float *sum_dy, const float *sum_dyx, int64_t count, nbwd_status want) {
    nbwd_status s;
    t_case("BN apply status: %s (%s, isa %s)", what, d && d->layout == NBWD_NCX ? "NCX" : "NXC",
           nbwd_isa_name(g_test_isa));
    snap_inputs();
    s = nbwd_batch_norm_bwd_apply(d, a, sum_dy, sum_dyx, count, NULL, 0);
    CHECK_STATUS(s, want);
    if (want != NBWD_OK) check_untouched(what);
}
static void bn_two_phase_status(nbwd_layout L) {
    nbwd_batch_norm_bwd_desc d, zero;
    nbwd_batch_norm_bwd_args a;
    float *sdy = (float *)g_ar[A_DB].base, *sdyx = (float *)g_ar[A_DG].base;
    int64_t count = -7;
    size_t need = 0;
    memset(&zero, 0, sizeof zero);
#define BN_REDUCE_ARGS()                                                                                              \
    do {                                                                                                              \
        bn_valid(&d, &a, L);                                                                                          \
        a.diff_src = a.diff_gamma = a.diff_beta = NULL;                                                               \
        count = -7;                                                                                                   \
    } while (0)
    BN_REDUCE_ARGS();
    bn_reduce_expect("valid reduce", &d, &a, sdy, sdyx, &count, 0, NBWD_OK);
    BN_REDUCE_ARGS();
    CHECK_STATUS(nbwd_batch_norm_bwd_workspace_size(&d, &need), NBWD_OK);
    if (need > 0) bn_reduce_expect("reduce, workspace one byte short", &d, &a, sdy, sdyx, &count, need - 1,
                                   NBWD_ERR_INSUFFICIENT_WORKSPACE);
    BN_REDUCE_ARGS(); a.diff_src = g_ar[A_DX].base;
    bn_reduce_expect("reduce with args.diff_src", &d, &a, sdy, sdyx, &count, 0, NBWD_ERR_BAD_PARAM);
    BN_REDUCE_ARGS(); a.diff_gamma = g_ar[A_DX].base; a.diff_beta = g_ar[A_DX].base + 64;
    bn_reduce_expect("reduce with args.diff_gamma", &d, &a, sdy, sdyx, &count, 0, NBWD_ERR_BAD_PARAM);
    BN_REDUCE_ARGS();
    bn_reduce_expect("reduce, sum_dy NULL", &d, &a, NULL, sdyx, &count, 0, NBWD_ERR_NULL_POINTER);
    BN_REDUCE_ARGS();
    bn_reduce_expect("reduce, sum_dy_xhat NULL", &d, &a, sdy, NULL, &count, 0, NBWD_ERR_NULL_POINTER);
    BN_REDUCE_ARGS();
    bn_reduce_expect("reduce, count NULL", &d, &a, sdy, sdyx, NULL, 0, NBWD_ERR_NULL_POINTER);
    BN_REDUCE_ARGS();
    bn_reduce_expect("reduce, args NULL", &d, NULL, sdy, sdyx, &count, 0, NBWD_ERR_NULL_POINTER);
    BN_REDUCE_ARGS();
    bn_reduce_expect("reduce, zeroed desc", &zero, &a, sdy, sdyx, &count, 0, NBWD_ERR_NOT_INITIALIZED);
    BN_REDUCE_ARGS(); a.diff_dst = NULL;
    bn_reduce_expect("reduce, diff_dst NULL", &d, &a, sdy, sdyx, &count, 0, NBWD_ERR_NULL_POINTER);
    BN_REDUCE_ARGS();
    bn_reduce_expect("reduce, sum_dy_xhat overlapping sum_dy", &d, &a, sdy, sdy + 2, &count, 0, NBWD_ERR_BAD_ALIAS);
    BN_REDUCE_ARGS(); a.mean = sdy;
    bn_reduce_expect("reduce, sum_dy overlapping mean", &d, &a, sdy, sdyx, &count, 0, NBWD_ERR_BAD_ALIAS);
    CHECK(strstr(nbwd_last_error(), "sum_dy shares bytes with args.mean") != NULL, "the message names sum_dy: %s",
          nbwd_last_error());

    bn_valid(&d, &a, L);
    bn_apply_expect("valid apply", &d, &a, BN_SUMS_AT(0), BN_SUMS_AT(1), 10, NBWD_OK);
    bn_valid(&d, &a, L);
    bn_apply_expect("apply with a count of more processes", &d, &a, BN_SUMS_AT(0), BN_SUMS_AT(1), 1000, NBWD_OK);
    bn_valid(&d, &a, L); a.mean = BN_SUMS_AT(0);
    bn_apply_expect("apply, sum_dy the same memory as an input", &d, &a, BN_SUMS_AT(0), BN_SUMS_AT(1), 10, NBWD_OK);
    bn_valid(&d, &a, L);
    bn_apply_expect("apply, count below the slice's own", &d, &a, BN_SUMS_AT(0), BN_SUMS_AT(1), 9, NBWD_ERR_BAD_PARAM);
    bn_valid(&d, &a, L);
    bn_apply_expect("apply, negative count", &d, &a, BN_SUMS_AT(0), BN_SUMS_AT(1), -1, NBWD_ERR_BAD_PARAM);
    bn_valid(&d, &a, L);
    bn_apply_expect("apply, sum_dy NULL", &d, &a, NULL, BN_SUMS_AT(1), 10, NBWD_ERR_NULL_POINTER);
    bn_valid(&d, &a, L);
    bn_apply_expect("apply, sum_dy_xhat NULL", &d, &a, BN_SUMS_AT(0), NULL, 10, NBWD_ERR_NULL_POINTER);
    bn_valid(&d, &a, L);
    bn_apply_expect("apply, sum_dy overlapping diff_gamma", &d, &a, (const float *)a.diff_gamma + 1, BN_SUMS_AT(1),
                    10, NBWD_ERR_BAD_ALIAS);
    bn_valid(&d, &a, L);
    bn_apply_expect("apply, sum_dy_xhat overlapping diff_src", &d, &a, BN_SUMS_AT(0), (const float *)a.diff_src + 3,
                    10, NBWD_ERR_BAD_ALIAS);
    bn_valid(&d, &a, L); a.diff_beta = NULL;
    bn_apply_expect("apply, diff_gamma without diff_beta", &d, &a, BN_SUMS_AT(0), BN_SUMS_AT(1), 10,
                    NBWD_ERR_BAD_PARAM);
    bn_valid(&d, &a, L);
    bn_apply_expect("apply, zeroed desc", &zero, &a, BN_SUMS_AT(0), BN_SUMS_AT(1), 10, NBWD_ERR_NOT_INITIALIZED);
#undef BN_REDUCE_ARGS
}

/* ------------------------------------------- BatchNorm: the fused ReLU */
/* bn_valid's call with NBWD_FUSE_RELU (args.dst) or NBWD_FUSE_ADD_RELU
   (args.dst and args.diff_src_add) */
#define BN_TOTAL 40 /* bn_valid's N * C * X */
static void bn_relu(nbwd_batch_norm_bwd_desc *d, nbwd_batch_norm_bwd_args *a, nbwd_layout L, unsigned flag) {
    bn_valid(d, a, L);
    d->flags = flag;
    a->dst = g_ar[A_DST].base;
    if (flag == NBWD_FUSE_ADD_RELU) a->diff_src_add = g_ar[A_DSA].base;
}
/* The last refusal's message names `needle`. */
static void bn_msg(const char *what, const char *needle) {
    CHECK(strstr(nbwd_last_error(), needle) != NULL, "%s: the message does not name \"%s\": %s", what, needle,
          nbwd_last_error());
}
/* The fixture's masked dy (dense): dy where dst > 0, else +0. */
static void bn_masked_dy(float *out) {
    const float *dy = (const float *)g_ar[A_DY].base, *dst = (const float *)g_ar[A_DST].base;
    int i;
    for (i = 0; i < BN_TOTAL; ++i) out[i] = dst[i] > 0.0f ? dy[i] : 0.0f;
}

static void bn_relu_status_cases(nbwd_layout L) {
    nbwd_batch_norm_bwd_desc d;
    nbwd_batch_norm_bwd_args a;
    int64_t st_inner2_ncx[3] = {40, 10, 2}, st_inner2_nxc[3] = {40, 8, 2};
    int64_t st_n0_ncx[3] = {0, 5, 1}, st_n0_nxc[3] = {0, 4, 1};
    int64_t st_pad_ncx[3] = {30, 7, 1}, st_pad_nxc[3] = {40, 6, 1};
    int64_t st_huge_ncx[3] = {INT64_MAX / 2, 5, 1}, st_huge_nxc[3] = {INT64_MAX / 2, 4, 1};
    const int64_t *st_inner2 = L == NBWD_NCX ? st_inner2_ncx : st_inner2_nxc;
    const int64_t *st_n0 = L == NBWD_NCX ? st_n0_ncx : st_n0_nxc;
    const int64_t *st_pad = L == NBWD_NCX ? st_pad_ncx : st_pad_nxc;
    const int64_t *st_huge = L == NBWD_NCX ? st_huge_ncx : st_huge_nxc;
    const unsigned R = NBWD_FUSE_RELU, AR = NBWD_FUSE_ADD_RELU;
    size_t need = 0;
    const char *w;

    bn_relu(&d, &a, L, R); bn_expect("FUSE_RELU (valid)", &d, &a, NULL, 0, NBWD_OK, 1);
    bn_relu(&d, &a, L, AR); bn_expect("FUSE_ADD_RELU (valid)", &d, &a, NULL, 0, NBWD_OK, 1);
    bn_relu(&d, &a, L, R); d.flags |= NBWD_USE_GLOBAL_STATS | NBWD_ACCUMULATE_PARAM_GRADS;
    bn_expect("FUSE_RELU with USE_GLOBAL_STATS and ACCUMULATE (valid)", &d, &a, NULL, 0, NBWD_OK, 1);

    /* a field without its flag, the other flag's field, both flags */
    bn_valid(&d, &a, L); a.dst = g_ar[A_DST].base;
    bn_expect(w = "args.dst without a relu flag", &d, &a, NULL, 0, NBWD_ERR_BAD_PARAM, 0); bn_msg(w, "args.dst");
    bn_valid(&d, &a, L); a.diff_src_add = g_ar[A_DSA].base;
    bn_expect(w = "args.diff_src_add without a relu flag", &d, &a, NULL, 0, NBWD_ERR_BAD_PARAM, 0);
    bn_msg(w, "args.diff_src_add");
    bn_valid(&d, &a, L); d.flags = NBWD_USE_GLOBAL_STATS | NBWD_ACCUMULATE_PARAM_GRADS;
    a.dst = g_ar[A_DST].base; a.diff_src_add = g_ar[A_DSA].base;
    bn_expect(w = "dst and diff_src_add with the other flags alone", &d, &a, NULL, 0, NBWD_ERR_BAD_PARAM, 0);
    bn_msg(w, "args.dst");
    bn_relu(&d, &a, L, R); a.diff_src_add = g_ar[A_DSA].base;
    bn_expect(w = "args.diff_src_add with FUSE_RELU", &d, &a, NULL, 0, NBWD_ERR_BAD_PARAM, 0);
    bn_msg(w, "args.diff_src_add");
    bn_relu(&d, &a, L, AR); d.flags |= R;
    bn_expect(w = "FUSE_RELU and FUSE_ADD_RELU together", &d, &a, NULL, 0, NBWD_ERR_BAD_PARAM, 1);
    bn_msg(w, "NBWD_FUSE_RELU and NBWD_FUSE_ADD_RELU");
    bn_relu(&d, &a, L, R); d.flags |= AR;
    bn_expect("FUSE_RELU and FUSE_ADD_RELU together, diff_src_add NULL", &d, &a, NULL, 0, NBWD_ERR_BAD_PARAM, 1);
    bn_relu(&d, &a, L, AR); d.flags |= 16u;
    bn_expect("FUSE_ADD_RELU and flags bit 4", &d, &a, NULL, 0, NBWD_ERR_BAD_PARAM, 1);

    /* the required pointers */
    bn_relu(&d, &a, L, R); a.dst = NULL;
    bn_expect(w = "FUSE_RELU, dst NULL", &d, &a, NULL, 0, NBWD_ERR_NULL_POINTER, 0); bn_msg(w, "args.dst");
    bn_relu(&d, &a, L, AR); a.dst = NULL;
    bn_expect(w = "FUSE_ADD_RELU, dst NULL", &d, &a, NULL, 0, NBWD_ERR_NULL_POINTER, 0); bn_msg(w, "args.dst");
    bn_relu(&d, &a, L, AR); a.diff_src_add = NULL;
    bn_expect(w = "FUSE_ADD_RELU, diff_src_add NULL", &d, &a, NULL, 0, NBWD_ERR_NULL_POINTER, 0);
    bn_msg(w, "args.diff_src_add");
    bn_relu(&d, &a, L, AR); a.diff_src_add = NULL; a.diff_src = a.diff_gamma = a.diff_beta = NULL;
    bn_expect("FUSE_ADD_RELU, diff_src_add NULL and no other output", &d, &a, NULL, 0, NBWD_ERR_NULL_POINTER, 0);
    bn_relu(&d, &a, L, AR); a.dst = NULL; a.diff_src_add = NULL;
    bn_expect(w = "FUSE_ADD_RELU, dst and diff_src_add NULL", &d, &a, NULL, 0, NBWD_ERR_NULL_POINTER, 0);
    bn_msg(w, "args.dst");
    bn_relu(&d, &a, L, R); d.dims[0] = 0; a.dst = NULL;
    bn_expect("FUSE_RELU, empty batch, dst NULL (valid)", &d, &a, NULL, 0, NBWD_OK, 1);
    bn_relu(&d, &a, L, AR); d.dims[0] = 0; a.dst = NULL; a.diff_src_add = NULL;
    bn_expect("FUSE_ADD_RELU, empty batch, dst and diff_src_add NULL (valid)", &d, &a, NULL, 0, NBWD_OK, 1);
    bn_relu(&d, &a, L, AR); a.diff_src = a.diff_gamma = a.diff_beta = NULL;
    bn_expect("FUSE_ADD_RELU, diff_src_add the only output (valid)", &d, &a, NULL, 0, NBWD_OK, 0);

    /* strides: dst and (with a relu flag) diff_dst any; diff_src_add's block dense, no self-overlap */
    bn_relu(&d, &a, L, AR); d.diff_src_add_strides = st_inner2;
    bn_expect(w = "diff_src_add normalized block not dense", &d, &a, NULL, 0, NBWD_ERR_BAD_STRIDES, 1);
    bn_msg(w, "desc.diff_src_add_strides");
    bn_relu(&d, &a, L, AR); d.diff_src_add_strides = st_n0;
    bn_expect(w = "diff_src_add batch stride 0 (self-overlap)", &d, &a, NULL, 0, NBWD_ERR_BAD_STRIDES, 0);
    bn_msg(w, "desc.diff_src_add_strides");
    bn_relu(&d, &a, L, AR); d.diff_src_add_strides = st_huge;
    bn_expect(w = "diff_src_add stride INT64_MAX/2: extent overflows", &d, &a, NULL, 0, NBWD_ERR_BAD_STRIDES, 1);
    bn_msg(w, "desc.diff_src_add_strides");
    bn_relu(&d, &a, L, R); d.dst_strides = st_huge;
    bn_expect(w = "dst stride INT64_MAX/2: extent overflows", &d, &a, NULL, 0, NBWD_ERR_BAD_STRIDES, 1);
    bn_msg(w, "desc.dst_strides");
    bn_relu(&d, &a, L, AR); d.diff_src_add_strides = st_pad;
    bn_expect("diff_src_add padded outer strides (valid)", &d, &a, NULL, 0, NBWD_OK, 1);
    bn_relu(&d, &a, L, R); d.dst_strides = st_inner2;
    bn_expect("dst normalized block not dense (any strides: valid)", &d, &a, NULL, 0, NBWD_OK, 1);
    bn_relu(&d, &a, L, AR); d.dst_strides = st_n0;
    bn_expect("dst batch stride 0 (input: valid)", &d, &a, NULL, 0, NBWD_OK, 1);
    bn_valid(&d, &a, L); d.diff_dst_strides = st_inner2;
    bn_expect("diff_dst normalized block not dense, no relu flag", &d, &a, NULL, 0, NBWD_ERR_BAD_STRIDES, 1);
    bn_relu(&d, &a, L, R); d.diff_dst_strides = st_inner2;
    bn_expect("FUSE_RELU, diff_dst block not dense (masked first: valid)", &d, &a, NULL, 0, NBWD_OK, 1);
    bn_relu(&d, &a, L, AR); d.diff_dst_strides = st_inner2;
    bn_expect("FUSE_ADD_RELU, diff_dst block not dense (masked first: valid)", &d, &a, NULL, 0, NBWD_OK, 1);
    bn_valid(&d, &a, L); d.dst_strides = st_huge; d.diff_src_add_strides = st_inner2;
    bn_expect("dst/diff_src_add strides without a relu flag (not read: valid)", &d, &a, NULL, 0, NBWD_OK, 1);
    bn_relu(&d, &a, L, R); d.diff_src_add_strides = st_inner2;
    bn_expect("diff_src_add strides with FUSE_RELU (not read: valid)", &d, &a, NULL, 0, NBWD_OK, 1);

    /* aliasing: diff_src_add may be exactly diff_dst or dst, diff_src exactly dst */
    bn_relu(&d, &a, L, AR); a.diff_src_add = (char *)g_ar[A_DY].base + 8;
    bn_expect(w = "diff_src_add = diff_dst + 2 elements", &d, &a, NULL, 0, NBWD_ERR_BAD_ALIAS, 0);
    bn_msg(w, "args.diff_src_add shares bytes with args.diff_dst");
    bn_relu(&d, &a, L, AR); a.diff_src_add = (void *)a.diff_dst; d.diff_src_add_strides = st_pad;
    bn_expect("diff_src_add same base as diff_dst, other strides", &d, &a, NULL, 0, NBWD_ERR_BAD_ALIAS, 0);
    bn_relu(&d, &a, L, AR); a.diff_src_add = (char *)g_ar[A_DST].base + 4;
    bn_expect(w = "diff_src_add = dst + 1 element", &d, &a, NULL, 0, NBWD_ERR_BAD_ALIAS, 0);
    bn_msg(w, "args.diff_src_add shares bytes with args.dst");
    bn_relu(&d, &a, L, AR); a.diff_src_add = (void *)a.dst; d.dst_strides = st_pad;
    bn_expect("diff_src_add same base as dst, other strides", &d, &a, NULL, 0, NBWD_ERR_BAD_ALIAS, 0);
    bn_relu(&d, &a, L, AR); a.diff_src_add = (void *)a.src;
    bn_expect(w = "diff_src_add == src", &d, &a, NULL, 0, NBWD_ERR_BAD_ALIAS, 0);
    bn_msg(w, "args.diff_src_add shares bytes with args.src");
    bn_relu(&d, &a, L, AR); a.diff_src_add = a.diff_src;
    bn_expect(w = "diff_src_add == diff_src", &d, &a, NULL, 0, NBWD_ERR_BAD_ALIAS, 0);
    bn_msg(w, "diff_src_add");
    bn_relu(&d, &a, L, AR); a.diff_src_add = (char *)g_ar[A_DX].base + 4 * 20;
    bn_expect("diff_src_add overlapping diff_src's second half", &d, &a, NULL, 0, NBWD_ERR_BAD_ALIAS, 0);
    bn_relu(&d, &a, L, AR); a.diff_src_add = (void *)a.diff_dst; a.diff_src = (void *)a.diff_dst;
    bn_expect("diff_src_add == diff_src == diff_dst", &d, &a, NULL, 0, NBWD_ERR_BAD_ALIAS, 0);
    bn_relu(&d, &a, L, AR); a.diff_src_add = (void *)a.dst; a.diff_src = (void *)a.dst;
    bn_expect("diff_src_add == diff_src == dst", &d, &a, NULL, 0, NBWD_ERR_BAD_ALIAS, 0);
    bn_relu(&d, &a, L, AR); a.diff_gamma = (char *)g_ar[A_DSA].base + 4 * 3;
    bn_expect(w = "diff_gamma inside diff_src_add", &d, &a, NULL, 0, NBWD_ERR_BAD_ALIAS, 0);
    bn_msg(w, "diff_src_add");
    bn_relu(&d, &a, L, AR); a.mean = (const char *)g_ar[A_DSA].base + 4 * 8;
    bn_expect(w = "mean inside diff_src_add", &d, &a, NULL, 0, NBWD_ERR_BAD_ALIAS, 0);
    bn_msg(w, "args.diff_src_add shares bytes with args.mean");
    bn_relu(&d, &a, L, R); a.diff_src = (char *)g_ar[A_DST].base + 8;
    bn_expect(w = "diff_src = dst + 2 elements", &d, &a, NULL, 0, NBWD_ERR_BAD_ALIAS, 0);
    bn_msg(w, "args.diff_src shares bytes with args.dst");
    bn_relu(&d, &a, L, R); a.diff_src = (void *)a.dst; d.diff_src_strides = st_pad;
    bn_expect("diff_src same base as dst, other strides", &d, &a, NULL, 0, NBWD_ERR_BAD_ALIAS, 0);
    bn_relu(&d, &a, L, R); a.diff_gamma = (char *)g_ar[A_DST].base + 4 * 10;
    bn_expect(w = "diff_gamma inside dst", &d, &a, NULL, 0, NBWD_ERR_BAD_ALIAS, 0);
    bn_msg(w, "args.diff_gamma shares bytes with args.dst");
    bn_relu(&d, &a, L, R); a.diff_beta = (char *)g_ar[A_DST].base + 4 * 36;
    bn_expect("diff_beta overlapping dst's end", &d, &a, NULL, 0, NBWD_ERR_BAD_ALIAS, 0);
    bn_relu(&d, &a, L, R); a.dst = a.diff_dst;
    bn_expect("dst == diff_dst (two inputs: valid)", &d, &a, NULL, 0, NBWD_OK, 0);
    bn_relu(&d, &a, L, AR); a.diff_src_add = (void *)a.diff_dst;
    bn_expect("diff_src_add == diff_dst (valid)", &d, &a, NULL, 0, NBWD_OK, 0);
    bn_relu(&d, &a, L, AR); a.diff_src_add = (void *)a.dst;
    bn_expect("diff_src_add == dst (valid)", &d, &a, NULL, 0, NBWD_OK, 0);
    bn_relu(&d, &a, L, R); a.diff_src = (void *)a.dst;
    bn_expect("diff_src == dst (valid)", &d, &a, NULL, 0, NBWD_OK, 0);
    bn_relu(&d, &a, L, AR); a.diff_src = (void *)a.dst; a.diff_src_add = (void *)a.diff_dst;
    bn_expect("diff_src == dst, diff_src_add == diff_dst (valid)", &d, &a, NULL, 0, NBWD_OK, 0);
    bn_relu(&d, &a, L, AR); a.diff_src = (void *)a.diff_dst; a.diff_src_add = (void *)a.dst;
    bn_expect("diff_src == diff_dst, diff_src_add == dst (valid)", &d, &a, NULL, 0, NBWD_OK, 0);
    bn_relu(&d, &a, L, AR); d.diff_src_add_strides = d.diff_dst_strides = st_pad;
    a.diff_src_add = (void *)a.diff_dst;
    bn_expect("diff_src_add == diff_dst, both padded (valid)", &d, &a, NULL, 0, NBWD_OK, 0);

    /* workspace: refused before anything, diff_src_add included, is written */
    bn_relu(&d, &a, L, R);
    t_case("BN status: FUSE_RELU workspace query (%s)", L == NBWD_NCX ? "NCX" : "NXC");
    CHECK_STATUS(nbwd_batch_norm_bwd_workspace_size(&d, &need), NBWD_OK);
    CHECK(need >= BN_TOTAL * 4, "FUSE_RELU's workspace of %zu bytes cannot hold the masked diff_dst", need);
    if (need > 0) {
        unsigned char *ws = (unsigned char *)t_xmalloc(need + 64);
        bn_expect("FUSE_RELU, workspace one byte short", &d, &a, ws, need - 1, NBWD_ERR_INSUFFICIENT_WORKSPACE, 0);
        bn_expect("FUSE_RELU, workspace exactly the queried size", &d, &a, ws, need, NBWD_OK, 0);
        free(ws);
    }
    bn_relu(&d, &a, L, AR);
    CHECK_STATUS(nbwd_batch_norm_bwd_workspace_size(&d, &need), NBWD_OK);
    if (need > 0) {
        unsigned char *ws = (unsigned char *)t_xmalloc(need + 64);
        bn_expect("FUSE_ADD_RELU, workspace one byte short", &d, &a, ws, need - 1, NBWD_ERR_INSUFFICIENT_WORKSPACE,
                  0);
        free(ws);
        bn_relu(&d, &a, L, AR);
        g_malloc_fail = 1;
        bn_expect("FUSE_ADD_RELU, NULL workspace and the allocation fails", &d, &a, NULL, 0,
                  NBWD_ERR_OUT_OF_MEMORY, 0);
        g_malloc_fail = 0;
    }
    {
        nbwd_isa bad = unsupported_isa();
        if (bad != NBWD_ISA_AUTO) {
            bn_relu(&d, &a, L, AR); d.isa = bad;
            bn_expect("FUSE_ADD_RELU, desc.isa not supported here", &d, &a, NULL, 0, NBWD_ERR_UNSUPPORTED, 0);
        }
    }
}

/* The values of the accepted calls: each equals the plain call on the
   masked diff_dst (bit for bit: the same kernels on the same dense dy), and
   diff_src_add holds the masked diff_dst; the allowed aliases change
   nothing. Plain call and the two-phase calls, training and frozen
   statistics. */
static void bn_relu_values(nbwd_layout L) {
    /* where diff_src_add / diff_src go: own arena, dst, diff_dst, none */
    enum { OWN, AT_DST, AT_DY, NONE };
    static const struct { unsigned flag; int dsa, dx; const char *name; } v[] = {
        {NBWD_FUSE_RELU, NONE, OWN, "FUSE_RELU"},
        {NBWD_FUSE_ADD_RELU, OWN, OWN, "FUSE_ADD_RELU"},
        {NBWD_FUSE_ADD_RELU, AT_DY, OWN, "FUSE_ADD_RELU, diff_src_add == diff_dst"},
        {NBWD_FUSE_ADD_RELU, AT_DST, OWN, "FUSE_ADD_RELU, diff_src_add == dst"},
        {NBWD_FUSE_RELU, NONE, AT_DST, "FUSE_RELU, diff_src == dst"},
        {NBWD_FUSE_RELU, NONE, AT_DY, "FUSE_RELU, diff_src == diff_dst"},
        {NBWD_FUSE_ADD_RELU, AT_DY, AT_DST, "FUSE_ADD_RELU, diff_src == dst, diff_src_add == diff_dst"},
        {NBWD_FUSE_ADD_RELU, AT_DST, AT_DY, "FUSE_ADD_RELU, diff_src == diff_dst, diff_src_add == dst"},
        {NBWD_FUSE_ADD_RELU, OWN, NONE, "FUSE_ADD_RELU, diff_src_add alone"},
    };
    nbwd_batch_norm_bwd_desc d;
    nbwd_batch_norm_bwd_args a;
    float masked[BN_TOTAL], dy0[BN_TOTAL], dst0[BN_TOTAL], dx_ref[BN_TOTAL], dg_ref[4], db_ref[4];
    float sums_ref[8], *sums = (float *)g_ar[A_DB].base + 512;
    int64_t count;
    int k, global, two, i, zeroed = 0, kept = 0;
    for (global = 0; global < 2; ++global) {
        unsigned gflag = global ? NBWD_USE_GLOBAL_STATS : 0u;
        /* the reference: the plain call (no flag) on the masked dy */
        bn_valid(&d, &a, L);
        bn_masked_dy(masked);
        memcpy(dy0, g_ar[A_DY].base, sizeof dy0);
        memcpy(dst0, g_ar[A_DST].base, sizeof dst0);
        for (i = 0; i < BN_TOTAL; ++i) {
            zeroed += dy0[i] != 0.0f && masked[i] == 0.0f;
            kept += masked[i] != 0.0f;
        }
        memcpy(g_ar[A_DY].base, masked, sizeof masked);
        d.flags = gflag;
        t_case("BN relu values: reference (%s%s)", L == NBWD_NCX ? "NCX" : "NXC", global ? ", global stats" : "");
        CHECK(zeroed > 0 && kept > 0, "the fixture's mask clears %d and keeps %d elements", zeroed, kept);
        CHECK_STATUS(nbwd_batch_norm_bwd(&d, &a, NULL, 0), NBWD_OK);
        memcpy(dx_ref, g_ar[A_DX].base, sizeof dx_ref);
        memcpy(dg_ref, g_ar[A_DG].base, sizeof dg_ref);
        memcpy(db_ref, g_ar[A_DB].base, sizeof db_ref);
        bn_valid(&d, &a, L);
        memcpy(g_ar[A_DY].base, masked, sizeof masked);
        a.diff_src = a.diff_gamma = a.diff_beta = NULL;
        CHECK_STATUS(nbwd_batch_norm_bwd_reduce(&d, &a, sums, sums + 4, &count, NULL, 0), NBWD_OK);
        memcpy(sums_ref, sums, sizeof sums_ref);
        for (two = 0; two < 2; ++two)
            for (k = 0; k < (int)(sizeof v / sizeof v[0]); ++k) {
                float *dsa_at, *dx_at;
                nbwd_status s;
                bn_relu(&d, &a, L, v[k].flag);
                d.flags |= gflag;
                a.diff_src_add = v[k].dsa == OWN ? g_ar[A_DSA].base : v[k].dsa == AT_DY ? (void *)a.diff_dst
                                 : v[k].dsa == AT_DST ? (void *)a.dst : NULL;
                a.diff_src = v[k].dx == OWN ? g_ar[A_DX].base : v[k].dx == AT_DY ? (void *)a.diff_dst
                             : v[k].dx == AT_DST ? (void *)a.dst : NULL;
                if (!a.diff_src) a.diff_gamma = a.diff_beta = NULL;
                dsa_at = (float *)a.diff_src_add;
                dx_at = (float *)a.diff_src;
                t_case("BN relu values: %s (%s%s%s)", v[k].name, L == NBWD_NCX ? "NCX" : "NXC",
                       global ? ", global stats" : "", two ? ", reduce + apply" : "");
                if (two && v[k].dsa == AT_DST) { /* refused: reduce's output would replace apply's mask */
                    nbwd_batch_norm_bwd_args r = a;
                    r.diff_src = r.diff_gamma = r.diff_beta = NULL;
                    count = -1;
                    snap_inputs();
                    CHECK_STATUS(nbwd_batch_norm_bwd_reduce(&d, &r, sums, sums + 4, &count, NULL, 0),
                                 NBWD_ERR_BAD_ALIAS);
                    CHECK_STATUS(nbwd_batch_norm_bwd_apply(&d, &a, sums_ref, sums_ref + 4, 10, NULL, 0),
                                 NBWD_ERR_BAD_ALIAS);
                    CHECK(count == -1, "a refused reduce wrote its count");
                    check_untouched(v[k].name);
                    continue;
                }
                if (two) {
                    nbwd_batch_norm_bwd_args r = a;
                    r.diff_src = r.diff_gamma = r.diff_beta = NULL;
                    count = -1;
                    s = nbwd_batch_norm_bwd_reduce(&d, &r, sums, sums + 4, &count, NULL, 0);
                    CHECK_STATUS(s, NBWD_OK);
                    CHECK(count == 10 && memcmp(sums, sums_ref, sizeof sums_ref) == 0,
                          "reduce's sums (count %lld) differ from the plain reduce on the masked diff_dst",
                          (long long)count);
                    if (dsa_at)
                        CHECK(memcmp(dsa_at, masked, sizeof masked) == 0, "reduce: diff_src_add is not the masked dy");
                    if (s == NBWD_OK) s = nbwd_batch_norm_bwd_apply(&d, &a, sums, sums + 4, count, NULL, 0);
                } else {
                    s = nbwd_batch_norm_bwd(&d, &a, NULL, 0);
                }
                CHECK_STATUS(s, NBWD_OK);
                if (dx_at) {
                    CHECK(memcmp(dx_at, dx_ref, sizeof dx_ref) == 0, "diff_src differs from the plain call's on the "
                                                                     "masked diff_dst");
                    CHECK(memcmp(g_ar[A_DG].base, dg_ref, sizeof dg_ref) == 0 &&
                              memcmp(g_ar[A_DB].base, db_ref, sizeof db_ref) == 0,
                          "diff_gamma/diff_beta differ from the plain call's on the masked diff_dst");
                } else {
                    CHECK(arena_all_canary(&g_ar[A_DX]) && arena_all_canary(&g_ar[A_DG]),
                          "diff_src or diff_gamma written without being asked for");
                }
                if (dsa_at) CHECK(memcmp(dsa_at, masked, sizeof masked) == 0, "diff_src_add is not the masked dy");
                else CHECK(arena_all_canary(&g_ar[A_DSA]), "diff_src_add's memory written with FUSE_RELU");
                if (v[k].dsa != AT_DY && v[k].dx != AT_DY)
                    CHECK(memcmp(g_ar[A_DY].base, dy0, sizeof dy0) == 0, "diff_dst modified");
                if (v[k].dsa != AT_DST && v[k].dx != AT_DST)
                    CHECK(memcmp(g_ar[A_DST].base, dst0, sizeof dst0) == 0, "dst modified");
            }
    }
}

/* The two-phase calls with the fused ReLU: the same refusals (reduce takes
   dst, and diff_src_add with FUSE_ADD_RELU, as every call does). */
static void bn_relu_two_phase_status(nbwd_layout L) {
    nbwd_batch_norm_bwd_desc d;
    nbwd_batch_norm_bwd_args a;
    float *sdy = (float *)g_ar[A_DB].base, *sdyx = (float *)g_ar[A_DG].base;
    int64_t st_inner2_ncx[3] = {40, 10, 2}, st_inner2_nxc[3] = {40, 8, 2};
    int64_t st_n0_ncx[3] = {0, 5, 1}, st_n0_nxc[3] = {0, 4, 1};
    const int64_t *st_inner2 = L == NBWD_NCX ? st_inner2_ncx : st_inner2_nxc;
    const int64_t *st_n0 = L == NBWD_NCX ? st_n0_ncx : st_n0_nxc;
    const unsigned R = NBWD_FUSE_RELU, AR = NBWD_FUSE_ADD_RELU;
    int64_t count = -7;
    size_t need = 0;
    float masked[BN_TOTAL];
    const char *w;
#define BN_RELU_REDUCE(flag)                                                                                          \
    do {                                                                                                              \
        bn_relu(&d, &a, L, flag);                                                                                     \
        a.diff_src = a.diff_gamma = a.diff_beta = NULL;                                                               \
        count = -7;                                                                                                   \
    } while (0)
    BN_RELU_REDUCE(R);
    bn_reduce_expect("reduce, FUSE_RELU (valid)", &d, &a, sdy, sdyx, &count, 0, NBWD_OK);
    BN_RELU_REDUCE(AR);
    bn_masked_dy(masked);
    bn_reduce_expect("reduce, FUSE_ADD_RELU (valid)", &d, &a, sdy, sdyx, &count, 0, NBWD_OK);
    CHECK(memcmp(g_ar[A_DSA].base, masked, sizeof masked) == 0, "reduce did not write the masked dy to diff_src_add");
    BN_RELU_REDUCE(AR); a.diff_src_add = (void *)a.diff_dst;
    bn_reduce_expect("reduce, diff_src_add == diff_dst (valid)", &d, &a, sdy, sdyx, &count, 0, NBWD_OK);
    BN_RELU_REDUCE(R);
    CHECK_STATUS(nbwd_batch_norm_bwd_workspace_size(&d, &need), NBWD_OK);
    if (need > 0)
        bn_reduce_expect("reduce, FUSE_RELU, workspace one byte short", &d, &a, sdy, sdyx, &count, need - 1,
                         NBWD_ERR_INSUFFICIENT_WORKSPACE);
    BN_RELU_REDUCE(AR);
    CHECK_STATUS(nbwd_batch_norm_bwd_workspace_size(&d, &need), NBWD_OK);
    if (need > 0)
        bn_reduce_expect("reduce, FUSE_ADD_RELU, workspace one byte short", &d, &a, sdy, sdyx, &count, need - 1,
                         NBWD_ERR_INSUFFICIENT_WORKSPACE);
    BN_RELU_REDUCE(0); /* bn_relu sets dst */
    bn_reduce_expect(w = "reduce, dst without a relu flag", &d, &a, sdy, sdyx, &count, 0, NBWD_ERR_BAD_PARAM);
    bn_msg(w, "args.dst");
    BN_RELU_REDUCE(0); a.dst = NULL; a.diff_src_add = g_ar[A_DSA].base;
    bn_reduce_expect(w = "reduce, diff_src_add without a relu flag", &d, &a, sdy, sdyx, &count, 0,
                     NBWD_ERR_BAD_PARAM);
    bn_msg(w, "args.diff_src_add");
    BN_RELU_REDUCE(R); a.diff_src_add = g_ar[A_DSA].base;
    bn_reduce_expect(w = "reduce, diff_src_add with FUSE_RELU", &d, &a, sdy, sdyx, &count, 0, NBWD_ERR_BAD_PARAM);
    bn_msg(w, "args.diff_src_add");
    BN_RELU_REDUCE(AR); d.flags |= R;
    bn_reduce_expect(w = "reduce, both relu flags", &d, &a, sdy, sdyx, &count, 0, NBWD_ERR_BAD_PARAM);
    bn_msg(w, "NBWD_FUSE_RELU and NBWD_FUSE_ADD_RELU");
    BN_RELU_REDUCE(R); a.dst = NULL;
    bn_reduce_expect(w = "reduce, FUSE_RELU, dst NULL", &d, &a, sdy, sdyx, &count, 0, NBWD_ERR_NULL_POINTER);
    bn_msg(w, "args.dst");
    BN_RELU_REDUCE(AR); a.diff_src_add = NULL;
    bn_reduce_expect(w = "reduce, FUSE_ADD_RELU, diff_src_add NULL", &d, &a, sdy, sdyx, &count, 0,
                     NBWD_ERR_NULL_POINTER);
    bn_msg(w, "args.diff_src_add");
    BN_RELU_REDUCE(AR); d.diff_src_add_strides = st_inner2;
    bn_reduce_expect(w = "reduce, diff_src_add block not dense", &d, &a, sdy, sdyx, &count, 0, NBWD_ERR_BAD_STRIDES);
    bn_msg(w, "desc.diff_src_add_strides");
    BN_RELU_REDUCE(AR); d.diff_src_add_strides = st_n0;
    bn_reduce_expect(w = "reduce, diff_src_add self-overlap", &d, &a, sdy, sdyx, &count, 0, NBWD_ERR_BAD_STRIDES);
    bn_msg(w, "desc.diff_src_add_strides");
    BN_RELU_REDUCE(AR); a.diff_src_add = sdy + 2;
    bn_reduce_expect(w = "reduce, diff_src_add overlapping sum_dy", &d, &a, sdy, sdyx, &count, 0, NBWD_ERR_BAD_ALIAS);
    bn_msg(w, "args.diff_src_add shares bytes with sum_dy");
    BN_RELU_REDUCE(AR); a.diff_src_add = (char *)g_ar[A_DST].base + 4;
    bn_reduce_expect(w = "reduce, diff_src_add = dst + 1 element", &d, &a, sdy, sdyx, &count, 0, NBWD_ERR_BAD_ALIAS);
    bn_msg(w, "args.diff_src_add shares bytes with args.dst");
    BN_RELU_REDUCE(AR); a.diff_src_add = (void *)a.dst;
    bn_reduce_expect(w = "reduce, diff_src_add == dst (not in two phases)", &d, &a, sdy, sdyx, &count, 0,
                     NBWD_ERR_BAD_ALIAS);
    bn_msg(w, "args.diff_src_add is args.dst");
    BN_RELU_REDUCE(R); a.mean = sdyx;
    bn_reduce_expect("reduce, FUSE_RELU, sum_dy_xhat overlapping mean", &d, &a, sdy, sdyx, &count, 0,
                     NBWD_ERR_BAD_ALIAS);

    bn_relu(&d, &a, L, R);
    bn_apply_expect("apply, FUSE_RELU (valid)", &d, &a, BN_SUMS_AT(0), BN_SUMS_AT(1), 10, NBWD_OK);
    bn_relu(&d, &a, L, AR);
    bn_masked_dy(masked);
    bn_apply_expect("apply, FUSE_ADD_RELU (valid)", &d, &a, BN_SUMS_AT(0), BN_SUMS_AT(1), 10, NBWD_OK);
    CHECK(memcmp(g_ar[A_DSA].base, masked, sizeof masked) == 0, "apply did not write the masked dy to diff_src_add");
    bn_relu(&d, &a, L, R); a.diff_src = (void *)a.dst;
    bn_apply_expect("apply, diff_src == dst (valid)", &d, &a, BN_SUMS_AT(0), BN_SUMS_AT(1), 10, NBWD_OK);
    bn_relu(&d, &a, L, AR); a.diff_src_add = (void *)a.diff_dst;
    bn_apply_expect("apply, diff_src_add == diff_dst (valid)", &d, &a, BN_SUMS_AT(0), BN_SUMS_AT(1), 10, NBWD_OK);
    bn_valid(&d, &a, L); a.dst = g_ar[A_DST].base;
    bn_apply_expect(w = "apply, dst without a relu flag", &d, &a, BN_SUMS_AT(0), BN_SUMS_AT(1), 10,
                    NBWD_ERR_BAD_PARAM);
    bn_msg(w, "args.dst");
    bn_relu(&d, &a, L, R); a.diff_src_add = g_ar[A_DSA].base;
    bn_apply_expect(w = "apply, diff_src_add with FUSE_RELU", &d, &a, BN_SUMS_AT(0), BN_SUMS_AT(1), 10,
                    NBWD_ERR_BAD_PARAM);
    bn_msg(w, "args.diff_src_add");
    bn_relu(&d, &a, L, AR); d.flags |= R;
    bn_apply_expect("apply, both relu flags", &d, &a, BN_SUMS_AT(0), BN_SUMS_AT(1), 10, NBWD_ERR_BAD_PARAM);
    bn_relu(&d, &a, L, R); a.dst = NULL;
    bn_apply_expect(w = "apply, FUSE_RELU, dst NULL", &d, &a, BN_SUMS_AT(0), BN_SUMS_AT(1), 10,
                    NBWD_ERR_NULL_POINTER);
    bn_msg(w, "args.dst");
    bn_relu(&d, &a, L, AR); a.diff_src_add = NULL;
    bn_apply_expect(w = "apply, FUSE_ADD_RELU, diff_src_add NULL", &d, &a, BN_SUMS_AT(0), BN_SUMS_AT(1), 10,
                    NBWD_ERR_NULL_POINTER);
    bn_msg(w, "args.diff_src_add");
    bn_relu(&d, &a, L, AR); d.diff_src_add_strides = st_inner2;
    bn_apply_expect("apply, diff_src_add block not dense", &d, &a, BN_SUMS_AT(0), BN_SUMS_AT(1), 10,
                    NBWD_ERR_BAD_STRIDES);
    bn_relu(&d, &a, L, AR); d.diff_src_add_strides = st_n0;
    bn_apply_expect("apply, diff_src_add self-overlap", &d, &a, BN_SUMS_AT(0), BN_SUMS_AT(1), 10,
                    NBWD_ERR_BAD_STRIDES);
    bn_relu(&d, &a, L, AR); a.diff_src_add = BN_SUMS_AT(1) - 30; /* [34, 74) of the beta arena: sum_dy_xhat's [64, 68) */
    bn_apply_expect(w = "apply, diff_src_add overlapping sum_dy_xhat", &d, &a, BN_SUMS_AT(0), BN_SUMS_AT(1), 10,
                    NBWD_ERR_BAD_ALIAS);
    bn_msg(w, "args.diff_src_add shares bytes with sum_dy_xhat");
    bn_relu(&d, &a, L, AR); a.diff_src_add = (void *)a.dst;
    bn_apply_expect(w = "apply, diff_src_add == dst (not in two phases)", &d, &a, BN_SUMS_AT(0), BN_SUMS_AT(1), 10,
                    NBWD_ERR_BAD_ALIAS);
    bn_msg(w, "args.diff_src_add is args.dst");
    bn_relu(&d, &a, L, AR); a.diff_src_add = (void *)a.dst; a.diff_src = (void *)a.diff_dst;
    bn_apply_expect("apply, diff_src_add == dst, diff_src == diff_dst", &d, &a, BN_SUMS_AT(0), BN_SUMS_AT(1), 10,
                    NBWD_ERR_BAD_ALIAS);
    bn_relu(&d, &a, L, R); a.diff_src = (char *)g_ar[A_DST].base + 4;
    bn_apply_expect(w = "apply, diff_src = dst + 1 element", &d, &a, BN_SUMS_AT(0), BN_SUMS_AT(1), 10,
                    NBWD_ERR_BAD_ALIAS);
    bn_msg(w, "args.diff_src shares bytes with args.dst");
    bn_relu(&d, &a, L, AR); a.diff_src_add = (char *)g_ar[A_DY].base + 4;
    bn_apply_expect("apply, diff_src_add = diff_dst + 1 element", &d, &a, BN_SUMS_AT(0), BN_SUMS_AT(1), 10,
                    NBWD_ERR_BAD_ALIAS);
#undef BN_RELU_REDUCE
}

/* ------------------------------------------------------------ GroupNorm */
/* A valid call: N = 2, C = 4, X = 5, groups 2, f32 mean/variance, every output. */
static void gn_valid(nbwd_group_norm_bwd_desc *d, nbwd_group_norm_bwd_args *a, nbwd_layout layout) {
    static const int64_t dims_ncx[3] = {2, 4, 5}, dims_nxc[3] = {2, 5, 4};
    fixture_reset();
    nbwd_group_norm_bwd_desc_init(d, 3, layout == NBWD_NCX ? dims_ncx : dims_nxc, layout, 2, 1e-5f);
    d->isa = g_test_isa;
    memset(a, 0, sizeof *a);
    a->src = g_ar[A_X].base;
    a->diff_dst = g_ar[A_DY].base;
    a->mean = g_ar[A_M].base;
    a->variance = g_ar[A_V].base;
    a->gamma = g_ar[A_G].base;
    a->diff_src = g_ar[A_DX].base;
    a->diff_gamma = g_ar[A_DG].base;
    a->diff_beta = g_ar[A_DB].base;
}
/* gn_valid in the DST_RSTD form: dst, rstd, gamma and beta */
static void gn_valid_dst(nbwd_group_norm_bwd_desc *d, nbwd_group_norm_bwd_args *a, nbwd_layout layout) {
    gn_valid(d, a, layout);
    d->stats_form = NBWD_STATS_DST_RSTD;
    a->src = NULL;
    a->mean = NULL;
    a->variance = NULL;
    a->dst = g_ar[A_DST].base;
    a->rstd = g_ar[A_V].base;
    a->beta = g_ar[A_B].base;
}

static void gn_expect(const char *what, const nbwd_group_norm_bwd_desc *d, const nbwd_group_norm_bwd_args *a,
                      void *ws, size_t ws_bytes, nbwd_status want, int desc_level) {
    nbwd_status s;
    t_case("GN status: %s (%s, isa %s)", what, d && d->layout == NBWD_NCX ? "NCX" : "NXC", nbwd_isa_name(g_test_isa));
    snap_inputs();
    s = nbwd_group_norm_bwd(d, a, ws, ws_bytes);
    CHECK_STATUS(s, want);
    if (want != NBWD_OK) {
        check_untouched(what);
        CHECK(nbwd_last_error()[0] != 0, "%s: refused without a message", what);
    }
    if (desc_level && d) {
        size_t bytes = 12345;
        s = nbwd_group_norm_bwd_workspace_size(d, &bytes);
        CHECK_STATUS(s, want);
        if (want != NBWD_OK) CHECK(bytes == 12345, "workspace query wrote its result on failure");
    }
}

static void gn_status_cases(nbwd_layout L) {
    nbwd_group_norm_bwd_desc d, zero;
    nbwd_group_norm_bwd_args a;
    /* NCX dims {2, 4, 5}: the spatial dim dense; NXC {2, 5, 4}: the channels */
    int64_t st_inner2_ncx[3] = {40, 10, 2}, st_inner2_nxc[3] = {40, 8, 2};
    int64_t st_n0_ncx[3] = {0, 5, 1}, st_n0_nxc[3] = {0, 4, 1};
    int64_t st_pad_ncx[3] = {30, 7, 1}, st_pad_nxc[3] = {40, 6, 1};
    const int64_t *st_inner2 = L == NBWD_NCX ? st_inner2_ncx : st_inner2_nxc;
    const int64_t *st_n0 = L == NBWD_NCX ? st_n0_ncx : st_n0_nxc;
    const int64_t *st_pad = L == NBWD_NCX ? st_pad_ncx : st_pad_nxc;
    size_t need = 0;
    int k;
    memset(&zero, 0, sizeof zero);

    gn_valid(&d, &a, L); gn_expect("valid call", &d, &a, NULL, 0, NBWD_OK, 1);
    gn_valid(&d, &a, L); gn_expect("desc NULL", NULL, &a, NULL, 0, NBWD_ERR_NULL_POINTER, 0);
    {
        size_t bytes = 0;
        t_case("GN status: workspace_size(NULL desc / NULL bytes)");
        CHECK_STATUS(nbwd_group_norm_bwd_workspace_size(NULL, &bytes), NBWD_ERR_NULL_POINTER);
        CHECK_STATUS(nbwd_group_norm_bwd_workspace_size(&d, NULL), NBWD_ERR_NULL_POINTER);
    }
    gn_expect("args NULL", &d, NULL, NULL, 0, NBWD_ERR_NULL_POINTER, 0);
    gn_valid(&d, &a, L); gn_expect("zeroed desc", &zero, &a, NULL, 0, NBWD_ERR_NOT_INITIALIZED, 1);
    gn_valid(&d, &a, L); a.src = NULL; gn_expect("src NULL", &d, &a, NULL, 0, NBWD_ERR_NULL_POINTER, 0);
    gn_valid(&d, &a, L); a.diff_dst = NULL; gn_expect("diff_dst NULL", &d, &a, NULL, 0, NBWD_ERR_NULL_POINTER, 0);
    gn_valid(&d, &a, L); a.mean = NULL; gn_expect("mean NULL", &d, &a, NULL, 0, NBWD_ERR_NULL_POINTER, 0);
    gn_valid(&d, &a, L); a.variance = NULL; gn_expect("variance NULL", &d, &a, NULL, 0, NBWD_ERR_NULL_POINTER, 0);
    gn_valid(&d, &a, L); a.gamma = NULL;
    gn_expect("gamma NULL with affine and diff_src", &d, &a, NULL, 0, NBWD_ERR_NULL_POINTER, 0);
    gn_valid(&d, &a, L); a.gamma = NULL; a.diff_src = NULL;
    gn_expect("gamma NULL without diff_src (not read: valid)", &d, &a, NULL, 0, NBWD_OK, 0);
    gn_valid(&d, &a, L); a.diff_gamma = NULL;
    gn_expect("diff_beta without diff_gamma (each optional: valid)", &d, &a, NULL, 0, NBWD_OK, 0);
    gn_valid(&d, &a, L); a.diff_beta = NULL; a.diff_src = NULL;
    gn_expect("diff_gamma alone (valid)", &d, &a, NULL, 0, NBWD_OK, 0);
    gn_valid(&d, &a, L); d.use_affine = 0; a.gamma = NULL; a.diff_gamma = NULL; a.diff_beta = NULL;
    gn_expect("use_affine 0, diff_src alone, gamma NULL (valid)", &d, &a, NULL, 0, NBWD_OK, 0);
    gn_valid(&d, &a, L); d.use_affine = 0; a.diff_beta = NULL;
    gn_expect("use_affine 0 with diff_gamma", &d, &a, NULL, 0, NBWD_ERR_BAD_PARAM, 0);
    gn_valid(&d, &a, L); d.use_affine = 0; a.diff_gamma = NULL;
    gn_expect("use_affine 0 with diff_beta", &d, &a, NULL, 0, NBWD_ERR_BAD_PARAM, 0);
    gn_valid(&d, &a, L); d.use_affine = 0; a.diff_src = NULL; a.diff_gamma = NULL;
    gn_expect("use_affine 0 with diff_beta alone", &d, &a, NULL, 0, NBWD_ERR_BAD_PARAM, 0);
    gn_valid(&d, &a, L); a.diff_src = NULL; a.diff_gamma = NULL; a.diff_beta = NULL;
    gn_expect("no outputs at all (valid no-op)", &d, &a, NULL, 0, NBWD_OK, 0);
    check_untouched("GN no outputs at all");

    /* groups */
    {
        static const int64_t bad_groups[6] = {0, -1, -4, 3, 8, INT64_MIN};
        for (k = 0; k < 6; ++k) {
            char w[64];
            gn_valid(&d, &a, L);
            d.groups = bad_groups[k];
            snprintf(w, sizeof w, "groups %lld (C = 4)", (long long)bad_groups[k]);
            gn_expect(w, &d, &a, NULL, 0, NBWD_ERR_BAD_PARAM, 1);
            CHECK(strstr(nbwd_last_error(), "groups") != NULL, "%s: the message does not name groups: %s", w,
                  nbwd_last_error());
        }
        gn_valid(&d, &a, L); d.groups = 4; gn_expect("groups = C (InstanceNorm: valid)", &d, &a, NULL, 0, NBWD_OK, 1);
        gn_valid(&d, &a, L); d.groups = 1; gn_expect("groups 1 (valid)", &d, &a, NULL, 0, NBWD_OK, 1);
        gn_valid(&d, &a, L); d.dims[L == NBWD_NCX ? 1 : 2] = 0; d.groups = 3;
        gn_expect("C = 0, groups 3 (0 divides: valid)", &d, &a, NULL, 0, NBWD_OK, 1);
        check_untouched("GN C = 0");
        /* C = 0 allows any groups, but N x groups (the statistics' shape)
           must still fit: the fuzzer found INT64_MAX overflowing there */
        gn_valid(&d, &a, L); d.dims[L == NBWD_NCX ? 1 : 2] = 0; d.groups = INT64_MAX;
        gn_expect("C = 0, groups INT64_MAX (N x groups overflows)", &d, &a, NULL, 0, NBWD_ERR_BAD_PARAM, 1);
        CHECK(strstr(nbwd_last_error(), "groups") != NULL, "C = 0, groups INT64_MAX: the message does not name groups: %s",
              nbwd_last_error());
    }

    /* rank, layout, epsilon, enums, flags, threads */
    {   /* entries past rank are never read: garbage dims there, and stride
           arrays of exactly rank (statistics: 2, parameters: 1) entries on
           the heap, so that an AddressSanitizer build catches a read past them */
        int64_t *sx = (int64_t *)t_xmalloc(3 * sizeof(int64_t)), *sm = (int64_t *)t_xmalloc(2 * sizeof(int64_t));
        int64_t *sp = (int64_t *)t_xmalloc(sizeof(int64_t));
        memcpy(sx, st_pad, 3 * sizeof(int64_t));
        sm[0] = 2; sm[1] = 1; sp[0] = 1;
        gn_valid(&d, &a, L);
        for (k = 3; k < NBWD_MAX_RANK; ++k) d.dims[k] = -7;
        d.src_strides = d.diff_dst_strides = d.diff_src_strides = sx;
        d.mean_strides = d.var_strides = sm;
        d.gamma_strides = d.beta_strides = d.diff_gamma_strides = d.diff_beta_strides = sp;
        a.diff_src = (void *)a.diff_dst; /* in place: the same pointer and strides */
        gn_expect("garbage dims past rank, stride arrays of exactly rank/2/1 entries (valid)", &d, &a, NULL, 0, NBWD_OK, 1);
        free(sx); free(sm); free(sp);
    }
    gn_valid(&d, &a, L); d.rank = 1; gn_expect("rank 1", &d, &a, NULL, 0, NBWD_ERR_BAD_PARAM, 1);
    gn_valid(&d, &a, L); d.rank = 0; gn_expect("rank 0", &d, &a, NULL, 0, NBWD_ERR_BAD_PARAM, 1);
    gn_valid(&d, &a, L); d.rank = NBWD_MAX_RANK + 1;
    gn_expect("rank > NBWD_MAX_RANK", &d, &a, NULL, 0, NBWD_ERR_BAD_PARAM, 1);
    gn_valid(&d, &a, L); d.layout = (nbwd_layout)2; gn_expect("layout 2", &d, &a, NULL, 0, NBWD_ERR_BAD_PARAM, 1);
    gn_valid(&d, &a, L); d.layout = (nbwd_layout)-1; gn_expect("layout -1", &d, &a, NULL, 0, NBWD_ERR_BAD_PARAM, 1);
    gn_valid(&d, &a, L); d.epsilon = 0.0f; gn_expect("epsilon 0", &d, &a, NULL, 0, NBWD_ERR_BAD_PARAM, 1);
    gn_valid(&d, &a, L); d.epsilon = -1e-5f; gn_expect("epsilon -1e-5", &d, &a, NULL, 0, NBWD_ERR_BAD_PARAM, 1);
    gn_valid(&d, &a, L); d.epsilon = (float)NAN; gn_expect("epsilon NaN", &d, &a, NULL, 0, NBWD_ERR_BAD_PARAM, 1);
    gn_valid(&d, &a, L); d.epsilon = (float)INFINITY;
    gn_expect("epsilon +inf", &d, &a, NULL, 0, NBWD_ERR_BAD_PARAM, 1);
    gn_valid(&d, &a, L); d.epsilon = FLT_MIN / 4; gn_expect("epsilon subnormal (valid)", &d, &a, NULL, 0, NBWD_OK, 1);
    gn_valid(&d, &a, L); d.epsilon = 0.0f; d.stats_form = NBWD_STATS_MEAN_RSTD; a.rstd = a.variance;
    a.variance = NULL;
    gn_expect("epsilon 0 with MEAN_RSTD (not read: valid)", &d, &a, NULL, 0, NBWD_OK, 1);
    gn_valid(&d, &a, L); d.stats_form = (nbwd_stats_form)5;
    gn_expect("stats_form 5", &d, &a, NULL, 0, NBWD_ERR_BAD_PARAM, 1);
    gn_valid(&d, &a, L); d.stats_form = (nbwd_stats_form)-1;
    gn_expect("stats_form -1", &d, &a, NULL, 0, NBWD_ERR_BAD_PARAM, 1);
    gn_valid(&d, &a, L); d.flags = NBWD_USE_GLOBAL_STATS;
    gn_expect("flags NBWD_USE_GLOBAL_STATS (BatchNorm's)", &d, &a, NULL, 0, NBWD_ERR_BAD_PARAM, 1);
    gn_valid(&d, &a, L); d.flags = NBWD_FUSE_RELU;
    gn_expect("flags NBWD_FUSE_RELU (BatchNorm's)", &d, &a, NULL, 0, NBWD_ERR_BAD_PARAM, 1);
    gn_valid(&d, &a, L); d.flags = 0x80000000u | NBWD_ACCUMULATE_PARAM_GRADS;
    gn_expect("flags bit 31", &d, &a, NULL, 0, NBWD_ERR_BAD_PARAM, 1);
    gn_valid(&d, &a, L); d.flags = NBWD_ACCUMULATE_PARAM_GRADS;
    gn_expect("flags NBWD_ACCUMULATE_PARAM_GRADS (valid)", &d, &a, NULL, 0, NBWD_OK, 1);
    gn_valid(&d, &a, L); d.flags = NBWD_ACCUMULATE_DIFF_SRC;
    gn_expect("flags NBWD_ACCUMULATE_DIFF_SRC (LayerNorm's)", &d, &a, NULL, 0, NBWD_ERR_BAD_PARAM, 1);
    CHECK(strstr(nbwd_last_error(), "NBWD_ACCUMULATE_DIFF_SRC") != NULL, "message: %s", nbwd_last_error());
    gn_valid(&d, &a, L); d.stats_form = NBWD_STATS_NONE; a.mean = NULL; a.variance = NULL;
    gn_expect("stats_form NONE, src alone (valid)", &d, &a, NULL, 0, NBWD_OK, 1);
    gn_valid(&d, &a, L); d.stats_form = NBWD_STATS_NONE; a.mean = NULL;
    gn_expect("stats_form NONE with a variance", &d, &a, NULL, 0, NBWD_ERR_BAD_PARAM, 0);
    CHECK(strstr(nbwd_last_error(), "args.variance is set") != NULL, "message: %s", nbwd_last_error());
    gn_valid(&d, &a, L); d.num_threads = -1; gn_expect("num_threads -1", &d, &a, NULL, 0, NBWD_ERR_BAD_PARAM, 1);
    gn_valid(&d, &a, L); d.isa = NBWD_ISA_COUNT; gn_expect("isa NBWD_ISA_COUNT", &d, &a, NULL, 0, NBWD_ERR_BAD_PARAM, 1);
    {
        nbwd_isa bad = unsupported_isa();
        if (bad != NBWD_ISA_AUTO) {
            gn_valid(&d, &a, L); d.isa = bad;
            gn_expect("desc.isa not supported here", &d, &a, NULL, 0, NBWD_ERR_UNSUPPORTED, 0);
        }
    }

    /* shapes, dtypes */
    gn_valid(&d, &a, L); d.dims[2] = -1; gn_expect("negative dim", &d, &a, NULL, 0, NBWD_ERR_BAD_SHAPE, 1);
    gn_valid(&d, &a, L); d.dims[0] = (int64_t)1 << 31; d.dims[1] = (int64_t)1 << 31; d.dims[2] = (int64_t)1 << 31;
    gn_expect("dims 2^31 x 2^31 x 2^31 overflows", &d, &a, NULL, 0, NBWD_ERR_BAD_SHAPE, 1);
    gn_valid(&d, &a, L); d.data_dtype = (nbwd_dtype)5;
    gn_expect("data_dtype 5", &d, &a, NULL, 0, NBWD_ERR_BAD_DTYPE, 1);
    for (k = 0; k < 3; ++k) {
        static const nbwd_dtype bad[3][3] = {{NBWD_F32, NBWD_BF16, NBWD_F32},
                                             {NBWD_F16, NBWD_F32, NBWD_BF16},
                                             {NBWD_BF16, NBWD_F16, NBWD_BF16}};
        gn_valid(&d, &a, L);
        d.data_dtype = bad[k][0]; d.stats_dtype = bad[k][1]; d.param_dtype = bad[k][2];
        gn_expect("bad dtype combination", &d, &a, NULL, 0, NBWD_ERR_BAD_DTYPE, 1);
    }

    /* data strides: the spatial dims (NCX) or the channels (NXC) dense */
    gn_valid(&d, &a, L); d.src_strides = st_inner2;
    gn_expect("src block not dense (inner stride 2)", &d, &a, NULL, 0, NBWD_ERR_BAD_STRIDES, 1);
    gn_valid(&d, &a, L); d.diff_dst_strides = st_inner2;
    gn_expect("diff_dst block not dense", &d, &a, NULL, 0, NBWD_ERR_BAD_STRIDES, 1);
    gn_valid(&d, &a, L); d.diff_src_strides = st_inner2;
    gn_expect("diff_src block not dense", &d, &a, NULL, 0, NBWD_ERR_BAD_STRIDES, 1);
    {
        /* rank 4: NCX {2, 4, 3, 5} with the spatial dims 3 x 5 not contiguous
           (row stride 6); NXC {2, 3, 5, 4} with padded spatial rows (valid) */
        int64_t d4n[4] = {2, 4, 3, 5}, d4x[4] = {2, 3, 5, 4}, s4n[4] = {96, 24, 6, 1}, s4x[4] = {90, 30, 6, 1};
        gn_valid(&d, &a, L);
        nbwd_group_norm_bwd_desc_init(&d, 4, L == NBWD_NCX ? d4n : d4x, L, 2, 1e-5f);
        d.isa = g_test_isa;
        d.src_strides = L == NBWD_NCX ? s4n : s4x;
        if (L == NBWD_NCX) gn_expect("NCX spatial dims not one dense block", &d, &a, NULL, 0, NBWD_ERR_BAD_STRIDES, 1);
        else gn_expect("NXC spatial rows padded, channels dense (valid)", &d, &a, NULL, 0, NBWD_OK, 1);
    }
    gn_valid(&d, &a, L); d.src_strides = st_n0;
    gn_expect("src batch stride 0 (input: valid)", &d, &a, NULL, 0, NBWD_OK, 0);
    gn_valid(&d, &a, L); d.diff_src_strides = st_n0;
    gn_expect("diff_src batch stride 0 (self-overlap)", &d, &a, NULL, 0, NBWD_ERR_BAD_STRIDES, 0);
    gn_valid(&d, &a, L); d.diff_src_strides = st_pad; d.src_strides = st_pad; d.diff_dst_strides = st_pad;
    gn_expect("padded outer strides (valid)", &d, &a, NULL, 0, NBWD_OK, 0);
    {
        int64_t st_huge[3];
        memcpy(st_huge, st_pad, sizeof st_huge);
        st_huge[0] = INT64_MAX / 2;
        gn_valid(&d, &a, L); d.diff_dst_strides = st_huge;
        gn_expect("diff_dst batch stride INT64_MAX/2: extent overflows", &d, &a, NULL, 0, NBWD_ERR_BAD_STRIDES, 1);
    }
    /* [N, groups] statistics: two entries each */
    {
        static const int64_t s0[2] = {0, 1}, sT[2] = {1, 2}, sbig[2] = {INT64_MAX / 4, 1}, sneg[2] = {-2, 1};
        gn_valid(&d, &a, L); d.mean_strides = s0;
        gn_expect("mean strides {0, 1} (broadcast over the batch: valid)", &d, &a, NULL, 0, NBWD_OK, 0);
        gn_valid(&d, &a, L); d.var_strides = sT;
        gn_expect("variance strides {1, 2} (stored [groups, N]: valid)", &d, &a, NULL, 0, NBWD_OK, 0);
        gn_valid(&d, &a, L); d.mean_strides = sneg; a.mean = (const float *)a.mean + 2;
        gn_expect("mean strides {-2, 1} (valid)", &d, &a, NULL, 0, NBWD_OK, 0);
        gn_valid(&d, &a, L); d.mean_strides = sbig;
        gn_expect("mean stride INT64_MAX/4: extent overflows", &d, &a, NULL, 0, NBWD_ERR_BAD_STRIDES, 1);
        gn_valid(&d, &a, L); d.var_strides = sbig;
        gn_expect("variance stride INT64_MAX/4: extent overflows", &d, &a, NULL, 0, NBWD_ERR_BAD_STRIDES, 1);
    }
    /* [C] parameters: one entry each */
    {
        static const int64_t c0[1] = {0}, c3[1] = {3}, cneg[1] = {-2}, chuge[1] = {INT64_MAX / 4};
        gn_valid(&d, &a, L); d.diff_gamma_strides = c0;
        gn_expect("diff_gamma stride 0 over 4 channels (self-overlap)", &d, &a, NULL, 0, NBWD_ERR_BAD_STRIDES, 1);
        gn_valid(&d, &a, L); d.diff_beta_strides = c0;
        gn_expect("diff_beta stride 0 (self-overlap)", &d, &a, NULL, 0, NBWD_ERR_BAD_STRIDES, 1);
        gn_valid(&d, &a, L); d.gamma_strides = chuge;
        gn_expect("gamma stride INT64_MAX/4: extent overflows", &d, &a, NULL, 0, NBWD_ERR_BAD_STRIDES, 1);
        gn_valid(&d, &a, L); d.gamma_strides = c0;
        gn_expect("gamma stride 0 (broadcast: valid)", &d, &a, NULL, 0, NBWD_OK, 0);
        gn_valid(&d, &a, L); d.gamma_strides = cneg; a.gamma = (const float *)a.gamma + 6; d.diff_beta_strides = c3;
        gn_expect("gamma stride -2, diff_beta stride 3 (valid)", &d, &a, NULL, 0, NBWD_OK, 0);
        gn_valid(&d, &a, L); d.diff_gamma_strides = c3; a.diff_beta = (char *)a.diff_gamma + 4;
        gn_expect("diff_beta interleaved with diff_gamma (stride 3)", &d, &a, NULL, 0, NBWD_ERR_BAD_ALIAS, 0);
        gn_valid(&d, &a, L); d.diff_gamma_strides = c3; a.diff_gamma = (char *)g_ar[A_DX].base + 4 * 35;
        gn_expect("strided diff_gamma reaching into diff_src", &d, &a, NULL, 0, NBWD_ERR_BAD_ALIAS, 0);
    }

    /* aliasing */
    gn_valid(&d, &a, L); a.diff_src = (char *)g_ar[A_DY].base + 8;
    gn_expect("diff_src = diff_dst + 2 elements", &d, &a, NULL, 0, NBWD_ERR_BAD_ALIAS, 0);
    gn_valid(&d, &a, L); a.diff_src = (void *)a.diff_dst;
    gn_expect("diff_src == diff_dst (in place: valid)", &d, &a, NULL, 0, NBWD_OK, 0);
    gn_valid(&d, &a, L); a.diff_src = (void *)a.src;
    gn_expect("diff_src == src (in place: valid)", &d, &a, NULL, 0, NBWD_OK, 0);
    gn_valid(&d, &a, L); a.diff_src = (void *)a.src; d.src_strides = st_pad;
    gn_expect("diff_src same base as src, other strides", &d, &a, NULL, 0, NBWD_ERR_BAD_ALIAS, 0);
    gn_valid(&d, &a, L); a.diff_src = (void *)a.diff_dst; d.diff_src_strides = st_pad; d.diff_dst_strides = st_pad;
    gn_expect("diff_src == diff_dst, both padded alike (valid)", &d, &a, NULL, 0, NBWD_OK, 0);
    gn_valid(&d, &a, L); a.diff_src = (char *)g_ar[A_V].base - 4 * 38;
    gn_expect("diff_src overlaps variance", &d, &a, NULL, 0, NBWD_ERR_BAD_ALIAS, 0);
    gn_valid(&d, &a, L); a.diff_beta = a.diff_gamma;
    gn_expect("diff_beta == diff_gamma", &d, &a, NULL, 0, NBWD_ERR_BAD_ALIAS, 0);
    gn_valid(&d, &a, L); a.diff_beta = (char *)a.diff_gamma + 12;
    gn_expect("diff_beta overlaps diff_gamma", &d, &a, NULL, 0, NBWD_ERR_BAD_ALIAS, 0);
    gn_valid(&d, &a, L); a.diff_gamma = (void *)a.mean;
    gn_expect("diff_gamma == mean", &d, &a, NULL, 0, NBWD_ERR_BAD_ALIAS, 0);
    gn_valid(&d, &a, L); a.diff_beta = (void *)a.gamma;
    gn_expect("diff_beta == gamma", &d, &a, NULL, 0, NBWD_ERR_BAD_ALIAS, 0);
    gn_valid(&d, &a, L); a.diff_gamma = (char *)g_ar[A_DX].base + 4 * 10;
    gn_expect("diff_gamma inside diff_src", &d, &a, NULL, 0, NBWD_ERR_BAD_ALIAS, 0);
    gn_valid(&d, &a, L); a.diff_src = NULL; a.diff_gamma = (void *)a.gamma;
    gn_expect("diff_gamma == gamma without diff_src (gamma not read: valid)", &d, &a, NULL, 0, NBWD_OK, 0);
    gn_valid(&d, &a, L); a.diff_beta = g_ar[A_B].base; a.beta = g_ar[A_B].base;
    gn_expect("diff_beta == beta outside DST_RSTD (beta not read: valid)", &d, &a, NULL, 0, NBWD_OK, 0);

    /* statistics of another form */
    gn_valid(&d, &a, L); a.rstd = g_ar[A_V].base + 512;
    gn_expect("rstd given with MEAN_VARIANCE", &d, &a, NULL, 0, NBWD_ERR_BAD_PARAM, 0);
    gn_valid(&d, &a, L); a.dst = g_ar[A_DST].base;
    gn_expect("dst given with MEAN_VARIANCE", &d, &a, NULL, 0, NBWD_ERR_BAD_PARAM, 0);
    gn_valid(&d, &a, L); a.xhat = g_ar[A_DST].base;
    gn_expect("xhat given with MEAN_VARIANCE", &d, &a, NULL, 0, NBWD_ERR_BAD_PARAM, 0);
    gn_valid(&d, &a, L); d.stats_form = NBWD_STATS_XHAT_STD; a.std = a.variance; a.variance = NULL;
    a.xhat = a.src; a.src = NULL;
    gn_expect("mean given with XHAT_STD", &d, &a, NULL, 0, NBWD_ERR_BAD_PARAM, 0);
    gn_valid(&d, &a, L); d.stats_form = NBWD_STATS_XHAT_STD; a.std = a.variance; a.variance = NULL; a.mean = NULL;
    a.src = NULL;
    gn_expect("xhat NULL (XHAT_STD)", &d, &a, NULL, 0, NBWD_ERR_NULL_POINTER, 0);
    gn_valid(&d, &a, L); d.stats_form = NBWD_STATS_XHAT_STD; a.xhat = a.src; a.src = NULL; a.mean = NULL;
    a.variance = NULL;
    gn_expect("std NULL (XHAT_STD)", &d, &a, NULL, 0, NBWD_ERR_NULL_POINTER, 0);
    gn_valid(&d, &a, L); d.stats_form = NBWD_STATS_XHAT_STD; a.xhat = a.src; a.src = NULL; a.mean = NULL;
    a.std = a.variance; a.variance = NULL;
    gn_expect("XHAT_STD (valid)", &d, &a, NULL, 0, NBWD_OK, 0);

    /* DST_RSTD: dst, rstd, gamma (diff_src or diff_gamma), beta optional and read */
    gn_valid_dst(&d, &a, L); gn_expect("DST_RSTD (valid)", &d, &a, NULL, 0, NBWD_OK, 1);
    gn_valid_dst(&d, &a, L); a.beta = NULL; gn_expect("DST_RSTD without beta (valid)", &d, &a, NULL, 0, NBWD_OK, 0);
    gn_valid_dst(&d, &a, L); a.dst = NULL; gn_expect("DST_RSTD, dst NULL", &d, &a, NULL, 0, NBWD_ERR_NULL_POINTER, 0);
    gn_valid_dst(&d, &a, L); a.rstd = NULL;
    gn_expect("DST_RSTD, rstd NULL", &d, &a, NULL, 0, NBWD_ERR_NULL_POINTER, 0);
    gn_valid_dst(&d, &a, L); a.src = g_ar[A_X].base;
    gn_expect("DST_RSTD, src given", &d, &a, NULL, 0, NBWD_ERR_BAD_PARAM, 0);
    gn_valid_dst(&d, &a, L); a.mean = g_ar[A_M].base;
    gn_expect("DST_RSTD, mean given", &d, &a, NULL, 0, NBWD_ERR_BAD_PARAM, 0);
    gn_valid_dst(&d, &a, L); a.gamma = NULL; a.diff_src = NULL;
    gn_expect("DST_RSTD, gamma NULL with diff_gamma (xhat needs it)", &d, &a, NULL, 0, NBWD_ERR_NULL_POINTER, 0);
    gn_valid_dst(&d, &a, L); a.gamma = NULL; a.diff_src = NULL; a.diff_gamma = NULL;
    gn_expect("DST_RSTD, gamma NULL with diff_beta alone (valid)", &d, &a, NULL, 0, NBWD_OK, 0);
    gn_valid_dst(&d, &a, L); d.use_affine = 0; a.gamma = NULL; a.beta = NULL; a.diff_gamma = NULL;
    a.diff_beta = NULL;
    gn_expect("DST_RSTD, use_affine 0 (xhat = dst: valid)", &d, &a, NULL, 0, NBWD_OK, 0);
    gn_valid_dst(&d, &a, L); a.diff_src = (void *)a.dst;
    gn_expect("DST_RSTD, diff_src == dst (in place: valid)", &d, &a, NULL, 0, NBWD_OK, 0);
    gn_valid_dst(&d, &a, L); a.diff_beta = (void *)a.beta;
    gn_expect("DST_RSTD, diff_beta == beta (beta read)", &d, &a, NULL, 0, NBWD_ERR_BAD_ALIAS, 0);
    gn_valid_dst(&d, &a, L); a.diff_src = NULL; a.diff_gamma = (void *)a.gamma;
    gn_expect("DST_RSTD, diff_gamma == gamma without diff_src (gamma read)", &d, &a, NULL, 0, NBWD_ERR_BAD_ALIAS, 0);
    gn_valid_dst(&d, &a, L); a.diff_src = (char *)g_ar[A_DST].base + 4;
    gn_expect("DST_RSTD, diff_src = dst + 1 element", &d, &a, NULL, 0, NBWD_ERR_BAD_ALIAS, 0);

    /* workspace */
    gn_valid(&d, &a, L);
    t_case("GN status: workspace query");
    CHECK_STATUS(nbwd_group_norm_bwd_workspace_size(&d, &need), NBWD_OK);
    if (need > 0) {
        unsigned char *ws = (unsigned char *)t_xmalloc(need + 64);
        gn_expect("workspace one byte short", &d, &a, ws, need - 1, NBWD_ERR_INSUFFICIENT_WORKSPACE, 0);
        gn_expect("workspace of 0 bytes (non-NULL)", &d, &a, ws, 0, NBWD_ERR_INSUFFICIENT_WORKSPACE, 0);
        gn_valid(&d, &a, L); a.diff_src = NULL; a.diff_gamma = NULL; a.diff_beta = NULL;
        gn_expect("no outputs, workspace one byte short (checked all the same)", &d, &a, ws, need - 1,
                  NBWD_ERR_INSUFFICIENT_WORKSPACE, 0);
        gn_valid(&d, &a, L);
        gn_expect("workspace exactly the queried size", &d, &a, ws, need, NBWD_OK, 0);
        free(ws);
    }
    gn_valid(&d, &a, L);
    if (need > 0) {
        g_malloc_fail = 1;
        gn_expect("NULL workspace and the allocation fails", &d, &a, NULL, 0, NBWD_ERR_OUT_OF_MEMORY, 0);
        gn_valid(&d, &a, L); a.diff_src = NULL; a.diff_gamma = NULL; a.diff_beta = NULL;
        gn_expect("no outputs: nothing allocated (valid while allocations fail)", &d, &a, NULL, 0, NBWD_OK, 0);
        gn_valid(&d, &a, L); d.dims[0] = 0;
        gn_expect("N = 0: nothing allocated (valid while allocations fail)", &d, &a, NULL, 0, NBWD_OK, 0);
        g_malloc_fail = 0;
    }
    gn_valid(&d, &a, L); d.dims[L == NBWD_NCX ? 2 : 1] = 0;
    t_case("GN status: an empty problem needs no workspace (%s)", L == NBWD_NCX ? "NCX" : "NXC");
    need = 1;
    CHECK_STATUS(nbwd_group_norm_bwd_workspace_size(&d, &need), NBWD_OK);
    CHECK(need == 0, "spatial size 0: the query asks for %lu bytes", (unsigned long)need);
}

/* GroupNorm's documented descriptor defaults. */
static void gn_desc_defaults(void) {
    nbwd_group_norm_bwd_desc g;
    int64_t dims[4] = {2, 6, 3, 3};
    t_case("GN desc_init defaults");
    memset(&g, 0x5a, sizeof g);
    nbwd_group_norm_bwd_desc_init(&g, 4, dims, NBWD_NCX, 3, 0.25f);
    CHECK(g.rank == 4 && g.dims[1] == 6 && g.dims[3] == 3 && g.layout == NBWD_NCX && g.groups == 3 &&
              g.epsilon == 0.25f && g.use_affine == 1,
          "GN desc_init: rank/dims/layout/groups/eps/use_affine");
    CHECK(g.stats_form == NBWD_STATS_MEAN_VARIANCE && g.data_dtype == NBWD_F32 && g.stats_dtype == NBWD_F32 &&
              g.param_dtype == NBWD_F32 && g.flags == 0 && g.num_threads == 0 && g.isa == NBWD_ISA_AUTO &&
              !g.src_strides && !g.diff_dst_strides && !g.diff_src_strides && !g.mean_strides && !g.var_strides &&
              !g.gamma_strides && !g.beta_strides && !g.diff_gamma_strides && !g.diff_beta_strides,
          "GN desc_init: defaults");
}

/* --------------------------------------------------- strings, ISA control */
static void status_strings(void) {
    int i, j;
    t_case("nbwd_status_string");
    for (i = 0; i < (int)NBWD_STATUS_COUNT; ++i) {
        const char *s = nbwd_status_string((nbwd_status)i);
        CHECK(s && s[0], "status %d: empty or NULL string", i);
        for (j = 0; j < i; ++j) {
            const char *o = nbwd_status_string((nbwd_status)j);
            CHECK(!s || !o || strcmp(s, o) != 0, "status %d and %d share the string \"%s\"", i, j, s ? s : "");
        }
    }
    {
        static const int out_of_range[] = {-1, (int)NBWD_STATUS_COUNT, 1000, -1000000};
        for (i = 0; i < 4; ++i) {
            const char *s = nbwd_status_string((nbwd_status)out_of_range[i]);
            CHECK(s && s[0], "status %d (out of range): NULL or empty string", out_of_range[i]);
            for (j = 0; s && j < (int)NBWD_STATUS_COUNT; ++j)
                CHECK(strcmp(s, nbwd_status_string((nbwd_status)j)) != 0,
                      "out-of-range status %d reads like a valid status (\"%s\")", out_of_range[i], s);
        }
    }
    CHECK(NBWD_OK == 0, "NBWD_OK must be 0");
}

static void isa_controls(void) {
    int i;
    nbwd_isa active;
    t_case("ISA controls");
    CHECK(nbwd_isa_supported(NBWD_ISA_SCALAR), "the scalar path must always be supported");
    CHECK(!nbwd_isa_supported(NBWD_ISA_COUNT) && !nbwd_isa_supported((nbwd_isa)-1),
          "out-of-range ISA values must not be supported");
    for (i = 0; i <= NBWD_ISA_COUNT; ++i) {
        const char *n = nbwd_isa_name((nbwd_isa)i);
        CHECK(n && n[0], "nbwd_isa_name(%d) empty", i);
    }
    active = nbwd_active_isa();
    CHECK(nbwd_isa_supported(active), "active ISA %s is not supported", nbwd_isa_name(active));
    for (i = NBWD_ISA_SCALAR; i < NBWD_ISA_COUNT; ++i) {
        nbwd_status s = nbwd_force_isa((nbwd_isa)i);
        if (nbwd_isa_supported((nbwd_isa)i)) {
            CHECK_STATUS(s, NBWD_OK);
            CHECK(nbwd_active_isa() == (nbwd_isa)i, "after nbwd_force_isa(%s) the active ISA is %s",
                  nbwd_isa_name((nbwd_isa)i), nbwd_isa_name(nbwd_active_isa()));
        } else {
            CHECK_STATUS(s, NBWD_ERR_UNSUPPORTED);
        }
    }
    CHECK_STATUS(nbwd_force_isa(NBWD_ISA_AUTO), NBWD_OK);
    CHECK(nbwd_active_isa() == active, "nbwd_force_isa(AUTO) did not restore %s (now %s)", nbwd_isa_name(active),
          nbwd_isa_name(nbwd_active_isa()));
    CHECK_STATUS(nbwd_force_isa((nbwd_isa)NBWD_ISA_COUNT), NBWD_ERR_UNSUPPORTED);
    CHECK(nbwd_active_isa() == active, "a failed nbwd_force_isa changed the active ISA");
}

/* --------------------------------------- caller workspace == NULL workspace */
static void workspace_same_bits(void) {
    static const int64_t ln_shapes[4][2] = {{7, 33}, {300, 64}, {3, 4097}, {2000, 24}};
    int s, k, o;
    t_rng rng;
    t_rng_seed(&rng, 777);
    for (s = 0; s < 4; ++s)
        for (k = 0; k < T_NCOMBOS; k += 4)
            for (o = 0; o < 3; ++o) { /* every output / diff_src only / params only */
                nbwd_layer_norm_bwd_desc d;
                nbwd_layer_norm_bwd_args a;
                t_buf x, dy, m, v, g, dx1, dx2, dg1, dg2, db1, db2;
                int64_t rows = ln_shapes[s][0], n = ln_shapes[s][1], i;
                size_t need = 0;
                unsigned char *ws;
                t_case("LN caller workspace of exactly the queried size vs NULL: %lldx%lld dt=%s outputs=%d",
                       (long long)rows, (long long)n, t_dtype_name(t_combos[k].dt), o);
                t_buf_alloc(&x, 2, ln_shapes[s], NULL, t_combos[k].dt);
                t_buf_alloc(&dy, 2, ln_shapes[s], NULL, t_combos[k].dt);
                t_buf_alloc(&dx1, 2, ln_shapes[s], NULL, t_combos[k].dt);
                t_buf_alloc(&dx2, 2, ln_shapes[s], NULL, t_combos[k].dt);
                t_buf_alloc(&m, 1, &rows, NULL, t_combos[k].sdt);
                t_buf_alloc(&v, 1, &rows, NULL, t_combos[k].sdt);
                t_buf_alloc(&g, 1, &n, NULL, t_combos[k].pdt);
                t_buf_alloc(&dg1, 1, &n, NULL, t_combos[k].pdt);
                t_buf_alloc(&dg2, 1, &n, NULL, t_combos[k].pdt);
                t_buf_alloc(&db1, 1, &n, NULL, t_combos[k].pdt);
                t_buf_alloc(&db2, 1, &n, NULL, t_combos[k].pdt);
                t_buf_fill_normal(&x, &rng, 0.0, 1.0);
                t_buf_fill_normal(&dy, &rng, 0.0, 1.0);
                t_buf_fill_normal(&g, &rng, 1.0, 0.3);
                for (i = 0; i < rows; ++i) { t_buf_set(&m, i, 0.1 * t_rng_normal(&rng)); t_buf_set(&v, i, 0.9); }
                nbwd_layer_norm_bwd_desc_init(&d, 2, ln_shapes[s]);
                d.data_dtype = t_combos[k].dt; d.stats_dtype = t_combos[k].sdt; d.param_dtype = t_combos[k].pdt;
                d.isa = g_test_isa;
                CHECK_STATUS(nbwd_layer_norm_bwd_workspace_size(&d, &need), NBWD_OK);
                ws = (unsigned char *)t_xmalloc(need + 1);
                memset(&a, 0, sizeof a);
                a.src = x.base; a.diff_dst = dy.base; a.mean = m.base; a.variance = v.base; a.gamma = g.base;
                a.diff_src = o != 2 ? dx1.base : NULL;
                a.diff_gamma = o != 1 ? dg1.base : NULL;
                a.diff_beta = o != 1 ? db1.base : NULL;
                CHECK_STATUS(nbwd_layer_norm_bwd(&d, &a, NULL, 0), NBWD_OK);
                a.diff_src = o != 2 ? dx2.base : NULL;
                a.diff_gamma = o != 1 ? dg2.base : NULL;
                a.diff_beta = o != 1 ? db2.base : NULL;
                CHECK_STATUS(nbwd_layer_norm_bwd(&d, &a, ws + 1, need), NBWD_OK); /* odd address, exact size */
                CHECK(t_buf_same_bytes(&dx1, &dx2), "diff_src differs with a caller workspace");
                CHECK(t_buf_same_bytes(&dg1, &dg2) && t_buf_same_bytes(&db1, &db2),
                      "diff_gamma/diff_beta differ with a caller workspace");
                free(ws);
                t_buf_free(&x); t_buf_free(&dy); t_buf_free(&dx1); t_buf_free(&dx2); t_buf_free(&m);
                t_buf_free(&v); t_buf_free(&g); t_buf_free(&dg1); t_buf_free(&dg2); t_buf_free(&db1);
                t_buf_free(&db2);
            }
    for (s = 0; s < 4; ++s) { /* BatchNorm: NCX, NXC, C < and > thread counts */
        static const int64_t bn_shapes[4][4] = {{4, 3, 10, 10}, {4, 10, 10, 3}, {16, 64, 5, 5}, {64, 1, 33, 2}};
        nbwd_layout L = s % 2 ? NBWD_NXC : NBWD_NCX;
        nbwd_batch_norm_bwd_desc d;
        nbwd_batch_norm_bwd_args a;
        t_buf x, dy, m, v, g, dx1, dx2, dg1, dg2, db1, db2;
        int64_t C = L == NBWD_NCX ? bn_shapes[s][1] : bn_shapes[s][3], i;
        size_t need = 0;
        unsigned char *ws;
        t_case("BN caller workspace of exactly the queried size vs NULL: shape %d %s", s, L == NBWD_NCX ? "NCX" : "NXC");
        t_buf_alloc(&x, 4, bn_shapes[s], NULL, NBWD_F32);
        t_buf_alloc(&dy, 4, bn_shapes[s], NULL, NBWD_F32);
        t_buf_alloc(&dx1, 4, bn_shapes[s], NULL, NBWD_F32);
        t_buf_alloc(&dx2, 4, bn_shapes[s], NULL, NBWD_F32);
        t_buf_alloc(&m, 1, &C, NULL, NBWD_F32);
        t_buf_alloc(&v, 1, &C, NULL, NBWD_F32);
        t_buf_alloc(&g, 1, &C, NULL, NBWD_F32);
        t_buf_alloc(&dg1, 1, &C, NULL, NBWD_F32);
        t_buf_alloc(&dg2, 1, &C, NULL, NBWD_F32);
        t_buf_alloc(&db1, 1, &C, NULL, NBWD_F32);
        t_buf_alloc(&db2, 1, &C, NULL, NBWD_F32);
        t_buf_fill_normal(&x, &rng, 0.0, 1.0);
        t_buf_fill_normal(&dy, &rng, 0.0, 1.0);
        for (i = 0; i < C; ++i) {
            t_buf_set(&m, i, 0.1 * t_rng_normal(&rng));
            t_buf_set(&v, i, 1.1);
            t_buf_set(&g, i, 1.0 + 0.2 * t_rng_normal(&rng));
        }
        nbwd_batch_norm_bwd_desc_init(&d, 4, bn_shapes[s], L, 1e-5f);
        d.isa = g_test_isa;
        CHECK_STATUS(nbwd_batch_norm_bwd_workspace_size(&d, &need), NBWD_OK);
        ws = (unsigned char *)t_xmalloc(need + 3);
        memset(&a, 0, sizeof a);
        a.src = x.base; a.diff_dst = dy.base; a.mean = m.base; a.variance = v.base; a.gamma = g.base;
        a.diff_src = dx1.base; a.diff_gamma = dg1.base; a.diff_beta = db1.base;
        CHECK_STATUS(nbwd_batch_norm_bwd(&d, &a, NULL, 0), NBWD_OK);
        a.diff_src = dx2.base; a.diff_gamma = dg2.base; a.diff_beta = db2.base;
        CHECK_STATUS(nbwd_batch_norm_bwd(&d, &a, ws + 3, need), NBWD_OK);
        CHECK(t_buf_same_bytes(&dx1, &dx2) && t_buf_same_bytes(&dg1, &dg2) && t_buf_same_bytes(&db1, &db2),
              "outputs differ with a caller workspace");
        free(ws);
        t_buf_free(&x); t_buf_free(&dy); t_buf_free(&dx1); t_buf_free(&dx2); t_buf_free(&m); t_buf_free(&v);
        t_buf_free(&g); t_buf_free(&dg1); t_buf_free(&dg2); t_buf_free(&db1); t_buf_free(&db2);
    }
}

/* The documented defaults of the descriptor initializers. */
static void desc_defaults(void) {
    nbwd_layer_norm_bwd_desc d;
    nbwd_batch_norm_bwd_desc b;
    int64_t dims[NBWD_MAX_RANK + 2];
    int k, ok = 1;
    for (k = 0; k < NBWD_MAX_RANK + 2; ++k) dims[k] = 100 + k;
    t_case("desc_init defaults");
    memset(&d, 0x5a, sizeof d);
    nbwd_layer_norm_bwd_desc_init(&d, 3, dims);
    CHECK(d.rank == 3 && d.dims[0] == 100 && d.dims[1] == 101 && d.dims[2] == 102, "LN desc_init: rank/dims");
    CHECK(d.begin_norm_axis == -1 && d.use_affine == 1 && d.epsilon == (float)1e-5f, /* (rounded where float runs wider) */
          "LN desc_init: axis %lld affine %d epsilon %g (want -1, 1, 1e-5)", (long long)d.begin_norm_axis, d.use_affine,
          (double)d.epsilon);
    CHECK(d.stats_form == NBWD_STATS_MEAN_VARIANCE && d.data_dtype == NBWD_F32 && d.stats_dtype == NBWD_F32 &&
              d.param_dtype == NBWD_F32 && d.flags == 0 && d.num_threads == 0 && d.isa == NBWD_ISA_AUTO &&
              d.gamma_offset == 0.0f,
          "LN desc_init: form/dtypes/flags/threads/isa/gamma_offset defaults");
    CHECK(!d.src_strides && !d.diff_dst_strides && !d.diff_src_strides && !d.mean_strides && !d.var_strides &&
              !d.gamma_strides && !d.beta_strides && !d.diff_gamma_strides && !d.diff_beta_strides,
          "LN desc_init: strides must default to NULL (dense)");
    memset(&b, 0x5a, sizeof b);
    nbwd_batch_norm_bwd_desc_init(&b, 4, dims, NBWD_NCX, 0.25f);
    CHECK(b.rank == 4 && b.dims[3] == 103 && b.layout == NBWD_NCX && b.epsilon == 0.25f, "BN desc_init: rank/dims/layout/eps");
    CHECK(b.stats_form == NBWD_STATS_MEAN_VARIANCE && b.data_dtype == NBWD_F32 && b.stats_dtype == NBWD_F32 &&
              b.param_dtype == NBWD_F32 && b.flags == 0 && b.num_threads == 0 && b.isa == NBWD_ISA_AUTO &&
              !b.src_strides && !b.diff_dst_strides && !b.diff_src_strides && !b.mean_strides && !b.var_strides &&
              !b.gamma_strides && !b.diff_gamma_strides && !b.diff_beta_strides,
          "BN desc_init: defaults");
    /* oneDNN's default data_format is NXC: the layout a zeroed field holds */
    nbwd_batch_norm_bwd_desc_init(&b, 4, dims, (nbwd_layout)0, 0.25f);
    CHECK(b.layout == NBWD_NXC, "BN desc_init: layout 0 must be NBWD_NXC");
    /* a rank beyond NBWD_MAX_RANK must not write past dims[] (the call then reports BAD_PARAM) */
    {
        struct { nbwd_layer_norm_bwd_desc d; unsigned char guard[64]; } g;
        memset(&g, 0xa5, sizeof g);
        nbwd_layer_norm_bwd_desc_init(&g.d, NBWD_MAX_RANK + 2, dims);
        for (k = 0; k < 64; ++k)
            if (g.guard[k] != 0xa5) ok = 0;
        CHECK(ok, "desc_init with rank > NBWD_MAX_RANK wrote past the descriptor");
    }
}

void test_status(void) {
    int k;
    desc_defaults();
    status_strings();
    isa_controls();
    ln_status_cases();
    bn_status_cases(NBWD_NCX);
    bn_status_cases(NBWD_NXC);
    bn_two_phase_status(NBWD_NCX);
    bn_two_phase_status(NBWD_NXC);
    bn_relu_status_cases(NBWD_NCX);
    bn_relu_status_cases(NBWD_NXC);
    bn_relu_values(NBWD_NCX);
    bn_relu_values(NBWD_NXC);
    bn_relu_two_phase_status(NBWD_NCX);
    bn_relu_two_phase_status(NBWD_NXC);
    gn_desc_defaults();
    gn_status_cases(NBWD_NCX);
    gn_status_cases(NBWD_NXC);
    workspace_same_bits();
    fixture_free();
    for (k = 0; k < A_COUNT; ++k) {
        free(g_in_snap[k]);
        g_in_snap[k] = NULL;
    }
}
