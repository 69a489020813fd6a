// compile_cpp.cc - the header from C++11 (g++ and clang++ -std=c++11
// -Wall -Wextra -pedantic -Werror): declarations first, then the
// implementation in the same file, used with C++ containers.
#include "norm_bwd.h"

#define NORM_BWD_IMPLEMENTATION
#include "norm_bwd.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

int main() {
    const int64_t rows = 3, cols = 37;
    const int64_t dims[2] = {rows, cols};
    std::vector<uint16_t> x(rows * cols), dy(rows * cols), dx(rows * cols);
    std::vector<float> mean(rows), rstd(rows), gamma(cols, 1.0f), dg(cols), db(cols);
    for (int64_t r = 0; r < rows; ++r) {
        double m = 0.0, v = 0.0;
        for (int64_t i = 0; i < cols; ++i) {
            x[r * cols + i] = nbwd_f32_to_bf16(static_cast<float>(std::sin(0.3 * static_cast<double>(i + r))));
            dy[r * cols + i] = nbwd_f32_to_bf16(static_cast<float>(std::cos(0.7 * static_cast<double>(i * r))));
            m += nbwd_bf16_to_f32(x[r * cols + i]);
        }
        m /= static_cast<double>(cols);
        for (int64_t i = 0; i < cols; ++i) {
            double t = nbwd_bf16_to_f32(x[r * cols + i]) - m;
            v += t * t;
        }
        mean[r] = static_cast<float>(m);
        rstd[r] = static_cast<float>(1.0 / std::sqrt(v / static_cast<double>(cols) + 1e-5));
    }
    nbwd_layer_norm_bwd_desc d;
    nbwd_layer_norm_bwd_desc_init(&d, 2, dims);
    d.data_dtype = NBWD_BF16;
    d.stats_form = NBWD_STATS_MEAN_RSTD;
    nbwd_layer_norm_bwd_args a;
    std::memset(&a, 0, sizeof a);
    a.src = x.data();
    a.diff_dst = dy.data();
    a.mean = mean.data();
    a.rstd = rstd.data();
    a.gamma = gamma.data();
    a.diff_src = dx.data();
    a.diff_gamma = dg.data();
    a.diff_beta = db.data();
    size_t ws_bytes = 0;
    if (nbwd_layer_norm_bwd_workspace_size(&d, &ws_bytes) != NBWD_OK) return 1;
    std::vector<unsigned char> ws(ws_bytes);
    nbwd_status s = nbwd_layer_norm_bwd(&d, &a, ws.data(), ws.size());
    if (s != NBWD_OK) {
        std::printf("FAIL: %s\n", nbwd_status_string(s));
        return 1;
    }
    for (int64_t i = 0; i < cols; ++i) {
        double sum = 0.0;
        for (int64_t r = 0; r < rows; ++r) sum += nbwd_bf16_to_f32(dy[r * cols + i]);
        if (std::fabs(db[i] - sum) > 1e-4) {
            std::printf("FAIL: diff_beta[%lld] = %g, expected %g\n", static_cast<long long>(i), double(db[i]), sum);
            return 1;
        }
    }
    std::printf("OK (C++, isa %s)\n", nbwd_isa_name(nbwd_active_isa()));
    return 0;
}
