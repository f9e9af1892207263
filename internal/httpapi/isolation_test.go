package httpapi_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/internal/event"
)

func TestTenantIsolation(t *testing.T) {
	e := newEnv(t)
	a := seedInbox(t, e, "tenant-a", 4)
	bOwn := e.post("tenant-b", "type.a", `{"mine":true}`)

	// List: B sees only its own event, whatever the query.
	for _, q := range []string{"", "status=all", "event_type=type.a", "event_type=type.b&status=all", "status=delivered", "order=asc&limit=1"} {
		got := e.all("tenant-b", q)
		for _, id := range got {
			assert.Equal(t, bOwn.ID, id, "tenant-b listed %s with ?%s", id, q)
		}
	}
	// Get, patch, ack of A's events by B: 404 / unknown, nothing changes.
	for _, ev := range a {
		r := e.do(req{method: "GET", path: "/v1/events/" + ev.ID, tenant: "tenant-b"})
		assert.Equal(t, http.StatusNotFound, r.code, "tenant-b GET tenant-a's event = %d %s", r.code, r.body)
		for _, to := range []string{"delivered", "failed", "retrying", "received"} {
			r = e.do(req{method: "PATCH", path: "/v1/events/" + ev.ID, tenant: "tenant-b", body: `{"status":"` + to + `"}`})
			assert.Equal(t, http.StatusNotFound, r.code, "tenant-b PATCH tenant-a's event to %s = %d %s", to, r.code, r.body)
		}
	}
	r := e.do(req{method: "POST", path: "/v1/inbox/ack", tenant: "tenant-b", body: fmt.Sprintf(`{"event_ids":[%q,%q]}`, a[0].ID, a[1].ID)})
	require.Equal(t, http.StatusOK, r.code)
	assert.JSONEq(t, fmt.Sprintf(`{"delivered":[],"already_delivered":[],"unknown":[%q,%q],"conflicts":[]}`, a[0].ID, a[1].ID), string(r.body))
	for _, ev := range a {
		got, err := e.store.Get(context.Background(), "tenant-a", ev.ID)
		require.NoError(t, err)
		assert.Equal(t, event.Received, got.Status, "tenant-b changed tenant-a's event")
		assert.Equal(t, 0, got.RetryCount)
	}
	assert.Equal(t, ids(a[3], a[2], a[1], a[0]), e.all("tenant-a", ""), "tenant-a's inbox")

	// Cursors: A's cursor replayed by B is rejected, for every query shape.
	for _, q := range []string{"limit=1", "status=all&limit=1", "event_type=type.a&limit=1"} {
		_, p := e.inbox("tenant-a", q)
		require.NotNil(t, p.NextCursor, "?%s: want a cursor", q)
		r, _ := e.inbox("tenant-b", q+"&cursor="+url.QueryEscape(*p.NextCursor))
		assert.Equal(t, http.StatusBadRequest, r.code, "tenant-b replaying tenant-a's cursor (?%s) = %d %s", q, r.code, r.body)
		assert.Equal(t, "invalid_cursor", r.errCode(t))
		assert.NotContains(t, string(r.body), a[0].ID)
	}
	// B's own cursors never lead into A's data: the cursor does not carry
	// the tenant, the request does.
	assert.Equal(t, []string{bOwn.ID}, e.all("tenant-b", "limit=1&status=all"))
}

func TestTenantIDsAreChecked(t *testing.T) {
	e := newEnv(t)
	for _, tenant := range []string{"a#b", "idempotency#x", strings.Repeat("t", 129), " x"} {
		r := e.do(req{method: "GET", path: "/v1/inbox", tenant: tenant})
		assert.Equal(t, http.StatusUnauthorized, r.code, "tenant %q = %d, want 401", tenant, r.code)
	}
}

func TestExpiredEventsAreHidden(t *testing.T) {
	e := newEnv(t)
	// An API whose clock is 31 days back writes events whose ttl has passed.
	past := newEnvOn(t, e.table, db.Client, withNow(func() time.Time { return time.Now().Add(-31 * 24 * time.Hour) }))
	old := past.post("tenant-a", "type.a", `{"old":true}`)
	oldIdem := past.do(req{method: "POST", path: "/v1/events", tenant: "tenant-a", body: `{"event_type":"type.a","payload":{}}`, headers: map[string]string{"Idempotency-Key": "k"}})
	require.Equal(t, http.StatusCreated, oldIdem.code)
	live := e.post("tenant-a", "type.a", `{"old":false}`)
	require.True(t, mustTime(old.Timestamp).Before(mustTime(live.Timestamp)))

	for _, q := range []string{"", "status=all", "event_type=type.a", "event_type=type.a&status=all", "order=asc"} {
		assert.Equal(t, []string{live.ID}, e.all("tenant-a", q), "?%s lists an expired event", q)
	}
	r := e.do(req{method: "GET", path: "/v1/events/" + old.ID, tenant: "tenant-a"})
	assert.Equal(t, http.StatusNotFound, r.code, "GET expired = %d %s", r.code, r.body)
	r = e.do(req{method: "PATCH", path: "/v1/events/" + old.ID, tenant: "tenant-a", body: `{"status":"delivered"}`})
	assert.Equal(t, http.StatusNotFound, r.code, "PATCH expired = %d %s", r.code, r.body)
	r = e.do(req{method: "POST", path: "/v1/inbox/ack", tenant: "tenant-a", body: fmt.Sprintf(`{"event_ids":[%q]}`, old.ID)})
	assert.JSONEq(t, fmt.Sprintf(`{"delivered":[],"already_delivered":[],"unknown":[%q],"conflicts":[]}`, old.ID), string(r.body))

	// An expired idempotency record no longer deduplicates.
	again := e.do(req{method: "POST", path: "/v1/events", tenant: "tenant-a", body: `{"event_type":"type.a","payload":{}}`, headers: map[string]string{"Idempotency-Key": "k"}})
	assert.Equal(t, http.StatusCreated, again.code, "key with an expired record = %d %s", again.code, again.body)
	assert.NotEqual(t, oldIdem.event(t).ID, again.event(t).ID)
}

func TestExpiredEventsDoNotShortenPagesSilently(t *testing.T) {
	e := newEnv(t)
	past := newEnvOn(t, e.table, db.Client, withNow(func() time.Time { return time.Now().Add(-31 * 24 * time.Hour) }))
	var live []string
	for i := 0; i < 6; i++ {
		live = append(live, e.post("tenant-a", "t", `{}`).ID)
	}
	for i := 0; i < 6; i++ {
		past.post("tenant-a", "t", `{}`)
	}
	// Oldest first: six expired events come before the live ones.
	r, p := e.inbox("tenant-a", "order=asc&limit=4")
	require.Equal(t, http.StatusOK, r.code)
	assert.Equal(t, live[:4], ids(p.Events...), "the page is topped up past expired events")
	assert.Equal(t, live, e.all("tenant-a", "order=asc&limit=4"))
}
