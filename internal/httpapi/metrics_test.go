package httpapi_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
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
