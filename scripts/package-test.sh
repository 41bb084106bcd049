#!/usr/bin/env bash
# package-test.sh [--build-only]: the Debian packages, built and proved (make package,
# make package-test; docs/packaging.md).
#
#   1. builds toolstream, libtoolstream0 and libtoolstream-dev with dpkg-buildpackage
#      -us -uc -b from a copy of this tree (the .debs land in build-deb/), and runs
#      lintian on them: any error fails;            (--build-only stops here: make package)
#   2. makes a fresh Debian 12 root with debootstrap (minbase; cached as a tarball, so
#      later runs start in seconds) and installs the packages' dependencies and a C
#      compiler in it, then records every file of that root;
#   3. installs the three packages with dpkg, and in the root: runs `toolstream demo`,
#      reads the man pages, builds the README's C example with pkg-config (shared and
#      static) and runs it on a corpus stream;
#   4. purges the packages and checks that the root holds exactly the files it held
#      before they were installed.
# The proof runs as root (chroot, mount; --build-only does not need it). The mirror is the one this machine's apt uses, or
# TS_DEBIAN_MIRROR; the cache is TS_PACKAGE_CACHE (default /var/cache/toolstream-package-test).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
out=$here/build-deb
cache=${TS_PACKAGE_CACHE:-/var/cache/toolstream-package-test}
build_only=0
[ "${1:-}" = --build-only ] && build_only=1
say() { printf 'package-test: %s\n' "$*" >&2; }
fail() { say "FAILED: $*"; exit 1; }
[ $build_only = 1 ] || [ "$(id -u)" -eq 0 ] ||
  fail "run as root: the fresh root is entered with chroot, with /proc mounted in it"

# ---- tools --------------------------------------------------------------------------
bash "$here/scripts/install-deps.sh"
tools=(debhelper devscripts lintian dpkg-dev fakeroot)
[ $build_only = 1 ] || tools+=(debootstrap)
missing=()
for p in "${tools[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep 'install ok installed' >/dev/null || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  say "installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO=sudo
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# ---- 1. build and lint ----------------------------------------------------------------
rm -rf "$out"
mkdir -p "$out/src"
# A copy of the tree without build folders: dpkg-buildpackage writes into the source and
# puts the packages beside it.
tar -C "$here" --exclude=./build --exclude='./build-*' --exclude=node_modules --exclude=./.git \
  -cf - . | tar -C "$out/src" -xf -
say "building the packages (dpkg-buildpackage -us -uc -b; log: build-deb/build.log)"
(cd "$out/src" && dpkg-buildpackage -us -uc -b) > "$out/build.log" 2>&1 ||
  { tail -30 "$out/build.log" >&2; fail "dpkg-buildpackage (build-deb/build.log)"; }
rm -rf "$out/src"
debs=()
for p in toolstream libtoolstream0 libtoolstream-dev; do
  f=$(ls "$out/${p}_"*.deb 2>/dev/null | head -1)
  [ -n "$f" ] || fail "no $p package was built"
  debs+=("$f")
done
say "lintian"
lintian --fail-on error --display-info "$out"/*.changes 2>/dev/null | tee "$out/lintian.log" >&2 ||
  fail "lintian reports errors (build-deb/lintian.log)"
# The shared library exports only ts_ names (checked on the packaged file itself).
x=$(mktemp -d)
dpkg-deb -x "$out"/libtoolstream0_*.deb "$x"
so=$(ls "$x"/usr/lib/*/libtoolstream.so.0)
bad=$(nm -D --defined-only "$so" | grep -v -E ' ts_[a-z][A-Za-z0-9_]*$' || true)
rm -rf "$x"
[ -z "$bad" ] || fail "libtoolstream.so.0 exports more than ts_ names: $bad"
say "built: $(cd "$out" && ls ./*.deb | tr '\n' ' ')"
[ $build_only = 0 ] || exit 0

# ---- 2. a fresh Debian 12 root ------------------------------------------------------------
mirror=${TS_DEBIAN_MIRROR:-}
if [ -z "$mirror" ]; then # the first Debian archive this machine's apt is set up with
  mirror=$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null |
    awk '/^URIs:/ {u = $2} /^Suites:/ && / bookworm( |$)/ && u {print u; exit}')
fi
if [ -z "$mirror" ]; then
  mirror=$(awk '$1 == "deb" && $3 == "bookworm" {print $2; exit}' /etc/apt/sources.list 2>/dev/null)
fi
[ -n "$mirror" ] || fail "no Debian 12 mirror in /etc/apt (set TS_DEBIAN_MIRROR)"
tarball=$cache/bookworm-minbase.tar
mkdir -p "$cache"
if [ ! -s "$tarball" ]; then
  say "debootstrap --variant=minbase bookworm (once; cached in $tarball)"
  seed=$(mktemp -d /var/tmp/ts-root.XXXXXX)
  debootstrap --variant=minbase bookworm "$seed" "$mirror" > "$cache/debootstrap.log" 2>&1 ||
    { rm -rf "$seed"; fail "debootstrap ($cache/debootstrap.log)"; }
  tar -C "$seed" -cf "$tarball.part" . && mv "$tarball.part" "$tarball"
  rm -rf "$seed"
