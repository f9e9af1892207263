package noisyneighbour

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/contract"
	"github.com/triggers-dev/triggers/internal/event"
	"github.com/triggers-dev/triggers/internal/webhook"
)

// MaxWaiting bounds the delivery queue's messages waiting for a poller
// (QueueDepth.Visible) in the short form's samples: three batches.
//
// When A's hanging requests hold every slot of the delivery queue's
// mapping, nothing is received and B's events pile up in the queue at its
// 5 a second (with A's 1) until the holds end: at the earlier defaults
// (MaximumConcurrency 5, WEBHOOK_PARALLEL 8) the short form's queue had
// 75 waiting, B received nothing for 13 s and its p99 was 14.8 s (39-98 s
// in the long form: docs/performance.md). With slots to spare the mapping
// takes B's events as they come: at most 6 waited, at load average 7.5.
//
// The bound is on a count, not on B's latency: latencies are wall-clock
// times on a shared 2-core machine, where DynamoDB Local and moto_server
// compete with the other test packages for the CPU (B's p99 here was
// 2.1 s at load average 2, 10.4 s at 7.5, against 1.4 s with A idle).
// They are printed, and `make load` measures them against TargetP99.
const MaxWaiting = 30

// shortForm is the short form's configuration: 20 s of posting, tenant A
// 1 event/s to 20 hanging endpoints (20 hanging requests a second until
// its circuits open; more makes moto_server, the local SQS engine, the
// bottleneck: each of its calls costs time in proportion to the queue's
// depth, which A's backlog grows), tenant B 5 events/s. The webhook
// function runs with the template's settings. The drain ends as soon as
// every B event arrived: its 2 minutes only bound a machine so busy that
// B's p99 passed 10 s (20 s could have cut it short).
var shortForm = Config{Duration: 20 * time.Second, RateA: 1, RateB: 5, Drain: 2 * time.Minute}

// While tenant A's 20 endpoints hang and its backlog grows, tenant B's
// events all arrive, once each, signed, none put off, and never pile up
// in the delivery queue waiting for a slot A holds (MaxWaiting). The
// figures are printed; docs/performance.md has the long form's.
func TestNoisyNeighbour(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cfg := shortForm
	var logs tail
	cfg.Logs = &logs
	rep, err := Run(ctx, cfg)
	require.NoError(t, err, "environment log tail:\n%s", logs.String())
	var out bytes.Buffer
	rep.Format(&out, true)
	t.Logf("\n%s", out.String())
	t.Logf("B's ingest-to-receipt latency: p50 %s, p99 %s (target %s in the long form; not asserted, see MaxWaiting)",
		FormatDuration(rep.B.Latency.P50), FormatDuration(rep.B.Latency.P99), FormatDuration(TargetP99))

	b, a := rep.B, rep.A
	wantB := int(cfg.RateB * cfg.Duration.Seconds())
	assert.Zero(t, b.PostErrors, "B's posts failed: %s", b.FirstPostError)
	assert.Equal(t, wantB, b.Posted, "B's events accepted")
	assert.Empty(t, b.Missing, "B's events that never arrived (drain %s)", cfg.Drain)
	assert.Zero(t, b.Duplicates, "B's webhook-ids received more than once: %v", b.Duplicated)
	assert.Zero(t, b.Unverified, "requests to B whose signature did not verify")
	assert.Zero(t, b.Foreign, "requests to B for events B did not post")
	assert.Zero(t, b.Breaker, "B's healthy endpoint had attempts put off or its circuit opened")
	assert.Equal(t, wantB, b.Latency.Count)
	require.NotEmpty(t, rep.Timeline, "samples")
	waiting := 0
	for _, smp := range rep.Timeline {
		waiting = max(waiting, smp.Delivery.Visible)
	}
	assert.LessOrEqual(t, waiting, MaxWaiting, "the most messages waiting in the delivery queue for a slot of its mapping")

	// A was noisy: its endpoints held requests, its circuits opened, its
	// attempts were put off onto the retry queue.
	assert.Zero(t, a.PostErrors, "A's posts failed: %s", a.FirstPostError)
	assert.Equal(t, int(cfg.RateA*cfg.Duration.Seconds()), a.Posted, "A's events accepted")
	assert.Positive(t, a.Connections, "connections to A's hanging endpoints")
	assert.Positive(t, a.CircuitsOpened["slow"], "A's circuits opened by a request unanswered after WEBHOOK_SLOW_AFTER")
	assert.Positive(t, a.Deferred[contract.DeferredCircuitOpen], "A's attempts put off while its circuits were open")
	assert.Positive(t, a.Attempts[event.OutcomeFailed], "A's attempts that timed out")
	assert.Positive(t, a.Backlog.Visible+a.Backlog.InFlight+a.Backlog.Delayed, "A's backlog on the retry queue when the posting stopped")
	assert.Equal(t, b.Posted, a.Attempts[event.OutcomeDelivered], "delivered attempts are B's, one per event")
}

