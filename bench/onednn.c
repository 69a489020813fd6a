/* bench/onednn.c - oneDNN 2.x (C API) layer/batch normalization backward for
   the benchmark. Compiled with -DNBWD_BENCH_ONEDNN and linked with -ldnnl
   when dnnl.h is present; otherwise every function reports "n/a".

   Semantics fed to oneDNN: prop_kind dnnl_backward (diff_src and the scale
   and shift gradients), statistics as mean and VARIANCE with epsilon (the
   same numbers norm_bwd gets in its NBWD_STATS_MEAN_VARIANCE form). Flags:
   dnnl_use_scale | dnnl_use_shift; if this oneDNN rejects that, the older
   dnnl_use_scaleshift with a packed [2][C] buffer (gamma, beta) and packed
   diff ([2][C]: dgamma, dbeta), copied out after each run - so for that
   fallback the copy of 2*C floats is part of oneDNN's time. BatchNorm with
   frozen statistics (the bench's "-frozen" kinds): dnnl_use_global_stats
   alone and prop_kind dnnl_backward_data: diff_src = diff_dst * rstd, as
   norm_bwd computes it without diff_gamma/diff_beta (gamma then ignored, as
   the oneDNN Graph specification says). The fused ReLU ("-relu" kinds):
   dnnl_fuse_norm_relu, whose backward reads the forward's workspace; a
   forward with the same flags and dnnl_use_global_stats (elementwise, so
   the same bits for any thread count) fills it and gives the dst that every
   library then reads. oneDNN 2.x has no add + ReLU fusion on the CPU. */
#include "onednn.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(NBWD_BENCH_ONEDNN)
#include <dnnl.h>

struct bench_dnnl {
    dnnl_engine_t engine;
    dnnl_stream_t stream;
    dnnl_primitive_desc_t fwd_pd, bwd_pd;
    dnnl_primitive_t prim;
    dnnl_primitive_desc_t relu_fwd_pd; /* the fused ReLU: the workspace's forward */
    dnnl_primitive_t relu_fwd;
    void *ws;                          /* its workspace */
    dnnl_memory_desc_t data_md, diff_md, stat_md, param_md, ss_md, ws_md;
    int64_t C;          /* scale/shift length */
    int packed;         /* dnnl_use_scaleshift fallback */
    float *ss, *dss;    /* packed buffers for the fallback */
    char impl[64];
    dnnl_memory_t mem[10];
    const void *ptr[10];
    dnnl_exec_arg_t args[10];
};

int bench_dnnl_available(char *buf, size_t len) {
    const dnnl_version_t *v = dnnl_version();
    if (buf && len) snprintf(buf, len, "oneDNN %d.%d.%d", v->major, v->minor, v->patch);
    return 1;
}

static void set_why(char *why, size_t len, const char *what, dnnl_status_t s) {
    if (why && len) {
        if (s == dnnl_unimplemented) snprintf(why, len, "unimplemented here (%s)", what);
        else snprintf(why, len, "%s failed (dnnl status %d)", what, (int)s);
    }
}

static bench_dnnl *common_init(char *why, size_t whylen) {
    bench_dnnl *h = (bench_dnnl *)calloc(1, sizeof *h);
    dnnl_status_t s;
    if (!h) return NULL;
    if ((s = dnnl_engine_create(&h->engine, dnnl_cpu, 0)) != dnnl_success) {
        set_why(why, whylen, "dnnl_engine_create", s);
        free(h);
        return NULL;
    }
    if ((s = dnnl_stream_create(&h->stream, h->engine, dnnl_stream_default_flags)) != dnnl_success) {
        set_why(why, whylen, "dnnl_stream_create", s);
        dnnl_engine_destroy(h->engine);
        free(h);
        return NULL;
    }
    return h;
}

