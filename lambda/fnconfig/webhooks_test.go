package fnconfig_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/contract"
	"github.com/triggers-dev/triggers/internal/webhook"
	"github.com/triggers-dev/triggers/lambda/fnconfig"
	"github.com/triggers-dev/triggers/schema"
)

func TestLoadWebhooksDefaults(t *testing.T) {
	c, err := fnconfig.LoadWebhooks(env(map[string]string{
		contract.EnvEventsTable: "events", contract.EnvWebhookQueueURL: "https://sqs.eu-west-1.amazonaws.com/1/retry",
		contract.EnvWebhookSecretsKey: "arn:aws:kms:eu-west-1:111111111111:key/abc",
	}))
	require.NoError(t, err)
	assert.Equal(t, "events", c.EventsTable)
	assert.Equal(t, "arn:aws:kms:eu-west-1:111111111111:key/abc", c.SecretsKey)
	assert.Equal(t, schema.ProfileSeed, c.EventsProfile)
	assert.Equal(t, contract.DefaultRetrySchedule(), c.Schedule)
	assert.Equal(t, webhook.DefaultTimeout, c.Timeout)
	assert.Equal(t, contract.DefaultWebhookDisableAfter, c.DisableAfter)
	assert.False(t, c.AllowPrivate)
	assert.Zero(t, c.Parallel, "dispatch's default")
	assert.Zero(t, c.BreakerThreshold)
	assert.Zero(t, c.BreakerCooldown)
	assert.Zero(t, c.SlowAfter)
	assert.Zero(t, c.EndpointRate)
}

func TestLoadWebhooksValues(t *testing.T) {
	c, err := fnconfig.LoadWebhooks(env(map[string]string{
		contract.EnvEventsTable: "events", contract.EnvWebhookQueueURL: "q", contract.EnvWebhookSecretsKey: "alias/k",
		contract.EnvWebhookSchedule: "1s,2m", contract.EnvWebhookTimeout: "3s",
		contract.EnvWebhookDisableAfter: "48h", contract.EnvWebhookAllowPrivate: "true",
		contract.EnvEventsProfile: "lean", contract.EnvWebhookParallel: "20", contract.EnvWebhookBreakerThreshold: "3",
		contract.EnvWebhookBreakerCooldown: "45s", contract.EnvWebhookSlowAfter: "2s", contract.EnvWebhookEndpointRate: "50",
	}))
	require.NoError(t, err)
	assert.Equal(t, 20, c.Parallel)
	assert.Equal(t, 3, c.BreakerThreshold)
	assert.Equal(t, 45*time.Second, c.BreakerCooldown)
	assert.Equal(t, 2*time.Second, c.SlowAfter)
	assert.Equal(t, 50, c.EndpointRate)
	assert.Equal(t, schema.ProfileLean, c.EventsProfile)
	assert.Equal(t, contract.RetrySchedule{time.Second, 2 * time.Minute}, c.Schedule)
	assert.Equal(t, 3*time.Second, c.Timeout)
	assert.Equal(t, 48*time.Hour, c.DisableAfter)
	assert.True(t, c.AllowPrivate)
}

func TestLoadWebhooksErrorsNameTheVariable(t *testing.T) {
	_, err := fnconfig.LoadWebhooks(env(map[string]string{
		contract.EnvWebhookSchedule: "5s,1s", contract.EnvWebhookTimeout: "31s",
		contract.EnvWebhookDisableAfter: "10m", contract.EnvWebhookAllowPrivate: "maybe",
		contract.EnvEventsProfile: "seeds", contract.EnvWebhookParallel: "21", contract.EnvWebhookBreakerThreshold: "0",
		contract.EnvWebhookBreakerCooldown: "2h", contract.EnvWebhookSlowAfter: "11s", contract.EnvWebhookEndpointRate: "-1",
	}))
	require.Error(t, err)
	for _, want := range []string{
		contract.EnvEventsTable + " is not set", contract.EnvWebhookQueueURL + " is not set",
		contract.EnvWebhookSecretsKey + " is not set",
		contract.EnvWebhookSchedule + ":", contract.EnvWebhookTimeout + `="31s" is invalid`,
		contract.EnvWebhookDisableAfter + `="10m" is invalid`, contract.EnvWebhookAllowPrivate + `="maybe"`,
		contract.EnvEventsProfile + `: events table profile "seeds" is not known`,
		contract.EnvWebhookParallel + `="21" is invalid: use a whole number from 1 to 20`,
		contract.EnvWebhookBreakerThreshold + `="0" is invalid`, contract.EnvWebhookBreakerCooldown + `="2h" is invalid`,
		contract.EnvWebhookSlowAfter + `="11s" is invalid: use a Go duration from 100ms to 10s`,
		contract.EnvWebhookEndpointRate + `="-1" is invalid`,
	} {
		assert.ErrorContains(t, err, want)
	}
}

// The API function needs the secrets key exactly when its webhook routes
// are on (WEBHOOK_QUEUE_URL).
func TestLoadAPIWebhookSecretsKey(t *testing.T) {
	base := map[string]string{contract.EnvEventsTable: "events", contract.EnvCursorSecret: "0123456789abcdef0123456789abcdef"}
	with := func(kv ...string) map[string]string {
		m := map[string]string{}
		for k, v := range base {
			m[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	c, err := fnconfig.LoadAPI(env(with()))
	require.NoError(t, err, "webhooks off: no key needed")
	assert.Empty(t, c.WebhookSecretsKey)

	_, err = fnconfig.LoadAPI(env(with(contract.EnvWebhookQueueURL, "q")))
	assert.ErrorContains(t, err, contract.EnvWebhookSecretsKey+" is not set")

	c, err = fnconfig.LoadAPI(env(with(contract.EnvWebhookQueueURL, "q", contract.EnvWebhookSecretsKey, " arn:aws:kms:eu-west-1:111111111111:key/abc ")))
	require.NoError(t, err)
	assert.Equal(t, "arn:aws:kms:eu-west-1:111111111111:key/abc", c.WebhookSecretsKey)

	_, err = fnconfig.LoadAPI(env(with(contract.EnvWebhookQueueURL, "q", contract.EnvWebhookSecretsKey, "alias/a b")))
	assert.ErrorContains(t, err, contract.EnvWebhookSecretsKey+`="alias/a b" is invalid`)
}

// WEBHOOK_SLOW_AFTER=off turns the slow watch off.
func TestLoadWebhooksSlowAfterOff(t *testing.T) {
	c, err := fnconfig.LoadWebhooks(env(map[string]string{
		contract.EnvEventsTable: "events", contract.EnvWebhookQueueURL: "q", contract.EnvWebhookSecretsKey: "alias/k",
		contract.EnvWebhookSlowAfter: "off",
	}))
	require.NoError(t, err)
	assert.Equal(t, time.Duration(-1), c.SlowAfter)
}
