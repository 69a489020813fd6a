/* GPU benchmark of norm_bwd_gpu.h: per shape and dtype, the median time of
   >= 20 runs after warm-up (cudaEvent) and the effective bandwidth (bytes of
   x, dy and dx, plus stats and params) against the device's measured
   device-to-device cudaMemcpy bandwidth. Each result is checked against
   the CPU path (norm_bwd.h) before timing. Without a GPU it says so and
   exits 0. Usage: bench_gpu [runs] [--only ln|bn|gn] [--nocheck] [--sweep]
   (see main); NBWD_BN_RSCALE=f in the environment scales BatchNorm NXC's
   rows per partial (an experiment's knob). */
#define NORM_BWD_IMPLEMENTATION
#define NORM_BWD_NO_SIMD
#define NORM_BWD_GPU_IMPLEMENTATION
/* --sweep: the LayerNorm launch configuration forced per run (group size G
   with K chunks per thread, R rows per block), through the header's hook */
static int tune_on, tune_G, tune_K, tune_R;
#define NBWDG__LN_TUNE(p, c, stage)                                                                            \
    do {                                                                                                       \
        if (tune_on && (stage) == 0) {                                                                         \
            (c)->G = tune_G; (c)->K = tune_K; (c)->block = tune_G <= 32 ? 256 : tune_G;                        \
        } else if (tune_on && tune_R) {                                                                        \
            (c)->R = tune_R;                                                                                   \
        }                                                                                                      \
    } while (0)
/* NBWD_BN_RSCALE=f: BatchNorm NXC's rows per partial scaled by f (an
   experiment's knob: the partial count follows) */
#define NBWDG__BN_TUNE(p, c)                                                                                   \
    do {                                                                                                       \
        const char *s_ = getenv("NBWD_BN_RSCALE");                                                             \
        if (s_) (c)->R = (int64_t)((double)(c)->R * atof(s_)) < 1 ? 1 : (int64_t)((double)(c)->R * atof(s_)); \
    } while (0)
#include "../../norm_bwd_gpu.h"

#include <algorithm>
#include <math.h>
#include <vector>

#define CK(x)                                                                                  \
    do {                                                                                       \
        cudaError_t e_ = (x);                                                                  \
        if (e_ != cudaSuccess) {                                                               \
            printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e_), __FILE__, __LINE__);    \
            exit(2);                                                                           \
        }                                                                                      \
    } while (0)

