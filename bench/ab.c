/* bench/ab.c - A/B of two builds of norm_bwd in one process: the same
   problems, the same buffers, calls interleaved, so that machine noise hits
   both builds alike.

   Build (bench.mk: make bench-ab AB_OLD=<git revision> [AB_BUILD=...]):
   each side's norm_bwd.h and norm_bwd_simd.h compiled into a shared object
   of its own (bench/ab_lib.c), loaded here with dlopen. AB_BUILD picks the
   builds (tools/ab_ports.sh): native, emu (NORM_BWD_SIMD_EMULATE: avx2,
   avx512, avx512_bf16 and neon through SIMDe), aarch64 (qemu-aarch64, cpu
   max: scalar, sse through SIMDe, neon, neon_bf16) and armhf (qemu-arm:
   scalar, neon); native and emu also with a 16 KiB non-temporal threshold.

   Run:  nbwd_ab OLD.so NEW.so compare [--quick] [--isa LIST]
                                                 every case of a broad sweep,
                                                 on every path both can run
                                                 (or those of LIST: names,
                                                 comma-separated): every
                                                 output (and input) must be
                                                 the same bytes, and every
                                                 status the same
         nbwd_ab OLD.so NEW.so time [--isa NAME] [--threads N] [--rounds R]
                 [--calls C] [--shapes LIST] [--dtype f32|bf16|f16]
                 [--param-dtype f32|bf16|f16] [--stats-dtype f32|bf16|f16]
                                                 per round, C calls of each
                                                 build (the order alternates
                                                 per round), median per build;
                                                 prints the median of the
                                                 rounds' medians and new/old.

   The compare sweep, per path (f32, f16 and bf16 data each; stats and
   params f32 or the data's type; 1 and 2 threads; optional outputs on and
   off; NaN, infinities and denormals in some cases):
     ln, rms        LayerNorm / RMSNorm rows, 42 widths x 7 row counts (up
                    to 300000 elements), every statistics form (the
                    NONE form too), affine on and off, accumulate (the
                    parameters; diff_src with NBWD_ACCUMULATE_DIFF_SRC)
     ln-res, rms-res  the residual gradient (own tensor, and diff_src in
                    place), gamma_offset
     ln-dst, rms-dst  NBWD_STATS_DST_RSTD (dst, rstd, gamma, beta or none,
                    gamma_offset, zero and subnormal scales, no affine)
     ln-strided, rms-strided  padded rows, negative outer strides, strided
                    statistics and parameters (normalized over 1 or 2 dims)
     bn             BatchNorm NCX and NXC, 8 shapes (the sweep of old)
     bn-frozen      NBWD_USE_GLOBAL_STATS with and without diff_gamma/beta
     bn-relu, bn-add-relu  NBWD_FUSE_RELU, NBWD_FUSE_ADD_RELU (args.dst with
                    zeros, -0 and negatives; diff_src_add compared too)
     bn-acc         NBWD_ACCUMULATE_PARAM_GRADS and 16-bit params/stats
     bn-2phase      nbwd_batch_norm_bwd_reduce + _apply (the sums and the
                    count compared, then apply's outputs), with the flags
     bn-strided     padded and negative strides on the data, strided [C]
     bn-nc-tiles    BatchNorm [N, C] with channels not dense (column-major:
                    the tile path)
     gn-ncx, gn-nxc GroupNorm / InstanceNorm, 9 shapes (C 1..64, spatial 1
                    to 40000: a plane over 32768 elements), groups 1, 2,
                    C/2 and C, all four forms (DST_RSTD with and without
                    beta), affine on and off, each optional output, gammas
                    that cannot be folded (0, subnormal, huge, infinite),
                    strided data and statistics, accumulate
     convert        nbwd_f32_to_bf16_n, _to_f16_n and back, on the path set
                    with nbwd_force_isa: lengths 1..70 and 9 larger, at two
                    alignments, NaN payloads (quiet and signalling),
                    infinities, denormals, rounding ties and overflow
   BatchNorm beyond "bn": 8 shapes (rank 2 to 4, C up to 64, a plane of
   40000), both layouts, 17 variants of flags, forms, strides and phases.
   A path takes 21470 cases (--quick, for the qemu builds: 5700, with
   fewer widths, row counts and shapes). The compare runs libgomp's workers
   with OMP_WAIT_POLICY=passive unless set (spinning ones took a core from
   the serial work between the 2-thread calls).
   What an older build lacks (RMSNorm, GroupNorm, the two-phase calls,
   nbwd_force_isa: dlsym; DST_RSTD, the residual, gamma_offset, the
   BatchNorm flags: a small probe call) is left out of the sweep, and the
   skipped cases are counted per kind. The structs here are the working
   tree's: an older build reads only its own fields (desc_init sets them,
   the cases the ones they use), and strided BatchNorm cases need the
   descriptor layout of the fused ReLU's commit (926a42c put dst_strides
   in the middle). The report: per path a line with its cases and time;
   a DIFF line per differing case (the first 40: which tensors, or the two
   statuses); the cases that differ per (path, dtype) and, in a table per
   kind, the cases, those that differ, those both builds refused (which test
   nothing) and those skipped; last "N cases, N differ".

   Shapes for time, as nbwd_bench's: ln:RxN, rms:RxN, ln-res:RxN and
   rms-res:RxN (a residual gradient added to diff_src), ln-none:RxN and
   rms-none:RxN (NBWD_STATS_NONE, no gamma, diff_src alone), bn-ncx:NxCxHxW
   and bn-nxc:NxCxHxW, gn-ncx:NxCxHxW/G and gn-nxc:... (gn-nxc-none:... for
   NBWD_STATS_NONE). */
#define _POSIX_C_SOURCE 200809L
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "norm_bwd.h"
#include "bench_util.h"

/* What a build may lack: the later features. */
enum {
    F_RMS = 1 << 0,
    F_GN = 1 << 1,
    F_TWO_PHASE = 1 << 2,
    F_RESIDUAL = 1 << 3,
    F_DST_RSTD = 1 << 4,
    F_GAMMA_OFFSET = 1 << 5,
    F_FROZEN = 1 << 6,
    F_RELU = 1 << 7,
    F_ADD_RELU = 1 << 8,
    F_FORCE_ISA = 1 << 9,
    F_BN_LAYOUT = 1 << 10, /* the BatchNorm descriptor with dst_strides (926a42c): strided BatchNorm */
    F_STATS_NONE = 1 << 11,
    F_ACCUMULATE_DX = 1 << 12,
    F_COUNT = 13
};
static const char *const feature_names[F_COUNT] = {
    "RMSNorm", "GroupNorm", "the two-phase BatchNorm (reduce/apply)", "the residual gradient",
    "NBWD_STATS_DST_RSTD", "gamma_offset", "NBWD_USE_GLOBAL_STATS", "NBWD_FUSE_RELU", "NBWD_FUSE_ADD_RELU",
    "nbwd_force_isa", "BatchNorm's descriptor with dst_strides (strided BatchNorm cases need its layout)",
    "NBWD_STATS_NONE", "NBWD_ACCUMULATE_DIFF_SRC"};

typedef struct lib {
    void *h;
    const char *path;
    nbwd_status (*ln)(const nbwd_layer_norm_bwd_desc *, const nbwd_layer_norm_bwd_args *, void *, size_t);
    void (*ln_init)(nbwd_layer_norm_bwd_desc *, int, const int64_t *);
    nbwd_status (*bn)(const nbwd_batch_norm_bwd_desc *, const nbwd_batch_norm_bwd_args *, void *, size_t);
    void (*bn_init)(nbwd_batch_norm_bwd_desc *, int, const int64_t *, nbwd_layout, float);
    nbwd_status (*rms)(const nbwd_rms_norm_bwd_desc *, const nbwd_rms_norm_bwd_args *, void *, size_t); /* or NULL */
    void (*rms_init)(nbwd_rms_norm_bwd_desc *, int, const int64_t *);
    nbwd_status (*gn)(const nbwd_group_norm_bwd_desc *, const nbwd_group_norm_bwd_args *, void *, size_t); /* or NULL */
    void (*gn_init)(nbwd_group_norm_bwd_desc *, int, const int64_t *, nbwd_layout, int64_t, float);
    nbwd_status (*bn_reduce)(const nbwd_batch_norm_bwd_desc *, const nbwd_batch_norm_bwd_args *, float *, float *,
                             int64_t *, void *, size_t); /* or NULL */
    nbwd_status (*bn_apply)(const nbwd_batch_norm_bwd_desc *, const nbwd_batch_norm_bwd_args *, const float *,
                            const float *, int64_t, void *, size_t);
    int (*supported)(nbwd_isa);
    nbwd_status (*force)(nbwd_isa); /* or NULL */
    void (*to_bf16_n)(const float *, uint16_t *, int64_t);
    void (*to_f16_n)(const float *, uint16_t *, int64_t);
    void (*from_bf16_n)(const uint16_t *, float *, int64_t);
    void (*from_f16_n)(const uint16_t *, float *, int64_t);
    unsigned feat; /* F_* */
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
    memset(l, 0, sizeof *l);
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
    *(void **)&l->gn = dlsym(l->h, "nbwd_group_norm_bwd");
    *(void **)&l->gn_init = dlsym(l->h, "nbwd_group_norm_bwd_desc_init");
    if (!l->gn_init) l->gn = NULL;
    *(void **)&l->bn_reduce = dlsym(l->h, "nbwd_batch_norm_bwd_reduce");
    *(void **)&l->bn_apply = dlsym(l->h, "nbwd_batch_norm_bwd_apply");
    if (!l->bn_apply) l->bn_reduce = NULL;
    *(void **)&l->supported = sym(l, "nbwd_isa_supported");
    *(void **)&l->force = dlsym(l->h, "nbwd_force_isa");
    *(void **)&l->to_bf16_n = sym(l, "nbwd_f32_to_bf16_n");
    *(void **)&l->to_f16_n = sym(l, "nbwd_f32_to_f16_n");
    *(void **)&l->from_bf16_n = sym(l, "nbwd_bf16_to_f32_n");
    *(void **)&l->from_f16_n = sym(l, "nbwd_f16_to_f32_n");
}

