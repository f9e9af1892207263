package httpapi

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/triggers-dev/triggers/contract"
	"github.com/triggers-dev/triggers/internal/event"
	"github.com/triggers-dev/triggers/internal/webhook"
)

// SubscriptionStore keeps webhook subscriptions and delivery attempts;
// *store.Store implements it.
type SubscriptionStore interface {
	CreateSubscription(ctx context.Context, tenant string, sub event.Subscription) error
	// CheckSubscriptionLimit fails with CreateSubscription's error for a
	// tenant that holds the most subscriptions it may; a create asks it
	// before sealing a secret. CreateSubscription still enforces the limit.
	CheckSubscriptionLimit(ctx context.Context, tenant string) error
	ListSubscriptions(ctx context.Context, tenant string) ([]event.Subscription, error)
	DeleteSubscription(ctx context.Context, tenant, id string) error
	GetSubscription(ctx context.Context, tenant, id string) (event.Subscription, error)
	UpdateSubscription(ctx context.Context, tenant, id string, p event.SubscriptionPatch, now time.Time) (event.Subscription, error)
	RotateSecret(ctx context.Context, tenant, id, secret string, now, overlapUntil time.Time) (event.Subscription, error)
	ListSubscriptionAttempts(ctx context.Context, q event.AttemptsQuery) (event.AttemptsPage, error)
	ListAttempts(ctx context.Context, tenant, eventID string) ([]event.Attempt, error)
	StartRedelivery(ctx context.Context, tenant string, e event.Event, token string, at time.Time) error
}

// Webhooks configures webhook push delivery's routes. With Config.Webhooks
// nil (webhook delivery not deployed) the subscription, attempts,
// redeliver and recover routes answer 404 webhooks_disabled.
type Webhooks struct {
	// Store keeps subscriptions and attempts. Required.
	Store SubscriptionStore
	// Redeliver queues redelivery round round of the tenant's failed event
	// e, asked for at at: a new delivery round to every matching
	// subscription (the webhook retry queue; dispatch.Redeliver).
	// Required.
	Redeliver func(ctx context.Context, tenant string, e event.Event, round string, at time.Time) error
	// Recover queues recovery id of the tenant's subscription
	// subscriptionID over the events of [since, until), asked for at at
	// (the webhook retry queue; dispatch.Recover). Required.
	Recover func(ctx context.Context, tenant, subscriptionID, id string, since, until, at time.Time) error
	// NewRound names a redelivery round or a recovery. Default: 128 random bits
	// (crypto/rand) in hex.
	NewRound func() (string, error)
	// CheckTarget decides whether a subscription's URL may be called:
	// https, and every address its host resolves to public (SSRF). The
	// webhook function checks again at every connection.
	// Default: webhook.ValidateTarget with the system resolver.
	CheckTarget func(ctx context.Context, rawURL string) error
	// RotationOverlap is how long the previous secret keeps signing after
	// a rotation, so receivers can switch. Default: DefaultRotationOverlap.
	RotationOverlap time.Duration
	// Secrets seals each new signing secret (KMS, *secretbox.Box): only
	// the sealed form is stored; the plain secret is shown once, in the
	// response. Required.
	Secrets SecretSealer
}

// SecretSealer seals a subscription's signing secret for storage;
// *secretbox.Box implements it.
type SecretSealer interface {
	Seal(ctx context.Context, tenant, subscriptionID string, secret webhook.Secret) (string, error)
}

// errSealUnavailable answers a create or rotation whose new secret could
// not be sealed (KMS down, throttled or refusing): nothing was stored.
func errSealUnavailable(cause error) *apiError {
	return &apiError{status: http.StatusServiceUnavailable, code: "unavailable", message: "the signing secret could not be protected (key service unavailable); nothing was changed: retry after the Retry-After delay", retryAfter: strconv.Itoa(RetryAfterSeconds), cause: cause}
}

// DefaultRotationOverlap is how long both secrets sign after a rotation.
const DefaultRotationOverlap = 24 * time.Hour

// errWebhooksDisabled answers the webhook routes of a deployment without
// webhook delivery.
var errWebhooksDisabled = &apiError{status: http.StatusNotFound, code: "webhooks_disabled", message: "webhook delivery is not enabled on this deployment (TriggersApiProps.Webhooks)"}

