package jsiienv_test

import (
	"archive/tar"
	"compress/gzip"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/internal/synth/jsiienv"
)

// The validation worker's tests run Node with ValidationPreload on a
// stand-in for the kernel's node_modules: aws-cdk-lib (an index.js that
// requires its own modules first, then @aws/cloudformation-validate, as
// its CloudFormationValidatePlugin does) with the plugin's rule folder.

// fakeEngine is a @aws/cloudformation-validate whose answers say which
// thread built the engine and what reached it.
const fakeEngine = `const { isMainThread } = require('worker_threads');
if (process.env.FAKE_FAIL_IN_WORKER && !isMainThread) throw new Error('no engine in a worker');
class RegoEngine {
  constructor(config) { this.config = config; this.mainThread = isMainThread; }
  validateDetailed(t, options) {
    const text = t.readBytes().toString();
    if (text === 'bad') throw new TypeError('cannot parse ' + t.path);
    if (text === 'hang') Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 6000);
    return { diagnostics: [{ ruleId: 'E1', path: t.path, text, options, mainThread: this.mainThread,
      rules: (this.config.customRules || []).map((r) => r.name + '=' + r.content), seen: new Map([['k', [1, 2]]]) }] };
  }
  validateStandard(t, options) { return { standard: t.readBytes().toString(), mainThread: this.mainThread }; }
  listRules() { return [{ id: 'E1', mainThread: this.mainThread }]; }
  engineName() { return 'fake'; }
  later() { return this.mainThread ? 'later, main thread' : 'later, worker'; }
  free() {}
}
class TemplateFile { constructor(p) { this.path = p; } readBytes() { return require('fs').readFileSync(this.path); } }
exports.RegoEngine = RegoEngine;
exports.TemplateFile = TemplateFile;
exports.version = () => isMainThread ? '1.0' : '1.0 (worker)';
exports.other = 42;
`

// fakeCDK is aws-cdk-lib's index.js: run(config) validates the files
// GOOD and BAD name, as the plugin would.
const fakeCDK = `require('./core/lib/noop.js');
exports.run = (config) => {
  const cv = require('@aws/cloudformation-validate');
  const engine = new cv.RegoEngine(config);
  let err;
  try { engine.validateDetailed(new cv.TemplateFile(process.env.BAD), {}); } catch (e) { err = e.name + ': ' + e.message; }
  const d = engine.validateDetailed(new cv.TemplateFile(process.env.GOOD), { severityLevel: 'WARN' }).diagnostics[0];
  return { d, map: d.seen instanceof Map ? [...d.seen] : null, err,
    standard: engine.validateStandard(new cv.TemplateFile(process.env.GOOD)),
    rules: engine.listRules(), name: engine.engineName(), version: cv.version(), other: cv.other,
    later: engine.later() };
};
// stall validates the files HANG and GOOD names, in turn: what each call
// returned (the template's text) or threw.
exports.stall = (config) => {
  const cv = require('@aws/cloudformation-validate');
  const engine = new cv.RegoEngine(config);
  return [process.env.HANG, process.env.GOOD].map((f) => {
    try { return engine.validateDetailed(new cv.TemplateFile(f), {}).diagnostics[0].text; } catch (e) { return e.message; }
  });
};
`

// kernelDir lays out node_modules/aws-cdk-lib under a temporary folder with
// the given index.js and the plugin's rules (two .rego files, out of
// order, and a file that is not a rule); it returns aws-cdk-lib's folder.
func kernelDir(t *testing.T, index string) string {
	lib := filepath.Join(t.TempDir(), "node_modules", "aws-cdk-lib")
	rules := filepath.Join(lib, "core", "lib", "validation", "rules")
	require.NoError(t, os.MkdirAll(rules, 0o755))
	for name, content := range map[string]string{
		"index.js": index, "core/lib/noop.js": "",
		"core/lib/validation/rules/b.rego": "B", "core/lib/validation/rules/a.rego": "A",
		"core/lib/validation/rules/README.md": "not a rule",
	} {
		require.NoError(t, os.WriteFile(filepath.Join(lib, name), []byte(content), 0o644))
	}
	return lib
}

