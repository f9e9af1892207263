package jsiienv

// The validation worker. Most of a synth of this module's app is CDK's
// template validation (aws-cdk-lib's CloudFormationValidatePlugin: about
// 4.5 s of 7 s on a 2-core machine), and more than half of that is the
// plugin's rule engine starting (@aws/cloudformation-validate's
// WebAssembly RegoEngine, about 2.5 s), which aws-cdk-lib does lazily, on
// the kernel's only thread, after the app's constructs are built. In
// direct mode the kernel also loads ValidationPreload, which starts that
// engine in a worker thread as soon as the kernel loads aws-cdk-lib, so it
// starts while the app builds its constructs (on the other core), and
// answers the plugin's engine calls from the worker: the plugin gets a
// stand-in RegoEngine whose calls block on the worker's answers
// (Atomics.wait; the worker's results come back by structured clone).
// Nothing else changes: the same engine module and version, built with
// the configuration the plugin would build it with (its default rule
// files, read the same way), runs the same validation on the same template
// bytes; the plugin, its report and its failures are aws-cdk-lib's own.
// A plugin configured otherwise (its own rules, guard rules, schemas) gets
// the module's own engine on the kernel's thread, as without the worker,
// and so does every engine when the worker could not start its own; a
// method the stand-in lacks (one a later engine adds) is served by such an
// engine, built on first use.
//
// The worker only starts in a process that is a CDK app run for synthesis
// (CDK_OUTDIR set, as the CDK CLI and scripts/synth-twin.sh set it) with
// validation on (CDK_VALIDATION not "false"): a test binary that builds
// apps in-process does not pay for an engine it may never use.
// EnvValidationWorker=0 turns it off. A call the worker does not answer in
// TRIGGERS_JSII_VALIDATION_TIMEOUT_MS (default 10 minutes) fails, and so
// does every call after it.

// EnvValidationWorker, set to 0, keeps CDK's validation engine on the
// kernel's thread (no validation worker).
const EnvValidationWorker = "TRIGGERS_JSII_VALIDATION_WORKER"

