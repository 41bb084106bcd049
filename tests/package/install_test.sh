#!/usr/bin/env bash
# install_test.sh BUILD SRC PREFIX LIBDIR CC [CFLAGS]: `make install` as a user meets it,
# in a temporary DESTDIR (ctest: package_install; docs/packaging.md).
#
#   1. cmake --install puts the command, the shared and static library, the headers, the
#      .pc, the man pages and both completions where they belong;
#   2. the shared library has its soname and exports only ts_ names (nm -D);
#   3. the C example in README.md (the text itself, so the two cannot drift) compiles
#      with `pkg-config --cflags --libs toolstream` against that tree alone, shared and
#      static, and taps a corpus stream correctly;
#   4. the man pages render without a warning, the bash completion completes;
#   5. uninstalling removes every file the install wrote.
# The build's own install_manifest.txt (a real `make install`) is kept as it was.
set -euo pipefail
build=$1 src=$2 prefix=$3 libdir=$4 cc=$5 cflags=${6:-}
fail() { echo "install_test: $*" >&2; exit 1; }

tmp=$(mktemp -d)
manifest=$build/install_manifest.txt
had_manifest=0
if [ -f "$manifest" ]; then cp -p "$manifest" "$tmp/manifest.saved"; had_manifest=1; fi
restore() {
  if [ $had_manifest = 1 ]; then cp -p "$tmp/manifest.saved" "$manifest"; else rm -f "$manifest"; fi
  rm -rf "$tmp"
}
trap restore EXIT

root=$tmp/root
DESTDIR=$root cmake --install "$build" >"$tmp/install.log" 2>&1 ||
  { cat "$tmp/install.log" >&2; fail "cmake --install failed"; }
