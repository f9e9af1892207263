package httpapi

import (
	"bytes"
	"net/http"

	"github.com/triggers-dev/triggers/contract"
	"github.com/triggers-dev/triggers/contract/openapi"
)

// openAPIDocument serves GET /v1/openapi.json: the API's OpenAPI document,
// as committed in contract/openapi (embedded in the binary).
func (a *API) openAPIDocument(w http.ResponseWriter, r *http.Request, ri *reqInfo, _ string) (int, any, error) {
	return http.StatusOK, rawJSON(openapi.Document()), nil
}

// rawJSON is a body that is JSON already.
type rawJSON []byte

// AppendJSON appends the JSON without its trailing newlines (writeJSON
// adds one).
func (b rawJSON) AppendJSON(dst []byte) ([]byte, error) {
	return append(dst, bytes.TrimRight(b, "\n")...), nil
}

// public reports whether method and path are a route served without an
// API key (contract.Route.Public). Public routes have no path parameter.
func public(method, path string) bool {
	return contract.Route{Method: method, Path: path}.Public()
}

var _ jsonAppender = rawJSON(nil)
