package event

import (
	"bytes"
	"crypto/rand"
	"encoding/base32"
	"encoding/json"
	"errors"
	"io"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/triggers-dev/triggers/contract"
)

// Error codes of the subscription routes.
const (
	CodeInvalidSubscription = "invalid_subscription"
	CodeInvalidTarget       = "invalid_target"
)

// Limits of a subscription.
const (
	// MaxSubscriptions is how many subscriptions one tenant may hold.
	MaxSubscriptions = 20
	// MaxSubscriptionEventTypes bounds a subscription's event-type filter.
	MaxSubscriptionEventTypes = 50
	// MaxDescription bounds a subscription's description, in characters.
	MaxDescription = 256
	// MaxTargetURL bounds a target URL, in bytes.
	MaxTargetURL = 2048
)

// ErrSubscriptionNotFound is the error for an unknown subscription id (or
// another tenant's).
var ErrSubscriptionNotFound = errors.New("subscription not found")

// ErrSubscriptionMoved is the error of a change conditional on a
// subscription's URL (a 410 Gone's removal) when the subscription has
// moved to another URL since.
var ErrSubscriptionMoved = errors.New("subscription moved to another URL")

// ErrRotationConflict is the error of a secret rotation that lost a race
// with another one.
var ErrRotationConflict = errors.New("the subscription's secret was rotated concurrently")

// Subscription is a tenant's webhook endpoint: events of the matching
// types are POSTed to URL, signed with the subscription's secrets
// (Standard Webhooks).
type Subscription struct {
	ID  string `json:"subscription_id"`
	URL string `json:"url"`
	// EventTypes filters the events delivered; empty means every type.
	EventTypes  []string `json:"event_types"`
	Description string   `json:"description,omitempty"`
	CreatedAt   string   `json:"created_at"`
	// Disabled is set when the endpoint failed for longer than the
	// deployment's disable-after period; nothing is sent to it then.
	Disabled       bool   `json:"disabled"`
	DisabledReason string `json:"disabled_reason,omitempty"`
	// FailingSince is when the current run of failures began: its first
	// failed attempt's time, to the microsecond (the start of its second
	// for a run recorded by a version before the microseconds); empty
	// while the endpoint succeeds.
	FailingSince string `json:"failing_since,omitempty"`

	// Secrets are the signing secrets ("whsec_..."), newest first, at
	// most MaxSigningSecrets: after a rotation the secrets it replaced
	// still sign until their overlaps end (PreviousExpires). Never part
	// of the JSON: a secret is shown once, when created.
	Secrets []string `json:"-"`
	// PreviousExpires[i] ends the overlap of Secrets[i+1], the secret
	// the (i+1)th latest rotation replaced; a previous secret without one
	// no longer signs.
	PreviousExpires []time.Time `json:"-"`

	// The endpoint's circuit breaker, shared by every instance delivering
	// to it. ConsecutiveFailures counts the failed attempts since the last
	// delivery. While CircuitOpenUntil lies ahead nothing is sent to the
	// endpoint; once it has passed (half-open) one probe at a time may be,
	// each holding the probe until ProbeUntil.
	ConsecutiveFailures int       `json:"-"`
	CircuitOpenUntil    time.Time `json:"-"`
	// CircuitCooldown is how long the circuit's latest opening was for
	// (0 when unknown: opened before it was kept, or closed since): a
	// failed probe reopens it for twice as long.
	CircuitCooldown time.Duration `json:"-"`
	ProbeUntil      time.Time     `json:"-"`
	// SlowUntil, while it lies ahead, marks the endpoint slow: a recent
	// request to it took long to be answered, so each of its attempts
	// first takes a slot of its tenant's slow lane (dispatch).
	SlowUntil time.Time `json:"-"`
	// WakeQueuedUntil, while it lies ahead, says that a wake task of the
	// subscription is queued and has not started (a confirmed wake
	// marker: store ClaimWake, ConfirmWake): attempts are parked behind
	// it, and it makes them. It is the marker's end, the wake's due time
	// plus the dispatcher's grace.
	WakeQueuedUntil time.Time `json:"-"`
}

