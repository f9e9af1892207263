package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/contract"
	"github.com/triggers-dev/triggers/internal/httpapi"
	"github.com/triggers-dev/triggers/internal/syncio"
	"github.com/triggers-dev/triggers/lambda/fnconfig"
)

// fakeSecrets is a Secrets Manager client whose answers the test changes
// between requests; it counts the calls.
type fakeSecrets struct {
	calls  atomic.Int32
	status atomic.Int32
	body   atomic.Value // string
}

func (f *fakeSecrets) client() *secretsmanager.Client {
	return secretsmanager.New(secretsmanager.Options{
		Region:      "us-east-1",
		Credentials: aws.AnonymousCredentials{},
		HTTPClient: httpFunc(func(r *http.Request) (*http.Response, error) {
			f.calls.Add(1)
			if f.status.Load() == 0 {
				return nil, errors.New("connection refused")
			}
			return &http.Response{StatusCode: int(f.status.Load()), Header: http.Header{"Content-Type": {"application/x-amz-json-1.1"}}, Body: io.NopCloser(strings.NewReader(f.body.Load().(string))), Request: r}, nil
		}),
		RetryMaxAttempts: 1,
	})
}

func (f *fakeSecrets) answer(status int, body string) {
	f.body.Store(body)
	f.status.Store(int32(status))
}

// lazy is the API function's lazy handler over f, with an API that answers
// 200 "ok"; logs go to the returned buffer.
func lazy(f *fakeSecrets) (*lazyProxy, *syncio.Buffer) {
	var logs syncio.Buffer
	c := f.client()
	return &lazyProxy{log: fnconfig.Logger(&logs, 0), build: func(ctx context.Context) (http.Handler, error) {
		if _, err := fetchSecret(ctx, c, "arn:aws:secretsmanager:us-east-1:1:secret:cursor", 32); err != nil {
			return nil, err
		}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.WriteString(w, "ok")
		}), nil
	}}, &logs
}

func request(id string) events.APIGatewayProxyRequest {
	return events.APIGatewayProxyRequest{HTTPMethod: "GET", Path: "/v1/inbox", Resource: "/v1/inbox", RequestContext: events.APIGatewayProxyRequestContext{RequestID: id}}
}

// The secret is read on the first request, not before, and only once.
func TestLazyProxyReadsTheSecretOnceOnFirstUse(t *testing.T) {
	f := &fakeSecrets{}
	f.answer(200, `{"SecretString":"`+strings.Repeat("s", 48)+`"}`)
	l, _ := lazy(f)
	assert.Zero(t, f.calls.Load(), "nothing is read before the first request")
	for i := range 3 {
		resp, err := l.handle(context.Background(), request("r"))
		require.NoError(t, err)
		assert.Equal(t, 200, resp.StatusCode, "request %d", i)
		assert.Equal(t, "ok", resp.Body)
	}
	assert.EqualValues(t, 1, f.calls.Load(), "GetSecretValue calls")
}

// A secret that cannot be read is a 503 in the API's error shape, logged
// with the reason, and the next request reads it again.
func TestLazyProxyReadFailureIsA503AndIsRetried(t *testing.T) {
	f := &fakeSecrets{} // connection refused
	l, logs := lazy(f)
	resp, err := l.handle(context.Background(), request("req-1"))
	require.NoError(t, err, "a failure is a response, not a crashed invocation")
	assert.Equal(t, 503, resp.StatusCode)
	assert.Equal(t, "1", resp.Headers["Retry-After"])
	assert.Equal(t, "req-1", resp.Headers["X-Request-Id"])
	assert.Equal(t, "application/json", resp.Headers["Content-Type"])
	assert.JSONEq(t, `{"error":{"code":"unavailable","message":"the service could not read its configuration; retry after the Retry-After delay","request_id":"req-1"}}`, resp.Body)
	var line map[string]any
	require.NoError(t, json.Unmarshal([]byte(strings.Split(logs.String(), "\n")[0]), &line), logs.String())
	assert.Equal(t, "ERROR", line["level"])
	assert.Equal(t, "req-1", line["request_id"])
	assert.Contains(t, line["error"], "read secret arn:aws:secretsmanager:us-east-1:1:secret:cursor")
	assert.Contains(t, line["error"], "connection refused")

	f.answer(400, `{"__type":"ResourceNotFoundException","message":"no such secret"}`)
	resp, _ = l.handle(context.Background(), request("req-2"))
	assert.Equal(t, 503, resp.StatusCode)
	assert.Contains(t, logs.String(), "ResourceNotFoundException")

	f.answer(200, `{"SecretString":"`+strings.Repeat("s", 48)+`"}`)
	resp, _ = l.handle(context.Background(), request("req-3"))
	assert.Equal(t, 200, resp.StatusCode)
	resp, _ = l.handle(context.Background(), request("req-4"))
	assert.Equal(t, 200, resp.StatusCode)
	assert.EqualValues(t, 3, f.calls.Load(), "read again after each failure, then kept")
}

