package localgw

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

const (
	realAuthFn = "TriggersAuthorizerFunctionAB129C16"
	realAPIFn  = "TriggersApiFunction03496114"
	realAuth   = "TriggersAuthorizer437069A3"
)

// templateResponse reads the real template's gateway response for typ,
// falling back to DEFAULT_4XX/5XX as API Gateway does: the status and the
// contract's error code it answers with.
func templateResponse(t *testing.T, typ string, natural int) (int, string) {
	t.Helper()
	var tmpl struct {
		Resources map[string]struct {
			Type       string
			Properties struct {
				ResponseType      string
				StatusCode        string
				ResponseTemplates map[string]string
			}
		}
	}
	if err := json.Unmarshal(readFile(t, realTemplate), &tmpl); err != nil {
		t.Fatal(err)
	}
	find := func(typ string) (status int, code string, ok bool) {
		for _, r := range tmpl.Resources {
			if r.Type == "AWS::ApiGateway::GatewayResponse" && r.Properties.ResponseType == typ {
				status, _ = strconv.Atoi(r.Properties.StatusCode)
				m := regexp.MustCompile(`"code":"([a-z_]+)"`).FindStringSubmatch(r.Properties.ResponseTemplates["application/json"])
				if m == nil {
					t.Fatalf("gateway response %s has no contract error code", typ)
				}
				return status, m[1], true
			}
		}
		return 0, "", false
	}
	class := "DEFAULT_5XX"
	if natural < 500 {
		class = "DEFAULT_4XX"
	}
	fbStatus, fbCode, fbOK := find(class)
	status, code, ok := find(typ)
	if !ok {
		if !fbOK {
			t.Fatalf("the template customizes neither %s nor %s", typ, class)
		}
		code = fbCode
	}
	if status == 0 {
		status = fbStatus
	}
	if status == 0 {
		status = natural
	}
	return status, code
}

func realFixture(t *testing.T, opts Options) *fixture {
	t.Helper()
	return newFixture(t, readFile(t, realTemplate), opts)
}

func TestRealTemplateRoutes(t *testing.T) {
	f := realFixture(t, Options{})
	// The contract's routes, each behind the authorizer but for the
	// public OpenAPI document, and served by the API function (the
	// template may add more methods, such as ANY).
	want := []Route{
		{"GET", "/v1/openapi.json", "", "AWS_PROXY", realAPIFn},
		{"POST", "/v1/events", realAuth, "AWS_PROXY", realAPIFn},
		{"POST", "/v1/events/batch", realAuth, "AWS_PROXY", realAPIFn},
		{"GET", "/v1/events/{event_id}", realAuth, "AWS_PROXY", realAPIFn},
		{"PATCH", "/v1/events/{event_id}", realAuth, "AWS_PROXY", realAPIFn},
		{"GET", "/v1/inbox", realAuth, "AWS_PROXY", realAPIFn},
		{"POST", "/v1/inbox/ack", realAuth, "AWS_PROXY", realAPIFn},
	}
	got := f.gw.Routes()
	have := map[Route]bool{}
	for _, r := range got {
		have[r] = true
		wantAuth := realAuth
		if r.Method == "GET" && r.Path == "/v1/openapi.json" {
			wantAuth = ""
		}
		if r.Authorizer != wantAuth {
			t.Errorf("route %s %s has authorizer %q, want %q", r.Method, r.Path, r.Authorizer, wantAuth)
		}
	}
	for _, r := range want {
		if !have[r] {
			t.Errorf("Routes() = %+v, missing %+v", got, r)
		}
	}
	if f.gw.Stage() != "live" {
		t.Errorf("Stage() = %q, want live", f.gw.Stage())
	}
	// Each function is resolved once, with its template properties.
	byID := map[string]Function{}
	for _, fn := range f.fns {
		if _, dup := byID[fn.LogicalID]; dup {
			t.Errorf("function %s resolved twice", fn.LogicalID)
		}
		byID[fn.LogicalID] = fn
	}
	if len(byID) != 2 {
		t.Fatalf("resolved %d functions, want the authorizer and the API function", len(byID))
	}
	if d := byID[realAuthFn].Description; d != "Triggers API-key authorizer" {
		t.Errorf("authorizer Description = %q", d)
	}
	if _, ok := byID[realAuthFn].Environment["API_KEYS_TABLE"]; !ok {
		t.Errorf("authorizer Environment = %v, want API_KEYS_TABLE", byID[realAuthFn].Environment)
	}
	if got := byID[realAPIFn].Environment["RETENTION_DAYS"]; got != "30" {
		t.Errorf("API function RETENTION_DAYS = %v, want 30", got)
	}
	if got := byID[realAPIFn].Timeout; got != 10*time.Second {
		t.Errorf("API function Timeout = %s, want 10s", got)
	}
}

