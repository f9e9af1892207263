package fnconfig_test

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/triggers-dev/triggers/contract"
	"github.com/triggers-dev/triggers/schema"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/lambda/fnconfig"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestLoadAPI(t *testing.T) {
	secret := strings.Repeat("k", 32)
	c, err := fnconfig.LoadAPI(env(map[string]string{"EVENTS_TABLE": "ev", "CURSOR_SECRET": secret}))
	require.NoError(t, err)
	assert.Equal(t, fnconfig.API{EventsTable: "ev", EventsProfile: schema.ProfileSeed, CursorSecret: []byte(secret), Retention: 30 * 24 * time.Hour, LogLevel: slog.LevelInfo, KeySources: contract.KeySourcesBearer, RoundHold: contract.DefaultRoundHold}, c, "API_KEY_SOURCES unset: Bearer only, the safe default")

	c, err = fnconfig.LoadAPI(env(map[string]string{"EVENTS_TABLE": "ev", "CURSOR_SECRET": secret, "RETENTION_DAYS": "7", "LOG_LEVEL": "DEBUG", "DYNAMODB_ENDPOINT": "http://localhost:8000", "METRICS_NAMESPACE": "Triggers/prod-api", "API_KEY_SOURCES": "authorization,x-api-key", "EVENTS_PROFILE": " lean "}))
	require.NoError(t, err)
	assert.Equal(t, schema.ProfileLean, c.EventsProfile)
	assert.Equal(t, contract.KeySourcesBearerOrHeader, c.KeySources)
	assert.Equal(t, "Triggers/prod-api", c.MetricsNamespace)
	assert.Equal(t, 7*24*time.Hour, c.Retention)
	assert.Equal(t, slog.LevelDebug, c.LogLevel)
	assert.Equal(t, "http://localhost:8000", c.Endpoint)

	c, err = fnconfig.LoadAPI(env(map[string]string{"EVENTS_TABLE": "ev", "CURSOR_SECRET_ARN": " arn:aws:secretsmanager:us-east-1:1:secret:c "}))
	require.NoError(t, err)
	assert.Equal(t, "arn:aws:secretsmanager:us-east-1:1:secret:c", c.CursorSecretARN)
	assert.Empty(t, c.CursorSecret)

	c, err = fnconfig.LoadAPI(env(map[string]string{"EVENTS_TABLE": "ev", "CURSOR_SECRET": secret, "WRITER_REGION": " us-east-1 ", "AWS_REGION": "eu-west-1"}))
	require.NoError(t, err)
	assert.Equal(t, "us-east-1", c.WriterRegion)
	assert.Equal(t, "eu-west-1", c.Region)

	c, err = fnconfig.LoadAPI(env(map[string]string{"EVENTS_TABLE": "ev", "CURSOR_SECRET": secret,
		"CORS_ALLOW_ORIGINS": " https://a.example , https://b.example:8443,", "CORS_ALLOW_CREDENTIALS": "true", "CORS_EXPOSE_HEADERS": "X-Custom"}))
	require.NoError(t, err)
	assert.Equal(t, &contract.CORS{AllowOrigins: []string{"https://a.example", "https://b.example:8443"}, AllowCredentials: true, ExposeHeaders: []string{"X-Custom"}}, c.CORS)

	tests := []struct {
		name string
		env  map[string]string
		want []string
	}{
		{"nothing", nil, []string{"EVENTS_TABLE", "CURSOR_SECRET_ARN"}},
		{"CORS origin with a path", map[string]string{"EVENTS_TABLE": "ev", "CURSOR_SECRET": secret, "CORS_ALLOW_ORIGINS": "https://a.example/"}, []string{`CORS_ALLOW_ORIGINS: CORS origin "https://a.example/" has a path`}},
		{"CORS credentials not a boolean", map[string]string{"EVENTS_TABLE": "ev", "CURSOR_SECRET": secret, "CORS_ALLOW_ORIGINS": "*", "CORS_ALLOW_CREDENTIALS": "yes"}, []string{`CORS_ALLOW_CREDENTIALS="yes" is invalid: use true or false`}},
		{"CORS headers without origins", map[string]string{"EVENTS_TABLE": "ev", "CURSOR_SECRET": secret, "CORS_EXPOSE_HEADERS": "X-A"}, []string{"is set without CORS_ALLOW_ORIGINS"}},
		{"writer region without own region", map[string]string{"EVENTS_TABLE": "ev", "CURSOR_SECRET": secret, "WRITER_REGION": "us-east-1"}, []string{`WRITER_REGION="us-east-1" is set but AWS_REGION is not`}},
		{"both secrets", map[string]string{"EVENTS_TABLE": "ev", "CURSOR_SECRET": secret, "CURSOR_SECRET_ARN": "arn:x"}, []string{"only one"}},
		{"short secret", map[string]string{"EVENTS_TABLE": "ev", "CURSOR_SECRET": "short"}, []string{"CURSOR_SECRET is 5 bytes"}},
		{"bad retention", map[string]string{"EVENTS_TABLE": "ev", "CURSOR_SECRET": secret, "RETENTION_DAYS": "0"}, []string{"RETENTION_DAYS"}},
		{"bad namespace", map[string]string{"EVENTS_TABLE": "ev", "CURSOR_SECRET": secret, "METRICS_NAMESPACE": "AWS/Lambda"}, []string{"METRICS_NAMESPACE", "reserved"}},
		{"bad profile", map[string]string{"EVENTS_TABLE": "ev", "CURSOR_SECRET": secret, "EVENTS_PROFILE": "slim"}, []string{`EVENTS_PROFILE: events table profile "slim" is not known: use "seed" (the default) or "lean"`}},
		{"bad level", map[string]string{"EVENTS_TABLE": "ev", "CURSOR_SECRET": secret, "LOG_LEVEL": "loud"}, []string{"LOG_LEVEL"}},
		{"bad key sources", map[string]string{"EVENTS_TABLE": "ev", "CURSOR_SECRET": secret, "API_KEY_SOURCES": "x-api-key"}, []string{"API_KEY_SOURCES", "x-api-key"}},
	}
	for _, tt := range tests {
		_, err := fnconfig.LoadAPI(env(tt.env))
		require.Error(t, err, tt.name)
		for _, w := range tt.want {
			assert.Contains(t, err.Error(), w, tt.name)
		}
	}
}

func TestLoadAuthorizer(t *testing.T) {
	c, err := fnconfig.LoadAuthorizer(env(map[string]string{"API_KEYS_TABLE": "keys", "LOG_LEVEL": "warn"}))
	require.NoError(t, err)
	assert.Equal(t, fnconfig.Authorizer{APIKeysTable: "keys", LogLevel: slog.LevelWarn, KeySources: contract.KeySourcesBearer}, c)
	c, err = fnconfig.LoadAuthorizer(env(map[string]string{"API_KEYS_TABLE": "keys", "API_KEY_SOURCES": "Authorization, X-Api-Key"}))
	require.NoError(t, err)
	assert.Equal(t, contract.KeySourcesBearerOrHeader, c.KeySources)
	_, err = fnconfig.LoadAuthorizer(env(nil))
	assert.ErrorContains(t, err, "API_KEYS_TABLE")
	_, err = fnconfig.LoadAuthorizer(env(map[string]string{"API_KEYS_TABLE": "keys", "API_KEY_SOURCES": "cookie"}))
	assert.ErrorContains(t, err, "API_KEY_SOURCES")
}
