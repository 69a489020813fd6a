/* norm_bwd_simd.h - the SIMD paths of norm_bwd.h (same licenses, see there).

   Do not include this file yourself: norm_bwd.h includes it in the file that
   defines NORM_BWD_IMPLEMENTATION (unless NORM_BWD_NO_SIMD). Keep it next to
   norm_bwd.h.

   Each path is a small vector layer (load, store, add, mul, fma, horizontal
   sum, f16/bf16 widen and narrow) under which norm_bwd.h's kernel template is
   instantiated by re-including norm_bwd.h; the row kernels exist once.

     path    spelled with                compiled when
     sse     SIMDe simde_mm_* (SSE2)     SIMDe is installed; native SSE2 on
                                         x86-64, translated to NEON on AArch64
     avx2    <immintrin.h> + target      x86 gcc/clang/MSVC (AVX2, FMA, F16C)
             attribute "avx2,fma,f16c"
     avx512  <immintrin.h> + target      x86 gcc/clang/MSVC (AVX-512
             "avx512f,avx512bw,          F/BW/VL/DQ); with gcc 10+ or clang
             avx512vl,avx512dq"          9+ the same kernels also serve
                                         avx512_bf16 (VCVTNEPS2BF16 in asm)
     neon    <arm_neon.h>                AArch64 (FCVTL/FCVTN for f16, bf16
                                         by shifts; neon_bf16: BFCVTN)
   The target attributes let a plain `cc -O2` build carry AVX2 and AVX-512
   code; the dispatcher in norm_bwd.h runs it only where cpuid + xgetbv say
   the CPU and OS support it. MSVC needs no attributes (it accepts every
   intrinsic anywhere); clang-cl takes them, with its per-ISA headers.

   NORM_BWD_SIMD_EMULATE (tests only): the avx2, avx512 and neon layers are
   spelled with SIMDe's simde_* names instead, without target attributes, so
   they run (slowly, emulated) on any x86 CPU; the emulated paths can be
   selected explicitly but are never chosen automatically.
*/
#if !defined(NBWD__IMPLEMENTED) || defined(NBWD__SIMD_INCLUDED)
#error "norm_bwd_simd.h is included by norm_bwd.h under NORM_BWD_IMPLEMENTATION; do not include it directly"
#endif
#define NBWD__SIMD_INCLUDED

/* Warnings this file's own code would raise in some builds, silenced here
   only (pop at the end): clang's -Wpass-failed from SIMDe's vectorize hints
   (-Os, emulation), and the emulation build's vector-ABI notes. */
#if defined(__clang__)
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wunknown-warning-option"
#pragma clang diagnostic ignored "-Wpass-failed"
#if defined(NORM_BWD_SIMD_EMULATE)
#pragma clang diagnostic ignored "-Wpsabi"
#endif
#elif defined(__GNUC__) && defined(NORM_BWD_SIMD_EMULATE)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

#if defined(__x86_64__) || defined(_M_X64) || defined(__i386__) || defined(_M_IX86)
#define NBWD__SIMD_X86 1
#endif
#if defined(__aarch64__) || defined(_M_ARM64)
#define NBWD__SIMD_ARM64 1
#endif
/* 32-bit Arm with a hardware-float ABI: the neon layer through a target
   attribute (gcc's <arm_neon.h> declares NEON for such functions whatever
   -mfpu says; clang's only when the build enables NEON), run where Linux's
   HWCAP says NEON and VFPv4 (for the fused multiply-add). */
#if defined(__arm__) && !defined(__aarch64__) && defined(__linux__) && defined(__ARM_FP) &&                   \
    defined(__ARM_ARCH) && __ARM_ARCH >= 7 && !defined(NORM_BWD_SIMD_EMULATE) &&                              \
    ((defined(__GNUC__) && !defined(__clang__)) || (defined(__ARM_NEON) && defined(__ARM_FEATURE_FMA)))
#define NBWD__SIMD_ARM32 1
#endif
#if defined(__wasm_simd128__)
#define NBWD__SIMD_WASM 1 /* WebAssembly built with SIMD128: SIMDe spells sse in it */
#endif

#if defined(__has_include)
#if __has_include(<simde/x86/sse2.h>)
#define NBWD__SIMD_HAVE_SIMDE 1
#endif
#elif !defined(NBWD__MSVC)
#define NBWD__SIMD_HAVE_SIMDE 1 /* no way to ask: assume it is installed */
#endif

#if defined(NORM_BWD_SIMD_EMULATE) && !defined(NBWD__SIMD_HAVE_SIMDE)
#error "NORM_BWD_SIMD_EMULATE needs SIMDe (Debian: libsimde-dev)"
#endif

/* Headers. SIMDe and the AVX-512 headers warn under some user flags
   (-Wconversion, g++ -Wmaybe-uninitialized): keep those off for them. */
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wconversion"
#pragma GCC diagnostic ignored "-Wsign-conversion"
#pragma GCC diagnostic ignored "-Wuninitialized"
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wfloat-conversion"
#endif
#endif
#if defined(NBWD__SIMD_HAVE_SIMDE) && !defined(NORM_BWD_NO_SSE)
#include <simde/x86/sse2.h>
#include <simde/x86/f16c.h>
#endif
#if defined(NORM_BWD_SIMD_EMULATE)
#include <simde/x86/avx512.h>
#include <simde/x86/f16c.h> /* (the sse layer's include, which NORM_BWD_NO_SSE leaves out) */
#include <simde/arm/neon.h>
#elif defined(NBWD__SIMD_X86)
#include <immintrin.h>
#if defined(_MSC_VER) && defined(__clang__)
/* clang-cl (and clang in MSVC mode) declares an ISA's intrinsics in
   <immintrin.h> only when the whole build targets it (/arch, -m): the target
   attributes below need them regardless, so take them from clang's per-ISA
   headers, which <immintrin.h> has just made includable (SSE3-4.1 first:
   the AVX-512 headers use their names). */
#include <pmmintrin.h>
#include <tmmintrin.h>
#include <smmintrin.h>
#include <avxintrin.h>
#include <avx2intrin.h>
#include <f16cintrin.h>
#include <fmaintrin.h>
#include <avx512fintrin.h>
#include <avx512vlintrin.h>
#include <avx512bwintrin.h>
#include <avx512dqintrin.h>
#include <avx512vlbwintrin.h>
#include <avx512vldqintrin.h>
#endif
#elif (defined(NBWD__SIMD_ARM64) || defined(NBWD__SIMD_ARM32)) && !defined(NORM_BWD_NO_NEON)
#include <arm_neon.h>
#endif
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

/* Partial vectors without a stack buffer: the first `bytes` (even, below 16)
   bytes at p piece by piece (8, 4, 2 bytes) through integer registers, as
   the two 64-bit halves of a vector (the rest zero), and back. (A vector
   load of a buffer just filled element by element waits until those stores
   retire: a row with a partial last vector took twice as long as one of
   whole vectors.) The sse and avx2 layers build their vectors from these. */
typedef struct nbwd__bytes16 {
    uint64_t lo, hi;
} nbwd__bytes16;
static inline nbwd__bytes16 nbwd__load_first_bytes(const void *p, int bytes) {
    const char *c = (const char *)p;
    nbwd__bytes16 b;
    uint64_t *rest = bytes & 8 ? &b.hi : &b.lo;
    b.lo = b.hi = 0;
    if (bytes & 8) {
        memcpy(&b.lo, c, 8);
        c += 8;
    }
    if (bytes & 4) {
        uint32_t w;
        memcpy(&w, c, 4);
        *rest = w;
        c += 4;
    }
    if (bytes & 2) {
        uint16_t w;
        memcpy(&w, c, 2);
        *rest |= (uint64_t)w << (8 * (bytes & 4));
    }
    return b;
}
static inline void nbwd__store_first_bytes(void *p, int bytes, nbwd__bytes16 b) {
    char *c = (char *)p;
    uint64_t w = b.lo;
    if (bytes & 8) {
        memcpy(c, &w, 8);
        c += 8;
        w = b.hi;
    }
    if (bytes & 4) {
        uint32_t t = (uint32_t)w;
        memcpy(c, &t, 4);
        c += 4;
        w >>= 32;
    }
    if (bytes & 2) {
        uint16_t t = (uint16_t)w;
        memcpy(c, &t, 2);
    }
}

/* ------------------------------------------------------------------ sse */
/* (32-bit x86 built without SSE2: SIMDe would spell it in portable C, no
   faster than scalar, passing vectors in a non-standard ABI: left out) */
#if defined(NBWD__SIMD_HAVE_SIMDE) && !defined(NORM_BWD_NO_SSE) &&                                             \
    ((defined(NBWD__SIMD_X86) && (!(defined(__i386__) || defined(_M_IX86)) || defined(__SSE2__) ||             \
                                  (defined(_M_IX86_FP) && _M_IX86_FP >= 2))) ||                                   \
     defined(NBWD__SIMD_ARM64) || defined(NBWD__SIMD_WASM))
