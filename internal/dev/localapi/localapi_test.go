package localapi

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/contract"
	"github.com/triggers-dev/triggers/internal/apikey"
	"github.com/triggers-dev/triggers/internal/ddb"
	"github.com/triggers-dev/triggers/internal/ddb/ddbtest"
	"github.com/triggers-dev/triggers/internal/dev/localgw"
	"github.com/triggers-dev/triggers/internal/syncio"
	"github.com/triggers-dev/triggers/schema"
)

// The templates the assertions golden tests keep identical to a real synth:
// the dev API stack (all defaults) and a TriggersApi with every option
// (AuthorizerCacheTtl 0, stage v1stage, RetentionDays 7, CORS, a custom
// domain, WAF). Nothing here synthesizes.
const (
	devTemplate     = "../../../assertions/testdata/triggers-dev-api.json"
	optionsTemplate = "../../../assertions/testdata/test-api-options.json"
	// leanTemplate is a TriggersApi on a lean events table
	// (assertions' test-events-lean stack).
	leanTemplate = "../../../assertions/testdata/test-events-lean.json"
)

var db *ddbtest.Local

func TestMain(m *testing.M) { os.Exit(ddbtest.MainWith(m, &db, ddbtest.Options{NoStreams: true})) }

type served struct {
	api    *API
	url    string // the server's root
	key    string
	events string
	keys   string // the API-keys table
	logs   *syncio.Buffer
}

func serve(t *testing.T, template string, gw localgw.Options) *served {
	t.Helper()
	return serveOn(t, db.Client, template, gw)
}

// serveOn serves template with the handlers on client (tables and key are
// made directly on DynamoDB Local).
func serveOn(t *testing.T, client DB, template string, gw localgw.Options) *served {
	t.Helper()
	return serveProfile(t, client, template, gw, schema.ProfileSeed, "")
}

// serveProfile serves template on an events table of profile p; override,
// when set, is Config.EventsProfile.
func serveProfile(t *testing.T, client DB, template string, gw localgw.Options, p, override schema.EventsProfile) *served {
	t.Helper()
	tmpl, err := ReadTemplate(template)
	require.NoError(t, err)
	events, keys := db.CreateTable(t, schema.EventsFor(p)), db.CreateTable(t, schema.APIKeys())
	key, _, err := apikey.NewStore(db.Client, keys).Create(context.Background(), "tenant-a", "")
	require.NoError(t, err)
	logs := &syncio.Buffer{}
	api, err := New(Config{
		Template: tmpl, DB: client, EventsTable: events, KeysTable: keys, EventsProfile: override,
		Logger: slog.New(slog.NewJSONHandler(logs, nil)), Gateway: gw,
	})
	require.NoError(t, err)
	srv := httptest.NewServer(api.Gateway)
	t.Cleanup(srv.Close)
	return &served{api: api, url: srv.URL, key: key, events: events, keys: keys, logs: logs}
}

func (s *served) do(t *testing.T, method, path string, header map[string]string, body string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, s.url+path, strings.NewReader(body))
	require.NoError(t, err)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return res, string(b)
}

// authorizerCalls counts the authorizer handler's log lines.
func (s *served) authorizerCalls() int { return strings.Count(s.logs.String(), `"msg":"authorized"`) }

