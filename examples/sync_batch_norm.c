/* sync_batch_norm.c: BatchNorm backward over a batch split across MPI
   processes (SyncBatchNorm, data-parallel training).

   The batch is NHWC ([N, H, W, C], NBWD_NXC, f32) with N = 7 images, split
   unevenly over the ranks (3 + 4 on two, 2 + 2 + 3 on three). Each rank has
   its slice and the whole batch's mean and variance (in training the
   forward pass all-reduced them). The backward is two calls around one
   all-reduce:
     1. nbwd_batch_norm_bwd_reduce: the slice's per-channel sums of dy and
        dy * xhat, and its element count (images * H * W);
     2. MPI_Allreduce: the 2C sums (MPI_FLOAT) and the count (MPI_INT64_T);
     3. nbwd_batch_norm_bwd_apply with the totals: the slice's dx, and the
        whole batch's dgamma and dbeta (the same on every rank).
   LayerNorm and RMSNorm need no such split: each row is normalized on its
   own, so each process runs nbwd_layer_norm_bwd (nbwd_rms_norm_bwd) on its
   rows and all-reduces diff_gamma and diff_beta only.

   The check: every rank makes the whole batch from the same seed, runs one
   nbwd_batch_norm_bwd over it, and compares its slice's dx, and dgamma and
   dbeta, with that call's. The two differ only in the order of the f32
   sums (about an ulp of a sum per addition), so each tensor must agree
   within 1e-5 of its largest magnitude. Rank 0 prints the result; every
   rank exits 1 on a mismatch.

   Build and run (from examples/; make test-mpi does both):
       mpicc -O2 -I.. sync_batch_norm.c -o sync_batch_norm -lm
       mpirun -np 3 ./sync_batch_norm */
#define NORM_BWD_IMPLEMENTATION
#include "norm_bwd.h"
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

enum { N = 7, H = 5, W = 5, C = 12, IMAGE = H * W * C, ELEMS = N * IMAGE };
#define TOLERANCE 1e-5

static float uniform(unsigned *state) { /* deterministic, in [-1, 1) */
    *state = *state * 1664525u + 1013904223u;
    return (float)((*state >> 8) * (2.0 / 16777216.0) - 1.0);
}

static void check(nbwd_status status, const char *what) {
    if (status == NBWD_OK) return;
    fprintf(stderr, "%s: %s (%s)\n", what, nbwd_status_string(status), nbwd_last_error());
    MPI_Abort(MPI_COMM_WORLD, 1);
}

static double max_abs(const float *a, int n) {
    double m = 0.0;
    int i;
    for (i = 0; i < n; ++i)
        if (fabs(a[i]) > m) m = fabs(a[i]);
    return m;
}

static double max_diff(const float *a, const float *b, int n) {
    double m = 0.0;
    int i;
    for (i = 0; i < n; ++i)
        if (fabs(a[i] - b[i]) > m) m = fabs(a[i] - b[i]);
    return m;
}