// HoldSkewMargin is how long past its end another instance waits before
// it reclaims a hold: a slow-lane slot (store AcquireSlowSlot) or a
// half-open circuit's probe (store AcquireProbe, ProbeUntil). The holder
// bounds its request by the hold's end on its own clock (dispatch's
// withinHold), while the one reclaiming compares the end with its own
// clock: without the margin, an instance whose clock ran ahead of the
// holder's by s reclaimed the hold up to s early, with the holder's
// request still in flight (a tenant over its slow lane, a second probe).
// Clocks of function instances closer than this never do; the price is
// that a hold whose instance died frees this much later. 5 s, as the
// margin of a claim's lease (dispatch's leaseMargin), for the same reason.
const HoldSkewMargin = 5 * time.Second

// HalfOpen reports whether the subscription's circuit was opened and its
// open time has passed at now: the next attempt is a probe.
func (s Subscription) HalfOpen(now time.Time) bool {
	return !s.CircuitOpenUntil.IsZero() && !s.CircuitOpenUntil.After(now)
}

// FailureRun is the state of a subscription's run of failures after one
// more failure was recorded.
type FailureRun struct {
	// Disabled reports whether this failure disabled the subscription
	// (exactly one recorder sees it).
	Disabled bool
	// Consecutive counts the failures since the last delivery, this one
	// included; 0 when this failure was older news (a later delivery or
	// failure is recorded) and counted nothing.
	Consecutive int
	// Since is when the run of failures this one counted in began: its
	// first failure's time (zero when it counted nothing). A failure
	// recorded after a later one began the run (a request that started
	// earlier and took longer) is older than Since.
	Since time.Time
}

// Matches reports whether the subscription wants events of type t.
func (s Subscription) Matches(t string) bool {
	return len(s.EventTypes) == 0 || slices.Contains(s.EventTypes, t)
}

// MaxSigningSecrets bounds a subscription's secrets: the newest and the
// two it replaced most recently, so a rotation sent again (its answer
// lost) still leaves the secret the receiver uses signing until its
// overlap ends. A third rotation within one overlap drops the oldest.
const MaxSigningSecrets = 3

// SigningSecrets returns the secrets that sign a message sent at now: the
// newest, and each previous one whose rotation's overlap lasts, newest
// first.
func (s Subscription) SigningSecrets(now time.Time) []string {
	if len(s.Secrets) == 0 {
		return nil
	}
	out := s.Secrets[:1:1]
	for i, sec := range s.Secrets[1:] {
		if i < len(s.PreviousExpires) && now.Before(s.PreviousExpires[i]) {
			out = append(out, sec)
		}
	}
	return out
}

// SubscriptionRequest is the validated body of POST /v1/subscriptions.
type SubscriptionRequest struct {
	URL         string
	EventTypes  []string
	Description string
}

// ParseSubscription parses the body of POST /v1/subscriptions:
// {"url": "https://...", "event_types": [...], "description": "..."}.
// It checks the URL's syntax only (absolute https, a host, no user
// information or fragment); whether the host may be called (SSRF rules)
// is the caller's check, which needs DNS. A field given as null, or a null
// among event_types, is an error naming it: leave a field out instead.
func ParseSubscription(data []byte) (SubscriptionRequest, error) {
	var b struct {
		URL         *string    `json:"url"`
		EventTypes  *[]*string `json:"event_types"`
		Description *string    `json:"description"`
	}
	if err := decodeStrict(data, 0, &b); err != nil {
		return SubscriptionRequest{}, err
	}
	// encoding/json leaves a pointer nil for null: {"event_types": null}
	// was taken for no filter and {"url": null} for a missing url, though
	// the API refuses a null field (found by review).
	name, _, err := nullMember(data, "url", "event_types", "description")
	if err != nil {
		return SubscriptionRequest{}, err
	}
	if name != "" {
		return SubscriptionRequest{}, inputErr(CodeInvalidSubscription, "%s is null: %s", name, createNullHints[name])
	}
	if b.URL == nil {
		return SubscriptionRequest{}, inputErr(CodeInvalidSubscription, `url is missing: send {"url": "https://example.com/webhooks"}`)
	}
	var req SubscriptionRequest
	if req.URL, err = checkTargetURL(*b.URL); err != nil {
		return SubscriptionRequest{}, err
	}
	if b.EventTypes != nil {
		if req.EventTypes, err = checkEventTypes(*b.EventTypes); err != nil {
			return SubscriptionRequest{}, err
		}
		if len(req.EventTypes) == 0 {
			req.EventTypes = nil
		}
	}
	if b.Description != nil {
		if err := checkDescription(*b.Description); err != nil {
			return SubscriptionRequest{}, err
		}
		req.Description = *b.Description
	}
	return req, nil
}

