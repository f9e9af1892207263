package httpapi_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/internal/event"
	"github.com/triggers-dev/triggers/internal/httpapi"
)

// The request hash of an idempotent create covers the event type, not only
// the payload: the same key with the same payload under another type is a
// different request (422), not a repeat of the first.
func TestIdempotencyKeyReusedForAnotherEventType(t *testing.T) {
	e := newEnv(t)
	h := map[string]string{"Idempotency-Key": "order-7"}
	first := e.do(req{method: "POST", path: "/v1/events", tenant: "tenant-a", body: `{"event_type":"order.paid","payload":{"a":1}}`, headers: h})
	require.Equal(t, http.StatusCreated, first.code, "%s", first.body)
	other := e.do(req{method: "POST", path: "/v1/events", tenant: "tenant-a", body: `{"event_type":"order.refunded","payload":{"a":1}}`, headers: h})
	assert.Equal(t, http.StatusUnprocessableEntity, other.code, "same key and payload, other event type = %d %s, want 422", other.code, other.body)
	assert.Equal(t, "idempotency_key_reused", other.errCode(t))
	assert.Equal(t, 1, e.count("tenant-a"), "events stored")
}

// An Idempotency-Key header that is present but empty (a client's unset
// variable) or given twice is a 400 naming the problem, on the create, the
// batch and the recover routes; nothing is stored or queued (found by
// review: an empty key was ignored, so every retry stored a new event).
func TestIdempotencyKeyEmptyOrRepeated(t *testing.T) {
	rec := &redeliveries{}
	e := newEnv(t, withWebhooks(t, rec))
	r := e.do(req{method: "POST", path: "/v1/subscriptions", tenant: "tenant-a", body: `{"url":"https://example.com/hooks"}`})
	require.Equal(t, http.StatusCreated, r.code, "%s", r.body)
	recoverPath := "/v1/subscriptions/" + r.json(t)["subscription_id"].(string) + "/recover"
	send := func(path, body string, keys []string) resp {
		hr := httptest.NewRequest("POST", path, strings.NewReader(body))
		hr.Header.Set("Content-Type", "application/json")
		hr.Header["Idempotency-Key"] = keys
		hr = hr.WithContext(httpapi.WithTenant(hr.Context(), "tenant-a"))
		w := httptest.NewRecorder()
		e.api.ServeHTTP(w, hr)
		return resp{code: w.Code, header: w.Header(), body: w.Body.Bytes()}
	}
	for _, c := range []struct {
		keys []string
		msg  string
	}{
		{[]string{""}, "Idempotency-Key is empty: send 1-255 visible ASCII characters, or no header"},
		{[]string{"key-1", "key-2"}, "Idempotency-Key is given more than once: send one"},
	} {
		for _, route := range []struct{ path, body string }{
			{"/v1/events", `{"event_type":"order.paid","payload":{}}`},
			{recoverPath, `{"since":"` + event.FormatTime(time.Now().Add(-time.Hour)) + `"}`},
		} {
			for range 2 {
				r := send(route.path, route.body, c.keys)
				assert.Equal(t, http.StatusBadRequest, r.code, "%s %q: %s", route.path, c.keys, r.body)
				assert.Equal(t, "invalid_idempotency_key", r.errCode(t))
				assert.Contains(t, string(r.body), c.msg)
			}
		}
		r := send("/v1/events/batch", `{"events":[{"event_type":"a","payload":{}}]}`, c.keys)
		assert.Equal(t, http.StatusBadRequest, r.code, "batch %q: %s", c.keys, r.body)
		assert.Equal(t, "invalid_idempotency_key", r.errCode(t))
	}
	assert.Equal(t, 0, e.count("tenant-a"), "nothing stored")
	assert.Empty(t, rec.calls, "nothing queued")
}

// Idempotency-Key takes 1-255 visible ASCII characters.
func TestIdempotencyKeyLength(t *testing.T) {
	e := newEnv(t)
	for _, tt := range []struct {
		n    int
		code int
	}{{1, 201}, {255, 201}, {256, 400}} {
		key := strings.Repeat("k", tt.n-1) + string(rune('0'+tt.n%10))
		r := e.do(req{method: "POST", path: "/v1/events", tenant: "tenant-a", body: `{"event_type":"x","payload":{}}`, headers: map[string]string{"Idempotency-Key": key}})
		assert.Equal(t, tt.code, r.code, "POST with a %d-character Idempotency-Key = %d %s, want %d", tt.n, r.code, r.body, tt.code)
		if tt.code == 400 {
			assert.Equal(t, "invalid_idempotency_key", r.errCode(t))
		}
	}
	assert.Equal(t, 2, e.count("tenant-a"), "events stored")
}

// chunked sends body without a Content-Length (Transfer-Encoding: chunked),
// so only the read limit, not the length check, can refuse it.
func (e *env) chunked(path, body string) resp {
	e.t.Helper()
	hr := httptest.NewRequest("POST", path, nil)
	hr.Body = io.NopCloser(io.MultiReader(strings.NewReader(body)))
	hr.ContentLength = -1
	hr.TransferEncoding = []string{"chunked"}
	hr.Header.Set("Content-Type", "application/json")
	hr = hr.WithContext(httpapi.WithTenant(hr.Context(), "tenant-a"))
	rec := httptest.NewRecorder()
	e.api.ServeHTTP(rec, hr)
	return resp{code: rec.Code, header: rec.Header(), body: rec.Body.Bytes()}
}