#define NBWD__HAVE_SSE 1

static inline float nbwd__sse_hsum(simde__m128 v) {
    simde__m128 s = simde_mm_add_ps(v, simde_mm_movehl_ps(v, v)); /* (0+2), (1+3) */
    s = simde_mm_add_ss(s, simde_mm_shuffle_ps(s, s, 0x55));
    return simde_mm_cvtss_f32(s);
}
/* bf16 -> f32: the 4 values in the low 64 bits of h */
static inline simde__m128 nbwd__sse_widen_bf16(simde__m128i h) {
    return simde_mm_castsi128_ps(simde_mm_unpacklo_epi16(simde_mm_setzero_si128(), h)); /* h << 16 */
}
/* The bf16 bits of each lane, rounded to nearest even, sign-extended from
   16 bits (packs_epi32 keeps them exactly): for numbers only, as a NaN's
   payload can carry into its exponent and sign. */
static inline simde__m128i nbwd__sse_round_num_bf16(simde__m128 v) {
    simde__m128i u = simde_mm_castps_si128(v);
    simde__m128i lsb = simde_mm_and_si128(simde_mm_srli_epi32(u, 16), simde_mm_set1_epi32(1));
    return simde_mm_srai_epi32(simde_mm_add_epi32(u, simde_mm_add_epi32(lsb, simde_mm_set1_epi32(0x7fff))), 16);
}
/* The same with NaNs quieted (their payload's top bits kept): the rare
   case, out of line (every kernel's bf16 stores stay short). */
NBWD__NOINLINE simde__m128i nbwd__sse_round_bf16(simde__m128 v) {
    simde__m128i r = nbwd__sse_round_num_bf16(v);
    simde__m128i q = simde_mm_srai_epi32(simde_mm_or_si128(simde_mm_castps_si128(v), simde_mm_set1_epi32(0x400000)), 16);
    simde__m128i nan = simde_mm_castps_si128(simde_mm_cmpunord_ps(v, v));
    return simde_mm_or_si128(simde_mm_and_si128(nan, q), simde_mm_andnot_si128(nan, r));
}
/* Whether a lane of a or b is a NaN: one compare and a rarely taken branch
   instead of quieting every vector (see nbwd__avx2_any_nan) */
static inline int nbwd__sse_any_nan(simde__m128 a, simde__m128 b) {
    return simde_mm_movemask_ps(simde_mm_cmpunord_ps(a, b)) != 0;
}
/* f32 -> bf16: the 4 results in the low 64 bits */
static inline simde__m128i nbwd__sse_narrow_bf16(simde__m128 v) {
    simde__m128i r = nbwd__sse_any_nan(v, v) ? nbwd__sse_round_bf16(v) : nbwd__sse_round_num_bf16(v);
    return simde_mm_packs_epi32(r, r);
}
/* two vectors, one pack and one 16-byte store */
static inline void nbwd__sse_store2_bf16(uint16_t *p, simde__m128 v0, simde__m128 v1) {
    simde__m128i r;
    if (nbwd__sse_any_nan(v0, v1))
        r = simde_mm_packs_epi32(nbwd__sse_round_bf16(v0), nbwd__sse_round_bf16(v1));
    else
        r = simde_mm_packs_epi32(nbwd__sse_round_num_bf16(v0), nbwd__sse_round_num_bf16(v1));
    simde_mm_storeu_si128((simde__m128i *)(void *)p, r);
}
/* f16: F16C's instructions where the build has F16C (SIMDe then maps
   simde_mm_cvtph_ps / cvtps_ph to them). Elsewhere (plain x86-64, AArch64)
   SIMDe's software conversion drops NaN payloads, so this file converts 4
   lanes at once with SSE2 integer operations instead, bit for bit the same as
   nbwd__f16_to_f32 / nbwd__f32_to_f16 (quiet NaNs keep their payload, round
   to nearest even). The floating-point steps are all exact or truncating, so
   the results do not depend on the rounding mode or on FTZ/DAZ. */
#if defined(SIMDE_X86_F16C_NATIVE)
static inline simde__m128 nbwd__sse_widen_f16(simde__m128i h) { return simde_mm_cvtph_ps(h); }
static inline simde__m128i nbwd__sse_narrow_f16(simde__m128 v) {
    return simde_mm_cvtps_ph(v, SIMDE_MM_FROUND_TO_NEAREST_INT);
}
#else
/* (m & a) | (~m & b) */
static inline simde__m128i nbwd__sse_select(simde__m128i m, simde__m128i a, simde__m128i b) {
    return simde_mm_or_si128(simde_mm_and_si128(m, a), simde_mm_andnot_si128(m, b));
}
/* f16 -> f32: the 4 halves in the low 16 bits of each 32-bit lane. Not
   inlined (nor its inverse): some 40 instructions at every 16-bit load and
   store of every kernel made the sse path the slowest to compile, for the
   rarest of cases (f16 data on a CPU without AVX2). */
NBWD__NOINLINE simde__m128 nbwd__sse_f16_to_f32(simde__m128i h) {
    simde__m128i em = simde_mm_and_si128(h, simde_mm_set1_epi32(0x7fff));
    simde__m128i e = simde_mm_and_si128(h, simde_mm_set1_epi32(0x7c00));
    simde__m128i sign = simde_mm_slli_epi32(simde_mm_and_si128(h, simde_mm_set1_epi32(0x8000)), 16);
    simde__m128i infnan = simde_mm_cmpeq_epi32(e, simde_mm_set1_epi32(0x7c00));
    simde__m128i nan = simde_mm_cmpgt_epi32(em, simde_mm_set1_epi32(0x7c00));
    simde__m128i sub = simde_mm_cmpeq_epi32(e, simde_mm_setzero_si128()); /* zero or subnormal */
    /* normal: rebias the exponent by 127 - 15; inf/NaN: by 255 - 31, and NaN quiet */
    simde__m128i o = simde_mm_add_epi32(simde_mm_slli_epi32(em, 13), simde_mm_set1_epi32(112 << 23));
    o = simde_mm_add_epi32(o, simde_mm_and_si128(infnan, simde_mm_set1_epi32(112 << 23)));
    o = simde_mm_or_si128(o, simde_mm_and_si128(nan, simde_mm_set1_epi32(0x400000)));
    /* zero/subnormal: man * 2^-24, exact (an integer below 2^10, scaled by a power of 2) */
    o = nbwd__sse_select(sub,
                         simde_mm_castps_si128(simde_mm_mul_ps(simde_mm_cvtepi32_ps(em), simde_mm_set1_ps(5.9604644775390625e-8f))),
                         o);
    return simde_mm_castsi128_ps(simde_mm_or_si128(o, sign));
}
/* f32 -> f16 (round to nearest even): the 4 results in the low 16 bits of
   each 32-bit lane, the upper 16 bits copies of bit 15 (packs_epi32 keeps
   them exact). */
