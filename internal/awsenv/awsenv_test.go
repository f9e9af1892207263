package awsenv_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/internal/awsenv"
	"github.com/triggers-dev/triggers/internal/ddb"
)

// env is a fake environment for getenv.
type env map[string]string

func (e env) get(k string) string { return e[k] }

// lambdaEnv is what Lambda sets for an execution role.
func lambdaEnv() env {
	return env{
		"AWS_REGION":            "eu-west-1",
		"AWS_DEFAULT_REGION":    "eu-west-1",
		"AWS_ACCESS_KEY_ID":     "ASIAEXAMPLE",
		"AWS_SECRET_ACCESS_KEY": "secret",
		"AWS_SESSION_TOKEN":     "token",
	}
}

func retrieve(t *testing.T, cfg aws.Config) (aws.Credentials, error) {
	t.Helper()
	require.NotNil(t, cfg.Credentials)
	return cfg.Credentials.Retrieve(context.Background())
}

func TestRegion(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  env
		o    ddb.Options
		want string
	}{
		{"AWS_REGION", env{"AWS_REGION": "eu-west-1", "AWS_DEFAULT_REGION": "us-west-2"}, ddb.Options{}, "eu-west-1"},
		{"AWS_DEFAULT_REGION", env{"AWS_DEFAULT_REGION": "us-west-2"}, ddb.Options{}, "us-west-2"},
		{"option first", env{"AWS_REGION": "eu-west-1"}, ddb.Options{Region: "ap-south-1"}, "ap-south-1"},
		{"local endpoint", env{}, ddb.Options{EndpointURL: "http://localhost:8000"}, awsenv.LocalRegion},
		{"environment before the local default", env{"AWS_REGION": "eu-west-1"}, ddb.Options{EndpointURL: "http://localhost:8000"}, "eu-west-1"},
		{"none", env{}, ddb.Options{}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := awsenv.Config(tc.env.get, tc.o)
			assert.Equal(t, tc.want, cfg.Region)
			assert.Equal(t, tc.want == "", len(cfg.APIOptions) == 1, "the region check is added exactly when there is no region")
		})
	}
}

func TestCredentialsFromTheEnvironment(t *testing.T) {
	creds, err := retrieve(t, awsenv.Config(lambdaEnv().get, ddb.Options{}))
	require.NoError(t, err)
	assert.Equal(t, aws.Credentials{AccessKeyID: "ASIAEXAMPLE", SecretAccessKey: "secret", SessionToken: "token", Source: awsenv.SourceEnvironment}, creds)

	// Long-term keys have no session token.
	e := lambdaEnv()
	delete(e, "AWS_SESSION_TOKEN")
	creds, err = retrieve(t, awsenv.Config(e.get, ddb.Options{}))
	require.NoError(t, err)
	assert.Equal(t, "ASIAEXAMPLE", creds.AccessKeyID)
	assert.Empty(t, creds.SessionToken)

	// With a local endpoint, keys in the environment are still used.
	creds, err = retrieve(t, awsenv.Config(lambdaEnv().get, ddb.Options{EndpointURL: "http://localhost:8000"}))
	require.NoError(t, err)
	assert.Equal(t, "ASIAEXAMPLE", creds.AccessKeyID)
}

