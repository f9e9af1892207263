package assertions

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/internal/synth/jsiirt"
	"github.com/triggers-dev/triggers/internal/testkit/cdktest"
	"github.com/triggers-dev/triggers/internal/testkit/cdktest/skipvalidation"
)

// The CDK app prints nothing on stderr: neither Node's support banner nor
// the benign jsii exit race (see internal/synth/jsiienv and internal/synth/jsiirt), even
// when the environment does not silence them, nor a finding of CDK's
// template validation. The exit race is timing dependent, so the app runs
// several times; the first run validates the templates (this package's
// one synth with validation on: TestMain skips it, cfn-lint checks those
// templates), the others skip validation, which does not touch the race.
func TestAppRunsQuietly(t *testing.T) {
	t.Parallel() // a child process, like TestCfnLint's: they overlap
	root, err := cdktest.ModuleRoot()
	require.NoError(t, err)
	bin := filepath.Join(t.TempDir(), "app")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Dir = root
	out, err := build.CombinedOutput()
	require.NoError(t, err, "go build: %s", out)

	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "JSII_SILENCE_") && !strings.HasPrefix(kv, skipvalidation.Env+"=") {
			env = append(env, kv)
		}
	}
	for i := 0; i < 3; i++ {
		outdir := t.TempDir()
		cmd := exec.Command(bin)
		cmd.Dir = root
		// Bundling is skipped: its progress lines ("Bundling asset ...") are
		// CDK's, not noise, and the Lambda build is tested elsewhere.
		// The performance counters (written for any synth time with the
		// threshold 0) show whether the templates were validated.
		counters := filepath.Join(t.TempDir(), "performance-counters.json")
		cmd.Env = append(env, "CDK_OUTDIR="+outdir, "CDK_PERF_COUNTERS_FILE="+counters,
			`CDK_CONTEXT_JSON={"aws:cdk:bundling-stacks":[],"@aws-cdk/core.slowSynthThreshold":0}`)
		if i > 0 {
			cmd.Env = append(cmd.Env, skipvalidation.Env+"=false")
		}
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		require.NoError(t, cmd.Run(), "app failed: %s", stderr.String())
		assert.Empty(t, stderr.String(), "run %d printed on stderr", i)
		assert.NotContains(t, stderr.String(), jsiirt.BenignExitMessage)
		assert.FileExists(t, filepath.Join(outdir, "triggers-dev-data.template.json"))
		raw, err := os.ReadFile(counters)
		require.NoError(t, err, "the app wrote no performance counters")
		var perf struct{ Counters map[string]float64 }
		require.NoError(t, json.Unmarshal(raw, &perf))
		validated := perf.Counters["CloudFormationValidate.validate(cnt)"]
		if i == 0 {
			assert.Equal(t, float64(len(appStacks)), validated, "run 0 validates every stack's template")
		} else {
			assert.Zero(t, validated, "run %d skips validation", i)
		}
	}
}