func TestRealTemplateProxyEvent(t *testing.T) {
	f := realFixture(t, Options{Region: "eu-west-1", AccountID: "111122223333", APIID: "abc123defg"})
	res := f.do(t, "GET", "/live/v1/events/evt_1?limit=10&tag=a&tag=b%20c", "",
		"Authorization", "Bearer k1", "X-Correlation-Id", "c-1", "User-Agent", "curl/8")
	if res.status != 200 {
		t.Fatalf("status = %d (%s), want 200", res.status, res.body)
	}
	ev := f.api.Last(t)
	rc := ev.RequestContext
	checks := []struct{ name, got, want string }{
		{"resource", ev.Resource, "/v1/events/{event_id}"},
		{"path", ev.Path, "/v1/events/evt_1"},
		{"httpMethod", ev.HTTPMethod, "GET"},
		{"pathParameters.event_id", ev.PathParameters["event_id"], "evt_1"},
		{"queryStringParameters.tag", ev.QueryStringParameters["tag"], "b c"},
		{"queryStringParameters.limit", ev.QueryStringParameters["limit"], "10"},
		{"headers.X-Correlation-Id", ev.Headers["X-Correlation-Id"], "c-1"},
		{"requestContext.stage", rc.Stage, "live"},
		{"requestContext.resourcePath", rc.ResourcePath, "/v1/events/{event_id}"},
		{"requestContext.path", rc.Path, "/live/v1/events/evt_1"},
		{"requestContext.httpMethod", rc.HTTPMethod, "GET"},
		{"requestContext.apiId", rc.APIID, "abc123defg"},
		{"requestContext.accountId", rc.AccountID, "111122223333"},
		{"requestContext.identity.sourceIp", rc.Identity.SourceIP, "192.0.2.1"},
		{"requestContext.identity.userAgent", rc.Identity.UserAgent, "curl/8"},
		{"requestContext.domainName", rc.DomainName, "example.com"},
		{"requestContext.requestId", rc.RequestID, res.header.Get("x-amzn-RequestId")},
		{"requestContext.authorizer.tenantId", rc.Authorizer["tenantId"].(string), "tenant-k1"},
		{"requestContext.authorizer.principalId", rc.Authorizer["principalId"].(string), "tenant-k1"},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("event %s = %q, want %q", c.name, c.got, c.want)
		}
	}
	if rc.RequestID == "" {
		t.Error("requestContext.requestId is empty")
	}
	if got := ev.MultiValueQueryStringParameters["tag"]; !reflect.DeepEqual(got, []string{"a", "b c"}) {
		t.Errorf("multiValueQueryStringParameters.tag = %q, want [a, b c]", got)
	}
	if ev.Body != "" || ev.IsBase64Encoded {
		t.Errorf("body = %q (base64 %v), want none", ev.Body, ev.IsBase64Encoded)
	}
	if ev.StageVariables != nil {
		t.Errorf("stageVariables = %v, want null (the stage has none)", ev.StageVariables)
	}
	// The authorizer saw the same request id and the method ARN.
	calls := f.auth.Calls()
	if len(calls) != 1 {
		t.Fatalf("authorizer calls = %d, want 1", len(calls))
	}
	if want := "arn:aws:execute-api:eu-west-1:111122223333:abc123defg/live/GET/v1/events/evt_1"; calls[0].MethodArn != want {
		t.Errorf("methodArn = %q, want %q", calls[0].MethodArn, want)
	}
	if calls[0].RequestContext.RequestID != rc.RequestID || calls[0].Type != "REQUEST" || calls[0].Resource != "/v1/events/{event_id}" {
		t.Errorf("authorizer event = %+v, want type REQUEST, the request's id and resource", calls[0])
	}
	// The proxy response is mapped, and the gateway adds its request id.
	if res.header.Get("X-Request-Id") != rc.RequestID || res.body != `{"ok":true}` {
		t.Errorf("response = %v %q, want the handler's headers and body", res.header, res.body)
	}
}

