/* test_diagnostics.c - a new user's mistakes get a precise message.
   - Descriptors that did not come from *_desc_init are refused with
     NBWD_ERR_NOT_INITIALIZED, nothing written: the three zeroed-descriptor
     mistakes that once returned NBWD_OK (a dx-only call normalizing the
     whole tensor; parameter gradients written far past their end; bf16
     buffers read as f32 because data_dtype stayed 0).
   - Every rejection's nbwd_last_error() names the entry point, the status,
     the field or argument and its value; a successful call clears it; each
     thread has its own.
   - Under NORM_BWD_ISA (any case) and NORM_BWD_VERBOSE, which the library
     reads once per process, tools/run_tests.sh runs this suite again: it
     then checks the path the variable chose, the message of a path that
     cannot run, and what NORM_BWD_VERBOSE prints on stderr. */
#if !defined(_POSIX_C_SOURCE) && !defined(_WIN32)
#define _POSIX_C_SOURCE 200112L /* dup, dup2, fileno */
#endif
#include "nbwd_test.h"

#if defined(_OPENMP)
#include <omp.h>
#endif
#if defined(__unix__) || defined(__APPLE__)
#include <unistd.h>
#define T_HAVE_DUP2 1
#endif

/* Does the calling thread's message hold every one of the given pieces? */
static int msg_has(const char *a, const char *b, const char *c) {
    const char *m = nbwd_last_error();
    return m && strstr(m, a) && (!b || strstr(m, b)) && (!c || strstr(m, c));
}
#define CHECK_MSG(a, b, c)                                                                                            \
    CHECK(msg_has(a, b, c), "nbwd_last_error() = \"%s\", expected it to contain \"%s\"%s%s%s%s", nbwd_last_error(), \
          a, b ? ", \"" : "", b ? b : "", c ? "\", \"" : "", c ? c : "")

static float g_x[64], g_dy[64], g_m[8], g_v[8], g_g[16], g_dx[64], g_dg[16], g_db[16];

static void fill(void) {
    int i;
    for (i = 0; i < 64; ++i) { g_x[i] = 0.1f * (float)(i % 9); g_dy[i] = 0.05f * (float)(i % 5) - 0.1f; }
    for (i = 0; i < 8; ++i) { g_m[i] = 0.3f; g_v[i] = 1.5f; }
    for (i = 0; i < 16; ++i) g_g[i] = 1.0f;
    memset(g_dx, T_CANARY, sizeof g_dx);
    memset(g_dg, T_CANARY, sizeof g_dg);
    memset(g_db, T_CANARY, sizeof g_db);
}
static int outputs_untouched(void) {
    size_t i;
    const unsigned char *p[3] = {(const unsigned char *)g_dx, (const unsigned char *)g_dg,
                                 (const unsigned char *)g_db};
    const size_t n[3] = {sizeof g_dx, sizeof g_dg, sizeof g_db};
    int k;
    for (k = 0; k < 3; ++k)
        for (i = 0; i < n[k]; ++i)
            if (p[k][i] != T_CANARY) return 0;
    return 1;
}

static const int64_t k_dims[2] = {4, 8};
static void ln_good(nbwd_layer_norm_bwd_desc *d, nbwd_layer_norm_bwd_args *a) {
    fill();
    nbwd_layer_norm_bwd_desc_init(d, 2, k_dims);
    d->isa = g_test_isa;
    memset(a, 0, sizeof *a);
    a->src = g_x; a->diff_dst = g_dy; a->mean = g_m; a->variance = g_v; a->gamma = g_g;
    a->diff_src = g_dx; a->diff_gamma = g_dg; a->diff_beta = g_db;
}
static void bn_good(nbwd_batch_norm_bwd_desc *d, nbwd_batch_norm_bwd_args *a) {
    fill();
    nbwd_batch_norm_bwd_desc_init(d, 2, k_dims, NBWD_NXC, 1e-5f);
    d->isa = g_test_isa;
    memset(a, 0, sizeof *a);
    a->src = g_x; a->diff_dst = g_dy; a->mean = g_m; a->variance = g_v; a->gamma = g_g;
    a->diff_src = g_dx; a->diff_gamma = g_dg; a->diff_beta = g_db;
}

