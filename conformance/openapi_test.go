package conformance

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/contract/openapi"
)

// GET /v1/openapi.json answers the committed OpenAPI document to anyone:
// no authorizer runs for it, so no key, an unknown key or a malformed
// credential all get it. Other methods on its path need a key like every
// path's (401, then 405 naming GET).
func TestOpenAPIDocument(t *testing.T) {
	tg := api(t)
	for name, h := range map[string]http.Header{
		"no key":         hdr(),
		"a valid key":    bearer(tg.key),
		"an unknown key": bearer("trg_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"),
		"Basic scheme":   hdr("Authorization", "Basic Zm9v"),
	} {
		r := tg.do(t, "GET", "/v1/openapi.json", h, nil)
		require.Equal(t, http.StatusOK, r.Status, "%s: %s", name, r)
		assert.Equal(t, "application/json", r.Header.Get("Content-Type"), name)
		assert.Equal(t, string(openapi.Document()), string(r.Body), "%s: the served document is not the committed one", name)
	}
	r := tg.do(t, "DELETE", "/v1/openapi.json", hdr(), nil)
	assert.Equal(t, http.StatusUnauthorized, r.Status, "DELETE without a key: %s", r)
	r = tg.do(t, "DELETE", "/v1/openapi.json", bearer(tg.key), nil)
	assert.Equal(t, http.StatusMethodNotAllowed, r.Status, "DELETE with a key: %s", r)
	assert.Equal(t, "GET", r.Header.Get("Allow"))
}

// recorder is an errorReporter that keeps the errors.
type recorder struct{ errs []string }

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

// The check every response of the suite passes through fails on a status
// the document does not list and on a body unlike the response's schema,
// and lets a documented response through.
func TestCheckDocumented(t *testing.T) {
	h := http.Header{"X-Request-Id": {"r-1"}, "Content-Type": {"application/json"}}
	for _, c := range []struct {
		name, method, path string
		r                  response
		want               string
	}{
		{"a documented page", "GET", "/v1/inbox?limit=1", response{200, h, []byte(`{"events":[],"next_cursor":null}`)}, ""},
		{"an undocumented status", "GET", "/v1/inbox?limit=1", response{418, h, []byte(`{"error":{"code":"teapot","message":"m","request_id":"r-1"}}`)}, "a status the document does not list"},
		{"a body unlike the schema", "GET", "/v1/inbox", response{200, h, []byte(`{"events":[],"next_cursor":null,"tenant":"a"}`)}, "additional properties 'tenant'"},
		{"an error of another shape", "GET", "/v1/events/x", response{404, h, []byte(`{"message":"Not Found"}`)}, "does not match"},
	} {
		rec := &recorder{}
		checkDocumented(rec, c.method, c.path, c.r)
		if c.want == "" {
			assert.Empty(t, rec.errs, c.name)
			continue
		}
		if assert.Len(t, rec.errs, 1, c.name) {
			assert.Contains(t, rec.errs[0], c.want, c.name)
			assert.True(t, strings.HasPrefix(rec.errs[0], c.method+" "+c.path+": "), "%s: %s", c.name, rec.errs[0])
		}
	}
}
