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
set -euo pipefail # (no `cmd | grep -q` below: grep -q exits early, SIGPIPE fails the pipe)
build=$1 src=$2 prefix=$3 libdir=$4 cc=$5 cflags=${6:-}
fail() { echo "install_test: $*" >&2; exit 1; }

tmp=$(mktemp -d)
# cmake --install records into the build folder; a real install's records stay as they were.
records=(install_manifest.txt install_dirs.txt)
for r in "${records[@]}"; do
  if [ -f "$build/$r" ]; then cp -p "$build/$r" "$tmp/$r.saved"; else rm -f "$tmp/$r.saved"; fi
done
rm -f "$build/install_dirs.txt"
restore() {
  for r in "${records[@]}"; do
    if [ -f "$tmp/$r.saved" ]; then cp -p "$tmp/$r.saved" "$build/$r"; else rm -f "$build/$r"; fi
  done
  rm -rf "$tmp"
}
trap restore EXIT

root=$tmp/root
# Another program's file in a folder the install shares: it must survive the uninstall.
mkdir -p "$root$prefix/bin"
echo other > "$root$prefix/bin/other-tool"
DESTDIR=$root cmake --install "$build" >"$tmp/install.log" 2>&1 ||
  { cat "$tmp/install.log" >&2; fail "cmake --install failed"; }
cp "$build/install_manifest.txt" "$tmp/manifest"
cp "$build/install_dirs.txt" "$tmp/dirs"
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
# Internal headers stay out (bus_net.h declares only ts__ names and includes nng.h), and
# no installed header includes anything but the C library: nothing of nng, SQLite, PCRE2
# or libsodium shows through the API.
[ ! -e "$p/include/toolstream/events/bus_net.h" ] || fail "internal header installed: events/bus_net.h"
foreign=$(grep -rhoE '#include <[^>]+>' "$p/include/toolstream" | sort -u |
  grep -v -E '<(std[a-z]*|string|limits|signal|time|errno|inttypes|pthread|sys/[a-z_]+)\.h>' || true)
[ -z "$foreign" ] || fail "installed headers include more than the C library: $foreign"

# 2. soname and exports
readelf -d "$lib/libtoolstream.so" | grep 'SONAME.*\[libtoolstream\.so\.0\]' >/dev/null ||
  fail "libtoolstream.so has no soname libtoolstream.so.0"
