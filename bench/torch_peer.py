#!/usr/bin/env python3
"""torch_peer.py - PyTorch's CPU backward of RMSNorm, LayerNorm and GroupNorm,
timed on the shapes nbwd_bench runs, for its peer column.

RMSNorm: Debian's PyTorch 1.13 has no nn.RMSNorm, so the forward is the
expression every LLaMA-family model writes, x * rsqrt(mean(x^2) + eps) * w,
and autograd builds its backward (what such a model's training runs).
LayerNorm: torch.nn.functional.layer_norm, whose backward is one native
kernel. GroupNorm (gn-ncx:NxCxHxW/G, gn-nxc:...; InstanceNorm is G = C):
torch.nn.functional.group_norm, whose backward is aten's
native_group_norm_backward; gn-nxc gives it channels_last tensors (x, dy,
and so dx). PyTorch 1.13's derivative formula makes dy and x contiguous
(NCHW copies) before that kernel, which takes contiguous tensors only (given
channels_last ones directly it returns wrong values), and autograd then
copies dx back to channels_last: that is PyTorch 1.13's channels-last
GroupNorm backward, and what is timed. Only the backward is timed: the forward graph is built once and
y.backward(dy, retain_graph=True) runs per repetition, with x.grad and
w.grad (and b.grad) reset to None before each (as an optimizer's zero_grad
does), so each run writes dx, dgamma (and dbeta); freed memory is kept
for reuse (glibc's mmap threshold raised) so that no run faults in fresh
pages, as nbwd_bench's outputs are touched before it times them.

usage: torch_peer.py --shapes rms:32768x4096,ln:8192x1024,gn-nxc:16x320x64x64/32 --dtype f32,bf16 --threads 1,2
Prints one line per case: op shape dtype threads median_ms (or why not).
"""
import argparse
import os
import sys
import time


def parse_shapes(text):
    out = []
    for tok in text.split(","):
        kind, _, dims = tok.partition(":")
        if not dims:
            kind, dims = "ln", kind
        if kind in ("gn-ncx", "gn-nxc"):  # N, C, spatial... / groups
            dims, _, groups = dims.partition("/")
            vals = [int(v) for v in dims.lower().split("x")]
            out.append((kind, vals, int(groups)))
            continue
        if kind not in ("ln", "rms"):
            continue  # BatchNorm: oneDNN is its peer
        vals = [int(v) for v in dims.lower().split("x")]
        rows = 1
        for v in vals[:-1]:
            rows *= v
        out.append((kind, rows, vals[-1]))
    return out


def gn_label(kind, dims, groups):
    """nbwd_bench's row label: GN (IN when groups = C), layout, shape (/G unless IN)"""
    shape = "x".join(str(v) for v in dims)
    if groups != dims[1]:
        shape += "/%d" % groups
    return "%s %s %s" % ("IN" if groups == dims[1] else "GN", "NXC" if kind == "gn-nxc" else "NCX", shape)


def time_backward(torch, kind, rows, cols, dtype, reps_min=5, budget=1.0):
    """rows, cols: LayerNorm's and RMSNorm's; GroupNorm's dims and groups"""
    gen = torch.Generator().manual_seed(1)
    shape = tuple(rows) if kind.startswith("gn") else (rows, cols)
    chans = rows[1] if kind.startswith("gn") else cols
    fmt = torch.channels_last if kind == "gn-nxc" and len(shape) == 4 else \
        torch.channels_last_3d if kind == "gn-nxc" and len(shape) == 5 else torch.contiguous_format
    if kind == "gn-nxc" and len(shape) not in (4, 5):
        raise ValueError("channels_last needs 2 or 3 spatial dims")
    x = (torch.rand(shape, generator=gen) * 3.4 - 1.7).to(dtype).contiguous(memory_format=fmt).requires_grad_()
    w = (torch.rand(chans, generator=gen) + 0.5).to(dtype).requires_grad_()
    b = (torch.rand(chans, generator=gen) - 0.5).to(dtype).requires_grad_()
    dy = (torch.rand(shape, generator=gen) * 2 - 1).to(dtype).contiguous(memory_format=fmt)
    if kind.startswith("gn"):
        y = torch.nn.functional.group_norm(x, cols, w, b, 1e-5)
        params = (x, w, b)
    elif kind == "rms":  # LLaMA's RMSNorm: statistics in f32, the product back in the data type
        h = x.float()
        y = w * (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-5)).to(dtype)
        params = (x, w)
    else:
        y = torch.nn.functional.layer_norm(x, (cols,), w, b, 1e-5)
        params = (x, w, b)

    def once():
        for p in params:
            p.grad = None
        t0 = time.perf_counter()
        y.backward(dy, retain_graph=True)
        return time.perf_counter() - t0

    first = once()
    once()
    reps = max(reps_min, min(2000, int(budget / max(first, 1e-6))))
    samples = sorted(once() for _ in range(reps))
    return samples[len(samples) // 2]


def main():
    # PyTorch's CPU tensors come from malloc: glibc maps blocks of 32 MiB and
    # more afresh each time, so every call would fault in its outputs page
    # by page (nbwd_bench writes into buffers touched before it times). Keep
    # freed memory for reuse instead (glibc reads these at start: re-exec).
    if os.environ.get("MALLOC_MMAP_THRESHOLD_") is None:
        os.environ["MALLOC_MMAP_THRESHOLD_"] = str(1 << 40)
        os.environ["MALLOC_TRIM_THRESHOLD_"] = str(1 << 40)
        os.execv(sys.executable, [sys.executable] + sys.argv)
    ap = argparse.ArgumentParser()
    ap.add_argument("--shapes", required=True)
    ap.add_argument("--dtype", default="f32,bf16")
    ap.add_argument("--threads", default="1")
    args = ap.parse_args()
    try:
        import torch
    except ImportError:
        print("torch_peer: PyTorch is not installed (Debian: apt-get install python3-torch)")
        return 0
    dtypes = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}
    print("torch_peer: PyTorch %s, backward only (dx, dgamma[, dbeta]); median of the timed runs" % torch.__version__)
    for kind, rows, cols in parse_shapes(args.shapes):
        for dt in args.dtype.split(","):
            for thr in args.threads.split(","):
                torch.set_num_threads(int(thr))
                if kind.startswith("gn"):
                    label = "%s %s %s" % (gn_label(kind, rows, cols), dt, thr)
                else:
                    label = "%s %dx%d %s %s" % ("RMS" if kind == "rms" else "LN", rows, cols, dt, thr)
                try:
                    ms = time_backward(torch, kind, rows, cols, dtypes[dt]) * 1e3
                    print("torch_peer: %s %.3f" % (label, ms))
                except Exception as e:  # an unsupported dtype on this build: say so, go on
                    print("torch_peer: %s n/a (%s)" % (label, str(e).splitlines()[0][:80]))
                sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
