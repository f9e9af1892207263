package golambda_test

import (
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3"
	"github.com/aws/jsii-runtime-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/constructs/golambda"
	_ "github.com/triggers-dev/triggers/internal/synth/jsiienv"
	"github.com/triggers-dev/triggers/internal/synth/jsiirt"
	"github.com/triggers-dev/triggers/internal/testkit/cdktest"
)

func TestMain(m *testing.M) { jsiirt.RunTests(m) }

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
	}
}

// writeModule writes a tiny module example.com/m with two main packages
// sharing a library.
func writeModule(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	writeModuleIn(t, dir)
	return dir
}

func writeModuleIn(t *testing.T, dir string) {
	t.Helper()
	writeFiles(t, dir, map[string]string{
		"go.mod":        "module example.com/m\n\ngo 1.22\n",
		"lib/lib.go":    "package lib\n\nfunc Name() string { return \"a\" }\n",
		"fn/a/main.go":  "package main\n\nimport \"example.com/m/lib\"\n\nfunc main() { println(lib.Name()) }\n",
		"fn/b/main.go":  "package main\n\nfunc main() {}\n",
		"other/x.go":    "package other\n",
		"lib/x_test.go": "package lib\n",
	})
}

// writeConsumer writes a module example.com/c in dir that depends on
// example.com/m through a replace by the directory m (relative to dir, or
// absolute), with a function of its own.
func writeConsumer(t *testing.T, dir, m string) {
	t.Helper()
	writeFiles(t, dir, map[string]string{
		"go.mod": "module example.com/c\n\ngo 1.22\n\nrequire example.com/m v0.0.0\n\nreplace example.com/m => " + m + "\n",
		// The consumer's own function imports the dependency's library.
		"fns/own/main.go": "package main\n\nimport \"example.com/m/lib\"\n\nfunc main() { println(lib.Name()) }\n",
		// A blank import keeps the dependency's main package in the build
		// list, as a CDK app importing the constructs does.
		"tools.go": "//go:build tools\n\npackage c\n",
	})
}

// writePair writes example.com/m and a consumer of it side by side under a
// new directory: root/m and root/c, the replace being "../m".
func writePair(t *testing.T) (root, m, c string) {
	t.Helper()
	root = t.TempDir()
	m, c = filepath.Join(root, "m"), filepath.Join(root, "c")
	writeModuleIn(t, m)
	writeConsumer(t, c, "../m")
	return root, m, c
}

func hashOf(t *testing.T, dir, entry string) string {
	t.Helper()
	h, err := golambda.SourceHash(dir, entry)
	require.NoError(t, err, "SourceHash(%s, %s)", dir, entry)
	return h
}

func TestSourceHash(t *testing.T) {
	dir := writeModule(t)
	hash := func(entry string) string { return hashOf(t, dir, entry) }
	a := hash("fn/a")
	assert.Equal(t, a, hash("fn/a"), "stable")
	assert.Equal(t, a, hash("./fn/a"), "./dir is the same entry")
	assert.Equal(t, a, hash("example.com/m/fn/a"), "so is the import path of a package of the module")
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
	_, err = golambda.SourceHash(dir, "example.com/nowhere/fn")
	assert.ErrorContains(t, err, "go list example.com/nowhere/fn")
	_, err = golambda.SourceHash(dir, "lib")
	assert.ErrorContains(t, err, "entry lib is package lib, not a main package")
}

