/* GPU benchmark of norm_bwd_gpu.h: per shape and dtype, the median time of
   >= 20 runs after warm-up (cudaEvent) and the effective bandwidth (bytes of
   x, dy and dx, plus stats and params) against the device's measured
   device-to-device cudaMemcpy bandwidth. Each result is checked against
   the CPU path (norm_bwd.h) before timing. Without a GPU it says so and
   exits 0. Usage: bench_gpu [runs] */
#define NORM_BWD_IMPLEMENTATION
#define NORM_BWD_NO_SIMD
#define NORM_BWD_GPU_IMPLEMENTATION
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
static void *upload(const std::vector<unsigned char> &h) {
    void *d;
    CK(cudaMalloc(&d, h.size() ? h.size() : 1));
    CK(cudaMemcpy(d, h.data(), h.size(), cudaMemcpyHostToDevice));
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

/* LayerNorm (MEAN_VARIANCE form) or RMSNorm (RSTD form, what PyTorch saves);
   res: with the residual gradient fused in, timed against the same call
   without it followed by a separate add */
static void bench_ln(int64_t rows, int64_t n, int dt, int rms, int res) {
    const int pdt = NBWD_F32, sdt = NBWD_F32;
    std::vector<unsigned char> x, dy, mean, var, gamma, r;
    fill(x, dt, rows * n, -2, 2); fill(dy, dt, rows * n, -1, 1); fill(mean, sdt, rows, -0.5f, 0.5f);
    fill(var, sdt, rows, 0.3f, 2.0f); fill(gamma, pdt, n, 0.5f, 1.5f);
    if (res) fill(r, dt, rows * n, -1, 1);
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
    a.src = upload(x); a.diff_dst = upload(dy); a.mean = upload(mean); a.variance = upload(var); a.gamma = upload(gamma);
    a.diff_residual = res ? upload(r) : nullptr;
    CK(cudaMalloc(&dx, x.size())); CK(cudaMalloc(&dg, (size_t)n * 4)); CK(cudaMalloc(&db, (size_t)n * 4));
    a.diff_src = dx; a.diff_gamma = dg; a.diff_beta = db;
    ra.src = a.src; ra.diff_dst = a.diff_dst; ra.rstd = a.variance; ra.gamma = a.gamma; ra.diff_residual = a.diff_residual;
    ra.diff_src = dx; ra.diff_gamma = dg; ra.diff_beta = db;
    size_t need = 0;
    if (rms) nbwd_gpu_rms_norm_bwd_workspace_size(&d, &need);
    else nbwd_gpu_layer_norm_bwd_workspace_size(&d, &need);
    if (need) CK(cudaMalloc(&ws, need));
    auto call = [&](int with_res) {
        nbwd_layer_norm_bwd_args a2 = a;
        nbwd_rms_norm_bwd_args r2 = ra;
        if (!with_res) a2.diff_residual = r2.diff_residual = nullptr;
        return rms ? nbwd_gpu_rms_norm_bwd(&d, &r2, ws, need, nullptr) : nbwd_gpu_layer_norm_bwd(&d, &a2, ws, need, nullptr);
    };
    nbwd_status s = call(1);
    CK(cudaDeviceSynchronize());
    /* check against the CPU path */
    std::vector<unsigned char> cdx(x.size()), cdg((size_t)n * 4), cdb((size_t)n * 4);
    nbwd_layer_norm_bwd_args ca = a;
    nbwd_rms_norm_bwd_args cr = ra;
    ca.src = cr.src = x.data(); ca.diff_dst = cr.diff_dst = dy.data(); ca.mean = mean.data(); ca.variance = var.data();
    cr.rstd = var.data(); ca.gamma = cr.gamma = gamma.data(); ca.diff_residual = cr.diff_residual = res ? r.data() : nullptr;
    ca.diff_src = cr.diff_src = cdx.data(); ca.diff_gamma = cr.diff_gamma = cdg.data(); ca.diff_beta = cr.diff_beta = cdb.data();
    if (rms) nbwd_rms_norm_bwd(&d, &cr, nullptr, 0);
    else nbwd_layer_norm_bwd(&d, &ca, nullptr, 0);
    double e1 = relerr(download(dx, x.size()), cdx, dt, rows * n), e2 = relerr(download(dg, (size_t)n * 4), cdg, pdt, n),
           e3 = relerr(download(db, (size_t)n * 4), cdb, pdt, n);
    const double tol = dt == NBWD_F32 ? 1e-4 : 3e-2;
    const char *ok = s == NBWD_OK && e1 <= tol && e2 <= 1e-3 && e3 <= 1e-3 ? "ok" : "MISMATCH";
    float ms = median_ms([&] { call(1); });
    double bytes = (3.0 + res) * (double)x.size() + 2.0 * rows * 4 + 3.0 * n * 4;
    char op[32];
    snprintf(op, sizeof op, "%s%s", rms ? "RMSNorm" : "LayerNorm", res ? "+res" : "");
    printf("%-13s %8lld x %-6lld %-4s %9.3f ms %8.1f GB/s %5.1f %% of copy  check %s (dx %.1e dg %.1e db %.1e)",
           op, (long long)rows, (long long)n, dt == NBWD_F32 ? "f32" : "bf16", ms, bytes / ms / 1e6,
           100.0 * bytes / ms / 1e6 / copy_gbs, ok, e1, e2, e3);
    if (res) { /* the unfused way: the norm call, then dx += r */
        float unfused = median_ms([&] {
            call(0);
            add_pass(dx, a.diff_residual, rows * n, dt);
        });
        printf("  norm+add %.3f ms: fused %.2fx", unfused, unfused / ms);
    }
    printf("\n");
    cudaFree((void *)a.src); cudaFree((void *)a.diff_dst); cudaFree((void *)a.mean); cudaFree((void *)a.variance);
    cudaFree((void *)a.gamma); cudaFree(dx); cudaFree(dg); cudaFree(db);
    if (a.diff_residual) cudaFree((void *)a.diff_residual);
    if (ws) cudaFree(ws);
}

static void bench_bn(int rank, const int64_t *dims, int layout, int dt) {
    int64_t total = 1;
    for (int i = 0; i < rank; ++i) total *= dims[i];
    const int64_t C = layout == NBWD_NXC || rank == 2 ? dims[rank - 1] : dims[1];
    std::vector<unsigned char> x, dy, mean, var, gamma;
    fill(x, dt, total, -2, 2); fill(dy, dt, total, -1, 1); fill(mean, NBWD_F32, C, -0.5f, 0.5f);
    fill(var, NBWD_F32, C, 0.3f, 2.0f); fill(gamma, NBWD_F32, C, 0.5f, 1.5f);
    nbwd_batch_norm_bwd_desc d;
    nbwd_batch_norm_bwd_desc_init(&d, rank, dims, (nbwd_layout)layout, 1e-5f);
    d.data_dtype = (nbwd_dtype)dt;
    nbwd_batch_norm_bwd_args a;
    memset(&a, 0, sizeof a);
    void *dx, *dg, *db, *ws = nullptr;
    a.src = upload(x); a.diff_dst = upload(dy); a.mean = upload(mean); a.variance = upload(var); a.gamma = upload(gamma);
    CK(cudaMalloc(&dx, x.size())); CK(cudaMalloc(&dg, (size_t)C * 4)); CK(cudaMalloc(&db, (size_t)C * 4));
    a.diff_src = dx; a.diff_gamma = dg; a.diff_beta = db;
    size_t need = 0;
    nbwd_gpu_batch_norm_bwd_workspace_size(&d, &need);
    if (need) CK(cudaMalloc(&ws, need));
    nbwd_status s = nbwd_gpu_batch_norm_bwd(&d, &a, ws, need, nullptr);
    CK(cudaDeviceSynchronize());
    std::vector<unsigned char> cdx(x.size()), cdg((size_t)C * 4), cdb((size_t)C * 4);
    nbwd_batch_norm_bwd_args ca = a;
    ca.src = x.data(); ca.diff_dst = dy.data(); ca.mean = mean.data(); ca.variance = var.data(); ca.gamma = gamma.data();
    ca.diff_src = cdx.data(); ca.diff_gamma = cdg.data(); ca.diff_beta = cdb.data();
    nbwd_batch_norm_bwd(&d, &ca, nullptr, 0);
    double e1 = relerr(download(dx, x.size()), cdx, dt, total), e2 = relerr(download(dg, (size_t)C * 4), cdg, NBWD_F32, C),
           e3 = relerr(download(db, (size_t)C * 4), cdb, NBWD_F32, C);
    const double tol = dt == NBWD_F32 ? 1e-4 : 3e-2;
    const char *ok = s == NBWD_OK && e1 <= tol && e2 <= 1e-3 && e3 <= 1e-3 ? "ok" : "MISMATCH";
    float ms = median_ms([&] { nbwd_gpu_batch_norm_bwd(&d, &a, ws, need, nullptr); });
    double bytes = 3.0 * (double)x.size() + 7.0 * C * 4;
    char shape[64];
    if (rank == 4) snprintf(shape, sizeof shape, "%lldx%lldx%lldx%lld", (long long)dims[0], (long long)dims[1], (long long)dims[2], (long long)dims[3]);
    else snprintf(shape, sizeof shape, "%lldx%lld", (long long)dims[0], (long long)dims[1]);
    printf("BatchNorm %s %-15s %-4s %9.3f ms %8.1f GB/s %5.1f %% of copy  check %s (dx %.1e dg %.1e db %.1e)\n",
           layout == NBWD_NCX ? "NCX" : "NXC", shape, dt == NBWD_F32 ? "f32" : "bf16", ms, bytes / ms / 1e6,
           100.0 * bytes / ms / 1e6 / copy_gbs, ok, e1, e2, e3);
    cudaFree((void *)a.src); cudaFree((void *)a.diff_dst); cudaFree((void *)a.mean); cudaFree((void *)a.variance);
    cudaFree((void *)a.gamma); cudaFree(dx); cudaFree(dg); cudaFree(db);
    if (ws) cudaFree(ws);
}

/* GroupNorm (MEAN_VARIANCE form, every output), checked against the CPU path */
static void bench_gn(int rank, const int64_t *dims, int layout, int64_t groups, int dt) {
    int64_t total = 1;
    for (int i = 0; i < rank; ++i) total *= dims[i];
    const int64_t N = dims[0], C = layout == NBWD_NXC ? dims[rank - 1] : dims[1];
    std::vector<unsigned char> x, dy, mean, var, gamma;
    fill(x, dt, total, -2, 2); fill(dy, dt, total, -1, 1); fill(mean, NBWD_F32, N * groups, -0.5f, 0.5f);
    fill(var, NBWD_F32, N * groups, 0.3f, 2.0f); fill(gamma, NBWD_F32, C, 0.5f, 1.5f);
    nbwd_group_norm_bwd_desc d;
    nbwd_group_norm_bwd_desc_init(&d, rank, dims, (nbwd_layout)layout, groups, 1e-5f);
    d.data_dtype = (nbwd_dtype)dt;
    nbwd_group_norm_bwd_args a;
    memset(&a, 0, sizeof a);
    void *dx, *dg, *db, *ws = nullptr;
    a.src = upload(x); a.diff_dst = upload(dy); a.mean = upload(mean); a.variance = upload(var); a.gamma = upload(gamma);
    CK(cudaMalloc(&dx, x.size())); CK(cudaMalloc(&dg, (size_t)C * 4)); CK(cudaMalloc(&db, (size_t)C * 4));
    a.diff_src = dx; a.diff_gamma = dg; a.diff_beta = db;
    size_t need = 0;
    nbwd_gpu_group_norm_bwd_workspace_size(&d, &need);
    if (need) CK(cudaMalloc(&ws, need));
    nbwd_status s = nbwd_gpu_group_norm_bwd(&d, &a, ws, need, nullptr);
    CK(cudaDeviceSynchronize());
    std::vector<unsigned char> cdx(x.size()), cdg((size_t)C * 4), cdb((size_t)C * 4);
    nbwd_group_norm_bwd_args ca = a;
    ca.src = x.data(); ca.diff_dst = dy.data(); ca.mean = mean.data(); ca.variance = var.data(); ca.gamma = gamma.data();
    ca.diff_src = cdx.data(); ca.diff_gamma = cdg.data(); ca.diff_beta = cdb.data();
    nbwd_group_norm_bwd(&d, &ca, nullptr, 0);
    double e1 = relerr(download(dx, x.size()), cdx, dt, total), e2 = relerr(download(dg, (size_t)C * 4), cdg, NBWD_F32, C),
           e3 = relerr(download(db, (size_t)C * 4), cdb, NBWD_F32, C);
    const double tol = dt == NBWD_F32 ? 1e-4 : 3e-2;
    const char *ok = s == NBWD_OK && e1 <= tol && e2 <= 1e-3 && e3 <= 1e-3 ? "ok" : "MISMATCH";
    float ms = median_ms([&] { nbwd_gpu_group_norm_bwd(&d, &a, ws, need, nullptr); });
    double bytes = 3.0 * (double)x.size() + 2.0 * N * groups * 4 + 3.0 * C * 4;
    char shape[64];
    snprintf(shape, sizeof shape, "%lldx%lldx%lldx%lld", (long long)dims[0], (long long)dims[1], (long long)dims[2],
             (long long)dims[3]);
    printf("GroupNorm %s %-15s g%-3lld %-4s %9.3f ms %8.1f GB/s %5.1f %% of copy  check %s (dx %.1e dg %.1e db %.1e)\n",
           layout == NBWD_NCX ? "NCX" : "NXC", shape, (long long)groups, dt == NBWD_F32 ? "f32" : "bf16", ms,
           bytes / ms / 1e6, 100.0 * bytes / ms / 1e6 / copy_gbs, ok, e1, e2, e3);
    cudaFree((void *)a.src); cudaFree((void *)a.diff_dst); cudaFree((void *)a.mean); cudaFree((void *)a.variance);
    cudaFree((void *)a.gamma); cudaFree(dx); cudaFree(dg); cudaFree(db);
    if (ws) cudaFree(ws);
}

int main(int argc, char **argv) {
    int count = 0;
    if (argc > 1) runs = atoi(argv[1]) < 20 ? 20 : atoi(argv[1]);
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
    printf("GPU: %s (sm_%d%d), median of %d runs after warm-up\n", prop.name, prop.major, prop.minor, runs);
    printf("device-to-device cudaMemcpy: %.1f GB/s (read + write)\n", copy_gbs);
    printf("GB/s counts x, dy and dx once (+res: and the residual; plus stats and params); stats and params f32\n");
    static const int64_t ln[][2] = {{32768, 768}, {8192, 1024}, {4096, 4096}, {2048, 8192},
                                    {131072, 64}, {500000, 24}, {16384, 4096}, {8192, 12288}};
    for (int i = 0; i < 8; ++i) {
        bench_ln(ln[i][0], ln[i][1], NBWD_F32, 0, 0);
        bench_ln(ln[i][0], ln[i][1], NBWD_BF16, 0, 0);
    }
    /* RMSNorm: a 7B model's hidden size, a mid-size and an in-cache problem */
    static const int64_t rms[][2] = {{32768, 4096}, {8192, 1024}, {64, 4096}};
    for (int i = 0; i < 3; ++i) {
        bench_ln(rms[i][0], rms[i][1], NBWD_F32, 1, 0);
        bench_ln(rms[i][0], rms[i][1], NBWD_BF16, 1, 0);
    }
    /* the residual gradient fused in, against the norm call + a separate add */
    static const int64_t res[][3] = {{32768, 768, 0}, {8192, 1024, 0}, {32768, 4096, 1}, {8192, 1024, 1}};
    for (int i = 0; i < 4; ++i) {
        bench_ln(res[i][0], res[i][1], NBWD_F32, (int)res[i][2], 1);
        bench_ln(res[i][0], res[i][1], NBWD_BF16, (int)res[i][2], 1);
    }
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
    { /* GroupNorm, 32 groups: a Stable Diffusion UNet block's shape */
        static const int64_t g1[4] = {16, 320, 64, 64};
        bench_gn(4, g1, NBWD_NCX, 32, NBWD_F32);
        bench_gn(4, g1, NBWD_NCX, 32, NBWD_BF16);
    }
    return 0;
}
