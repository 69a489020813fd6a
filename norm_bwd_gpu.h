/* norm_bwd_gpu.h - the optional CUDA path of norm_bwd.h: LayerNorm, RMSNorm,
   BatchNorm training and GroupNorm/InstanceNorm backward on device
   pointers, with the CPU API's descriptors, arguments, semantics and status
   codes.
   MIT or public domain, like norm_bwd.h (see the end of norm_bwd.h).

   STATUS: the kernels compile (nvcc 13, sm_80 and sm_90, warning-free),
   the host-side logic (validation, statuses, workspace sizes, the no-GPU
   path) is tested everywhere, and `make test-gpu` passes on an NVIDIA
   H100 and H200: every operation (GroupNorm/InstanceNorm included), form
   and option, RMSNorm, the residual, DST_RSTD, BatchNorm's fused ReLU and
   two-phase calls; also under compute-sanitizer memcheck (the whole suite)
   and racecheck (a subset covering every kernel's shared-memory scheme).
   LayerNorm/RMSNorm launch configurations and BatchNorm/GroupNorm's row
   blocking were timed on an H200; 16-bit data still reaches about half
   the fraction of the copy bandwidth f32 does, and BatchNorm/GroupNorm
   about 35-50 % of it in f32 (README).

   ============================================================================
   COMPILING
   ============================================================================
   In exactly ONE .cu file compiled by nvcc:

       #define NORM_BWD_GPU_IMPLEMENTATION
       #include "norm_bwd_gpu.h"

   Everywhere else (C or C++) just #include "norm_bwd_gpu.h" (it includes
   norm_bwd.h for the descriptor and argument types). Link that object with
   -lcudart (or -lcudart_static -ldl -lpthread -lrt) and, from a C program,
   -lstdc++. nvcc flags used by the project: -gencode arch=compute_80,code=sm_80
   -gencode arch=compute_90,code=sm_90 (sm_80 and newer: the README's
   claim; the project builds and tests no older target).

   The GPU implementation validates its arguments with norm_bwd.h's own
   (static) validation functions, so the two paths cannot disagree on what
   is valid. It needs norm_bwd.h's implementation in the same translation
   unit, and arranges that by itself: when norm_bwd.h has not been included
   yet and NORM_BWD_IMPLEMENTATION is not defined, it includes a private copy
   (NORM_BWD_STATIC + NORM_BWD_NO_SIMD + NORM_BWD_IMPLEMENTATION): no symbol
   clashes with the CPU implementation in another file of your program. If
   that translation unit defines NORM_BWD_IMPLEMENTATION itself, that
   implementation is used. (Including norm_bwd.h WITHOUT the implementation
   before norm_bwd_gpu.h in the implementation file is an #error.)

   Compiled by a plain C or C++ compiler (no __CUDACC__), the implementation
   is a stub: the same declarations and workspace-size queries, and every
   operation validates its arguments exactly like the GPU build (same status
   for every invalid input) and then returns NBWD_ERR_UNSUPPORTED, with
   nbwd_gpu_last_error() saying that the build has no CUDA. So a program can
   always link, and a C-only build reports "unsupported" instead of failing
   to link. nbwd_gpu_device_count() then gives 0 and NBWD_ERR_UNSUPPORTED.

   ============================================================================
   API
   ============================================================================
       nbwd_status nbwd_gpu_layer_norm_bwd_workspace_size(desc, &bytes)
       nbwd_status nbwd_gpu_layer_norm_bwd(desc, args, workspace, bytes, stream)
       nbwd_status nbwd_gpu_rms_norm_bwd_workspace_size(desc, &bytes)
       nbwd_status nbwd_gpu_rms_norm_bwd(desc, args, workspace, bytes, stream)
       nbwd_status nbwd_gpu_batch_norm_bwd_workspace_size(desc, &bytes)
       nbwd_status nbwd_gpu_batch_norm_bwd(desc, args, workspace, bytes, stream)
       nbwd_status nbwd_gpu_batch_norm_bwd_reduce(desc, args, sum_dy,
                       sum_dy_xhat, &count, workspace, bytes, stream)
       nbwd_status nbwd_gpu_batch_norm_bwd_apply(desc, args, sum_dy,
                       sum_dy_xhat, count, workspace, bytes, stream)
       nbwd_status nbwd_gpu_group_norm_bwd_workspace_size(desc, &bytes)
       nbwd_status nbwd_gpu_group_norm_bwd(desc, args, workspace, bytes, stream)
       nbwd_status nbwd_gpu_device_count(int *count)
       const char *nbwd_gpu_last_error(void)
   desc and args are the CPU structs (nbwd_layer_norm_bwd_desc, ...): every
   operation, statistics form, dtype combination, optional output, stride,
   layout and flag of the CPU API, including LayerNorm's and RMSNorm's
   args.diff_residual (added to diff_src in the same pass, in f32 before
   the one rounding to the data type; its own strides, or diff_src itself)
   and their NBWD_STATS_DST_RSTD form (the forward output dst, rstd, gamma
   and an optional beta; xhat recovered as on the CPU: (dst - beta) *
   (1 / (gamma + gamma_offset)), 0 where that scale is 0 or subnormal),
   and BatchNorm's fused ReLU (NBWD_FUSE_RELU, NBWD_FUSE_ADD_RELU with
   args.dst and args.diff_src_add, in every call, reduce and apply too: a
   masking kernel writes the masked diff_dst, with the CPU path's bits,
   into diff_src_add or, for NBWD_FUSE_RELU, the workspace, before the
   other kernels read it as their diff_dst).
   Not on the GPU (NBWD_ERR_UNSUPPORTED): the NBWD_STATS_NONE form (the
   statistics computed in the call), the flag NBWD_ACCUMULATE_DIFF_SRC
   (pass args.diff_residual = args.diff_src instead: the same sum), strided
   parameter tensors
   (gamma_strides, diff_gamma_strides, diff_beta_strides of the LayerNorm
   and BatchNorm descs, and beta_strides where LayerNorm's DST_RSTD form
   reads beta) and BatchNorm's [C] statistics strides. GroupNorm takes
   every input the CPU takes: NCX and NXC, rank 2..8, groups dividing
   C (InstanceNorm: groups = C), its [N, groups] statistics in the four saved
   forms with any strides, its [C] parameters with any strides, every
   dtype combination, in place, optional outputs, accumulate.
   All tensor pointers in args, and the
   workspace, are DEVICE pointers; desc (and its stride arrays) live in host
   memory. stream is a cudaStream_t passed as void * (NULL: the default
   stream). desc->num_threads and desc->isa are range-checked as on the CPU
   (a CPU path that cannot run here is no error on the GPU) and otherwise
   ignored. The workspace queries refuse what the descriptor alone makes
   unsupported (NONE, NBWD_ACCUMULATE_DIFF_SRC, LayerNorm's and
   BatchNorm's strided parameters, BatchNorm's strided statistics); the
   calls also what the arguments do.

   BatchNorm on a batch split over processes (SyncBatchNorm): reduce and
   apply are norm_bwd.h's nbwd_batch_norm_bwd_reduce / _apply (same
   semantics, validation, statuses and messages; see "A batch split over
   processes" there) on the device. sum_dy and sum_dy_xhat are DEVICE
   pointers, dense f32 [C] (what an NCCL all-reduce takes, in place if you
   like); count lives in host memory: reduce writes *count (N * spatial
   size, known from the shape) before it returns, and only when it returns
   NBWD_OK; apply takes the total by value. Both take
   nbwd_gpu_batch_norm_bwd_workspace_size's workspace, and refuse what
   nbwd_gpu_batch_norm_bwd refuses (strided parameter tensors included,
   though reduce reads none: a descriptor is taken by both phases or by
   neither). reduce launches the reduction alone: its sums have the bits
   nbwd_gpu_batch_norm_bwd would give this slice's f32 diff_beta/diff_gamma
   (not accumulated).
   apply launches no reduction: the coefficients from the given sums and
   count, then diff_src, and diff_gamma/diff_beta (the param dtype,
   NBWD_ACCUMULATE_PARAM_GRADS) from the given sums; on an empty slice only
   the latter. One slice holding the whole batch gives
   nbwd_gpu_batch_norm_bwd's bits exactly. Like every call here both are
   asynchronous on `stream`: reduce's sums are ready when the stream gets
   there, and apply's sums must be ready when its kernels run (an
   all-reduce on another stream needs an event or a synchronization first).

   What runs where: validation and planning on the host, in the calling
   thread; then a few kernel launches on `stream`, asynchronous like any
   CUDA launch: the outputs are ready when the stream has reached that point.
   A call never allocates device memory and never synchronizes with the
   device (the device check is cudaGetDeviceCount, once per process while it
   succeeds).

   ============================================================================
   WORKSPACE
   ============================================================================
   The *_workspace_size queries return the device scratch size for a
   descriptor (for any choice of outputs; 0 when none is needed, e.g. a
   LayerNorm without affine; BatchNorm's NBWD_FUSE_RELU adds room for the
   masked diff_dst, N * C * spatial elements of the data type; GroupNorm:
   about 7 floats per (sample, channel), plus partial sums where an NCX
   plane exceeds 8192 elements or NXC spatial rows span several blocks).
   Unlike the CPU path, a call never allocates it:
   a workspace that is NULL or smaller than the query when the query is
   nonzero gives NBWD_ERR_INSUFFICIENT_WORKSPACE. The workspace must not
   overlap any tensor and must not be used by other work until the call's
   kernels have finished on the stream.

   ============================================================================
   ERRORS
   ============================================================================
   Invalid arguments: the CPU status codes, checked before anything is
   launched (nothing written). No CUDA driver or no device (cudaGetDeviceCount
   fails or finds none): NBWD_ERR_UNSUPPORTED. A failing CUDA call or kernel
   launch (cudaGetLastError after each launch): NBWD_ERR_DEVICE; errors that
   surface only later (during execution) are reported by the user's next
   synchronizing CUDA call, as usual in CUDA. In these cases
   nbwd_gpu_last_error() returns the CUDA message for the calling thread
   (thread-local; kept until the next failure, "" if none). A rejected
   argument leaves "nbwd_gpu_layer_norm_bwd: NBWD_ERR_X: what is wrong" (the
   entry point's name, then as nbwd_last_error()) in both nbwd_gpu_last_error()
   and nbwd_last_error(); arguments that pass clear nbwd_last_error().

   ============================================================================
   DETERMINISM AND NUMERICS
   ============================================================================
   fp32 accumulation (per-row / per-channel scalars as in the CPU path, with
   rstd from the statistics in double; GroupNorm's per-set sums over its
   channels and its diff_gamma/diff_beta sums over the samples in double,
   as the CPU path). diff_gamma/diff_beta and the BatchNorm channel and
   GroupNorm (sample, channel) sums (reduce's too) use no float atomics: stage 1
   writes one partial per fixed block of rows (or batch entries) into the
   workspace, stage 2 adds the partials in a fixed order. Every blocking and
   thread mapping is a function of the shape and dtypes only (never of the
   device, the grid size or the data alignment: 16-byte vector loads and the
   scalar fallback add in the same order), so results are bitwise identical
   from run to run, on any grid size and on any GPU that runs the same
   binary. They differ from the CPU path in the last bits (different
   summation order, FMA). The DST_RSTD form's xhat has the CPU path's bits
   (an IEEE reciprocal of the scale, then a separate subtract and multiply,
   never contracted), and so has the residual's addition before the
   narrowing.
   16-bit values are widened exactly and narrowed with __float2half_rn /
   __float2bfloat16_rn (round to nearest even; NaN payloads may differ from
   the CPU conversions).

   Internal test knob: nbwd_gpu__max_grid (in the implementation file only)
   caps every grid size; the tests use it to check that results do not
   depend on the launch configuration.
*/
#ifndef NORM_BWD_GPU_H_INCLUDED
#define NORM_BWD_GPU_H_INCLUDED

/* The implementation needs norm_bwd.h's implementation (validation): include
   a private static copy unless this TU provides one. */
#if defined(NORM_BWD_GPU_IMPLEMENTATION) && !defined(NORM_BWD_H_INCLUDED) && !defined(NORM_BWD_IMPLEMENTATION)
#define NORM_BWD_STATIC
#define NORM_BWD_NO_SIMD
#define NORM_BWD_IMPLEMENTATION
#define NBWDG__PRIVATE_CPU 1
#endif

#if defined(__CUDACC__) && defined(NORM_BWD_IMPLEMENTATION) && !defined(NBWD__IMPLEMENTED)
/* cudafe++ front end: "set but never used" for a variable of the serial
   (no OpenMP) build of norm_bwd.h. */
#pragma nv_diag_suppress 550
#include "norm_bwd.h"
#pragma nv_diag_default 550
#else
#include "norm_bwd.h"
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define NBWD_GPU_API extern

NBWD_GPU_API nbwd_status nbwd_gpu_layer_norm_bwd_workspace_size(const nbwd_layer_norm_bwd_desc *desc, size_t *bytes);
NBWD_GPU_API nbwd_status nbwd_gpu_layer_norm_bwd(const nbwd_layer_norm_bwd_desc *desc,
                                                 const nbwd_layer_norm_bwd_args *args, void *workspace,
                                                 size_t workspace_bytes, void *stream /* cudaStream_t */);
NBWD_GPU_API nbwd_status nbwd_gpu_rms_norm_bwd_workspace_size(const nbwd_rms_norm_bwd_desc *desc, size_t *bytes);
NBWD_GPU_API nbwd_status nbwd_gpu_rms_norm_bwd(const nbwd_rms_norm_bwd_desc *desc, const nbwd_rms_norm_bwd_args *args,
                                               void *workspace, size_t workspace_bytes, void *stream /* cudaStream_t */);
NBWD_GPU_API nbwd_status nbwd_gpu_batch_norm_bwd_workspace_size(const nbwd_batch_norm_bwd_desc *desc, size_t *bytes);
NBWD_GPU_API nbwd_status nbwd_gpu_batch_norm_bwd(const nbwd_batch_norm_bwd_desc *desc,
                                                 const nbwd_batch_norm_bwd_args *args, void *workspace,
                                                 size_t workspace_bytes, void *stream /* cudaStream_t */);
/* The two phases of a batch split over processes (see BatchNorm above):
   sum_dy and sum_dy_xhat are DEVICE pointers (dense f32 [C]); count is in
   host memory. */
NBWD_GPU_API nbwd_status nbwd_gpu_batch_norm_bwd_reduce(const nbwd_batch_norm_bwd_desc *desc,
                                                        const nbwd_batch_norm_bwd_args *args, float *sum_dy,
                                                        float *sum_dy_xhat, int64_t *count, void *workspace,
                                                        size_t workspace_bytes, void *stream /* cudaStream_t */);
NBWD_GPU_API nbwd_status nbwd_gpu_batch_norm_bwd_apply(const nbwd_batch_norm_bwd_desc *desc,
                                                       const nbwd_batch_norm_bwd_args *args, const float *sum_dy,
                                                       const float *sum_dy_xhat, int64_t count, void *workspace,
                                                       size_t workspace_bytes, void *stream /* cudaStream_t */);
NBWD_GPU_API nbwd_status nbwd_gpu_group_norm_bwd_workspace_size(const nbwd_group_norm_bwd_desc *desc, size_t *bytes);
NBWD_GPU_API nbwd_status nbwd_gpu_group_norm_bwd(const nbwd_group_norm_bwd_desc *desc,
                                                 const nbwd_group_norm_bwd_args *args, void *workspace,
                                                 size_t workspace_bytes, void *stream /* cudaStream_t */);
/* Number of CUDA devices; *count = 0 and NBWD_ERR_UNSUPPORTED when there is
   no driver or device, or the build has no CUDA (message in last_error). */
NBWD_GPU_API nbwd_status nbwd_gpu_device_count(int *count);
/* The calling thread's message for its last refused or failed GPU call (an
   argument's rejection, a CUDA error, no CUDA): "" if none. */
NBWD_GPU_API const char *nbwd_gpu_last_error(void);

#ifdef __cplusplus
}
#endif

#endif /* NORM_BWD_GPU_H_INCLUDED */

/* ==========================================================================
   IMPLEMENTATION
   ========================================================================== */
#if defined(NORM_BWD_GPU_IMPLEMENTATION) && !defined(NBWDG__IMPLEMENTED)
#define NBWDG__IMPLEMENTED

#if !defined(NBWD__IMPLEMENTED)
#error "norm_bwd_gpu.h: the implementation needs norm_bwd.h's implementation in the same file: include norm_bwd_gpu.h before norm_bwd.h, or define NORM_BWD_IMPLEMENTATION before including norm_bwd.h"
#endif

#include <stdio.h>
#include <string.h>

#if defined(__cplusplus)
#define NBWDG__TLS thread_local
#elif defined(_MSC_VER)
#define NBWDG__TLS __declspec(thread)
#elif defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
#define NBWDG__TLS _Thread_local
#else
#define NBWDG__TLS __thread
#endif

static NBWDG__TLS char nbwdg__err[512]; /* room for the CPU message (400) and a prefix */

static void nbwdg__set_error(const char *what, const char *name, const char *msg) {
    snprintf(nbwdg__err, sizeof nbwdg__err, "%s: %s (%s)", what, msg ? msg : "", name ? name : "");
}

NBWD_GPU_API const char *nbwd_gpu_last_error(void) {
#if defined(NBWDG__PRIVATE_CPU)
    /* The private copy of norm_bwd.h is static: mark the parts this file
       does not call as used (no -Wunused-function). */
    (void)&nbwd_layer_norm_bwd; (void)&nbwd_batch_norm_bwd; (void)&nbwd_layer_norm_bwd_desc_init;
    (void)&nbwd_batch_norm_bwd_desc_init; (void)&nbwd_layer_norm_bwd_workspace_size;
    (void)&nbwd_batch_norm_bwd_workspace_size; (void)&nbwd_status_string; (void)&nbwd_bf16_to_f32;
    (void)&nbwd_f32_to_bf16; (void)&nbwd_f16_to_f32; (void)&nbwd_f32_to_f16; (void)&nbwd_bf16_to_f32_n;
    (void)&nbwd_f32_to_bf16_n; (void)&nbwd_f16_to_f32_n; (void)&nbwd_f32_to_f16_n; (void)&nbwd_isa_name;
    (void)&nbwd_isa_supported; (void)&nbwd_active_isa; (void)&nbwd_force_isa; (void)&nbwd_group_norm_bwd;
    (void)&nbwd_group_norm_bwd_desc_init; (void)&nbwd_group_norm_bwd_workspace_size;
#endif
    return nbwdg__err;
}