static int runs = 25;
static uint64_t rs = 99;
static float urand(float lo, float hi) {
    rs = rs * 6364136223846793005ull + 1442695040888963407ull;
    return lo + (hi - lo) * (float)((double)(rs >> 11) / 9007199254740992.0);
}
static size_t esz(int dt) { return dt == NBWD_F32 ? 4 : 2; }
static void fill(std::vector<unsigned char> &h, int dt, int64_t n, float lo, float hi) {
    h.resize((size_t)n * esz(dt));
    for (int64_t i = 0; i < n; ++i) {
        float v = urand(lo, hi);
        if (dt == NBWD_F32) ((float *)h.data())[i] = v;
        else if (dt == NBWD_F16) ((uint16_t *)h.data())[i] = nbwd_f32_to_f16(v);
        else ((uint16_t *)h.data())[i] = nbwd_f32_to_bf16(v);
    }
}
static float getf(const unsigned char *p, int64_t i, int dt) {
    if (dt == NBWD_F32) return ((const float *)p)[i];
    if (dt == NBWD_F16) return nbwd_f16_to_f32(((const uint16_t *)p)[i]);
    return nbwd_bf16_to_f32(((const uint16_t *)p)[i]);
}
static int nocheck; /* --nocheck: data made on the device, no CPU comparison (the variant builds) */
__global__ void fill_kernel(void *p, int dt, int64_t n, float lo, float hi, uint32_t seed) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        uint32_t h = (uint32_t)i * 2654435761u ^ seed;
        h ^= h >> 15; h *= 2246822519u; h ^= h >> 13; h *= 3266489917u; h ^= h >> 16;
        const float v = lo + (hi - lo) * (float)(h >> 8) * (1.0f / 16777216.0f);
        if (dt == NBWD_F32) ((float *)p)[i] = v;
        else if (dt == NBWD_F16) ((__half *)p)[i] = __float2half_rn(v);
        else ((__nv_bfloat16 *)p)[i] = __float2bfloat16_rn(v);
    }
}
static uint32_t fill_seed = 1;
/* a host tensor (checked runs) or the same-sized device tensor made there */
static void fill(std::vector<unsigned char> &h, int dt, int64_t n, float lo, float hi);
static void *make(std::vector<unsigned char> &h, int dt, int64_t n, float lo, float hi);
static void *upload(const std::vector<unsigned char> &h) {
    void *d;
    CK(cudaMalloc(&d, h.size() ? h.size() : 1));
    CK(cudaMemcpy(d, h.data(), h.size(), cudaMemcpyHostToDevice));
    return d;
}
static void *make(std::vector<unsigned char> &h, int dt, int64_t n, float lo, float hi) {
    if (!nocheck) {
        fill(h, dt, n, lo, hi);
        return upload(h);
    }
    void *d;
    h.clear();
    CK(cudaMalloc(&d, n ? (size_t)n * esz(dt) : 1));
    fill_kernel<<<1024, 256>>>(d, dt, n, lo, hi, fill_seed++ * 0x9E3779B9u);
    CK(cudaGetLastError());
    return d;
}
static std::vector<unsigned char> download(const void *d, size_t bytes) {
    std::vector<unsigned char> h(bytes);
    CK(cudaMemcpy(h.data(), d, bytes, cudaMemcpyDeviceToHost));
    return h;
}
/* max |a - b| / max |b| */
static double relerr(const std::vector<unsigned char> &a, const std::vector<unsigned char> &b, int dt, int64_t n) {
    double num = 0, den = 1e-30;
    for (int64_t i = 0; i < n; ++i) {
        double x = getf(a.data(), i, dt), y = getf(b.data(), i, dt);
        if (!(fabs(x - y) <= num)) num = fabs(x - y);
        if (fabs(y) > den) den = fabs(y);
    }
    return num / den;
}
template <class F> static float median_ms(F f) {
    cudaEvent_t a, b;
    std::vector<float> t;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    for (int i = 0; i < 3; ++i) f();
    CK(cudaDeviceSynchronize());
    for (int i = 0; i < runs; ++i) {
        float ms;
        CK(cudaEventRecord(a));
        f();
        CK(cudaEventRecord(b));
        CK(cudaEventSynchronize(b));
        CK(cudaEventElapsedTime(&ms, a, b));
        t.push_back(ms);
    }
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
}

static double copy_gbs;

/* A separate residual add, dx += r, for the "norm + add" baseline of the
   fused rows: the unfused way, one more pass over dx and the residual. */
template <class T> __global__ void add_kernel(T *dx, const T *r, int64_t n) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        dx[i] = (T)((float)dx[i] + (float)r[i]);
}
static void add_pass(void *dx, const void *r, int64_t n, int dt) {
    if (dt == NBWD_F32) add_kernel<float><<<1056, 256>>>((float *)dx, (const float *)r, n);
    else add_kernel<__nv_bfloat16><<<1056, 256>>>((__nv_bfloat16 *)dx, (const __nv_bfloat16 *)r, n);
}

/* The check column: each output against the CPU path, or "n/a" (--nocheck) */
struct Check {
    double e1 = 0, e2 = 0, e3 = 0;
    const char *ok = "n/a";
};
static Check check_outputs(nbwd_status s, int dt, int pdt, const void *dx, const std::vector<unsigned char> &cdx,
                           int64_t total, const void *dg, const std::vector<unsigned char> &cdg, const void *db,
                           const std::vector<unsigned char> &cdb, int64_t np) {
    Check c;
    c.e1 = relerr(download(dx, cdx.size()), cdx, dt, total);
    c.e2 = relerr(download(dg, cdg.size()), cdg, pdt, np);
    c.e3 = relerr(download(db, cdb.size()), cdb, pdt, np);
    const double tol = dt == NBWD_F32 ? 1e-4 : 3e-2;
    c.ok = s == NBWD_OK && c.e1 <= tol && c.e2 <= 1e-3 && c.e3 <= 1e-3 ? "ok" : "MISMATCH";
    return c;
}
static void print_check(const Check &c) {
    if (nocheck) printf("  check n/a");
    else printf("  check %s (dx %.1e dg %.1e db %.1e)", c.ok, c.e1, c.e2, c.e3);
}

