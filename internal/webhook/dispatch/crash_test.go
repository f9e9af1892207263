package dispatch_test

// The crash-point harness: webhook delivery under every single fault.
//
// A scenario writes events through the real HTTP API (httpapi) into
// DynamoDB Local, reads the table's real stream (streampoll), runs the
// real stream consumer (delivery) into the delivery queue, and lets the
// real dispatcher consume the delivery and retry queues (HandleSQS) until
// nothing is left, on a virtual clock. Redeliveries go through the real
// API route. Every store call (dispatch.Store and the API's), every queue
// send (dispatch.Queue, the stream consumer's streamconsumer.Sender) and every
// webhook POST passes through an injector.
//
// A clean run of each scenario records the trace of those calls. Then,
// for every call in the trace, one run makes that call fail once and
// another makes the process stop right after it (the call took effect; the
// invocation does nothing more and answers nothing), and another stops
// there with every queue message delivered twice; for a storage call that
// writes, one more loses the answers of its writes (each takes effect, the
// SDK sends it again: lossyClient), when its clean run wrote, and one
// more holds its first write back on the way (its attempt times out, the SDK's retry goes through)
// and lands that copy once the run has settled, after every later write,
// then lets the run settle again; and one more lands it soon, as the next
// storage call after the held call returned. A storage call whose clean
// run wrote more than once (a second write, or a refusal read back and
// written again) gets a late case for each later write too (up to its
// third). The queues behave as SQS does towards
// its consumer: a message not deleted (failed, or its invocation died)
// comes back after the visibility timeout with the same body; a stream
// batch whose invocation failed is retried from the stream. When the system
// has settled the invariants below must hold. The trace must also cover
// every method of the interfaces the path uses, so a new store or queue
// call cannot go without crash cases.
//
// The queues are simQueue, a test double of SQS's delivery semantics
// (visibility, delay, redelivery, receive count, duplicates) on the
// virtual clock; internal/dev/sqsesm drives the same handler on a real
// SQS-compatible engine.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/contract"
	"github.com/triggers-dev/triggers/internal/ddb"
	"github.com/triggers-dev/triggers/internal/ddb/ddblocal"
	"github.com/triggers-dev/triggers/internal/ddb/ddbtest"
	"github.com/triggers-dev/triggers/internal/dev/kmslocal/kmstest"
	"github.com/triggers-dev/triggers/internal/dev/streampoll"
	"github.com/triggers-dev/triggers/internal/event"
	"github.com/triggers-dev/triggers/internal/httpapi"
	"github.com/triggers-dev/triggers/internal/shard"
	"github.com/triggers-dev/triggers/internal/store"
	"github.com/triggers-dev/triggers/internal/streamconsumer"
	"github.com/triggers-dev/triggers/internal/webhook"
	"github.com/triggers-dev/triggers/internal/webhook/dispatch"
	"github.com/triggers-dev/triggers/internal/webhook/secretbox"
	"github.com/triggers-dev/triggers/schema"
)

// Harness settings, as deployed where it matters: the visibility timeout
// outlasts a claim's lease, SQS's longest delay is 15 minutes.
const (
	simVisibility      = 30 * time.Minute
	simMaxReceiveCount = 5
	simBatchSize       = 10
	crashQueueURL      = "https://sqs.eu-west-1.amazonaws.com/123456789012/delivery"
)

// ---- invocations, faults and the trace ----

type invocation struct{ dead atomic.Bool }

type invocationKey struct{}

func newInvocation(parent context.Context) (context.Context, *invocation) {
	inv := &invocation{}
	return context.WithValue(parent, invocationKey{}, inv), inv
}

func invocationOf(ctx context.Context) *invocation {
	inv, _ := ctx.Value(invocationKey{}).(*invocation)
	return inv
}

var (
	errInjected = errors.New("harness: injected failure")
	errStopped  = errors.New("harness: the process stopped")
)

// fault is one injection: the call named label fails once, or (crash)
// takes effect and then its process stops.
type fault struct {
	label string
	crash bool
	// lost: each DynamoDB write of the call takes effect but its answer
	// is lost, so the SDK sends it again (lossyClient), and the
	// invocation goes on with the call's result.
	lost bool
	// late: the call's first DynamoDB write is held on the way (its
	// attempt fails as a timed-out one does, and the SDK's retry goes
	// through), and the held copy reaches DynamoDB once the run has
	// settled, after every later write; the run then settles again
	// (lossyClient, crashRun.landLate).
	late bool
	// soon: with late, the held copy lands as the next storage call
	// after the held call returned (mid-run, where a condition may
	// briefly match again), not once the run has settled.
	soon bool
	// write: with late, which of the call's DynamoDB writes is held (0
	// and 1: the first; each request counts, so the SDK's resend of the
	// held write is the next one). A call whose clean run made more than
	// one write gets a case per later write too (up to maxLateWrite).
	write int
	// nth is the occurrence of the label the fault hits (0 and 1: the
	// first).
	nth int
}

func (f fault) String() string {
	if f.label == "" {
		return "clean"
	}
	call := f.label
	if f.nth > 1 {
		call += fmt.Sprintf(" (call %d)", f.nth)
	}
	if f.crash {
		return "stop after " + call
	}
	if f.lost {
		return "lose the answer of " + call
	}
	if f.late && f.write > 1 {
		call = fmt.Sprintf("write %d of %s", f.write, call)
	}
	if f.late && f.soon {
		return "land a copy soon after " + call
	}
	if f.late {
		return "land a late copy of " + call
	}
	return "fail " + call
}

// injector records the calls of a run and injects its fault. A call is
// labelled by its operation, its arguments (events and subscriptions by
// their scenario names) and the function of the path that made it; the
// trace lists each label once, in the order first seen, and a fault hits
// the label's first occurrence (or its nth).
type injector struct {
	f      fault
	names  *names
	mu     sync.Mutex
	fired  bool
	counts map[string]int
	trace  []string
	// writes are the DynamoDB writes (resends included) of each storage
	// call, by its label and occurrence (writeKey).
	writes map[string]int
	// onCall, when set, sees each call's label as the call starts.
	onCall func(label string)
	// late holds the write a late fault held back.
	late *lateCopies
	// landSoon, set by a soon late fault's call once it returned, lands
	// the held copy before the next storage call (landOn).
	landSoon atomic.Bool
	landOn   func()
}

func newInjector(f fault, n *names) *injector {
	return &injector{f: f, names: n, counts: map[string]int{}, writes: map[string]int{}, late: &lateCopies{at: f.write}}
}

// call runs do as the call op(args) of the invocation in ctx.
func (in *injector) call(ctx context.Context, op string, args []string, do func(context.Context) error) error {
	inv := invocationOf(ctx)
	if inv == nil {
		panic("harness: a call outside an invocation: " + op)
	}
	if inv.dead.Load() {
		return errStopped
	}
	label := op
	if len(args) > 0 {
		label += " " + strings.Join(in.names.all(args), " ")
	}
	label += " @" + callSite()
	if in.onCall != nil {
		in.onCall(label)
	}
	if strings.HasPrefix(op, "Store.") && in.landSoon.CompareAndSwap(true, false) {
		in.landOn()
	}
	in.mu.Lock()
	in.counts[label]++
	nth := in.counts[label]
	if nth == 1 {
		in.trace = append(in.trace, label)
	}
	hit := !in.fired && label == in.f.label && in.counts[label] == max(in.f.nth, 1)
	in.fired = in.fired || hit
	in.mu.Unlock()
	if strings.HasPrefix(op, "Store.") {
		// Count the call's writes (lossyClient), for the late cases of
		// its later writes.
		inner := do
		do = func(ctx context.Context) error {
			writes := new(atomic.Int32)
			err := inner(context.WithValue(ctx, writesKey{}, writes))
			in.mu.Lock()
			in.writes[writeKey(label, nth)] = int(writes.Load())
			in.mu.Unlock()
			return err
		}
	}
	if hit && in.f.lost {
		// The call's writes take effect and their answers are lost
		// (lossyClient); the invocation goes on with what the call makes
		// of the SDK's retries.
		return do(context.WithValue(ctx, loseKey{}, new(atomic.Bool)))
	}
	if hit && in.f.late {
		// The call's first write (or f.write) is held back, its attempt
		// fails, and the SDK's retry of it goes through (lossyClient).
		err := do(context.WithValue(ctx, lateKey{}, in.late))
		if in.f.soon {
			in.landSoon.Store(true)
		}
		return err
	}
	if hit && !in.f.crash {
		return errInjected
	}
	err := do(ctx)
	if hit {
		inv.dead.Store(true)
		return errStopped
	}
	return err
}

// callSite names the function of the path that made a call: the first
// caller outside this file and the packages in between (net/http, the
// SDK).
func callSite() string {
	pcs := make([]uintptr, 32)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(3, pcs)])
	for {
		f, more := frames.Next()
		fn := f.Function
		if i := strings.LastIndex(fn, "/"); i >= 0 {
			fn = fn[i+1:]
		}
		switch {
		case fn == "dispatch.(*Dispatcher).slowSlot":
			// A slot a wake takes for a parked attempt (wakeInLane, one
			// after the other) is its own label, apart from the slot an
			// attempt takes for itself.
			for more {
				f, more = frames.Next()
				if strings.HasSuffix(f.Function, ".(*Dispatcher).wakeInLane") {
					return fn + "<-wakeInLane"
				}
			}
			return fn
		case fn == "dispatch.(*Dispatcher).queueWake":
			// A wake queued to hand a waiting subscription its turn in the
			// slow lane, for a subscription that waits its turn, as a
			// standby for attempts left parked, or in place of a later
			// one once a delivery closed the circuit, is its own label,
			// apart from the wakes parkers queue (only a label's first
			// call gets crash cases).
			for more {
				f, more = frames.Next()
				for _, by := range []string{"handOver", "waitTurn", "sendStandby", "sendEarlier"} {
					if strings.HasSuffix(f.Function, ".(*Dispatcher)."+by) {
						return fn + "<-" + by
					}
				}
			}
			return fn
		case fn == "dispatch.(*Dispatcher).dropWaiter":
			// The hand-over's removal of the waiter it handed the turn to
			// is its own label, apart from a waiter's removal of its own
			// record (only a label's first call gets crash cases).
			for more {
				f, more = frames.Next()
				if strings.HasSuffix(f.Function, ".(*Dispatcher).handOver") {
					return fn + "<-handOver"
				}
			}
			return fn
		case strings.HasPrefix(fn, "dispatch."), strings.HasPrefix(fn, "httpapi."), strings.HasPrefix(fn, "streamconsumer."), strings.HasPrefix(fn, "webhook."):
			return fn
		case !more:
			return "?"
		}
	}
}

// names gives ids readable, run-independent names in labels.
type names struct {
	mu sync.Mutex
	m  map[string]string
}

func (n *names) set(id, name string) {
	n.mu.Lock()
	n.m[id] = name
	n.mu.Unlock()
}

func (n *names) all(ids []string) []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make([]string, len(ids))
	for i, id := range ids {
		if name, ok := n.m[id]; ok {
			out[i] = name
		} else {
			out[i] = id
		}
	}
	return out
}

// ---- the store, queue and sender under injection ----

// faultStore is the store as the dispatcher and the API see it. Every
// method is written out (no embedding): a method added to dispatch.Store
// does not compile here until it gets its crash cases.
type faultStore struct {
	st    *store.Store
	in    *injector
	clock *simClock
	// asked, if set, is called after each AcquireSlowSlot (firstGate).
	asked func()
	// copy, if set, orders the copied wake's listings and unparks.
	copy *wakeCopy
}

var (
	_ dispatch.Store            = faultStore{}
	_ httpapi.Store             = faultStore{}
	_ httpapi.SubscriptionStore = faultStore{}
	_ streamconsumer.Sender     = faultSender{}
	_ dispatch.Queue            = faultQueue{}
	_ http.RoundTripper         = faultTransport{}
	_ dispatch.Store            = (*store.Store)(nil)
	_ httpapi.SubscriptionStore = (*store.Store)(nil)
)

func (s faultStore) Get(ctx context.Context, tenant, id string) (e event.Event, err error) {
	err = s.in.call(ctx, "Store.Get", []string{id}, func(ctx context.Context) error { e, err = s.st.Get(ctx, tenant, id); return err })
	return
}

func (s faultStore) Transition(ctx context.Context, tenant, id string, from []event.Status, to event.Status) (e event.Event, err error) {
	err = s.in.call(ctx, "Store.Transition", []string{id, string(to)}, func(ctx context.Context) error {
		e, err = s.st.Transition(ctx, tenant, id, from, to)
		return err
	})
	return
}

func (s faultStore) TransitionOnce(ctx context.Context, tenant, id string, from []event.Status, to event.Status) (e event.Event, err error) {
	err = s.in.call(ctx, "Store.TransitionOnce", []string{id, string(to)}, func(ctx context.Context) error {
		e, err = s.st.TransitionOnce(ctx, tenant, id, from, to)
		return err
	})
	return
}

func (s faultStore) StartRetry(ctx context.Context, tenant string, e event.Event) (got event.Event, err error) {
	err = s.in.call(ctx, "Store.StartRetry", []string{e.ID}, func(ctx context.Context) error {
		got, err = s.st.StartRetry(ctx, tenant, e)
		return err
	})
	return got, err
}

func (s faultStore) Settle(ctx context.Context, tenant, id string, from, to event.Status, latest []event.Attempt) error {
	return s.in.call(ctx, "Store.Settle", []string{id, string(from), string(to)}, func(ctx context.Context) error {
		return s.st.Settle(ctx, tenant, id, from, to, latest)
	})
}

func (s faultStore) StartRedelivery(ctx context.Context, tenant string, e event.Event, token string, at time.Time) error {
	return s.in.call(ctx, "Store.StartRedelivery", []string{e.ID}, func(ctx context.Context) error {
		return s.st.StartRedelivery(ctx, tenant, e, token, at)
	})
}

