package noisyneighbour

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/contract"
	"github.com/triggers-dev/triggers/internal/dev/devenv"
	"github.com/triggers-dev/triggers/internal/event"
	"github.com/triggers-dev/triggers/internal/webhook"
	"github.com/triggers-dev/triggers/internal/webhook/dispatch"
)

// slowForm is the slow variant's short form: tenant A's 6 endpoints
// answer 200 after 1.5 s (slow to the lane, WEBHOOK_SLOW_LANE_AFTER 1 s,
// and well under the breaker's WEBHOOK_SLOW_AFTER 5 s, so no circuit
// opens; the long form's 4 s is scaled down to keep the test short: the
// lane drains 4 requests per delay), and A posts a burst of 3 events (18
// requests offered at once, 4.5 x the lane's 4 slots: A needs at least 5
// delays, 7.5 s, and with its put-off attempts' waits about 15 s, while
// B's last event is posted at 1.8 s); tenant B posts 5 events/s for 2 s.
// (With a burst of 2, A's backlog lasted about 8 s: a machine busy enough
// to delay B's last delivery past that, as B's p99 of 10 s at load 7.5
// did, would fail PendingWhenBDone.) The webhook function runs with the
// template's settings. About 30 s in all: most of it A's backlog, whose
// put-off attempts wait about 1 s, then 2, 4... (docs/delivery.md).
var slowForm = Config{Duration: 2 * time.Second, RateB: 5, Endpoints: 6, BurstA: 3, SlowDelay: 1500 * time.Millisecond,
	Drain: time.Minute, Interval: time.Second}

// While tenant A's endpoints answer slowly but successfully (no circuit
// opens), the slow lane holds A to its slots: A's endpoints never hold
// more than TenantSlowConcurrency requests at once, A's surplus is put
// off (tenant_busy) and delivered later, every delivery of both tenants
// arrives exactly once, none of B's attempts is put off, and B's events
// all arrive while A's backlog is still pending. No wall-clock bound:
// the figures are printed; docs/performance.md has the long form's.
func TestSlowNeighbour(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cfg := slowForm
	var logs tail
	cfg.Logs = &logs
	rep, err := Run(ctx, cfg)
	require.NoError(t, err, "environment log tail:\n%s", logs.String())
	var out bytes.Buffer
	rep.Format(&out, true)
	t.Logf("\n%s", out.String())

	b, a := rep.B, rep.A
	wantB := int(cfg.RateB * cfg.Duration.Seconds())
	assert.Zero(t, b.PostErrors, "B's posts failed: %s", b.FirstPostError)
	assert.Equal(t, wantB, b.Posted, "B's events accepted")
	assert.Empty(t, b.Missing, "B's events that never arrived (drain %s)", cfg.Drain)
	assert.Zero(t, b.Duplicates, "B's webhook-ids received more than once: %v", b.Duplicated)
	assert.Zero(t, b.Unverified, "requests to B whose signature did not verify")
	assert.Zero(t, b.Foreign, "requests to B for events B did not post")
	assert.Zero(t, b.Deferred[contract.DeferredTenantBusy], "B's attempts put off for A's slow lane")
	assert.Zero(t, b.Breaker, "B's attempts put off or circuits opened: %v", b.Deferred)

	require.NotNil(t, a.Slow)
	sl := a.Slow
	assert.Zero(t, a.PostErrors, "A's posts failed: %s", a.FirstPostError)
	assert.Equal(t, cfg.BurstA, a.Posted, "A's events accepted")
	assert.Positive(t, sl.MaxInFlight, "A's endpoints got requests after the warm-up")
	assert.LessOrEqual(t, sl.MaxInFlight, dispatch.DefaultTenantSlowConcurrency,
		"requests A's slow endpoints held at once (the template's WEBHOOK_TENANT_SLOW_CONCURRENCY)")
	assert.Positive(t, a.Deferred[contract.DeferredTenantBusy], "A's attempts put off while its lane was full")
	assert.Empty(t, a.CircuitsOpened, "A's endpoints answer before WEBHOOK_SLOW_AFTER: no circuit opens")
	assert.Zero(t, sl.Unverified, "requests to A whose signature did not verify")
	assert.Equal(t, cfg.BurstA*cfg.Endpoints, sl.Wanted)
	assert.Zero(t, sl.Missing, "A's deliveries never made (drain %s)", cfg.Drain)
	assert.Equal(t, sl.Wanted, sl.Delivered, "A's deliveries made")
	assert.Zero(t, sl.Duplicates, "A's (endpoint, event) pairs requested more than once")
	assert.Positive(t, sl.PendingWhenBDone, "A's deliveries still pending when B's last event arrived")
	assert.Zero(t, a.Attempts[event.OutcomeFailed], "failed attempts")
	assert.Equal(t, b.Posted+sl.Wanted+cfg.Endpoints, a.Attempts[event.OutcomeDelivered],
		"delivered attempts, one per B event and per A (endpoint, event), the warm-up's included")
}

