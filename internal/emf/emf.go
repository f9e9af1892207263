// Package emf writes the runtime's own CloudWatch metrics as embedded
// metric format (EMF) log lines: one JSON object a line that CloudWatch Logs
// turns into metrics when the function's log group receives it. No AWS SDK
// call, no agent, no extra latency: a Lambda function's stdout is its log.
//
// Metrics (namespace set by METRICS_NAMESPACE, see docs/runtime.md):
//
//	EventsIngested                 events stored (201); no dimension
//	EventsRejected, dim Reason     events refused, by error code
//	RequestLatency, dim Route      time to answer a request (ms), by route
//
// The format is specified at
// https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/CloudWatch_Embedded_Metric_Format_Specification.html
package emf

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"sync"
	"time"

	"github.com/triggers-dev/triggers/contract"
)

// Recorder counts ingestion outcomes and times requests. Implementations
// are safe for concurrent use.
type Recorder interface {
	// Ingest records the outcome of one ingestion request: how many events
	// were stored, and how many were rejected, by reason (an error code
	// such as "invalid_event"). A request without outcome records nothing.
	Ingest(ingested int, rejected map[string]int)
	// Request records how long one request took to answer, by route: a
	// contract.RouteOf value, so the dimension stays bounded.
	Request(route string, d time.Duration)
}

// Nop records nothing.
type Nop struct{}

// Ingest does nothing.
func (Nop) Ingest(int, map[string]int) {}

// Request does nothing.
func (Nop) Request(string, time.Duration) {}

// Writer writes EMF lines to W, one line per metric set, each in a single
// Write so that concurrent requests never interleave.
type Writer struct {
	namespace string
	mu        sync.Mutex
	w         io.Writer
	now       func() time.Time
}

// New returns a Writer to w in namespace. The namespace must be 1-255
// characters of CloudWatch's namespace alphabet.
func New(w io.Writer, namespace string) (*Writer, error) {
	if err := contract.ValidMetricsNamespace(namespace); err != nil {
		return nil, err
	}
	return &Writer{namespace: namespace, w: w, now: time.Now}, nil
}

// Namespace returns the namespace of the lines.
func (w *Writer) Namespace() string { return w.namespace }

type metricDef struct {
	Name string `json:"Name"`
	Unit string `json:"Unit"`
}

type directive struct {
	Namespace  string      `json:"Namespace"`
	Dimensions [][]string  `json:"Dimensions"`
	Metrics    []metricDef `json:"Metrics"`
}

type meta struct {
	Timestamp         int64       `json:"Timestamp"`
	CloudWatchMetrics []directive `json:"CloudWatchMetrics"`
}

// Ingest writes one line for the ingested count (when positive) and one
// line per rejection reason (in name order).
func (w *Writer) Ingest(ingested int, rejected map[string]int) {
	ts := w.now().UnixMilli()
	var lines [][]byte
	if ingested > 0 {
		lines = append(lines, w.line(ts, contract.MetricEventsIngested, unitCount, nil, ingested))
	}
	reasons := make([]string, 0, len(rejected))
	for r, n := range rejected {
		if n > 0 {
			reasons = append(reasons, r)
		}
	}
	sort.Strings(reasons)
	for _, r := range reasons {
		lines = append(lines, w.line(ts, contract.MetricEventsRejected, unitCount, map[string]string{contract.DimensionReason: r}, rejected[r]))
	}
	if len(lines) == 0 {
		return
	}
	w.write(lines)
}

// Request writes one RequestLatency line: d in milliseconds (microsecond
// precision) with dimension Route. CloudWatch keeps each value, so the
// dashboards and alarms can use percentiles (p95) of it.
func (w *Writer) Request(route string, d time.Duration) {
	ms := float64(d.Microseconds()) / 1000
	w.write([][]byte{w.line(w.now().UnixMilli(), contract.MetricRequestLatency, unitMilliseconds, map[string]string{contract.DimensionRoute: route}, ms)})
}

// EMF units of the metrics.
const (
	unitCount        = "Count"
	unitMilliseconds = "Milliseconds"
)

// write writes lines in one Write, so that concurrent requests never
// interleave.
func (w *Writer) write(lines [][]byte) {
	var buf []byte
	for _, l := range lines {
		buf = append(append(buf, l...), '\n')
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	_, _ = w.w.Write(buf) // metrics are best effort: a lost log line loses a count, never a request
}

func (w *Writer) line(ts int64, name, unit string, dims map[string]string, value any) []byte {
	return w.lineWith(ts, name, unit, dims, nil, value)
}

// lineWith is line with props: string properties beside the dimensions,
// which Logs Insights can group by without making metrics of them.
func (w *Writer) lineWith(ts int64, name, unit string, dims, props map[string]string, value any) []byte {
	names := make([]string, 0, len(dims))
	for k := range dims {
		names = append(names, k)
	}
	sort.Strings(names)
	doc := map[string]any{
		"_aws": meta{Timestamp: ts, CloudWatchMetrics: []directive{{
			Namespace: w.namespace, Dimensions: [][]string{names},
			Metrics: []metricDef{{Name: name, Unit: unit}},
		}}},
		name: value,
	}
	for k, v := range props {
		doc[k] = v
	}
	for k, v := range dims {
		doc[k] = v
	}
	b, err := json.Marshal(doc)
	if err != nil {
		// Only strings, ints and finite floats above: cannot happen.
		panic(fmt.Sprintf("emf: %v", err))
	}
	return b
}
