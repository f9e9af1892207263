package httpapi_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestOutsideReviewClientErrors: the inputs of an outside review
// are 400s naming the problem, through the real handler on DynamoDB
// Local; before, the number was a 500, the I-JSON violations were stored
// repaired (U+FFFD, last duplicate wins) and the bad query was ignored.
func TestOutsideReviewClientErrors(t *testing.T) {
	e := newEnv(t)
	ev := e.post("tenant-a", "a", `{}`)
	tests := []struct {
		name string
		r    req
		code string
		msg  string
	}{
		{"zero with a huge exponent", req{method: "POST", path: "/v1/events", body: `{"event_type":"a","payload":{"n":0e2147483648}}`}, "invalid_payload", "exponent outside -130..125"},
		{"duplicate event_type", req{method: "POST", path: "/v1/events", body: `{"event_type":"a","event_type":"b","payload":{}}`}, "invalid_json", `duplicate member name "event_type"`},
		{"duplicate in payload", req{method: "POST", path: "/v1/events", body: `{"event_type":"a","payload":{"k":1,"k":2}}`}, "invalid_json", `duplicate member name "k"`},
		{"invalid UTF-8", req{method: "POST", path: "/v1/events", body: "{\"event_type\":\"a\",\"payload\":{\"s\":\"\xff\"}}"}, "invalid_json", "invalid UTF-8 at byte 34"},
		{"lone surrogate", req{method: "POST", path: "/v1/events", body: `{"event_type":"a","payload":{"s":"\ud800"}}`}, "invalid_json", `lone surrogate escape \ud800`},
		{"batch: duplicate events", req{method: "POST", path: "/v1/events/batch", body: `{"events":[],"events":[{"event_type":"a","payload":{}}]}`}, "invalid_json", `duplicate member name "events"`},
		{"patch: duplicate status", req{method: "PATCH", path: "/v1/events/" + ev.ID, body: `{"status":"failed","status":"delivered"}`}, "invalid_json", `duplicate member name "status"`},
		{"patch: lone surrogate", req{method: "PATCH", path: "/v1/events/" + ev.ID, body: `{"status":"\udc00"}`}, "invalid_json", "lone surrogate"},
		{"ack: duplicate event_ids", req{method: "POST", path: "/v1/inbox/ack", body: `{"event_ids":["x"],"event_ids":["` + ev.ID + `"]}`}, "invalid_json", `duplicate member name "event_ids"`},
		{"ack: invalid UTF-8", req{method: "POST", path: "/v1/inbox/ack", body: "{\"event_ids\":[\"\xc3\"]}"}, "invalid_json", "invalid UTF-8"},
		{"inbox: bad escape in cursor", req{method: "GET", path: "/v1/inbox?cursor=%%%"}, "invalid_parameter", "malformed"},
		{"inbox: bad escape in limit", req{method: "GET", path: "/v1/inbox?limit=%zz"}, "invalid_parameter", "malformed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.r.tenant = "tenant-a"
			r := e.with(t).do(tt.r)
			require.Equal(t, http.StatusBadRequest, r.code, "%s", r.body)
			assert.Equal(t, tt.code, r.errCode(t))
			assert.Contains(t, r.json(t)["error"].(map[string]any)["message"], tt.msg)
		})
	}
	// The PATCH and the ack above changed nothing.
	got := e.do(req{method: "GET", path: "/v1/events/" + ev.ID, tenant: "tenant-a"})
	assert.Equal(t, "received", string(got.event(t).Status))
	assert.Equal(t, 1, e.count("tenant-a"))
}

// TestBatchStoresValidBesideBad: in a batch, an entry with an I-JSON
// violation or a number DynamoDB rejects is a 400 for that entry, and
// the entries beside it are stored.
func TestBatchStoresValidBesideBad(t *testing.T) {
	e := newEnv(t)
	good := `{"event_type":"ok","payload":{"i":1}}`
	bad := []string{
		`{"event_type":"a","payload":{"n":0e2147483648}}`,
		`{"event_type":"a","event_type":"b","payload":{}}`,
		`{"event_type":"a","payload":{"s":"\ud800"}}`,
		"{\"event_type\":\"a\",\"payload\":{\"s\":\"\xed\xa0\x80\"}}",
	}
	body := `{"events":[` + good + `,` + strings.Join(bad, ",") + `,` + good + `]}`
	r := e.do(req{method: "POST", path: "/v1/events/batch", tenant: "tenant-a", body: body})
	require.Equal(t, http.StatusMultiStatus, r.code, "%s", r.body)
	results := r.json(t)["results"].([]any)
	require.Len(t, results, len(bad)+2)
	for i, res := range results {
		m := res.(map[string]any)
		status := m["status"].(interface{ String() string }).String()
		if i == 0 || i == len(results)-1 {
			assert.Equal(t, "201", status, "entry %d: %v", i, m)
			continue
		}
		assert.Equal(t, "400", status, "entry %d: %v", i, m)
	}
	assert.Equal(t, 2, e.count("tenant-a"))
}
