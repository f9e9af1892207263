package event

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
)

// Limits on client input.
const (
	// MaxBodyBytes is the largest request body the API reads (256 KiB).
	MaxBodyBytes = 256 << 10
	// MaxBatch is the most events one batch request may carry (the
	// contract's limit; the store writes each with its own PutItem).
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

// ValidEventType reports whether t is 1-128 characters of
// [A-Za-z0-9._:-] starting with a letter or digit.
func ValidEventType(t string) bool { return validName(t) }

// CreateRequest is a validated request to store one event.
type CreateRequest struct {
	EventType string
	Payload   Payload
}

type createBody struct {
	EventType *string `json:"event_type"`
	Payload   any     `json:"payload"`
}

// decodeStrict decodes exactly one JSON value from data into v, with
// numbers as json.Number and unknown fields rejected. data must be I-JSON
// (RFC 7493): valid UTF-8, no lone surrogate escapes, no duplicate member
// names; encoding/json would silently repair the first two (as U+FFFD) and
// keep the last of the duplicates. Byte offsets in errors are counted from
// base, the position of data in the request body.
func decodeStrict(data []byte, base int64, v any) error {
	if err := checkIJSON(data, base); err != nil {
		return err
	}
	if err := checkFieldNames(data, base, v); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return describeJSONError(data, base, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return inputErr(CodeInvalidJSON, "the body holds more than one JSON value")
	}
	return nil
}

// checkFieldNames refuses top-level member names that are not exactly one
// of the json tags of the struct v points to. encoding/json matches names
// case-insensitively, so {"event_type":"a","EVENT_TYPE":"b"} would pass the
// duplicate rule (two distinct names) and then keep "b": the silent
// last-one-wins the I-JSON rule exists to prevent. data is already known
// to be one valid JSON value.
func checkFieldNames(data []byte, base int64, v any) error {
	t := reflect.TypeOf(v)
	if t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
		return nil
	}
	allowed := map[string]bool{}
	var names []string
	for i := 0; i < t.Elem().NumField(); i++ {
		if tag, _, _ := strings.Cut(t.Elem().Field(i).Tag.Get("json"), ","); tag != "" && tag != "-" {
			allowed[tag] = true
			names = append(names, tag)
		}
	}
	dec := jsontext.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return nil // not an object: the decoder below says so
	}
	for dec.PeekKind() == '"' {
		tok, err := dec.ReadToken()
		if err != nil {
			return nil
		}
		name := tok.String()
		if !allowed[name] {
			at := base + dec.InputOffset()
			for _, n := range names {
				if strings.EqualFold(n, name) {
					return inputErr(CodeInvalidJSON, "unknown field %q at byte %d: field names are case-sensitive; use %q", truncate(name, 40), at, n)
				}
			}
			return inputErr(CodeInvalidJSON, "unknown field %q at byte %d: use %s", truncate(name, 40), at, strings.Join(names, ", "))
		}
		if err := dec.SkipValue(); err != nil {
			return nil
		}
	}
	return nil
}

// checkIJSON reports the first way data is not exactly one I-JSON value,
// using jsontext's strict decoder, which rejects invalid UTF-8, lone
// surrogates and duplicate names natively.
func checkIJSON(data []byte, base int64) error {
	dec := jsontext.NewDecoder(bytes.NewReader(data))
	if err := dec.SkipValue(); err != nil {
		return describeJSONError(data, base, err)
	}
	return checkEnd(dec, data, base)
}

// checkEnd reports data after the value dec has just read.
func checkEnd(dec *jsontext.Decoder, data []byte, base int64) error {
	end := dec.InputOffset()
	if _, err := dec.ReadToken(); err != io.EOF {
		for end < int64(len(data)) && isSpace(data[end]) {
			end++
		}
		return inputErr(CodeInvalidJSON, "the body holds more than one JSON value: more data follows at byte %d", base+end)
	}
	return nil
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func describeJSONError(data []byte, base int64, err error) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	var jt *jsontext.SyntacticError
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF):
		return inputErr(CodeInvalidJSON, "the body ends in the middle of a JSON value")
	case errors.Is(err, io.EOF):
		return inputErr(CodeInvalidJSON, "the body is empty: send a JSON object")
	case errors.As(err, &jt):
		return describeSyntactic(data, base, jt)
	case errors.As(err, &syn):
		return inputErr(CodeInvalidJSON, "malformed JSON at byte %d: %s", base+syn.Offset, syn.Error())
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