/* --sweep: the LayerNorm configurations worth timing for n elements of
   dtype dt: for each group size G the fewest chunks per thread K in {1, 2,
   4} that cover the row (G <= 512), and the long-row kernel (K = 0, 1024
   threads); bench_ln times each with its default rows per block R and
   1/4x .. 4x of it. */
struct Tune { int G, K; int64_t R; };
static std::vector<Tune> sweep_configs(int64_t n, int dt) {
    std::vector<Tune> v;
    const int64_t chunks = (n + (dt == NBWD_F32 ? 3 : 7)) / (dt == NBWD_F32 ? 4 : 8);
    for (int G = 1; G <= 512; G *= 2) {
        int K = chunks <= G ? 1 : chunks <= 2 * G ? 2 : chunks <= 4 * G ? 4 : 0;
        if (!K || (K == 1 && G > 2 * chunks && G > 32)) continue; /* too short, or mostly idle lanes */
        v.push_back({G, K, 0});
    }
    v.push_back({1024, 0, 0});
    return v;
}

/* LayerNorm (MEAN_VARIANCE form) or RMSNorm (RSTD form, what PyTorch saves);
   res: with the residual gradient fused in, timed against the same call
   without it followed by a separate add. sweep: every launch configuration
   of sweep_configs, timed in turn, after the default. */
