package httpapi

import (
	"testing"

	"github.com/triggers-dev/triggers/internal/avjson"
	"github.com/triggers-dev/triggers/internal/event"
)

// Idempotency records written before the fast path hold hashes of the
// map[string]any payload: a request parsed by avjson must hash the same,
// or a repeat across the deployment would be a 422.
func TestRequestHashSameOnBothPaths(t *testing.T) {
	for _, body := range []string{
		`{"event_type":"order.paid","payload":{"order_id":42,"amount":"19.99"}}`,
		`{"event_type":"a","payload":{}}`,
		`{"event_type":"a","payload":{"html":"<a href=\"x\">&</a>","ls":"\u2028\u2029","ctl":"\u0000\u001f\n","z":[1.50,-0,1E+2,null,true,{"b":{},"a":[]}],"é":"\u00e9","😀":"\ud83d\ude00"}}`,
	} {
		ref, err := event.ParseCreate([]byte(body))
		if err != nil {
			t.Fatal(err)
		}
		fast, err := avjson.ParseCreate([]byte(body))
		if err != nil {
			t.Fatal(err)
		}
		if fast.Payload != nil || fast.Stored == nil {
			t.Fatalf("avjson.ParseCreate(%s) did not take the fast path", body)
		}
		if got, want := requestHash(fast), requestHash(ref); got != want {
			t.Errorf("requestHash of %s = %s on the fast path, want %s", body, got, want)
		}
	}
}
