package consumertest

import (
	"bytes"
	"context"
	"debug/elf"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/constructs/triggersapi"
	"github.com/triggers-dev/triggers/contract"
	"github.com/triggers-dev/triggers/internal/testkit/cdktest"
)

// exampleDir is the example module, relative to this module's root.
const exampleDir = "examples/platform"

// readOnlyCopy copies the files of this repository's working tree that git
// tracks or would track (not ignored ones: node_modules, cdk.out, bin) into
// dst, leaving out nested modules (examples/...), as a module zip in the
// module cache does; then makes the copy read-only. It returns a listing
// of the copy to compare after use.
func readOnlyCopy(t *testing.T, root, dst string) map[string]string {
	t.Helper()
	out, err := exec.Command("git", "-C", root, "ls-files", "-z", "--cached", "--others", "--exclude-standard").Output()
	require.NoError(t, err, "git ls-files in %s: this test needs the repository's git checkout", root)
	for _, name := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		if strings.HasPrefix(name, "examples/") {
			continue
		}
		src := filepath.Join(root, name)
		info, err := os.Lstat(src)
		if err != nil || !info.Mode().IsRegular() {
			continue // deleted in the working tree, or not a file
		}
		copyFile(t, src, filepath.Join(dst, name), info.Mode().Perm())
	}
	_, err = os.Stat(filepath.Join(dst, "go.mod"))
	require.NoError(t, err, "the copy has go.mod")

	t.Cleanup(func() { setWritable(dst, true) })
	require.NoError(t, setWritable(dst, false))
	return cdktest.Listing(t, dst)
}

func copyFile(t *testing.T, src, dst string, perm fs.FileMode) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(dst), 0o755))
	in, err := os.Open(src)
	require.NoError(t, err)
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, perm)
	require.NoError(t, err)
	_, err = io.Copy(out, in)
	require.NoError(t, err)
	require.NoError(t, out.Close())
}

// setWritable adds or removes write permission on everything under dir.
func setWritable(dir string, writable bool) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		mode := info.Mode().Perm() &^ 0o222
		if writable {
			mode |= 0o200
		}
		return os.Chmod(p, mode)
	})
}

// run runs a command in dir, failing t with its output.
func run(t *testing.T, ctx context.Context, dir string, env []string, name string, args ...string) {
	t.Helper()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := cmd.Run()
	t.Logf("%s %s: %.1fs", name, strings.Join(args, " "), time.Since(start).Seconds())
	require.NoError(t, err, "%s %s in %s:\n%s", name, strings.Join(args, " "), dir, out.String())
}

// cdkContext returns the context of the example's cdk.json (its feature
// flags) as CDK_CONTEXT_JSON, the way the CDK CLI hands it to the app,
// with extra keys added.
func cdkContext(t *testing.T, dir string, extra map[string]any) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, "cdk.json"))
	require.NoError(t, err)
	var cfg struct {
		Context map[string]any `json:"context"`
	}
	require.NoError(t, json.Unmarshal(raw, &cfg))
	for k, v := range extra {
		cfg.Context[k] = v
	}
	b, err := json.Marshal(cfg.Context)
	require.NoError(t, err)
	return string(b)
}

type template struct {
	Resources map[string]struct {
		Type       string         `json:"Type"`
		Properties map[string]any `json:"Properties"`
	} `json:"Resources"`
}

func readTemplate(t *testing.T, path string) template {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	var tmpl template
	require.NoError(t, json.Unmarshal(raw, &tmpl))
	return tmpl
}

// ids returns the logical ids of the resources of type typ, sorted.
func (tm template) ids(typ string) []string {
	var out []string
	for id, r := range tm.Resources {
		if r.Type == typ {
			out = append(out, id)
		}
	}
	sort.Strings(out)
	return out
}

// one returns the logical id of the only resource of type typ whose id
// starts with prefix.
func (tm template) one(t *testing.T, typ, prefix string) string {
	t.Helper()
	var found []string
	for _, id := range tm.ids(typ) {
		if strings.HasPrefix(id, prefix) {
			found = append(found, id)
		}
	}
	require.Len(t, found, 1, "%s resources with id %s*", typ, prefix)
	return found[0]
}

// functions are the example's functions: TriggersApi's three and its own
// audit function, by logical id prefix.
var functions = map[string]string{
	"TriggersApiFunction":        triggersapi.PrebuiltDirs()[triggersapi.ApiPackage],
	"TriggersAuthorizerFunction": triggersapi.PrebuiltDirs()[triggersapi.AuthorizerPackage],
	"TriggersConsumerFunction":   triggersapi.PrebuiltDirs()[triggersapi.StreamConsumerPackage],
	"AuditFunction":              "audit",
}

