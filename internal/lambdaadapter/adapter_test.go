package lambdaadapter_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/internal/apikey"
	"github.com/triggers-dev/triggers/internal/dynamotest"
	"github.com/triggers-dev/triggers/internal/httpapi"
	"github.com/triggers-dev/triggers/internal/lambdaadapter"
	"github.com/triggers-dev/triggers/internal/store"
	"github.com/triggers-dev/triggers/schema"
)

var db *dynamotest.Local

func TestMain(m *testing.M) { os.Exit(dynamotest.Main(m, &db)) }

var quiet = slog.New(slog.NewJSONHandler(io.Discard, nil))

func newProxy(t *testing.T) lambdaadapter.ProxyHandler {
	t.Helper()
	table := db.CreateTable(t, schema.Events())
	api, err := httpapi.New(httpapi.Config{Store: store.New(db.Client, table), CursorSecret: []byte(strings.Repeat("s", 32)), Logger: quiet})
	require.NoError(t, err)
	return lambdaadapter.Proxy(api)
}

func proxyEvent(method, path, tenant, body string) events.APIGatewayProxyRequest {
	ev := events.APIGatewayProxyRequest{
		HTTPMethod: method,
		Path:       path,
		Body:       body,
		MultiValueHeaders: map[string][]string{
			"content-type":     {"application/json"},
			"x-correlation-id": {"corr-9"},
		},
		RequestContext: events.APIGatewayProxyRequestContext{
			RequestID: "apigw-request-1",
			Identity:  events.APIGatewayRequestIdentity{SourceIP: "203.0.113.7"},
		},
	}
	if tenant != "" {
		ev.RequestContext.Authorizer = map[string]any{lambdaadapter.TenantContextKey: tenant, "principalId": tenant}
	}
	return ev
}

func TestProxyRoundTrip(t *testing.T) {
	h := newProxy(t)
	ctx := context.Background()
	res, err := h(ctx, proxyEvent("POST", "/v1/events", "tenant-a", `{"event_type":"user.created","payload":{"n":12345678901234567890123}}`))
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, res.StatusCode, "%s", res.Body)
	assert.Equal(t, []string{"apigw-request-1"}, res.MultiValueHeaders["X-Request-Id"])
	assert.Equal(t, []string{"corr-9"}, res.MultiValueHeaders["X-Correlation-Id"])
	var created map[string]any
	require.NoError(t, json.Unmarshal([]byte(res.Body), &created))
	md := created["metadata"].(map[string]any)
	assert.Equal(t, "203.0.113.7", md["source_ip"])
	assert.Equal(t, "corr-9", md["correlation_id"])
	assert.Contains(t, res.Body, "12345678901234567890123")
	id := created["event_id"].(string)

	// Base64 bodies (binary media types) are decoded.
	ev := proxyEvent("PATCH", "/v1/events/"+id, "tenant-a", base64.StdEncoding.EncodeToString([]byte(`{"status":"failed"}`)))
	ev.IsBase64Encoded = true
	res, err = h(ctx, ev)
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, res.StatusCode, "%s", res.Body)

	// Multi-value query parameters reach the handler (repeats are errors).
	ev = proxyEvent("GET", "/v1/inbox", "tenant-a", "")
	ev.MultiValueQueryStringParameters = map[string][]string{"status": {"failed"}, "limit": {"10"}}
	res, err = h(ctx, ev)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode, "%s", res.Body)
	assert.Contains(t, res.Body, id)
	ev.MultiValueQueryStringParameters = map[string][]string{"limit": {"10", "20"}}
	res, _ = h(ctx, ev)
	assert.Equal(t, http.StatusBadRequest, res.StatusCode)
	ev.MultiValueQueryStringParameters = nil
	ev.QueryStringParameters = map[string]string{"status": "failed"}
	res, _ = h(ctx, ev)
	assert.Contains(t, res.Body, id)

	// Another tenant in the authorizer context sees nothing.
	res, _ = h(ctx, proxyEvent("GET", "/v1/events/"+id, "tenant-b", ""))
	assert.Equal(t, http.StatusNotFound, res.StatusCode)
}

func TestProxyWithoutTenantIs401(t *testing.T) {
	h := newProxy(t)
	res, err := h(context.Background(), proxyEvent("GET", "/v1/inbox", "", ""))
	require.NoError(t, err)
	assert.Equal(t, http.StatusUnauthorized, res.StatusCode)
	ev := proxyEvent("POST", "/v1/events", "tenant-a", "not base64!")
	ev.IsBase64Encoded = true
	res, err = h(context.Background(), ev)
	require.NoError(t, err)
	assert.Equal(t, http.StatusBadRequest, res.StatusCode)
	assert.True(t, json.Valid([]byte(res.Body)), "body %s", res.Body)
}

func TestAuthorizer(t *testing.T) {
	ctx := context.Background()
	table := db.CreateTable(t, schema.APIKeys())
	keys := apikey.NewStore(db.Client, table)
	active, _, err := keys.Create(ctx, "tenant-a", "")
	require.NoError(t, err)
	revoked, rk, err := keys.Create(ctx, "tenant-a", "")
	require.NoError(t, err)
	_, err = keys.Revoke(ctx, rk.Hash)
	require.NoError(t, err)
	auth := lambdaadapter.Authorizer(keys, quiet)
	arn := "arn:aws:execute-api:us-east-1:123456789012:abcdef1234/prod/GET/v1/inbox"
	req := func(headers map[string]string) events.APIGatewayCustomAuthorizerRequestTypeRequest {
		return events.APIGatewayCustomAuthorizerRequestTypeRequest{Type: "REQUEST", MethodArn: arn, Headers: headers}
	}

	res, err := auth(ctx, req(map[string]string{"authorization": "Bearer " + active}))
	require.NoError(t, err)
	assert.Equal(t, "tenant-a", res.PrincipalID)
	assert.Equal(t, "tenant-a", res.Context[lambdaadapter.TenantContextKey])
	require.Len(t, res.PolicyDocument.Statement, 1)
	assert.Equal(t, "Allow", res.PolicyDocument.Statement[0].Effect)
	assert.Equal(t, []string{"arn:aws:execute-api:us-east-1:123456789012:abcdef1234/prod/*/*"}, res.PolicyDocument.Statement[0].Resource)

	res, err = auth(ctx, req(map[string]string{"X-API-KEY": active}))
	require.NoError(t, err)
	assert.Equal(t, "Allow", res.PolicyDocument.Statement[0].Effect)

	for name, h := range map[string]map[string]string{
		"missing":      nil,
		"unknown":      {"Authorization": "Bearer trg_nope"},
		"empty bearer": {"Authorization": "Bearer "},
	} {
		_, err = auth(ctx, req(h))
		assert.Equal(t, lambdaadapter.ErrUnauthorized, err, "%s: want the Unauthorized error (401)", name)
	}

	res, err = auth(ctx, req(map[string]string{"X-Api-Key": revoked}))
	require.NoError(t, err)
	assert.Equal(t, "Deny", res.PolicyDocument.Statement[0].Effect, "revoked key: want Deny (403)")
	assert.Empty(t, res.Context)

	broken := lambdaadapter.Authorizer(apikey.NewStore(db.Client, "no-such-table"), quiet)
	_, err = broken(ctx, req(map[string]string{"X-Api-Key": active}))
	require.Error(t, err)
	assert.NotEqual(t, lambdaadapter.ErrUnauthorized, err, "a DynamoDB failure must not look like a bad key")
}