// A function of a dependency, built by import path from the caller's module:
// its hash covers the dependency's files (a local replace has no version in
// go.sum), does not depend on where that directory is, and follows the
// caller's go.mod.
func TestSourceHashOfADependency(t *testing.T) {
	root, m, c := writePair(t)
	a := hashOf(t, c, "example.com/m/fn/a")
	assert.NotEqual(t, hashOf(t, m, "fn/a"), a, "the dependency's go.mod and the caller's go.mod are part of it")
	own := hashOf(t, c, "fns/own")

	// The same modules at another path (another checkout, another
	// machine) give the same hashes.
	root2 := t.TempDir()
	require.NoError(t, os.CopyFS(root2, os.DirFS(root)))
	c2 := filepath.Join(root2, "c")
	assert.Equal(t, a, hashOf(t, c2, "example.com/m/fn/a"), "independent of the modules' location")
	assert.Equal(t, own, hashOf(t, c2, "fns/own"))

	require.NoError(t, os.WriteFile(filepath.Join(m, "other/x.go"), []byte("package other\n\nvar X = 1\n"), 0o644))
	assert.Equal(t, a, hashOf(t, c, "example.com/m/fn/a"), "an unrelated package of the dependency does not change it")
	require.NoError(t, os.WriteFile(filepath.Join(m, "lib/lib.go"), []byte("package lib\n\nfunc Name() string { return \"b\" }\n"), 0o644))
	assert.NotEqual(t, a, hashOf(t, c, "example.com/m/fn/a"), "a change in the dependency's imported package changes it")
	assert.NotEqual(t, own, hashOf(t, c, "fns/own"), "also for the caller's function importing it")

	a = hashOf(t, c, "example.com/m/fn/a")
	f, err := os.OpenFile(filepath.Join(c, "go.mod"), os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString("\n// a comment\n")
	require.NoError(t, err)
	require.NoError(t, f.Close())
	assert.NotEqual(t, a, hashOf(t, c, "example.com/m/fn/a"), "the caller's go.mod pins every version")
}

// A dependency's function whose own dependencies the caller's go.mod and
// go.sum do not list: the error says how to list them.
func TestSourceHashMissingRequirements(t *testing.T) {
	_, m, c := writePair(t)
	writeFiles(t, m, map[string]string{
		"go.mod":       "module example.com/m\n\ngo 1.22\n\nrequire github.com/aws/aws-lambda-go v1.55.0\n",
		"fn/l/main.go": "package main\n\nimport \"github.com/aws/aws-lambda-go/lambda\"\n\nfunc main() { lambda.Start(func() {}) }\n",
	})
	_, err := golambda.SourceHash(c, "example.com/m/fn/l")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "go list example.com/m/fn/l in "+c)
	assert.Contains(t, err.Error(), "run go mod edit -tool=example.com/m/fn/l && go mod tidy in "+c)
}

func TestPropsValidation(t *testing.T) {
	dir := writeModule(t)
	stack := awscdk.NewStack(awscdk.NewApp(nil), jsii.String("S"), nil)
	one := `golambda "F": give exactly one of props.Entry (the main package to build: a directory of your module such as "lambda/api", or an import path such as "github.com/triggers-dev/triggers/lambda/api"), props.PrebuiltDir (a directory holding a prebuilt bootstrap) and props.Code`
	assert.PanicsWithError(t, one, func() {
		golambda.NewGoFunction(stack, jsii.String("F"), &golambda.GoFunctionProps{})
	})
	assert.PanicsWithError(t, one, func() {
		golambda.NewGoFunction(stack, jsii.String("F"), &golambda.GoFunctionProps{Entry: "fn/a", PrebuiltDir: dir})
	})
	assert.PanicsWithError(t, `golambda "F": entry "fn/nope" is not a directory under `+dir+`: give the main package's directory relative to your module root, or its import path ("github.com/triggers-dev/triggers/lambda/api")`, func() {
		golambda.NewGoFunction(stack, jsii.String("F"), &golambda.GoFunctionProps{Entry: "fn/nope", ModuleDir: dir})
	})
	assert.Panics(t, func() {
		golambda.NewGoFunction(stack, jsii.String("F"), &golambda.GoFunctionProps{Entry: "example.com/m/fn/nope", ModuleDir: dir})
	}, "an import path nothing provides")
	assert.PanicsWithError(t, `golambda "F": MemoryMiB 64 is outside 128-10240: Lambda accepts 128 MiB to 10,240 MiB`, func() {
		golambda.NewGoFunction(stack, jsii.String("F"), &golambda.GoFunctionProps{Entry: "fn/a", ModuleDir: dir, FunctionOptions: golambda.FunctionOptions{MemoryMiB: 64}})
	})
}

