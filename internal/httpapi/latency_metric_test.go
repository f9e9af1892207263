package httpapi_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/contract"
	"github.com/triggers-dev/triggers/internal/emf"
	"github.com/triggers-dev/triggers/internal/httpapi"
	"github.com/triggers-dev/triggers/internal/syncio"
)

// latencyLine is one RequestLatency EMF line.
type latencyLine struct {
	route string
	ms    float64
}

// latencyLines returns the RequestLatency lines written so far, checking
// each one's namespace, unit and dimension set.
func latencyLines(t *testing.T, buf *bytes.Buffer) []latencyLine {
	t.Helper()
	var out []latencyLine
	s := bufio.NewScanner(bytes.NewReader(buf.Bytes()))
	for s.Scan() {
		var doc map[string]any
		require.NoError(t, json.Unmarshal(s.Bytes(), &doc), "EMF line %s", s.Text())
		dir := doc["_aws"].(map[string]any)["CloudWatchMetrics"].([]any)[0].(map[string]any)
		m := dir["Metrics"].([]any)[0].(map[string]any)
		if m["Name"] != contract.MetricRequestLatency {
			continue
		}
		assert.Equal(t, "Triggers/test", dir["Namespace"])
		assert.Equal(t, "Milliseconds", m["Unit"])
		assert.Equal(t, []any{[]any{contract.DimensionRoute}}, dir["Dimensions"])
		ms, ok := doc[contract.MetricRequestLatency].(float64)
		require.True(t, ok, "RequestLatency is a number: %s", s.Text())
		out = append(out, latencyLine{route: doc[contract.DimensionRoute].(string), ms: ms})
	}
	return out
}

// Every request, whatever its outcome, writes one RequestLatency line with
// its route (contract.RouteOf: the path template, never an id), and the
// request log line carries the same route for the saved per-route query.
func TestRequestLatencyMetric(t *testing.T) {
	var buf bytes.Buffer
	w, err := emf.New(&syncio.Writer{W: &buf}, "Triggers/test")
	require.NoError(t, err)
	e := newEnv(t, func(c *httpapi.Config) { c.Metrics = w })

	created := e.do(req{method: "POST", path: "/v1/events", tenant: "tenant-a", body: `{"event_type":"a.b","payload":{}}`})
	require.Equal(t, 201, created.code, "%s", created.body)
	id := created.event(t).ID
	steps := []struct {
		r     req
		code  int
		route string
	}{
		{req{method: "GET", path: "/v1/inbox", tenant: "tenant-a"}, 200, "GET /v1/inbox"},
		{req{method: "GET", path: "/v1/inbox?limit=0", tenant: "tenant-a"}, 400, "GET /v1/inbox"},
		{req{method: "GET", path: "/v1/inbox"}, 401, "GET /v1/inbox"},
		{req{method: "GET", path: "/v1/events/" + id, tenant: "tenant-a"}, 200, "GET /v1/events/{event_id}"},
		{req{method: "GET", path: "/v1/events/no-such-event", tenant: "tenant-a"}, 404, "GET /v1/events/{event_id}"},
		{req{method: "DELETE", path: "/v1/inbox", tenant: "tenant-a"}, 405, contract.RouteOther},
		{req{method: "GET", path: "/v1/nothing-here/" + id, tenant: "tenant-a"}, 404, contract.RouteOther},
	}
	want := []string{"POST /v1/events"}
	for _, s := range steps {
		r := e.do(s.r)
		require.Equal(t, s.code, r.code, "%s %s = %d %s", s.r.method, s.r.path, r.code, r.body)
		want = append(want, s.route)
	}
	lines := latencyLines(t, &buf)
	var got []string
	for _, l := range lines {
		got = append(got, l.route)
		assert.GreaterOrEqual(t, l.ms, 0.0)
		assert.Less(t, l.ms, 60000.0, "milliseconds, not nanoseconds")
	}
	assert.Equal(t, want, got, "one line per request, by route")

	// The request log lines name the same routes.
	var logged []string
	for _, line := range strings.Split(strings.TrimSpace(e.logs.String()), "\n") {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &m))
		if m[contract.LogFieldMsg] == contract.LogMsgRequest {
			logged = append(logged, m[contract.LogFieldRoute].(string))
		}
	}
	assert.Equal(t, want, logged)
}
