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
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/internal/awsenv"
	"github.com/triggers-dev/triggers/internal/ddb"
	"github.com/triggers-dev/triggers/internal/ddb/ddbtest"
	"github.com/triggers-dev/triggers/internal/httpapi"
	"github.com/triggers-dev/triggers/internal/store"
	"github.com/triggers-dev/triggers/internal/syncio"
	"github.com/triggers-dev/triggers/schema"
)

// With DynamoDB hung (its process stopped, not dead: connections are
// accepted and never answered), every request answers 503 + Retry-After
// within its budget, through the production client (ddb: per-attempt
// timeouts, retries); nothing acknowledged before is lost, and everything
// works again once DynamoDB resumes.
func TestHungDynamoDBAnswers503WithinTheBudget(t *testing.T) {
	ctx := context.Background()
	local, err := ddbtest.Start(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { _ = local.Stop() })
	events := local.CreateTable(t, schema.Events())
	// The production client: the Lambda functions' configuration.
	dbOpts := ddb.Options{EndpointURL: local.Endpoint}
	client := ddb.ClientFromConfig(awsenv.Config(os.Getenv, dbOpts), dbOpts)

	// Behind API Gateway the tenant comes from the authorizer (whose own
	// hang internal/apigw and internal/dev/localapi test).
	serve := func(budget time.Duration) *httptest.Server {
		api, err := httpapi.New(httpapi.Config{
			Store: store.New(client, events), CursorSecret: testSecret,
			RequestBudget: budget, Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)),
		})
		require.NoError(t, err)
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			api.ServeHTTP(w, r.WithContext(httpapi.WithTenant(r.Context(), "tenant-a")))
		}))
		t.Cleanup(srv.Close)
		return srv
	}
	// The hung calls have a budget of 2 s; the calls before the hang and
	// after it, the default: the first writes to an engine just started,
	// or the first after it resumed, may take longer than 2 s on a busy
	// machine, and those are not what the test is about.
	behindAuthorizer, patient := serve(2*time.Second), serve(0)

	// send runs on the calls' goroutines too: it reports failures with
	// assert (t.Errorf), never require (t.FailNow must stay on the test's
	// goroutine).
	send := func(base, method, path, body string) (int, http.Header, []byte, time.Duration) {
		req, err := http.NewRequest(method, base+path, strings.NewReader(body))
		if !assert.NoError(t, err) {
			return 0, nil, nil, 0
		}
		req.Header.Set("Authorization", "Bearer trg_hang")
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		start := time.Now()
		res, err := http.DefaultClient.Do(req)
		if !assert.NoError(t, err, "%s %s", method, path) {
			return 0, nil, nil, time.Since(start)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, res.Header, b, time.Since(start)
	}
	var before []string
	for i := 0; i < 3; i++ {
		code, _, b, _ := send(patient.URL, "POST", "/v1/events", `{"event_type":"before.hang","payload":{"i":1}}`)
		require.Equal(t, http.StatusCreated, code, "%s", b)
		var e struct {
			ID string `json:"event_id"`
		}
		require.NoError(t, json.Unmarshal(b, &e))
		before = append(before, e.ID)
	}

	require.NoError(t, syscall.Kill(local.Pid(), syscall.SIGSTOP))
	resumed := false
	resume := func() {
		if !resumed {
			resumed = true
			_ = syscall.Kill(local.Pid(), syscall.SIGCONT)
		}
	}
	t.Cleanup(resume)

	type call struct{ base, method, path, body string }
	calls := []call{
		{behindAuthorizer.URL, "POST", "/v1/events", `{"event_type":"during.hang","payload":{}}`},
		{behindAuthorizer.URL, "POST", "/v1/events/batch", `{"events":[{"event_type":"during.hang","payload":{}}]}`},
		{behindAuthorizer.URL, "GET", "/v1/inbox", ""},
		{behindAuthorizer.URL, "GET", "/v1/events/" + before[0], ""},
		{behindAuthorizer.URL, "PATCH", "/v1/events/" + before[1], `{"status":"failed"}`},
		{behindAuthorizer.URL, "POST", "/v1/inbox/ack", `{"event_ids":["` + before[2] + `"]}`},
	}
	var wg sync.WaitGroup
	for _, c := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// DynamoDB answers nothing until resume, below: an answer
			// before it is the request's time budget at work.
			code, h, b, _ := send(c.base, c.method, c.path, c.body)
			name := c.method + " " + c.path
			if c.path == "/v1/events/batch" {
				// 207 with a 503 per entry: the batch itself was read.
				if assert.Equal(t, http.StatusMultiStatus, code, "%s: %s", name, b) {
					assert.Contains(t, string(b), `"status":503`, name)
				}
			} else {
				assert.Equal(t, http.StatusServiceUnavailable, code, "%s: %s", name, b)
				assert.Equal(t, "1", h.Get("Retry-After"), name)
				assert.Contains(t, string(b), `"code":"unavailable"`, name)
				assert.Contains(t, string(b), `"message":"storage did not answer within the request's time budget; retry after the Retry-After delay"`, name)
			}
		}()
	}
	wg.Wait()

	resume()
	// Nothing acknowledged is lost, and the API serves again.
	for _, id := range before {
		code, _, b, _ := send(patient.URL, "GET", "/v1/events/"+id, "")
		assert.Equal(t, http.StatusOK, code, "event %s acknowledged before the hang: %s", id, b)
	}
	code, _, b, _ := send(patient.URL, "POST", "/v1/events", `{"event_type":"after.hang","payload":{}}`)
	assert.Equal(t, http.StatusCreated, code, "%s", b)
}

