// Package event holds the domain of the Triggers API: events, their status
// machine, event ids, and the parsing and validation of client input. Its
// only AWS import is the SDK's DynamoDB attribute value types: an event's
// payload is held as the attribute values the table stores (Payload), so
// that a request body is decoded straight into the item and an item is
// written straight to JSON. The DynamoDB store and the HTTP handlers build
// on it.
package event

import (
	"errors"
	"fmt"
	"time"

	"github.com/triggers-dev/triggers/contract"
)

// APIVersion is the version recorded in every event's metadata.
const APIVersion = "v1"

// DefaultRetention is how long an event lives before its ttl expires.
const DefaultRetention = 30 * 24 * time.Hour

// TimeLayout is the timestamp format of events: RFC 3339, UTC, exactly six
// fractional digits and 'Z'. Its strings sort lexically in time order, which
// the sort keys rely on.
const TimeLayout = "2006-01-02T15:04:05.000000Z"

// FormatTime formats t in TimeLayout (UTC, truncated to microseconds).
func FormatTime(t time.Time) string { return t.UTC().Format(TimeLayout) }

// Status is the delivery status of an event.
type Status string

// The statuses of seed 000.
const (
	Received  Status = "received"
	Delivered Status = "delivered"
	Failed    Status = "failed"
	Retrying  Status = "retrying"
)

// Statuses lists every status.
var Statuses = []Status{Received, Delivered, Failed, Retrying}

// transitions is the status machine of seed 000:
//
//	received -> delivered | failed
//	failed   -> retrying
//	retrying -> delivered | failed
var transitions = map[Status][]Status{
	Received: {Delivered, Failed},
	Failed:   {Retrying},
	Retrying: {Delivered, Failed},
}

// Valid reports whether s is a known status.
func (s Status) Valid() bool {
	switch s {
	case Received, Delivered, Failed, Retrying:
		return true
	}
	return false
}

// CanTransition reports whether the status machine allows from -> to.
func CanTransition(from, to Status) bool {
	for _, t := range transitions[from] {
		if t == to {
			return true
		}
	}
	return false
}

// Sources returns the statuses from which an event may move to to, in a
// fixed order; empty for received, which no transition enters.
func Sources(to Status) []Status {
	var out []Status
	for _, from := range Statuses {
		if CanTransition(from, to) {
			out = append(out, from)
		}
	}
	return out
}

// Metadata is what the API records about the request that created an event.
type Metadata struct {
	SourceIP      string `json:"source_ip"`
	APIVersion    string `json:"api_version"`
	CorrelationID string `json:"correlation_id,omitempty"`
}

// Event is one stored event, as the API returns it. AppendJSON and
// MarshalJSON write it.
type Event struct {
	ID         string   `json:"event_id"`
	Type       string   `json:"event_type"`
	Payload    Payload  `json:"payload"`
	Status     Status   `json:"status"`
	Timestamp  string   `json:"timestamp"`
	RetryCount int      `json:"retry_count"`
	Metadata   Metadata `json:"metadata"`
	// TTL is the expiry in Unix seconds; not part of the API.
	TTL int64 `json:"-"`
}

// SortKey returns the table sort key of the event: timestamp#event_id.
func (e Event) SortKey() string { return contract.Key(e.Timestamp, e.ID) }

// Expired reports whether the event's ttl lies before now.
func (e Event) Expired(now time.Time) bool { return e.TTL < now.Unix() }

// New returns a received event created now from a validated request, with
// a fresh id whose timestamp is now (microseconds) and a ttl of now plus
// retention.
func New(req CreateRequest, now time.Time, retention time.Duration, md Metadata) (Event, error) {
	id, ts, err := NewID(now, nil)
	if err != nil {
		return Event{}, err
	}
	md.APIVersion = APIVersion
	return Event{
		ID:        id,
		Type:      req.EventType,
		Payload:   req.Payload,
		Status:    Received,
		Timestamp: FormatTime(ts),
		Metadata:  md,
		TTL:       ts.Add(retention).Unix(),
	}, nil
}

// Errors the store reports; the HTTP layer maps them to status codes.
var (
	// ErrNotFound: no such event for the tenant, or it has expired.
	ErrNotFound = errors.New("event not found")
	// ErrUnavailable: DynamoDB throttled beyond the SDK's retries or could
	// not be reached. Clients should retry later.
	ErrUnavailable = errors.New("storage temporarily unavailable")
	// ErrInvalidItem: DynamoDB rejected the item (too large, too deep...).
	ErrInvalidItem = errors.New("event cannot be stored")
	// ErrIdempotencyMismatch: an Idempotency-Key was reused with a
	// different request.
	ErrIdempotencyMismatch = errors.New("idempotency key reused with a different request")
)

// TransitionError reports a status change the machine does not allow from
// the event's current status.
type TransitionError struct {
	From, To Status
}

func (e *TransitionError) Error() string {
	return fmt.Sprintf("cannot change status from %s to %s", e.From, e.To)
}

// ValidTenantID reports whether id is an acceptable tenant id: 1-128
// characters of [A-Za-z0-9_.:-], starting with a letter or digit. It never
// contains '#', so no tenant partition can collide with the store's
// internal partitions (such as idempotency records).
func ValidTenantID(id string) bool { return validName(id) }

// validName reports whether s is 1-128 characters of [A-Za-z0-9_.:-]
// starting with a letter or digit: the rule of tenant ids and event
// types. Checked by hand rather than with a regexp, whose compilation at
// package init would cost every Lambda function's cold start about
// 1.5 ms each; a test compares it with the regexp.
func validName(s string) bool {
	if len(s) == 0 || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		alnum := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
		punct := c == '_' || c == '.' || c == ':' || c == '-'
		if !alnum && (i == 0 || !punct) {
			return false
		}
	}
	return true
}
