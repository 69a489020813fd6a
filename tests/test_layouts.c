/* test_layouts.c - what the manual promises about strides, aliasing and
   empty problems, on the path under test:
   - the results depend on the shape and the dtypes alone: each tensor of a
     LayerNorm or BatchNorm call in turn (then several at once) is given
     padded, negative, transposed or column-major strides, and every output
     element must keep the bits of the all-dense call (BatchNorm [N, C] with
     a channel stride other than 1 once took another algorithm);
   - an empty problem allocates nothing and touches nothing, however large
     its other dims (it once asked for terabytes of workspace);
   - outputs may interleave with other tensors without sharing a byte; a
     shared byte is still NBWD_ERR_BAD_ALIAS; inputs a call does not read are
     not checked. */
#include "nbwd_test.h"

/* the tensors of one call; LayerNorm's beta is never read and not here */
enum { TX, TDY, TDX, TM, TV, TG, TDG, TDB, NT };
static const char *const k_tname[NT] = {"src",   "diff_dst",   "diff_src",  "mean",
                                        "variance", "gamma", "diff_gamma", "diff_beta"};
static int is_output(int t) { return t == TDX || t == TDG || t == TDB; }

typedef struct prob {
    int bn, rank, axis; /* axis: LayerNorm's begin_norm_axis (>= 1) */
    int64_t dims[NBWD_MAX_RANK];
    nbwd_layout L;
    nbwd_dtype dt, pdt;
} prob;

typedef struct tset { t_buf b[NT]; } tset;

/* Tensor t's dims; returns its rank. */
static int tensor_dims(const prob *p, int t, int64_t *dims) {
    int d, r = 0;
    if (t <= TDX) {
        for (d = 0; d < p->rank; ++d) dims[r++] = p->dims[d];
    } else if (p->bn) {
        dims[r++] = p->dims[p->L == NBWD_NCX ? 1 : p->rank - 1];
    } else if (t <= TV) {
        for (d = 0; d < p->axis; ++d) dims[r++] = p->dims[d];
    } else {
        for (d = p->axis; d < p->rank; ++d) dims[r++] = p->dims[d];
    }
    return r;
}
static nbwd_dtype tensor_dt(const prob *p, int t) { return t <= TDX ? p->dt : t <= TV ? NBWD_F32 : p->pdt; }

/* Every tensor allocated, dense unless st[t] is given; inputs filled from
   `from` (NULL: random from seed). */
static void tset_make(tset *s, const prob *p, const int64_t *const st[NT], const tset *from, uint64_t seed) {
    int64_t dims[NBWD_MAX_RANK], i;
    t_rng rng;
    int t, r;
    t_rng_seed(&rng, seed);
    for (t = 0; t < NT; ++t) {
        r = tensor_dims(p, t, dims);
        t_buf_alloc(&s->b[t], r, dims, st ? st[t] : NULL, tensor_dt(p, t));
        if (is_output(t)) continue;
        if (from) {
            double *v = (double *)t_xmalloc((size_t)(from->b[t].count > 0 ? from->b[t].count : 1) * sizeof(double));
            t_buf_to_dense(&from->b[t], v);
            t_buf_from_dense(&s->b[t], v);
            free(v);
        } else if (t == TV) {
            for (i = 0; i < s->b[t].count; ++i) t_buf_set(&s->b[t], i, 2.0 + t_rng_uniform(&rng, 0.0, 2.0));
        } else {
            t_buf_fill_normal(&s->b[t], &rng, t == TG ? 1.0 : 0.3, t == TG ? 0.4 : 1.0);
        }
    }
}
static void tset_free(tset *s) {
    int t;
    for (t = 0; t < NT; ++t) t_buf_free(&s->b[t]);
}

/* The descriptor and argument fields both operations name alike: dtypes,
   path, every tensor's strides and pointer, from s. */
