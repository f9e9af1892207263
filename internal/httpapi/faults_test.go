package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/contract"
	"github.com/triggers-dev/triggers/internal/ddb/ddbtest"
	"github.com/triggers-dev/triggers/internal/event"
	"github.com/triggers-dev/triggers/internal/httpapi"
	"github.com/triggers-dev/triggers/internal/store"
	"github.com/triggers-dev/triggers/schema"
)

func TestThrottlingBeyondRetriesIs503(t *testing.T) {
	table := db.CreateTable(t, schema.Events())
	var calls atomic.Int32
	client := db.FaultClient(func(op string, _ []byte) *http.Response {
		calls.Add(1)
		return ddbtest.AWSError("ProvisionedThroughputExceededException", "The level of configured provisioned throughput for the table was exceeded.")
	})
	e := newEnvOn(t, table, client)
	seed := newEnvOn(t, table, db.Client)
	ev := seed.post("tenant-a", "t", `{}`)
	tests := []req{
		{method: "POST", path: "/v1/events", body: `{"event_type":"t","payload":{}}`},
		{method: "POST", path: "/v1/events", body: `{"event_type":"t","payload":{}}`, headers: map[string]string{"Idempotency-Key": "k"}},
		{method: "GET", path: "/v1/events/" + ev.ID},
		{method: "PATCH", path: "/v1/events/" + ev.ID, body: `{"status":"delivered"}`},
		{method: "GET", path: "/v1/inbox"},
		{method: "POST", path: "/v1/inbox/ack", body: `{"event_ids":["` + ev.ID + `"]}`},
	}
	for _, r := range tests {
		calls.Store(0)
		r.tenant = "tenant-a"
		got := e.do(r)
		assert.Equal(t, http.StatusServiceUnavailable, got.code, "%s %s under throttling = %d %s", r.method, r.path, got.code, got.body)
		assert.Equal(t, "1", got.header.Get("Retry-After"))
		assert.Equal(t, "unavailable", got.errCode(t))
		assert.GreaterOrEqual(t, calls.Load(), int32(3), "%s %s: the SDK did not retry", r.method, r.path)
	}
	// Batch: every item reports 503.
	got := e.do(req{method: "POST", path: "/v1/events/batch", tenant: "tenant-a", body: `{"events":[{"event_type":"t","payload":{}}]}`})
	require.Equal(t, http.StatusMultiStatus, got.code)
	assert.Contains(t, string(got.body), `"status":503`)
	assert.Contains(t, e.logs.String(), `"level":"ERROR"`)
}

// batchResults is the part of a batch's 207 body the tests read.
type batchResults struct {
	Results []struct {
		Status int `json:"status"`
		Error  *struct {
			Code string `json:"code"`
		} `json:"error"`
	} `json:"results"`
}

// Each batch entry is its own write: one whose writes stay throttled past
// the SDK's retries is a 503 entry, the others are stored beside it
// (201), and sending the entry again once DynamoDB recovers stores it.
func TestBatchThrottledEntryIs503Alone(t *testing.T) {
	table := db.CreateTable(t, schema.Events())
	var throttle atomic.Bool
	throttle.Store(true)
	var throttled atomic.Int32
	client := db.FaultClient(func(op string, body []byte) *http.Response {
		if op != "PutItem" || !throttle.Load() || !strings.Contains(string(body), "stuck") {
			return nil
		}
		throttled.Add(1)
		return ddbtest.AWSError("ProvisionedThroughputExceededException", "throughput exceeded")
	})
	e := newEnvOn(t, table, client)
	r := e.do(req{method: "POST", path: "/v1/events/batch", tenant: "tenant-a", body: `{"events":[{"event_type":"t","payload":{"i":1}},{"event_type":"t","payload":{"s":"stuck"}},{"event_type":"t","payload":{"i":3}}]}`})
	require.Equal(t, http.StatusMultiStatus, r.code)
	var res batchResults
	require.NoError(t, json.Unmarshal(r.body, &res), "%s", r.body)
	require.Len(t, res.Results, 3)
	assert.Equal(t, []int{201, 503, 201}, []int{res.Results[0].Status, res.Results[1].Status, res.Results[2].Status}, "%s", r.body)
	require.NotNil(t, res.Results[1].Error)
	assert.Equal(t, "unavailable", res.Results[1].Error.Code)
	assert.Greater(t, throttled.Load(), int32(1), "the SDK retried the throttled write")
	assert.Equal(t, 2, e.count("tenant-a"), "the other entries are stored")

	throttle.Store(false)
	r = e.do(req{method: "POST", path: "/v1/events/batch", tenant: "tenant-a", body: `{"events":[{"event_type":"t","payload":{"s":"stuck"}}]}`})
	require.Equal(t, http.StatusMultiStatus, r.code)
	assert.Contains(t, string(r.body), `"status":201`)
	assert.Equal(t, 3, e.count("tenant-a"))
}