/* ------------------------------------------------------------- planning */
/* Everything below up to the kernels is plain C shared by the CUDA build and
   the stub: the stub validates and sizes workspaces exactly like the GPU. */
#define NBWDG__ALIGN 256
#define NBWDG__MAX_PARTIALS 1024          /* partial sums per column, at most */
#define NBWDG__PARTIALS_BYTES (64 << 20)  /* cap on the partials' workspace */
#define NBWDG__BN_CHUNK_ELEMS 8192        /* BatchNorm NCX: elements per partial */
#define NBWDG__BN_THREADS 256

static int64_t nbwdg__cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
static size_t nbwdg__round(size_t b) { return (b + NBWDG__ALIGN - 1) / NBWDG__ALIGN * NBWDG__ALIGN; }

/* LayerNorm: a row is handled by a group of G threads (a power of two),
   thread `lane` owning the V-element chunks lane, lane + G, ... (V = 16 bytes
   of data). K > 0: at most K chunks per thread, cached in registers between
   the two passes, G <= 512; G <= 32 runs 256 / G groups per block (warp
   shuffles), G >= 64 one group per block. K = 0: long rows, 1024 threads,
   re-read from global memory in the second pass. R rows per block of
   diff_gamma/diff_beta partials. All of it depends on n, rows and dtypes;
   the choices were timed on an H200 (bench_gpu --sweep, bench/NOTES.md). */
/* bench_gpu's sweep overrides the choices here (stage 0: G, K, block;
   stage 1: R); no build of the library defines it. */
#ifndef NBWDG__LN_TUNE
#define NBWDG__LN_TUNE(p, c, stage) ((void)0)
#endif
typedef struct nbwdg__ln_cfg {
    int V, G, K, block, NG;
    int64_t chunks, R, nblocks;
    size_t part_bytes, ws_bytes;
} nbwdg__ln_cfg;

static void nbwdg__ln_config(const nbwd__ln_plan *p, nbwdg__ln_cfg *c) {
    int64_t g = 1, k, cap, rmin, tblocks;
    memset(c, 0, sizeof *c);
    c->V = p->dt == NBWD_F32 ? 4 : 8;
    c->chunks = nbwdg__cdiv(p->n, c->V);
    while (g < 1024 && g * 4 < c->chunks) g *= 2;
    /* 16-bit rows that take groups of 64 or more: twice the threads, at
       most 2 chunks each (4 cost the 16-bit kernels registers; measured
       on an H200, bench/NOTES.md) */
    if (p->dt != NBWD_F32 && g >= 64 && g <= 256 && g * 4 >= c->chunks) g *= 2;
    if (g <= 512 && g * 4 >= c->chunks) {
        k = nbwdg__cdiv(c->chunks, g);
        c->K = k <= 1 ? 1 : k <= 2 ? 2 : 4;
        c->G = (int)g;
        c->block = c->G <= 32 ? 256 : c->G;
    } else {
        c->K = 0;
        c->G = c->block = 1024;
    }
    NBWDG__LN_TUNE(p, c, 0);
    c->NG = c->block / c->G;
    if (p->affine) {
        cap = NBWDG__PARTIALS_BYTES / (8 * (p->n > 0 ? p->n : 1));
        if (cap > NBWDG__MAX_PARTIALS) cap = NBWDG__MAX_PARTIALS;
        if (cap < 1) cap = 1;
        c->R = nbwdg__cdiv(p->rows, cap);
        /* Blocks: 64K threads' worth, at least 128 (a fixed count, never
           the device's: the partials' split decides the bits). More
           blocks only add partials to write and sum; fewer leave a large
           GPU idle. Every group gets a row. */
        tblocks = 65536 / c->block < 128 ? 128 : 65536 / c->block;
        rmin = nbwdg__cdiv(p->rows, tblocks);
        if (rmin < c->NG) rmin = c->NG;
        if (c->R < rmin) c->R = rmin;
    } else {
        c->R = c->NG > 1 ? 2 * (int64_t)c->NG : 2;
    }
    NBWDG__LN_TUNE(p, c, 1);
    if (c->R < 1) c->R = 1;
    c->nblocks = p->rows > 0 && p->n > 0 ? nbwdg__cdiv(p->rows, c->R) : 0;
    c->part_bytes = p->affine ? (size_t)c->nblocks * 2 * (size_t)p->n * 4 : 0;
    c->ws_bytes = c->part_bytes ? nbwdg__round(c->part_bytes) + NBWDG__ALIGN : 0;
}

/* BatchNorm: per-channel coefficients [5][C] (xm, xs, mean_g, mean_gx,
   scale), then partials [nb][2][C], then (NBWD_FUSE_RELU) the masked dy,
   dense row-major over desc->dims. NXC: the reduction in blocks of R rows
   (of C channels), TX threads across channel chunks x 256/TX row slices;
   dx in blocks of ARB rows, the same TX threads across the chunks. NCX: one
   partial per (channel, nper batch entries). */
typedef struct nbwdg__bn_cfg {
    int V, TX;
    int64_t ARB;
    int64_t rows, inner, chunks; /* rows of `inner` dense elements: NXC M x C, NCX (N*C) x S */
    int64_t R, nper, nb;
    size_t off_coef, off_part, off_mask, ws_bytes;
} nbwdg__bn_cfg;

/* The device's row (NXC) kernels need dense channels: [N, C] with strided
   channels (which the CPU gathers into tiles) takes the plane kernels here,
   planes of one element. */
static int nbwdg__bn_rows_alg(const nbwd__bn_plan *p) { return p->nxc && !p->gather; }
/* Rows per block of the NXC reductions (BatchNorm, GroupNorm): R at
   least, raised to 12 (f32) or 16 (16-bit) rows per thread of the block's
   `slices` row slices while the rows still give 128 blocks. Fewer rows per
   thread left the blocks' fixed cost (the tree, the partials) in front:
   the sweep on an H200 found these counts 1.14-1.2x faster than 4-6 rows
   per thread, and more of them slower again (bench/NOTES.md). */
static int64_t nbwdg__rows_per_partial(int64_t R, int64_t rows, int64_t slices, int dt) {
    int64_t want = (dt == NBWD_F32 ? 12 : 16) * slices;
    if (want > rows / 128) want = rows / 128;
    return R > want ? R : want;
}
/* bench_gpu's experiments override the NXC rows per partial here; no build
   of the library defines it. */
#ifndef NBWDG__BN_TUNE
#define NBWDG__BN_TUNE(p, c) ((void)0)
#endif

static void nbwdg__bn_config(const nbwd__bn_plan *p, nbwdg__bn_cfg *c) {
    int64_t tx = 1, cap;
    memset(c, 0, sizeof *c);
    c->V = p->dt == NBWD_F32 ? 4 : 8;
    c->rows = nbwdg__bn_rows_alg(p) ? p->M : p->N * p->C;
    c->inner = nbwdg__bn_rows_alg(p) ? p->C : p->S;
    c->chunks = nbwdg__cdiv(c->inner, c->V);
    if (p->M == 0 || p->C == 0) return; /* nothing to compute: no workspace */
    if (nbwdg__bn_rows_alg(p)) {
        while (tx < NBWDG__BN_THREADS && tx < c->chunks) tx *= 2;
        c->TX = (int)tx;
        cap = NBWDG__PARTIALS_BYTES / (8 * p->C);
        if (cap > NBWDG__MAX_PARTIALS) cap = NBWDG__MAX_PARTIALS;
        if (cap < 1) cap = 1;
        c->R = nbwdg__cdiv(p->M, cap);
        if (c->R < 4 * (NBWDG__BN_THREADS / tx)) c->R = 4 * (NBWDG__BN_THREADS / tx);
        c->R = nbwdg__rows_per_partial(c->R, p->M, NBWDG__BN_THREADS / tx, p->dt);
        NBWDG__BN_TUNE(p, c);
        c->nb = nbwdg__cdiv(p->M, c->R);
        /* apply: the same TX threads across the chunks; about 1024 blocks,
           1 to 16 rows per thread */
        {
            const int64_t slices = NBWDG__BN_THREADS / tx;
            int64_t per = p->M / (slices * 1024);
            if (per < 1) per = 1;
            if (per > 16) per = 16;
            c->ARB = slices * per;
        }
    } else {
        c->nper = nbwdg__cdiv(NBWDG__BN_CHUNK_ELEMS, p->S);
        if (c->nper < 1) c->nper = 1;
        c->nb = nbwdg__cdiv(p->N, c->nper);
    }
    c->off_coef = NBWDG__ALIGN; /* room to align the base */
    c->off_part = c->off_coef + nbwdg__round((size_t)p->C * 5 * 4);
    c->ws_bytes = c->off_part + nbwdg__round((size_t)c->nb * 2 * (size_t)p->C * 4);
    if (p->relu == NBWD_FUSE_RELU) { /* ADD_RELU's masked dy lives in args.diff_src_add */
        c->off_mask = c->ws_bytes;
        c->ws_bytes += nbwdg__round((size_t)(p->M * p->C) * (p->dt == NBWD_F32 ? 4 : 2));
    }
}

static nbwd_status nbwdg__ws_check(size_t need, const void *workspace, size_t bytes) {
    if (need > 0 && !workspace)
        return nbwd__fail(NBWD_ERR_INSUFFICIENT_WORKSPACE,
                          "workspace is NULL, but the workspace size query asks for %llu bytes (the GPU path "
                          "allocates none itself)",
                          (unsigned long long)need);
    if (need > 0 && bytes < need)
        return nbwd__fail(NBWD_ERR_INSUFFICIENT_WORKSPACE,
                          "workspace_bytes = %llu, but the workspace size query asks for %llu bytes",
                          (unsigned long long)bytes, (unsigned long long)need);
    return NBWD_OK;
}

/* A rejected call: the CPU's message with this entry point's name, in both
   last-error strings. */
static nbwd_status nbwdg__reject(const char *entry, nbwd_status s) {
    nbwd__finish(entry, s);
    snprintf(nbwdg__err, sizeof nbwdg__err, "%s", nbwd_last_error());
    return s;
}

/* The device kernels index the parameter tensors densely. beta_read: the
   call reads beta (LayerNorm's DST_RSTD form); else its strides do not
   matter. */
static nbwd_status nbwdg__params_dense(const nbwd__params *q, int beta_read) {
    static const char *const name[NBWD__NPAR] = {"gamma", "beta", "diff_gamma", "diff_beta"};
    int t;
    for (t = 0; t < NBWD__NPAR; ++t)
        if (!q->dense[t] && (t != NBWD__PB || beta_read))
            return nbwd__fail(NBWD_ERR_UNSUPPORTED,
                              "desc.%s_strides: the GPU path takes dense gamma, diff_gamma and diff_beta only (and a "
                              "dense beta where the NBWD_STATS_DST_RSTD form reads it)",
                              name[t]);
    return NBWD_OK;
}

/* LayerNorm's DST_RSTD form recovers xhat from dst with gamma and beta
   where it is used: for diff_src and diff_gamma, with affine (diff_beta
   alone needs no xhat). */
static int nbwdg__ln_unscales(const nbwd__ln_plan *p, const nbwd_layer_norm_bwd_args *a) {
    return p->form == NBWD_STATS_DST_RSTD && p->affine && (a->diff_src || a->diff_gamma);
}

/* What the CPU path takes and the GPU's kernels do not (yet): the
   statistics computed in the call, and diff_src += (which the residual
   route does: diff_residual = diff_src). */
static nbwd_status nbwdg__ln_supported(const nbwd__ln_plan *p) {
    if (p->form == NBWD_STATS_NONE)
        return nbwd__fail(NBWD_ERR_UNSUPPORTED, "desc.stats_form = NBWD_STATS_NONE: the GPU path takes saved "
                                                "statistics (the CPU path computes them in the call)");
    if (p->accumulate_dx)
        return nbwd__fail(NBWD_ERR_UNSUPPORTED, "desc.flags has NBWD_ACCUMULATE_DIFF_SRC: on the GPU pass "
                                                "args.diff_residual = args.diff_src without the flag (the same sum)");
    return NBWD_OK;
}

/* Full validation: the CPU checks, then the workspace. */
static nbwd_status nbwdg__ln_prepare(const nbwd_layer_norm_bwd_desc *desc, int rms, const nbwd_layer_norm_bwd_args *args,
                                     const void *workspace, size_t bytes, nbwd__ln_plan *p, nbwdg__ln_cfg *c) {
    nbwd_status s;
    if ((s = nbwd__ln_plan_desc(desc, rms, p)) != NBWD_OK) return s;
    if (!args) return nbwd__fail(NBWD_ERR_NULL_POINTER, "args is NULL");
    if ((s = nbwd__ln_check_args(desc, p, args)) != NBWD_OK) return s;
    if ((s = nbwdg__ln_supported(p)) != NBWD_OK) return s;
    if ((s = nbwdg__params_dense(&p->par, nbwdg__ln_unscales(p, args) && args->beta)) != NBWD_OK) return s;
    nbwdg__ln_config(p, c);
    if ((s = nbwdg__ws_check(c->ws_bytes, workspace, bytes)) == NBWD_OK) nbwd__msg[0] = 0; /* as a CPU call that succeeds */
    return s;
}

/* What BatchNorm's kernels do not take, from the descriptor alone (so the
   workspace query refuses it too): strided [C] parameters and statistics.
   par: the descriptor's parameter strides. */
static nbwd_status nbwdg__bn_supported(const nbwd__bn_plan *p, const nbwd__params *par) {
    nbwd_status s;
    if ((s = nbwdg__params_dense(par, 0)) != NBWD_OK) return s;
    if (p->C > 1 && (p->mean_st != 1 || p->var_st != 1))
        return nbwd__fail(NBWD_ERR_UNSUPPORTED, "the GPU path takes dense mean and variance/rstd/std only");
    return NBWD_OK;
}

/* sums: the two-phase calls (NULL: nbwd_gpu_batch_norm_bwd), checked as
   norm_bwd.h's nbwd__batch_norm_bwd does: reduce's sums arrive as args'
   diff_gamma/diff_beta (dense f32, overwritten: the plan says so), apply's
   are two more inputs, with the count. The GPU's dense-parameter rule
   looks at the descriptor's own strides: a descriptor is taken by both
   phases or by neither. */
static nbwd_status nbwdg__bn_prepare(const nbwd_batch_norm_bwd_desc *desc, const nbwd_batch_norm_bwd_args *args,
                                     const nbwd__bn_sums *sums, const void *workspace, size_t bytes, nbwd__bn_plan *p,
                                     nbwdg__bn_cfg *c) {
    nbwd__params par;
    nbwd_status s;
    memset(&par, 0, sizeof par); /* set by the validation where it succeeds (gcc cannot tell) */
    if ((s = nbwd__bn_validate(desc, args, sums, p, &par)) != NBWD_OK) return s;
    if ((s = nbwdg__bn_supported(p, &par)) != NBWD_OK) return s;
    nbwdg__bn_config(p, c);
    if ((s = nbwdg__ws_check(c->ws_bytes, workspace, bytes)) == NBWD_OK) nbwd__msg[0] = 0;
    return s;
}

/* rms: RMSNorm (LayerNorm's plan with mean 0) */
static nbwd_status nbwdg__ln_workspace_size(const nbwd_layer_norm_bwd_desc *desc, int rms, size_t *bytes) {
    const char *entry = rms ? "nbwd_gpu_rms_norm_bwd_workspace_size" : "nbwd_gpu_layer_norm_bwd_workspace_size";
    nbwd__ln_plan p;
    nbwdg__ln_cfg c;
    nbwd_status s;
    if (!bytes) return nbwdg__reject(entry, nbwd__fail(NBWD_ERR_NULL_POINTER, "bytes is NULL"));
    /* (beta's strides matter only where the call reads beta: the call checks them) */
    if ((s = nbwd__ln_plan_desc(desc, rms, &p)) != NBWD_OK || (s = nbwdg__ln_supported(&p)) != NBWD_OK ||
        (s = nbwdg__params_dense(&p.par, 0)) != NBWD_OK)
        return nbwdg__reject(entry, s);
    nbwdg__ln_config(&p, &c);
    *bytes = c.ws_bytes;
    nbwd__msg[0] = 0;
    return NBWD_OK;
}
NBWD_GPU_API nbwd_status nbwd_gpu_layer_norm_bwd_workspace_size(const nbwd_layer_norm_bwd_desc *desc, size_t *bytes) {
    return nbwdg__ln_workspace_size(desc, 0, bytes);
}
NBWD_GPU_API nbwd_status nbwd_gpu_rms_norm_bwd_workspace_size(const nbwd_rms_norm_bwd_desc *desc, size_t *bytes) {
    return nbwdg__ln_workspace_size(desc, 1, bytes);
}
static nbwd_status nbwdg__layer_norm_bwd(const nbwd_layer_norm_bwd_desc *desc, int rms,
                                         const nbwd_layer_norm_bwd_args *args, void *workspace, size_t workspace_bytes,
                                         void *stream);
NBWD_GPU_API nbwd_status nbwd_gpu_layer_norm_bwd(const nbwd_layer_norm_bwd_desc *desc,
                                                 const nbwd_layer_norm_bwd_args *args, void *workspace,
                                                 size_t workspace_bytes, void *stream) {
    return nbwdg__layer_norm_bwd(desc, 0, args, workspace, workspace_bytes, stream);
}
NBWD_GPU_API nbwd_status nbwd_gpu_rms_norm_bwd(const nbwd_rms_norm_bwd_desc *desc, const nbwd_rms_norm_bwd_args *args,
                                               void *workspace, size_t workspace_bytes, void *stream) {
    nbwd_layer_norm_bwd_args la;
    return nbwdg__layer_norm_bwd(desc, 1, nbwd__rms_as_ln(args, &la), workspace, workspace_bytes, stream);
}