#define T_POINT_AT(p, s, d, a)                                                                                        \
    do {                                                                                                              \
        (d).data_dtype = (p)->dt; (d).param_dtype = (p)->pdt; (d).isa = g_test_isa;                                   \
        (d).src_strides = (s)->b[TX].strides; (d).diff_dst_strides = (s)->b[TDY].strides;                             \
        (d).diff_src_strides = (s)->b[TDX].strides; (d).mean_strides = (s)->b[TM].strides;                            \
        (d).var_strides = (s)->b[TV].strides; (d).gamma_strides = (s)->b[TG].strides;                                 \
        (d).diff_gamma_strides = (s)->b[TDG].strides; (d).diff_beta_strides = (s)->b[TDB].strides;                    \
        memset(&(a), 0, sizeof(a));                                                                                   \
        (a).src = (s)->b[TX].base; (a).diff_dst = (s)->b[TDY].base; (a).mean = (s)->b[TM].base;                       \
        (a).variance = (s)->b[TV].base; (a).gamma = (s)->b[TG].base; (a).diff_src = (s)->b[TDX].base;                 \
        (a).diff_gamma = (s)->b[TDG].base; (a).diff_beta = (s)->b[TDB].base;                                          \
    } while (0)

static nbwd_status prob_run(const prob *p, tset *s) {
    if (p->bn) {
        nbwd_batch_norm_bwd_desc d;
        nbwd_batch_norm_bwd_args a;
        nbwd_batch_norm_bwd_desc_init(&d, p->rank, p->dims, p->L, 1e-5f);
        T_POINT_AT(p, s, d, a);
        return nbwd_batch_norm_bwd(&d, &a, NULL, 0);
    } else {
        nbwd_layer_norm_bwd_desc d;
        nbwd_layer_norm_bwd_args a;
        nbwd_layer_norm_bwd_desc_init(&d, p->rank, p->dims);
        d.begin_norm_axis = p->axis;
        T_POINT_AT(p, s, d, a);
        return nbwd_layer_norm_bwd(&d, &a, NULL, 0);
    }
}

/* Elements of a and b (same dims, any strides) with the same bytes. */
static int64_t same_elements(const t_buf *a, const t_buf *b) {
    size_t e = t_esize(a->dt);
    int64_t i, same = 0;
    for (i = 0; i < a->count; ++i)
        same += memcmp(a->base + t_buf_offset(a, i) * (int64_t)e, b->base + t_buf_offset(b, i) * (int64_t)e, e) == 0;
    return same;
}

/* The outputs of s against the all-dense call's, element by element. */
static void check_outputs(const tset *ref, const tset *s, const char *what) {
    int t;
    for (t = TDX; t <= TDB; t += (t == TDX ? TDG - TDX : 1)) {
        int64_t same = same_elements(&ref->b[t], &s->b[t]);
        CHECK(same == ref->b[t].count, "%s: %lld of %lld %s elements differ from the dense call's", what,
              (long long)(ref->b[t].count - same), (long long)ref->b[t].count, k_tname[t]);
        CHECK(t_buf_canary_ok(&s->b[t]), "%s: %s wrote outside its elements", what, k_tname[t]);
    }
}

/* Strides for tensor t of kind k; 0 when that kind does not apply.
   k 0: padded (the dense block the layout needs kept; otherwise every dim),
   1: first dim reversed (negative stride), 2: transposed (the first two
   dims swapped: column-major [N, C], or LayerNorm's outer dims), 3: every
   dim strided (BatchNorm [N, C]: also the channels). */
static int kind_strides(const prob *p, int t, int k, int64_t *st) {
    int64_t dims[NBWD_MAX_RANK];
    int r = tensor_dims(p, t, dims), d, dense_from;
    if (t <= TDX)
        dense_from = p->bn ? (p->L == NBWD_NXC ? p->rank - 1 : (p->rank == 2 ? p->rank : 2)) : p->axis;
    else
        dense_from = r; /* statistics and parameters: any strides */
    switch (k) {
    case 0:
        t_padded_strides(r, dims, dense_from, t <= TDX ? 3 : 1, st);
        return 1;
    case 1:
        if (dims[0] < 2 || (is_output(t) && t == TDX)) return 0;
        t_padded_strides(r, dims, r + 1, 0, st); /* dense */
        st[0] = -st[0];
        return 1;
    case 2:
        if (t > TDX) return 0;
        if (p->bn && p->rank == 2) { st[0] = 1; st[1] = dims[0]; return dims[0] > 1 && dims[1] > 1; }
        if (!p->bn && p->axis >= 2) { /* outer dims 0 and 1 swapped, the rest row-major */
            int64_t inner = 1, blk;
            for (d = p->axis; d < r; ++d) inner *= dims[d];
            st[r - 1] = 1;
            for (d = r - 2; d >= p->axis; --d) st[d] = st[d + 1] * dims[d + 1];
            for (d = p->axis - 1; d >= 2; --d) st[d] = d == p->axis - 1 ? inner : st[d + 1] * dims[d + 1];
            blk = p->axis > 2 ? st[2] * dims[2] : inner;
            st[0] = blk;
            st[1] = blk * dims[0];
            return dims[0] > 1 && dims[1] > 1;
        }
        return 0;
    case 3:
        if (!(p->bn && p->rank == 2 && t <= TDX)) return 0;
        t_padded_strides(r, dims, r, 2, st);
        return 1;
    }
    return 0;
}

