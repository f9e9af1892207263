package localgw

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

const edgeTemplate = "testdata/edge.json"

func edgeFixture(t *testing.T, opts Options) *fixture {
	t.Helper()
	return newFixture(t, readFile(t, edgeTemplate), opts)
}

// editTemplate applies edit to the decoded edge template.
func editTemplate(t *testing.T, edit func(res map[string]any)) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(readFile(t, edgeTemplate), &m); err != nil {
		t.Fatal(err)
	}
	edit(m["Resources"].(map[string]any))
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestEdgeRouting(t *testing.T) {
	f := edgeFixture(t, Options{})
	cases := []struct {
		method, target string
		status         int
		resource       string
		params         map[string]string
	}{
		{"GET", "/dev", 200, "/", nil},
		{"GET", "/dev/", 200, "/", nil},
		{"GET", "/dev/items/special", 200, "/items/special", nil},                                  // literal before {id}
		{"POST", "/dev/items/special", 403, "", nil},                                               // no POST there: no fallback to {id}
		{"PUT", "/dev/items/42?tenant=x", 200, "/items/{id}", map[string]string{"id": "42"}},       // ANY
		{"DELETE", "/dev/items/42", 200, "/items/{id}", map[string]string{"id": "42"}},             // DELETE (NONE) before ANY (CUSTOM)
		{"GET", "/dev/items/a%2Fb?tenant=x", 200, "/items/{id}", map[string]string{"id": "a%2Fb"}}, // as sent
		{"GET", "/dev/files/a/b/c.txt", 200, "/files/{path+}", map[string]string{"path": "a/b/c.txt"}},
		{"PATCH", "/dev/files/x", 200, "/files/{path+}", map[string]string{"path": "x"}},
		{"GET", "/dev/files", 403, "", nil}, // a greedy segment needs at least one segment
		{"GET", "/dev/items", 403, "", nil}, // OPTIONS only
		{"GET", "/dev/nowhere", 403, "", nil},
		{"GET", "/dev/items/42/more", 403, "", nil},
	}
	for _, c := range cases {
		before := len(f.api.Events())
		res := f.do(t, c.method, c.target, "", "Authorization", "Bearer k")
		if c.resource == "" {
			if res.status != c.status || res.body != `{"message":"Missing Authentication Token"}` || len(f.api.Events()) != before {
				t.Errorf("%s %s: %d %s, want AWS's default MISSING_AUTHENTICATION_TOKEN", c.method, c.target, res.status, res.body)
			}
			continue
		}
		if res.status != c.status || len(f.api.Events()) == before {
			t.Errorf("%s %s: %d %s, want %d from the handler", c.method, c.target, res.status, res.body, c.status)
			continue
		}
		ev := f.api.Last(t)
		if ev.Resource != c.resource || !reflect.DeepEqual(ev.PathParameters, c.params) || ev.HTTPMethod != c.method {
			t.Errorf("%s %s: resource %q params %v method %q, want %q %v", c.method, c.target, ev.Resource, ev.PathParameters, ev.HTTPMethod, c.resource, c.params)
		}
		if ev.StageVariables["color"] != "blue" {
			t.Errorf("%s %s: stageVariables = %v", c.method, c.target, ev.StageVariables)
		}
	}
}

func TestEdgeMockOptions(t *testing.T) {
	f := edgeFixture(t, Options{})
	res := f.do(t, "OPTIONS", "/dev/items", "", "Origin", "https://app.example.com")
	if res.status != 204 || res.header.Get("Access-Control-Allow-Origin") != "https://app.example.com" ||
		res.header.Get("Access-Control-Allow-Methods") != "OPTIONS,GET,POST" || res.header.Get("x-amzn-RequestId") == "" {
		t.Errorf("OPTIONS /items: %d %v", res.status, res.header)
	}
	if len(f.api.Events()) != 0 || f.auth.N() != 0 {
		t.Error("a MOCK method invoked a function")
	}
}