NBWD__NOINLINE simde__m128i nbwd__sse_f32_to_f16(simde__m128 v) {
    simde__m128i u = simde_mm_castps_si128(v);
    simde__m128i a = simde_mm_and_si128(u, simde_mm_set1_epi32(0x7fffffff));
    simde__m128i sign = simde_mm_and_si128(simde_mm_srli_epi32(u, 16), simde_mm_set1_epi32(0x8000));
    simde__m128i nan = simde_mm_cmpgt_epi32(a, simde_mm_set1_epi32(0x7f800000));
    simde__m128i big = simde_mm_cmpgt_epi32(a, simde_mm_set1_epi32(0x477fefff)); /* >= 65520: inf (or NaN) */
    simde__m128i sub = simde_mm_cmplt_epi32(a, simde_mm_set1_epi32(0x38800000)); /* below 2^-14 */
    /* normal: rebias, then round at bit 13: + 0xfff + the kept lsb */
    simde__m128i lsb = simde_mm_and_si128(simde_mm_srli_epi32(a, 13), simde_mm_set1_epi32(1));
    simde__m128i r = simde_mm_srli_epi32(
        simde_mm_add_epi32(simde_mm_add_epi32(a, simde_mm_set1_epi32(0xfff - (112 << 23))), lsb), 13);
    /* below 2^-14: y = |x| * 2^25 (exact, < 2^11); t = trunc(y) holds the
       result and one more bit; sticky: y had more bits. RNE: r = (t + ((lsb |
       sticky) & 1)) >> 1. Other lanes go through as 0. */
    simde__m128 y = simde_mm_mul_ps(simde_mm_castsi128_ps(simde_mm_and_si128(a, sub)), simde_mm_set1_ps(33554432.0f));
    simde__m128i t = simde_mm_cvttps_epi32(y);
    simde__m128i sticky = simde_mm_castps_si128(simde_mm_cmpneq_ps(y, simde_mm_cvtepi32_ps(t)));
    simde__m128i rs = simde_mm_srli_epi32(
        simde_mm_add_epi32(t, simde_mm_and_si128(simde_mm_or_si128(simde_mm_srli_epi32(t, 1), sticky),
                                                 simde_mm_set1_epi32(1))), 1);
    /* inf: 0x7c00; NaN: 0x7e00 | the top 10 payload bits */
    simde__m128i special = simde_mm_or_si128(
        simde_mm_set1_epi32(0x7c00),
        simde_mm_and_si128(nan, simde_mm_or_si128(simde_mm_set1_epi32(0x200),
                                                  simde_mm_and_si128(simde_mm_srli_epi32(a, 13), simde_mm_set1_epi32(0x3ff)))));
    r = nbwd__sse_select(sub, rs, r);
    r = nbwd__sse_select(big, special, r);
    r = simde_mm_or_si128(r, sign);
    return simde_mm_srai_epi32(simde_mm_slli_epi32(r, 16), 16);
}
/* the 4 halves in the low 64 bits of h, and back */
static inline simde__m128 nbwd__sse_widen_f16(simde__m128i h) {
    return nbwd__sse_f16_to_f32(simde_mm_unpacklo_epi16(h, simde_mm_setzero_si128()));
}
static inline simde__m128i nbwd__sse_narrow_f16(simde__m128 v) {
    simde__m128i r = nbwd__sse_f32_to_f16(v);
    return simde_mm_packs_epi32(r, r);
}
#endif
static inline simde__m128i nbwd__sse_load_first(const void *p, int bytes) {
    nbwd__bytes16 b = nbwd__load_first_bytes(p, bytes);
    return simde_mm_set_epi64x((int64_t)b.hi, (int64_t)b.lo);
}
static inline void nbwd__sse_store_first(void *p, int bytes, simde__m128i h) {
    nbwd__bytes16 b;
    simde_mm_storel_epi64((simde__m128i *)(void *)&b.lo, h);
    simde_mm_storel_epi64((simde__m128i *)(void *)&b.hi, simde_mm_unpackhi_epi64(h, h));
    nbwd__store_first_bytes(p, bytes, b);
}

static inline void nbwd__sse_rstd2(const float *v, float *out, double eps) {
    simde__m128i pair = simde_mm_loadl_epi64((const simde__m128i *)(const void *)v);
    simde__m128d d = simde_mm_cvtps_pd(simde_mm_castsi128_ps(pair));
    d = simde_mm_div_pd(simde_mm_set1_pd(1.0), simde_mm_sqrt_pd(simde_mm_add_pd(d, simde_mm_set1_pd(eps))));
    simde_mm_storel_epi64((simde__m128i *)(void *)out, simde_mm_castps_si128(simde_mm_cvtpd_ps(d)));
}

#define NBWD__KSUFFIX _sse
#define NBWD__KTARGET
#define NBWD__V simde__m128
#define NBWD__VW 4
#define NBWD__V_ZERO() simde_mm_setzero_ps()
#define NBWD__V_SET1(s) simde_mm_set1_ps(s)
#define NBWD__V_ADD(a, b) simde_mm_add_ps(a, b)
#define NBWD__V_SUB(a, b) simde_mm_sub_ps(a, b)
#define NBWD__V_MUL(a, b) simde_mm_mul_ps(a, b)
#define NBWD__V_FMA(a, b, c) simde_mm_add_ps(simde_mm_mul_ps(a, b), c) /* no FMA in the SSE baseline */
#define NBWD__V_HSUM(v) nbwd__sse_hsum(v)
#define NBWD__V_LOAD(p) simde_mm_loadu_ps(p)
#define NBWD__V_STORE(p, v) simde_mm_storeu_ps(p, v)
#define NBWD__V_LOAD_N(p, n) simde_mm_castsi128_ps(nbwd__sse_load_first(p, 4 * (n)))
#define NBWD__V_STORE_N(p, n, v) nbwd__sse_store_first(p, 4 * (n), simde_mm_castps_si128(v))
#define NBWD__V_STREAM(p, v) simde_mm_stream_ps(p, v)
#define NBWD__V_FENCE() simde_mm_sfence()
#define NBWD__H simde__m128i /* 4 values in the low 64 bits */
#define NBWD__H_LOAD(p) simde_mm_loadl_epi64((const simde__m128i *)(const void *)(p))
#define NBWD__H_LOAD_N(p, n) nbwd__sse_load_first(p, 2 * (n))
#define NBWD__H_STORE(p, h) simde_mm_storel_epi64((simde__m128i *)(void *)(p), h)
#define NBWD__H_STORE_N(p, n, h) nbwd__sse_store_first(p, 2 * (n), h)
/* (16-bit data: 8-byte pieces, which SSE2 does not stream: plain stores) */
#define NBWD__WIDEN_F16(h) nbwd__sse_widen_f16(h)
#define NBWD__WIDEN_BF16(h) nbwd__sse_widen_bf16(h)
#define NBWD__NARROW_F16(v) nbwd__sse_narrow_f16(v)
#define NBWD__NARROW_BF16(v) nbwd__sse_narrow_bf16(v)
#define NBWD__V_NARROW2_BF16(p, v0, v1) nbwd__sse_store2_bf16(p, v0, v1)
#define NBWD__V_STREAM2_BF16(p, v0, v1) nbwd__sse_store2_bf16(p, v0, v1)
#define NBWD__V_RSTD_LANES 2
#define NBWD__V_RSTD(v, out, eps) nbwd__sse_rstd2(v, out, eps)
#define NBWD__KERNEL_PASS 1
#include NORM_BWD_HEADER_FILENAME /* the kernel template over this layer (it #undefs the layer) */
#undef NBWD__KERNEL_PASS
#endif

/* ---------------------------------------------------- x86 spelling: native or SIMDe */
#if defined(NBWD__SIMD_X86) || defined(NORM_BWD_SIMD_EMULATE)
#if defined(NORM_BWD_SIMD_EMULATE)
#define NBWD__MM(name) simde_mm_##name
#define NBWD__MM256(name) simde_mm256_##name
#define NBWD__MM512(name) simde_mm512_##name
#define NBWD__M128 simde__m128
#define NBWD__M128I simde__m128i
#define NBWD__M256 simde__m256
#define NBWD__M256I simde__m256i
#define NBWD__M256D simde__m256d
#define NBWD__M512 simde__m512
#define NBWD__M512I simde__m512i
#define NBWD__MASK16 simde__mmask16
#define NBWD__ROUND_NEAREST SIMDE_MM_FROUND_TO_NEAREST_INT
#define NBWD__CMP_UNORD SIMDE_CMP_UNORD_Q
#define NBWD__TARGET_AVX2
#define NBWD__TARGET_AVX512
#else
#define NBWD__MM(name) _mm_##name
#define NBWD__MM256(name) _mm256_##name
#define NBWD__MM512(name) _mm512_##name
#define NBWD__M128 __m128
#define NBWD__M128I __m128i
#define NBWD__M256 __m256
#define NBWD__M256I __m256i
#define NBWD__M256D __m256d
#define NBWD__M512 __m512
#define NBWD__M512I __m512i
#define NBWD__MASK16 __mmask16
#define NBWD__ROUND_NEAREST _MM_FROUND_TO_NEAREST_INT
#define NBWD__CMP_UNORD _CMP_UNORD_Q
#if defined(NBWD__MSVC)
#define NBWD__TARGET_AVX2
#define NBWD__TARGET_AVX512
#else
#define NBWD__TARGET_AVX2 __attribute__((target("avx2,fma,f16c")))
#define NBWD__TARGET_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c")))
#endif
#endif

/* ----------------------------------------------------------------- avx2 */
#if !defined(NORM_BWD_NO_AVX2)
#define NBWD__HAVE_AVX2 1

static inline NBWD__TARGET_AVX2 float nbwd__avx2_hsum(NBWD__M256 v) {
    NBWD__M128 s = NBWD__MM(add_ps)(NBWD__MM256(castps256_ps128)(v), NBWD__MM256(extractf128_ps)(v, 1));
    s = NBWD__MM(add_ps)(s, NBWD__MM(movehl_ps)(s, s));
    s = NBWD__MM(add_ss)(s, NBWD__MM(shuffle_ps)(s, s, 0x55));
    return NBWD__MM(cvtss_f32)(s);
}
static inline NBWD__TARGET_AVX2 void nbwd__avx2_rstd4(const float *v, float *out, double eps) {
    NBWD__M256D d = NBWD__MM256(cvtps_pd)(NBWD__MM(loadu_ps)(v));
    d = NBWD__MM256(div_pd)(NBWD__MM256(set1_pd)(1.0),
                            NBWD__MM256(sqrt_pd)(NBWD__MM256(add_pd)(d, NBWD__MM256(set1_pd)(eps))));
    NBWD__MM(storeu_ps)(out, NBWD__MM256(cvtpd_ps)(d));
}
static inline NBWD__TARGET_AVX2 NBWD__M256 nbwd__avx2_widen_bf16(NBWD__M128I h) {
    return NBWD__MM256(castsi256_ps)(NBWD__MM256(slli_epi32)(NBWD__MM256(cvtepu16_epi32)(h), 16));
}
/* The bf16 bits of each lane, rounded to nearest even, in its low 16 bits,
   the upper 16 zero: for numbers only, as a NaN's payload can carry into its
   exponent and sign. */
