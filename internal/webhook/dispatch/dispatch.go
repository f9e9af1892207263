// Package dispatch is webhook push delivery: it POSTs each new event to
// every matching subscription of its tenant (Standard Webhooks signatures,
// package webhook), records every attempt, retries failures on a schedule
// without blocking the queue behind them, and moves the event along seed
// 000's status machine.
//
// Work arrives on two SQS queues. The delivery queue carries new events
// (the stream consumer's messages): one delivery round each, attempt 1 to
// every matching subscription. The retry queue carries Tasks: the next
// attempt to one subscription after a failure, a whole new round after
// POST /v1/events/{id}/redeliver, a subscription's wake, or a page of a
// recovery after POST /v1/subscriptions/{id}/recover. SQS delays a message at most 15 minutes,
// so a Task due later is sent again with the remaining delay until it is
// due: a retry waits on the retry queue, never in front of other work.
//
// # Faults
//
// Every step is at least once: SQS redelivers a message whose handling
// failed or whose function died, possibly while another copy runs. The
// dispatcher keeps its promises whatever step fails:
//
//   - An attempt is claimed in the store before its request is sent
//     (outcome pending, a lease until the invocation's deadline), and only
//     its claimant records the outcome. A message handled twice finds the
//     attempt claimed or finished and does not send it again; a claim
//     whose claimant died is taken over after its lease. Receivers see a
//     request again only when a function died between sending and
//     recording, always with the same webhook-id (the event id).
//   - A finished attempt's consequences (the subscription's health, its
//     removal on 410, the next attempt's task) are re-derived from the
//     record whenever its message comes back, each idempotently: a failed
//     attempt with a next_attempt_at always leads to the next attempt or
//     to a terminal state (schedule exhausted, subscription disabled or
//     deleted). The follow-up task is marked queued on the attempt once
//     sent, so copies do not multiply.
//   - The event's status follows its subscriptions' latest attempts:
//     delivered only when every subscription it was attempted to has a
//     delivered latest attempt, failed otherwise (a deleted or disabled
//     subscription's failed latest attempt keeps it failed). The change
//     is a transaction conditional on no newer attempt, so a decision on
//     stale attempts never lands.
//
// # Isolation
//
// One tenant's broken endpoints cost that tenant: every message of a
// batch starts at once, a message's attempts run in parallel (at most
// Config.Parallel), no attempt starts too close to the invocation's
// deadline, and each endpoint has a circuit breaker shared by every
// instance through its subscription item. Failures in a row, or a request
// unanswered after Config.SlowAfter, open it; while it is open the
// endpoint's attempts are parked behind it (an item each in the
// subscription's parked partition, not a queue message each) instead of
// waiting on it, and one wake task per circuit makes them when it lets
// requests through: one probe at a time, then the rest. An optional
// per-endpoint rate cap defers attempts by a task each, for under a
// second. An endpoint that answers slowly (Config.SlowLaneAfter) is
// marked slow for a while, and the requests to a tenant's slow endpoints
// share a few slots (Config.TenantSlowConcurrency), counted across every
// instance: the attempts that find them taken are put off, with a growing
// wait, instead of holding more of the function's instances.
// The function's reserved concurrency and its event sources' maximum
// concurrency (the construct's) bound the account's share.
package dispatch

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	mrand "math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/triggers-dev/triggers/contract"
	"github.com/triggers-dev/triggers/internal/event"
	"github.com/triggers-dev/triggers/internal/streamconsumer"
	"github.com/triggers-dev/triggers/internal/webhook"
)

// Store is what the dispatcher needs from the events table;
// *store.Store implements it.
type Store interface {
	Get(ctx context.Context, tenant, id string) (event.Event, error)
	// StartRetry is a retry's failed -> retrying: TransitionOnce's move,
	// also conditional on the retry_count read, so that a late copy is
	// refused after later retries overwrote the token (found by the crash
	// harness's late copies).
	StartRetry(ctx context.Context, tenant string, e event.Event) (event.Event, error)
	Settle(ctx context.Context, tenant, id string, from, to event.Status, latest []event.Attempt) error
	StartRedelivery(ctx context.Context, tenant string, e event.Event, token string, at time.Time) error
	ListSubscriptions(ctx context.Context, tenant string) ([]event.Subscription, error)
	GetSubscription(ctx context.Context, tenant, id string) (event.Subscription, error)
	DeleteGoneSubscription(ctx context.Context, tenant, id, url string) error
	SubscriptionSucceeded(ctx context.Context, tenant, id, url string, at time.Time) (closed bool, err error)
	SubscriptionFailed(ctx context.Context, tenant, id, url string, at time.Time, disableAfter time.Duration, reason string) (event.FailureRun, error)
	OpenCircuit(ctx context.Context, tenant, id, url string, at, until time.Time, cooldown time.Duration) (bool, error)
	AcquireProbe(ctx context.Context, tenant, id string, now, until time.Time) (bool, error)
	TakeRateToken(ctx context.Context, tenant, id string, now time.Time, limit int) (ahead int, err error)
	MarkSlow(ctx context.Context, tenant, id, url string, until time.Time) error
	AcquireSlowSlot(ctx context.Context, tenant, token string, now, until time.Time, limit int) (bool, error)
	ReleaseSlowSlot(ctx context.Context, tenant, token string) error
	ScheduleAttempt(ctx context.Context, tenant, eventID string, a event.Attempt, ttl int64) (event.Attempt, bool, error)
	ClaimAttempt(ctx context.Context, tenant, eventID string, c event.AttemptClaim, ttl int64) (event.Attempt, bool, error)
	FinishAttempt(ctx context.Context, tenant, eventID string, a event.Attempt, owner string) error
	MarkFollowUp(ctx context.Context, tenant, eventID, subscriptionID string, number int, state string) error
	MarkScheduledFollowUp(ctx context.Context, tenant, eventID, subscriptionID string, number, deferrals int) error
	ListAttempts(ctx context.Context, tenant, eventID string) ([]event.Attempt, error)
	SettleAttempts(ctx context.Context, tenant, eventID string) (attempts []event.Attempt, roundRunning bool, err error)
	HoldFirstRound(ctx context.Context, tenant, eventID string, at time.Time, ttl int64) error
	FinishRound(ctx context.Context, tenant, eventID, token string) error
	ParkAttempt(ctx context.Context, tenant, subscriptionID string, p event.Parked, ttl int64) error
	ListParked(ctx context.Context, tenant, subscriptionID string, limit int) ([]event.Parked, error)
	UnparkAttempt(ctx context.Context, tenant, subscriptionID string, p event.Parked) (bool, error)
	ClaimWake(ctx context.Context, tenant, subscriptionID, owner, prev string, standby bool, until, now time.Time) (bool, error)
	ClaimEarlierWake(ctx context.Context, tenant, subscriptionID, owner string, until, after time.Time) (bool, error)
	ConfirmWake(ctx context.Context, tenant, subscriptionID, owner string) (bool, error)
	TakeWake(ctx context.Context, tenant, subscriptionID, owner string, now time.Time) (bool, error)
	AddLaneWaiter(ctx context.Context, tenant string, w event.LaneWaiter, until time.Time) error
	LaneWaiters(ctx context.Context, tenant string, now time.Time, limit int) ([]event.LaneWaiter, error)
	RemoveLaneWaiter(ctx context.Context, tenant, subscriptionID, owner string) error
	SubscriptionEvents(ctx context.Context, tenant, subscriptionID, from, to string, limit int) (ids []string, next string, err error)
}

// Task is one job on the retry queue.
type Task struct {
	Tenant  string `json:"tenant"`
	EventID string `json:"event_id"`
	// SubscriptionID names the subscription to retry; empty means a new
	// round to every matching subscription (a redelivery).
	SubscriptionID string `json:"subscription_id,omitempty"`
	// Attempt is the attempt number to make (retries only).
	Attempt int `json:"attempt,omitempty"`
	// Round names a redelivery round (redeliveries only): a random token
	// the round's attempts and its marker in the store carry.
	Round string `json:"round,omitempty"`
	// RetryCount is the event's retry_count when the redelivery was asked
	// for (redeliveries only): the round starts only from that state.
	RetryCount int `json:"retry_count,omitempty"`
	// Numbers names, by subscription id, the attempt the round makes to
	// each subscription the event had been attempted to when the
	// redelivery was asked for (redeliveries only; RoundNumbers): its
	// latest attempt while that is not made yet (scheduled behind an open
	// circuit or a rate cap, or pending), the next number otherwise. So a
	// round resumes an attempt put off, instead of making another beside
	// it, and every copy of its task goes by the same numbers, whatever
	// was made since. A subscription left out (never attempted to when
	// the redelivery was asked for) gets the number its attempts call for
	// when the round runs (roundNumber), as does every subscription of a
	// task queued without Numbers.
	Numbers map[string]int `json:"numbers,omitempty"`
	// DueAt is when the task may run.
	DueAt time.Time `json:"due_at"`
	// TTL is the event's ttl (epoch seconds), so that a retry put off by
	// an open circuit parks without reading the event (retries only; 0
	// in tasks queued before parking: they hop instead).
	TTL int64 `json:"ttl,omitempty"`
	// Wake, set, makes the task subscription SubscriptionID's wake task
	// (EventID empty): it makes the attempts parked behind the
	// subscription's circuit once the circuit lets requests through.
	// Its value is the owner of the wake marker that queued it.
	Wake string `json:"wake,omitempty"`
	// Refused counts the wakes in a row before this one (of a wake task)
	// that found the subscription's slow lane full and made nothing: the
	// next waits longer (wakeInLane). A version without it reads 0.
	Refused int `json:"refused,omitempty"`
	// WaitingSince is when the first of those wakes found the lane full
	// (of a wake task with Refused set): the subscription waits on the
	// lane since then, also when a wake that freed slots handed it the
	// turn and the lane was full again before this wake ran (the lane
	// waiter record's Since, handOver). A version without it reads zero,
	// taken as the wake's start.
	WaitingSince time.Time `json:"waiting_since,omitzero"`
	// Recover, set, makes the task one page of a recovery of
	// subscription SubscriptionID (EventID empty).
	Recover *Recovery `json:"recover,omitempty"`
}

// Recovery is a page of a recovery: the events of one subscription
// still to look at, by id, in [From, To) (bounds from event.IDFloor, or
// a page's continuation). Each event whose latest attempt to the
// subscription failed with no retry to come gets one more attempt, under
// the next number, made in round ID: a copy of the page finds that
// attempt by its round and makes no other.
type Recovery struct {
	ID   string `json:"id"`
	From string `json:"from"`
	To   string `json:"to"`
}

// RecoverPageEntries is Config.RecoverPage's default: a recovery page
// reads that many entries of a subscription's attempt list (one Query),
// so at most that many events, each at most one attempt, made Parallel
// at a time.
const RecoverPageEntries = 25

// recoverOverdue is how long after its due time a retry that was never
// made counts as dropped (it came due while its subscription was
// disabled): longer than an open circuit keeps an attempt parked plus
// SQS's longest delay. Should it still come, it and the recovery make the
// same attempt number, claimed once.
const recoverOverdue = MaxBreakerCooldown + MaxQueueDelay

// Queue sends Tasks to the retry queue; SQSQueue is the deployed one.
type Queue interface {
	// Send queues t, invisible for delay (at most MaxQueueDelay).
	Send(ctx context.Context, t Task, delay time.Duration) error
}

// MaxQueueDelay is SQS's longest message delay.
const MaxQueueDelay = 15 * time.Minute

// Defaults of Config.
const (
	DefaultDisableAfter = contract.DefaultWebhookDisableAfter
	// DefaultLease is how long an attempt stays claimed when the context
	// has no deadline (Lambda's longest invocation).
	DefaultLease = 15 * time.Minute
	// DefaultParallel bounds the attempts of one message made at once: a
	// tenant's most subscriptions, so that no attempt of a round waits for
	// another's slot (and for a circuit its wait would have seen open).
	DefaultParallel = event.MaxSubscriptions
	// DefaultBreakerThreshold is how many failures in a row open an
	// endpoint's circuit.
	DefaultBreakerThreshold = 5
	// DefaultBreakerCooldown is how long a circuit first stays open; it
	// doubles with each failed probe, up to MaxBreakerCooldown.
	DefaultBreakerCooldown = 30 * time.Second
	// MaxBreakerCooldown bounds how long a circuit stays open at a time.
	MaxBreakerCooldown = time.Hour
	// DefaultSlowAfter opens an endpoint's circuit when one of its
	// requests is still unanswered after it: an endpoint that hangs costs
	// its requests in flight, not every request after them.
	DefaultSlowAfter = 5 * time.Second
	// DefaultSlowLaneAfter marks an endpoint slow when a request to it
	// was answered after at least this long.
	DefaultSlowLaneAfter = time.Second
	// DefaultTenantSlowConcurrency is how many requests to a tenant's
	// slow endpoints may be in flight at once, across every instance.
	DefaultTenantSlowConcurrency = 4
	// SlowLaneFor is how long a slow answer marks its endpoint slow: a
	// later slow answer extends the mark, an endpoint fast again leaves
	// the slow lane once it ends.
	SlowLaneFor = 10 * time.Minute
	// MaxSlowLaneWait bounds the wait of an attempt put off because its
	// tenant's slow lane was full; the first waits are about a second,
	// doubling with each put-off of the same attempt. The attempt is
	// parked meanwhile (its subscription's wake makes it), so the bound
	// is how long a parked backlog waits between wakes.
	MaxSlowLaneWait = 30 * time.Second
)

// slowLaneFirstWait is the wait of an attempt the first time its tenant's
// slow lane refuses it (jittered: between half of it and all of it).
const slowLaneFirstWait = time.Second

// leaseMargin is added to a claim's lease beyond the invocation's
// deadline, for clock differences between function instances.
const leaseMargin = 5 * time.Second

