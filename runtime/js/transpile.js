/*
 * transpile.js: modern JavaScript and TypeScript brought down to what Duktape 2.7 runs
 * (ES5 plus the prelude's runtime, reached as __ts.NAME).
 *
 * Written for this project (docs/sandbox.md says why not a vendored transpiler): a
 * tokenizer, a recursive-descent parser for ES2022 with TypeScript's type syntax, and
 * an emitter that lowers as it prints. It runs in a heap of its own (never the one that
 * runs the code) in the sandbox's child process, under the run's deadline and memory
 * cap; its output is cached by the parent by content.
 *
 * What it lowers: let/const (block scope by renaming shadowing names; a loop's
 * per-iteration binding when a closure captures it), arrow functions (lexical this and
 * arguments), template literals (tagged too), classes (fields, statics, private #names,
 * accessors, extends with super calls and super.x), destructuring (declarations,
 * parameters, assignments, for-of heads, catch), default/rest parameters, spread
 * (calls, new, arrays, objects), for-of over any iterable, computed and shorthand
 * members, ?. and ??, logical assignment, **, async/await and generators (on Duktape's
 * coroutines), optional catch binding, numeric separators and binary/octal literals,
 * ES module syntax (import of the sandbox's own globals; export as module.exports). TypeScript: type
 * annotations, interfaces, type aliases, `as`, `satisfies`, `!`, generics, enums, access
 * modifiers and parameter properties, `declare`, `abstract`, overloads, `import type`.
 *
 * Lines are kept: every construct is printed on the line it came from (or later), so an
 * error Duktape reports at line N is the user's line N. Syntax errors give the line and
 * column of the user's source.
 *
 * Entry: transpile(src, {language: 'js'|'ts'|'auto', module: bool, filename}) returns the
 * ES5 source or throws a SyntaxError.
 */
