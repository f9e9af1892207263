package cdktest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMaskAssetHashes(t *testing.T) {
	h := strings.Repeat("ab12", 16)
	in := map[string]any{
		"S3Key": h + ".zip",
		"list":  []any{"cdk-hnb659fds-assets-" + h, 3.0, true},
		h:       "key masked too",
		"short": "abc123",
	}
	got := MaskAssetHashes(in).(map[string]any)
	assert.Equal(t, "<asset-hash>.zip", got["S3Key"])
	assert.Equal(t, []any{"cdk-hnb659fds-assets-<asset-hash>", 3.0, true}, got["list"])
	assert.Equal(t, "key masked too", got["<asset-hash>"])
	assert.Equal(t, "abc123", got["short"])
	assert.Equal(t, h+".zip", in["S3Key"], "input is not modified")
}

func TestDiff(t *testing.T) {
	assert.Empty(t, Diff("a", "x\ny\n", "b", "x\ny\n"))
	d := Diff("want", "x\ny\n", "got", "x\nz\n")
	assert.Contains(t, d, "--- want")
	assert.Contains(t, d, "+++ got")
	assert.Contains(t, d, "-y")
	assert.Contains(t, d, "+z")
}

func TestContextReadsCdkJSON(t *testing.T) {
	ctx, err := Context(map[string]any{"extra": "v"})
	require.NoError(t, err)
	assert.Equal(t, true, ctx["@aws-cdk/core:checkSecretUsage"], "feature flags come from cdk.json")
	assert.Equal(t, []any{}, ctx["aws:cdk:bundling-stacks"], "bundling is skipped")
	assert.Equal(t, "v", ctx["extra"])
}

// CfnLint fails a test for a template with an error. A fake testing.TB
// records the failure without failing this test.
func TestCfnLintReportsErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.template.json")
	require.NoError(t, os.WriteFile(bad, []byte(`{"Resources":{"T":{"Type":"AWS::DynamoDB::Table","Properties":{"KeySchema":[{"AttributeName":"pk","KeyType":"HASH"}],"AttributeDefinitions":[{"AttributeName":"pk","AttributeType":"S"}],"NoSuchProperty":1}}}}`), 0o644))
	good := filepath.Join(dir, "good.template.json")
	require.NoError(t, os.WriteFile(good, []byte(`{"Resources":{"Q":{"Type":"AWS::SQS::Queue","Properties":{}}}}`), 0o644))

	rec := &recorder{TB: t}
	CfnLint(rec, bad)
	assert.True(t, rec.failed, "cfn-lint errors fail the test")
	assert.Contains(t, rec.msg, "bad.template.json")

	rec = &recorder{TB: t}
	CfnLint(rec, good)
	assert.False(t, rec.failed, "a clean template passes: %s", rec.msg)
}

type recorder struct {
	testing.TB
	failed bool
	msg    string
}

func (r *recorder) Errorf(format string, args ...any) {
	r.failed = true
	r.msg += sprintf(format, args...)
}

func (r *recorder) Fatalf(format string, args ...any) {
	r.failed = true
	r.msg += sprintf(format, args...)
}

func (r *recorder) Logf(format string, args ...any) { r.msg += sprintf(format, args...) }
func (r *recorder) Helper()                         {}

// Masking must not merge two keys: two assets whose keys differ only in
// their hashes would otherwise leave one of them out of the snapshot.
func TestMaskAssetHashesRefusesMergedKeys(t *testing.T) {
	h1, h2 := strings.Repeat("ab12", 16), strings.Repeat("cd34", 16)
	_, err := MaskAssetHashesChecked(map[string]any{"Parameters": map[string]any{"Asset" + h1 + "Key": "a", "Asset" + h2 + "Key": "b"}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `"Asset`+h1+`Key" and "Asset`+h2+`Key" of /Parameters`)

	_, err = MaskAssetHashesChecked(map[string]any{"l": []any{map[string]any{h1: 1, h2: 2}}})
	assert.ErrorContains(t, err, "of /l/0")

	got, err := MaskAssetHashesChecked(map[string]any{"Asset" + h1: "x", "Other" + h2: h1})
	require.NoError(t, err, "distinct keys after masking")
	assert.Equal(t, map[string]any{"Asset<asset-hash>": "x", "Other<asset-hash>": "<asset-hash>"}, got)

	rec := &recorder{TB: t}
	t.Chdir(t.TempDir())
	Golden(rec, "merged", map[string]any{h1: 1, h2: 2})
	assert.True(t, rec.failed, "Golden accepted a template whose masking merges two keys")
	assert.Contains(t, rec.msg, "merges the keys")
}

// GoldenAll compares each template and fails for a snapshot file whose
// template is gone; -update deletes it.
func TestGoldenAllFindsStaleSnapshots(t *testing.T) {
	t.Chdir(t.TempDir())
	require.NoError(t, os.MkdirAll("testdata", 0o755))
	templates := map[string]map[string]any{"stack-a": {"Resources": map[string]any{"Q": map[string]any{"Type": "AWS::SQS::Queue"}}}}
	write := func(name, body string) {
		require.NoError(t, os.WriteFile(filepath.Join("testdata", name), []byte(body), 0o644))
	}
	write("stack-a.json", "{\n  \"Resources\": {\n    \"Q\": {\n      \"Type\": \"AWS::SQS::Queue\"\n    }\n  }\n}\n")
	write("notes.txt", "not a snapshot")

	rec := &recorder{TB: t}
	GoldenAll(rec, templates)
	assert.False(t, rec.failed, "matching snapshots: %s", rec.msg)

	write("stack-gone.json", "{}\n")
	rec = &recorder{TB: t}
	GoldenAll(rec, templates)
	assert.True(t, rec.failed, "a snapshot without a template passed")
	assert.Contains(t, rec.msg, filepath.Join("testdata", "stack-gone.json")+" has no synthesized template any more")
	assert.NotContains(t, rec.msg, "stack-a.json")

	stale, err := StaleGolden("testdata", []string{"stack-a"})
	require.NoError(t, err)
	assert.Equal(t, []string{filepath.Join("testdata", "stack-gone.json")}, stale)

	// A changed template still fails with a diff.
	write("stack-a.json", "{}\n")
	rec = &recorder{TB: t}
	GoldenAll(rec, map[string]map[string]any{"stack-a": templates["stack-a"]})
	assert.True(t, rec.failed)
	assert.Contains(t, rec.msg, "+    \"Q\": {")

	t.Setenv("UPDATE_GOLDEN", "1")
	rec = &recorder{TB: t}
	GoldenAll(rec, templates)
	assert.False(t, rec.failed, "update: %s", rec.msg)
	_, err = os.Stat(filepath.Join("testdata", "stack-gone.json"))
	assert.True(t, os.IsNotExist(err), "update kept the stale snapshot")
	_, err = os.Stat(filepath.Join("testdata", "notes.txt"))
	assert.NoError(t, err, "update deleted a file that is not a snapshot")
}