static const char *const isa_names[NBWD_ISA_COUNT] = {"auto", "scalar", "sse",         "avx2",
                                                      "avx512", "neon", "avx512_bf16", "neon_bf16"};
static const char *const dt_names[3] = {"f32", "f16", "bf16"}; /* NBWD_F32, NBWD_F16, NBWD_BF16 */

/* ------------------------------------------------------------ values */
static uint64_t g_rng = 0x9e3779b97f4a7c15ull;
static uint64_t rnd64(void) {
    uint64_t z = (g_rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static double rnd(void) { return (double)(rnd64() >> 11) / 4503599627370496.0 - 1.0; } /* [-1, 1) */
static size_t esz(int dt) { return dt == NBWD_F32 ? 4 : 2; }
static float f32_of(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}
static uint32_t u32_of(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}
/* f32 -> bf16 / f16 bits, round to nearest even, NaN kept quiet (the
   inputs' generator: any value, specials included) */
static uint16_t to_bf16(float f) {
    uint32_t u = u32_of(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u);
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
static uint16_t to_f16(float f) {
    uint32_t u = u32_of(f), a = u & 0x7fffffffu;
    uint16_t s = (uint16_t)((u >> 16) & 0x8000u);
    if (a > 0x7f800000u) return (uint16_t)(s | 0x7e00u | ((a >> 13) & 0x3ffu));
    if (a >= 0x477ff000u) return (uint16_t)(s | 0x7c00u); /* 65520 and up: infinity */
    if (a >= 0x38800000u) {                                /* normal: rebias the exponent, round */
        uint32_t r = a - 0x38000000u;
        r += 0xfffu + ((r >> 13) & 1u);
        return (uint16_t)(s | (r >> 13));
    }
    return (uint16_t)(s | (uint16_t)lrintf(f32_of(a) * 16777216.0f)); /* subnormal: units of 2^-24 */
}
static void put(void *p, int dt, size_t i, float v) {
    if (dt == NBWD_F32) ((float *)p)[i] = v;
    else ((uint16_t *)p)[i] = dt == NBWD_BF16 ? to_bf16(v) : to_f16(v);
}
/* n values of dtype dt, |v - shift| <= scale */
static void fill(void *p, int dt, size_t n, double scale, double shift) {
    size_t i;
    for (i = 0; i < n; ++i) put(p, dt, i, (float)(rnd() * scale + shift));
}
enum { SP_NAN, SP_INF, SP_NEG_INF, SP_DENORMAL, SP_NEG_ZERO };
static void put_special(void *p, int dt, size_t i, int which) { /* exact bit patterns per dtype */
    static const uint32_t f32[] = {0x7fc12345u, 0x7f800000u, 0xff800000u, 0x00000123u, 0x80000000u};
    static const uint16_t bf16[] = {0x7fc3u, 0x7f80u, 0xff80u, 0x0012u, 0x8000u};
    static const uint16_t f16[] = {0x7e05u, 0x7c00u, 0xfc00u, 0x0012u, 0x8000u};
    if (dt == NBWD_F32) ((float *)p)[i] = f32_of(f32[which]);
    else ((uint16_t *)p)[i] = dt == NBWD_BF16 ? bf16[which] : f16[which];
}

/* ---------------------------------------------------------------- problems */
enum op { OP_LN, OP_RMS, OP_BN, OP_BN2 /* reduce + apply */, OP_GN };
enum kind {
    K_LN, K_LN_RES, K_LN_DST, K_LN_STRIDED, K_RMS, K_RMS_RES, K_RMS_DST, K_RMS_STRIDED, K_BN, K_BN_FROZEN,
    K_BN_RELU, K_BN_ADD_RELU, K_BN_ACC, K_BN_TWO_PHASE, K_BN_STRIDED, K_BN_NC_TILES, K_GN_NCX, K_GN_NXC,
    K_CONVERT, K_COUNT
};
static const char *const kind_names[K_COUNT] = {
    "ln",     "ln-res",      "ln-dst",    "ln-strided", "rms",         "rms-res",    "rms-dst",
    "rms-strided", "bn",     "bn-frozen", "bn-relu",    "bn-add-relu", "bn-acc",     "bn-2phase",
    "bn-strided", "bn-nc-tiles", "gn-ncx", "gn-nxc",     "convert"};

typedef struct problem {
    int op, layout, rank, dt, sdt, pdt, form, affine, accumulate, threads, isa;
    int want_dx, want_dg, want_db;
    int special;       /* NaN, infinities, denormals, -0 in the data (and a NaN statistic) */
    int special_gamma; /* gammas of 0, subnormal, huge, infinite (the unfoldable, DST_RSTD's zero scale) */
    int res;           /* LN/RMS residual: 1 its own tensor, 2 diff_src itself (accumulated in place) */
    int beta;          /* DST_RSTD: a beta */
    float gamma_offset;
    unsigned flags;    /* BN: NBWD_USE_GLOBAL_STATS, NBWD_FUSE_RELU, NBWD_FUSE_ADD_RELU */
    int strided;       /* 1 padded rows and strided [C]/stats, 2 also negative outer strides on outputs,
                          3 BatchNorm [N, C] column-major (the tile path) */
    int extra_count;   /* BN2: added to reduce's count before apply (a bigger global batch) */
    int64_t dims[NBWD_MAX_RANK];
    int64_t axis;
    int64_t groups;
} problem;

static unsigned needs(const problem *p) {
    unsigned f = 0;
    if (p->op == OP_RMS) f |= F_RMS;
    if (p->op == OP_GN) f |= F_GN;
    if (p->op == OP_BN2) f |= F_TWO_PHASE;
    if (p->res) f |= F_RESIDUAL;
    if ((p->op == OP_LN || p->op == OP_RMS) && p->form == NBWD_STATS_DST_RSTD) f |= F_DST_RSTD;
    if (p->gamma_offset != 0.0f) f |= F_GAMMA_OFFSET;
    if (p->flags & NBWD_USE_GLOBAL_STATS) f |= F_FROZEN;
    if (p->flags & NBWD_FUSE_RELU) f |= F_RELU;
    if (p->flags & NBWD_FUSE_ADD_RELU) f |= F_ADD_RELU;
    if ((p->op == OP_BN || p->op == OP_BN2) && p->strided) f |= F_BN_LAYOUT;
    if ((p->op == OP_LN || p->op == OP_RMS) && p->form == NBWD_STATS_NONE) f |= F_STATS_NONE;
    if ((p->op == OP_LN || p->op == OP_RMS) && (p->flags & NBWD_ACCUMULATE_DIFF_SRC)) f |= F_ACCUMULATE_DX;
    return f;
}
static int kind_of(const problem *p) {
    switch (p->op) {
    case OP_LN:
    case OP_RMS: {
        int k = p->strided ? K_LN_STRIDED : p->form == NBWD_STATS_DST_RSTD ? K_LN_DST : p->res ? K_LN_RES : K_LN;
        return p->op == OP_RMS ? k + (K_RMS - K_LN) : k;
    }
    case OP_BN2: return K_BN_TWO_PHASE;
    case OP_GN: return p->layout == NBWD_NCX ? K_GN_NCX : K_GN_NXC;
    default:
        if (p->strided == 3) return K_BN_NC_TILES;
        if (p->strided) return K_BN_STRIDED;
        if (p->flags & NBWD_FUSE_ADD_RELU) return K_BN_ADD_RELU;
        if (p->flags & NBWD_FUSE_RELU) return K_BN_RELU;
        if (p->flags & NBWD_USE_GLOBAL_STATS) return K_BN_FROZEN;
        if (p->accumulate || p->pdt || p->sdt) return K_BN_ACC;
        return K_BN;
    }
}

/* The tensors of a call. Each is one allocation, compared whole (strided
   ones with their padding); base is element 0. */
enum { T_X, T_DY, T_DX, T_RES, T_RDST, T_DSA, T_MEAN, T_VAR, T_GAMMA, T_BETA, T_DG, T_DB, T_SDY, T_SDYX, T_N };
static const char *const tensor_names[T_N] = {"x",     "dy",   "dx", "res", "dst",    "dsa",     "mean",
                                              "var",   "gamma", "beta", "dg", "db", "sum_dy", "sum_dy_xhat"};
typedef struct tensor {
    char *mem, *base;
    size_t bytes;
    int has_st;
    int64_t st[NBWD_MAX_RANK];
} tensor;
typedef struct buffers {
    tensor t[T_N];
    int64_t count; /* BN2: reduce's count */
} buffers;

static int64_t axis_of(const problem *p) { return p->axis < 0 ? p->axis + p->rank : p->axis; }
static int64_t channels(const problem *p) { return p->layout == NBWD_NXC ? p->dims[p->rank - 1] : p->dims[1]; }

/* dense row-major strides of dims, times mult */
static void dense_strides(int rank, const int64_t *dims, int64_t mult, int64_t *st) {
    int64_t span = 1;
    int d;
    for (d = rank - 1; d >= 0; --d) {
        st[d] = span * mult;
        span *= dims[d];
    }
}
/* data strides: dims [dense_from, rank) dense, each outer dim padded by pad
   elements beyond the inner ones; neg: the outermost dim runs backwards */
static void padded_strides(int rank, const int64_t *dims, int dense_from, int64_t pad, int neg, int64_t *st) {
    int64_t inner = 1;
    int d;
    for (d = rank - 1; d >= dense_from; --d) {
        st[d] = inner;
        inner *= dims[d];
    }
    for (d = dense_from - 1; d >= 0; --d) {
        st[d] = inner + pad;
        inner = st[d] * dims[d];
    }
    if (neg && dense_from > 0) st[0] = -st[0];
}
/* one tensor of rank dims (strides st, or NULL: dense), esize bytes each,
   skew elements of slack before element 0 (a misaligned base) */
static void tensor_alloc(tensor *t, int rank, const int64_t *dims, const int64_t *st, size_t esize, int skew) {
    int64_t lo = 0, hi = 0, n = 1;
    int d;
    for (d = 0; d < rank; ++d) n *= dims[d];
    if (st && n > 0)
        for (d = 0; d < rank; ++d) {
            int64_t e = (dims[d] - 1) * st[d];
            if (e < 0) lo += e;
            else hi += e;
        }
    else hi = n > 0 ? n - 1 : 0;
    t->has_st = st != NULL;
    if (st) memcpy(t->st, st, (size_t)rank * sizeof st[0]);
    t->bytes = (size_t)(hi - lo + 1 + skew) * esize;
    t->mem = (char *)xalloc(t->bytes);
    t->base = t->mem + (size_t)(skew - lo) * esize;
}

/* Every tensor of problem p, filled. */
static void make_buffers(const problem *p, buffers *b) {
    int64_t sdims[NBWD_MAX_RANK], pdims[NBWD_MAX_RANK], st[NBWD_MAX_RANK], C = 0;
    int srank, prank, dense_from, rows = p->op == OP_LN || p->op == OP_RMS;
    size_t i;
    memset(b, 0, sizeof *b);
    if (rows) {
        int64_t axis = axis_of(p);
        srank = (int)axis;
        memcpy(sdims, p->dims, (size_t)axis * sizeof sdims[0]);
        prank = p->rank - (int)axis;
        memcpy(pdims, p->dims + axis, (size_t)prank * sizeof pdims[0]);
        dense_from = (int)axis;
    } else {
        C = channels(p);
        prank = 1;
        pdims[0] = C;
        if (p->op == OP_GN) {
            srank = 2;
            sdims[0] = p->dims[0];
            sdims[1] = p->groups;
        } else {
            srank = 1;
            sdims[0] = C;
        }
        dense_from = p->layout == NBWD_NXC ? p->rank - 1 : 2;
    }
    /* data */
    {
        static const struct { int t, pad, neg; } data[] = {{T_X, 3, 0},    {T_DY, 1, 1},   {T_DX, 2, 0},
                                                          {T_RES, 5, 1},  {T_RDST, 4, 1}, {T_DSA, 1, 0}};
        int k;
        for (k = 0; k < 6; ++k) {
            int tt = data[k].t;
            if (tt == T_RES && p->res != 1) continue;
            if ((tt == T_RDST || tt == T_DSA) && !(p->flags & (NBWD_FUSE_RELU | NBWD_FUSE_ADD_RELU))) continue;
            if (tt == T_DSA && !(p->flags & NBWD_FUSE_ADD_RELU)) continue;
            if (p->strided == 3) { /* [N, C] column-major: channels not dense */
                st[0] = 1;
                st[1] = p->dims[0] + (data[k].pad & 1 ? 0 : data[k].pad);
                tensor_alloc(&b->t[tt], p->rank, p->dims, st, esz(p->dt), 0);
            } else if (p->strided) {
                padded_strides(p->rank, p->dims, dense_from, data[k].pad,
                               data[k].neg || (p->strided == 2 && (tt == T_DX || tt == T_DSA)), st);
                tensor_alloc(&b->t[tt], p->rank, p->dims, st, esz(p->dt), 1);
            } else {
                tensor_alloc(&b->t[tt], p->rank, p->dims, NULL, esz(p->dt), 0);
            }
        }
    }
    /* statistics and parameters: strided as mean x2, var backwards, gamma
       x2, beta x3, dg x3, db backwards */
    {
        static const struct { int t; int64_t mult; } sp[] = {{T_MEAN, 2}, {T_VAR, -1}, {T_GAMMA, 2},
                                                            {T_BETA, 3},  {T_DG, 3},   {T_DB, -1}};
        int k;
        for (k = 0; k < 6; ++k) {
            int tt = sp[k].t, stats = tt == T_MEAN || tt == T_VAR, r = stats ? srank : prank;
            const int64_t *dd = stats ? sdims : pdims;
            if (p->strided == 1 || p->strided == 2) dense_strides(r, dd, sp[k].mult, st);
            tensor_alloc(&b->t[tt], r, dd, p->strided == 1 || p->strided == 2 ? st : NULL,
                         esz(stats ? p->sdt : p->pdt), 0);
        }
    }
    if (p->op == OP_BN2) {
        tensor_alloc(&b->t[T_SDY], 1, &C, NULL, 4, 0);
        tensor_alloc(&b->t[T_SDYX], 1, &C, NULL, 4, 0);
    }
    /* values: whole allocations (padding too) */
    {
        tensor *x = &b->t[T_X], *dy = &b->t[T_DY], *dx = &b->t[T_DX];
        size_t nx = x->bytes / esz(p->dt), ns = b->t[T_VAR].bytes / esz(p->sdt), np = b->t[T_GAMMA].bytes / esz(p->pdt);
        fill(x->mem, p->dt, nx, 2.0, 0.3);
        fill(dy->mem, p->dt, dy->bytes / esz(p->dt), 1.0, 0.0);
        if (p->res == 2) fill(dx->mem, p->dt, dx->bytes / esz(p->dt), 0.5, 0.1); /* the residual, in place */
        else fill(dx->mem, p->dt, dx->bytes / esz(p->dt), 4.0, 0.0);           /* garbage to overwrite */
        if (b->t[T_RES].mem) fill(b->t[T_RES].mem, p->dt, b->t[T_RES].bytes / esz(p->dt), 0.5, 0.1);
        if (b->t[T_RDST].mem) { /* the forward output after a ReLU: zeros, -0, positives, some negatives */
            size_t n = b->t[T_RDST].bytes / esz(p->dt);
            fill(b->t[T_RDST].mem, p->dt, n, 1.0, 0.1);
            for (i = 0; i < n; i += 5) put(b->t[T_RDST].mem, p->dt, i, 0.0f);
            for (i = 3; i < n; i += 11) put_special(b->t[T_RDST].mem, p->dt, i, SP_NEG_ZERO);
            if (p->special && n > 7) put_special(b->t[T_RDST].mem, p->dt, n / 2, SP_NAN);
        }
        if (b->t[T_DSA].mem) fill(b->t[T_DSA].mem, p->dt, b->t[T_DSA].bytes / esz(p->dt), 3.0, 0.0);
        fill(b->t[T_MEAN].mem, p->sdt, b->t[T_MEAN].bytes / esz(p->sdt), 0.2, 0.3);
        if (p->form == NBWD_STATS_XHAT_STD) fill(b->t[T_VAR].mem, p->sdt, ns, 0.4, 1.0); /* std */
        else if (p->form == NBWD_STATS_MEAN_RSTD || p->form == NBWD_STATS_DST_RSTD)
            fill(b->t[T_VAR].mem, p->sdt, ns, 0.3, 1.2); /* rstd */
        else fill(b->t[T_VAR].mem, p->sdt, ns, 0.5, 0.7);
        fill(b->t[T_GAMMA].mem, p->pdt, np, 1.0, 0.5);
        fill(b->t[T_BETA].mem, p->pdt, b->t[T_BETA].bytes / esz(p->pdt), 0.5, 0.0);
        fill(b->t[T_DG].mem, p->pdt, b->t[T_DG].bytes / esz(p->pdt), 1.0, 0.0);
        fill(b->t[T_DB].mem, p->pdt, b->t[T_DB].bytes / esz(p->pdt), 1.0, 0.0);
        if (p->special_gamma) { /* over the allocation: strided or not, some of these are read */
            static const float g[] = {0.0f, 1e-40f, -0.0f, 1e30f, 1e-30f, INFINITY, 3e-39f};
            for (i = 1; i < np; i += 3) put(b->t[T_GAMMA].mem, p->pdt, i, g[(i / 3) % 7] - p->gamma_offset);
        }
        if (p->special && nx > 8) {
            size_t ndy = dy->bytes / esz(p->dt);
            put_special(x->mem, p->dt, nx / 3, SP_NAN);
            put_special(dy->mem, p->dt, ndy / 2, SP_DENORMAL);
            put_special(dy->mem, p->dt, ndy / 2 + 1, SP_NEG_ZERO);
            put_special(dy->mem, p->dt, ndy - 1, SP_INF);
            put_special(x->mem, p->dt, nx - 2, SP_NEG_INF);
            for (i = 0; i < ndy / 5 && i < 64; ++i) put_special(dy->mem, p->dt, ndy / 5 + i, SP_DENORMAL);
            if (ns > 2) put_special(b->t[T_VAR].mem, p->sdt, ns - 1, SP_NAN);
        }
    }
}
static void clone_buffers(const buffers *a, buffers *b) {
    int t;
    *b = *a;
    for (t = 0; t < T_N; ++t)
        if (a->t[t].mem) {
            b->t[t].mem = (char *)xalloc(a->t[t].bytes);
            memcpy(b->t[t].mem, a->t[t].mem, a->t[t].bytes);
            b->t[t].base = b->t[t].mem + (a->t[t].base - a->t[t].mem);
        }
}
static void free_buffers(buffers *b) {
    int t;
    for (t = 0; t < T_N; ++t) free(b->t[t].mem);
}

static void *B_(const buffers *b, int t) { return b->t[t].base; }
static const int64_t *S_(const buffers *b, int t) { return b->t[t].has_st ? b->t[t].st : NULL; }

/* A stride field is written only where the case has strides: an older
   BatchNorm descriptor (before dst_strides, 926a42c) has its fields at
   other offsets, and a NULL written by this header's names would land on
   its init_stamp. */
#define AB_SET(f, v)                                                                                      \
    do {                                                                                                  \
        const int64_t *v_ = (v);                                                                          \
        if (v_) (f) = v_;                                                                                 \
    } while (0)
/* The descriptor fields all operations share. */
#define AB_DESC_COMMON(d, p)                                                                              \
    do {                                                                                                  \
        (d).data_dtype = (nbwd_dtype)(p)->dt; (d).stats_dtype = (nbwd_dtype)(p)->sdt;                     \
        (d).param_dtype = (nbwd_dtype)(p)->pdt; (d).stats_form = (nbwd_stats_form)(p)->form;               \
        (d).flags = ((p)->accumulate ? NBWD_ACCUMULATE_PARAM_GRADS : 0) | (p)->flags;                      \
        (d).num_threads = (p)->threads; (d).isa = (nbwd_isa)(p)->isa;                                     \
        AB_SET((d).src_strides, S_(b, T_X)); AB_SET((d).diff_dst_strides, S_(b, T_DY));                   \
        AB_SET((d).diff_src_strides, S_(b, T_DX)); AB_SET((d).mean_strides, S_(b, T_MEAN));               \
        AB_SET((d).var_strides, S_(b, T_VAR)); AB_SET((d).gamma_strides, S_(b, T_GAMMA));                 \
        AB_SET((d).diff_gamma_strides, S_(b, T_DG)); AB_SET((d).diff_beta_strides, S_(b, T_DB));          \
    } while (0)
/* The LayerNorm / GroupNorm statistics of the problem's form. */
#define AB_ARGS_STATS(a, p, b)                                                                            \
    do {                                                                                                  \
        if ((p)->form == NBWD_STATS_XHAT_STD) { (a).xhat = B_(b, T_X); (a).std = B_(b, T_VAR); }          \
        else if ((p)->form == NBWD_STATS_NONE) (a).src = B_(b, T_X);                                      \
        else if ((p)->form == NBWD_STATS_MEAN_RSTD) {                                                     \
            (a).src = B_(b, T_X); (a).mean = B_(b, T_MEAN); (a).rstd = B_(b, T_VAR);                      \
        } else { (a).src = B_(b, T_X); (a).mean = B_(b, T_MEAN); (a).variance = B_(b, T_VAR); }           \
    } while (0)
/* The LayerNorm and RMSNorm descriptor fields and outputs (and residual)
   both set alike. */
#define AB_ROWS_DESC(d, p)                                                                                \
    do {                                                                                                  \
        (d).begin_norm_axis = (p)->axis;                                                                  \
        (d).use_affine = (p)->affine;                                                                     \
        AB_DESC_COMMON(d, p);                                                                             \
        if ((p)->form == NBWD_STATS_DST_RSTD) AB_SET((d).beta_strides, S_(b, T_BETA));                    \
        if ((p)->gamma_offset != 0.0f) (d).gamma_offset = (p)->gamma_offset;                              \
        if ((p)->res == 1) AB_SET((d).diff_residual_strides, S_(b, T_RES));                               \
        if ((p)->res == 2) AB_SET((d).diff_residual_strides, S_(b, T_DX));                                \
    } while (0)
#define AB_ROWS_ARGS(a, p, b)                                                                             \
    do {                                                                                                  \
        (a).diff_dst = B_(b, T_DY);                                                                       \
        (a).gamma = (p)->affine ? B_(b, T_GAMMA) : NULL;                                                  \
        (a).diff_src = (p)->want_dx ? B_(b, T_DX) : NULL;                                                 \
        (a).diff_gamma = (p)->affine && (p)->want_dg ? B_(b, T_DG) : NULL;                                \
        (a).diff_beta = (p)->affine && (p)->want_db ? B_(b, T_DB) : NULL;                                 \
        if ((p)->form == NBWD_STATS_DST_RSTD) {                                                           \
            (a).dst = B_(b, T_X); (a).rstd = B_(b, T_VAR);                                                \
            if ((p)->affine && (p)->beta) (a).beta = B_(b, T_BETA);                                        \
        }                                                                                                 \
        if ((p)->res) (a).diff_residual = B_(b, (p)->res == 1 ? T_RES : T_DX);                            \
    } while (0)

static void bn_desc_args(const lib *l, const problem *p, const buffers *b, nbwd_batch_norm_bwd_desc *d,
                         nbwd_batch_norm_bwd_args *a) {
    memset(d, 0, sizeof *d);
    memset(a, 0, sizeof *a);
    l->bn_init(d, p->rank, p->dims, (nbwd_layout)p->layout, 1e-5f);
    AB_DESC_COMMON(*d, p);
    AB_ARGS_STATS(*a, p, b);
    a->diff_dst = B_(b, T_DY);
    a->gamma = p->affine ? B_(b, T_GAMMA) : NULL;
    a->diff_src = p->want_dx ? B_(b, T_DX) : NULL;
    if (p->want_dg) { a->diff_gamma = B_(b, T_DG); a->diff_beta = B_(b, T_DB); }
    if (p->flags & (NBWD_FUSE_RELU | NBWD_FUSE_ADD_RELU)) { a->dst = B_(b, T_RDST); AB_SET(d->dst_strides, S_(b, T_RDST)); }
    if (p->flags & NBWD_FUSE_ADD_RELU) { a->diff_src_add = B_(b, T_DSA); AB_SET(d->diff_src_add_strides, S_(b, T_DSA)); }
}

/* One call of lib l on buffers b (BN2: reduce, then apply with its sums). */
static nbwd_status call(const lib *l, const problem *p, buffers *b) {
    switch (p->op) {
    case OP_BN: {
        nbwd_batch_norm_bwd_desc d;
        nbwd_batch_norm_bwd_args a;
        bn_desc_args(l, p, b, &d, &a);
        return l->bn(&d, &a, NULL, 0);
    }
    case OP_BN2: {
        nbwd_batch_norm_bwd_desc d;
        nbwd_batch_norm_bwd_args a, r;
        nbwd_status s;
        bn_desc_args(l, p, b, &d, &a);
        r = a;
        r.diff_src = r.diff_gamma = r.diff_beta = NULL;
        s = l->bn_reduce(&d, &r, (float *)B_(b, T_SDY), (float *)B_(b, T_SDYX), &b->count, NULL, 0);
        if (s != NBWD_OK) return s;
        return l->bn_apply(&d, &a, (const float *)B_(b, T_SDY), (const float *)B_(b, T_SDYX),
                           b->count + p->extra_count, NULL, 0);
    }
    case OP_GN: {
        nbwd_group_norm_bwd_desc d;
        nbwd_group_norm_bwd_args a;
        memset(&d, 0, sizeof d);
        memset(&a, 0, sizeof a);
        l->gn_init(&d, p->rank, p->dims, (nbwd_layout)p->layout, p->groups, 1e-5f);
        d.use_affine = p->affine;
        AB_DESC_COMMON(d, p);
        if (p->form == NBWD_STATS_DST_RSTD) {
            a.dst = B_(b, T_X);
            a.rstd = B_(b, T_VAR);
            if (p->affine && p->beta) { a.beta = B_(b, T_BETA); AB_SET(d.beta_strides, S_(b, T_BETA)); }
        } else {
            AB_ARGS_STATS(a, p, b);
        }
        a.diff_dst = B_(b, T_DY);
        a.gamma = p->affine ? B_(b, T_GAMMA) : NULL;
        a.diff_src = p->want_dx ? B_(b, T_DX) : NULL;
        a.diff_gamma = p->affine && p->want_dg ? B_(b, T_DG) : NULL;
        a.diff_beta = p->affine && p->want_db ? B_(b, T_DB) : NULL;
        return l->gn(&d, &a, NULL, 0);
    }
    case OP_RMS: {
        nbwd_rms_norm_bwd_desc d;
        nbwd_rms_norm_bwd_args a;
        memset(&d, 0, sizeof d);
        memset(&a, 0, sizeof a);
        l->rms_init(&d, p->rank, p->dims);
        AB_ROWS_DESC(d, p);
        if (p->form == NBWD_STATS_XHAT_STD) { a.xhat = B_(b, T_X); a.std = B_(b, T_VAR); }
        else if (p->form == NBWD_STATS_RSTD) { a.src = B_(b, T_X); a.rstd = B_(b, T_VAR); }
        else if (p->form == NBWD_STATS_MEAN_SQUARE) { a.src = B_(b, T_X); a.mean_square = B_(b, T_VAR); }
        else if (p->form == NBWD_STATS_NONE) a.src = B_(b, T_X);
        AB_ROWS_ARGS(a, p, b);
        return l->rms(&d, &a, NULL, 0);
    }
    default: {
        nbwd_layer_norm_bwd_desc d;
        nbwd_layer_norm_bwd_args a;
        memset(&d, 0, sizeof d);
        memset(&a, 0, sizeof a);
        l->ln_init(&d, p->rank, p->dims);
        AB_ROWS_DESC(d, p);
        if (p->form != NBWD_STATS_DST_RSTD) AB_ARGS_STATS(a, p, b);
        AB_ROWS_ARGS(a, p, b);
        return l->ln(&d, &a, NULL, 0);
    }
    }
}

/* ------------------------------------------------------------ features */
static problem small(int op) {
    problem p;
    memset(&p, 0, sizeof p);
    p.op = op;
    p.isa = NBWD_ISA_SCALAR;
    p.threads = 1;
    p.affine = 1;
    p.want_dx = p.want_dg = p.want_db = 1;
    p.axis = -1;
    p.rank = op == OP_LN || op == OP_RMS ? 2 : 3;
    p.dims[0] = 3;
    p.dims[1] = 4;
    p.dims[2] = 5;
    p.groups = 2;
    p.layout = NBWD_NCX;
    return p;
}
/* Does lib l run q (status OK), and (with a reference r) give other dx bits
   than r on the same buffers (made for q)? A build without a field or
   flag ignores it or refuses the call. */
static int probe(const lib *l, const problem *q, const problem *r) {
    buffers A, B;
    int ok;
    uint64_t keep = g_rng;
    make_buffers(q, &A);
    clone_buffers(&A, &B);
    ok = call(l, q, &A) == NBWD_OK;
    if (ok && r) ok = call(l, r, &B) == NBWD_OK && memcmp(A.t[T_DX].mem, B.t[T_DX].mem, A.t[T_DX].bytes) != 0;
    free_buffers(&A);
    free_buffers(&B);
    g_rng = keep;
    return ok;
}
static void probe_features(lib *l) {
    problem q, r;
    l->feat = 0;
    if (l->force) l->feat |= F_FORCE_ISA;
    if (l->rms) l->feat |= F_RMS;
    q = small(OP_GN);
    if (l->gn && probe(l, &q, NULL)) l->feat |= F_GN;
    q = small(OP_BN2);
    if (l->bn_reduce && probe(l, &q, NULL)) l->feat |= F_TWO_PHASE;
    q = r = small(OP_LN);
    q.form = NBWD_STATS_DST_RSTD;
    if (probe(l, &q, NULL)) l->feat |= F_DST_RSTD;
    q.form = 0;
    q.res = 1;
    if (probe(l, &q, &r)) l->feat |= F_RESIDUAL;
    q.res = 0;
    q.gamma_offset = 1.0f;
    if (probe(l, &q, &r)) l->feat |= F_GAMMA_OFFSET;
    q = r = small(OP_BN);
    q.flags = NBWD_USE_GLOBAL_STATS;
    if (probe(l, &q, &r)) l->feat |= F_FROZEN;
    q.flags = NBWD_FUSE_RELU;
    if (probe(l, &q, &r)) l->feat |= F_RELU | F_BN_LAYOUT; /* the same commit */
    q.flags = NBWD_FUSE_ADD_RELU;
    if (probe(l, &q, &r)) l->feat |= F_ADD_RELU;
    q = small(OP_LN);
    q.form = NBWD_STATS_NONE;
    if (probe(l, &q, NULL)) l->feat |= F_STATS_NONE;
    q.form = 0;
    q.flags = NBWD_ACCUMULATE_DIFF_SRC;
    if (probe(l, &q, NULL)) l->feat |= F_ACCUMULATE_DX;
}

/* --------------------------------------------------------------- compare */
static long g_cases, g_diff, g_diff_nan, g_refused, g_diff_by[NBWD_ISA_COUNT][3];
static long g_kind_cases[K_COUNT], g_kind_diff[K_COUNT], g_kind_skip[K_COUNT], g_kind_refused[K_COUNT];
static unsigned g_common; /* the features both builds have */
static const char *g_only_isa; /* --isa LIST, or NULL */

static void describe(const problem *p, char *s, size_t cap) {
    int d, n = snprintf(s, cap,
                        "%s %s dt=%s/%s/%s form=%d aff=%d acc=%d out=%d%d%d res=%d thr=%d flags=%u goff=%g beta=%d "
                        "spec=%d/%d strided=%d dims=",
                        kind_names[kind_of(p)], isa_names[p->isa], dt_names[p->dt], dt_names[p->sdt],
                        dt_names[p->pdt], p->form, p->affine, p->accumulate, p->want_dx, p->want_dg, p->want_db,
                        p->res, p->threads, p->flags, (double)p->gamma_offset, p->beta, p->special,
                        p->special_gamma, p->strided);
    for (d = 0; d < p->rank && n < (int)cap; ++d)
        n += snprintf(s + n, cap - (size_t)n, d ? "x%lld" : "%lld", (long long)p->dims[d]);
    if ((p->op == OP_LN || p->op == OP_RMS) && n < (int)cap)
        snprintf(s + n, cap - (size_t)n, " axis=%lld", (long long)p->axis);
    if (p->op == OP_GN && n < (int)cap) snprintf(s + n, cap - (size_t)n, " groups=%lld", (long long)p->groups);
}

static void count_diff(int kind, int isa, int dt, const char *what) {
    ++g_diff;
    ++g_kind_diff[kind];
    ++g_diff_by[isa][dt];
    if (g_diff <= 40) printf("DIFF %s\n", what);
}

/* The element size of tensor t in problem p */
static size_t tensor_esz(const problem *p, int t) {
    if (t <= T_DSA) return esz(p->dt);
    if (t <= T_VAR) return esz(p->sdt);
    if (t <= T_DB) return esz(p->pdt);
    return 4;
}
/* Whether the elements of size e at x and y are both NaN (any payload) */
static int both_nan(const unsigned char *x, const unsigned char *y, size_t e) {
    if (e == 4) {
        uint32_t u, v;
        memcpy(&u, x, 4); memcpy(&v, y, 4);
        return (u & 0x7fffffffu) > 0x7f800000u && (v & 0x7fffffffu) > 0x7f800000u;
    } else {
        uint16_t u, v; /* bf16 or f16: either reads as NaN in its own format only; take both */
        memcpy(&u, x, 2); memcpy(&v, y, 2);
        return ((u & 0x7fffu) > 0x7f80u && (v & 0x7fffu) > 0x7f80u) ||
               ((u & 0x7fffu) > 0x7c00u && (v & 0x7fffu) > 0x7c00u && (u & 0x7c00u) == 0x7c00u && (v & 0x7c00u) == 0x7c00u);
    }
}
/* Do the two copies of tensor t differ only where both hold a NaN? */
static int nan_payloads_only(const problem *p, int t, const tensor *x, const tensor *y) {
    size_t e = tensor_esz(p, t), i;
    for (i = 0; i + e <= x->bytes; i += e)
        if (memcmp(x->mem + i, y->mem + i, e) && !both_nan((const unsigned char *)x->mem + i, (const unsigned char *)y->mem + i, e))
            return 0;
    return 1;
}

static void compare_one(const lib *a, const lib *b, const problem *p) {
    buffers A, B;
    nbwd_status sa, sb;
    char what[512], which[160] = "";
    int t, kind = kind_of(p), n = 0, payloads_only = 1;
    unsigned need = needs(p);
    if ((need & g_common) != need) {
        ++g_kind_skip[kind];
        return;
    }
    make_buffers(p, &A);
    clone_buffers(&A, &B);
    sa = call(a, p, &A);
    sb = call(b, p, &B);
    ++g_cases;
    ++g_kind_cases[kind];
    for (t = 0; t < T_N; ++t)
        if (A.t[t].mem && memcmp(A.t[t].mem, B.t[t].mem, A.t[t].bytes) && n < (int)sizeof which - 24) {
            int nan_only = nan_payloads_only(p, t, &A.t[t], &B.t[t]);
            payloads_only &= nan_only;
            n += snprintf(which + n, sizeof which - (size_t)n, " %s%s", tensor_names[t], nan_only ? "(NaN payloads)" : "");
        }
    if (A.count != B.count) n += snprintf(which + n, sizeof which - (size_t)n, " count");
    if (sa != sb || n) {
        char line[700];
        describe(p, what, sizeof what);
        if (sa != sb) snprintf(line, sizeof line, "status %d vs %d: %s", (int)sa, (int)sb, what);
        else snprintf(line, sizeof line, "bits (%s ): %s", which, what);
        if (sa == sb && payloads_only) ++g_diff_nan;
        count_diff(kind, p->isa, p->dt, line);
    } else if (sa != NBWD_OK) {
        ++g_refused;
        if (++g_kind_refused[kind] <= 3) {
            describe(p, what, sizeof what);
            printf("refused by both (status %d): %s\n", (int)sa, what);
        }
    }
    free_buffers(&A);
    free_buffers(&B);
}

static problem rows_problem(int isa, int dt, int64_t rows, int64_t width) {
    problem p;
    memset(&p, 0, sizeof p);
    p.op = OP_LN;
    p.isa = isa;
    p.dt = dt;
    p.rank = 2;
    p.dims[0] = rows;
    p.dims[1] = width;
    p.axis = -1;
    p.affine = 1;
    p.want_dx = p.want_dg = p.want_db = 1;
    p.threads = 1;
    return p;
}

/* LayerNorm and RMSNorm rows (v < 15: the sweep of old). */
static void sweep_rows(const lib *a, const lib *b, int isa, int quick) {
    static const int64_t widths[] = {1, 2, 3, 5, 7, 8, 9, 15, 16, 17, 20, 24, 31, 32, 33, 40, 47, 48, 49, 63, 64,
                                     65, 71, 96, 100, 127, 128, 129, 255, 256, 300, 511, 767, 768, 1000, 1023,
                                     1024, 1025, 1100, 2048, 3001, 4100};
    static const int64_t rows_list[] = {1, 2, 3, 7, 64, 65, 130};
    static const int64_t quick_widths[] = {1, 2, 3, 5, 8, 15, 16, 17, 31, 33, 48, 64, 65, 100, 129, 256, 768, 1025, 3001};
    static const int64_t quick_rows[] = {1, 3, 65};
    const int64_t *W = quick ? quick_widths : widths, *R = quick ? quick_rows : rows_list;
    int nw = quick ? (int)(sizeof quick_widths / sizeof quick_widths[0]) : (int)(sizeof widths / sizeof widths[0]);
    int nr = quick ? (int)(sizeof quick_rows / sizeof quick_rows[0]) : (int)(sizeof rows_list / sizeof rows_list[0]);
    int dt, w, r, v;
    for (dt = 0; dt < 3; ++dt)
        for (w = 0; w < nw; ++w)
            for (r = 0; r < nr; ++r)
                for (v = 0; v < 24; ++v) {
                    problem p = rows_problem(isa, dt, R[r], W[w]);
                    if (p.dims[0] * p.dims[1] > 300000) continue;
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
                    case 10: p.op = OP_RMS; break;
                    case 11: p.op = OP_RMS; p.res = 1; p.form = NBWD_STATS_RSTD; p.threads = 2; break;
                    case 12: p.op = OP_RMS; p.res = 2; p.form = NBWD_STATS_XHAT_STD; p.want_db = 0; break;
                    case 13: p.res = 1; break;
                    case 14: p.res = 2; p.form = NBWD_STATS_MEAN_RSTD; p.want_dg = 0; p.threads = 2; break;
                    /* the backward from the forward output, gamma_offset */
                    case 15: p.form = NBWD_STATS_DST_RSTD; p.beta = 1; p.gamma_offset = 1.0f; break;
                    case 16:
                        p.op = OP_RMS; p.form = NBWD_STATS_DST_RSTD; p.res = 1; p.threads = 2;
                        p.sdt = p.pdt = dt; break;
                    case 17:
                        p.form = NBWD_STATS_DST_RSTD; p.affine = 0; p.want_dg = p.want_db = 0; p.res = 2;
                        p.special = 1; break;
                    case 18:
                        p.op = OP_RMS; p.form = NBWD_STATS_DST_RSTD; p.beta = 1; p.gamma_offset = 0.5f;
                        p.special_gamma = 1; p.want_db = 0; p.threads = 2; break;
                    case 19:
                        p.form = NBWD_STATS_DST_RSTD; p.special_gamma = 1; p.want_dx = 0; p.accumulate = 1;
                        p.beta = 1; break;
                    /* statistics found in the call; diff_src accumulating */
                    case 20: p.form = NBWD_STATS_NONE; p.special = 1; break;
                    case 21: p.form = NBWD_STATS_NONE; p.res = 1; p.threads = 2; break;
                    case 22:
                        p.op = OP_RMS; p.form = NBWD_STATS_NONE; p.affine = 0; p.want_dg = p.want_db = 0;
                        p.flags = NBWD_ACCUMULATE_DIFF_SRC; break;
                    case 23: p.flags = NBWD_ACCUMULATE_DIFF_SRC; p.form = NBWD_STATS_MEAN_RSTD; p.threads = 2; break;
                    }
                    compare_one(a, b, &p);
                }
    /* gamma_offset in the x forms, the residual beside it */
    for (dt = 0; dt < 3; ++dt)
        for (w = 0; w < nw; w += 2) {
            problem p = rows_problem(isa, dt, quick ? 3 : 7, W[w]);
            p.gamma_offset = 1.0f;
            compare_one(a, b, &p);
            p.op = OP_RMS;
            p.res = 2;
            p.form = NBWD_STATS_RSTD;
            p.threads = 2;
            compare_one(a, b, &p);
        }
}

/* LayerNorm and RMSNorm with strides: padded rows, backward outer dims,
   strided statistics and parameters; normalized over one dim or two. */
static void sweep_rows_strided(const lib *a, const lib *b, int isa, int quick) {
    static const int64_t shapes[][3] = {{2, 3, 1}, {3, 5, 7}, {2, 2, 64}, {4, 3, 100}, {2, 5, 1025}, {1, 1, 33},
                                        {3, 2, 4100}};
    int dt, s, v, ns = quick ? 5 : (int)(sizeof shapes / sizeof shapes[0]);
    for (dt = 0; dt < 3; ++dt)
        for (s = 0; s < ns; ++s)
            for (v = 0; v < (quick ? 4 : 8); ++v) {
                problem p = rows_problem(isa, dt, 1, 1);
                p.rank = 3;
                memcpy(p.dims, shapes[s], sizeof shapes[s]);
                p.strided = 1;
                switch (v) {
                case 0: break;
                case 1: p.strided = 2; p.form = NBWD_STATS_MEAN_RSTD; p.threads = 2; p.sdt = p.pdt = dt; break;
                case 2: p.op = OP_RMS; p.res = 1; p.axis = 1; break;
                case 3: p.form = NBWD_STATS_DST_RSTD; p.beta = 1; p.gamma_offset = 1.0f; p.strided = 2; break;
                case 4: p.axis = 1; p.form = NBWD_STATS_XHAT_STD; p.accumulate = 1; p.threads = 2; break;
                case 5: p.op = OP_RMS; p.form = NBWD_STATS_DST_RSTD; p.res = 2; p.want_db = 0; break;
                case 6: p.res = 1; p.want_dg = 0; p.strided = 2; p.special = 1; break;
                case 7: p.op = OP_RMS; p.axis = 0; p.want_dx = 0; p.pdt = dt; break;
                }
                compare_one(a, b, &p);
            }
}

/* BatchNorm: both layouts, a few shapes (the sweep of old). */
static void sweep_bn(const lib *a, const lib *b, int isa) {
    static const int64_t shapes[][4] = {{2, 3, 5, 7},   {4, 16, 7, 7},   {8, 64, 3, 3}, {3, 19, 1, 11},
                                        {2, 100, 9, 1}, {16, 8, 16, 16}, {1, 5, 33, 3}, {64, 33, 2, 2}};
    int dt, v, layout, k;
    for (dt = 0; dt < 3; ++dt)
        for (v = 0; v < 8; ++v)
            for (layout = 0; layout < 2; ++layout) {
                problem p;
                memset(&p, 0, sizeof p);
                p.op = OP_BN;
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

/* shape (NCX order: N, C, spatial...) into p, C moved last for NXC */
static void set_shape(problem *p, const int64_t *s, int layout) {
    int d;
    p->rank = (int)s[0];
    p->layout = layout;
    for (d = 0; d < p->rank; ++d) p->dims[d] = s[1 + d];
    if (layout == NBWD_NXC && p->rank >= 3) {
        int64_t c = p->dims[1];
        for (d = 1; d + 1 < p->rank; ++d) p->dims[d] = p->dims[d + 1];
        p->dims[p->rank - 1] = c;
    }
}

/* BatchNorm: the flags, accumulate, the two phases, strides and the [N, C]
   tile path. */
static void sweep_bn_more(const lib *a, const lib *b, int isa, int quick) {
    static const int64_t shapes[][5] = { /* rank, then N, C, spatial... */
                                        {4, 2, 3, 5, 7},  {4, 4, 16, 7, 7}, {3, 8, 64, 9},  {2, 37, 19, 0},
                                        {4, 2, 8, 64, 64}, {3, 1, 2, 40000}, {2, 256, 64, 0}, {3, 3, 33, 1}};
    static const int quick_shapes[] = {0, 2, 3, 4};
    int dt, s, v, layout, ns = quick ? 4 : (int)(sizeof shapes / sizeof shapes[0]);
    for (dt = 0; dt < 3; ++dt)
        for (s = 0; s < ns; ++s)
            for (layout = 0; layout < 2; ++layout)
                for (v = 0; v < 17; ++v) {
                    const int64_t *sh = shapes[quick ? quick_shapes[s] : s];
                    problem p;
                    memset(&p, 0, sizeof p);
                    p.op = OP_BN;
                    p.isa = isa;
                    p.dt = dt;
                    set_shape(&p, sh, layout);
                    p.affine = 1;
                    p.want_dx = p.want_dg = 1;
                    p.threads = 1;
                    switch (v) {
                    case 0: p.flags = NBWD_USE_GLOBAL_STATS; break;
                    case 1: p.flags = NBWD_USE_GLOBAL_STATS; p.want_dg = 0; p.form = NBWD_STATS_MEAN_RSTD; p.threads = 2; break;
                    case 2: p.flags = NBWD_FUSE_RELU; break;
                    case 3:
                        p.flags = NBWD_FUSE_RELU; p.form = NBWD_STATS_XHAT_STD; p.want_dg = 0; p.threads = 2;
                        p.sdt = p.pdt = dt; break;
                    case 4: p.flags = NBWD_FUSE_ADD_RELU; p.special = 1; break;
                    case 5: p.flags = NBWD_FUSE_ADD_RELU; p.form = NBWD_STATS_MEAN_RSTD; p.threads = 2; p.affine = 0; break;
                    case 6: p.accumulate = 1; p.pdt = dt; p.form = NBWD_STATS_MEAN_RSTD; p.threads = 2; break;
                    case 7: p.accumulate = 1; p.sdt = dt; p.flags = NBWD_USE_GLOBAL_STATS; p.special = 1; break;
                    case 8: p.op = OP_BN2; break;
                    case 9: p.op = OP_BN2; p.flags = NBWD_FUSE_RELU; p.accumulate = 1; p.threads = 2; p.extra_count = 7; break;
                    case 10: p.op = OP_BN2; p.flags = NBWD_USE_GLOBAL_STATS; p.form = NBWD_STATS_XHAT_STD; p.want_dg = 0; break;
                    case 11:
                        p.op = OP_BN2; p.flags = NBWD_FUSE_ADD_RELU; p.form = NBWD_STATS_MEAN_RSTD; p.threads = 2;
                        p.sdt = p.pdt = dt; p.special = 1; break;
                    case 12: p.strided = 1; p.threads = 2; break;
                    case 13: p.strided = 2; p.flags = NBWD_FUSE_ADD_RELU; p.form = NBWD_STATS_MEAN_RSTD; break;
                    case 14: p.strided = 2; p.flags = NBWD_USE_GLOBAL_STATS; p.want_dg = 0; p.threads = 2; break;
                    case 15: p.strided = 1; p.op = OP_BN2; p.flags = NBWD_FUSE_RELU; p.form = NBWD_STATS_XHAT_STD; break;
                    case 16: p.strided = 1; p.flags = NBWD_FUSE_RELU; p.accumulate = 1; p.threads = 2; p.special = 1; break;
                    }
                    if (p.rank == 2 && p.strided) p.strided = 3; /* [N, C]: column-major, the tiles */
                    compare_one(a, b, &p);
                }
}

/* GroupNorm / InstanceNorm */
static void sweep_gn(const lib *a, const lib *b, int isa, int quick) {
    static const int64_t shapes[][5] = { /* rank, then N, C, spatial... */
                                        {3, 2, 1, 7},     {4, 3, 4, 5, 3}, {3, 2, 6, 33},    {2, 5, 12, 0},
                                        {4, 2, 64, 3, 3}, {3, 2, 8, 4096}, {4, 1, 16, 64, 64}, {3, 1, 2, 40000},
                                        {3, 3, 10, 1}};
    static const int quick_shapes[] = {1, 2, 3, 5};
    int dt, s, layout, gi, v, ns = quick ? 4 : (int)(sizeof shapes / sizeof shapes[0]);
    for (dt = 0; dt < 3; ++dt)
        for (s = 0; s < ns; ++s)
            for (layout = 0; layout < 2; ++layout) {
                const int64_t *sh = shapes[quick ? quick_shapes[s] : s];
                int64_t C = sh[2], glist[4], big = sh[1] * C * (sh[0] > 3 ? sh[3] * sh[4] : sh[0] > 2 ? sh[3] : 1);
                int ng = 0, k;
                glist[ng++] = 1;
                if (C % 2 == 0 && C >= 2) glist[ng++] = 2;
                if (C % 2 == 0 && C / 2 > 2) glist[ng++] = C / 2;
                if (C > 2 || (C == 2 && ng == 1)) glist[ng++] = C;
                for (k = 1; k < ng; ++k) /* no repeats */
                    if (glist[k] == glist[k - 1]) glist[k] = 0;
                for (gi = 0; gi < ng; ++gi) {
                    if (!glist[gi]) continue;
                    for (v = 0; v < 14; ++v) {
                        problem p;
                        if (big > 100000 && v % 2 && quick) continue;
                        memset(&p, 0, sizeof p);
                        p.op = OP_GN;
                        p.isa = isa;
                        p.dt = dt;
                        set_shape(&p, sh, layout);
                        p.groups = glist[gi];
                        p.affine = 1;
                        p.want_dx = p.want_dg = p.want_db = 1;
                        p.threads = 1;
                        switch (v) {
                        case 0: break;
                        case 1: p.form = NBWD_STATS_MEAN_RSTD; p.sdt = p.pdt = dt; p.threads = 2; break;
                        case 2: p.form = NBWD_STATS_XHAT_STD; p.want_dg = p.want_db = 0; break;
                        case 3: p.form = NBWD_STATS_DST_RSTD; p.beta = 1; p.want_db = 0; p.threads = 2; break;
                        case 4: p.form = NBWD_STATS_DST_RSTD; p.special_gamma = 1; p.sdt = dt; break;
                        case 5: p.affine = 0; p.want_dg = p.want_db = 0; p.threads = 2; break;
                        case 6: p.want_dx = 0; p.accumulate = 1; p.pdt = dt; p.form = NBWD_STATS_MEAN_RSTD; break;
                        case 7: p.form = NBWD_STATS_MEAN_RSTD; p.special = 1; p.want_dg = 0; p.threads = 2; break;
                        case 8: p.special_gamma = 1; p.threads = (int)(s & 1) + 1; break;
                        case 9: p.form = NBWD_STATS_DST_RSTD; p.affine = 0; p.want_dg = p.want_db = 0; p.threads = 2; break;
                        case 10: p.strided = 1; p.form = NBWD_STATS_XHAT_STD; p.accumulate = 1; p.threads = 2; break;
                        case 11: p.strided = 2; p.form = NBWD_STATS_DST_RSTD; p.beta = 1; p.pdt = dt; p.want_dx = 1; p.want_dg = 0; break;
                        case 12: p.form = NBWD_STATS_NONE; p.threads = 2; break;
                        case 13: p.form = NBWD_STATS_NONE; p.special = 1; p.want_dg = 0; p.threads = (int)(s & 1) + 1; break;
                        }
                        compare_one(a, b, &p);
                    }
                }
            }
}

/* The bulk conversions on the path forced with nbwd_force_isa. */
static float convert_value(size_t i, int n) {
    static const uint32_t special[] = {
        0x7fc00000u, 0x7fc12345u, 0x7f800001u, 0x7fa00000u, 0xffc00001u, 0xff812345u, 0x7fbfffffu, /* NaNs */
        0x7f800000u, 0xff800000u,                                                           /* infinities */
        0x00000001u, 0x80000001u, 0x007fffffu, 0x00400000u, 0x00008000u, 0x00018000u, 0x80007fffu, /* denormals */
        0x3f808000u, 0x3f818000u, 0x3f808001u, 0x3f807fffu, 0xbf818000u,    /* bf16 ties and beside them */
        0x7f7f8000u, 0x7f7fffffu, 0x7f7f7fffu, 0xff7f8000u,                  /* bf16 overflow */
        0x477fe000u, 0x477fefffu, 0x477ff000u, 0xc77ff000u, 0x47800000u,     /* f16 max, overflow */
        0x3f801000u, 0x3f803000u, 0x3f801001u, 0xbf803000u,                  /* f16 ties */
        0x33800000u, 0x33000000u, 0x33c00000u, 0x33000001u, 0x38800000u, 0x387fc000u, 0x387fe000u,
        0x38000000u, 0xb3800000u,                                            /* f16 subnormals, ties there */
        0x00000000u, 0x80000000u, 0x3f800000u, 0x4b000000u};
    uint32_t u;
    switch ((i + (size_t)n) % 4) {
    case 0: return f32_of(special[(i / 4 + (size_t)n) % (sizeof special / sizeof special[0])]);
    case 1: return f32_of((uint32_t)rnd64()); /* any bits */
    case 2: /* a tie: bf16's (low 16 bits 0x8000) or f16's (low 13 bits 0x1000, about 1) */
        u = (uint32_t)rnd64();
        if (u & 1u) return f32_of((u & 0xffff0000u) | 0x8000u);
        return f32_of((0x3f000000u + (u & 0x01ffe000u)) | 0x1000u | (u & 0x80000000u));
    default: return (float)(rnd() * 8.0);
    }
}
static void sweep_convert(const lib *a, const lib *b, int isa, int quick) {
    static const int64_t big[] = {127, 128, 129, 255, 256, 1000, 4097, 65536, 100003};
    int k, off, f;
    if ((g_common & F_FORCE_ISA) != F_FORCE_ISA) { /* the cases below, skipped */
        g_kind_skip[K_CONVERT] += (70 + (long)(sizeof big / sizeof big[0]) - (quick ? 1 : 0)) * 2 * 4;
        return;
    }
    if (a->force((nbwd_isa)isa) != NBWD_OK || b->force((nbwd_isa)isa) != NBWD_OK) {
        printf("DIFF? nbwd_force_isa(%s) failed on a build that supports it\n", isa_names[isa]);
        ++g_diff;
        return;
    }
    for (k = 1; k <= 70 + (int)(sizeof big / sizeof big[0]); ++k) {
        int64_t n = k <= 70 ? k : big[k - 71];
        if (quick && n > 70000) continue;
        for (off = 0; off < 2; ++off)
            for (f = 0; f < 4; ++f) { /* to bf16, to f16, from bf16, from f16 */
                int dt = f & 1 ? NBWD_F16 : NBWD_BF16, narrow = f < 2, d = 0;
                size_t bytes = (size_t)(n + 8) * 4, i;
                char *in = (char *)xalloc(bytes), *oa = (char *)xalloc(bytes), *ob = (char *)xalloc(bytes);
                char what[160];
                if (narrow) {
                    for (i = 0; i < (size_t)n + 8; ++i) ((float *)in)[i] = convert_value(i, (int)n);
                } else if (n == 65536) {
                    for (i = 0; i < (size_t)n + 8; ++i) ((uint16_t *)in)[i] = (uint16_t)i; /* every value */
                } else {
                    for (i = 0; i < (size_t)n + 8; ++i) {
                        uint32_t u = (uint32_t)rnd64();
                        /* NaN, infinity, subnormal and zero exponents more often than by chance */
                        if (u % 4 == 0) u = (u & 0x83ffu) | (dt == NBWD_F16 ? 0x7c00u : 0x7f80u) * ((u >> 20) & 1);
                        else if (u % 4 == 1 && dt == NBWD_BF16) u = (u & 0x807fu) | ((u >> 13) & 1u ? 0x7f80u : 0u);
                        ((uint16_t *)in)[i] = (uint16_t)u;
                    }
                }
                for (i = 0; i < bytes; ++i) oa[i] = ob[i] = (char)(0x5a ^ (int)i); /* guard bytes */
                if (narrow) {
                    const float *src = (const float *)in + off;
                    if (dt == NBWD_BF16) { a->to_bf16_n(src, (uint16_t *)oa + off, n); b->to_bf16_n(src, (uint16_t *)ob + off, n); }
                    else { a->to_f16_n(src, (uint16_t *)oa + off, n); b->to_f16_n(src, (uint16_t *)ob + off, n); }
                } else {
                    const uint16_t *src = (const uint16_t *)in + off;
                    if (dt == NBWD_BF16) { a->from_bf16_n(src, (float *)oa + off, n); b->from_bf16_n(src, (float *)ob + off, n); }
                    else { a->from_f16_n(src, (float *)oa + off, n); b->from_f16_n(src, (float *)ob + off, n); }
                }
                d = memcmp(oa, ob, bytes) != 0;
                ++g_cases;
                ++g_kind_cases[K_CONVERT];
                if (d) {
                    snprintf(what, sizeof what, "bits: convert %s %s %s n=%lld offset=%d", isa_names[isa],
                             narrow ? "f32 ->" : "-> f32", dt_names[dt], (long long)n, off);
                    count_diff(K_CONVERT, isa, dt, what);
                }
                free(in);
                free(oa);
                free(ob);
            }
    }
    a->force(NBWD_ISA_AUTO);
    b->force(NBWD_ISA_AUTO);
}

static int isa_listed(int isa) {
    const char *s = g_only_isa, *name = isa_names[isa];
    size_t n = strlen(name);
    if (!s) return 1;
    while (*s) {
        size_t k = strcspn(s, ",");
        if (k == n && !strncmp(s, name, n)) return 1;
        s += k + (s[k] == ',');
    }
    return 0;
}

static void compare_all(lib *a, lib *b, int quick) {
    int isa, f, k;
    double t_all = now_s();
    probe_features(a);
    probe_features(b);
    g_common = a->feat & b->feat;
    for (f = 0; f < F_COUNT; ++f)
        if (!(g_common & (1u << f)))
            printf("compare: %s lacks %s: its cases are skipped\n", !(a->feat & (1u << f)) ? a->path : b->path,
                   feature_names[f]);
    for (isa = 1; isa < NBWD_ISA_COUNT; ++isa) {
        long c0 = g_cases, d0 = g_diff;
        double t0 = now_s();
        if (!isa_listed(isa)) continue;
        if (!a->supported((nbwd_isa)isa) || !b->supported((nbwd_isa)isa)) continue;
        printf("compare: isa %d (%s)%s\n", isa, isa_names[isa], quick ? " --quick" : "");
        fflush(stdout);
        sweep_rows(a, b, isa, quick);
        sweep_rows_strided(a, b, isa, quick);
        sweep_bn(a, b, isa);
        sweep_bn_more(a, b, isa, quick);
        sweep_gn(a, b, isa, quick);
        sweep_convert(a, b, isa, quick);
        printf("  %s: %ld cases, %ld differ, %.1f s\n", isa_names[isa], g_cases - c0, g_diff - d0, now_s() - t0);
        fflush(stdout);
    }
    {
        int i, d;
        for (i = 0; i < NBWD_ISA_COUNT; ++i)
            for (d = 0; d < 3; ++d)
                if (g_diff_by[i][d]) printf("  isa %s dtype %s: %ld cases differ\n", isa_names[i], dt_names[d], g_diff_by[i][d]);
    }
    printf("per kind (cases, differ, refused by both, skipped):\n");
    for (k = 0; k < K_COUNT; ++k)
        printf("  %-12s %7ld %5ld %5ld %5ld%s\n", kind_names[k], g_kind_cases[k], g_kind_diff[k], g_kind_refused[k],
               g_kind_skip[k], g_kind_diff[k] ? "   <- differ" : "");
    printf("compare: %.1f s\n", now_s() - t_all);
    if (g_diff_nan)
        printf("(%ld of the differing cases differ only in which NaN payload a NaN output carries: an operation on two\n"
               "NaNs keeps one operand's, and which one the compiler's operand order decides)\n", g_diff_nan);
    printf("%ld cases, %ld differ\n", g_cases, g_diff);
}

/* ------------------------------------------------------------------ time */
static int parse_shape(const char *s, problem *p) {
    char buf[128], *tok, *save = NULL;
    memset(p, 0, sizeof p[0]);
    p->axis = -1;
    p->affine = 1;
    p->want_dx = p->want_dg = p->want_db = 1;
    if (!strncmp(s, "ln:", 3) || !strncmp(s, "rms:", 4) || !strncmp(s, "ln-res:", 7) || !strncmp(s, "rms-res:", 8) ||
        !strncmp(s, "ln-none:", 8) || !strncmp(s, "rms-none:", 9)) {
        long long r, n;
        p->op = s[0] == 'r' ? OP_RMS : OP_LN;
        p->res = strstr(s, "-res:") != NULL;
        if (strstr(s, "-none:")) {
            p->form = NBWD_STATS_NONE;
            p->affine = 0;
            p->want_dg = p->want_db = 0;
        }
        if (sscanf(strchr(s, ':') + 1, "%lldx%lld", &r, &n) != 2) return 0;
        p->rank = 2; p->dims[0] = r; p->dims[1] = n;
        return 1;
    }
    if (!strncmp(s, "bn-", 3) || !strncmp(s, "gn-ncx", 6) || !strncmp(s, "gn-nxc", 6)) {
        /* bn-ncx:, bn-nxc: (also -frozen, -relu, -addrelu before the colon,
           as nbwd_bench's), bn-nc:NxC; gn-ncx:NxCxHxW/G, gn-nxc:... (also
           gn-ncx-none:, gn-nxc-none: for NBWD_STATS_NONE) */
        const char *colon = strchr(s, ':'), *slash;
        char kind[32];
        if (!colon || colon - s >= (long)sizeof kind) return 0;
        memcpy(kind, s, (size_t)(colon - s));
        kind[colon - s] = 0;
        p->op = s[0] == 'g' ? OP_GN : OP_BN;
        p->layout = !strncmp(kind + 2, "-nxc", 4) ? NBWD_NXC : NBWD_NCX;
        if (strstr(kind, "-frozen")) { p->flags = NBWD_USE_GLOBAL_STATS; p->want_dg = p->want_db = 0; }
        if (strstr(kind, "-relu")) p->flags = NBWD_FUSE_RELU;
        if (strstr(kind, "-addrelu")) p->flags = NBWD_FUSE_ADD_RELU;
        if (p->op == OP_GN && strstr(kind, "-none")) p->form = NBWD_STATS_NONE; /* gn-nxc-none: */
        snprintf(buf, sizeof buf, "%s", colon + 1);
        if ((slash = strchr(buf, '/')) != NULL) {
            p->groups = atoll(slash + 1);
            buf[slash - buf] = 0;
        }
        if (p->op == OP_GN && p->groups < 1) return 0;
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

static void time_all(const lib *libs, int isa, int threads, int rounds, int calls, const char *shapes, int dt,
                     int sdt, int pdt) {
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
        if (p.op == OP_RMS && (!libs[0].rms || !libs[1].rms)) { fprintf(stderr, "nbwd_ab: %s: a build has no RMSNorm\n", tok); exit(2); }
        p.dt = dt;
        p.sdt = sdt;
        p.pdt = pdt;
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
    int i, isa = 0, threads = 1, rounds = 7, calls = 15, dt = 0, sdt = 0, pdt = 0, quick = 0, compare;
    const char *shapes = "ln:32768x768,ln:8192x1024,ln:4096x4096,ln:131072x64,ln:500000x24,ln:64x768";
    if (argc < 4) {
        fprintf(stderr, "usage: nbwd_ab OLD.so NEW.so compare [--quick] [--isa LIST] | time [options]\n");
        return 2;
    }
    compare = !strcmp(argv[3], "compare");
    /* The compare's 2-thread calls alternate with serial work: OpenMP
       workers that spin between them take a core from it (and from the
       machine). libgomp reads this when the first build loads it. */
    if (compare) setenv("OMP_WAIT_POLICY", "passive", 0);
    lib_open(&libs[0], argv[1]);
    lib_open(&libs[1], argv[2]);
    for (i = 4; i < argc; ++i) {
        const char *v = i + 1 < argc ? argv[i + 1] : "";
        if (!strcmp(argv[i], "--quick")) quick = 1;
        else if (!strcmp(argv[i], "--isa")) {
            int k;
            if (compare) g_only_isa = v;
            for (k = 0; k < NBWD_ISA_COUNT; ++k)
                if (!strcmp(v, isa_names[k])) isa = k;
            ++i;
        } else if (!strcmp(argv[i], "--threads")) { threads = atoi(v); ++i; }
        else if (!strcmp(argv[i], "--rounds")) { rounds = atoi(v); ++i; }
        else if (!strcmp(argv[i], "--calls")) { calls = atoi(v); ++i; }
        else if (!strcmp(argv[i], "--shapes")) { shapes = v; ++i; }
        else if (!strcmp(argv[i], "--dtype")) { dt = !strcmp(v, "bf16") ? 2 : !strcmp(v, "f16") ? 1 : 0; ++i; }
        else if (!strcmp(argv[i], "--param-dtype")) { pdt = !strcmp(v, "bf16") ? 2 : !strcmp(v, "f16") ? 1 : 0; ++i; }
        else if (!strcmp(argv[i], "--stats-dtype")) { sdt = !strcmp(v, "bf16") ? 2 : !strcmp(v, "f16") ? 1 : 0; ++i; }
    }
    if (compare) {
        compare_all(&libs[0], &libs[1], quick);
        return g_diff != 0;
    }
    time_all(libs, isa, threads, rounds, calls, shapes, dt, sdt, pdt);
    return 0;
}
