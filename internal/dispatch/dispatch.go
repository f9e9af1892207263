// Package dispatch is webhook push delivery: it POSTs each new event to
// every matching subscription of its tenant (Standard Webhooks signatures,
// package webhook), records every attempt, retries failures on a schedule
// without blocking the queue behind them, and moves the event along seed
// 000's status machine.
//
// Work arrives on two SQS queues. The delivery queue carries new events
// (the stream consumer's messages): one delivery round each, attempt 1 to
// every matching subscription. The retry queue carries Tasks: the next
// attempt to one subscription after a failure, or a whole new round after
// POST /v1/events/{id}/redeliver. SQS delays a message at most 15 minutes,
// so a Task due later is sent again with the remaining delay until it is
// due: a retry waits on the retry queue, never in front of other work.
//
// Statuses: a round's outcome is the latest attempt of every matching
// subscription. All delivered (or gone): the event becomes delivered.
// Otherwise it becomes failed; the retry of a failed event first moves it
// to retrying (retry_count + 1). Only allowed transitions are made: an
// event a workflow engine already acknowledged (delivered) stays so.
//
// Delivery is at least once: a crash between the POST and the attempt's
// record sends again, with the same webhook-id (the event id), which
// receivers use to deduplicate. A recorded attempt is never sent twice.
package dispatch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/triggers-dev/triggers/internal/delivery"
	"github.com/triggers-dev/triggers/internal/event"
	"github.com/triggers-dev/triggers/internal/webhook"
)

// Store is what the dispatcher needs from the events table;
// *store.Store implements it.
type Store interface {
	Get(ctx context.Context, tenant, id string) (event.Event, error)
	Transition(ctx context.Context, tenant, id string, from []event.Status, to event.Status) (event.Event, error)
	ListSubscriptions(ctx context.Context, tenant string) ([]event.Subscription, error)
	GetSubscription(ctx context.Context, tenant, id string) (event.Subscription, error)
	DeleteSubscription(ctx context.Context, tenant, id string) error
	SubscriptionSucceeded(ctx context.Context, tenant, id string) error
	SubscriptionFailed(ctx context.Context, tenant, id string, now time.Time, disableAfter time.Duration, reason string) (bool, error)
	PutAttempt(ctx context.Context, tenant, eventID string, a event.Attempt, ttl int64) (bool, error)
	ListAttempts(ctx context.Context, tenant, eventID string) ([]event.Attempt, error)
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
	// DueAt is when the task may run.
	DueAt time.Time `json:"due_at"`
}

// Queue sends Tasks to the retry queue; SQSQueue is the deployed one.
type Queue interface {
	// Send queues t, invisible for delay (at most MaxQueueDelay).
	Send(ctx context.Context, t Task, delay time.Duration) error
}

// MaxQueueDelay is SQS's longest message delay.
const MaxQueueDelay = 15 * time.Minute

// Defaults of Config.
const (
	DefaultDisableAfter = webhook.DefaultDisableAfter
)

// Config configures a Dispatcher.
type Config struct {
	// Store is the events table. Required.
	Store Store
	// Queue is the retry queue. Required.
	Queue Queue
	// Client sends the webhooks. Default: webhook.NewHTTPClient with its
	// defaults (SSRF checks at every connection, 10 s timeout).
	Client *http.Client
	// Schedule spaces the retries. Default: webhook.DefaultSchedule().
	Schedule webhook.Schedule
	// DisableAfter disables a subscription whose failures have lasted this
	// long without a success. Default: DefaultDisableAfter.
	DisableAfter time.Duration
	// Logger receives a line per attempt. Default: slog.Default().
	Logger *slog.Logger
	// Now is the clock. Default: time.Now.
	Now func() time.Time
	// Rand jitters the retry delays. Default: math/rand/v2.
	Rand webhook.Random
	// Metrics counts attempts by outcome and disabled subscriptions
	// (*emf.Writer implements it). Default: none.
	Metrics Metrics
	// Secrets opens the subscriptions' stored signing secrets (sealed
	// with KMS: *secretbox.Box). Default: plain "whsec_" secrets only.
	Secrets Secrets
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
}

type nopMetrics struct{}

func (nopMetrics) WebhookAttempt(string) {}
func (nopMetrics) SubscriptionDisabled() {}

// Dispatcher delivers events to subscriptions.
type Dispatcher struct {
	cfg Config
}

type defaultRand struct{}

func (defaultRand) Float64() float64 { return rand.Float64() }