func TestMissingCredentialsNameTheVariable(t *testing.T) {
	for _, tc := range []struct {
		unset []string
		want  string
	}{
		{[]string{"AWS_ACCESS_KEY_ID"}, "awsenv: no AWS credentials in the environment: AWS_ACCESS_KEY_ID is not set"},
		{[]string{"AWS_SECRET_ACCESS_KEY"}, "awsenv: no AWS credentials in the environment: AWS_SECRET_ACCESS_KEY is not set"},
		{[]string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"}, "awsenv: no AWS credentials in the environment: AWS_ACCESS_KEY_ID is not set, AWS_SECRET_ACCESS_KEY is not set"},
	} {
		t.Run(strings.Join(tc.unset, "+"), func(t *testing.T) {
			e := lambdaEnv()
			for _, k := range tc.unset {
				delete(e, k)
			}
			cfg := awsenv.Config(e.get, ddb.Options{})
			_, err := retrieve(t, cfg)
			require.Error(t, err)
			assert.EqualError(t, err, tc.want)
			assert.ErrorIs(t, err, awsenv.ErrNoCredentials)
			_, err = retrieve(t, cfg) // every call, not only the first
			assert.ErrorIs(t, err, awsenv.ErrNoCredentials)
		})
	}
}

func TestLocalEndpointDummyCredentials(t *testing.T) {
	creds, err := retrieve(t, awsenv.Config(env{}.get, ddb.Options{EndpointURL: "http://localhost:8000"}))
	require.NoError(t, err)
	assert.Equal(t, aws.Credentials{AccessKeyID: awsenv.LocalAccessKeyID, SecretAccessKey: awsenv.LocalSecretAccessKey, Source: awsenv.SourceLocal}, creds)

	// A secret without its key does not make a credential: local ones.
	creds, err = retrieve(t, awsenv.Config(env{"AWS_SECRET_ACCESS_KEY": "secret"}.get, ddb.Options{EndpointURL: "http://localhost:8000"}))
	require.NoError(t, err)
	assert.Equal(t, awsenv.LocalAccessKeyID, creds.AccessKeyID)
}

func TestTransport(t *testing.T) {
	cfg := awsenv.Config(lambdaEnv().get, ddb.Options{})
	hc, ok := cfg.HTTPClient.(*awshttp.BuildableClient)
	require.True(t, ok, "%T", cfg.HTTPClient)
	assert.Equal(t, ddb.DefaultAttemptTimeout, hc.GetTimeout())
	require.NotNil(t, cfg.Retryer)
	assert.Equal(t, 4, cfg.Retryer().MaxAttempts())
	assert.NotNil(t, cfg.Logger)
	assert.Nil(t, cfg.BaseEndpoint)

	cfg = awsenv.Config(lambdaEnv().get, ddb.Options{MaxAttempts: 2, AttemptTimeout: time.Second})
	assert.Equal(t, time.Second, cfg.HTTPClient.(*awshttp.BuildableClient).GetTimeout())
	assert.Equal(t, 2, cfg.Retryer().MaxAttempts())
}

func TestEndpointURLFromTheEnvironment(t *testing.T) {
	e := lambdaEnv()
	e["AWS_ENDPOINT_URL"] = "http://127.0.0.1:9"
	cfg := awsenv.Config(e.get, ddb.Options{})
	require.NotNil(t, cfg.BaseEndpoint)
	assert.Equal(t, "http://127.0.0.1:9", *cfg.BaseEndpoint)
}

// Service-specific endpoints (AWS_ENDPOINT_URL_<SERVICE>) come before
// the global one; ddb.Options.EndpointURL before both, for DynamoDB.
func TestServiceEndpointsFromTheEnvironment(t *testing.T) {
	e := lambdaEnv()
	e["AWS_ENDPOINT_URL"] = "http://global"
	e["AWS_ENDPOINT_URL_SECRETS_MANAGER"] = "http://secrets"
	e["AWS_ENDPOINT_URL_DYNAMODB"] = "http://dynamodb"
	cfg := awsenv.Config(e.get, ddb.Options{})
	assert.Equal(t, "http://secrets", aws.ToString(secretsmanager.NewFromConfig(cfg).Options().BaseEndpoint))
	assert.Equal(t, "http://dynamodb", aws.ToString(dynamodb.NewFromConfig(cfg).Options().BaseEndpoint))
	assert.Equal(t, "http://global", aws.ToString(sqs.NewFromConfig(cfg).Options().BaseEndpoint))
	o := ddb.Options{EndpointURL: "http://localhost:8000"}
	assert.Equal(t, "http://localhost:8000", aws.ToString(ddb.ClientFromConfig(awsenv.Config(e.get, o), o).Options().BaseEndpoint))

	e["AWS_IGNORE_CONFIGURED_ENDPOINT_URLS"] = "true"
	cfg = awsenv.Config(e.get, ddb.Options{})
	assert.Nil(t, secretsmanager.NewFromConfig(cfg).Options().BaseEndpoint)
	assert.Nil(t, sqs.NewFromConfig(cfg).Options().BaseEndpoint)
}

// fakeDynamoDB answers every request with an empty JSON object and
// records its Authorization header.
func fakeDynamoDB(t *testing.T) (url string, calls *atomic.Int32, auth *atomic.Value) {
	calls, auth = new(atomic.Int32), new(atomic.Value)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		auth.Store(r.Header.Get("Authorization"))
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		_, _ = w.Write([]byte(`{}`))
	}))
	t.Cleanup(srv.Close)
	return srv.URL, calls, auth
}

