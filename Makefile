# norm_bwd - header-only normalization backward kernels.
#   make test          the test suite on all CPU paths (native and
#                      emulated), the AArch64 build under qemu, the compile
#                      matrix's core builds (make compile-check: all of the
#                      matrix), check-isa, compile-gate, the examples, the
#                      packaging and MPI; no compile time is checked
#                      (hardening, sanitizers, fuzzing, ports: .ci/run)
#   make examples      build examples/*.c (cc -O2, NO_SIMD but for
#                      quickstart.c; clang -O0 -fopenmp, every path;
#                      C++11 syntax), run each on the automatic and the scalar
#                      path against examples/NAME.expected; check that the
#                      README's example block is examples/quickstart.c
#   make check-packaging  CMake (add_subdirectory, cmake --install +
#                      find_package, with and without norm_bwd::openmp) and
#                      pkg-config (norm_bwd, norm_bwd-openmp) with
#                      tests/cmake_consumer
#   make test-ports    the suite on i386 (gcc -m32: x87 and SSE2 math, every
#                      x86 path), armhf (qemu-arm: neon, scalar),
#                      big-endian s390x (qemu, -std=c99 and gnu11),
#                      wasm32-wasi -msimd128 (node), Windows (MinGW-w64
#                      under wine; clang-cl and the MSVC branch compiled)
#                      and built by tcc (NORM_BWD_NO_SIMD)
#                      (tools/test_ports.sh; run by .ci/run)
#   make compile-gate  the implementation file's peak compiler memory,
#                      .text and largest function with gcc and clang,
#                      against the compile budget (make test runs it)
#   make compile-cost  the same, and the compile times, against the whole
#                      budget: a measurement, by hand (not in make test)
#   make bench         the benchmark (bench.mk), side by side with oneDNN
#   make test-mpi      examples/sync_batch_norm.c on mpirun -np 2, 3 (mpi.mk)
#   make install PREFIX=/usr/local   headers + pkg-config files (norm_bwd.pc,
#                      norm_bwd-openmp.pc); GPU_HEADER=1 adds norm_bwd_gpu.h
#                      (opt-in: it needs nvcc); DESTDIR for staging. CMake:
#                      cmake -S . -B b && cmake --install b (CMakeLists.txt)
#   make clean
# Missing Debian packages are installed with apt-get when run as root;
# otherwise the build stops with one line naming the package. The
# exceptions: without the AArch64 cross tools and qemu, or Open MPI (not
# root), `make test` says in one line what it skips and runs everything else.