func TestPattern(t *testing.T) {
	for in, want := range map[string]string{
		"lambda/api":   "./lambda/api",
		"./lambda/api": "./lambda/api",
		"lambda/api/":  "./lambda/api",
		"github.com/triggers-dev/triggers/lambda/api": "github.com/triggers-dev/triggers/lambda/api",
		"example.com/platform/fn":                     "example.com/platform/fn",
		"../sibling/fn":                               "../sibling/fn",
	} {
		assert.Equal(t, want, golambda.Pattern(in), "Pattern(%q)", in)
	}
}

// Synthesizing with bundling builds linux/arm64 ELFs named bootstrap into
// the functions' assets, from the caller's module: its own function by
// directory and a dependency's by import path, with nothing written into
// the dependency's directory. The functions run them on
// provided.al2023/arm64.
func TestBundlesBootstrap(t *testing.T) {
	_, m, c := writePair(t)
	// Built only with the tag "extra": prints a marker and a variable the
	// linker flags set.
	writeFiles(t, m, map[string]string{
		"fn/a/extra.go": "//go:build extra\n\npackage main\n\nimport \"example.com/m/lib\"\n\nfunc init() { println(\"tag-marker-456\", lib.Stamp) }\n",
		"lib/stamp.go":  "package lib\n\n// Stamp is set by -X.\nvar Stamp string\n",
	})
	before := cdktest.Listing(t, m)
	out := t.TempDir()
	app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(out)})
	stack := awscdk.NewStack(app, jsii.String("S"), nil)
	golambda.NewGoFunction(stack, jsii.String("Fn"), &golambda.GoFunctionProps{
		Entry: "example.com/m/fn/a", ModuleDir: c, Tracing: true,
		FunctionOptions: golambda.FunctionOptions{MemoryMiB: 512, Environment: map[string]*string{"KEY": jsii.String("v")}},
	})
	golambda.NewGoFunction(stack, jsii.String("Own"), &golambda.GoFunctionProps{Entry: "./fns/own", ModuleDir: c})
	golambda.NewGoFunction(stack, jsii.String("X86"), &golambda.GoFunctionProps{
		Entry: "example.com/m/fn/a", ModuleDir: c,
		FunctionOptions: golambda.FunctionOptions{Architecture: awslambda.Architecture_X86_64(),
			BuildTags: []string{"extra"}, Ldflags: "-X example.com/m/lib.Stamp=ldflags-marker-123"},
	})
	tmpl := assertions.Template_FromStack(stack, nil)
	tmpl.HasResourceProperties(jsii.String("AWS::Lambda::Function"), map[string]any{
		"Runtime": "provided.al2023", "Architectures": []any{"arm64"}, "Handler": "bootstrap",
		"MemorySize": 512, "Timeout": 10, "TracingConfig": map[string]any{"Mode": "Active"},
		"LoggingConfig": map[string]any{"LogFormat": "JSON", "LogGroup": assertions.Match_AnyValue()},
		"Environment":   map[string]any{"Variables": map[string]any{"KEY": "v"}},
	})
	tmpl.HasResourceProperties(jsii.String("AWS::Lambda::Function"), map[string]any{"Architectures": []any{"x86_64"}})
	tmpl.HasResourceProperties(jsii.String("AWS::Logs::LogGroup"), map[string]any{"RetentionInDays": 30})
	app.Synth(nil)

	assets, err := filepath.Glob(filepath.Join(out, "asset.*", "bootstrap"))
	require.NoError(t, err)
	require.Len(t, assets, 3, "one bundled asset per function: the same entry built two ways is two assets")
	machines := map[elf.Machine]int{}
	for _, bin := range assets {
		f, err := elf.Open(bin)
		require.NoError(t, err, "the asset holds an ELF bootstrap")
		machines[f.Machine]++
		assert.Nil(t, f.Section(".debug_info"), "stripped")
		f.Close()
		body, err := os.ReadFile(bin)
		require.NoError(t, err)
		x86 := f.Machine == elf.EM_X86_64
		assert.Equal(t, x86, strings.Contains(string(body), "tag-marker-456"), "the build tag is used by the x86_64 build only")
		assert.Equal(t, x86, strings.Contains(string(body), "ldflags-marker-123"), "the linker flags are used by the x86_64 build only")
	}
	assert.Equal(t, map[elf.Machine]int{elf.EM_AARCH64: 2, elf.EM_X86_64: 1}, machines, "built for each function's architecture")
	assert.Equal(t, before, cdktest.Listing(t, m), "nothing was written into the dependency's directory")
}

