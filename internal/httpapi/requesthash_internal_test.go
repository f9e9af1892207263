package httpapi

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"testing"

	"github.com/triggers-dev/triggers/internal/event"
)

// Idempotency records hold hashes of the event type and the payload as
// json.Encoder writes it decoded to map[string]any (HTML escaping on, a
// trailing newline): the hash of a parsed request must stay exactly that,
// or a repeat across a deployment would be a 422.
func TestRequestHashIsTheDecodedPayloadsHash(t *testing.T) {
	for _, body := range []string{
		`{"event_type":"order.paid","payload":{"order_id":42,"amount":"19.99"}}`,
		`{"event_type":"a","payload":{}}`,
		`{"event_type":"a","payload":{"html":"<a href=\"x\">&</a>","ls":"\u2028\u2029","ctl":"\u0000\u001f\n","z":[1.50,-0,1E+2,null,true,{"b":{},"a":[]}],"é":"\u00e9","😀":"\ud83d\ude00"}}`,
	} {
		req, err := event.ParseCreate([]byte(body))
		if err != nil {
			t.Fatal(err)
		}
		var decoded struct {
			EventType string         `json:"event_type"`
			Payload   map[string]any `json:"payload"`
		}
		dec := json.NewDecoder(bytes.NewReader([]byte(body)))
		dec.UseNumber()
		if err := dec.Decode(&decoded); err != nil {
			t.Fatal(err)
		}
		h := sha256.New()
		h.Write([]byte(decoded.EventType))
		h.Write([]byte{0})
		_ = json.NewEncoder(h).Encode(decoded.Payload)
		if got, want := requestHash(req), hex.EncodeToString(h.Sum(nil)); got != want {
			t.Errorf("requestHash of %s = %s, want %s", body, got, want)
		}
	}
}
