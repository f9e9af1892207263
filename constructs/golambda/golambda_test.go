package golambda_test

import (
	"debug/elf"
	"os"
	"path/filepath"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/constructs/golambda"
	_ "github.com/triggers-dev/triggers/internal/jsiienv"
	"github.com/triggers-dev/triggers/internal/jsiirt"
)

func TestMain(m *testing.M) {
	code := m.Run()
	jsiirt.Close()
	os.Exit(code)
}

// writeModule writes a tiny module with two main packages sharing a library.
func writeModule(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"go.mod":        "module example.com/m\n\ngo 1.22\n",
		"lib/lib.go":    "package lib\n\nfunc Name() string { return \"a\" }\n",
		"fn/a/main.go":  "package main\n\nimport \"example.com/m/lib\"\n\nfunc main() { println(lib.Name()) }\n",
		"fn/b/main.go":  "package main\n\nfunc main() {}\n",
		"other/x.go":    "package other\n",
		"lib/x_test.go": "package lib\n",
	}
	for name, body := range files {
		p := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
	}
	return dir
}

func TestSourceHash(t *testing.T) {
	dir := writeModule(t)
	hash := func(entry string) string {
		h, err := golambda.SourceHash(dir, entry)
		require.NoError(t, err)
		return h
	}
	a := hash("fn/a")
	assert.Equal(t, a, hash("fn/a"), "stable")
	assert.NotEqual(t, a, hash("fn/b"), "each function has its own hash")

	b := hash("fn/b")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "other/x.go"), []byte("package other\n\nvar X = 1\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "lib/x_test.go"), []byte("package lib\n\nvar Y = 2\n"), 0o644))
	assert.Equal(t, a, hash("fn/a"), "unrelated packages and tests do not change it")

	require.NoError(t, os.WriteFile(filepath.Join(dir, "lib/lib.go"), []byte("package lib\n\nfunc Name() string { return \"b\" }\n"), 0o644))
	assert.NotEqual(t, a, hash("fn/a"), "a dependency's change changes it")
	assert.Equal(t, b, hash("fn/b"), "a function that does not import it keeps its hash")

	_, err := golambda.SourceHash(dir, "fn/missing")
	assert.ErrorContains(t, err, "go list fn/missing")
}

func TestPropsValidation(t *testing.T) {
	dir := writeModule(t)
	stack := awscdk.NewStack(awscdk.NewApp(nil), jsii.String("S"), nil)
	assert.PanicsWithError(t, `golambda "F": props.Entry is required: the main package relative to the module root, such as "lambda/api"`, func() {
		golambda.NewGoFunction(stack, jsii.String("F"), &golambda.GoFunctionProps{})
	})
	assert.PanicsWithError(t, `golambda "F": entry "fn/nope" is not a directory under `+dir+`: give the main package's path relative to the module root`, func() {
		golambda.NewGoFunction(stack, jsii.String("F"), &golambda.GoFunctionProps{Entry: "fn/nope", ModuleDir: dir})
	})
	assert.PanicsWithError(t, `golambda "F": MemoryMiB 64 is outside 128-10240: Lambda accepts 128 MiB to 10,240 MiB`, func() {
		golambda.NewGoFunction(stack, jsii.String("F"), &golambda.GoFunctionProps{Entry: "fn/a", ModuleDir: dir, MemoryMiB: 64})
	})
}

// Synthesizing with bundling builds a linux/arm64 ELF named bootstrap into
// the function's asset, and the function runs it on provided.al2023/arm64.
func TestBundlesBootstrap(t *testing.T) {
	dir := writeModule(t)
	out := t.TempDir()
	app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(out)})
	stack := awscdk.NewStack(app, jsii.String("S"), nil)
	golambda.NewGoFunction(stack, jsii.String("Fn"), &golambda.GoFunctionProps{
		Entry: "fn/a", ModuleDir: dir, Tracing: true, MemoryMiB: 512,
		Environment: map[string]*string{"KEY": jsii.String("v")},
	})
	tmpl := assertions.Template_FromStack(stack, nil)
	tmpl.HasResourceProperties(jsii.String("AWS::Lambda::Function"), map[string]any{
		"Runtime": "provided.al2023", "Architectures": []any{"arm64"}, "Handler": "bootstrap",
		"MemorySize": 512, "Timeout": 10, "TracingConfig": map[string]any{"Mode": "Active"},
		"LoggingConfig": map[string]any{"LogFormat": "JSON", "LogGroup": assertions.Match_AnyValue()},
		"Environment":   map[string]any{"Variables": map[string]any{"KEY": "v"}},
	})
	tmpl.HasResourceProperties(jsii.String("AWS::Logs::LogGroup"), map[string]any{"RetentionInDays": 30})
	app.Synth(nil)

	assets, err := filepath.Glob(filepath.Join(out, "asset.*", "bootstrap"))
	require.NoError(t, err)
	require.Len(t, assets, 1, "one bundled asset")
	bin := assets[0]
	f, err := elf.Open(bin)
	require.NoError(t, err, "the asset holds an ELF bootstrap")
	defer f.Close()
	assert.Equal(t, elf.EM_AARCH64, f.Machine, "built for arm64")
	assert.Nil(t, f.Section(".debug_info"), "stripped")
}
