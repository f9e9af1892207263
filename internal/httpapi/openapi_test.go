package httpapi_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/contract"
	"github.com/triggers-dev/triggers/contract/openapi"
	"github.com/triggers-dev/triggers/internal/testkit/openapitest"
)

// GET /v1/openapi.json answers the committed document, byte for byte, to
// anyone: no tenant, and whatever credential the request carries is not
// read. Other methods on the path need a key like every path's.
func TestOpenAPIDocumentIsPublic(t *testing.T) {
	e := newEnv(t)
	v, err := openapitest.New(openapi.Document())
	require.NoError(t, err)
	for name, h := range map[string]map[string]string{
		"no credential":         nil,
		"a malformed one":       {"Authorization": "Basic Zm9v"},
		"two":                   {"Authorization": "Bearer trg_x", "X-Api-Key": "trg_y"},
		"with a correlation id": {"X-Correlation-Id": "c-1"},
	} {
		r := e.do(req{method: "GET", path: contract.PathOpenAPI, headers: h})
		require.Equal(t, http.StatusOK, r.code, "%s: %s", name, r.body)
		assert.Equal(t, openapi.Document(), r.body, name)
		_, err := v.Check("GET", contract.PathOpenAPI, r.code, r.header, r.body)
		assert.NoError(t, err, name)
	}

	r := e.do(req{method: "POST", path: contract.PathOpenAPI, body: `{}`})
	assert.Equal(t, http.StatusUnauthorized, r.code, "POST without a key: %s", r.body)
	assert.Equal(t, "unauthorized", r.errCode(t))
	r = e.do(req{method: "POST", path: contract.PathOpenAPI, tenant: "tenant-a", body: `{}`})
	assert.Equal(t, http.StatusMethodNotAllowed, r.code, "POST with a key: %s", r.body)
	assert.Equal(t, "GET", r.header.Get("Allow"))

	r = e.do(req{method: "GET", path: contract.PathOpenAPI, headers: map[string]string{"X-Correlation-Id": "a b"}})
	assert.Equal(t, http.StatusBadRequest, r.code, "%s", r.body)
	assert.Equal(t, "invalid_header", r.errCode(t))
	_, err = v.Check("GET", contract.PathOpenAPI, r.code, r.header, r.body)
	assert.NoError(t, err)
}