func (w *Webhooks) defaults() {
	if w.CheckTarget == nil {
		w.CheckTarget = func(ctx context.Context, rawURL string) error {
			_, err := webhook.ValidateTarget(ctx, rawURL, nil)
			return err
		}
	}
	if w.RotationOverlap <= 0 {
		w.RotationOverlap = DefaultRotationOverlap
	}
	if w.NewRound == nil {
		w.NewRound = newRound
	}
}

// SubscriptionCreated is the body of POST /v1/subscriptions: the
// subscription and its signing secret, shown this once.
type SubscriptionCreated struct {
	event.Subscription
	Secret string `json:"secret"`
}

// SecretRotated is the body of POST /v1/subscriptions/{id}/rotate.
type SecretRotated struct {
	SubscriptionID string `json:"subscription_id"`
	// Secret is the new signing secret, shown this once.
	Secret string `json:"secret"`
	// PreviousSecretExpiresAt ends the overlap during which the previous
	// secret also signs.
	PreviousSecretExpiresAt string `json:"previous_secret_expires_at"`
}

// matchWebhooks routes the webhook paths (nil, "", "" for other paths).
func matchWebhooks(method, path string) (routeFunc, string, string) {
	if path == contract.PathSubscriptions {
		switch method {
		case contract.MethodPost:
			return (*API).createSubscription, "", ""
		case contract.MethodGet:
			return (*API).listSubscriptions, "", ""
		}
		return nil, contract.MethodGet + ", " + contract.MethodPost, ""
	}
	if rest, ok := strings.CutPrefix(path, contract.PathSubscriptions+"/"); ok && rest != "" {
		id, action, nested := strings.Cut(rest, "/")
		switch {
		case id == "":
		case !nested:
			switch method {
			case contract.MethodGet:
				return (*API).getSubscription, "", id
			case contract.MethodPatch:
				return (*API).patchSubscription, "", id
			case contract.MethodDelete:
				return (*API).deleteSubscription, "", id
			}
			return nil, contract.MethodDelete + ", " + contract.MethodGet + ", " + contract.MethodPatch, ""
		case action == "rotate":
			if method == contract.MethodPost {
				return (*API).rotateSecret, "", id
			}
			return nil, contract.MethodPost, ""
		case action == "attempts":
			if method == contract.MethodGet {
				return (*API).listSubscriptionAttempts, "", id
			}
			return nil, contract.MethodGet, ""
		case action == "recover":
			if method == contract.MethodPost {
				return (*API).recoverSubscription, "", id
			}
			return nil, contract.MethodPost, ""
		}
		return nil, "", ""
	}
	if rest, ok := strings.CutPrefix(path, contract.PathEventPrefix); ok {
		id, action, nested := strings.Cut(rest, "/")
		if !nested || id == "" {
			return nil, "", ""
		}
		switch action {
		case "attempts":
			if method == contract.MethodGet {
				return (*API).listAttempts, "", id
			}
			return nil, contract.MethodGet, ""
		case "redeliver":
			if method == contract.MethodPost {
				return (*API).redeliver, "", id
			}
			return nil, contract.MethodPost, ""
		}
	}
	return nil, "", ""
}

// createSubscription serves POST /v1/subscriptions. An Idempotency-Key
// was refused before (checkNoIdempotencyKey): a create cannot be answered
// again (its secret is shown once, and only the webhook function may
// unseal it), and ignoring the key let a client that retried a create
// trusting it get a second subscription (found by review).
func (a *API) createSubscription(w http.ResponseWriter, r *http.Request, ri *reqInfo, _ string) (int, any, error) {
	if a.webhooks == nil {
		return 0, nil, errWebhooksDisabled
	}
	data, err := readBody(w, r)
	if err != nil {
		return 0, nil, err
	}
	req, err := event.ParseSubscription(data)
	if err != nil {
		return 0, nil, err
	}
	if err := a.checkTarget(r.Context(), req.URL); err != nil {
		return 0, nil, err
	}
	// A tenant at the limit learns it before any KMS call (also while KMS
	// is down); the create's transaction decides races.
	if err := a.webhooks.Store.CheckSubscriptionLimit(r.Context(), ri.tenant); err != nil {
		return 0, nil, err
	}
	id, err := event.NewSubscriptionID(nil)
	if err != nil {
		return 0, nil, err
	}
	secret := webhook.NewSecret()
	sealed, err := a.webhooks.Secrets.Seal(r.Context(), ri.tenant, id, secret)
	if err != nil {
		return 0, nil, errSealUnavailable(err)
	}
	sub := event.Subscription{
		ID: id, URL: req.URL, EventTypes: req.EventTypes, Description: req.Description,
		CreatedAt: event.FormatTime(a.now()), Secrets: []string{sealed},
	}
	if sub.EventTypes == nil {
		sub.EventTypes = []string{}
	}
	if err := a.webhooks.Store.CreateSubscription(r.Context(), ri.tenant, sub); err != nil {
		return 0, nil, err
	}
	return http.StatusCreated, SubscriptionCreated{Subscription: sub, Secret: secret.Encode()}, nil
}