func TestEdgeDefaultGatewayResponses(t *testing.T) {
	f := edgeFixture(t, Options{})
	cases := []struct {
		name   string
		do     func() response
		status int
		body   string
		errTyp string
	}{
		{"no identity source", func() response { return f.do(t, "GET", "/dev/items/1?tenant=t", "") }, 401, `{"message":"Unauthorized"}`, "UnauthorizedException"},
		{"Unauthorized", func() response { return f.do(t, "GET", "/dev/items/1?tenant=t", "", "Authorization", "Bearer bad") }, 401, `{"message":"Unauthorized"}`, "UnauthorizedException"},
		{"explicit deny", func() response { return f.do(t, "GET", "/dev/items/1?tenant=t", "", "Authorization", "Bearer revoked") }, 403, `{"message":"User is not authorized to access this resource with an explicit deny"}`, "AccessDeniedException"},
		{"no allow", func() response {
			return f.do(t, "GET", "/dev/items/1?tenant=t", "", "Authorization", "Bearer inbox-only")
		}, 403, `{"message":"User is not authorized to access this resource"}`, "AccessDeniedException"},
		{"authorizer error", func() response { return f.do(t, "GET", "/dev/items/1?tenant=t", "", "Authorization", "Bearer boom") }, 500, `{"message":null}`, "AuthorizerConfigurationException"},
		{"missing parameters", func() response { return f.do(t, "GET", "/dev/search", "") }, 400, `{"message":"Missing required request parameters: [X-Trace, q]"}`, "BadRequestException"},
		{"missing route", func() response { return f.do(t, "GET", "/dev/nope", "") }, 403, `{"message":"Missing Authentication Token"}`, "MissingAuthenticationTokenException"},
		{"too large", func() response { return f.do(t, "POST", "/dev/files/x", strings.Repeat("x", MaxRequestBytes+1)) }, 413, `{"message":"Request Too Long"}`, "RequestTooLargeException"},
	}
	for _, c := range cases {
		res := c.do()
		if res.status != c.status || res.body != c.body || res.header.Get("x-amzn-ErrorType") != c.errTyp || res.header.Get("Content-Type") != "application/json" {
			t.Errorf("%s: %d %s %v, want %d %s %s", c.name, res.status, res.body, res.header, c.status, c.body, c.errTyp)
		}
	}
	// A function error: 502 "Internal server error" (Lambda's docs), not
	// INTEGRATION_FAILURE's default 504.
	f.api.respond = func(context.Context, events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error) {
		return events.APIGatewayProxyResponse{}, fmt.Errorf("boom")
	}
	if res := f.do(t, "GET", "/dev", ""); res.status != 502 || res.body != `{"message":"Internal server error"}` {
		t.Errorf("function error: %d %s", res.status, res.body)
	}
}

