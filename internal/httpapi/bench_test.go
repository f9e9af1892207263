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

	"github.com/triggers-dev/triggers/internal/event/eventtest"

	"github.com/triggers-dev/triggers/internal/event"
	"github.com/triggers-dev/triggers/internal/httpapi"
	"github.com/triggers-dev/triggers/internal/item"
	"github.com/triggers-dev/triggers/schema"
)

// marshalOnly is a Store that builds the DynamoDB item and drops it, so the
// benchmark measures the handler's own work without a database.
type marshalOnly struct{ httpapi.Store }

func (marshalOnly) Put(_ context.Context, tenant string, e event.Event) error {
	_ = item.FromEvent(tenant, e, schema.ProfileSeed)
	return nil
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
		body := string(eventtest.Body(size))
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