// storeMargin is the time a claim's store writes need beyond its request
// (claim, record, follow-ups): an attempt starts only with this much more
// than the request timeout left before the invocation's deadline.
const storeMargin = contract.WebhookStoreMargin

// Config configures a Dispatcher.
type Config struct {
	// Store is the events table. Required.
	Store Store
	// Queue is the retry queue. Required.
	Queue Queue
	// Client sends the webhooks. Its Timeout bounds one attempt.
	// Default: webhook.NewHTTPClient with its defaults (SSRF checks at
	// every connection, 10 s timeout).
	Client *http.Client
	// Schedule spaces the retries. Default: contract.DefaultRetrySchedule().
	Schedule contract.RetrySchedule
	// DisableAfter disables a subscription whose failures have lasted this
	// long without a success. Default: DefaultDisableAfter.
	DisableAfter time.Duration
	// Lease is how long a claimed attempt stays claimed when the context
	// has no deadline; with a deadline the claim lasts until it (plus a
	// few seconds). Default: DefaultLease.
	Lease time.Duration
	// Parallel bounds the attempts of one message (a round to several
	// subscriptions) made at once. Default: DefaultParallel.
	Parallel int
	// BreakerThreshold is how many failures in a row open an endpoint's
	// circuit. Default: DefaultBreakerThreshold.
	BreakerThreshold int
	// BreakerCooldown is how long a circuit first stays open; each failed
	// probe doubles it, up to MaxBreakerCooldown. Default:
	// DefaultBreakerCooldown.
	BreakerCooldown time.Duration
	// SlowAfter opens an endpoint's circuit (for BreakerCooldown) when one
	// of its requests is still unanswered after it; negative turns it
	// off. Default: DefaultSlowAfter.
	SlowAfter time.Duration
	// EndpointRate caps the requests per second to one subscription's
	// endpoint, counted across every instance; 0 means no cap. Default: 0.
	EndpointRate int
	// SlowLaneAfter marks an endpoint slow for SlowLaneFor when a request
	// to it was answered (whatever the answer) after at least this long;
	// every attempt to a slow endpoint first takes one of its tenant's
	// TenantSlowConcurrency slots, and is put off (scheduled, reason
	// contract.DeferredTenantBusy) when none is free. Negative turns the
	// slow lane off. Default: DefaultSlowLaneAfter.
	SlowLaneAfter time.Duration
	// TenantSlowConcurrency bounds the requests to one tenant's slow
	// endpoints in flight at once, across every instance. Default:
	// DefaultTenantSlowConcurrency.
	TenantSlowConcurrency int
	// Logger receives a line per attempt. Default: slog.Default().
	Logger *slog.Logger
	// Now is the clock. Default: time.Now.
	Now func() time.Time
	// Rand jitters the retry delays. Default: math/rand/v2.
	Rand contract.JitterSource
	// Metrics counts attempts by outcome, disabled subscriptions,
	// deferred attempts and opened circuits (*emf.Writer implements it).
	// Default: none.
	Metrics Metrics
	// Secrets opens the subscriptions' stored signing secrets (sealed
	// with KMS: *secretbox.Box). Default: plain "whsec_" secrets only.
	Secrets Secrets
	// RecoverPage bounds the entries of a subscription's attempt list one
	// recovery page reads. Default: RecoverPageEntries.
	RecoverPage int
}

// Secrets opens a subscription's stored signing secret; *secretbox.Box
// implements it. An error wrapping webhook.ErrInvalidSecret means the
// stored value will never open.
type Secrets interface {
	Open(ctx context.Context, tenant, subscriptionID, stored string) (webhook.Secret, error)
}

// plainSecrets opens secrets stored in plain text ("whsec_...").
type plainSecrets struct{}

func (plainSecrets) Open(_ context.Context, _, _, stored string) (webhook.Secret, error) {
	return webhook.ParseSecret(stored)
}

// Metrics records webhook delivery's outcomes.
type Metrics interface {
	WebhookAttempt(outcome string)
	SubscriptionDisabled()
	// WebhookDeferred counts an attempt put off without being made, with
	// its reason (contract.Deferred*).
	WebhookDeferred(tenant, subscriptionID, reason string)
	// CircuitOpened counts an endpoint's circuit opened; cause is
	// "failures" (Threshold in a row), "slow" (a request unanswered after
	// SlowAfter) or "probe" (a half-open circuit's probe failed).
	CircuitOpened(tenant, subscriptionID, cause string)
}

type nopMetrics struct{}

func (nopMetrics) WebhookAttempt(string)                  {}
func (nopMetrics) SubscriptionDisabled()                  {}
func (nopMetrics) WebhookDeferred(string, string, string) {}
func (nopMetrics) CircuitOpened(string, string, string)   {}

// Dispatcher delivers events to subscriptions.
type Dispatcher struct {
	cfg Config
	// circuits remembers the circuits this instance opened, so that an
	// attempt sees one opened after its subscription was read.
	circuits circuits
}

type defaultRand struct{}

func (defaultRand) Float64() float64 { return mrand.Float64() }

// New returns a Dispatcher.
func New(cfg Config) (*Dispatcher, error) {
	if cfg.Store == nil || cfg.Queue == nil {
		return nil, errors.New("dispatch: Config.Store and Config.Queue are required")
	}
	if cfg.Client == nil {
		cfg.Client = webhook.NewHTTPClient(webhook.ClientOptions{})
	}
	if cfg.Schedule == nil {
		cfg.Schedule = contract.DefaultRetrySchedule()
	}
	if err := cfg.Schedule.Validate(); err != nil {
		return nil, fmt.Errorf("dispatch: %w", err)
	}
	if cfg.DisableAfter <= 0 {
		cfg.DisableAfter = DefaultDisableAfter
	}
	if cfg.Lease <= 0 {
		cfg.Lease = DefaultLease
	}
	if cfg.Parallel <= 0 {
		cfg.Parallel = DefaultParallel
	}
	if cfg.BreakerThreshold <= 0 {
		cfg.BreakerThreshold = DefaultBreakerThreshold
	}
	if cfg.BreakerCooldown <= 0 {
		cfg.BreakerCooldown = DefaultBreakerCooldown
	}
	if cfg.SlowAfter == 0 {
		cfg.SlowAfter = DefaultSlowAfter
	}
	if cfg.SlowLaneAfter == 0 {
		cfg.SlowLaneAfter = DefaultSlowLaneAfter
	}
	if cfg.TenantSlowConcurrency < 0 {
		return nil, fmt.Errorf("dispatch: Config.TenantSlowConcurrency %d is negative: give the requests to a tenant's slow endpoints allowed at once, or 0 for the default %d", cfg.TenantSlowConcurrency, DefaultTenantSlowConcurrency)
	}
	if cfg.TenantSlowConcurrency == 0 {
		cfg.TenantSlowConcurrency = DefaultTenantSlowConcurrency
	}
	if cfg.EndpointRate < 0 {
		return nil, fmt.Errorf("dispatch: Config.EndpointRate %d is negative: give requests per second, or 0 for no cap", cfg.EndpointRate)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Rand == nil {
		cfg.Rand = defaultRand{}
	}
	if cfg.Metrics == nil {
		cfg.Metrics = nopMetrics{}
	}
	if cfg.Secrets == nil {
		cfg.Secrets = plainSecrets{}
	}
	if cfg.RecoverPage <= 0 {
		cfg.RecoverPage = RecoverPageEntries
	}
	return &Dispatcher{cfg: cfg, circuits: circuits{open: map[circuitKey]time.Time{}}}, nil
}

// Errors that leave a message to be handled again later.
var (
	// errInProgress: another instance holds the attempt's claim; the
	// message comes back after its visibility timeout, when the attempt
	// is finished or its claim has lapsed.
	errInProgress = errors.New("the attempt is being made by another instance")
	// errNoTime: too little of the invocation is left to make an attempt;
	// it is made when the message comes back.
	errNoTime = errors.New("too little time left in this invocation to make the attempt")
)

// HandleEvent makes the first delivery round of a new event: attempt 1
// to every enabled subscription of the tenant that matches the event's
// type and existed when the event was created.
func (d *Dispatcher) HandleEvent(ctx context.Context, tenant, eventID string) error {
	e, err := d.cfg.Store.Get(ctx, tenant, eventID)
	if errors.Is(err, event.ErrNotFound) {
		return nil // expired before delivery: nothing to send
	}
	if err != nil {
		return err
	}
	created, err := time.Parse(time.RFC3339Nano, e.Timestamp)
	if err != nil {
		return fmt.Errorf("event %s: timestamp: %w", e.ID, err)
	}
	subs, enabled, err := d.matching(ctx, tenant, e.Type, created)
	if err != nil {
		return err
	}
	return d.round(ctx, tenant, e, subs, isIn(enabled), enabled, func(event.Subscription, []event.Attempt) int { return 1 }, "", event.FirstRound)
}

// round makes the attempt number(sub, recorded) of e to each of subs (in
// parallel, at most Parallel at once), closes what a subscription not
// live (deleted or disabled since) left pending or scheduled (abandon),
// and settles the event's status. An enabled subscription (in enabled,
// the tenant's by id; nil: none) this round has
// already recorded an attempt to (the first round's attempt 1, or a
// redelivery round's own) is one of the round's even when its filter no
// longer matches the event (event_types changed before the round's message
// came back after a fault): its attempt is resumed (attempt), so what it
// calls for (the retry of a failure, the parking of a scheduled attempt)
// still follows, as docs/delivery.md promises. Only a first attempt goes
// by the filter (found by review: the retry was lost, and a scheduled
// attempt was left for good, its event received forever).
// An attempt another instance is making does not stop the round: the
// event is settled, then the message is handled again later
// (errInProgress) to see that attempt finished. marker names the
// redelivery round's marker (event.FirstRound for the first round, "" for
// none): once every attempt of the round
// is recorded it is finished (FinishRound), which lets the event settle
// again; until then no settle looks at the event, so none can miss the
// subscriptions the round has not recorded an attempt for yet (found by
// review: a due retry of another subscription settled it delivered).
// The first round (HandleEvent, marker event.FirstRound) holds its event
// the same way, but only once it queues a follow-up (firstHold): before
// that no other message of the event exists that could settle it.
func (d *Dispatcher) round(ctx context.Context, tenant string, e event.Event, subs []event.Subscription, live func(subID string) bool, enabled map[string]event.Subscription, number func(event.Subscription, []event.Attempt) int, round, marker string) error {
	var recorded []event.Attempt
	var hold *firstHold
	var err error
	if marker == event.FirstRound {
		// The attempts and whether an earlier run of this round (a fault,
		// a copy of the message) left its hold: this run then ends it.
		var running bool
		recorded, running, err = d.cfg.Store.SettleAttempts(ctx, tenant, e.ID)
		hold = &firstHold{eventID: e.ID, held: running}
		ctx = context.WithValue(ctx, firstHoldKey{}, hold)
	} else {
		recorded, err = d.cfg.Store.ListAttempts(ctx, tenant, e.ID)
	}
	if err != nil {
		return err
	}
	if len(subs) == 0 && len(recorded) == 0 && (marker == "" || hold != nil && !hold.held) {
		return nil // nothing to deliver, nothing delivered: the inbox's
	}
	subs = withRecorded(subs, recorded, enabled, round)
	err = inParallel(d.cfg.Parallel, subs, func(_ int, sub event.Subscription) error {
		return d.attempt(ctx, tenant, e, sub, number(sub, recorded), round, recorded, nil, false)
	})
	for _, a := range recorded {
		if !live(a.SubscriptionID) {
			err = errors.Join(err, d.abandon(ctx, tenant, e, a))
		}
	}
	if hold != nil && !hold.held {
		// This run held nothing. Another copy of the message may have
		// (it queued a follow-up, then stopped, while this copy recorded
		// every attempt and had its message deleted): this run has seen
		// an attempt recorded for each subscription of the round, so it
		// ends that hold too when its settle finds one, then settles
		// (found by review: nothing was left to end it). A settle that
		// finds no hold costs nothing more.
		if err != nil && !onlyInProgress(err) {
			return err
		}
		held, serr := d.settleHeld(ctx, tenant, e.ID)
		if serr == nil && held {
			if serr = d.cfg.Store.FinishRound(ctx, tenant, e.ID, event.FirstRound); serr == nil {
				serr = d.settle(ctx, tenant, e.ID)
			}
		}
		if serr != nil {
			return serr
		}
		return err
	}
	if marker != "" && (err == nil || onlyInProgress(err)) {
		if ferr := d.cfg.Store.FinishRound(ctx, tenant, e.ID, marker); ferr != nil {
			return ferr
		}
	}
	return d.settleAfter(ctx, tenant, e.ID, err)
}

// firstHold is a first delivery round's hold on its event's settles. The
// round's attempt to one subscription may fail (or be put off) and queue
// its retry (or park) while its attempt to another is not recorded yet: a
// fault there brings the round's message back only after the visibility
// timeout, minutes later. Were the retry to deliver first, its settle
// would find only the first subscription's attempts, move the event to
// delivered, and the other subscription's failures would never move it
// back: delivered though a receiver never acknowledged it (found by
// review). So the round marks itself running (Store.HoldFirstRound)
// before it queues its first follow-up (or marks a failure for good,
// which a recovery may follow: chain), and ends the hold
// (Store.FinishRound) once every attempt is recorded, as a redelivery
// round does from its start. A round that queues and marks nothing
// (every attempt delivered) writes nothing: no other message of the
// event exists then. The hold reaches queue, parkScheduled and chain
// through the round's context (firstHoldKey).
type firstHold struct {
	eventID string
	mu      sync.Mutex
	// held: the marker runs (written by this run of the round, or left
	// by an earlier one and read at its start).
	held bool
}

// firstHoldKey is the context key of a first round's *firstHold.
type firstHoldKey struct{}

// holdFirst holds the settles of event e while the first round running in
// ctx (if any, and if it is e's) records its attempts: it writes the
// round's marker unless it runs already. Called before each follow-up is
// queued or parked, and before a failure for good is marked.
func (d *Dispatcher) holdFirst(ctx context.Context, tenant string, e event.Event) error {
	h, _ := ctx.Value(firstHoldKey{}).(*firstHold)
	if h == nil || h.eventID != e.ID {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.held {
		return nil
	}
	if err := d.cfg.Store.HoldFirstRound(ctx, tenant, e.ID, d.cfg.Now(), e.TTL); err != nil {
		return err
	}
	h.held = true
	return nil
}

// settleAfter settles the event unless err is a failure other than
// errInProgress, and returns err.
func (d *Dispatcher) settleAfter(ctx context.Context, tenant, eventID string, err error) error {
	if err != nil && !onlyInProgress(err) {
		return err
	}
	if serr := d.settle(ctx, tenant, eventID); serr != nil {
		return serr
	}
	return err
}

// isJoined reports whether err joins several errors.
func isJoined(err error) bool {
	_, ok := err.(interface{ Unwrap() []error })
	return ok
}

// onlyInProgress reports whether every error err joins is errInProgress.
func onlyInProgress(err error) bool {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			if !onlyInProgress(e) {
				return false
			}
		}
		return true
	}
	return errors.Is(err, errInProgress)
}