func TestEdgeCustomizedGatewayResponses(t *testing.T) {
	tmpl := editTemplate(t, func(res map[string]any) {
		gr := func(typ, status string, headers map[string]any, body string) map[string]any {
			p := map[string]any{"RestApiId": map[string]any{"Ref": "Api"}, "ResponseType": typ, "ResponseParameters": headers,
				"ResponseTemplates": map[string]any{"application/json": body}}
			if status != "" {
				p["StatusCode"] = status
			}
			return map[string]any{"Type": "AWS::ApiGateway::GatewayResponse", "Properties": p}
		}
		res["D4"] = gr("DEFAULT_4XX", "", map[string]any{"gatewayresponse.header.X-Echo": "method.request.header.X-In"},
			`{"type":"$context.error.responseType","msg":"$context.error.message","id":"${context.requestId}","stage":"$context.stage","color":"$stageVariables.color","quoted":$context.error.messageString,"v":"$context.error.validationErrorString"}`)
		res["D5"] = gr("DEFAULT_5XX", "503", map[string]any{"gatewayresponse.header.Retry-After": "'2'"}, `{"five":"$context.error.responseType"}`)
		res["Deny"] = gr("ACCESS_DENIED", "", map[string]any{"gatewayresponse.header.Content-Type": "'application/problem+json'"}, `{"denied":"$context.authorizer.principalId"}`)
	})
	f := newFixture(t, tmpl, Options{NewRequestID: func() string { return "req-7" }})

	res := f.do(t, "GET", "/dev/search?q=1", "", "X-In", "echoed")
	var got map[string]any
	if err := json.Unmarshal([]byte(res.body), &got); err != nil {
		t.Fatalf("body %q: %v", res.body, err)
	}
	want := map[string]any{"type": "BAD_REQUEST_PARAMETERS", "msg": "Missing required request parameters: [X-Trace]", "id": "req-7",
		"stage": "dev", "color": "blue", "quoted": "Missing required request parameters: [X-Trace]", "v": "Missing required request parameters: [X-Trace]"}
	if res.status != 400 || !reflect.DeepEqual(got, want) || res.header.Get("X-Echo") != "echoed" {
		t.Errorf("DEFAULT_4XX for BAD_REQUEST_PARAMETERS: %d %v %v, want 400 %v", res.status, got, res.header, want)
	}
	// DEFAULT_5XX's status code applies to every 5XX type not setting one.
	res = f.do(t, "GET", "/dev/items/1?tenant=t", "", "Authorization", "Bearer boom")
	if res.status != 503 || res.body != `{"five":"AUTHORIZER_CONFIGURATION_ERROR"}` || res.header.Get("Retry-After") != "2" {
		t.Errorf("AUTHORIZER_CONFIGURATION_ERROR through DEFAULT_5XX: %d %s %v", res.status, res.body, res.header)
	}
	// A customized type: its own template and headers, its default status.
	res = f.do(t, "GET", "/dev/items/1?tenant=t", "", "Authorization", "Bearer revoked")
	if res.status != 403 || res.body != `{"denied":""}` || res.header.Get("Content-Type") != "application/problem+json" || res.header.Get("X-Echo") != "" {
		t.Errorf("ACCESS_DENIED: %d %s %v", res.status, res.body, res.header)
	}
}

func TestEdgeRequestValidation(t *testing.T) {
	f := edgeFixture(t, Options{})
	cases := []struct {
		target  string
		headers []string
		status  int
	}{
		{"/dev/search?q=go", []string{"X-Trace", "t"}, 200},
		{"/dev/search?q=", []string{"X-Trace", "t"}, 200}, // present, if empty
		{"/dev/search", []string{"X-Trace", "t"}, 400},
		{"/dev/search?q=go", nil, 400},
		{"/dev/search?page=2", nil, 400},
	}
	for _, c := range cases {
		if res := f.do(t, "GET", c.target, "", c.headers...); res.status != c.status {
			t.Errorf("GET %s %q: %d %s, want %d", c.target, c.headers, res.status, res.body, c.status)
		}
	}
	// A validator that does not validate parameters lets them be absent.
	if res := f.do(t, "POST", "/dev/search", "{}"); res.status != 200 {
		t.Errorf("POST /search without q: %d, want 200 (ValidateRequestParameters false)", res.status)
	}
}

func TestEdgeBinaryMediaTypes(t *testing.T) {
	f := edgeFixture(t, Options{})
	png := []byte{0x89, 'P', 'N', 'G', 0xff, 0x00}
	f.api.respond = func(_ context.Context, ev events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error) {
		return events.APIGatewayProxyResponse{StatusCode: 200, IsBase64Encoded: true, Body: ev.Body,
			Headers: map[string]string{"Content-Type": "image/png"}}, nil
	}
	req := httptest.NewRequest("POST", "/dev/files/a.png", strings.NewReader(string(png)))
	req.Header.Set("Content-Type", "image/png")
	req.Header.Set("Accept", "image/png")
	rec := httptest.NewRecorder()
	f.gw.ServeHTTP(rec, req)
	ev := f.api.Last(t)
	if !ev.IsBase64Encoded || ev.Body != base64.StdEncoding.EncodeToString(png) {
		t.Errorf("binary request: body %q base64 %v, want base64 of the bytes", ev.Body, ev.IsBase64Encoded)
	}
	if rec.Code != 200 || rec.Body.String() != string(png) {
		t.Errorf("binary response: %d %q, want the decoded bytes", rec.Code, rec.Body.Bytes())
	}
	// A text type is passed as text.
	f.api.respond = nil
	f.do(t, "POST", "/dev/files/a.txt", "héllo", "Content-Type", "text/plain")
	if ev := f.api.Last(t); ev.IsBase64Encoded || ev.Body != "héllo" {
		t.Errorf("text request: body %q base64 %v", ev.Body, ev.IsBase64Encoded)
	}
}

