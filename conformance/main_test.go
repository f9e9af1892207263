package conformance

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	awskms "github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/contract"
	"github.com/triggers-dev/triggers/contract/openapi"
	"github.com/triggers-dev/triggers/internal/apikey"
	"github.com/triggers-dev/triggers/internal/ddb/ddbtest"
	"github.com/triggers-dev/triggers/internal/dev/kmslocal"
	"github.com/triggers-dev/triggers/internal/dev/localapi"
	"github.com/triggers-dev/triggers/internal/testkit/openapitest"
	"github.com/triggers-dev/triggers/internal/webhook/dispatch"
	"github.com/triggers-dev/triggers/schema"
)

var (
	flagBase     = flag.String("base", "", "stage URL of the API under test (default: serve it locally on DynamoDB Local)")
	flagKey      = flag.String("key", "", "API key of test tenant A (with -base)")
	flagKey2     = flag.String("key2", "", "API key of test tenant B, another tenant (with -base)")
	flagReadOnly = flag.Bool("readonly", false, "make no writes (production stages)")
	flagXAPIKey  = flag.Bool("x-api-key", false, "the deployment accepts X-Api-Key (authorizer cache off)")
	flagShards   = flag.Int("shards", 4, "write shards of test tenant A in the local run (tenant B stays unsharded), so one run covers sharded and unsharded tenants; 1 turns sharding off")
	flagTemplate = flag.String("template", "../assertions/testdata/triggers-dev-api.json", "API stack template to serve locally (without -base)")
)

// db is DynamoDB Local, started only when the suite serves the API itself.
var db *ddbtest.Local

func TestMain(m *testing.M) {
	flag.Parse()
	if *flagBase != "" {
		if *flagKey == "" || *flagKey2 == "" || *flagKey == *flagKey2 {
			fmt.Fprintln(os.Stderr, "conformance: -base needs -key and -key2, the keys of two different test tenants")
			os.Exit(2)
		}
		os.Exit(reportDocumented(m.Run()))
	}
	code := reportDocumented(ddbtest.MainWith(m, &db, ddbtest.Options{NoStreams: true}))
	if kms != nil {
		if err := kms.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "conformance: stop local-kms:", err)
		}
	}
	os.Exit(code)
}

// reportDocumented prints, with -v, how many responses of how many
// documented operation and status pairs the suite validated; it returns
// code.
func reportDocumented(code int) int {
	if v, err := document(); err == nil && testing.Verbose() {
		n := 0
		seen := v.Seen()
		for _, c := range seen {
			n += c
		}
		fmt.Fprintf(os.Stderr, "conformance: %d responses matched the OpenAPI document (%d operation and status pairs)\n", n, len(seen))
	}
	return code
}

// kms is local-kms, started only when the suite serves the API itself: it
// seals the webhook subscriptions' signing secrets.
var kms *kmslocal.Process

// discardQueue is the webhook retry queue of the locally served API: the
// suite checks the HTTP contract, not delivery (internal/webhook/dispatch
// tests that), so the tasks the API queues go nowhere.
type discardQueue struct{}

func (discardQueue) Send(context.Context, dispatch.Task, time.Duration) error { return nil }

// target is the API under test.
type target struct {
	base      string // stage URL, no trailing slash
	key, key2 string // tenants A and B
	readOnly  bool
	xAPIKey   bool   // X-Api-Key accepted
	revoked   string // a revoked key of tenant A; local only
	local     bool
	events    string // the events table; local only
}

var (
	tgOnce sync.Once
	tg     *target
	tgErr  error
)

// api returns the target, serving it locally on first use without -base.
func api(t *testing.T) *target {
	t.Helper()
	tgOnce.Do(func() {
		if *flagBase != "" {
			tg = &target{base: strings.TrimSuffix(*flagBase, "/"), key: *flagKey, key2: *flagKey2, readOnly: *flagReadOnly, xAPIKey: *flagXAPIKey}
			return
		}
		tg, tgErr = serveLocal()
	})
	require.NoError(t, tgErr)
	return tg
}