func describeTable(ctx context.Context, c *dynamodb.Client) error {
	_, err := c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String("t")})
	return err
}

// Through a real client: requests go to ddb.Options.EndpointURL, signed
// with the environment's key for its region.
func TestClientSignsWithTheEnvironment(t *testing.T) {
	url, calls, auth := fakeDynamoDB(t)
	o := ddb.Options{EndpointURL: url}
	c := ddb.ClientFromConfig(awsenv.Config(lambdaEnv().get, o), o)
	require.NoError(t, describeTable(context.Background(), c))
	assert.Equal(t, int32(1), calls.Load())
	assert.Contains(t, auth.Load(), "Credential=ASIAEXAMPLE/")
	assert.Contains(t, auth.Load(), "/eu-west-1/dynamodb/aws4_request")

	// No environment: the local dummy key and region.
	c = ddb.ClientFromConfig(awsenv.Config(env{}.get, o), o)
	require.NoError(t, describeTable(context.Background(), c))
	assert.Contains(t, auth.Load(), "Credential=local/")
	assert.Contains(t, auth.Load(), "/us-east-1/dynamodb/aws4_request")
}

// A misconfigured function fails each request, naming the variable,
// without reaching the network; building its clients does not fail.
func TestMisconfiguredRequestsFail(t *testing.T) {
	url, calls, _ := fakeDynamoDB(t)

	e := lambdaEnv()
	delete(e, "AWS_SECRET_ACCESS_KEY")
	c := dynamodb.NewFromConfig(awsenv.Config(e.get, ddb.Options{}), func(o *dynamodb.Options) { o.BaseEndpoint = aws.String(url) })
	err := describeTable(context.Background(), c)
	require.Error(t, err)
	assert.ErrorIs(t, err, awsenv.ErrNoCredentials)
	assert.Contains(t, err.Error(), "AWS_SECRET_ACCESS_KEY is not set")
	t.Log(err)

	e = lambdaEnv()
	delete(e, "AWS_REGION")
	delete(e, "AWS_DEFAULT_REGION")
	cfg := awsenv.Config(e.get, ddb.Options{})
	for name, call := range map[string]func() error{
		"dynamodb": func() error { return describeTable(context.Background(), dynamodb.NewFromConfig(cfg)) },
		"sqs": func() error {
			_, err := sqs.NewFromConfig(cfg).SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(url + "/q"), MessageBody: aws.String("m")})
			return err
		},
	} {
		err := call()
		require.Error(t, err, name)
		assert.ErrorIs(t, err, awsenv.ErrNoRegion, name)
		assert.Contains(t, err.Error(), "AWS_REGION (or AWS_DEFAULT_REGION) is not set", name)
		t.Log(err)
	}
	assert.Equal(t, int32(0), calls.Load(), "no request reached the network")

	// A client given its own region does not need the environment's.
	err = describeTable(context.Background(), dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
		o.Region = "eu-west-1"
		o.BaseEndpoint = aws.String(url)
	}))
	require.NoError(t, err)
	assert.Equal(t, int32(1), calls.Load())
	assert.False(t, errors.Is(err, awsenv.ErrNoRegion))
}
