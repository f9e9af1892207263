package event

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Limits on client input.
const (
	// MaxBodyBytes is the largest request body the API reads (256 KiB).
	MaxBodyBytes = 256 << 10
	// MaxBatch is the most events one batch request may carry (the
	// BatchWriteItem limit).
	MaxBatch = 25
	// MaxAck is the most event ids one ack request may carry.
	MaxAck = 100
	// MaxPayloadDepth is the deepest nesting of a payload, counting the
	// payload object itself as level 1. DynamoDB allows 32 levels per item
	// and the payload is a top-level attribute, so 31 levels remain below
	// the item (checked against DynamoDB Local 3.3.1).
	MaxPayloadDepth = 31
	// MaxNumberDigits is DynamoDB's precision for numbers.
	MaxNumberDigits = 38
	// MinNumberExponent and MaxNumberExponent bound the decimal exponent of
	// a non-zero number in scientific notation (1E-130 to 9.99...E+125),
	// and the written exponent of a zero (0e-130 to 0e125).
	MinNumberExponent = -130
	MaxNumberExponent = 125
	// DefaultLimit and MaxLimit bound inbox pages.
	DefaultLimit = 50
	MaxLimit     = 100
)

// Error codes of client errors; they appear in the API's error bodies.
const (
	CodeInvalidJSON      = "invalid_json"
	CodeInvalidEvent     = "invalid_event"
	CodeInvalidPayload   = "invalid_payload"
	CodeInvalidBatch     = "invalid_batch"
	CodeInvalidStatus    = "invalid_status"
	CodeInvalidParameter = "invalid_parameter"
	CodeInvalidAck       = "invalid_ack"
)

// InputError is a problem with client input: a machine-readable code and a
// message for people. The HTTP layer turns it into a 400.
type InputError struct {
	Code    string
	Message string
}

func (e *InputError) Error() string { return e.Code + ": " + e.Message }

func inputErr(code, format string, args ...any) *InputError {
	return &InputError{Code: code, Message: fmt.Sprintf(format, args...)}
}

var eventTypeRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$`)

// ValidEventType reports whether t is 1-128 characters of
// [A-Za-z0-9._:-] starting with a letter or digit.
func ValidEventType(t string) bool { return eventTypeRE.MatchString(t) }

// CreateRequest is a validated request to store one event.
type CreateRequest struct {
	EventType string
	Payload   map[string]any
}

type createBody struct {
	EventType *string `json:"event_type"`
	Payload   any     `json:"payload"`
}

// decodeStrict decodes exactly one JSON value from data into v, with
// numbers as json.Number and unknown fields rejected.
func decodeStrict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return describeJSONError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return inputErr(CodeInvalidJSON, "the body holds more than one JSON value")
	}
	return nil
}

func describeJSONError(err error) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.Is(err, io.EOF):
		return inputErr(CodeInvalidJSON, "the body is empty: send a JSON object")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return inputErr(CodeInvalidJSON, "the body ends in the middle of a JSON value")
	case errors.As(err, &syn):
		return inputErr(CodeInvalidJSON, "malformed JSON at byte %d: %s", syn.Offset, syn.Error())
	case errors.As(err, &typ):
		if typ.Field == "" {
			return inputErr(CodeInvalidJSON, "the body must be a JSON object, not %s", typ.Value)
		}
		return inputErr(CodeInvalidJSON, "field %q must not be %s", typ.Field, typ.Value)
	case strings.HasPrefix(err.Error(), "json: unknown field"):
		return inputErr(CodeInvalidJSON, "%s", strings.TrimPrefix(err.Error(), "json: "))
	}
	return inputErr(CodeInvalidJSON, "malformed JSON: %s", strings.TrimPrefix(err.Error(), "json: "))
}

// ParseCreate parses and validates the body of POST /v1/events:
// {"event_type": "...", "payload": {...}}.
func ParseCreate(data []byte) (CreateRequest, error) {
	var b createBody
	if err := decodeStrict(data, &b); err != nil {
		return CreateRequest{}, err
	}
	return b.validate()
}

func (b createBody) validate() (CreateRequest, error) {
	if b.EventType == nil {
		return CreateRequest{}, inputErr(CodeInvalidEvent, "event_type is missing")
	}
	if !ValidEventType(*b.EventType) {
		return CreateRequest{}, inputErr(CodeInvalidEvent, "event_type %q is invalid: use 1-128 characters of [A-Za-z0-9._:-], starting with a letter or digit", truncate(*b.EventType, 64))
	}
	p, ok := b.Payload.(map[string]any)
	if !ok {
		if b.Payload == nil {
			return CreateRequest{}, inputErr(CodeInvalidPayload, "payload is missing or null: send a JSON object")
		}
		return CreateRequest{}, inputErr(CodeInvalidPayload, "payload must be a JSON object, not %s", jsonKind(b.Payload))
	}
	if err := ValidatePayload(p); err != nil {
		return CreateRequest{}, err
	}
	return CreateRequest{EventType: *b.EventType, Payload: p}, nil
}

// ParseBatch parses the body of POST /v1/events/batch: {"events": [...]}
// with 1-25 entries. The whole-body error is non-nil only when the body as a
// whole is unusable; otherwise each entry has a request or its own error,
// so valid entries can be stored and invalid ones reported.
func ParseBatch(data []byte) ([]CreateRequest, []error, error) {
	var b struct {
		Events *[]json.RawMessage `json:"events"`
	}
	if err := decodeStrict(data, &b); err != nil {
		return nil, nil, err
	}
	if b.Events == nil {
		return nil, nil, inputErr(CodeInvalidBatch, "events is missing: send {\"events\": [...]}")
	}
	n := len(*b.Events)
	if n == 0 || n > MaxBatch {
		return nil, nil, inputErr(CodeInvalidBatch, "events has %d entries: send 1-%d", n, MaxBatch)
	}
	reqs := make([]CreateRequest, n)
	errs := make([]error, n)
	for i, raw := range *b.Events {
		reqs[i], errs[i] = ParseCreate(raw)
	}
	return reqs, errs, nil
}

// ValidatePayload checks that DynamoDB can store p exactly: nesting at most
// MaxPayloadDepth, no empty object keys (DynamoDB rejects empty attribute
// names), and every number within DynamoDB's precision and range.
func ValidatePayload(p map[string]any) error {
	if err := validateValue(p, 1); err != nil {
		return inputErr(CodeInvalidPayload, "%s%s", truncate(err.path(), 80), err.msg)
	}
	return nil
}

// payloadError is a payload problem; the path is collected on the way
// back up, so valid payloads build no path strings at all.
type payloadError struct {
	rev []string // path segments, innermost first
	msg string
}

func (e *payloadError) at(seg string) *payloadError {
	e.rev = append(e.rev, seg)
	return e
}

func (e *payloadError) path() string {
	var b strings.Builder
	b.WriteString("payload")
	for i := len(e.rev) - 1; i >= 0; i-- {
		b.WriteString(e.rev[i])
	}
	return b.String()
}

func validateValue(v any, depth int) *payloadError {
	switch x := v.(type) {
	case map[string]any:
		if depth > MaxPayloadDepth {
			return &payloadError{msg: fmt.Sprintf(" is nested deeper than %d levels, the most DynamoDB stores", MaxPayloadDepth)}
		}
		for k, e := range x {
			if k == "" {
				return &payloadError{msg: " has an empty key: DynamoDB cannot store empty attribute names"}
			}
			if err := validateValue(e, depth+1); err != nil {
				return err.at("." + k)
			}
		}
	case []any:
		if depth > MaxPayloadDepth {
			return &payloadError{msg: fmt.Sprintf(" is nested deeper than %d levels, the most DynamoDB stores", MaxPayloadDepth)}
		}
		for i, e := range x {
			if err := validateValue(e, depth+1); err != nil {
				return err.at("[" + strconv.Itoa(i) + "]")
			}
		}
	case json.Number:
		if err := ValidNumber(string(x)); err != nil {
			return &payloadError{msg: ": " + err.Error()}
		}
	case string, bool, nil:
	default:
		return &payloadError{msg: fmt.Sprintf(" has an unsupported value of type %T", v)}
	}
	return nil
}

// ValidNumber reports whether s is a JSON number (RFC 8259 grammar) that
// DynamoDB stores exactly: at most 38 significant digits (leading and
// trailing zeros do not count) and, unless zero, a magnitude from 1E-130 to
// 9.99...E+125. A zero's exponent, when it has one, must lie in -130..125
// as well: DynamoDB Local 3.3.1 rejects zeros whose scale overflows 32 bits
// (0e2147483648, 0e-2147483648) and the service documents no rule for
// zeros, so the API keeps to the documented range.
func ValidNumber(s string) error {
	notNumber := func() error { return fmt.Errorf("%q is not a number", truncate(s, 40)) }
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	start := i
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	intPart := s[start:i]
	if intPart == "" || (len(intPart) > 1 && intPart[0] == '0') {
		return notNumber()
	}
	frac := ""
	if i < len(s) && s[i] == '.' {
		i++
		fs := i
		for i < len(s) && isDigit(s[i]) {
			i++
		}
		frac = s[fs:i]
		if frac == "" {
			return notNumber()
		}
	}
	exp := int64(0)
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		neg := false
		if i < len(s) && (s[i] == '-' || s[i] == '+') {
			neg = s[i] == '-'
			i++
		}
		es := i
		for i < len(s) && isDigit(s[i]) {
			i++
		}
		if es == i {
			return notNumber()
		}
		digits := strings.TrimLeft(s[es:i], "0")
		if len(digits) > 9 {
			exp = 1 << 40 // far outside any range
		} else if digits != "" {
			exp, _ = strconv.ParseInt(digits, 10, 64)
		}
		if neg {
			exp = -exp
		}
	}
	if i != len(s) {
		return notNumber()
	}
	all := intPart + frac
	lead := len(all) - len(strings.TrimLeft(all, "0"))
	sig := strings.TrimRight(all[lead:], "0")
	if sig == "" {
		if exp < MinNumberExponent || exp > MaxNumberExponent {
			return fmt.Errorf("%s is a zero with an exponent outside %d..%d, which DynamoDB cannot store: write 0", truncate(s, 40), MinNumberExponent, MaxNumberExponent)
		}
		return nil
	}
	if len(sig) > MaxNumberDigits {
		return fmt.Errorf("%s has %d significant digits; DynamoDB numbers hold at most %d", truncate(s, 40), len(sig), MaxNumberDigits)
	}
	// value = 0.<all> * 10^(len(intPart)+exp); the first significant digit
	// sits at decimal exponent len(intPart)-1-lead+exp.
	adj := int64(len(intPart)) - 1 - int64(lead) + exp
	if adj > MaxNumberExponent {
		return fmt.Errorf("%s is too large; DynamoDB numbers are below 1E+126", truncate(s, 40))
	}
	if adj < MinNumberExponent {
		return fmt.Errorf("%s is too small; non-zero DynamoDB numbers are at least 1E-130 in magnitude", truncate(s, 40))
	}
	return nil
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// ParseStatus parses the body of PATCH /v1/events/{id}: {"status": "..."}.
func ParseStatus(data []byte) (Status, error) {
	var b struct {
		Status *string `json:"status"`
	}
	if err := decodeStrict(data, &b); err != nil {
		return "", err
	}
	if b.Status == nil {
		return "", inputErr(CodeInvalidStatus, "status is missing: send {\"status\": \"delivered\"}")
	}
	s := Status(*b.Status)
	if !s.Valid() {
		return "", inputErr(CodeInvalidStatus, "status %q is unknown: use received, delivered, failed or retrying", truncate(*b.Status, 40))
	}
	return s, nil
}

// ParseAck parses the body of POST /v1/inbox/ack: {"event_ids": [...]},
// 1-100 ids. Duplicates are dropped, first occurrence kept.
func ParseAck(data []byte) ([]string, error) {
	var b struct {
		EventIDs *[]string `json:"event_ids"`
	}
	if err := decodeStrict(data, &b); err != nil {
		return nil, err
	}
	if b.EventIDs == nil {
		return nil, inputErr(CodeInvalidAck, "event_ids is missing: send {\"event_ids\": [...]}")
	}
	ids := *b.EventIDs
	if len(ids) == 0 || len(ids) > MaxAck {
		return nil, inputErr(CodeInvalidAck, "event_ids has %d entries: send 1-%d", len(ids), MaxAck)
	}
	seen := make(map[string]bool, len(ids))
	out := make([]string, 0, len(ids))
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out, nil
}

// ListParams are the validated query parameters of GET /v1/inbox.
type ListParams struct {
	// Status filters by status; empty means all statuses.
	Status Status
	// EventType filters by event type; empty means all types.
	EventType string
	// Ascending is true for oldest first (order=asc).
	Ascending bool
	// Limit is the page size, 1-100.
	Limit int
	// Cursor is the opaque cursor as sent, empty for the first page.
	Cursor string
}

// Shape identifies the query a cursor belongs to: everything but the limit
// and the cursor itself.
func (p ListParams) Shape() string {
	order := "desc"
	if p.Ascending {
		order = "asc"
	}
	st := string(p.Status)
	if st == "" {
		st = "all"
	}
	return "status=" + st + "&event_type=" + p.EventType + "&order=" + order
}

// ParseListQuery validates the query of GET /v1/inbox: status (a status or
// "all"; default received), event_type, order (asc or desc; default desc),
// limit (1-100; default 50) and cursor. Unknown or repeated parameters are
// errors, so typos do not silently change the result.
func ParseListQuery(q url.Values) (ListParams, error) {
	p := ListParams{Status: Received, Limit: DefaultLimit}
	for k, vs := range q {
		if len(vs) != 1 {
			return p, inputErr(CodeInvalidParameter, "parameter %q is given %d times: give it once", truncate(k, 40), len(vs))
		}
		v := vs[0]
		switch k {
		case "status":
			if v == "all" {
				p.Status = ""
			} else if s := Status(v); s.Valid() {
				p.Status = s
			} else {
				return p, inputErr(CodeInvalidParameter, "status %q is unknown: use received, delivered, failed, retrying or all", truncate(v, 40))
			}
		case "event_type":
			if !ValidEventType(v) {
				return p, inputErr(CodeInvalidParameter, "event_type %q is invalid: use 1-128 characters of [A-Za-z0-9._:-]", truncate(v, 64))
			}
			p.EventType = v
		case "order":
			switch v {
			case "asc":
				p.Ascending = true
			case "desc":
				p.Ascending = false
			default:
				return p, inputErr(CodeInvalidParameter, "order %q is invalid: use asc or desc", truncate(v, 40))
			}
		case "limit":
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > MaxLimit {
				return p, inputErr(CodeInvalidParameter, "limit %q is invalid: use an integer from 1 to %d", truncate(v, 40), MaxLimit)
			}
			p.Limit = n
		case "cursor":
			if v == "" {
				return p, inputErr(CodeInvalidParameter, "cursor is empty: omit it for the first page")
			}
			p.Cursor = v
		default:
			return p, inputErr(CodeInvalidParameter, "parameter %q is unknown: use status, event_type, order, limit or cursor", truncate(k, 40))
		}
	}
	return p, nil
}

func jsonKind(v any) string {
	switch v.(type) {
	case []any:
		return "an array"
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case bool:
		return "a boolean"
	}
	return fmt.Sprintf("%T", v)
}

// truncate shortens s to at most n bytes on a rune boundary, for messages.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "..."
}
