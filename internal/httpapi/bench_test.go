package httpapi_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/triggers-dev/triggers/internal/event"
	"github.com/triggers-dev/triggers/internal/httpapi"
	"github.com/triggers-dev/triggers/internal/store"
)

// marshalOnly is a Store that builds the DynamoDB item and drops it, so the
// benchmark measures the handler's own work without a database.
type marshalOnly struct{ httpapi.Store }

func (marshalOnly) Put(_ context.Context, tenant string, e event.Event) error {
	_, err := store.Item(tenant, e)
	return err
}

func benchBody(size int) string {
	var b strings.Builder
	b.WriteString(`{"event_type":"order.completed","payload":{"order_id":"ord_8f14e45fceea167a","total":1234.56,"items":[`)
	for i := 0; b.Len() < size-40; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"sku":"SKU-%06d","qty":%d,"price":%d.99,"gift":%t,"note":null}`, i, i%7+1, i%500, i%3 == 0)
	}
	b.WriteString(`]}}`)
	return b.String()
}

// BenchmarkServeCreate measures POST /v1/events through the whole handler
// (routing, body limit, parse, validate, item marshalling, response
// encoding, the log line) with the DynamoDB call left out.
func BenchmarkServeCreate(b *testing.B) {
	api, err := httpapi.New(httpapi.Config{Store: marshalOnly{}, CursorSecret: testSecret, Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	for _, size := range []int{1 << 10, 64 << 10} {
		body := benchBody(size)
		b.Run(fmt.Sprintf("%dKB", size>>10), func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				r := httptest.NewRequest("POST", "/v1/events", strings.NewReader(body))
				r.Header.Set("Content-Type", "application/json")
				r = r.WithContext(httpapi.WithTenant(r.Context(), "tenant-a"))
				w := httptest.NewRecorder()
				api.ServeHTTP(w, r)
				if w.Code != http.StatusCreated {
					b.Fatalf("status %d: %s", w.Code, w.Body)
				}
			}
		})
	}
}