func TestRealTemplateRouting(t *testing.T) {
	f := realFixture(t, Options{})
	// Cases that hold whatever other methods the template adds; the
	// edge template tests the rest of the routing rules.
	cases := []struct {
		method, target string
		status         int
		resource       string // "" for a gateway response
		code           string
	}{
		{"POST", "/live/v1/events", 200, "/v1/events", ""},
		{"POST", "/live/v1/events/batch", 200, "/v1/events/batch", ""}, // literal before {event_id}
		{"PATCH", "/live/v1/events/e1", 200, "/v1/events/{event_id}", ""},
		{"GET", "/live/v1/inbox/", 200, "/v1/inbox", ""},
		{"GET", "/live/v2/inbox", 404, "", "not_found"}, // MISSING_AUTHENTICATION_TOKEN, customized to 404
		{"GET", "/live/v1", 404, "", "not_found"},       // a resource without methods
		{"GET", "/live", 404, "", "not_found"},
		{"GET", "/prod/v1/inbox", 403, "", ""}, // another stage: no API matched
		{"GET", "/v1/inbox", 403, "", ""},
	}
	for _, c := range cases {
		before := len(f.api.Events())
		res := f.do(t, c.method, c.target, "", "Authorization", "Bearer k")
		if res.status != c.status {
			t.Errorf("%s %s: status = %d (%s), want %d", c.method, c.target, res.status, res.body, c.status)
			continue
		}
		called := len(f.api.Events()) > before
		if c.resource != "" {
			if !called || f.api.Last(t).Resource != c.resource {
				t.Errorf("%s %s: handler called %v, want resource %s", c.method, c.target, called, c.resource)
			}
			continue
		}
		if called {
			t.Errorf("%s %s: the handler was called", c.method, c.target)
		}
		if c.code != "" {
			code, _, rid := res.errorBody(t)
			if code != c.code || rid != res.header.Get("x-amzn-RequestId") || rid == "" {
				t.Errorf("%s %s: error %q request_id %q, want %q and the x-amzn-RequestId %q", c.method, c.target, code, rid, c.code, res.header.Get("x-amzn-RequestId"))
			}
		} else if res.body != `{"message":"Forbidden"}` {
			t.Errorf("%s %s: body = %q, want API Gateway's Forbidden", c.method, c.target, res.body)
		}
	}
	if n := f.auth.N(); n == 0 {
		t.Error("the authorizer was never called")
	}
}

func TestRealTemplateMissingIdentitySource(t *testing.T) {
	f := realFixture(t, Options{})
	for _, h := range [][]string{nil, {"Authorization", ""}, {"X-Api-Key", "k"}} {
		res := f.do(t, "GET", "/live/v1/inbox", "", h...)
		code, msg, rid := res.errorBody(t)
		if res.status != 401 || code != "unauthorized" || rid != res.header.Get("x-amzn-RequestId") || !strings.Contains(msg, "Bearer") {
			t.Errorf("headers %q: %d %s, want the customized 401 with the request id", h, res.status, res.body)
		}
		if res.header.Get("Content-Type") != "application/json" || res.header.Get("x-amzn-ErrorType") != "UnauthorizedException" {
			t.Errorf("headers %q: response headers %v", h, res.header)
		}
	}
	if n := f.auth.N(); n != 0 {
		t.Errorf("authorizer calls = %d, want 0: a missing identity source is refused before it", n)
	}
	if len(f.api.Events()) != 0 {
		t.Error("the API function was called")
	}
}