/* ------------------------------------------------ half-made descriptors */
static void zeroed_descriptors(void) {
    nbwd_layer_norm_bwd_desc d;
    nbwd_layer_norm_bwd_args a;
    nbwd_batch_norm_bwd_desc bd;
    nbwd_batch_norm_bwd_args ba;
    uint16_t x16[64], dy16[64];
    size_t bytes = 12345;
    int k;
    for (k = 0; k < 3; ++k) {
        t_case("zeroed LayerNorm descriptor: %s, isa=%s",
               k == 0 ? "diff_src only" : k == 1 ? "with diff_gamma/diff_beta" : "bf16 buffers, data_dtype left 0",
               nbwd_isa_name(g_test_isa));
        ln_good(&d, &a);
        memset(&d, 0, sizeof d); /* what a user who skips desc_init has */
        d.rank = 2; d.dims[0] = 4; d.dims[1] = 8; d.stats_form = NBWD_STATS_MEAN_VARIANCE; d.isa = g_test_isa;
        if (k == 0) { a.diff_gamma = NULL; a.diff_beta = NULL; }
        if (k == 2) {
            memset(x16, 0, sizeof x16); memset(dy16, 0, sizeof dy16);
            a.src = x16; a.diff_dst = dy16;
        }
        CHECK_STATUS(nbwd_layer_norm_bwd(&d, &a, NULL, 0), NBWD_ERR_NOT_INITIALIZED);
        CHECK_MSG("nbwd_layer_norm_bwd: NBWD_ERR_NOT_INITIALIZED: ", "nbwd_layer_norm_bwd_desc_init", NULL);
        CHECK(outputs_untouched(), "a refused call wrote an output");
        CHECK_STATUS(nbwd_layer_norm_bwd_workspace_size(&d, &bytes), NBWD_ERR_NOT_INITIALIZED);
        CHECK(bytes == 12345, "a refused size query wrote its result");
    }
    t_case("zeroed BatchNorm descriptor, isa=%s", nbwd_isa_name(g_test_isa));
    bn_good(&bd, &ba);
    memset(&bd, 0, sizeof bd);
    bd.rank = 2; bd.dims[0] = 4; bd.dims[1] = 8; bd.epsilon = 1e-5f; bd.isa = g_test_isa;
    CHECK_STATUS(nbwd_batch_norm_bwd(&bd, &ba, NULL, 0), NBWD_ERR_NOT_INITIALIZED);
    CHECK_MSG("nbwd_batch_norm_bwd: NBWD_ERR_NOT_INITIALIZED: ", "nbwd_batch_norm_bwd_desc_init", NULL);
    CHECK(outputs_untouched(), "a refused call wrote an output");
    CHECK_STATUS(nbwd_batch_norm_bwd_workspace_size(&bd, &bytes), NBWD_ERR_NOT_INITIALIZED);
    /* the descriptor of the other operation is not a substitute either */
    {
        nbwd_layer_norm_bwd_desc ld;
        nbwd_batch_norm_bwd_desc_init(&bd, 2, k_dims, NBWD_NXC, 1e-5f);
        memset(&ld, 0, sizeof ld);
        memcpy(&ld, &bd, sizeof ld < sizeof bd ? sizeof ld : sizeof bd);
        ld.init_stamp = bd.init_stamp;
        CHECK_STATUS(nbwd_layer_norm_bwd_workspace_size(&ld, &bytes), NBWD_ERR_NOT_INITIALIZED);
    }
}

