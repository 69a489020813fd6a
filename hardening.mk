# hardening.mk - sanitizers, valgrind, fuzzing and the hardening tests
# (issue 6); included by the Makefile. Everything is driven by
# tools/sanitize.sh, which builds into $(BUILD)/hardening and $(BUILD)/fuzz
# and ends with one "N passed, N failed" line.
#   make test-sanitize      ASan+UBSan (gcc, clang) main suite + hardening test
#                           (the SIMDe-emulated layers under clang only), TSan
#                           (clang, no OpenMP) threads; SANITIZE_FULL=1: clang's
#                           main suite without --quick too
#   make test-valgrind      memcheck, --quick, scalar and avx2
#   make fuzz               each libFuzzer target FUZZ_SECONDS (default 60) s
#   make test-hardening     NaN policy, threads, nested OpenMP, overflow
#                           statuses (native + emulated avx2, avx512,
#                           avx512_bf16, neon; AArch64 neon/neon_bf16 under
#                           qemu when the cross tools are there); HUGE=1 adds
#                           the 2^31 + 7 element LayerNorm (about 14 GB)
BUILD        ?= build
FUZZ_SECONDS ?= 60
HUGE         ?= 0
SANITIZE_FULL ?= 0

.PHONY: test-sanitize test-valgrind fuzz test-hardening

test-sanitize:
	@BUILD=$(BUILD) SANITIZE_FULL=$(SANITIZE_FULL) tools/sanitize.sh sanitize

test-valgrind:
	@BUILD=$(BUILD) tools/sanitize.sh valgrind

fuzz:
	@BUILD=$(BUILD) FUZZ_SECONDS=$(FUZZ_SECONDS) tools/sanitize.sh fuzz

test-hardening:
	@BUILD=$(BUILD) CC=$(CC) HUGE=$(HUGE) tools/sanitize.sh hardening
