package jsiienv

// The jsii runtime that aws-cdk-go starts (jsii-runtime-go's embedded
// @jsii/runtime) is two Node processes: bin/jsii-runtime.js, a relay that
// spawns lib/program.js (the kernel) and copies every request and answer
// between its own stdin/stdout and the kernel's fd 3, wrapping the
// kernel's stdout and stderr into JSON lines on its own stderr. Every jsii
// request, about 2,000 per synth of this app, crosses that relay twice.
//
// Direct mode starts the kernel without the relay: jsii-runtime-go runs
// JSII_NODE with the relay's path, and JSII_NODE is DirectScript, which
// runs lib/program.js itself with DirectPreload, which points the
// kernel's fd 3 reads at stdin and its fd 3 writes at stdout (fd 4, a
// copy), and wraps what the kernel's JavaScript writes to stdout and
// stderr into the relay's JSON lines (and ValidationPreload: validation.go). jsii-runtime-go sees the same protocol on the same
// pipes. The script falls back to the relay whenever the runtime's layout
// is not the one it knows (no lib/program.js beside bin/jsii-runtime.js,
// or a kernel that does not talk on fd 3).
//
// The script also sizes V8's pool of background threads to the machine
// (--v8-pool-size=0: the available cores less one) instead of Node's
// default of 4, unless NODE_OPTIONS sets it: on 2 cores, four threads
// compiling the template validation engine's WebAssembly in the background
// took the cores from the threads running it, and a synth of this app took
// 7.0 s and 11 CPU-seconds instead of 5.9 s and 8.3 (docs/performance.md).
//
// Direct mode is skipped when JSII_NODE or JSII_RUNTIME is set (the user
// chose a runtime), when EnvRelay is "1", when its files cannot be
// written to a directory only this user can write or run from there (a
// noexec mount), and on systems other than Unix (the script is a shell
// script).

// EnvRelay, set to 1, keeps jsii-runtime-go's relay process (no direct
// mode).
const EnvRelay = "TRIGGERS_JSII_RELAY"

// DirectScript is the shell script JSII_NODE names in direct mode; its
// placeholders @PRELOAD@ and @VALIDATION@ are replaced by the paths of
// DirectPreload and ValidationPreload.
const DirectScript = `#!/bin/sh
# Written by github.com/triggers-dev/triggers/internal/synth/jsiienv:
# starts the jsii kernel (lib/program.js) without the relay process
# (bin/jsii-runtime.js) when the runtime's layout is the known one.
prog="${1%/bin/jsii-runtime.js}/lib/program.js"
if [ "$#" -eq 1 ] && [ "$prog" != "$1/lib/program.js" ] && [ -f "$prog" ] &&
	grep -q 'readFD:3,writeFD:3' "$prog"; then
	# V8's background threads sized to the machine (cores - 1), not 4,
	# unless NODE_OPTIONS sizes them.
	pool=--v8-pool-size=0
	case " ${NODE_OPTIONS-} " in *" --v8-pool-size"*) pool= ;; esac
	exec node $pool --preserve-symlinks --require '@PRELOAD@' --require '@VALIDATION@' "$prog" 3</dev/null 4>&1 1>&2
fi
exec node "$@"
`

// DirectPreload is the module the kernel's Node loads first in direct
// mode (see the package's direct mode).
const DirectPreload = `'use strict';
// Written by github.com/triggers-dev/triggers/internal/synth/jsiienv.
// The jsii kernel reads requests from fd 3 and writes answers to fd 3 (a
// socket the relay process holds); without the relay, requests come on
// stdin (fd 0) and answers go to the parent's stdout, which the script
// copied to fd 4 before pointing fd 1 at stderr. The script holds fd 3
// open on /dev/null, so no file the kernel's JavaScript opens gets fd 3
// (whose reads and writes are redirected here) or fd 4. What JavaScript writes to
// process.stdout and process.stderr is wrapped as the relay wraps it: one
// JSON line on stderr, {"stdout": base64} or {"stderr": base64}.
const fs = require('fs');
const readSync = fs.readSync;
const writeSync = fs.writeSync;
fs.readSync = function (fd, ...rest) { return readSync.call(this, fd === 3 ? 0 : fd, ...rest); };
fs.writeSync = function (fd, ...rest) { return writeSync.call(this, fd === 3 ? 4 : fd, ...rest); };
function wrap(stream, key) {
  stream.write = function (chunk, encoding, callback) {
    const buf = Buffer.isBuffer(chunk) || chunk instanceof Uint8Array
      ? Buffer.from(chunk)
      : Buffer.from(String(chunk), typeof encoding === 'string' ? encoding : 'utf8');
    const line = Buffer.from(JSON.stringify({ [key]: buf.toString('base64') }) + '\n');
    for (let off = 0; off < line.length;) {
      try { off += writeSync(2, line, off); } catch (e) { if (e.code !== 'EAGAIN') throw e; }
    }
    const cb = typeof encoding === 'function' ? encoding : callback;
    if (typeof cb === 'function') process.nextTick(cb);
    return true;
  };
}
wrap(process.stdout, 'stdout');
wrap(process.stderr, 'stderr');
`

// DirectNode is the JSII_NODE value that init set for direct mode, or ""
// when direct mode is off.
var DirectNode string
