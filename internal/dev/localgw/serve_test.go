package localgw

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
)

// Routes lists by path, and a path's methods in name order.
func TestRoutesOrder(t *testing.T) {
	f := edgeFixture(t, Options{})
	var got []string
	for _, r := range f.gw.Routes() {
		got = append(got, r.Method+" "+r.Path)
	}
	want := []string{"GET /", "ANY /files/{path+}", "OPTIONS /items", "GET /items/special", "ANY /items/{id}",
		"DELETE /items/{id}", "GET /search", "POST /search", "GET /slow"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Routes() = %q\nwant %q", got, want)
	}
}

// The request log line names the gateway response and the authorizer
// cache only when there is one.
func TestRequestLogFields(t *testing.T) {
	var buf bytes.Buffer
	f := edgeFixture(t, Options{Logger: slog.New(slog.NewJSONHandler(&buf, nil))})
	last := func() map[string]any {
		lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
		var m map[string]any
		if err := json.Unmarshal([]byte(lines[len(lines)-1]), &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	f.do(t, "GET", "/dev/items/special", "")
	m := last()
	for _, k := range []string{"gateway_response", "error", "authorizer_cache_hit"} {
		if _, ok := m[k]; ok {
			t.Errorf("a plain success logs %s: %v", k, m)
		}
	}
	if m["resource"] != "/items/special" || m["status"] != float64(200) {
		t.Errorf("log line %v", m)
	}
	f.do(t, "GET", "/dev/items/1?tenant=t", "", "Authorization", "Bearer good")
	if m := last(); m["authorizer_cache_hit"] != false {
		t.Errorf("a method with an authorizer logs authorizer_cache_hit: %v", m)
	}
	f.do(t, "GET", "/dev/items/1?tenant=t", "", "Authorization", "Bearer good")
	if m := last(); m["authorizer_cache_hit"] != true {
		t.Errorf("second call: %v", m)
	}
	f.do(t, "GET", "/dev/nowhere", "")
	if m := last(); m["gateway_response"] != "MISSING_AUTHENTICATION_TOKEN" || m["error"] != "Missing Authentication Token" {
		t.Errorf("a gateway response: %v", m)
	}
}

// The base path alone is the API's root; anything shorter is Forbidden.
func TestBasePathAlone(t *testing.T) {
	f := edgeFixture(t, Options{CustomDomain: &CustomDomain{DomainName: "api.example.com", BasePath: "a/b"}})
	if res := f.do(t, "GET", "/a/b", ""); res.status != 200 {
		t.Errorf("GET /a/b = %d %s, want the root method", res.status, res.body)
	}
	if res := f.do(t, "GET", "/a", ""); res.status != 403 || res.body != `{"message":"Forbidden"}` {
		t.Errorf("GET /a = %d %s, want Forbidden", res.status, res.body)
	}
}

// The 10 MB limit holds at its exact value, with and without a
// Content-Length (a chunked body is read one byte past the limit, no
// further, and never truncated).
func TestRequestSizeExactLimit(t *testing.T) {
	f := edgeFixture(t, Options{})
	send := func(n int, chunked bool) (int, string) {
		body := strings.Repeat("a", n)
		var rd io.Reader = strings.NewReader(body)
		if chunked {
			rd = io.MultiReader(rd) // hides the length
		}
		req := httptest.NewRequest("PUT", "/dev/files/x", rd)
		if chunked {
			req.ContentLength = -1
		} else if req.ContentLength != int64(n) {
			t.Fatalf("Content-Length %d", req.ContentLength)
		}
		rec := httptest.NewRecorder()
		f.gw.ServeHTTP(rec, req)
		return rec.Code, rec.Body.String()
	}
	for _, chunked := range []bool{false, true} {
		before := len(f.api.Events())
		if code, body := send(MaxRequestBytes, chunked); code == 413 {
			t.Errorf("exactly %d bytes (chunked %v): 413 %s", MaxRequestBytes, chunked, body)
		}
		if code, body := send(MaxRequestBytes+1, chunked); code != 413 || !strings.Contains(body, "Request Too Long") {
			t.Errorf("%d bytes (chunked %v): %d %s, want 413", MaxRequestBytes+1, chunked, code, body)
		}
		if len(f.api.Events()) != before {
			t.Errorf("chunked %v: a body over Lambda's 6 MB reached the handler", chunked)
		}
	}
}