// The same gateway code and handlers, two templates: every difference below
// comes from the construct's props alone.
func TestConstructChangesLocalBehaviour(t *testing.T) {
	dev := serve(t, devTemplate, localgw.Options{})
	opt := serve(t, optionsTemplate, localgw.Options{})

	// Stage name: StageName "v1stage" moves the API.
	assert.Equal(t, "/live", dev.api.BasePath)
	assert.Equal(t, "/v1stage", opt.api.BasePath)
	res, _ := dev.do(t, "GET", "/v1stage/v1/inbox", map[string]string{"Authorization": "Bearer " + dev.key}, "")
	assert.Equal(t, http.StatusForbidden, res.StatusCode, "no such stage in the dev template")
	res, body := opt.do(t, "GET", "/v1stage/v1/inbox", map[string]string{"Authorization": "Bearer " + opt.key}, "")
	assert.Equal(t, http.StatusOK, res.StatusCode, body)

	// Authorizer cache: 300 s by default (X-Api-Key refused, one
	// authorizer call for repeated requests), off with
	// AuthorizerCacheTtl 0 (X-Api-Key accepted, a call per request).
	assert.Equal(t, contract.KeySourcesBearer, dev.api.KeySources)
	assert.Equal(t, contract.KeySourcesBearerOrHeader, opt.api.KeySources)
	res, body = dev.do(t, "GET", "/live/v1/inbox", map[string]string{"X-Api-Key": dev.key}, "")
	assert.Equal(t, http.StatusUnauthorized, res.StatusCode, body)
	assert.Contains(t, body, "X-Api-Key is not accepted by this deployment", "the template's UNAUTHORIZED response")
	res, body = opt.do(t, "GET", "/v1stage/v1/inbox", map[string]string{"X-Api-Key": opt.key}, "")
	assert.Equal(t, http.StatusOK, res.StatusCode, body)
	for i := 0; i < 3; i++ {
		res, body = dev.do(t, "GET", "/live/v1/inbox", map[string]string{"Authorization": "Bearer " + dev.key}, "")
		require.Equal(t, http.StatusOK, res.StatusCode, body)
		res, body = opt.do(t, "GET", "/v1stage/v1/inbox", map[string]string{"Authorization": "Bearer " + opt.key}, "")
		require.Equal(t, http.StatusOK, res.StatusCode, body)
	}
	assert.Equal(t, 1, dev.authorizerCalls(), "cached for 300 s:\n%s", dev.logs)
	assert.Equal(t, 5, opt.authorizerCalls(), "no cache: every request:\n%s", opt.logs)

	// CORS: the construct's preflight (a MOCK OPTIONS method) answers
	// without a key; without CORS, OPTIONS falls to ANY and the authorizer.
	res, _ = opt.do(t, "OPTIONS", "/v1stage/v1/events", map[string]string{"Origin": "https://app.example.com"}, "")
	assert.Equal(t, http.StatusNoContent, res.StatusCode)
	assert.NotEmpty(t, res.Header.Get("Access-Control-Allow-Methods"))
	res, _ = dev.do(t, "OPTIONS", "/live/v1/events", map[string]string{"Origin": "https://app.example.com"}, "")
	assert.Equal(t, http.StatusUnauthorized, res.StatusCode)

	// RetentionDays 7 reaches the API function's RETENTION_DAYS: the
	// stored item's ttl is 7 days after its timestamp, not 30.
	assert.Equal(t, 30*24*time.Hour, dev.api.Retention)
	assert.Equal(t, 7*24*time.Hour, opt.api.Retention)
	for _, s := range []struct {
		srv  *served
		path string
		days int64
	}{{dev, "/live", 30}, {opt, "/v1stage", 7}} {
		res, body := s.srv.do(t, "POST", s.path+"/v1/events",
			map[string]string{"Authorization": "Bearer " + s.srv.key, "Content-Type": "application/json"},
			`{"event_type":"retention.check","payload":{}}`)
		require.Equal(t, http.StatusCreated, res.StatusCode, body)
		assert.Equal(t, s.days*86400, itemTTL(t, s.srv)-itemTime(t, body), "%s: ttl - timestamp", s.path)
	}
}

// itemTime is the event's timestamp in epoch seconds.
func itemTime(t *testing.T, body string) int64 {
	t.Helper()
	_, after, _ := strings.Cut(body, `"timestamp":"`)
	ts, _, _ := strings.Cut(after, `"`)
	tm, err := time.Parse(time.RFC3339Nano, ts)
	require.NoError(t, err, body)
	return tm.Unix()
}

// itemTTL reads the ttl attribute of the only item in s's events table.
func itemTTL(t *testing.T, s *served) int64 {
	t.Helper()
	scan, err := db.Client.Scan(context.Background(), &dynamodb.ScanInput{TableName: &s.events})
	require.NoError(t, err)
	require.Len(t, scan.Items, 1)
	n, ok := scan.Items[0][schema.AttrTTL].(*types.AttributeValueMemberN)
	require.True(t, ok, "ttl is a number: %v", scan.Items[0])
	v, err := strconv.ParseInt(n.Value, 10, 64)
	require.NoError(t, err)
	return v
}

