/* Host-side checks of the GPU API shared by test_gpu_host.c (C, the stub)
   and test_gpu.cu (nvcc): every invalid input gives the CPU path's status
   (the GPU path validates with norm_bwd.h's own functions), valid inputs
   give ok_status (NBWD_OK on a GPU, NBWD_ERR_UNSUPPORTED for the stub or
   without a device), plus the GPU-specific workspace rules.
   Tensors are placed at the same offsets in a host arena (CPU call) and in
   `gpu_arena` (host memory for the stub, device memory on a GPU), so the
   address relations (aliasing) are the same for both calls. The includer
   provides nbwdt_check(int ok, const char *what) and, on a GPU,
   nbwdt_sync() (called after each GPU call that returned NBWD_OK).
   A few valid inputs are outside what the GPU path takes (strided parameter
   tensors of LayerNorm, RMSNorm and BatchNorm; GroupNorm takes them): there
   the CPU call succeeds and the GPU call (stub or not) gives
   NBWD_ERR_UNSUPPORTED, with a message that names the strides. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>

#define NBWDT_ARENA (1 << 20)
#define NBWDT_GPU_WS_OFF (512 * 1024) /* GPU workspace inside the arena */

/* LayerNorm [4, 8] f32: x 0, dy 4096, dx 8192, mean 12288, var 12800,
   gamma 13312, beta 13824, dgamma 14336, dbeta 14848; free for the cases:
   16384 on (a residual at 16384, padded tensors at 20000 and 24576). */
static void nbwdt_ln_base(nbwd_layer_norm_bwd_desc *d, nbwd_layer_norm_bwd_args *a, char *b) {
    int64_t dims[2] = {4, 8};
    nbwd_layer_norm_bwd_desc_init(d, 2, dims);
    memset(a, 0, sizeof *a);
    a->src = b; a->diff_dst = b + 4096; a->diff_src = b + 8192; a->mean = b + 12288; a->variance = b + 12800;
    a->gamma = b + 13312; a->beta = b + 13824; a->diff_gamma = b + 14336; a->diff_beta = b + 14848;
}

/* The DST_RSTD form of the base problem: the forward output where src was,
   rstd where the variance was, beta read (the base has one). */
static void nbwdt_ln_dst(nbwd_layer_norm_bwd_desc *d, nbwd_layer_norm_bwd_args *a) {
    d->stats_form = NBWD_STATS_DST_RSTD;
    a->dst = a->src; a->src = NULL; a->mean = NULL;
    a->rstd = a->variance; a->variance = NULL;
}

/* Case i: modifies the base problem. Returns 0 past the last case; bit 1:
   pass desc NULL, bit 2: pass args NULL, bit 8: valid, but not on the GPU
   (NBWD_ERR_UNSUPPORTED there). *name gets a description. */
#define NBWDT_GPU_UNSUPPORTED 8
static int nbwdt_ln_case(int i, nbwd_layer_norm_bwd_desc *d, nbwd_layer_norm_bwd_args *a, char *b, const char **name) {
    static const int64_t bad_inner[2] = {16, 2}, padded[2] = {12, 1}, overlap_dx[2] = {4, 1}, neg[2] = {-8, 1};
    static const int64_t pstride2[1] = {2};
    switch (i) {
    case 0: *name = "valid (MEAN_VARIANCE, every output)"; return 1;
    case 1: *name = "desc NULL"; return 3;
    case 2: *name = "args NULL"; return 5;
    case 3: *name = "rank 0"; d->rank = 0; return 1;
    case 4: *name = "rank 9"; d->rank = 9; return 1;
    case 5: *name = "axis 2"; d->begin_norm_axis = 2; return 1;
    case 6: *name = "axis -3"; d->begin_norm_axis = -3; return 1;
    case 7: *name = "negative dim"; d->dims[0] = -1; return 1;
    case 8: *name = "f32 data with bf16 stats"; d->stats_dtype = NBWD_BF16; return 1;
    case 9: *name = "bf16 data with f16 params"; d->data_dtype = NBWD_BF16; d->param_dtype = NBWD_F16; return 1;
    case 10: *name = "dtype 7"; d->data_dtype = (nbwd_dtype)7; return 1;
    case 11: *name = "epsilon 0"; d->epsilon = 0.0f; return 1;
    case 12: *name = "epsilon NaN"; d->epsilon = (float)NAN; return 1;
    case 13: *name = "unknown flag"; d->flags = 2; return 1;
    case 14: *name = "stats form 5"; d->stats_form = (nbwd_stats_form)5; return 1;
    case 15: *name = "num_threads -1"; d->num_threads = -1; return 1;
    case 16: *name = "isa 99"; d->isa = (nbwd_isa)99; return 1;
    case 17: *name = "inner stride 2 (not dense)"; d->src_strides = bad_inner; return 1;
    case 18: *name = "padded outer stride (valid)"; d->diff_dst_strides = padded; a->diff_dst = b + 20000; return 1;
    case 19: *name = "diff_src overlapping itself"; d->diff_src_strides = overlap_dx; return 1;
    case 20: *name = "negative outer stride (valid)"; d->src_strides = neg; a->src = b + 3 * 32; return 1;
    case 21: *name = "diff_src overlaps diff_dst partly"; a->diff_src = b + 4096 + 4; return 1;
    case 22: *name = "in place diff_src == diff_dst (valid)"; a->diff_src = b + 4096; return 1;
    case 23: *name = "in place diff_src == src (valid)"; a->diff_src = b; return 1;
    case 24: *name = "diff_gamma overlaps gamma"; a->diff_gamma = b + 13312; return 1;
    case 25: *name = "diff_gamma == diff_beta"; a->diff_beta = b + 14336; return 1;
    case 26: *name = "diff_gamma without affine"; d->use_affine = 0; return 1;
    case 27: *name = "no affine, diff_src only (valid)"; d->use_affine = 0; a->diff_gamma = a->diff_beta = NULL; return 1;
    case 28: *name = "diff_dst NULL"; a->diff_dst = NULL; return 1;
    case 29: *name = "src NULL"; a->src = NULL; return 1;
    case 30: *name = "mean NULL"; a->mean = NULL; return 1;
    case 31: *name = "variance NULL"; a->variance = NULL; return 1;
    case 32: *name = "gamma NULL with diff_src"; a->gamma = NULL; return 1;
    case 33: *name = "gamma NULL without diff_src (valid)"; a->gamma = NULL; a->diff_src = NULL; return 1;
    case 34: *name = "xhat given in MEAN_VARIANCE form"; a->xhat = b + 30000; return 1;
    case 35: *name = "rstd given in MEAN_VARIANCE form"; a->rstd = b + 30000; return 1;
    case 36: *name = "MEAN_RSTD form (valid)"; d->stats_form = NBWD_STATS_MEAN_RSTD; a->rstd = a->variance; a->variance = NULL; return 1;
    case 37: *name = "XHAT_STD form (valid)"; d->stats_form = NBWD_STATS_XHAT_STD; a->xhat = a->src; a->src = NULL;
        a->std = a->variance; a->variance = NULL; a->mean = NULL; return 1;
    case 38: *name = "XHAT_STD form with mean given"; d->stats_form = NBWD_STATS_XHAT_STD; a->xhat = a->src; a->src = NULL;
        a->std = a->variance; a->variance = NULL; return 1;
    case 39: *name = "bf16 data, bf16 stats, f32 params (valid)"; d->data_dtype = d->stats_dtype = NBWD_BF16; return 1;
    case 40: *name = "f16 data, stats and params (valid)"; d->data_dtype = d->stats_dtype = d->param_dtype = NBWD_F16; return 1;
    case 41: *name = "no outputs (valid)"; a->diff_src = a->diff_gamma = a->diff_beta = NULL; return 1;
    case 42: *name = "zero rows (valid)"; d->dims[0] = 0; return 1;
    case 43: *name = "zero rows, NULL inputs (valid)"; d->dims[0] = 0; a->src = a->diff_dst = a->mean = a->variance = NULL;
        a->diff_src = NULL; return 1;
    case 44: *name = "accumulate (valid)"; d->flags = NBWD_ACCUMULATE_PARAM_GRADS; return 1;
    case 45: *name = "dim overflow"; d->dims[0] = (int64_t)1 << 40; d->dims[1] = (int64_t)1 << 40; return 1;
    case 46: *name = "rank 3, axis 1 (valid)"; d->rank = 3; d->dims[1] = 2; d->dims[2] = 4; d->begin_norm_axis = 1; return 1;
    /* diff_residual: added to diff_src, its own tensor or diff_src itself */
    case 47: *name = "residual (valid)"; a->diff_residual = b + 16384; return 1;
    case 48: *name = "residual without diff_src"; a->diff_residual = b + 16384; a->diff_src = NULL; return 1;
    case 49: *name = "residual == diff_src, accumulate in place (valid)"; a->diff_residual = a->diff_src; return 1;
    case 50: *name = "residual overlaps diff_src partly"; a->diff_residual = b + 8192 + 4; return 1;
    case 51: *name = "residual with padded strides of its own (valid)"; d->diff_residual_strides = padded;
        a->diff_residual = b + 24576; return 1;
    case 52: *name = "residual with inner stride 2"; d->diff_residual_strides = bad_inner; a->diff_residual = b + 24576;
        return 1;
    case 53: *name = "residual == diff_src, but other strides"; d->diff_residual_strides = padded;
        a->diff_residual = a->diff_src; return 1;
    case 54: *name = "residual over diff_gamma"; a->diff_residual = b + 14336 - 64; return 1;
    case 55: *name = "residual == diff_dst, an input (valid)"; a->diff_residual = a->diff_dst; return 1;
    case 56: *name = "residual == diff_src == diff_dst (valid)"; a->diff_src = b + 4096; a->diff_residual = b + 4096; return 1;
    /* NBWD_STATS_DST_RSTD: the forward output, rstd, gamma and beta */
    case 57: *name = "DST_RSTD (valid)"; nbwdt_ln_dst(d, a); return 1;
    case 58: *name = "DST_RSTD without beta (valid)"; nbwdt_ln_dst(d, a); a->beta = NULL; return 1;
    case 59: *name = "DST_RSTD with dst NULL"; nbwdt_ln_dst(d, a); a->dst = NULL; return 1;
    case 60: *name = "DST_RSTD with src given"; nbwdt_ln_dst(d, a); a->src = b + 30000; return 1;
    case 61: *name = "DST_RSTD with mean given"; nbwdt_ln_dst(d, a); a->mean = b + 12288; return 1;
    case 62: *name = "DST_RSTD with variance, no rstd"; nbwdt_ln_dst(d, a); a->variance = a->rstd; a->rstd = NULL;
        return 1;
    case 63: *name = "DST_RSTD with rstd NULL"; nbwdt_ln_dst(d, a); a->rstd = NULL; return 1;
    case 64: *name = "DST_RSTD, gamma NULL with diff_gamma only"; nbwdt_ln_dst(d, a); a->gamma = NULL;
        a->diff_src = NULL; return 1;
    case 65: *name = "DST_RSTD, gamma NULL with diff_beta only (valid)"; nbwdt_ln_dst(d, a); a->gamma = NULL;
        a->diff_src = a->diff_gamma = NULL; return 1;
    case 66: *name = "DST_RSTD, beta over diff_gamma"; nbwdt_ln_dst(d, a); a->beta = b + 14336 + 4; return 1;
    case 67: *name = "DST_RSTD without affine (valid)"; nbwdt_ln_dst(d, a); d->use_affine = 0; a->gamma = a->beta = NULL;
        a->diff_gamma = a->diff_beta = NULL; return 1;
    case 68: *name = "DST_RSTD, in place diff_src == dst (valid)"; nbwdt_ln_dst(d, a); a->diff_src = b; return 1;
    case 69: *name = "DST_RSTD with residual in place, offset gamma, bf16 (valid)"; nbwdt_ln_dst(d, a);
        d->data_dtype = d->param_dtype = NBWD_BF16; d->gamma_offset = 1.0f; a->diff_residual = a->diff_src; return 1;
    case 70: *name = "DST_RSTD with std given"; nbwdt_ln_dst(d, a); a->std = b + 30000; return 1;
    /* strided parameter tensors: the CPU takes them, the GPU does not */
    case 71: *name = "strided gamma (GPU: unsupported)"; d->gamma_strides = pstride2; return 1 | NBWDT_GPU_UNSUPPORTED;
    case 72: *name = "strided diff_beta (GPU: unsupported)"; d->diff_beta_strides = pstride2;
        return 1 | NBWDT_GPU_UNSUPPORTED;
    case 73: *name = "strided beta, never read (valid)"; d->beta_strides = pstride2; return 1;
    case 74: *name = "DST_RSTD with strided beta (GPU: unsupported)"; nbwdt_ln_dst(d, a); d->beta_strides = pstride2;
        return 1 | NBWDT_GPU_UNSUPPORTED;
    case 75: *name = "DST_RSTD with strided beta, beta NULL (valid)"; nbwdt_ln_dst(d, a); d->beta_strides = pstride2;
        a->beta = NULL; return 1;
    case 76: *name = "DST_RSTD with strided beta, diff_beta only (valid: beta not read)"; nbwdt_ln_dst(d, a);
        d->beta_strides = pstride2; a->diff_src = a->diff_gamma = NULL; return 1;
    case 77: *name = "DST_RSTD with strided beta, diff_gamma only (GPU: unsupported)"; nbwdt_ln_dst(d, a);
        d->beta_strides = pstride2; a->diff_src = a->diff_beta = NULL; return 1 | NBWDT_GPU_UNSUPPORTED;
    default: return 0;
    }
}