(function () {
'use strict';

var KEYWORDS = {};
('break case catch class const continue debugger default delete do else export extends finally ' +
 'for function if import in instanceof new return super switch this throw try typeof var void ' +
 'while with null true false').split(' ').forEach(function (k) { KEYWORDS[k] = true; });
var REGEX_AFTER_KW = {'return': 1, 'typeof': 1, 'instanceof': 1, 'in': 1, 'of': 1, 'new': 1, 'delete': 1,
  'void': 1, 'throw': 1, 'case': 1, 'do': 1, 'else': 1, 'yield': 1, 'await': 1, 'extends': 1};
var PUNCS = ['>>>=', '...', '===', '!==', '**=', '<<=', '>>=', '>>>', '&&=', '||=', '??=',
  '=>', '==', '!=', '<=', '>=', '&&', '||', '??', '?.', '++', '--', '+=', '-=', '*=', '/=', '%=',
  '&=', '|=', '^=', '<<', '>>', '**', '{', '}', '(', ')', '[', ']', ';', ',', '<', '>', '+', '-',
  '*', '/', '%', '&', '|', '^', '!', '~', '?', ':', '=', '.', '@', '#'];

/* Punctuation that can appear inside <type arguments>: anything else means `<` was a
 * comparison. */
var TYPE_PUNC = {'<': 1, '>': 1, '>>': 1, '>>>': 1, ',': 1, '.': 1, '[': 1, ']': 1, '(': 1, ')': 1,
  '{': 1, '}': 1, '|': 1, '&': 1, ':': 1, '?': 1, '=>': 1, '...': 1, '-': 1, ';': 1, '=': 1};
/* A JavaScript string literal for s (JSON's, with the two line separators escaped, which
 * ES5 does not allow raw in a string). */
function jsStr(s) { return JSON.stringify(s).replace(/\u2028/g, '\\u2028').replace(/\u2029/g, '\\u2029'); }

var PUNC_SET = {};
PUNCS.forEach(function (x) { PUNC_SET[x] = 1; });

function SyntaxErr(msg, line, col) {
  var e = new SyntaxError(msg + ' (line ' + line + ', column ' + col + ')');
  e.lineNumber = line;
  e.columnNumber = col;
  return e;
}

/* ---- tokenizer ----------------------------------------------------------------------- */

function isIdStart(c) {
  return (c >= 97 && c <= 122) || (c >= 65 && c <= 90) || c === 36 || c === 95 || c > 127;
}
function isIdPart(c) { return isIdStart(c) || (c >= 48 && c <= 57); }

function tokenize(src) {
  var toks = [], i = 0, n = src.length, line = 1, lineStart = 0, nl = false;
  var braces = []; /* 'b' for a brace, 't' for a template's ${ */
  function err(msg, at) { throw SyntaxErr(msg, line, (at === undefined ? i : at) - lineStart + 1); }
  function push(t, v, s, extra) {
    var tok = {t: t, v: v, s: s, e: i, line: line, col: s - lineStart + 1, nl: nl};
    if (extra) for (var k in extra) tok[k] = extra[k];
    toks.push(tok);
    nl = false;
    return tok;
  }
  function regexAllowed() {
    var p = toks.length ? toks[toks.length - 1] : null;
    if (!p) return true;
    if (p.t === 'num' || p.t === 'str' || p.t === 'regex' || p.t === 'priv') return false;
    if (p.t === 'tmpl') return !p.tail;
    if (p.t === 'name') return KEYWORDS[p.v] ? !!REGEX_AFTER_KW[p.v] || (p.v !== 'this' && p.v !== 'super' && p.v !== 'null' && p.v !== 'true' && p.v !== 'false') : !!REGEX_AFTER_KW[p.v];
    if (p.t === 'punc') return p.v !== ')' && p.v !== ']' && p.v !== '}' && p.v !== '++' && p.v !== '--';
    return true;
  }
  function readEscape(quote) {
    /* at a backslash inside a string or template; returns the cooked text */
    i++;
    var c = src.charAt(i);
    i++;
    switch (c) {
      case 'n': return '\n';
      case 't': return '\t';
      case 'r': return '\r';
      case 'b': return '\b';
      case 'f': return '\f';
      case 'v': return '\v';
      case '0':
        if (!/[0-9]/.test(src.charAt(i))) return '\0';
        break;
      case 'x': {
        var h = src.substr(i, 2);
        if (!/^[0-9a-fA-F]{2}$/.test(h)) err('bad \\x escape', i - 2);
        i += 2;
        return String.fromCharCode(parseInt(h, 16));
      }
      case 'u': {
        var cp;
        if (src.charAt(i) === '{') {
          var end = src.indexOf('}', i);
          if (end < 0) err('bad \\u{} escape', i - 2);
          cp = parseInt(src.slice(i + 1, end), 16);
          if (!(cp >= 0 && cp <= 0x10FFFF)) err('bad \\u{} escape', i - 2);
          i = end + 1;
        } else {
          var u = src.substr(i, 4);
          if (!/^[0-9a-fA-F]{4}$/.test(u)) err('bad \\u escape', i - 2);
          i += 4;
          cp = parseInt(u, 16);
        }
        return String.fromCodePoint(cp);
      }
      case '\r':
        if (src.charAt(i) === '\n') i++;
        line++; lineStart = i;
        return '';
      case '\n': case '\u2028': case '\u2029':
        line++; lineStart = i;
        return '';
    }
    if (c >= '1' && c <= '9' && quote === '`') err('octal escapes are not allowed in templates', i - 2);
    return c;
  }
  function readTemplateChunk(start, head) {
    /* after ` (head) or }: up to ${ or ` */
    var cooked = '', rawStart = i;
    for (;;) {
      if (i >= n) err('unterminated template literal', start);
      var c = src.charAt(i);
      if (c === '`') {
        var raw = src.slice(rawStart, i);
        i++;
        push('tmpl', cooked, start, {raw: raw, tail: true, head: head});
        return;
      }
      if (c === '$' && src.charAt(i + 1) === '{') {
        var raw2 = src.slice(rawStart, i);
        i += 2;
        push('tmpl', cooked, start, {raw: raw2, tail: false, head: head});
        braces.push('t');
        return;
      }
      if (c === '\\') { cooked += readEscape('`'); continue; }
      if (c === '\n') { line++; lineStart = i + 1; }
      cooked += c;
      i++;
    }
  }
  while (i < n) {
    var c = src.charCodeAt(i), s = i;
    if (c === 10 || c === 0x2028 || c === 0x2029) { i++; line++; lineStart = i; nl = true; continue; }
    if (c === 13) { i++; if (src.charCodeAt(i) === 10) i++; line++; lineStart = i; nl = true; continue; }
    if (c === 32 || c === 9 || c === 11 || c === 12 || c === 0xA0 || c === 0xFEFF) { i++; continue; }
    if (c === 47) {
      var c2 = src.charCodeAt(i + 1);
      if (c2 === 47) {
        for (; i < n; i++) { var lc = src.charCodeAt(i); if (lc === 10 || lc === 13 || lc === 0x2028 || lc === 0x2029) break; }
        continue;
      }
      if (c2 === 42) {
        var end = src.indexOf('*/', i + 2);
        if (end < 0) err('unterminated comment');
        var body = src.slice(i, end);
        var m = body.match(/\r\n|[\n\r\u2028\u2029]/g);
        if (m) { line += m.length; lineStart = i + body.lastIndexOf(m[m.length - 1]) + m[m.length - 1].length; nl = true; }
        i = end + 2;
        continue;
      }
      if (regexAllowed()) {
        i++;
        var inClass = false;
        for (;;) {
          if (i >= n) err('unterminated regular expression', s);
          var ch = src.charAt(i);
          if (ch === '\n' || ch === '\r') err('unterminated regular expression', s);
          if (ch === '\\') { i += 2; continue; }
          if (ch === '[') inClass = true;
          else if (ch === ']') inClass = false;
          else if (ch === '/' && !inClass) break;
          i++;
        }
        var pattern = src.slice(s + 1, i);
        i++;
        var fs = i;
        while (i < n && isIdPart(src.charCodeAt(i))) i++;
        push('regex', pattern, s, {flags: src.slice(fs, i)});
        continue;
      }
    }
    if (c === 96) { i++; readTemplateChunk(s, true); continue; }
    if (c === 125 && braces.length && braces[braces.length - 1] === 't') {
      braces.pop();
      i++;
      readTemplateChunk(s, false);
      continue;
    }
    if (c === 34 || c === 39) {
      var q = src.charAt(i), val = '';
      i++;
      for (;;) {
        if (i >= n) err('unterminated string', s);
        var sc = src.charAt(i);
        if (sc === q) { i++; break; }
        if (sc === '\\') { val += readEscape(q); continue; }
        if (sc === '\n' || sc === '\r') err('unterminated string', s);
        val += sc;
        i++;
      }
      push('str', val, s);
      continue;
    }
    if ((c >= 48 && c <= 57) || (c === 46 && /[0-9]/.test(src.charAt(i + 1)))) {
      var m2 = /^(?:0[xX][0-9a-fA-F_]+|0[oO][0-7_]+|0[bB][01_]+|(?:[0-9][0-9_]*\.?[0-9_]*|\.[0-9][0-9_]*)(?:[eE][+-]?[0-9_]+)?)n?/.exec(src.slice(i, i + 400));
      var text = m2[0];
      i += text.length;
      if (text.charAt(text.length - 1) === 'n') err('BigInt literals are not supported', s);
      if (isIdStart(src.charCodeAt(i))) err('identifier directly after a number', i);
      var clean = text.replace(/_/g, ''), v;
      if (/^0[oO]/.test(clean)) v = String(parseInt(clean.slice(2), 8));
      else if (/^0[bB]/.test(clean)) v = String(parseInt(clean.slice(2), 2));
      else v = clean;
      push('num', v, s);
      continue;
    }
    if (isIdStart(c) || c === 92) {
      var id = '', j0 = i;
      while (j0 < n && isIdPart(src.charCodeAt(j0))) j0++;
      if (j0 >= n || src.charCodeAt(j0) !== 92) { /* the common case: no escapes */
        id = src.slice(i, j0);
        i = j0;
        push('name', id, s);
        continue;
      }
      while (i < n) {
        var cc = src.charCodeAt(i);
        if (cc === 92) {
          if (src.charAt(i + 1) !== 'u') err('bad escape in identifier');
          var esc = readEscape(''); /* readEscape steps over the backslash itself */
          if (!(id ? isIdPart(esc.charCodeAt(0)) : isIdStart(esc.charCodeAt(0)))) err('bad escape in identifier', i - 1);
          id += esc;
          continue;
        }
        if (!isIdPart(cc)) break;
        id += src.charAt(i);
        i++;
      }
      push('name', id, s);
      continue;
    }
    if (c === 35 && isIdStart(src.charCodeAt(i + 1))) {
      i++;
      var pn = '';
      while (i < n && isIdPart(src.charCodeAt(i))) { pn += src.charAt(i); i++; }
      push('priv', pn, s);
      continue;
    }
    var p = null;
    for (var L = 4; L >= 1; L--) {
      var cand = src.substr(i, L);
      if (PUNC_SET[cand] === 1) { p = cand; break; }
    }
    if (!p) err('unexpected character ' + jsStr(src.charAt(i)));
    /* ?. followed by a digit is ? and .5 */
    if (p === '?.' && /[0-9]/.test(src.charAt(i + 2))) p = '?';
    i += p.length;
    if (p === '{') braces.push('b');
    else if (p === '}') braces.pop();
    push('punc', p, s);
  }
  push('eof', '', i);
  return toks;
}

/* ---- parser ------------------------------------------------------------------------- */

function Parser(src, opts) {
  this.src = src;
  this.toks = tokenize(src);
  this.p = 0;
  this.ts = opts.language !== 'js';
  this.module = !!opts.module;
  this.fn = {async: false, gen: false, arrow: false, top: true};
  this.inClass = 0;
}
var P = Parser.prototype;
P.peek = function (o) { return this.toks[this.p + (o || 0)] || this.toks[this.toks.length - 1]; };
P.next = function () { var t = this.toks[this.p]; if (t.t !== 'eof') this.p++; return t; };
P.is = function (v, o) { var t = this.peek(o); return (t.t === 'punc' || t.t === 'name') && t.v === v; };
P.isName = function (v, o) { var t = this.peek(o); return t.t === 'name' && (v === undefined || t.v === v); };
P.eat = function (v) { if (this.is(v) && (this.peek().t === 'punc' || this.peek().t === 'name')) { return this.next(); } return null; };
P.fail = function (t, msg) {
  t = t || this.peek();
  if (!msg && t.t === 'punc' && t.v === '@') msg = 'decorators are not supported';
  throw SyntaxErr(msg || (t.t === 'eof' ? 'unexpected end of input' : 'unexpected token ' + (t.t === 'str' ? jsStr(t.v) : t.t === 'tmpl' ? 'template' : t.v)), t.line, t.col);
};
P.expect = function (v) {
  var t = this.peek();
  if ((t.t === 'punc' || t.t === 'name') && t.v === v) return this.next();
  this.fail(t, t.t === 'eof' ? 'unexpected end of input, expected ' + v : 'expected ' + jsStr(v) + ' but found ' + (t.t === 'str' ? 'a string' : jsStr(t.v)));
};
P.semi = function () {
  if (this.eat(';')) return;
  var t = this.peek();
  if (t.t === 'eof' || (t.t === 'punc' && t.v === '}') || t.nl) return;
  this.fail(t);
};
P.node = function (type, t, props) {
  var nd = props || {};
  nd.type = type;
  nd.line = t.line;
  nd.col = t.col;
  return nd;
};
P.ident = function () {
  var t = this.peek();
  if (t.t !== 'name' || (KEYWORDS[t.v] && t.v !== 'of')) this.fail(t, t.t === 'name' ? 'unexpected keyword ' + t.v : undefined);
  this.next();
  return this.node('Identifier', t, {name: t.v});
};
/* A property name (any identifier or keyword, a string, a number, or [computed]). */
P.propName = function () {
  var t = this.peek();
  if (t.t === 'punc' && t.v === '[') {
    this.next();
    var e = this.assign();
    this.expect(']');
    return {computed: true, key: e};
  }
  if (t.t === 'name') { this.next(); return {computed: false, key: this.node('Identifier', t, {name: t.v})}; }
  if (t.t === 'str' || t.t === 'num') { this.next(); return {computed: false, key: this.node('Literal', t, {value: t.t === 'num' ? Number(t.v) : t.v, raw: t.t === 'num' ? t.v : jsStr(t.v)})}; }
  if (t.t === 'priv') { this.next(); return {computed: false, key: this.node('Identifier', t, {name: '#' + t.v}), priv: true}; }
  this.fail(t);
};

/* The index of the token that closes the bracket at toks[q] (any of ) ] } closes any
 * of ( [ {, as a depth count would; the eof token when none does), from one pass over
 * the tokens made the first time: looking ahead for an arrow's => from every ( by
 * scanning would make nested parentheses quadratic. */
P.closeOf = function (q) {
  if (!this.closers) {
    var toks = this.toks, c = new Array(toks.length), stack = [], eof = toks.length - 1;
    for (var i = 0; i < toks.length; i++) {
      var t = toks[i];
      if (t.t !== 'punc') continue;
      if (t.v === '(' || t.v === '[' || t.v === '{') { stack.push(i); c[i] = eof; }
      else if ((t.v === ')' || t.v === ']' || t.v === '}') && stack.length) c[stack.pop()] = i;
    }
    this.closers = c;
  }
  var k = this.closers[q];
  return k === undefined ? this.toks.length - 1 : k;
};

/* ---- TypeScript types: parsed only to be skipped ---------------------------------- */

P.skipBalanced = function (open, close) {
  var depth = 0;
  for (;;) {
    var t = this.next();
    if (t.t === 'eof') this.fail(t);
    if (t.t === 'punc') {
      if (t.v === open) depth++;
      else if (t.v === close && --depth === 0) return;
    } else if (t.t === 'tmpl' && !t.tail && open !== '{') {
      /* a template literal type: its ${ } parts nest braces the tokenizer matched */
    }
  }
};
/* <...> type arguments or parameters; `>>` closes two. */
P.skipAngles = function () {
  var depth = 0;
  for (;;) {
    var t = this.next();
    if (t.t === 'eof') this.fail(t);
    if (t.t !== 'punc') continue;
    if (!TYPE_PUNC[t.v]) return this.fail(t);
    if (t.v === '<') depth++;
    else if (t.v === '>') depth--;
    else if (t.v === '>>') depth -= 2;
    else if (t.v === '>>>') depth -= 3;
    else if (t.v === '>=' || t.v === '>>=') return this.fail(t);
    else if (t.v === '(' ) { this.p--; this.skipBalanced('(', ')'); }
    else if (t.v === '{') { this.p--; this.skipBalanced('{', '}'); }
    else if (t.v === '[') { this.p--; this.skipBalanced('[', ']'); }
    else if (t.v === ';' || t.v === '}' || t.v === ')') return this.fail(t);
    if (depth <= 0) { if (depth < 0) this.fail(t); return; }
  }
};
P.skipType = function () {
  this.eat('|') || this.eat('&');
  this.skipTypeUnit();
  for (;;) {
    var t = this.peek();
    if (t.t === 'punc' && (t.v === '|' || t.v === '&')) { this.next(); this.skipTypeUnit(); continue; }
    if (t.t === 'name' && t.v === 'extends' && !t.nl) { /* conditional type */
      this.next(); this.skipTypeUnit();
      this.expect('?'); this.skipType(); this.expect(':'); this.skipType();
      continue;
    }
    break;
  }
};
P.skipTypeUnit = function () {
  var t = this.peek();
  while (t.t === 'name' && (t.v === 'keyof' || t.v === 'readonly' || t.v === 'unique' || t.v === 'infer' || t.v === 'asserts') &&
         (this.peek(1).t === 'name' || this.peek(1).v === '(' || this.peek(1).v === '[' || this.peek(1).v === '{')) {
    this.next();
    t = this.peek();
  }
  if (t.t === 'punc' && t.v === '(') {
    /* parenthesized type or function type */
    this.skipBalanced('(', ')');
    if (this.eat('=>')) { this.skipType(); return; }
  } else if (t.t === 'punc' && t.v === '<') {
    this.skipAngles();
    this.skipBalanced('(', ')');
    this.expect('=>');
    this.skipType();
    return;
  } else if (t.t === 'name' && t.v === 'new') {
    this.next();
    if (this.is('<')) this.skipAngles();
    this.skipBalanced('(', ')');
    this.expect('=>');
    this.skipType();
    return;
  } else if (t.t === 'punc' && t.v === '{') {
    this.skipBalanced('{', '}');
  } else if (t.t === 'punc' && t.v === '[') {
    this.skipBalanced('[', ']');
  } else if (t.t === 'name' && t.v === 'typeof') {
    this.next();
    this.next();
    while (this.is('.') ) { this.next(); this.next(); }
    if (this.is('<') && !this.peek().nl) this.skipAngles();
  } else if (t.t === 'name' || t.t === 'str' || t.t === 'num' || (t.t === 'tmpl')) {
    if (t.t === 'tmpl') {
      var depth = 0;
      for (;;) { var x = this.next(); if (x.t === 'tmpl') { if (x.tail && depth === 0) break; if (!x.tail) depth++; } if (x.t === 'tmpl' && x.tail) { depth--; if (depth <= 0) break; } if (x.t === 'eof') this.fail(x); }
    } else {
      this.next();
    }
    if (t.t === 'name') {
      if (this.isName('is') && !this.peek().nl) { this.next(); this.skipType(); return; }
      while (this.is('.') && this.peek(1).t === 'name') { this.next(); this.next(); }
      if (this.is('<') && !this.peek().nl) this.skipAngles();
    }
  } else if (t.t === 'punc' && t.v === '-' && this.peek(1).t === 'num') {
    this.next(); this.next();
  } else {
    this.fail(t, 'expected a type');
  }
  /* postfix: T[] and T[K] */
  while (this.is('[') && !this.peek().nl) {
    this.skipBalanced('[', ']');
  }
};
P.typeAnn = function () { if (this.ts && this.is(':')) { this.next(); this.skipType(); return true; } return false; };
P.typeParams = function () { if (this.ts && this.is('<')) { this.skipAngles(); return true; } return false; };

/* ---- statements ----------------------------------------------------------------------- */

P.program = function () {
  var body = [];
  while (this.peek().t !== 'eof') {
    var s = this.statement(true);
    if (s) body.push(s);
  }
  return {type: 'Program', body: body, line: 1};
};
P.block = function () {
  var t = this.expect('{'), body = [];
  while (!this.is('}')) {
    if (this.peek().t === 'eof') this.fail();
    var s = this.statement(false);
    if (s) body.push(s);
  }
  this.next();
  return this.node('BlockStatement', t, {body: body});
};
P.isLetDecl = function () {
  return this.isName('let') && (this.peek(1).t === 'name' || this.is('[', 1) || this.is('{', 1)) && !(this.peek(1).t === 'name' && this.peek(1).v === 'in');
};
P.statement = function (top) {
  var t = this.peek();
  if (t.t === 'punc') {
    if (t.v === '{') return this.block();
    if (t.v === ';') { this.next(); return this.node('EmptyStatement', t); }
    if (t.v === '@') this.fail(t, 'decorators are not supported');
  }
  if (t.t === 'name') {
    switch (t.v) {
      case 'var': case 'const': {
        if (t.v === 'const' && this.isName('enum', 1) && this.ts) { this.next(); return this.enumDecl(); }
        var d = this.varDecl(); this.semi(); return d;
      }
      case 'let':
        if (this.isLetDecl()) { var d2 = this.varDecl(); this.semi(); return d2; }
        break;
      case 'function': return this.functionDecl(false, t);
      case 'async':
        if (this.isName('function', 1) && !this.peek(1).nl) { this.next(); return this.functionDecl(true, t); }
        break;
      case 'class': return this.classDecl(t);
      case 'if': {
        this.next(); this.expect('(');
        var test = this.expr(); this.expect(')');
        var cons = this.statement(false), alt = null;
        if (this.eat('else')) alt = this.statement(false);
        return this.node('IfStatement', t, {test: test, consequent: cons, alternate: alt});
      }
      case 'for': return this.forStatement(t);
      case 'while': {
        this.next(); this.expect('(');
        var wt = this.expr(); this.expect(')');
        return this.node('WhileStatement', t, {test: wt, body: this.statement(false)});
      }
      case 'do': {
        this.next();
        var body = this.statement(false);
        this.expect('while'); this.expect('(');
        var dt = this.expr(); this.expect(')');
        this.eat(';');
        return this.node('DoWhileStatement', t, {test: dt, body: body});
      }
      case 'return': {
        this.next();
        var arg = null;
        if (!this.is(';') && !this.is('}') && this.peek().t !== 'eof' && !this.peek().nl) arg = this.expr();
        this.semi();
        return this.node('ReturnStatement', t, {argument: arg});
      }
      case 'break': case 'continue': {
        this.next();
        var label = null;
        if (this.peek().t === 'name' && !this.peek().nl && !KEYWORDS[this.peek().v]) label = this.next().v;
        this.semi();
        return this.node(t.v === 'break' ? 'BreakStatement' : 'ContinueStatement', t, {label: label});
      }
      case 'throw': {
        this.next();
        var ta = this.expr();
        this.semi();
        return this.node('ThrowStatement', t, {argument: ta});
      }
      case 'try': {
        this.next();
        var blk = this.block(), param = null, handler = null, fin = null;
        if (this.eat('catch')) {
          if (this.eat('(')) { param = this.bindingTarget(); this.typeAnn(); this.expect(')'); }
          handler = {param: param, body: this.block()};
        }
        if (this.eat('finally')) fin = this.block();
        if (!handler && !fin) this.fail(this.peek(), 'try without catch or finally');
        return this.node('TryStatement', t, {block: blk, handler: handler, finalizer: fin});
      }
      case 'switch': {
        this.next(); this.expect('(');
        var disc = this.expr(); this.expect(')'); this.expect('{');
        var cases = [];
        while (!this.eat('}')) {
          var ct = this.peek(), ctest = null;
          if (this.eat('case')) ctest = this.expr();
          else this.expect('default');
          this.expect(':');
          var cbody = [];
          while (!this.is('case') && !this.is('default') && !this.is('}')) {
            if (this.peek().t === 'eof') this.fail();
            cbody.push(this.statement(false));
          }
          cases.push({test: ctest, consequent: cbody, line: ct.line});
        }
        return this.node('SwitchStatement', t, {discriminant: disc, cases: cases});
      }
      case 'debugger': this.next(); this.semi(); return this.node('EmptyStatement', t);
      case 'with': this.fail(t, 'with is not supported');
      case 'import':
        if (!this.is('(', 1) && !this.is('.', 1)) return this.importDecl(t);
        break;
      case 'export': return this.exportDecl(t);
    }
    if (this.ts) {
      var ts = this.tsStatement(t);
      if (ts !== undefined) return ts;
    }
    /* label */
    if (this.is(':', 1) && !KEYWORDS[t.v]) {
      this.next(); this.next();
      return this.node('LabeledStatement', t, {label: t.v, body: this.statement(false)});
    }
  }
  var e = this.expr();
  this.semi();
  return this.node('ExpressionStatement', t, {expression: e});
};
/* TypeScript-only statements: undefined when this is not one. */
P.tsStatement = function (t) {
  var n1 = this.peek(1);
  if (t.v === 'interface' && n1.t === 'name' && !n1.nl) {
    this.next(); this.next();
    this.typeParams();
    if (this.eat('extends')) { do { this.skipType(); } while (this.eat(',')); }
    this.skipBalanced('{', '}');
    return null;
  }
  if (t.v === 'type' && n1.t === 'name' && !n1.nl && (this.is('=', 2) || this.is('<', 2))) {
    this.next(); this.next();
    this.typeParams();
    this.expect('=');
    this.skipType();
    this.semi();
    return null;
  }
  if (t.v === 'enum' && n1.t === 'name') return this.enumDecl();
  if (t.v === 'declare' && n1.t === 'name' && !n1.nl) {
    this.next();
    this.skipDeclaration();
    return null;
  }
  if (t.v === 'abstract' && this.isName('class', 1)) { this.next(); return this.classDecl(this.peek()); }
  if ((t.v === 'namespace' || t.v === 'module') && n1.t === 'name' && this.is('{', 2)) {
    this.fail(t, 'TypeScript namespaces are not supported');
  }
  return undefined;
};
P.skipDeclaration = function () {
  /* declare const x: T; declare function f(): T; declare module 'x' { } declare global { } */
  for (;;) {
    var t = this.peek();
    if (t.t === 'eof') return;
    if (t.t === 'punc' && t.v === '{') { this.skipBalanced('{', '}'); if (!this.is(';')) return; this.next(); return; }
    if (t.t === 'punc' && t.v === '(') { this.skipBalanced('(', ')'); continue; }
    if (t.t === 'punc' && t.v === ';') { this.next(); return; }
    if (t.nl && this.p > 0 && !(this.toks[this.p - 1].t === 'punc' && /[:|&,=(<]/.test(this.toks[this.p - 1].v))) return;
    this.next();
  }
};
P.enumDecl = function () {
  var t = this.expect('enum'), id = this.ident(), members = [];
  this.expect('{');
  while (!this.eat('}')) {
    var mt = this.peek(), name;
    if (mt.t === 'str') { this.next(); name = mt.v; }
    else name = this.ident().name;
    var init = null;
    if (this.eat('=')) init = this.assign();
    members.push({name: name, init: init, line: mt.line});
    if (!this.eat(',')) { this.expect('}'); break; }
  }
  return this.node('EnumDeclaration', t, {id: id, members: members});
};
P.varDecl = function (noIn) {
  var t = this.next(), decls = [];
  do {
    var dt = this.peek(), id = this.bindingTarget();
    if (this.ts) { this.eat('!'); this.typeAnn(); }
    var init = null;
    if (this.eat('=')) init = this.assign(noIn);
    decls.push({id: id, init: init, line: dt.line});
  } while (this.eat(','));
  return this.node('VariableDeclaration', t, {kind: t.v, declarations: decls});
};
P.forStatement = function (t) {
  this.next();
  var isAwait = !!this.eat('await');
  this.expect('(');
  var init = null;
  if (this.is(';')) {
    /* no init */
  } else if (this.isName('var') || this.isName('const') || this.isLetDecl()) {
    init = this.varDecl(true);
  } else {
    init = this.expr(true);
  }
  if (init && (this.isName('of') || this.is('in'))) {
    var kind = this.next().v;
    var right = kind === 'of' ? this.assign() : this.expr();
    this.expect(')');
    var left = init;
    if (left.type !== 'VariableDeclaration') left = this.toPattern(left, true);
    return this.node(kind === 'of' ? 'ForOfStatement' : 'ForInStatement', t, {left: left, right: right, body: this.statement(false), await: isAwait});
  }
  this.expect(';');
  var test = this.is(';') ? null : this.expr();
  this.expect(';');
  var update = this.is(')') ? null : this.expr();
  this.expect(')');
  return this.node('ForStatement', t, {init: init, test: test, update: update, body: this.statement(false)});
};

/* import: only the sandbox's own globals can be imported (z, defineTool, definePrompt,
 * defineAgent: 'zod' or any module naming them); anything else is refused, saying so. */
var IMPORTABLE = {z: 1, defineTool: 1, definePrompt: 1, defineAgent: 1};
P.importDecl = function (t) {
  this.next();
  if (this.ts && this.isName('type') && !this.is(',', 1) && !this.isName('from', 1)) {
    /* import type ... */
    while (!this.is(';') && this.peek().t !== 'str' && this.peek().t !== 'eof') this.next();
    if (this.peek().t === 'str') this.next();
    this.semi();
    return null;
  }
  var binds = [];
  if (this.peek().t === 'str') { var only = this.next(); this.semi(); return this.node('ImportDeclaration', t, {source: only.v, binds: []}); }
  if (this.peek().t === 'name' && !this.is('*') && !this.is('{')) {
    var def = this.ident();
    binds.push({imported: 'default', local: def.name, line: def.line, col: def.col});
    this.eat(',');
  }
  if (this.eat('*')) {
    this.expect('as');
    var ns = this.ident();
    binds.push({imported: '*', local: ns.name, line: ns.line, col: ns.col});
  } else if (this.eat('{')) {
    while (!this.eat('}')) {
      if (this.ts && this.isName('type') && this.peek(1).t === 'name' && !this.is(',', 1) && !this.is('}', 1)) { this.next(); this.next(); if (this.eat('as')) this.next(); this.eat(','); continue; }
      var it = this.peek(), imp = it.t === 'str' ? this.next().v : this.next().v, loc = imp;
      if (this.eat('as')) loc = this.ident().name;
      binds.push({imported: imp, local: loc, line: it.line, col: it.col});
      if (!this.eat(',')) { this.expect('}'); break; }
    }
  }
  this.expect('from');
  var src = this.next();
  if (src.t !== 'str') this.fail(src);
  this.semi();
  return this.node('ImportDeclaration', t, {source: src.v, binds: binds});
};
P.exportDecl = function (t) {
  this.next();
  if (this.eat('default')) {
    var dt = this.peek();
    if (this.isName('function') || (this.isName('async') && this.isName('function', 1))) {
      var isAsync = !!this.eat('async');
      var f = this.functionDecl(isAsync, dt, true);
      return this.node('ExportDefault', t, {declaration: f});
    }
    if (this.isName('class')) return this.node('ExportDefault', t, {declaration: this.classDecl(dt, true)});
    var e = this.assign();
    this.semi();
    return this.node('ExportDefault', t, {expression: e});
  }
  if (this.ts && (this.isName('type') || this.isName('interface')) && this.peek(1).t === 'name') {
    if (this.isName('type') && this.is('{', 1)) { this.skipBalanced('{', '}'); if (this.eat('from')) this.next(); this.semi(); return null; }
    return this.tsStatement(this.peek());
  }
  if (this.ts && this.isName('declare')) { this.next(); this.skipDeclaration(); return null; }
  if (this.eat('{')) {
    var specs = [];
    while (!this.eat('}')) {
      var lt = this.next(), ex = lt.v;
      if (this.eat('as')) ex = this.next().v;
      specs.push({local: lt.v, exported: ex});
      if (!this.eat(',')) { this.expect('}'); break; }
    }
    if (this.eat('from')) this.fail(this.peek(-1), 're-exporting from another module is not available in the sandbox');
    this.semi();
    return this.node('ExportNames', t, {specs: specs});
  }
  if (this.eat('*')) this.fail(t, 're-exporting from another module is not available in the sandbox');
  var d = this.statement(true);
  return this.node('ExportDecl', t, {declaration: d});
};

/* ---- functions and classes ---------------------------------------------------------- */

P.withFn = function (state, f) {
  var saved = this.fn;
  this.fn = state;
  try { return f.call(this); } finally { this.fn = saved; }
};
P.params = function () {
  this.expect('(');
  var ps = [];
  while (!this.eat(')')) {
    var pt = this.peek();
    if (this.ts) { /* parameter properties and decorators-free modifiers */
      var mods = [];
      while (this.peek().t === 'name' && /^(public|private|protected|readonly|override)$/.test(this.peek().v) &&
             (this.peek(1).t === 'name' || this.is('{', 1) || this.is('[', 1))) mods.push(this.next().v);
      if (mods.length) pt.prop = true;
    }
    var rest = !!this.eat('...');
    if (this.ts && this.isName('this') && (this.is(':', 1) || this.is(',', 1) || this.is(')', 1))) {
      this.next(); this.typeAnn(); this.eat(','); continue;
    }
    var target = this.bindingTarget();
    if (this.ts) { this.eat('?'); this.typeAnn(); }
    var dflt = null;
    if (!rest && this.eat('=')) dflt = this.assign();
    ps.push({target: target, dflt: dflt, rest: rest, prop: !!pt.prop && target.type === 'Identifier', line: pt.line});
    if (rest) { this.eat(','); this.expect(')'); break; }
    if (!this.eat(',')) { this.expect(')'); break; }
  }
  return ps;
};
P.functionRest = function (t, id, isAsync, isGen, isMethod, kind) {
  var self = this;
  return this.withFn({async: isAsync, gen: isGen, arrow: false, top: false, usesThis: false, usesArgs: false, method: isMethod}, function () {
    self.typeParams();
    var params = self.params();
    self.typeAnn();
    if (self.ts && !self.is('{')) { self.semi(); return null; } /* an overload signature */
    var body = self.block();
    return self.node(kind || 'FunctionExpression', t, {id: id, params: params, body: body, async: isAsync, generator: isGen, fnState: self.fn});
  });
};
P.functionDecl = function (isAsync, t, optionalName) {
  this.expect('function');
  var gen = !!this.eat('*');
  var id = optionalName && this.is('(') ? null : this.ident();
  var f = this.functionRest(t, id, isAsync, gen, false, 'FunctionDeclaration');
  return f;
};
P.classDecl = function (t, optionalName) {
  this.expect('class');
  var id = null;
  if (this.peek().t === 'name' && !this.isName('extends') && !this.isName('implements') && !this.is('{')) id = this.ident();
  if (!id && !optionalName) this.fail(this.peek(), 'a class declaration needs a name');
  var c = this.classRest(t, id);
  c.type = 'ClassDeclaration';
  return c;
};
P.classRest = function (t, id) {
  this.typeParams();
  var sup = null;
  if (this.eat('extends')) {
    sup = this.unaryOrHigher(true);
    if (this.ts && this.is('<')) this.skipAngles();
  }
  if (this.ts && this.eat('implements')) { do { this.skipType(); } while (this.eat(',')); }
  this.expect('{');
  var members = [];
  this.inClass++;
  while (!this.eat('}')) {
    if (this.eat(';')) continue;
    var mt = this.peek(), isStatic = false, kind = 'method', isAsync = false, gen = false;
    /* modifiers */
    for (;;) {
      var v = this.peek().v, nxt = this.peek(1);
      var nextIsName = nxt.t === 'name' || nxt.t === 'str' || nxt.t === 'num' || nxt.t === 'priv' || (nxt.t === 'punc' && (nxt.v === '[' || nxt.v === '*' || nxt.v === '{' || nxt.v === '#'));
      if (this.peek().t !== 'name' || !nextIsName || nxt.nl && v !== 'static') break;
      if (v === 'static') { if (nxt.t === 'punc' && nxt.v === '{') break; this.next(); isStatic = true; continue; }
      if (this.ts && /^(public|private|protected|readonly|abstract|override|declare|accessor)$/.test(v)) {
        if (v === 'declare' || v === 'abstract') mt.skip = true;
        this.next();
        continue;
      }
      break;
    }
    if (this.isName('static') && this.is('{', 1)) {
      this.next();
      var sb = this.withFn({async: false, gen: false, arrow: false, top: false, method: true}, function () { return this.block(); });
      members.push({kind: 'staticBlock', body: sb, line: mt.line, fnState: null});
      continue;
    }
    if (this.isName('async') && !this.is('(', 1) && !this.is('=', 1) && !this.peek(1).nl) { this.next(); isAsync = true; }
    if (this.eat('*')) gen = true;
    if ((this.isName('get') || this.isName('set')) && !this.is('(', 1) && !this.is('=', 1) && !this.is(';', 1) && !this.is('}', 1)) {
      kind = this.next().v;
    }
    if (this.ts && this.is('[') && this.peek(1).t === 'name' && this.is(':', 2)) { /* index signature */
      this.skipBalanced('[', ']'); this.typeAnn(); this.semi(); continue;
    }
    var pn = this.propName();
    if (this.ts) { this.eat('?'); this.eat('!'); }
    if (this.is('(') || this.is('<')) {
      var isCtor = !isStatic && !pn.computed && pn.key.name === 'constructor' && kind === 'method';
      var self = this;
      var f = this.functionRest(mt, null, isAsync, gen, true);
      if (!f || mt.skip) continue;
      members.push({kind: isCtor ? 'constructor' : kind, key: pn.key, computed: pn.computed, isStatic: isStatic, value: f, line: mt.line, priv: pn.priv});
      void self;
    } else {
      this.typeAnn();
      var init = null;
      if (this.eat('=')) init = this.withFn({async: false, gen: false, arrow: true, top: false, usesThis: false, method: true, field: true}, function () { return this.assign(); });
      this.semi();
      if (mt.skip) continue;
      members.push({kind: 'field', key: pn.key, computed: pn.computed, isStatic: isStatic, value: init, line: mt.line, priv: pn.priv});
    }
  }
  this.inClass--;
  return this.node('ClassExpression', t, {id: id, superClass: sup, members: members});
};

/* ---- binding patterns ------------------------------------------------------------------ */

P.bindingTarget = function () {
  var t = this.peek();
  if (t.t === 'punc' && t.v === '[') {
    this.next();
    var els = [], rest = null;
    while (!this.eat(']')) {
      if (this.is(',')) { this.next(); els.push(null); continue; }
      if (this.eat('...')) { rest = this.bindingTarget(); this.eat(','); this.expect(']'); break; }
      els.push(this.bindingElement());
      if (!this.eat(',')) { this.expect(']'); break; }
    }
    return this.node('ArrayPattern', t, {elements: els, rest: rest});
  }
  if (t.t === 'punc' && t.v === '{') {
    this.next();
    var props = [], orest = null;
    while (!this.eat('}')) {
      if (this.eat('...')) { orest = this.bindingTarget(); this.eat(','); this.expect('}'); break; }
      var pt = this.peek(), pn = this.propName(), value;
      if (this.eat(':')) value = this.bindingElement();
      else {
        if (pn.computed || pn.key.type !== 'Identifier') this.fail(pt);
        value = this.node('Identifier', pt, {name: pn.key.name});
        if (this.eat('=')) value = this.node('AssignmentPattern', pt, {left: value, right: this.assign()});
      }
      props.push({key: pn.key, computed: pn.computed, value: value});
      if (!this.eat(',')) { this.expect('}'); break; }
    }
    return this.node('ObjectPattern', t, {properties: props, rest: orest});
  }
  return this.ident();
};
P.bindingElement = function () {
  var t = this.peek(), target = this.bindingTarget();
  if (this.eat('=')) return this.node('AssignmentPattern', t, {left: target, right: this.assign()});
  return target;
};
/* An expression read before we knew it was a pattern (arrow parameters, [a, b] = ...). */
P.toPattern = function (e, assignTarget) {
  switch (e.type) {
    case 'Identifier': return e;
    case 'MemberExpression': if (assignTarget) return e; break;
    case 'AssignmentExpression':
      if (e.operator === '=') return this.node('AssignmentPattern', e, {left: this.toPattern(e.left, assignTarget), right: e.right});
      break;
    case 'ArrayExpression': {
      var els = [], rest = null;
      for (var i = 0; i < e.elements.length; i++) {
        var el = e.elements[i];
        if (el && el.type === 'SpreadElement') {
          if (i !== e.elements.length - 1) break;
          rest = this.toPattern(el.argument, assignTarget);
        } else {
          els.push(el ? this.toPattern(el, assignTarget) : null);
        }
      }
      return this.node('ArrayPattern', e, {elements: els, rest: rest});
    }
    case 'ObjectExpression': {
      var props = [], orest = null;
      for (var j = 0; j < e.properties.length; j++) {
        var p = e.properties[j];
        if (p.type === 'SpreadElement') { orest = this.toPattern(p.argument, assignTarget); continue; }
        if (p.kind !== 'init' || p.method) this.fail(null, 'invalid destructuring target');
        var v = p.shorthandDefault ? this.node('AssignmentPattern', p.value, {left: p.value, right: p.shorthandDefault}) : this.toPattern(p.value, assignTarget);
        props.push({key: p.key, computed: p.computed, value: v});
      }
      return this.node('ObjectPattern', e, {properties: props, rest: orest});
    }
    case 'TSAs': return this.toPattern(e.expression, assignTarget);
  }
  throw SyntaxErr('invalid destructuring or assignment target', e.line, e.col);
};

/* ---- expressions ---------------------------------------------------------------------- */

P.expr = function (noIn) {
  var t = this.peek(), e = this.assign(noIn);
  if (this.is(',')) {
    var list = [e];
    while (this.eat(',')) list.push(this.assign(noIn));
    return this.node('SequenceExpression', t, {expressions: list});
  }
  return e;
};
var ASSIGN_OPS = {'=': 1, '+=': 1, '-=': 1, '*=': 1, '/=': 1, '%=': 1, '**=': 1, '<<=': 1, '>>=': 1, '>>>=': 1,
  '&=': 1, '|=': 1, '^=': 1, '&&=': 1, '||=': 1, '??=': 1};
P.assign = function (noIn) {
  var t = this.peek();
  var arrow = this.tryArrow();
  if (arrow) return arrow;
  if (t.t === 'name' && t.v === 'yield' && this.fn.gen) {
    this.next();
    var delegate = !!this.eat('*'), arg = null;
    var nt = this.peek();
    if (!nt.nl && !(nt.t === 'punc' && /^[)\]};,:]$/.test(nt.v)) && nt.t !== 'eof') arg = this.assign(noIn);
    return this.node('YieldExpression', t, {argument: arg, delegate: delegate});
  }
  var left = this.conditional(noIn);
  var op = this.peek();
  if (op.t === 'punc' && ASSIGN_OPS[op.v]) {
    this.next();
    var target = op.v === '=' ? this.toPattern(left, true) : left;
    if (op.v !== '=' && left.type !== 'Identifier' && left.type !== 'MemberExpression') this.fail(op, 'invalid assignment target');
    return this.node('AssignmentExpression', t, {operator: op.v, left: target, right: this.assign(noIn)});
  }
  return left;
};
/* Arrow functions: tried at `(`, an identifier, `async` or `<` (TypeScript generics);
 * the token array makes a failed attempt free to undo. */
