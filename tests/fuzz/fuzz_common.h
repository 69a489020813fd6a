/* fuzz_common.h - shared pieces of the norm_bwd libFuzzer targets: a byte
   decoder, the pointer and workspace modes, guarded per-tensor allocations
   with snapshots and write masks, an independent overlap check, the status
   checks every call shares, and float64 references written from the
   formulas in the header manual (not from the library's code). With
   -DFZ_STANDALONE (no libFuzzer) a main that runs each file named on the
   command line once and prints the target's fz_report line.

   Each target is one translation unit that defines NORM_BWD_IMPLEMENTATION
   and includes this file (with -DFZ_SEPARATE_IMPL: linked to tests/impl.c's
   library instead, tools/sanitize.sh fuzz). A failed expectation prints a line and abort()s,
   which libFuzzer reports as a crash with the input saved. */
#ifndef NBWD_FUZZ_COMMON_H
#define NBWD_FUZZ_COMMON_H

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "norm_bwd.h"

#if defined(FZ_SEPARATE_IMPL) /* the implementation linked in from tests/impl.c */
#include "../impl_hooks.h"
#endif

#define FZ_CAP_ELEMS 4096 /* largest tensor (elements, extent included) given real memory */
#define FZ_CANARY 0xA5u
/* The documented size limit: the product of the non-zero dims is at most
   INT64_MAX / 16 (every byte offset fits an int64); beyond it BAD_SHAPE. */
#define FZ_MAX_ELEMS (INT64_MAX / 16)

#define FZ_FAIL(...)                                     \
    do {                                                 \
        fprintf(stderr, "norm_bwd fuzz: " __VA_ARGS__); \
        fprintf(stderr, "\n");                           \
        abort();                                         \
    } while (0)
#define FZ_ASSERT(cond, ...) \
    do {                     \
        if (!(cond)) FZ_FAIL(__VA_ARGS__); \
    } while (0)

/* A failed allocation is a status (NBWD_ERR_OUT_OF_MEMORY), not a report. */
const char *__asan_default_options(void);
const char *__asan_default_options(void) { return "allocator_may_return_null=1"; }

/* ------------------------------------------------------------ decoder */
/* Past the end every byte reads 0; i keeps counting (the bytes an input
   would need to reach a choice: pad to it before appending one). */
typedef struct fz_rd { const uint8_t *p; size_t n, i; } fz_rd;
static inline uint8_t fz_u8(fz_rd *r) {
    uint8_t b = r->i < r->n ? r->p[r->i] : 0;
    ++r->i;
    return b;
}
static inline uint32_t fz_u32(fz_rd *r) {
    uint32_t v = 0;
    int k;
    for (k = 0; k < 4; ++k) v = (v << 8) | fz_u8(r);
    return v;
}
static inline uint64_t fz_u64(fz_rd *r) {
    uint64_t hi = fz_u32(r);
    return (hi << 32) | fz_u32(r);
}

/* A dimension: mostly small, sometimes zero, huge or negative. */
static inline int64_t fz_dim(fz_rd *r) {
    static const int64_t special[] = {0, 1, 2, (int64_t)1 << 31, ((int64_t)1 << 32) + 1, (int64_t)1 << 40,
                                      (int64_t)1 << 59, (int64_t)1 << 61, (int64_t)1 << 62, INT64_MAX, -1,
                                      INT64_MIN, -((int64_t)1 << 33), 17, 33, 65};
    uint8_t b = fz_u8(r);
    if (b < 224) return b % 7;
    return special[b % 16];
}
/* An element stride for a dim of size `dense` when dense-packed. */
static inline int64_t fz_stride(fz_rd *r, int64_t dense) {
    static const int64_t special[] = {0, -1, 1, INT64_MAX, INT64_MIN, (int64_t)1 << 62, -((int64_t)1 << 61),
                                      (int64_t)1 << 40};
    uint8_t b = fz_u8(r);
    if (b < 96) return dense + b % 5;         /* padded */
    if (b < 160) return -(dense + b % 3);     /* negative, padded */
    if (b < 208) return (int64_t)(b % 9) - 4; /* tiny, zero, overlapping */
    return special[b % 8];
}
/* Strides of a tensor of dims [0, rank) whose block [from, rank) should be
   dense (LayerNorm's and GroupNorm's rule): NULL (a byte below 128),
   padded outer strides (the one next to the block negative for odd bytes),
   or arbitrary ones for every dim (*arbitrary then set, unless NULL). */