/* BatchNorm NXC [2, 3, 4] f32: x 0, dy 4096, dx 8192, mean 12288, var 12800,
   gamma 13312, dgamma 14336, dbeta 14848. */
static void nbwdt_bn_base(nbwd_batch_norm_bwd_desc *d, nbwd_batch_norm_bwd_args *a, char *b) {
    int64_t dims[3] = {2, 3, 4};
    nbwd_batch_norm_bwd_desc_init(d, 3, dims, NBWD_NXC, 1e-5f);
    memset(a, 0, sizeof *a);
    a->src = b; a->diff_dst = b + 4096; a->diff_src = b + 8192; a->mean = b + 12288; a->variance = b + 12800;
    a->gamma = b + 13312; a->diff_gamma = b + 14336; a->diff_beta = b + 14848;
}

/* The fused ReLU on the BatchNorm base problem: dst at 16384 (room for a
   channel stride 2), diff_src_add at 24576. */
#define NBWDT_BN_DST 16384
#define NBWDT_BN_ADD 24576
static void nbwdt_bn_relu(nbwd_batch_norm_bwd_desc *d, nbwd_batch_norm_bwd_args *a, char *b, unsigned flag) {
    d->flags |= flag;
    a->dst = b + NBWDT_BN_DST;
    if (flag == NBWD_FUSE_ADD_RELU) a->diff_src_add = b + NBWDT_BN_ADD;
}

static int nbwdt_bn_case(int i, nbwd_batch_norm_bwd_desc *d, nbwd_batch_norm_bwd_args *a, char *b, const char **name) {
    static const int64_t bad_inner[3] = {12, 4, 2}, padded[3] = {16, 4, 1}, ncx_bad[3] = {12, 4, 2};
    static const int64_t chan2[3] = {24, 8, 2}, self_overlap[3] = {12, 2, 1}, nc_chan2[2] = {8, 2};
    const unsigned R = NBWD_FUSE_RELU, AR = NBWD_FUSE_ADD_RELU;
    switch (i) {
    case 0: *name = "valid NXC"; return 1;
    case 1: *name = "desc NULL"; return 3;
    case 2: *name = "args NULL"; return 5;
    case 3: *name = "rank 1"; d->rank = 1; return 1;
    case 4: *name = "layout 5"; d->layout = (nbwd_layout)5; return 1;
    case 5: *name = "epsilon 0"; d->epsilon = 0.0f; return 1;
    case 6: *name = "epsilon 0 in MEAN_RSTD form (valid)"; d->epsilon = 0.0f; d->stats_form = NBWD_STATS_MEAN_RSTD;
        a->rstd = a->variance; a->variance = NULL; return 1;
    case 7: *name = "diff_gamma without diff_beta"; a->diff_beta = NULL; return 1;
    case 8: *name = "no param grads, gamma ignored (valid)"; a->diff_gamma = a->diff_beta = NULL; a->gamma = NULL; return 1;
    case 9: *name = "gamma NULL with param grads (valid)"; a->gamma = NULL; return 1;
    case 10: *name = "channel stride 2"; d->src_strides = bad_inner; return 1;
    case 11: *name = "padded strides (valid)"; d->diff_dst_strides = padded; a->diff_dst = b + 20000; return 1;
    case 12: *name = "NCX with plane stride 2"; d->layout = NBWD_NCX; d->src_strides = ncx_bad; return 1;
    case 13: *name = "NCX (valid)"; d->layout = NBWD_NCX; return 1;
    case 14: *name = "diff_src overlaps src partly"; a->diff_src = b + 8; return 1;
    case 15: *name = "in place diff_src == diff_dst (valid)"; a->diff_src = b + 4096; return 1;
    case 16: *name = "dbeta overlaps mean"; a->diff_beta = b + 12288; return 1;
    case 17: *name = "f16 data, bf16 stats"; d->data_dtype = NBWD_F16; d->stats_dtype = NBWD_BF16; return 1;
    case 18: *name = "bf16 everything (valid)"; d->data_dtype = d->stats_dtype = d->param_dtype = NBWD_BF16; return 1;
    case 19: *name = "diff_dst NULL"; a->diff_dst = NULL; return 1;
    case 20: *name = "empty batch (valid)"; d->dims[0] = 0; return 1;
    case 21: *name = "XHAT_STD with src given"; d->stats_form = NBWD_STATS_XHAT_STD; a->xhat = b + 30000; return 1;
    case 22: *name = "rank 2 NCX (valid)"; d->rank = 2; d->layout = NBWD_NCX; return 1;
    case 23: *name = "diff_src NULL, param grads only (valid)"; a->diff_src = NULL; return 1;
    case 24: *name = "DST_RSTD form (LayerNorm's only)"; d->stats_form = NBWD_STATS_DST_RSTD; a->rstd = a->variance;
        a->variance = NULL; a->mean = NULL; return 1;
    case 25: *name = "stats form 4"; d->stats_form = (nbwd_stats_form)4; return 1;
    case 26: *name = "strided gamma (GPU: unsupported)"; { static const int64_t two[1] = {2}; d->gamma_strides = two; }
        return 1 | NBWDT_GPU_UNSUPPORTED;
    /* the fused ReLU: dst (and ADD_RELU's diff_src_add) with its flag */
    case 27: *name = "fused ReLU (valid)"; nbwdt_bn_relu(d, a, b, R); return 1;
    case 28: *name = "fused add+ReLU (valid)"; nbwdt_bn_relu(d, a, b, AR); return 1;
    case 29: *name = "both ReLU flags"; nbwdt_bn_relu(d, a, b, AR); d->flags |= R; return 1;
    case 30: *name = "ReLU, dst NULL"; nbwdt_bn_relu(d, a, b, R); a->dst = NULL; return 1;
    case 31: *name = "add+ReLU, dst NULL"; nbwdt_bn_relu(d, a, b, AR); a->dst = NULL; return 1;
    case 32: *name = "add+ReLU, diff_src_add NULL"; nbwdt_bn_relu(d, a, b, AR); a->diff_src_add = NULL; return 1;
    case 33: *name = "dst without a ReLU flag"; a->dst = b + NBWDT_BN_DST; return 1;
    case 34: *name = "diff_src_add without a ReLU flag"; a->diff_src_add = b + NBWDT_BN_ADD; return 1;
    case 35: *name = "diff_src_add with NBWD_FUSE_RELU"; nbwdt_bn_relu(d, a, b, R); a->diff_src_add = b + NBWDT_BN_ADD;
        return 1;
    case 36: *name = "add+ReLU in place diff_src_add == diff_dst (valid)"; nbwdt_bn_relu(d, a, b, AR);
        a->diff_src_add = b + 4096; return 1;
    case 37: *name = "add+ReLU in place diff_src_add == dst (valid)"; nbwdt_bn_relu(d, a, b, AR);
        a->diff_src_add = b + NBWDT_BN_DST; return 1;
    case 38: *name = "ReLU in place diff_src == dst (valid)"; nbwdt_bn_relu(d, a, b, R); a->diff_src = b + NBWDT_BN_DST;
        return 1;
    case 39: *name = "add+ReLU, diff_src_add overlaps diff_dst partly"; nbwdt_bn_relu(d, a, b, AR);
        a->diff_src_add = b + 4096 + 4; return 1;
    case 40: *name = "add+ReLU, diff_src_add == diff_src"; nbwdt_bn_relu(d, a, b, AR); a->diff_src_add = b + 8192;
        return 1;
    case 41: *name = "ReLU, dst over diff_gamma"; nbwdt_bn_relu(d, a, b, R); a->dst = b + 14336 - 64; return 1;
    case 42: *name = "add+ReLU, diff_src_add == dst, but other strides"; nbwdt_bn_relu(d, a, b, AR);
        a->diff_src_add = b + NBWDT_BN_DST; d->dst_strides = chan2; return 1;
    case 43: *name = "add+ReLU, diff_src_add with channel stride 2"; nbwdt_bn_relu(d, a, b, AR);
        d->diff_src_add_strides = chan2; return 1;
    case 44: *name = "add+ReLU, diff_src_add overlapping itself"; nbwdt_bn_relu(d, a, b, AR);
        d->diff_src_add_strides = self_overlap; return 1;
    case 45: *name = "ReLU, dst with channel stride 2 (valid: read elementwise)"; nbwdt_bn_relu(d, a, b, R);
        d->dst_strides = chan2; return 1;
    case 46: *name = "ReLU, diff_dst with channel stride 2 (valid: the kernels read the masked copy)";
        nbwdt_bn_relu(d, a, b, R); d->diff_dst_strides = chan2; return 1;
    case 47: *name = "add+ReLU, diff_dst with channel stride 2 (valid)"; nbwdt_bn_relu(d, a, b, AR);
        d->diff_dst_strides = chan2; return 1;
    case 48: *name = "add+ReLU, diff_src_add padded (valid)"; nbwdt_bn_relu(d, a, b, AR);
        d->diff_src_add_strides = padded; return 1;
    case 49: *name = "ReLU, empty batch, dst NULL (valid)"; nbwdt_bn_relu(d, a, b, R); d->dims[0] = 0; a->dst = NULL;
        return 1;
    case 50: *name = "add+ReLU, diff_src_add alone (valid)"; nbwdt_bn_relu(d, a, b, AR);
        a->diff_src = a->diff_gamma = a->diff_beta = NULL; return 1;
    case 51: *name = "ReLU NCX, global statistics, bf16 (valid)"; nbwdt_bn_relu(d, a, b, R); d->layout = NBWD_NCX;
        d->flags |= NBWD_USE_GLOBAL_STATS; d->data_dtype = NBWD_BF16; return 1;
    case 52: *name = "add+ReLU [N, C], diff_src_add with channel stride 2 (valid: gathered)"; d->rank = 2;
        nbwdt_bn_relu(d, a, b, AR); d->diff_src_add_strides = nc_chan2; return 1;
    case 53: *name = "add+ReLU with strided gamma (GPU: unsupported)"; nbwdt_bn_relu(d, a, b, AR);
        { static const int64_t two[1] = {2}; d->gamma_strides = two; }
        return 1 | NBWDT_GPU_UNSUPPORTED;
    case 54: *name = "ReLU with accumulate, f16 (valid)"; nbwdt_bn_relu(d, a, b, R);
        d->flags |= NBWD_ACCUMULATE_PARAM_GRADS; d->data_dtype = NBWD_F16; return 1;
    default: return 0;
    }
}

