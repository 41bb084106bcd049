#!/usr/bin/env bash
# gen-man.sh BIN OUTDIR SRCDIR VERSION: the man pages, from the sources that cannot drift.
#
#   toolstream(1), toolstream-<command>(1)  help2man on `toolstream --help` and on each
#       command's `--help`: the text the command prints is the page, so an option added to
#       a command is in its page at the next build. The commands are read from
#       `toolstream --help` too, so a new command gets its page without an edit here.
#   toolstream-events(7)  docs/events.md, the event schema, through go-md2man.
#
# Writes OUTDIR/man1/*.1, OUTDIR/man7/*.7 and OUTDIR/stamp. Dates follow
# SOURCE_DATE_EPOCH when set (help2man honours it), so package builds are reproducible.
set -euo pipefail
bin=$1 out=$2 src=$3 version=$4
for tool in help2man go-md2man; do
  command -v "$tool" >/dev/null || { echo "gen-man.sh: $tool is required (scripts/install-deps.sh)" >&2; exit 1; }
done
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
rm -rf "$out/man1" "$out/man7" "$out/wrap"
mkdir -p "$out/man1" "$out/man7" "$out/wrap"

# "  name    summary" lines of the commands: section of `toolstream --help`.
mapfile -t rows < <("$bin" --help | awk '/^commands:/ {on = 1; next} on && /^$/ {exit}
  on && /^  [a-z]/ {name = $1; sub(/^  [a-z][a-z0-9-]* +/, ""); print name "\t" $0}')
[ ${#rows[@]} -gt 0 ] || { echo "gen-man.sh: no commands in '$bin --help'" >&2; exit 1; }

pages=(toolstream.1)
for row in "${rows[@]}"; do pages+=("toolstream-${row%%$'\t'*}.1"); done
pages+=(toolstream-events.7)
see_also() { # the SEE ALSO lines of page $1 (roff): every other page
  local p list=()
  for p in "${pages[@]}"; do [ "$p" = "$1" ] || list+=("$p"); done
  for p in "${list[@]}"; do
    printf '.BR %s (%s)%s\n' "${p%.*}" "${p##*.}" "$([ "$p" = "${list[-1]}" ] || echo ,)"
  done
}

# help2man reads "Usage:" as the synopsis and "Options:" as the options section; the
# command prints them in lower case. The wrapper changes only those two words: every
# other byte of the page is the command's own --help.
wrapper() { # path bin [command]
  local cmd=${3:-}
  cat > "$1" <<SH
#!/bin/sh
if [ "\$1" = --help ]; then
  "$2" $cmd --help | sed -e 's/^usage:/Usage:/' -e 's/^options:\$/Options:/'
else
  exec "$2" $cmd "\$@"
fi
SH
  chmod +x "$1"
}

h2m() { # page name-line include-file program
  help2man --no-info --no-discard-stderr --version-string="$version" --section=1 \
    --source="toolstream $version" --manual="toolstream manual" \
    --name="$2" --include="$3" --output="$out/man1/$1.1" "$4"
}

cat > "$out/wrap/toolstream.h2m" <<H2M
[ENVIRONMENT]
.TP
.B OPENAI_API_KEY, ANTHROPIC_API_KEY
The model provider's key for \fBtoolstream run\fR (\fB--api-key-env\fR names another
variable). Read from the environment only: never a flag, never printed or stored.
.TP
.B XDG_DATA_HOME
The store of \fBtoolstream run\fR is \fI\$XDG_DATA_HOME/toolstream\fR unless
\fB--data-dir\fR is given.
[SEE ALSO]
$(see_also toolstream.1)
H2M
wrapper "$out/wrap/toolstream" "$bin"
h2m toolstream "streaming event processor for model tool calls" "$out/wrap/toolstream.h2m" \
  "$out/wrap/toolstream"

for row in "${rows[@]}"; do
  cmd=${row%%$'\t'*} summary=${row#*$'\t'}
  # help2man names the page after the program it runs: a wrapper toolstream-<command>.
  wrapper "$out/wrap/toolstream-$cmd" "$bin" "$cmd"
  { echo '[SEE ALSO]'; see_also "toolstream-$cmd.1"; } > "$out/wrap/$cmd.h2m"
  h2m "toolstream-$cmd" "$summary" "$out/wrap/$cmd.h2m" "$out/wrap/toolstream-$cmd"
done

# toolstream-events(7): the schema document with a title and a NAME section in front.
date=$(date -u ${SOURCE_DATE_EPOCH:+-d @$SOURCE_DATE_EPOCH} +%Y-%m-%d)
{
  printf '%% TOOLSTREAM-EVENTS 7 "%s" "toolstream %s" "toolstream manual"\n\n' "$date" "$version"
  printf '# NAME\n\ntoolstream-events - the thread events toolstream emits, and their JSON encoding\n\n'
  printf '# DESCRIPTION\n\n'
  sed 1d "$src/docs/events.md"
} > "$out/wrap/events.md"
go-md2man -in "$out/wrap/events.md" -out "$out/wrap/events.7"
# Left-aligned text, and every wide table cell wrapped (tbl-wrap.awk), so the page reads
# at 80 columns without groff warnings.
awk -f "$src/packaging/man/tbl-wrap.awk" "$out/wrap/events.7" |
  sed '/^\.TH /a .ad l' > "$out/man7/toolstream-events.7"
{ echo '.SH SEE ALSO'; see_also toolstream-events.7; } >> "$out/man7/toolstream-events.7"
touch "$out/stamp"
