/* CUDA tests of norm_bwd_gpu.h: every operation, statistics form (with
   LayerNorm's and RMSNorm's DST_RSTD), dtype combination and option (with
   the residual gradient, own or in place) against a float64 reference
   computed on the host and against the CPU path (norm_bwd.h, scalar, in
   this file), determinism across runs and grid sizes, vector vs scalar
   loads (misaligned tensors), NaN isolation in the DST_RSTD form,
   BatchNorm's two phases (reduce / apply) on slices of the batch, and
   BatchNorm's fused ReLU (NBWD_FUSE_RELU, NBWD_FUSE_ADD_RELU: the
   float64 reference on the masked diff_dst, diff_src_add's bits exact),
   and GroupNorm / InstanceNorm (both layouts, every form and dtype set,
   strides of every tensor, in place, accumulate, empty shapes, NaN
   isolation, the bits unchanged by strides and load paths).
   Without a GPU it runs the host-side checks (statuses, the no-device path),
   says that it found no GPU and exits 0. Last line: "N passed, N failed". */
#define NORM_BWD_IMPLEMENTATION
#define NORM_BWD_NO_SIMD
#define NORM_BWD_GPU_IMPLEMENTATION
#include "../../norm_bwd_gpu.h"

#include <math.h>
#include <stdint.h>
#include <vector>

static int passed, failed;
static void nbwdt_check(int ok, const char *what) {
    if (ok) {
        passed++;
    } else {
        failed++;
        printf("FAIL: %s\n", what);
    }
}
static void nbwdt_sync_impl() {
    cudaError_t e = cudaDeviceSynchronize();
    if (e != cudaSuccess) nbwdt_check(0, cudaGetErrorString(e));
}
#define NBWDT_SYNC() nbwdt_sync_impl()
#include "gpu_cases.h"

#define CK(x)                                                                                        \
    do {                                                                                             \
        cudaError_t e_ = (x);                                                                        \
        if (e_ != cudaSuccess) {                                                                     \
            printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e_), __FILE__, __LINE__);          \
            exit(2);                                                                                 \
        }                                                                                            \
    } while (0)

/* ---------------------------------------------------------------- data */
static uint64_t rng_state = 12345;
static double urand(double lo, double hi) {
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return lo + (hi - lo) * (double)(rng_state >> 11) / 9007199254740992.0;
}
static size_t esz(int dt) { return dt == NBWD_F32 ? 4 : 2; }
static float getf(const void *p, int64_t i, int dt) {
    if (dt == NBWD_F32) return ((const float *)p)[i];
    if (dt == NBWD_F16) return nbwd_f16_to_f32(((const uint16_t *)p)[i]);
    return nbwd_bf16_to_f32(((const uint16_t *)p)[i]);
}
static void setf(void *p, int64_t i, int dt, float v) {
    if (dt == NBWD_F32) ((float *)p)[i] = v;
    else if (dt == NBWD_F16) ((uint16_t *)p)[i] = nbwd_f32_to_f16(v);
    else ((uint16_t *)p)[i] = nbwd_f32_to_bf16(v);
}

/* A buffer on host and device; `off` elements of misalignment at the front. */
struct Buf {
    std::vector<unsigned char> h;
    void *d = nullptr;
    int dt = 0;
    int64_t off = 0, n = 0;
    void alloc(int dt_, int64_t n_, int64_t off_) {
        dt = dt_; n = n_; off = off_;
        h.assign((size_t)(n + off + 8) * esz(dt), 0);
        CK(cudaMalloc(&d, h.size()));
    }
    void *hp() { return h.data() + off * esz(dt); }
    void *dp() { return (char *)d + off * esz(dt); }
    void up() { CK(cudaMemcpy(d, h.data(), h.size(), cudaMemcpyHostToDevice)); }
    void down() { CK(cudaMemcpy(h.data(), d, h.size(), cudaMemcpyDeviceToHost)); }
    void fill(double lo, double hi) { for (int64_t i = 0; i < n; ++i) setf(hp(), i, dt, (float)urand(lo, hi)); }
    ~Buf() { if (d) cudaFree(d); }
};

/* max |a - ref| / max(|ref|, floor): a scale-relative error. */
struct Err {
    double num = 0, den = 0;
    void add(double a, double ref) {
        double e = fabs(a - ref);
        if (!(e <= num)) num = e; /* NaN sticks */
        if (fabs(ref) > den) den = fabs(ref);
    }
    double rel() const { return num / (den > 1e-30 ? den : 1e-30); }
};
static double tol_of(int dt) { return dt == NBWD_F32 ? 2e-5 : dt == NBWD_F16 ? 4e-3 : 3e-2; }

/* ------------------------------------------------------------ LayerNorm */
struct LnCase {
    int rank; int64_t dims[4]; int axis;
    int dt, sdt, pdt, form, affine, want_dx, want_dg, want_db, accumulate;
    float gamma_offset; /* desc.gamma_offset */
    int pad;      /* elements of padding on the last outer dim of x, dy, dx */
    int inplace;  /* diff_src == diff_dst */
    int misalign; /* tensors one element off 16-byte alignment */
    int rms;      /* RMSNorm: no mean, the variance slot holds the mean square */
    int residual; /* args.diff_residual: 0 none, 1 a tensor of its own, 2 diff_src itself (in place) */
    int res_pad;  /* residual 1: elements of padding of its own (its own strides) */
    int no_beta;  /* DST_RSTD form: args.beta NULL */
    int zero_gamma; /* some columns' gamma + offset exactly 0 (and, offset 0, subnormal) */
};

/* xhat from the forward output in float64: 0 where the scale is under
   FLT_MIN (times y - beta: NaN stays NaN) */
static double ref_unscale(double y, double ge, double be) {
    return fabs(ge) < 1.17549435082228751e-38 ? (y - be) * 0.0 : (y - be) / ge;
}

/* The entry points of c's operation (RMSNorm: LayerNorm's args but the
   mean, moved into RMSNorm's struct) */
static nbwd_rms_norm_bwd_args ln_as_rms(const nbwd_layer_norm_bwd_args &a) {
    nbwd_rms_norm_bwd_args r;
    memset(&r, 0, sizeof r);
    r.src = a.src; r.xhat = a.xhat; r.diff_dst = a.diff_dst; r.mean_square = a.variance; r.rstd = a.rstd;
    r.std = a.std; r.gamma = a.gamma; r.diff_src = a.diff_src; r.diff_gamma = a.diff_gamma; r.diff_beta = a.diff_beta;
    r.beta = a.beta; r.dst = a.dst; r.diff_residual = a.diff_residual;
    return r;
}
static nbwd_status gpu_ln_call(const LnCase &c, const nbwd_layer_norm_bwd_desc *d, const nbwd_layer_norm_bwd_args &a,
                               void *ws, size_t need) {
    if (!c.rms) return nbwd_gpu_layer_norm_bwd(d, &a, ws, need, nullptr);
    const nbwd_rms_norm_bwd_args r = ln_as_rms(a);
    return nbwd_gpu_rms_norm_bwd(d, &r, ws, need, nullptr);
}
static nbwd_status cpu_ln_call(const LnCase &c, const nbwd_layer_norm_bwd_desc *d, const nbwd_layer_norm_bwd_args &a) {
    if (!c.rms) return nbwd_layer_norm_bwd(d, &a, nullptr, 0);
    const nbwd_rms_norm_bwd_args r = ln_as_rms(a);
    return nbwd_rms_norm_bwd(d, &r, nullptr, 0);
}

/* Runs one LayerNorm case: GPU vs float64 reference vs CPU path, and the
   GPU determinism checks. */
static void ln_run(const LnCase &c) {
    char what[512];
    snprintf(what, sizeof what, "%s rank %d dims [%lld %lld %lld %lld] axis %d dt %d/%d/%d form %d affine %d out %d%d%d acc %d pad %d inplace %d misalign %d offset %g res %d/%d nobeta %d zerog %d",
             c.rms ? "RMS" : "LN", c.rank, (long long)c.dims[0], (long long)c.dims[1], (long long)c.dims[2],
             (long long)c.dims[3], c.axis,
             c.dt, c.sdt, c.pdt, c.form, c.affine, c.want_dx, c.want_dg, c.want_db, c.accumulate, c.pad, c.inplace,
             c.misalign, (double)c.gamma_offset, c.residual, c.res_pad, c.no_beta, c.zero_gamma);
    const int dst_form = c.form == NBWD_STATS_DST_RSTD, mean_form = !dst_form && c.form != NBWD_STATS_XHAT_STD;
    int64_t rows = 1, n = 1;
    for (int d = 0; d < c.axis; ++d) rows *= c.dims[d];
    for (int d = c.axis; d < c.rank; ++d) n *= c.dims[d];
    /* strides: dense, with `pad` extra elements per outer row */
    int64_t st[NBWD_MAX_RANK], s = 1;
    for (int d = c.rank - 1; d >= 0; --d) {
        st[d] = s;
        s *= c.dims[d] + (d == c.axis - 1 ? c.pad : 0);
    }
    const int64_t span = s; /* elements spanned */
    /* the residual's strides: its own padding, or diff_src's (in place) */
    int64_t st_res[NBWD_MAX_RANK], s_res = 1;
    for (int d = c.rank - 1; d >= 0; --d) {
        st_res[d] = c.residual == 2 ? st[d] : s_res;
        s_res *= c.dims[d] + (d == c.axis - 1 ? (c.residual == 2 ? c.pad : c.res_pad) : 0);
    }
    nbwd_layer_norm_bwd_desc desc;
    if (c.rms) nbwd_rms_norm_bwd_desc_init(&desc, c.rank, c.dims);
    else nbwd_layer_norm_bwd_desc_init(&desc, c.rank, c.dims);
    desc.begin_norm_axis = c.axis;
    desc.use_affine = c.affine;
    desc.gamma_offset = c.gamma_offset;
    desc.stats_form = (nbwd_stats_form)c.form;
    desc.data_dtype = (nbwd_dtype)c.dt; desc.stats_dtype = (nbwd_dtype)c.sdt; desc.param_dtype = (nbwd_dtype)c.pdt;
    desc.flags = c.accumulate ? NBWD_ACCUMULATE_PARAM_GRADS : 0;
    if (c.pad) desc.src_strides = desc.diff_dst_strides = desc.diff_src_strides = st;
    if (c.residual == 2 ? c.pad : c.res_pad) desc.diff_residual_strides = st_res;
    /* the row offsets of x, dy, dx and of the residual */
    auto row_off = [&](int64_t r, const int64_t *strides) {
        int64_t o = 0;
        for (int d = c.axis - 1; d >= 0; --d) { o += (r % c.dims[d]) * strides[d]; r /= c.dims[d]; }
        return o;
    };

    Buf x, dy, dx, mean, spread, gamma, beta, dg, db, res;
    const int64_t mis = c.misalign ? 1 : 0;
    x.alloc(c.dt, span, mis); dy.alloc(c.dt, span, mis); dx.alloc(c.dt, span, mis);
    res.alloc(c.dt, c.residual ? s_res : 1, mis);
    mean.alloc(c.sdt, rows, 0); spread.alloc(c.sdt, rows, 0);
    gamma.alloc(c.pdt, n, mis); beta.alloc(c.pdt, n, mis); dg.alloc(c.pdt, n, 0); db.alloc(c.pdt, n, 0);
    x.fill(-2, 2); dy.fill(-1, 1); dx.fill(-9, 9); mean.fill(-0.5, 0.5);
    gamma.fill(0.5, 1.5); beta.fill(-0.5, 0.5); dg.fill(-1, 1); db.fill(-1, 1);
    if (c.residual) res.fill(-1, 1);
    if (c.zero_gamma) /* the scale exactly 0, or (offset 0) subnormal: xhat is 0 there */
        for (int64_t j = 0; j < n; ++j) {
            if (j % 5 == 2) setf(gamma.hp(), j, c.pdt, -c.gamma_offset);
            if (j % 7 == 3 && c.gamma_offset == 0.0f) setf(gamma.hp(), j, c.pdt, 1e-39f);
        }
    /* the effective scale and bias the forward used (DST_RSTD) */
    auto ge_of = [&](int64_t j) { return c.affine ? getf(gamma.hp(), j, c.pdt) + (double)c.gamma_offset : 1.0; };
    auto be_of = [&](int64_t j) { return dst_form && c.affine && !c.no_beta ? (double)getf(beta.hp(), j, c.pdt) : 0.0; };
    if (dst_form) /* x holds the forward output y = xhat * scale + beta */
        for (int64_t r = 0; r < rows; ++r)
            for (int64_t j = 0; j < n; ++j)
                setf(x.hp(), row_off(r, st) + j, c.dt, (float)(urand(-2, 2) * ge_of(j) + be_of(j)));
    for (int64_t r = 0; r < rows; ++r) {
        double var = urand(0.3, 2.0);
        double v = c.form == NBWD_STATS_MEAN_VARIANCE                  ? var
                   : c.form == NBWD_STATS_MEAN_RSTD || dst_form ? 1.0 / sqrt(var + 1e-5)
                                                                       : sqrt(var + 1e-5);
        setf(spread.hp(), r, c.sdt, (float)v);
    }
    /* dx's buffer starts as the output's initial contents: dy (in place),
       the residual (accumulated in place) or its own */
    if (c.inplace) memcpy(dx.h.data(), dy.h.data(), dy.h.size());
    if (c.residual == 2) memcpy(dx.h.data(), res.h.data(), res.h.size());
    const std::vector<unsigned char> dx0 = dx.h, dg0 = dg.h, db0 = db.h, res0 = res.h;
    x.up(); dy.up(); dx.up(); mean.up(); spread.up(); gamma.up(); beta.up(); dg.up(); db.up(); res.up();

    /* float64 reference from the stored (quantized) values */
    std::vector<double> rdx((size_t)(rows * n)), rdg((size_t)n, 0.0), rdb((size_t)n, 0.0);
    for (int64_t r = 0; r < rows; ++r) {
        const int64_t o = row_off(r, st);
        double sp = getf(spread.hp(), r, c.sdt);
        double m = !mean_form || c.rms ? 0.0 : getf(mean.hp(), r, c.sdt);
        double rstd = c.form == NBWD_STATS_MEAN_VARIANCE                  ? 1.0 / sqrt(sp + (double)desc.epsilon)
                      : c.form == NBWD_STATS_MEAN_RSTD || dst_form ? sp
                                                                         : 1.0 / sp;
        double xs = mean_form ? rstd : 1.0, sg = 0, sgx = 0;
        auto xhat = [&](int64_t j) {
            double xv = getf(x.hp(), o + j, c.dt);
            return dst_form ? ref_unscale(xv, ge_of(j), be_of(j)) : (xv - m) * xs;
        };
        for (int64_t j = 0; j < n; ++j) {
            double xh = xhat(j), dv = getf(dy.hp(), o + j, c.dt);
            double g = dv * ge_of(j);
            sg += g; sgx += g * xh;
            rdg[(size_t)j] += dv * xh; rdb[(size_t)j] += dv;
        }
        for (int64_t j = 0; j < n; ++j) {
            double xh = xhat(j), dv = getf(dy.hp(), o + j, c.dt);
            double g = dv * ge_of(j);
            rdx[(size_t)(r * n + j)] = rstd * (g - (c.rms ? 0.0 : sg / n) - xh * sgx / n) +
                                       (c.residual ? getf(res0.data() + mis * esz(c.dt), row_off(r, st_res) + j, c.dt) : 0.0);
        }
    }
    if (c.accumulate)
        for (int64_t j = 0; j < n; ++j) {
            rdg[(size_t)j] += getf(dg0.data(), j, c.pdt);
            rdb[(size_t)j] += getf(db0.data(), j, c.pdt);
        }

    /* GPU */
    nbwd_layer_norm_bwd_args a;
    memset(&a, 0, sizeof a);
    if (c.form == NBWD_STATS_XHAT_STD) a.xhat = x.dp(); else if (dst_form) a.dst = x.dp(); else a.src = x.dp();
    a.diff_dst = dy.dp();
    if (mean_form && !c.rms) a.mean = mean.dp();
    if (c.form == NBWD_STATS_MEAN_VARIANCE) a.variance = spread.dp();
    else if (c.form == NBWD_STATS_MEAN_RSTD || dst_form) a.rstd = spread.dp();
    else a.std = spread.dp();
    /* (DST_RSTD, diff_beta alone: gamma and beta are not read, pass none) */
    const int no_params = dst_form && !c.want_dx && !c.want_dg;
    if (c.affine && !no_params) a.gamma = gamma.dp();
    if (dst_form && c.affine && !c.no_beta && !no_params) a.beta = beta.dp();
    if (c.residual) a.diff_residual = res.dp();
    if (c.want_dx) a.diff_src = c.inplace ? dy.dp() : c.residual == 2 ? res.dp() : dx.dp();
    if (c.want_dg) a.diff_gamma = dg.dp();
    if (c.want_db) a.diff_beta = db.dp();
    size_t need = 0;
    if (c.rms) nbwd_gpu_rms_norm_bwd_workspace_size(&desc, &need);
    else nbwd_gpu_layer_norm_bwd_workspace_size(&desc, &need);
    void *ws = nullptr;
    if (need) CK(cudaMalloc(&ws, need));
    nbwd_status st_ = gpu_ln_call(c, &desc, a, ws, need);
    CK(cudaDeviceSynchronize());
    if (st_ != NBWD_OK) {
        char w2[1024];
        snprintf(w2, sizeof w2, "%s: status %d (%.300s)", what, (int)st_, nbwd_gpu_last_error());
        nbwdt_check(0, w2);
        if (ws) cudaFree(ws);
        return;
    }
    Buf &out = c.inplace ? dy : c.residual == 2 ? res : dx;
    out.down(); dg.down(); db.down();
    const std::vector<unsigned char> g_dx = out.h, g_dg = dg.h, g_db = db.h;
    int untouched = 1;
    if (c.residual == 1) { /* an input: unchanged */
        res.down();
        untouched = res.h == res0;
    }

    /* CPU path on host copies of the same inputs */
    std::vector<unsigned char> cx(x.h), cdy(c.inplace ? std::vector<unsigned char>() : dy.h), cdx(dx0), cdg(dg0), cdb(db0),
        cres(res0);
    if (c.inplace) { /* dy was overwritten on the device, the host copy is the original */
        cdy.assign(dx0.begin(), dx0.end());
    }
    nbwd_layer_norm_bwd_args ca = a;
    const size_t mb = (size_t)mis * esz(c.dt);
    if (c.form == NBWD_STATS_XHAT_STD) ca.xhat = cx.data() + mb; else if (dst_form) ca.dst = cx.data() + mb; else ca.src = cx.data() + mb;
    ca.diff_dst = cdy.data() + mb;
    if (a.mean) ca.mean = mean.hp();
    if (a.variance) ca.variance = spread.hp();
    if (a.rstd) ca.rstd = spread.hp();
    if (a.std) ca.std = spread.hp();
    if (a.gamma) ca.gamma = gamma.hp();
    if (a.beta) ca.beta = beta.hp();
    if (a.diff_residual) ca.diff_residual = cres.data() + mb;
    if (a.diff_src) ca.diff_src = c.inplace ? cdy.data() + mb : c.residual == 2 ? cres.data() + mb : cdx.data() + mb;
    if (a.diff_gamma) ca.diff_gamma = cdg.data();
    if (a.diff_beta) ca.diff_beta = cdb.data();
    nbwd_status cs = cpu_ln_call(c, &desc, ca);
    nbwdt_check(cs == NBWD_OK, what);
    const std::vector<unsigned char> &c_dx = c.inplace ? cdy : c.residual == 2 ? cres : cdx;

    Err e_ref_dx, e_cpu_dx, e_ref_dg, e_cpu_dg, e_ref_db, e_cpu_db;
    for (int64_t r = 0; r < rows && c.want_dx; ++r) {
        const int64_t o = row_off(r, st);
        for (int64_t j = 0; j < n; ++j) {
            double gv = getf(g_dx.data() + mb, o + j, c.dt);
            e_ref_dx.add(gv, rdx[(size_t)(r * n + j)]);
            e_cpu_dx.add(gv, getf(c_dx.data() + mb, o + j, c.dt));
        }
    }
    if (!c.want_dx && !c.inplace) untouched &= g_dx == dx0;
    for (int64_t j = 0; j < n; ++j) {
        if (c.want_dg) { e_ref_dg.add(getf(g_dg.data(), j, c.pdt), rdg[(size_t)j]); e_cpu_dg.add(getf(g_dg.data(), j, c.pdt), getf(cdg.data(), j, c.pdt)); }
        if (c.want_db) { e_ref_db.add(getf(g_db.data(), j, c.pdt), rdb[(size_t)j]); e_cpu_db.add(getf(g_db.data(), j, c.pdt), getf(cdb.data(), j, c.pdt)); }
    }
    if (!c.want_dg) untouched &= g_dg == dg0;
    if (!c.want_db) untouched &= g_db == db0;
    /* padding between rows must be untouched */
    if (c.pad && c.want_dx && !c.inplace) {
        for (int64_t i = 0; i < span; ++i) {
            int64_t rem = i, inside = 1;
            for (int d = c.rank - 1; d >= 0; --d) {
                int64_t ext = c.dims[d] + (d == c.axis - 1 ? c.pad : 0);
                if (rem % ext >= c.dims[d]) inside = 0;
                rem /= ext;
            }
            if (!inside && memcmp(g_dx.data() + (mb + i * esz(c.dt)), dx0.data() + (mb + i * esz(c.dt)), esz(c.dt))) untouched = 0;
        }
    }
    const double tdx = tol_of(c.dt), tp = tol_of(c.pdt) * (c.pdt == NBWD_F32 ? 10 : 1);
    char w2[1100];
    snprintf(w2, sizeof w2, "%s: dx err ref %.2e cpu %.2e, dg %.2e/%.2e, db %.2e/%.2e, untouched %d", what,
             e_ref_dx.rel(), e_cpu_dx.rel(), e_ref_dg.rel(), e_cpu_dg.rel(), e_ref_db.rel(), e_cpu_db.rel(), untouched);
    nbwdt_check(e_ref_dx.rel() <= tdx && e_cpu_dx.rel() <= 2 * tdx && e_ref_dg.rel() <= tp && e_cpu_dg.rel() <= 2 * tp &&
                    e_ref_db.rel() <= tp && e_cpu_db.rel() <= 2 * tp && untouched,
                w2);

    /* determinism: same call again, and with grids of 1, 3 and 7 blocks */
    static const int grids[] = {0, 1, 3, 7};
    for (int gi = 0; gi < 4; ++gi) {
        nbwd_gpu__max_grid = grids[gi];
        out.h = dx0; out.up();
        dg.h = dg0; db.h = db0; dg.up(); db.up();
        st_ = gpu_ln_call(c, &desc, a, ws, need);
        CK(cudaDeviceSynchronize());
        out.down(); dg.down(); db.down();
        snprintf(w2, sizeof w2, "%s: bitwise identical rerun, grid cap %d", what, grids[gi]);
        nbwdt_check(st_ == NBWD_OK && out.h == g_dx && dg.h == g_dg && db.h == g_db, w2);
    }
    nbwd_gpu__max_grid = 0;
    if (ws) cudaFree(ws);
}

