/* bench/accuracy/engine_loops.c - the two engines' own backward loops, for
   bench/accuracy/dx_accuracy.c, written for this project after the public
   code they stand for; this file is built twice, as each engine builds it:
   -O2 (no contraction), and llm.c's -Ofast -march=native (FMA contraction,
   reassociation). */
#include <math.h>
#include <stdint.h>

#if !defined(LOOP_SUFFIX)
#define LOOP_SUFFIX _o2
#endif
#define LOOP_CAT_(a, b) a##b
#define LOOP_CAT(a, b) LOOP_CAT_(a, b)

/* llm.c's layernorm_backward (train_gpt2.c): saved mean and rstd, the sums
   in float, += into dinp, dweight and dbias */
void LOOP_CAT(llmc_layernorm_backward, LOOP_SUFFIX)(float *dinp, float *dweight, float *dbias, const float *dout,
                                                   const float *inp, const float *weight, const float *mean,
                                                   const float *rstd, int B, int T, int C) {
    int b, t, i;
    for (b = 0; b < B; b++)
        for (t = 0; t < T; t++) {
            const float *dout_bt = dout + (int64_t)b * T * C + (int64_t)t * C;
            const float *inp_bt = inp + (int64_t)b * T * C + (int64_t)t * C;
            float *dinp_bt = dinp + (int64_t)b * T * C + (int64_t)t * C;
            float mean_bt = mean[b * T + t], rstd_bt = rstd[b * T + t];
            float dnorm_mean = 0.0f, dnorm_norm_mean = 0.0f;
            for (i = 0; i < C; i++) {
                float norm_bti = (inp_bt[i] - mean_bt) * rstd_bt;
                float dnorm_i = weight[i] * dout_bt[i];
                dnorm_mean += dnorm_i;
                dnorm_norm_mean += dnorm_i * norm_bti;
            }
            dnorm_mean = dnorm_mean / C;
            dnorm_norm_mean = dnorm_norm_mean / C;
            for (i = 0; i < C; i++) {
                float norm_bti = (inp_bt[i] - mean_bt) * rstd_bt;
                float dnorm_i = weight[i] * dout_bt[i];
                float dval = 0.0f;
                dbias[i] += dout_bt[i];
                dweight[i] += norm_bti * dout_bt[i];
                dval += dnorm_i;
                dval -= dnorm_mean;
                dval -= norm_bti * dnorm_norm_mean;
                dval *= rstd_bt;
                dinp_bt[i] += dval;
            }
        }
}

/* ggml's rms_norm_back (ggml-cpu): dz and x, the sums of f32 products in
   double, dx = (x * (-sum_xdz / (sum_xx + eps n)) + dz) * rrms */
void LOOP_CAT(ggml_rms_norm_back, LOOP_SUFFIX)(float *dx, const float *dz, const float *x, int64_t rows, int64_t n,
                                               float eps) {
    int64_t r, i;
    for (r = 0; r < rows; ++r) {
        const float *xr = x + r * n, *dzr = dz + r * n;
        float *dxr = dx + r * n;
        double sum_xx = 0.0, sum_xdz = 0.0;
        for (i = 0; i < n; ++i) {
            sum_xx += (double)(xr[i] * xr[i]);
            sum_xdz += (double)(xr[i] * dzr[i]);
        }
        {
            const float mean_eps = (float)(sum_xx / (double)n) + eps;
            const double sum_eps = sum_xx + (double)eps * (double)n;
            const float rrms = 1.0f / sqrtf(mean_eps);
            const float c = (float)(-sum_xdz / sum_eps);
            for (i = 0; i < n; ++i) dxr[i] = xr[i] * c;
            for (i = 0; i < n; ++i) dxr[i] += dzr[i];
            for (i = 0; i < n; ++i) dxr[i] *= rrms;
        }
    }
}
