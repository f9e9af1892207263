package ddbconfig_test

import (
	"context"
	"path/filepath"
	"testing"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/internal/ddb"
	"github.com/triggers-dev/triggers/internal/ddb/ddbconfig"
)

// isolate clears the caller's AWS settings for the test.
func isolate(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(dir, "config"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(dir, "credentials"))
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	for _, k := range []string{"AWS_PROFILE", "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL"} {
		t.Setenv(k, "")
	}
}

// With a local endpoint and an empty environment: region us-east-1 and
// dummy credentials, with ddb's transport.
func TestLocalEndpoint(t *testing.T) {
	isolate(t)
	cfg, err := ddbconfig.LoadConfig(context.Background(), ddb.Options{EndpointURL: "http://localhost:8000"})
	require.NoError(t, err)
	assert.Equal(t, "us-east-1", cfg.Region)
	creds, err := cfg.Credentials.Retrieve(context.Background())
	require.NoError(t, err)
	assert.Equal(t, "local", creds.AccessKeyID)
	hc, ok := cfg.HTTPClient.(*awshttp.BuildableClient)
	require.True(t, ok, "%T", cfg.HTTPClient)
	assert.Equal(t, ddb.DefaultAttemptTimeout, hc.GetTimeout())
	assert.Equal(t, 4, cfg.Retryer().MaxAttempts())

	c, err := ddbconfig.NewClient(context.Background(), ddb.Options{EndpointURL: "http://localhost:8000"})
	require.NoError(t, err)
	assert.Equal(t, "http://localhost:8000", *c.Options().BaseEndpoint)
}

// The environment's region and keys come first.
func TestEnvironment(t *testing.T) {
	isolate(t)
	t.Setenv("AWS_REGION", "eu-west-1")
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
	cfg, err := ddbconfig.LoadConfig(context.Background(), ddb.Options{EndpointURL: "http://localhost:8000"})
	require.NoError(t, err)
	assert.Equal(t, "eu-west-1", cfg.Region)
	creds, err := cfg.Credentials.Retrieve(context.Background())
	require.NoError(t, err)
	assert.Equal(t, "AKIDEXAMPLE", creds.AccessKeyID)

	cfg, err = ddbconfig.LoadConfig(context.Background(), ddb.Options{Region: "ap-south-1"})
	require.NoError(t, err)
	assert.Equal(t, "ap-south-1", cfg.Region)
}
