package jsiienv

import "syscall"

// The jsii runtime that aws-cdk-go starts (jsii-runtime-go's embedded
// @jsii/runtime) is two Node processes: bin/jsii-runtime.js, a relay that
// spawns lib/program.js (the kernel) and copies every request and answer
// between its own stdin/stdout and the kernel's fd 3, wrapping the
// kernel's stdout and stderr into JSON lines on its own stderr. Every jsii
// request, about 2,000 per synth of this app, crosses that relay twice.
//
// Direct mode starts the kernel without the relay: jsii-runtime-go runs
// JSII_NODE with the relay's path, and JSII_NODE is DirectScript, which
// runs lib/program.js itself with DirectPreload, which points the kernel's
// fd 3 reads at stdin and its fd 3 writes at stdout (fd 4, a copy), and
// wraps what the kernel's JavaScript writes to stdout and stderr into the
// relay's JSON lines. jsii-runtime-go sees the same protocol on the same
// pipes. The script falls back to the relay whenever the runtime's layout
// is not the one it knows (no lib/program.js beside bin/jsii-runtime.js,
// or a kernel that does not talk on fd 3).
//
// Direct mode is skipped when JSII_NODE or JSII_RUNTIME is set (the user
// chose a runtime), when EnvRelay is "1", or when its files cannot be
// written to a directory only this user can write.

// EnvRelay, set to 1, keeps jsii-runtime-go's relay process (no direct
// mode).
const EnvRelay = "TRIGGERS_JSII_RELAY"

// DirectScript is the shell script JSII_NODE names in direct mode; its
// placeholder @PRELOAD@ is replaced by DirectPreload's path.
const DirectScript = `#!/bin/sh
# Written by github.com/triggers-dev/triggers/internal/synth/jsiienv:
# starts the jsii kernel (lib/program.js) without the relay process
# (bin/jsii-runtime.js) when the runtime's layout is the known one.
prog="${1%/bin/jsii-runtime.js}/lib/program.js"
if [ "$#" -eq 1 ] && [ "$prog" != "$1/lib/program.js" ] && [ -f "$prog" ] &&
	grep -q 'readFD:3,writeFD:3' "$prog"; then
	exec node --preserve-symlinks --require '@PRELOAD@' "$prog" 3</dev/null 4>&1 1>&2
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

func setUpDirect() {
	if v, _ := syscall.Getenv(EnvRelay); v == "1" {
		return
	}
	for _, k := range []string{"JSII_NODE", "JSII_RUNTIME"} {
		if v, _ := syscall.Getenv(k); v != "" {
			return
		}
	}
	dir := directDir()
	if dir == "" {
		return
	}
	preload := dir + "/preload-" + hash(DirectPreload) + ".js"
	script := replace(DirectScript, "@PRELOAD@", preload)
	node := dir + "/node-" + hash(script)
	if !writeOnce(preload, DirectPreload, 0o644) || !writeOnce(node, script, 0o755) {
		return
	}
	if syscall.Setenv("JSII_NODE", node) == nil {
		DirectNode = node
	}
}

// directDir returns a directory for the direct mode's files that only this
// user can write (created 0700 when missing), or "" when there is none.
func directDir() string {
	base, _ := syscall.Getenv("XDG_CACHE_HOME")
	if base == "" {
		if home, _ := syscall.Getenv("HOME"); home != "" {
			base = home + "/.cache"
		}
	}
	if base == "" {
		if base, _ = syscall.Getenv("TMPDIR"); base == "" {
			base = "/tmp"
		}
	}
	dir := base + "/triggers-jsii"
	for i := 0; i < len(dir); i++ {
		if dir[i] == '\'' || dir[i] < ' ' {
			return "" // the script quotes the preload's path in '...'
		}
	}
	_ = syscall.Mkdir(base, 0o700)
	_ = syscall.Mkdir(dir, 0o700)
	var st syscall.Stat_t
	if syscall.Lstat(dir, &st) != nil || st.Mode&syscall.S_IFMT != syscall.S_IFDIR ||
		int(st.Uid) != syscall.Geteuid() || st.Mode&0o022 != 0 {
		return ""
	}
	return dir
}

// writeOnce writes content to path unless a regular file of that size is
// already there (the name carries the content's hash): into a temporary
// file first, renamed into place, so that concurrent processes never see a
// partial file.
func writeOnce(path, content string, mode uint32) bool {
	var st syscall.Stat_t
	if syscall.Lstat(path, &st) == nil && st.Mode&syscall.S_IFMT == syscall.S_IFREG && st.Size == int64(len(content)) {
		return true
	}
	tmp := path + ".tmp" + itoa(syscall.Getpid())
	fd, err := syscall.Open(tmp, syscall.O_WRONLY|syscall.O_CREAT|syscall.O_TRUNC|syscall.O_CLOEXEC, mode)
	if err != nil {
		return false
	}
	b := []byte(content)
	for len(b) > 0 {
		n, err := syscall.Write(fd, b)
		if err != nil || n <= 0 {
			syscall.Close(fd)
			syscall.Unlink(tmp)
			return false
		}
		b = b[n:]
	}
	if syscall.Fchmod(fd, mode) != nil || syscall.Close(fd) != nil {
		syscall.Unlink(tmp)
		return false
	}
	if syscall.Rename(tmp, path) != nil {
		syscall.Unlink(tmp)
		return false
	}
	return true
}

// hash is FNV-1a of s in hex: a file name that changes with the content.
func hash(s string) string {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	const digits = "0123456789abcdef"
	out := make([]byte, 16)
	for i := 15; i >= 0; i-- {
		out[i] = digits[h&15]
		h >>= 4
	}
	return string(out)
}

func replace(s, old, repl string) string {
	for i := 0; i+len(old) <= len(s); i++ {
		if s[i:i+len(old)] == old {
			return s[:i] + repl + s[i+len(old):]
		}
	}
	return s
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b [20]byte
	i := len(b)
	for n > 0 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	return string(b[i:])
}