static inline const int64_t *fz_block_strides(fz_rd *r, int rank, const int64_t *dims, int from, int64_t *out,
                                              int *arbitrary) {
    uint8_t m = fz_u8(r);
    int64_t s = 1;
    int d;
    if (m < 128) return NULL;
    for (d = rank - 1; d >= 0; --d) {
        if (m >= 208) {
            out[d] = fz_stride(r, s);
            if (arbitrary) *arbitrary = 1;
        } else if (d >= from) {
            out[d] = s;
        } else {
            int64_t pad = fz_u8(r) % 3;
            out[d] = (m & 1) && d == from - 1 ? -(s + pad) : s + pad;
            s += pad;
        }
        s *= dims[d] > 0 && dims[d] < ((int64_t)1 << 20) ? dims[d] : 1;
    }
    return out;
}
/* Is the block [from, rank) dense under strides st (NULL: dense)? */
static inline int fz_dense_block(int rank, const int64_t *dims, const int64_t *st, int from) {
    int64_t expect = 1;
    int d;
    if (!st) return 1;
    for (d = rank - 1; d >= from; --d) {
        if (dims[d] != 1 && st[d] != expect) return 0;
        expect *= dims[d] > 0 ? dims[d] : 1; /* the NULL (dense) strides' rule */
    }
    return 1;
}
/* the status of the input's main call, for FZ_STANDALONE's line */
#define FZ_NO_CALL (-100)
static int g_fz_status;
static inline void fz_set_status(nbwd_status s) { g_fz_status = (int)s; }
#if defined(FZ_STANDALONE)
/* The standalone drivers' reader: the whole file (*n bytes) in a malloc'd
   buffer, or NULL after a message. */
