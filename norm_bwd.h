/* norm_bwd.h - normalization backward kernels (LayerNorm, BatchNorm training)
   for C99 and C++11, header-only, MIT or public domain (see the end of file).

   ============================================================================
   QUICK START
   ============================================================================
   In exactly ONE C or C++ file of your project:

       #define NORM_BWD_IMPLEMENTATION
       #include "norm_bwd.h"

   Everywhere else just #include "norm_bwd.h". Copy norm_bwd.h and, for the
   SIMD paths, norm_bwd_simd.h next to it (norm_bwd.h includes the latter by
   itself; define NORM_BWD_NO_SIMD to use norm_bwd.h alone). Link with -lm,
   and with -fopenmp for threads (compiling with -fopenmp but linking without
   it fails on GOMP_parallel).

       nbwd_layer_norm_bwd_desc d;
       nbwd_layer_norm_bwd_args a = {0};
       int64_t dims[2] = {rows, cols};
       nbwd_layer_norm_bwd_desc_init(&d, 2, dims);  // axis -1, affine, eps 1e-5
       a.src = x; a.diff_dst = dy; a.mean = mean; a.variance = var;
       a.gamma = gamma; a.diff_src = dx; a.diff_gamma = dg; a.diff_beta = db;
       nbwd_status s = nbwd_layer_norm_bwd(&d, &a, NULL, 0);
       if (s != NBWD_OK) fprintf(stderr, "%s\n", nbwd_status_string(s));

   ============================================================================
   WHAT IS COMPUTED
   ============================================================================
   For one normalized set of N elements (a LayerNorm row, or a BatchNorm
   channel over batch and spatial positions):
       rstd  = 1 / sqrt(variance + epsilon)
       xhat  = (x - mean) * rstd          (x - mean is formed first)
       g     = diff_dst * gamma            (gamma = 1 without affine)
       diff_src   = rstd * (g - mean(g) - xhat * mean(g * xhat))
       diff_gamma = sum over the sets of diff_dst * xhat
       diff_beta  = sum over the sets of diff_dst
   The statistics can be given in three forms (nbwd_stats_form):
       NBWD_STATS_MEAN_VARIANCE  mean and variance, epsilon used (oneDNN, Ascend)
       NBWD_STATS_MEAN_RSTD      mean and rstd = 1/sqrt(var + eps) (PyTorch
                                 save_invstd, Apex invvar, cuDNN, llm.c)
       NBWD_STATS_XHAT_STD       the normalized input xhat in place of x, and
                                 std = sqrt(var + eps) (InfiniCore); needs no x,
                                 mean or variance
   epsilon is read only in the MEAN_VARIANCE form. There rstd is
   (float)(1 / sqrt((double)variance + (double)epsilon)): one fp32 value per
   set, so the MEAN_RSTD form given that value (as f32 statistics) produces
   the same bits.

   ============================================================================
   API
   ============================================================================
   LayerNorm backward (oneDNN Graph LayerNormBackward, LayerNormBackprop-1,
   Ascend LayerNormGrad, InfiniCore LayerNormBackward):
       void        nbwd_layer_norm_bwd_desc_init(desc, rank, dims)
       nbwd_status nbwd_layer_norm_bwd_workspace_size(desc, &bytes)
       nbwd_status nbwd_layer_norm_bwd(desc, args, workspace, workspace_bytes)
     desc: rank 1..NBWD_MAX_RANK, dims, begin_norm_axis in [-rank, rank-1]
     (default -1; normalizes over dims [axis, rank)), use_affine (default 1),
     epsilon (default 1e-5), stats_form, dtypes, flags, num_threads, isa, and
     optional element strides per tensor. Always start from desc_init: a
     zeroed desc is not the defaults (axis 0, no affine, epsilon 0).
     args: inputs src | xhat, diff_dst, mean, variance | rstd | std, gamma,
     beta (accepted, never read); outputs diff_src, diff_gamma, diff_beta,
     each optional: a NULL output is not computed (Ascend output_mask).
     Shapes: src, xhat, diff_dst, diff_src: dims. mean, variance, rstd, std:
     the outer dims [0, axis) (trailing 1s implied). gamma, beta, diff_gamma,
     diff_beta: dims[axis..rank) (N = their product), dense unless
     gamma_strides, beta_strides, diff_gamma_strides, diff_beta_strides give
     rank - axis strides each (entry k for dim axis + k).
     diff_gamma/diff_beta need use_affine (else NBWD_ERR_BAD_PARAM); gamma is
     needed (use_affine) only when diff_src is requested.

   BatchNorm training backward (oneDNN Graph BatchNormTrainingBackward):
       void        nbwd_batch_norm_bwd_desc_init(desc, rank, dims, layout, eps)
       nbwd_status nbwd_batch_norm_bwd_workspace_size(desc, &bytes)
       nbwd_status nbwd_batch_norm_bwd(desc, args, workspace, workspace_bytes)
     layout NBWD_NXC (default: dims = [N, spatial..., C]) or NBWD_NCX
     (dims = [N, C, spatial...]); rank >= 2, any number of spatial dims.
     epsilon has no default: it must be > 0 and finite (MEAN_VARIANCE form).
     mean, variance|rstd, gamma, diff_gamma, diff_beta: [C], dense unless
     mean_strides, var_strides, gamma_strides, diff_gamma_strides or
     diff_beta_strides give the stride between channels (one entry).
     gamma is optional (1 when absent). diff_gamma and diff_beta: both or
     neither (NBWD_ERR_BAD_PARAM otherwise); with neither, gamma is ignored,
     as the oneDNN specification says.

   Conversions (round to nearest even; NaN stays NaN, narrowing gives a quiet
   NaN; infinities and f16 subnormals exact):
       float    nbwd_bf16_to_f32(uint16_t)   uint16_t nbwd_f32_to_bf16(float)
       float    nbwd_f16_to_f32(uint16_t)    uint16_t nbwd_f32_to_f16(float)
       void     nbwd_bf16_to_f32_n(const uint16_t *, float *, int64_t n) and
                nbwd_f32_to_bf16_n, nbwd_f16_to_f32_n, nbwd_f32_to_f16_n
   Dispatch:
       const char *nbwd_isa_name(nbwd_isa)   nbwd_isa nbwd_active_isa(void)
       nbwd_status nbwd_force_isa(nbwd_isa)  int nbwd_isa_supported(nbwd_isa)
   Errors:
       const char *nbwd_status_string(nbwd_status)

   ============================================================================
   DATA TYPES
   ============================================================================
     data (src, xhat, diff_dst, diff_src)   stats (mean, var/rstd/std)   params
     f32                                    f32                          f32
     bf16                                   f32 or bf16                  f32 or bf16
     f16                                    f32 or f16                   f32 or f16
   "params" are gamma, beta, diff_gamma and diff_beta. Stats and params are
   chosen independently. f16 stats and params follow the Ascend document
   (same width as the data). Any other combination: NBWD_ERR_BAD_DTYPE.
   All arithmetic is fp32 (per-row and per-channel scalars in fp64); 16-bit
   values are widened on load and rounded to nearest even on store.

   ============================================================================
   STRIDES, ALIASING, ZERO SIZES
   ============================================================================
   Strides are in elements; a NULL stride array means dense row-major. Each
   data tensor may have any strides (also negative or zero for inputs) on its
   outer dims; the normalized block (LayerNorm: dims [axis, rank); BatchNorm
   NCX: the spatial dims; NXC: C) must be dense, else NBWD_ERR_BAD_STRIDES.
   Statistics and parameter tensors may have any strides on all their dims.
   Outputs must not overlap themselves (NBWD_ERR_BAD_STRIDES).
   diff_src may be the very same tensor as diff_dst, src or xhat (same pointer
   and strides: in-place backward). Any other overlap between an output and
   any other tensor is NBWD_ERR_BAD_ALIAS.
   A dimension of size 0 is allowed: no rows (or no batch) gives diff_gamma =
   diff_beta = 0 (or leaves them unchanged in accumulate mode); tensors with
   no elements may be NULL.

   ============================================================================
   FLAGS
   ============================================================================
     NBWD_ACCUMULATE_PARAM_GRADS   diff_gamma += ..., diff_beta += ... (for
                                   gradient accumulation over micro-batches);
                                   the default overwrites. diff_src is always
                                   overwritten.

   ============================================================================
   THREADS AND DETERMINISM
   ============================================================================
   With -fopenmp, rows/channels and the diff_gamma/diff_beta reduction run in
   parallel. num_threads = 0 takes omp_get_max_threads(); small problems and
   calls from inside a parallel region run on one thread. Without -fopenmp
   everything runs serially and the header is warning-free.
   Every reduction is split into blocks whose size depends only on the shape
   (diff_gamma/diff_beta and BatchNorm NXC: blocks of
   min(64, max(ceil(rows / 16), ceil(32768 / cols))) rows, more when the
   partials, at most 512 blocks and 32 MiB, would not cover the rows;
   BatchNorm NCX: 32768-element chunks of a channel), and blocks are combined
   in a fixed (pairwise) order, so a given ISA path returns bitwise identical
   results for any thread count, and which outputs a call asks for never
   changes the bits of the others (diff_src alone equals diff_src with the
   parameter gradients). Different ISA paths may differ in the last bits
   (vector-lane order of the sums, FMA use); all stay within the tolerances
   the tests check against a float64 reference. This holds in any C dialect
   and with any -ffp-contract under gcc (the implementation turns gcc's
   floating-point contraction off: GNU C's default would fuse a multiply and
   an add into an FMA differently in different inlined copies of a kernel;
   not through nvcc, which rejects the pragma) and under clang's default
   (clang's -ffp-contract=fast disregards pragmas: not covered); -ffast-math,
   which reorders sums, is never supported.

   ============================================================================
   MEMORY
   ============================================================================
   The *_workspace_size queries return the scratch size for a descriptor (for
   any choice of outputs). Pass a workspace of at least that size, or NULL to
   let the call allocate and free it with NORM_BWD_MALLOC / NORM_BWD_FREE.
   Stack: a call uses about 14 KiB of the calling thread's stack and 12 KiB
   of each OpenMP worker's (gcc 12 -O2, -fstack-usage), 8.5 KiB of it the f32
   copy of one bf16/f16 LayerNorm row of up to 1024 elements that the kernels
   keep between the row's sums and its dx.

   ============================================================================
   ERRORS AND GUARANTEES
   ============================================================================
   Every entry point validates all its arguments before writing anything: on
   any error no output byte is written. nbwd_status_string gives the message.
   Sizes: all index arithmetic is 64-bit (tensors beyond 2^31 elements work);
   the product of the non-zero dims may be at most INT64_MAX / 16, larger or
   overflowing shapes are NBWD_ERR_BAD_SHAPE, overflowing stride extents
   NBWD_ERR_BAD_STRIDES.
   NaN/Inf: propagated, never masked, never across sets: a bad value in one
   LayerNorm row (x, dy, its mean or variance) changes only that row's
   diff_src and the diff_gamma/diff_beta entries it feeds; a bad value in one
   BatchNorm channel changes only that channel's outputs. Variance = +Inf
   gives rstd = 0 and diff_src = 0 for that set.
   Threads: no global state but the cached CPU detection and the forced path
   (written atomically); concurrent calls on different data are safe and give
   the same bits as serial ones.

   ============================================================================
   CONFIGURATION MACROS
   ============================================================================
     NORM_BWD_IMPLEMENTATION    compile the implementation in this file
     NORM_BWD_STATIC            make every function static to this file
     NORM_BWD_MALLOC(size)      allocator (define both or neither);
     NORM_BWD_FREE(ptr)         default malloc/free
     NORM_BWD_NO_SIMD           scalar path only (norm_bwd_simd.h not needed)
     NORM_BWD_NO_SSE, NORM_BWD_NO_AVX2, NORM_BWD_NO_AVX512, NORM_BWD_NO_NEON,
     NORM_BWD_NO_AVX512_BF16, NORM_BWD_NO_NEON_BF16
                                leave one SIMD path out
     NORM_BWD_HEADER_FILENAME   the path of this file, if renamed, as a string
                                (the kernels are instantiated by re-including it)
     NORM_BWD_STREAM_BYTES      diff_src of at least this many bytes is written
                                with non-temporal stores (default 8 MiB; not
                                BatchNorm NCX planes under 1 KiB)
     NORM_BWD_SIMD_EMULATE      tests only: avx2/avx512/neon spelled with SIMDe
                                emulation, runnable on any x86 CPU when named
   Environment: NORM_BWD_ISA=scalar|sse|avx2|avx512|avx512_bf16|neon|neon_bf16
   replaces the automatic choice. A path that is not compiled in or cannot run on this CPU
   makes NBWD_ISA_AUTO calls return NBWD_ERR_UNSUPPORTED (never a silent
   substitute).

   ============================================================================
   SIMD AND DISPATCH
   ============================================================================
   Paths: scalar (portable C), sse (SIMDe, SSE2; NEON-translated on AArch64),
   avx2 (+FMA, F16C), avx512 (F, BW, VL), avx512_bf16 (avx512 + DQ narrowing
   to bf16 with VCVTNEPS2BF16), neon (AArch64), neon_bf16 (neon narrowing with
   BFCVTN, Armv8.6 BF16). All give the same bf16 bits (VCVTNEPS2BF16 flushes
   f32 denormals, so vectors holding one, found by VFPCLASSPS, take the
   integer rounding); all
   assume the default floating-point environment (nearest even, no FTZ/DAZ).
   x86 kernels carry target attributes, so a plain `cc -O2` build holds them
   all; the first call detects the CPU (cpuid + xgetbv for OS state; NEON is
   baseline on AArch64, getauxval(AT_HWCAP2) tells BF16) and caches the
   choice. The bulk conversion helpers run on the chosen path too. Choose a path per call with desc.isa, per process
   with nbwd_force_isa(), or with NORM_BWD_ISA. The row kernels exist once, in
   the kernel template at the end of this file, instantiated per path over a
   small vector layer (norm_bwd_simd.h); the x86 paths compile with gcc,
   clang and (untested) MSVC, which needs no target attributes.
*/
#ifndef NBWD__KERNEL_PASS

#ifndef NORM_BWD_H_INCLUDED
#define NORM_BWD_H_INCLUDED

#include <stddef.h>
#include <stdint.h>

#ifdef NORM_BWD_STATIC
#if defined(__GNUC__) || defined(__clang__)
#define NBWD_API static __attribute__((unused)) /* a file may use only part of the API */
#else
#define NBWD_API static
#endif
#else
#define NBWD_API extern
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define NBWD_VERSION_MAJOR 0
#define NBWD_VERSION_MINOR 1
#define NBWD_MAX_RANK 8

/* Status codes, from one list so the enum and the messages cannot drift. */
#define NBWD__STATUS_LIST(X)                                                                  \
    X(NBWD_OK, "success")                                                                     \
    X(NBWD_ERR_NULL_POINTER, "a required pointer argument is NULL")                           \
    X(NBWD_ERR_BAD_PARAM, "invalid parameter (rank, axis, epsilon, enum value or flag combination)") \
    X(NBWD_ERR_BAD_SHAPE, "invalid shape (negative dimension or element count overflow)")     \
    X(NBWD_ERR_BAD_DTYPE, "unsupported data type or data type combination")                   \
    X(NBWD_ERR_BAD_STRIDES, "invalid strides (normalized block not dense, or output overlaps itself)") \
    X(NBWD_ERR_BAD_ALIAS, "an output overlaps another tensor (only diff_src == diff_dst/src/xhat exactly is allowed)") \
    X(NBWD_ERR_INSUFFICIENT_WORKSPACE, "workspace smaller than the size query returned")      \
    X(NBWD_ERR_OUT_OF_MEMORY, "workspace allocation failed")                                  \
    X(NBWD_ERR_UNSUPPORTED, "not supported by this build or machine (ISA path, or no GPU/driver)") \
    X(NBWD_ERR_DEVICE, "a GPU runtime call failed (nbwd_gpu_last_error() has the CUDA message)")

typedef enum nbwd_status {
#define NBWD__STATUS_ENUM(name, msg) name,
    NBWD__STATUS_LIST(NBWD__STATUS_ENUM)
#undef NBWD__STATUS_ENUM
    NBWD_STATUS_COUNT
} nbwd_status;

typedef enum nbwd_dtype { NBWD_F32 = 0, NBWD_F16 = 1, NBWD_BF16 = 2 } nbwd_dtype;

typedef enum nbwd_stats_form {
    NBWD_STATS_MEAN_VARIANCE = 0, /* mean, variance; rstd = 1/sqrt(variance + epsilon) */
    NBWD_STATS_MEAN_RSTD = 1,     /* mean, rstd = 1/sqrt(variance + epsilon) */
    NBWD_STATS_XHAT_STD = 2       /* xhat = (x - mean) * rstd, std = sqrt(variance + epsilon) */
} nbwd_stats_form;

typedef enum nbwd_layout { NBWD_NXC = 0, NBWD_NCX = 1 } nbwd_layout;

typedef enum nbwd_isa {
    NBWD_ISA_AUTO = 0, /* in a descriptor: the dispatcher's choice */
    NBWD_ISA_SCALAR = 1,
    NBWD_ISA_SSE = 2,
    NBWD_ISA_AVX2 = 3,
    NBWD_ISA_AVX512 = 4,
    NBWD_ISA_NEON = 5,
    NBWD_ISA_AVX512_BF16 = 6, /* avx512 + AVX512_BF16: hardware f32 -> bf16 narrowing */
    NBWD_ISA_NEON_BF16 = 7,   /* neon + Armv8.6 BF16 (BFCVTN) */
    NBWD_ISA_COUNT = 8
} nbwd_isa;

/* flags */
#define NBWD_ACCUMULATE_PARAM_GRADS 1u

typedef struct nbwd_layer_norm_bwd_desc {
    int rank;                       /* 1..NBWD_MAX_RANK */
    int64_t dims[NBWD_MAX_RANK];
    int64_t begin_norm_axis;        /* [-rank, rank-1], default -1 */
    int use_affine;                 /* default 1 */
    float epsilon;                  /* default 1e-5; MEAN_VARIANCE form only */
    nbwd_stats_form stats_form;     /* default NBWD_STATS_MEAN_VARIANCE */
    nbwd_dtype data_dtype;          /* src, xhat, diff_dst, diff_src; default f32 */
    nbwd_dtype stats_dtype;         /* mean, variance, rstd, std; default f32 */
    nbwd_dtype param_dtype;         /* gamma, beta, diff_gamma, diff_beta; default f32 */
    unsigned flags;                 /* NBWD_ACCUMULATE_PARAM_GRADS */
    int num_threads;                /* 0: OpenMP default; ignored without OpenMP */
    nbwd_isa isa;                   /* NBWD_ISA_AUTO or a path to force for this call */
    /* Element strides, rank entries each; NULL means dense row-major. */
    const int64_t *src_strides;      /* src, or xhat in the XHAT_STD form */
    const int64_t *diff_dst_strides;
    const int64_t *diff_src_strides;
    const int64_t *mean_strides;     /* only the entries [0, axis) are read */
    const int64_t *var_strides;      /* variance, rstd or std; entries [0, axis) */
    /* The parameter tensors, shape dims[axis..rank): rank - axis entries each
       (entry k for dim axis + k), any strides; NULL means dense. */
    const int64_t *gamma_strides;
    const int64_t *beta_strides;     /* beta is never read: its extent is checked for aliasing */
    const int64_t *diff_gamma_strides;
    const int64_t *diff_beta_strides;
} nbwd_layer_norm_bwd_desc;

typedef struct nbwd_layer_norm_bwd_args {
    const void *src;       /* x: MEAN_VARIANCE and MEAN_RSTD forms */
    const void *xhat;      /* normalized input: XHAT_STD form */
    const void *diff_dst;  /* required */
    const void *mean;      /* MEAN_VARIANCE and MEAN_RSTD forms */
    const void *variance;  /* MEAN_VARIANCE form */
    const void *rstd;      /* MEAN_RSTD form: 1/sqrt(variance + epsilon) */
    const void *std;       /* XHAT_STD form: sqrt(variance + epsilon) */
    const void *gamma;     /* use_affine and diff_src requested */
    const void *beta;      /* accepted, never read */
    void *diff_src;        /* optional output */
    void *diff_gamma;      /* optional output (use_affine) */
    void *diff_beta;       /* optional output (use_affine) */
} nbwd_layer_norm_bwd_args;

typedef struct nbwd_batch_norm_bwd_desc {
    int rank;                       /* 2..NBWD_MAX_RANK */
    int64_t dims[NBWD_MAX_RANK];    /* NXC: [N, X..., C]; NCX: [N, C, X...] */
    nbwd_layout layout;             /* default NBWD_NXC */
    float epsilon;                  /* required > 0 in the MEAN_VARIANCE form */
    nbwd_stats_form stats_form;
    nbwd_dtype data_dtype, stats_dtype, param_dtype;
    unsigned flags;
    int num_threads;
    nbwd_isa isa;
    /* Element strides of the data tensors (rank entries, NULL = dense). */
    const int64_t *src_strides;      /* src, or xhat in the XHAT_STD form */
    const int64_t *diff_dst_strides;
    const int64_t *diff_src_strides;
    /* The [C] tensors: one entry each, the stride between channels; NULL = 1. */
    const int64_t *mean_strides;
    const int64_t *var_strides;      /* variance, rstd or std */
    const int64_t *gamma_strides;
    const int64_t *diff_gamma_strides;
    const int64_t *diff_beta_strides;
} nbwd_batch_norm_bwd_desc;

typedef struct nbwd_batch_norm_bwd_args {
    const void *src, *xhat, *diff_dst;
    const void *mean, *variance, *rstd, *std; /* [C] each, as in the LayerNorm args */
    const void *gamma;                        /* optional [C] */
    void *diff_src;                           /* output */
    void *diff_gamma, *diff_beta;             /* optional [C] outputs, both or neither */
} nbwd_batch_norm_bwd_args;

NBWD_API void nbwd_layer_norm_bwd_desc_init(nbwd_layer_norm_bwd_desc *desc, int rank, const int64_t *dims);
NBWD_API nbwd_status nbwd_layer_norm_bwd_workspace_size(const nbwd_layer_norm_bwd_desc *desc, size_t *bytes);
NBWD_API nbwd_status nbwd_layer_norm_bwd(const nbwd_layer_norm_bwd_desc *desc, const nbwd_layer_norm_bwd_args *args,
                                         void *workspace, size_t workspace_bytes);

NBWD_API void nbwd_batch_norm_bwd_desc_init(nbwd_batch_norm_bwd_desc *desc, int rank, const int64_t *dims,
                                            nbwd_layout layout, float epsilon);
NBWD_API nbwd_status nbwd_batch_norm_bwd_workspace_size(const nbwd_batch_norm_bwd_desc *desc, size_t *bytes);
NBWD_API nbwd_status nbwd_batch_norm_bwd(const nbwd_batch_norm_bwd_desc *desc, const nbwd_batch_norm_bwd_args *args,
                                         void *workspace, size_t workspace_bytes);

NBWD_API const char *nbwd_status_string(nbwd_status status);

