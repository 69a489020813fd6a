/* fuzz_misc.c - libFuzzer target for the small entry points: the scalar and
   array conversions (checked against independent round-to-nearest-even
   definitions), nbwd_isa_name, nbwd_status_string, nbwd_isa_supported,
   nbwd_active_isa, nbwd_force_isa with any int, and the descriptor
   initializers with odd ranks and NULL pointers. */
#if !defined(FZ_SEPARATE_IMPL) /* else linked in from tests/impl.c */
#define NORM_BWD_IMPLEMENTATION
#endif
#include "norm_bwd.h"
#include "fuzz_common.h"

/* Nearest-even rounding of a finite float to a format with p significant
   bits, minimum normal exponent emin and largest finite maxf, in double
   (exact: every float and every candidate is a double). */
static double ref_round(double v, int p, int emin, double maxf) {
    double a = fabs(v), q, r;
    int e;
    if (a == 0) return v;
    frexp(a, &e);
    e -= 1;
    if (e < emin) e = emin;
    q = ldexp(1.0, e - p + 1);
    r = floor(a / q);
    if (a - r * q > 0.5 * q || (a - r * q == 0.5 * q && fmod(r, 2.0) == 1.0)) r += 1;
    r *= q;
    /* overflow: beyond the largest finite + half an ulp rounds to infinity */
    if (r > maxf) r = INFINITY;
    return v < 0 ? -r : r;
}

