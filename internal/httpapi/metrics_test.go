package httpapi_test

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/contract"
	"github.com/triggers-dev/triggers/internal/emf"
	"github.com/triggers-dev/triggers/internal/httpapi"
	"github.com/triggers-dev/triggers/internal/syncio"
)

// emfCounts parses the EMF lines written so far into
// "EventsIngested" / "EventsRejected:<reason>" -> total.
func emfCounts(t *testing.T, buf *bytes.Buffer) map[string]int {
	t.Helper()
	out := map[string]int{}
	s := bufio.NewScanner(bytes.NewReader(buf.Bytes()))
	for s.Scan() {
		var doc map[string]any
		require.NoError(t, json.Unmarshal(s.Bytes(), &doc), "EMF line %s", s.Text())
		aws := doc["_aws"].(map[string]any)
		dir := aws["CloudWatchMetrics"].([]any)[0].(map[string]any)
		assert.Equal(t, "Triggers/test", dir["Namespace"])
		name := dir["Metrics"].([]any)[0].(map[string]any)["Name"].(string)
		if name == contract.MetricRequestLatency {
			continue // every request has one: TestRequestLatencyMetric
		}
		key := name
		if r, ok := doc[contract.DimensionReason].(string); ok {
			key += ":" + r
		}
		out[key] += int(doc[name].(float64))
	}
	return out
}

// Ingestion outcomes become EMF metrics: stored events, rejected events by
// error code (a request rejected whole counts once), idempotent repeats
// and other routes count nothing.
func TestIngestMetrics(t *testing.T) {
	var buf bytes.Buffer
	w, err := emf.New(&syncio.Writer{W: &buf}, "Triggers/test")
	require.NoError(t, err)
	e := newEnv(t, func(c *httpapi.Config) { c.Metrics = w })

	type step struct {
		name string
		r    req
		code int
		want map[string]int // counts added by this request
	}
	steps := []step{
		{"stored", req{method: "POST", path: "/v1/events", tenant: "tenant-a", body: `{"event_type":"a.b","payload":{}}`}, 201,
			map[string]int{"EventsIngested": 1}},
		{"invalid event", req{method: "POST", path: "/v1/events", tenant: "tenant-a", body: `{"event_type":"","payload":{}}`}, 400,
			map[string]int{"EventsRejected:invalid_event": 1}},
		{"malformed JSON", req{method: "POST", path: "/v1/events", tenant: "tenant-a", body: `{`}, 400,
			map[string]int{"EventsRejected:invalid_json": 1}},
		{"too large", req{method: "POST", path: "/v1/events", tenant: "tenant-a", body: `{"event_type":"a","payload":{"x":"` + strings.Repeat("x", 300<<10) + `"}}`}, 413,
			map[string]int{"EventsRejected:payload_too_large": 1}},
		{"batch mixed", req{method: "POST", path: "/v1/events/batch", tenant: "tenant-a",
			body: `{"events":[{"event_type":"a","payload":{}},{"event_type":"!","payload":{}},{"event_type":"b","payload":{}},{"event_type":"c","payload":[]}]}`}, 207,
			map[string]int{"EventsIngested": 2, "EventsRejected:invalid_event": 1, "EventsRejected:invalid_payload": 1}},
		{"first idempotent", req{method: "POST", path: "/v1/events", tenant: "tenant-a", body: `{"event_type":"a","payload":{}}`, headers: map[string]string{"Idempotency-Key": "k1"}}, 201,
			map[string]int{"EventsIngested": 1}},
		{"idempotent repeat", req{method: "POST", path: "/v1/events", tenant: "tenant-a", body: `{"event_type":"a","payload":{}}`, headers: map[string]string{"Idempotency-Key": "k1"}}, 200,
			map[string]int{}},
		{"batch with an Idempotency-Key", req{method: "POST", path: "/v1/events/batch", tenant: "tenant-a", body: `{"events":[{"event_type":"a","payload":{}}]}`, headers: map[string]string{"Idempotency-Key": "k2"}}, 400,
			map[string]int{"EventsRejected:invalid_idempotency_key": 1}},
		{"a query parameter on POST /v1/events", req{method: "POST", path: "/v1/events?dry_run=1", tenant: "tenant-a", body: `{"event_type":"a","payload":{}}`}, 400,
			map[string]int{"EventsRejected:invalid_parameter": 1}},
		{"a query parameter on the batch", req{method: "POST", path: "/v1/events/batch?x", tenant: "tenant-a", body: `{"events":[{"event_type":"a","payload":{}}]}`}, 400,
			map[string]int{"EventsRejected:invalid_parameter": 1}},
		{"a query parameter elsewhere is not ingestion", req{method: "GET", path: "/v1/subscriptions?limit=1", tenant: "tenant-a"}, 400, map[string]int{}},
		{"inbox is not ingestion", req{method: "GET", path: "/v1/inbox", tenant: "tenant-a"}, 200, map[string]int{}},
		{"unauthenticated is not counted", req{method: "POST", path: "/v1/events", body: `{"event_type":"a","payload":{}}`}, 401, map[string]int{}},
	}
	want := map[string]int{}
	for _, s := range steps {
		r := e.do(s.r)
		require.Equal(t, s.code, r.code, "%s: %s %s = %d %s", s.name, s.r.method, s.r.path, r.code, r.body)
		for k, v := range s.want {
			want[k] += v
		}
		got := emfCounts(t, &buf)
		assert.Equal(t, want, got, "after %q", s.name)
	}
	// The error codes used as Reason are the contract's codes.
	var reasons []string
	for k := range want {
		if r, ok := strings.CutPrefix(k, "EventsRejected:"); ok {
			reasons = append(reasons, r)
		}
	}
	sort.Strings(reasons)
	assert.Equal(t, []string{"invalid_event", "invalid_idempotency_key", "invalid_json", "invalid_parameter", "invalid_payload", "payload_too_large"}, reasons)
	assert.Equal(t, http.StatusOK, e.do(req{method: "GET", path: "/v1/inbox", tenant: "tenant-a"}).code)
}