/* Primitive descriptors created, build the primitive and the param descs. */
static bench_dnnl *finish(bench_dnnl *h, int64_t C, char *why, size_t whylen) {
    dnnl_status_t s;
    dnnl_dims_t d1, d2;
    const char *impl = NULL;
    h->C = C;
    d1[0] = C;
    d2[0] = 2;
    d2[1] = C;
    dnnl_memory_desc_init_by_tag(&h->param_md, 1, d1, dnnl_f32, dnnl_a);
    dnnl_memory_desc_init_by_tag(&h->ss_md, 2, d2, dnnl_f32, dnnl_ab);
    if ((s = dnnl_primitive_create(&h->prim, h->bwd_pd)) != dnnl_success) {
        set_why(why, whylen, "dnnl_primitive_create", s);
        bench_dnnl_destroy(h);
        return NULL;
    }
    if (dnnl_primitive_desc_query(h->bwd_pd, dnnl_query_impl_info_str, 0, (void *)&impl) == dnnl_success && impl)
        snprintf(h->impl, sizeof h->impl, "%s", impl);
    if (h->packed) {
        h->ss = (float *)calloc((size_t)(2 * C), sizeof(float));
        h->dss = (float *)calloc((size_t)(2 * C), sizeof(float));
        if (!h->ss || !h->dss) {
            if (why && whylen) snprintf(why, whylen, "out of memory");
            bench_dnnl_destroy(h);
            return NULL;
        }
    }
    return h;
}

bench_dnnl *bench_dnnl_ln_create(int64_t rows, int64_t cols, int data_bf16, float eps, char *why, size_t whylen) {
    bench_dnnl *h = common_init(why, whylen);
    dnnl_layer_normalization_desc_t fd, bd;
    dnnl_dims_t dims, sdims;
    dnnl_data_type_t dt = data_bf16 ? dnnl_bf16 : dnnl_f32;
    dnnl_status_t s = dnnl_success;
    int attempt;
    if (!h) return NULL;
    dims[0] = rows;
    dims[1] = cols;
    sdims[0] = rows;
    dnnl_memory_desc_init_by_tag(&h->data_md, 2, dims, dt, dnnl_ab);
    dnnl_memory_desc_init_by_tag(&h->diff_md, 2, dims, dt, dnnl_ab);
    dnnl_memory_desc_init_by_tag(&h->stat_md, 1, sdims, dnnl_f32, dnnl_a);
    for (attempt = 0; attempt < 2; ++attempt) {
        unsigned flags = attempt == 0 ? (unsigned)(dnnl_use_scale | dnnl_use_shift) : (unsigned)dnnl_use_scaleshift;
        h->packed = attempt == 1;
        if ((s = dnnl_layer_normalization_forward_desc_init(&fd, dnnl_forward_training, &h->data_md, &h->stat_md,
                                                            eps, flags)) != dnnl_success)
            continue;
        if ((s = dnnl_layer_normalization_backward_desc_init(&bd, dnnl_backward, &h->diff_md, &h->data_md,
                                                             &h->stat_md, eps, flags)) != dnnl_success)
            continue;
        if ((s = dnnl_primitive_desc_create(&h->fwd_pd, &fd, NULL, h->engine, NULL)) != dnnl_success) continue;
        if ((s = dnnl_primitive_desc_create(&h->bwd_pd, &bd, NULL, h->engine, h->fwd_pd)) != dnnl_success) {
            dnnl_primitive_desc_destroy(h->fwd_pd);
            h->fwd_pd = NULL;
            continue;
        }
        break;
    }
    if (!h->bwd_pd) {
        set_why(why, whylen, "LN bwd pd", s);
        bench_dnnl_destroy(h);
        return NULL;
    }
    return finish(h, cols, why, whylen);
}

