//go:build unix

package jsiienv_test

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/internal/synth/jsiienv"
)

// fakeKernel talks the kernel's side of the protocol on fd 3, as
// @jsii/runtime's lib/program.js does (its SyncStdio is built with
// readFD:3,writeFD:3): it answers each request line with {"ok": request},
// and writes to stdout and stderr on the way.
const fakeKernel = `// SyncStdio({errorFD:2,readFD:3,writeFD:3})
const fs = require('fs');
// fd 3 is held on /dev/null (fstat is not redirected), so no file opened
// here can take it.
if (!fs.fstatSync(3).isCharacterDevice()) throw new Error('fd 3 is not held on /dev/null');
const buf = Buffer.alloc(1 << 16);
let pending = '';
console.log('hello from the kernel');
console.log('flags: ' + process.execArgv.filter((a) => a.startsWith('--v8-pool-size')).join(' '));
process.stderr.write('a warning\n');
for (;;) {
  const n = fs.readSync(3, buf, 0, buf.length, null);
  if (n === 0) break;
  pending += buf.subarray(0, n).toString();
  let i;
  while ((i = pending.indexOf('\n')) >= 0) {
    const line = pending.slice(0, i);
    pending = pending.slice(i + 1);
    if (line === '{"exit":0}') process.exit(0);
    fs.writeSync(3, JSON.stringify({ ok: JSON.parse(line) }) + '\n');
  }
}
`

// runtimeLayout writes bin/jsii-runtime.js (which only says it ran) and,
// when kernel is not empty, lib/program.js; it returns the relay's path.
func runtimeLayout(t *testing.T, kernel string) string {
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "bin"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "lib"), 0o755))
	relay := filepath.Join(dir, "bin", "jsii-runtime.js")
	require.NoError(t, os.WriteFile(relay, []byte(`process.stdout.write('{"relay":true}\n')`), 0o644))
	if kernel != "" {
		require.NoError(t, os.WriteFile(filepath.Join(dir, "lib", "program.js"), []byte(kernel), 0o644))
	}
	return relay
}

func TestDirectModeIsOn(t *testing.T) {
	if os.Getenv(jsiienv.EnvRelay) == "1" {
		assert.Empty(t, jsiienv.DirectNode, "%s=1 keeps the relay", jsiienv.EnvRelay)
		return
	}
	require.NotEmpty(t, jsiienv.DirectNode, "direct mode is off: its files could not be written or run")
	assert.Equal(t, jsiienv.DirectNode, os.Getenv("JSII_NODE"))
	st, err := os.Stat(jsiienv.DirectNode)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o755), st.Mode().Perm())
	dir, err := os.Stat(filepath.Dir(jsiienv.DirectNode))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), dir.Mode().Perm(), "only this user may write the scripts jsii runs")
}

// TestDirectKernel runs the direct mode's script as jsii-runtime-go does
// (JSII_NODE with the relay's path) on a fake runtime: the kernel answers
// on stdout with nothing else there, and what it printed reaches stderr
// wrapped as the relay wraps it.
func TestDirectKernel(t *testing.T) {
	if jsiienv.DirectNode == "" {
		t.Fatalf("direct mode is off (%s=%q)", jsiienv.EnvRelay, os.Getenv(jsiienv.EnvRelay))
	}
	// V8's thread pool is sized to the machine unless NODE_OPTIONS sizes it.
	for nodeOptions, flags := range map[string]string{"": "--v8-pool-size=0", "--v8-pool-size=3": ""} {
		t.Run("NODE_OPTIONS="+nodeOptions, func(t *testing.T) { directKernel(t, nodeOptions, flags) })
	}
}

func directKernel(t *testing.T, nodeOptions, flags string) {
	cmd := exec.Command(jsiienv.DirectNode, runtimeLayout(t, fakeKernel))
	cmd.Env = append(os.Environ(), "NODE_OPTIONS="+nodeOptions)
	cmd.Stdin = strings.NewReader("{\"hello\":1}\n{\"hello\":2}\n{\"exit\":0}\n")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "stderr: %s", stderr.String())
	assert.Equal(t, "{\"ok\":{\"hello\":1}}\n{\"ok\":{\"hello\":2}}\n", string(out))

	var got []string
	sc := bufio.NewScanner(strings.NewReader(stderr.String()))
	for sc.Scan() {
		var m map[string][]byte
		require.NoError(t, json.Unmarshal(sc.Bytes(), &m), "a stderr line the Go side cannot decode: %q", sc.Text())
		for k, v := range m {
			got = append(got, k+": "+string(v))
		}
	}
	assert.Equal(t, []string{"stdout: hello from the kernel\n", "stdout: flags: " + flags + "\n", "stderr: a warning\n"}, got)
}

// TestUnknownLayoutKeepsTheRelay: without lib/program.js, or with a kernel
// that does not talk on fd 3, the script runs the relay unchanged.
func TestUnknownLayoutKeepsTheRelay(t *testing.T) {
	if jsiienv.DirectNode == "" {
		t.Fatalf("direct mode is off (%s=%q)", jsiienv.EnvRelay, os.Getenv(jsiienv.EnvRelay))
	}
	for name, kernel := range map[string]string{
		"no kernel":            "",
		"kernel on another fd": "// SyncStdio({readFD:0,writeFD:1})\nprocess.stdout.write('{\"kernel\":true}\\n')",
	} {
		t.Run(name, func(t *testing.T) {
			out, err := exec.Command(jsiienv.DirectNode, runtimeLayout(t, kernel)).Output()
			require.NoError(t, err)
			assert.Equal(t, "{\"relay\":true}\n", string(out))
		})
	}
}