// A client that goes away while DynamoDB is slow is logged as 499
// client_closed_request at WARN, not as a 500 internal error.
func TestClientDisconnectIsLoggedAs499(t *testing.T) {
	ctx := context.Background()
	events := db.CreateTable(t, schema.Events())
	proxy, client := db.Faulty(t)
	var logs syncio.Buffer
	api, err := httpapi.New(httpapi.Config{Store: store.New(client, events), CursorSecret: testSecret, Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	require.NoError(t, err)

	proxy.Stall()
	// A client disconnect cancels the request's context (no deadline).
	reqCtx, cancel := context.WithCancel(httpapi.WithTenant(ctx, "tenant-a"))
	defer cancel()
	time.AfterFunc(300*time.Millisecond, cancel)
	req := httptest.NewRequest("POST", "/v1/events", bytes.NewReader([]byte(`{"event_type":"a","payload":{}}`))).WithContext(reqCtx)
	req.Header.Set("Content-Type", "application/json")
	api.ServeHTTP(httptest.NewRecorder(), req)
	proxy.Release()

	var line map[string]any
	require.NoError(t, json.Unmarshal([]byte(strings.TrimSpace(logs.String())), &line), "one JSON log line: %s", logs.String())
	assert.Equal(t, 499.0, line["status"])
	assert.Equal(t, "client_closed_request", line["error_code"])
	assert.Equal(t, "WARN", line["level"])
}

// Inside Lambda the request's context carries the invocation's deadline:
// the budget ends DeadlineMargin before it, so the function answers 503
// itself instead of being killed by its timeout (API Gateway's 502).
func TestBudgetEndsBeforeTheInvocationDeadline(t *testing.T) {
	ctx := context.Background()
	events := db.CreateTable(t, schema.Events())
	proxy, client := db.Faulty(t)
	api, err := httpapi.New(httpapi.Config{Store: store.New(client, events), CursorSecret: testSecret, Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))})
	require.NoError(t, err)

	proxy.Stall()
	defer proxy.Release()
	invocation, cancel := context.WithTimeout(httpapi.WithTenant(ctx, "tenant-a"), httpapi.DeadlineMargin+time.Second)
	defer cancel()
	req := httptest.NewRequest("GET", "/v1/inbox", nil).WithContext(invocation)
	rec := httptest.NewRecorder()
	api.ServeHTTP(rec, req)
	assert.Equal(t, http.StatusServiceUnavailable, rec.Code, rec.Body.String())
	assert.Equal(t, "1", rec.Header().Get("Retry-After"))
	assert.NoError(t, invocation.Err(), "answered before the invocation's deadline")
}

// A PATCH whose write took effect but whose answer DynamoDB lost (the
// SDK sends it again) answers 200 with the change, not a 409
// invalid_transition for the client's own change; asking again, a new
// request, is still the 409 the contract names.
func TestPatchWithItsAnswerLostIsTheClientsChange(t *testing.T) {
	ctx := context.Background()
	events := db.CreateTable(t, schema.Events())
	proxy, client := db.Faulty(t)
	api, err := httpapi.New(httpapi.Config{Store: store.New(client, events), CursorSecret: testSecret, Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))})
	require.NoError(t, err)
	serve := func(method, path, body string) (int, map[string]any) {
		req := httptest.NewRequest(method, path, strings.NewReader(body)).WithContext(httpapi.WithTenant(ctx, "tenant-a"))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		api.ServeHTTP(rec, req)
		var out map[string]any
		require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &out), rec.Body.String())
		return rec.Code, out
	}
	code, created := serve("POST", "/v1/events", `{"event_type":"a","payload":{}}`)
	require.Equal(t, http.StatusCreated, code, "%v", created)
	id, _ := created["event_id"].(string)

	before := proxy.Calls("UpdateItem")
	proxy.LoseResponse("UpdateItem", 1)
	code, got := serve("PATCH", "/v1/events/"+id, `{"status":"failed"}`)
	require.Equal(t, http.StatusOK, code, "%v", got)
	assert.Equal(t, "failed", got["status"])
	assert.Equal(t, 2, proxy.Calls("UpdateItem")-before, "the change was sent twice")

	code, got = serve("PATCH", "/v1/events/"+id, `{"status":"failed"}`)
	assert.Equal(t, http.StatusConflict, code, "%v", got)
	body, _ := got["error"].(map[string]any)
	assert.Equal(t, "invalid_transition", body["code"], "%v", got)
}
