# bench.mk - the benchmark (issue 4). Included by the main Makefile; also
# works alone: make -f bench.mk bench
#   make bench         install what is missing (as root: libdnnl-dev,
#                      gnuplot-nox; otherwise one line each and go on), build
#                      $(BUILD)/bench/nbwd_bench and run the default set:
#                      one table on stdout, plus $(BUILD)/bench/results.csv
#                      and results.png (when gnuplot is there)
#   make bench-build   build only (oneDNN columns only if dnnl.h is found)
#   make bench BENCH_ARGS='--quick --shapes ln:8192x1024'   other options
# Plain -O2 -fopenmp, no -march: the library picks its SIMD path at run time.
CC ?= cc
BUILD ?= build
BENCH_OUT = $(BUILD)/bench
BENCH_BIN = $(BENCH_OUT)/nbwd_bench
BENCH_CFLAGS ?= -std=c99 -O2 -fopenmp -Wall -Wextra -pedantic
BENCH_ARGS ?= --csv $(BENCH_OUT)/results.csv --plot $(BENCH_OUT)/results.png

# The oneDNN probe runs when the recipe runs (after a possible install).
BENCH_BUILD_CMD = mkdir -p $(BENCH_OUT) && \
	if printf '\#include <dnnl.h>\nint main(void){return 0;}\n' | $(CC) -x c -o /dev/null - -ldnnl >/dev/null 2>&1; \
	then bench_dnnl="-DNBWD_BENCH_ONEDNN"; bench_lib="-ldnnl"; \
	else bench_dnnl=""; bench_lib=""; echo "bench: dnnl.h not found, building without oneDNN"; fi; \
	if bench_rev=$$(git rev-parse --short HEAD 2>/dev/null); then \
	    git diff --quiet HEAD -- norm_bwd.h norm_bwd_simd.h || bench_rev="$$bench_rev+modified"; \
	else bench_rev=unknown; fi; \
	echo "$(CC) $(BENCH_CFLAGS) -I. bench/bench.c bench/onednn.c $$bench_dnnl -o $(BENCH_BIN) $$bench_lib -lm"; \
	$(CC) $(BENCH_CFLAGS) -I. -DNBWD_BENCH_REV="\"$$bench_rev\"" bench/bench.c bench/onednn.c $$bench_dnnl \
	    -o $(BENCH_BIN) $$bench_lib -lm

.PHONY: bench bench-build

bench-build:
	@$(BENCH_BUILD_CMD)

# PyTorch, where installed (Debian's python3-torch, which bench/deps.sh
# installs as root without its recommended packages), times its backward
# of the RMSNorm, LayerNorm and GroupNorm rows (GroupNorm has no oneDNN
# peer, nor has LayerNorm bf16 on a CPU without AVX-512):
# bench/torch_peer.py, after the table.
TORCH_GN_SHAPES = gn-ncx:16x320x64x64/32,gn-nxc:16x320x64x64/32,gn-ncx:16x128x128x128/32
TORCH_GN_SHAPES := $(TORCH_GN_SHAPES),gn-nxc:16x128x128x128/32,gn-ncx:8x64x128x128/64,gn-nxc:8x64x128x128/64
TORCH_PYTHON ?= $(shell test -x /usr/bin/python3 && echo /usr/bin/python3 || echo python3)
TORCH_ARGS ?= --shapes rms:32768x4096,rms:8192x1024,rms:64x4096,ln:32768x768,ln:8192x1024,ln:500000x24,ln:64x768,$(TORCH_GN_SHAPES) \
	--dtype f32,bf16 \
	--threads 1,$(shell nproc 2>/dev/null || echo 2)
bench:
	@CC="$(CC)" TORCH_PYTHON="$(TORCH_PYTHON)" sh bench/deps.sh
	@$(BENCH_BUILD_CMD)
	$(BENCH_BIN) $(BENCH_ARGS)
	@$(TORCH_PYTHON) bench/torch_peer.py $(TORCH_ARGS) || echo "torch_peer: failed (the table above stands)"

