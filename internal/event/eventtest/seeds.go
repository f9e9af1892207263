// Package eventtest holds test inputs and helpers shared by the tests of
// the packages that parse, store or deliver events: request bodies, and
// payloads built from JSON or read back as decoded JSON. It is imported by
// tests only.
package eventtest

import (
	"fmt"
	"strings"
)

// BodySeeds are request bodies for POST /v1/events that fuzz targets and
// differential tests start from: valid events, every kind of malformed
// JSON, I-JSON (RFC 7493) violations and numbers DynamoDB rejects. More
// live in internal/event/testdata/fuzz.
var BodySeeds = []string{
	`{"event_type":"user.created","payload":{"email":"a@example.com"}}`,
	`{"event_type":"x","payload":{"n":123456789012345678901234567890,"d":0.1,"e":1e-130,"u":"\u00e9👋","z":null,"t":true,"a":[],"o":{}}}`,
	`{"event_type":"x","payload":[]}`,
	`{"event_type":"x","payload":{"":1}}`,
	`{"event_type":"x","payload":{"a":1e126}}`,
	`{"event_type":"x#y","payload":{}}`,
	`{"event_type":"x","payload":{}} trailing`,
	`{"event_type":"x","payload":{"a":{"a":{"a":{"a":{"a":[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]}}}}}}`,
	`{"event_type":"x","extra":1,"payload":{}}`,
	``, `null`, `[]`, `{`, `"s"`,
	// I-JSON (RFC 7493) violations and numbers DynamoDB rejects.
	`{"event_type":"a","event_type":"b","payload":{}}`,
	`{"event_type":"a","payload":{"k":1,"k":2}}`,
	"{\"event_type\":\"a\",\"payload\":{\"s\":\"\xff\"}}",
	`{"event_type":"a","payload":{"s":"\ud800"}}`,
	`{"event_type":"a","payload":{"s":"\ud83d\ude00"}}`,
	`{"event_type":"a","payload":{"n":0e2147483648}}`,
	`{"event_type":"a","payload":{"n":0e125,"m":-0.0e-130}}`,
}

// Body returns a POST /v1/events body of about size bytes with a realistic
// mix of strings, numbers, nesting and arrays: the benchmarks' and the
// differential tests' large inputs.
func Body(size int) []byte {
	var b strings.Builder
	b.WriteString(`{"event_type":"order.completed","payload":{"order_id":"ord_8f14e45fceea167a","total":1234.56,"currency":"EUR","customer":{"id":123456789012345678901,"email":"someone@example.com","tags":["vip","beta"]},"items":[`)
	for i := 0; b.Len() < size-40; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"sku":"SKU-%06d","qty":%d,"price":%d.99,"gift":%t,"note":null}`, i, i%7+1, i%500, i%3 == 0)
	}
	b.WriteString(`]}}`)
	return []byte(b.String())
}
