// expect-error: SyntaxError: expected ")" but found "{" (line 4, column 12)
const ok = 1;
// the model forgot a parenthesis
if (ok > 0 {
  ok;
}
