package event_test

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/internal/event"
)

func TestIDCarriesMicrosecondTimestamp(t *testing.T) {
	times := []time.Time{
		time.Date(2025, 11, 11, 10, 30, 45, 123456789, time.UTC),
		time.Date(2025, 11, 11, 10, 30, 45, 999999000, time.UTC),
		time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 999999000, time.UTC),
		time.Date(2026, 1, 2, 3, 4, 5, 6000, time.FixedZone("x", 3600)),
	}
	for _, tm := range times {
		id, ts, err := event.NewID(tm, nil)
		require.NoError(t, err, "NewID(%s)", tm)
		assert.Equal(t, tm.Truncate(time.Microsecond).UTC(), ts, "NewID(%s) timestamp", tm)
		assert.Regexp(t, `^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`, id)
		got, err := event.ParseID(id)
		require.NoError(t, err, "ParseID(%s)", id)
		assert.Equal(t, ts, got, "ParseID(NewID(%s))", tm)
		sk, err := event.SortKeyForID(id)
		require.NoError(t, err)
		assert.Equal(t, event.FormatTime(tm)+"#"+id, sk)
	}
	_, _, err := event.NewID(time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), nil)
	assert.Error(t, err, "NewID after year 9999")
	_, _, err = event.NewID(time.Unix(-1, 0), nil)
	assert.Error(t, err, "NewID before 1970")
	_, _, err = event.NewID(time.Now(), bytes.NewReader(nil))
	assert.Error(t, err, "NewID with a failing random source")
}

func TestIDsSortLikeTimestamps(t *testing.T) {
	base := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	prev := ""
	for i := 0; i < 2000; i += 7 {
		_, ts, err := event.NewID(base.Add(time.Duration(i)*time.Microsecond), nil)
		require.NoError(t, err)
		s := event.FormatTime(ts)
		assert.Greater(t, s, prev)
		prev = s
	}
}

func TestParseIDRejects(t *testing.T) {
	id, _, err := event.NewID(time.Now(), nil)
	require.NoError(t, err)
	bad := []string{
		"",
		"550e8400-e29b-41d4-a716-446655440000", // UUIDv4
		strings.ToUpper(id),
		id[:35],
		id + "0",
		strings.ReplaceAll(id, "-", ""),
		id[:8] + "_" + id[9:],
		id[:14] + "73e8" + id[18:],             // rand_a 1000 (> 999)
		"01a2054b-f8ba-7375-c175-608e01a3eb60", // variant 110
		"ffffffff-ffff-7000-8000-000000000000", // after year 9999
		"01a2054b-f8ba-7375-9175-608e01a3eb6g",
		"../../../etc/passwd-xxxxxxxxxxxxxxxxx",
	}
	for _, s := range bad {
		_, err := event.ParseID(s)
		assert.ErrorIs(t, err, event.ErrInvalidID, "ParseID(%q)", s)
	}
}

func TestStatusMachine(t *testing.T) {
	allowed := map[[2]event.Status]bool{
		{event.Received, event.Delivered}: true,
		{event.Received, event.Failed}:    true,
		{event.Failed, event.Retrying}:    true,
		{event.Retrying, event.Delivered}: true,
		{event.Retrying, event.Failed}:    true,
	}
	for _, from := range event.Statuses {
		for _, to := range event.Statuses {
			assert.Equal(t, allowed[[2]event.Status{from, to}], event.CanTransition(from, to), "CanTransition(%s, %s)", from, to)
		}
	}
	assert.Empty(t, event.Sources(event.Received))
	assert.Equal(t, []event.Status{event.Received, event.Retrying}, event.Sources(event.Delivered))
	assert.Equal(t, []event.Status{event.Received, event.Retrying}, event.Sources(event.Failed))
	assert.Equal(t, []event.Status{event.Failed}, event.Sources(event.Retrying))
	assert.False(t, event.Status("pending").Valid())
}

func TestValidNumber(t *testing.T) {
	ok := []string{"0", "-0", "0.0", "0e125", "1", "-1", "0.1", "1e2", "1E+2", "1.5e-3",
		"12345678901234567890123456789012345678", "1234567890123456789012345678901234567800000",
		"0.00012345678901234567890123456789012345678", "1e125", "9.9999999999999999999999999999999999999e125",
		"1e-130", "-1e-130", "10e-131", "0.1e126", "100e123"}
	bad := []string{"123456789012345678901234567890123456789", "1e126", "10e125", "0.1e127", "1e-131", "0.1e-130",
		"-1e126", "1e9999999999", "1e-9999999999", "0e999999999999", "", "-", "1e", "abc", "1.2.3", "1e+", "--1", "NaN", "Infinity"}
	for _, s := range ok {
		assert.NoError(t, event.ValidNumber(s), "ValidNumber(%q)", s)
	}
	for _, s := range bad {
		assert.Error(t, event.ValidNumber(s), "ValidNumber(%q)", s)
	}
}

