package fnconfig

import (
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/triggers-dev/triggers/contract"
	"github.com/triggers-dev/triggers/internal/webhook"
	"github.com/triggers-dev/triggers/schema"
)

// Webhooks is the configuration of the webhook delivery function.
type Webhooks struct {
	EventsTable string
	// EventsProfile is EVENTS_PROFILE (default schema.ProfileSeed).
	EventsProfile schema.EventsProfile
	// EventsSharding is EVENTS_SHARDING (on or off, default off).
	EventsSharding bool
	// QueueURL is the retry queue (WEBHOOK_QUEUE_URL).
	QueueURL string
	// SecretsKey is the KMS key that sealed the signing secrets
	// (WEBHOOK_SECRETS_KEY: its ARN).
	SecretsKey string
	// Schedule spaces the retries (WEBHOOK_SCHEDULE; default
	// contract.DefaultRetrySchedule).
	Schedule contract.RetrySchedule
	// Timeout bounds one webhook request (WEBHOOK_TIMEOUT; default
	// webhook.DefaultTimeout, 1-30 s).
	Timeout time.Duration
	// DisableAfter disables a subscription failing this long
	// (WEBHOOK_DISABLE_AFTER; default contract.DefaultWebhookDisableAfter, at
	// least an hour).
	DisableAfter time.Duration
	// AllowPrivate lets targets be private or loopback addresses
	// (WEBHOOK_ALLOW_PRIVATE=true; local development only).
	AllowPrivate bool
	// Parallel bounds one message's attempts at once (WEBHOOK_PARALLEL,
	// 1-20; default dispatch.DefaultParallel).
	Parallel int
	// BreakerThreshold, BreakerCooldown and SlowAfter configure the
	// endpoints' circuit breaker (WEBHOOK_BREAKER_THRESHOLD 1-1000,
	// WEBHOOK_BREAKER_COOLDOWN 1s-1h, WEBHOOK_SLOW_AFTER 100ms up to the
	// request timeout, or "off": -1); zero values take dispatch's
	// defaults. Unset, SlowAfter is half the request timeout when that is
	// under DefaultSlowAfter: a request times out before the
	// default would count it slow.
	BreakerThreshold int
	BreakerCooldown  time.Duration
	SlowAfter        time.Duration
	// EndpointRate caps requests per second per endpoint
	// (WEBHOOK_ENDPOINT_RATE, 0-10000; 0: no cap).
	EndpointRate int
	// SlowLaneAfter marks an endpoint slow when a request to it was
	// answered after at least this long (WEBHOOK_SLOW_LANE_AFTER, 100ms up
	// to the request timeout, or "off": -1; 0: dispatch's default).
	SlowLaneAfter time.Duration
	// TenantSlowConcurrency bounds the requests to one tenant's slow
	// endpoints at once (WEBHOOK_TENANT_SLOW_CONCURRENCY, 1-1000; 0:
	// dispatch's default).
	TenantSlowConcurrency int
	// RoundHold is WEBHOOK_ROUND_HOLD (default contract.DefaultRoundHold,
	// at least contract.MinRoundHold): how long a started redelivery round
	// holds its event's settles.
	RoundHold        time.Duration
	LogLevel         slog.Level
	MetricsNamespace string
	// Endpoint and SQSEndpoint override the DynamoDB and SQS endpoints.
	Endpoint, SQSEndpoint string
}

