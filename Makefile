# Grove's front door. `make demo` and `make test` work on a fresh Debian
# machine: they install what is missing, configure once, build and run.
#
#   make demo    build and run the flagship example (sparse_life: Game of Life
#                on a 16384^2 sparse grid), writing PNG frames to out/
#   make test    build everything and run the test suite with ctest
#   make bench   Release build in build-release, run the benchmarks,
#                writing out/bench.json and printing a table
#   make sanitize  the whole suite built with AddressSanitizer and
#                UndefinedBehaviorSanitizer (build-asan), on every backend
#   make tsan    the CPU backend's tests under ThreadSanitizer (build-tsan),
#                JIT-compiled kernels instrumented too
#   make fuzz    the libFuzzer targets of the IR text parser and verifier
#                and of the AOT module loader, built with clang
#                (build-fuzz), and the random-program differential
#                fuzzer (interp against cpu and Vulkan, in build/), for
#                FUZZ_SECONDS seconds each
#   make clean   remove build/, build-release/, build-asan/, build-tsan/,
#                build-fuzz/ and out/

JOBS ?= 2
BUILD_DIR := build
RELEASE_DIR := build-release
ASAN_DIR := build-asan
FUZZ_DIR := build-fuzz
TSAN_DIR := build-tsan
OUT_DIR := out
FUZZ_SECONDS ?= 60

.PHONY: all demo test bench sanitize tsan fuzz clean deps configure configure-release build format

all: build

deps:
	@scripts/install-deps.sh

# Configure only when the build directory has not been configured yet; after
# that, ninja re-runs cmake by itself whenever a CMakeLists.txt changes.
# build/ is optimised with line tables only (-g1: file and line in
# backtraces, perf and sanitizer reports), which compiles in two thirds of
# the time of full debug information; for a debugger session configure a
# directory of your own with -DCMAKE_BUILD_TYPE=RelWithDebInfo or Debug.
LINE_TABLES := -O2 -g1 -DNDEBUG
configure: deps
	@if [ ! -f $(BUILD_DIR)/build.ninja ]; then \
	  cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="$(LINE_TABLES)" -DCMAKE_C_FLAGS_RELWITHDEBINFO="$(LINE_TABLES)"; \
	fi

configure-release: deps
	@if [ ! -f $(RELEASE_DIR)/build.ninja ]; then \
	  cmake -S . -B $(RELEASE_DIR) -G Ninja -DCMAKE_BUILD_TYPE=Release \
	    -DGROVE_BUILD_TESTS=OFF; \
	fi

build: configure
	cmake --build $(BUILD_DIR) -j$(JOBS)

demo: configure
	cmake --build $(BUILD_DIR) --target sparse_life julia -j$(JOBS)
	$(BUILD_DIR)/examples/sparse_life/sparse_life --arch auto --out $(OUT_DIR)

test: build
	ctest --test-dir $(BUILD_DIR) --output-on-failure -j$(JOBS)

# The bench target runs grove_bench with --out_json=out/bench.json.
bench: configure-release
	cmake --build $(RELEASE_DIR) --target bench -j$(JOBS)

# Sanitizers: every test program, example and the tool, on the interpreter
# and on Vulkan (lavapipe). Mesa's own leaks are told apart from Grove's in
# tests/support/sanitizer_support.cpp; everything else stops the test. Left
# out: the reruns of the differential suites for other instruction sets
# (differential.cpu.x86-64-v2, differential.lavapipe.avx, ...), which run
# the same Grove code as the suites themselves and check the generated
# code's numbers, not memory. And Misuse.11's many kernels on Vulkan: the
# same scratch bookkeeping its interp and cpu runs check here, while its
# 96 pipelines cost lavapipe's LLVM, which allocates through ASan's malloc,
# about 100 s (make test runs it on lavapipe).
SANITIZE_EXCLUDE := ^differential\.(cpu|lavapipe)\.|Misuse\.11_ManyKernelsKeepingValuesDoNotExhaustAScratchBudget/vulkan
sanitize: deps
	@if [ ! -f $(ASAN_DIR)/build.ninja ]; then \
	  cmake -S . -B $(ASAN_DIR) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	    -DGROVE_SANITIZE=address,undefined -DGROVE_BUILD_BENCH=OFF; \
	fi
	cmake --build $(ASAN_DIR) -j$(JOBS)
	ASAN_OPTIONS=detect_stack_use_after_return=1:strict_string_checks=1 \
	  UBSAN_OPTIONS=print_stacktrace=1 \
	  ctest --test-dir $(ASAN_DIR) --output-on-failure -j$(JOBS) -E '$(SANITIZE_EXCLUDE)'