// writePreload writes ValidationPreload where node can load it.
func writePreload(t *testing.T) string {
	p := filepath.Join(t.TempDir(), "validation.js")
	require.NoError(t, os.WriteFile(p, []byte(jsiienv.ValidationPreload), 0o644))
	return p
}

// nodeEnv is the environment without the variables the worker reads.
func nodeEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "CDK_OUTDIR", "CDK_VALIDATION", jsiienv.EnvValidationWorker, "TRIGGERS_JSII_VALIDATION_TIMEOUT_MS", "NODE_OPTIONS":
			continue
		}
		env = append(env, kv)
	}
	return append(env, extra...)
}

type fakeRun struct {
	D struct {
		RuleID     string         `json:"ruleId"`
		Path       string         `json:"path"`
		Text       string         `json:"text"`
		Options    map[string]any `json:"options"`
		MainThread bool           `json:"mainThread"`
		Rules      []string       `json:"rules"`
	} `json:"d"`
	Map      []any          `json:"map"`
	Err      string         `json:"err"`
	Standard map[string]any `json:"standard"`
	Rules    []any          `json:"rules"`
	Name     string         `json:"name"`
	Version  string         `json:"version"`
	Other    int            `json:"other"`
	Later    string         `json:"later"`
}

func TestValidationWorker(t *testing.T) {
	preload := writePreload(t)
	lib := kernelDir(t, fakeCDK)
	engine := filepath.Join(lib, "node_modules", "@aws", "cloudformation-validate")
	require.NoError(t, os.MkdirAll(engine, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(engine, "index.js"), []byte(fakeEngine), 0o644))
	dir := t.TempDir()
	good, bad := filepath.Join(dir, "good.json"), filepath.Join(dir, "bad.json")
	require.NoError(t, os.WriteFile(good, []byte(`{"Resources":{}}`), 0o644))
	require.NoError(t, os.WriteFile(bad, []byte("bad"), 0o644))
	defaults := `{"customRules":[{"name":"a.rego","content":"A"},{"name":"b.rego","content":"B"}]}`
	own := `{"customRules":[{"name":"a.rego","content":"A"},{"name":"b.rego","content":"B"},{"name":"mine.rego","content":"M"}]}`

	run := func(t *testing.T, config string, env ...string) fakeRun {
		cmd := exec.Command("node", "--preserve-symlinks", "--require", preload, "-e",
			"console.log(JSON.stringify(require(process.argv[1]).run(JSON.parse(process.argv[2]))))", lib, config)
		cmd.Env = nodeEnv(append(env, "GOOD="+good, "BAD="+bad)...)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		require.NoError(t, err, "node: %s", stderr.String())
		assert.Empty(t, stderr.String())
		var got fakeRun
		require.NoError(t, json.Unmarshal(out, &got), "%s", out)
		// Whichever thread answers, the caller sees the engine's answers.
		assert.Equal(t, "E1", got.D.RuleID)
		assert.Equal(t, good, got.D.Path)
		assert.Equal(t, `{"Resources":{}}`, got.D.Text, "the template's bytes")
		assert.Equal(t, map[string]any{"severityLevel": "WARN"}, got.D.Options)
		assert.Equal(t, []any{[]any{"k", []any{1.0, 2.0}}}, got.Map, "a Map stays a Map")
		assert.Equal(t, "TypeError: cannot parse "+bad, got.Err, "the engine's error, its type kept")
		assert.Equal(t, `{"Resources":{}}`, got.Standard["standard"])
		assert.Equal(t, "fake", got.Name)
		assert.Equal(t, 42, got.Other, "the module's other exports")
		// A method the stand-in does not know (a later engine's) is a
		// local engine's.
		assert.Equal(t, "later, main thread", got.Later)
		return got
	}

	t.Run("the default rules run in the worker", func(t *testing.T) {
		got := run(t, defaults, "CDK_OUTDIR="+dir)
		assert.False(t, got.D.MainThread, "the engine was built on the kernel's thread")
		assert.Equal(t, []string{"a.rego=A", "b.rego=B"}, got.D.Rules, "the plugin's rule files, sorted, .rego only")
		assert.Equal(t, false, got.Standard["mainThread"])
		assert.Equal(t, []any{map[string]any{"id": "E1", "mainThread": false}}, got.Rules)
		assert.Equal(t, "1.0 (worker)", got.Version)
	})
	t.Run("other rules get an engine of their own", func(t *testing.T) {
		got := run(t, own, "CDK_OUTDIR="+dir)
		assert.True(t, got.D.MainThread)
		assert.Equal(t, []string{"a.rego=A", "b.rego=B", "mine.rego=M"}, got.D.Rules)
	})
	// A worker that misses the deadline fails that call and every call
	// after it (its late answer to the first must not answer the second).
	t.Run("a stalled worker", func(t *testing.T) {
		hang := filepath.Join(dir, "hang.json")
		require.NoError(t, os.WriteFile(hang, []byte("hang"), 0o644))
		cmd := exec.Command("node", "--preserve-symlinks", "--require", preload, "-e",
			"console.log(JSON.stringify(require(process.argv[1]).stall(JSON.parse(process.argv[2]))))", lib, defaults)
		cmd.Env = nodeEnv("CDK_OUTDIR="+dir, "TRIGGERS_JSII_VALIDATION_TIMEOUT_MS=2000", "HANG="+hang, "GOOD="+good)
		out, err := cmd.Output()
		require.NoError(t, err)
		var got []string
		require.NoError(t, json.Unmarshal(out, &got), "%s", out)
		require.Len(t, got, 2)
		assert.Contains(t, got[0], "did not answer validateDetailed in 2000 ms")
		assert.Contains(t, got[1], "stopped answering", "not the late answer to the first call")
	})
	for name, env := range map[string][]string{
		"not a synth (no CDK_OUTDIR)": nil,
		"validation off":              {"CDK_OUTDIR=" + dir, "CDK_VALIDATION=false"},
		"worker off":                  {"CDK_OUTDIR=" + dir, jsiienv.EnvValidationWorker + "=0"},
		"no engine in the worker":     {"CDK_OUTDIR=" + dir, "FAKE_FAIL_IN_WORKER=1"},
	} {
		t.Run(name, func(t *testing.T) {
			got := run(t, defaults, env...)
			assert.True(t, got.D.MainThread, "the engine runs on the kernel's thread")
			assert.Equal(t, "1.0", got.Version)
		})
	}
}

