package httpapi_test

import (
	"encoding/base64"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/internal/event"
	"github.com/triggers-dev/triggers/internal/httpapi"
)

type page struct {
	Events     []event.Event `json:"events"`
	NextCursor *string       `json:"next_cursor"`
}

func (e *env) inbox(tenant, query string) (resp, page) {
	e.t.Helper()
	r := e.do(req{method: "GET", path: "/v1/inbox?" + query, tenant: tenant})
	var p page
	if r.code == http.StatusOK {
		var raw httpapi.InboxPage
		_ = raw
		require.NoError(e.t, jsonUnmarshal(r.body, &p), "%s", r.body)
	}
	return r, p
}

// all follows cursors and returns every event id of the query.
func (e *env) all(tenant, query string) []string {
	e.t.Helper()
	var ids []string
	cursor := ""
	for i := 0; i < 100; i++ {
		q := query
		if cursor != "" {
			q += "&cursor=" + url.QueryEscape(cursor)
		}
		r, p := e.inbox(tenant, q)
		require.Equal(e.t, http.StatusOK, r.code, "GET /v1/inbox?%s = %d %s", q, r.code, r.body)
		for _, ev := range p.Events {
			ids = append(ids, ev.ID)
		}
		if p.NextCursor == nil {
			return ids
		}
		cursor = *p.NextCursor
	}
	e.t.Fatalf("more than 100 pages for %s", query)
	return nil
}

func ids(events ...event.Event) []string {
	out := make([]string, len(events))
	for i, e := range events {
		out[i] = e.ID
	}
	return out
}

func reversed(s []string) []string {
	out := make([]string, len(s))
	for i, v := range s {
		out[len(s)-1-i] = v
	}
	return out
}

// seed creates events for tenant in time order: types alternate a/b; the
// given indexes are then moved to other statuses.
func seedInbox(t *testing.T, e *env, tenant string, n int) []event.Event {
	t.Helper()
	var evs []event.Event
	for i := 0; i < n; i++ {
		typ := "type.a"
		if i%2 == 1 {
			typ = "type.b"
		}
		evs = append(evs, e.post(tenant, typ, fmt.Sprintf(`{"i":%d}`, i)))
		time.Sleep(time.Millisecond) // distinct, ordered timestamps
	}
	return evs
}

func TestInboxQueries(t *testing.T) {
	e := newEnv(t)
	evs := seedInbox(t, e, "tenant-a", 12)
	// 0, 3 delivered; 5 failed; 7 failed->retrying.
	for _, p := range []struct {
		i  int
		to []string
	}{{0, []string{"delivered"}}, {3, []string{"delivered"}}, {5, []string{"failed"}}, {7, []string{"failed", "retrying"}}} {
		for _, to := range p.to {
			r := e.do(req{method: "PATCH", path: "/v1/events/" + evs[p.i].ID, tenant: "tenant-a", body: `{"status":"` + to + `"}`})
			require.Equal(t, http.StatusOK, r.code, "%s", r.body)
		}
	}
	pick := func(idx ...int) []string {
		var out []string
		for _, i := range idx {
			out = append(out, evs[i].ID)
		}
		return out
	}
	received := pick(1, 2, 4, 6, 8, 9, 10, 11)
	tests := []struct {
		query string
		want  []string
	}{
		{"", reversed(received)},
		{"limit=3", reversed(received)},
		{"order=asc&limit=2", received},
		{"order=desc", reversed(received)},
		{"status=received&limit=1", reversed(received)},
		{"status=delivered", pick(3, 0)},
		{"status=failed&order=asc", pick(5)},
		{"status=retrying", pick(7)},
		{"status=all&limit=5", reversed(ids(evs...))},
		{"status=all&order=asc&limit=4", ids(evs...)},
		{"event_type=type.a", reversed(pick(2, 4, 6, 8, 10))},
		{"event_type=type.b&limit=2&order=asc", pick(1, 9, 11)},
		{"event_type=type.b&status=all", reversed(pick(1, 3, 5, 7, 9, 11))},
		{"event_type=type.b&status=failed", pick(5)},
		{"event_type=type", nil},
		{"event_type=type.c", nil},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			e := e.with(t)
			got := e.all("tenant-a", tt.query)
			if tt.want == nil {
				tt.want = []string{}
			}
			if got == nil {
				got = []string{}
			}
			assert.Equal(t, tt.want, got, "GET /v1/inbox?%s", tt.query)
		})
	}

	r, p := e.inbox("tenant-a", "limit=3")
	require.Equal(t, http.StatusOK, r.code)
	assert.Len(t, p.Events, 3)
	require.NotNil(t, p.NextCursor, "limit=3 of 8: want a next_cursor")
	assert.Equal(t, evs[9].Payload["i"], p.Events[2].Payload["i"], "payload in the page")
	r, p = e.inbox("tenant-a", "status=all&limit=100")
	require.Equal(t, http.StatusOK, r.code)
	assert.Len(t, p.Events, 12)
	assert.Nil(t, p.NextCursor, "the last page has a next_cursor")
	assert.Contains(t, string(r.body), `"next_cursor":null`)
}

