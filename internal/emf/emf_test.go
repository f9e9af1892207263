package emf

import (
	"bufio"
	"bytes"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/contract"
)

// checkEMF validates one line against the EMF specification: _aws with an
// integer Timestamp and CloudWatchMetrics directives whose every metric and
// dimension is a top-level member of the right type. It returns the
// metrics as "Name{dim=value}=value".
func checkEMF(t *testing.T, line []byte) (ns string, metrics []string) {
	t.Helper()
	var doc map[string]any
	d := json.NewDecoder(bytes.NewReader(line))
	d.UseNumber()
	require.NoError(t, d.Decode(&doc), "line is one JSON object: %s", line)
	aws, ok := doc["_aws"].(map[string]any)
	require.True(t, ok, "_aws member")
	ts, ok := aws["Timestamp"].(json.Number)
	require.True(t, ok, "Timestamp is a number")
	_, err := ts.Int64()
	require.NoError(t, err, "Timestamp is an integer (ms)")
	dirs := aws["CloudWatchMetrics"].([]any)
	require.Len(t, dirs, 1)
	dir := dirs[0].(map[string]any)
	ns = dir["Namespace"].(string)
	var dimText []string
	for _, set := range dir["Dimensions"].([]any) {
		names := set.([]any)
		require.LessOrEqual(t, len(names), 30, "at most 30 dimensions a set")
		for _, n := range names {
			v, ok := doc[n.(string)].(string)
			require.True(t, ok, "dimension %v is a top-level string", n)
			dimText = append(dimText, n.(string)+"="+v)
		}
	}
	for _, m := range dir["Metrics"].([]any) {
		md := m.(map[string]any)
		name := md["Name"].(string)
		assert.Equal(t, unitOf[name], md["Unit"], "unit of %s", name)
		v, ok := doc[name].(json.Number)
		require.True(t, ok, "metric %s is a top-level number", name)
		metrics = append(metrics, name+"{"+strings.Join(dimText, ",")+"}="+v.String())
	}
	return ns, metrics
}

// unitOf is the EMF unit of each metric.
var unitOf = map[string]any{contract.MetricEventsIngested: "Count", contract.MetricEventsRejected: "Count", contract.MetricRequestLatency: "Milliseconds"}

func lines(t *testing.T, b []byte) (out []string) {
	t.Helper()
	s := bufio.NewScanner(bytes.NewReader(b))
	for s.Scan() {
		ns, ms := checkEMF(t, s.Bytes())
		assert.Equal(t, "Triggers/test", ns)
		out = append(out, ms...)
	}
	return out
}

func TestIngestLines(t *testing.T) {
	cases := []struct {
		name     string
		ingested int
		rejected map[string]int
		want     []string
	}{
		{"one stored", 1, nil, []string{"EventsIngested{}=1"}},
		{"one rejected", 0, map[string]int{"invalid_event": 1}, []string{"EventsRejected{Reason=invalid_event}=1"}},
		{"mixed batch", 3, map[string]int{"payload_too_large": 1, "invalid_event": 2, "unused": 0},
			[]string{"EventsIngested{}=3", "EventsRejected{Reason=invalid_event}=2", "EventsRejected{Reason=payload_too_large}=1"}},
		{"nothing", 0, map[string]int{}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var buf bytes.Buffer
			w, err := New(&buf, "Triggers/test")
			require.NoError(t, err)
			w.now = func() time.Time { return time.UnixMilli(1700000000123) }
			w.Ingest(c.ingested, c.rejected)
			assert.Equal(t, c.want, lines(t, buf.Bytes()), "Ingest(%d, %v)", c.ingested, c.rejected)
			if c.want != nil {
				assert.Contains(t, buf.String(), `"Timestamp":1700000000123`)
			}
		})
	}
}

// A request's latency is one RequestLatency line in milliseconds, with
// microsecond precision, by route.
func TestRequestLines(t *testing.T) {
	var buf bytes.Buffer
	w, err := New(&buf, "Triggers/test")
	require.NoError(t, err)
	w.now = func() time.Time { return time.UnixMilli(1700000000123) }
	w.Request("GET /v1/inbox", 12345*time.Microsecond)
	w.Request("other", 2*time.Second)
	assert.Equal(t, []string{"RequestLatency{Route=GET /v1/inbox}=12.345", "RequestLatency{Route=other}=2000"}, lines(t, buf.Bytes()))
	assert.Contains(t, buf.String(), `"Timestamp":1700000000123`)
	Nop{}.Request("GET /v1/inbox", time.Second) // and Nop records nothing
}

// Concurrent requests never interleave their lines.
func TestConcurrentWritesStayWhole(t *testing.T) {
	var buf bytes.Buffer
	w, err := New(&buf, "Triggers/test")
	require.NoError(t, err)
	var wg sync.WaitGroup
	for i := 0; i < 50; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.Ingest(1, map[string]int{"invalid_event": 1})
		}()
	}
	wg.Wait()
	got := lines(t, buf.Bytes())
	assert.Len(t, got, 100)
}

// New refuses a namespace contract.ValidMetricsNamespace refuses.
func TestNewChecksTheNamespace(t *testing.T) {
	_, err := New(&bytes.Buffer{}, "AWS/x")
	assert.ErrorContains(t, err, "reserved")
	_, err = New(&bytes.Buffer{}, "Triggers/x")
	assert.NoError(t, err)
}
