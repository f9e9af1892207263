package dispatch_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/contract"
	"github.com/triggers-dev/triggers/internal/ddb/ddbtest"
	"github.com/triggers-dev/triggers/internal/dev/motolocal/mototest"
	"github.com/triggers-dev/triggers/internal/event"
	"github.com/triggers-dev/triggers/internal/event/eventtest"
	"github.com/triggers-dev/triggers/internal/store"
	"github.com/triggers-dev/triggers/internal/webhook"
	"github.com/triggers-dev/triggers/internal/webhook/dispatch"
	"github.com/triggers-dev/triggers/schema"
)

var db *ddbtest.Local

// moto is the SQS engine SQSQueue is tested against.
var moto *mototest.Engine

func TestMain(m *testing.M) {
	// Busy: the crash-point harness sends the engine minutes of requests
	// (on an engine of its own, unless TRIGGERS_DYNAMODB_ENDPOINT names
	// one). Only the harness reads a stream (db.WithStreams): the other
	// tests' tables have none (ddbtest.Options).
	os.Exit(mototest.Main(mototest.RunFunc(func() int {
		return ddbtest.MainWith(m, &db, ddbtest.Options{Busy: true, NoStreams: true})
	}), &moto))
}

// half makes the jitter zero: a schedule step of 5 s waits exactly 5 s.
type half struct{}

func (half) Float64() float64 { return 0.5 }

// recordingQueue is a unit-test double of the retry queue: it records
// the Tasks the dispatcher sends and delivers none. (The crash harness's
// simQueue models SQS's delivery; internal/dev/sqsesm drives the handler
// on a real SQS engine.)
type recordingQueue struct {
	mu    sync.Mutex
	tasks []queued
}

type queued struct {
	task  dispatch.Task
	delay time.Duration
}

func (q *recordingQueue) Send(_ context.Context, t dispatch.Task, delay time.Duration) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.tasks = append(q.tasks, queued{t, delay})
	return nil
}

func (q *recordingQueue) take() []queued {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := q.tasks
	q.tasks = nil
	return out
}

// receiver is a webhook endpoint over real TLS: it verifies every request
// with the subscription's secrets and answers the next scripted status.
type receiver struct {
	srv      *httptest.Server
	mu       sync.Mutex
	statuses []int
	got      []received
	verifier *webhook.Verifier
	// hold, when set, keeps the next request unanswered until it is
	// closed (and is then cleared).
	hold chan struct{}
}

type received struct {
	id       string
	header   http.Header
	body     []byte
	verified error
}

func newReceiver(t *testing.T, statuses ...int) *receiver {
	r := &receiver{statuses: statuses}
	r.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		if h := r.hold; h != nil {
			r.hold = nil
			r.mu.Unlock()
			<-h
			r.mu.Lock()
		}
		defer r.mu.Unlock()
		var verr error
		if r.verifier != nil {
			verr = r.verifier.Verify(req.Header, body)
		}
		r.got = append(r.got, received{id: req.Header.Get(webhook.HeaderID), header: req.Header.Clone(), body: body, verified: verr})
		status := http.StatusOK
		if len(r.statuses) > 0 {
			status, r.statuses = r.statuses[0], r.statuses[1:]
		}
		w.WriteHeader(status)
		_, _ = io.WriteString(w, "receiver says "+http.StatusText(status))
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) requests() []received {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]received(nil), r.got...)
}

type world struct {
	t     *testing.T
	st    *store.Store
	q     *recordingQueue
	d     *dispatch.Dispatcher
	now   time.Time
	mu    sync.Mutex
	rcv   *receiver
	logs  *syncLog
	clock func() time.Time
}

type syncLog struct {
	mu  sync.Mutex
	buf []byte
}

func (l *syncLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	return len(p), nil
}

func (l *syncLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return string(l.buf)
}

func newWorld(t *testing.T, rcv *receiver, mutate ...func(*dispatch.Config)) *world {
	w := &world{t: t, q: &recordingQueue{}, now: time.Now().UTC().Truncate(time.Microsecond), rcv: rcv, logs: &syncLog{}}
	w.clock = func() time.Time {
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.now
	}
	w.st = store.New(db.Client, db.CreateTable(t, schema.Events()))
	cfg := dispatch.Config{
		Store: w.st, Queue: w.q, Now: w.clock, Rand: half{},
		Client: webhook.NewHTTPClient(webhook.ClientOptions{AllowPrivate: true, TLSConfig: rcv.srv.Client().Transport.(*http.Transport).TLSClientConfig}),
		Logger: slog.New(slog.NewJSONHandler(w.logs, nil)),
	}
	for _, m := range mutate {
		m(&cfg)
	}
	d, err := dispatch.New(cfg)
	require.NoError(t, err)
	w.d = d
	return w
}

func (w *world) advance(d time.Duration) {
	w.mu.Lock()
	w.now = w.now.Add(d)
	w.mu.Unlock()
}

