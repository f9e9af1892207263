package fnconfig_test

import (
	"github.com/triggers-dev/triggers/schema"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/contract"
	"github.com/triggers-dev/triggers/internal/webhook"
	"github.com/triggers-dev/triggers/lambda/fnconfig"
)

func TestLoadWebhooksDefaults(t *testing.T) {
	c, err := fnconfig.LoadWebhooks(env(map[string]string{
		contract.EnvEventsTable: "events", contract.EnvWebhookQueueURL: "https://sqs.eu-west-1.amazonaws.com/1/retry",
	}))
	require.NoError(t, err)
	assert.Equal(t, "events", c.EventsTable)
	assert.Equal(t, schema.ProfileSeed, c.EventsProfile)
	assert.Equal(t, webhook.DefaultSchedule(), c.Schedule)
	assert.Equal(t, webhook.DefaultTimeout, c.Timeout)
	assert.Equal(t, webhook.DefaultDisableAfter, c.DisableAfter)
	assert.False(t, c.AllowPrivate)
}

func TestLoadWebhooksValues(t *testing.T) {
	c, err := fnconfig.LoadWebhooks(env(map[string]string{
		contract.EnvEventsTable: "events", contract.EnvWebhookQueueURL: "q",
		contract.EnvWebhookSchedule: "1s,2m", contract.EnvWebhookTimeout: "3s",
		contract.EnvWebhookDisableAfter: "48h", contract.EnvWebhookAllowPrivate: "true",
		contract.EnvEventsProfile: "lean",
	}))
	require.NoError(t, err)
	assert.Equal(t, schema.ProfileLean, c.EventsProfile)
	assert.Equal(t, webhook.Schedule{time.Second, 2 * time.Minute}, c.Schedule)
	assert.Equal(t, 3*time.Second, c.Timeout)
	assert.Equal(t, 48*time.Hour, c.DisableAfter)
	assert.True(t, c.AllowPrivate)
}

func TestLoadWebhooksErrorsNameTheVariable(t *testing.T) {
	_, err := fnconfig.LoadWebhooks(env(map[string]string{
		contract.EnvWebhookSchedule: "5s,1s", contract.EnvWebhookTimeout: "31s",
		contract.EnvWebhookDisableAfter: "10m", contract.EnvWebhookAllowPrivate: "maybe",
		contract.EnvEventsProfile: "seeds",
	}))
	require.Error(t, err)
	for _, want := range []string{
		contract.EnvEventsTable + " is not set", contract.EnvWebhookQueueURL + " is not set",
		contract.EnvWebhookSchedule + ":", contract.EnvWebhookTimeout + `="31s" is invalid`,
		contract.EnvWebhookDisableAfter + `="10m" is invalid`, contract.EnvWebhookAllowPrivate + `="maybe"`,
		contract.EnvEventsProfile + `: events table profile "seeds" is not known`,
	} {
		assert.ErrorContains(t, err, want)
	}
}
