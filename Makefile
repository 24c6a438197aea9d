# Convenience wrapper around CMake for people who just want it to work.
#   make demo   install dependencies, build, run the demo (writes arbiter-demo/report.txt)
#   make test   install dependencies, build normal + sanitizer builds, run all tests (unit, e2e,
#               browser tests in headless Chromium) + short fuzz
#   make fuzz   longer fuzzing runs (FUZZ_SECONDS each, default 300)
#   make valgrind  unit tests and the demo under valgrind (leaks, invalid accesses)
#   make bench  throughput benchmark against the Python way (see bench/README.md)
#   make bench-rank  Bradley-Terry with bootstrap on 2M battles against the arena notebooks
#   make bench-endpoints  calls/s one arbiter process drives across 1 vs 4 simulator endpoints
#   make bench-scale  sbs, rerun, audit, report, export at 100,000 and 500,000 items, side by side
#               with the previous release built from git (BASE=ref, SIZES="N...", STEPS=, KEEP=1)
JOBS ?= $(shell nproc)
FUZZ_SECONDS ?= 300
SHORT_FUZZ_SECONDS ?= 15

.PHONY: valgrind all deps browser-deps build build-asan build-fuzz test test-release test-asan fuzz-short fuzz demo bench bench-rank bench-endpoints bench-scale clean

all: build

deps:
	@bash scripts/install-deps.sh

# Chromium, Node.js and playwright-core for tests/browser (not needed by `make demo`).
browser-deps: deps
	@ARB_BROWSER_DEPS=1 bash scripts/install-deps.sh

build: deps
	cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	cmake --build build -j $(JOBS)

build-asan: deps
	cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DARB_SANITIZE=ON >/dev/null
	cmake --build build-asan -j $(JOBS)

build-fuzz: deps
	CC=clang cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DARB_FUZZ=ON -DARB_TESTS=OFF >/dev/null
	cmake --build build-fuzz -j $(JOBS)

# ARB_BROWSER_REQUIRED=1: the browser tests fail, rather than skip, if their dependencies are missing.
test-release: build browser-deps
	cd build && ARB_BROWSER_REQUIRED=1 ctest --output-on-failure -j $(JOBS)

test-asan: build-asan browser-deps
	cd build-asan && ARB_BROWSER_REQUIRED=1 ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  ctest --output-on-failure -j $(JOBS)

fuzz-short: build-fuzz
	FUZZ_SECONDS=$(SHORT_FUZZ_SECONDS) bash scripts/fuzz.sh build-fuzz

fuzz: build-fuzz
	FUZZ_SECONDS=$(FUZZ_SECONDS) bash scripts/fuzz.sh build-fuzz

test: test-release test-asan fuzz-short
	@echo "all test stages passed (release, sanitizers, fuzz)"

VALGRIND = valgrind --error-exitcode=9 --leak-check=full --errors-for-leak-kinds=definite -q
valgrind: build
	command -v valgrind >/dev/null || apt-get install -y -qq valgrind
	for t in build/test_*; do echo "valgrind $$t"; ARB_TIME_SCALE=20 $(VALGRIND) $$t >/dev/null || exit 1; done
	rm -rf build/valgrind-demo && $(VALGRIND) ./build/arbiter demo --out build/valgrind-demo --jobs 8 >/dev/null
	@echo "valgrind: clean"

demo: build
	./build/arbiter demo --out arbiter-demo

bench: build
	ARB_BENCH_DEPS=1 bash scripts/install-deps.sh
	bash bench/run.sh

bench-rank: build
	ARB_BENCH_DEPS=1 bash scripts/install-deps.sh
	bash bench/run_rank.sh

bench-endpoints: build
	bash bench/run_endpoints.sh

# Not part of `make test`: about 50 min and 10 GB of disk at the default sizes (see bench/README.md).
SIZES ?= 100000 500000
bench-scale: build
	bash bench/run_scale.sh $(SIZES)

clean:
	rm -rf build build-asan build-fuzz arbiter-demo