// tail keeps the last 64 KiB written to it.
type tail struct {
	mu  sync.Mutex
	buf []byte
}

func (w *tail) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	if over := len(w.buf) - 64<<10; over > 0 {
		w.buf = w.buf[over:]
	}
	return len(p), nil
}

func (w *tail) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return string(w.buf)
}

func ms(f float64) time.Duration { return time.Duration(f * float64(time.Millisecond)) }

func TestSummarize(t *testing.T) {
	hundred := make([]time.Duration, 100)
	for i := range hundred {
		hundred[100-1-i] = ms(float64(i + 1)) // descending: Summarize sorts a copy
	}
	got := Summarize(hundred)
	assert.Equal(t, Latency{Count: 100, P50: ms(50), P95: ms(95), P99: ms(99), Max: ms(100)}, got)
	assert.Equal(t, ms(100), hundred[0], "Summarize must not reorder its input")
	assert.Equal(t, Latency{}, Summarize(nil))
	assert.Equal(t, Latency{Count: 1, P50: ms(3), P95: ms(3), P99: ms(3), Max: ms(3)}, Summarize([]time.Duration{ms(3)}))
}

func TestConfigDefaults(t *testing.T) {
	c := Config{Template: "t.json"}
	require.NoError(t, c.defaults())
	assert.Equal(t, Config{Duration: 20 * time.Second, RateB: 5, Endpoints: MaxEndpoints, Drain: 30 * time.Second,
		Interval: time.Second, Template: "t.json", Logs: c.Logs}, c, "the template's concurrency and variables")
	for _, bad := range []Config{{Endpoints: MaxEndpoints + 1}, {RateA: -1}, {Concurrency: -1}, {SlowDelay: -1}, {BurstA: -1}} {
		err := bad.defaults()
		assert.Error(t, err, "%+v", bad)
	}
}

// The receiver records the first receipt of each webhook-id, counts the
// copies, and refuses (401) what B's secret did not sign.
func TestReceiverCounts(t *testing.T) {
	r := newReceiver()
	defer r.srv.Close()
	sec := webhook.NewSecret()
	r.setSecret(sec)
	send := func(id string, signWith webhook.Secret) int {
		t.Helper()
		body := []byte(`{"event_id":"` + id + `"}`)
		req, err := http.NewRequest(http.MethodPost, r.srv.URL+"/hook", bytes.NewReader(body))
		require.NoError(t, err)
		require.NoError(t, webhook.Sign(req.Header, id, time.Now(), body, signWith))
		res, err := r.srv.Client().Do(req)
		require.NoError(t, err)
		res.Body.Close()
		return res.StatusCode
	}
	assert.Equal(t, 200, send("e1", sec))
	assert.Equal(t, 200, send("e1", sec))
	assert.Equal(t, 200, send("e2", sec))
	assert.Equal(t, 200, send("x9", sec))
	assert.Equal(t, 401, send("e3", webhook.NewSecret()))
	now := time.Now()
	b := &posts{at: map[string]time.Time{"e1": now.Add(-time.Second), "e2": now.Add(-time.Second), "e4": now}}
	out := r.outcome(b)
	assert.Equal(t, 3, out.Posted)
	assert.Equal(t, 2, out.Received)
	assert.Equal(t, []string{"e4"}, out.Missing)
	assert.Equal(t, 1, out.Duplicates)
	assert.Equal(t, []string{"e1"}, out.Duplicated)
	assert.Equal(t, 1, out.Unverified)
	assert.Equal(t, 1, out.Foreign, "x9 was not posted by B")
	assert.Equal(t, 2, out.Latency.Count)
	assert.Len(t, r.arrivalsSince(1), 2, "e2 and x9 after e1")
}

