package event_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/internal/event"
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

// stored is a StoredPayload for the tests: fixed JSON, or an error.
type stored struct {
	json string
	err  error
	html *bool // records the escapeHTML it was asked for
}

func (s stored) AppendJSON(dst []byte, escapeHTML bool) ([]byte, error) {
	if s.html != nil {
		*s.html = escapeHTML
	}
	if s.err != nil {
		return dst, s.err
	}
	return append(dst, s.json...), nil
}

// plain has Event's fields and tags but not its MarshalJSON: what
// encoding/json wrote for an Event before AppendJSON existed.
type plain event.Event

// AppendJSON writes an event exactly as encoding/json writes it with HTML
// escaping off (the API's bodies), whichever of its fields are set, and
// MarshalJSON (through json.Marshal, HTML escaping on) as encoding/json
// wrote it by reflection.
func TestEventAppendJSONMatchesEncodingJSON(t *testing.T) {
	base := event.Event{
		ID: "01a2b3c4-0000-7000-8000-000000000001", Type: "order.<created>&more", Status: event.Retrying,
		Timestamp: "2026-11-23T10:00:00.000001Z", RetryCount: 3, TTL: 42,
		Metadata: event.Metadata{SourceIP: "192.0.2.1", APIVersion: "v1"},
	}
	withCorrelation := base
	withCorrelation.Metadata.CorrelationID = "corr-<1>\u2028"
	withPayload := withCorrelation
	withPayload.Payload = map[string]any{"b": []any{json.Number("1.50"), true, nil}, "a": "<x>&\u2029", "c": map[string]any{}}
	for name, e := range map[string]event.Event{"no payload": base, "correlation id": withCorrelation, "payload": withPayload} {
		got, err := e.AppendJSON([]byte("x"))
		require.NoError(t, err, name)
		assert.Equal(t, "x"+encodingJSON(t, plain(e), false), string(got), name)

		marshaled, err := json.Marshal(e)
		require.NoError(t, err, name)
		reflected, err := json.Marshal(plain(e))
		require.NoError(t, err, name)
		assert.Equal(t, string(reflected), string(marshaled), name)
	}
	assert.Contains(t, encodingJSON(t, plain(base), false), `"payload":null`)

	// A stored payload is written as it writes itself, HTML escaping off;
	// Payload wins when both are set.
	var html = true
	e := base
	e.Stored = stored{json: `{"k":[1,"<v>"]}`, html: &html}
	got, err := e.AppendJSON(nil)
	require.NoError(t, err)
	assert.False(t, html, "asked without HTML escaping")
	want := base
	want.Payload = map[string]any{"k": []any{json.Number("1"), "<v>"}}
	assert.Equal(t, encodingJSON(t, plain(want), false), string(got))
	e.Payload = map[string]any{"from": "Payload"}
	got, err = e.AppendJSON(nil)
	require.NoError(t, err)
	assert.Contains(t, string(got), `"payload":{"from":"Payload"},`)

	// Errors of either payload come back.
	boom := errors.New("boom")
	e = base
	e.Stored = stored{err: boom}
	_, err = e.AppendJSON(nil)
	assert.ErrorIs(t, err, boom)
	e = base
	e.Payload = map[string]any{"n": json.Number("not a number")}
	_, err = e.AppendJSON(nil)
	assert.Error(t, err, "encoding/json refuses an invalid json.Number")
	_, err = json.Marshal(e)
	assert.Error(t, err)
}
