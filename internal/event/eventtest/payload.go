package eventtest

import (
	"encoding/base64"
	"encoding/json"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/triggers-dev/triggers/internal/event"
)

// Payload returns the payload of the JSON object s, numbers with their
// digits; it fails t when s is not one.
func Payload(t testing.TB, s string) event.Payload {
	t.Helper()
	var p event.Payload
	if err := json.Unmarshal([]byte(s), &p); err != nil || p == nil {
		t.Fatalf("eventtest.Payload(%s): %v (want a JSON object)", s, err)
	}
	return p
}

// PayloadOf returns the payload of m, through its JSON (encoding/json's
// encoding of m): for payloads written as Go values.
func PayloadOf(t testing.TB, m map[string]any) event.Payload {
	t.Helper()
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatalf("eventtest.PayloadOf(%v): %v", m, err)
	}
	return Payload(t, string(b))
}

// Decoded returns p as decoded JSON (numbers as json.Number), for tests
// that look into a payload or compare it with encoding/json's view.
func Decoded(p event.Payload) map[string]any {
	return FromAttributeValue(&types.AttributeValueMemberM{Value: p}).(map[string]any)
}

// FromAttributeValue converts a DynamoDB attribute value to decoded JSON
// (numbers become json.Number with DynamoDB's digits, sets arrays, binary
// values base64 strings): the reference the payload's own JSON encoding is
// held to.
func FromAttributeValue(av types.AttributeValue) any {
	switch x := av.(type) {
	case *types.AttributeValueMemberNULL:
		return nil
	case *types.AttributeValueMemberBOOL:
		return x.Value
	case *types.AttributeValueMemberS:
		return x.Value
	case *types.AttributeValueMemberN:
		return json.Number(x.Value)
	case *types.AttributeValueMemberM:
		m := make(map[string]any, len(x.Value))
		for k, e := range x.Value {
			m[k] = FromAttributeValue(e)
		}
		return m
	case *types.AttributeValueMemberL:
		l := make([]any, len(x.Value))
		for i, e := range x.Value {
			l[i] = FromAttributeValue(e)
		}
		return l
	case *types.AttributeValueMemberSS:
		l := make([]any, len(x.Value))
		for i, e := range x.Value {
			l[i] = e
		}
		return l
	case *types.AttributeValueMemberNS:
		l := make([]any, len(x.Value))
		for i, e := range x.Value {
			l[i] = json.Number(e)
		}
		return l
	case *types.AttributeValueMemberB:
		return base64.StdEncoding.EncodeToString(x.Value)
	case *types.AttributeValueMemberBS:
		l := make([]any, len(x.Value))
		for i, e := range x.Value {
			l[i] = base64.StdEncoding.EncodeToString(e)
		}
		return l
	}
	return nil
}