/* The two phases of a batch split over processes on the BatchNorm base
   problem (M = 6 elements per channel): reduce's args without outputs,
   apply's with every output. The sums: sum_dy at 15360, sum_dy_xhat at
   15616 in each arena (on a GPU, device memory: the GPU calls take device
   sums); count on the host (6; NCX: 8). Flags as nbwdt_bn_case's, plus
   NBWDT_TP_APPLY (apply; else reduce) and NBWDT_TP_NO_COUNT (reduce's
   count NULL). */
#define NBWDT_SUM_DY 15360
#define NBWDT_SUM_DYX 15616
#define NBWDT_TP_APPLY 16
#define NBWDT_TP_NO_COUNT 32
static int nbwdt_bn2_case(int i, nbwd_batch_norm_bwd_desc *d, nbwd_batch_norm_bwd_args *a, char *b, float **sdy,
                          float **sdyx, int64_t *count, const char **name) {
    static const int64_t two[1] = {2};
    const int R = 0, A = NBWDT_TP_APPLY;
    *sdy = (float *)(b + NBWDT_SUM_DY);
    *sdyx = (float *)(b + NBWDT_SUM_DYX);
    *count = 6;
    if (i < 20 || (i >= 40 && i <= 41) || (i >= 43 && i <= 48))
        a->diff_src = a->diff_gamma = a->diff_beta = NULL; /* reduce */
    switch (i) {
    case 0: *name = "reduce (valid)"; return 1 | R;
    case 1: *name = "reduce, desc NULL"; return 3 | R;
    case 2: *name = "reduce, args NULL"; return 5 | R;
    case 3: *name = "reduce, sum_dy NULL"; *sdy = NULL; return 1 | R;
    case 4: *name = "reduce, sum_dy_xhat NULL"; *sdyx = NULL; return 1 | R;
    case 5: *name = "reduce, count NULL"; return 1 | R | NBWDT_TP_NO_COUNT;
    case 6: *name = "reduce with args.diff_src"; a->diff_src = b + 8192; return 1 | R;
    case 7: *name = "reduce with args.diff_gamma/diff_beta"; a->diff_gamma = b + 14336; a->diff_beta = b + 14848;
        return 1 | R;
    case 8: *name = "reduce, diff_dst NULL"; a->diff_dst = NULL; return 1 | R;
    case 9: *name = "reduce, sum_dy_xhat overlapping sum_dy"; *sdyx = *sdy + 2; return 1 | R;
    case 10: *name = "reduce, sum_dy overlapping mean"; *sdy = (float *)(b + 12288 + 4); return 1 | R;
    case 11: *name = "reduce, sum_dy_xhat over src"; *sdyx = (float *)(b + 16); return 1 | R;
    case 12: *name = "reduce, zeroed desc stamp"; d->init_stamp = 0; return 1 | R;
    case 13: *name = "reduce, epsilon 0"; d->epsilon = 0.0f; return 1 | R;
    case 14: *name = "reduce NCX, bf16 (valid)"; d->layout = NBWD_NCX; d->data_dtype = NBWD_BF16; return 1 | R;
    case 15: *name = "reduce, empty slice (valid)"; d->dims[0] = 0; return 1 | R;
    case 16: *name = "reduce, global statistics, gamma given (valid: ignored)"; d->flags = NBWD_USE_GLOBAL_STATS;
        return 1 | R;
    case 17: *name = "reduce, accumulate and bf16 params (valid: the sums are f32, overwritten)";
        d->flags = NBWD_ACCUMULATE_PARAM_GRADS; d->data_dtype = d->param_dtype = NBWD_BF16; return 1 | R;
    case 18: *name = "reduce, strided gamma (GPU: unsupported, as for apply)"; d->gamma_strides = two;
        return 1 | R | NBWDT_GPU_UNSUPPORTED;
    case 19: *name = "reduce, strided diff_gamma (GPU: unsupported, as for apply)"; d->diff_gamma_strides = two;
        return 1 | R | NBWDT_GPU_UNSUPPORTED;
    case 40: *name = "reduce, zeroed desc stamp and sum_dy NULL (the descriptor first)"; d->init_stamp = 0; *sdy = NULL;
        return 1 | R;
    case 41: *name = "reduce, rank 1 and args NULL (the descriptor first)"; d->rank = 1; return 5 | R;
    case 42: *name = "apply, rank 1 and sum_dy NULL (the descriptor first)"; d->rank = 1; *sdy = NULL; return 1 | A;
    case 20: *name = "apply (valid)"; return 1 | A;
    case 21: *name = "apply, desc NULL"; return 3 | A;
    case 22: *name = "apply, args NULL"; return 5 | A;
    case 23: *name = "apply, a count of more processes (valid)"; *count = 1000; return 1 | A;
    case 24: *name = "apply, count below the slice's own"; *count = 5; return 1 | A;
    case 25: *name = "apply, negative count"; *count = -1; return 1 | A;
    case 26: *name = "apply, sum_dy NULL"; *sdy = NULL; return 1 | A;
    case 27: *name = "apply, sum_dy_xhat NULL"; *sdyx = NULL; return 1 | A;
    case 28: *name = "apply, sum_dy overlapping diff_gamma"; *sdy = (float *)(b + 14336 + 4); return 1 | A;
    case 29: *name = "apply, sum_dy_xhat overlapping diff_src"; *sdyx = (float *)(b + 8192 + 12); return 1 | A;
    case 30: *name = "apply, sum_dy the same memory as mean (valid: inputs)"; *sdy = (float *)(b + 12288);
        return 1 | A;
    case 31: *name = "apply, diff_gamma without diff_beta"; a->diff_beta = NULL; return 1 | A;
    case 32: *name = "apply, dx alone (valid)"; a->diff_gamma = a->diff_beta = NULL; return 1 | A;
    case 33: *name = "apply, parameter gradients alone (valid)"; a->diff_src = NULL; return 1 | A;
    case 34: *name = "apply, empty slice (valid)"; d->dims[0] = 0; return 1 | A;
    case 35: *name = "apply, empty slice, count 0 (valid)"; d->dims[0] = 0; *count = 0; return 1 | A;
    case 36: *name = "apply NCX (M = 8), global statistics, accumulate (valid)"; d->layout = NBWD_NCX; *count = 8;
        d->flags = NBWD_USE_GLOBAL_STATS | NBWD_ACCUMULATE_PARAM_GRADS; return 1 | A;
    case 37: *name = "apply, in place diff_src == diff_dst (valid)"; a->diff_src = b + 4096; return 1 | A;
    case 38: *name = "apply, zeroed desc stamp"; d->init_stamp = 0; return 1 | A;
    case 39: *name = "apply, strided gamma (GPU: unsupported)"; d->gamma_strides = two;
        return 1 | A | NBWDT_GPU_UNSUPPORTED;
    /* the fused ReLU: reduce writes diff_src_add too, and needs it */
    case 43: *name = "reduce, add+ReLU (valid)"; nbwdt_bn_relu(d, a, b, NBWD_FUSE_ADD_RELU); return 1 | R;
    case 44: *name = "reduce, add+ReLU, diff_src_add NULL"; nbwdt_bn_relu(d, a, b, NBWD_FUSE_ADD_RELU);
        a->diff_src_add = NULL; return 1 | R;
    case 45: *name = "reduce, ReLU (valid)"; nbwdt_bn_relu(d, a, b, NBWD_FUSE_RELU); return 1 | R;
    case 46: *name = "reduce, ReLU, dst NULL"; nbwdt_bn_relu(d, a, b, NBWD_FUSE_RELU); a->dst = NULL; return 1 | R;
    case 47: *name = "reduce, add+ReLU, diff_src_add over sum_dy"; nbwdt_bn_relu(d, a, b, NBWD_FUSE_ADD_RELU);
        a->diff_src_add = b + NBWDT_SUM_DY; return 1 | R;
    case 48: *name = "reduce, add+ReLU in place diff_src_add == diff_dst, NCX (valid)";
        nbwdt_bn_relu(d, a, b, NBWD_FUSE_ADD_RELU); a->diff_src_add = b + 4096; d->layout = NBWD_NCX; return 1 | R;
    case 49: *name = "apply, add+ReLU (valid)"; nbwdt_bn_relu(d, a, b, NBWD_FUSE_ADD_RELU); return 1 | A;
    case 50: *name = "apply, add+ReLU, diff_src_add NULL"; nbwdt_bn_relu(d, a, b, NBWD_FUSE_ADD_RELU);
        a->diff_src_add = NULL; return 1 | A;
    case 51: *name = "apply, ReLU in place diff_src == dst (valid)"; nbwdt_bn_relu(d, a, b, NBWD_FUSE_RELU);
        a->diff_src = b + NBWDT_BN_DST; return 1 | A;
    case 52: *name = "apply, add+ReLU, diff_src_add over sum_dy_xhat"; nbwdt_bn_relu(d, a, b, NBWD_FUSE_ADD_RELU);
        a->diff_src_add = b + NBWDT_SUM_DYX - 8; return 1 | A;
    case 53: *name = "apply, add+ReLU, global statistics, dx alone (valid)"; nbwdt_bn_relu(d, a, b, NBWD_FUSE_ADD_RELU);
        d->flags |= NBWD_USE_GLOBAL_STATS; a->diff_gamma = a->diff_beta = NULL; return 1 | A;
    case 54: *name = "apply, dst without a ReLU flag"; a->dst = b + NBWDT_BN_DST; return 1 | A;
    default: return 0;
    }
}

