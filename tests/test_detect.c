/* test_detect.c - the "detect" suite: the library's CPU detection and
   dispatch, checked against an answer computed here, independently of
   norm_bwd's own code.

   Expected runnable paths = (paths this CPU and OS can run) & (paths this
   build compiles in), with the requirements the header documents:
     x86 (gcc/clang; <cpuid.h> and xgetbv here):
       sse          SSE2 (leaf 1 EDX bit 26)
       avx2         AVX, FMA, F16C, OSXSAVE (leaf 1 ECX 28, 12, 29, 27),
                    AVX2 (leaf 7.0 EBX 5), XCR0 & 0x6 == 0x6 (XMM + YMM state)
       avx512       avx2 + AVX512 F/DQ/BW/VL (leaf 7.0 EBX 16, 17, 30, 31),
                    XCR0 & 0xE6 == 0xE6 (+ opmask, ZMM_Hi256, Hi16_ZMM state)
       avx512_bf16  avx512 + AVX512_BF16 (leaf 7.1 EAX bit 5)
     AArch64 Linux: neon and sse (SIMDe translates it to NEON) always;
       neon_bf16 iff getauxval(AT_HWCAP2) & HWCAP2_BF16 (1 << 14).
   Compiled in (the configuration macros, as the header documents them):
     NORM_BWD_NO_SIMD: scalar only. sse needs SIMDe (<simde/x86/sse2.h>),
     not NORM_BWD_NO_SSE and, on 32-bit x86, a build with SSE2 (on
     WebAssembly: a build with -msimd128, which alone decides);
     avx2/avx512/avx512_bf16 are x86 paths (avx512 also
     goes with NORM_BWD_NO_AVX2, avx512_bf16 with NORM_BWD_NO_AVX512 and needs
     gcc >= 10 or clang >= 9); neon is AArch64; neon_bf16 needs Linux
     gcc/clang and is never emulated.
   NORM_BWD_SIMD_EMULATE (the emulated test build): avx2, avx512,
   avx512_bf16 and neon are spelled with SIMDe and run on any CPU, so they
   are supported whatever this CPU has, but the automatic choice never takes
   them: it is the best non-emulated path (sse on x86-64 with SIMDe).

   nbwd_active_isa(): NORM_BWD_ISA unset, empty or "auto": the best
   supported (non-emulated) path in the order scalar < sse < neon <
   neon_bf16 < avx2 < avx512 < avx512_bf16. NORM_BWD_ISA naming a supported
   path: that path. Naming anything else: NBWD_ISA_AUTO (no automatic path;
   automatic calls fail with NBWD_ERR_UNSUPPORTED). */
#include "nbwd_test.h"

#if defined(__linux__) && (defined(__aarch64__) || defined(_M_ARM64)) && (defined(__GNUC__) || defined(__clang__))
#include <sys/auxv.h>
#define TD_ARM64_LINUX 1
#endif
/* 32-bit Arm Linux, hard-float ABI, Armv7+: the neon path is compiled (by
   gcc through a target attribute; by clang when the build enables NEON
   and VFPv4) and runs where HWCAP says NEON and VFPv4 */
#if defined(__linux__) && defined(__arm__) && !defined(__aarch64__) && defined(__ARM_FP) && defined(__ARM_ARCH) && \
    __ARM_ARCH >= 7 && ((defined(__GNUC__) && !defined(__clang__)) || (defined(__ARM_NEON) && defined(__ARM_FEATURE_FMA)))
#include <sys/auxv.h>
#define TD_ARM32_LINUX 1
#endif
#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#define TD_X86 1
#endif

#define TD_BIT(isa) (1 << (int)(isa))