// buildBootstrap builds fn/b of writeModule for goarch into dir/bootstrap.
func buildBootstrap(t *testing.T, module, dir, goarch string) {
	t.Helper()
	cmd := exec.Command("go", golambda.BuildCommand("fn/b", filepath.Join(dir, "bootstrap"))...)
	cmd.Dir = module
	cmd.Env = append(append(os.Environ(), golambda.BuildEnv()...), "GOARCH="+goarch)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
}

// Prebuilt code skips the Go toolchain: with a go command on PATH that
// only records its calls, the functions are created and go never runs.
func TestPrebuiltCodeRunsNoGo(t *testing.T) {
	module := writeModule(t)
	prebuilt := t.TempDir()
	buildBootstrap(t, module, prebuilt, "arm64")

	fake := t.TempDir()
	calls := filepath.Join(fake, "calls")
	require.NoError(t, os.WriteFile(filepath.Join(fake, "go"), []byte("#!/bin/sh\necho \"$@\" >> "+calls+"\nexit 1\n"), 0o755))
	t.Setenv("PATH", fake+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Chdir(t.TempDir()) // no go.mod above: nothing to look up either

	ctx := map[string]any{"aws:cdk:bundling-stacks": []any{}}
	stack := awscdk.NewStack(awscdk.NewApp(&awscdk.AppProps{Context: &ctx}), jsii.String("S"), nil)
	golambda.NewGoFunction(stack, jsii.String("Dir"), &golambda.GoFunctionProps{PrebuiltDir: prebuilt})
	bucket := awss3.Bucket_FromBucketName(stack, jsii.String("Artifacts"), jsii.String("ci-artifacts"))
	golambda.NewGoFunction(stack, jsii.String("Code"), &golambda.GoFunctionProps{
		FunctionOptions: golambda.FunctionOptions{Code: awslambda.Code_FromBucket(bucket, jsii.String("api/1.2.3.zip"), nil)},
	})
	tmpl := assertions.Template_FromStack(stack, nil)
	tmpl.ResourceCountIs(jsii.String("AWS::Lambda::Function"), jsii.Number(2))
	tmpl.HasResourceProperties(jsii.String("AWS::Lambda::Function"), map[string]any{
		"Code":    map[string]any{"S3Bucket": "ci-artifacts", "S3Key": "api/1.2.3.zip"},
		"Runtime": "provided.al2023", "Architectures": []any{"arm64"}, "Handler": "bootstrap",
	})
	tmpl.HasResourceProperties(jsii.String("AWS::Lambda::Function"), map[string]any{
		"Code": map[string]any{"S3Bucket": assertions.Match_AnyValue(), "S3Key": assertions.Match_StringLikeRegexp(jsii.String(`^[a-f0-9]{64}\.zip$`))},
	})
	_, err := os.Stat(calls)
	assert.True(t, os.IsNotExist(err), "go was run: %v", err)
}

func TestCheckBootstrap(t *testing.T) {
	module := writeModule(t)
	good := t.TempDir()
	buildBootstrap(t, module, good, "arm64")
	assert.NoError(t, golambda.CheckBootstrap(good))

	missing := t.TempDir()
	err := golambda.CheckBootstrap(missing)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no prebuilt binary at "+filepath.Join(missing, "bootstrap"))
	assert.Contains(t, err.Error(), "GOOS=linux GOARCH=arm64 CGO_ENABLED=0 go build -tags lambda.norpc -trimpath -buildvcs=false -ldflags \"-s -w\" -o "+filepath.Join(missing, "bootstrap"))

	amd := t.TempDir()
	buildBootstrap(t, module, amd, "amd64")
	assert.ErrorContains(t, golambda.CheckBootstrap(amd), "is built for EM_X86_64, not linux/arm64")
	x86 := golambda.Build{GOARCH: "amd64"}
	assert.NoError(t, x86.CheckBootstrap(amd), "an x86_64 function takes it")
	assert.ErrorContains(t, x86.CheckBootstrap(good), "is built for EM_AARCH64, not linux/amd64 (the function runs on x86_64)")
	assert.ErrorContains(t, x86.CheckBootstrap(missing), "GOOS=linux GOARCH=amd64 CGO_ENABLED=0 go build -tags lambda.norpc")

	script := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(script, "bootstrap"), []byte("#!/bin/sh\n"), 0o755))
	assert.ErrorContains(t, golambda.CheckBootstrap(script), "is not an ELF binary")

	noexec := t.TempDir()
	buildBootstrap(t, module, noexec, "arm64")
	require.NoError(t, os.Chmod(filepath.Join(noexec, "bootstrap"), 0o644))
	assert.ErrorContains(t, golambda.CheckBootstrap(noexec), "is not executable: chmod +x it")

	stack := awscdk.NewStack(awscdk.NewApp(nil), jsii.String("S"), nil)
	assert.PanicsWithError(t, `golambda "F": PrebuiltDir: `+golambda.CheckBootstrap(missing).Error(), func() {
		golambda.NewGoFunction(stack, jsii.String("F"), &golambda.GoFunctionProps{PrebuiltDir: missing})
	})
}