// createNullHints says, per field of POST /v1/subscriptions, what to send
// instead of null.
var createNullHints = map[string]string{
	"url":         `send the target as a string: {"url": "https://example.com/webhooks"}`,
	"event_types": "leave it out (or send []) for every event type, or send a list of event types",
	"description": "leave it out for none, or send a string",
}

// nullMember returns the first of names that the JSON object data gives
// as null ("" when none is) and the number of members data holds. data
// has passed decodeStrict.
func nullMember(data []byte, names ...string) (string, int, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return "", 0, inputErr(CodeInvalidJSON, "the body must be a JSON object")
	}
	for _, name := range names {
		if v, ok := raw[name]; ok && string(bytes.TrimSpace(v)) == "null" {
			return name, len(raw), nil
		}
	}
	return "", len(raw), nil
}

// checkTargetURL checks a target URL's syntax: absolute https, a host, no
// user information or fragment, at most MaxTargetURL bytes. It returns the
// URL as sent but for its scheme, which it spells "https": schemes are
// case-insensitive (RFC 3986 section 3.1), and the URL is stored and shown
// as returned here, where the API promises one starting with "https://".
func checkTargetURL(raw string) (string, error) {
	if len(raw) > MaxTargetURL {
		return "", inputErr(CodeInvalidTarget, "url is %d bytes: at most %d", len(raw), MaxTargetURL)
	}
	// The messages never repeat the URL: it may carry credentials or a
	// token (user information is refused below, after the host check),
	// and errors reach the response and the request log.
	u, err := url.Parse(raw)
	if err != nil {
		reason := err.Error()
		if ue, ok := errors.AsType[*url.Error](err); ok {
			reason = ue.Err.Error() // url.Error repeats the whole URL
		}
		return "", inputErr(CodeInvalidTarget, "url does not parse (%s): send an absolute https URL", truncate(reason, 80))
	}
	if u.Scheme != "https" {
		return "", inputErr(CodeInvalidTarget, "url scheme %q is not allowed: webhook targets must be https", truncate(u.Scheme, 20))
	}
	if u.Host == "" || u.Hostname() == "" {
		return "", inputErr(CodeInvalidTarget, "url has no host: send an absolute https URL, such as https://hooks.example.com/triggers")
	}
	if u.User != nil {
		return "", inputErr(CodeInvalidTarget, "url must not carry user information: put credentials in a header on your side, or a token in the path")
	}
	if u.Fragment != "" || strings.Contains(raw, "#") {
		return "", inputErr(CodeInvalidTarget, "url must not have a fragment (#...)")
	}
	if err := checkURLChars(raw); err != nil {
		return "", err
	}
	// url.Parse took the scheme from raw's first len("https") bytes
	// (before the ':') and lowercased it; "HTTPS://" was stored as sent
	// (found by review).
	return u.Scheme + raw[len(u.Scheme):], nil
}

