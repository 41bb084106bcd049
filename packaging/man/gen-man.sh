#!/usr/bin/env bash
# gen-man.sh BIN OUTDIR SRCDIR VERSION: the man pages, from the sources that cannot drift.
#
#   toolstream(1), toolstream-<command>(1)  `toolstream --generate-man` (cli/man.c): the
#       command renders them from the same tables that print its --help, so a page and
#       the help are one text; a new command or option is on its page at the next build.
#   toolstream-events(7)  docs/events.md, the event schema, through go-md2man.
#
# Writes OUTDIR/man1/*.1, OUTDIR/man7/*.7 and OUTDIR/stamp. Dates follow
# SOURCE_DATE_EPOCH when set, so package builds are reproducible.
set -euo pipefail
bin=$1 out=$2 src=$3 version=$4
command -v go-md2man >/dev/null ||
  { echo "gen-man.sh: go-md2man is required (scripts/install-deps.sh)" >&2; exit 1; }
rm -rf "$out/man1" "$out/man7" "$out/work"
mkdir -p "$out/man1" "$out/man7" "$out/work"

"$bin" --generate-man "$out/man1"
pages=(toolstream.1)
for p in "$out"/man1/toolstream-*.1; do pages+=("$(basename "$p")"); done
[ ${#pages[@]} -gt 1 ] || { echo "gen-man.sh: $bin --generate-man wrote no pages" >&2; exit 1; }

# toolstream-events(7): the schema document with a title and a NAME section in front.
date=$(date -u ${SOURCE_DATE_EPOCH:+-d @$SOURCE_DATE_EPOCH} +%Y-%m-%d)
{
  printf '%% TOOLSTREAM-EVENTS 7 "%s" "toolstream %s" "toolstream manual"\n\n' "$date" "$version"
  printf '# NAME\n\ntoolstream-events - the thread events toolstream emits, and their JSON encoding\n\n'
  printf '# DESCRIPTION\n\n'
  sed 1d "$src/docs/events.md"
} > "$out/work/events.md"
go-md2man -in "$out/work/events.md" -out "$out/work/events.7"
# Left-aligned text, and every wide table cell wrapped (tbl-wrap.awk), so the page reads
# at 80 columns without groff warnings; SEE ALSO names the command's pages.
{
  # (go-md2man leaves the hyphens of code spans such as `--tools` as hyphens: make them
  # ASCII minus signs, \-, on every text line; twice, for "--".)
  awk -f "$src/packaging/man/tbl-wrap.awk" "$out/work/events.7" | sed '/^\.TH /a .ad l' |
    sed -E -e '/^\./! s/(^|[^\\])-/\1\\-/g' -e '/^\./! s/(^|[^\\])-/\1\\-/g'
  echo '.SH SEE ALSO'
  for ((i = 0; i < ${#pages[@]}; i++)); do
    p=${pages[i]%.1}
    printf '.BR %s (1),\n' "${p//-/\\-}"
  done
} > "$out/man7/toolstream-events.7"
# the last entry ends the list: no comma after it
sed -i '$ s/,$//' "$out/man7/toolstream-events.7"
touch "$out/stamp"