// A hanging endpoint accepts a connection and answers nothing until the
// client gives up; close drops what it holds.
func TestHangingEndpoints(t *testing.T) {
	h, err := newHangingEndpoints(2)
	require.NoError(t, err)
	defer h.close()
	urls := h.urls()
	require.Len(t, urls, 2)
	assert.True(t, strings.HasPrefix(urls[0], "https://127.0.0.1:"), urls[0])
	conn, err := net.Dial("tcp", strings.TrimSuffix(strings.TrimPrefix(urls[0], "https://"), "/hook"))
	require.NoError(t, err)
	defer conn.Close()
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(300*time.Millisecond)))
	_, err = conn.Write([]byte("hello"))
	require.NoError(t, err)
	n, err := conn.Read(make([]byte, 1))
	assert.Zero(t, n)
	assert.ErrorContains(t, err, "timeout", "nothing is answered")
	assert.Eventually(t, func() bool { return h.held() == 1 }, 5*time.Second, 10*time.Millisecond)
	h.close()
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(5*time.Second)))
	_, err = conn.Read(make([]byte, 1))
	assert.Error(t, err, "closed by close")
	total, most := h.counts()
	assert.Equal(t, 1, total)
	assert.Equal(t, 1, most)
}

func TestFormat(t *testing.T) {
	rep := Report{
		Config: Config{Duration: time.Minute, RateA: 1, RateB: 5, Endpoints: 20, Drain: time.Minute, Concurrency: 20, Template: "t.json",
			WebhookEnv: map[string]string{"WEBHOOK_PARALLEL": "20"}},
		Webhooks: []string{"Fn through its event source mappings: batch 10"},
		B:        TenantB{Posted: 300, Received: 300, Latency: Latency{Count: 300, P50: ms(750), P95: ms(1340), P99: ms(1390), Max: ms(1520)}},
		A:        TenantA{Posted: 60, Connections: 120, MaxHeld: 120, Deferred: map[string]int{"circuit_open": 1300}, CircuitsOpened: map[string]int{"slow": 120, "failures": 40}, Attempts: map[string]int{"delivered": 300, "failed": 120}},
		Timeline: []Sample{{At: 3 * time.Second, BReceived: 13, BMaxLatency: ms(1360), Delivery: QueueDepth{InFlight: 18}, AHeld: 60, Load1: 3.9}},
		Load:     Load{CPUs: 2, CPU: "cpu", Start: 1, Max: 2, End: 1.5, Wall: 10 * time.Second, CPUSeconds: map[string]float64{"moto_server": 5, "this process": 2}},
	}
	var b bytes.Buffer
	rep.Format(&b, true)
	for _, want := range []string{
		"tenant A 1 events/s to 20 endpoints",
		"MaximumConcurrency 20 per mapping, WEBHOOK_PARALLEL=20):",
		"  Fn through its event source mappings: batch 10\n",
		"t=  3.0s  B received  13 (max   1.36s)  delivery queue   0 waiting  18 in flight",
		"B ingest to receipt: p50 750ms  p95 1.34s  p99 1.39s  max 1.52s  (n=300)",
		"A: attempts put off (scheduled) 1300 (circuit_open 1300); circuits opened 160 (failures 40, slow 120)",
		"attempts made, all tenants: 420 (delivered 300, failed 120)",
		"CPU over 10.0 s of wall time: moto_server 5.0 s, this process 2.0 s (0.70 cores busy)",
	} {
		assert.Contains(t, b.String(), want)
	}
}

func TestFormatDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0: "0", ms(2.5): "2.50ms", ms(746): "746ms", ms(1390): "1.39s", 39*time.Second + ms(200): "39.2s", -ms(5): "-5.00ms",
	} {
		assert.Equal(t, want, FormatDuration(d), "FormatDuration(%v)", d)
	}
}
