package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/internal/ddb/ddbtest"
	"github.com/triggers-dev/triggers/internal/dev/kmslocal/kmstest"
	"github.com/triggers-dev/triggers/internal/event"
	"github.com/triggers-dev/triggers/internal/httpapi"
	"github.com/triggers-dev/triggers/internal/store"
	"github.com/triggers-dev/triggers/internal/syncio"
	"github.com/triggers-dev/triggers/schema"
)

var db *ddbtest.Local

func TestMain(m *testing.M) {
	// The tests read no stream: their tables have none (ddbtest.Options).
	code := ddbtest.MainWith(m, &db, ddbtest.Options{NoStreams: true})
	kmstest.Stop() // started by the first test that seals a secret
	os.Exit(code)
}

var testSecret = []byte("0123456789abcdef0123456789abcdef-test-secret")

// env is one API on its own table.
type env struct {
	t     *testing.T
	table string
	store *store.Store
	api   *httpapi.API
	logs  *bytes.Buffer
	cfg   httpapi.Config
}

type envOpt func(*httpapi.Config)

func withNow(now func() time.Time) envOpt { return func(c *httpapi.Config) { c.Now = now } }

func newEnv(t *testing.T, opts ...envOpt) *env {
	t.Helper()
	table := db.CreateTable(t, schema.Events())
	return newEnvOn(t, table, db.Client, opts...)
}

func newEnvOn(t *testing.T, table string, client store.API, opts ...envOpt) *env {
	t.Helper()
	st := store.New(client, table)
	logs := &bytes.Buffer{}
	cfg := httpapi.Config{
		Store:        st,
		CursorSecret: testSecret,
		Logger:       slog.New(slog.NewJSONHandler(&syncio.Writer{W: logs}, nil)),
	}
	for _, o := range opts {
		o(&cfg)
	}
	api, err := httpapi.New(cfg)
	require.NoError(t, err)
	return &env{t: t, table: table, store: st, api: api, logs: logs, cfg: cfg}
}

// req describes one request.
type req struct {
	method, path, tenant, body string
	headers                    map[string]string
	noContentType              bool
}

type resp struct {
	code   int
	header http.Header
	body   []byte
}

func (r resp) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(r.body))
	dec.UseNumber()
	require.NoError(t, dec.Decode(&m), "body %s", r.body)
	return m
}

func (r resp) errCode(t *testing.T) string {
	t.Helper()
	m := r.json(t)
	e, ok := m["error"].(map[string]any)
	require.True(t, ok, "body %s has no error object", r.body)
	require.NotEmpty(t, e["request_id"], "error without request_id: %s", r.body)
	require.Equal(t, r.header.Get("X-Request-Id"), e["request_id"], "error request_id is not the X-Request-Id header: %s", r.body)
	require.NotEmpty(t, e["message"], "error without message: %s", r.body)
	return e["code"].(string)
}

func (r resp) event(t *testing.T) event.Event {
	t.Helper()
	var e event.Event
	dec := json.NewDecoder(bytes.NewReader(r.body))
	dec.UseNumber()
	require.NoError(t, dec.Decode(&e), "body %s", r.body)
	return e
}

// do serves r and checks what every response carries (X-Request-Id, a
// JSON content type). It may fail the test with require: call it on the
// test's goroutine only; goroutines use serve and check the result
// afterwards with checked.
func (e *env) do(r req) resp {
	e.t.Helper()
	return e.checked(r, e.serve(r))
}

// checked fails the test unless got carries an X-Request-Id and a JSON
// content type; it returns got.
func (e *env) checked(r req, got resp) resp {
	e.t.Helper()
	require.NotEmpty(e.t, got.header.Get("X-Request-Id"), "%s %s: no X-Request-Id", r.method, r.path)
	require.Equal(e.t, "application/json", got.header.Get("Content-Type"), "%s %s: content type", r.method, r.path)
	return got
}

// serve serves r and returns the response without checking anything, so
// it is safe on any goroutine.
func (e *env) serve(r req) resp {
	var body io.Reader
	if r.body != "" {
		body = strings.NewReader(r.body)
	}
	hr := httptest.NewRequest(r.method, r.path, body)
	if r.body != "" && !r.noContentType {
		hr.Header.Set("Content-Type", "application/json")
	}
	for k, v := range r.headers {
		hr.Header.Set(k, v)
	}
	if r.tenant != "" {
		hr = hr.WithContext(httpapi.WithTenant(hr.Context(), r.tenant))
	}
	rec := httptest.NewRecorder()
	e.api.ServeHTTP(rec, hr)
	return resp{code: rec.Code, header: rec.Header(), body: rec.Body.Bytes()}
}

// post creates one event for tenant and returns it.
func (e *env) post(tenant, eventType, payload string) event.Event {
	e.t.Helper()
	r := e.do(req{method: "POST", path: "/v1/events", tenant: tenant, body: `{"event_type":"` + eventType + `","payload":` + payload + `}`})
	require.Equal(e.t, http.StatusCreated, r.code, "POST /v1/events = %d %s, want 201", r.code, r.body)
	return r.event(e.t)
}

// count returns how many items the table holds in tenant's partition.
func (e *env) count(tenant string) int {
	e.t.Helper()
	out, err := db.Client.Query(context.Background(), &dynamodb.QueryInput{
		TableName:                 aws.String(e.table),
		KeyConditionExpression:    aws.String("#pk = :pk"),
		ExpressionAttributeNames:  map[string]string{"#pk": schema.AttrUserID},
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": &types.AttributeValueMemberS{Value: tenant}},
		Select:                    types.SelectCount,
		ConsistentRead:            aws.Bool(true),
	})
	require.NoError(e.t, err)
	return int(out.Count)
}

// itemCount returns the number of items in the whole table.
func (e *env) itemCount() int {
	e.t.Helper()
	out, err := db.Client.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String(e.table), Select: types.SelectCount, ConsistentRead: aws.Bool(true)})
	require.NoError(e.t, err)
	return int(out.Count)
}

func jsonUnmarshal(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	return dec.Decode(v)
}

func mustTime(ts string) time.Time {
	t, err := time.Parse(event.TimeLayout, ts)
	if err != nil {
		panic(err)
	}
	return t
}

// with returns a copy of e that reports to t (for subtests).
func (e *env) with(t *testing.T) *env {
	c := *e
	c.t = t
	return &c
}