// abandon closes attempt a when it is scheduled, or pending under a
// claim that lapsed (its claimant died), and its subscription is no longer
// delivered to (deleted or disabled since): it is finished as failed,
// without a next attempt, so the event's status can settle. Whether an
// interrupted attempt's request was sent is unknown.
func (d *Dispatcher) abandon(ctx context.Context, tenant string, e event.Event, a event.Attempt) error {
	now := d.cfg.Now()
	if a.Final() || a.LeaseUntil.After(now) {
		return nil
	}
	owner, err := newToken()
	if err != nil {
		return err
	}
	claimed, ok, err := d.cfg.Store.ClaimAttempt(ctx, tenant, e.ID, event.AttemptClaim{
		SubscriptionID: a.SubscriptionID, Number: a.Number, Owner: owner, At: now, LeaseUntil: now.Add(time.Minute),
	}, e.TTL)
	if err != nil || !ok {
		if err == nil && !claimed.Final() {
			err = errInProgress
		}
		return err
	}
	err = d.cfg.Store.FinishAttempt(ctx, tenant, e.ID, event.Attempt{
		SubscriptionID: a.SubscriptionID, Number: a.Number, Timestamp: event.FormatTime(now), Outcome: event.OutcomeFailed,
		Error: "not completed: the subscription was deleted or disabled before the attempt could be made",
	}, owner)
	if errors.Is(err, event.ErrLeaseLost) {
		return nil
	}
	return err
}

// HandleTask runs a Task from the retry queue: sent again with the
// remaining delay while it is not due, then a retry or a redelivery round.
func (d *Dispatcher) HandleTask(ctx context.Context, t Task) error {
	if wait := t.DueAt.Sub(d.cfg.Now()); wait > 0 {
		return d.cfg.Queue.Send(ctx, t, min(wait, MaxQueueDelay))
	}
	if t.Wake != "" {
		return d.wake(ctx, t)
	}
	if t.Recover != nil {
		return d.recoverPage(ctx, t)
	}
	if t.SubscriptionID == "" {
		return d.redeliver(ctx, t)
	}
	return d.retry(ctx, t)
}

// retry makes attempt t.Attempt to one subscription. While the
// subscription's circuit is open (or its probe held) the attempt is
// parked behind the circuit (park) at the cost of one read and one
// write, and the task ends: the subscription's one wake task makes it
// later, so an open circuit's backlog costs no queue traffic per attempt
// however long it lasts. (A task without the event's TTL, queued before
// parking existed, is only sent again for when the circuit closes.)
func (d *Dispatcher) retry(ctx context.Context, t Task) error {
	sub, err := d.cfg.Store.GetSubscription(ctx, t.Tenant, t.SubscriptionID)
	if err != nil && !errors.Is(err, event.ErrSubscriptionNotFound) {
		return err
	}
	now := d.cfg.Now()
	if err == nil && !sub.Disabled {
		d.circuits.seen(t.Tenant, sub, now)
		if wait, reason, ok := d.putOff(sub, now); ok {
			if t.TTL > 0 {
				if err := d.park(ctx, t.Tenant, sub.ID, t.EventID, t.Attempt, t.TTL, now.Add(wait)); err != nil {
					return err
				}
			} else {
				t.DueAt = now.Add(wait)
				if err := d.cfg.Queue.Send(ctx, t, min(wait, MaxQueueDelay)); err != nil {
					return fmt.Errorf("put off attempt %d of event %s to %s: %w", t.Attempt, t.EventID, sub.ID, err)
				}
			}
			d.cfg.Metrics.WebhookDeferred(t.Tenant, sub.ID, reason)
			return nil
		}
	}
	return d.retryNow(ctx, t, sub, err, false)
}

// retryNow makes attempt t.Attempt to sub, read before with error
// subErr: a subscription deleted or disabled since closes what it left
// scheduled or pending instead. parked: the attempt comes from the
// subscription's parked attempts and is made even if recorded scheduled
// for later.
func (d *Dispatcher) retryNow(ctx context.Context, t Task, sub event.Subscription, subErr error, parked bool) error {
	err := subErr
	e, gerr := d.cfg.Store.Get(ctx, t.Tenant, t.EventID)
	if errors.Is(gerr, event.ErrNotFound) {
		d.log(ctx, slog.LevelInfo, "webhook retry dropped: the event expired", t.Tenant, t.EventID, t.SubscriptionID)
		return nil
	}
	if gerr != nil {
		return gerr
	}
	if errors.Is(err, event.ErrSubscriptionNotFound) || sub.Disabled {
		d.log(ctx, slog.LevelInfo, "webhook retry dropped: the subscription was deleted or disabled", t.Tenant, t.EventID, t.SubscriptionID)
		// Every other subscription counts as live: only this one's
		// attempts may be closed.
		return d.round(ctx, t.Tenant, e, nil, func(id string) bool { return id != t.SubscriptionID }, nil, nil, "", "")
	}
	recorded, err := d.cfg.Store.ListAttempts(ctx, t.Tenant, e.ID)
	if err != nil {
		return err
	}
	err = d.attempt(ctx, t.Tenant, e, sub, t.Attempt, "", recorded, d.toRetrying(ctx, t.Tenant, e), parked)
	return d.settleAfter(ctx, t.Tenant, e.ID, err)
}

// toRetrying returns the move of e, when failed, to retrying that a retry
// makes once its attempt is claimed (a copy of a finished retry changes
// nothing). The move is conditional on the retry_count read (StartRetry):
// when another retry, or a redelivery round, moved the event and settled
// it failed again since e was read, the move is made again from the
// event as it now is (found by review: the event read failed while the
// request was out, so a redelivery could start a round beside it).
func (d *Dispatcher) toRetrying(ctx context.Context, tenant string, e event.Event) func() error {
	return func() error {
		cur := e
		for range maxRetryMoves {
			if cur.Status != event.Failed {
				return nil
			}
			now, err := d.cfg.Store.StartRetry(ctx, tenant, cur)
			if err == nil {
				return nil
			}
			if !isTransitionError(err) {
				return err
			}
			if now.Status != event.Failed || now.RetryCount == cur.RetryCount {
				return nil // moved on since: not failed any more
			}
			cur = now
		}
		return nil
	}
}

// maxRetryMoves bounds toRetrying's tries against moves made meanwhile.
const maxRetryMoves = 3

// recoverPage runs one page of recovery t.Recover of subscription
// t.SubscriptionID: it reads at most Config.RecoverPage entries of the
// subscription's attempt list in the page's range, recovers each event
// they name (recoverEvent, Parallel at a time), then queues the page
// that continues the range, if any. A subscription deleted or disabled
// meanwhile ends the recovery. Any failure fails the message, which SQS
// hands over again: the page is then run again, its events recovered
// already recognised by their round.
func (d *Dispatcher) recoverPage(ctx context.Context, t Task) error {
	r := *t.Recover
	sub, err := d.cfg.Store.GetSubscription(ctx, t.Tenant, t.SubscriptionID)
	if errors.Is(err, event.ErrSubscriptionNotFound) || err == nil && sub.Disabled {
		d.log(ctx, slog.LevelInfo, "recovery dropped: the subscription was deleted or disabled", t.Tenant, "", t.SubscriptionID)
		return nil
	}
	if err != nil {
		return err
	}
	ids, next, err := d.cfg.Store.SubscriptionEvents(ctx, t.Tenant, sub.ID, r.From, r.To, d.cfg.RecoverPage)
	if err != nil {
		return err
	}
	if err := inParallel(d.cfg.Parallel, ids, func(_ int, id string) error {
		return d.recoverEvent(ctx, t.Tenant, sub, id, r.ID)
	}); err != nil {
		return err
	}
	if next == "" {
		return nil
	}
	t.Recover = &Recovery{ID: r.ID, From: next, To: r.To}
	t.DueAt = d.cfg.Now()
	if err := d.cfg.Queue.Send(ctx, t, 0); err != nil {
		return fmt.Errorf("queue the next page of recovery %s of %s: %w", r.ID, sub.ID, err)
	}
	return nil
}

// recoverEvent makes, in recovery round, one more attempt of event
// eventID to sub when its latest attempt to sub failed with no retry to
// come (recoverable): attempt number latest+1, moving a failed event to
// retrying as a retry does. The attempt the round made already (a copy of
// the page) is resumed instead, never made under another number.
func (d *Dispatcher) recoverEvent(ctx context.Context, tenant string, sub event.Subscription, eventID, round string) error {
	e, err := d.cfg.Store.Get(ctx, tenant, eventID)
	if errors.Is(err, event.ErrNotFound) {
		return nil // expired
	}
	if err != nil {
		return err
	}
	recorded, err := d.cfg.Store.ListAttempts(ctx, tenant, e.ID)
	if err != nil {
		return err
	}
	n := 0
	for _, a := range recorded {
		if a.SubscriptionID == sub.ID && a.Round == round {
			n = a.Number
		}
	}
	if n == 0 {
		latest, ok := find(recorded, sub.ID, lastNumber(recorded, sub.ID))
		if !ok || !recoverable(latest, d.cfg.Now()) {
			return nil
		}
		n = latest.Number + 1
		// The page read the subscription when it began, and runs up to
		// RecoverPage events: read it again before a new attempt, as a
		// retry does, so that none goes out after a PATCH disabled the
		// subscription (or a DELETE removed it) meanwhile, and each uses
		// its current URL and secrets.
		cur, err := d.cfg.Store.GetSubscription(ctx, tenant, sub.ID)
		if errors.Is(err, event.ErrSubscriptionNotFound) || err == nil && cur.Disabled {
			return nil
		}
		if err != nil {
			return err
		}
		sub = cur
	}
	err = d.attempt(ctx, tenant, e, sub, n, round, recorded, d.toRetrying(ctx, tenant, e), false)
	return d.settleAfter(ctx, tenant, e.ID, err)
}

// recoverable reports whether a, the latest attempt of an event to a
// subscription, failed with no retry to come at now: the schedule ended
// (no next_attempt_at; also an attempt closed because its subscription
// was deleted or disabled), the subscription was disabled by the failure
// (follow-up done), or its retry is overdue by recoverOverdue (dropped
// because it came due while the subscription was disabled). Delivered,
// gone, pending and scheduled attempts, and failures whose retry is to
// come, are not.
func recoverable(a event.Attempt, now time.Time) bool {
	if a.Outcome != event.OutcomeFailed {
		return false
	}
	if a.NextAttemptAt == "" || a.FollowUp == event.FollowUpDone {
		return true
	}
	due, err := time.Parse(time.RFC3339Nano, a.NextAttemptAt)
	return err == nil && now.Sub(due) > recoverOverdue
}

// wakeGrace is how long after its due time a wake task is expected to
// have started: until then its marker keeps other parkers from queueing
// another wake; after it (the wake was lost or is very late) the next
// parker queues one.
const wakeGrace = 5 * time.Minute

// park parks attempt n of event eventID to subscription subID behind the
// subscription's circuit (its item expires with the event, ttl), then
// makes sure a wake task will look at the parked attempts at due or
// later (sendWake). Parked first, then the marker checked: a confirmed
// marker's wake has not started, so it sees this parking.
func (d *Dispatcher) park(ctx context.Context, tenant, subID, eventID string, n int, ttl int64, due time.Time) error {
	token, err := newToken()
	if err != nil {
		return err
	}
	if err := d.cfg.Store.ParkAttempt(ctx, tenant, subID, event.Parked{EventID: eventID, Number: n, Token: token}, ttl); err != nil {
		return err
	}
	return d.sendWake(ctx, tenant, subID, "", due, d.cfg.Now())
}

// sendWake queues a wake task of subscription subID for due, unless a
// confirmed marker says another wake is queued and has not started (prev
// names the wake handing over, whose own marker does not count). The
// marker is claimed pending, the wake sent, then the marker confirmed: a
// wake that starts before the confirmation takes the pending marker, so
// the confirmation fails and no marker outlives its wake; a failure or a
// stop between the steps leaves at most one more wake, never a confirmed
// marker without one. A subscription that is gone has no marker: the
// wake is sent, to close the attempts parked behind it.
func (d *Dispatcher) sendWake(ctx context.Context, tenant, subID, prev string, due, now time.Time) error {
	_, err := d.queueWake(ctx, tenant, subID, prev, due, now, laneWait{}, wakeNormal)
	return err
}