// A build's architecture, tags and linker flags are in its command, its
// environment and its hash; a tag selects files, so the hash follows the
// files the tagged build compiles.
func TestBuild(t *testing.T) {
	b := golambda.Build{GOARCH: "amd64", Tags: []string{"extra", "netgo"}, Ldflags: "-X main.v=1"}
	require.NoError(t, b.Validate())
	assert.Equal(t, "build -tags lambda.norpc,extra,netgo -trimpath -buildvcs=false -ldflags -s -w -X main.v=1 -o out/bootstrap ./fn/a",
		strings.Join(b.Command("fn/a", "out/bootstrap"), " "))
	assert.Equal(t, []string{"GOOS=linux", "GOARCH=amd64", "CGO_ENABLED=0"}, b.Env())
	assert.Equal(t, golambda.BuildCommand("fn/a", "o"), golambda.Build{}.Command("fn/a", "o"), "the zero Build is the default build")

	dir := writeModule(t)
	hash := func(b golambda.Build) string {
		h, err := b.SourceHash(dir, "fn/a")
		require.NoError(t, err)
		return h
	}
	def := hash(golambda.Build{})
	assert.Equal(t, def, hashOf(t, dir, "fn/a"), "SourceHash is the default build's")
	assert.Equal(t, def, hash(golambda.Build{GOARCH: "arm64"}), "arm64 is the default")
	x86, tagged, stamped := hash(golambda.Build{GOARCH: "amd64"}), hash(golambda.Build{Tags: []string{"extra"}}), hash(golambda.Build{Ldflags: "-X main.v=1"})
	assert.NotEqual(t, def, x86)
	assert.NotEqual(t, def, tagged)
	assert.NotEqual(t, def, stamped)
	writeFiles(t, dir, map[string]string{"lib/extra.go": "//go:build extra\n\npackage lib\n\nvar Extra = 1\n"})
	assert.Equal(t, def, hash(golambda.Build{}), "a file behind a tag the build does not set is not hashed")
	assert.NotEqual(t, tagged, hash(golambda.Build{Tags: []string{"extra"}}), "the tagged build hashes the file it compiles")

	for bad, msg := range map[*golambda.Build]string{
		{GOARCH: "riscv64"}:         `GOARCH "riscv64" is not an architecture Lambda runs: use "arm64" (the default) or "amd64" (x86_64)`,
		{Tags: []string{"a,b"}}:     `build tag "a,b" is not a tag go build accepts: use letters, digits, '_' and '.' only (one tag per element)`,
		{Tags: []string{""}}:        `build tag "" is not a tag go build accepts`,
		{Ldflags: "-X a=b\n-X c=d"}: `Ldflags "-X a=b\n-X c=d" holds a line break: give the linker flags on one line`,
	} {
		assert.ErrorContains(t, bad.Validate(), msg)
	}
}

