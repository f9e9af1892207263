package httpapi

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// failing is a jsonAppender that cannot encode itself.
type failing struct{}

func (failing) AppendJSON(dst []byte) ([]byte, error) {
	return append(dst, `{"partial`...), errors.New("cannot")
}

// A body that cannot be encoded (only a programming error can make one)
// is answered 500 with a whole JSON error, nothing of the partial body;
// both encoders (an appender, and encoding/json for anything else).
func TestWriteJSONEncodingFailure(t *testing.T) {
	for name, body := range map[string]any{"appender": failing{}, "encoding/json": map[string]any{"c": make(chan int)}} {
		rec := httptest.NewRecorder()
		writeJSON(rec, http.StatusOK, body, "req-1")
		if rec.Code != http.StatusInternalServerError {
			t.Errorf("%s: status %d, want 500", name, rec.Code)
		}
		want := `{"error":{"code":"internal","message":"cannot encode the response; quote the request id when reporting it","request_id":"req-1"}}` + "\n"
		if rec.Body.String() != want {
			t.Errorf("%s: body %q, want %q", name, rec.Body.String(), want)
		}
		if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
			t.Errorf("%s: Content-Type %q", name, ct)
		}
	}
}

// Response buffers go back to the pool after a response up to 1 MiB, so
// the next one reuses them; a bigger one is dropped, so one large page
// does not keep megabytes alive per pooled buffer.
func TestWriteJSONPoolsOnlyModestBuffers(t *testing.T) {
	inPool := func(minCap, maxCap int) bool {
		var got []*[]byte
		defer func() {
			for _, b := range got {
				bodies.Put(b)
			}
		}()
		for range 64 {
			b := bodies.Get().(*[]byte)
			got = append(got, b)
			if cap(*b) >= minCap && cap(*b) <= maxCap {
				return true
			}
		}
		return false
	}
	small := strings.Repeat("s", 200<<10) // a 200 KiB string: a buffer over 200 KiB
	for i := 0; i < 20 && !inPool(200<<10, 1<<20); i++ {
		writeJSON(httptest.NewRecorder(), http.StatusOK, map[string]string{"s": small}, "")
	}
	if !inPool(200<<10, 1<<20) {
		t.Error("a buffer under 1 MiB was not kept")
	}
	big := strings.Repeat("b", 3<<20)
	for range 5 {
		writeJSON(httptest.NewRecorder(), http.StatusOK, map[string]string{"b": big}, "")
	}
	if inPool(3<<20, 1<<40) {
		t.Error("a buffer over 1 MiB was kept")
	}
}
