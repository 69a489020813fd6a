#!/bin/sh
# lease_kit.sh - on the build machine, before a lease of a GPU machine (the
# workplace's `device` tool; the machine there has no package registry):
# builds what tools/gpu_device_run.sh runs there and packs the CPU
# benchmark's shared libraries beside it, then prints the paths to carry.
#   tools/lease_kit.sh          the CUDA binaries (sm_90 only: the lent cards
#                               are Hopper) and nbwd_bench with oneDNN
#   GPU_ARCH=... tools/lease_kit.sh   other architectures (gpu.mk's variable)
# Outputs: build/gpu (test_gpu, bench_gpu, test_gpu_link), build/bench/nbwd_bench,
# build/lib (libdnnl.so.2 xz-compressed, libgomp, libOpenCL: about 7 MB).
set -eu
cd "$(dirname "$0")/.."
[ -d /usr/local/cuda/bin ] && PATH="$PATH:/usr/local/cuda/bin"
export PATH
make gpu GPU_ARCH="${GPU_ARCH:--gencode arch=compute_90,code=sm_90}"
make bench-build
mkdir -p build/lib
for lib in libdnnl.so.2 libgomp.so.1 libOpenCL.so.1; do
    path=$(ldd build/bench/nbwd_bench | sed -n "s/^[[:space:]]*$lib => \([^ ]*\).*/\1/p")
    [ -n "$path" ] || continue
    if [ "$lib" = libdnnl.so.2 ]; then xz -T2 -c "$path" > build/lib/$lib.xz; else cp "$path" build/lib/; fi
done
du -sh build/gpu build/bench/nbwd_bench build/lib
echo 'carry: ["build/gpu", "build/bench", "build/lib"]'
echo 'then: tools/gpu_device_run.sh (GPU checks), tools/gpu_device_run.sh cpu (the CPU tables)'