NBWD_GPU_API nbwd_status nbwd_gpu_batch_norm_bwd_workspace_size(const nbwd_batch_norm_bwd_desc *desc, size_t *bytes) {
    nbwd__bn_plan p;
    nbwdg__bn_cfg c;
    nbwd_status s;
    if (!bytes) return nbwdg__reject("nbwd_gpu_batch_norm_bwd_workspace_size", nbwd__fail(NBWD_ERR_NULL_POINTER, "bytes is NULL"));
    if ((s = nbwd__bn_plan_desc(desc, &p)) != NBWD_OK || (s = nbwdg__bn_supported(&p, &p.par)) != NBWD_OK)
        return nbwdg__reject("nbwd_gpu_batch_norm_bwd_workspace_size", s);
    nbwdg__bn_config(&p, &c);
    *bytes = c.ws_bytes;
    nbwd__msg[0] = 0;
    return NBWD_OK;
}

/* After validation: the launches (CUDA), or NBWD_ERR_UNSUPPORTED (stub).
   sums as for nbwdg__bn_prepare, p and c what it made. */
static nbwd_status nbwdg__bn_run(const nbwd_batch_norm_bwd_desc *desc, const nbwd_batch_norm_bwd_args *args,
                                 const nbwd__bn_sums *sums, nbwd__bn_plan *p, const nbwdg__bn_cfg *c,
                                 void *workspace, void *stream);

NBWD_GPU_API nbwd_status nbwd_gpu_batch_norm_bwd(const nbwd_batch_norm_bwd_desc *desc,
                                                 const nbwd_batch_norm_bwd_args *args, void *workspace,
                                                 size_t workspace_bytes, void *stream) {
    nbwd__bn_plan p;
    nbwdg__bn_cfg c;
    nbwd_status s;
    if ((s = nbwdg__bn_prepare(desc, args, NULL, workspace, workspace_bytes, &p, &c)) != NBWD_OK)
        return nbwdg__reject("nbwd_gpu_batch_norm_bwd", s);
    return nbwdg__bn_run(desc, args, NULL, &p, &c, workspace, stream);
}
/* As norm_bwd.h's nbwd_batch_norm_bwd_reduce (the same checks, in the same
   order and words): the plain call with diff_gamma/diff_beta pointed at the
   sums and nothing else written; *count (host) only when it succeeds. */
NBWD_GPU_API nbwd_status nbwd_gpu_batch_norm_bwd_reduce(const nbwd_batch_norm_bwd_desc *desc,
                                                        const nbwd_batch_norm_bwd_args *args, float *sum_dy,
                                                        float *sum_dy_xhat, int64_t *count, void *workspace,
                                                        size_t workspace_bytes, void *stream) {
    static const char entry[] = "nbwd_gpu_batch_norm_bwd_reduce";
    nbwd_batch_norm_bwd_args a;
    nbwd__bn_sums sums;
    nbwd__bn_plan p;
    nbwdg__bn_cfg c;
    nbwd_status s;
    if ((s = nbwd__bn_reduce_args(desc, args, sum_dy, sum_dy_xhat, count, &p, &a, &sums)) != NBWD_OK)
        return nbwdg__reject(entry, s);
    if ((s = nbwdg__bn_prepare(desc, &a, &sums, workspace, workspace_bytes, &p, &c)) != NBWD_OK)
        return nbwdg__reject(entry, s);
    if ((s = nbwdg__bn_run(desc, &a, &sums, &p, &c, workspace, stream)) == NBWD_OK) *count = p.M;
    return s;
}
NBWD_GPU_API nbwd_status nbwd_gpu_batch_norm_bwd_apply(const nbwd_batch_norm_bwd_desc *desc,
                                                       const nbwd_batch_norm_bwd_args *args, const float *sum_dy,
                                                       const float *sum_dy_xhat, int64_t count, void *workspace,
                                                       size_t workspace_bytes, void *stream) {
    nbwd__bn_sums sums = nbwd__bn_apply_sums(sum_dy, sum_dy_xhat, count);
    nbwd__bn_plan p;
    nbwdg__bn_cfg c;
    nbwd_status s;
    if ((s = nbwdg__bn_prepare(desc, args, &sums, workspace, workspace_bytes, &p, &c)) != NBWD_OK)
        return nbwdg__reject("nbwd_gpu_batch_norm_bwd_apply", s);
    return nbwdg__bn_run(desc, args, &sums, &p, &c, workspace, stream);
}

/* GroupNorm / InstanceNorm: per-(sample, channel) coefficients [5][N * C]
   (xm, xs, rstd, mean_g, mean_gx) and gain [C] (gamma in f32), totals
   [2][N * C] (sum dy * xhat, sum dy per (n, c)), then partials [nparts][2][N
   * C] where a (n, c) takes more than one. NCX: plane (n, c) in pieces of
   NBWDG__GN_PIECE elements, a unit of G threads each (G <= 32: 256 / G units
   per block; else 256, one per block). NXC: blocks of R spatial rows of one
   sample, TX threads across channel chunks x 256 / TX row slices, as
   BatchNorm's rows. All of it depends on the shape and dtypes alone. */
#define NBWDG__GN_PIECE 8192 /* a multiple of every vector width */
#define NBWDG__GN_MIN_ROWS 64
typedef struct nbwdg__gn_cfg {
    int V, G, TX;
    int64_t NC, piece, pieces, R, nb, nparts, ARB;
    size_t off_coef, off_tot, off_part, ws_bytes;
} nbwdg__gn_cfg;

static void nbwdg__gn_config(const nbwd__gn_plan *p, nbwdg__gn_cfg *c) {
    int64_t chunks, g = 1, cap;
    memset(c, 0, sizeof *c);
    c->V = p->dt == NBWD_F32 ? 4 : 8;
    c->NC = p->N * p->C;
    if (c->NC == 0 || p->S == 0) return; /* nothing to compute: no workspace */
    if (p->nxc) {
        chunks = nbwdg__cdiv(p->C, c->V);
        while (g < NBWDG__BN_THREADS && g < chunks) g *= 2;
        c->TX = (int)g;
        cap = NBWDG__PARTIALS_BYTES / (8 * c->NC);
        if (cap > NBWDG__MAX_PARTIALS) cap = NBWDG__MAX_PARTIALS;
        if (cap < 1) cap = 1;
        c->R = nbwdg__cdiv(p->S, cap);
        if (c->R < 4 * (NBWDG__BN_THREADS / g)) c->R = 4 * (NBWDG__BN_THREADS / g);
        if (c->R < NBWDG__GN_MIN_ROWS) c->R = NBWDG__GN_MIN_ROWS;
        c->R = nbwdg__rows_per_partial(c->R, p->N * p->S, NBWDG__BN_THREADS / g, p->dt);
        c->nb = nbwdg__cdiv(p->S, c->R);
        c->nparts = c->nb;
        /* apply: the same TX threads across the chunks; about 1024 blocks,
           1 to 16 positions per thread */
        {
            const int64_t slices = NBWDG__BN_THREADS / g;
            int64_t per = p->N * p->S / (slices * 1024);
            if (per < 1) per = 1;
            if (per > 16) per = 16;
            c->ARB = slices * per;
        }
    } else {
        c->piece = NBWDG__GN_PIECE;
        c->pieces = nbwdg__cdiv(p->S, c->piece);
        chunks = nbwdg__cdiv(p->S < c->piece ? p->S : c->piece, c->V);
        while (g < 32 && g * 4 < chunks) g *= 2;
        c->G = g * 4 >= chunks ? (int)g : NBWDG__BN_THREADS;
        c->nparts = c->pieces;
    }
    c->off_coef = NBWDG__ALIGN; /* room to align the base */
    c->off_tot = c->off_coef + nbwdg__round(((size_t)c->NC * 5 + (size_t)p->C) * 4);
    c->off_part = c->off_tot + nbwdg__round((size_t)c->NC * 2 * 4);
    c->ws_bytes = c->off_part + (c->nparts > 1 ? nbwdg__round((size_t)c->nparts * 2 * (size_t)c->NC * 4) : 0);
}

static nbwd_status nbwdg__gn_none(void) {
    return nbwd__fail(NBWD_ERR_UNSUPPORTED, "desc.stats_form = NBWD_STATS_NONE: the GPU path takes saved statistics "
                                            "(the CPU path computes them in the call)");
}
/* norm_bwd.h's checks, in its order and words, then the workspace. Every
   stride the CPU takes is taken (the kernels index the [C] and [N, groups]
   tensors with their strides). */
static nbwd_status nbwdg__gn_prepare(const nbwd_group_norm_bwd_desc *desc, const nbwd_group_norm_bwd_args *args,
                                     const void *workspace, size_t bytes, nbwd__gn_plan *p, nbwdg__gn_cfg *c) {
    nbwd_status s;
    if ((s = nbwd__gn_plan_desc(desc, p)) != NBWD_OK) return s;
    if (!args) return nbwd__fail(NBWD_ERR_NULL_POINTER, "args is NULL");
    if ((s = nbwd__gn_check_args(desc, p, args)) != NBWD_OK) return s;
    if (p->form == NBWD_STATS_NONE) return nbwdg__gn_none();
    nbwdg__gn_config(p, c);
    if ((s = nbwdg__ws_check(c->ws_bytes, workspace, bytes)) == NBWD_OK) nbwd__msg[0] = 0;
    return s;
}

NBWD_GPU_API nbwd_status nbwd_gpu_group_norm_bwd_workspace_size(const nbwd_group_norm_bwd_desc *desc, size_t *bytes) {
    static const char entry[] = "nbwd_gpu_group_norm_bwd_workspace_size";
    nbwd__gn_plan p;
    nbwdg__gn_cfg c;
    nbwd_status s;
    if (!bytes) return nbwdg__reject(entry, nbwd__fail(NBWD_ERR_NULL_POINTER, "bytes is NULL"));
    if ((s = nbwd__gn_plan_desc(desc, &p)) != NBWD_OK) return nbwdg__reject(entry, s);
    if (p.form == NBWD_STATS_NONE) return nbwdg__reject(entry, nbwdg__gn_none());
    nbwdg__gn_config(&p, &c);
    *bytes = c.ws_bytes;
    nbwd__msg[0] = 0;
    return NBWD_OK;
}

/* After validation: the launches (CUDA), or NBWD_ERR_UNSUPPORTED (stub). */
static nbwd_status nbwdg__gn_run(const nbwd_group_norm_bwd_desc *desc, const nbwd_group_norm_bwd_args *args,
                                 const nbwd__gn_plan *p, const nbwdg__gn_cfg *c, void *workspace, void *stream);

NBWD_GPU_API nbwd_status nbwd_gpu_group_norm_bwd(const nbwd_group_norm_bwd_desc *desc,
                                                 const nbwd_group_norm_bwd_args *args, void *workspace,
                                                 size_t workspace_bytes, void *stream) {
    nbwd__gn_plan p;
    nbwdg__gn_cfg c;
    nbwd_status s;
    if ((s = nbwdg__gn_prepare(desc, args, workspace, workspace_bytes, &p, &c)) != NBWD_OK)
        return nbwdg__reject("nbwd_gpu_group_norm_bwd", s);
    return nbwdg__gn_run(desc, args, &p, &c, workspace, stream);
}

#if !defined(__CUDACC__)
/* ------------------------------------------------------------------ stub */
static void nbwdg__no_cuda(void) {
    nbwdg__set_error("norm_bwd_gpu", "NBWD_ERR_UNSUPPORTED",
                     "this build has no CUDA (norm_bwd_gpu.h was compiled without nvcc)");
}

static nbwd_status nbwdg__layer_norm_bwd(const nbwd_layer_norm_bwd_desc *desc, int rms,
                                         const nbwd_layer_norm_bwd_args *args, void *workspace, size_t workspace_bytes,
                                         void *stream) {
    nbwd__ln_plan p;
    nbwdg__ln_cfg c;
    nbwd_status s;
    (void)stream;
    if ((s = nbwdg__ln_prepare(desc, rms, args, workspace, workspace_bytes, &p, &c)) != NBWD_OK)
        return nbwdg__reject(rms ? "nbwd_gpu_rms_norm_bwd" : "nbwd_gpu_layer_norm_bwd", s);
    nbwdg__no_cuda();
    return NBWD_ERR_UNSUPPORTED;
}

static nbwd_status nbwdg__bn_run(const nbwd_batch_norm_bwd_desc *desc, const nbwd_batch_norm_bwd_args *args,
                                 const nbwd__bn_sums *sums, nbwd__bn_plan *p, const nbwdg__bn_cfg *c,
                                 void *workspace, void *stream) {
    (void)desc; (void)args; (void)sums; (void)p; (void)c; (void)workspace; (void)stream;
    nbwdg__no_cuda();
    return NBWD_ERR_UNSUPPORTED;
}

static nbwd_status nbwdg__gn_run(const nbwd_group_norm_bwd_desc *desc, const nbwd_group_norm_bwd_args *args,
                                 const nbwd__gn_plan *p, const nbwdg__gn_cfg *c, void *workspace, void *stream) {
    (void)desc; (void)args; (void)p; (void)c; (void)workspace; (void)stream;
    nbwdg__no_cuda();
    return NBWD_ERR_UNSUPPORTED;
}

NBWD_GPU_API nbwd_status nbwd_gpu_device_count(int *count) {
    if (!count) return NBWD_ERR_NULL_POINTER;
    *count = 0;
    nbwdg__no_cuda();
    return NBWD_ERR_UNSUPPORTED;
}

#else /* __CUDACC__ */
/* ================================================================== CUDA */
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>

static int nbwd_gpu__max_grid = 0; /* test knob: cap on every grid size (0: none) */
#define NBWDG__GRID_LIMIT (1 << 20)

static unsigned nbwdg__grid(int64_t want) {
    int64_t cap = nbwd_gpu__max_grid > 0 ? nbwd_gpu__max_grid : NBWDG__GRID_LIMIT;
    if (want > cap) want = cap;
    return (unsigned)(want < 1 ? 1 : want);
}

/* ------------------------------------------------------ device helpers */
__device__ __forceinline__ float nbwdg__ld(const void *p, int64_t i, int dt) {
    if (dt == NBWD_F32) return ((const float *)p)[i];
    unsigned short u = ((const unsigned short *)p)[i];
    return dt == NBWD_F16 ? __half2float(__ushort_as_half(u)) : __bfloat162float(__ushort_as_bfloat16(u));
}
__device__ __forceinline__ void nbwdg__st(void *p, int64_t i, int dt, float v) {
    if (dt == NBWD_F32) ((float *)p)[i] = v;
    else if (dt == NBWD_F16) ((unsigned short *)p)[i] = __half_as_ushort(__float2half_rn(v));
    else ((unsigned short *)p)[i] = __bfloat16_as_ushort(__float2bfloat16_rn(v));
}
__device__ __forceinline__ void nbwdg__write_param(void *out, int64_t j, int pdt, float v, int accumulate) {
    if (accumulate) v = __fadd_rn(nbwdg__ld(out, j, pdt), v);
    nbwdg__st(out, j, pdt, v);
}

/* nbwd__stats on the device: the same double-precision rstd. */
__device__ __forceinline__ void nbwdg__stats(int form, int sdt, float eps, const void *mean, int64_t mi,
                                             const void *spread, int64_t si, float &xm, float &xs, float &rstd) {
    double s = nbwdg__ld(spread, si, sdt);
    if (form == NBWD_STATS_XHAT_STD || form == NBWD_STATS_DST_RSTD) {
        /* the input is xhat, or (DST_RSTD) what xhat is recovered from:
           (x - 0) * 1 is exact */
        xm = 0.0f; xs = 1.0f;
        rstd = form == NBWD_STATS_DST_RSTD ? (float)s : (float)(1.0 / s);
        return;
    }
    xm = mean ? nbwdg__ld(mean, mi, sdt) : 0.0f; /* RMSNorm: no mean */
    rstd = form == NBWD_STATS_MEAN_RSTD ? (float)s : (float)(1.0 / sqrt(s + (double)eps));
    xs = rstd;
}

template <int DT> struct nbwdg__ty;
template <> struct nbwdg__ty<NBWD_F32> {
    typedef float S;
    enum { V = 4 };
    static __device__ __forceinline__ float in(S v) { return v; }
    static __device__ __forceinline__ S out(float v) { return v; }
};
template <> struct nbwdg__ty<NBWD_F16> {
    typedef unsigned short S;
    enum { V = 8 };
    static __device__ __forceinline__ float in(S v) { return __half2float(__ushort_as_half(v)); }
    static __device__ __forceinline__ S out(float v) { return __half_as_ushort(__float2half_rn(v)); }
};
template <> struct nbwdg__ty<NBWD_BF16> {
    typedef unsigned short S;
    enum { V = 8 };
    static __device__ __forceinline__ float in(S v) { return __bfloat162float(__ushort_as_bfloat16(v)); }
    static __device__ __forceinline__ S out(float v) { return __bfloat16_as_ushort(__float2bfloat16_rn(v)); }
};
/* 16 bytes of data: one vector load or store. */
template <int DT> struct __align__(16) nbwdg__vec { typename nbwdg__ty<DT>::S e[nbwdg__ty<DT>::V]; };

/* Chunk of cnt <= V elements at p[e0]: a 16-byte load when vec (then the
   row is dense, aligned and a multiple of V), else scalar loads (zeros past
   cnt). Either way the same values in the same lanes. */
