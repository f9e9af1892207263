package fnconfig_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/contract"
	"github.com/triggers-dev/triggers/internal/webhook"
	"github.com/triggers-dev/triggers/internal/webhook/dispatch"
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
	assert.Zero(t, c.SlowLaneAfter, "dispatch's default")
	assert.Zero(t, c.TenantSlowConcurrency, "dispatch's default")
	assert.Equal(t, contract.DefaultRoundHold, c.RoundHold)
}

func TestLoadWebhooksValues(t *testing.T) {
	c, err := fnconfig.LoadWebhooks(env(map[string]string{
		contract.EnvEventsTable: "events", contract.EnvWebhookQueueURL: "https://sqs.eu-west-1.amazonaws.com/1/retry", contract.EnvWebhookSecretsKey: "alias/k",
		contract.EnvWebhookSchedule: "1s,2m", contract.EnvWebhookTimeout: "3s",
		contract.EnvWebhookDisableAfter: "48h", contract.EnvWebhookAllowPrivate: "true",
		contract.EnvEventsProfile: "lean", contract.EnvWebhookParallel: "20", contract.EnvWebhookBreakerThreshold: "3",
		contract.EnvWebhookBreakerCooldown: "45s", contract.EnvWebhookSlowAfter: "2s", contract.EnvWebhookEndpointRate: "50",
		contract.EnvWebhookRoundHold: "11h", contract.EnvWebhookSlowLaneAfter: "1500ms", contract.EnvWebhookTenantSlowConcurrency: "6",
	}))
	require.NoError(t, err)
	assert.Equal(t, 1500*time.Millisecond, c.SlowLaneAfter)
	assert.Equal(t, 6, c.TenantSlowConcurrency)
	assert.Equal(t, 11*time.Hour, c.RoundHold)
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
		contract.EnvWebhookRoundHold: "30m", contract.EnvWebhookSlowLaneAfter: "50ms", contract.EnvWebhookTenantSlowConcurrency: "0",
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
		contract.EnvWebhookSlowLaneAfter + `="50ms" is invalid: use a Go duration from 100ms to 10s`,
		contract.EnvWebhookTenantSlowConcurrency + `="0" is invalid: use a whole number from 1 to 1000`,
		contract.EnvWebhookRoundHold + `="30m" is invalid: use a Go duration of at least 1h0m0s`,
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

	_, err = fnconfig.LoadAPI(env(with(contract.EnvWebhookQueueURL, "https://sqs.eu-west-1.amazonaws.com/1/retry")))
	assert.ErrorContains(t, err, contract.EnvWebhookSecretsKey+" is not set")

	c, err = fnconfig.LoadAPI(env(with(contract.EnvWebhookQueueURL, "https://sqs.eu-west-1.amazonaws.com/1/retry", contract.EnvWebhookSecretsKey, " arn:aws:kms:eu-west-1:111111111111:key/abc ")))
	require.NoError(t, err)
	assert.Equal(t, "arn:aws:kms:eu-west-1:111111111111:key/abc", c.WebhookSecretsKey)

	_, err = fnconfig.LoadAPI(env(with(contract.EnvWebhookQueueURL, "https://sqs.eu-west-1.amazonaws.com/1/retry", contract.EnvWebhookSecretsKey, "alias/a b")))
	assert.ErrorContains(t, err, contract.EnvWebhookSecretsKey+`="alias/a b" is invalid`)
}