static inline NBWD__TARGET_AVX2 NBWD__M256I nbwd__avx2_round_num_bf16(NBWD__M256 v) {
    NBWD__M256I u = NBWD__MM256(castps_si256)(v);
    NBWD__M256I lsb = NBWD__MM256(and_si256)(NBWD__MM256(srli_epi32)(u, 16), NBWD__MM256(set1_epi32)(1));
    NBWD__M256I r = NBWD__MM256(add_epi32)(u, NBWD__MM256(add_epi32)(lsb, NBWD__MM256(set1_epi32)(0x7fff)));
    return NBWD__MM256(srli_epi32)(r, 16);
}
/* The same with NaNs quieted (their payload's top bits kept): the rare
   case, out of line (every kernel's bf16 stores stay short). */
NBWD__NOINLINE NBWD__TARGET_AVX2 NBWD__M256I nbwd__avx2_round_bf16(NBWD__M256 v) {
    NBWD__M256I q = NBWD__MM256(srli_epi32)(NBWD__MM256(or_si256)(NBWD__MM256(castps_si256)(v),
                                                                  NBWD__MM256(set1_epi32)(0x400000)), 16);
    NBWD__M256I nan = NBWD__MM256(castps_si256)(NBWD__MM256(cmp_ps)(v, v, NBWD__CMP_UNORD));
    return NBWD__MM256(blendv_epi8)(nbwd__avx2_round_num_bf16(v), q, nan);
}
/* Whether a lane of a or b is a NaN: one compare and a rarely taken branch
   instead of quieting every vector (measured faster on every LayerNorm bf16
   shape; bench/NOTES.md). */
static inline NBWD__TARGET_AVX2 int nbwd__avx2_any_nan(NBWD__M256 a, NBWD__M256 b) {
    return NBWD__MM256(movemask_ps)(NBWD__MM256(cmp_ps)(a, b, NBWD__CMP_UNORD)) != 0;
}
static inline NBWD__TARGET_AVX2 NBWD__M128I nbwd__avx2_pack_bf16(NBWD__M256 v) {
    NBWD__M256I r = nbwd__avx2_any_nan(v, v) ? nbwd__avx2_round_bf16(v) : nbwd__avx2_round_num_bf16(v);
    r = NBWD__MM256(packus_epi32)(r, r);        /* per 128-bit lane: r0..3 r0..3 | r4..7 r4..7 */
    r = NBWD__MM256(permute4x64_epi64)(r, 0x08); /* qwords 0 and 2 to the low half */
    return NBWD__MM256(castsi256_si128)(r);
}
/* Two vectors, one pack and one lane shuffle for both: 16 bf16 a 256-bit
   store. */
static inline NBWD__TARGET_AVX2 NBWD__M256I nbwd__avx2_pack2_bf16(NBWD__M256 v0, NBWD__M256 v1) {
    NBWD__M256I r;
    if (nbwd__avx2_any_nan(v0, v1))
        r = NBWD__MM256(packus_epi32)(nbwd__avx2_round_bf16(v0), nbwd__avx2_round_bf16(v1));
    else
        r = NBWD__MM256(packus_epi32)(nbwd__avx2_round_num_bf16(v0), nbwd__avx2_round_num_bf16(v1));
    return NBWD__MM256(permute4x64_epi64)(r, 0xd8); /* a0..3 b0..3 | a4..7 b4..7 to a0..7 b0..7 */
}
/* Partial vectors (the first count values, 0 < count < 8): f32 stored as 4
   floats and the rest, and 16-bit data, through nbwd__load_first_bytes /
   nbwd__store_first_bytes (memcpy pieces: no misaligned typed access). */
static inline NBWD__TARGET_AVX2 NBWD__M128I nbwd__avx2_load_first_bytes(const void *p, int bytes) {
    nbwd__bytes16 b = nbwd__load_first_bytes(p, bytes);
    return NBWD__MM(set_epi64x)((long long)b.hi, (long long)b.lo);
}
static inline NBWD__TARGET_AVX2 void nbwd__avx2_store_first_bytes(void *p, int bytes, NBWD__M128I h) {
    nbwd__bytes16 b;
    NBWD__MM(storel_epi64)((NBWD__M128I *)(void *)&b.lo, h);
    NBWD__MM(storel_epi64)((NBWD__M128I *)(void *)&b.hi, NBWD__MM(unpackhi_epi64)(h, h));
    nbwd__store_first_bytes(p, bytes, b);
}
/* loads: VMASKMOVPS, one instruction (masked lanes are neither read nor
   faulted); its stores measured slower than the pieces below. (SIMDe 0.7.4
   emulates it with a whole-vector load: the emulated build goes lane by
   lane.) */
static inline NBWD__TARGET_AVX2 NBWD__M256 nbwd__avx2_load_first(const float *p, int count) {
#if defined(NORM_BWD_SIMD_EMULATE)
    float b[8] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
    int k;
    for (k = 0; k < count; ++k) b[k] = p[k];
    return NBWD__MM256(loadu_ps)(b);
#else
    NBWD__M256I lanes = NBWD__MM256(setr_epi32)(0, 1, 2, 3, 4, 5, 6, 7);
    return NBWD__MM256(maskload_ps)(p, NBWD__MM256(cmpgt_epi32)(NBWD__MM256(set1_epi32)(count), lanes));
#endif
}
static inline NBWD__TARGET_AVX2 void nbwd__avx2_store_first(float *p, int count, NBWD__M256 v) {
    NBWD__M128 part = NBWD__MM256(castps256_ps128)(v);
    if (count & 4) {
        NBWD__MM(storeu_ps)(p, part);
        part = NBWD__MM256(extractf128_ps)(v, 1);
        p += 4;
    }
    nbwd__avx2_store_first_bytes(p, 4 * (count & 3), NBWD__MM(castps_si128)(part));
}

/* The fused ReLU's mask (NBWD__V_RELU_KEEP in norm_bwd.h): dst > 0 on its
   bits, a pattern in [1, +infinity's] as a signed integer, so NaN, -0 and
   every negative are clipped whatever the FPU's denormal modes. */
static inline NBWD__TARGET_AVX2 NBWD__M256 nbwd__avx2_relu_keep(NBWD__M256 v, NBWD__M256 y, unsigned *bits) {
    NBWD__M256I u = NBWD__MM256(castps_si256)(y);
    NBWD__M256 m = NBWD__MM256(castsi256_ps)(
        NBWD__MM256(andnot_si256)(NBWD__MM256(cmpgt_epi32)(u, NBWD__MM256(set1_epi32)(0x7F800000)),
                                  NBWD__MM256(cmpgt_epi32)(u, NBWD__MM256(setzero_si256)())));
    *bits = (unsigned)NBWD__MM256(movemask_ps)(m);
    return NBWD__MM256(and_ps)(v, m);
}
static inline NBWD__TARGET_AVX2 NBWD__M256 nbwd__avx2_relu_apply(NBWD__M256 v, unsigned bits) {
    NBWD__M256I lane = NBWD__MM256(setr_epi32)(1, 2, 4, 8, 16, 32, 64, 128);
    NBWD__M256I m = NBWD__MM256(cmpeq_epi32)(NBWD__MM256(and_si256)(NBWD__MM256(set1_epi32)((int)bits), lane), lane);
    return NBWD__MM256(and_ps)(v, NBWD__MM256(castsi256_ps)(m));
}