func (w *world) event(tenant, typ string) event.Event {
	w.t.Helper()
	e, err := event.New(event.CreateRequest{EventType: typ, Payload: eventtest.Payload(w.t, `{"n":12345678901234567890.5}`)}, w.clock(), 24*time.Hour, event.Metadata{SourceIP: "192.0.2.1"})
	require.NoError(w.t, err)
	require.NoError(w.t, w.st.Put(context.Background(), tenant, e))
	return e
}

func (w *world) subscribe(tenant string, types ...string) (event.Subscription, webhook.Secret) {
	w.t.Helper()
	id, err := event.NewSubscriptionID(nil)
	require.NoError(w.t, err)
	sec := webhook.NewSecret()
	if types == nil {
		types = []string{}
	}
	sub := event.Subscription{ID: id, URL: w.rcv.srv.URL + "/hooks?token=abc", EventTypes: types, CreatedAt: event.FormatTime(w.clock()), Secrets: []string{sec.Encode()}}
	require.NoError(w.t, w.st.CreateSubscription(context.Background(), tenant, sub))
	w.rcv.mu.Lock()
	w.rcv.verifier = &webhook.Verifier{Secrets: []webhook.Secret{sec}, Now: w.clock}
	w.rcv.mu.Unlock()
	return sub, sec
}

func (w *world) status(tenant, id string) event.Event {
	w.t.Helper()
	e, err := w.st.Get(context.Background(), tenant, id)
	require.NoError(w.t, err)
	return e
}

func (w *world) attempts(tenant, id string) []event.Attempt {
	w.t.Helper()
	a, err := w.st.ListAttempts(context.Background(), tenant, id)
	require.NoError(w.t, err)
	return a
}

// A new event reaches a matching subscription once, signed, with the
// event's JSON exactly as the API returns it; the attempt is recorded and
// the event becomes delivered.
func TestDeliveredOnFirstAttempt(t *testing.T) {
	ctx := context.Background()
	rcv := newReceiver(t, http.StatusAccepted)
	w := newWorld(t, rcv)
	sub, _ := w.subscribe("tenant-a", "user.created")
	e := w.event("tenant-a", "user.created")

	require.NoError(t, w.d.HandleEvent(ctx, "tenant-a", e.ID))

	got := rcv.requests()
	require.Len(t, got, 1)
	assert.NoError(t, got[0].verified, "Standard Webhooks signature")
	assert.Equal(t, e.ID, got[0].id, "webhook-id is the event id")
	var body map[string]any
	require.NoError(t, json.Unmarshal(got[0].body, &body))
	assert.Equal(t, e.ID, body["event_id"])
	assert.Contains(t, string(got[0].body), `"n":12345678901234567890.5`, "numbers are sent exactly")

	a := w.attempts("tenant-a", e.ID)
	require.Len(t, a, 1)
	// The attempt's time is the dispatcher's clock when it was made (the
	// latency is the wall clock's: taken as measured).
	assert.Equal(t, event.Attempt{SubscriptionID: sub.ID, Number: 1, Timestamp: event.FormatTime(w.clock()), Outcome: "delivered", StatusCode: 202, LatencyMs: a[0].LatencyMs, Response: "receiver says Accepted", Sends: 1, URL: sub.URL}, a[0])
	assert.Equal(t, event.Delivered, w.status("tenant-a", e.ID).Status)
	assert.Empty(t, w.q.take(), "no retry")

	// The same queue message again (SQS delivers at least once): the
	// recorded attempt is not sent twice.
	require.NoError(t, w.d.HandleEvent(ctx, "tenant-a", e.ID))
	assert.Len(t, rcv.requests(), 1)
}

// A failure moves the event to failed and queues attempt 2 after the
// schedule's first delay; the retry moves it failed -> retrying ->
// delivered with retry_count 1, and both attempts are listed.
func TestFailureThenRetry(t *testing.T) {
	ctx := context.Background()
	rcv := newReceiver(t, http.StatusInternalServerError, http.StatusOK)
	w := newWorld(t, rcv)
	sub, _ := w.subscribe("tenant-a")
	e := w.event("tenant-a", "order.paid")

	require.NoError(t, w.d.HandleEvent(ctx, "tenant-a", e.ID))
	assert.Equal(t, event.Failed, w.status("tenant-a", e.ID).Status)
	tasks := w.q.take()
	require.Len(t, tasks, 1)
	assert.Equal(t, dispatch.Task{Tenant: "tenant-a", EventID: e.ID, SubscriptionID: sub.ID, Attempt: 2, DueAt: w.clock().Add(5 * time.Second), TTL: e.TTL}, tasks[0].task)
	assert.Equal(t, 5*time.Second, tasks[0].delay, "the default schedule's first step, no jitter at u=0.5")
	a := w.attempts("tenant-a", e.ID)
	require.Len(t, a, 1)
	assert.Equal(t, "failed", a[0].Outcome)
	assert.Equal(t, 500, a[0].StatusCode)
	assert.Equal(t, event.FormatTime(w.clock().Add(5*time.Second)), a[0].NextAttemptAt)

	w.advance(5 * time.Second)
	require.NoError(t, w.d.HandleTask(ctx, tasks[0].task))
	got := w.status("tenant-a", e.ID)
	assert.Equal(t, event.Delivered, got.Status)
	assert.Equal(t, 1, got.RetryCount)
	a = w.attempts("tenant-a", e.ID)
	require.Len(t, a, 2)
	assert.Equal(t, []string{"failed", "delivered"}, []string{a[0].Outcome, a[1].Outcome})
	assert.Equal(t, []int{1, 2}, []int{a[0].Number, a[1].Number})
	assert.Empty(t, w.q.take())
	for _, r := range rcv.requests() {
		assert.Equal(t, e.ID, r.id, "every attempt carries the same webhook-id")
		assert.NoError(t, r.verified)
	}
}

