// Package cdktest holds the helpers that the synthesizing tests share: an app
// built with cdk.json's context (feature flags) and asset bundling skipped,
// golden snapshots with masked asset hashes and a readable diff, and
// cfn-lint. It is imported by tests only.
package cdktest

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"
	"github.com/pmezard/go-difflib/difflib"

	"github.com/triggers-dev/triggers/internal/synth/modroot"
)

var update = flag.Bool("update", false, "rewrite golden files (also UPDATE_GOLDEN=1)")

// Updating reports whether golden files are being rewritten.
func Updating() bool { return *update || os.Getenv("UPDATE_GOLDEN") == "1" }

// ModuleRoot returns the directory holding go.mod, searching up from the
// working directory.
func ModuleRoot() (string, error) { return modroot.FromWorkingDir() }

// Context returns cdk.json's context (feature flags and the app's own keys)
// plus aws:cdk:bundling-stacks = [] so that no asset is bundled in tests,
// overridden by extra.
func Context(extra map[string]any) (map[string]any, error) {
	root, err := ModuleRoot()
	if err != nil {
		return nil, err
	}
	raw, err := os.ReadFile(filepath.Join(root, "cdk.json"))
	if err != nil {
		return nil, fmt.Errorf("read cdk.json: %w", err)
	}
	var cfg struct {
		Context map[string]any `json:"context"`
	}
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return nil, fmt.Errorf("parse cdk.json: %w", err)
	}
	ctx := cfg.Context
	if ctx == nil {
		ctx = map[string]any{}
	}
	ctx["aws:cdk:bundling-stacks"] = []any{}
	for k, v := range extra {
		ctx[k] = v
	}
	return ctx, nil
}

// NewApp returns an app with Context(extra) that writes its cloud assembly
// to outdir (a fresh temporary directory when empty).
func NewApp(outdir string, extra map[string]any) (awscdk.App, error) {
	ctx, err := Context(extra)
	if err != nil {
		return nil, err
	}
	props := &awscdk.AppProps{Context: &ctx}
	if outdir != "" {
		props.Outdir = jsii.String(outdir)
	}
	return awscdk.NewApp(props), nil
}

// ReadTemplate reads a synthesized template file.
func ReadTemplate(path string) (map[string]any, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var tmpl map[string]any
	if err := json.Unmarshal(raw, &tmpl); err != nil {
		return nil, fmt.Errorf("parse %s: %w", path, err)
	}
	return tmpl, nil
}

// Templates returns the templates in a cloud assembly directory, by stack
// artifact name (file name without .template.json).
func Templates(assemblyDir string) (map[string]map[string]any, error) {
	paths, err := filepath.Glob(filepath.Join(assemblyDir, "*.template.json"))
	if err != nil {
		return nil, err
	}
	out := map[string]map[string]any{}
	for _, p := range paths {
		tmpl, err := ReadTemplate(p)
		if err != nil {
			return nil, err
		}
		out[strings.TrimSuffix(filepath.Base(p), ".template.json")] = tmpl
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no templates in %s", assemblyDir)
	}
	return out, nil
}

// assetHash matches the 64-hex-digit hashes CDK puts in asset keys,
// parameters and bootstrap references.
var assetHash = regexp.MustCompile(`[a-f0-9]{64}`)

// MaskAssetHashes returns a deep copy of v with every asset hash replaced by
// "<asset-hash>", so that golden files do not change with code changes of
// bundled assets. Two keys of one object that differ only in their hashes
// become one key there; Golden refuses such a value (MaskAssetHashesChecked).
func MaskAssetHashes(v any) any {
	out, _ := maskAssetHashes(v, "")
	return out
}

// MaskAssetHashesChecked is MaskAssetHashes, but fails when masking would
// merge two keys of one object (two assets whose keys differ only in their
// hashes): a snapshot would then silently hold one of them.
func MaskAssetHashesChecked(v any) (any, error) { return maskAssetHashes(v, "") }

func maskAssetHashes(v any, path string) (any, error) {
	var firstErr error
	keep := func(err error) {
		if firstErr == nil {
			firstErr = err
		}
	}
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		from := make(map[string]string, len(x))
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			mk := assetHash.ReplaceAllString(k, "<asset-hash>")
			if prev, dup := from[mk]; dup {
				keep(fmt.Errorf("masking asset hashes merges the keys %q and %q of %s: the snapshot would lose one of them", prev, k, pathOrRoot(path)))
			}
			from[mk] = k
			e, err := maskAssetHashes(x[k], path+"/"+k)
			if err != nil {
				keep(err)
			}
			out[mk] = e
		}
		return out, firstErr
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			m, err := maskAssetHashes(e, fmt.Sprintf("%s/%d", path, i))
			if err != nil {
				keep(err)
			}
			out[i] = m
		}
		return out, firstErr
	case string:
		return assetHash.ReplaceAllString(x, "<asset-hash>"), nil
	default:
		return v, nil
	}
}

func pathOrRoot(p string) string {
	if p == "" {
		return "the top-level object"
	}
	return p
}