nm -D --defined-only "$lib/libtoolstream.so" > "$tmp/exports"
grep -q ' T ts_tap_new$' "$tmp/exports" || fail "ts_tap_new is not exported"
grep -q ' T ts_pub_open$' "$tmp/exports" || fail "ts_pub_open is not exported"
grep -q ' T ts_store_open$' "$tmp/exports" || fail "ts_store_open is not exported"
grep -q ' T ts_dispatch_new$' "$tmp/exports" || fail "ts_dispatch_new is not exported"
if grep -v -E ' ts_[a-z][A-Za-z0-9_]*$' "$tmp/exports" | grep . >/dev/null ||
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
readelf -d "$tmp/tap" | grep 'NEEDED.*libtoolstream\.so\.0' >/dev/null || fail "example not linked to libtoolstream.so.0"
# The README example's output on this stream (tests/package/tap.want; make package-test
# checks the same file against the installed Debian packages).
cp "$src/tests/package/tap.want" "$tmp/want"
corpus=$src/tests/corpus/anthropic-text-then-tool.sse
LD_LIBRARY_PATH=$lib "$tmp/tap" < "$corpus" > "$tmp/got" || fail "example exited $?"
diff -u "$tmp/want" "$tmp/got" >&2 || fail "example's output differs"
LD_LIBRARY_PATH=$lib ldd "$tmp/tap" | grep "$lib/libtoolstream.so.0" >/dev/null ||
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
if readelf -d "$tmp/tap-static" | grep 'NEEDED.*libtoolstream' >/dev/null; then
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
# Each command's page has every option its --help lists, and its synopsis (one source).
for c in $("$p/bin/toolstream" --help | awk '/^commands:/ {on = 1; next} on && /^$/ {exit}
    on && /^  [a-z]/ {print $1}'); do
  page=$p/share/man/man1/toolstream-$c.1
  for o in $("$p/bin/toolstream" "$c" --help | grep -o -E '^  (-[a-zA-Z], )?--[a-z][a-z0-9-]*' |
      sed -E 's/^  (-[a-zA-Z], )?--//'); do
    grep -F -e "\fB\-\-${o//-/\\-}\fR" "$page" >/dev/null ||
      fail "toolstream-$c(1) lacks --$o, which toolstream $c --help lists"
  done
  syn=$("$p/bin/toolstream" "$c" --help | sed -n '1s/^usage: toolstream [a-z]* //p')
  grep -F -x -e "${syn//-/\\-}" "$page" >/dev/null ||
    fail "toolstream-$c(1) lacks the synopsis of --help: $syn"
done
grep -q 'tool_call_started' "$p/share/man/man7/toolstream-events.7" || fail "toolstream-events(7) lacks the event types"
got=$(PATH=$p/bin:$PATH bash -c '. "$1"
  COMP_WORDS=(toolstream tap --progress-a); COMP_CWORD=2; _toolstream; echo "${COMPREPLY[*]}"
  COMP_WORDS=(toolstream ga); COMP_CWORD=1; _toolstream; echo "${COMPREPLY[*]}"' _ \
  "$p/share/bash-completion/completions/toolstream")
[ "$got" = $'--progress-arg\ngateway' ] || fail "bash completion gave: $got"
zdir=$(dirname "$(ls "$p"/share/zsh/*/_toolstream)")
zsh -f "$src/tests/package/zsh_completion.zsh" "$zdir" "$p/bin" > "$tmp/zsh.out" 2>&1 ||
  { cat "$tmp/zsh.out" >&2; fail "zsh completion failed"; }
for want in 'gateway:reverse proxy' '*--progress-arg=[' '--deltas[' '*--tools=[' \
    '--format=[' ':format:(auto openai-chat' ':FILE:_files' ':DIR:_files -/'; do
  grep -F -e "$want" "$tmp/zsh.out" >/dev/null || { cat "$tmp/zsh.out" >&2; fail "zsh completion lacks $want"; }
done
# --version: the version, then every library the build used, with its version.
"$p/bin/toolstream" --version > "$tmp/version"
grep -x 'toolstream [0-9][0-9.]*' "$tmp/version" >/dev/null || fail "toolstream --version: $(cat "$tmp/version")"
for l in nng libevent OpenSSL SQLite Duktape jsmn; do
  grep -E "^built with .*\b$l [0-9][0-9a-z.-]*(,|$)" "$tmp/version" >/dev/null ||
    fail "toolstream --version does not name $l with its version: $(cat "$tmp/version")"
done
"$p/bin/toolstream" tap --version | cmp -s - "$tmp/version" || fail "toolstream tap --version differs"

# An install to another prefix than the configured one (cmake --install --prefix): its
# toolstream.pc names that prefix.
DESTDIR=$tmp/alt cmake --install "$build" --prefix /opt/ts-alt >/dev/null 2>&1 || fail "install --prefix"
[[ $libdir = /* ]] && alt_pc=$tmp/alt$libdir || alt_pc=$tmp/alt/opt/ts-alt/$libdir
grep -x 'prefix=/opt/ts-alt' "$alt_pc/pkgconfig/toolstream.pc" >/dev/null ||
  fail "cmake --install --prefix /opt/ts-alt: toolstream.pc does not say prefix=/opt/ts-alt"
rm -rf "$tmp/alt"

# 5. uninstall
# Everything the install wrote or created goes; the other program's file and the folders
# that held it before stay.
DESTDIR=$root cmake -DMANIFEST="$tmp/manifest" -DDIRS="$tmp/dirs" \
  -P "$src/packaging/uninstall.cmake" >/dev/null || fail "uninstall failed"
left=$(cd "$root" && find . -mindepth 1 | sort | tr '\n' ' ')
want=$(cd "$root" && d=.$prefix/bin; while [ "$d" != . ]; do echo "$d"; d=$(dirname "$d"); done;
  echo ".$prefix/bin/other-tool")
want=$(sort <<< "$want" | tr '\n' ' ')
[ "$left" = "$want" ] || fail "after uninstall the tree holds: $left (want: $want)"
echo "install_test: ok ($(wc -l < "$tmp/exports") exported ts_ functions)"