func TestInboxDefaultLimit(t *testing.T) {
	e := newEnv(t)
	var batch []string
	for i := 0; i < 25; i++ {
		batch = append(batch, fmt.Sprintf(`{"event_type":"t","payload":{"i":%d}}`, i))
	}
	for j := 0; j < 3; j++ {
		r := e.do(req{method: "POST", path: "/v1/events/batch", tenant: "tenant-a", body: `{"events":[` + join(batch) + `]}`})
		require.Equal(t, http.StatusMultiStatus, r.code)
	}
	_, p := e.inbox("tenant-a", "")
	assert.Len(t, p.Events, event.DefaultLimit)
	assert.NotNil(t, p.NextCursor)
	assert.Len(t, e.all("tenant-a", "limit=100"), 75)
}

func join(s []string) string {
	out := ""
	for i, v := range s {
		if i > 0 {
			out += ","
		}
		out += v
	}
	return out
}

func TestInboxRejectsBadParameters(t *testing.T) {
	e := newEnv(t)
	seedInbox(t, e, "tenant-a", 3)
	_, p := e.inbox("tenant-a", "limit=1")
	require.NotNil(t, p.NextCursor)
	good := *p.NextCursor
	raw, err := base64.RawURLEncoding.DecodeString(good)
	require.NoError(t, err)
	raw[2] ^= 1
	tampered := base64.RawURLEncoding.EncodeToString(raw)

	tests := []struct {
		query, code string
	}{
		{"limit=0", "invalid_parameter"},
		{"limit=101", "invalid_parameter"},
		{"limit=abc", "invalid_parameter"},
		{"limit=1&limit=2", "invalid_parameter"},
		{"order=up", "invalid_parameter"},
		{"status=pending", "invalid_parameter"},
		{"event_type=a%23b", "invalid_parameter"},
		{"colour=red", "invalid_parameter"},
		{"cursor=", "invalid_parameter"},
		{"cursor=not-a-cursor", "invalid_cursor"},
		{"cursor=" + tampered, "invalid_cursor"},
		{"cursor=" + good + "A", "invalid_cursor"},
		// A cursor is bound to its query: status, event type and order.
		{"order=asc&limit=1&cursor=" + good, "invalid_cursor"},
		{"status=all&limit=1&cursor=" + good, "invalid_cursor"},
		{"event_type=type.a&limit=1&cursor=" + good, "invalid_cursor"},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			e := e.with(t)
			r, _ := e.inbox("tenant-a", tt.query)
			assert.Equal(t, http.StatusBadRequest, r.code, "GET /v1/inbox?%s = %d %s", tt.query, r.code, r.body)
			assert.Equal(t, tt.code, r.errCode(t))
		})
	}
	// The limit may change between pages.
	r, _ := e.inbox("tenant-a", "limit=2&cursor="+good)
	assert.Equal(t, http.StatusOK, r.code, "%s", r.body)
}

func TestCursorFromAnotherSecretIsRejected(t *testing.T) {
	e := newEnv(t)
	seedInbox(t, e, "tenant-a", 2)
	_, p := e.inbox("tenant-a", "limit=1")
	require.NotNil(t, p.NextCursor)
	other, err := httpapi.New(httpapi.Config{Store: e.store, CursorSecret: []byte("another-secret-another-secret-another"), Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))})
	require.NoError(t, err)
	e2 := &env{t: t, table: e.table, store: e.store, api: other}
	r, _ := e2.inbox("tenant-a", "limit=1&cursor="+*p.NextCursor)
	assert.Equal(t, http.StatusBadRequest, r.code, "%s", r.body)
}