// A task that is not due yet is sent again for the remaining delay, at
// most SQS's 15 minutes: long schedule steps hop on the retry queue.
func TestTaskNotDueHops(t *testing.T) {
	rcv := newReceiver(t)
	w := newWorld(t, rcv)
	task := dispatch.Task{Tenant: "tenant-a", EventID: "x", SubscriptionID: "sub_x", Attempt: 4, DueAt: w.clock().Add(2 * time.Hour)}
	require.NoError(t, w.d.HandleTask(context.Background(), task))
	assert.Equal(t, []queued{{task, dispatch.MaxQueueDelay}}, w.q.take())
	task.DueAt = w.clock().Add(90 * time.Second)
	require.NoError(t, w.d.HandleTask(context.Background(), task))
	assert.Equal(t, []queued{{task, 90 * time.Second}}, w.q.take())
	assert.Empty(t, rcv.requests())
}

// The schedule ends: after its last step's attempt fails, nothing more is
// queued and the event stays failed. A redelivery then makes the next
// attempt.
func TestScheduleEndsAndRedeliver(t *testing.T) {
	ctx := context.Background()
	rcv := newReceiver(t, 503, 503, 200)
	w := newWorld(t, rcv, func(c *dispatch.Config) { c.Schedule = contract.RetrySchedule{time.Second} })
	sub, _ := w.subscribe("tenant-a")
	e := w.event("tenant-a", "t")
	require.NoError(t, w.d.HandleEvent(ctx, "tenant-a", e.ID))
	tasks := w.q.take()
	require.Len(t, tasks, 1)
	w.advance(time.Second)
	require.NoError(t, w.d.HandleTask(ctx, tasks[0].task))
	assert.Empty(t, w.q.take(), "the schedule had one retry")
	got := w.status("tenant-a", e.ID)
	assert.Equal(t, event.Failed, got.Status)
	assert.Equal(t, 1, got.RetryCount)
	assert.Empty(t, w.attempts("tenant-a", e.ID)[1].NextAttemptAt, "no next attempt")

	// POST /v1/events/{id}/redeliver: the API queues a round, then moves
	// the event failed -> retrying with the round's marker.
	require.NoError(t, dispatch.Redeliver(w.q, w.st)(ctx, "tenant-a", got, "round-1", w.clock()))
	require.NoError(t, w.st.StartRedelivery(ctx, "tenant-a", got, "round-1", w.clock()))
	tasks = w.q.take()
	require.Equal(t, []queued{{dispatch.Task{Tenant: "tenant-a", EventID: e.ID, Round: "round-1", RetryCount: 1, Numbers: map[string]int{sub.ID: 3}, DueAt: w.clock()}, 0}}, tasks)
	require.NoError(t, w.d.HandleTask(ctx, tasks[0].task))
	a := w.attempts("tenant-a", e.ID)
	require.Len(t, a, 3)
	assert.Equal(t, event.Attempt{SubscriptionID: sub.ID, Number: 3, Outcome: "delivered", StatusCode: 200}, event.Attempt{SubscriptionID: a[2].SubscriptionID, Number: a[2].Number, Outcome: a[2].Outcome, StatusCode: a[2].StatusCode})
	assert.Equal(t, "round-1", a[2].Round)
	got = w.status("tenant-a", e.ID)
	assert.Equal(t, event.Delivered, got.Status)
	assert.Equal(t, 2, got.RetryCount)

	// The round's task again (SQS at least once): nothing more is sent.
	require.NoError(t, w.d.HandleTask(ctx, tasks[0].task))
	assert.Len(t, w.attempts("tenant-a", e.ID), 3)
	assert.Len(t, rcv.requests(), 3)
}

// A redelivery with no enabled subscription left does not leave the event
// retrying for ever: it goes back to failed, whether its subscription
// failed and was deleted (its failed attempts remain) or it never had one.
func TestRedeliverWithoutSubscriptions(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t, newReceiver(t, 500))
	sub, _ := w.subscribe("tenant-a")
	withAttempts := w.event("tenant-a", "t")
	require.NoError(t, w.d.HandleEvent(ctx, "tenant-a", withAttempts.ID))
	require.NoError(t, w.st.DeleteSubscription(ctx, "tenant-a", sub.ID))
	without := w.event("tenant-a", "t")
	_, err := w.st.Transition(ctx, "tenant-a", without.ID, []event.Status{event.Received}, event.Failed)
	require.NoError(t, err)
	for _, e := range []event.Event{withAttempts, without} {
		e = w.status("tenant-a", e.ID)
		require.Equal(t, event.Failed, e.Status)
		task := dispatch.Task{Tenant: "tenant-a", EventID: e.ID, Round: "r-" + e.ID, RetryCount: e.RetryCount, DueAt: w.clock()}
		require.NoError(t, w.d.HandleTask(ctx, task))
		got := w.status("tenant-a", e.ID)
		assert.Equal(t, event.Failed, got.Status)
		assert.Equal(t, e.RetryCount+1, got.RetryCount, "the round ran")
	}
	assert.Contains(t, w.logs.String(), "no enabled subscription")
}