P.tryArrow = function () {
  var t = this.peek(), start = this.p, isAsync = false;
  if (t.t === 'name' && t.v === 'async' && !this.peek(1).nl && (this.peek(1).t === 'name' || this.is('(', 1) || this.is('<', 1)) && !this.is('=>', 1)) {
    if (this.peek(1).t === 'name' && !this.is('=>', 2)) return null;
    this.next();
    isAsync = true;
  }
  var nt = this.peek();
  if (nt.t === 'name' && !KEYWORDS[nt.v] && this.is('=>', 1) && !this.peek(1).nl) {
    this.next(); this.next();
    return this.arrowBody(t, [{target: this.node('Identifier', nt, {name: nt.v}), dflt: null, rest: false}], isAsync);
  }
  if (!(nt.t === 'punc' && (nt.v === '(' || (nt.v === '<' && this.ts)))) { this.p = start; return null; }
  /* quick reject: find the matching ) and look for => (or a return type) after it */
  var q = this.p;
  if (nt.v === '<') {
    /* generic arrow: skip to the ( */
    var d2 = 0;
    for (; q < this.toks.length; q++) {
      var x = this.toks[q];
      if (x.t === 'punc' && x.v === '<') d2++;
      else if (x.t === 'punc' && x.v === '>') { if (--d2 === 0) { q++; break; } }
      else if (x.t === 'eof' || (x.t === 'punc' && (x.v === ';' || x.v === '{' && d2 === 0))) { this.p = start; return null; }
    }
    if (!(this.toks[q] && this.toks[q].v === '(')) { this.p = start; return null; }
  }
  q = this.closeOf(q);
  var after = this.toks[q + 1];
  if (!after || !(after.t === 'punc' && (after.v === '=>' || (after.v === ':' && this.ts)))) { this.p = start; return null; }
  if (after.v === '=>' && after.nl) { this.p = start; return null; }
  try {
    this.typeParams();
    var self = this, params;
    params = this.withFn({async: isAsync, gen: false, arrow: true, top: false}, function () { return self.params(); });
    if (this.ts && this.is(':')) { this.next(); this.skipType(); }
    if (!this.is('=>') || this.peek().nl) throw new SyntaxError('not an arrow');
    this.next();
  } catch (e) {
    this.p = start;
    if (after.v === ':') return null;
    throw e;
  }
  return this.arrowBody(t, params, isAsync);
};
P.arrowBody = function (t, params, isAsync) {
  var outer = this.fn;
  var self = this;
  var state = {async: isAsync, gen: false, arrow: true, top: false, usesThis: false, usesArgs: false, parent: outer};
  return this.withFn(state, function () {
    var body, expression = false;
    if (self.is('{')) body = self.block();
    else { body = self.assign(); expression = true; }
    return self.node('ArrowFunctionExpression', t, {params: params, body: body, expression: expression, async: isAsync, fnState: state});
  });
};
P.conditional = function (noIn) {
  var t = this.peek(), test = this.binary(0, noIn);
  if (this.is('?')) {
    this.next();
    var cons = this.assign();
    this.expect(':');
    var alt = this.assign(noIn);
    return this.node('ConditionalExpression', t, {test: test, consequent: cons, alternate: alt});
  }
  return test;
};
var BINARY_PREC = {'??': 1, '||': 2, '&&': 3, '|': 4, '^': 5, '&': 6, '==': 7, '!=': 7, '===': 7, '!==': 7,
  '<': 8, '>': 8, '<=': 8, '>=': 8, 'instanceof': 8, 'in': 8, '<<': 9, '>>': 9, '>>>': 9,
  '+': 10, '-': 10, '*': 11, '/': 11, '%': 11, '**': 12};
