/*
 * toolkit.js: what a tool module sees besides the built-ins: `z`, defineTool, module and
 * exports; and the host's helpers (describe, run). Evaluated once per process into the
 * template heap's stash (runtime/js/sandbox.c) and called in each module's heap with
 * the global object and the prelude's runtime. ES5, not transpiled.
 *
 * `z` builds JSON Schema, the schema Zod 4's own export gives for the same chain,
 * z.toJSONSchema(schema, {io: 'input'}) without "$schema": arguments are the input a
 * model sends, so optional and defaulted properties are not required and objects carry
 * no additionalProperties (Zod strips unknown keys; strict() and catchall() say
 * otherwise). The table is in docs/jstools.md. Each method returns a new schema; the
 * one it was called on is unchanged, as in Zod.
 */
(function (g, rt) {
'use strict';
var defs = [];
function copy(o) { return o === undefined ? undefined : JSON.parse(JSON.stringify(o)); }
var MAX_SAFE = 9007199254740991;

/* A schema: its JSON Schema so far and how an object holding it treats it. */
function Z(schema, kind, optional, extra) {
  this._schema = schema;
  this._kind = kind;
  this._optional = !!optional;
  this._x = extra || {}; /* kind-specific: an object's shape, a string's patterns... */
}
function derive(z, change, kind) {
  var n = new Z(copy(z._schema), kind || z._kind, z._optional, z._x);
  if (change) change(n._schema, n);
  return n;
}
function num(n, what) {
  if (typeof n !== 'number' || n !== n) throw new TypeError(what + ' wants a number');
  return n;
}
function count(n, what) {
  if (typeof n !== 'number' || n < 0 || Math.floor(n) !== n) throw new TypeError(what + ' wants a non-negative integer');
  return n;
}
function schemaOf(x, where) {
  if (x instanceof Z) return copy(x._schema);
  if (x !== null && typeof x === 'object' && !Array.isArray(x)) return copy(x);
  throw new TypeError(where + ' must be a z schema or a JSON Schema object');
}
function isOptional(x) { return x instanceof Z && x._optional; }

Z.prototype.optional = function () { var n = derive(this); n._optional = true; return n; };
Z.prototype.nonoptional = function () { var n = derive(this); n._optional = false; return n; };
Z.prototype.nullable = function () {
  var n = new Z({anyOf: [copy(this._schema), {type: 'null'}]}, 'nullable', this._optional);
  return n;
};
Z.prototype.nullish = function () { return this.nullable().optional(); };
Z.prototype['default'] = function (v) {
  var d = typeof v === 'function' ? v() : v;
  var n = derive(this, function (s) { s['default'] = copy(d); });
  n._optional = true; /* input mode: a defaulted property may be left out */
  return n;
};
Z.prototype.prefault = Z.prototype['default'];
Z.prototype['catch'] = function (v) { return this['default'](v); };
Z.prototype.describe = function (text) { return derive(this, function (s) { s.description = String(text); }); };
Z.prototype.meta = function (m) {
  if (m === undefined) return copy(this._schema);
  return derive(this, function (s) { var k = Object.keys(m); for (var i = 0; i < k.length; i++) s[k[i]] = copy(m[k[i]]); });
};
Object.defineProperty(Z.prototype, 'description', {get: function () { return this._schema.description; }});
Z.prototype.or = function (other) { return z.union([this, other]); };
Z.prototype.and = function (other) { return z.intersection(this, other); };
Z.prototype.array = function () { return z.array(this); };
Z.prototype.brand = Z.prototype.readonly = function () { return this; };
/* Refinements and transforms do not change the schema (Zod's export drops them too,
 * or refuses transforms; here a tool's args schema keeps working). */
Z.prototype.refine = Z.prototype.superRefine = Z.prototype.transform = Z.prototype.check = function () { return this; };
Z.prototype.pipe = function (next) { return next instanceof Z ? next : this; };
Z.prototype.toJSONSchema = function () { return copy(this._schema); };
Z.prototype.isOptional = function () { return this._optional; };
Z.prototype.isNullable = function () { return this._kind === 'nullable'; };
/* Validation is the host's (against the JSON Schema, before execute runs); parse gives
 * the value back, with defaults filled in for objects, so code that calls it works. */
Z.prototype.parse = function (v) { return fillDefaults(this, v); };
Z.prototype.safeParse = function (v) { return {success: true, data: fillDefaults(this, v)}; };
Z.prototype.parseAsync = function (v) { return Promise.resolve(fillDefaults(this, v)); };
function fillDefaults(zs, v) {
  if (v === undefined && zs._schema['default'] !== undefined) return copy(zs._schema['default']);
  if (zs._kind === 'object' && v !== null && typeof v === 'object' && !Array.isArray(v)) {
    var shape = zs._x.shape, k = Object.keys(shape), out = {}, i;
    var own = Object.keys(v);
    for (i = 0; i < own.length; i++) out[own[i]] = v[own[i]];
    for (i = 0; i < k.length; i++) if (shape[k[i]] instanceof Z) {
      var f = fillDefaults(shape[k[i]], v[k[i]]);
      if (f !== undefined) out[k[i]] = f;
    }
    return out;
  }
  return v;
}

/* ---- strings ------------------------------------------------------------------------ */
function addPattern(s, n, source) {
  /* One pattern is "pattern"; more go to allOf, each as its own {pattern}, as Zod does. */
  var pats = (n._x.patterns || []).concat([source]);
  n._x = {patterns: pats};
  if (pats.length === 1) { s.pattern = source; return; }
  delete s.pattern;
  s.allOf = pats.map(function (p) { return {pattern: p}; });
}
function escapeRe(t) { return String(t).replace(/[.*+?^${}()|[\]\\\/]/g, '\\$&'); }
var EMAIL = "^(?!\\.)(?!.*\\.\\.)([A-Za-z0-9_'+\\-\\.]*)[A-Za-z0-9_+-]@([A-Za-z0-9][A-Za-z0-9\\-]*\\.)+[A-Za-z]{2,}$";
var UUID = '^([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[1-8][0-9a-fA-F]{3}-[89abAB][0-9a-fA-F]{3}-[0-9a-fA-F]{12}|00000000-0000-0000-0000-000000000000)$';
var S = {};
S.min = function (n) { count(n, 'min'); return derive(this, function (s) { s.minLength = n; }); };
S.max = function (n) { count(n, 'max'); return derive(this, function (s) { s.maxLength = n; }); };
S.length = function (n) { count(n, 'length'); return derive(this, function (s) { s.minLength = n; s.maxLength = n; }); };
S.nonempty = function () { return S.min.call(this, 1); };
S.regex = function (re) {
  var src = re instanceof RegExp ? re.source : String(re);
  return derive(this, function (s, n) { addPattern(s, n, src); });
};
S.startsWith = function (t) { return derive(this, function (s, n) { addPattern(s, n, '^' + escapeRe(t) + '.*'); }); };
S.endsWith = function (t) { return derive(this, function (s, n) { addPattern(s, n, '.*' + escapeRe(t) + '$'); }); };
S.includes = function (t) { return derive(this, function (s, n) { addPattern(s, n, escapeRe(t)); }); };
function fmt(name, pattern) {
  return function () { return derive(this, function (s) { s.format = name; if (pattern) s.pattern = pattern; }); };
}
S.email = fmt('email', EMAIL);
S.url = fmt('uri');
S.uuid = fmt('uuid', UUID);
S.datetime = fmt('date-time');
S.date = fmt('date');
S.time = fmt('time');
S.ipv4 = fmt('ipv4');
S.ipv6 = fmt('ipv6');
S.trim = S.toLowerCase = S.toUpperCase = S.normalize = function () { return this; };

/* ---- numbers ------------------------------------------------------------------------ */
var N = {};
function lower(key) {
  return function (v) {
    num(v, key);
    return derive(this, function (s) {
      /* the tighter bound wins; an exclusive and an inclusive one at the same value: exclusive */
      var incl = key === 'minimum';
      var cur = s.minimum !== undefined ? s.minimum : -Infinity, curx = s.exclusiveMinimum !== undefined ? s.exclusiveMinimum : -Infinity;
      if (incl ? v > Math.max(cur, curx) || (v === cur) : v >= Math.max(cur, curx)) {
        delete s.minimum; delete s.exclusiveMinimum;
        s[key] = v;
      }
    });
  };
}
function upper(key) {
  return function (v) {
    num(v, key);
    return derive(this, function (s) {
      var incl = key === 'maximum';
      var cur = s.maximum !== undefined ? s.maximum : Infinity, curx = s.exclusiveMaximum !== undefined ? s.exclusiveMaximum : Infinity;
      if (incl ? v < Math.min(cur, curx) || (v === cur) : v <= Math.min(cur, curx)) {
        delete s.maximum; delete s.exclusiveMaximum;
        s[key] = v;
      }
    });
  };
}
N.min = N.gte = lower('minimum');
N.max = N.lte = upper('maximum');
N.gt = lower('exclusiveMinimum');
N.lt = upper('exclusiveMaximum');
N.positive = function () { return N.gt.call(this, 0); };
N.nonnegative = function () { return N.min.call(this, 0); };
N.negative = function () { return N.lt.call(this, 0); };
N.nonpositive = function () { return N.max.call(this, 0); };
N.multipleOf = N.step = function (v) { num(v, 'multipleOf'); return derive(this, function (s) { s.multipleOf = v; }); };
N['int'] = function () {
  var n = derive(this, function (s) { s.type = 'integer'; });
  n = N.min.call(n, -MAX_SAFE);
  return N.max.call(n, MAX_SAFE);
};
N.safe = N['int'];
N.finite = function () { return this; };

/* ---- arrays ------------------------------------------------------------------------- */
var A = {};
A.min = function (n) { count(n, 'min'); return derive(this, function (s) { s.minItems = n; }); };
A.max = function (n) { count(n, 'max'); return derive(this, function (s) { s.maxItems = n; }); };
A.length = function (n) { count(n, 'length'); return derive(this, function (s) { s.minItems = n; s.maxItems = n; }); };
A.nonempty = function () { return A.min.call(this, 1); };

/* ---- objects ------------------------------------------------------------------------ */
var O = {};
function objectOf(shape, extra) {
  if (shape === null || typeof shape !== 'object' || Array.isArray(shape)) throw new TypeError('z.object wants an object of schemas');
  var props = {}, req = [], keys = Object.keys(shape);
  for (var i = 0; i < keys.length; i++) {
    var v = shape[keys[i]];
    props[keys[i]] = schemaOf(v, 'z.object: property ' + keys[i]);
    if (!isOptional(v)) req.push(keys[i]);
  }
  var s = {type: 'object', properties: props};
  if (req.length) s.required = req;
  if (extra && extra.additional !== undefined) s.additionalProperties = copy(extra.additional);
  var x = {shape: shape};
  if (extra && extra.additional !== undefined) x.additional = extra.additional;
  return new Z(s, 'object', false, x);
}
function keep(o, keys, want) {
  var out = {}, k = Object.keys(o);
  for (var i = 0; i < k.length; i++) if ((keys.indexOf(k[i]) >= 0) === want) out[k[i]] = o[k[i]];
  return out;
}
function rebuild(zs, shape, extra) {
  var n = objectOf(shape, extra || (zs._x.additional !== undefined ? {additional: zs._x.additional} : undefined));
  if (zs._schema.description !== undefined) n._schema.description = zs._schema.description;
  n._optional = zs._optional;
  return n;
}
O.extend = function (more) {
  var s = {}, k = Object.keys(this._x.shape), i;
  for (i = 0; i < k.length; i++) s[k[i]] = this._x.shape[k[i]];
  k = Object.keys(more instanceof Z ? more._x.shape : more);
  for (i = 0; i < k.length; i++) s[k[i]] = (more instanceof Z ? more._x.shape : more)[k[i]];
  return rebuild(this, s);
};
O.merge = O.extend;
O.pick = function (mask) { return rebuild(this, keep(this._x.shape, Object.keys(mask), true)); };
O.omit = function (mask) { return rebuild(this, keep(this._x.shape, Object.keys(mask), false)); };
O.partial = function () {
  var s = {}, k = Object.keys(this._x.shape);
  for (var i = 0; i < k.length; i++) s[k[i]] = this._x.shape[k[i]] instanceof Z ? this._x.shape[k[i]].optional() : this._x.shape[k[i]];
  return rebuild(this, s);
};
O.required = function () {
  var s = {}, k = Object.keys(this._x.shape);
  for (var i = 0; i < k.length; i++) s[k[i]] = this._x.shape[k[i]] instanceof Z ? this._x.shape[k[i]].nonoptional() : this._x.shape[k[i]];
  return rebuild(this, s);
};
O.strict = function () { return rebuild(this, this._x.shape, {additional: false}); };
O.passthrough = O.loose = function () { return rebuild(this, this._x.shape, {additional: {}}); };
O.strip = function () { return rebuild(this, this._x.shape, {}); };
O.catchall = function (s) { return rebuild(this, this._x.shape, {additional: schemaOf(s, 'catchall')}); };
O.keyof = function () { return z['enum'](Object.keys(this._x.shape)); };

function kinded(kind, methods) {
  return function (schema, x) {
    var n = new Z(schema, kind, false, x);
    var k = Object.keys(methods);
    for (var i = 0; i < k.length; i++) Object.defineProperty(n, k[i], {value: methods[k[i]], enumerable: false, writable: true, configurable: true});
    return n;
  };
}
/* Methods are attached per kind (an object's min is not a string's); derive() keeps them. */
var mk = {string: kinded('string', S), number: kinded('number', N), array: kinded('array', A), object: kinded('object', O)};
var baseDerive = derive;
derive = function (zs, change, kind) {
  var n = baseDerive(zs, change, kind);
  var k = kind || zs._kind, m = k === 'string' ? S : k === 'number' ? N : k === 'array' ? A : k === 'object' ? O : null;
  if (m) {
    var names = Object.keys(m);
    for (var i = 0; i < names.length; i++) Object.defineProperty(n, names[i], {value: m[names[i]], enumerable: false, writable: true, configurable: true});
  }
  if (k === 'object') Object.defineProperty(n, 'shape', {value: n._x.shape, enumerable: false});
  if (k === 'array' && zs.element) Object.defineProperty(n, 'element', {value: zs.element, enumerable: false});
  return n;
};
var objectOf0 = objectOf;
objectOf = function (shape, extra) { var n = objectOf0(shape, extra); return derive(n); };

function literalType(v) {
  if (v === null) return 'null';
  var t = typeof v;
  if (t === 'string' || t === 'number' || t === 'boolean') return t;
  throw new TypeError('z.literal wants a string, number, boolean or null');
}

var z = {
  string: function () { return mk.string({type: 'string'}); },
  number: function () { return mk.number({type: 'number'}); },
  'int': function () { return N['int'].call(mk.number({type: 'number'})); },
  bigint: function () { throw new TypeError('BigInt cannot be represented in JSON Schema'); },
  boolean: function () { return new Z({type: 'boolean'}, 'boolean'); },
  'null': function () { return new Z({type: 'null'}, 'null'); },
  any: function () { return new Z({}, 'any'); },
  unknown: function () { return new Z({}, 'any'); },
  never: function () { return new Z({not: {}}, 'never'); },
  email: function () { return S.email.call(z.string()); },
  url: function () { return S.url.call(z.string()); },
  uuid: function () { return S.uuid.call(z.string()); },
  array: function (item) {
    var n = mk.array({type: 'array', items: schemaOf(item, 'z.array(item)')});
    Object.defineProperty(n, 'element', {value: item, enumerable: false});
    return n;
  },
  'enum': function (values) {
    if (values !== null && typeof values === 'object' && !Array.isArray(values)) return z.nativeEnum(values);
    if (!Array.isArray(values) || !values.length) throw new TypeError('z.enum wants a non-empty array of strings');
    for (var i = 0; i < values.length; i++)
      if (typeof values[i] !== 'string') throw new TypeError('z.enum wants a non-empty array of strings');
    var n = new Z({type: 'string', 'enum': values.slice()}, 'enum');
    var opts = {};
    for (var j = 0; j < values.length; j++) opts[values[j]] = values[j];
    Object.defineProperty(n, 'options', {value: values.slice(), enumerable: false});
    Object.defineProperty(n, 'enum', {value: opts, enumerable: false});
    return n;
  },
  nativeEnum: function (e) {
    /* a TypeScript enum object: its values (numeric enums map names both ways: the
     * numbers are the values) */
    var k = Object.keys(e), vals = [];
    for (var i = 0; i < k.length; i++) {
      var v = e[k[i]];
      if (typeof e[v] === 'number' && typeof v === 'string' && e[e[v]] === v) continue; /* reverse mapping */
      if (vals.indexOf(v) < 0) vals.push(v);
    }
    var allNum = vals.every(function (v) { return typeof v === 'number'; });
    var allStr = vals.every(function (v) { return typeof v === 'string'; });
    var s = {};
    if (allNum) s.type = 'number';
    else if (allStr) s.type = 'string';
    s['enum'] = vals;
    return new Z(s, 'enum');
  },
  literal: function (v) {
    if (Array.isArray(v)) {
      var types = v.map(literalType), same = types.every(function (t) { return t === types[0]; });
      var s = same && types[0] !== 'null' ? {type: types[0], 'enum': v.slice()} : {'enum': v.slice()};
      return new Z(s, 'literal');
    }
    var t = literalType(v);
    return new Z(t === 'null' ? {type: 'null', 'const': null} : {type: t, 'const': v}, 'literal');
  },
  object: function (shape) { return objectOf(shape); },
  strictObject: function (shape) { return objectOf(shape, {additional: false}); },
  looseObject: function (shape) { return objectOf(shape, {additional: {}}); },
  union: function (options) {
    if (!Array.isArray(options) || !options.length) throw new TypeError('z.union wants an array of schemas');
    return new Z({anyOf: options.map(function (o, i) { return schemaOf(o, 'z.union option ' + i); })}, 'union');
  },
  discriminatedUnion: function (key, options) {
    if (Array.isArray(key)) options = key;
    return new Z({oneOf: options.map(function (o, i) { return schemaOf(o, 'z.discriminatedUnion option ' + i); })}, 'union');
  },
  intersection: function (a, b) { return new Z({allOf: [schemaOf(a, 'z.intersection'), schemaOf(b, 'z.intersection')]}, 'intersection'); },
  optional: function (s) { return s.optional(); },
  nullable: function (s) { return s.nullable(); },
  record: function (k, v) {
    if (v === undefined) { v = k; k = z.string(); }
    return new Z({type: 'object', propertyNames: schemaOf(k, 'z.record key'), additionalProperties: schemaOf(v, 'z.record value')}, 'record');
  },
  tuple: function (items, rest) {
    if (!Array.isArray(items)) throw new TypeError('z.tuple wants an array of schemas');
    var s = {type: 'array', prefixItems: items.map(function (o, i) { return schemaOf(o, 'z.tuple item ' + i); })};
    if (rest !== undefined) s.items = schemaOf(rest, 'z.tuple rest');
    var n = new Z(s, 'tuple');
    Object.defineProperty(n, 'rest', {value: function (r) { var m = derive(this); m._schema.items = schemaOf(r, 'rest'); return m; }, enumerable: false});
    return n;
  },
  lazy: function (f) { return f(); },
  promise: function (s) { return s; },
  coerce: null,
  toJSONSchema: function (s) { return schemaOf(s, 'z.toJSONSchema'); }
};
z.coerce = {string: z.string, number: z.number, boolean: z.boolean, 'int': z['int']};
z.ZodType = Z;
z.ZodError = Error;
function defineTool(spec) {
  if (spec === null || typeof spec !== 'object') throw new TypeError('defineTool wants an object');
  if (typeof spec.execute !== 'function') throw new TypeError('defineTool: execute must be a function');
  var d = {}, keys = Object.keys(spec);
  for (var i = 0; i < keys.length; i++) d[keys[i]] = spec[keys[i]];
  defs.push(d);
  return d;
}
/* definePrompt / defineAgent (runtime/tools/definitions.h has the shapes and the rules):
 * each call is kept in order; describe() hands them to the host as one JSON array, where
 * the one parser of definitions checks them like a JSON file's. */
var pdefs = [];
function defineKind(kind, fname) {
  return function (spec) {
    if (spec === null || typeof spec !== 'object' || Array.isArray(spec)) throw new TypeError(fname + ' wants an object');
    var d = {}, keys = Object.keys(spec);
    for (var i = 0; i < keys.length; i++) d[keys[i]] = spec[keys[i]];
    pdefs.push({kind: kind, def: d});
    return d;
  };
}
var definePrompt = defineKind('prompt', 'definePrompt');
var defineAgent = defineKind('agent', 'defineAgent');
function pdefOf(x) {
  for (var i = 0; i < pdefs.length; i++) if (pdefs[i].def === x) return pdefs[i];
  return null;
}
/* The definitions as JSON: names given, else the export's key, else the module's name for
 * a lone unnamed one; a z schema becomes JSON Schema; a definition object used where a
 * name goes (tools: [search, helper], sideA: {prompt: coder}) becomes its name. */
function describeDefs(base, tools) {
  if (!pdefs.length) return undefined;
  var ex = g.module && g.module.exports, named = namedExports(), unnamed = 0, i;
  for (i = 0; i < pdefs.length; i++) if (pdefs[i].def.name === undefined) unnamed++;
  function nameOf(e) {
    var d = e.def;
    if (d.name !== undefined) return d.name;
    if (ex === d) return base;
    var objs = [ex, named];
    for (var o = 0; o < objs.length; o++) {
      var x = objs[o];
      if (x === null || typeof x !== 'object') continue;
      var k = Object.keys(x);
      for (var j = 0; j < k.length; j++) if (x[k[j]] === d) return k[j];
    }
    if (unnamed === 1) return base;
    throw new Error('this module defines ' + unnamed + ' prompts and agents without a name: give each a name, or export each under its name');
  }
  function plain(v, where) {
    if (v instanceof Z) return copy(v._schema);
    if (typeof v === 'function') throw new TypeError(where + ': a function cannot be part of a definition');
    if (v === null || typeof v !== 'object') return v;
    var pe = pdefOf(v);
    if (pe) return nameOf(pe);
    for (var t = 0; t < tools.length; t++) if (tools[t].def === v) return tools[t].name;
    if (isDef(v)) throw new TypeError(where + ': a tool this module defines but does not register (export it with the others)');
    if (Array.isArray(v)) return v.map(function (x, n) { return plain(x, where + '[' + n + ']'); });
    var out = {}, k = Object.keys(v);
    for (var j = 0; j < k.length; j++) if (v[k[j]] !== undefined) out[k[j]] = plain(v[k[j]], where + '.' + k[j]);
    return out;
  }
  var list = [];
  for (i = 0; i < pdefs.length; i++) {
    var e = pdefs[i], name = nameOf(e), o = {kind: e.kind, name: name}, keys = Object.keys(e.def);
    var w = e.kind + ' ' + JSON.stringify(name);
    for (var j = 0; j < keys.length; j++) {
      var key = keys[j], v = e.def[key];
      if (key === 'kind' || key === 'name' || v === undefined) continue;
      o[key] = key === 'requiredSchema' ? schemaOf(v, w + ': requiredSchema') : plain(v, w + ': ' + key);
    }
    list.push(o);
  }
  return JSON.stringify(list);
}
function isDef(x) { return x !== null && typeof x === 'object' && defs.indexOf(x) >= 0; }
/* The named exports beside a default one: `export default definePrompt(...)` sets
 * module.exports, while `export const search = defineTool(...)` in the same module went to
 * the first exports object; both count. null when there is no default export. */
function namedExports() {
  var ex = g.module && g.module.exports;
  return ex !== g.exports && g.exports !== null && typeof g.exports === 'object' ? g.exports : null;
}
function collect(base) {
  var out = [], seen = {};
  function add(name, d, packed) {
    if (typeof name !== 'string' || !name) throw new TypeError('a tool name must be a non-empty string');
    if (seen.hasOwnProperty(name)) throw new Error('two tools named ' + JSON.stringify(name) + ' in one module');
    seen[name] = true; out.push({name: name, def: d, packed: packed});
  }
  function addFrom(x) { /* the tools exported under keys of x (each its own entry) */
    var keys = Object.keys(x);
    for (var i = 0; i < keys.length; i++) {
      var v = x[keys[i]], dup = false;
      if (!isDef(v)) continue;
      for (var j = 0; j < out.length; j++) dup = dup || out[j].def === v;
      if (!dup) add(v.name !== undefined ? v.name : keys[i], v, true);
    }
  }
  var ex = g.module && g.module.exports, named = namedExports();
  if (isDef(ex)) {
    add(ex.name !== undefined ? ex.name : base, ex, false);
    if (named) addFrom(named);
    return out;
  }
  if (ex !== null && typeof ex === 'object') {
    if (!pdefOf(ex)) addFrom(ex); /* a prompt or agent as the default export holds no tools */
    if (named) addFrom(named);
    if (out.length) return out;
  }
  if (defs.length === 1) { add(defs[0].name !== undefined ? defs[0].name : base, defs[0], false); return out; }
  for (var j = 0; j < defs.length; j++) {
    if (defs[j].name === undefined) throw new Error('this module defines ' + defs.length + ' tools: give each a name, or export them as an object of tools');
    add(defs[j].name, defs[j], false);
  }
  if (!out.length && !pdefs.length) throw new Error('the module defines no tool, prompt or agent (call defineTool, definePrompt or defineAgent)');
  return out;
}
function describe(base) {
  var all = collect(base), res = [];
  res.defs = describeDefs(base, all);
  for (var i = 0; i < all.length; i++) {
    var e = all[i], d = e.def, w = 'tool ' + JSON.stringify(e.name) + ': ';
    var r = {name: e.name, packed: e.packed, hook: !!hookOf(d)};
    r.description = d.description === undefined ? '' : String(d.description);
    if (d.args !== undefined) r.args = JSON.stringify(schemaOf(d.args, w + 'args'));
    if (d.progressArgument !== undefined) {
      if (typeof d.progressArgument !== 'string') throw new TypeError(w + 'progressArgument must be a string');
      r.progress = d.progressArgument;
    }
    if (d.annotations !== undefined) {
      if (d.annotations === null || typeof d.annotations !== 'object' || Array.isArray(d.annotations))
        throw new TypeError(w + 'annotations must be an object');
      r.annotations = JSON.stringify(d.annotations);
    }
    r.variables = [];
    if (d.variables !== undefined) {
      if (!Array.isArray(d.variables)) throw new TypeError(w + 'variables must be an array');
      for (var k = 0; k < d.variables.length; k++) {
        var v = d.variables[k];
        if (v === null || typeof v !== 'object' || typeof v.name !== 'string' || !v.name)
          throw new TypeError(w + 'variables[' + k + '] needs a name');
        if (v.type !== undefined && v.type !== 'text' && v.type !== 'secret')
          throw new TypeError(w + 'variables[' + k + "].type must be 'text' or 'secret'");
        r.variables.push({name: v.name, required: v.required === true, secret: v.type === 'secret',
                          scoped: v.scoped === true,
                          description: v.description === undefined ? '' : String(v.description)});
      }
    }
    if (d.uses !== undefined) {
      if (!Array.isArray(d.uses)) throw new TypeError(w + 'uses must be an array of names');
      for (var u = 0; u < d.uses.length; u++)
        if (typeof d.uses[u] !== 'string' || !d.uses[u]) throw new TypeError(w + 'uses must be an array of names');
      r.uses = d.uses.slice();
    }
    res.push(r);
  }
  return res;
}
function settle(ret) {
  if (ret === null || typeof ret !== 'object')
    return [true, 'the tool returned ' + (ret === undefined ? 'nothing' : typeof ret) +
      ", not {status: 'success', result} or {status: 'error', error}"];
  if (ret.status === 'success') { var j = JSON.stringify(ret.result); return [false, j === undefined ? 'null' : j]; }
  if (ret.status === 'error') {
    var e = ret.error;
    if (typeof e === 'string') return [true, e];
    if (e instanceof Error) return [true, String(e.message)];
    var t = JSON.stringify(e);
    return [true, t === undefined ? 'error' : t];
  }
  return [true, 'the tool returned status ' + JSON.stringify(ret.status) + ", not 'success' or 'error'"];
}
/* state.runCode(code, {language, timeoutMs, memoryLimitBytes, input, onConsole}): a run
 * of its own, started at once; the handle is a promise of {status, value, console,
 * error} (await it, or read handle.status / .value / .console / .error, which wait),
 * with terminate(reason) and `output`, the console entries so far (onConsole gets each
 * as it comes). */
function RunHandle(nat, id, onConsole) {
  var self = this, ok;
  function hide(k, v) { Object.defineProperty(self, k, {value: v, writable: true, enumerable: false}); }
  hide('_nat', nat);
  hide('_id', id);
  hide('_on', onConsole);
  hide('_res', null);
  hide('output', []);
  hide('_p', new Promise(function (resolve) { ok = resolve; }));
  hide('_ok', ok);
  ['status', 'value', 'console', 'error'].forEach(function (k) {
    Object.defineProperty(self, k, {enumerable: true, get: function () { return self.wait()[k]; }});
  });
  rt.addPending(this);
}
RunHandle.prototype._take = function (waitMs) {
  if (this._res) return true;
  var r = this._nat.poll(this._id, waitMs);
  for (var i = 0; i < r.console.length; i++) {
    this.output.push(r.console[i]);
    if (this._on) this._on(r.console[i]);
  }
  if (r.done) {
    this._res = r.result;
    this._ok(r.result);
    return true;
  }
  return false;
};
/* The result, waiting for it (the tool's own clock pauses meanwhile). */
RunHandle.prototype.wait = function () {
  while (!this._res) this._take(50);
  return this._res;
};
RunHandle.prototype.then = function (a, b) { return this._p.then(a, b); };
RunHandle.prototype['catch'] = function (b) { return this._p['catch'](b); };
RunHandle.prototype['finally'] = function (f) { return this._p['finally'](f); };
RunHandle.prototype.terminate = function (reason) {
  if (!this._res) this._nat.stop(this._id, reason === undefined ? 'terminated by the caller' : String(reason));
};
RunHandle.prototype.toJSON = function () { return this.wait(); };

function run(base, name, state, args, nat) {
  state.runCode = function (code, opts) {
    if (typeof code !== 'string') throw new TypeError('state.runCode wants the code as a string');
    var o = opts === undefined || opts === null ? {} : opts;
    if (typeof o !== 'object') throw new TypeError('state.runCode: options must be an object');
    return new RunHandle(nat, nat.start(code, o), typeof o.onConsole === 'function' ? o.onConsole : null);
  };
  var all = collect(base);
  for (var i = 0; i < all.length; i++)
    if (all[i].name === name) return settle(rt.finish(all[i].def.execute.call(all[i].def, state, JSON.parse(args))));
  throw new Error('the module no longer defines tool ' + JSON.stringify(name));
}
g.z = z;
g.defineTool = defineTool;
g.definePrompt = definePrompt;
g.defineAgent = defineAgent;
g.exports = {};
g.module = {exports: g.exports};
/* The tool_call_started hook of a definition (spec §7): its own onToolCallStarted, or
 * the module's (exported, or a top-level function). */
function hookOf(d) {
  if (typeof d.onToolCallStarted === 'function') return d.onToolCallStarted;
  var ex = g.module && g.module.exports;
  if (ex && typeof ex.onToolCallStarted === 'function') return ex.onToolCallStarted;
  if (g.exports && typeof g.exports.onToolCallStarted === 'function') return g.exports.onToolCallStarted;
  if (typeof g.onToolCallStarted === 'function') return g.onToolCallStarted;
  return null;
}
function hook(base, name, event) {
  var all = collect(base);
  for (var i = 0; i < all.length; i++) {
    if (all[i].name !== name) continue;
    var f = hookOf(all[i].def);
    if (f) rt.finish(f.call(all[i].def, JSON.parse(event)));
    return;
  }
  throw new Error('the module no longer defines tool ' + JSON.stringify(name));
}
return {describe: describe, run: run, hook: hook};
})