/* game_frame.c: a game engine's tiny per-frame call. An agent's small
   network is trained online, one LayerNorm backward over [8, 32] per frame
   for 100 frames, on the engine's own thread:
   - one path chosen at start-up and kept (desc.isa): every frame, and every
     player whose CPU has that path, gets the same bits; the dispatcher's
     automatic choice could differ between machines in the last bits;
   - num_threads = 1: too small to share out, and the engine owns its threads;
   - everything set up once, with a static workspace: no allocation per frame.

   Build (from examples/): cc -O2 -I.. game_frame.c -lm */
#define NORM_BWD_IMPLEMENTATION
#include "norm_bwd.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

enum { AGENTS = 8, FEATURES = 32, FRAMES = 100 };

/* The layer's state lives for the whole game (one struct: file-scope names
   such as gamma would clash with <math.h>'s gamma() in C++). */
static struct agent_norm {
    float x[AGENTS * FEATURES], dy[AGENTS * FEATURES], dx[AGENTS * FEATURES];
    float mean[AGENTS], var[AGENTS];
    float gamma[FEATURES], dgamma[FEATURES], dbeta[FEATURES];
    unsigned char workspace[4096]; /* checked against the query at start-up */
    nbwd_layer_norm_bwd_desc desc;
    nbwd_layer_norm_bwd_args args;
} ln;

/* The path the game ships with: the first of its tested list that this CPU
   runs (x86: avx2; Arm: neon), else the portable scalar code. A support
   override: where the library's variable NORM_BWD_ISA names a path, the
   call is left to the dispatcher, which then takes that path. */
static nbwd_isa pick_path(void) {
    static const nbwd_isa tested[] = {NBWD_ISA_AVX2, NBWD_ISA_NEON, NBWD_ISA_SCALAR};
    size_t i;
    const char *env = getenv("NORM_BWD_ISA");
    if (env && *env) return NBWD_ISA_AUTO;
    for (i = 0; i < sizeof tested / sizeof tested[0]; ++i)
        if (nbwd_isa_supported(tested[i])) return tested[i];
    return NBWD_ISA_SCALAR;
}

static int setup(void) {
    int64_t dims[2] = {AGENTS, FEATURES};
    size_t need = 0;
    int f;
    nbwd_layer_norm_bwd_desc_init(&ln.desc, 2, dims);
    ln.desc.isa = pick_path(); /* (or nbwd_force_isa() for the whole process) */
    ln.desc.num_threads = 1;
    if (nbwd_layer_norm_bwd_workspace_size(&ln.desc, &need) != NBWD_OK || need > sizeof ln.workspace) {
        fprintf(stderr, "workspace: need %lu bytes\n", (unsigned long)need);
        return 0;
    }
    ln.args.src = ln.x;
    ln.args.diff_dst = ln.dy;
    ln.args.mean = ln.mean;
    ln.args.variance = ln.var;
    ln.args.gamma = ln.gamma;
    ln.args.diff_src = ln.dx;
    ln.args.diff_gamma = ln.dgamma;
    ln.args.diff_beta = ln.dbeta;
    for (f = 0; f < FEATURES; ++f) ln.gamma[f] = 1.0f;
    fprintf(stderr, "path %s, workspace %lu of %lu bytes\n",
            nbwd_isa_name(ln.desc.isa == NBWD_ISA_AUTO ? nbwd_active_isa() : ln.desc.isa), (unsigned long)need,
            (unsigned long)sizeof ln.workspace);
    return 1;
}

/* One frame: the agents' features and the gradient from the loss (made up
   here), the forward statistics, the backward call, an SGD step on gamma. */
static int frame(int n, double *checksum) {
    nbwd_status status;
    int a, f;
    for (a = 0; a < AGENTS; ++a) {
        float m = 0.0f, v = 0.0f;
        for (f = 0; f < FEATURES; ++f) {
            ln.x[a * FEATURES + f] = (float)sin(0.05 * n + 0.3 * a + 0.7 * f);
            ln.dy[a * FEATURES + f] = (float)(0.1 * cos(0.11 * n - 0.5 * a + 0.2 * f));
            m += ln.x[a * FEATURES + f];
        }
        m /= FEATURES;
        for (f = 0; f < FEATURES; ++f) v += (ln.x[a * FEATURES + f] - m) * (ln.x[a * FEATURES + f] - m);
        ln.mean[a] = m;
        ln.var[a] = v / FEATURES;
    }
    status = nbwd_layer_norm_bwd(&ln.desc, &ln.args, ln.workspace, sizeof ln.workspace);
    if (status != NBWD_OK) {
        fprintf(stderr, "frame %d: %s\n", n, nbwd_status_string(status));
        return 0;
    }
    for (f = 0; f < FEATURES; ++f) ln.gamma[f] -= 0.1f * ln.dgamma[f];
    for (a = 0; a < AGENTS * FEATURES; ++a) *checksum += fabs(ln.dx[a]);
    return 1;
}

int main(void) {
    double checksum = 0.0;
    int n;
    if (!setup()) return 1;
    for (n = 0; n < FRAMES; ++n) {
        if (!frame(n, &checksum)) return 1;
        if (n % 25 == 24)
            printf("frame %3d: gamma[0..3] = %.4f %.4f %.4f %.4f  dx[0][0..1] = %.4f %.4f\n", n + 1, ln.gamma[0],
                   ln.gamma[1], ln.gamma[2], ln.gamma[3], ln.dx[0], ln.dx[1]);
    }
    printf("mean |dx| over %d frames: %.4f\n", FRAMES, checksum / (FRAMES * AGENTS * FEATURES));
    return 0;
}
