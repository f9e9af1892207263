package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/internal/testkit/lambdatest"
)

func TestMain(m *testing.M) { lambdatest.Main(m) }

const secretARN = "arn:aws:secretsmanager:us-east-1:123456789012:secret:cursor-AbCdEf"

// An API Gateway request for a route the API does not have: answered by the
// API itself (404 not_found), without DynamoDB.
const unknownRoute = `{"resource":"/{proxy+}","path":"/v1/nope","httpMethod":"GET","headers":{},"requestContext":{"requestId":"req-1","authorizer":{"tenantId":"acme"},"identity":{"sourceIp":"192.0.2.1"}}}`

// The built function refuses to start on a bad environment, naming every
// bad variable.
func TestConfigurationError(t *testing.T) {
	stderr := lambdatest.StartFails(t, "LOG_LEVEL=loud", "CURSOR_SECRET=short")
	for _, want := range []string{"api: configuration:", "EVENTS_TABLE is not set", "CURSOR_SECRET is 5 bytes", "LOG_LEVEL"} {
		assert.Contains(t, stderr, want)
	}
}

// The built function starts without Secrets Manager, reads the secret on
// its first request (once) and serves it.
func TestBinaryReadsTheSecretOnFirstRequest(t *testing.T) {
	var calls atomic.Int32
	sm := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		if r.Header.Get("X-Amz-Target") != "secretsmanager.GetSecretValue" {
			http.Error(w, "unexpected "+r.Header.Get("X-Amz-Target"), http.StatusBadRequest)
			return
		}
		var in struct{ SecretId string }
		_ = json.NewDecoder(r.Body).Decode(&in)
		assert.Equal(t, secretARN, in.SecretId)
		w.Header().Set("Content-Type", "application/x-amz-json-1.1")
		_ = json.NewEncoder(w).Encode(map[string]string{"ARN": secretARN, "SecretString": strings.Repeat("s", 48)})
	}))
	defer sm.Close()
	_, body := lambdatest.Invoke(t, lambdatest.Build(t), unknownRoute,
		"EVENTS_TABLE=events", "CURSOR_SECRET_ARN="+secretARN,
		"AWS_ENDPOINT_URL_SECRETS_MANAGER="+sm.URL, "DYNAMODB_ENDPOINT=http://127.0.0.1:9")
	var resp struct {
		StatusCode int
		Body       string
	}
	require.NoError(t, json.Unmarshal([]byte(body), &resp), body)
	assert.Equal(t, 404, resp.StatusCode, body)
	assert.Contains(t, resp.Body, `"code":"not_found"`)
	assert.EqualValues(t, 1, calls.Load(), "GetSecretValue calls")
}

// With Secrets Manager out of reach the built function still starts, and
// its first request is a 503 in the API's shape, not a crash.
func TestBinarySecretFailureIsA503(t *testing.T) {
	_, body := lambdatest.Invoke(t, lambdatest.Build(t), unknownRoute,
		"EVENTS_TABLE=events", "CURSOR_SECRET_ARN="+secretARN,
		"AWS_ENDPOINT_URL_SECRETS_MANAGER=http://127.0.0.1:9", "DYNAMODB_ENDPOINT=http://127.0.0.1:9")
	var resp struct {
		StatusCode int
		Headers    map[string]string
		Body       string
	}
	require.NoError(t, json.Unmarshal([]byte(body), &resp), body)
	assert.Equal(t, 503, resp.StatusCode, body)
	assert.Equal(t, "1", resp.Headers["Retry-After"])
	assert.JSONEq(t, `{"error":{"code":"unavailable","message":"the service could not read its configuration; retry after the Retry-After delay","request_id":"req-1"}}`, resp.Body)
}