func TestRealTemplateAuthorizerCache(t *testing.T) {
	f := realFixture(t, Options{})
	get := func(token string) response {
		return f.do(t, "GET", "/live/v1/inbox", "", "Authorization", "Bearer "+token)
	}

	for i := 0; i < 3; i++ {
		if res := get("k1"); res.status != 200 {
			t.Fatalf("GET with k1: %d %s", res.status, res.body)
		}
	}
	if n := f.auth.N(); n != 1 {
		t.Fatalf("authorizer calls after 3 requests with one key = %d, want 1 (cached)", n)
	}
	// A cache hit still carries the authorizer's context.
	if got := f.api.Last(t).RequestContext.Authorizer["tenantId"]; got != "tenant-k1" {
		t.Errorf("tenantId on a cache hit = %v, want tenant-k1", got)
	}
	get("k2")
	if n := f.auth.N(); n != 2 {
		t.Fatalf("authorizer calls after another key = %d, want 2", n)
	}
	// TTL 300 s: still cached just before, called again at expiry.
	f.clock.Advance(299 * time.Second)
	get("k1")
	if n := f.auth.N(); n != 2 {
		t.Errorf("authorizer calls at 299 s = %d, want 2 (cached)", n)
	}
	f.clock.Advance(time.Second)
	get("k1")
	if n := f.auth.N(); n != 3 {
		t.Errorf("authorizer calls at 300 s = %d, want 3 (expired)", n)
	}
	f.gw.FlushAuthorizerCache()
	get("k1")
	if n := f.auth.N(); n != 4 {
		t.Errorf("authorizer calls after a flush = %d, want 4", n)
	}
}

func TestRealTemplateErrorsNotCached(t *testing.T) {
	f := realFixture(t, Options{})
	// What the template makes of AUTHORIZER_CONFIGURATION_ERROR (500 by
	// default, through DEFAULT_5XX when not customized).
	cfgStatus, cfgCode := templateResponse(t, "AUTHORIZER_CONFIGURATION_ERROR", 500)
	cases := []struct {
		token  string
		status int
		code   string
	}{
		{"bad", 401, "unauthorized"},      // "Unauthorized": UNAUTHORIZED
		{"boom", cfgStatus, cfgCode},      // another error: AUTHORIZER_CONFIGURATION_ERROR
		{"panic", cfgStatus, cfgCode},     // a crash is a function error too
		{"malformed", cfgStatus, cfgCode}, // no policy document
		{"nested-context", cfgStatus, cfgCode},
	}
	for _, c := range cases {
		before := f.auth.N()
		for i := 0; i < 2; i++ {
			res := f.do(t, "GET", "/live/v1/inbox", "", "Authorization", "Bearer "+c.token)
			code, _, rid := res.errorBody(t)
			if res.status != c.status || code != c.code || rid == "" {
				t.Errorf("token %s: %d %s, want %d %s", c.token, res.status, res.body, c.status, c.code)
			}
		}
		if n := f.auth.N() - before; n != 2 {
			t.Errorf("token %s: authorizer calls for 2 requests = %d, want 2 (not cached)", c.token, n)
		}
	}
	if len(f.api.Events()) != 0 {
		t.Error("the API function was called")
	}
}