func TestOversizeItemIs400(t *testing.T) {
	// A body under 256 KiB can still make an item over 400 KB: DynamoDB
	// counts 3 bytes plus 1 per element for each list, so "[]" (2 bytes of
	// JSON) costs 4 bytes in the item.
	e := newEnv(t)
	nested := strings.Repeat("[", 29) + strings.Repeat("]", 29)
	var b strings.Builder
	b.WriteString(`{"event_type":"t","payload":{"l":[`)
	for b.Len() < event.MaxBodyBytes-200 {
		b.WriteString(nested + ",")
	}
	b.WriteString(`[]]}}`)
	r := e.do(req{method: "POST", path: "/v1/events", tenant: "tenant-a", body: b.String()})
	require.Equal(t, http.StatusBadRequest, r.code, "%d %s", r.code, r.body[:min(len(r.body), 300)])
	assert.Equal(t, "invalid_payload", r.errCode(t))
	r = e.do(req{method: "POST", path: "/v1/events", tenant: "tenant-a", body: b.String(), headers: map[string]string{"Idempotency-Key": "big"}})
	require.Equal(t, http.StatusBadRequest, r.code, "%d %s", r.code, r.body[:min(len(r.body), 300)])
	assert.Equal(t, 0, e.itemCount(), "oversize requests wrote items")

	// In a batch, each entry is its own write: DynamoDB rejects the big
	// one, and the small event is still stored.
	item := strings.TrimSuffix(strings.TrimPrefix(b.String(), ""), "")
	item = item[:len(item)-len(`[]]}}`)-500] // keep the batch under 256 KiB
	item = item[:strings.LastIndex(item, ",")] + `]}}`
	r = e.do(req{method: "POST", path: "/v1/events/batch", tenant: "tenant-b", body: `{"events":[{"event_type":"small","payload":{}},` + item + `]}`})
	require.Equal(t, http.StatusMultiStatus, r.code, "%d %s", r.code, r.body[:min(len(r.body), 300)])
	var res batchResults
	require.NoError(t, json.Unmarshal(r.body, &res))
	require.Len(t, res.Results, 2)
	assert.Equal(t, 201, res.Results[0].Status)
	assert.Equal(t, 400, res.Results[1].Status)
	assert.Equal(t, "invalid_payload", res.Results[1].Error.Code)
	assert.Equal(t, 1, e.count("tenant-b"))
}

type panicStore struct{ httpapi.Store }

func (panicStore) Get(context.Context, string, string) (event.Event, error) { panic("boom") }

func TestPanicIs500AndLogged(t *testing.T) {
	var logs bytes.Buffer
	api, err := httpapi.New(httpapi.Config{Store: panicStore{}, CursorSecret: testSecret, Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	require.NoError(t, err)
	e := &env{t: t, api: api}
	r := e.do(req{method: "GET", path: "/v1/events/x", tenant: "tenant-a"})
	assert.Equal(t, http.StatusInternalServerError, r.code)
	assert.Equal(t, "internal", r.errCode(t))
	assert.Equal(t, 1, strings.Count(logs.String(), "\n"), "log lines: %s", logs.String())
	assert.Contains(t, logs.String(), "panic: boom")
}

func TestLogsOneLinePerRequest(t *testing.T) {
	e := newEnv(t)
	e.do(req{method: "POST", path: "/v1/events", tenant: "tenant-a", body: `{"event_type":"t","payload":{}}`, headers: map[string]string{"X-Correlation-Id": "corr-1"}})
	e.do(req{method: "POST", path: "/v1/events", tenant: "tenant-a", body: `{"event_type":"t","payload":[]}`, headers: map[string]string{"X-Correlation-Id": "corr-2"}})
	lines := strings.Split(strings.TrimSpace(e.logs.String()), "\n")
	require.Len(t, lines, 2, "%s", e.logs.String())
	for i, l := range lines {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(l), &m), "log line %d is not JSON: %s", i, l)
		assert.Equal(t, "tenant-a", m["tenant"])
		assert.NotEmpty(t, m["request_id"])
		assert.Equal(t, []string{"corr-1", "corr-2"}[i], m["correlation_id"])
	}
	assert.Contains(t, lines[1], `"error_code":"invalid_payload"`)
	assert.Contains(t, lines[1], `"level":"WARN"`)
}