/* ---------------------------------------------------- precise messages */
static void messages(void) {
    nbwd_layer_norm_bwd_desc d;
    nbwd_layer_norm_bwd_args a;
    nbwd_batch_norm_bwd_desc bd;
    nbwd_batch_norm_bwd_args ba;
    char ws[64];
    int i;
    t_case("messages name the field, its value and what was expected, isa=%s", nbwd_isa_name(g_test_isa));
    ln_good(&d, &a); a.rstd = g_v;
    CHECK_STATUS(nbwd_layer_norm_bwd(&d, &a, NULL, 0), NBWD_ERR_BAD_PARAM);
    CHECK_MSG("nbwd_layer_norm_bwd: NBWD_ERR_BAD_PARAM: args.rstd is set", "NBWD_STATS_MEAN_VARIANCE",
              "stats_form = NBWD_STATS_MEAN_RSTD");
    ln_good(&d, &a); d.num_threads = -1;
    CHECK_STATUS(nbwd_layer_norm_bwd(&d, &a, NULL, 0), NBWD_ERR_BAD_PARAM);
    CHECK_MSG("desc.num_threads = -1", NULL, NULL);
    ln_good(&d, &a); d.flags = 0x8;
    CHECK_STATUS(nbwd_layer_norm_bwd(&d, &a, NULL, 0), NBWD_ERR_BAD_PARAM);
    CHECK_MSG("desc.flags = 0x8", "NBWD_ACCUMULATE_PARAM_GRADS", NULL);
    ln_good(&d, &a); d.begin_norm_axis = 2;
    CHECK_STATUS(nbwd_layer_norm_bwd(&d, &a, NULL, 0), NBWD_ERR_BAD_PARAM);
    CHECK_MSG("desc.begin_norm_axis = 2 is outside [-2, 1] for rank 2", NULL, NULL);
    ln_good(&d, &a); d.epsilon = 0.0f;
    CHECK_STATUS(nbwd_layer_norm_bwd(&d, &a, NULL, 0), NBWD_ERR_BAD_PARAM);
    CHECK_MSG("desc.epsilon = 0", "finite epsilon > 0", NULL);
    ln_good(&d, &a); d.data_dtype = NBWD_F16; d.stats_dtype = NBWD_BF16;
    CHECK_STATUS(nbwd_layer_norm_bwd(&d, &a, NULL, 0), NBWD_ERR_BAD_DTYPE);
    CHECK_MSG("desc.stats_dtype = bf16 with data_dtype = f16", NULL, NULL);
    ln_good(&d, &a); d.dims[1] = -3;
    CHECK_STATUS(nbwd_layer_norm_bwd(&d, &a, NULL, 0), NBWD_ERR_BAD_SHAPE);
    CHECK_MSG("desc.dims[1] = -3 is negative", NULL, NULL);
    ln_good(&d, &a); a.diff_beta = a.diff_gamma;
    CHECK_STATUS(nbwd_layer_norm_bwd(&d, &a, NULL, 0), NBWD_ERR_BAD_ALIAS);
    CHECK_MSG("args.diff_gamma shares bytes with args.diff_beta", NULL, NULL);
    ln_good(&d, &a); a.diff_src = g_x + 1;
    CHECK_STATUS(nbwd_layer_norm_bwd(&d, &a, NULL, 0), NBWD_ERR_BAD_ALIAS);
    CHECK_MSG("args.diff_src shares bytes with args.src", NULL, NULL);
    ln_good(&d, &a); a.gamma = NULL;
    CHECK_STATUS(nbwd_layer_norm_bwd(&d, &a, NULL, 0), NBWD_ERR_NULL_POINTER);
    CHECK_MSG("args.gamma is NULL", "use_affine", NULL);
    ln_good(&d, &a); d.use_affine = 0;
    CHECK_STATUS(nbwd_layer_norm_bwd(&d, &a, NULL, 0), NBWD_ERR_BAD_PARAM);
    CHECK_MSG("args.diff_gamma is set but desc.use_affine = 0", NULL, NULL);
    ln_good(&d, &a);
    CHECK_STATUS(nbwd_layer_norm_bwd(&d, &a, ws, 8), NBWD_ERR_INSUFFICIENT_WORKSPACE);
    CHECK_MSG("workspace_bytes = 8, but the workspace size query asks for", NULL, NULL);
    ln_good(&d, &a); d.isa = (nbwd_isa)99;
    CHECK_STATUS(nbwd_layer_norm_bwd(&d, &a, NULL, 0), NBWD_ERR_BAD_PARAM);
    CHECK_MSG("desc.isa = 99 is not an nbwd_isa", NULL, NULL);
    for (i = 1; i < NBWD_ISA_COUNT; ++i) /* a path this build or CPU cannot run, if there is one */
        if (!nbwd_isa_supported((nbwd_isa)i)) {
            char want[64];
            ln_good(&d, &a); d.isa = (nbwd_isa)i;
            CHECK_STATUS(nbwd_layer_norm_bwd(&d, &a, NULL, 0), NBWD_ERR_UNSUPPORTED);
            snprintf(want, sizeof want, "desc.isa = %s: that path is not compiled in", nbwd_isa_name((nbwd_isa)i));
            CHECK_MSG(want, "this build and CPU run: scalar", NULL);
            break;
        }
    ln_good(&d, &a);
    CHECK_STATUS(nbwd_layer_norm_bwd_workspace_size(&d, NULL), NBWD_ERR_NULL_POINTER);
    CHECK_MSG("nbwd_layer_norm_bwd_workspace_size: NBWD_ERR_NULL_POINTER: bytes is NULL", NULL, NULL);
    CHECK_STATUS(nbwd_layer_norm_bwd(NULL, &a, NULL, 0), NBWD_ERR_NULL_POINTER);
    CHECK_MSG("desc is NULL", NULL, NULL);
    CHECK_STATUS(nbwd_layer_norm_bwd(&d, NULL, NULL, 0), NBWD_ERR_NULL_POINTER);
    CHECK_MSG("args is NULL", NULL, NULL);
    bn_good(&bd, &ba); ba.diff_beta = NULL;
    CHECK_STATUS(nbwd_batch_norm_bwd(&bd, &ba, NULL, 0), NBWD_ERR_BAD_PARAM);
    CHECK_MSG("nbwd_batch_norm_bwd: NBWD_ERR_BAD_PARAM: args.diff_gamma is set without args.diff_beta", NULL, NULL);
    bn_good(&bd, &ba); bd.layout = (nbwd_layout)7;
    CHECK_STATUS(nbwd_batch_norm_bwd(&bd, &ba, NULL, 0), NBWD_ERR_BAD_PARAM);
    CHECK_MSG("desc.layout = 7 is neither NBWD_NXC nor NBWD_NCX", NULL, NULL);
    bn_good(&bd, &ba); bd.stats_form = NBWD_STATS_XHAT_STD; ba.std = ba.variance; ba.variance = NULL;
    ba.xhat = ba.src; ba.src = NULL;
    CHECK_STATUS(nbwd_batch_norm_bwd(&bd, &ba, NULL, 0), NBWD_ERR_BAD_PARAM);
    CHECK_MSG("args.mean is set but desc.stats_form is NBWD_STATS_XHAT_STD", NULL, NULL);
    CHECK_STATUS(nbwd_force_isa((nbwd_isa)99), NBWD_ERR_UNSUPPORTED);
    CHECK_MSG("nbwd_force_isa: NBWD_ERR_UNSUPPORTED: isa = 99 is not an nbwd_isa value", NULL, NULL);
    /* success clears the message */
    ln_good(&d, &a);
    CHECK_STATUS(nbwd_layer_norm_bwd(&d, &a, NULL, 0), NBWD_OK);
    CHECK(nbwd_last_error()[0] == 0, "a successful call left \"%s\"", nbwd_last_error());
    CHECK(strcmp(nbwd_status_string(NBWD_ERR_NOT_INITIALIZED), "") != 0, "no text for NBWD_ERR_NOT_INITIALIZED");
}

