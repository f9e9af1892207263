package localgw

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
)

// The forwarding headers API Gateway adds to the proxy event.
func TestForwardingHeaders(t *testing.T) {
	f := edgeFixture(t, Options{})
	send := func(edit func(r *http.Request) *http.Request) http.Header {
		r := httptest.NewRequest("GET", "/dev/items/special", nil)
		r.RemoteAddr = "198.51.100.7:5555"
		r = edit(r)
		f.gw.ServeHTTP(httptest.NewRecorder(), r)
		ev := f.api.Last(t)
		return http.Header(ev.MultiValueHeaders)
	}
	h := send(func(r *http.Request) *http.Request { return r })
	if got := h.Get("X-Forwarded-For"); got != "198.51.100.7" {
		t.Errorf("X-Forwarded-For = %q, want the client address", got)
	}
	if got := h.Get("X-Forwarded-Proto"); got != "http" {
		t.Errorf("X-Forwarded-Proto = %q over plain HTTP", got)
	}
	if got := h.Values("X-Forwarded-Port"); len(got) != 0 {
		t.Errorf("X-Forwarded-Port = %q without a local address", got)
	}
	h = send(func(r *http.Request) *http.Request {
		r.Header.Set("X-Forwarded-For", "203.0.113.1")
		r.TLS = &tls.ConnectionState{}
		return r.WithContext(context.WithValue(r.Context(), http.LocalAddrContextKey, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8443}))
	})
	if got := h.Get("X-Forwarded-For"); got != "203.0.113.1, 198.51.100.7" {
		t.Errorf("X-Forwarded-For = %q, want the client's list plus the client address", got)
	}
	if got := h.Get("X-Forwarded-Proto"); got != "https" {
		t.Errorf("X-Forwarded-Proto = %q over TLS", got)
	}
	if got := h.Get("X-Forwarded-Port"); got != "8443" {
		t.Errorf("X-Forwarded-Port = %q", got)
	}
}

// Bodies: an empty body stays empty and unencoded even for a binary
// media type; a media type with a broken parameter is still recognized.
func TestEventBodyEncoding(t *testing.T) {
	f := edgeFixture(t, Options{})
	f.do(t, "POST", "/dev/files/x", "", "Content-Type", "image/png")
	if ev := f.api.Last(t); ev.Body != "" || ev.IsBase64Encoded {
		t.Errorf("empty binary body: %q base64 %v", ev.Body, ev.IsBase64Encoded)
	}
	f.do(t, "POST", "/dev/files/x", "\x89PNG", "Content-Type", "image/png; charset")
	if ev := f.api.Last(t); ev.Body != "iVBORw==" || !ev.IsBase64Encoded {
		t.Errorf("image/png with a broken parameter: %q base64 %v, want base64", ev.Body, ev.IsBase64Encoded)
	}
}

// A proxy response's status code must be 100-599; anything else is a
// malformed response (502).
func TestProxyStatusRange(t *testing.T) {
	f := edgeFixture(t, Options{})
	for code, want := range map[int]int{99: 502, 100: 100, 599: 599, 600: 502} {
		f.api.mu.Lock()
		f.api.respond = func(context.Context, events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error) {
			return events.APIGatewayProxyResponse{StatusCode: code, Body: "x"}, nil
		}
		f.api.mu.Unlock()
		if res := f.do(t, "GET", "/dev/items/special", ""); res.status != want {
			t.Errorf("status %d from the function: %d, want %d", code, res.status, want)
		}
	}
}

// A mock integration's response template drops VTL comment lines.
func TestMockTemplateDropsComments(t *testing.T) {
	tmpl := editTemplate(t, func(r map[string]any) {
		ir := r["ItemsOptions"].(map[string]any)["Properties"].(map[string]any)["Integration"].(map[string]any)["IntegrationResponses"].([]any)[0].(map[string]any)
		ir["ResponseTemplates"] = map[string]any{"application/json": "## a comment\n{\"stage\":\"$context.stage\"}\n  # indented comment"}
	})
	f := newFixture(t, tmpl, Options{})
	res := f.do(t, "OPTIONS", "/dev/items", "")
	if res.status != 204 || strings.TrimSpace(res.body) != `{"stage":"dev"}` {
		t.Errorf("mock: %d %q", res.status, res.body)
	}
}

// A Content-Type that is not a valid media type is still matched by its
// type/subtype text against wildcard binary media types.
func TestMalformedContentTypeAgainstWildcards(t *testing.T) {
	tmpl := editTemplate(t, func(r map[string]any) {
		r["Api"].(map[string]any)["Properties"].(map[string]any)["BinaryMediaTypes"] = []any{"text~1*"}
	})
	f := newFixture(t, tmpl, Options{})
	for _, ct := range []string{"text/plain", "TEXT/plain x", "text/csv x; q=1"} {
		f.do(t, "POST", "/dev/files/x", "abc", "Content-Type", ct)
		if ev := f.api.Last(t); !ev.IsBase64Encoded || ev.Body != "YWJj" {
			t.Errorf("Content-Type %q against text/*: %q base64 %v", ct, ev.Body, ev.IsBase64Encoded)
		}
	}
	f.do(t, "POST", "/dev/files/x", "abc", "Content-Type", "application/json x")
	if ev := f.api.Last(t); ev.IsBase64Encoded {
		t.Error("application/json x matched text/*")
	}
}

// Query names and values are percent-decoded; a part that does not
// decode is passed on as sent.
func TestQueryDecoding(t *testing.T) {
	f := edgeFixture(t, Options{})
	f.do(t, "GET", "/dev/items/special?q=a%20b&na%6De=v&bad=%zz&%zz=x&q=c+d", "")
	ev := f.api.Last(t)
	want := map[string][]string{"q": {"a b", "c d"}, "name": {"v"}, "bad": {"%zz"}, "%zz": {"x"}}
	for k, vs := range want {
		if got := ev.MultiValueQueryStringParameters[k]; strings.Join(got, "|") != strings.Join(vs, "|") {
			t.Errorf("query %q = %q, want %q", k, got, vs)
		}
	}
	if len(ev.MultiValueQueryStringParameters) != len(want) {
		t.Errorf("query parameters %v", ev.MultiValueQueryStringParameters)
	}
	if ev.QueryStringParameters["q"] != "c d" {
		t.Errorf("single-value q = %q, want the last", ev.QueryStringParameters["q"])
	}
}