// describeSyntactic turns a jsontext error into a message that names the
// byte, the place (as a JSON Pointer) and, for I-JSON violations, the rule.
func describeSyntactic(data []byte, base int64, e *jsontext.SyntacticError) error {
	where := func(p jsontext.Pointer) string {
		if p == "" {
			return "the top-level value"
		}
		return strconv.Quote(truncate(string(p), 80))
	}
	off := e.ByteOffset
	if e.Err == nil {
		return inputErr(CodeInvalidJSON, "malformed JSON at byte %d", base+off)
	}
	if e.Err == jsontext.ErrDuplicateName {
		obj := "the top-level object"
		if parent := e.JSONPointer.Parent(); parent != "" {
			obj = "the object at " + where(parent)
		}
		return inputErr(CodeInvalidJSON, "duplicate member name %q at byte %d in %s: request bodies are I-JSON (RFC 7493), where names are unique within an object", truncate(e.JSONPointer.LastToken(), 40), base+off, obj)
	}
	if e.Err == io.ErrUnexpectedEOF {
		return inputErr(CodeInvalidJSON, "the body ends in the middle of a JSON value (in %s)", where(e.JSONPointer))
	}
	switch {
	case strings.Contains(e.Err.Error(), "invalid UTF-8"):
		return inputErr(CodeInvalidJSON, "invalid UTF-8 at byte %d (in %s): request bodies are I-JSON (RFC 7493) and must be UTF-8", base+firstInvalidUTF8(data, off), where(e.JSONPointer))
	case strings.Contains(e.Err.Error(), "surrogate"):
		at, esc := loneSurrogate(data, off)
		return inputErr(CodeInvalidJSON, "lone surrogate escape %s at byte %d (in %s): request bodies are I-JSON (RFC 7493); escape characters outside the BMP as a surrogate pair such as \\ud83d\\ude00", esc, base+at, where(e.JSONPointer))
	}
	msg := e.Err.Error()
	if e.JSONPointer != "" {
		msg += " (in " + where(e.JSONPointer) + ")"
	}
	return inputErr(CodeInvalidJSON, "malformed JSON at byte %d: %s", base+off, msg)
}

// firstInvalidUTF8 returns the offset of the first byte at or after from
// that does not start a valid UTF-8 sequence (from itself if none does).
func firstInvalidUTF8(data []byte, from int64) int64 {
	for i := from; i >= 0 && i < int64(len(data)); {
		r, size := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && size == 1 {
			return i
		}
		i += int64(size)
	}
	return from
}

// loneSurrogate finds the first \uXXXX escape at or after from that is a
// surrogate without its partner, and returns its offset and text.
func loneSurrogate(data []byte, from int64) (int64, string) {
	hex := func(i int64) (rune, bool) {
		if i+6 > int64(len(data)) || data[i] != '\\' || data[i+1] != 'u' {
			return 0, false
		}
		v, err := strconv.ParseUint(string(data[i+2:i+6]), 16, 16)
		return rune(v), err == nil
	}
	for i := max(from, 0); i < int64(len(data)); i++ {
		if data[i] != '\\' {
			continue
		}
		r, ok := hex(i)
		if !ok {
			i++ // skip the escaped character
			continue
		}
		if 0xd800 <= r && r < 0xdc00 {
			if lo, ok := hex(i + 6); ok && 0xdc00 <= lo && lo < 0xe000 {
				i += 11
				continue
			}
			return i, string(data[i : i+6])
		}
		if 0xdc00 <= r && r < 0xe000 {
			return i, string(data[i : i+6])
		}
		i += 5
	}
	return from, "\\u...."
}

// ParseCreate parses and validates the body of POST /v1/events:
// {"event_type": "...", "payload": {...}}. Numbers keep the client's
// digits (N), strings are unescaped (S), and objects, arrays, booleans and
// null become M, L, BOOL and NULL.
//
// A fast parser decodes the body straight into the Payload; it accepts
// only what it can prove valid (I-JSON, exactly the members event_type and
// payload, a valid event type, the rules of ValidatePayload). Any other
// body goes to the reference decoder (encoding/json into map[string]any,
// then ValidatePayload), whose result is converted, so every error is the
// reference's own, message, byte offset and JSON Pointer included.
func ParseCreate(data []byte) (CreateRequest, error) {
	if req, ok := parseFast(data); ok {
		return req, nil
	}
	return parseCreate(data, 0)
}

// parseCreate is the reference decoder for data found at byte base of the
// body.
func parseCreate(data []byte, base int64) (CreateRequest, error) {
	typ, p, err := decodeCreate(data, base)
	if err != nil {
		return CreateRequest{}, err
	}
	return CreateRequest{EventType: typ, Payload: payloadOf(p)}, nil
}