int main(int argc, char **argv) {
    static float x[ELEMS], dy[ELEMS], dx[ELEMS], want_dx[ELEMS];
    float mean[C], var[C], gamma[C], dgamma[C], dbeta[C], want_dgamma[C], want_dbeta[C];
    float sums[2 * C]; /* sum_dy, then sum_dy_xhat: one buffer, one all-reduce */
    int64_t count, dims[4] = {N, H, W, C};
    nbwd_batch_norm_bwd_desc desc;
    nbwd_batch_norm_bwd_args args = {0};
    size_t ws_bytes = 0;
    void *ws;
    double err[3];
    unsigned seed = 7u;
    int rank, ranks, first, images, ok, i, c;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &ranks);

    /* The whole batch, its statistics and gamma: the same on every rank. */
    for (i = 0; i < ELEMS; ++i) {
        c = i % C;
        x[i] = 0.2f * c + (1.0f + 0.1f * c) * uniform(&seed);
        dy[i] = 0.5f * uniform(&seed) + 0.05f * (c % 4);
    }
    for (c = 0; c < C; ++c) {
        double m = 0.0, v = 0.0;
        for (i = c; i < ELEMS; i += C) m += x[i];
        m /= ELEMS / C;
        for (i = c; i < ELEMS; i += C) v += (x[i] - m) * (x[i] - m);
        mean[c] = (float)m;
        var[c] = (float)(v / (ELEMS / C));
        gamma[c] = 0.5f + 0.1f * c;
    }
    args.mean = mean;
    args.variance = var;
    args.gamma = gamma;

    /* This rank's images: [first, first + images) of the batch. An engine
       would hold only these; NXC keeps them one contiguous block. */
    first = N * rank / ranks;
    images = N * (rank + 1) / ranks - first;
    dims[0] = images;
    nbwd_batch_norm_bwd_desc_init(&desc, 4, dims, NBWD_NXC, 1e-5f);
    check(nbwd_batch_norm_bwd_workspace_size(&desc, &ws_bytes), "workspace size");
    ws = malloc(ws_bytes ? ws_bytes : 1);
    if (!ws) MPI_Abort(MPI_COMM_WORLD, 1);
    args.src = x + (size_t)first * IMAGE;
    args.diff_dst = dy + (size_t)first * IMAGE;

    /* 1. the slice's sums (args.diff_src, diff_gamma, diff_beta stay NULL) */
    check(nbwd_batch_norm_bwd_reduce(&desc, &args, sums, sums + C, &count, ws, ws_bytes), "reduce");
    /* 2. the whole batch's sums and count */
    MPI_Allreduce(MPI_IN_PLACE, sums, 2 * C, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, &count, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
    /* 3. the slice's dx, and dgamma and dbeta, from the totals */
    args.diff_src = dx + (size_t)first * IMAGE;
    args.diff_gamma = dgamma;
    args.diff_beta = dbeta;
    check(nbwd_batch_norm_bwd_apply(&desc, &args, sums, sums + C, count, ws, ws_bytes), "apply");
    free(ws);

    /* The reference: one call over the whole batch, on this rank alone. */
    dims[0] = N;
    nbwd_batch_norm_bwd_desc_init(&desc, 4, dims, NBWD_NXC, 1e-5f);
    check(nbwd_batch_norm_bwd_workspace_size(&desc, &ws_bytes), "workspace size");
    ws = malloc(ws_bytes ? ws_bytes : 1);
    if (!ws) MPI_Abort(MPI_COMM_WORLD, 1);
    args.src = x;
    args.diff_dst = dy;
    args.diff_src = want_dx;
    args.diff_gamma = want_dgamma;
    args.diff_beta = want_dbeta;
    check(nbwd_batch_norm_bwd(&desc, &args, ws, ws_bytes), "the whole batch");
    free(ws);

    /* Each error relative to the largest magnitude of its tensor (for dx,
       of the whole batch's); the worst over the ranks. */
    err[0] = max_diff(dx + (size_t)first * IMAGE, want_dx + (size_t)first * IMAGE, images * IMAGE) /
             max_abs(want_dx, ELEMS);
    err[1] = max_diff(dgamma, want_dgamma, C) / max_abs(want_dgamma, C);
    err[2] = max_diff(dbeta, want_dbeta, C) / max_abs(want_dbeta, C);
    MPI_Allreduce(MPI_IN_PLACE, err, 3, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    ok = err[0] <= TOLERANCE && err[1] <= TOLERANCE && err[2] <= TOLERANCE;

    if (rank == 0) {
        printf("SyncBatchNorm backward, NHWC [%d, %d, %d, %d] f32 on %d ranks (images:", N, H, W, C, ranks);
        for (i = 0; i < ranks; ++i) printf(" %d", N * (i + 1) / ranks - N * i / ranks);
        printf(")\n");
        printf("error against one call over the whole batch, of the largest magnitude (tolerance %.0e):\n", TOLERANCE);
        printf("  dx %.1e, dgamma %.1e, dbeta %.1e: %s\n", err[0], err[1], err[2], ok ? "match" : "MISMATCH");
        fprintf(stderr, "path %s\n", nbwd_isa_name(nbwd_active_isa()));
    }
    MPI_Finalize();
    return ok ? 0 : 1;
}
