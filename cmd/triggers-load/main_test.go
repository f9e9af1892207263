package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/contract"
	"github.com/triggers-dev/triggers/internal/dev/noisyneighbour"
)

func ms(f float64) time.Duration { return time.Duration(f * float64(time.Millisecond)) }

func TestPercentile(t *testing.T) {
	hundred := make([]time.Duration, 100)
	for i := range hundred {
		hundred[i] = time.Duration(i+1) * time.Millisecond
	}
	for _, c := range []struct {
		name   string
		sorted []time.Duration
		p      float64
		want   time.Duration
	}{
		{"empty", nil, 50, 0},
		{"one value", []time.Duration{ms(3)}, 50, ms(3)},
		{"one value p99", []time.Duration{ms(3)}, 99, ms(3)},
		{"two values p50 is the lower", []time.Duration{ms(1), ms(2)}, 50, ms(1)},
		{"two values p99 is the upper", []time.Duration{ms(1), ms(2)}, 99, ms(2)},
		{"1..100 p50", hundred, 50, ms(50)},
		{"1..100 p99", hundred, 99, ms(99)},
		{"1..100 p100", hundred, 100, ms(100)},
		{"1..100 tiny p", hundred, 0.001, ms(1)},
		{"three values p50 is the middle", []time.Duration{ms(1), ms(2), ms(9)}, 50, ms(2)},
	} {
		if got := Percentile(c.sorted, c.p); got != c.want {
			t.Errorf("%s: Percentile(%v, %v) = %v, want %v", c.name, c.sorted, c.p, got, c.want)
		}
	}
}

func TestSummarize(t *testing.T) {
	lat := []time.Duration{ms(3), ms(1), ms(2), ms(4)} // unsorted on purpose
	got := Summarize(lat, 1, "boom", 2*time.Second)
	want := Stats{Count: 4, Errors: 1, FirstError: "boom", P50: ms(2), P99: ms(4), Throughput: 2}
	assert.Equal(t, want, got)
	assert.Equal(t, []time.Duration{ms(3), ms(1), ms(2), ms(4)}, lat, "Summarize must not reorder its input")
	assert.Equal(t, Stats{}, Summarize(nil, 0, "", 0), "nothing measured")
}

func TestNewCell(t *testing.T) {
	raw := Stats{Count: 10, P50: ms(10), P99: ms(20), Throughput: 100}
	for _, c := range []struct {
		name     string
		api      Stats
		raw      Stats
		p50, p99 float64
		misses   []string
	}{
		{"within budget", Stats{Count: 10, P50: ms(12), P99: ms(24)}, raw, 1.2, 1.2, []string{}},
		{"p50 over", Stats{Count: 10, P50: ms(16), P99: ms(20)}, raw, 1.6, 1, []string{"p50"}},
		{"p99 over", Stats{Count: 10, P50: ms(10), P99: ms(30)}, raw, 1, 1.5, []string{"p99"}},
		{"faster than raw", Stats{Count: 10, P50: ms(5), P99: ms(10)}, raw, 0.5, 0.5, []string{}},
		{"api errors", Stats{Count: 10, Errors: 1, P50: ms(10), P99: ms(20)}, raw, 1, 1, []string{"errors"}},
		{"raw errors", Stats{Count: 10, P50: ms(10), P99: ms(20)}, Stats{Count: 10, Errors: 2, P50: ms(10), P99: ms(20)}, 1, 1, []string{"errors"}},
		{"nothing measured", Stats{}, Stats{}, 0, 0, []string{"p50", "p99", "errors"}},
	} {
		got := NewCell("ingest", 8, c.api, c.raw)
		assert.InDelta(t, c.p50, got.P50Ratio, 1e-9, "%s: p50 ratio", c.name)
		assert.InDelta(t, c.p99, got.P99Ratio, 1e-9, "%s: p99 ratio", c.name)
		assert.Equal(t, c.misses, got.Misses, "%s: misses", c.name)
	}
}