P.binary = function (minPrec, noIn) {
  var t = this.peek(), left = this.unaryOrHigher();
  for (;;) {
    var op = this.peek();
    if (this.ts && op.t === 'name' && (op.v === 'as' || op.v === 'satisfies') && !op.nl && minPrec < 8) {
      this.next();
      if (!this.eat('const')) this.skipType();
      left = this.node('TSAs', t, {expression: left});
      continue;
    }
    var prec = (op.t === 'punc' || (op.t === 'name' && (op.v === 'instanceof' || op.v === 'in'))) ? BINARY_PREC[op.v] : undefined;
    if (prec === undefined || prec <= minPrec && !(op.v === '**' && prec === minPrec)) break;
    if (noIn && op.v === 'in') break;
    this.next();
    var right = this.binary(op.v === '**' ? prec - 1 : prec, noIn);
    var type = op.v === '||' || op.v === '&&' || op.v === '??' ? 'LogicalExpression' : 'BinaryExpression';
    left = this.node(type, t, {operator: op.v, left: left, right: right});
  }
  return left;
};
P.unaryOrHigher = function (noCall) {
  var t = this.peek();
  if (t.t === 'punc' && (t.v === '!' || t.v === '~' || t.v === '+' || t.v === '-')) {
    this.next();
    return this.node('UnaryExpression', t, {operator: t.v, argument: this.unaryOrHigher()});
  }
  if (t.t === 'punc' && (t.v === '++' || t.v === '--')) {
    this.next();
    return this.node('UpdateExpression', t, {operator: t.v, prefix: true, argument: this.unaryOrHigher()});
  }
  if (t.t === 'name' && (t.v === 'typeof' || t.v === 'void' || t.v === 'delete')) {
    this.next();
    return this.node('UnaryExpression', t, {operator: t.v, argument: this.unaryOrHigher()});
  }
  if (t.t === 'name' && t.v === 'await' && (this.fn.async || (this.fn.top && !this.fn.arrow))) {
    if (this.fn.top) this.topAwait = true;
    this.next();
    return this.node('AwaitExpression', t, {argument: this.unaryOrHigher()});
  }
  if (this.ts && t.t === 'punc' && t.v === '<') { /* <T>expr, a type assertion */
    this.skipAngles();
    return this.unaryOrHigher();
  }
  var e = this.postfix(noCall);
  return e;
};
P.postfix = function (noCall) {
  var t = this.peek(), e = this.callTail(this.primary(), noCall);
  var op = this.peek();
  if (op.t === 'punc' && (op.v === '++' || op.v === '--') && !op.nl) {
    this.next();
    return this.node('UpdateExpression', t, {operator: op.v, prefix: false, argument: e});
  }
  return e;
};
P.args = function () {
  var list = [];
  this.expect('(');
  while (!this.eat(')')) {
    var st = this.peek();
    if (this.eat('...')) list.push(this.node('SpreadElement', st, {argument: this.assign()}));
    else list.push(this.assign());
    if (!this.eat(',')) { this.expect(')'); break; }
  }
  return list;
};
P.callTail = function (e, noCall) {
  var chain = false;
  for (;;) {
    var t = this.peek();
    if (t.t === 'punc' && t.v === '.') {
      this.next();
      var nt = this.next();
      if (nt.t === 'priv') e = this.node('MemberExpression', t, {object: e, property: this.node('Literal', nt, {value: '#' + nt.v, raw: jsStr('#' + nt.v)}), computed: true});
      else if (nt.t !== 'name') this.fail(nt);
      else e = this.node('MemberExpression', nt, {object: e, property: this.node('Identifier', nt, {name: nt.v}), computed: false});
      continue;
    }
    if (t.t === 'punc' && t.v === '?.') {
      this.next();
      chain = true;
      if (this.is('(')) { e = this.node('CallExpression', t, {callee: e, arguments: this.args(), optional: true}); continue; }
      if (this.eat('[')) { var ce = this.expr(); this.expect(']'); e = this.node('MemberExpression', t, {object: e, property: ce, computed: true, optional: true}); continue; }
      var on = this.next();
      if (on.t !== 'name') this.fail(on);
      e = this.node('MemberExpression', on, {object: e, property: this.node('Identifier', on, {name: on.v}), computed: false, optional: true});
      continue;
    }
    if (t.t === 'punc' && t.v === '[') {
      this.next();
      var pe = this.expr();
      this.expect(']');
      e = this.node('MemberExpression', t, {object: e, property: pe, computed: true});
      continue;
    }
    if (t.t === 'punc' && t.v === '!' && this.ts && !t.nl && !this.is('=', 1)) { /* non-null assertion */
      this.next();
      continue;
    }
    if (noCall) break;
    if (t.t === 'punc' && t.v === '<' && this.ts && !t.nl) { /* f<T>(...) */
      var save = this.p;
      try {
        this.skipAngles();
        if (!this.is('(') && this.peek().t !== 'tmpl') throw new SyntaxError('no');
        continue;
      } catch (x) {
        this.p = save;
        break;
      }
    }
    if (t.t === 'punc' && t.v === '(') {
      e = this.node('CallExpression', t, {callee: e, arguments: this.args()});
      continue;
    }
    if (t.t === 'tmpl' && t.head) {
      if (chain) this.fail(t, 'a tagged template cannot follow ?.');
      e = this.node('TaggedTemplate', t, {tag: e, quasi: this.template()});
      continue;
    }
    break;
  }
  if (chain) e = this.node('ChainExpression', e, {expression: e});
  return e;
};
P.template = function () {
  var t = this.peek(), quasis = [], exprs = [];
  for (;;) {
    var q = this.next();
    if (q.t !== 'tmpl') this.fail(q);
    quasis.push({cooked: q.v, raw: q.raw});
    if (q.tail) break;
    exprs.push(this.expr());
    if (this.peek().t !== 'tmpl') this.fail(this.peek(), 'expected } to close ${ in a template');
  }
  return this.node('TemplateLiteral', t, {quasis: quasis, expressions: exprs});
};
P.markThis = function () {
  /* `this` inside arrows belongs to the nearest non-arrow function */
  var f = this.fn;
  while (f && f.arrow && f.parent) { f.usesThis = true; f = f.parent; }
  if (f) f.usesThis = true;
};
P.primary = function () {
  var t = this.peek();
  switch (t.t) {
    case 'num': this.next(); return this.node('Literal', t, {value: Number(t.v), raw: t.v});
    case 'str': this.next(); return this.node('Literal', t, {value: t.v, raw: jsStr(t.v)});
    case 'tmpl': if (t.head) return this.template(); break;
    case 'regex': this.next(); return this.node('RegExpLiteral', t, {pattern: t.v, flags: t.flags});
    case 'priv':
      this.next();
      if (this.is('in')) return this.node('Literal', t, {value: '#' + t.v, raw: jsStr('#' + t.v)});
      this.fail(t);
      break;
    case 'punc':
      if (t.v === '(') {
        this.next();
        var e = this.expr();
        this.expect(')');
        e.parens = true;
        return e;
      }
      if (t.v === '[') {
        this.next();
        var els = [];
        while (!this.eat(']')) {
          if (this.is(',')) { this.next(); els.push(null); continue; }
          var st = this.peek();
          if (this.eat('...')) els.push(this.node('SpreadElement', st, {argument: this.assign()}));
          else els.push(this.assign());
          if (!this.eat(',')) { this.expect(']'); break; }
        }
        return this.node('ArrayExpression', t, {elements: els});
      }
      if (t.v === '{') return this.objectLiteral();
      break;
    case 'name':
      switch (t.v) {
        case 'this': this.next(); this.markThis(); return this.node('ThisExpression', t);
        case 'null': case 'true': case 'false': this.next(); return this.node('Literal', t, {value: t.v === 'null' ? null : t.v === 'true', raw: t.v});
        case 'function': {
          this.next();
          var gen = !!this.eat('*');
          var id = this.peek().t === 'name' && !this.is('(') ? this.ident() : null;
          return this.functionRest(t, id, false, gen, false);
        }
        case 'async':
          if (this.isName('function', 1) && !this.peek(1).nl) {
            this.next(); this.next();
            var g2 = !!this.eat('*');
            var id2 = this.peek().t === 'name' ? this.ident() : null;
            return this.functionRest(t, id2, true, g2, false);
          }
          break;
        case 'class': this.next(); this.p--; this.expect('class'); {
          var cid = this.peek().t === 'name' && !this.isName('extends') && !this.isName('implements') ? this.ident() : null;
          return this.classRest(t, cid);
        }
        case 'new': {
          this.next();
          if (this.eat('.')) {
            var tg = this.next();
            if (tg.v !== 'target') this.fail(tg);
            return this.node('NewTarget', t);
          }
          var callee = this.callTail(this.primary(), true);
          if (this.ts && this.is('<')) this.skipAngles();
          var args = this.is('(') ? this.args() : [];
          return this.node('NewExpression', t, {callee: callee, arguments: args});
        }
        case 'super': this.next(); this.markThis(); return this.node('Super', t);
        case 'import': this.fail(t, 'dynamic import is not available in the sandbox');
      }
      if (t.v === 'arguments') {
        var f = this.fn;
        while (f && f.arrow && f.parent) { f.usesArgs = true; f = f.parent; }
      }
      if (KEYWORDS[t.v]) this.fail(t, 'unexpected keyword ' + t.v);
      this.next();
      return this.node('Identifier', t, {name: t.v});
  }
  this.fail(t);
};
P.objectLiteral = function () {
  var t = this.expect('{'), props = [];
  while (!this.eat('}')) {
    var pt = this.peek();
    if (this.eat('...')) {
      props.push(this.node('SpreadElement', pt, {argument: this.assign()}));
      if (!this.eat(',')) { this.expect('}'); break; }
      continue;
    }
    var isAsync = false, gen = false, kind = 'init';
    if (this.isName('async') && !this.is(',', 1) && !this.is(':', 1) && !this.is('(', 1) && !this.is('}', 1) && !this.is('=', 1) && !this.peek(1).nl) { this.next(); isAsync = true; }
    if (this.eat('*')) gen = true;
    if ((this.isName('get') || this.isName('set')) && !this.is(',', 1) && !this.is(':', 1) && !this.is('(', 1) && !this.is('}', 1) && !this.is('=', 1)) kind = this.next().v;
    var pn = this.propName();
    if (kind !== 'init' || this.is('(') || this.is('<')) {
      var f = this.functionRest(pt, null, isAsync, gen, true);
      props.push({type: 'Property', key: pn.key, computed: pn.computed, value: f, kind: kind, method: kind === 'init', line: pt.line});
    } else if (this.eat(':')) {
      props.push({type: 'Property', key: pn.key, computed: pn.computed, value: this.assign(), kind: 'init', line: pt.line});
    } else {
      if (pn.computed || pn.key.type !== 'Identifier') this.fail(pt);
      var idn = this.node('Identifier', pt, {name: pn.key.name});
      if (pn.key.name === 'arguments') { var fa = this.fn; while (fa && fa.arrow && fa.parent) { fa.usesArgs = true; fa = fa.parent; } }
      var prop = {type: 'Property', key: pn.key, computed: false, value: idn, kind: 'init', shorthand: true, line: pt.line};
      if (this.eat('=')) prop.shorthandDefault = this.assign();
      props.push(prop);
    }
    if (!this.eat(',')) { this.expect('}'); break; }
  }
  return this.node('ObjectExpression', t, {properties: props});
};