func TestValidNames(t *testing.T) {
	for s, want := range map[string]bool{
		"user.created": true, "a": true, "A1_b-c:d.e": true, strings.Repeat("a", 128): true,
		"": false, ".a": false, "a b": false, "a#b": false, "é": false, strings.Repeat("a", 129): false,
	} {
		assert.Equal(t, want, event.ValidEventType(s), "ValidEventType(%q)", s)
	}
	for s, want := range map[string]bool{
		"tenant-a": true, "t": true, "org:123.x_y": true,
		"": false, "a#b": false, "idempotency#x": false, "-a": false, strings.Repeat("t", 129): false,
	} {
		assert.Equal(t, want, event.ValidTenantID(s), "ValidTenantID(%q)", s)
	}
}

func TestParseCreate(t *testing.T) {
	r, err := event.ParseCreate([]byte(`{"event_type":"a.b","payload":{"n":1.50,"big":123456789012345678901234567890}}`))
	require.NoError(t, err)
	assert.Equal(t, "a.b", r.EventType)
	assert.Equal(t, &types.AttributeValueMemberN{Value: "1.50"}, r.Payload["n"])
	assert.Equal(t, &types.AttributeValueMemberN{Value: "123456789012345678901234567890"}, r.Payload["big"])

	_, err = event.ParseCreate([]byte(`{"event_type":"a","payload":{"x":` + strings.Repeat("[", 40) + strings.Repeat("]", 40) + `}}`))
	var ie *event.InputError
	require.ErrorAs(t, err, &ie)
	assert.Equal(t, event.CodeInvalidPayload, ie.Code)
}

func TestParseListQueryDefaults(t *testing.T) {
	p, err := event.ParseListQuery(nil)
	require.NoError(t, err)
	assert.Equal(t, event.ListParams{Status: event.Received, Limit: 50}, p)
	assert.Equal(t, "status=received&event_type=&order=desc", p.Shape())
	p.Status, p.Ascending, p.EventType = "", true, "x"
	assert.Equal(t, "status=all&event_type=x&order=asc", p.Shape())
}

func TestNewEvent(t *testing.T) {
	now := time.Date(2025, 11, 11, 10, 30, 45, 123456789, time.UTC)
	e, err := event.New(event.CreateRequest{EventType: "t", Payload: event.Payload{}}, now, time.Hour, event.Metadata{SourceIP: "1.2.3.4", CorrelationID: "c"})
	require.NoError(t, err)
	assert.Equal(t, "2025-11-11T10:30:45.123456Z", e.Timestamp)
	assert.Equal(t, now.Add(time.Hour).Unix(), e.TTL)
	assert.Equal(t, event.Metadata{SourceIP: "1.2.3.4", APIVersion: "v1", CorrelationID: "c"}, e.Metadata)
	assert.Equal(t, event.Received, e.Status)
	assert.False(t, e.Expired(now))
	assert.True(t, e.Expired(now.Add(2*time.Hour)))
	assert.Equal(t, e.Timestamp+"#"+e.ID, e.SortKey())
}

// An event expires after the second its ttl names, as the store's filters
// (#ttl < :now) and DynamoDB ("older than the current time") read it.
func TestExpiredBoundary(t *testing.T) {
	e := event.Event{TTL: 1_700_000_000}
	at := time.Unix(e.TTL, 0)
	for _, tt := range []struct {
		now  time.Time
		want bool
	}{
		{at.Add(-time.Second), false},
		{at, false},
		{at.Add(999 * time.Millisecond), false},
		{at.Add(time.Second), true},
	} {
		if got := e.Expired(tt.now); got != tt.want {
			t.Errorf("Event{TTL: %d}.Expired(%d) = %v, want %v", e.TTL, tt.now.Unix(), got, tt.want)
		}
	}
}

// The messages name the rule and the place exactly.
func TestParseCreateMessages(t *testing.T) {
	for _, tt := range []struct{ body, code, msg string }{
		{`{"event_type":"x"}`, event.CodeInvalidPayload, "payload is missing or null: send a JSON object"},
		{`{"event_type":"x","payload":null}`, event.CodeInvalidPayload, "payload is missing or null: send a JSON object"},
		{`{"event_type":"x","payload":[]}`, event.CodeInvalidPayload, "payload must be a JSON object, not an array"},
		{`{"event_type":"x","payload":{"a":[{"":1}]}}`, event.CodeInvalidPayload, "payload.a[0] has an empty key: DynamoDB cannot store empty attribute names"},
		{`{"event_type":"x","payload":{"":1}}`, event.CodeInvalidPayload, "payload has an empty key: DynamoDB cannot store empty attribute names"},
	} {
		_, err := event.ParseCreate([]byte(tt.body))
		var ie *event.InputError
		if !errors.As(err, &ie) || ie.Code != tt.code || ie.Message != tt.msg {
			t.Errorf("ParseCreate(%s) = %v, want %s: %s", tt.body, err, tt.code, tt.msg)
		}
	}
}

