# tbl-wrap.awk: go-md2man writes a table cell as a tbl text block (T{ ... T}) only when
# it is very long; shorter cells that are still too wide for an 80-column terminal make
# groff warn "table wider than line width" and overflow. This wraps every cell longer
# than WRAP characters in a text block and marks the last column expandable (lx), so
# each table fits the page.
BEGIN { FS = OFS = "\t"; if (!WRAP) WRAP = 24 }
function cells(line,   n, f, i, out) {
  n = split(line, f, "\t")
  out = ""
  for (i = 1; i <= n; i++) {
    if (length(f[i]) > WRAP && f[i] != "T{") f[i] = "T{\n" f[i] "\nT}"
    out = out (i > 1 ? "\t" : "") f[i]
  }
  return out
}
/^\.TS/ { intable = 1; format = 1; print; next }
/^\.TE/ { intable = 0; print; next }
intable && format {
  if ($0 ~ /\.$/) { sub(/l \.$/, "lx ."); format = 0 }
  print; next
}
intable && inblock {
  if ($0 ~ /^T}/) {
    inblock = 0
    rest = substr($0, 3)
    if (rest != "") { rest = cells(substr(rest, 2)); $0 = "T}\t" rest; if (rest ~ /T\{$/) inblock = 1 }
  }
  print; next
}
intable {
  line = cells($0)
  if (line ~ /T\{$/) inblock = 1
  print line; next
}
{ print }