# ThreadSanitizer: every parameterised test on the CPU backend (the stress
# tests of tests/api/stress_test.cpp among them), its disk-cache tests, and
# a probe that checks that a race inside a kernel is reported (the LLVM
# code generator instruments JIT-compiled code in this build;
# src/llvm/codegen.h). No Vulkan: lavapipe's threads are Mesa's
# business. Left out: Misuse.07, whose kernel races on the list's values on
# purpose (appends against a deactivation of the same list) to check that
# the list's bookkeeping survives; ThreadSanitizer rightly reports the
# user's race. GROVE_CPU_THREADS=4 splits every
# parallel task over four threads whatever the machine's core count, so a
# race between two iterations of a test's kernel shows on any machine.
# Also left out, and not built here (GROVE_WITH_VDB=OFF): the VDB exchange
# tests, whose OpenVDB trees copy, voxelize and free themselves with
# oneTBB's parallel_for inside OpenVDB's headers; libtbb is not
# instrumented, so ThreadSanitizer sees its partitioner's hand-offs as
# races. Grove's part of them is CPU kernels like those of every other
# /cpu test here; make sanitize runs them.
TSAN_TESTS := /cpu|^Cpu|^DiskCache|^LlvmCodegen
TSAN_EXCLUDE := Misuse\.07_AppendsRacingADeactivation|^Backends/Vdb\.
tsan: deps
	@if [ ! -f $(TSAN_DIR)/build.ninja ]; then \
	  cmake -S . -B $(TSAN_DIR) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGROVE_SANITIZE=thread \
	    -DGROVE_WITH_VULKAN=OFF -DGROVE_WITH_VDB=OFF -DGROVE_BUILD_BENCH=OFF -DGROVE_BUILD_EXAMPLES=OFF; \
	fi
	cmake --build $(TSAN_DIR) -j$(JOBS)
	TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
	  ctest --test-dir $(TSAN_DIR) --output-on-failure -j$(JOBS) -R '$(TSAN_TESTS)' -E '$(TSAN_EXCLUDE)'

# The IR text fuzzer, seeded with every module of the IR tests, then the
# module loader's; a crash, a hang, a sanitizer report or a failed round
# trip leaves its input in $(FUZZ_DIR).
fuzz: deps
	@if [ ! -f $(FUZZ_DIR)/build.ninja ]; then \
	  CC=clang CXX=clang++ cmake -S . -B $(FUZZ_DIR) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	    -DGROVE_SANITIZE=address,undefined,fuzzer-no-link -DGROVE_FUZZ=ON -DGROVE_WITH_VULKAN=OFF -DGROVE_WITH_VDB=OFF \
	    -DGROVE_BUILD_TESTS=OFF -DGROVE_BUILD_BENCH=OFF -DGROVE_BUILD_EXAMPLES=OFF; \
	fi
	cmake --build $(FUZZ_DIR) --target grove_ir_fuzzer grove_make_corpus grove_module_fuzzer \
	  grove_make_module_corpus -j$(JOBS)
	rm -rf $(FUZZ_DIR)/corpus && $(FUZZ_DIR)/tests/fuzz/grove_make_corpus $(FUZZ_DIR)/corpus tests/ir/*.cpp
	cd $(FUZZ_DIR) && ./tests/fuzz/grove_ir_fuzzer -max_total_time=$(FUZZ_SECONDS) -max_len=4096 \
	  -print_final_stats=1 corpus
	rm -rf $(FUZZ_DIR)/module_corpus && $(FUZZ_DIR)/tests/fuzz/grove_make_module_corpus $(FUZZ_DIR)/module_corpus
	cd $(FUZZ_DIR) && ./tests/fuzz/grove_module_fuzzer -max_total_time=$(FUZZ_SECONDS) -max_len=65536 \
	  -timeout=10 -print_final_stats=1 module_corpus
	$(MAKE) configure
	cmake --build $(BUILD_DIR) --target grove_program_fuzzer -j$(JOBS)
	$(BUILD_DIR)/tests/grove_program_fuzzer --seconds $(FUZZ_SECONDS)

# Applies .clang-format to Grove's own sources.
format:
	git ls-files '*.h' '*.cpp' | xargs clang-format -i

clean:
	rm -rf $(BUILD_DIR) $(RELEASE_DIR) $(ASAN_DIR) $(TSAN_DIR) $(FUZZ_DIR) $(OUT_DIR)