template <int DT>
__device__ __forceinline__ nbwdg__vec<DT> nbwdg__ldv(const void *base, int64_t e0, int cnt, int vec) {
    typedef typename nbwdg__ty<DT>::S S;
    const S *p = (const S *)base + e0;
    nbwdg__vec<DT> v;
    if (vec) {
        v = *(const nbwdg__vec<DT> *)p;
    } else {
#pragma unroll
        for (int i = 0; i < nbwdg__ty<DT>::V; ++i) v.e[i] = i < cnt ? p[i] : (S)0;
    }
    return v;
}
template <int DT>
__device__ __forceinline__ void nbwdg__stv(void *base, int64_t e0, int cnt, int vec, const nbwdg__vec<DT> &v) {
    typedef typename nbwdg__ty<DT>::S S;
    S *p = (S *)base + e0;
    if (vec) {
        *(nbwdg__vec<DT> *)p = v;
    } else {
#pragma unroll
        for (int i = 0; i < nbwdg__ty<DT>::V; ++i)
            if (i < cnt) p[i] = v.e[i];
    }
}
/* A parameter tensor (f32 or the data type: gamma, beta) for one chunk,
   as floats, plus the offset (added only when nonzero: gamma's -0 stays
   -0, as on the CPU). */
template <int DT>
__device__ __forceinline__ void nbwdg__ld_param(float *gm, const void *g, int pdt, int64_t e0, int cnt, int gvec,
                                                float offset) {
    enum { V = nbwdg__ty<DT>::V };
    if (gvec && pdt == NBWD_F32) {
#pragma unroll
        for (int i = 0; i < V; i += 4) {
            float4 f = *(const float4 *)((const float *)g + e0 + i);
            gm[i] = f.x; gm[i + 1] = f.y; gm[i + 2] = f.z; gm[i + 3] = f.w;
        }
    } else if (gvec) { /* pdt == DT */
        nbwdg__vec<DT> v = *(const nbwdg__vec<DT> *)((const typename nbwdg__ty<DT>::S *)g + e0);
#pragma unroll
        for (int i = 0; i < V; ++i) gm[i] = nbwdg__ty<DT>::in(v.e[i]);
    } else {
#pragma unroll
        for (int i = 0; i < V; ++i) gm[i] = i < cnt ? nbwdg__ld(g, e0 + i, pdt) : 0.0f;
    }
    if (offset != 0.0f) {
#pragma unroll
        for (int i = 0; i < V; ++i) gm[i] = __fadd_rn(gm[i], offset);
    }
}

/* Element offsets of outer index `row` for each tensor (row-major order
   over the merged outer dims of norm_bwd.h's nbwd__outer). */
__device__ __forceinline__ void nbwdg__offsets(const nbwd__outer &o, int64_t row, int64_t *off) {
#pragma unroll
    for (int t = 0; t < NBWD__MAX_T; ++t) off[t] = 0;
    if (o.nd == 1) {
#pragma unroll
        for (int t = 0; t < NBWD__MAX_T; ++t)
            if (t < o.nt) off[t] = row * o.st[t][0];
        return;
    }
    for (int d = o.nd - 1; d >= 0; --d) {
        int64_t i = row % o.dims[d];
        row /= o.dims[d];
#pragma unroll
        for (int t = 0; t < NBWD__MAX_T; ++t)
            if (t < o.nt) off[t] += i * o.st[t][d];
    }
}

/* The first three tensors' offsets alone (x, dy, dx): what the apply
   kernels keep per row in flight, fewer registers than all NBWD__MAX_T. */
__device__ __forceinline__ void nbwdg__offsets3(const nbwd__outer &o, int64_t row, int64_t &a, int64_t &b, int64_t &c) {
    if (o.nd == 1) {
        a = row * o.st[0][0]; b = row * o.st[1][0]; c = row * o.st[2][0];
        return;
    }
    a = b = c = 0;
    for (int d = o.nd - 1; d >= 0; --d) {
        const int64_t i = row % o.dims[d];
        row /= o.dims[d];
        a += i * o.st[0][d]; b += i * o.st[1][d]; c += i * o.st[2][d];
    }
}

/* Sum of (a, b) over a group of G threads, the same value in every thread,
   in a fixed order. G <= 32: butterfly within the G-lane segment (mask =
   the segment's lanes); G > 32: the whole block is the group. */
__device__ __forceinline__ void nbwdg__group_sum2(float &a, float &b, int G, unsigned mask, float *red) {
    if (G <= 32) {
        for (int o = G / 2; o > 0; o >>= 1) {
            a = __fadd_rn(a, __shfl_xor_sync(mask, a, o));
            b = __fadd_rn(b, __shfl_xor_sync(mask, b, o));
        }
        return;
    }
    for (int o = 16; o > 0; o >>= 1) {
        a = __fadd_rn(a, __shfl_xor_sync(0xffffffffu, a, o));
        b = __fadd_rn(b, __shfl_xor_sync(0xffffffffu, b, o));
    }
    const int w = threadIdx.x >> 5, nw = blockDim.x >> 5;
    if ((threadIdx.x & 31) == 0) { red[w] = a; red[32 + w] = b; }
    __syncthreads();
    a = red[0]; b = red[32];
    for (int i = 1; i < nw; ++i) { a = __fadd_rn(a, red[i]); b = __fadd_rn(b, red[32 + i]); }
    __syncthreads();
}

/* -------------------------------------------------------- LayerNorm */
struct nbwdg__ln_k {
    nbwd__outer o; /* rows: x, dy, dx, mean, spread, residual (NBWD__LN_X..TRES) */
    const void *x, *dy, *mean, *spread;
    const void *gamma; /* NULL: 1 (no affine, or neither dx nor unscale reads it) */
    const void *beta;  /* unscale: the forward's bias (NULL: none) */
    const void *res;   /* diff_residual, added to dx (NULL: none) */
    void *dx;
    float *part; /* [nblocks][2][n] */
    int64_t rows, n, R, nblocks;
    int sdt, pdt, form, want_dx, want_pg, vec, gvec, bvec, G;
    int acc_smem; /* A == 1: column partials in shared memory (else global) */
    float eps;
    float gamma_offset; /* desc.gamma_offset: the scale is gamma + it */
    int rms;            /* RMSNorm: no mean (NULL), no mean(g) term */
    /* DST_RSTD with affine: x is the forward output and xhat is recovered
       per element (a runtime flag, not a template argument: no more
       kernel instances to compile) */
    int unscale;
};


/* xhat of one element of the forward output y = xhat * scale + beta: (y -
   beta) * (1 / scale) with an IEEE reciprocal and a separate subtract and
   multiply (never contracted), so the bits are the CPU path's. A zero or
   subnormal scale leaves no trace of xhat in y: 0 there (a NaN or
   infinite y stays NaN, as x would). */
__device__ __forceinline__ float nbwdg__unscale(float y, float scale, float beta) {
    const float inv = fabsf(scale) >= 1.17549435e-38f ? __frcp_rn(scale) : 0.0f; /* FLT_MIN */
    return __fmul_rn(__fsub_rn(y, beta), inv);
}
/* xhat of a chunk: (x - mean) * rstd (xhat itself with xm 0, xs 1:
   exact), or recovered from the forward output with the chunk's scale gm
   (gamma + offset, loaded by the caller for dx too) and beta (0 without
   one). One branch per chunk, beta live only inside it: less register
   pressure (spills) in the kernels every form shares. */
template <int DT, int X>
__device__ __forceinline__ void nbwdg__xhats(const nbwdg__ln_k &p, const nbwdg__vec<DT> &cx, int64_t e0, int cnt,
                                             float xm, float xs, const float *gm, float *xh) {
    typedef nbwdg__ty<DT> TY;
    enum { V = TY::V };
    if (X && p.unscale) {
        float bm[V];
        if (p.beta) {
            nbwdg__ld_param<DT>(bm, p.beta, p.pdt, e0, cnt, p.bvec, 0.0f);
        } else {
#pragma unroll
            for (int v = 0; v < V; ++v) bm[v] = 0.0f;
        }
#pragma unroll
        for (int v = 0; v < V; ++v) xh[v] = nbwdg__unscale(TY::in(cx.e[v]), gm[v], bm[v]);
    } else {
#pragma unroll
        for (int v = 0; v < V; ++v) xh[v] = __fmul_rn(__fsub_rn(TY::in(cx.e[v]), xm), xs);
    }
}

/* Pass-1 work on one chunk: the row sums (sg, sgx) and the column partials
   (A == 0: registers ra/rb; A == 1: acc[0..n) and acc[n..2n), which is
   shared memory or the block's partial row in global memory). The same
   additions in the same order whatever A and the load path. */
template <int DT, int A, int X>
__device__ __forceinline__ void nbwdg__ln_pass1(const nbwdg__ln_k &p, const nbwdg__vec<DT> &cx, const nbwdg__vec<DT> &cy,
                                                const float *gm, int64_t e0, int cnt, float xm, float xs, float &sg,
                                                float &sgx, float *ra, float *rb, float *acc) {
    typedef nbwdg__ty<DT> TY;
    enum { V = TY::V };
    float xhv[V];
    nbwdg__xhats<DT, X>(p, cx, e0, cnt, xm, xs, gm, xhv);
#pragma unroll
    for (int v = 0; v < V; ++v) {
        if (v < cnt) {
            const float dv = TY::in(cy.e[v]);
            const float xh = xhv[v];
            if (p.want_dx) {
                const float g = p.gamma ? __fmul_rn(dv, gm[v]) : dv;
                sg = __fadd_rn(sg, g);
                sgx = __fmaf_rn(g, xh, sgx);
            }
            if (p.want_pg) {
                if constexpr (A == 0) {
                    ra[v] = __fmaf_rn(dv, xh, ra[v]);
                    rb[v] = __fadd_rn(rb[v], dv);
                } else if (!p.vec) {
                    acc[e0 + v] = __fmaf_rn(dv, xh, acc[e0 + v]);
                    acc[p.n + e0 + v] = __fadd_rn(acc[p.n + e0 + v], dv);
                }
            }
        }
    }
    if constexpr (A != 0) {
        /* dense rows (n a multiple of V, so every chunk is whole and every
           column partial 16-byte aligned): the chunk's partials in 16-byte
           accesses, the same operations per element */
        if (p.want_pg && p.vec) {
            float4 *pa = (float4 *)(acc + e0), *pb = (float4 *)(acc + p.n + e0);
#pragma unroll
            for (int i = 0; i < V / 4; ++i) {
                float4 a = pa[i], b = pb[i];
                const float d0 = TY::in(cy.e[4 * i]), d1 = TY::in(cy.e[4 * i + 1]);
                const float d2 = TY::in(cy.e[4 * i + 2]), d3 = TY::in(cy.e[4 * i + 3]);
                a.x = __fmaf_rn(d0, xhv[4 * i], a.x); a.y = __fmaf_rn(d1, xhv[4 * i + 1], a.y);
                a.z = __fmaf_rn(d2, xhv[4 * i + 2], a.z); a.w = __fmaf_rn(d3, xhv[4 * i + 3], a.w);
                b.x = __fadd_rn(b.x, d0); b.y = __fadd_rn(b.y, d1); b.z = __fadd_rn(b.z, d2); b.w = __fadd_rn(b.w, d3);
                pa[i] = a;
                pb[i] = b;
            }
        }
    }
}

/* Pass 2 on one chunk: dx = rstd * (g - (mean_g + xhat * mean_gx)), plus
   the residual gradient (resr: its row, or NULL) in f32, so that dx is
   rounded to the data type once. The residual may be dx itself: each
   element is read before the same thread writes it. */
template <int DT, int X>
__device__ __forceinline__ void nbwdg__ln_pass2(const nbwdg__ln_k &p, const nbwdg__vec<DT> &cx, const nbwdg__vec<DT> &cy,
                                                const float *gm, const nbwdg__vec<DT> &cr, void *dxr, const void *resr,
                                                int64_t e0, int cnt, float xm, float xs, float mg, float mgx,
                                                float rstd) {
    typedef nbwdg__ty<DT> TY;
    enum { V = TY::V };
    float xhv[V];
    nbwdg__vec<DT> o;
    nbwdg__xhats<DT, X>(p, cx, e0, cnt, xm, xs, gm, xhv);
#pragma unroll
    for (int v = 0; v < V; ++v) {
        const float dv = TY::in(cy.e[v]);
        const float xh = xhv[v];
        const float g = p.gamma ? __fmul_rn(dv, gm[v]) : dv;
        float d = __fmul_rn(__fsub_rn(g, __fmaf_rn(xh, mgx, mg)), rstd);
        if (X && resr) d = __fadd_rn(d, TY::in(cr.e[v]));
        o.e[v] = TY::out(d);
    }
    nbwdg__stv<DT>(dxr, e0, cnt, p.vec, o);
}

/* Loads of a batch: chunks c0, c0 + G, ... (KB of them, those < chunks) of
   a and b (b may be NULL: not loaded). */
template <int DT, int KB>
__device__ __forceinline__ void nbwdg__ln_load(const nbwdg__ln_k &p, const void *a, const void *b, int64_t c0, int G,
                                               int64_t chunks, nbwdg__vec<DT> *va, nbwdg__vec<DT> *vb) {
    enum { V = nbwdg__ty<DT>::V };
#pragma unroll
    for (int k = 0; k < KB; ++k) {
        const int64_t c = c0 + (int64_t)k * G, e0 = c * V;
        if (c < chunks) {
            const int cnt = p.n - e0 < V ? (int)(p.n - e0) : V;
            va[k] = nbwdg__ldv<DT>(a, e0, cnt, p.vec);
            if (b) vb[k] = nbwdg__ldv<DT>(b, e0, cnt, p.vec);
        }
    }
}
/* The parameter's chunk (gamma + offset) as floats; nothing without gamma. */
template <int DT>
__device__ __forceinline__ void nbwdg__ln_gamma(const nbwdg__ln_k &p, int64_t e0, int cnt, float *gm) {
    if (p.gamma) nbwdg__ld_param<DT>(gm, p.gamma, p.pdt, e0, cnt, p.gvec, p.gamma_offset);
}

/* The groups' column partials, NG rows of w floats in shared memory (group
   g's at g * w), summed by a pairwise tree in a fixed order into out[0..w).
   The whole block calls it; it holds the barriers before, between and
   after. */
__device__ __forceinline__ void nbwdg__group_tree(float *sm, int NG, int w, float *out) {
    __syncthreads();
    for (int s = NG / 2; s > 0; s >>= 1) {
        for (int i = threadIdx.x; i < s * w; i += blockDim.x) {
            const int gg = i / w, j = i - gg * w;
            sm[gg * w + j] = __fadd_rn(sm[gg * w + j], sm[(gg + s) * w + j]);
        }
        __syncthreads();
    }
    for (int j = threadIdx.x; j < w; j += blockDim.x) out[j] = sm[j];
    __syncthreads();
}

/* One block of R rows: dx per row and the block's diff_gamma/diff_beta
   partials. See nbwdg__ln_config for the mapping. K > 0: the thread's K
   chunks stay in registers between the passes; K == 0: re-read. A == 0
   (G <= 32, 256 / G groups per block): column partials in registers, then
   a pairwise tree over the groups in shared memory. A == 2 (the same
   groups, f32): each group's column partials in shared memory, then the
   same tree, so the same sums in the same order. A == 1 (one group per
   block): column partials in shared memory (p.acc_smem) or directly in the
   block's partial row in global memory; each column is only ever touched
   by its owning thread, in row order. */
