package apigw_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/contract"
	"github.com/triggers-dev/triggers/internal/apigw"
	"github.com/triggers-dev/triggers/internal/apikey"
	"github.com/triggers-dev/triggers/internal/ddb/ddbtest"
	"github.com/triggers-dev/triggers/internal/httpapi"
	"github.com/triggers-dev/triggers/internal/store"
	"github.com/triggers-dev/triggers/schema"
)

var db *ddbtest.Local

func TestMain(m *testing.M) { os.Exit(ddbtest.MainWith(m, &db, ddbtest.Options{NoStreams: true})) }

var quiet = slog.New(slog.NewJSONHandler(io.Discard, nil))

func newProxy(t *testing.T) apigw.ProxyHandler {
	t.Helper()
	table := db.CreateTable(t, schema.Events())
	api, err := httpapi.New(httpapi.Config{Store: store.New(db.Client, table), CursorSecret: []byte(strings.Repeat("s", 32)), Logger: quiet})
	require.NoError(t, err)
	return apigw.Proxy(api)
}

func proxyEvent(method, path, tenant, body string) events.APIGatewayProxyRequest {
	ev := events.APIGatewayProxyRequest{
		HTTPMethod: method,
		Path:       path,
		Body:       body,
		MultiValueHeaders: map[string][]string{
			"content-type":     {"application/json"},
			"x-correlation-id": {"corr-9"},
		},
		RequestContext: events.APIGatewayProxyRequestContext{
			RequestID: "apigw-request-1",
			Identity:  events.APIGatewayRequestIdentity{SourceIP: "203.0.113.7"},
		},
	}
	if tenant != "" {
		ev.RequestContext.Authorizer = map[string]any{contract.AuthorizerTenantKey: tenant, "principalId": tenant}
	}
	return ev
}