bench_dnnl *bench_dnnl_bn_create(int rank, const int64_t *ncx_dims, int nxc, int data_bf16, int global_stats, int relu,
                                 float eps, char *why, size_t whylen) {
    bench_dnnl *h;
    dnnl_batch_normalization_desc_t fd, bd;
    dnnl_dims_t dims, strides;
    dnnl_data_type_t dt = data_bf16 ? dnnl_bf16 : dnnl_f32;
    dnnl_status_t s = dnnl_success;
    int attempt, d;
    int64_t st;
    if (rank < 2 || rank > 5) {
        if (why && whylen) snprintf(why, whylen, "rank %d not supported by oneDNN batch normalization", rank);
        return NULL;
    }
    if (relu == 2) {
        if (why && whylen) snprintf(why, whylen, "oneDNN 2.x: no add+ReLU fusion on the CPU");
        return NULL;
    }
    if (!(h = common_init(why, whylen))) return NULL;
    for (d = 0; d < rank; ++d) dims[d] = ncx_dims[d];
    if (nxc) { /* C innermost, then spatial dims, then N */
        strides[1] = 1;
        st = dims[1];
        for (d = rank - 1; d >= 2; --d) { strides[d] = st; st *= dims[d]; }
        strides[0] = st;
    } else {
        st = 1;
        for (d = rank - 1; d >= 0; --d) { strides[d] = st; st *= dims[d]; }
    }
    dnnl_memory_desc_init_by_strides(&h->data_md, rank, dims, dt, strides);
    dnnl_memory_desc_init_by_strides(&h->diff_md, rank, dims, dt, strides);
    for (attempt = 0; attempt < 2; ++attempt) {
        unsigned flags = attempt == 0 ? (unsigned)(dnnl_use_scale | dnnl_use_shift) : (unsigned)dnnl_use_scaleshift;
        if (global_stats) flags = (unsigned)dnnl_use_global_stats; /* diff_src alone: no scale (ignored) */
        if (relu) flags |= (unsigned)dnnl_fuse_norm_relu;
        h->packed = attempt == 1;
        if ((s = dnnl_batch_normalization_forward_desc_init(&fd, dnnl_forward_training, &h->data_md, eps, flags)) !=
            dnnl_success)
            continue;
        if ((s = dnnl_batch_normalization_backward_desc_init(&bd, global_stats ? dnnl_backward_data : dnnl_backward,
                                                             &h->diff_md, &h->data_md, eps,
                                                             flags)) != dnnl_success)
            continue;
        if ((s = dnnl_primitive_desc_create(&h->fwd_pd, &fd, NULL, h->engine, NULL)) != dnnl_success) continue;
        if ((s = dnnl_primitive_desc_create(&h->bwd_pd, &bd, NULL, h->engine, h->fwd_pd)) != dnnl_success) {
            dnnl_primitive_desc_destroy(h->fwd_pd);
            h->fwd_pd = NULL;
            continue;
        }
        if (relu) {
            dnnl_batch_normalization_desc_t gd;
            const dnnl_memory_desc_t *wmd = dnnl_primitive_desc_query_md(h->bwd_pd, dnnl_query_workspace_md, 0);
            const dnnl_memory_desc_t *gmd;
            if ((s = dnnl_batch_normalization_forward_desc_init(&gd, dnnl_forward_training, &h->data_md, eps,
                                                                flags | (unsigned)dnnl_use_global_stats)) !=
                    dnnl_success ||
                (s = dnnl_primitive_desc_create(&h->relu_fwd_pd, &gd, NULL, h->engine, NULL)) != dnnl_success) {
                set_why(why, whylen, "BN ReLU fwd pd", s);
                bench_dnnl_destroy(h);
                return NULL;
            }
            gmd = dnnl_primitive_desc_query_md(h->relu_fwd_pd, dnnl_query_workspace_md, 0);
            if (!wmd || !gmd || !dnnl_memory_desc_equal(wmd, gmd)) {
                if (why && whylen) snprintf(why, whylen, "ReLU workspaces of the two forwards differ");
                bench_dnnl_destroy(h);
                return NULL;
            }
            h->ws_md = *wmd;
            if (!(h->ws = calloc(1, dnnl_memory_desc_get_size(wmd) + 1)) ||
                dnnl_primitive_create(&h->relu_fwd, h->relu_fwd_pd) != dnnl_success) {
                if (why && whylen) snprintf(why, whylen, "ReLU workspace setup failed");
                bench_dnnl_destroy(h);
                return NULL;
            }
        }
        break;
    }
    if (!h->bwd_pd) {
        set_why(why, whylen, "BN bwd pd", s);
        bench_dnnl_destroy(h);
        return NULL;
    }
    {
        dnnl_dims_t sd;
        sd[0] = dims[1];
        dnnl_memory_desc_init_by_tag(&h->stat_md, 1, sd, dnnl_f32, dnnl_a);
    }
    return finish(h, dims[1], why, whylen);
}

/* Memory objects are made once per handle and re-pointed only when a buffer
   changes, so the timed call is what a framework's cached primitive costs. */
