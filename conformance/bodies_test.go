package conformance

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func nested(depth int) string {
	return strings.Repeat(`{"a":`, depth) + "1" + strings.Repeat("}", depth)
}

// Hostile and invalid input is a 4xx with the contract's error, never a 5xx
// (do checks the shape and the absence of 5xx on every answer).
func TestHostileBodies(t *testing.T) {
	tg := api(t)
	tg.writes(t) // a server that wrongly accepts them would store events
	ev := func(payload string) string { return `{"event_type":"conformance.hostile","payload":` + payload + `}` }
	big := `{"event_type":"conformance.hostile","payload":{"s":"` + strings.Repeat("x", 256<<10) + `"}}`
	cases := []struct {
		name, method, path, ctype, body string
		want                            int
	}{
		{"empty body", "POST", "/v1/events", "", ``, 400},
		{"not JSON", "POST", "/v1/events", "", `event_type=a`, 400},
		{"truncated", "POST", "/v1/events", "", `{"event_type":"a","payload":{`, 400},
		{"array", "POST", "/v1/events", "", `[]`, 400},
		{"null", "POST", "/v1/events", "", `null`, 400},
		{"trailing data", "POST", "/v1/events", "", ev(`{}`) + ` {}`, 400},
		{"unknown field", "POST", "/v1/events", "", `{"event_type":"a","payload":{},"tenant":"other"}`, 400},
		{"duplicate member", "POST", "/v1/events", "", `{"event_type":"a","event_type":"b","payload":{}}`, 400},
		{"duplicate member in payload", "POST", "/v1/events", "", ev(`{"k":1,"k":2}`), 400},
		{"lone surrogate", "POST", "/v1/events", "", ev(`{"k":"\ud800"}`), 400},
		{"event_type missing", "POST", "/v1/events", "", `{"payload":{}}`, 400},
		{"event_type empty", "POST", "/v1/events", "", `{"event_type":"","payload":{}}`, 400},
		{"event_type 129 chars", "POST", "/v1/events", "", `{"event_type":"` + strings.Repeat("a", 129) + `","payload":{}}`, 400},
		{"event_type with #", "POST", "/v1/events", "", `{"event_type":"a#b","payload":{}}`, 400},
		{"event_type a number", "POST", "/v1/events", "", `{"event_type":1,"payload":{}}`, 400},
		{"payload missing", "POST", "/v1/events", "", `{"event_type":"a"}`, 400},
		{"payload an array", "POST", "/v1/events", "", ev(`[]`), 400},
		{"payload a string", "POST", "/v1/events", "", ev(`"x"`), 400},
		{"zero with a huge exponent", "POST", "/v1/events", "", ev(`{"n":0e2147483648}`), 400},
		{"zero with a huge negative exponent", "POST", "/v1/events", "", ev(`{"n":0e-2147483649}`), 400},
		{"number too large", "POST", "/v1/events", "", ev(`{"n":1e126}`), 400},
		{"number far too large", "POST", "/v1/events", "", ev(`{"n":1e400}`), 400},
		{"number too small", "POST", "/v1/events", "", ev(`{"n":1e-131}`), 400},
		{"39 significant digits", "POST", "/v1/events", "", ev(`{"n":123456789012345678901234567890123456789}`), 400},
		{"exponent overflow", "POST", "/v1/events", "", ev(`{"n":1e99999999999999999999}`), 400},
		{"not a JSON number", "POST", "/v1/events", "", ev(`{"n":01}`), 400},
		{"NaN", "POST", "/v1/events", "", ev(`{"n":NaN}`), 400},
		{"nested 33 levels", "POST", "/v1/events", "", ev(nested(32)), 400},
		{"nested 10000 levels", "POST", "/v1/events", "", ev(nested(10000)), 400},
		{"arrays nested 10000 levels", "POST", "/v1/events", "", ev(`{"a":` + strings.Repeat("[", 10000) + strings.Repeat("]", 10000) + `}`), 400},
		{"empty key", "POST", "/v1/events", "", ev(`{"":1}`), 400},
		{"body over 256 KiB", "POST", "/v1/events", "", big, 413},
		{"text/plain", "POST", "/v1/events", "text/plain", ev(`{}`), 415},
		{"batch: events missing", "POST", "/v1/events/batch", "", `{}`, 400},
		{"batch: empty", "POST", "/v1/events/batch", "", `{"events":[]}`, 400},
		{"batch: 26 events", "POST", "/v1/events/batch", "", `{"events":[` + strings.TrimSuffix(strings.Repeat(ev(`{}`)+",", 26), ",") + `]}`, 400},
		{"batch: not an array", "POST", "/v1/events/batch", "", `{"events":{}}`, 400},
		{"batch: invalid JSON", "POST", "/v1/events/batch", "", `{"events":[`, 400},
		{"batch: over 256 KiB", "POST", "/v1/events/batch", "", `{"events":[` + big + `]}`, 413},
		{"ack: empty", "POST", "/v1/inbox/ack", "", `{"event_ids":[]}`, 400},
		{"ack: 101 ids", "POST", "/v1/inbox/ack", "", `{"event_ids":[` + strings.TrimSuffix(strings.Repeat(`"01a2054b-f8ba-7375-9175-000000000000",`, 101), ",") + `]}`, 400},
		{"ack: not an array", "POST", "/v1/inbox/ack", "", `{"event_ids":"x"}`, 400},
		{"ack: numbers", "POST", "/v1/inbox/ack", "", `{"event_ids":[1,2]}`, 400},
		{"ack: invalid JSON", "POST", "/v1/inbox/ack", "", `{"event_ids":`, 400},
	}
	for _, c := range cases {
		h := bearer(tg.key)
		ct := c.ctype
		if ct == "" {
			ct = "application/json"
		}
		h.Set("Content-Type", ct)
		r := tg.do(t, c.method, c.path, h, []byte(c.body))
		assert.Equal(t, c.want, r.Status, "%s: %s", c.name, r)
	}

	// Invalid UTF-8 is refused, never stored "repaired". The construct
	// declares application/json a binary media type, so API Gateway hands
	// the body to the function base64-encoded, byte for byte (as text it
	// would have to turn the bytes into U+FFFD inside the JSON event).
	for _, ct := range []string{"application/json", "application/json; charset=utf-8"} {
		h := jsonBearer(tg.key)
		h.Set("Content-Type", ct)
		r := tg.do(t, "POST", "/v1/events", h, []byte(ev("{\"k\":\"a\xff\xfeb\"}")))
		assert.Equal(t, http.StatusBadRequest, r.Status, "invalid UTF-8 (%s): %s", ct, r)
		assert.Contains(t, string(r.Body), "invalid UTF-8", "the 400 names the problem: %s", r)
	}

	// Headers and a gateway-size body.
	for _, c := range []struct {
		name string
		h    http.Header
		want int
	}{
		{"Idempotency-Key of 256 characters", jsonBearer(tg.key, "Idempotency-Key", strings.Repeat("k", 256)), 400},
		{"Idempotency-Key with a control character", jsonBearer(tg.key, "Idempotency-Key", "a\tb"), 400},
		{"X-Correlation-Id of 129 characters", jsonBearer(tg.key, "X-Correlation-Id", strings.Repeat("c", 129)), 400},
		{"batch with an Idempotency-Key", jsonBearer(tg.key, "Idempotency-Key", "k"), 400},
	} {
		path := "/v1/events"
		if strings.HasPrefix(c.name, "batch") {
			path = "/v1/events/batch"
		}
		body := ev(`{}`)
		if path == "/v1/events/batch" {
			body = `{"events":[` + body + `]}`
		}
		r := tg.do(t, "POST", path, c.h, []byte(body))
		assert.Equal(t, c.want, r.Status, "%s: %s", c.name, r)
	}
	r := tg.do(t, "POST", "/v1/events", jsonBearer(tg.key), []byte(`{"event_type":"a","payload":{"s":"`+strings.Repeat("x", 11<<20)+`"}}`))
	assert.Equal(t, http.StatusRequestEntityTooLarge, r.Status, "11 MB, over API Gateway's limit: %s", r)

	// PATCH bodies, on an existing event.
	e := tg.post(t, tg.key, unique("hostile"), `{}`)
	for _, body := range []string{``, `{`, `{"status":"bogus"}`, `{"status":""}`, `{}`, `{"status":1}`, `{"status":"failed","status":"delivered"}`, `{"status":"failed","x":1}`} {
		r := tg.do(t, "PATCH", "/v1/events/"+e.ID, jsonBearer(tg.key), []byte(body))
		assert.Equal(t, http.StatusBadRequest, r.Status, "PATCH %q: %s", body, r)
	}
	// A body on a route that takes none (redeliver: the subscription it
	// names was ignored) is a 400 invalid_json, with or without webhook
	// delivery deployed ({} and null pass as none).
	for _, body := range []string{`{"subscription_id":"sub_aaaaaaaaaaaaaaaaaaaaaaaaaa"}`, `[]`, `x`} {
		r := tg.do(t, "POST", "/v1/events/"+e.ID+"/redeliver", jsonBearer(tg.key), []byte(body))
		assert.Equal(t, http.StatusBadRequest, r.Status, "redeliver with %q: %s", body, r)
		assert.Equal(t, "invalid_json", r.ErrorCode(), "redeliver with %q: %s", body, r)
		assert.Contains(t, r.String(), "POST /v1/events/{event_id}/redeliver takes no request body", "redeliver with %q", body)
	}
	// An Idempotency-Key where it is not honoured (a PATCH sent again is
	// no deduplicated retry; an ack needs none) is a 400.
	for _, c := range []struct{ method, path, body string }{
		{"PATCH", "/v1/events/" + e.ID, `{"status":"failed"}`},
		{"POST", "/v1/inbox/ack", `{"event_ids":["` + e.ID + `"]}`},
		{"GET", "/v1/events/" + e.ID, ``},
	} {
		r := tg.do(t, c.method, c.path, jsonBearer(tg.key, "Idempotency-Key", "retry-1"), []byte(c.body))
		assert.Equal(t, http.StatusBadRequest, r.Status, "%s %s with an Idempotency-Key: %s", c.method, c.path, r)
		assert.Equal(t, "invalid_idempotency_key", r.ErrorCode(), "%s %s with an Idempotency-Key: %s", c.method, c.path, r)
	}
	r = tg.do(t, "GET", "/v1/events/"+e.ID, bearer(tg.key), nil)
	assert.Equal(t, "received", decodeEvent(t, r).Status, "no refused PATCH or ack changed the event")
}