func TestRealTemplatePolicyOnCacheHit(t *testing.T) {
	f := realFixture(t, Options{})
	if res := f.do(t, "GET", "/live/v1/inbox", "", "Authorization", "Bearer inbox-only"); res.status != 200 {
		t.Fatalf("GET /v1/inbox: %d %s, want 200", res.status, res.body)
	}
	for _, r := range [][2]string{{"POST", "/live/v1/inbox/ack"}, {"GET", "/live/v1/events/e1"}, {"POST", "/live/v1/events"}} {
		res := f.do(t, r[0], r[1], "{}", "Authorization", "Bearer inbox-only")
		code, _, _ := res.errorBody(t)
		if res.status != 403 || code != "forbidden" {
			t.Errorf("%s %s on a cache hit of a GET /v1/inbox policy: %d %s, want 403 forbidden", r[0], r[1], res.status, res.body)
		}
		if res.header.Get("x-amzn-ErrorType") != "AccessDeniedException" {
			t.Errorf("x-amzn-ErrorType = %q", res.header.Get("x-amzn-ErrorType"))
		}
	}
	if n := f.auth.N(); n != 1 {
		t.Errorf("authorizer calls = %d, want 1: the cached policy is re-evaluated per method ARN", n)
	}
	if res := f.do(t, "GET", "/live/v1/inbox", "", "Authorization", "Bearer inbox-only"); res.status != 200 {
		t.Errorf("GET /v1/inbox again: %d, want 200", res.status)
	}

	// An explicit Deny wins over an Allow of everything.
	if res := f.do(t, "GET", "/live/v1/inbox", "", "Authorization", "Bearer no-post"); res.status != 200 {
		t.Errorf("GET with no-post: %d, want 200", res.status)
	}
	if res := f.do(t, "POST", "/live/v1/events", "{}", "Authorization", "Bearer no-post"); res.status != 403 {
		t.Errorf("POST with no-post: %d, want 403", res.status)
	}
	// Revoked: Deny for the whole stage.
	if res := f.do(t, "GET", "/live/v1/inbox", "", "Authorization", "Bearer revoked"); res.status != 403 {
		t.Errorf("revoked: %d, want 403", res.status)
	}
}

func TestRealTemplateAuthorizerContextStringified(t *testing.T) {
	f := realFixture(t, Options{})
	if res := f.do(t, "GET", "/live/v1/inbox", "", "Authorization", "Bearer typed-context"); res.status != 200 {
		t.Fatalf("%d %s", res.status, res.body)
	}
	want := map[string]any{
		"principalId": "typed", "tenantId": "t1", "n": "42", "big": "12345678901234567", "f": "1.5", "b": "true",
		"integrationLatency": int64(0),
	}
	got := f.api.Last(t).RequestContext.Authorizer
	// integrationLatency is a number: JSON decodes it as float64.
	if l, ok := got["integrationLatency"].(float64); ok && l == 0 {
		got["integrationLatency"] = int64(0)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("requestContext.authorizer = %#v, want %#v", got, want)
	}
}

func TestRealTemplateIntegrationFailures(t *testing.T) {
	f := realFixture(t, Options{})
	cases := []struct {
		name    string
		respond func(context.Context, events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error)
		status  int
	}{
		{"error", func(context.Context, events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error) {
			return events.APIGatewayProxyResponse{}, errors.New("boom")
		}, 502},
		{"panic", func(context.Context, events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error) {
			panic("handler bug")
		}, 502},
		{"no status", func(context.Context, events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error) {
			return events.APIGatewayProxyResponse{Body: "x"}, nil
		}, 502},
		{"too large a response", func(context.Context, events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error) {
			return events.APIGatewayProxyResponse{StatusCode: 200, Body: strings.Repeat("a", MaxInvokeResponseBytes)}, nil
		}, 502},
	}
	for _, c := range cases {
		f.api.respond = c.respond
		res := f.do(t, "GET", "/live/v1/inbox", "", "Authorization", "Bearer k")
		code, _, rid := res.errorBody(t)
		if res.status != c.status || code != "internal" || rid != res.header.Get("x-amzn-RequestId") {
			t.Errorf("%s: %d %s, want %d and DEFAULT_5XX's internal error with the request id", c.name, res.status, res.body, c.status)
		}
	}
	// A response just under the limit passes.
	f.api.respond = func(context.Context, events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error) {
		return events.APIGatewayProxyResponse{StatusCode: 200, Body: strings.Repeat("a", MaxInvokeResponseBytes-200)}, nil
	}
	if res := f.do(t, "GET", "/live/v1/inbox", "", "Authorization", "Bearer k"); res.status != 200 || len(res.body) != MaxInvokeResponseBytes-200 {
		t.Errorf("a response under 6 MB: status %d, %d bytes", res.status, len(res.body))
	}
}

