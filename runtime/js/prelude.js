/*
 * prelude.js: the built-ins code written today expects and Duktape 2.7 lacks, and the
 * runtime the transpiler's output calls (async functions, generators, spread...).
 *
 * Evaluated once per process, in the template heap (runtime/js/sandbox.c), so every run
 * starts with it for free. ES5 only: this file is not transpiled. It is called with the
 * global object, Duktape's coroutine constructor (which nothing else ever sees) and a
 * few host functions (sleep, a monotonic clock), and returns `rt`, which the host keeps
 * in the heap's stash: rt.finish(value) drains the job queue and the timers, then
 * settles a promise value.
 *
 * Everything is added only where missing and non-enumerable, as the built-ins are.
 * Work that native code would do in one uninterruptible call (a fill, a pad) is written
 * as plain loops here, so the run's deadline reaches it.
 */
(function (g, Thread, host) {
'use strict';

function def(o, name, v) {
  if (!Object.prototype.hasOwnProperty.call(o, name))
    Object.defineProperty(o, name, {value: v, writable: true, configurable: true, enumerable: false});
}
function hide(o, name, v) {
  Object.defineProperty(o, name, {value: v, writable: true, configurable: true, enumerable: false});
}
var ITER = Symbol.iterator;
function toObject(x, what) {
  if (x === null || x === undefined) throw new TypeError(what + ' called on null or undefined');
  return Object(x);
}
function toLength(n) {
  n = Number(n);
  if (n !== n || n <= 0) return 0;
  return Math.min(Math.floor(n), 9007199254740991);
}
function toInt(n) {
  n = Number(n);
  if (n !== n) return 0;
  if (n === Infinity || n === -Infinity) return n;
  return n < 0 ? Math.ceil(n) : Math.floor(n);
}
function relIndex(i, len, dflt) {
  if (i === undefined) return dflt;
  i = toInt(i);
  return i < 0 ? Math.max(len + i, 0) : Math.min(i, len);
}
function sameValueZero(a, b) { return a === b || (a !== a && b !== b); }

/* ---- iteration ------------------------------------------------------------------- */

function ArrayIter(a, kind) { this._a = a; this._i = 0; this._k = kind; }
ArrayIter.prototype.next = function () {
  var a = this._a;
  if (a === null || this._i >= toLength(a.length)) { this._a = null; return {value: undefined, done: true}; }
  var i = this._i++;
  return {value: this._k === 0 ? a[i] : this._k === 1 ? i : [i, a[i]], done: false};
};
ArrayIter.prototype[ITER] = function () { return this; };

function StringIter(s) { this._s = s; this._i = 0; }
StringIter.prototype.next = function () {
  var s = this._s, i = this._i;
  if (i >= s.length) return {value: undefined, done: true};
  var c = s.charCodeAt(i), n = 1;
  if (c >= 0xD800 && c <= 0xDBFF && i + 1 < s.length) {
    var d = s.charCodeAt(i + 1);
    if (d >= 0xDC00 && d <= 0xDFFF) n = 2;
  }
  this._i = i + n;
  return {value: s.substr(i, n), done: false};
};
StringIter.prototype[ITER] = function () { return this; };

def(Array.prototype, 'values', function () { return new ArrayIter(toObject(this, 'values'), 0); });
def(Array.prototype, 'keys', function () { return new ArrayIter(toObject(this, 'keys'), 1); });
def(Array.prototype, 'entries', function () { return new ArrayIter(toObject(this, 'entries'), 2); });
def(Array.prototype, ITER, Array.prototype.values);
def(String.prototype, ITER, function () { return new StringIter(String(toObject(this, 'iterator'))); });

/* An iterator for anything for-of, spread and Array.from accept. */
function iter(x) {
  if (x === null || x === undefined) throw new TypeError(String(x) + ' is not iterable');
  if (typeof x === 'string') return new StringIter(x);
  var f = x[ITER];
  if (typeof f === 'function') {
    var it = f.call(x);
    if (it === null || typeof it !== 'object') throw new TypeError('the iterator is not an object');
    return it;
  }
  if (Object.prototype.toString.call(x) === '[object Arguments]') return new ArrayIter(x, 0);
  throw new TypeError((typeof x === 'object' ? 'object' : typeof x) + ' is not iterable');
}
/* The elements of an iterable as an array (arrays as they are, for speed). */
function toArray(x) {
  if (Array.isArray(x) && x[ITER] === Array.prototype.values) return x;
  var out = [], it = iter(x), s;
  while (!(s = it.next()).done) out.push(s.value);
  return out;
}

/* ---- Array ----------------------------------------------------------------------- */

def(Array, 'from', function (src, fn, self) {
  if (src === null || src === undefined) throw new TypeError('Array.from wants an iterable or array-like');
  var C = typeof this === 'function' && this !== Array ? this : null;
  var out, i, v;
  var useIter = typeof src === 'string' || typeof Object(src)[ITER] === 'function';
  if (useIter) {
    var it = iter(src), s;
    out = C ? new C() : [];
    i = 0;
    while (!(s = it.next()).done) {
      v = s.value;
      out[i] = fn ? fn.call(self, v, i) : v;
      i++;
    }
    out.length = i;
    return out;
  }
  var o = Object(src), n = toLength(o.length);
  out = C ? new C(n) : new Array(n);
  for (i = 0; i < n; i++) out[i] = fn ? fn.call(self, o[i], i) : o[i];
  out.length = n;
  return out;
});
def(Array, 'of', function () { return Array.prototype.slice.call(arguments); });
function finder(fromEnd, wantIndex) {
  return function (pred, self) {
    if (typeof pred !== 'function') throw new TypeError('the predicate is not a function');
    var o = toObject(this, 'find'), n = toLength(o.length), i;
    for (var k = 0; k < n; k++) {
      i = fromEnd ? n - 1 - k : k;
      if (pred.call(self, o[i], i, o)) return wantIndex ? i : o[i];
    }
    return wantIndex ? -1 : undefined;
  };
}
def(Array.prototype, 'find', finder(false, false));
def(Array.prototype, 'findIndex', finder(false, true));
def(Array.prototype, 'findLast', finder(true, false));
def(Array.prototype, 'findLastIndex', finder(true, true));
def(Array.prototype, 'includes', function (x, from) {
  var o = toObject(this, 'includes'), n = toLength(o.length);
  for (var i = relIndex(from, n, 0); i < n; i++) if (sameValueZero(o[i], x)) return true;
  return false;
});
function flatInto(out, a, depth) {
  for (var i = 0, n = toLength(a.length); i < n; i++) {
    if (!(i in a)) continue;
    var v = a[i];
    if (depth > 0 && Array.isArray(v)) flatInto(out, v, depth - 1);
    else out.push(v);
  }
  return out;
}
def(Array.prototype, 'flat', function (depth) {
  return flatInto([], toObject(this, 'flat'), depth === undefined ? 1 : toInt(depth));
});
def(Array.prototype, 'flatMap', function (fn, self) {
  if (typeof fn !== 'function') throw new TypeError('flatMap wants a function');
  var o = toObject(this, 'flatMap'), out = [];
  for (var i = 0, n = toLength(o.length); i < n; i++) {
    if (!(i in o)) continue;
    var v = fn.call(self, o[i], i, o);
    if (Array.isArray(v)) flatInto(out, v, 0);
    else out.push(v);
  }
  return out;
});
function fill(v, start, end) {
  var o = toObject(this, 'fill'), n = toLength(o.length);
  for (var i = relIndex(start, n, 0), e = relIndex(end, n, n); i < e; i++) o[i] = v;
  return o;
}
def(Array.prototype, 'fill', fill);
def(Array.prototype, 'at', function (i) {
  var o = toObject(this, 'at'), n = toLength(o.length);
  i = toInt(i);
  if (i < 0) i += n;
  return i < 0 || i >= n ? undefined : o[i];
});
def(Array.prototype, 'copyWithin', function (target, start, end) {
  var o = toObject(this, 'copyWithin'), n = toLength(o.length);
  var to = relIndex(target, n, 0), from = relIndex(start, n, 0), fin = relIndex(end, n, n);
  var count = Math.min(fin - from, n - to);
  if (from < to && to < from + count) {
    for (var i = count - 1; i >= 0; i--) o[to + i] = o[from + i];
  } else {
    for (var j = 0; j < count; j++) o[to + j] = o[from + j];
  }
  return o;
});
def(Array.prototype, 'toSorted', function (cmp) { return Array.prototype.slice.call(this).sort(cmp); });
def(Array.prototype, 'toReversed', function () { return Array.prototype.slice.call(this).reverse(); });

/* Typed arrays: the same methods, on each constructor's prototype (Duktape has no
 * shared %TypedArray% prototype to put them on). */
var typed = ['Int8Array', 'Uint8Array', 'Uint8ClampedArray', 'Int16Array', 'Uint16Array',
             'Int32Array', 'Uint32Array', 'Float32Array', 'Float64Array'];
for (var ti = 0; ti < typed.length; ti++) {
  var TA = g[typed[ti]];
  if (typeof TA !== 'function') continue;
  def(TA.prototype, 'fill', fill);
  def(TA.prototype, 'includes', Array.prototype.includes);
  def(TA.prototype, 'find', Array.prototype.find);
  def(TA.prototype, 'findIndex', Array.prototype.findIndex);
  def(TA.prototype, 'at', Array.prototype.at);
  def(TA.prototype, 'values', Array.prototype.values);
  def(TA.prototype, 'keys', Array.prototype.keys);
  def(TA.prototype, 'entries', Array.prototype.entries);
  def(TA.prototype, ITER, Array.prototype.values);
  var names = ['forEach', 'map', 'filter', 'reduce', 'reduceRight', 'join', 'indexOf',
               'lastIndexOf', 'every', 'some', 'reverse', 'sort'];
  for (var mi = 0; mi < names.length; mi++) {
    (function (TA, name) {
      def(TA.prototype, name, function () {
        var r = Array.prototype[name].apply(Array.prototype.slice.call(this), arguments);
        if (name === 'map' || name === 'filter') return new TA(r);
        if (name === 'reverse' || name === 'sort') { for (var i = 0; i < r.length; i++) this[i] = r[i]; return this; }
        return r;
      });
    })(TA, names[mi]);
  }
  (function (TA) {
    def(TA, 'from', function (src, fn, self) { return new TA(Array.from(src, fn, self)); });
    def(TA, 'of', function () { return new TA(Array.prototype.slice.call(arguments)); });
  })(TA);
}

/* ---- Object ---------------------------------------------------------------------- */

def(Object, 'entries', function (o) {
  o = toObject(o, 'Object.entries');
  var k = Object.keys(o), out = new Array(k.length);
  for (var i = 0; i < k.length; i++) out[i] = [k[i], o[k[i]]];
  return out;
});
def(Object, 'values', function (o) {
  o = toObject(o, 'Object.values');
  var k = Object.keys(o), out = new Array(k.length);
  for (var i = 0; i < k.length; i++) out[i] = o[k[i]];
  return out;
});
def(Object, 'fromEntries', function (src) {
  var out = {}, it = iter(src), s;
  while (!(s = it.next()).done) {
    var e = s.value;
    if (e === null || typeof e !== 'object') throw new TypeError('Object.fromEntries wants [key, value] entries');
    out[e[0]] = e[1];
  }
  return out;
});
def(Object, 'hasOwn', function (o, k) { return Object.prototype.hasOwnProperty.call(toObject(o, 'Object.hasOwn'), k); });
def(Object, 'getOwnPropertyDescriptors', function (o) {
  var out = {}, k = Object.getOwnPropertyNames(o);
  for (var i = 0; i < k.length; i++) out[k[i]] = Object.getOwnPropertyDescriptor(o, k[i]);
  return out;
});

/* ---- String ---------------------------------------------------------------------- */

function pad(atStart) {
  return function (len, filler) {
    var s = String(toObject(this, 'pad'));
    len = toLength(len);
    var f = filler === undefined ? ' ' : String(filler);
    if (len <= s.length || f === '') return s;
    var need = len - s.length;
    var reps = Math.ceil(need / f.length);
    var p = f.repeat(reps).slice(0, need); /* repeat is bounded by the memory cap */
    return atStart ? p + s : s + p;
  };
}
def(String.prototype, 'padStart', pad(true));
def(String.prototype, 'padEnd', pad(false));
def(String.prototype, 'trimStart', function () { return String(toObject(this, 'trimStart')).replace(/^[\s\uFEFF\xA0]+/, ''); });
def(String.prototype, 'trimEnd', function () { return String(toObject(this, 'trimEnd')).replace(/[\s\uFEFF\xA0]+$/, ''); });
def(String.prototype, 'trimLeft', String.prototype.trimStart);
def(String.prototype, 'trimRight', String.prototype.trimEnd);
def(String.prototype, 'at', function (i) {
  var s = String(toObject(this, 'at'));
  i = toInt(i);
  if (i < 0) i += s.length;
  return i < 0 || i >= s.length ? undefined : s.charAt(i);
});
function isRegExp(x) { return Object.prototype.toString.call(x) === '[object RegExp]'; }
def(String.prototype, 'replaceAll', function (pat, rep) {
  var s = String(toObject(this, 'replaceAll'));
  if (isRegExp(pat)) {
    if (!pat.global) throw new TypeError('replaceAll must be called with a global RegExp');
    return s.replace(pat, rep);
  }
  pat = String(pat);
  var out = '', at = 0, i, n = 0;
  if (pat === '') {
    for (i = 0; i <= s.length; i++) {
      out += (typeof rep === 'function' ? String(rep(pat, i, s)) : String(rep).replace(/\$\$/g, '$')) + (i < s.length ? s.charAt(i) : '');
    }
    return out;
  }
  while ((i = s.indexOf(pat, at)) >= 0) {
    out += s.slice(at, i) + (typeof rep === 'function' ? String(rep(pat, i, s)) : expand(String(rep), pat, i, s));
    at = i + pat.length;
    n++;
  }
  return n ? out + s.slice(at) : s;
});
function expand(rep, match, pos, s) {
  if (rep.indexOf('$') < 0) return rep;
  return rep.replace(/\$([$&`'])/g, function (m, c) {
    return c === '$' ? '$' : c === '&' ? match : c === '`' ? s.slice(0, pos) : s.slice(pos + match.length);
  });
}
def(String.prototype, 'matchAll', function (re) {
  var s = String(toObject(this, 'matchAll'));
  if (isRegExp(re)) {
    if (!re.global) throw new TypeError('matchAll must be called with a global RegExp');
    re = new RegExp(re.source, re.flags !== undefined ? re.flags : 'g');
  } else {
    re = new RegExp(re, 'g');
  }
  var out = [], m;
  while ((m = re.exec(s)) !== null) {
    out.push(m);
    if (m[0] === '') re.lastIndex = advance(s, re.lastIndex, re.unicode);
  }
  return new ArrayIter(out, 0);
});

/* ---- RegExp: named groups, the y, s and u flags ------------------------------------
 * Duktape's engine is ES5's: no named groups, no sticky, dotAll or unicode flag. A
 * pattern that needs one (a literal the transpiler sends here as __ts.re(source, flags),
 * or a string given to RegExp) is translated to one the engine runs: (?<name>...) to a
 * numbered group with the names kept beside it, \k<name> to its number, `.` under s or
 * u to a class, \u{...} and a character outside the BMP to their surrogate pairs, and y
 * to the pattern followed by |() with the g flag: a search that tries the pattern at
 * lastIndex and, failing there, matches the empty alternative at lastIndex rather than
 * move on, which reads as "no match". What cannot be translated (lookbehind, \p{...},
 * the d flag, a class with characters outside the BMP) is a SyntaxError naming it.
 * The methods below read the names and the flags from the object's META. */
var NativeRegExp = RegExp, META = Symbol('regexp'), reCache = {}, reCached = 0;
var rexec = NativeRegExp.prototype.exec, rsrc = Object.getOwnPropertyDescriptor(NativeRegExp.prototype, 'source').get;
var rflags = Object.getOwnPropertyDescriptor(NativeRegExp.prototype, 'flags').get;
var rglobal = Object.getOwnPropertyDescriptor(NativeRegExp.prototype, 'global').get;
var nmatch = String.prototype.match, nreplace = String.prototype.replace, nsplit = String.prototype.split, nsearch = String.prototype.search;
function reErr(src, what) { return new SyntaxError('Invalid regular expression: /' + src + '/: ' + what); }
function hex4(c) { return '\\u' + ('000' + c.toString(16)).slice(-4); }
function cpText(cp) {
  if (cp < 0x10000) return hex4(cp);
  cp -= 0x10000;
  return '(?:' + hex4(0xD800 + (cp >> 10)) + hex4(0xDC00 + (cp & 0x3FF)) + ')';
}
var ANY_PAIR = '[\\uD800-\\uDBFF][\\uDC00-\\uDFFF]';
function translateRe(src, flags) {
  var fl = {}, i, c;
  for (i = 0; i < flags.length; i++) {
    c = flags.charAt(i);
    if ('gimsuy'.indexOf(c) < 0) {
      if (c === 'd') throw new SyntaxError('the RegExp d flag (match indices) is not supported');
      if (c === 'v') throw new SyntaxError('the RegExp v flag (unicodeSets) is not supported');
      throw new SyntaxError("Invalid flags supplied to RegExp constructor '" + flags + "'");
    }
    if (fl[c]) throw new SyntaxError("Invalid flags supplied to RegExp constructor '" + flags + "'");
    fl[c] = true;
  }
  /* first pass: the groups, numbered as the engine numbers them, and their names */
  var names = [null], named = false, n = src.length, inClass = false;
  for (i = 0; i < n; i++) {
    c = src.charAt(i);
    if (c === '\\') { i++; continue; }
    if (inClass) { if (c === ']') inClass = false; continue; }
    if (c === '[') { inClass = true; continue; }
    if (c !== '(') continue;
    if (src.charAt(i + 1) !== '?') { names.push(null); continue; }
    if (src.charAt(i + 2) !== '<') continue;
    c = src.charAt(i + 3);
    if (c === '=' || c === '!') throw reErr(src, 'lookbehind assertions (?<= and (?<! are not supported');
    var m = /^[A-Za-z_$][\w$]*>/.exec(src.slice(i + 3));
    if (!m) throw reErr(src, 'Invalid capture group name');
    var nm = m[0].slice(0, -1);
    if (names.indexOf(nm) >= 0) throw reErr(src, 'Duplicate capture group name');
    names.push(nm);
    named = true;
  }
  /* second pass: the engine's pattern */
  var out = '', dot = fl.s ? (fl.u ? '(?:' + ANY_PAIR + '|[\\s\\S])' : '[\\s\\S]') : fl.u ? '(?:' + ANY_PAIR + '|[^\\n\\r\\u2028\\u2029])' : '.';
  inClass = false;
  for (i = 0; i < n; i++) {
    c = src.charAt(i);
    var cc = src.charCodeAt(i);
    if (c === '\\') {
      var e = src.charAt(i + 1);
      if (e === 'k' && named) {
        var km = /^<([^>]*)>/.exec(src.slice(i + 2)), at = km ? names.indexOf(km[1]) : -1;
        if (at < 1) throw reErr(src, 'Invalid named capture referenced');
        out += inClass ? 'k' : '(?:\\' + at + ')';
        i += 1 + km[0].length;
        continue;
      }
      if ((e === 'p' || e === 'P') && fl.u) throw reErr(src, 'Unicode property escapes (\\p{...}) are not supported');
      if (e === 'u' && fl.u && src.charAt(i + 2) === '{') {
        var um = /^\{([0-9A-Fa-f]+)\}/.exec(src.slice(i + 2)), cp = um ? parseInt(um[1], 16) : -1;
        if (!(cp >= 0 && cp <= 0x10FFFF)) throw reErr(src, 'Invalid Unicode escape');
        if (cp >= 0x10000 && inClass) throw reErr(src, 'characters outside the BMP in a character class are not supported');
        out += cpText(cp);
        i += 1 + um[0].length;
        continue;
      }
      out += c + e;
      i++;
      continue;
    }
    if (cc >= 0xD800 && cc <= 0xDBFF && fl.u) {
      var lo = src.charCodeAt(i + 1);
      if (lo >= 0xDC00 && lo <= 0xDFFF) {
        if (inClass) throw reErr(src, 'characters outside the BMP in a character class are not supported');
        out += '(?:' + c + src.charAt(i + 1) + ')';
        i++;
        continue;
      }
    }
    if (inClass) { if (c === ']') inClass = false; out += c; continue; }
    if (c === '[') {
      inClass = true;
      if (fl.u && src.charAt(i + 1) === '^') { /* a negated class under u takes a whole pair */
        out += '(?:' + ANY_PAIR + '|[';
        for (i++; i < n; i++) {
          c = src.charAt(i);
          if (c === '\\') { out += c + src.charAt(i + 1); i++; continue; }
          cc = src.charCodeAt(i);
          if (cc >= 0xD800 && cc <= 0xDFFF) throw reErr(src, 'characters outside the BMP in a character class are not supported');
          out += c;
          if (c === ']') break;
        }
        inClass = false;
        out += ')';
        continue;
      }
      out += c;
      continue;
    }
    if (c === '(' && src.charAt(i + 1) === '?' && src.charAt(i + 2) === '<') {
      i = src.indexOf('>', i);
      out += '(';
      continue;
    }
    out += c === '.' ? dot : c;
  }
  var nflags = (fl.g || fl.y ? 'g' : '') + (fl.i ? 'i' : '') + (fl.m ? 'm' : '');
  if (fl.y) out = '(?:' + out + ')|()';
  var ord = '', all = 'dgimsuvy';
  for (i = 0; i < all.length; i++) if (fl[all.charAt(i)]) ord += all.charAt(i);
  new NativeRegExp(out, nflags); /* the engine's own errors for the rest */
  return {src: reSource(src), flags: ord, out: out, nflags: nflags, names: named ? names : null,
          g: !!fl.g, y: !!fl.y, s: !!fl.s, u: !!fl.u, i: !!fl.i, m: !!fl.m};
}
/* `source` as node gives it: `/` and line breaks escaped (not inside a class), an empty
 * pattern as (?:). */
function reSource(src) {
  if (src === '') return '(?:)';
  var out = '', inClass = false;
  for (var i = 0; i < src.length; i++) {
    var c = src.charAt(i);
    if (c === '\\') { out += c + src.charAt(i + 1); i++; continue; }
    if (c === '[') inClass = true;
    else if (c === ']') inClass = false;
    out += c === '/' && !inClass ? '\\/' : c === '\n' ? '\\n' : c === '\r' ? '\\r' : c === '\u2028' ? '\\u2028' : c === '\u2029' ? '\\u2029' : c;
  }
  return out;
}
/* Whether a pattern and its flags need translating at all. */
function plainRe(src, flags) { return /^[gim]*$/.test(flags) && !/\(\?<|\\k</.test(src); }
function makeRe(src, flags) {
  if (plainRe(src, flags)) return new NativeRegExp(src, flags);
  var key = flags + '/' + src, t = reCache[key];
  if (!t) {
    t = translateRe(src, flags);
    if (reCached < 512) { reCache[key] = t; reCached++; }
  }
  var re = new NativeRegExp(t.out, t.nflags);
  Object.defineProperty(re, META, {value: t});
  return re;
}
var RegExpP = function RegExp(p, f) {
  if (!(this instanceof RegExpP) && isRegExp(p) && f === undefined) return p;
  var src, flags;
  if (isRegExp(p)) {
    src = p[META] ? p[META].src : rsrc.call(p);
    flags = f === undefined ? (p[META] ? p[META].flags : rflags.call(p)) : String(f);
  } else {
    src = p === undefined ? '' : String(p);
    flags = f === undefined ? '' : String(f);
  }
  return makeRe(src, flags);
};
RegExpP.prototype = NativeRegExp.prototype;
hide(NativeRegExp.prototype, 'constructor', RegExpP);
hide(g, 'RegExp', RegExpP);
function reGetter(name, read) {
  var d = Object.getOwnPropertyDescriptor(NativeRegExp.prototype, name), orig = d && d.get;
  Object.defineProperty(NativeRegExp.prototype, name, {configurable: true, enumerable: false, get: function () {
    var t = this[META];
    return t ? read(t) : orig ? orig.call(this) : name === 'flags' ? '' : this === NativeRegExp.prototype ? undefined : false;
  }});
}
reGetter('source', function (t) { return t.src; });
reGetter('flags', function (t) { return t.flags; });
reGetter('global', function (t) { return t.g; });
reGetter('sticky', function (t) { return t.y; });
reGetter('dotAll', function (t) { return t.s; });
reGetter('unicode', function (t) { return t.u; });
reGetter('hasIndices', function () { return false; });
hide(NativeRegExp.prototype, 'toString', function () { return '/' + this.source + '/' + this.flags; });
function groupsOf(r, names) {
  var o = Object.create(null);
  for (var k = 1; k < names.length; k++) if (names[k] !== null) o[names[k]] = r[k];
  return o;
}
function execRe(re, s) {
  /* Duktape follows ES5, which zeroes lastIndex when a non-global exec fails; ES2015
   * leaves it alone unless the regexp is global or sticky. */
  var t = re[META], keep = !(t ? t.g || t.y : rglobal.call(re)), last = keep ? re.lastIndex : 0;
  var r = rexec.call(re, s);
  if (keep && r === null) re.lastIndex = last;
  if (!t || r === null) return r;
  if (t.y) {
    if (r[r.length - 1] !== undefined) { re.lastIndex = 0; return null; }
    r.length--;
  }
  if (t.names) r.groups = groupsOf(r, t.names);
  return r;
}
function advance(s, i, u) {
  if (!u || i + 1 >= s.length) return i + 1;
  var c = s.charCodeAt(i), d = s.charCodeAt(i + 1);
  return c >= 0xD800 && c <= 0xDBFF && d >= 0xDC00 && d <= 0xDFFF ? i + 2 : i + 1;
}
hide(NativeRegExp.prototype, 'exec', function (s) { return execRe(this, String(s)); });
hide(NativeRegExp.prototype, 'test', function (s) { return execRe(this, String(s)) !== null; });
/* All matches of a global t-regexp: the exec results, advancing past empty ones. */
function allMatches(re, s) {
  var out = [], m, t = re[META];
  re.lastIndex = 0;
  while ((m = execRe(re, s)) !== null) {
    out.push(m);
    if (m[0] === '') re.lastIndex = advance(s, re.lastIndex, t.u);
  }
  return out;
}
hide(String.prototype, 'match', function (re) {
  var s = String(toObject(this, 'match'));
  if (re !== undefined && re !== null && !isRegExp(re)) re = new RegExpP(re);
  if (!re || !re[META]) return nmatch.call(s, re);
  if (!re[META].g) return execRe(re, s);
  var all = allMatches(re, s);
  return all.length ? all.map(function (m) { return m[0]; }) : null;
});
hide(String.prototype, 'search', function (re) {
  var s = String(toObject(this, 'search'));
  if (re !== undefined && re !== null && !isRegExp(re)) re = new RegExpP(re);
  if (!re || !re[META]) return nsearch.call(s, re);
  var last = re.lastIndex;
  re.lastIndex = 0;
  var m = execRe(re, s);
  re.lastIndex = last;
  return m ? m.index : -1;
});
hide(String.prototype, 'split', function (sep, lim) {
  var s = String(toObject(this, 'split'));
  if (isRegExp(sep) && sep[META]) sep = new NativeRegExp(sep[META].y ? sep[META].out.slice(3, -4) : sep[META].out, (sep[META].i ? 'i' : '') + (sep[META].m ? 'm' : ''));
  return nsplit.call(s, sep, lim);
});
/* A replacement string's $ patterns for one match m (with its groups, if named). */
function expandRe(rep, m, s, groups) {
  var ng = m.length - 1, pos = m.index;
  return nreplace.call(rep, /\$([$&`']|\d\d?|<([^>]*)>?)/g, function (all, c, name) {
    if (c === '$') return '$';
    if (c === '&') return m[0];
    if (c === '`') return s.slice(0, pos);
    if (c === "'") return s.slice(pos + m[0].length);
    if (c.charAt(0) === '<') {
      if (groups === undefined || c.charAt(c.length - 1) !== '>') return all;
      var gv = groups[name];
      return gv === undefined ? '' : String(gv);
    }
    var k = parseInt(c, 10);
    if (c.length === 2 && k >= 1 && k <= ng) return m[k] === undefined ? '' : m[k];
    var k1 = parseInt(c.charAt(0), 10);
    if (k1 >= 1 && k1 <= ng) return (m[k1] === undefined ? '' : m[k1]) + c.slice(1);
    return all;
  });
}
function replaceRe(s, re, rep) {
  var t = re[META], ms;
  if (t.g) ms = allMatches(re, s);
  else { var m1 = execRe(re, s); ms = m1 ? [m1] : []; }
  var out = '', at = 0, fn = typeof rep === 'function';
  if (!fn) rep = String(rep);
  for (var i = 0; i < ms.length; i++) {
    var m = ms[i], piece;
    if (fn) {
      var args = Array.prototype.slice.call(m);
      args.push(m.index, s);
      if (t.names) args.push(m.groups);
      piece = String(rep.apply(undefined, args));
    } else piece = expandRe(rep, m, s, m.groups);
    out += s.slice(at, m.index) + piece;
    at = m.index + m[0].length;
  }
  return out + s.slice(at);
}
hide(String.prototype, 'replace', function (pat, rep) {
  var s = String(toObject(this, 'replace'));
  if (isRegExp(pat) && pat[META]) return replaceRe(s, pat, rep);
  return nreplace.call(s, pat, rep);
});
def(String, 'raw', function (strs) {
  var raw = strs.raw, out = '';
  for (var i = 0; i < raw.length; i++) {
    out += raw[i];
    if (i + 1 < raw.length && i + 1 < arguments.length) out += String(arguments[i + 1]);
  }
  return out;
});
def(String.prototype, 'normalize', function () { return String(toObject(this, 'normalize')); });

/* Duktape's sort is not stable (ES2019 requires it, and code sorting by one key after
 * another relies on it): a merge sort, undefined last and holes after them. Its loops
 * are the deadline's to stop, as any script's. */
var nativeSort = Array.prototype.sort;
hide(Array.prototype, 'sort', function (cmp) {
  if (cmp !== undefined && typeof cmp !== 'function') throw new TypeError('the comparison function must be a function or undefined');
  var o = toObject(this, 'sort'), len = toLength(o.length), vals = [], undef = 0, i;
  for (i = 0; i < len; i++) {
    if (!(i in o)) continue;
    if (o[i] === undefined) undef++;
    else vals.push(o[i]);
  }
  var less = cmp ? function (a, b) { return cmp(a, b) > 0; }
                 : function (a, b) { var x = String(a), y = String(b); return x > y; };
  var buf = new Array(vals.length);
  for (var w = 1; w < vals.length; w *= 2) {
    for (var lo = 0; lo < vals.length; lo += 2 * w) {
      var mid = Math.min(lo + w, vals.length), hi = Math.min(lo + 2 * w, vals.length), a = lo, b = mid, k = lo;
      while (a < mid && b < hi) buf[k++] = less(vals[a], vals[b]) ? vals[b++] : vals[a++];
      while (a < mid) buf[k++] = vals[a++];
      while (b < hi) buf[k++] = vals[b++];
    }
    var t = vals; vals = buf; buf = t;
  }
  for (i = 0; i < vals.length; i++) o[i] = vals[i];
  for (; i < vals.length + undef; i++) o[i] = undefined;
  for (; i < len; i++) delete o[i];
  return o;
});
void nativeSort;

/* ---- Number and Math ------------------------------------------------------------- */

/* Duktape's cbrt is pow(x, 1/3): cbrt(27) is 3.0000000000000004. Of that, one Newton
 * step and the 15-digit rounding, the one whose cube is closest (exact cubes exact). */
hide(Math, 'cbrt', function (x) {
  x = Number(x);
  if (x === 0 || x !== x || x === Infinity || x === -Infinity) return x;
  var a = Math.abs(x), r = Math.pow(a, 1 / 3), best = r, bd = Infinity;
  var c = [r, r - (r * r * r - a) / (3 * r * r), +r.toPrecision(15)];
  for (var i = 0; i < c.length; i++) {
    var d = Math.abs(c[i] * c[i] * c[i] - a);
    if (d <= bd) { bd = d; best = c[i]; }
  }
  return x < 0 ? -best : best;
});
/* Duktape's toLocaleString takes no locale (a string argument is a RangeError): the
 * en-US form that code writing toLocaleString('en-US') wants, with the fraction
 * digits of its options (default at most 3). Other locales read as en-US. */
hide(Number.prototype, 'toLocaleString', function (locale, opts) {
  var x = Number(this);
  if (x !== x) return 'NaN';
  if (x === Infinity || x === -Infinity) return (x < 0 ? '-' : '') + '\u221e';
  opts = opts || {};
  var min = opts.minimumFractionDigits === undefined ? 0 : toInt(opts.minimumFractionDigits);
  var max = opts.maximumFractionDigits === undefined ? Math.max(min, 3) : toInt(opts.maximumFractionDigits);
  if (!(min >= 0 && min <= 20 && max >= min && max <= 20)) throw new RangeError('fraction digits out of range');
  var s = Math.abs(x).toFixed(max), dot = s.indexOf('.');
  var ip = dot < 0 ? s : s.slice(0, dot), fp = dot < 0 ? '' : s.slice(dot + 1);
  while (fp.length > min && fp.charAt(fp.length - 1) === '0') fp = fp.slice(0, -1);
  if (opts.useGrouping !== false) ip = ip.replace(/\B(?=(\d{3})+$)/g, ',');
  return (x < 0 && (+s !== 0) ? '-' : '') + ip + (fp ? '.' + fp : '');
});
if (!('description' in Symbol.prototype)) {
  Object.defineProperty(Symbol.prototype, 'description', {configurable: true, get: function () {
    var m = /^Symbol\(([\s\S]*)\)$/.exec(String(this.valueOf()));
    return m && m[1] !== '' ? m[1] : undefined; /* Symbol('') reads as Symbol() */
  }});
}

def(Number, 'isInteger', function (x) { return typeof x === 'number' && isFinite(x) && Math.floor(x) === x; });
def(Number, 'isSafeInteger', function (x) { return Number.isInteger(x) && Math.abs(x) <= 9007199254740991; });
def(Number, 'isFinite', function (x) { return typeof x === 'number' && isFinite(x); });
def(Number, 'isNaN', function (x) { return typeof x === 'number' && x !== x; });
def(Number, 'parseFloat', parseFloat);
def(Number, 'parseInt', parseInt);
def(Number, 'EPSILON', Math.pow(2, -52));
def(Number, 'MAX_SAFE_INTEGER', 9007199254740991);
def(Number, 'MIN_SAFE_INTEGER', -9007199254740991);

/* ---- Map, Set, WeakMap, WeakSet ----------------------------------------------------
 * Insertion-ordered entries in an array (deleted ones become holes, compacted when
 * they are half), found through an index: a dictionary for primitives, and for objects
 * a hidden id stored on the object (or, for a frozen one, a linear list). */

var idKey = '__ts_id_' + Math.floor(Math.random() * 1e9).toString(36), nextId = 1;
function objId(o, create) {
  if (Object.prototype.hasOwnProperty.call(o, idKey)) return o[idKey];
  if (!create || !Object.isExtensible(o)) return undefined;
  var id = nextId++;
  Object.defineProperty(o, idKey, {value: id, enumerable: false});
  return id;
}
function keyOf(k, create) {
  var t = typeof k;
  if (k !== null && (t === 'object' || t === 'function')) {
    var id = objId(k, create);
    return id === undefined ? undefined : 'o' + id;
  }
  if (t === 'number') return k !== k ? 'nNaN' : k === 0 ? 'n0' : 'n' + k;
  if (t === 'string') return 's' + k;
  if (t === 'symbol') return undefined; /* found by the linear list */
  return t.charAt(0) + String(k);
}

function Store() { this.k = []; this.v = []; this.idx = {}; this.slow = []; this.size = 0; this.holes = 0; }
Store.prototype.find = function (key) {
  var s = keyOf(key, false);
  if (s !== undefined) {
    var i = this.idx[s];
    return i === undefined ? -1 : i;
  }
  for (var j = 0; j < this.slow.length; j++) if (sameValueZero(this.k[this.slow[j]], key) && this.v[this.slow[j]] !== HOLE) return this.slow[j];
  return -1;
};
var HOLE = {};
Store.prototype.set = function (key, val) {
  var i = this.find(key);
  if (i >= 0) { this.v[i] = val; return; }
  if (key === 0) key = 0; /* -0 becomes +0 */
  i = this.k.length;
  this.k.push(key);
  this.v.push(val);
  var s = keyOf(key, true);
  if (s !== undefined) this.idx[s] = i;
  else this.slow.push(i);
  this.size++;
};
Store.prototype.remove = function (key) {
  var i = this.find(key);
  if (i < 0) return false;
  var s = keyOf(key, false);
  if (s !== undefined) delete this.idx[s];
  else this.slow.splice(this.slow.indexOf(i), 1);
  this.k[i] = undefined;
  this.v[i] = HOLE;
  this.size--;
  if (++this.holes > 32 && this.holes > this.k.length / 2) this.compact();
  return true;
};
Store.prototype.compact = function () {
  var k = this.k, v = this.v;
  this.k = []; this.v = []; this.idx = {}; this.slow = []; this.size = 0; this.holes = 0;
  for (var i = 0; i < k.length; i++) if (v[i] !== HOLE) this.set(k[i], v[i]);
  this.epoch = (this.epoch || 0) + 1;
};
Store.prototype.clear = function () {
  for (var i = 0; i < this.v.length; i++) this.v[i] = HOLE;
  this.k = []; this.v = []; this.idx = {}; this.slow = []; this.size = 0; this.holes = 0;
  this.epoch = (this.epoch || 0) + 1;
};

function StoreIter(st, kind) { this._st = st; this._i = 0; this._k = kind; this._e = st.epoch; this._seen = 0; }
StoreIter.prototype.next = function () {
  var st = this._st;
  if (!st) return {value: undefined, done: true};
  if (st.epoch !== this._e) { /* compacted under us: skip what we already gave */
    this._e = st.epoch;
    this._i = this._seen;
  }
  while (this._i < st.k.length) {
    var i = this._i++;
    if (st.v[i] === HOLE) continue;
    this._seen++;
    var key = st.k[i];
    /* kind 0 keys, 1 values, 2 [key, value], 3 [key, key] (a Set's entries) */
    return {value: this._k === 0 ? key : this._k === 1 ? st.v[i] : this._k === 2 ? [key, st.v[i]] : [key, key], done: false};
  }
  this._st = null;
  return {value: undefined, done: true};
};
StoreIter.prototype[ITER] = function () { return this; };

function fill2(self, src, add) {
  if (src === null || src === undefined) return;
  var it = iter(src), s;
  while (!(s = it.next()).done) add.call(self, s.value);
}

function MapP(src) {
  if (!(this instanceof MapP)) throw new TypeError('Map must be called with new');
  hide(this, '_st', new Store());
  fill2(this, src, function (e) {
    if (e === null || typeof e !== 'object') throw new TypeError('Map wants [key, value] entries');
    this.set(e[0], e[1]);
  });
}
MapP.prototype.get = function (k) { var i = this._st.find(k); return i < 0 ? undefined : this._st.v[i]; };
MapP.prototype.set = function (k, v) { this._st.set(k, v); return this; };
MapP.prototype.has = function (k) { return this._st.find(k) >= 0; };
MapP.prototype['delete'] = function (k) { return this._st.remove(k); };
MapP.prototype.clear = function () { this._st.clear(); };
MapP.prototype.keys = function () { return new StoreIter(this._st, 0); };
MapP.prototype.values = function () { return new StoreIter(this._st, 1); };
MapP.prototype.entries = function () { return new StoreIter(this._st, 2); };
MapP.prototype.forEach = function (fn, self) {
  var it = this.entries(), s;
  while (!(s = it.next()).done) fn.call(self, s.value[1], s.value[0], this);
};
Object.defineProperty(MapP.prototype, 'size', {get: function () { return this._st.size; }});
MapP.prototype[ITER] = MapP.prototype.entries;
MapP.prototype.toJSON = function () { return {}; };
def(MapP, 'groupBy', function (src, fn) {
  var m = new MapP(), a = toArray(src);
  for (var i = 0; i < a.length; i++) {
    var k = fn(a[i], i);
    if (!m.has(k)) m.set(k, []);
    m.get(k).push(a[i]);
  }
  return m;
});

function SetP(src) {
  if (!(this instanceof SetP)) throw new TypeError('Set must be called with new');
  hide(this, '_st', new Store());
  fill2(this, src, function (v) { this.add(v); });
}
SetP.prototype.add = function (v) { if (this._st.find(v) < 0) this._st.set(v, v); return this; };
SetP.prototype.has = function (v) { return this._st.find(v) >= 0; };
SetP.prototype['delete'] = function (v) { return this._st.remove(v); };
SetP.prototype.clear = function () { this._st.clear(); };
SetP.prototype.values = function () { return new StoreIter(this._st, 0); };
SetP.prototype.keys = SetP.prototype.values;
SetP.prototype.entries = function () { return new StoreIter(this._st, 3); };
SetP.prototype.forEach = function (fn, self) {
  var it = this.values(), s;
  while (!(s = it.next()).done) fn.call(self, s.value, s.value, this);
};
Object.defineProperty(SetP.prototype, 'size', {get: function () { return this._st.size; }});
SetP.prototype[ITER] = SetP.prototype.values;
SetP.prototype.toJSON = function () { return {}; };

function weakKey(k) {
  if (k === null || (typeof k !== 'object' && typeof k !== 'function')) throw new TypeError('invalid value used as weak map key');
  return k;
}
function WeakMapP(src) {
  if (!(this instanceof WeakMapP)) throw new TypeError('WeakMap must be called with new');
  hide(this, '_st', new Store());
  fill2(this, src, function (e) { this.set(e[0], e[1]); });
}
WeakMapP.prototype.get = function (k) { return MapP.prototype.get.call(this, k); };
WeakMapP.prototype.set = function (k, v) { this._st.set(weakKey(k), v); return this; };
WeakMapP.prototype.has = function (k) { return MapP.prototype.has.call(this, k); };
WeakMapP.prototype['delete'] = function (k) { return this._st.remove(k); };
function WeakSetP(src) {
  if (!(this instanceof WeakSetP)) throw new TypeError('WeakSet must be called with new');
  hide(this, '_st', new Store());
  fill2(this, src, function (v) { this.add(v); });
}
WeakSetP.prototype.add = function (v) { this._st.set(weakKey(v), true); return this; };
WeakSetP.prototype.has = function (v) { return this._st.find(v) >= 0; };
WeakSetP.prototype['delete'] = function (v) { return this._st.remove(v); };

function named(C, name) {
  try { Object.defineProperty(C, 'name', {value: name}); } catch (e) {}
  hide(C.prototype, Symbol.toStringTag || '__tag', name);
  return C;
}
if (typeof g.Map !== 'function') def(g, 'Map', named(MapP, 'Map'));
if (typeof g.Set !== 'function') def(g, 'Set', named(SetP, 'Set'));
if (typeof g.WeakMap !== 'function') def(g, 'WeakMap', named(WeakMapP, 'WeakMap'));
if (typeof g.WeakSet !== 'function') def(g, 'WeakSet', named(WeakSetP, 'WeakSet'));

/* ---- jobs, timers, Promise ------------------------------------------------------- */

var jobs = [], jobAt = 0;
function enqueue(fn) { jobs.push(fn); }
var timers = [], timerSeq = 1;

function runJobs() {
  while (jobAt < jobs.length) {
    var fn = jobs[jobAt];
    jobs[jobAt++] = null;
    if (jobAt > 1024 && jobAt * 2 > jobs.length) { jobs = jobs.slice(jobAt); jobAt = 0; }
    fn();
  }
  jobs = [];
  jobAt = 0;
}

function PromiseP(executor) {
  if (!(this instanceof PromiseP)) throw new TypeError('Promise must be called with new');
  if (typeof executor !== 'function') throw new TypeError('Promise resolver is not a function');
  hide(this, '_s', 0); /* 0 pending, 1 fulfilled, 2 rejected */
  hide(this, '_v', undefined);
  hide(this, '_h', []);
  var p = this, done = false;
  try {
    executor(function (v) { if (!done) { done = true; resolveP(p, v); } },
             function (e) { if (!done) { done = true; settle(p, 2, e); } });
  } catch (e) {
    if (!done) { done = true; settle(p, 2, e); }
  }
}
function settle(p, state, v) {
  if (p._s !== 0) return;
  p._s = state;
  p._v = v;
  var h = p._h;
  p._h = null;
  for (var i = 0; i < h.length; i++) schedule(p, h[i]);
}
function resolveP(p, v) {
  if (v === p) { settle(p, 2, new TypeError('a promise cannot resolve to itself')); return; }
  if (v !== null && (typeof v === 'object' || typeof v === 'function')) {
    var then;
    try { then = v.then; } catch (e) { settle(p, 2, e); return; }
    if (typeof then === 'function') {
      var called = false;
      enqueue(function () {
        try {
          then.call(v, function (x) { if (!called) { called = true; resolveP(p, x); } },
                    function (e) { if (!called) { called = true; settle(p, 2, e); } });
        } catch (e) {
          if (!called) { called = true; settle(p, 2, e); }
        }
      });
      return;
    }
  }
  settle(p, 1, v);
}
function schedule(p, h) {
  enqueue(function () {
    var fn = p._s === 1 ? h.ok : h.err;
    if (typeof fn !== 'function') {
      if (p._s === 1) resolveP(h.p, p._v);
      else settle(h.p, 2, p._v);
      return;
    }
    var r;
    try { r = fn(p._v); } catch (e) { settle(h.p, 2, e); return; }
    resolveP(h.p, r);
  });
}
function noop() {}
PromiseP.prototype.then = function (ok, err) {
  var np = new PromiseP(noop), h = {ok: ok, err: err, p: np};
  if (this._s === 0) this._h.push(h);
  else schedule(this, h);
  return np;
};
PromiseP.prototype['catch'] = function (err) { return this.then(undefined, err); };
PromiseP.prototype['finally'] = function (fn) {
  if (typeof fn !== 'function') return this.then(fn, fn);
  return this.then(function (v) { return PromiseP.resolve(fn()).then(function () { return v; }); },
                   function (e) { return PromiseP.resolve(fn()).then(function () { throw e; }); });
};
PromiseP.resolve = function (v) {
  if (v instanceof PromiseP) return v;
  return new PromiseP(function (ok) { ok(v); });
};
PromiseP.reject = function (e) { return new PromiseP(function (ok, err) { err(e); }); };
function combine(src, onItem, onEmpty) {
  return new PromiseP(function (ok, err) {
    var a = toArray(src), state = {left: a.length, out: new Array(a.length), ok: ok, err: err};
    if (!a.length) { onEmpty(state); return; }
    for (var i = 0; i < a.length; i++) onItem(state, PromiseP.resolve(a[i]), i);
  });
}
PromiseP.all = function (src) {
  return combine(src, function (st, p, i) {
    p.then(function (v) { st.out[i] = v; if (--st.left === 0) st.ok(st.out); }, st.err);
  }, function (st) { st.ok([]); });
};
PromiseP.allSettled = function (src) {
  return combine(src, function (st, p, i) {
    p.then(function (v) { st.out[i] = {status: 'fulfilled', value: v}; if (--st.left === 0) st.ok(st.out); },
           function (e) { st.out[i] = {status: 'rejected', reason: e}; if (--st.left === 0) st.ok(st.out); });
  }, function (st) { st.ok([]); });
};
PromiseP.race = function (src) {
  return combine(src, function (st, p) { p.then(st.ok, st.err); }, noop);
};
/* AggregateError(errors, message), what Promise.any rejects with. */
function AggregateErrorP(errors, message) {
  if (!(this instanceof AggregateErrorP)) return new AggregateErrorP(errors, message);
  var e = new Error(message === undefined ? '' : String(message));
  hide(this, 'message', e.message);
  hide(this, 'errors', toArray(errors));
  hide(this, 'stack', e.stack);
}
AggregateErrorP.prototype = Object.create(Error.prototype);
hide(AggregateErrorP.prototype, 'constructor', AggregateErrorP);
hide(AggregateErrorP.prototype, 'name', 'AggregateError');
try { Object.defineProperty(AggregateErrorP, 'name', {value: 'AggregateError'}); } catch (e) {}
if (typeof g.AggregateError !== 'function') def(g, 'AggregateError', AggregateErrorP);
PromiseP.any = function (src) {
  return combine(src, function (st, p, i) {
    p.then(st.ok, function (e) {
      st.out[i] = e;
      if (--st.left === 0) st.err(new g.AggregateError(st.out, 'All promises were rejected'));
    });
  }, function (st) { st.err(new g.AggregateError([], 'All promises were rejected')); });
};
PromiseP.withResolvers = function () {
  var r = {};
  r.promise = new PromiseP(function (ok, err) { r.resolve = ok; r.reject = err; });
  return r;
};
PromiseP.prototype.toJSON = function () { return {}; };
if (typeof g.Promise !== 'function') def(g, 'Promise', named(PromiseP, 'Promise'));
var P = g.Promise;

def(g, 'queueMicrotask', function (fn) {
  if (typeof fn !== 'function') throw new TypeError('queueMicrotask wants a function');
  enqueue(function () { fn(); });
});
function addTimer(fn, ms, args, repeat) {
  if (typeof fn !== 'function') throw new TypeError('the timer callback is not a function');
  ms = Number(ms);
  if (!(ms >= 1)) ms = repeat ? 1 : 0;
  var t = {id: timerSeq++, due: host.now() + ms, ms: ms, fn: fn, args: args, repeat: repeat};
  timers.push(t);
  return t.id;
}
function clearTimer(id) {
  for (var i = 0; i < timers.length; i++) if (timers[i].id === id) { timers.splice(i, 1); return; }
}
def(g, 'setTimeout', function (fn, ms) { return addTimer(fn, ms, Array.prototype.slice.call(arguments, 2), false); });
def(g, 'setInterval', function (fn, ms) { return addTimer(fn, ms, Array.prototype.slice.call(arguments, 2), true); });
def(g, 'setImmediate', function (fn) { return addTimer(fn, 0, Array.prototype.slice.call(arguments, 1), false); });
def(g, 'clearTimeout', clearTimer);
def(g, 'clearInterval', clearTimer);
def(g, 'clearImmediate', clearTimer);

/* Things outside the heap a promise may wait on (state.runCode's handles): each has
 * _take(waitMs), which waits up to waitMs for news and returns true once it is settled. */
var pending = [];
function addPending(h) { pending.push(h); }

/* Runs every job, then each timer in the order it is due and each pending handle as it
 * settles (waiting for them: the run's deadline bounds the wait), until nothing is left. */
function drain() {
  for (;;) {
    runJobs();
    if (!timers.length && !pending.length) return;
    var k = -1;
    for (var i = 0; i < timers.length; i++) if (k < 0 || timers[i].due < timers[k].due) k = i;
    var wait = k >= 0 ? timers[k].due - host.now() : Infinity;
    if (pending.length) {
      /* look at every handle; wait (on the first) only while no timer is due */
      var slice = Math.max(0, Math.min(wait, 5));
      for (var j = 0; j < pending.length; j++) {
        if (pending[j]._take(j === 0 ? slice : 0)) { pending.splice(j, 1); j--; }
      }
      if (jobAt < jobs.length || k < 0 || timers[k].due > host.now()) continue;
    } else if (wait > 0) {
      host.sleep(wait);
    }
    var t = timers[k];
    if (t.repeat) t.due += t.ms;
    else timers.splice(k, 1);
    t.fn.apply(undefined, t.args);
  }
}

/* ---- async functions and generators (what the transpiler's output calls) ----------- */

function Awaiting(v) { this.v = v; }
function Yielded(v) { this.v = v; }
function Done(v) { this.v = v; }

function asyncRun(fn, self, args) {
  return new P(function (ok, err) {
    var th = new Thread(function () { return new Done(fn.apply(self, args)); });
    function step(v, isErr) {
      var r;
      try {
        r = isErr ? Thread.resume(th, v, true) : Thread.resume(th, v);
      } catch (e) {
        err(e);
        return;
      }
      if (r instanceof Done) { ok(r.v); return; }
      if (!(r instanceof Awaiting)) { err(new SyntaxError('yield inside an async function')); return; }
      var w = r.v;
      if (w instanceof PromiseP || (w !== null && (typeof w === 'object' || typeof w === 'function') && typeof w.then === 'function')) {
        P.resolve(w).then(function (x) { step(x, false); }, function (e) { step(e, true); });
      } else {
        enqueue(function () { step(w, false); });
      }
    }
    step(undefined, false);
  });
}
function awaitValue(v) { return Thread.yield(new Awaiting(v)); }

/* A generator's coroutine lives in the closure of its iterator's methods, never in a
 * property: a script that reached it would hold Duktape's Thread constructor (through
 * its `constructor`), which the prelude keeps to itself. */
function GenIter() {}
GenIter.prototype[ITER] = function () { return this; };
/* return(v) on a suspended generator throws a GenReturn into it at its yield, so its
 * finally blocks run as node runs them (a finally may yield again, or return a value of
 * its own); the generator's catch clauses rethrow it (the transpiler puts
 * __ts.genCatch(e) first in each), and when it comes out the generator is done with v. */
function GenReturn(v) { this.v = v; }
function genCatch(e) { if (e instanceof GenReturn) throw e; }
/* for…of left early (break, return, a throw from its body): the iterator's return(), if
 * it has one (for await awaits what it returns). */
function closeIter(it) { return it && typeof it['return'] === 'function' ? it['return']() : undefined; }
function genRun(fn, self, args) {
  var th = null, done = false, it = new GenIter();
  function go(v, isErr) {
    if (done) {
      if (isErr) throw v;
      return {value: undefined, done: true};
    }
    if (!th) {
      if (isErr) { done = true; throw v; }
      th = new Thread(function () { return new Done(fn.apply(self, args)); });
    }
    var r;
    try {
      r = isErr ? Thread.resume(th, v, true) : Thread.resume(th, v);
    } catch (e) {
      done = true;
      if (e instanceof GenReturn) return {value: e.v, done: true};
      throw e;
    }
    if (r instanceof Done) { done = true; return {value: r.v, done: true}; }
    if (r instanceof Awaiting) throw new SyntaxError('await inside a generator');
    return {value: r.v, done: false};
  }
  hide(it, 'next', function (v) { return go(v, false); });
  hide(it, 'throw', function (e) { return go(e, true); });
  hide(it, 'return', function (v) {
    if (done || !th) { done = true; return {value: v, done: true}; }
    return go(new GenReturn(v), true);
  });
  return it;
}

/* async function*: next/throw/return return promises and queue while the body runs; the
 * body's coroutine yields Awaiting (resumed when the promise settles) or Yielded (the
 * value awaited, then handed to the oldest request). */
var ASYNC_ITER = typeof Symbol.asyncIterator === 'symbol' ? Symbol.asyncIterator : Symbol('Symbol.asyncIterator');
def(Symbol, 'asyncIterator', ASYNC_ITER);
function AsyncGenIter() {}
AsyncGenIter.prototype[ASYNC_ITER] = function () { return this; };
function agenRun(fn, self, args) {
  var th = null, done = false, running = false, queue = [], it = new AsyncGenIter();
  function settleFirst(v, isErr) {
    var q = queue.shift();
    running = false;
    if (isErr) q.err(v); else q.ok(v);
    pump();
  }
  function step(v, isErr) {
    var r;
    try {
      r = isErr ? Thread.resume(th, v, true) : Thread.resume(th, v);
    } catch (e) {
      done = true;
      if (e instanceof GenReturn) settleFirst({value: e.v, done: true}, false);
      else settleFirst(e, true);
      return;
    }
    if (r instanceof Done) { done = true; settleFirst({value: r.v, done: true}, false); return; }
    var isYield = r instanceof Yielded;
    P.resolve(r.v).then(function (x) {
      if (isYield) settleFirst({value: x, done: false}, false);
      else step(x, false);
    }, function (e) { step(e, true); });
  }
  function pump() {
    if (running || !queue.length) return;
    var q = queue[0];
    if (!th && !done) {
      if (q.kind !== 'next') done = true;
      else th = new Thread(function () { return new Done(fn.apply(self, args)); });
    }
    if (q.kind === 'return' && th && !done) { /* suspended at a yield: its finally blocks run */
      running = true;
      step(new GenReturn(q.v), true);
      return;
    }
    if (done || q.kind === 'return') {
      done = true;
      queue.shift();
      if (q.kind === 'throw') q.err(q.v);
      else q.ok({value: q.kind === 'return' ? q.v : undefined, done: true});
      pump();
      return;
    }
    running = true;
    step(q.v, q.kind === 'throw');
  }
  function request(kind) {
    return function (v) {
      return new P(function (ok, err) {
        queue.push({kind: kind, v: v, ok: ok, err: err});
        pump();
      });
    };
  }
  hide(it, 'next', request('next'));
  hide(it, 'throw', request('throw'));
  hide(it, 'return', request('return'));
  return it;
}
/* for await (x of src): src's async iterator, or its sync one with each value awaited. */
function asyncIter(x) {
  if (x !== null && x !== undefined) {
    var f = x[ASYNC_ITER];
    if (typeof f === 'function') {
      var ai = f.call(x);
      if (ai === null || typeof ai !== 'object') throw new TypeError('the async iterator is not an object');
      return ai;
    }
  }
  var it = iter(x);
  return {next: function (v) {
    var s = it.next(v);
    return s.done ? s : P.resolve(s.value).then(function (x) { return {value: x, done: false}; });
  }};
}
/* yield* inside an async generator: delegates to an async (or sync) iterable. */
function yieldAllAsync(src) {
  var it = asyncIter(src), s;
  while (!(s = awaitValue(it.next())).done) yieldValue(s.value);
  return s.value;
}
function yieldValue(v) { return Thread.yield(new Yielded(v)); }
function yieldAll(src) {
  var it = iter(src), s, last;
  while (!(s = it.next()).done) {
    try {
      last = yieldValue(s.value);
    } catch (e) { /* return() reaching yield*: the inner generator's finally blocks run first */
      if (e instanceof GenReturn && typeof it['return'] === 'function') it['return'](e.v);
      throw e;
    }
  }
  return s.value;
}

/* ---- helpers for the transpiler's output ------------------------------------------ */

function spread(x) { return toArray(x); }
/* Object rest: the own enumerable properties of o except `keys`. */
function rest(o, keys) {
  var out = {}, k = Object.keys(toObject(o, 'destructuring'));
  for (var i = 0; i < k.length; i++) if (keys.indexOf(k[i]) < 0) out[k[i]] = o[k[i]];
  return out;
}
function assign(target) {
  for (var i = 1; i < arguments.length; i++) {
    var s = arguments[i];
    if (s === null || s === undefined) continue;
    if (typeof s === 'string') s = Object(s);
    var k = Object.keys(s);
    for (var j = 0; j < k.length; j++) target[k[j]] = s[k[j]];
  }
  return target;
}
function construct(C, args) { return Reflect.construct(C, args); }
/* A class: methods non-enumerable, statics on the constructor, `extends` wired both
 * ways (instances and statics). */
function klass(C, Base, protoProps, staticProps) {
  if (Base !== undefined) {
    if (Base !== null && typeof Base !== 'function') throw new TypeError('Class extends value ' + String(Base) + ' is not a constructor or null');
    C.prototype = Object.create(Base === null ? null : Base.prototype, {constructor: {value: C, writable: true, configurable: true}});
    if (Base) Object.setPrototypeOf(C, Base);
  }
  defineAll(C.prototype, protoProps);
  defineAll(C, staticProps);
  return C;
}
function defineAll(o, props) {
  for (var i = 0; i < props.length; i++) {
    var p = props[i], d = Object.getOwnPropertyDescriptor(o, p[0]);
    if (p[2] === 'get' || p[2] === 'set') {
      var nd = {configurable: true, enumerable: false};
      if (d && (d.get || d.set)) { nd.get = d.get; nd.set = d.set; }
      nd[p[2]] = p[1];
      Object.defineProperty(o, p[0], nd);
    } else {
      Object.defineProperty(o, p[0], {value: p[1], writable: true, configurable: true, enumerable: p[2] === 'field'});
    }
  }
}
/* super(...) in a derived constructor: `self` is the object `new` made (its prototype
 * is the derived class's). A class of ours or any plain function initialises it as
 * they are; a native constructor (Error, Array, RegExp...) makes its own object, which
 * then takes self's prototype. (Duktape's Reflect.construct has no newTarget.) */
var fnToString = Function.prototype.toString;
function superCall(Base, args, self) {
  if (Base === null) throw new TypeError('super constructor null is not a constructor');
  if (typeof Base !== 'function') throw new TypeError('super constructor is not a constructor');
  if (/\[native code\]/.test(fnToString.call(Base))) {
    var obj = Reflect.construct(Base, args);
    Object.setPrototypeOf(obj, Object.getPrototypeOf(self));
    return obj;
  }
  var r = Base.apply(self, args);
  return r !== null && (typeof r === 'object' || typeof r === 'function') ? r : self;
}
/* super.method / super.prop: looked up on the home object's parent, this kept. */
function superGet(home, key, self) {
  var proto = Object.getPrototypeOf(home);
  var o = proto;
  while (o !== null) {
    var d = Object.getOwnPropertyDescriptor(o, key);
    if (d) return d.get ? d.get.call(self) : d.value;
    o = Object.getPrototypeOf(o);
  }
  return undefined;
}
function tagged(strs, raw) {
  Object.defineProperty(strs, 'raw', {value: raw});
  return strs;
}
function instanceOf(x, C) { return x instanceof C; }
function enumObj(o) { return o; }
function checkCallable(f, what) {
  if (typeof f !== 'function') throw new TypeError(what + ' is not a function');
  return f;
}

var rt = {
  'async': asyncRun, 'await': awaitValue, gen: genRun, 'yield': yieldValue, yieldAll: yieldAll,
  agen: agenRun, asyncIter: asyncIter, yieldAllAsync: yieldAllAsync,
  iter: iter, spread: spread, rest: rest, assign: assign, construct: construct,
  klass: klass, superCall: superCall, superGet: superGet, tagged: tagged, instanceOf: instanceOf,
  enumObj: enumObj, callable: checkCallable, genCatch: genCatch, closeIter: closeIter, re: makeRe
};
/* The transpiler's output reaches these as __ts.NAME; a script that touches __ts gets
 * nothing it could not already do. */
Object.freeze(rt);
Object.defineProperty(g, '__ts', {value: rt, writable: false, enumerable: false, configurable: false});

/* ---- structuredClone ------------------------------------------------------------- */

def(g, 'structuredClone', function (v) {
  var seen = new MapP();
  function clone(x) {
    if (x === null || typeof x !== 'object') {
      if (typeof x === 'function' || typeof x === 'symbol') throw new Error('DataCloneError: ' + typeof x + ' could not be cloned');
      return x;
    }
    if (seen.has(x)) return seen.get(x);
    var out, i, tag = Object.prototype.toString.call(x);
    if (tag === '[object Date]') { out = new Date(x.getTime()); seen.set(x, out); return out; }
    if (tag === '[object RegExp]') { out = new RegExp(x.source, x.flags); seen.set(x, out); return out; }
    if (x instanceof g.Map) {
      out = new g.Map(); seen.set(x, out);
      x.forEach(function (val, key) { out.set(clone(key), clone(val)); });
      return out;
    }
    if (x instanceof g.Set) {
      out = new g.Set(); seen.set(x, out);
      x.forEach(function (val) { out.add(clone(val)); });
      return out;
    }
    if (ArrayBuffer.isView(x)) { out = new x.constructor(x); seen.set(x, out); return out; }
    if (Array.isArray(x)) {
      out = new Array(x.length); seen.set(x, out);
      for (i = 0; i < x.length; i++) if (i in x) out[i] = clone(x[i]);
      return out;
    }
    if (x instanceof Error) {
      out = new x.constructor(x.message); seen.set(x, out);
      return out;
    }
    out = {}; seen.set(x, out);
    var k = Object.keys(x);
    for (i = 0; i < k.length; i++) out[k[i]] = clone(x[k[i]]);
    return out;
  }
  return clone(v);
});

/* ---- console extras -------------------------------------------------------------- */

var con = g.console;
def(con, 'dir', con.log);
def(con, 'assert', function (ok) {
  if (!ok) con.error.apply(con, ['Assertion failed'].concat(Array.prototype.slice.call(arguments, 1)));
});
def(con, 'table', con.log);
var counts = {};
def(con, 'count', function (label) {
  label = label === undefined ? 'default' : String(label);
  counts[label] = (counts[label] || 0) + 1;
  con.log(label + ': ' + counts[label]);
});
def(con, 'time', noop);
def(con, 'timeEnd', noop);
def(con, 'group', con.log);
def(con, 'groupEnd', noop);

return {
  addPending: addPending,
  finish: function (v) {
    drain();
    if (v instanceof PromiseP) {
      if (v._s === 1) return v._v;
      if (v._s === 2) throw v._v;
      throw new Error('the promise never settled: nothing was left to run');
    }
    return v;
  }
};
})
