// replay.js LOG: the JavaScript twin of the Go CDK app. It reads the jsii
// protocol log of one run of the Go app (JSII_DEBUG=1: every request the Go
// code sent to the jsii kernel, every response and every callback into Go)
// and makes the same calls in process, directly on aws-cdk-lib, constructs
// and cdk-nag: the same constructs, built by the same library code, without
// the Go side and the jsii round trips. Callbacks into Go (Go structs that
// override a property or method) are answered with what Go answered, and
// the requests Go made while answering are replayed at the same point.
// Run it with the Go app's environment (CDK_OUTDIR, CDK_CONTEXT_JSON,
// CDK_PERF_COUNTERS_FILE): the App it replays writes the same cloud
// assembly and performance counters. The log is parsed before aws-cdk-lib
// is loaded, so none of the parsing is counted in the CDK's phases.
// SYNTH_TWIN_MODULES names the node_modules folder holding the libraries
// (scripts/synth-twin.sh extracts them from the Go module cache: the very
// tarballs the Go bindings embed).
'use strict';
const fs = require('fs');
const path = require('path');
const { createRequire } = require('module');

// Parse: every "> " (to the kernel) and "< " (from it) JSON line, in order.
const lines = [];
for (const l of fs.readFileSync(process.argv[2], 'utf8').split('\n')) {
  if (l.startsWith('> {') || l.startsWith('< {')) lines.push({ dir: l[0], msg: JSON.parse(l.slice(2)) });
}
let pos = 0;

const req = createRequire(path.join(path.resolve(process.env.SYNTH_TWIN_MODULES || 'node_modules'), 'x.js'));
const modules = {};
function typeOf(fqn) {
  const [assembly, ...rest] = fqn.split('.');
  const mod = modules[assembly] || (modules[assembly] = req(assembly));
  let t = mod;
  for (const p of rest) {
    t = t[p];
    if (t === undefined) throw new Error(`no type ${fqn}`);
  }
  return t;
}

const refs = new Map(); // jsii object ref -> JS value
// Tokens: the Go run's token strings and numbers, as the twin's library
// made them (the same tokens, possibly numbered differently: the kernel
// reads properties of what it returns, which can make tokens).
const tokens = new Map(); // "Token[TOKEN.49]" in the log -> the twin's
const numbers = new Map(); // encoded number token in the log -> the twin's
const TOKEN = /Token\[[^\]]+\]/g;

// value turns a recorded jsii value (argument, callback result) into JS.
function value(v) {
  if (v === null || v === undefined) return undefined;
  if (Array.isArray(v)) return v.map(value);
  if (typeof v === 'string') return v.includes('Token[') ? v.replace(TOKEN, (t) => tokens.get(t) || t) : v;
  if (typeof v === 'number') return numbers.has(v) ? numbers.get(v) : v;
  if (typeof v !== 'object') return v;
  if ('$jsii.byref' in v) {
    if (!refs.has(v['$jsii.byref'])) throw new Error(`unknown ref ${v['$jsii.byref']}`);
    return refs.get(v['$jsii.byref']);
  }
  if ('$jsii.enum' in v) {
    const [type, member] = v['$jsii.enum'].split('/');
    return typeOf(type)[member];
  }
  if ('$jsii.date' in v) return new Date(v['$jsii.date']);
  if ('$jsii.map' in v) return object(v['$jsii.map']);
  if ('$jsii.struct' in v) return object(v['$jsii.struct'].data);
  return object(v);
}
function object(o) {
  const out = {};
  for (const [k, x] of Object.entries(o)) {
    const y = value(x);
    if (y !== undefined) out[k] = y;
  }
  return out;
}