// sendStandby queues subscription subID's wake for the attempts a wake
// left parked (leftParked: another wake or instance is making them, or
// the invocation's time ran short), an attempt's time after now, as a
// standby wake: its marker refuses no other wake's claim (store
// ClaimWake; it still stops other wakes as they start, TakeWake), so the
// wake making those attempts, which queues the next at once for the
// attempts past its page, is not held back by it; it only matters in
// case that wake's instance dies. (A wake left
// behind by a copy of a wake message, or by the wake a slow-lane
// hand-over replaced, refused the next wake of the one making the
// attempts, and the backlog waited an attempt's time, 13 s by default:
// found by review.)
func (d *Dispatcher) sendStandby(ctx context.Context, tenant, subID string, now time.Time) error {
	_, err := d.queueWake(ctx, tenant, subID, "", now.Add(d.leftWait()), now, laneWait{}, wakeStandby)
	return err
}

// sendEarlier queues subscription sub's wake due now in place of a queued
// one due later, once a delivery has closed sub's circuit: the attempts
// parked behind the circuit are made now instead of when the circuit's
// wake comes (store ClaimEarlierWake). That wake is due when the circuit
// was to close plus its spread (up to BreakerCooldown/2 after a probe that
// was not the wake's) and up to a whole cooldown and more when a request
// in flight as the circuit opened succeeded (one whose slowness opened
// it, SlowAfter): the parked backlog waited that long with its endpoint
// healthy (found by review). Nothing is queued when no wake is (nothing
// parked, or a wake is running and makes what is), nor in place of a wake
// due within MaxSlowLaneWait while sub is in its tenant's slow lane (the
// lane's own wake, which carries its wait for a turn). Best effort: a
// failure is logged, not returned, since the message coming back would
// find the circuit closed and queue nothing; a fault between the steps
// leaves the wake queued before to make the attempts, and at most one
// more wake.
func (d *Dispatcher) sendEarlier(ctx context.Context, tenant string, sub event.Subscription, now time.Time) {
	kind := wakeEarlier
	if d.inLane(sub, now) {
		kind = wakeEarlierInLane
	}
	if _, err := d.queueWake(ctx, tenant, sub.ID, "", now, now, laneWait{}, kind); err != nil {
		d.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "parked attempts not woken at the circuit's closing: its wake makes them when due",
			slog.String("tenant", tenant), slog.String("subscription_id", sub.ID), slog.Any("error", err))
	}
}

// wakeKind is how queueWake claims the wake's marker.
type wakeKind int

const (
	wakeNormal        wakeKind = iota // store ClaimWake
	wakeStandby                       // ClaimWake as a standby (sendStandby)
	wakeEarlier                       // ClaimEarlierWake (sendEarlier)
	wakeEarlierInLane                 // ClaimEarlierWake, sparing a wake due within MaxSlowLaneWait
)

// laneWait is how long a subscription has waited on its tenant's slow
// lane as its next wake is queued: the wakes in a row that found the lane
// full (Task.Refused), and since when (Task.WaitingSince).
type laneWait struct {
	refused int
	since   time.Time
}

// queueWake is sendWake (kind: sendStandby, sendEarlier) for a wake of a
// subscription that has waited on the slow lane (wait), returning the
// owner of the wake it queued ("" when a confirmed marker of another wake
// refused it).
func (d *Dispatcher) queueWake(ctx context.Context, tenant, subID, prev string, due, now time.Time, wait laneWait, kind wakeKind) (owner string, err error) {
	owner, err = newToken()
	if err != nil {
		return "", err
	}
	var claimed bool
	switch kind {
	case wakeEarlier, wakeEarlierInLane:
		after := due.Add(wakeGrace)
		if kind == wakeEarlierInLane {
			after = after.Add(MaxSlowLaneWait)
		}
		claimed, err = d.cfg.Store.ClaimEarlierWake(ctx, tenant, subID, owner, due.Add(wakeGrace), after)
		if errors.Is(err, event.ErrSubscriptionNotFound) {
			return "", nil // gone: the wake queued before closes what is parked
		}
	default:
		claimed, err = d.cfg.Store.ClaimWake(ctx, tenant, subID, owner, prev, kind == wakeStandby, due.Add(wakeGrace), now)
	}
	gone := errors.Is(err, event.ErrSubscriptionNotFound)
	if !gone && (err != nil || !claimed) {
		return "", err
	}
	t := Task{Tenant: tenant, SubscriptionID: subID, Wake: owner, DueAt: due, Refused: wait.refused, WaitingSince: wait.since}
	if err := d.cfg.Queue.Send(ctx, t, min(max(due.Sub(now), 0), MaxQueueDelay)); err != nil {
		return "", fmt.Errorf("queue the wake of %s: %w", subID, err)
	}
	if gone {
		return owner, nil
	}
	_, err = d.cfg.Store.ConfirmWake(ctx, tenant, subID, owner)
	return owner, err
}

// wake runs subscription t.SubscriptionID's wake task. While the circuit
// is still open (or its probe held) it waits again, as the one wake. Then
// it takes the marker (a wake under another owner's live marker stops:
// that one is queued and does the work) and makes the parked attempts,
// at most Parallel of them: the first alone (while the circuit is
// half-open it is the probe), the rest at once if the circuit let it
// through; to a subscription in its tenant's slow lane with its circuit
// closed, as many at once as the lane has slots free (wakeInLane). Each is unparked once made, under the token it was read with,
// so an attempt parked again meanwhile stays parked. A full page queues
// the next wake at once; attempts left parked (another instance is making
// one, or the invocation's time ran short) a standby wake, an attempt's
// time later (sendStandby). A subscription gone or disabled: its parked
// attempts are closed, as its retries' are.
func (d *Dispatcher) wake(ctx context.Context, t Task) error {
	sub, subErr := d.cfg.Store.GetSubscription(ctx, t.Tenant, t.SubscriptionID)
	if subErr != nil && !errors.Is(subErr, event.ErrSubscriptionNotFound) {
		return subErr
	}
	now := d.cfg.Now()
	if subErr == nil && !sub.Disabled {
		d.circuits.seen(t.Tenant, sub, now)
		if wait, _, ok := d.putOff(sub, now); ok {
			return d.sendWake(ctx, t.Tenant, sub.ID, t.Wake, now.Add(wait), now)
		}
	}
	if subErr == nil {
		// Also for a disabled subscription, which it closes: a marker
		// left in place would refuse the successor of a full page, and
		// the attempts past it would stay parked (found by review).
		took, err := d.cfg.Store.TakeWake(ctx, t.Tenant, sub.ID, t.Wake, now)
		if err != nil || !took {
			return err
		}
	}
	page, err := d.cfg.Store.ListParked(ctx, t.Tenant, t.SubscriptionID, d.cfg.Parallel+1)
	if err != nil {
		return err
	}
	more := len(page) > d.cfg.Parallel
	page = page[:min(len(page), d.cfg.Parallel)]
	if len(page) == 0 {
		return nil
	}
	if subErr == nil && !sub.Disabled && d.inLane(sub, now) && !sub.HalfOpen(now) {
		return d.wakeInLane(ctx, t, sub, page, more, now)
	}
	first, err := d.unpark(ctx, t, sub, subErr, page[0])
	if err != nil {
		return err
	}
	if first == parkedAgain {
		// Parked again meanwhile: the circuit may be open again, and its
		// parker may have queued a wake, or may not (a copy of a retry's
		// message that parked it from a stale read and stopped before
		// claiming the marker; coming back, it finds the attempt made and
		// queues nothing): the next wake is queued due now, refused by a
		// parker's confirmed marker, put off by a circuit open again
		// (found by review: the attempts past this one stayed parked).
		return d.sendWake(ctx, t.Tenant, t.SubscriptionID, "", d.cfg.Now(), d.cfg.Now())
	}
	if first == leftParked {
		return d.sendStandby(ctx, t.Tenant, t.SubscriptionID, d.cfg.Now())
	}
	if len(page) > 1 && subErr == nil && !sub.Disabled {
		// The first attempt may have closed or opened the circuit: the
		// rest go by the subscription as it is now.
		if sub, subErr = d.cfg.Store.GetSubscription(ctx, t.Tenant, t.SubscriptionID); subErr != nil && !errors.Is(subErr, event.ErrSubscriptionNotFound) {
			return subErr
		}
		now = d.cfg.Now()
		if subErr == nil && !sub.Disabled {
			d.circuits.seen(t.Tenant, sub, now)
			if wait, _, ok := d.putOff(sub, now); ok {
				return d.sendWake(ctx, t.Tenant, sub.ID, "", now.Add(wait), now)
			}
		}
	}
	rest := make([]unparked, len(page)-1)
	err = inParallel(d.cfg.Parallel, page[1:], func(i int, p event.Parked) (err error) {
		rest[i], err = d.unpark(ctx, t, sub, subErr, p)
		return err
	})
	if err != nil {
		return err
	}
	now = d.cfg.Now()
	// An attempt parked again meanwhile: the next wake, as above.
	more = more || slices.Contains(rest, parkedAgain)
	if slices.Contains(rest, leftParked) {
		return d.sendStandby(ctx, t.Tenant, t.SubscriptionID, now)
	}
	if more {
		return d.sendWake(ctx, t.Tenant, t.SubscriptionID, "", now, now)
	}
	return nil
}

// wakeInLane makes the parked attempts of page (more: others are parked
// past it) to sub, which is marked slow with its circuit closed: it takes
// slots of the tenant's slow lane one after the other and stops at the
// first refused (or at the page's end), then makes as many attempts as it
// holds slots, at once, each with its slot; the rest stay parked, for
// the next wake: at once when this one made attempts (their slots are
// free again), else once a slot may have freed (as an attempt put off
// again: slowLaneFirstWait doubled for each wake in a row that found the
// lane full, t.Refused, and once more, at most MaxSlowLaneWait). So a
// lane's free slots are
// all used at once (the first attempt alone, as when the circuit may be
// half-open, halved a subscription's drain rate), and a full lane costs a
// wake one refused write, not a put-off and a parking per attempt (making
// the whole page at once, each attempt taking its own slot, multiplied
// those: measured by the slow-neighbour load scenario, docs/delivery.md).
func (d *Dispatcher) wakeInLane(ctx context.Context, t Task, sub event.Subscription, page []event.Parked, more bool, now time.Time) error {
	slots := make([]laneSlot, 0, len(page))
	defer func() {
		for _, s := range slots {
			s.release()
		}
	}()
	var wait time.Duration
	for range page {
		// Each hold from when its slot is taken: the wake's steps before
		// (the marker, the page, the slots before it) do not eat into
		// the time its attempt has before its request (found by review).
		slot, w, err := d.slowSlot(ctx, t.Tenant, sub, d.cfg.Now(), t.Refused+1)
		if err != nil {
			return err
		}
		if w > 0 {
			wait = w
			break
		}
		slots = append(slots, slot)
	}
	if len(slots) == 0 {
		since := t.WaitingSince
		if t.Refused == 0 || since.IsZero() {
			since = now // the first wake in a row to find the lane full
		}
		return d.waitTurn(ctx, t.Tenant, sub.ID, "", now.Add(wait), now, laneWait{t.Refused + 1, since})
	}
	if t.Refused > 0 {
		// Its turn has come: it no longer waits on the lane.
		d.dropWaiter(ctx, t.Tenant, sub.ID, t.Wake)
	}
	made := make([]unparked, len(slots))
	err := inParallel(d.cfg.Parallel, page[:len(slots)], func(i int, p event.Parked) (err error) {
		defer slots[i].release()
		made[i], err = d.unpark(withSlot(ctx, slots[i]), t, sub, nil, p)
		return err
	})
	if err != nil {
		return err
	}
	now = d.cfg.Now()
	// The slots this wake held are free again: the turn goes to the
	// subscription that has waited longest, if another waits.
	handed, mine := d.handOver(ctx, t.Tenant, sub.ID, now)
	// A wake of this subscription that waits on the lane meanwhile (mine)
	// is replaced by the next one: a wake a hand-over replaced came while
	// this one made its attempts, found no marker, was refused by the
	// slots this one held, and queued its successor, due up to
	// MaxSlowLaneWait later, whose marker refused this wake's next one:
	// the lane stood idle with the backlog parked (found by review).
	prev := ""
	if mine != nil {
		prev = mine.Owner
	}
	// An attempt parked again meanwhile: the next wake, as in wake.
	more = more || slices.Contains(made, parkedAgain)
	switch {
	case slices.Contains(made, leftParked):
		return d.sendStandby(ctx, t.Tenant, sub.ID, now)
	case (len(slots) < len(page) || more) && handed:
		// Its turn is over: it waits for the next, as a wake refused
		// once (a wake that frees slots hands it the turn; its own comes
		// at the latest when that wait ends).
		return d.waitTurn(ctx, t.Tenant, sub.ID, prev, now.Add(laneBackoff(1, d.cfg.Rand)), now, laneWait{1, now})
	case len(slots) < len(page) || more:
		// No one else waits: the next wake at once, before other
		// attempts take the slots (it waits, as above, if they did).
		if err := d.sendWake(ctx, t.Tenant, sub.ID, prev, now, now); err != nil || mine == nil {
			return err
		}
		d.dropWaiter(ctx, t.Tenant, sub.ID, mine.Owner)
	}
	return nil
}

// laneWaitersRead bounds the waiters a wake reads to hand the turn over:
// beyond it, turns go among the first by subscription id, and the others
// come back with their own wakes (at most MaxSlowLaneWait apart).
const laneWaitersRead = 25