func TestRealTemplateRequestSizeLimits(t *testing.T) {
	f := realFixture(t, Options{})
	// A Content-Length of 1,000,000 bytes or more: the rate-limit web
	// ACL's BodyTooLarge rule answers 413 in the contract's shape, before
	// API Gateway (request id "web-acl"), for 11 MB and for 7 MB alike.
	for _, n := range []int{MaxRequestBytes + 1, 7 << 20, 1_000_000} {
		res := f.do(t, "POST", "/live/v1/events", strings.Repeat("a", n), "Authorization", "Bearer k")
		code, _, rid := res.errorBody(t)
		if res.status != 413 || code != "payload_too_large" || rid != "web-acl" || res.header.Get("X-Request-Id") != "web-acl" {
			t.Errorf("%d-byte body: %d %v %s, want WAF's 413 payload_too_large, request id web-acl", n, res.status, res.header, res.body)
		}
	}
	if f.auth.N() != 0 || len(f.api.Events()) != 0 {
		t.Error("a too large request reached a function")
	}
	// Without a Content-Length (chunked), WAF has nothing to compare:
	// over 10 MB API Gateway's REQUEST_TOO_LARGE answers; under 10 MB but
	// over Lambda's 6 MB the invocation fails (500), as in AWS.
	chunked := func(n int) response {
		req := httptest.NewRequest("POST", "/live/v1/events", io.MultiReader(strings.NewReader(strings.Repeat("a", n))))
		req.Header.Set("Authorization", "Bearer k")
		rec := httptest.NewRecorder()
		f.gw.ServeHTTP(rec, req)
		return response{status: rec.Code, header: rec.Header(), body: rec.Body.String()}
	}
	res := chunked(MaxRequestBytes + 1)
	code, _, rid := res.errorBody(t)
	if res.status != 413 || code != "payload_too_large" || rid == "" {
		t.Errorf("11 MB chunked body: %d %s, want the gateway's 413 payload_too_large", res.status, res.body)
	}
	res = chunked(7 << 20)
	code, _, _ = res.errorBody(t)
	if res.status != 500 || code != "internal" {
		t.Errorf("7 MB chunked body: %d %s, want 500 internal", res.status, res.body)
	}
	if len(f.api.Events()) != 0 {
		t.Error("the 7 MB event reached the handler")
	}
	// 999,998 bytes go through. The template declares application/json a
	// binary media type, so the body arrives base64-encoded, byte for
	// byte; another content type arrives as text.
	body := strings.Repeat("é", 499_999)
	if res := f.do(t, "POST", "/live/v1/events", body, "Authorization", "Bearer k", "Content-Type", "application/json"); res.status != 200 {
		t.Fatalf("1 MB body: %d", res.status)
	}
	ev := f.api.Last(t)
	if raw, err := base64.StdEncoding.DecodeString(ev.Body); err != nil || string(raw) != body || !ev.IsBase64Encoded {
		t.Errorf("1 MB JSON body: event body of %d bytes, base64 %v (%v); want the body base64-encoded", len(ev.Body), ev.IsBase64Encoded, err)
	}
	if res := f.do(t, "POST", "/live/v1/events", body, "Authorization", "Bearer k", "Content-Type", "text/plain"); res.status != 200 {
		t.Fatalf("1 MB text body: %d", res.status)
	}
	if ev := f.api.Last(t); ev.Body != body || ev.IsBase64Encoded {
		t.Errorf("1 MB text body: event body of %d bytes, base64 %v; want the text", len(ev.Body), ev.IsBase64Encoded)
	}
}