# A/B of the working tree against a git revision (default HEAD), in one
# process (bench/ab.c): `make bench-ab` first compares the bytes of every
# output (and status) over a broad sweep on every path both builds run:
# LayerNorm and RMSNorm (every form, DST_RSTD and gamma_offset, the residual,
# strides), BatchNorm (frozen statistics, fused ReLU and add + ReLU, reduce +
# apply, strides, the [N, C] tiles), GroupNorm/InstanceNorm (NCX, NXC, groups
# 1, 2, C/2, C, every form) and the bulk conversions per path; what the old
# revision lacks is skipped and counted. Differences are reported per path
# and dtype and per kind, and the target goes on. AB_BUILD picks the builds
# compared (tools/ab_ports.sh; default native):
#   native   this CPU's paths; also with a 16 KiB non-temporal threshold, so
#            the streaming stores are compared too
#   emu      NORM_BWD_SIMD_EMULATE: avx2, avx512, avx512_bf16 and neon
#            through SIMDe on any x86 (also with the 16 KiB threshold)
#   aarch64  qemu-aarch64, cpu max: scalar, sse (SIMDe), neon, neon_bf16
#   armhf    qemu-arm: scalar, neon
#   all      the four (the qemu builds take a quicker sweep; missing cross
#            tools are installed as root, else skipped in one line)
# With native among them it then runs AB_ARGS (default: the LayerNorm shapes,
# one thread, interleaved).
#   make bench-ab AB_OLD=HEAD~3 AB_ARGS='time --isa avx2 --dtype bf16'
#   make bench-ab AB_OLD=HEAD~3 AB_BUILD='native emu aarch64 armhf'
AB_OLD ?= HEAD
AB_ARGS ?= time
AB_BUILD ?= native
AB_OUT = $(BUILD)/ab
AB_CFLAGS = -std=c99 -O2 -fopenmp -fPIC -shared

.PHONY: bench-ab
bench-ab:
	@mkdir -p $(AB_OUT)/old
	@git show $(AB_OLD):norm_bwd.h > $(AB_OUT)/old/norm_bwd.h && git show $(AB_OLD):norm_bwd_simd.h > $(AB_OUT)/old/norm_bwd_simd.h
	-@CC="$(CC)" AB_OUT="$(AB_OUT)" AB_OLD_DIR="$(AB_OUT)/old" AB_CFLAGS="$(AB_CFLAGS)" sh tools/ab_ports.sh $(AB_BUILD)
	@case " $(AB_BUILD) " in *" native "*|*" all "*) \
	    echo "$(AB_OUT)/nbwd_ab $(AB_OUT)/old.so $(AB_OUT)/new.so $(AB_ARGS)"; \
	    $(AB_OUT)/nbwd_ab $(AB_OUT)/old.so $(AB_OUT)/new.so $(AB_ARGS);; esac

# How close diff_src comes to the exact gradient (bench/accuracy/): the
# library's paths, saved statistics and NBWD_STATS_NONE, beside llm.c's
# LayerNorm loop (built at -O2 and at its own -Ofast -march=native) and
# ggml's RMSNorm loop, and emulations of other ways to write dx, against
# the float64 gradient. Prints a table; bench/NOTES.md has the findings.
ACC_OUT = $(BUILD)/bench/accuracy
.PHONY: bench-accuracy
bench-accuracy:
	@mkdir -p $(ACC_OUT)
	$(CC) -std=c99 -O2 -ffp-contract=off -c bench/accuracy/engine_loops.c -o $(ACC_OUT)/loops_o2.o
	$(CC) -std=c99 -Ofast -march=native -DLOOP_SUFFIX=_ofast -c bench/accuracy/engine_loops.c -o $(ACC_OUT)/loops_ofast.o
	$(CC) -std=c99 -O2 -ffp-contract=off -Wall -Wextra -pedantic -I. bench/accuracy/dx_accuracy.c \
	    $(ACC_OUT)/loops_o2.o $(ACC_OUT)/loops_ofast.o -o $(ACC_OUT)/dx_accuracy -lm
	$(ACC_OUT)/dx_accuracy