// The build the error message tells users to run is the one synth runs.
func TestBuildCommand(t *testing.T) {
	assert.Equal(t, "build -tags lambda.norpc -trimpath -buildvcs=false -ldflags -s -w -o out/bootstrap github.com/triggers-dev/triggers/lambda/api",
		strings.Join(golambda.BuildCommand("github.com/triggers-dev/triggers/lambda/api", "out/bootstrap"), " "))
	assert.Equal(t, []string{"GOOS=linux", "GOARCH=arm64", "CGO_ENABLED=0"}, golambda.BuildEnv())
}

// A stack whose assets are not bundled (aws:cdk:bundling-stacks leaves it
// out, as in tests and cdk synth of another stack) runs no Go command: the
// asset hash is a placeholder of the entry, the same for the same entry
// however it is written and different between entries. Bundling uses the
// source hash (TestSourceHash, TestBundlesBootstrap).
func TestUnbundledStackRunsNoGo(t *testing.T) {
	module := writeModule(t)
	fake := t.TempDir()
	calls := filepath.Join(fake, "calls")
	require.NoError(t, os.WriteFile(filepath.Join(fake, "go"), []byte("#!/bin/sh\necho \"$@\" >> "+calls+"\nexit 1\n"), 0o755))
	t.Setenv("PATH", fake+string(os.PathListSeparator)+os.Getenv("PATH"))

	ctx := map[string]any{"aws:cdk:bundling-stacks": []any{"Other"}}
	app := awscdk.NewApp(&awscdk.AppProps{Context: &ctx})
	stack := awscdk.NewStack(app, jsii.String("S"), nil)
	require.False(t, *stack.BundlingRequired())
	require.True(t, *awscdk.NewStack(app, jsii.String("Other"), nil).BundlingRequired())
	keys := map[string]string{}
	for id, entry := range map[string]string{"A": "fn/a", "A2": "./fn/a/", "B": "fn/b"} {
		f := golambda.NewGoFunction(stack, jsii.String(id), &golambda.GoFunctionProps{Entry: entry, ModuleDir: module})
		keys[id] = *stack.GetLogicalId(f.Function.Node().DefaultChild().(awscdk.CfnElement))
	}
	_, err := os.Stat(calls)
	assert.True(t, os.IsNotExist(err), "go was run for a stack that is not bundled: %v", err)
	assert.PanicsWithError(t, `golambda "C": entry "fn/nope" is not a directory under `+module+`: give the main package's directory relative to your module root, or its import path ("github.com/triggers-dev/triggers/lambda/api")`, func() {
		golambda.NewGoFunction(stack, jsii.String("C"), &golambda.GoFunctionProps{Entry: "fn/nope", ModuleDir: module})
	}, "a missing directory is still refused")

	resources := (*assertions.Template_FromStack(stack, nil).ToJSON())["Resources"].(map[string]any)
	s3Key := func(id string) string {
		return resources[keys[id]].(map[string]any)["Properties"].(map[string]any)["Code"].(map[string]any)["S3Key"].(string)
	}
	assert.Regexp(t, `^[a-f0-9]{64}\.zip$`, s3Key("A"))
	assert.Equal(t, s3Key("A"), s3Key("A2"), "one entry written two ways, one asset")
	assert.NotEqual(t, s3Key("A"), s3Key("B"), "two entries, two assets")
}
