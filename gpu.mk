# gpu.mk - the CUDA path of norm_bwd (norm_bwd_gpu.h). Included by the main
# Makefile (-include gpu.mk); also works alone: make -f gpu.mk gpu-check
#   gpu        build the CUDA tests and benchmark (sm_80 + sm_90); needs nvcc
#   test-gpu   run the CUDA tests (without a GPU: host-side checks only)
#   bench-gpu  run the benchmark (needs a GPU)
#   gpu-check  host-only C test of the stub (cc), and, when nvcc exists, a
#              compile + link of every .cu, each for one of the two
#              architectures (both covered, half the compile time of
#              `make gpu`), and a run of test_gpu and test_gpu_link (without
#              a GPU: their host-side checks)
NVCC ?= $(shell command -v nvcc 2>/dev/null || { test -x /usr/local/cuda/bin/nvcc && echo /usr/local/cuda/bin/nvcc; })
BUILD ?= build
GPU_CC ?= cc
GPU_DIR := $(BUILD)/gpu
GPU_ARCH ?= -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90
GPU_NVFLAGS_BASE ?= -O2 -std=c++17 -Xcompiler -Wall,-Wextra -Werror all-warnings
GPU_NVFLAGS ?= $(GPU_NVFLAGS_BASE) $(GPU_ARCH)
GPU_CHECK_DIR := $(BUILD)/gpu-check
GPU_HOST_CFLAGS ?= -std=c99 -O1 -Wall -Wextra -pedantic -Werror
GPU_DEPS := norm_bwd.h norm_bwd_gpu.h
# Where libcudart lives, asked of nvcc itself: nvcc may be a wrapper script
# or symlink outside the toolkit (e.g. /usr/local/bin/nvcc), so a path
# relative to it is not reliable. Lazy (=): only run when a rule needs it.
CUDA_LIBDIR ?= $(or $(shell $(NVCC) --dryrun -x cu -o /dev/null /dev/null 2>&1 | sed -n 's/.*LIBRARIES=.*"-L\([^"]*\/lib\)".*/\1/p' | head -n 1),$(dir $(realpath $(NVCC)))../lib64)

.PHONY: gpu test-gpu bench-gpu gpu-check gpu-nvcc gpu-check-nvcc

$(GPU_DIR) $(GPU_CHECK_DIR):
	mkdir -p $@

# gpu-check's builds: every file holds the whole implementation, so each
# architecture sees every kernel once. test_gpu carries sm_80's PTX too:
# it runs (host-side checks, or all of it) on any GPU from sm_80 up.
$(GPU_CHECK_DIR)/test_gpu: tests/gpu/test_gpu.cu tests/gpu/gpu_cases.h $(GPU_DEPS) | $(GPU_CHECK_DIR)
	$(NVCC) $(GPU_NVFLAGS_BASE) -gencode arch=compute_80,code=[sm_80,compute_80] -o $@ $<
$(GPU_CHECK_DIR)/bench_gpu: bench/gpu/bench_gpu.cu $(GPU_DEPS) | $(GPU_CHECK_DIR)
	$(NVCC) $(GPU_NVFLAGS_BASE) -gencode arch=compute_90,code=sm_90 -o $@ $<
$(GPU_CHECK_DIR)/gpu_impl.o: tests/gpu/gpu_impl.cu $(GPU_DEPS) | $(GPU_CHECK_DIR)
	$(NVCC) $(GPU_NVFLAGS_BASE) -gencode arch=compute_90,code=sm_90 -c -o $@ $<
$(GPU_CHECK_DIR)/test_gpu_link: tests/gpu/test_gpu_link.c $(GPU_CHECK_DIR)/gpu_impl.o $(GPU_DEPS) | $(GPU_CHECK_DIR)
	$(GPU_CC) $(GPU_HOST_CFLAGS) -o $@ $< $(GPU_CHECK_DIR)/gpu_impl.o -L$(CUDA_LIBDIR) -Wl,-rpath,$(CUDA_LIBDIR) -lcudart -lstdc++ -lm

$(GPU_DIR)/test_gpu: tests/gpu/test_gpu.cu tests/gpu/gpu_cases.h $(GPU_DEPS) | $(GPU_DIR)
	$(NVCC) $(GPU_NVFLAGS) -o $@ $<

$(GPU_DIR)/bench_gpu: bench/gpu/bench_gpu.cu $(GPU_DEPS) | $(GPU_DIR)
	$(NVCC) $(GPU_NVFLAGS) -o $@ $<

# The implementation alone with its private copy of norm_bwd.h, linked by
# the C compiler next to a C program that has the CPU implementation.
$(GPU_DIR)/gpu_impl.o: tests/gpu/gpu_impl.cu $(GPU_DEPS) | $(GPU_DIR)
	$(NVCC) $(GPU_NVFLAGS) -c -o $@ $<

$(GPU_DIR)/test_gpu_link: tests/gpu/test_gpu_link.c $(GPU_DIR)/gpu_impl.o $(GPU_DEPS) | $(GPU_DIR)
	$(GPU_CC) $(GPU_HOST_CFLAGS) -o $@ $< $(GPU_DIR)/gpu_impl.o -L$(CUDA_LIBDIR) -Wl,-rpath,$(CUDA_LIBDIR) -lcudart -lstdc++ -lm

$(GPU_DIR)/test_gpu_host: tests/gpu/test_gpu_host.c tests/gpu/gpu_cases.h $(GPU_DEPS) | $(GPU_DIR)
	$(GPU_CC) $(GPU_HOST_CFLAGS) -o $@ $< -lm

ifeq ($(strip $(NVCC)),)
gpu gpu-nvcc:
	@echo "gpu: nvcc not found (set NVCC=...)"; exit 1
else
gpu gpu-nvcc: $(GPU_DIR)/test_gpu $(GPU_DIR)/bench_gpu $(GPU_DIR)/test_gpu_link
endif

test-gpu: gpu
	$(GPU_DIR)/test_gpu
	$(GPU_DIR)/test_gpu_link

bench-gpu: gpu
	$(GPU_DIR)/bench_gpu

gpu-check: $(GPU_DIR)/test_gpu_host
	$(GPU_DIR)/test_gpu_host
ifneq ($(strip $(NVCC)),)
gpu-check: gpu-check-nvcc
gpu-check-nvcc: $(GPU_CHECK_DIR)/test_gpu $(GPU_CHECK_DIR)/bench_gpu $(GPU_CHECK_DIR)/test_gpu_link
	$(GPU_CHECK_DIR)/test_gpu
	$(GPU_CHECK_DIR)/test_gpu_link
else
	@echo "gpu-check: nvcc not found: CUDA compile check skipped"
endif