// DynamoDB that stops answering: the authorizer's failure is the template's
// AUTHORIZER_CONFIGURATION_ERROR response (503 with Retry-After) and is not
// cached; behind a cached allow, the API function answers 503 with
// Retry-After within its budget, before the function's timeout.
func TestDynamoDBStallThroughGateway(t *testing.T) {
	p := ddbtest.NewFaultProxy(t, db.Endpoint)
	s := serveOn(t, ddb.NewLocalClient(p.URL), devTemplate, localgw.Options{})
	auth := map[string]string{"Authorization": "Bearer " + s.key}

	// The proxy holds every request until Release, so an answer before it
	// is a budget or timeout at work; which one, the status and headers
	// say.
	p.Stall()
	res, body := s.do(t, "GET", "/live/v1/inbox", auth, "")
	assert.Equal(t, http.StatusServiceUnavailable, res.StatusCode, body)
	assert.NotEmpty(t, res.Header.Get("Retry-After"), "Retry-After on the authorizer's 503")
	assert.Contains(t, body, `"code":"unavailable"`)
	assert.Contains(t, body, "authentication is briefly unavailable", "the template's response for the authorizer's failure")
	p.Release()

	res, body = s.do(t, "GET", "/live/v1/inbox", auth, "")
	require.Equal(t, http.StatusOK, res.StatusCode, "the failure was not cached: %s", body)

	p.Stall()
	res, body = s.do(t, "GET", "/live/v1/inbox", auth, "") // cached allow: straight to the API function
	assert.Equal(t, http.StatusServiceUnavailable, res.StatusCode, body)
	assert.NotEmpty(t, res.Header.Get("Retry-After"), "Retry-After on the function's 503")
	assert.Contains(t, body, "storage did not answer within the request's time budget",
		"the function's own answer within its budget, not the gateway's for a timed-out function")
	p.Release()
}

// The API-key rules, end to end: the gateway built from the template (its
// identity source and gateway responses), the real authorizer on the
// API-keys table, and the API function behind it, which refuses
// credentials the cached authorizer never saw. The 401s carry the
// template's or the function's statement of the rules; a revoked key is
// the template's 403.
func TestKeyRulesThroughGateway(t *testing.T) {
	ctx := context.Background()
	dev := serve(t, devTemplate, localgw.Options{})
	revoked, k, err := apikey.NewStore(db.Client, dev.keys).Create(ctx, "tenant-a", "old")
	require.NoError(t, err)
	_, err = apikey.NewStore(db.Client, dev.keys).Revoke(ctx, k.Hash)
	require.NoError(t, err)
	for _, tt := range []struct {
		name    string
		headers map[string]string
		code    int
	}{
		{"bearer", map[string]string{"Authorization": "Bearer " + dev.key}, 200},
		{"bearer lower case (one spelling per key)", map[string]string{"Authorization": "bearer " + dev.key}, 401},
		{"x-api-key is not a source by default", map[string]string{"X-Api-Key": dev.key}, 401},
		{"missing", nil, 401},
		{"basic scheme", map[string]string{"Authorization": "Basic " + dev.key}, 401},
		// The cross-tenant defect: no fallback from another scheme.
		{"basic + x-api-key", map[string]string{"Authorization": "Basic Zm9v", "X-Api-Key": dev.key}, 401},
		{"bearer + x-api-key", map[string]string{"Authorization": "Bearer " + dev.key, "X-Api-Key": dev.key}, 401},
		{"empty token", map[string]string{"Authorization": "Bearer "}, 401},
		{"unknown", map[string]string{"Authorization": "Bearer trg_unknown"}, 401},
		{"revoked", map[string]string{"Authorization": "Bearer " + revoked}, 403},
	} {
		res, body := dev.do(t, "GET", "/live/v1/inbox", tt.headers, "")
		assert.Equal(t, tt.code, res.StatusCode, "%s: GET /v1/inbox = %s", tt.name, body)
		switch tt.code {
		case 401:
			assert.Contains(t, body, `"message":"`+contract.KeySourcesBearer.Hint()+`"`, tt.name)
		case 403:
			assert.Contains(t, body, `"code":"forbidden"`, tt.name)
		}
	}

	// With the cache off, X-Api-Key works, alone.
	opt := serve(t, optionsTemplate, localgw.Options{})
	for _, tt := range []struct {
		name    string
		headers map[string]string
		code    int
	}{
		{"x-api-key", map[string]string{"X-Api-Key": opt.key}, 200},
		{"bearer", map[string]string{"Authorization": "Bearer " + opt.key}, 200},
		{"both", map[string]string{"Authorization": "Bearer " + opt.key, "X-Api-Key": opt.key}, 401},
		{"basic + x-api-key", map[string]string{"Authorization": "Basic Zm9v", "X-Api-Key": opt.key}, 401},
	} {
		res, body := opt.do(t, "GET", "/v1stage/v1/inbox", tt.headers, "")
		assert.Equal(t, tt.code, res.StatusCode, "cache off, %s: %s", tt.name, body)
		if tt.code == 401 {
			assert.Contains(t, body, contract.KeySourcesBearerOrHeader.Hint(), tt.name)
		}
	}
}

