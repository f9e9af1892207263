// Package fnconfig reads the Lambda functions' configuration from the
// environment. Every variable is documented in docs/runtime.md.
package fnconfig

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/triggers-dev/triggers/schema"

	"github.com/triggers-dev/triggers/contract"
	"github.com/triggers-dev/triggers/internal/cursor"
	"github.com/triggers-dev/triggers/internal/event"
)

// API is the configuration of the API function.
type API struct {
	EventsTable string
	// EventsProfile is EVENTS_PROFILE (default schema.ProfileSeed).
	EventsProfile schema.EventsProfile
	// EventsSharding is EVENTS_SHARDING (on or off, default off).
	EventsSharding bool
	// CursorSecret is the cursor HMAC key from CURSOR_SECRET; empty when
	// CursorSecretARN names a Secrets Manager secret to read instead.
	CursorSecret []byte
	// CursorSecretARN is CURSOR_SECRET_ARN.
	CursorSecretARN string
	Retention       time.Duration
	LogLevel        slog.Level
	// Endpoint overrides the DynamoDB endpoint; empty on AWS.
	Endpoint string
	// MetricsNamespace is METRICS_NAMESPACE: the CloudWatch namespace of
	// the embedded-metric-format lines; empty turns them off.
	MetricsNamespace string
	// KeySources is API_KEY_SOURCES (default contract.KeySourcesBearer): with
	// SourceBearer the function refuses requests that also carry X-Api-Key,
	// which a cached authorizer result would otherwise let through.
	KeySources contract.KeySources
	// WebhookQueueURL is WEBHOOK_QUEUE_URL: the webhook retry queue,
	// where redeliveries go. Empty: webhook delivery is not deployed.
	WebhookQueueURL string
	// WebhookSecretsKey is WEBHOOK_SECRETS_KEY: the KMS key that seals
	// new signing secrets; required with WebhookQueueURL.
	WebhookSecretsKey string
	// WriterRegion is WRITER_REGION: the one region that accepts writes
	// on a global table; empty for a single-region service.
	WriterRegion string
	// Region is AWS_REGION, the function's own region (Lambda sets it);
	// required with WriterRegion.
	Region string
	// CORS is CORS_ALLOW_ORIGINS, CORS_ALLOW_CREDENTIALS and
	// CORS_EXPOSE_HEADERS (contract.CORS); nil without CORS_ALLOW_ORIGINS.
	CORS *contract.CORS
	// RoundHold is WEBHOOK_ROUND_HOLD (default contract.DefaultRoundHold):
	// how long a redelivery round the API starts holds its event's
	// settles.
	RoundHold time.Duration
}

// Authorizer is the configuration of the authorizer function.
type Authorizer struct {
	APIKeysTable string
	LogLevel     slog.Level
	Endpoint     string
	// KeySources is API_KEY_SOURCES (default contract.KeySourcesBearer).
	KeySources contract.KeySources
}