// A body without Content-Length is cut at 256 KiB too: one byte more is a
// 413 on both ingestion routes, exactly 256 KiB is read.
func TestChunkedBodyOverLimitIs413(t *testing.T) {
	e := newEnv(t)
	body := func(size int) string {
		prefix, suffix := `{"event_type":"x","payload":{"s":"`, `"}}`
		return prefix + strings.Repeat("y", size-len(prefix)-len(suffix)) + suffix
	}
	r := e.chunked("/v1/events", body(event.MaxBodyBytes))
	assert.Equal(t, http.StatusCreated, r.code, "chunked POST of exactly 256 KiB = %d, want 201", r.code)
	for _, path := range []string{"/v1/events", "/v1/events/batch"} {
		r := e.chunked(path, body(event.MaxBodyBytes+1))
		require.Equal(t, http.StatusRequestEntityTooLarge, r.code, "chunked POST %s of 256 KiB + 1 = %d %s, want 413", path, r.code, r.body[:min(len(r.body), 200)])
		assert.Equal(t, "payload_too_large", r.errCode(t))
	}
	assert.Equal(t, 1, e.count("tenant-a"), "events stored")
}

// The error body's request_id is the X-Request-Id of the response, and
// both are the id the edge gave the request (API Gateway's) when there is
// one.
func TestErrorRequestIDIsTheResponseHeader(t *testing.T) {
	e := newEnv(t)
	hr := httptest.NewRequest("GET", "/v1/events/nope", nil)
	hr = hr.WithContext(httpapi.WithRequestID(httpapi.WithTenant(hr.Context(), "tenant-a"), "gw-req-1"))
	rec := httptest.NewRecorder()
	e.api.ServeHTTP(rec, hr)
	r := resp{code: rec.Code, header: rec.Header(), body: rec.Body.Bytes()}
	require.Equal(t, http.StatusNotFound, r.code, "%s", r.body)
	assert.Equal(t, "gw-req-1", r.header.Get("X-Request-Id"))
	assert.Equal(t, "gw-req-1", r.json(t)["error"].(map[string]any)["request_id"], "%s", r.body)

	// Without one, each request gets a fresh id, the same in header and body.
	a := e.do(req{method: "GET", path: "/v1/events/nope", tenant: "tenant-a"})
	b := e.do(req{method: "GET", path: "/v1/events/nope", tenant: "tenant-a"})
	a.errCode(t) // compares body and header
	b.errCode(t)
	assert.NotEqual(t, a.header.Get("X-Request-Id"), b.header.Get("X-Request-Id"), "two requests, one id")
}

// The payload rules are ours, with our messages, not DynamoDB's refusal of
// the item: depth 31 is stored, 32 is refused before any write, and so is
// an empty key.
func TestPayloadRuleMessages(t *testing.T) {
	e := newEnv(t)
	nest := func(levels int, inner string) string {
		return strings.Repeat(`{"a":`, levels) + inner + strings.Repeat(`}`, levels)
	}
	ok := e.do(req{method: "POST", path: "/v1/events", tenant: "tenant-a", body: `{"event_type":"x","payload":` + nest(30, `[]`) + `}`})
	assert.Equal(t, http.StatusCreated, ok.code, "payload at depth 31 = %d %s, want 201", ok.code, ok.body)
	for _, tt := range []struct {
		name, payload, message string
	}{
		{"depth 32", nest(31, `[]`), "payload" + strings.Repeat(".a", 31) + " is nested deeper than 31 levels, the most DynamoDB stores"},
		{"empty key", `{"a":[{"":1}]}`, "payload.a[0] has an empty key: DynamoDB cannot store empty attribute names"},
	} {
		r := e.do(req{method: "POST", path: "/v1/events", tenant: "tenant-a", body: `{"event_type":"x","payload":` + tt.payload + `}`})
		require.Equal(t, http.StatusBadRequest, r.code, "%s: %d %s", tt.name, r.code, r.body)
		assert.Equal(t, "invalid_payload", r.errCode(t), tt.name)
		assert.Equal(t, tt.message, r.json(t)["error"].(map[string]any)["message"], tt.name)
	}
	assert.Equal(t, 1, e.count("tenant-a"), "events stored")
}

// Location starts with the base path the request came through (the stage
// or a custom domain's mapping, from the gateway's request context), so a
// client following it reaches the event; without one it is the route.
func TestLocationKeepsTheBasePath(t *testing.T) {
	e := newEnv(t)
	for _, base := range []string{"", "/live", "/api/v2"} {
		for _, key := range []string{"", "k-" + strings.TrimPrefix(strings.ReplaceAll(base, "/", "-"), "-")} {
			hr := httptest.NewRequest("POST", "/v1/events", strings.NewReader(`{"event_type":"a","payload":{}}`))
			hr.Header.Set("Content-Type", "application/json")
			if key != "" {
				hr.Header.Set("Idempotency-Key", key)
			}
			ctx := httpapi.WithTenant(hr.Context(), "tenant-a")
			if base != "" {
				ctx = httpapi.WithBasePath(ctx, base)
			}
			w := httptest.NewRecorder()
			e.api.ServeHTTP(w, hr.WithContext(ctx))
			require.Equal(t, http.StatusCreated, w.Code, "%s", w.Body)
			var created struct {
				ID string `json:"event_id"`
			}
			require.NoError(t, json.Unmarshal(w.Body.Bytes(), &created))
			assert.Equal(t, base+"/v1/events/"+created.ID, w.Header().Get("Location"), "base %q key %q", base, key)
		}
	}
}