static int bind(bench_dnnl *h, int slot, int tag, const dnnl_memory_desc_t *md, const void *ptr) {
    if (!h->mem[slot]) {
        if (dnnl_memory_create(&h->mem[slot], md, h->engine, (void *)ptr) != dnnl_success) return -1;
        h->ptr[slot] = ptr;
    } else if (h->ptr[slot] != ptr) {
        if (dnnl_memory_set_data_handle(h->mem[slot], (void *)ptr) != dnnl_success) return -1;
        h->ptr[slot] = ptr;
    }
    h->args[slot].arg = tag;
    h->args[slot].memory = h->mem[slot];
    return 0;
}

int bench_dnnl_exec(bench_dnnl *h, const void *x, const void *dy, const float *mean, const float *var,
                    const float *gamma, const float *beta, void *dx, float *dgamma, float *dbeta) {
    dnnl_status_t s;
    int n;
    if (bind(h, 0, DNNL_ARG_SRC, &h->data_md, x) || bind(h, 1, DNNL_ARG_DIFF_DST, &h->diff_md, dy) ||
        bind(h, 2, DNNL_ARG_MEAN, &h->stat_md, mean) || bind(h, 3, DNNL_ARG_VARIANCE, &h->stat_md, var) ||
        bind(h, 4, DNNL_ARG_DIFF_SRC, &h->diff_md, dx))
        return -1;
    if (h->ws && bind(h, 9, DNNL_ARG_WORKSPACE, &h->ws_md, h->ws)) return -1;
    if (h->packed) {
        memcpy(h->ss, gamma, (size_t)h->C * sizeof(float));
        memcpy(h->ss + h->C, beta, (size_t)h->C * sizeof(float));
        if (bind(h, 5, DNNL_ARG_SCALE_SHIFT, &h->ss_md, h->ss) ||
            bind(h, 6, DNNL_ARG_DIFF_SCALE_SHIFT, &h->ss_md, h->dss))
            return -1;
        n = 7;
    } else {
        if (bind(h, 5, DNNL_ARG_SCALE, &h->param_md, gamma) || bind(h, 6, DNNL_ARG_SHIFT, &h->param_md, beta) ||
            bind(h, 7, DNNL_ARG_DIFF_SCALE, &h->param_md, dgamma) ||
            bind(h, 8, DNNL_ARG_DIFF_SHIFT, &h->param_md, dbeta))
            return -1;
        n = 9;
    }
    if (h->ws) h->args[n++] = h->args[9];
    s = dnnl_primitive_execute(h->prim, h->stream, n, h->args);
    if (s == dnnl_success) s = dnnl_stream_wait(h->stream);
    if (s != dnnl_success) return (int)s;
    if (h->packed) {
        memcpy(dgamma, h->dss, (size_t)h->C * sizeof(float));
        memcpy(dbeta, h->dss + h->C, (size_t)h->C * sizeof(float));
    }
    return 0;
}

/* The fused ReLU's forward on frozen statistics: writes dst and fills the
   workspace the backward reads. 0 on success. */