// A throttled key lookup is the authorizer's failure, the template's 503
// with Retry-After: never a 401 that would tell a client its key is bad.
func TestThrottledKeyLookupThroughGateway(t *testing.T) {
	throttled := db.FaultClient(func(op string, _ []byte) *http.Response {
		if op == "GetItem" {
			return ddbtest.AWSError("ThrottlingException", "Rate exceeded")
		}
		return nil
	})
	s := serveOn(t, throttled, devTemplate, localgw.Options{})
	res, body := s.do(t, "GET", "/live/v1/inbox", map[string]string{"Authorization": "Bearer " + s.key}, "")
	assert.Equal(t, http.StatusServiceUnavailable, res.StatusCode, body)
	assert.NotEmpty(t, res.Header.Get("Retry-After"), "Retry-After on the authorizer's 503")
	assert.Contains(t, body, `"message":"authentication is briefly unavailable; retry after the Retry-After delay"`, "the template's AUTHORIZER_CONFIGURATION_ERROR response")
}

// A TriggersApi given a lean events table tells its function so
// (EVENTS_PROFILE in the template): served through the gateway and the
// cached authorizer onto a lean table, the inbox lists undelivered events
// from the sparse index, an ack takes an event out of it, and the items
// have the lean shape. Config.EventsProfile overrides the template's.
func TestLeanProfileFromTheTemplate(t *testing.T) {
	for _, tt := range []struct {
		name     string
		template string
		override schema.EventsProfile
	}{
		{"the template's", leanTemplate, ""},
		{"overridden", devTemplate, schema.ProfileLean},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := serveProfile(t, db.Client, tt.template, localgw.Options{}, schema.ProfileLean, tt.override)
			auth := map[string]string{"Authorization": "Bearer " + s.key, "Content-Type": "application/json"}
			var ids []string
			for i := 0; i < 3; i++ {
				res, body := s.do(t, http.MethodPost, s.api.BasePath+"/v1/events", auth, `{"event_type":"order.created","payload":{"n":`+strconv.Itoa(i)+`}}`)
				require.Equal(t, http.StatusCreated, res.StatusCode, body)
				ids = append(ids, jsonField(t, body, "event_id"))
			}
			res, body := s.do(t, http.MethodPost, s.api.BasePath+"/v1/inbox/ack", auth, `{"event_ids":["`+ids[1]+`"]}`)
			require.Equal(t, http.StatusOK, res.StatusCode, body)
			res, body = s.do(t, http.MethodGet, s.api.BasePath+"/v1/inbox?order=asc", auth, "")
			require.Equal(t, http.StatusOK, res.StatusCode, body)
			assert.Contains(t, body, `"payload":{"n":0}`)
			assert.Contains(t, body, `"payload":{"n":2}`)
			assert.NotContains(t, body, ids[1], "acked: out of the inbox")
			res, body = s.do(t, http.MethodGet, s.api.BasePath+"/v1/inbox?status=delivered", auth, "")
			require.Equal(t, http.StatusOK, res.StatusCode, body)
			assert.Contains(t, body, ids[1])
			res, body = s.do(t, http.MethodGet, s.api.BasePath+"/v1/inbox?event_type=order.created&status=all", auth, "")
			require.Equal(t, http.StatusOK, res.StatusCode, body)
			for _, id := range ids {
				assert.Contains(t, body, id, "type filter on the table")
			}

			out, err := db.Client.Scan(context.Background(), &dynamodb.ScanInput{TableName: &s.events})
			require.NoError(t, err)
			require.Len(t, out.Items, 3)
			for _, it := range out.Items {
				assert.NotContains(t, it, schema.AttrEventTypeTS)
				_, indexed := it[schema.AttrStatusTS]
				assert.Equal(t, it[schema.AttrEventID].(*types.AttributeValueMemberS).Value != ids[1], indexed, "only undelivered events carry the index key")
			}
		})
	}
}

// jsonField returns the string member name of the JSON object body.
func jsonField(t *testing.T, body, name string) string {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(body), &m), body)
	v, _ := m[name].(string)
	require.NotEmpty(t, v, "%s in %s", name, body)
	return v
}