// LoadAPI reads the API function's configuration: EVENTS_TABLE is
// required, and the cursor key either as CURSOR_SECRET_ARN (a Secrets
// Manager secret, which lambda/api reads on its first request, not at
// init; what the CDK construct sets) or as CURSOR_SECRET itself (at least
// 32 bytes; local use). EVENTS_PROFILE (seed or lean, default seed), RETENTION_DAYS (default 30, 1-3650), LOG_LEVEL
// (debug, info, warn, error; default info), DYNAMODB_ENDPOINT and
// METRICS_NAMESPACE are optional. WEBHOOK_QUEUE_URL turns the webhook
// routes on and then needs WEBHOOK_SECRETS_KEY.
func LoadAPI(getenv func(string) string) (API, error) {
	var errs []error
	c := API{
		EventsTable:     strings.TrimSpace(getenv(contract.EnvEventsTable)),
		CursorSecret:    []byte(getenv(contract.EnvCursorSecret)),
		Retention:       event.DefaultRetention,
		Endpoint:        strings.TrimSpace(getenv(contract.EnvDynamoDBEndpoint)),
		WebhookQueueURL: strings.TrimSpace(getenv(contract.EnvWebhookQueueURL)),
		WriterRegion:    strings.TrimSpace(getenv(contract.EnvWriterRegion)),
		Region:          strings.TrimSpace(getenv("AWS_REGION")),
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
	c.CursorSecretARN = strings.TrimSpace(getenv(contract.EnvCursorSecretARN))
	switch {
	case len(c.CursorSecret) > 0 && c.CursorSecretARN != "":
		errs = append(errs, fmt.Errorf("both %s and %s are set: set only one", contract.EnvCursorSecret, contract.EnvCursorSecretARN))
	case c.CursorSecretARN != "":
	case len(c.CursorSecret) == 0:
		errs = append(errs, fmt.Errorf("no cursor key: set %s to a Secrets Manager secret, or %s to at least %d random bytes", contract.EnvCursorSecretARN, contract.EnvCursorSecret, cursor.MinSecretBytes))
	case len(c.CursorSecret) < cursor.MinSecretBytes:
		errs = append(errs, fmt.Errorf("%s is %d bytes: set it to at least %d random bytes (for example: openssl rand -base64 48)", contract.EnvCursorSecret, len(c.CursorSecret), cursor.MinSecretBytes))
	}
	if c.WriterRegion != "" && !contract.ValidRegionName(c.WriterRegion) {
		errs = append(errs, fmt.Errorf("%s=%q is not a region name: use the writer's region, such as us-east-1 (every region would answer writes 503)", contract.EnvWriterRegion, c.WriterRegion))
	} else if c.WriterRegion != "" && c.Region == "" {
		errs = append(errs, fmt.Errorf("%s=%q is set but AWS_REGION is not: set AWS_REGION to this function's region (Lambda sets it)", contract.EnvWriterRegion, c.WriterRegion))
	}
	if c.WebhookQueueURL != "" {
		if err := checkQueueURL(contract.EnvWebhookQueueURL, c.WebhookQueueURL, ", or leave it unset (no webhook routes)"); err != nil {
			errs = append(errs, err)
		}
	}
	if v := strings.TrimSpace(getenv(contract.EnvRetentionDays)); v != "" {
		d, err := strconv.Atoi(v)
		if err != nil || d < 1 || d > 3650 {
			errs = append(errs, fmt.Errorf("%s=%q is invalid: use a whole number of days from 1 to 3650", contract.EnvRetentionDays, v))
		} else {
			c.Retention = time.Duration(d) * 24 * time.Hour
		}
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
	if c.KeySources, err = contract.ParseKeySources(getenv(contract.EnvAPIKeySources)); err != nil {
		errs = append(errs, err)
	}
	if c.WebhookSecretsKey, err = loadSecretsKey(getenv, c.WebhookQueueURL != ""); err != nil {
		errs = append(errs, err)
	}
	if c.CORS, err = loadCORS(getenv); err != nil {
		errs = append(errs, err)
	}
	if c.RoundHold, err = loadRoundHold(getenv); err != nil {
		errs = append(errs, err)
	}
	return c, errors.Join(errs...)
}

// loadCORS reads the CORS environment: nil without CORS_ALLOW_ORIGINS; an
// error naming the variable and the fix for a value that could never
// match or is not true/false.
func loadCORS(getenv func(string) string) (*contract.CORS, error) {
	origins := splitList(getenv(contract.EnvCorsAllowOrigins))
	creds := strings.TrimSpace(getenv(contract.EnvCorsAllowCredentials))
	expose := splitList(getenv(contract.EnvCorsExposeHeaders))
	if len(origins) == 0 {
		if creds != "" || len(expose) > 0 {
			return nil, fmt.Errorf("%s or %s is set without %s: set the allowed origins, or neither", contract.EnvCorsAllowCredentials, contract.EnvCorsExposeHeaders, contract.EnvCorsAllowOrigins)
		}
		return nil, nil
	}
	c := &contract.CORS{AllowOrigins: origins, ExposeHeaders: expose}
	switch creds {
	case "", "false":
	case "true":
		c.AllowCredentials = true
	default:
		return nil, fmt.Errorf("%s=%q is invalid: use true or false", contract.EnvCorsAllowCredentials, creds)
	}
	if err := contract.CheckCORS(*c); err != nil {
		return nil, fmt.Errorf("%s: %w", contract.EnvCorsAllowOrigins, err)
	}
	return c, nil
}

// splitList splits a comma-separated value, trimming each item and
// dropping empty ones.
func splitList(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// LoadAuthorizer reads the authorizer's configuration: API_KEYS_TABLE is
// required; LOG_LEVEL, DYNAMODB_ENDPOINT and API_KEY_SOURCES are optional.
func LoadAuthorizer(getenv func(string) string) (Authorizer, error) {
	var errs []error
	c := Authorizer{
		APIKeysTable: strings.TrimSpace(getenv(contract.EnvAPIKeysTable)),
		Endpoint:     strings.TrimSpace(getenv(contract.EnvDynamoDBEndpoint)),
	}
	if c.APIKeysTable == "" {
		errs = append(errs, fmt.Errorf("%s is not set: set it to the API-keys table name", contract.EnvAPIKeysTable))
	}
	lvl, err := parseLevel(getenv(contract.EnvLogLevel))
	if err != nil {
		errs = append(errs, err)
	}
	c.LogLevel = lvl
	if c.KeySources, err = contract.ParseKeySources(getenv(contract.EnvAPIKeySources)); err != nil {
		errs = append(errs, err)
	}
	return c, errors.Join(errs...)
}

func parseLevel(v string) (slog.Level, error) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "", "info":
		return slog.LevelInfo, nil
	case "debug":
		return slog.LevelDebug, nil
	case "warn", "warning":
		return slog.LevelWarn, nil
	case "error":
		return slog.LevelError, nil
	}
	return slog.LevelInfo, fmt.Errorf("%s=%q is invalid: use debug, info, warn or error", contract.EnvLogLevel, v)
}

// Logger returns the JSON logger the functions use.
func Logger(w io.Writer, level slog.Level) *slog.Logger {
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level}))
}

