package main

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/triggers-dev/triggers/internal/testkit/lambdatest"
)

func TestMain(m *testing.M) { lambdatest.Main(m) }

// The built function refuses to start on a bad environment, naming every
// bad variable, instead of failing on its first message.
func TestConfigurationError(t *testing.T) {
	stderr := lambdatest.StartFails(t, "WEBHOOK_SCHEDULE=5s,1s", "WEBHOOK_TIMEOUT=1m")
	for _, want := range []string{"webhooks: configuration:", "EVENTS_TABLE is not set", "WEBHOOK_QUEUE_URL is not set", "WEBHOOK_SECRETS_KEY is not set", "WEBHOOK_SCHEDULE", `WEBHOOK_TIMEOUT="1m" is invalid`} {
		assert.Contains(t, stderr, want)
	}
}