func TestFormatTable(t *testing.T) {
	cells := []Cell{
		NewCell("ingest", 1, Stats{Count: 100, P50: ms(1.6), P99: ms(3.2), Throughput: 612.4}, Stats{Count: 150, P50: ms(1), P99: ms(2.9), Throughput: 950}),
		NewCell("inbox", 32, Stats{Count: 100, Errors: 2, P50: ms(25), P99: ms(120), Throughput: 80}, Stats{Count: 100, P50: ms(24), P99: ms(110), Throughput: 90}),
	}
	var b bytes.Buffer
	require.NoError(t, FormatTable(&b, cells))
	want := `workload  conc  API p50  API p99  API ops/s  API err  raw p50  raw p99  raw ops/s  raw err  p50 API/raw  p99 API/raw  budget
ingest       1  1.600ms  3.200ms        612        0  1.000ms  2.900ms        950        0       1.60x!        1.10x  MISS p50
inbox       32   25.0ms    120ms         80        2   24.0ms    110ms         90        0        1.04x        1.09x  MISS errors
budget: API/raw <= 1.2x at p50 and p99, 0 errors; ! marks a ratio over it
`
	assert.Equal(t, want, b.String())
}

func TestFormatDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0:                      "-",
		842 * time.Microsecond: "0.842ms",
		ms(9.9994):             "9.999ms",
		ms(12.44):              "12.4ms",
		ms(123.4):              "123ms",
		2 * time.Second:        "2000ms",
	} {
		if got := FormatDuration(d); got != want {
			t.Errorf("FormatDuration(%v) = %q, want %q", d, got, want)
		}
	}
}

func TestParseConcurrency(t *testing.T) {
	got, err := parseConcurrency("1, 8,32")
	require.NoError(t, err)
	assert.Equal(t, []int{1, 8, 32}, got)
	for _, bad := range []string{"", "0", "x", "1,,2", "2000"} {
		if _, err := parseConcurrency(bad); err == nil {
			t.Errorf("parseConcurrency(%q) = nil error, want an error", bad)
		}
	}
}

func TestIngestBodySize(t *testing.T) {
	for _, size := range []int{minPayload, 1024, 10 << 10} {
		body, req, err := ingestBody(size)
		require.NoError(t, err)
		var v struct {
			Payload json.RawMessage `json:"payload"`
		}
		require.NoError(t, json.Unmarshal(body, &v))
		assert.Len(t, v.Payload, size, "payload JSON of -payload %d", size)
		assert.Equal(t, eventType, req.EventType)
	}
}

func TestBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-concurrency", "0"}, {"-duration", "0s"}, {"-payload", "5"}, {"-rounds", "0"}, {"-workloads", "ingest,scan"}, {"-raw-decoder", "json"}, {"extra"},
		{"-scenario", "noisy"}, {"-scenario", scenarioNoisy, "-rate-b", "0"}, {"-scenario", scenarioNoisy, "-rate-a", "-1"},
		{"-scenario", scenarioNoisy, "-endpoints", "21"}, {"-scenario", scenarioNoisy, "-esm-concurrency", "1"},
		{"-scenario", scenarioNoisy, "-webhook-env", "WEBHOOK_PARALLEL"}, {"-scenario", scenarioNoisy, "-duration", "-1s"},
		{"-scenario", scenarioNoisy, "-drain", "0s"},
		{"-scenario", scenarioSlow, "-lanes", "maybe"}, {"-scenario", scenarioSlow, "-lanes", "on,on"},
		{"-scenario", scenarioSlow, "-slow-delay", "0s"}, {"-scenario", scenarioSlow, "-burst-a", "-1"},
		{"-scenario", scenarioSlow, "-endpoints", "0"}, {"-scenario", scenarioSlow, "-rate-b", "0"},
		{"-scenario", scenarioSlow, "-webhook-env", "WEBHOOK_SLOW_LANE_AFTER=off"},
	} {
		var out, errb bytes.Buffer
		if code := run(context.Background(), args, &out, &errb); code != 2 {
			t.Errorf("run(%q) = %d, want 2 (stderr %s)", args, code, errb.String())
		}
	}
}