func (s faultStore) ListSubscriptions(ctx context.Context, tenant string) (subs []event.Subscription, err error) {
	err = s.in.call(ctx, "Store.ListSubscriptions", nil, func(ctx context.Context) error { subs, err = s.st.ListSubscriptions(ctx, tenant); return err })
	return
}

func (s faultStore) GetSubscription(ctx context.Context, tenant, id string) (sub event.Subscription, err error) {
	err = s.in.call(ctx, "Store.GetSubscription", []string{id}, func(ctx context.Context) error { sub, err = s.st.GetSubscription(ctx, tenant, id); return err })
	return
}

func (s faultStore) DeleteSubscription(ctx context.Context, tenant, id string) error {
	return s.in.call(ctx, "Store.DeleteSubscription", []string{id}, func(ctx context.Context) error { return s.st.DeleteSubscription(ctx, tenant, id) })
}

func (s faultStore) DeleteGoneSubscription(ctx context.Context, tenant, id, url string) error {
	return s.in.call(ctx, "Store.DeleteGoneSubscription", []string{id}, func(ctx context.Context) error { return s.st.DeleteGoneSubscription(ctx, tenant, id, url) })
}

func (s faultStore) SubscriptionSucceeded(ctx context.Context, tenant, id, url string, at time.Time) (closed bool, err error) {
	err = s.in.call(ctx, "Store.SubscriptionSucceeded", []string{id}, func(ctx context.Context) error {
		closed, err = s.st.SubscriptionSucceeded(ctx, tenant, id, url, at)
		return err
	})
	return
}

func (s faultStore) SubscriptionFailed(ctx context.Context, tenant, id, url string, at time.Time, after time.Duration, reason string) (run event.FailureRun, err error) {
	err = s.in.call(ctx, "Store.SubscriptionFailed", []string{id}, func(ctx context.Context) error {
		run, err = s.st.SubscriptionFailed(ctx, tenant, id, url, at, after, reason)
		return err
	})
	return
}

func (s faultStore) OpenCircuit(ctx context.Context, tenant, id, url string, at, until time.Time, cooldown time.Duration) (opened bool, err error) {
	err = s.in.call(ctx, "Store.OpenCircuit", []string{id, "+" + until.Sub(s.clock.now()).String()}, func(ctx context.Context) error {
		opened, err = s.st.OpenCircuit(ctx, tenant, id, url, at, until, cooldown)
		return err
	})
	return
}

func (s faultStore) AcquireProbe(ctx context.Context, tenant, id string, now, until time.Time) (ok bool, err error) {
	err = s.in.call(ctx, "Store.AcquireProbe", []string{id}, func(ctx context.Context) error {
		ok, err = s.st.AcquireProbe(ctx, tenant, id, now, until)
		return err
	})
	return
}

func (s faultStore) TakeRateToken(ctx context.Context, tenant, id string, now time.Time, limit int) (ahead int, err error) {
	err = s.in.call(ctx, "Store.TakeRateToken", []string{id}, func(ctx context.Context) error {
		ahead, err = s.st.TakeRateToken(ctx, tenant, id, now, limit)
		return err
	})
	return
}

func (s faultStore) MarkSlow(ctx context.Context, tenant, id, url string, until time.Time) error {
	return s.in.call(ctx, "Store.MarkSlow", []string{id}, func(ctx context.Context) error { return s.st.MarkSlow(ctx, tenant, id, url, until) })
}

func (s faultStore) AcquireSlowSlot(ctx context.Context, tenant, token string, now, until time.Time, limit int) (ok bool, err error) {
	err = s.in.call(ctx, "Store.AcquireSlowSlot", nil, func(ctx context.Context) error {
		ok, err = s.st.AcquireSlowSlot(ctx, tenant, token, now, until, limit)
		return err
	})
	if s.asked != nil {
		s.asked()
	}
	return
}

// firstGate holds a run's "slowok" answers until its first round's
// attempts have all asked the slow lane for a slot (or a second has
// passed: a fault, or an attempt that queued behind a wake without
// asking), so that the lane's slots are taken and the rest refused
// whatever the machine's load: on a busy machine a request could end,
// and free its slot, before a late goroutine of the same round asked,
// which then took the slot instead of parking (found by helper 71's
// review). The scenarios with a late event need the first round to park.
type firstGate struct {
	need int32
	n    atomic.Int32
	open chan struct{}
	once sync.Once
}

func (g *firstGate) asked() {
	if g.n.Add(1) >= g.need {
		g.once.Do(func() { close(g.open) })
	}
}

func (g *firstGate) wait() {
	select {
	case <-g.open:
	case <-time.After(time.Second):
	}
}

// wakeCopy copies a run's first wake queued due now by a delivery that
// closed the circuit (scenario.copyEarlierWake), as SQS may hand a message
// out twice: both copies come in one batch and run at once. So that one
// copy finds the attempt the other is making in progress (and leaves it
// parked, queueing a standby wake: dispatch's sendStandby), and does not
// come after that attempt has ended, the receiver holds the requests made
// once the copy is sent until a standby wake is claimed (at most half a
// second in the runs with a fault, where a fault may stop a copy first;
// half a minute in the clean runs, which must show the standby: on the
// harness's engine just started, the other copy once took longer than
// half a second to reach the attempt, and the clean run failed its
// premise).
//
// And so that the copied wake is the one that makes the parked attempts
// (ordered, in the clean run): a parker's claim of the marker waits while
// that wake's claim is pending, until its confirmation. (A retry parking
// behind the probe as the probe succeeded once claimed the marker between
// the earlier wake's claim and its confirmation: its wake, queued once,
// made the attempts, both copies stopped at its marker, and the clean run
// failed its premise, 1 run in 10 on a busy machine.)
//
// And so that the copy that lists the parked attempts second does not
// find them unparked already by the first (then it has nothing to find
// in progress, queues no standby, and the held request outlived the
// webhook client's timeout: the clean run failed), an unpark once the
// copy is sent waits until both copies have listed them (listed), as
// long.
type wakeCopy struct {
	sent     atomic.Bool
	standby  chan struct{}
	once     sync.Once
	patience time.Duration
	lists    atomic.Int32
	listed   chan struct{}
	opened   sync.Once // closes listed
	// ordered, turn and earlier order the marker's claims (the clean
	// run's copy): turn is held from the earlier wake's claim, whose
	// owner is earlier, to its confirmation, and by each other claim.
	ordered bool
	turn    chan struct{}
	earlier atomic.Value // string
}

// claimTurn takes the marker's turn for a claim, in the ordered run (at
// most patience: true when taken).
func (c *wakeCopy) claimTurn() bool {
	if c == nil || !c.ordered {
		return false
	}
	select {
	case c.turn <- struct{}{}:
		return true
	case <-time.After(c.patience):
		return false
	}
}

func (c *wakeCopy) endTurn() { <-c.turn }

func newWakeCopy(patience time.Duration) *wakeCopy {
	c := &wakeCopy{standby: make(chan struct{}), listed: make(chan struct{}), patience: patience, turn: make(chan struct{}, 1)}
	c.earlier.Store("")
	return c
}

// listedParked counts a listing of the parked attempts that has ended:
// the second since the copy was sent opens the unparks.
func (c *wakeCopy) listedParked() {
	if c != nil && c.sent.Load() && c.lists.Add(1) == 2 {
		c.opened.Do(func() { close(c.listed) })
	}
}

// beforeUnpark holds an unpark, once the copy is sent, until both copies
// listed the parked attempts (at most patience: a fault may stop one;
// then the unparks after it do not wait).
func (c *wakeCopy) beforeUnpark() {
	if c == nil || !c.sent.Load() {
		return
	}
	select {
	case <-c.listed:
	case <-time.After(c.patience):
		c.opened.Do(func() { close(c.listed) })
	}
}

// seen opens the hold at the first standby wake's claim.
func (c *wakeCopy) seen(label string) {
	if strings.HasPrefix(label, "Store.ClaimWake ") && strings.HasSuffix(label, "@dispatch.(*Dispatcher).queueWake<-sendStandby") {
		c.once.Do(func() { close(c.standby) })
	}
}

func (c *wakeCopy) wait() {
	if !c.sent.Load() {
		return
	}
	select {
	case <-c.standby:
	case <-time.After(c.patience):
	}
}

func (s faultStore) ReleaseSlowSlot(ctx context.Context, tenant, token string) error {
	return s.in.call(ctx, "Store.ReleaseSlowSlot", nil, func(ctx context.Context) error { return s.st.ReleaseSlowSlot(ctx, tenant, token) })
}

func (s faultStore) ScheduleAttempt(ctx context.Context, tenant, eventID string, a event.Attempt, ttl int64) (cur event.Attempt, ok bool, err error) {
	err = s.in.call(ctx, "Store.ScheduleAttempt", []string{eventID, a.SubscriptionID, "#" + strconv.Itoa(a.Number)}, func(ctx context.Context) error {
		cur, ok, err = s.st.ScheduleAttempt(ctx, tenant, eventID, a, ttl)
		return err
	})
	return
}

func (s faultStore) ClaimAttempt(ctx context.Context, tenant, eventID string, c event.AttemptClaim, ttl int64) (a event.Attempt, claimed bool, err error) {
	err = s.in.call(ctx, "Store.ClaimAttempt", []string{eventID, c.SubscriptionID, "#" + strconv.Itoa(c.Number)}, func(ctx context.Context) error {
		a, claimed, err = s.st.ClaimAttempt(ctx, tenant, eventID, c, ttl)
		return err
	})
	return
}

func (s faultStore) FinishAttempt(ctx context.Context, tenant, eventID string, a event.Attempt, owner string) error {
	return s.in.call(ctx, "Store.FinishAttempt", []string{eventID, a.SubscriptionID, "#" + strconv.Itoa(a.Number)}, func(ctx context.Context) error {
		return s.st.FinishAttempt(ctx, tenant, eventID, a, owner)
	})
}

func (s faultStore) MarkFollowUp(ctx context.Context, tenant, eventID, subID string, n int, state string) error {
	return s.in.call(ctx, "Store.MarkFollowUp", []string{eventID, subID, "#" + strconv.Itoa(n)}, func(ctx context.Context) error {
		return s.st.MarkFollowUp(ctx, tenant, eventID, subID, n, state)
	})
}

func (s faultStore) MarkScheduledFollowUp(ctx context.Context, tenant, eventID, subID string, n, deferrals int) error {
	return s.in.call(ctx, "Store.MarkScheduledFollowUp", []string{eventID, subID, "#" + strconv.Itoa(n)}, func(ctx context.Context) error {
		return s.st.MarkScheduledFollowUp(ctx, tenant, eventID, subID, n, deferrals)
	})
}

func (s faultStore) ListAttempts(ctx context.Context, tenant, eventID string) (a []event.Attempt, err error) {
	err = s.in.call(ctx, "Store.ListAttempts", []string{eventID}, func(ctx context.Context) error { a, err = s.st.ListAttempts(ctx, tenant, eventID); return err })
	return
}

func (s faultStore) SettleAttempts(ctx context.Context, tenant, eventID string) (a []event.Attempt, running bool, err error) {
	err = s.in.call(ctx, "Store.SettleAttempts", []string{eventID}, func(ctx context.Context) error {
		a, running, err = s.st.SettleAttempts(ctx, tenant, eventID)
		return err
	})
	return
}

func (s faultStore) HoldFirstRound(ctx context.Context, tenant, eventID string, at time.Time, ttl int64) error {
	return s.in.call(ctx, "Store.HoldFirstRound", []string{eventID}, func(ctx context.Context) error {
		return s.st.HoldFirstRound(ctx, tenant, eventID, at, ttl)
	})
}

func (s faultStore) FinishRound(ctx context.Context, tenant, eventID, token string) error {
	return s.in.call(ctx, "Store.FinishRound", []string{eventID}, func(ctx context.Context) error {
		return s.st.FinishRound(ctx, tenant, eventID, token)
	})
}

func (s faultStore) ParkAttempt(ctx context.Context, tenant, subID string, p event.Parked, ttl int64) error {
	return s.in.call(ctx, "Store.ParkAttempt", []string{p.EventID, subID, "#" + strconv.Itoa(p.Number)}, func(ctx context.Context) error {
		return s.st.ParkAttempt(ctx, tenant, subID, p, ttl)
	})
}

func (s faultStore) ListParked(ctx context.Context, tenant, subID string, limit int) (out []event.Parked, err error) {
	err = s.in.call(ctx, "Store.ListParked", []string{subID}, func(ctx context.Context) error { out, err = s.st.ListParked(ctx, tenant, subID, limit); return err })
	s.copy.listedParked()
	return
}

func (s faultStore) SubscriptionEvents(ctx context.Context, tenant, subID, from, to string, limit int) (ids []string, next string, err error) {
	err = s.in.call(ctx, "Store.SubscriptionEvents", []string{subID}, func(ctx context.Context) error {
		ids, next, err = s.st.SubscriptionEvents(ctx, tenant, subID, from, to, limit)
		return err
	})
	return
}

func (s faultStore) UnparkAttempt(ctx context.Context, tenant, subID string, p event.Parked) (ok bool, err error) {
	s.copy.beforeUnpark()
	err = s.in.call(ctx, "Store.UnparkAttempt", s.whenDisabled(tenant, subID, p.EventID, subID, "#"+strconv.Itoa(p.Number)), func(ctx context.Context) error {
		ok, err = s.st.UnparkAttempt(ctx, tenant, subID, p)
		return err
	})
	return
}

func (s faultStore) ClaimWake(ctx context.Context, tenant, subID, owner, prev string, standby bool, until, now time.Time) (ok bool, err error) {
	if s.copy.claimTurn() {
		defer s.copy.endTurn()
	}
	err = s.in.call(ctx, "Store.ClaimWake", []string{subID}, func(ctx context.Context) error {
		ok, err = s.st.ClaimWake(ctx, tenant, subID, owner, prev, standby, until, now)
		return err
	})
	return
}