// learn records the refs of a recorded result (response, callback
// arguments) as the JS values they stand for.
function learn(rec, actual) {
  if (typeof rec === 'string' && typeof actual === 'string' && rec !== actual) {
    const a = actual.match(TOKEN) || [];
    (rec.match(TOKEN) || []).forEach((t, i) => a[i] && tokens.set(t, a[i]));
    return;
  }
  if (typeof rec === 'number' && typeof actual === 'number' && rec !== actual) {
    numbers.set(rec, actual);
    return;
  }
  if (rec === null || typeof rec !== 'object' || actual === null || actual === undefined) return;
  if (Array.isArray(rec)) {
    rec.forEach((r, i) => learn(r, actual[i]));
  } else if ('$jsii.byref' in rec) {
    if (!refs.has(rec['$jsii.byref'])) refs.set(rec['$jsii.byref'], actual);
  } else if ('$jsii.map' in rec) {
    for (const k of Object.keys(rec['$jsii.map'])) learn(rec['$jsii.map'][k], actual[k]);
  } else if (!('$jsii.enum' in rec) && !('$jsii.date' in rec) && !('$jsii.struct' in rec)) {
    for (const k of Object.keys(rec)) learn(rec[k], actual[k]);
  }
}

function next(dir) {
  const l = lines[pos++];
  if (!l || l.dir !== dir) throw new Error(`log line ${pos}: expected "${dir}", got ${JSON.stringify(l)}`);
  return l.msg;
}

// callback answers a call into Go: the next line is the kernel's callback;
// the requests Go made meanwhile are replayed, then its answer is returned.
function callback(args) {
  const cb = next('<').callback;
  if (!cb) throw new Error(`log line ${pos}: expected a callback`);
  if (cb.invoke) learn(cb.invoke.args || [], args);
  if (cb.set) learn([cb.set.value], args);
  for (;;) {
    const m = lines[pos].msg;
    if (lines[pos].dir === '>' && m.complete) {
      pos++;
      if (m.complete.cbid !== cb.cbid) throw new Error(`log line ${pos}: completes ${m.complete.cbid}, not ${cb.cbid}`);
      if (m.complete.err) throw new Error(m.complete.err);
      return value(m.complete.result);
    }
    request();
  }
}

function override(obj, o) {
  if (o.method) {
    Object.defineProperty(obj, o.method, { configurable: true, writable: true, value: (...args) => callback(args) });
  } else {
    Object.defineProperty(obj, o.property, { configurable: true, get: () => callback([]), set: (v) => callback([v]) });
  }
}

// request replays one request to the kernel and its response.
function request() {
  const r = next('>');
  // The kernel exits on this request (lib/program.js: host.once('exit',
  // process.exit)); so does the twin, not when its event loop drains.
  if ('exit' in r) process.exit(r.exit);
  let result;
  let threw;
  try {
    switch (r.api) {
      case 'load':
      case 'del':
      case 'naming':
      case 'stats':
        break;
      case 'create': {
        const args = (r.args || []).map(value);
        if (r.fqn === 'Object') result = {};
        else result = new (typeOf(r.fqn))(...args);
        for (const o of r.overrides || []) override(result, o);
        break;
      }
      case 'get':
        result = value(r.objref)[r.property];
        break;
      case 'set':
        value(r.objref)[r.property] = value(r.value);
        break;
      case 'sget':
        result = typeOf(r.fqn)[r.property];
        break;
      case 'sset':
        typeOf(r.fqn)[r.property] = value(r.value);
        break;
      case 'invoke': {
        const o = value(r.objref);
        result = o[r.method](...(r.args || []).map(value));
        break;
      }
      case 'sinvoke':
        result = typeOf(r.fqn)[r.method](...(r.args || []).map(value));
        break;
      default:
        throw new Error(`request ${JSON.stringify(r)} is not replayed`);
    }
  } catch (e) {
    threw = e;
  }
  const resp = next('<');
  if (resp.error !== undefined) {
    if (!threw) throw new Error(`log line ${pos}: Go saw an error (${resp.error}), the twin none`);
    return;
  }
  if (threw) throw threw;
  if (r.api === 'create') learn(resp.ok, result);
  else if (resp.ok && 'result' in resp.ok) learn(resp.ok.result, result);
  else if (resp.ok && 'value' in resp.ok) learn(resp.ok.value, result);
}

while (pos < lines.length) request();