// A batch holds 1 to MaxBatch entries.
func TestParseBatchSize(t *testing.T) {
	batch := func(n int) []byte {
		return []byte(`{"events":[` + strings.TrimSuffix(strings.Repeat(`{"event_type":"x","payload":{}},`, n), ",") + `]}`)
	}
	for _, n := range []int{1, event.MaxBatch} {
		reqs, _, err := event.ParseBatch(batch(n))
		if err != nil || len(reqs) != n {
			t.Errorf("ParseBatch(%d entries) = %d, %v; want %d entries", n, len(reqs), err, n)
		}
	}
	for _, n := range []int{0, event.MaxBatch + 1} {
		_, _, err := event.ParseBatch(batch(n))
		var ie *event.InputError
		if !errors.As(err, &ie) || ie.Code != event.CodeInvalidBatch {
			t.Errorf("ParseBatch(%d entries) = %v, want %s", n, err, event.CodeInvalidBatch)
		}
	}
}

// ParseAck takes 1 to MaxAck ids.
func TestParseAckSize(t *testing.T) {
	ack := func(n int) []byte {
		ids := make([]string, n)
		for i := range ids {
			ids[i] = fmt.Sprintf("%q", fmt.Sprintf("id-%d", i))
		}
		return []byte(`{"event_ids":[` + strings.Join(ids, ",") + `]}`)
	}
	for _, n := range []int{1, event.MaxAck} {
		if ids, err := event.ParseAck(ack(n)); err != nil || len(ids) != n {
			t.Errorf("ParseAck(%d ids) = %d, %v; want %d ids", n, len(ids), err, n)
		}
	}
	for _, n := range []int{0, event.MaxAck + 1} {
		if _, err := event.ParseAck(ack(n)); err == nil {
			t.Errorf("ParseAck(%d ids) accepted", n)
		}
	}
}

// limit is 1 to MaxLimit, written canonically; values in messages are cut
// at 40 bytes, and one of exactly 40 is quoted whole.
func TestParseRawListQueryLimitsAndMessages(t *testing.T) {
	for _, tt := range []struct {
		raw   string
		limit int
		msg   string
	}{
		{"limit=1", 1, ""},
		{"limit=100", 100, ""},
		{"limit=0", 0, `limit "0" is invalid: use a whole number from 1 to 100 in decimal digits only (no sign, leading zero, space, decimal point or exponent)`},
		{"limit=101", 0, `limit "101" is invalid: use a whole number from 1 to 100 in decimal digits only (no sign, leading zero, space, decimal point or exponent)`},
		{"limit=%2B5", 0, `limit "+5" is invalid: use a whole number from 1 to 100 in decimal digits only (no sign, leading zero, space, decimal point or exponent)`},
		{"limit=05", 0, `limit "05" is invalid: use a whole number from 1 to 100 in decimal digits only (no sign, leading zero, space, decimal point or exponent)`},
		{"limit=" + strings.Repeat("0", 41), 0, `limit "` + strings.Repeat("0", 40) + `..." is invalid: use a whole number from 1 to 100 in decimal digits only (no sign, leading zero, space, decimal point or exponent)`},
		{"order=" + strings.Repeat("x", 40), 0, `order "` + strings.Repeat("x", 40) + `" is invalid: use asc or desc`},
		{"order=" + strings.Repeat("x", 41), 0, `order "` + strings.Repeat("x", 40) + `..." is invalid: use asc or desc`},
		{"order=" + strings.Repeat("x", 39) + "é", 0, `order "` + strings.Repeat("x", 39) + `..." is invalid: use asc or desc`},
		{"order=" + strings.Repeat("%80", 41), 0, `order "..." is invalid: use asc or desc`},
	} {
		p, err := event.ParseRawListQuery(tt.raw)
		if tt.msg == "" {
			if err != nil || p.Limit != tt.limit {
				t.Errorf("ParseRawListQuery(%q) = limit %d, %v; want limit %d", tt.raw, p.Limit, err, tt.limit)
			}
			continue
		}
		var ie *event.InputError
		if !errors.As(err, &ie) || ie.Code != event.CodeInvalidParameter || ie.Message != tt.msg {
			t.Errorf("ParseRawListQuery(%q) = %v, want invalid_parameter: %s", tt.raw, err, tt.msg)
		}
	}
}

// Seed 000: events expire 30 days after they are received.
func TestDefaultRetentionIsThirtyDays(t *testing.T) {
	if event.DefaultRetention != 720*time.Hour {
		t.Errorf("DefaultRetention = %v, want 720h (30 days)", event.DefaultRetention)
	}
}
