package conformance

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The routes of one subscription: read, update and its attempts, each
// another tenant's subscription, a malformed id and hostile input
// refused with the contract's JSON errors. A deployment without webhook
// delivery answers every one of them 404 webhooks_disabled.
func TestSubscriptionRoutes(t *testing.T) {
	tg := api(t)
	tg.writes(t)
	r := tg.do(t, "POST", "/v1/subscriptions", jsonBearer(tg.key), []byte(`{"url":"https://example.com/conformance-hooks","event_types":["conformance.sub"],"description":"conformance suite"}`))
	if r.Status == http.StatusNotFound && r.ErrorCode() == "webhooks_disabled" {
		for _, c := range []struct{ method, path string }{
			{"GET", "/v1/subscriptions/sub_aaaaaaaaaaaaaaaaaaaaaaaaaa"},
			{"PATCH", "/v1/subscriptions/sub_aaaaaaaaaaaaaaaaaaaaaaaaaa"},
			{"GET", "/v1/subscriptions/sub_aaaaaaaaaaaaaaaaaaaaaaaaaa/attempts"},
		} {
			var body []byte // a body only where the route takes one
			if c.method == "PATCH" {
				body = []byte(`{"description":"x"}`)
			}
			r := tg.do(t, c.method, c.path, jsonBearer(tg.key), body)
			assert.Equal(t, http.StatusNotFound, r.Status, "%s %s: %s", c.method, c.path, r)
			assert.Equal(t, "webhooks_disabled", r.ErrorCode(), "%s %s", c.method, c.path)
		}
		return
	}
	require.Equal(t, http.StatusCreated, r.Status, "%s", r)
	created := r.JSON(t)
	id := created["subscription_id"].(string)
	path := "/v1/subscriptions/" + id
	t.Cleanup(func() { tg.do(t, "DELETE", path, bearer(tg.key), nil) })

	r = tg.do(t, "GET", path, bearer(tg.key), nil)
	require.Equal(t, http.StatusOK, r.Status, "%s", r)
	got := r.JSON(t)
	assert.Equal(t, id, got["subscription_id"])
	assert.Equal(t, "conformance suite", got["description"])
	assert.NotContains(t, got, "secret", "a secret is shown once, at creation")
	assert.NotContains(t, string(r.Body), created["secret"].(string))

	r = tg.do(t, "PATCH", path, jsonBearer(tg.key), []byte(`{"description":"renamed","event_types":[]}`))
	require.Equal(t, http.StatusOK, r.Status, "%s", r)
	got = r.JSON(t)
	assert.Equal(t, "renamed", got["description"])
	assert.Equal(t, []any{}, got["event_types"], "[] is every type")
	assert.Equal(t, "https://example.com/conformance-hooks", got["url"], "unchanged")
	assert.NotContains(t, got, "secret")

	r = tg.do(t, "GET", path+"/attempts?limit=10", bearer(tg.key), nil)
	require.Equal(t, http.StatusOK, r.Status, "%s", r)
	got = r.JSON(t)
	assert.Equal(t, []any{}, got["attempts"])
	assert.Nil(t, got["next_cursor"])

	// Another tenant's subscription, and ids that are none: 404.
	for _, c := range []struct{ key, path string }{
		{tg.key2, path},
		{tg.key, "/v1/subscriptions/sub_aaaaaaaaaaaaaaaaaaaaaaaaaa"},
		{tg.key, "/v1/subscriptions/not-an-id"},
		{tg.key, "/v1/subscriptions/" + strings.Repeat("s", 600)},
		{tg.key, "/v1/subscriptions/%23count"},
	} {
		for _, m := range []struct{ method, suffix string }{{"GET", ""}, {"PATCH", ""}, {"GET", "/attempts"}} {
			var body []byte // a body only where the route takes one
			if m.method == "PATCH" {
				body = []byte(`{"description":"mine now"}`)
			}
			r := tg.do(t, m.method, c.path+m.suffix, jsonBearer(c.key), body)
			assert.Equal(t, http.StatusNotFound, r.Status, "%s %s: %s", m.method, c.path+m.suffix, r)
			assert.Equal(t, "not_found", r.ErrorCode(), "%s %s", m.method, c.path+m.suffix)
		}
	}
	assert.Equal(t, "renamed", tg.do(t, "GET", path, bearer(tg.key), nil).JSON(t)["description"], "another tenant changed nothing")

	// Hostile bodies: 400 (413 when oversized) naming the problem.
	for _, c := range []struct {
		body   string
		status int
		code   string
		msg    string
	}{
		{`{}`, 400, "invalid_subscription", "empty"},
		{`{"description":"a"`, 400, "invalid_json", ""},
		{`{"url":5}`, 400, "invalid_json", "url"},
		{`{"disabled":"false"}`, 400, "invalid_json", "disabled"},
		{`{"url":null}`, 400, "invalid_subscription", "url"},
		{`{"url":"http://example.com/x"}`, 400, "invalid_target", "https"},
		{`{"secret":"whsec_AAAA"}`, 400, "invalid_json", "secret"},
		{`{"description":"a","description":"b"}`, 400, "invalid_json", "duplicate"},
		{`{"description":"` + strings.Repeat("x", 300*1024) + `"}`, 413, "", ""},
	} {
		r := tg.do(t, "PATCH", path, jsonBearer(tg.key), []byte(c.body))
		what := c.body[:min(len(c.body), 60)]
		assert.Equal(t, c.status, r.Status, "%s: %s", what, r)
		if c.code != "" {
			assert.Equal(t, c.code, r.ErrorCode(), what)
			e, _ := r.JSON(t)["error"].(map[string]any)
			assert.Contains(t, e["message"], c.msg, what)
		}
	}
	assert.Equal(t, "renamed", tg.do(t, "GET", path, bearer(tg.key), nil).JSON(t)["description"], "nothing written by a refused patch")

	// A create's null field is refused naming it, as a PATCH's is (it was
	// taken for an omitted one), and a null event type names its entry.
	for _, c := range []struct{ body, msg string }{
		{`{"url":"https://example.com/conformance-null","event_types":null}`, "event_types is null"},
		{`{"url":"https://example.com/conformance-null","description":null}`, "description is null"},
		{`{"url":"https://example.com/conformance-null","event_types":["a",null]}`, "event_types[1] is null"},
	} {
		r := tg.do(t, "POST", "/v1/subscriptions", jsonBearer(tg.key), []byte(c.body))
		if r.Status == http.StatusCreated {
			tg.do(t, "DELETE", "/v1/subscriptions/"+r.JSON(t)["subscription_id"].(string), bearer(tg.key), nil)
		}
		assert.Equal(t, http.StatusBadRequest, r.Status, "%s: %s", c.body, r)
		assert.Equal(t, "invalid_subscription", r.ErrorCode(), c.body)
		assert.Contains(t, r.String(), c.msg, c.body)
	}

	// A body on a route that takes none: 400 invalid_json, nothing done
	// (a rotate with an overlap, a delete with anything, were served).
	for _, c := range []struct{ method, path, body string }{
		{"POST", path + "/rotate", `{"overlap":"0s"}`},
		{"DELETE", path, `not json`},
	} {
		r := tg.do(t, c.method, c.path, jsonBearer(tg.key), []byte(c.body))
		assert.Equal(t, http.StatusBadRequest, r.Status, "%s %s with a body: %s", c.method, c.path, r)
		assert.Equal(t, "invalid_json", r.ErrorCode(), "%s %s with a body", c.method, c.path)
		assert.Contains(t, r.String(), "takes no request body", "%s %s with a body", c.method, c.path)
	}
	// An Idempotency-Key where it is not honoured: a rotation retried
	// with one rotated twice.
	for _, c := range []struct{ method, path, body string }{
		{"POST", path + "/rotate", ``},
		{"DELETE", path, ``},
		{"PATCH", path, `{"description":"keyed"}`},
	} {
		r := tg.do(t, c.method, c.path, jsonBearer(tg.key, "Idempotency-Key", "retry-1"), []byte(c.body))
		assert.Equal(t, http.StatusBadRequest, r.Status, "%s %s with an Idempotency-Key: %s", c.method, c.path, r)
		assert.Equal(t, "invalid_idempotency_key", r.ErrorCode(), "%s %s with an Idempotency-Key", c.method, c.path)
		assert.Contains(t, r.String(), "Idempotency-Key is not supported on "+c.method+" /v1/subscriptions/{subscription_id}", "%s %s", c.method, c.path)
	}
	r = tg.do(t, "GET", path, bearer(tg.key), nil)
	assert.Equal(t, http.StatusOK, r.Status, "not deleted by the refused DELETEs: %s", r)
	assert.Equal(t, "renamed", r.JSON(t)["description"], "nothing written by the refused PATCH")

	// Hostile queries on the attempts.
	for _, q := range []string{"limit=0", "limit=101", "status=nope", "cursor=", "cursor=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", "bogus=1"} {
		r := tg.do(t, "GET", path+"/attempts?"+q, bearer(tg.key), nil)
		assert.Equal(t, http.StatusBadRequest, r.Status, "%s: %s", q, r)
		assert.Contains(t, []string{"invalid_parameter", "invalid_cursor"}, r.ErrorCode(), q)
	}

	// Methods the routes do not serve.
	for _, c := range []struct {
		method, path string
		allow        []string
	}{
		{"PUT", path, []string{"DELETE", "GET", "PATCH"}},
		{"POST", path + "/attempts", []string{"GET"}},
	} {
		r := tg.do(t, c.method, c.path, bearer(tg.key), nil)
		assert.Equal(t, http.StatusMethodNotAllowed, r.Status, "%s %s: %s", c.method, c.path, r)
		var allow []string
		for _, m := range strings.Split(r.Header.Get("Allow"), ",") {
			if m = strings.TrimSpace(m); m != "" && m != "HEAD" && m != "OPTIONS" {
				allow = append(allow, m)
			}
		}
		assert.ElementsMatch(t, c.allow, allow, "%s %s", c.method, c.path)
	}
	// Without a key: 401 before anything else.
	r = tg.do(t, "GET", path, nil, nil)
	assert.Equal(t, http.StatusUnauthorized, r.Status, "%s", r)
}