CC      ?= cc
BUILD   ?= build
PREFIX  ?= /usr/local
OPT     ?= -O2
WARN     = -Wall -Wextra -pedantic -Werror
HEADERS  = norm_bwd.h norm_bwd_simd.h
TEST_SRC = tests/impl.c tests/main.c tests/reference.c $(sort $(wildcard tests/test_*.c))
TEST_DEP = $(TEST_SRC) $(wildcard tests/*.h) $(HEADERS)
# Tensors from 16 KiB up take the non-temporal-store path in the tests (the
# library's default threshold is 8 MiB), so both store paths are checked.
# GroupNorm NXC batches from 4 KiB of x and dy up are done in chunks of
# samples (the library's default: from 32 MiB), so both orders are checked.
GN_CHUNK_DEFS = -DNBWD__GN_CHUNKED_BYTES=4096 -DNBWD__GN_RESIDENT_BYTES=8192
TEST_DEFS = -DNORM_BWD_STREAM_BYTES=16384 $(GN_CHUNK_DEFS)
NEED     = tools/need.sh
# the test binaries build side by side (each is one long compile)
TEST_JOBS ?= $(shell nproc 2>/dev/null || echo 2)
AARCH64_CC = aarch64-linux-gnu-gcc
GPU_HEADER ?= 0
# the header's version (NBWD_VERSION_MAJOR.MINOR[.PATCH]) for the .pc files
NBWD_VERSION = $(shell awk '/^.define NBWD_VERSION_(MAJOR|MINOR|PATCH) /{ v[$$2] = $$3 } END { printf "%d.%d.%d", v["NBWD_VERSION_MAJOR"], v["NBWD_VERSION_MINOR"], v["NBWD_VERSION_PATCH"] }' norm_bwd.h)

.PHONY: all test test-quick deps compile-deps aarch64-deps test-native test-emulated test-neon compile-check check-isa compile-gate compile-cost install clean
.PHONY: examples check-packaging packaging-deps test-ports

all: $(BUILD)/nbwd_tests

deps:
	@$(NEED) libsimde-dev 'test -f /usr/include/simde/x86/sse2.h'

# The compile matrix (tools/compile_check.sh): g++, clang and clang++, and
# clang's OpenMP (omp.h and libomp.so are in libomp-dev, which clang does not pull in).
compile-deps: deps
	@$(NEED) g++ 'command -v g++'
	@$(NEED) clang 'command -v clang && command -v clang++'
	@$(NEED) libomp-dev 'test -f "$$(clang -print-resource-dir)/include/omp.h" && ls /usr/lib/llvm-*/lib/libomp.so'
	@$(NEED) time 'test -x /usr/bin/time'
	@$(NEED) xz-utils 'command -v xz'

# make check-packaging: cmake and pkg-config.
packaging-deps:
	@$(NEED) cmake 'command -v cmake'
	@$(NEED) pkg-config 'command -v pkg-config'

# The AArch64 build and its qemu runs (libgomp1-arm64-cross: the -fopenmp build).
AARCH64_PKGS = gcc-aarch64-linux-gnu qemu-user libgomp1-arm64-cross
aarch64-deps:
	@$(NEED) gcc-aarch64-linux-gnu 'command -v $(AARCH64_CC)'
	@$(NEED) qemu-user 'command -v qemu-aarch64'
	@$(NEED) libgomp1-arm64-cross 'test -e /usr/aarch64-linux-gnu/lib/libgomp.so.1'

# The test binary, native paths (scalar, sse, avx2 here; avx512 where the CPU has it).
$(BUILD)/nbwd_tests: $(TEST_DEP) | deps
	@mkdir -p $(BUILD)
	$(CC) -std=c99 $(OPT) $(WARN) $(TEST_DEFS) -fopenmp -Itests -I. $(TEST_SRC) -o $@ -lm

# The same tests in GNU C (gcc's default dialect, whose default floating-point
# contraction fuses a multiply and an add into an FMA wherever it sees fit):
# run_tests.sh runs the determinism suite on the FMA paths with it. Built
# without the sse layer (NORM_BWD_NO_SSE), whose absence must leave avx2's
# partial vectors intact: the bounds suite runs on its avx2 path too.
$(BUILD)/nbwd_tests_gnu: $(TEST_DEP) | deps
	@mkdir -p $(BUILD)
	$(CC) -std=gnu11 $(OPT) $(WARN) $(TEST_DEFS) -DNORM_BWD_NO_SSE -fopenmp -Itests -I. $(TEST_SRC) -o $@ -lm

# The same tests with the avx2, avx512 and neon layers emulated by SIMDe
# (it runs avx512, avx512_bf16 and neon; without the sse layer, which the
# native build runs and whose emulated copy was a sixth of this compile).
$(BUILD)/nbwd_tests_emu: $(TEST_DEP) | deps
	@mkdir -p $(BUILD)
	$(CC) -std=c99 $(OPT) $(WARN) $(TEST_DEFS) -Wno-psabi -fopenmp -DNORM_BWD_SIMD_EMULATE -DNORM_BWD_NO_SSE -Itests -I. $(TEST_SRC) -o $@ -lm

# AArch64 builds (native NEON), run under qemu-aarch64.
$(BUILD)/nbwd_tests_a64: $(TEST_DEP)
	@mkdir -p $(BUILD)
	$(AARCH64_CC) -std=c99 $(OPT) $(WARN) $(TEST_DEFS) -Itests -I. $(TEST_SRC) -o $@ -lm
# (the OpenMP build in GNU C: on AArch64 every path, scalar too, may contract)
$(BUILD)/nbwd_tests_a64_omp: $(TEST_DEP)
	@mkdir -p $(BUILD)
	$(AARCH64_CC) -std=gnu11 $(OPT) $(WARN) $(TEST_DEFS) -fopenmp -Itests -I. $(TEST_SRC) -o $@ -lm

# Without the AArch64 tools (and not root) one line says the qemu runs are
# skipped, and everything else runs (AARCH64=0 tells run_tests.sh).
test: compile-deps packaging-deps
	@if NEED_SKIPPING="the AArch64 (qemu) runs are skipped (they need: $(AARCH64_PKGS))" \
	    $(MAKE) --no-print-directory -s aarch64-deps 2>/dev/null; then a64=1; else a64=0; fi; \
	 bins="$(BUILD)/nbwd_tests $(BUILD)/nbwd_tests_emu $(BUILD)/nbwd_tests_gnu"; \
	 if [ $$a64 = 1 ]; then bins="$$bins $(BUILD)/nbwd_tests_a64 $(BUILD)/nbwd_tests_a64_omp"; fi; \
	 $(MAKE) --no-print-directory -j$(TEST_JOBS) $$bins && \
	 BUILD=$(BUILD) CC=$(CC) AARCH64=$$a64 tools/run_tests.sh all

test-quick: $(BUILD)/nbwd_tests $(BUILD)/nbwd_tests_gnu
	@BUILD=$(BUILD) tools/run_tests.sh quick

test-native: $(BUILD)/nbwd_tests $(BUILD)/nbwd_tests_gnu
	@BUILD=$(BUILD) tools/run_tests.sh native

test-emulated: $(BUILD)/nbwd_tests_emu
	@BUILD=$(BUILD) tools/run_tests.sh emulated

test-neon: deps aarch64-deps
	@$(MAKE) --no-print-directory $(BUILD)/nbwd_tests_a64 $(BUILD)/nbwd_tests_a64_omp
	@BUILD=$(BUILD) tools/run_tests.sh neon

# The header as C99 and C++11, gcc and clang, -O0/-O2, with/without OpenMP,
# two translation units, the README example. `make test` runs its core
# builds (MATRIX=core), .ci/run the others after it (MATRIX=rest), this
# target all of them.
MATRIX ?= full
compile-check: compile-deps
	@BUILD=$(BUILD) MATRIX=$(MATRIX) tools/compile_check.sh

# What the implementation file costs to compile (gcc, clang; -O2, -O0, -O0
# -g), against its budget (tools/compile_cost.sh, whose head states it).
# compile-gate: only what no load moves (peak compiler memory, with a margin
# for allocator noise; .text; the largest function), one build each, no
# timing; make test runs it. compile-cost: the same checks and the CPU times,
# scaled by a yardstick built beside them; VM neighbours move the times by
# 5-20 %, so it is run by hand on a quiet machine, not by make test.
compile-gate: compile-deps
	@BUILD=$(BUILD) tools/compile_cost.sh --gate

compile-cost: compile-deps
	@BUILD=$(BUILD) tools/compile_cost.sh

# The examples as a user builds them (cc -O2, all but quickstart.c
# with NORM_BWD_NO_SIMD; clang -O0 -fopenmp with every path; C++11
# syntax), each run's output against examples/NAME.expected; then the
# README's example block against examples/quickstart.c (tools/check_examples.sh).
examples: compile-deps
	@BUILD=$(BUILD) CC=$(CC) tools/check_examples.sh; a=$$?; \
	 BUILD=$(BUILD) tools/check_examples.sh readme && exit $$a

# Other targets: i386, armhf, s390x, wasm32, Windows (MinGW-w64 under wine),
# tcc (tools/test_ports.sh installs
# what it needs as root, else says what it skips).
test-ports: deps
	@BUILD=$(BUILD) tools/test_ports.sh

# CMake (add_subdirectory; cmake --install + find_package) and pkg-config
# (make install into $(BUILD)/packaging), each with and without OpenMP,
# through tests/cmake_consumer (tools/check_packaging.sh).
check-packaging: compile-deps packaging-deps
	@BUILD=$(BUILD) CC=$(CC) tools/check_packaging.sh

# objdump proof that a plain -O2 build carries real AVX2 and AVX-512 code.
check-isa: deps
	@BUILD=$(BUILD) CC=$(CC) tools/check_isa.sh

# The headers and the pkg-config files; norm_bwd_gpu.h only with GPU_HEADER=1
# (opt-in: the CUDA path needs nvcc).
install:
	install -d $(DESTDIR)$(PREFIX)/include $(DESTDIR)$(PREFIX)/lib/pkgconfig
	install -m 644 norm_bwd.h norm_bwd_simd.h $(DESTDIR)$(PREFIX)/include/
	if [ "$(GPU_HEADER)" = 1 ]; then install -m 644 norm_bwd_gpu.h $(DESTDIR)$(PREFIX)/include/; fi
	for pc in norm_bwd norm_bwd-openmp; do \
	    sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@INCLUDEDIR@|$${prefix}/include|' -e 's|@VERSION@|$(NBWD_VERSION)|' \
	        tools/$$pc.pc.in > $(DESTDIR)$(PREFIX)/lib/pkgconfig/$$pc.pc || exit 1; \
	done

clean:
	rm -rf $(BUILD)

-include bench.mk
-include gpu.mk
-include mpi.mk
-include hardening.mk
