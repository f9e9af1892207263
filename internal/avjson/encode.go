// Package avjson moves event payloads between request JSON, DynamoDB
// attribute values and response JSON without map[string]any in between:
// ParseCreate decodes a POST /v1/events body straight into attribute
// values, and Payload writes stored attribute values straight to the JSON
// encoding/json would write for them once decoded (item.FromAttributeValue).
//
// The reference is the map[string]any path (event.ParseCreate,
// store.ToAttributeValue, item.FromAttributeValue and encoding/json); the
// package's differential tests and fuzz target hold both to the same
// items, bytes and errors. The fast parser handles valid input only: on
// anything it does not accept it hands the body to event.ParseCreate, so
// every error is the reference's own.
package avjson

import (
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/triggers-dev/triggers/internal/event"
)

// Payload is an event payload as stored: the Value of the item's payload
// attribute (M). It implements event.StoredPayload. A nil Payload is the
// empty object, as item.EventFromItem reads a missing payload.
type Payload map[string]types.AttributeValue

// AppendJSON appends p's JSON to dst: what encoding/json writes for
// item.FromAttributeValue of p (keys sorted, numbers as stored).
func (p Payload) AppendJSON(dst []byte, escapeHTML bool) ([]byte, error) {
	e := getEncoder(escapeHTML)
	defer putEncoder(e)
	return e.appendMap(dst, p)
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
var errInvalidNumber = errors.New("avjson: invalid number literal")

func (e *encoder) appendValue(dst []byte, av types.AttributeValue) ([]byte, error) {
	switch x := av.(type) {
	case *types.AttributeValueMemberS:
		return event.AppendString(dst, x.Value, e.escapeHTML), nil
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
			dst = event.AppendString(dst, v, e.escapeHTML)
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
		dst = event.AppendString(dst, mb.k, e.escapeHTML)
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

func isDigit(c byte) bool { return '0' <= c && c <= '9' }
