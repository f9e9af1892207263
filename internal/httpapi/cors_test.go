package httpapi_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/contract"
	"github.com/triggers-dev/triggers/internal/httpapi"
	"github.com/triggers-dev/triggers/internal/store"
)

func withCORS(c contract.CORS) envOpt { return func(cfg *httpapi.Config) { cfg.CORS = &c } }

// With CORS, every answer to an allowed origin carries
// Access-Control-Allow-Origin and the headers a page may read (success,
// client error, unknown route alike); another origin and a request
// without Origin get none; the answer varies by Origin unless "*" answers
// every origin.
func TestCORSHeaders(t *testing.T) {
	const app = "https://app.example.com"
	reqs := []req{
		{method: "POST", path: "/v1/events", tenant: "tenant-a", body: `{"event_type":"a","payload":{}}`},
		{method: "POST", path: "/v1/events", tenant: "tenant-a", body: `{"event_type":""}`},
		{method: "GET", path: "/v1/nope", tenant: "tenant-a"},
		{method: "GET", path: "/v1/inbox", tenant: "tenant-a"},
	}
	expose := "Retry-After, X-Request-Id, X-Correlation-Id, Location"
	for _, c := range []struct {
		name       string
		cors       contract.CORS
		origin     string
		allow      string
		expose     string
		vary, cred bool
	}{
		{"listed origin", contract.CORS{AllowOrigins: []string{"https://other.example", app}}, app, app, expose, true, false},
		{"origin not listed", contract.CORS{AllowOrigins: []string{app}}, "https://evil.example", "", "", true, false},
		{"no Origin", contract.CORS{AllowOrigins: []string{app}}, "", "", "", true, false},
		{"any origin", contract.CORS{AllowOrigins: []string{"*"}}, "https://evil.example", "*", expose, false, false},
		{"listed origin with credentials", contract.CORS{AllowOrigins: []string{app}, AllowCredentials: true}, app, app, expose, true, true},
		{"more headers", contract.CORS{AllowOrigins: []string{app}, ExposeHeaders: []string{"X-Custom", "retry-after"}}, app, app, expose + ", X-Custom", true, false},
	} {
		e := newEnv(t, withCORS(c.cors))
		for _, r := range reqs {
			if c.origin != "" {
				r.headers = map[string]string{"Origin": c.origin}
			}
			got := e.do(r)
			what := c.name + ": " + r.method + " " + r.path
			require.NotZero(t, got.code, what)
			assert.Equal(t, c.allow, got.header.Get("Access-Control-Allow-Origin"), what)
			assert.Equal(t, c.expose, got.header.Get("Access-Control-Expose-Headers"), what)
			assert.Equal(t, c.vary, got.header.Get("Vary") == "Origin", "%s: Vary %q", what, got.header.Values("Vary"))
			assert.Equal(t, c.cred, got.header.Get("Access-Control-Allow-Credentials") == "true", what)
		}
	}

	// Without CORS: no CORS header at all.
	e := newEnv(t)
	got := e.do(req{method: "GET", path: "/v1/inbox", tenant: "tenant-a", headers: map[string]string{"Origin": app}})
	require.Equal(t, http.StatusOK, got.code)
	for _, h := range []string{"Access-Control-Allow-Origin", "Access-Control-Expose-Headers", "Vary"} {
		assert.Empty(t, got.header.Values(h), h)
	}
}

// A CORS configuration that could never match is refused at start, naming
// the fix.
func TestCORSConfigRefused(t *testing.T) {
	_, err := httpapi.New(httpapi.Config{Store: store.New(db.Client, "t"), CursorSecret: testSecret, CORS: &contract.CORS{AllowOrigins: []string{"https://app.example.com/"}}})
	assert.ErrorContains(t, err, `httpapi: Config.CORS: CORS origin "https://app.example.com/" has a path`)
	_, err = httpapi.New(httpapi.Config{Store: store.New(db.Client, "t"), CursorSecret: testSecret, CORS: &contract.CORS{}})
	assert.ErrorContains(t, err, "CORS allows no origin")
	_, err = httpapi.New(httpapi.Config{Store: store.New(db.Client, "t"), CursorSecret: testSecret, CORS: &contract.CORS{AllowOrigins: []string{"*"}, AllowCredentials: true}})
	assert.ErrorContains(t, err, "CORS allows any origin (*) with credentials")
}
