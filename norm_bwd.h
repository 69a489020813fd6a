/* norm_bwd.h - normalization backward kernels (LayerNorm, RMSNorm, BatchNorm training)
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
   The statistics can be given in three forms (nbwd_stats_form), or found
   by the call:
       NBWD_STATS_MEAN_VARIANCE  mean and variance, epsilon used (oneDNN, Ascend)
       NBWD_STATS_MEAN_RSTD      mean and rstd = 1/sqrt(var + eps) (PyTorch
                                 save_invstd, Apex invvar, cuDNN, llm.c)
       NBWD_STATS_XHAT_STD       the normalized input xhat in place of x, and
                                 std = sqrt(var + eps) (InfiniCore); needs no x,
                                 mean or variance
       NBWD_STATS_NONE           src alone (LayerNorm, RMSNorm, GroupNorm;
                                 ggml's rms_norm_back): the call finds each
                                 set's mean and variance (RMSNorm: mean(x^2))
                                 itself, epsilon used; see below
   epsilon is read only in the MEAN_VARIANCE and NONE forms. There rstd is
   (float)(1 / sqrt((double)variance + (double)epsilon)): one fp32 value per
   set, so the MEAN_RSTD form given that value (as f32 statistics) produces
   the same bits.
   RMSNorm (a LayerNorm row without centring: LLaMA, Mistral, Qwen, Gemma):
       rstd  = 1 / sqrt(mean(x^2) + epsilon)
       xhat  = x * rstd
       diff_src   = rstd * (g - xhat * mean(g * xhat))
       diff_gamma = sum of diff_dst * xhat;  diff_beta = sum of diff_dst
   with its statistics as NBWD_STATS_MEAN_SQUARE (mean(x^2), epsilon used:
   oneDNN's rms_norm), NBWD_STATS_RSTD (PyTorch, Liger, Transformer Engine)
   or NBWD_STATS_XHAT_STD (xhat and std = sqrt(mean(x^2) + epsilon)), or
   NBWD_STATS_NONE (src alone).
   NBWD_STATS_NONE (statistics computed in the call): for an engine that
   saves nothing from the forward. LayerNorm and RMSNorm rows: one pass
   over the row sums x - shift, its square, g and g * (x - shift)
   together (the shift: the mean of the row's first vector, so the sums
   stay small, or its first element where that vector's sum passes
   FLT_MAX; RMSNorm: 0), in f32 chains of at most 8 additions added in
   double; mean, variance, mean(g) and mean(g * xhat) follow in double
   (mean(g * xhat) = rstd * (mean(g d) - mean(d) mean(g))), the mean and
   rstd = 1/sqrt(variance + epsilon) rounded to f32 as the MEAN_VARIANCE
   form takes them; then dx as in the other forms, the row still in the
   cache. With diff_src a row's pass runs in the loop that writes the
   previous row's dx, so that its loads from memory overlap that row's
   arithmetic, as in the saved forms' loops (avx2's 16-bit rows, where
   that measured no faster, take the two loops one after the other; the
   same results). Where the shift lies more than a standard deviation
   from the mean (an outlier in the first vector), or where the squares
   about it passed FLT_MAX, the row is summed again around its mean, so
   that the variance's cancellation costs at most a factor of 2 on the
   rounding of its sums. Speed, against the
   saved-statistics call with the same outputs (bench/NOTES.md): f32
   0.91-1.05x of it (calls under 0.1 ms split over threads down to
   0.67x), 16-bit rows out of cache 0.51-0.97x (LayerNorm rows of 768
   the slowest: the saved forms keep such 16-bit rows' g and xhat in
   f32, this form converts x and dy again); rows of a few dozen
   elements 0.38-0.50x (500000 x 24 on a Zen 3: the saved forms have
   narrow-row kernels, this form takes the wide rows' loop and is still
   1.6x a ggml-style loop); diff_gamma and diff_beta add
   a pass over the row, from the cache (with them about 1.1-1.4x the
   saved call's time). GroupNorm: a pass over x before the backward
   (mean and variance by the corrected two-pass algorithm per NCX plane,
   or per NXC column around a pivot, in f32 chains of at most 8
   additions added in double; a plane's or column's first element stands
   in for its first-pass mean where that pass's sums pass FLT_MAX; a
   set's channels combined in double), one
   more read of x than the saved forms; NXC batches over 32 MiB of x and
   dy, which go a few samples at a time, find a sample's statistics just
   before its sums, so that read comes from the cache there.
   Accuracy: against the float64 statistics of the same x, the mean is
   within u |mean| + 26 u std and rstd within 13 u (u = 2^-24; worst
   cases, typically about an ulp), and dx's row scalars mean(g), mean(g
   xhat) within about an ulp (sums in double by blocks; the saved forms'
   are f32 sums over the whole row). The tests hold diff_src, diff_gamma
   and diff_beta to the saved-statistics forms' tolerances plus what that
   bound moves them by, near-constant rows and |mean| >> std included.
   Range: the sums are f32, as a saved variance is: a row (set) whose
   squared deviations add up past FLT_MAX (|x - mean| beyond about
   1e19 / sqrt(n)) has no fp32 statistics, and its diff_src and its share
   of diff_gamma come out 0 (rstd 0) or NaN; so does a LayerNorm or
   RMSNorm row whose sum of |g (x - shift)| passes FLT_MAX (g = dy *
   gamma; the saved forms sum g * xhat instead, so they reach further:
   dy * gamma of 1e20 with |x - mean| of 1e10, say); other rows and
   diff_beta are unaffected. Deterministic as the other forms: a row's (set's) bits
   never depend on the thread count or on which rows share a batch.
   LayerNorm and RMSNorm also take:
     NBWD_STATS_DST_RSTD       backward from the forward output (Apex's
                               memory-efficient mode: x need not be kept):
                               dst = y = xhat * (gamma + gamma_offset) + beta
                               and rstd; xhat = (y - beta) * (1 / (gamma +
                               gamma_offset)) in fp32 (beta NULL: 0; without
                               affine xhat = y). Where gamma + gamma_offset
                               is 0 or subnormal (|.| < FLT_MIN) y holds no
                               trace of xhat: it is taken as 0 there (times
                               y - beta, so a NaN or infinite y stays NaN),
                               so that column's diff_src lacks its
                               - rstd * xhat * mean(g * xhat) term and its
                               diff_gamma is 0 (diff_beta exact; the other
                               columns exact, as g = 0 there). Accuracy: xhat
                               carries y's rounding divided by the scale,
                               about ulp(y) / |gamma + gamma_offset| (bf16 y:
                               2^-8 relative to |y| / |scale|), against the
                               x form's ulp(x) * rstd; with f32 data and
                               scales near 1 diff_src agrees with the x
                               form's within 32 ulps of the size of its
                               terms rstd * (|g| + |mean(g)| + |xhat *
                               mean(g * xhat)|) (tested; about 12 seen).
   and a residual gradient fused into diff_src (pre-norm transformer blocks):
       diff_src = (the above) + diff_residual
   added in fp32 before the one rounding to the data type; each tensor
   crosses memory once (instead of the norm's pass and an add's).

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
     gamma_offset (default 0), epsilon (default 1e-5), stats_form, dtypes,
     flags, num_threads, isa, and optional element strides per tensor.
     Always start from desc_init (it stamps the descriptor): a zeroed or
     hand-built descriptor would not have the defaults, and every call
     refuses it (NBWD_ERR_NOT_INITIALIZED).
     args: inputs src | xhat | dst, diff_dst, mean, variance | rstd | std
     (NONE: src alone),
     gamma, beta (read only by the DST_RSTD form, optional there), and
     diff_residual (optional, needs diff_src; strides
     desc.diff_residual_strides, any outer strides as for diff_dst);
     outputs diff_src, diff_gamma, diff_beta, each optional: a NULL output
     is not computed (Ascend output_mask).
     Shapes: src, xhat, diff_dst, diff_src: dims. mean, variance, rstd, std:
     the outer dims [0, axis) (trailing 1s implied). gamma, beta, diff_gamma,
     diff_beta: dims[axis..rank) (N = their product), dense unless
     gamma_strides, beta_strides, diff_gamma_strides, diff_beta_strides give
     rank - axis strides each (entry k for dim axis + k).
     diff_gamma/diff_beta need use_affine, and without it gamma and beta are
     refused too (NBWD_ERR_BAD_PARAM: see "Arguments a call does not read");
     gamma is needed (use_affine) only when diff_src is requested (DST_RSTD:
     or diff_gamma, which needs xhat).
     gamma_offset: the forward scaled by gamma + gamma_offset (Gemma's and
     Transformer Engine's zero-centred gamma: 1); diff_src uses that scale
     (the sum rounded to float), diff_gamma is unchanged by it (the gradient
     of gamma and of gamma + offset are the same). Finite; without affine
     it must be 0 (NBWD_ERR_BAD_PARAM).

   RMSNorm backward:
       void        nbwd_rms_norm_bwd_desc_init(desc, rank, dims)
       nbwd_status nbwd_rms_norm_bwd_workspace_size(desc, &bytes)
       nbwd_status nbwd_rms_norm_bwd(desc, args, workspace, workspace_bytes)
     desc: LayerNorm's (nbwd_rms_norm_bwd_desc is nbwd_layer_norm_bwd_desc),
     every field with its LayerNorm meaning, made by the RMSNorm init (a
     descriptor made for one operation is refused by the other:
     NBWD_ERR_NOT_INITIALIZED); mean_strides is not read, var_strides gives
     the strides of mean_square, rstd or std.
     args: src | xhat | dst, diff_dst, mean_square | rstd | std, gamma, beta
     (DST_RSTD form: the bias, optional), diff_residual; outputs diff_src,
     diff_gamma, diff_beta (the gradient of an RMSNorm's bias), each
     optional. Shapes, dtypes, strides, in-place, accumulate, gamma_offset,
     the residual, threads, determinism and validation as for LayerNorm.

   BatchNorm training backward (oneDNN Graph BatchNormTrainingBackward):
       void        nbwd_batch_norm_bwd_desc_init(desc, rank, dims, layout, eps)
       nbwd_status nbwd_batch_norm_bwd_workspace_size(desc, &bytes)
       nbwd_status nbwd_batch_norm_bwd(desc, args, workspace, workspace_bytes)
     layout NBWD_NXC (dims = [N, spatial..., C]; oneDNN's default
     data_format, enum value 0) or NBWD_NCX (dims = [N, C, spatial...]);
     rank 2..NBWD_MAX_RANK: up to six spatial dims.
     epsilon has no default: it must be > 0 and finite (MEAN_VARIANCE form).
     mean, variance|rstd, gamma, diff_gamma, diff_beta: [C], dense unless
     mean_strides, var_strides, gamma_strides, diff_gamma_strides or
     diff_beta_strides give the stride between channels (one entry).
     gamma is optional (1 when absent). diff_gamma and diff_beta: both or
     neither (NBWD_ERR_BAD_PARAM otherwise); with neither, gamma is ignored,
     as the oneDNN specification says.
     Frozen statistics (flag NBWD_USE_GLOBAL_STATS: oneDNN's
     use_global_stats, PyTorch's backward in eval mode, fine-tuning with
     frozen BatchNorm): mean and variance are constants, so diff_src =
     diff_dst * gamma * rstd (gamma as in training: ignored without
     diff_gamma/diff_beta), one pass over the data instead of two when
     diff_gamma/diff_beta are not requested; diff_gamma/diff_beta as in
     training. x takes no part in diff_src (it is still read) except that a
     NaN or infinite x (or x - mean overflowing) makes its own element's
     diff_src NaN.
     A batch split over processes (SyncBatchNorm, data-parallel training):
       nbwd_status nbwd_batch_norm_bwd_reduce(desc, args, float *sum_dy,
                       float *sum_dy_xhat, int64_t *count, ws, ws_bytes)
       nbwd_status nbwd_batch_norm_bwd_apply(desc, args, const float *sum_dy,
                       const float *sum_dy_xhat, int64_t count, ws, ws_bytes)
     Each process describes its own slice of the batch (desc: its N) with the
     global mean and variance (or rstd, xhat/std). reduce writes this slice's
     per-channel sums, dense f32 [C] (sum_dy = its diff_beta, sum_dy_xhat =
     its diff_gamma, always overwritten) and *count = N * spatial size; it
     reads x (or xhat), diff_dst and the statistics, and refuses args with
     diff_src, diff_gamma or diff_beta set. The caller adds sums and counts
     over the processes (MPI_Allreduce, NCCL, ...) and passes the totals to
     apply, which writes this slice's diff_src with count as the batch
     size, and diff_gamma/diff_beta (optional, both or neither; the flag
     NBWD_ACCUMULATE_PARAM_GRADS applies) from the global sums: the same
     as one call over the whole batch, short of the order of the sums
     (about an ulp of them per addition). count must be >= this slice's
     own count. Both take the same workspace as nbwd_batch_norm_bwd, every
     layout, stride, dtype and form, and NBWD_USE_GLOBAL_STATS (then dx
     does not depend on the sums). The sums may not overlap any tensor of
     the call (NBWD_ERR_BAD_ALIAS). examples/sync_batch_norm.c shows the
     pattern with MPI (LayerNorm and RMSNorm need no such split: each
     process all-reduces diff_gamma and diff_beta alone).
     A forward that ended in a ReLU (oneDNN's fuse_norm_relu; ResNet's
     conv-BN-ReLU blocks): flag NBWD_FUSE_RELU and args.dst, the forward
     output after the ReLU (data dtype, desc.dst_strides: any strides).
     diff_dst counts only where dst > 0: every output is that of the plain
     call on the masked diff_dst (dy where dst > 0, else +0; dst NaN or -0
     counts as clipped), bit for bit. NBWD_FUSE_ADD_RELU (oneDNN's
     fuse_norm_add_relu: the ReLU followed a residual add) also writes the
     added tensor's gradient, the masked diff_dst, to args.diff_src_add
     (required; data dtype, desc.diff_src_add_strides, whose channels (NXC)
     or spatial dims (NCX) must be dense, as diff_src's); the kernels then
     read it from there. How the mask is found: on NXC (or [N, C]) data
     with dst's channels dense, in nbwd_batch_norm_bwd with diff_src and
     both passes (not frozen statistics without diff_gamma), on the avx2,
     avx512 and neon paths (not 32-bit Arm's f16 data), with C a multiple
     of 8, 16 and 4 there and over 32, 64 and 16 (or of any size when the
     tensor is over NORM_BWD_STREAM_BYTES), the first pass reads dst beside
     diff_dst and keeps the mask, one bit per element, in the workspace for
     the second: dst is read once and NBWD_FUSE_RELU stages nothing; so
     does NBWD_FUSE_ADD_RELU on f32 data whose diff_src_add has diff_dst's
     strides, its first pass writing diff_src_add too. On NCX data with
     diff_dst's and dst's spatial dims dense (not in the two-phase calls,
     nor with fewer channels than threads) the masked diff_dst is staged a
     block of channels at a time, just before the block's passes read it
     back from the cache: NBWD_FUSE_ADD_RELU's in diff_src_add,
     NBWD_FUSE_RELU's in a block-sized slot of the workspace per thread.
     Otherwise (NXC on sse
     and scalar, 16-bit add + ReLU on NXC, the two-phase calls, ...) a pass
     of its own stages it for the whole tensor, in diff_src_add, else
     diff_src (not when that is src or xhat), else the workspace: one pass
     over dy and dst more than the plain call. The size query counts N *
     spatial * C elements more for NBWD_FUSE_RELU, and for
     NBWD_FUSE_ADD_RELU on f32 NXC data the bits (2 bytes per 4 channels of
     a row); a call that allocates its own takes only what it uses (none
     when it stages in diff_src). The flags hold for the
     two-phase calls too: both mask, and with NBWD_FUSE_ADD_RELU both write
     diff_src_add (the same values). diff_src_add may be exactly diff_dst
     or dst (not dst in the two-phase calls: reduce's output would replace
     apply's mask), diff_src exactly dst (in place); the flags are exclusive.

   GroupNorm and InstanceNorm backward (PyTorch's native_group_norm_backward):
       void        nbwd_group_norm_bwd_desc_init(desc, rank, dims, layout,
                                                 groups, eps)
       nbwd_status nbwd_group_norm_bwd_workspace_size(desc, &bytes)
       nbwd_status nbwd_group_norm_bwd(desc, args, workspace, workspace_bytes)
     layout NBWD_NCX (dims = [N, C, spatial...]) or NBWD_NXC ([N,
     spatial..., C]); rank 2..NBWD_MAX_RANK. The channels fall into groups of
     C / groups consecutive channels (groups >= 1 must divide C, and N x
     groups stay within the element limit even where C = 0: NBWD_ERR_BAD_PARAM
     otherwise); a set is one sample's group, K = C / groups * spatial
     elements, normalized together: xhat = (x - mean) * rstd, g = dy *
     gamma[c], diff_src = rstd * (g - mean(g) - xhat * mean(g * xhat)) over
     the set; diff_gamma[c] = sum dy * xhat, diff_beta[c] = sum dy over the
     samples and spatial positions. InstanceNorm is groups = C (a set is one
     channel's plane of one sample); LayerNorm over [C, spatial...] with a
     per-channel gamma is groups = 1. Statistics [N, groups] (mean_strides,
     var_strides: two entries, sample and group; NULL dense) in any of
     LayerNorm's four forms: MEAN_VARIANCE (epsilon, desc_init's eps, > 0
     and finite: no default), MEAN_RSTD, XHAT_STD (args.xhat, args.std)
     and DST_RSTD (args.dst, the forward output, with args.rstd: xhat =
     (dst - beta[c]) * (1 / gamma[c]) in fp32, beta optional; where gamma[c]
     is 0 or subnormal xhat is taken as 0 there, as LayerNorm's), or none:
     NBWD_STATS_NONE (args.src alone, epsilon used: see WHAT IS COMPUTED;
     a NaN or infinity in x then makes its whole set's statistics, so its
     set's diff_src and its group's diff_gamma, non-finite). use_affine (default 1):
     gamma [C], needed when diff_src is asked for (DST_RSTD: or diff_gamma);
     diff_gamma and diff_beta [C] optional, each on its own; use_affine = 0
     means gamma = 1 and no gamma gradients (NBWD_ERR_BAD_PARAM if gamma,
     beta or a gamma gradient is given). The [C] tensors take one stride entry each. Data strides: any,
     except that the spatial dims (NCX) or the channels (NXC) must be dense
     (NBWD_ERR_BAD_STRIDES); diff_src may be exactly src (xhat, dst) or
     diff_dst (in place). Flag NBWD_ACCUMULATE_PARAM_GRADS; every dtype
     combination, threads and determinism as for BatchNorm: the same bits
     for any thread count. A NaN or infinity changes only its own set's
     diff_src and its channel's diff_gamma/diff_beta.

   Conversions (round to nearest even; NaN stays NaN; narrowing, and
   widening f16, give a quiet NaN, as F16C and Arm's FCVT do; bf16 widening
   keeps every bit; infinities and f16 subnormals exact):
       float    nbwd_bf16_to_f32(uint16_t)   uint16_t nbwd_f32_to_bf16(float)
       float    nbwd_f16_to_f32(uint16_t)    uint16_t nbwd_f32_to_f16(float)
       void     nbwd_bf16_to_f32_n(const uint16_t *, float *, int64_t n) and
                nbwd_f32_to_bf16_n, nbwd_f16_to_f32_n, nbwd_f32_to_f16_n
     (32-bit x86 returns a float in an x87 register, which quiets a
     signalling NaN: there nbwd_bf16_to_f32 returns it with the quiet bit
     set; nbwd_bf16_to_f32_n keeps every bit.)
   Dispatch (NBWD_ISA_AUTO, _SCALAR, _SSE, _AVX2, _AVX512, _AVX512_BF16,
   _NEON, _NEON_BF16; NBWD_ISA_COUNT counts them; SIMD AND DISPATCH):
       const char *nbwd_isa_name(nbwd_isa)   nbwd_isa nbwd_active_isa(void)
       nbwd_status nbwd_force_isa(nbwd_isa)  int nbwd_isa_supported(nbwd_isa)
   Errors:
       const char *nbwd_status_string(nbwd_status)
       const char *nbwd_last_error(void)     this thread's last rejection, in words
   Version: the macros NBWD_VERSION_MAJOR and NBWD_VERSION_MINOR.

   ============================================================================
   DATA TYPES
   ============================================================================
     data (src, xhat, dst, diff_dst,        stats (mean, var/rstd/std)   params
           diff_src, diff_residual,
           diff_src_add)
     f32                                    f32                          f32
     bf16                                   f32 or bf16                  f32 or bf16
     f16                                    f32 or f16                   f32 or f16
   "params" are gamma, beta, diff_gamma and diff_beta. The descriptor's
   data_dtype, stats_dtype and param_dtype (NBWD_F32, NBWD_BF16, NBWD_F16;
   each f32 by default) name the three columns. Stats and params are
   chosen independently. f16 stats and params follow the Ascend document
   (same width as the data). Any other combination: NBWD_ERR_BAD_DTYPE.
   All arithmetic is fp32 (per-row and per-channel scalars in fp64); 16-bit
   values are widened on load and rounded to nearest even on store. The
   intermediates are fp32 too, so a row's (set's, channel's) diff_src can
   come out infinite or NaN where its value would be finite if one of
   them passes FLT_MAX: g = dy * gamma, a row's sums of g and g * xhat,
   GroupNorm's folded term (mean(g) + xhat mean(g xhat)) / gamma (a
   channel where mean(g) / gamma or mean(g xhat) / gamma alone is not
   finite takes the unfolded path; their sum can still pass FLT_MAX).
   BatchNorm's per-channel scale rstd * gamma is one fp32 value:
   below FLT_MIN (a subnormal) it keeps fewer than 24 bits. None of these
   arise unless some |dy * gamma| or |x - mean| * |dy * gamma| is beyond
   about 1e30, or (GroupNorm) a channel's |mean(g) / gamma| or |mean(g
   xhat) / gamma| comes near FLT_MAX.

   ============================================================================
   STRIDES, ALIASING, ZERO SIZES
   ============================================================================
   Strides are in elements; a NULL stride array means dense row-major. The
   data tensors' arrays (rank entries) are desc.src_strides (src, or the
   form's xhat or dst), diff_dst_strides, diff_src_strides and, where they
   exist, diff_residual_strides, dst_strides and diff_src_add_strides. Each
   data tensor may have any strides (also negative or zero for inputs) on its
   outer dims; the normalized block (LayerNorm: dims [axis, rank); BatchNorm
   NCX: the spatial dims; NXC: C) must be dense, else NBWD_ERR_BAD_STRIDES.
   BatchNorm [N, C] (rank 2, either layout) takes any strides on both dims:
   channels that are not dense (a column-major tensor) are copied through
   small tiles, several times slower than dense ones.
   Statistics and parameter tensors may have any strides on all their dims.
   Strides never change results: the algorithm and every reduction order
   depend on the shape and dtypes alone, so any layout of any tensor gives
   the bits of the dense call.
   Outputs must not overlap themselves (NBWD_ERR_BAD_STRIDES).
   diff_src may be the very same tensor as diff_dst, src, xhat, dst or
   diff_residual (same pointer and strides: in-place backward; diff_src =
   diff_residual accumulates into the residual stream's gradient). An output
   that shares a byte with any other tensor is NBWD_ERR_BAD_ALIAS. Tensors may interleave without
   sharing a byte (diff_gamma and diff_beta at p and p + 1 with stride 2;
   diff_src rows between diff_dst rows): this is checked element by element
   where the two have the same dims, element size and strides; otherwise
   their byte ranges (lowest to highest element) must not overlap. Inputs a
   call does not read (ERRORS AND GUARANTEES: "Arguments a call does not
   read") are not checked: beta (except in the DST_RSTD form); LayerNorm's
   gamma without diff_src (DST_RSTD: and diff_gamma); BatchNorm's gamma
   without diff_gamma/diff_beta.
   A dimension of size 0 is allowed: no rows (or no batch) gives diff_gamma =
   diff_beta = 0 (or leaves them unchanged in accumulate mode); tensors with
   no elements may be NULL (or any pointer: they are not touched). An empty
   problem needs no workspace (the size query returns 0) and allocates
   nothing, whatever its other dims.

   ============================================================================
   FLAGS
   ============================================================================
     NBWD_ACCUMULATE_PARAM_GRADS   diff_gamma += ..., diff_beta += ... (for
                                   gradient accumulation over micro-batches);
                                   the default overwrites.
     NBWD_ACCUMULATE_DIFF_SRC      LayerNorm, RMSNorm: diff_src += the input
                                   gradient (llm.c's dinp +=, a residual
                                   stream's gradient): the diff_residual
                                   route with diff_src as the residual (f32
                                   sum, one rounding), so not together with
                                   args.diff_residual (NBWD_ERR_BAD_PARAM).
                                   Without it diff_src is overwritten;
                                   BatchNorm and GroupNorm always overwrite
                                   (they refuse the flag).
     NBWD_USE_GLOBAL_STATS         BatchNorm: frozen mean and variance (see
                                   BatchNorm above); LayerNorm and RMSNorm
                                   refuse it.
     NBWD_FUSE_RELU,               BatchNorm: the forward's ReLU (after an
     NBWD_FUSE_ADD_RELU            add), args.dst and args.diff_src_add (see
                                   BatchNorm above); one or the other.

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
   the tests check against a float64 reference. (A LayerNorm row or NCX
   plane whose |mean| * rstd passes FLT_MAX, a set constant near 1e38 say,
   and whose length is not a multiple of the path's vector runs on the
   scalar kernels, whatever the path: the lanes past its end would make
   the vector sums NaN.) This holds in any C dialect
   and with any -ffp-contract under gcc (the implementation turns gcc's
   floating-point contraction off: GNU C's default would fuse a multiply and
   an add into an FMA differently in different inlined copies of a kernel;
   not through nvcc, which rejects the pragma) and under clang's default
   (clang's -ffp-contract=fast disregards pragmas: not covered). The file
   that defines NORM_BWD_IMPLEMENTATION must not be compiled with -ffast-math
   or -ffinite-math-only (they reorder the sums and assume there is no NaN):
   the header stops such a build with an #error that says so; files that only
   call the library may use them.

   ============================================================================
   MEMORY
   ============================================================================
   The *_workspace_size queries return the scratch size for a descriptor (for
   any choice of outputs). Pass a workspace of at least that size, or NULL to
   let the call allocate and free it with NORM_BWD_MALLOC / NORM_BWD_FREE.
   LayerNorm and RMSNorm rows of the DST_RSTD form with affine, and those
   of the NONE form with a residual gradient, go a few at a time through
   the workspace in f32 (each tensor still crosses memory once; a residual
   gradient is otherwise added in the kernels' own pass over the row): up
   to 64 slots (one per thread at work, at most one per row block) of up
   to 8 rows and about 64 KiB (or one row), which also caps such calls at
   64 threads. The size query of those two forms includes the slots (it
   cannot know whether a call will pass a residual); a call that allocates
   its own workspace takes them only when it stages.
   Stack: a call uses about 15 KiB of the calling thread's stack and 12 KiB
   of each OpenMP worker's (gcc 12 -O2, -fstack-usage), 8.5 KiB of it the f32
   copy of one bf16/f16 LayerNorm row of up to 1024 elements that the kernels
   keep between the row's sums and its dx (f32 data: about 5 KiB), or the
   8 KiB of tiles that BatchNorm [N, C] with strided channels goes through.

   ============================================================================
   ERRORS AND GUARANTEES
   ============================================================================
   Every entry point validates all its arguments before writing anything: on
   any error no output byte is written. Statuses (nbwd_status; NBWD_OK = 0):
   NBWD_ERR_NULL_POINTER (a required pointer is NULL), _BAD_PARAM, _BAD_SHAPE,
   _BAD_DTYPE, _BAD_STRIDES, _BAD_ALIAS, _INSUFFICIENT_WORKSPACE (smaller than
   the size query's), _OUT_OF_MEMORY (the call's own workspace), _UNSUPPORTED
   (a path or GPU that is not there), _DEVICE (a CUDA call failed:
   norm_bwd_gpu.h) and _NOT_INITIALIZED; NBWD_STATUS_COUNT counts them.
   nbwd_status_string gives the status's meaning; nbwd_last_error() says what
   exactly was wrong in the calling thread's most recent call that failed: the
   entry point, the status, the field or argument, its value and what was
   expected, e.g.
     nbwd_layer_norm_bwd: NBWD_ERR_BAD_PARAM: args.rstd is set but
     desc.stats_form is NBWD_STATS_MEAN_VARIANCE, which does not read it: set
     stats_form = NBWD_STATS_MEAN_RSTD or pass the form's own inputs
   A call that succeeds clears it (""). NORM_BWD_VERBOSE=1 in the
   environment prints every rejection to stderr as "norm_bwd: <message>";
   =2 also prints one line per LayerNorm/RMSNorm/BatchNorm/GroupNorm call:
   operation, shape, dtypes, statistics form, outputs, path, thread limit,
   time (the variable is read once, with the CPU detection).
   Arguments a call does not read, one rule: a pointer to something the
   descriptor says is not there is refused (NBWD_ERR_BAD_PARAM), as a sign
   that the descriptor and the arguments disagree: another statistics
   form's inputs (mean in the XHAT_STD form, variance in the NONE form, ...)
   and, with use_affine = 0, gamma, beta, diff_gamma and diff_beta. A
   pointer to something the descriptor has but this call happens not to
   need is taken and ignored (neither read nor checked): beta outside the
   DST_RSTD form, gamma when diff_src is not asked for (DST_RSTD: nor
   diff_gamma), and BatchNorm's gamma without diff_gamma/diff_beta (oneDNN's
   rule; BatchNorm has no use_affine: gamma absent means 1).
   Sizes: all index arithmetic is 64-bit (tensors beyond 2^31 elements work);
   the product of the non-zero dims may be at most INT64_MAX / 16, larger or
   overflowing shapes are NBWD_ERR_BAD_SHAPE, overflowing stride extents
   NBWD_ERR_BAD_STRIDES.
   NaN/Inf: propagated, never masked, never across sets: a bad value in one
   LayerNorm or RMSNorm row (x, dy, its statistics) changes only that row's
   diff_src and the diff_gamma/diff_beta entries it feeds (one in
   diff_residual: only its own diff_src element); a bad value in one
   BatchNorm channel changes only that channel's outputs. Variance = +Inf
   gives rstd = 0 and diff_src = 0 for that set.
   Threads: no global state but the cached CPU detection and the forced path
   (written atomically), and per thread the last error message (thread-local
   storage where the compiler has it: C++11, gcc, clang, MSVC, C11);
   concurrent calls on different data are safe and give the same bits as
   serial ones.

   ============================================================================
   CONFIGURATION MACROS
   ============================================================================
     NORM_BWD_IMPLEMENTATION    compile the implementation in this file
     NORM_BWD_STATIC            make every function static to this file
     NORM_BWD_MALLOC(size)      allocator (define both or neither);
     NORM_BWD_FREE(ptr)         default malloc/free
     NORM_BWD_NO_SIMD           scalar path only (norm_bwd_simd.h not needed;
                                then plain C99 is enough: no intrinsics,
                                inline assembly or GNU builtins, e.g. tcc)
     NORM_BWD_NO_SSE, NORM_BWD_NO_AVX2, NORM_BWD_NO_AVX512, NORM_BWD_NO_NEON,
     NORM_BWD_NO_AVX512_BF16, NORM_BWD_NO_NEON_BF16
                                leave one SIMD path out (and its compile
                                time: see COMPILE COST)
     NORM_BWD_HEADER_FILENAME   the path of this file, if renamed, as a string
                                (the kernels are instantiated by re-including it)
     NORM_BWD_STREAM_BYTES      diff_src of at least this many bytes is written
                                with non-temporal stores (default 8 MiB; not
                                BatchNorm NCX planes under 1 KiB, nor NXC
                                rows over NBWD_FUSE_RELU's masked diff_dst
                                staged in diff_src), and so is the
                                diff_src_add that NBWD_FUSE_ADD_RELU's first
                                NXC pass writes; from this size on, the
                                fused ReLU's narrow NXC rows keep the mask
                                as bits too (see BatchNorm)
     NORM_BWD_IDE               editors: where this file itself is the file
                                parsed (clangd, Qt Creator, Eclipse, CLion
                                and Visual Studio are recognised without it),
                                the implementation and the kernel template
                                read as live code; where it is included, no
                                effect
     NORM_BWD_SIMD_EMULATE      tests only: avx2/avx512/neon spelled with SIMDe
                                emulation, runnable on any x86 CPU when named
   Environment: NORM_BWD_ISA=scalar|sse|avx2|avx512|avx512_bf16|neon|neon_bf16
   (either case) replaces the automatic choice. A name that is no path, or a
   path that is not compiled in or cannot run on this CPU, makes
   NBWD_ISA_AUTO calls return NBWD_ERR_UNSUPPORTED (never a silent
   substitute), nbwd_last_error() names the variable and the paths that can
   run, and nbwd_active_isa() returns NBWD_ISA_AUTO; the _n conversions, which
   return no status, then run the scalar loop (the same bits).
   NORM_BWD_VERBOSE=1|2: see ERRORS AND GUARANTEES.
   Building: without norm_bwd_simd.h next to this file (or on the include
   path) the implementation stops with an #error that names it and
   NORM_BWD_NO_SIMD (compilers with __has_include).

   ============================================================================
   SIMD AND DISPATCH
   ============================================================================
   Paths: scalar (portable C), sse (SIMDe, SSE2; NEON-translated on AArch64;
   SIMD128 on WebAssembly built with -msimd128, chosen by the build; on
   32-bit x86 only in builds with SSE2 enabled),
   avx2 (+FMA, F16C), avx512 (F, BW, VL, DQ), avx512_bf16 (avx512's kernels
   narrowing to bf16 with VCVTNEPS2BF16), neon (AArch64; and 32-bit Arm
   Linux with a hard-float ABI, Armv7+, NEON and VFPv4 by HWCAP, compiled by
   gcc, or by clang with -mfpu=neon-vfpv4), neon_bf16 (neon's kernels
   narrowing with BFCVTN, Armv8.6 BF16). On 32-bit Arm the neon path takes
   f32 and bf16 data (f16: the scalar kernels), and, as Advanced SIMD always
   does there, flushes subnormal floats to zero and returns the default NaN
   (no payload): choose scalar where subnormals matter. The sse path runs
   every data type in SSE2 (f16 conversions by F16C where the build enables
   it, else in SSE2 integer code). All give the same bf16 bits as their
   narrowing would without special instructions (VCVTNEPS2BF16 flushes f32
   denormals, so vectors holding one, found by VFPCLASSPS, take the integer
   rounding); all
   assume the default floating-point environment (nearest even, no FTZ/DAZ;
   32-bit Arm's neon: above). Where sse (x86-64) or neon (AArch64) always
   runs, the scalar path is a reference that only a forced choice reaches:
   gcc compiles its kernels at -O1 there (the same values, NaN payloads
   aside; bf16 rows take about 1.3-1.7x the time they took at -O2), so
   that the compile time goes to the paths that run.
   x86 kernels carry target attributes, so a plain `cc -O2` build holds them
   all; the first call detects the CPU (cpuid + xgetbv for OS state; NEON is
   baseline on AArch64, getauxval(AT_HWCAP2) tells BF16, AT_HWCAP on
   32-bit Arm NEON and VFPv4) and caches the
   choice. The bulk conversion helpers run on the chosen path too. Choose a
   path per call with desc.isa, per process with nbwd_force_isa(), or with
   NORM_BWD_ISA. The kernels exist once, in the KERNEL TEMPLATE section of
   this file, compiled per path against a small vector layer (operations
   and facts: norm_bwd_simd.h) and, for what stores data, once per data
   format (f32; bf16 and f16; bf16 by the path's bf16 instruction). Which
   compiled kernel runs for an operation, path and data type is written out
   in one table per path (KERNEL TABLES). The
   x86 paths compile with gcc, clang, clang-cl and MSVC, which needs no
   target attributes and gets no avx512_bf16 path (its branch is compiled
   by clang-cl posing as MSVC in `make test-ports`, not by MSVC itself).

   ============================================================================
   COMPILE COST
   ============================================================================
   The file that defines NORM_BWD_IMPLEMENTATION, with every x86 path, takes
   about 8.0 s of CPU and 373 MB with gcc 12 -O2, scaled to a Zen 4 (a Zen 3:
   about twice the time; clang 14: 7.1-7.6 s in recent runs on a Zen 3, 9.0 s
   once on a Zen 5, its timing the least steady, 153 MB), and 0.6-1.4 s at -O0
   and -O0 -g (helpers are forced inline only when optimizing, so a debug
   build calls them); other files pay for the declarations alone. Each
   NORM_BWD_NO_* switch takes its path's share off: at -O2 with gcc, avx512
   (and with it avx512_bf16, which runs its kernels) about 2.3 s, avx2 (and
   both AVX-512 paths) 4.0 s, sse 2.0 s, avx512_bf16 alone 0.7 s (the kernels
   that narrow with its instruction); NORM_BWD_NO_SIMD leaves about 1.4 s.
   `make compile-cost` measures it.
*/
#if !defined(NBWD__KERNEL_PASS)

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
    X(NBWD_ERR_BAD_ALIAS, "an output shares bytes with another tensor (diff_src may be exactly diff_dst, src, xhat, dst or diff_residual)") \
    X(NBWD_ERR_INSUFFICIENT_WORKSPACE, "workspace smaller than the size query returned")      \
    X(NBWD_ERR_OUT_OF_MEMORY, "workspace allocation failed")                                  \
    X(NBWD_ERR_UNSUPPORTED, "not supported by this build or machine (ISA path, or no GPU/driver)") \
    X(NBWD_ERR_DEVICE, "a GPU runtime call failed (nbwd_gpu_last_error() has the CUDA message)") \
    X(NBWD_ERR_NOT_INITIALIZED, "descriptor not made by its *_desc_init function (a zeroed one has no defaults)")

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
    NBWD_STATS_XHAT_STD = 2,      /* xhat = (x - mean) * rstd, std = sqrt(variance + epsilon) */
    NBWD_STATS_DST_RSTD = 3,      /* LayerNorm, RMSNorm, GroupNorm: the forward output dst = xhat * gamma + beta,
                                     and rstd */
    NBWD_STATS_NONE = 4,          /* LayerNorm, RMSNorm, GroupNorm: src alone; the call computes the statistics
                                     (mean and variance; RMSNorm: the mean square), epsilon used */
    /* RMSNorm's names for its first two forms (it has no mean) */
    NBWD_STATS_MEAN_SQUARE = 0,   /* mean_square = mean(x^2); rstd = 1/sqrt(mean_square + epsilon) */
    NBWD_STATS_RSTD = 1           /* rstd = 1/sqrt(mean(x^2) + epsilon) */
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
/* BatchNorm only: mean and variance are constants (oneDNN's use_global_stats,
   PyTorch's backward in eval mode): diff_src = diff_dst * gamma * rstd */
#define NBWD_USE_GLOBAL_STATS 2u
/* BatchNorm only, one or the other: the forward ended in a ReLU (oneDNN's
   fuse_norm_relu) whose output args.dst is given; diff_dst counts only where
   dst > 0. ADD_RELU (oneDNN's fuse_norm_add_relu): the ReLU followed an add,
   and args.diff_src_add receives the added tensor's gradient (the masked
   diff_dst). */
#define NBWD_FUSE_RELU 4u
#define NBWD_FUSE_ADD_RELU 8u
/* LayerNorm and RMSNorm: diff_src += the gradient (diff_src is read: an
   engine that adds each use's gradient into one tensor, as llm.c does) */
#define NBWD_ACCUMULATE_DIFF_SRC 16u

typedef struct nbwd_layer_norm_bwd_desc {
    int rank;                       /* 1..NBWD_MAX_RANK */
    int64_t dims[NBWD_MAX_RANK];
    int64_t begin_norm_axis;        /* [-rank, rank-1], default -1 */
    int use_affine;                 /* default 1 */
    float epsilon;                  /* default 1e-5; read in the MEAN_VARIANCE and NONE forms */
    nbwd_stats_form stats_form;     /* default NBWD_STATS_MEAN_VARIANCE */
    nbwd_dtype data_dtype;          /* src, xhat, diff_dst, diff_src; default f32 */
    nbwd_dtype stats_dtype;         /* mean, variance, rstd, std; default f32 */
    nbwd_dtype param_dtype;         /* gamma, beta, diff_gamma, diff_beta; default f32 */
    unsigned flags;                 /* NBWD_ACCUMULATE_PARAM_GRADS, NBWD_ACCUMULATE_DIFF_SRC */
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
    const int64_t *beta_strides;     /* beta is read only in the DST_RSTD form */
    const int64_t *diff_gamma_strides;
    const int64_t *diff_beta_strides;
    unsigned init_stamp; /* set by desc_init: calls refuse a descriptor without it */
    /* Fields added later go here, after the original ones. */
    float gamma_offset; /* default 0: the scale is gamma + gamma_offset (1: zero-centred gamma) */
    const int64_t *diff_residual_strides; /* rank entries, NULL = dense */
} nbwd_layer_norm_bwd_desc;

typedef struct nbwd_layer_norm_bwd_args {
    const void *src;       /* x: MEAN_VARIANCE, MEAN_RSTD and NONE forms */
    const void *xhat;      /* normalized input: XHAT_STD form */
    const void *diff_dst;  /* required */
    const void *mean;      /* MEAN_VARIANCE and MEAN_RSTD forms */
    const void *variance;  /* MEAN_VARIANCE form */
    const void *rstd;      /* MEAN_RSTD and DST_RSTD forms: 1/sqrt(variance + epsilon) */
    const void *std;       /* XHAT_STD form: sqrt(variance + epsilon) */
    const void *gamma;     /* use_affine, and diff_src requested (DST_RSTD: or diff_gamma) */
    const void *beta;      /* DST_RSTD form with use_affine: optional (NULL: no bias); else not read */
    void *diff_src;        /* optional output */
    void *diff_gamma;      /* optional output (use_affine) */
    void *diff_beta;       /* optional output (use_affine) */
    /* Fields added later go here. */
    const void *dst;           /* DST_RSTD form: the forward output (strides: src_strides) */
    const void *diff_residual; /* optional, with diff_src: added to it (a pre-norm block's residual gradient) */
} nbwd_layer_norm_bwd_args;

/* RMSNorm takes LayerNorm's descriptor, made by nbwd_rms_norm_bwd_desc_init
   (mean_strides is not read; var_strides: mean_square, rstd or std). */
typedef nbwd_layer_norm_bwd_desc nbwd_rms_norm_bwd_desc;

typedef struct nbwd_rms_norm_bwd_args {
    const void *src;         /* x: MEAN_SQUARE, RSTD and NONE forms */
    const void *xhat;        /* x * rstd: XHAT_STD form */
    const void *diff_dst;    /* required */
    const void *mean_square; /* MEAN_SQUARE form: mean(x^2) */
    const void *rstd;        /* RSTD and DST_RSTD forms: 1/sqrt(mean(x^2) + epsilon) */
    const void *std;         /* XHAT_STD form: sqrt(mean(x^2) + epsilon) */
    const void *gamma;       /* use_affine, and diff_src requested (DST_RSTD: or diff_gamma) */
    void *diff_src;          /* optional output */
    void *diff_gamma;        /* optional output (use_affine) */
    void *diff_beta;         /* optional output (use_affine): sum diff_dst, for RMSNorm with a bias */
    /* Fields added later go here. */
    const void *beta;          /* DST_RSTD form with use_affine: the bias, optional (NULL: none) */
    const void *dst;           /* DST_RSTD form: the forward output (strides: src_strides) */
    const void *diff_residual; /* optional, with diff_src: added to it */
} nbwd_rms_norm_bwd_args;

typedef struct nbwd_batch_norm_bwd_desc {
    int rank;                       /* 2..NBWD_MAX_RANK */
    int64_t dims[NBWD_MAX_RANK];    /* NXC: [N, X..., C]; NCX: [N, C, X...] */
    nbwd_layout layout;             /* default NBWD_NXC */
    float epsilon;                  /* required > 0 in the MEAN_VARIANCE form */
    nbwd_stats_form stats_form;
    nbwd_dtype data_dtype, stats_dtype, param_dtype;
    unsigned flags;                 /* NBWD_ACCUMULATE_PARAM_GRADS, NBWD_USE_GLOBAL_STATS,
                                       NBWD_FUSE_RELU or NBWD_FUSE_ADD_RELU */
    int num_threads;
    nbwd_isa isa;
    /* Element strides of the data tensors (rank entries, NULL = dense). */
    const int64_t *src_strides;      /* src, or xhat in the XHAT_STD form */
    const int64_t *diff_dst_strides;
    const int64_t *diff_src_strides;
    const int64_t *dst_strides;          /* the fused ReLU's forward output */
    const int64_t *diff_src_add_strides; /* NBWD_FUSE_ADD_RELU's output */
    /* The [C] tensors: one entry each, the stride between channels; NULL = 1. */
    const int64_t *mean_strides;
    const int64_t *var_strides;      /* variance, rstd or std */
    const int64_t *gamma_strides;
    const int64_t *diff_gamma_strides;
    const int64_t *diff_beta_strides;
    unsigned init_stamp; /* set by desc_init: calls refuse a descriptor without it */
} nbwd_batch_norm_bwd_desc;

typedef struct nbwd_batch_norm_bwd_args {
    const void *src, *xhat, *diff_dst;
    const void *mean, *variance, *rstd, *std; /* [C] each, as in the LayerNorm args */
    const void *gamma;                        /* optional [C] */
    void *diff_src;                           /* output */
    void *diff_gamma, *diff_beta;             /* optional [C] outputs, both or neither */
    const void *dst;                          /* NBWD_FUSE_(ADD_)RELU: the forward output */
    void *diff_src_add;                       /* NBWD_FUSE_ADD_RELU: output, the masked diff_dst */
} nbwd_batch_norm_bwd_args;

typedef struct nbwd_group_norm_bwd_desc {
    int rank;                       /* 2..NBWD_MAX_RANK */
    int64_t dims[NBWD_MAX_RANK];    /* NCX: [N, C, X...]; NXC: [N, X..., C] */
    nbwd_layout layout;             /* NBWD_NCX or NBWD_NXC, as given to desc_init */
    int64_t groups;                 /* >= 1, divides C; groups = C is InstanceNorm */
    int use_affine;                 /* default 1: gamma, diff_gamma, diff_beta [C] */
    float epsilon;                  /* MEAN_VARIANCE and NONE forms: > 0 and finite */
    nbwd_stats_form stats_form;     /* any of LayerNorm's five (NONE included) */
    nbwd_dtype data_dtype, stats_dtype, param_dtype;
    unsigned flags;                 /* NBWD_ACCUMULATE_PARAM_GRADS */
    int num_threads;
    nbwd_isa isa;
    /* Element strides of the data tensors (rank entries, NULL = dense). */
    const int64_t *src_strides;      /* src, xhat (XHAT_STD) or dst (DST_RSTD) */
    const int64_t *diff_dst_strides;
    const int64_t *diff_src_strides;
    /* The [N, groups] statistics: two entries each (sample, group); NULL = dense. */
    const int64_t *mean_strides;
    const int64_t *var_strides;      /* variance, rstd or std */
    /* The [C] parameters: one entry each, the stride between channels; NULL = 1. */
    const int64_t *gamma_strides;
    const int64_t *beta_strides;     /* read only in the DST_RSTD form */
    const int64_t *diff_gamma_strides;
    const int64_t *diff_beta_strides;
    unsigned init_stamp; /* set by desc_init: calls refuse a descriptor without it */
} nbwd_group_norm_bwd_desc;

typedef struct nbwd_group_norm_bwd_args {
    const void *src;       /* x: MEAN_VARIANCE, MEAN_RSTD and NONE forms */
    const void *xhat;      /* XHAT_STD form */
    const void *dst;       /* DST_RSTD form: the forward output xhat * gamma + beta */
    const void *diff_dst;  /* required */
    const void *mean;      /* [N, groups]: MEAN_VARIANCE and MEAN_RSTD forms */
    const void *variance;  /* [N, groups]: MEAN_VARIANCE form */
    const void *rstd;      /* [N, groups]: MEAN_RSTD and DST_RSTD forms */
    const void *std;       /* [N, groups]: XHAT_STD form */
    const void *gamma;     /* [C], use_affine: needed with diff_src (DST_RSTD: or diff_gamma) */
    const void *beta;      /* [C], DST_RSTD form with use_affine: optional (NULL: no bias) */
    void *diff_src;        /* optional output */
    void *diff_gamma;      /* optional output (use_affine) */
    void *diff_beta;       /* optional output (use_affine) */
} nbwd_group_norm_bwd_args;

NBWD_API void nbwd_layer_norm_bwd_desc_init(nbwd_layer_norm_bwd_desc *desc, int rank, const int64_t *dims);
NBWD_API nbwd_status nbwd_layer_norm_bwd_workspace_size(const nbwd_layer_norm_bwd_desc *desc, size_t *bytes);
NBWD_API nbwd_status nbwd_layer_norm_bwd(const nbwd_layer_norm_bwd_desc *desc, const nbwd_layer_norm_bwd_args *args,
                                         void *workspace, size_t workspace_bytes);

NBWD_API void nbwd_rms_norm_bwd_desc_init(nbwd_rms_norm_bwd_desc *desc, int rank, const int64_t *dims);
NBWD_API nbwd_status nbwd_rms_norm_bwd_workspace_size(const nbwd_rms_norm_bwd_desc *desc, size_t *bytes);
NBWD_API nbwd_status nbwd_rms_norm_bwd(const nbwd_rms_norm_bwd_desc *desc, const nbwd_rms_norm_bwd_args *args,
                                       void *workspace, size_t workspace_bytes);

NBWD_API void nbwd_batch_norm_bwd_desc_init(nbwd_batch_norm_bwd_desc *desc, int rank, const int64_t *dims,
                                            nbwd_layout layout, float epsilon);
NBWD_API nbwd_status nbwd_batch_norm_bwd_workspace_size(const nbwd_batch_norm_bwd_desc *desc, size_t *bytes);
NBWD_API nbwd_status nbwd_batch_norm_bwd(const nbwd_batch_norm_bwd_desc *desc, const nbwd_batch_norm_bwd_args *args,
                                         void *workspace, size_t workspace_bytes);
/* The two phases of a batch split over processes (see BatchNorm above). */
NBWD_API nbwd_status nbwd_batch_norm_bwd_reduce(const nbwd_batch_norm_bwd_desc *desc,
                                                const nbwd_batch_norm_bwd_args *args, float *sum_dy,
                                                float *sum_dy_xhat, int64_t *count, void *workspace,
                                                size_t workspace_bytes);
NBWD_API nbwd_status nbwd_batch_norm_bwd_apply(const nbwd_batch_norm_bwd_desc *desc,
                                               const nbwd_batch_norm_bwd_args *args, const float *sum_dy,
                                               const float *sum_dy_xhat, int64_t count, void *workspace,
                                               size_t workspace_bytes);

NBWD_API void nbwd_group_norm_bwd_desc_init(nbwd_group_norm_bwd_desc *desc, int rank, const int64_t *dims,
                                            nbwd_layout layout, int64_t groups, float epsilon);
NBWD_API nbwd_status nbwd_group_norm_bwd_workspace_size(const nbwd_group_norm_bwd_desc *desc, size_t *bytes);
NBWD_API nbwd_status nbwd_group_norm_bwd(const nbwd_group_norm_bwd_desc *desc, const nbwd_group_norm_bwd_args *args,
                                         void *workspace, size_t workspace_bytes);

NBWD_API const char *nbwd_status_string(nbwd_status status);
/* The calling thread's message for its most recent call that returned an
   error: the entry point, the status, and which field or argument, which
   value and what was expected. "" after a call that succeeded. */
NBWD_API const char *nbwd_last_error(void);

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
NBWD_API nbwd_isa nbwd_active_isa(void);         /* the path NBWD_ISA_AUTO resolves to; NBWD_ISA_AUTO
                                                    itself where NORM_BWD_ISA names one that cannot run */
/* Force (or with NBWD_ISA_AUTO, release) the automatic choice for the whole
   process; NBWD_ERR_UNSUPPORTED if that path is not compiled in or runnable. */
NBWD_API nbwd_status nbwd_force_isa(nbwd_isa isa);

#ifdef __cplusplus
}
#endif

#endif /* NORM_BWD_H_INCLUDED */

/* An editor that opens this file itself (clangd, Qt Creator, Eclipse CDT,
   CLion, Visual Studio; or any, given -DNORM_BWD_IDE) reads the
   implementation and the kernel template as live code: the scalar path's
   pass, with its f32 entry points in place (ENTRY POINTS). Only where this
   file is the one being parsed, never where it is included. */
#if !defined(NBWD__IDE_DECIDED)
#define NBWD__IDE_DECIDED 1
#if (defined(NORM_BWD_IDE) || defined(__CLANGD__) || defined(__INTELLISENSE__) || defined(Q_CREATOR_RUN) ||       \
     defined(__CDT_PARSER__) || defined(__JETBRAINS_IDE__)) &&                                                   \
    (!defined(__INCLUDE_LEVEL__) || __INCLUDE_LEVEL__ == 0) && !defined(NBWD__IMPLEMENTED)
#ifndef NORM_BWD_IMPLEMENTATION
#define NORM_BWD_IMPLEMENTATION
#endif
#define NBWD__ENTRIES_INLINE 1
#if defined(__clang__) /* (as the main file, its unused static inline helpers would be warned of) */
#pragma clang diagnostic ignored "-Wunused-function"
#endif
#endif
#endif

/* ==========================================================================
   IMPLEMENTATION
   ========================================================================== */
#if defined(NORM_BWD_IMPLEMENTATION) && !defined(NBWD__IMPLEMENTED)
#define NBWD__IMPLEMENTED

/* -ffast-math reorders the sums and lets the compiler assume there is no
   NaN or Inf: the documented bits, determinism and NaN propagation would all
   be lost, silently. The rest of a program may use it. */
#if defined(__FAST_MATH__) || (defined(__FINITE_MATH_ONLY__) && __FINITE_MATH_ONLY__)
#error "norm_bwd.h: compile the file that defines NORM_BWD_IMPLEMENTATION without -ffast-math (or -ffinite-math-only), e.g. add -fno-fast-math for that one file; files that only call the library may keep it"
#endif

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(_OPENMP)
#include <omp.h>
#elif defined(__unix__) || defined(__APPLE__) || defined(__MINGW32__) || defined(__wasi__)
#include <sys/time.h> /* gettimeofday: NORM_BWD_VERBOSE=2 timings */
#define NBWD__HAVE_GETTIMEOFDAY 1
#else
#include <time.h>
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
/* NBWD__PLAN_FN marks validation, planning and the operations' drivers:
   bookkeeping whose speed never shows next to the kernels', compiled at
   -O1 by gcc and for size by clang, which then do not spend their loop and
   inlining passes on it, a good part of the implementation file's compile
   time (make compile-cost). gcc also skips three of -O1's passes there
   (points-to and mod/ref analysis, the dominator optimizations), a good
   part of what that code still costs to compile, with no speed lost on
   calls of a few microseconds; full redundancy elimination stays (small
   GroupNorm NXC calls looked slower without it). Each such function
   carries it, so that its optimisation level moves with it. (Not the
   drivers' per-batch loops: at -O1 their f16 conversions are calls. The
   scalar kernels: see NBWD__SCALAR_FORCED_ONLY.) */
#if defined(NBWD__GCC_NO_CONTRACT) && defined(__OPTIMIZE__)
#define NBWD__PLAN_FN                                                                                              \
    __attribute__((optimize("O1", "fp-contract=off", "no-tree-pta", "no-ipa-modref", "no-tree-dominator-opts")))
#elif defined(__clang__) && defined(__OPTIMIZE__)
#define NBWD__PLAN_FN __attribute__((minsize))
#else
#define NBWD__PLAN_FN
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

/* NBWD__INLINE: the kernels' helpers, forced inline where the optimiser
   runs (a loop's constants, such as a vector's lane count, then fold), and
   plain calls without it (-O0: a debug build stays small and quick to
   compile instead of one huge body per kernel). */
#if defined(_MSC_VER) && !defined(__clang__)
#define NBWD__MSVC 1
#define NBWD__INLINE static __forceinline
#define NBWD__NOINLINE static __declspec(noinline)
#define NBWD__PREFETCH(addr) ((void)(addr))
#define NBWD__PREFETCH_L2(addr) ((void)(addr))
#elif defined(__GNUC__) || defined(__clang__)
#if defined(__OPTIMIZE__)
#define NBWD__INLINE static inline __attribute__((always_inline))
#else
#define NBWD__INLINE static inline
#endif
#define NBWD__NOINLINE static __attribute__((noinline))
/* a hint: never faults, so addr may lie past the end of the tensor. _L2:
   low temporal locality (x86 prefetcht2) */
#define NBWD__PREFETCH(addr) __builtin_prefetch((const void *)(addr))
#define NBWD__PREFETCH_L2(addr) __builtin_prefetch((const void *)(addr), 0, 1)
#else /* any other C99 compiler (tcc): plain C */
#define NBWD__INLINE static inline
#define NBWD__NOINLINE static
#define NBWD__PREFETCH(addr) ((void)(addr))
#define NBWD__PREFETCH_L2(addr) ((void)(addr))
#endif
/* A loop of (at most) 4 iterations unrolled completely (gcc 8+, clang):
   arrays it indexes then live in registers; elsewhere a plain loop (also
   through nvcc, whose front end rejects the GCC pragma). */
#if (defined(__clang__) || (defined(__GNUC__) && __GNUC__ >= 8)) && !defined(NBWD__MSVC) && !defined(__CUDACC__)
#define NBWD__UNROLL4 _Pragma("GCC unroll 4")
#else
#define NBWD__UNROLL4
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
/* GroupNorm NXC: a sample's sets span all of its rows, so its dx pass reads
   x and dy again; samples are done in chunks of about this many bytes of x
   and dy per thread (at least one sample), the sums of a chunk and then its
   dx, so that the second read finds them in the cache (a core's L2). */
#ifndef NBWD__GN_RESIDENT_BYTES
#define NBWD__GN_RESIDENT_BYTES (1 << 20)
#endif
/* ... where the batch's x and dy are larger than this (smaller batches are
   in cache as a whole, and would only pay the chunks' fork and join) */
#ifndef NBWD__GN_CHUNKED_BYTES
#define NBWD__GN_CHUNKED_BYTES (32 << 20)
#endif
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

/* ----------------------------------------------------------- diagnostics */
/* The calling thread's message for its last rejected call: the library's
   one piece of per-thread state (the manual says so). */
#if defined(__cplusplus) && __cplusplus >= 201103L
#define NBWD__TLS thread_local
#elif defined(__GNUC__) || defined(__clang__)
#define NBWD__TLS __thread
#elif defined(_MSC_VER)
#define NBWD__TLS __declspec(thread)
#elif defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L && !defined(__STDC_NO_THREADS__)
#define NBWD__TLS _Thread_local
#else
#define NBWD__TLS /* no thread-local storage known: one message for the process */
#endif
#define NBWD__MSG_BYTES 400
static NBWD__TLS char nbwd__msg[NBWD__MSG_BYTES];

#if defined(__GNUC__) || defined(__clang__)
#define NBWD__PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define NBWD__PRINTF(a, b)
#endif
/* Records what is wrong (which field, which value, what was expected) and
   returns s: every rejection goes through here. */
static nbwd_status nbwd__fail(nbwd_status s, const char *fmt, ...) NBWD__PRINTF(2, 3);
static nbwd_status nbwd__fail(nbwd_status s, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(nbwd__msg, sizeof nbwd__msg, fmt, ap);
    va_end(ap);
    return s;
}

NBWD_API const char *nbwd_last_error(void) { return nbwd__msg; }

static double nbwd__now(void) { /* seconds, for NORM_BWD_VERBOSE=2 */
#if defined(_OPENMP)
    return omp_get_wtime();
#elif defined(NBWD__HAVE_GETTIMEOFDAY)
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (double)tv.tv_sec + 1e-6 * (double)tv.tv_usec;
#else
    return (double)clock() / CLOCKS_PER_SEC; /* CPU time: the best C99 alone offers */
#endif
}

/* ----------------------------------------------------------- conversions */
NBWD__INLINE uint32_t nbwd__f32_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
NBWD__INLINE float nbwd__bits_f32(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

/* bf16's two, always inlined (the scalar kernels' may be compiled at -O1,
   see NBWD__SCALAR_FORCED_ONLY; f16's stay calls there, as at -O2) */
NBWD__INLINE float nbwd__bf16_to_f32(uint16_t v) { return nbwd__bits_f32((uint32_t)v << 16); }

NBWD__INLINE uint16_t nbwd__f32_to_bf16(float f) {
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
/* What the per-path kernels (the kernel template at the end of this file)
   compute. Data (x, dy, dx) is of the call's type dt; everything else is
   f32. xhat = (x - xm) * xs (the XHAT_STD form passes xm = 0, xs = 1);
   g = dy * gamma (dy without); dx = scale * (g - (mg + xhat * mgx)), with
   mg = mean(g), mgx = mean(g * xhat) over the set and scale = rstd
   (LayerNorm) or rstd * gamma (BatchNorm, whose g is dy). Offsets and
   steps are in elements. */
#define NBWD__ROW_BATCH 64 /* rows per kernel call: rows of a few dozen elements are common */
#define NBWD__STATS_BLOCK 16 /* NBWD_STATS_NONE: vectors (or rows) summed in f32 before a sum in double */

/* gamma and the column partials, as the kernels share them between rows;
   BatchNorm NXC's per-channel arrays likewise. The kernels take them by
   value, so that they stay in registers: a pointer read from memory would
   be read again after every vector store (intrinsic stores may alias
   anything). */
typedef struct nbwd__cols {
    const float *gamma;
    float *dg, *db;                 /* column partials of diff_gamma, diff_beta: both or neither (NULL) */
} nbwd__cols;
typedef struct nbwd__chans {
    const float *xm, *xs, *mg, *mgx, *scale;
    const float *gain;              /* GroupNorm: g = dy * gain[j] (its gamma); NULL: g = dy (the
                                       narrow body takes only this: a gain is rare, see nbwd__gn_fold) */
    float *dg, *db;
} nbwd__chans;

/* A batch of rows: LayerNorm rows (their sums, dx and the column partials
   of diff_gamma/diff_beta), or BatchNorm NXC rows (column sums in pass 1,
   dx with the per-channel coefficients in pass 2). */
typedef struct nbwd__rows {
    const char *x, *dy;
    char *dx;                       /* NULL: no diff_src (BatchNorm: pass 1) */
    int dt;
    int rms;                        /* LayerNorm: RMSNorm (x not centred, so mean(g) is not subtracted) */
    int64_t count, n;
    int stream;                     /* dx with non-temporal stores (tensors larger than the caches) */
    nbwd__cols cols;                /* LayerNorm: gamma (never NULL: ones without affine), partials */
    int none;                       /* LayerNorm: NBWD_STATS_NONE (xm, xs, rstd unset: found from x, eps) */
    float eps;
    nbwd__chans chans;              /* BatchNorm NXC: per-channel coefficients, partials (pass 1) */
    const char *res;                /* LayerNorm: a residual gradient added to dx in its pass, or NULL */
    /* BatchNorm NXC's fused ReLU (rows of whole vectors, on a path
       with the mask's operations; else keep NULL): pass 1 (dx NULL) masks
       dy by relu_dst (the forward output, row i at res_off[i]) and keeps
       the mask as bits, pass 2 masks dy by them: row i's at
       keep + i * n / VW, one word per vector. relu_add (NBWD_FUSE_ADD_RELU,
       f32): pass 1 also writes the masked dy there, row i at dy_off[i] */
    const char *relu_dst;
    uint16_t *keep;
    char *relu_add;
    /* The per-row arrays last: a batch is cleared up to x_off alone
       (nbwd__rows_clear), and each array is filled for the rows it runs */
    int64_t x_off[NBWD__ROW_BATCH], dy_off[NBWD__ROW_BATCH], dx_off[NBWD__ROW_BATCH];
    float xm[NBWD__ROW_BATCH], xs[NBWD__ROW_BATCH], rstd[NBWD__ROW_BATCH]; /* LayerNorm, per row */
    int64_t res_off[NBWD__ROW_BATCH]; /* LayerNorm's residual; BatchNorm's relu_dst */
} nbwd__rows;
/* The fields before the arrays zeroed (the whole struct is about 3 KB, and
   a BatchNorm NXC block of 64 rows of 64 channels cleared it twice per
   16 KB of x); one copy, out of line */
NBWD__PLAN_FN
static void nbwd__rows_clear(nbwd__rows *b) { memset(b, 0, offsetof(nbwd__rows, x_off)); }

/* A run of BatchNorm NCX planes of n elements, plane i at x + i * x_step
   (dy, dx likewise), each with its own set's coefficients. reduce adds
   sum dy and sum dy * xhat to sums[i * sums_step + 0, 1]; apply writes dx
   (stream: whole lines non-temporally, not fenced: the caller fences after
   its last run). One call per run of planes: a call per 49-element plane
   cost more than its arithmetic. */
typedef struct nbwd__planes {
    const char *x, *dy;
    char *dx;
    int dt;
    int64_t n, count, x_step, dy_step, dx_step;
    const float *xm, *xs, *mg, *mgx, *scale;
    float *sums;
    int64_t sums_step;
    int stream;
} nbwd__planes;

/* A path's kernels: its table (nbwd__kernels_<path>, KERNEL TABLES below)
   holds, for each kind of kernel, the function that runs for each data
   type; drivers call them through the small helpers after the tables. */
typedef void (*nbwd__rows_fn)(const nbwd__rows *rows);
typedef void (*nbwd__planes_fn)(const nbwd__planes *planes);
/* out[i] = v[i] + res[i] (res NULL: v[i]) in type dt; stream: whole lines
   non-temporally (not fenced) */
typedef void (*nbwd__add_store_fn)(const float *v, const void *res, void *out, int dt, int64_t n, int stream);
/* out[i] = (y[i] - beta[i]) * inv[i], y of type dt: xhat from dst */
typedef void (*nbwd__unscale_fn)(const void *y, int dt, const float *beta, const float *inv, float *out, int64_t n);
typedef void (*nbwd__widen_fn)(const uint16_t *src, float *dst, int dt, int64_t n);
/* NBWD_STATS_NONE of GroupNorm: a batch of NCX planes' mean and variance,
   out[2 i], out[2 i + 1]; and NXC's per-channel column sums of x - m */
typedef void (*nbwd__row_stats_fn)(const nbwd__rows *rows, double *out);
typedef void (*nbwd__col_stats_fn)(const nbwd__rows *rows, const float *m, float *sums);
typedef void (*nbwd__narrow_fn)(const float *src, uint16_t *dst, int dt, int64_t n);
typedef struct nbwd__kernels {
    nbwd_isa isa;
    /* per data type, [NBWD_F32], [NBWD_F16], [NBWD_BF16] */
    nbwd__rows_fn ln_rows[3];           /* LayerNorm and RMSNorm rows */
    nbwd__rows_fn bn_rows[3];           /* BatchNorm NXC (and GroupNorm NXC) rows */
    nbwd__planes_fn planes_reduce[3];   /* BatchNorm NCX (and GroupNorm NCX) planes: sums */
    nbwd__planes_fn planes_apply[3];    /* and dx */
    nbwd__add_store_fn add_store[3];    /* the staged rows' store (residual gradient) */
    nbwd__unscale_fn unscale[3];        /* xhat from the forward output */
    nbwd__widen_fn widen[3];            /* 16-bit data to f32 ([NBWD_F32]: NULL) */
    nbwd__narrow_fn narrow[3];          /* f32 to 16-bit data ([NBWD_F32]: NULL) */
    nbwd__row_stats_fn row_stats[3];    /* GroupNorm's statistics computed in the call (NBWD_STATS_NONE) */
    nbwd__col_stats_fn col_stats[3];
    /* f32 alone */
    void (*add)(float *dst, const float *src, int64_t n); /* dst[i] += src[i] */
    /* rstd[i] = (float)(1 / sqrt((double)variance[i] + eps)); may work in place */
    void (*rstd)(const float *variance, float *rstd, int64_t count, double eps);
    void (*fence)(void); /* orders non-temporal stores before another thread reads */
    /* the fused ReLU's masked dy, f32: out[i] = dy[i] where dst[i] > 0, else
       +0, on the bits (out may be dy or dst exactly) */
    void (*mask)(const float *dy, const float *dst, float *out, int64_t n);
    /* BatchNorm NXC's fused ReLU in the row kernels, per data type: the
       bits' lanes per word (the vector width), 0 where the data type's
       kernels stage the mask; and the widest f32 rows the
       registers-resident narrow body takes */
    int relu_lanes[3], bn_narrow_cols;
} nbwd__kernels;

/* Non-temporal stores only ever write whole 64-byte lines: a line written
   partly by them and partly by ordinary stores (a row's ends, a neighbour
   row) costs a partial-line write to memory. [*begin, *end): the elements
   of p[0, n) (elements of esz bytes) that fill whole lines, or none. */
static void nbwd__whole_lines(const void *p, int64_t esz, int64_t n, int64_t *begin, int64_t *end) {
    int64_t per_line = 64 / esz, b;
    uintptr_t mis = (uintptr_t)p % 64;
    *begin = *end = 0;
    if (mis % (uintptr_t)esz) return;
    b = (int64_t)((64 - mis) % 64) / esz;
    if (b >= n) return;
    *begin = b;
    *end = b + (n - b) / per_line * per_line;
}
/* The elements of a row of n at p that stream (stream set): its whole
   lines when the row starts a line, else none. Inlined: it runs once per
   row, and a call cost BatchNorm's 64-channel NXC rows a few per cent. */
NBWD__INLINE int64_t nbwd__lead_lines(const void *p, int64_t esz, int64_t n, int stream) {
    int64_t nt_begin = 0, nt_end = 0;
    if (stream) nbwd__whole_lines(p, esz, n, &nt_begin, &nt_end);
    return nt_begin ? 0 : nt_end;
}

/* The portable path: the kernel template over one-lane "vectors" (the
   scalar layer; the SIMD layers are in norm_bwd_simd.h). */
#define NBWD__KSUFFIX _scalar
/* Where a SIMD path always runs (x86-64's sse through SIMDe, AArch64's
   neon), only a forced path (NBWD_ISA_SCALAR, NORM_BWD_ISA=scalar) reaches
   the scalar kernels: gcc compiles them at -O1 there, a reference rather
   than a path to tune, and the compile time goes to the kernels that run
   (bench/NOTES.md). Elsewhere they are the portable path, at the build's
   level. (The check that such a path was compiled follows the SIMD
   layers.) */
#if defined(NBWD__GCC_NO_CONTRACT) && defined(__OPTIMIZE__) && !defined(NORM_BWD_NO_SIMD)
#if defined(__aarch64__) && !defined(NORM_BWD_NO_NEON)
#define NBWD__SCALAR_FORCED_ONLY 1
#elif defined(__x86_64__) && !defined(NORM_BWD_NO_SSE) && defined(__has_include)
#if __has_include(<simde/x86/sse2.h>)
#define NBWD__SCALAR_FORCED_ONLY 1
#endif
#endif
#endif
#if defined(NBWD__SCALAR_FORCED_ONLY)
#define NBWD__KTARGET __attribute__((optimize("O1", "fp-contract=off")))
#else
#define NBWD__KTARGET
#endif
#define NBWD__V float
#define NBWD__VW 1
#define NBWD__V_ZERO() 0.0f
#define NBWD__V_SET1(s) (s)
/* Each operation rounds to float (a cast must, in standard C): where float
   arithmetic runs wider (x87, FLT_EVAL_METHOD 1 or 2), the same value is
   then the same float in every kernel that computes it. */
#define NBWD__V_ADD(a, b) ((float)((a) + (b)))
#define NBWD__V_SUB(a, b) ((float)((a) - (b)))
#define NBWD__V_MUL(a, b) ((float)((a) * (b)))
#define NBWD__V_FMA(a, b, c) ((float)((float)((a) * (b)) + (c)))
#define NBWD__V_HSUM(v) (v)
#define NBWD__V_LOAD(p) (*(p))
#define NBWD__V_STORE(p, v) (*(p) = (v))
/* (a one-lane vector has no partial form: the _N names are never called) */
#define NBWD__V_LOAD_N(p, n) (*(p))
#define NBWD__V_STORE_N(p, n, v) (*(p) = (v))
#define NBWD__H uint16_t
#define NBWD__H_LOAD(p) (*(p))
#define NBWD__H_LOAD_N(p, n) (*(p))
#define NBWD__H_STORE(p, h) (*(p) = (h))
#define NBWD__H_STORE_N(p, n, h) (*(p) = (h))
#define NBWD__WIDEN_F16(h) nbwd__f16_to_f32(h)
#define NBWD__WIDEN_BF16(h) nbwd__bf16_to_f32(h)
#define NBWD__NARROW_F16(v) nbwd__f32_to_f16(v)
#define NBWD__NARROW_BF16(v) nbwd__f32_to_bf16(v)
/* The scalar path's pass: the kernel template below, in this very parse
   (the SIMD layers' passes come from norm_bwd_simd.h, in IMPLEMENTATION,
   continued). */
#define NBWD__KERNEL_PASS 1
#define NBWD__IMPL_TAIL 1
#endif /* NORM_BWD_IMPLEMENTATION: its head */
#endif /* !NBWD__KERNEL_PASS */

#if defined(NBWD__KERNEL_PASS) && !defined(NBWD__ENTRY_PASS)
/* ==========================================================================
   KERNEL TEMPLATE - the one copy of the kernels, compiled once per path
   against that path's vector layer: the scalar layer above, in this very
   parse, and the SIMD layers of norm_bwd_simd.h, each of which defines its
   layer and includes this file again with NBWD__KERNEL_PASS defined. The
   functions carry the layer's name suffix (nbwd__ln_rows_f32_avx2) and its
   target attribute; which of them runs for an operation, path and data
   type is decided in one place, the tables of KERNEL TABLES below.
   The data (x, dy, dx) is f32, or bf16/f16 widened on load and narrowed on
   store; everything else is f32. What loads and sums is written here once
   per layer, over the data type dt; what stores data, and the entry points
   the tables name, once per format (PER-FORMAT KERNELS below, compiled for
   each format the layer has):
     f32    dt NBWD_F32, a constant
     16     dt NBWD_F16 or NBWD_BF16, as the call says (a branch the
            predictor always gets right; f32's branches drop out); bf16
            narrowed in integer code
     bf16   dt NBWD_BF16 (a layer without f16 conversions)
     bf16i  dt NBWD_BF16, narrowed by the layer's bf16 instruction

   The vector layer: operations and facts, nothing that selects a build.
   Required (an #error names a missing one):
     NBWD__KSUFFIX NBWD__KTARGET              name suffix, function attribute
     NBWD__V NBWD__VW                         the vector type, VW float lanes
     NBWD__V_ZERO() NBWD__V_SET1(s)           all lanes 0, all lanes s
     NBWD__V_ADD(a, b) NBWD__V_SUB NBWD__V_MUL
     NBWD__V_FMA(a, b, c)                     a * b + c, fused where the path has FMA
     NBWD__V_HSUM(v)                          the sum of the lanes, in a fixed order
     NBWD__V_LOAD(p) NBWD__V_STORE(p, v)      VW floats, unaligned
     NBWD__V_LOAD_N(p, n)                     the first n lanes (0 < n < VW), the
     NBWD__V_STORE_N(p, n, v)                 others zero; a store writes no other
                                              lane's bytes
     NBWD__H                                  VW 16-bit values (bf16 or f16 bits)
     NBWD__H_LOAD(p) NBWD__H_STORE(p, h)      VW of them at p
     NBWD__H_LOAD_N(p, n) NBWD__H_STORE_N(p, n, h)   the first n, as V_LOAD_N
     NBWD__WIDEN_BF16(h) NBWD__NARROW_BF16(v) bf16 to a vector of f32 (exact), and
                                              back: nearest even, NaN a quiet NaN
   Optional (this file's default where absent):
     NBWD__V_STREAM(p, v) NBWD__V_FENCE()     non-temporal store (p 64-byte aligned)
                                              and the fence after a run of them
                                              (default: a plain store, no fence)
     NBWD__H_STREAM(p, h)                     16-bit data likewise (default: plain)
     NBWD__WIDEN_F16(h) NBWD__NARROW_F16(v)   f16 conversions, both or neither
                                              (without them: no f16 kernels; the
                                               layer's table sends f16 elsewhere)
     NBWD__NARROW_BF16_INSN(v)                NARROW_BF16's bits by the layer's bf16
                                              instruction (with it: bf16i kernels)
     NBWD__V_NARROW2_BF16(p, v0, v1)          2 VW values to bf16 at p (one pack
     NBWD__V_STREAM2_BF16(p, v0, v1)          where the narrowing is integer code;
                                              default: two narrowings and stores)
     NBWD__V_RSTD_LANES NBWD__V_RSTD(v, out, eps)   LANES of out = (float)(1 /
                                              sqrt((double)v + eps)), IEEE double
                                              (default: scalar code)
     NBWD__FMA_FUSED                          1: V_FMA is one fused instruction
                                              (default 0)
     NBWD__V_RELU_KEEP(v, y, bits)            the fused ReLU's mask, both or neither:
     NBWD__V_RELU_APPLY(v, bits)              v where y's bits are in [1, +inf's]
                                              (y > 0, NaN clipped), else +0, and
                                              those lanes as bits (lane l: bit l);
                                              then v masked by such bits (without
                                              them: BatchNorm NXC stages the mask)
   This file #undefs every layer name at the end of its pass.
   ========================================================================== */
#if !defined(NBWD__KSUFFIX) || !defined(NBWD__KTARGET) || !defined(NBWD__V) || !defined(NBWD__VW) ||            \
    !defined(NBWD__V_ZERO) || !defined(NBWD__V_SET1) || !defined(NBWD__V_ADD) || !defined(NBWD__V_SUB) ||       \
    !defined(NBWD__V_MUL) || !defined(NBWD__V_FMA) || !defined(NBWD__V_HSUM) || !defined(NBWD__V_LOAD) ||       \
    !defined(NBWD__V_STORE) || !defined(NBWD__V_LOAD_N) || !defined(NBWD__V_STORE_N) || !defined(NBWD__H) ||    \
    !defined(NBWD__H_LOAD) || !defined(NBWD__H_STORE) || !defined(NBWD__H_LOAD_N) || !defined(NBWD__H_STORE_N) || \
    !defined(NBWD__WIDEN_BF16) || !defined(NBWD__NARROW_BF16)
#error "norm_bwd.h: a vector layer lacks a required operation (see the KERNEL TEMPLATE's list)"
#endif
#if defined(NBWD__WIDEN_F16) != defined(NBWD__NARROW_F16)
#error "norm_bwd.h: a vector layer defines one f16 conversion without the other"
#endif
#if defined(NBWD__NARROW_BF16_INSN) && !defined(NBWD__WIDEN_F16)
#error "norm_bwd.h: a vector layer with a bf16 instruction needs f16 conversions (its bf16i tables share the 16 format's widening kernels)"
#endif
#if defined(NBWD__V_STREAM)
#define NBWD__HAS_STREAM 1
#else
#define NBWD__HAS_STREAM 0
#define NBWD__V_STREAM(p, v) NBWD__V_STORE(p, v)
#endif
#ifndef NBWD__V_FENCE
#define NBWD__V_FENCE() ((void)0)
#endif
#ifndef NBWD__H_STREAM
#define NBWD__H_STREAM(p, h) NBWD__H_STORE(p, h)
#endif
#if defined(NBWD__WIDEN_F16)
#define NBWD__HAS_F16 1
#else
#define NBWD__HAS_F16 0
#endif
#if defined(NBWD__NARROW_BF16_INSN)
#define NBWD__HAS_BF16I 1
#else
#define NBWD__HAS_BF16I 0
#endif
#ifndef NBWD__V_NARROW2_BF16
#define NBWD__V_NARROW2_BF16(p, v0, v1) \
    (NBWD__H_STORE(p, NBWD__NARROW_BF16(v0)), NBWD__H_STORE((p) + NBWD__VW, NBWD__NARROW_BF16(v1)))
#endif
#ifndef NBWD__V_STREAM2_BF16
#define NBWD__V_STREAM2_BF16(p, v0, v1) \
    (NBWD__H_STREAM(p, NBWD__NARROW_BF16(v0)), NBWD__H_STREAM((p) + NBWD__VW, NBWD__NARROW_BF16(v1)))
#endif
#ifndef NBWD__V_RSTD_LANES
#define NBWD__V_RSTD_LANES 0
#endif
#ifndef NBWD__FMA_FUSED
#define NBWD__FMA_FUSED 0
#endif
#if defined(NBWD__V_RELU_KEEP) != defined(NBWD__V_RELU_APPLY)
#error "norm_bwd.h: a vector layer defines one of NBWD__V_RELU_KEEP and NBWD__V_RELU_APPLY without the other"
#endif
#if defined(NBWD__V_RELU_KEEP)
#define NBWD__HAS_RELU_BITS 1
#else
#define NBWD__HAS_RELU_BITS 0
#endif

#define NBWD__K(name) NBWD__CAT(name, NBWD__KSUFFIX)
#define NBWD__KFN NBWD__INLINE NBWD__KTARGET
/* Which kernels get copies of their own for narrow rows of 2-4 vectors
   (the row, gamma and the column partials in registers), where they
   measured faster for what they cost to compile (bench/NOTES.md):
   LayerNorm's f32 rows on every vector layer (on sse up to 3 vectors:
   its 4-vector copy's compile time went to the other layers' fused-ReLU
   bits), its 16-bit rows on the layers with a fused multiply-add (on sse,
   whose f16 conversions are calls, f16 rows were slower with them);
   BatchNorm's f32 rows, and its 16-bit rows on 16 lanes (avx2's bf16 rows
   were slower with it). */
#define NBWD__NARROW_LN(fmt) (NBWD__VW > 1 && ((fmt) == NBWD__FMT_F32 || NBWD__FMA_FUSED))
#define NBWD__NARROW_BN(dt) (NBWD__VW > 1 && ((dt) == NBWD_F32 || NBWD__VW >= 16))
/* Which NBWD_STATS_NONE LayerNorm rows find a row's statistics in the loop
   that writes the previous row's dx: all but avx2's 16-bit rows, which
   measured no faster with it (a body that widens two rows' data and
   narrows one row's dx outgrows 16 registers); those take two loops per
   row, its statistics and then its dx, and that layer's 16-bit copy of
   the pipelined loop is not compiled. The same bits either way. */
#define NBWD__PIPELINE_NONE (NBWD__FMT == NBWD__FMT_F32 || NBWD__VW != 8)

/* The first `lanes` f32 at p, the other lanes zero; lanes == VW (a constant
   in every loop): a whole vector. */
NBWD__KFN NBWD__V NBWD__K(nbwd__load)(const float *p, int lanes) {
    return lanes == NBWD__VW ? NBWD__V_LOAD(p) : NBWD__V_LOAD_N(p, lanes);
}
/* Stores the first `lanes` lanes; a whole vector non-temporally with stream. */
NBWD__KFN void NBWD__K(nbwd__store)(float *p, int lanes, NBWD__V v, int stream) {
    if (lanes < NBWD__VW) NBWD__V_STORE_N(p, lanes, v);
    else if (stream) NBWD__V_STREAM(p, v);
    else NBWD__V_STORE(p, v);
}
/* Data of type dt at element i of p, as load above: 16-bit data is one
   access (whole or partial) and the format's conversion. (Stores narrow as
   the entry point's format says: PER-FORMAT KERNELS below.) */
NBWD__KFN NBWD__V NBWD__K(nbwd__load_data)(const void *p, int64_t i, int lanes, int dt) {
    const uint16_t *q = (const uint16_t *)p + i;
    NBWD__H h;
    if (dt == NBWD_F32) return NBWD__K(nbwd__load)((const float *)p + i, lanes);
    h = lanes < NBWD__VW ? NBWD__H_LOAD_N(q, lanes) : NBWD__H_LOAD(q);
#if NBWD__HAS_F16
    return dt == NBWD_BF16 ? NBWD__WIDEN_BF16(h) : NBWD__WIDEN_F16(h);
#else
    return NBWD__WIDEN_BF16(h); /* (a layer without f16 compiles no f16 kernel) */
#endif
}

/* A set's coefficients, broadcast (a LayerNorm row, a BatchNorm channel):
   xhat = (x - xm) * xs, dx = scale * (g - (mg + xhat * mgx)). Vectors, not
   the floats they came from: a float in memory would be reloaded after every
   store to the column partials, which might alias it. */
typedef struct NBWD__K(nbwd__coef) {
    NBWD__V xm, xs, mg, mgx, scale;
} NBWD__K(nbwd__coef);
NBWD__KFN NBWD__K(nbwd__coef) NBWD__K(nbwd__coef_of)(float xm, float xs, float mg, float mgx, float scale) {
    NBWD__K(nbwd__coef) c;
    c.xm = NBWD__V_SET1(xm); c.xs = NBWD__V_SET1(xs);
    c.mg = NBWD__V_SET1(mg); c.mgx = NBWD__V_SET1(mgx); c.scale = NBWD__V_SET1(scale);
    return c;
}
#define NBWD__XHAT_OF(x, xm, xs) NBWD__V_MUL(NBWD__V_SUB(x, xm), xs)
#define NBWD__DX_OF(g, xh, mg, mgx, scale) NBWD__V_MUL(NBWD__V_SUB(g, NBWD__V_FMA(xh, mgx, mg)), scale)
#define NBWD__XHAT(c, x) NBWD__XHAT_OF(x, (c)->xm, (c)->xs)
#define NBWD__DX(c, g, xh) NBWD__DX_OF(g, xh, (c)->mg, (c)->mgx, (c)->scale)

/* A row's sums, sum g and sum g * xhat, in two chains of vectors (two
   chains hide the add latency). */
typedef struct NBWD__K(nbwd__sums) {
    NBWD__V g0, gx0, g1, gx1;
} NBWD__K(nbwd__sums);
NBWD__KFN void NBWD__K(nbwd__sums_zero)(NBWD__K(nbwd__sums) *s) {
    s->g0 = s->gx0 = s->g1 = s->gx1 = NBWD__V_ZERO();
}
NBWD__KFN void NBWD__K(nbwd__sums_out)(const NBWD__K(nbwd__sums) *s, float *out) {
    out[0] = NBWD__V_HSUM(NBWD__V_ADD(s->g0, s->g1));
    out[1] = NBWD__V_HSUM(NBWD__V_ADD(s->gx0, s->gx1));
}

/* 16-bit LayerNorm rows of up to NBWD__KEEP_COLS elements keep each
   element's g and xhat in f32 (a stack buffer of about 8.5 KiB) from the
   row's reduction to its dx, instead of loading and widening the row a
   second time (faster on every path, in L2 and out of cache; wider rows,
   whose buffer would leave L1, and f32 rows, with nothing to widen,
   measured slower and recompute: bench/NOTES.md). g lies at keep[i], xhat
   at keep[NBWD__KEEP_XH + i], an offset that is not a multiple of 4 KiB. */
#define NBWD__KEEP_COLS 1024
#define NBWD__KEEP_XH (NBWD__KEEP_COLS + 64)

/* One vector of a row's reduction at element i (lanes wide): g = dy * vgam
   (dy without gamma) into the chain (sg, sgx), the column partials dg +=
   dy * xhat, db += dy (cols.dg: both or neither), and with keep g and
   xhat kept. The caller loads gamma's vector: the one-pass loop shares it
   between its two rows. */
NBWD__KFN void NBWD__K(nbwd__reduce_at)(const void *x, const void *dy, int dt, int64_t i, int lanes,
                                        const NBWD__K(nbwd__coef) *c, nbwd__cols cols, int has_gamma,
                                        NBWD__V vgam, NBWD__V *sg, NBWD__V *sgx, float *keep) {
    NBWD__V vdy = NBWD__K(nbwd__load_data)(dy, i, lanes, dt);
    NBWD__V xh = NBWD__XHAT(c, NBWD__K(nbwd__load_data)(x, i, lanes, dt));
    NBWD__V g = has_gamma ? NBWD__V_MUL(vdy, vgam) : vdy;
    *sg = NBWD__V_ADD(*sg, g);
    *sgx = NBWD__V_FMA(g, xh, *sgx);
    if (keep) {
        NBWD__K(nbwd__store)(keep + i, lanes, g, 0);
        NBWD__K(nbwd__store)(keep + NBWD__KEEP_XH + i, lanes, xh, 0);
    }
    if (cols.dg) {
        NBWD__K(nbwd__store)(cols.dg + i, lanes, NBWD__V_FMA(vdy, xh, NBWD__K(nbwd__load)(cols.dg + i, lanes)), 0);
        NBWD__K(nbwd__store)(cols.db + i, lanes, NBWD__V_ADD(vdy, NBWD__K(nbwd__load)(cols.db + i, lanes)), 0);
    }
}
/* dx of one vector at element i (not stored): from the kept g and xhat,
   or from x and dy. */
NBWD__KFN NBWD__V NBWD__K(nbwd__dx_at)(const void *x, const void *dy, int dt, int64_t i, int lanes,
                                       const NBWD__K(nbwd__coef) *c, int has_gamma, NBWD__V vgam,
                                       const float *keep) {
    NBWD__V vdy, xh;
    if (keep)
        return NBWD__DX(c, NBWD__K(nbwd__load)(keep + i, lanes), NBWD__K(nbwd__load)(keep + NBWD__KEEP_XH + i, lanes));
    vdy = NBWD__K(nbwd__load_data)(dy, i, lanes, dt);
    xh = NBWD__XHAT(c, NBWD__K(nbwd__load_data)(x, i, lanes, dt));
    return NBWD__DX(c, has_gamma ? NBWD__V_MUL(vdy, vgam) : vdy, xh);
}
/* v plus the residual gradient's vector at element i where has_res (the
   wide-row kernel tests it per vector, a branch always predicted: 0-4 %
   of in-cache rows without a residual on Zen 5, where a copy of that
   kernel of its own cost a fifth more compile time, bench/NOTES.md; the
   narrow rows test once per row; the NONE kernel and BatchNorm's planes
   pass a constant 0) */
NBWD__KFN NBWD__V NBWD__K(nbwd__plus_res)(NBWD__V v, const void *res, int has_res, int dt, int64_t i, int lanes) {
    return has_res ? NBWD__V_ADD(v, NBWD__K(nbwd__load_data)(res, i, lanes, dt)) : v;
}
/* gamma's vector at element i (zeros, unused, without gamma) */
NBWD__KFN NBWD__V NBWD__K(nbwd__gamma_at)(nbwd__cols cols, int has_gamma, int64_t i, int lanes) {
    return has_gamma ? NBWD__K(nbwd__load)(cols.gamma + i, lanes) : NBWD__V_ZERO();
}

/* Software prefetch of rows that stream in from memory: the lines of x and
   dy NBWD__KPF_BYTES past the elements [i, i + 2 VW), each line once. The
   distance and hint are per width, as measured (bench/NOTES.md): 16-lane
   paths 2 KiB ahead with a hint to L2 (prefetcht2 reads streams faster than
   no prefetch or prefetcht0 on Zen 4), narrower ones 1 KiB ahead into L1. */
#if NBWD__VW >= 16
#define NBWD__KPF(addr) NBWD__PREFETCH_L2(addr)
#define NBWD__KPF_BYTES 2048
#else
#define NBWD__KPF(addr) NBWD__PREFETCH(addr)
#define NBWD__KPF_BYTES 1024
#endif
NBWD__KFN void NBWD__K(nbwd__prefetch_ahead)(const void *x, const void *dy, int dt, int64_t i) {
    const int64_t esz = (int64_t)nbwd__esize(dt), step = 2 * NBWD__VW * esz; /* the bytes of [i, i + 2 VW) */
    int64_t k;
    if (step < 64 && (i * esz) % 64 != 0) return; /* their line was prefetched already */
    for (k = 0; k < step; k += 64) {
        NBWD__KPF((const char *)x + i * esz + k + NBWD__KPF_BYTES);
        NBWD__KPF((const char *)dy + i * esz + k + NBWD__KPF_BYTES);
    }
}

/* A row's reduction over [0, n), in a fixed order: pairs of vectors into the
   two chains, an odd last whole vector into the first, a partial last one
   into the second. Every loop below keeps this order, so a row's sums never
   depend on which loop handled it. prefetch: the row streams in from
   memory; keep (or NULL): where g and xhat are kept. */
NBWD__KFN void NBWD__K(nbwd__reduce_row)(const void *x, const void *dy, int dt, int64_t n, float xm, float xs,
                                         nbwd__cols cols, int has_gamma, float *sums, float *keep,
                                         int prefetch) {
    NBWD__K(nbwd__coef) c = NBWD__K(nbwd__coef_of)(xm, xs, 0.0f, 0.0f, 0.0f);
    NBWD__K(nbwd__sums) s;
    int64_t i = 0;
    NBWD__K(nbwd__sums_zero)(&s);
    for (; i + 2 * NBWD__VW <= n; i += 2 * NBWD__VW) {
        if (prefetch) NBWD__K(nbwd__prefetch_ahead)(x, dy, dt, i);
        NBWD__K(nbwd__reduce_at)(x, dy, dt, i, NBWD__VW, &c, cols, has_gamma,
                                 NBWD__K(nbwd__gamma_at)(cols, has_gamma, i, NBWD__VW), &s.g0, &s.gx0, keep);
        NBWD__K(nbwd__reduce_at)(x, dy, dt, i + NBWD__VW, NBWD__VW, &c, cols, has_gamma,
                                 NBWD__K(nbwd__gamma_at)(cols, has_gamma, i + NBWD__VW, NBWD__VW), &s.g1, &s.gx1,
                                 keep);
    }
    if (i + NBWD__VW <= n) {
        NBWD__K(nbwd__reduce_at)(x, dy, dt, i, NBWD__VW, &c, cols, has_gamma,
                                 NBWD__K(nbwd__gamma_at)(cols, has_gamma, i, NBWD__VW), &s.g0, &s.gx0, keep);
        i += NBWD__VW;
    }
    if (i < n) {
        int lanes = (int)(n - i);
        NBWD__K(nbwd__reduce_at)(x, dy, dt, i, lanes, &c, cols, has_gamma,
                                 NBWD__K(nbwd__gamma_at)(cols, has_gamma, i, lanes), &s.g1, &s.gx1, keep);
    }
    NBWD__K(nbwd__sums_out)(&s, sums);
}

/* A row's mean(g), the term that centring x adds to dx: RMSNorm has none
   (a select, not a multiply by 0, which would turn an infinite sum into NaN) */
#define NBWD__MEAN_G(rms, sums, inv_n) ((rms) ? 0.0f : (sums)[0] * (inv_n))

/* The statement that follows once per vector v < nv (nv, at most 4, a
   constant in each narrow-row kernel): fully unrolled where the compiler
   takes the hint, so that arrays indexed by v stay in registers (the
   narrow-row kernels and the sweep keep that many vectors there); a plain
   loop to step through in a debugger. */
#define NBWD__EACH_VEC(v) NBWD__UNROLL4 for (int v = 0; v < NBWD__NARROW_VECS; ++v) if (v < nv)
#define NBWD__NARROW_VECS 4
#define NBWD__ZERO_VECS(a) ((a)[0] = (a)[1] = (a)[2] = (a)[3] = NBWD__V_ZERO())

#if NBWD__VW >= 16
/* Large f32 tensors with both outputs, on 16-lane vectors (elsewhere, and
   for 16-bit data, it measured slower): rows go a sub-block at a time. The
   rows' sums are reduced as the sub-block streams in from memory; then the
   sub-block, now in L2, is swept a chunk of NBWD__SWEEP_VECS vectors of
   columns at a time: dx is written and the chunk's column partials stay in
   registers down the rows (a load and a store of the partials per row and
   vector cost about a fifth of the time). Each column adds its rows in
   order and each row's sums are reduce_row's: the bits of a row at a time. */
#define NBWD__SWEEP_BYTES (256 << 10) /* x and dy of a sub-block: fits L2 */
#define NBWD__SWEEP_VECS 4            /* columns per chunk, in vectors (EACH_VEC: at most 4) */
/* nv vectors at column j over rows [r0, r1), the last one `last` lanes wide;
   stream: dx non-temporal where a row's chunk starts a line. */
NBWD__KFN void NBWD__K(nbwd__sweep_cols)(const nbwd__rows *r, nbwd__cols cols, int64_t r0, int64_t r1,
                                         int64_t j, const float *mg, const float *mgx, const int nv, int last,
                                         int stream) {
    int64_t i;
    NBWD__V gam[NBWD__SWEEP_VECS], cdg[NBWD__SWEEP_VECS], cdb[NBWD__SWEEP_VECS];
#define NBWD__LANES(v) ((v) == nv - 1 ? last : NBWD__VW)
    NBWD__EACH_VEC(v) {
        gam[v] = NBWD__K(nbwd__load)(cols.gamma + j + v * NBWD__VW, NBWD__LANES(v));
        cdg[v] = NBWD__K(nbwd__load)(cols.dg + j + v * NBWD__VW, NBWD__LANES(v));
        cdb[v] = NBWD__K(nbwd__load)(cols.db + j + v * NBWD__VW, NBWD__LANES(v));
    }
    for (i = r0; i < r1; ++i) {
        const float *x = (const float *)r->x + r->x_off[i] + j, *dy = (const float *)r->dy + r->dy_off[i] + j;
        float *dx = (float *)r->dx + r->dx_off[i] + j;
        NBWD__K(nbwd__coef) c = NBWD__K(nbwd__coef_of)(r->xm[i], r->xs[i], mg[i], mgx[i], r->rstd[i]);
        int nt = stream && (uintptr_t)dx % 64 == 0;
        NBWD__EACH_VEC(v) {
            NBWD__V vdy = NBWD__K(nbwd__load)(dy + v * NBWD__VW, NBWD__LANES(v));
            NBWD__V xh = NBWD__XHAT(&c, NBWD__K(nbwd__load)(x + v * NBWD__VW, NBWD__LANES(v)));
            NBWD__K(nbwd__store)(dx + v * NBWD__VW, NBWD__LANES(v), NBWD__DX(&c, NBWD__V_MUL(vdy, gam[v]), xh), nt);
            cdg[v] = NBWD__V_FMA(vdy, xh, cdg[v]);
            cdb[v] = NBWD__V_ADD(vdy, cdb[v]);
        }
    }
    NBWD__EACH_VEC(v) {
        NBWD__K(nbwd__store)(cols.dg + j + v * NBWD__VW, NBWD__LANES(v), cdg[v], 0);
        NBWD__K(nbwd__store)(cols.db + j + v * NBWD__VW, NBWD__LANES(v), cdb[v], 0);
    }
#undef NBWD__LANES
}
NBWD__NOINLINE NBWD__KTARGET void NBWD__K(nbwd__ln_sweep)(const nbwd__rows *r, nbwd__cols cols) {
    int64_t n = r->n, i, j, r0, r1, subs;
    int64_t sub = NBWD__SWEEP_BYTES / (2 * n * 4), chunk = NBWD__SWEEP_VECS * NBWD__VW;
    float mg[NBWD__ROW_BATCH], mgx[NBWD__ROW_BATCH], sums[2], inv_n = 1.0f / (float)n;
    const nbwd__cols gamma_only = {cols.gamma, NULL, NULL};
    /* whole chunks stream when they are whole lines (rows aligned to 64) */
    int stream = r->stream && NBWD__HAS_STREAM && (chunk * 4) % 64 == 0;
    if (sub < 1) sub = 1;
    subs = (r->count + sub - 1) / sub; /* sub-blocks of equal size */
    sub = (r->count + subs - 1) / subs;
    for (r0 = 0; r0 < r->count; r0 = r1) {
        r1 = r0 + sub < r->count ? r0 + sub : r->count;
        for (i = r0; i < r1; ++i) {
            NBWD__K(nbwd__reduce_row)((const float *)r->x + r->x_off[i], (const float *)r->dy + r->dy_off[i],
                                      NBWD_F32, n, r->xm[i], r->xs[i], gamma_only, 1, sums, NULL, 1);
            mg[i] = NBWD__MEAN_G(r->rms, sums, inv_n);
            mgx[i] = sums[1] * inv_n;
        }
        for (j = 0; j + chunk <= n; j += chunk)
            NBWD__K(nbwd__sweep_cols)(r, cols, r0, r1, j, mg, mgx, NBWD__SWEEP_VECS, NBWD__VW, stream);
        for (; j + NBWD__VW <= n; j += NBWD__VW)
            NBWD__K(nbwd__sweep_cols)(r, cols, r0, r1, j, mg, mgx, 1, NBWD__VW, 0);
        if (j < n) NBWD__K(nbwd__sweep_cols)(r, cols, r0, r1, j, mg, mgx, 1, (int)(n - j), 0);
    }
    if (stream) NBWD__V_FENCE();
}
#endif
/* The sweep where it applies (1), else 0: out of cache, f32, every output. */
NBWD__KFN int NBWD__K(nbwd__ln_try_sweep)(const nbwd__rows *r, int dt, nbwd__cols cols) {
#if NBWD__VW >= 16
    if (dt == NBWD_F32 && r->stream && r->dx && cols.dg) {
        NBWD__K(nbwd__ln_sweep)(r, cols);
        return 1;
    }
#endif
    (void)r; (void)dt; (void)cols;
    return 0;
}

/* One row's column partials alone, out of line: the passes that need
   nothing else (rows without dx, NBWD_STATS_NONE's diff_gamma pass) share
   one copy per path; in line they cost a copy per format and caller in
   compile time (bench/NOTES.md). */
NBWD__NOINLINE NBWD__KTARGET void NBWD__K(nbwd__row_partials)(const void *x, const void *dy, int dt, int64_t n,
                                                            float xm, float xs, nbwd__cols cols) {
    float discard[2];
    NBWD__K(nbwd__reduce_row)(x, dy, dt, n, xm, xs, cols, 1, discard, NULL, 0);
}
/* A batch of LayerNorm rows without dx: the column partials alone. */
NBWD__KFN void NBWD__K(nbwd__ln_rows_sums)(const nbwd__rows *r, int dt, nbwd__cols cols) {
    int64_t i, esz = (int64_t)nbwd__esize(dt);
    for (i = 0; i < r->count; ++i)
        NBWD__K(nbwd__row_partials)(r->x + r->x_off[i] * esz, r->dy + r->dy_off[i] * esz, dt, r->n, r->xm[i],
                                    r->xs[i], cols);
}

/* NBWD_STATS_NONE's row sums (see nbwd__moments_row): a vector's d = x -
   shift and g into one chain's four sums; a block's two chains added into
   out in double; the elements past the last whole vector, one by one in
   double. */
NBWD__KFN void NBWD__K(nbwd__moments_add)(NBWD__V d, NBWD__V g, NBWD__V *sd, NBWD__V *sq, NBWD__V *sg, NBWD__V *sgd) {
    *sd = NBWD__V_ADD(*sd, d);
    *sq = NBWD__V_FMA(d, d, *sq);
    *sg = NBWD__V_ADD(*sg, g);
    *sgd = NBWD__V_FMA(g, d, *sgd);
}
NBWD__KFN void NBWD__K(nbwd__moments_flush)(const NBWD__V *chain0, const NBWD__V *chain1, double *out) {
    out[0] += (double)NBWD__V_HSUM(NBWD__V_ADD(chain0[0], chain1[0]));
    out[1] += (double)NBWD__V_HSUM(NBWD__V_ADD(chain0[1], chain1[1]));
    out[2] += (double)NBWD__V_HSUM(NBWD__V_ADD(chain0[2], chain1[2]));
    out[3] += (double)NBWD__V_HSUM(NBWD__V_ADD(chain0[3], chain1[3]));
}
NBWD__KFN void NBWD__K(nbwd__moments_tail)(const void *x, const void *dy, int dt, int64_t i, int64_t n, float shift,
                                           const float *gamma, double *out) {
    for (; i < n; ++i) {
        const double d = (double)nbwd__load(x, i, dt) - (double)shift;
        const double g = (double)(float)(nbwd__load(dy, i, dt) * gamma[i]);
        out[0] += d;
        out[1] += d * d;
        out[2] += g;
        out[3] += g * d;
    }
}

/* NBWD_STATS_NONE's LayerNorm and RMSNorm rows: one pass over a row finds
   its statistics and dx's two sums together. With d = x - shift (a value
   near the mean that keeps the sums of d small; 0 for RMSNorm) and g = dy *
   gamma: out[0] = sum d, out[1] = sum d^2, out[2] = sum g, out[3] = sum g
   d. Vectors in reduce_row's two chains, in blocks of NBWD__STATS_BLOCK
   vectors whose f32 sums are added in double (no f32 chain longer than 8
   additions, however long the row: dx's row scalars carry about an ulp
   where whole-row f32 chains of a 4096-element row carried hundreds,
   bench/NOTES.md), the partial last vector in double,
   element by element (its missing lanes are no zeros of d). prefetch: the
   row streams in from memory (see nbwd__ln_none_body). Out of line: it runs
   for a batch's first row, the rows summed again and, on avx2's 16-bit
   rows, every row (nbwd__fused_moments_rows sums the others in the same
   order). */
NBWD__NOINLINE NBWD__KTARGET void NBWD__K(nbwd__moments_row)(const void *x, const void *dy, int dt, int64_t n,
                                                           float shift, const float *gamma, int prefetch,
                                                           double *out) {
    const int64_t full = n - n % NBWD__VW;
    const NBWD__V vs = NBWD__V_SET1(shift);
    int64_t i = 0, end;
    out[0] = out[1] = out[2] = out[3] = 0.0;
    for (; i < full; i = end) {
        /* the two chains' sums of d, d^2, g, g d */
        NBWD__V c0[4] = {NBWD__V_ZERO(), NBWD__V_ZERO(), NBWD__V_ZERO(), NBWD__V_ZERO()}, c1[4];
        c1[0] = c1[1] = c1[2] = c1[3] = c0[0];
        end = full - i > NBWD__STATS_BLOCK * NBWD__VW ? i + NBWD__STATS_BLOCK * NBWD__VW : full;
        for (; i + 2 * NBWD__VW <= end; i += 2 * NBWD__VW) {
            if (prefetch) NBWD__K(nbwd__prefetch_ahead)(x, dy, dt, i);
            NBWD__K(nbwd__moments_add)(NBWD__V_SUB(NBWD__K(nbwd__load_data)(x, i, NBWD__VW, dt), vs),
                                       NBWD__V_MUL(NBWD__K(nbwd__load_data)(dy, i, NBWD__VW, dt),
                                                   NBWD__V_LOAD(gamma + i)),
                                       &c0[0], &c0[1], &c0[2], &c0[3]);
            NBWD__K(nbwd__moments_add)(NBWD__V_SUB(NBWD__K(nbwd__load_data)(x, i + NBWD__VW, NBWD__VW, dt), vs),
                                       NBWD__V_MUL(NBWD__K(nbwd__load_data)(dy, i + NBWD__VW, NBWD__VW, dt),
                                                   NBWD__V_LOAD(gamma + i + NBWD__VW)),
                                       &c1[0], &c1[1], &c1[2], &c1[3]);
        }
        if (i < end) { /* an odd last whole vector: the first chain */
            NBWD__K(nbwd__moments_add)(NBWD__V_SUB(NBWD__K(nbwd__load_data)(x, i, NBWD__VW, dt), vs),
                                       NBWD__V_MUL(NBWD__K(nbwd__load_data)(dy, i, NBWD__VW, dt),
                                                   NBWD__V_LOAD(gamma + i)),
                                       &c0[0], &c0[1], &c0[2], &c0[3]);
            i += NBWD__VW;
        }
        NBWD__K(nbwd__moments_flush)(c0, c1, out);
    }
    NBWD__K(nbwd__moments_tail)(x, dy, dt, i, n, shift, gamma, out);
}

/* NBWD_STATS_NONE of GroupNorm NCX: each plane's mean and variance from x
   alone, in a fixed order, so that a plane's bits never depend on its
   batch: out[2 i], out[2 i + 1], in double. m1 = mean(x) from one pass,
   then, over the plane again, d = x - m1: mean = m1 + mean(d), variance =
   mean(d^2) - mean(d)^2 (the corrected two-pass algorithm: m1's rounding
   error cancels, and planes far from 0 lose nothing to cancellation).
   Sums of vectors in two chains in reduce_row's order, in blocks of
   NBWD__STATS_BLOCK vectors whose sums are added in double: no f32 chain
   is longer than 8 additions, so a sum of squares is within about 13 f32
   roundings of exact however long the plane (one f32 chain over 2^24
   elements was off by thousands). The second pass's partial last vector
   element by element (its missing lanes are no zeros of d). */
NBWD__KFN void NBWD__K(nbwd__row_stats_body)(const nbwd__rows *r, int dt, double *out) {
    const int64_t n = r->n, full = n - n % NBWD__VW, esz = (int64_t)nbwd__esize(dt);
    int64_t i, j, end;
    for (i = 0; i < r->count; ++i) {
        const char *x = r->x + r->x_off[i] * esz;
        NBWD__V a0, a1, b0, b1, vm1;
        double s1 = 0.0, s2 = 0.0, m;
        float m1, tail1 = 0.0f, tail2 = 0.0f;
        for (j = 0; j < full; j = end) {
            end = full - j > NBWD__STATS_BLOCK * NBWD__VW ? j + NBWD__STATS_BLOCK * NBWD__VW : full;
            a0 = a1 = NBWD__V_ZERO();
            for (; j + 2 * NBWD__VW <= end; j += 2 * NBWD__VW) {
                a0 = NBWD__V_ADD(a0, NBWD__K(nbwd__load_data)(x, j, NBWD__VW, dt));
                a1 = NBWD__V_ADD(a1, NBWD__K(nbwd__load_data)(x, j + NBWD__VW, NBWD__VW, dt));
            }
            if (j < end) { /* an odd last whole vector: the first chain */
                a0 = NBWD__V_ADD(a0, NBWD__K(nbwd__load_data)(x, j, NBWD__VW, dt));
                j += NBWD__VW;
            }
            s1 += (double)NBWD__V_HSUM(NBWD__V_ADD(a0, a1));
        }
        if (full < n) /* the missing lanes load as zeros: they add nothing */
            s1 += (double)NBWD__V_HSUM(NBWD__K(nbwd__load_data)(x, full, (int)(n - full), dt));
        m1 = (float)(s1 / (double)n);
        /* a chain past FLT_MAX (|x| near it; a plane in range is then all
           but constant): its first element keeps d small as well */
        if (!(m1 - m1 == 0.0f)) m1 = nbwd__load(x, 0, dt);
        vm1 = NBWD__V_SET1(m1);
        s1 = 0.0;
        for (j = 0; j < full; j = end) {
            end = full - j > NBWD__STATS_BLOCK * NBWD__VW ? j + NBWD__STATS_BLOCK * NBWD__VW : full;
            a0 = a1 = b0 = b1 = NBWD__V_ZERO();
            for (; j + 2 * NBWD__VW <= end; j += 2 * NBWD__VW) {
                NBWD__V d0 = NBWD__V_SUB(NBWD__K(nbwd__load_data)(x, j, NBWD__VW, dt), vm1);
                NBWD__V d1 = NBWD__V_SUB(NBWD__K(nbwd__load_data)(x, j + NBWD__VW, NBWD__VW, dt), vm1);
                a0 = NBWD__V_ADD(a0, d0);
                b0 = NBWD__V_FMA(d0, d0, b0);
                a1 = NBWD__V_ADD(a1, d1);
                b1 = NBWD__V_FMA(d1, d1, b1);
            }
            if (j < end) {
                NBWD__V d0 = NBWD__V_SUB(NBWD__K(nbwd__load_data)(x, j, NBWD__VW, dt), vm1);
                a0 = NBWD__V_ADD(a0, d0);
                b0 = NBWD__V_FMA(d0, d0, b0);
                j += NBWD__VW;
            }
            s1 += (double)NBWD__V_HSUM(NBWD__V_ADD(a0, a1));
            s2 += (double)NBWD__V_HSUM(NBWD__V_ADD(b0, b1));
        }
        for (j = full; j < n; ++j) {
            float d = (float)(nbwd__load(x, j, dt) - m1);
            tail1 = (float)(tail1 + d);
            tail2 = (float)(tail2 + (float)(d * d));
        }
        s1 += (double)tail1;
        s2 += (double)tail2;
        m = s1 / (double)n;
        out[2 * i] = (double)m1 + m;
        out[2 * i + 1] = s2 / (double)n - m * m;
        if (out[2 * i + 1] < 0.0) out[2 * i + 1] = 0.0; /* (rounding of a constant plane) */
    }
}
/* GroupNorm NXC's NBWD_STATS_NONE: per channel j of a batch of rows (all
   channels in each), sums[j] += sum of x - m[j], sums[n + j] += sum of
   (x - m[j])^2 (m NULL: 0, and the squares not taken), in f32 down the
   batch's rows; the caller adds batches in a fixed order, in double. */
NBWD__KFN void NBWD__K(nbwd__col_stats_body)(const nbwd__rows *r, int dt, const float *m, float *sums) {
    const int64_t n = r->n, esz = (int64_t)nbwd__esize(dt);
    int64_t i, j;
    for (j = 0; j < n; j += NBWD__VW) {
        const int lanes = n - j < NBWD__VW ? (int)(n - j) : NBWD__VW;
        /* (missing lanes: x and m load as zeros, so d is 0 there) */
        NBWD__V vm = m ? NBWD__K(nbwd__load)(m + j, lanes) : NBWD__V_ZERO(), a = NBWD__V_ZERO(), b = NBWD__V_ZERO();
        for (i = 0; i < r->count; ++i) {
            NBWD__V d = NBWD__V_SUB(NBWD__K(nbwd__load_data)(r->x + r->x_off[i] * esz, j, lanes, dt), vm);
            a = NBWD__V_ADD(a, d);
            if (m) b = NBWD__V_FMA(d, d, b);
        }
        NBWD__K(nbwd__store)(sums + j, lanes, NBWD__V_ADD(NBWD__K(nbwd__load)(sums + j, lanes), a), 0);
        if (m) NBWD__K(nbwd__store)(sums + n + j, lanes, NBWD__V_ADD(NBWD__K(nbwd__load)(sums + n + j, lanes), b), 0);
    }
}

/* BatchNorm NXC: one vector of a row of all channels, each channel with its
   own coefficients. */
NBWD__KFN NBWD__V NBWD__K(nbwd__chan_xhat)(nbwd__chans ch, const void *x, int dt, int64_t j, int lanes) {
    return NBWD__XHAT_OF(NBWD__K(nbwd__load_data)(x, j, lanes, dt), NBWD__K(nbwd__load)(ch.xm + j, lanes),
                         NBWD__K(nbwd__load)(ch.xs + j, lanes));
}
/* keep (rows with the fused ReLU, see nbwd__rows.keep; else NULL):
   dy masked by dst (y), its mask's bits kept */
NBWD__KFN void NBWD__K(nbwd__col_reduce_at)(nbwd__chans ch, const void *x, const void *dy, const void *y,
                                            uint16_t *keep, float *add, int add_stream, int dt, int64_t j,
                                            int lanes) {
    NBWD__V vdy = NBWD__K(nbwd__load_data)(dy, j, lanes, dt);
    NBWD__V xh = NBWD__K(nbwd__chan_xhat)(ch, x, dt, j, lanes);
#if NBWD__HAS_RELU_BITS
    if (keep) {
        unsigned bits;
        vdy = NBWD__V_RELU_KEEP(vdy, NBWD__K(nbwd__load_data)(y, j, lanes, dt), &bits);
        keep[j / NBWD__VW] = (uint16_t)bits;
        /* the masked dy is dy's bits or +0 (an AND): the mask pass's bits */
        if (add && dt == NBWD_F32) NBWD__K(nbwd__store)(add + j, lanes, vdy, add_stream);
    }
#else
    (void)y, (void)keep, (void)add, (void)add_stream;
#endif
    NBWD__K(nbwd__store)(ch.dg + j, lanes, NBWD__V_FMA(vdy, xh, NBWD__K(nbwd__load)(ch.dg + j, lanes)), 0);
    NBWD__K(nbwd__store)(ch.db + j, lanes, NBWD__V_ADD(vdy, NBWD__K(nbwd__load)(ch.db + j, lanes)), 0);
}


/* BatchNorm NCX: a run of planes (see nbwd__planes), their sums added to
   p->sums (sum dy, then sum dy * xhat), or their dx. The 16-lane paths
   prefetch the planes, as the LayerNorm sweep does. */
NBWD__KFN void NBWD__K(nbwd__planes_reduce_body)(const nbwd__planes *p, int dt) {
    const nbwd__cols none = {NULL, NULL, NULL};
    int64_t i, esz = (int64_t)nbwd__esize(dt);
    float s[2], *sums = p->sums;
    for (i = 0; i < p->count; ++i, sums += p->sums_step) {
        NBWD__K(nbwd__reduce_row)(p->x + i * p->x_step * esz, p->dy + i * p->dy_step * esz, dt, p->n, p->xm[i],
                                  p->xs[i], none, 0, s, NULL, NBWD__VW >= 16);
        sums[0] += s[0];
        sums[1] += s[1];
    }
}

/* The f32 kernels every layer has once. */
/* dst += src (the pairwise combination of block partials) */
static NBWD__KTARGET void NBWD__K(nbwd__add)(float *dst, const float *src, int64_t n) {
    int64_t i = 0;
    for (; i + NBWD__VW <= n; i += NBWD__VW)
        NBWD__V_STORE(dst + i, NBWD__V_ADD(NBWD__V_LOAD(dst + i), NBWD__V_LOAD(src + i)));
    for (; i < n; ++i) dst[i] += src[i];
}
/* A batch of rows' rstd: the scalar code's double-precision operations on
   vectors of doubles where the layer has them (IEEE add, square root and
   divide: the same bits); one row at a time, the divide and square root
   were a fifth of the time of rows of a few dozen elements. */
static NBWD__KTARGET void NBWD__K(nbwd__rstd)(const float *variance, float *rstd, int64_t count, double eps) {
    int64_t i = 0;
#if NBWD__V_RSTD_LANES > 0
    for (; i + NBWD__V_RSTD_LANES <= count; i += NBWD__V_RSTD_LANES) NBWD__V_RSTD(variance + i, rstd + i, eps);
#endif
    for (; i < count; ++i) rstd[i] = (float)(1.0 / sqrt((double)variance[i] + eps));
}
static NBWD__KTARGET void NBWD__K(nbwd__fence)(void) { NBWD__V_FENCE(); }
#if NBWD__HAS_RELU_BITS
/* The fused ReLU's masked dy where the kernels cannot keep bits (NCX, and
   the staged NXC calls): the relu rows' test, an AND, so dy's bits pass
   unchanged; a pass over dy and dst at the memory's speed, where the
   portable nbwd__mask_piece costs about two cycles an element. */
static NBWD__KTARGET void NBWD__K(nbwd__mask)(const float *dy, const float *dst, float *out, int64_t n) {
    int64_t i = 0;
    unsigned bits;
    for (; i + NBWD__VW <= n; i += NBWD__VW)
        NBWD__V_STORE(out + i, NBWD__V_RELU_KEEP(NBWD__V_LOAD(dy + i), NBWD__V_LOAD(dst + i), &bits));
    if (i < n) {
        int lanes = (int)(n - i);
        NBWD__V_STORE_N(out + i, lanes,
                        NBWD__V_RELU_KEEP(NBWD__V_LOAD_N(dy + i, lanes), NBWD__V_LOAD_N(dst + i, lanes), &bits));
    }
}
#else
static NBWD__KTARGET void NBWD__K(nbwd__mask)(const float *dy, const float *dst, float *out, int64_t n) {
    int64_t i;
    for (i = 0; i < n; ++i) { /* (nbwd__mask_piece's test, an element at a time) */
        uint32_t g, y;
        memcpy(&g, dy + i, 4);
        memcpy(&y, dst + i, 4);
        g &= 0u - (uint32_t)(y - 1u < 0x7F800000u);
        memcpy(out + i, &g, 4);
    }
}
#endif
/* the lanes of this path's fused-ReLU bits (nbwd__rows.keep), 0 without;
   the widest f32 BatchNorm rows its narrow body takes, 0 without */
enum {
    NBWD__K(nbwd__relu_lanes) = NBWD__HAS_RELU_BITS ? NBWD__VW : 0,
    NBWD__K(nbwd__bn_narrow_cols) = NBWD__NARROW_BN(NBWD_F32) ? NBWD__NARROW_VECS * NBWD__VW : 0
};

/* The per-format kernels and entry points (below, this file included
   again for each format the layer has): f32; 16, or bf16 alone where the
   layer has no f16 conversions; bf16i where it has a bf16 instruction. In
   an editor's parse of this file the f32 ones are the code below itself
   (NBWD__ENTRIES_INLINE), so that it reads as live code. */
#define NBWD__FMT_F32 0
#define NBWD__FMT_16 1
#define NBWD__FMT_BF16 2
#define NBWD__FMT_BF16I 3
#define NBWD__ENTRY_PASS 1
#if !defined(NBWD__ENTRIES_INLINE)
#define NBWD__FMT NBWD__FMT_F32
#include NORM_BWD_HEADER_FILENAME
#undef NBWD__FMT
#endif
#if NBWD__HAS_F16
#define NBWD__FMT NBWD__FMT_16
#else
#define NBWD__FMT NBWD__FMT_BF16
#endif
#include NORM_BWD_HEADER_FILENAME
#undef NBWD__FMT
#if NBWD__HAS_BF16I
#define NBWD__FMT NBWD__FMT_BF16I
#include NORM_BWD_HEADER_FILENAME
#undef NBWD__FMT
#endif
#undef NBWD__ENTRY_PASS
#if defined(NBWD__ENTRIES_INLINE)
#define NBWD__FMT NBWD__FMT_F32
#endif
#endif /* the kernel template */

#if defined(NBWD__ENTRY_PASS) || (defined(NBWD__KERNEL_PASS) && defined(NBWD__ENTRIES_INLINE))
/* ==========================================================================
   PER-FORMAT KERNELS AND ENTRY POINTS - written once over a format NBWD__FMT
   (see the KERNEL TEMPLATE), which decides how 16-bit data is narrowed:
   what stores data, and the functions the kernel tables point at,
   nbwd__<kernel>_<format>_<layer> (nbwd__ln_rows_16_avx2).
   NBWD__FMT_DT(dt) is the format's data type for a call whose data type
   is dt.
   ========================================================================== */
/* NBWD__BY_DT(dt, call): call, with dt_ the data type dt. avx2's 16 format
   compiles its two hottest loops, LayerNorm's two-row loop and BatchNorm's
   NXC rows, once per data type (dt_ a constant in each copy): gcc -O2 does
   not unswitch loops, and a run-time dt tested in every vector's load and
   store cost avx2's bf16 and f16 rows 1.1-1.5x their time on a Zen 3; the
   copies cost about 0.1 s of gcc -O2 compile time (bench/NOTES.md).
   Elsewhere one copy takes dt as it comes. */
#if NBWD__FMT == NBWD__FMT_16 && NBWD__VW == 8
#define NBWD__BY_DT(dt, call) do { if ((dt) == NBWD_BF16) { const int dt_ = NBWD_BF16; call; } \
                                   else { const int dt_ = NBWD_F16; call; } } while (0)
#else
#define NBWD__BY_DT(dt, call) do { const int dt_ = (dt); call; } while (0)
#endif
#if NBWD__FMT == NBWD__FMT_F32
#define NBWD__KF(name) NBWD__CAT(NBWD__CAT(name, _f32), NBWD__KSUFFIX)
#define NBWD__FMT_DT(dt) NBWD_F32
#elif NBWD__FMT == NBWD__FMT_16
#define NBWD__KF(name) NBWD__CAT(NBWD__CAT(name, _16), NBWD__KSUFFIX)
#define NBWD__FMT_DT(dt) ((dt) == NBWD_BF16 ? NBWD_BF16 : NBWD_F16)
#elif NBWD__FMT == NBWD__FMT_BF16
#define NBWD__KF(name) NBWD__CAT(NBWD__CAT(name, _bf16), NBWD__KSUFFIX)
#define NBWD__FMT_DT(dt) NBWD_BF16
#else
#define NBWD__KF(name) NBWD__CAT(NBWD__CAT(name, _bf16i), NBWD__KSUFFIX)
#define NBWD__FMT_DT(dt) NBWD_BF16
#endif

/* v as data of type dt at element i of p (the first `lanes` lanes; a whole
   vector non-temporally with stream): 16-bit data narrowed as the format
   says, then one store. */
NBWD__KFN void NBWD__KF(nbwd__store_data)(void *p, int64_t i, int lanes, int dt, NBWD__V v, int stream) {
    uint16_t *q = (uint16_t *)p + i;
    NBWD__H h;
    if (dt == NBWD_F32) {
        NBWD__K(nbwd__store)((float *)p + i, lanes, v, stream);
        return;
    }
#if NBWD__FMT == NBWD__FMT_BF16I
    h = NBWD__NARROW_BF16_INSN(v);
#elif NBWD__FMT == NBWD__FMT_16
    h = dt == NBWD_BF16 ? NBWD__NARROW_BF16(v) : NBWD__NARROW_F16(v);
#else
    h = NBWD__NARROW_BF16(v);
#endif
    if (lanes < NBWD__VW) NBWD__H_STORE_N(q, lanes, h);
    else if (stream) NBWD__H_STREAM(q, h);
    else NBWD__H_STORE(q, h);
}
/* Two whole vectors at element i; bf16 narrows the pair in one go (one
   pack, one store on the layers whose narrowing is integer code; the bf16
   instruction narrows one vector at a time). */
NBWD__KFN void NBWD__KF(nbwd__store_pair)(void *p, int64_t i, int dt, NBWD__V v0, NBWD__V v1, int stream) {
#if NBWD__FMT != NBWD__FMT_BF16I
    if (dt == NBWD_BF16 && stream) NBWD__V_STREAM2_BF16((uint16_t *)p + i, v0, v1);
    else if (dt == NBWD_BF16) NBWD__V_NARROW2_BF16((uint16_t *)p + i, v0, v1);
    else
#endif
    {
        NBWD__KF(nbwd__store_data)(p, i, NBWD__VW, dt, v0, stream);
        NBWD__KF(nbwd__store_data)(p, i + NBWD__VW, NBWD__VW, dt, v1, stream);
    }
}


/* dx of [i, end) of a row: bf16 pairs of vectors, whole vectors, then a
   partial one (or none); the vectors that end by stream_end non-temporally
   (dx + i 64-byte aligned then). */
NBWD__KFN void NBWD__KF(nbwd__apply_span)(const void *x, const void *dy, void *dx, int dt, int64_t i, int64_t end,
                                          int64_t stream_end, const NBWD__K(nbwd__coef) *c, nbwd__cols cols,
                                          int has_gamma, const float *keep, const void *res, int has_res) {
#define NBWD__DX_RES(i, lanes)                                                                                        \
    NBWD__K(nbwd__plus_res)(NBWD__K(nbwd__dx_at)(x, dy, dt, i, lanes, c, has_gamma,                                  \
                                                 NBWD__K(nbwd__gamma_at)(cols, has_gamma, i, lanes), keep),           \
                            res, has_res, dt, i, lanes)
    for (; dt == NBWD_BF16 && i + 2 * NBWD__VW <= end; i += 2 * NBWD__VW)
        NBWD__KF(nbwd__store_pair)(dx, i, dt, NBWD__DX_RES(i, NBWD__VW), NBWD__DX_RES(i + NBWD__VW, NBWD__VW),
                                   i + 2 * NBWD__VW <= stream_end);
    for (; i + NBWD__VW <= end; i += NBWD__VW)
        NBWD__KF(nbwd__store_data)(dx, i, NBWD__VW, dt, NBWD__DX_RES(i, NBWD__VW), i + NBWD__VW <= stream_end);
    if (i < end) NBWD__KF(nbwd__store_data)(dx, i, (int)(end - i), dt, NBWD__DX_RES(i, (int)(end - i)), 0);
#undef NBWD__DX_RES
}
/* dx of one row; stream: its whole 64-byte lines non-temporally (not
   fenced), the rest with ordinary stores: up to the first whole line, then
   from there. */
NBWD__KFN void NBWD__KF(nbwd__apply_row)(const void *x, const void *dy, void *dx, int dt, int64_t n,
                                         const NBWD__K(nbwd__coef) *c, nbwd__cols cols, int has_gamma,
                                         const float *keep, int stream, const void *res, int has_res) {
    int64_t nt_begin = 0, nt_end = 0;
    if (stream && NBWD__HAS_STREAM) nbwd__whole_lines(dx, (int64_t)nbwd__esize(dt), n, &nt_begin, &nt_end);
    NBWD__KF(nbwd__apply_span)(x, dy, dx, dt, 0, nt_begin, 0, c, cols, has_gamma, keep, res, has_res);
    NBWD__KF(nbwd__apply_span)(x, dy, dx, dt, nt_begin, n, nt_end, c, cols, has_gamma, keep, res, has_res);
}

/* Two LayerNorm rows of n in one loop: the reduction of row b (its sums into
   sums_b, in reduce_row's order) while dx of row a, whose sums are done, is
   written. Row b streams in from memory while row a, read a moment ago,
   comes from the cache: one pass over memory keeps the loads in flight
   while the arithmetic runs. stream: row a's whole lines non-temporally
   when its dx starts a line (else ordinary stores). keep (or NULL): row a's
   g and xhat, which row b's replace. */
NBWD__KFN void NBWD__KF(nbwd__fused_rows)(const void *xa, const void *dya, void *dxa, const NBWD__K(nbwd__coef) *ca,
                                          const void *xb, const void *dyb, const NBWD__K(nbwd__coef) *cb,
                                          float *sums_b, int dt, int64_t n, nbwd__cols cols, float *keep,
                                          int stream, const void *resa, int has_res) {
    NBWD__K(nbwd__sums) s;
    int64_t i = 0, nt_begin = 0, nt_end = 0;
    /* prefetch 16-bit rows, and f32 rows on narrower paths from 4 KiB or out
       of cache (f32 on 16-lane paths measured slower with it) */
    const int prefetch = dt != NBWD_F32 || (NBWD__VW < 16 && (n >= 1024 || stream));
    NBWD__K(nbwd__sums_zero)(&s);
    if (stream && NBWD__HAS_STREAM) nbwd__whole_lines(dxa, (int64_t)nbwd__esize(dt), n, &nt_begin, &nt_end);
    if (nt_begin != 0) nt_end = 0;
    for (; i + 2 * NBWD__VW <= n; i += 2 * NBWD__VW) {
        /* gamma loaded once for both rows: the compiler cannot reuse one
           load across the column-partial stores, which might alias gamma */
        NBWD__V g0 = NBWD__V_LOAD(cols.gamma + i), g1 = NBWD__V_LOAD(cols.gamma + i + NBWD__VW), dx0, dx1;
        int st = i + 2 * NBWD__VW <= nt_end;
        if (prefetch) NBWD__K(nbwd__prefetch_ahead)(xb, dyb, dt, i);
        if (dt != NBWD_BF16 && !keep) { /* f32 measured slower in bf16's order below */
            NBWD__K(nbwd__reduce_at)(xb, dyb, dt, i, NBWD__VW, cb, cols, 1, g0, &s.g0, &s.gx0, NULL);
            NBWD__KF(nbwd__store_data)(dxa, i, NBWD__VW, dt,
                                       NBWD__K(nbwd__plus_res)(NBWD__K(nbwd__dx_at)(xa, dya, dt, i, NBWD__VW, ca, 1,
                                                                                    g0, NULL),
                                                               resa, has_res, dt, i, NBWD__VW),
                                       st);
            NBWD__K(nbwd__reduce_at)(xb, dyb, dt, i + NBWD__VW, NBWD__VW, cb, cols, 1, g1, &s.g1, &s.gx1, NULL);
            NBWD__KF(nbwd__store_data)(dxa, i + NBWD__VW, NBWD__VW, dt,
                                       NBWD__K(nbwd__plus_res)(NBWD__K(nbwd__dx_at)(xa, dya, dt, i + NBWD__VW,
                                                                                    NBWD__VW, ca, 1, g1, NULL),
                                                               resa, has_res, dt, i + NBWD__VW, NBWD__VW),
                                       st);
            continue;
        }
        /* row a's dx first: with keep, row b's g and xhat replace row a's;
           bf16 stores the pair in one go */
        dx0 = NBWD__K(nbwd__plus_res)(NBWD__K(nbwd__dx_at)(xa, dya, dt, i, NBWD__VW, ca, 1, g0, keep), resa, has_res,
                                      dt, i, NBWD__VW);
        dx1 = NBWD__K(nbwd__plus_res)(NBWD__K(nbwd__dx_at)(xa, dya, dt, i + NBWD__VW, NBWD__VW, ca, 1, g1, keep),
                                      resa, has_res, dt, i + NBWD__VW, NBWD__VW);
        NBWD__K(nbwd__reduce_at)(xb, dyb, dt, i, NBWD__VW, cb, cols, 1, g0, &s.g0, &s.gx0, keep);
        NBWD__K(nbwd__reduce_at)(xb, dyb, dt, i + NBWD__VW, NBWD__VW, cb, cols, 1, g1, &s.g1, &s.gx1, keep);
        NBWD__KF(nbwd__store_pair)(dxa, i, dt, dx0, dx1, st);
    }
    for (; i < n; i += NBWD__VW) { /* an odd last whole vector into the first chain, a partial one the second */
        int lanes = n - i < NBWD__VW ? (int)(n - i) : NBWD__VW;
        NBWD__V g = NBWD__K(nbwd__load)(cols.gamma + i, lanes);
        NBWD__V dxv = NBWD__K(nbwd__plus_res)(NBWD__K(nbwd__dx_at)(xa, dya, dt, i, lanes, ca, 1, g, keep), resa,
                                              has_res, dt, i, lanes);
        if (lanes == NBWD__VW)
            NBWD__K(nbwd__reduce_at)(xb, dyb, dt, i, NBWD__VW, cb, cols, 1, g, &s.g0, &s.gx0, keep);
        else
            NBWD__K(nbwd__reduce_at)(xb, dyb, dt, i, lanes, cb, cols, 1, g, &s.g1, &s.gx1, keep);
        NBWD__KF(nbwd__store_data)(dxa, i, lanes, dt, dxv, lanes == NBWD__VW && i + NBWD__VW <= nt_end);
    }
    NBWD__K(nbwd__sums_out)(&s, sums_b);
}

/* NBWD_STATS_NONE: row b's moments (nbwd__moments_row's sums, in its order,
   into out) in the loop that writes dx of row a, whose coefficients are
   known: row b streams in from memory while row a comes from the cache, as
   in nbwd__fused_rows. */
NBWD__KFN void NBWD__KF(nbwd__fused_moments_rows)(const void *xa, const void *dya, void *dxa,
                                                  const NBWD__K(nbwd__coef) *ca, const void *xb, const void *dyb,
                                                  float shift, double *out, int dt, int64_t n, nbwd__cols cols,
                                                  int stream) {
    const int64_t full = n - n % NBWD__VW;
    const NBWD__V vs = NBWD__V_SET1(shift);
    const int prefetch = dt != NBWD_F32 || (NBWD__VW < 16 && (n >= 1024 || stream)); /* (as fused_rows) */
    int64_t i = 0, end, nt_begin = 0, nt_end = 0;
    if (stream && NBWD__HAS_STREAM) nbwd__whole_lines(dxa, (int64_t)nbwd__esize(dt), n, &nt_begin, &nt_end);
    if (nt_begin != 0) nt_end = 0;
    out[0] = out[1] = out[2] = out[3] = 0.0;
    for (; i < full; i = end) {
        NBWD__V c0[4] = {NBWD__V_ZERO(), NBWD__V_ZERO(), NBWD__V_ZERO(), NBWD__V_ZERO()}, c1[4];
        c1[0] = c1[1] = c1[2] = c1[3] = c0[0]; /* (as in nbwd__moments_row) */
        end = full - i > NBWD__STATS_BLOCK * NBWD__VW ? i + NBWD__STATS_BLOCK * NBWD__VW : full;
        for (; i + 2 * NBWD__VW <= end; i += 2 * NBWD__VW) {
            const NBWD__V gam0 = NBWD__V_LOAD(cols.gamma + i), gam1 = NBWD__V_LOAD(cols.gamma + i + NBWD__VW);
            NBWD__V dx0, dx1;
            if (prefetch) NBWD__K(nbwd__prefetch_ahead)(xb, dyb, dt, i);
            NBWD__K(nbwd__moments_add)(NBWD__V_SUB(NBWD__K(nbwd__load_data)(xb, i, NBWD__VW, dt), vs),
                                       NBWD__V_MUL(NBWD__K(nbwd__load_data)(dyb, i, NBWD__VW, dt), gam0), &c0[0],
                                       &c0[1], &c0[2], &c0[3]);
            NBWD__K(nbwd__moments_add)(NBWD__V_SUB(NBWD__K(nbwd__load_data)(xb, i + NBWD__VW, NBWD__VW, dt), vs),
                                       NBWD__V_MUL(NBWD__K(nbwd__load_data)(dyb, i + NBWD__VW, NBWD__VW, dt), gam1),
                                       &c1[0], &c1[1], &c1[2], &c1[3]);
            dx0 = NBWD__K(nbwd__dx_at)(xa, dya, dt, i, NBWD__VW, ca, 1, gam0, NULL);
            dx1 = NBWD__K(nbwd__dx_at)(xa, dya, dt, i + NBWD__VW, NBWD__VW, ca, 1, gam1, NULL);
            NBWD__KF(nbwd__store_pair)(dxa, i, dt, dx0, dx1, i + 2 * NBWD__VW <= nt_end);
        }
        if (i < end) { /* an odd last whole vector: the first chain */
            const NBWD__V gam0 = NBWD__V_LOAD(cols.gamma + i);
            NBWD__K(nbwd__moments_add)(NBWD__V_SUB(NBWD__K(nbwd__load_data)(xb, i, NBWD__VW, dt), vs),
                                       NBWD__V_MUL(NBWD__K(nbwd__load_data)(dyb, i, NBWD__VW, dt), gam0), &c0[0],
                                       &c0[1], &c0[2], &c0[3]);
            NBWD__KF(nbwd__store_data)(dxa, i, NBWD__VW, dt, NBWD__K(nbwd__dx_at)(xa, dya, dt, i, NBWD__VW, ca, 1, gam0,
                                                                                  NULL),
                                       i + NBWD__VW <= nt_end);
            i += NBWD__VW;
        }
        NBWD__K(nbwd__moments_flush)(c0, c1, out);
    }
    if (i < n) { /* row a's last, partial vector */
        const int lanes = (int)(n - i);
        NBWD__KF(nbwd__store_data)(dxa, i, lanes, dt, NBWD__K(nbwd__dx_at)(xa, dya, dt, i, lanes, ca, 1,
                                                                           NBWD__K(nbwd__load)(cols.gamma + i, lanes),
                                                                           NULL), 0);
    }
    NBWD__K(nbwd__moments_tail)(xb, dyb, dt, i, n, shift, cols.gamma, out);
}

/* NBWD_STATS_NONE's LayerNorm and RMSNorm rows: per row one pass finds the
   statistics and dx's sums, with dx in the loop that writes the previous
   row's dx (nbwd__fused_moments_rows: the loads of a row from memory
   overlap the arithmetic of the one before, as in the other forms; the
   last row's dx in that loop with itself as the next row), without in
   nbwd__moments_row. The column partials come first, in the x form's own
   pass: dx may overwrite x or dy. The shift (LayerNorm) is the mean of the
   row's first vector: var = mean(d^2) - mean(d)^2 loses (1 + mean(d)^2 /
   var) times the rounding of its sums, about 1 + 1 / VW; where the shift
   lies more than a standard deviation from the mean the row is summed
   again around its mean, so that factor never exceeds 2. Row scalars in double:
   mean = shift + mean(d), mean(g xhat) = rstd (mean(g d) - mean(d)
   mean(g)); mean and rstd are rounded to f32 as the MEAN_VARIANCE form
   takes them. */
NBWD__KFN void NBWD__KF(nbwd__ln_none_body)(const nbwd__rows *r, int dt, nbwd__cols cols) {
    const int64_t n = r->n, esz = (int64_t)nbwd__esize(dt);
    const double inv_n = 1.0 / (double)n;
    /* The statistics pass prefetches 16-bit rows that stream in from memory
       (r->stream) on the 16-lane paths alone: there it measured faster, f32
       rows slower; avx2's 16-bit rows, which take this pass for every row,
       measured faster without it on a Zen 3 (bench/NOTES.md). */
    const int prefetch = NBWD__VW >= 16 && dt != NBWD_F32 && r->stream;
    const int lanes = n < NBWD__VW ? (int)n : NBWD__VW, pipelined = NBWD__PIPELINE_NONE;
    int64_t i;
    float xm = 0.0f, rs = 0.0f;
    NBWD__K(nbwd__coef) c = NBWD__K(nbwd__coef_of)(0.0f, 0.0f, 0.0f, 0.0f, 0.0f);
    for (i = 0; i <= r->count; ++i) { /* row i's statistics, then row i - 1's dx */
        const char *xa = i ? r->x + r->x_off[i - 1] * esz : NULL, *dya = i ? r->dy + r->dy_off[i - 1] * esz : NULL;
        char *dxa = i && r->dx ? r->dx + r->dx_off[i - 1] * esz : NULL;
        if (i > 0 && cols.dg) NBWD__K(nbwd__row_partials)(xa, dya, dt, n, xm, rs, cols);
        if (dxa && !pipelined) { /* row i - 1's dx in a loop of its own */
            NBWD__KF(nbwd__apply_row)(xa, dya, dxa, dt, n, &c, cols, 1, NULL, r->stream, NULL, 0);
            dxa = NULL;
        }
        if (i < r->count) {
            const char *x = r->x + r->x_off[i] * esz, *dy = r->dy + r->dy_off[i] * esz;
            float shift = r->rms ? 0.0f : NBWD__V_HSUM(NBWD__K(nbwd__load_data)(x, 0, lanes, dt)) / (float)lanes;
            double m[4], dm, var;
            /* the first vector's sum past FLT_MAX (|x| near it; a row in
               range is then all but constant): its first element keeps d
               small as well */
            if (!(shift - shift == 0.0f)) shift = nbwd__load(x, 0, dt);
            if (dxa)
                NBWD__KF(nbwd__fused_moments_rows)(xa, dya, dxa, &c, x, dy, shift, m, dt, n, cols, r->stream);
            else
                NBWD__K(nbwd__moments_row)(x, dy, dt, n, shift, cols.gamma, prefetch, m);
            dm = r->rms ? 0.0 : m[0] * inv_n;
            var = m[1] * inv_n - dm * dm;
            /* also where the squares about a far shift passed FLT_MAX (an
               outlying first vector) in a row whose deviations from its
               mean do not (never with rms: dm = 0, the shift is 0) */
            if (dm * dm > var || (!r->rms && !(var - var == 0.0))) {
                shift = (float)((double)shift + dm);
                NBWD__K(nbwd__moments_row)(x, dy, dt, n, shift, cols.gamma, 0, m); /* (the row is in cache now) */
                dm = m[0] * inv_n;
                var = m[1] * inv_n - dm * dm;
            }
            if (var < 0.0) var = 0.0; /* (rounding, in a constant row) */
            xm = (float)((double)shift + dm);
            rs = (float)(1.0 / sqrt((double)(float)var + (double)r->eps));
            c = NBWD__K(nbwd__coef_of)(xm, rs, r->rms ? 0.0f : (float)(m[2] * inv_n),
                                       (float)((double)rs * (m[3] * inv_n - dm * (m[2] * inv_n))), rs);
        } else if (dxa) {
            double m[4]; /* (row a again as row b: its moments unused; one kernel less to compile) */
            NBWD__KF(nbwd__fused_moments_rows)(xa, dya, dxa, &c, xa, dya, 0.0f, m, dt, n, cols, r->stream);
        }
    }
    if (r->stream && r->dx) NBWD__V_FENCE();
}

/* The rows of a LayerNorm batch with dx, software-pipelined: row i's sums
   are reduced in the loop that writes row i-1's dx. */
NBWD__KFN void NBWD__KF(nbwd__ln_rows_dx_body)(const nbwd__rows *r, int dt, nbwd__cols cols, float *keep,
                                               const int has_res) {
    int64_t i, n = r->n, esz = (int64_t)nbwd__esize(dt);
    float inv_n = 1.0f / (float)n, sums[2];
    NBWD__K(nbwd__coef) ca, cb;
    NBWD__K(nbwd__reduce_row)(r->x + r->x_off[0] * esz, r->dy + r->dy_off[0] * esz, dt, n, r->xm[0], r->xs[0], cols,
                              1, sums, keep, 0);
    for (i = 1; i < r->count; ++i) {
        ca = NBWD__K(nbwd__coef_of)(r->xm[i - 1], r->xs[i - 1], NBWD__MEAN_G(r->rms, sums, inv_n), sums[1] * inv_n,
                                    r->rstd[i - 1]);
        cb = NBWD__K(nbwd__coef_of)(r->xm[i], r->xs[i], 0.0f, 0.0f, 0.0f);
        NBWD__BY_DT(dt, NBWD__KF(nbwd__fused_rows)(r->x + r->x_off[i - 1] * esz, r->dy + r->dy_off[i - 1] * esz,
                                                   r->dx + r->dx_off[i - 1] * esz, &ca, r->x + r->x_off[i] * esz,
                                                   r->dy + r->dy_off[i] * esz, &cb, sums, dt_, n, cols, keep,
                                                   r->stream, has_res ? r->res + r->res_off[i - 1] * esz : NULL,
                                                   has_res));
    }
    i = r->count - 1;
    ca = NBWD__K(nbwd__coef_of)(r->xm[i], r->xs[i], NBWD__MEAN_G(r->rms, sums, inv_n), sums[1] * inv_n, r->rstd[i]);
    NBWD__KF(nbwd__apply_row)(r->x + r->x_off[i] * esz, r->dy + r->dy_off[i] * esz, r->dx + r->dx_off[i] * esz, dt,
                              n, &ca, cols, 1, keep, r->stream, has_res ? r->res + r->res_off[i] * esz : NULL,
                              has_res);
    if (r->stream) NBWD__V_FENCE(); /* order the streamed stores before the caller reads dx */
}

/* Narrow LayerNorm rows, nv <= NBWD__NARROW_VECS vectors (the last partial
   when n % VW): each row is loaded once and kept in registers for its sums
   and its dx, and gamma and the column partials stay in registers for the
   whole batch (through memory, each row's update of a partial would wait
   for the previous row's store of it). Vector v goes to sum chain v & 1, a
   partial last one to chain 1: reduce_row's order. */
NBWD__KFN void NBWD__KF(nbwd__ln_narrow_body)(const nbwd__rows *r, int dt, nbwd__cols cols, const int nv) {
    int64_t i, n = r->n, esz = (int64_t)nbwd__esize(dt);
    const int tail = (int)(n % NBWD__VW), last = tail ? tail : NBWD__VW; /* the last vector's lanes */
    /* bf16: whole vectors stored in pairs (see store_pair) */
    const int paired = dt == NBWD_BF16 ? (tail ? nv - 1 : nv) & ~1 : 0;
    NBWD__V gam[NBWD__NARROW_VECS], cdg[NBWD__NARROW_VECS], cdb[NBWD__NARROW_VECS];
    NBWD__V xh[NBWD__NARROW_VECS], g[NBWD__NARROW_VECS];
    float inv_n = 1.0f / (float)n;
    /* (locals: read once, not again after every store through dx) */
    const char *const res_rows = r->res, *const x_rows = r->x, *const dy_rows = r->dy;
    char *const dx_rows = r->dx;
    const int64_t count = r->count;
    const int rms = r->rms, stream = r->stream && NBWD__HAS_STREAM;
#define NBWD__LANES(v) ((v) == nv - 1 ? last : NBWD__VW)
    NBWD__EACH_VEC(v) {
        gam[v] = NBWD__K(nbwd__load)(cols.gamma + v * NBWD__VW, NBWD__LANES(v));
        cdg[v] = cols.dg ? NBWD__K(nbwd__load)(cols.dg + v * NBWD__VW, NBWD__LANES(v)) : NBWD__V_ZERO();
        cdb[v] = cols.dg ? NBWD__K(nbwd__load)(cols.db + v * NBWD__VW, NBWD__LANES(v)) : NBWD__V_ZERO();
    }
    for (i = 0; i < count; ++i) {
        const char *x = x_rows + r->x_off[i] * esz, *dy = dy_rows + r->dy_off[i] * esz;
        NBWD__K(nbwd__coef) c = NBWD__K(nbwd__coef_of)(r->xm[i], r->xs[i], 0.0f, 0.0f, r->rstd[i]);
        NBWD__K(nbwd__sums) s;
        NBWD__K(nbwd__sums_zero)(&s);
        NBWD__EACH_VEC(v) {
            NBWD__V vdy = NBWD__K(nbwd__load_data)(dy, v * NBWD__VW, NBWD__LANES(v), dt);
            xh[v] = NBWD__XHAT(&c, NBWD__K(nbwd__load_data)(x, v * NBWD__VW, NBWD__LANES(v), dt));
            if (cols.dg) {
                cdg[v] = NBWD__V_FMA(vdy, xh[v], cdg[v]);
                cdb[v] = NBWD__V_ADD(vdy, cdb[v]);
            }
            g[v] = NBWD__V_MUL(vdy, gam[v]);
            if (NBWD__LANES(v) < NBWD__VW || (v & 1)) {
                s.g1 = NBWD__V_ADD(s.g1, g[v]);
                s.gx1 = NBWD__V_FMA(g[v], xh[v], s.gx1);
            } else {
                s.g0 = NBWD__V_ADD(s.g0, g[v]);
                s.gx0 = NBWD__V_FMA(g[v], xh[v], s.gx0);
            }
        }
        if (dx_rows) {
            char *dx = dx_rows + r->dx_off[i] * esz;
            float sums[2];
            int64_t nt_begin = 0, nt_end = 0;
            int whole; /* the row is whole lines: every vector non-temporal */
            NBWD__V out[NBWD__NARROW_VECS];
            NBWD__K(nbwd__sums_out)(&s, sums);
            c.mg = NBWD__V_SET1(NBWD__MEAN_G(rms, sums, inv_n));
            c.mgx = NBWD__V_SET1(sums[1] * inv_n);
            if (stream) nbwd__whole_lines(dx, esz, n, &nt_begin, &nt_end);
            whole = nt_begin == 0 && nt_end == n;
            NBWD__EACH_VEC(v) { out[v] = NBWD__DX(&c, g[v], xh[v]); }
            if (res_rows) { /* a residual gradient: added before the one rounding (a test per row) */
                const char *res = res_rows + r->res_off[i] * esz;
                NBWD__EACH_VEC(v) {
                    out[v] = NBWD__V_ADD(out[v], NBWD__K(nbwd__load_data)(res, v * NBWD__VW, NBWD__LANES(v), dt));
                }
            }
            if (paired >= 2) NBWD__KF(nbwd__store_pair)(dx, 0, dt, out[0], out[1], whole);
            if (paired >= 4) NBWD__KF(nbwd__store_pair)(dx, 2 * NBWD__VW, dt, out[2], out[3], whole);
            NBWD__EACH_VEC(v) {
                if (v >= paired) NBWD__KF(nbwd__store_data)(dx, v * NBWD__VW, NBWD__LANES(v), dt, out[v], whole);
            }
        }
    }
    if (cols.dg) {
        NBWD__EACH_VEC(v) {
            NBWD__K(nbwd__store)(cols.dg + v * NBWD__VW, NBWD__LANES(v), cdg[v], 0);
            NBWD__K(nbwd__store)(cols.db + v * NBWD__VW, NBWD__LANES(v), cdb[v], 0);
        }
    }
    if (dx_rows && r->stream) NBWD__V_FENCE();
#undef NBWD__LANES
}
/* keep: as col_reduce_at's, dy masked by its bits */
NBWD__KFN void NBWD__KF(nbwd__col_apply_at)(nbwd__chans ch, const void *x, const void *dy, const uint16_t *keep,
                                            void *dx, int dt, int64_t j, int lanes, int stream) {
    NBWD__V vdy = NBWD__K(nbwd__load_data)(dy, j, lanes, dt);
    NBWD__V xh = NBWD__K(nbwd__chan_xhat)(ch, x, dt, j, lanes);
#if NBWD__HAS_RELU_BITS
    if (keep) vdy = NBWD__V_RELU_APPLY(vdy, keep[j / NBWD__VW]);
#else
    (void)keep;
#endif
    NBWD__V out;
    if (ch.gain) vdy = NBWD__V_MUL(vdy, NBWD__K(nbwd__load)(ch.gain + j, lanes));
    out = NBWD__DX_OF(vdy, xh, NBWD__K(nbwd__load)(ch.mg + j, lanes), NBWD__K(nbwd__load)(ch.mgx + j, lanes),
                              NBWD__K(nbwd__load)(ch.scale + j, lanes));
    NBWD__KF(nbwd__store_data)(dx, j, lanes, dt, out, stream);
}
/* A batch of BatchNorm NXC rows (every channel in each row): the column
   sums (pass 1), or dx (pass 2: r->dx set). relu (a constant): the fused
   ReLU's rows (nbwd__rows.keep), whole vectors (the driver sends no
   others), a copy of their own (nbwd__bn_relu_rows), so that the plain
   rows test nothing per vector. */
NBWD__KFN void NBWD__KF(nbwd__bn_rows_body)(const nbwd__rows *r, int dt, const int relu) {
    int64_t i, j, n = r->n, full = n - n % NBWD__VW, esz = (int64_t)nbwd__esize(dt);
    const nbwd__chans ch = r->chans;
    const int64_t words = (n + NBWD__VW - 1) / NBWD__VW;
    for (i = 0; i < r->count; ++i) {
        const char *x = r->x + r->x_off[i] * esz, *dy = r->dy + r->dy_off[i] * esz;
        uint16_t *keep = relu ? r->keep + i * words : NULL;
        if (r->dx) {
            char *dx = r->dx + r->dx_off[i] * esz;
            int64_t nt_end = nbwd__lead_lines(dx, esz, n, r->stream && NBWD__HAS_STREAM);
            for (j = 0; j < full; j += NBWD__VW)
                NBWD__KF(nbwd__col_apply_at)(ch, x, dy, keep, dx, dt, j, NBWD__VW, j + NBWD__VW <= nt_end);
            if (!relu && full < n) NBWD__KF(nbwd__col_apply_at)(ch, x, dy, NULL, dx, dt, full, (int)(n - full), 0);
        } else {
            const char *y = relu ? r->relu_dst + r->res_off[i] * esz : NULL;
            float *add = relu && r->relu_add ? (float *)(void *)(r->relu_add + r->dy_off[i] * esz) : NULL;
            int64_t add_nt = add ? nbwd__lead_lines(add, esz, n, r->stream && NBWD__HAS_STREAM) : 0;
            for (j = 0; j < full; j += NBWD__VW)
                NBWD__K(nbwd__col_reduce_at)(ch, x, dy, y, keep, add, j + NBWD__VW <= add_nt, dt, j, NBWD__VW);
            if (!relu && full < n)
                NBWD__K(nbwd__col_reduce_at)(ch, x, dy, NULL, NULL, NULL, 0, dt, full, (int)(n - full));
        }
    }
    if ((r->dx || r->relu_add) && r->stream) NBWD__V_FENCE();
}
/* Rows of at most NBWD__NARROW_VECS vectors: the per-channel coefficients
   and the column partials stay in registers for the batch (through memory,
   each row's update of a partial waits for the previous row's store of it,
   and a masked store does not forward to the next row's masked load). nv,
   the row's vectors, is a run-time count here: one copy, as fast as a copy
   per count (bench/NOTES.md). The operations of bn_rows_body in its order,
   so the same bits. */
NBWD__KFN void NBWD__KF(nbwd__bn_narrow_body)(const nbwd__rows *r, int dt, const int nv) {
    int64_t i, n = r->n, esz = (int64_t)nbwd__esize(dt);
    const int tail = (int)(n % NBWD__VW), last = tail ? tail : NBWD__VW; /* the last vector's lanes */
    NBWD__V vxm[NBWD__NARROW_VECS], vxs[NBWD__NARROW_VECS];
    NBWD__V acc_dg[NBWD__NARROW_VECS], acc_db[NBWD__NARROW_VECS];                         /* pass 1 */
    NBWD__V vmg[NBWD__NARROW_VECS], vmgx[NBWD__NARROW_VECS], vscale[NBWD__NARROW_VECS]; /* pass 2 */
    const nbwd__chans ch = r->chans;
    /* every element set (what a pass does not load stays unused), with
       constant indices, so the arrays stay in registers */
    NBWD__ZERO_VECS(vxm); NBWD__ZERO_VECS(vxs); NBWD__ZERO_VECS(acc_dg); NBWD__ZERO_VECS(acc_db);
    NBWD__ZERO_VECS(vmg); NBWD__ZERO_VECS(vmgx); NBWD__ZERO_VECS(vscale);
#define NBWD__LANES(v) ((v) == nv - 1 ? last : NBWD__VW)
    NBWD__EACH_VEC(v) {
        vxm[v] = NBWD__K(nbwd__load)(ch.xm + v * NBWD__VW, NBWD__LANES(v));
        vxs[v] = NBWD__K(nbwd__load)(ch.xs + v * NBWD__VW, NBWD__LANES(v));
        if (r->dx) {
            vmg[v] = NBWD__K(nbwd__load)(ch.mg + v * NBWD__VW, NBWD__LANES(v));
            vmgx[v] = NBWD__K(nbwd__load)(ch.mgx + v * NBWD__VW, NBWD__LANES(v));
            vscale[v] = NBWD__K(nbwd__load)(ch.scale + v * NBWD__VW, NBWD__LANES(v));
        } else {
            acc_dg[v] = NBWD__K(nbwd__load)(ch.dg + v * NBWD__VW, NBWD__LANES(v));
            acc_db[v] = NBWD__K(nbwd__load)(ch.db + v * NBWD__VW, NBWD__LANES(v));
        }
    }
    for (i = 0; i < r->count; ++i) {
        const char *x = r->x + r->x_off[i] * esz, *dy = r->dy + r->dy_off[i] * esz;
        if (r->dx) {
            char *dx = r->dx + r->dx_off[i] * esz;
            int64_t nt_end = nbwd__lead_lines(dx, esz, n, r->stream && NBWD__HAS_STREAM);
            NBWD__EACH_VEC(v) {
                NBWD__V vdy = NBWD__K(nbwd__load_data)(dy, v * NBWD__VW, NBWD__LANES(v), dt);
                NBWD__V xh =
                    NBWD__XHAT_OF(NBWD__K(nbwd__load_data)(x, v * NBWD__VW, NBWD__LANES(v), dt), vxm[v], vxs[v]);
                NBWD__KF(nbwd__store_data)(dx, v * NBWD__VW, NBWD__LANES(v), dt,
                                           NBWD__DX_OF(vdy, xh, vmg[v], vmgx[v], vscale[v]), (v + 1) * NBWD__VW <= nt_end);
            }
        } else {
            NBWD__EACH_VEC(v) {
                NBWD__V vdy = NBWD__K(nbwd__load_data)(dy, v * NBWD__VW, NBWD__LANES(v), dt);
                NBWD__V xh =
                    NBWD__XHAT_OF(NBWD__K(nbwd__load_data)(x, v * NBWD__VW, NBWD__LANES(v), dt), vxm[v], vxs[v]);
                acc_dg[v] = NBWD__V_FMA(vdy, xh, acc_dg[v]);
                acc_db[v] = NBWD__V_ADD(vdy, acc_db[v]);
            }
        }
    }
    if (r->dx) {
        if (r->stream) NBWD__V_FENCE();
    } else {
        NBWD__EACH_VEC(v) {
            NBWD__K(nbwd__store)(ch.dg + v * NBWD__VW, NBWD__LANES(v), acc_dg[v], 0);
            NBWD__K(nbwd__store)(ch.db + v * NBWD__VW, NBWD__LANES(v), acc_db[v], 0);
        }
    }
#undef NBWD__LANES
}
NBWD__KFN void NBWD__KF(nbwd__planes_apply_body)(const nbwd__planes *p, int dt) {
    const nbwd__cols none = {NULL, NULL, NULL};
    int64_t i, esz = (int64_t)nbwd__esize(dt);
    for (i = 0; i < p->count; ++i) {
        NBWD__K(nbwd__coef) c = NBWD__K(nbwd__coef_of)(p->xm[i], p->xs[i], p->mg[i], p->mgx[i], p->scale[i]);
        NBWD__KF(nbwd__apply_row)(p->x + i * p->x_step * esz, p->dy + i * p->dy_step * esz,
                                  p->dx + i * p->dx_step * esz, dt, p->n, &c, none, 0, NULL, p->stream, NULL, 0);
    }
}

/* A batch of BatchNorm rows: the narrow body where it measured faster */
NBWD__KFN void NBWD__KF(nbwd__bn_rows_any)(const nbwd__rows *r, int dt, int narrow) {
    if (narrow && r->n <= NBWD__NARROW_VECS * NBWD__VW && !r->chans.gain)
        NBWD__KF(nbwd__bn_narrow_body)(r, dt, (int)((r->n + NBWD__VW - 1) / NBWD__VW));
    else NBWD__KF(nbwd__bn_rows_body)(r, dt, 0);
}


/* out = v + res over [i, end) in type dt; the whole vectors that end by
   stream_end non-temporally (out + i 64-byte aligned then) */
NBWD__KFN void NBWD__KF(nbwd__add_span)(const float *v, const void *res, void *out, int dt, int64_t i, int64_t end,
                                        int64_t stream_end) {
    for (; i < end; i += NBWD__VW) {
        int lanes = end - i < NBWD__VW ? (int)(end - i) : NBWD__VW;
        NBWD__V s = NBWD__K(nbwd__load)(v + i, lanes);
        if (res) s = NBWD__V_ADD(s, NBWD__K(nbwd__load_data)(res, i, lanes, dt));
        NBWD__KF(nbwd__store_data)(out, i, lanes, dt, s, lanes == NBWD__VW && i + NBWD__VW <= stream_end);
    }
}

/* LayerNorm rows of 2-4 vectors: a function per count, so that the row,
   gamma and the column partials stay in registers */
#if NBWD__NARROW_LN(NBWD__FMT)
NBWD__NOINLINE NBWD__KTARGET void NBWD__KF(nbwd__ln_narrow2)(const nbwd__rows *r) {
    NBWD__KF(nbwd__ln_narrow_body)(r, NBWD__FMT_DT(r->dt), r->cols, 2);
}
NBWD__NOINLINE NBWD__KTARGET void NBWD__KF(nbwd__ln_narrow3)(const nbwd__rows *r) {
    NBWD__KF(nbwd__ln_narrow_body)(r, NBWD__FMT_DT(r->dt), r->cols, 3);
}
#if NBWD__FMA_FUSED /* (sse: rows of 4 vectors take the row body, see NBWD__NARROW_LN) */
NBWD__NOINLINE NBWD__KTARGET void NBWD__KF(nbwd__ln_narrow4)(const nbwd__rows *r) {
    NBWD__KF(nbwd__ln_narrow_body)(r, NBWD__FMT_DT(r->dt), r->cols, 4);
}
#endif
#endif
/* LayerNorm rows with dx: 16-bit rows of up to NBWD__KEEP_COLS keep g and
   xhat (its own function: only this one takes the buffer's stack). With a
   residual gradient (r->res) each dx vector adds its vector before the
   store: read in the pass that reads x and dy, the sum rounded once to the
   data type (the bits of the staged rows' f32 dx + the residual). */
NBWD__NOINLINE NBWD__KTARGET void NBWD__KF(nbwd__ln_rows_dx)(const nbwd__rows *r, nbwd__cols cols) {
    float keep[NBWD__KEEP_XH + NBWD__KEEP_COLS];
    const int dt = NBWD__FMT_DT(r->dt);
    NBWD__KF(nbwd__ln_rows_dx_body)(r, dt, cols, dt != NBWD_F32 && r->n <= NBWD__KEEP_COLS ? keep : NULL,
                                    r->res != NULL);
}
/* A batch of LayerNorm (RMSNorm) rows; gamma never NULL (ones without
   affine) */
static NBWD__KTARGET void NBWD__KF(nbwd__ln_rows)(const nbwd__rows *r) {
    const int dt = NBWD__FMT_DT(r->dt);
    if (r->none) {
        NBWD__KF(nbwd__ln_none_body)(r, dt, r->cols);
        return;
    }
#if NBWD__NARROW_LN(NBWD__FMT)
    if (r->n > NBWD__VW && r->n <= (NBWD__FMA_FUSED ? 4 : 3) * NBWD__VW) {
        switch ((r->n + NBWD__VW - 1) / NBWD__VW) {
        case 2: NBWD__KF(nbwd__ln_narrow2)(r); break;
        case 3: NBWD__KF(nbwd__ln_narrow3)(r); break;
#if NBWD__FMA_FUSED
        default: NBWD__KF(nbwd__ln_narrow4)(r); break;
#else
        default: NBWD__KF(nbwd__ln_narrow3)(r); break;
#endif
        }
        return;
    }
#endif
    if (r->res) { /* a residual, added in dx's pass (the sweep adds none) */
        NBWD__KF(nbwd__ln_rows_dx)(r, r->cols);
        return;
    }
    if (NBWD__K(nbwd__ln_try_sweep)(r, dt, r->cols)) return;
    if (!r->dx) NBWD__K(nbwd__ln_rows_sums)(r, dt, r->cols);
    else NBWD__KF(nbwd__ln_rows_dx)(r, r->cols);
}
#if NBWD__HAS_RELU_BITS
/* BatchNorm NXC rows with the fused ReLU's bits (16-bit data: dst widened,
   whose f32 test is the 16-bit one's; on avx2 a copy per data type, as the
   plain rows) */
NBWD__NOINLINE NBWD__KTARGET void NBWD__KF(nbwd__bn_relu_rows)(const nbwd__rows *r) {
    const int dt = NBWD__FMT_DT(r->dt);
    NBWD__BY_DT(dt, NBWD__KF(nbwd__bn_rows_body)(r, dt_, 1));
}
#endif
/* A batch of BatchNorm (GroupNorm) rows */
static NBWD__KTARGET void NBWD__KF(nbwd__bn_rows)(const nbwd__rows *r) {
    const int dt = NBWD__FMT_DT(r->dt);
#if NBWD__HAS_RELU_BITS
    if (r->keep) {
        NBWD__KF(nbwd__bn_relu_rows)(r);
        return;
    }
#endif
    NBWD__BY_DT(dt, NBWD__KF(nbwd__bn_rows_any)(r, dt_, NBWD__NARROW_BN(dt_)));
}
/* A run of BatchNorm (GroupNorm) NCX planes' sums (bf16i's too, though it
   only loads data: with the 16 format's, whose data type is a run-time
   choice, avx512_bf16's bf16 NCX rows were 4-9 % slower) */
static NBWD__KTARGET void NBWD__KF(nbwd__planes_reduce)(const nbwd__planes *p) {
    NBWD__K(nbwd__planes_reduce_body)(p, NBWD__FMT_DT(p->dt));
}
/* A run of NCX planes' dx */
static NBWD__KTARGET void NBWD__KF(nbwd__planes_apply)(const nbwd__planes *p) {
    NBWD__KF(nbwd__planes_apply_body)(p, NBWD__FMT_DT(p->dt));
}
/* out[i] = v[i] + res[i] (res NULL: v[i]) in type dt; stream: whole
   lines non-temporally (not fenced) */
static NBWD__KTARGET void NBWD__KF(nbwd__add_store)(const float *v, const void *res, void *out, int dt, int64_t n,
                                                    int stream) {
    int64_t nt_begin = 0, nt_end = 0;
    dt = NBWD__FMT_DT(dt);
    if (stream && NBWD__HAS_STREAM) nbwd__whole_lines(out, (int64_t)nbwd__esize(dt), n, &nt_begin, &nt_end);
    NBWD__KF(nbwd__add_span)(v, res, out, dt, 0, nt_begin, 0);
    NBWD__KF(nbwd__add_span)(v, res, out, dt, nt_begin, n, nt_end);
}
#if NBWD__FMT != NBWD__FMT_BF16I
/* xhat from the forward output: out[i] = (y[i] - beta[i]) * inv[i], y of
   type dt, no FMA (every path's bits are the scalar code's) */
static NBWD__KTARGET void NBWD__KF(nbwd__unscale)(const void *y, int dt, const float *beta, const float *inv,
                                                  float *out, int64_t n) {
    int64_t i;
    dt = NBWD__FMT_DT(dt);
    for (i = 0; i < n; i += NBWD__VW) {
        int lanes = n - i < NBWD__VW ? (int)(n - i) : NBWD__VW;
        NBWD__V v = NBWD__V_SUB(NBWD__K(nbwd__load_data)(y, i, lanes, dt), NBWD__K(nbwd__load)(beta + i, lanes));
        NBWD__K(nbwd__store)(out + i, lanes, NBWD__V_MUL(v, NBWD__K(nbwd__load)(inv + i, lanes)), 0);
    }
}
#endif
#if NBWD__FMT != NBWD__FMT_BF16I /* (they only load data: the 16 format's serve bf16i) */
/* GroupNorm's NBWD_STATS_NONE: NCX planes' statistics (see
   nbwd__row_stats_body), and GroupNorm NXC's column sums */
static NBWD__KTARGET void NBWD__KF(nbwd__row_stats)(const nbwd__rows *r, double *out) {
    NBWD__K(nbwd__row_stats_body)(r, NBWD__FMT_DT(r->dt), out);
}
static NBWD__KTARGET void NBWD__KF(nbwd__col_stats)(const nbwd__rows *r, const float *m, float *sums) {
    NBWD__K(nbwd__col_stats_body)(r, NBWD__FMT_DT(r->dt), m, sums);
}
#endif
#if NBWD__FMT != NBWD__FMT_F32 && NBWD__FMT != NBWD__FMT_BF16I
/* The bulk conversion to f32 (nbwd_bf16_to_f32_n, nbwd_f16_to_f32_n; the
   staged rows) */
static NBWD__KTARGET void NBWD__KF(nbwd__widen)(const uint16_t *src, float *dst, int dt, int64_t n) {
    int64_t i = 0;
    dt = NBWD__FMT_DT(dt);
    for (; i + NBWD__VW <= n; i += NBWD__VW) NBWD__V_STORE(dst + i, NBWD__K(nbwd__load_data)(src, i, NBWD__VW, dt));
    if (i < n) NBWD__K(nbwd__store)(dst + i, (int)(n - i), NBWD__K(nbwd__load_data)(src, i, (int)(n - i), dt), 0);
}
#endif
#if NBWD__FMT != NBWD__FMT_F32
/* The bulk conversion from f32 */
static NBWD__KTARGET void NBWD__KF(nbwd__narrow)(const float *src, uint16_t *dst, int dt, int64_t n) {
    int64_t i = 0;
    dt = NBWD__FMT_DT(dt);
    for (; i + 2 * NBWD__VW <= n; i += 2 * NBWD__VW)
        NBWD__KF(nbwd__store_pair)(dst, i, dt, NBWD__V_LOAD(src + i), NBWD__V_LOAD(src + i + NBWD__VW), 0);
    for (; i < n; i += NBWD__VW) {
        int lanes = n - i < NBWD__VW ? (int)(n - i) : NBWD__VW;
        NBWD__KF(nbwd__store_data)(dst, i, lanes, dt, NBWD__K(nbwd__load)(src + i, lanes), 0);
    }
}
#endif
#undef NBWD__KF
#undef NBWD__FMT_DT
#undef NBWD__BY_DT
#endif /* the per-format kernels and entry points */

#if defined(NBWD__KERNEL_PASS) && !defined(NBWD__ENTRY_PASS)
/* The end of a layer's pass: the template's names and the layer's, all of
   them, so that the next layer starts from nothing. */
#if defined(NBWD__ENTRIES_INLINE)
#undef NBWD__FMT
#undef NBWD__ENTRIES_INLINE
#endif
#undef NBWD__FMT_F32
#undef NBWD__FMT_16
#undef NBWD__FMT_BF16
#undef NBWD__FMT_BF16I
#undef NBWD__K
#undef NBWD__KFN
#undef NBWD__NARROW_LN
#undef NBWD__NARROW_BN
#undef NBWD__PIPELINE_NONE
#undef NBWD__XHAT_OF
#undef NBWD__DX_OF
#undef NBWD__XHAT
#undef NBWD__DX
#undef NBWD__EACH_VEC
#undef NBWD__MEAN_G
#undef NBWD__NARROW_VECS
#undef NBWD__ZERO_VECS
#undef NBWD__KEEP_COLS
#undef NBWD__KEEP_XH
#undef NBWD__KPF
#undef NBWD__KPF_BYTES
#undef NBWD__SWEEP_BYTES
#undef NBWD__SWEEP_VECS
#undef NBWD__HAS_STREAM
#undef NBWD__HAS_RELU_BITS
#undef NBWD__V_RELU_KEEP
#undef NBWD__V_RELU_APPLY
#undef NBWD__HAS_F16
#undef NBWD__HAS_BF16I
#undef NBWD__KSUFFIX
#undef NBWD__KTARGET
#undef NBWD__V
#undef NBWD__VW
#undef NBWD__V_ZERO
#undef NBWD__V_SET1
#undef NBWD__V_ADD
#undef NBWD__V_SUB
#undef NBWD__V_MUL
#undef NBWD__V_FMA
#undef NBWD__V_HSUM
#undef NBWD__V_LOAD
#undef NBWD__V_STORE
#undef NBWD__V_LOAD_N
#undef NBWD__V_STORE_N
#undef NBWD__V_STREAM
#undef NBWD__V_FENCE
#undef NBWD__H
#undef NBWD__H_LOAD
#undef NBWD__H_LOAD_N
#undef NBWD__H_STORE
#undef NBWD__H_STORE_N
#undef NBWD__H_STREAM
#undef NBWD__WIDEN_F16
#undef NBWD__WIDEN_BF16
#undef NBWD__NARROW_F16
#undef NBWD__NARROW_BF16
#undef NBWD__NARROW_BF16_INSN
#undef NBWD__V_NARROW2_BF16
#undef NBWD__V_STREAM2_BF16
#undef NBWD__V_RSTD_LANES
#undef NBWD__V_RSTD
#undef NBWD__FMA_FUSED
#undef NBWD__KERNEL_PASS
#endif

#if defined(NBWD__IMPL_TAIL) && !defined(NBWD__KERNEL_PASS)
/* ==========================================================================
   IMPLEMENTATION, continued: the SIMD paths, the kernel tables, dispatch,
   validation and the operations
   ========================================================================== */
#undef NBWD__IMPL_TAIL
#if !defined(NORM_BWD_NO_SIMD)
#if defined(__has_include)
#if !__has_include("norm_bwd_simd.h")
#error "norm_bwd.h: norm_bwd_simd.h (the SIMD paths) is not next to norm_bwd.h nor on the include path: copy it too, or define NORM_BWD_NO_SIMD for the scalar path alone"
#endif
#endif
#include "norm_bwd_simd.h"
#endif
#if defined(NBWD__SCALAR_FORCED_ONLY) && !defined(NBWD__HAVE_SSE) && !defined(NBWD__HAVE_NEON)
#error "norm_bwd.h: internal: the scalar kernels were compiled as a forced path only, but no SIMD path that always runs was"
#endif

/* -------------------------------------------------------- kernel tables */
/* Which compiled kernel runs, for each path, kind of kernel and data type:
   the one place that decides. Columns: f32, f16 and bf16 data (nbwd_dtype
   order). Names: nbwd__<kernel>_<format>_<layer> (ENTRY POINTS): format f32;
   16, f16 or bf16 as the call says, bf16 narrowed in integer code; bf16, bf16
   alone (a layer without f16 conversions); bf16i, bf16 narrowed with the
   layer's bf16 instruction. Kernels that only load 16-bit data (unscale,
   widen) have no bf16i form: the narrowing does not enter them. A
   name that does not exist fails the build, and a compiled kernel that no
   table names is an unused function (a warning). */
static const nbwd__kernels nbwd__kernels_scalar = {
    NBWD_ISA_SCALAR,
    {nbwd__ln_rows_f32_scalar, nbwd__ln_rows_16_scalar, nbwd__ln_rows_16_scalar},
    {nbwd__bn_rows_f32_scalar, nbwd__bn_rows_16_scalar, nbwd__bn_rows_16_scalar},
    {nbwd__planes_reduce_f32_scalar, nbwd__planes_reduce_16_scalar, nbwd__planes_reduce_16_scalar},
    {nbwd__planes_apply_f32_scalar, nbwd__planes_apply_16_scalar, nbwd__planes_apply_16_scalar},
    {nbwd__add_store_f32_scalar, nbwd__add_store_16_scalar, nbwd__add_store_16_scalar},
    {nbwd__unscale_f32_scalar, nbwd__unscale_16_scalar, nbwd__unscale_16_scalar},
    {NULL, nbwd__widen_16_scalar, nbwd__widen_16_scalar},
    {NULL, nbwd__narrow_16_scalar, nbwd__narrow_16_scalar},
    {nbwd__row_stats_f32_scalar, nbwd__row_stats_16_scalar, nbwd__row_stats_16_scalar},
    {nbwd__col_stats_f32_scalar, nbwd__col_stats_16_scalar, nbwd__col_stats_16_scalar},
    nbwd__add_scalar, nbwd__rstd_scalar, nbwd__fence_scalar, nbwd__mask_scalar,
    {nbwd__relu_lanes_scalar, nbwd__relu_lanes_scalar, nbwd__relu_lanes_scalar}, nbwd__bn_narrow_cols_scalar};
#if defined(NBWD__HAVE_SSE)
static const nbwd__kernels nbwd__kernels_sse = {
    NBWD_ISA_SSE,
    {nbwd__ln_rows_f32_sse, nbwd__ln_rows_16_sse, nbwd__ln_rows_16_sse},
    {nbwd__bn_rows_f32_sse, nbwd__bn_rows_16_sse, nbwd__bn_rows_16_sse},
    {nbwd__planes_reduce_f32_sse, nbwd__planes_reduce_16_sse, nbwd__planes_reduce_16_sse},
    {nbwd__planes_apply_f32_sse, nbwd__planes_apply_16_sse, nbwd__planes_apply_16_sse},
    {nbwd__add_store_f32_sse, nbwd__add_store_16_sse, nbwd__add_store_16_sse},
    {nbwd__unscale_f32_sse, nbwd__unscale_16_sse, nbwd__unscale_16_sse},
    {NULL, nbwd__widen_16_sse, nbwd__widen_16_sse},
    {NULL, nbwd__narrow_16_sse, nbwd__narrow_16_sse},
    {nbwd__row_stats_f32_sse, nbwd__row_stats_16_sse, nbwd__row_stats_16_sse},
    {nbwd__col_stats_f32_sse, nbwd__col_stats_16_sse, nbwd__col_stats_16_sse},
    nbwd__add_sse, nbwd__rstd_sse, nbwd__fence_sse, nbwd__mask_sse,
    {nbwd__relu_lanes_sse, nbwd__relu_lanes_sse, nbwd__relu_lanes_sse}, nbwd__bn_narrow_cols_sse};
#endif
#if defined(NBWD__HAVE_AVX2)
static const nbwd__kernels nbwd__kernels_avx2 = {
    NBWD_ISA_AVX2,
    {nbwd__ln_rows_f32_avx2, nbwd__ln_rows_16_avx2, nbwd__ln_rows_16_avx2},
    {nbwd__bn_rows_f32_avx2, nbwd__bn_rows_16_avx2, nbwd__bn_rows_16_avx2},
    {nbwd__planes_reduce_f32_avx2, nbwd__planes_reduce_16_avx2, nbwd__planes_reduce_16_avx2},
    {nbwd__planes_apply_f32_avx2, nbwd__planes_apply_16_avx2, nbwd__planes_apply_16_avx2},
    {nbwd__add_store_f32_avx2, nbwd__add_store_16_avx2, nbwd__add_store_16_avx2},
    {nbwd__unscale_f32_avx2, nbwd__unscale_16_avx2, nbwd__unscale_16_avx2},
    {NULL, nbwd__widen_16_avx2, nbwd__widen_16_avx2},
    {NULL, nbwd__narrow_16_avx2, nbwd__narrow_16_avx2},
    {nbwd__row_stats_f32_avx2, nbwd__row_stats_16_avx2, nbwd__row_stats_16_avx2},
    {nbwd__col_stats_f32_avx2, nbwd__col_stats_16_avx2, nbwd__col_stats_16_avx2},
    nbwd__add_avx2, nbwd__rstd_avx2, nbwd__fence_avx2, nbwd__mask_avx2,
    {nbwd__relu_lanes_avx2, nbwd__relu_lanes_avx2, nbwd__relu_lanes_avx2}, nbwd__bn_narrow_cols_avx2};
#endif
#if defined(NBWD__HAVE_AVX512)
static const nbwd__kernels nbwd__kernels_avx512 = {
    NBWD_ISA_AVX512,
    {nbwd__ln_rows_f32_avx512, nbwd__ln_rows_16_avx512, nbwd__ln_rows_16_avx512},
    {nbwd__bn_rows_f32_avx512, nbwd__bn_rows_16_avx512, nbwd__bn_rows_16_avx512},
    {nbwd__planes_reduce_f32_avx512, nbwd__planes_reduce_16_avx512, nbwd__planes_reduce_16_avx512},
    {nbwd__planes_apply_f32_avx512, nbwd__planes_apply_16_avx512, nbwd__planes_apply_16_avx512},
    {nbwd__add_store_f32_avx512, nbwd__add_store_16_avx512, nbwd__add_store_16_avx512},
    {nbwd__unscale_f32_avx512, nbwd__unscale_16_avx512, nbwd__unscale_16_avx512},
    {NULL, nbwd__widen_16_avx512, nbwd__widen_16_avx512},
    {NULL, nbwd__narrow_16_avx512, nbwd__narrow_16_avx512},
    {nbwd__row_stats_f32_avx512, nbwd__row_stats_16_avx512, nbwd__row_stats_16_avx512},
    {nbwd__col_stats_f32_avx512, nbwd__col_stats_16_avx512, nbwd__col_stats_16_avx512},
    nbwd__add_avx512, nbwd__rstd_avx512, nbwd__fence_avx512, nbwd__mask_avx512,
    {nbwd__relu_lanes_avx512, nbwd__relu_lanes_avx512, nbwd__relu_lanes_avx512}, nbwd__bn_narrow_cols_avx512};
#endif
#if defined(NBWD__HAVE_AVX512_BF16) /* avx512's kernels, bf16 narrowed by VCVTNEPS2BF16 */
static const nbwd__kernels nbwd__kernels_avx512_bf16 = {
    NBWD_ISA_AVX512_BF16,
    {nbwd__ln_rows_f32_avx512, nbwd__ln_rows_16_avx512, nbwd__ln_rows_bf16i_avx512},
    {nbwd__bn_rows_f32_avx512, nbwd__bn_rows_16_avx512, nbwd__bn_rows_bf16i_avx512},
    {nbwd__planes_reduce_f32_avx512, nbwd__planes_reduce_16_avx512, nbwd__planes_reduce_bf16i_avx512},
    {nbwd__planes_apply_f32_avx512, nbwd__planes_apply_16_avx512, nbwd__planes_apply_bf16i_avx512},
    {nbwd__add_store_f32_avx512, nbwd__add_store_16_avx512, nbwd__add_store_bf16i_avx512},
    {nbwd__unscale_f32_avx512, nbwd__unscale_16_avx512, nbwd__unscale_16_avx512},
    {NULL, nbwd__widen_16_avx512, nbwd__widen_16_avx512},
    {NULL, nbwd__narrow_16_avx512, nbwd__narrow_bf16i_avx512},
    {nbwd__row_stats_f32_avx512, nbwd__row_stats_16_avx512, nbwd__row_stats_16_avx512},
    {nbwd__col_stats_f32_avx512, nbwd__col_stats_16_avx512, nbwd__col_stats_16_avx512},
    nbwd__add_avx512, nbwd__rstd_avx512, nbwd__fence_avx512, nbwd__mask_avx512,
    {nbwd__relu_lanes_avx512, nbwd__relu_lanes_avx512, nbwd__relu_lanes_avx512}, nbwd__bn_narrow_cols_avx512};
#endif
#if defined(NBWD__HAVE_NEON) && defined(NBWD__NEON_NO_F16)
/* 32-bit Arm: no f16 vector conversions, f16 data runs the scalar kernels */
static const nbwd__kernels nbwd__kernels_neon = {
    NBWD_ISA_NEON,
    {nbwd__ln_rows_f32_neon, nbwd__ln_rows_16_scalar, nbwd__ln_rows_bf16_neon},
    {nbwd__bn_rows_f32_neon, nbwd__bn_rows_16_scalar, nbwd__bn_rows_bf16_neon},
    {nbwd__planes_reduce_f32_neon, nbwd__planes_reduce_16_scalar, nbwd__planes_reduce_bf16_neon},
    {nbwd__planes_apply_f32_neon, nbwd__planes_apply_16_scalar, nbwd__planes_apply_bf16_neon},
    {nbwd__add_store_f32_neon, nbwd__add_store_16_scalar, nbwd__add_store_bf16_neon},
    {nbwd__unscale_f32_neon, nbwd__unscale_16_scalar, nbwd__unscale_bf16_neon},
    {NULL, nbwd__widen_16_scalar, nbwd__widen_bf16_neon},
    {NULL, nbwd__narrow_16_scalar, nbwd__narrow_bf16_neon},
    {nbwd__row_stats_f32_neon, nbwd__row_stats_16_scalar, nbwd__row_stats_bf16_neon},
    {nbwd__col_stats_f32_neon, nbwd__col_stats_16_scalar, nbwd__col_stats_bf16_neon},
    nbwd__add_neon, nbwd__rstd_neon, nbwd__fence_neon, nbwd__mask_neon,
    {nbwd__relu_lanes_neon, 0, nbwd__relu_lanes_neon}, nbwd__bn_narrow_cols_neon};
#elif defined(NBWD__HAVE_NEON)
static const nbwd__kernels nbwd__kernels_neon = {
    NBWD_ISA_NEON,
    {nbwd__ln_rows_f32_neon, nbwd__ln_rows_16_neon, nbwd__ln_rows_16_neon},
    {nbwd__bn_rows_f32_neon, nbwd__bn_rows_16_neon, nbwd__bn_rows_16_neon},
    {nbwd__planes_reduce_f32_neon, nbwd__planes_reduce_16_neon, nbwd__planes_reduce_16_neon},
    {nbwd__planes_apply_f32_neon, nbwd__planes_apply_16_neon, nbwd__planes_apply_16_neon},
    {nbwd__add_store_f32_neon, nbwd__add_store_16_neon, nbwd__add_store_16_neon},
    {nbwd__unscale_f32_neon, nbwd__unscale_16_neon, nbwd__unscale_16_neon},
    {NULL, nbwd__widen_16_neon, nbwd__widen_16_neon},
    {NULL, nbwd__narrow_16_neon, nbwd__narrow_16_neon},
    {nbwd__row_stats_f32_neon, nbwd__row_stats_16_neon, nbwd__row_stats_16_neon},
    {nbwd__col_stats_f32_neon, nbwd__col_stats_16_neon, nbwd__col_stats_16_neon},
    nbwd__add_neon, nbwd__rstd_neon, nbwd__fence_neon, nbwd__mask_neon,
    {nbwd__relu_lanes_neon, nbwd__relu_lanes_neon, nbwd__relu_lanes_neon}, nbwd__bn_narrow_cols_neon};
#endif
#if defined(NBWD__HAVE_NEON_BF16) /* neon's kernels, bf16 narrowed by BFCVTN */
static const nbwd__kernels nbwd__kernels_neon_bf16 = {
    NBWD_ISA_NEON_BF16,
    {nbwd__ln_rows_f32_neon, nbwd__ln_rows_16_neon, nbwd__ln_rows_bf16i_neon},
    {nbwd__bn_rows_f32_neon, nbwd__bn_rows_16_neon, nbwd__bn_rows_bf16i_neon},
    {nbwd__planes_reduce_f32_neon, nbwd__planes_reduce_16_neon, nbwd__planes_reduce_bf16i_neon},
    {nbwd__planes_apply_f32_neon, nbwd__planes_apply_16_neon, nbwd__planes_apply_bf16i_neon},
    {nbwd__add_store_f32_neon, nbwd__add_store_16_neon, nbwd__add_store_bf16i_neon},
    {nbwd__unscale_f32_neon, nbwd__unscale_16_neon, nbwd__unscale_16_neon},
    {NULL, nbwd__widen_16_neon, nbwd__widen_16_neon},
    {NULL, nbwd__narrow_16_neon, nbwd__narrow_bf16i_neon},
    {nbwd__row_stats_f32_neon, nbwd__row_stats_16_neon, nbwd__row_stats_16_neon},
    {nbwd__col_stats_f32_neon, nbwd__col_stats_16_neon, nbwd__col_stats_16_neon},
    nbwd__add_neon, nbwd__rstd_neon, nbwd__fence_neon, nbwd__mask_neon,
    {nbwd__relu_lanes_neon, nbwd__relu_lanes_neon, nbwd__relu_lanes_neon}, nbwd__bn_narrow_cols_neon};
#endif

/* A set the vector kernels must not sum: its row or plane of n elements
   ends in a partial vector, whose lanes past the end load x as 0 and so
   take xhat = -xm * xs, and |xm * xs| passes FLT_MAX (a set constant near
   1e38 with epsilon 1e-5: in range, xhat 0): g (0 there) times that
   infinity would make the set's sums NaN. Such a set runs on the scalar
   kernels, alone; the choice depends on the set itself, so its bits do not
   depend on how sets are batched or threaded. NBWD__ENDS_PARTIAL: n is not
   a multiple of the path's vector (once per batch); NBWD__XHAT_OVERFLOWS:
   xm and xs are finite and their product is not (the cast rounds it to
   float where float arithmetic runs wider, as the vectors' does). An
   infinite or NaN mean or rstd stays on the path's kernels: its set's xhat
   is not finite anyway, and its sum of dy keeps its bits (NaN isolation). */
#define NBWD__ENDS_PARTIAL(k, n)                                                                                     \
    ((n) % ((k)->isa == NBWD_ISA_AVX512 || (k)->isa == NBWD_ISA_AVX512_BF16 ? 16                                   \
            : (k)->isa == NBWD_ISA_AVX2                                     ? 8                                    \
            : (k)->isa == NBWD_ISA_SCALAR                                   ? 1                                    \
                                                                            : 4) !=                                \
     0)
#define NBWD__XHAT_OVERFLOWS(xm, xs)                                                                               \
    ((xm) - (xm) == 0.0f && (xs) - (xs) == 0.0f && (float)((xm) * (xs)) - (float)((xm) * (xs)) != 0.0f)
/* Rows [a, b) of a batch as a batch of their own */
NBWD__PLAN_FN
static void nbwd__run_ln_rows_of(const nbwd__kernels *k, const nbwd__rows *rows, int64_t a, int64_t b) {
    nbwd__rows sub;
    memcpy(&sub, rows, offsetof(nbwd__rows, x_off));
    sub.count = b - a;
    memcpy(sub.x_off, rows->x_off + a, (size_t)(b - a) * sizeof sub.x_off[0]);
    memcpy(sub.dy_off, rows->dy_off + a, (size_t)(b - a) * sizeof sub.dy_off[0]);
    memcpy(sub.dx_off, rows->dx_off + a, (size_t)(b - a) * sizeof sub.dx_off[0]);
    memcpy(sub.xm, rows->xm + a, (size_t)(b - a) * sizeof sub.xm[0]);
    memcpy(sub.xs, rows->xs + a, (size_t)(b - a) * sizeof sub.xs[0]);
    memcpy(sub.rstd, rows->rstd + a, (size_t)(b - a) * sizeof sub.rstd[0]);
    memcpy(sub.res_off, rows->res_off + a, (size_t)(b - a) * sizeof sub.res_off[0]);
    k->ln_rows[rows->dt](&sub);
}

/* The drivers' calls into a path's kernels: the table's function for the
   data type at hand (LayerNorm rows and NCX planes whose sums would
   overflow past their end on the scalar kernels instead, in order). */
NBWD__PLAN_FN
static void nbwd__run_ln_rows(const nbwd__kernels *k, const nbwd__rows *rows) {
    int64_t i, a = 0;
    if (!rows->none && NBWD__ENDS_PARTIAL(k, rows->n))
        for (i = 0; i < rows->count; ++i)
            if (NBWD__XHAT_OVERFLOWS(rows->xm[i], rows->xs[i])) {
                if (a < i) nbwd__run_ln_rows_of(k, rows, a, i);
                nbwd__run_ln_rows_of(&nbwd__kernels_scalar, rows, i, i + 1);
                a = i + 1;
            }
    if (a == 0) k->ln_rows[rows->dt](rows);
    else if (a < rows->count) nbwd__run_ln_rows_of(k, rows, a, rows->count);
}
static void nbwd__run_bn_rows(const nbwd__kernels *k, const nbwd__rows *rows) { k->bn_rows[rows->dt](rows); }
/* Planes [a, b) of a run as a run of their own */
NBWD__PLAN_FN
static void nbwd__run_planes_reduce_of(const nbwd__kernels *k, const nbwd__planes *planes, int64_t a, int64_t b) {
    nbwd__planes sub = *planes;
    const int64_t esz = (int64_t)nbwd__esize(planes->dt);
    sub.count = b - a;
    sub.x += a * planes->x_step * esz;
    sub.dy += a * planes->dy_step * esz;
    sub.xm += a;
    sub.xs += a;
    sub.sums += a * planes->sums_step;
    k->planes_reduce[planes->dt](&sub);
}
NBWD__PLAN_FN
static void nbwd__run_planes_reduce(const nbwd__kernels *k, const nbwd__planes *planes) {
    int64_t i, a = 0;
    if (NBWD__ENDS_PARTIAL(k, planes->n))
        for (i = 0; i < planes->count; ++i)
            if (NBWD__XHAT_OVERFLOWS(planes->xm[i], planes->xs[i])) {
                if (a < i) nbwd__run_planes_reduce_of(k, planes, a, i);
                nbwd__run_planes_reduce_of(&nbwd__kernels_scalar, planes, i, i + 1);
                a = i + 1;
            }
    if (a == 0) k->planes_reduce[planes->dt](planes);
    else if (a < planes->count) nbwd__run_planes_reduce_of(k, planes, a, planes->count);
}
static void nbwd__run_planes_apply(const nbwd__kernels *k, const nbwd__planes *planes) {
    k->planes_apply[planes->dt](planes);
}
static void nbwd__run_add_store(const nbwd__kernels *k, const float *v, const void *res, void *out, int dt, int64_t n,
                                int stream) {
    k->add_store[dt](v, res, out, dt, n, stream);
}
static void nbwd__run_unscale(const nbwd__kernels *k, const void *y, int dt, const float *beta, const float *inv,
                              float *out, int64_t n) {
    k->unscale[dt](y, dt, beta, inv, out, n);
}
static void nbwd__run_widen(const nbwd__kernels *k, const uint16_t *src, float *dst, int dt, int64_t n) {
    k->widen[dt](src, dst, dt, n);
}
static void nbwd__run_narrow(const nbwd__kernels *k, const float *src, uint16_t *dst, int dt, int64_t n) {
    k->narrow[dt](src, dst, dt, n);
}
static void nbwd__run_row_stats(const nbwd__kernels *k, const nbwd__rows *rows, double *out) {
    k->row_stats[rows->dt](rows, out);
}
static void nbwd__run_col_stats(const nbwd__kernels *k, const nbwd__rows *rows, const float *m, float *sums) {
    k->col_stats[rows->dt](rows, m, sums);
}
/* ------------------------------------------------------------- dispatch */
/* The only global state: the detected CPU features and the chosen path,
   packed in one int written once (a racing second writer stores the same
   value): the runnable paths (bit 1 << nbwd_isa each), the path
   NBWD_ISA_AUTO resolves to, whether NORM_BWD_ISA named a path that cannot
   run, that it is set at all, and the NORM_BWD_VERBOSE level. */
#define NBWD__STATE_AUTO_SHIFT 8 /* (state >> 8) & 15: the automatic choice */
#define NBWD__STATE_AUTO_MASK 15
#define NBWD__STATE_ENV_UNRUNNABLE (1 << 15)
#define NBWD__STATE_SET (1 << 16)
#define NBWD__STATE_VERBOSE_SHIFT 17 /* (state >> 17) & 3: NORM_BWD_VERBOSE, 0-2 */
static int nbwd__dispatch_state;
static int nbwd__forced_isa; /* nbwd_force_isa; 0 = none */

#if defined(NBWD__MSVC)
#include <intrin.h>
#endif
#if (defined(__GNUC__) || defined(__clang__)) && !defined(NBWD__MSVC)
#define NBWD__ATOMIC_LOAD(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define NBWD__ATOMIC_STORE(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)
#else /* MSVC (volatile has acquire/release semantics there) and plain C99
         compilers: an int written whole, racing writers store the same value */
#define NBWD__ATOMIC_LOAD(p) (*(volatile int *)(p))
#define NBWD__ATOMIC_STORE(p, v) (*(volatile int *)(p) = (v))
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

/* CPU detection, where an x86 SIMD path is compiled in (a scalar-only build
   needs no cpuid, and so no inline assembly) */
#if (defined(__x86_64__) || defined(_M_X64) || defined(__i386__) || defined(_M_IX86)) &&                      \
    (defined(NBWD__HAVE_SSE) || defined(NBWD__HAVE_AVX2) || defined(NBWD__HAVE_AVX512))
#define NBWD__X86 1
/* CPUID feature bits (Intel SDM vol. 2A, CPUID) and the XCR0 state the OS
   must enable for them */
#define NBWD__CPUID1_EDX_SSE2 (1u << 26)
#define NBWD__CPUID1_ECX_FMA (1u << 12)
#define NBWD__CPUID1_ECX_OSXSAVE (1u << 27)
#define NBWD__CPUID1_ECX_AVX (1u << 28)
#define NBWD__CPUID1_ECX_F16C (1u << 29)
#define NBWD__CPUID7_EBX_AVX2 (1u << 5)
#define NBWD__CPUID7_EBX_AVX512F (1u << 16)
#define NBWD__CPUID7_EBX_AVX512DQ (1u << 17)
#define NBWD__CPUID7_EBX_AVX512BW (1u << 30)
#define NBWD__CPUID7_EBX_AVX512VL (1u << 31)
#define NBWD__CPUID7_1_EAX_AVX512_BF16 (1u << 5)
#define NBWD__XCR0_AVX 0x6ull     /* SSE and AVX (ymm) state */
#define NBWD__XCR0_AVX512 0xe6ull /* and the opmask and zmm state */
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
    const unsigned avx = NBWD__CPUID1_ECX_OSXSAVE | NBWD__CPUID1_ECX_AVX | NBWD__CPUID1_ECX_FMA | NBWD__CPUID1_ECX_F16C;
    /* DQ too: the avx512 kernels' target includes it (VFPCLASSPS in
       avx512_bf16's narrowing); every CPU with BW has it */
    const unsigned avx512 = NBWD__CPUID7_EBX_AVX512F | NBWD__CPUID7_EBX_AVX512BW | NBWD__CPUID7_EBX_AVX512VL |
                            NBWD__CPUID7_EBX_AVX512DQ;
    nbwd__cpuid(0, 0, r);
    max_leaf = r[0];
    nbwd__cpuid(1, 0, r);
    if (r[3] & NBWD__CPUID1_EDX_SSE2) paths |= 1 << NBWD_ISA_SSE;
    if ((r[2] & avx) == avx && max_leaf >= 7) {
        unsigned long long xcr0 = nbwd__xcr0();
        unsigned ebx7, max_sub7;
        nbwd__cpuid(7, 0, r);
        ebx7 = r[1];
        max_sub7 = r[0];
        if ((xcr0 & NBWD__XCR0_AVX) == NBWD__XCR0_AVX && (ebx7 & NBWD__CPUID7_EBX_AVX2)) {
            paths |= 1 << NBWD_ISA_AVX2;
            if ((xcr0 & NBWD__XCR0_AVX512) == NBWD__XCR0_AVX512 && (ebx7 & avx512) == avx512) {
                paths |= 1 << NBWD_ISA_AVX512;
                if (max_sub7 >= 1) {
                    nbwd__cpuid(7, 1, r);
                    if (r[0] & NBWD__CPUID7_1_EAX_AVX512_BF16) paths |= 1 << NBWD_ISA_AVX512_BF16;
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
#elif defined(__arm__) && defined(NBWD__HWCAP_ARM_NEON)
    /* 32-bit Arm: the neon layer wants NEON and VFPv4's fused multiply-add */
    {
        const unsigned long need = NBWD__HWCAP_ARM_NEON | NBWD__HWCAP_ARM_VFPV4;
        if ((getauxval(AT_HWCAP) & need) == need) paths |= 1 << NBWD_ISA_NEON;
    }
#elif defined(__wasm__) && defined(NBWD__HAVE_SSE)
    paths |= 1 << NBWD_ISA_SSE; /* SIMD128: the build decides, there is no run-time detection */
#endif
#if defined(NBWD__EMULATED_PATHS)
    paths |= NBWD__EMULATED_PATHS; /* SIMDe-emulated: runs on any CPU */
#endif
    return paths;
}

/* ASCII, either case: NORM_BWD_ISA=AVX2 and =avx2 are the same */
static int nbwd__same_name(const char *a, const char *b) {
    for (; *a && *b; ++a, ++b) {
        int x = *a >= 'A' && *a <= 'Z' ? *a - 'A' + 'a' : *a, y = *b >= 'A' && *b <= 'Z' ? *b - 'A' + 'a' : *b;
        if (x != y) return 0;
    }
    return *a == *b;
}
static int nbwd__isa_from_name(const char *s) { /* 0: auto or no such name */
    int i;
    for (i = 1; i < NBWD_ISA_COUNT; ++i)
        if (nbwd__same_name(s, nbwd_isa_name((nbwd_isa)i))) return i;
    return 0;
}

static int nbwd__dispatch(void) {
    int state = NBWD__ATOMIC_LOAD(&nbwd__dispatch_state);
    if (!state) {
        int cpu = nbwd__cpu_paths(), runnable = 0, best = NBWD_ISA_SCALAR, i;
        static const int preference[] = {NBWD_ISA_SCALAR, NBWD_ISA_SSE,    NBWD_ISA_NEON,       NBWD_ISA_NEON_BF16,
                                         NBWD_ISA_AVX2,   NBWD_ISA_AVX512, NBWD_ISA_AVX512_BF16};
        const char *env = getenv("NORM_BWD_ISA"), *verbose = getenv("NORM_BWD_VERBOSE");
        for (i = 1; i < NBWD_ISA_COUNT; ++i)
            if ((cpu & (1 << i)) && nbwd__compiled((nbwd_isa)i)) runnable |= 1 << i;
#if !defined(NBWD__EMULATED_PATHS)
#define NBWD__EMULATED_PATHS 0
#endif
        for (i = 0; i < (int)(sizeof preference / sizeof preference[0]); ++i)
            if ((runnable & (1 << preference[i])) && !(NBWD__EMULATED_PATHS & (1 << preference[i])))
                best = preference[i];
        state = runnable | NBWD__STATE_SET;
        if (env && *env && !nbwd__same_name(env, "auto")) {
            int want = nbwd__isa_from_name(env);
            if (want && (runnable & (1 << want))) best = want;
            else state |= NBWD__STATE_ENV_UNRUNNABLE;
        }
        state |= best << NBWD__STATE_AUTO_SHIFT;
        if (verbose && *verbose >= '1' && *verbose <= '9')
            state |= (*verbose == '1' ? 1 : 2) << NBWD__STATE_VERBOSE_SHIFT;
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
        if (state & NBWD__STATE_ENV_UNRUNNABLE) return NULL;
        return nbwd__compiled((nbwd_isa)((state >> NBWD__STATE_AUTO_SHIFT) & NBWD__STATE_AUTO_MASK));
    }
    if ((int)isa < 0 || (int)isa >= NBWD_ISA_COUNT || !((state >> (int)isa) & 1)) return NULL;
    return nbwd__compiled(isa);
}

NBWD_API nbwd_isa nbwd_active_isa(void) {
    const nbwd__kernels *k = nbwd__select(NBWD_ISA_AUTO);
    return k ? k->isa : NBWD_ISA_AUTO;
}

/* NBWD_ERR_UNSUPPORTED for a path (NBWD_ISA_AUTO: the one NORM_BWD_ISA
   names) that cannot run, with the paths that can. */
static nbwd_status nbwd__unsupported(const char *what, nbwd_isa isa) {
    char runnable[96] = "";
    int i, state = nbwd__dispatch();
    for (i = 1; i < NBWD_ISA_COUNT; ++i)
        if ((state >> i) & 1) {
            if (runnable[0]) strcat(runnable, " ");
            strcat(runnable, nbwd_isa_name((nbwd_isa)i));
        }
    if ((int)isa == NBWD_ISA_AUTO) {
        const char *env = getenv("NORM_BWD_ISA");
        if (!env) env = "";
        if (!nbwd__isa_from_name(env))
            return nbwd__fail(NBWD_ERR_UNSUPPORTED,
                              "NORM_BWD_ISA=%.40s names no path (scalar, sse, avx2, avx512, avx512_bf16, neon, "
                              "neon_bf16 or auto, in either case); this build and CPU run: %s",
                              env, runnable);
        return nbwd__fail(NBWD_ERR_UNSUPPORTED,
                          "NORM_BWD_ISA=%.40s: that path is not compiled in or cannot run on this CPU; this build "
                          "and CPU run: %s",
                          env, runnable);
    }
    if ((int)isa < 0 || (int)isa >= NBWD_ISA_COUNT)
        return nbwd__fail(NBWD_ERR_UNSUPPORTED, "%s = %d is not an nbwd_isa value", what, (int)isa);
    return nbwd__fail(NBWD_ERR_UNSUPPORTED,
                      "%s = %s: that path is not compiled in or cannot run on this CPU; this build and CPU run: %s",
                      what, nbwd_isa_name(isa), runnable);
}

static int nbwd__verbose(void) { return (nbwd__dispatch() >> NBWD__STATE_VERBOSE_SHIFT) & 3; }

/* The end of every entry point that returns a status: the message gets the
   entry point's name and the status in front ("" on success), and with
   NORM_BWD_VERBOSE it goes to stderr. */
static void nbwd__append(char *buf, size_t *at, const char *text, size_t text_len) {
    for (; text_len > 0 && *text && *at + 1 < NBWD__MSG_BYTES; --text_len) buf[(*at)++] = *text++;
    buf[*at] = 0;
}
static nbwd_status nbwd__finish(const char *entry, nbwd_status s) {
    char detail[NBWD__MSG_BYTES];
    const char *status = nbwd_status_string(s);
    size_t at = 0;
    if (s == NBWD_OK) {
        nbwd__msg[0] = 0;
        return s;
    }
    memcpy(detail, nbwd__msg, sizeof detail);
    detail[sizeof detail - 1] = 0;
    /* "entry: NBWD_ERR_NAME: what is wrong" (the status's own text without
       a detail) */
    nbwd__append(nbwd__msg, &at, entry, (size_t)-1);
    nbwd__append(nbwd__msg, &at, ": ", 2);
    nbwd__append(nbwd__msg, &at, status, detail[0] ? strcspn(status, ":") : (size_t)-1);
    if (detail[0]) {
        nbwd__append(nbwd__msg, &at, ": ", 2);
        nbwd__append(nbwd__msg, &at, detail, (size_t)-1);
    }
    if (nbwd__verbose() >= 1) fprintf(stderr, "norm_bwd: %s\n", nbwd__msg);
    return s;
}

NBWD_API nbwd_status nbwd_force_isa(nbwd_isa isa) {
    nbwd__msg[0] = 0;
    if ((int)isa != NBWD_ISA_AUTO && !nbwd_isa_supported(isa))
        return nbwd__finish("nbwd_force_isa", nbwd__unsupported("isa", isa));
    NBWD__ATOMIC_STORE(&nbwd__forced_isa, (int)isa);
    return nbwd__finish("nbwd_force_isa", NBWD_OK);
}

/* Every path gives the bits of the scalar conversions. A path that cannot
   run (a NORM_BWD_ISA naming one) falls back to scalar: these return void. */
static void nbwd__narrow_n(const float *src, uint16_t *dst, int dt, int64_t n) {
    const nbwd__kernels *k = nbwd__select(NBWD_ISA_AUTO);
    if (!src || !dst || n <= 0) return;
    nbwd__run_narrow(k ? k : &nbwd__kernels_scalar, src, dst, dt, n);
}
static void nbwd__widen_n(const uint16_t *src, float *dst, int dt, int64_t n) {
    const nbwd__kernels *k = nbwd__select(NBWD_ISA_AUTO);
    if (!src || !dst || n <= 0) return;
    nbwd__run_widen(k ? k : &nbwd__kernels_scalar, src, dst, dt, n);
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

NBWD__PLAN_FN
static int nbwd__dtype_ok(int dt) { return dt == NBWD_F32 || dt == NBWD_F16 || dt == NBWD_BF16; }
NBWD__PLAN_FN
static const char *nbwd__dtype_name(int dt) {
    return dt == NBWD_F32 ? "f32" : dt == NBWD_F16 ? "f16" : dt == NBWD_BF16 ? "bf16" : "?";
}
NBWD__PLAN_FN
static const char *nbwd__form_name(int form) {
    return form == NBWD_STATS_MEAN_VARIANCE ? "NBWD_STATS_MEAN_VARIANCE"
           : form == NBWD_STATS_MEAN_RSTD   ? "NBWD_STATS_MEAN_RSTD"
           : form == NBWD_STATS_XHAT_STD    ? "NBWD_STATS_XHAT_STD"
           : form == NBWD_STATS_DST_RSTD    ? "NBWD_STATS_DST_RSTD"
           : form == NBWD_STATS_NONE        ? "NBWD_STATS_NONE"
                                            : "?";
}
/* the statistics forms whose set mean is given (LayerNorm's mean forms; RMSNorm's mean
   is 0) */
static int nbwd__has_mean(int form) { /* (not NBWD__PLAN_FN: the drivers' per-batch code inlines it) */
    return form == NBWD_STATS_MEAN_VARIANCE || form == NBWD_STATS_MEAN_RSTD;
}
/* rms: RMSNorm's names for the forms */
NBWD__PLAN_FN
static const char *nbwd__form_name_of(int form, int rms) {
    if (rms && form == NBWD_STATS_MEAN_SQUARE) return "NBWD_STATS_MEAN_SQUARE";
    if (rms && form == NBWD_STATS_RSTD) return "NBWD_STATS_RSTD";
    return nbwd__form_name(form);
}

/* Stats and params are f32, or the data type itself (see DATA TYPES). */
NBWD__PLAN_FN
static nbwd_status nbwd__check_dtypes(int dt, int sdt, int pdt) {
    const char *name[3] = {"data_dtype", "stats_dtype", "param_dtype"};
    int v[3], i;
    v[0] = dt; v[1] = sdt; v[2] = pdt;
    for (i = 0; i < 3; ++i)
        if (!nbwd__dtype_ok(v[i]))
            return nbwd__fail(NBWD_ERR_BAD_DTYPE, "desc.%s = %d is not NBWD_F32, NBWD_F16 or NBWD_BF16", name[i], v[i]);
    for (i = 1; i < 3; ++i)
        if (v[i] != NBWD_F32 && v[i] != dt)
            return nbwd__fail(NBWD_ERR_BAD_DTYPE,
                              "desc.%s = %s with data_dtype = %s: it must be f32 or the data's type", name[i],
                              nbwd__dtype_name(v[i]), nbwd__dtype_name(dt));
    return NBWD_OK;
}

/* op: 0 LayerNorm, 1 BatchNorm (NBWD_USE_GLOBAL_STATS and the ReLU flags
   too), 2 GroupNorm, 3 RMSNorm */
NBWD__PLAN_FN
static nbwd_status nbwd__check_common(int form, unsigned flags, int op, int num_threads, int isa, float eps) {
    const int batch_norm = op == 1, rms = op == 3, rows = op == 0 || op == 3;
    if (form < NBWD_STATS_MEAN_VARIANCE || form > (batch_norm ? NBWD_STATS_XHAT_STD : NBWD_STATS_NONE))
        return nbwd__fail(NBWD_ERR_BAD_PARAM, "desc.stats_form = %d is not %s, %s%s", form,
                          rms ? "NBWD_STATS_MEAN_SQUARE" : "NBWD_STATS_MEAN_VARIANCE",
                          rms ? "_RSTD" : "_MEAN_RSTD",
                          batch_norm ? " or _XHAT_STD (BatchNorm has no DST_RSTD or NONE form)"
                                     : ", _XHAT_STD, _DST_RSTD or _NONE");
    const unsigned relu = NBWD_FUSE_RELU | NBWD_FUSE_ADD_RELU;
    if (batch_norm && (flags & NBWD_ACCUMULATE_DIFF_SRC))
        return nbwd__fail(NBWD_ERR_BAD_PARAM,
                          "desc.flags has NBWD_ACCUMULATE_DIFF_SRC (0x%x): it is LayerNorm's and RMSNorm's; "
                          "BatchNorm overwrites diff_src", (unsigned)NBWD_ACCUMULATE_DIFF_SRC);
    if (batch_norm && (flags & ~(NBWD_ACCUMULATE_PARAM_GRADS | NBWD_USE_GLOBAL_STATS | relu)))
        return nbwd__fail(NBWD_ERR_BAD_PARAM,
                          "desc.flags = 0x%x: the flags are NBWD_ACCUMULATE_PARAM_GRADS (0x%x), "
                          "NBWD_USE_GLOBAL_STATS (0x%x), NBWD_FUSE_RELU (0x%x) and NBWD_FUSE_ADD_RELU (0x%x)",
                          flags, (unsigned)NBWD_ACCUMULATE_PARAM_GRADS, (unsigned)NBWD_USE_GLOBAL_STATS,
                          (unsigned)NBWD_FUSE_RELU, (unsigned)NBWD_FUSE_ADD_RELU);
    if (batch_norm && (flags & relu) == relu)
        return nbwd__fail(NBWD_ERR_BAD_PARAM,
                          "desc.flags sets both NBWD_FUSE_RELU and NBWD_FUSE_ADD_RELU: the forward ended in one "
                          "ReLU, after an add or not");
    if (rows && (flags & ~(NBWD_ACCUMULATE_PARAM_GRADS | NBWD_ACCUMULATE_DIFF_SRC)))
        return nbwd__fail(NBWD_ERR_BAD_PARAM,
                          "desc.flags = 0x%x: LayerNorm's and RMSNorm's flags are NBWD_ACCUMULATE_PARAM_GRADS (0x%x) "
                          "and NBWD_ACCUMULATE_DIFF_SRC (0x%x)%s",
                          flags, (unsigned)NBWD_ACCUMULATE_PARAM_GRADS, (unsigned)NBWD_ACCUMULATE_DIFF_SRC,
                          flags & (NBWD_USE_GLOBAL_STATS | relu) ? "; the others are BatchNorm's" : "");
    if (op == 2 && (flags & ~NBWD_ACCUMULATE_PARAM_GRADS))
        return nbwd__fail(NBWD_ERR_BAD_PARAM,
                          "desc.flags = 0x%x: GroupNorm's only flag is NBWD_ACCUMULATE_PARAM_GRADS (0x%x)%s", flags,
                          (unsigned)NBWD_ACCUMULATE_PARAM_GRADS,
                          flags & NBWD_ACCUMULATE_DIFF_SRC ? "; NBWD_ACCUMULATE_DIFF_SRC is LayerNorm's and RMSNorm's "
                                                             "(GroupNorm overwrites diff_src)"
                          : flags & (NBWD_USE_GLOBAL_STATS | relu) ? "; the others are BatchNorm's" : "");
    if (num_threads < 0)
        return nbwd__fail(NBWD_ERR_BAD_PARAM, "desc.num_threads = %d: 0 (OpenMP's default) or a thread count",
                          num_threads);
    if (isa < 0 || isa >= NBWD_ISA_COUNT)
        return nbwd__fail(NBWD_ERR_BAD_PARAM, "desc.isa = %d is not an nbwd_isa", isa);
    if ((form == NBWD_STATS_MEAN_VARIANCE || form == NBWD_STATS_NONE) &&
        !(eps > 0.0f && (double)eps <= 3.4028234663852886e38))
        return nbwd__fail(NBWD_ERR_BAD_PARAM, /* also rejects NaN and infinity */
                          "desc.epsilon = %g: the %s form needs a finite epsilon > 0", (double)eps,
                          nbwd__form_name_of(form, rms));
    return NBWD_OK;
}

/* Checks dims and returns the element count of dims [from, to). The limit
   applies to the product of the non-zero dims, so that a zero anywhere
   cannot hide a huge dimension (every sub-product stays bounded too). */
NBWD__PLAN_FN
static nbwd_status nbwd__count(const int64_t *dims, int from, int to, int64_t *count) {
    int64_t nz = 1;
    int d, empty = 0;
    for (d = from; d < to; ++d) {
        if (dims[d] < 0)
            return nbwd__fail(NBWD_ERR_BAD_SHAPE, "desc.dims[%d] = %lld is negative", d, (long long)dims[d]);
        if (dims[d] == 0) empty = 1;
        else if (!nbwd__mul_ok(nz, dims[d], &nz))
            return nbwd__fail(NBWD_ERR_BAD_SHAPE,
                              "the product of desc.dims exceeds INT64_MAX / 16 elements (at dims[%d])", d);
    }
    *count = empty ? 0 : nz;
    return NBWD_OK;
}

/* Given strides, or dense row-major ones over dims [0, rank). */
NBWD__PLAN_FN
static void nbwd__strides(int rank, const int64_t *dims, const int64_t *given, int64_t *out) {
    int64_t s = 1;
    int d;
    for (d = rank - 1; d >= 0; --d) {
        out[d] = given ? given[d] : s;
        if (d > 0) s *= dims[d] > 0 ? dims[d] : 1; /* (the whole product is not needed: it may not fit) */
    }
}

/* Is the block of dims [from, to) dense (row-major, unit inner stride)? */
NBWD__PLAN_FN
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
NBWD__PLAN_FN
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
NBWD__PLAN_FN
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

/* The bytes a tensor covers: its address interval, and its element layout
   (the dims > 1 with their |strides| in bytes, the largest stride first,
   and how far each dim's inner dims reach) for telling interleaved tensors
   apart from overlapping ones. Empty when p is NULL or there is no element. */
typedef struct nbwd__span {
    uintptr_t lo, hi;
    int nd;
    int64_t esz, dims[NBWD_MAX_RANK], st[NBWD_MAX_RANK], reach[NBWD_MAX_RANK];
} nbwd__span;
/* rank, dims, st (elements): a layout whose extent check passed. Written
   through a pointer, and only the first nd entries of its arrays: a small
   call makes a dozen spans, and zeroing and copying whole structs was a
   measurable part of a one-row call. */
NBWD__PLAN_FN
static void nbwd__span_of(nbwd__span *s, const void *p, int rank, const int64_t *dims, const int64_t *st, size_t esz) {
    int64_t lo, hi, reach;
    int d, i, j;
    s->lo = s->hi = 0;
    s->nd = 0;
    s->esz = 0;
    if (!p) return;
    nbwd__extent(rank, dims, st, esz, &lo, &hi);
    if (hi <= lo) return;
    s->lo = (uintptr_t)p + (uintptr_t)lo; /* two's complement wrap for lo < 0 */
    s->hi = (uintptr_t)p + (uintptr_t)hi;
    s->esz = (int64_t)esz;
    for (d = 0; d < rank; ++d) {
        if (dims[d] <= 1) continue;
        s->dims[s->nd] = dims[d];
        s->st[s->nd] = (st[d] < 0 ? -st[d] : st[d]) * s->esz;
        ++s->nd;
    }
    for (i = 1; i < s->nd; ++i) /* insertion sort, largest stride first */
        for (j = i; j > 0 && s->st[j] > s->st[j - 1]; --j) {
            int64_t t = s->st[j]; s->st[j] = s->st[j - 1]; s->st[j - 1] = t;
            t = s->dims[j]; s->dims[j] = s->dims[j - 1]; s->dims[j - 1] = t;
        }
    for (reach = s->esz, d = s->nd - 1; d >= 0; --d) { /* bounded: the extent check passed */
        s->reach[d] = reach;
        reach += s->st[d] * (s->dims[d] - 1);
    }
}
NBWD__PLAN_FN
static int nbwd__overlap(const nbwd__span *a, const nbwd__span *b) {
    return a->lo < a->hi && b->lo < b->hi && a->lo < b->hi && b->lo < a->hi;
}
NBWD__PLAN_FN
static int64_t nbwd__floor_div(int64_t a, int64_t b) { /* b > 0 */
    return a >= 0 ? a / b : -((-a + b - 1) / b);
}
/* Two tensors of layout s whose lowest elements are d bytes apart: does an
   element of one share a byte with one of the other, looking at dims k and
   inside? A dim's slabs (its index fixed) reach no further than its stride
   (else the answer is a cautious yes), so at most two slabs of the other
   tensor meet each slab: those are followed inwards. */
NBWD__PLAN_FN
static int nbwd__layout_meets(const nbwd__span *s, int k, int64_t d) {
    int64_t m, lo, hi, S, E;
    if (k == s->nd) return d > -s->esz && d < s->esz;
    S = s->st[k];
    E = s->reach[k];
    if (E > S) return 1;
    /* the slab offsets m * S (|m| < dims[k]) with -E < d + m * S < E */
    lo = nbwd__floor_div(-E - d, S) + 1;
    hi = -nbwd__floor_div(d - E, S) - 1;
    if (lo < 1 - s->dims[k]) lo = 1 - s->dims[k];
    if (hi > s->dims[k] - 1) hi = s->dims[k] - 1;
    for (m = lo; m <= hi; ++m)
        if (nbwd__layout_meets(s, k + 1, d + m * S)) return 1;
    return 0;
}
/* Do a and b share a byte? Exactly where both have the same layout (one
   tensor interleaved with another, such as diff_gamma and diff_beta at p and
   p + 1 with stride 2); otherwise by their intervals. */
NBWD__PLAN_FN
static int nbwd__share_bytes(const nbwd__span *a, const nbwd__span *b) {
    int d;
    if (!nbwd__overlap(a, b)) return 0;
    if (a->nd != b->nd || a->esz != b->esz) return 1;
    for (d = 0; d < a->nd; ++d)
        if (a->dims[d] != b->dims[d] || a->st[d] != b->st[d]) return 1;
    /* the intervals overlap, so |b->lo - a->lo| is below either extent */
    return nbwd__layout_meets(a, 0, b->lo >= a->lo ? (int64_t)(b->lo - a->lo) : -(int64_t)(a->lo - b->lo));
}
/* The same tensor: same base and the same stride on every dim that matters. */
NBWD__PLAN_FN
static int nbwd__same_view(const void *p, const int64_t *st_p, const void *q, const int64_t *st_q, int rank,
                           const int64_t *dims) {
    int d;
    if (p != q) return 0;
    for (d = 0; d < rank; ++d)
        if (dims[d] > 1 && st_p[d] != st_q[d]) return 0;
    return 1;
}

/* "args." before a field of args; the two-phase calls' sums are parameters */
NBWD__PLAN_FN
static const char *nbwd__arg_prefix(const char *name) { return strncmp(name, "sum_", 4) ? "args." : ""; }
/* Output spans vs the others. out[i] may equal an input j where exact[i][j]
   says the views are identical; any other overlap is an alias error. */
#define NBWD__MAX_SPANS 12
NBWD__PLAN_FN
static nbwd_status nbwd__check_alias(int count, const nbwd__span *spans, const char *const *names,
                                     const int *is_output, const unsigned char exact[][NBWD__MAX_SPANS]) {
    int i, j;
    for (i = 0; i < count; ++i) {
        if (!is_output[i]) continue;
        for (j = 0; j < count; ++j)
            if (j != i && !(exact && exact[i][j]) && nbwd__share_bytes(&spans[i], &spans[j]))
                return nbwd__fail(NBWD_ERR_BAD_ALIAS,
                                  "%s%s shares bytes with %s%s (an output may share memory with no other "
                                  "tensor; diff_src may be exactly diff_dst, src, xhat, dst or diff_residual, and "
                                  "diff_src_add exactly diff_dst or dst: same pointer and strides)",
                                  nbwd__arg_prefix(names[i]), names[i], nbwd__arg_prefix(names[j]), names[j]);
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

#define NBWD__REDUCE_CHUNK 256 /* columns per task of the final reduction */
/* The column partials of nblocks row blocks ([nblocks][width] floats) summed
   into the first block, in the fixed pairwise order, NBWD__REDUCE_CHUNK
   columns per task. */
static void nbwd__sum_blocks(const nbwd__kernels *k, float *partials, int64_t nblocks, int64_t width,
                             int num_threads) {
    int64_t nchunks = (width + NBWD__REDUCE_CHUNK - 1) / NBWD__REDUCE_CHUNK, c;
    int threads = nbwd__pick_threads(num_threads, nblocks * width, nchunks);
    NBWD__PARALLEL_FOR(threads, c, nchunks,
                       nbwd__tree_sum(k, partials + c * NBWD__REDUCE_CHUNK, nblocks, width,
                                      (c + 1) * NBWD__REDUCE_CHUNK <= width ? NBWD__REDUCE_CHUNK
                                                                            : width - c * NBWD__REDUCE_CHUNK));
}

static void nbwd__write_param(void *out, int64_t j, int pdt, float v, int accumulate) {
    if (accumulate) v = nbwd__load(out, j, pdt) + v;
    nbwd__store(out, j, pdt, v);
}
/* out[0..n) = v (or += v), converted to the parameter dtype. */
static void nbwd__write_params(const nbwd__kernels *k, void *out, int pdt, const float *v, int64_t n,
                               int accumulate) {
    int64_t j;
    if (pdt == NBWD_F32) {
        float *o = (float *)out;
        if (!accumulate) memcpy(o, v, (size_t)n * 4);
        else for (j = 0; j < n; ++j) o[j] += v[j];
    } else if (!accumulate) { /* the path's narrowing: the scalar one's bits (see nbwd__read_params) */
        nbwd__run_narrow(k, v, (uint16_t *)out, pdt, n);
    } else { /* the same through a small buffer: out widened, v added, narrowed back */
        float sum[256];
        int64_t at, len;
        for (at = 0; at < n; at += len) {
            len = n - at < 256 ? n - at : 256;
            nbwd__run_widen(k, (const uint16_t *)out + at, sum, pdt, len);
            for (j = 0; j < len; ++j) sum[j] += v[at + j];
            nbwd__run_narrow(k, sum, (uint16_t *)out + at, pdt, len);
        }
    }
}

/* Per-set statistics -> xhat transform (xm, xs) and the rstd that scales dx. */
static void nbwd__stats(int form, int sdt, float eps, const void *mean, int64_t mi, const void *spread, int64_t si,
                        float *xm, float *xs, float *rstd) {
    double s = nbwd__load(spread, si, sdt);
    if (!nbwd__has_mean(form)) {
        /* the kernels' input already is xhat (DST_RSTD: made from dst on the
           way in): (xhat - 0) * 1 is exact */
        *xm = 0.0f; *xs = 1.0f;
        *rstd = form == NBWD_STATS_DST_RSTD ? (float)s : (float)(1.0 / s);
        return;
    }
    *xm = mean ? nbwd__load(mean, mi, sdt) : 0.0f; /* RMSNorm: no mean */
    *rstd = form == NBWD_STATS_MEAN_RSTD ? (float)s : (float)(1.0 / sqrt(s + (double)eps));
    *xs = *rstd;
}

/* Workspace carving, each piece 64-byte aligned. */
static size_t nbwd__ws_take(size_t *total, size_t bytes) {
    size_t at = *total;
    *total += (bytes + NBWD__WS_ALIGN - 1) / NBWD__WS_ALIGN * NBWD__WS_ALIGN;
    return at;
}

/* Outer-index iteration over up to 6 tensors with arbitrary strides; dims
   that are contiguous for every tensor are merged first. */
#define NBWD__MAX_T 6
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
/* The element offsets of rows [row, row + count) of o's tensors 0, 1, 2
   (x, dy, dx: always) and 3, 4, 5 (where not NULL) into the arrays given
   (every batch of rows fills its offsets with this). Rows of a few dozen
   elements make its cost count (a tenth of BatchNorm's 16-channel NXC rows
   when it was a loop per tensor): inlined, one (merged) outer dim costs a
   multiply and a store per row and tensor. */
NBWD__INLINE void nbwd__row_offsets(const nbwd__outer *o, int64_t row, int64_t count, int64_t *x, int64_t *dy,
                                    int64_t *dx, int64_t *t3, int64_t *t4, int64_t *t5) {
    nbwd__cursor c;
    int64_t i;
    if (o->nd == 1) { /* one (merged) outer dim */
        const int64_t s0 = o->st[0][0], s1 = o->st[1][0], s2 = o->st[2][0];
        const int64_t s3 = t3 ? o->st[3][0] : 0, s4 = t4 ? o->st[4][0] : 0, s5 = t5 ? o->st[5][0] : 0;
        for (i = 0; i < count; ++i) {
            const int64_t q = row + i;
            x[i] = q * s0;
            dy[i] = q * s1;
            dx[i] = q * s2;
            if (t3) t3[i] = q * s3;
            if (t4) t4[i] = q * s4;
            if (t5) t5[i] = q * s5;
        }
        return;
    }
    nbwd__cursor_seek(o, &c, row);
    for (i = 0; i < count; ++i, nbwd__cursor_next(o, &c)) {
        x[i] = c.off[0];
        dy[i] = c.off[1];
        dx[i] = c.off[2];
        if (t3) t3[i] = c.off[3];
        if (t4) t4[i] = c.off[4];
        if (t5) t5[i] = c.off[5];
    }
}

/* The data input and the spread statistic that a statistics form reads. */
static const void *nbwd__x_of(int form, const void *src, const void *xhat, const void *dst) {
    return form == NBWD_STATS_XHAT_STD ? xhat : form == NBWD_STATS_DST_RSTD ? dst : src;
}
static const void *nbwd__spread_of(int form, const void *variance, const void *rstd, const void *std_) {
    return form == NBWD_STATS_MEAN_VARIANCE ? variance
           : form == NBWD_STATS_XHAT_STD    ? std_
           : form == NBWD_STATS_NONE        ? NULL
                                            : rstd;
}

static const char *nbwd__x_name(int form) {
    return form == NBWD_STATS_XHAT_STD ? "xhat" : form == NBWD_STATS_DST_RSTD ? "dst" : "src";
}
static const char *nbwd__spread_name(int form, int rms) {
    return form == NBWD_STATS_MEAN_VARIANCE ? (rms ? "mean_square" : "variance")
           : form == NBWD_STATS_XHAT_STD    ? "std"
                                            : "rstd";
}

/* The pieces common to the operations' pointer checks (rms: RMSNorm, which
   has no mean and calls its variance mean_square). */
NBWD__PLAN_FN
static nbwd_status nbwd__check_stats_args(int form, int rms, const void *src, const void *xhat, const void *dst,
                                          const void *mean, const void *variance, const void *rstd,
                                          const void *std_, int64_t data_elems, int64_t stat_elems) {
    const void *x = nbwd__x_of(form, src, xhat, dst), *spread = nbwd__spread_of(form, variance, rstd, std_);
    /* An input of another form given: the caller has mixed up the forms. */
    const void *given[7];
    const char *name[7] = {"src", "mean", "xhat", "variance", "rstd", "std", "dst"};
    static const int needs[7] = {NBWD_STATS_MEAN_VARIANCE, NBWD_STATS_MEAN_VARIANCE, NBWD_STATS_XHAT_STD,
                                 NBWD_STATS_MEAN_VARIANCE, NBWD_STATS_MEAN_RSTD,     NBWD_STATS_XHAT_STD,
                                 NBWD_STATS_DST_RSTD};
    int i;
    given[0] = src; given[1] = mean; given[2] = xhat; given[3] = variance; given[4] = rstd; given[5] = std_;
    given[6] = dst;
    if (rms) name[3] = "mean_square";
    for (i = 0; i < 7; ++i) { /* src and mean belong to both mean forms (src to NONE too), rstd to DST_RSTD too */
        int belongs = i < 2 ? nbwd__has_mean(form) || (i == 0 && form == NBWD_STATS_NONE)
                            : form == needs[i] || (i == 4 && form == NBWD_STATS_DST_RSTD);
        if (given[i] && !belongs)
            return nbwd__fail(NBWD_ERR_BAD_PARAM,
                              "args.%s is set but desc.stats_form is %s, which does not read it: set stats_form = %s "
                              "or pass the form's own inputs",
                              name[i], nbwd__form_name_of(form, rms),
                              i >= 2 ? nbwd__form_name_of(needs[i], rms)
                              : rms  ? "NBWD_STATS_MEAN_SQUARE (or _RSTD)"
                                     : "NBWD_STATS_MEAN_VARIANCE (or _MEAN_RSTD)");
    }
    if (data_elems > 0 && !x)
        return nbwd__fail(NBWD_ERR_NULL_POINTER, "args.%s is NULL (desc.stats_form is %s)", nbwd__x_name(form),
                          nbwd__form_name_of(form, rms));
    if (stat_elems > 0 && !spread && form != NBWD_STATS_NONE)
        return nbwd__fail(NBWD_ERR_NULL_POINTER, "args.%s is NULL (desc.stats_form is %s)",
                          nbwd__spread_name(form, rms), nbwd__form_name_of(form, rms));
    if (stat_elems > 0 && nbwd__has_mean(form) && !mean && !rms)
        return nbwd__fail(NBWD_ERR_NULL_POINTER, "args.mean is NULL (desc.stats_form is %s)", nbwd__form_name(form));
    return NBWD_OK;
}

/* need: the queried size, which a caller's workspace must have; own_need:
   what this call uses (<= need), all that is allocated when workspace is NULL. */
static nbwd_status nbwd__get_workspace(size_t need, size_t own_need, void *workspace, size_t workspace_bytes,
                                       void **owned, char **base) {
    *owned = NULL;
    if (workspace) {
        if (workspace_bytes < need)
            return nbwd__fail(NBWD_ERR_INSUFFICIENT_WORKSPACE,
                              "workspace_bytes = %llu, but the workspace size query asks for %llu bytes",
                              (unsigned long long)workspace_bytes, (unsigned long long)need);
    } else if (own_need > 0) {
        workspace = NORM_BWD_MALLOC(own_need);
        if (!workspace)
            return nbwd__fail(NBWD_ERR_OUT_OF_MEMORY,
                              "NORM_BWD_MALLOC(%llu) returned NULL (workspace NULL: the call allocates its own; "
                              "pass one of the queried size to avoid that)",
                              (unsigned long long)own_need);
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
    static const char *const name[NBWD__NPAR] = {"gamma", "beta", "diff_gamma", "diff_beta"};
    for (t = 0; t < NBWD__NPAR; ++t) {
        nbwd__strides(nd, dims, given[t], q->st[t]);
        q->dense[t] = nbwd__dense_block(dims, q->st[t], 0, nd);
        if (!nbwd__extent(nd, dims, q->st[t], nbwd__esize(pdt), &lo, &hi))
            return nbwd__fail(NBWD_ERR_BAD_STRIDES, "desc.%s_strides: the tensor's byte extent overflows", name[t]);
        if (t >= NBWD__PDG && !nbwd__no_self_overlap(nd, dims, q->st[t], n > 0 ? 1 : 0))
            return nbwd__fail(NBWD_ERR_BAD_STRIDES, "desc.%s_strides make two elements of args.%s share an address",
                              name[t], name[t]);
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
static void nbwd__param_span(nbwd__span *s, const nbwd__params *q, int t, const void *ptr, int pdt) {
    nbwd__span_of(s, ptr, q->nd, q->dims, q->st[t], nbwd__esize(pdt));
}
/* Parameter tensor t (gamma, beta) as n dense floats: dense tensors through
   the path's widening (exact: the scalar conversion's bits; element by
   element, 16-bit gamma's conversion and diff_gamma's took up to half of a
   small LayerNorm call in cache, bench/NOTES.md), others gathered. */
static void nbwd__read_params(const nbwd__kernels *k, const nbwd__params *q, int t, const void *in, int pdt,
                              float *out, int64_t n) {
    int64_t j;
    if (q->dense[t] && pdt == NBWD_F32) memcpy(out, in, (size_t)n * 4);
    else if (q->dense[t]) nbwd__run_widen(k, (const uint16_t *)in, out, pdt, n);
    else for (j = 0; j < n; ++j) out[j] = nbwd__load(in, nbwd__param_off(q, t, j), pdt);
}
/* diff_gamma or diff_beta (t) = v (or += v), n elements. */
static void nbwd__write_params_at(const nbwd__kernels *k, const nbwd__params *q, int t, void *out, int pdt,
                                  const float *v, int64_t n, int accumulate) {
    int64_t j;
    if (q->dense[t]) {
        nbwd__write_params(k, out, pdt, v, n, accumulate);
        return;
    }
    for (j = 0; j < n; ++j) nbwd__write_param(out, nbwd__param_off(q, t, j), pdt, v[j], accumulate);
}

/* ------------------------------------------------------------ LayerNorm */
/* desc_init's mark: a descriptor without it was zeroed or built by hand */
#define NBWD__LN_STAMP 0x4C4E4257u
#define NBWD__BN_STAMP 0x424E4257u
#define NBWD__RMS_STAMP 0x524D4257u
/* LayerNorm's (and RMSNorm's) tensors: the plan's strides st[] and the row
   iteration cover the first six (the data and the statistics), the alias
   checks all of them. */
enum {
    NBWD__LN_X, NBWD__LN_DY, NBWD__LN_DX, NBWD__LN_MEAN, NBWD__LN_SPREAD, NBWD__LN_RES, /* st[] */
    NBWD__LN_GAMMA, NBWD__LN_DGAMMA, NBWD__LN_DBETA, NBWD__LN_BETA, NBWD__LN_TENSORS
};
/* their descriptor's stride fields, "desc.<name>_strides" */
static const char *const nbwd__ln_tensor[NBWD__MAX_T] = {"src", "diff_dst", "diff_src", "mean", "var", "diff_residual"};
/* Staged rows (a residual gradient, or xhat made from dst) go a few at a
   time through at most NBWD__STAGE_SLOTS slots of the workspace (one per
   thread at work) of about NBWD__STAGE_BYTES each: rows still in the cache
   when the next step reads them. */
#define NBWD__STAGE_SLOTS 64
#define NBWD__STAGE_BYTES (64 << 10)
#define NBWD__STAGE_ROWS 8 /* at most: the size query of a small problem stays small */

typedef struct nbwd__ln_plan {
    int rms; /* RMSNorm: no mean, mean(g) not subtracted */
    int rank, axis, dt, sdt, pdt, form, affine, accumulate;
    int accumulate_dx; /* NBWD_ACCUMULATE_DIFF_SRC: diff_src is its own residual gradient */
    float eps, gamma_offset;
    int64_t rows, n;
    int64_t st[NBWD__MAX_T][NBWD_MAX_RANK]; /* x, dy, dx, mean, spread, residual */
    nbwd__params par;                       /* gamma, beta, diff_gamma, diff_beta */
    int64_t rows_per_block, nblocks;
    /* rows staged through the workspace (see nbwd__ln_staged), stage_rows
       rows at a time per slot */
    int64_t stage_rows, stage_slots, stage_arrays;
    size_t ws_gamma, ws_unscale, ws_stage, ws_partials_at, ws_partials, ws_bytes;
} nbwd__ln_plan;

typedef struct nbwd__ln_run {
    const nbwd__ln_plan *p;
    const nbwd__kernels *k;
    nbwd__outer outer;
    const char *x, *dy, *mean, *spread;
    char *dx;
    const char *res;    /* diff_residual, or NULL */
    const float *gamma; /* n floats: gamma, or ones (no affine, or no dx) */
    const float *unscale; /* DST_RSTD: beta, then 1 / (gamma + offset) (n floats each), or NULL */
    char *stage;        /* the staging slots, when rows are staged; else NULL */
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
    desc->init_stamp = NBWD__LN_STAMP;
}
NBWD_API void nbwd_rms_norm_bwd_desc_init(nbwd_rms_norm_bwd_desc *desc, int rank, const int64_t *dims) {
    nbwd_layer_norm_bwd_desc_init(desc, rank, dims);
    if (desc) desc->init_stamp = NBWD__RMS_STAMP;
}

/* rms: RMSNorm (its own stamp; the plan is LayerNorm's with mean 0) */
NBWD__PLAN_FN
static nbwd_status nbwd__ln_plan_desc(const nbwd_layer_norm_bwd_desc *d, int rms, nbwd__ln_plan *p) {
    nbwd_status s;
    int64_t axis, lo, hi;
    int t;
    size_t esz;
    if (!d) return nbwd__fail(NBWD_ERR_NULL_POINTER, "desc is NULL");
    memset(p, 0, sizeof *p);
    p->rms = rms;
    if (d->init_stamp != (rms ? NBWD__RMS_STAMP : NBWD__LN_STAMP))
        return nbwd__fail(NBWD_ERR_NOT_INITIALIZED,
                          "desc was not made by nbwd_%s_norm_bwd_desc_init (a zeroed or hand-built descriptor "
                          "has no defaults: call it first, then set the fields you change)%s",
                          rms ? "rms" : "layer",
                          d->init_stamp == (rms ? NBWD__LN_STAMP : NBWD__RMS_STAMP)
                              ? (rms ? "; this one was made for LayerNorm" : "; this one was made for RMSNorm")
                              : "");
    if (d->rank < 1 || d->rank > NBWD_MAX_RANK)
        return nbwd__fail(NBWD_ERR_BAD_PARAM, "desc.rank = %d: %s takes 1 to %d", d->rank,
                          rms ? "RMSNorm" : "LayerNorm", NBWD_MAX_RANK);
    p->rank = d->rank;
    if ((s = nbwd__count(d->dims, 0, d->rank, &p->rows)) != NBWD_OK) return s;
    axis = d->begin_norm_axis;
    if (axis < -(int64_t)d->rank || axis >= d->rank)
        return nbwd__fail(NBWD_ERR_BAD_PARAM, "desc.begin_norm_axis = %lld is outside [%d, %d] for rank %d",
                          (long long)axis, -d->rank, d->rank - 1, d->rank);
    p->axis = (int)(axis < 0 ? axis + d->rank : axis);
    if ((s = nbwd__check_common((int)d->stats_form, d->flags, rms ? 3 : 0, d->num_threads, (int)d->isa, d->epsilon)) !=
        NBWD_OK)
        return s;
    if ((s = nbwd__check_dtypes((int)d->data_dtype, (int)d->stats_dtype, (int)d->param_dtype)) != NBWD_OK) return s;
    p->dt = (int)d->data_dtype; p->sdt = (int)d->stats_dtype; p->pdt = (int)d->param_dtype;
    p->form = (int)d->stats_form;
    p->affine = d->use_affine != 0;
    p->accumulate = (d->flags & NBWD_ACCUMULATE_PARAM_GRADS) != 0;
    p->accumulate_dx = (d->flags & NBWD_ACCUMULATE_DIFF_SRC) != 0;
    p->eps = d->epsilon;
    if (!(d->gamma_offset - d->gamma_offset == 0.0f)) /* NaN or infinite */
        return nbwd__fail(NBWD_ERR_BAD_PARAM, "desc.gamma_offset = %g: it must be finite", (double)d->gamma_offset);
    if (!p->affine && d->gamma_offset != 0.0f)
        return nbwd__fail(NBWD_ERR_BAD_PARAM, "desc.gamma_offset = %g, but desc.use_affine = 0 (there is no gamma)",
                          (double)d->gamma_offset);
    p->gamma_offset = d->gamma_offset;
    nbwd__count(d->dims, 0, p->axis, &p->rows);
    nbwd__count(d->dims, p->axis, p->rank, &p->n);

    nbwd__strides(p->rank, d->dims, d->src_strides, p->st[NBWD__LN_X]);
    nbwd__strides(p->rank, d->dims, d->diff_dst_strides, p->st[NBWD__LN_DY]);
    nbwd__strides(p->rank, d->dims, d->diff_src_strides, p->st[NBWD__LN_DX]);
    /* RMSNorm reads no mean: its mean_strides are ignored, never multiplied */
    nbwd__strides(p->axis, d->dims, rms ? NULL : d->mean_strides, p->st[NBWD__LN_MEAN]);
    nbwd__strides(p->axis, d->dims, d->var_strides, p->st[NBWD__LN_SPREAD]);
    nbwd__strides(p->rank, d->dims, d->diff_residual_strides, p->st[NBWD__LN_RES]);
    esz = nbwd__esize(p->dt);
    for (t = NBWD__LN_X; t <= NBWD__LN_RES; ++t) {
        if (t == NBWD__LN_MEAN || t == NBWD__LN_SPREAD) continue;
        if (!nbwd__dense_block(d->dims, p->st[t], p->axis, p->rank))
            return nbwd__fail(NBWD_ERR_BAD_STRIDES,
                              "desc.%s_strides: the normalized dims [%d, %d) must be dense (row-major, inner stride 1)",
                              nbwd__ln_tensor[t], p->axis, p->rank);
        if (!nbwd__extent(p->rank, d->dims, p->st[t], esz, &lo, &hi))
            return nbwd__fail(NBWD_ERR_BAD_STRIDES, "desc.%s_strides: the tensor's byte extent overflows",
                              nbwd__ln_tensor[t]);
    }
    for (t = NBWD__LN_MEAN; t <= NBWD__LN_SPREAD; ++t)
        if (!nbwd__extent(p->axis, d->dims, p->st[t], nbwd__esize(p->sdt), &lo, &hi))
            return nbwd__fail(NBWD_ERR_BAD_STRIDES, "desc.%s_strides: the tensor's byte extent overflows",
                              nbwd__ln_tensor[t]);
    {
        const int64_t *const given[NBWD__NPAR] = {d->gamma_strides, d->beta_strides, d->diff_gamma_strides,
                                                  d->diff_beta_strides};
        if ((s = nbwd__params_init(&p->par, p->rank - p->axis, d->dims + p->axis, given, p->pdt)) != NBWD_OK)
            return s;
    }

    nbwd__row_blocking(p->rows, p->n, &p->rows_per_block, &p->nblocks);
    p->ws_bytes = 0;
    if (p->rows == 0 || p->n == 0) return NBWD_OK; /* empty: nothing to compute, no workspace */
    /* gamma as dense f32 for the kernels (converted, gathered, or ones
       without affine), first: a dx-only call needs no more */
    p->ws_gamma = nbwd__ws_take(&p->ws_bytes, (size_t)p->n * 4);
    if (p->form == NBWD_STATS_DST_RSTD && p->affine) p->ws_unscale = nbwd__ws_take(&p->ws_bytes, (size_t)p->n * 8);
    p->ws_partials_at = p->ws_bytes;
    if (p->affine) p->ws_partials = nbwd__ws_take(&p->ws_bytes, (size_t)p->nblocks * 2 * (size_t)p->n * 4);
    p->ws_stage = p->ws_bytes; /* (no slots: what a call needs ends there) */
    /* the staging slots, last: a call that stages nothing allocates none
       (the NONE form's size query cannot know whether a call passes a
       residual) */
    if ((p->form == NBWD_STATS_DST_RSTD && p->affine) || p->form == NBWD_STATS_NONE) {
        int64_t most = p->rows_per_block < NBWD__STAGE_ROWS ? p->rows_per_block : NBWD__STAGE_ROWS;
        p->stage_arrays = p->dt == NBWD_F32 ? 2 : 3; /* x or xhat, (16-bit: dy,) dx */
        p->stage_rows = NBWD__STAGE_BYTES / (p->n * 4 * p->stage_arrays);
        if (p->stage_rows > most) p->stage_rows = most;
        if (p->stage_rows < 1) p->stage_rows = 1;
        p->stage_slots = p->nblocks < NBWD__STAGE_SLOTS ? p->nblocks : NBWD__STAGE_SLOTS;
        p->ws_stage = nbwd__ws_take(&p->ws_bytes, (size_t)(p->stage_slots * p->stage_rows * p->stage_arrays) *
                                                      (size_t)p->n * 4);
    }
    p->ws_bytes += NBWD__WS_ALIGN; /* slack for aligning the caller's pointer */
    return NBWD_OK;
}

NBWD__PLAN_FN
static nbwd_status nbwd__ln_workspace_size(const nbwd_layer_norm_bwd_desc *desc, int rms, size_t *bytes) {
    nbwd__ln_plan p;
    nbwd_status s;
    nbwd__msg[0] = 0;
    if (!bytes) s = nbwd__fail(NBWD_ERR_NULL_POINTER, "bytes is NULL");
    else if ((s = nbwd__ln_plan_desc(desc, rms, &p)) == NBWD_OK) *bytes = p.ws_bytes;
    return nbwd__finish(rms ? "nbwd_rms_norm_bwd_workspace_size" : "nbwd_layer_norm_bwd_workspace_size", s);
}
NBWD__PLAN_FN
NBWD_API nbwd_status nbwd_layer_norm_bwd_workspace_size(const nbwd_layer_norm_bwd_desc *desc, size_t *bytes) {
    return nbwd__ln_workspace_size(desc, 0, bytes);
}
NBWD__PLAN_FN
NBWD_API nbwd_status nbwd_rms_norm_bwd_workspace_size(const nbwd_rms_norm_bwd_desc *desc, size_t *bytes) {
    return nbwd__ln_workspace_size(desc, 1, bytes);
}

NBWD__PLAN_FN
static nbwd_status nbwd__ln_check_args(const nbwd_layer_norm_bwd_desc *d, const nbwd__ln_plan *p,
                                       const nbwd_layer_norm_bwd_args *a) {
    nbwd_status s;
    int64_t total = p->rows * p->n, outer_dims[NBWD_MAX_RANK];
    size_t esz = nbwd__esize(p->dt), sesz = nbwd__esize(p->sdt);
    const void *x = nbwd__x_of(p->form, a->src, a->xhat, a->dst);
    const void *spread = nbwd__spread_of(p->form, a->variance, a->rstd, a->std);
    nbwd__span sp[NBWD__MAX_SPANS];
    int out[NBWD__MAX_SPANS] = {0}, i;
    unsigned char exact[NBWD__MAX_SPANS][NBWD__MAX_SPANS];
    const char *names[NBWD__LN_TENSORS] = {"src",           "diff_dst", "diff_src",   "mean",      "variance",
                                           "diff_residual", "gamma",    "diff_gamma", "diff_beta", "beta"};
    /* DST_RSTD makes xhat from dst with gamma (and beta) for diff_gamma too */
    const int reads_gamma = p->affine && p->n > 0 && (a->diff_src || (p->form == NBWD_STATS_DST_RSTD && a->diff_gamma));
    names[NBWD__LN_X] = nbwd__x_name(p->form);
    names[NBWD__LN_SPREAD] = nbwd__spread_name(p->form, p->rms);
    if ((a->diff_gamma || a->diff_beta) && !p->affine)
        return nbwd__fail(NBWD_ERR_BAD_PARAM, "args.%s is set but desc.use_affine = 0 (no gamma, no gamma gradients)",
                          a->diff_gamma ? "diff_gamma" : "diff_beta");
    if ((s = nbwd__check_stats_args(p->form, p->rms, a->src, a->xhat, a->dst, a->mean, a->variance, a->rstd, a->std, total,
                                    p->rows)) != NBWD_OK)
        return s;
    if (total > 0 && !a->diff_dst) return nbwd__fail(NBWD_ERR_NULL_POINTER, "args.diff_dst is NULL");
    if (reads_gamma && !a->gamma)
        return nbwd__fail(NBWD_ERR_NULL_POINTER,
                          "args.gamma is NULL, but desc.use_affine = 1 and %s is asked for (use_affine = 0 "
                          "means gamma = 1)",
                          a->diff_src ? "diff_src" : "diff_gamma in the NBWD_STATS_DST_RSTD form");
    if (a->diff_residual && !a->diff_src)
        return nbwd__fail(NBWD_ERR_BAD_PARAM,
                          "args.diff_residual is set but args.diff_src is NULL (the residual gradient is added to "
                          "diff_src)");
    if (a->diff_residual && p->accumulate_dx)
        return nbwd__fail(NBWD_ERR_BAD_PARAM,
                          "args.diff_residual is set with NBWD_ACCUMULATE_DIFF_SRC: diff_src += the gradient is the "
                          "residual route with diff_src as the residual; add one tensor to the other first, or "
                          "pass diff_residual = diff_src without the flag");
    if (!p->affine && (a->gamma || a->beta))
        return nbwd__fail(NBWD_ERR_BAD_PARAM,
                          "args.%s is set but desc.use_affine = 0 (no gamma and beta): set use_affine = 1, or "
                          "leave them NULL",
                          a->gamma ? "gamma" : "beta");
    for (i = 0; i < p->axis; ++i) outer_dims[i] = d->dims[i];
    if (a->diff_src && !nbwd__no_self_overlap(p->axis, outer_dims, p->st[NBWD__LN_DX], p->n))
        return nbwd__fail(NBWD_ERR_BAD_STRIDES,
                          "desc.diff_src_strides make two elements of args.diff_src share an address");

    nbwd__span_of(&sp[NBWD__LN_X], x, p->rank, d->dims, p->st[NBWD__LN_X], esz);
    nbwd__span_of(&sp[NBWD__LN_DY], a->diff_dst, p->rank, d->dims, p->st[NBWD__LN_DY], esz);
    nbwd__span_of(&sp[NBWD__LN_DX], a->diff_src, p->rank, d->dims, p->st[NBWD__LN_DX], esz);
    nbwd__span_of(&sp[NBWD__LN_MEAN], nbwd__has_mean(p->form) ? a->mean : NULL, p->axis, d->dims,
                  p->st[NBWD__LN_MEAN], sesz);
    nbwd__span_of(&sp[NBWD__LN_SPREAD], spread, p->axis, d->dims, p->st[NBWD__LN_SPREAD], sesz);
    nbwd__span_of(&sp[NBWD__LN_RES], a->diff_residual, p->rank, d->dims, p->st[NBWD__LN_RES], esz);
    /* gamma is read only where reads_gamma says; beta only by DST_RSTD
       (with affine): inputs not read are not checked */
    nbwd__param_span(&sp[NBWD__LN_GAMMA], &p->par, NBWD__PG, reads_gamma ? a->gamma : NULL, p->pdt);
    nbwd__param_span(&sp[NBWD__LN_DGAMMA], &p->par, NBWD__PDG, a->diff_gamma, p->pdt);
    nbwd__param_span(&sp[NBWD__LN_DBETA], &p->par, NBWD__PDB, a->diff_beta, p->pdt);
    nbwd__param_span(&sp[NBWD__LN_BETA], &p->par, NBWD__PB,
                     p->form == NBWD_STATS_DST_RSTD && reads_gamma ? a->beta : NULL, p->pdt);
    out[NBWD__LN_DX] = out[NBWD__LN_DGAMMA] = out[NBWD__LN_DBETA] = 1;
    memset(exact, 0, sizeof exact);
    exact[NBWD__LN_DX][NBWD__LN_X] =
        (unsigned char)nbwd__same_view(a->diff_src, p->st[NBWD__LN_DX], x, p->st[NBWD__LN_X], p->rank, d->dims);
    exact[NBWD__LN_DX][NBWD__LN_DY] = (unsigned char)nbwd__same_view(a->diff_src, p->st[NBWD__LN_DX], a->diff_dst,
                                                                      p->st[NBWD__LN_DY], p->rank, d->dims);
    exact[NBWD__LN_DX][NBWD__LN_RES] = (unsigned char)nbwd__same_view(
        a->diff_src, p->st[NBWD__LN_DX], a->diff_residual, p->st[NBWD__LN_RES], p->rank, d->dims);
    return nbwd__check_alias(NBWD__LN_TENSORS, sp, names, out, (const unsigned char(*)[NBWD__MAX_SPANS])exact);
}

/* Rows that do not go to the kernels as they are: in the DST_RSTD form with
   affine, and the NONE form's rows with a residual gradient (elsewhere the
   kernels add it in their own dx pass; a flag in the NONE kernel cost
   more compile time than the budget had left, bench/NOTES.md). A few at a
   time they go through the slot in f32: xhat made from dst (or x, widened
   from 16-bit data), dy (16-bit: widened), the kernels' dx, and then dx +
   the residual stored to diff_src in the data type (one rounding, as in
   the kernels' pass: the same bits). Memory sees each tensor once, the
   cache the rows again. */
static void nbwd__ln_staged(const nbwd__ln_run *r, nbwd__rows *batch, float *slot) {
    const nbwd__ln_plan *p = r->p;
    const int64_t n = p->n, count = batch->count, esz = (int64_t)nbwd__esize(p->dt);
    const int wide = p->dt != NBWD_F32, unscale = r->unscale != NULL, dx_via_slot = r->want_dx && (r->res || wide);
    float *xs = slot, *dys = slot + count * n, *dxs = slot + (wide ? 2 : 1) * count * n;
    int64_t i, dx_off[NBWD__ROW_BATCH];
    for (i = 0; i < count; ++i) {
        const char *x = batch->x + batch->x_off[i] * esz;
        if (unscale) nbwd__run_unscale(r->k, x, p->dt, r->unscale, r->unscale + n, xs + i * n, n);
        else if (wide) nbwd__run_widen(r->k, (const uint16_t *)x, xs + i * n, p->dt, n);
        if (wide) nbwd__run_widen(r->k, (const uint16_t *)(batch->dy + batch->dy_off[i] * esz), dys + i * n, p->dt, n);
        if (unscale || wide) batch->x_off[i] = i * n;
        if (wide) batch->dy_off[i] = i * n;
        dx_off[i] = batch->dx_off[i];
        if (dx_via_slot) batch->dx_off[i] = i * n;
    }
    if (unscale || wide) batch->x = (const char *)xs;
    if (wide) batch->dy = (const char *)dys;
    if (dx_via_slot) {
        batch->dx = (char *)dxs;
        batch->stream = 0;
    }
    batch->dt = NBWD_F32;
    nbwd__run_ln_rows(r->k, batch);
    if (!dx_via_slot) return;
    for (i = 0; i < count; ++i)
        nbwd__run_add_store(r->k, dxs + i * n, r->res ? r->res + batch->res_off[i] * esz : NULL, r->dx + dx_off[i] * esz,
                            p->dt, n, r->stream);
    if (r->stream) r->k->fence();
}

/* count statistics of type sdt at src + off[i] as floats: 16-bit ones
   gathered, then widened by the path's kernel (exact: the scalar
   conversion's bits) */
static void nbwd__gather_stats(const nbwd__kernels *k, const void *src, int sdt, const int64_t *off, int64_t count,
                               float *out) {
    uint16_t h[NBWD__ROW_BATCH];
    int64_t i;
    if (sdt == NBWD_F32) {
        for (i = 0; i < count; ++i) out[i] = ((const float *)src)[off[i]];
        return;
    }
    for (i = 0; i < count; ++i) h[i] = ((const uint16_t *)src)[off[i]];
    nbwd__run_widen(k, h, out, sdt, count);
}
/* A batch's xm, xs and rstd from the rows' statistics offsets: the bits of
   nbwd__stats row by row, a batch at a time (its per-row conversion, square
   root and divide in double were a quarter to a half of the time of rows
   of 24 elements with 16-bit statistics, bench/NOTES.md). */
static void nbwd__ln_batch_stats(const nbwd__ln_run *r, nbwd__rows *batch, const int64_t *mean_off,
                                 const int64_t *spread_off) {
    const nbwd__ln_plan *p = r->p;
    const int64_t count = batch->count;
    int64_t i;
    nbwd__gather_stats(r->k, r->spread, p->sdt, spread_off, count, batch->rstd);
    if (nbwd__has_mean(p->form)) {
        if (r->mean) nbwd__gather_stats(r->k, r->mean, p->sdt, mean_off, count, batch->xm);
        else for (i = 0; i < count; ++i) batch->xm[i] = 0.0f; /* RMSNorm: no mean */
        if (p->form != NBWD_STATS_MEAN_RSTD) r->k->rstd(batch->rstd, batch->rstd, count, (double)p->eps);
        memcpy(batch->xs, batch->rstd, (size_t)count * sizeof(float));
        return;
    }
    for (i = 0; i < count; ++i) { /* the input is xhat: (xhat - 0) * 1 is exact */
        batch->xm[i] = 0.0f;
        batch->xs[i] = 1.0f;
        if (p->form != NBWD_STATS_DST_RSTD) batch->rstd[i] = (float)(1.0 / (double)batch->rstd[i]); /* 1 / std */
    }
}
/* One block of rows: dx for each row, and this block's partial column sums.
   Rows go to the kernel in batches with their offsets and statistics. slot:
   the staging slot when rows are staged, else NULL. */
static void nbwd__ln_block(const nbwd__ln_run *r, int64_t b, float *slot) {
    const nbwd__ln_plan *p = r->p;
    int64_t row = b * p->rows_per_block, end = row + p->rows_per_block, n = p->n, i;
    int64_t mean_off[NBWD__ROW_BATCH], spread_off[NBWD__ROW_BATCH];
    const int f32_stats = p->sdt == NBWD_F32 && nbwd__has_mean(p->form);
    int64_t most = slot ? p->stage_rows : NBWD__ROW_BATCH;
    nbwd__rows batch;
    int64_t *const res_off = batch.res_off;
    if (end > p->rows) end = p->rows;
    batch.n = n;
    batch.cols.gamma = r->gamma;
    batch.rms = p->rms;
    batch.none = p->form == NBWD_STATS_NONE;
    batch.eps = p->eps;
    batch.res = slot || !r->want_dx ? NULL : r->res; /* not staged: the kernels add it */
    /* both partials when either output is wanted: the kernels take both or
       neither, and the final reduction adds the whole block */
    batch.cols.dg = r->partials ? r->partials + b * 2 * n : NULL;
    batch.cols.db = r->partials ? r->partials + b * 2 * n + n : NULL;
    if (r->partials) memset(r->partials + b * 2 * n, 0, (size_t)n * 8);
    if (most < 1) most = 1;
    while (row < end) {
        batch.x = r->x; /* (staging points them into the slot) */
        batch.dy = r->dy;
        batch.dx = r->want_dx ? r->dx : NULL;
        batch.dt = p->dt;
        batch.stream = r->stream;
        batch.count = end - row < most ? end - row : most;
        if (p->form == NBWD_STATS_NONE) { /* the kernels find the statistics */
            nbwd__row_offsets(&r->outer, row, batch.count, batch.x_off, batch.dy_off, batch.dx_off, NULL, NULL,
                              res_off);
        } else if (r->outer.nd == 1 && f32_stats) {
            /* the common case, one (merged) outer dim and f32 statistics:
               the offsets and the statistics in one loop (as the offsets
               helper and a loop over its statistics' offsets, rows of 24
               elements took 1-4 % longer), the batch's rstd at once (the
               bits of nbwd__stats) */
            const int64_t(*st)[NBWD_MAX_RANK] = (const int64_t(*)[NBWD_MAX_RANK])r->outer.st;
            const float *mean = (const float *)r->mean, *spread = (const float *)r->spread;
            for (i = 0; i < batch.count; ++i) {
                const int64_t q = row + i;
                batch.x_off[i] = q * st[NBWD__LN_X][0];
                batch.dy_off[i] = q * st[NBWD__LN_DY][0];
                batch.dx_off[i] = q * st[NBWD__LN_DX][0];
                res_off[i] = q * st[NBWD__LN_RES][0];
                batch.xm[i] = mean ? mean[q * st[NBWD__LN_MEAN][0]] : 0.0f; /* RMSNorm: none */
                batch.rstd[i] = spread[q * st[NBWD__LN_SPREAD][0]];
            }
            if (p->form != NBWD_STATS_MEAN_RSTD) r->k->rstd(batch.rstd, batch.rstd, batch.count, (double)p->eps);
            memcpy(batch.xs, batch.rstd, (size_t)batch.count * sizeof(float));
        } else {
            nbwd__row_offsets(&r->outer, row, batch.count, batch.x_off, batch.dy_off, batch.dx_off, mean_off,
                              spread_off, res_off);
            nbwd__ln_batch_stats(r, &batch, mean_off, spread_off);
        }
        if (slot) nbwd__ln_staged(r, &batch, slot);
        else nbwd__run_ln_rows(r->k, &batch);
        row += batch.count;
    }
}
/* The blocks lane, lane + lanes, ...: one lane per block, or per staging
   slot (each block's sums stay its own: the same bits for any lanes). */
static void nbwd__ln_lane(const nbwd__ln_run *r, int64_t lane, int64_t lanes) {
    const nbwd__ln_plan *p = r->p;
    float *slot = r->stage ? (float *)r->stage + lane * p->stage_rows * p->stage_arrays * p->n : NULL;
    int64_t b;
    for (b = lane; b < p->nblocks; b += lanes) nbwd__ln_block(r, b, slot);
}

/* rms: RMSNorm, its arguments in LayerNorm's struct (mean NULL, variance
   the mean square) */
NBWD__PLAN_FN
static nbwd_status nbwd__layer_norm_bwd(const nbwd_layer_norm_bwd_desc *desc, int rms,
                                       const nbwd_layer_norm_bwd_args *args, void *workspace, size_t workspace_bytes) {
    nbwd__ln_plan p;
    nbwd__ln_run r;
    nbwd_status s;
    void *owned;
    char *ws;
    int64_t n, j, b, lanes;
    size_t own;
    int threads, staged;
    if ((s = nbwd__ln_plan_desc(desc, rms, &p)) != NBWD_OK) return s;
    if (!args) return nbwd__fail(NBWD_ERR_NULL_POINTER, "args is NULL");
    if ((s = nbwd__ln_check_args(desc, &p, args)) != NBWD_OK) return s;
    memset(&r, 0, sizeof r);
    if (!(r.k = nbwd__select(desc->isa))) return nbwd__unsupported("desc.isa", desc->isa);
    /* a dx-only call needs no partials, and with dense f32 gamma no
       workspace at all */
    /* the pieces this call uses: gamma (and DST_RSTD's unscale), the
       partials for diff_gamma/diff_beta, the slots for staged rows; a
       dx-only call with dense f32 gamma and nothing staged needs none */
    staged = ((args->diff_residual || p.accumulate_dx) && args->diff_src && p.form == NBWD_STATS_NONE) ||
             (p.form == NBWD_STATS_DST_RSTD && p.affine && (args->diff_src || args->diff_gamma));
    own = staged ? p.ws_bytes : p.ws_stage + NBWD__WS_ALIGN;
    if (!args->diff_gamma && !args->diff_beta && !staged)
        own = p.affine && p.pdt == NBWD_F32 && p.par.dense[NBWD__PG] && p.gamma_offset == 0.0f
                  ? 0
                  : p.ws_partials_at + NBWD__WS_ALIGN;
    if (p.rows == 0 || p.n == 0 || (!args->diff_src && !args->diff_gamma && !args->diff_beta))
        own = 0; /* nothing to compute */
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
        r.x = (const char *)nbwd__x_of(p.form, args->src, args->xhat, args->dst);
        r.dy = (const char *)args->diff_dst;
        r.dx = (char *)args->diff_src;
        /* NBWD_ACCUMULATE_DIFF_SRC: diff_src is its own residual gradient
           (read as it is written, row by row: as diff_residual = diff_src) */
        r.res = (const char *)(p.accumulate_dx ? args->diff_src : args->diff_residual);
        /* no residual of its own: its strides copy diff_src's, never keeping
           the outer dims from merging */
        if (!args->diff_residual) memcpy(p.st[NBWD__LN_RES], p.st[NBWD__LN_DX], sizeof p.st[NBWD__LN_DX]);
        r.mean = (const char *)args->mean;
        r.spread = (const char *)nbwd__spread_of(p.form, args->variance, args->rstd, args->std);
        /* gamma (+ offset) enters only the sums, which only dx needs: ones
           otherwise */
        if (p.affine && r.want_dx && p.pdt == NBWD_F32 && p.par.dense[NBWD__PG] && p.gamma_offset == 0.0f) {
            r.gamma = (const float *)args->gamma;
        } else {
            float *g = (float *)(ws + p.ws_gamma);
            if (p.affine && r.want_dx) nbwd__read_params(r.k, &p.par, NBWD__PG, args->gamma, p.pdt, g, n);
            else for (j = 0; j < n; ++j) g[j] = 1.0f;
            if (p.affine && r.want_dx && p.gamma_offset != 0.0f)
                for (j = 0; j < n; ++j) g[j] += p.gamma_offset; /* rounded to float */
            r.gamma = g;
        }
        if (r.want_dg || r.want_db) r.partials = (float *)(ws + p.ws_partials);
        /* DST_RSTD: xhat is made from dst where it is used (diff_src,
           diff_gamma); diff_beta alone needs none */
        if (p.form == NBWD_STATS_DST_RSTD && p.affine && (r.want_dx || r.want_dg)) {
            float *beta = (float *)(ws + p.ws_unscale), *inv = beta + n;
            nbwd__read_params(r.k, &p.par, NBWD__PG, args->gamma, p.pdt, inv, n); /* gamma, then its inverse */
            if (args->beta) nbwd__read_params(r.k, &p.par, NBWD__PB, args->beta, p.pdt, beta, n);
            else for (j = 0; j < n; ++j) beta[j] = 0.0f;
            for (j = 0; j < n; ++j) {
                float ge = inv[j] + p.gamma_offset;
                /* a zero (or subnormal) scale leaves no trace of xhat in dst:
                   taken as 0 there (a NaN or infinite dst stays NaN) */
                inv[j] = (ge < 0.0f ? -ge : ge) >= 1.17549435e-38f ? 1.0f / ge : 0.0f; /* FLT_MIN */
            }
            r.unscale = beta;
        }
        if (staged) r.stage = ws + p.ws_stage;
        nbwd__outer_init(&r.outer, p.axis, desc->dims, NBWD__MAX_T, p.st);
        r.stream = r.want_dx && (double)p.rows * (double)n * (double)nbwd__esize(p.dt) >= (double)NORM_BWD_STREAM_BYTES;
        lanes = r.stage ? p.stage_slots : p.nblocks;
        threads = nbwd__pick_threads(desc->num_threads, p.rows * n, lanes);
        NBWD__PARALLEL_FOR(threads, b, lanes, nbwd__ln_lane(&r, b, lanes));
        if (r.want_dg || r.want_db) {
            nbwd__sum_blocks(r.k, r.partials, p.nblocks, 2 * n, desc->num_threads);
            if (r.want_dg)
                nbwd__write_params_at(r.k, &p.par, NBWD__PDG, args->diff_gamma, p.pdt, r.partials, n, p.accumulate);
            if (r.want_db)
                nbwd__write_params_at(r.k, &p.par, NBWD__PDB, args->diff_beta, p.pdt, r.partials + n, n, p.accumulate);
        }
    }
    if (owned) NORM_BWD_FREE(owned);
    return NBWD_OK;
}

/* NORM_BWD_VERBOSE=2: one line per call. */
NBWD__PLAN_FN
static void nbwd__dims_text(char *out, size_t bytes, int rank, const int64_t *dims) {
    size_t at = 0;
    int d;
    out[0] = 0;
    for (d = 0; d < rank && d < NBWD_MAX_RANK && at + 24 < bytes; ++d)
        at += (size_t)snprintf(out + at, bytes - at, "%s%lld", d ? "x" : "", (long long)dims[d]);
}
NBWD__PLAN_FN
static int nbwd__max_threads(int requested) {
#if defined(_OPENMP)
    return requested > 0 ? requested : omp_get_max_threads();
#else
    (void)requested;
    return 1;
#endif
}
NBWD__PLAN_FN
static const char *nbwd__outputs_text(const void *dx, const void *dg, const void *db) {
    static const char *const text[8] = {"none",     "diff_src",           "diff_gamma",
                                        "diff_src,diff_gamma", "diff_beta", "diff_src,diff_beta",
                                        "diff_gamma,diff_beta", "diff_src,diff_gamma,diff_beta"};
    return text[(dx ? 1 : 0) | (dg ? 2 : 0) | (db ? 4 : 0)];
}
/* The fields both descriptors and both argument structs share, for the
   line of a call: op, dims, what tells the normalized set (axis, layout),
   dtypes, form, outputs, path, thread limit, time. */
typedef struct nbwd__call {
    const char *op, *set;
    int rank, dt, sdt, pdt, form, num_threads, rms;
    const int64_t *dims;
    nbwd_isa isa;
    const void *dx, *dg, *db;
    int have_args;
} nbwd__call;
NBWD__PLAN_FN
static void nbwd__call_line(const nbwd__call *c, double seconds, nbwd_status s) {
    const nbwd__kernels *k = s == NBWD_OK ? nbwd__select(c->isa) : NULL;
    char shape[200];
    nbwd__dims_text(shape, sizeof shape, c->rank, c->dims);
    fprintf(stderr, "norm_bwd: %s %s %s data %s stats %s params %s %s outputs %s path %s threads<=%d %.3f ms%s\n",
            c->op, shape, c->set, nbwd__dtype_name(c->dt), nbwd__dtype_name(c->sdt), nbwd__dtype_name(c->pdt),
            nbwd__form_name_of(c->form, c->rms), c->have_args ? nbwd__outputs_text(c->dx, c->dg, c->db) : "-",
            k ? nbwd_isa_name(k->isa) : "-", nbwd__max_threads(c->num_threads), seconds * 1e3,
            s == NBWD_OK ? "" : " (rejected)");
}
/* The shared fields of desc d and args a (either operation's) */
#define NBWD__CALL_OF(c, d, a)                                                                                        \
    do {                                                                                                              \
        (c).rank = (d)->rank; (c).dims = (d)->dims; (c).dt = (int)(d)->data_dtype;                                    \
        (c).sdt = (int)(d)->stats_dtype; (c).pdt = (int)(d)->param_dtype; (c).form = (int)(d)->stats_form;            \
        (c).num_threads = (d)->num_threads; (c).isa = (d)->isa; (c).have_args = (a) != NULL; (c).rms = 0;             \
        (c).dx = (a) ? (a)->diff_src : NULL; (c).dg = (a) ? (a)->diff_gamma : NULL;                                   \
        (c).db = (a) ? (a)->diff_beta : NULL;                                                                         \
    } while (0)

/* RMSNorm's arguments in LayerNorm's struct: no mean, the mean square as
   the variance. NULL stays NULL. */
NBWD__PLAN_FN
static const nbwd_layer_norm_bwd_args *nbwd__rms_as_ln(const nbwd_rms_norm_bwd_args *a, nbwd_layer_norm_bwd_args *la) {
    if (!a) return NULL;
    memset(la, 0, sizeof *la);
    la->src = a->src; la->xhat = a->xhat; la->diff_dst = a->diff_dst;
    la->variance = a->mean_square; la->rstd = a->rstd; la->std = a->std; la->gamma = a->gamma;
    la->diff_src = a->diff_src; la->diff_gamma = a->diff_gamma; la->diff_beta = a->diff_beta;
    la->beta = a->beta; la->dst = a->dst; la->diff_residual = a->diff_residual;
    return la;
}
/* The LayerNorm and RMSNorm entry points: the call, its status and message,
   and NORM_BWD_VERBOSE=2's line. */
NBWD__PLAN_FN
static nbwd_status nbwd__ln_entry(const nbwd_layer_norm_bwd_desc *desc, int rms, const nbwd_layer_norm_bwd_args *args,
                                  void *workspace, size_t workspace_bytes) {
    int verbose = nbwd__verbose();
    double t0 = verbose >= 2 ? nbwd__now() : 0.0;
    nbwd_status s;
    nbwd__msg[0] = 0;
    s = nbwd__finish(rms ? "nbwd_rms_norm_bwd" : "nbwd_layer_norm_bwd",
                     nbwd__layer_norm_bwd(desc, rms, args, workspace, workspace_bytes));
    if (verbose >= 2 && desc) {
        nbwd__call c;
        char axis[32];
        snprintf(axis, sizeof axis, "axis %lld", (long long)desc->begin_norm_axis);
        NBWD__CALL_OF(c, desc, args);
        c.op = rms ? "rms_norm_bwd" : "layer_norm_bwd";
        c.set = axis;
        c.rms = rms;
        nbwd__call_line(&c, nbwd__now() - t0, s);
    }
    return s;
}
NBWD__PLAN_FN
NBWD_API nbwd_status nbwd_layer_norm_bwd(const nbwd_layer_norm_bwd_desc *desc, const nbwd_layer_norm_bwd_args *args,
                                         void *workspace, size_t workspace_bytes) {
    return nbwd__ln_entry(desc, 0, args, workspace, workspace_bytes);
}
NBWD__PLAN_FN
NBWD_API nbwd_status nbwd_rms_norm_bwd(const nbwd_rms_norm_bwd_desc *desc, const nbwd_rms_norm_bwd_args *args,
                                       void *workspace, size_t workspace_bytes) {
    nbwd_layer_norm_bwd_args la;
    return nbwd__ln_entry(desc, 1, nbwd__rms_as_ln(args, &la), workspace, workspace_bytes);
}

/* ------------------------------------------------------------ BatchNorm */
/* BatchNorm's tensors: the plan's strides st[] cover the data tensors
   (the first NBWD__BN_DATA), the alias checks all of them (the two-phase
   calls' sums last). */
enum {
    NBWD__BN_X, NBWD__BN_DY, NBWD__BN_DX, NBWD__BN_DST, NBWD__BN_DSA, /* st[]; DSA: diff_src_add */
    NBWD__BN_MEAN, NBWD__BN_SPREAD, NBWD__BN_GAMMA, NBWD__BN_DGAMMA, NBWD__BN_DBETA, NBWD__BN_SUM_DYX,
    NBWD__BN_SUM_DY, NBWD__BN_TENSORS
};
#define NBWD__BN_DATA 5
typedef struct nbwd__bn_plan {
    int rank, dt, sdt, pdt, form, accumulate;
    int global_stats; /* NBWD_USE_GLOBAL_STATS */
    int nxc;    /* the row algorithm: channels are the dense inner dim */
    int gather; /* [N, C] with a channel stride other than 1: rows through dense tiles */
    int relu;   /* 0, NBWD_FUSE_RELU or NBWD_FUSE_ADD_RELU */
    float eps;
    int64_t N, C, S, M;                     /* batch, channels, spatial size, N * S */
    int64_t st[NBWD__BN_DATA][NBWD_MAX_RANK]; /* the data tensors' strides (NBWD__BN_X..NBWD__BN_DSA) */
    int64_t mean_st, var_st;                /* the [C] statistics' strides */
    nbwd__params par;                       /* gamma, (unused), diff_gamma, diff_beta: [C] */
    int64_t rows, rows_per_block, nblocks;  /* NXC: rows = N * S */
    int64_t n_per_chunk, nchunks;           /* NCX: batch entries per partial */
    int64_t cblock;                         /* NCX: channels visited together */
    size_t ws_coef, ws_partials, ws_masked, ws_bytes; /* ws_masked: NBWD_FUSE_RELU's masked dy */
} nbwd__bn_plan;

typedef struct nbwd__bn_run {
    const nbwd__bn_plan *p;
    const nbwd__kernels *k;
    nbwd__outer outer; /* NXC rows */
    const char *x, *dy;
    char *dx;
    float *xm, *xs, *mg, *mgx, *scale; /* [C] each; scale holds rstd until finished */
    float *partials;
    const void *gamma;                         /* NULL: 1 */
    void *dgamma, *dbeta;
    int want_dx, stream;
    int reduce; /* the channel sums are needed: training statistics, or diff_gamma/diff_beta */
    int64_t count;                          /* the batch size of the sums: M, or apply's count */
    const float *given_dy, *given_dyx;      /* apply: the global sums (reduce is 0) */
    const char *relu_dst; /* NXC's fused ReLU in the row kernels (else NULL): dst, */
    uint16_t *keep;       /* the mask's bits, keep_words per row (nbwd__rows.keep) */
    int64_t keep_words;
    char *relu_add; /* NBWD_FUSE_ADD_RELU there: diff_src_add, written by pass 1 (nbwd__rows.relu_add) */
    /* NCX's fused ReLU staged a block of channels at a time (else NULL):
       diff_dst and dst (relu_dst), their (n, c) strides, and the staging,
       where dy then points (see nbwd__bn_ncx_mask): NBWD_FUSE_RELU's in a
       slot of relu_slot elements per thread in the workspace, dy's (n, c)
       plane at (n, c - dy_c0) of the block's (0 elsewhere) */
    const char *relu_dy;
    char *relu_stage;
    int64_t relu_st[2][2], relu_slot, dy_c0;
} nbwd__bn_run;

/* The two-phase calls: reduce writes the slice's sums where diff_beta and
   diff_gamma would go (dense f32); apply takes the global ones. */
typedef struct nbwd__bn_sums {
    int phase; /* 1 reduce, 2 apply */
    const float *sum_dy, *sum_dy_xhat;
    int64_t count;
} nbwd__bn_sums;

NBWD_API void nbwd_batch_norm_bwd_desc_init(nbwd_batch_norm_bwd_desc *desc, int rank, const int64_t *dims,
                                            nbwd_layout layout, float epsilon) {
    int d;
    if (!desc) return;
    memset(desc, 0, sizeof *desc);
    desc->rank = rank;
    for (d = 0; d < rank && d < NBWD_MAX_RANK && dims; ++d) desc->dims[d] = dims[d];
    desc->layout = layout;
    desc->epsilon = epsilon;
    desc->init_stamp = NBWD__BN_STAMP;
}

/* Does tensor t (x, dy, dx, dst, diff_src_add) reach the kernels, and
   with it their stride rules? */
NBWD__PLAN_FN
static int nbwd__bn_kernel_tensor(int relu, int t) {
    return t == NBWD__BN_X || t == NBWD__BN_DX || (t == NBWD__BN_DY && !relu) ||
           (t == NBWD__BN_DSA && relu == NBWD_FUSE_ADD_RELU);
}
NBWD__PLAN_FN
static nbwd_status nbwd__bn_plan_desc(const nbwd_batch_norm_bwd_desc *d, nbwd__bn_plan *p) {
    nbwd_status s;
    int64_t lo, hi, total;
    int t, r, nt;
    static const char *const tensor[NBWD__BN_DATA] = {"src", "diff_dst", "diff_src", "dst", "diff_src_add"};
    if (!d) return nbwd__fail(NBWD_ERR_NULL_POINTER, "desc is NULL");
    memset(p, 0, sizeof *p);
    if (d->init_stamp != NBWD__BN_STAMP)
        return nbwd__fail(NBWD_ERR_NOT_INITIALIZED,
                          "desc was not made by nbwd_batch_norm_bwd_desc_init (a zeroed or hand-built descriptor "
                          "has no defaults: call it first, then set the fields you change)");
    if (d->rank < 2 || d->rank > NBWD_MAX_RANK)
        return nbwd__fail(NBWD_ERR_BAD_PARAM, "desc.rank = %d: BatchNorm takes 2 to %d", d->rank, NBWD_MAX_RANK);
    if (d->layout != NBWD_NXC && d->layout != NBWD_NCX)
        return nbwd__fail(NBWD_ERR_BAD_PARAM, "desc.layout = %d is neither NBWD_NXC nor NBWD_NCX", (int)d->layout);
    r = p->rank = d->rank;
    if ((s = nbwd__count(d->dims, 0, r, &total)) != NBWD_OK) return s;
    if ((s = nbwd__check_common((int)d->stats_form, d->flags, 1, d->num_threads, (int)d->isa, d->epsilon)) != NBWD_OK)
        return s;
    if ((s = nbwd__check_dtypes((int)d->data_dtype, (int)d->stats_dtype, (int)d->param_dtype)) != NBWD_OK) return s;
    p->dt = (int)d->data_dtype; p->sdt = (int)d->stats_dtype; p->pdt = (int)d->param_dtype;
    p->form = (int)d->stats_form;
    p->accumulate = (d->flags & NBWD_ACCUMULATE_PARAM_GRADS) != 0;
    p->global_stats = (d->flags & NBWD_USE_GLOBAL_STATS) != 0;
    p->relu = (int)(d->flags & (NBWD_FUSE_RELU | NBWD_FUSE_ADD_RELU));
    p->eps = d->epsilon;
    p->nxc = d->layout == NBWD_NXC;
    p->N = d->dims[0];
    p->C = d->layout == NBWD_NXC ? d->dims[r - 1] : d->dims[1];
    nbwd__count(d->dims, p->nxc ? 1 : 2, p->nxc ? r - 1 : r, &p->S);
    p->M = p->N * p->S;
    for (t = 0; t < NBWD__BN_DATA; ++t) {
        const int64_t *const given[NBWD__BN_DATA] = {d->src_strides, d->diff_dst_strides, d->diff_src_strides,
                                                     d->dst_strides, d->diff_src_add_strides};
        nbwd__strides(r, d->dims, given[t], p->st[t]);
    }
    /* The fused ReLU's tensors take part only with its flag. Its masked dy
       (diff_src_add, or dense in the workspace) replaces dy in the kernels;
       dy and dst are read elementwise before them, with any strides. */
    nt = p->relu == NBWD_FUSE_ADD_RELU ? NBWD__BN_DSA + 1 : p->relu ? NBWD__BN_DST + 1 : NBWD__BN_DX + 1;
    /* [N, C] reads the same in both layouts and always takes the row (NXC)
       algorithm, which vectorizes across channels: the algorithm, and with
       it every bit, depends on the shape alone. Channels that are not dense
       in some tensor reach the same kernels through dense tiles. */
    if (r == 2) {
        p->nxc = 1;
        for (t = 0; t < nt; ++t)
            if (nbwd__bn_kernel_tensor(p->relu, t)) p->gather |= d->dims[1] > 1 && p->st[t][1] != 1;
    }
    for (t = 0; t < nt; ++t) {
        if (nbwd__bn_kernel_tensor(p->relu, t) && !p->gather &&
            !nbwd__dense_block(d->dims, p->st[t], p->nxc ? r - 1 : 2, r))
            return nbwd__fail(NBWD_ERR_BAD_STRIDES, "desc.%s_strides: %s must be dense (row-major, inner stride 1)",
                              tensor[t], p->nxc ? "the channels (NXC)" : "the spatial dims (NCX)");
        if (!nbwd__extent(r, d->dims, p->st[t], nbwd__esize(p->dt), &lo, &hi))
            return nbwd__fail(NBWD_ERR_BAD_STRIDES, "desc.%s_strides: the tensor's byte extent overflows", tensor[t]);
    }
    {
        const int64_t *const given[NBWD__NPAR] = {d->gamma_strides, NULL, d->diff_gamma_strides,
                                                  d->diff_beta_strides};
        if ((s = nbwd__params_init(&p->par, 1, &p->C, given, p->pdt)) != NBWD_OK) return s;
        p->mean_st = d->mean_strides ? d->mean_strides[0] : 1;
        p->var_st = d->var_strides ? d->var_strides[0] : 1;
        if (!nbwd__extent(1, &p->C, &p->mean_st, nbwd__esize(p->sdt), &lo, &hi) ||
            !nbwd__extent(1, &p->C, &p->var_st, nbwd__esize(p->sdt), &lo, &hi))
            return nbwd__fail(NBWD_ERR_BAD_STRIDES, "desc.mean_strides or var_strides: the byte extent overflows");
    }
    p->ws_bytes = 0;
    if (p->M == 0 || p->C == 0) return NBWD_OK; /* empty: nothing to compute, no workspace */
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
    /* last, so that a call which stages it in diff_src allocates less */
    if (p->relu == NBWD_FUSE_RELU)
        p->ws_masked = nbwd__ws_take(&p->ws_bytes, (size_t)(p->M * p->C) * nbwd__esize(p->dt));
    else if (p->relu == NBWD_FUSE_ADD_RELU && p->nxc && p->dt == NBWD_F32) /* the mask's bits, where pass 1 */
        p->ws_masked = nbwd__ws_take(&p->ws_bytes, (size_t)(p->M * ((p->C + 3) / 4)) * 2); /* writes diff_src_add */
    p->ws_bytes += NBWD__WS_ALIGN; /* slack for aligning the caller's pointer */
    return NBWD_OK;
}

NBWD__PLAN_FN
NBWD_API nbwd_status nbwd_batch_norm_bwd_workspace_size(const nbwd_batch_norm_bwd_desc *desc, size_t *bytes) {
    nbwd__bn_plan p;
    nbwd_status s;
    nbwd__msg[0] = 0;
    if (!bytes) s = nbwd__fail(NBWD_ERR_NULL_POINTER, "bytes is NULL");
    else if ((s = nbwd__bn_plan_desc(desc, &p)) == NBWD_OK) *bytes = p.ws_bytes;
    return nbwd__finish("nbwd_batch_norm_bwd_workspace_size", s);
}

/* sums: the two-phase calls (NULL: nbwd_batch_norm_bwd). reduce's sums
   arrive as a's diff_gamma/diff_beta (named for what they are); apply's are
   two more inputs that no output may overlap. */
NBWD__PLAN_FN
static nbwd_status nbwd__bn_check_args(const nbwd_batch_norm_bwd_desc *d, const nbwd__bn_plan *p,
                                       const nbwd_batch_norm_bwd_args *a, const nbwd__bn_sums *sums) {
    nbwd_status s;
    int64_t total = p->M * p->C, od[NBWD_MAX_RANK], os[NBWD_MAX_RANK];
    size_t esz = nbwd__esize(p->dt);
    const void *x = nbwd__x_of(p->form, a->src, a->xhat, NULL);
    const void *spread = nbwd__spread_of(p->form, a->variance, a->rstd, a->std);
    nbwd__span sp[NBWD__MAX_SPANS];
    int out[NBWD__MAX_SPANS] = {0}, i, nod = 0;
    unsigned char exact[NBWD__MAX_SPANS][NBWD__MAX_SPANS];
    const char *names[NBWD__BN_TENSORS] = {"src",      "diff_dst", "diff_src",   "dst",       "diff_src_add",
                                           "mean",     "variance", "gamma",      "diff_gamma", "diff_beta",
                                           "sum_dy_xhat", "sum_dy"};
    int t;
    if (sums && sums->phase == 1) {
        names[NBWD__BN_DGAMMA] = "sum_dy_xhat";
        names[NBWD__BN_DBETA] = "sum_dy";
    }
    names[NBWD__BN_X] = nbwd__x_name(p->form);
    names[NBWD__BN_SPREAD] = nbwd__spread_name(p->form, 0);
    if ((a->diff_gamma == NULL) != (a->diff_beta == NULL))
        return nbwd__fail(NBWD_ERR_BAD_PARAM, "args.%s is set without args.%s: BatchNorm computes both or neither",
                          a->diff_gamma ? "diff_gamma" : "diff_beta", a->diff_gamma ? "diff_beta" : "diff_gamma");
    if ((s = nbwd__check_stats_args(p->form, 0, a->src, a->xhat, NULL, a->mean, a->variance, a->rstd, a->std, total,
                                    p->C)) != NBWD_OK)
        return s;
    if (total > 0 && !a->diff_dst) return nbwd__fail(NBWD_ERR_NULL_POINTER, "args.diff_dst is NULL");
    if (!p->relu && (a->dst || a->diff_src_add))
        return nbwd__fail(NBWD_ERR_BAD_PARAM,
                          "args.%s is set but desc.flags has neither NBWD_FUSE_RELU nor NBWD_FUSE_ADD_RELU",
                          a->dst ? "dst" : "diff_src_add");
    if (p->relu == NBWD_FUSE_RELU && a->diff_src_add)
        return nbwd__fail(NBWD_ERR_BAD_PARAM,
                          "args.diff_src_add is set with NBWD_FUSE_RELU: it is NBWD_FUSE_ADD_RELU's output");
    if (total > 0 && p->relu && (!a->dst || (p->relu == NBWD_FUSE_ADD_RELU && !a->diff_src_add)))
        return nbwd__fail(NBWD_ERR_NULL_POINTER, "args.%s is NULL (desc.flags has %s)",
                          a->dst ? "diff_src_add" : "dst",
                          p->relu == NBWD_FUSE_RELU ? "NBWD_FUSE_RELU" : "NBWD_FUSE_ADD_RELU");
    /* the outputs' outer dims: NXC all but C; NCX (and gathered [N, C]) N
       and C around the dense plane */
    for (t = NBWD__BN_DX; t <= NBWD__BN_DSA; t += NBWD__BN_DSA - NBWD__BN_DX) {
        if (!(t == NBWD__BN_DX ? a->diff_src : a->diff_src_add)) continue;
        for (nod = 0, i = 0; i < (p->nxc && !p->gather ? p->rank - 1 : 2); ++i) {
            od[nod] = d->dims[i];
            os[nod] = p->st[t][i];
            ++nod;
        }
        if (!nbwd__no_self_overlap(nod, od, os, p->gather ? 1 : p->nxc ? p->C : p->S))
            return nbwd__fail(NBWD_ERR_BAD_STRIDES, "desc.%s_strides make two elements of args.%s share an address",
                              names[t], names[t]);
    }

    nbwd__span_of(&sp[NBWD__BN_X], x, p->rank, d->dims, p->st[NBWD__BN_X], esz);
    nbwd__span_of(&sp[NBWD__BN_DY], a->diff_dst, p->rank, d->dims, p->st[NBWD__BN_DY], esz);
    nbwd__span_of(&sp[NBWD__BN_DX], a->diff_src, p->rank, d->dims, p->st[NBWD__BN_DX], esz);
    nbwd__span_of(&sp[NBWD__BN_DST], a->dst, p->rank, d->dims, p->st[NBWD__BN_DST], esz);
    nbwd__span_of(&sp[NBWD__BN_DSA], a->diff_src_add, p->rank, d->dims, p->st[NBWD__BN_DSA], esz);
    nbwd__span_of(&sp[NBWD__BN_MEAN], p->form == NBWD_STATS_XHAT_STD ? NULL : a->mean, 1, &p->C, &p->mean_st,
                  nbwd__esize(p->sdt));
    nbwd__span_of(&sp[NBWD__BN_SPREAD], spread, 1, &p->C, &p->var_st, nbwd__esize(p->sdt));
    /* gamma is read only for diff_gamma/diff_beta: inputs not read are not checked */
    nbwd__param_span(&sp[NBWD__BN_GAMMA], &p->par, NBWD__PG, a->diff_gamma ? a->gamma : NULL, p->pdt);
    nbwd__param_span(&sp[NBWD__BN_DGAMMA], &p->par, NBWD__PDG, a->diff_gamma, p->pdt);
    nbwd__param_span(&sp[NBWD__BN_DBETA], &p->par, NBWD__PDB, a->diff_beta, p->pdt);
    {
        int64_t one = 1;
        int apply = sums && sums->phase == 2;
        nbwd__span_of(&sp[NBWD__BN_SUM_DYX], apply ? sums->sum_dy_xhat : NULL, 1, &p->C, &one, 4);
        nbwd__span_of(&sp[NBWD__BN_SUM_DY], apply ? sums->sum_dy : NULL, 1, &p->C, &one, 4);
    }
    out[NBWD__BN_DX] = out[NBWD__BN_DSA] = out[NBWD__BN_DGAMMA] = out[NBWD__BN_DBETA] = 1;
    memset(exact, 0, sizeof exact);
    exact[NBWD__BN_DX][NBWD__BN_X] =
        (unsigned char)nbwd__same_view(a->diff_src, p->st[NBWD__BN_DX], x, p->st[NBWD__BN_X], p->rank, d->dims);
    exact[NBWD__BN_DX][NBWD__BN_DY] = (unsigned char)nbwd__same_view(a->diff_src, p->st[NBWD__BN_DX], a->diff_dst,
                                                                      p->st[NBWD__BN_DY], p->rank, d->dims);
    /* dst and dy are read up front, into the masked dy, elementwise: that
       output may be either of them, and diff_src may be dst */
    exact[NBWD__BN_DX][NBWD__BN_DST] = (unsigned char)nbwd__same_view(a->diff_src, p->st[NBWD__BN_DX], a->dst,
                                                                       p->st[NBWD__BN_DST], p->rank, d->dims);
    exact[NBWD__BN_DSA][NBWD__BN_DY] = (unsigned char)nbwd__same_view(
        a->diff_src_add, p->st[NBWD__BN_DSA], a->diff_dst, p->st[NBWD__BN_DY], p->rank, d->dims);
    exact[NBWD__BN_DSA][NBWD__BN_DST] = (unsigned char)nbwd__same_view(a->diff_src_add, p->st[NBWD__BN_DSA], a->dst,
                                                                        p->st[NBWD__BN_DST], p->rank, d->dims);
    if (a->diff_src_add && exact[NBWD__BN_DSA][NBWD__BN_DST] && sums)
        return nbwd__fail(NBWD_ERR_BAD_ALIAS,
                          "args.diff_src_add is args.dst: not in the two-phase calls (reduce's diff_src_add would "
                          "replace the dst that apply masks with)");
    return nbwd__check_alias(NBWD__BN_TENSORS, sp, names, out, (const unsigned char(*)[NBWD__MAX_SPANS])exact);
}

/* Channel c's sums are complete (partials[0..1]): coefficients and params.
   Global statistics: dx = dy * scale, through the training formula with
   mean_g = mean_gx = 0 and xhat's scale 0, so that x takes no part (short of
   a NaN or infinite x - mean, whose xhat is NaN). */
static void nbwd__bn_finish(const nbwd__bn_run *r, int64_t c, float sum_dyx, float sum_dy) {
    const nbwd__bn_plan *p = r->p;
    float gamma = r->gamma ? nbwd__load(r->gamma, c * p->par.st[NBWD__PG][0], p->pdt) : 1.0f;
    r->mg[c] = p->global_stats ? 0.0f : (float)((double)sum_dy / (double)r->count);
    r->mgx[c] = p->global_stats ? 0.0f : (float)((double)sum_dyx / (double)r->count);
    if (p->global_stats) r->xs[c] = 0.0f;
    r->scale[c] = r->scale[c] * gamma;
    if (r->dgamma) {
        nbwd__write_param(r->dgamma, c * p->par.st[NBWD__PDG][0], p->pdt, sum_dyx, p->accumulate);
        nbwd__write_param(r->dbeta, c * p->par.st[NBWD__PDB][0], p->pdt, sum_dy, p->accumulate);
    }
}

/* Channel c without a reduction: apply's given sums, or none (frozen
   statistics and dx alone) */
static void nbwd__bn_finish_unreduced(const nbwd__bn_run *r, int64_t c) {
    nbwd__bn_finish(r, c, r->given_dyx ? r->given_dyx[c] : 0.0f, r->given_dy ? r->given_dy[c] : 0.0f);
}

/* Channels [c0, c0 + n) of a [C] tensor of type dt with stride st as
   floats (n <= NBWD__ROW_BATCH) */
NBWD__PLAN_FN
static void nbwd__bn_gather(const nbwd__kernels *k, const void *src, int dt, int64_t c0, int64_t st, int64_t n,
                            float *out) {
    int64_t off[NBWD__ROW_BATCH], i;
    if (dt == NBWD_F32 && st == 1) {
        memcpy(out, (const float *)src + c0, (size_t)n * sizeof(float));
        return;
    }
    for (i = 0; i < n; ++i) off[i] = (c0 + i) * st;
    nbwd__gather_stats(k, src, dt, off, n, out);
}

/* Every channel's xm, xs and rstd (in scale): the bits of nbwd__stats
   channel by channel, a batch of channels at a time: one channel per call,
   with its double square root and divide, they took most of an [N, C]
   call of a few rows (bench/NOTES.md). */
NBWD__PLAN_FN
static void nbwd__bn_all_stats(const nbwd__bn_run *r, const void *mean, const void *spread) {
    const nbwd__bn_plan *p = r->p;
    int64_t c0, i, n;
    for (c0 = 0; c0 < p->C; c0 += n) {
        float *xm = r->xm + c0, *xs = r->xs + c0, *rstd = r->scale + c0;
        n = p->C - c0 < NBWD__ROW_BATCH ? p->C - c0 : NBWD__ROW_BATCH;
        nbwd__bn_gather(r->k, spread, p->sdt, c0, p->var_st, n, rstd);
        if (!nbwd__has_mean(p->form)) { /* the input is xhat: (xhat - 0) * 1 is exact */
            for (i = 0; i < n; ++i) {
                xm[i] = 0.0f;
                xs[i] = 1.0f;
                rstd[i] = (float)(1.0 / (double)rstd[i]); /* 1 / std */
            }
            continue;
        }
        if (mean) nbwd__bn_gather(r->k, mean, p->sdt, c0, p->mean_st, n, xm);
        else for (i = 0; i < n; ++i) xm[i] = 0.0f;
        if (p->form != NBWD_STATS_MEAN_RSTD) r->k->rstd(rstd, rstd, n, (double)p->eps);
        memcpy(xs, rstd, (size_t)n * sizeof(float));
    }
}

/* Every channel finished from its sums (NULL only with frozen statistics
   and no parameter gradients): the bits of nbwd__bn_finish channel by
   channel, gamma and the parameter gradients a batch at a time. */
NBWD__PLAN_FN
static void nbwd__bn_finish_all(const nbwd__bn_run *r, const float *sum_dyx, const float *sum_dy) {
    const nbwd__bn_plan *p = r->p;
    const double count = (double)r->count;
    float gamma[NBWD__ROW_BATCH];
    int64_t c0, i, n;
    for (c0 = 0; c0 < p->C; c0 += n) {
        n = p->C - c0 < NBWD__ROW_BATCH ? p->C - c0 : NBWD__ROW_BATCH;
        if (r->gamma) nbwd__bn_gather(r->k, r->gamma, p->pdt, c0, p->par.st[NBWD__PG][0], n, gamma);
        else for (i = 0; i < n; ++i) gamma[i] = 1.0f;
        for (i = 0; i < n; ++i) r->scale[c0 + i] = r->scale[c0 + i] * gamma[i];
        if (p->global_stats) {
            for (i = 0; i < n; ++i) r->mg[c0 + i] = r->mgx[c0 + i] = r->xs[c0 + i] = 0.0f;
        } else {
            for (i = 0; i < n; ++i) {
                r->mg[c0 + i] = (float)((double)sum_dy[c0 + i] / count);
                r->mgx[c0 + i] = (float)((double)sum_dyx[c0 + i] / count);
            }
        }
    }
    if (!r->dgamma) return;
    if (p->pdt == NBWD_F32) {
        nbwd__write_params_at(r->k, &p->par, NBWD__PDG, r->dgamma, p->pdt, sum_dyx, p->C, p->accumulate);
        nbwd__write_params_at(r->k, &p->par, NBWD__PDB, r->dbeta, p->pdt, sum_dy, p->C, p->accumulate);
        return;
    }
    /* 16-bit gradients through the scalar conversion, as before: the SIMDe
       layers' narrowing may give a NaN another payload */
    for (c0 = 0; c0 < p->C; ++c0) {
        nbwd__write_param(r->dgamma, c0 * p->par.st[NBWD__PDG][0], p->pdt, sum_dyx[c0], p->accumulate);
        nbwd__write_param(r->dbeta, c0 * p->par.st[NBWD__PDB][0], p->pdt, sum_dy[c0], p->accumulate);
    }
}

/* NCX: the planes of channels [c0, c1) as the kernels see them, less the
   batch entry (nbwd__ncx_seek) and the reduce or apply part (the caller's).
   Built once per run of entries: planes of a few dozen elements make the
   per-entry cost count. */
NBWD__INLINE nbwd__planes nbwd__ncx_planes(const nbwd__bn_run *r, int64_t c0, int64_t c1) {
    const nbwd__bn_plan *p = r->p;
    nbwd__planes pl;
    memset(&pl, 0, sizeof pl);
    pl.dt = p->dt;
    pl.n = p->S;
    pl.count = c1 - c0;
    pl.x_step = p->st[NBWD__BN_X][1];
    pl.dy_step = p->st[NBWD__BN_DY][1];
    pl.xm = r->xm + c0;
    pl.xs = r->xs + c0;
    return pl;
}
/* x, dy (and dx, for the apply) of those planes in batch entry n */
NBWD__INLINE void nbwd__ncx_seek(const nbwd__bn_run *r, nbwd__planes *pl, int64_t c0, int64_t n) {
    const nbwd__bn_plan *p = r->p;
    int64_t esz = (int64_t)nbwd__esize(p->dt);
    pl->x = r->x + (n * p->st[NBWD__BN_X][0] + c0 * p->st[NBWD__BN_X][1]) * esz;
    pl->dy = r->dy + (n * p->st[NBWD__BN_DY][0] + (c0 - r->dy_c0) * p->st[NBWD__BN_DY][1]) * esz;
    if (pl->mg) pl->dx = r->dx + (n * p->st[NBWD__BN_DX][0] + c0 * p->st[NBWD__BN_DX][1]) * esz;
}

/* NCX: channels [c0, c1), batch entries [k * n_per_chunk, ...): one partial
   each. The planes go in memory order (batch entry outer, channel inner), so
   the prefetchers see runs of c1 - c0 planes rather than one plane per jump;
   each channel still adds its plane sums in batch order, whatever c0, c1. */
static void nbwd__bn_ncx_chunk(const nbwd__bn_run *r, int64_t c0, int64_t c1, int64_t k) {
    const nbwd__bn_plan *p = r->p;
    int64_t n = k * p->n_per_chunk, end = n + p->n_per_chunk, c;
    nbwd__planes pl = nbwd__ncx_planes(r, c0, c1);
    float *part;
    if (end > p->N) end = p->N;
    for (c = c0; c < c1; ++c) {
        part = r->partials + (c * p->nchunks + k) * 2;
        part[0] = part[1] = 0.0f;
    }
    pl.sums = r->partials + (c0 * p->nchunks + k) * 2;
    pl.sums_step = p->nchunks * 2;
    for (; n < end; ++n) {
        nbwd__ncx_seek(r, &pl, c0, n);
        nbwd__run_planes_reduce(r->k, &pl);
    }
}

/* NCX: dx of channels [c0, c1), batch entries n1 - 1 down to n0 (not
   fenced). */
static void nbwd__bn_ncx_apply(const nbwd__bn_run *r, int64_t c0, int64_t c1, int64_t n0, int64_t n1) {
    nbwd__planes pl = nbwd__ncx_planes(r, c0, c1);
    pl.dx_step = r->p->st[NBWD__BN_DX][1];
    pl.mg = r->mg + c0;
    pl.mgx = r->mgx + c0;
    pl.scale = r->scale + c0;
    pl.stream = r->stream;
    while (n1-- > n0) {
        nbwd__ncx_seek(r, &pl, c0, n1);
        nbwd__run_planes_apply(r->k, &pl);
    }
}

static void nbwd__bn_ncx_reduce_finish(const nbwd__bn_run *r, int64_t c) {
    float *part = r->partials + c * r->p->nchunks * 2;
    if (!r->reduce) {
        nbwd__bn_finish_unreduced(r, c);
        return;
    }
    nbwd__tree_sum(r->k, part, r->p->nchunks, 2, 2);
    nbwd__bn_finish(r, c, part[1], part[0]); /* sum dy * xhat, sum dy */
}

static void nbwd__bn_ncx_mask(const nbwd__bn_run *r, int64_t c0, int64_t c1); /* (with the mask pass) */

/* NCX, a block of channels on one thread: its data is still in cache for dx.
   dx goes from the last batch entry to the first: where the block is larger
   than L2, the entries reduced last are the ones still in it. */
static void nbwd__bn_ncx_channels(const nbwd__bn_run *run, int64_t c0, int64_t cblock, int64_t slot) {
    int64_t k, c, c1 = c0 + cblock < run->p->C ? c0 + cblock : run->p->C;
    nbwd__bn_run staged;
    const nbwd__bn_run *r = run;
    if (run->relu_dy && run->relu_slot) { /* the thread's slot holds the block's masked dy */
        staged = *run;
        staged.relu_stage += slot * run->relu_slot * (int64_t)nbwd__esize(run->p->dt);
        staged.dy = staged.relu_stage;
        staged.dy_c0 = c0;
        r = &staged;
    }
    if (r->relu_dy) nbwd__bn_ncx_mask(r, c0, c1);
    for (k = 0; k < r->p->nchunks && r->reduce; ++k) nbwd__bn_ncx_chunk(r, c0, c1, k);
    for (c = c0; c < c1; ++c) nbwd__bn_ncx_reduce_finish(r, c);
    if (r->want_dx) {
        nbwd__bn_ncx_apply(r, c0, c1, 0, r->p->N);
        if (r->stream) r->k->fence();
    }
}

/* NCX: blocks [lane * nblocks / lanes, (lane + 1) * nblocks / lanes) of
   cblock channels, on one thread (its slot: lane) */
static void nbwd__bn_ncx_lane(const nbwd__bn_run *r, int64_t lane, int64_t lanes, int64_t cblock) {
    int64_t b, nblocks = (r->p->C + cblock - 1) / cblock;
    for (b = nblocks * lane / lanes; b < nblocks * (lane + 1) / lanes; ++b)
        nbwd__bn_ncx_channels(r, b * cblock, cblock, lane);
}

/* NCX: dx of planes [first, last), plane i = (channel i / N, entry i % N):
   a run of entries per channel. */
static void nbwd__bn_ncx_apply_planes(const nbwd__bn_run *r, int64_t first, int64_t last) {
    int64_t i = first, N = r->p->N;
    while (i < last) {
        int64_t c = i / N, n0 = i % N, n1 = N - n0 < last - i ? N : n0 + (last - i);
        nbwd__bn_ncx_apply(r, c, c + 1, n0, n1);
        i += n1 - n0;
    }
    if (r->stream) r->k->fence();
}

/* [N, C] whose channels are not dense in x, dy or dx: the rows of block b
   go to the same kernels through dense tiles of NBWD__TILE_ROWS rows by
   NBWD__TILE_CHANS channels (x and dy gathered; dx written over the x tile,
   as in-place calls do, and scattered). The kernels work lane by lane and
   each channel still takes the block's rows in order, so the results are
   bitwise those of dense tensors. The copies run down each channel's
   column: a column-major (transposed) tensor, the usual reason for such
   strides, is read along its memory. */
#define NBWD__TILE_ROWS NBWD__ROW_BATCH /* each channel read in runs of 64 rows: whole lines */
#define NBWD__TILE_CHANS 16
static void nbwd__tile_copy(void *dst, int64_t dst_row, int64_t dst_col, const void *src, int64_t src_row,
                            int64_t src_col, int64_t rows, int64_t cols, int64_t esz) {
    int64_t i, j;
    if (esz == 4) {
        for (j = 0; j < cols; ++j)
            for (i = 0; i < rows; ++i)
                ((uint32_t *)dst)[i * dst_row + j * dst_col] = ((const uint32_t *)src)[i * src_row + j * src_col];
    } else {
        for (j = 0; j < cols; ++j)
            for (i = 0; i < rows; ++i)
                ((uint16_t *)dst)[i * dst_row + j * dst_col] = ((const uint16_t *)src)[i * src_row + j * src_col];
    }
}
static void nbwd__bn_tiles(const nbwd__bn_run *r, int64_t b, int apply) {
    const nbwd__bn_plan *p = r->p;
    int64_t row0 = b * p->rows_per_block, end = row0 + p->rows_per_block, C = p->C, c0, row, i, w;
    int64_t esz = (int64_t)nbwd__esize(p->dt);
    float xt[NBWD__TILE_ROWS * NBWD__TILE_CHANS], dyt[NBWD__TILE_ROWS * NBWD__TILE_CHANS]; /* 16-bit: half used */
    const int64_t *sx = p->st[NBWD__BN_X], *sdy = p->st[NBWD__BN_DY], *sdx = p->st[NBWD__BN_DX];
    nbwd__rows batch;
    if (end > p->rows) end = p->rows;
    nbwd__rows_clear(&batch);
    batch.x = (const char *)xt;
    batch.dy = (const char *)dyt;
    batch.dx = apply ? (char *)xt : NULL;
    batch.dt = p->dt;
    if (!apply) memset(r->partials + b * 2 * C, 0, (size_t)C * 2 * 4);
    for (c0 = 0; c0 < C; c0 += NBWD__TILE_CHANS) {
        w = C - c0 < NBWD__TILE_CHANS ? C - c0 : NBWD__TILE_CHANS;
        batch.n = w;
        batch.chans.xm = r->xm + c0; batch.chans.xs = r->xs + c0;
        batch.chans.mg = r->mg + c0; batch.chans.mgx = r->mgx + c0; batch.chans.scale = r->scale + c0;
        batch.chans.dg = r->partials + b * 2 * C + c0;
        batch.chans.db = batch.chans.dg + C;
        for (row = row0; row < end; row += batch.count) {
            batch.count = end - row < NBWD__TILE_ROWS ? end - row : NBWD__TILE_ROWS;
            for (i = 0; i < batch.count; ++i) batch.x_off[i] = batch.dy_off[i] = batch.dx_off[i] = i * w;
            nbwd__tile_copy(xt, w, 1, r->x + (row * sx[0] + c0 * sx[1]) * esz, sx[0], sx[1], batch.count, w, esz);
            nbwd__tile_copy(dyt, w, 1, r->dy + (row * sdy[0] + c0 * sdy[1]) * esz, sdy[0], sdy[1], batch.count, w, esz);
            nbwd__run_bn_rows(r->k, &batch);
            if (apply)
                nbwd__tile_copy(r->dx + (row * sdx[0] + c0 * sdx[1]) * esz, sdx[0], sdx[1], xt, w, 1, batch.count, w,
                                esz);
        }
    }
}

/* NXC: rows of all C channels; pass 1 fills block partials, pass 2 writes dx.
   Rows go to the kernel in batches, as for LayerNorm. */
static void nbwd__bn_nxc_block(const nbwd__bn_run *r, int64_t b, int apply) {
    const nbwd__bn_plan *p = r->p;
    int64_t row = b * p->rows_per_block, end = row + p->rows_per_block, C = p->C;
    nbwd__rows batch;
    if (p->gather) {
        nbwd__bn_tiles(r, b, apply);
        return;
    }
    if (end > p->rows) end = p->rows;
    nbwd__rows_clear(&batch);
    batch.x = r->x;
    batch.dy = r->dy;
    batch.dx = apply ? r->dx : NULL;
    batch.n = C;
    batch.dt = p->dt;
    batch.stream = r->stream;
    batch.chans.xm = r->xm; batch.chans.xs = r->xs;
    batch.chans.mg = r->mg; batch.chans.mgx = r->mgx; batch.chans.scale = r->scale;
    if (!apply) {
        batch.chans.dg = r->partials + b * 2 * C;
        batch.chans.db = batch.chans.dg + C;
        memset(batch.chans.dg, 0, (size_t)C * 2 * 4);
        batch.relu_add = r->relu_add;
    }
    batch.relu_dst = r->relu_dst;
    while (row < end) {
        batch.count = end - row < NBWD__ROW_BATCH ? end - row : NBWD__ROW_BATCH;
        if (r->keep) { /* (apart: the plain rows' offsets stay a loop of three) */
            nbwd__row_offsets(&r->outer, row, batch.count, batch.x_off, batch.dy_off, batch.dx_off, batch.res_off,
                              NULL, NULL);
            batch.keep = r->keep + row * r->keep_words;
        } else {
            nbwd__row_offsets(&r->outer, row, batch.count, batch.x_off, batch.dy_off, batch.dx_off, NULL, NULL, NULL);
        }
        nbwd__run_bn_rows(r->k, &batch);
        row += batch.count;
    }
}

/* The fused ReLU's masked dy: dy where the forward output dst > 0, else +0,
   for rows [row0, row1) of o (dy, dst, out; the last dim inner, n elements,
   strides in inner). The test is on the bits, so dy's bits pass unchanged:
   dst > 0 is a nonzero pattern no greater than +infinity's (a set sign bit
   or a NaN is above it), i.e. pattern - 1 < infinity's pattern, unsigned.
   Branch-free: about half of a ReLU's outputs are clipped, at random. */
#define NBWD__RELU_MASK(T, top, g, y) ((g) & (T)(0u - (unsigned)((T)((y) - 1u) < (T)(top))))
/* One piece of up to NBWD__MASK_PIECE dense elements through local
   arrays: memcpy keeps the floats' bits free of aliasing, and a loop of a
   fixed count over locals is one the compilers vectorize at -O2. */
#define NBWD__MASK_PIECE 64
static void nbwd__mask_piece(const char *dy, const char *dst, char *out, int64_t n, int dt) {
    int64_t i;
    /* a whole piece copies a constant size: inline vector moves, not calls */
    size_t bytes = (size_t)n * (dt == NBWD_F32 ? 4u : 2u), whole = n == NBWD__MASK_PIECE;
    if (dt == NBWD_F32) {
        uint32_t g[NBWD__MASK_PIECE], y[NBWD__MASK_PIECE];
        if (whole) { memcpy(g, dy, sizeof g); memcpy(y, dst, sizeof y); }
        else { memset(g, 0, sizeof g); memset(y, 0, sizeof y); memcpy(g, dy, bytes); memcpy(y, dst, bytes); }
        for (i = 0; i < NBWD__MASK_PIECE; ++i) g[i] = NBWD__RELU_MASK(uint32_t, 0x7F800000u, g[i], y[i]);
        if (whole) memcpy(out, g, sizeof g);
        else memcpy(out, g, bytes);
    } else {
        uint16_t g[NBWD__MASK_PIECE], y[NBWD__MASK_PIECE];
        uint16_t top = dt == NBWD_BF16 ? 0x7F80u : 0x7C00u;
        if (whole) { memcpy(g, dy, sizeof g); memcpy(y, dst, sizeof y); }
        else { memset(g, 0, sizeof g); memset(y, 0, sizeof y); memcpy(g, dy, bytes); memcpy(y, dst, bytes); }
        for (i = 0; i < NBWD__MASK_PIECE; ++i) g[i] = NBWD__RELU_MASK(uint16_t, top, g[i], y[i]);
        if (whole) memcpy(out, g, sizeof g);
        else memcpy(out, g, bytes);
    }
}
/* n dense elements: the path's vector kernel for f32, pieces otherwise */
static void nbwd__mask_run(const nbwd__kernels *k, const char *dy, const char *dst, char *out, int64_t n, int dt) {
    int64_t i, w, esz = dt == NBWD_F32 ? 4 : 2;
    if (dt == NBWD_F32) {
        k->mask((const float *)(const void *)dy, (const float *)(const void *)dst, (float *)(void *)out, n);
        return;
    }
    for (i = 0; i < n; i += w, dy += w * esz, dst += w * esz, out += w * esz) {
        w = n - i < NBWD__MASK_PIECE ? n - i : NBWD__MASK_PIECE;
        nbwd__mask_piece(dy, dst, out, w, dt);
    }
}
/* Units [u0, u1) of the masking: unit u is segment u % nseg of row
   u / nseg of o (dy, dst, out), each segment up to NBWD__MASK_SEG of the
   row's n elements (inner: the row's strides). */
#define NBWD__MASK_SEG 4096
static void nbwd__bn_mask_units(const nbwd__kernels *k, const nbwd__outer *o, const int64_t *inner, int64_t n,
                                int dt, const char *dy, const char *dst, char *out, int64_t u0, int64_t u1) {
    nbwd__cursor cur;
    int64_t u, i, end, esz = (int64_t)nbwd__esize(dt), nseg = (n + NBWD__MASK_SEG - 1) / NBWD__MASK_SEG;
    int dense = inner[0] == 1 && inner[1] == 1 && inner[2] == 1;
    for (u = u0; u < u1; ++u) {
        const char *g, *y;
        char *m;
        if (u == u0) nbwd__cursor_seek(o, &cur, u / nseg);
        else if (u % nseg == 0) nbwd__cursor_next(o, &cur);
        i = u % nseg * NBWD__MASK_SEG;
        end = i + NBWD__MASK_SEG < n ? i + NBWD__MASK_SEG : n;
        g = dy + (cur.off[0] + i * inner[0]) * esz;
        y = dst + (cur.off[1] + i * inner[1]) * esz;
        m = out + (cur.off[2] + i * inner[2]) * esz;
        if (dense) {
            nbwd__mask_run(k, g, y, m, end - i, dt);
        } else { /* one element at a time */
            for (; i < end; ++i, g += inner[0] * esz, y += inner[1] * esz, m += inner[2] * esz)
                nbwd__mask_piece(g, y, m, 1, dt);
        }
    }
}
/* Writes the masked dy to out (strides out_st) and points the kernels' dy
   at it. Elementwise, so any thread split gives the same bits. */
static void nbwd__bn_mask(nbwd__bn_plan *p, nbwd__bn_run *r, const int64_t *dims, const void *dst, char *out,
                          const int64_t *out_st, int num_threads) {
    int64_t st[3][NBWD_MAX_RANK], inner[3], units, n, i;
    nbwd__outer o;
    int threads, d;
    for (d = 0; d < p->rank; ++d) {
        st[0][d] = p->st[NBWD__BN_DY][d];
        st[1][d] = p->st[NBWD__BN_DST][d];
        st[2][d] = out_st[d];
    }
    /* every dim, merged where all three allow: the last is the rows' */
    nbwd__outer_init(&o, p->rank, dims, 3, st);
    if (o.nd == 0) { /* one element */
        o.nd = 1;
        o.dims[0] = 1;
        for (d = 0; d < 3; ++d) o.st[d][0] = 1;
    }
    n = o.dims[o.nd - 1];
    for (d = 0; d < 3; ++d) inner[d] = o.st[d][o.nd - 1];
    o.nd--;
    nbwd__count(o.dims, 0, o.nd, &units);
    units *= (n + NBWD__MASK_SEG - 1) / NBWD__MASK_SEG;
    threads = nbwd__pick_threads(num_threads, p->M * p->C, units);
    NBWD__PARALLEL_FOR(threads, i, threads,
                       nbwd__bn_mask_units(r->k, &o, inner, n, p->dt, r->dy, (const char *)dst, out,
                                           units * i / threads, units * (i + 1) / threads));
    r->dy = out;
    for (d = 0; d < p->rank; ++d) p->st[NBWD__BN_DY][d] = out_st[d];
}
/* NCX's fused ReLU, channels [c0, c1): each plane's masked dy staged
   where the kernels read dy (diff_src_add, diff_src or the workspace), in
   memory order, just before the block's passes read it: from the cache,
   where a mask pass over the whole tensor would leave it in memory. */
static void nbwd__bn_ncx_mask(const nbwd__bn_run *r, int64_t c0, int64_t c1) {
    const nbwd__bn_plan *p = r->p;
    int64_t n, c, len, esz = (int64_t)nbwd__esize(p->dt);
    /* the block's planes of an entry as one run where all three are dense */
    const int run = p->S == r->relu_st[0][1] && p->S == r->relu_st[1][1] && p->S == p->st[NBWD__BN_DY][1];
    for (n = 0; n < p->N; ++n)
        for (c = c0; c < c1; c += run ? c1 - c0 : 1) {
            const char *g = r->relu_dy + (n * r->relu_st[0][0] + c * r->relu_st[0][1]) * esz;
            const char *y = r->relu_dst + (n * r->relu_st[1][0] + c * r->relu_st[1][1]) * esz;
            char *m = r->relu_stage + (n * p->st[NBWD__BN_DY][0] + (c - r->dy_c0) * p->st[NBWD__BN_DY][1]) * esz;
            len = run ? (c1 - c0) * p->S : p->S;
            nbwd__mask_run(r->k, g, y, m, len, p->dt);
        }
}
#undef NBWD__RELU_MASK
#undef NBWD__MASK_PIECE
#undef NBWD__MASK_SEG

/* What every BatchNorm call checks, on the CPU and the GPU: the descriptor,
   args, the two-phase calls' sums (NULL: the plain call). p: the call's plan
   (reduce's takes its sums as dense f32 parameter outputs, overwritten);
   desc_par (optional): the descriptor's own parameter strides. */
NBWD__PLAN_FN
static nbwd_status nbwd__bn_validate(const nbwd_batch_norm_bwd_desc *desc, const nbwd_batch_norm_bwd_args *args,
                                     const nbwd__bn_sums *sums, nbwd__bn_plan *p, nbwd__params *desc_par) {
    nbwd_status s;
    if ((s = nbwd__bn_plan_desc(desc, p)) != NBWD_OK) return s;
    if (!args) return nbwd__fail(NBWD_ERR_NULL_POINTER, "args is NULL");
    if (desc_par) *desc_par = p->par;
    if (sums && sums->phase == 1) {
        p->pdt = NBWD_F32;
        p->accumulate = 0;
        p->par.st[NBWD__PDG][0] = p->par.st[NBWD__PDB][0] = 1;
        p->par.dense[NBWD__PDG] = p->par.dense[NBWD__PDB] = 1;
    }
    if (sums && sums->phase == 2) {
        if (!sums->sum_dy || !sums->sum_dy_xhat)
            return nbwd__fail(NBWD_ERR_NULL_POINTER, "%s is NULL", sums->sum_dy ? "sum_dy_xhat" : "sum_dy");
        if (sums->count < p->M)
            return nbwd__fail(NBWD_ERR_BAD_PARAM,
                              "count = %lld, below this call's own %lld elements per channel (count is the sum "
                              "over all processes of reduce's counts)",
                              (long long)sums->count, (long long)p->M);
    }
    return nbwd__bn_check_args(desc, p, args, sums);
}

/* reduce's own checks, before the shared ones: the descriptor first (as
   every call), its pointers, no outputs of the plain call. On success a is
   the plain call's args with diff_gamma/diff_beta at the sums, and sums
   says so. */
NBWD__PLAN_FN
static nbwd_status nbwd__bn_reduce_args(const nbwd_batch_norm_bwd_desc *desc, const nbwd_batch_norm_bwd_args *args,
                                        float *sum_dy, float *sum_dy_xhat, const int64_t *count, nbwd__bn_plan *p,
                                        nbwd_batch_norm_bwd_args *a, nbwd__bn_sums *sums) {
    nbwd_status s;
    if ((s = nbwd__bn_plan_desc(desc, p)) != NBWD_OK) return s;
    if (!args || !sum_dy || !sum_dy_xhat || !count)
        return nbwd__fail(NBWD_ERR_NULL_POINTER, "%s is NULL",
                          !args ? "args" : !sum_dy ? "sum_dy" : !sum_dy_xhat ? "sum_dy_xhat" : "count");
    if (args->diff_src || args->diff_gamma || args->diff_beta)
        return nbwd__fail(NBWD_ERR_BAD_PARAM,
                          "args.%s is set: reduce writes the sums alone (diff_src, diff_gamma and diff_beta come "
                          "from the apply call)",
                          args->diff_src ? "diff_src" : args->diff_gamma ? "diff_gamma" : "diff_beta");
    *a = *args;
    a->gamma = NULL;
    a->diff_gamma = sum_dy_xhat;
    a->diff_beta = sum_dy;
    memset(sums, 0, sizeof *sums);
    sums->phase = 1;
    return NBWD_OK;
}
NBWD__PLAN_FN
static nbwd__bn_sums nbwd__bn_apply_sums(const float *sum_dy, const float *sum_dy_xhat, int64_t count) {
    nbwd__bn_sums sums;
    memset(&sums, 0, sizeof sums);
    sums.phase = 2;
    sums.sum_dy = sum_dy;
    sums.sum_dy_xhat = sum_dy_xhat;
    sums.count = count;
    return sums;
}

/* sums: NULL, or the two-phase calls' (reduce: args carries its sums as
   diff_gamma/diff_beta, see nbwd_batch_norm_bwd_reduce) */
NBWD__PLAN_FN
static nbwd_status nbwd__batch_norm_bwd(const nbwd_batch_norm_bwd_desc *desc, const nbwd_batch_norm_bwd_args *args,
                                       void *workspace, size_t workspace_bytes, const nbwd__bn_sums *sums) {
    nbwd__bn_plan p;
    nbwd__bn_run r;
    nbwd_status s;
    void *owned;
    char *ws;
    int64_t c, i, C;
    int threads, ncx_threads, ncx_by_blocks, ncx_relu_blocks, mask_in_dx, relu_bits, add_in_pass1, d;
    int64_t ncx_cblock;
    size_t own;
    if ((s = nbwd__bn_validate(desc, args, sums, &p, NULL)) != NBWD_OK) return s;
    memset(&r, 0, sizeof r);
    if (!(r.k = nbwd__select(desc->isa))) return nbwd__unsupported("desc.isa", desc->isa);
    /* NBWD_FUSE_ADD_RELU the same way, f32 with diff_src_add laid out as
       dy: pass 1 also writes the masked dy (its bits: an AND) to
       diff_src_add at dy's offsets, in place of a mask pass of its own.
       (16-bit data would widen and narrow it, which quiets a signaling
       NaN: those take the mask pass, which copies bits.) */
    add_in_pass1 = p.relu == NBWD_FUSE_ADD_RELU && p.dt == NBWD_F32;
    for (d = 0; add_in_pass1 && d < p.rank; ++d)
        if (desc->dims[d] > 1 && p.st[NBWD__BN_DSA][d] != p.st[NBWD__BN_DY][d]) add_in_pass1 = 0;
    /* NBWD_FUSE_RELU on dense NXC rows, both passes, on a path whose row
       kernels take the mask: pass 1 reads dst beside dy and keeps the mask
       as bits in the workspace (in the masked dy's place, which is larger),
       pass 2 reads them; nothing is staged. Rows of whole vectors only (the
       kernel's copy has no tail code: compile time). Rows that the plain
       call runs in registers (nbwd__bn_narrow_body) do so only out of
       cache, where the bytes decide (in cache the staged mask over that
       kernel took fewer instructions). */
    relu_bits = (p.relu == NBWD_FUSE_RELU || add_in_pass1) && p.nxc && !p.gather && r.k->relu_lanes[p.dt] > 0 &&
                p.C % r.k->relu_lanes[p.dt] == 0 && !sums && args->diff_src && (!p.global_stats || args->diff_gamma) &&
                p.M > 0 && p.C > 0 && p.st[NBWD__BN_DST][p.rank - 1] == 1 &&
                (p.C > r.k->bn_narrow_cols ||
                 (double)p.M * (double)p.C * (double)nbwd__esize(p.dt) >= (double)NORM_BWD_STREAM_BYTES);
    if (relu_bits) r.keep_words = p.C / r.k->relu_lanes[p.dt];
    if (relu_bits && add_in_pass1) r.relu_add = (char *)args->diff_src_add;
    /* NCX: blocks of channels, each on one thread (every thread gets
       blocks), unless there are fewer channels than threads; the sums do
       not depend on the blocking */
    ncx_threads = nbwd__pick_threads(desc->num_threads, p.M * p.C, p.C * (p.nchunks > p.N ? p.nchunks : p.N));
    ncx_by_blocks = ncx_threads <= 1 || p.C >= ncx_threads;
    ncx_cblock = p.cblock * ncx_threads <= p.C ? p.cblock : p.C / ncx_threads;
    /* The fused ReLU on NCX blocks: each block's masked dy staged as the
       block starts, read back from the cache (NBWD_FUSE_RELU's in a slot
       per thread of the workspace's masked dy, whose lines stay in the
       cache from block to block) */
    ncx_relu_blocks = p.relu && !p.nxc && ncx_by_blocks && !sums && p.M > 0 && p.C > 0 &&
                      (args->diff_src || args->diff_gamma) && nbwd__dense_block(desc->dims, p.st[NBWD__BN_DST], 2, p.rank) &&
                      nbwd__dense_block(desc->dims, p.st[NBWD__BN_DY], 2, p.rank); /* (relu: dy may have any strides) */
    /* Otherwise NBWD_FUSE_RELU stages the masked dy in diff_src where there
       is one (elementwise, so diff_src may be dy or dst; not x, read after
       it): no workspace of the tensor's size to allocate and fault in */
    mask_in_dx = p.relu == NBWD_FUSE_RELU && !relu_bits && !ncx_relu_blocks && args->diff_src &&
                 !nbwd__same_view(args->diff_src, p.st[NBWD__BN_DX], nbwd__x_of(p.form, args->src, args->xhat, NULL),
                                  p.st[NBWD__BN_X], p.rank, desc->dims);
    /* diff_src_add alone (NBWD_FUSE_ADD_RELU) is the mask pass alone: no workspace */
    own = p.M > 0 && p.C > 0 && (args->diff_src || args->diff_gamma) ? p.ws_bytes : 0;
    if (own && mask_in_dx) own = p.ws_masked + NBWD__WS_ALIGN;
    if (own && relu_bits) own = p.ws_masked + (size_t)(p.M * r.keep_words) * 2 + NBWD__WS_ALIGN;
    if (own && ncx_relu_blocks && p.relu == NBWD_FUSE_RELU)
        own = p.ws_masked + (size_t)(ncx_threads * ncx_cblock * p.M) * nbwd__esize(p.dt) + NBWD__WS_ALIGN;
    if ((s = nbwd__get_workspace(p.ws_bytes, own, workspace, workspace_bytes, &owned, &ws)) != NBWD_OK) return s;
    /* Everything is validated: from here on outputs are written. */
    C = p.C;
    r.p = &p;
    r.want_dx = args->diff_src != NULL;
    r.dgamma = args->diff_gamma;
    r.dbeta = args->diff_beta;
    r.gamma = r.dgamma ? args->gamma : NULL; /* without diff_gamma/diff_beta gamma is ignored */
    r.reduce = !p.global_stats || r.dgamma; /* global statistics and dx alone: one pass */
    r.count = p.M;
    if (sums && sums->phase == 2) { /* the sums are given: no reduction */
        r.reduce = 0;
        r.count = sums->count;
        r.given_dy = sums->sum_dy;
        r.given_dyx = sums->sum_dy_xhat;
        if (p.M == 0 && r.dgamma) /* an empty slice: the parameters' gradients all the same */
            for (c = 0; c < C; ++c) {
                nbwd__write_param(r.dgamma, c * p.par.st[NBWD__PDG][0], p.pdt, r.given_dyx[c], p.accumulate);
                nbwd__write_param(r.dbeta, c * p.par.st[NBWD__PDB][0], p.pdt, r.given_dy[c], p.accumulate);
            }
    } else if (p.M == 0 && r.dgamma && !p.accumulate) { /* empty batch: empty sums */
        for (c = 0; c < C; ++c) {
            nbwd__store(r.dgamma, c * p.par.st[NBWD__PDG][0], p.pdt, 0.0f);
            nbwd__store(r.dbeta, c * p.par.st[NBWD__PDB][0], p.pdt, 0.0f);
        }
    }
    r.dy = (const char *)args->diff_dst;
    if (relu_bits) {
        r.relu_dst = (const char *)args->dst;
        r.keep = (uint16_t *)(void *)(ws + p.ws_masked);
    } else if (p.M > 0 && C > 0 && (p.relu == NBWD_FUSE_ADD_RELU || (p.relu && (r.want_dx || r.dgamma)))) {
        /* diff_src_add is written even if nothing else is */
        int64_t st[NBWD_MAX_RANK]; /* the masked dy's: diff_src_add's, diff_src's or dense */
        char *out = p.relu == NBWD_FUSE_ADD_RELU ? (char *)args->diff_src_add
                    : mask_in_dx                 ? (char *)args->diff_src
                                                 : ws + p.ws_masked;
        nbwd__strides(p.rank, desc->dims,
                      p.relu == NBWD_FUSE_ADD_RELU ? p.st[NBWD__BN_DSA] : mask_in_dx ? p.st[NBWD__BN_DX] : NULL, st);
        if (ncx_relu_blocks) { /* (see above; the same bits) */
            r.relu_dy = r.dy;
            r.relu_dst = (const char *)args->dst;
            for (d = 0; d < 2; ++d) {
                r.relu_st[0][d] = p.st[NBWD__BN_DY][d];
                r.relu_st[1][d] = p.st[NBWD__BN_DST][d];
            }
            if (p.relu == NBWD_FUSE_RELU) { /* a slot: the block's channels, dense */
                int64_t dims[NBWD_MAX_RANK];
                memcpy(dims, desc->dims, sizeof dims);
                dims[1] = ncx_cblock;
                nbwd__strides(p.rank, dims, NULL, st);
                r.relu_slot = ncx_cblock * p.M;
            }
            r.relu_stage = out;
            r.dy = out;
            for (d = 0; d < p.rank; ++d) p.st[NBWD__BN_DY][d] = st[d];
        } else {
            nbwd__bn_mask(&p, &r, desc->dims, args->dst, out, st, desc->num_threads);
        }
    }
    if (p.M > 0 && C > 0 && (r.want_dx || r.dgamma)) {
        const void *spread = nbwd__spread_of(p.form, args->variance, args->rstd, args->std);
        r.x = (const char *)nbwd__x_of(p.form, args->src, args->xhat, NULL);
        r.dx = (char *)args->diff_src;
        r.xm = (float *)(ws + p.ws_coef);
        r.xs = r.xm + C;
        r.mg = r.xs + C;
        r.mgx = r.mg + C;
        r.scale = r.mgx + C;
        r.partials = (float *)(ws + p.ws_partials);
        /* NXC rows over the fused ReLU's masked dy staged in diff_src: plain
           stores, as the mask pass left those lines dirty (non-temporal
           stores over them measured slower there, and no faster on NCX) */
        r.stream = r.want_dx && (double)p.M * (double)C * (double)nbwd__esize(p.dt) >= (double)NORM_BWD_STREAM_BYTES &&
                   (p.nxc ? !mask_in_dx : p.S * (int64_t)nbwd__esize(p.dt) >= NBWD__NCX_STREAM_PLANE_BYTES);
        nbwd__bn_all_stats(&r, args->mean, spread);
        if (p.nxc) {
            int64_t b;
            /* x, dy, dx (and dst) */
            nbwd__outer_init(&r.outer, p.rank - 1, desc->dims, relu_bits ? NBWD__BN_DST + 1 : NBWD__BN_DX + 1, p.st);
            threads = nbwd__pick_threads(desc->num_threads, p.M * C, p.nblocks);
            if (r.reduce) {
                NBWD__PARALLEL_FOR(threads, b, p.nblocks, nbwd__bn_nxc_block(&r, b, 0));
                nbwd__sum_blocks(r.k, r.partials, p.nblocks, 2 * C, desc->num_threads);
            }
            if (r.reduce) nbwd__bn_finish_all(&r, r.partials, r.partials + C);
            else nbwd__bn_finish_all(&r, r.given_dyx, r.given_dy);
            if (r.want_dx) {
                threads = nbwd__pick_threads(desc->num_threads, p.M * C, p.nblocks);
                NBWD__PARALLEL_FOR(threads, b, p.nblocks, nbwd__bn_nxc_block(&r, b, 1));
            }
        } else {
            threads = ncx_threads;
            if (ncx_by_blocks) {
                NBWD__PARALLEL_FOR(threads, i, threads, nbwd__bn_ncx_lane(&r, i, threads, ncx_cblock));
            } else { /* fewer channels than threads: split the batch too (same sums) */
                if (r.reduce)
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

NBWD__PLAN_FN
static nbwd_status nbwd__bn_entry(const char *entry, const nbwd_batch_norm_bwd_desc *desc,
                                  const nbwd_batch_norm_bwd_args *args, void *workspace, size_t workspace_bytes,
                                  const nbwd__bn_sums *sums) {
    int verbose = nbwd__verbose();
    double t0 = verbose >= 2 ? nbwd__now() : 0.0;
    nbwd_status s;
    nbwd__msg[0] = 0;
    s = nbwd__finish(entry, nbwd__batch_norm_bwd(desc, args, workspace, workspace_bytes, sums));
    if (verbose >= 2 && desc) {
        nbwd__call c;
        NBWD__CALL_OF(c, desc, args);
        c.op = entry + 5; /* less "nbwd_" */
        c.set = desc->layout == NBWD_NCX ? "NCX" : "NXC";
        nbwd__call_line(&c, nbwd__now() - t0, s);
    }
    return s;
}
NBWD__PLAN_FN
NBWD_API nbwd_status nbwd_batch_norm_bwd(const nbwd_batch_norm_bwd_desc *desc, const nbwd_batch_norm_bwd_args *args,
                                         void *workspace, size_t workspace_bytes) {
    return nbwd__bn_entry("nbwd_batch_norm_bwd", desc, args, workspace, workspace_bytes, NULL);
}
/* reduce is the plain call with diff_gamma/diff_beta pointed at the sums
   (dense f32, overwritten) and nothing else written. */
NBWD__PLAN_FN
NBWD_API nbwd_status nbwd_batch_norm_bwd_reduce(const nbwd_batch_norm_bwd_desc *desc,
                                                const nbwd_batch_norm_bwd_args *args, float *sum_dy,
                                                float *sum_dy_xhat, int64_t *count, void *workspace,
                                                size_t workspace_bytes) {
    static const char entry[] = "nbwd_batch_norm_bwd_reduce";
    nbwd_batch_norm_bwd_args a;
    nbwd__bn_sums sums;
    nbwd__bn_plan p;
    nbwd_status s;
    nbwd__msg[0] = 0;
    if ((s = nbwd__bn_reduce_args(desc, args, sum_dy, sum_dy_xhat, count, &p, &a, &sums)) != NBWD_OK)
        return nbwd__finish(entry, s);
    s = nbwd__bn_entry(entry, desc, &a, workspace, workspace_bytes, &sums);
    if (s == NBWD_OK) *count = p.M;
    return s;
}
NBWD__PLAN_FN
NBWD_API nbwd_status nbwd_batch_norm_bwd_apply(const nbwd_batch_norm_bwd_desc *desc,
                                               const nbwd_batch_norm_bwd_args *args, const float *sum_dy,
                                               const float *sum_dy_xhat, int64_t count, void *workspace,
                                               size_t workspace_bytes) {
    nbwd__bn_sums sums = nbwd__bn_apply_sums(sum_dy, sum_dy_xhat, count);
    return nbwd__bn_entry("nbwd_batch_norm_bwd_apply", desc, args, workspace, workspace_bytes, &sums);
}

/* ------------------------------------------------------------ GroupNorm */
/* A set is one sample's group: Cg = C / groups channels by S spatial
   positions. The BatchNorm kernels do the work, with per-(sample, channel)
   coefficients where BatchNorm's are per channel: pass 1 gives each (n, c)
   sum dy and sum dy * xhat (NCX: the plane kernels; NXC: the row kernels'
   column sums over one sample's rows); the set's sums are sum_c gamma[c] *
   those, diff_gamma/diff_beta[c] their sums over n; pass 2 writes dx =
   rstd * (dy * gamma[c] - (mean_g + xhat * mean_gx)) with gamma folded
   into the coefficients (nbwd__gn_fold), or where that cannot be done
   through the row kernel's gain.
   Every partial sum is cut by the shape alone (planes in pieces of
   NBWD__BN_CHUNK_ELEMS, NXC rows in fixed blocks) and added in a fixed
   order, so no bit depends on the thread count. */
#define NBWD__GN_STAMP 0x474E4257u
NBWD__PLAN_FN
static int nbwd__finite(float v) { return (nbwd__f32_bits(v) & 0x7f800000u) != 0x7f800000u; }
/* GroupNorm's tensors: the plan's strides st[] cover the data tensors
   (the first NBWD__GN_DATA), the alias checks all of them. */
enum {
    NBWD__GN_X, NBWD__GN_DY, NBWD__GN_DX, /* st[] */
    NBWD__GN_MEAN, NBWD__GN_SPREAD, NBWD__GN_GAMMA, NBWD__GN_DGAMMA, NBWD__GN_DBETA, NBWD__GN_BETA, NBWD__GN_TENSORS
};
#define NBWD__GN_DATA 3
typedef struct nbwd__gn_plan {
    int rank, dt, sdt, pdt, form, accumulate, affine, nxc;
    float eps;
    int64_t N, C, G, Cg, S, K;       /* K = Cg * S, a set's elements */
    int64_t st[NBWD__GN_DATA][NBWD_MAX_RANK]; /* the data tensors' strides */
    int64_t mean_st[2], var_st[2];   /* [N, groups] */
    nbwd__params par;                /* gamma, beta, diff_gamma, diff_beta: [C] */
    int64_t piece, pieces;           /* NCX: a plane's pieces of up to `piece` elements */
    int64_t rows_per_block, nblocks; /* NXC: row blocks per sample */
    int64_t none_lanes;              /* NBWD_STATS_NONE, NXC: samples whose statistics are found at once */
    int64_t none_lane_bytes;         /* ... and each lane's scratch (2 C doubles, 3 C floats; whole lines) */
    size_t ws_coef, ws_partials, ws_none, ws_bytes;
} nbwd__gn_plan;

typedef struct nbwd__gn_run {
    const nbwd__gn_plan *p;
    const nbwd__kernels *k;
    nbwd__outer outer; /* NXC: a sample's rows (the spatial dims) */
    const char *x, *dy;
    char *dx;
    float *xm, *xs, *mg, *mgx, *scale; /* [N * C] each, (n, c) at n * C + c */
    float *gain;                       /* [C] gamma in f32; NULL: no diff_src, or no affine */
    float *psum;                       /* [N * C][2]: sum dy, sum dy * xhat */
    float *odd;                        /* [N * C]: (n, c) keeps g = dy * gamma (1): see nbwd__gn_fold */
    const float *row_gain;             /* NXC with an odd (n, c): [N * C] gains, 1 where folded; else NULL */
    float *partials;
    char *none_scratch;                /* NBWD_STATS_NONE, NXC: the lanes' column sums (see the plan) */
    double *none_st;                   /* NBWD_STATS_NONE, NXC in chunks: the sets' statistics, found there */
    int want_dx, stream;
} nbwd__gn_run;

NBWD__PLAN_FN
NBWD_API void nbwd_group_norm_bwd_desc_init(nbwd_group_norm_bwd_desc *desc, int rank, const int64_t *dims,
                                            nbwd_layout layout, int64_t groups, float epsilon) {
    int d;
    if (!desc) return;
    memset(desc, 0, sizeof *desc);
    desc->rank = rank;
    for (d = 0; d < rank && d < NBWD_MAX_RANK && dims; ++d) desc->dims[d] = dims[d];
    desc->layout = layout;
    desc->groups = groups;
    desc->use_affine = 1;
    desc->epsilon = epsilon;
    desc->init_stamp = NBWD__GN_STAMP;
}

NBWD__PLAN_FN
static nbwd_status nbwd__gn_plan_desc(const nbwd_group_norm_bwd_desc *d, nbwd__gn_plan *p) {
    static const char *const tensor[NBWD__GN_DATA] = {"src", "diff_dst", "diff_src"};
    nbwd_status s;
    int64_t lo, hi, total, sd[2];
    int t, r;
    if (!d) return nbwd__fail(NBWD_ERR_NULL_POINTER, "desc is NULL");
    memset(p, 0, sizeof *p);
    if (d->init_stamp != NBWD__GN_STAMP)
        return nbwd__fail(NBWD_ERR_NOT_INITIALIZED,
                          "desc was not made by nbwd_group_norm_bwd_desc_init (a zeroed or hand-built descriptor "
                          "has no defaults: call it first, then set the fields you change)");
    if (d->rank < 2 || d->rank > NBWD_MAX_RANK)
        return nbwd__fail(NBWD_ERR_BAD_PARAM, "desc.rank = %d: GroupNorm takes 2 to %d", d->rank, NBWD_MAX_RANK);
    if (d->layout != NBWD_NXC && d->layout != NBWD_NCX)
        return nbwd__fail(NBWD_ERR_BAD_PARAM, "desc.layout = %d is neither NBWD_NXC nor NBWD_NCX", (int)d->layout);
    r = p->rank = d->rank;
    if ((s = nbwd__count(d->dims, 0, r, &total)) != NBWD_OK) return s;
    if ((s = nbwd__check_common((int)d->stats_form, d->flags, 2, d->num_threads, (int)d->isa, d->epsilon)) != NBWD_OK)
        return s;
    if ((s = nbwd__check_dtypes((int)d->data_dtype, (int)d->stats_dtype, (int)d->param_dtype)) != NBWD_OK) return s;
    p->dt = (int)d->data_dtype; p->sdt = (int)d->stats_dtype; p->pdt = (int)d->param_dtype;
    p->form = (int)d->stats_form;
    p->accumulate = (d->flags & NBWD_ACCUMULATE_PARAM_GRADS) != 0;
    p->affine = d->use_affine != 0;
    p->eps = d->epsilon;
    p->nxc = d->layout == NBWD_NXC;
    p->N = d->dims[0];
    p->C = p->nxc ? d->dims[r - 1] : d->dims[1];
    p->G = d->groups;
    if (p->G < 1 || (p->C > 0 && p->C % p->G != 0))
        return nbwd__fail(NBWD_ERR_BAD_PARAM, "desc.groups = %lld: it must be >= 1 and divide C = %lld",
                          (long long)p->G, (long long)p->C);
    if (p->N > 0 && !nbwd__mul_ok(p->N, p->G, &lo)) /* an empty C allows any groups: [N, groups] must still fit */
        return nbwd__fail(NBWD_ERR_BAD_PARAM, "desc.groups = %lld: the statistics' N x groups exceeds INT64_MAX / 16",
                          (long long)p->G);
    p->Cg = p->C / p->G;
    nbwd__count(d->dims, p->nxc ? 1 : 2, p->nxc ? r - 1 : r, &p->S);
    p->K = p->Cg * p->S;
    for (t = 0; t < NBWD__GN_DATA; ++t) {
        const int64_t *const given[NBWD__GN_DATA] = {d->src_strides, d->diff_dst_strides, d->diff_src_strides};
        nbwd__strides(r, d->dims, given[t], p->st[t]);
        if (!nbwd__dense_block(d->dims, p->st[t], p->nxc ? r - 1 : 2, r))
            return nbwd__fail(NBWD_ERR_BAD_STRIDES, "desc.%s_strides: %s must be dense (row-major, inner stride 1)",
                              tensor[t], p->nxc ? "the channels (NXC)" : "the spatial dims (NCX)");
        if (!nbwd__extent(r, d->dims, p->st[t], nbwd__esize(p->dt), &lo, &hi))
            return nbwd__fail(NBWD_ERR_BAD_STRIDES, "desc.%s_strides: the tensor's byte extent overflows", tensor[t]);
    }
    {
        const int64_t *const given[NBWD__NPAR] = {d->gamma_strides, d->beta_strides, d->diff_gamma_strides,
                                                  d->diff_beta_strides};
        if ((s = nbwd__params_init(&p->par, 1, &p->C, given, p->pdt)) != NBWD_OK) return s;
    }
    sd[0] = p->N; sd[1] = p->G;
    nbwd__strides(2, sd, d->mean_strides, p->mean_st);
    nbwd__strides(2, sd, d->var_strides, p->var_st);
    if (!nbwd__extent(2, sd, p->mean_st, nbwd__esize(p->sdt), &lo, &hi) ||
        !nbwd__extent(2, sd, p->var_st, nbwd__esize(p->sdt), &lo, &hi))
        return nbwd__fail(NBWD_ERR_BAD_STRIDES, "desc.mean_strides or var_strides: the byte extent overflows");
    p->ws_bytes = 0;
    if (total == 0) return NBWD_OK; /* empty: nothing to compute, no workspace */
    p->ws_coef = nbwd__ws_take(&p->ws_bytes, ((size_t)(p->N * p->C) * 8 + (size_t)p->C) * 4);
    if (p->nxc) {
        int64_t per = (NBWD__BN_CHUNK_ELEMS + p->C - 1) / p->C, most = NBWD__PARTIALS_BYTES / (8 * p->N * p->C);
        if (most < 1) most = 1;
        if (per < (p->S + most - 1) / most) per = (p->S + most - 1) / most;
        p->rows_per_block = per;
        p->nblocks = (p->S + per - 1) / per;
        p->ws_partials = nbwd__ws_take(&p->ws_bytes, (size_t)(p->N * p->nblocks) * 2 * (size_t)p->C * 4);
    } else {
        p->piece = NBWD__BN_CHUNK_ELEMS;
        p->pieces = (p->S + p->piece - 1) / p->piece;
        if (p->pieces > 1)
            p->ws_partials = nbwd__ws_take(&p->ws_bytes, (size_t)(p->N * p->C * p->pieces) * 2 * 4);
    }
    if (p->form == NBWD_STATS_NONE) {
        /* the sets' mean and variance (double), and NXC's per-lane column
           sums: 3 C floats (the batch's sums, the pivot) and 2 C doubles */
        size_t bytes = (size_t)(p->N * p->G) * 16;
        if (p->nxc) {
            p->none_lanes = p->N < NBWD__STAGE_SLOTS ? p->N : NBWD__STAGE_SLOTS;
            p->none_lane_bytes = (p->C * 28 + NBWD__WS_ALIGN - 1) / NBWD__WS_ALIGN * NBWD__WS_ALIGN;
            bytes += (size_t)(p->none_lanes * p->none_lane_bytes);
        }
        p->ws_none = nbwd__ws_take(&p->ws_bytes, bytes);
    }
    p->ws_bytes += NBWD__WS_ALIGN;
    return NBWD_OK;
}

NBWD__PLAN_FN
NBWD_API nbwd_status nbwd_group_norm_bwd_workspace_size(const nbwd_group_norm_bwd_desc *desc, size_t *bytes) {
    nbwd__gn_plan p;
    nbwd_status s;
    nbwd__msg[0] = 0;
    if (!bytes) s = nbwd__fail(NBWD_ERR_NULL_POINTER, "bytes is NULL");
    else if ((s = nbwd__gn_plan_desc(desc, &p)) == NBWD_OK) *bytes = p.ws_bytes;
    return nbwd__finish("nbwd_group_norm_bwd_workspace_size", s);
}

/* gamma is read for diff_src, and in the DST_RSTD form for diff_gamma
   (xhat comes from dst through it) */
NBWD__PLAN_FN
static int nbwd__gn_reads_gamma(const nbwd__gn_plan *p, const nbwd_group_norm_bwd_args *a) {
    return p->affine && (a->diff_src || (p->form == NBWD_STATS_DST_RSTD && a->diff_gamma));
}

NBWD__PLAN_FN
static nbwd_status nbwd__gn_check_args(const nbwd_group_norm_bwd_desc *d, const nbwd__gn_plan *p,
                                       const nbwd_group_norm_bwd_args *a) {
    nbwd_status s;
    int64_t total = p->N * p->S * p->C, od[NBWD_MAX_RANK], sd[2];
    size_t esz = nbwd__esize(p->dt), sesz = nbwd__esize(p->sdt);
    const void *x = nbwd__x_of(p->form, a->src, a->xhat, a->dst);
    const void *spread = nbwd__spread_of(p->form, a->variance, a->rstd, a->std);
    const int reads_gamma = nbwd__gn_reads_gamma(p, a);
    nbwd__span sp[NBWD__MAX_SPANS];
    int out[NBWD__MAX_SPANS] = {0}, i, nod;
    unsigned char exact[NBWD__MAX_SPANS][NBWD__MAX_SPANS];
    const char *names[NBWD__GN_TENSORS] = {"src",   "diff_dst",   "diff_src",  "mean", "variance",
                                           "gamma", "diff_gamma", "diff_beta", "beta"};
    names[NBWD__GN_X] = nbwd__x_name(p->form);
    names[NBWD__GN_SPREAD] = nbwd__spread_name(p->form, 0);
    if (!p->affine && (a->diff_gamma || a->diff_beta))
        return nbwd__fail(NBWD_ERR_BAD_PARAM, "args.%s is set but desc.use_affine = 0 (no gamma, no gamma gradients)",
                          a->diff_gamma ? "diff_gamma" : "diff_beta");
    if (!p->affine && (a->gamma || a->beta))
        return nbwd__fail(NBWD_ERR_BAD_PARAM,
                          "args.%s is set but desc.use_affine = 0 (no gamma and beta): set use_affine = 1, or "
                          "leave them NULL",
                          a->gamma ? "gamma" : "beta");
    if ((s = nbwd__check_stats_args(p->form, 0, a->src, a->xhat, a->dst, a->mean, a->variance, a->rstd, a->std, total,
                                    p->N * p->G)) != NBWD_OK)
        return s;
    if (total > 0 && !a->diff_dst) return nbwd__fail(NBWD_ERR_NULL_POINTER, "args.diff_dst is NULL");
    if (p->C > 0 && reads_gamma && !a->gamma)
        return nbwd__fail(NBWD_ERR_NULL_POINTER,
                          "args.gamma is NULL, but desc.use_affine = 1 and %s is asked for (use_affine = 0 "
                          "means gamma = 1)",
                          a->diff_src ? "diff_src" : "diff_gamma in the NBWD_STATS_DST_RSTD form");
    if (a->diff_src) { /* the outer dims around the dense block: NXC all but C; NCX N and C */
        for (nod = 0, i = 0; i < (p->nxc ? p->rank - 1 : 2); ++i) od[nod++] = d->dims[i];
        {
            int64_t os[NBWD_MAX_RANK];
            for (i = 0; i < nod; ++i) os[i] = p->st[NBWD__GN_DX][i];
            if (!nbwd__no_self_overlap(nod, od, os, p->nxc ? p->C : p->S))
                return nbwd__fail(NBWD_ERR_BAD_STRIDES,
                                  "desc.diff_src_strides make two elements of args.diff_src share an address");
        }
    }
    nbwd__span_of(&sp[NBWD__GN_X], x, p->rank, d->dims, p->st[NBWD__GN_X], esz);
    nbwd__span_of(&sp[NBWD__GN_DY], a->diff_dst, p->rank, d->dims, p->st[NBWD__GN_DY], esz);
    nbwd__span_of(&sp[NBWD__GN_DX], a->diff_src, p->rank, d->dims, p->st[NBWD__GN_DX], esz);
    sd[0] = p->N; sd[1] = p->G;
    nbwd__span_of(&sp[NBWD__GN_MEAN], nbwd__has_mean(p->form) ? a->mean : NULL, 2, sd, p->mean_st, sesz);
    nbwd__span_of(&sp[NBWD__GN_SPREAD], spread, 2, sd, p->var_st, sesz);
    nbwd__param_span(&sp[NBWD__GN_GAMMA], &p->par, NBWD__PG, reads_gamma ? a->gamma : NULL, p->pdt);
    nbwd__param_span(&sp[NBWD__GN_DGAMMA], &p->par, NBWD__PDG, a->diff_gamma, p->pdt);
    nbwd__param_span(&sp[NBWD__GN_DBETA], &p->par, NBWD__PDB, a->diff_beta, p->pdt);
    nbwd__param_span(&sp[NBWD__GN_BETA], &p->par, NBWD__PB,
                     p->form == NBWD_STATS_DST_RSTD && reads_gamma ? a->beta : NULL, p->pdt);
    out[NBWD__GN_DX] = out[NBWD__GN_DGAMMA] = out[NBWD__GN_DBETA] = 1;
    memset(exact, 0, sizeof exact);
    exact[NBWD__GN_DX][NBWD__GN_X] =
        (unsigned char)nbwd__same_view(a->diff_src, p->st[NBWD__GN_DX], x, p->st[NBWD__GN_X], p->rank, d->dims);
    exact[NBWD__GN_DX][NBWD__GN_DY] = (unsigned char)nbwd__same_view(a->diff_src, p->st[NBWD__GN_DX], a->diff_dst,
                                                                      p->st[NBWD__GN_DY], p->rank, d->dims);
    return nbwd__check_alias(NBWD__GN_TENSORS, sp, names, out, (const unsigned char(*)[NBWD__MAX_SPANS])exact);
}

/* NCX: pass 1 of planes [c0, c0 + count) of sample n over elements [e0,
   e0 + n_elems) of each, the sums (added) at sums, sums_step floats apart */
NBWD__PLAN_FN
static void nbwd__gn_ncx_reduce(const nbwd__gn_run *r, int64_t n, int64_t c0, int64_t count, int64_t e0,
                                int64_t n_elems, float *sums, int64_t sums_step) {
    const nbwd__gn_plan *p = r->p;
    int64_t esz = (int64_t)nbwd__esize(p->dt);
    nbwd__planes pl;
    memset(&pl, 0, sizeof pl);
    pl.dt = p->dt;
    pl.n = n_elems;
    pl.count = count;
    pl.x = r->x + (n * p->st[NBWD__GN_X][0] + c0 * p->st[NBWD__GN_X][1] + e0) * esz;
    pl.dy = r->dy + (n * p->st[NBWD__GN_DY][0] + c0 * p->st[NBWD__GN_DY][1] + e0) * esz;
    pl.x_step = p->st[NBWD__GN_X][1];
    pl.dy_step = p->st[NBWD__GN_DY][1];
    pl.xm = r->xm + n * p->C + c0;
    pl.xs = r->xs + n * p->C + c0;
    pl.sums = sums;
    pl.sums_step = sums_step;
    nbwd__run_planes_reduce(r->k, &pl);
}
/* NCX: plane (n, c)'s piece k, into its own partial */
NBWD__PLAN_FN
static void nbwd__gn_ncx_piece(const nbwd__gn_run *r, int64_t unit) {
    const nbwd__gn_plan *p = r->p;
    int64_t plane = unit / p->pieces, k = unit % p->pieces, e0 = k * p->piece;
    float *part = r->partials + unit * 2;
    part[0] = part[1] = 0.0f;
    nbwd__gn_ncx_reduce(r, plane / p->C, plane % p->C, 1, e0, p->S - e0 < p->piece ? p->S - e0 : p->piece, part, 2);
}
/* NCX: the sums of the planes of set (n, g) */
NBWD__PLAN_FN
static void nbwd__gn_ncx_set_sums(const nbwd__gn_run *r, int64_t n, int64_t g, int from_partials) {
    const nbwd__gn_plan *p = r->p;
    int64_t c, k, plane = n * p->C + g * p->Cg;
    float *sums = r->psum + plane * 2;
    for (c = 0; c < p->Cg; ++c) sums[2 * c] = sums[2 * c + 1] = 0.0f;
    if (p->pieces <= 1) {
        nbwd__gn_ncx_reduce(r, n, g * p->Cg, p->Cg, 0, p->S, sums, 2);
        return;
    }
    for (c = 0; c < p->Cg; ++c) {
        const float *part = r->partials + (plane + c) * p->pieces * 2;
        for (k = 0; k < p->pieces; ++k) {
            if (!from_partials) nbwd__gn_ncx_piece(r, (plane + c) * p->pieces + k);
            sums[2 * c] += part[2 * k];
            sums[2 * c + 1] += part[2 * k + 1];
        }
    }
}
/* NCX, a plane of at most one piece: its sums, as a set's call gives them */
NBWD__PLAN_FN
static void nbwd__gn_ncx_plane_sums(const nbwd__gn_run *r, int64_t plane) {
    float *sums = r->psum + plane * 2;
    sums[0] = sums[1] = 0.0f;
    nbwd__gn_ncx_reduce(r, plane / r->p->C, plane % r->p->C, 1, 0, r->p->S, sums, 2);
}
/* gamma folded into the coefficients of (n, c) at `at`, so that the
   kernels take g = dy: rstd * (gamma dy - (mg + xhat mgx)) = (dy - (mg /
   gamma + xhat * mgx / gamma)) * (rstd * gamma), rounding as the terms'
   size. The folded terms are the unfolded ones divided by rstd * gamma,
   so they overflow only where |dx| > FLT_MAX * |rstd * gamma|: with
   |rstd * gamma| >= 2^-24 (a normal number, so no bits lost) that is
   within 2^24 of overflow. A gamma that is 0, subnormal or not finite,
   quotients that overflow (from finite sums: a NaN or infinite set stays
   one), or a smaller |rstd * gamma| (rstd = 0 included) cannot be folded
   (0 returned): that (n, c) keeps g = dy * gamma, the row kernel's gain.
   write: fold, else only check. */
NBWD__PLAN_FN
static int nbwd__gn_fold(const nbwd__gn_run *r, int64_t at, float ge, int write) {
    float mg = r->mg[at], mgx = r->mgx[at], rstd = r->scale[at];
    float fm = mg / ge, fmx = mgx / ge, fs = rstd * ge, age = ge < 0.0f ? -ge : ge, afs = fs < 0.0f ? -fs : fs;
    if (!(age >= 1.17549435e-38f && age <= 3.40282347e38f && (nbwd__finite(fm) || !nbwd__finite(mg)) &&
          (nbwd__finite(fmx) || !nbwd__finite(mgx)) &&
          ((afs >= 5.96046448e-8f && afs <= 3.40282347e38f) || !nbwd__finite(rstd))))
        return 0;
    if (write) {
        r->mg[at] = fm;
        r->mgx[at] = fmx;
        r->scale[at] = fs;
    }
    return 1;
}
/* Set (n, g)'s coefficients from its channels' sums; NCX folds gamma into
   each plane's that allows it (see nbwd__gn_fold), NXC only marks them
   (folded once its chunk's sets are done: a sample with an odd one among
   them takes a gain per (n, c) in its rows, 1 for the folded) */
NBWD__PLAN_FN
static void nbwd__gn_finish_set(const nbwd__gn_run *r, int64_t n, int64_t g) {
    const nbwd__gn_plan *p = r->p;
    int64_t c, at = n * p->C + g * p->Cg;
    double sg = 0.0, sgx = 0.0;
    for (c = 0; c < p->Cg; ++c) {
        double gain = r->gain ? (double)r->gain[g * p->Cg + c] : 1.0;
        sg += gain * (double)r->psum[(at + c) * 2];
        sgx += gain * (double)r->psum[(at + c) * 2 + 1];
    }
    for (c = 0; c < p->Cg; ++c) {
        r->mg[at + c] = (float)(sg / (double)p->K);
        r->mgx[at + c] = (float)(sgx / (double)p->K);
        r->odd[at + c] = r->gain && !nbwd__gn_fold(r, at + c, r->gain[g * p->Cg + c], !p->nxc);
    }
}

/* NCX: dx of an odd plane (see nbwd__gn_finish_set) through the row
   kernel's gain: the plane as rows of NBWD__GN_ODD_ROW elements whose
   coefficients are all the plane's. Rare, so simple. */
#define NBWD__GN_ODD_ROW 16
NBWD__PLAN_FN
static void nbwd__gn_ncx_odd_plane(const nbwd__gn_run *r, int64_t n, int64_t c) {
    const nbwd__gn_plan *p = r->p;
    int64_t esz = (int64_t)nbwd__esize(p->dt), at = n * p->C + c, e = 0, i;
    float co[6][NBWD__GN_ODD_ROW];
    nbwd__rows batch;
    for (i = 0; i < NBWD__GN_ODD_ROW; ++i) {
        co[0][i] = r->xm[at]; co[1][i] = r->xs[at]; co[2][i] = r->mg[at];
        co[3][i] = r->mgx[at]; co[4][i] = r->scale[at]; co[5][i] = r->gain[c];
    }
    nbwd__rows_clear(&batch);
    batch.x = r->x + (n * p->st[NBWD__GN_X][0] + c * p->st[NBWD__GN_X][1]) * esz;
    batch.dy = r->dy + (n * p->st[NBWD__GN_DY][0] + c * p->st[NBWD__GN_DY][1]) * esz;
    batch.dx = r->dx + (n * p->st[NBWD__GN_DX][0] + c * p->st[NBWD__GN_DX][1]) * esz;
    batch.dt = p->dt;
    batch.chans.xm = co[0]; batch.chans.xs = co[1]; batch.chans.mg = co[2];
    batch.chans.mgx = co[3]; batch.chans.scale = co[4]; batch.chans.gain = co[5];
    while (e < p->S) {
        batch.n = p->S - e < NBWD__GN_ODD_ROW ? p->S - e : NBWD__GN_ODD_ROW;
        batch.count = (p->S - e) / batch.n < NBWD__ROW_BATCH ? (p->S - e) / batch.n : NBWD__ROW_BATCH;
        for (i = 0; i < batch.count; ++i) batch.x_off[i] = batch.dy_off[i] = batch.dx_off[i] = e + i * batch.n;
        nbwd__run_bn_rows(r->k, &batch);
        e += batch.count * batch.n;
    }
}
/* NCX: dx of planes [c0, c0 + count) of sample n (not fenced): runs of
   planes through the plane kernel, the odd ones apart */
NBWD__PLAN_FN
static void nbwd__gn_ncx_apply(const nbwd__gn_run *r, int64_t n, int64_t c0, int64_t count) {
    const nbwd__gn_plan *p = r->p;
    int64_t esz = (int64_t)nbwd__esize(p->dt), at = n * p->C + c0, run;
    nbwd__planes pl;
    memset(&pl, 0, sizeof pl);
    pl.dt = p->dt;
    pl.n = p->S;
    pl.x_step = p->st[NBWD__GN_X][1];
    pl.dy_step = p->st[NBWD__GN_DY][1];
    pl.dx_step = p->st[NBWD__GN_DX][1];
    pl.stream = r->stream;
    while (count > 0) {
        if (r->odd[at] != 0.0f) {
            nbwd__gn_ncx_odd_plane(r, n, c0);
            run = 1;
        } else {
            for (run = 1; run < count && r->odd[at + run] == 0.0f; ++run) {}
            pl.count = run;
            pl.x = r->x + (n * p->st[NBWD__GN_X][0] + c0 * p->st[NBWD__GN_X][1]) * esz;
            pl.dy = r->dy + (n * p->st[NBWD__GN_DY][0] + c0 * p->st[NBWD__GN_DY][1]) * esz;
            pl.dx = r->dx + (n * p->st[NBWD__GN_DX][0] + c0 * p->st[NBWD__GN_DX][1]) * esz;
            pl.xm = r->xm + at; pl.xs = r->xs + at;
            pl.mg = r->mg + at; pl.mgx = r->mgx + at; pl.scale = r->scale + at;
            nbwd__run_planes_apply(r->k, &pl);
        }
        c0 += run; at += run; count -= run;
    }
}
/* NCX: a set on one thread, its dx written while its data is in cache */
NBWD__PLAN_FN
static void nbwd__gn_ncx_set(const nbwd__gn_run *r, int64_t set) {
    const nbwd__gn_plan *p = r->p;
    int64_t n = set / p->G, g = set % p->G;
    nbwd__gn_ncx_set_sums(r, n, g, 0);
    if (!r->want_dx) return;
    nbwd__gn_finish_set(r, n, g);
    nbwd__gn_ncx_apply(r, n, g * p->Cg, p->Cg);
    if (r->stream) r->k->fence();
}
/* NCX with fewer sets than threads: dx of planes [first, last) */
NBWD__PLAN_FN
static void nbwd__gn_ncx_apply_planes(const nbwd__gn_run *r, int64_t first, int64_t last) {
    for (; first < last; ++first) nbwd__gn_ncx_apply(r, first / r->p->C, first % r->p->C, 1);
    if (r->stream) r->k->fence();
}

/* NXC: rows [b * rows_per_block, ...) of sample n: pass 1 into the block's
   partials (dg: sum dy * xhat, db: sum dy, C each), or dx */
NBWD__PLAN_FN
static void nbwd__gn_nxc_block(const nbwd__gn_run *r, int64_t unit, int apply) {
    const nbwd__gn_plan *p = r->p;
    int64_t n = unit / p->nblocks, b = unit % p->nblocks, C = p->C, i;
    int64_t row = b * p->rows_per_block, end = row + p->rows_per_block;
    nbwd__rows batch;
    if (end > p->S) end = p->S;
    nbwd__rows_clear(&batch);
    batch.x = r->x;
    batch.dy = r->dy;
    batch.dx = apply ? r->dx : NULL;
    batch.n = C;
    batch.dt = p->dt;
    batch.stream = r->stream;
    batch.chans.xm = r->xm + n * C; batch.chans.xs = r->xs + n * C;
    batch.chans.mg = r->mg + n * C; batch.chans.mgx = r->mgx + n * C; batch.chans.scale = r->scale + n * C;
    batch.chans.gain = NULL;
    for (i = 0; r->row_gain && apply && i < C && !batch.chans.gain; ++i) /* a sample with an odd (n, c) */
        if (r->row_gain[n * C + i] != 1.0f) batch.chans.gain = r->row_gain + n * C;
    if (!apply) {
        batch.chans.dg = r->partials + unit * 2 * C;
        batch.chans.db = batch.chans.dg + C;
        memset(batch.chans.dg, 0, (size_t)C * 2 * 4);
    }
    while (row < end) { /* (the outer dims: the spatial ones, of sample n) */
        batch.count = end - row < NBWD__ROW_BATCH ? end - row : NBWD__ROW_BATCH;
        nbwd__row_offsets(&r->outer, row, batch.count, batch.x_off, batch.dy_off, batch.dx_off, NULL, NULL, NULL);
        for (i = 0; i < batch.count; ++i) { /* sample n's rows */
            batch.x_off[i] += n * p->st[NBWD__GN_X][0];
            batch.dy_off[i] += n * p->st[NBWD__GN_DY][0];
            batch.dx_off[i] += n * p->st[NBWD__GN_DX][0];
        }
        nbwd__run_bn_rows(r->k, &batch);
        row += batch.count;
    }
}
/* NXC: sample n's block partials added in block order, into psum */
NBWD__PLAN_FN
static void nbwd__gn_nxc_sample_sums(const nbwd__gn_run *r, int64_t n) {
    const nbwd__gn_plan *p = r->p;
    int64_t b, c, C = p->C;
    float *first = r->partials + n * p->nblocks * 2 * C;
    for (b = 1; b < p->nblocks; ++b) r->k->add(first, first + b * 2 * C, 2 * C);
    for (c = 0; c < C; ++c) {
        r->psum[(n * C + c) * 2] = first[C + c];
        r->psum[(n * C + c) * 2 + 1] = first[c];
    }
}

/* NXC: samples [n0, n1) from their block partials on: their sums, their
   sets' coefficients, gamma folded (see nbwd__gn_finish_set). whole: also
   the blocks' two passes, here, on the calling thread. */
NBWD__PLAN_FN
static void nbwd__gn_nxc_samples(const nbwd__gn_run *r, int64_t n0, int64_t n1, int whole) {
    const nbwd__gn_plan *p = r->p;
    int64_t C = p->C, u, n, i;
    for (u = n0 * p->nblocks; whole && u < n1 * p->nblocks; ++u) nbwd__gn_nxc_block(r, u, 0);
    for (n = n0; n < n1; ++n) nbwd__gn_nxc_sample_sums(r, n);
    if (!r->want_dx) return;
    for (i = n0 * p->G; i < n1 * p->G; ++i) nbwd__gn_finish_set(r, i / p->G, i % p->G);
    for (i = n0 * C; i < n1 * C && r->gain; ++i) { /* folded: g = dy (times 1, exact, beside an odd one) */
        float ge = r->gain[i % C];
        if (r->odd[i] == 0.0f) nbwd__gn_fold(r, i, ge, 1);
        r->odd[i] = r->odd[i] == 0.0f ? 1.0f : ge; /* now the rows' gain */
    }
    for (u = n0 * p->nblocks; whole && u < n1 * p->nblocks; ++u) nbwd__gn_nxc_block(r, u, 1);
}

/* NBWD_STATS_NONE: each set's mean and variance from x, in double, at
   st[2 (n groups + g)] and st[... + 1]. Each channel's part (its plane of
   S elements) is found by the kernels in a fixed order (NCX: the plane a
   row of the statistics kernel; NXC: sample n's columns, 16 rows at a time
   in f32, then the batches added in double in row order, around a pivot,
   the columns' f32 means); a set's channels are then combined in channel
   order by Chan, Golub and LeVeque's update (mean and sum of squared
   deviations of two parts: exact in real arithmetic, no cancellation). */
typedef struct nbwd__moments {
    double count, mean, m2; /* m2: the sum of squared deviations from the mean */
} nbwd__moments;
static void nbwd__moments_add(nbwd__moments *a, double count, double mean, double var) {
    double total = a->count + count, delta = mean - a->mean;
    if (total <= 0.0) return;
    a->mean += delta * (count / total);
    a->m2 += var * count + delta * delta * (a->count * count / total);
    a->count = total;
}
static void nbwd__gn_none_sample(const nbwd__gn_run *r, int64_t n, int64_t lane, double *st) {
    const nbwd__gn_plan *p = r->p;
    const int64_t C = p->C, S = p->S;
    nbwd__rows batch;
    nbwd__moments set;
    double part[2 * NBWD__ROW_BATCH], *mc, *vc;
    float *sums, *pivot;
    int64_t c, g, row, i;
    int pass;
    nbwd__rows_clear(&batch);
    batch.dt = p->dt;
    batch.x = r->x;
    if (!p->nxc) { /* each plane is a row of S elements */
        batch.n = S;
        for (g = 0; g < p->G; ++g) {
            memset(&set, 0, sizeof set);
            for (c = 0; c < p->Cg; c += batch.count) {
                batch.count = p->Cg - c < NBWD__ROW_BATCH ? p->Cg - c : NBWD__ROW_BATCH;
                for (i = 0; i < batch.count; ++i)
                    batch.x_off[i] = n * p->st[NBWD__GN_X][0] + (g * p->Cg + c + i) * p->st[NBWD__GN_X][1];
                nbwd__run_row_stats(r->k, &batch, part);
                for (i = 0; i < batch.count; ++i) nbwd__moments_add(&set, (double)S, part[2 * i], part[2 * i + 1]);
            }
            st[2 * (n * p->G + g)] = set.mean;
            st[2 * (n * p->G + g) + 1] = set.m2 / set.count;
        }
        return;
    }
    /* NXC: the sample's S rows of C channels, twice: the column sums (the
       pivots: their f32 means), then the sums of x - pivot and its squares */
    mc = (double *)(void *)(r->none_scratch + lane * p->none_lane_bytes); /* (doubles first: aligned) */
    vc = mc + C;
    sums = (float *)(void *)(vc + C);
    pivot = sums + 2 * C;
    batch.n = C;
    for (pass = 0; pass < 2; ++pass) {
        for (c = 0; c < C; ++c) mc[c] = vc[c] = 0.0;
        for (row = 0; row < S; row += batch.count) { /* (short f32 chains, as in the rows' statistics) */
            batch.count = S - row < NBWD__STATS_BLOCK ? S - row : NBWD__STATS_BLOCK;
            nbwd__row_offsets(&r->outer, row, batch.count, batch.x_off, batch.dy_off, batch.dx_off, NULL, NULL, NULL);
            for (i = 0; i < batch.count; ++i) batch.x_off[i] += n * p->st[NBWD__GN_X][0];
            memset(sums, 0, (size_t)C * 8);
            nbwd__run_col_stats(r->k, &batch, pass ? pivot : NULL, sums);
            for (c = 0; c < C; ++c) {
                mc[c] += (double)sums[c];
                vc[c] += (double)sums[C + c];
            }
        }
        if (!pass)
            for (c = 0; c < C; ++c) {
                pivot[c] = (float)(mc[c] / (double)S);
                if (!(pivot[c] - pivot[c] == 0.0f)) { /* as in row_stats: the column's first element */
                    int64_t x0;
                    nbwd__row_offsets(&r->outer, 0, 1, &x0, batch.dy_off, batch.dx_off, NULL, NULL, NULL);
                    pivot[c] = nbwd__load(r->x + (x0 + n * p->st[NBWD__GN_X][0]) * (int64_t)nbwd__esize(p->dt), c,
                                          p->dt);
                }
            }
    }
    for (g = 0; g < p->G; ++g) {
        memset(&set, 0, sizeof set);
        for (c = g * p->Cg; c < (g + 1) * p->Cg; ++c) { /* channel c: mean pivot + mean(d), variance mean(d^2) - mean(d)^2 */
            const double d = mc[c] / (double)S, var = vc[c] / (double)S - d * d;
            nbwd__moments_add(&set, (double)S, (double)pivot[c] + d, var > 0.0 ? var : 0.0);
        }
        st[2 * (n * p->G + g)] = set.mean;
        st[2 * (n * p->G + g) + 1] = set.m2 / set.count;
    }
}
/* The lanes of the NXC statistics: samples n0 + lane, n0 + lane + lanes,
   ... up to n1 */
static void nbwd__gn_none_lane(const nbwd__gn_run *r, int64_t n0, int64_t n1, int64_t lane, int64_t lanes,
                               double *st) {
    int64_t n;
    for (n = n0 + lane; n < n1; n += lanes) nbwd__gn_none_sample(r, n, lane, st);
}
/* Sample n's coefficients from its sets' statistics (st, as
   nbwd__gn_none_sample leaves them), as the MEAN_VARIANCE form takes them
   (in the drivers' floating-point mode), for every NBWD_STATS_NONE call */
NBWD__PLAN_FN
static void nbwd__gn_none_coefs(const nbwd__gn_run *r, int64_t n, const double *st) {
    const nbwd__gn_plan *p = r->p;
    int64_t g, c;
    for (g = 0; g < p->G; ++g) {
        const double *set = st + 2 * (n * p->G + g);
        const float xm = (float)set[0], rstd = (float)(1.0 / sqrt((double)(float)set[1] + (double)p->eps));
        for (c = g * p->Cg; c < (g + 1) * p->Cg; ++c) {
            r->xm[n * p->C + c] = xm;
            r->xs[n * p->C + c] = rstd;
            r->scale[n * p->C + c] = rstd;
        }
    }
}
/* GroupNorm NXC with NBWD_STATS_NONE over NBWD__GN_CHUNKED_BYTES, one
   thread's samples [n0, n1): each sample's statistics, then the rest of
   it, while the sample is still in cache */
NBWD__PLAN_FN
static void nbwd__gn_nxc_none_samples(const nbwd__gn_run *r, int64_t n0, int64_t n1, int64_t lane, double *st) {
    int64_t n;
    for (n = n0; n < n1; ++n) {
        nbwd__gn_none_sample(r, n, lane, st);
        nbwd__gn_none_coefs(r, n, st);
        nbwd__gn_nxc_samples(r, n, n + 1, 1);
    }
}

NBWD__PLAN_FN
static nbwd_status nbwd__group_norm_bwd(const nbwd_group_norm_bwd_desc *desc, const nbwd_group_norm_bwd_args *args,
                                        void *workspace, size_t workspace_bytes) {
    nbwd__gn_plan p;
    nbwd__gn_run r;
    nbwd_status s;
    void *owned;
    char *ws;
    int64_t c, n, g, i, C, NC, sets;
    int threads, reads_gamma, busy, big;
    double sample_bytes;
    const void *spread, *x;
    if ((s = nbwd__gn_plan_desc(desc, &p)) != NBWD_OK) return s;
    if (!args) return nbwd__fail(NBWD_ERR_NULL_POINTER, "args is NULL");
    if ((s = nbwd__gn_check_args(desc, &p, args)) != NBWD_OK) return s;
    memset(&r, 0, sizeof r);
    if (!(r.k = nbwd__select(desc->isa))) return nbwd__unsupported("desc.isa", desc->isa);
    C = p.C;
    NC = p.N * C;
    r.want_dx = args->diff_src != NULL;
    busy = NC * p.S > 0 && (r.want_dx || args->diff_gamma || args->diff_beta);
    if ((s = nbwd__get_workspace(p.ws_bytes, busy ? p.ws_bytes : 0, workspace, workspace_bytes, &owned, &ws)) !=
        NBWD_OK)
        return s;
    /* Everything is validated: from here on outputs are written. */
    if (!busy) { /* an empty batch: empty sums (nothing at all without C) */
        for (c = 0; c < C && !p.accumulate && (args->diff_gamma || args->diff_beta); ++c) {
            if (args->diff_gamma) nbwd__store(args->diff_gamma, nbwd__param_off(&p.par, NBWD__PDG, c), p.pdt, 0.0f);
            if (args->diff_beta) nbwd__store(args->diff_beta, nbwd__param_off(&p.par, NBWD__PDB, c), p.pdt, 0.0f);
        }
        return NBWD_OK;
    }
    r.p = &p;
    reads_gamma = nbwd__gn_reads_gamma(&p, args);
    x = nbwd__x_of(p.form, args->src, args->xhat, args->dst);
    spread = nbwd__spread_of(p.form, args->variance, args->rstd, args->std);
    r.x = (const char *)x;
    r.dy = (const char *)args->diff_dst;
    r.dx = (char *)args->diff_src;
    r.xm = (float *)(ws + p.ws_coef);
    r.xs = r.xm + NC;
    r.mg = r.xs + NC;
    r.mgx = r.mg + NC;
    r.scale = r.mgx + NC;
    r.psum = r.scale + NC;
    r.odd = r.psum + 2 * NC;
    r.gain = r.odd + NC;
    r.partials = p.nxc || p.pieces > 1 ? (float *)(ws + p.ws_partials) : NULL;
    for (c = 0; c < C; ++c)
        r.gain[c] = reads_gamma ? nbwd__load(args->gamma, nbwd__param_off(&p.par, NBWD__PG, c), p.pdt) : 1.0f;
    r.stream = r.want_dx && (double)(NC * p.S) * (double)nbwd__esize(p.dt) >= (double)NORM_BWD_STREAM_BYTES &&
               (p.nxc || p.S * (int64_t)nbwd__esize(p.dt) >= NBWD__NCX_STREAM_PLANE_BYTES);
    if (p.nxc) { /* a sample's rows: the spatial dims */
        int64_t st3[NBWD__GN_DATA][NBWD_MAX_RANK]; /* the spatial dims' strides */
        int t, d;
        for (t = 0; t < NBWD__GN_DATA; ++t)
            for (d = 0; d + 2 < p.rank; ++d) st3[t][d] = p.st[t][d + 1];
        nbwd__outer_init(&r.outer, p.rank - 2, desc->dims + 1, NBWD__GN_DATA, st3);
    }
    /* NXC batches over NBWD__GN_CHUNKED_BYTES go a few samples at a time
       (below); with NBWD_STATS_NONE each sample's statistics are then found
       there too, so that the sums read x from cache, not memory */
    sample_bytes = 2.0 * (double)C * (double)p.S * (double)nbwd__esize(p.dt); /* (no overflow) */
    big = p.nxc && sample_bytes * (double)p.N > (double)NBWD__GN_CHUNKED_BYTES;
    if (p.form == NBWD_STATS_NONE) { /* the sets' statistics from x */
        double *st = (double *)(void *)(ws + p.ws_none);
        r.none_scratch = (char *)(st + 2 * p.N * p.G);
        if (big) {
            r.none_st = st; /* (in the chunks) */
        } else if (p.nxc) {
            threads = nbwd__pick_threads(desc->num_threads, NC * p.S, p.none_lanes);
            NBWD__PARALLEL_FOR(threads, i, p.none_lanes, nbwd__gn_none_lane(&r, 0, p.N, i, p.none_lanes, st));
        } else {
            threads = nbwd__pick_threads(desc->num_threads, NC * p.S, p.N);
            NBWD__PARALLEL_FOR(threads, i, p.N, nbwd__gn_none_sample(&r, i, 0, st));
        }
    }
    for (n = 0; n < p.N && p.form == NBWD_STATS_NONE && !r.none_st; ++n) /* (else in the chunks) */
        nbwd__gn_none_coefs(&r, n, (const double *)(const void *)(ws + p.ws_none));
    for (n = 0; n < p.N && p.form != NBWD_STATS_NONE; ++n)
        for (g = 0; g < p.G; ++g) {
            float xm, xs, rstd;
            nbwd__stats(p.form, p.sdt, p.eps, args->mean, n * p.mean_st[0] + g * p.mean_st[1], spread,
                        n * p.var_st[0] + g * p.var_st[1], &xm, &xs, &rstd);
            for (c = g * p.Cg; c < (g + 1) * p.Cg; ++c) {
                if (p.form == NBWD_STATS_DST_RSTD && reads_gamma) { /* xhat = (dst - beta) * (1 / gamma) */
                    float ge = r.gain[c];
                    xm = p.affine && args->beta ? nbwd__load(args->beta, nbwd__param_off(&p.par, NBWD__PB, c), p.pdt)
                                                : 0.0f;
                    xs = (ge < 0.0f ? -ge : ge) >= 1.17549435e-38f ? 1.0f / ge : 0.0f; /* FLT_MIN */
                }
                r.xm[n * C + c] = xm;
                r.xs[n * C + c] = xs;
                r.scale[n * C + c] = rstd;
            }
        }
    if (!r.want_dx || !p.affine) r.gain = NULL; /* g = dy */
    sets = p.N * p.G;
    if (p.nxc) { /* samples in chunks (see NBWD__GN_RESIDENT_BYTES) */
        double fit;
        int64_t n0, n1, chunk;
        threads = nbwd__pick_threads(desc->num_threads, NC * p.S, p.N * p.nblocks);
        r.row_gain = r.gain ? r.odd : NULL;
        if (big && threads > 1 && (p.N % threads == 0 || p.N >= 4 * threads) &&
            (!r.none_st || threads <= p.none_lanes)) {
            /* each thread its own samples: no fork and join per chunk */
            if (r.none_st) /* (thread i: the statistics' lane i) */
                NBWD__PARALLEL_FOR(threads, i, threads,
                                   nbwd__gn_nxc_none_samples(&r, p.N * i / threads, p.N * (i + 1) / threads, i,
                                                             r.none_st));
            else
                NBWD__PARALLEL_FOR(threads, i, p.N, nbwd__gn_nxc_samples(&r, i, i + 1, 1));
        } else {
            fit = (double)NBWD__GN_RESIDENT_BYTES * (double)threads / sample_bytes;
            chunk = !big ? p.N : fit < 1.0 ? 1 : fit < (double)p.N ? (int64_t)fit : p.N;
            for (n0 = 0; n0 < p.N; n0 = n1) {
                int64_t units, u0 = n0 * p.nblocks;
                n1 = p.N - n0 < chunk ? p.N : n0 + chunk;
                units = (n1 - n0) * p.nblocks;
                if (r.none_st) { /* the chunk's statistics, then its coefficients */
                    const int64_t lanes = n1 - n0 < p.none_lanes ? n1 - n0 : p.none_lanes;
                    NBWD__PARALLEL_FOR(threads, i, lanes, nbwd__gn_none_lane(&r, n0, n1, i, lanes, r.none_st));
                    for (n = n0; n < n1; ++n) nbwd__gn_none_coefs(&r, n, r.none_st);
                }
                NBWD__PARALLEL_FOR(threads, i, units, nbwd__gn_nxc_block(&r, u0 + i, 0));
                nbwd__gn_nxc_samples(&r, n0, n1, 0);
                if (r.want_dx) NBWD__PARALLEL_FOR(threads, i, units, nbwd__gn_nxc_block(&r, u0 + i, 1));
            }
        }
    } else {
        threads = nbwd__pick_threads(desc->num_threads, NC * p.S, NC * p.pieces);
        if (threads <= 1 || sets >= 2 * threads) {
            NBWD__PARALLEL_FOR(threads, i, sets, nbwd__gn_ncx_set(&r, i));
        } else { /* few sets: pieces and planes over the threads (the same sums) */
            if (p.pieces > 1) {
                NBWD__PARALLEL_FOR(threads, i, NC * p.pieces, nbwd__gn_ncx_piece(&r, i));
                for (i = 0; i < sets; ++i) nbwd__gn_ncx_set_sums(&r, i / p.G, i % p.G, 1);
            } else {
                NBWD__PARALLEL_FOR(threads, i, NC, nbwd__gn_ncx_plane_sums(&r, i));
            }
            if (r.want_dx) {
                for (i = 0; i < sets; ++i) nbwd__gn_finish_set(&r, i / p.G, i % p.G);
                NBWD__PARALLEL_FOR(threads, i, threads,
                                   nbwd__gn_ncx_apply_planes(&r, NC * i / threads, NC * (i + 1) / threads));
            }
        }
    }
    if (args->diff_gamma || args->diff_beta) { /* sums over the samples, in order */
        for (c = 0; c < C; ++c) {
            double sdy = 0.0, sdyx = 0.0;
            for (n = 0; n < p.N; ++n) {
                sdy += (double)r.psum[(n * C + c) * 2];
                sdyx += (double)r.psum[(n * C + c) * 2 + 1];
            }
            if (args->diff_gamma)
                nbwd__write_param(args->diff_gamma, nbwd__param_off(&p.par, NBWD__PDG, c), p.pdt, (float)sdyx,
                                  p.accumulate);
            if (args->diff_beta)
                nbwd__write_param(args->diff_beta, nbwd__param_off(&p.par, NBWD__PDB, c), p.pdt, (float)sdy,
                                  p.accumulate);
        }
    }
    if (owned) NORM_BWD_FREE(owned);
    return NBWD_OK;
}

NBWD__PLAN_FN
NBWD_API nbwd_status nbwd_group_norm_bwd(const nbwd_group_norm_bwd_desc *desc, const nbwd_group_norm_bwd_args *args,
                                         void *workspace, size_t workspace_bytes) {
    static const char entry[] = "nbwd_group_norm_bwd";
    int verbose = nbwd__verbose();
    double t0 = verbose >= 2 ? nbwd__now() : 0.0;
    nbwd_status s;
    nbwd__msg[0] = 0;
    s = nbwd__finish(entry, nbwd__group_norm_bwd(desc, args, workspace, workspace_bytes));
    if (verbose >= 2 && desc) {
        nbwd__call c;
        NBWD__CALL_OF(c, desc, args);
        c.op = entry + 5;
        c.set = desc->layout == NBWD_NCX ? "NCX" : "NXC";
        nbwd__call_line(&c, nbwd__now() - t0, s);
    }
    return s;
}


#if defined(NBWD__GCC_NO_CONTRACT)
#pragma GCC pop_options
#undef NBWD__GCC_NO_CONTRACT
#endif
#endif /* IMPLEMENTATION, continued */

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