// serveLocal serves the API as make dev does: the gateway from the
// template, the real handlers, DynamoDB Local.
func serveLocal() (*target, error) {
	ctx := context.Background()
	tmpl, err := localapi.ReadTemplate(*flagTemplate)
	if err != nil {
		return nil, err
	}
	events, err := db.CreateTableE(ctx, schema.Events(), "events")
	if err != nil {
		return nil, err
	}
	keys, err := db.CreateTableE(ctx, schema.APIKeys(), "keys")
	if err != nil {
		return nil, err
	}
	// Tenant A is sharded before any request uses its keys (no authorizer
	// answer can be cached): the growth may take effect at once.
	store := apikey.NewStore(db.Client, keys, apikey.WithShardSwitchDelay(0))
	a, _, err := store.Create(ctx, "conformance-a", "conformance suite")
	if err != nil {
		return nil, err
	}
	b, _, err := store.Create(ctx, "conformance-b", "conformance suite")
	if err != nil {
		return nil, err
	}
	if *flagShards > 1 {
		// Tenant A writes to several shards and its inbox merges them
		// (docs/sharding.md); tenant B keeps one partition.
		if _, err := store.SetShards(ctx, "conformance-a", *flagShards); err != nil {
			return nil, err
		}
	}
	revoked, _, err := store.Create(ctx, "conformance-a", "conformance suite, revoked")
	if err != nil {
		return nil, err
	}
	if _, err := store.Revoke(ctx, apikey.Hash(revoked)); err != nil {
		return nil, err
	}
	if kms, err = kmslocal.Start(ctx, kmslocal.Options{Install: true}); err != nil {
		return nil, err
	}
	key, err := kms.Client.CreateKey(ctx, &awskms.CreateKeyInput{})
	if err != nil {
		return nil, err
	}
	served, err := localapi.New(localapi.Config{
		Template: tmpl, DB: db.Client, EventsTable: events, KeysTable: keys,
		// Webhook routes on, as make dev serves them: targets are checked
		// for syntax only (no DNS here).
		EventsSharding: *flagShards > 1,
		WebhookQueue:   discardQueue{}, KMS: kms.Client, SecretsKey: *key.KeyMetadata.Arn, AllowPrivateTargets: true,
	})
	if err != nil {
		return nil, err
	}
	srv := httptest.NewServer(served.Gateway) // lives as long as the test binary
	return &target{
		base: srv.URL + served.BasePath, key: a, key2: b, revoked: revoked, local: true, events: events,
		readOnly: *flagReadOnly, xAPIKey: served.KeySources == contract.KeySourcesBearerOrHeader,
	}, nil
}

// writes skips a check that stores events when the suite runs read-only.
func (tg *target) writes(t *testing.T) {
	t.Helper()
	if tg.readOnly {
		t.Skip("-readonly: this check stores events")
	}
}

// hdr builds request headers from name, value pairs; a name may repeat.
func hdr(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Add(kv[i], kv[i+1])
	}
	return h
}

func bearer(key string, kv ...string) http.Header {
	return hdr(append([]string{"Authorization", "Bearer " + key}, kv...)...)
}

func jsonBearer(key string, kv ...string) http.Header {
	return bearer(key, append([]string{"Content-Type", "application/json"}, kv...)...)
}

// response is one answer of the API.
type response struct {
	Status int
	Header http.Header
	Body   []byte
}

// JSON decodes the body into a generic value.
func (r response) JSON(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(r.Body, &m), "status %d, body %s", r.Status, r.Body)
	return m
}

// ErrorCode is the contract error's code ("" if the body is not one).
func (r response) ErrorCode() string {
	var e struct {
		Error struct{ Code string } `json:"error"`
	}
	_ = json.Unmarshal(r.Body, &e)
	return e.Error.Code
}

func (r response) String() string {
	return fmt.Sprintf("%d %s", r.Status, r.Body)
}

var client = &http.Client{Timeout: 60 * time.Second}

// do sends one request and checks what every response must satisfy (it
// reports with t.Errorf, so it may run on any goroutine):
// a request id; on an error, the contract's error shape naming that request
// id; never a 5xx (a 503 with Retry-After, like a 429, is retried: both
// say "later", and must say when).
func (tg *target) do(t *testing.T, method, path string, h http.Header, body []byte) response {
	t.Helper()
	for attempt := 0; ; attempt++ {
		// Errors, not FailNow: do also runs on other goroutines.
		req, err := http.NewRequest(method, tg.base+path, bytes.NewReader(body))
		if err != nil {
			t.Errorf("%s %s: %v", method, path, err)
			return response{}
		}
		for k, vs := range h {
			req.Header[k] = vs // as given: repeated and odd headers included
		}
		res, err := client.Do(req)
		if err != nil {
			t.Errorf("%s %s: %v", method, path, err)
			return response{}
		}
		b, err := io.ReadAll(res.Body)
		res.Body.Close()
		if err != nil {
			t.Errorf("%s %s: read the body: %v", method, path, err)
			return response{}
		}
		r := response{Status: res.StatusCode, Header: res.Header, Body: b}
		checkDocumented(t, method, path, r)
		if r.Status == http.StatusTooManyRequests || r.Status == http.StatusServiceUnavailable {
			ra := res.Header.Get("Retry-After")
			secs, err := strconv.Atoi(ra)
			if err != nil || secs < 0 {
				t.Errorf("%s %s: %d without a valid Retry-After (%q): %s", method, path, r.Status, ra, b)
				return r
			}
			if attempt < 8 {
				time.Sleep(time.Duration(min(secs, 2))*time.Second + 200*time.Millisecond)
				continue
			}
		}
		checkCommon(t, method+" "+path, r)
		return r
	}
}