// waitTurn queues subscription subID's next wake for due (the refused-th
// in a row to find its tenant's slow lane full, or whose turn is over;
// prev: the wake it replaces, as sendWake's) and records the subscription as waiting on the lane, so that the next
// wake that frees slots hands it the turn at once (handOver) instead of
// the slots going to the subscription that held them, whose wake comes
// back at once, while this one's comes back ever later (found by the
// slow-neighbour load scenario: one endpoint got 3-4 times another's
// share). The record is best effort: without it the wake comes at due.
func (d *Dispatcher) waitTurn(ctx context.Context, tenant, subID, prev string, due, now time.Time, wait laneWait) error {
	owner, err := d.queueWake(ctx, tenant, subID, prev, due, now, wait, wakeNormal)
	if err != nil || owner == "" {
		return err // "": another wake is queued, and makes the attempts
	}
	if err := d.cfg.Store.AddLaneWaiter(ctx, tenant, event.LaneWaiter{SubscriptionID: subID, Owner: owner, Refused: wait.refused, Since: wait.since}, due.Add(wakeGrace)); err != nil {
		d.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "slow-lane waiter not recorded: its wake comes when its wait ends",
			slog.String("tenant", tenant), slog.String("subscription_id", subID), slog.Any("error", err))
	}
	return nil
}

// handOverTries bounds the waiters a hand-over tries in turn (each try a
// claim and a removal: writes).
const handOverTries = 3

// handOver gives the turn in tenant's slow lane, whose slots the wake of
// subscription self has just freed, to the subscription that has waited
// longest (waitedLonger) other than self: its wake,
// queued for later, is replaced by one due now (ClaimWake with its owner
// as prev), and its record is removed. It reports whether a wake was
// queued, and self's own record among the waiters read, if any (mine).
// A waiter whose wake is already replaced by a newer one (another wake
// that freed slots at the same time handed it the turn first) refuses
// the claim; the turn then goes to the next longest waiter, up to
// handOverTries of them. (Before, the second wake handed no turn and
// queued its own next wake at once: two wakes ending together served one
// waiter and the one that had freed slots, not the next waiter.)
// Best effort, as the record is: a failure is logged, and the waiter's
// own wake comes when its wait ends.
func (d *Dispatcher) handOver(ctx context.Context, tenant, self string, now time.Time) (handed bool, mine *event.LaneWaiter) {
	ws, err := d.cfg.Store.LaneWaiters(ctx, tenant, now, laneWaitersRead)
	if err != nil {
		d.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "slow-lane waiters not read: no turn handed over",
			slog.String("tenant", tenant), slog.Any("error", err))
		return false, nil
	}
	var others []event.LaneWaiter
	for i, w := range ws {
		if w.SubscriptionID == self {
			mine = &ws[i]
			continue
		}
		others = append(others, w)
	}
	slices.SortStableFunc(others, func(a, b event.LaneWaiter) int {
		switch {
		case waitedLonger(a, b):
			return -1
		case waitedLonger(b, a):
			return 1
		}
		return 0
	})
	for _, next := range others[:min(len(others), handOverTries)] {
		// The handed wake keeps the waiter's wait: refused again (the
		// lane filled before it ran), it is still the longest waiter
		// (since).
		owner, err := d.queueWake(ctx, tenant, next.SubscriptionID, next.Owner, now, now, laneWait{next.Refused, next.Since}, wakeNormal)
		if err != nil {
			d.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "slow-lane turn not handed over: the waiter's wake comes when its wait ends",
				slog.String("tenant", tenant), slog.String("subscription_id", next.SubscriptionID), slog.Any("error", err))
			return false, mine
		}
		// Handed over, or refused by a newer wake of that subscription
		// queued meanwhile (another wake that freed slots at the same
		// time handed it the turn first): either way the record is
		// spent, and a refused turn goes to the next waiter.
		d.dropWaiter(ctx, tenant, next.SubscriptionID, next.Owner)
		if owner != "" {
			return true, mine
		}
	}
	return false, mine
}

// waitedLonger reports whether lane waiter a has waited longer than b:
// since earlier, or, for a record without Since (written by an earlier
// version), refused more often. Ties go to b (the waiters are read in
// subscription id order). (Ties of the refused count went to the lowest
// subscription id: with three subscriptions or more, a wake that had
// just ended its batch, refused once since, was handed the turn back
// before one that had waited since before that batch; found by
// TestSlowLaneTurnGoesToTheLongestWaiting.)
func waitedLonger(a, b event.LaneWaiter) bool {
	if !a.Since.IsZero() && !b.Since.IsZero() {
		return a.Since.Before(b.Since)
	}
	return a.Refused > b.Refused
}

// dropWaiter removes subID's lane waiter record while it names owner;
// best effort (a record left behind lapses, and meanwhile costs its
// subscription at most one more wake).
func (d *Dispatcher) dropWaiter(ctx context.Context, tenant, subID, owner string) {
	if err := d.cfg.Store.RemoveLaneWaiter(ctx, tenant, subID, owner); err != nil {
		d.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "slow-lane waiter not removed: it lapses",
			slog.String("tenant", tenant), slog.String("subscription_id", subID), slog.Any("error", err))
	}
}

// inLane reports whether attempts to sub take a slot of its tenant's slow
// lane at now.
func (d *Dispatcher) inLane(sub event.Subscription, now time.Time) bool {
	return d.cfg.SlowLaneAfter >= 0 && sub.SlowUntil.After(now)
}

// slotKey is the context key of a slow-lane slot taken for an attempt
// before it starts (wakeInLane).
type slotKey struct{}

// heldSlot is a slot taken for an attempt before it starts: the
// attempt's first slowSlot takes it instead of asking the lane (once: an
// attempt that goes through the gate again asks the lane).
type heldSlot struct {
	slot  laneSlot
	taken atomic.Bool
}

// withSlot returns ctx carrying slot for the attempt made with it.
func withSlot(ctx context.Context, slot laneSlot) context.Context {
	return context.WithValue(ctx, slotKey{}, &heldSlot{slot: slot})
}

// unparked is what became of a parked attempt a wake took up.
type unparked int

const (
	// unparkedMade: made (or closed, its subscription gone) and removed
	// (or removed already by another wake of the subscription running
	// at the same time).
	unparkedMade unparked = iota
	// parkedAgain: parked again meanwhile, under another token (the
	// circuit opened again, or a stale read parked it); its parker may
	// not have queued a wake: the wake queues the next.
	parkedAgain
	// leftParked: not made now (another instance is making it, or too
	// little of the invocation is left); a later wake makes it.
	leftParked
)

// leftWait is how long a wake waits before taking up attempts it left
// parked: as long as another instance's attempt may take.
func (d *Dispatcher) leftWait() time.Duration { return d.cfg.Client.Timeout + storeMargin }

// unpark makes parked attempt p (as retry would, sub read with error
// subErr) and then removes it, under the token it was read with.
func (d *Dispatcher) unpark(ctx context.Context, t Task, sub event.Subscription, subErr error, p event.Parked) (unparked, error) {
	task := Task{Tenant: t.Tenant, EventID: p.EventID, SubscriptionID: t.SubscriptionID, Attempt: p.Number, DueAt: d.cfg.Now()}
	if err := d.retryNow(ctx, task, sub, subErr, true); err != nil {
		if onlyInProgress(err) || errors.Is(err, errNoTime) && !isJoined(err) {
			return leftParked, nil
		}
		return leftParked, err
	}
	removed, err := d.cfg.Store.UnparkAttempt(ctx, t.Tenant, t.SubscriptionID, p)
	if err != nil {
		return leftParked, err
	}
	if !removed {
		return parkedAgain, nil
	}
	return unparkedMade, nil
}