// LoadSharding reads EVENTS_SHARDING: "on" or "off", empty is off.
func LoadSharding(getenv func(string) string) (bool, error) {
	switch v := strings.ToLower(strings.TrimSpace(getenv(contract.EnvEventsSharding))); v {
	case "", "off":
		return false, nil
	case "on":
		return true, nil
	}
	return false, fmt.Errorf("%s=%q is invalid: use on or off", contract.EnvEventsSharding, getenv(contract.EnvEventsSharding))
}

// loadEventsProfile reads EVENTS_PROFILE (schema.ParseEventsProfile).
func loadEventsProfile(getenv func(string) string) (schema.EventsProfile, error) {
	p, err := schema.ParseEventsProfile(strings.TrimSpace(getenv(contract.EnvEventsProfile)))
	if err != nil {
		return "", fmt.Errorf("%s: %w", contract.EnvEventsProfile, err)
	}
	return p, nil
}

// checkQueueURL reports a set queue variable name=v that is not an SQS
// queue URL (a queue's name or ARN, say: the SDK takes neither), naming
// the fix; unset adds what leaving it unset means.
func checkQueueURL(name, v, unset string) error {
	if u, err := url.Parse(v); err == nil && (u.Scheme == "https" || u.Scheme == "http") && u.Host != "" {
		return nil
	}
	return fmt.Errorf("%s=%q is not a queue URL: use https://sqs.<region>.amazonaws.com/<account>/<queue>%s", name, v, unset)
}