// 410 Gone removes the subscription (Zapier REST Hooks). It is no
// acknowledgment: the event is failed, not delivered.
func TestGoneUnsubscribes(t *testing.T) {
	ctx := context.Background()
	rcv := newReceiver(t, http.StatusGone)
	w := newWorld(t, rcv)
	sub, _ := w.subscribe("tenant-a")
	e := w.event("tenant-a", "t")
	require.NoError(t, w.d.HandleEvent(ctx, "tenant-a", e.ID))
	_, err := w.st.GetSubscription(ctx, "tenant-a", sub.ID)
	assert.ErrorIs(t, err, event.ErrSubscriptionNotFound)
	assert.Equal(t, "gone", w.attempts("tenant-a", e.ID)[0].Outcome)
	assert.Empty(t, w.q.take())
	assert.Contains(t, w.logs.String(), "410 Gone")
	assert.Equal(t, event.Failed, w.status("tenant-a", e.ID).Status)
}

// Only matching subscriptions of the event's tenant receive it; with none
// the event stays received for the inbox.
func TestFilterAndTenantIsolation(t *testing.T) {
	ctx := context.Background()
	rcv := newReceiver(t)
	w := newWorld(t, rcv)
	w.subscribe("tenant-a", "order.paid")
	w.subscribe("tenant-b")
	e := w.event("tenant-a", "user.created")
	require.NoError(t, w.d.HandleEvent(ctx, "tenant-a", e.ID))
	assert.Empty(t, rcv.requests(), "tenant-a's only subscription wants order.paid; tenant-b's never sees tenant-a's events")
	assert.Equal(t, event.Received, w.status("tenant-a", e.ID).Status)
	assert.Empty(t, w.attempts("tenant-a", e.ID))
}

// metrics records what the dispatcher counts.
type metrics struct {
	mu       sync.Mutex
	outcomes []string
	disabled int
	deferred []string // tenant/subscription/reason
	opened   []string // tenant/subscription/cause
}

func (m *metrics) WebhookAttempt(o string) {
	m.mu.Lock()
	m.outcomes = append(m.outcomes, o)
	m.mu.Unlock()
}
func (m *metrics) SubscriptionDisabled() { m.mu.Lock(); m.disabled++; m.mu.Unlock() }
func (m *metrics) WebhookDeferred(tenant, sub, reason string) {
	m.mu.Lock()
	m.deferred = append(m.deferred, tenant+"/"+sub+"/"+reason)
	m.mu.Unlock()
}
func (m *metrics) CircuitOpened(tenant, sub, cause string) {
	m.mu.Lock()
	m.opened = append(m.opened, tenant+"/"+sub+"/"+cause)
	m.mu.Unlock()
}

// A subscription that keeps failing past DisableAfter is disabled,
// reported (log line and metric), and gets no retry.
func TestDisabledAfterSustainedFailure(t *testing.T) {
	ctx := context.Background()
	rcv := newReceiver(t, 500, 500, 500)
	m := &metrics{}
	w := newWorld(t, rcv, func(c *dispatch.Config) { c.DisableAfter = time.Hour; c.Metrics = m })
	sub, _ := w.subscribe("tenant-a")
	e1 := w.event("tenant-a", "t")
	require.NoError(t, w.d.HandleEvent(ctx, "tenant-a", e1.ID))
	require.Len(t, w.q.take(), 1)
	got, err := w.st.GetSubscription(ctx, "tenant-a", sub.ID)
	require.NoError(t, err)
	assert.Equal(t, event.FormatTime(w.clock()), got.FailingSince, "the failed attempt's time, to the microsecond")
	assert.False(t, got.Disabled)

	w.advance(2 * time.Hour)
	e2 := w.event("tenant-a", "t")
	require.NoError(t, w.d.HandleEvent(ctx, "tenant-a", e2.ID))
	assert.Empty(t, w.q.take(), "a disabled subscription gets no retry")
	got, err = w.st.GetSubscription(ctx, "tenant-a", sub.ID)
	require.NoError(t, err)
	assert.True(t, got.Disabled)
	assert.Contains(t, got.DisabledReason, "HTTP 500")
	assert.Contains(t, w.logs.String(), `"msg":"subscription disabled"`)
	assert.Equal(t, event.Failed, w.status("tenant-a", e2.ID).Status, "not delivered to the disabled subscription")

	e3 := w.event("tenant-a", "t")
	require.NoError(t, w.d.HandleEvent(ctx, "tenant-a", e3.ID))
	assert.Len(t, rcv.requests(), 2, "nothing is sent to a disabled subscription")
	assert.Equal(t, []string{"failed", "failed"}, m.outcomes)
	assert.Equal(t, 1, m.disabled)
}