func TestEdgeHeadersAndQuery(t *testing.T) {
	f := edgeFixture(t, Options{})
	f.do(t, "GET", "/dev/files/x?a=1&a=2&b=x+y%21&flag&bad=%zz", "", "X-Multi", "one", "X-Multi", "two", "X-Forwarded-For", "203.0.113.9")
	ev := f.api.Last(t)
	if !reflect.DeepEqual(ev.MultiValueQueryStringParameters, map[string][]string{"a": {"1", "2"}, "b": {"x y!"}, "flag": {""}, "bad": {"%zz"}}) {
		t.Errorf("multiValueQueryStringParameters = %v", ev.MultiValueQueryStringParameters)
	}
	if !reflect.DeepEqual(ev.QueryStringParameters, map[string]string{"a": "2", "b": "x y!", "flag": "", "bad": "%zz"}) {
		t.Errorf("queryStringParameters = %v", ev.QueryStringParameters)
	}
	if ev.Headers["X-Multi"] != "two" || !reflect.DeepEqual(ev.MultiValueHeaders["X-Multi"], []string{"one", "two"}) {
		t.Errorf("X-Multi: %q / %q", ev.Headers["X-Multi"], ev.MultiValueHeaders["X-Multi"])
	}
	if ev.Headers["X-Forwarded-For"] != "203.0.113.9, 192.0.2.1" || ev.Headers["Host"] != "example.com" {
		t.Errorf("X-Forwarded-For %q Host %q", ev.Headers["X-Forwarded-For"], ev.Headers["Host"])
	}
	f.do(t, "GET", "/dev/files/x", "")
	if ev := f.api.Last(t); ev.QueryStringParameters != nil || ev.MultiValueQueryStringParameters != nil {
		t.Errorf("no query: %v %v, want null", ev.QueryStringParameters, ev.MultiValueQueryStringParameters)
	}
}

func TestEdgeLambdaContextAndTimeout(t *testing.T) {
	var deadline time.Duration
	f := edgeFixture(t, Options{})
	release := make(chan struct{})
	f.api.respond = func(ctx context.Context, ev events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error) {
		if d, ok := ctx.Deadline(); ok {
			deadline = time.Until(d)
		}
		if ev.Resource == "/slow" {
			<-ctx.Done()
			<-release // still running when the gateway answers
		}
		return events.APIGatewayProxyResponse{StatusCode: 200}, nil
	}
	f.do(t, "GET", "/dev", "")
	// The function's Timeout (10 s), less the time the handler took to
	// start; not Lambda's default, 3 s.
	if deadline <= 5*time.Second || deadline > 10*time.Second {
		t.Errorf("handler deadline in %s, want the function's Timeout, 10 s", deadline)
	}
	// The handler returns only after the answer, so a 502 here is the
	// timeout's, not the handler's late 200 or a wait for it.
	res := f.do(t, "GET", "/dev/slow", "")
	close(release)
	if res.status != 502 {
		t.Errorf("a function past its 1 s timeout, its handler still running: %d, want 502", res.status)
	}
}

func TestEdgeAuthorizerKeyedByAllSources(t *testing.T) {
	f := edgeFixture(t, Options{})
	get := func(token, tenant string) int {
		return f.do(t, "GET", "/dev/items/1?tenant="+tenant, "", "Authorization", "Bearer "+token).status
	}
	for _, c := range []struct {
		token, tenant string
		calls         int
	}{
		{"k1", "a", 1},
		{"k1", "a", 1},
		{"k1", "b", 2}, // only the second source differs
		{"k2", "a", 3}, // only the first differs
		{"k1", "b", 3},
	} {
		if s := get(c.token, c.tenant); s != 200 {
			t.Fatalf("%s/%s: %d", c.token, c.tenant, s)
		}
		if n := f.auth.N(); n != c.calls {
			t.Errorf("after %s/%s: %d authorizer calls, want %d", c.token, c.tenant, n, c.calls)
		}
	}
	// TTL 60 s.
	f.clock.Advance(59 * time.Second)
	get("k1", "a")
	if n := f.auth.N(); n != 3 {
		t.Errorf("at 59 s: %d calls, want 3", n)
	}
	f.clock.Advance(time.Second)
	get("k1", "a")
	if n := f.auth.N(); n != 4 {
		t.Errorf("at 60 s: %d calls, want 4", n)
	}
}