int bench_dnnl_bn_relu_forward(bench_dnnl *h, const void *x, const float *mean, const float *var, const float *gamma,
                               const float *beta, void *dst) {
    dnnl_memory_t m[7] = {0};
    dnnl_exec_arg_t a[7];
    dnnl_status_t s = dnnl_success;
    int i, n = 0;
    float *ss = NULL;
    if (!h || !h->relu_fwd) return -1;
#define NBWD_BENCH_ARG(tag, md, ptr)                                                                  \
    if (s == dnnl_success && (s = dnnl_memory_create(&m[n], md, h->engine, (void *)(ptr))) == dnnl_success) { \
        a[n].arg = tag;                                                                              \
        a[n].memory = m[n];                                                                          \
        ++n;                                                                                         \
    }
    NBWD_BENCH_ARG(DNNL_ARG_SRC, &h->data_md, x)
    NBWD_BENCH_ARG(DNNL_ARG_MEAN, &h->stat_md, mean)
    NBWD_BENCH_ARG(DNNL_ARG_VARIANCE, &h->stat_md, var)
    NBWD_BENCH_ARG(DNNL_ARG_DST, &h->data_md, dst)
    NBWD_BENCH_ARG(DNNL_ARG_WORKSPACE, &h->ws_md, h->ws)
    if (h->packed) {
        if (!(ss = (float *)malloc((size_t)h->C * 2 * sizeof(float)))) s = dnnl_out_of_memory;
        else {
            memcpy(ss, gamma, (size_t)h->C * sizeof(float));
            memcpy(ss + h->C, beta, (size_t)h->C * sizeof(float));
        }
        NBWD_BENCH_ARG(DNNL_ARG_SCALE_SHIFT, &h->ss_md, ss)
    } else {
        NBWD_BENCH_ARG(DNNL_ARG_SCALE, &h->param_md, gamma)
        NBWD_BENCH_ARG(DNNL_ARG_SHIFT, &h->param_md, beta)
    }
#undef NBWD_BENCH_ARG
    if (s == dnnl_success) s = dnnl_primitive_execute(h->relu_fwd, h->stream, n, a);
    if (s == dnnl_success) s = dnnl_stream_wait(h->stream);
    for (i = 0; i < n; ++i) dnnl_memory_destroy(m[i]);
    free(ss);
    return s == dnnl_success ? 0 : (int)s;
}

const char *bench_dnnl_impl(const bench_dnnl *h) { return h && h->impl[0] ? h->impl : "?"; }

void bench_dnnl_destroy(bench_dnnl *h) {
    int i;
    if (!h) return;
    for (i = 0; i < 10; ++i)
        if (h->mem[i]) dnnl_memory_destroy(h->mem[i]);
    if (h->relu_fwd) dnnl_primitive_destroy(h->relu_fwd);
    if (h->relu_fwd_pd) dnnl_primitive_desc_destroy(h->relu_fwd_pd);
    free(h->ws);
    if (h->prim) dnnl_primitive_destroy(h->prim);
    if (h->bwd_pd) dnnl_primitive_desc_destroy(h->bwd_pd);
    if (h->fwd_pd) dnnl_primitive_desc_destroy(h->fwd_pd);
    if (h->stream) dnnl_stream_destroy(h->stream);
    if (h->engine) dnnl_engine_destroy(h->engine);
    free(h->ss);
    free(h->dss);
    free(h);
}

#else /* !NBWD_BENCH_ONEDNN: every call says n/a */

int bench_dnnl_available(char *buf, size_t len) {
    if (buf && len) snprintf(buf, len, "oneDNN n/a (built without dnnl.h; Debian: libdnnl-dev)");
    return 0;
}
bench_dnnl *bench_dnnl_ln_create(int64_t rows, int64_t cols, int data_bf16, float eps, char *why, size_t whylen) {
    (void)rows; (void)cols; (void)data_bf16; (void)eps;
    if (why && whylen) snprintf(why, whylen, "built without oneDNN");
    return NULL;
}
bench_dnnl *bench_dnnl_bn_create(int rank, const int64_t *ncx_dims, int nxc, int data_bf16, int global_stats, int relu,
                                 float eps, char *why, size_t whylen) {
    (void)rank; (void)ncx_dims; (void)nxc; (void)data_bf16; (void)global_stats; (void)relu; (void)eps;
    if (why && whylen) snprintf(why, whylen, "built without oneDNN");
    return NULL;
}
int bench_dnnl_bn_relu_forward(bench_dnnl *h, const void *x, const float *mean, const float *var, const float *gamma,
                               const float *beta, void *dst) {
    (void)h; (void)x; (void)mean; (void)var; (void)gamma; (void)beta; (void)dst;
    return -1;
}
int bench_dnnl_exec(bench_dnnl *h, const void *x, const void *dy, const float *mean, const float *var,
                    const float *gamma, const float *beta, void *dx, float *dgamma, float *dbeta) {
    (void)h; (void)x; (void)dy; (void)mean; (void)var; (void)gamma; (void)beta; (void)dx; (void)dgamma; (void)dbeta;
    return -1;
}
const char *bench_dnnl_impl(const bench_dnnl *h) { (void)h; return "n/a"; }
void bench_dnnl_destroy(bench_dnnl *h) { (void)h; }

#endif