func TestRealTemplateBase64ResponseWithoutBinaryTypes(t *testing.T) {
	f := realFixture(t, Options{})
	f.api.respond = func(context.Context, events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error) {
		return events.APIGatewayProxyResponse{
			StatusCode: 201, IsBase64Encoded: true, Body: base64.StdEncoding.EncodeToString([]byte{0xff, 0x00}),
			Headers:           map[string]string{"Content-Type": "application/octet-stream", "X-One": "h"},
			MultiValueHeaders: map[string][]string{"X-Two": {"a", "b"}, "X-One": {"m"}, "Content-Length": {"2"}},
		}, nil
	}
	res := f.do(t, "GET", "/live/v1/inbox", "", "Authorization", "Bearer k", "Accept", "application/octet-stream")
	if res.status != 201 {
		t.Fatalf("status = %d", res.status)
	}
	// Accept matches no binary media type: API Gateway passes the base64
	// text on.
	if res.body != "/wA=" {
		t.Errorf("body = %q, want the base64 text", res.body)
	}
	if got := res.header.Values("X-Two"); !reflect.DeepEqual(got, []string{"a", "b"}) {
		t.Errorf("X-Two = %q", got)
	}
	if got := res.header.Values("X-One"); !reflect.DeepEqual(got, []string{"m"}) {
		t.Errorf("X-One = %q, want multiValueHeaders to win over headers", got)
	}
}

func TestRealTemplateThrottling(t *testing.T) {
	f := realFixture(t, Options{})
	// Stage limits: burst 200, rate 100/s; the clock stands still.
	for i := 0; i < 200; i++ {
		if res := f.do(t, "GET", "/live/v1/inbox", "", "Authorization", "Bearer k"); res.status != 200 {
			t.Fatalf("request %d: %d, want 200 within the burst", i+1, res.status)
		}
	}
	res := f.do(t, "GET", "/live/v1/inbox", "", "Authorization", "Bearer k")
	code, _, _ := res.errorBody(t)
	if res.status != 429 || code != "throttled" || res.header.Get("Retry-After") != "1" {
		t.Errorf("request 201: %d %s %v, want 429 throttled with Retry-After", res.status, res.body, res.header)
	}
	f.clock.Advance(500 * time.Millisecond)
	ok := 0
	for i := 0; i < 60; i++ {
		if f.do(t, "GET", "/live/v1/inbox", "", "Authorization", "Bearer k").status == 200 {
			ok++
		}
	}
	if ok != 50 {
		t.Errorf("after 0.5 s at 100/s: %d requests passed, want 50", ok)
	}

	g := realFixture(t, Options{DisableThrottling: true})
	for i := 0; i < 300; i++ {
		if res := g.do(t, "GET", "/live/v1/inbox", "", "Authorization", "Bearer k"); res.status != 200 {
			t.Fatalf("DisableThrottling: request %d: %d", i+1, res.status)
		}
	}
}

