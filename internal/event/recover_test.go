package event_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/internal/event"
)

func TestParseRecover(t *testing.T) {
	now := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	day := 24 * time.Hour
	got, err := event.ParseRecover([]byte(`{"since":"2026-11-22T10:00:00+02:00"}`), now, 30*day)
	require.NoError(t, err)
	assert.Equal(t, event.Recover{Since: time.Date(2026, 11, 22, 8, 0, 0, 0, time.UTC), Until: now}, got, "until defaults to now; times in UTC")
	got, err = event.ParseRecover([]byte(`{"since":"2026-11-22T10:00:00.1234567Z","until":"2026-11-23T10:00:30Z"}`), now, 30*day)
	require.NoError(t, err)
	assert.Equal(t, event.Recover{Since: time.Date(2026, 11, 22, 10, 0, 0, 123456000, time.UTC), Until: now.Add(30 * time.Second)}, got, "microseconds; until within the skew")

	for _, c := range []struct{ body, code, mentions string }{
		{`{}`, event.CodeInvalidRecover, "since is required"},
		{`{"until":"2026-11-23T09:00:00Z"}`, event.CodeInvalidRecover, "since is required"},
		{`{"since":null}`, event.CodeInvalidRecover, "since is null"},
		{`{"since":"2026-11-22T10:00:00Z","until":null}`, event.CodeInvalidRecover, "until is null"},
		{`{"since":"2026-11-22"}`, event.CodeInvalidRecover, "since is not an RFC 3339 time"},
		{`{"since":"2026-11-22T10:00:00"}`, event.CodeInvalidRecover, "since is not an RFC 3339 time"},
		{`{"since":"2026-11-22T10:00:00Z","until":"yesterday"}`, event.CodeInvalidRecover, "until is not an RFC 3339 time"},
		{`{"since":"2026-11-22T10:00:00Z","until":"2026-11-23T10:02:00Z"}`, event.CodeInvalidRecover, "until 2026-11-23T10:02:00.000000Z is in the future"},
		{`{"since":"2026-11-23T09:00:00Z","until":"2026-11-23T09:00:00Z"}`, event.CodeInvalidRecover, "since 2026-11-23T09:00:00.000000Z is not before until"},
		{`{"since":"2026-11-23T09:30:00Z","until":"2026-11-23T09:00:00Z"}`, event.CodeInvalidRecover, "is not before until"},
		{`{"since":"2026-10-01T00:00:00Z"}`, event.CodeInvalidRecover, "since 2026-10-01T00:00:00.000000Z is older than the event retention (30 days)"},
		{`{"since":1700000000}`, event.CodeInvalidJSON, ""},
		{`{"since":"2026-11-22T10:00:00Z","extra":1}`, event.CodeInvalidJSON, ""},
		{`{"since":"2026-11-22T10:00:00Z","since":"2026-11-22T11:00:00Z"}`, event.CodeInvalidJSON, ""},
		{`{"SINCE":"2026-11-22T10:00:00Z"}`, event.CodeInvalidJSON, ""},
		{`[]`, event.CodeInvalidJSON, ""},
		{`{"since":"2026-11-22T10:00:00Z"} {}`, event.CodeInvalidJSON, ""},
		{"{\"since\":\"\xff\"}", event.CodeInvalidJSON, ""},
		{``, event.CodeInvalidJSON, ""},
	} {
		_, err := event.ParseRecover([]byte(c.body), now, 30*day)
		var in *event.InputError
		require.True(t, errors.As(err, &in), "ParseRecover(%s) = %v, want an InputError", c.body, err)
		assert.Equal(t, c.code, in.Code, "ParseRecover(%s): %s", c.body, in.Message)
		assert.Contains(t, in.Message, c.mentions, "ParseRecover(%s)", c.body)
	}
}