// listSubscriptions serves GET /v1/subscriptions.
func (a *API) listSubscriptions(w http.ResponseWriter, r *http.Request, ri *reqInfo, _ string) (int, any, error) {
	if a.webhooks == nil {
		return 0, nil, errWebhooksDisabled
	}
	subs, err := a.webhooks.Store.ListSubscriptions(r.Context(), ri.tenant)
	if err != nil {
		return 0, nil, err
	}
	if subs == nil {
		subs = []event.Subscription{}
	}
	return http.StatusOK, map[string]any{"subscriptions": subs}, nil
}

// getSubscription serves GET /v1/subscriptions/{subscription_id}: the
// subscription as the list shows it (never its secrets).
func (a *API) getSubscription(w http.ResponseWriter, r *http.Request, ri *reqInfo, id string) (int, any, error) {
	if a.webhooks == nil {
		return 0, nil, errWebhooksDisabled
	}
	if !event.ValidSubscriptionID(id) {
		return 0, nil, event.ErrSubscriptionNotFound
	}
	sub, err := a.webhooks.Store.GetSubscription(r.Context(), ri.tenant, id)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, sub, nil
}

// patchSubscription serves PATCH /v1/subscriptions/{subscription_id}: a
// partial update of url, event_types, description and disabled, with
// create's rules; a new url passes the same target check.
func (a *API) patchSubscription(w http.ResponseWriter, r *http.Request, ri *reqInfo, id string) (int, any, error) {
	if a.webhooks == nil {
		return 0, nil, errWebhooksDisabled
	}
	data, err := readBody(w, r)
	if err != nil {
		return 0, nil, err
	}
	if !event.ValidSubscriptionID(id) {
		return 0, nil, event.ErrSubscriptionNotFound
	}
	p, err := event.ParseSubscriptionPatch(data)
	if err != nil {
		return 0, nil, err
	}
	// An unknown id is a 404 before the target's DNS lookup.
	if _, err := a.webhooks.Store.GetSubscription(r.Context(), ri.tenant, id); err != nil {
		return 0, nil, err
	}
	if p.URL != nil {
		if err := a.checkTarget(r.Context(), *p.URL); err != nil {
			return 0, nil, err
		}
	}
	sub, err := a.webhooks.Store.UpdateSubscription(r.Context(), ri.tenant, id, p, a.now())
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, sub, nil
}

// checkTarget runs Webhooks.CheckTarget on a subscription's URL: a 400
// invalid_target when it may not be called, a 503 when DNS could not
// answer for now.
func (a *API) checkTarget(ctx context.Context, rawURL string) error {
	err := a.webhooks.CheckTarget(ctx, rawURL)
	if err == nil {
		return nil
	}
	// DNS timing out or failing for now says nothing about the URL: the
	// client asks again, nothing was written.
	if errors.Is(err, webhook.ErrLookupUnavailable) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return &apiError{status: http.StatusServiceUnavailable, code: "unavailable", message: "the url's host could not be resolved right now; retry after the Retry-After delay", retryAfter: strconv.Itoa(RetryAfterSeconds), cause: err}
	}
	return &apiError{status: http.StatusBadRequest, code: event.CodeInvalidTarget, message: "url cannot be a webhook target: " + err.Error()}
}

// SubscriptionAttemptsPage is the body of GET
// /v1/subscriptions/{subscription_id}/attempts.
type SubscriptionAttemptsPage struct {
	SubscriptionID string                      `json:"subscription_id"`
	Attempts       []event.SubscriptionAttempt `json:"attempts"`
	NextCursor     *string                     `json:"next_cursor"`
}