/* aligned vs misaligned (vector vs scalar loads) must agree bitwise: the
   same case with misalign 0 and 1, outputs compared through the host.
   c.form DST_RSTD (then with beta, c.gamma_offset and a residual): the
   forward-output form's loads of beta and the residual too. */
static void ln_vec_scalar(LnCase c) {
    /* run both and compare dx/dg/db bits via a small re-implementation of
       the run: reuse ln_run's data by seeding the generator identically */
    uint64_t seed = rng_state;
    std::vector<unsigned char> outs[2][3];
    for (int m = 0; m < 2; ++m) {
        rng_state = seed;
        c.misalign = m;
        int64_t rows = c.dims[0], n = c.dims[1];
        const int dst_form = c.form == NBWD_STATS_DST_RSTD;
        nbwd_layer_norm_bwd_desc desc;
        nbwd_layer_norm_bwd_desc_init(&desc, 2, c.dims);
        desc.data_dtype = (nbwd_dtype)c.dt; desc.stats_dtype = (nbwd_dtype)c.sdt; desc.param_dtype = (nbwd_dtype)c.pdt;
        desc.stats_form = (nbwd_stats_form)c.form;
        desc.gamma_offset = c.gamma_offset;
        Buf x, dy, dx, mean, var, gamma, beta, res, dg, db;
        x.alloc(c.dt, rows * n, m); dy.alloc(c.dt, rows * n, m); dx.alloc(c.dt, rows * n, m); res.alloc(c.dt, rows * n, m);
        mean.alloc(c.sdt, rows, 0); var.alloc(c.sdt, rows, 0); gamma.alloc(c.pdt, n, m); beta.alloc(c.pdt, n, m);
        dg.alloc(c.pdt, n, 0); db.alloc(c.pdt, n, 0);
        x.fill(-2, 2); dy.fill(-1, 1); mean.fill(-0.5, 0.5); var.fill(0.3, 2); gamma.fill(0.5, 1.5);
        beta.fill(-0.5, 0.5); res.fill(-1, 1);
        x.up(); dy.up(); dx.up(); mean.up(); var.up(); gamma.up(); beta.up(); res.up(); dg.up(); db.up();
        nbwd_layer_norm_bwd_args a;
        memset(&a, 0, sizeof a);
        a.diff_dst = dy.dp(); a.gamma = gamma.dp();
        a.diff_src = dx.dp(); a.diff_gamma = dg.dp(); a.diff_beta = db.dp();
        if (dst_form) {
            a.dst = x.dp(); a.rstd = var.dp(); a.beta = beta.dp(); a.diff_residual = res.dp();
        } else {
            a.src = x.dp(); a.mean = mean.dp(); a.variance = var.dp();
        }
        size_t need = 0;
        nbwd_gpu_layer_norm_bwd_workspace_size(&desc, &need);
        void *ws = nullptr;
        if (need) CK(cudaMalloc(&ws, need));
        nbwd_status s = nbwd_gpu_layer_norm_bwd(&desc, &a, ws, need, nullptr);
        CK(cudaDeviceSynchronize());
        nbwdt_check(s == NBWD_OK, "LN vec/scalar run");
        dx.down(); dg.down(); db.down();
        outs[m][0].assign(dx.h.begin() + m * esz(c.dt), dx.h.begin() + (m + rows * n) * esz(c.dt));
        outs[m][1] = dg.h; outs[m][2] = db.h;
        if (ws) cudaFree(ws);
    }
    char w[200];
    snprintf(w, sizeof w, "LN [%lld x %lld] dt %d form %d: 16-byte and scalar loads give identical bits",
             (long long)c.dims[0], (long long)c.dims[1], c.dt, c.form);
    nbwdt_check(outs[0][0] == outs[1][0] && outs[0][1] == outs[1][1] && outs[0][2] == outs[1][2], w);
}

/* NaN semantics of the DST_RSTD form with a residual: a NaN in the
   residual changes only its own element of diff_src; one in dst (like one
   in x) poisons its row's diff_src and its column's diff_gamma. Every other
   bit is the NaN-free run's. */
static void ln_nan_isolation(int dt, int rms, int64_t rows, int64_t n) {
    const int64_t r0 = rows / 2, j0 = n / 3, r1 = rows - 1, j1 = n - 1; /* rows >= 3: r0 != r1 */
    const int64_t total = rows * n;
    const int64_t dims[2] = {rows, n};
    nbwd_layer_norm_bwd_desc desc;
    if (rms) nbwd_rms_norm_bwd_desc_init(&desc, 2, dims);
    else nbwd_layer_norm_bwd_desc_init(&desc, 2, dims);
    desc.stats_form = NBWD_STATS_DST_RSTD;
    desc.data_dtype = (nbwd_dtype)dt;
    Buf y, dy, rstd, gamma, beta, res, dx, dg, db;
    y.alloc(dt, total, 0); dy.alloc(dt, total, 0); res.alloc(dt, total, 0); dx.alloc(dt, total, 0);
    rstd.alloc(NBWD_F32, rows, 0); gamma.alloc(NBWD_F32, n, 0); beta.alloc(NBWD_F32, n, 0);
    dg.alloc(NBWD_F32, n, 0); db.alloc(NBWD_F32, n, 0);
    y.fill(-2, 2); dy.fill(-1, 1); res.fill(-1, 1); rstd.fill(0.5, 2); gamma.fill(0.5, 1.5); beta.fill(-0.5, 0.5);
    setf(gamma.hp(), (j0 + 1) % n, NBWD_F32, 0.0f); /* and a zero scale elsewhere: xhat 0 there */
    y.up(); dy.up(); rstd.up(); gamma.up(); beta.up(); res.up();
    nbwd_layer_norm_bwd_args a;
    memset(&a, 0, sizeof a);
    a.dst = y.dp(); a.diff_dst = dy.dp(); a.rstd = rstd.dp(); a.gamma = gamma.dp(); a.beta = beta.dp();
    a.diff_residual = res.dp(); a.diff_src = dx.dp(); a.diff_gamma = dg.dp(); a.diff_beta = db.dp();
    LnCase c;
    memset(&c, 0, sizeof c);
    c.rms = rms;
    size_t need = 0;
    if (rms) nbwd_gpu_rms_norm_bwd_workspace_size(&desc, &need);
    else nbwd_gpu_layer_norm_bwd_workspace_size(&desc, &need);
    void *ws = nullptr;
    if (need) CK(cudaMalloc(&ws, need));
    std::vector<unsigned char> outs[2][3];
    int ok = 1;
    for (int pass = 0; pass < 2; ++pass) {
        if (pass == 1) {
            setf(y.hp(), r0 * n + j0, dt, NAN);
            setf(res.hp(), r1 * n + j1, dt, NAN);
            y.up(); res.up();
        }
        ok &= gpu_ln_call(c, &desc, a, ws, need) == NBWD_OK;
        CK(cudaDeviceSynchronize());
        dx.down(); dg.down(); db.down();
        outs[pass][0] = dx.h; outs[pass][1] = dg.h; outs[pass][2] = db.h;
    }
    const size_t e = esz(dt);
    int isolated = 1;
    for (int64_t i = 0; i < total; ++i) {
        const int64_t r = i / n, j = i % n;
        const int nan = isnan(getf(outs[1][0].data(), i, dt));
        const int same = memcmp(outs[0][0].data() + i * e, outs[1][0].data() + i * e, e) == 0;
        if (r == r0 || (r == r1 && j == j1) ? !nan : !same) isolated = 0;
    }
    for (int64_t j = 0; j < n; ++j) {
        const int nan = isnan(getf(outs[1][1].data(), j, NBWD_F32));
        const int same = memcmp(outs[0][1].data() + j * 4, outs[1][1].data() + j * 4, 4) == 0;
        if (j == j0 ? !nan : !same) isolated = 0;
    }
    isolated &= outs[0][2] == outs[1][2]; /* diff_beta: sums of dy alone */
    char w[200];
    snprintf(w, sizeof w, "%s DST_RSTD [%lld x %lld] dt %d: NaN in dst and in the residual stay where they belong",
             rms ? "RMS" : "LN", (long long)rows, (long long)n, dt);
    nbwdt_check(ok && isolated, w);
    if (ws) cudaFree(ws);
}