// A slow endpoint answers a signed request 200 after its delay (401 to
// one it cannot verify), and counts the requests held at once, each
// (endpoint, webhook-id) pair's requests and when it was first answered.
// The delay is long enough for the three requests sent at once to be held
// at once on a busy machine (with 200 ms, a request whose TLS handshake
// was scheduled late could arrive after another was answered).
func TestSlowEndpoints(t *testing.T) {
	const delay = 2 * time.Second
	s := newSlowEndpoints(2, delay)
	defer s.close()
	secs := []webhook.Secret{webhook.NewSecret(), webhook.NewSecret()}
	for i, sec := range secs {
		s.setSecret(i, sec)
	}
	urls := s.urls()
	require.Len(t, urls, 2)
	send := func(i int, id string, signWith webhook.Secret) int {
		body := []byte(`{"event_id":"` + id + `"}`)
		req, err := http.NewRequest(http.MethodPost, urls[i], bytes.NewReader(body))
		if err != nil {
			return -1
		}
		if err := webhook.Sign(req.Header, id, time.Now(), body, signWith); err != nil {
			return -1
		}
		res, err := s.srvs[i].Client().Do(req)
		if err != nil {
			return -1
		}
		res.Body.Close()
		return res.StatusCode
	}
	start := time.Now()
	var wg sync.WaitGroup
	codes := make([]int, 3)
	wg.Go(func() { codes[0] = send(0, "e1", secs[0]) })
	wg.Go(func() { codes[1] = send(1, "e1", secs[1]) })
	wg.Go(func() { codes[2] = send(0, "e1", secs[0]) })
	wg.Wait()
	assert.Equal(t, []int{200, 200, 200}, codes)
	assert.GreaterOrEqual(t, time.Since(start), delay, "answered after the delay")
	assert.Equal(t, 401, send(1, "e2", secs[0]), "signed with the other endpoint's secret")
	total, most := s.counts()
	assert.Equal(t, 3, total)
	assert.Equal(t, 3, most)
	assert.True(t, s.hasAll([]string{"e1"}))
	assert.False(t, s.hasAll([]string{"e1", "e2"}))
	assert.Equal(t, 2, s.answeredCount())

	var a TenantA
	s.outcome(&a, []string{"e1", "e2"}, start)
	require.NotNil(t, a.Slow)
	assert.Equal(t, SlowA{Delay: delay, Requests: 3, Unverified: 1, MaxInFlight: 3, Wanted: 4, Delivered: 2, Missing: 2,
		Duplicates: 1, PendingWhenBDone: 4, OldestFirst: 2, PerEndpoint: []int{1, 1}, LastDelivered: a.Slow.LastDelivered}, *a.Slow)
	s.outcome(&a, []string{"e1"}, time.Now())
	assert.Zero(t, a.Slow.PendingWhenBDone, "e1 was answered at both endpoints before then")
	// e0, posted before e1, never arrived: e1 went ahead of it at both.
	s.outcome(&a, []string{"e0", "e1", "e2"}, time.Now())
	assert.Equal(t, 2, a.Slow.Delivered)
	assert.Zero(t, a.Slow.OldestFirst, "e1 was delivered while the older e0 was not")

	s.reset()
	_, most = s.counts()
	assert.Zero(t, most, "reset forgets the most held")
	assert.Zero(t, s.occupancy(time.Now()), "nothing in flight since the reset")
}

func TestFormatSlow(t *testing.T) {
	rep := Report{
		Config: Config{Duration: time.Minute, RateB: 5, Endpoints: 6, BurstA: 3, SlowDelay: 4 * time.Second, Drain: time.Minute},
		B:      TenantB{Posted: 10, Received: 10, Deferred: map[string]int{"tenant_busy": 2}},
		A: TenantA{Posted: 3, Slow: &SlowA{Requests: 24, MaxInFlight: 4, Occupancy: 1.25, Wanted: 18, Delivered: 17, Missing: 1, PendingWhenBDone: 12, OldestFirst: 16, PerEndpoint: []int{9, 8}},
			Deferred: map[string]int{"tenant_busy": 30}},
	}
	var b bytes.Buffer
	rep.Format(&b, false)
	for _, want := range []string{
		"slow neighbour: 1m0s of posting, tenant A a burst of 3 events then 0 events/s to 6 endpoints that answer 200 after 4.00s",
		"B: attempts put off 2 (tenant_busy 2)\n",
		"A slow endpoints: 24 requests (0 unverified), at most 4 in flight, 1.25 in flight on average; deliveries 17 of 18 (missing 1, duplicates 0, 16 of them among their endpoint's oldest; per endpoint 9/8), 12 still pending when B's last event arrived",
		"A: attempts put off (scheduled) 30 (tenant_busy 30)",
	} {
		assert.Contains(t, b.String(), want)
	}
}

// An environment that dies during the run (DynamoDB Local killed once
// both tenants are set up) ends it with the environment's error, not
// with the context canceled that stopping the load leaves behind (the
// deferred report of that error once assigned to nothing: found by
// helper 63's review).
func TestRunReportsTheEnvironmentDying(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	killed := false
	started = func(info devenv.Info) {
		require.Positive(t, info.DynamoDBPid)
		p, err := os.FindProcess(info.DynamoDBPid)
		require.NoError(t, err)
		require.NoError(t, p.Kill())
		killed = true
	}
	defer func() { started = nil }()
	// Long enough that only the environment's end can stop it early.
	_, err := Run(ctx, Config{Duration: 2 * time.Minute, RateB: 2, Endpoints: 1, Drain: time.Minute})
	require.True(t, killed, "the environment started")
	require.Error(t, err)
	assert.NotErrorIs(t, err, context.Canceled)
	assert.ErrorContains(t, err, "the dev environment: DynamoDB Local exited unexpectedly")
	assert.NoError(t, ctx.Err(), "Run returned before the test's deadline")
}