NBWD_API float nbwd_bf16_to_f32(uint16_t v);
NBWD_API uint16_t nbwd_f32_to_bf16(float v);
NBWD_API float nbwd_f16_to_f32(uint16_t v);
NBWD_API uint16_t nbwd_f32_to_f16(float v);
NBWD_API void nbwd_bf16_to_f32_n(const uint16_t *src, float *dst, int64_t n);
NBWD_API void nbwd_f32_to_bf16_n(const float *src, uint16_t *dst, int64_t n);
NBWD_API void nbwd_f16_to_f32_n(const uint16_t *src, float *dst, int64_t n);
NBWD_API void nbwd_f32_to_f16_n(const float *src, uint16_t *dst, int64_t n);

NBWD_API const char *nbwd_isa_name(nbwd_isa isa);
NBWD_API int nbwd_isa_supported(nbwd_isa isa);   /* compiled in and runnable on this CPU */
NBWD_API nbwd_isa nbwd_active_isa(void);         /* the path NBWD_ISA_AUTO resolves to */
/* Force (or with NBWD_ISA_AUTO, release) the automatic choice for the whole
   process; NBWD_ERR_UNSUPPORTED if that path is not compiled in or runnable. */
NBWD_API nbwd_status nbwd_force_isa(nbwd_isa isa);

#ifdef __cplusplus
}
#endif

#endif /* NORM_BWD_H_INCLUDED */

/* ==========================================================================
   IMPLEMENTATION
   ========================================================================== */
#if defined(NORM_BWD_IMPLEMENTATION) && !defined(NBWD__IMPLEMENTED)
#define NBWD__IMPLEMENTED

#include <math.h>
#include <stdlib.h>
#include <string.h>
#if defined(_OPENMP)
#include <omp.h>
#endif

/* No floating-point contraction: GNU C (gcc's default mode) would fuse a
   multiply and an add into an FMA wherever it sees fit, differently in
   different inlined copies of the same kernel, and a row's bits would then
   depend on which loop (and so which thread split) handled it. (Not under
   nvcc, whose front end rejects the pragma, nor icc.) */
#if defined(__GNUC__) && !defined(__clang__) && !defined(__CUDACC__) && !defined(__INTEL_COMPILER)
#define NBWD__GCC_NO_CONTRACT 1
#pragma GCC push_options
#pragma GCC optimize("fp-contract=off")
#endif

#if defined(NORM_BWD_MALLOC) && defined(NORM_BWD_FREE)
#elif !defined(NORM_BWD_MALLOC) && !defined(NORM_BWD_FREE)
#define NORM_BWD_MALLOC(size) malloc(size)
#define NORM_BWD_FREE(ptr) free(ptr)
#else
#error "norm_bwd.h: define both NORM_BWD_MALLOC and NORM_BWD_FREE, or neither"
#endif

#ifndef NORM_BWD_HEADER_FILENAME
#define NORM_BWD_HEADER_FILENAME "norm_bwd.h"
#endif

#if defined(_MSC_VER) && !defined(__clang__)
#define NBWD__MSVC 1
#define NBWD__FORCEINLINE static __forceinline
#define NBWD__NOINLINE static __declspec(noinline)
#define NBWD__PREFETCH(addr) ((void)(addr))
#define NBWD__PREFETCH_L2(addr) ((void)(addr))
#else
#define NBWD__FORCEINLINE static inline __attribute__((always_inline))
#define NBWD__NOINLINE static __attribute__((noinline))
/* a hint: never faults, so addr may lie past the end of the tensor. _L2:
   low temporal locality (x86 prefetcht2) */
#define NBWD__PREFETCH(addr) __builtin_prefetch((const void *)(addr))
#define NBWD__PREFETCH_L2(addr) __builtin_prefetch((const void *)(addr), 0, 1)
#endif

#define NBWD__CAT_(a, b) a##b
#define NBWD__CAT(a, b) NBWD__CAT_(a, b)

/* OpenMP without warnings when it is off: a raw '#pragma omp' warns under
   -Wall without -fopenmp, _Pragma inside a macro does not exist then. */
#if defined(_OPENMP)
#define NBWD__PRAGMA(x) _Pragma(#x)
#define NBWD__PARALLEL_FOR(nthreads, var, count, body)                                  \
    do {                                                                                \
        if ((nthreads) > 1) {                                                           \
            NBWD__PRAGMA(omp parallel for num_threads(nthreads) schedule(static))       \
            for (var = 0; var < (count); ++var) { body; }                               \
        } else {                                                                        \
            for (var = 0; var < (count); ++var) { body; }                               \
        }                                                                               \
    } while (0)
#else
#define NBWD__PARALLEL_FOR(nthreads, var, count, body)                                  \
    do {                                                                                \
        (void)(nthreads); /* keeps serial builds free of set-but-unused notes */        \
        for (var = 0; var < (count); ++var) { body; }                                   \
    } while (0)
#endif

/* Tuning constants. The reduction blocking depends on them and on the shape
   only, never on the thread count: that is what makes results deterministic. */
#define NBWD__BLOCK_ROWS 64                 /* rows per diff_gamma/diff_beta partial, when rows abound */
#define NBWD__FEW_ROWS_BLOCKS 16            /* blocks (threads) that fewer rows are still cut into */
#define NBWD__MAX_BLOCKS 512                /* partial sums per column, at most */
#define NBWD__PARTIALS_BYTES (32 << 20)     /* cap on the partials' workspace */
#define NBWD__BN_CHUNK_ELEMS 32768          /* BatchNorm NCX: elements per partial */
#define NBWD__NCX_BLOCK_BYTES (1 << 20)     /* BatchNorm NCX: x and dy of a block of channels */
#define NBWD__NCX_STREAM_PLANE_BYTES 1024   /* smaller NCX planes share lines: ordinary dx stores */
#define NBWD__MIN_WORK_PER_THREAD 32768     /* elements; smaller problems stay serial */
#define NBWD__WS_ALIGN 64
/* diff_src at least this large is written with non-temporal stores (it would
   only evict x and dy from the caches). */
#ifndef NORM_BWD_STREAM_BYTES
#define NORM_BWD_STREAM_BYTES (8 << 20)
#endif

/* ---------------------------------------------------------------- status */
NBWD_API const char *nbwd_status_string(nbwd_status status) {
    static const char *const messages[] = {
#define NBWD__STATUS_MSG(name, msg) #name ": " msg,
        NBWD__STATUS_LIST(NBWD__STATUS_MSG)
#undef NBWD__STATUS_MSG
    };
    if ((int)status < 0 || (int)status >= (int)NBWD_STATUS_COUNT) return "unknown nbwd_status value";
    return messages[(int)status];
}

/* ----------------------------------------------------------- conversions */
static uint32_t nbwd__f32_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static float nbwd__bits_f32(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

static float nbwd__bf16_to_f32(uint16_t v) { return nbwd__bits_f32((uint32_t)v << 16); }

static uint16_t nbwd__f32_to_bf16(float f) {
    uint32_t u = nbwd__f32_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x0040u); /* quiet NaN */
    u += 0x7fffu + ((u >> 16) & 1u);                                            /* nearest even */
    return (uint16_t)(u >> 16);
}

static float nbwd__f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu, man = h & 0x3ffu, bits;
    if (exp == 0) {
        if (man == 0) {
            bits = sign;
        } else { /* subnormal: renormalize */
            int32_t e = 1;
            while (!(man & 0x400u)) { man <<= 1; e--; }
            bits = sign | ((uint32_t)(e + 112) << 23) | ((man & 0x3ffu) << 13);
        }
    } else if (exp == 31) {
        bits = sign | 0x7f800000u | (man << 13) | (man ? 0x400000u : 0u); /* NaN stays quiet NaN */
    } else {
        bits = sign | ((exp + 112u) << 23) | (man << 13);
    }
    return nbwd__bits_f32(bits);
}

static uint16_t nbwd__f32_to_f16(float f) {
    uint32_t u = nbwd__f32_bits(f);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u) return (uint16_t)(sign | 0x7e00u | ((a >> 13) & 0x3ffu)); /* quiet NaN */
    if (a >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* >= 65520 rounds to infinity */
    if (a < 0x38800000u) { /* below 2^-14: f16 subnormal or zero */
        uint32_t e = a >> 23, m, shift, r, rem, half;
        if (e < 102) return sign; /* below 2^-25: rounds to zero */
        m = (a & 0x7fffffu) | 0x800000u;
        shift = 126 - e;
        r = m >> shift;
        rem = m & ((1u << shift) - 1u);
        half = 1u << (shift - 1);
        if (rem > half || (rem == half && (r & 1u))) r++;
        return (uint16_t)(sign | r);
    } else {
        uint32_t r = (((a >> 23) - 112u) << 10) | ((a >> 13) & 0x3ffu);
        uint32_t rem = a & 0x1fffu;
        if (rem > 0x1000u || (rem == 0x1000u && (r & 1u))) r++;
        return (uint16_t)(sign | r);
    }
}

NBWD_API float nbwd_bf16_to_f32(uint16_t v) { return nbwd__bf16_to_f32(v); }
NBWD_API uint16_t nbwd_f32_to_bf16(float v) { return nbwd__f32_to_bf16(v); }
NBWD_API float nbwd_f16_to_f32(uint16_t v) { return nbwd__f16_to_f32(v); }
NBWD_API uint16_t nbwd_f32_to_f16(float v) { return nbwd__f32_to_f16(v); }
/* The bulk helpers run on the dispatched path (after the dispatcher below). */
static void nbwd__narrow_n(const float *src, uint16_t *dst, int dt, int64_t n);
static void nbwd__widen_n(const uint16_t *src, float *dst, int dt, int64_t n);
NBWD_API void nbwd_bf16_to_f32_n(const uint16_t *src, float *dst, int64_t n) { nbwd__widen_n(src, dst, NBWD_BF16, n); }
NBWD_API void nbwd_f32_to_bf16_n(const float *src, uint16_t *dst, int64_t n) { nbwd__narrow_n(src, dst, NBWD_BF16, n); }
NBWD_API void nbwd_f16_to_f32_n(const uint16_t *src, float *dst, int64_t n) { nbwd__widen_n(src, dst, NBWD_F16, n); }
NBWD_API void nbwd_f32_to_f16_n(const float *src, uint16_t *dst, int64_t n) { nbwd__narrow_n(src, dst, NBWD_F16, n); }

static size_t nbwd__esize(int dt) { return dt == NBWD_F32 ? 4u : 2u; }

/* Element i of a tensor of dtype dt, widened to float. */
static float nbwd__load(const void *p, int64_t i, int dt) {
    if (dt == NBWD_F32) return ((const float *)p)[i];
    if (dt == NBWD_F16) return nbwd__f16_to_f32(((const uint16_t *)p)[i]);
    return nbwd__bf16_to_f32(((const uint16_t *)p)[i]);
}
static void nbwd__store(void *p, int64_t i, int dt, float v) {
    if (dt == NBWD_F32) ((float *)p)[i] = v;
    else if (dt == NBWD_F16) ((uint16_t *)p)[i] = nbwd__f32_to_f16(v);
    else ((uint16_t *)p)[i] = nbwd__f32_to_bf16(v);
}

/* ------------------------------------------------------ kernel interface */
/* The ISA-specific part: kernels over dense runs of n elements of data dtype
   dt, all written once in the kernel template at the end of this file.
   xhat = (x - xm) * xs (the XHAT_STD form passes xm = 0, xs = 1).
   row_reduce: count rows (BatchNorm NCX planes) of n elements, row i at
               x + i * step[0] elements (dy: step[1]) with its own xm[i],
               xs[i]: sums[i * sums_step + 0] += sum dy, [... + 1] += sum
               dy*xhat (one call per run of planes: a call per 49-element
               plane cost more than its arithmetic).
   row_apply:  the same rows (dx: step[2]): dx = scale[i] * (dy - (mean_g[i]
               + xhat * mean_gx[i])); stream: the whole lines of each row
               with non-temporal stores, not fenced: the caller calls
               store_fence after its last streamed row.
   ln_rows:    a batch of LayerNorm rows: the sums and dx of each row, and
               the column partials (large f32 tensors with both, on
               16-lane paths: reduced a sub-block at a time, then swept a
               chunk of columns at a time in L2).
   bn_rows:    a batch of BatchNorm NXC rows: per-column xm, xs, mean_g,
               mean_gx, scale; column sums, or dx.
   add:        dst += src (the pairwise combination of block partials).
   rstd:       rstd[i] = (float)(1 / sqrt((double)variance[i] + eps)), the
               rows of a LayerNorm batch at once (may work in place).
   store_fence: orders the streamed stores before another thread reads them
               (one per run of row_apply calls: a fence per 196-byte plane
               made BatchNorm NCX 7x7 three times slower). */
typedef void (*nbwd__row_reduce_fn)(const void *x, const void *dy, int dt, int64_t n, int64_t count,
                                    const int64_t *step, const float *xm, const float *xs, float *sums,
                                    int64_t sums_step);
typedef void (*nbwd__row_apply_fn)(const void *x, const void *dy, void *dx, int dt, int64_t n, int64_t count,
                                   const int64_t *step, const float *xm, const float *xs, const float *mean_g,
                                   const float *mean_gx, const float *scale, int stream);
/* A batch of LayerNorm rows for one call (saves a call per row: rows of a
   few dozen elements are common). Offsets are in elements. */
#define NBWD__ROW_BATCH 64
typedef struct nbwd__rows {
    const char *x, *dy;
    char *dx;                       /* NULL: no diff_src */
    int64_t x_off[NBWD__ROW_BATCH], dy_off[NBWD__ROW_BATCH], dx_off[NBWD__ROW_BATCH];
    float xm[NBWD__ROW_BATCH], xs[NBWD__ROW_BATCH], rstd[NBWD__ROW_BATCH];
    int64_t count, n;
    int dt;
    const float *gamma;             /* NULL: 1 */
    float *col_dg, *col_db;         /* column partials, each may be NULL */
    int stream;                     /* non-temporal dx stores (large tensors) */
    /* BatchNorm NXC: per-column statistics and coefficients */
    const float *cxm, *cxs, *cmg, *cmgx, *cscale;
} nbwd__rows;
typedef void (*nbwd__ln_rows_fn)(const nbwd__rows *rows);
typedef void (*nbwd__rstd_fn)(const float *variance, float *rstd, int64_t count, double eps);
typedef void (*nbwd__add_fn)(float *dst, const float *src, int64_t n);
typedef void (*nbwd__narrow_fn)(const float *src, uint16_t *dst, int dt, int64_t n);
typedef void (*nbwd__widen_fn)(const uint16_t *src, float *dst, int dt, int64_t n);
typedef void (*nbwd__fence_fn)(void);

typedef struct nbwd__kernels {
    nbwd_isa isa;
    nbwd__row_reduce_fn row_reduce;
    nbwd__row_apply_fn row_apply;
    nbwd__ln_rows_fn ln_rows;
    nbwd__ln_rows_fn bn_rows; /* NXC rows: column sums, or dx when rows->dx is set */
    nbwd__add_fn add;         /* dst[i] += src[i] */
    nbwd__narrow_fn narrow;   /* the bulk conversion helpers */
    nbwd__widen_fn widen;
    nbwd__rstd_fn rstd;       /* rstd[i] = 1/sqrt(variance[i] + eps), double precision */
    nbwd__fence_fn store_fence;
} nbwd__kernels;

/* The portable path: the same template with one-lane "vectors". */
#define NBWD__KSUFFIX _scalar
#define NBWD__KISA NBWD_ISA_SCALAR
#define NBWD__KTARGET
#define NBWD__VF float
#define NBWD__VW 1
#define NBWD__VZERO() 0.0f
#define NBWD__VSET1(s) (s)
#define NBWD__VADD(a, b) ((a) + (b))
#define NBWD__VSUB(a, b) ((a) - (b))
#define NBWD__VMUL(a, b) ((a) * (b))
#define NBWD__VFMA(a, b, c) ((a) * (b) + (c))
#define NBWD__VHSUM(v) (v)
#define NBWD__VLOAD_F32(p) (*(p))
#define NBWD__VSTORE_F32(p, v) (*(p) = (v))
#define NBWD__VLOAD_F16(p) nbwd__f16_to_f32(*(p))
#define NBWD__VSTORE_F16(p, v) (*(p) = nbwd__f32_to_f16(v))
#define NBWD__VLOAD_BF16(p) nbwd__bf16_to_f32(*(p))
#define NBWD__VSTORE_BF16(p, v) (*(p) = nbwd__f32_to_bf16(v))
#define NBWD__KERNEL_PASS
#include NORM_BWD_HEADER_FILENAME
#undef NBWD__KERNEL_PASS

#if !defined(NORM_BWD_NO_SIMD)
#include "norm_bwd_simd.h"
#endif

/* ------------------------------------------------------------- dispatch */
/* The only global state: the detected CPU features and the chosen path,
   packed in one int written once (a racing second writer stores the same
   value). Bits 0..7: runnable paths (1 << nbwd_isa); bits 8..11: the path
   NBWD_ISA_AUTO resolves to; bit 15: a NORM_BWD_ISA value that cannot run;
   bit 16: initialised. */
static int nbwd__dispatch_state;
static int nbwd__forced_isa; /* nbwd_force_isa; 0 = none */

#if defined(NBWD__MSVC)
#include <intrin.h>
#define NBWD__ATOMIC_LOAD(p) (*(volatile int *)(p))
#define NBWD__ATOMIC_STORE(p, v) (*(volatile int *)(p) = (v))
#else
#define NBWD__ATOMIC_LOAD(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define NBWD__ATOMIC_STORE(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)
#endif

static const nbwd__kernels *nbwd__compiled(nbwd_isa isa) {
    switch (isa) {
    case NBWD_ISA_SCALAR: return &nbwd__kernels_scalar;
#if defined(NBWD__HAVE_SSE)
    case NBWD_ISA_SSE: return &nbwd__kernels_sse;
#endif
#if defined(NBWD__HAVE_AVX2)
    case NBWD_ISA_AVX2: return &nbwd__kernels_avx2;
#endif
#if defined(NBWD__HAVE_AVX512)
    case NBWD_ISA_AVX512: return &nbwd__kernels_avx512;
#endif
#if defined(NBWD__HAVE_NEON)
    case NBWD_ISA_NEON: return &nbwd__kernels_neon;
#endif
#if defined(NBWD__HAVE_AVX512_BF16)
    case NBWD_ISA_AVX512_BF16: return &nbwd__kernels_avx512_bf16;
#endif
#if defined(NBWD__HAVE_NEON_BF16)
    case NBWD_ISA_NEON_BF16: return &nbwd__kernels_neon_bf16;
#endif
    default: return NULL;
    }
}