static void bench_ln(int64_t rows, int64_t n, int dt, int rms, int res, int sweep = 0) {
    const int pdt = NBWD_F32, sdt = NBWD_F32;
    std::vector<unsigned char> x, dy, mean, var, gamma, r;
    int64_t dims[2] = {rows, n};
    nbwd_layer_norm_bwd_desc d;
    if (rms) {
        nbwd_rms_norm_bwd_desc_init(&d, 2, dims);
        d.stats_form = (nbwd_stats_form)NBWD_STATS_RSTD;
    } else {
        nbwd_layer_norm_bwd_desc_init(&d, 2, dims);
    }
    d.data_dtype = (nbwd_dtype)dt; d.stats_dtype = (nbwd_dtype)sdt; d.param_dtype = (nbwd_dtype)pdt;
    nbwd_layer_norm_bwd_args a;
    nbwd_rms_norm_bwd_args ra;
    memset(&a, 0, sizeof a);
    memset(&ra, 0, sizeof ra);
    void *dx, *dg, *db, *ws = nullptr;
    a.src = make(x, dt, rows * n, -2, 2); a.diff_dst = make(dy, dt, rows * n, -1, 1);
    a.mean = make(mean, sdt, rows, -0.5f, 0.5f); a.variance = make(var, sdt, rows, 0.3f, 2.0f);
    a.gamma = make(gamma, pdt, n, 0.5f, 1.5f);
    a.diff_residual = res ? make(r, dt, rows * n, -1, 1) : nullptr;
    const size_t data_bytes = (size_t)(rows * n) * esz(dt);
    CK(cudaMalloc(&dx, data_bytes)); CK(cudaMalloc(&dg, (size_t)n * 4)); CK(cudaMalloc(&db, (size_t)n * 4));
    a.diff_src = dx; a.diff_gamma = dg; a.diff_beta = db;
    ra.src = a.src; ra.diff_dst = a.diff_dst; ra.rstd = a.variance; ra.gamma = a.gamma; ra.diff_residual = a.diff_residual;
    ra.diff_src = dx; ra.diff_gamma = dg; ra.diff_beta = db;
    size_t need = 0;
    auto get_ws = [&] {
        if (ws) cudaFree(ws);
        ws = nullptr;
        need = 0;
        if (rms) nbwd_gpu_rms_norm_bwd_workspace_size(&d, &need);
        else nbwd_gpu_layer_norm_bwd_workspace_size(&d, &need);
        if (need) CK(cudaMalloc(&ws, need));
    };
    get_ws();
    auto call = [&](int with_res) {
        nbwd_layer_norm_bwd_args a2 = a;
        nbwd_rms_norm_bwd_args r2 = ra;
        if (!with_res) a2.diff_residual = r2.diff_residual = nullptr;
        return rms ? nbwd_gpu_rms_norm_bwd(&d, &r2, ws, need, nullptr) : nbwd_gpu_layer_norm_bwd(&d, &a2, ws, need, nullptr);
    };
    nbwd_status s = call(1);
    CK(cudaDeviceSynchronize());
    Check ck;
    if (!nocheck) { /* against the CPU path */
        std::vector<unsigned char> cdx(data_bytes), cdg((size_t)n * 4), cdb((size_t)n * 4);
        nbwd_layer_norm_bwd_args ca = a;
        nbwd_rms_norm_bwd_args cr = ra;
        ca.src = cr.src = x.data(); ca.diff_dst = cr.diff_dst = dy.data(); ca.mean = mean.data(); ca.variance = var.data();
        cr.rstd = var.data(); ca.gamma = cr.gamma = gamma.data(); ca.diff_residual = cr.diff_residual = res ? r.data() : nullptr;
        ca.diff_src = cr.diff_src = cdx.data(); ca.diff_gamma = cr.diff_gamma = cdg.data(); ca.diff_beta = cr.diff_beta = cdb.data();
        if (rms) nbwd_rms_norm_bwd(&d, &cr, nullptr, 0);
        else nbwd_layer_norm_bwd(&d, &ca, nullptr, 0);
        ck = check_outputs(s, dt, pdt, dx, cdx, rows * n, dg, cdg, db, cdb, n);
    } else if (s != NBWD_OK) {
        ck.ok = "FAILED";
    }
    float ms = median_ms([&] { call(1); });
    double bytes = (3.0 + res) * (double)data_bytes + 2.0 * rows * 4 + 3.0 * n * 4;
    char op[32];
    snprintf(op, sizeof op, "%s%s", rms ? "RMSNorm" : "LayerNorm", res ? "+res" : "");
    printf("%-13s %8lld x %-6lld %-4s %9.3f ms %8.1f GB/s %5.1f %% of copy", op, (long long)rows, (long long)n,
           dt == NBWD_F32 ? "f32" : "bf16", ms, bytes / ms / 1e6, 100.0 * bytes / ms / 1e6 / copy_gbs);
    print_check(ck);
    if (res) { /* the unfused way: the norm call, then dx += r */
        float unfused = median_ms([&] {
            call(0);
            add_pass(dx, a.diff_residual, rows * n, dt);
        });
        printf("  norm+add %.3f ms: fused %.2fx", unfused, unfused / ms);
    }
    printf("\n");
    if (sweep) { /* every configuration, against the default's time */
        /* each configuration's dx against the default's, over a prefix (the
           sweep times many configurations; a wrong one shows in any row) */
        const int64_t pre = rows * n < ((int64_t)1 << 20) ? rows * n : ((int64_t)1 << 20);
        std::vector<unsigned char> ref = download(dx, (size_t)pre * esz(dt));
        for (const Tune &t : sweep_configs(n, dt))
            for (int rm = 0; rm < 5; ++rm) { /* R: default, then x1/4, x1/2, x2, x4 of it */
                nbwdg__ln_cfg c;
                nbwd__ln_plan pl;
                tune_on = 1; tune_G = t.G; tune_K = t.K; tune_R = 0;
                memset(&pl, 0, sizeof pl);
                pl.dt = dt; pl.n = n; pl.rows = rows; pl.affine = 1;
                nbwdg__ln_config(&pl, &c);
                static const double f[5] = {1, 0.25, 0.5, 2, 4};
                tune_R = (int)(c.R * f[rm]);
                if (rm && (tune_R < 1 || tune_R == c.R)) continue;
                get_ws();
                CK(cudaMemset(dx, 0xff, data_bytes));
                nbwd_status s2 = call(1);
                CK(cudaDeviceSynchronize());
                double e = s2 == NBWD_OK ? relerr(download(dx, (size_t)pre * esz(dt)), ref, dt, pre) : 1.0;
                float t2 = s2 == NBWD_OK ? median_ms([&] { call(1); }) : 0.0f;
                printf("  sweep %-9s %6lld x %-6lld %-4s G %4d K %d R %5lld blocks %7lld %9.4f ms %5.1f %% %s%s\n",
                       op, (long long)rows, (long long)n, dt == NBWD_F32 ? "f32" : "bf16", t.G, t.K,
                       (long long)(rm ? tune_R : c.R), (long long)nbwdg__cdiv(rows, rm ? tune_R : c.R), t2,
                       t2 > 0 ? 100.0 * bytes / t2 / 1e6 / copy_gbs : 0.0, s2 == NBWD_OK ? "" : "FAILED ",
                       e <= (dt == NBWD_F32 ? 1e-4 : 3e-2) ? "" : "DIFFERS");
                tune_on = 0;
            }
        tune_on = 0;
        get_ws();
    }
    cudaFree((void *)a.src); cudaFree((void *)a.diff_dst); cudaFree((void *)a.mean); cudaFree((void *)a.variance);
    cudaFree((void *)a.gamma); cudaFree(dx); cudaFree(dg); cudaFree(db);
    if (a.diff_residual) cudaFree((void *)a.diff_residual);
    if (ws) cudaFree(ws);
}