// After a rotation both secrets sign during the overlap: a receiver still
// on the old secret verifies, and so does one on the new secret. After
// the overlap only the new secret signs.
func TestRotationSignsWithBothSecrets(t *testing.T) {
	ctx := context.Background()
	rcv := newReceiver(t)
	w := newWorld(t, rcv)
	sub, old := w.subscribe("tenant-a")
	fresh := webhook.NewSecret()
	_, err := w.st.RotateSecret(ctx, "tenant-a", sub.ID, fresh.Encode(), w.clock(), w.clock().Add(time.Hour))
	require.NoError(t, err)
	// verify is what a receiver holding only sec makes of request r.
	verify := func(r received, sec webhook.Secret) error {
		return (&webhook.Verifier{Secrets: []webhook.Secret{sec}, Now: w.clock}).Verify(r.header, r.body)
	}
	e := w.event("tenant-a", "t")
	require.NoError(t, w.d.HandleEvent(ctx, "tenant-a", e.ID))
	r := rcv.requests()
	require.Len(t, r, 1)
	assert.NoError(t, verify(r[0], old), "a receiver still on the old secret verifies")
	assert.NoError(t, verify(r[0], fresh), "so does one on the new secret")

	w.advance(2 * time.Hour)
	e2 := w.event("tenant-a", "t")
	require.NoError(t, w.d.HandleEvent(ctx, "tenant-a", e2.ID))
	r = rcv.requests()
	require.Len(t, r, 2)
	assert.NoError(t, verify(r[1], fresh), "the new secret signs")
	assert.ErrorIs(t, verify(r[1], old), webhook.ErrSignatureMismatch, "the old secret no longer signs")
}

// One SQS batch: a delivery-queue message and a retry-queue Task are both
// handled; a malformed message is a batch item failure alone.
func TestHandleSQSPartialBatch(t *testing.T) {
	ctx := context.Background()
	rcv := newReceiver(t)
	w := newWorld(t, rcv)
	w.subscribe("tenant-a")
	e := w.event("tenant-a", "t")
	str := func(s string) *string { return &s }
	body, err := json.Marshal(e)
	require.NoError(t, err)
	resp, err := w.d.HandleSQS(ctx, events.SQSEvent{Records: []events.SQSMessage{
		{MessageId: "m1", Body: string(body), MessageAttributes: map[string]events.SQSMessageAttribute{dispatch.AttrTenant: {StringValue: str("tenant-a"), DataType: "String"}}},
		{MessageId: "m2", Body: "not json", MessageAttributes: map[string]events.SQSMessageAttribute{dispatch.AttrKind: {StringValue: str(dispatch.KindTask), DataType: "String"}}},
		{MessageId: "m3", Body: `{"event_id":"x"}`},
	}})
	require.NoError(t, err)
	var failed []string
	for _, f := range resp.BatchItemFailures {
		failed = append(failed, f.ItemIdentifier)
	}
	assert.ElementsMatch(t, []string{"m2", "m3"}, failed)
	assert.Len(t, rcv.requests(), 1)
	assert.Equal(t, event.Delivered, w.status("tenant-a", e.ID).Status)
}

// A target on a private address is refused at connection time by the
// default client, whatever DNS said at subscribe time.
func TestPrivateTargetRefusedAtDelivery(t *testing.T) {
	ctx := context.Background()
	rcv := newReceiver(t)
	w := newWorld(t, rcv, func(c *dispatch.Config) { c.Client = nil })
	w.subscribe("tenant-a")
	e := w.event("tenant-a", "t")
	require.NoError(t, w.d.HandleEvent(ctx, "tenant-a", e.ID))
	assert.Empty(t, rcv.requests())
	a := w.attempts("tenant-a", e.ID)
	require.Len(t, a, 1)
	assert.Equal(t, "failed", a[0].Outcome)
	assert.Contains(t, a[0].Error, "loopback")
}