// TestValidationWorkerMatchesEngine runs aws-cdk-lib's own engine (from the
// tarball the Go bindings embed) in the worker and on the main thread and
// compares their answers for templates with and without findings: deep
// equality, prototypes included (node's util.isDeepStrictEqual), of the
// whole report but its performance section (the call's own timings).
func TestValidationWorkerMatchesEngine(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/aws/aws-cdk-go/awscdk/v2").Output()
	require.NoError(t, err)
	tgz, err := filepath.Glob(filepath.Join(strings.TrimSpace(string(out)), "jsii", "aws-cdk-lib-*.tgz"))
	require.NoError(t, err)
	require.Len(t, tgz, 1, "aws-cdk-lib's tarball in the Go module")

	lib := kernelDir(t, `require('./core/lib/noop.js');
exports.engine = (config) => new (require('@aws/cloudformation-validate').RegoEngine)(config);
exports.TemplateFile = (p) => new (require('@aws/cloudformation-validate').TemplateFile)(p);
`)
	// The engine and the plugin's rules, from the tarball.
	for _, f := range []string{"core/lib/validation/rules/a.rego", "core/lib/validation/rules/b.rego", "core/lib/validation/rules/README.md"} {
		require.NoError(t, os.Remove(filepath.Join(lib, f)))
	}
	untar(t, tgz[0], lib, "package/node_modules/@aws/cloudformation-validate/", "package/core/lib/validation/rules/")

	dir := t.TempDir()
	templates := map[string]string{
		"valid": `{"Resources":{"Bucket":{"Type":"AWS::S3::Bucket"}}}`,
		// A wrong type, an unknown property, a missing required property,
		// an unknown resource type.
		"invalid": `{"Resources":{
			"Bucket":{"Type":"AWS::S3::Bucket","Properties":{"BucketName":["x"],"Colour":"red"}},
			"Fn":{"Type":"AWS::Lambda::Function","Properties":{"Runtime":"go1.x"}},
			"Thing":{"Type":"AWS::Nope::Thing"}}}`,
	}
	var paths []string
	for name, body := range templates {
		p := filepath.Join(dir, name+".template.json")
		require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
		paths = append(paths, p)
	}
	script := `const util = require('util');
const [lib, real, ...paths] = process.argv.slice(1);
const cdk = require(lib);
const fs = require('fs'), path = require('path');
const rules = path.join(lib, 'core', 'lib', 'validation', 'rules');
const config = { customRules: fs.readdirSync(rules).filter((f) => f.endsWith('.rego')).sort()
  .map((f) => ({ name: f, content: fs.readFileSync(path.join(rules, f), 'utf-8') })) };
const worker = cdk.engine(config);
const Real = require(real).RegoEngine;
const local = new Real(config);
const options = { pseudoParameterOverrides: { accountId: '123456789012', region: 'eu-west-1' },
  exclude: { ids: ['W3005'] }, severityLevel: 'WARN' };
const out = {};
for (const p of paths) {
  const a = worker.validateDetailed(cdk.TemplateFile(p), options);
  const b = local.validateDetailed(cdk.TemplateFile(p), options);
  // The reports' performance section times the call itself.
  const same = util.isDeepStrictEqual({ ...a, performance: null }, { ...b, performance: null });
  out[path.basename(p, '.template.json')] = { equal: same, rules: b.diagnostics.map((d) => d.ruleId) };
}
out.listRules = util.isDeepStrictEqual(worker.listRules(), local.listRules());
out.worker = !(worker instanceof Real); // the stand-in, not the module's own engine
console.log(JSON.stringify(out));
`
	cmd := exec.Command("node", "--preserve-symlinks", "--require", writePreload(t), "-e", script,
		lib, filepath.Join(lib, "node_modules", "@aws", "cloudformation-validate"), paths[0], paths[1])
	cmd.Env = nodeEnv("CDK_OUTDIR=" + dir)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	res, err := cmd.Output()
	require.NoError(t, err, "node: %s", stderr.String())
	var got struct {
		Valid, Invalid struct {
			Equal bool
			Rules []string
		}
		ListRules, Worker bool
	}
	require.NoError(t, json.Unmarshal(res, &got), "%s", res)
	assert.True(t, got.Worker, "the engine ran in the worker")
	assert.True(t, got.ListRules, "the same rules")
	assert.True(t, got.Valid.Equal, "a valid template: the same answer")
	assert.True(t, got.Invalid.Equal, "an invalid template: the same findings")
	assert.GreaterOrEqual(t, len(got.Invalid.Rules), 3, "the invalid template has findings: %v", got.Invalid.Rules)
	t.Logf("valid: %v; invalid: %v", got.Valid.Rules, got.Invalid.Rules)
}

// untar extracts the tarball's files under the given prefixes into dir,
// without the prefix's first element ("package/").
func untar(t *testing.T, tgz, dir string, prefixes ...string) {
	f, err := os.Open(tgz)
	require.NoError(t, err)
	defer f.Close()
	zr, err := gzip.NewReader(f)
	require.NoError(t, err)
	tr := tar.NewReader(zr)
	n := 0
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		if h.Typeflag != tar.TypeReg {
			continue
		}
		for _, p := range prefixes {
			if !strings.HasPrefix(h.Name, p) {
				continue
			}
			dst := filepath.Join(dir, filepath.FromSlash(strings.TrimPrefix(h.Name, "package/")))
			require.NoError(t, os.MkdirAll(filepath.Dir(dst), 0o755))
			b, err := io.ReadAll(tr)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(dst, b, 0o644))
			n++
		}
	}
	require.NotZero(t, n, "no files under %v in %s", prefixes, tgz)
}