func TestProxyRoundTrip(t *testing.T) {
	h := newProxy(t)
	ctx := context.Background()
	res, err := h(ctx, proxyEvent("POST", "/v1/events", "tenant-a", `{"event_type":"user.created","payload":{"n":12345678901234567890123}}`))
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, res.StatusCode, "%s", res.Body)
	assert.Equal(t, []string{"apigw-request-1"}, res.MultiValueHeaders["X-Request-Id"])
	assert.Equal(t, []string{"corr-9"}, res.MultiValueHeaders["X-Correlation-Id"])
	var created map[string]any
	require.NoError(t, json.Unmarshal([]byte(res.Body), &created))
	md := created["metadata"].(map[string]any)
	assert.Equal(t, "203.0.113.7", md["source_ip"])
	assert.Equal(t, "corr-9", md["correlation_id"])
	assert.Contains(t, res.Body, "12345678901234567890123")
	id := created["event_id"].(string)

	// Base64 bodies (binary media types) are decoded.
	ev := proxyEvent("PATCH", "/v1/events/"+id, "tenant-a", base64.StdEncoding.EncodeToString([]byte(`{"status":"failed"}`)))
	ev.IsBase64Encoded = true
	res, err = h(ctx, ev)
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, res.StatusCode, "%s", res.Body)

	// A route that takes no body refuses one, base64-encoded or not; an
	// empty body or one of only whitespace passes.
	for _, c := range []struct {
		body   string
		base64 bool
		status int
	}{
		{`{"status":"delivered"}`, true, http.StatusBadRequest},
		{`not json`, false, http.StatusBadRequest},
		{" \r\n", true, http.StatusOK},
		{"\n", false, http.StatusOK},
		{"", true, http.StatusOK},
	} {
		ev = proxyEvent("GET", "/v1/events/"+id, "tenant-a", c.body)
		if c.base64 {
			ev.Body, ev.IsBase64Encoded = base64.StdEncoding.EncodeToString([]byte(c.body)), true
		}
		res, err = h(ctx, ev)
		require.NoError(t, err)
		assert.Equal(t, c.status, res.StatusCode, "GET with %q (base64 %t): %s", c.body, c.base64, res.Body)
		if c.status == http.StatusBadRequest {
			assert.Contains(t, res.Body, `"code":"invalid_json"`, "%q", c.body)
			assert.Contains(t, res.Body, "GET /v1/events/{event_id} takes no request body", "%q", c.body)
		} else {
			assert.Contains(t, res.Body, `"status":"failed"`, "%q", c.body)
		}
	}

	// A route that does not honour an Idempotency-Key refuses one, and
	// changes nothing.
	ev = proxyEvent("PATCH", "/v1/events/"+id, "tenant-a", `{"status":"retrying"}`)
	ev.MultiValueHeaders["idempotency-key"] = []string{"retry-1"}
	res, err = h(ctx, ev)
	require.NoError(t, err)
	assert.Equal(t, http.StatusBadRequest, res.StatusCode, "%s", res.Body)
	assert.Contains(t, res.Body, `"code":"invalid_idempotency_key"`)
	assert.Contains(t, res.Body, "Idempotency-Key is not supported on PATCH /v1/events/{event_id}")
	res, _ = h(ctx, proxyEvent("GET", "/v1/events/"+id, "tenant-a", ""))
	assert.Contains(t, res.Body, `"status":"failed"`, "not moved: %s", res.Body)

	// Multi-value query parameters reach the handler (repeats are errors).
	ev = proxyEvent("GET", "/v1/inbox", "tenant-a", "")
	ev.MultiValueQueryStringParameters = map[string][]string{"status": {"failed"}, "limit": {"10"}}
	res, err = h(ctx, ev)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode, "%s", res.Body)
	assert.Contains(t, res.Body, id)
	ev.MultiValueQueryStringParameters = map[string][]string{"limit": {"10", "20"}}
	res, _ = h(ctx, ev)
	assert.Equal(t, http.StatusBadRequest, res.StatusCode)
	ev.MultiValueQueryStringParameters = nil
	ev.QueryStringParameters = map[string]string{"status": "failed"}
	res, _ = h(ctx, ev)
	assert.Contains(t, res.Body, id)

	// A route that takes no query parameter refuses one, named as API
	// Gateway decoded it ("%zz" stays as sent), and stores nothing.
	ev = proxyEvent("POST", "/v1/events", "tenant-a", `{"event_type":"user.created","payload":{}}`)
	ev.MultiValueQueryStringParameters = map[string][]string{"%zz": {"1"}}
	res, _ = h(ctx, ev)
	assert.Equal(t, http.StatusBadRequest, res.StatusCode, "%s", res.Body)
	assert.Contains(t, res.Body, `parameter \"%zz\" is unknown: POST /v1/events takes no query parameter`)
	ev = proxyEvent("GET", "/v1/inbox", "tenant-a", "")
	ev.QueryStringParameters = map[string]string{"status": "all"}
	res, _ = h(ctx, ev)
	assert.Equal(t, 1, strings.Count(res.Body, `"event_id"`), "one event stored: %s", res.Body)

	// Another tenant in the authorizer context sees nothing.
	res, _ = h(ctx, proxyEvent("GET", "/v1/events/"+id, "tenant-b", ""))
	assert.Equal(t, http.StatusNotFound, res.StatusCode)
}

func TestProxyWithoutTenantIs401(t *testing.T) {
	h := newProxy(t)
	res, err := h(context.Background(), proxyEvent("GET", "/v1/inbox", "", ""))
	require.NoError(t, err)
	assert.Equal(t, http.StatusUnauthorized, res.StatusCode)
	ev := proxyEvent("POST", "/v1/events", "tenant-a", "not base64!")
	ev.IsBase64Encoded = true
	res, err = h(context.Background(), ev)
	require.NoError(t, err)
	assert.Equal(t, http.StatusBadRequest, res.StatusCode)
	assert.True(t, json.Valid([]byte(res.Body)), "body %s", res.Body)
}

