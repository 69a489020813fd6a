/* bench/onednn.h - the benchmark's thin wrapper over oneDNN 2.x's C API
   (layer and batch normalization backward). Built from bench/onednn.c; when
   that file is compiled without NBWD_BENCH_ONEDNN every call reports n/a. */
#ifndef NBWD_BENCH_ONEDNN_H
#define NBWD_BENCH_ONEDNN_H

#include <stddef.h>
#include <stdint.h>

typedef struct bench_dnnl bench_dnnl;

/* 1 when the benchmark was built against oneDNN; version in buf. */
int bench_dnnl_available(char *buf, size_t len);

/* data_bf16: 0 f32 data, 1 bf16 data (stats and params f32 either way).
   LayerNorm over the last dim of [rows, cols], dense row-major.
   BatchNorm: dims in oneDNN's logical order [N, C, spatial...] (rank 2..5);
   nxc selects channels-last strides. NULL on failure, reason in why.
   relu: 1 dnnl_fuse_norm_relu (fill its workspace with
   bench_dnnl_bn_relu_forward before running), 2 add + ReLU (n/a). */
bench_dnnl *bench_dnnl_ln_create(int64_t rows, int64_t cols, int data_bf16, float eps, char *why, size_t whylen);
bench_dnnl *bench_dnnl_bn_create(int rank, const int64_t *ncx_dims, int nxc, int data_bf16, int global_stats, int relu,
                                 float eps, char *why, size_t whylen);
/* The fused ReLU's forward on the given (frozen) statistics: dst, and the
   workspace the backward reads. 0 on success. */
int bench_dnnl_bn_relu_forward(bench_dnnl *h, const void *x, const float *mean, const float *var, const float *gamma,
                               const float *beta, void *dst);

/* Runs the primitive (waits for it). mean/var/gamma/dgamma/dbeta: f32;
   beta is passed where oneDNN wants a shift (never read in backward).
   Returns 0 on success. */
int bench_dnnl_exec(bench_dnnl *h, const void *x, const void *dy, const float *mean, const float *var,
                    const float *gamma, const float *beta, void *dx, float *dgamma, float *dbeta);

/* The implementation name oneDNN chose (e.g. "jit:avx2"), for the report. */
const char *bench_dnnl_impl(const bench_dnnl *h);

void bench_dnnl_destroy(bench_dnnl *h);

#endif