func TestRealTemplateBasePathMapping(t *testing.T) {
	f := realFixture(t, Options{CustomDomain: &CustomDomain{DomainName: "api.example.com", BasePath: "triggers"}, APIID: "a1"})
	res := f.do(t, "GET", "/triggers/v1/events/e1", "", "Authorization", "Bearer k")
	if res.status != 200 {
		t.Fatalf("%d %s", res.status, res.body)
	}
	ev := f.api.Last(t)
	if ev.Path != "/triggers/v1/events/e1" || ev.Resource != "/v1/events/{event_id}" || ev.RequestContext.Path != "/triggers/v1/events/e1" {
		t.Errorf("path %q resource %q context path %q, want the base path in path only", ev.Path, ev.Resource, ev.RequestContext.Path)
	}
	if ev.RequestContext.DomainName != "api.example.com" || ev.RequestContext.Stage != "live" {
		t.Errorf("domainName %q stage %q", ev.RequestContext.DomainName, ev.RequestContext.Stage)
	}
	if got := f.auth.Calls()[0].MethodArn; got != "arn:aws:execute-api:us-east-1:123456789012:a1/live/GET/v1/events/e1" {
		t.Errorf("methodArn = %q: the stage, not the base path", got)
	}
	for _, target := range []string{"/live/v1/inbox", "/v1/inbox", "/trigger/v1/inbox"} {
		if res := f.do(t, "GET", target, "", "Authorization", "Bearer k"); res.status != http.StatusForbidden || res.body != `{"message":"Forbidden"}` {
			t.Errorf("GET %s through the mapping: %d %s, want Forbidden", target, res.status, res.body)
		}
	}

	// The "(none)" mapping: the API at the domain's root.
	g := realFixture(t, Options{CustomDomain: &CustomDomain{}})
	if res := g.do(t, "GET", "/v1/inbox", "", "Authorization", "Bearer k"); res.status != 200 {
		t.Fatalf("root mapping: %d %s", res.status, res.body)
	}
	if ev := g.api.Last(t); ev.Path != "/v1/inbox" || ev.RequestContext.DomainName != "example.com" {
		t.Errorf("root mapping: path %q domain %q", ev.Path, ev.RequestContext.DomainName)
	}
}

func TestRealTemplateRequestIDs(t *testing.T) {
	ids := []string{"rid-1", "rid-2", "rid-3"}
	n := 0
	f := realFixture(t, Options{NewRequestID: func() string { n++; return ids[n-1] }})
	res := f.do(t, "GET", "/live/v1/inbox", "", "Authorization", "Bearer k")
	if res.header.Get("x-amzn-RequestId") != "rid-1" || f.api.Last(t).RequestContext.RequestID != "rid-1" || f.auth.Calls()[0].RequestContext.RequestID != "rid-1" {
		t.Errorf("request 1: header %q, want rid-1 everywhere", res.header.Get("x-amzn-RequestId"))
	}
	res = f.do(t, "GET", "/live/nowhere", "")
	if _, _, rid := res.errorBody(t); rid != "rid-2" || res.header.Get("x-amzn-RequestId") != "rid-2" {
		t.Errorf("gateway response: request_id %q header %q, want rid-2", rid, res.header.Get("x-amzn-RequestId"))
	}
}

// A function with provisioned concurrency is invoked through its alias
// (the integration's URI names the alias, not the function): the gateway
// runs the aliased function, as Lambda does.
func TestAliasedFunctionServes(t *testing.T) {
	const tmpl = "../../../assertions/testdata/test-function-options.json"
	var proxied []string
	gw, err := New(readFile(t, tmpl), Options{
		Authorizer: func(fn Function) (AuthorizerFunc, error) {
			return func(context.Context, events.APIGatewayCustomAuthorizerRequestTypeRequest) (events.APIGatewayCustomAuthorizerResponse, error) {
				return events.APIGatewayCustomAuthorizerResponse{}, errors.New("unused")
			}, nil
		},
		Proxy: func(fn Function) (ProxyFunc, error) {
			proxied = append(proxied, fn.LogicalID)
			return func(context.Context, events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error) {
				return events.APIGatewayProxyResponse{StatusCode: http.StatusTeapot}, nil
			}, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{realAPIFn}; !reflect.DeepEqual(proxied, want) {
		t.Errorf("proxy functions = %v, want %v (the alias resolved to its function)", proxied, want)
	}
	var routes int
	for _, r := range gw.Routes() {
		if r.Integration == "AWS_PROXY" {
			routes++
			if r.Function != realAPIFn {
				t.Errorf("%s %s invokes %q, want %q", r.Method, r.Path, r.Function, realAPIFn)
			}
		}
	}
	if routes == 0 {
		t.Fatal("no proxy route")
	}
}
