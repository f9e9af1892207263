package httpapi_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/contract"
	"github.com/triggers-dev/triggers/internal/event"
)

// Every route of contract.Routes() whose operation in the OpenAPI document
// has no requestBody refuses a request body: anything but JSON whitespace
// is a 400 invalid_json naming the route, whatever its Content-Type, and
// nothing is written or queued (found by review: a redeliver with
// {"subscription_id": ...} redelivered to every subscription with a 202, a
// rotate with {"overlap": "0s"} rotated with the default overlap, a DELETE
// with "not json" deleted). The same requests without a body, or with one
// of only whitespace, succeed, so the body alone was refused.
func TestBodyOnRoutesWithoutBody(t *testing.T) {
	rec := &redeliveries{}
	e := newEnv(t, withWebhooks(t, rec))
	requests := routeRequests(t, e, "b.test")
	type R = contract.Route
	sub := strings.TrimPrefix(requests[R{Method: "DELETE", Path: contract.PathSubscription}].path, "/v1/subscriptions/")
	var plain []R
	ops := documentOperations(t)
	for _, r := range contract.Routes() {
		if _, ok := ops[r]["requestBody"]; !ok {
			plain = append(plain, r)
		}
	}
	require.Len(t, plain, 10)

	before := e.snapshot(t)
	for _, r := range plain {
		for _, c := range []struct {
			body, at    string
			noCType     bool
			contentType string
		}{
			{body: `{"subscription_id":"` + sub + `"}`, at: `holds \"{\" at byte 0`},
			{body: `{"overlap":"0s"}`, at: `holds \"{\" at byte 0`},
			{body: `not json`, at: `holds \"n\" at byte 0`, noCType: true},
			{body: " \r\n\t[]", at: `holds \"[\" at byte 4`},
			{body: `{"a":1}`, at: `holds \"{\" at byte 0`},
			{body: `{}}`, at: `holds \"{\" at byte 0`},
			{body: `nulll`, at: `holds \"n\" at byte 0`},
			{body: `""`, at: `holds \"\\\"\" at byte 0`},
			{body: "\xef\xbb\xbf", at: `holds \"\\xef\" at byte 0`},
			{body: "\u00a0", at: `at byte 0`, contentType: "text/plain"},
			{body: "\x00", at: `holds \"\\x00\" at byte 0`},
			{body: strings.Repeat(" ", event.MaxBodyBytes+1), at: "this one is over 256 KiB"},
		} {
			rq := requests[r]
			rq.body, rq.noContentType = c.body, c.noCType
			if c.contentType != "" {
				rq.headers = map[string]string{"Content-Type": c.contentType}
			}
			got := e.do(rq)
			name := r.String() + " with " + truncate(c.body)
			assert.Equal(t, http.StatusBadRequest, got.code, "%s: %s", name, got.body)
			assert.Equal(t, "invalid_json", got.errCode(t), "%s", name)
			assert.Contains(t, string(got.body), r.String()+` takes no request body: send none (`, "%s", name)
			assert.Contains(t, string(got.body), c.at, "%s", name)
		}
	}
	assert.Equal(t, before, e.snapshot(t), "a refused request wrote nothing")
	assert.Empty(t, rec.calls, "a refused request queued nothing")

	// Authentication comes first: without a key, a 401 as before.
	got := e.do(req{method: "POST", path: "/v1/subscriptions/" + sub + "/rotate", body: `{"overlap":"0s"}`})
	assert.Equal(t, http.StatusUnauthorized, got.code, "%s", got.body)

	// Without a body (or with one of only whitespace, up to 256 KiB, or
	// {} or null, which many clients send with every POST), each request
	// succeeds: the body alone was refused. The delete goes last.
	del := R{Method: "DELETE", Path: contract.PathSubscription}
	plain = append(slices.DeleteFunc(plain, func(r R) bool { return r == del }), del)
	for i, r := range plain {
		rq := requests[r]
		switch i % 5 {
		case 1:
			rq.body = " \r\n\t"
		case 2:
			rq.body = strings.Repeat("\n", event.MaxBodyBytes)
		case 3:
			rq.body = " { \n} "
		case 4:
			rq.body = "null\n"
		}
		got := e.do(rq)
		assert.True(t, got.code >= 200 && got.code < 300, "%s %s with %d bytes of whitespace = %d %.300s, want 2xx", rq.method, rq.path, len(rq.body), got.code, got.body)
	}
	assert.Len(t, rec.calls, 1, "the redelivery without a body was queued")
	stored, err := e.store.GetSubscription(context.Background(), "tenant-a", sub)
	assert.ErrorIs(t, err, event.ErrSubscriptionNotFound, "deleted at last: %+v", stored)
}

// truncate shortens a body for a failure message.
func truncate(s string) string {
	if len(s) > 20 {
		return s[:20] + "..."
	}
	return s
}
