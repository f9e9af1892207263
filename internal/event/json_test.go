package event_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/internal/event"
	"github.com/triggers-dev/triggers/internal/event/eventtest"
)

// encodingJSON is what encoding/json writes for v, without the trailing
// newline, with or without HTML escaping.
func encodingJSON(t *testing.T, v any, escapeHTML bool) string {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(escapeHTML)
	require.NoError(t, enc.Encode(v))
	return strings.TrimSuffix(buf.String(), "\n")
}

// AppendString writes every string as encoding/json does: each ASCII
// byte alone and between other text (which bytes pass as they are, which
// get a short escape, which \u00XX, and <, > and & only with HTML
// escaping), invalid UTF-8 byte by byte as \ufffd, U+2028 and U+2029
// escaped, other multi-byte runes as they are.
func TestAppendStringMatchesEncodingJSON(t *testing.T) {
	var cases []string
	for b := 0; b < 0x80; b++ {
		cases = append(cases, string(rune(b)), "a"+string(rune(b))+"z", string(rune(b))+string(rune(b)))
	}
	cases = append(cases,
		"", "plain", "é ü 日本 😀", "\u2028", "x\u2029y", "\u2027\u202a",
		"\xff", "a\xffb", "\xe2\x80", "\xe2\x80\xa8\xe2", "\xc3\x28", "ok\x80\x80ok",
		`<script>alert("x&y")</script>`, "tab\tnew\nline\r\f\b\\",
	)
	for _, s := range cases {
		for _, html := range []bool{true, false} {
			want := encodingJSON(t, s, html)
			got := string(event.AppendString([]byte("prefix:"), s, html))
			assert.Equal(t, "prefix:"+want, got, "%q escapeHTML=%v", s, html)
		}
	}
}

// plain has Event's fields and tags, the payload decoded to
// map[string]any, and no MarshalJSON: what encoding/json writes for an
// event by reflection, the reference of Event.AppendJSON.
type plain struct {
	ID         string         `json:"event_id"`
	Type       string         `json:"event_type"`
	Payload    map[string]any `json:"payload"`
	Status     event.Status   `json:"status"`
	Timestamp  string         `json:"timestamp"`
	RetryCount int            `json:"retry_count"`
	Metadata   event.Metadata `json:"metadata"`
}

// plainOf is e with its payload decoded (a nil payload to the empty
// object).
func plainOf(e event.Event) plain { return plainWith(e, eventtest.Decoded(e.Payload)) }

// plainWith is e with the payload p, already decoded.
func plainWith(e event.Event, p map[string]any) plain {
	return plain{ID: e.ID, Type: e.Type, Payload: p, Status: e.Status, Timestamp: e.Timestamp, RetryCount: e.RetryCount, Metadata: e.Metadata}
}

// AppendJSON writes an event exactly as encoding/json writes it with HTML
// escaping off (the API's bodies), whichever of its fields are set, and
// MarshalJSON (through json.Marshal, HTML escaping on) as encoding/json
// writes it by reflection.
func TestEventAppendJSONMatchesEncodingJSON(t *testing.T) {
	base := event.Event{
		ID: "01a2b3c4-0000-7000-8000-000000000001", Type: "order.<created>&more", Status: event.Retrying,
		Timestamp: "2026-11-23T10:00:00.000001Z", RetryCount: 3, TTL: 42,
		Metadata: event.Metadata{SourceIP: "192.0.2.1", APIVersion: "v1"},
	}
	withCorrelation := base
	withCorrelation.Metadata.CorrelationID = "corr-<1>\u2028"
	withPayload := withCorrelation
	withPayload.Payload = eventtest.Payload(t, `{"b":[1.50,true,null],"a":"<x>&\u2029","c":{}}`)
	for name, e := range map[string]event.Event{"no payload": base, "correlation id": withCorrelation, "payload": withPayload} {
		got, err := e.AppendJSON([]byte("x"))
		require.NoError(t, err, name)
		assert.Equal(t, "x"+encodingJSON(t, plainOf(e), false), string(got), name)

		marshaled, err := json.Marshal(e)
		require.NoError(t, err, name)
		reflected, err := json.Marshal(plainOf(e))
		require.NoError(t, err, name)
		assert.Equal(t, string(reflected), string(marshaled), name)
	}
	got, err := base.AppendJSON(nil)
	require.NoError(t, err)
	assert.Contains(t, string(got), `"payload":{},`, "a nil payload is the empty object")
	assert.Contains(t, encodingJSON(t, plainWith(withPayload, map[string]any{"b": []any{json.Number("1.50"), true, nil}, "a": "<x>&\u2029", "c": map[string]any{}}), false), `"payload":{"a":"<x>&\u2029","b":[1.50,true,null],"c":{}}`)

	// A stored number that is not a JSON number fails, as encoding/json
	// refuses such a json.Number.
	e := base
	e.Payload = event.Payload{"n": &types.AttributeValueMemberN{Value: "not a number"}}
	_, err = e.AppendJSON(nil)
	assert.ErrorIs(t, err, event.ErrInvalidNumber)
	_, err = json.Marshal(e)
	assert.Error(t, err)
	_, err = json.Marshal(plainWith(e, map[string]any{"n": json.Number("not a number")}))
	assert.Error(t, err, "encoding/json refuses an invalid json.Number")
}

// A Payload is a JSON object wherever encoding/json meets it, and reads
// back from its own JSON: null is the nil Payload, anything but an object
// an error.
func TestPayloadJSONRoundTrip(t *testing.T) {
	p := eventtest.Payload(t, `{"a":[1e5,"<s>",{"n":null}],"b":false}`)
	b, err := json.Marshal(p)
	require.NoError(t, err)
	assert.Equal(t, `{"a":[1e5,"\u003cs\u003e",{"n":null}],"b":false}`, string(b))
	var back event.Payload
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, p, back)
	require.NoError(t, json.Unmarshal([]byte(`null`), &back))
	assert.Nil(t, back)
	for _, bad := range []string{`[]`, `"s"`, `1`, `true`} {
		assert.ErrorContains(t, json.Unmarshal([]byte(bad), &back), "must be a JSON object", bad)
	}
	assert.Error(t, back.UnmarshalJSON([]byte(`{`)))
}