// checkURLChars refuses a character no URL holds (RFC 3986): a space or
// another control character, one of "<>\^`{|}, a letter outside ASCII,
// a '%' without two hex digits after it. url.Parse lets them through
// (outside the host), and they were stored as sent: a space or no-break
// space pasted after the URL sent the deliveries to another path
// ("/hooks%20"), and the stored url was no URI, unlike the document's
// (found by review). The error names the character and its byte offset,
// never the URL.
func checkURLChars(raw string) error {
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		switch {
		case c >= utf8.RuneSelf:
			r, _ := utf8.DecodeRuneInString(raw[i:])
			return inputErr(CodeInvalidTarget, "url holds %q at byte %d, outside ASCII: percent-encode its UTF-8 bytes in the path or query, and write a host name in its punycode (xn--) form", string(r), i)
		case c == '%':
			if i+2 >= len(raw) || !isHex(raw[i+1]) || !isHex(raw[i+2]) {
				return inputErr(CodeInvalidTarget, "url holds a '%%' without two hex digits after it at byte %d: write a '%%' itself as %%25", i)
			}
		case c <= ' ' || c == 0x7f || strings.IndexByte("\"<>\\^`{|}", c) >= 0:
			return inputErr(CodeInvalidTarget, "url holds %q at byte %d, which a URL may not hold (RFC 3986): percent-encode it (a space is %%20)", rune(c), i)
		}
	}
	return nil
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// checkEventTypes checks an event-type filter and returns it without
// repeats ([] for an empty one: every type). A nil entry is a null in the
// body: an error naming its index (it was reported as the type "").
func checkEventTypes(types []*string) ([]string, error) {
	if len(types) > MaxSubscriptionEventTypes {
		return nil, inputErr(CodeInvalidSubscription, "event_types has %d entries: at most %d (omit it for every type)", len(types), MaxSubscriptionEventTypes)
	}
	out := []string{}
	for i, p := range types {
		if p == nil {
			return nil, inputErr(CodeInvalidSubscription, "event_types[%d] is null: send each event type as a string", i)
		}
		t := *p
		if !ValidEventType(t) {
			return nil, inputErr(CodeInvalidSubscription, "event_types[%d] %q is not an event type: use 1-128 characters of [A-Za-z0-9_.:-], starting with a letter or digit", i, truncate(t, 40))
		}
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out, nil
}

// checkDescription checks a description: at most MaxDescription
// characters, none of them refused by contract.DescriptionRefusal: a
// control character (C0, DEL or C1: unicode.IsControl), a bidirectional
// control, a line or paragraph
// separator, or another invisible format character (but the zero-width
// non-joiner and joiner, the Mongolian vowel separator and the visible
// prepended concatenation marks). Every other character is kept as sent.
// Control characters were stored as sent: a line break or an escape
// sequence (ESC [) in a description reached every listing that prints
// it; so were the bidirectional controls, which show a listing's text in
// another order than it holds ("Trojan Source"), and the invisible ones,
// which make two descriptions that look the same differ (both found by
// review). An API key's description follows the same rule
// (apikey.CheckDescription). The error names the character's class, its
// code point and its place, counted in characters from 1.
func checkDescription(d string) error {
	if n := utf8.RuneCountInString(d); n > MaxDescription {
		return inputErr(CodeInvalidSubscription, "description is %d characters: at most %d", n, MaxDescription)
	}
	n := 0
	for _, r := range d {
		n++
		switch class := contract.DescriptionRefusal(r); class {
		case "":
		case contract.TextControl:
			return inputErr(CodeInvalidSubscription, "description holds the control character %U at character %d: send one line of text, without tabs, line breaks or other control characters", r, n)
		default:
			return inputErr(CodeInvalidSubscription, "description holds the %s %U at character %d: send one line of visible text, without bidirectional controls, line or paragraph separators or invisible format characters (the zero-width joiner U+200D and non-joiner U+200C are kept)", class, r, n)
		}
	}
	return nil
}

// SubscriptionPatch is the validated body of PATCH
// /v1/subscriptions/{id}: each field set is to change, nil ones stay.
type SubscriptionPatch struct {
	URL         *string
	EventTypes  *[]string
	Description *string
	// Disabled false re-enables a disabled subscription (its next
	// delivery is a probe); true disables it.
	Disabled *bool
}

// ParseSubscriptionPatch parses the body of PATCH /v1/subscriptions/{id}:
// any of "url", "event_types" ([] for every type), "description" ("" to
// clear it) and "disabled", with the rules of ParseSubscription. An empty
// patch, an unknown field, a field of the wrong type and null are errors
// naming the field.
func ParseSubscriptionPatch(data []byte) (SubscriptionPatch, error) {
	var b struct {
		URL         *string    `json:"url"`
		EventTypes  *[]*string `json:"event_types"`
		Description *string    `json:"description"`
		Disabled    *bool      `json:"disabled"`
	}
	if err := decodeStrict(data, 0, &b); err != nil {
		return SubscriptionPatch{}, err
	}
	name, members, err := nullMember(data, "url", "event_types", "description", "disabled")
	if err != nil {
		return SubscriptionPatch{}, err
	}
	if name != "" {
		return SubscriptionPatch{}, inputErr(CodeInvalidSubscription, "%s is null: leave a field out to keep it (event_types [] means every type, description \"\" clears it)", name)
	}
	if members == 0 {
		return SubscriptionPatch{}, inputErr(CodeInvalidSubscription, `the patch is empty: send one or more of url, event_types, description, disabled`)
	}
	var p SubscriptionPatch
	if b.URL != nil {
		u, err := checkTargetURL(*b.URL)
		if err != nil {
			return SubscriptionPatch{}, err
		}
		p.URL = &u
	}
	if b.EventTypes != nil {
		types, err := checkEventTypes(*b.EventTypes)
		if err != nil {
			return SubscriptionPatch{}, err
		}
		p.EventTypes = &types
	}
	if b.Description != nil {
		if err := checkDescription(*b.Description); err != nil {
			return SubscriptionPatch{}, err
		}
		p.Description = b.Description
	}
	p.Disabled = b.Disabled
	return p, nil
}

// subscriptionIDPrefix starts every subscription id.
const subscriptionIDPrefix = "sub_"

var idEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// NewSubscriptionID returns a new subscription id: "sub_" and 26
// characters of [a-z2-7] (128 random bits). r supplies the random bits;
// nil means crypto/rand.
func NewSubscriptionID(r io.Reader) (string, error) {
	if r == nil {
		r = rand.Reader
	}
	var b [16]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return "", err
	}
	return subscriptionIDPrefix + idEncoding.EncodeToString(b[:]), nil
}