/* ------------------------------------------------- the build's paths */
static int td_compiled(void) {
    int m = TD_BIT(NBWD_ISA_SCALAR);
#if !defined(NORM_BWD_NO_SIMD)
    int simde = 0, x86 = 0, arm64 = 0, emulate = 0, linux_gnuc = 0, bf16_compiler = 0;
#if defined(__has_include)
#if __has_include(<simde/x86/sse2.h>)
    simde = 1;
#endif
#elif !defined(_MSC_VER) || defined(__clang__)
    simde = 1; /* as the header: no way to ask, assume it is installed */
#endif
#if defined(__x86_64__) || defined(_M_X64) || defined(__i386__) || defined(_M_IX86)
    x86 = 1;
#endif
#if defined(__aarch64__) || defined(_M_ARM64)
    arm64 = 1;
#endif
#if defined(NORM_BWD_SIMD_EMULATE)
    emulate = 1;
#endif
#if defined(__linux__) && (defined(__GNUC__) || defined(__clang__))
    linux_gnuc = 1;
#endif
#if defined(NORM_BWD_SIMD_EMULATE) || (defined(__clang__) && __clang_major__ >= 9) || \
    (!defined(__clang__) && defined(__GNUC__) && __GNUC__ >= 10)
    bf16_compiler = 1;
#endif
    (void)simde; (void)x86; (void)arm64; (void)emulate; (void)linux_gnuc; (void)bf16_compiler;
#if !defined(NORM_BWD_NO_SSE)
    {
        int sse_target = x86 || arm64;
#if defined(__wasm_simd128__)
        sse_target = 1; /* SIMDe spells sse in SIMD128 */
#endif
#if (defined(__i386__) || defined(_M_IX86)) && !defined(__SSE2__) && !(defined(_M_IX86_FP) && _M_IX86_FP >= 2)
        sse_target = 0; /* 32-bit x86 built without SSE2: the header leaves sse out */
#endif
        if (simde && sse_target) m |= TD_BIT(NBWD_ISA_SSE);
    }
#endif
#if !defined(NORM_BWD_NO_AVX2)
    if (x86 || emulate) {
        m |= TD_BIT(NBWD_ISA_AVX2);
#if !defined(NORM_BWD_NO_AVX512)
        m |= TD_BIT(NBWD_ISA_AVX512);
#if !defined(NORM_BWD_NO_AVX512_BF16)
        if (bf16_compiler) m |= TD_BIT(NBWD_ISA_AVX512_BF16);
#endif
#endif
    }
#endif
#if !defined(NORM_BWD_NO_NEON)
#if defined(TD_ARM32_LINUX) && !defined(NORM_BWD_SIMD_EMULATE)
    m |= TD_BIT(NBWD_ISA_NEON);
#endif
    if (arm64 || emulate) {
        m |= TD_BIT(NBWD_ISA_NEON);
#if !defined(NORM_BWD_NO_NEON_BF16)
        if (!emulate && linux_gnuc) m |= TD_BIT(NBWD_ISA_NEON_BF16);
#endif
    }
#endif
#endif /* !NORM_BWD_NO_SIMD */
    return m;
}

/* The paths emulated by SIMDe in this build: runnable anywhere, never the
   automatic choice. */
static int td_emulated(void) {
#if defined(NORM_BWD_SIMD_EMULATE) && !defined(NORM_BWD_NO_SIMD)
    return TD_BIT(NBWD_ISA_AVX2) | TD_BIT(NBWD_ISA_AVX512) | TD_BIT(NBWD_ISA_AVX512_BF16) | TD_BIT(NBWD_ISA_NEON);
#else
    return 0;
#endif
}

