# The two commands of the README, plus the benchmark. Each installs what is missing
# (Debian packages, scripts/install-deps.sh), builds with CMake and runs.
#   make demo   build and run the main job
#   make test   build and run the whole suite, plainly and under ASan+UBSan, and a fuzz smoke
#   make bench  build (optimised) and run the benchmarks (not part of make test)
#   make fuzz   build the libFuzzer targets (clang) and run each for FUZZ_SECONDS
#   make install [PREFIX=/usr/local] [DESTDIR=]   the command, libtoolstream, headers,
#               toolstream.pc, man pages, completions; make uninstall removes them
#   make package       the Debian packages (dpkg-buildpackage), in build-deb/
#   make package-test  build them, install into a fresh Debian 12 root, prove, remove
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?=
FUZZ_SECONDS ?= 300
PREFIX ?= /usr/local
DESTDIR ?=

.PHONY: all deps build demo test test-plain test-sanitize test-fuzz fuzz bench clean \
	install uninstall package package-test

all: build

deps:
	@bash scripts/install-deps.sh

build: deps
	cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_FLAGS) >/dev/null
	cmake --build build -j $(JOBS)

demo: build
	./build/toolstream demo

test: test-plain test-sanitize test-fuzz

test-plain: deps
	cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_FLAGS) >/dev/null
	cmake --build build -j $(JOBS)
	cd build && ctest --output-on-failure -j $(JOBS)

test-sanitize: deps
	cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DTS_SANITIZE=ON $(CMAKE_FLAGS) >/dev/null
	cmake --build build-asan -j $(JOBS)
	cd build-asan && ctest --output-on-failure -j $(JOBS)

# The fuzz targets (fuzz/), built with clang and instrumented; make test runs each for a
# short smoke (about 20 s), make fuzz for FUZZ_SECONDS each (docs/fuzzing.md).
fuzz: deps
	cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang -DTS_FUZZ=ON -DTS_TESTS=OFF \
	  -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_FLAGS) >/dev/null
	cmake --build build-fuzz -j $(JOBS)
	bash fuzz/run.sh build-fuzz $(FUZZ_SECONDS)

test-fuzz:
	$(MAKE) fuzz FUZZ_SECONDS=20

bench:
	@bash scripts/install-deps.sh --bench
	cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=Release -DTS_BENCH=ON -DTS_TESTS=OFF >/dev/null
	cmake --build build-bench -j $(JOBS)
	bash bench/run.sh build-bench

# Installs from build/, configured for PREFIX; DESTDIR stages (packaging). The list of what
# was written (build/install_manifest.txt) and the folders created (build/install_dirs.txt)
# stay for make uninstall (same DESTDIR).
install: deps
	cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_INSTALL_PREFIX=$(PREFIX) \
	  $(CMAKE_FLAGS) >/dev/null
	cmake --build build -j $(JOBS)
	DESTDIR="$(DESTDIR)" cmake --install build

uninstall:
	DESTDIR="$(DESTDIR)" cmake -DMANIFEST=$(CURDIR)/build/install_manifest.txt \
	  -P packaging/uninstall.cmake

# Debian packages with the distribution's tools (debian/, docs/packaging.md).
package:
	bash scripts/package-test.sh --build-only

package-test:
	bash scripts/package-test.sh

clean:
	rm -rf build build-asan build-bench build-fuzz build-deb