// TestIdentitySourceProperty sends random combinations of the two identity
// sources (missing, empty, repeated, case variants) and checks against a
// model: a request with a source missing or empty is a 401 without a call;
// otherwise the authorizer is called exactly when the values of the
// sources form a key not seen within the TTL, and it is called with
// exactly those values.
func TestIdentitySourceProperty(t *testing.T) {
	f := edgeFixture(t, Options{})
	rng := rand.New(rand.NewPCG(1, 2))
	tokens := []string{"", "Bearer a", "Bearer b", "bearer a", "Bearer a "}
	tenants := []string{"", "x", "y", "X"}
	seen := map[string]bool{}
	for i := 0; i < 400; i++ {
		var auths, tenantVals []string
		var headers []string
		q := ""
		for n := rng.IntN(3); n > 0; n-- {
			v := tokens[rng.IntN(len(tokens))]
			auths = append(auths, v)
			name := []string{"Authorization", "authorization", "AUTHORIZATION"}[rng.IntN(3)]
			headers = append(headers, name, v)
		}
		for n := rng.IntN(3); n > 0; n-- {
			v := tenants[rng.IntN(len(tenants))]
			tenantVals = append(tenantVals, v)
			if q != "" {
				q += "&"
			}
			q += "tenant=" + v
		}
		if rng.IntN(5) == 0 {
			headers = append(headers, "X-Other", fmt.Sprint(i)) // not a source: never in the key
		}
		before := f.auth.N()
		res := f.do(t, "GET", "/dev/items/1?"+q, "", headers...)
		calls := f.auth.Calls()[before:]

		present := func(vs []string) bool {
			for _, v := range vs {
				if v != "" {
					return true
				}
			}
			return false
		}
		if !present(auths) || !present(tenantVals) {
			if res.status != 401 || len(calls) != 0 {
				t.Fatalf("request %d (auth %q tenant %q): %d with %d calls, want 401 without a call", i, auths, tenantVals, res.status, len(calls))
			}
			continue
		}
		key := fmt.Sprintf("%q|%q", auths, tenantVals)
		wantCalls := 0
		if !seen[key] {
			wantCalls = 1
		}
		if len(calls) != wantCalls {
			t.Fatalf("request %d (key %s, seen %v): %d authorizer calls, want %d", i, key, seen[key], len(calls), wantCalls)
		}
		seen[key] = true
		if len(calls) == 1 {
			ev := calls[0]
			if got := ev.MultiValueHeaders["Authorization"]; !reflect.DeepEqual(got, auths) {
				t.Fatalf("request %d: authorizer saw Authorization %q, the key has %q", i, got, auths)
			}
			if got := ev.MultiValueQueryStringParameters["tenant"]; !reflect.DeepEqual(got, tenantVals) {
				t.Fatalf("request %d: authorizer saw tenant %q, the key has %q", i, got, tenantVals)
			}
			if ev.Headers["Authorization"] != auths[len(auths)-1] || ev.QueryStringParameters["tenant"] != tenantVals[len(tenantVals)-1] {
				t.Fatalf("request %d: single-value maps %q %q, want the last values", i, ev.Headers["Authorization"], ev.QueryStringParameters["tenant"])
			}
		}
		if res.status != 200 {
			t.Fatalf("request %d: %d %s", i, res.status, res.body)
		}
	}
	if len(seen) < 20 {
		t.Errorf("only %d distinct keys: the generator is too narrow", len(seen))
	}
}

