# Grove's front door. `make demo` and `make test` work on a fresh Debian
# machine: they install what is missing, configure once, build and run.
#
#   make demo    build and run the flagship example (sparse_life: Game of Life
#                on a 16384^2 sparse grid), writing PNG frames to out/
#   make test    build everything and run the test suite with ctest
#   make bench   Release build in build-release, run the benchmarks,
#                writing out/bench.json and printing a table
#   make clean   remove build/, build-release/ and out/

JOBS ?= 2
BUILD_DIR := build
RELEASE_DIR := build-release
OUT_DIR := out

.PHONY: all demo test bench clean deps configure configure-release build format

all: build

deps:
	@scripts/install-deps.sh

# Configure only when the build directory has not been configured yet; after
# that, ninja re-runs cmake by itself whenever a CMakeLists.txt changes.
configure: deps
	@if [ ! -f $(BUILD_DIR)/build.ninja ]; then \
	  cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo; \
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

# Applies .clang-format to Grove's own sources.
format:
	git ls-files '*.h' '*.cpp' | xargs clang-format -i

clean:
	rm -rf $(BUILD_DIR) $(RELEASE_DIR) $(OUT_DIR)