func TestAuthorizer(t *testing.T) {
	ctx := context.Background()
	table := db.CreateTable(t, schema.APIKeys())
	keys := apikey.NewStore(db.Client, table)
	active, _, err := keys.Create(ctx, "tenant-a", "")
	require.NoError(t, err)
	revoked, rk, err := keys.Create(ctx, "tenant-a", "")
	require.NoError(t, err)
	_, err = keys.Revoke(ctx, rk.Hash)
	require.NoError(t, err)
	auth := apigw.Authorizer(keys, contract.KeySourcesBearer, quiet)
	arn := "arn:aws:execute-api:us-east-1:123456789012:abcdef1234/prod/GET/v1/inbox"
	req := func(headers map[string]string) events.APIGatewayCustomAuthorizerRequestTypeRequest {
		return events.APIGatewayCustomAuthorizerRequestTypeRequest{Type: "REQUEST", MethodArn: arn, Headers: headers}
	}

	res, err := auth(ctx, req(map[string]string{"authorization": "Bearer " + active}))
	require.NoError(t, err)
	assert.Equal(t, "tenant-a", res.PrincipalID)
	assert.Equal(t, "tenant-a", res.Context[contract.AuthorizerTenantKey])
	require.Len(t, res.PolicyDocument.Statement, 1)
	assert.Equal(t, "Allow", res.PolicyDocument.Statement[0].Effect)
	assert.Equal(t, []string{"arn:aws:execute-api:us-east-1:123456789012:abcdef1234/prod/*/*"}, res.PolicyDocument.Statement[0].Resource)

	for name, h := range map[string]map[string]string{
		"missing":      nil,
		"unknown":      {"Authorization": "Bearer trg_nope"},
		"empty bearer": {"Authorization": "Bearer "},
		// The cross-tenant defect: the cache keys on Authorization, so a
		// key in X-Api-Key must never be looked up behind it.
		"basic + x-api-key": {"Authorization": "Basic Zm9v", "X-Api-Key": active},
		"x-api-key alone":   {"X-API-KEY": active},
	} {
		_, err = auth(ctx, req(h))
		assert.Equal(t, apigw.ErrUnauthorized, err, "%s: want the Unauthorized error (401)", name)
	}

	// The policy covers the whole stage; a method ARN with fewer parts
	// than api/stage/METHOD/path is kept as the resource, from two parts on
	// it becomes api/stage/*/*.
	for in, want := range map[string]string{
		"arn:aws:execute-api:us-east-1:1:api/prod":          "arn:aws:execute-api:us-east-1:1:api/prod/*/*",
		"arn:aws:execute-api:us-east-1:1:api/prod/POST/a/b": "arn:aws:execute-api:us-east-1:1:api/prod/*/*",
		"arn:aws:execute-api:us-east-1:1:api":               "arn:aws:execute-api:us-east-1:1:api",
	} {
		r := req(map[string]string{"Authorization": "Bearer " + active})
		r.MethodArn = in
		res, err = auth(ctx, r)
		require.NoError(t, err)
		assert.Equal(t, []string{want}, res.PolicyDocument.Statement[0].Resource, "method ARN %s", in)
	}

	res, err = auth(ctx, req(map[string]string{"Authorization": "Bearer " + revoked}))
	require.NoError(t, err)
	assert.Equal(t, "Deny", res.PolicyDocument.Statement[0].Effect, "revoked key: want Deny (403)")
	assert.Empty(t, res.Context)

	// With the cache off, X-Api-Key is a source too, but never beside
	// Authorization.
	uncached := apigw.Authorizer(keys, contract.KeySourcesBearerOrHeader, quiet)
	res, err = uncached(ctx, req(map[string]string{"X-API-KEY": active}))
	require.NoError(t, err)
	assert.Equal(t, "Allow", res.PolicyDocument.Statement[0].Effect)
	_, err = uncached(ctx, req(map[string]string{"Authorization": "Bearer " + active, "X-Api-Key": active}))
	assert.Equal(t, apigw.ErrUnauthorized, err, "two credentials: 401")
	_, err = uncached(ctx, req(map[string]string{"Authorization": "Basic Zm9v", "X-Api-Key": active}))
	assert.Equal(t, apigw.ErrUnauthorized, err, "no fallback from another scheme")

	broken := apigw.Authorizer(apikey.NewStore(db.Client, "no-such-table"), contract.KeySourcesBearer, quiet)
	_, err = broken(ctx, req(map[string]string{"Authorization": "Bearer " + active}))
	require.Error(t, err)
	assert.NotEqual(t, apigw.ErrUnauthorized, err, "a DynamoDB failure must not look like a bad key")
}

// recordingAuth maps keys to tenants and records every key it was asked.
type recordingAuth struct {
	tenants map[string]string
	asked   []string
}