// New returns a Dispatcher.
func New(cfg Config) (*Dispatcher, error) {
	if cfg.Store == nil || cfg.Queue == nil {
		return nil, errors.New("dispatch: Config.Store and Config.Queue are required")
	}
	if cfg.Client == nil {
		cfg.Client = webhook.NewHTTPClient(webhook.ClientOptions{})
	}
	if cfg.Schedule == nil {
		cfg.Schedule = webhook.DefaultSchedule()
	}
	if err := cfg.Schedule.Validate(); err != nil {
		return nil, fmt.Errorf("dispatch: %w", err)
	}
	if cfg.DisableAfter <= 0 {
		cfg.DisableAfter = DefaultDisableAfter
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
	return &Dispatcher{cfg: cfg}, nil
}

// HandleEvent makes the first delivery round of a new event.
func (d *Dispatcher) HandleEvent(ctx context.Context, tenant, eventID string) error {
	return d.round(ctx, tenant, eventID, false)
}

// HandleTask runs a Task from the retry queue: sent again with the
// remaining delay while it is not due, then a retry or a redelivery round.
func (d *Dispatcher) HandleTask(ctx context.Context, t Task) error {
	if wait := t.DueAt.Sub(d.cfg.Now()); wait > 0 {
		return d.cfg.Queue.Send(ctx, t, min(wait, MaxQueueDelay))
	}
	if t.SubscriptionID == "" {
		return d.round(ctx, t.Tenant, t.EventID, true)
	}
	e, err := d.cfg.Store.Get(ctx, t.Tenant, t.EventID)
	if errors.Is(err, event.ErrNotFound) {
		d.log(ctx, slog.LevelInfo, "webhook retry dropped: the event expired", t.Tenant, t.EventID, t.SubscriptionID)
		return nil
	}
	if err != nil {
		return err
	}
	sub, err := d.cfg.Store.GetSubscription(ctx, t.Tenant, t.SubscriptionID)
	if errors.Is(err, event.ErrSubscriptionNotFound) || err == nil && sub.Disabled {
		d.log(ctx, slog.LevelInfo, "webhook retry dropped: the subscription was deleted or disabled", t.Tenant, t.EventID, t.SubscriptionID)
		return d.settle(ctx, t.Tenant, e)
	}
	if err != nil {
		return err
	}
	// An automatic retry of a failed event: failed -> retrying.
	if e.Status == event.Failed {
		if moved, err := d.cfg.Store.Transition(ctx, t.Tenant, e.ID, []event.Status{event.Failed}, event.Retrying); err == nil {
			e = moved
		} else if !isTransitionError(err) {
			return err
		}
	}
	recorded, err := d.cfg.Store.ListAttempts(ctx, t.Tenant, e.ID)
	if err != nil {
		return err
	}
	if err := d.attempt(ctx, t.Tenant, e, sub, t.Attempt, recorded); err != nil {
		return err
	}
	return d.settle(ctx, t.Tenant, e)
}

// round sends the event to every matching, enabled subscription: attempt
// 1 for a new event, the next number for a redelivery.
func (d *Dispatcher) round(ctx context.Context, tenant, eventID string, redeliver bool) error {
	e, err := d.cfg.Store.Get(ctx, tenant, eventID)
	if errors.Is(err, event.ErrNotFound) {
		return nil // expired before delivery: nothing to send
	}
	if err != nil {
		return err
	}
	subs, err := d.matching(ctx, tenant, e.Type)
	if err != nil {
		return err
	}
	if len(subs) == 0 {
		if redeliver {
			// Nothing left to deliver to: the redelivery's retrying goes
			// back to failed rather than staying retrying for ever.
			if _, err := d.cfg.Store.Transition(ctx, tenant, e.ID, []event.Status{event.Retrying}, event.Failed); err != nil && !isTransitionError(err) {
				return err
			}
			d.log(ctx, slog.LevelWarn, "redelivery dropped: no enabled subscription matches the event", tenant, e.ID, "")
		}
		return nil
	}
	recorded, err := d.cfg.Store.ListAttempts(ctx, tenant, e.ID)
	if err != nil {
		return err
	}
	for _, sub := range subs {
		n := 1
		if redeliver {
			n = lastNumber(recorded, sub.ID) + 1
		}
		if err := d.attempt(ctx, tenant, e, sub, n, recorded); err != nil {
			return err
		}
	}
	return d.settle(ctx, tenant, e)
}

func (d *Dispatcher) matching(ctx context.Context, tenant, eventType string) ([]event.Subscription, error) {
	all, err := d.cfg.Store.ListSubscriptions(ctx, tenant)
	if err != nil {
		return nil, err
	}
	var out []event.Subscription
	for _, s := range all {
		if !s.Disabled && s.Matches(eventType) {
			out = append(out, s)
		}
	}
	return out, nil
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

// attempt makes attempt number n of e to sub, unless it is recorded
// already (a queue message delivered twice), then records it and acts on
// its outcome: the subscription's failure run, its removal on 410, the
// next retry.
func (d *Dispatcher) attempt(ctx context.Context, tenant string, e event.Event, sub event.Subscription, n int, recorded []event.Attempt) error {
	for _, a := range recorded {
		if a.SubscriptionID == sub.ID && a.Number == n {
			return nil
		}
	}
	now := d.cfg.Now()
	secrets, err := d.signingSecrets(ctx, tenant, sub, now)
	if err != nil {
		return err
	}
	// The webhook body: the event as GET /v1/events/{id} returns it at the
	// time of the attempt (the stream consumer's encoding).
	body, err := delivery.MarshalEvent(e)
	if err != nil {
		return err
	}
	res := webhook.Send(ctx, d.cfg.Client, webhook.Request{URL: sub.URL, MsgID: e.ID, Body: body, Secrets: secrets, Now: now})
	a := event.Attempt{
		SubscriptionID: sub.ID, Number: n, Timestamp: event.FormatTime(now),
		Outcome: string(res.Outcome), StatusCode: res.StatusCode, LatencyMs: res.Latency.Milliseconds(),
		Response: res.ResponseBody, Error: res.Error,
	}
	var next time.Duration
	retry := false
	if res.Outcome == webhook.Failed {
		next, retry = d.cfg.Schedule.Next(n, d.cfg.Rand)
		if retry {
			a.NextAttemptAt = event.FormatTime(now.Add(next))
		}
	}
	if _, err := d.cfg.Store.PutAttempt(ctx, tenant, e.ID, a, e.TTL); err != nil {
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

	switch res.Outcome {
	case webhook.Delivered:
		if err := d.cfg.Store.SubscriptionSucceeded(ctx, tenant, sub.ID); err != nil && !errors.Is(err, event.ErrSubscriptionNotFound) {
			return err
		}
	case webhook.Gone:
		// Zapier REST Hooks: 410 Gone unsubscribes.
		if err := d.cfg.Store.DeleteSubscription(ctx, tenant, sub.ID); err != nil && !errors.Is(err, event.ErrSubscriptionNotFound) {
			return err
		}
		d.log(ctx, slog.LevelWarn, "subscription removed: the target answered 410 Gone", tenant, e.ID, sub.ID)
	default:
		disabled, err := d.cfg.Store.SubscriptionFailed(ctx, tenant, sub.ID, now, d.cfg.DisableAfter,
			fmt.Sprintf("failing without a success for %s or more (last: %s)", d.cfg.DisableAfter, describe(res)))
		if err != nil && !errors.Is(err, event.ErrSubscriptionNotFound) {
			return err
		}
		if disabled {
			d.cfg.Metrics.SubscriptionDisabled()
			d.log(ctx, slog.LevelError, "subscription disabled", tenant, e.ID, sub.ID)
			return nil
		}
		if retry {
			t := Task{Tenant: tenant, EventID: e.ID, SubscriptionID: sub.ID, Attempt: n + 1, DueAt: now.Add(next)}
			if err := d.cfg.Queue.Send(ctx, t, min(next, MaxQueueDelay)); err != nil {
				return fmt.Errorf("queue the retry of event %s to %s: %w", e.ID, sub.ID, err)
			}
		}
	}
	return nil
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

func describe(a webhook.Attempt) string {
	if a.StatusCode != 0 {
		return fmt.Sprintf("HTTP %d", a.StatusCode)
	}
	return a.Error
}

// settle moves the event to the status its subscriptions' latest attempts
// call for: delivered when every matching subscription's latest attempt
// delivered (or the subscription is gone), failed otherwise. A disabled
// subscription still counts: the event was not delivered to it.
func (d *Dispatcher) settle(ctx context.Context, tenant string, e event.Event) error {
	all, err := d.cfg.Store.ListSubscriptions(ctx, tenant)
	if err != nil {
		return err
	}
	var subs []event.Subscription
	for _, s := range all {
		if s.Matches(e.Type) {
			subs = append(subs, s)
		}
	}
	attempts, err := d.cfg.Store.ListAttempts(ctx, tenant, e.ID)
	if err != nil {
		return err
	}
	latest := map[string]event.Attempt{}
	for _, a := range attempts {
		if a.Number >= latest[a.SubscriptionID].Number {
			latest[a.SubscriptionID] = a
		}
	}
	target := event.Delivered
	for _, s := range subs {
		a, ok := latest[s.ID]
		if !ok {
			continue // subscribed after this event's round
		}
		if a.Outcome == event.OutcomeFailed {
			target = event.Failed
		}
	}
	// Reach target along the status machine from wherever the event is
	// now; another writer may move it meanwhile, so re-read and retry.
	for range 3 {
		cur, err := d.cfg.Store.Get(ctx, tenant, e.ID)
		if errors.Is(err, event.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		from := cur.Status
		if from == target || from == event.Delivered {
			return nil
		}
		to := target
		if from == event.Failed {
			to = event.Retrying // failed -> retrying -> delivered
			if target == event.Failed {
				return nil
			}
		}
		_, err = d.cfg.Store.Transition(ctx, tenant, e.ID, []event.Status{from}, to)
		if err != nil && !isTransitionError(err) {
			return err
		}
	}
	return nil
}

func isTransitionError(err error) bool {
	var te *event.TransitionError
	return errors.As(err, &te)
}

func (d *Dispatcher) log(ctx context.Context, level slog.Level, msg, tenant, eventID, subID string) {
	d.cfg.Logger.LogAttrs(ctx, level, msg, slog.String("tenant", tenant), slog.String("event_id", eventID), slog.String("subscription_id", subID))
}