/* A BatchNorm or GroupNorm row: x, dy, statistics of nstats entries and
   gamma of C, the GPU call (ws_size, gpu) checked against the CPU path
   (cpu), then timed; label: the row's text before its time, extra_bytes:
   what it counts beside x, dy and dx. */
template <class Desc, class Args, class WsFn, class GpuFn, class CpuFn>
static void bench_sets(const Desc &d, int dt, int64_t total, int64_t C, int64_t nstats, double extra_bytes,
                       WsFn ws_size, GpuFn gpu, CpuFn cpu, const char *label) {
    std::vector<unsigned char> x, dy, mean, var, gamma;
    Args a;
    memset(&a, 0, sizeof a);
    void *dx, *dg, *db, *ws = nullptr;
    a.src = make(x, dt, total, -2, 2); a.diff_dst = make(dy, dt, total, -1, 1);
    a.mean = make(mean, NBWD_F32, nstats, -0.5f, 0.5f); a.variance = make(var, NBWD_F32, nstats, 0.3f, 2.0f);
    a.gamma = make(gamma, NBWD_F32, C, 0.5f, 1.5f);
    const size_t data_bytes = (size_t)total * esz(dt);
    CK(cudaMalloc(&dx, data_bytes)); CK(cudaMalloc(&dg, (size_t)C * 4)); CK(cudaMalloc(&db, (size_t)C * 4));
    a.diff_src = dx; a.diff_gamma = dg; a.diff_beta = db;
    size_t need = 0;
    ws_size(&d, &need);
    if (need) CK(cudaMalloc(&ws, need));
    nbwd_status s = gpu(&d, &a, ws, need, nullptr);
    CK(cudaDeviceSynchronize());
    Check ck;
    if (!nocheck) {
        std::vector<unsigned char> cdx(data_bytes), cdg((size_t)C * 4), cdb((size_t)C * 4);
        Args ca = a;
        ca.src = x.data(); ca.diff_dst = dy.data(); ca.mean = mean.data(); ca.variance = var.data(); ca.gamma = gamma.data();
        ca.diff_src = cdx.data(); ca.diff_gamma = cdg.data(); ca.diff_beta = cdb.data();
        cpu(&d, &ca, nullptr, 0);
        ck = check_outputs(s, dt, NBWD_F32, dx, cdx, total, dg, cdg, db, cdb, C);
    } else if (s != NBWD_OK) {
        ck.ok = "FAILED";
    }
    float ms = median_ms([&] { gpu(&d, &a, ws, need, nullptr); });
    double bytes = 3.0 * (double)data_bytes + extra_bytes;
    printf("%s %-4s %9.3f ms %8.1f GB/s %5.1f %% of copy", label, dt == NBWD_F32 ? "f32" : "bf16", ms,
           bytes / ms / 1e6, 100.0 * bytes / ms / 1e6 / copy_gbs);
    print_check(ck);
    printf("\n");
    cudaFree((void *)a.src); cudaFree((void *)a.diff_dst); cudaFree((void *)a.mean); cudaFree((void *)a.variance);
    cudaFree((void *)a.gamma); cudaFree(dx); cudaFree(dg); cudaFree(db);
    if (ws) cudaFree(ws);
}

