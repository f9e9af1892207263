package dispatch_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/internal/webhook"
	"github.com/triggers-dev/triggers/internal/webhook/dispatch"
)

// newBarrierReceiver answers 500 to every request, each only once n
// requests have arrived (or after a second): n attempts in flight at once.
func newBarrierReceiver(t *testing.T, n int) *receiver {
	r := &receiver{}
	var wg sync.WaitGroup
	wg.Add(n)
	all := make(chan struct{})
	go func() { wg.Wait(); close(all) }()
	var once sync.Map
	r.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if _, seen := once.LoadOrStore(req.Header.Get(webhook.HeaderID), true); !seen {
			wg.Done()
		}
		select {
		case <-all:
		case <-time.After(time.Second):
		}
		r.mu.Lock()
		r.got = append(r.got, received{id: req.Header.Get(webhook.HeaderID)})
		r.mu.Unlock()
		w.WriteHeader(http.StatusInternalServerError)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

// Failures that were in flight together when the circuit opened are one
// run of failures, not failed probes: the circuit opens for Cooldown, as
// docs/delivery.md promises ("doubling with each failed probe"), not for
// Cooldown doubled once per failure past the threshold (6 concurrent
// failures with a threshold of 2 opened it for 16 times Cooldown; a burst
// of 20 for the full hour: found by review).
func TestConcurrentFailuresOpenTheCircuitForOneCooldown(t *testing.T) {
	ctx := context.Background()
	const n = 6
	rcv := newBarrierReceiver(t, n)
	m := &metrics{}
	w := newWorld(t, rcv, func(c *dispatch.Config) {
		c.BreakerThreshold, c.BreakerCooldown, c.SlowAfter, c.Metrics = 2, time.Minute, -1, m
	})
	w.now = w.now.Truncate(time.Millisecond) // the circuit's times are stored in milliseconds
	sub, _ := w.subscribe("tenant-a")
	var batch events.SQSEvent
	for i := range n {
		e := w.event("tenant-a", "t")
		batch.Records = append(batch.Records, deliveryMessage(t, "m"+strconv.Itoa(i), "tenant-a", e))
	}
	res, err := w.d.HandleSQS(ctx, batch)
	require.NoError(t, err)
	require.Empty(t, res.BatchItemFailures)
	require.Len(t, rcv.requests(), n, "every attempt was made: all were in flight before any failure was recorded")

	got, err := w.st.GetSubscription(ctx, "tenant-a", sub.ID)
	require.NoError(t, err)
	assert.Equal(t, n, got.ConsecutiveFailures)
	assert.Equal(t, w.clock().Add(time.Minute), got.CircuitOpenUntil, "open for one Cooldown: no probe has failed")
}