// redeliver runs redelivery round t.Round: it starts the round unless the
// API request that queued it did (or it is superseded), then sends the
// event to every enabled subscription that matches it and existed when
// the redelivery was asked for, under the attempt number t.Numbers names
// for it (a task without one: the number the round already used, for a
// copy of the task, or roundNumber). An attempt the round finds
// scheduled is resumed, not made again under the next number: a round
// that made attempt n+1 while attempt n waited behind an open circuit or
// a rate cap sent the event twice, n being made by its task or its
// subscription's wake (found by review).
func (d *Dispatcher) redeliver(ctx context.Context, t Task) error {
	e, err := d.cfg.Store.Get(ctx, t.Tenant, t.EventID)
	if errors.Is(err, event.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	round := t.Round
	if round == "" {
		// A task queued before rounds were named: the event was moved to
		// retrying by the request; retry_count names the round.
		round = "rc" + strconv.Itoa(e.RetryCount)
	} else {
		err := d.cfg.Store.StartRedelivery(ctx, t.Tenant, e, round, t.DueAt)
		if errors.Is(err, event.ErrNotFound) || errors.Is(err, event.ErrRoundSuperseded) || isTransitionError(err) {
			d.log(ctx, slog.LevelInfo, "redelivery dropped: the event changed since it was asked for", t.Tenant, e.ID, "")
			return nil
		}
		if err != nil && !errors.Is(err, event.ErrRoundStarted) {
			return err
		}
	}
	subs, enabled, err := d.matching(ctx, t.Tenant, e.Type, t.DueAt)
	if err != nil {
		return err
	}
	if len(subs) == 0 {
		d.log(ctx, slog.LevelWarn, "redelivery found no enabled subscription matching the event", t.Tenant, e.ID, "")
		recorded, err := d.cfg.Store.ListAttempts(ctx, t.Tenant, e.ID)
		if err != nil {
			return err
		}
		if len(recorded) == 0 {
			// Nothing was ever attempted, so settle has nothing to go by:
			// the round's retrying goes back to failed.
			if t.Round != "" {
				if err := d.cfg.Store.FinishRound(ctx, t.Tenant, e.ID, t.Round); err != nil {
					return err
				}
			}
			// Settle with no attempts to check: a transaction, whose
			// token makes a resend or a late copy of it change nothing
			// (a plain status write's late copy could land after a
			// later redelivery's move, leaving it failed mid-round).
			if err := d.cfg.Store.Settle(ctx, t.Tenant, e.ID, event.Retrying, event.Failed, nil); err != nil && !isTransitionError(err) {
				return err
			}
			return nil
		}
	}
	number := func(sub event.Subscription, recorded []event.Attempt) int {
		if n, ok := t.Numbers[sub.ID]; ok {
			return n
		}
		for _, a := range recorded {
			if a.SubscriptionID == sub.ID && a.Round == round {
				return a.Number
			}
		}
		return roundNumber(recorded, sub.ID)
	}
	return d.round(ctx, t.Tenant, e, subs, isIn(enabled), enabled, number, round, t.Round)
}

// matching returns the tenant's enabled subscriptions that want events of
// eventType and were created at or before at, and all its enabled
// subscriptions by id.
func (d *Dispatcher) matching(ctx context.Context, tenant, eventType string, at time.Time) (subs []event.Subscription, enabled map[string]event.Subscription, err error) {
	all, err := d.cfg.Store.ListSubscriptions(ctx, tenant)
	if err != nil {
		return nil, nil, err
	}
	enabled = map[string]event.Subscription{}
	for _, s := range all {
		created, err := time.Parse(time.RFC3339Nano, s.CreatedAt)
		if err != nil {
			return nil, nil, fmt.Errorf("subscription %s: created_at: %w", s.ID, err)
		}
		if !s.Disabled {
			enabled[s.ID] = s
		}
		if !s.Disabled && s.Matches(eventType) && !created.After(at) {
			subs = append(subs, s)
		}
	}
	return subs, enabled, nil
}

// isIn returns whether a subscription id is in enabled.
func isIn(enabled map[string]event.Subscription) func(string) bool {
	return func(id string) bool { _, ok := enabled[id]; return ok }
}

// withRecorded returns subs and, after them, every enabled subscription
// not among them that round has recorded an attempt to: the first round's
// attempt 1 (round ""), or an attempt of redelivery round round (see
// round).
func withRecorded(subs []event.Subscription, recorded []event.Attempt, enabled map[string]event.Subscription, round string) []event.Subscription {
	for _, a := range recorded {
		if a.Round != round || round == "" && a.Number != 1 {
			continue
		}
		s, ok := enabled[a.SubscriptionID]
		if !ok || slices.ContainsFunc(subs, func(x event.Subscription) bool { return x.ID == s.ID }) {
			continue
		}
		subs = append(subs, s)
	}
	return subs
}

// inParallel runs fn for every item (with its index), at most n at once,
// and joins their errors: one item's failure does not stop the others.
func inParallel[T any](n int, items []T, fn func(i int, item T) error) error {
	if len(items) == 1 {
		return fn(0, items[0])
	}
	errs := make([]error, len(items))
	sem := make(chan struct{}, n)
	var wg sync.WaitGroup
	for i, item := range items {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			errs[i] = fn(i, item)
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// roundNumber returns the attempt number a redelivery round makes to
// subID given its recorded attempts: the latest while it is not made yet
// (scheduled or pending: the round resumes it), the next one otherwise (1
// for none).
func roundNumber(attempts []event.Attempt, subID string) int {
	n := lastNumber(attempts, subID)
	if a, ok := find(attempts, subID, n); ok && !a.Final() {
		return n
	}
	return n + 1
}

// RoundNumbers returns Task.Numbers of a redelivery round asked for while
// the event's attempts were attempts (as ListAttempts returns them): the
// attempt number the round makes to each subscription attempted to.
func RoundNumbers(attempts []event.Attempt) map[string]int {
	out := map[string]int{}
	for _, a := range attempts {
		if _, ok := out[a.SubscriptionID]; !ok {
			out[a.SubscriptionID] = roundNumber(attempts, a.SubscriptionID)
		}
	}
	return out
}

func lastNumber(attempts []event.Attempt, subID string) int {
	n := 0
	for _, a := range attempts {
		if a.SubscriptionID == subID && a.Number > n {
			n = a.Number
		}
	}
	return n
}

func find(attempts []event.Attempt, subID string, n int) (event.Attempt, bool) {
	for _, a := range attempts {
		if a.SubscriptionID == subID && a.Number == n {
			return a, true
		}
	}
	return event.Attempt{}, false
}

// attempt makes attempt number n of e to sub (round names a redelivery
// round), unless it is recorded already: then it re-derives what the
// recorded attempt calls for. The attempt is claimed first; before, if
// set, runs once the claim is held and before the request. Then the
// request, the record of its outcome, and what the outcome calls for.
func (d *Dispatcher) attempt(ctx context.Context, tenant string, e event.Event, sub event.Subscription, n int, round string, recorded []event.Attempt, before func() error, parked bool) error {
	now := d.cfg.Now()
	if a, ok := find(recorded, sub.ID, n); ok {
		if a.Final() || a.Outcome == event.OutcomePending && a.LeaseUntil.After(now) {
			return d.resume(ctx, tenant, e, sub, a, recorded)
		}
		if a.Outcome == event.OutcomeScheduled {
			due, err := time.Parse(time.RFC3339Nano, a.NextAttemptAt)
			if err != nil {
				return fmt.Errorf("attempt %s #%d: next_attempt_at: %w", sub.ID, n, err)
			}
			if due.After(now) && !parked {
				if a.FollowUp == event.FollowUpQueued {
					return nil // its task (or its subscription's wake) makes it
				}
				// Its task or parking was lost with an invocation.
				if _, _, ok := d.putOff(sub, now); ok {
					return d.parkScheduled(ctx, tenant, e, a, due)
				}
				return d.queue(ctx, tenant, e, sub.ID, n, due, a)
			}
		}
	}
	noTime := func() bool {
		dl, ok := ctx.Deadline()
		return ok && time.Until(dl) < d.cfg.Client.Timeout+storeMargin
	}
	// To a half-open circuit, before the gate: an attempt without the
	// time for its request takes no probe (found by review: the probe it
	// took stayed held, and put its endpoint's other attempts off, until
	// its hold ended). Elsewhere after it, so that an attempt the gate
	// puts off is parked or queued as usual, whatever the time left.
	if sub.HalfOpen(now) && noTime() {
		return errNoTime
	}
	deferrals := 0
	if a, ok := find(recorded, sub.ID, n); ok {
		deferrals = a.Deferrals
	}
	wait, reason, probe, slot, err := d.gate(ctx, tenant, sub, now, deferrals, parked)
	if err != nil {
		return err
	}
	if wait > 0 {
		return d.schedule(ctx, tenant, e, sub, n, round, now.Add(wait), reason, recorded)
	}
	// The slow lane's slot (if any) is given back once the request is
	// answered, or on any way out before it.
	defer slot.release()
	if noTime() {
		return errNoTime
	}
	owner, err := newToken()
	if err != nil {
		return err
	}
	// The secrets are opened before the claim: KMS failing fails the
	// message before anything is claimed or sent.
	secrets, err := d.signingSecrets(ctx, tenant, sub, now)
	if err != nil {
		return err
	}
	lease := now.Add(d.cfg.Lease)
	if dl, ok := ctx.Deadline(); ok {
		lease = now.Add(time.Until(dl) + leaseMargin)
	}
	a, claimed, err := d.cfg.Store.ClaimAttempt(ctx, tenant, e.ID, event.AttemptClaim{
		SubscriptionID: sub.ID, Number: n, Round: round, Owner: owner, At: now, LeaseUntil: lease,
	}, e.TTL)
	if err != nil {
		return err
	}
	if !claimed {
		return d.resume(ctx, tenant, e, sub, a, recorded)
	}
	if before != nil {
		if err := before(); err != nil {
			return err
		}
	}
	// The webhook body: the event as GET /v1/events/{id} returns it at the
	// time of the attempt (the stream consumer's encoding).
	body, err := streamconsumer.MarshalEvent(e)
	if err != nil {
		return err
	}
	// The request ends with the hold it was let through on: its slow-lane
	// slot's, or its probe's (both taken in gate at now).
	hold := slot.until
	if probe {
		hold = d.holdEnd(now)
	}
	sendCtx, cut := d.withinHold(ctx, hold)
	stopWatch := d.watchSlow(ctx, tenant, e.ID, sub.ID, sub.URL)
	res := webhook.Send(sendCtx, d.cfg.Client, webhook.Request{URL: sub.URL, MsgID: e.ID, Body: body, Secrets: secrets, Now: now})
	stopWatch()
	if cut() && res.Outcome == webhook.Failed {
		res.Error += "; cut short at the end of its hold (its slow-lane slot's or its probe's: the steps before the request took long)"
	}
	slot.release()
	a = event.Attempt{
		SubscriptionID: sub.ID, Number: n, Timestamp: event.FormatTime(now),
		Outcome: string(res.Outcome), StatusCode: res.StatusCode, LatencyMs: res.Latency.Milliseconds(),
		Response: res.ResponseBody, Error: res.Error, Round: round, URL: sub.URL,
	}
	if probe {
		a.ProbeCooldown = d.probeCooldown(sub)
	}
	if res.Outcome == webhook.Failed {
		if next, retry := d.next(n, res.RetryAfter); retry {
			a.NextAttemptAt = event.FormatTime(now.Add(next))
		}
	}
	if err := d.cfg.Store.FinishAttempt(ctx, tenant, e.ID, a, owner); err != nil {
		if errors.Is(err, event.ErrLeaseLost) {
			// Another instance took the attempt over and records it.
			d.log(ctx, slog.LevelWarn, "webhook attempt outlived its claim: its outcome is not recorded", tenant, e.ID, sub.ID)
			return nil
		}
		return err
	}
	d.cfg.Metrics.WebhookAttempt(a.Outcome)
	level := slog.LevelInfo
	if res.Outcome != webhook.Delivered {
		level = slog.LevelWarn
	}
	d.cfg.Logger.LogAttrs(ctx, level, "webhook attempt",
		slog.String("tenant", tenant), slog.String("event_id", e.ID), slog.String("subscription_id", sub.ID),
		slog.Int("attempt", n), slog.String("outcome", a.Outcome), slog.Int("status_code", a.StatusCode),
		slog.Int64("latency_ms", a.LatencyMs), slog.String("error", a.Error), slog.String("next_attempt_at", a.NextAttemptAt))
	d.markSlow(ctx, tenant, e.ID, sub, res)
	return d.followUp(ctx, tenant, e, sub, a, recorded)
}

// markSlow marks sub slow for SlowLaneFor when res was answered after
// SlowLaneAfter or more (a request without an answer is the circuit
// breaker's: SlowAfter, failures), on the server the request went to
// (store MarkSlow). The write is skipped while sub, as read, is marked
// for at least half of SlowLaneFor more: a steadily slow endpoint costs
// one write per half window, not one per request. The mark is advisory:
// a failure to write it is only logged (the next slow answer writes it).
func (d *Dispatcher) markSlow(ctx context.Context, tenant, eventID string, sub event.Subscription, res webhook.Attempt) {
	if d.cfg.SlowLaneAfter < 0 || res.StatusCode == 0 || res.Latency < d.cfg.SlowLaneAfter {
		return
	}
	now := d.cfg.Now()
	if sub.SlowUntil.After(now.Add(SlowLaneFor / 2)) {
		return
	}
	level, msg := slog.LevelInfo, "endpoint marked slow: its attempts take its tenant's slow lane"
	err := d.cfg.Store.MarkSlow(ctx, tenant, sub.ID, sub.URL, now.Add(SlowLaneFor))
	if err != nil {
		level, msg = slog.LevelWarn, "endpoint answered slowly, but marking it slow failed"
	}
	d.cfg.Logger.LogAttrs(ctx, level, msg,
		slog.String("tenant", tenant), slog.String("event_id", eventID), slog.String("subscription_id", sub.ID),
		slog.Int64("latency_ms", res.Latency.Milliseconds()), slog.Any("error", err))
}

// laneSlot is an attempt's slot of its tenant's slow lane: until is the
// end of its hold (zero: no slot taken), release gives it back (never nil;
// it may be called more than once).
type laneSlot struct {
	until   time.Time
	release func()
}

// noSlot is the laneSlot of an attempt that took none.
func noSlot() laneSlot { return laneSlot{release: func() {}} }

// holdEnd is the end of a hold taken at now for one attempt's request: a
// slow-lane slot's, a probe's. A holder whose instance died frees it soon:
// event.HoldSkewMargin after the end, when another instance may reclaim it.
func (d *Dispatcher) holdEnd(now time.Time) time.Time {
	return now.Add(d.cfg.Client.Timeout + storeMargin)
}

// withinHold returns the context the request of an attempt holding a
// slow-lane slot or a probe until until (zero: neither) is sent with:
// ctx, ended at until when that comes before the request timeout would
// (the steps before the request, opening the secrets, the claim, the move
// to retrying, took longer than storeMargin; left that long, the request
// would run past its hold, and another attempt could take the slot or
// the probe while it is in flight: found by review, the probe's by
// helper 62's). cut reports, after the request, whether until ended it.
func (d *Dispatcher) withinHold(ctx context.Context, until time.Time) (sendCtx context.Context, cut func() bool) {
	if until.IsZero() {
		return ctx, func() bool { return false }
	}
	left := until.Sub(d.cfg.Now())
	if t := d.cfg.Client.Timeout; t > 0 && left >= t { // (a Client without a Timeout is bounded by the hold alone)
		return ctx, func() bool { return false }
	}
	sendCtx, cancel := context.WithTimeout(ctx, max(left, 0))
	return sendCtx, func() bool {
		cut := ctx.Err() == nil && errors.Is(sendCtx.Err(), context.DeadlineExceeded)
		cancel()
		return cut
	}
}

// slowSlot takes a slot of tenant's slow lane for an attempt to sub when
// sub is marked slow at now. Without a free slot, wait is how long the
// attempt is put off: about slowLaneFirstWait doubled for each time it
// was put off already (deferrals), at most MaxSlowLaneWait, jittered, so
// that a backlog of slow attempts comes back ever more rarely instead of
// every second. The slot's release is best effort (a failure is only
// logged, the hold ends by itself).
func (d *Dispatcher) slowSlot(ctx context.Context, tenant string, sub event.Subscription, now time.Time, deferrals int) (slot laneSlot, wait time.Duration, err error) {
	if !d.inLane(sub, now) {
		return noSlot(), 0, nil
	}
	if h, ok := ctx.Value(slotKey{}).(*heldSlot); ok && h.taken.CompareAndSwap(false, true) {
		return h.slot, 0, nil // taken by the wake before the attempt started
	}
	token, err := newToken()
	if err != nil {
		return noSlot(), 0, err
	}
	// Held for as long as one attempt takes: a holder whose instance
	// died frees its slot soon. The request is bounded by the hold
	// (withinHold).
	until := d.holdEnd(now)
	ok, err := d.cfg.Store.AcquireSlowSlot(ctx, tenant, token, now, until, d.cfg.TenantSlowConcurrency)
	if err != nil {
		return noSlot(), 0, err
	}
	if !ok {
		return noSlot(), laneBackoff(deferrals, d.cfg.Rand), nil
	}
	var once sync.Once
	return laneSlot{until: until, release: func() {
		once.Do(func() {
			// Released also when ctx has ended (the invocation's
			// deadline): the slot would otherwise stay held for its
			// whole hold.
			if err := d.cfg.Store.ReleaseSlowSlot(context.WithoutCancel(ctx), tenant, token); err != nil {
				d.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "slow-lane slot not released: it frees when its hold ends",
					slog.String("tenant", tenant), slog.String("subscription_id", sub.ID), slog.Any("error", err))
			}
		})
	}}, 0, nil
}

// laneBackoff is how long an attempt or a wake waits after the slow lane
// refused it the n-th time in a row (n from 0): slowLaneFirstWait doubled
// n times, at most MaxSlowLaneWait, jittered between half of that and all
// of it.
func laneBackoff(n int, r contract.JitterSource) time.Duration {
	w := min(slowLaneFirstWait<<min(n, 20), MaxSlowLaneWait)
	return w/2 + time.Duration(float64(w/2)*r.Float64())
}

// gate decides whether an attempt to sub may be made at now: wait > 0
// puts it off by that long, for reason. While the endpoint's circuit is
// open nothing is sent; with an EndpointRate, a second whose requests are
// used up waits for the next; a slow endpoint's attempt waits while its
// tenant's slow lane is full (slowSlot; deferrals: how often the attempt
// was put off already) or, unless it is a parked attempt being made
// (parked), while its subscription's wake is queued (behindWake), else
// holds slot until slot.release is called;
// once the circuit's open time has passed (half-open) one probe at a time
// is made (probe), the others wait. slot.release is never nil.
//
// sub may have been read a while ago (a round's subscriptions are read
// when its message starts): when this instance has opened the circuit
// since, the subscription is read again to see it as it is now.
func (d *Dispatcher) gate(ctx context.Context, tenant string, sub event.Subscription, now time.Time, deferrals int, parked bool) (wait time.Duration, reason string, probe bool, slot laneSlot, err error) {
	slot = noSlot()
	if !sub.CircuitOpenUntil.After(now) && d.circuits.until(tenant, sub.ID).After(now) {
		fresh, err := d.cfg.Store.GetSubscription(ctx, tenant, sub.ID)
		if err != nil && !errors.Is(err, event.ErrSubscriptionNotFound) {
			return 0, "", false, slot, err
		}
		if err == nil {
			sub = fresh
			d.circuits.seen(tenant, sub, now)
		} else {
			// Deleted meanwhile: the scheduled attempt's task (or wake)
			// finds it gone and closes the attempt.
			sub.CircuitOpenUntil = d.circuits.until(tenant, sub.ID)
		}
	}
	if w, reason, ok := d.putOff(sub, now); ok {
		return w, reason, false, slot, nil
	}
	// Before the rate cap: an attempt that only queues behind the wake
	// takes no place in its endpoint's second (it did, then the wake's
	// attempt needed another; found by review).
	if w, ok := d.behindWake(sub, now, parked); ok {
		return w, contract.DeferredBehindWake, false, slot, nil
	}
	if d.cfg.EndpointRate > 0 {
		ahead, err := d.cfg.Store.TakeRateToken(ctx, tenant, sub.ID, now, d.cfg.EndpointRate)
		if err != nil {
			return 0, "", false, slot, err
		}
		if ahead > 0 {
			// Its turn: the second ceil(ahead/rate) on, a little into
			// it (each second of the backlog gets about rate attempts
			// back, not all of them).
			turn := now.Truncate(time.Second).Add(time.Duration((ahead+d.cfg.EndpointRate-1)/d.cfg.EndpointRate) * time.Second)
			w := turn.Sub(now)
			return w + time.Duration(float64(100*time.Millisecond)*d.cfg.Rand.Float64()), contract.DeferredRateLimited, false, noSlot(), nil
		}
	}
	slot, wait, err = d.slowSlot(ctx, tenant, sub, now, deferrals)
	if err != nil || wait > 0 {
		return wait, contract.DeferredTenantBusy, false, slot, err
	}
	if sub.HalfOpen(now) {
		// The probe is held for as long as one attempt takes: a probe
		// whose instance died frees the endpoint soon. Its request is
		// bounded by the hold (withinHold): one probe at a time.
		until := d.holdEnd(now)
		probe, err := d.cfg.Store.AcquireProbe(ctx, tenant, sub.ID, now, until)
		if err != nil || !probe {
			slot.release() // the slow lane's slot goes back with the attempt
			// Until the holder's hold has surely ended (it took the probe
			// before now: its hold ends by until) and the skew margin past
			// it, when the store lets another take the probe over (as
			// putOff waits for a probe it reads held): back sooner, the
			// attempt was refused again if the holder died (found by
			// review).
			return d.spread(until.Sub(now) + event.HoldSkewMargin), contract.DeferredProbeBusy, false, noSlot(), err
		}
		return 0, "", true, slot, nil
	}
	return 0, "", false, slot, nil
}

// behindWake reports whether an attempt to sub at now that is not a
// parked one being made (parked) joins the attempts parked behind the
// subscription's queued wake instead of asking the slow lane for a slot:
// while sub is in the lane and its wake, due within MaxSlowLaneWait (a
// lane's wake always is), has not started. Else a new attempt took a slot
// as soon as one freed, while the attempts put off before it waited for
// their wake: a saturated lane served the newest attempts first (in the
// slow-neighbour load scenario 42-64% of a tenant's deliveries were its
// oldest events, 89-92% since; docs/delivery.md has the price). The wait
// is until the wake is due (a moment when it is due already); the wake
// makes the parked attempts oldest event first. The attempt is put off
// as contract.DeferredBehindWake (it was tenant_busy, and an ordered
// lane read as a full one). Not waited for (found by
// review): a wake due later (a circuit's, left queued by a success that
// closed the circuit, up to MaxBreakerCooldown and its spread away, when
// the wake due now that the success queues, sendEarlier, was not: a
// fault); a
// wake overdue by more than MaxSlowLaneWait (its invocation may have
// died: its marker stays live for wakeGrace, and every new attempt would
// park meanwhile, the lane empty); and any wake while the circuit is
// half-open, where a new attempt may be the probe, as before.
func (d *Dispatcher) behindWake(sub event.Subscription, now time.Time, parked bool) (time.Duration, bool) {
	if parked || !d.inLane(sub, now) || !sub.WakeQueuedUntil.After(now) || sub.HalfOpen(now) {
		return 0, false
	}
	due := sub.WakeQueuedUntil.Add(-wakeGrace)
	if due.Sub(now) > MaxSlowLaneWait || now.Sub(due) > MaxSlowLaneWait {
		return 0, false
	}
	return max(due.Sub(now), time.Millisecond), true
}

// putOff reports whether an attempt to sub, as read, must wait at now
// without asking the store anything: while its circuit is open (until it
// closes), or while another attempt holds its half-open circuit's probe
// (until the probe's hold ends, plus event.HoldSkewMargin: the store lets
// no one take the probe over before). The wait is spread (spread), so
// that the attempts put off do not all come back at the same moment.
func (d *Dispatcher) putOff(sub event.Subscription, now time.Time) (wait time.Duration, reason string, ok bool) {
	lapsed := sub.ProbeUntil.Add(event.HoldSkewMargin)
	switch {
	case sub.CircuitOpenUntil.After(now):
		return d.spread(sub.CircuitOpenUntil.Sub(now)), contract.DeferredCircuitOpen, true
	case sub.HalfOpen(now) && lapsed.After(now):
		return d.spread(lapsed.Sub(now)), contract.DeferredProbeBusy, true
	}
	return 0, "", false
}

// spread lengthens the wait w by up to half of BreakerCooldown, at
// random: an endpoint's attempts put off come back over that span, a few
// at a time, not all when its circuit closes.
func (d *Dispatcher) spread(w time.Duration) time.Duration {
	return w + time.Duration(float64(d.cfg.BreakerCooldown/2)*d.cfg.Rand.Float64())
}

// schedule records attempt n of e to sub as scheduled at due (not made)
// and queues its task, or, put off by the circuit breaker or the tenant's
// slow lane, parks it behind sub (one wake per subscription, not a task
// per attempt: a tenant far above its slow lane's rate loaded the retry
// queue every tenant shares with its put-offs, found by the slow-neighbour
// load scenario).
func (d *Dispatcher) schedule(ctx context.Context, tenant string, e event.Event, sub event.Subscription, n int, round string, due time.Time, reason string, recorded []event.Attempt) error {
	cur, ok, err := d.cfg.Store.ScheduleAttempt(ctx, tenant, e.ID, event.Attempt{
		SubscriptionID: sub.ID, Number: n, Round: round, Timestamp: event.FormatTime(d.cfg.Now()), NextAttemptAt: event.FormatTime(due),
	}, e.TTL)
	if err != nil {
		return err
	}
	if !ok {
		return d.resume(ctx, tenant, e, sub, cur, recorded) // made or being made meanwhile
	}
	d.cfg.Metrics.WebhookDeferred(tenant, sub.ID, reason)
	d.cfg.Logger.LogAttrs(ctx, slog.LevelInfo, "webhook attempt deferred",
		slog.String("tenant", tenant), slog.String("event_id", e.ID), slog.String("subscription_id", sub.ID),
		slog.Int("attempt", n), slog.String("reason", reason), slog.String("next_attempt_at", event.FormatTime(due)))
	switch reason {
	case contract.DeferredCircuitOpen, contract.DeferredProbeBusy, contract.DeferredTenantBusy, contract.DeferredBehindWake:
		return d.parkScheduled(ctx, tenant, e, cur, due)
	}
	return d.queue(ctx, tenant, e, sub.ID, n, due, cur)
}

// parkScheduled parks scheduled attempt a of e behind its subscription's
// circuit (park) and marks it queued (markQueued): a copy of the message
// then leaves it to the wake.
func (d *Dispatcher) parkScheduled(ctx context.Context, tenant string, e event.Event, a event.Attempt, due time.Time) error {
	// Before the item is parked: a wake already queued may make it.
	if err := d.holdFirst(ctx, tenant, e); err != nil {
		return err
	}
	if err := d.park(ctx, tenant, a.SubscriptionID, e.ID, a.Number, e.TTL, due); err != nil {
		return err
	}
	return d.markQueued(ctx, tenant, e, a)
}

// markQueued marks the follow-up of attempt a of e queued: a failure's
// (the next attempt's task), or a scheduled attempt's own (its task or
// parking), the latter only while it is still scheduled as a was (the
// same put-off): the wake may claim, make and fail the attempt before a
// late mark lands, and the mark would then stand for the failure's retry,
// which a copy of the message would skip (found by review).
func (d *Dispatcher) markQueued(ctx context.Context, tenant string, e event.Event, a event.Attempt) error {
	if a.Outcome == event.OutcomeScheduled {
		return d.cfg.Store.MarkScheduledFollowUp(ctx, tenant, e.ID, a.SubscriptionID, a.Number, a.Deferrals)
	}
	return d.cfg.Store.MarkFollowUp(ctx, tenant, e.ID, a.SubscriptionID, a.Number, event.FollowUpQueued)
}

// queue sends the task of attempt n of e to subID, due at due, then
// marks it queued on attempt marked (a failed attempt n-1, or n itself
// when scheduled; markQueued): a copy of the message that finds it marked
// does not send it again.
func (d *Dispatcher) queue(ctx context.Context, tenant string, e event.Event, subID string, n int, due time.Time, marked event.Attempt) error {
	if err := d.holdFirst(ctx, tenant, e); err != nil {
		return err
	}
	t := Task{Tenant: tenant, EventID: e.ID, SubscriptionID: subID, Attempt: n, DueAt: due, TTL: e.TTL}
	if err := d.cfg.Queue.Send(ctx, t, min(max(due.Sub(d.cfg.Now()), 0), MaxQueueDelay)); err != nil {
		return fmt.Errorf("queue attempt %d of event %s to %s: %w", n, e.ID, subID, err)
	}
	return d.markQueued(ctx, tenant, e, marked)
}

// watchSlow opens the subscription's circuit (for BreakerCooldown) when
// the request it is watching is still unanswered after SlowAfter. The
// returned function ends the watch, waiting for an opening under way.
func (d *Dispatcher) watchSlow(ctx context.Context, tenant, eventID, subID, url string) (stop func()) {
	if d.cfg.SlowAfter < 0 {
		return func() {}
	}
	done := make(chan struct{})
	timer := time.AfterFunc(d.cfg.SlowAfter, func() {
		defer close(done)
		d.openCircuit(ctx, tenant, eventID, subID, url, d.cfg.Now(), d.cfg.BreakerCooldown, "slow")
	})
	return func() {
		if !timer.Stop() {
			<-done
		}
	}
}

// openCircuit opens subID's circuit for cooldown from now, decided at at
// (a failed request's start, its run's start, or the time a watch found a
// request still unanswered), on account of a request to url, and reports
// it; the breaker is advisory, so a failure to open it is only logged. A
// subscription moved to another server than url's since, or with a
// success of a request started at or after at, is left as it is (store
// OpenCircuit).
func (d *Dispatcher) openCircuit(ctx context.Context, tenant, eventID, subID, url string, at time.Time, cooldown time.Duration, cause string) {
	until := d.cfg.Now().Add(cooldown)
	opened, err := d.cfg.Store.OpenCircuit(ctx, tenant, subID, url, at, until, cooldown)
	if err == nil {
		d.circuits.opened(tenant, subID, until)
	}
	if errors.Is(err, event.ErrSubscriptionMoved) {
		// The request went to a server the subscription has left: the
		// new one's circuit is not the old one's (found by review: a
		// failed probe of the old server closed the new one for up to an
		// hour).
		d.cfg.Logger.LogAttrs(ctx, slog.LevelInfo, "circuit not opened: the subscription moved to another server", slog.String("tenant", tenant),
			slog.String("event_id", eventID), slog.String("subscription_id", subID), slog.String("cause", cause))
		return
	}
	if err != nil {
		d.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "circuit not opened", slog.String("tenant", tenant), slog.String("event_id", eventID),
			slog.String("subscription_id", subID), slog.String("cause", cause), slog.String("error", err.Error()))
		return
	}
	if opened {
		d.cfg.Metrics.CircuitOpened(tenant, subID, cause)
		d.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, contract.LogMsgCircuitOpened, slog.String(contract.LogFieldTenant, tenant), slog.String("event_id", eventID),
			slog.String(contract.LogFieldSubscriptionID, subID), slog.String("cause", cause), slog.String("until", event.FormatTime(until)))
	}
}