fi
work=$(mktemp -d /var/tmp/ts-package-test.XXXXXX)
root=$work/root
cleanup() {
  mountpoint -q "$root/proc" 2>/dev/null && umount "$root/proc"
  rm -rf "$work"
}
trap cleanup EXIT
mkdir "$root"
tar -C "$root" -xf "$tarball"
cp /etc/resolv.conf "$root/etc/resolv.conf"
mount -t proc proc "$root/proc"
in_root() { chroot "$root" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LC_ALL=C.UTF-8 "$@"; }

# What our packages depend on (not they themselves), plus what the example needs.
deps=$(for d in "${debs[@]}"; do dpkg-deb -f "$d" Depends; echo; done |
  tr ',' '\n' | sed -E 's/\|.*//; s/\(.*\)//; s/ //g' | grep -v -E '^(libtoolstream|toolstream|$)' | sort -u)
say "installing the dependencies in the root: $(echo $deps)"
in_root apt-get update -qq > "$work/apt.log" 2>&1 || { cat "$work/apt.log" >&2; fail "apt-get update in the root"; }
# shellcheck disable=SC2086
DEBIAN_FRONTEND=noninteractive in_root apt-get install -y -qq --no-install-recommends \
  $deps gcc libc6-dev pkg-config man-db >> "$work/apt.log" 2>&1 ||
  { tail -20 "$work/apt.log" >&2; fail "apt-get install in the root"; }
in_root apt-get clean

# Every path of the root but the ones that change by themselves (dpkg's and apt's own
# records, logs, caches, the man-db index, /tmp, /proc).
snapshot() {
  (cd "$root" && find . -xdev \( -path ./proc -o -path ./tmp -o -path ./var/lib/dpkg \
      -o -path ./var/log -o -path ./var/cache -o -path ./var/lib/apt -o -path ./root \) -prune \
      -o -printf '%y %p\n' | sort)
}
snapshot > "$work/before"

# ---- 3. install and use ---------------------------------------------------------------
mkdir -p "$root/tmp/pt"
cp "${debs[@]}" "$root/tmp/pt/"
say "dpkg -i toolstream libtoolstream0 libtoolstream-dev"
in_root sh -c 'dpkg -i /tmp/pt/*.deb' > "$work/dpkg.log" 2>&1 || { cat "$work/dpkg.log" >&2; fail "dpkg -i"; }
in_root toolstream --version >&2 || fail "toolstream --version"
say "toolstream demo"
in_root toolstream demo > "$work/demo.out" 2>&1 || { tail -20 "$work/demo.out" >&2; fail "toolstream demo"; }
grep -q 'write_file' "$work/demo.out" || { tail -20 "$work/demo.out" >&2; fail "toolstream demo showed no write_file call"; }
for page in toolstream toolstream-tap toolstream-run toolstream-events; do
  in_root man -w "$page" >/dev/null 2>&1 || fail "man $page: not found"
  in_root sh -c "MANWIDTH=80 man $page" 2>/dev/null | grep . >/dev/null || fail "man $page is empty"
done
[ -f "$root/usr/share/bash-completion/completions/toolstream" ] || fail "no bash completion"
[ -f "$root/usr/share/zsh/vendor-completions/_toolstream" ] || fail "no zsh completion"
bash "$here/tests/package/readme_example.sh" "$here/README.md" "$root/tmp/pt/tap.c"
cp "$here/tests/corpus/anthropic-text-then-tool.sse" "$root/tmp/pt/stream.sse"
say "README example: cc tap.c \$(pkg-config --cflags --libs toolstream)"
in_root sh -c 'cd /tmp/pt && cc -std=c11 -Wall -Wextra -Werror -pedantic tap.c $(pkg-config --cflags --libs toolstream) -o tap' ||
  fail "the README example does not build against the installed packages"
in_root sh -c 'cd /tmp/pt && ./tap < stream.sse' > "$work/got" || fail "the README example exited $?"
diff -u "$here/tests/package/tap.want" "$work/got" >&2 || fail "the README example's output differs"
in_root sh -c 'cd /tmp/pt && cc -std=c11 tap.c $(pkg-config --cflags toolstream) -Wl,-Bstatic -ltoolstream -Wl,-Bdynamic -Wl,--as-needed $(pkg-config --static --libs toolstream) -o tap-static' ||
  fail "the README example does not build against libtoolstream.a"
in_root sh -c 'cd /tmp/pt && ./tap-static < stream.sse' > "$work/got" || fail "the static example exited $?"
diff -u "$here/tests/package/tap.want" "$work/got" >&2 || fail "the static example's output differs"
rm -rf "$root/tmp/pt"

# ---- 4. remove: nothing left behind ------------------------------------------------------
say "dpkg --purge"
in_root dpkg --purge toolstream libtoolstream-dev libtoolstream0 >> "$work/dpkg.log" 2>&1 ||
  { cat "$work/dpkg.log" >&2; fail "dpkg --purge"; }
snapshot > "$work/after"
if ! diff -u "$work/before" "$work/after" > "$work/diff"; then
  cat "$work/diff" >&2
  fail "the packages left files behind (or removed others)"
fi
say "ok: built, lintian clean of errors, installed into a fresh Debian 12 root, demo ran, the README example built and ran (shared and static), purged without a trace"
