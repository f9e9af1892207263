// Event payloads in DynamoDB's form and their JSON.

package event

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Payload is an event's payload, a JSON object, in the form DynamoDB
// stores it: the Value of the event item's payload attribute (M). Numbers
// are N with the client's digits, strings S, objects M, arrays L, booleans
// BOOL and null NULL. A nil Payload is the empty object.
//
// ParseCreate decodes request bodies straight into this form, the store
// writes and reads it as it is, and AppendJSON writes it straight to the
// JSON encoding/json writes for the same object decoded to map[string]any
// (numbers as json.Number): no map[string]any either way.
type Payload map[string]types.AttributeValue

// AppendJSON appends p's JSON to dst: what encoding/json writes for the
// payload decoded (keys sorted, numbers as stored, strings escaped as
// encoding/json escapes them; sets as arrays and binary values as base64
// strings, which the API never stores). escapeHTML escapes <, > and & as
// encoding/json does by default. It fails only for values encoding/json
// refuses too: an N that is not a JSON number.
func (p Payload) AppendJSON(dst []byte, escapeHTML bool) ([]byte, error) {
	e := getEncoder(escapeHTML)
	defer putEncoder(e)
	return e.appendMap(dst, p)
}

// MarshalJSON implements json.Marshaler with AppendJSON, so that a
// Payload encodes as its JSON object wherever encoding/json meets it.
func (p Payload) MarshalJSON() ([]byte, error) { return p.AppendJSON(nil, false) }

// UnmarshalJSON implements json.Unmarshaler: data is a JSON object, or
// null for a nil Payload; numbers keep their digits. It decodes without
// the API's rules for payloads (ParseCreate applies them): it is for
// reading the API's own output back.
func (p *Payload) UnmarshalJSON(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return err
	}
	switch x := v.(type) {
	case nil:
		*p = nil
	case map[string]any:
		*p = payloadOf(x)
	default:
		return fmt.Errorf("a payload must be a JSON object, not %s", jsonKind(v))
	}
	return nil
}

// payloadOf converts a payload decoded by encoding/json (numbers as
// json.Number) to attribute values: numbers go to N as their original
// digits, so nothing is lost to float64.
func payloadOf(m map[string]any) Payload {
	p := make(Payload, len(m))
	for k, v := range m {
		p[k] = attributeValue(v)
	}
	return p
}

// attributeValue converts one decoded JSON value (map[string]any, []any,
// string, json.Number, bool or nil) to an attribute value.
func attributeValue(v any) types.AttributeValue {
	switch x := v.(type) {
	case bool:
		return &types.AttributeValueMemberBOOL{Value: x}
	case string:
		return &types.AttributeValueMemberS{Value: x}
	case json.Number:
		return &types.AttributeValueMemberN{Value: string(x)}
	case map[string]any:
		return &types.AttributeValueMemberM{Value: payloadOf(x)}
	case []any:
		l := make([]types.AttributeValue, len(x))
		for i, e := range x {
			l[i] = attributeValue(e)
		}
		return &types.AttributeValueMemberL{Value: l}
	}
	// nil, and nothing else: decoded JSON holds no other types.
	return &types.AttributeValueMemberNULL{Value: true}
}

// encoder holds the scratch space of one encoding: the members of the
// maps being written, innermost last.
type encoder struct {
	escapeHTML bool
	members    []member
}

// member is one key and value of a map.
type member struct {
	k string
	v types.AttributeValue
}

var encoders = sync.Pool{New: func() any { return &encoder{members: make([]member, 0, 64)} }}

func getEncoder(escapeHTML bool) *encoder {
	e := encoders.Get().(*encoder)
	e.escapeHTML = escapeHTML
	return e
}

func putEncoder(e *encoder) {
	if cap(e.members) <= 4096 {
		clear(e.members[:cap(e.members)])
		e.members = e.members[:0]
		encoders.Put(e)
	}
}

// errInvalidNumber is the error of an N that is not a JSON number.
var errInvalidNumber = errors.New("invalid number literal")