func (r *recordingAuth) Authenticate(_ context.Context, key string) (string, error) {
	r.asked = append(r.asked, key)
	if t, ok := r.tenants[key]; ok {
		return t, nil
	}
	return "", apikey.ErrUnknown
}

// TestAuthorizerAnswerIsAFunctionOfTheIdentitySource checks, over random
// header combinations in both of API Gateway's header maps, that the
// authorizer only ever looks up the Bearer token of the Authorization
// header (the identity source the construct pins) and gives the same
// answer to requests whose Authorization values are the same: a result
// API Gateway caches under that value is right for every request it is
// reused for.
func TestAuthorizerAnswerIsAFunctionOfTheIdentitySource(t *testing.T) {
	rec := &recordingAuth{tenants: map[string]string{"trg_a": "tenant-a", "trg_b": "tenant-b"}}
	auth := apigw.Authorizer(rec, contract.KeySourcesBearer, quiet)
	authValues := []string{"Bearer trg_a", "Bearer trg_b", "bearer trg_a", "Basic Zm9v", "Bearer ", "Bearer trg_c", "trg_a"}
	extras := map[string][]string{"X-Api-Key": {"trg_a", "trg_b"}, "x-api-key": {"trg_b"}, "Cookie": {"trg_a"}}
	rng := rand.New(rand.NewPCG(7, 11))
	seen := map[string]string{}
	for i := 0; i < 2000; i++ {
		ev := events.APIGatewayCustomAuthorizerRequestTypeRequest{Type: "REQUEST", MethodArn: "arn:aws:execute-api:us-east-1:1:api/live/GET/v1/inbox", Headers: map[string]string{}, MultiValueHeaders: map[string][]string{}}
		var auths []string
		if rng.IntN(4) > 0 {
			v := authValues[rng.IntN(len(authValues))]
			auths = []string{v}
			ev.Headers["Authorization"] = v
			ev.MultiValueHeaders["Authorization"] = []string{v}
		}
		for k, vs := range extras {
			if rng.IntN(2) == 0 {
				v := vs[rng.IntN(len(vs))]
				ev.Headers[k] = v
				ev.MultiValueHeaders[k] = []string{v}
			}
		}
		rec.asked = nil
		res, err := auth(context.Background(), ev)
		answer := "error:" + fmt.Sprint(err)
		if err == nil {
			answer = res.PrincipalID + ":" + res.PolicyDocument.Statement[0].Effect
		}
		for _, k := range rec.asked {
			require.Len(t, auths, 1)
			assert.Equal(t, strings.TrimSpace(auths[0][len("Bearer "):]), k, "looked up a key that is not the Authorization bearer token (headers %v)", ev.Headers)
		}
		ck := strings.Join(auths, "\x00")
		if prev, ok := seen[ck]; ok {
			require.Equal(t, prev, answer, "Authorization %q answered differently depending on other headers %v", auths, ev.Headers)
		}
		seen[ck] = answer
	}
	assert.Equal(t, "tenant-a:Allow", seen["Bearer trg_a"])
	assert.Equal(t, "error:Unauthorized", seen["Basic Zm9v"], "another scheme never falls back to X-Api-Key")
	assert.Equal(t, "error:Unauthorized", seen[""], "no Authorization: 401, whatever X-Api-Key says")
}

// TestAuthorizerNeverLogsTheKey captures the authorizer's log lines and
// checks that no key, nor more than its display prefix, appears in them.
func TestAuthorizerNeverLogsTheKey(t *testing.T) {
	key, err := apikey.Generate()
	require.NoError(t, err)
	short := "trg_shortsecret"
	var buf bytes.Buffer
	auth := apigw.Authorizer(&recordingAuth{tenants: map[string]string{key: "tenant-a"}}, contract.KeySourcesBearer, slog.New(slog.NewJSONHandler(&buf, nil)))
	for _, k := range []string{key, short, key + "x"} {
		_, _ = auth(context.Background(), events.APIGatewayCustomAuthorizerRequestTypeRequest{Headers: map[string]string{"Authorization": "Bearer " + k}})
	}
	logs := buf.String()
	require.Equal(t, 3, strings.Count(logs, "\n"), "one line per call: %s", logs)
	assert.Contains(t, logs, `"key_prefix":"`+key[:12]+`"`)
	assert.NotContains(t, logs, key[:13], "more than the display prefix of a valid key was logged")
	assert.NotContains(t, logs, short, "a short (invalid) key was logged whole")
}