// Delivery is at least once: the function dies (its context ends) while
// receivers are answering a batch; SQS then redelivers the batch. Every
// event reaches the receiver, every duplicate carries the same webhook-id,
// and no attempt is recorded twice.
func TestKilledMidBatchLosesNothing(t *testing.T) {
	hold := make(chan struct{})
	var mu sync.Mutex
	got := map[string]int{}
	first := true
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		mu.Lock()
		got[req.Header.Get(webhook.HeaderID)]++
		wait := first
		first = false
		mu.Unlock()
		if wait {
			<-hold // the first request hangs until the function is dead
		}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() {
		select {
		case <-hold:
		default:
			close(hold)
		}
	})
	rcv := &receiver{srv: srv}
	w := newWorld(t, rcv)
	w.subscribe("tenant-a")
	var batch events.SQSEvent
	var ids []string
	str := func(s string) *string { return &s }
	for i := range 6 {
		e := w.event("tenant-a", "t")
		ids = append(ids, e.ID)
		body, err := json.Marshal(e)
		require.NoError(t, err)
		batch.Records = append(batch.Records, events.SQSMessage{MessageId: "m" + string(rune('0'+i)), Body: string(body),
			MessageAttributes: map[string]events.SQSMessageAttribute{dispatch.AttrTenant: {StringValue: str("tenant-a"), DataType: "String"}}})
	}

	ctx, kill := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = w.d.HandleSQS(ctx, batch)
	}()
	require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(got) >= 1 }, 10*time.Second, 10*time.Millisecond)
	kill() // the invocation ends mid-batch
	<-done
	close(hold)
	// SQS makes the batch visible again after its visibility timeout,
	// longer than any claim the dead invocation held.
	w.advance(dispatch.DefaultLease + time.Second)

	// SQS makes the batch visible again: the next invocation handles it.
	resp, err := w.d.HandleSQS(context.Background(), batch)
	require.NoError(t, err)
	assert.Empty(t, resp.BatchItemFailures)
	mu.Lock()
	defer mu.Unlock()
	for _, id := range ids {
		assert.GreaterOrEqual(t, got[id], 1, "event %s reached the receiver", id)
		assert.Equal(t, event.Delivered, w.status("tenant-a", id).Status)
		atts := w.attempts("tenant-a", id)
		delivered := 0
		for _, a := range atts {
			if a.Outcome == "delivered" {
				delivered++
			}
		}
		assert.Equal(t, 1, delivered, "event %s: one delivered attempt recorded: %v", id, atts)
	}
	assert.Len(t, got, len(ids), "only these webhook-ids: a duplicate carries its event's id")
}

// opLog records the DynamoDB requests of a store while it counts: each as
// its operation, with " wake" when it writes a subscription's wake marker.
type opLog struct {
	mu       sync.Mutex
	counting bool
	ops      []string
}

func (l *opLog) start() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.counting, l.ops = true, nil
}

func (l *opLog) stop() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.counting = false
	return l.ops
}

// countingWorld is newWorld with its store on a client that records its
// requests in the opLog returned. The slow lane and the slow watch are
// off: they go by the requests' real latency, and a request slowed by a
// busy machine would add a call (MarkSlow, an opening) to those counted.
func countingWorld(t *testing.T, rcv *receiver) (*world, *opLog) {
	log := &opLog{}
	var st *store.Store
	w := newWorld(t, rcv, func(c *dispatch.Config) {
		c.SlowLaneAfter, c.SlowAfter = -1, -1
		st = store.New(db.FaultClient(func(op string, body []byte) *http.Response {
			log.mu.Lock()
			defer log.mu.Unlock()
			if log.counting {
				switch {
				case strings.Contains(string(body), `"wake_owner"`):
					op += " wake"
				case strings.Contains(string(body), `"round#`+event.FirstRound+`"`):
					op += " hold"
				}
				log.ops = append(log.ops, op)
			}
			return nil
		}), db.CreateTable(t, schema.Events()))
		c.Store = st
	})
	w.st = st
	return w, log
}

// A delivery's DynamoDB requests, in order. To a healthy subscription
// (the common case): the event, the subscriptions and the attempts read,
// the attempt claimed (its reference and itself), finished, the success
// recorded, and the event settled (its attempts and itself read, the
// status written). The success that ends a run of failures adds one: the
// claim of a wake due now for the attempts parked behind the circuit
// (refused here: nothing is parked). Found: every delivery made that
// claim, as if each success had closed a circuit.
func TestDeliveryRequests(t *testing.T) {
	ctx := context.Background()
	rcv := newReceiver(t, http.StatusOK, http.StatusInternalServerError, http.StatusOK)
	w, log := countingWorld(t, rcv)
	w.subscribe("tenant-a")
	healthy := []string{"GetItem", "Query", "Query", "PutItem", "UpdateItem", "UpdateItem", "UpdateItem", "Query", "GetItem", "TransactWriteItems"}

	e := w.event("tenant-a", "order.paid")
	log.start()
	require.NoError(t, w.d.HandleEvent(ctx, "tenant-a", e.ID))
	assert.Equal(t, healthy, log.stop(), "a delivery to a healthy subscription")
	assert.Equal(t, event.Delivered, w.status("tenant-a", e.ID).Status)

	// A failure (a second later: at the success's instant the success
	// would win), then its retry's success ends the run.
	// The first round holds the event's settles before it queues the
	// retry, and ends the hold once its attempts are recorded: two writes
	// (dispatch's firstHold), made only by a round that queues something.
	w.advance(time.Second)
	e2 := w.event("tenant-a", "order.paid")
	log.start()
	require.NoError(t, w.d.HandleEvent(ctx, "tenant-a", e2.ID))
	ops := log.stop()
	assert.Equal(t, 2, countOf(ops, "UpdateItem hold"), "%q", ops)
	assert.Equal(t, event.Failed, w.status("tenant-a", e2.ID).Status)
	tasks := w.q.take()
	require.Len(t, tasks, 1)
	w.advance(5 * time.Second)
	log.start()
	require.NoError(t, w.d.HandleTask(ctx, tasks[0].task))
	ops = log.stop()
	assert.Equal(t, event.Delivered, w.status("tenant-a", e2.ID).Status)
	assert.Zero(t, countOf(ops, "UpdateItem hold"), "a retry holds nothing: %q", ops)
	i := slices.Index(ops, "UpdateItem wake")
	require.Positive(t, i, "the success that ended the run claims a wake: %q", ops)
	assert.Equal(t, "UpdateItem", ops[i-1], "the claim follows the success: %q", ops)
	assert.Equal(t, 1, countOf(ops, "UpdateItem wake"), "%q", ops)
	assert.Empty(t, w.q.take(), "nothing parked: no wake queued")

	// The next delivery finds the subscription healthy again.
	e3 := w.event("tenant-a", "order.paid")
	log.start()
	require.NoError(t, w.d.HandleEvent(ctx, "tenant-a", e3.ID))
	assert.Equal(t, healthy, log.stop(), "a delivery after the run ended")
}