func (e *encoder) appendValue(dst []byte, av types.AttributeValue) ([]byte, error) {
	switch x := av.(type) {
	case *types.AttributeValueMemberS:
		return AppendString(dst, x.Value, e.escapeHTML), nil
	case *types.AttributeValueMemberN:
		return appendNumber(dst, x.Value)
	case *types.AttributeValueMemberBOOL:
		if x.Value {
			return append(dst, "true"...), nil
		}
		return append(dst, "false"...), nil
	case *types.AttributeValueMemberM:
		return e.appendMap(dst, x.Value)
	case *types.AttributeValueMemberL:
		dst = append(dst, '[')
		for i, v := range x.Value {
			if i > 0 {
				dst = append(dst, ',')
			}
			var err error
			if dst, err = e.appendValue(dst, v); err != nil {
				return dst, err
			}
		}
		return append(dst, ']'), nil
	case *types.AttributeValueMemberSS:
		dst = append(dst, '[')
		for i, v := range x.Value {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = AppendString(dst, v, e.escapeHTML)
		}
		return append(dst, ']'), nil
	case *types.AttributeValueMemberNS:
		dst = append(dst, '[')
		for i, v := range x.Value {
			if i > 0 {
				dst = append(dst, ',')
			}
			var err error
			if dst, err = appendNumber(dst, v); err != nil {
				return dst, err
			}
		}
		return append(dst, ']'), nil
	case *types.AttributeValueMemberB:
		return appendBase64(dst, x.Value), nil
	case *types.AttributeValueMemberBS:
		dst = append(dst, '[')
		for i, v := range x.Value {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendBase64(dst, v)
		}
		return append(dst, ']'), nil
	}
	// NULL, nil and member types this package does not know: the
	// reference decodes them to nil.
	return append(dst, "null"...), nil
}

// appendMap writes m with its keys sorted byte-wise, as encoding/json
// sorts map keys (strings.Compare).
func (e *encoder) appendMap(dst []byte, m map[string]types.AttributeValue) ([]byte, error) {
	start := len(e.members)
	for k, v := range m {
		e.members = append(e.members, member{k, v})
	}
	end := len(e.members)
	slices.SortFunc(e.members[start:end], func(a, b member) int { return strings.Compare(a.k, b.k) })
	dst = append(dst, '{')
	for i := start; i < end; i++ {
		if i > start {
			dst = append(dst, ',')
		}
		// Nested maps append to e.members beyond end, which may move
		// it: index it afresh each time.
		mb := e.members[i]
		dst = AppendString(dst, mb.k, e.escapeHTML)
		dst = append(dst, ':')
		var err error
		if dst, err = e.appendValue(dst, mb.v); err != nil {
			e.members = e.members[:start]
			return dst, err
		}
	}
	e.members = e.members[:start]
	return append(dst, '}'), nil
}

// appendNumber writes a stored number as encoding/json writes a
// json.Number: "" as 0, anything that is not a JSON number an error.
func appendNumber(dst []byte, s string) ([]byte, error) {
	if s == "" {
		s = "0"
	}
	if !isJSONNumber(s) {
		return dst, fmt.Errorf("%w %q", errInvalidNumber, s)
	}
	return append(dst, s...), nil
}

func appendBase64(dst, b []byte) []byte {
	dst = append(dst, '"')
	dst = base64.StdEncoding.AppendEncode(dst, b)
	return append(dst, '"')
}

// isJSONNumber reports whether s is exactly one number of the JSON
// grammar (RFC 8259): -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?.
func isJSONNumber(s string) bool {
	n, _ := scanNumber(s, 0)
	return n == len(s) && n > 0
}

// scanNumber scans a JSON number at s[i:] and returns the index just
// after it (i when none starts there) and whether it has an exponent.
func scanNumber(s string, i int) (int, bool) {
	start := i
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && '1' <= s[i] && s[i] <= '9':
		for i++; i < len(s) && isDigit(s[i]); i++ {
		}
	default:
		return start, false
	}
	exp := false
	if i < len(s) && s[i] == '.' {
		i++
		if i >= len(s) || !isDigit(s[i]) {
			return start, false
		}
		for i++; i < len(s) && isDigit(s[i]); i++ {
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		exp = true
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if i >= len(s) || !isDigit(s[i]) {
			return start, false
		}
		for i++; i < len(s) && isDigit(s[i]); i++ {
		}
	}
	return i, exp
}