static void layouts_case(const prob *p, uint64_t seed) {
    tset ref, s;
    int64_t st[NT][NBWD_MAX_RANK];
    const int64_t *pick[NT];
    char what[160];
    int t, k, u;
    t_case("layouts %s rank=%d dims=[%lld,%lld,...] %s dt=%s pdt=%s isa=%s", p->bn ? "BN" : "LN", p->rank,
           (long long)p->dims[0], (long long)p->dims[1],
           p->bn ? (p->L == NBWD_NCX ? "NCX" : "NXC") : (p->axis == p->rank - 1 ? "last axis" : "axis>0"),
           t_dtype_name(p->dt), t_dtype_name(p->pdt), nbwd_isa_name(g_test_isa));
    tset_make(&ref, p, NULL, NULL, seed);
    CHECK_STATUS(prob_run(p, &ref), NBWD_OK);
    /* one tensor at a time */
    for (t = 0; t < NT; ++t)
        for (k = 0; k < 4; ++k) {
            for (u = 0; u < NT; ++u) pick[u] = NULL;
            if (!kind_strides(p, t, k, st[t])) continue;
            pick[t] = st[t];
            tset_make(&s, p, pick, &ref, 0);
            snprintf(what, sizeof what, "%s with strides of kind %d", k_tname[t], k);
            if (CHECK_STATUS(prob_run(p, &s), NBWD_OK)) check_outputs(&ref, &s, what);
            tset_free(&s);
        }
    /* every tensor at once: the most unusual kind each */
    for (t = 0; t < NT; ++t) {
        pick[t] = NULL;
        for (k = 3; k >= 0; --k)
            if (kind_strides(p, t, k, st[t])) { pick[t] = st[t]; break; }
    }
    tset_make(&s, p, pick, &ref, 0);
    if (CHECK_STATUS(prob_run(p, &s), NBWD_OK)) check_outputs(&ref, &s, "every tensor strided");
    tset_free(&s);
    tset_free(&ref);
}

static void layouts_sweep(void) {
    static const struct { nbwd_dtype dt, pdt; } k_types[3] = {
        {NBWD_F32, NBWD_F32}, {NBWD_BF16, NBWD_BF16}, {NBWD_F16, NBWD_F32}};
    static const int64_t bn2[][2] = {{2, 3}, {5, 37}, {70, 19}, {300, 70}, {9, 130}};
    static const int64_t ln2[][2] = {{37, 19}, {130, 64}, {3, 1000}};
    int i, k, l;
    uint64_t seed = 4100;
    prob p;
    for (k = 0; k < 3; ++k) {
        memset(&p, 0, sizeof p);
        p.dt = k_types[k].dt; p.pdt = k_types[k].pdt;
        p.bn = 1;
        for (l = 0; l < 2; ++l) {
            p.L = l ? NBWD_NCX : NBWD_NXC;
            p.rank = 2;
            for (i = 0; i < (int)(sizeof bn2 / sizeof bn2[0]); ++i) {
                p.dims[0] = bn2[i][0]; p.dims[1] = bn2[i][1];
                layouts_case(&p, ++seed);
            }
            p.rank = 4; p.dims[0] = 3; p.dims[1] = l ? 5 : 4; p.dims[2] = 6; p.dims[3] = l ? 7 : 21;
            layouts_case(&p, ++seed);
        }
        p.bn = 0;
        p.rank = 2; p.axis = 1;
        for (i = 0; i < (int)(sizeof ln2 / sizeof ln2[0]); ++i) {
            p.dims[0] = ln2[i][0]; p.dims[1] = ln2[i][1];
            layouts_case(&p, ++seed);
        }
        p.rank = 3; p.dims[0] = 4; p.dims[1] = 6; p.dims[2] = 33;
        p.axis = 2; layouts_case(&p, ++seed); /* outer dims that do not merge when transposed */
        p.axis = 1; layouts_case(&p, ++seed); /* 2-D parameters */
        p.rank = 4; p.dims[0] = 3; p.dims[1] = 5; p.dims[2] = 2; p.dims[3] = 17;
        p.axis = 3; layouts_case(&p, ++seed);
    }
}