// ValidationPreload is the module the kernel's Node loads after
// DirectPreload in direct mode: the validation worker (see above). It
// patches nothing until the kernel loads aws-cdk-lib, and then only the
// module @aws/cloudformation-validate as aws-cdk-lib requires it.
const ValidationPreload = `'use strict';
// Written by github.com/triggers-dev/triggers/internal/synth/jsiienv: starts
// aws-cdk-lib's template validation engine (@aws/cloudformation-validate's
// RegoEngine, with the CloudFormationValidatePlugin's default rules) in a
// worker thread as soon as aws-cdk-lib loads, and answers the plugin's
// engine calls from there. Off unless CDK_OUTDIR is set and CDK_VALIDATION
// is not "false"; TRIGGERS_JSII_VALIDATION_WORKER=0 turns it off.
(function () {
  const wt = require('worker_threads');
  const env = process.env;
  if (!wt.isMainThread || !env.CDK_OUTDIR || env.CDK_VALIDATION === 'false' ||
      env.TRIGGERS_JSII_VALIDATION_WORKER === '0') {
    return;
  }
  const Module = require('module');
  const fs = require('fs');
  const path = require('path');
  const ENGINE = '@aws/cloudformation-validate';
  const marker = path.sep + 'node_modules' + path.sep + 'aws-cdk-lib' + path.sep;
  // How long a call may wait for the worker (its engine starting, then a
  // validation) before it fails: TRIGGERS_JSII_VALIDATION_TIMEOUT_MS, else
  // 10 minutes.
  const TIMEOUT_MS = Number(env.TRIGGERS_JSII_VALIDATION_TIMEOUT_MS) > 0
    ? Number(env.TRIGGERS_JSII_VALIDATION_TIMEOUT_MS) : 10 * 60 * 1000;

  // workerMain runs in the worker thread: it builds the engine as the
  // plugin builds its default one (aws-cdk-lib's core/lib/validation/rules/
  // *.rego, sorted, as customRules), then answers one call per message.
  function workerMain() {
    const { workerData } = require('worker_threads');
    const fs = require('fs');
    const path = require('path');
    const flag = new Int32Array(workerData.sab);
    let mod, engine, config, initError;
    try {
      mod = require(require.resolve('@aws/cloudformation-validate', { paths: [workerData.root] }));
      const dir = path.join(workerData.root, 'core', 'lib', 'validation', 'rules');
      const rules = fs.readdirSync(dir).filter((f) => f.endsWith('.rego')).sort()
        .map((f) => ({ name: f, content: fs.readFileSync(path.join(dir, f), 'utf-8') }));
      config = {};
      if (rules.length > 0) config.customRules = rules;
      engine = new mod.RegoEngine(config);
    } catch (e) {
      initError = e;
    }
    function reply(m) {
      try {
        workerData.port.postMessage(m);
      } catch (e) {
        workerData.port.postMessage({ error: new Error(String(m.error || e)) });
      }
      Atomics.store(flag, 0, 1);
      Atomics.notify(flag, 0);
    }
    workerData.port.on('message', (m) => {
      try {
        if (initError) throw initError;
        switch (m.op) {
          case 'config': return reply({ result: JSON.stringify(config) });
          case 'version': return reply({ result: mod.version() });
          case 'validateDetailed':
          case 'validateStandard': {
            const [bytes, options, file] = m.args;
            const template = { path: file, readBytes: () => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength) };
            return reply({ result: engine[m.op](template, options) });
          }
          default: return reply({ result: engine[m.op]() });
        }
      } catch (e) {
        reply({ error: e });
      }
    });
  }

  let remote; // the worker's call function, once started
  function start(root) {
    const sab = new SharedArrayBuffer(4);
    const flag = new Int32Array(sab);
    const { port1, port2 } = new wt.MessageChannel();
    let worker;
    try {
      worker = new wt.Worker('(' + workerMain.toString() + ')()', {
        eval: true, workerData: { root, sab, port: port2 }, transferList: [port2],
      });
    } catch (e) {
      return;
    }
    worker.unref();
    port1.unref();
    let stalled = false;
    remote = function (op, args) {
      // A worker that missed a deadline may still answer that call later,
      // where the next call would read its answer: no call after it.
      if (stalled) {
        throw new Error('the CDK validation worker stopped answering; set TRIGGERS_JSII_VALIDATION_WORKER=0 to validate without it');
      }
      Atomics.store(flag, 0, 0);
      port1.postMessage({ op, args });
      if (Atomics.wait(flag, 0, 0, TIMEOUT_MS) === 'timed-out') {
        stalled = true;
        throw new Error('the CDK validation worker did not answer ' + op + ' in ' + TIMEOUT_MS + ' ms' +
          ' (TRIGGERS_JSII_VALIDATION_TIMEOUT_MS); set TRIGGERS_JSII_VALIDATION_WORKER=0 to validate without it');
      }
      const m = wt.receiveMessageOnPort(port1).message;
      if ('error' in m) throw m.error;
      return m.result;
    };
  }

  // facade stands in for @aws/cloudformation-validate where aws-cdk-lib
  // requires it: its RegoEngine calls the worker when built with the
  // worker's configuration, else builds a local one; TemplateFile is the
  // module's own (a path and readBytes); the rest is the module itself,
  // loaded on first use.
  function facade(load) {
    let real;
    const engineModule = () => (real === undefined ? (real = load()) : real);
    let workerConfig; // the worker's engine configuration, JSON; null: none
    function usesWorker(config) {
      if (workerConfig === undefined) {
        try {
          workerConfig = remote('config', []);
        } catch (e) {
          workerConfig = null;
        }
      }
      return workerConfig !== null && workerConfig === JSON.stringify(config === undefined ? {} : config);
    }
    class RegoEngine {
      constructor(config) {
        // Not the worker's configuration: the module's own engine, here.
        if (!usesWorker(config)) return new (engineModule().RegoEngine)(config);
        this.local = undefined;
        // A method this stand-in lacks (a later engine's) is the method of
        // a local engine, built on first use.
        return new Proxy(this, {
          get(target, key, receiver) {
            if (key in target || typeof key !== 'string') return Reflect.get(target, key, receiver);
            const Real = engineModule().RegoEngine;
            if (typeof Real.prototype[key] !== 'function') return undefined;
            if (!target.local) target.local = new Real(config);
            return target.local[key].bind(target.local);
          },
        });
      }
      validateDetailed(template, config) {
        return remote('validateDetailed', [template.readBytes(), config === undefined ? {} : config, template.path]);
      }
      validateStandard(template, config) {
        return remote('validateStandard', [template.readBytes(), config === undefined ? {} : config, template.path]);
      }
      listRules() { return remote('listRules', []); }
      engineName() { return remote('engineName', []); }
      free() { if (this.local) this.local.free(); }
    }
    class TemplateFile {
      constructor(p) { this.path = p; }
      readBytes() { return fs.readFileSync(this.path); }
    }
    function version() {
      if (workerConfig !== null) {
        try {
          return remote('version', []);
        } catch (e) {
          // the module's own answer below
        }
      }
      return engineModule().version();
    }
    return new Proxy({}, {
      get(_, key) {
        switch (key) {
          case 'RegoEngine': return RegoEngine;
          case 'TemplateFile': return TemplateFile;
          case 'version': return version;
          default: return engineModule()[key];
        }
      },
    });
  }

  const load = Module._load;
  let root;
  Module._load = function (request, parent, isMain) {
    const from = parent && typeof parent.filename === 'string' ? parent.filename : '';
    if (root === undefined) {
      const i = from.lastIndexOf(marker);
      if (i >= 0) {
        root = from.slice(0, i + marker.length);
        start(root);
      }
    }
    if (remote && request === ENGINE && from.startsWith(root)) {
      return facade(() => load.call(this, request, parent, isMain));
    }
    return load.apply(this, arguments);
  };
})();
`