/* Each thread keeps its own message. */
static void per_thread_messages(void) {
#if defined(_OPENMP)
    int ok[2] = {0, 0};
    t_case("nbwd_last_error is per thread, isa=%s", nbwd_isa_name(g_test_isa));
#pragma omp parallel num_threads(2)
    {
        int t = omp_get_thread_num();
        nbwd_layer_norm_bwd_desc d;
        nbwd_layer_norm_bwd_args a;
        float dx[64];
        if (t < 2 && omp_get_num_threads() == 2) {
            nbwd_layer_norm_bwd_desc_init(&d, 2, k_dims);
            d.isa = g_test_isa;
            memset(&a, 0, sizeof a);
            a.src = g_x; a.diff_dst = g_dy; a.mean = g_m; a.variance = g_v; a.gamma = g_g; a.diff_src = dx;
            if (t == 0) d.num_threads = -1 - t;
            else d.begin_norm_axis = 5;
#pragma omp barrier
            (void)nbwd_layer_norm_bwd(&d, &a, NULL, 0);
#pragma omp barrier
            ok[t] = t == 0 ? strstr(nbwd_last_error(), "desc.num_threads = -1") != NULL
                           : strstr(nbwd_last_error(), "desc.begin_norm_axis = 5") != NULL;
        }
    }
    CHECK(ok[0] && ok[1], "thread 0 %s its own message, thread 1 %s", ok[0] ? "has" : "lacks", ok[1] ? "has" : "lacks");
#endif
}