#define NBWD__KSUFFIX _avx2
#define NBWD__KTARGET NBWD__TARGET_AVX2
#define NBWD__V NBWD__M256
#define NBWD__VW 8
#define NBWD__V_ZERO() NBWD__MM256(setzero_ps)()
#define NBWD__V_SET1(s) NBWD__MM256(set1_ps)(s)
#define NBWD__V_ADD(a, b) NBWD__MM256(add_ps)(a, b)
#define NBWD__V_SUB(a, b) NBWD__MM256(sub_ps)(a, b)
#define NBWD__V_MUL(a, b) NBWD__MM256(mul_ps)(a, b)
#define NBWD__V_FMA(a, b, c) NBWD__MM256(fmadd_ps)(a, b, c)
#define NBWD__FMA_FUSED 1
#define NBWD__V_HSUM(v) nbwd__avx2_hsum(v)
#define NBWD__V_LOAD(p) NBWD__MM256(loadu_ps)(p)
#define NBWD__V_STORE(p, v) NBWD__MM256(storeu_ps)(p, v)
#define NBWD__V_LOAD_N(p, n) nbwd__avx2_load_first(p, n)
#define NBWD__V_STORE_N(p, n, v) nbwd__avx2_store_first(p, n, v)
#define NBWD__V_STREAM(p, v) NBWD__MM256(stream_ps)(p, v)
#define NBWD__V_FENCE() NBWD__MM(sfence)()
#define NBWD__H NBWD__M128I
#define NBWD__H_LOAD(p) NBWD__MM(loadu_si128)((const NBWD__M128I *)(const void *)(p))
#define NBWD__H_LOAD_N(p, n) nbwd__avx2_load_first_bytes(p, 2 * (n))
#define NBWD__H_STORE(p, h) NBWD__MM(storeu_si128)((NBWD__M128I *)(void *)(p), h)
#define NBWD__H_STORE_N(p, n, h) nbwd__avx2_store_first_bytes(p, 2 * (n), h)
#define NBWD__H_STREAM(p, h) NBWD__MM(stream_si128)((NBWD__M128I *)(void *)(p), h)
#define NBWD__WIDEN_F16(h) NBWD__MM256(cvtph_ps)(h)
#define NBWD__WIDEN_BF16(h) nbwd__avx2_widen_bf16(h)
#define NBWD__NARROW_F16(v) NBWD__MM256(cvtps_ph)(v, NBWD__ROUND_NEAREST)
#define NBWD__NARROW_BF16(v) nbwd__avx2_pack_bf16(v)
#define NBWD__V_NARROW2_BF16(p, v0, v1) \
    NBWD__MM256(storeu_si256)((NBWD__M256I *)(void *)(p), nbwd__avx2_pack2_bf16(v0, v1))
/* Pairs of bf16 vectors take ordinary stores even out of cache: they
   measured faster than non-temporal ones (f32 rows, twice the bytes, are
   faster with them; bench/NOTES.md). */
#define NBWD__V_STREAM2_BF16(p, v0, v1) NBWD__V_NARROW2_BF16(p, v0, v1)
#define NBWD__V_RSTD_LANES 4
#define NBWD__V_RSTD(v, out, eps) nbwd__avx2_rstd4(v, out, eps)
#define NBWD__V_RELU_KEEP(v, y, bits) nbwd__avx2_relu_keep(v, y, bits)
#define NBWD__V_RELU_APPLY(v, bits) nbwd__avx2_relu_apply(v, bits)
#define NBWD__KERNEL_PASS 1
#include NORM_BWD_HEADER_FILENAME /* the kernel template over this layer (it #undefs the layer) */
#endif

/* --------------------------------------------------------------- avx512 */
#if !defined(NORM_BWD_NO_AVX512) && !defined(NORM_BWD_NO_AVX2)
#define NBWD__HAVE_AVX512 1

/* Intrinsics SIMDe 0.7.4 does not have: lane loops in the emulated build,
   the instructions themselves otherwise. Masked loads read, and masked
   stores write, only the lanes in the mask. */
#if defined(NORM_BWD_SIMD_EMULATE)
static NBWD__M512 nbwd__emu_maskz_loadu_ps(NBWD__MASK16 m, const float *p) {
    float f[16];
    int k;
    for (k = 0; k < 16; ++k) f[k] = (m >> k) & 1 ? p[k] : 0.0f;
    return NBWD__MM512(loadu_ps)(f);
}
static void nbwd__emu_mask_storeu_ps(float *p, NBWD__MASK16 m, NBWD__M512 v) {
    float f[16];
    int k;
    NBWD__MM512(storeu_ps)(f, v);
    for (k = 0; k < 16; ++k)
        if ((m >> k) & 1) p[k] = f[k];
}
static NBWD__M256I nbwd__emu_maskz_loadu_epi16(NBWD__MASK16 m, const uint16_t *p) {
    uint16_t h[16];
    int k;
    for (k = 0; k < 16; ++k) h[k] = (m >> k) & 1 ? p[k] : (uint16_t)0;
    return NBWD__MM256(loadu_si256)((const NBWD__M256I *)(const void *)h);
}
static void nbwd__emu_mask_storeu_epi16(uint16_t *p, NBWD__MASK16 m, NBWD__M256I v) {
    uint16_t h[16];
    int k;
    NBWD__MM256(storeu_si256)((NBWD__M256I *)(void *)h, v);
    for (k = 0; k < 16; ++k)
        if ((m >> k) & 1) p[k] = h[k];
}
static NBWD__M512I nbwd__emu_cvtepu16_epi32(NBWD__M256I v) { /* VPMOVZXWD */
    uint16_t h[16];
    uint32_t w[16];
    int k;
    NBWD__MM256(storeu_si256)((NBWD__M256I *)(void *)h, v);
    for (k = 0; k < 16; ++k) w[k] = h[k];
    return NBWD__MM512(loadu_si512)((const void *)w);
}
static NBWD__M256I nbwd__emu_cvtepi32_epi16(NBWD__M512I v) { /* VPMOVDW: truncation */
    uint32_t w[16];
    uint16_t h[16];
    int k;
    NBWD__MM512(storeu_si512)((void *)w, v);
    for (k = 0; k < 16; ++k) h[k] = (uint16_t)w[k];
    return NBWD__MM256(loadu_si256)((const NBWD__M256I *)(const void *)h);
}
static NBWD__M512 nbwd__emu_cvtph_ps(NBWD__M256I v) { /* two F16C halves */
    NBWD__M256 lo = NBWD__MM256(cvtph_ps)(NBWD__MM256(castsi256_si128)(v));
    NBWD__M256 hi = NBWD__MM256(cvtph_ps)(NBWD__MM256(extracti128_si256)(v, 1));
    return NBWD__MM512(castpd_ps)(NBWD__MM512(insertf64x4)(NBWD__MM512(castps_pd)(NBWD__MM512(castps256_ps512)(lo)),
                                                           NBWD__MM256(castps_pd)(hi), 1));
}
static NBWD__M256I nbwd__emu_cvtps_ph(NBWD__M512 v) {
    NBWD__M256 hi = NBWD__MM256(castpd_ps)(NBWD__MM512(extractf64x4_pd)(NBWD__MM512(castps_pd)(v), 1));
    NBWD__M128I l = NBWD__MM256(cvtps_ph)(NBWD__MM512(castps512_ps256)(v), NBWD__ROUND_NEAREST);
    NBWD__M128I h = NBWD__MM256(cvtps_ph)(hi, NBWD__ROUND_NEAREST);
    return NBWD__MM256(inserti128_si256)(NBWD__MM256(castsi128_si256)(l), h, 1);
}
#define NBWD__512_MASKZ_LOADU_PS(m, p) nbwd__emu_maskz_loadu_ps(m, p)
#define NBWD__512_MASK_STOREU_PS(p, m, v) nbwd__emu_mask_storeu_ps(p, m, v)
#define NBWD__256_MASKZ_LOADU_EPI16(m, p) nbwd__emu_maskz_loadu_epi16(m, p)
#define NBWD__256_MASK_STOREU_EPI16(p, m, v) nbwd__emu_mask_storeu_epi16(p, m, v)
#define NBWD__512_CVTEPU16_EPI32(v) nbwd__emu_cvtepu16_epi32(v)
#define NBWD__512_CVTEPI32_EPI16(v) nbwd__emu_cvtepi32_epi16(v)
#define NBWD__512_CVTPH_PS(v) nbwd__emu_cvtph_ps(v)
#define NBWD__512_CVTPS_PH(v) nbwd__emu_cvtps_ph(v)
#else
#define NBWD__512_MASKZ_LOADU_PS(m, p) _mm512_maskz_loadu_ps(m, p)
#define NBWD__512_MASK_STOREU_PS(p, m, v) _mm512_mask_storeu_ps(p, m, v)
#define NBWD__256_MASKZ_LOADU_EPI16(m, p) _mm256_maskz_loadu_epi16(m, p)
#define NBWD__256_MASK_STOREU_EPI16(p, m, v) _mm256_mask_storeu_epi16(p, m, v)
#define NBWD__512_CVTEPU16_EPI32(v) _mm512_cvtepu16_epi32(v)
#define NBWD__512_CVTEPI32_EPI16(v) _mm512_cvtepi32_epi16(v)
#define NBWD__512_CVTPH_PS(v) _mm512_cvtph_ps(v)
#define NBWD__512_CVTPS_PH(v) _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT)
#endif

#define NBWD__AVX512_FIRST(n) ((NBWD__MASK16)((1u << (n)) - 1u)) /* the mask of the first n lanes */
#if defined(NORM_BWD_SIMD_EMULATE) /* SIMDe 0.7.4 has no _mm512_stream_ps */
#define NBWD__AVX512_STREAM(p, v) NBWD__MM512(storeu_ps)(p, v)
#define NBWD__AVX512_STREAM16(p, h) NBWD__MM256(storeu_si256)((NBWD__M256I *)(void *)(p), h)
#else
#define NBWD__AVX512_STREAM(p, v) _mm512_stream_ps(p, v)
#define NBWD__AVX512_STREAM16(p, h) _mm256_stream_si256((__m256i *)(void *)(p), h)
#endif