// ValidSubscriptionID reports whether id has the shape NewSubscriptionID
// produces.
func ValidSubscriptionID(id string) bool {
	rest, ok := strings.CutPrefix(id, subscriptionIDPrefix)
	if !ok || len(rest) != 26 {
		return false
	}
	for _, c := range rest {
		if !('a' <= c && c <= 'z' || '2' <= c && c <= '7') {
			return false
		}
	}
	return true
}

// Outcomes of a delivery attempt.
const (
	// OutcomePending: the attempt is being made (claimed by one
	// function instance until its lease ends); an interrupted one is
	// made again under the same number.
	OutcomePending = "pending"
	// OutcomeScheduled: the attempt is due at NextAttemptAt and was not
	// sent: its endpoint's circuit was open, or its rate was used up.
	OutcomeScheduled = "scheduled"
	OutcomeDelivered = "delivered"
	OutcomeFailed    = "failed"
	OutcomeGone      = "gone"
)

// Follow-up states of an attempt (Attempt.FollowUp).
const (
	// FollowUpQueued: the task continuing the chain is on the retry
	// queue (the next attempt's after a failure, a scheduled attempt's
	// own).
	FollowUpQueued = "queued"
	// FollowUpDone: a failure's consequences were applied and no attempt
	// follows (the schedule ended or the subscription was disabled).
	FollowUpDone = "done"
)

// Attempt is one webhook delivery attempt of an event to a subscription
// (seed 004's attempt shape).
type Attempt struct {
	SubscriptionID string `json:"subscription_id"`
	// Number counts the attempts of this event to this subscription,
	// from 1.
	Number    int    `json:"attempt"`
	Timestamp string `json:"timestamp"`
	// Outcome is scheduled (to be made at NextAttemptAt), pending (being
	// made), delivered (2xx), gone (410: the subscription was removed) or
	// failed.
	Outcome    string `json:"outcome"`
	StatusCode int    `json:"status_code,omitempty"`
	LatencyMs  int64  `json:"latency_ms"`
	// Response is the first 1000 characters of the response body.
	Response string `json:"response,omitempty"`
	Error    string `json:"error,omitempty"`
	// NextAttemptAt is when the next attempt is due after a failure (or
	// when a scheduled one is); empty when none follows (delivered, gone,
	// or the schedule ended).
	NextAttemptAt string `json:"next_attempt_at,omitempty"`

	// URL is the target the attempt's request went to, recorded with
	// its outcome: a 410 Gone, or a failure that counts towards the
	// breaker, acts on the subscription only while it still points there
	// (a PATCH of url during the request moved it). Empty in attempts
	// recorded before it was, and in attempts closed unmade.
	URL string `json:"-"`
	// ProbeCooldown, set, makes the attempt its subscription's
	// half-open circuit's probe: its failure reopens the circuit for this
	// long (twice the opening before it), recorded with the outcome so
	// that a follow-up applied again after a fault reopens it for the
	// same time, not for the default cooldown nor twice again.
	ProbeCooldown time.Duration `json:"-"`

	// Round is the redelivery round that made the attempt ("" for the
	// first round and for retries).
	Round string `json:"-"`
	// Sends counts the requests made under this number: 1, or more when
	// an attempt was interrupted and made again.
	Sends int `json:"-"`
	// FollowUp is FollowUpQueued once the task that continues the chain
	// was queued (the next attempt's after a failure, a scheduled
	// attempt's own), FollowUpDone once a failure without a next attempt
	// was acted on.
	FollowUp string `json:"-"`
	// LeaseUntil ends a pending attempt's claim: after it another
	// instance may make the attempt again.
	LeaseUntil time.Time `json:"-"`
	// Deferrals counts the times the attempt was put off (recorded
	// scheduled) before it was made: a put-off that depends on the
	// others' progress (the tenant's slow lane) waits longer each time.
	Deferrals int `json:"-"`
}

