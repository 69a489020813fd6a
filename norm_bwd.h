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
   epsilon is read only in the MEAN_VARIANCE form.

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
     optional element strides per tensor.
     args: inputs src | xhat, diff_dst, mean, variance | rstd | std, gamma,
     beta (accepted, never read); outputs diff_src, diff_gamma, diff_beta,
     each optional: a NULL output is not computed (Ascend output_mask).
     Shapes: src, xhat, diff_dst, diff_src: dims. mean, variance, rstd, std:
     the outer dims [0, axis) (trailing 1s implied). gamma, beta, diff_gamma,
     diff_beta: the N = prod(dims[axis..rank)) normalized elements, dense.
     diff_gamma/diff_beta need use_affine (else NBWD_ERR_BAD_PARAM); gamma is
     needed (use_affine) only when diff_src is requested.

   BatchNorm training backward (oneDNN Graph BatchNormTrainingBackward):
       void        nbwd_batch_norm_bwd_desc_init(desc, rank, dims, layout, eps)
       nbwd_status nbwd_batch_norm_bwd_workspace_size(desc, &bytes)
       nbwd_status nbwd_batch_norm_bwd(desc, args, workspace, workspace_bytes)
     layout NBWD_NXC (default: dims = [N, spatial..., C]) or NBWD_NCX
     (dims = [N, C, spatial...]); rank >= 2, any number of spatial dims.
     epsilon has no default: it must be > 0 and finite (MEAN_VARIANCE form).
     mean, variance|rstd, gamma, diff_gamma, diff_beta: [C], dense.
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
   tensor may have any strides (also negative or zero for inputs) on its outer
   dims; the normalized block (LayerNorm: dims [axis, rank); BatchNorm NCX: the
   spatial dims; NXC: C) must be dense, else NBWD_ERR_BAD_STRIDES. Outputs
   must not overlap themselves (NBWD_ERR_BAD_STRIDES).
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
   Every reduction is split into blocks whose size depends only on the shape,
   and blocks are combined in a fixed (pairwise) order, so a given ISA path
   returns bitwise identical results for any thread count. Different ISA paths
   may differ in the last bits (vector-lane order of the sums, FMA use).

   ============================================================================
   MEMORY
   ============================================================================
   The *_workspace_size queries return the scratch size for a descriptor (for
   any choice of outputs). Pass a workspace of at least that size, or NULL to
   let the call allocate and free it with NORM_BWD_MALLOC / NORM_BWD_FREE.

   ============================================================================
   ERRORS
   ============================================================================
   Every entry point validates all its arguments before writing anything: on
   any error no output byte is written. nbwd_status_string gives the message.

   ============================================================================
   CONFIGURATION MACROS
   ============================================================================
     NORM_BWD_IMPLEMENTATION    compile the implementation in this file
     NORM_BWD_STATIC            make every function static to this file
     NORM_BWD_MALLOC(size)      allocator (define both or neither);
     NORM_BWD_FREE(ptr)         default malloc/free
     NORM_BWD_NO_SIMD           scalar path only (norm_bwd_simd.h not needed)
     NORM_BWD_NO_SSE, NORM_BWD_NO_AVX2, NORM_BWD_NO_AVX512, NORM_BWD_NO_NEON
                                leave one SIMD path out
     NORM_BWD_HEADER_FILENAME   the path of this file, if renamed, as a string
                                (the kernels are instantiated by re-including it)
   Environment: NORM_BWD_ISA=scalar|sse|avx2|avx512|neon caps the automatic
   choice (honoured when that path is compiled in and runnable).
*/
#ifndef NBWD__KERNEL_PASS

#ifndef NORM_BWD_H_INCLUDED
#define NORM_BWD_H_INCLUDED

#include <stddef.h>
#include <stdint.h>

#ifdef NORM_BWD_STATIC
#define NBWD_API static
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
    X(NBWD_ERR_UNSUPPORTED, "not supported by this build or CPU (ISA path, or GPU support)")

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
    NBWD_ISA_COUNT = 6
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