template <int DT, int K, int A, int X>
__global__ void __launch_bounds__(A != 1 ? 256 : K == 0 ? 1024 : 512, A == 2 ? 2 : 1)
    nbwdg__ln_kernel(const __grid_constant__ nbwdg__ln_k p) {
    typedef nbwdg__ty<DT> TY;
    /* KB: chunks per batch of loads. BATCH (4-byte data): a batch's
       loads are issued together before any use; 16-bit data interleaves
       each chunk's loads with its use (batched, its registers spill). */
    enum { V = TY::V, KR = A == 0 ? K : 1, KB = K > 0 ? K : 1, BATCH = DT == NBWD_F32 };
    extern __shared__ float nbwdg__smem[];
    const int G = p.G, tid = threadIdx.x, NG = blockDim.x / G, grp = tid / G, lane = tid % G;
    const int64_t n = p.n, chunks = (n + V - 1) / V;
    const unsigned mask = G >= 32 ? 0xffffffffu : (((1u << G) - 1u) << ((tid & 31) & ~(G - 1)));
    float ra[KR][V], rb[KR][V];

    for (int64_t b = blockIdx.x; b < p.nblocks; b += gridDim.x) {
        const int64_t r0 = b * p.R, r1 = r0 + p.R < p.rows ? r0 + p.R : p.rows;
        float *pdg = p.want_pg ? p.part + b * 2 * n : nullptr;
        float *acc = nullptr;
        if constexpr (A == 0) {
#pragma unroll
            for (int k = 0; k < KR; ++k)
#pragma unroll
                for (int v = 0; v < V; ++v) ra[k][v] = rb[k][v] = 0.0f;
        } else if (p.want_pg) {
            acc = A == 2 ? nbwdg__smem + grp * 2 * n : p.acc_smem ? nbwdg__smem + 64 : pdg;
            for (int64_t c = lane; c < chunks; c += G)
                for (int64_t e = c * V; e < c * V + V && e < n; ++e) acc[e] = acc[n + e] = 0.0f;
        }

        for (int64_t row = r0 + grp; row < r1; row += NG) {
            int64_t off[NBWD__MAX_T];
            float xm, xs, rstd, sg = 0.0f, sgx = 0.0f;
            nbwdg__offsets(p.o, row, off);
            nbwdg__stats(p.form, p.sdt, p.eps, p.mean, off[NBWD__LN_MEAN], p.spread, off[NBWD__LN_SPREAD], xm, xs, rstd);
            const typename TY::S *xr = (const typename TY::S *)p.x + off[NBWD__LN_X];
            const typename TY::S *dyr = (const typename TY::S *)p.dy + off[NBWD__LN_DY];
            void *dxr = p.want_dx ? (void *)((typename TY::S *)p.dx + off[NBWD__LN_DX]) : nullptr;
            const void *resr = X && p.res ? (const void *)((const typename TY::S *)p.res + off[NBWD__LN_RES]) : nullptr;
            /* Each batch of KB chunks of x and dy is loaded whole before any
               of it is used: a store in between (the column partials, dx)
               would otherwise hold the next chunk's loads behind it (the
               pointers may alias), one memory round trip per chunk. K > 0:
               one batch, kept for pass 2; K == 0: batches along the row,
               re-read in pass 2 (from L2). gamma comes from L1. */
            nbwdg__vec<DT> cx[KB], cy[KB];
            const int64_t cend = K > 0 ? lane + 1 : chunks, cstep = (int64_t)G * KB;
            for (int64_t c0 = lane; c0 < cend; c0 += cstep) {
                if (BATCH) nbwdg__ln_load<DT, KB>(p, xr, dyr, c0, G, chunks, cx, cy);
#pragma unroll
                for (int k = 0; k < KB; ++k) {
                    const int64_t c = c0 + (int64_t)k * G, e0 = c * V;
                    if (c < chunks) {
                        const int cnt = n - e0 < V ? (int)(n - e0) : V;
                        float gm[V];
                        if (!BATCH) {
                            cx[k] = nbwdg__ldv<DT>(xr, e0, cnt, p.vec);
                            cy[k] = nbwdg__ldv<DT>(dyr, e0, cnt, p.vec);
                        }
                        nbwdg__ln_gamma<DT>(p, e0, cnt, gm);
                        nbwdg__ln_pass1<DT, A, X>(p, cx[k], cy[k], gm, e0, cnt, xm, xs, sg, sgx, ra[A == 0 ? k : 0],
                                                  rb[A == 0 ? k : 0], acc);
                    }
                }
            }
            if (p.want_dx) {
                nbwdg__group_sum2(sg, sgx, G, mask, nbwdg__smem);
                const float mg = p.rms ? 0.0f : (float)((double)sg / (double)n);
                const float mgx = (float)((double)sgx / (double)n);
                for (int64_t c0 = lane; c0 < cend; c0 += cstep) {
                    nbwdg__vec<DT> cr[KB];
                    if (K == 0) nbwdg__ln_load<DT, KB>(p, xr, dyr, c0, G, chunks, cx, cy);
                    if (BATCH && X && resr) nbwdg__ln_load<DT, KB>(p, resr, nullptr, c0, G, chunks, cr, cr);
#pragma unroll
                    for (int k = 0; k < KB; ++k) {
                        const int64_t c = c0 + (int64_t)k * G, e0 = c * V;
                        if (c < chunks) {
                            const int cnt = n - e0 < V ? (int)(n - e0) : V;
                            float gm[V];
                            if (!BATCH && X && resr) cr[k] = nbwdg__ldv<DT>(resr, e0, cnt, p.vec);
                            nbwdg__ln_gamma<DT>(p, e0, cnt, gm);
                            nbwdg__ln_pass2<DT, X>(p, cx[k], cy[k], gm, cr[k], dxr, resr, e0, cnt, xm, xs, mg, mgx,
                                                   rstd);
                        }
                    }
                }
            }
        }

        if (p.want_pg) {
            if constexpr (A == 0) { /* NG groups: pairwise tree in shared memory, fixed order */
                const int ni = (int)n; /* n <= 4 * G * V <= 1024 here */
                for (int which = 0; which < 2; ++which) {
#pragma unroll
                    for (int k = 0; k < KR; ++k) {
                        const int c = lane + k * G, e0 = c * V;
#pragma unroll
                        for (int v = 0; v < V; ++v)
                            if (c < chunks && e0 + v < ni) nbwdg__smem[grp * ni + e0 + v] = which ? rb[k][v] : ra[k][v];
                    }
                    nbwdg__group_tree(nbwdg__smem, NG, ni, pdg + which * n);
                }
            } else if constexpr (A == 2) { /* the same tree over the groups' [2][n] rows */
                nbwdg__group_tree(nbwdg__smem, NG, 2 * (int)n, pdg);
            } else if (p.acc_smem) { /* this thread's columns, shared -> global */
                for (int64_t c = lane; c < chunks; c += G)
                    for (int64_t e = c * V; e < c * V + V && e < n; ++e) { pdg[e] = acc[e]; pdg[n + e] = acc[n + e]; }
            }
        }
    }
}

/* Stage 2: out[j] = sum over b of part[b * width + j], in a fixed order:
   32 slices (b = slice, slice + 32, ...) each summed in order, then the 32
   slice sums in order. mode 0: totals[j] (float); mode 1: LayerNorm params
   (j < n: diff_gamma[j], else diff_beta[j - n]). */
struct nbwdg__comb_k {
    const float *part;
    int64_t nb, width, n;
    float *totals;
    void *dg, *db;
    int mode, pdt, accumulate;
};

__global__ void __launch_bounds__(1024) nbwdg__combine_kernel(const __grid_constant__ nbwdg__comb_k p) {
    __shared__ float s[32][33];
    const int tx = threadIdx.x, ty = threadIdx.y;
    for (int64_t tile = blockIdx.x; tile * 32 < p.width; tile += gridDim.x) {
        const int64_t j = tile * 32 + tx;
        float acc = 0.0f;
        if (j < p.width)
            for (int64_t b = ty; b < p.nb; b += 32) acc = __fadd_rn(acc, p.part[b * p.width + j]);
        s[ty][tx] = acc;
        __syncthreads();
        if (ty == 0 && j < p.width) {
            float t = s[0][tx];
            for (int i = 1; i < 32; ++i) t = __fadd_rn(t, s[i][tx]);
            if (p.mode == 0) p.totals[j] = t;
            else if (j < p.n) { if (p.dg) nbwdg__write_param(p.dg, j, p.pdt, t, p.accumulate); }
            else if (p.db) nbwdg__write_param(p.db, j - p.n, p.pdt, t, p.accumulate);
        }
        __syncthreads();
    }
}

/* -------------------------------------------------------- BatchNorm */
struct nbwdg__bn_k {
    nbwd__outer o; /* rows (NXC: N*S rows of C; NCX: N*C planes of S): x, dy, dx */
    const void *x, *dy, *mean, *spread, *gamma;
    void *dx, *dg, *db;
    float *coef; /* [5][C]: xm, xs, mean_g, mean_gx, scale */
    float *part;
    int64_t C, M, rows, inner, R, nper, N, nb;
    int TX, nxc, vec, sdt, pdt, form, accumulate;
    int64_t ARB; /* NXC apply: rows per block (TX threads across the channel chunks) */
    int global_stats; /* NBWD_USE_GLOBAL_STATS */
    float eps;
    int64_t count;                     /* the sums' batch size: M, or apply's count */
    const float *given_dy, *given_dyx; /* apply: the global sums (NULL: none) */
};

/* Channel c's (xm, xs, rstd) from the statistics: computed where they are
   used (pass 1, the finish) rather than by a kernel of their own, one
   launch fewer; the same function, so the same bits. */
__device__ __forceinline__ void nbwdg__bn_stats(const nbwdg__bn_k &p, int64_t c, float &xm, float &xs, float &rstd) {
    nbwdg__stats(p.form, p.sdt, p.eps, p.mean, c, p.spread, c, xm, xs, rstd);
}

/* NXC: block b of R rows x a tile of TX channel chunks; 256 / TX row slices,
   combined by a pairwise tree. Partial [b][2][C]. */
template <int DT>
__global__ void __launch_bounds__(NBWDG__BN_THREADS) nbwdg__bn_nxc_reduce(const __grid_constant__ nbwdg__bn_k p) {
    typedef nbwdg__ty<DT> TY;
    enum { V = TY::V };
    __shared__ float sm[2][NBWDG__BN_THREADS * V];
    const int TX = p.TX, TY_ = NBWDG__BN_THREADS / TX, tx = threadIdx.x % TX, ty = threadIdx.x / TX;
    const int64_t C = p.C, chunks = (C + V - 1) / V, tiles = (chunks + TX - 1) / TX;
    for (int64_t item = blockIdx.x; item < p.nb * tiles; item += gridDim.x) {
        const int64_t b = item / tiles, tile = item - b * tiles, c = tile * TX + tx, e0 = c * V;
        const int64_t r0 = b * p.R, r1 = r0 + p.R < p.M ? r0 + p.R : p.M;
        const int cnt = c < chunks ? (C - e0 < V ? (int)(C - e0) : V) : 0;
        float a[V], d[V], xm[V], xs[V];
#pragma unroll
        for (int v = 0; v < V; ++v) {
            a[v] = d[v] = 0.0f;
            xm[v] = xs[v] = 0.0f;
            if (v < cnt) {
                float rstd;
                nbwdg__bn_stats(p, e0 + v, xm[v], xs[v], rstd);
            }
        }
        if (cnt > 0) {
#pragma unroll 4
            for (int64_t row = r0 + ty; row < r1; row += TY_) {
                int64_t off[NBWD__MAX_T];
                nbwdg__offsets(p.o, row, off);
                const nbwdg__vec<DT> cx = nbwdg__ldv<DT>((const typename TY::S *)p.x + off[0], e0, cnt, p.vec);
                const nbwdg__vec<DT> cy = nbwdg__ldv<DT>((const typename TY::S *)p.dy + off[1], e0, cnt, p.vec);
#pragma unroll
                for (int v = 0; v < V; ++v) {
                    if (v < cnt) {
                        const float dv = TY::in(cy.e[v]);
                        const float xh = __fmul_rn(__fsub_rn(TY::in(cx.e[v]), xm[v]), xs[v]);
                        a[v] = __fmaf_rn(dv, xh, a[v]);
                        d[v] = __fadd_rn(d[v], dv);
                    }
                }
            }
        }
#pragma unroll
        for (int v = 0; v < V; ++v) { sm[0][threadIdx.x * V + v] = a[v]; sm[1][threadIdx.x * V + v] = d[v]; }
        __syncthreads();
        for (int s = TY_ / 2; s > 0; s >>= 1) {
            if (ty < s) {
#pragma unroll
                for (int v = 0; v < V; ++v) {
                    const int i = (ty * TX + tx) * V + v, k = ((ty + s) * TX + tx) * V + v;
                    sm[0][i] = __fadd_rn(sm[0][i], sm[0][k]);
                    sm[1][i] = __fadd_rn(sm[1][i], sm[1][k]);
                }
            }
            __syncthreads();
        }
        if (ty == 0) {
            for (int v = 0; v < cnt; ++v) {
                p.part[b * 2 * C + e0 + v] = sm[0][tx * V + v];
                p.part[b * 2 * C + C + e0 + v] = sm[1][tx * V + v];
            }
        }
        __syncthreads();
    }
}

/* NCX: (channel c, batch entries [k * nper, ...)) per block; every thread
   sums its chunks of each plane, then a fixed block reduction. Partial
   [k][2][C]. */
template <int DT>
__global__ void __launch_bounds__(NBWDG__BN_THREADS) nbwdg__bn_ncx_reduce(const __grid_constant__ nbwdg__bn_k p) {
    typedef nbwdg__ty<DT> TY;
    enum { V = TY::V };
    __shared__ float red[64];
    const int64_t C = p.C, S = p.inner, chunks = (S + V - 1) / V;
    for (int64_t item = blockIdx.x; item < C * p.nb; item += gridDim.x) {
        const int64_t c = item / p.nb, k = item - c * p.nb;
        const int64_t n0 = k * p.nper, n1 = n0 + p.nper < p.N ? n0 + p.nper : p.N;
        float xm, xs, rstd;
        nbwdg__bn_stats(p, c, xm, xs, rstd);
        float a = 0.0f, d = 0.0f;
        for (int64_t nn = n0; nn < n1; ++nn) {
            int64_t off[NBWD__MAX_T];
            nbwdg__offsets(p.o, nn * C + c, off);
            const typename TY::S *xr = (const typename TY::S *)p.x + off[0];
            const typename TY::S *dyr = (const typename TY::S *)p.dy + off[1];
#pragma unroll 4
            for (int64_t cc = threadIdx.x; cc < chunks; cc += NBWDG__BN_THREADS) {
                const int64_t e0 = cc * V;
                const int cnt = S - e0 < V ? (int)(S - e0) : V;
                const nbwdg__vec<DT> cx = nbwdg__ldv<DT>(xr, e0, cnt, p.vec);
                const nbwdg__vec<DT> cy = nbwdg__ldv<DT>(dyr, e0, cnt, p.vec);
#pragma unroll
                for (int v = 0; v < V; ++v) {
                    if (v < cnt) {
                        const float dv = TY::in(cy.e[v]);
                        const float xh = __fmul_rn(__fsub_rn(TY::in(cx.e[v]), xm), xs);
                        a = __fmaf_rn(dv, xh, a);
                        d = __fadd_rn(d, dv);
                    }
                }
            }
        }
        for (int o = 16; o > 0; o >>= 1) {
            a = __fadd_rn(a, __shfl_xor_sync(0xffffffffu, a, o));
            d = __fadd_rn(d, __shfl_xor_sync(0xffffffffu, d, o));
        }
        if ((threadIdx.x & 31) == 0) { red[threadIdx.x >> 5] = a; red[32 + (threadIdx.x >> 5)] = d; }
        __syncthreads();
        if (threadIdx.x == 0) {
            for (int w = 1; w < NBWDG__BN_THREADS / 32; ++w) { red[0] = __fadd_rn(red[0], red[w]); red[32] = __fadd_rn(red[32], red[32 + w]); }
            p.part[k * 2 * C + c] = red[0];
            p.part[k * 2 * C + C + c] = red[32];
        }
        __syncthreads();
    }
}

/* Channel sums complete: coefficients and diff_gamma/diff_beta
   (nbwd__bn_finish). coef NULL: an empty slice's apply, the parameters'
   gradients alone. */
__device__ __forceinline__ void nbwdg__bn_finish(const nbwdg__bn_k &p, int64_t c, float sum_dyx, float sum_dy) {
    if (p.coef) {
        float xm, xs, rstd;
        nbwdg__bn_stats(p, c, xm, xs, rstd);
        const float gamma = p.gamma ? nbwdg__ld(p.gamma, c, p.pdt) : 1.0f;
        p.coef[c] = xm;
        /* global statistics: dx = dy * scale (as the CPU path: xhat's scale 0) */
        p.coef[p.C + c] = p.global_stats ? 0.0f : xs;
        p.coef[2 * p.C + c] = p.global_stats ? 0.0f : (float)((double)sum_dy / (double)p.count);
        p.coef[3 * p.C + c] = p.global_stats ? 0.0f : (float)((double)sum_dyx / (double)p.count);
        p.coef[4 * p.C + c] = __fmul_rn(rstd, gamma);
    }
    if (p.dg) {
        nbwdg__write_param(p.dg, c, p.pdt, sum_dyx, p.accumulate);
        nbwdg__write_param(p.db, c, p.pdt, sum_dy, p.accumulate);
    }
}

/* The finish from given sums (apply's, or none: global statistics and dx
   alone). */
__global__ void nbwdg__bn_finish_kernel(const __grid_constant__ nbwdg__bn_k p) {
    for (int64_t c = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; c < p.C; c += (int64_t)gridDim.x * blockDim.x)
        nbwdg__bn_finish(p, c, p.given_dyx ? p.given_dyx[c] : 0.0f, p.given_dy ? p.given_dy[c] : 0.0f);
}

/* The partials [nb][2][C] summed per channel in nbwdg__combine_kernel's
   fixed order (32 slices b = slice, slice + 32, ..., then the 32 slice sums
   in order), both sums of a channel in one block, then the finish: the
   combine and the finish in one launch, the same bits. */
__global__ void __launch_bounds__(1024) nbwdg__bn_combine_finish(const __grid_constant__ nbwdg__bn_k p) {
    __shared__ float s[2][32][33];
    const int tx = threadIdx.x, ty = threadIdx.y;
    for (int64_t tile = blockIdx.x; tile * 32 < p.C; tile += gridDim.x) {
        const int64_t c = tile * 32 + tx;
        float a = 0.0f, d = 0.0f;
        if (c < p.C)
            for (int64_t b = ty; b < p.nb; b += 32) {
                a = __fadd_rn(a, p.part[b * 2 * p.C + c]);
                d = __fadd_rn(d, p.part[b * 2 * p.C + p.C + c]);
            }
        s[0][ty][tx] = a;
        s[1][ty][tx] = d;
        __syncthreads();
        if (ty == 0 && c < p.C) {
            a = s[0][0][tx];
            d = s[1][0][tx];
            for (int i = 1; i < 32; ++i) { a = __fadd_rn(a, s[0][i][tx]); d = __fadd_rn(d, s[1][i][tx]); }
            nbwdg__bn_finish(p, c, a, d);
        }
        __syncthreads();
    }
}

/* dx = (dy - (mean_g + xhat * mean_gx)) * scale. NCX: one chunk of a plane
   per thread, the plane's channel's five coefficients. */
template <int DT>
__global__ void __launch_bounds__(NBWDG__BN_THREADS) nbwdg__bn_apply(const __grid_constant__ nbwdg__bn_k p) {
    typedef nbwdg__ty<DT> TY;
    enum { V = TY::V };
    const int64_t C = p.C, chunks = (p.inner + V - 1) / V, total = p.rows * chunks;
    for (int64_t item = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; item < total;
         item += (int64_t)gridDim.x * blockDim.x) {
        const int64_t row = item / chunks, cc = item - row * chunks, e0 = cc * V, ch = row % C;
        const int cnt = p.inner - e0 < V ? (int)(p.inner - e0) : V;
        const float xm = p.coef[ch], xs = p.coef[C + ch], mg = p.coef[2 * C + ch], mgx = p.coef[3 * C + ch],
                    sc = p.coef[4 * C + ch];
        int64_t ox, oy, od;
        nbwdg__offsets3(p.o, row, ox, oy, od);
        const nbwdg__vec<DT> cx = nbwdg__ldv<DT>((const typename TY::S *)p.x + ox, e0, cnt, p.vec);
        const nbwdg__vec<DT> cy = nbwdg__ldv<DT>((const typename TY::S *)p.dy + oy, e0, cnt, p.vec);
        nbwdg__vec<DT> o;
#pragma unroll
        for (int v = 0; v < V; ++v) {
            const float xh = __fmul_rn(__fsub_rn(TY::in(cx.e[v]), xm), xs);
            o.e[v] = TY::out(__fmul_rn(__fsub_rn(TY::in(cy.e[v]), __fmaf_rn(xh, mgx, mg)), sc));
        }
        nbwdg__stv<DT>((typename TY::S *)p.dx + od, e0, cnt, p.vec, o);
    }
}