// decodeCreate decodes and validates a create body with encoding/json: the
// event type and the payload decoded to map[string]any.
func decodeCreate(data []byte, base int64) (string, map[string]any, error) {
	var b createBody
	if err := decodeStrict(data, base, &b); err != nil {
		return "", nil, err
	}
	return b.validate()
}

func (b createBody) validate() (string, map[string]any, error) {
	if b.EventType == nil {
		return "", nil, inputErr(CodeInvalidEvent, "event_type is missing")
	}
	if !ValidEventType(*b.EventType) {
		return "", nil, inputErr(CodeInvalidEvent, "event_type %q is invalid: use 1-128 characters of [A-Za-z0-9._:-], starting with a letter or digit", truncate(*b.EventType, 64))
	}
	p, ok := b.Payload.(map[string]any)
	if !ok {
		if b.Payload == nil {
			return "", nil, inputErr(CodeInvalidPayload, "payload is missing or null: send a JSON object")
		}
		return "", nil, inputErr(CodeInvalidPayload, "payload must be a JSON object, not %s", jsonKind(b.Payload))
	}
	if err := ValidatePayload(p); err != nil {
		return "", nil, err
	}
	return *b.EventType, p, nil
}

// ParseBatch parses the body of POST /v1/events/batch: {"events": [...]}
// with 1-25 entries, each as ParseCreate parses a body. The whole-body
// error is non-nil only when the body as a whole is unusable (malformed
// JSON, not an object, an unknown or repeated member, events missing or of
// the wrong size); otherwise each entry has a request or its own error, so
// valid entries can be stored and invalid ones reported. An I-JSON
// violation inside one entry (invalid UTF-8, a lone surrogate, a duplicate
// name) is that entry's error; byte offsets in entry errors count from the
// start of the body.
func ParseBatch(data []byte) ([]CreateRequest, []error, error) {
	return parseBatch(data, true)
}

// parseBatch is ParseBatch, with each entry tried on the fast path first
// when fast is true and parsed by the reference decoder otherwise.
func parseBatch(data []byte, fast bool) ([]CreateRequest, []error, error) {
	entries, offsets, err := splitBatch(data)
	if err != nil {
		return nil, nil, err
	}
	n := len(entries)
	if n == 0 || n > MaxBatch {
		return nil, nil, inputErr(CodeInvalidBatch, "events has %d entries: send 1-%d", n, MaxBatch)
	}
	reqs := make([]CreateRequest, n)
	errs := make([]error, n)
	for i, raw := range entries {
		if fast {
			var ok bool
			if reqs[i], ok = parseFast(raw); ok {
				continue
			}
		}
		reqs[i], errs[i] = parseCreate(raw, offsets[i])
	}
	return reqs, errs, nil
}