/* The case, values and all: diff_src stored column-major must not
   change diff_gamma's bits (it did on the FMA paths). */
static void bn_column_major_dx(void) {
    static const float x[6] = {0.3f, -1.2f, 2.5f, 1.1f, 0.7f, -0.4f}, dy[6] = {0.5f, -0.25f, 0.8f, -0.6f, 0.1f, 0.9f};
    static const float mean[3] = {0.7f, -0.25f, 1.05f}, var[3] = {0.16f, 0.9f, 2.1f};
    static const int64_t dims[2] = {2, 3}, col_major[2] = {1, 2};
    float dx[2][6], dg[2][3], db[2][3];
    nbwd_batch_norm_bwd_desc d;
    nbwd_batch_norm_bwd_args a;
    int k, i, same = 1;
    t_case("BN NCX [2, 3] f32, diff_src column-major: the dense call's bits, isa=%s", nbwd_isa_name(g_test_isa));
    for (k = 0; k < 2; ++k) {
        nbwd_batch_norm_bwd_desc_init(&d, 2, dims, NBWD_NCX, 1e-5f);
        d.isa = g_test_isa;
        if (k) d.diff_src_strides = col_major;
        memset(&a, 0, sizeof a);
        a.src = x; a.diff_dst = dy; a.mean = mean; a.variance = var;
        a.diff_src = dx[k]; a.diff_gamma = dg[k]; a.diff_beta = db[k];
        CHECK_STATUS(nbwd_batch_norm_bwd(&d, &a, NULL, 0), NBWD_OK);
    }
    for (i = 0; i < 3; ++i) same &= !memcmp(&dg[0][i], &dg[1][i], 4) && !memcmp(&db[0][i], &db[1][i], 4);
    CHECK(same, "diff_gamma/diff_beta: %.9g %.9g %.9g dense, %.9g %.9g %.9g with diff_src column-major", dg[0][0],
          dg[0][1], dg[0][2], dg[1][0], dg[1][1], dg[1][2]);
    for (i = 0, same = 1; i < 6; ++i) same &= !memcmp(&dx[0][i], &dx[1][(i % 3) * 2 + i / 3], 4);
    CHECK(same, "diff_src differs from the dense call's");
}