func (s faultStore) ClaimEarlierWake(ctx context.Context, tenant, subID, owner string, until, after time.Time) (ok bool, err error) {
	turn := s.copy.claimTurn()
	err = s.in.call(ctx, "Store.ClaimEarlierWake", []string{subID}, func(ctx context.Context) error {
		ok, err = s.st.ClaimEarlierWake(ctx, tenant, subID, owner, until, after)
		return err
	})
	if turn {
		if ok && err == nil {
			s.copy.earlier.Store(owner) // the turn ends at its confirmation
		} else {
			s.copy.endTurn()
		}
	}
	return
}

func (s faultStore) ConfirmWake(ctx context.Context, tenant, subID, owner string) (ok bool, err error) {
	err = s.in.call(ctx, "Store.ConfirmWake", []string{subID}, func(ctx context.Context) error {
		ok, err = s.st.ConfirmWake(ctx, tenant, subID, owner)
		return err
	})
	if s.copy != nil && owner != "" && s.copy.earlier.CompareAndSwap(owner, "") {
		s.copy.endTurn()
	}
	return
}

func (s faultStore) TakeWake(ctx context.Context, tenant, subID, owner string, now time.Time) (ok bool, err error) {
	err = s.in.call(ctx, "Store.TakeWake", s.whenDisabled(tenant, subID, subID), func(ctx context.Context) error {
		ok, err = s.st.TakeWake(ctx, tenant, subID, owner, now)
		return err
	})
	return
}

func (s faultStore) AddLaneWaiter(ctx context.Context, tenant string, w event.LaneWaiter, until time.Time) error {
	return s.in.call(ctx, "Store.AddLaneWaiter", []string{w.SubscriptionID}, func(ctx context.Context) error { return s.st.AddLaneWaiter(ctx, tenant, w, until) })
}

func (s faultStore) LaneWaiters(ctx context.Context, tenant string, now time.Time, limit int) (ws []event.LaneWaiter, err error) {
	err = s.in.call(ctx, "Store.LaneWaiters", nil, func(ctx context.Context) error {
		ws, err = s.st.LaneWaiters(ctx, tenant, now, limit)
		return err
	})
	return
}

func (s faultStore) RemoveLaneWaiter(ctx context.Context, tenant, subID, owner string) error {
	return s.in.call(ctx, "Store.RemoveLaneWaiter", []string{subID}, func(ctx context.Context) error { return s.st.RemoveLaneWaiter(ctx, tenant, subID, owner) })
}

// whenDisabled returns args, with "disabled" added when subscription
// subID is disabled (read past the injector): the wake's calls on a
// disabled subscription, which close what is parked behind it, get crash
// cases of their own, apart from the same calls of a live one's wake.
func (s faultStore) whenDisabled(tenant, subID string, args ...string) []string {
	sub, err := s.st.GetSubscription(context.Background(), tenant, subID)
	if err == nil && sub.Disabled {
		args = append(args, "disabled")
	}
	return args
}

// The API's other calls: ingestion writes before any delivery, so they
// run uninjected (a failed write is the client's 5xx, nothing delivered).

func (s faultStore) Put(ctx context.Context, tenant string, e event.Event) error {
	return s.st.Put(ctx, tenant, e)
}

func (s faultStore) PutIdempotent(ctx context.Context, tenant string, e event.Event, key, hash string) (event.Event, bool, error) {
	return s.st.PutIdempotent(ctx, tenant, e, key, hash)
}

func (s faultStore) PutBatch(ctx context.Context, tenant string, evs []event.Event) []error {
	return s.st.PutBatch(ctx, tenant, evs)
}

func (s faultStore) List(ctx context.Context, q event.InboxQuery) (event.Page, error) {
	return s.st.List(ctx, q)
}

func (s faultStore) CreateSubscription(ctx context.Context, tenant string, sub event.Subscription) error {
	return s.st.CreateSubscription(ctx, tenant, sub)
}

func (s faultStore) CheckSubscriptionLimit(ctx context.Context, tenant string) error {
	return s.st.CheckSubscriptionLimit(ctx, tenant)
}

func (s faultStore) UpdateSubscription(ctx context.Context, tenant, id string, p event.SubscriptionPatch, now time.Time) (event.Subscription, error) {
	return s.st.UpdateSubscription(ctx, tenant, id, p, now)
}

func (s faultStore) ListSubscriptionAttempts(ctx context.Context, q event.AttemptsQuery) (event.AttemptsPage, error) {
	return s.st.ListSubscriptionAttempts(ctx, q)
}

func (s faultStore) RotateSecret(ctx context.Context, tenant, id, secret string, now, until time.Time) (event.Subscription, error) {
	return s.st.RotateSecret(ctx, tenant, id, secret, now, until)
}

// faultQueue is the retry queue as the dispatcher and the API see it.
type faultQueue struct {
	q  *simQueue
	in *injector
	// copy, when set, sends the first wake queued by sendEarlier twice.
	copy *wakeCopy
}

func (fq faultQueue) Send(ctx context.Context, t dispatch.Task, delay time.Duration) error {
	args := []string{t.EventID, "round"}
	switch {
	case t.Wake != "":
		args = []string{t.SubscriptionID, "wake"}
	case t.Recover != nil:
		args = []string{t.SubscriptionID, "recover"}
	case t.SubscriptionID != "":
		args = []string{t.EventID, t.SubscriptionID, "#" + strconv.Itoa(t.Attempt)}
	}
	return fq.in.call(ctx, "Queue.Send", args, func(ctx context.Context) error {
		body, err := json.Marshal(t)
		if err != nil {
			return err
		}
		m := simMessage{kind: dispatch.KindTask, body: string(body)}
		if fq.copy != nil && t.Wake != "" && strings.HasSuffix(callSite(), "<-sendEarlier") && fq.copy.sent.CompareAndSwap(false, true) {
			fq.q.sendPair(m, delay)
			return nil
		}
		fq.q.send(m, delay)
		return nil
	})
}

// faultSecrets is the KMS key of the signing secrets as the webhook
// function opens them (local-kms behind a secretbox).
type faultSecrets struct {
	box *secretbox.Box
	in  *injector
}

func (fs faultSecrets) Open(ctx context.Context, tenant, subscriptionID, stored string) (webhook.Secret, error) {
	var out webhook.Secret
	err := fs.in.call(ctx, "Secrets.Open", []string{subscriptionID}, func(ctx context.Context) error {
		var err error
		out, err = fs.box.Open(ctx, tenant, subscriptionID, stored)
		return err
	})
	return out, err
}

// faultSender is the delivery queue as the stream consumer sees it.
type faultSender struct {
	q  *simQueue
	in *injector
}

func (fs faultSender) SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, _ ...func(*sqs.Options)) (out *sqs.SendMessageBatchOutput, err error) {
	err = fs.in.call(ctx, "Sender.SendMessageBatch", nil, func(ctx context.Context) error {
		out = &sqs.SendMessageBatchOutput{}
		for _, e := range in.Entries {
			fs.q.send(simMessage{tenant: aws.ToString(e.MessageAttributes[dispatch.AttrTenant].StringValue), body: aws.ToString(e.MessageBody)}, 0)
			out.Successful = append(out.Successful, sqstypes.SendMessageBatchResultEntry{Id: e.Id})
		}
		return nil
	})
	return
}

// faultTransport is the webhook client's transport: a stop after the
// POST means the receiver got the request and nobody hears its answer.
type faultTransport struct {
	rt http.RoundTripper
	in *injector
	n  *names
	// slow counts the requests in flight to subscriptions marked slow
	// when they are sent, as the instance sees them: from the send until
	// its answer or its end. A subscription (by name) is marked at least
	// until slow.marked's time on the run's clock: the mark setUp gave it
	// (slow answers only extend it).
	slow *gauge
}

func (ft faultTransport) RoundTrip(r *http.Request) (resp *http.Response, err error) {
	sub := strings.TrimPrefix(r.URL.Path[strings.LastIndex(r.URL.Path, "/"):], "/")
	if ft.slow.inLane(sub) {
		ft.slow.add(1)
		defer ft.slow.add(-1)
	}
	if dispatch.WakeSlotIn(r.Context()) {
		ft.slow.addWake(sub, 1)
		defer ft.slow.addWake(sub, -1)
	} else {
		ft.slow.sentDirect(r.Header.Get(webhook.HeaderID), sub)
	}
	err = ft.in.call(r.Context(), "HTTP.POST", []string{r.Header.Get(webhook.HeaderID), sub}, func(ctx context.Context) error {
		resp, err = ft.rt.RoundTrip(r)
		return err
	})
	if errors.Is(err, errStopped) && resp != nil {
		resp.Body.Close()
		resp = nil
	}
	return
}

// gauge counts the requests in flight that take the slow lane and keeps
// the most at once. Requests to a subscription count while the run's
// clock is before marked[name]: until then its attempts see it marked
// slow and take a slot. (Once its mark may have lapsed, its attempts go
// outside the lane until a slow answer marks it again, docs/delivery.md:
// the clock does not move within an invocation, but after a fault a
// request can be made past the mark and share the time with one in the
// lane.)
//
// It also keeps the most requests to one subscription in flight at once
// that were made with slots a wake took for them (wakeTop): two mean a
// wake took two slots and made both attempts at once.
type gauge struct {
	clock    *simClock
	mu       sync.Mutex
	marked   map[string]time.Time
	now, top int
	wakeNow  map[string]int
	wakeTop  int
	// direct holds "<webhook-id>/<sub>" of the requests made without a
	// slot a wake took (an attempt's own, or outside the lane).
	direct map[string]bool
}

func (g *gauge) sentDirect(id, sub string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.direct == nil {
		g.direct = map[string]bool{}
	}
	g.direct[id+"/"+sub] = true
}

// sentOnlyByWake reports whether every request of event id to sub was made
// under a slot a wake took.
func (g *gauge) sentOnlyByWake(id, sub string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return !g.direct[id+"/"+sub]
}

func (g *gauge) mark(sub string, until time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.marked[sub] = until
}

func (g *gauge) inLane(sub string) bool {
	g.mu.Lock()
	until, ok := g.marked[sub]
	g.mu.Unlock()
	return ok && g.clock.now().Before(until)
}

func (g *gauge) add(n int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.now += n
	g.top = max(g.top, g.now)
}

func (g *gauge) addWake(sub string, n int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.wakeNow == nil {
		g.wakeNow = map[string]int{}
	}
	g.wakeNow[sub] += n
	g.wakeTop = max(g.wakeTop, g.wakeNow[sub])
}

// mostByWake is the most requests to one subscription in flight at once
// under slots a wake took.
func (g *gauge) mostByWake() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.wakeTop
}

func (g *gauge) most() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.top
}

// ---- simQueue: SQS's delivery semantics on the virtual clock ----

type simMessage struct {
	id, kind, tenant, body string
	visibleAt              time.Time
	receives               int
	// pair is the id of the copy sent with it (sendPair), which a
	// receive never leaves out of its batch.
	pair string
}

type simQueue struct {
	mu      sync.Mutex
	clock   *simClock
	twice   bool
	seq     int
	msgs    map[string]*simMessage
	dlq     []*simMessage
	handled map[string]int // bodies handled successfully, by body
}

func newSimQueue(c *simClock, twice bool) *simQueue {
	return &simQueue{clock: c, twice: twice, msgs: map[string]*simMessage{}, handled: map[string]int{}}
}

// sendPair sends m twice at once, as SQS may hand a message out twice:
// the two copies come in one batch (receive), even a full one.
func (q *simQueue) sendPair(m simMessage, delay time.Duration) {
	q.send(m, delay)
	q.mu.Lock()
	first := "m" + strconv.Itoa(q.seq)
	q.mu.Unlock()
	q.send(m, delay)
	q.mu.Lock()
	defer q.mu.Unlock()
	second := "m" + strconv.Itoa(q.seq)
	if a, b := q.msgs[first], q.msgs[second]; a != nil && b != nil {
		a.pair, b.pair = second, first
	}
}

func (q *simQueue) send(m simMessage, delay time.Duration) {
	q.mu.Lock()
	defer q.mu.Unlock()
	copies := 1
	if q.twice {
		copies = 2 // SQS delivers at least once
	}
	for range copies {
		q.seq++
		c := m
		c.id = "m" + strconv.Itoa(q.seq)
		c.visibleAt = q.clock.now().Add(min(max(delay, 0), dispatch.MaxQueueDelay))
		q.msgs[c.id] = &c
	}
}

// receive returns up to simBatchSize visible messages of one kind (the
// delivery queue's or the retry queue's: each has its own event source
// mapping), oldest first, and hides them for the visibility timeout.
func (q *simQueue) receive() []simMessage {
	q.mu.Lock()
	defer q.mu.Unlock()
	now := q.clock.now()
	var visible []*simMessage
	for _, m := range q.msgs {
		if !m.visibleAt.After(now) {
			visible = append(visible, m)
		}
	}
	sort.Slice(visible, func(i, j int) bool {
		a, b := visible[i], visible[j]
		if !a.visibleAt.Equal(b.visibleAt) {
			return a.visibleAt.Before(b.visibleAt)
		}
		return len(a.id) < len(b.id) || len(a.id) == len(b.id) && a.id < b.id
	})
	var out []simMessage
	for _, m := range visible {
		// A full batch still takes the copy sent with its last message
		// (sendPair): they come together.
		twin := len(out) > 0 && out[len(out)-1].pair == m.id
		if len(out) >= simBatchSize && !twin || len(out) > 0 && m.kind != out[0].kind {
			break
		}
		m.receives++
		m.visibleAt = now.Add(simVisibility)
		if m.receives > simMaxReceiveCount {
			q.dlq = append(q.dlq, m)
			delete(q.msgs, m.id)
			continue
		}
		out = append(out, *m)
	}
	return out
}

func (q *simQueue) delete(m simMessage) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if _, ok := q.msgs[m.id]; ok {
		delete(q.msgs, m.id)
		q.handled[m.kind+" "+m.body]++
	}
}

// next returns when the next message becomes visible; ok is false when
// the queue is empty.
func (q *simQueue) next() (time.Time, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	var at time.Time
	for _, m := range q.msgs {
		if at.IsZero() || m.visibleAt.Before(at) {
			at = m.visibleAt
		}
	}
	return at, !at.IsZero()
}

type simClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *simClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *simClock) advanceTo(t time.Time) {
	c.mu.Lock()
	if t.After(c.t) {
		c.t = t
	}
	c.mu.Unlock()
}

// ---- the stream, shared ----

// streamRouter reads the shared events table's stream for every run and
// hands each run the INSERT records of its tenant's events, as the stream
// consumer's event source mapping would hand them to one function (the
// consumer skips every other record itself). It polls the stream only
// while a run waits for its records (most of a run is spent draining the
// queues): polling all along was nearly a fifth of the harness's DynamoDB
// Local requests, almost all of them answered with no record.
type streamRouter struct {
	mu      sync.Mutex
	runs    map[string]chan events.DynamoDBEventRecord
	waiting atomic.Int32  // runs waiting for their records
	wake    chan struct{} // a run began waiting
}

func startStreamRouter(t *testing.T, table string) *streamRouter {
	ctx, cancel := context.WithCancel(context.Background())
	arn, err := streampoll.LatestStreamARN(ctx, crashDB.Client, table)
	require.NoError(t, err)
	reader := streampoll.NewStreamReader(ddblocal.NewStreamsClient(crashDB.Endpoint), arn, streampoll.StreamReaderOptions{Region: ddb.LocalRegion})
	sr := &streamRouter{runs: map[string]chan events.DynamoDBEventRecord{}, wake: make(chan struct{}, 1)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			if sr.waiting.Load() == 0 {
				select {
				case <-sr.wake:
				case <-ctx.Done():
					return
				}
			}
			batches, err := reader.Next(ctx)
			if err != nil {
				if ctx.Err() == nil {
					t.Errorf("stream: %v", err)
				}
				return
			}
			if len(batches) == 0 {
				time.Sleep(5 * time.Millisecond)
			}
			for _, b := range batches {
				for _, rec := range b.Event.Records {
					if rec.EventName != "INSERT" {
						continue
					}
					tenant, _ := contract.TenantOfPartition(rec.Change.NewImage[schema.AttrUserID].String())
					sr.mu.Lock()
					ch := sr.runs[tenant]
					sr.mu.Unlock()
					if ch != nil {
						ch <- rec
					}
				}
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return sr
}

// await marks a run as waiting for its records until the returned
// function is called: the router polls the stream meanwhile.
func (sr *streamRouter) await() (done func()) {
	sr.waiting.Add(1)
	select {
	case sr.wake <- struct{}{}:
	default:
	}
	return func() { sr.waiting.Add(-1) }
}

// register returns the channel of tenant's event records.
func (sr *streamRouter) register(tenant string) <-chan events.DynamoDBEventRecord {
	ch := make(chan events.DynamoDBEventRecord, 16)
	sr.mu.Lock()
	sr.runs[tenant] = ch
	sr.mu.Unlock()
	return ch
}

// ---- the receiver ----

// crashReceiver is one TLS endpoint for every run: the path names the run
// and the subscription (".../<run>/<behaviour>/<name>"). Behaviours: ok
// (200), flaky (503 with Retry-After: 60 to a message's first two
// requests, then 200), gone (410), fail (500), down3 (500 to the
// subscription's first three requests, whatever the message, then 200),
// slow (200 after 300 ms to the subscription's first request, at once
// after), slowok (200 after slowOKDelay to every request), moving (410 to the subscription's first request, answered once
// the tenant has moved the subscription to its "ok" URL: the run's
// moveTo).
type crashReceiver struct {
	srv  *httptest.Server
	mu   sync.Mutex
	seen map[string][]seenRequest // by run
	// moveTo moves a run's subscription (by name) to the URL given.
	moveTo map[string]func(sub, url string)
	// gates hold a run's slowok answers (firstGate).
	gates map[string]*firstGate
	// copies hold a run's answers while a copied wake runs (wakeCopy).
	copies map[string]*wakeCopy
}

type seenRequest struct {
	sub, webhookID, bodyEventID string
	status                      int
}

func newCrashReceiver(t *testing.T) *crashReceiver {
	r := &crashReceiver{seen: map[string][]seenRequest{}, moveTo: map[string]func(string, string){}, gates: map[string]*firstGate{}, copies: map[string]*wakeCopy{}}
	r.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		parts := strings.Split(strings.Trim(req.URL.Path, "/"), "/")
		if len(parts) != 3 {
			http.Error(w, "bad path", http.StatusNotFound)
			return
		}
		run, behaviour, sub := parts[0], parts[1], parts[2]
		body, _ := io.ReadAll(req.Body)
		var ev struct {
			ID string `json:"event_id"`
		}
		_ = json.Unmarshal(body, &ev)
		id := req.Header.Get(webhook.HeaderID)
		r.mu.Lock()
		n, total := 0, 0
		for _, s := range r.seen[run] {
			if s.sub == sub {
				total++
				if s.webhookID == id {
					n++
				}
			}
		}
		status := http.StatusOK
		switch behaviour {
		case "flaky":
			if n < 2 {
				status = http.StatusServiceUnavailable
				w.Header().Set("Retry-After", "60")
			}
		case "gone", "moving":
			status = http.StatusGone
		case "fail":
			status = http.StatusInternalServerError
		case "down3":
			if total < 3 {
				status = http.StatusInternalServerError
			}
		case "down2":
			if total < 2 {
				status = http.StatusInternalServerError
			}
		}
		r.seen[run] = append(r.seen[run], seenRequest{sub: sub, webhookID: id, bodyEventID: ev.ID, status: status})
		move := r.moveTo[run]
		gate := r.gates[run]
		copied := r.copies[run]
		r.mu.Unlock()
		if copied != nil && status == http.StatusOK {
			copied.wait()
		}
		if behaviour == "moving" && total == 0 {
			move(sub, r.srv.URL+"/"+run+"/ok/"+sub)
		}
		if behaviour == "slow" && total == 0 {
			time.Sleep(300 * time.Millisecond)
		}
		if behaviour == "slowok" {
			if gate != nil {
				gate.wait()
			}
			time.Sleep(slowOKDelay)
		}
		w.WriteHeader(status)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *crashReceiver) requests(run string) []seenRequest {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]seenRequest(nil), r.seen[run]...)
}

// slowOKDelay is how long the "slowok" behaviour takes to answer: past
// the slow-lane scenario's slowLaneAfter.
const slowOKDelay = 40 * time.Millisecond

// ---- scenarios ----

type subSpec struct {
	name, behaviour string
	types           []string
	// failingFor starts the subscription's run of failures this long
	// before the scenario (to reach DisableAfter on its first failure).
	failingFor time.Duration
	// slowFor marks the subscription slow (store MarkSlow) until this
	// long after the scenario begins: its attempts take the tenant's slow
	// lane from the first round on.
	slowFor time.Duration
	// deleteAfter: the tenant deletes the subscription this long after
	// the events were ingested.
	deleteAfter time.Duration
	// retype: after the first round, as for deleteAfter, the tenant
	// narrows the subscription's event_types to a type no event of the
	// scenario has: the attempts already made go on (a round replayed
	// after a fault resumes them), no first attempt is made any more.
	retype bool
	// want is its latest attempt's outcome once settled, and whether the
	// subscription still exists and is disabled.
	want             string
	exists, disabled bool
}

type eventSpec struct {
	name, typ string
	// late: posted once the first round of the others has run (one
	// invocation), while the wakes it queued wait: its attempts meet a
	// subscription whose wake is queued. In a slow-lane scenario a clean
	// run must have every subscription's wake make it, under the slots
	// the wake took (the new attempt queues behind the parked ones:
	// dispatch's behindWake).
	late bool
	// want is its status once settled, and its retry_count in a run
	// without a fault (-1: not predicted).
	want       event.Status
	retryCount int
}

type scenario struct {
	name     string
	schedule contract.RetrySchedule
	// The dispatcher's breaker and rate cap (zero: a threshold no run
	// reaches, no slow watch, no cap).
	threshold    int
	slowAfter    time.Duration
	endpointRate int
	// slowLaneAfter and tenantSlow configure the slow lane (zero: off).
	slowLaneAfter time.Duration
	tenantSlow    int
	subs          []subSpec
	events        []eventSpec
	// redeliver: once the events settle, the tenant asks for a
	// redelivery of each failed event (the API route); then it settles
	// again.
	redeliver bool
	// recover: once the events settle, the tenant asks for a recovery of
	// the subscriptions' failures since the scenario began (the API
	// route); then it settles again.
	recover bool
	// interchangeable events are one name ("e*") in the labels: a fault
	// hits the first of them to make the call.
	interchangeable bool
	// parkedWhenDisabled: the clean run disables a subscription while
	// attempts are parked behind its open circuit, so that a wake unparks
	// them from the disabled subscription (TestCrashPoints asserts it, so
	// that the scenario cannot drift away from what it is for).
	parkedWhenDisabled bool
	// premise names calls the clean run must make (label prefixes), so
	// that the scenario cannot drift away from what it is for: the
	// breaker opening, the slow watch firing, the rate cap putting an
	// attempt off (TestCrashPoints asserts it).
	premise []string
	// slowLaneFull: the clean run puts off an attempt because its
	// tenant's slow lane is full (TestCrashPoints asserts it).
	slowLaneFull bool
	// turnHandedOver: the clean run has a wake that frees the lane's
	// slots hand a waiting subscription its turn (TestCrashPoints asserts
	// it).
	turnHandedOver bool
	// everyCall names labels (prefixes) whose calls in the clean run up
	// to everyCallMost, not only the first, get crash cases: calls a loop
	// makes one after the other under one label (a wake taking its
	// lane's slots), where a fault at the second differs from one at the
	// first.
	everyCall []string
	// wakeTakesTwo: the clean run has a wake take two slots and make both
	// attempts at once (TestCrashPoints asserts it).
	wakeTakesTwo bool
	// earlierWake: the clean run has a delivery that is not a wake's close
	// the circuit and queue the wake due now in place of the circuit's
	// (TestCrashPoints asserts it).
	earlierWake bool
	// copyEarlierWake sends that wake twice (wakeCopy): the clean run has
	// a copy find an attempt in progress and queue a standby wake
	// (TestCrashPoints asserts it).
	copyEarlierWake bool
}

// crashDB is the crash-point harness's DynamoDB Local (TestCrashPoints).
var crashDB *ddbtest.Local

// loseKey marks the context of a call whose answers are lost
// (fault.lost): each write request made under it reaches DynamoDB and
// takes effect, and lossyClient answers it with a 500 instead of its
// answer; the SDK's retry of it gets its answer.
type loseKey struct{}

// lateKey marks the context of a call whose first write (or
// fault.write) is held back (fault.late): lossyClient keeps the request
// in the context's *lateCopies without sending it, and answers it as an
// attempt that timed out (the SDK sends the same request again, which
// goes through).
type lateKey struct{}

// writeKey names the nth call under label in injector.writes.
func writeKey(label string, nth int) string {
	return label + " (call " + strconv.Itoa(max(nth, 1)) + ")"
}

// writesKey marks the context of a storage call with the count of its
// DynamoDB writes so far (*atomic.Int32, counted by lossyClient).
type writesKey struct{}

// maxLateWrite is the last of a call's writes that gets a late case of
// its own.
const maxLateWrite = 3

// lateCopies are the write requests a late fault held back, to be sent
// late (land).
type lateCopies struct {
	// at is the write of the call to hold (0 and 1: its first).
	at   int
	mu   sync.Mutex
	reqs []heldRequest
	// held: a write was held (reqs is emptied when it lands).
	held bool
}

type heldRequest struct {
	url    string
	header http.Header
	body   []byte
}

// hold keeps r, the call's nth write, if it is the write c holds and
// nothing is held yet, and reports whether it did.
func (c *lateCopies) hold(r *http.Request, nth int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.held || nth != max(c.at, 1) {
		return false
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		panic("harness: read a write to hold: " + err.Error())
	}
	r.Body.Close()
	c.reqs = append(c.reqs, heldRequest{url: r.URL.String(), header: r.Header.Clone(), body: body})
	c.held = true
	return true
}

// wasHeld reports whether a write was held.
func (c *lateCopies) wasHeld() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.held
}

// land sends the held requests to DynamoDB now, as first sent (the same
// body, headers and signature), and returns their operations and HTTP
// statuses: 200 when a copy took effect, 400 when its condition refused
// it.
func (c *lateCopies) land(t testing.TB) []string {
	out, err := c.landErr()
	require.NoError(t, err)
	return out
}

// landErr is land, for a goroutine other than the test's.
func (c *lateCopies) landErr() ([]string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, h := range c.reqs {
		req, err := http.NewRequest(http.MethodPost, h.url, bytes.NewReader(h.body))
		if err != nil {
			return out, err
		}
		req.Header = h.header.Clone()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return out, err
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		op := strings.TrimPrefix(h.header.Get("X-Amz-Target"), "DynamoDB_20120810.")
		if resp.StatusCode != http.StatusOK && !bytes.Contains(b, []byte("ConditionalCheckFailed")) && !bytes.Contains(b, []byte("TransactionCanceled")) {
			return out, fmt.Errorf("harness: the late copy of %s was answered %d: %s", op, resp.StatusCode, b)
		}
		out = append(out, fmt.Sprintf("%s %d", op, resp.StatusCode))
	}
	c.reqs = nil
	return out, nil
}

// writeOps are the DynamoDB operations that change the table.
var writeOps = map[string]bool{"PutItem": true, "UpdateItem": true, "DeleteItem": true, "BatchWriteItem": true, "TransactWriteItems": true}