static void bench_bn(int rank, const int64_t *dims, int layout, int dt) {
    int64_t total = 1;
    for (int i = 0; i < rank; ++i) total *= dims[i];
    const int64_t C = layout == NBWD_NXC || rank == 2 ? dims[rank - 1] : dims[1];
    nbwd_batch_norm_bwd_desc d;
    nbwd_batch_norm_bwd_desc_init(&d, rank, dims, (nbwd_layout)layout, 1e-5f);
    d.data_dtype = (nbwd_dtype)dt;
    char shape[64], label[96];
    if (rank == 4) snprintf(shape, sizeof shape, "%lldx%lldx%lldx%lld", (long long)dims[0], (long long)dims[1], (long long)dims[2], (long long)dims[3]);
    else snprintf(shape, sizeof shape, "%lldx%lld", (long long)dims[0], (long long)dims[1]);
    snprintf(label, sizeof label, "BatchNorm %s %-15s", layout == NBWD_NCX ? "NCX" : "NXC", shape);
    bench_sets<nbwd_batch_norm_bwd_desc, nbwd_batch_norm_bwd_args>(d, dt, total, C, C, 7.0 * C * 4,
                                                                 nbwd_gpu_batch_norm_bwd_workspace_size,
                                                                 nbwd_gpu_batch_norm_bwd, nbwd_batch_norm_bwd, label);
}

/* GroupNorm (MEAN_VARIANCE form, every output), checked against the CPU path */
static void bench_gn(int rank, const int64_t *dims, int layout, int64_t groups, int dt) {
    int64_t total = 1;
    for (int i = 0; i < rank; ++i) total *= dims[i];
    const int64_t N = dims[0], C = layout == NBWD_NXC ? dims[rank - 1] : dims[1];
    nbwd_group_norm_bwd_desc d;
    nbwd_group_norm_bwd_desc_init(&d, rank, dims, (nbwd_layout)layout, groups, 1e-5f);
    d.data_dtype = (nbwd_dtype)dt;
    char shape[64], label[96];
    snprintf(shape, sizeof shape, "%lldx%lldx%lldx%lld", (long long)dims[0], (long long)dims[1], (long long)dims[2],
             (long long)dims[3]);
    snprintf(label, sizeof label, "GroupNorm %s %-15s g%-3lld", layout == NBWD_NCX ? "NCX" : "NXC", shape,
             (long long)groups);
    bench_sets<nbwd_group_norm_bwd_desc, nbwd_group_norm_bwd_args>(
        d, dt, total, C, N * groups, 2.0 * N * groups * 4 + 3.0 * C * 4, nbwd_gpu_group_norm_bwd_workspace_size,
        nbwd_gpu_group_norm_bwd, nbwd_group_norm_bwd, label);
}

/* Usage: bench_gpu [runs] [--only ln|bn|gn] [--nocheck] [--sweep]
   --only: one family; --nocheck: data made on the device, no comparison
   with the CPU path (fast: for builds that vary a compile-time choice, run
   after the tests); --sweep: the LayerNorm rows' launch configurations */