/* ------------------------------------------------------------ BatchNorm */
struct BnCase {
    int rank; int64_t dims[5]; int layout;
    int dt, sdt, pdt, form, has_gamma, want_dx, want_pg, accumulate, pad, inplace, misalign;
    int global; /* NBWD_USE_GLOBAL_STATS */
    int split;  /* > 0: the two-phase calls on that many slices of the batch (bn_split_gpu) */
    unsigned relu;  /* 0, NBWD_FUSE_RELU or NBWD_FUSE_ADD_RELU (args.dst, args.diff_src_add) */
    int relu_st;    /* 1: dst (inner stride 2, padded) and diff_src_add (padded; [N, C]: channel stride
                       2, gathered) with strides of their own; 2: diff_dst too (inner stride 2) */
    int relu_alias; /* BRA_*: an output that is exactly another tensor */
};
enum { BRA_NONE, BRA_ADD_DY, BRA_ADD_DST, BRA_DX_DST }; /* diff_src_add == diff_dst / dst, diff_src == dst */

/* Row-major strides over c's dims, inner stride `inner`, `pad` more
   elements on dim pad_dim; returns the elements spanned. */
static int64_t bn_strides(const BnCase &c, int64_t inner, int pad_dim, int64_t pad, int64_t *st) {
    int64_t s = inner;
    for (int d = c.rank - 1; d >= 0; --d) {
        st[d] = s;
        s *= c.dims[d] + (d == pad_dim ? pad : 0);
    }
    return s;
}

/* Slice k of `slices` (batch entries [n0, n1): an empty one where N <
   slices) of the whole batch's desc and args: the same strides (each
   tensor's own, dense or not; dim 0's outermost), dims[0] its own, the
   data tensors from entry n0 on. */
static int64_t bn_slice(const nbwd_batch_norm_bwd_desc &desc, const nbwd_batch_norm_bwd_args &a, int k, int slices,
                        nbwd_batch_norm_bwd_desc &sd, nbwd_batch_norm_bwd_args &sa) {
    const int64_t N = desc.dims[0], n0 = N * k / slices, n1 = N * (k + 1) / slices;
    int64_t dense0 = 1;
    for (int d = 1; d < desc.rank; ++d) dense0 *= desc.dims[d];
    auto at = [&](const void *p, const int64_t *given) {
        return p ? (void *)((char *)p + n0 * (given ? given[0] : dense0) * (int64_t)esz(desc.data_dtype)) : nullptr;
    };
    sd = desc;
    sd.dims[0] = n1 - n0;
    sa = a;
    sa.src = at(a.src, desc.src_strides); sa.xhat = at(a.xhat, desc.src_strides);
    sa.diff_dst = at(a.diff_dst, desc.diff_dst_strides); sa.diff_src = at(a.diff_src, desc.diff_src_strides);
    sa.dst = at(a.dst, desc.dst_strides); sa.diff_src_add = at(a.diff_src_add, desc.diff_src_add_strides);
    return n1 - n0;
}

/* The batch in c.split slices, as processes would hold it: reduce on each
   slice (device sums and a host count), the f32 sums added on the host in
   slice order (what an all-reduce does) and uploaded, the counts added, then
   apply on each slice with the totals. Each slice but the last writes
   diff_gamma/diff_beta into a device copy of its own (as each process has
   one, with the same initial contents): they must have the last one's bits
   (args' own, compared with the references by the caller). S: elements per
   channel and batch entry (reduce's count is its slice's N * S). */