static inline uint8_t *fz_read_file(const char *path, long *n) {
    FILE *f = fopen(path, "rb");
    uint8_t *buf = NULL;
    if (f && fseek(f, 0, SEEK_END) == 0 && (*n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
        (buf = (uint8_t *)malloc((size_t)*n + 1)) != NULL && fread(buf, 1, (size_t)*n, f) != (size_t)*n) {
        free(buf);
        buf = NULL;
    }
    if (f) fclose(f);
    if (!buf) fprintf(stderr, "%s: cannot read\n", path);
    return buf;
}
/* Each target's line about one input: what it decoded, the call's status
   (g_fz_status = FZ_NO_CALL when no call was made) */
static void fz_report(const char *path, long n);
static inline const char *fz_status_name(void) {
    return g_fz_status == FZ_NO_CALL ? "(no call)" : nbwd_status_string((nbwd_status)g_fz_status);
}
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
/* Each file once, without libFuzzer (any compiler, with or without
   sanitizers): a failed check aborts as under libFuzzer. */
int main(int argc, char **argv) {
    int i;
    for (i = 1; i < argc; ++i) {
        long n = 0;
        uint8_t *buf = fz_read_file(argv[i], &n);
        if (!buf) return 2;
        g_fz_status = FZ_NO_CALL;
        LLVMFuzzerTestOneInput(buf, (size_t)n);
        fz_report(argv[i], n);
        free(buf);
    }
    return 0;
}
#endif
/* NBWD_STATS_NONE: how far xhat may move with the statistics a call finds
   itself (the manual's bound: the mean within u |mean| + 26 u std, rstd
   within 13 u): u (|mean| rstd + 32 + 16 |xhat|), u = 2^-24 */
static inline double fz_none_xhat_err(double mean, double rstd, double xh) {
    return ldexp(1.0, -24) * (fabs(mean) * rstd + 32.0 + 16.0 * fabs(xh));
}
static inline float fz_eps(fz_rd *r) {
    static const float v[] = {1e-5f, 1e-5f, 1e-3f, 0.0f, -1e-5f, NAN, INFINITY, -INFINITY, 1e-45f, FLT_MAX,
                              0.5f, 1.0f, 1e-30f, -0.0f, 3e38f, 1e-12f};
    return v[fz_u8(r) % 16];
}
static inline int fz_enum(fz_rd *r, int count) { /* in range mostly, else out of range */
    static const int bad[] = {-1, 3, 6, 100, INT32_MIN, INT32_MAX, 255, -7};
    uint8_t b = fz_u8(r);
    if (b < 224) return b % count;
    return bad[b % 8];
}

/* ------------------------------------------------------------ values */
typedef struct fz_rng { uint64_t s; } fz_rng;
static inline uint64_t fz_next(fz_rng *g) {
    uint64_t z = (g->s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static inline double fz_unif(fz_rng *g, double lo, double hi) {
    return lo + (hi - lo) * ((double)(fz_next(g) >> 11) * (1.0 / 9007199254740992.0));
}

static inline size_t fz_esz(int dt) { return dt == NBWD_F32 ? 4u : 2u; }
static inline int fz_dt_ok(int dt) { return dt == NBWD_F32 || dt == NBWD_F16 || dt == NBWD_BF16; }

/* Independent 16-bit decoding (format definitions). */
static inline double fz_f16_val(uint16_t h) {
    int e = (h >> 10) & 31, m = h & 1023;
    double v = e == 31 ? (m ? NAN : INFINITY) : e == 0 ? ldexp((double)m, -24) : ldexp((double)(1024 + m), e - 25);
    return (h & 0x8000u) ? -v : v;
}
static inline double fz_bf16_val(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}
static inline double fz_load(const void *p, int dt, int64_t off) {
    if (dt == NBWD_F32) { float f; memcpy(&f, (const char *)p + off * 4, 4); return f; }
    {
        uint16_t h;
        memcpy(&h, (const char *)p + off * 2, 2);
        return dt == NBWD_F16 ? fz_f16_val(h) : fz_bf16_val(h);
    }
}
/* Stores v (exactly representable in float or rounded by the library's own
   conversion: only used to create inputs, never to judge outputs). */
static inline void fz_store(void *p, int dt, int64_t off, double v) {
    if (dt == NBWD_F32) { float f = (float)v; memcpy((char *)p + off * 4, &f, 4); return; }
    {
        uint16_t h = dt == NBWD_F16 ? nbwd_f32_to_f16((float)v) : nbwd_f32_to_bf16((float)v);
        memcpy((char *)p + off * 2, &h, 2);
    }
}
/* The spacing of dt's numbers at |v|. */
static inline double fz_ulp(int dt, double v) {
    int p = dt == NBWD_F32 ? 24 : dt == NBWD_F16 ? 11 : 8, emin = dt == NBWD_F16 ? -14 : -126, e;
    double a = fabs(v);
    if (!(a > 0) || isinf(a)) return ldexp(1.0, emin - p + 1);
    frexp(a, &e);
    e -= 1;
    if (e < emin) e = emin;
    return ldexp(1.0, e - p + 1);
}
static inline double fz_max_finite(int dt) {
    return dt == NBWD_F32 ? FLT_MAX : dt == NBWD_F16 ? 65504.0 : 3.3895313892515355e38;
}
/* got (stored in dt) vs the float64 ref with an f32 error bound tol. */
static inline int fz_close(int dt, double got, double ref, double tol) {
    if (!isfinite(ref)) return !isfinite(got); /* non-finite in, non-finite out */
    tol += fz_ulp(dt, ref) + fz_ulp(dt, got);
    if (isinf(got)) return fabs(ref) + tol >= fz_max_finite(dt);
    return fabs(got - ref) <= tol;
}

/* ------------------------------------------------------------ pointers */
/* Tensor i's pointer from its mode byte m: natural (mode 0: present where
   the call needs it), forced NULL (1), forced present (2) or an alias of
   tensor alias_of[i] (of the first n_alias) moved by alias_delta[i]
   elements (3: two more bytes). Returns 0 where the pointers are no longer
   the natural ones. */
static inline int fz_pointer_mode(fz_rd *r, uint8_t m, int needed, int i, int n_alias, int *mode, int *want,
                                  int *alias_of, int64_t *alias_delta) {
    alias_of[i] = -1;
    alias_delta[i] = 0;
    if (m < 200) { mode[i] = 0; want[i] = needed; return 1; }
    if (m < 216) { mode[i] = 1; want[i] = 0; return 0; }
    mode[i] = m < 232 ? 2 : 3;
    want[i] = 1;
    if (mode[i] == 3) {
        alias_of[i] = fz_u8(r) % n_alias;
        alias_delta[i] = (int64_t)(int8_t)fz_u8(r) % 9;
    }
    return 0;
}

/* ------------------------------------------------------------ workspace */
/* The workspace a target's ws_mode (0-7) asks for, given the size query's
   qbytes: 0, 1 none (NULL, 0 bytes); 2, 3 the query's size; 4 one byte short
   (empty problems need 0); 5 the query's size at an odd address; 6 a pointer
   with size 0; 7 4 KiB more. Allocated to the exact size, so ASan sees any
   overrun; queries past 64 MiB get none. Sets *bytes and *alloc (for free). */
static inline void *fz_workspace(int ws_mode, size_t qbytes, uint64_t seed, size_t *bytes, void **alloc) {
    size_t skew;
    *bytes = 0;
    *alloc = NULL;
    if (ws_mode < 2 || qbytes > ((size_t)1 << 26)) return NULL;
    switch (ws_mode) {
    case 4: *bytes = qbytes > 0 ? qbytes - 1 : 0; break;
    case 6: *bytes = 0; break;
    case 7: *bytes = qbytes + 4096; break;
    default: *bytes = qbytes; break;
    }
    skew = ws_mode == 5 ? 1 + (size_t)(seed % 63) : 0;
    *alloc = malloc(*bytes + skew > 0 ? *bytes + skew : 1);
    if (!*alloc) FZ_FAIL("out of memory");
    return (char *)*alloc + skew;
}

/* ------------------------------------------------------------ tensors */
/* Element extent [lo, hi) of a strided tensor; 0 when it overflows or
   exceeds cap elements. Empty tensors: lo = hi = 0. */
static inline int fz_extent(int rank, const int64_t *dims, const int64_t *st, int64_t cap, int64_t *lo, int64_t *hi) {
    int64_t l = 0, h = 0;
    int d;
    *lo = *hi = 0;
    for (d = 0; d < rank; ++d) {
        if (dims[d] < 0) return 0;
        if (dims[d] == 0) return 1;
    }
    for (d = 0; d < rank; ++d) {
        int64_t s = st[d], m = dims[d] - 1;
        if (m == 0) continue;
        if (m > cap || s > cap || s < -cap) return 0;
        if (s < 0) l += s * m; else h += s * m;
        if (h - l >= cap) return 0;
    }
    *lo = l;
    *hi = h + 1;
    return 1;
}
static inline void fz_dense(int rank, const int64_t *dims, int64_t *st) {
    int64_t s = 1;
    int d;
    for (d = rank - 1; d >= 0; --d) { st[d] = s; if (d > 0) s *= dims[d] > 0 ? dims[d] : 1; }
}
/* Element offset of logical (row-major) index i. */
static inline int64_t fz_offset(int rank, const int64_t *dims, const int64_t *st, int64_t i) {
    int64_t off = 0;
    int d;
    for (d = rank - 1; d >= 0; --d) { off += (i % dims[d]) * st[d]; i /= dims[d]; }
    return off;
}

/* One allocation per tensor (ASan redzones around it); aliases point into
   another tensor's allocation. */
#define FZ_MAXT 14
typedef struct fz_alloc {
    unsigned char *mem, *snap, *writable;
    uint16_t *owners; /* tensors covering each byte (bit t) */
    unsigned char *outcount; /* how often an output element covers each byte */
    size_t bytes;
} fz_alloc;
typedef struct fz_tensor {
    int present;        /* passed as non-NULL */
    int used;           /* read or written by the computation */
    int is_output;
    int dt, rank;
    int64_t dims[NBWD_MAX_RANK], st[NBWD_MAX_RANK], lo, hi, count;
    int alloc;          /* index into allocs */
    unsigned char *base;
} fz_tensor;
typedef struct fz_world {
    fz_alloc a[FZ_MAXT + 2];
    int na;
    fz_tensor t[FZ_MAXT];
    int nt;
} fz_world;

static inline int fz_new_alloc(fz_world *w, size_t bytes) {
    fz_alloc *a = &w->a[w->na];
    a->bytes = bytes ? bytes : 1;
    a->mem = (unsigned char *)malloc(a->bytes);
    a->snap = (unsigned char *)malloc(a->bytes);
    a->writable = (unsigned char *)calloc(a->bytes, 1);
    a->owners = (uint16_t *)calloc(a->bytes, sizeof(uint16_t));
    a->outcount = (unsigned char *)calloc(a->bytes, 1);
    if (!a->mem || !a->snap || !a->writable || !a->owners || !a->outcount) FZ_FAIL("out of memory");
    memset(a->mem, FZ_CANARY, a->bytes);
    return w->na++;
}
static inline void fz_world_free(fz_world *w) {
    int i;
    for (i = 0; i < w->na; ++i) {
        free(w->a[i].mem); free(w->a[i].snap); free(w->a[i].writable); free(w->a[i].owners);
        free(w->a[i].outcount);
    }
    w->na = 0;
}

/* Sets t->count (FZ_CAP_ELEMS + 1 past the cap) and, for a present
   tensor, its extent [lo, hi); returns 0 where a present tensor is too big
   to allocate. */
static inline int fz_size_tensor(fz_tensor *t) {
    int k;
    t->count = 1;
    for (k = 0; k < t->rank; ++k)
        if (t->dims[k] == 0) t->count = 0;
    for (k = 0; k < t->rank && t->count > 0; ++k) {
        if (t->dims[k] > FZ_CAP_ELEMS || t->count * t->dims[k] > FZ_CAP_ELEMS) { t->count = FZ_CAP_ELEMS + 1; break; }
        t->count *= t->dims[k];
    }
    return !(t->present && (t->count > FZ_CAP_ELEMS || !fz_extent(t->rank, t->dims, t->st, FZ_CAP_ELEMS, &t->lo, &t->hi)));
}

/* What every call's status must agree with: the size query's error, args
   NULL, a workspace shorter than the query's, and a workspace that is
   O(problem) (a few MB here, never gigabytes). */
static inline void fz_check_status(nbwd_status s, nbwd_status sq, int args_null, const void *ws, size_t ws_bytes,
                                   size_t qbytes) {
    if (sq != NBWD_OK) FZ_ASSERT(s == sq, "workspace_size said %d, the call %d", (int)sq, (int)s);
    if (args_null) FZ_ASSERT(s != NBWD_OK, "accepted args NULL");
    if (ws && ws_bytes < qbytes) FZ_ASSERT(s != NBWD_OK, "accepted a workspace of %zu < %zu bytes", ws_bytes, qbytes);
    if (sq == NBWD_OK) FZ_ASSERT(qbytes <= ((size_t)1 << 26), "workspace of %zu bytes for a problem this small", qbytes);
}

/* Places tensor t: its own allocation, or (mode alias) inside tensor `of`'s
   allocation at `delta` elements from its base, when that fits and keeps
   the element alignment. */
static inline void fz_place(fz_world *w, int t, int alias_of, int64_t delta) {
    fz_tensor *x = &w->t[t];
    int64_t esz = (int64_t)fz_esz(x->dt);
    if (alias_of >= 0 && alias_of != t && w->t[alias_of].present && w->t[alias_of].base) {
        fz_tensor *o = &w->t[alias_of];
        fz_alloc *a = &w->a[o->alloc];
        unsigned char *base = o->base + delta * esz;
        if (base + x->lo * esz >= a->mem && base + x->hi * esz <= a->mem + a->bytes &&
            (uintptr_t)base % (uintptr_t)esz == 0) {
            x->alloc = o->alloc;
            x->base = base;
            return;
        }
    }
    x->alloc = fz_new_alloc(w, (size_t)((x->hi - x->lo) * esz));
    x->base = w->a[x->alloc].mem - x->lo * esz;
}

/* Marks t's element bytes: owners, and for outputs writable + outcount. */
static inline void fz_mark(fz_world *w, int t) {
    fz_tensor *x = &w->t[t];
    fz_alloc *a = &w->a[x->alloc];
    int64_t e, esz = (int64_t)fz_esz(x->dt), b;
    for (e = 0; e < x->count; ++e) {
        unsigned char *p = x->base + fz_offset(x->rank, x->dims, x->st, e) * esz;
        for (b = 0; b < esz; ++b) {
            size_t at = (size_t)(p + b - a->mem);
            if (x->used) a->owners[at] |= (uint16_t)(1u << t);
            if (x->is_output) { a->writable[at] = 1; if (a->outcount[at] < 255) a->outcount[at]++; }
        }
    }
}

static inline void fz_snapshot(fz_world *w) {
    int i;
    for (i = 0; i < w->na; ++i) memcpy(w->a[i].snap, w->a[i].mem, w->a[i].bytes);
}
/* The input's base in the snapshot (the values before the call). */
static inline const unsigned char *fz_snap_base(const fz_world *w, int t) {
    const fz_tensor *x = &w->t[t];
    const fz_alloc *a = &w->a[x->alloc];
    return a->snap + (x->base - a->mem);
}

/* Rejected: nothing written anywhere. Accepted: only output elements. */
static inline void fz_check_untouched(const fz_world *w, int accepted, const char *what) {
    int i;
    size_t b;
    for (i = 0; i < w->na; ++i)
        for (b = 0; b < w->a[i].bytes; ++b)
            if (w->a[i].mem[b] != w->a[i].snap[b] && !(accepted && w->a[i].writable[b]))
                FZ_FAIL("%s: byte %zu of allocation %d changed (%02x -> %02x) by a call that %s", what, b, i,
                        w->a[i].snap[b], w->a[i].mem[b], accepted ? "was accepted (not an output element)"
                                                                   : "was rejected");
}

/* An accepted call's outputs overlap nothing but themselves once, and an
   input only where allowed[t_out][t_in] (the exact in-place views). */
static inline void fz_check_overlap(const fz_world *w, unsigned char allowed[FZ_MAXT][FZ_MAXT], const char *what) {
    int i, t, u;
    size_t b;
    for (i = 0; i < w->na; ++i)
        for (b = 0; b < w->a[i].bytes; ++b) {
            uint16_t own = w->a[i].owners[b];
            if (w->a[i].outcount[b] > 1)
                FZ_FAIL("%s: accepted, but output elements share byte %zu of allocation %d", what, b, i);
            for (t = 0; t < w->nt; ++t) {
                if (!(own & (1u << t)) || !w->t[t].is_output) continue;
                for (u = 0; u < w->nt; ++u)
                    if (u != t && (own & (1u << u)) && !allowed[t][u])
                        FZ_FAIL("%s: accepted, but output %d overlaps tensor %d (allocation %d byte %zu)", what, t,
                                u, i, b);
            }
        }
}

/* Inputs the call does not read may overlap any output (they are not checked). */
static inline void fz_allow_unread(const fz_world *w, unsigned char allowed[FZ_MAXT][FZ_MAXT]) {
    int t, u;
    for (u = 0; u < w->nt; ++u)
        if (!w->t[u].is_output && !w->t[u].used)
            for (t = 0; t < w->nt; ++t) allowed[t][u] = 1;
}

/* Exact view: same base, same strides on dims of size > 1, same dtype. */
static inline int fz_same_view(const fz_tensor *a, const fz_tensor *b) {
    int d;
    if (a->base != b->base || a->dt != b->dt || a->rank != b->rank) return 0;
    for (d = 0; d < a->rank; ++d)
        if (a->dims[d] > 1 && a->st[d] != b->st[d]) return 0;
    return 1;
}

/* Fills an input's elements with uniform [lo, hi) values; with `special`
   one element may become NaN, +-Inf or (stats) negative. */
static inline int fz_fill(fz_world *w, int t, fz_rng *g, double lo, double hi, int special) {
    fz_tensor *x = &w->t[t];
    int64_t e;
    int injected = 0;
    for (e = 0; e < x->count; ++e)
        fz_store(x->base, x->dt, fz_offset(x->rank, x->dims, x->st, e), fz_unif(g, lo, hi));
    if (special && x->count > 0) {
        static const double sv[4] = {NAN, INFINITY, -INFINITY, -1.0};
        e = (int64_t)(fz_next(g) % (uint64_t)x->count);
        fz_store(x->base, x->dt, fz_offset(x->rank, x->dims, x->st, e), sv[special & 3]);
        injected = 1;
    }
    return injected;
}

#endif /* NBWD_FUZZ_COMMON_H */
