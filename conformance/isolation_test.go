package conformance

import (
	"net/http"
	"net/url"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Tenant B can neither see nor change tenant A's events on any route, nor
// use A's cursors or collide with A's idempotency keys.
func TestTenantIsolation(t *testing.T) {
	tg := api(t)
	tg.writes(t)
	a, b := tg.key, tg.key2
	typ := unique("isolation")
	idem := unique("idem")
	evA := tg.post(t, a, typ, `{"secret":"tenant a"}`, "Idempotency-Key", idem)

	// Read and change by id.
	r := tg.do(t, "GET", "/v1/events/"+evA.ID, bearer(b), nil)
	assert.Equal(t, http.StatusNotFound, r.Status, "B reads A's event: %s", r)
	assert.Equal(t, "not_found", r.ErrorCode())
	r = tg.do(t, "PATCH", "/v1/events/"+evA.ID, jsonBearer(b), []byte(`{"status":"failed"}`))
	assert.Equal(t, http.StatusNotFound, r.Status, "B changes A's event: %s", r)
	r = tg.do(t, "POST", "/v1/inbox/ack", jsonBearer(b), []byte(`{"event_ids":["`+evA.ID+`"]}`))
	require.Equal(t, http.StatusOK, r.Status, "%s", r)
	ack := r.JSON(t)
	assert.Equal(t, []any{evA.ID}, ack["unknown"], "B acks A's event: %s", r)
	assert.Empty(t, ack["delivered"], "B acks A's event: %s", r)

	// A's event is untouched.
	r = tg.do(t, "GET", "/v1/events/"+evA.ID, bearer(a), nil)
	require.Equal(t, http.StatusOK, r.Status, "%s", r)
	assert.Equal(t, "received", decodeEvent(t, r).Status, "after B's PATCH and ack")

	// Inbox: every status, every filter.
	for _, q := range []string{"", "status=all", "status=received", "event_type=" + typ, "event_type=" + typ + "&status=all", "order=asc&status=all"} {
		for _, e := range tg.all(t, b, q, 100) {
			assert.NotEqual(t, evA.ID, e.ID, "B's inbox (%s) lists A's event", q)
		}
	}
	eventually(t, "A's inbox lists its event", func() (bool, string) {
		got := ids(tg.all(t, a, "event_type="+typ, 100))
		return slices.Equal(got, []string{evA.ID}), "got " + join(got)
	})

	// Idempotency keys are per tenant: B's use of A's key stores B's event.
	r = tg.do(t, "POST", "/v1/events", jsonBearer(b, "Idempotency-Key", idem), []byte(`{"event_type":"`+typ+`","payload":{"secret":"tenant a"}}`))
	require.Equal(t, http.StatusCreated, r.Status, "B with A's idempotency key: %s", r)
	evB := decodeEvent(t, r)
	assert.NotEqual(t, evA.ID, evB.ID, "B got A's event through the idempotency key")
	r = tg.do(t, "POST", "/v1/events", jsonBearer(a, "Idempotency-Key", idem), []byte(`{"event_type":"`+typ+`","payload":{"secret":"tenant a"}}`))
	require.Equal(t, http.StatusOK, r.Status, "A's repeat: %s", r)
	assert.Equal(t, evA.ID, decodeEvent(t, r).ID, "A's repeat returns A's event")
	r = tg.do(t, "GET", "/v1/events/"+evB.ID, bearer(a), nil)
	assert.Equal(t, http.StatusNotFound, r.Status, "A reads B's event: %s", r)

	// Cursors are bound to their tenant (and query), and cannot be forged.
	typ2 := unique("cursor")
	for i := 0; i < 3; i++ {
		tg.post(t, a, typ2, `{}`)
	}
	q := "event_type=" + typ2 + "&limit=1"
	var cursor string
	eventually(t, "A's first page has a next_cursor", func() (bool, string) {
		p, r := tg.inbox(t, a, q)
		if p.NextCursor == nil || len(p.Events) != 1 {
			return false, r.String()
		}
		cursor = *p.NextCursor
		return true, ""
	})
	_, r = tg.inbox(t, b, q+"&cursor="+url.QueryEscape(cursor))
	assert.Equal(t, http.StatusBadRequest, r.Status, "B with A's cursor: %s", r)
	assert.Equal(t, "invalid_cursor", r.ErrorCode())
	_, r = tg.inbox(t, a, "event_type="+typ+"&limit=1&cursor="+url.QueryEscape(cursor))
	assert.Equal(t, http.StatusBadRequest, r.Status, "A's cursor with another query: %s", r)
	tampered := []byte(cursor)
	tampered[len(tampered)/2] ^= 1
	_, r = tg.inbox(t, a, q+"&cursor="+url.QueryEscape(string(tampered)))
	assert.Equal(t, http.StatusBadRequest, r.Status, "tampered cursor: %s", r)
	_, r = tg.inbox(t, a, q+"&cursor="+url.QueryEscape(cursor))
	assert.Equal(t, http.StatusOK, r.Status, "A's own cursor: %s", r)

	// Batch entries land in the caller's tenant only.
	r = tg.do(t, "POST", "/v1/events/batch", jsonBearer(b), []byte(`{"events":[{"event_type":"`+typ+`","payload":{}}]}`))
	require.Equal(t, http.StatusMultiStatus, r.Status, "%s", r)
	eventually(t, "A's inbox holds only A's event", func() (bool, string) {
		got := ids(tg.all(t, a, "event_type="+typ+"&status=all", 100))
		return slices.Equal(got, []string{evA.ID}), "got " + join(got)
	})
}

func join(s []string) string {
	out := "["
	for i, v := range s {
		if i > 0 {
			out += " "
		}
		out += v
	}
	return out + "]"
}