// The example app synthesizes from its own module against a read-only copy
// of this repository: TriggersApi's functions are built by import path in
// the example's module, the example's own function by directory, and
// nothing is written into the copy. Then, with those binaries as prebuilt
// code, it synthesizes again without running Go at all.
func TestExamplePlatform(t *testing.T) {
	root, err := cdktest.ModuleRoot()
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()

	tmp := t.TempDir()
	triggers := filepath.Join(tmp, "modcache", "github.com", "triggers-dev", "triggers@v0.0.0")
	start := time.Now()
	before := readOnlyCopy(t, root, triggers)
	platform := filepath.Join(tmp, "platform")
	require.NoError(t, os.CopyFS(platform, os.DirFS(filepath.Join(root, exampleDir))))
	t.Logf("copies: %.1fs", time.Since(start).Seconds())
	run(t, ctx, platform, nil, "go", "mod", "edit", "-replace", "github.com/triggers-dev/triggers="+triggers)
	app := filepath.Join(tmp, "platform-app")
	run(t, ctx, platform, nil, "go", "build", "-o", app, ".")
	run(t, ctx, platform, nil, "go", "test", "-count=1", "./functions/...")

	jsiiEnv := []string{"JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION=1", "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION=20"}
	out := filepath.Join(tmp, "cdk.out")
	run(t, ctx, platform, append(jsiiEnv, "CDK_OUTDIR="+out, "CDK_CONTEXT_JSON="+cdkContext(t, platform, nil)), app)
	assert.Equal(t, before, cdktest.Listing(t, triggers), "synth wrote into the read-only copy of this repository")

	data := readTemplate(t, filepath.Join(out, "platform-dev-data.template.json"))
	assert.Len(t, data.ids("AWS::DynamoDB::Table"), 2, "events and API-keys tables in the data stack")
	// The archive of expired events: its function is built by import path
	// in the example's module too.
	archiverID := data.one(t, "AWS::Lambda::Function", "ExpiredEventsArchiveArchiverFunction")
	archiverKey, _ := data.Resources[archiverID].Properties["Code"].(map[string]any)["S3Key"].(string)
	require.Regexp(t, `^[a-f0-9]{64}\.zip$`, archiverKey)
	archiverBin := filepath.Join(out, "asset."+strings.TrimSuffix(archiverKey, ".zip"), "bootstrap")
	if f, err := elf.Open(archiverBin); assert.NoError(t, err, "the archiver's asset holds the built bootstrap") {
		assert.Equal(t, elf.EM_AARCH64, f.Machine)
		f.Close()
	}
	tmpl := readTemplate(t, filepath.Join(out, "platform-dev-triggers.template.json"))
	assert.Empty(t, tmpl.ids("AWS::DynamoDB::Table"), "the platform stack imports the tables")

	// Four functions, each with a real linux/arm64 bootstrap in its asset.
	require.Len(t, tmpl.ids("AWS::Lambda::Function"), len(functions))
	bootstraps := map[string]string{}
	for prefix, name := range functions {
		id := tmpl.one(t, "AWS::Lambda::Function", prefix)
		props := tmpl.Resources[id].Properties
		assert.Equal(t, "provided.al2023", props["Runtime"], id)
		assert.Equal(t, []any{"arm64"}, props["Architectures"], id)
		key, _ := props["Code"].(map[string]any)["S3Key"].(string)
		require.Regexp(t, `^[a-f0-9]{64}\.zip$`, key, id)
		bin := filepath.Join(out, "asset."+strings.TrimSuffix(key, ".zip"), "bootstrap")
		f, err := elf.Open(bin)
		require.NoError(t, err, "%s: the asset holds the built bootstrap", id)
		assert.Equal(t, elf.EM_AARCH64, f.Machine, id)
		f.Close()
		bootstraps[name] = bin
	}

	// The second consumer of the events stream: its own mapping, on the
	// data stack's stream, with its filter and batch size.
	audit := tmpl.one(t, "AWS::Lambda::Function", "AuditFunction")
	consumer := tmpl.one(t, "AWS::Lambda::Function", "TriggersConsumerFunction")
	mappings := map[string]map[string]any{}
	for _, id := range tmpl.ids("AWS::Lambda::EventSourceMapping") {
		p := tmpl.Resources[id].Properties
		fn, _ := p["FunctionName"].(map[string]any)["Ref"].(string)
		mappings[fn] = p
	}
	require.Len(t, mappings, 2, "one stream mapping per consumer")
	require.Contains(t, mappings, audit)
	require.Contains(t, mappings, consumer)
	m := mappings[audit]
	assert.EqualValues(t, 50, m["BatchSize"])
	assert.Equal(t, []any{"ReportBatchItemFailures"}, m["FunctionResponseTypes"], "partial batch failures")
	assert.Contains(t, fmt.Sprint(m["EventSourceArn"]), "platform-dev-data", "the stream ARN comes from the data stack")
	assert.Equal(t, fmt.Sprint(mappings[consumer]["EventSourceArn"]), fmt.Sprint(m["EventSourceArn"]), "both read the same stream")
	filter, _ := json.Marshal(m["FilterCriteria"])
	assert.Contains(t, string(filter), `\"eventName\":[\"INSERT\",\"MODIFY\"]`)

	// Monitoring pages the example's own topic, through one composite
	// alarm per service (the member alarms have no actions), opens
	// tickets through its ticket topic (the ticket alarms' own actions),
	// and creates no topic.
	topic := tmpl.one(t, "AWS::SNS::Topic", "AlarmTopic")
	ticket := tmpl.one(t, "AWS::SNS::Topic", "TicketTopic")
	assert.Len(t, tmpl.ids("AWS::SNS::Topic"), 2)
	require.NotEmpty(t, tmpl.ids("AWS::CloudWatch::Alarm"))
	var tickets int
	for _, id := range tmpl.ids("AWS::CloudWatch::Alarm") {
		p := tmpl.Resources[id].Properties
		if desc, _ := p["AlarmDescription"].(string); strings.HasPrefix(desc, "Ticket:") {
			tickets++
			assert.Equal(t, []any{map[string]any{"Ref": ticket}}, p["AlarmActions"], id)
			continue
		}
		assert.NotContains(t, p, "AlarmActions", id)
	}
	assert.Positive(t, tickets, "the backup and WAF alarms open tickets")
	composites := tmpl.ids("AWS::CloudWatch::CompositeAlarm")
	require.NotEmpty(t, composites)
	for _, id := range composites {
		assert.Equal(t, []any{map[string]any{"Ref": topic}}, tmpl.Resources[id].Properties["AlarmActions"], id)
	}
	assert.Len(t, tmpl.ids("AWS::CloudWatch::Dashboard"), 1)

	// The API: one REST API, its authorizer and the contract's methods
	// (each route, plus ANY on each resource).
	assert.Len(t, tmpl.ids("AWS::ApiGateway::RestApi"), 1)
	assert.Len(t, tmpl.ids("AWS::ApiGateway::Authorizer"), 1)
	assert.Len(t, tmpl.ids("AWS::ApiGateway::Method"), len(contract.Routes())+len(contract.Paths()))

	t.Run("prebuilt", func(t *testing.T) {
		// The same app with the binaries just built as CI artifacts:
		// a go command that only records its calls is first on PATH.
		prebuilt := filepath.Join(tmp, "bin")
		for name, bin := range bootstraps {
			copyFile(t, bin, filepath.Join(prebuilt, name, "bootstrap"), 0o755)
		}
		copyFile(t, archiverBin, filepath.Join(prebuilt, "archiver", "bootstrap"), 0o755)
		fake := filepath.Join(tmp, "fakego")
		calls := filepath.Join(fake, "calls")
		require.NoError(t, os.MkdirAll(fake, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(fake, "go"), []byte("#!/bin/sh\necho \"$@\" >> "+calls+"\nexit 1\n"), 0o755))
		out2 := filepath.Join(tmp, "cdk.out.prebuilt")
		// CDK's template validation ran on the first synth of the same
		// constructs; this one checks where the binaries come from, so it
		// skips it (CDK_VALIDATION: see cdktest/skipvalidation, not
		// imported here, since its init would turn it off for both).
		env := append(jsiiEnv, "CDK_VALIDATION=false", "PATH="+fake+string(os.PathListSeparator)+os.Getenv("PATH"),
			"CDK_OUTDIR="+out2, "CDK_CONTEXT_JSON="+cdkContext(t, platform, map[string]any{"platform:prebuilt-dir": prebuilt}))
		run(t, ctx, platform, env, app)
		_, err := os.Stat(calls)
		assert.True(t, os.IsNotExist(err), "go ran at synth with prebuilt binaries: %v", err)

		tmpl2 := readTemplate(t, filepath.Join(out2, "platform-dev-triggers.template.json"))
		for prefix, name := range functions {
			id := tmpl2.one(t, "AWS::Lambda::Function", prefix)
			key := tmpl2.Resources[id].Properties["Code"].(map[string]any)["S3Key"].(string)
			staged, err := os.ReadFile(filepath.Join(out2, "asset."+strings.TrimSuffix(key, ".zip"), "bootstrap"))
			require.NoError(t, err, id)
			want, err := os.ReadFile(bootstraps[name])
			require.NoError(t, err)
			assert.True(t, bytes.Equal(want, staged), "%s runs the prebuilt %s/bootstrap", id, name)
		}
		assert.Equal(t, len(tmpl.Resources), len(tmpl2.Resources), "the same resources either way")
		data2 := readTemplate(t, filepath.Join(out2, "platform-dev-data.template.json"))
		key := data2.Resources[data2.one(t, "AWS::Lambda::Function", "ExpiredEventsArchiveArchiverFunction")].Properties["Code"].(map[string]any)["S3Key"].(string)
		staged, err := os.ReadFile(filepath.Join(out2, "asset."+strings.TrimSuffix(key, ".zip"), "bootstrap"))
		require.NoError(t, err)
		want, err := os.ReadFile(archiverBin)
		require.NoError(t, err)
		assert.True(t, bytes.Equal(want, staged), "the archiver runs the prebuilt archiver/bootstrap")
	})
}
