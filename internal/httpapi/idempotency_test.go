package httpapi_test

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/contract"
	"github.com/triggers-dev/triggers/internal/httpapi"
)

// withKeys serves rq with the Idempotency-Key values keys (none: no
// header) and returns the checked response.
func (e *env) withKeys(rq req, keys []string) resp {
	e.t.Helper()
	var body *strings.Reader
	if rq.body != "" {
		body = strings.NewReader(rq.body)
	}
	var hr *http.Request
	if body != nil {
		hr = httptest.NewRequest(rq.method, rq.path, body)
		hr.Header.Set("Content-Type", "application/json")
	} else {
		hr = httptest.NewRequest(rq.method, rq.path, nil)
	}
	if keys != nil {
		hr.Header["Idempotency-Key"] = keys
	}
	if rq.tenant != "" {
		hr = hr.WithContext(httpapi.WithTenant(hr.Context(), rq.tenant))
	}
	w := httptest.NewRecorder()
	e.api.ServeHTTP(w, hr)
	return e.checked(rq, resp{code: w.Code, header: w.Header(), body: w.Body.Bytes()})
}

// Every route of contract.Routes() whose operation in the OpenAPI document
// takes no Idempotency-Key refuses one, whatever its value (empty or sent
// twice included): a 400 invalid_idempotency_key naming the route, and
// nothing is written or queued (found by review: rotate, redeliver, both
// PATCHes, the ack and DELETE ignored it, so a client believed its retry
// was deduplicated, and a rotate retried with its key rotated twice). The
// same requests without the header succeed, so the key alone was refused;
// the two routes that honour a key still take one.
func TestIdempotencyKeyOnRoutesThatIgnoreIt(t *testing.T) {
	rec := &redeliveries{}
	e := newEnv(t, withWebhooks(t, rec))
	check := docChecker(t)
	requests := routeRequests(t, e, "k.test")
	type R = contract.Route
	sub := strings.TrimPrefix(requests[R{Method: "DELETE", Path: contract.PathSubscription}].path, "/v1/subscriptions/")
	honour := map[R]bool{}
	for r, headers := range documentParams(t, "header") {
		honour[r] = slices.ContainsFunc(headers, func(h string) bool { return strings.EqualFold(h, "Idempotency-Key") })
		if !honour[r] {
			delete(honour, r)
		}
	}
	require.Equal(t, map[R]bool{{Method: "POST", Path: contract.PathEvents}: true, {Method: "POST", Path: contract.PathSubscriptionRecover}: true}, honour,
		"the routes the document gives an Idempotency-Key")

	before := e.snapshot(t)
	var refusing []R
	for _, r := range contract.Routes() {
		rq, ok := requests[r]
		require.True(t, ok, "no request for %s: add one", r)
		if honour[r] {
			continue
		}
		refusing = append(refusing, r)
		for _, keys := range [][]string{{"retry-1"}, {"retry-1"}, {""}, {"k-1", "k-2"}, {"has space"}} {
			got := e.withKeys(rq, keys)
			assert.Equal(t, http.StatusBadRequest, got.code, "%s with Idempotency-Key %q: %s", r, keys, got.body)
			assert.Equal(t, "invalid_idempotency_key", got.errCode(t), "%s %q", r, keys)
			switch r {
			case R{Method: "POST", Path: contract.PathEventsBatch}:
				assert.Contains(t, string(got.body), "Idempotency-Key is not supported on batch requests", "%s", r)
			case R{Method: "POST", Path: contract.PathSubscriptions}:
				assert.Contains(t, string(got.body), "Idempotency-Key is not supported on subscription creation", "%s", r)
			default:
				assert.Contains(t, string(got.body), "Idempotency-Key is not supported on "+r.String()+" (only POST /v1/events and POST /v1/subscriptions/{subscription_id}/recover deduplicate by it): ", "%s", r)
			}
			check(rq, got)
		}
	}
	assert.Equal(t, before, e.snapshot(t), "a refused request wrote nothing")
	assert.Empty(t, rec.calls, "a refused request queued nothing")

	// Authentication comes first: without a key, a 401 as before.
	got := e.withKeys(req{method: "POST", path: "/v1/subscriptions/" + sub + "/rotate"}, []string{"retry-1"})
	assert.Equal(t, http.StatusUnauthorized, got.code, "%s", got.body)

	// Without the header each request succeeds: the key alone was
	// refused. The delete goes last.
	del := R{Method: "DELETE", Path: contract.PathSubscription}
	refusing = append(slices.DeleteFunc(refusing, func(r R) bool { return r == del }), del)
	for _, r := range refusing {
		rq := requests[r]
		got := e.withKeys(rq, nil)
		assert.True(t, got.code >= 200 && got.code < 300, "%s %s = %d %.300s, want 2xx", rq.method, rq.path, got.code, got.body)
	}
	assert.Len(t, rec.calls, 1, "the redelivery without a key was queued")

	// The routes that honour a key still take one: a create sent again
	// with it answers the first event (a new subscription for the
	// recovery: the one above is deleted).
	r := e.withKeys(requests[R{Method: "POST", Path: contract.PathEvents}], []string{"retry-1"})
	require.Equal(t, http.StatusCreated, r.code, "%s", r.body)
	again := e.withKeys(requests[R{Method: "POST", Path: contract.PathEvents}], []string{"retry-1"})
	require.Equal(t, http.StatusOK, again.code, "%s", again.body)
	assert.Equal(t, r.event(t).ID, again.event(t).ID)
	other := e.createSub(t, "tenant-a", `{"url":"https://example.com/third"}`)
	rq := requests[R{Method: "POST", Path: contract.PathSubscriptionRecover}]
	rq.path = "/v1/subscriptions/" + other + "/recover"
	first, second := e.withKeys(rq, []string{"retry-1"}), e.withKeys(rq, []string{"retry-1"})
	require.Equal(t, http.StatusAccepted, first.code, "%s", first.body)
	require.Equal(t, http.StatusAccepted, second.code, "%s", second.body)
	assert.Equal(t, first.json(t)["recovery_id"], second.json(t)["recovery_id"], "one recovery per key")
}