/* ------------------------------------------------ environment variables */
static int same_name_ci(const char *a, const char *b) {
    for (; *a && *b; ++a, ++b) {
        char x = (char)(*a >= 'A' && *a <= 'Z' ? *a - 'A' + 'a' : *a), y = (char)(*b >= 'A' && *b <= 'Z' ? *b - 'A' + 'a' : *b);
        if (x != y) return 0;
    }
    return *a == *b;
}

static void env_isa(void) {
    const char *env = getenv("NORM_BWD_ISA");
    nbwd_layer_norm_bwd_desc d;
    nbwd_layer_norm_bwd_args a;
    int i, named = 0;
    if (!env || !*env) return;
    t_case("NORM_BWD_ISA=%s (either case)", env);
    for (i = 1; i < NBWD_ISA_COUNT; ++i)
        if (same_name_ci(env, nbwd_isa_name((nbwd_isa)i))) named = i;
    ln_good(&d, &a);
    d.isa = NBWD_ISA_AUTO;
    if (named && nbwd_isa_supported((nbwd_isa)named)) {
        CHECK(nbwd_active_isa() == (nbwd_isa)named, "NORM_BWD_ISA=%s: auto resolves to %s", env,
              nbwd_isa_name(nbwd_active_isa()));
        CHECK_STATUS(nbwd_layer_norm_bwd(&d, &a, NULL, 0), NBWD_OK);
    } else {
        char want[96];
        CHECK(nbwd_active_isa() == NBWD_ISA_AUTO, "NORM_BWD_ISA=%s cannot run, yet auto resolves to %s", env,
              nbwd_isa_name(nbwd_active_isa()));
        CHECK_STATUS(nbwd_layer_norm_bwd(&d, &a, NULL, 0), NBWD_ERR_UNSUPPORTED);
        snprintf(want, sizeof want, "NORM_BWD_ISA=%s", env);
        CHECK_MSG(want, named ? "not compiled in or cannot run" : "names no path", "this build and CPU run: scalar");
    }
}

/* NORM_BWD_VERBOSE=1: each rejection on stderr; =2: also a line per call. */
static void env_verbose(void) {
#if defined(T_HAVE_DUP2)
    const char *env = getenv("NORM_BWD_VERBOSE");
    nbwd_layer_norm_bwd_desc d;
    nbwd_layer_norm_bwd_args a;
    char text[4096];
    FILE *f;
    size_t n;
    int saved, level;
    if (!env || !*env) return;
    level = atoi(env) >= 2 ? 2 : atoi(env);
    t_case("NORM_BWD_VERBOSE=%s prints %s", env, level >= 2 ? "rejections and calls" : "rejections");
    f = tmpfile();
    if (!CHECK(f != NULL, "tmpfile failed")) return;
    fflush(stderr);
    saved = dup(2);
    dup2(fileno(f), 2);
    ln_good(&d, &a);
    (void)nbwd_layer_norm_bwd(&d, &a, NULL, 0); /* accepted */
    ln_good(&d, &a);
    d.num_threads = -7;
    (void)nbwd_layer_norm_bwd(&d, &a, NULL, 0); /* rejected */
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    rewind(f);
    n = fread(text, 1, sizeof text - 1, f);
    text[n] = 0;
    fclose(f);
    CHECK(strstr(text, "norm_bwd: nbwd_layer_norm_bwd: NBWD_ERR_BAD_PARAM: desc.num_threads = -7") != NULL,
          "the rejection was not printed; stderr had: %s", text);
    if (level >= 2) {
        char want[160];
        snprintf(want, sizeof want, "norm_bwd: layer_norm_bwd 4x8 axis -1 data f32 stats f32 params f32 "
                                    "NBWD_STATS_MEAN_VARIANCE outputs diff_src,diff_gamma,diff_beta path %s threads<=",
                 nbwd_isa_name(g_test_isa == NBWD_ISA_AUTO ? nbwd_active_isa() : g_test_isa));
        CHECK(strstr(text, want) != NULL, "no call line \"%s\"; stderr had: %s", want, text);
        CHECK(strstr(text, " ms\n") != NULL && strstr(text, "(rejected)") != NULL,
              "call lines lack the time or the rejected mark; stderr had: %s", text);
    } else {
        CHECK(strstr(text, "layer_norm_bwd 4x8") == NULL, "level 1 printed a call line; stderr had: %s", text);
    }
#endif
}

void test_diagnostics(void) {
    zeroed_descriptors();
    messages();
    per_thread_messages();
    env_isa();
    env_verbose();
}