#if defined(__x86_64__) || defined(_M_X64) || defined(__i386__) || defined(_M_IX86)
#define NBWD__X86 1
static void nbwd__cpuid(unsigned leaf, unsigned sub, unsigned r[4]) {
#if defined(NBWD__MSVC)
    int a[4];
    __cpuidex(a, (int)leaf, (int)sub);
    r[0] = (unsigned)a[0]; r[1] = (unsigned)a[1]; r[2] = (unsigned)a[2]; r[3] = (unsigned)a[3];
#else
    __asm__ __volatile__("cpuid" : "=a"(r[0]), "=b"(r[1]), "=c"(r[2]), "=d"(r[3]) : "a"(leaf), "c"(sub));
#endif
}
static unsigned long long nbwd__xcr0(void) {
#if defined(NBWD__MSVC)
    return _xgetbv(0);
#else
    unsigned lo, hi;
    __asm__ __volatile__("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((unsigned long long)hi << 32) | lo;
#endif
}
#endif

/* Bit mask of the paths this CPU and OS can run (compiled in or not). */
static int nbwd__cpu_paths(void) {
    int paths = 1 << NBWD_ISA_SCALAR;
#if defined(NBWD__X86)
    unsigned r[4], max_leaf;
    nbwd__cpuid(0, 0, r);
    max_leaf = r[0];
    nbwd__cpuid(1, 0, r);
    if (r[3] & (1u << 26)) paths |= 1 << NBWD_ISA_SSE; /* SSE2 */
    if ((r[2] & (1u << 27)) && (r[2] & (1u << 28)) && (r[2] & (1u << 12)) && (r[2] & (1u << 29)) &&
        max_leaf >= 7) { /* OSXSAVE, AVX, FMA, F16C */
        unsigned long long xcr0 = nbwd__xcr0();
        unsigned ebx7, max_sub7;
        nbwd__cpuid(7, 0, r);
        ebx7 = r[1];
        max_sub7 = r[0];
        if ((xcr0 & 0x6) == 0x6 && (ebx7 & (1u << 5))) {
            paths |= 1 << NBWD_ISA_AVX2;
            if ((xcr0 & 0xe6) == 0xe6 && (ebx7 & (1u << 16)) && (ebx7 & (1u << 30)) && (ebx7 & (1u << 31))) {
                paths |= 1 << NBWD_ISA_AVX512;
                if (max_sub7 >= 1 && (ebx7 & (1u << 17))) { /* AVX512DQ (VFPCLASSPS) */
                    nbwd__cpuid(7, 1, r);
                    if (r[0] & (1u << 5)) paths |= 1 << NBWD_ISA_AVX512_BF16; /* AVX512_BF16 */
                }
            }
        }
    }
#elif defined(__aarch64__) || defined(_M_ARM64)
    /* NEON and the SSE baseline (translated to NEON by SIMDe) are baseline;
       the kernel's HWCAP2 adds BF16 (BFCVTN). */
    paths |= (1 << NBWD_ISA_NEON) | (1 << NBWD_ISA_SSE);
#if defined(NBWD__HAVE_NEON_BF16)
    if (getauxval(AT_HWCAP2) & NBWD__HWCAP2_BF16) paths |= 1 << NBWD_ISA_NEON_BF16;
#endif
#endif
#if defined(NBWD__EMULATED_PATHS)
    paths |= NBWD__EMULATED_PATHS; /* SIMDe-emulated: runs on any CPU */
#endif
    return paths;
}

static int nbwd__isa_from_name(const char *s) {
    int i;
    for (i = 1; i < NBWD_ISA_COUNT; ++i)
        if (strcmp(s, nbwd_isa_name((nbwd_isa)i)) == 0) return i;
    return 0;
}

static int nbwd__dispatch(void) {
    int state = NBWD__ATOMIC_LOAD(&nbwd__dispatch_state);
    if (!state) {
        int cpu = nbwd__cpu_paths(), runnable = 0, best = NBWD_ISA_SCALAR, i;
        static const int preference[] = {NBWD_ISA_SCALAR, NBWD_ISA_SSE,    NBWD_ISA_NEON,       NBWD_ISA_NEON_BF16,
                                         NBWD_ISA_AVX2,   NBWD_ISA_AVX512, NBWD_ISA_AVX512_BF16};
        const char *env = getenv("NORM_BWD_ISA");
        for (i = 1; i < NBWD_ISA_COUNT; ++i)
            if ((cpu & (1 << i)) && nbwd__compiled((nbwd_isa)i)) runnable |= 1 << i;
#if !defined(NBWD__EMULATED_PATHS)
#define NBWD__EMULATED_PATHS 0
#endif
        for (i = 0; i < (int)(sizeof preference / sizeof preference[0]); ++i)
            if ((runnable & (1 << preference[i])) && !(NBWD__EMULATED_PATHS & (1 << preference[i])))
                best = preference[i];
        state = runnable | (1 << 16);
        if (env && *env && strcmp(env, "auto") != 0) {
            int want = nbwd__isa_from_name(env);
            if (want && (runnable & (1 << want))) best = want;
            else state |= 1 << 15;
        }
        state |= best << 8;
        NBWD__ATOMIC_STORE(&nbwd__dispatch_state, state);
    }
    return state;
}

NBWD_API const char *nbwd_isa_name(nbwd_isa isa) {
    switch (isa) {
    case NBWD_ISA_AUTO: return "auto";
    case NBWD_ISA_SCALAR: return "scalar";
    case NBWD_ISA_SSE: return "sse";
    case NBWD_ISA_AVX2: return "avx2";
    case NBWD_ISA_AVX512: return "avx512";
    case NBWD_ISA_NEON: return "neon";
    case NBWD_ISA_AVX512_BF16: return "avx512_bf16";
    case NBWD_ISA_NEON_BF16: return "neon_bf16";
    default: return "unknown";
    }
}

NBWD_API int nbwd_isa_supported(nbwd_isa isa) {
    if ((int)isa <= 0 || (int)isa >= NBWD_ISA_COUNT) return 0;
    return (nbwd__dispatch() >> (int)isa) & 1;
}

/* The kernels for a requested path (NBWD_ISA_AUTO: forced, else env, else
   best), or NULL when that path cannot run here. */
static const nbwd__kernels *nbwd__select(nbwd_isa isa) {
    int state = nbwd__dispatch();
    if ((int)isa == NBWD_ISA_AUTO) {
        int forced = NBWD__ATOMIC_LOAD(&nbwd__forced_isa);
        if (forced) return nbwd__compiled((nbwd_isa)forced);
        if (state & (1 << 15)) return NULL;
        return nbwd__compiled((nbwd_isa)((state >> 8) & 15));
    }
    if ((int)isa < 0 || (int)isa >= NBWD_ISA_COUNT || !((state >> (int)isa) & 1)) return NULL;
    return nbwd__compiled(isa);
}

NBWD_API nbwd_isa nbwd_active_isa(void) {
    const nbwd__kernels *k = nbwd__select(NBWD_ISA_AUTO);
    return k ? k->isa : NBWD_ISA_AUTO;
}

NBWD_API nbwd_status nbwd_force_isa(nbwd_isa isa) {
    if ((int)isa != NBWD_ISA_AUTO && !nbwd_isa_supported(isa)) return NBWD_ERR_UNSUPPORTED;
    NBWD__ATOMIC_STORE(&nbwd__forced_isa, (int)isa);
    return NBWD_OK;
}

/* Every path gives the bits of the scalar conversions. A path that cannot
   run (a NORM_BWD_ISA naming one) falls back to scalar: these return void. */
static void nbwd__narrow_n(const float *src, uint16_t *dst, int dt, int64_t n) {
    const nbwd__kernels *k = nbwd__select(NBWD_ISA_AUTO);
    if (!src || !dst || n <= 0) return;
    (k ? k : &nbwd__kernels_scalar)->narrow(src, dst, dt, n);
}
static void nbwd__widen_n(const uint16_t *src, float *dst, int dt, int64_t n) {
    const nbwd__kernels *k = nbwd__select(NBWD_ISA_AUTO);
    if (!src || !dst || n <= 0) return;
    (k ? k : &nbwd__kernels_scalar)->widen(src, dst, dt, n);
}

static int nbwd__pick_threads(int requested, int64_t work_elems, int64_t max_parallel) {
#if defined(_OPENMP)
    int64_t t;
    if (omp_in_parallel()) return 1; /* nested call: the caller's threads are busy already */
    if (requested > 0) {
        t = requested;
    } else {
        t = omp_get_max_threads();
        if (t > work_elems / NBWD__MIN_WORK_PER_THREAD) t = work_elems / NBWD__MIN_WORK_PER_THREAD;
    }
    if (t > max_parallel) t = max_parallel;
    return t < 1 ? 1 : (int)t;
#else
    (void)requested; (void)work_elems; (void)max_parallel;
    return 1;
#endif
}

/* ----------------------------------------------------------- validation */
#define NBWD__MAX_ELEMS (INT64_MAX / 16) /* keeps every byte offset in range */

static int nbwd__mul_ok(int64_t a, int64_t b, int64_t *out) { /* a, b >= 0 */
    if (a != 0 && b > NBWD__MAX_ELEMS / a) return 0;
    *out = a * b;
    return 1;
}

static int nbwd__dtype_ok(int dt) { return dt == NBWD_F32 || dt == NBWD_F16 || dt == NBWD_BF16; }

/* Stats and params are f32, or the data type itself (see DATA TYPES). */
static nbwd_status nbwd__check_dtypes(int dt, int sdt, int pdt) {
    if (!nbwd__dtype_ok(dt) || !nbwd__dtype_ok(sdt) || !nbwd__dtype_ok(pdt)) return NBWD_ERR_BAD_DTYPE;
    if ((sdt != NBWD_F32 && sdt != dt) || (pdt != NBWD_F32 && pdt != dt)) return NBWD_ERR_BAD_DTYPE;
    return NBWD_OK;
}

static nbwd_status nbwd__check_common(int form, unsigned flags, int num_threads, int isa, float eps) {
    if (form < NBWD_STATS_MEAN_VARIANCE || form > NBWD_STATS_XHAT_STD) return NBWD_ERR_BAD_PARAM;
    if (flags & ~NBWD_ACCUMULATE_PARAM_GRADS) return NBWD_ERR_BAD_PARAM;
    if (num_threads < 0 || isa < 0 || isa >= NBWD_ISA_COUNT) return NBWD_ERR_BAD_PARAM;
    if (form == NBWD_STATS_MEAN_VARIANCE && !(eps > 0.0f && (double)eps <= 3.4028234663852886e38))
        return NBWD_ERR_BAD_PARAM; /* also rejects NaN and infinity */
    return NBWD_OK;
}

/* Checks dims and returns the element count of dims [from, to). The limit
   applies to the product of the non-zero dims, so that a zero anywhere
   cannot hide a huge dimension (every sub-product stays bounded too). */
static nbwd_status nbwd__count(const int64_t *dims, int from, int to, int64_t *count) {
    int64_t nz = 1;
    int d, empty = 0;
    for (d = from; d < to; ++d) {
        if (dims[d] < 0) return NBWD_ERR_BAD_SHAPE;
        if (dims[d] == 0) empty = 1;
        else if (!nbwd__mul_ok(nz, dims[d], &nz)) return NBWD_ERR_BAD_SHAPE;
    }
    *count = empty ? 0 : nz;
    return NBWD_OK;
}

/* Given strides, or dense row-major ones over dims [0, rank). */
static void nbwd__strides(int rank, const int64_t *dims, const int64_t *given, int64_t *out) {
    int64_t s = 1;
    int d;
    for (d = rank - 1; d >= 0; --d) {
        out[d] = given ? given[d] : s;
        s *= dims[d] > 0 ? dims[d] : 1;
    }
}

/* Is the block of dims [from, to) dense (row-major, unit inner stride)? */
static int nbwd__dense_block(const int64_t *dims, const int64_t *st, int from, int to) {
    int64_t expect = 1;
    int d;
    for (d = to - 1; d >= from; --d) {
        if (dims[d] != 1 && st[d] != expect) return 0;
        expect *= dims[d] > 0 ? dims[d] : 1; /* as nbwd__strides: NULL strides are dense */
    }
    return 1;
}

/* Byte range [lo, hi) a tensor covers relative to its base; 0 on overflow. */
static int nbwd__extent(int rank, const int64_t *dims, const int64_t *st, size_t esz, int64_t *lo, int64_t *hi) {
    int64_t l = 0, h = 0, span;
    int d;
    *lo = *hi = 0;
    for (d = 0; d < rank; ++d)
        if (dims[d] == 0) return 1; /* empty tensor */
    for (d = 0; d < rank; ++d) {
        if (dims[d] == 1) continue;
        if (st[d] < -NBWD__MAX_ELEMS || st[d] > NBWD__MAX_ELEMS) return 0;
        if (!nbwd__mul_ok(st[d] < 0 ? -st[d] : st[d], dims[d] - 1, &span)) return 0;
        if (st[d] < 0) l -= span; else h += span;
        if (l < -NBWD__MAX_ELEMS || h > NBWD__MAX_ELEMS) return 0;
    }
    *lo = l * (int64_t)esz;
    *hi = (h + 1) * (int64_t)esz;
    return 1;
}

/* No two elements of an output share an address: the outer dims, sorted by
   |stride|, each step over everything inside them (dense inner block). */
static int nbwd__no_self_overlap(int n, const int64_t *dims, const int64_t *st, int64_t block) {
    int64_t sd[NBWD_MAX_RANK], ss[NBWD_MAX_RANK], span = block;
    int k = 0, i, j;
    if (block == 0) return 1; /* empty: no elements, and nbwd__extent did not check the strides */
    for (i = 0; i < n; ++i)
        if (dims[i] == 0) return 1; /* the same, before any stride is negated */
    for (i = 0; i < n; ++i) {
        if (dims[i] > 1) { sd[k] = dims[i]; ss[k] = st[i] < 0 ? -st[i] : st[i]; ++k; }
    }
    for (i = 1; i < k; ++i) /* insertion sort by stride */
        for (j = i; j > 0 && ss[j] < ss[j - 1]; --j) {
            int64_t t = ss[j]; ss[j] = ss[j - 1]; ss[j - 1] = t;
            t = sd[j]; sd[j] = sd[j - 1]; sd[j - 1] = t;
        }
    for (i = 0; i < k; ++i) {
        if (ss[i] < span) return 0;
        span += ss[i] * (sd[i] - 1); /* bounded: the extent check passed */
    }
    return 1;
}

/* An address interval; empty when p is NULL or the tensor has no elements. */
typedef struct nbwd__span { uintptr_t lo, hi; } nbwd__span;
static nbwd__span nbwd__span_at(const void *p, int64_t lo, int64_t hi) {
    nbwd__span s;
    s.lo = s.hi = 0;
    if (p && hi > lo) {
        s.lo = (uintptr_t)p + (uintptr_t)lo; /* two's complement wrap for lo < 0 */
        s.hi = (uintptr_t)p + (uintptr_t)hi;
    }
    return s;
}
static int nbwd__overlap(nbwd__span a, nbwd__span b) {
    return a.lo < a.hi && b.lo < b.hi && a.lo < b.hi && b.lo < a.hi;
}
/* The same tensor: same base and the same stride on every dim that matters. */
static int nbwd__same_view(const void *p, const int64_t *st_p, const void *q, const int64_t *st_q, int rank,
                           const int64_t *dims) {
    int d;
    if (p != q) return 0;
    for (d = 0; d < rank; ++d)
        if (dims[d] > 1 && st_p[d] != st_q[d]) return 0;
    return 1;
}

/* Output spans vs the others. out[i] may equal an input j where exact[i][j]
   says the views are identical; any other overlap is an alias error. */
#define NBWD__MAX_SPANS 10
static nbwd_status nbwd__check_alias(int count, const nbwd__span *spans, const int *is_output,
                                     const unsigned char exact[][NBWD__MAX_SPANS]) {
    int i, j;
    for (i = 0; i < count; ++i) {
        if (!is_output[i]) continue;
        for (j = 0; j < count; ++j)
            if (j != i && nbwd__overlap(spans[i], spans[j]) && !(exact && exact[i][j])) return NBWD_ERR_BAD_ALIAS;
    }
    return NBWD_OK;
}

/* Fixed row blocking of a column reduction (diff_gamma/diff_beta, BatchNorm
   NXC): a function of the shape alone, so sums never depend on threads. */
static void nbwd__row_blocking(int64_t rows, int64_t cols, int64_t *rows_per_block, int64_t *nblocks) {
    int64_t c = cols > 0 ? cols : 1, cap = NBWD__PARTIALS_BYTES / (8 * c), r;
    int64_t few = (rows + NBWD__FEW_ROWS_BLOCKS - 1) / NBWD__FEW_ROWS_BLOCKS;
    int64_t least = (NBWD__MIN_WORK_PER_THREAD + c - 1) / c;
    if (cap > NBWD__MAX_BLOCKS) cap = NBWD__MAX_BLOCKS;
    if (cap < 1) cap = 1;
    /* NBWD__BLOCK_ROWS rows keep each block's partial (2 cols floats) near 1 %
       of its traffic; fewer rows still make up to 16 blocks for threads, but
       none smaller than one thread's minimum work */
    r = few < least ? least : few;
    if (r > NBWD__BLOCK_ROWS) r = NBWD__BLOCK_ROWS;
    if (r < (rows + cap - 1) / cap) r = (rows + cap - 1) / cap;
    if (r < 1) r = 1;
    *rows_per_block = r;
    *nblocks = (rows + r - 1) / r;
}

/* Adds count rows of width floats, stride apart, pairwise into the first. */
static void nbwd__tree_sum(const nbwd__kernels *k, float *base, int64_t count, int64_t stride, int64_t width) {
    int64_t step, b;
    for (step = 1; step < count; step *= 2)
        for (b = 0; b + step < count; b += 2 * step) k->add(base + b * stride, base + (b + step) * stride, width);
}

static void nbwd__write_param(void *out, int64_t j, int pdt, float v, int accumulate) {
    if (accumulate) v = nbwd__load(out, j, pdt) + v;
    nbwd__store(out, j, pdt, v);
}
/* out[0..n) = v (or += v), converted to the parameter dtype. */
static void nbwd__write_params(void *out, int pdt, const float *v, int64_t n, int accumulate) {
    int64_t j;
    if (pdt == NBWD_F32) {
        float *o = (float *)out;
        if (!accumulate) memcpy(o, v, (size_t)n * 4);
        else for (j = 0; j < n; ++j) o[j] += v[j];
    } else {
        for (j = 0; j < n; ++j) nbwd__write_param(out, j, pdt, v[j], accumulate);
    }
}

/* Per-set statistics -> xhat transform (xm, xs) and the rstd that scales dx. */
static void nbwd__stats(int form, int sdt, float eps, const void *mean, int64_t mi, const void *spread, int64_t si,
                        float *xm, float *xs, float *rstd) {
    double s = nbwd__load(spread, si, sdt);
    if (form == NBWD_STATS_XHAT_STD) {
        *xm = 0.0f; *xs = 1.0f; /* the input already is xhat: (xhat - 0) * 1 is exact */
        *rstd = (float)(1.0 / s);
        return;
    }
    *xm = nbwd__load(mean, mi, sdt);
    *rstd = form == NBWD_STATS_MEAN_RSTD ? (float)s : (float)(1.0 / sqrt(s + (double)eps));
    *xs = *rstd;
}

/* Workspace carving, each piece 64-byte aligned. */
static size_t nbwd__ws_take(size_t *total, size_t bytes) {
    size_t at = *total;
    *total += (bytes + NBWD__WS_ALIGN - 1) / NBWD__WS_ALIGN * NBWD__WS_ALIGN;
    return at;
}

/* Outer-index iteration over up to 5 tensors with arbitrary strides; dims
   that are contiguous for every tensor are merged first. */
#define NBWD__MAX_T 5
typedef struct nbwd__outer {
    int nd, nt;
    int64_t dims[NBWD_MAX_RANK];
    int64_t st[NBWD__MAX_T][NBWD_MAX_RANK];
} nbwd__outer;
typedef struct nbwd__cursor {
    int64_t idx[NBWD_MAX_RANK];
    int64_t off[NBWD__MAX_T];
} nbwd__cursor;

static void nbwd__outer_init(nbwd__outer *o, int nd, const int64_t *dims, int nt, int64_t (*st)[NBWD_MAX_RANK]) {
    int d, t, k = 0;
    o->nt = nt;
    for (d = 0; d < nd; ++d) {
        if (dims[d] == 1) continue;
        o->dims[k] = dims[d];
        for (t = 0; t < nt; ++t) o->st[t][k] = st[t][d];
        ++k;
    }
    o->nd = k;
    for (d = o->nd - 2; d >= 0; --d) { /* merge d+1 into d where every tensor allows */
        int ok = 1;
        for (t = 0; t < nt; ++t)
            if (o->st[t][d] != o->st[t][d + 1] * o->dims[d + 1]) ok = 0;
        if (!ok) continue;
        o->dims[d] *= o->dims[d + 1];
        for (t = 0; t < nt; ++t) o->st[t][d] = o->st[t][d + 1];
        for (k = d + 1; k + 1 < o->nd; ++k) {
            o->dims[k] = o->dims[k + 1];
            for (t = 0; t < nt; ++t) o->st[t][k] = o->st[t][k + 1];
        }
        o->nd--;
    }
}
static void nbwd__cursor_seek(const nbwd__outer *o, nbwd__cursor *c, int64_t row) {
    int d, t;
    for (t = 0; t < o->nt; ++t) c->off[t] = 0;
    for (d = o->nd - 1; d >= 0; --d) {
        c->idx[d] = row % o->dims[d];
        row /= o->dims[d];
        for (t = 0; t < o->nt; ++t) c->off[t] += c->idx[d] * o->st[t][d];
    }
}
static void nbwd__cursor_next(const nbwd__outer *o, nbwd__cursor *c) {
    int d, t;
    for (d = o->nd - 1; d >= 0; --d) {
        for (t = 0; t < o->nt; ++t) c->off[t] += o->st[t][d];
        if (++c->idx[d] < o->dims[d]) return;
        for (t = 0; t < o->nt; ++t) c->off[t] -= o->st[t][d] * o->dims[d];
        c->idx[d] = 0;
    }
}

/* The data input and the spread statistic that a statistics form reads. */
static const void *nbwd__x_of(int form, const void *src, const void *xhat) {
    return form == NBWD_STATS_XHAT_STD ? xhat : src;
}
static const void *nbwd__spread_of(int form, const void *variance, const void *rstd, const void *std_) {
    return form == NBWD_STATS_MEAN_VARIANCE ? variance : form == NBWD_STATS_MEAN_RSTD ? rstd : std_;
}

/* The pieces common to both operations' pointer checks. */
static nbwd_status nbwd__check_stats_args(int form, const void *src, const void *xhat, const void *mean,
                                          const void *variance, const void *rstd, const void *std_,
                                          int64_t data_elems, int64_t stat_elems) {
    const void *x = nbwd__x_of(form, src, xhat), *spread = nbwd__spread_of(form, variance, rstd, std_);
    /* An input of another form given: the caller has mixed up the forms. */
    if ((form == NBWD_STATS_XHAT_STD && (src || mean)) || (form != NBWD_STATS_XHAT_STD && xhat) ||
        (form != NBWD_STATS_MEAN_VARIANCE && variance) || (form != NBWD_STATS_MEAN_RSTD && rstd) ||
        (form != NBWD_STATS_XHAT_STD && std_))
        return NBWD_ERR_BAD_PARAM;
    if (data_elems > 0 && !x) return NBWD_ERR_NULL_POINTER;
    if (stat_elems > 0 && (!spread || (form != NBWD_STATS_XHAT_STD && !mean))) return NBWD_ERR_NULL_POINTER;
    return NBWD_OK;
}

/* need: the queried size, which a caller's workspace must have; own_need:
   what this call uses (<= need), all that is allocated when workspace is NULL. */
static nbwd_status nbwd__get_workspace(size_t need, size_t own_need, void *workspace, size_t workspace_bytes,
                                       void **owned, char **base) {
    *owned = NULL;
    if (workspace) {
        if (workspace_bytes < need) return NBWD_ERR_INSUFFICIENT_WORKSPACE;
    } else if (own_need > 0) {
        workspace = NORM_BWD_MALLOC(own_need);
        if (!workspace) return NBWD_ERR_OUT_OF_MEMORY;
        *owned = workspace;
    }
    /* need includes NBWD__WS_ALIGN of slack for this rounding */
    *base = workspace ? (char *)workspace + ((NBWD__WS_ALIGN - (uintptr_t)workspace % NBWD__WS_ALIGN) % NBWD__WS_ALIGN)
                      : NULL;
    return NBWD_OK;
}

/* ------------------------------------------------- parameter tensors */
/* gamma, beta, diff_gamma, diff_beta (LayerNorm: shape dims[axis..rank);
   BatchNorm: [C]) with their own strides. Element j of the flat (row-major)
   parameter index sits at nbwd__param_off(). */
enum { NBWD__PG = 0, NBWD__PB = 1, NBWD__PDG = 2, NBWD__PDB = 3, NBWD__NPAR = 4 };
typedef struct nbwd__params {
    int nd;                                    /* dims */
    int64_t dims[NBWD_MAX_RANK];
    int64_t st[NBWD__NPAR][NBWD_MAX_RANK];
    int dense[NBWD__NPAR];                     /* element j at j */
} nbwd__params;

/* Strides from the desc (NULL: dense); BAD_STRIDES when a tensor's extent
   overflows or an output would write one address twice. */
static nbwd_status nbwd__params_init(nbwd__params *q, int nd, const int64_t *dims, const int64_t *const given[],
                                     int pdt) {
    int64_t lo, hi, n = 1;
    int t, d;
    q->nd = nd;
    for (d = 0; d < nd; ++d) { q->dims[d] = dims[d]; n *= dims[d]; }
    for (t = 0; t < NBWD__NPAR; ++t) {
        nbwd__strides(nd, dims, given[t], q->st[t]);
        q->dense[t] = nbwd__dense_block(dims, q->st[t], 0, nd);
        if (!nbwd__extent(nd, dims, q->st[t], nbwd__esize(pdt), &lo, &hi)) return NBWD_ERR_BAD_STRIDES;
        if (t >= NBWD__PDG && !nbwd__no_self_overlap(nd, dims, q->st[t], n > 0 ? 1 : 0)) return NBWD_ERR_BAD_STRIDES;
    }
    return NBWD_OK;
}
static int64_t nbwd__param_off(const nbwd__params *q, int t, int64_t j) {
    int64_t off = 0;
    int d;
    if (q->dense[t]) return j;
    for (d = q->nd - 1; d >= 0; --d) {
        off += (j % q->dims[d]) * q->st[t][d];
        j /= q->dims[d];
    }
    return off;
}
static nbwd__span nbwd__param_span(const nbwd__params *q, int t, const void *ptr, int pdt) {
    int64_t lo, hi;
    nbwd__extent(q->nd, q->dims, q->st[t], nbwd__esize(pdt), &lo, &hi);
    return nbwd__span_at(ptr, lo, hi);
}
/* diff_gamma or diff_beta (t) = v (or += v), n elements. */
static void nbwd__write_params_at(const nbwd__params *q, int t, void *out, int pdt, const float *v, int64_t n,
                                  int accumulate) {
    int64_t j;
    if (q->dense[t]) {
        nbwd__write_params(out, pdt, v, n, accumulate);
        return;
    }
    for (j = 0; j < n; ++j) nbwd__write_param(out, nbwd__param_off(q, t, j), pdt, v[j], accumulate);
}

/* ------------------------------------------------------------ LayerNorm */
enum { NBWD__TX = 0, NBWD__TDY = 1, NBWD__TDX = 2, NBWD__TMEAN = 3, NBWD__TVAR = 4 };

typedef struct nbwd__ln_plan {
    int rank, axis, dt, sdt, pdt, form, affine, accumulate;
    float eps;
    int64_t rows, n;
    int64_t st[NBWD__MAX_T][NBWD_MAX_RANK]; /* x, dy, dx, mean, spread */
    nbwd__params par;                       /* gamma, beta, diff_gamma, diff_beta */
    int64_t rows_per_block, nblocks;
    size_t ws_gamma, ws_partials, ws_bytes;
} nbwd__ln_plan;

typedef struct nbwd__ln_run {
    const nbwd__ln_plan *p;
    const nbwd__kernels *k;
    nbwd__outer outer;
    const char *x, *dy, *mean, *spread;
    char *dx;
    const float *gamma; /* f32, NULL without affine */
    float *partials;    /* [nblocks][2][n]: dy*xhat sums, then dy sums */
    int want_dx, want_dg, want_db, stream;
} nbwd__ln_run;

NBWD_API void nbwd_layer_norm_bwd_desc_init(nbwd_layer_norm_bwd_desc *desc, int rank, const int64_t *dims) {
    int d;
    if (!desc) return;
    memset(desc, 0, sizeof *desc);
    desc->rank = rank;
    for (d = 0; d < rank && d < NBWD_MAX_RANK && dims; ++d) desc->dims[d] = dims[d];
    desc->begin_norm_axis = -1;
    desc->use_affine = 1;
    desc->epsilon = 1e-5f;
}

static nbwd_status nbwd__ln_plan_desc(const nbwd_layer_norm_bwd_desc *d, nbwd__ln_plan *p) {
    nbwd_status s;
    int64_t axis, lo, hi;
    int t;
    size_t esz;
    if (!d) return NBWD_ERR_NULL_POINTER;
    memset(p, 0, sizeof *p);
    if (d->rank < 1 || d->rank > NBWD_MAX_RANK) return NBWD_ERR_BAD_PARAM;
    p->rank = d->rank;
    if ((s = nbwd__count(d->dims, 0, d->rank, &p->rows)) != NBWD_OK) return s;
    axis = d->begin_norm_axis;
    if (axis < -(int64_t)d->rank || axis >= d->rank) return NBWD_ERR_BAD_PARAM;
    p->axis = (int)(axis < 0 ? axis + d->rank : axis);
    if ((s = nbwd__check_common((int)d->stats_form, d->flags, d->num_threads, (int)d->isa, d->epsilon)) != NBWD_OK)
        return s;
    if ((s = nbwd__check_dtypes((int)d->data_dtype, (int)d->stats_dtype, (int)d->param_dtype)) != NBWD_OK) return s;
    p->dt = (int)d->data_dtype; p->sdt = (int)d->stats_dtype; p->pdt = (int)d->param_dtype;
    p->form = (int)d->stats_form;
    p->affine = d->use_affine != 0;
    p->accumulate = (d->flags & NBWD_ACCUMULATE_PARAM_GRADS) != 0;
    p->eps = d->epsilon;
    nbwd__count(d->dims, 0, p->axis, &p->rows);
    nbwd__count(d->dims, p->axis, p->rank, &p->n);

    nbwd__strides(p->rank, d->dims, d->src_strides, p->st[NBWD__TX]);
    nbwd__strides(p->rank, d->dims, d->diff_dst_strides, p->st[NBWD__TDY]);
    nbwd__strides(p->rank, d->dims, d->diff_src_strides, p->st[NBWD__TDX]);
    nbwd__strides(p->axis, d->dims, d->mean_strides, p->st[NBWD__TMEAN]);
    nbwd__strides(p->axis, d->dims, d->var_strides, p->st[NBWD__TVAR]);
    esz = nbwd__esize(p->dt);
    for (t = NBWD__TX; t <= NBWD__TDX; ++t) {
        if (!nbwd__dense_block(d->dims, p->st[t], p->axis, p->rank)) return NBWD_ERR_BAD_STRIDES;
        if (!nbwd__extent(p->rank, d->dims, p->st[t], esz, &lo, &hi)) return NBWD_ERR_BAD_STRIDES;
    }
    for (t = NBWD__TMEAN; t <= NBWD__TVAR; ++t)
        if (!nbwd__extent(p->axis, d->dims, p->st[t], nbwd__esize(p->sdt), &lo, &hi)) return NBWD_ERR_BAD_STRIDES;
    {
        const int64_t *const given[NBWD__NPAR] = {d->gamma_strides, d->beta_strides, d->diff_gamma_strides,
                                                  d->diff_beta_strides};
        if ((s = nbwd__params_init(&p->par, p->rank - p->axis, d->dims + p->axis, given, p->pdt)) != NBWD_OK)
            return s;
    }

    nbwd__row_blocking(p->rows, p->n, &p->rows_per_block, &p->nblocks);
    p->ws_bytes = 0;
    /* gamma as dense f32 for the kernels: converted or gathered here */
    if (p->affine && (p->pdt != NBWD_F32 || !p->par.dense[NBWD__PG]))
        p->ws_gamma = nbwd__ws_take(&p->ws_bytes, (size_t)p->n * 4);
    if (p->affine) p->ws_partials = nbwd__ws_take(&p->ws_bytes, (size_t)p->nblocks * 2 * (size_t)p->n * 4);
    p->ws_bytes += NBWD__WS_ALIGN; /* slack for aligning the caller's pointer */
    return NBWD_OK;
}

NBWD_API nbwd_status nbwd_layer_norm_bwd_workspace_size(const nbwd_layer_norm_bwd_desc *desc, size_t *bytes) {
    nbwd__ln_plan p;
    nbwd_status s;
    if (!bytes) return NBWD_ERR_NULL_POINTER;
    if ((s = nbwd__ln_plan_desc(desc, &p)) != NBWD_OK) return s;
    *bytes = p.ws_bytes;
    return NBWD_OK;
}

static nbwd_status nbwd__ln_check_args(const nbwd_layer_norm_bwd_desc *d, const nbwd__ln_plan *p,
                                       const nbwd_layer_norm_bwd_args *a) {
    nbwd_status s;
    int64_t total = p->rows * p->n, lo, hi, outer_dims[NBWD_MAX_RANK];
    size_t esz = nbwd__esize(p->dt), sesz = nbwd__esize(p->sdt);
    const void *x = nbwd__x_of(p->form, a->src, a->xhat);
    const void *spread = nbwd__spread_of(p->form, a->variance, a->rstd, a->std);
    nbwd__span sp[NBWD__MAX_SPANS];
    int out[NBWD__MAX_SPANS] = {0}, i;
    unsigned char exact[NBWD__MAX_SPANS][NBWD__MAX_SPANS];
    if ((a->diff_gamma || a->diff_beta) && !p->affine) return NBWD_ERR_BAD_PARAM;
    if ((s = nbwd__check_stats_args(p->form, a->src, a->xhat, a->mean, a->variance, a->rstd, a->std, total,
                                    p->rows)) != NBWD_OK)
        return s;
    if (total > 0 && !a->diff_dst) return NBWD_ERR_NULL_POINTER;
    if (p->affine && a->diff_src && p->n > 0 && !a->gamma) return NBWD_ERR_NULL_POINTER;
    for (i = 0; i < p->axis; ++i) outer_dims[i] = d->dims[i];
    if (a->diff_src && !nbwd__no_self_overlap(p->axis, outer_dims, p->st[NBWD__TDX], p->n))
        return NBWD_ERR_BAD_STRIDES;

    /* spans: 0 x, 1 dy, 2 dx, 3 mean, 4 spread, 5 gamma, 6 beta, 7 dgamma, 8 dbeta */
    nbwd__extent(p->rank, d->dims, p->st[NBWD__TX], esz, &lo, &hi);
    sp[0] = nbwd__span_at(x, lo, hi);
    nbwd__extent(p->rank, d->dims, p->st[NBWD__TDY], esz, &lo, &hi);
    sp[1] = nbwd__span_at(a->diff_dst, lo, hi);
    nbwd__extent(p->rank, d->dims, p->st[NBWD__TDX], esz, &lo, &hi);
    sp[2] = nbwd__span_at(a->diff_src, lo, hi);
    nbwd__extent(p->axis, d->dims, p->st[NBWD__TMEAN], sesz, &lo, &hi);
    sp[3] = nbwd__span_at(p->form == NBWD_STATS_XHAT_STD ? NULL : a->mean, lo, hi);
    nbwd__extent(p->axis, d->dims, p->st[NBWD__TVAR], sesz, &lo, &hi);
    sp[4] = nbwd__span_at(spread, lo, hi);
    sp[5] = nbwd__param_span(&p->par, NBWD__PG, p->affine ? a->gamma : NULL, p->pdt);
    sp[6] = nbwd__param_span(&p->par, NBWD__PB, p->affine ? a->beta : NULL, p->pdt);
    sp[7] = nbwd__param_span(&p->par, NBWD__PDG, a->diff_gamma, p->pdt);
    sp[8] = nbwd__param_span(&p->par, NBWD__PDB, a->diff_beta, p->pdt);
    out[2] = out[7] = out[8] = 1;
    memset(exact, 0, sizeof exact);
    exact[2][0] = (unsigned char)nbwd__same_view(a->diff_src, p->st[NBWD__TDX], x, p->st[NBWD__TX], p->rank, d->dims);
    exact[2][1] = (unsigned char)nbwd__same_view(a->diff_src, p->st[NBWD__TDX], a->diff_dst, p->st[NBWD__TDY],
                                                 p->rank, d->dims);
    return nbwd__check_alias(9, sp, out, (const unsigned char(*)[NBWD__MAX_SPANS])exact);
}

/* One block of rows: dx for each row, and this block's partial column sums.
   Rows go to the kernel in batches with their offsets and statistics. */
static void nbwd__ln_block(const nbwd__ln_run *r, int64_t b) {
    const nbwd__ln_plan *p = r->p;
    int64_t row = b * p->rows_per_block, end = row + p->rows_per_block, n = p->n, i;
    nbwd__rows batch;
    nbwd__cursor c;
    if (end > p->rows) end = p->rows;
    batch.x = r->x;
    batch.dy = r->dy;
    batch.dx = r->want_dx ? r->dx : NULL;
    batch.n = n;
    batch.dt = p->dt;
    batch.gamma = r->gamma;
    batch.stream = r->stream;
    batch.col_dg = r->want_dg ? r->partials + b * 2 * n : NULL;
    batch.col_db = r->want_db ? r->partials + b * 2 * n + n : NULL;
    /* both halves: the final reduction adds the whole block, wanted or not */
    if (r->partials) memset(r->partials + b * 2 * n, 0, (size_t)n * 8);
    nbwd__cursor_seek(&r->outer, &c, row);
    while (row < end) {
        batch.count = end - row < NBWD__ROW_BATCH ? end - row : NBWD__ROW_BATCH;
        if (r->outer.nd == 1 && p->sdt == NBWD_F32 && p->form != NBWD_STATS_XHAT_STD) {
            /* the common case: one (merged) outer dim, f32 statistics */
            const int64_t(*st)[NBWD_MAX_RANK] = (const int64_t(*)[NBWD_MAX_RANK])r->outer.st;
            const float *mean = (const float *)r->mean, *spread = (const float *)r->spread;
            int rstd_form = p->form == NBWD_STATS_MEAN_RSTD;
            double eps = p->eps;
            for (i = 0; i < batch.count; ++i) {
                int64_t q = row + i;
                batch.x_off[i] = q * st[NBWD__TX][0];
                batch.dy_off[i] = q * st[NBWD__TDY][0];
                batch.dx_off[i] = q * st[NBWD__TDX][0];
                batch.xm[i] = mean[q * st[NBWD__TMEAN][0]];
                batch.rstd[i] = spread[q * st[NBWD__TVAR][0]];
            }
            if (!rstd_form) r->k->rstd(batch.rstd, batch.rstd, batch.count, eps);
            memcpy(batch.xs, batch.rstd, (size_t)batch.count * sizeof(float));
        } else {
            for (i = 0; i < batch.count; ++i, nbwd__cursor_next(&r->outer, &c)) {
                batch.x_off[i] = c.off[NBWD__TX];
                batch.dy_off[i] = c.off[NBWD__TDY];
                batch.dx_off[i] = c.off[NBWD__TDX];
                nbwd__stats(p->form, p->sdt, p->eps, r->mean, c.off[NBWD__TMEAN], r->spread, c.off[NBWD__TVAR],
                            &batch.xm[i], &batch.xs[i], &batch.rstd[i]);
            }
        }
        r->k->ln_rows(&batch);
        row += batch.count;
    }
}

#define NBWD__REDUCE_CHUNK 256 /* columns per task of the final reduction */

NBWD_API nbwd_status nbwd_layer_norm_bwd(const nbwd_layer_norm_bwd_desc *desc, const nbwd_layer_norm_bwd_args *args,
                                         void *workspace, size_t workspace_bytes) {
    nbwd__ln_plan p;
    nbwd__ln_run r;
    nbwd_status s;
    void *owned;
    char *ws;
    int64_t n, j, b, width, nchunks;
    size_t own;
    int threads;
    if ((s = nbwd__ln_plan_desc(desc, &p)) != NBWD_OK) return s;
    if (!args) return NBWD_ERR_NULL_POINTER;
    if ((s = nbwd__ln_check_args(desc, &p, args)) != NBWD_OK) return s;
    memset(&r, 0, sizeof r);
    if (!(r.k = nbwd__select(desc->isa))) return NBWD_ERR_UNSUPPORTED;
    /* a dx-only call needs no partials; only bf16/f16 gamma is converted */
    own = p.ws_bytes;
    if (!args->diff_gamma && !args->diff_beta)
        own = p.affine && p.ws_partials > 0 && args->diff_src ? p.ws_partials + NBWD__WS_ALIGN : 0;
    if ((s = nbwd__get_workspace(p.ws_bytes, own, workspace, workspace_bytes, &owned, &ws)) != NBWD_OK) return s;
    /* Everything is validated: from here on outputs are written. */
    n = p.n;
    r.p = &p;
    r.want_dx = args->diff_src != NULL;
    r.want_dg = args->diff_gamma != NULL;
    r.want_db = args->diff_beta != NULL;
    if (p.rows == 0 && !p.accumulate && (r.want_dg || r.want_db)) { /* no rows: the sums are empty */
        for (j = 0; j < n; ++j) {
            if (r.want_dg) nbwd__store(args->diff_gamma, nbwd__param_off(&p.par, NBWD__PDG, j), p.pdt, 0.0f);
            if (r.want_db) nbwd__store(args->diff_beta, nbwd__param_off(&p.par, NBWD__PDB, j), p.pdt, 0.0f);
        }
    }
    if (p.rows > 0 && n > 0 && (r.want_dx || r.want_dg || r.want_db)) {
        r.x = (const char *)nbwd__x_of(p.form, args->src, args->xhat);
        r.dy = (const char *)args->diff_dst;
        r.dx = (char *)args->diff_src;
        r.mean = (const char *)args->mean;
        r.spread = (const char *)nbwd__spread_of(p.form, args->variance, args->rstd, args->std);
        if (p.affine && r.want_dx) {
            if (p.pdt == NBWD_F32 && p.par.dense[NBWD__PG]) {
                r.gamma = (const float *)args->gamma;
            } else {
                float *g = (float *)(ws + p.ws_gamma);
                for (j = 0; j < n; ++j) g[j] = nbwd__load(args->gamma, nbwd__param_off(&p.par, NBWD__PG, j), p.pdt);
                r.gamma = g;
            }
        }
        if (r.want_dg || r.want_db) r.partials = (float *)(ws + p.ws_partials);
        nbwd__outer_init(&r.outer, p.axis, desc->dims, NBWD__MAX_T, p.st);
        r.stream = r.want_dx && (double)p.rows * (double)n * (double)nbwd__esize(p.dt) >= (double)NORM_BWD_STREAM_BYTES;
        threads = nbwd__pick_threads(desc->num_threads, p.rows * n, p.nblocks);
        NBWD__PARALLEL_FOR(threads, b, p.nblocks, nbwd__ln_block(&r, b));
        if (r.want_dg || r.want_db) {
            width = 2 * n;
            nchunks = (width + NBWD__REDUCE_CHUNK - 1) / NBWD__REDUCE_CHUNK;
            threads = nbwd__pick_threads(desc->num_threads, p.nblocks * width, nchunks);
            NBWD__PARALLEL_FOR(threads, b, nchunks,
                               nbwd__tree_sum(r.k, r.partials + b * NBWD__REDUCE_CHUNK, p.nblocks, width,
                                              (b + 1) * NBWD__REDUCE_CHUNK <= width ? NBWD__REDUCE_CHUNK
                                                                                    : width - b * NBWD__REDUCE_CHUNK));
            if (r.want_dg) nbwd__write_params_at(&p.par, NBWD__PDG, args->diff_gamma, p.pdt, r.partials, n, p.accumulate);
            if (r.want_db)
                nbwd__write_params_at(&p.par, NBWD__PDB, args->diff_beta, p.pdt, r.partials + n, n, p.accumulate);
        }
    }
    if (owned) NORM_BWD_FREE(owned);
    return NBWD_OK;
}

/* ------------------------------------------------------------ BatchNorm */
typedef struct nbwd__bn_plan {
    int rank, dt, sdt, pdt, form, accumulate, nxc; /* nxc: channels are the dense inner dim */
    float eps;
    int64_t N, C, S, M;                     /* batch, channels, spatial size, N * S */
    int64_t st[3][NBWD_MAX_RANK];           /* x, dy, dx */
    int64_t mean_st, var_st;                /* the [C] statistics' strides */
    nbwd__params par;                       /* gamma, (unused), diff_gamma, diff_beta: [C] */
    int64_t rows, rows_per_block, nblocks;  /* NXC: rows = N * S */
    int64_t n_per_chunk, nchunks;           /* NCX: batch entries per partial */
    int64_t cblock;                         /* NCX: channels visited together */
    size_t ws_coef, ws_partials, ws_bytes;
} nbwd__bn_plan;

typedef struct nbwd__bn_run {
    const nbwd__bn_plan *p;
    const nbwd__kernels *k;
    nbwd__outer outer; /* NXC rows */
    const char *x, *dy;
    char *dx;
    float *xm, *xs, *mean_g, *mean_gx, *scale; /* [C] each; scale holds rstd until finished */
    float *partials;
    const void *gamma;                         /* NULL: 1 */
    void *dgamma, *dbeta;
    int want_dx, stream;
} nbwd__bn_run;

NBWD_API void nbwd_batch_norm_bwd_desc_init(nbwd_batch_norm_bwd_desc *desc, int rank, const int64_t *dims,
                                            nbwd_layout layout, float epsilon) {
    int d;
    if (!desc) return;
    memset(desc, 0, sizeof *desc);
    desc->rank = rank;
    for (d = 0; d < rank && d < NBWD_MAX_RANK && dims; ++d) desc->dims[d] = dims[d];
    desc->layout = layout;
    desc->epsilon = epsilon;
}

static nbwd_status nbwd__bn_plan_desc(const nbwd_batch_norm_bwd_desc *d, nbwd__bn_plan *p) {
    nbwd_status s;
    int64_t lo, hi, total;
    int t, r;
    if (!d) return NBWD_ERR_NULL_POINTER;
    memset(p, 0, sizeof *p);
    if (d->rank < 2 || d->rank > NBWD_MAX_RANK) return NBWD_ERR_BAD_PARAM;
    if (d->layout != NBWD_NXC && d->layout != NBWD_NCX) return NBWD_ERR_BAD_PARAM;
    r = p->rank = d->rank;
    if ((s = nbwd__count(d->dims, 0, r, &total)) != NBWD_OK) return s;
    if ((s = nbwd__check_common((int)d->stats_form, d->flags, d->num_threads, (int)d->isa, d->epsilon)) != NBWD_OK)
        return s;
    if ((s = nbwd__check_dtypes((int)d->data_dtype, (int)d->stats_dtype, (int)d->param_dtype)) != NBWD_OK) return s;
    p->dt = (int)d->data_dtype; p->sdt = (int)d->stats_dtype; p->pdt = (int)d->param_dtype;
    p->form = (int)d->stats_form;
    p->accumulate = (d->flags & NBWD_ACCUMULATE_PARAM_GRADS) != 0;
    p->eps = d->epsilon;
    p->nxc = d->layout == NBWD_NXC;
    p->N = d->dims[0];
    p->C = d->layout == NBWD_NXC ? d->dims[r - 1] : d->dims[1];
    nbwd__count(d->dims, p->nxc ? 1 : 2, p->nxc ? r - 1 : r, &p->S);
    p->M = p->N * p->S;
    for (t = 0; t < 3; ++t) {
        const int64_t *given = t == 0 ? d->src_strides : t == 1 ? d->diff_dst_strides : d->diff_src_strides;
        nbwd__strides(r, d->dims, given, p->st[t]);
    }
    /* [N, C] reads the same in both layouts: with C dense everywhere, take the
       row (NXC) algorithm, which vectorizes across channels. */
    if (r == 2 && (d->dims[1] <= 1 || (p->st[0][1] == 1 && p->st[1][1] == 1 && p->st[2][1] == 1))) p->nxc = 1;
    for (t = 0; t < 3; ++t) {
        if (!nbwd__dense_block(d->dims, p->st[t], p->nxc ? r - 1 : 2, r)) return NBWD_ERR_BAD_STRIDES;
        if (!nbwd__extent(r, d->dims, p->st[t], nbwd__esize(p->dt), &lo, &hi)) return NBWD_ERR_BAD_STRIDES;
    }
    {
        const int64_t *const given[NBWD__NPAR] = {d->gamma_strides, NULL, d->diff_gamma_strides,
                                                  d->diff_beta_strides};
        if ((s = nbwd__params_init(&p->par, 1, &p->C, given, p->pdt)) != NBWD_OK) return s;
        p->mean_st = d->mean_strides ? d->mean_strides[0] : 1;
        p->var_st = d->var_strides ? d->var_strides[0] : 1;
        if (!nbwd__extent(1, &p->C, &p->mean_st, nbwd__esize(p->sdt), &lo, &hi) ||
            !nbwd__extent(1, &p->C, &p->var_st, nbwd__esize(p->sdt), &lo, &hi))
            return NBWD_ERR_BAD_STRIDES;
    }
    p->ws_bytes = 0;
    p->ws_coef = nbwd__ws_take(&p->ws_bytes, (size_t)p->C * 5 * 4);
    if (p->nxc) {
        p->rows = p->M;
        nbwd__row_blocking(p->rows, p->C, &p->rows_per_block, &p->nblocks);
        p->ws_partials = nbwd__ws_take(&p->ws_bytes, (size_t)p->nblocks * 2 * (size_t)p->C * 4);
    } else {
        int64_t per = p->S > 0 ? (NBWD__BN_CHUNK_ELEMS + p->S - 1) / p->S : 1;
        p->n_per_chunk = per < 1 ? 1 : per;
        p->nchunks = p->M > 0 ? (p->N + p->n_per_chunk - 1) / p->n_per_chunk : 0; /* empty: no partials */
        p->ws_partials = nbwd__ws_take(&p->ws_bytes, (size_t)p->C * (size_t)p->nchunks * 2 * 4);
        /* Small planes: as many channels as keep x and dy of the block in L2
           (Zen 4's; where L2 is smaller the dx pass reads L3). */
        p->cblock = p->M > 0 ? NBWD__NCX_BLOCK_BYTES / (p->M * 2 * (int64_t)nbwd__esize(p->dt)) : 1;
        if (p->cblock < 1) p->cblock = 1;
        if (p->cblock > p->C) p->cblock = p->C > 0 ? p->C : 1;
    }
    p->ws_bytes += NBWD__WS_ALIGN; /* slack for aligning the caller's pointer */
    return NBWD_OK;
}

NBWD_API nbwd_status nbwd_batch_norm_bwd_workspace_size(const nbwd_batch_norm_bwd_desc *desc, size_t *bytes) {
    nbwd__bn_plan p;
    nbwd_status s;
    if (!bytes) return NBWD_ERR_NULL_POINTER;
    if ((s = nbwd__bn_plan_desc(desc, &p)) != NBWD_OK) return s;
    *bytes = p.ws_bytes;
    return NBWD_OK;
}

static nbwd_status nbwd__bn_check_args(const nbwd_batch_norm_bwd_desc *d, const nbwd__bn_plan *p,
                                       const nbwd_batch_norm_bwd_args *a) {
    nbwd_status s;
    int64_t total = p->M * p->C, lo, hi, od[NBWD_MAX_RANK], os[NBWD_MAX_RANK];
    size_t esz = nbwd__esize(p->dt);
    const void *x = nbwd__x_of(p->form, a->src, a->xhat);
    const void *spread = nbwd__spread_of(p->form, a->variance, a->rstd, a->std);
    nbwd__span sp[NBWD__MAX_SPANS];
    int out[NBWD__MAX_SPANS] = {0}, i, nod = 0;
    unsigned char exact[NBWD__MAX_SPANS][NBWD__MAX_SPANS];
    if ((a->diff_gamma == NULL) != (a->diff_beta == NULL)) return NBWD_ERR_BAD_PARAM;
    if ((s = nbwd__check_stats_args(p->form, a->src, a->xhat, a->mean, a->variance, a->rstd, a->std, total,
                                    p->C)) != NBWD_OK)
        return s;
    if (total > 0 && !a->diff_dst) return NBWD_ERR_NULL_POINTER;
    /* outer dims of dx: NXC all but C; NCX N and C around the dense plane */
    for (i = 0; i < (p->nxc ? p->rank - 1 : 2); ++i) { od[nod] = d->dims[i]; os[nod] = p->st[2][i]; ++nod; }
    if (a->diff_src && !nbwd__no_self_overlap(nod, od, os, p->nxc ? p->C : p->S)) return NBWD_ERR_BAD_STRIDES;

    /* spans: 0 x, 1 dy, 2 dx, 3 mean, 4 spread, 5 gamma, 6 dgamma, 7 dbeta */
    for (i = 0; i < 3; ++i) {
        const void *ptr = i == 0 ? x : i == 1 ? a->diff_dst : a->diff_src;
        nbwd__extent(p->rank, d->dims, p->st[i], esz, &lo, &hi);
        sp[i] = nbwd__span_at(ptr, lo, hi);
    }
    nbwd__extent(1, &p->C, &p->mean_st, nbwd__esize(p->sdt), &lo, &hi);
    sp[3] = nbwd__span_at(p->form == NBWD_STATS_XHAT_STD ? NULL : a->mean, lo, hi);
    nbwd__extent(1, &p->C, &p->var_st, nbwd__esize(p->sdt), &lo, &hi);
    sp[4] = nbwd__span_at(spread, lo, hi);
    sp[5] = nbwd__param_span(&p->par, NBWD__PG, a->gamma, p->pdt);
    sp[6] = nbwd__param_span(&p->par, NBWD__PDG, a->diff_gamma, p->pdt);
    sp[7] = nbwd__param_span(&p->par, NBWD__PDB, a->diff_beta, p->pdt);
    out[2] = out[6] = out[7] = 1;
    memset(exact, 0, sizeof exact);
    exact[2][0] = (unsigned char)nbwd__same_view(a->diff_src, p->st[2], x, p->st[0], p->rank, d->dims);
    exact[2][1] = (unsigned char)nbwd__same_view(a->diff_src, p->st[2], a->diff_dst, p->st[1], p->rank, d->dims);
    return nbwd__check_alias(8, sp, out, (const unsigned char(*)[NBWD__MAX_SPANS])exact);
}

/* Channel c's sums are complete (partials[0..1]): coefficients and params. */
static void nbwd__bn_finish(const nbwd__bn_run *r, int64_t c, float sum_dyx, float sum_dy) {
    const nbwd__bn_plan *p = r->p;
    float gamma = r->gamma ? nbwd__load(r->gamma, c * p->par.st[NBWD__PG][0], p->pdt) : 1.0f;
    r->mean_g[c] = (float)((double)sum_dy / (double)p->M);
    r->mean_gx[c] = (float)((double)sum_dyx / (double)p->M);
    r->scale[c] = r->scale[c] * gamma;
    if (r->dgamma) {
        nbwd__write_param(r->dgamma, c * p->par.st[NBWD__PDG][0], p->pdt, sum_dyx, p->accumulate);
        nbwd__write_param(r->dbeta, c * p->par.st[NBWD__PDB][0], p->pdt, sum_dy, p->accumulate);
    }
}

/* NCX: channels [c0, c1), batch entries [k * n_per_chunk, ...): one partial
   each. The planes go in memory order (batch entry outer, channel inner), so
   the prefetchers see runs of c1 - c0 planes rather than one plane per jump;
   each channel still adds its plane sums in batch order, whatever c0, c1. */
static void nbwd__bn_ncx_chunk(const nbwd__bn_run *r, int64_t c0, int64_t c1, int64_t k) {
    const nbwd__bn_plan *p = r->p;
    int64_t n = k * p->n_per_chunk, end = n + p->n_per_chunk, esz = (int64_t)nbwd__esize(p->dt), c;
    const int64_t step[2] = {p->st[0][1], p->st[1][1]};
    float *part;
    if (end > p->N) end = p->N;
    for (c = c0; c < c1; ++c) {
        part = r->partials + (c * p->nchunks + k) * 2;
        part[0] = part[1] = 0.0f;
    }
    for (; n < end; ++n)
        r->k->row_reduce(r->x + (n * p->st[0][0] + c0 * p->st[0][1]) * esz,
                         r->dy + (n * p->st[1][0] + c0 * p->st[1][1]) * esz, p->dt, p->S, c1 - c0, step,
                         r->xm + c0, r->xs + c0, r->partials + (c0 * p->nchunks + k) * 2, p->nchunks * 2);
}

/* NCX: dx of channels [c0, c1), batch entry n (not fenced). */
static void nbwd__bn_ncx_apply(const nbwd__bn_run *r, int64_t c0, int64_t c1, int64_t n) {
    const nbwd__bn_plan *p = r->p;
    int64_t esz = (int64_t)nbwd__esize(p->dt);
    const int64_t step[3] = {p->st[0][1], p->st[1][1], p->st[2][1]};
    r->k->row_apply(r->x + (n * p->st[0][0] + c0 * p->st[0][1]) * esz,
                    r->dy + (n * p->st[1][0] + c0 * p->st[1][1]) * esz,
                    r->dx + (n * p->st[2][0] + c0 * p->st[2][1]) * esz, p->dt, p->S, c1 - c0, step, r->xm + c0,
                    r->xs + c0, r->mean_g + c0, r->mean_gx + c0, r->scale + c0, r->stream);
}

static void nbwd__bn_ncx_reduce_finish(const nbwd__bn_run *r, int64_t c) {
    float *part = r->partials + c * r->p->nchunks * 2;
    nbwd__tree_sum(r->k, part, r->p->nchunks, 2, 2);
    nbwd__bn_finish(r, c, part[1], part[0]); /* sum dy * xhat, sum dy */
}

/* NCX, a block of channels on one thread: its data is still in cache for dx.
   dx goes from the last batch entry to the first: where the block is larger
   than L2, the entries reduced last are the ones still in it. */
static void nbwd__bn_ncx_channels(const nbwd__bn_run *r, int64_t c0, int64_t cblock) {
    int64_t k, n, c, c1 = c0 + cblock < r->p->C ? c0 + cblock : r->p->C;
    for (k = 0; k < r->p->nchunks; ++k) nbwd__bn_ncx_chunk(r, c0, c1, k);
    for (c = c0; c < c1; ++c) nbwd__bn_ncx_reduce_finish(r, c);
    if (r->want_dx) {
        for (n = r->p->N; n-- > 0;) nbwd__bn_ncx_apply(r, c0, c1, n);
        if (r->stream) r->k->store_fence();
    }
}

/* NCX: dx of planes [first, last), plane i = (channel i / N, entry i % N). */
static void nbwd__bn_ncx_apply_planes(const nbwd__bn_run *r, int64_t first, int64_t last) {
    int64_t i, N = r->p->N;
    for (i = first; i < last; ++i) nbwd__bn_ncx_apply(r, i / N, i / N + 1, i % N);
    if (r->stream) r->k->store_fence();
}

/* NXC: rows of all C channels; pass 1 fills block partials, pass 2 writes dx.
   Rows go to the kernel in batches, as for LayerNorm. */
static void nbwd__bn_nxc_block(const nbwd__bn_run *r, int64_t b, int apply) {
    const nbwd__bn_plan *p = r->p;
    int64_t row = b * p->rows_per_block, end = row + p->rows_per_block, C = p->C, i;
    nbwd__rows batch;
    nbwd__cursor cur;
    if (end > p->rows) end = p->rows;
    memset(&batch, 0, sizeof batch);
    batch.x = r->x;
    batch.dy = r->dy;
    batch.dx = apply ? r->dx : NULL;
    batch.n = C;
    batch.dt = p->dt;
    batch.stream = r->stream;
    batch.cxm = r->xm; batch.cxs = r->xs;
    batch.cmg = r->mean_g; batch.cmgx = r->mean_gx; batch.cscale = r->scale;
    if (!apply) {
        batch.col_dg = r->partials + b * 2 * C;
        batch.col_db = batch.col_dg + C;
        memset(batch.col_dg, 0, (size_t)C * 2 * 4);
    }
    nbwd__cursor_seek(&r->outer, &cur, row);
    while (row < end) {
        batch.count = end - row < NBWD__ROW_BATCH ? end - row : NBWD__ROW_BATCH;
        if (r->outer.nd == 1) { /* one (merged) outer dim */
            for (i = 0; i < batch.count; ++i) {
                batch.x_off[i] = (row + i) * r->outer.st[0][0];
                batch.dy_off[i] = (row + i) * r->outer.st[1][0];
                batch.dx_off[i] = (row + i) * r->outer.st[2][0];
            }
        } else {
            for (i = 0; i < batch.count; ++i, nbwd__cursor_next(&r->outer, &cur)) {
                batch.x_off[i] = cur.off[0];
                batch.dy_off[i] = cur.off[1];
                batch.dx_off[i] = cur.off[2];
            }
        }
        r->k->bn_rows(&batch);
        row += batch.count;
    }
}

NBWD_API nbwd_status nbwd_batch_norm_bwd(const nbwd_batch_norm_bwd_desc *desc, const nbwd_batch_norm_bwd_args *args,
                                         void *workspace, size_t workspace_bytes) {
    nbwd__bn_plan p;
    nbwd__bn_run r;
    nbwd_status s;
    void *owned;
    char *ws;
    int64_t c, i, C;
    int threads;
    if ((s = nbwd__bn_plan_desc(desc, &p)) != NBWD_OK) return s;
    if (!args) return NBWD_ERR_NULL_POINTER;
    if ((s = nbwd__bn_check_args(desc, &p, args)) != NBWD_OK) return s;
    memset(&r, 0, sizeof r);
    if (!(r.k = nbwd__select(desc->isa))) return NBWD_ERR_UNSUPPORTED;
    if ((s = nbwd__get_workspace(p.ws_bytes, p.ws_bytes, workspace, workspace_bytes, &owned, &ws)) != NBWD_OK) return s;
    /* Everything is validated: from here on outputs are written. */
    C = p.C;
    r.p = &p;
    r.want_dx = args->diff_src != NULL;
    r.dgamma = args->diff_gamma;
    r.dbeta = args->diff_beta;
    r.gamma = r.dgamma ? args->gamma : NULL; /* without diff_gamma/diff_beta gamma is ignored */
    if (p.M == 0 && r.dgamma && !p.accumulate) { /* empty batch: empty sums */
        for (c = 0; c < C; ++c) {
            nbwd__store(r.dgamma, c * p.par.st[NBWD__PDG][0], p.pdt, 0.0f);
            nbwd__store(r.dbeta, c * p.par.st[NBWD__PDB][0], p.pdt, 0.0f);
        }
    }
    if (p.M > 0 && C > 0 && (r.want_dx || r.dgamma)) {
        const void *spread = nbwd__spread_of(p.form, args->variance, args->rstd, args->std);
        r.x = (const char *)nbwd__x_of(p.form, args->src, args->xhat);
        r.dy = (const char *)args->diff_dst;
        r.dx = (char *)args->diff_src;
        r.xm = (float *)(ws + p.ws_coef);
        r.xs = r.xm + C;
        r.mean_g = r.xs + C;
        r.mean_gx = r.mean_g + C;
        r.scale = r.mean_gx + C;
        r.partials = (float *)(ws + p.ws_partials);
        r.stream = r.want_dx && (double)p.M * (double)C * (double)nbwd__esize(p.dt) >= (double)NORM_BWD_STREAM_BYTES &&
                   (p.nxc || p.S * (int64_t)nbwd__esize(p.dt) >= NBWD__NCX_STREAM_PLANE_BYTES);
        for (c = 0; c < C; ++c)
            nbwd__stats(p.form, p.sdt, p.eps, args->mean, c * p.mean_st, spread, c * p.var_st, &r.xm[c], &r.xs[c],
                        &r.scale[c]);
        if (p.nxc) {
            int64_t width = 2 * C, nchunks = (width + NBWD__REDUCE_CHUNK - 1) / NBWD__REDUCE_CHUNK, b;
            nbwd__outer_init(&r.outer, p.rank - 1, desc->dims, 3, p.st);
            threads = nbwd__pick_threads(desc->num_threads, p.M * C, p.nblocks);
            NBWD__PARALLEL_FOR(threads, b, p.nblocks, nbwd__bn_nxc_block(&r, b, 0));
            threads = nbwd__pick_threads(desc->num_threads, p.nblocks * width, nchunks);
            NBWD__PARALLEL_FOR(threads, b, nchunks,
                               nbwd__tree_sum(r.k, r.partials + b * NBWD__REDUCE_CHUNK, p.nblocks, width,
                                              (b + 1) * NBWD__REDUCE_CHUNK <= width ? NBWD__REDUCE_CHUNK
                                                                                    : width - b * NBWD__REDUCE_CHUNK));
            for (c = 0; c < C; ++c) nbwd__bn_finish(&r, c, r.partials[c], r.partials[C + c]);
            if (r.want_dx) {
                threads = nbwd__pick_threads(desc->num_threads, p.M * C, p.nblocks);
                NBWD__PARALLEL_FOR(threads, b, p.nblocks, nbwd__bn_nxc_block(&r, b, 1));
            }
        } else {
            threads = nbwd__pick_threads(desc->num_threads, p.M * C, C * (p.nchunks > p.N ? p.nchunks : p.N));
            if (threads <= 1 || C >= threads) {
                /* every thread gets blocks; the sums do not depend on the blocking */
                int64_t cblock = p.cblock * threads <= C ? p.cblock : C / threads;
                NBWD__PARALLEL_FOR(threads, i, (C + cblock - 1) / cblock,
                                   nbwd__bn_ncx_channels(&r, i * cblock, cblock));
            } else { /* fewer channels than threads: split the batch too (same sums) */
                NBWD__PARALLEL_FOR(threads, i, C * p.nchunks,
                                   nbwd__bn_ncx_chunk(&r, i / p.nchunks, i / p.nchunks + 1, i % p.nchunks));
                for (c = 0; c < C; ++c) nbwd__bn_ncx_reduce_finish(&r, c);
                if (r.want_dx) /* a fence per thread, not per plane */
                    NBWD__PARALLEL_FOR(threads, i, threads,
                                       nbwd__bn_ncx_apply_planes(&r, C * p.N * i / threads,
                                                                 C * p.N * (i + 1) / threads));
            }
        }
    }
    if (owned) NORM_BWD_FREE(owned);
    return NBWD_OK;
}

#if defined(NBWD__GCC_NO_CONTRACT)
#pragma GCC pop_options
#undef NBWD__GCC_NO_CONTRACT
#endif
#endif /* NORM_BWD_IMPLEMENTATION */

#else /* NBWD__KERNEL_PASS */
/* ==========================================================================
   KERNEL TEMPLATE - the one copy of the row kernels. norm_bwd.h (scalar) and
   norm_bwd_simd.h (each SIMD path) define a vector layer and re-include this
   file with NBWD__KERNEL_PASS:
     NBWD__KSUFFIX NBWD__KISA NBWD__KTARGET   name suffix, nbwd_isa, attribute
     NBWD__VF NBWD__VW                        vector type, lanes
     NBWD__VZERO VSET1 VADD VSUB VMUL VFMA(a,b,c)=a*b+c VHSUM
     NBWD__VLOAD_F32/F16/BF16(p) NBWD__VSTORE_F32/F16/BF16(p, v)  (unaligned)
   optional:
     NBWD__VSTREAM_F32/F16/BF16(p, v) NBWD__VSFENCE()   non-temporal stores
     NBWD__VSTORE2_BF16(p, v0, v1) NBWD__VSTREAM2_BF16   2 * VW elements (the
                                              stream one 2 * VW * 2-aligned)
     NBWD__RSTD_LANES NBWD__RSTD_VEC(v, out, eps)   LANES of out = (float)(1 /
                                              sqrt((double)v + eps)), IEEE
     NBWD__VMASK NBWD__VMASK_FIRST(count)     a mask of the first lanes, and
     NBWD__VLOADM_F32/F16/BF16(p, m)          masked loads (zero elsewhere)
     NBWD__VSTOREM_F32/F16/BF16(p, m, v)      and stores that touch no other
                                              lane's memory (avx512)
     NBWD__VLOADN_F32/F16/BF16(p, count)      without masks: the first count
     NBWD__VSTOREN_F32/F16/BF16(p, count, v)  lanes, piece by piece (sse, avx2)
   The pass #undefs them all at the end (with NBWD__KEEP_LAYER defined, all
   but KSUFFIX, KISA, KTARGET and VSTORE/VSTREAM/VSTOREM/VSTORE2/VSTREAM2_BF16, so that a
   second pass can vary just those). Tails (n % VW elements) are partial
   vectors: masked where the layer has masks, else piece by piece where the
   layer has VLOADN/VSTOREN, else copied lane by lane through a small stack
   buffer; either way nothing is read or written past the end of a row, and
   the padding lanes read as 0.
   ========================================================================== */
#define NBWD__KN(name) NBWD__CAT(name, NBWD__KSUFFIX)
#define NBWD__KFN NBWD__FORCEINLINE NBWD__KTARGET
/* Calls one of three copies of a body, each compiled with a constant dt. */
#define NBWD__DT_SWITCH(call_f32, call_f16, call_bf16)                        \
    do {                                                                      \
        if (dt == NBWD_F32) call_f32; else if (dt == NBWD_F16) call_f16; else call_bf16; \
    } while (0)

NBWD__KFN NBWD__VF NBWD__KN(nbwd__ld)(const void *p, int64_t i, int dt) {
    if (dt == NBWD_F32) return NBWD__VLOAD_F32((const float *)p + i);
    if (dt == NBWD_F16) return NBWD__VLOAD_F16((const uint16_t *)p + i);
    return NBWD__VLOAD_BF16((const uint16_t *)p + i);
}
NBWD__KFN void NBWD__KN(nbwd__st)(void *p, int64_t i, int dt, NBWD__VF v) {
    if (dt == NBWD_F32) NBWD__VSTORE_F32((float *)p + i, v);
    else if (dt == NBWD_F16) NBWD__VSTORE_F16((uint16_t *)p + i, v);
    else NBWD__VSTORE_BF16((uint16_t *)p + i, v);
}

/* Non-temporal stores for dx of tensors larger than the caches (a layer
   that has none stores normally; the bits are the same either way). */
#if defined(NBWD__VSTREAM_F32)
#define NBWD__KSTREAM 1
#else
#define NBWD__KSTREAM 0
#define NBWD__VSTREAM_F32(p, v) NBWD__VSTORE_F32(p, v)
#define NBWD__VSTREAM_F16(p, v) NBWD__VSTORE_F16(p, v)
#define NBWD__VSTREAM_BF16(p, v) NBWD__VSTORE_BF16(p, v)
#define NBWD__VSFENCE() ((void)0)
#endif
NBWD__KFN void NBWD__KN(nbwd__stream)(void *p, int64_t i, int dt, NBWD__VF v) {
    if (dt == NBWD_F32) NBWD__VSTREAM_F32((float *)p + i, v);
    else if (dt == NBWD_F16) NBWD__VSTREAM_F16((uint16_t *)p + i, v);
    else NBWD__VSTREAM_BF16((uint16_t *)p + i, v);
}
/* Two vectors at element i. A layer may narrow a pair to bf16 in one go
   (NBWD__VSTORE2_BF16, NBWD__VSTREAM2_BF16: avx2 and sse, where the
   narrowing is integer code; one pack and one store for both). stream: dx +
   i aligned to 2 * VW elements. */
#if !defined(NBWD__VSTORE2_BF16)
#define NBWD__VSTORE2_BF16(p, v0, v1)        \
    do {                                     \
        NBWD__VSTORE_BF16(p, v0);            \
        NBWD__VSTORE_BF16((p) + NBWD__VW, v1); \
    } while (0)
#define NBWD__VSTREAM2_BF16(p, v0, v1)        \
    do {                                      \
        NBWD__VSTREAM_BF16(p, v0);            \
        NBWD__VSTREAM_BF16((p) + NBWD__VW, v1); \
    } while (0)
#endif
NBWD__KFN void NBWD__KN(nbwd__st2)(void *p, int64_t i, int dt, NBWD__VF v0, NBWD__VF v1, int stream) {
    if (dt == NBWD_BF16 && stream) NBWD__VSTREAM2_BF16((uint16_t *)p + i, v0, v1);
    else if (dt == NBWD_BF16) NBWD__VSTORE2_BF16((uint16_t *)p + i, v0, v1);
    else if (stream) {
        NBWD__KN(nbwd__stream)(p, i, dt, v0);
        NBWD__KN(nbwd__stream)(p, i + NBWD__VW, dt, v1);
    } else {
        NBWD__KN(nbwd__st)(p, i, dt, v0);
        NBWD__KN(nbwd__st)(p, i + NBWD__VW, dt, v1);
    }
}
/* Non-temporal stores only ever write whole 64-byte lines: a line written
   partly by them and partly by ordinary stores (the row's ends, a neighbour
   row) costs a partial-line write to memory. [*begin, *end): the elements of
   dx[0, n) that fill whole lines (empty without streaming stores). 64 / esz
   is a multiple of VW on every layer, so the span is whole vectors. */
NBWD__KFN void NBWD__KN(nbwd__nt_span)(const void *dx, int dt, int64_t n, int64_t *begin, int64_t *end) {
    int64_t esz = (int64_t)nbwd__esize(dt), per_line = 64 / esz, b;
    uintptr_t mis = (uintptr_t)dx % 64;
    *begin = *end = 0;
    if (!NBWD__KSTREAM || mis % (uintptr_t)esz) return;
    b = (int64_t)((64 - mis) % 64) / esz;
    if (b >= n) return;
    *begin = b;
    *end = b + (n - b) / per_line * per_line;
}
/* stream: the elements of a row of n at dx that go out non-temporally: its
   whole lines when the row starts a line (element 0 aligned), else none. */
NBWD__KFN int64_t NBWD__KN(nbwd__nt_lead)(const void *dx, int dt, int64_t n, int stream) {
    int64_t nt_begin = 0, nt_end = 0;
    if (stream) NBWD__KN(nbwd__nt_span)(dx, dt, n, &nt_begin, &nt_end);
    return nt_begin ? 0 : nt_end;
}
/* Partial vectors: the first `count` lanes, 0 < count < VW. Masked loads and
   stores where the layer has them (AVX-512), the layer's piecewise access
   where it has that (NBWD__VLOADN_*, NBWD__VSTOREN_*: sse and avx2), else
   element by element through a buffer (scalar, NEON). */
#if defined(NBWD__VMASK)
#define NBWD__KMASKED 1
#else
#define NBWD__KMASKED 0
#define NBWD__VMASK int
#define NBWD__VMASK_FIRST(count) ((int)(count))
#endif
NBWD__KFN NBWD__VF NBWD__KN(nbwd__ldm_f32)(const float *p, NBWD__VMASK m) {
#if NBWD__KMASKED
    return NBWD__VLOADM_F32(p, m);
#elif defined(NBWD__VLOADN_F32)
    return NBWD__VLOADN_F32(p, m);
#else
    float b[NBWD__VW];
    int k;
    for (k = 0; k < NBWD__VW; ++k) b[k] = k < m ? p[k] : 0.0f;
    return NBWD__VLOAD_F32(b);
#endif
}
NBWD__KFN void NBWD__KN(nbwd__stm_f32)(float *p, NBWD__VMASK m, NBWD__VF v) {
#if NBWD__KMASKED
    NBWD__VSTOREM_F32(p, m, v);
#elif defined(NBWD__VSTOREN_F32)
    NBWD__VSTOREN_F32(p, m, v);
#else
    float b[NBWD__VW];
    int k;
    NBWD__VSTORE_F32(b, v);
    for (k = 0; k < m; ++k) p[k] = b[k];
#endif
}
NBWD__KFN NBWD__VF NBWD__KN(nbwd__ldm)(const void *p, int64_t i, int dt, NBWD__VMASK m) {
#if NBWD__KMASKED
    if (dt == NBWD_F32) return NBWD__VLOADM_F32((const float *)p + i, m);
    if (dt == NBWD_F16) return NBWD__VLOADM_F16((const uint16_t *)p + i, m);
    return NBWD__VLOADM_BF16((const uint16_t *)p + i, m);
#elif defined(NBWD__VLOADN_F32)
    if (dt == NBWD_F32) return NBWD__VLOADN_F32((const float *)p + i, m);
    if (dt == NBWD_F16) return NBWD__VLOADN_F16((const uint16_t *)p + i, m);
    return NBWD__VLOADN_BF16((const uint16_t *)p + i, m);
#else
    uint16_t b[NBWD__VW];
    int k;
    if (dt == NBWD_F32) return NBWD__KN(nbwd__ldm_f32)((const float *)p + i, m);
    for (k = 0; k < NBWD__VW; ++k) b[k] = k < m ? ((const uint16_t *)p)[i + k] : (uint16_t)0;
    return dt == NBWD_F16 ? NBWD__VLOAD_F16(b) : NBWD__VLOAD_BF16(b);
#endif
}
NBWD__KFN void NBWD__KN(nbwd__stm)(void *p, int64_t i, int dt, NBWD__VMASK m, NBWD__VF v) {
#if NBWD__KMASKED
    if (dt == NBWD_F32) NBWD__VSTOREM_F32((float *)p + i, m, v);
    else if (dt == NBWD_F16) NBWD__VSTOREM_F16((uint16_t *)p + i, m, v);
    else NBWD__VSTOREM_BF16((uint16_t *)p + i, m, v);
#elif defined(NBWD__VSTOREN_F32)
    if (dt == NBWD_F32) NBWD__VSTOREN_F32((float *)p + i, m, v);
    else if (dt == NBWD_F16) NBWD__VSTOREN_F16((uint16_t *)p + i, m, v);
    else NBWD__VSTOREN_BF16((uint16_t *)p + i, m, v);
#else
    uint16_t b[NBWD__VW];
    int k;
    if (dt == NBWD_F32) {
        NBWD__KN(nbwd__stm_f32)((float *)p + i, m, v);
        return;
    }
    if (dt == NBWD_F16) NBWD__VSTORE_F16(b, v);
    else NBWD__VSTORE_BF16(b, v);
    for (k = 0; k < m; ++k) ((uint16_t *)p)[i + k] = b[k];
#endif
}
/* Full (m unused) or partial vector access, chosen by a constant. */
#define NBWD__LD(p, i, dt, part, m) ((part) ? NBWD__KN(nbwd__ldm)(p, i, dt, m) : NBWD__KN(nbwd__ld)(p, i, dt))
#define NBWD__LDF(p, part, m) ((part) ? NBWD__KN(nbwd__ldm_f32)(p, m) : NBWD__VLOAD_F32(p))
/* gamma at element i, or zeros without gamma (then unused) */
#define NBWD__LDG(gamma, i, part, m) ((gamma) ? NBWD__LDF((gamma) + (i), part, m) : NBWD__VZERO())
#define NBWD__STF(p, part, m, v)                                   \
    do {                                                           \
        if (part) NBWD__KN(nbwd__stm_f32)(p, m, v);                \
        else NBWD__VSTORE_F32(p, v);                               \
    } while (0)

/* One set's transform and coefficients, broadcast: xhat = (x - xm) * xs;
   dx = scale * (g - (mg + xhat * mgx)). */
typedef struct NBWD__KN(nbwd__vset) {
    NBWD__VF xm, xs, mg, mgx, scale;
} NBWD__KN(nbwd__vset);
NBWD__KFN NBWD__KN(nbwd__vset) NBWD__KN(nbwd__vset_of)(float xm, float xs, float mg, float mgx, float scale) {
    NBWD__KN(nbwd__vset) s;
    s.xm = NBWD__VSET1(xm); s.xs = NBWD__VSET1(xs);
    s.mg = NBWD__VSET1(mg); s.mgx = NBWD__VSET1(mgx); s.scale = NBWD__VSET1(scale);
    return s;
}

/* 16-bit rows of up to NBWD__KEEP_COLS elements keep each element's g and
   xhat in f32 (a stack buffer of about 8.5 KiB) from the row's reduction to
   its dx, instead of loading and widening the row a second time: in L2,
   64x768 bf16 15-25 % faster on avx512_bf16 and 12-25 % on avx512, avx2, sse
   and scalar; out of cache 32768x768 10-13 % faster, 8192x1024 0-10 %. Wider
   rows (4096 columns: 17 % slower; the buffer then leaves L1) and f32 rows
   (nothing to widen: 64x768 20 % slower) recompute. g lies at keep[i], xhat at
   keep[NBWD__KEEP_XH + i], an offset that is not a multiple of 4 KiB. */
#define NBWD__KEEP_COLS 1024
#define NBWD__KEEP_XH (NBWD__KEEP_COLS + 64)
/* The reduction of one vector at element i: sums g and g * xhat into the
   chain (sg, sgx) with g = dy * vgam, or dy without gamma (want_sums), and
   the column partials col_dg += dy * xhat, col_db += dy (each may be NULL).
   The caller loads gamma's vector: the fused loop shares it between rows.
   keep (or NULL; with want_sums): where g and xhat are stored for the dx. */
NBWD__KFN void NBWD__KN(nbwd__reduce_at)(const void *x, const void *dy, int64_t i, int dt, int part, NBWD__VMASK m,
                                         NBWD__VF vxm, NBWD__VF vxs, int has_gamma, NBWD__VF vgam, float *col_dg,
                                         float *col_db, int want_sums, NBWD__VF *sg, NBWD__VF *sgx, float *keep) {
    NBWD__VF vdy = NBWD__LD(dy, i, dt, part, m);
    NBWD__VF xh = NBWD__VMUL(NBWD__VSUB(NBWD__LD(x, i, dt, part, m), vxm), vxs);
    if (want_sums) {
        NBWD__VF g = has_gamma ? NBWD__VMUL(vdy, vgam) : vdy;
        *sg = NBWD__VADD(*sg, g);
        *sgx = NBWD__VFMA(g, xh, *sgx);
        if (keep) {
            NBWD__VSTORE_F32(keep, g);
            NBWD__VSTORE_F32(keep + NBWD__KEEP_XH, xh);
        }
    }
    if (col_dg) NBWD__STF(col_dg + i, part, m, NBWD__VFMA(vdy, xh, NBWD__LDF(col_dg + i, part, m)));
    if (col_db) NBWD__STF(col_db + i, part, m, NBWD__VADD(vdy, NBWD__LDF(col_db + i, part, m)));
}

/* dx from g and xhat */
#define NBWD__DX_OF(s, g, xh) NBWD__VMUL(NBWD__VSUB(g, NBWD__VFMA(xh, (s)->mgx, (s)->mg)), (s)->scale)
/* Stores dx's vector at element i: partial (mask m), non-temporal (stream:
   dx + i aligned) or ordinary. */
NBWD__KFN void NBWD__KN(nbwd__st_dx)(void *dx, int64_t i, int dt, int part, NBWD__VMASK m, NBWD__VF out,
                                     int stream) {
    if (part) NBWD__KN(nbwd__stm)(dx, i, dt, m, out);
    else if (stream) NBWD__KN(nbwd__stream)(dx, i, dt, out);
    else NBWD__KN(nbwd__st)(dx, i, dt, out);
}
/* dx of one vector at element i from its g and xhat, stored */
NBWD__KFN void NBWD__KN(nbwd__apply_out)(void *dx, int64_t i, int dt, int part, NBWD__VMASK m,
                                         const NBWD__KN(nbwd__vset) *s, NBWD__VF g, NBWD__VF xh, int stream) {
    NBWD__KN(nbwd__st_dx)(dx, i, dt, part, m, NBWD__DX_OF(s, g, xh), stream);
}
/* dx of one vector at element i from x and dy, not stored */
NBWD__KFN NBWD__VF NBWD__KN(nbwd__dx_at)(const void *x, const void *dy, int64_t i, int dt, int part, NBWD__VMASK m,
                                         const NBWD__KN(nbwd__vset) *s, int has_gamma, NBWD__VF vgam) {
    NBWD__VF vdy = NBWD__LD(dy, i, dt, part, m);
    NBWD__VF xh = NBWD__VMUL(NBWD__VSUB(NBWD__LD(x, i, dt, part, m), s->xm), s->xs);
    return NBWD__DX_OF(s, has_gamma ? NBWD__VMUL(vdy, vgam) : vdy, xh);
}
/* dx of one vector at element i from x and dy, stored */
NBWD__KFN void NBWD__KN(nbwd__apply_at)(const void *x, const void *dy, void *dx, int64_t i, int dt, int part,
                                        NBWD__VMASK m, const NBWD__KN(nbwd__vset) *s, int has_gamma,
                                        NBWD__VF vgam, int stream) {
    NBWD__KN(nbwd__st_dx)(dx, i, dt, part, m, NBWD__KN(nbwd__dx_at)(x, dy, i, dt, part, m, s, has_gamma, vgam),
                          stream);
}

/* Software prefetch of rows that stream in from memory: the lines of x and
   dy lying NBWD__KPF_BYTES past the elements [i, i + 2 VW), each line once.
   Distance and hint as measured per path. The AVX-512 paths (measured on
   Zen 4, where one core reading two streams alone reached 18 GB/s with no
   prefetch or prefetcht0, 21 with prefetcht2) prefetch 2 KiB ahead with
   prefetcht2 in the fused loop's 16-bit rows, the f32 sub-block sweep's
   reduction and BatchNorm NCX's (one thread: LayerNorm f32 32768x768 about
   12 % faster, BatchNorm NCX 32x64x56x56 and 32x256x28x28 12-16 %). The
   narrower paths (measured on Zen 3) prefetch 1 KiB ahead with prefetcht0,
   in the fused loop only. */
#if NBWD__VW >= 16
#define NBWD__KPF(addr) NBWD__PREFETCH_L2(addr)
#define NBWD__KPF_BYTES 2048
#else
#define NBWD__KPF(addr) NBWD__PREFETCH(addr)
#define NBWD__KPF_BYTES 1024
#endif
NBWD__KFN void NBWD__KN(nbwd__prefetch_ahead)(const void *x, const void *dy, int64_t i, int64_t esz) {
    const int64_t step = 2 * NBWD__VW * esz; /* bytes of the elements [i, i + 2 VW) */
    int64_t k;
    if (step < 64 && (i * esz) % 64 != 0) return; /* their line was prefetched already */
    for (k = 0; k < step; k += 64) {
        NBWD__KPF((uintptr_t)x + (uintptr_t)(i * esz + k + NBWD__KPF_BYTES));
        NBWD__KPF((uintptr_t)dy + (uintptr_t)(i * esz + k + NBWD__KPF_BYTES));
    }
}

/* The reduction of one row, in a fixed order: pairs of vectors into two
   chains (they hide the add latency), an odd last full vector into the first,
   the partial tail into the second. The fused loop below keeps this order, so
   a row's sums never depend on which loop handled it. sums NULL: column
   partials only. keep (or NULL): the row's g and xhat are kept there.
   prefetch: the row streams in from memory (nbwd__prefetch_ahead). */
#define NBWD__KEPT(keep, i) ((keep) ? (keep) + (i) : (float *)NULL)
NBWD__KFN void NBWD__KN(nbwd__reduce_row)(const void *x, const void *dy, int dt, int64_t n, float xm, float xs,
                                          const float *gamma, float *col_dg, float *col_db, float *sums,
                                          float *keep, int prefetch) {
    NBWD__VF vxm = NBWD__VSET1(xm), vxs = NBWD__VSET1(xs), sg = NBWD__VZERO(), sgx = NBWD__VZERO();
    NBWD__VF sg1 = NBWD__VZERO(), sgx1 = NBWD__VZERO();
    NBWD__VMASK none = NBWD__VMASK_FIRST(1);
    int64_t i = 0;
    int want = sums != NULL;
    const float *gam = want ? gamma : NULL; /* gamma only enters the sums */
    const int hg = gam != NULL;
    const int64_t esz = (int64_t)nbwd__esize(dt);
    for (; i + 2 * NBWD__VW <= n; i += 2 * NBWD__VW) {
        if (prefetch) NBWD__KN(nbwd__prefetch_ahead)(x, dy, i, esz);
        NBWD__KN(nbwd__reduce_at)(x, dy, i, dt, 0, none, vxm, vxs, hg, NBWD__LDG(gam, i, 0, none), col_dg, col_db,
                                  want, &sg, &sgx, NBWD__KEPT(keep, i));
        NBWD__KN(nbwd__reduce_at)(x, dy, i + NBWD__VW, dt, 0, none, vxm, vxs, hg,
                                  NBWD__LDG(gam, i + NBWD__VW, 0, none), col_dg, col_db, want, &sg1, &sgx1,
                                  NBWD__KEPT(keep, i + NBWD__VW));
    }
    if (i + NBWD__VW <= n) {
        NBWD__KN(nbwd__reduce_at)(x, dy, i, dt, 0, none, vxm, vxs, hg, NBWD__LDG(gam, i, 0, none), col_dg, col_db,
                                  want, &sg, &sgx, NBWD__KEPT(keep, i));
        i += NBWD__VW;
    }
    if (i < n) {
        NBWD__VMASK m = NBWD__VMASK_FIRST(n - i);
        NBWD__KN(nbwd__reduce_at)(x, dy, i, dt, 1, m, vxm, vxs, hg, NBWD__LDG(gam, i, 1, m), col_dg, col_db, want,
                                  &sg1, &sgx1, NBWD__KEPT(keep, i));
    }
    if (sums) {
        sums[0] = NBWD__VHSUM(NBWD__VADD(sg, sg1));
        sums[1] = NBWD__VHSUM(NBWD__VADD(sgx, sgx1));
    }
}

/* dx of the vector at element i from its kept g and xhat. */
NBWD__KFN void NBWD__KN(nbwd__apply_kept)(void *dx, const float *keep, int64_t i, int dt, int part, NBWD__VMASK m,
                                          const NBWD__KN(nbwd__vset) *s, int stream) {
    NBWD__KN(nbwd__apply_out)(dx, i, dt, part, m, s, NBWD__LDF(keep + i, part, m),
                              NBWD__LDF(keep + NBWD__KEEP_XH + i, part, m), stream);
}

/* dx of the vector at element i: from its kept g and xhat, or computed. */
NBWD__KFN void NBWD__KN(nbwd__apply_vec)(const void *x, const void *dy, void *dx, const float *keep, int64_t i,
                                         int dt, int part, NBWD__VMASK m, const NBWD__KN(nbwd__vset) *s,
                                         const float *gamma, int stream) {
    if (keep)
        NBWD__KN(nbwd__apply_kept)(dx, keep, i, dt, part, m, s, stream);
    else
        NBWD__KN(nbwd__apply_at)(x, dy, dx, i, dt, part, m, s, gamma != NULL, NBWD__LDG(gamma, i, part, m), stream);
}

/* dx of the full vector at element i, from keep or computed; not stored */
NBWD__KFN NBWD__VF NBWD__KN(nbwd__dx_full)(const void *x, const void *dy, const float *keep, int64_t i, int dt,
                                           const NBWD__KN(nbwd__vset) *s, const float *gamma) {
    if (keep) return NBWD__DX_OF(s, NBWD__VLOAD_F32(keep + i), NBWD__VLOAD_F32(keep + NBWD__KEEP_XH + i));
    return NBWD__KN(nbwd__dx_at)(x, dy, i, dt, 0, NBWD__VMASK_FIRST(1), s, gamma != NULL,
                                 gamma ? NBWD__VLOAD_F32(gamma + i) : NBWD__VZERO());
}

/* Elements [i, end) of dx: pairs of vectors for bf16, full vectors, then a
   partial one (or none). */
NBWD__KFN void NBWD__KN(nbwd__apply_span)(const void *x, const void *dy, void *dx, const float *keep, int64_t i,
                                          int64_t end, int dt, const NBWD__KN(nbwd__vset) *s, const float *gamma,
                                          int stream) {
    NBWD__VMASK none = NBWD__VMASK_FIRST(1);
    for (; dt == NBWD_BF16 && i + 2 * NBWD__VW <= end; i += 2 * NBWD__VW) /* pairs: see nbwd__st2 */
        NBWD__KN(nbwd__st2)(dx, i, dt, NBWD__KN(nbwd__dx_full)(x, dy, keep, i, dt, s, gamma),
                            NBWD__KN(nbwd__dx_full)(x, dy, keep, i + NBWD__VW, dt, s, gamma), stream);
    for (; i + NBWD__VW <= end; i += NBWD__VW)
        NBWD__KN(nbwd__apply_vec)(x, dy, dx, keep, i, dt, 0, none, s, gamma, stream);
    if (i < end) NBWD__KN(nbwd__apply_vec)(x, dy, dx, keep, i, dt, 1, NBWD__VMASK_FIRST(end - i), s, gamma, 0);
}

/* dx of one row. stream: the whole 64-byte lines of the row non-temporal. */
NBWD__KFN void NBWD__KN(nbwd__apply_row)(const void *x, const void *dy, void *dx, const float *keep, int dt,
                                         int64_t n, const NBWD__KN(nbwd__vset) *s, const float *gamma, int stream) {
    int64_t nt_begin = 0, nt_end = 0;
    if (stream) NBWD__KN(nbwd__nt_span)(dx, dt, n, &nt_begin, &nt_end);
    if (nt_end > nt_begin) {
        NBWD__KN(nbwd__apply_span)(x, dy, dx, keep, 0, nt_begin, dt, s, gamma, 0);
        NBWD__KN(nbwd__apply_span)(x, dy, dx, keep, nt_begin, nt_end, dt, s, gamma, 1);
        NBWD__KN(nbwd__apply_span)(x, dy, dx, keep, nt_end, n, dt, s, gamma, 0);
    } else {
        NBWD__KN(nbwd__apply_span)(x, dy, dx, keep, 0, n, dt, s, gamma, 0);
    }
}

/* One vector of the fused loop: row b's reduction at element i and row a's
   dx there. With keep, row a's g and xhat are read from it before row b's
   replace them. */
NBWD__KFN void NBWD__KN(nbwd__fused_at)(const void *xa, const void *dya, void *dxa, const NBWD__KN(nbwd__vset) *sa,
                                        const void *xb, const void *dyb, NBWD__VF vxm, NBWD__VF vxs, int64_t i,
                                        int dt, int part, NBWD__VMASK m, int hg, NBWD__VF vgam, float *col_dg,
                                        float *col_db, NBWD__VF *sg, NBWD__VF *sgx, float *keep, int stream) {
    if (keep) {
        NBWD__KN(nbwd__apply_kept)(dxa, keep, i, dt, part, m, sa, stream);
        NBWD__KN(nbwd__reduce_at)(xb, dyb, i, dt, part, m, vxm, vxs, hg, vgam, col_dg, col_db, 1, sg, sgx,
                                  keep + i);
    } else {
        NBWD__KN(nbwd__reduce_at)(xb, dyb, i, dt, part, m, vxm, vxs, hg, vgam, col_dg, col_db, 1, sg, sgx, NULL);
        NBWD__KN(nbwd__apply_at)(xa, dya, dxa, i, dt, part, m, sa, hg, vgam, stream);
    }
}

/* Two rows of the same length in one loop: the reduction of row b (sums_b)
   while dx of row a (whose sums are done) is written. Row b streams in from
   memory while row a, read a moment ago, comes from the cache: one pass over
   DRAM keeps the loads in flight while the arithmetic runs. Row b's order is
   reduce_row's. stream: row a's whole lines non-temporal when its dx starts
   on a line (else ordinary stores). keep (or NULL): row a's g and xhat, which
   row b's replace. */
NBWD__KFN void NBWD__KN(nbwd__fused_rows)(const void *xa, const void *dya, void *dxa,
                                          const NBWD__KN(nbwd__vset) *sa, const void *xb, const void *dyb,
                                          float xmb, float xsb, float *sums_b, int dt, int64_t n,
                                          const float *gamma, float *col_dg, float *col_db, float *keep,
                                          int stream) {
    NBWD__VF vxm = NBWD__VSET1(xmb), vxs = NBWD__VSET1(xsb), sg = NBWD__VZERO(), sgx = NBWD__VZERO();
    NBWD__VF sg1 = NBWD__VZERO(), sgx1 = NBWD__VZERO();
    NBWD__VMASK none = NBWD__VMASK_FIRST(1);
    int64_t i = 0, nt_begin = 0, nt_end = 0;
    /* Row b (and the next) is prefetched (nbwd__prefetch_ahead; these
       numbers are of prefetcht0 1 KiB ahead on every path): 16-bit rows
       (10-20 % faster on 4096- and 8192-wide rows out of cache, one and two
       threads) and, on paths narrower than AVX-512, f32 rows of at least 4
       KiB (avx2 and sse 8-20 % faster; f32 on AVX-512 13-27 % slower) or out
       of cache (stream: 32768x768 on avx2 7-10 % faster on Zen 3, though 6 %
       slower on Zen 4; sse within the noise; in cache, 64x768, the
       prefetches only cost). */
    const int64_t esz = (int64_t)nbwd__esize(dt);
    const int prefetch = dt != NBWD_F32 || (NBWD__VW < 16 && (n >= 1024 || stream));
    const int hg = gamma != NULL;
    if (stream) NBWD__KN(nbwd__nt_span)(dxa, dt, n, &nt_begin, &nt_end);
    if (nt_begin != 0) nt_end = 0; /* row a's dx starts mid-line: ordinary stores */
    for (; i + 2 * NBWD__VW <= n; i += 2 * NBWD__VW) {
        if (prefetch) NBWD__KN(nbwd__prefetch_ahead)(xb, dyb, i, esz);
        /* gamma loaded once for both rows: the compiler cannot reuse one
           load across the column-partial stores, which might alias gamma
           (64x768 f32 in L2: 10-13 % faster) */
        NBWD__VF g0 = NBWD__LDG(gamma, i, 0, none), g1 = NBWD__LDG(gamma, i + NBWD__VW, 0, none);
        NBWD__VF dx0 = NBWD__VZERO(), dx1 = NBWD__VZERO();
        int st = i + 2 * NBWD__VW <= nt_end;
        if (dt != NBWD_BF16) { /* (f32 measured 3-6 % slower with bf16's order below) */
            NBWD__KN(nbwd__fused_at)(xa, dya, dxa, sa, xb, dyb, vxm, vxs, i, dt, 0, none, hg, g0, col_dg, col_db,
                                     &sg, &sgx, keep, st);
            NBWD__KN(nbwd__fused_at)(xa, dya, dxa, sa, xb, dyb, vxm, vxs, i + NBWD__VW, dt, 0, none, hg, g1, col_dg,
                                     col_db, &sg1, &sgx1, keep, st);
            continue;
        }
        /* bf16: row a's two dx vectors are stored together
           (NBWD__VSTORE2_BF16); with keep they are formed before row b's g
           and xhat replace row a's */
        if (keep) {
            dx0 = NBWD__KN(nbwd__dx_full)(xa, dya, keep, i, dt, sa, gamma);
            dx1 = NBWD__KN(nbwd__dx_full)(xa, dya, keep, i + NBWD__VW, dt, sa, gamma);
        }
        NBWD__KN(nbwd__reduce_at)(xb, dyb, i, dt, 0, none, vxm, vxs, hg, g0, col_dg, col_db, 1, &sg, &sgx,
                                  NBWD__KEPT(keep, i));
        NBWD__KN(nbwd__reduce_at)(xb, dyb, i + NBWD__VW, dt, 0, none, vxm, vxs, hg, g1, col_dg, col_db, 1, &sg1,
                                  &sgx1, NBWD__KEPT(keep, i + NBWD__VW));
        if (!keep) {
            dx0 = NBWD__KN(nbwd__dx_at)(xa, dya, i, dt, 0, none, sa, hg, g0);
            dx1 = NBWD__KN(nbwd__dx_at)(xa, dya, i + NBWD__VW, dt, 0, none, sa, hg, g1);
        }
        NBWD__KN(nbwd__st2)(dxa, i, dt, dx0, dx1, st);
    }
    if (i + NBWD__VW <= n) {
        NBWD__KN(nbwd__fused_at)(xa, dya, dxa, sa, xb, dyb, vxm, vxs, i, dt, 0, none, hg, NBWD__LDG(gamma, i, 0, none),
                                 col_dg, col_db, &sg, &sgx, keep, i + NBWD__VW <= nt_end);
        i += NBWD__VW;
    }
    if (i < n) {
        NBWD__VMASK m = NBWD__VMASK_FIRST(n - i);
        NBWD__KN(nbwd__fused_at)(xa, dya, dxa, sa, xb, dyb, vxm, vxs, i, dt, 1, m, hg, NBWD__LDG(gamma, i, 1, m),
                                 col_dg, col_db, &sg1, &sgx1, keep, 0);
    }
    sums_b[0] = NBWD__VHSUM(NBWD__VADD(sg, sg1));
    sums_b[1] = NBWD__VHSUM(NBWD__VADD(sgx, sgx1));
}

/* BatchNorm NXC: one row of all channels, per-channel statistics. */
NBWD__KFN void NBWD__KN(nbwd__col_reduce_at)(const void *x, const void *dy, int64_t i, int dt, int part,
                                             NBWD__VMASK m, const float *xm, const float *xs, float *col_dg,
                                             float *col_db) {
    NBWD__VF vdy = NBWD__LD(dy, i, dt, part, m);
    NBWD__VF xh = NBWD__VMUL(NBWD__VSUB(NBWD__LD(x, i, dt, part, m), NBWD__LDF(xm + i, part, m)),
                             NBWD__LDF(xs + i, part, m));
    NBWD__STF(col_dg + i, part, m, NBWD__VFMA(vdy, xh, NBWD__LDF(col_dg + i, part, m)));
    NBWD__STF(col_db + i, part, m, NBWD__VADD(vdy, NBWD__LDF(col_db + i, part, m)));
}
NBWD__KFN void NBWD__KN(nbwd__col_apply_at)(const void *x, const void *dy, void *dx, int64_t i, int dt, int part,
                                            NBWD__VMASK m, const float *xm, const float *xs, const float *mg,
                                            const float *mgx, const float *scale, int stream) {
    NBWD__VF vdy = NBWD__LD(dy, i, dt, part, m);
    NBWD__VF xh = NBWD__VMUL(NBWD__VSUB(NBWD__LD(x, i, dt, part, m), NBWD__LDF(xm + i, part, m)),
                             NBWD__LDF(xs + i, part, m));
    NBWD__VF t = NBWD__VFMA(xh, NBWD__LDF(mgx + i, part, m), NBWD__LDF(mg + i, part, m));
    NBWD__VF out = NBWD__VMUL(NBWD__VSUB(vdy, t), NBWD__LDF(scale + i, part, m));
    if (part) NBWD__KN(nbwd__stm)(dx, i, dt, m, out);
    else if (stream) NBWD__KN(nbwd__stream)(dx, i, dt, out);
    else NBWD__KN(nbwd__st)(dx, i, dt, out);
}

/* Narrow LayerNorm rows, at most NBWD__NARROW_VECS vectors (nv, a constant
   after inlining): each row is loaded once and kept in registers for its sums
   and its dx, and the column partials stay in registers for the whole batch.
   (Through memory, each row's update of a partial would wait for the previous
   row's store of it; a masked store cannot even be forwarded.) Vector v goes
   to sum chain v & 1, the partial tail to chain 1: reduce_row's order, so the
   bits are the same as on the general path. */
#define NBWD__NARROW_VECS 4
/* the body once per vector v < nv (at most 4: narrow LayerNorm and BatchNorm rows, the sweep) */
#define NBWD__EACH_VEC(v, ...)                                                         \
    do {                                                                               \
        { const int v = 0; __VA_ARGS__ }                                               \
        if (nv > 1) { const int v = 1; __VA_ARGS__ }                                   \
        if (nv > 2) { const int v = 2; __VA_ARGS__ }                                   \
        if (nv > 3) { const int v = 3; __VA_ARGS__ }                                   \
    } while (0)
NBWD__KFN void NBWD__KN(nbwd__ln_narrow_body)(const nbwd__rows *r, int dt, const float *gamma, float *col_dg,
                                              float *col_db, const int nv) {
    int64_t i, n = r->n, esz = (int64_t)nbwd__esize(dt);
    const int tail = (int)(n % NBWD__VW); /* the last vector is partial */
    NBWD__VMASK m = NBWD__VMASK_FIRST(tail ? tail : 1);
    NBWD__VF gam[NBWD__NARROW_VECS], cdg[NBWD__NARROW_VECS], cdb[NBWD__NARROW_VECS];
    NBWD__VF xh[NBWD__NARROW_VECS], g[NBWD__NARROW_VECS];
    float inv_n = 1.0f / (float)n;
    NBWD__EACH_VEC(v, {
        int pv = tail && v == nv - 1;
        gam[v] = gamma ? NBWD__LDF(gamma + v * NBWD__VW, pv, m) : NBWD__VZERO();
        cdg[v] = col_dg ? NBWD__LDF(col_dg + v * NBWD__VW, pv, m) : NBWD__VZERO();
        cdb[v] = col_db ? NBWD__LDF(col_db + v * NBWD__VW, pv, m) : NBWD__VZERO();
    });
    for (i = 0; i < r->count; ++i) {
        const char *x = r->x + r->x_off[i] * esz, *dy = r->dy + r->dy_off[i] * esz;
        NBWD__VF vxm = NBWD__VSET1(r->xm[i]), vxs = NBWD__VSET1(r->xs[i]);
        NBWD__VF sg0 = NBWD__VZERO(), sgx0 = NBWD__VZERO(), sg1 = NBWD__VZERO(), sgx1 = NBWD__VZERO();
        NBWD__EACH_VEC(v, {
            int pv = tail && v == nv - 1;
            NBWD__VF vdy = NBWD__LD(dy, v * NBWD__VW, dt, pv, m);
            xh[v] = NBWD__VMUL(NBWD__VSUB(NBWD__LD(x, v * NBWD__VW, dt, pv, m), vxm), vxs);
            if (col_dg) cdg[v] = NBWD__VFMA(vdy, xh[v], cdg[v]);
            if (col_db) cdb[v] = NBWD__VADD(vdy, cdb[v]);
            g[v] = gamma ? NBWD__VMUL(vdy, gam[v]) : vdy;
            if (pv || (v & 1)) {
                sg1 = NBWD__VADD(sg1, g[v]);
                sgx1 = NBWD__VFMA(g[v], xh[v], sgx1);
            } else {
                sg0 = NBWD__VADD(sg0, g[v]);
                sgx0 = NBWD__VFMA(g[v], xh[v], sgx0);
            }
        });
        if (r->dx) {
            char *dx = r->dx + r->dx_off[i] * esz;
            NBWD__VF vmg = NBWD__VSET1(NBWD__VHSUM(NBWD__VADD(sg0, sg1)) * inv_n);
            NBWD__VF vmgx = NBWD__VSET1(NBWD__VHSUM(NBWD__VADD(sgx0, sgx1)) * inv_n);
            NBWD__VF vscale = NBWD__VSET1(r->rstd[i]);
            NBWD__VF out[NBWD__NARROW_VECS];
            int64_t nt_begin = 0, nt_end = 0;
            int whole, paired; /* whole: the row is whole lines; paired: vectors stored in pairs */
            if (r->stream) NBWD__KN(nbwd__nt_span)(dx, dt, n, &nt_begin, &nt_end);
            whole = nt_begin == 0 && nt_end == n;
            NBWD__EACH_VEC(v, { out[v] = NBWD__VMUL(NBWD__VSUB(g[v], NBWD__VFMA(xh[v], vmgx, vmg)), vscale); });
            /* bf16: the full vectors two at a time (see nbwd__st2) */
            paired = dt == NBWD_BF16 ? (tail ? nv - 1 : nv) & ~1 : 0;
            if (paired >= 2) NBWD__KN(nbwd__st2)(dx, 0, dt, out[0], out[1], whole);
            if (paired >= 4) NBWD__KN(nbwd__st2)(dx, 2 * NBWD__VW, dt, out[2], out[3], whole);
            NBWD__EACH_VEC(v, {
                if (v >= paired) NBWD__KN(nbwd__st_dx)(dx, v * NBWD__VW, dt, tail && v == nv - 1, m, out[v], whole);
            });
        }
    }
    NBWD__EACH_VEC(v, {
        int pv = tail && v == nv - 1;
        if (col_dg) NBWD__STF(col_dg + v * NBWD__VW, pv, m, cdg[v]);
        if (col_db) NBWD__STF(col_db + v * NBWD__VW, pv, m, cdb[v]);
    });
    if (r->dx && r->stream) NBWD__VSFENCE();
}
/* nv as a constant; each dtype in a function of its own (see ln_rows) */
#define NBWD__NARROW_DT(DT, NAME)                                                                              \
    NBWD__NOINLINE NBWD__KTARGET void NBWD__KN(NAME)(const nbwd__rows *r, const float *gamma, float *col_dg,   \
                                                     float *col_db) {                                         \
        switch ((r->n + NBWD__VW - 1) / NBWD__VW) {                                                            \
        case 1: NBWD__KN(nbwd__ln_narrow_body)(r, DT, gamma, col_dg, col_db, 1); break;                        \
        case 2: NBWD__KN(nbwd__ln_narrow_body)(r, DT, gamma, col_dg, col_db, 2); break;                        \
        case 3: NBWD__KN(nbwd__ln_narrow_body)(r, DT, gamma, col_dg, col_db, 3); break;                        \
        default: NBWD__KN(nbwd__ln_narrow_body)(r, DT, gamma, col_dg, col_db, 4); break;                       \
        }                                                                                                      \
    }
NBWD__NARROW_DT(NBWD_F32, nbwd__ln_narrow_f32)
NBWD__NARROW_DT(NBWD_F16, nbwd__ln_narrow_f16)
NBWD__NARROW_DT(NBWD_BF16, nbwd__ln_narrow_bf16)
#undef NBWD__NARROW_DT
NBWD__KFN void NBWD__KN(nbwd__ln_narrow)(const nbwd__rows *r, int dt, const float *gamma, float *col_dg,
                                         float *col_db) {
    NBWD__DT_SWITCH(NBWD__KN(nbwd__ln_narrow_f32)(r, gamma, col_dg, col_db),
                    NBWD__KN(nbwd__ln_narrow_f16)(r, gamma, col_dg, col_db),
                    NBWD__KN(nbwd__ln_narrow_bf16)(r, gamma, col_dg, col_db));
}

/* Large f32 tensors on 16-lane vectors (elsewhere it measured slower: in
   cache, where the partials are cheap; on 4- and 8-lane vectors; with
   16-bit data): rows with column sums and dx go a sub-block at a time. The
   rows' sums are reduced as the sub-block streams in from memory, then the
   sub-block, now in L2, is swept a chunk of NBWD__SWEEP_VECS vectors of
   columns at a time: dx is written and the chunk's diff_gamma/diff_beta sums
   stay in registers down the rows. (A load and a store of the partials for every row and
   vector cost about a fifth of the time, partly through 4K aliasing with the
   rows; carrying the next sub-block's reduction along inside the sweep, to
   overlap reads and writes, measured slower.) Each column adds its rows in
   order and each row's sums are reduce_row's: the same bits as a row at a
   time. */
#define NBWD__SWEEP_BYTES (256 << 10) /* x and dy of a sub-block: fits L2 */
#define NBWD__SWEEP_VECS 4 /* columns per sweep chunk, in vectors (EACH_VEC: at most 4) */
/* nv vectors at column j over rows [r0, r1); part: the last one is partial
   (mask m); stream: dx non-temporal where the row's chunk is whole lines. */
NBWD__KFN void NBWD__KN(nbwd__sweep_cols)(const nbwd__rows *r, int64_t r0, int64_t r1, int64_t j, int dt,
                                          const float *gamma, float *col_dg, float *col_db, const float *mg,
                                          const float *mgx, const int nv, int part, NBWD__VMASK m, int stream) {
    int64_t i, esz = (int64_t)nbwd__esize(dt);
    NBWD__VF gam[NBWD__SWEEP_VECS], cdg[NBWD__SWEEP_VECS], cdb[NBWD__SWEEP_VECS];
    NBWD__EACH_VEC(v, {
        int pv = part && v == nv - 1;
        gam[v] = gamma ? NBWD__LDF(gamma + j + v * NBWD__VW, pv, m) : NBWD__VZERO();
        cdg[v] = col_dg ? NBWD__LDF(col_dg + j + v * NBWD__VW, pv, m) : NBWD__VZERO();
        cdb[v] = col_db ? NBWD__LDF(col_db + j + v * NBWD__VW, pv, m) : NBWD__VZERO();
    });
    for (i = r0; i < r1; ++i) {
        const char *x = r->x + (r->x_off[i] + j) * esz, *dy = r->dy + (r->dy_off[i] + j) * esz;
        char *dx = r->dx + (r->dx_off[i] + j) * esz;
        NBWD__VF vxm = NBWD__VSET1(r->xm[i]), vxs = NBWD__VSET1(r->xs[i]), vmg = NBWD__VSET1(mg[i]);
        NBWD__VF vmgx = NBWD__VSET1(mgx[i]), vscale = NBWD__VSET1(r->rstd[i]);
        int nt = stream && (uintptr_t)dx % 64 == 0;
        NBWD__EACH_VEC(v, {
            int pv = part && v == nv - 1;
            NBWD__VF vdy = NBWD__LD(dy, v * NBWD__VW, dt, pv, m);
            NBWD__VF xh = NBWD__VMUL(NBWD__VSUB(NBWD__LD(x, v * NBWD__VW, dt, pv, m), vxm), vxs);
            NBWD__VF g = gamma ? NBWD__VMUL(vdy, gam[v]) : vdy;
            NBWD__VF out = NBWD__VMUL(NBWD__VSUB(g, NBWD__VFMA(xh, vmgx, vmg)), vscale);
            if (pv) NBWD__KN(nbwd__stm)(dx, v * NBWD__VW, dt, m, out);
            else if (nt) NBWD__KN(nbwd__stream)(dx, v * NBWD__VW, dt, out);
            else NBWD__KN(nbwd__st)(dx, v * NBWD__VW, dt, out);
            if (col_dg) cdg[v] = NBWD__VFMA(vdy, xh, cdg[v]);
            if (col_db) cdb[v] = NBWD__VADD(vdy, cdb[v]);
        });
    }
    NBWD__EACH_VEC(v, {
        int pv = part && v == nv - 1;
        if (col_dg) NBWD__STF(col_dg + j + v * NBWD__VW, pv, m, cdg[v]);
        if (col_db) NBWD__STF(col_db + j + v * NBWD__VW, pv, m, cdb[v]);
    });
}
NBWD__KFN void NBWD__KN(nbwd__ln_sweep)(const nbwd__rows *r, int dt, const float *gamma, float *col_dg,
                                        float *col_db) {
    int64_t n = r->n, esz = (int64_t)nbwd__esize(dt), i, j, r0, r1, subs;
    int64_t sub = NBWD__SWEEP_BYTES / (2 * n * esz), chunk = NBWD__SWEEP_VECS * NBWD__VW;
    float mg[NBWD__ROW_BATCH], mgx[NBWD__ROW_BATCH], sums[2], inv_n = 1.0f / (float)n;
    NBWD__VMASK none = NBWD__VMASK_FIRST(1);
    /* whole chunks stream when they are whole lines (rows aligned to 64) */
    int stream = r->stream && NBWD__KSTREAM && (chunk * esz) % 64 == 0;
    if (sub < 1) sub = 1;
    subs = (r->count + sub - 1) / sub; /* sub-blocks of equal size */
    sub = (r->count + subs - 1) / subs;
    for (r0 = 0; r0 < r->count; r0 = r1) {
        r1 = r0 + sub < r->count ? r0 + sub : r->count;
        for (i = r0; i < r1; ++i) {
            NBWD__KN(nbwd__reduce_row)(r->x + r->x_off[i] * esz, r->dy + r->dy_off[i] * esz, dt, n, r->xm[i],
                                       r->xs[i], gamma, NULL, NULL, sums, NULL, 1);
            mg[i] = sums[0] * inv_n;
            mgx[i] = sums[1] * inv_n;
        }
        for (j = 0; j + chunk <= n; j += chunk)
            NBWD__KN(nbwd__sweep_cols)(r, r0, r1, j, dt, gamma, col_dg, col_db, mg, mgx, NBWD__SWEEP_VECS, 0,
                                       none, stream);
        for (; j + NBWD__VW <= n; j += NBWD__VW)
            NBWD__KN(nbwd__sweep_cols)(r, r0, r1, j, dt, gamma, col_dg, col_db, mg, mgx, 1, 0, none, 0);
        if (j < n)
            NBWD__KN(nbwd__sweep_cols)(r, r0, r1, j, dt, gamma, col_dg, col_db, mg, mgx, 1, 1,
                                       NBWD__VMASK_FIRST(n - j), 0);
    }
    if (stream) NBWD__VSFENCE();
}

/* Rows with dx, software-pipelined: row i's sums are reduced in the same
   loop that writes row i-1's dx. keep: see fused_rows. */
NBWD__KFN void NBWD__KN(nbwd__ln_rows_dx)(const nbwd__rows *r, int dt, const float *gamma, float *col_dg,
                                          float *col_db, float *keep) {
    int64_t i, n = r->n, esz = (int64_t)nbwd__esize(dt);
    float inv_n = 1.0f / (float)n, sums[2];
    NBWD__KN(nbwd__vset) s;
    NBWD__KN(nbwd__reduce_row)(r->x + r->x_off[0] * esz, r->dy + r->dy_off[0] * esz, dt, n, r->xm[0], r->xs[0],
                               gamma, col_dg, col_db, sums, keep, 0);
    for (i = 1; i < r->count; ++i) {
        s = NBWD__KN(nbwd__vset_of)(r->xm[i - 1], r->xs[i - 1], sums[0] * inv_n, sums[1] * inv_n, r->rstd[i - 1]);
        NBWD__KN(nbwd__fused_rows)(r->x + r->x_off[i - 1] * esz, r->dy + r->dy_off[i - 1] * esz,
                                   r->dx + r->dx_off[i - 1] * esz, &s, r->x + r->x_off[i] * esz,
                                   r->dy + r->dy_off[i] * esz, r->xm[i], r->xs[i], sums, dt, n, gamma, col_dg,
                                   col_db, keep, r->stream);
    }
    i = r->count - 1;
    s = NBWD__KN(nbwd__vset_of)(r->xm[i], r->xs[i], sums[0] * inv_n, sums[1] * inv_n, r->rstd[i]);
    NBWD__KN(nbwd__apply_row)(r->x + r->x_off[i] * esz, r->dy + r->dy_off[i] * esz, r->dx + r->dx_off[i] * esz,
                              keep, dt, n, &s, gamma, r->stream);
    if (r->stream) NBWD__VSFENCE(); /* order the streamed stores before the caller reads dx */
}

/* A batch of LayerNorm rows. */
NBWD__KFN void NBWD__KN(nbwd__ln_rows_body)(const nbwd__rows *r, int dt, const float *gamma, float *col_dg,
                                            float *col_db, int may_keep) {
    int64_t i, n = r->n, esz = (int64_t)nbwd__esize(dt);
    float keep[NBWD__KEEP_XH + NBWD__KEEP_COLS];
    if (n <= NBWD__NARROW_VECS * NBWD__VW) {
        NBWD__KN(nbwd__ln_narrow)(r, dt, gamma, col_dg, col_db);
        return;
    }
    /* where measured faster: f32 on 16-lane vectors, tensors out of cache */
    if (NBWD__VW >= 16 && dt == NBWD_F32 && r->stream && r->dx && (col_dg || col_db)) {
        NBWD__KN(nbwd__ln_sweep)(r, dt, gamma, col_dg, col_db);
        return;
    }
    if (!r->dx) {
        for (i = 0; i < r->count; ++i)
            NBWD__KN(nbwd__reduce_row)(r->x + r->x_off[i] * esz, r->dy + r->dy_off[i] * esz, dt, n, r->xm[i],
                                       r->xs[i], gamma, col_dg, col_db, NULL, NULL, 0);
        return;
    }
    /* see NBWD__KEEP_COLS; a runtime choice for 16-bit rows (two copies of
       the loop made the header 38 % slower to compile) */
    NBWD__KN(nbwd__ln_rows_dx)(r, dt, gamma, col_dg, col_db,
                               may_keep && dt != NBWD_F32 && n <= NBWD__KEEP_COLS ? keep : NULL);
}

/* A batch of BatchNorm NXC rows (every channel in each row). */
NBWD__KFN void NBWD__KN(nbwd__bn_rows_body)(const nbwd__rows *r, int dt) {
    int64_t i, j, n = r->n, esz = (int64_t)nbwd__esize(dt);
    NBWD__VMASK none = NBWD__VMASK_FIRST(1), m = NBWD__VMASK_FIRST(n % NBWD__VW ? n % NBWD__VW : 1);
    int64_t full = n - n % NBWD__VW;
    for (i = 0; i < r->count; ++i) {
        const char *x = r->x + r->x_off[i] * esz, *dy = r->dy + r->dy_off[i] * esz;
        if (r->dx) {
            char *dx = r->dx + r->dx_off[i] * esz;
            int64_t nt_end = NBWD__KN(nbwd__nt_lead)(dx, dt, n, r->stream);
            for (j = 0; j < full; j += NBWD__VW)
                NBWD__KN(nbwd__col_apply_at)(x, dy, dx, j, dt, 0, none, r->cxm, r->cxs, r->cmg, r->cmgx, r->cscale,
                                             j + NBWD__VW <= nt_end);
            if (full < n)
                NBWD__KN(nbwd__col_apply_at)(x, dy, dx, full, dt, 1, m, r->cxm, r->cxs, r->cmg, r->cmgx, r->cscale,
                                             0);
        } else {
            for (j = 0; j < full; j += NBWD__VW)
                NBWD__KN(nbwd__col_reduce_at)(x, dy, j, dt, 0, none, r->cxm, r->cxs, r->col_dg, r->col_db);
            if (full < n)
                NBWD__KN(nbwd__col_reduce_at)(x, dy, full, dt, 1, m, r->cxm, r->cxs, r->col_dg, r->col_db);
        }
    }
    if (r->dx && r->stream) NBWD__VSFENCE();
}
/* Rows of at most NBWD__NARROW_VECS vectors (nv a constant after inlining):
   the per-channel coefficients and the column partials stay in registers for
   the batch (through memory, each row's update of a partial waits for the
   previous row's store of it). The same operations in the same order as
   bn_rows_body, so the same bits. */
NBWD__KFN void NBWD__KN(nbwd__bn_narrow_body)(const nbwd__rows *r, int dt, const int nv) {
    int64_t i, n = r->n, esz = (int64_t)nbwd__esize(dt);
    const int tail = (int)(n % NBWD__VW); /* the last vector is partial */
    NBWD__VMASK m = NBWD__VMASK_FIRST(tail ? tail : 1);
    NBWD__VF vxm[NBWD__NARROW_VECS], vxs[NBWD__NARROW_VECS];
    NBWD__VF acc_dg[NBWD__NARROW_VECS], acc_db[NBWD__NARROW_VECS]; /* pass 1: the partials */
    NBWD__VF vmg[NBWD__NARROW_VECS], vmgx[NBWD__NARROW_VECS], vscale[NBWD__NARROW_VECS]; /* pass 2 */
    NBWD__EACH_VEC(v, {
        int pv = tail && v == nv - 1;
        vxm[v] = NBWD__LDF(r->cxm + v * NBWD__VW, pv, m);
        vxs[v] = NBWD__LDF(r->cxs + v * NBWD__VW, pv, m);
        if (r->dx) {
            vmg[v] = NBWD__LDF(r->cmg + v * NBWD__VW, pv, m);
            vmgx[v] = NBWD__LDF(r->cmgx + v * NBWD__VW, pv, m);
            vscale[v] = NBWD__LDF(r->cscale + v * NBWD__VW, pv, m);
            acc_dg[v] = acc_db[v] = NBWD__VZERO();
        } else {
            acc_dg[v] = NBWD__LDF(r->col_dg + v * NBWD__VW, pv, m);
            acc_db[v] = NBWD__LDF(r->col_db + v * NBWD__VW, pv, m);
            vmg[v] = vmgx[v] = vscale[v] = NBWD__VZERO();
        }
    });
    for (i = 0; i < r->count; ++i) {
        const char *x = r->x + r->x_off[i] * esz, *dy = r->dy + r->dy_off[i] * esz;
        if (r->dx) {
            char *dx = r->dx + r->dx_off[i] * esz;
            int64_t nt_end = NBWD__KN(nbwd__nt_lead)(dx, dt, n, r->stream);
            NBWD__EACH_VEC(v, {
                int pv = tail && v == nv - 1;
                NBWD__VF vdy = NBWD__LD(dy, v * NBWD__VW, dt, pv, m);
                NBWD__VF xh = NBWD__VMUL(NBWD__VSUB(NBWD__LD(x, v * NBWD__VW, dt, pv, m), vxm[v]), vxs[v]);
                NBWD__VF out = NBWD__VMUL(NBWD__VSUB(vdy, NBWD__VFMA(xh, vmgx[v], vmg[v])), vscale[v]);
                if (pv) NBWD__KN(nbwd__stm)(dx, v * NBWD__VW, dt, m, out);
                else if ((v + 1) * NBWD__VW <= nt_end)
                    NBWD__KN(nbwd__stream)(dx, v * NBWD__VW, dt, out);
                else NBWD__KN(nbwd__st)(dx, v * NBWD__VW, dt, out);
            });
        } else {
            NBWD__EACH_VEC(v, {
                int pv = tail && v == nv - 1;
                NBWD__VF vdy = NBWD__LD(dy, v * NBWD__VW, dt, pv, m);
                NBWD__VF xh = NBWD__VMUL(NBWD__VSUB(NBWD__LD(x, v * NBWD__VW, dt, pv, m), vxm[v]), vxs[v]);
                acc_dg[v] = NBWD__VFMA(vdy, xh, acc_dg[v]);
                acc_db[v] = NBWD__VADD(vdy, acc_db[v]);
            });
        }
    }
    if (r->dx) {
        if (r->stream) NBWD__VSFENCE();
    } else {
        NBWD__EACH_VEC(v, {
            int pv = tail && v == nv - 1;
            NBWD__STF(r->col_dg + v * NBWD__VW, pv, m, acc_dg[v]);
            NBWD__STF(r->col_db + v * NBWD__VW, pv, m, acc_db[v]);
        });
    }
}
/* each dtype in a function of its own (see ln_rows) */
#define NBWD__BN_ROWS_DT(DT, NAME)                                                                             \
    NBWD__NOINLINE NBWD__KTARGET void NBWD__KN(NAME)(const nbwd__rows *r) {                                    \
        switch ((r->n + NBWD__VW - 1) / NBWD__VW) {                                                            \
        case 1: NBWD__KN(nbwd__bn_narrow_body)(r, DT, 1); break;                                               \
        case 2: NBWD__KN(nbwd__bn_narrow_body)(r, DT, 2); break;                                               \
        case 3: NBWD__KN(nbwd__bn_narrow_body)(r, DT, 3); break;                                               \
        case 4: NBWD__KN(nbwd__bn_narrow_body)(r, DT, 4); break;                                               \
        default: NBWD__KN(nbwd__bn_rows_body)(r, DT); break;                                                   \
        }                                                                                                      \
    }
NBWD__BN_ROWS_DT(NBWD_F32, nbwd__bn_rows_f32)
NBWD__BN_ROWS_DT(NBWD_F16, nbwd__bn_rows_f16)
NBWD__BN_ROWS_DT(NBWD_BF16, nbwd__bn_rows_bf16)
#undef NBWD__BN_ROWS_DT
static NBWD__KTARGET void NBWD__KN(nbwd__bn_rows)(const nbwd__rows *r) {
    int dt = r->dt;
    NBWD__DT_SWITCH(NBWD__KN(nbwd__bn_rows_f32)(r), NBWD__KN(nbwd__bn_rows_f16)(r), NBWD__KN(nbwd__bn_rows_bf16)(r));
}

static NBWD__KTARGET void NBWD__KN(nbwd__add)(float *dst, const float *src, int64_t n) {
    int64_t i = 0;
    for (; i + NBWD__VW <= n; i += NBWD__VW)
        NBWD__VSTORE_F32(dst + i, NBWD__VADD(NBWD__VLOAD_F32(dst + i), NBWD__VLOAD_F32(src + i)));
    for (; i < n; ++i) dst[i] += src[i];
}

/* The bulk conversion helpers (dt: NBWD_F16 or NBWD_BF16). */
static NBWD__KTARGET void NBWD__KN(nbwd__narrow)(const float *src, uint16_t *dst, int dt, int64_t n) {
    int64_t i = 0;
    if (dt == NBWD_F16) {
        for (; i + NBWD__VW <= n; i += NBWD__VW) NBWD__VSTORE_F16(dst + i, NBWD__VLOAD_F32(src + i));
    } else {
        for (; i + NBWD__VW <= n; i += NBWD__VW) NBWD__VSTORE_BF16(dst + i, NBWD__VLOAD_F32(src + i));
    }
    if (i < n) {
        NBWD__VMASK m = NBWD__VMASK_FIRST(n - i);
        NBWD__KN(nbwd__stm)(dst, i, dt, m, NBWD__KN(nbwd__ldm_f32)(src + i, m));
    }
}
static NBWD__KTARGET void NBWD__KN(nbwd__widen)(const uint16_t *src, float *dst, int dt, int64_t n) {
    int64_t i = 0;
    if (dt == NBWD_F16) {
        for (; i + NBWD__VW <= n; i += NBWD__VW) NBWD__VSTORE_F32(dst + i, NBWD__VLOAD_F16(src + i));
    } else {
        for (; i + NBWD__VW <= n; i += NBWD__VW) NBWD__VSTORE_F32(dst + i, NBWD__VLOAD_BF16(src + i));
    }
    if (i < n) {
        NBWD__VMASK m = NBWD__VMASK_FIRST(n - i);
        NBWD__KN(nbwd__stm_f32)(dst + i, m, NBWD__KN(nbwd__ldm)(src, i, dt, m));
    }
}

/* The entry points: one switch on the data type, so each body is compiled
   with a constant dt (three specialized loops per kernel). */

/* A run of rows (BatchNorm NCX planes) of n elements: row i at x + i *
   step[0] elements (dy: step[1], dx: step[2]), with its own statistics. */
NBWD__KFN void NBWD__KN(nbwd__reduce_rows)(const void *x, const void *dy, const int dt, int64_t n, int64_t count,
                                           const int64_t *step, const float *xm, const float *xs, float *sums,
                                           int64_t sums_step) {
    int64_t i, esz = (int64_t)nbwd__esize(dt);
    float s[2];
    for (i = 0; i < count; ++i, sums += sums_step) {
        NBWD__KN(nbwd__reduce_row)((const char *)x + i * step[0] * esz, (const char *)dy + i * step[1] * esz, dt, n,
                                   xm[i], xs[i], NULL, NULL, NULL, s, NULL, NBWD__VW >= 16);
        sums[0] += s[0];
        sums[1] += s[1];
    }
}
static NBWD__KTARGET void NBWD__KN(nbwd__row_reduce)(const void *x, const void *dy, int dt, int64_t n, int64_t count,
                                                     const int64_t *step, const float *xm, const float *xs,
                                                     float *sums, int64_t sums_step) {
    NBWD__DT_SWITCH(NBWD__KN(nbwd__reduce_rows)(x, dy, NBWD_F32, n, count, step, xm, xs, sums, sums_step),
                    NBWD__KN(nbwd__reduce_rows)(x, dy, NBWD_F16, n, count, step, xm, xs, sums, sums_step),
                    NBWD__KN(nbwd__reduce_rows)(x, dy, NBWD_BF16, n, count, step, xm, xs, sums, sums_step));
}
NBWD__KFN void NBWD__KN(nbwd__apply_rows)(const void *x, const void *dy, void *dx, const int dt, int64_t n,
                                          int64_t count, const int64_t *step, const float *xm, const float *xs,
                                          const float *mean_g, const float *mean_gx, const float *scale,
                                          int stream) {
    int64_t i, esz = (int64_t)nbwd__esize(dt);
    for (i = 0; i < count; ++i) {
        NBWD__KN(nbwd__vset) s = NBWD__KN(nbwd__vset_of)(xm[i], xs[i], mean_g[i], mean_gx[i], scale[i]);
        NBWD__KN(nbwd__apply_row)((const char *)x + i * step[0] * esz, (const char *)dy + i * step[1] * esz,
                                  (char *)dx + i * step[2] * esz, NULL, dt, n, &s, NULL, stream);
    }
}
static NBWD__KTARGET void NBWD__KN(nbwd__row_apply)(const void *x, const void *dy, void *dx, int dt, int64_t n,
                                                    int64_t count, const int64_t *step, const float *xm,
                                                    const float *xs, const float *mean_g, const float *mean_gx,
                                                    const float *scale, int stream) {
    NBWD__DT_SWITCH(
        NBWD__KN(nbwd__apply_rows)(x, dy, dx, NBWD_F32, n, count, step, xm, xs, mean_g, mean_gx, scale, stream),
        NBWD__KN(nbwd__apply_rows)(x, dy, dx, NBWD_F16, n, count, step, xm, xs, mean_g, mean_gx, scale, stream),
        NBWD__KN(nbwd__apply_rows)(x, dy, dx, NBWD_BF16, n, count, step, xm, xs, mean_g, mean_gx, scale, stream));
}
static NBWD__KTARGET void NBWD__KN(nbwd__store_fence)(void) { NBWD__VSFENCE(); }

/* The common cases get loops without per-vector tests: all outputs with
   gamma, and no column sums (dx only) with or without gamma. Each (dtype,
   case) is a function of its own: inlined into one, they made a function
   that compilers take minutes over (clang with sanitizers: a quarter hour). */
#define NBWD__LN_ROWS_FN(DT, SUF)                                                                           \
    NBWD__NOINLINE NBWD__KTARGET void NBWD__KN(nbwd__ln_rows_full_##SUF)(const nbwd__rows *r) {             \
        const float *gamma = r->gamma; /* tested here, so known non-NULL in the body */                     \
        float *dg = r->col_dg, *db = r->col_db;                                                             \
        if (gamma && dg && db) NBWD__KN(nbwd__ln_rows_body)(r, DT, gamma, dg, db, 1);                       \
    }                                                                                                       \
    NBWD__NOINLINE NBWD__KTARGET void NBWD__KN(nbwd__ln_rows_any_##SUF)(const nbwd__rows *r) {              \
        NBWD__KN(nbwd__ln_rows_body)(r, DT, r->gamma, r->col_dg, r->col_db, 0);                             \
    }                                                                                                       \
    NBWD__NOINLINE NBWD__KTARGET void NBWD__KN(nbwd__ln_rows_dx_gamma_##SUF)(const nbwd__rows *r) {         \
        NBWD__KN(nbwd__ln_rows_body)(r, DT, r->gamma, NULL, NULL, 1);                                       \
    }                                                                                                       \
    NBWD__NOINLINE NBWD__KTARGET void NBWD__KN(nbwd__ln_rows_dx_##SUF)(const nbwd__rows *r) {               \
        NBWD__KN(nbwd__ln_rows_body)(r, DT, NULL, NULL, NULL, 0);                                           \
    }                                                                                                       \
    static NBWD__KTARGET void NBWD__KN(nbwd__ln_rows_##SUF)(const nbwd__rows *r) {                          \
        if (r->gamma && r->col_dg && r->col_db) NBWD__KN(nbwd__ln_rows_full_##SUF)(r);                      \
        else if (!r->col_dg && !r->col_db && r->gamma) NBWD__KN(nbwd__ln_rows_dx_gamma_##SUF)(r);           \
        else if (!r->col_dg && !r->col_db) NBWD__KN(nbwd__ln_rows_dx_##SUF)(r);                             \
        else NBWD__KN(nbwd__ln_rows_any_##SUF)(r); /* the rest: pointers tested per vector */               \
    }
NBWD__LN_ROWS_FN(NBWD_F32, f32)
NBWD__LN_ROWS_FN(NBWD_F16, f16)
NBWD__LN_ROWS_FN(NBWD_BF16, bf16)
static NBWD__KTARGET void NBWD__KN(nbwd__ln_rows)(const nbwd__rows *r) {
    int dt = r->dt;
    NBWD__DT_SWITCH(NBWD__KN(nbwd__ln_rows_f32)(r), NBWD__KN(nbwd__ln_rows_f16)(r), NBWD__KN(nbwd__ln_rows_bf16)(r));
}
#undef NBWD__LN_ROWS_FN
#undef NBWD__LD
#undef NBWD__LDF
#undef NBWD__LDG
#undef NBWD__STF
#undef NBWD__KEEP_COLS
#undef NBWD__KEEP_XH
#undef NBWD__KEPT
#undef NBWD__KPF
#undef NBWD__KPF_BYTES

/* A batch of rows' rstd: the scalar code's double-precision operations on
   vectors of doubles where the layer has them (NBWD__RSTD_VEC: IEEE add,
   sqrt and divide, so the bits are the same). One row at a time, the divide
   and square root unit was a fifth of the time of rows of a few dozen
   elements. */
static NBWD__KTARGET void NBWD__KN(nbwd__rstd)(const float *variance, float *rstd, int64_t count, double eps) {
    int64_t i = 0;
#if defined(NBWD__RSTD_VEC)
    for (; i + NBWD__RSTD_LANES <= count; i += NBWD__RSTD_LANES) NBWD__RSTD_VEC(variance + i, rstd + i, eps);
#endif
    for (; i < count; ++i) rstd[i] = (float)(1.0 / sqrt((double)variance[i] + eps));
}
static const nbwd__kernels NBWD__KN(nbwd__kernels) = {
    NBWD__KISA, NBWD__KN(nbwd__row_reduce), NBWD__KN(nbwd__row_apply), NBWD__KN(nbwd__ln_rows),
    NBWD__KN(nbwd__bn_rows), NBWD__KN(nbwd__add), NBWD__KN(nbwd__narrow), NBWD__KN(nbwd__widen),
    NBWD__KN(nbwd__rstd), NBWD__KN(nbwd__store_fence)};

#undef NBWD__EACH_VEC
#undef NBWD__DT_SWITCH
#undef NBWD__KN
#undef NBWD__KFN
#undef NBWD__KSUFFIX
#undef NBWD__KISA
#undef NBWD__KTARGET
#undef NBWD__VSTORE_BF16
#undef NBWD__VSTREAM_BF16
#undef NBWD__VSTOREM_BF16
#undef NBWD__VSTORE2_BF16
#undef NBWD__VSTREAM2_BF16
#undef NBWD__DX_OF
#if !NBWD__KSTREAM
#undef NBWD__VSTREAM_F32 /* the template's own fallbacks */
#undef NBWD__VSTREAM_F16
#undef NBWD__VSFENCE
#endif
#undef NBWD__KSTREAM
#if !NBWD__KMASKED
#undef NBWD__VMASK /* the template's own fallbacks */
#undef NBWD__VMASK_FIRST
#endif
#undef NBWD__KMASKED
#if !defined(NBWD__KEEP_LAYER) /* else a second pass over the same layer follows */
#undef NBWD__VSTREAM_F32
#undef NBWD__VSTREAM_F16
#undef NBWD__VSFENCE
#undef NBWD__VMASK
#undef NBWD__VMASK_FIRST
#undef NBWD__VLOADM_F32
#undef NBWD__VLOADM_F16
#undef NBWD__VLOADM_BF16
#undef NBWD__VSTOREM_F32
#undef NBWD__VSTOREM_F16
#undef NBWD__VLOADN_F32
#undef NBWD__VLOADN_F16
#undef NBWD__VLOADN_BF16
#undef NBWD__VSTOREN_F32
#undef NBWD__VSTOREN_F16
#undef NBWD__VSTOREN_BF16
#undef NBWD__VF
#undef NBWD__VW
#undef NBWD__VZERO
#undef NBWD__VSET1
#undef NBWD__VADD
#undef NBWD__VSUB
#undef NBWD__VMUL
#undef NBWD__VFMA
#undef NBWD__VHSUM
#undef NBWD__VLOAD_F32
#undef NBWD__VSTORE_F32
#undef NBWD__VLOAD_F16
#undef NBWD__VSTORE_F16
#undef NBWD__VLOAD_BF16
#undef NBWD__RSTD_LANES
#undef NBWD__RSTD_VEC
#endif
#endif /* NBWD__KERNEL_PASS */

/*
------------------------------------------------------------------------------
This software is available under 2 licenses -- choose whichever you prefer.
------------------------------------------------------------------------------
ALTERNATIVE A - MIT License
Copyright (c) 2026 the norm_bwd authors
Permission is hereby granted, free of charge, to any person obtaining a copy of
this software and associated documentation files (the "Software"), to deal in
the Software without restriction, including without limitation the rights to
use, copy, modify, merge, publish, distribute, sublicense, and/or sell copies
of the Software, and to permit persons to whom the Software is furnished to do
so, subject to the following conditions:
The above copyright notice and this permission notice shall be included in all
copies or substantial portions of the Software.
THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
SOFTWARE.
------------------------------------------------------------------------------
ALTERNATIVE B - Public Domain (www.unlicense.org)
This is free and unencumbered software released into the public domain.
Anyone is free to copy, modify, publish, use, compile, sell, or distribute this
software, either in source code form or as a compiled binary, for any purpose,
commercial or non-commercial, and by any means.
In jurisdictions that recognize copyright laws, the author or authors of this
software dedicate any and all copyright interest in the software to the public
domain. We make this dedication in recognition of our intent to encourage
continued use of the software and to benefit the public at large and to the
detriment of our heirs and successors. We intend this dedication to be an
overt act of relinquishment in perpetuity of all present and future rights to
this software under copyright law.
------------------------------------------------------------------------------
*/
