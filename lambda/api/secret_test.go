package main

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type httpFunc func(*http.Request) (*http.Response, error)

func (f httpFunc) Do(r *http.Request) (*http.Response, error) { return f(r) }

// client answers GetSecretValue with body and status, through the real SDK
// serializers (there is no Secrets Manager emulator on the build machines).
func client(t *testing.T, status int, body string) *secretsmanager.Client {
	return secretsmanager.New(secretsmanager.Options{
		Region:      "us-east-1",
		Credentials: aws.AnonymousCredentials{},
		HTTPClient: httpFunc(func(r *http.Request) (*http.Response, error) {
			assert.Equal(t, "secretsmanager.GetSecretValue", r.Header.Get("X-Amz-Target"))
			return &http.Response{StatusCode: status, Header: http.Header{"Content-Type": {"application/x-amz-json-1.1"}}, Body: io.NopCloser(strings.NewReader(body)), Request: r}, nil
		}),
		RetryMaxAttempts: 1,
	})
}

func TestFetchSecret(t *testing.T) {
	ctx := context.Background()
	long := strings.Repeat("k", 64)
	v, err := fetchSecret(ctx, client(t, 200, `{"ARN":"arn:x","SecretString":"`+long+`"}`), "arn:x", 32)
	require.NoError(t, err)
	assert.Equal(t, long, string(v))

	v, err = fetchSecret(ctx, client(t, 200, `{"ARN":"arn:x","SecretBinary":"`+"QUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUE="+`"}`), "arn:x", 32)
	require.NoError(t, err)
	assert.Equal(t, strings.Repeat("A", 32), string(v))

	_, err = fetchSecret(ctx, client(t, 200, `{"SecretString":"short"}`), "arn:x", 32)
	assert.ErrorContains(t, err, "5 bytes")

	_, err = fetchSecret(ctx, client(t, 400, `{"__type":"ResourceNotFoundException","message":"no such secret"}`), "arn:x", 32)
	assert.ErrorContains(t, err, "ResourceNotFoundException")
}