/* The same dx, NXC: a block takes ARB rows x every channel chunk, TX
   threads across the chunks x 256 / TX row slices. A thread keeps its
   chunk's coefficients in registers over its rows: loaded per element,
   5 x V scattered coefficients cost more than the element's own data. U
   rows' loads go out before their stores (each element is read and
   written by one thread, so dx may be x or dy). */
template <int DT>
__global__ void __launch_bounds__(NBWDG__BN_THREADS, 2) nbwdg__bn_apply_nxc(const __grid_constant__ nbwdg__bn_k p) {
    typedef nbwdg__ty<DT> TY;
    typedef typename TY::S S;
    enum { V = TY::V, U = V == 4 ? 4 : 2 }; /* 16-bit: 40 registers of coefficients */
    const int TX = p.TX, TY_ = NBWDG__BN_THREADS / TX, tx = threadIdx.x % TX, ty = threadIdx.x / TX;
    const int64_t C = p.C, chunks = (C + V - 1) / V;
    for (int64_t blk = blockIdx.x; blk * p.ARB < p.rows; blk += gridDim.x) {
        const int64_t r0 = blk * p.ARB, r1 = r0 + p.ARB < p.rows ? r0 + p.ARB : p.rows;
        for (int64_t cc = tx; cc < chunks; cc += TX) {
            const int64_t e0 = cc * V;
            const int cnt = C - e0 < V ? (int)(C - e0) : V;
            float xm[V], xs[V], mg[V], mgx[V], sc[V];
            nbwdg__ld_param<DT>(xm, p.coef, NBWD_F32, e0, cnt, p.vec, 0.0f);
            nbwdg__ld_param<DT>(xs, p.coef + C, NBWD_F32, e0, cnt, p.vec, 0.0f);
            nbwdg__ld_param<DT>(mg, p.coef + 2 * C, NBWD_F32, e0, cnt, p.vec, 0.0f);
            nbwdg__ld_param<DT>(mgx, p.coef + 3 * C, NBWD_F32, e0, cnt, p.vec, 0.0f);
            nbwdg__ld_param<DT>(sc, p.coef + 4 * C, NBWD_F32, e0, cnt, p.vec, 0.0f);
            for (int64_t row = r0 + ty; row < r1; row += (int64_t)TY_ * U) {
                nbwdg__vec<DT> cx[U], cy[U];
                int64_t odx[U];
#pragma unroll
                for (int u = 0; u < U; ++u) {
                    const int64_t r = row + (int64_t)u * TY_;
                    if (r < r1) {
                        int64_t ox, oy;
                        nbwdg__offsets3(p.o, r, ox, oy, odx[u]);
                        cx[u] = nbwdg__ldv<DT>((const S *)p.x + ox, e0, cnt, p.vec);
                        cy[u] = nbwdg__ldv<DT>((const S *)p.dy + oy, e0, cnt, p.vec);
                    }
                }
#pragma unroll
                for (int u = 0; u < U; ++u) {
                    if (row + (int64_t)u * TY_ < r1) {
                        nbwdg__vec<DT> o;
#pragma unroll
                        for (int v = 0; v < V; ++v) {
                            const float xh = __fmul_rn(__fsub_rn(TY::in(cx[u].e[v]), xm[v]), xs[v]);
                            const float t = __fmaf_rn(xh, mgx[v], mg[v]);
                            o.e[v] = TY::out(__fmul_rn(__fsub_rn(TY::in(cy[u].e[v]), t), sc[v]));
                        }
                        nbwdg__stv<DT>((S *)p.dx + odx[u], e0, cnt, p.vec, o);
                    }
                }
            }
        }
    }
}

/* The fused ReLU's masked dy (norm_bwd.h's nbwd__bn_mask_rows): dy where
   the forward output dst > 0, else +0, elementwise over every dim with any
   strides (o: dy, dst, out), so the BatchNorm kernels above read it as
   their dy unchanged. The test is on the bits: dst > 0 is a nonzero pattern
   no greater than +infinity's, `top` (a set sign bit or a NaN is above
   it), and dy's bits pass unchanged (-0 and NaN too). Templated on the
   element's size alone (U: 32 or 16 bits; top tells bf16 from f16): two
   small instances, none of the big kernels. Each element is read and
   written by one thread, so out may be exactly dy or dst. */
struct nbwdg__mask_k {
    nbwd__outer o;
    const void *dy, *dst;
    void *out;
    int64_t total;
    unsigned top;
};
template <typename U>
__global__ void __launch_bounds__(NBWDG__BN_THREADS) nbwdg__bn_mask_kernel(const __grid_constant__ nbwdg__mask_k p) {
    const U top = (U)p.top;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < p.total;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t off[NBWD__MAX_T];
        nbwdg__offsets(p.o, i, off);
        const U g = ((const U *)p.dy)[off[0]], y = ((const U *)p.dst)[off[1]];
        ((U *)p.out)[off[2]] = y != 0 && y <= top ? g : (U)0;
    }
}

/* -------------------------------------------------- GroupNorm */
/* A set is (sample n, group g): Cg = C / groups channels x S positions.
   Pass 1 sums dy and dy * xhat per (n, c) (NCX: a plane's pieces; NXC: a
   sample's row blocks), a combine adds the partials in a fixed order, the
   set kernel forms mean_g and mean_gx of each set from gamma[c] times its
   channels' sums (double, as the CPU path), the parameter kernel adds the
   (n, c) sums over n in order (double) for diff_gamma/diff_beta, and the
   apply kernel writes dx = rstd * (dy * gamma[c] - (mean_g + xhat *
   mean_gx)). xhat = (x - xm) * xs with per-(n, c) xm, xs: the set's mean
   and rstd, 0 and 1 (XHAT_STD; DST_RSTD without gamma), or (DST_RSTD)
   beta[c] and 1 / gamma[c] (0 where gamma is 0 or subnormal). */
struct nbwdg__gn_k {
    nbwd__outer o; /* x, dy, dx: NCX over the N * C planes; NXC over the N * S rows */
    const void *x, *dy, *mean, *spread, *gamma, *beta;
    void *dx, *dg, *db;
    float *xm, *xs, *rstd, *mg, *mgx; /* [N * C] each */
    float *gain;                      /* [C]: gamma for dx (NULL: 1) */
    float *tot, *part;                /* [2][N * C]; [nparts][2][N * C] (NULL: pass 1 writes tot) */
    int64_t N, C, groups, Cg, S, K, NC;
    int64_t ms0, ms1, vs0, vs1;   /* the statistics' strides (sample, group) */
    int64_t gst, bst, dgst, dbst; /* the [C] tensors' strides */
    int64_t piece, pieces, R, nb;
    int64_t ARB; /* NXC apply: positions per block */
    int G, TX, vec, sdt, pdt, form, unscale, accumulate;
    float eps;
};

/* Per-(n, c) coefficients from the statistics (and, DST_RSTD, gamma and
   beta), with the CPU path's bits; gain[c]. */
__global__ void nbwdg__gn_coef_kernel(const __grid_constant__ nbwdg__gn_k p) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < p.NC; i += (int64_t)gridDim.x * blockDim.x) {
        const int64_t n = i / p.C, c = i - n * p.C, g = c / p.Cg;
        float xm, xs, rstd;
        nbwdg__stats(p.form, p.sdt, p.eps, p.mean, n * p.ms0 + g * p.ms1, p.spread, n * p.vs0 + g * p.vs1, xm, xs,
                     rstd);
        if (p.unscale) { /* xhat = (dst - beta[c]) * (1 / gamma[c]), never contracted */
            const float ge = nbwdg__ld(p.gamma, c * p.gst, p.pdt);
            xm = p.beta ? nbwdg__ld(p.beta, c * p.bst, p.pdt) : 0.0f;
            xs = fabsf(ge) >= 1.17549435e-38f ? __frcp_rn(ge) : 0.0f; /* FLT_MIN */
        }
        p.xm[i] = xm;
        p.xs[i] = xs;
        p.rstd[i] = rstd;
        if (p.gain && n == 0) p.gain[c] = nbwdg__ld(p.gamma, c * p.gst, p.pdt);
    }
}

/* Pass 1, NCX: unit u = (plane, piece k), G threads; thread `lane` sums the
   piece's chunks lane, lane + G, ... in order, then a fixed butterfly over
   the G threads. Every thread of the block reaches the group sum (G = 256
   synchronizes the block). */
template <int DT>
__global__ void __launch_bounds__(NBWDG__BN_THREADS) nbwdg__gn_ncx_reduce(const __grid_constant__ nbwdg__gn_k p) {
    typedef nbwdg__ty<DT> TY;
    enum { V = TY::V };
    __shared__ float red[64];
    const int G = p.G, NG = NBWDG__BN_THREADS / G, grp = threadIdx.x / G, lane = threadIdx.x % G;
    const unsigned mask = G >= 32 ? 0xffffffffu : (((1u << G) - 1u) << ((threadIdx.x & 31) & ~(G - 1)));
    const int64_t units = p.NC * p.pieces;
    for (int64_t u0 = blockIdx.x * (int64_t)NG; u0 < units; u0 += (int64_t)gridDim.x * NG) {
        const int64_t u = u0 + grp;
        float a = 0.0f, d = 0.0f;
        if (u < units) {
            const int64_t plane = u / p.pieces, k = u - plane * p.pieces;
            const int64_t e_end = (k + 1) * p.piece < p.S ? (k + 1) * p.piece : p.S;
            const float xm = p.xm[plane], xs = p.xs[plane];
            int64_t off[NBWD__MAX_T];
            nbwdg__offsets(p.o, plane, off);
            const typename TY::S *xr = (const typename TY::S *)p.x + off[0];
            const typename TY::S *dyr = (const typename TY::S *)p.dy + off[1];
#pragma unroll 4
            for (int64_t e0 = k * p.piece + (int64_t)lane * V; e0 < e_end; e0 += (int64_t)G * V) {
                const int cnt = e_end - e0 < V ? (int)(e_end - e0) : V;
                const nbwdg__vec<DT> cx = nbwdg__ldv<DT>(xr, e0, cnt, p.vec);
                const nbwdg__vec<DT> cy = nbwdg__ldv<DT>(dyr, e0, cnt, p.vec);
#pragma unroll
                for (int v = 0; v < V; ++v) {
                    if (v < cnt) {
                        const float dv = TY::in(cy.e[v]);
                        const float xh = __fmul_rn(__fsub_rn(TY::in(cx.e[v]), xm), xs);
                        a = __fmaf_rn(dv, xh, a);
                        d = __fadd_rn(d, dv);
                    }
                }
            }
        }
        nbwdg__group_sum2(a, d, G, mask, red);
        if (u < units && lane == 0) {
            const int64_t plane = u / p.pieces, k = u - plane * p.pieces;
            float *out = p.part ? p.part + k * 2 * p.NC : p.tot;
            out[plane] = a;
            out[p.NC + plane] = d;
        }
    }
}

/* Pass 1, NXC: item (sample n, row block b, tile of TX channel chunks);
   256 / TX row slices combined by a pairwise tree, as BatchNorm's. */
template <int DT>
__global__ void __launch_bounds__(NBWDG__BN_THREADS) nbwdg__gn_nxc_reduce(const __grid_constant__ nbwdg__gn_k p) {
    typedef nbwdg__ty<DT> TY;
    enum { V = TY::V };
    __shared__ float sm[2][NBWDG__BN_THREADS * V];
    const int TX = p.TX, TY_ = NBWDG__BN_THREADS / TX, tx = threadIdx.x % TX, ty = threadIdx.x / TX;
    const int64_t C = p.C, chunks = (C + V - 1) / V, tiles = (chunks + TX - 1) / TX, per_n = p.nb * tiles;
    for (int64_t item = blockIdx.x; item < p.N * per_n; item += gridDim.x) {
        const int64_t n = item / per_n, rem = item - n * per_n, b = rem / tiles, tile = rem - b * tiles;
        const int64_t c = tile * TX + tx, e0 = c * V;
        const int64_t r0 = b * p.R, r1 = r0 + p.R < p.S ? r0 + p.R : p.S;
        const int cnt = c < chunks ? (C - e0 < V ? (int)(C - e0) : V) : 0;
        float a[V], d[V], xm[V], xs[V];
#pragma unroll
        for (int v = 0; v < V; ++v) {
            a[v] = d[v] = 0.0f;
            xm[v] = v < cnt ? p.xm[n * C + e0 + v] : 0.0f;
            xs[v] = v < cnt ? p.xs[n * C + e0 + v] : 0.0f;
        }
        if (cnt > 0) {
#pragma unroll 4
            for (int64_t row = r0 + ty; row < r1; row += TY_) {
                int64_t off[NBWD__MAX_T];
                nbwdg__offsets(p.o, n * p.S + row, off);
                const nbwdg__vec<DT> cx = nbwdg__ldv<DT>((const typename TY::S *)p.x + off[0], e0, cnt, p.vec);
                const nbwdg__vec<DT> cy = nbwdg__ldv<DT>((const typename TY::S *)p.dy + off[1], e0, cnt, p.vec);
#pragma unroll
                for (int v = 0; v < V; ++v) {
                    if (v < cnt) {
                        const float dv = TY::in(cy.e[v]);
                        const float xh = __fmul_rn(__fsub_rn(TY::in(cx.e[v]), xm[v]), xs[v]);
                        a[v] = __fmaf_rn(dv, xh, a[v]);
                        d[v] = __fadd_rn(d[v], dv);
                    }
                }
            }
        }
#pragma unroll
        for (int v = 0; v < V; ++v) { sm[0][threadIdx.x * V + v] = a[v]; sm[1][threadIdx.x * V + v] = d[v]; }
        __syncthreads();
        for (int s = TY_ / 2; s > 0; s >>= 1) {
            if (ty < s) {
#pragma unroll
                for (int v = 0; v < V; ++v) {
                    const int i = (ty * TX + tx) * V + v, k = ((ty + s) * TX + tx) * V + v;
                    sm[0][i] = __fadd_rn(sm[0][i], sm[0][k]);
                    sm[1][i] = __fadd_rn(sm[1][i], sm[1][k]);
                }
            }
            __syncthreads();
        }
        if (ty == 0) {
            float *out = p.part ? p.part + b * 2 * p.NC : p.tot;
            for (int v = 0; v < cnt; ++v) {
                out[n * C + e0 + v] = sm[0][tx * V + v];
                out[p.NC + n * C + e0 + v] = sm[1][tx * V + v];
            }
        }
        __syncthreads();
    }
}

/* One warp per set: sum over its channels of gain[c] times the (n, c)
   sums, in double (lanes over the channels, then a butterfly: the same
   value in every lane), then mean_g and mean_gx for each of its channels. */
__global__ void nbwdg__gn_set_kernel(const __grid_constant__ nbwdg__gn_k p) {
    const int lane = threadIdx.x & 31;
    const int64_t sets = p.N * p.groups, warps = ((int64_t)gridDim.x * blockDim.x) >> 5;
    for (int64_t set = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) >> 5; set < sets; set += warps) {
        const int64_t n = set / p.groups, g = set - n * p.groups, at = n * p.C + g * p.Cg;
        double sg = 0.0, sgx = 0.0;
        for (int64_t c = lane; c < p.Cg; c += 32) {
            const double gain = p.gain ? (double)p.gain[g * p.Cg + c] : 1.0;
            sg = __dadd_rn(sg, __dmul_rn(gain, (double)p.tot[p.NC + at + c]));
            sgx = __dadd_rn(sgx, __dmul_rn(gain, (double)p.tot[at + c]));
        }
        for (int o = 16; o > 0; o >>= 1) {
            sg = __dadd_rn(sg, __shfl_xor_sync(0xffffffffu, sg, o));
            sgx = __dadd_rn(sgx, __shfl_xor_sync(0xffffffffu, sgx, o));
        }
        const float mg = (float)(sg / (double)p.K), mgx = (float)(sgx / (double)p.K);
        for (int64_t c = lane; c < p.Cg; c += 32) {
            p.mg[at + c] = mg;
            p.mgx[at + c] = mgx;
        }
    }
}

/* diff_gamma[c] / diff_beta[c]: the (n, c) sums over n in order, in double
   (as the CPU path); N = 0: zeros (an empty batch). */
__global__ void nbwdg__gn_param_kernel(const __grid_constant__ nbwdg__gn_k p) {
    for (int64_t c = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; c < p.C; c += (int64_t)gridDim.x * blockDim.x) {
        double sdy = 0.0, sdyx = 0.0;
        for (int64_t n = 0; n < p.N; ++n) {
            sdyx = __dadd_rn(sdyx, (double)p.tot[n * p.C + c]);
            sdy = __dadd_rn(sdy, (double)p.tot[p.NC + n * p.C + c]);
        }
        if (p.dg) nbwdg__write_param(p.dg, c * p.dgst, p.pdt, (float)sdyx, p.accumulate);
        if (p.db) nbwdg__write_param(p.db, c * p.dbst, p.pdt, (float)sdy, p.accumulate);
    }
}

/* dx = rstd * (dy * gain[c] - (mean_g + xhat * mean_gx)). NCX: one chunk
   of a plane (n, c) per thread; each element is read and written by one
   thread, so dx may be x or dy. */