// lossyClient is the runs' client of l: the SDK's standard retryer with
// four attempts, as deployed, but a backoff of milliseconds, no retry
// quota and a plain HTTP client (DynamoDB Local neither throttles nor
// stalls, so only the lost answers' retries meet the difference); each
// write made under a loseKey context takes effect and is answered with
// InternalServerError, as when DynamoDB's answer is lost on the way: the
// SDK sends the same request again, and that one is answered. (A store
// call makes its requests one after the other, so the write after a lost
// one is its retry.)
func lossyClient(l *ddbtest.Local) *dynamodb.Client {
	real := &http.Client{Timeout: ddb.LocalAttemptTimeout}
	return ddb.NewLocalClient(l.Endpoint, func(o *dynamodb.Options) {
		o.HTTPClient = ddbtest.HTTPClientFunc(func(r *http.Request) (*http.Response, error) {
			isWrite := writeOps[strings.TrimPrefix(r.Header.Get("X-Amz-Target"), "DynamoDB_20120810.")]
			nth := 0
			if writes, _ := r.Context().Value(writesKey{}).(*atomic.Int32); writes != nil && isWrite {
				nth = int(writes.Add(1))
			}
			if late, _ := r.Context().Value(lateKey{}).(*lateCopies); late != nil && isWrite && late.hold(r, nth) {
				held := ddbtest.AWSServerError("InternalServerError", "harness: the attempt timed out, its request held on the way")
				held.Request = r
				return held, nil
			}
			resp, err := real.Do(r)
			lose, _ := r.Context().Value(loseKey{}).(*atomic.Bool)
			if err != nil || lose == nil || !writeOps[strings.TrimPrefix(r.Header.Get("X-Amz-Target"), "DynamoDB_20120810.")] || !lose.CompareAndSwap(false, true) {
				if lose != nil {
					lose.Store(false)
				}
				return resp, err
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			lost := ddbtest.AWSServerError("InternalServerError", "harness: the answer was lost")
			lost.Request = r
			return lost, nil
		})
		o.Retryer = retry.NewStandard(func(so *retry.StandardOptions) {
			so.MaxAttempts = 4
			so.MaxBackoff = 5 * time.Millisecond
			so.RateLimiter = ratelimit.None
		})
	})
}

// everyCallMost bounds the calls of one everyCall label that get crash
// cases (a loop's third call and on are like its second).
const everyCallMost = 3

// crashShards is the shard count of a sharded run's tenant: the run uses a
// sharded events table (store.WithSharding, as EVENTS_SHARDING=on deploys
// it) and the tenant writes to and reads from that many shards
// (docs/sharding.md), so its events land in partitions "<tenant>~<k>" and
// every read or update by id goes to the shard the id names.
const crashShards = 8

func crashScenarios() []scenario {
	long := contract.RetrySchedule{5 * time.Second, 20 * time.Minute, 20 * time.Minute, 20 * time.Minute}
	return []scenario{{
		// Two failures in a row open the circuit: the third event and the
		// retries wait, not attempted; after the cooldown one probe at a
		// time goes; its success closes the circuit and the rest follow.
		name:            "circuit breaker",
		schedule:        long,
		threshold:       2,
		interchangeable: true,
		premise:         []string{"Store.OpenCircuit ", "Store.AcquireProbe ", "Store.ParkAttempt "},
		subs:            []subSpec{{name: "s-down", behaviour: "down3", want: event.OutcomeDelivered, exists: true}},
		events: []eventSpec{
			{name: "e1", typ: "order.paid", want: event.Delivered, retryCount: -1},
			{name: "e2", typ: "order.paid", want: event.Delivered, retryCount: -1},
			{name: "e3", typ: "order.paid", want: event.Delivered, retryCount: -1},
		},
	}, {
		// Two failures open the circuit; the late event's attempt parks
		// behind it, its wake due when the circuit closes plus the
		// spread (15 s). A retry due between the two is the probe: its
		// success closes the circuit and queues the wake due now in place
		// of the circuit's, which then finds nothing left. That wake's
		// message comes twice: one copy finds the attempt the other is
		// making in progress, leaves it parked and queues a standby wake.
		name:            "circuit closed by a retry",
		copyEarlierWake: true,
		schedule:        contract.RetrySchedule{65 * time.Second, 20 * time.Minute, 20 * time.Minute, 20 * time.Minute},
		threshold:       2,
		interchangeable: true,
		earlierWake:     true,
		premise:         []string{"Store.OpenCircuit ", "Store.ParkAttempt ", "Store.ClaimEarlierWake "},
		subs:            []subSpec{{name: "s-down", behaviour: "down2", want: event.OutcomeDelivered, exists: true}},
		events: []eventSpec{
			{name: "e1", typ: "order.paid", want: event.Delivered, retryCount: 1},
			{name: "e2", typ: "order.paid", want: event.Delivered, retryCount: 1},
			{name: "e3", typ: "order.paid", want: event.Delivered, retryCount: 0, late: true},
		},
	}, {
		// A request still unanswered after slowAfter opens the circuit
		// while it runs.
		name:      "slow endpoint",
		schedule:  long,
		slowAfter: 100 * time.Millisecond,
		// Its endpoint never fails: only the slow watch opens a circuit.
		premise: []string{"Store.OpenCircuit "},
		subs:    []subSpec{{name: "s-slow", behaviour: "slow", want: event.OutcomeDelivered, exists: true}},
		events:  []eventSpec{{name: "e", typ: "order.paid", want: event.Delivered, retryCount: 0}},
	}, {
		// One request a second: the others wait for the next second.
		name:            "rate cap",
		schedule:        long,
		endpointRate:    1,
		interchangeable: true,
		// Its endpoint never fails: an attempt scheduled is one the cap
		// put off.
		premise: []string{"Store.ScheduleAttempt "},
		subs:    []subSpec{{name: "s-ok", behaviour: "ok", want: event.OutcomeDelivered, exists: true}},
		events: []eventSpec{
			{name: "e1", typ: "order.paid", want: event.Delivered, retryCount: 0},
			{name: "e2", typ: "order.paid", want: event.Delivered, retryCount: 0},
			{name: "e3", typ: "order.paid", want: event.Delivered, retryCount: 0},
		},
	}, {
		// The tenant's slow lane holds one request at a time: its two
		// slow endpoints take turns; the attempts that find the lane full
		// are put off (tenant_busy), with a growing wait, never failed.
		// s-slow1 is marked slow for longer than the run could last
		// (drainUntil's steps at MaxSlowLaneWait each), so that a stop
		// right after a slot is taken leaves the slot held while
		// s-slow1's attempts still need it: they wait for its hold to
		// end, then reclaim it (were it never reclaimed, the queues
		// would never drain). s-slow2 is marked for a minute, less than half of
		// dispatch.SlowLaneFor, so that its slow answers mark it again.
		// e3 comes once the first round has parked attempts behind both
		// wakes: it queues behind them, though the slot is free again,
		// and the wakes make it (checked in the clean run).
		name:            "slow lane",
		schedule:        long,
		slowLaneAfter:   slowOKDelay / 2,
		tenantSlow:      1,
		interchangeable: true,
		slowLaneFull:    true,
		turnHandedOver:  true,
		subs: []subSpec{
			{name: "s-slow1", behaviour: "slowok", slowFor: 20 * 24 * time.Hour, want: event.OutcomeDelivered, exists: true},
			{name: "s-slow2", behaviour: "slowok", slowFor: time.Minute, want: event.OutcomeDelivered, exists: true},
		},
		events: []eventSpec{
			{name: "e1", typ: "order.paid", want: event.Delivered, retryCount: 0},
			{name: "e2", typ: "order.paid", want: event.Delivered, retryCount: 0},
			{name: "e3", typ: "order.paid", want: event.Delivered, retryCount: 0, late: true},
		},
	}, {
		// The same lane with two slots and one endpoint: the first round
		// of three events makes two attempts and parks the third behind
		// one wake; e4 comes while that wake waits and queues behind it
		// (the lane has two slots free by then). The wake takes both
		// slots one after the other and makes both attempts at once
		// (wakeInLane's loop); with faults, it may take one and stop at
		// the refused second. (Two endpoints, or several parkers at
		// once, queue several wakes, which may share a batch and take a
		// slot each: a wake taking two was not certain.)
		name:            "slow lane, two slots",
		schedule:        long,
		slowLaneAfter:   slowOKDelay / 2,
		tenantSlow:      2,
		interchangeable: true,
		slowLaneFull:    true,
		everyCall:       []string{"Store.AcquireSlowSlot @dispatch.(*Dispatcher).slowSlot<-wakeInLane"},
		wakeTakesTwo:    true,
		subs: []subSpec{
			{name: "s-slow1", behaviour: "slowok", slowFor: 20 * 24 * time.Hour, want: event.OutcomeDelivered, exists: true},
		},
		events: []eventSpec{
			{name: "e1", typ: "order.paid", want: event.Delivered, retryCount: 0},
			{name: "e2", typ: "order.paid", want: event.Delivered, retryCount: 0},
			{name: "e3", typ: "order.paid", want: event.Delivered, retryCount: 0},
			{name: "e4", typ: "order.paid", want: event.Delivered, retryCount: 0, late: true},
		},
	}, {
		// Rounds, retries (one hopping: 20 minutes is more than SQS's
		// longest delay), Retry-After, failed -> retrying -> delivered.
		name:     "retries until delivered",
		schedule: long,
		subs: []subSpec{
			{name: "s-ok", behaviour: "ok", want: event.OutcomeDelivered, exists: true},
			{name: "s-flaky", behaviour: "flaky", want: event.OutcomeDelivered, exists: true},
		},
		events: []eventSpec{{name: "e", typ: "order.paid", want: event.Delivered, retryCount: 2}},
	}, {
		// One subscription delivers on its third attempt (Retry-After
		// 60 s, then the schedule's 20 minutes), the other fails for good:
		// the event ends failed, never delivered. A fault before the
		// first round records its attempt to s-fail brings the round's
		// message back only after the visibility timeout (30 minutes),
		// after s-flaky's retries: their settles must not find s-flaky's
		// attempts alone and move the event to delivered for good (the
		// first round's hold, dispatch's firstHold).
		name:     "one of two fails for good",
		schedule: contract.RetrySchedule{5 * time.Second, 20 * time.Minute},
		premise:  []string{"Store.HoldFirstRound "},
		subs: []subSpec{
			{name: "s-flaky", behaviour: "flaky", want: event.OutcomeDelivered, exists: true},
			{name: "s-fail", behaviour: "fail", want: event.OutcomeFailed, exists: true},
		},
		events: []eventSpec{{name: "e", typ: "order.paid", want: event.Failed, retryCount: -1}},
	}, {
		name:     "410 gone",
		schedule: long,
		subs:     []subSpec{{name: "s-gone", behaviour: "gone", want: event.OutcomeGone}},
		events:   []eventSpec{{name: "e", typ: "order.paid", want: event.Failed, retryCount: 0}},
	}, {
		// The tenant moves the subscription to another URL while the old
		// one is answering 410 Gone: the subscription is kept and the
		// event goes on to the new URL, as the next attempt.
		name:     "moved while gone",
		schedule: long,
		subs:     []subSpec{{name: "s-moved", behaviour: "moving", want: event.OutcomeDelivered, exists: true}},
		events:   []eventSpec{{name: "e", typ: "order.paid", want: event.Delivered, retryCount: 1}},
	}, {
		// The tenant deletes a failing subscription: its retry is dropped
		// and the event stays failed, never delivered.
		name:     "deleted while failing",
		schedule: long,
		subs:     []subSpec{{name: "s-deleted", behaviour: "fail", deleteAfter: time.Second, want: event.OutcomeFailed}},
		events:   []eventSpec{{name: "e", typ: "order.paid", want: event.Failed, retryCount: 0}},
	}, {
		name:     "disabled after failing too long",
		schedule: long,
		subs:     []subSpec{{name: "s-disabled", behaviour: "fail", failingFor: 2 * time.Hour, want: event.OutcomeFailed, exists: true, disabled: true}},
		events:   []eventSpec{{name: "e", typ: "order.paid", want: event.Failed, retryCount: 0}},
	}, {
		// The tenant narrows a failing subscription's event_types after
		// the first round: its retries go on until delivered. A first
		// round replayed after a fault (its message back after the
		// change) resumes the attempt it recorded, whatever the filter
		// says now (dispatch's withRecorded).
		name:     "retyped while failing",
		schedule: long,
		subs:     []subSpec{{name: "s-retyped", behaviour: "flaky", retype: true, want: event.OutcomeDelivered, exists: true}},
		events:   []eventSpec{{name: "e", typ: "order.paid", want: event.Delivered, retryCount: 2}},
	}, {
		// Disabled while attempts are parked: the first round's two
		// failures open the circuit, the retries park behind it, and the
		// first probe's failure passes DisableAfter (failing since 59.5
		// minutes before the scenario, the cooldown a minute): one
		// probe, so the trace does not depend on how many probes fail
		// before the disable. The rest of that wake's page, unparked
		// from the disabled subscription, is closed; none is left
		// parked or pending, and the events end failed.
		name:               "disabled while parked",
		schedule:           long,
		threshold:          2,
		interchangeable:    true,
		parkedWhenDisabled: true,
		subs:               []subSpec{{name: "s-parked", behaviour: "fail", failingFor: 59*time.Minute + 30*time.Second, want: event.OutcomeFailed, exists: true, disabled: true}},
		events: []eventSpec{
			{name: "e1", typ: "order.paid", want: event.Failed, retryCount: -1},
			{name: "e2", typ: "order.paid", want: event.Failed, retryCount: -1},
		},
	}, {
		// The schedule ends failed; the tenant redelivers through the API.
		name:      "redelivery",
		schedule:  contract.RetrySchedule{5 * time.Second},
		subs:      []subSpec{{name: "s-flaky", behaviour: "flaky", want: event.OutcomeDelivered, exists: true}},
		events:    []eventSpec{{name: "e", typ: "order.paid", want: event.Delivered, retryCount: 2}},
		redeliver: true,
	}, {
		// The schedule ends failed; the tenant recovers the subscription
		// through the API: a page per event (two entries a page).
		name:            "recovery",
		schedule:        contract.RetrySchedule{5 * time.Second},
		interchangeable: true,
		subs:            []subSpec{{name: "s-flaky", behaviour: "flaky", want: event.OutcomeDelivered, exists: true}},
		events: []eventSpec{
			{name: "e1", typ: "order.paid", want: event.Delivered, retryCount: 2},
			{name: "e2", typ: "order.paid", want: event.Delivered, retryCount: 2},
		},
		recover: true,
	}}
}

// ---- one run ----

type runResult struct {
	trace []string
	// counts are the calls made under each label of trace.
	counts map[string]int
	// writes are the DynamoDB writes of each storage call, by its label
	// and occurrence (writeKey).
	writes map[string]int
	// slowHeld is the most requests to the subscriptions marked slow for
	// the whole run that were in flight at once; slowByWake the most to
	// one subscription under slots a wake took for them.
	slowHeld, slowByWake int
}

type crashRun struct {
	t        *testing.T
	sc       scenario
	f        fault
	twice    bool
	sharded  bool
	id       string
	rcv      *crashReceiver
	clock    *simClock
	in       *injector
	copy     *wakeCopy // scenario.copyEarlierWake
	names    *names
	st       *store.Store
	fs       faultStore
	q        *simQueue
	d        *dispatch.Dispatcher
	api      *httpapi.API
	box      *secretbox.Box
	slowHeld *gauge
	tenant   string
	router   *streamRouter
	records  <-chan events.DynamoDBEventRecord
	subs     map[string]event.Subscription // by name
	eventIDs map[string]string             // name -> id
	failures []string
	// landedSoon and landErr: what a soon late copy's landing mid-run
	// made of it.
	landedSoon, landErr atomic.Value
}

var runSeq atomic.Int64

func (r *crashRun) fatalf(format string, args ...any) {
	r.t.Helper()
	r.t.Fatalf("%s / %s / twice=%v sharded=%v: "+format+"\n%s", append(append([]any{r.sc.name, r.f, r.twice, r.sharded}, args...), r.dump())...)
}

// dump describes the run's state for a failure message: each event's
// status and attempts, the trace.
func (r *crashRun) dump() string {
	var b strings.Builder
	ctx := context.Background()
	for _, es := range r.sc.events {
		id := r.eventIDs[es.name]
		e, err := r.st.Get(ctx, r.tenant, id)
		fmt.Fprintf(&b, "%s: %s retry_count %d %v\n", es.name, e.Status, e.RetryCount, err)
		as, _ := r.st.ListAttempts(ctx, r.tenant, id)
		for _, a := range as {
			fmt.Fprintf(&b, "  %s #%d %s sends=%d next=%s followup=%s round=%.6s at %s\n", r.names.all([]string{a.SubscriptionID})[0], a.Number, a.Outcome, a.Sends, a.NextAttemptAt, a.FollowUp, a.Round, a.Timestamp)
		}
	}
	r.in.mu.Lock()
	fmt.Fprintf(&b, "trace:\n  %s\n", strings.Join(r.in.trace, "\n  "))
	r.in.mu.Unlock()
	return b.String()
}

// crashEnv is what every run shares: the receiver, the events table (each
// run is its own tenant) and its stream.
type crashEnv struct {
	// client is the runs' DynamoDB client (lossyClient).
	client *dynamodb.Client
	rcv    *crashReceiver
	table  string
	stream *streamRouter
	// kms and key seal the subscriptions' secrets, as deployed.
	kms *kmstest.Local
	key string
}

func newCrashEnv(t *testing.T) *crashEnv {
	table := crashDB.CreateTable(t, schema.Events())
	kms := kmstest.Start(t)
	return &crashEnv{client: lossyClient(crashDB), rcv: newCrashReceiver(t), table: table, stream: startStreamRouter(t, table), kms: kms, key: kms.Key(t)}
}

func newCrashRun(t *testing.T, env *crashEnv, sc scenario, f fault, twice, sharded bool) *crashRun {
	rcv := env.rcv
	r := &crashRun{t: t, sc: sc, f: f, twice: twice, sharded: sharded, rcv: rcv, id: "run" + strconv.FormatInt(runSeq.Add(1), 10),
		clock:    &simClock{t: time.Now().UTC().Truncate(time.Second)},
		names:    &names{m: map[string]string{}},
		subs:     map[string]event.Subscription{},
		eventIDs: map[string]string{},
	}
	r.in = newInjector(f, r.names)
	r.in.landOn = func() {
		out, err := r.in.late.landErr()
		r.landedSoon.Store(fmt.Sprintf("%v %v", out, err))
		if err != nil {
			r.landErr.Store(err)
		}
	}
	if sc.copyEarlierWake {
		patience := 500 * time.Millisecond
		if f.label == "" && !twice && !sharded {
			patience = 30 * time.Second // the run whose premise is checked
		}
		r.copy = newWakeCopy(patience)
		r.copy.ordered = patience > time.Second
		r.in.onCall = r.copy.seen
		rcv.mu.Lock()
		rcv.copies[r.id] = r.copy
		rcv.mu.Unlock()
	}
	r.slowHeld = &gauge{clock: r.clock, marked: map[string]time.Time{}}
	r.tenant = "tenant-" + r.id
	rcv.mu.Lock()
	rcv.moveTo[r.id] = func(name, url string) {
		_, err := r.st.UpdateSubscription(context.Background(), r.tenant, r.subs[name].ID, event.SubscriptionPatch{URL: &url}, r.clock.now())
		if err != nil {
			r.t.Errorf("move %s: %v", name, err)
		}
	}
	rcv.mu.Unlock()
	r.router = env.stream
	r.records = env.stream.register(r.tenant)
	if sharded {
		r.st = store.New(env.client, env.table, store.WithSharding(true))
	} else {
		r.st = store.New(env.client, env.table)
	}
	r.fs = faultStore{st: r.st, in: r.in, clock: r.clock, copy: r.copy}
	if first := len(sc.events) - lateCount(sc); first < len(sc.events) && !twice {
		// Every first-round attempt asks the lane (one per event and
		// subscription: the scenarios with late events filter none).
		g := &firstGate{need: int32(first * len(sc.subs)), open: make(chan struct{})}
		rcv.mu.Lock()
		rcv.gates[r.id] = g
		rcv.mu.Unlock()
		r.fs.asked = g.asked
	}
	r.q = newSimQueue(r.clock, twice)
	tlsCfg := rcv.srv.Client().Transport.(*http.Transport).TLSClientConfig
	opts := webhook.ClientOptions{AllowPrivate: true, TLSConfig: tlsCfg}
	if r.copy != nil && r.copy.patience > webhook.DefaultTimeout {
		// The receiver holds a request until the standby wake is claimed,
		// up to the patience: the request must outlast the hold. (With the
		// default 10 s, a clean run on a machine busy with other test
		// packages timed out its held request before the other copy
		// reached the attempt, and every later request of the run was
		// held and timed out too: its events ended failed.)
		opts.Timeout = r.copy.patience + 10*time.Second
	}
	client := webhook.NewHTTPClient(opts)
	client.Transport = faultTransport{rt: client.Transport, in: r.in, n: r.names, slow: r.slowHeld}
	threshold, slow := sc.threshold, sc.slowAfter
	if threshold == 0 {
		threshold = 1000
	}
	if slow == 0 {
		slow = -1
	}
	slowLane := sc.slowLaneAfter
	if slowLane == 0 {
		slowLane = -1
	}
	// A box per run: its cache does not carry over to another run.
	box, err := secretbox.New(env.kms.Client, env.key, secretbox.Options{})
	require.NoError(t, err)
	r.box = box
	d, err := dispatch.New(dispatch.Config{
		Secrets: faultSecrets{box: box, in: r.in},
		Store:   r.fs, Queue: faultQueue{q: r.q, in: r.in, copy: r.copy}, Client: client, Schedule: sc.schedule,
		DisableAfter: time.Hour, Now: r.clock.now, Rand: half{}, RecoverPage: 2,
		BreakerThreshold: threshold, BreakerCooldown: time.Minute, SlowAfter: slow, EndpointRate: sc.endpointRate,
		SlowLaneAfter: slowLane, TenantSlowConcurrency: sc.tenantSlow,
		Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)),
	})
	require.NoError(t, err)
	r.d = d
	r.api, err = httpapi.New(httpapi.Config{
		Store: r.fs, CursorSecret: bytes.Repeat([]byte("k"), 32), Now: r.clock.now,
		Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)),
		Webhooks: &httpapi.Webhooks{
			Store: r.fs, Redeliver: dispatch.Redeliver(faultQueue{q: r.q, in: r.in}, r.fs), Recover: dispatch.Recover(faultQueue{q: r.q, in: r.in}), Secrets: box,
			CheckTarget: func(context.Context, string) error { return nil },
		},
	})
	require.NoError(t, err)
	return r
}

