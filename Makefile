# The two set-up commands: `make demo` and `make test` (see README.md).
# Both install missing Debian packages, configure and build first.
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

PYTHON ?= /usr/bin/python3

.PHONY: all deps deps-build configure configure-build build test test-asan demo bench testbed format clean python-wheel

all: build

deps:
	@bash scripts/install-deps.sh all

deps-build:
	@bash scripts/install-deps.sh build

$(BUILD)/build.ninja: CMakeLists.txt
	cmake -S . -B $(BUILD) -G Ninja $(CMAKE_FLAGS)

configure: deps $(BUILD)/build.ninja

configure-build: deps-build $(BUILD)/build.ninja

build: configure
	cmake --build $(BUILD) -j $(JOBS)

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

# The whole suite under AddressSanitizer + UndefinedBehaviorSanitizer, in its
# own build tree (the first UB or memory error fails its test).
ASAN_BUILD ?= build-asan
ASAN_FLAGS = -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
test-asan: deps
	cmake -S . -B $(ASAN_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  "-DCMAKE_CXX_FLAGS=$(ASAN_FLAGS)" "-DCMAKE_C_FLAGS=$(ASAN_FLAGS)" \
	  "-DCMAKE_EXE_LINKER_FLAGS=-fsanitize=address,undefined" \
	  "-DCMAKE_SHARED_LINKER_FLAGS=-fsanitize=address,undefined" -DPHASOR_ALLOCATOR=system $(CMAKE_FLAGS)
	cmake --build $(ASAN_BUILD) -j $(JOBS)
	cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:strict_string_checks=1 \
	  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 ctest --output-on-failure -j $(JOBS)


# The demo needs only the build packages and the `phasor` executable.
demo: configure-build
	cmake --build $(BUILD) -j $(JOBS) --target phasor
	@bash scripts/demo.sh $(BUILD)

bench: build
	@bash bench/run.sh $(BUILD)

# PyTorch jobs on a shaped link in network namespaces, with phasor's closed
# loop, beside `phasor simulate` (docs/testbed.md). Root; a few minutes.
# TESTBED_ARGS: testbed.py options (e.g. --reps 3 --iterations 12).
TESTBED_ARGS ?=
testbed:
	@if [ "$$(id -u)" -ne 0 ]; then echo "make testbed: needs root (network namespaces, tc): sudo make testbed" >&2; exit 1; fi
	@bash scripts/install-deps.sh testbed
	@$(MAKE) --no-print-directory $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS) --target phasor phasord phasor_python
	@bash bench/testbed/run.sh $(BUILD) $(TESTBED_ARGS)

# The Python package's wheel, built offline from a clean copy (protoc
# generates phasor_pb2.py): $(BUILD)/python-dist/phasor-<version>-py3-none-any.whl
python-wheel:
	rm -rf $(BUILD)/python-src
	mkdir -p $(BUILD)/python-src/phasor $(BUILD)/python-dist
	cp integrations/python/pyproject.toml integrations/python/setup.py integrations/python/README.md $(BUILD)/python-src/
	cp integrations/python/phasor/*.py $(BUILD)/python-src/phasor/
	cp protocol/phasor.proto $(BUILD)/python-src/
	$(PYTHON) -m pip wheel --no-build-isolation --no-index --no-deps -w $(BUILD)/python-dist $(BUILD)/python-src

format:
	find placer topology probe protocol integrations cmd tests bench sim diagnose -name '*.h' -o -name '*.cc' 2>/dev/null | xargs -r clang-format -i

clean:
	rm -rf $(BUILD)
