# A thin wrapper over CMake presets (see CMakePresets.json and CONTRIBUTING.md).
#   make run    install what is missing, build, run the main job on its embedded default
#   make demo-real  the same on real inference (omni-serve PD behind omni-proxy, scripts/demo-real.sh)
#   make test   install what is missing, build, run every test through CTest
#   make bench  build the `bench` preset and run the benchmarks (results in bench/results/)
#   make asan   build and run the unit tests under ASan + UBSan
#   make fuzz   build the libFuzzer targets (clang) and run each for FUZZ_SECONDS
#   make fmt    clang-format every source file;  make lint  clang-tidy on our sources
PRESET ?= dev
BUILD := build/$(PRESET)
JOBS ?= $(shell nproc)
FUZZ_SECONDS ?= 30
SOURCES = $(shell git ls-files '*.cpp' '*.hpp' '*.h' '*.cu' '*.cuh' 2>/dev/null)

.PHONY: all deps configure build test run demo-real bench asan fuzz fmt lint clean

all: build

deps:
	@scripts/install-deps.sh

configure: deps
	@cmake --preset $(PRESET) --log-level=WARNING

build: configure
	@cmake --build --preset $(PRESET)

test: build
	@ctest --preset $(PRESET) -j $(JOBS)

run: build
	@BUILD=$(BUILD) scripts/demo.sh

# Real inference behind the gateway: a tiny model on two omni-serve (PD) behind omni-proxy.
demo-real: build
	@BUILD=$(BUILD) scripts/demo-real.sh

bench: deps
	@cmake --preset bench --log-level=WARNING
	@cmake --build --preset bench
	@bench/run-all.sh build/bench

asan:
	@$(MAKE) --no-print-directory PRESET=asan build
	@ctest --preset asan-unit -j $(JOBS)

fuzz: deps
	@cmake --preset fuzz --log-level=WARNING
	@cmake --build --preset fuzz
	@# New inputs go to build/fuzz/new-corpus/<name> (libFuzzer writes into its first corpus
	@# folder); the checked-in corpus is only read. Merge worthwhile finds by hand with -merge=1.
	@# A target's folder may hold NAME.dict, a libFuzzer dictionary passed with -dict.
	@for f in build/fuzz/bin/fuzz_*; do \
	  name=$$(basename $$f); dir=fuzz/$${name#fuzz_}/corpus; new=build/fuzz/new-corpus/$$name; \
	  dict=fuzz/$${name#fuzz_}/$${name#fuzz_}.dict; dictflag=; [ -f $$dict ] && dictflag=-dict=$$dict; \
	  mkdir -p $$new; echo "== $$name ($(FUZZ_SECONDS)s)"; \
	  $$f -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 $$dictflag $$new $$dir || exit 1; \
	done

fmt:
	@clang-format -i $(SOURCES)

lint: configure
	@cmake --build --preset $(PRESET)
	@clang-tidy -p $(BUILD) --quiet $(filter %.cpp,$(filter src/% apps/%,$(SOURCES)))

clean:
	@rm -rf build