// Every refusal of an authenticated ingestion request (POST /v1/events,
// the batch) counts once in EventsRejected, by its error code, whichever
// check refuses it: the X-Correlation-Id check and the passive region's
// 503, which come before the route's handler, counted nothing (found by
// review), as the handler's own refusals (content type, encoding, size,
// Idempotency-Key) and the unread query, key and body do. A request that
// is not an authenticated ingestion request (no tenant, a credential the
// authorizer never saw, another method on an ingestion path) counts
// nothing, even when its answer is the same 400.
func TestIngestMetricsCountEveryRefusal(t *testing.T) {
	var buf bytes.Buffer
	w, err := emf.New(&syncio.Writer{W: &buf}, "Triggers/test")
	require.NoError(t, err)
	e := newEnv(t, func(c *httpapi.Config) { c.Metrics = w })
	passive := newEnvOn(t, e.table, db.Client, func(c *httpapi.Config) {
		c.Metrics = w
		c.WriterRegion, c.Region = "eu-west-1", "us-east-1"
	})
	const one = `{"event_type":"a.b","payload":{}}`
	bodies := map[string]string{"/v1/events": one, "/v1/events/batch": `{"events":[` + one + `]}`}

	type refusal struct {
		name   string
		header http.Header // added to the request's
		tenant string      // "" for none
		method string      // "" for POST
		body   string      // "" for the route's valid body
		query  string
		api    *env
		code   int
		reason string // "" when nothing is counted
	}
	h := func(kv ...string) http.Header {
		out := http.Header{}
		for i := 0; i < len(kv); i += 2 {
			out.Add(kv[i], kv[i+1])
		}
		return out
	}
	refusals := []refusal{
		{name: "X-Correlation-Id with a space", header: h("X-Correlation-Id", "a b"), code: 400, reason: "invalid_header"},
		{name: "X-Correlation-Id outside ASCII", header: h("X-Correlation-Id", "café"), code: 400, reason: "invalid_header"},
		{name: "X-Correlation-Id over 128 characters", header: h("X-Correlation-Id", strings.Repeat("c", 129)), code: 400, reason: "invalid_header"},
		{name: "X-Correlation-Id twice", header: h("X-Correlation-Id", "one", "X-Correlation-Id", "two"), code: 400, reason: "invalid_header"},
		{name: "the passive region", api: passive, code: 503, reason: "unavailable"},
		{name: "the passive region and a bad X-Correlation-Id", api: passive, header: h("X-Correlation-Id", "a b"), code: 400, reason: "invalid_header"},
		{name: "a query parameter", query: "?dry_run=1", code: 400, reason: "invalid_parameter"},
		{name: "no Content-Type", header: h("Content-Type", ""), code: 415, reason: "unsupported_media_type"},
		{name: "text/plain", header: h("Content-Type", "text/plain"), code: 415, reason: "unsupported_media_type"},
		{name: "two Content-Types", header: h("Content-Type", "application/json", "Content-Type", "text/plain"), code: 415, reason: "unsupported_media_type"},
		{name: "a Latin-1 charset", header: h("Content-Type", "application/json; charset=iso-8859-1"), code: 415, reason: "unsupported_media_type"},
		{name: "gzip", header: h("Content-Encoding", "gzip"), code: 415, reason: "unsupported_media_type"},
		{name: "over 256 KiB", body: `{"event_type":"a","payload":{"x":"` + strings.Repeat("x", 300<<10) + `"}}`, code: 413, reason: "payload_too_large"},
		{name: "malformed JSON", body: `{`, code: 400, reason: "invalid_json"},
		{name: "a bad X-Correlation-Id without a tenant", tenant: "-", header: h("X-Correlation-Id", "a b"), code: 400},
		{name: "no tenant", tenant: "-", code: 401},
		{name: "a credential the authorizer never saw", header: h("X-Api-Key", "trg_x"), code: 401},
		{name: "a bad X-Correlation-Id and a credential the authorizer never saw", header: h("X-Api-Key", "trg_x", "X-Correlation-Id", "a b"), code: 400},
		{name: "another method", method: "PUT", code: 405},
		{name: "another method with a bad X-Correlation-Id", method: "GET", body: "-", header: h("X-Correlation-Id", "a b"), code: 400},
	}
	for _, path := range []string{"/v1/events", "/v1/events/batch"} {
		for _, c := range refusals {
			body := c.body
			switch body {
			case "":
				body = bodies[path]
			case "-":
				body = ""
			}
			method := cmp.Or(c.method, "POST")
			var rd io.Reader
			if body != "" {
				rd = strings.NewReader(body)
			}
			hr := httptest.NewRequest(method, path+c.query, rd)
			hr.Header.Set("Content-Type", "application/json")
			for k, vs := range c.header {
				hr.Header.Del(k)
				for _, v := range vs {
					if v != "" {
						hr.Header.Add(k, v)
					}
				}
			}
			if c.tenant != "-" {
				hr = hr.WithContext(httpapi.WithTenant(hr.Context(), cmp.Or(c.tenant, "tenant-a")))
			}
			api := cmp.Or(c.api, e)
			before := emfCounts(t, &buf)
			rec := httptest.NewRecorder()
			api.api.ServeHTTP(rec, hr)
			require.Equal(t, c.code, rec.Code, "%s %s: %s: %s", method, path, c.name, rec.Body)
			added := emfCounts(t, &buf)
			for k, v := range before {
				if added[k] -= v; added[k] == 0 {
					delete(added, k)
				}
			}
			want := map[string]int{}
			if c.reason != "" {
				want["EventsRejected:"+c.reason] = 1
			}
			assert.Equal(t, want, added, "%s %s: %s: counted", method, path, c.name)
		}
	}
	assert.Zero(t, e.itemCount(), "a refused request stored nothing")
}
