package httpapi_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/internal/ddb/ddbtest"
	"github.com/triggers-dev/triggers/internal/event/eventtest"
)

func decode(t *testing.T, s string) any {
	t.Helper()
	var v any
	require.NoError(t, jsonUnmarshal([]byte(s), &v), "%s", s)
	return v
}

func TestPayloadRoundTrip(t *testing.T) {
	e := newEnv(t)
	deep := strings.Repeat(`{"d":`, 29) + `[null]` + strings.Repeat(`}`, 29)
	payloads := map[string]string{
		"big integers":      `{"id":123456789012345678901234567890,"max_int64_plus":9223372036854775808,"neg":-98765432109876543210987654321098765432}`,
		"decimals":          `{"a":0.1,"b":0.2,"c":1.0000000000000000000000000000000000001,"d":-0.000001,"e":3.14159265358979323846264338327950288}`,
		"exponents":         `{"a":1e2,"b":1.5E-3,"c":-2e+10,"d":1e-130,"e":9.9999999999999999999999999999999999999e125,"z":0e5,"nz":-0}`,
		"unicode":           `{"greek":"καλημέρα","emoji":"👋🏽","cjk":"漢字","escaped":"\u00e9\ud83d\ude00","rtl":"שלום","zero":"\u0000","ctl":"\n\t\"\\/"}`,
		"unicode keys":      `{"ключ":1,"🔑":{"ü":[]},"a.b":"dots","$x":"dollar","#h":"hash"}`,
		"deep nesting":      `{"x":` + deep + `}`,
		"empty containers":  `{"o":{},"a":[],"nested":{"o":{},"a":[[],[{}]]}}`,
		"null and booleans": `{"n":null,"t":true,"f":false,"list":[null,true,false,0,""]}`,
		"empty strings":     `{"s":"","l":[""]}`,
		"mixed arrays":      `{"a":[1,"two",{"three":3},[4],null,true,1.5]}`,
		"html characters":   `{"h":"<script>alert('x')</script> & more"}`,
	}
	for name, p := range payloads {
		t.Run(name, func(t *testing.T) {
			e := e.with(t)
			created := e.post("tenant-a", "rt", p)
			want := decode(t, p)
			assert.True(t, ddbtest.SameJSON(want, eventtest.Decoded(created.Payload)), "POST response payload = %v, want %s", created.Payload, p)

			r := e.do(req{method: "GET", path: "/v1/events/" + created.ID, tenant: "tenant-a"})
			require.Equal(t, http.StatusOK, r.code)
			var got struct {
				Payload json.RawMessage `json:"payload"`
			}
			require.NoError(t, json.Unmarshal(r.body, &got))
			assert.True(t, ddbtest.SameJSON(want, decode(t, string(got.Payload))), "GET payload = %s, want %s", got.Payload, p)
			// Digits are never lost to float64.
			for _, digits := range []string{"123456789012345678901234567890", "9223372036854775808", "98765432109876543210987654321098765432", "1.0000000000000000000000000000000000001", "3.14159265358979323846264338327950288"} {
				if strings.Contains(p, digits) {
					assert.Contains(t, string(got.Payload), digits)
				}
			}
		})
	}
}