/* GroupNorm NCX [2, 4, 3] f32, 2 groups (statistics [2, 2]): x 0, dy 4096,
   dx 8192, mean 12288, var 12800, gamma 13312, beta 13824, dgamma 14336,
   dbeta 14848; padded tensors at 20000. */
static void nbwdt_gn_base(nbwd_group_norm_bwd_desc *d, nbwd_group_norm_bwd_args *a, char *b) {
    int64_t dims[3] = {2, 4, 3};
    nbwd_group_norm_bwd_desc_init(d, 3, dims, NBWD_NCX, 2, 1e-5f);
    memset(a, 0, sizeof *a);
    a->src = b; a->diff_dst = b + 4096; a->diff_src = b + 8192; a->mean = b + 12288; a->variance = b + 12800;
    a->gamma = b + 13312; a->beta = b + 13824; a->diff_gamma = b + 14336; a->diff_beta = b + 14848;
}
static void nbwdt_gn_dst(nbwd_group_norm_bwd_desc *d, nbwd_group_norm_bwd_args *a) {
    d->stats_form = NBWD_STATS_DST_RSTD;
    a->dst = a->src; a->src = NULL; a->mean = NULL;
    a->rstd = a->variance; a->variance = NULL;
}
static void nbwdt_gn_nxc(nbwd_group_norm_bwd_desc *d) { /* [2, 3, 4]: C = 4 */
    d->layout = NBWD_NXC; d->dims[1] = 3; d->dims[2] = 4;
}

/* Flags as nbwdt_ln_case's (every valid GroupNorm input runs on the GPU:
   strided parameters and statistics included). */
static int nbwdt_gn_case(int i, nbwd_group_norm_bwd_desc *d, nbwd_group_norm_bwd_args *a, char *b, const char **name) {
    static const int64_t ncx_bad[3] = {24, 6, 2}, nxc_bad[3] = {24, 8, 2}, padded[3] = {16, 4, 1};
    static const int64_t self_overlap[3] = {12, 2, 1}, neg[3] = {-12, 3, 1}, two[1] = {2}, zero[1] = {0};
    static const int64_t stats_cm[2] = {1, 2}, stats_zero[2] = {0, 1}, big[5] = {2, 4, 3, 1, 2};
    switch (i) {
    case 0: *name = "valid (NCX, MEAN_VARIANCE, every output)"; return 1;
    case 1: *name = "desc NULL"; return 3;
    case 2: *name = "args NULL"; return 5;
    case 3: *name = "rank 1"; d->rank = 1; return 1;
    case 4: *name = "rank 9"; d->rank = 9; return 1;
    case 5: *name = "layout 5"; d->layout = (nbwd_layout)5; return 1;
    case 6: *name = "groups 0"; d->groups = 0; return 1;
    case 7: *name = "groups 3 (does not divide C = 4)"; d->groups = 3; return 1;
    case 8: *name = "groups -2"; d->groups = -2; return 1;
    case 9: *name = "InstanceNorm, groups = C (valid)"; d->groups = 4; return 1;
    case 10: *name = "groups 1 (valid)"; d->groups = 1; return 1;
    case 11: *name = "NXC (valid)"; nbwdt_gn_nxc(d); return 1;
    case 12: *name = "NXC, groups 3 (C = 4)"; nbwdt_gn_nxc(d); d->groups = 3; return 1;
    case 13: *name = "epsilon 0"; d->epsilon = 0.0f; return 1;
    case 14: *name = "epsilon NaN"; d->epsilon = (float)NAN; return 1;
    case 15: *name = "epsilon 0 in MEAN_RSTD form (valid)"; d->epsilon = 0.0f; d->stats_form = NBWD_STATS_MEAN_RSTD;
        a->rstd = a->variance; a->variance = NULL; return 1;
    case 16: *name = "NBWD_USE_GLOBAL_STATS (BatchNorm's)"; d->flags = NBWD_USE_GLOBAL_STATS; return 1;
    case 17: *name = "unknown flag"; d->flags = 64; return 1;
    case 18: *name = "stats form 5"; d->stats_form = (nbwd_stats_form)5; return 1;
    case 19: *name = "f32 data with bf16 stats"; d->stats_dtype = NBWD_BF16; return 1;
    case 20: *name = "bf16 data with f16 params"; d->data_dtype = NBWD_BF16; d->param_dtype = NBWD_F16; return 1;
    case 21: *name = "dtype 7"; d->data_dtype = (nbwd_dtype)7; return 1;
    case 22: *name = "bf16 everything (valid)"; d->data_dtype = d->stats_dtype = d->param_dtype = NBWD_BF16; return 1;
    case 23: *name = "f16 data, f32 stats and params (valid)"; d->data_dtype = NBWD_F16; return 1;
    case 24: *name = "num_threads -1"; d->num_threads = -1; return 1;
    case 25: *name = "isa 99"; d->isa = (nbwd_isa)99; return 1;
    case 26: *name = "zeroed desc stamp"; d->init_stamp = 0; return 1;
    case 27: *name = "NCX, spatial stride 2 (not dense)"; d->src_strides = ncx_bad; return 1;
    case 28: *name = "NXC, channel stride 2 (not dense)"; nbwdt_gn_nxc(d); d->diff_dst_strides = nxc_bad; return 1;
    case 29: *name = "padded outer strides (valid)"; d->diff_dst_strides = padded; a->diff_dst = b + 20000; return 1;
    case 30: *name = "diff_src overlapping itself"; d->diff_src_strides = self_overlap; return 1;
    case 31: *name = "negative sample stride (valid)"; d->src_strides = neg; a->src = b + 12 * 4; return 1;
    case 32: *name = "diff_src overlaps diff_dst partly"; a->diff_src = b + 4096 + 4; return 1;
    case 33: *name = "in place diff_src == diff_dst (valid)"; a->diff_src = b + 4096; return 1;
    case 34: *name = "in place diff_src == src (valid)"; a->diff_src = b; return 1;
    case 35: *name = "in place diff_src == src, but other strides"; a->diff_src = b; d->diff_src_strides = padded;
        return 1;
    case 36: *name = "diff_gamma overlaps gamma"; a->diff_gamma = b + 13312; return 1;
    case 37: *name = "diff_gamma == diff_beta"; a->diff_beta = b + 14336; return 1;
    case 38: *name = "diff_beta over the variance"; a->diff_beta = b + 12800 + 4; return 1;
    case 39: *name = "diff_gamma without affine"; d->use_affine = 0; a->diff_beta = NULL; return 1;
    case 40: *name = "diff_beta without affine"; d->use_affine = 0; a->diff_gamma = NULL; return 1;
    case 41: *name = "no affine, diff_src only (valid)"; d->use_affine = 0; a->diff_gamma = a->diff_beta = NULL;
        a->gamma = NULL; return 1;
    case 42: *name = "diff_dst NULL"; a->diff_dst = NULL; return 1;
    case 43: *name = "src NULL"; a->src = NULL; return 1;
    case 44: *name = "mean NULL"; a->mean = NULL; return 1;
    case 45: *name = "variance NULL"; a->variance = NULL; return 1;
    case 46: *name = "gamma NULL with diff_src"; a->gamma = NULL; return 1;
    case 47: *name = "gamma NULL without diff_src (valid)"; a->gamma = NULL; a->diff_src = NULL; return 1;
    case 48: *name = "diff_gamma alone (valid)"; a->diff_src = a->diff_beta = NULL; return 1;
    case 49: *name = "diff_beta alone (valid)"; a->diff_src = a->diff_gamma = NULL; return 1;
    case 50: *name = "no outputs (valid)"; a->diff_src = a->diff_gamma = a->diff_beta = NULL; return 1;
    case 51: *name = "xhat given in MEAN_VARIANCE form"; a->xhat = b + 30000; return 1;
    case 52: *name = "rstd given in MEAN_VARIANCE form"; a->rstd = b + 30000; return 1;
    case 53: *name = "MEAN_RSTD form (valid)"; d->stats_form = NBWD_STATS_MEAN_RSTD; a->rstd = a->variance;
        a->variance = NULL; return 1;
    case 54: *name = "XHAT_STD form (valid)"; d->stats_form = NBWD_STATS_XHAT_STD; a->xhat = a->src; a->src = NULL;
        a->std = a->variance; a->variance = NULL; a->mean = NULL; return 1;
    case 55: *name = "XHAT_STD form with mean given"; d->stats_form = NBWD_STATS_XHAT_STD; a->xhat = a->src;
        a->src = NULL; a->std = a->variance; a->variance = NULL; return 1;
    case 56: *name = "DST_RSTD (valid)"; nbwdt_gn_dst(d, a); return 1;
    case 57: *name = "DST_RSTD without beta (valid)"; nbwdt_gn_dst(d, a); a->beta = NULL; return 1;
    case 58: *name = "DST_RSTD with dst NULL"; nbwdt_gn_dst(d, a); a->dst = NULL; return 1;
    case 59: *name = "DST_RSTD with src given"; nbwdt_gn_dst(d, a); a->src = b + 30000; return 1;
    case 60: *name = "DST_RSTD with rstd NULL"; nbwdt_gn_dst(d, a); a->rstd = NULL; return 1;
    case 61: *name = "DST_RSTD, gamma NULL with diff_gamma only"; nbwdt_gn_dst(d, a); a->gamma = NULL;
        a->diff_src = a->diff_beta = NULL; return 1;
    case 62: *name = "DST_RSTD, gamma NULL with diff_beta only (valid)"; nbwdt_gn_dst(d, a); a->gamma = NULL;
        a->diff_src = a->diff_gamma = NULL; return 1;
    case 63: *name = "DST_RSTD, beta over diff_gamma"; nbwdt_gn_dst(d, a); a->beta = b + 14336 + 4; return 1;
    case 64: *name = "DST_RSTD, beta over diff_gamma, diff_beta alone (valid: beta not read)"; nbwdt_gn_dst(d, a);
        a->beta = b + 14336 + 4; a->diff_src = a->diff_gamma = NULL; return 1;
    case 65: *name = "DST_RSTD without affine (valid)"; nbwdt_gn_dst(d, a); d->use_affine = 0;
        a->gamma = a->beta = NULL; a->diff_gamma = a->diff_beta = NULL; return 1;
    case 66: *name = "DST_RSTD, in place diff_src == dst (valid)"; nbwdt_gn_dst(d, a); a->diff_src = b; return 1;
    case 67: *name = "DST_RSTD with strided beta, NXC, bf16 (valid)"; nbwdt_gn_dst(d, a); nbwdt_gn_nxc(d);
        d->beta_strides = two; d->data_dtype = d->param_dtype = NBWD_BF16; return 1;
    case 68: *name = "strided gamma (valid)"; d->gamma_strides = two; return 1;
    case 69: *name = "strided diff_gamma and diff_beta (valid)"; d->diff_gamma_strides = two;
        d->diff_beta_strides = two; a->diff_beta = b + 15360; return 1;
    case 70: *name = "diff_beta stride 0 (overlapping itself)"; d->diff_beta_strides = zero; return 1;
    case 71: *name = "gamma stride 0 (valid: an input)"; d->gamma_strides = zero; return 1;
    case 72: *name = "statistics column-major (valid)"; d->mean_strides = stats_cm; d->var_strides = stats_cm;
        return 1;
    case 73: *name = "statistics with a zero sample stride (valid: inputs)"; d->mean_strides = stats_zero; return 1;
    case 74: *name = "empty batch (valid)"; d->dims[0] = 0; return 1;
    case 75: *name = "empty batch, NULL tensors (valid)"; d->dims[0] = 0; a->src = a->diff_dst = a->diff_src = NULL;
        a->mean = a->variance = NULL; return 1;
    case 76: *name = "empty batch, accumulate (valid)"; d->dims[0] = 0; d->flags = NBWD_ACCUMULATE_PARAM_GRADS;
        return 1;
    case 77: *name = "no spatial positions (valid)"; d->dims[2] = 0; return 1;
    case 78: *name = "no channels, groups 2 (valid)"; d->dims[1] = 0; return 1;
    case 79: *name = "accumulate (valid)"; d->flags = NBWD_ACCUMULATE_PARAM_GRADS; return 1;
    case 80: *name = "dim overflow"; d->dims[0] = (int64_t)1 << 40; d->dims[2] = (int64_t)1 << 40; return 1;
    case 81: *name = "negative dim"; d->dims[2] = -1; return 1;
    case 82: *name = "rank 5 NCX (valid)"; d->rank = 5; memcpy(d->dims, big, sizeof big); return 1;
    case 83: *name = "rank 2 [N, C] NXC (valid)"; d->rank = 2; d->layout = NBWD_NXC; d->dims[1] = 4; return 1;
    case 84: *name = "rank 2 [N, C] NCX, InstanceNorm (valid)"; d->rank = 2; d->groups = 4; return 1;
    default: return 0;
    }
}