// A first round that fails before it records its attempt to one
// subscription (here its claim's write fails) while its attempt to
// another failed and queued that one's retry: the round's message comes
// back only after the visibility timeout, and the retry, due first,
// delivers. Its settle must not move the event to delivered from the
// first subscription's attempts alone: the second subscription then fails
// for good, and nothing moves a delivered event back (found by review).
// The round's hold keeps the event received until the round has recorded
// every attempt; then it settles by them all.
// twoSubWorld is a world with two subscriptions of tenant-a, A (rcvA) and
// B (rcvB), whose store fails the claim of B's first attempt once
// (failBClaim arms it): the first round stops before it records B's
// attempt, and its message comes back later.
func twoSubWorld(t *testing.T, rcvA, rcvB *receiver, mutate ...func(*dispatch.Config)) (w *world, subA, subB event.Subscription, failBClaim func()) {
	ctx := context.Background()
	var mu sync.Mutex
	failClaim := ""
	var st *store.Store
	w = newWorld(t, rcvA, append(mutate, func(c *dispatch.Config) {
		st = store.New(db.FaultClient(func(op string, body []byte) *http.Response {
			mu.Lock()
			defer mu.Unlock()
			if op == "UpdateItem" && failClaim != "" && strings.Contains(string(body), `"`+failClaim+`"`) {
				failClaim = ""
				return ddbtest.AWSError("InternalServerError", "injected: the claim of B's first attempt")
			}
			return nil
		}), db.CreateTable(t, schema.Events()))
		c.Store = st
	})...)
	w.st = st
	subA, _ = w.subscribe("tenant-a")
	id, err := event.NewSubscriptionID(nil)
	require.NoError(t, err)
	subB = event.Subscription{ID: id, URL: rcvB.srv.URL + "/b", EventTypes: []string{}, CreatedAt: event.FormatTime(w.clock()), Secrets: []string{webhook.NewSecret().Encode()}}
	require.NoError(t, st.CreateSubscription(ctx, "tenant-a", subB))
	w.advance(time.Second)
	return w, subA, subB, func() {
		mu.Lock()
		defer mu.Unlock()
		failClaim = subB.ID + "#001"
	}
}

func TestFirstRoundHoldsSettleUntilItsAttemptsAreRecorded(t *testing.T) {
	ctx := context.Background()
	rcvA := newReceiver(t, http.StatusInternalServerError, http.StatusOK)
	rcvB := newReceiver(t, 500, 500, 500, 500)
	w, subA, subB, failBClaim := twoSubWorld(t, rcvA, rcvB, func(c *dispatch.Config) { c.Schedule = contract.RetrySchedule{5 * time.Second} })
	st := w.st
	e := w.event("tenant-a", "order.paid")

	failBClaim()
	require.Error(t, w.d.HandleEvent(ctx, "tenant-a", e.ID), "B's claim failed: the message comes back")
	require.Len(t, rcvA.requests(), 1)
	require.Empty(t, rcvB.requests())
	tasks := w.q.take()
	require.Len(t, tasks, 1)
	require.Equal(t, subA.ID, tasks[0].task.SubscriptionID)
	_, running, err := st.SettleAttempts(ctx, "tenant-a", e.ID)
	require.NoError(t, err)
	assert.True(t, running, "held before the retry was queued")

	// A's retry comes due and delivers before the round's message is back.
	w.advance(5 * time.Second)
	require.NoError(t, w.d.HandleTask(ctx, tasks[0].task))
	require.Len(t, rcvA.requests(), 2)
	assert.Equal(t, event.Received, w.status("tenant-a", e.ID).Status, "held: B has no attempt yet")

	// The round's message is back: B's attempt fails, and its retry.
	w.advance(30 * time.Minute)
	require.NoError(t, w.d.HandleEvent(ctx, "tenant-a", e.ID))
	_, running, err = st.SettleAttempts(ctx, "tenant-a", e.ID)
	require.NoError(t, err)
	assert.False(t, running, "every attempt recorded: the hold ended")
	assert.Equal(t, event.Failed, w.status("tenant-a", e.ID).Status)
	tasks = w.q.take()
	require.Len(t, tasks, 1)
	require.Equal(t, subB.ID, tasks[0].task.SubscriptionID)
	w.advance(5 * time.Second)
	require.NoError(t, w.d.HandleTask(ctx, tasks[0].task))
	assert.Empty(t, w.q.take(), "B's schedule ended")
	assert.Len(t, rcvB.requests(), 2)
	assert.Equal(t, event.Failed, w.status("tenant-a", e.ID).Status,
		"delivered only when every subscription it was attempted to acknowledged it")
}

