package httpapi_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/internal/event"
	"github.com/triggers-dev/triggers/internal/httpapi"
)

// POST /v1/subscriptions/{id}/recover queues one recovery of the range
// (202, what was queued), after checking the body, the subscription and
// its tenant; nothing is queued on any refusal.
func TestRecoverSubscription(t *testing.T) {
	now := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	rec := &redeliveries{}
	e := newEnv(t, withWebhooks(t, rec), withNow(func() time.Time { return now }))
	id := e.createSub(t, "tenant-a", `{"url":"https://example.com/hooks"}`)
	path := "/v1/subscriptions/" + id + "/recover"

	r := e.do(req{method: "POST", path: path, tenant: "tenant-a", body: `{"since":"2026-11-22T10:00:00+01:00"}`})
	require.Equal(t, http.StatusAccepted, r.code, "%s", r.body)
	got := r.json(t)
	rid, _ := got["recovery_id"].(string)
	assert.Len(t, rid, 32)
	assert.Equal(t, map[string]any{"queued": true, "recovery_id": rid, "subscription_id": id,
		"since": "2026-11-22T09:00:00.000000Z", "until": "2026-11-23T10:00:00.000000Z"}, got)
	require.Equal(t, []string{"recover tenant-a/" + id + "/" + rid + " [2026-11-22T09:00:00.000000Z, 2026-11-23T10:00:00.000000Z) at 2026-11-23T10:00:00.000000Z"}, rec.calls)

	r = e.do(req{method: "POST", path: path, tenant: "tenant-a", body: `{"since":"2026-11-22T10:00:00Z","until":"2026-11-22T11:00:00Z"}`})
	require.Equal(t, http.StatusAccepted, r.code, "%s", r.body)
	assert.NotEqual(t, rid, r.json(t)["recovery_id"], "each request is a recovery of its own")
	require.Len(t, rec.calls, 2)
	assert.Contains(t, rec.calls[1], "[2026-11-22T10:00:00.000000Z, 2026-11-22T11:00:00.000000Z)")

	// With an Idempotency-Key, a request sent again names the same
	// recovery (whatever its range), so the webhook function attempts no
	// event of it twice; another key, subscription or tenant is another.
	rec.calls = nil
	withKey := func(key, body string) string {
		r := e.do(req{method: "POST", path: path, tenant: "tenant-a", body: body, headers: map[string]string{"Idempotency-Key": key}})
		require.Equal(t, http.StatusAccepted, r.code, "%s", r.body)
		rid, _ := r.json(t)["recovery_id"].(string)
		require.Len(t, rid, 32)
		return rid
	}
	k1 := withKey("retry-me", `{"since":"2026-11-22T10:00:00Z"}`)
	assert.Equal(t, k1, withKey("retry-me", `{"since":"2026-11-22T10:00:00Z"}`))
	assert.Equal(t, k1, withKey("retry-me", `{"since":"2026-11-22T11:00:00Z"}`), "the key names the recovery, not the range")
	assert.NotEqual(t, k1, withKey("retry-me-too", `{"since":"2026-11-22T10:00:00Z"}`))
	require.Len(t, rec.calls, 4, "every request queues its first page: the round makes copies harmless")
	assert.Contains(t, rec.calls[1], "/"+k1+" [")
	other := e.createSub(t, "tenant-a", `{"url":"https://example.com/other"}`)
	r = e.do(req{method: "POST", path: "/v1/subscriptions/" + other + "/recover", tenant: "tenant-a", body: `{"since":"2026-11-22T10:00:00Z"}`, headers: map[string]string{"Idempotency-Key": "retry-me"}})
	require.Equal(t, http.StatusAccepted, r.code, "%s", r.body)
	assert.NotEqual(t, k1, r.json(t)["recovery_id"], "the same key for another subscription")
	assert.Equal(t, k1, httpapi.RecoveryID("tenant-a", id, "retry-me"))
	assert.NotEqual(t, k1, httpapi.RecoveryID("tenant-b", id, "retry-me"), "the same key and subscription id for another tenant")

	rec.calls = nil
	for _, bad := range []string{strings.Repeat("k", 256), "tab\there", "é"} {
		r := e.do(req{method: "POST", path: path, tenant: "tenant-a", body: `{"since":"2026-11-22T10:00:00Z"}`, headers: map[string]string{"Idempotency-Key": bad}})
		assert.Equal(t, http.StatusBadRequest, r.code, "%q: %s", bad, r.body)
		assert.Equal(t, "invalid_idempotency_key", r.errCode(t), "%q", bad)
	}
	assert.Empty(t, rec.calls, "nothing queued for a bad key")

	for _, c := range []struct {
		tenant, path, body string
		code               int
		errCode, mentions  string
	}{
		{"tenant-a", path, `{}`, 400, event.CodeInvalidRecover, "since"},
		{"tenant-a", path, `{`, 400, event.CodeInvalidJSON, ""},
		{"tenant-a", path, `{"since":"2026-11-22"}`, 400, event.CodeInvalidRecover, "since"},
		{"tenant-a", path, `{"since":"2026-11-22T10:00:00Z","until":"2026-11-24T10:00:00Z"}`, 400, event.CodeInvalidRecover, "until"},
		{"tenant-a", path, `{"since":"2026-11-23T10:00:00Z","until":"2026-11-22T10:00:00Z"}`, 400, event.CodeInvalidRecover, "since"},
		{"tenant-a", path, `{"since":"2026-01-01T00:00:00Z"}`, 400, event.CodeInvalidRecover, "retention"},
		{"tenant-a", path, `{"since":"2026-11-22T10:00:00Z","cursor":"x"}`, 400, event.CodeInvalidJSON, ""},
		{"tenant-a", path, "{\"since\":\"2026-11-22T10:00:00Z\",\"since\":\"2026-11-22T10:00:00Z\"}", 400, event.CodeInvalidJSON, ""},
		{"tenant-a", path, `{"since":"2026-11-22T10:00:00Z"` + strings.Repeat(" ", 300<<10) + `}`, 413, "", ""},
		{"tenant-b", path, `{"since":"2026-11-22T10:00:00Z"}`, 404, "not_found", "subscription"},
		{"tenant-a", "/v1/subscriptions/sub_aaaaaaaaaaaaaaaaaaaaaaaaaa/recover", `{"since":"2026-11-22T10:00:00Z"}`, 404, "not_found", "subscription"},
		{"tenant-a", "/v1/subscriptions/not-an-id/recover", `{"since":"2026-11-22T10:00:00Z"}`, 404, "not_found", "subscription"},
		{"tenant-a", "/v1/subscriptions/%23x/recover", `{"since":"2026-11-22T10:00:00Z"}`, 404, "not_found", "subscription"},
	} {
		r := e.do(req{method: "POST", path: c.path, tenant: c.tenant, body: c.body})
		assert.Equal(t, c.code, r.code, "%s %.80s: %s", c.tenant, c.body, r.body)
		if c.errCode != "" {
			assert.Equal(t, c.errCode, r.errCode(t), "%.80s", c.body)
		}
		assert.Contains(t, string(r.body), c.mentions, "%.80s", c.body)
	}
	assert.Empty(t, rec.calls, "nothing queued on a refusal")

	r = e.do(req{method: "GET", path: path, tenant: "tenant-a"})
	assert.Equal(t, http.StatusMethodNotAllowed, r.code)
	assert.Equal(t, "POST", r.header.Get("Allow"))

	// A disabled subscription: re-enable first.
	r = e.do(req{method: "PATCH", path: "/v1/subscriptions/" + id, tenant: "tenant-a", body: `{"disabled":true}`})
	require.Equal(t, http.StatusOK, r.code, "%s", r.body)
	r = e.do(req{method: "POST", path: path, tenant: "tenant-a", body: `{"since":"2026-11-22T10:00:00Z"}`})
	assert.Equal(t, http.StatusConflict, r.code, "%s", r.body)
	assert.Equal(t, "subscription_disabled", r.errCode(t))
	assert.Contains(t, string(r.body), "re-enable")
	assert.Empty(t, rec.calls)

	// The queue refusing: 503, nothing queued.
	r = e.do(req{method: "PATCH", path: "/v1/subscriptions/" + id, tenant: "tenant-a", body: `{"disabled":false}`})
	require.Equal(t, http.StatusOK, r.code, "%s", r.body)
	rec.fail = errors.New("queue down")
	r = e.do(req{method: "POST", path: path, tenant: "tenant-a", body: `{"since":"2026-11-22T10:00:00Z"}`})
	assert.Equal(t, http.StatusServiceUnavailable, r.code, "%s", r.body)
	assert.Equal(t, "unavailable", r.errCode(t))
	assert.NotEmpty(t, r.header.Get("Retry-After"))
}

