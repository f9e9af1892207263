// The size of an event in the API function's answer, to keep inbox pages
// within Lambda's response limit.

package event

import (
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// MaxPageWireBytes bounds the sum of an inbox page's WireSize: Lambda
// answers a synchronous invocation of at most 6 MB (6,291,456 bytes, the
// whole JSON response envelope), and API Gateway turns a larger one into a
// 502. The rest is room for the headers and the page's own fields.
const MaxPageWireBytes = 5 << 20

// wireEventOverhead bounds what an event's JSON adds to its strings and
// payload, escaped in the envelope: its field names, quotes, braces,
// commas and retry count.
const wireEventOverhead = 320

// WireSize returns an upper bound of the bytes e takes in the API
// function's Lambda response: its JSON as the API writes it, escaped once
// more as the body string of the API Gateway proxy response (aws-lambda-go
// escapes <, > and & there too). Its worst case is 7 bytes for a byte of
// payload (a control character: \u0001 in the JSON, \\u0001 in the
// envelope), so a page of events that are mostly such characters holds
// fewer of them than the limit asks for. It walks the payload without
// writing it.
func (e Event) WireSize() int {
	n := wireEventOverhead + wireString(e.ID) + wireString(e.Type) + wireString(string(e.Status)) +
		wireString(e.Timestamp) + wireString(e.Metadata.SourceIP) + wireString(e.Metadata.APIVersion) +
		wireString(e.Metadata.CorrelationID)
	return n + wireMap(e.Payload)
}

// wireMap bounds an object's bytes: each member's quoted key, colon and
// comma (the quotes escaped in the envelope) and its value.
func wireMap(m map[string]types.AttributeValue) int {
	n := 2
	for k, v := range m {
		n += wireString(k) + 6 + wireValue(v)
	}
	return n
}

// wireValue bounds a payload value's bytes.
func wireValue(av types.AttributeValue) int {
	switch v := av.(type) {
	case *types.AttributeValueMemberS:
		return wireString(v.Value) + 4
	case *types.AttributeValueMemberN:
		return len(v.Value)
	case *types.AttributeValueMemberM:
		return wireMap(v.Value)
	case *types.AttributeValueMemberL:
		n := 2
		for _, x := range v.Value {
			n += 1 + wireValue(x)
		}
		return n
	case *types.AttributeValueMemberSS:
		n := 2
		for _, s := range v.Value {
			n += 5 + wireString(s)
		}
		return n
	case *types.AttributeValueMemberNS:
		n := 2
		for _, s := range v.Value {
			n += 1 + len(s)
		}
		return n
	case *types.AttributeValueMemberB:
		return 4 + (len(v.Value)+2)/3*4
	case *types.AttributeValueMemberBS:
		n := 2
		for _, b := range v.Value {
			n += 5 + (len(b)+2)/3*4
		}
		return n
	}
	return 5 // true, false, null
}

// wireString bounds the bytes of a string's characters (not its quotes)
// written in JSON and escaped again in the envelope: " and \ take 4
// (\\\" and \\\\), control characters and <, > and & 7 (\\u003c), the
// lead byte of a three-byte UTF-8 sequence 7 (U+2028 and U+2029 become
// \\u2028), any other byte 1 (payload strings are valid UTF-8: ParseCreate
// refuses anything else).
func wireString(s string) int {
	n := len(s)
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			n += 3
		case c < 0x20 || c == '<' || c == '>' || c == '&' || c == 0xE2:
			n += 6
		}
	}
	return n
}

// wireAttemptOverhead bounds what an attempt's JSON adds to its strings,
// escaped in the envelope: field names, quotes, numbers.
const wireAttemptOverhead = 260

// WireSize returns an upper bound of the bytes a takes in the API
// function's Lambda response, as Event.WireSize does for an event.
func (a Attempt) WireSize() int {
	return wireAttemptOverhead + wireString(a.SubscriptionID) + wireString(a.Timestamp) + wireString(a.Outcome) +
		wireString(a.Response) + wireString(a.Error) + wireString(a.NextAttemptAt)
}