// splitBatch reads {"events": [...]} and returns each entry's bytes and
// offset, unchecked beyond JSON syntax: the decoder here tolerates
// duplicate names and invalid UTF-8 so that such a problem inside an entry
// stays that entry's error. The top level is checked by hand: "events" is
// the only member and appears once.
func splitBatch(data []byte) ([][]byte, []int64, error) {
	dec := jsontext.NewDecoder(bytes.NewReader(data), jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	fail := func(err error) ([][]byte, []int64, error) { return nil, nil, describeJSONError(data, 0, err) }
	tok, err := dec.ReadToken()
	if err != nil {
		return fail(err)
	}
	if tok.Kind() != '{' {
		return nil, nil, inputErr(CodeInvalidJSON, "the body must be a JSON object, not %s", kindName(tok.Kind()))
	}
	var entries [][]byte
	var offsets []int64
	seen, isNull := false, false
	for dec.PeekKind() == '"' {
		name, err := dec.ReadValue()
		if err != nil {
			return fail(err)
		}
		nameAt := dec.InputOffset() - int64(len(name))
		if err := checkIJSON(name, nameAt); err != nil {
			return nil, nil, err
		}
		if name.String() != `"events"` {
			unq, _ := jsontext.AppendUnquote(nil, name)
			if string(unq) != "events" {
				return nil, nil, inputErr(CodeInvalidJSON, "unknown field %q", truncate(string(unq), 40))
			}
		}
		if seen {
			return nil, nil, inputErr(CodeInvalidJSON, "duplicate member name \"events\" at byte %d in the top-level object: request bodies are I-JSON (RFC 7493), where names are unique within an object", nameAt)
		}
		seen = true
		switch k := dec.PeekKind(); k {
		case '[':
			if _, err := dec.ReadToken(); err != nil {
				return fail(err)
			}
			for dec.PeekKind() != ']' {
				v, err := dec.ReadValue()
				if err != nil {
					return fail(err)
				}
				offsets = append(offsets, dec.InputOffset()-int64(len(v)))
				entries = append(entries, v.Clone())
			}
			if _, err := dec.ReadToken(); err != nil {
				return fail(err)
			}
		case 'n':
			if _, err := dec.ReadToken(); err != nil {
				return fail(err)
			}
			isNull = true
		default:
			if _, err := dec.ReadValue(); err != nil {
				return fail(err)
			}
			return nil, nil, inputErr(CodeInvalidJSON, "field \"events\" must not be %s", kindName(k))
		}
	}
	if _, err := dec.ReadToken(); err != nil {
		return fail(err)
	}
	if err := checkEnd(dec, data, 0); err != nil {
		return nil, nil, err
	}
	if !seen || isNull {
		return nil, nil, inputErr(CodeInvalidBatch, "events is missing: send {\"events\": [...]}")
	}
	return entries, offsets, nil
}

// kindName names a JSON kind as encoding/json's type errors do.
func kindName(k jsontext.Kind) string {
	switch k {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case '0':
		return "number"
	case 't', 'f':
		return "bool"
	case 'n':
		return "null"
	}
	return "invalid"
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
	if err := decodeStrict(data, 0, &b); err != nil {
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
// 1-100 ids, each a string (a null entry is an error naming it).
// Duplicates are dropped, first occurrence kept.
func ParseAck(data []byte) ([]string, error) {
	var b struct {
		// Pointers, so a null entry is told from "": encoding/json
		// leaves a string alone for null, and the null was acked as the
		// id "" (reported unknown) beside the other ids.
		EventIDs *[]*string `json:"event_ids"`
	}
	if err := decodeStrict(data, 0, &b); err != nil {
		return nil, err
	}
	if b.EventIDs == nil {
		return nil, inputErr(CodeInvalidAck, "event_ids is missing: send {\"event_ids\": [...]}")
	}
	ids := *b.EventIDs
	if len(ids) == 0 || len(ids) > MaxAck {
		return nil, inputErr(CodeInvalidAck, "event_ids has %d entries: send 1-%d", len(ids), MaxAck)
	}
	for i, id := range ids {
		if id == nil {
			return nil, inputErr(CodeInvalidAck, "event_ids[%d] is null: send each event id as a string", i)
		}
	}
	seen := make(map[string]bool, len(ids))
	out := make([]string, 0, len(ids))
	for _, p := range ids {
		if id := *p; !seen[id] {
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
			n, err := ParseQueryNumber("limit", v, 1, MaxLimit)
			if err != nil {
				return p, err
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

// ParseQueryNumber parses the value v of the numeric query parameter name:
// a whole number from lo to hi (lo >= 0) written canonically, in ASCII
// decimal digits only, without a sign or a leading zero ("0" itself when
// lo is 0). Anything else is an invalid_parameter error naming the
// parameter, the value as sent (cut at 40 bytes) and the accepted form.
// strconv.Atoi, used before, also took "+5", "05" and
// "0000000000000000000000005" for 5: a value the API read otherwise than
// a stricter reader (a cache key, a log search, a proxy's rule) would
// (found by review). Every numeric query parameter of the API is parsed
// here.
func ParseQueryNumber(name, v string, lo, hi int) (int, error) {
	canonical := v != "" && len(v) <= len(strconv.Itoa(hi)) && (v[0] != '0' || v == "0")
	for i := 0; canonical && i < len(v); i++ {
		canonical = '0' <= v[i] && v[i] <= '9'
	}
	n, err := strconv.Atoi(v)
	if !canonical || err != nil || n < lo || n > hi {
		return 0, inputErr(CodeInvalidParameter, "%s %q is invalid: use a whole number from %d to %d in decimal digits only (no sign, leading zero, space, decimal point or exponent)", name, truncate(v, 40), lo, hi)
	}
	return n, nil
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

// ParseRawListQuery is ParseListQuery for the raw query string of GET
// /v1/inbox (r.URL.RawQuery): a malformed query (a bad %-escape, a ';'
// separator) is an invalid_parameter error instead of pairs silently
// dropped, which url.URL.Query would do.
func ParseRawListQuery(rawQuery string) (ListParams, error) {
	q, err := url.ParseQuery(rawQuery)
	if err != nil {
		return ListParams{Status: Received, Limit: DefaultLimit}, inputErr(CodeInvalidParameter, "the query string is malformed: %s", truncate(err.Error(), 80))
	}
	return ParseListQuery(q)
}