/* ---- the emitter ------------------------------------------------------------------------ */

function Emitter(opts) {
  this.out = [];
  this.line = 1;
  this.opts = opts;
  this.fnStack = [];
  this.scopes = [];
  this.tmpSeq = 0;
  this.uid = 0;
}
var E = Emitter.prototype;
E.w = function (s) { this.out.push(s); };
E.at = function (line) {
  if (line && line > this.line) {
    var k = line - this.line;
    this.out.push(k === 1 ? '\n' : new Array(k + 1).join('\n'));
    this.line = line;
  }
};
E.text = function (s) {
  /* count newlines written inside pieces (templates' cooked strings never hold raw ones) */
  this.w(s);
};
E.fnScope = function () { return this.fnStack[this.fnStack.length - 1]; };
E.tmp = function () {
  var f = this.fnScope();
  var name = '$t' + (++this.tmpSeq);
  f.temps.push(name);
  return name;
};
/* Block scoping: a let/const/class name in a nested block that shadows a name already
 * declared in its function (or an outer block) gets a fresh name. */
E.pushScope = function (names, isFnTop) {
  var f = this.fnScope(), map = {};
  for (var i = 0; i < names.length; i++) {
    var nm = names[i], out = nm;
    if (!isFnTop && (f.declared[nm] || this.lookupOuter(nm))) out = nm + '$' + (++this.uid);
    f.declared[out] = true;
    map[nm] = out;
  }
  this.scopes.push({map: map, fn: f});
  return map;
};
E.popScope = function () { this.scopes.pop(); };
E.lookupOuter = function (nm) {
  for (var i = this.scopes.length - 1; i >= 0; i--) if (Object.prototype.hasOwnProperty.call(this.scopes[i].map, nm)) return this.scopes[i].map[nm];
  return null;
};
E.name = function (nm) {
  var r = this.lookupOuter(nm);
  return r === null ? nm : r;
};
function lexicalNames(stmts) {
  var names = [];
  for (var i = 0; i < stmts.length; i++) {
    var s = stmts[i];
    if (!s) continue;
    if (s.type === 'ExportDecl') s = s.declaration;
    if (!s) continue;
    if (s.type === 'VariableDeclaration' && s.kind !== 'var') for (var j = 0; j < s.declarations.length; j++) patternNames(s.declarations[j].id, names);
    else if (s.type === 'ClassDeclaration' && s.id) names.push(s.id.name);
  }
  return names;
}
function patternNames(p, out) {
  if (!p) return out;
  switch (p.type) {
    case 'Identifier': out.push(p.name); break;
    case 'AssignmentPattern': patternNames(p.left, out); break;
    case 'ArrayPattern': for (var i = 0; i < p.elements.length; i++) patternNames(p.elements[i], out); patternNames(p.rest, out); break;
    case 'ObjectPattern': for (var j = 0; j < p.properties.length; j++) patternNames(p.properties[j].value, out); patternNames(p.rest, out); break;
  }
  return out;
}
/* var names and function declarations of a function body (not nested functions). */
function varNames(node, out) {
  if (!node || typeof node !== 'object') return out;
  if (Array.isArray(node)) { for (var i = 0; i < node.length; i++) varNames(node[i], out); return out; }
  switch (node.type) {
    case 'VariableDeclaration':
      if (node.kind === 'var') for (var j = 0; j < node.declarations.length; j++) patternNames(node.declarations[j].id, out);
      return out;
    case 'FunctionDeclaration': if (node.id) out.push(node.id.name); return out;
    case 'FunctionExpression': case 'ArrowFunctionExpression': case 'ClassExpression': case 'ClassDeclaration': return out;
  }
  for (var k in node) if (k !== 'line' && k !== 'col' && k !== 'fnState' && node[k] && typeof node[k] === 'object') varNames(node[k], out);
  return out;
}