// document validates every response the suite sees against the committed
// OpenAPI document (contract/openapi), the one GET /v1/openapi.json serves.
var document = sync.OnceValues(func() (*openapitest.Validator, error) {
	return openapitest.New(openapi.Document())
})

// errorReporter is the part of *testing.T checkDocumented uses.
type errorReporter interface {
	Helper()
	Errorf(format string, args ...any)
}

// checkDocumented fails the test (t.Errorf: any goroutine) unless the
// OpenAPI document lists r's status for the operation of method and path
// and r carries the headers and the body that response defines.
func checkDocumented(t errorReporter, method, path string, r response) {
	t.Helper()
	v, err := document()
	if err != nil {
		t.Errorf("the OpenAPI document: %v", err)
		return
	}
	if _, err := v.Check(method, path, r.Status, r.Header, r.Body); err != nil {
		t.Errorf("%s %s: %v", method, path, err)
	}
}

// requestID is the id of the request: X-Request-Id, on every response,
// API Gateway's own included (the construct's gateway responses set it).
func requestID(h http.Header) string { return h.Get("X-Request-Id") }

func checkCommon(t *testing.T, what string, r response) {
	t.Helper()
	id := requestID(r.Header)
	if id == "" {
		t.Errorf("%s: no X-Request-Id: %s", what, r)
	}
	if r.Status >= 500 {
		t.Errorf("%s: %s: no client input may produce a 5xx", what, r)
	}
	if r.Status >= 400 {
		var e struct {
			Error *struct {
				Code      string `json:"code"`
				Message   string `json:"message"`
				RequestID string `json:"request_id"`
			} `json:"error"`
		}
		if err := json.Unmarshal(r.Body, &e); err != nil || e.Error == nil || e.Error.Code == "" || e.Error.Message == "" {
			t.Errorf("%s: %s: not the contract's error shape {\"error\":{\"code\",\"message\",\"request_id\"}}", what, r)
		} else if e.Error.RequestID != id {
			t.Errorf("%s: error request_id %q, want the response's request id %q", what, e.Error.RequestID, id)
		}
		if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
			t.Errorf("%s: error Content-Type %q, want application/json", what, ct)
		}
	}
}

// unique returns a fresh event type, so each check reads only its events.
func unique(prefix string) string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return "conformance." + prefix + "." + hex.EncodeToString(b)
}

// event is the part of an event the suite reads.
type event struct {
	ID         string         `json:"event_id"`
	Type       string         `json:"event_type"`
	Payload    map[string]any `json:"payload"`
	Status     string         `json:"status"`
	Timestamp  string         `json:"timestamp"`
	RetryCount int            `json:"retry_count"`
	Metadata   map[string]any `json:"metadata"`
}

func decodeEvent(t *testing.T, r response) event {
	t.Helper()
	var e event
	require.NoError(t, json.Unmarshal(r.Body, &e), "%s", r)
	require.NotEmpty(t, e.ID, "%s", r)
	return e
}

// post stores one event of type typ for key and returns it.
func (tg *target) post(t *testing.T, key, typ string, payload string, kv ...string) event {
	t.Helper()
	r := tg.do(t, "POST", "/v1/events", jsonBearer(key, kv...), []byte(`{"event_type":"`+typ+`","payload":`+payload+`}`))
	require.Equal(t, http.StatusCreated, r.Status, "%s", r)
	return decodeEvent(t, r)
}

// page is one inbox page.
type page struct {
	Events     []event `json:"events"`
	NextCursor *string `json:"next_cursor"`
}

func (tg *target) inbox(t *testing.T, key, query string) (page, response) {
	t.Helper()
	r := tg.do(t, "GET", "/v1/inbox?"+query, bearer(key), nil)
	var p page
	if r.Status == http.StatusOK {
		require.NoError(t, json.Unmarshal(r.Body, &p), "%s", r)
	}
	return p, r
}

// all follows next_cursor from the first page of query and returns every
// event, in the order served.
func (tg *target) all(t *testing.T, key, query string, limit int) []event {
	t.Helper()
	var out []event
	cursor := ""
	for i := 0; i < 1000; i++ {
		q := query + "&limit=" + strconv.Itoa(limit)
		if cursor != "" {
			q += "&cursor=" + url.QueryEscape(cursor)
		}
		p, r := tg.inbox(t, key, q)
		require.Equal(t, http.StatusOK, r.Status, "%s", r)
		require.LessOrEqual(t, len(p.Events), limit, "a page holds at most limit events")
		out = append(out, p.Events...)
		if p.NextCursor == nil {
			return out
		}
		cursor = *p.NextCursor
	}
	t.Fatal("more than 1000 pages")
	return nil
}

// eventually retries check until it holds or 15 s pass: what a deployed
// stage reads through a global secondary index is eventually consistent.
func eventually(t *testing.T, what string, check func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		ok, detail := check()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %s", what, detail)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func ids(evs []event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.ID
	}
	return out
}
