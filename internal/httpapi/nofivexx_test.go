package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/triggers-dev/triggers/internal/ddb/ddbtest"
	"github.com/triggers-dev/triggers/internal/event"
	"github.com/triggers-dev/triggers/internal/httpapi"
	"github.com/triggers-dev/triggers/internal/store"
	"github.com/triggers-dev/triggers/schema"
)

// noFiveSeeds are bodies for FuzzNoServerError: valid requests of each
// route, the inputs of an outside review, and bodies at the limits.
var noFiveSeeds = []string{
	`{"event_type":"user.created","payload":{"email":"a@example.com"}}`,
	`{"events":[{"event_type":"a","payload":{"i":1}},{"event_type":"a","payload":{"n":0e2147483648}},{"event_type":"b#","payload":{}}]}`,
	`{"status":"failed"}`,
	`{"event_ids":["01a2054b-f8ba-7375-9175-608e01a3eb60","x"]}`,
	`{"event_type":"a","payload":{"n":0e2147483648}}`,
	`{"event_type":"a","payload":{"n":0e-2147483648,"m":1e2147483648}}`,
	`{"event_type":"a","event_type":"b","payload":{}}`,
	`{"event_type":"a","payload":{"k":1,"k":2}}`,
	"{\"event_type\":\"a\",\"payload\":{\"s\":\"\xff\"}}",
	`{"event_type":"a","payload":{"s":"\ud800"}}`,
	`{"events":[],"events":[{"event_type":"a","payload":{}}]}`,
	`{"status":"delivered","status":"failed"}`,
	`{"event_type":"a","payload":` + strings.Repeat(`{"a":`, 31) + `1` + strings.Repeat(`}`, 31) + `}`,
	`{"event_type":"a","payload":` + strings.Repeat(`[`, 40) + strings.Repeat(`]`, 40) + `}`,
	`{"event_type":"a","payload":{"n":123456789012345678901234567890123456789,"":1}}`,
	`{"event_type":"a","payload":{"s":"` + strings.Repeat("x", 200_000) + `"}}`,
	`{"event_type":"a","payload":{"a":[` + strings.Repeat(`0,`, 127_000) + `0]}}`,
	``, `null`, `[]`, `{`, `{"x":1}`,
}

// FuzzNoServerError: no client input gives a 5xx. Each input's body goes
// to POST /v1/events, POST /v1/events/batch, PATCH /v1/events/{id} and
// POST /v1/inbox/ack, and its query string to GET /v1/inbox and (as an
// id) GET /v1/events/{id}, through the real handler on DynamoDB Local.
// The seeds run in every `go test`; under -fuzz (scripts/fuzz.sh runs
// with -run '^$', so TestMain starts nothing) the target starts its own
// DynamoDB Local.
func FuzzNoServerError(f *testing.F) {
	ctx := context.Background()
	local := db
	if local == nil {
		l, err := ddbtest.Start(ctx)
		if err != nil {
			f.Fatalf("DynamoDB Local: %v", err)
		}
		f.Cleanup(func() { _ = l.Stop() })
		local = l
	}
	table, err := local.CreateTableE(ctx, schema.Events(), "fuzz-no-5xx")
	if err != nil {
		f.Fatal(err)
	}
	st := store.New(local.Client, table)
	api, err := httpapi.New(httpapi.Config{Store: st, CursorSecret: testSecret, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		f.Fatal(err)
	}
	ev, err := event.New(event.CreateRequest{EventType: "seed", Payload: event.Payload{}}, time.Now(), event.DefaultRetention, event.Metadata{})
	if err != nil {
		f.Fatal(err)
	}
	if err := st.Put(ctx, "tenant-f", ev); err != nil {
		f.Fatal(err)
	}
	queries := []string{"", "cursor=%%%", "limit=%zz", "limit=5&order=asc", "status=all&event_type=a", "cursor=eyJzIjoiYSJ9", "limit=1;order=asc", ev.ID, "../x"}
	for i, b := range noFiveSeeds {
		f.Add([]byte(b), queries[i%len(queries)])
	}
	f.Add([]byte(`{"event_ids":["`+ev.ID+`"]}`), ev.ID)

	f.Fuzz(func(t *testing.T, body []byte, query string) {
		send := func(method, path string, body []byte, rawQuery string) {
			r := httptest.NewRequest(method, "/", bytes.NewReader(body))
			r.URL.Path = path
			r.URL.RawQuery = rawQuery
			r.Header.Set("Content-Type", "application/json")
			r = r.WithContext(httpapi.WithTenant(r.Context(), "tenant-f"))
			rec := httptest.NewRecorder()
			api.ServeHTTP(rec, r)
			if rec.Code >= 500 {
				t.Fatalf("%s %s?%q with body %q = %d %s", method, path, rawQuery, truncateBytes(body, 300), rec.Code, rec.Body.String())
			}
			if rec.Code == http.StatusMultiStatus {
				// Each entry of a batch has its own status: none is a 5xx.
				var res struct {
					Results []struct {
						Status int `json:"status"`
					} `json:"results"`
				}
				if err := json.Unmarshal(rec.Body.Bytes(), &res); err != nil {
					t.Fatalf("%s %s: 207 body %s: %v", method, path, rec.Body.String(), err)
				}
				for i, r := range res.Results {
					if r.Status >= 500 {
						t.Fatalf("%s %s with body %q: entry %d = %d in %s", method, path, truncateBytes(body, 300), i, r.Status, rec.Body.String())
					}
				}
			}
		}
		send(http.MethodPost, "/v1/events", body, "")
		send(http.MethodPost, "/v1/events/batch", body, "")
		send(http.MethodPatch, "/v1/events/"+ev.ID, body, "")
		send(http.MethodPost, "/v1/inbox/ack", body, "")
		send(http.MethodGet, "/v1/inbox", nil, query)
		send(http.MethodGet, "/v1/events/"+query, nil, "")
	})
}

func truncateBytes(b []byte, n int) []byte {
	if len(b) > n {
		return b[:n]
	}
	return b
}