// TestProxyRoutesOnTheResource: behind a custom domain with a base path
// mapping, API Gateway's path carries the base path; routing uses the
// resource and its path parameters, so every route still works.
func TestProxyRoutesOnTheResource(t *testing.T) {
	h := newProxy(t)
	ctx := context.Background()
	ev := proxyEvent("POST", "/triggers/v1/events", "tenant-a", `{"event_type":"a","payload":{}}`)
	ev.Resource = "/v1/events"
	res, err := h(ctx, ev)
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, res.StatusCode, "%s", res.Body)
	var created struct {
		ID string `json:"event_id"`
	}
	require.NoError(t, json.Unmarshal([]byte(res.Body), &created))

	ev = proxyEvent("GET", "/triggers/v1/events/"+created.ID, "tenant-a", "")
	ev.Resource = "/v1/events/{event_id}"
	ev.PathParameters = map[string]string{"event_id": created.ID}
	res, err = h(ctx, ev)
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, res.StatusCode, "%s", res.Body)
	assert.Contains(t, res.Body, created.ID)

	// A decoded path parameter with a slash is no id: 404, not another route.
	ev.PathParameters = map[string]string{"event_id": "batch/x"}
	res, _ = h(ctx, ev)
	assert.Equal(t, http.StatusNotFound, res.StatusCode, "%s", res.Body)
}

// TestProxyRefusesCredentialsOutsideTheCacheKey: a request the authorizer
// allowed (from its cache, say) that also carries X-Api-Key is a 401 from
// the API function, so "both headers" never depends on the cache.
func TestProxyRefusesCredentialsOutsideTheCacheKey(t *testing.T) {
	h := newProxy(t)
	ev := proxyEvent("GET", "/v1/inbox", "tenant-a", "")
	ev.MultiValueHeaders["Authorization"] = []string{"Bearer trg_a"}
	res, err := h(context.Background(), ev)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode, "%s", res.Body)
	ev.MultiValueHeaders["X-Api-Key"] = []string{"trg_b"}
	res, err = h(context.Background(), ev)
	require.NoError(t, err)
	assert.Equal(t, http.StatusUnauthorized, res.StatusCode, "%s", res.Body)
	assert.Contains(t, res.Body, contract.KeySourcesBearer.Hint())
}

// With DynamoDB hung, the authorizer fails before its invocation times out,
// with an error API Gateway answers through AUTHORIZER_CONFIGURATION_ERROR
// (the construct's 503 + Retry-After), never "Unauthorized".
func TestAuthorizerFailsBeforeItsDeadline(t *testing.T) {
	ctx := context.Background()
	table := db.CreateTable(t, schema.APIKeys())
	proxy, client := db.Faulty(t)
	keys := &deadlineSeen{Store: apikey.NewStore(client, table)}
	auth := apigw.Authorizer(keys, contract.KeySourcesBearer, quiet)
	proxy.Stall()
	defer proxy.Release()
	invocation, cancel := context.WithTimeout(ctx, apigw.AuthorizerDeadlineMargin+time.Second)
	defer cancel()
	_, err := auth(invocation, events.APIGatewayCustomAuthorizerRequestTypeRequest{Headers: map[string]string{"Authorization": "Bearer trg_x"}})
	require.Error(t, err)
	assert.NotEqual(t, apigw.ErrUnauthorized, err)
	// The store's call was bounded by the invocation's deadline less the
	// margin (the stalled call ended there: err). Not "invocation.Err()
	// is nil", a wall-clock bound of the margin, 500 ms, on the unwinding.
	end, _ := invocation.Deadline()
	require.True(t, keys.has, "the store was called without a deadline")
	assert.Equal(t, end.Add(-apigw.AuthorizerDeadlineMargin), keys.deadline, "the store's deadline")
}

// deadlineSeen is an apikey.Store that records the deadline its Principal
// was called with.
type deadlineSeen struct {
	*apikey.Store
	deadline time.Time
	has      bool
}