// A queue's name or ARN where its URL belongs, and a writer region that is
// no region name, stop the function at start instead of failing every
// enqueue, or answering every write 503 (found by review).
func TestLoadQueueURLsAndWriterRegion(t *testing.T) {
	const arn = "arn:aws:sqs:eu-west-1:1:retry"
	_, err := fnconfig.LoadWebhooks(env(map[string]string{
		contract.EnvEventsTable: "events", contract.EnvWebhookQueueURL: "webhook-retry", contract.EnvWebhookSecretsKey: "alias/k",
	}))
	assert.ErrorContains(t, err, contract.EnvWebhookQueueURL+`="webhook-retry" is not a queue URL: use https://sqs.<region>.amazonaws.com/<account>/<queue>`)
	api := map[string]string{contract.EnvEventsTable: "events", contract.EnvCursorSecret: "0123456789abcdef0123456789abcdef",
		contract.EnvWebhookQueueURL: arn, contract.EnvWebhookSecretsKey: "alias/k", contract.EnvWriterRegion: "US-EAST-1", "AWS_REGION": "us-east-1"}
	_, err = fnconfig.LoadAPI(env(api))
	assert.ErrorContains(t, err, contract.EnvWebhookQueueURL+`="`+arn+`" is not a queue URL: use https://sqs.<region>.amazonaws.com/<account>/<queue>, or leave it unset (no webhook routes)`)
	assert.ErrorContains(t, err, contract.EnvWriterRegion+`="US-EAST-1" is not a region name`)
	_, err = fnconfig.LoadConsumer(env(map[string]string{contract.EnvDeliveryQueueURL: "https://sqs.eu-west-1.amazonaws.com/1/delivery", contract.EnvDeadLetterQueueURL: arn}))
	assert.ErrorContains(t, err, contract.EnvDeadLetterQueueURL+`="`+arn+`" is not a queue URL: use https://sqs.<region>.amazonaws.com/<account>/<queue>, or leave it unset`)
}

// Unset, the slow watch is half the request timeout when that is under
// its default: a hanging endpoint's request would time out before the
// default counted it slow (found by review).
func TestLoadWebhooksSlowAfterFollowsAShortTimeout(t *testing.T) {
	base := map[string]string{contract.EnvEventsTable: "events", contract.EnvWebhookQueueURL: "https://sqs.eu-west-1.amazonaws.com/1/retry", contract.EnvWebhookSecretsKey: "alias/k"}
	with := func(k, v string) map[string]string {
		m := map[string]string{k: v}
		for k, v := range base {
			m[k] = v
		}
		return m
	}
	c, err := fnconfig.LoadWebhooks(env(with(contract.EnvWebhookTimeout, "2s")))
	require.NoError(t, err)
	assert.Equal(t, time.Second, c.SlowAfter)
	c, err = fnconfig.LoadWebhooks(env(with(contract.EnvWebhookTimeout, "10s")))
	require.NoError(t, err)
	assert.Zero(t, c.SlowAfter, "10 s: the default, 5 s, holds")
	c2, err := fnconfig.LoadWebhooks(env(map[string]string{contract.EnvEventsTable: "events", contract.EnvWebhookQueueURL: "https://sqs.eu-west-1.amazonaws.com/1/retry",
		contract.EnvWebhookSecretsKey: "alias/k", contract.EnvWebhookTimeout: "2s", contract.EnvWebhookSlowAfter: "1500ms"}))
	require.NoError(t, err)
	assert.Equal(t, 1500*time.Millisecond, c2.SlowAfter, "a value given is kept")
	assert.Equal(t, dispatch.DefaultSlowAfter, fnconfig.DefaultSlowAfter)
}

// WEBHOOK_SLOW_AFTER=off turns the slow watch off.
func TestLoadWebhooksSlowAfterOff(t *testing.T) {
	c, err := fnconfig.LoadWebhooks(env(map[string]string{
		contract.EnvEventsTable: "events", contract.EnvWebhookQueueURL: "https://sqs.eu-west-1.amazonaws.com/1/retry", contract.EnvWebhookSecretsKey: "alias/k",
		contract.EnvWebhookSlowAfter: "off",
	}))
	require.NoError(t, err)
	assert.Equal(t, time.Duration(-1), c.SlowAfter)
}

// WEBHOOK_SLOW_LANE_AFTER=off turns the slow lane off.
func TestLoadWebhooksSlowLaneOff(t *testing.T) {
	c, err := fnconfig.LoadWebhooks(env(map[string]string{
		contract.EnvEventsTable: "events", contract.EnvWebhookQueueURL: "https://sqs.eu-west-1.amazonaws.com/1/retry", contract.EnvWebhookSecretsKey: "alias/k",
		contract.EnvWebhookSlowLaneAfter: "off",
	}))
	require.NoError(t, err)
	assert.Equal(t, time.Duration(-1), c.SlowLaneAfter)
}