/* ------------------------------------------------------- empty problems */
#define BIG ((int64_t)1 << 40)
static void empty_problems(void) {
    static float small[64]; /* stands in for every tensor: never read, never written */
    static const int64_t g2[1] = {2};
    unsigned char snap[sizeof small];
    int64_t bn_dims[3][4] = {{0, BIG}, {0, BIG}, {0, BIG, 1, 1}};
    int bn_rank[3] = {2, 2, 4};
    nbwd_layout bn_layout[3] = {NBWD_NCX, NBWD_NXC, NBWD_NCX};
    int i, with_dx;
    long allocs0;
    size_t bytes;
    for (i = 0; i < 64; ++i) small[i] = (float)i;
    memcpy(snap, small, sizeof small);
    for (i = 0; i < 3; ++i)
        for (with_dx = 0; with_dx < 2; ++with_dx) {
            nbwd_batch_norm_bwd_desc d;
            nbwd_batch_norm_bwd_args a;
            t_case("empty BN %s rank %d, C = 2^40, diff_src %s, isa=%s", bn_layout[i] == NBWD_NCX ? "NCX" : "NXC",
                   bn_rank[i], with_dx ? "given" : "NULL", nbwd_isa_name(g_test_isa));
            nbwd_batch_norm_bwd_desc_init(&d, bn_rank[i], bn_dims[i], bn_layout[i], 1e-5f);
            d.isa = g_test_isa;
            memset(&a, 0, sizeof a);
            a.mean = small; a.variance = small; /* [C] given, never read */
            if (with_dx) { a.src = small; a.diff_dst = small; a.diff_src = small; }
            CHECK_STATUS(nbwd_batch_norm_bwd_workspace_size(&d, &bytes), NBWD_OK);
            CHECK(bytes <= 64, "the workspace query asks for %zu bytes", bytes);
            allocs0 = t_hook_allocs();
            CHECK_STATUS(nbwd_batch_norm_bwd(&d, &a, NULL, 0), NBWD_OK);
            CHECK(t_hook_allocs() == allocs0, "the call allocated %ld blocks", t_hook_allocs() - allocs0);
            CHECK(!memcmp(snap, small, sizeof small), "the call wrote to a tensor");
        }
    for (i = 0; i < 3; ++i) {
        nbwd_layer_norm_bwd_desc d;
        nbwd_layer_norm_bwd_args a;
        int64_t dims[2] = {0, BIG};
        t_case("empty LN [0, 2^40] %s, diff_src given, isa=%s",
               i == 0 ? "bf16 data and params" : i == 1 ? "f32, gamma stride 2" : "f16 data, f32 params",
               nbwd_isa_name(g_test_isa));
        nbwd_layer_norm_bwd_desc_init(&d, 2, dims);
        d.isa = g_test_isa;
        d.data_dtype = i == 0 ? NBWD_BF16 : i == 1 ? NBWD_F32 : NBWD_F16;
        d.param_dtype = i == 0 ? NBWD_BF16 : NBWD_F32;
        if (i == 1) d.gamma_strides = g2;
        memset(&a, 0, sizeof a);
        a.src = small; a.diff_dst = small; a.mean = small; a.variance = small; a.gamma = small;
        a.diff_src = small;
        CHECK_STATUS(nbwd_layer_norm_bwd_workspace_size(&d, &bytes), NBWD_OK);
        CHECK(bytes <= 64, "the workspace query asks for %zu bytes", bytes);
        allocs0 = t_hook_allocs();
        CHECK_STATUS(nbwd_layer_norm_bwd(&d, &a, NULL, 0), NBWD_OK);
        CHECK(t_hook_allocs() == allocs0, "the call allocated %ld blocks", t_hook_allocs() - allocs0);
        CHECK(!memcmp(snap, small, sizeof small), "the call wrote to a tensor");
    }
    { /* no rows, parameters asked for: zeros, without a workspace */
        nbwd_layer_norm_bwd_desc d;
        nbwd_layer_norm_bwd_args a;
        nbwd_batch_norm_bwd_desc bd;
        nbwd_batch_norm_bwd_args ba;
        int64_t dims[2] = {0, 24}, bdims[3] = {0, 5, 24};
        uint16_t dg16[24], db16[24];
        float dg[24], db[24];
        int zero = 1;
        t_case("LN [0, 24] bf16 parameters and BN NCX [0, 5, 24] f32: zero sums, no workspace, isa=%s",
               nbwd_isa_name(g_test_isa));
        nbwd_layer_norm_bwd_desc_init(&d, 2, dims);
        d.isa = g_test_isa; d.data_dtype = NBWD_BF16; d.param_dtype = NBWD_BF16;
        memset(&a, 0, sizeof a);
        memset(dg16, 0xA5, sizeof dg16); memset(db16, 0xA5, sizeof db16);
        a.gamma = small; a.diff_src = small; a.diff_gamma = dg16; a.diff_beta = db16;
        allocs0 = t_hook_allocs();
        CHECK_STATUS(nbwd_layer_norm_bwd(&d, &a, NULL, 0), NBWD_OK);
        CHECK(t_hook_allocs() == allocs0, "LayerNorm allocated %ld blocks", t_hook_allocs() - allocs0);
        for (i = 0; i < 24; ++i) zero &= dg16[i] == 0 && db16[i] == 0;
        CHECK(zero, "LayerNorm diff_gamma/diff_beta are not all +0");
        nbwd_batch_norm_bwd_desc_init(&bd, 3, bdims, NBWD_NCX, 1e-5f);
        bd.isa = g_test_isa;
        memset(&ba, 0, sizeof ba);
        memset(dg, 0xA5, sizeof dg); memset(db, 0xA5, sizeof db);
        ba.mean = small; ba.variance = small; ba.diff_gamma = dg; ba.diff_beta = db;
        allocs0 = t_hook_allocs();
        CHECK_STATUS(nbwd_batch_norm_bwd(&bd, &ba, NULL, 0), NBWD_OK);
        CHECK(t_hook_allocs() == allocs0, "BatchNorm allocated %ld blocks", t_hook_allocs() - allocs0);
        for (i = 0, zero = 1; i < 5; ++i) zero &= !memcmp(&dg[i], "\0\0\0\0", 4) && !memcmp(&db[i], "\0\0\0\0", 4);
        CHECK(zero, "BatchNorm diff_gamma/diff_beta are not all +0");
        CHECK(!memcmp(snap, small, sizeof small), "a call wrote to a tensor it was not given as an output");
    }
}