// probeCooldown is how long the circuit a probe to sub failed reopens
// stays open: twice its latest opening (sub.CircuitCooldown), at most
// MaxBreakerCooldown. The opening after Threshold failures in a row is
// for BreakerCooldown (followUp), so each failed probe doubles it. (It
// was counted from the consecutive failures, which include a burst of
// attempts in flight when the circuit opened: after 6 at a threshold of
// 2 the first failed probe reopened it for 32 times BreakerCooldown;
// found by review.) A circuit opened before the opening's cooldown was
// kept is counted as before, from the consecutive failures.
func (d *Dispatcher) probeCooldown(sub event.Subscription) time.Duration {
	if sub.CircuitCooldown > 0 {
		return min(2*sub.CircuitCooldown, MaxBreakerCooldown)
	}
	c := d.cfg.BreakerCooldown
	for i := d.cfg.BreakerThreshold; i < max(sub.ConsecutiveFailures+1, d.cfg.BreakerThreshold+1) && c < MaxBreakerCooldown; i++ {
		c *= 2
	}
	return min(c, MaxBreakerCooldown)
}

// next returns the delay before the attempt after failed attempt n, and
// whether there is one. A receiver's Retry-After lengthens the schedule's
// delay, up to the schedule's longest step; it never shortens it.
func (d *Dispatcher) next(n int, retryAfter time.Duration) (time.Duration, bool) {
	delay, ok := d.cfg.Schedule.Next(n, d.cfg.Rand)
	if ok && retryAfter > delay {
		// The jittered step may already exceed the longest one: keep it.
		delay = max(delay, min(retryAfter, d.cfg.Schedule[len(d.cfg.Schedule)-1]))
	}
	return delay, ok
}

// resume acts on an attempt found recorded: a pending one belongs to a
// live claim (errInProgress: the message is handled again later, when it
// is finished or its claim has lapsed); a finished one's consequences are
// applied again.
func (d *Dispatcher) resume(ctx context.Context, tenant string, e event.Event, sub event.Subscription, a event.Attempt, recorded []event.Attempt) error {
	if !a.Final() {
		return errInProgress
	}
	return d.followUp(ctx, tenant, e, sub, a, recorded)
}