func (d *deadlineSeen) Principal(ctx context.Context, key string) (apikey.Principal, error) {
	d.deadline, d.has = ctx.Deadline()
	return d.Store.Principal(ctx, key)
}

// Headers merges API Gateway's two header maps the same way whatever Go's
// map order: names that differ only in case keep every value (an earlier
// version dropped one of them at random).
func TestHeadersKeepsEveryValueInAnyOrder(t *testing.T) {
	multi := map[string][]string{"authorization": {"Bearer aaaa"}, "Authorization": {"Bearer bbbb"}, "X-Other": {"1", "2"}}
	single := map[string]string{"Authorization": "Bearer bbbb", "X-Single": "s"}
	for i := 0; i < 50; i++ {
		h := apigw.Headers(single, multi)
		assert.ElementsMatch(t, []string{"Bearer aaaa", "Bearer bbbb"}, h.Values("Authorization"))
		assert.Equal(t, []string{"1", "2"}, h.Values("X-Other"))
		assert.Equal(t, []string{"s"}, h.Values("X-Single"), "a name only in headers is kept")
	}
	auth := apigw.Authorizer(&recordingAuth{tenants: map[string]string{"aaaa": "tenant-a", "bbbb": "tenant-b"}}, contract.KeySourcesBearer, quiet)
	for i := 0; i < 20; i++ {
		_, err := auth(context.Background(), events.APIGatewayCustomAuthorizerRequestTypeRequest{MultiValueHeaders: multi})
		assert.Equal(t, apigw.ErrUnauthorized, err, "two Authorization values: always 401")
	}
}

// TestProxyKeepsTheTrailingSlash: API Gateway selects a route's resource
// for its path with a trailing slash too ("/v1/inbox/" is /v1/inbox); the
// handler then sees the slash, so such a path is a 404 not_found as the
// handler served on its own and the OpenAPI document
// (x-unknown-path-responses) answer it, not the route's answer.
func TestProxyKeepsTheTrailingSlash(t *testing.T) {
	h := newProxy(t)
	ctx := context.Background()
	ev := proxyEvent("POST", "/v1/events", "tenant-a", `{"event_type":"a","payload":{}}`)
	ev.Resource = "/v1/events"
	res, err := h(ctx, ev)
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, res.StatusCode, "%s", res.Body)
	var created struct {
		ID string `json:"event_id"`
	}
	require.NoError(t, json.Unmarshal([]byte(res.Body), &created))

	for _, c := range []struct {
		method, path, resource, id, body string
	}{
		{"GET", "/v1/inbox/", "/v1/inbox", "", ""},
		{"GET", "/live/v1/inbox/", "/v1/inbox", "", ""},
		{"POST", "/v1/events/", "/v1/events", "", `{"event_type":"a","payload":{}}`},
		{"POST", "/v1/inbox/ack/", "/v1/inbox/ack", "", `{"event_ids":["` + created.ID + `"]}`},
		{"GET", "/v1/events/" + created.ID + "/", "/v1/events/{event_id}", created.ID, ""},
		{"PATCH", "/v1/events/" + created.ID + "/", "/v1/events/{event_id}", created.ID, `{"status":"delivered"}`},
	} {
		ev := proxyEvent(c.method, c.path, "tenant-a", c.body)
		ev.Resource = c.resource
		if c.id != "" {
			ev.PathParameters = map[string]string{"event_id": c.id}
		}
		res, err := h(ctx, ev)
		require.NoError(t, err)
		assert.Equal(t, http.StatusNotFound, res.StatusCode, "%s %s: %s", c.method, c.path, res.Body)
		assert.Contains(t, res.Body, `"code":"not_found"`, "%s %s", c.method, c.path)
	}
	// Nothing was written by them: one event, still received.
	ev = proxyEvent("GET", "/v1/inbox", "tenant-a", "")
	ev.Resource = "/v1/inbox"
	res, err = h(ctx, ev)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode, "%s", res.Body)
	assert.Equal(t, 1, strings.Count(res.Body, `"event_id"`), "%s", res.Body)
	assert.Contains(t, res.Body, `"status":"received"`)
}