// A secret too short to be the cursor key is a 500 (retrying does not
// help), and the log says why.
func TestLazyProxyShortSecretIsA500(t *testing.T) {
	f := &fakeSecrets{}
	f.answer(200, `{"SecretString":"short"}`)
	l, logs := lazy(f)
	resp, err := l.handle(context.Background(), request("req-1"))
	require.NoError(t, err)
	assert.Equal(t, 500, resp.StatusCode)
	assert.Empty(t, resp.Headers["Retry-After"])
	// The code is the API's own for a 500, internal, as docs/api.md lists
	// it (it was internal_error, a code no client knew).
	assert.JSONEq(t, `{"error":{"code":"internal","message":"the service is misconfigured; quote the request id when reporting it","request_id":"req-1"}}`, resp.Body)
	assert.Contains(t, logs.String(), "secret arn:aws:secretsmanager:us-east-1:1:secret:cursor is 5 bytes: it must hold at least 32")
}

// The read ends the API's margin before the invocation's deadline, so the
// function answers instead of timing out.
func TestLazyProxyLeavesTheDeadlineMargin(t *testing.T) {
	deadline := time.Now().Add(10 * time.Second)
	var got time.Time
	l := &lazyProxy{log: fnconfig.Logger(io.Discard, 0), build: func(ctx context.Context) (http.Handler, error) {
		got, _ = ctx.Deadline()
		return nil, errors.New("no")
	}}
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	resp, _ := l.handle(ctx, request("r"))
	assert.Equal(t, 503, resp.StatusCode)
	assert.Equal(t, deadline.Add(-httpapi.DeadlineMargin), got)
}

// The failure answers carry what every answer of the API does (docs/api.md):
// the correlation id echoed, and the CORS headers for an allowed origin, so
// that a page can read the 503 and its Retry-After. They had neither.
func TestLazyProxyFailureCarriesCorrelationAndCORS(t *testing.T) {
	f := &fakeSecrets{} // connection refused
	l, _ := lazy(f)
	l.cors = &contract.CORS{AllowOrigins: []string{"https://app.example.com"}}
	ev := request("req-1")
	ev.Headers = map[string]string{"Origin": "https://app.example.com", "X-Correlation-Id": "c-42"}
	resp, err := l.handle(context.Background(), ev)
	require.NoError(t, err)
	assert.Equal(t, 503, resp.StatusCode)
	assert.Equal(t, "1", resp.Headers["Retry-After"])
	assert.Equal(t, "c-42", resp.Headers["X-Correlation-Id"])
	assert.Equal(t, "https://app.example.com", resp.Headers["Access-Control-Allow-Origin"])
	assert.Contains(t, resp.Headers["Access-Control-Expose-Headers"], "Retry-After")

	ev.Headers = map[string]string{"Origin": "https://evil.example.com", "X-Correlation-Id": "bad id with spaces"}
	resp, err = l.handle(context.Background(), ev)
	require.NoError(t, err)
	assert.Empty(t, resp.Headers["Access-Control-Allow-Origin"], "an origin not allowed")
	assert.Empty(t, resp.Headers["X-Correlation-Id"], "an invalid correlation id is not echoed")
}
