package localgw

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// realTemplate is the synthesized API stack, kept identical to the real
// synth output by the assertions golden test.
const realTemplate = "../../../assertions/testdata/triggers-dev-api.json"

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// clock is an injectable time source.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock() *clock { return &clock{now: time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// fakeAuth is a REQUEST authorizer that decides by the bearer token and
// records every call.
type fakeAuth struct {
	mu    sync.Mutex
	calls []events.APIGatewayCustomAuthorizerRequestTypeRequest
}

func (f *fakeAuth) Calls() []events.APIGatewayCustomAuthorizerRequestTypeRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]events.APIGatewayCustomAuthorizerRequestTypeRequest(nil), f.calls...)
}

func (f *fakeAuth) N() int { return len(f.Calls()) }

// stageArn turns a method ARN into its stage's arn .../stage/*/*.
func stageArn(methodArn string, rest string) string {
	parts := strings.SplitN(methodArn, "/", 3)
	return parts[0] + "/" + parts[1] + "/" + rest
}

func allowPolicy(principal string, resources ...string) events.APIGatewayCustomAuthorizerResponse {
	return events.APIGatewayCustomAuthorizerResponse{
		PrincipalID: principal,
		PolicyDocument: events.APIGatewayCustomAuthorizerPolicy{Version: "2012-10-17", Statement: []events.IAMPolicyStatement{
			{Action: []string{"execute-api:Invoke"}, Effect: "Allow", Resource: resources},
		}},
	}
}

func (f *fakeAuth) Handle(ctx context.Context, ev events.APIGatewayCustomAuthorizerRequestTypeRequest) (events.APIGatewayCustomAuthorizerResponse, error) {
	f.mu.Lock()
	f.calls = append(f.calls, ev)
	f.mu.Unlock()
	token := strings.TrimPrefix(ev.Headers["Authorization"], "Bearer ")
	switch token {
	case "bad":
		return events.APIGatewayCustomAuthorizerResponse{}, errors.New("Unauthorized")
	case "boom":
		return events.APIGatewayCustomAuthorizerResponse{}, errors.New("dynamodb: connection refused")
	case "panic":
		panic("authorizer bug")
	case "malformed":
		return events.APIGatewayCustomAuthorizerResponse{PrincipalID: "x"}, nil
	case "revoked":
		r := allowPolicy("revoked", stageArn(ev.MethodArn, "*/*"))
		r.PolicyDocument.Statement[0].Effect = "Deny"
		return r, nil
	case "inbox-only":
		return allowPolicy("inbox-only", stageArn(ev.MethodArn, "GET/v1/inbox")), nil
	case "no-post":
		r := allowPolicy("no-post", stageArn(ev.MethodArn, "*"))
		r.PolicyDocument.Statement = append(r.PolicyDocument.Statement, events.IAMPolicyStatement{
			Action: []string{"execute-api:*"}, Effect: "Deny", Resource: []string{stageArn(ev.MethodArn, "POST/*")},
		})
		return r, nil
	case "typed-context":
		r := allowPolicy("typed", stageArn(ev.MethodArn, "*/*"))
		r.Context = map[string]any{"tenantId": "t1", "n": 42, "big": 12345678901234567, "f": 1.5, "b": true}
		return r, nil
	case "nested-context":
		r := allowPolicy("nested", stageArn(ev.MethodArn, "*/*"))
		r.Context = map[string]any{"user": map[string]any{"id": 1}}
		return r, nil
	}
	r := allowPolicy("tenant-"+token, stageArn(ev.MethodArn, "*/*"))
	r.Context = map[string]any{"tenantId": "tenant-" + token}
	return r, nil
}

// fakeAPI is a proxy handler that records events and answers with them.
type fakeAPI struct {
	mu     sync.Mutex
	events []events.APIGatewayProxyRequest
	// respond, if set, makes the response.
	respond func(ctx context.Context, ev events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error)
}

func (f *fakeAPI) Events() []events.APIGatewayProxyRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]events.APIGatewayProxyRequest(nil), f.events...)
}

func (f *fakeAPI) Last(t *testing.T) events.APIGatewayProxyRequest {
	t.Helper()
	evs := f.Events()
	if len(evs) == 0 {
		t.Fatal("the proxy handler was not called")
	}
	return evs[len(evs)-1]
}

func (f *fakeAPI) Handle(ctx context.Context, ev events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error) {
	f.mu.Lock()
	f.events = append(f.events, ev)
	respond := f.respond
	f.mu.Unlock()
	if respond != nil {
		return respond(ctx, ev)
	}
	return events.APIGatewayProxyResponse{
		StatusCode: 200,
		Headers:    map[string]string{"Content-Type": "application/json", "X-Request-Id": ev.RequestContext.RequestID},
		Body:       `{"ok":true}`,
	}, nil
}

type fixture struct {
	gw    *Gateway
	auth  *fakeAuth
	api   *fakeAPI
	clock *clock
	fns   []Function
}

// newFixture builds a Gateway over a template with fakes for every
// function.
func newFixture(t *testing.T, template []byte, opts Options) *fixture {
	t.Helper()
	f := &fixture{auth: &fakeAuth{}, api: &fakeAPI{}, clock: newClock()}
	opts.Now = f.clock.Now
	opts.Authorizer = func(fn Function) (AuthorizerFunc, error) {
		f.fns = append(f.fns, fn)
		return f.auth.Handle, nil
	}
	if opts.Proxy == nil {
		opts.Proxy = func(fn Function) (ProxyFunc, error) {
			f.fns = append(f.fns, fn)
			return f.api.Handle, nil
		}
	}
	gw, err := New(template, opts)
	if err != nil {
		t.Fatal(err)
	}
	f.gw = gw
	return f
}

type response struct {
	status int
	header http.Header
	body   string
}

func (r response) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(r.body), &m); err != nil {
		t.Fatalf("body %q is not a JSON object: %v", r.body, err)
	}
	return m
}

// errorBody decodes the contract's {"error":{"code","message","request_id"}}.
func (r response) errorBody(t *testing.T) (code, message, requestID string) {
	t.Helper()
	e, _ := r.json(t)["error"].(map[string]any)
	if e == nil {
		t.Fatalf("body %q has no error object", r.body)
	}
	code, _ = e["code"].(string)
	message, _ = e["message"].(string)
	requestID, _ = e["request_id"].(string)
	return
}

// do sends a request; headers are name, value pairs.
func (f *fixture) do(t *testing.T, method, target, body string, headers ...string) response {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, target, rd)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Add(headers[i], headers[i+1])
	}
	rec := httptest.NewRecorder()
	f.gw.ServeHTTP(rec, req)
	return response{status: rec.Code, header: rec.Header(), body: rec.Body.String()}
}