// Parked is an attempt parked behind its subscription's open circuit: it
// is made when the circuit lets requests through again, by the
// subscription's wake task, instead of by a task of its own.
type Parked struct {
	// EventID and Number name the attempt.
	EventID string
	Number  int
	// Token is the parking's random token: parking the attempt again
	// replaces it, so an unpark that names an older token leaves the
	// newer parking in place.
	Token string
}

// LaneWaiter is a subscription waiting for its turn in its tenant's slow
// lane: its wake found the lane full (or ended its batch and waits for its
// next turn), and its next wake (Owner, the marker's owner) is queued for
// later; Refused counts its wakes refused in a row, and Since is when the
// first of them began to wait (the longest waiter has the earliest).
type LaneWaiter struct {
	SubscriptionID string
	Owner          string
	Refused        int
	Since          time.Time
}

// Final reports whether the attempt has an outcome: it is neither pending
// nor scheduled.
func (a Attempt) Final() bool {
	return a.Outcome != OutcomePending && a.Outcome != OutcomeScheduled
}

// AttemptClaim asks for the right to make one attempt (the store's
// ClaimAttempt).
type AttemptClaim struct {
	// SubscriptionID and Number name the attempt.
	SubscriptionID string
	Number         int
	// Round is the redelivery round making it ("" otherwise); an attempt
	// keeps the round of its first claim.
	Round string
	// Owner is the claimant's own random token: only it may finish the
	// attempt.
	Owner string
	// At is the claim's time; the attempt is pending until LeaseUntil,
	// after which another claimant may take it over.
	At, LeaseUntil time.Time
}

// Errors of webhook delivery's store operations.
var (
	// ErrLeaseLost: the attempt is no longer pending under this owner
	// (its lease ended and another claimant took it over).
	ErrLeaseLost = errors.New("the attempt is no longer claimed by this owner")
	// ErrStaleAttempts: an attempt newer than the ones a status decision
	// was based on exists.
	ErrStaleAttempts = errors.New("a newer delivery attempt exists")
	// ErrRoundStarted: the redelivery round was started already.
	ErrRoundStarted = errors.New("the redelivery round was started already")
	// ErrRoundSuperseded: the event is still failed but was redelivered
	// or retried since this redelivery was asked for.
	ErrRoundSuperseded = errors.New("the event was redelivered or retried since this redelivery was asked for")
)

// SubscriptionAttempt is an attempt as one subscription's list shows it:
// the attempt and the event it delivered.
type SubscriptionAttempt struct {
	EventID string `json:"event_id"`
	Attempt
}

// AttemptsQuery asks for a page of one subscription's attempts, newest
// event first and, within an event, latest attempt first.
type AttemptsQuery struct {
	Tenant         string
	SubscriptionID string
	// Outcome keeps only attempts with this outcome ("" keeps all).
	Outcome string
	// Limit bounds the page (1-MaxLimit).
	Limit int
	// After continues after this position (a previous page's Next).
	After string
}

// AttemptsPage is one page of a subscription's attempts.
type AttemptsPage struct {
	Attempts []SubscriptionAttempt
	// Next is the position to continue from; empty on the last page.
	Next string
}

// ValidOutcome reports whether o is an attempt outcome.
func ValidOutcome(o string) bool {
	switch o {
	case OutcomePending, OutcomeScheduled, OutcomeDelivered, OutcomeFailed, OutcomeGone:
		return true
	}
	return false
}

// ValidAttemptPosition reports whether p is a position in a
// subscription's attempts list: "<event_id>#<attempt>", the attempt as 3
// to 6 digits (below 1000, or written so before attempts from 1000 took
// the next form), or from 1000 as ':' and nine digits.
func ValidAttemptPosition(p string) bool {
	id, num, ok := strings.Cut(p, "#")
	if !ok {
		return false
	}
	if rest, wide := strings.CutPrefix(num, ":"); wide {
		if len(rest) != 9 || strings.Trim(rest, "0123456789") != "" || rest < "000001000" {
			return false
		}
	} else if len(num) < 3 || len(num) > 6 || strings.Trim(num, "0123456789") != "" || strings.Trim(num, "0") == "" {
		return false
	}
	_, err := ParseID(id)
	return err == nil
}