static inline NBWD__TARGET_AVX512 float nbwd__avx512_hsum(NBWD__M512 v) {
    NBWD__M256 hi = NBWD__MM256(castpd_ps)(NBWD__MM512(extractf64x4_pd)(NBWD__MM512(castps_pd)(v), 1));
    return nbwd__avx2_hsum(NBWD__MM256(add_ps)(NBWD__MM512(castps512_ps256)(v), hi));
}
static inline NBWD__TARGET_AVX512 NBWD__M512 nbwd__avx512_widen_bf16(NBWD__M256I h) {
    return NBWD__MM512(castsi512_ps)(NBWD__MM512(slli_epi32)(NBWD__512_CVTEPU16_EPI32(h), 16));
}
/* Round to nearest even in the integer unit, NaN lanes (picked by a k-mask)
   quieted, then truncated to 16 bits (VPMOVDW). */
static inline NBWD__TARGET_AVX512 NBWD__M256I nbwd__avx512_pack_bf16(NBWD__M512 v) {
    NBWD__M512I u = NBWD__MM512(castps_si512)(v);
    NBWD__M512I lsb = NBWD__MM512(and_si512)(NBWD__MM512(srli_epi32)(u, 16), NBWD__MM512(set1_epi32)(1));
    NBWD__M512I r = NBWD__MM512(add_epi32)(u, NBWD__MM512(add_epi32)(lsb, NBWD__MM512(set1_epi32)(0x7fff)));
    NBWD__M512I q = NBWD__MM512(or_si512)(u, NBWD__MM512(set1_epi32)(0x400000));
    r = NBWD__MM512(mask_blend_epi32)(NBWD__MM512(cmp_ps_mask)(v, v, NBWD__CMP_UNORD), r, q);
    return NBWD__512_CVTEPI32_EPI16(NBWD__MM512(srli_epi32)(r, 16));
}
static inline NBWD__TARGET_AVX512 void nbwd__avx512_store_epi16(uint16_t *p, NBWD__M256I h) {
    NBWD__MM256(storeu_si256)((NBWD__M256I *)(void *)p, h);
}

/* avx512_bf16: the avx512 kernels, narrowing bf16 with VCVTNEPS2BF16 (gcc
   10+, clang 9+ and their assemblers; not attempted under MSVC): the
   layer's bf16i entry points, which only avx512_bf16's table names. They
   carry the avx512 target, which has no AVX512_BF16 (so that avx512 runs
   on CPUs without it), so the instruction is inline assembly, volatile so
   that the compiler never hoists it into code that the avx512 path runs. */
#if !defined(NORM_BWD_NO_AVX512_BF16) && !defined(NBWD__MSVC) &&                                     \
    (defined(NORM_BWD_SIMD_EMULATE) || (defined(__clang__) && __clang_major__ >= 9) ||                 \
     (!defined(__clang__) && defined(__GNUC__) && __GNUC__ >= 10))
#define NBWD__HAVE_AVX512_BF16 1
#endif

#if defined(NBWD__HAVE_AVX512_BF16)
#if defined(NORM_BWD_SIMD_EMULATE)
/* SIMDe 0.7.4 has no AVX512_BF16: the instruction as the Intel SDM defines
   it (convert_fp32_to_bfloat16), lane by lane. */
static NBWD__M256I nbwd__cvtneps_pbh(NBWD__M512 v) {
    float f[16];
    uint16_t h[16];
    int i;
    NBWD__MM512(storeu_ps)(f, v);
    for (i = 0; i < 16; ++i) {
        uint32_t x;
        memcpy(&x, &f[i], 4);
        if ((x & 0x7f800000u) == 0) h[i] = (uint16_t)((x >> 16) & 0x8000u);          /* zero, denormal: signed 0 */
        else if ((x & 0x7fffffffu) == 0x7f800000u) h[i] = (uint16_t)(x >> 16);       /* infinity */
        else if ((x & 0x7fffffffu) > 0x7f800000u) h[i] = (uint16_t)((x >> 16) | 0x40u); /* NaN: quiet */
        else h[i] = (uint16_t)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);             /* nearest even */
    }
    return NBWD__MM256(loadu_si256)((const NBWD__M256I *)(const void *)h);
}
/* the lanes holding an f32 denormal (SIMDe 0.7.4 has no VFPCLASSPS) */
static NBWD__MASK16 nbwd__denormal_lanes(NBWD__M512 v) {
    NBWD__M512I u = NBWD__MM512(castps_si512)(v);
    NBWD__MASK16 tiny = NBWD__MM512(cmpeq_epi32_mask)(NBWD__MM512(and_si512)(u, NBWD__MM512(set1_epi32)(0x7f800000)),
                                                    NBWD__MM512(setzero_si512)());
    return NBWD__MM512(mask_test_epi32_mask)(tiny, u, NBWD__MM512(set1_epi32)(0x007fffff));
}
#else
static inline NBWD__TARGET_AVX512 __m256i nbwd__cvtneps_pbh(__m512 v) {
    __m256i h;
    __asm__ __volatile__("vcvtneps2bf16 {%1, %0|%0, %1}" : "=v"(h) : "v"(v));
    return h;
}
/* VFPCLASSPS (AVX512DQ) class 0x20: denormal. One instruction where the
   integer test took three (in-cache bf16 rows measured faster). */
#define nbwd__denormal_lanes(v) _mm512_fpclass_ps_mask(v, 0x20)
#endif
/* VCVTNEPS2BF16 rounds to nearest even and quiets NaNs as the integer path
   does, but reads f32 denormals as zero; a vector holding one (rare) takes
   the integer path, so the bits match every other path. */
NBWD__NOINLINE NBWD__TARGET_AVX512 NBWD__M256I nbwd__avx512bf16_pack_rare(NBWD__M512 v) {
    return nbwd__avx512_pack_bf16(v); /* (out of line: every kernel's bf16 stores stay short) */
}
static inline NBWD__TARGET_AVX512 NBWD__M256I nbwd__avx512bf16_pack_bf16(NBWD__M512 v) {
    if (nbwd__denormal_lanes(v)) return nbwd__avx512bf16_pack_rare(v);
    return nbwd__cvtneps_pbh(v);
}
#endif /* NBWD__HAVE_AVX512_BF16 */

/* The fused ReLU's mask (as the avx2 layer's), its bits a k-mask */
static inline NBWD__TARGET_AVX512 NBWD__M512 nbwd__avx512_relu_keep(NBWD__M512 v, NBWD__M512 y, unsigned *bits) {
    NBWD__M512I u = NBWD__MM512(castps_si512)(y);
    NBWD__MASK16 k = (NBWD__MASK16)(NBWD__MM512(cmpgt_epi32_mask)(u, NBWD__MM512(setzero_si512)()) &
                                    NBWD__MM512(cmple_epi32_mask)(u, NBWD__MM512(set1_epi32)(0x7F800000)));
    *bits = (unsigned)k;
    return NBWD__MM512(maskz_mov_ps)(k, v);
}
#define nbwd__avx512_relu_apply(v, bits) NBWD__MM512(maskz_mov_ps)((NBWD__MASK16)(bits), v)