template <int DT>
__global__ void __launch_bounds__(NBWDG__BN_THREADS) nbwdg__gn_apply(const __grid_constant__ nbwdg__gn_k p) {
    typedef nbwdg__ty<DT> TY;
    enum { V = TY::V };
    const int64_t chunks = (p.S + V - 1) / V, total = p.NC * chunks;
    for (int64_t item = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; item < total;
         item += (int64_t)gridDim.x * blockDim.x) {
        const int64_t i = item / chunks, cc = item - i * chunks, e0 = cc * V; /* i: the plane (n, c) */
        const int cnt = p.S - e0 < V ? (int)(p.S - e0) : V;
        const float xm = p.xm[i], xs = p.xs[i], mg = p.mg[i], mgx = p.mgx[i], rs = p.rstd[i];
        const float gn = p.gain ? p.gain[i % p.C] : 1.0f;
        int64_t ox, oy, od;
        nbwdg__offsets3(p.o, i, ox, oy, od);
        const nbwdg__vec<DT> cx = nbwdg__ldv<DT>((const typename TY::S *)p.x + ox, e0, cnt, p.vec);
        const nbwdg__vec<DT> cy = nbwdg__ldv<DT>((const typename TY::S *)p.dy + oy, e0, cnt, p.vec);
        nbwdg__vec<DT> o;
#pragma unroll
        for (int v = 0; v < V; ++v) {
            const float xh = __fmul_rn(__fsub_rn(TY::in(cx.e[v]), xm), xs);
            const float dv = TY::in(cy.e[v]);
            const float g = p.gain ? __fmul_rn(dv, gn) : dv;
            o.e[v] = TY::out(__fmul_rn(__fsub_rn(g, __fmaf_rn(xh, mgx, mg)), rs));
        }
        nbwdg__stv<DT>((typename TY::S *)p.dx + od, e0, cnt, p.vec, o);
    }
}

/* The same dx, NXC, as BatchNorm's nbwdg__bn_apply_nxc: a block takes ARB
   positions of one sample x every channel chunk, a thread its chunk's six
   coefficient vectors in registers over its rows. */
template <int DT>
__global__ void __launch_bounds__(NBWDG__BN_THREADS, 2) nbwdg__gn_apply_nxc(const __grid_constant__ nbwdg__gn_k p) {
    typedef nbwdg__ty<DT> TY;
    typedef typename TY::S S;
    enum { V = TY::V, U = V == 4 ? 4 : 2 };
    const int TX = p.TX, TY_ = NBWDG__BN_THREADS / TX, tx = threadIdx.x % TX, ty = threadIdx.x / TX;
    const int64_t C = p.C, chunks = (C + V - 1) / V, per_n = (p.S + p.ARB - 1) / p.ARB;
    for (int64_t blk = blockIdx.x; blk < p.N * per_n; blk += gridDim.x) {
        const int64_t n = blk / per_n, r0 = (blk - n * per_n) * p.ARB, r1 = r0 + p.ARB < p.S ? r0 + p.ARB : p.S;
        for (int64_t cc = tx; cc < chunks; cc += TX) {
            const int64_t e0 = cc * V, i0 = n * C + e0;
            const int cnt = C - e0 < V ? (int)(C - e0) : V;
            float xm[V], xs[V], rs[V], mg[V], mgx[V], gn[V];
            nbwdg__ld_param<DT>(xm, p.xm, NBWD_F32, i0, cnt, p.vec, 0.0f);
            nbwdg__ld_param<DT>(xs, p.xs, NBWD_F32, i0, cnt, p.vec, 0.0f);
            nbwdg__ld_param<DT>(rs, p.rstd, NBWD_F32, i0, cnt, p.vec, 0.0f);
            nbwdg__ld_param<DT>(mg, p.mg, NBWD_F32, i0, cnt, p.vec, 0.0f);
            nbwdg__ld_param<DT>(mgx, p.mgx, NBWD_F32, i0, cnt, p.vec, 0.0f);
            if (p.gain) nbwdg__ld_param<DT>(gn, p.gain, NBWD_F32, e0, cnt, p.vec, 0.0f);
            for (int64_t row = r0 + ty; row < r1; row += (int64_t)TY_ * U) {
                nbwdg__vec<DT> cx[U], cy[U];
                int64_t odx[U];
#pragma unroll
                for (int u = 0; u < U; ++u) {
                    const int64_t r = row + (int64_t)u * TY_;
                    if (r < r1) {
                        int64_t ox, oy;
                        nbwdg__offsets3(p.o, n * p.S + r, ox, oy, odx[u]);
                        cx[u] = nbwdg__ldv<DT>((const S *)p.x + ox, e0, cnt, p.vec);
                        cy[u] = nbwdg__ldv<DT>((const S *)p.dy + oy, e0, cnt, p.vec);
                    }
                }
#pragma unroll
                for (int u = 0; u < U; ++u) {
                    if (row + (int64_t)u * TY_ < r1) {
                        nbwdg__vec<DT> o;
#pragma unroll
                        for (int v = 0; v < V; ++v) {
                            const float xh = __fmul_rn(__fsub_rn(TY::in(cx[u].e[v]), xm[v]), xs[v]);
                            const float dv = TY::in(cy[u].e[v]);
                            const float g = p.gain ? __fmul_rn(dv, gn[v]) : dv;
                            o.e[v] = TY::out(__fmul_rn(__fsub_rn(g, __fmaf_rn(xh, mgx[v], mg[v])), rs[v]));
                        }
                        nbwdg__stv<DT>((S *)p.dx + odx[u], e0, cnt, p.vec, o);
                    }
                }
            }
        }
    }
}

/* ------------------------------------------------------------- host */
static nbwd_status nbwdg__cuda_fail(const char *what, cudaError_t e) {
    nbwdg__set_error(what, cudaGetErrorName(e), cudaGetErrorString(e));
    return NBWD_ERR_DEVICE;
}

static int nbwdg__device_seen; /* a device was found once (benign race: same value) */

static nbwd_status nbwdg__device_ok(void) {
    int count = 0;
    cudaError_t e;
    if (nbwdg__device_seen) return NBWD_OK;
    e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess) {
        nbwdg__set_error("cudaGetDeviceCount", cudaGetErrorName(e), cudaGetErrorString(e));
        (void)cudaGetLastError(); /* not sticky: clear it */
        return NBWD_ERR_UNSUPPORTED;
    }
    if (count <= 0) {
        nbwdg__set_error("cudaGetDeviceCount", "cudaErrorNoDevice", "no CUDA device found");
        return NBWD_ERR_UNSUPPORTED;
    }
    nbwdg__device_seen = 1;
    return NBWD_OK;
}

NBWD_GPU_API nbwd_status nbwd_gpu_device_count(int *count) {
    cudaError_t e;
    if (!count) return NBWD_ERR_NULL_POINTER;
    *count = 0;
    e = cudaGetDeviceCount(count);
    if (e != cudaSuccess) {
        *count = 0;
        nbwdg__set_error("cudaGetDeviceCount", cudaGetErrorName(e), cudaGetErrorString(e));
        (void)cudaGetLastError();
        return NBWD_ERR_UNSUPPORTED;
    }
    if (*count <= 0) {
        nbwdg__set_error("cudaGetDeviceCount", "cudaErrorNoDevice", "no CUDA device found");
        return NBWD_ERR_UNSUPPORTED;
    }
    return NBWD_OK;
}

/* 16-byte vector access possible for tensor t: aligned base, every outer
   stride a multiple of 16 bytes (the inner length is checked by the caller). */
static int nbwdg__aligned(const void *ptr, const nbwd__outer *o, int t, int64_t esz) {
    int d;
    if (!ptr) return 1;
    if ((uintptr_t)ptr % 16) return 0;
    for (d = 0; d < o->nd; ++d)
        if ((o->st[t][d] * esz) % 16) return 0;
    return 1;
}

static char *nbwdg__ws_base(void *workspace) {
    return (char *)workspace + (NBWDG__ALIGN - (uintptr_t)workspace % NBWDG__ALIGN) % NBWDG__ALIGN;
}

/* Groups of G <= 32 threads keep their column partials in registers
   (A = 0) for 16-bit data, in shared memory (A = 2) for f32: f32's batched
   loads need the registers. */
template <int DT> struct nbwdg__ln_ga { enum { A = DT == NBWD_F32 ? 2 : 0 }; };
/* Launch the LayerNorm kernel instance for (DT, K, A); blocks with more
   than 48 KiB of shared memory opt in first. */
template <int DT, int K, int A, int X>
static cudaError_t nbwdg__ln_go(const nbwdg__ln_k &k, int block, unsigned grid, size_t smem, cudaStream_t st) {
    if (smem > 48 * 1024) {
        cudaError_t e = cudaFuncSetAttribute(nbwdg__ln_kernel<DT, K, A, X>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                             (int)smem);
        if (e != cudaSuccess) return e;
    }
    nbwdg__ln_kernel<DT, K, A, X><<<grid, block, smem, st>>>(k);
    return cudaGetLastError();
}

template <int DT, int X>
static cudaError_t nbwdg__ln_launch_x(const nbwdg__ln_k &k, const nbwdg__ln_cfg &c, unsigned grid, size_t smem,
                                      cudaStream_t st) {
    if (c.NG > 1) {
        switch (c.K) {
        case 1: return nbwdg__ln_go<DT, 1, nbwdg__ln_ga<DT>::A, X>(k, c.block, grid, smem, st);
        case 2: return nbwdg__ln_go<DT, 2, nbwdg__ln_ga<DT>::A, X>(k, c.block, grid, smem, st);
        default: return nbwdg__ln_go<DT, 4, nbwdg__ln_ga<DT>::A, X>(k, c.block, grid, smem, st);
        }
    }
    switch (c.K) {
    case 0: return nbwdg__ln_go<DT, 0, 1, X>(k, c.block, grid, smem, st);
    case 1: return nbwdg__ln_go<DT, 1, 1, X>(k, c.block, grid, smem, st);
    case 2: return nbwdg__ln_go<DT, 2, 1, X>(k, c.block, grid, smem, st);
    default: return nbwdg__ln_go<DT, 4, 1, X>(k, c.block, grid, smem, st);
    }
}
/* X: the residual or the DST_RSTD unscaling, compiled into their own
   instances: as runtime flags in the one kernel they cost the plain calls
   5-13 % on an H100 (more registers, spills in the 16-bit kernels). */
template <int DT>
static cudaError_t nbwdg__ln_launch(const nbwdg__ln_k &k, const nbwdg__ln_cfg &c, unsigned grid, size_t smem,
                                    cudaStream_t st) {
    return k.res || k.unscale ? nbwdg__ln_launch_x<DT, 1>(k, c, grid, smem, st)
                              : nbwdg__ln_launch_x<DT, 0>(k, c, grid, smem, st);
}

static nbwd_status nbwdg__layer_norm_bwd(const nbwd_layer_norm_bwd_desc *desc, int rms,
                                         const nbwd_layer_norm_bwd_args *args, void *workspace, size_t workspace_bytes,
                                         void *stream) {
    nbwd__ln_plan p;
    nbwdg__ln_cfg c;
    nbwd_status s;
    cudaError_t e;
    cudaStream_t st = (cudaStream_t)stream;
    int want_dx, want_dg, want_db;
    if ((s = nbwdg__ln_prepare(desc, rms, args, workspace, workspace_bytes, &p, &c)) != NBWD_OK)
        return nbwdg__reject(rms ? "nbwd_gpu_rms_norm_bwd" : "nbwd_gpu_layer_norm_bwd", s);
    if ((s = nbwdg__device_ok()) != NBWD_OK) return s;
    /* Everything is validated: from here on outputs are written. */
    want_dx = args->diff_src != NULL;
    want_dg = args->diff_gamma != NULL;
    want_db = args->diff_beta != NULL;
    if (p.rows == 0 && !p.accumulate && p.n > 0) { /* no rows: the sums are empty */
        const int64_t pb = p.n * (p.pdt == NBWD_F32 ? 4 : 2);
        if (want_dg && (e = cudaMemsetAsync(args->diff_gamma, 0, (size_t)pb, st)) != cudaSuccess)
            return nbwdg__cuda_fail("cudaMemsetAsync", e);
        if (want_db && (e = cudaMemsetAsync(args->diff_beta, 0, (size_t)pb, st)) != cudaSuccess)
            return nbwdg__cuda_fail("cudaMemsetAsync", e);
    }
    if (p.rows > 0 && p.n > 0 && (want_dx || want_dg || want_db)) {
        nbwdg__ln_k k;
        const int64_t esz = p.dt == NBWD_F32 ? 4 : 2;
        char *ws = c.ws_bytes ? nbwdg__ws_base(workspace) : NULL;
        size_t smem;
        memset(&k, 0, sizeof k);
        k.res = args->diff_residual;
        /* no residual: its strides copy diff_src's, never keeping the outer
           dims from merging */
        if (!k.res) memcpy(p.st[NBWD__LN_RES], p.st[NBWD__LN_DX], sizeof p.st[NBWD__LN_DX]);
        nbwd__outer_init(&k.o, p.axis, desc->dims, NBWD__MAX_T, p.st);
        k.x = nbwd__x_of(p.form, args->src, args->xhat, args->dst);
        k.dy = args->diff_dst;
        k.dx = args->diff_src;
        k.mean = nbwd__has_mean(p.form) ? args->mean : NULL; /* RMSNorm: NULL */
        k.rms = p.rms;
        k.spread = nbwd__spread_of(p.form, args->variance, args->rstd, args->std);
        /* gamma scales dy for dx; DST_RSTD also recovers xhat with it (and
           beta) for diff_gamma */
        k.unscale = nbwdg__ln_unscales(&p, args);
        k.gamma = p.affine && (want_dx || k.unscale) ? args->gamma : NULL;
        k.beta = k.unscale ? args->beta : NULL;
        k.gamma_offset = p.gamma_offset;
        k.part = want_dg || want_db ? (float *)ws : NULL;
        k.rows = p.rows; k.n = p.n; k.R = c.R; k.nblocks = c.nblocks;
        k.sdt = p.sdt; k.pdt = p.pdt; k.form = p.form; k.eps = p.eps;
        k.want_dx = want_dx; k.want_pg = want_dg || want_db; k.G = c.G;
        k.vec = p.n % c.V == 0 && nbwdg__aligned(k.x, &k.o, NBWD__LN_X, esz) &&
                nbwdg__aligned(k.dy, &k.o, NBWD__LN_DY, esz) && nbwdg__aligned(k.dx, &k.o, NBWD__LN_DX, esz) &&
                nbwdg__aligned(k.res, &k.o, NBWD__LN_RES, esz);
        k.gvec = k.gamma && p.n % c.V == 0 && (uintptr_t)k.gamma % 16 == 0;
        k.bvec = k.beta && p.n % c.V == 0 && (uintptr_t)k.beta % 16 == 0;
        if (c.NG > 1) {
            smem = (size_t)c.NG * (size_t)p.n * 4 * (p.dt == NBWD_F32 ? 2 : 1); /* A = 2: both partial rows */
        } else {
            int dev = 0, optin = 48 * 1024;
            smem = 64 * 4;
            if (k.want_pg) {
                if ((e = cudaGetDevice(&dev)) != cudaSuccess ||
                    (e = cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev)) != cudaSuccess)
                    return nbwdg__cuda_fail("cudaDeviceGetAttribute", e);
                if ((size_t)p.n <= ((size_t)optin - smem) / 8) { /* both partial rows fit */
                    k.acc_smem = 1;
                    smem += (size_t)p.n * 8;
                }
            }
        }
        if (p.dt == NBWD_F32) e = nbwdg__ln_launch<NBWD_F32>(k, c, nbwdg__grid(c.nblocks), smem, st);
        else if (p.dt == NBWD_F16) e = nbwdg__ln_launch<NBWD_F16>(k, c, nbwdg__grid(c.nblocks), smem, st);
        else e = nbwdg__ln_launch<NBWD_BF16>(k, c, nbwdg__grid(c.nblocks), smem, st);
        if (e != cudaSuccess) return nbwdg__cuda_fail("norm_bwd LayerNorm kernel launch", e);
        if (want_dg || want_db) {
            nbwdg__comb_k q;
            memset(&q, 0, sizeof q);
            q.part = k.part; q.nb = c.nblocks; q.width = 2 * p.n; q.n = p.n;
            q.dg = args->diff_gamma; q.db = args->diff_beta;
            q.mode = 1; q.pdt = p.pdt; q.accumulate = p.accumulate;
            nbwdg__combine_kernel<<<nbwdg__grid(nbwdg__cdiv(q.width, 32)), dim3(32, 32), 0, st>>>(q);
            if ((e = cudaGetLastError()) != cudaSuccess) return nbwdg__cuda_fail("norm_bwd reduction kernel launch", e);
        }
    }
    return NBWD_OK;
}

template <int DT>
static void nbwdg__bn_launch_reduce(const nbwdg__bn_k &k, cudaStream_t st) {
    if (k.nxc) {
        const int64_t tiles = nbwdg__cdiv(nbwdg__cdiv(k.C, nbwdg__ty<DT>::V), k.TX);
        nbwdg__bn_nxc_reduce<DT><<<nbwdg__grid(k.nb * tiles), NBWDG__BN_THREADS, 0, st>>>(k);
    } else {
        nbwdg__bn_ncx_reduce<DT><<<nbwdg__grid(k.C * k.nb), NBWDG__BN_THREADS, 0, st>>>(k);
    }
}
template <int DT>
static void nbwdg__bn_launch_apply(const nbwdg__bn_k &k, cudaStream_t st) {
    if (k.nxc) {
        nbwdg__bn_apply_nxc<DT><<<nbwdg__grid(nbwdg__cdiv(k.rows, k.ARB)), NBWDG__BN_THREADS, 0, st>>>(k);
        return;
    }
    const int64_t items = k.rows * nbwdg__cdiv(k.inner, nbwdg__ty<DT>::V);
    nbwdg__bn_apply<DT><<<nbwdg__grid(nbwdg__cdiv(items, NBWDG__BN_THREADS)), NBWDG__BN_THREADS, 0, st>>>(k);
}

/* The fused ReLU: launches the masking kernel into args.diff_src_add
   (NBWD_FUSE_ADD_RELU, its strides) or the workspace's dense region
   (NBWD_FUSE_RELU), then points the kernels' dy there: *dy, and p's dy
   strides (p.st[NBWD__BN_DY]), which the caller's nbwd__outer_init and alignment
   checks then see. ws: the aligned workspace base. */