// LoadWebhooks reads the webhook function's configuration: EVENTS_TABLE,
// WEBHOOK_QUEUE_URL and WEBHOOK_SECRETS_KEY are required; EVENTS_PROFILE,
// WEBHOOK_SCHEDULE, WEBHOOK_TIMEOUT, WEBHOOK_DISABLE_AFTER,
// WEBHOOK_ALLOW_PRIVATE, WEBHOOK_PARALLEL, WEBHOOK_BREAKER_THRESHOLD,
// WEBHOOK_BREAKER_COOLDOWN, WEBHOOK_SLOW_AFTER, WEBHOOK_ENDPOINT_RATE,
// WEBHOOK_SLOW_LANE_AFTER, WEBHOOK_TENANT_SLOW_CONCURRENCY,
// LOG_LEVEL, METRICS_NAMESPACE, DYNAMODB_ENDPOINT and SQS_ENDPOINT are
// optional.
func LoadWebhooks(getenv func(string) string) (Webhooks, error) {
	var errs []error
	c := Webhooks{
		EventsTable:  strings.TrimSpace(getenv(contract.EnvEventsTable)),
		QueueURL:     strings.TrimSpace(getenv(contract.EnvWebhookQueueURL)),
		Schedule:     contract.DefaultRetrySchedule(),
		Timeout:      webhook.DefaultTimeout,
		DisableAfter: contract.DefaultWebhookDisableAfter,
		Endpoint:     strings.TrimSpace(getenv(contract.EnvDynamoDBEndpoint)),
		SQSEndpoint:  strings.TrimSpace(getenv(contract.EnvSQSEndpoint)),
	}
	if c.EventsTable == "" {
		errs = append(errs, fmt.Errorf("%s is not set: set it to the events table name", contract.EnvEventsTable))
	}
	if p, err := loadEventsProfile(getenv); err != nil {
		errs = append(errs, err)
	} else {
		c.EventsProfile = p
	}
	if on, err := LoadSharding(getenv); err != nil {
		errs = append(errs, err)
	} else {
		c.EventsSharding = on
	}
	if c.QueueURL == "" {
		errs = append(errs, fmt.Errorf("%s is not set: set it to the webhook retry queue URL", contract.EnvWebhookQueueURL))
	} else if err := checkQueueURL(contract.EnvWebhookQueueURL, c.QueueURL, ""); err != nil {
		errs = append(errs, err)
	}
	if k, err := loadSecretsKey(getenv, true); err != nil {
		errs = append(errs, err)
	} else {
		c.SecretsKey = k
	}
	if v := strings.TrimSpace(getenv(contract.EnvWebhookSchedule)); v != "" {
		s, err := contract.ParseRetrySchedule(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", contract.EnvWebhookSchedule, err))
		}
		c.Schedule = s
	}
	duration := func(name string, lo, hi time.Duration, dst *time.Duration) {
		v := strings.TrimSpace(getenv(name))
		if v == "" {
			return
		}
		d, err := time.ParseDuration(v)
		if err != nil || d < lo || d > hi {
			errs = append(errs, fmt.Errorf("%s=%q is invalid: use a Go duration from %s to %s", name, v, lo, hi))
			return
		}
		*dst = d
	}
	duration(contract.EnvWebhookTimeout, time.Second, 30*time.Second, &c.Timeout)
	duration(contract.EnvWebhookDisableAfter, time.Hour, 90*24*time.Hour, &c.DisableAfter)
	duration(contract.EnvWebhookBreakerCooldown, time.Second, time.Hour, &c.BreakerCooldown)
	if v := strings.TrimSpace(getenv(contract.EnvWebhookSlowAfter)); v == "off" {
		c.SlowAfter = -1
	} else {
		duration(contract.EnvWebhookSlowAfter, 100*time.Millisecond, c.Timeout, &c.SlowAfter)
		if v == "" && c.Timeout/2 < DefaultSlowAfter {
			// The default (5 s) would outlast a shorter timeout: a hanging
			// endpoint would time out before it counted as slow, and its
			// circuit would open only after a run of failures.
			c.SlowAfter = c.Timeout / 2
		}
	}
	whole := func(name string, lo, hi int, dst *int) {
		v := strings.TrimSpace(getenv(name))
		if v == "" {
			return
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < lo || n > hi {
			errs = append(errs, fmt.Errorf("%s=%q is invalid: use a whole number from %d to %d", name, v, lo, hi))
			return
		}
		*dst = n
	}
	whole(contract.EnvWebhookParallel, 1, 20, &c.Parallel)
	whole(contract.EnvWebhookBreakerThreshold, 1, 1000, &c.BreakerThreshold)
	whole(contract.EnvWebhookEndpointRate, 0, 10000, &c.EndpointRate)
	whole(contract.EnvWebhookTenantSlowConcurrency, 1, 1000, &c.TenantSlowConcurrency)
	if v := strings.TrimSpace(getenv(contract.EnvWebhookSlowLaneAfter)); v == "off" {
		c.SlowLaneAfter = -1
	} else {
		duration(contract.EnvWebhookSlowLaneAfter, 100*time.Millisecond, c.Timeout, &c.SlowLaneAfter)
	}
	if v := strings.TrimSpace(getenv(contract.EnvWebhookAllowPrivate)); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s=%q is invalid: use true or false", contract.EnvWebhookAllowPrivate, v))
		}
		c.AllowPrivate = b
	}
	if ns := strings.TrimSpace(getenv(contract.EnvMetricsNamespace)); ns != "" {
		if err := contract.ValidMetricsNamespace(ns); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", contract.EnvMetricsNamespace, err))
		}
		c.MetricsNamespace = ns
	}
	lvl, err := parseLevel(getenv(contract.EnvLogLevel))
	if err != nil {
		errs = append(errs, err)
	}
	c.LogLevel = lvl
	if c.RoundHold, err = loadRoundHold(getenv); err != nil {
		errs = append(errs, err)
	}
	return c, errors.Join(errs...)
}

// loadSecretsKey reads WEBHOOK_SECRETS_KEY, the KMS key of the signing
// secrets (a key ARN; a key id or alias works too): required where
// webhook delivery is on, since secrets are never stored in plain text.
func loadSecretsKey(getenv func(string) string, required bool) (string, error) {
	k := strings.TrimSpace(getenv(contract.EnvWebhookSecretsKey))
	switch {
	case k == "" && required:
		return "", fmt.Errorf("%s is not set: set it to the ARN of the KMS key that seals webhook signing secrets (the construct sets it)", contract.EnvWebhookSecretsKey)
	case strings.ContainsAny(k, " \t\n"):
		return "", fmt.Errorf("%s=%q is invalid: give a KMS key ARN, key id or alias name", contract.EnvWebhookSecretsKey, k)
	}
	return k, nil
}

// DefaultSlowAfter is dispatch.DefaultSlowAfter, spelled out: every
// function links this package, and only the webhooks function links
// dispatch (a test keeps the two equal).
const DefaultSlowAfter = 5 * time.Second

// loadRoundHold reads WEBHOOK_ROUND_HOLD: contract.DefaultRoundHold when
// unset, else a Go duration of at least contract.MinRoundHold.
func loadRoundHold(getenv func(string) string) (time.Duration, error) {
	v := strings.TrimSpace(getenv(contract.EnvWebhookRoundHold))
	if v == "" {
		return contract.DefaultRoundHold, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < contract.MinRoundHold {
		return 0, fmt.Errorf("%s=%q is invalid: use a Go duration of at least %s, such as 6h (the construct sets it from the retry queue)", contract.EnvWebhookRoundHold, v, contract.MinRoundHold)
	}
	return d, nil
}
