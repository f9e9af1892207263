package lambda_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const module = "github.com/triggers-dev/triggers/"

// forbidden are the import-path prefixes no Lambda binary may link: the
// local-only and test-only families of docs/layout.md, the synthesis side,
// and test frameworks.
var forbidden = []string{
	module + "internal/dev/",
	module + "internal/testkit/",
	module + "internal/synth/",
	module + "internal/ddb/ddblocal",
	module + "internal/ddb/ddbtest",
	module + "constructs/",
	module + "stacks",
	module + "assertions",
	module + "conformance",
	"github.com/aws/aws-cdk-go/",
	"github.com/aws/jsii-runtime-go",
	"github.com/cdklabs/",
	"github.com/stretchr/testify",
	"testing",
}

const sdk = "github.com/aws/aws-sdk-go-v2/service/"

// sdkConfig are the SDK's configuration loader and credential chain
// (shared files, SSO, STS, instance metadata), which no function links:
// they build their AWS configuration from the environment Lambda sets
// (internal/awsenv). Linked, they cost each binary about 1.5 MB and
// each cold start over a millisecond of package init.
var sdkConfig = []string{
	"github.com/aws/aws-sdk-go-v2/config",
	"github.com/aws/aws-sdk-go-v2/credentials",
	"github.com/aws/aws-sdk-go-v2/feature/ec2/imds",
	sdk + "sso",
	sdk + "ssooidc",
	sdk + "sts",
	sdk + "signin",
	module + "internal/ddb/ddbconfig",
}

// unneeded are packages a function does not run, which its binary must
// therefore not link. The stream consumer reads no table (no store, no
// Streams API: the local stream reader is internal/dev/streampoll); only
// the API function reads a secret; only the archiver writes to S3.
var unneeded = map[string][]string{
	"api":            {sdk + "s3", module + "internal/archive"},
	"authorizer":     {module + "internal/store", module + "internal/streamconsumer", module + "internal/webhook/dispatch", sdk + "sqs", sdk + "secretsmanager", sdk + "s3", sdk + "dynamodbstreams", sdk + "kms"},
	"streamconsumer": {module + "internal/store", module + "internal/httpapi", module + "internal/webhook/dispatch", sdk + "dynamodbstreams", sdk + "secretsmanager", sdk + "s3", sdk + "kms"},
	"archiver":       {module + "internal/store", module + "internal/httpapi", module + "internal/webhook/dispatch", sdk + "dynamodbstreams", sdk + "secretsmanager", sdk + "kms"},
	"webhooks":       {module + "internal/httpapi", sdk + "secretsmanager", sdk + "s3"},
}

// Each function's dependency closure (what `go build` links into its
// binary) holds the runtime packages it needs and nothing local-only or
// test-only.
func TestDependencyClosure(t *testing.T) {
	for fn, needs := range map[string][]string{
		"api":            {"internal/httpapi", "internal/webhook/secretbox", "internal/store", "internal/cursor", "internal/ddb", "internal/awsenv", "internal/apigw", "lambda/fnconfig"},
		"authorizer":     {"internal/apikey", "internal/ddb", "internal/awsenv", "internal/apigw", "lambda/fnconfig"},
		"streamconsumer": {"internal/streamconsumer", "internal/ddb", "internal/awsenv", "lambda/fnconfig"},
		"archiver":       {"internal/archive", "internal/ddb", "internal/awsenv", "lambda/fnconfig"},
		"webhooks":       {"internal/webhook/dispatch", "internal/webhook", "internal/webhook/secretbox", "internal/store", "internal/ddb", "internal/awsenv", "lambda/fnconfig"},
	} {
		t.Run(fn, func(t *testing.T) {
			out, err := exec.Command("go", "list", "-deps", "./"+fn).CombinedOutput()
			require.NoError(t, err, "%s", out)
			deps := strings.Fields(string(out))
			require.Contains(t, deps, module+"lambda/"+fn, "go list ran on the function")
			for _, n := range needs {
				assert.Contains(t, deps, module+n)
			}
			// Each links only what it runs (binary size and init time,
			// docs/performance.md "Cold start").
			for _, d := range deps {
				for _, no := range unneeded[fn] {
					assert.False(t, d == no || strings.HasPrefix(d, no+"/"), "lambda/%s links %s, which it does not run", fn, d)
				}
			}
			for _, d := range deps {
				for _, c := range sdkConfig {
					assert.False(t, d == c || strings.HasPrefix(d, c+"/"), "lambda/%s links %s (the SDK's config loader or credential chain: use internal/awsenv)", fn, d)
				}
			}
			for _, d := range deps {
				for _, f := range forbidden {
					assert.False(t, d == f || strings.HasPrefix(d, f), "lambda/%s links %s (%s is local-only or test-only)", fn, d, f)
				}
			}
		})
	}
}

// lambda/fnconfig, linked by every function, compiles no regexp in its
// package init (a bounded repetition such as {1,61} cost every cold start
// 0.2 ms).
func TestConfigCompilesNoRegexp(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", "{{join .Imports \" \"}}", "./fnconfig").CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.NotContains(t, strings.Fields(string(out)), "regexp")
}

// The check itself can fail: the local development server's closure holds
// the packages the functions must not.
func TestClosureCheckSeesLocalPackages(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "../cmd/triggers-dev").CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, strings.Fields(string(out)), module+"internal/dev/devenv")
	assert.Contains(t, strings.Fields(string(out)), module+"internal/ddb/ddblocal")
	assert.Contains(t, strings.Fields(string(out)), "github.com/aws/aws-sdk-go-v2/config")
}
