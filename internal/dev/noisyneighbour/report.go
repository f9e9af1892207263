package noisyneighbour

import (
	"fmt"
	"io"
	"maps"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/triggers-dev/triggers/internal/dev/procstat"
	"github.com/triggers-dev/triggers/internal/event"
)

// counters is the webhook function's metrics (dispatch.Metrics), kept in
// memory.
type counters struct {
	mu       sync.Mutex
	attempts map[string]int
	deferred map[string]int // tenant A's, by reason
	circuits map[string]int // tenant A's, by cause
	other    int            // deferrals and circuits of another tenant than A
	otherDef map[string]int // deferrals of another tenant than A, by reason
	disabled int
}

func newCounters() *counters {
	return &counters{attempts: map[string]int{}, deferred: map[string]int{}, circuits: map[string]int{}, otherDef: map[string]int{}}
}

// WebhookAttempt implements dispatch.Metrics.
func (c *counters) WebhookAttempt(outcome string) {
	c.mu.Lock()
	c.attempts[outcome]++
	c.mu.Unlock()
}

// SubscriptionDisabled implements dispatch.Metrics.
func (c *counters) SubscriptionDisabled() {
	c.mu.Lock()
	c.disabled++
	c.mu.Unlock()
}

// WebhookDeferred implements dispatch.Metrics.
func (c *counters) WebhookDeferred(tenant, _, reason string) {
	c.mu.Lock()
	if tenant == TenantIDA {
		c.deferred[reason]++
	} else {
		c.other++
		c.otherDef[reason]++
	}
	c.mu.Unlock()
}

// CircuitOpened implements dispatch.Metrics.
func (c *counters) CircuitOpened(tenant, _, cause string) {
	c.mu.Lock()
	if tenant == TenantIDA {
		c.circuits[cause]++
	} else {
		c.other++
	}
	c.mu.Unlock()
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// totals returns A's deferrals and circuits opened and the failed
// attempts so far.
func (c *counters) totals() (deferred, circuits, failed int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return sum(c.deferred), sum(c.circuits), c.attempts[event.OutcomeFailed]
}

func (c *counters) fill(a *TenantA) {
	c.mu.Lock()
	defer c.mu.Unlock()
	clone := func(m map[string]int) map[string]int {
		out := make(map[string]int, len(m))
		for k, v := range m {
			out[k] = v
		}
		return out
	}
	a.Deferred, a.CircuitsOpened, a.Attempts, a.Disabled = clone(c.deferred), clone(c.circuits), clone(c.attempts), c.disabled
}

// otherTenant counts deferrals and circuit openings of tenants other
// than A, and their deferrals by reason.
func (c *counters) otherTenant() (int, map[string]int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.other, maps.Clone(c.otherDef)
}

// FormatDuration prints d with three significant figures, in ms or s.
func FormatDuration(d time.Duration) string {
	switch {
	case d == 0:
		return "0"
	case d < 0:
		return "-" + FormatDuration(-d)
	case d < 10*time.Millisecond:
		return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond))
	case d < time.Second:
		return fmt.Sprintf("%.0fms", float64(d)/float64(time.Millisecond))
	case d < 10*time.Second:
		return fmt.Sprintf("%.2fs", d.Seconds())
	}
	return fmt.Sprintf("%.1fs", d.Seconds())
}

// FormatSample prints one timeline sample on a line.
func FormatSample(s Sample) string {
	return fmt.Sprintf("t=%5.1fs  B received %3d (max %7s)  delivery queue %3d waiting %3d in flight  retry queue %4d waiting %4d in flight %5d delayed  A held %3d  A deferred %6d  circuits %4d  failed %4d  load %.1f",
		s.At.Seconds(), s.BReceived, FormatDuration(s.BMaxLatency), s.Delivery.Visible, s.Delivery.InFlight,
		s.Retry.Visible, s.Retry.InFlight, s.Retry.Delayed, s.AHeld, s.ADeferred, s.ACircuits, s.Failed, s.Load1)
}

func latencyLine(l Latency) string {
	return fmt.Sprintf("p50 %s  p95 %s  p99 %s  max %s  (n=%d)", FormatDuration(l.P50), FormatDuration(l.P95), FormatDuration(l.P99), FormatDuration(l.Max), l.Count)
}

func mapLine(m map[string]int) string {
	if len(m) == 0 {
		return "0"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + " " + strconv.Itoa(m[k])
	}
	return fmt.Sprintf("%d (%s)", sum(m), strings.Join(parts, ", "))
}