// TestEndToEnd runs the tool briefly against a real DynamoDB Local (it
// starts its own) and checks that it measured both arms of every cell
// without errors. It asserts no times.
func TestEndToEnd(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var out, errb bytes.Buffer
	prof := t.TempDir()
	code := run(ctx, []string{"-duration", "400ms", "-warmup", "400ms", "-concurrency", "1,4", "-json", "-cpuprofile", prof}, &out, &errb)
	require.Equal(t, 0, code, "stderr: %s", errb.String())
	var rep Report
	require.NoError(t, json.Unmarshal(out.Bytes(), &rep), "output: %s", out.String())
	require.Len(t, rep.Cells, 4, "ingest and inbox at 1 and 4")
	seen := map[string]bool{}
	for _, c := range rep.Cells {
		seen[c.Workload] = true
		for arm, s := range map[string]Stats{"api": c.API, "raw": c.Raw} {
			assert.Zero(t, s.Errors, "%s %d %s: errors (first: %s)", c.Workload, c.Concurrency, arm, s.FirstError)
			assert.Positive(t, s.Count, "%s %d %s: operations", c.Workload, c.Concurrency, arm)
			assert.Positive(t, s.P50, "%s %d %s: p50", c.Workload, c.Concurrency, arm)
			assert.GreaterOrEqual(t, s.P99, s.P50, "%s %d %s: p99 >= p50", c.Workload, c.Concurrency, arm)
			assert.Positive(t, s.Throughput, "%s %d %s: throughput", c.Workload, c.Concurrency, arm)
		}
		assert.Positive(t, c.P50Ratio, "%s %d: p50 ratio", c.Workload, c.Concurrency)
		assert.Positive(t, c.P99Ratio, "%s %d: p99 ratio", c.Workload, c.Concurrency)
		assert.NotContains(t, c.Misses, "errors")
	}
	assert.Equal(t, map[string]bool{"ingest": true, "inbox": true}, seen)
	assert.NotEmpty(t, rep.Machine.CPU)
	profiles, err := filepath.Glob(filepath.Join(prof, "*.pprof"))
	require.NoError(t, err)
	assert.Len(t, profiles, 16, "a profile per workload, concurrency, arm and round")
	assert.True(t, strings.HasSuffix(rep.Options.Template, goldenTemplate), "default template: %s", rep.Options.Template)
}

func TestCPUTimes(t *testing.T) {
	self, other := cpuTimes(os.Getpid())
	if runtime.GOOS != "linux" {
		t.Logf("CPU times are read on Linux only: %v %v", self, other)
		return
	}
	assert.Positive(t, self, "this process's CPU time")
	assert.Positive(t, other, "the CPU time of a process by pid (this one)")
	_, none := cpuTimes(0)
	assert.Zero(t, none, "no pid, no figure")
}

func TestFormatTableCPU(t *testing.T) {
	c := NewCell("ingest", 8, Stats{Count: 1, P50: ms(2), P99: ms(3), CPUPerOp: ms(1.2), EngineCPUPerOp: ms(3)}, Stats{Count: 1, P50: ms(1), P99: ms(2), CPUPerOp: ms(0.5), EngineCPUPerOp: ms(3.1)})
	var b bytes.Buffer
	require.NoError(t, FormatTable(&b, []Cell{c}))
	assert.Contains(t, b.String(), "ingest     8  API 1.200ms + 3.000ms   raw 0.500ms + 3.100ms\n")
}

