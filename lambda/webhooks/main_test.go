package main

import (
	"bytes"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/internal/testkit/lambdatest"
)

func TestMain(m *testing.M) { lambdatest.Main(m) }

// The built function refuses to start on a bad environment, naming every
// bad variable, instead of failing on its first message.
func TestConfigurationError(t *testing.T) {
	cmd := exec.Command(lambdatest.Build(t))
	cmd.Env = lambdatest.IsolatedEnv(t, "WEBHOOK_SCHEDULE=5s,1s", "WEBHOOK_TIMEOUT=1m")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit)
	assert.Equal(t, 1, exit.ExitCode())
	for _, want := range []string{"webhooks: configuration:", "EVENTS_TABLE is not set", "WEBHOOK_QUEUE_URL is not set", "WEBHOOK_SCHEDULE", `WEBHOOK_TIMEOUT="1m" is invalid`} {
		assert.Contains(t, stderr.String(), want)
	}
}