// The same when the first round's attempt to A fails for good (A is
// disabled by it: no retry is queued, but the attempt is recoverable):
// the tenant enables A again and recovers it before the round's message
// is back, and the recovery's delivery must not settle the event from A's
// attempts alone (found by review).
func TestFirstRoundHoldsARecovery(t *testing.T) {
	ctx := context.Background()
	rcvA := newReceiver(t, http.StatusInternalServerError, http.StatusOK)
	rcvB := newReceiver(t, 500, 500, 500, 500)
	w, subA, _, failBClaim := twoSubWorld(t, rcvA, rcvB, func(c *dispatch.Config) {
		c.Schedule, c.DisableAfter = contract.RetrySchedule{5 * time.Second}, time.Hour
	})
	// A has been failing for two hours: its next failure disables it.
	_, err := w.st.SubscriptionFailed(ctx, "tenant-a", subA.ID, "", w.clock().Add(-2*time.Hour), 100*time.Hour, "before")
	require.NoError(t, err)
	since := w.clock()
	e := w.event("tenant-a", "order.paid")

	failBClaim()
	require.Error(t, w.d.HandleEvent(ctx, "tenant-a", e.ID), "B's claim failed: the message comes back")
	require.Empty(t, w.q.take(), "A disabled: no retry")
	_, running, err := w.st.SettleAttempts(ctx, "tenant-a", e.ID)
	require.NoError(t, err)
	assert.True(t, running, "held before A's failure for good was marked")

	enabled := false
	_, err = w.st.UpdateSubscription(ctx, "tenant-a", subA.ID, event.SubscriptionPatch{Disabled: &enabled}, w.clock())
	require.NoError(t, err)
	w.advance(time.Minute)
	require.NoError(t, dispatch.Recover(w.q)(ctx, "tenant-a", subA.ID, "rec-1", since, w.clock(), w.clock()))
	for range 3 {
		for _, q := range w.q.take() {
			require.NoError(t, w.d.HandleTask(ctx, q.task))
		}
	}
	require.Len(t, rcvA.requests(), 2, "A recovered: attempt 2 delivered")
	assert.Equal(t, event.Received, w.status("tenant-a", e.ID).Status, "held: B has no attempt yet")

	// The round's message is back: B fails (its retry later).
	w.advance(30 * time.Minute)
	require.NoError(t, w.d.HandleEvent(ctx, "tenant-a", e.ID))
	require.Len(t, rcvB.requests(), 1)
	assert.Equal(t, event.Failed, w.status("tenant-a", e.ID).Status)
	_, running, err = w.st.SettleAttempts(ctx, "tenant-a", e.ID)
	require.NoError(t, err)
	assert.False(t, running)
}

// holdMidRound is the store as a copy of a first round's message sees it
// while another copy runs beside it: that copy writes the round's hold
// (it queued a follow-up) once this one has read the attempts, at this
// one's first claim, then stops for good.
type holdMidRound struct {
	dispatch.Store
	once sync.Once
}

func (s *holdMidRound) ClaimAttempt(ctx context.Context, tenant, eventID string, c event.AttemptClaim, ttl int64) (event.Attempt, bool, error) {
	var err error
	s.once.Do(func() { err = s.Store.HoldFirstRound(ctx, tenant, eventID, c.At, ttl) })
	if err != nil {
		return event.Attempt{}, false, err
	}
	return s.Store.ClaimAttempt(ctx, tenant, eventID, c, ttl)
}

// A first round's hold left by a copy of its message that stopped (it
// queued a retry, then died) while another copy, which had read no hold,
// recorded every attempt and had the message deleted: that copy ends the
// hold itself and settles (found by review: nothing was left to end it,
// and the event stayed received).
func TestFirstRoundEndsAHoldAnotherCopyLeft(t *testing.T) {
	ctx := context.Background()
	rcv := newReceiver(t)
	w := newWorld(t, rcv, func(c *dispatch.Config) { c.Store = &holdMidRound{Store: c.Store} })
	w.subscribe("tenant-a")
	w.subscribe("tenant-a")
	e := w.event("tenant-a", "order.paid")

	require.NoError(t, w.d.HandleEvent(ctx, "tenant-a", e.ID))
	require.Len(t, rcv.requests(), 2)
	assert.Equal(t, event.Delivered, w.status("tenant-a", e.ID).Status)
	_, running, err := w.st.SettleAttempts(ctx, "tenant-a", e.ID)
	require.NoError(t, err)
	assert.False(t, running)
}

// countOf counts s in list.
func countOf(list []string, s string) int {
	n := 0
	for _, v := range list {
		if v == s {
			n++
		}
	}
	return n
}