// listSubscriptionAttempts serves GET
// /v1/subscriptions/{subscription_id}/attempts: newest event first,
// limit (1-100, default 50), cursor, and status (an attempt outcome).
func (a *API) listSubscriptionAttempts(w http.ResponseWriter, r *http.Request, ri *reqInfo, id string) (int, any, error) {
	if a.webhooks == nil {
		return 0, nil, errWebhooksDisabled
	}
	q, cur, err := parseAttemptsQuery(r.URL.RawQuery)
	if err != nil {
		return 0, nil, err
	}
	if !event.ValidSubscriptionID(id) {
		return 0, nil, event.ErrSubscriptionNotFound
	}
	shape := "subscription-attempts\x00" + id + "\x00" + q.Outcome
	if cur != "" {
		if q.After, err = a.cursors.DecodeKey(ri.tenant, shape, cur, event.ValidAttemptPosition); err != nil {
			return 0, nil, err
		}
	}
	if _, err := a.webhooks.Store.GetSubscription(r.Context(), ri.tenant, id); err != nil {
		return 0, nil, err
	}
	q.Tenant, q.SubscriptionID = ri.tenant, id
	page, err := a.webhooks.Store.ListSubscriptionAttempts(r.Context(), q)
	if err != nil {
		return 0, nil, err
	}
	out := SubscriptionAttemptsPage{SubscriptionID: id, Attempts: page.Attempts}
	if out.Attempts == nil {
		out.Attempts = []event.SubscriptionAttempt{}
	}
	if page.Next != "" {
		c := a.cursors.EncodeKey(ri.tenant, shape, page.Next)
		out.NextCursor = &c
	}
	return http.StatusOK, out, nil
}

// parseAttemptsQuery parses the query of a subscription's attempts:
// limit, cursor and status, each at most once.
func parseAttemptsQuery(raw string) (event.AttemptsQuery, string, error) {
	q := event.AttemptsQuery{Limit: event.DefaultLimit}
	vals, err := url.ParseQuery(raw)
	if err != nil {
		return q, "", &event.InputError{Code: event.CodeInvalidParameter, Message: "the query string is malformed"}
	}
	var cur string
	for k, vs := range vals {
		if len(vs) != 1 {
			return q, "", &event.InputError{Code: event.CodeInvalidParameter, Message: fmt.Sprintf("parameter %q is given %d times: give it once", truncatePath(k), len(vs))}
		}
		v := vs[0]
		switch k {
		case "limit":
			n, err := event.ParseQueryNumber("limit", v, 1, event.MaxLimit)
			if err != nil {
				return q, "", err
			}
			q.Limit = n
		case "cursor":
			if v == "" {
				return q, "", &event.InputError{Code: event.CodeInvalidParameter, Message: "cursor is empty: omit it for the first page"}
			}
			cur = v
		case "status":
			if !event.ValidOutcome(v) {
				return q, "", &event.InputError{Code: event.CodeInvalidParameter, Message: fmt.Sprintf("status %q is unknown: use an attempt outcome: delivered, failed, gone, pending or scheduled", truncatePath(v))}
			}
			q.Outcome = v
		default:
			return q, "", &event.InputError{Code: event.CodeInvalidParameter, Message: fmt.Sprintf("parameter %q is unknown: use limit, cursor or status", truncatePath(k))}
		}
	}
	return q, cur, nil
}

// deleteSubscription serves DELETE /v1/subscriptions/{subscription_id}.
func (a *API) deleteSubscription(w http.ResponseWriter, r *http.Request, ri *reqInfo, id string) (int, any, error) {
	if a.webhooks == nil {
		return 0, nil, errWebhooksDisabled
	}
	if !event.ValidSubscriptionID(id) {
		return 0, nil, event.ErrSubscriptionNotFound
	}
	if err := a.webhooks.Store.DeleteSubscription(r.Context(), ri.tenant, id); err != nil {
		return 0, nil, err
	}
	return http.StatusOK, map[string]any{"subscription_id": id, "deleted": true}, nil
}