// Golden compares v, asset hashes masked and as indented JSON, with
// testdata/<name>.json; with -update or UPDATE_GOLDEN=1 it rewrites the file
// instead. A mismatch fails t with a unified diff; so does a v in which
// masking merges two keys.
func Golden(t testing.TB, name string, v any) {
	t.Helper()
	masked, err := MaskAssetHashesChecked(v)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	got, err := json.MarshalIndent(masked, "", "  ")
	if err != nil {
		t.Fatalf("marshal %s: %v", name, err)
	}
	got = append(got, '\n')
	path := filepath.Join("testdata", name+".json")
	if Updating() {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("updated %s", path)
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden file: %v (run the test with -update or UPDATE_GOLDEN=1 to create it)", err)
	}
	if diff := Diff(path, string(want), "synthesized", string(got)); diff != "" {
		t.Errorf("%s differs from the synthesized template (review, then rerun with -update or UPDATE_GOLDEN=1 to accept):\n%s", path, diff)
	}
}

// GoldenAll compares every template with its snapshot (Golden, by sorted
// name) and then fails for every testdata/*.json that no template has any
// more (a removed or renamed stack); with -update or UPDATE_GOLDEN=1 it
// deletes those files instead.
func GoldenAll(t testing.TB, templates map[string]map[string]any) {
	t.Helper()
	names := make([]string, 0, len(templates))
	for n := range templates {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		Golden(t, n, templates[n])
	}
	stale, err := StaleGolden("testdata", names)
	if err != nil {
		t.Fatalf("list golden files: %v", err)
	}
	for _, p := range stale {
		if Updating() {
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
			t.Logf("deleted %s: no synthesized template has it", p)
			continue
		}
		t.Errorf("%s has no synthesized template any more: delete it if its stack was removed or renamed (or rerun with -update or UPDATE_GOLDEN=1)", p)
	}
}

// StaleGolden returns the snapshot files dir/*.json whose name is not in
// names, sorted.
func StaleGolden(dir string, names []string) ([]string, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	have := make(map[string]bool, len(names))
	for _, n := range names {
		have[n] = true
	}
	var stale []string
	for _, p := range paths {
		if !have[strings.TrimSuffix(filepath.Base(p), ".json")] {
			stale = append(stale, p)
		}
	}
	sort.Strings(stale)
	return stale, nil
}

// Diff returns a unified diff of two texts, or "" when they are equal.
func Diff(nameA, a, nameB, b string) string {
	if a == b {
		return ""
	}
	d, err := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A: difflib.SplitLines(a), B: difflib.SplitLines(b),
		FromFile: nameA, ToFile: nameB, Context: 3,
	})
	if err != nil {
		return fmt.Sprintf("(diff failed: %v)", err)
	}
	return d
}

// CfnLint runs cfn-lint (preinstalled on this project's machines) over the
// templates and fails t with its report on any finding of level error.
// Warnings and informational findings are reported but do not fail.
func CfnLint(t testing.TB, paths ...string) {
	t.Helper()
	bin, err := exec.LookPath("cfn-lint")
	if err != nil {
		t.Fatalf("cfn-lint is not on PATH: it ships with this project's machine image (Python); install it with pip install cfn-lint==1.51.0")
	}
	sort.Strings(paths)
	args := append([]string{"--format", "parseable", "--"}, paths...)
	out, err := exec.Command(bin, args...).CombinedOutput()
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit):
		// cfn-lint's exit code is a bit mask: 2 errors, 4 warnings, 8 informational.
		code := exit.ExitCode()
		if code&2 != 0 || code&1 != 0 {
			t.Errorf("cfn-lint found errors (exit %d):\n%s", code, out)
		} else if len(out) > 0 {
			t.Logf("cfn-lint warnings (exit %d):\n%s", code, out)
		}
	default:
		t.Fatalf("run cfn-lint: %v\n%s", err, out)
	}
}

// Resources returns the template's resources of the given type, by logical id.
func Resources(tmpl map[string]any, typ string) map[string]map[string]any {
	out := map[string]map[string]any{}
	res, _ := tmpl["Resources"].(map[string]any)
	for id, r := range res {
		m, _ := r.(map[string]any)
		if m["Type"] == typ {
			out[id] = m
		}
	}
	return out
}

// Props returns a resource's Properties.
func Props(resource map[string]any) map[string]any {
	p, _ := resource["Properties"].(map[string]any)
	return p
}

func sprintf(format string, args ...any) string { return fmt.Sprintf(format, args...) }

// Listing maps every path under dir to its mode, size and modification
// time, so a test can prove a synth wrote nothing into a directory (tests
// run as root, who may write into a read-only tree, so chmod alone proves
// nothing).
func Listing(t testing.TB, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		out[p] = fmt.Sprint(info.Mode(), info.Size(), info.ModTime().UnixNano())
		return nil
	})
	if err != nil {
		t.Fatalf("list %s: %v", dir, err)
	}
	return out
}