func TestNewRejects(t *testing.T) {
	edge := readFile(t, edgeTemplate)
	noop := func(Function) (ProxyFunc, error) {
		return func(context.Context, events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error) {
			return events.APIGatewayProxyResponse{}, nil
		}, nil
	}
	auth := func(Function) (AuthorizerFunc, error) { return (&fakeAuth{}).Handle, nil }
	cases := []struct {
		name     string
		template []byte
		opts     Options
		want     string
	}{
		{"not JSON", []byte("{"), Options{}, "not JSON"},
		{"no proxy resolver", edge, Options{Authorizer: auth}, "set Options.Proxy"},
		{"no authorizer resolver", edge, Options{Proxy: noop}, "set Options.Authorizer"},
		{"nil handler", edge, Options{Authorizer: auth, Proxy: func(Function) (ProxyFunc, error) { return nil, nil }}, "returned no handler"},
		{"resolver error", edge, Options{Authorizer: auth, Proxy: func(fn Function) (ProxyFunc, error) { return nil, fmt.Errorf("no binary for %s", fn.LogicalID) }}, "no binary for ApiFn"},
		{"unknown stage", edge, Options{Authorizer: auth, Proxy: noop, Stage: "prod"}, `no stage "prod"`},
		{"IAM auth", editTemplate(t, func(r map[string]any) {
			r["RootGet"].(map[string]any)["Properties"].(map[string]any)["AuthorizationType"] = "AWS_IAM"
		}), Options{Authorizer: auth, Proxy: noop}, "AWS_IAM is not emulated"},
		{"HTTP integration", editTemplate(t, func(r map[string]any) {
			r["RootGet"].(map[string]any)["Properties"].(map[string]any)["Integration"] = map[string]any{"Type": "HTTP_PROXY", "Uri": "https://example.com"}
		}), Options{Authorizer: auth, Proxy: noop}, "HTTP_PROXY"},
		{"TOKEN authorizer", editTemplate(t, func(r map[string]any) {
			r["Auth"].(map[string]any)["Properties"].(map[string]any)["Type"] = "TOKEN"
		}), Options{Authorizer: auth, Proxy: noop}, "only REQUEST"},
		{"cache without sources", editTemplate(t, func(r map[string]any) {
			delete(r["Auth"].(map[string]any)["Properties"].(map[string]any), "IdentitySource")
		}), Options{Authorizer: auth, Proxy: noop}, "no IdentitySource"},
		{"bad identity source", editTemplate(t, func(r map[string]any) {
			r["Auth"].(map[string]any)["Properties"].(map[string]any)["IdentitySource"] = "method.request.body.x"
		}), Options{Authorizer: auth, Proxy: noop}, "method.request.body.x"},
		{"no resources", []byte(`{"Resources":{}}`), Options{Authorizer: auth, Proxy: noop}, "the template has no Resources"},
		{"no rest api", editTemplate(t, func(r map[string]any) {
			delete(r, "Api")
		}), Options{Authorizer: auth, Proxy: noop}, "no AWS::ApiGateway::RestApi"},
		{"two rest apis", editTemplate(t, func(r map[string]any) {
			r["Api2"] = r["Api"]
		}), Options{Authorizer: auth, Proxy: noop}, "several AWS::ApiGateway::RestApi (Api, Api2)"},
		{"RestAPI option not an API", edge, Options{Authorizer: auth, Proxy: noop, RestAPI: "Stage"}, `Options.RestAPI "Stage" is not an AWS::ApiGateway::RestApi`},
		{"OpenAPI body", editTemplate(t, func(r map[string]any) {
			r["Api"].(map[string]any)["Properties"].(map[string]any)["Body"] = map[string]any{}
		}), Options{Authorizer: auth, Proxy: noop}, "defined by an OpenAPI Body"},
		{"OpenAPI body in S3", editTemplate(t, func(r map[string]any) {
			r["Api"].(map[string]any)["Properties"].(map[string]any)["BodyS3Location"] = map[string]any{}
		}), Options{Authorizer: auth, Proxy: noop}, "defined by an OpenAPI BodyS3Location"},
		{"resource without path part", editTemplate(t, func(r map[string]any) {
			r["Items"].(map[string]any)["Properties"].(map[string]any)["PathPart"] = map[string]any{"Ref": "x"}
		}), Options{Authorizer: auth, Proxy: noop}, "resource Items has no literal PathPart"},
		{"resource with a bad parent", editTemplate(t, func(r map[string]any) {
			r["Items"].(map[string]any)["Properties"].(map[string]any)["ParentId"] = "root"
		}), Options{Authorizer: auth, Proxy: noop}, "resource Items: ParentId: root is neither the API's RootResourceId nor a Ref"},
		{"two greedy children", editTemplate(t, func(r map[string]any) {
			p := map[string]any{"RestApiId": map[string]any{"Ref": "Api"}, "ParentId": map[string]any{"Ref": "Files"}, "PathPart": "{other+}"}
			r["FilesProxy2"] = map[string]any{"Type": "AWS::ApiGateway::Resource", "Properties": p}
		}), Options{Authorizer: auth, Proxy: noop}, "greedy children of Files"},
		{"resource cycle", editTemplate(t, func(r map[string]any) {
			r["Items"].(map[string]any)["Properties"].(map[string]any)["ParentId"] = map[string]any{"Ref": "Item"}
		}), Options{Authorizer: auth, Proxy: noop}, "is not reachable from the API's root"},
		{"two methods on one resource", editTemplate(t, func(r map[string]any) {
			r["RootGet2"] = r["RootGet"]
		}), Options{Authorizer: auth, Proxy: noop}, "are both GET /"},
		{"method without HttpMethod", editTemplate(t, func(r map[string]any) {
			delete(r["RootGet"].(map[string]any)["Properties"].(map[string]any), "HttpMethod")
		}), Options{Authorizer: auth, Proxy: noop}, "method RootGet has no HttpMethod"},
		{"method on no resource", editTemplate(t, func(r map[string]any) {
			r["RootGet"].(map[string]any)["Properties"].(map[string]any)["ResourceId"] = map[string]any{"Ref": "Nope"}
		}), Options{Authorizer: auth, Proxy: noop}, "method RootGet: ResourceId:"},
		{"unknown authorizer", editTemplate(t, func(r map[string]any) {
			r["ItemAny"].(map[string]any)["Properties"].(map[string]any)["AuthorizerId"] = map[string]any{"Ref": "Nope"}
		}), Options{Authorizer: auth, Proxy: noop}, "method ItemAny: AuthorizerId"},
		{"API keys", editTemplate(t, func(r map[string]any) {
			r["RootGet"].(map[string]any)["Properties"].(map[string]any)["ApiKeyRequired"] = true
		}), Options{Authorizer: auth, Proxy: noop}, "ApiKeyRequired (usage plans) is not emulated"},
		{"unknown validator", editTemplate(t, func(r map[string]any) {
			r["SearchGet"].(map[string]any)["Properties"].(map[string]any)["RequestValidatorId"] = map[string]any{"Ref": "Nope"}
		}), Options{Authorizer: auth, Proxy: noop}, "method SearchGet: RequestValidatorId"},
		{"bad request parameter", editTemplate(t, func(r map[string]any) {
			r["SearchGet"].(map[string]any)["Properties"].(map[string]any)["RequestParameters"] = map[string]any{"method.request.body.q": true}
		}), Options{Authorizer: auth, Proxy: noop}, `RequestParameters "method.request.body.q"`},
		{"authorizer TTL out of range", editTemplate(t, func(r map[string]any) {
			r["Auth"].(map[string]any)["Properties"].(map[string]any)["AuthorizerResultTtlInSeconds"] = 3601
		}), Options{Authorizer: auth, Proxy: noop}, "AuthorizerResultTtlInSeconds 3601: want a whole number of seconds from 0 to 3600"},
		{"authorizer TTL negative", editTemplate(t, func(r map[string]any) {
			r["Auth"].(map[string]any)["Properties"].(map[string]any)["AuthorizerResultTtlInSeconds"] = -1
		}), Options{Authorizer: auth, Proxy: noop}, "AuthorizerResultTtlInSeconds -1"},
		{"authorizer TTL fractional", editTemplate(t, func(r map[string]any) {
			r["Auth"].(map[string]any)["Properties"].(map[string]any)["AuthorizerResultTtlInSeconds"] = 1.5
		}), Options{Authorizer: auth, Proxy: noop}, "AuthorizerResultTtlInSeconds 1.5"},
		{"gateway response without type", editTemplate(t, func(r map[string]any) {
			r["Resp"] = map[string]any{"Type": "AWS::ApiGateway::GatewayResponse", "Properties": map[string]any{"RestApiId": map[string]any{"Ref": "Api"}}}
		}), Options{Authorizer: auth, Proxy: noop}, "gateway response Resp has no ResponseType"},
		{"gateway response bad status", editTemplate(t, func(r map[string]any) {
			r["Resp"] = map[string]any{"Type": "AWS::ApiGateway::GatewayResponse", "Properties": map[string]any{"RestApiId": map[string]any{"Ref": "Api"}, "ResponseType": "DEFAULT_4XX", "StatusCode": "99"}}
		}), Options{Authorizer: auth, Proxy: noop}, `gateway response Resp: StatusCode: "99" is not an HTTP status code`},
		{"gateway response status 600", editTemplate(t, func(r map[string]any) {
			r["Resp"] = map[string]any{"Type": "AWS::ApiGateway::GatewayResponse", "Properties": map[string]any{"RestApiId": map[string]any{"Ref": "Api"}, "ResponseType": "DEFAULT_4XX", "StatusCode": "600"}}
		}), Options{Authorizer: auth, Proxy: noop}, `"600" is not an HTTP status code`},
		{"gateway response bad header", editTemplate(t, func(r map[string]any) {
			r["Resp"] = map[string]any{"Type": "AWS::ApiGateway::GatewayResponse", "Properties": map[string]any{"RestApiId": map[string]any{"Ref": "Api"}, "ResponseType": "DEFAULT_4XX",
				"ResponseParameters": map[string]any{"gatewayresponse.header.X": 1}}}
		}), Options{Authorizer: auth, Proxy: noop}, `ResponseParameters "gatewayresponse.header.X"`},
		{"no stage", editTemplate(t, func(r map[string]any) {
			delete(r, "Stage")
		}), Options{Authorizer: auth, Proxy: noop}, "Api has no stage"},
		{"two stages", editTemplate(t, func(r map[string]any) {
			r["Stage2"] = map[string]any{"Type": "AWS::ApiGateway::Stage", "Properties": map[string]any{"RestApiId": map[string]any{"Ref": "Api"}, "StageName": "prod"}}
		}), Options{Authorizer: auth, Proxy: noop}, "Api has several stages"},
		{"stage without literal name", editTemplate(t, func(r map[string]any) {
			r["Stage"].(map[string]any)["Properties"].(map[string]any)["StageName"] = map[string]any{"Ref": "x"}
		}), Options{Authorizer: auth, Proxy: noop}, "a stage of Api has no literal StageName"},
		{"uri without function", editTemplate(t, func(r map[string]any) {
			r["RootGet"].(map[string]any)["Properties"].(map[string]any)["Integration"].(map[string]any)["Uri"] = "arn:aws:apigateway:us-east-1:lambda:path/2015-03-31/functions/arn:aws:lambda:us-east-1:1:function:x/invocations"
		}), Options{Authorizer: auth, Proxy: noop}, "no AWS::Lambda::Function"},
	}
	for _, c := range cases {
		_, err := New(c.template, c.opts)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: New() error = %v, want one containing %q", c.name, err, c.want)
		}
	}
	// Without caching, IdentitySource may be absent: nothing is checked.
	tmpl := editTemplate(t, func(r map[string]any) {
		p := r["Auth"].(map[string]any)["Properties"].(map[string]any)
		delete(p, "IdentitySource")
		p["AuthorizerResultTtlInSeconds"] = 0
	})
	f := newFixture(t, tmpl, Options{})
	for i := 0; i < 2; i++ {
		if res := f.do(t, "GET", "/dev/items/1", ""); res.status != 200 {
			t.Errorf("no identity source, no cache: %d %s, want the authorizer called (it allows)", res.status, res.body)
		}
	}
	if n := f.auth.N(); n != 2 {
		t.Errorf("authorizer calls without a cache = %d, want 2", n)
	}
}