// rotateSecret serves POST /v1/subscriptions/{subscription_id}/rotate.
func (a *API) rotateSecret(w http.ResponseWriter, r *http.Request, ri *reqInfo, id string) (int, any, error) {
	if a.webhooks == nil {
		return 0, nil, errWebhooksDisabled
	}
	if !event.ValidSubscriptionID(id) {
		return 0, nil, event.ErrSubscriptionNotFound
	}
	// An unknown id is a 404 before any KMS call (also while KMS is down).
	if _, err := a.webhooks.Store.GetSubscription(r.Context(), ri.tenant, id); err != nil {
		return 0, nil, err
	}
	secret := webhook.NewSecret()
	sealed, err := a.webhooks.Secrets.Seal(r.Context(), ri.tenant, id, secret)
	if err != nil {
		return 0, nil, errSealUnavailable(err)
	}
	now := a.now()
	until := now.Add(a.webhooks.RotationOverlap).Truncate(time.Second) // stored to the second
	if _, err := a.webhooks.Store.RotateSecret(r.Context(), ri.tenant, id, sealed, now, until); err != nil {
		return 0, nil, err
	}
	return http.StatusOK, SecretRotated{SubscriptionID: id, Secret: secret.Encode(), PreviousSecretExpiresAt: event.FormatTime(until)}, nil
}

// listAttempts serves GET /v1/events/{event_id}/attempts.
func (a *API) listAttempts(w http.ResponseWriter, r *http.Request, ri *reqInfo, id string) (int, any, error) {
	if a.webhooks == nil {
		return 0, nil, errWebhooksDisabled
	}
	// The event must be the tenant's (and not expired): its attempts are.
	if _, err := a.store.Get(r.Context(), ri.tenant, id); err != nil {
		return 0, nil, err
	}
	attempts, err := a.webhooks.Store.ListAttempts(r.Context(), ri.tenant, id)
	if err != nil {
		return 0, nil, err
	}
	body := map[string]any{"event_id": id}
	if kept, cut := fitAttempts(attempts, attemptsBudget); cut {
		body["attempts"], body["truncated"] = kept, true
	} else {
		body["attempts"] = attempts
	}
	return http.StatusOK, body, nil
}

// attemptsBudget bounds the attempts of one answer by event.Attempt's
// WireSize, as event.MaxPageWireBytes bounds an inbox page.
var attemptsBudget = event.MaxPageWireBytes

// fitAttempts returns the attempts that fit in budget bytes of the
// Lambda response, in their order, and whether some were left out: the
// oldest (lowest numbers) go first, never the latest attempt to a
// subscription (found by review: an event attempted hundreds of times, say
// redelivered round after round to 20 flapping endpoints, answered 502 for
// good).
func fitAttempts(attempts []event.Attempt, budget int) ([]event.Attempt, bool) {
	total := 0
	for _, at := range attempts {
		total += at.WireSize()
	}
	if total <= budget {
		return attempts, false
	}
	latest := map[string]int{}
	for _, at := range attempts {
		latest[at.SubscriptionID] = max(latest[at.SubscriptionID], at.Number)
	}
	order := make([]int, len(attempts))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(i, j int) bool { return attempts[order[i]].Number < attempts[order[j]].Number })
	drop := make([]bool, len(attempts))
	for _, i := range order {
		if total <= budget {
			break
		}
		if at := attempts[i]; at.Number < latest[at.SubscriptionID] {
			drop[i], total = true, total-at.WireSize()
		}
	}
	kept := make([]event.Attempt, 0, len(attempts))
	for i, at := range attempts {
		if !drop[i] {
			kept = append(kept, at)
		}
	}
	return kept, true
}

// redeliver serves POST /v1/events/{event_id}/redeliver: a new delivery
// round of a failed event. Only a failed event can be re-driven (409
// otherwise). The round's task is queued first, then the event moves to
// retrying (retry_count + 1) together with the round's marker; the task
// makes that move itself when the request could not, and gives up when the
// event changed meanwhile. So a failure at any step leaves either nothing
// done (503, retry) or the round started exactly once.
func (a *API) redeliver(w http.ResponseWriter, r *http.Request, ri *reqInfo, id string) (int, any, error) {
	if a.webhooks == nil {
		return 0, nil, errWebhooksDisabled
	}
	ctx := r.Context()
	e, err := a.store.Get(ctx, ri.tenant, id)
	if err != nil {
		return 0, nil, err
	}
	if e.Status != event.Failed {
		return 0, nil, &event.TransitionError{From: e.Status, To: event.Retrying}
	}
	round, err := a.webhooks.NewRound()
	if err != nil {
		return 0, nil, err
	}
	at := a.now()
	if err := a.webhooks.Redeliver(ctx, ri.tenant, e, round, at); err != nil {
		return 0, nil, &apiError{status: http.StatusServiceUnavailable, code: "unavailable", message: "could not queue the redelivery; nothing changed: retry after the Retry-After delay", retryAfter: strconv.Itoa(RetryAfterSeconds), cause: err}
	}
	err = a.webhooks.Store.StartRedelivery(ctx, ri.tenant, e, round, at)
	switch {
	case err == nil, errors.Is(err, event.ErrRoundStarted):
	case errors.Is(err, event.ErrUnavailable), errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return 0, nil, &apiError{status: http.StatusServiceUnavailable, code: "unavailable", message: "the redelivery is queued and starts unless the event changes first; read the event before asking again", retryAfter: strconv.Itoa(RetryAfterSeconds), cause: err}
	default:
		return 0, nil, err
	}
	e.Status = event.Retrying
	e.RetryCount++
	return http.StatusAccepted, e, nil
}