/* ------------------------------------------------------------- aliasing */
/* Runs p with tensors placed by hand: outputs `where` (NULL: their own
   buffers) with strides; compares with the dense call's outputs. */
typedef struct placed {
    void *at[NT];            /* base of each tensor, NULL: its own buffer */
    const int64_t *st[NT];   /* its strides, NULL: dense */
} placed;

static nbwd_status run_placed(const prob *p, const tset *ref, const placed *pl, tset *got) {
    int t;
    tset_make(got, p, pl->st, ref, 0);
    for (t = 0; t < NT; ++t) {
        if (!pl->at[t]) continue;
        if (!is_output(t)) { /* copy the input's values to where it is placed */
            int64_t i, e = (int64_t)t_esize(got->b[t].dt);
            for (i = 0; i < got->b[t].count; ++i)
                memcpy((char *)pl->at[t] + t_buf_offset(&got->b[t], i) * e, got->b[t].base + t_buf_offset(&got->b[t], i) * e,
                       (size_t)e);
        }
        got->b[t].base = (char *)pl->at[t];
    }
    return prob_run(p, got);
}
static void aliasing(void) {
    static const int64_t s2[2] = {2, 2}, s4[1] = {4};
    prob p;
    tset ref, got;
    placed pl;
    char *block;
    int k;
    for (k = 0; k < 2; ++k) { /* LayerNorm 6 x 40, BatchNorm NCX [4, 40, 5] */
        int64_t n = 40, esz, pe;
        memset(&p, 0, sizeof p);
        p.bn = k; p.dt = NBWD_BF16; p.pdt = k ? NBWD_F32 : NBWD_BF16;
        p.rank = k ? 3 : 2; p.axis = 1; p.L = NBWD_NCX;
        p.dims[0] = k ? 4 : 6; p.dims[1] = 40; p.dims[2] = 5;
        esz = 2; pe = (int64_t)t_esize(p.pdt);
        tset_make(&ref, &p, NULL, NULL, 77 + (uint64_t)k);
        CHECK_STATUS(prob_run(&p, &ref), NBWD_OK);

        t_case("%s: diff_gamma and diff_beta interleaved (stride 2, p and p + 1), isa=%s", k ? "BN" : "LN",
               nbwd_isa_name(g_test_isa));
        block = (char *)t_xmalloc((size_t)(2 * n * pe));
        memset(&pl, 0, sizeof pl);
        pl.at[TDG] = block; pl.at[TDB] = block + pe; pl.st[TDG] = pl.st[TDB] = s2;
        if (CHECK_STATUS(run_placed(&p, &ref, &pl, &got), NBWD_OK)) {
            CHECK(same_elements(&ref.b[TDG], &got.b[TDG]) == n && same_elements(&ref.b[TDB], &got.b[TDB]) == n,
                  "the interleaved parameter gradients differ from the dense call's");
        }
        tset_free(&got);
        free(block);

        t_case("%s: diff_beta one element after diff_gamma, stride 2 (shared elements), isa=%s", k ? "BN" : "LN",
               nbwd_isa_name(g_test_isa));
        block = (char *)t_xmalloc((size_t)(2 * n * pe + 64));
        memset(&pl, 0, sizeof pl);
        pl.at[TDG] = block; pl.at[TDB] = block + 2 * pe; pl.st[TDG] = pl.st[TDB] = s2;
        CHECK_STATUS(run_placed(&p, &ref, &pl, &got), NBWD_ERR_BAD_ALIAS);
        tset_free(&got);
        pl.at[TDB] = block + 1; /* half an element apart: bytes shared */
        CHECK_STATUS(run_placed(&p, &ref, &pl, &got), NBWD_ERR_BAD_ALIAS);
        tset_free(&got);
        pl.at[TDB] = block + pe; pl.st[TDB] = s4; /* disjoint, but not the same layout: extents compared */
        CHECK_STATUS(run_placed(&p, &ref, &pl, &got), NBWD_ERR_BAD_ALIAS);
        tset_free(&got);
        free(block);

        t_case("%s: diff_src rows (planes) between diff_dst's, isa=%s", k ? "BN" : "LN", nbwd_isa_name(g_test_isa));
        {
            int64_t st[3], count = ref.b[TDX].count;
            block = (char *)t_xmalloc((size_t)(2 * count * esz));
            if (k) { st[0] = 2 * 40 * 5; st[1] = 5; st[2] = 1; } else { st[0] = 2 * 40; st[1] = 1; }
            memset(&pl, 0, sizeof pl);
            /* BatchNorm NCX: diff_src's planes sit between diff_dst's, one
               image of each in turn; LayerNorm: row by row */
            pl.at[TDY] = block; pl.at[TDX] = block + (k ? 40 * 5 : 40) * esz; pl.st[TDY] = pl.st[TDX] = st;
            if (CHECK_STATUS(run_placed(&p, &ref, &pl, &got), NBWD_OK))
                CHECK(same_elements(&ref.b[TDX], &got.b[TDX]) == count &&
                          same_elements(&ref.b[TDG], &got.b[TDG]) == n,
                      "the interleaved call's outputs differ from the dense call's");
            tset_free(&got);
            pl.at[TDX] = block + esz; /* one element on: shared */
            CHECK_STATUS(run_placed(&p, &ref, &pl, &got), NBWD_ERR_BAD_ALIAS);
            tset_free(&got);
            free(block);
        }

        t_case("%s: gamma overlapping an output when gamma is not read, isa=%s", k ? "BN" : "LN",
               nbwd_isa_name(g_test_isa));
        memset(&pl, 0, sizeof pl);
        tset_make(&got, &p, NULL, &ref, 0);
        if (k) { /* BatchNorm: gamma ignored without diff_gamma/diff_beta; gamma over diff_src */
            nbwd_batch_norm_bwd_desc d;
            nbwd_batch_norm_bwd_args a;
            nbwd_batch_norm_bwd_desc_init(&d, p.rank, p.dims, NBWD_NCX, 1e-5f);
            d.isa = g_test_isa; d.data_dtype = p.dt; d.param_dtype = p.pdt;
            memset(&a, 0, sizeof a);
            a.src = got.b[TX].base; a.diff_dst = got.b[TDY].base; a.mean = got.b[TM].base;
            a.variance = got.b[TV].base; a.diff_src = ref.b[TDX].base; /* the same call without gamma */
            CHECK_STATUS(nbwd_batch_norm_bwd(&d, &a, NULL, 0), NBWD_OK);
            a.diff_src = got.b[TDX].base; a.gamma = got.b[TDX].base;
            CHECK_STATUS(nbwd_batch_norm_bwd(&d, &a, NULL, 0), NBWD_OK);
            CHECK(same_elements(&ref.b[TDX], &got.b[TDX]) == ref.b[TDX].count,
                  "diff_src differs from the call without gamma (gamma must be ignored)");
            a.diff_gamma = got.b[TDG].base; a.diff_beta = got.b[TDB].base;
            CHECK_STATUS(nbwd_batch_norm_bwd(&d, &a, NULL, 0), NBWD_ERR_BAD_ALIAS);
        } else { /* LayerNorm: gamma unread without diff_src, beta never read */
            nbwd_layer_norm_bwd_desc d;
            nbwd_layer_norm_bwd_args a;
            nbwd_layer_norm_bwd_desc_init(&d, p.rank, p.dims);
            d.isa = g_test_isa; d.data_dtype = p.dt; d.param_dtype = p.pdt;
            memset(&a, 0, sizeof a);
            a.src = got.b[TX].base; a.diff_dst = got.b[TDY].base; a.mean = got.b[TM].base;
            a.variance = got.b[TV].base; a.gamma = got.b[TDG].base; a.beta = got.b[TDB].base;
            a.diff_gamma = got.b[TDG].base; a.diff_beta = got.b[TDB].base;
            CHECK_STATUS(nbwd_layer_norm_bwd(&d, &a, NULL, 0), NBWD_OK);
            CHECK(same_elements(&ref.b[TDG], &got.b[TDG]) == n && same_elements(&ref.b[TDB], &got.b[TDB]) == n,
                  "diff_gamma/diff_beta differ from the dense call's");
            a.diff_src = got.b[TDX].base; /* now gamma is read: the overlap is refused */
            CHECK_STATUS(nbwd_layer_norm_bwd(&d, &a, NULL, 0), NBWD_ERR_BAD_ALIAS);
        }
        tset_free(&got);
        tset_free(&ref);
    }
}

void test_layouts(void) {
    layouts_sweep();
    bn_column_major_dx();
    empty_problems();
    aliasing();
}