#ifndef NBWDT_SYNC
#define NBWDT_SYNC() ((void)0)
#endif

/* Runs both tables. cpu_arena: host; gpu_arena: where the GPU call's
   tensors live. ok_status: what a valid GPU call returns here. */
/* After a rejection by both: the GPU entry point's message is the CPU's
   with the GPU entry's name, in both last-error strings. */
static void nbwdt_same_message(const char *cpu_msg, const char *cpu_entry, const char *gpu_entry, const char *name) {
    char want[600], what[1500];
    const size_t skip = strlen(cpu_entry) + 2;
    snprintf(want, sizeof want, "%s: %s", gpu_entry, strlen(cpu_msg) > skip ? cpu_msg + skip : "");
    snprintf(what, sizeof what, "%.100s: message \"%.440s\", expected \"%.440s\" (nbwd_last_error \"%.440s\")", name,
             nbwd_gpu_last_error(), want, nbwd_last_error());
    nbwdt_check(strncmp(cpu_msg, cpu_entry, strlen(cpu_entry)) == 0 && strcmp(nbwd_gpu_last_error(), want) == 0 &&
                    strcmp(nbwd_last_error(), want) == 0,
                what);
}

/* One case's statuses: the GPU gives the CPU's refusal, or ok_status where
   the CPU takes the input, or (NBWDT_GPU_UNSUPPORTED) NBWD_ERR_UNSUPPORTED
   where the CPU takes it and the GPU path does not, saying which strides. */
static void nbwdt_expect(nbwd_status sc, nbwd_status sg, int f, nbwd_status ok_status, const char *op,
                         const char *gpu_entry, const char *name) {
    char what[400], prefix[100];
    const nbwd_status want = (f & NBWDT_GPU_UNSUPPORTED) ? NBWD_ERR_UNSUPPORTED : sc != NBWD_OK ? sc : ok_status;
    snprintf(what, sizeof what, "%s status: %s: cpu %d gpu %d (expected %d)", op, name, (int)sc, (int)sg, (int)want);
    nbwdt_check(sg == want && (!(f & NBWDT_GPU_UNSUPPORTED) || sc == NBWD_OK), what);
    if (f & NBWDT_GPU_UNSUPPORTED) {
        snprintf(prefix, sizeof prefix, "%s: NBWD_ERR_UNSUPPORTED: desc.", gpu_entry);
        snprintf(what, sizeof what, "%s: %s: the GPU message names the strides: \"%.250s\"", op, name,
                 nbwd_gpu_last_error());
        nbwdt_check(strncmp(nbwd_gpu_last_error(), prefix, strlen(prefix)) == 0 &&
                        strstr(nbwd_gpu_last_error(), "_strides") != NULL,
                    what);
    }
}

/* What the CPU path takes and the GPU path refuses (NBWD_ERR_UNSUPPORTED,
   from the call and the size query, naming what): LayerNorm's, RMSNorm's
   and GroupNorm's NBWD_STATS_NONE form (src alone), and
   NBWD_ACCUMULATE_DIFF_SRC. */
static void nbwdt_cpu_only_cases(char *cpu_arena, char *gpu_arena) {
    void *cpu_ws = malloc(1 << 20);
    int k;
    for (k = 0; k < 3; ++k) { /* LayerNorm NONE, RMSNorm NONE, LayerNorm accumulating diff_src */
        nbwd_layer_norm_bwd_desc d1, d2;
        nbwd_layer_norm_bwd_args a1, a2;
        nbwd_rms_norm_bwd_args r1, r2;
        const char *want = k == 2 ? "NBWD_ACCUMULATE_DIFF_SRC" : "NBWD_STATS_NONE";
        char what[300];
        size_t need = 0;
        nbwd_status sc, sg, sq;
        nbwdt_ln_base(&d1, &a1, cpu_arena);
        nbwdt_ln_base(&d2, &a2, gpu_arena);
        if (k == 1) {
            int64_t dims[2] = {4, 8};
            nbwd_rms_norm_bwd_desc_init(&d1, 2, dims);
            nbwd_rms_norm_bwd_desc_init(&d2, 2, dims);
        }
        if (k < 2) {
            d1.stats_form = d2.stats_form = NBWD_STATS_NONE;
            a1.mean = a1.variance = a2.mean = a2.variance = NULL;
        } else {
            d1.flags = d2.flags = NBWD_ACCUMULATE_DIFF_SRC;
        }
        a1.beta = a2.beta = NULL;
        memset(&r1, 0, sizeof r1);
        r1.src = a1.src; r1.diff_dst = a1.diff_dst; r1.gamma = a1.gamma; r1.diff_src = a1.diff_src;
        r1.diff_gamma = a1.diff_gamma; r1.diff_beta = a1.diff_beta;
        memset(&r2, 0, sizeof r2);
        r2.src = a2.src; r2.diff_dst = a2.diff_dst; r2.gamma = a2.gamma; r2.diff_src = a2.diff_src;
        r2.diff_gamma = a2.diff_gamma; r2.diff_beta = a2.diff_beta;
        sc = k == 1 ? nbwd_rms_norm_bwd(&d1, &r1, cpu_ws, 1 << 20) : nbwd_layer_norm_bwd(&d1, &a1, cpu_ws, 1 << 20);
        sq = k == 1 ? nbwd_gpu_rms_norm_bwd_workspace_size(&d2, &need) : nbwd_gpu_layer_norm_bwd_workspace_size(&d2, &need);
        snprintf(what, sizeof what, "%s %s: the CPU takes it (%d), the GPU size query refuses it (%d): %.150s",
                 k == 1 ? "RMSNorm" : "LayerNorm", want, (int)sc, (int)sq, nbwd_gpu_last_error());
        nbwdt_check(sc == NBWD_OK && sq == NBWD_ERR_UNSUPPORTED && strstr(nbwd_gpu_last_error(), want) != NULL, what);
        sg = k == 1 ? nbwd_gpu_rms_norm_bwd(&d2, &r2, gpu_arena + NBWDT_GPU_WS_OFF, 1 << 16, NULL)
                    : nbwd_gpu_layer_norm_bwd(&d2, &a2, gpu_arena + NBWDT_GPU_WS_OFF, 1 << 16, NULL);
        snprintf(what, sizeof what, "%s %s: the GPU call refuses it (%d): %.150s", k == 1 ? "RMSNorm" : "LayerNorm",
                 want, (int)sg, nbwd_gpu_last_error());
        nbwdt_check(sg == NBWD_ERR_UNSUPPORTED && strstr(nbwd_gpu_last_error(), want) != NULL, what);
    }
    {
        nbwd_group_norm_bwd_desc d1, d2;
        nbwd_group_norm_bwd_args a1, a2;
        size_t need = 0;
        nbwd_status sc, sg, sq;
        char what[300];
        nbwdt_gn_base(&d1, &a1, cpu_arena);
        nbwdt_gn_base(&d2, &a2, gpu_arena);
        d1.stats_form = d2.stats_form = NBWD_STATS_NONE;
        a1.mean = a1.variance = a2.mean = a2.variance = NULL;
        a1.beta = a2.beta = NULL;
        sc = nbwd_group_norm_bwd(&d1, &a1, cpu_ws, 1 << 20);
        sq = nbwd_gpu_group_norm_bwd_workspace_size(&d2, &need);
        sg = nbwd_gpu_group_norm_bwd(&d2, &a2, gpu_arena + NBWDT_GPU_WS_OFF, 1 << 16, NULL);
        snprintf(what, sizeof what, "GroupNorm NBWD_STATS_NONE: CPU %d, GPU query %d and call %d: %.150s", (int)sc,
                 (int)sq, (int)sg, nbwd_gpu_last_error());
        nbwdt_check(sc == NBWD_OK && sq == NBWD_ERR_UNSUPPORTED && sg == NBWD_ERR_UNSUPPORTED &&
                        strstr(nbwd_gpu_last_error(), "NBWD_STATS_NONE") != NULL,
                    what);
    }
    /* what the descriptor alone makes unsupported, the workspace query
       refuses too (k: LayerNorm strided gamma, BatchNorm strided gamma,
       BatchNorm strided mean); GroupNorm's strided gamma is taken */
    for (k = 0; k < 4; ++k) {
        static const int64_t two[1] = {2};
        size_t need = 0;
        nbwd_status sq;
        char what[300];
        const char *want = k == 2 ? "dense mean" : "desc.gamma_strides";
        if (k == 0) {
            nbwd_layer_norm_bwd_desc d;
            nbwd_layer_norm_bwd_args a;
            nbwdt_ln_base(&d, &a, gpu_arena);
            d.gamma_strides = two;
            sq = nbwd_gpu_layer_norm_bwd_workspace_size(&d, &need);
        } else if (k < 3) {
            nbwd_batch_norm_bwd_desc d;
            nbwd_batch_norm_bwd_args a;
            nbwdt_bn_base(&d, &a, gpu_arena);
            if (k == 1) d.gamma_strides = two;
            else d.mean_strides = two;
            sq = nbwd_gpu_batch_norm_bwd_workspace_size(&d, &need);
        } else {
            nbwd_group_norm_bwd_desc d;
            nbwd_group_norm_bwd_args a;
            nbwdt_gn_base(&d, &a, gpu_arena);
            d.gamma_strides = two;
            sq = nbwd_gpu_group_norm_bwd_workspace_size(&d, &need);
        }
        snprintf(what, sizeof what, "%s: the GPU workspace query %s it (%d): %.150s",
                 k == 0 ? "LayerNorm strided gamma" : k == 1 ? "BatchNorm strided gamma"
                 : k == 2 ? "BatchNorm strided mean" : "GroupNorm strided gamma",
                 k == 3 ? "takes" : "refuses", (int)sq, nbwd_gpu_last_error());
        nbwdt_check(k == 3 ? sq == NBWD_OK
                           : sq == NBWD_ERR_UNSUPPORTED && strstr(nbwd_gpu_last_error(), want) != NULL, what);
    }
    free(cpu_ws);
}

