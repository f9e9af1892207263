package event

import (
	"bytes"
	"encoding/json"
	"time"
)

// CodeInvalidRecover is the error code of a recovery request the API
// refuses.
const CodeInvalidRecover = "invalid_recover"

// RecoverSkew is how far in the future a recovery's until may lie (clock
// differences between client and service).
const RecoverSkew = time.Minute

// Recover is a recovery request (POST
// /v1/subscriptions/{subscription_id}/recover): the events of [Since,
// Until) to deliver again to one subscription.
type Recover struct {
	Since, Until time.Time
}

// ParseRecover parses and checks a recovery request's body at now, for
// events kept retention: {"since": RFC 3339, "until": RFC 3339}, until
// optional (default now). since must be before until and no older than
// retention (older events are gone); until no later than now plus
// RecoverSkew. Each refusal is an *InputError naming the field.
func ParseRecover(data []byte, now time.Time, retention time.Duration) (Recover, error) {
	var b struct {
		Since *string `json:"since"`
		Until *string `json:"until"`
	}
	if err := decodeStrict(data, 0, &b); err != nil {
		return Recover{}, err
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return Recover{}, inputErr(CodeInvalidJSON, "the body must be a JSON object")
	}
	for _, name := range []string{"since", "until"} {
		if v, ok := raw[name]; ok && string(bytes.TrimSpace(v)) == "null" {
			return Recover{}, inputErr(CodeInvalidRecover, "%s is null: give an RFC 3339 time (until may be left out: now)", name)
		}
	}
	if b.Since == nil {
		return Recover{}, inputErr(CodeInvalidRecover, `since is required: the RFC 3339 time to recover from, such as "2026-11-20T00:00:00Z"`)
	}
	since, err := time.Parse(time.RFC3339Nano, *b.Since)
	if err != nil {
		return Recover{}, inputErr(CodeInvalidRecover, "since is not an RFC 3339 time with a time zone, such as \"2026-11-20T00:00:00Z\"")
	}
	until := now
	if b.Until != nil {
		if until, err = time.Parse(time.RFC3339Nano, *b.Until); err != nil {
			return Recover{}, inputErr(CodeInvalidRecover, "until is not an RFC 3339 time with a time zone, such as \"2026-11-21T00:00:00Z\"")
		}
	}
	since, until = since.UTC().Truncate(time.Microsecond), until.UTC().Truncate(time.Microsecond)
	switch {
	case until.After(now.Add(RecoverSkew)):
		return Recover{}, inputErr(CodeInvalidRecover, "until %s is in the future: give a past time, or leave until out for now", FormatTime(until))
	case !since.Before(until):
		return Recover{}, inputErr(CodeInvalidRecover, "since %s is not before until %s: the range is empty", FormatTime(since), FormatTime(until))
	case since.Before(now.Add(-retention)):
		return Recover{}, inputErr(CodeInvalidRecover, "since %s is older than the event retention (%g days): no event that old is kept; give %s or later", FormatTime(since), retention.Hours()/24, FormatTime(now.Add(-retention).Truncate(time.Second).Add(time.Second)))
	}
	return Recover{Since: since, Until: until}, nil
}