// Malformed ids and query parameters are 4xx (read-only: nothing written).
func TestHostileQueries(t *testing.T) {
	tg := api(t)
	for _, q := range []string{
		"limit=0", "limit=101", "limit=-1", "limit=x", "limit=1e1", "limit=1&limit=2",
		"order=sideways", "status=bogus", "status=", "unknown=1",
		"cursor=garbage", "cursor=" + strings.Repeat("A", 4000),
		"event_type=a%23b", "event_type=" + strings.Repeat("a", 129),
		"limit=%zz", "%zz=1", "limit=1;order=asc",
	} {
		_, r := tg.inbox(t, tg.key, q)
		assert.Equal(t, http.StatusBadRequest, r.Status, "GET /v1/inbox?%s: %s", q, r)
	}
	// A route that takes no query parameter refuses any, by name (the
	// list was answered whole, as if limited).
	r := tg.do(t, "GET", "/v1/subscriptions?limit=1", bearer(tg.key), nil)
	assert.Equal(t, http.StatusBadRequest, r.Status, "GET /v1/subscriptions?limit=1: %s", r)
	assert.Equal(t, "invalid_parameter", r.ErrorCode(), "GET /v1/subscriptions?limit=1: %s", r)
	assert.Contains(t, r.String(), `parameter \"limit\" is unknown`, "GET /v1/subscriptions?limit=1")
	for _, id := range []string{"not-an-id", "01a2054b-f8ba-7375-9175-000000000000", "%00", strings.Repeat("0", 300)} {
		r := tg.do(t, "GET", "/v1/events/"+id, bearer(tg.key), nil)
		assert.Equal(t, http.StatusNotFound, r.Status, "GET /v1/events/%s: %s", id, r)
	}
	// A route's path with a trailing slash is no route: API Gateway
	// selects the route's resource for it, and the function answers 404
	// (as the handler on its own does), not the route's answer.
	for _, path := range []string{"/v1/inbox/", "/v1/subscriptions/"} {
		r := tg.do(t, "GET", path, bearer(tg.key), nil)
		assert.Equal(t, http.StatusNotFound, r.Status, "GET %s: %s", path, r)
		assert.Equal(t, "not_found", r.ErrorCode(), "GET %s: %s", path, r)
	}
}