// Format prints the report: settings, B's outcome, A's cost, the load.
// With timeline, every sample too.
func (r Report) Format(w io.Writer, timeline bool) {
	c := r.Config
	if c.SlowDelay > 0 {
		fmt.Fprintf(w, "slow neighbour: %s of posting, tenant A a burst of %d events then %.3g events/s to %d endpoints that answer 200 after %s, tenant B %.3g events/s to one healthy endpoint; drain up to %s\n",
			c.Duration, c.BurstA, c.RateA, c.Endpoints, FormatDuration(c.SlowDelay), c.RateB, c.Drain)
	} else {
		fmt.Fprintf(w, "noisy neighbour: %s of posting, tenant A %.3g events/s to %d endpoints that accept and never answer, tenant B %.3g events/s to one healthy endpoint; drain up to %s\n",
			c.Duration, c.RateA, c.Endpoints, c.RateB, c.Drain)
	}
	fmt.Fprintf(w, "webhook function (template %s", c.Template)
	if c.Concurrency > 0 {
		fmt.Fprintf(w, ", MaximumConcurrency %d per mapping", c.Concurrency)
	}
	if len(c.WebhookEnv) > 0 {
		keys := make([]string, 0, len(c.WebhookEnv))
		for k := range c.WebhookEnv {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			fmt.Fprintf(w, ", %s=%s", k, c.WebhookEnv[k])
		}
	}
	fmt.Fprintln(w, "):")
	for _, l := range r.Webhooks {
		fmt.Fprintf(w, "  %s\n", l)
	}
	if timeline {
		for _, s := range r.Timeline {
			fmt.Fprintln(w, "  "+FormatSample(s))
		}
	}
	b, a := r.B, r.A
	fmt.Fprintf(w, "B: posted %d (%d errors%s), received %d, missing %d, duplicates %d, unverified %d, foreign %d, breaker %d\n",
		b.Posted, b.PostErrors, firstError(b.FirstPostError), b.Received, len(b.Missing), b.Duplicates, b.Unverified, b.Foreign, b.Breaker)
	if len(b.Deferred) > 0 {
		fmt.Fprintf(w, "B: attempts put off %s\n", mapLine(b.Deferred))
	}
	fmt.Fprintf(w, "B ingest to receipt: %s\n", latencyLine(b.Latency))
	fmt.Fprintf(w, "B POST /v1/events:   %s\n", latencyLine(b.Ingest))
	fmt.Fprintf(w, "A: posted %d (%d errors%s), connections to its endpoints %d (at most %d held at once)\n",
		a.Posted, a.PostErrors, firstError(a.FirstPostError), a.Connections, a.MaxHeld)
	if sl := a.Slow; sl != nil {
		fmt.Fprintf(w, "A slow endpoints: %d requests (%d unverified), at most %d in flight, %.2f in flight on average; deliveries %d of %d (missing %d, duplicates %d, %d of them among their endpoint's oldest; per endpoint %s), %d still pending when B's last event arrived\n",
			sl.Requests, sl.Unverified, sl.MaxInFlight, sl.Occupancy, sl.Delivered, sl.Wanted, sl.Missing, sl.Duplicates, sl.OldestFirst, perEndpoint(sl.PerEndpoint), sl.PendingWhenBDone)
	}
	fmt.Fprintf(w, "A: attempts put off (scheduled) %s; circuits opened %s; subscriptions disabled %d\n", mapLine(a.Deferred), mapLine(a.CircuitsOpened), a.Disabled)
	fmt.Fprintf(w, "attempts made, all tenants: %s\n", mapLine(a.Attempts))
	fmt.Fprintf(w, "retry queue when the posting stopped: %d waiting, %d in flight, %d delayed\n", a.Backlog.Visible, a.Backlog.InFlight, a.Backlog.Delayed)
	l := r.Load
	fmt.Fprintf(w, "machine: %s, %d CPUs; load average %.2f at the start, %.2f at most, %.2f at the end\n", l.CPU, l.CPUs, l.Start, l.Max, l.End)
	if len(l.CPUSeconds) > 0 {
		names := make([]string, 0, len(l.CPUSeconds))
		for k := range l.CPUSeconds {
			names = append(names, k)
		}
		slices.Sort(names)
		parts := make([]string, len(names))
		total := 0.0
		for i, n := range names {
			parts[i] = fmt.Sprintf("%s %.1f s", n, l.CPUSeconds[n])
			total += l.CPUSeconds[n]
		}
		fmt.Fprintf(w, "CPU over %.1f s of wall time: %s (%.2f cores busy)\n", l.Wall.Seconds(), strings.Join(parts, ", "), total/l.Wall.Seconds())
	}
}

func firstError(s string) string {
	if s == "" {
		return ""
	}
	return "; first: " + s
}

// loadAverage returns the 1-minute load average, 0 where it cannot be
// read (not Linux).
func loadAverage() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	v, _ := strconv.ParseFloat(f[0], 64)
	return v
}

func numCPU() int { return runtime.NumCPU() }

// cpuModel returns the processor's model name, or "unknown".
func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "unknown"
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

// cpuSeconds returns the CPU time (user + system, children that exited
// included) of each process, by name; 0 where it cannot be read.
func cpuSeconds(pids map[string]int) map[string]float64 {
	out := map[string]float64{}
	for name, pid := range pids {
		if pid > 0 {
			out[name] = procstat.CPU(pid).Seconds()
		}
	}
	return out
}

// perEndpoint writes deliveries per endpoint as "a/b/c" ("-" for none).
func perEndpoint(counts []int) string {
	if len(counts) == 0 {
		return "-"
	}
	parts := make([]string, len(counts))
	for i, c := range counts {
		parts[i] = strconv.Itoa(c)
	}
	return strings.Join(parts, "/")
}