// request serves one API request in its own invocation; ok is false when
// its process stopped (the client sees no answer).
func (r *crashRun) request(method, path, body string) (code int, out []byte, ok bool) {
	ctx := httpapi.WithTenant(context.Background(), r.tenant)
	if r.sharded {
		ctx = shard.WithConfig(ctx, shard.Config{Write: crashShards, Read: crashShards})
	}
	ctx, inv := newInvocation(ctx)
	hr := httptest.NewRequestWithContext(ctx, method, path, strings.NewReader(body))
	if body != "" {
		hr.Header.Set("Content-Type", "application/json")
	}
	w := httptest.NewRecorder()
	r.api.ServeHTTP(w, hr)
	return w.Code, w.Body.Bytes(), !inv.dead.Load()
}

func (r *crashRun) setUp() {
	ctx := context.Background()
	for _, s := range r.sc.subs {
		id, err := event.NewSubscriptionID(nil)
		require.NoError(r.t, err)
		types := s.types
		if types == nil {
			types = []string{}
		}
		sub := event.Subscription{ID: id, URL: r.rcv.srv.URL + "/" + r.id + "/" + s.behaviour + "/" + s.name, EventTypes: types,
			CreatedAt: event.FormatTime(r.clock.now().Add(-time.Minute))}
		sealed, err := r.box.Seal(ctx, r.tenant, id, webhook.NewSecret())
		require.NoError(r.t, err)
		sub.Secrets = []string{sealed}
		require.NoError(r.t, r.st.CreateSubscription(ctx, r.tenant, sub))
		if s.slowFor > 0 {
			require.NoError(r.t, r.st.MarkSlow(ctx, r.tenant, id, sub.URL, r.clock.now().Add(s.slowFor)))
			r.slowHeld.mark(s.name, r.clock.now().Add(s.slowFor))
		}
		if s.failingFor > 0 {
			_, err := r.st.SubscriptionFailed(ctx, r.tenant, id, "", r.clock.now().Add(-s.failingFor), 100*time.Hour, "before")
			require.NoError(r.t, err)
		}
		r.subs[s.name] = sub
		r.names.set(id, s.name)
	}
	for _, e := range r.sc.events {
		if !e.late {
			r.post(e)
		}
	}
}

// lateCount counts the scenario's late events.
func lateCount(sc scenario) int {
	n := 0
	for _, e := range sc.events {
		if e.late {
			n++
		}
	}
	return n
}

// post posts event e through the API.
func (r *crashRun) post(e eventSpec) {
	code, out, ok := r.request("POST", "/v1/events", `{"event_type":"`+e.typ+`","payload":{"n":1}}`)
	require.True(r.t, ok)
	require.Equal(r.t, http.StatusCreated, code, "%s", out)
	var got struct {
		ID string `json:"event_id"`
	}
	require.NoError(r.t, json.Unmarshal(out, &got))
	r.eventIDs[e.name] = got.ID
	if r.sc.interchangeable {
		r.names.set(got.ID, "e*")
	} else {
		r.names.set(got.ID, e.name)
	}
}

// stream runs the stream consumer over the run's next n stream records,
// as the event source mapping does: a batch whose invocation failed or
// stopped is handled again, from the stream.
func (r *crashRun) stream(n int) {
	ctx := context.Background()
	consumer, err := streamconsumer.New(streamconsumer.Config{Sender: faultSender{q: r.q, in: r.in}, QueueURL: crashQueueURL,
		Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))})
	require.NoError(r.t, err)
	var recs []events.DynamoDBEventRecord
	done := r.router.await()
	defer done()
	for len(recs) < n {
		select {
		case rec := <-r.records:
			recs = append(recs, rec)
		case <-time.After(30 * time.Second):
			r.fatalf("the stream yielded %d of %d event records", len(recs), n)
		}
	}
	for try := 1; ; try++ {
		if try > 5 {
			r.fatalf("the stream batch never went through")
		}
		ictx, inv := newInvocation(ctx)
		resp, err := consumer.Handle(ictx, events.DynamoDBEvent{Records: recs})
		if err == nil && !inv.dead.Load() && len(resp.BatchItemFailures) == 0 {
			return
		}
	}
}

// drain hands the queues' messages to the dispatcher, one batch per
// invocation, until both are empty, advancing the clock to the next
// visible message whenever none is visible.
func (r *crashRun) drain() { r.drainUntil(time.Time{}) }

// drainUntil drains the messages that become visible before until (the
// zero time: all of them).
func (r *crashRun) drainUntil(until time.Time) {
	for step := 0; ; step++ {
		if step > 2000 {
			r.fatalf("the queues never drained")
		}
		if r.invoke() {
			continue
		}
		at, ok := r.q.next()
		if !ok || !until.IsZero() && at.After(until) {
			return
		}
		r.clock.advanceTo(at)
	}
}

// invoke hands one batch of visible messages to the dispatcher, as the
// event source mapping does, and deletes those it handled; it reports
// whether there was a batch.
func (r *crashRun) invoke() bool {
	batch := r.q.receive()
	if len(batch) == 0 {
		return false
	}
	var ev events.SQSEvent
	for _, m := range batch {
		attrs := map[string]events.SQSMessageAttribute{}
		if m.kind == dispatch.KindTask {
			attrs[dispatch.AttrKind] = events.SQSMessageAttribute{DataType: "String", StringValue: aws.String(dispatch.KindTask)}
		} else {
			attrs[dispatch.AttrTenant] = events.SQSMessageAttribute{DataType: "String", StringValue: aws.String(m.tenant)}
		}
		ev.Records = append(ev.Records, events.SQSMessage{MessageId: m.id, Body: m.body, MessageAttributes: attrs,
			Attributes: map[string]string{"ApproximateReceiveCount": strconv.Itoa(m.receives)}})
	}
	ctx, inv := newInvocation(context.Background())
	resp, err := r.d.HandleSQS(ctx, ev)
	require.NoError(r.t, err)
	if inv.dead.Load() {
		return true // no answer: every message comes back
	}
	failed := map[string]bool{}
	for _, f := range resp.BatchItemFailures {
		failed[f.ItemIdentifier] = true
	}
	for _, m := range batch {
		if !failed[m.id] {
			r.q.delete(m)
		}
	}
	return true
}