cp "$manifest" "$tmp/manifest"
p=$root$prefix
[[ $libdir = /* ]] && lib=$root$libdir || lib=$p/$libdir

# 1. what went where
for f in bin/toolstream include/toolstream/toolstream.h include/toolstream/stream/tap.h \
    include/toolstream/base/error.h include/toolstream/events/event.h \
    include/toolstream/events/bus_pub.h include/toolstream/store/store.h \
    include/toolstream/tools/dispatch.h include/toolstream/tools/registry.h \
    share/man/man1/toolstream.1 share/man/man1/toolstream-tap.1 \
    share/man/man1/toolstream-run.1 share/man/man7/toolstream-events.7 \
    share/bash-completion/completions/toolstream; do
  [ -e "$p/$f" ] || fail "not installed: $prefix/$f"
done
for f in libtoolstream.so.0 libtoolstream.so libtoolstream.a pkgconfig/toolstream.pc; do
  [ -e "$lib/$f" ] || fail "not installed: $lib/$f"
done
ls "$p"/share/zsh/*/_toolstream >/dev/null 2>&1 || fail "zsh completion not installed"
# Every command toolstream --help lists has its page.
for c in $("$p/bin/toolstream" --help | awk '/^commands:/ {on = 1; next} on && /^$/ {exit}
    on && /^  [a-z]/ {print $1}'); do
  [ -e "$p/share/man/man1/toolstream-$c.1" ] || fail "no man page for toolstream $c"
done
# Internal headers stay out (they declare only ts__ names; bus_net.h includes nng.h).
for f in events/bus_net.h stream/anthropic.h stream/openai_chat.h; do
  [ ! -e "$p/include/toolstream/$f" ] || fail "internal header installed: $f"
done

# 2. soname and exports
readelf -d "$lib/libtoolstream.so" | grep -q 'SONAME.*\[libtoolstream\.so\.0\]' ||
  fail "libtoolstream.so has no soname libtoolstream.so.0"
nm -D --defined-only "$lib/libtoolstream.so" > "$tmp/exports"
grep -q ' T ts_tap_new$' "$tmp/exports" || fail "ts_tap_new is not exported"
grep -q ' T ts_pub_open$' "$tmp/exports" || fail "ts_pub_open is not exported"
grep -q ' T ts_store_open$' "$tmp/exports" || fail "ts_store_open is not exported"
grep -q ' T ts_dispatch_new$' "$tmp/exports" || fail "ts_dispatch_new is not exported"
if grep -v -E ' ts_[a-z][A-Za-z0-9_]*$' "$tmp/exports" | grep -q . ||
   grep -q ' ts__' "$tmp/exports"; then
  grep -v -E ' ts_[a-z]' "$tmp/exports" | head >&2
  fail "libtoolstream.so exports names other than ts_"
fi

# 3. the README example, against the installed tree only
bash "$src/tests/package/readme_example.sh" "$src/README.md" "$tmp/tap.c" || fail "README example"
# The staged tree is a sysroot: pkg-config prefixes the .pc's paths with it. sqlite3
# (Requires.private) comes from the system's own .pc files, as it would when installed.
export PKG_CONFIG_PATH=$lib/pkgconfig PKG_CONFIG_SYSROOT_DIR=$root
pcflags=$(pkg-config --cflags --libs toolstream) || fail "pkg-config toolstream failed"
[[ $pcflags == *"-I$p/include/toolstream"* ]] || fail "pkg-config --cflags does not name the installed headers: $pcflags"
# shellcheck disable=SC2086
$cc -std=c11 -Wall -Wextra -Werror -pedantic $cflags "$tmp/tap.c" $pcflags -o "$tmp/tap" ||
  fail "README example does not build with pkg-config --cflags --libs toolstream"
readelf -d "$tmp/tap" | grep -q 'NEEDED.*libtoolstream\.so\.0' || fail "example not linked to libtoolstream.so.0"
# The README example's output on this stream (tests/package/tap.want; make package-test
# checks the same file against the installed Debian packages).
cp "$src/tests/package/tap.want" "$tmp/want"
corpus=$src/tests/corpus/anthropic-text-then-tool.sse
LD_LIBRARY_PATH=$lib "$tmp/tap" < "$corpus" > "$tmp/got" || fail "example exited $?"
diff -u "$tmp/want" "$tmp/got" >&2 || fail "example's output differs"
LD_LIBRARY_PATH=$lib ldd "$tmp/tap" | grep -q "$lib/libtoolstream.so.0" ||
  fail "example did not load the installed library"
# A truncated stream: a tool_call_error, a stream_error, exit status 1.
head -c 1500 "$corpus" > "$tmp/cut.sse"
if LD_LIBRARY_PATH=$lib "$tmp/tap" < "$tmp/cut.sse" > "$tmp/got"; then
  fail "example exited 0 on a truncated stream"
fi
grep -q '^stream_error' "$tmp/got" || fail "no stream_error on a truncated stream"

# static libtoolstream, the other libraries shared (the README's second command)
static_libs=$(pkg-config --static --libs toolstream) || fail "pkg-config --static failed"
# shellcheck disable=SC2086
$cc -std=c11 -Wall -Wextra -Werror -pedantic $cflags "$tmp/tap.c" \
  $(pkg-config --cflags toolstream) -Wl,-Bstatic -ltoolstream -Wl,-Bdynamic \
  -Wl,--as-needed $static_libs -o "$tmp/tap-static" ||
  fail "README example does not build against libtoolstream.a"
if readelf -d "$tmp/tap-static" | grep -q 'NEEDED.*libtoolstream'; then
  fail "static example still needs libtoolstream.so"
fi
"$tmp/tap-static" < "$corpus" > "$tmp/got" || fail "static example exited $?"
diff -u "$tmp/want" "$tmp/got" >&2 || fail "static example's output differs"

# 4. man pages and completion, as installed
for page in "$p"/share/man/man1/*.1 "$p"/share/man/man7/*.7; do
  w=$(MANWIDTH=80 LC_ALL=C.UTF-8 man --warnings -l "$page" 2>&1 >/dev/null) || fail "man cannot read $page"
  [ -z "$w" ] || fail "$(basename "$page"): $w"
  lexgrog "$page" >/dev/null 2>&1 || fail "$(basename "$page") has no NAME line for whatis"
done
grep -q -F 'progress\-arg' "$p/share/man/man1/toolstream-tap.1" || fail "toolstream-tap(1) lacks --progress-arg"
grep -q 'tool_call_started' "$p/share/man/man7/toolstream-events.7" || fail "toolstream-events(7) lacks the event types"
got=$(PATH=$p/bin:$PATH bash -c '. "$1"
  COMP_WORDS=(toolstream tap --progress-a); COMP_CWORD=2; _toolstream; echo "${COMPREPLY[*]}"
  COMP_WORDS=(toolstream ga); COMP_CWORD=1; _toolstream; echo "${COMPREPLY[*]}"' _ \
  "$p/share/bash-completion/completions/toolstream")
[ "$got" = $'--progress-arg\ngateway' ] || fail "bash completion gave: $got"
"$p/bin/toolstream" --version | grep -q '^toolstream [0-9]' || fail "toolstream --version"

# 5. uninstall
DESTDIR=$root cmake -DMANIFEST="$tmp/manifest" -P "$src/packaging/uninstall.cmake" >/dev/null ||
  fail "uninstall failed"
left=$(find "$root" ! -type d)
[ -z "$left" ] || fail "left behind after uninstall: $left"
[ ! -e "$p/include/toolstream" ] || fail "include/toolstream left behind"
echo "install_test: ok ($(wc -l < "$tmp/exports") exported ts_ functions)"