E.program = function (prog) {
  var opts = this.opts;
  var f = {declared: {}, temps: [], state: {usesThis: false}, isProgram: true};
  this.fnStack.push(f);
  var body = prog.body;
  var hasReturn = !opts.module && body.some(function (s) { return s && s.type === 'ReturnStatement'; });
  var wrap = !opts.module && (prog.topAwait || hasReturn);
  var vn = varNames(body, []);
  for (var i = 0; i < vn.length; i++) f.declared[vn[i]] = true;
  if (wrap) {
    /* top-level await or return: the script is an async function body; its last
     * expression is the value, as it would be */
    var last = body.length - 1;
    while (last >= 0 && (!body[last] || body[last].type === 'EmptyStatement')) last--;
    if (last >= 0 && body[last].type === 'ExpressionStatement') {
      body[last] = {type: 'ReturnStatement', argument: body[last].expression, line: body[last].line};
    }
    this.w(prog.topAwait ? '__ts.async(function () {' : '(function () {');
    this.pushScope(lexicalNames(body), true);
    this.stmts(body);
    this.popScope();
    this.w(prog.topAwait ? '}, this, []);' : '}).call(this);');
  } else {
    this.pushScope(lexicalNames(body), true);
    this.stmts(body);
    this.popScope();
  }
  this.fnStack.pop();
  var pre = '';
  if (f.state.needThis || f.needThis) pre += 'var $this = this;';
  if (f.temps.length) pre += 'var ' + f.temps.join(', ') + ';';
  return pre + this.out.join('');
};
E.stmts = function (list) {
  for (var i = 0; i < list.length; i++) if (list[i]) this.stmt(list[i]);
};
E.blockBody = function (stmts) {
  this.pushScope(lexicalNames(stmts), false);
  this.stmts(stmts);
  this.popScope();
};
E.stmt = function (s) {
  this.at(s.line);
  switch (s.type) {
    case 'EmptyStatement': this.w(';'); return;
    case 'BlockStatement': this.w('{'); this.blockBody(s.body); this.w('}'); return;
    case 'ExpressionStatement': {
      var code = this.expr(s.expression);
      if (/^(function|\{|class)\b/.test(code) || /^\{/.test(code)) code = '(' + code + ')';
      this.w(code + ';');
      return;
    }
    case 'VariableDeclaration': this.w(this.varDecl(s) + ';'); return;
    case 'FunctionDeclaration': this.w(this.fn(s, true)); return;
    case 'ClassDeclaration': this.w('var ' + this.name(s.id.name) + ' = ' + this.klass(s) + ';'); return;
    case 'EnumDeclaration': this.w(this.enumDecl(s)); return;
    case 'ReturnStatement': this.w(s.argument ? 'return ' + this.expr(s.argument) + ';' : 'return;'); return;
    case 'IfStatement':
      this.w('if (' + this.expr(s.test) + ') ');
      this.subStmt(s.consequent);
      if (s.alternate) { this.w(' else '); this.subStmt(s.alternate); }
      return;
    case 'WhileStatement': this.w('while (' + this.expr(s.test) + ') '); this.subStmt(s.body); return;
    case 'DoWhileStatement': this.w('do '); this.subStmt(s.body); this.w(' while (' + this.expr(s.test) + ');'); return;
    case 'ForStatement': this.forStmt(s); return;
    case 'ForInStatement': case 'ForOfStatement': this.forInOf(s); return;
    case 'BreakStatement': this.w('break' + (s.label ? ' ' + s.label : '') + ';'); return;
    case 'ContinueStatement': this.w('continue' + (s.label ? ' ' + s.label : '') + ';'); return;
    case 'ThrowStatement': this.w('throw ' + this.expr(s.argument) + ';'); return;
    case 'LabeledStatement':
      if (s.body.type === 'ForOfStatement') { this.forInOf(s.body, s.label); return; } /* the label goes inside its try */
      this.w(s.label + ': '); this.stmt(s.body); return;
    case 'TryStatement': {
      this.w('try {');
      this.blockBody(s.block.body);
      this.w('}');
      if (s.handler) {
        var h = s.handler, p = h.param;
        if (!p || p.type === 'Identifier') {
          var pname = p ? p.name : '$e' + (++this.uid);
          this.w(' catch (' + pname + ') {' + this.genCatch(pname));
          var m = {};
          m[pname] = pname;
          this.scopes.push({map: m, fn: this.fnScope()});
          this.blockBody(h.body.body);
          this.popScope();
          this.w('}');
        } else {
          var en = '$e' + (++this.uid);
          this.w(' catch (' + en + ') {' + this.genCatch(en));
          var names = patternNames(p, []);
          this.pushScope(names, false);
          var parts = [];
          this.destructure(p, en, parts, true);
          this.w('var ' + parts.join(', ') + ';');
          this.blockBody(h.body.body);
          this.popScope();
          this.w('}');
        }
      }
      if (s.finalizer) { this.w(' finally {'); this.blockBody(s.finalizer.body); this.w('}'); }
      return;
    }
    case 'SwitchStatement': {
      this.w('switch (' + this.expr(s.discriminant) + ') {');
      var all = [];
      for (var i = 0; i < s.cases.length; i++) all = all.concat(s.cases[i].consequent);
      this.pushScope(lexicalNames(all), false);
      for (var j = 0; j < s.cases.length; j++) {
        var c = s.cases[j];
        this.at(c.line);
        this.w(c.test ? 'case ' + this.expr(c.test) + ':' : 'default:');
        this.stmts(c.consequent);
      }
      this.popScope();
      this.w('}');
      return;
    }
    case 'ImportDeclaration': this.importDecl(s); return;
    case 'ExportDefault':
      if (s.declaration) {
        if (s.declaration.type === 'FunctionDeclaration' && s.declaration.id) { this.w(this.fn(s.declaration, true)); this.w('module.exports = ' + this.name(s.declaration.id.name) + ';'); }
        else if (s.declaration.type === 'ClassDeclaration' && s.declaration.id) { this.stmt(s.declaration); this.w('module.exports = ' + this.name(s.declaration.id.name) + ';'); }
        else this.w('module.exports = ' + (s.declaration.type === 'FunctionDeclaration' ? this.fn(s.declaration, false) : this.klass(s.declaration)) + ';');
      } else {
        this.w('module.exports = ' + this.expr(s.expression) + ';');
      }
      return;
    case 'ExportNames':
      for (var k = 0; k < s.specs.length; k++) this.w('exports[' + jsStr(s.specs[k].exported) + '] = ' + this.name(s.specs[k].local) + ';');
      return;
    case 'ExportDecl': {
      var d = s.declaration;
      if (!d) return;
      this.stmt(d);
      var ns = [];
      if (d.type === 'VariableDeclaration') for (var q = 0; q < d.declarations.length; q++) patternNames(d.declarations[q].id, ns);
      else if (d.id) ns.push(d.id.name);
      for (var r = 0; r < ns.length; r++) this.w('exports[' + jsStr(ns[r]) + '] = ' + this.name(ns[r]) + ';');
      return;
    }
  }
  throw SyntaxErr('cannot translate ' + s.type, s.line || 0, s.col || 0);
};
E.subStmt = function (s) {
  /* a statement in a position that takes one statement: lexical declarations get a block */
  if (s.type === 'VariableDeclaration' && s.kind !== 'var' || s.type === 'ClassDeclaration') { this.w('{'); this.blockBody([s]); this.w('}'); return; }
  this.stmt(s);
};
E.importDecl = function (s) {
  for (var i = 0; i < s.binds.length; i++) {
    var b = s.binds[i];
    var want = b.imported === 'default' || b.imported === '*' ? (s.source === 'zod' ? 'z' : b.local) : b.imported;
    if (!IMPORTABLE[want] && !(s.source === 'zod' && (b.imported === '*' || b.imported === 'default'))) {
      throw SyntaxErr('import of ' + jsStr(b.imported === 'default' ? b.local : b.imported) + ' from ' + jsStr(s.source) +
                      ' is not available in the sandbox (only z, defineTool, definePrompt and defineAgent, which are globals)', b.line, b.col);
    }
    if (b.local !== want) this.w('var ' + this.name(b.local) + ' = ' + want + ';');
  }
  if (!s.binds.length && s.source !== 'zod') throw SyntaxErr('import of ' + jsStr(s.source) + ' is not available in the sandbox', s.line, s.col);
};
E.enumDecl = function (s) {
  var n = this.name(s.id.name), parts = [], prev = null;
  for (var i = 0; i < s.members.length; i++) {
    var m = s.members[i], key = jsStr(m.name), val;
    if (m.init) val = this.expr(m.init);
    else val = prev === null ? '0' : '(' + prev + ') + 1';
    var isStr = m.init && (m.init.type === 'Literal' && typeof m.init.value === 'string' || m.init.type === 'TemplateLiteral');
    if (isStr) parts.push('E[' + key + '] = ' + val + ';');
    else parts.push('E[E[' + key + '] = ' + val + '] = ' + key + ';');
    prev = 'E[' + key + ']';
  }
  var decl = this.fnScope().declared[n] ? '' : 'var ';
  this.fnScope().declared[n] = true;
  return decl + n + ' = (function (E) {' + parts.join(' ') + ' return E; })(' + n + ' || {});';
};
E.varDecl = function (s, noVar) {
  var parts = [];
  for (var i = 0; i < s.declarations.length; i++) {
    var d = s.declarations[i];
    this.at(d.line);
    if (d.id.type === 'Identifier') {
      var nm = this.name(d.id.name);
      if (d.init) parts.push(nm + ' = ' + this.expr(d.init));
      else parts.push(s.kind === 'var' || noVar === 'loop' ? nm : nm + ' = void 0');
    } else {
      if (!d.init) throw SyntaxErr('a destructuring declaration needs an initializer', d.line, 0);
      this.destructure(d.id, this.expr(d.init), parts, true);
    }
  }
  return (noVar === true ? '' : 'var ') + parts.join(', ');
};
/* Destructuring: appends `target = value` pieces to `out` (for a var list when decl,
 * else for a comma sequence). `value` is code, evaluated once. */
E.destructure = function (p, value, out, decl) {
  var self = this;
  function simple(v) { return /^[$\w]+$/.test(v) && !/^\d/.test(v); }
  function tmpFor(v) {
    if (simple(v)) return v;
    var t = self.tmp();
    out.push(t + ' = ' + v);
    return t;
  }
  switch (p.type) {
    case 'Identifier': out.push(this.name(p.name) + ' = ' + value); return;
    case 'MemberExpression': out.push(this.expr(p) + ' = ' + value); return;
    case 'AssignmentPattern': {
      var t = tmpFor(value);
      this.destructure(p.left, '(' + t + ' === void 0 ? ' + this.expr(p.right) + ' : ' + t + ')', out, decl);
      return;
    }
    case 'ArrayPattern': {
      var a = this.tmp();
      out.push(a + ' = __ts.spread(' + value + ')');
      for (var i = 0; i < p.elements.length; i++) if (p.elements[i]) this.destructure(p.elements[i], a + '[' + i + ']', out, decl);
      if (p.rest) this.destructure(p.rest, a + '.slice(' + p.elements.length + ')', out, decl);
      return;
    }
    case 'ObjectPattern': {
      var o = tmpFor(value), keys = [];
      if (!p.properties.length && !p.rest) { out.push(this.tmp() + ' = __ts.rest(' + o + ', [])'); return; }
      for (var j = 0; j < p.properties.length; j++) {
        var pr = p.properties[j], acc;
        if (pr.computed) {
          var k = this.tmp();
          out.push(k + ' = ' + this.expr(pr.key));
          acc = o + '[' + k + ']';
          keys.push(k);
        } else {
          var kn = pr.key.type === 'Identifier' ? pr.key.name : String(pr.key.value);
          acc = /^[A-Za-z_$][\w$]*$/.test(kn) ? o + '.' + kn : o + '[' + jsStr(kn) + ']';
          keys.push(jsStr(kn));
        }
        this.destructure(pr.value, acc, out, decl);
      }
      if (p.rest) this.destructure(p.rest, '__ts.rest(' + o + ', [' + keys.join(', ') + '])', out, decl);
      return;
    }
  }
  throw SyntaxErr('invalid destructuring target', p.line || 0, p.col || 0);
};
function closureRefs(node, names) {
  /* true when a function inside node refers to one of names */
  var found = false;
  function walk(n, inFn) {
    if (found || !n || typeof n !== 'object') return;
    if (Array.isArray(n)) { for (var i = 0; i < n.length; i++) walk(n[i], inFn); return; }
    if (n.type === 'FunctionExpression' || n.type === 'ArrowFunctionExpression' || n.type === 'FunctionDeclaration' || n.type === 'ClassExpression' || n.type === 'ClassDeclaration') inFn = true;
    if (inFn && n.type === 'Identifier' && names.indexOf(n.name) >= 0) { found = true; return; }
    for (var k in n) if (k !== 'fnState' && n[k] && typeof n[k] === 'object') walk(n[k], inFn);
  }
  walk(node, false);
  return found;
}
function hasJump(node) {
  /* break, continue, return, yield or await in node outside nested functions */
  var found = false;
  function walk(n, loopDepth) {
    if (found || !n || typeof n !== 'object') return;
    if (Array.isArray(n)) { for (var i = 0; i < n.length; i++) walk(n[i], loopDepth); return; }
    switch (n.type) {
      case 'FunctionExpression': case 'ArrowFunctionExpression': case 'FunctionDeclaration': case 'ClassExpression': case 'ClassDeclaration': return;
      case 'ReturnStatement': case 'YieldExpression': case 'AwaitExpression': found = true; return;
      case 'BreakStatement': case 'ContinueStatement': if (!loopDepth || n.label) { found = true; return; } break;
      case 'ForStatement': case 'ForInStatement': case 'ForOfStatement': case 'WhileStatement': case 'DoWhileStatement': case 'SwitchStatement':
        for (var k in n) if (k !== 'fnState' && n[k] && typeof n[k] === 'object') walk(n[k], loopDepth + 1);
        return;
      case 'ThisExpression': found = true; return; /* keep it simple: this inside the body */
    }
    for (var k2 in n) if (k2 !== 'fnState' && n[k2] && typeof n[k2] === 'object') walk(n[k2], loopDepth);
  }
  walk(node, 0);
  return found;
}
function assignsAny(node, names) {
  /* true when node (nested functions included) assigns or updates one of names */
  var found = false;
  function walk(n) {
    if (found || !n || typeof n !== 'object') return;
    if (Array.isArray(n)) { for (var i = 0; i < n.length; i++) walk(n[i]); return; }
    if (n.type === 'AssignmentExpression' && patternNames(n.left, []).some(function (x) { return names.indexOf(x) >= 0; })) { found = true; return; }
    if (n.type === 'UpdateExpression' && n.argument.type === 'Identifier' && names.indexOf(n.argument.name) >= 0) { found = true; return; }
    for (var k in n) if (k !== 'fnState' && n[k] && typeof n[k] === 'object') walk(n[k]);
  }
  walk(node);
  return found;
}
/* A loop body that must see a fresh binding per iteration (a closure captures a let of
 * the loop head). Without jumps out it runs as a function of those names. With break,
 * continue, return, this, yield or await in it (which a function would capture), each
 * name is rebound by a catch clause instead, whose parameter is a fresh binding every
 * time the clause runs (ES5 12.14) and which lets every jump through; that needs a body
 * that never assigns the names (the binding would not be copied back for the next
 * iteration), else the loop keeps one binding (docs/sandbox.md). */
E.loopBody = function (body, names) {
  if (names.length && closureRefs(body, names)) {
    var mapped = names.map(this.name, this), i;
    if (!hasJump(body)) {
      this.w('{(function (' + mapped.join(', ') + ') ');
      if (body.type === 'BlockStatement') { this.w('{'); this.blockBody(body.body); this.w('}'); }
      else { this.w('{'); this.stmt(body); this.w('}'); }
      this.w(')(' + mapped.join(', ') + ');}');
      return;
    }
    if (!assignsAny(body, names)) {
      var open = '', close = '';
      for (i = 0; i < mapped.length; i++) { open += 'try { throw ' + mapped[i] + '; } catch (' + mapped[i] + ') {'; close += '}'; }
      this.w('{' + open);
      if (body.type === 'BlockStatement') { this.w('{'); this.blockBody(body.body); this.w('}'); }
      else this.stmt(body);
      this.w(close + '}');
      return;
    }
  }
  this.subStmt(body);
};
E.forStmt = function (s) {
  var names = [];
  if (s.init && s.init.type === 'VariableDeclaration' && s.init.kind !== 'var') names = patternNames(s.init.declarations[0].id, []).concat(s.init.declarations.slice(1).reduce(function (a, d) { return patternNames(d.id, a); }, []));
  this.pushScope(names, false);
  var init = '';
  if (s.init) init = s.init.type === 'VariableDeclaration' ? this.varDecl(s.init, 'loop') : this.expr(s.init);
  this.w('for (' + init + '; ' + (s.test ? this.expr(s.test) : '') + '; ' + (s.update ? this.expr(s.update) : '') + ') ');
  this.loopBody(s.body, names);
  this.popScope();
};
E.forInOf = function (s, label) {
  var left = s.left, names = [], decl = left.type === 'VariableDeclaration';
  var target = decl ? left.declarations[0].id : left;
  if (decl && left.kind !== 'var') names = patternNames(target, []);
  if (decl && left.kind === 'var') { /* var names are the function's */ }
  var right = this.expr(s.right);
  this.pushScope(names, false);
  var assignCode;
  if (s.type === 'ForInStatement' && target.type === 'Identifier') {
    this.w('for (' + (decl ? 'var ' : '') + this.name(target.name) + ' in ' + right + ') ');
    this.loopBody(s.body, names);
    this.popScope();
    return;
  }
  var it = this.tmp(), st = this.tmp(), v = st + '.value', closer = null;
  var parts = [];
  if (target.type === 'Identifier' || target.type === 'MemberExpression') parts.push((target.type === 'Identifier' ? this.name(target.name) : this.expr(target)) + ' = ' + v);
  else this.destructure(target, v, parts, decl);
  assignCode = (decl ? 'var ' : '') + parts.join(', ') + ';';
  if (s.type === 'ForInStatement') {
    this.w('for (' + st + ' in ' + right + ') {');
    parts = [];
    this.destructure(target, st, parts, decl);
    this.w((decl ? 'var ' : '') + parts.join(', ') + ';');
  } else {
    /* Leaving the loop early (break, return, a throw from the body) closes the iterator,
     * so a generator's finally blocks run: `closer` is false only while the body runs. */
    closer = this.tmp();
    var next = s.await ? '__ts.await(' + it + '.next())' : it + '.next()';
    this.w('try { ' + (label ? label + ': ' : '') + 'for (' + it + ' = __ts.' + (s.await ? 'asyncIter' : 'iter') + '(' + right + '); (' +
           closer + ' = true, !(' + st + ' = ' + next + ').done && !(' + closer + ' = false));) {');
    this.w(assignCode);
  }
  if (names.length && closureRefs(s.body, names)) {
    this.loopBody(s.body, names);
  } else if (s.body.type === 'BlockStatement') {
    this.blockBody(s.body.body);
  } else {
    this.subStmt(s.body);
  }
  this.w('}');
  if (closer) this.w(' } finally { if (!' + closer + ') ' + (s.await ? '__ts.await(__ts.closeIter(' + it + '))' : '__ts.closeIter(' + it + ')') + '; }');
  this.popScope();
};

/* ---- functions ---- */

E.fn = function (f, isDecl, forceName) {
  var arrow = f.type === 'ArrowFunctionExpression';
  var state = f.fnState || {};
  var scope = {declared: {}, temps: [], state: state, arrow: arrow};
  var parentFn = this.fnScope();
  /* param names and var names belong to the function */
  var params = f.params, plist = [], pre = [], i;
  this.fnStack.push(scope);
  var savedScopes = this.scopes;
  var pnames = [];
  for (i = 0; i < params.length; i++) patternNames(params[i].target, pnames);
  var vn = varNames(f.body, []);
  var allNames = pnames.concat(vn);
  /* names declared here shadow outer renames */
  var map = {};
  for (i = 0; i < allNames.length; i++) { map[allNames[i]] = allNames[i]; scope.declared[allNames[i]] = true; }
  this.scopes = savedScopes.concat([{map: map, fn: scope}]);
  if (this.pendingCtor) { scope.ctorThis = this.pendingCtor.ctorThis; scope.home = this.pendingCtor.home; this.pendingCtor = null; }
  /* parameter properties: this.x = x (in a derived class, right after super()) */
  function paramProp(nm) {
    if (scope.ctorThis && scope.home) scope.home.paramProps.push(nm);
    else pre.push('this.' + nm + ' = ' + nm + ';');
  }
  for (i = 0; i < params.length; i++) {
    var p = params[i];
    if (p.rest) {
      var rn = p.target.type === 'Identifier' ? p.target.name : this.tmp();
      if (p.target.type === 'Identifier') pre.push('var ' + rn + ' = Array.prototype.slice.call(arguments, ' + i + ');');
      else { var rparts = []; this.destructure(p.target, 'Array.prototype.slice.call(arguments, ' + i + ')', rparts, true); pre.push('var ' + rparts.join(', ') + ';'); }
      continue;
    }
    if (p.target.type === 'Identifier' && !p.dflt) { plist.push(p.target.name); if (p.prop) paramProp(p.target.name); continue; }
    if (p.target.type === 'Identifier') {
      plist.push(p.target.name);
      pre.push('if (' + p.target.name + ' === void 0) ' + p.target.name + ' = ' + this.expr(p.dflt) + ';');
      if (p.prop) paramProp(p.target.name);
      continue;
    }
    var pn = '$p' + i;
    plist.push(pn);
    var parts = [];
    this.destructure(p.dflt ? {type: 'AssignmentPattern', left: p.target, right: p.dflt} : p.target, pn, parts, true);
    pre.push('var ' + parts.join(', ') + ';');
  }
  var bodyCode;
  var saveOut = this.out, saveLine = this.line;
  this.out = [];
  if (f.body.type === 'BlockStatement') {
    this.at(f.body.line);
    this.pushScope(lexicalNames(f.body.body), true);
    this.stmts(f.body.body);
    this.popScope();
  } else {
    this.w('return ' + this.expr(f.body) + ';');
  }
  bodyCode = this.out.join('');
  this.out = saveOut;
  var endLine = this.line;
  this.line = saveLine;
  this.fnStack.pop();
  this.scopes = savedScopes;
  var head = pre.join(' ');
  var decls = '';
  if (!arrow && (state.usesThis && state.needArrowThis)) decls += 'var $this = this;';
  if (!arrow && state.usesArgs && state.needArrowArgs) decls += 'var $args = arguments;';
  if (scope.temps.length) decls += 'var ' + scope.temps.join(', ') + ';';
  var inner;
  if (f.async || f.generator) {
    var helper = f.async && f.generator ? '__ts.agen' : f.async ? '__ts.async' : '__ts.gen';
    inner = 'return ' + helper + '(function () {' + decls + head + bodyCode + '}, this, arguments);';
  } else {
    inner = decls + head + bodyCode;
  }
  var name = f.id ? this.name(f.id.name) : (forceName || '');
  var code = 'function' + (name ? ' ' + name : '') + ' (' + plist.join(', ') + ') {' + inner + '}';
  this.line = endLine;
  void parentFn;
  return code;
};
/* In a generator (also an async one) a catch clause first lets through the signal its return() throws
 * in at a yield (prelude's GenReturn), which only its finally blocks may see. */
E.genCatch = function (name) {
  var f = this.fnStack[this.fnStack.length - 1];
  return f && f.state && f.state.gen ? '__ts.genCatch(' + name + ');' : '';
};
/* Whether the function being printed is an async generator (its yield* delegates to
 * async iterables). */
E.inAsyncGen = function () {
  var f = this.fnStack[this.fnStack.length - 1];
  return !!(f && f.state && f.state.async && f.state.gen);
};
/* `this` and `arguments` inside arrows: the enclosing function's, through $this/$args. */
E.thisRef = function () {
  for (var i = this.fnStack.length - 1; i >= 0; i--) {
    var f = this.fnStack[i];
    if (f.ctorThis) return f.ctorThis;
    if (!f.arrow) {
      if (i === this.fnStack.length - 1) return 'this';
      f.state.needArrowThis = true;
      f.state.usesThis = true;
      if (f.isProgram) f.needThis = true;
      return '$this';
    }
  }
  return 'this';
};
E.argsRef = function () {
  for (var i = this.fnStack.length - 1; i >= 0; i--) {
    var f = this.fnStack[i];
    if (!f.arrow) {
      if (i === this.fnStack.length - 1) return 'arguments';
      f.state.needArrowArgs = true;
      f.state.usesArgs = true;
      return '$args';
    }
  }
  return 'arguments';
};

/* ---- classes ---- */

E.klass = function (c) {
  var name = c.id ? c.id.name : '$class' + (++this.uid);
  var cname = this.name(name);
  if (!c.id) cname = name;
  var sup = c.superClass ? this.expr(c.superClass) : null;
  var ctor = null, protoProps = [], staticProps = [], fields = [], staticInits = [];
  for (var i = 0; i < c.members.length; i++) {
    var m = c.members[i];
    if (m.kind === 'constructor') { ctor = m; continue; }
    if (m.kind === 'field') { (m.isStatic ? staticInits : fields).push(m); continue; }
    if (m.kind === 'staticBlock') { staticInits.push(m); continue; }
  }
  var self = this;
  var home = {proto: cname + '.prototype', stat: cname, sup: sup ? '$super' : null};
  this.classStack = this.classStack || [];
  this.classStack.push(home);
  function keyCode(m) {
    if (m.computed) return self.expr(m.key);
    return jsStr(m.key.type === 'Identifier' ? m.key.name : String(m.key.value));
  }
  for (var j = 0; j < c.members.length; j++) {
    var mm = c.members[j];
    if (mm.kind !== 'method' && mm.kind !== 'get' && mm.kind !== 'set') continue;
    home.isStatic = mm.isStatic;
    var code = '[' + keyCode(mm) + ', ' + this.fn(mm.value, false) + (mm.kind === 'method' ? '' : ', ' + jsStr(mm.kind)) + ']';
    (mm.isStatic ? staticProps : protoProps).push(code);
  }
  /* the constructor */
  home.isStatic = false;
  var derived = !!sup;
  var ctorFn = ctor ? ctor.value : {type: 'FunctionExpression', params: derived ? [{target: {type: 'Identifier', name: '$args'}, rest: true}] : [], body: {type: 'BlockStatement', body: derived ? [{type: 'ExpressionStatement', expression: {type: 'CallExpression', callee: {type: 'Super'}, arguments: [{type: 'SpreadElement', argument: {type: 'Identifier', name: '$args'}}]}}] : [], line: c.line}, fnState: {}, line: c.line};
  home.fieldInit = function (thisCode) {
    var parts = [];
    for (var k = 0; k < fields.length; k++) {
      var f = fields[k];
      var saved = self.fnStack[self.fnStack.length - 1].ctorThis;
      var v = f.value ? self.fieldValue(f.value, thisCode) : 'void 0';
      void saved;
      if (f.priv) parts.push('Object.defineProperty(' + thisCode + ', ' + keyCode(f) + ', {value: ' + v + ', writable: true, configurable: true});');
      else parts.push(thisCode + '[' + keyCode(f) + '] = ' + v + ';');
    }
    return parts.join(' ');
  };
  home.derived = derived;
  home.paramProps = [];
  var ctorCode = this.ctorFn(ctorFn, cname, home);
  this.classStack.pop();
  this.classStack.push(home);
  home.isStatic = true;
  var statics = [];
  for (var s = 0; s < staticInits.length; s++) {
    var si = staticInits[s];
    if (si.kind === 'staticBlock') {
      statics.push('(' + this.fn({type: 'FunctionExpression', params: [], body: si.body, fnState: {}}, false) + ').call(' + cname + ');');
    } else {
      var sv = si.value ? '(' + this.fn({type: 'FunctionExpression', params: [], body: {type: 'BlockStatement', body: [{type: 'ReturnStatement', argument: si.value}]}, fnState: {}}, false) + ').call(' + cname + ')' : 'void 0';
      statics.push(si.priv ? 'Object.defineProperty(' + cname + ', ' + keyCode(si) + ', {value: ' + sv + ', writable: true, configurable: true});' : cname + '[' + keyCode(si) + '] = ' + sv + ';');
    }
  }
  this.classStack.pop();
  return '(function (' + (sup ? '$super' : '') + ') {' + ctorCode +
    ' __ts.klass(' + cname + ', ' + (sup ? '$super' : 'undefined') + ', [' + protoProps.join(', ') + '], [' + staticProps.join(', ') + ']);' +
    statics.join(' ') + ' return ' + cname + '; })(' + (sup || '') + ')';
};
E.fieldValue = function (expr, thisCode) {
  /* a field initializer runs with `this` the instance */
  var code = this.fn({type: 'FunctionExpression', params: [], body: {type: 'BlockStatement', body: [{type: 'ReturnStatement', argument: expr}]}, fnState: {}}, false);
  return '(' + code + ').call(' + thisCode + ')';
};
E.ctorFn = function (f, cname, home) {
  /* base: fields, then the body. derived: super(...) makes $this (Reflect.construct with
   * new.target), fields run right after it, the body uses $this, and it is returned. */
  var scopeHook = {ctorThis: home.derived ? '$this' : null, home: home};
  this.pendingCtor = scopeHook;
  var code = this.fn(f, false, cname);
  this.pendingCtor = null;
  /* insert field initialisation / $this handling */
  var open = code.indexOf('{') + 1;
  if (home.derived) {
    code = code.slice(0, open) + 'var $this;' + code.slice(open, code.length - 1) + ' return $this;}';
  } else {
    code = code.slice(0, open) + home.fieldInit('this') + code.slice(open);
  }
  return code;
};

/* ---- expressions ---- */

var PREC = {'SequenceExpression': 0, 'AssignmentExpression': 1, 'YieldExpression': 1, 'ConditionalExpression': 2,
  'LogicalExpression': 3, 'BinaryExpression': 4, 'UnaryExpression': 15, 'AwaitExpression': 15, 'UpdateExpression': 16};
E.expr = function (e) {
  var code = this.expr0(e);
  return code;
};
/* Expressions always come back parenthesised where their shape could bind differently
 * in the surrounding ES5 (every binary, conditional and assignment is wrapped). */
E.expr0 = function (e) {
  var self = this;
  switch (e.type) {
    case 'Identifier':
      if (e.name === 'undefined') return 'undefined';
      if (e.name === 'arguments') return this.argsRef();
      return this.name(e.name);
    case 'Literal': return e.raw;
    case 'RegExpLiteral':
      /* What the engine runs as it is stays a literal; named groups, lookbehind and the
       * s, u, y (and refused d, v) flags go to the prelude, which translates them. */
      if (/^[gim]*$/.test(e.flags) && !/\(\?<|\\k</.test(e.pattern)) return '/' + e.pattern + '/' + e.flags;
      return '__ts.re(' + jsStr(e.pattern) + ', ' + jsStr(e.flags) + ')';
    case 'ThisExpression': return this.thisRef();
    case 'TemplateLiteral': {
      var parts = [];
      for (var i = 0; i < e.quasis.length; i++) {
        if (e.quasis[i].cooked !== '' || i === 0) parts.push(jsStr(e.quasis[i].cooked));
        if (i < e.expressions.length) parts.push('String(' + this.expr(e.expressions[i]) + ')');
      }
      return '(' + parts.join(' + ') + ')';
    }
    case 'TaggedTemplate': {
      var cooked = e.quasi.quasis.map(function (q) { return jsStr(q.cooked); });
      var raw = e.quasi.quasis.map(function (q) { return jsStr(q.raw); });
      var args = ['__ts.tagged([' + cooked.join(', ') + '], [' + raw.join(', ') + '])'];
      for (var j = 0; j < e.quasi.expressions.length; j++) args.push(this.expr(e.quasi.expressions[j]));
      return this.callWith(e.tag, args.join(', '));
    }
    case 'ArrayExpression': return this.arrayLit(e.elements);
    case 'ObjectExpression': return this.objectLit(e);
    case 'FunctionExpression': return '(' + this.fn(e, false) + ')';
    case 'ArrowFunctionExpression': return '(' + this.fn(e, false) + ')';
    case 'ClassExpression': return this.klass(e);
    case 'SequenceExpression': return '(' + e.expressions.map(function (x) { return self.expr(x); }).join(', ') + ')';
    case 'UnaryExpression': {
      var arg = this.expr(e.argument);
      if (e.operator === 'delete' && e.argument.type === 'ChainExpression') return '(' + arg + ', true)';
      return '(' + e.operator + (/^[a-z]/.test(e.operator) ? ' ' : ' ') + arg + ')';
    }
    case 'UpdateExpression': return '(' + (e.prefix ? e.operator + this.expr(e.argument) : this.expr(e.argument) + e.operator) + ')';
    case 'BinaryExpression':
      if (e.operator === '**') return 'Math.pow(' + this.expr(e.left) + ', ' + this.expr(e.right) + ')';
      return '(' + this.expr(e.left) + ' ' + e.operator + ' ' + this.expr(e.right) + ')';
    case 'LogicalExpression':
      if (e.operator === '??') {
        var t = this.tmp();
        return '((' + t + ' = ' + this.expr(e.left) + ') != null ? ' + t + ' : ' + this.expr(e.right) + ')';
      }
      return '(' + this.expr(e.left) + ' ' + e.operator + ' ' + this.expr(e.right) + ')';
    case 'ConditionalExpression': return '(' + this.expr(e.test) + ' ? ' + this.expr(e.consequent) + ' : ' + this.expr(e.alternate) + ')';
    case 'AssignmentExpression': return this.assignExpr(e);
    case 'CallExpression': return this.call(e);
    case 'NewExpression': {
      if (e.arguments.some(function (a) { return a.type === 'SpreadElement'; }))
        return '__ts.construct(' + this.expr(e.callee) + ', ' + this.argList(e.arguments, true) + ')';
      return '(new ' + this.expr(e.callee) + '(' + e.arguments.map(function (a) { return self.expr(a); }).join(', ') + '))';
    }
    case 'MemberExpression': {
      if (e.object.type === 'Super') return this.superMember(e);
      var ob = this.expr(e.object);
      if (e.object.type === 'Literal' && typeof e.object.value === 'number') ob = '(' + ob + ')';
      return ob + this.memberSuffix(e);
    }
    case 'ChainExpression': return this.chain(e.expression);
    case 'AwaitExpression': return '__ts.await(' + this.expr(e.argument) + ')';
    case 'YieldExpression': return (e.delegate ? (this.inAsyncGen() ? '__ts.yieldAllAsync(' : '__ts.yieldAll(') : '__ts.yield(') + (e.argument ? this.expr(e.argument) : '') + ')';
    case 'TSAs': return this.expr(e.expression);
    case 'NewTarget': return 'new.target';
    case 'Super': throw SyntaxErr("'super' keyword unexpected here", e.line, e.col);
    case 'SpreadElement': throw SyntaxErr('unexpected spread', e.line, e.col);
  }
  throw SyntaxErr('cannot translate ' + e.type, e.line || 0, e.col || 0);
};
E.memberSuffix = function (e) {
  if (e.computed) return '[' + this.expr(e.property) + ']';
  var n = e.property.name;
  if (KEYWORDS[n] || !/^[A-Za-z_$][\w$]*$/.test(n)) return '[' + jsStr(n) + ']';
  return '.' + n;
};
E.arrayLit = function (els) {
  var self = this;
  if (!els.some(function (x) { return x && x.type === 'SpreadElement'; }))
    return '[' + els.map(function (x) { return x ? self.expr(x) : ''; }).join(', ') + (els.length && !els[els.length - 1] ? ',' : '') + ']';
  return this.argList(els, true);
};
/* An argument list with spreads as one array expression. */
E.argList = function (items, alwaysArray) {
  var self = this, chunks = [], run = [];
  for (var i = 0; i < items.length; i++) {
    var it = items[i];
    if (it && it.type === 'SpreadElement') {
      if (run.length) { chunks.push('[' + run.join(', ') + ']'); run = []; }
      chunks.push('__ts.spread(' + self.expr(it.argument) + ')');
    } else {
      run.push(it ? self.expr(it) : 'void 0');
    }
  }
  if (run.length) chunks.push('[' + run.join(', ') + ']');
  void alwaysArray;
  if (chunks.length === 1) return chunks[0].charAt(0) === '[' ? chunks[0] : chunks[0];
  return '[].concat(' + chunks.join(', ') + ')';
};
E.objectLit = function (e) {
  var self = this, props = e.properties;
  var simple = [], groups = [], needAssign = false, needSeq = false;
  for (var i = 0; i < props.length; i++) {
    var p = props[i];
    if (p.type === 'SpreadElement') { needAssign = true; continue; }
    if (p.computed) needSeq = true;
    if (p.shorthandDefault) throw SyntaxErr('invalid shorthand property initializer', p.line, 0);
  }
  function keyOf(p) {
    if (p.key.type === 'Identifier') return /^[A-Za-z_$][\w$]*$/.test(p.key.name) && !KEYWORDS[p.key.name] ? p.key.name : jsStr(p.key.name);
    return p.key.raw;
  }
  function propCode(p) {
    self.at(p.line);
    if (p.kind === 'get' || p.kind === 'set') {
      var fc = self.fn(p.value, false);
      return p.kind + ' ' + keyOf(p) + fc.slice('function '.length).replace(/^\s*/, '');
    }
    var v = p.method ? self.fn(p.value, false) : self.expr(p.value);
    return keyOf(p) + ': ' + v;
  }
  if (!needAssign && !needSeq) {
    for (var j = 0; j < props.length; j++) simple.push(propCode(props[j]));
    return '{' + simple.join(', ') + '}';
  }
  /* computed keys and spreads: built in order */
  var o = this.tmp(), steps = [o + ' = {}'];
  for (var k = 0; k < props.length; k++) {
    var q = props[k];
    if (q.type === 'SpreadElement') { steps.push('__ts.assign(' + o + ', ' + this.expr(q.argument) + ')'); continue; }
    var key = q.computed ? this.expr(q.key) : jsStr(q.key.type === 'Identifier' ? q.key.name : String(q.key.value));
    if (q.kind === 'get' || q.kind === 'set') {
      steps.push('Object.defineProperty(' + o + ', ' + key + ', {' + q.kind + ': ' + this.fn(q.value, false) + ', enumerable: true, configurable: true})');
    } else {
      steps.push('Object.defineProperty(' + o + ', ' + key + ', {value: ' + (q.method ? this.fn(q.value, false) : this.expr(q.value)) + ', writable: true, enumerable: true, configurable: true})');
    }
    groups.push(key);
  }
  steps.push(o);
  return '(' + steps.join(', ') + ')';
};
E.assignExpr = function (e) {
  var op = e.operator, self = this;
  if (op === '=' && (e.left.type === 'ObjectPattern' || e.left.type === 'ArrayPattern')) {
    var v = this.tmp(), parts = [v + ' = ' + this.expr(e.right)];
    this.destructure(e.left, v, parts, false);
    parts.push(v);
    return '(' + parts.join(', ') + ')';
  }
  if (e.left.type === 'MemberExpression' && e.left.object.type === 'Super') throw SyntaxErr('assigning to super.x is not supported', e.line, e.col);
  var left = this.expr(e.left);
  if (op === '**=') return '(' + left + ' = Math.pow(' + left + ', ' + this.expr(e.right) + '))';
  if (op === '&&=' || op === '||=' || op === '??=') {
    var target = left, pre = '';
    if (e.left.type === 'MemberExpression') {
      var ot = this.tmp();
      pre = ot + ' = ' + this.expr(e.left.object) + ', ';
      if (e.left.computed) { var kt = this.tmp(); pre += kt + ' = ' + this.expr(e.left.property) + ', '; target = ot + '[' + kt + ']'; }
      else target = ot + this.memberSuffix(e.left);
    }
    var r = this.expr(e.right);
    var cond = op === '&&=' ? target : op === '||=' ? '!' + target : target + ' == null';
    return '(' + pre + '(' + cond + ' ? ' + target + ' = ' + r + ' : ' + target + '))';
  }
  void self;
  return '(' + left + ' ' + op + ' ' + this.expr(e.right) + ')';
};
E.superMember = function (e) {
  var home = this.classStack && this.classStack[this.classStack.length - 1];
  if (!home || !home.sup) throw SyntaxErr("'super' keyword unexpected here", e.line, e.col);
  var key = e.computed ? this.expr(e.property) : jsStr(e.property.name);
  return '__ts.superGet(' + (home.isStatic ? home.stat : home.proto) + ', ' + key + ', ' + this.thisRef() + ')';
};
E.callWith = function (callee, argsCode) {
  if (callee.type === 'MemberExpression' && callee.object.type !== 'Super') return this.expr(callee) + '(' + argsCode + ')';
  if (callee.type === 'MemberExpression') return this.superMember(callee) + '.call(' + this.thisRef() + (argsCode ? ', ' + argsCode : '') + ')';
  var c = this.expr(callee);
  if (callee.type !== 'Identifier') c = '(' + c + ')';
  return c + '(' + argsCode + ')';
};
E.call = function (e) {
  var self = this, spread = e.arguments.some(function (a) { return a.type === 'SpreadElement'; });
  if (e.callee.type === 'Super') {
    var home = this.classStack && this.classStack[this.classStack.length - 1];
    if (!home || !home.sup) throw SyntaxErr("'super' keyword unexpected here", e.line, e.col);
    var init = home.paramProps.map(function (nm) { return '$this.' + nm + ' = ' + nm + ';'; }).join(' ') + home.fieldInit('$this');
    return '($this = __ts.superCall($super, ' + this.argList(e.arguments, true) + ', this), ' +
      (init ? '(function () {' + init + '}).call($this), ' : '') + 'void 0)';
  }
  if (!spread) return this.callWith(e.callee, e.arguments.map(function (a) { return self.expr(a); }).join(', '));
  var args = this.argList(e.arguments, true);
  if (e.callee.type === 'MemberExpression') {
    if (e.callee.object.type === 'Super') return this.superMember(e.callee) + '.apply(' + this.thisRef() + ', ' + args + ')';
    var t = this.tmp();
    return '(' + t + ' = ' + this.expr(e.callee.object) + ')' + this.memberSuffix(e.callee) + '.apply(' + t + ', ' + args + ')';
  }
  return this.expr(e.callee) + '.apply(void 0, ' + args + ')';
};
/* ?. chains: the links from the base out; a short circuit wraps the rest of the chain. */
E.chain = function (top) {
  var links = [], n = top;
  while (n.type === 'MemberExpression' || n.type === 'CallExpression') {
    links.unshift(n);
    n = n.type === 'MemberExpression' ? n.object : n.callee;
    if (n.type === 'ChainExpression') n = n.expression;
  }
  var self = this;
  var code = this.expr(n), conds = [], thisCode = null, lastMember = null;
  for (var i = 0; i < links.length; i++) {
    var l = links[i];
    if (l.optional) {
      if (l.type === 'CallExpression' && lastMember) {
        /* a?.b?.(): keep the receiver */
        var ot = this.tmp(), ft = this.tmp();
        conds.push('(' + ot + ' = ' + thisCode + ', ' + ft + ' = ' + ot + lastMember + ') == null ? void 0 : ');
        code = ft + '.call(' + ot + (l.arguments.length ? ', ' : '');
        code += l.arguments.map(function (a) { return self.expr(a); }).join(', ') + ')';
        thisCode = null; lastMember = null;
        continue;
      }
      var t = this.tmp();
      conds.push('(' + t + ' = ' + code + ') == null ? void 0 : ');
      code = t;
    }
    if (l.type === 'MemberExpression') {
      thisCode = code;
      lastMember = this.memberSuffix(l);
      code = code + lastMember;
    } else {
      var spread = l.arguments.some(function (a) { return a.type === 'SpreadElement'; });
      if (spread) {
        var args = this.argList(l.arguments, true);
        code = lastMember ? code + '.apply(' + thisCode + ', ' + args + ')' : code + '.apply(void 0, ' + args + ')';
        if (lastMember) { /* thisCode was evaluated twice: acceptable for identifiers and temps */ }
      } else {
        code = code + '(' + l.arguments.map(function (a) { return self.expr(a); }).join(', ') + ')';
      }
      thisCode = null; lastMember = null;
    }
  }
  return '(' + conds.join('') + code + ')';
};

/* ---- entry ----------------------------------------------------------------------------- */

return function transpile(src, opts) {
  opts = opts || {};
  if (src.length > 4 * 1024 * 1024) throw new SyntaxError('the source is larger than 4 MiB');
  var p = null, em, prog;
  /* Parser and emitter recurse with the source's nesting: code nested deeper than
   * Duktape's call stack allows ends as a SyntaxError at the token reached, not as the
   * engine's bare RangeError. */
  try {
    p = new Parser(src, opts);
    prog = p.program();
    prog.topAwait = !!p.topAwait;
    em = new Emitter(opts);
    return em.program(prog);
  } catch (e) {
    var t = p ? p.peek() : {line: 1, col: 1};
    if (e instanceof RangeError) throw SyntaxErr('the code is nested too deeply to translate', t.line, t.col);
    if (e && e.message === 'alloc failed') { p = em = prog = null; throw SyntaxErr('the code is too large to translate within the memory limit', t.line, t.col); }
    throw e;
  }
};
})()