// redeliverFailed asks for a redelivery of every failed event, as a
// client would: once more when it got no answer or a 5xx.
func (r *crashRun) redeliverFailed() {
	for _, e := range r.sc.events {
		id := r.eventIDs[e.name]
		cur, err := r.st.Get(context.Background(), r.tenant, id)
		require.NoError(r.t, err)
		if cur.Status != event.Failed {
			// A fault that made a request again moved the receiver's
			// script along: delivered within the schedule.
			continue
		}
		for try := 0; try < 2; try++ {
			code, out, ok := r.request("POST", "/v1/events/"+id+"/redeliver", "")
			if ok && code < 500 {
				if code != http.StatusAccepted && code != http.StatusConflict {
					r.fatalf("redeliver %s = %d %s", e.name, code, out)
				}
				break
			}
		}
	}
}

// recoverSubs asks for a recovery of each subscription since the
// scenario began, as a client would: once more when it got no answer or a
// 5xx.
func (r *crashRun) recoverSubs(since time.Time) {
	for _, s := range r.sc.subs {
		for try := 0; try < 2; try++ {
			code, out, ok := r.request("POST", "/v1/subscriptions/"+r.subs[s.name].ID+"/recover", `{"since":"`+event.FormatTime(since)+`"}`)
			if ok && code < 500 {
				if code != http.StatusAccepted {
					r.fatalf("recover %s = %d %s", s.name, code, out)
				}
				break
			}
		}
	}
}

func (r *crashRun) run() runResult {
	began := r.clock.now()
	r.setUp()
	var late []eventSpec
	for _, e := range r.sc.events {
		if e.late {
			late = append(late, e)
		}
	}
	r.stream(len(r.sc.events) - len(late))
	r.clock.advanceTo(r.clock.now().Add(time.Millisecond))
	if len(late) > 0 {
		// The first round runs; the late events come while the wakes
		// it queued wait (their message ahead of the wakes').
		r.invoke()
		for _, e := range late {
			r.post(e)
		}
		r.stream(len(late))
	}
	changes := false
	for _, s := range r.sc.subs {
		changes = changes || s.deleteAfter > 0 || s.retype
	}
	if changes {
		// The tenant deletes or retypes subscriptions after the first
		// round: drain until the first retry is due, change, go on.
		r.drainUntil(r.clock.now().Add(time.Second))
		for _, s := range r.sc.subs {
			if s.deleteAfter > 0 {
				require.NoError(r.t, r.st.DeleteSubscription(context.Background(), r.tenant, r.subs[s.name].ID))
			}
			if s.retype {
				types := []string{"user.created"}
				_, err := r.st.UpdateSubscription(context.Background(), r.tenant, r.subs[s.name].ID, event.SubscriptionPatch{EventTypes: &types}, r.clock.now())
				require.NoError(r.t, err)
			}
		}
	}
	r.drain()
	if r.sc.redeliver {
		r.redeliverFailed()
		r.drain()
	}
	if r.sc.recover {
		r.recoverSubs(began)
		r.drain()
	}
	if err, _ := r.landErr.Load().(error); err != nil {
		r.fatalf("landing a copy soon: %v", err)
	}
	if s, _ := r.landedSoon.Load().(string); s != "" {
		r.t.Logf("copy landed soon: %s", s)
	}
	if r.f.late {
		// The held write lands after everything else (or, soon, whatever
		// is left of it), and whatever it sets off settles.
		r.t.Logf("late copies landed: %v", r.in.late.land(r.t))
		r.drain()
	}
	r.check()
	r.in.mu.Lock()
	defer r.in.mu.Unlock()
	return runResult{trace: append([]string(nil), r.in.trace...), counts: maps.Clone(r.in.counts), writes: maps.Clone(r.in.writes), slowHeld: r.slowHeld.most(), slowByWake: r.slowHeld.mostByWake()}
}

// check asserts the invariants of a settled run.
func (r *crashRun) check() {
	ctx := context.Background()
	t := r.t
	if len(r.q.dlq) > 0 {
		r.fatalf("%d messages went to the dead-letter queue, first %s", len(r.q.dlq), r.q.dlq[0].body)
	}
	// The slow lane's cap holds whatever failed or stopped: a slot a
	// stopped instance held is taken again only once its hold ended, and
	// a request never outlives its slot's hold.
	if held := r.slowHeld.most(); r.sc.tenantSlow > 0 && held > r.sc.tenantSlow {
		r.fatalf("%d requests to subscriptions marked slow were in flight at once: the tenant's slow lane has %d slots", held, r.sc.tenantSlow)
	}
	subByID := map[string]subSpec{}
	for _, s := range r.sc.subs {
		subByID[r.subs[s.name].ID] = s
	}
	sends := map[string]int{} // event/sub -> requests the attempts made
	// Each event's attempts, read once: the system has settled, nothing
	// changes them any more (the checks below read them again from here).
	attemptsOf := map[string][]event.Attempt{}
	for _, es := range r.sc.events {
		id := r.eventIDs[es.name]
		e, err := r.st.Get(ctx, r.tenant, id)
		require.NoError(t, err)
		attempts, err := r.st.ListAttempts(ctx, r.tenant, id)
		require.NoError(t, err)
		attemptsOf[id] = attempts
		bySub := map[string][]event.Attempt{}
		for _, a := range attempts {
			bySub[a.SubscriptionID] = append(bySub[a.SubscriptionID], a)
			sends[id+"/"+a.SubscriptionID] += a.Sends
		}
		for subID, as := range bySub {
			spec := subByID[subID]
			for i, a := range as {
				where := fmt.Sprintf("%s to %s attempt %d", es.name, spec.name, a.Number)
				if a.Number != i+1 {
					r.fatalf("%s: attempts are numbered %v, want 1..%d without gaps", where, numbers(as), len(as))
				}
				if !a.Final() {
					r.fatalf("%s is still pending after the system settled", where)
				}
				if a.Sends < 1 {
					r.fatalf("%s: sends %d", where, a.Sends)
				}
				last := i == len(as)-1
				switch {
				case a.NextAttemptAt != "" && last && spec.exists && !spec.disabled:
					r.fatalf("%s: a retry was lost: failed with next_attempt_at %s and no attempt %d while the subscription lives", where, a.NextAttemptAt, a.Number+1)
				case a.NextAttemptAt != "" && !last && a.Outcome != event.OutcomeFailed:
					r.fatalf("%s: outcome %s with a next attempt", where, a.Outcome)
				case !last && a.Outcome == event.OutcomeGone && as[i+1].Round == "" && (a.URL == "" || a.URL == as[i+1].URL):
					// The one attempt after a 410 Gone without a round: to
					// the URL the subscription moved to meanwhile.
					r.fatalf("%s: an attempt after a gone one, to the same URL %q, not by a redelivery", where, a.URL)
				case !last && a.Outcome != event.OutcomeFailed && a.Outcome != event.OutcomeGone && as[i+1].Round == "":
					r.fatalf("%s: an attempt after a %s one, not by a redelivery", where, a.Outcome)
				}
			}
			latest := as[len(as)-1]
			if latest.Outcome != spec.want {
				r.fatalf("%s to %s: latest attempt %d is %s (%s), want %s", es.name, spec.name, latest.Number, latest.Outcome, latest.Error, spec.want)
			}
		}
		for _, s := range r.sc.subs {
			// A subscription the tenant deleted may be gone before its
			// first attempt (when a fault delayed the round), and one
			// disabled meanwhile is no longer delivered to (a fault put
			// off the round of an event of "disabled while parked" past
			// the probe that disabled it).
			// A retyped one no longer takes first attempts: a fault that
			// put off the first round past the change leaves the event
			// unattempted to it.
			if (s.types == nil || contains(s.types, es.typ)) && s.deleteAfter == 0 && !s.retype && !(s.disabled && r.sc.parkedWhenDisabled) && len(bySub[r.subs[s.name].ID]) == 0 {
				r.fatalf("%s was never attempted to %s", es.name, s.name)
			}
		}
		if len(attempts) == 0 {
			// Never attempted (its only subscription was deleted before a
			// fault let the round run): the inbox's, received.
			if e.Status != event.Received {
				r.fatalf("%s: no attempt, status %s", es.name, e.Status)
			}
			continue
		}
		want, ok := dispatch.Expected(dispatch.Latest(attempts))
		if !ok {
			r.fatalf("%s: no status follows from its attempts %v", es.name, attempts)
		}
		if e.Status != want || e.Status != es.want {
			r.fatalf("%s is %s; its latest attempts call for %s, the scenario for %s", es.name, e.Status, want, es.want)
		}
		// retry_count counts the moves failed -> retrying: exact without a
		// fault; with one, a delayed round may leave out a move, never add
		// one (at most one per retry or redelivery attempt).
		retries := 0
		for _, a := range attempts {
			if a.Number > 1 {
				retries++
			}
		}
		if r.f.label == "" && es.retryCount >= 0 && e.RetryCount != es.retryCount || e.RetryCount > retries {
			r.fatalf("%s: retry_count %d, want %d (%d retries made)", es.name, e.RetryCount, es.retryCount, retries)
		}
	}
	// Nothing is left parked unmade: an item may outlive its attempt (the
	// attempt was made directly after a fault, before any wake unparked
	// it), never name an attempt that is not finished.
	for _, s := range r.sc.subs {
		parked, err := r.st.ListParked(ctx, r.tenant, r.subs[s.name].ID, 100)
		require.NoError(t, err)
		for _, p := range parked {
			as, ok := attemptsOf[p.EventID]
			if !ok {
				r.fatalf("an item parked for %s names event %s, not one of the scenario's", s.name, p.EventID)
			}
			a, ok := findAttempt(as, r.subs[s.name].ID, p.Number)
			if !ok && s.disabled && r.f.late && strings.HasPrefix(r.f.label, "Store.ParkAttempt ") &&
				strings.Contains(r.f.label, " "+s.name+" #"+strconv.Itoa(p.Number)+" ") {
				// The one late copy left as it is (docs/delivery.md,
				// Webhooks, Attempts), and only the attempt held (its
				// subscription and number; the event may be named by its
				// kind, e*): a parking that lands after the wake closed the
				// disabled subscription's parked attempts unmade parks the
				// attempt again; the subscription's next wake (after it is
				// enabled) makes it. Refusing it would take a tombstone
				// per unparked attempt, read by every wake.
				continue
			}
			if !ok || !a.Final() {
				r.fatalf("attempt %d to %s is left parked and not made (%+v)", p.Number, s.name, a)
			}
		}
	}
	// Subscriptions end as their behaviour calls for, and their health
	// agrees with their latest attempts.
	all, err := r.st.ListSubscriptions(ctx, r.tenant)
	require.NoError(t, err)
	live := map[string]event.Subscription{}
	for _, s := range all {
		live[s.ID] = s
	}
	for _, s := range r.sc.subs {
		got, ok := live[r.subs[s.name].ID]
		if ok != s.exists {
			r.fatalf("subscription %s exists=%v, want %v", s.name, ok, s.exists)
		}
		if ok && got.Disabled != s.disabled {
			r.fatalf("subscription %s disabled=%v, want %v", s.name, got.Disabled, s.disabled)
		}
		if ok && !s.disabled && s.want == event.OutcomeDelivered && got.FailingSince != "" {
			r.fatalf("subscription %s is delivered to but still failing since %s", s.name, got.FailingSince)
		}
		if ok && s.want == event.OutcomeDelivered && (got.ConsecutiveFailures != 0 || !got.CircuitOpenUntil.IsZero()) {
			r.fatalf("subscription %s is delivered to but its breaker counts %d failures, open until %v", s.name, got.ConsecutiveFailures, got.CircuitOpenUntil)
		}
	}
	// In a clean run of a slow-lane scenario a late event's attempts
	// queue behind the attempts parked before them: each subscription's
	// wake makes them, under the slots it took, none takes a slot of its
	// own. (Not with doubled messages: their first round has no
	// firstGate.)
	if r.f.label == "" && !r.twice && r.sc.slowLaneAfter > 0 {
		for _, e := range r.sc.events {
			for _, s := range r.sc.subs {
				if e.late && !r.slowHeld.sentOnlyByWake(r.eventIDs[e.name], s.name) {
					r.fatalf("the late %s went to %s outside its wake, ahead of the attempts parked before it", e.name, s.name)
				}
			}
		}
	}
	// Every request a receiver saw is recorded: never more requests than
	// the recorded attempts' sends; each carries its event's id as its
	// webhook-id; a request is made again only after a fault.
	seen := map[string]int{}
	for _, q := range r.rcv.requests(r.id) {
		if q.webhookID != q.bodyEventID {
			r.fatalf("a request to %s carried webhook-id %s for event %s", q.sub, q.webhookID, q.bodyEventID)
		}
		seen[q.webhookID+"/"+r.subs[q.sub].ID]++
	}
	for key, n := range seen {
		if n > sends[key] {
			evID, subID, _ := strings.Cut(key, "/")
			r.fatalf("%s to %s: receivers saw %d requests, its attempts count %d sends: a request went out unrecorded",
				r.names.all([]string{evID})[0], r.names.all([]string{subID})[0], n, sends[key])
		}
	}
	// Every finished attempt of a live subscription made a request: an
	// attempt put off (scheduled) is never a failure. A disabled
	// subscription's scheduled attempts are closed unmade (dispatch's
	// abandon, with its error), as a deleted one's are.
	for _, s := range r.sc.subs {
		if !s.exists {
			continue
		}
		for _, es := range r.sc.events {
			id := r.eventIDs[es.name]
			as := attemptsOf[id]
			finished := 0
			for _, a := range as {
				if a.SubscriptionID == r.subs[s.name].ID && a.Final() &&
					!(s.disabled && strings.HasPrefix(a.Error, "not completed: the subscription was deleted or disabled")) {
					finished++
				}
			}
			if key := id + "/" + r.subs[s.name].ID; finished > seen[key] {
				r.fatalf("%s to %s: %d finished attempts, %d requests seen", es.name, s.name, finished, seen[key])
			}
		}
	}
	for key, n := range sends {
		evID, subID, _ := strings.Cut(key, "/")
		as := attemptsOf[evID]
		made := 0
		for _, a := range as {
			if a.SubscriptionID == subID {
				made++
			}
		}
		if extra := n - made; extra > 1 || r.f.label == "" && extra > 0 {
			r.fatalf("%s: %d requests made again (a fault allows one per subscription and event, none without a fault)", key, extra)
		}
	}
}

