package event_test

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/internal/event"
)

// envelopeSize is what e takes in the API function's Lambda answer: its
// JSON as the API writes it, as a string in the proxy response's JSON
// (aws-lambda-go marshals with encoding/json, HTML escaping on), without
// the string's quotes.
func envelopeSize(t *testing.T, e event.Event) int {
	t.Helper()
	body, err := e.AppendJSON(nil)
	require.NoError(t, err)
	env, err := json.Marshal(string(body))
	require.NoError(t, err)
	return len(env) - 2
}

func sizedEvent(t *testing.T, body string) event.Event {
	t.Helper()
	req, err := event.ParseCreate([]byte(body))
	require.NoError(t, err, "%.200s", body)
	e, err := event.New(req, time.Date(2026, 11, 27, 7, 0, 0, 0, time.UTC), 24*time.Hour, event.Metadata{SourceIP: "203.0.113.9", CorrelationID: `corr-"<&>"`})
	require.NoError(t, err)
	return e
}

// WireSize never undercounts, whatever the payload's characters (the
// escapes of both encodings at their worst), and stays close for plain
// text, so pages of ordinary events are not cut early.
func TestWireSizeBoundsTheLambdaAnswer(t *testing.T) {
	quoted := func(s string) string {
		b, err := json.Marshal(s)
		require.NoError(t, err)
		return string(b)
	}
	cases := map[string]string{
		"empty":          `{"event_type":"a","payload":{}}`,
		"plain":          `{"event_type":"order.paid","payload":{"order":"A-1","amount":12.5,"ok":true,"none":null}}`,
		"control":        `{"event_type":"a","payload":{"s":` + quoted(strings.Repeat("\x01\x1f\n\t", 500)) + `}}`,
		"quotes":         `{"event_type":"a","payload":{"s":` + quoted(strings.Repeat(`"\`, 500)) + `}}`,
		"html":           `{"event_type":"a","payload":{"<k&>":` + quoted(strings.Repeat("<>&", 500)) + `}}`,
		"line separator": `{"event_type":"a","payload":{"s":` + quoted(strings.Repeat("\u2028\u2029", 500)) + `}}`,
		"unicode":        `{"event_type":"a","payload":{"s":` + quoted(strings.Repeat("日本語🙂é—", 300)) + `}}`,
		"nested":         `{"event_type":"a","payload":{"a":[1,[2,{"b":"\u0000"}],{"c":[]}],"d":{"e":{"f":-1e-7}}}}`,
	}
	for name, body := range cases {
		e := sizedEvent(t, body)
		assert.GreaterOrEqual(t, e.WireSize(), envelopeSize(t, e), name)
	}

	// Random strings over the characters that escape differently.
	alphabet := []string{"a", " ", "\"", "\\", "\x00", "\x1f", "\n", "<", ">", "&", "\u2028", "\u2029", "é", "日", "🙂", "\u007f", "/"}
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 300 {
		var b strings.Builder
		for range r.IntN(400) {
			b.WriteString(alphabet[r.IntN(len(alphabet))])
		}
		e := sizedEvent(t, `{"event_type":"a","payload":{`+quoted("k")+`:[`+quoted(b.String())+`,{"x":`+quoted(b.String())+`}]}}`)
		require.GreaterOrEqual(t, e.WireSize(), envelopeSize(t, e), "case %d: %q", i, b.String())
	}

	// Plain text: within 1 % and the fixed overhead.
	e := sizedEvent(t, `{"event_type":"logs","payload":{"line":`+quoted(strings.Repeat("request served in 12 ms, status 200; ", 5000))+`}}`)
	assert.LessOrEqual(t, e.WireSize(), envelopeSize(t, e)*101/100+400)
}

// Attempt.WireSize bounds an attempt in the Lambda response too, however
// the receiver's response escapes.
func TestAttemptWireSizeBoundsTheLambdaAnswer(t *testing.T) {
	for _, resp := range []string{"", "ok", strings.Repeat("\x01", 1000), strings.Repeat(`"<\`, 333), strings.Repeat("\u2028é", 300)} {
		a := event.Attempt{SubscriptionID: "sub_aaaaaaaaaaaaaaaaaaaaaaaaaa", Number: 12, Timestamp: "2026-11-27T07:00:00.123456Z", Outcome: "failed",
			StatusCode: 503, LatencyMs: 12345, Response: resp, Error: `dial "x": <timeout>`, NextAttemptAt: "2026-11-27T08:00:00.123456Z"}
		var b strings.Builder
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false) // as the API writes its answers
		require.NoError(t, enc.Encode(a))
		env, err := json.Marshal(b.String())
		require.NoError(t, err)
		assert.GreaterOrEqual(t, a.WireSize(), len(env)-2, "%q", resp)
	}
}