// The tenant comes from the authorizer's context alone; behind a cached
// authorizer the function still refuses credentials outside the key
// sources, which the authorizer never saw. The keys themselves (unknown,
// revoked, malformed) are the authorizer's: internal/apigw's tests and,
// through the local gateway, internal/dev/localapi's.
func TestCredentialsBehindTheAuthorizer(t *testing.T) {
	events := db.CreateTable(t, schema.Events())
	quiet := slog.New(slog.NewJSONHandler(io.Discard, nil))
	for _, tt := range []struct {
		sources contract.KeySources
		name    string
		tenant  string
		headers map[string]string
		code    int
	}{
		{contract.KeySourcesBearer, "bearer", "tenant-a", map[string]string{"Authorization": "Bearer trg_a"}, 200},
		{contract.KeySourcesBearer, "x-api-key is not a source by default", "tenant-a", map[string]string{"X-Api-Key": "trg_a"}, 401},
		{contract.KeySourcesBearer, "bearer + x-api-key", "tenant-a", map[string]string{"Authorization": "Bearer trg_a", "X-Api-Key": "trg_b"}, 401},
		{contract.KeySourcesBearer, "no tenant from an authorizer", "", map[string]string{"Authorization": "Bearer trg_a"}, 401},
		{contract.KeySourcesBearer, "invalid tenant", "tenant a", map[string]string{"Authorization": "Bearer trg_a"}, 401},
		// With the deployment's cache off the authorizer sees every
		// request and refuses both headers at once; the function takes
		// either.
		{contract.KeySourcesBearerOrHeader, "x-api-key", "tenant-a", map[string]string{"X-Api-Key": "trg_a"}, 200},
		{contract.KeySourcesBearerOrHeader, "bearer", "tenant-a", map[string]string{"Authorization": "Bearer trg_a"}, 200},
		{contract.KeySourcesBearerOrHeader, "no tenant from an authorizer", "", map[string]string{"X-Api-Key": "trg_a"}, 401},
	} {
		api, err := httpapi.New(httpapi.Config{Store: store.New(db.Client, events), CursorSecret: testSecret, KeySources: tt.sources, Logger: quiet})
		require.NoError(t, err)
		r := (&env{t: t, api: api, table: events}).do(req{method: "GET", path: "/v1/inbox", tenant: tt.tenant, headers: tt.headers})
		assert.Equal(t, tt.code, r.code, "%s, %s: GET /v1/inbox = %d %s", tt.sources, tt.name, r.code, r.body)
		if tt.code == 401 {
			assert.Contains(t, string(r.body), `"message":"`+tt.sources.Hint()+`"`, "%s, %s", tt.sources, tt.name)
		}
	}
	_, err := httpapi.New(httpapi.Config{Store: store.New(db.Client, events), CursorSecret: testSecret, KeySources: "cookie"})
	assert.ErrorContains(t, err, "API_KEY_SOURCES")
}

func TestNewValidatesConfig(t *testing.T) {
	_, err := httpapi.New(httpapi.Config{CursorSecret: testSecret})
	assert.ErrorContains(t, err, "Config.Store is nil", "New without a store")
	_, err = httpapi.New(httpapi.Config{Store: panicStore{}, CursorSecret: []byte("short")})
	assert.ErrorContains(t, err, "cursor secret is too short", "New with a short secret")
	_, err = httpapi.New(httpapi.Config{Store: panicStore{}, CursorSecret: testSecret})
	assert.NoError(t, err, "New with a store and a 32-byte secret")
}
