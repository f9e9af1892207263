package fnconfig

import (
	"errors"
	"fmt"
	"github.com/triggers-dev/triggers/schema"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/triggers-dev/triggers/contract"
	"github.com/triggers-dev/triggers/internal/emf"
	"github.com/triggers-dev/triggers/internal/webhook"
)

// Webhooks is the configuration of the webhook delivery function.
type Webhooks struct {
	EventsTable string
	// EventsProfile is EVENTS_PROFILE (default schema.ProfileSeed).
	EventsProfile schema.EventsProfile
	// QueueURL is the retry queue (WEBHOOK_QUEUE_URL).
	QueueURL string
	// Schedule spaces the retries (WEBHOOK_SCHEDULE; default
	// webhook.DefaultSchedule).
	Schedule webhook.Schedule
	// Timeout bounds one webhook request (WEBHOOK_TIMEOUT; default
	// webhook.DefaultTimeout, 1-30 s).
	Timeout time.Duration
	// DisableAfter disables a subscription failing this long
	// (WEBHOOK_DISABLE_AFTER; default webhook.DefaultDisableAfter, at
	// least an hour).
	DisableAfter time.Duration
	// AllowPrivate lets targets be private or loopback addresses
	// (WEBHOOK_ALLOW_PRIVATE=true; local development only).
	AllowPrivate     bool
	LogLevel         slog.Level
	MetricsNamespace string
	// Endpoint and SQSEndpoint override the DynamoDB and SQS endpoints.
	Endpoint, SQSEndpoint string
}

// LoadWebhooks reads the webhook function's configuration: EVENTS_TABLE
// and WEBHOOK_QUEUE_URL are required; EVENTS_PROFILE, WEBHOOK_SCHEDULE, WEBHOOK_TIMEOUT,
// WEBHOOK_DISABLE_AFTER, WEBHOOK_ALLOW_PRIVATE, LOG_LEVEL,
// METRICS_NAMESPACE, DYNAMODB_ENDPOINT and SQS_ENDPOINT are optional.
func LoadWebhooks(getenv func(string) string) (Webhooks, error) {
	var errs []error
	c := Webhooks{
		EventsTable:  strings.TrimSpace(getenv(EnvEventsTable)),
		QueueURL:     strings.TrimSpace(getenv(contract.EnvWebhookQueueURL)),
		Schedule:     webhook.DefaultSchedule(),
		Timeout:      webhook.DefaultTimeout,
		DisableAfter: webhook.DefaultDisableAfter,
		Endpoint:     strings.TrimSpace(getenv(EnvDynamoDBEndpoint)),
		SQSEndpoint:  strings.TrimSpace(getenv(EnvSQSEndpoint)),
	}
	if c.EventsTable == "" {
		errs = append(errs, fmt.Errorf("%s is not set: set it to the events table name", EnvEventsTable))
	}
	if p, err := loadEventsProfile(getenv); err != nil {
		errs = append(errs, err)
	} else {
		c.EventsProfile = p
	}
	if c.QueueURL == "" {
		errs = append(errs, fmt.Errorf("%s is not set: set it to the webhook retry queue URL", contract.EnvWebhookQueueURL))
	}
	if v := strings.TrimSpace(getenv(contract.EnvWebhookSchedule)); v != "" {
		s, err := webhook.ParseSchedule(v)
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
	if v := strings.TrimSpace(getenv(contract.EnvWebhookAllowPrivate)); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s=%q is invalid: use true or false", contract.EnvWebhookAllowPrivate, v))
		}
		c.AllowPrivate = b
	}
	if ns := strings.TrimSpace(getenv(EnvMetricsNamespace)); ns != "" {
		if err := emf.ValidNamespace(ns); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", EnvMetricsNamespace, err))
		}
		c.MetricsNamespace = ns
	}
	lvl, err := parseLevel(getenv(EnvLogLevel))
	if err != nil {
		errs = append(errs, err)
	}
	c.LogLevel = lvl
	return c, errors.Join(errs...)
}
