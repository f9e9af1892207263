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