// followUp applies what finished attempt a calls for, each step
// idempotent so that a copy of the message may repeat it: a delivery
// ends the subscription's run of failures, 410 Gone removes the
// subscription (or, when it has moved to another URL since, queues the
// next attempt, due at once), a failure extends the run (disabling the subscription
// after DisableAfter) and queues the next attempt's task unless it is
// queued, made or not due to be made.
func (d *Dispatcher) followUp(ctx context.Context, tenant string, e event.Event, sub event.Subscription, a event.Attempt, recorded []event.Attempt) error {
	at, err := time.Parse(time.RFC3339Nano, a.Timestamp)
	if err != nil {
		return fmt.Errorf("attempt %s #%d: timestamp: %w", sub.ID, a.Number, err)
	}
	switch a.Outcome {
	case event.OutcomeDelivered:
		closed, err := d.cfg.Store.SubscriptionSucceeded(ctx, tenant, sub.ID, a.URL, at)
		if err != nil && !errors.Is(err, event.ErrSubscriptionNotFound) {
			return err
		}
		if closed {
			// The delivery closed the circuit. Not one from a server the
			// subscription has left, nor one older than the failures
			// recorded since: this instance may have opened the circuit
			// it has now (found by review). Nor one that found nothing to
			// close (a healthy subscription: no follow-up write); a
			// circuit this instance remembers that another instance's
			// success closed is forgotten at gate's next read.
			d.circuits.closed(tenant, sub.ID)
			// The attempts parked behind it go now, not when the
			// circuit's wake comes.
			d.sendEarlier(ctx, tenant, sub, d.cfg.Now())
		}
		return nil
	case event.OutcomeGone:
		// Zapier REST Hooks: 410 Gone unsubscribes, unless the tenant
		// moved the subscription to another URL while the request was
		// under way: the old URL's answer says nothing about the new
		// one (found by review: the PATCH was undone by deleting the
		// subscription). The event goes on to the new URL at once, as
		// attempt n+1.
		if a.FollowUp != "" {
			return nil // moved: attempt n+1 is queued already
		}
		err := d.cfg.Store.DeleteGoneSubscription(ctx, tenant, sub.ID, a.URL)
		switch {
		case errors.Is(err, event.ErrSubscriptionNotFound):
			return nil
		case errors.Is(err, event.ErrSubscriptionMoved):
			return d.chain(ctx, tenant, e, sub, a, recorded, at, "410 Gone from a URL the subscription has left: kept, the event goes on to its new URL")
		case err != nil:
			return err
		}
		d.log(ctx, slog.LevelWarn, "subscription removed: the target answered 410 Gone", tenant, e.ID, sub.ID)
		return nil
	}
	if a.FollowUp != "" {
		return nil // acted on already: a copy of the message
	}
	run, err := d.cfg.Store.SubscriptionFailed(ctx, tenant, sub.ID, a.URL, at, d.cfg.DisableAfter,
		fmt.Sprintf("failing without a success for %s or more (last: %s)", d.cfg.DisableAfter, describe(a)))
	if err != nil && !errors.Is(err, event.ErrSubscriptionNotFound) {
		return err
	}
	if run.Disabled {
		d.cfg.Metrics.SubscriptionDisabled()
		d.log(ctx, slog.LevelError, "subscription disabled", tenant, e.ID, sub.ID)
	}
	switch {
	case a.ProbeCooldown > 0:
		// A failed probe: still broken. Open the circuit again, for
		// longer (the time recorded with the attempt: the same when
		// this follow-up is applied again after a fault; before, a
		// fault between the outcome and the reopening left the circuit
		// open for BreakerCooldown), and free the probe (its delivery
		// would have closed it). Decided at the failure's time: a
		// success of a request started since (another probe, once this
		// one's hold lapsed after a stop) keeps the circuit closed.
		d.openCircuit(ctx, tenant, e.ID, sub.ID, a.URL, at, a.ProbeCooldown, "probe")
	case run.Consecutive >= d.cfg.BreakerThreshold:
		// For BreakerCooldown: failures past the threshold here are
		// attempts that were in flight when the circuit opened, not
		// failed probes. Doubling once per failure made a burst of
		// failures open the circuit for up to MaxBreakerCooldown (found
		// by review). Decided at the run's start: refused when a
		// success ended the run since this failure counted in it (a
		// request that started after the run began got through), as
		// the run's count then no longer stands; not refused by an
		// older success that did not end it.
		d.openCircuit(ctx, tenant, e.ID, sub.ID, a.URL, runStart(run, at), d.cfg.BreakerCooldown, "failures")
	}
	if run.Disabled {
		a.NextAttemptAt = ""
	}
	return d.chain(ctx, tenant, e, sub, a, recorded, time.Time{}, "")
}

// chain queues the task of attempt a.Number+1, due at a.NextAttemptAt
// (or at due, when set: a 410 Gone from a URL the subscription has left,
// logged with why), unless it is queued (a.FollowUp) or made already, and
// marks a's follow-up. Without a next attempt it marks the follow-up done.
func (d *Dispatcher) chain(ctx context.Context, tenant string, e event.Event, sub event.Subscription, a event.Attempt, recorded []event.Attempt, due time.Time, why string) error {
	if a.FollowUp != "" {
		return nil // acted on already: a copy of the message
	}
	if why != "" {
		d.log(ctx, slog.LevelWarn, why, tenant, e.ID, sub.ID)
	}
	if _, made := find(recorded, sub.ID, a.Number+1); made {
		return d.cfg.Store.MarkFollowUp(ctx, tenant, e.ID, sub.ID, a.Number, event.FollowUpQueued)
	}
	if due.IsZero() {
		if a.NextAttemptAt == "" {
			// Failed for good, and so recoverable: a recovery through
			// the API (the subscription enabled again) is another
			// message of the event, which could settle it before a
			// first round stopped short has recorded its other
			// attempts (found by review). Held as a queued follow-up is.
			if err := d.holdFirst(ctx, tenant, e); err != nil {
				return err
			}
			return d.cfg.Store.MarkFollowUp(ctx, tenant, e.ID, sub.ID, a.Number, event.FollowUpDone)
		}
		var err error
		if due, err = time.Parse(time.RFC3339Nano, a.NextAttemptAt); err != nil {
			return fmt.Errorf("attempt %s #%d: next_attempt_at: %w", sub.ID, a.Number, err)
		}
	}
	return d.queue(ctx, tenant, e, sub.ID, a.Number+1, due, a)
}

// signingSecrets opens the secrets that sign a message to sub at now: the
// newest, and the previous one during a rotation's overlap. A previous
// secret that will never open (webhook.ErrInvalidSecret) is left out, so
// the newest still signs; any other failure (KMS unavailable) is returned
// and the message retried.
func (d *Dispatcher) signingSecrets(ctx context.Context, tenant string, sub event.Subscription, now time.Time) ([]webhook.Secret, error) {
	stored := sub.SigningSecrets(now)
	out := make([]webhook.Secret, 0, len(stored))
	for i, raw := range stored {
		sec, err := d.cfg.Secrets.Open(ctx, tenant, sub.ID, raw)
		if i > 0 && errors.Is(err, webhook.ErrInvalidSecret) {
			d.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "previous signing secret does not open; signing with the newest only",
				slog.String("tenant", tenant), slog.String("subscription_id", sub.ID), slog.String("error", err.Error()))
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("subscription %s: stored secret: %w", sub.ID, err)
		}
		out = append(out, sec)
	}
	return out, nil
}

func describe(a event.Attempt) string {
	if a.StatusCode != 0 {
		return fmt.Sprintf("HTTP %d", a.StatusCode)
	}
	return a.Error
}

// maxSettleRounds bounds settle's tries against concurrent writers.
const maxSettleRounds = 5

// Expected returns the status the latest attempts of an event call for,
// from latest, the latest attempt to each subscription it was attempted
// to: delivered when each of them was delivered, failed otherwise; ok is
// false while one is pending or scheduled (whoever finishes it decides)
// or when there is none.
func Expected(latest []event.Attempt) (status event.Status, ok bool) {
	if len(latest) == 0 {
		return "", false
	}
	status = event.Delivered
	for _, a := range latest {
		if !a.Final() {
			return "", false
		}
		if a.Outcome != event.OutcomeDelivered {
			status = event.Failed
		}
	}
	return status, true
}

// Latest returns the latest attempt to each subscription, ordered by
// subscription id (attempts as ListAttempts returns them).
func Latest(attempts []event.Attempt) []event.Attempt {
	var out []event.Attempt
	for _, a := range attempts {
		if n := len(out); n > 0 && out[n-1].SubscriptionID == a.SubscriptionID {
			if a.Number > out[n-1].Number {
				out[n-1] = a
			}
			continue
		}
		out = append(out, a)
	}
	return out
}

// settle moves the event to the status its subscriptions' latest attempts
// call for (Expected), along the status machine: failed reaches delivered
// through retrying. Each step is conditional on the status read and on no
// newer attempt; a lost race reads both again. An event a workflow engine
// acknowledged (delivered) stays delivered.
func (d *Dispatcher) settle(ctx context.Context, tenant, eventID string) error {
	_, err := d.settleHeld(ctx, tenant, eventID)
	return err
}

// settleHeld is settle, reporting whether a round's hold (a redelivery
// round's or the first round's marker, running) stopped it.
func (d *Dispatcher) settleHeld(ctx context.Context, tenant, eventID string) (held bool, err error) {
	for range maxSettleRounds {
		// The attempts first: while one is pending or scheduled (a
		// request under way, an attempt put off by an open circuit or a
		// rate cap) there is nothing to settle, and the event need not be
		// read. Settle's conditions hold the decision to both reads, in
		// whichever order they were made: the status it was taken from,
		// and no attempt after the latest ones (an attempt that is final
		// stays final).
		attempts, running, err := d.cfg.Store.SettleAttempts(ctx, tenant, eventID)
		if err != nil || running {
			// A round that has not recorded its attempts: the round
			// settles the event once it has (round).
			return running && err == nil, err
		}
		latest := Latest(attempts)
		target, ok := Expected(latest)
		if !ok {
			return false, nil
		}
		cur, err := d.cfg.Store.Get(ctx, tenant, eventID)
		if errors.Is(err, event.ErrNotFound) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		if cur.Status == event.Retrying {
			// A redelivery round may have started (failed -> retrying,
			// with its running marker) between the two reads: read the
			// attempts again, after the status, so its hold is seen
			// (found by review: the settle moved the new round's event
			// back to failed). No round starts from retrying, so the
			// write's condition on it covers the rest.
			if attempts, running, err = d.cfg.Store.SettleAttempts(ctx, tenant, eventID); err != nil || running {
				return running && err == nil, err
			}
			latest = Latest(attempts)
			if target, ok = Expected(latest); !ok {
				return false, nil
			}
		}
		if cur.Status == target || cur.Status == event.Delivered {
			return false, nil
		}
		to := target
		if cur.Status == event.Failed {
			to = event.Retrying // failed -> retrying -> delivered
		}
		err = d.cfg.Store.Settle(ctx, tenant, eventID, cur.Status, to, latest)
		if err == nil && to == target || errors.Is(err, event.ErrNotFound) {
			return false, nil
		}
		if err != nil && !isTransitionError(err) && !errors.Is(err, event.ErrStaleAttempts) {
			return false, err
		}
	}
	return false, fmt.Errorf("settle event %s: its status or attempts kept changing", eventID)
}

func isTransitionError(err error) bool {
	var te *event.TransitionError
	return errors.As(err, &te)
}

func (d *Dispatcher) log(ctx context.Context, level slog.Level, msg, tenant, eventID, subID string) {
	d.cfg.Logger.LogAttrs(ctx, level, msg, slog.String("tenant", tenant), slog.String("event_id", eventID), slog.String("subscription_id", subID))
}

// newToken returns 16 random bytes in hex: a claim's owner.
func newToken() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return hex.EncodeToString(b[:]), nil
}

// circuitKey names one subscription's circuit.
type circuitKey struct{ tenant, subID string }

// circuits holds, per subscription, the end of the circuit this instance
// last opened or saw open: a hint that makes gate read the subscription
// again, never a reason to defer on its own. Entries that have ended are
// dropped as the map grows.
type circuits struct {
	mu   sync.Mutex
	open map[circuitKey]time.Time
}

// maxCircuits bounds the entries kept before ended ones are dropped.
const maxCircuits = 1024

func (c *circuits) until(tenant, subID string) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.open[circuitKey{tenant, subID}]
}

// opened records that subID's circuit is open until until (or longer).
func (c *circuits) opened(tenant, subID string, until time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := circuitKey{tenant, subID}
	if until.After(c.open[k]) {
		if len(c.open) >= maxCircuits {
			for k, u := range c.open {
				if u.Before(until.Add(-MaxBreakerCooldown)) {
					delete(c.open, k)
				}
			}
		}
		c.open[k] = until
	}
}

// closed forgets subID's circuit.
func (c *circuits) closed(tenant, subID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.open, circuitKey{tenant, subID})
}

// seen records sub as just read from the store at now: its circuit's end
// as it is, forgotten when it is not open.
func (c *circuits) seen(tenant string, sub event.Subscription, now time.Time) {
	if sub.CircuitOpenUntil.After(now) {
		c.opened(tenant, sub.ID, sub.CircuitOpenUntil)
		return
	}
	c.closed(tenant, sub.ID)
}

// runStart returns when the run of failures run counted in began, or at
// when it does not say.
func runStart(run event.FailureRun, at time.Time) time.Time {
	if run.Since.IsZero() {
		return at
	}
	return run.Since
}
