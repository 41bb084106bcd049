#!/usr/bin/env bash
# Installs the Debian packages toolstream builds, tests and benchmarks with.
# Idempotent: it asks apt only for what is missing, so a second run is a no-op.
# Runs as root on Debian 12 (CI and developers are root); with sudo otherwise.
#   install-deps.sh          what make build / make test need
#   install-deps.sh --bench  that, plus what only make bench uses (bench_packages below)
set -euo pipefail

bench=0
case "${1:-}" in
  "") ;;
  --bench) bench=1 ;;
  *) echo "usage: install-deps.sh [--bench]" >&2; exit 2 ;;
esac

packages=(
  build-essential cmake pkg-config
  libnng-dev nng-utils libevent-dev libssl-dev duktape-dev check libsubunit-dev
  libjsmn-dev libsqlite3-dev libsodium-dev libpcre2-dev
  json-schema-test-suite      # the JSON Schema Test Suite, run by the schema tests
  libyajl-dev libjson-c-dev   # benchmark peers only
  valgrind openssl
  clang libclang-rt-14-dev   # the fuzz targets (make fuzz, and the smoke in make test)
  chromium                   # the live page's browser tests (tests/ui/page.mjs)
  go-md2man man-db           # toolstream-events(7) from docs/events.md; the man pages' test
  zsh                        # the zsh completion's test
)

# Only for make bench, so the test job never needs them: the reverse proxy the gateway is
# measured against (bench/gateway_bench.c runs it unprivileged with its own config, port
# and temp directory; where an init system runs, Debian also starts its packaged service,
# which the bench never touches), strace for the system calls per chunk, and simdjson, the
# JSON tokenizer's whole-document peer (C++, bench/json_bench_simdjson.cpp).
bench_packages=(nginx strace libsimdjson-dev)
if [ "$bench" -eq 1 ]; then packages+=("${bench_packages[@]}"); fi

missing=()
# Node.js and npm run the SDK tests (tests/sdk) and the benchmark peers (bench/node). The
# machine image ships them; a machine without them gets Debian's.
command -v node >/dev/null 2>&1 || missing+=(nodejs)
command -v npm >/dev/null 2>&1 || missing+=(npm)
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "install-deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