static nbwd_status nbwdg__bn_mask(const nbwd_batch_norm_bwd_desc *desc, const nbwd_batch_norm_bwd_args *args,
                                  nbwd__bn_plan &p, const nbwdg__bn_cfg &c, char *ws, cudaStream_t st,
                                  const void **dy) {
    const int add = p.relu == NBWD_FUSE_ADD_RELU;
    int64_t s3[3][NBWD_MAX_RANK];
    nbwdg__mask_k k;
    cudaError_t e;
    int d;
    memset(&k, 0, sizeof k);
    k.out = add ? args->diff_src_add : (void *)(ws + c.off_mask - NBWDG__ALIGN);
    nbwd__strides(p.rank, desc->dims, add ? p.st[NBWD__BN_DSA] : NULL, s3[2]);
    for (d = 0; d < p.rank; ++d) {
        s3[0][d] = p.st[NBWD__BN_DY][d];
        s3[1][d] = p.st[NBWD__BN_DST][d];
    }
    /* every dim an outer one: dims dense in all three merge (a dense
       problem is one flat index, no division) */
    nbwd__outer_init(&k.o, p.rank, desc->dims, 3, s3);
    k.dy = args->diff_dst;
    k.dst = args->dst;
    k.total = p.M * p.C;
    k.top = p.dt == NBWD_F32 ? 0x7F800000u : p.dt == NBWD_BF16 ? 0x7F80u : 0x7C00u;
    const unsigned grid = nbwdg__grid(nbwdg__cdiv(k.total, NBWDG__BN_THREADS));
    if (p.dt == NBWD_F32) nbwdg__bn_mask_kernel<uint32_t><<<grid, NBWDG__BN_THREADS, 0, st>>>(k);
    else nbwdg__bn_mask_kernel<uint16_t><<<grid, NBWDG__BN_THREADS, 0, st>>>(k);
    if ((e = cudaGetLastError()) != cudaSuccess) return nbwdg__cuda_fail("norm_bwd BatchNorm ReLU kernel launch", e);
    for (d = 0; d < p.rank; ++d) p.st[NBWD__BN_DY][d] = s3[2][d];
    *dy = k.out;
    return NBWD_OK;
}

/* The plain call (sums NULL) and the two phases: reduce (phase 1: the
   plain call's reduction, its combine writing the f32 sums that args carries
   as diff_gamma/diff_beta; no finish, no dx) and apply (phase 2: no
   reduction; the finish kernel takes the given sums and count). */
static nbwd_status nbwdg__bn_run(const nbwd_batch_norm_bwd_desc *desc, const nbwd_batch_norm_bwd_args *args,
                                 const nbwd__bn_sums *sums, nbwd__bn_plan *pp, const nbwdg__bn_cfg *cc,
                                 void *workspace, void *stream) {
    nbwd__bn_plan &p = *pp; /* (nbwd__outer_init takes its strides non-const) */
    const nbwdg__bn_cfg &c = *cc;
    const int phase = sums ? sums->phase : 0;
    nbwd_status s;
    cudaError_t e;
    cudaStream_t st = (cudaStream_t)stream;
    const unsigned cgrid = nbwdg__grid(nbwdg__cdiv(p.C, 256));
    const int compute = p.M > 0 && p.C > 0 && (args->diff_src || args->diff_gamma);
    const void *dy = args->diff_dst;
    if ((s = nbwdg__device_ok()) != NBWD_OK) return s;
    /* Everything is validated: from here on outputs are written. */
    if (p.M == 0 && args->diff_gamma && !p.accumulate && p.C > 0 && phase != 2) { /* empty batch: empty sums */
        const size_t pb = (size_t)p.C * (p.pdt == NBWD_F32 ? 4 : 2);
        if ((e = cudaMemsetAsync(args->diff_gamma, 0, pb, st)) != cudaSuccess) return nbwdg__cuda_fail("cudaMemsetAsync", e);
        if ((e = cudaMemsetAsync(args->diff_beta, 0, pb, st)) != cudaSuccess) return nbwdg__cuda_fail("cudaMemsetAsync", e);
    }
    /* The fused ReLU first: ADD_RELU's diff_src_add is an output of every
       call (reduce's too), even one that computes nothing else; RELU's
       workspace copy only matters to the kernels below. */
    if (p.relu && p.M > 0 && p.C > 0 && (compute || p.relu == NBWD_FUSE_ADD_RELU))
        if ((s = nbwdg__bn_mask(desc, args, p, c, nbwdg__ws_base(workspace), st, &dy)) != NBWD_OK) return s;
    if (compute) {
        nbwdg__bn_k k;
        const int64_t esz = p.dt == NBWD_F32 ? 4 : 2;
        char *ws = nbwdg__ws_base(workspace);
        memset(&k, 0, sizeof k);
        nbwd__outer_init(&k.o, nbwdg__bn_rows_alg(&p) ? p.rank - 1 : 2, desc->dims, NBWD__BN_DX + 1, p.st);
        k.x = p.form == NBWD_STATS_XHAT_STD ? args->xhat : args->src;
        k.dy = dy; /* diff_dst, or the fused ReLU's masked copy (p.st[NBWD__BN_DY] its strides) */
        k.dx = args->diff_src;
        k.mean = p.form == NBWD_STATS_XHAT_STD ? NULL : args->mean;
        k.spread = p.form == NBWD_STATS_MEAN_VARIANCE ? args->variance
                   : p.form == NBWD_STATS_MEAN_RSTD   ? args->rstd
                                                      : args->std;
        k.gamma = args->diff_gamma ? args->gamma : NULL; /* without diff_gamma/diff_beta gamma is ignored */
        k.dg = args->diff_gamma; k.db = args->diff_beta;
        k.coef = (float *)(ws + c.off_coef - NBWDG__ALIGN);
        k.part = (float *)(ws + c.off_part - NBWDG__ALIGN);
        k.C = p.C; k.M = p.M; k.N = p.N; k.rows = c.rows; k.inner = c.inner;
        k.R = c.R; k.nper = c.nper; k.nb = c.nb; k.TX = c.TX; k.nxc = nbwdg__bn_rows_alg(&p);
        k.ARB = c.ARB;
        k.sdt = p.sdt; k.pdt = p.pdt; k.form = p.form; k.accumulate = p.accumulate; k.eps = p.eps;
        k.global_stats = p.global_stats;
        k.count = phase == 2 ? sums->count : p.M;
        k.vec = c.inner % c.V == 0 && nbwdg__aligned(k.x, &k.o, NBWD__BN_X, esz) &&
                nbwdg__aligned(k.dy, &k.o, NBWD__BN_DY, esz) && nbwdg__aligned(k.dx, &k.o, NBWD__BN_DX, esz);

        if (phase == 2 || (p.global_stats && !args->diff_gamma)) {
            /* apply: the sums are given; or global statistics and dx alone:
               no sums (the finish reads zeros) */
            if (phase == 2) {
                k.given_dy = sums->sum_dy;
                k.given_dyx = sums->sum_dy_xhat;
            }
            nbwdg__bn_finish_kernel<<<cgrid, 256, 0, st>>>(k);
        } else {
            if (p.dt == NBWD_F32) nbwdg__bn_launch_reduce<NBWD_F32>(k, st);
            else if (p.dt == NBWD_F16) nbwdg__bn_launch_reduce<NBWD_F16>(k, st);
            else nbwdg__bn_launch_reduce<NBWD_BF16>(k, st);
            if ((e = cudaGetLastError()) != cudaSuccess) return nbwdg__cuda_fail("norm_bwd BatchNorm kernel launch", e);
            if (phase == 1) { /* reduce: the totals straight into the sums (f32, the same bits) */
                nbwdg__comb_k q;
                memset(&q, 0, sizeof q);
                q.part = k.part; q.nb = c.nb; q.width = 2 * p.C; q.n = p.C; q.mode = 1;
                q.dg = args->diff_gamma; q.db = args->diff_beta; q.pdt = p.pdt; q.accumulate = p.accumulate;
                nbwdg__combine_kernel<<<nbwdg__grid(nbwdg__cdiv(q.width, 32)), dim3(32, 32), 0, st>>>(q);
                if ((e = cudaGetLastError()) != cudaSuccess) return nbwdg__cuda_fail("norm_bwd reduction kernel launch", e);
                return NBWD_OK;
            }
            nbwdg__bn_combine_finish<<<nbwdg__grid(nbwdg__cdiv(p.C, 32)), dim3(32, 32), 0, st>>>(k);
        }
        if ((e = cudaGetLastError()) != cudaSuccess) return nbwdg__cuda_fail("norm_bwd BatchNorm kernel launch", e);
        if (args->diff_src) {
            if (p.dt == NBWD_F32) nbwdg__bn_launch_apply<NBWD_F32>(k, st);
            else if (p.dt == NBWD_F16) nbwdg__bn_launch_apply<NBWD_F16>(k, st);
            else nbwdg__bn_launch_apply<NBWD_BF16>(k, st);
            if ((e = cudaGetLastError()) != cudaSuccess) return nbwdg__cuda_fail("norm_bwd BatchNorm kernel launch", e);
        }
    } else if (phase == 2 && p.C > 0 && args->diff_gamma) {
        /* apply on an empty slice: diff_gamma/diff_beta from the given sums
           alone (no workspace: coef NULL) */
        nbwdg__bn_k k;
        memset(&k, 0, sizeof k);
        k.C = p.C; k.pdt = p.pdt; k.accumulate = p.accumulate;
        k.dg = args->diff_gamma; k.db = args->diff_beta;
        k.given_dy = sums->sum_dy;
        k.given_dyx = sums->sum_dy_xhat;
        nbwdg__bn_finish_kernel<<<cgrid, 256, 0, st>>>(k);
        if ((e = cudaGetLastError()) != cudaSuccess) return nbwdg__cuda_fail("norm_bwd BatchNorm kernel launch", e);
    }
    return NBWD_OK;
}

template <int DT>
static void nbwdg__gn_launch_reduce(const nbwdg__gn_k &k, cudaStream_t st) {
    if (k.TX > 0) {
        const int64_t tiles = nbwdg__cdiv(nbwdg__cdiv(k.C, nbwdg__ty<DT>::V), k.TX);
        nbwdg__gn_nxc_reduce<DT><<<nbwdg__grid(k.N * k.nb * tiles), NBWDG__BN_THREADS, 0, st>>>(k);
    } else {
        nbwdg__gn_ncx_reduce<DT><<<nbwdg__grid(nbwdg__cdiv(k.NC * k.pieces, NBWDG__BN_THREADS / k.G)),
                                   NBWDG__BN_THREADS, 0, st>>>(k);
    }
}
template <int DT>
static void nbwdg__gn_launch_apply(const nbwdg__gn_k &k, int64_t rows, int64_t inner, cudaStream_t st) {
    if (k.TX > 0) { /* NXC */
        nbwdg__gn_apply_nxc<DT><<<nbwdg__grid(k.N * nbwdg__cdiv(k.S, k.ARB)), NBWDG__BN_THREADS, 0, st>>>(k);
        return;
    }
    const int64_t items = rows * nbwdg__cdiv(inner, nbwdg__ty<DT>::V);
    nbwdg__gn_apply<DT><<<nbwdg__grid(nbwdg__cdiv(items, NBWDG__BN_THREADS)), NBWDG__BN_THREADS, 0, st>>>(k);
}

/* The [C] tensor t's stride (norm_bwd.h's nbwd__param_off for one dim). */
static int64_t nbwdg__pstride(const nbwd__params *q, int t) { return q->dense[t] ? 1 : q->st[t][0]; }

static nbwd_status nbwdg__gn_run(const nbwd_group_norm_bwd_desc *desc, const nbwd_group_norm_bwd_args *args,
                                 const nbwd__gn_plan *pp, const nbwdg__gn_cfg *cc, void *workspace, void *stream) {
    nbwd__gn_plan p = *pp; /* (nbwd__outer_init takes its strides non-const) */
    const nbwdg__gn_cfg &c = *cc;
    nbwd_status s;
    cudaError_t e;
    cudaStream_t st = (cudaStream_t)stream;
    const int want_dx = args->diff_src != NULL, want_pg = args->diff_gamma || args->diff_beta;
    nbwdg__gn_k k;
    if ((s = nbwdg__device_ok()) != NBWD_OK) return s;
    /* Everything is validated: from here on outputs are written. */
    memset(&k, 0, sizeof k);
    k.C = p.C; k.pdt = p.pdt; k.accumulate = p.accumulate;
    k.dg = args->diff_gamma; k.db = args->diff_beta;
    k.dgst = nbwdg__pstride(&p.par, NBWD__PDG); k.dbst = nbwdg__pstride(&p.par, NBWD__PDB);
    if (c.NC == 0 || p.S == 0 || !(want_dx || want_pg)) { /* an empty batch: empty sums (N = 0 here) */
        if (want_pg && !p.accumulate && p.C > 0) {
            nbwdg__gn_param_kernel<<<nbwdg__grid(nbwdg__cdiv(p.C, 256)), 256, 0, st>>>(k);
            if ((e = cudaGetLastError()) != cudaSuccess) return nbwdg__cuda_fail("norm_bwd GroupNorm kernel launch", e);
        }
        return NBWD_OK;
    }
    {
        const int64_t esz = p.dt == NBWD_F32 ? 4 : 2;
        const int reads_gamma = nbwd__gn_reads_gamma(&p, args);
        const unsigned ncgrid = nbwdg__grid(nbwdg__cdiv(c.NC, 256));
        char *ws = nbwdg__ws_base(workspace);
        float *coef = (float *)(ws + c.off_coef - NBWDG__ALIGN);
        /* outer dims: NCX [N, C] (planes of S); NXC [N, spatial...] (rows of C) */
        nbwd__outer_init(&k.o, p.nxc ? p.rank - 1 : 2, desc->dims, 3, p.st);
        k.x = nbwd__x_of(p.form, args->src, args->xhat, args->dst);
        k.dy = args->diff_dst;
        k.dx = args->diff_src;
        k.mean = nbwd__has_mean(p.form) ? args->mean : NULL;
        k.spread = nbwd__spread_of(p.form, args->variance, args->rstd, args->std);
        k.unscale = p.form == NBWD_STATS_DST_RSTD && reads_gamma;
        k.gamma = reads_gamma ? args->gamma : NULL;
        k.beta = k.unscale ? args->beta : NULL;
        k.xm = coef; k.xs = coef + c.NC; k.rstd = coef + 2 * c.NC; k.mg = coef + 3 * c.NC; k.mgx = coef + 4 * c.NC;
        k.gain = want_dx && p.affine ? coef + 5 * c.NC : NULL;
        k.tot = (float *)(ws + c.off_tot - NBWDG__ALIGN);
        k.part = c.nparts > 1 ? (float *)(ws + c.off_part - NBWDG__ALIGN) : NULL;
        k.N = p.N; k.groups = p.G; k.Cg = p.Cg; k.S = p.S; k.K = p.K; k.NC = c.NC;
        k.ms0 = p.mean_st[0]; k.ms1 = p.mean_st[1]; k.vs0 = p.var_st[0]; k.vs1 = p.var_st[1];
        k.gst = nbwdg__pstride(&p.par, NBWD__PG); k.bst = nbwdg__pstride(&p.par, NBWD__PB);
        k.piece = c.piece; k.pieces = c.pieces; k.R = c.R; k.nb = c.nb; k.G = c.G; k.TX = c.TX; k.ARB = c.ARB;
        k.sdt = p.sdt; k.form = p.form; k.eps = p.eps;
        k.vec = (p.nxc ? p.C : p.S) % c.V == 0 && nbwdg__aligned(k.x, &k.o, 0, esz) &&
                nbwdg__aligned(k.dy, &k.o, 1, esz) && nbwdg__aligned(k.dx, &k.o, 2, esz);

        nbwdg__gn_coef_kernel<<<ncgrid, 256, 0, st>>>(k);
        if ((e = cudaGetLastError()) != cudaSuccess) return nbwdg__cuda_fail("norm_bwd GroupNorm kernel launch", e);
        if (p.dt == NBWD_F32) nbwdg__gn_launch_reduce<NBWD_F32>(k, st);
        else if (p.dt == NBWD_F16) nbwdg__gn_launch_reduce<NBWD_F16>(k, st);
        else nbwdg__gn_launch_reduce<NBWD_BF16>(k, st);
        if ((e = cudaGetLastError()) != cudaSuccess) return nbwdg__cuda_fail("norm_bwd GroupNorm kernel launch", e);
        if (k.part) {
            nbwdg__comb_k q;
            memset(&q, 0, sizeof q);
            q.part = k.part; q.nb = c.nparts; q.width = 2 * c.NC; q.n = c.NC; q.totals = k.tot; q.mode = 0;
            nbwdg__combine_kernel<<<nbwdg__grid(nbwdg__cdiv(q.width, 32)), dim3(32, 32), 0, st>>>(q);
            if ((e = cudaGetLastError()) != cudaSuccess) return nbwdg__cuda_fail("norm_bwd reduction kernel launch", e);
        }
        if (want_pg) {
            nbwdg__gn_param_kernel<<<nbwdg__grid(nbwdg__cdiv(p.C, 256)), 256, 0, st>>>(k);
            if ((e = cudaGetLastError()) != cudaSuccess) return nbwdg__cuda_fail("norm_bwd GroupNorm kernel launch", e);
        }
        if (want_dx) {
            const int64_t rows = p.nxc ? p.N * p.S : c.NC, inner = p.nxc ? p.C : p.S;
            nbwdg__gn_set_kernel<<<nbwdg__grid(nbwdg__cdiv(p.N * p.G, 8)), 256, 0, st>>>(k);
            if ((e = cudaGetLastError()) != cudaSuccess) return nbwdg__cuda_fail("norm_bwd GroupNorm kernel launch", e);
            if (p.dt == NBWD_F32) nbwdg__gn_launch_apply<NBWD_F32>(k, rows, inner, st);
            else if (p.dt == NBWD_F16) nbwdg__gn_launch_apply<NBWD_F16>(k, rows, inner, st);
            else nbwdg__gn_launch_apply<NBWD_BF16>(k, rows, inner, st);
            if ((e = cudaGetLastError()) != cudaSuccess) return nbwdg__cuda_fail("norm_bwd GroupNorm kernel launch", e);
        }
    }
    return NBWD_OK;
}

#endif /* __CUDACC__ */
#endif /* NORM_BWD_GPU_IMPLEMENTATION */