static void nbwdt_status_cases(char *cpu_arena, char *gpu_arena, nbwd_status ok_status) {
    char cpu_msg[600];
    void *cpu_ws = malloc(1 << 20);
    const char *name;
    int i, f;
    for (i = 0;; ++i) {
        nbwd_layer_norm_bwd_desc d1, d2;
        nbwd_layer_norm_bwd_args a1, a2;
        nbwd_status sc, sg;
        size_t need = 0;
        nbwdt_ln_base(&d1, &a1, cpu_arena);
        nbwdt_ln_base(&d2, &a2, gpu_arena);
        if (!(f = nbwdt_ln_case(i, &d1, &a1, cpu_arena, &name))) break;
        nbwdt_ln_case(i, &d2, &a2, gpu_arena, &name);
        if (nbwd_gpu_layer_norm_bwd_workspace_size(&d2, &need) != NBWD_OK) need = 0;
        sc = nbwd_layer_norm_bwd((f & 2) ? NULL : &d1, (f & 4) ? NULL : &a1, cpu_ws, 1 << 20);
        snprintf(cpu_msg, sizeof cpu_msg, "%s", nbwd_last_error());
        sg = nbwd_gpu_layer_norm_bwd((f & 2) ? NULL : &d2, (f & 4) ? NULL : &a2, gpu_arena + NBWDT_GPU_WS_OFF,
                                     need, NULL);
        if (sg == NBWD_OK) NBWDT_SYNC();
        if (sc != NBWD_OK && sg == sc) nbwdt_same_message(cpu_msg, "nbwd_layer_norm_bwd", "nbwd_gpu_layer_norm_bwd", name);
        nbwdt_expect(sc, sg, f, ok_status, "LayerNorm", "nbwd_gpu_layer_norm_bwd", name);
    }
    /* RMSNorm: the LayerNorm table through the RMSNorm entry points (its
       own descriptor stamp; the args without mean, the variance as the mean
       square), CPU against GPU as above */
    for (i = 0;; ++i) {
        nbwd_rms_norm_bwd_desc d1, d2, stamp;
        nbwd_layer_norm_bwd_args l1, l2;
        nbwd_rms_norm_bwd_args a1, a2;
        nbwd_status sc, sg;
        size_t need = 0;
        nbwdt_ln_base(&d1, &l1, cpu_arena);
        nbwdt_ln_base(&d2, &l2, gpu_arena);
        if (!(f = nbwdt_ln_case(i, &d1, &l1, cpu_arena, &name))) break;
        nbwdt_ln_case(i, &d2, &l2, gpu_arena, &name);
        nbwd_rms_norm_bwd_desc_init(&stamp, 1, NULL);
        d1.init_stamp = d2.init_stamp = stamp.init_stamp;
        memset(&a1, 0, sizeof a1);
        a1.src = l1.src; a1.xhat = l1.xhat; a1.diff_dst = l1.diff_dst; a1.mean_square = l1.variance;
        a1.rstd = l1.rstd; a1.std = l1.std; a1.gamma = l1.gamma; a1.diff_src = l1.diff_src;
        a1.diff_gamma = l1.diff_gamma; a1.diff_beta = l1.diff_beta;
        a1.beta = l1.beta; a1.dst = l1.dst; a1.diff_residual = l1.diff_residual;
        memset(&a2, 0, sizeof a2);
        a2.src = l2.src; a2.xhat = l2.xhat; a2.diff_dst = l2.diff_dst; a2.mean_square = l2.variance;
        a2.rstd = l2.rstd; a2.std = l2.std; a2.gamma = l2.gamma; a2.diff_src = l2.diff_src;
        a2.diff_gamma = l2.diff_gamma; a2.diff_beta = l2.diff_beta;
        a2.beta = l2.beta; a2.dst = l2.dst; a2.diff_residual = l2.diff_residual;
        if (nbwd_gpu_rms_norm_bwd_workspace_size(&d2, &need) != NBWD_OK) need = 0;
        sc = nbwd_rms_norm_bwd((f & 2) ? NULL : &d1, (f & 4) ? NULL : &a1, cpu_ws, 1 << 20);
        snprintf(cpu_msg, sizeof cpu_msg, "%s", nbwd_last_error());
        sg = nbwd_gpu_rms_norm_bwd((f & 2) ? NULL : &d2, (f & 4) ? NULL : &a2, gpu_arena + NBWDT_GPU_WS_OFF,
                                   need, NULL);
        if (sg == NBWD_OK) NBWDT_SYNC();
        if (sc != NBWD_OK && sg == sc) nbwdt_same_message(cpu_msg, "nbwd_rms_norm_bwd", "nbwd_gpu_rms_norm_bwd", name);
        nbwdt_expect(sc, sg, f, ok_status, "RMSNorm", "nbwd_gpu_rms_norm_bwd", name);
    }
    { /* a LayerNorm descriptor is refused by the RMSNorm entry points, in the same words */
        nbwd_layer_norm_bwd_desc d;
        nbwd_layer_norm_bwd_args l;
        size_t need = 0;
        nbwdt_ln_base(&d, &l, gpu_arena);
        nbwdt_check(nbwd_gpu_rms_norm_bwd_workspace_size(&d, &need) == NBWD_ERR_NOT_INITIALIZED &&
                        strstr(nbwd_gpu_last_error(), "nbwd_gpu_rms_norm_bwd_workspace_size: NBWD_ERR_NOT_INITIALIZED") ==
                            nbwd_gpu_last_error(),
                    "RMSNorm GPU workspace query refuses a LayerNorm descriptor");
    }
    for (i = 0;; ++i) {
        nbwd_batch_norm_bwd_desc d1, d2;
        nbwd_batch_norm_bwd_args a1, a2;
        nbwd_status sc, sg;
        size_t need = 0;
        nbwdt_bn_base(&d1, &a1, cpu_arena);
        nbwdt_bn_base(&d2, &a2, gpu_arena);
        if (!(f = nbwdt_bn_case(i, &d1, &a1, cpu_arena, &name))) break;
        nbwdt_bn_case(i, &d2, &a2, gpu_arena, &name);
        if (nbwd_gpu_batch_norm_bwd_workspace_size(&d2, &need) != NBWD_OK) need = 0;
        sc = nbwd_batch_norm_bwd((f & 2) ? NULL : &d1, (f & 4) ? NULL : &a1, cpu_ws, 1 << 20);
        snprintf(cpu_msg, sizeof cpu_msg, "%s", nbwd_last_error());
        sg = nbwd_gpu_batch_norm_bwd((f & 2) ? NULL : &d2, (f & 4) ? NULL : &a2, gpu_arena + NBWDT_GPU_WS_OFF, need,
                                     NULL);
        if (sg == NBWD_OK) NBWDT_SYNC();
        if (sc != NBWD_OK && sg == sc) nbwdt_same_message(cpu_msg, "nbwd_batch_norm_bwd", "nbwd_gpu_batch_norm_bwd", name);
        nbwdt_expect(sc, sg, f, ok_status, "BatchNorm", "nbwd_gpu_batch_norm_bwd", name);
    }
    /* the two phases: the CPU's two calls against the GPU's (the GPU's
       sums in gpu_arena); a refused reduce leaves the count alone, one
       that succeeds writes 6 (not where the stub or no device refuses) */
    for (i = 0;; ++i) {
        nbwd_batch_norm_bwd_desc d1, d2;
        nbwd_batch_norm_bwd_args a1, a2;
        float *s1dy, *s1dyx, *s2dy, *s2dyx;
        int64_t n1, n2, c1 = -7, c2 = -7;
        nbwd_status sc, sg;
        size_t need = 0;
        int apply;
        const char *entry, *gentry;
        nbwdt_bn_base(&d1, &a1, cpu_arena);
        nbwdt_bn_base(&d2, &a2, gpu_arena);
        if (!(f = nbwdt_bn2_case(i, &d1, &a1, cpu_arena, &s1dy, &s1dyx, &n1, &name))) break;
        nbwdt_bn2_case(i, &d2, &a2, gpu_arena, &s2dy, &s2dyx, &n2, &name);
        apply = (f & NBWDT_TP_APPLY) != 0;
        entry = apply ? "nbwd_batch_norm_bwd_apply" : "nbwd_batch_norm_bwd_reduce";
        gentry = apply ? "nbwd_gpu_batch_norm_bwd_apply" : "nbwd_gpu_batch_norm_bwd_reduce";
        if (nbwd_gpu_batch_norm_bwd_workspace_size(&d2, &need) != NBWD_OK) need = 0;
        if (apply) {
            sc = nbwd_batch_norm_bwd_apply((f & 2) ? NULL : &d1, (f & 4) ? NULL : &a1, s1dy, s1dyx, n1, cpu_ws, 1 << 20);
            snprintf(cpu_msg, sizeof cpu_msg, "%s", nbwd_last_error());
            sg = nbwd_gpu_batch_norm_bwd_apply((f & 2) ? NULL : &d2, (f & 4) ? NULL : &a2, s2dy, s2dyx, n2,
                                               gpu_arena + NBWDT_GPU_WS_OFF, need, NULL);
        } else {
            sc = nbwd_batch_norm_bwd_reduce((f & 2) ? NULL : &d1, (f & 4) ? NULL : &a1, s1dy, s1dyx,
                                            (f & NBWDT_TP_NO_COUNT) ? NULL : &c1, cpu_ws, 1 << 20);
            snprintf(cpu_msg, sizeof cpu_msg, "%s", nbwd_last_error());
            sg = nbwd_gpu_batch_norm_bwd_reduce((f & 2) ? NULL : &d2, (f & 4) ? NULL : &a2, s2dy, s2dyx,
                                                (f & NBWDT_TP_NO_COUNT) ? NULL : &c2, gpu_arena + NBWDT_GPU_WS_OFF,
                                                need, NULL);
        }
        if (sg == NBWD_OK) NBWDT_SYNC();
        if (sc != NBWD_OK && sg == sc) nbwdt_same_message(cpu_msg, entry, gentry, name);
        nbwdt_expect(sc, sg, f, ok_status, "BatchNorm two-phase", gentry, name);
        if (!apply && !(f & NBWDT_TP_NO_COUNT)) {
            char what[300];
            snprintf(what, sizeof what, "BatchNorm two-phase: %s: count %lld (CPU %lld)", name, (long long)c2,
                     (long long)c1);
            nbwdt_check(sg == NBWD_OK ? c2 == c1 : c2 == -7, what);
        }
    }
    /* GroupNorm and InstanceNorm */
    for (i = 0;; ++i) {
        nbwd_group_norm_bwd_desc d1, d2;
        nbwd_group_norm_bwd_args a1, a2;
        nbwd_status sc, sg;
        size_t need = 0;
        nbwdt_gn_base(&d1, &a1, cpu_arena);
        nbwdt_gn_base(&d2, &a2, gpu_arena);
        if (!(f = nbwdt_gn_case(i, &d1, &a1, cpu_arena, &name))) break;
        nbwdt_gn_case(i, &d2, &a2, gpu_arena, &name);
        if (nbwd_gpu_group_norm_bwd_workspace_size(&d2, &need) != NBWD_OK) need = 0;
        sc = nbwd_group_norm_bwd((f & 2) ? NULL : &d1, (f & 4) ? NULL : &a1, cpu_ws, 1 << 20);
        snprintf(cpu_msg, sizeof cpu_msg, "%s", nbwd_last_error());
        sg = nbwd_gpu_group_norm_bwd((f & 2) ? NULL : &d2, (f & 4) ? NULL : &a2, gpu_arena + NBWDT_GPU_WS_OFF, need,
                                     NULL);
        if (sg == NBWD_OK) NBWDT_SYNC();
        if (sc != NBWD_OK && sg == sc) nbwdt_same_message(cpu_msg, "nbwd_group_norm_bwd", "nbwd_gpu_group_norm_bwd", name);
        nbwdt_expect(sc, sg, f, ok_status, "GroupNorm", "nbwd_gpu_group_norm_bwd", name);
        if (!(f & 2)) { /* the size query refuses what the CPU's refuses, in its words */
            size_t b1 = 0, b2 = 0;
            char what[300];
            nbwd_status qc = nbwd_group_norm_bwd_workspace_size(&d1, &b1), qg;
            snprintf(cpu_msg, sizeof cpu_msg, "%s", nbwd_last_error());
            qg = nbwd_gpu_group_norm_bwd_workspace_size(&d2, &b2);
            snprintf(what, sizeof what, "GroupNorm workspace query status: %s: cpu %d gpu %d", name, (int)qc, (int)qg);
            nbwdt_check(qc == qg, what);
            if (qc != NBWD_OK && qg == qc)
                nbwdt_same_message(cpu_msg, "nbwd_group_norm_bwd_workspace_size",
                                   "nbwd_gpu_group_norm_bwd_workspace_size", name);
        }
    }
    { /* GPU workspace rules */
        nbwd_layer_norm_bwd_desc d;
        nbwd_layer_norm_bwd_args a;
        nbwd_batch_norm_bwd_desc bd;
        nbwd_batch_norm_bwd_args ba;
        size_t need = 0, need2 = 1;
        nbwdt_ln_base(&d, &a, gpu_arena);
        nbwdt_check(nbwd_gpu_layer_norm_bwd_workspace_size(&d, &need) == NBWD_OK && need > 0,
                    "LayerNorm workspace query: nonzero with affine");
        nbwdt_check(nbwd_gpu_layer_norm_bwd_workspace_size(&d, NULL) == NBWD_ERR_NULL_POINTER,
                    "LayerNorm workspace query: NULL bytes");
        nbwdt_check(nbwd_gpu_layer_norm_bwd(&d, &a, NULL, 0, NULL) == NBWD_ERR_INSUFFICIENT_WORKSPACE,
                    "LayerNorm: NULL workspace with nonzero need");
        nbwdt_check(strncmp(nbwd_gpu_last_error(), "nbwd_gpu_layer_norm_bwd: NBWD_ERR_INSUFFICIENT_WORKSPACE: workspace is NULL", 75) == 0,
                    "LayerNorm: NULL workspace: the message names the entry, the status and the workspace");
        nbwdt_check(nbwd_gpu_layer_norm_bwd(&d, &a, gpu_arena + NBWDT_GPU_WS_OFF, need - 1, NULL) ==
                        NBWD_ERR_INSUFFICIENT_WORKSPACE,
                    "LayerNorm: workspace one byte short");
        d.stats_form = NBWD_STATS_DST_RSTD;
        d.diff_residual_strides = NULL;
        nbwdt_check(nbwd_gpu_layer_norm_bwd_workspace_size(&d, &need2) == NBWD_OK && need2 == need,
                    "LayerNorm workspace query: the DST_RSTD form needs no more");
        {
            nbwd_rms_norm_bwd_desc rd;
            nbwd_rms_norm_bwd_desc_init(&rd, d.rank, d.dims);
            rd.stats_form = NBWD_STATS_DST_RSTD;
            nbwdt_check(nbwd_gpu_rms_norm_bwd_workspace_size(&rd, &need2) == NBWD_OK && need2 == need,
                        "RMSNorm workspace query: the DST_RSTD form needs no more");
        }
        d.stats_form = NBWD_STATS_MEAN_VARIANCE;
        d.use_affine = 0;
        a.diff_gamma = a.diff_beta = NULL;
        a.gamma = a.beta = NULL; /* (refused with use_affine = 0: nothing reads them) */
        nbwdt_check(nbwd_gpu_layer_norm_bwd_workspace_size(&d, &need2) == NBWD_OK && need2 == 0,
                    "LayerNorm workspace query: 0 without affine");
        {
            nbwd_layer_norm_bwd_args r = a;
            nbwd_status s;
            nbwdt_ln_dst(&d, &r);
            r.gamma = r.beta = NULL;
            r.diff_residual = gpu_arena + 16384;
            nbwdt_check(nbwd_gpu_layer_norm_bwd_workspace_size(&d, &need2) == NBWD_OK && need2 == 0,
                        "LayerNorm workspace query: 0 without affine in the DST_RSTD form");
            s = nbwd_gpu_layer_norm_bwd(&d, &r, NULL, 0, NULL);
            if (s == NBWD_OK) NBWDT_SYNC();
            nbwdt_check(s == ok_status, "LayerNorm: DST_RSTD and a residual without affine: no workspace");
            d.stats_form = NBWD_STATS_MEAN_VARIANCE;
        }
        {
            nbwd_status s = nbwd_gpu_layer_norm_bwd(&d, &a, NULL, 0, NULL);
            if (s == NBWD_OK) NBWDT_SYNC();
            nbwdt_check(s == ok_status, "LayerNorm: NULL workspace when none is needed");
        }
        d.rank = 0;
        nbwdt_check(nbwd_gpu_layer_norm_bwd_workspace_size(&d, &need2) == NBWD_ERR_BAD_PARAM,
                    "LayerNorm workspace query: bad desc");
        nbwdt_bn_base(&bd, &ba, gpu_arena);
        nbwdt_check(nbwd_gpu_batch_norm_bwd_workspace_size(&bd, &need) == NBWD_OK && need > 0,
                    "BatchNorm workspace query: nonzero");
        nbwdt_check(nbwd_gpu_batch_norm_bwd(&bd, &ba, NULL, 0, NULL) == NBWD_ERR_INSUFFICIENT_WORKSPACE,
                    "BatchNorm: NULL workspace");
        nbwdt_check(nbwd_gpu_batch_norm_bwd(&bd, &ba, gpu_arena + NBWDT_GPU_WS_OFF, need - 1, NULL) ==
                        NBWD_ERR_INSUFFICIENT_WORKSPACE,
                    "BatchNorm: workspace one byte short");
        { /* the fused ReLU: NBWD_FUSE_RELU stages the masked diff_dst (24
             elements) in the workspace, NBWD_FUSE_ADD_RELU in diff_src_add */
            nbwd_batch_norm_bwd_desc rd = bd;
            nbwd_batch_norm_bwd_args ra = ba;
            size_t rneed = 0;
            nbwd_status s;
            nbwdt_bn_relu(&rd, &ra, gpu_arena, NBWD_FUSE_RELU);
            nbwdt_check(nbwd_gpu_batch_norm_bwd_workspace_size(&rd, &rneed) == NBWD_OK && rneed >= need + 24 * 4,
                        "BatchNorm workspace query: NBWD_FUSE_RELU adds room for the masked diff_dst");
            nbwdt_check(nbwd_gpu_batch_norm_bwd(&rd, &ra, gpu_arena + NBWDT_GPU_WS_OFF, rneed - 1, NULL) ==
                            NBWD_ERR_INSUFFICIENT_WORKSPACE,
                        "BatchNorm ReLU: workspace one byte short");
            s = nbwd_gpu_batch_norm_bwd(&rd, &ra, gpu_arena + NBWDT_GPU_WS_OFF, rneed, NULL);
            if (s == NBWD_OK) NBWDT_SYNC();
            nbwdt_check(s == ok_status, "BatchNorm ReLU: the queried workspace");
            ra.diff_src = ra.diff_gamma = ra.diff_beta = NULL;
            nbwdt_check(nbwd_gpu_batch_norm_bwd(&rd, &ra, gpu_arena + NBWDT_GPU_WS_OFF, rneed - 1, NULL) ==
                            NBWD_ERR_INSUFFICIENT_WORKSPACE,
                        "BatchNorm ReLU without outputs: the workspace is still checked (as every call)");
            rd.flags = NBWD_FUSE_ADD_RELU;
            nbwdt_check(nbwd_gpu_batch_norm_bwd_workspace_size(&rd, &rneed) == NBWD_OK && rneed == need,
                        "BatchNorm workspace query: NBWD_FUSE_ADD_RELU needs no more (diff_src_add holds the masked "
                        "diff_dst)");
            rd.dims[0] = 0;
            nbwdt_check(nbwd_gpu_batch_norm_bwd_workspace_size(&rd, &rneed) == NBWD_OK && rneed == 0,
                        "BatchNorm workspace query: an empty batch with the fused ReLU needs none");
        }
        {
            float *sdy = (float *)(gpu_arena + NBWDT_SUM_DY), *sdyx = (float *)(gpu_arena + NBWDT_SUM_DYX);
            nbwd_batch_norm_bwd_args ra = ba;
            int64_t count = -7;
            nbwd_status s;
            ra.diff_src = ra.diff_gamma = ra.diff_beta = NULL;
            nbwdt_check(nbwd_gpu_batch_norm_bwd_reduce(&bd, &ra, sdy, sdyx, &count, NULL, 0, NULL) ==
                                NBWD_ERR_INSUFFICIENT_WORKSPACE &&
                            count == -7,
                        "BatchNorm reduce: NULL workspace (the plain call's size), count untouched");
            nbwdt_check(nbwd_gpu_batch_norm_bwd_reduce(&bd, &ra, sdy, sdyx, &count, gpu_arena + NBWDT_GPU_WS_OFF,
                                                       need - 1, NULL) == NBWD_ERR_INSUFFICIENT_WORKSPACE,
                        "BatchNorm reduce: workspace one byte short");
            nbwdt_check(strncmp(nbwd_gpu_last_error(), "nbwd_gpu_batch_norm_bwd_reduce: NBWD_ERR_INSUFFICIENT_WORKSPACE", 63) == 0,
                        "BatchNorm reduce: the message names the entry and the status");
            nbwdt_check(nbwd_gpu_batch_norm_bwd_apply(&bd, &ba, sdy, sdyx, 6, NULL, 0, NULL) ==
                            NBWD_ERR_INSUFFICIENT_WORKSPACE,
                        "BatchNorm apply: NULL workspace");
            nbwdt_check(nbwd_gpu_batch_norm_bwd_apply(&bd, &ba, sdy, sdyx, 6, gpu_arena + NBWDT_GPU_WS_OFF, need - 1,
                                                      NULL) == NBWD_ERR_INSUFFICIENT_WORKSPACE,
                        "BatchNorm apply: workspace one byte short");
            bd.dims[0] = 0; /* an empty slice: no workspace */
            s = nbwd_gpu_batch_norm_bwd_apply(&bd, &ba, sdy, sdyx, 6, NULL, 0, NULL);
            if (s == NBWD_OK) NBWDT_SYNC();
            nbwdt_check(s == ok_status, "BatchNorm apply: an empty slice needs no workspace");
            s = nbwd_gpu_batch_norm_bwd_reduce(&bd, &ra, sdy, sdyx, &count, NULL, 0, NULL);
            if (s == NBWD_OK) NBWDT_SYNC();
            nbwdt_check(s == ok_status && count == (s == NBWD_OK ? 0 : -7),
                        "BatchNorm reduce: an empty slice needs no workspace, count 0");
            bd.dims[0] = 2;
        }
        { /* GroupNorm: the workspace is checked by every call, a NULL one where none is needed is fine */
            nbwd_group_norm_bwd_desc gd;
            nbwd_group_norm_bwd_args ga;
            size_t gneed = 0, g2 = 1;
            nbwd_status s;
            nbwdt_gn_base(&gd, &ga, gpu_arena);
            nbwdt_check(nbwd_gpu_group_norm_bwd_workspace_size(&gd, &gneed) == NBWD_OK && gneed > 0,
                        "GroupNorm workspace query: nonzero");
            nbwdt_check(nbwd_gpu_group_norm_bwd_workspace_size(&gd, NULL) == NBWD_ERR_NULL_POINTER &&
                            strcmp(nbwd_gpu_last_error(),
                                   "nbwd_gpu_group_norm_bwd_workspace_size: NBWD_ERR_NULL_POINTER: bytes is NULL") == 0,
                        "GroupNorm workspace query: NULL bytes, in words");
            nbwdt_check(nbwd_gpu_group_norm_bwd(&gd, &ga, NULL, 0, NULL) == NBWD_ERR_INSUFFICIENT_WORKSPACE,
                        "GroupNorm: NULL workspace");
            nbwdt_check(strncmp(nbwd_gpu_last_error(),
                                "nbwd_gpu_group_norm_bwd: NBWD_ERR_INSUFFICIENT_WORKSPACE: workspace is NULL", 75) == 0,
                        "GroupNorm: NULL workspace: the message names the entry, the status and the workspace");
            nbwdt_check(nbwd_gpu_group_norm_bwd(&gd, &ga, gpu_arena + NBWDT_GPU_WS_OFF, gneed - 1, NULL) ==
                            NBWD_ERR_INSUFFICIENT_WORKSPACE,
                        "GroupNorm: workspace one byte short");
            s = nbwd_gpu_group_norm_bwd(&gd, &ga, gpu_arena + NBWDT_GPU_WS_OFF, gneed, NULL);
            if (s == NBWD_OK) NBWDT_SYNC();
            nbwdt_check(s == ok_status && nbwd_last_error()[0] == 0, "GroupNorm: the queried workspace; last error cleared");
            ga.diff_src = ga.diff_gamma = ga.diff_beta = NULL;
            nbwdt_check(nbwd_gpu_group_norm_bwd(&gd, &ga, NULL, 0, NULL) == NBWD_ERR_INSUFFICIENT_WORKSPACE,
                        "GroupNorm without outputs: the workspace is still checked (as every call)");
            gd.stats_form = NBWD_STATS_DST_RSTD;
            nbwdt_check(nbwd_gpu_group_norm_bwd_workspace_size(&gd, &g2) == NBWD_OK && g2 == gneed,
                        "GroupNorm workspace query: the same for every form");
            gd.stats_form = NBWD_STATS_MEAN_VARIANCE;
            gd.layout = NBWD_NXC; gd.dims[1] = 3; gd.dims[2] = 4;
            nbwdt_check(nbwd_gpu_group_norm_bwd_workspace_size(&gd, &g2) == NBWD_OK && g2 > 0,
                        "GroupNorm workspace query: NXC nonzero");
            { /* a plane of several pieces, and long NXC columns: partials on top */
                nbwd_group_norm_bwd_desc big;
                const int64_t bd3[3] = {2, 4, 100000}, bn3[3] = {2, 100000, 4};
                size_t b1 = 0, b2 = 0;
                nbwd_group_norm_bwd_desc_init(&big, 3, bd3, NBWD_NCX, 2, 1e-5f);
                nbwdt_check(nbwd_gpu_group_norm_bwd_workspace_size(&big, &b1) == NBWD_OK && b1 > gneed,
                            "GroupNorm workspace query: NCX planes in pieces take partials");
                nbwd_group_norm_bwd_desc_init(&big, 3, bn3, NBWD_NXC, 2, 1e-5f);
                nbwdt_check(nbwd_gpu_group_norm_bwd_workspace_size(&big, &b2) == NBWD_OK && b2 > gneed,
                            "GroupNorm workspace query: NXC row blocks take partials");
            }
            gd.dims[0] = 0;
            nbwdt_check(nbwd_gpu_group_norm_bwd_workspace_size(&gd, &g2) == NBWD_OK && g2 == 0,
                        "GroupNorm workspace query: an empty batch needs none");
            nbwdt_gn_base(&gd, &ga, gpu_arena);
            gd.dims[2] = 0;
            s = nbwd_gpu_group_norm_bwd(&gd, &ga, NULL, 0, NULL);
            if (s == NBWD_OK) NBWDT_SYNC();
            nbwdt_check(s == ok_status, "GroupNorm: no spatial positions: no workspace (diff_gamma/diff_beta zeroed)");
            gd.dims[2] = 3;
            gd.groups = 3;
            nbwdt_check(nbwd_gpu_group_norm_bwd_workspace_size(&gd, &g2) == NBWD_ERR_BAD_PARAM &&
                            strstr(nbwd_gpu_last_error(), "nbwd_gpu_group_norm_bwd_workspace_size: NBWD_ERR_BAD_PARAM: desc.groups") ==
                                nbwd_gpu_last_error(),
                        "GroupNorm workspace query: bad groups, in words");
            nbwdt_check(nbwd_gpu_group_norm_bwd(&gd, &ga, NULL, 0, NULL) == NBWD_ERR_BAD_PARAM,
                        "GroupNorm: bad groups is reported before the workspace");
            {
                nbwd_batch_norm_bwd_desc wrong;
                const int64_t d3[3] = {2, 4, 3};
                nbwd_batch_norm_bwd_desc_init(&wrong, 3, d3, NBWD_NCX, 1e-5f);
                gd.groups = 2;
                gd.init_stamp = wrong.init_stamp;
                nbwdt_check(nbwd_gpu_group_norm_bwd_workspace_size(&gd, &g2) == NBWD_ERR_NOT_INITIALIZED,
                            "GroupNorm workspace query refuses BatchNorm's stamp");
            }
        }
        bd.epsilon = -1.0f;
        nbwdt_check(nbwd_gpu_batch_norm_bwd(&bd, &ba, NULL, 0, NULL) == NBWD_ERR_BAD_PARAM,
                    "BatchNorm: bad epsilon is reported before the workspace");
    }
    {
        int count = 123;
        nbwd_status s = nbwd_gpu_device_count(&count);
        nbwdt_check(nbwd_gpu_device_count(NULL) == NBWD_ERR_NULL_POINTER, "device_count(NULL)");
        if (ok_status == NBWD_OK) {
            nbwdt_check(s == NBWD_OK && count > 0, "device_count finds the GPU");
        } else {
            nbwdt_check(s == NBWD_ERR_UNSUPPORTED && count == 0, "device_count: unsupported, count 0");
            nbwdt_check(nbwd_gpu_last_error()[0] != '\0', "last_error has a message");
        }
    }
    free(cpu_ws);
}