static nbwd_status bn_split_gpu(const BnCase &c, const nbwd_batch_norm_bwd_desc &desc,
                                const nbwd_batch_norm_bwd_args &a, int64_t C, int64_t S, const char *what) {
    const size_t cb = (size_t)(C > 0 ? C : 1) * 4, pb = (size_t)(C > 0 ? C : 1) * esz(c.pdt);
    std::vector<float *> sdy((size_t)c.split), sdyx((size_t)c.split);
    std::vector<float> tdy((size_t)(C > 0 ? C : 1), 0.0f), tdyx(tdy), part(tdy);
    float *gdy = nullptr, *gdyx = nullptr;
    void *ws = nullptr, *idg = nullptr, *odg = nullptr; /* [2][C]: diff_gamma, diff_beta */
    size_t wsb = 0;
    int64_t count = 0;
    nbwd_status s = NBWD_OK;
    int counts_ok = 1;
    for (int k = 0; k < c.split; ++k) { /* one workspace, the largest slice's */
        nbwd_batch_norm_bwd_desc sd;
        nbwd_batch_norm_bwd_args sa;
        size_t need = 0;
        bn_slice(desc, a, k, c.split, sd, sa);
        nbwd_gpu_batch_norm_bwd_workspace_size(&sd, &need);
        if (need > wsb) wsb = need;
        CK(cudaMalloc(&sdy[(size_t)k], cb));
        CK(cudaMalloc(&sdyx[(size_t)k], cb));
    }
    if (wsb) CK(cudaMalloc(&ws, wsb));
    CK(cudaMalloc(&gdy, cb)); CK(cudaMalloc(&gdyx, cb));
    for (int k = 0; k < c.split && s == NBWD_OK; ++k) {
        nbwd_batch_norm_bwd_desc sd;
        nbwd_batch_norm_bwd_args sa;
        int64_t kc = -1;
        const int64_t nk = bn_slice(desc, a, k, c.split, sd, sa);
        sa.diff_src = sa.diff_gamma = sa.diff_beta = nullptr;
        s = nbwd_gpu_batch_norm_bwd_reduce(&sd, &sa, sdy[(size_t)k], sdyx[(size_t)k], &kc, ws, wsb, nullptr);
        counts_ok &= s != NBWD_OK || kc == nk * S;
        count += kc;
    }
    CK(cudaDeviceSynchronize());
    for (int k = 0; k < c.split && s == NBWD_OK && C > 0; ++k) {
        CK(cudaMemcpy(part.data(), sdy[(size_t)k], cb, cudaMemcpyDeviceToHost));
        for (int64_t i = 0; i < C; ++i) tdy[(size_t)i] += part[(size_t)i];
        CK(cudaMemcpy(part.data(), sdyx[(size_t)k], cb, cudaMemcpyDeviceToHost));
        for (int64_t i = 0; i < C; ++i) tdyx[(size_t)i] += part[(size_t)i];
    }
    CK(cudaMemcpy(gdy, tdy.data(), cb, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(gdyx, tdyx.data(), cb, cudaMemcpyHostToDevice));
    if (a.diff_gamma && c.split > 1) { /* the initial contents, as args' are now */
        CK(cudaMalloc(&idg, 2 * pb));
        CK(cudaMalloc(&odg, 2 * pb));
        CK(cudaMemcpy(idg, a.diff_gamma, pb, cudaMemcpyDeviceToDevice));
        CK(cudaMemcpy((char *)idg + pb, a.diff_beta, pb, cudaMemcpyDeviceToDevice));
    }
    std::vector<std::vector<unsigned char>> early;
    for (int k = 0; k < c.split && s == NBWD_OK; ++k) {
        nbwd_batch_norm_bwd_desc sd;
        nbwd_batch_norm_bwd_args sa;
        const int own = odg && k < c.split - 1;
        bn_slice(desc, a, k, c.split, sd, sa);
        if (own) {
            CK(cudaMemcpy(odg, idg, 2 * pb, cudaMemcpyDeviceToDevice));
            sa.diff_gamma = odg;
            sa.diff_beta = (char *)odg + pb;
        }
        s = nbwd_gpu_batch_norm_bwd_apply(&sd, &sa, gdy, gdyx, count, ws, wsb, nullptr);
        if (own && s == NBWD_OK) {
            early.emplace_back(2 * pb);
            CK(cudaMemcpy(early.back().data(), odg, 2 * pb, cudaMemcpyDeviceToHost));
        }
    }
    CK(cudaDeviceSynchronize());
    char w[700];
    snprintf(w, sizeof w, "%s: the slices' counts (%lld in all)", what, (long long)count);
    nbwdt_check(s != NBWD_OK || (counts_ok && count == S * desc.dims[0]), w);
    if (odg && s == NBWD_OK) {
        std::vector<unsigned char> last(2 * pb);
        int same = 1;
        CK(cudaMemcpy(last.data(), a.diff_gamma, pb, cudaMemcpyDeviceToHost));
        CK(cudaMemcpy(last.data() + pb, a.diff_beta, pb, cudaMemcpyDeviceToHost));
        for (size_t k = 0; k < early.size(); ++k) same &= early[k] == last;
        snprintf(w, sizeof w, "%s: the earlier slices' diff_gamma/diff_beta have the last slice's bits", what);
        nbwdt_check(same, w);
    }
    for (int k = 0; k < c.split; ++k) { cudaFree(sdy[(size_t)k]); cudaFree(sdyx[(size_t)k]); }
    cudaFree(gdy); cudaFree(gdyx);
    if (ws) cudaFree(ws);
    if (odg) { cudaFree(odg); cudaFree(idg); }
    return s;
}

/* The CPU path's two phases on the same slices of the host copies, the
   same f32 additions in the same order (each earlier slice's
   diff_gamma/diff_beta into a copy of its own). */
static nbwd_status bn_split_cpu(const BnCase &c, const nbwd_batch_norm_bwd_desc &desc,
                                const nbwd_batch_norm_bwd_args &a, int64_t C) {
    const size_t Cn = (size_t)(C > 0 ? C : 1), pb = Cn * esz(c.pdt);
    std::vector<float> tdy(Cn, 0.0f), tdyx(Cn, 0.0f), pdy(Cn), pdyx(Cn);
    std::vector<unsigned char> init, own;
    int64_t count = 0;
    nbwd_status s = NBWD_OK;
    for (int k = 0; k < c.split && s == NBWD_OK; ++k) {
        nbwd_batch_norm_bwd_desc sd;
        nbwd_batch_norm_bwd_args sa;
        int64_t kc = 0;
        bn_slice(desc, a, k, c.split, sd, sa);
        sa.diff_src = sa.diff_gamma = sa.diff_beta = nullptr;
        s = nbwd_batch_norm_bwd_reduce(&sd, &sa, pdy.data(), pdyx.data(), &kc, nullptr, 0);
        for (int64_t i = 0; i < C; ++i) { tdy[(size_t)i] += pdy[(size_t)i]; tdyx[(size_t)i] += pdyx[(size_t)i]; }
        count += kc;
    }
    if (a.diff_gamma) {
        init.resize(2 * pb);
        memcpy(init.data(), a.diff_gamma, pb);
        memcpy(init.data() + pb, a.diff_beta, pb);
    }
    for (int k = 0; k < c.split && s == NBWD_OK; ++k) {
        nbwd_batch_norm_bwd_desc sd;
        nbwd_batch_norm_bwd_args sa;
        bn_slice(desc, a, k, c.split, sd, sa);
        if (a.diff_gamma && k < c.split - 1) {
            own = init;
            sa.diff_gamma = own.data();
            sa.diff_beta = own.data() + pb;
        }
        s = nbwd_batch_norm_bwd_apply(&sd, &sa, tdy.data(), tdyx.data(), count, nullptr, 0);
    }
    return s;
}

/* The fused ReLU's forward output: positives (normal, subnormal, +inf)
   pass; +0, -0, negatives (-inf, a negative subnormal) and NaNs of either
   sign (the smallest NaN, just above +inf's bits, too) are clipped. */
static void setbits(void *p, int64_t i, int dt, uint32_t f32, uint16_t bf16, uint16_t f16) {
    if (dt == NBWD_F32) memcpy((char *)p + i * 4, &f32, 4);
    else memcpy((char *)p + i * 2, dt == NBWD_BF16 ? &bf16 : &f16, 2);
}
static void relu_dst_fill(void *p, int64_t n, int dt) {
    for (int64_t i = 0; i < n; ++i) {
        const int k = (int)urand(0, 16);
        if (k < 6) setf(p, i, dt, (float)urand(0.05, 3));
        else if (k < 10) setf(p, i, dt, (float)urand(-3, -0.05));
        else if (k == 10) setf(p, i, dt, 0.0f);
        else if (k == 11) setf(p, i, dt, -0.0f);
        else if (k == 12) setbits(p, i, dt, 0x7F800000u, 0x7F80u, 0x7C00u);    /* +inf: passes */
        else if (k == 13) setbits(p, i, dt, 0x00000001u, 0x0001u, 0x0001u);    /* smallest subnormal: passes */
        else if (k == 14) setbits(p, i, dt, 0x7F800001u, 0x7F81u, 0x7C01u);    /* the smallest NaN */
        else if (i % 3 == 0) setbits(p, i, dt, 0xFFC00000u, 0xFFC0u, 0xFE00u); /* -NaN */
        else if (i % 3 == 1) setbits(p, i, dt, 0xFF800000u, 0xFF80u, 0xFC00u); /* -inf */
        else setbits(p, i, dt, 0x80000001u, 0x8001u, 0x8001u);                 /* negative subnormal */
    }
}
/* the reference's mask: dst > 0 as a value (NaN compares false) */
static int relu_pass(const void *p, int64_t i, int dt) { return getf(p, i, dt) > 0.0f; }

static void bn_run(const BnCase &c) {
    char what[600];
    snprintf(what, sizeof what, "BN %s rank %d dims [%lld %lld %lld %lld] dt %d/%d/%d form %d gamma %d dx %d pg %d acc %d pad %d inplace %d misalign %d global %d split %d relu %u st %d alias %d",
             c.layout == NBWD_NCX ? "NCX" : "NXC", c.rank, (long long)c.dims[0], (long long)c.dims[1],
             (long long)c.dims[2], (long long)c.dims[3], c.dt, c.sdt, c.pdt, c.form, c.has_gamma, c.want_dx, c.want_pg,
             c.accumulate, c.pad, c.inplace, c.misalign, c.global, c.split, c.relu, c.relu_st, c.relu_alias);
    const int nxc = c.layout == NBWD_NXC || c.rank == 2;
    const int64_t C = nxc ? c.dims[c.rank - 1] : c.dims[1];
    int64_t st[NBWD_MAX_RANK], total = 1;
    const int64_t span = bn_strides(c, 1, c.rank > 2 ? 1 : -1, c.pad, st); /* dim 1 is outside the dense block in both layouts */
    for (int d = 0; d < c.rank; ++d) total *= c.dims[d];
    const int64_t M = total / (C > 0 ? C : 1);
    /* the fused ReLU's tensors: x's strides, or their own (dst needs no
       dense block unless it is also an output; diff_src_add does) */
    int64_t st_dy[NBWD_MAX_RANK], st_dst[NBWD_MAX_RANK], st_add[NBWD_MAX_RANK];
    int64_t span_dy = span, span_dst = span, span_add = span;
    memcpy(st_dy, st, sizeof st); memcpy(st_dst, st, sizeof st); memcpy(st_add, st, sizeof st);
    if (c.relu && c.relu_st == 2) span_dy = bn_strides(c, 2, -1, 0, st_dy);
    if (c.relu && c.relu_st && (c.relu_alias == BRA_NONE || c.relu_alias == BRA_ADD_DY))
        span_dst = bn_strides(c, 2, 1, 1, st_dst);
    if (c.relu && c.relu_st && c.relu_alias == BRA_NONE)
        span_add = c.rank > 2 ? bn_strides(c, 1, 1, 3, st_add) : bn_strides(c, 2, -1, 0, st_add);
    if (c.relu_alias == BRA_ADD_DY) memcpy(st_add, st_dy, sizeof st);
    if (c.relu_alias == BRA_ADD_DST) memcpy(st_add, st_dst, sizeof st);
    nbwd_batch_norm_bwd_desc desc;
    nbwd_batch_norm_bwd_desc_init(&desc, c.rank, c.dims, (nbwd_layout)c.layout, 1e-5f);
    desc.stats_form = (nbwd_stats_form)c.form;
    desc.data_dtype = (nbwd_dtype)c.dt; desc.stats_dtype = (nbwd_dtype)c.sdt; desc.param_dtype = (nbwd_dtype)c.pdt;
    desc.flags = (c.accumulate ? NBWD_ACCUMULATE_PARAM_GRADS : 0u) | (c.global ? NBWD_USE_GLOBAL_STATS : 0u) | c.relu;
    if (c.pad) desc.src_strides = desc.diff_dst_strides = desc.diff_src_strides = st;
    if (c.relu) {
        desc.diff_dst_strides = st_dy;
        desc.dst_strides = st_dst;
        desc.diff_src_add_strides = st_add;
    }
    Buf x, dy, dx, mean, spread, gamma, dg, db, dst, add;
    const int64_t mis = c.misalign ? 1 : 0;
    x.alloc(c.dt, span, mis); dy.alloc(c.dt, span_dy, mis); dx.alloc(c.dt, span, mis);
    dst.alloc(c.dt, c.relu ? span_dst : 1, mis); add.alloc(c.dt, c.relu ? span_add : 1, mis);
    mean.alloc(c.sdt, C, 0); spread.alloc(c.sdt, C, 0); gamma.alloc(c.pdt, C, 0); dg.alloc(c.pdt, C, 0); db.alloc(c.pdt, C, 0);
    x.fill(-2, 2); dy.fill(-1, 1); dx.fill(-9, 9); mean.fill(-0.5, 0.5); gamma.fill(0.5, 1.5); dg.fill(-1, 1); db.fill(-1, 1);
    for (int64_t ch = 0; ch < C; ++ch) {
        double var = urand(0.3, 2.0);
        setf(spread.hp(), ch, c.sdt,
             (float)(c.form == NBWD_STATS_MEAN_VARIANCE ? var : c.form == NBWD_STATS_MEAN_RSTD ? 1.0 / sqrt(var + 1e-5) : sqrt(var + 1e-5)));
    }
    if (c.relu) {
        for (int64_t i = 0; i < dy.n; ++i) /* -0 where dst passes keeps its sign bit */
            if ((int)urand(0, 16) == 0) setf(dy.hp(), i, c.dt, -0.0f);
        relu_dst_fill(c.relu_alias == BRA_DX_DST ? dx.hp() : dst.hp(), c.relu_alias == BRA_DX_DST ? span : span_dst, c.dt);
        add.fill(-9, 9);
    }
    if (c.inplace) memcpy(dx.h.data(), dy.h.data(), dy.h.size());
    /* every data buffer's initial contents: inputs, outputs and their padding */
    Buf *const bufs[5] = {&x, &dy, &dx, &dst, &add};
    std::vector<unsigned char> orig[5];
    for (int b = 0; b < 5; ++b) orig[b] = bufs[b]->h;
    const std::vector<unsigned char> dg0 = dg.h, db0 = db.h;
    x.up(); dy.up(); dx.up(); dst.up(); add.up(); mean.up(); spread.up(); gamma.up(); dg.up(); db.up();
    const size_t mb = (size_t)mis * esz(c.dt);
    const unsigned char *dy_in = orig[1].data() + mb;
    const unsigned char *dst_in = (c.relu_alias == BRA_DX_DST ? orig[2] : orig[3]).data() + mb;

    /* reference: element offset of logical index i (row-major over dims) */
    auto offset = [&](int64_t i, const int64_t *sv) {
        int64_t o = 0;
        for (int d = c.rank - 1; d >= 0; --d) { o += (i % c.dims[d]) * sv[d]; i /= c.dims[d]; }
        return o;
    };
    auto chan = [&](int64_t i) {
        if (nxc) return i % C;
        int64_t S = total / (c.dims[0] * C);
        return (i / S) % C;
    };
    /* the kernels' dy: diff_dst, masked by dst > 0 with the fused ReLU */
    auto dyv = [&](int64_t i) {
        return c.relu && !relu_pass(dst_in, offset(i, st_dst), c.dt) ? 0.0 : (double)getf(dy_in, offset(i, st_dy), c.dt);
    };
    std::vector<double> sdyx((size_t)C, 0), sdy((size_t)C, 0), rstd((size_t)C), xm((size_t)C), xs((size_t)C);
    for (int64_t ch = 0; ch < C; ++ch) {
        double sp = getf(spread.hp(), ch, c.sdt);
        rstd[(size_t)ch] = c.form == NBWD_STATS_MEAN_VARIANCE ? 1.0 / sqrt(sp + 1e-5f) : c.form == NBWD_STATS_MEAN_RSTD ? sp : 1.0 / sp;
        xm[(size_t)ch] = c.form == NBWD_STATS_XHAT_STD ? 0.0 : getf(mean.hp(), ch, c.sdt);
        xs[(size_t)ch] = c.form == NBWD_STATS_XHAT_STD ? 1.0 : rstd[(size_t)ch];
    }
    for (int64_t i = 0; i < total; ++i) {
        int64_t o = offset(i, st), ch = chan(i);
        double xh = (getf(x.hp(), o, c.dt) - xm[(size_t)ch]) * xs[(size_t)ch], dv = dyv(i);
        sdyx[(size_t)ch] += dv * xh; sdy[(size_t)ch] += dv;
    }
    const int use_gamma = c.has_gamma && c.want_pg;

    nbwd_batch_norm_bwd_args a;
    memset(&a, 0, sizeof a);
    if (c.form == NBWD_STATS_XHAT_STD) a.xhat = x.dp(); else a.src = x.dp();
    a.diff_dst = dy.dp();
    if (c.form != NBWD_STATS_XHAT_STD) a.mean = mean.dp();
    if (c.form == NBWD_STATS_MEAN_VARIANCE) a.variance = spread.dp();
    else if (c.form == NBWD_STATS_MEAN_RSTD) a.rstd = spread.dp();
    else a.std = spread.dp();
    if (c.has_gamma) a.gamma = gamma.dp();
    if (c.want_dx) a.diff_src = c.inplace ? dy.dp() : dx.dp();
    if (c.want_pg) { a.diff_gamma = dg.dp(); a.diff_beta = db.dp(); }
    if (c.relu) a.dst = c.relu_alias == BRA_DX_DST ? dx.dp() : dst.dp();
    if (c.relu == NBWD_FUSE_ADD_RELU)
        a.diff_src_add = c.relu_alias == BRA_ADD_DY ? dy.dp() : c.relu_alias == BRA_ADD_DST ? dst.dp() : add.dp();
    /* which buffer an output is (-1: none) */
    auto buf_of = [&](const void *p) {
        for (int b = 0; b < 5; ++b)
            if (p && p == bufs[b]->dp()) return b;
        return -1;
    };
    const int b_dx = buf_of(a.diff_src), b_add = buf_of(a.diff_src_add);
    size_t need = 0;
    nbwd_gpu_batch_norm_bwd_workspace_size(&desc, &need);
    void *ws = nullptr;
    if (need) CK(cudaMalloc(&ws, need));
    /* c.split: the two-phase calls on slices (S: elements per channel and batch entry) */
    const int64_t S = c.dims[0] > 0 ? M / c.dims[0] : 0;
    auto gpu_call = [&]() {
        return c.split ? bn_split_gpu(c, desc, a, C, S, what) : nbwd_gpu_batch_norm_bwd(&desc, &a, ws, need, nullptr);
    };
    nbwd_status st_ = gpu_call();
    CK(cudaDeviceSynchronize());
    if (st_ != NBWD_OK) {
        char w2[1100];
        snprintf(w2, sizeof w2, "%s: status %d (%.300s)", what, (int)st_, nbwd_gpu_last_error());
        nbwdt_check(0, w2);
        if (ws) cudaFree(ws);
        return;
    }
    std::vector<unsigned char> gpu[5];
    for (int b = 0; b < 5; ++b) { bufs[b]->down(); gpu[b] = bufs[b]->h; }
    dg.down(); db.down();
    const std::vector<unsigned char> g_dg = dg.h, g_db = db.h;

    /* the CPU path on host copies of the same initial contents */
    std::vector<unsigned char> cpu[5];
    for (int b = 0; b < 5; ++b) cpu[b] = orig[b];
    auto host = [&](const void *p) -> void * { const int b = buf_of(p); return b < 0 ? nullptr : cpu[b].data() + mb; };
    std::vector<unsigned char> cdg(dg0), cdb(db0);
    nbwd_batch_norm_bwd_args ca = a;
    ca.src = host(a.src); ca.xhat = host(a.xhat); ca.diff_dst = host(a.diff_dst); ca.diff_src = host(a.diff_src);
    ca.dst = host(a.dst); ca.diff_src_add = host(a.diff_src_add);
    if (a.mean) ca.mean = mean.hp();
    if (a.variance) ca.variance = spread.hp();
    if (a.rstd) ca.rstd = spread.hp();
    if (a.std) ca.std = spread.hp();
    if (a.gamma) ca.gamma = gamma.hp();
    if (a.diff_gamma) { ca.diff_gamma = cdg.data(); ca.diff_beta = cdb.data(); }
    nbwdt_check((c.split ? bn_split_cpu(c, desc, ca, C) : nbwd_batch_norm_bwd(&desc, &ca, nullptr, 0)) == NBWD_OK,
                what);

    Err erd, ecd, erg, ecg, erb, ecb;
    for (int64_t i = 0; i < total && c.want_dx; ++i) {
        int64_t o = offset(i, st), ch = chan(i);
        double gm = use_gamma ? getf(gamma.hp(), ch, c.pdt) : 1.0;
        double xh = (getf(x.hp(), o, c.dt) - xm[(size_t)ch]) * xs[(size_t)ch], dv = dyv(i);
        double ref = c.global ? rstd[(size_t)ch] * gm * dv
                              : rstd[(size_t)ch] * gm * (dv - sdy[(size_t)ch] / M - xh * sdyx[(size_t)ch] / M);
        double gv = getf(gpu[b_dx].data() + mb, o, c.dt);
        erd.add(gv, ref);
        ecd.add(gv, getf(cpu[b_dx].data() + mb, o, c.dt));
    }
    for (int64_t ch = 0; ch < C && c.want_pg; ++ch) {
        double base_g = c.accumulate ? getf(dg0.data(), ch, c.pdt) : 0, base_b = c.accumulate ? getf(db0.data(), ch, c.pdt) : 0;
        erg.add(getf(g_dg.data(), ch, c.pdt), base_g + sdyx[(size_t)ch]);
        ecg.add(getf(g_dg.data(), ch, c.pdt), getf(cdg.data(), ch, c.pdt));
        erb.add(getf(g_db.data(), ch, c.pdt), base_b + sdy[(size_t)ch]);
        ecb.add(getf(g_db.data(), ch, c.pdt), getf(cdb.data(), ch, c.pdt));
    }
    /* ADD_RELU's diff_src_add: the masked diff_dst exactly, dy's bits where
       dst > 0 (-0 too), +0 elsewhere; the CPU's bits */
    int add_exact = 1, add_cpu = 1;
    const size_t e = esz(c.dt);
    for (int64_t i = 0; i < total && b_add >= 0; ++i) {
        const int64_t o = offset(i, st_add);
        unsigned char want[4] = {0, 0, 0, 0};
        if (relu_pass(dst_in, offset(i, st_dst), c.dt)) memcpy(want, dy_in + offset(i, st_dy) * (int64_t)e, e);
        add_exact &= memcmp(gpu[b_add].data() + mb + o * (int64_t)e, want, e) == 0;
        add_cpu &= memcmp(gpu[b_add].data() + mb + o * (int64_t)e, cpu[b_add].data() + mb + o * (int64_t)e, e) == 0;
    }
    /* nothing else written: the buffers no output lives in, and every
       element of an output's buffer outside its view */
    int untouched = 1;
    if (!c.want_pg) untouched = g_dg == dg0 && g_db == db0;
    for (int b = 0; b < 5; ++b) {
        std::vector<char> in_view(orig[b].size() / e, 0);
        if (b == b_dx)
            for (int64_t i = 0; i < total; ++i) in_view[(size_t)(mis + offset(i, st))] = 1;
        if (b == b_add)
            for (int64_t i = 0; i < total; ++i) in_view[(size_t)(mis + offset(i, st_add))] = 1;
        for (size_t k = 0; k < in_view.size(); ++k)
            if (!in_view[k]) untouched &= memcmp(gpu[b].data() + k * e, orig[b].data() + k * e, e) == 0;
    }
    const double tdx = tol_of(c.dt), tp = tol_of(c.pdt) * (c.pdt == NBWD_F32 ? 10 : 1);
    char w2[1300];
    snprintf(w2, sizeof w2, "%s: dx err ref %.2e cpu %.2e, dg %.2e/%.2e, db %.2e/%.2e, untouched %d, diff_src_add exact %d cpu %d",
             what, erd.rel(), ecd.rel(), erg.rel(), ecg.rel(), erb.rel(), ecb.rel(), untouched, add_exact, add_cpu);
    nbwdt_check(erd.rel() <= tdx && ecd.rel() <= 2 * tdx && erg.rel() <= tp && ecg.rel() <= 2 * tp && erb.rel() <= tp &&
                    ecb.rel() <= 2 * tp && untouched && add_exact && add_cpu,
                w2);
    static const int grids[] = {0, 1, 3, 7};
    for (int gi = 0; gi < 4; ++gi) {
        nbwd_gpu__max_grid = grids[gi];
        for (int b = 0; b < 5; ++b) { bufs[b]->h = orig[b]; bufs[b]->up(); }
        dg.h = dg0; db.h = db0; dg.up(); db.up();
        st_ = gpu_call();
        CK(cudaDeviceSynchronize());
        int same = st_ == NBWD_OK;
        for (int b = 0; b < 5; ++b) { bufs[b]->down(); same &= bufs[b]->h == gpu[b]; }
        dg.down(); db.down();
        snprintf(w2, sizeof w2, "%s: bitwise identical rerun, grid cap %d", what, grids[gi]);
        nbwdt_check(same && dg.h == g_dg && db.h == g_db, w2);
    }
    nbwd_gpu__max_grid = 0;
    if (ws) cudaFree(ws);
}

/* One slice holding the whole batch: reduce's sums are the plain call's
   f32 diff_beta/diff_gamma bit for bit, and apply with them (count its
   own) gives the plain call's diff_src, diff_gamma and diff_beta bit for
   bit (the same kernels adding in the same order); with the fused ReLU
   (relu: its flag) both write diff_src_add with the plain call's bits. */
static void bn_one_slice_bits(int layout, int dt, int global, int rank, const int64_t *dims, unsigned relu) {
    nbwd_batch_norm_bwd_desc desc;
    nbwd_batch_norm_bwd_desc_init(&desc, rank, dims, (nbwd_layout)layout, 1e-5f);
    desc.data_dtype = (nbwd_dtype)dt;
    desc.flags = (global ? NBWD_USE_GLOBAL_STATS : 0u) | relu;
    const int nxc = layout == NBWD_NXC || rank == 2;
    const int64_t C = nxc ? dims[rank - 1] : dims[1];
    int64_t total = 1;
    for (int d = 0; d < rank; ++d) total *= dims[d];
    Buf x, dy, dx, mean, var, gamma, dg, db, sdy, sdyx, dst, add;
    x.alloc(dt, total, 0); dy.alloc(dt, total, 0); dx.alloc(dt, total, 0); dst.alloc(dt, total, 0); add.alloc(dt, total, 0);
    mean.alloc(NBWD_F32, C, 0); var.alloc(NBWD_F32, C, 0); gamma.alloc(NBWD_F32, C, 0);
    dg.alloc(NBWD_F32, C, 0); db.alloc(NBWD_F32, C, 0); sdy.alloc(NBWD_F32, C, 0); sdyx.alloc(NBWD_F32, C, 0);
    x.fill(-2, 2); dy.fill(-1, 1); mean.fill(-0.5, 0.5); var.fill(0.3, 2); gamma.fill(0.5, 1.5);
    if (relu) relu_dst_fill(dst.hp(), total, dt);
    x.up(); dy.up(); mean.up(); var.up(); gamma.up(); dst.up();
    dx.up(); dg.up(); db.up(); sdy.up(); sdyx.up(); add.up(); /* zeros, the padding too: whole buffers are compared */
    nbwd_batch_norm_bwd_args a;
    memset(&a, 0, sizeof a);
    a.src = x.dp(); a.diff_dst = dy.dp(); a.mean = mean.dp(); a.variance = var.dp(); a.gamma = gamma.dp();
    a.diff_src = dx.dp(); a.diff_gamma = dg.dp(); a.diff_beta = db.dp();
    if (relu) a.dst = dst.dp();
    if (relu == NBWD_FUSE_ADD_RELU) a.diff_src_add = add.dp();
    size_t need = 0;
    nbwd_gpu_batch_norm_bwd_workspace_size(&desc, &need);
    void *ws = nullptr;
    if (need) CK(cudaMalloc(&ws, need));
    int ok = nbwd_gpu_batch_norm_bwd(&desc, &a, ws, need, nullptr) == NBWD_OK;
    CK(cudaDeviceSynchronize());
    dx.down(); dg.down(); db.down(); add.down();
    const std::vector<unsigned char> pdx = dx.h, pdg = dg.h, pdb = db.h, padd = add.h;
    CK(cudaMemset(dx.d, 0, dx.h.size())); CK(cudaMemset(dg.d, 0, dg.h.size())); CK(cudaMemset(db.d, 0, db.h.size()));
    CK(cudaMemset(add.d, 0, add.h.size()));
    nbwd_batch_norm_bwd_args r = a;
    r.diff_src = r.diff_gamma = r.diff_beta = nullptr;
    int64_t count = -1;
    ok &= nbwd_gpu_batch_norm_bwd_reduce(&desc, &r, (float *)sdy.dp(), (float *)sdyx.dp(), &count, ws, need, nullptr) ==
          NBWD_OK;
    ok &= count == total / C;
    ok &= nbwd_gpu_batch_norm_bwd_apply(&desc, &a, (const float *)sdy.dp(), (const float *)sdyx.dp(), count, ws, need,
                                        nullptr) == NBWD_OK;
    CK(cudaDeviceSynchronize());
    dx.down(); dg.down(); db.down(); sdy.down(); sdyx.down(); add.down();
    char w[300];
    snprintf(w, sizeof w, "BN %s rank %d [%lld x ... x %lld] dt %d global %d relu %u: one slice's reduce + apply have the plain call's bits",
             nxc ? "NXC" : "NCX", rank, (long long)dims[0], (long long)dims[rank - 1], dt, global, relu);
    nbwdt_check(ok && sdy.h == pdb && sdyx.h == pdg && dx.h == pdx && dg.h == pdg && db.h == pdb && add.h == padd, w);
    if (ws) cudaFree(ws);
}

/* ------------------------------------------------------------ GroupNorm */
struct GnCase {
    int rank; int64_t dims[5]; int layout; int64_t groups;
    int dt, sdt, pdt, form, affine, want_dx, want_dg, want_db, accumulate;
    int pad;      /* elements of padding on an outer dim of x, dy, dx (their own strides) */
    int inplace;  /* diff_src == 1: diff_dst, 2: src (xhat, dst) */
    int misalign; /* data tensors one element off 16-byte alignment */
    int pstride;  /* gamma, beta, diff_gamma, diff_beta with stride 2 */
    int sstride;  /* statistics column-major ([groups][N] in memory) */
    int no_beta;  /* DST_RSTD: args.beta NULL */
    int zero_gamma; /* some channels' gamma 0 or subnormal (DST_RSTD: xhat 0 there) */
};
/* What a GroupNorm run leaves: dx in logical order (raw bytes of the data
   type), diff_gamma and diff_beta (raw bytes, dense). */
struct GnOut {
    std::vector<unsigned char> dx, dg, db;
    int ok = 0;
};

/* GPU vs float64 reference vs the CPU path (scalar, this file), nothing
   written outside the outputs' views, and bitwise identical reruns on grids
   of 1, 3 and 7 blocks. */
static GnOut gn_run(const GnCase &c) {
    GnOut res;
    char what[600];
    snprintf(what, sizeof what, "GN %s rank %d dims [%lld %lld %lld %lld %lld] groups %lld dt %d/%d/%d form %d affine %d out %d%d%d acc %d pad %d inplace %d misalign %d pstride %d sstride %d nobeta %d zerog %d",
             c.layout == NBWD_NCX ? "NCX" : "NXC", c.rank, (long long)c.dims[0], (long long)c.dims[1],
             (long long)c.dims[2], (long long)c.dims[3], (long long)c.dims[4], (long long)c.groups, c.dt, c.sdt, c.pdt,
             c.form, c.affine, c.want_dx, c.want_dg, c.want_db, c.accumulate, c.pad, c.inplace, c.misalign, c.pstride,
             c.sstride, c.no_beta, c.zero_gamma);
    const int nxc = c.layout == NBWD_NXC, dst_form = c.form == NBWD_STATS_DST_RSTD;
    const int mean_form = c.form == NBWD_STATS_MEAN_VARIANCE || c.form == NBWD_STATS_MEAN_RSTD;
    const int64_t N = c.dims[0], C = nxc ? c.dims[c.rank - 1] : c.dims[1], G = c.groups;
    int64_t total = 1;
    for (int d = 0; d < c.rank; ++d) total *= c.dims[d];
    const int64_t S = N * C > 0 ? total / (N * C) : 0, Cg = C / G, K = Cg * S;
    /* strides: dense, `pad` more elements on an outer dim (NCX: the channel's
       plane; NXC: a spatial row, or the sample for [N, C]) */
    const int pd = nxc ? (c.rank > 2 ? c.rank - 2 : 1) : (c.rank > 2 ? 2 : 1);
    int64_t st[NBWD_MAX_RANK], sp = 1;
    for (int d = c.rank - 1; d >= 0; --d) {
        st[d] = sp;
        sp *= c.dims[d] + (d == pd ? c.pad : 0);
    }
    const int64_t span = sp, pst = c.pstride ? 2 : 1;
    const int64_t stats_st[2] = {1, N};
    const int64_t pstv[1] = {2};
    nbwd_group_norm_bwd_desc desc;
    nbwd_group_norm_bwd_desc_init(&desc, c.rank, c.dims, (nbwd_layout)c.layout, G, 1e-5f);
    desc.use_affine = c.affine;
    desc.stats_form = (nbwd_stats_form)c.form;
    desc.data_dtype = (nbwd_dtype)c.dt; desc.stats_dtype = (nbwd_dtype)c.sdt; desc.param_dtype = (nbwd_dtype)c.pdt;
    desc.flags = c.accumulate ? NBWD_ACCUMULATE_PARAM_GRADS : 0;
    if (c.pad) desc.src_strides = desc.diff_dst_strides = desc.diff_src_strides = st;
    if (c.sstride) desc.mean_strides = desc.var_strides = stats_st;
    if (c.pstride) desc.gamma_strides = desc.beta_strides = desc.diff_gamma_strides = desc.diff_beta_strides = pstv;

    Buf x, dy, dx, mean, spread, gamma, beta, dg, db;
    const int64_t mis = c.misalign ? 1 : 0, NG = N * G > 0 ? N * G : 1, Cp = (C > 0 ? C : 1) * pst;
    x.alloc(c.dt, span, mis); dy.alloc(c.dt, span, mis); dx.alloc(c.dt, span, mis);
    mean.alloc(c.sdt, NG, 0); spread.alloc(c.sdt, NG, 0);
    gamma.alloc(c.pdt, Cp, 0); beta.alloc(c.pdt, Cp, 0); dg.alloc(c.pdt, Cp, 0); db.alloc(c.pdt, Cp, 0);
    /* every value drawn in logical order (the strides and alignment change
       no value: gn_layouts_same_bits); padding and gaps hold a pattern */
    auto offset = [&](int64_t i) { /* logical index i (row-major over dims) -> element offset */
        int64_t o = 0;
        for (int d = c.rank - 1; d >= 0; --d) { o += (i % c.dims[d]) * st[d]; i /= c.dims[d]; }
        return o;
    };
    auto sidx = [&](int64_t n, int64_t g) { return c.sstride ? g * N + n : n * G + g; };
    for (int64_t k = 0; k < span; ++k) setf(dx.hp(), k, c.dt, (float)(k % 17 - 8));
    for (int64_t k = 0; k < Cp; ++k) {
        setf(gamma.hp(), k, c.pdt, 3.0f); setf(beta.hp(), k, c.pdt, 3.0f);
        setf(dg.hp(), k, c.pdt, 5.0f); setf(db.hp(), k, c.pdt, 5.0f);
    }
    for (int64_t i = 0; i < total; ++i) setf(x.hp(), offset(i), c.dt, (float)urand(-2, 2));
    for (int64_t i = 0; i < total; ++i) setf(dy.hp(), offset(i), c.dt, (float)urand(-1, 1));
    for (int64_t ch = 0; ch < C; ++ch) {
        setf(gamma.hp(), ch * pst, c.pdt, (float)urand(0.5, 1.5));
        setf(beta.hp(), ch * pst, c.pdt, (float)urand(-0.5, 0.5));
        setf(dg.hp(), ch * pst, c.pdt, (float)urand(-1, 1));
        setf(db.hp(), ch * pst, c.pdt, (float)urand(-1, 1));
        if (c.zero_gamma && ch % 5 == 2) setf(gamma.hp(), ch * pst, c.pdt, ch % 2 ? -0.0f : 0.0f);
        if (c.zero_gamma && ch % 7 == 3) setf(gamma.hp(), ch * pst, c.pdt, 1e-39f);
    }
    for (int64_t n = 0; n < N; ++n)
        for (int64_t g = 0; g < G; ++g) {
            double var = urand(0.3, 2.0);
            double v = c.form == NBWD_STATS_MEAN_VARIANCE ? var
                       : c.form == NBWD_STATS_MEAN_RSTD || dst_form ? 1.0 / sqrt(var + 1e-5)
                                                                    : sqrt(var + 1e-5);
            setf(spread.hp(), sidx(n, g), c.sdt, (float)v);
            setf(mean.hp(), sidx(n, g), c.sdt, (float)urand(-0.5, 0.5));
        }
    auto chan = [&](int64_t i) { return nxc ? i % C : (i / S) % C; };
    auto gam = [&](int64_t ch) { return c.affine ? (double)getf(gamma.hp(), ch * pst, c.pdt) : 1.0; };
    auto bet = [&](int64_t ch) {
        return dst_form && c.affine && !c.no_beta ? (double)getf(beta.hp(), ch * pst, c.pdt) : 0.0;
    };
    if (dst_form) /* x holds the forward output y = xhat * gamma + beta */
        for (int64_t i = 0; i < total; ++i)
            setf(x.hp(), offset(i), c.dt, (float)(urand(-2, 2) * gam(chan(i)) + bet(chan(i))));
    if (c.inplace == 1) memcpy(dx.h.data(), dy.h.data(), dy.h.size());
    if (c.inplace == 2) memcpy(dx.h.data(), x.h.data(), x.h.size());
    const std::vector<unsigned char> x0 = x.h, dy0 = dy.h, dx0 = dx.h, dg0 = dg.h, db0 = db.h;
    x.up(); dy.up(); dx.up(); mean.up(); spread.up(); gamma.up(); beta.up(); dg.up(); db.up();

    /* float64 reference from the stored values */
    const size_t mb = (size_t)mis * esz(c.dt);
    std::vector<double> rstd((size_t)NG), xhv((size_t)(total > 0 ? total : 1)), sg((size_t)NG, 0), sgx((size_t)NG, 0);
    std::vector<double> rdg((size_t)(C > 0 ? C : 1), 0), rdb(rdg);
    for (int64_t n = 0; n < N; ++n)
        for (int64_t g = 0; g < G; ++g) {
            double spv = getf(spread.hp(), sidx(n, g), c.sdt);
            rstd[(size_t)(n * G + g)] = c.form == NBWD_STATS_MEAN_VARIANCE ? 1.0 / sqrt(spv + (double)desc.epsilon)
                                        : c.form == NBWD_STATS_XHAT_STD    ? 1.0 / spv
                                                                           : spv;
        }
    for (int64_t i = 0; i < total; ++i) {
        const int64_t n = i / (C * S), ch = chan(i), set = n * G + ch / Cg;
        const double xv = getf(x0.data() + mb, offset(i), c.dt), dv = getf(dy0.data() + mb, offset(i), c.dt);
        double xh;
        if (dst_form) xh = c.affine ? ref_unscale(xv, gam(ch), bet(ch)) : xv;
        else if (mean_form) xh = (xv - getf(mean.hp(), sidx(n, ch / Cg), c.sdt)) * rstd[(size_t)set];
        else xh = xv;
        xhv[(size_t)i] = xh;
        sg[(size_t)set] += dv * gam(ch);
        sgx[(size_t)set] += dv * gam(ch) * xh;
        rdg[(size_t)ch] += dv * xh;
        rdb[(size_t)ch] += dv;
    }

    /* GPU */
    nbwd_group_norm_bwd_args a;
    memset(&a, 0, sizeof a);
    if (c.form == NBWD_STATS_XHAT_STD) a.xhat = x.dp(); else if (dst_form) a.dst = x.dp(); else a.src = x.dp();
    a.diff_dst = dy.dp();
    if (mean_form) a.mean = mean.dp();
    if (c.form == NBWD_STATS_MEAN_VARIANCE) a.variance = spread.dp();
    else if (c.form == NBWD_STATS_XHAT_STD) a.std = spread.dp();
    else a.rstd = spread.dp();
    const int reads_gamma = c.affine && (c.want_dx || (dst_form && c.want_dg));
    if (reads_gamma) a.gamma = gamma.dp(); /* (not passed where it is not read) */
    if (reads_gamma && dst_form && !c.no_beta) a.beta = beta.dp();
    if (c.want_dx) a.diff_src = c.inplace == 1 ? dy.dp() : c.inplace == 2 ? x.dp() : dx.dp();
    if (c.want_dg) a.diff_gamma = dg.dp();
    if (c.want_db) a.diff_beta = db.dp();
    size_t need = 0;
    nbwd_gpu_group_norm_bwd_workspace_size(&desc, &need);
    void *ws = nullptr;
    if (need) CK(cudaMalloc(&ws, need));
    nbwd_status st_ = nbwd_gpu_group_norm_bwd(&desc, &a, ws, need, nullptr);
    CK(cudaDeviceSynchronize());
    if (st_ != NBWD_OK) {
        char w2[1100];
        snprintf(w2, sizeof w2, "%s: status %d (%.300s)", what, (int)st_, nbwd_gpu_last_error());
        nbwdt_check(0, w2);
        if (ws) cudaFree(ws);
        return res;
    }
    Buf *const bufs[3] = {&x, &dy, &dx};
    const std::vector<unsigned char> *const orig[3] = {&x0, &dy0, &dx0};
    std::vector<unsigned char> gpu[3];
    for (int b = 0; b < 3; ++b) { bufs[b]->down(); gpu[b] = bufs[b]->h; }
    dg.down(); db.down();
    const std::vector<unsigned char> g_dg = dg.h, g_db = db.h;
    const int b_dx = c.inplace == 1 ? 1 : c.inplace == 2 ? 0 : 2;

    /* the CPU path on host copies */
    std::vector<unsigned char> cpu[3] = {x0, dy0, dx0}, cdg(dg0), cdb(db0);
    nbwd_group_norm_bwd_args ca = a;
    auto host = [&](const void *p) -> void * {
        for (int b = 0; b < 3; ++b)
            if (p && p == bufs[b]->dp()) return cpu[b].data() + mb;
        return nullptr;
    };
    ca.src = host(a.src); ca.xhat = host(a.xhat); ca.dst = host(a.dst); ca.diff_dst = host(a.diff_dst);
    ca.diff_src = host(a.diff_src);
    if (a.mean) ca.mean = mean.hp();
    if (a.variance) ca.variance = spread.hp();
    if (a.rstd) ca.rstd = spread.hp();
    if (a.std) ca.std = spread.hp();
    if (a.gamma) ca.gamma = gamma.hp();
    if (a.beta) ca.beta = beta.hp();
    if (a.diff_gamma) ca.diff_gamma = cdg.data();
    if (a.diff_beta) ca.diff_beta = cdb.data();
    nbwdt_check(nbwd_group_norm_bwd(&desc, &ca, nullptr, 0) == NBWD_OK, what);

    Err erd, ecd, erg, ecg, erb, ecb;
    const size_t e = esz(c.dt);
    res.dx.resize((size_t)total * e);
    for (int64_t i = 0; i < total; ++i) {
        const int64_t o = offset(i);
        memcpy(res.dx.data() + i * e, gpu[b_dx].data() + mb + o * (int64_t)e, e);
        if (!c.want_dx) continue;
        const int64_t n = i / (C * S), ch = chan(i), set = n * G + ch / Cg;
        const double dv = getf(dy0.data() + mb, o, c.dt), xh = xhv[(size_t)i];
        const double ref = rstd[(size_t)set] * (dv * gam(ch) - sg[(size_t)set] / K - xh * sgx[(size_t)set] / K);
        const double gv = getf(gpu[b_dx].data() + mb, o, c.dt);
        erd.add(gv, ref);
        ecd.add(gv, getf(cpu[b_dx].data() + mb, o, c.dt));
    }
    for (int64_t ch = 0; ch < C; ++ch) {
        const int64_t j = ch * pst;
        if (c.want_dg) {
            erg.add(getf(g_dg.data(), j, c.pdt), (c.accumulate ? getf(dg0.data(), j, c.pdt) : 0) + rdg[(size_t)ch]);
            ecg.add(getf(g_dg.data(), j, c.pdt), getf(cdg.data(), j, c.pdt));
        }
        if (c.want_db) {
            erb.add(getf(g_db.data(), j, c.pdt), (c.accumulate ? getf(db0.data(), j, c.pdt) : 0) + rdb[(size_t)ch]);
            ecb.add(getf(g_db.data(), j, c.pdt), getf(cdb.data(), j, c.pdt));
        }
    }
    /* nothing else written: the data buffers outside diff_src's view, the
       parameter gradients not asked for or between strided entries */
    int untouched = 1;
    for (int b = 0; b < 3; ++b) {
        std::vector<char> in_view(orig[b]->size() / e, 0);
        if (b == b_dx && c.want_dx)
            for (int64_t i = 0; i < total; ++i) in_view[(size_t)(mis + offset(i))] = 1;
        for (size_t k = 0; k < in_view.size(); ++k)
            if (!in_view[k]) untouched &= memcmp(gpu[b].data() + k * e, orig[b]->data() + k * e, e) == 0;
    }
    const size_t pe = esz(c.pdt);
    for (int64_t j = 0; j < Cp; ++j) {
        const int in = j % pst == 0 && j / pst < C;
        if (!(c.want_dg && in)) untouched &= memcmp(g_dg.data() + j * pe, dg0.data() + j * pe, pe) == 0;
        if (!(c.want_db && in)) untouched &= memcmp(g_db.data() + j * pe, db0.data() + j * pe, pe) == 0;
    }
    const double tdx = tol_of(c.dt), tp = tol_of(c.pdt) * (c.pdt == NBWD_F32 ? 10 : 1);
    char w2[1300];
    snprintf(w2, sizeof w2, "%s: dx err ref %.2e cpu %.2e, dg %.2e/%.2e, db %.2e/%.2e, untouched %d", what, erd.rel(),
             ecd.rel(), erg.rel(), ecg.rel(), erb.rel(), ecb.rel(), untouched);
    nbwdt_check(erd.rel() <= tdx && ecd.rel() <= 2 * tdx && erg.rel() <= tp && ecg.rel() <= 2 * tp &&
                    erb.rel() <= tp && ecb.rel() <= 2 * tp && untouched,
                w2);
    static const int grids[] = {0, 1, 3, 7};
    for (int gi = 0; gi < 4; ++gi) {
        nbwd_gpu__max_grid = grids[gi];
        for (int b = 0; b < 3; ++b) { bufs[b]->h = *orig[b]; bufs[b]->up(); }
        dg.h = dg0; db.h = db0; dg.up(); db.up();
        st_ = nbwd_gpu_group_norm_bwd(&desc, &a, ws, need, nullptr);
        CK(cudaDeviceSynchronize());
        int same = st_ == NBWD_OK;
        for (int b = 0; b < 3; ++b) { bufs[b]->down(); same &= bufs[b]->h == gpu[b]; }
        dg.down(); db.down();
        snprintf(w2, sizeof w2, "%s: bitwise identical rerun, grid cap %d", what, grids[gi]);
        nbwdt_check(same && dg.h == g_dg && db.h == g_db, w2);
    }
    nbwd_gpu__max_grid = 0;
    if (ws) cudaFree(ws);
    res.dg.resize((size_t)(C > 0 ? C : 0) * pe); /* the entries, densely */
    res.db.resize(res.dg.size());
    for (int64_t ch = 0; ch < C; ++ch) {
        memcpy(res.dg.data() + ch * pe, g_dg.data() + ch * pst * pe, pe);
        memcpy(res.db.data() + ch * pe, g_db.data() + ch * pst * pe, pe);
    }
    res.ok = 1;
    return res;
}

/* The same case with dense and padded strides, aligned and misaligned data
   (16-byte and scalar loads), column-major statistics and strided
   parameters: every output bit the same (the strides and the load path
   change no reduction order). */
static void gn_layouts_same_bits(GnCase c) {
    GnOut ref;
    const uint64_t seed = rng_state;
    int same = 1;
    for (int k = 0; k < 4; ++k) {
        rng_state = seed;
        c.pad = k == 1 || k == 3 ? 3 : 0;
        c.misalign = k >= 2;
        c.sstride = c.pstride = k == 3;
        GnOut o = gn_run(c);
        if (k == 0) ref = o;
        else same &= o.ok && o.dx == ref.dx && o.dg == ref.dg && o.db == ref.db;
    }
    char w[300];
    snprintf(w, sizeof w, "GN %s [%lld %lld %lld %lld] dt %d form %d: padded, misaligned and strided-parameter runs give the dense run's bits",
             c.layout == NBWD_NCX ? "NCX" : "NXC", (long long)c.dims[0], (long long)c.dims[1], (long long)c.dims[2],
             (long long)c.dims[3], c.dt, c.form);
    nbwdt_check(ref.ok && same, w);
}

/* A NaN in x (dst) makes only its own set's diff_src and its channel's
   diff_gamma non-finite; an infinite dy those and its channel's diff_beta.
   Every other bit is the clean run's. */
static void gn_nan_isolation(int layout, int dt, int form) {
    const int64_t N = 3, C = 8, G = 4, H = 5, W = 7, S = H * W, Cg = C / G;
    const int64_t dims[4] = {N, layout == NBWD_NCX ? C : H, layout == NBWD_NCX ? H : W, layout == NBWD_NCX ? W : C};
    const int64_t total = N * C * S;
    nbwd_group_norm_bwd_desc desc;
    nbwd_group_norm_bwd_desc_init(&desc, 4, dims, (nbwd_layout)layout, G, 1e-5f);
    desc.data_dtype = (nbwd_dtype)dt;
    desc.stats_form = (nbwd_stats_form)form;
    Buf x, dy, dx, mean, spread, gamma, beta, dg, db;
    x.alloc(dt, total, 0); dy.alloc(dt, total, 0); dx.alloc(dt, total, 0);
    mean.alloc(NBWD_F32, N * G, 0); spread.alloc(NBWD_F32, N * G, 0);
    gamma.alloc(NBWD_F32, C, 0); beta.alloc(NBWD_F32, C, 0); dg.alloc(NBWD_F32, C, 0); db.alloc(NBWD_F32, C, 0);
    x.fill(-2, 2); dy.fill(-1, 1); mean.fill(-0.5, 0.5); spread.fill(0.5, 2); gamma.fill(0.5, 1.5); beta.fill(-0.5, 0.5);
    x.up(); dy.up(); mean.up(); spread.up(); gamma.up(); beta.up();
    nbwd_group_norm_bwd_args a;
    memset(&a, 0, sizeof a);
    if (form == NBWD_STATS_DST_RSTD) { a.dst = x.dp(); a.rstd = spread.dp(); a.beta = beta.dp(); }
    else { a.src = x.dp(); a.mean = mean.dp(); a.variance = spread.dp(); }
    a.diff_dst = dy.dp(); a.gamma = gamma.dp(); a.diff_src = dx.dp(); a.diff_gamma = dg.dp(); a.diff_beta = db.dp();
    size_t need = 0;
    nbwd_gpu_group_norm_bwd_workspace_size(&desc, &need);
    void *ws = nullptr;
    if (need) CK(cudaMalloc(&ws, need));
    /* the element (n 1, c 5, position 17) and (n 2, c 0, position 3) */
    auto lin = [&](int64_t n, int64_t ch, int64_t s) { return layout == NBWD_NCX ? (n * C + ch) * S + s : (n * S + s) * C + ch; };
    const int64_t ix = lin(1, 5, 17), iy = lin(2, 0, 3);
    std::vector<unsigned char> outs[2][3];
    int ok = 1;
    for (int pass = 0; pass < 2; ++pass) {
        if (pass == 1) {
            setf(x.hp(), ix, dt, NAN);
            setf(dy.hp(), iy, dt, INFINITY);
            x.up(); dy.up();
        }
        ok &= nbwd_gpu_group_norm_bwd(&desc, &a, ws, need, nullptr) == NBWD_OK;
        CK(cudaDeviceSynchronize());
        dx.down(); dg.down(); db.down();
        outs[pass][0] = dx.h; outs[pass][1] = dg.h; outs[pass][2] = db.h;
    }
    const size_t e = esz(dt);
    int isolated = 1;
    for (int64_t i = 0; i < total; ++i) {
        const int64_t n = layout == NBWD_NCX ? i / (C * S) : i / (S * C);
        const int64_t ch = layout == NBWD_NCX ? (i / S) % C : i % C;
        const int bad = (n == 1 && ch / Cg == 5 / Cg) || (n == 2 && ch / Cg == 0);
        const int nan = !isfinite(getf(outs[1][0].data(), i, dt));
        const int same = memcmp(outs[0][0].data() + i * e, outs[1][0].data() + i * e, e) == 0;
        if (bad ? !nan : !same) isolated = 0;
    }
    for (int64_t ch = 0; ch < C; ++ch) {
        const int gnan = !isfinite(getf(outs[1][1].data(), ch, NBWD_F32));
        const int gsame = memcmp(outs[0][1].data() + ch * 4, outs[1][1].data() + ch * 4, 4) == 0;
        const int bbad = !isfinite(getf(outs[1][2].data(), ch, NBWD_F32));
        const int bsame = memcmp(outs[0][2].data() + ch * 4, outs[1][2].data() + ch * 4, 4) == 0;
        if (ch == 5 || ch == 0 ? !gnan : !gsame) isolated = 0;
        if (ch == 0 ? !bbad : !bsame) isolated = 0;
    }
    char w[200];
    snprintf(w, sizeof w, "GN %s dt %d form %d: a NaN x and an infinite dy stay in their sets and channels",
             layout == NBWD_NCX ? "NCX" : "NXC", dt, form);
    nbwdt_check(ok && isolated, w);
    if (ws) cudaFree(ws);
}

static const int dtype_sets[][3] = {
    {NBWD_F32, NBWD_F32, NBWD_F32},   {NBWD_BF16, NBWD_F32, NBWD_F32}, {NBWD_BF16, NBWD_BF16, NBWD_BF16},
    {NBWD_BF16, NBWD_F32, NBWD_BF16}, {NBWD_F16, NBWD_F32, NBWD_F32},  {NBWD_F16, NBWD_F16, NBWD_F16},
};

/* NBWDT_GPU_QUICK=1: every kernel variant once (each shape, f32 and bf16
   data, one statistics form, no option sweeps), small enough for
   compute-sanitizer's racecheck, which runs the whole suite for many
   minutes. */
static int quick_skip(int di, int form) { return getenv("NBWDT_GPU_QUICK") && (form != 0 || (di != 0 && di != 1)); }

static void gpu_tests(void) {
    /* LayerNorm: row lengths across every kernel variant (G <= 32 groups,
       one group per block, long rows) */
    static const int64_t shapes[][2] = {{1, 1},    {3, 5},     {7, 24},   {300, 24}, {2000, 24}, {64, 64},
                                        {33, 768}, {17, 1000}, {9, 4096}, {5, 8200}, {3, 12288}, {3, 40000},
                                        {2, 65536}, {2, 70001}};
    const int nshapes = (int)(sizeof shapes / sizeof shapes[0]);
    for (int si = 0; si < nshapes; ++si)
        for (int di = 0; di < 6; ++di)
            for (int form = 0; form < 3; ++form) {
                if (quick_skip(di, form)) continue;
                LnCase c;
                memset(&c, 0, sizeof c);
                c.rank = 2; c.dims[0] = shapes[si][0]; c.dims[1] = shapes[si][1]; c.axis = 1;
                c.dt = dtype_sets[di][0]; c.sdt = dtype_sets[di][1]; c.pdt = dtype_sets[di][2];
                c.form = form; c.affine = 1; c.want_dx = c.want_dg = c.want_db = 1;
                ln_run(c);
            }
    if (getenv("NBWDT_GPU_QUICK")) goto batch_norm;
    /* options on a few shapes */
    static const int64_t oshapes[][2] = {{7, 24}, {33, 768}, {5, 8200}, {3, 40000}};
    for (int si = 0; si < 4; ++si)
        for (int di = 0; di < 6; di += 2)
            for (int opt = 0; opt < 10; ++opt) {
                LnCase c;
                memset(&c, 0, sizeof c);
                c.rank = 2; c.dims[0] = oshapes[si][0]; c.dims[1] = oshapes[si][1]; c.axis = 1;
                c.dt = dtype_sets[di][0]; c.sdt = dtype_sets[di][1]; c.pdt = dtype_sets[di][2];
                c.affine = 1; c.want_dx = c.want_dg = c.want_db = 1;
                switch (opt) {
                case 9: c.gamma_offset = 1.0f; break; /* zero-centred gamma */
                case 0: c.affine = 0; c.want_dg = c.want_db = 0; break;
                case 1: c.want_dx = 0; break;
                case 2: c.want_dg = 0; break;
                case 3: c.want_db = 0; c.want_dx = 0; break;
                case 4: c.accumulate = 1; break;
                case 5: c.pad = 3; break;
                case 6: c.inplace = 1; break;
                case 7: c.misalign = 1; break;
                case 8: c.rank = 3; c.dims[0] = 2; c.dims[1] = oshapes[si][0]; c.dims[2] = oshapes[si][1]; c.axis = 2; c.pad = 8; break;
                }
                ln_run(c);
            }
    { /* axis in the middle: n = dims[1] * dims[2] */
        LnCase c;
        memset(&c, 0, sizeof c);
        c.rank = 3; c.dims[0] = 6; c.dims[1] = 4; c.dims[2] = 50; c.axis = 1;
        c.dt = c.sdt = c.pdt = NBWD_F32; c.affine = 1; c.want_dx = c.want_dg = c.want_db = 1;
        ln_run(c);
        c.axis = 0; /* one row */
        ln_run(c);
        c.rank = 1; c.dims[0] = 1000; c.axis = 0;
        ln_run(c);
    }
    /* RMSNorm: every dtype set and form on short, vector-wide and long rows;
       offset gamma, in-place, accumulate, padding, a middle axis */
    static const int64_t rshapes[][2] = {{7, 24}, {33, 768}, {5, 8200}, {3, 40000}};
    for (int si = 0; si < 4; ++si)
        for (int di = 0; di < 6; ++di)
            for (int form = 0; form < 3; ++form) {
                LnCase c;
                memset(&c, 0, sizeof c);
                c.rms = 1;
                c.rank = 2; c.dims[0] = rshapes[si][0]; c.dims[1] = rshapes[si][1]; c.axis = 1;
                c.dt = dtype_sets[di][0]; c.sdt = dtype_sets[di][1]; c.pdt = dtype_sets[di][2];
                c.form = form; c.affine = 1; c.want_dx = c.want_dg = c.want_db = 1;
                c.gamma_offset = (si + di) % 2 ? 1.0f : 0.0f;
                c.inplace = form == 1 && si % 2;
                c.accumulate = form == 2;
                c.pad = si == 1 && form == 0 ? 3 : 0;
                ln_run(c);
            }
    {
        LnCase c;
        memset(&c, 0, sizeof c);
        c.rms = 1;
        c.rank = 3; c.dims[0] = 6; c.dims[1] = 4; c.dims[2] = 50; c.axis = 1;
        c.dt = c.sdt = c.pdt = NBWD_F32; c.affine = 1; c.want_dx = c.want_dg = c.want_db = 1;
        ln_run(c);
        c.affine = 0; c.want_dg = c.want_db = 0;
        ln_run(c);
    }
    /* the residual gradient and the DST_RSTD form, LayerNorm and RMSNorm:
       every dtype set on the row lengths of every kernel variant; a
       residual of its own (its own strides, or none where the others are
       padded) or diff_src itself; DST_RSTD with and without beta, offset
       gamma, zero and subnormal scales, each output subset, accumulate,
       in place, without affine */
    static const int64_t xshapes[][2] = {{7, 24}, {300, 24}, {33, 768}, {17, 1000}, {5, 8200}, {3, 40000}};
    for (int op = 0; op < 2; ++op)
        for (int si = 0; si < 6; ++si)
            for (int di = 0; di < 6; ++di)
                for (int m = 0; m < 4; ++m) {
                    const int v = si + di + op;
                    LnCase c;
                    memset(&c, 0, sizeof c);
                    c.rms = op;
                    c.rank = 2; c.dims[0] = xshapes[si][0]; c.dims[1] = xshapes[si][1]; c.axis = 1;
                    c.dt = dtype_sets[di][0]; c.sdt = dtype_sets[di][1]; c.pdt = dtype_sets[di][2];
                    c.affine = 1; c.want_dx = c.want_dg = c.want_db = 1;
                    switch (m) {
                    case 0: /* a residual of its own, in the other forms */
                        c.form = v % 3; c.residual = 1; c.res_pad = v % 2 ? 5 : 0; c.pad = v % 3 == 2 ? 3 : 0;
                        c.gamma_offset = v % 4 == 1 ? 1.0f : 0.0f;
                        break;
                    case 1: /* DST_RSTD with beta, accumulated in place into the residual */
                        c.form = NBWD_STATS_DST_RSTD; c.residual = 2; c.zero_gamma = 1;
                        c.gamma_offset = v % 2 ? 1.0f : 0.0f; c.pad = v % 3 == 1 ? 2 : 0;
                        break;
                    case 2: /* DST_RSTD, beta or none, each output subset */
                        c.form = NBWD_STATS_DST_RSTD; c.no_beta = v % 2; c.zero_gamma = v % 2 == 0;
                        c.accumulate = v % 3 == 0;
                        if (v % 4 == 1) c.want_dg = c.want_db = 0;
                        if (v % 4 == 2) c.want_dx = c.want_db = 0; /* xhat for diff_gamma alone */
                        if (v % 4 == 3) c.want_dx = c.want_dg = 0; /* no xhat: gamma, beta not passed */
                        break;
                    default: /* DST_RSTD without affine (xhat = dst), a residual of its own */
                        c.form = NBWD_STATS_DST_RSTD; c.affine = 0; c.want_dg = c.want_db = 0;
                        c.residual = 1; c.res_pad = v % 2 ? 0 : 2; c.inplace = v % 3 == 0;
                        break;
                    }
                    ln_run(c);
                }
    { /* strides and axes: padded rank 3, the axis in the middle, one row */
        LnCase c;
        memset(&c, 0, sizeof c);
        c.rank = 3; c.dims[0] = 2; c.dims[1] = 33; c.dims[2] = 768; c.axis = 2; c.pad = 8;
        c.dt = NBWD_BF16; c.sdt = NBWD_F32; c.pdt = NBWD_F32;
        c.form = NBWD_STATS_DST_RSTD; c.affine = 1; c.want_dx = c.want_dg = c.want_db = 1;
        c.residual = 1; c.res_pad = 3; c.zero_gamma = 1;
        for (c.rms = 0; c.rms < 2; ++c.rms) ln_run(c);
        c.residual = 2;
        for (c.rms = 0; c.rms < 2; ++c.rms) ln_run(c);
        memset(&c, 0, sizeof c);
        c.rank = 3; c.dims[0] = 6; c.dims[1] = 4; c.dims[2] = 50; c.axis = 1;
        c.dt = c.sdt = c.pdt = NBWD_F32; c.affine = 1; c.want_dx = c.want_dg = c.want_db = 1;
        c.form = NBWD_STATS_DST_RSTD; c.residual = 1; c.res_pad = 4; c.gamma_offset = 1.0f; c.zero_gamma = 1;
        for (c.rms = 0; c.rms < 2; ++c.rms) ln_run(c);
        c.form = NBWD_STATS_MEAN_RSTD; c.residual = 2; c.pad = 2;
        for (c.rms = 0; c.rms < 2; ++c.rms) ln_run(c);
        c.form = NBWD_STATS_DST_RSTD; c.axis = 0; c.pad = 0; c.residual = 1; /* one row */
        for (c.rms = 0; c.rms < 2; ++c.rms) ln_run(c);
    }
    for (int di = 0; di < 6; di += 2)
        for (int op = 0; op < 2; ++op) {
            ln_nan_isolation(dtype_sets[di][0], op, 33, 768);
            ln_nan_isolation(dtype_sets[di][0], op, 3, 40000);
            ln_nan_isolation(dtype_sets[di][0], op, 300, 24);
        }
    for (int di = 0; di < 6; ++di)
        for (int form = 0; form <= NBWD_STATS_DST_RSTD; form += NBWD_STATS_DST_RSTD) {
            LnCase c;
            memset(&c, 0, sizeof c);
            c.dims[0] = 37; c.dims[1] = 4096; c.dt = dtype_sets[di][0]; c.sdt = dtype_sets[di][1]; c.pdt = dtype_sets[di][2];
            c.form = form;
            c.gamma_offset = form == NBWD_STATS_DST_RSTD && di % 2 ? 1.0f : 0.0f;
            ln_vec_scalar(c);
            c.dims[0] = 4; c.dims[1] = 40000;
            ln_vec_scalar(c);
            c.dims[0] = 500; c.dims[1] = 24;
            ln_vec_scalar(c);
        }
batch_norm:
    /* BatchNorm */
    static const int64_t bshapes[][5] = {{4, 2, 3, 5, 7}, {4, 4, 16, 3, 3}, {2, 3, 5, 1000, 0}, {2, 8, 16, 0, 0},
                                         {2, 100, 3, 0, 0}, {4, 2, 64, 7, 7}, {4, 9, 5, 31, 33}};
    for (int si = 0; si < 7; ++si)
        for (int layout = 0; layout < 2; ++layout)
            for (int di = 0; di < 6; ++di)
                for (int form = 0; form < 3; ++form) {
                    if (quick_skip(di, form)) continue;
                    BnCase c;
                    memset(&c, 0, sizeof c);
                    c.rank = (int)bshapes[si][0];
                    for (int d = 0; d < c.rank; ++d) c.dims[d] = bshapes[si][1 + d];
                    c.layout = layout;
                    c.dt = dtype_sets[di][0]; c.sdt = dtype_sets[di][1]; c.pdt = dtype_sets[di][2];
                    c.form = form; c.has_gamma = 1; c.want_dx = c.want_pg = 1;
                    bn_run(c);
                }
    for (int layout = 0; layout < 2; ++layout)
        for (int opt = 0; opt < 9; ++opt) {
            BnCase c;
            memset(&c, 0, sizeof c);
            c.rank = 4; c.dims[0] = 3; c.dims[1] = 24; c.dims[2] = 9; c.dims[3] = 16; c.layout = layout;
            c.dt = NBWD_BF16; c.sdt = NBWD_F32; c.pdt = NBWD_F32; c.has_gamma = 1; c.want_dx = c.want_pg = 1;
            switch (opt) {
            case 0: c.has_gamma = 0; break;
            case 1: c.want_pg = 0; break;
            case 2: c.want_dx = 0; break;
            case 3: c.accumulate = 1; break;
            case 4: c.pad = 4; break;
            case 5: c.inplace = 1; break;
            case 6: c.misalign = 1; break;
            case 7: c.global = 1; break;                  /* frozen statistics, with the parameter gradients */
            case 8: c.global = 1; c.want_pg = 0; break;   /* and dx alone: no reduction */
            }
            bn_run(c);
        }
    /* The two phases (reduce / apply) on 2 or 3 slices of the batch, against
       the whole batch's float64 reference and the CPU path's two phases:
       both layouts, f32 and bf16 (data, or every tensor), each form, small
       and multi-block shapes, N < slices (an empty slice), [N, C]; then
       the options: padded strides, frozen statistics with and without the
       parameter gradients, accumulate, in place, misaligned, dx alone, the
       parameter gradients alone, no gamma. */
    static const int64_t sshapes[][5] = {{4, 4, 16, 3, 3}, {4, 2, 3, 5, 7}, {2, 100, 3, 0, 0}, {4, 9, 5, 31, 33}};
    for (int si = 0; si < 4; ++si)
        for (int layout = 0; layout < 2; ++layout)
            for (int di = 0; di < 3; ++di) {
                if (getenv("NBWDT_GPU_QUICK") && di == 2) continue;
                BnCase c;
                memset(&c, 0, sizeof c);
                c.rank = (int)sshapes[si][0];
                for (int d = 0; d < c.rank; ++d) c.dims[d] = sshapes[si][1 + d];
                c.layout = layout;
                c.dt = dtype_sets[di][0]; c.sdt = dtype_sets[di][1]; c.pdt = dtype_sets[di][2];
                c.form = getenv("NBWDT_GPU_QUICK") ? 0 : (si + di + layout) % 3;
                c.has_gamma = 1; c.want_dx = c.want_pg = 1;
                c.split = si == 1 ? 3 : 2 + (si + di + layout) % 2; /* [2, ...]: one slice empty */
                bn_run(c);
            }
    for (int layout = 0; layout < 2; ++layout)
        for (int opt = 0; opt < 9; ++opt) {
            if (getenv("NBWDT_GPU_QUICK") && opt != 1) continue;
            BnCase c;
            memset(&c, 0, sizeof c);
            c.rank = 4; c.dims[0] = 3; c.dims[1] = 24; c.dims[2] = 9; c.dims[3] = 16; c.layout = layout;
            c.dt = NBWD_BF16; c.sdt = NBWD_F32; c.pdt = NBWD_F32; c.has_gamma = 1; c.want_dx = c.want_pg = 1;
            c.split = 2 + opt % 2;
            switch (opt) {
            case 0: c.pad = 4; break;
            case 1: c.global = 1; break;
            case 2: c.global = 1; c.want_pg = 0; break;
            case 3: c.accumulate = 1; break;
            case 4: c.inplace = 1; break;
            case 5: c.misalign = 1; break;
            case 6: c.want_pg = 0; break;
            case 7: c.want_dx = 0; c.accumulate = 1; break;
            default: c.has_gamma = 0; c.dims[0] = 2; c.split = 3; break; /* 3 slices of 2: one empty */
            }
            bn_run(c);
        }
    {
        static const int64_t d4[4] = {4, 16, 3, 3}, d2[2] = {100, 3};
        for (int layout = 0; layout < 2; ++layout) {
            bn_one_slice_bits(layout, NBWD_F32, 0, 4, d4, 0);
            bn_one_slice_bits(layout, NBWD_BF16, layout, 4, d4, 0);
            bn_one_slice_bits(layout, NBWD_F16, layout, 4, d4, NBWD_FUSE_ADD_RELU);
            bn_one_slice_bits(layout, NBWD_F32, 1 - layout, 4, d4, NBWD_FUSE_RELU);
        }
        bn_one_slice_bits(NBWD_NXC, NBWD_F32, 0, 2, d2, 0);
        bn_one_slice_bits(NBWD_NXC, NBWD_BF16, 0, 2, d2, NBWD_FUSE_ADD_RELU);
    }
    /* The fused ReLU (NBWD_FUSE_RELU, NBWD_FUSE_ADD_RELU): each flag, every
       dtype set, both layouts and [N, C], each form, one slice or the
       two phases; dst with clipped values of every kind (zeros of both
       signs, negatives, NaNs, -inf) and passing ones (subnormal, +inf);
       dst and diff_src_add with strides of their own on every other case.
       Then the options: diff_dst strided too (inner stride 2: only the
       masking kernel reads it), each in-place pairing, frozen statistics
       with and without the parameter gradients, diff_src_add alone,
       accumulate, padded, misaligned, no gamma, and the two phases with
       several of them. */
    static const int64_t fshapes[][5] = {{4, 2, 3, 5, 7}, {4, 4, 16, 3, 3}, {2, 100, 3, 0, 0}, {4, 9, 5, 31, 33},
                                         {3, 2, 64, 49, 0}};
    for (int ri = 0; ri < 2; ++ri)
        for (int si = 0; si < 5; ++si)
            for (int layout = 0; layout < 2; ++layout)
                for (int di = 0; di < 6; ++di) {
                    if (getenv("NBWDT_GPU_QUICK") && (si > 1 || di > 1)) continue;
                    if (si == 2 && layout == 1) continue; /* [N, C] reads the same in both layouts */
                    const int v = si + di + layout;
                    BnCase c;
                    memset(&c, 0, sizeof c);
                    c.rank = (int)fshapes[si][0];
                    for (int d = 0; d < c.rank; ++d) c.dims[d] = fshapes[si][1 + d];
                    c.layout = layout;
                    c.dt = dtype_sets[di][0]; c.sdt = dtype_sets[di][1]; c.pdt = dtype_sets[di][2];
                    c.form = v % 3; c.has_gamma = 1; c.want_dx = c.want_pg = 1;
                    c.relu = ri ? NBWD_FUSE_ADD_RELU : NBWD_FUSE_RELU;
                    c.relu_st = v % 2;
                    c.split = v % 4 == 3 ? 2 : 0;
                    bn_run(c);
                }
    for (int ri = 0; ri < 2; ++ri)
        for (int layout = 0; layout < 2; ++layout)
            for (int opt = 0; opt < 16; ++opt) {
                if (getenv("NBWDT_GPU_QUICK") && opt % 4 != 1) continue;
                const int add = ri == 1, di = (opt + layout) % 6;
                BnCase c;
                memset(&c, 0, sizeof c);
                c.rank = 4; c.dims[0] = 3; c.dims[1] = 24; c.dims[2] = 9; c.dims[3] = 16; c.layout = layout;
                c.dt = dtype_sets[di][0]; c.sdt = dtype_sets[di][1]; c.pdt = dtype_sets[di][2];
                c.has_gamma = 1; c.want_dx = c.want_pg = 1; c.form = opt % 3;
                c.relu = add ? NBWD_FUSE_ADD_RELU : NBWD_FUSE_RELU;
                switch (opt) {
                case 0: c.relu_st = 2; break;
                case 1: c.relu_alias = add ? BRA_ADD_DY : BRA_DX_DST; break;
                case 2: c.relu_alias = add ? BRA_ADD_DST : BRA_DX_DST; c.pad = 4; break;
                case 3: c.relu_alias = BRA_DX_DST; c.relu_st = 1; break;
                case 4: c.global = 1; c.relu_st = 1; break;
                case 5: c.global = 1; c.want_pg = 0; break; /* dx alone: no reduction */
                case 6: c.want_dx = c.want_pg = 0; break;   /* ADD_RELU: diff_src_add alone; RELU: nothing */
                case 7: c.want_dx = 0; c.accumulate = 1; c.relu_st = 1; break;
                case 8: c.inplace = 1; c.pad = 4; break;    /* diff_src == diff_dst */
                case 9: c.misalign = 1; c.relu_st = 1; break;
                case 10: c.has_gamma = 0; c.relu_st = 2; c.pad = 4; break;
                case 11: c.split = 2; c.relu_st = 2; break;
                case 12: c.split = 3; c.relu_alias = add ? BRA_ADD_DY : BRA_DX_DST; break;
                /* (not diff_src_add == dst: reduce's diff_src_add overwrites the dst that apply masks with) */
                case 13: c.split = 2; c.global = 1; c.relu_st = 1; break;
                case 14: c.split = 2; c.want_dx = 0; c.relu_st = 1; c.accumulate = 1; break;
                default: c.split = 3; c.dims[0] = 2; c.has_gamma = 0; c.relu_st = 1; break; /* one slice empty */
                }
                bn_run(c);
            }
    { /* [N, C]: a channel stride 2 on diff_src_add (ADD_RELU: the gathered kernels) or diff_dst (RELU: read by
         the masking kernel alone), one slice or two */
        BnCase c;
        memset(&c, 0, sizeof c);
        c.rank = 2; c.dims[0] = 300; c.dims[1] = 40;
        c.dt = NBWD_BF16; c.sdt = c.pdt = NBWD_F32; c.has_gamma = 1; c.want_dx = c.want_pg = 1;
        for (int k = 0; k < 4; ++k) {
            c.relu = k % 2 ? NBWD_FUSE_ADD_RELU : NBWD_FUSE_RELU;
            c.relu_st = k % 2 ? 1 : 2;
            c.split = k / 2 ? 2 : 0;
            bn_run(c);
        }
    }
}

static void gn_tests(void) {
    /* GroupNorm and InstanceNorm: both layouts, NCX planes of one piece
       (units of 1 to 32 threads, or a block) and of several (odd lengths:
       scalar loads), NXC columns in one row block or many, odd C, rank 2
       and 5, groups 1, C / 2 and C (InstanceNorm); every dtype set, the
       four statistics forms (all for f32 and bf16 data, one for the
       others) */
    struct GnShape { int rank, layout; int64_t groups, dims[5]; };
    static const GnShape gshapes[] = {
        {3, NBWD_NCX, 2, {2, 4, 3}},          {4, NBWD_NCX, 8, {4, 32, 7, 7}},
        {4, NBWD_NCX, 32, {2, 64, 28, 28}},   {3, NBWD_NCX, 3, {3, 6, 20000}},
        {3, NBWD_NCX, 2, {2, 4, 20001}},      {5, NBWD_NCX, 4, {2, 8, 6, 5, 7}},
        {2, NBWD_NCX, 3, {5, 12}},            {4, NBWD_NCX, 16, {3, 16, 9, 9}},
        {4, NBWD_NCX, 32, {1, 320, 32, 32}},  {3, NBWD_NXC, 2, {2, 3, 4}},
        {4, NBWD_NXC, 8, {4, 7, 7, 32}},      {4, NBWD_NXC, 32, {2, 28, 28, 64}},
        {3, NBWD_NXC, 3, {3, 20000, 6}},      {3, NBWD_NXC, 5, {2, 3001, 5}},
        {5, NBWD_NXC, 4, {2, 6, 5, 7, 8}},    {2, NBWD_NXC, 3, {5, 12}},
        {4, NBWD_NXC, 16, {3, 9, 9, 16}},     {4, NBWD_NXC, 32, {1, 32, 32, 320}},
        {4, NBWD_NXC, 1, {2, 5, 5, 1000}},    {4, NBWD_NCX, 1, {2, 1000, 5, 5}},
    };
    const int ngshapes = (int)(sizeof gshapes / sizeof gshapes[0]);
    for (int si = 0; si < ngshapes; ++si)
        for (int di = 0; di < 6; ++di)
            for (int form = 0; form < 4; ++form) {
                if (di > 1 && form != (si + di) % 4) continue;
                if (getenv("NBWDT_GPU_QUICK") && (di > 1 || form % 3 != 0)) continue;
                GnCase c;
                memset(&c, 0, sizeof c);
                c.rank = gshapes[si].rank; c.layout = gshapes[si].layout; c.groups = gshapes[si].groups;
                for (int d = 0; d < c.rank; ++d) c.dims[d] = gshapes[si].dims[d];
                c.dt = dtype_sets[di][0]; c.sdt = dtype_sets[di][1]; c.pdt = dtype_sets[di][2];
                c.form = form; c.affine = 1; c.want_dx = c.want_dg = c.want_db = 1;
                c.zero_gamma = form == NBWD_STATS_DST_RSTD && si % 2;
                gn_run(c);
            }
    /* the options, both layouts: without affine, each output subset,
       accumulate, padded, in place (diff_dst; src, xhat or dst), misaligned,
       strided parameters and statistics, the DST_RSTD form's variants,
       empty batches and planes */
    for (int layout = 0; layout < 2; ++layout)
        for (int opt = 0; opt < 22; ++opt) {
            if (getenv("NBWDT_GPU_QUICK") && opt % 4 != 1) continue;
            const int di = (opt + layout) % 6;
            GnCase c;
            memset(&c, 0, sizeof c);
            c.rank = 4; c.layout = layout; c.groups = 6; c.dims[0] = 3;
            if (layout == NBWD_NCX) { c.dims[1] = 24; c.dims[2] = 9; c.dims[3] = 16; }
            else { c.dims[1] = 9; c.dims[2] = 16; c.dims[3] = 24; }
            c.dt = dtype_sets[di][0]; c.sdt = dtype_sets[di][1]; c.pdt = dtype_sets[di][2];
            c.form = opt % 4; c.affine = 1; c.want_dx = c.want_dg = c.want_db = 1;
            switch (opt) {
            case 0: c.affine = 0; c.want_dg = c.want_db = 0; break;
            case 1: c.want_dg = c.want_db = 0; break;
            case 2: c.want_dx = c.want_db = 0; break;
            case 3: c.want_dx = c.want_dg = 0; break;
            case 4: c.want_dx = 0; break;
            case 5: c.accumulate = 1; break;
            case 6: c.pad = 3; break;
            case 7: c.inplace = 1; c.pad = 2; break;
            case 8: c.inplace = 2; break;
            case 9: c.misalign = 1; break;
            case 10: c.pstride = 1; c.accumulate = 1; break;
            case 11: c.sstride = 1; break;
            case 12: c.form = NBWD_STATS_DST_RSTD; c.no_beta = 1; c.zero_gamma = 1; break;
            case 13: c.form = NBWD_STATS_DST_RSTD; c.zero_gamma = 1; c.want_dx = c.want_db = 0; break;
            case 14: c.form = NBWD_STATS_DST_RSTD; c.want_dx = c.want_dg = 0; break; /* gamma, beta not read */
            case 15: c.form = NBWD_STATS_DST_RSTD; c.affine = 0; c.want_dg = c.want_db = 0; c.inplace = 2; break;
            case 16: c.accumulate = 1; c.want_dx = 0; c.pstride = 1; break;
            case 17: c.form = NBWD_STATS_XHAT_STD; c.inplace = 2; c.sstride = 1; break;
            case 18: c.dims[0] = 0; break;                      /* empty batch: zeros */
            case 19: c.dims[0] = 0; c.accumulate = 1; break;    /* empty batch: unchanged */
            case 20: c.dims[2] = 0; c.pstride = 1; break;       /* no positions: zeros */
            default: c.groups = 4; c.dims[layout == NBWD_NCX ? 1 : 3] = 0; break; /* no channels */
            }
            gn_run(c);
        }
    { /* strides and load paths change no bit */
        GnCase c;
        memset(&c, 0, sizeof c);
        c.affine = 1; c.want_dx = c.want_dg = c.want_db = 1;
        c.rank = 4; c.layout = NBWD_NCX; c.groups = 4; c.dims[0] = 2; c.dims[1] = 16; c.dims[2] = 9; c.dims[3] = 16;
        c.dt = NBWD_BF16; c.sdt = c.pdt = NBWD_F32; c.form = 0;
        gn_layouts_same_bits(c);
        c.layout = NBWD_NXC; c.dims[1] = 9; c.dims[3] = 16; c.dt = NBWD_F32; c.form = NBWD_STATS_DST_RSTD;
        gn_layouts_same_bits(c);
        c.rank = 3; c.layout = NBWD_NCX; c.groups = 2; c.dims[1] = 4; c.dims[2] = 20000; c.dims[3] = 0;
        c.dt = c.sdt = c.pdt = NBWD_F16; c.form = NBWD_STATS_MEAN_RSTD;
        gn_layouts_same_bits(c);
        c.layout = NBWD_NXC; c.groups = 8; c.dims[1] = 300; c.dims[2] = 40; c.dt = NBWD_BF16; c.sdt = c.pdt = NBWD_BF16;
        c.form = NBWD_STATS_XHAT_STD;
        gn_layouts_same_bits(c);
    }
    for (int layout = 0; layout < 2; ++layout)
        for (int di = 0; di < 2; ++di) {
            gn_nan_isolation(layout, dtype_sets[di][0], NBWD_STATS_MEAN_VARIANCE);
            gn_nan_isolation(layout, dtype_sets[di][0], NBWD_STATS_DST_RSTD);
        }
}

/* NBWDT_GPU_RACE=1: one small case per kernel family and shared-memory
   scheme (LayerNorm: groups of 1-32 threads with their tree, one group per
   block with the partials in shared memory, long rows; RMSNorm with a
   residual; BatchNorm and GroupNorm reductions in both layouts, the fused
   ReLU), each with its determinism reruns: small enough for
   compute-sanitizer's racecheck to reach a verdict in a short lease. */
static void race_tests(void) {
    static const int64_t shapes[][3] = {{300, 24, NBWD_F32}, {33, 768, NBWD_F32}, {33, 768, NBWD_BF16},
                                        {9, 4096, NBWD_BF16}, {3, 40000, NBWD_F32}};
    for (int si = 0; si < 5; ++si) {
        LnCase c;
        memset(&c, 0, sizeof c);
        c.rank = 2; c.dims[0] = shapes[si][0]; c.dims[1] = shapes[si][1]; c.axis = 1;
        c.dt = (int)shapes[si][2]; c.sdt = c.pdt = NBWD_F32;
        c.affine = 1; c.want_dx = c.want_dg = c.want_db = 1;
        ln_run(c);
        if (si == 1) {
            c.rms = 1; c.residual = 1;
            ln_run(c);
        }
    }
    for (int layout = 0; layout < 2; ++layout) {
        BnCase b;
        memset(&b, 0, sizeof b);
        b.rank = 4; b.dims[0] = 3; b.dims[1] = 24; b.dims[2] = 9; b.dims[3] = 16; b.layout = layout;
        b.dt = NBWD_BF16; b.sdt = b.pdt = NBWD_F32; b.has_gamma = 1; b.want_dx = b.want_pg = 1;
        bn_run(b);
        b.relu = NBWD_FUSE_RELU;
        bn_run(b);
        GnCase g;
        memset(&g, 0, sizeof g);
        g.rank = 4; g.layout = layout; g.groups = 8; g.dims[0] = 2;
        if (layout == NBWD_NCX) { g.dims[1] = 32; g.dims[2] = 9; g.dims[3] = 16; }
        else { g.dims[1] = 9; g.dims[2] = 16; g.dims[3] = 32; }
        g.dt = NBWD_F32; g.sdt = g.pdt = NBWD_F32; g.affine = 1; g.want_dx = g.want_dg = g.want_db = 1;
        gn_run(g);
    }
}

int main(void) {
    int count = 0;
    nbwd_status s = nbwd_gpu_device_count(&count);
    char *cpu = (char *)calloc(NBWDT_ARENA, 1);
    if (s != NBWD_OK) {
        char *host = (char *)calloc(NBWDT_ARENA, 1);
        printf("no GPU: %s\n", nbwd_gpu_last_error());
        nbwdt_status_cases(cpu, host, NBWD_ERR_UNSUPPORTED);
        nbwdt_cpu_only_cases(cpu, host);
        free(host);
        printf("host-side checks only (the kernels did not run)\n");
    } else {
        cudaDeviceProp prop;
        char *dev = nullptr;
        CK(cudaGetDeviceProperties(&prop, 0));
        printf("GPU: %s (sm_%d%d)\n", prop.name, prop.major, prop.minor);
        CK(cudaMalloc(&dev, NBWDT_ARENA));
        CK(cudaMemset(dev, 0, NBWDT_ARENA));
        nbwdt_status_cases(cpu, dev, NBWD_OK);
        nbwdt_cpu_only_cases(cpu, dev);
        cudaFree(dev);
        if (getenv("NBWDT_GPU_RACE")) {
            race_tests();
        } else {
            gpu_tests();
            gn_tests();
        }
    }
    free(cpu);
    printf("%d passed, %d failed\n", passed, failed);
    return failed != 0;
}