/* ------------------------------------------------------- this CPU */
#if defined(TD_X86)
static unsigned long long td_xcr0(void) {
    unsigned lo, hi;
    __asm__ __volatile__("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((unsigned long long)hi << 32) | lo;
}
#endif

/* what: a one-line description of the features seen, for the log */
static int td_cpu(char *what, size_t what_size) {
    int m = TD_BIT(NBWD_ISA_SCALAR);
#if defined(TD_X86)
    unsigned a = 0, b = 0, c = 0, d = 0, b7 = 0, max_sub7 = 0, a71 = 0;
    unsigned long long xcr0 = 0;
    int sse2, osxsave, avx, fma, f16c, avx2 = 0, f = 0, bw = 0, vl = 0, dq = 0, bf16 = 0, ymm_os, zmm_os;
    if (!__get_cpuid(1, &a, &b, &c, &d)) a = b = c = d = 0;
    sse2 = (d >> 26) & 1;
    fma = (c >> 12) & 1;
    osxsave = (c >> 27) & 1;
    avx = (c >> 28) & 1;
    f16c = (c >> 29) & 1;
    if (__get_cpuid_count(7, 0, &a, &b, &c, &d)) {
        max_sub7 = a;
        b7 = b;
        avx2 = (b7 >> 5) & 1;
        f = (b7 >> 16) & 1;
        dq = (b7 >> 17) & 1;
        bw = (b7 >> 30) & 1;
        vl = (b7 >> 31) & 1;
        if (max_sub7 >= 1 && __get_cpuid_count(7, 1, &a, &b, &c, &d)) {
            a71 = a;
            bf16 = (a71 >> 5) & 1;
        }
    }
    if (osxsave) xcr0 = td_xcr0(); /* xgetbv faults unless the OS enabled XSAVE */
    ymm_os = (xcr0 & 0x6) == 0x6;
    zmm_os = (xcr0 & 0xe6) == 0xe6;
    if (sse2) m |= TD_BIT(NBWD_ISA_SSE);
    if (avx && fma && f16c && osxsave && ymm_os && avx2) {
        m |= TD_BIT(NBWD_ISA_AVX2);
        if (zmm_os && f && dq && bw && vl) {
            m |= TD_BIT(NBWD_ISA_AVX512);
            if (bf16) m |= TD_BIT(NBWD_ISA_AVX512_BF16);
        }
    }
    snprintf(what, what_size,
             "x86: sse2 %d avx %d fma %d f16c %d osxsave %d xcr0 0x%llx avx2 %d avx512 f %d bw %d vl %d dq %d "
             "(leaf 7 subleaves %u) avx512_bf16 %d",
             sse2, avx, fma, f16c, osxsave, xcr0, avx2, f, bw, vl, dq, max_sub7 + 1, bf16);
#elif defined(TD_ARM64_LINUX)
    unsigned long hwcap2 = getauxval(AT_HWCAP2);
    m |= TD_BIT(NBWD_ISA_NEON) | TD_BIT(NBWD_ISA_SSE);
    if (hwcap2 & (1ul << 14)) m |= TD_BIT(NBWD_ISA_NEON_BF16); /* HWCAP2_BF16 */
    snprintf(what, what_size, "aarch64 linux: HWCAP2 0x%lx (BF16 %d)", hwcap2, (int)((hwcap2 >> 14) & 1));
#elif defined(__aarch64__) || defined(_M_ARM64)
    m |= TD_BIT(NBWD_ISA_NEON) | TD_BIT(NBWD_ISA_SSE);
    snprintf(what, what_size, "aarch64 (no HWCAP2 here: no neon_bf16)");
#elif defined(TD_ARM32_LINUX)
    {
        unsigned long hwcap = getauxval(AT_HWCAP);
        int neon = (int)((hwcap >> 12) & 1), vfpv4 = (int)((hwcap >> 16) & 1); /* HWCAP_NEON, HWCAP_VFPv4 */
        if (neon && vfpv4) m |= TD_BIT(NBWD_ISA_NEON);
        snprintf(what, what_size, "arm32 linux: HWCAP 0x%lx (NEON %d, VFPv4 %d)", hwcap, neon, vfpv4);
    }
#elif defined(__wasm_simd128__)
    m |= TD_BIT(NBWD_ISA_SSE); /* SIMDe's sse in SIMD128: the build decides */
    snprintf(what, what_size, "wasm with SIMD128 (no run-time detection: the build's -msimd128)");
#else
    snprintf(what, what_size, "no feature detection on this target: scalar only");
#endif
    return m | td_emulated();
}

static void td_mask_names(int m, char *out, size_t size) {
    int i;
    size_t len = 0;
    out[0] = '\0';
    for (i = 1; i < NBWD_ISA_COUNT && len + 1 < size; ++i)
        if (m & TD_BIT(i)) {
            int w = snprintf(out + len, size - len, "%s%s", len ? " " : "", nbwd_isa_name((nbwd_isa)i));
            if (w < 0) break;
            len += (size_t)w;
        }
}

/* One tiny LayerNorm call with desc.isa = isa. */
static nbwd_status td_call(nbwd_isa isa) {
    static const int64_t dims[2] = {3, 21};
    float x[63], dy[63], dx[63], mean[3], var[3], gamma[21], dg[21], db[21];
    nbwd_layer_norm_bwd_desc d;
    nbwd_layer_norm_bwd_args a;
    int i;
    for (i = 0; i < 63; ++i) {
        x[i] = (float)((i * 7) % 11) * 0.25f - 1.0f;
        dy[i] = (float)((i * 5) % 13) * 0.125f - 0.75f;
    }
    for (i = 0; i < 3; ++i) { mean[i] = 0.1f * (float)i; var[i] = 1.0f + 0.5f * (float)i; }
    for (i = 0; i < 21; ++i) gamma[i] = 1.0f + 0.01f * (float)i;
    nbwd_layer_norm_bwd_desc_init(&d, 2, dims);
    d.isa = isa;
    memset(&a, 0, sizeof a);
    a.src = x;
    a.diff_dst = dy;
    a.mean = mean;
    a.variance = var;
    a.gamma = gamma;
    a.diff_src = dx;
    a.diff_gamma = dg;
    a.diff_beta = db;
    return nbwd_layer_norm_bwd(&d, &a, NULL, 0);
}

void test_detect(void) {
    static const nbwd_isa preference[] = {NBWD_ISA_SCALAR, NBWD_ISA_SSE,    NBWD_ISA_NEON,       NBWD_ISA_NEON_BF16,
                                          NBWD_ISA_AVX2,   NBWD_ISA_AVX512, NBWD_ISA_AVX512_BF16};
    char what[256], names[128];
    const char *env = getenv("NORM_BWD_ISA");
    int cpu = td_cpu(what, sizeof what), compiled = td_compiled(), expected = cpu & compiled, i;
    nbwd_isa best = NBWD_ISA_SCALAR, want_active, active;

    td_mask_names(expected, names, sizeof names);
    printf("  detect: %s\n  detect: expected runnable: %s%s\n", what, names,
           td_emulated() ? " (emulated: avx2 avx512 avx512_bf16 neon)" : "");

    /* every nbwd_isa value, and the ones outside the enum */
    t_case("detect: nbwd_isa_supported against cpuid/xgetbv/HWCAP2 and the build (%s)", what);
    for (i = 0; i < NBWD_ISA_COUNT; ++i) {
        int want = i != NBWD_ISA_AUTO && (expected & TD_BIT(i)) != 0, got = nbwd_isa_supported((nbwd_isa)i);
        CHECK(got == want, "nbwd_isa_supported(%s) = %d, expected %d", nbwd_isa_name((nbwd_isa)i), got, want);
    }
    CHECK(!nbwd_isa_supported(NBWD_ISA_COUNT) && !nbwd_isa_supported((nbwd_isa)-1) &&
              !nbwd_isa_supported((nbwd_isa)99),
          "an ISA value outside the enum is reported supported");

    /* the automatic choice */
    for (i = 0; i < (int)(sizeof preference / sizeof preference[0]); ++i)
        if ((expected & TD_BIT(preference[i])) && !(td_emulated() & TD_BIT(preference[i]))) best = preference[i];
    want_active = best;
    if (env && *env && strcmp(env, "auto") != 0) {
        want_active = NBWD_ISA_AUTO; /* a name that is no path, or a path that cannot run here */
        for (i = 1; i < NBWD_ISA_COUNT; ++i)
            if (strcmp(env, nbwd_isa_name((nbwd_isa)i)) == 0 && (expected & TD_BIT(i))) want_active = (nbwd_isa)i;
    }
    active = nbwd_active_isa();
    t_case("detect: nbwd_active_isa with NORM_BWD_ISA %s%s%s", env ? "= '" : "unset", env ? env : "", env ? "'" : "");
    CHECK(active == want_active, "nbwd_active_isa() = %s, expected %s (best runnable: %s)", nbwd_isa_name(active),
          nbwd_isa_name(want_active), nbwd_isa_name(best));
    printf("  detect: NORM_BWD_ISA %s%s, active %s (expected %s)\n", env ? "= " : "unset", env ? env : "",
           nbwd_isa_name(active), nbwd_isa_name(want_active));

    /* calls: desc.isa runs exactly the supported paths; AUTO runs iff there is an automatic path */
    for (i = 0; i < NBWD_ISA_COUNT; ++i) {
        nbwd_status want;
        if (i == NBWD_ISA_AUTO) want = want_active != NBWD_ISA_AUTO ? NBWD_OK : NBWD_ERR_UNSUPPORTED;
        else want = (expected & TD_BIT(i)) ? NBWD_OK : NBWD_ERR_UNSUPPORTED;
        t_case("detect: a LayerNorm call with desc.isa = %s", nbwd_isa_name((nbwd_isa)i));
        CHECK_STATUS(td_call((nbwd_isa)i), want);
    }

    /* nbwd_force_isa accepts exactly the supported paths; AUTO releases */
    t_case("detect: nbwd_force_isa against the expected paths");
    for (i = 1; i < NBWD_ISA_COUNT; ++i) {
        int ok = (expected & TD_BIT(i)) != 0;
        CHECK_STATUS(nbwd_force_isa((nbwd_isa)i), ok ? NBWD_OK : NBWD_ERR_UNSUPPORTED);
        if (ok)
            CHECK(nbwd_active_isa() == (nbwd_isa)i, "after nbwd_force_isa(%s) the active path is %s",
                  nbwd_isa_name((nbwd_isa)i), nbwd_isa_name(nbwd_active_isa()));
    }
    CHECK_STATUS(nbwd_force_isa(NBWD_ISA_AUTO), NBWD_OK);
    CHECK(nbwd_active_isa() == want_active, "after nbwd_force_isa(auto) the active path is %s, expected %s",
          nbwd_isa_name(nbwd_active_isa()), nbwd_isa_name(want_active));
}