// A recovery checks in the documented order, query string, Idempotency-Key,
// body (as POST /v1/events does): a bad key is the 400 whatever the body
// (text/plain, over 256 KiB, malformed), and a query string comes before
// both. The body was read first, so an empty key with a text/plain body
// answered 415 (found by review). Nothing is queued.
func TestRecoverChecksKeyBeforeBody(t *testing.T) {
	rec := &redeliveries{}
	e := newEnv(t, withWebhooks(t, rec))
	id := e.createSub(t, "tenant-a", `{"url":"https://example.com/hooks"}`)
	path := "/v1/subscriptions/" + id + "/recover"
	for _, c := range []struct {
		name, key, contentType, body, msg string
	}{
		{"empty key, text/plain", "", "text/plain", `{"since":"2026-11-22T10:00:00Z"}`, "Idempotency-Key is empty"},
		{"empty key, oversized body", "", "application/json", `{"since":"2026-11-22T10:00:00Z"` + strings.Repeat(" ", 300<<10) + `}`, "Idempotency-Key is empty"},
		{"long key, malformed body", strings.Repeat("k", 256), "application/json", `{`, "1-255 visible ASCII characters"},
	} {
		r := e.do(req{method: "POST", path: path, tenant: "tenant-a", body: c.body, headers: map[string]string{"Idempotency-Key": c.key, "Content-Type": c.contentType}})
		assert.Equal(t, http.StatusBadRequest, r.code, "%s: %.200s", c.name, r.body)
		assert.Equal(t, "invalid_idempotency_key", r.errCode(t), c.name)
		assert.Contains(t, string(r.body), c.msg, c.name)
	}
	r := e.do(req{method: "POST", path: path + "?since=x", tenant: "tenant-a", body: `{`, headers: map[string]string{"Idempotency-Key": "", "Content-Type": "text/plain"}})
	assert.Equal(t, http.StatusBadRequest, r.code, "%s", r.body)
	assert.Equal(t, "invalid_parameter", r.errCode(t), "the query string comes first")
	assert.Empty(t, rec.calls, "nothing queued")
}
