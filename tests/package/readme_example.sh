#!/usr/bin/env bash
# readme_example.sh README.md OUT.c: writes the C example of README.md (the ```c block
# after the "README example: tap.c" marker) to OUT.c, and fails unless it is there and
# at most 30 lines long, as the README promises. Used by install_test.sh and
# scripts/package-test.sh, so both build the text a reader copies.
set -euo pipefail
awk '/<!-- README example: tap.c/ {want = 1; next}
     want && /^```c$/ {on = 1; next} on && /^```$/ {exit} on {print}' "$1" > "$2"
n=$(wc -l < "$2")
[ "$n" -gt 5 ] || { echo "readme_example: no C example found in $1" >&2; exit 1; }
[ "$n" -le 30 ] || { echo "readme_example: the example is $n lines, the promise is at most 30" >&2; exit 1; }