static void check_conv(float f) {
    uint16_t b = nbwd_f32_to_bf16(f), h = nbwd_f32_to_f16(f);
    double vb = fz_bf16_val(b), vh = fz_f16_val(h);
    if (isnan(f)) {
        FZ_ASSERT(isnan(vb) && (b & 0x0040u), "bf16(NaN) = %04x is not a quiet NaN", b);
        FZ_ASSERT(isnan(vh) && (h & 0x0200u), "f16(NaN) = %04x is not a quiet NaN", h);
        return;
    }
    {
        double wb = isinf(f) ? (double)f : ref_round(f, 8, -126, 3.3895313892515355e38);
        double wh = isinf(f) ? (double)f : ref_round(f, 11, -14, 65504.0);
        FZ_ASSERT(vb == wb && !!signbit(vb) == !!signbit((double)f), "bf16(%.9g) = %04x (%.9g), want %.9g", (double)f, b,
                  vb, wb);
        FZ_ASSERT(vh == wh && !!signbit(vh) == !!signbit((double)f), "f16(%.9g) = %04x (%.9g), want %.9g", (double)f, h,
                  vh, wh);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fz_rd rd = {data, size, 0};
    uint8_t op = fz_u8(&rd);
    switch (op % 6) {
    case 0: { /* scalar conversions from arbitrary bits */
        uint32_t u = fz_u32(&rd);
        uint16_t v = (uint16_t)u;
        float f, wf;
        memcpy(&f, &u, 4);
        check_conv(f);
        /* widening is exact; narrowing what was widened gives the same bits
           (NaN: a quiet NaN) */
        wf = nbwd_bf16_to_f32(v);
        FZ_ASSERT(isnan(wf) ? isnan(fz_bf16_val(v)) : (double)wf == fz_bf16_val(v), "bf16 %04x widened wrong", v);
        if (!isnan(wf)) FZ_ASSERT(nbwd_f32_to_bf16(wf) == v, "bf16 %04x round trip", v);
        wf = nbwd_f16_to_f32(v);
        FZ_ASSERT(isnan(wf) ? isnan(fz_f16_val(v)) : (double)wf == fz_f16_val(v) && !!signbit(wf) == !!(v & 0x8000u),
                  "f16 %04x widened to %.9g", v, (double)wf);
        if (!isnan(wf)) FZ_ASSERT(nbwd_f32_to_f16(wf) == v, "f16 %04x round trip", v);
        break;
    }
    case 1: { /* array conversions: same as the scalar ones, bounded writes */
        int64_t n = (int64_t)(fz_u8(&rd) % 40) - 3; /* n <= 0 included: nothing written */
        int which = fz_u8(&rd) % 4, nulls = fz_u8(&rd) % 8, i;
        float fin[40], fout[48];
        uint16_t hin[40], hout[48];
        for (i = 0; i < 40; ++i) {
            uint32_t u = fz_u32(&rd);
            memcpy(&fin[i], &u, 4);
            hin[i] = (uint16_t)u;
        }
        memset(fout, FZ_CANARY, sizeof fout);
        memset(hout, FZ_CANARY, sizeof hout);
        switch (which) {
        case 0: nbwd_f32_to_bf16_n(nulls == 1 ? NULL : fin, nulls == 2 ? NULL : hout, n); break;
        case 1: nbwd_f32_to_f16_n(nulls == 1 ? NULL : fin, nulls == 2 ? NULL : hout, n); break;
        case 2: nbwd_bf16_to_f32_n(nulls == 1 ? NULL : hin, nulls == 2 ? NULL : fout, n); break;
        default: nbwd_f16_to_f32_n(nulls == 1 ? NULL : hin, nulls == 2 ? NULL : fout, n); break;
        }
        for (i = 0; i < 48; ++i) {
            int written = nulls != 1 && nulls != 2 && i < n;
            if (which < 2) {
                uint16_t want = which == 0 ? nbwd_f32_to_bf16(fin[i < 40 ? i : 0]) : nbwd_f32_to_f16(fin[i < 40 ? i : 0]);
                if (written) FZ_ASSERT(hout[i] == want, "array conversion %d element %d", which, i);
                else FZ_ASSERT(hout[i] == (uint16_t)(FZ_CANARY * 0x101u), "array conversion %d wrote element %d (n %lld)", which, i, (long long)n);
            } else {
                float want = which == 2 ? nbwd_bf16_to_f32(hin[i < 40 ? i : 0]) : nbwd_f16_to_f32(hin[i < 40 ? i : 0]);
                uint32_t got_bits, want_bits, canary = FZ_CANARY * 0x01010101u;
                memcpy(&got_bits, &fout[i], 4);
                memcpy(&want_bits, &want, 4);
                if (written) FZ_ASSERT(got_bits == want_bits, "array conversion %d element %d", which, i);
                else FZ_ASSERT(got_bits == canary, "array conversion %d wrote element %d (n %lld)", which, i, (long long)n);
            }
        }
        break;
    }
    case 2: { /* names and messages for any value */
        int v = (int)fz_u32(&rd);
        const char *s1 = nbwd_isa_name((nbwd_isa)v), *s2 = nbwd_status_string((nbwd_status)v);
        FZ_ASSERT(s1 && strlen(s1) > 0 && strlen(s1) < 64, "isa_name(%d)", v);
        FZ_ASSERT(s2 && strlen(s2) > 0 && strlen(s2) < 512, "status_string(%d)", v);
        FZ_ASSERT(nbwd_isa_supported((nbwd_isa)v) == 0 || (v > 0 && v < NBWD_ISA_COUNT), "isa_supported(%d)", v);
        break;
    }
    case 3: { /* forcing any value, then releasing */
        int v = fz_u8(&rd) < 200 ? fz_u8(&rd) % 8 - 1 : (int)fz_u32(&rd);
        int ok = v == NBWD_ISA_AUTO || (v > 0 && v < NBWD_ISA_COUNT && nbwd_isa_supported((nbwd_isa)v));
        nbwd_isa before = nbwd_active_isa();
        nbwd_status s = nbwd_force_isa((nbwd_isa)v);
        FZ_ASSERT((s == NBWD_OK) == ok, "force_isa(%d) = %d", v, (int)s);
        if (ok && v != NBWD_ISA_AUTO) FZ_ASSERT(nbwd_active_isa() == (nbwd_isa)v, "forced %d, active %d", v, (int)nbwd_active_isa());
        if (!ok) FZ_ASSERT(nbwd_active_isa() == before, "a refused force changed the active path");
        FZ_ASSERT(nbwd_force_isa(NBWD_ISA_AUTO) == NBWD_OK, "release");
        break;
    }
    case 4: { /* descriptor initializers: any rank, NULL dims, NULL desc */
        nbwd_layer_norm_bwd_desc ld;
        nbwd_batch_norm_bwd_desc bd;
        int64_t dims[NBWD_MAX_RANK];
        int rank = (int)(int8_t)fz_u8(&rd), i, nulldims = fz_u8(&rd) & 1;
        size_t bytes = 0;
        for (i = 0; i < NBWD_MAX_RANK; ++i) dims[i] = fz_dim(&rd);
        nbwd_layer_norm_bwd_desc_init(NULL, rank, dims);
        nbwd_batch_norm_bwd_desc_init(NULL, rank, dims, NBWD_NXC, 1e-5f);
        nbwd_layer_norm_bwd_desc_init(&ld, rank, nulldims ? NULL : dims);
        nbwd_batch_norm_bwd_desc_init(&bd, rank, nulldims ? NULL : dims, (nbwd_layout)fz_enum(&rd, 2), fz_eps(&rd));
        FZ_ASSERT(ld.rank == rank && ld.begin_norm_axis == -1 && ld.use_affine == 1, "layer_norm desc_init");
        (void)nbwd_layer_norm_bwd_workspace_size(&ld, &bytes);
        (void)nbwd_batch_norm_bwd_workspace_size(&bd, &bytes);
        if (rank < 1 || rank > NBWD_MAX_RANK)
            FZ_ASSERT(nbwd_layer_norm_bwd_workspace_size(&ld, &bytes) == NBWD_ERR_BAD_PARAM, "rank %d accepted", rank);
        if (rank < 2 || rank > NBWD_MAX_RANK)
            FZ_ASSERT(nbwd_batch_norm_bwd_workspace_size(&bd, &bytes) == NBWD_ERR_BAD_PARAM, "BN rank %d accepted", rank);
        break;
    }
    default: { /* NULL descriptors and arguments everywhere */
        nbwd_layer_norm_bwd_args la;
        nbwd_batch_norm_bwd_args ba;
        size_t bytes;
        memset(&la, 0, sizeof la);
        memset(&ba, 0, sizeof ba);
        FZ_ASSERT(nbwd_layer_norm_bwd(NULL, &la, NULL, 0) == NBWD_ERR_NULL_POINTER, "LN NULL desc");
        FZ_ASSERT(nbwd_batch_norm_bwd(NULL, &ba, NULL, 0) == NBWD_ERR_NULL_POINTER, "BN NULL desc");
        FZ_ASSERT(nbwd_layer_norm_bwd_workspace_size(NULL, &bytes) == NBWD_ERR_NULL_POINTER, "LN ws NULL desc");
        FZ_ASSERT(nbwd_batch_norm_bwd_workspace_size(NULL, &bytes) == NBWD_ERR_NULL_POINTER, "BN ws NULL desc");
        break;
    }
    }
    return 0;
}

#if defined(FZ_STANDALONE)
static void fz_report(const char *path, long n) { printf("%s: %ld bytes\n", path, n); }
#endif