int main(int argc, char **argv) {
    int count = 0, sweep = 0;
    const char *only = "";
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--nocheck")) nocheck = 1;
        else if (!strcmp(argv[i], "--sweep")) sweep = 1;
        else if (!strcmp(argv[i], "--only") && i + 1 < argc) only = argv[++i];
        else runs = atoi(argv[i]) < 10 ? 10 : atoi(argv[i]);
    }
    if (nbwd_gpu_device_count(&count) != NBWD_OK) {
        printf("no GPU: %s\nnothing to benchmark\n", nbwd_gpu_last_error());
        return 0;
    }
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    { /* device-to-device copy bandwidth: read + write of 1 GiB */
        const size_t bytes = (size_t)1 << 30;
        void *a, *b;
        CK(cudaMalloc(&a, bytes)); CK(cudaMalloc(&b, bytes));
        CK(cudaMemset(a, 1, bytes));
        float ms = median_ms([&] { CK(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice)); });
        copy_gbs = 2.0 * bytes / ms / 1e6;
        cudaFree(a); cudaFree(b);
    }
    printf("GPU: %s (sm_%d%d, %d SMs, L2 %d MiB), median of %d runs after warm-up\n", prop.name, prop.major, prop.minor,
           prop.multiProcessorCount, prop.l2CacheSize >> 20, runs);
    printf("device-to-device cudaMemcpy: %.1f GB/s (read + write)\n", copy_gbs);
    printf("GB/s counts x, dy and dx once (+res: and the residual; plus stats and params); stats and params f32\n");
    const int do_ln = !*only || !strcmp(only, "ln"), do_bn = !*only || !strcmp(only, "bn"),
              do_gn = !*only || !strcmp(only, "gn");
    if (do_ln) {
        static const int64_t ln[][2] = {{32768, 768}, {8192, 1024}, {4096, 4096}, {2048, 8192},
                                        {131072, 64}, {500000, 24}, {16384, 4096}, {8192, 12288}};
        for (int i = 0; i < 8; ++i) {
            bench_ln(ln[i][0], ln[i][1], NBWD_F32, 0, 0, sweep);
            bench_ln(ln[i][0], ln[i][1], NBWD_BF16, 0, 0, sweep);
        }
        /* RMSNorm: a 7B model's hidden size, a mid-size and an in-cache problem */
        static const int64_t rms[][2] = {{32768, 4096}, {8192, 1024}, {64, 4096}, {256, 1024}};
        for (int i = 0; i < 4; ++i) {
            bench_ln(rms[i][0], rms[i][1], NBWD_F32, 1, 0, sweep && i == 2);
            bench_ln(rms[i][0], rms[i][1], NBWD_BF16, 1, 0, sweep && i == 2);
        }
        /* the residual gradient fused in, against the norm call + a separate add */
        static const int64_t res[][3] = {{32768, 768, 0}, {8192, 1024, 0}, {32768, 4096, 1}, {8192, 1024, 1}};
        for (int i = 0; i < 4; ++i) {
            bench_ln(res[i][0], res[i][1], NBWD_F32, (int)res[i][2], 1);
            bench_ln(res[i][0], res[i][1], NBWD_BF16, (int)res[i][2], 1);
        }
    }
    if (do_bn) {
        static const int64_t b1[4] = {32, 64, 56, 56}, b2[4] = {32, 256, 28, 28}, b3[2] = {256, 1024};
        for (int layout = 0; layout < 2; ++layout)
            for (int dt = 0; dt < 3; dt += 2) {
                int64_t d1[4], d2[4];
                if (layout == NBWD_NCX) { memcpy(d1, b1, sizeof d1); memcpy(d2, b2, sizeof d2); }
                else { /* NXC: [N, H, W, C] */
                    d1[0] = b1[0]; d1[1] = b1[2]; d1[2] = b1[3]; d1[3] = b1[1];
                    d2[0] = b2[0]; d2[1] = b2[2]; d2[2] = b2[3]; d2[3] = b2[1];
                }
                bench_bn(4, d1, layout, dt);
                bench_bn(4, d2, layout, dt);
                bench_bn(2, b3, layout, dt);
            }
    }
    if (do_gn) { /* GroupNorm, 32 groups: Stable Diffusion UNet blocks' shapes, both layouts */
        static const int64_t g1[4] = {16, 320, 64, 64}, g1x[4] = {16, 64, 64, 320};
        static const int64_t g2[4] = {16, 128, 128, 128}, g2x[4] = {16, 128, 128, 128};
        for (int dt = 0; dt < 3; dt += 2) {
            bench_gn(4, g1, NBWD_NCX, 32, dt);
            bench_gn(4, g1x, NBWD_NXC, 32, dt);
            bench_gn(4, g2, NBWD_NCX, 32, dt);
            bench_gn(4, g2x, NBWD_NXC, 32, dt);
        }
    }
    return 0;
}