func TestParseEnv(t *testing.T) {
	got, err := parseEnv("WEBHOOK_PARALLEL=20, WEBHOOK_SLOW_AFTER=2s")
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"WEBHOOK_PARALLEL": "20", "WEBHOOK_SLOW_AFTER": "2s"}, got)
	got, err = parseEnv("")
	require.NoError(t, err)
	assert.Equal(t, map[string]string{}, got, "empty: the template's own settings")
	for _, bad := range []string{"X", "=1", "A=1,,B=2"} {
		if _, err := parseEnv(bad); err == nil {
			t.Errorf("parseEnv(%q) = nil error, want an error", bad)
		}
	}
}

func TestNoisyVerdict(t *testing.T) {
	ok := noisyneighbour.Report{B: noisyneighbour.TenantB{Posted: 10, Received: 10, Latency: noisyneighbour.Latency{P99: noisyneighbour.TargetP99}}}
	assert.Equal(t, "met", verdict(ok))
	bad := ok
	bad.B.Latency.P99 = noisyneighbour.TargetP99 + time.Millisecond
	bad.B.Missing = []string{"e1"}
	bad.B.Duplicates = 1
	bad.B.PostErrors = 2
	assert.Equal(t, "MISS p99, lost, duplicates, post errors", verdict(bad))
}

func TestParseLanes(t *testing.T) {
	for in, want := range map[string][]string{"on,off": {"on", "off"}, "off, on": {"off", "on"}, "on": {"on"}, "off": {"off"}} {
		got, err := parseLanes(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, "parseLanes(%q)", in)
	}
	for _, bad := range []string{"", "on,", "on,on", "yes", "on,off,on"} {
		_, err := parseLanes(bad)
		assert.Error(t, err, "parseLanes(%q)", bad)
	}
}

// The slow-neighbour scenario's shared flags take its own defaults only
// where they were not set.
func TestSlowDefaults(t *testing.T) {
	n := noisyFlags{endpoints: 20, rateA: 1, drain: time.Minute}
	n.slowDefaults(map[string]bool{})
	assert.Equal(t, noisyFlags{endpoints: 4, rateA: 2, drain: 30 * time.Second}, n)
	n = noisyFlags{endpoints: 7, rateA: 0, drain: time.Minute}
	n.slowDefaults(map[string]bool{"endpoints": true, "rate-a": true, "drain": true})
	assert.Equal(t, noisyFlags{endpoints: 7, rateA: 0, drain: time.Minute}, n)
}

func TestFormatSlowComparison(t *testing.T) {
	arm := func(lane string, p50, p99 time.Duration, most int, mean float64, busy, behind int) SlowArm {
		return SlowArm{Lane: lane, Report: noisyneighbour.Report{
			B: noisyneighbour.TenantB{Posted: 10, Received: 10, Latency: noisyneighbour.Latency{Count: 10, P50: p50, P99: p99, Max: p99}},
			A: noisyneighbour.TenantA{Deferred: map[string]int{contract.DeferredTenantBusy: busy, contract.DeferredBehindWake: behind},
				Slow: &noisyneighbour.SlowA{MaxInFlight: most, Occupancy: mean, Wanted: 80, Delivered: 20, OldestFirst: 15}},
		}}
	}
	var b bytes.Buffer
	formatSlowComparison(&b, SlowReport{Arms: []SlowArm{arm("off", ms(1500), ms(3000), 100, 40, 0, 0), arm("on", ms(1000), ms(1500), 4, 2.5, 300, 12)}})
	for _, want := range []string{
		"on             1.00s     1.50s     1.50s              4           2.50            20/80            15/20           300/12              0\n",
		"off            1.50s     3.00s     3.00s            100          40.00            20/80            15/20              0/0              0\n",
		"off / on        1.50      2.00      2.00          25.00          16.00\n",
		"slow lane on: B's ingest-to-receipt p99 <= 2.00s, nothing lost or duplicated: met\n",
		"slow lane off: B's ingest-to-receipt p99 <= 2.00s, nothing lost or duplicated: MISS p99\n",
	} {
		assert.Contains(t, b.String(), want)
	}
}
