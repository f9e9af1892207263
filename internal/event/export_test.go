package event

import "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

// ParseFast exposes the fast path alone to the differential tests, so they
// can tell what it accepted from what it handed to the reference.
var ParseFast = parseFast

// ParseCreateReference is ParseCreate on the reference decoder alone
// (encoding/json, ValidatePayload, the payload converted).
func ParseCreateReference(data []byte) (CreateRequest, error) { return parseCreate(data, 0) }

// DecodeCreateReference is the reference decoder before the conversion:
// the event type and the payload decoded to map[string]any.
func DecodeCreateReference(data []byte) (string, map[string]any, error) {
	return decodeCreate(data, 0)
}

// ParseBatchReference is ParseBatch with every entry on the reference
// decoder.
func ParseBatchReference(data []byte) ([]CreateRequest, []error, error) {
	return parseBatch(data, false)
}

// PayloadOf is the reference decoder's conversion of a decoded payload.
var PayloadOf = payloadOf

// ErrInvalidNumber is the error AppendValue wraps for a stored number that
// is not a JSON number.
var ErrInvalidNumber = errInvalidNumber

// AppendValue appends the JSON of one attribute value to dst (for the
// tests: the API writes whole payloads, Payload.AppendJSON), as
// encoding/json writes the value decoded: NULL as null, N as its digits
// (an N that is not a JSON number is an error, as for json.Number), maps
// with sorted keys, sets as arrays, binary values as base64 strings, and
// an unknown or nil value as null.
func AppendValue(dst []byte, av types.AttributeValue, escapeHTML bool) ([]byte, error) {
	e := getEncoder(escapeHTML)
	defer putEncoder(e)
	return e.appendValue(dst, av)
}