/* The avx512 layer (avx512_bf16's table runs its kernels too) */
#define NBWD__KSUFFIX _avx512
#define NBWD__KTARGET NBWD__TARGET_AVX512
#if defined(NBWD__HAVE_AVX512_BF16)
#define NBWD__NARROW_BF16_INSN(v) nbwd__avx512bf16_pack_bf16(v)
#endif
#define NBWD__V NBWD__M512
#define NBWD__VW 16
#define NBWD__V_ZERO() NBWD__MM512(setzero_ps)()
#define NBWD__V_SET1(s) NBWD__MM512(set1_ps)(s)
#define NBWD__V_ADD(a, b) NBWD__MM512(add_ps)(a, b)
#define NBWD__V_SUB(a, b) NBWD__MM512(sub_ps)(a, b)
#define NBWD__V_MUL(a, b) NBWD__MM512(mul_ps)(a, b)
#define NBWD__V_FMA(a, b, c) NBWD__MM512(fmadd_ps)(a, b, c)
#define NBWD__FMA_FUSED 1
#define NBWD__V_HSUM(v) nbwd__avx512_hsum(v)
#define NBWD__V_LOAD(p) NBWD__MM512(loadu_ps)(p)
#define NBWD__V_STORE(p, v) NBWD__MM512(storeu_ps)(p, v)
#define NBWD__V_LOAD_N(p, n) NBWD__512_MASKZ_LOADU_PS(NBWD__AVX512_FIRST(n), p)
#define NBWD__V_STORE_N(p, n, v) NBWD__512_MASK_STOREU_PS(p, NBWD__AVX512_FIRST(n), v)
#define NBWD__V_STREAM(p, v) NBWD__AVX512_STREAM(p, v)
#define NBWD__V_FENCE() NBWD__MM(sfence)()
#define NBWD__H NBWD__M256I
#define NBWD__H_LOAD(p) NBWD__MM256(loadu_si256)((const NBWD__M256I *)(const void *)(p))
#define NBWD__H_LOAD_N(p, n) NBWD__256_MASKZ_LOADU_EPI16(NBWD__AVX512_FIRST(n), p)
#define NBWD__H_STORE(p, h) nbwd__avx512_store_epi16(p, h)
#define NBWD__H_STORE_N(p, n, h) NBWD__256_MASK_STOREU_EPI16(p, NBWD__AVX512_FIRST(n), h)
#define NBWD__H_STREAM(p, h) NBWD__AVX512_STREAM16(p, h)
#define NBWD__WIDEN_F16(h) NBWD__512_CVTPH_PS(h)
#define NBWD__WIDEN_BF16(h) nbwd__avx512_widen_bf16(h)
#define NBWD__NARROW_F16(v) NBWD__512_CVTPS_PH(v)
#define NBWD__NARROW_BF16(v) nbwd__avx512_pack_bf16(v)
#define NBWD__V_RSTD_LANES 4 /* the avx2 helper, on a ymm of doubles */
#define NBWD__V_RSTD(v, out, eps) nbwd__avx2_rstd4(v, out, eps)
#define NBWD__V_RELU_KEEP(v, y, bits) nbwd__avx512_relu_keep(v, y, bits)
#define NBWD__V_RELU_APPLY(v, bits) nbwd__avx512_relu_apply(v, bits)
#define NBWD__KERNEL_PASS 1
#include NORM_BWD_HEADER_FILENAME /* the kernel template over this layer (it #undefs the layer) */
#endif
#endif /* x86 or emulated */

/* ----------------------------------------------------------------- neon */
#if !defined(NORM_BWD_NO_NEON) &&                                                                             \
    (defined(NBWD__SIMD_ARM64) || defined(NBWD__SIMD_ARM32) || defined(NORM_BWD_SIMD_EMULATE))
#define NBWD__HAVE_NEON 1
#if defined(NORM_BWD_SIMD_EMULATE)
#define NBWD__NEON(name) simde_##name
#define NBWD__NT(type) simde_##type
#else
#define NBWD__NEON(name) name
#define NBWD__NT(type) type
#endif
/* On AArch32 the layer's every function carries the target; AArch32's
   Advanced SIMD flushes subnormals to zero and returns the default NaN
   (FPSCR cannot change that): the manual says so. */
#if defined(NBWD__SIMD_ARM32) && !(defined(__ARM_NEON) && defined(__ARM_FEATURE_FMA))
#define NBWD__TARGET_NEON __attribute__((target("fpu=neon-vfpv4")))
#else
#define NBWD__TARGET_NEON
#endif
#if defined(NBWD__SIMD_ARM32)
#include <sys/auxv.h>
#define NBWD__HWCAP_ARM_NEON (1ul << 12)  /* asm/hwcap.h HWCAP_NEON */
#define NBWD__HWCAP_ARM_VFPV4 (1ul << 16) /* HWCAP_VFPv4: VFMA */
#endif

static inline NBWD__TARGET_NEON float nbwd__neon_hsum(NBWD__NT(float32x4_t) v) { /* fixed order on every CPU */
    return (NBWD__NEON(vgetq_lane_f32)(v, 0) + NBWD__NEON(vgetq_lane_f32)(v, 1)) +
           (NBWD__NEON(vgetq_lane_f32)(v, 2) + NBWD__NEON(vgetq_lane_f32)(v, 3));
}
#if !defined(NBWD__SIMD_ARM32)
static inline NBWD__TARGET_NEON NBWD__NT(float32x4_t) nbwd__neon_widen_f16(NBWD__NT(uint16x4_t) h) { /* FCVTL */
    return NBWD__NEON(vcvt_f32_f16)(NBWD__NEON(vreinterpret_f16_u16)(h));
}
static inline NBWD__TARGET_NEON NBWD__NT(uint16x4_t) nbwd__neon_narrow_f16(NBWD__NT(float32x4_t) v) { /* FCVTN, nearest even */
    return NBWD__NEON(vreinterpret_u16_f16)(NBWD__NEON(vcvt_f16_f32)(v));
}
#endif
static inline NBWD__TARGET_NEON NBWD__NT(float32x4_t) nbwd__neon_widen_bf16(NBWD__NT(uint16x4_t) h) {
    return NBWD__NEON(vreinterpretq_f32_u32)(NBWD__NEON(vshlq_n_u32)(NBWD__NEON(vmovl_u16)(h), 16));
}
static inline NBWD__TARGET_NEON NBWD__NT(uint16x4_t) nbwd__neon_narrow_bf16(NBWD__NT(float32x4_t) v) {
    NBWD__NT(uint32x4_t) u = NBWD__NEON(vreinterpretq_u32_f32)(v);
    NBWD__NT(uint32x4_t) lsb = NBWD__NEON(vandq_u32)(NBWD__NEON(vshrq_n_u32)(u, 16), NBWD__NEON(vdupq_n_u32)(1));
    NBWD__NT(uint32x4_t) r = NBWD__NEON(vaddq_u32)(u, NBWD__NEON(vaddq_u32)(lsb, NBWD__NEON(vdupq_n_u32)(0x7fff)));
    NBWD__NT(uint16x4_t) rounded = NBWD__NEON(vshrn_n_u32)(r, 16);
    NBWD__NT(uint16x4_t) quiet = NBWD__NEON(vshrn_n_u32)(NBWD__NEON(vorrq_u32)(u, NBWD__NEON(vdupq_n_u32)(0x400000)), 16);
    NBWD__NT(uint16x4_t) is_num = NBWD__NEON(vmovn_u32)(NBWD__NEON(vceqq_f32)(v, v));
    return NBWD__NEON(vbsl_u16)(is_num, rounded, quiet);
}

/* Partial vectors (the first count floats, 0 < count < 4) through a small
   buffer. */
