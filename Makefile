# The two commands of the README, plus the benchmark. Each installs what is missing
# (Debian packages, scripts/install-deps.sh), builds with CMake and runs.
#   make demo   build and run the main job
#   make test   build and run the whole suite, plainly and under ASan+UBSan
#   make bench  build (optimised) and run the benchmarks (not part of make test)
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?=

.PHONY: all deps build demo test test-plain test-sanitize bench clean

all: build

deps:
	@bash scripts/install-deps.sh

build: deps
	cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_FLAGS) >/dev/null
	cmake --build build -j $(JOBS)

demo: build
	./build/toolstream demo

test: test-plain test-sanitize

test-plain: deps
	cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_FLAGS) >/dev/null
	cmake --build build -j $(JOBS)
	cd build && ctest --output-on-failure -j $(JOBS)

test-sanitize: deps
	cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DTS_SANITIZE=ON $(CMAKE_FLAGS) >/dev/null
	cmake --build build-asan -j $(JOBS)
	cd build-asan && ctest --output-on-failure -j $(JOBS)

bench: deps
	cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=Release -DTS_BENCH=ON -DTS_TESTS=OFF >/dev/null
	cmake --build build-bench -j $(JOBS)
	bash bench/run.sh build-bench

clean:
	rm -rf build build-asan build-bench
