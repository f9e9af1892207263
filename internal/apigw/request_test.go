package apigw_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/contract"
	"github.com/triggers-dev/triggers/internal/apigw"
	"github.com/triggers-dev/triggers/internal/httpapi"
)

// Request rebuilds the client's request from either shape of the proxy
// event (single- or multi-value headers and query), its Host header, and
// an event without a resource or path.
func TestRequestFromSingleValueEvent(t *testing.T) {
	ev := events.APIGatewayProxyRequest{
		HTTPMethod:            "GET",
		Path:                  "/v1/inbox",
		Headers:               map[string]string{"Host": "api.example.com", "X-One": "1"},
		QueryStringParameters: map[string]string{"limit": "5"},
	}
	ev.RequestContext.RequestID = "req-1"
	ev.RequestContext.Authorizer = map[string]any{contract.AuthorizerTenantKey: "tenant-a"}
	r, err := apigw.Request(nil, ev) //nolint:staticcheck // a nil context gets a background one
	require.NoError(t, err)
	assert.Equal(t, "/v1/inbox", r.URL.Path)
	assert.Equal(t, "limit=5", r.URL.RawQuery)
	assert.Equal(t, "api.example.com", r.Host)
	assert.Equal(t, "1", r.Header.Get("X-One"))
	assert.Equal(t, int64(0), r.ContentLength)

	// No Host header: the request keeps an empty host; no path: "/".
	r, err = apigw.Request(context.Background(), events.APIGatewayProxyRequest{HTTPMethod: "GET", Body: "abc"})
	require.NoError(t, err)
	assert.Equal(t, "/", r.URL.Path)
	assert.Equal(t, "", r.Host)
	assert.Equal(t, int64(3), r.ContentLength)
	b, _ := io.ReadAll(r.Body)
	assert.Equal(t, "abc", string(b))

	// Only {name} segments of the resource are parameters ("{}" is not).
	r, err = apigw.Request(context.Background(), events.APIGatewayProxyRequest{HTTPMethod: "GET", Resource: "/v1/{}/{id}/{path+}",
		PathParameters: map[string]string{"id": "7", "path": "a/b", "": "x"}})
	require.NoError(t, err)
	assert.Equal(t, "/v1/{}/7/a/b", r.URL.Path)

	_, err = apigw.Request(context.Background(), events.APIGatewayProxyRequest{HTTPMethod: "BAD METHOD", Path: "/"})
	assert.Error(t, err)
}

// A body that is not valid base64 is a 400 naming the problem, with the
// request id (made JSON-safe) in body and header; a non-UTF-8 response
// body travels base64-encoded.
func TestProxyBodyEncodings(t *testing.T) {
	h := apigw.Proxy(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte{0xff, 0x00, 'a'})
	}))
	ev := events.APIGatewayProxyRequest{HTTPMethod: "POST", Path: "/v1/events", Body: "%%%", IsBase64Encoded: true}
	ev.RequestContext.RequestID = "req-\"\\\x01\x1f x~"
	res, err := h(context.Background(), ev)
	require.NoError(t, err)
	assert.Equal(t, http.StatusBadRequest, res.StatusCode)
	assert.Equal(t, ev.RequestContext.RequestID, res.Headers["X-Request-Id"])
	var body struct {
		Error struct {
			Code, Message string
			RequestID     string `json:"request_id"`
		} `json:"error"`
	}
	require.NoError(t, json.Unmarshal([]byte(res.Body), &body), "%s", res.Body)
	assert.Equal(t, "invalid_body", body.Error.Code)
	assert.Equal(t, "the request body is not valid base64", body.Error.Message)
	assert.Equal(t, ev.RequestContext.RequestID, body.Error.RequestID, "the request id, escaped, not cut")
	assert.Equal(t, `{"error":{"code":"invalid_body","message":"the request body is not valid base64","request_id":"req-\"\\\u0001\u001f x~"}}`+"\n", res.Body)

	res, err = h(context.Background(), events.APIGatewayProxyRequest{HTTPMethod: "GET", Path: "/"})
	require.NoError(t, err)
	assert.True(t, res.IsBase64Encoded)
	assert.Equal(t, base64.StdEncoding.EncodeToString([]byte{0xff, 0x00, 'a'}), res.Body)
	assert.Equal(t, []string{"3"}, res.MultiValueHeaders["Content-Length"])
	assert.Equal(t, http.StatusOK, res.StatusCode)
}

// The base path of the client's URL (the stage, a custom domain's mapping)
// is requestContext.path without the route; it reaches the handler, whose
// Location headers keep it (httpapi's TestLocationKeepsTheBasePath).
func TestRequestCarriesTheBasePath(t *testing.T) {
	for _, c := range []struct{ ctxPath, resource, path, want string }{
		{"/live/v1/events", "/v1/events", "/v1/events", "/live"},
		{"/api/v2/v1/events", "/v1/events", "/api/v2/v1/events", "/api/v2"},
		{"/v1/events", "/v1/events", "/v1/events", ""},
		{"", "/v1/events", "/v1/events", ""},
	} {
		ev := events.APIGatewayProxyRequest{HTTPMethod: "POST", Resource: c.resource, Path: c.path, Body: `{"event_type":"a","payload":{}}`}
		ev.RequestContext.Path = c.ctxPath
		r, err := apigw.Request(context.Background(), ev)
		require.NoError(t, err)
		assert.Equal(t, c.want, httpapi.BasePath(r.Context()), "%+v", c)
	}
}