static inline NBWD__TARGET_NEON NBWD__NT(float32x4_t) nbwd__neon_load_first(const float *p, int count) {
    float b[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    int k;
    for (k = 0; k < count; ++k) b[k] = p[k];
    return NBWD__NEON(vld1q_f32)(b);
}
static inline NBWD__TARGET_NEON void nbwd__neon_store_first(float *p, int count, NBWD__NT(float32x4_t) v) {
    float b[4];
    int k;
    NBWD__NEON(vst1q_f32)(b, v);
    for (k = 0; k < count; ++k) p[k] = b[k];
}

static inline NBWD__TARGET_NEON NBWD__NT(uint16x4_t) nbwd__neon_load_first16(const uint16_t *p, int count) {
    uint16_t b[4] = {0, 0, 0, 0};
    int k;
    for (k = 0; k < count; ++k) b[k] = p[k];
    return NBWD__NEON(vld1_u16)(b);
}
static inline NBWD__TARGET_NEON void nbwd__neon_store_first16(uint16_t *p, int count, NBWD__NT(uint16x4_t) h) {
    uint16_t b[4];
    int k;
    NBWD__NEON(vst1_u16)(b, h);
    for (k = 0; k < count; ++k) p[k] = b[k];
}

#if !defined(NBWD__SIMD_ARM32) && !defined(NORM_BWD_SIMD_EMULATE) /* (AArch32: no double vectors) */
static inline NBWD__TARGET_NEON void nbwd__neon_rstd2(const float *v, float *out, double eps) {
    float64x2_t d = vcvt_f64_f32(vld1_f32(v));
    d = vdivq_f64(vdupq_n_f64(1.0), vsqrtq_f64(vaddq_f64(d, vdupq_n_f64(eps))));
    vst1_f32(out, vcvt_f32_f64(d));
}
#endif

/* neon_bf16: the neon kernels, narrowing bf16 with BFCVTN (Armv8.6 BF16),
   used when Linux's HWCAP2 reports it (the layer's bf16i kernels, which
   neon_bf16's table names). Inline assembly, so that neither a
   target attribute (gcc's arm_neon.h wants "arch=armv8.2-a+bf16", which would
   override the user's -march) nor a BF16-aware arm_neon.h (clang 14 has none
   without -march=...+bf16) is needed. With the default FPCR (round to
   nearest even, no flush-to-zero, no default NaN) BFCVTN gives exactly the
   integer path's bits, denormals and quiet NaNs included. */
#if !defined(NORM_BWD_NO_NEON_BF16) && !defined(NORM_BWD_SIMD_EMULATE) && defined(__linux__) && \
    (defined(__GNUC__) || defined(__clang__)) && defined(NBWD__SIMD_ARM64)
#include <sys/auxv.h>
#define NBWD__HAVE_NEON_BF16 1
#define NBWD__HWCAP2_BF16 (1ul << 14) /* asm/hwcap.h HWCAP2_BF16 */
#endif

#if defined(NBWD__HAVE_NEON_BF16)
static inline uint16x4_t nbwd__neonbf16_narrow_bf16(float32x4_t v) {
    /* BFCVTN v17.4h, v16.4s by its encoding: assemblers that do not know
       the mnemonic (clang 14 has no ".arch_extension bf16") still take it. */
    register float32x4_t in __asm__("v16") = v;
    register uint16x4_t out __asm__("v17");
    __asm__ __volatile__(".inst 0x0ea16a11" : "=w"(out) : "w"(in)); /* (volatile: see avx512_bf16) */
    return out;
}
#endif /* NBWD__HAVE_NEON_BF16 */

/* The fused ReLU's mask (as the avx2 layer's); the bits gathered without
   AArch64's across-vector adds, so AArch32 takes the same code */
static inline NBWD__TARGET_NEON NBWD__NT(float32x4_t) nbwd__neon_relu_keep(NBWD__NT(float32x4_t) v,
                                                                         NBWD__NT(float32x4_t) y, unsigned *bits) {
    static const uint32_t lane_bits[4] = {1, 2, 4, 8};
    NBWD__NT(int32x4_t) u = NBWD__NEON(vreinterpretq_s32_f32)(y);
    NBWD__NT(uint32x4_t) m = NBWD__NEON(vandq_u32)(NBWD__NEON(vcgtq_s32)(u, NBWD__NEON(vdupq_n_s32)(0)),
                                                   NBWD__NEON(vcleq_s32)(u, NBWD__NEON(vdupq_n_s32)(0x7F800000)));
    NBWD__NT(uint32x4_t) b = NBWD__NEON(vandq_u32)(m, NBWD__NEON(vld1q_u32)(lane_bits));
    NBWD__NT(uint32x2_t) h = NBWD__NEON(vorr_u32)(NBWD__NEON(vget_low_u32)(b), NBWD__NEON(vget_high_u32)(b));
    *bits = (unsigned)(NBWD__NEON(vget_lane_u32)(h, 0) | NBWD__NEON(vget_lane_u32)(h, 1));
    return NBWD__NEON(vreinterpretq_f32_u32)(NBWD__NEON(vandq_u32)(NBWD__NEON(vreinterpretq_u32_f32)(v), m));
}
static inline NBWD__TARGET_NEON NBWD__NT(float32x4_t) nbwd__neon_relu_apply(NBWD__NT(float32x4_t) v, unsigned bits) {
    static const uint32_t lane_bits[4] = {1, 2, 4, 8};
    NBWD__NT(uint32x4_t) m = NBWD__NEON(vtstq_u32)(NBWD__NEON(vdupq_n_u32)(bits), NBWD__NEON(vld1q_u32)(lane_bits));
    return NBWD__NEON(vreinterpretq_f32_u32)(NBWD__NEON(vandq_u32)(NBWD__NEON(vreinterpretq_u32_f32)(v), m));
}

/* The neon layer (neon_bf16's table runs its kernels too) */
#define NBWD__KSUFFIX _neon
#define NBWD__KTARGET NBWD__TARGET_NEON
#if defined(NBWD__HAVE_NEON_BF16)
#define NBWD__NARROW_BF16_INSN(v) nbwd__neonbf16_narrow_bf16(v)
#endif
#define NBWD__V NBWD__NT(float32x4_t)
#define NBWD__VW 4
#define NBWD__V_ZERO() NBWD__NEON(vdupq_n_f32)(0.0f)
#define NBWD__V_SET1(s) NBWD__NEON(vdupq_n_f32)(s)
#define NBWD__V_ADD(a, b) NBWD__NEON(vaddq_f32)(a, b)
#define NBWD__V_SUB(a, b) NBWD__NEON(vsubq_f32)(a, b)
#define NBWD__V_MUL(a, b) NBWD__NEON(vmulq_f32)(a, b)
#define NBWD__V_FMA(a, b, c) NBWD__NEON(vfmaq_f32)(c, a, b)
#define NBWD__FMA_FUSED 1
#define NBWD__V_HSUM(v) nbwd__neon_hsum(v)
#define NBWD__V_LOAD(p) NBWD__NEON(vld1q_f32)(p)
#define NBWD__V_STORE(p, v) NBWD__NEON(vst1q_f32)(p, v)
#define NBWD__V_LOAD_N(p, n) nbwd__neon_load_first(p, n)
#define NBWD__V_STORE_N(p, n, v) nbwd__neon_store_first(p, n, v)
/* (no non-temporal stores: the template's plain ones) */
#define NBWD__H NBWD__NT(uint16x4_t)
#define NBWD__H_LOAD(p) NBWD__NEON(vld1_u16)(p)
#define NBWD__H_LOAD_N(p, n) nbwd__neon_load_first16(p, n)
#define NBWD__H_STORE(p, h) NBWD__NEON(vst1_u16)(p, h)
#define NBWD__H_STORE_N(p, n, h) nbwd__neon_store_first16(p, n, h)
#if defined(NBWD__SIMD_ARM32)
/* (AArch32: no f16 conversions, so no f16 kernels: its table sends f16
   data to the scalar ones) */
#define NBWD__NEON_NO_F16 1
#else
#define NBWD__WIDEN_F16(h) nbwd__neon_widen_f16(h)
#define NBWD__NARROW_F16(v) nbwd__neon_narrow_f16(v)
#endif
#define NBWD__WIDEN_BF16(h) nbwd__neon_widen_bf16(h)
#define NBWD__NARROW_BF16(v) nbwd__neon_narrow_bf16(v)
#define NBWD__V_RELU_KEEP(v, y, bits) nbwd__neon_relu_keep(v, y, bits)
#define NBWD__V_RELU_APPLY(v, bits) nbwd__neon_relu_apply(v, bits)
#if !defined(NORM_BWD_SIMD_EMULATE) && !defined(NBWD__SIMD_ARM32) /* SIMDe 0.7.4: no vsqrtq_f64 */
#define NBWD__V_RSTD_LANES 2
#define NBWD__V_RSTD(v, out, eps) nbwd__neon_rstd2(v, out, eps)
#endif
#define NBWD__KERNEL_PASS 1
#include NORM_BWD_HEADER_FILENAME /* the kernel template over this layer (it #undefs the layer) */
#undef NBWD__TARGET_NEON
#endif

/* Emulated paths run only when asked for by name (tests). */
#if defined(NORM_BWD_SIMD_EMULATE)
#define NBWD__EMULATED_PATHS \
    ((1 << NBWD_ISA_AVX512) | (1 << NBWD_ISA_AVX512_BF16) | (1 << NBWD_ISA_NEON) | (1 << NBWD_ISA_AVX2))
#endif

#if defined(__clang__)
#pragma clang diagnostic pop
#elif defined(__GNUC__) && defined(NORM_BWD_SIMD_EMULATE)
#pragma GCC diagnostic pop
#endif
/* This file's own helper names (the paths are compiled): all but what the
   dispatcher in norm_bwd.h reads (NBWD__HAVE_*, NBWD__HWCAP2_BF16,
   NBWD__HWCAP_ARM_*, NBWD__EMULATED_PATHS). */
#undef NBWD__SIMD_X86
#undef NBWD__SIMD_ARM64
#undef NBWD__SIMD_ARM32
#undef NBWD__SIMD_WASM
#undef NBWD__SIMD_HAVE_SIMDE
#undef NBWD__MM
#undef NBWD__MM256
#undef NBWD__MM512
#undef NBWD__M128
#undef NBWD__M128I
#undef NBWD__M256
#undef NBWD__M256I
#undef NBWD__M256D
#undef NBWD__M512
#undef NBWD__M512I
#undef NBWD__MASK16
#undef NBWD__ROUND_NEAREST
#undef NBWD__CMP_UNORD
#undef NBWD__TARGET_AVX2
#undef NBWD__TARGET_AVX512
#undef NBWD__512_MASKZ_LOADU_PS
#undef NBWD__512_MASK_STOREU_PS
#undef NBWD__256_MASKZ_LOADU_EPI16
#undef NBWD__256_MASK_STOREU_EPI16
#undef NBWD__512_CVTEPU16_EPI32
#undef NBWD__512_CVTEPI32_EPI16
#undef NBWD__512_CVTPH_PS
#undef NBWD__512_CVTPS_PH
#undef NBWD__AVX512_FIRST
#undef NBWD__AVX512_STREAM
#undef NBWD__AVX512_STREAM16
#undef nbwd__denormal_lanes
#undef NBWD__NEON
#undef NBWD__NT