func numbers(as []event.Attempt) []int {
	out := make([]int, len(as))
	for i, a := range as {
		out[i] = a.Number
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// readOnly are the calls that change nothing.
var readOnly = map[string]bool{
	"Store.Get": true, "Store.ListAttempts": true, "Store.ListSubscriptions": true, "Store.GetSubscription": true, "Store.ListParked": true,
	"Store.SubscriptionEvents": true, "Store.SettleAttempts": true, "Store.LaneWaiters": true, "Secrets.Open": true,
}

// methodsOf returns the method names of interface type T, prefixed.
func methodsOf[T any](prefix string) []string {
	typ := reflect.TypeOf((*T)(nil)).Elem()
	out := make([]string, typ.NumMethod())
	for i := range out {
		out[i] = prefix + typ.Method(i).Name
	}
	return out
}

// TestCrashPoints runs every scenario clean, then once per call of its
// clean trace with that call failing once, and twice with the process
// stopping right after it (with single and with doubled queue messages),
// and per storage call that writes: with its answers lost, and with a
// late copy of its first write landing after the run settled or soon
// (and of each later write it made, landing after the run settled).
//
// Every scenario runs clean on an unsharded table and on a sharded one
// (crashShards). The crash cases split between the two: a stop right
// after a storage, queue or secrets call, a lost answer and a copy landing
// soon run for a sharded tenant; a failure, a stop with doubled messages,
// a copy landing after the run settled and a stop after a webhook request
// run unsharded. So every call of the path has crash cases in
// both layouts, at the cost of one layout.
func TestCrashPoints(t *testing.T) {
	// On an engine of its own, started fresh, after the package's other
	// tests (t.Parallel: they are sequential). Sharing one, whichever ran
	// second ran several times slower: the package took 994 s alone, the
	// harness 210 s of it and the other tests, 60 s on a fresh engine,
	// the rest; the harness after them, 557 s.
	t.Parallel()
	crashDB = db.WithStreams()
	if os.Getenv(ddbtest.EnvEndpoint) == "" {
		ctx, cancel := context.WithTimeout(context.Background(), ddblocal.StartTimeout+5*time.Minute)
		fresh, err := ddbtest.StartWith(ctx, ddbtest.Options{Busy: true})
		cancel()
		require.NoError(t, err)
		crashDB = fresh
		t.Cleanup(func() {
			if err := fresh.Stop(); err != nil {
				t.Logf("stop the harness's engine: %v", err)
			}
		})
	}
	env := newCrashEnv(t)
	covered := map[bool]map[string]bool{false: {}, true: {}} // by sharded
	shardsUsed := map[int]bool{}
	everyCalled := map[string]int{} // by scenario: the most calls of one everyCall label
	multiWrite := 0                 // late cases of a call's later writes
	var unwritten []string          // writing calls that wrote nothing in their clean run
	type job struct {
		sc             scenario
		f              fault
		twice, sharded bool
	}
	var jobs []job
	for _, sc := range crashScenarios() {
		// The clean runs (on t itself, so that -run can pick crash cases).
		clean := newCrashRun(t, env, sc, fault{}, false, false).run()
		require.NotEmpty(t, clean.trace, "%s: the clean run made no call", sc.name)
		t.Logf("%s: %d distinct calls", sc.name, len(clean.trace))
		// CRASH_TRACE names a scenario whose clean trace to log, each
		// label with its count of calls (docs/testing.md).
		if os.Getenv("CRASH_TRACE") == sc.name {
			for _, l := range clean.trace {
				t.Logf("%3d %s", clean.counts[l], l)
			}
		}
		if sc.parkedWhenDisabled {
			require.True(t, slices.ContainsFunc(clean.trace, func(l string) bool {
				return strings.HasPrefix(l, "Store.UnparkAttempt ") && strings.Contains(l, " disabled @")
			}), "%s: no wake unparked an attempt of the disabled subscription: the scenario no longer parks before it disables\n%s",
				sc.name, strings.Join(clean.trace, "\n"))
		}
		if sc.turnHandedOver {
			require.True(t, slices.ContainsFunc(clean.trace, func(l string) bool {
				return strings.HasPrefix(l, "Queue.Send ") && strings.HasSuffix(l, "@dispatch.(*Dispatcher).queueWake<-handOver")
			}), "%s: no wake handed a waiting subscription its turn in the slow lane\n%s", sc.name, strings.Join(clean.trace, "\n"))
		}
		for _, call := range sc.premise {
			require.True(t, slices.ContainsFunc(clean.trace, func(l string) bool { return strings.HasPrefix(l, call) }),
				"%s: the clean run made no %q call: the scenario no longer does what it is for\n%s", sc.name, strings.TrimSpace(call), strings.Join(clean.trace, "\n"))
		}
		if sc.slowLaneFull {
			// Without a circuit or a rate cap, a scheduled attempt is one
			// the slow lane put off.
			require.True(t, slices.ContainsFunc(clean.trace, func(l string) bool {
				return strings.HasPrefix(l, "Store.ScheduleAttempt ")
			}), "%s: no attempt was put off: the slow lane was never full\n%s", sc.name, strings.Join(clean.trace, "\n"))
			// The cap the runs are held to (check) is reached: attempts
			// compete for the lane, so its check could fail.
			require.Equal(t, sc.tenantSlow, clean.slowHeld, "%s: the most requests to slow endpoints in flight at once in the clean run", sc.name)
		}
		if sc.copyEarlierWake {
			require.True(t, slices.ContainsFunc(clean.trace, func(l string) bool {
				return strings.HasPrefix(l, "Store.ConfirmWake ") && strings.HasSuffix(l, "@dispatch.(*Dispatcher).queueWake<-sendStandby")
			}), "%s: no copy of the wake found an attempt in progress and queued a standby wake\n%s", sc.name, strings.Join(clean.trace, "\n"))
		}
		if sc.earlierWake {
			require.True(t, slices.ContainsFunc(clean.trace, func(l string) bool {
				return strings.HasPrefix(l, "Store.ConfirmWake ") && strings.HasSuffix(l, "@dispatch.(*Dispatcher).queueWake<-sendEarlier")
			}), "%s: no delivery that closed the circuit queued a wake in place of the circuit's\n%s", sc.name, strings.Join(clean.trace, "\n"))
		}
		if sc.wakeTakesTwo {
			require.GreaterOrEqual(t, clean.slowByWake, 2, "%s: no wake took two of the lane's slots and made both attempts at once\n%s", sc.name, strings.Join(clean.trace, "\n"))
		}
		// The same scenario for a sharded tenant settles as the unsharded
		// one (run checks the invariants). Its trace is not compared: a
		// scenario's trace varies a little from run to run (which of
		// interchangeable events makes a call first, whether a retry
		// meets the open circuit).
		shardedRun := newCrashRun(t, env, sc, fault{}, false, true)
		shardedRun.run()
		for _, id := range shardedRun.eventIDs {
			shardsUsed[shard.Of(id)] = true
		}
		for _, key := range clean.trace {
			op := strings.Fields(key)[0]
			if slices.ContainsFunc(sc.everyCall, func(p string) bool { return strings.HasPrefix(key, p) }) {
				everyCalled[sc.name] = max(everyCalled[sc.name], clean.counts[key])
			}
			if !crashCases {
				covered[false][op], covered[true][op] = true, true
				continue
			}
			// A failure once (a failed request is a failed attempt, which
			// the behaviours cover); a stop right after the call; and for
			// the calls that change something, a stop with every message
			// doubled (after a read, a stop changes nothing a failure
			// does not).
			isHTTP := strings.HasPrefix(op, "HTTP.")
			add := func(f fault, twice, sharded bool) {
				jobs = append(jobs, job{sc, f, twice, sharded})
				covered[sharded][op] = true
			}
			calls := 1
			if slices.ContainsFunc(sc.everyCall, func(p string) bool { return strings.HasPrefix(key, p) }) {
				calls = min(clean.counts[key], everyCallMost)
			}
			for nth := 1; nth <= calls; nth++ {
				if !isHTTP {
					add(fault{label: key, nth: nth}, false, false)
				}
				add(fault{label: key, crash: true, nth: nth}, false, !isHTTP)
				if !readOnly[op] {
					add(fault{label: key, crash: true, nth: nth}, true, false)
				}
				// Only for a call whose clean run wrote: one that wrote
				// nothing (a read the readOnly list missed, a call that
				// returned before writing) has no answer to lose and no
				// write to hold. (Such late cases ran, held nothing and
				// passed, until the runs counted that as a case that
				// never met its call.)
				if strings.HasPrefix(op, "Store.") && !readOnly[op] && clean.writes[writeKey(key, nth)] == 0 {
					unwritten = append(unwritten, sc.name+": "+writeKey(key, nth))
				}
				if strings.HasPrefix(op, "Store.") && !readOnly[op] && clean.writes[writeKey(key, nth)] > 0 {
					add(fault{label: key, lost: true, nth: nth}, false, true)
					add(fault{label: key, late: true, nth: nth}, false, false)
					add(fault{label: key, late: true, soon: true, nth: nth}, false, true)
					// A call that wrote more than once (a condition's
					// refusal read back and written again, a transaction
					// retried): a late copy of each later write too.
					for w := 2; w <= min(clean.writes[writeKey(key, nth)], maxLateWrite); w++ {
						add(fault{label: key, late: true, nth: nth, write: w}, false, false)
						multiWrite++
					}
				}
			}
		}
		if len(sc.everyCall) > 0 {
			// Its loop made a second call under one of the labels, so
			// faults between the calls are among the cases.
			require.GreaterOrEqual(t, everyCalled[sc.name], 2, "%s: no label of %q was called twice in the clean run\n%s",
				sc.name, sc.everyCall, strings.Join(clean.trace, "\n"))
		}
		jobs = append(jobs, job{sc, fault{}, true, false})
	}

	// Every call the path can make has crash cases, unsharded and sharded
	// (a webhook request's only on the unsharded table: it touches no
	// storage).
	var methods []string
	methods = append(methods, methodsOf[dispatch.Store]("Store.")...)
	methods = append(methods, methodsOf[dispatch.Queue]("Queue.")...)
	methods = append(methods, methodsOf[dispatch.Secrets]("Secrets.")...)
	methods = append(methods, methodsOf[streamconsumer.Sender]("Sender.")...)
	for _, m := range methods {
		assert.True(t, covered[false][m], "no scenario calls %s: it has no crash case; extend crashScenarios", m)
		assert.True(t, covered[true][m], "%s has no crash case for a sharded tenant", m)
	}
	assert.True(t, covered[false]["HTTP.POST"], "no scenario makes a webhook request")
	// The sharded clean runs wrote to shards other than the tenant's own
	// partition (shard 0), where reads and updates by id differ.
	delete(shardsUsed, 0)
	assert.NotEmpty(t, shardsUsed, "every event of the sharded clean runs landed on shard 0")
	t.Logf("%d crash cases over %d calls (%d of them late copies of a call's second or third write)", len(jobs), len(covered[false]), multiWrite)
	t.Logf("calls that wrote nothing in their clean run (no lost-answer or late cases): %q", unwritten)

	// The runs are independent (own table, tenant data, queues, clock):
	// several at once keep the wall time down on DynamoDB Local.
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	var mu sync.Mutex
	missed := map[bool][]string{} // by sharded: cases whose call never came
	cases := map[bool]int{}
	for _, j := range jobs {
		sem <- struct{}{}
		if j.f.label != "" {
			cases[j.sharded]++
		}
		wg.Go(func() {
			defer func() { <-sem }()
			t.Run(fmt.Sprintf("%s/%s/twice=%v/sharded=%v", j.sc.name, j.f, j.twice, j.sharded), func(t *testing.T) {
				r := newCrashRun(t, env, j.sc, j.f, j.twice, j.sharded)
				r.run()
				r.in.mu.Lock()
				defer r.in.mu.Unlock()
				if j.f.label != "" && !r.in.fired || j.f.late && !r.in.late.wasHeld() {
					mu.Lock()
					missed[j.sharded] = append(missed[j.sharded], j.sc.name+": "+j.f.String())
					mu.Unlock()
				}
			})
		})
	}
	wg.Wait()
	// A case whose call never came ran clean (so did a late case whose
	// call made fewer writes than in the clean run). A scenario's trace varies a
	// little from run to run (which of interchangeable events calls
	// first, whether a retry meets the open circuit), so a few may; many
	// would mean the labels no longer match the calls (in one layout).
	for _, sharded := range []bool{false, true} {
		t.Logf("sharded=%v: %d of %d cases never met their call: %q", sharded, len(missed[sharded]), cases[sharded], missed[sharded])
		assert.LessOrEqual(t, len(missed[sharded]), cases[sharded]/50, "sharded=%v: more than 2%% of the cases never met their call", sharded)
	}
}

// findAttempt returns attempt n to subID among as.
func findAttempt(as []event.Attempt, subID string, n int) (event.Attempt, bool) {
	for _, a := range as {
		if a.SubscriptionID == subID && a.Number == n {
			return a, true
		}
	}
	return event.Attempt{}, false
}