// RecoveryQueued is the body of POST
// /v1/subscriptions/{subscription_id}/recover: the recovery is queued,
// not done.
type RecoveryQueued struct {
	Queued         bool   `json:"queued"`
	RecoveryID     string `json:"recovery_id"`
	SubscriptionID string `json:"subscription_id"`
	Since          string `json:"since"`
	Until          string `json:"until"`
}

// recoverSubscription serves POST
// /v1/subscriptions/{subscription_id}/recover: every event of [since,
// until) whose latest attempt to the subscription failed with no retry
// to come is delivered again to it, once, asynchronously (the webhook
// function, a page of the subscription's attempt list at a time). A
// disabled subscription is refused (409): re-enable it first. With an
// Idempotency-Key, the request names the same recovery each time it is
// sent (recoveryID); without one, each request is a recovery of its own.
func (a *API) recoverSubscription(w http.ResponseWriter, r *http.Request, ri *reqInfo, id string) (int, any, error) {
	if a.webhooks == nil {
		return 0, nil, errWebhooksDisabled
	}
	// The documented order (docs/api.md): query string (checkUnread),
	// Idempotency-Key, body, as createEvent. The body was read first, so
	// a bad key with a text/plain or oversized body answered the body's
	// 415 or 413 (found by review). A malformed id is a 404 after both,
	// as on the routes whose key and body checkUnread refuses.
	key, err := idempotencyKey(r)
	if err != nil {
		return 0, nil, err
	}
	data, err := readBody(w, r)
	if err != nil {
		return 0, nil, err
	}
	if !event.ValidSubscriptionID(id) {
		return 0, nil, event.ErrSubscriptionNotFound
	}
	now := a.now()
	req, err := event.ParseRecover(data, now, a.retention)
	if err != nil {
		return 0, nil, err
	}
	ctx := r.Context()
	sub, err := a.webhooks.Store.GetSubscription(ctx, ri.tenant, id)
	if err != nil {
		return 0, nil, err
	}
	if sub.Disabled {
		return 0, nil, &apiError{status: http.StatusConflict, code: "subscription_disabled", message: "the subscription is disabled: re-enable it first (PATCH {\"disabled\":false}), then recover"}
	}
	var rid string
	if key != "" {
		rid = recoveryID(ri.tenant, id, key)
	} else if rid, err = a.webhooks.NewRound(); err != nil {
		return 0, nil, err
	}
	if err := a.webhooks.Recover(ctx, ri.tenant, id, rid, req.Since, req.Until, now); err != nil {
		return 0, nil, &apiError{status: http.StatusServiceUnavailable, code: "unavailable", message: "could not queue the recovery; nothing changed: retry after the Retry-After delay", retryAfter: strconv.Itoa(RetryAfterSeconds), cause: err}
	}
	return http.StatusAccepted, RecoveryQueued{Queued: true, RecoveryID: rid, SubscriptionID: id, Since: event.FormatTime(req.Since), Until: event.FormatTime(req.Until)}, nil
}

// recoveryID is the id of the recovery a request with Idempotency-Key key
// starts for the tenant's subscription sub: 128 bits of SHA-256 over the
// three, in hex, like a random round's name. A request sent again with the
// same key (a client retrying after a timeout) names the same recovery,
// whose attempts the webhook function recognises by that round, so no
// event is attempted twice by it, whatever range each request gives.
func recoveryID(tenant, sub, key string) string {
	h := sha256.New()
	for _, part := range []string{"recover", tenant, sub, key} {
		h.Write([]byte(part))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// newRound returns a new redelivery round's name: 128 random bits in hex.
func newRound() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return hex.EncodeToString(b[:]), nil
}
