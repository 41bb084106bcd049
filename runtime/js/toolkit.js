(function (g, rt) {
'use strict';
var defs = [];
function copy(o) { return JSON.parse(JSON.stringify(o)); }
function Z(schema, optional) { this._schema = schema; this._optional = !!optional; }
Z.prototype.optional = function () { return new Z(copy(this._schema), true); };
Z.prototype.describe = function (text) {
  var s = copy(this._schema); s.description = String(text);
  return new Z(s, this._optional);
};
function schemaOf(x, where) {
  if (x instanceof Z) return copy(x._schema);
  if (x !== null && typeof x === 'object' && !Array.isArray(x)) return copy(x);
  throw new TypeError(where + ' must be a z schema or a JSON Schema object');
}
var z = {
  string: function () { return new Z({type: 'string'}); },
  number: function () { return new Z({type: 'number'}); },
  boolean: function () { return new Z({type: 'boolean'}); },
  array: function (item) { return new Z({type: 'array', items: schemaOf(item, 'z.array(item)')}); },
  'enum': function (values) {
    if (!Array.isArray(values) || !values.length) throw new TypeError('z.enum wants a non-empty array of strings');
    for (var i = 0; i < values.length; i++)
      if (typeof values[i] !== 'string') throw new TypeError('z.enum wants a non-empty array of strings');
    return new Z({type: 'string', 'enum': values.slice()});
  },
  object: function (shape) {
    if (shape === null || typeof shape !== 'object') throw new TypeError('z.object wants an object of schemas');
    var props = {}, req = [], keys = Object.keys(shape);
    for (var i = 0; i < keys.length; i++) {
      var v = shape[keys[i]];
      props[keys[i]] = schemaOf(v, 'z.object: property ' + keys[i]);
      if (!(v instanceof Z && v._optional)) req.push(keys[i]);
    }
    var s = {type: 'object', properties: props};
    if (req.length) s.required = req;
    return new Z(s);
  }
};
function defineTool(spec) {
  if (spec === null || typeof spec !== 'object') throw new TypeError('defineTool wants an object');
  if (typeof spec.execute !== 'function') throw new TypeError('defineTool: execute must be a function');
  var d = {}, keys = Object.keys(spec);
  for (var i = 0; i < keys.length; i++) d[keys[i]] = spec[keys[i]];
  defs.push(d);
  return d;
}
function isDef(x) { return x !== null && typeof x === 'object' && defs.indexOf(x) >= 0; }
function collect(base) {
  var out = [], seen = {};
  function add(name, d, packed) {
    if (typeof name !== 'string' || !name) throw new TypeError('a tool name must be a non-empty string');
    if (seen.hasOwnProperty(name)) throw new Error('two tools named ' + JSON.stringify(name) + ' in one module');
    seen[name] = true; out.push({name: name, def: d, packed: packed});
  }
  var ex = g.module && g.module.exports;
  if (isDef(ex)) { add(ex.name !== undefined ? ex.name : base, ex, false); return out; }
  if (ex !== null && typeof ex === 'object') {
    var keys = Object.keys(ex);
    for (var i = 0; i < keys.length; i++)
      if (isDef(ex[keys[i]])) add(ex[keys[i]].name !== undefined ? ex[keys[i]].name : keys[i], ex[keys[i]], true);
    if (out.length) return out;
  }
  if (defs.length === 1) { add(defs[0].name !== undefined ? defs[0].name : base, defs[0], false); return out; }
  for (var j = 0; j < defs.length; j++) {
    if (defs[j].name === undefined) throw new Error('this module defines ' + defs.length + ' tools: give each a name, or export them as an object of tools');
    add(defs[j].name, defs[j], false);
  }
  if (!out.length) throw new Error('the module defines no tool (call defineTool)');
  return out;
}
function describe(base) {
  var all = collect(base), res = [];
  for (var i = 0; i < all.length; i++) {
    var e = all[i], d = e.def, w = 'tool ' + JSON.stringify(e.name) + ': ';
    var r = {name: e.name, packed: e.packed};
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
        r.variables.push({name: v.name, required: v.required === true, secret: v.type === 'secret',
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
function run(base, name, state, args) {
  var all = collect(base);
  for (var i = 0; i < all.length; i++)
    if (all[i].name === name) return settle(rt.finish(all[i].def.execute.call(all[i].def, state, JSON.parse(args))));
  throw new Error('the module no longer defines tool ' + JSON.stringify(name));
}
g.z = z;
g.defineTool = defineTool;
g.exports = {};
g.module = {exports: g.exports};
return {describe: describe, run: run};
})