package assertions

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/internal/synth/jsiirt"
	"github.com/triggers-dev/triggers/internal/testkit/cdktest"
)

// The CDK app prints nothing on stderr: neither Node's support banner nor
// the benign jsii exit race (see internal/synth/jsiienv and internal/synth/jsiirt), even
// when the environment does not silence them. The exit race is timing
// dependent, so the app runs several times.
func TestAppRunsQuietly(t *testing.T) {
	root, err := cdktest.ModuleRoot()
	require.NoError(t, err)
	bin := filepath.Join(t.TempDir(), "app")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Dir = root
	out, err := build.CombinedOutput()
	require.NoError(t, err, "go build: %s", out)

	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "JSII_SILENCE_") {
			env = append(env, kv)
		}
	}
	for i := 0; i < 3; i++ {
		outdir := t.TempDir()
		cmd := exec.Command(bin)
		cmd.Dir = root
		// Bundling is skipped: its progress lines ("Bundling asset ...") are
		// CDK's, not noise, and the Lambda build is tested elsewhere.
		cmd.Env = append(env, "CDK_OUTDIR="+outdir, `CDK_CONTEXT_JSON={"aws:cdk:bundling-stacks":[]}`)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		require.NoError(t, cmd.Run(), "app failed: %s", stderr.String())
		assert.Empty(t, stderr.String(), "run %d printed on stderr", i)
		assert.NotContains(t, stderr.String(), jsiirt.BenignExitMessage)
		assert.FileExists(t, filepath.Join(outdir, "triggers-dev-data.template.json"))
	}
}
