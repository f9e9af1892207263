package triggersapi_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigateway"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3"
	"github.com/aws/jsii-runtime-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/constructs/dynamotable"
	"github.com/triggers-dev/triggers/constructs/eventstore"
	"github.com/triggers-dev/triggers/constructs/golambda"
	"github.com/triggers-dev/triggers/constructs/triggersapi"
	"github.com/triggers-dev/triggers/contract"
	_ "github.com/triggers-dev/triggers/internal/synth/jsiienv"
	"github.com/triggers-dev/triggers/internal/synth/jsiirt"
	"github.com/triggers-dev/triggers/schema"
)

func TestMain(m *testing.M) { jsiirt.RunTests(m) }

// newApp returns an app that skips bundling the functions.
func newApp() awscdk.App {
	ctx := map[string]any{"aws:cdk:bundling-stacks": []any{}}
	return awscdk.NewApp(&awscdk.AppProps{Context: &ctx})
}

func TestValidatePropsRejects(t *testing.T) {
	secs := func(n float64) awscdk.Duration { return awscdk.Duration_Seconds(jsii.Number(n)) }
	// A number known at deploy time only (a parameter's): a token.
	param := func() float64 {
		return *awscdk.NewCfnParameter(awscdk.NewStack(newApp(), jsii.String("P"), nil), jsii.String("N"), &awscdk.CfnParameterProps{Type: jsii.String("Number")}).ValueAsNumber()
	}
	tables := awscdk.NewStack(newApp(), jsii.String("Tables"), nil)
	events := eventstore.NewEventsTable(tables, jsii.String("Events"), nil)
	noIndex := schema.APIKeys()
	noIndex.GlobalIndexes = nil
	keysWithoutIndex := dynamotable.NewTable(tables, jsii.String("KeysWithoutIndex"), &dynamotable.TableProps{Schema: &noIndex})
	tests := []struct {
		name  string
		props triggersapi.TriggersApiProps
		want  string
	}{
		// Found by review: the events table given as the API-keys table
		// synthesized, and every request would have failed.
		{"events table as the API-keys table", triggersapi.TriggersApiProps{ApiKeysTable: events},
			`ApiKeysTable (schema "events") is not an API-keys table: its partition key is user_id (S), not key_hash (S); the authorizer looks keys up by key_hash, so every request would fail: give NewApiKeysTable or FromApiKeysTableAttributes, or a table of schema.APIKeys(), or leave it unset for a new one`},
		{"API-keys table without the tenant index", triggersapi.TriggersApiProps{ApiKeysTable: keysWithoutIndex},
			`ApiKeysTable (schema "apikeys") is not an API-keys table: it has no index TenantIndex;`},
		{"cache above an hour", triggersapi.TriggersApiProps{AuthorizerCacheTtl: secs(3601)}, "AuthorizerCacheTtl 3601 seconds is outside 0-3600"},
		{"negative rate", triggersapi.TriggersApiProps{ThrottlingRateLimit: -1}, "ThrottlingRateLimit -1 is negative"},
		{"negative burst", triggersapi.TriggersApiProps{ThrottlingBurstLimit: -5, ThrottlingRateLimit: 1}, "ThrottlingBurstLimit -5 is negative"},
		{"burst below rate", triggersapi.TriggersApiProps{ThrottlingRateLimit: 500}, "ThrottlingBurstLimit 200 is below ThrottlingRateLimit 500"},
		// Found by review: 250.5 synthesized a stage whose
		// ThrottlingBurstLimit CloudFormation refuses at deploy (an integer).
		{"fractional burst", triggersapi.TriggersApiProps{ThrottlingBurstLimit: 250.5},
			"ThrottlingBurstLimit 250.5 is not a whole number: API Gateway's burst is a number of requests; give one such as 251"},
		{"retention zero days", triggersapi.TriggersApiProps{RetentionDays: -2}, "RetentionDays -2 is outside 1-3650"},
		{"retention too long", triggersapi.TriggersApiProps{RetentionDays: 4000}, "RetentionDays 4000 is outside 1-3650"},
		{"bad stage name", triggersapi.TriggersApiProps{StageName: "prod stage"}, `StageName "prod stage" is invalid`},
		{"tiny memory", triggersapi.TriggersApiProps{ApiFunction: &triggersapi.FunctionOptions{MemoryMiB: 64}}, "ApiFunction.MemoryMiB 64 is outside 128-10240"},
		{"huge authorizer memory", triggersapi.TriggersApiProps{AuthorizerFunction: &triggersapi.FunctionOptions{MemoryMiB: 20000}}, "AuthorizerFunction.MemoryMiB 20000 is outside 128-10240"},
		{"receive count", triggersapi.TriggersApiProps{Delivery: &triggersapi.DeliveryOptions{MaxReceiveCount: 5000}}, "Delivery.MaxReceiveCount 5000 is outside 1-1000"},
		// Found by review: ValidateProps passed these, and the construct
		// failed in the CDK's words about "Queue2" (a 30 s retention) or
		// "'1500 millis' cannot be converted into a whole number of
		// seconds", naming neither the prop nor the fix.
		{"visibility in milliseconds", triggersapi.TriggersApiProps{Delivery: &triggersapi.DeliveryOptions{QueueVisibilityTimeout: awscdk.Duration_Millis(jsii.Number(1500))}},
			"Delivery.QueueVisibilityTimeout 1.5s is not whole seconds from 0s to 12h0m0s: SQS hides a received message whole seconds, at most 12 hours; give one such as 2s"},
		{"visibility over 12 hours", triggersapi.TriggersApiProps{Delivery: &triggersapi.DeliveryOptions{QueueVisibilityTimeout: awscdk.Duration_Hours(jsii.Number(13))}, Webhooks: &triggersapi.WebhookOptions{}},
			"Delivery.QueueVisibilityTimeout 13h0m0s is not whole seconds from 0s to 12h0m0s"},
		{"retention under a minute", triggersapi.TriggersApiProps{Delivery: &triggersapi.DeliveryOptions{QueueRetention: secs(30)}},
			"Delivery.QueueRetention 30s is not whole seconds from 1m0s to 336h0m0s: SQS keeps messages whole seconds, 1 minute to 14 days; give one such as 1m0s"},
		{"retention over 14 days", triggersapi.TriggersApiProps{Delivery: &triggersapi.DeliveryOptions{QueueRetention: awscdk.Duration_Days(jsii.Number(15))}},
			"Delivery.QueueRetention 360h0m0s is not whole seconds from 1m0s to 336h0m0s"},
		{"fractional receive count", triggersapi.TriggersApiProps{Delivery: &triggersapi.DeliveryOptions{MaxReceiveCount: 2.5}}, "Delivery.MaxReceiveCount 2.5 is outside 1-1000: give how many times a message is received before it moves to the dead-letter queue, a whole number"},
		{"negative reserved concurrency", triggersapi.TriggersApiProps{ApiFunction: &triggersapi.FunctionOptions{ReservedConcurrency: jsii.Number(-1)}}, "ApiFunction.ReservedConcurrency -1 is not a whole number >= 0"},
		{"consumer on an architecture Lambda lacks", triggersapi.TriggersApiProps{Delivery: &triggersapi.DeliveryOptions{Function: &triggersapi.FunctionOptions{
			Architecture: awslambda.Architecture_Custom(jsii.String("riscv64"), jsii.String("linux/riscv64"))}}}, `Delivery.Function.Architecture "riscv64" is not one Lambda runs`},
		{"webhook provisioned above reserved", triggersapi.TriggersApiProps{Webhooks: &triggersapi.WebhookOptions{Function: &triggersapi.FunctionOptions{ProvisionedConcurrency: 31}}}, "Webhooks.Function.ProvisionedConcurrency 31 is above ReservedConcurrency 30"},
		{"authorizer variable Lambda reserves", triggersapi.TriggersApiProps{AuthorizerFunction: &triggersapi.FunctionOptions{Environment: map[string]*string{"AWS_REGION": jsii.String("x")}}}, `AuthorizerFunction.Environment "AWS_REGION" is reserved by Lambda`},
		{"rate limit and own web ACL", triggersapi.TriggersApiProps{WebAclArn: jsii.String("arn:aws:wafv2:us-east-1:1:regional/webacl/x/y"), RateLimit: &triggersapi.RateLimitOptions{RequestsPerKey: 100}}, "RateLimit and WebAclArn are both set"},
		{"per-key limit below WAF's minimum", triggersapi.TriggersApiProps{RateLimit: &triggersapi.RateLimitOptions{RequestsPerKey: 5}}, "RateLimit.RequestsPerKey 5 is outside 10-2000000000"},
		{"fractional per-IP limit", triggersapi.TriggersApiProps{RateLimit: &triggersapi.RateLimitOptions{RequestsPerIP: 100.5}}, "RateLimit.RequestsPerIP 100.5 is outside"},
		// Found by review: these synthesized a deployment that could not
		// work (functions refusing their configuration at every start, a
		// writer region no API is in), or failed with a message naming a
		// token's placeholder value.
		{"retention from a parameter", triggersapi.TriggersApiProps{RetentionDays: param()}, "RetentionDays is a token: give a literal number of days, 1-3650"},
		{"cache TTL from a parameter", triggersapi.TriggersApiProps{AuthorizerCacheTtl: awscdk.Duration_Seconds(jsii.Number(param()))}, "AuthorizerCacheTtl is a token: give a literal duration of 0-3600 whole seconds"},
		{"cache TTL in milliseconds", triggersapi.TriggersApiProps{AuthorizerCacheTtl: awscdk.Duration_Millis(jsii.Number(1500))}, "AuthorizerCacheTtl 1500 ms is not a whole number of seconds"},
		{"window from a parameter", triggersapi.TriggersApiProps{RateLimit: &triggersapi.RateLimitOptions{Window: awscdk.Duration_Minutes(jsii.Number(param()))}}, "RateLimit.Window is a token: give a literal duration of 1, 2, 5 or 10 minutes"},
		{"AWS namespace", triggersapi.TriggersApiProps{MetricsNamespace: "AWS/Triggers"}, `MetricsNamespace: metrics namespace "AWS/Triggers" starts with AWS/`},
		// Found by review: it failed naming the placeholder's '$'.
		{"namespace from a parameter", triggersapi.TriggersApiProps{MetricsNamespace: *awscdk.NewCfnParameter(awscdk.NewStack(newApp(), jsii.String("NS"), nil), jsii.String("Namespace"), nil).ValueAsString()},
			"MetricsNamespace is a token: give a literal namespace, or leave it unset for Triggers/<stack name> (it is checked at synth, since the functions refuse a bad one at every start, and compared with the stack's other namespaces)"},
		{"writer region typo", triggersapi.TriggersApiProps{WriterRegion: "us-east1"}, `WriterRegion "us-east1" is not a region name`},
		{"window WAF does not support", triggersapi.TriggersApiProps{RateLimit: &triggersapi.RateLimitOptions{Window: awscdk.Duration_Minutes(jsii.Number(3))}}, "RateLimit.Window 180 seconds is not one of 1, 2, 5 or 10 minutes"},
		// CORS origins that would never match what browsers send.
		{"CORS origin with a trailing slash", triggersapi.TriggersApiProps{Cors: &awsapigateway.CorsOptions{AllowOrigins: jsii.Strings("https://app.example.com/")}},
			`Cors: CORS origin "https://app.example.com/" has a path: browsers send none (not even a trailing slash), so it would never match: use https://app.example.com`},
		{"CORS * among origins", triggersapi.TriggersApiProps{Cors: &awsapigateway.CorsOptions{AllowOrigins: jsii.Strings("*", "https://a.example")}}, "mix * with others"},
		{"CORS * with credentials", triggersapi.TriggersApiProps{Cors: &awsapigateway.CorsOptions{AllowOrigins: jsii.Strings("*"), AllowCredentials: jsii.Bool(true)}}, "CORS allows any origin (*) with credentials: browsers refuse a preflight"},
		{"CORS default port", triggersapi.TriggersApiProps{Cors: &awsapigateway.CorsOptions{AllowOrigins: jsii.Strings("https://app.example.com:443")}}, "names the scheme's default port"},
		{"CORS origin from a parameter", triggersapi.TriggersApiProps{Cors: &awsapigateway.CorsOptions{AllowOrigins: &[]*string{
			awscdk.NewCfnParameter(awscdk.NewStack(newApp(), jsii.String("O"), nil), jsii.String("Origin"), nil).ValueAsString()}}}, "Cors has a token among AllowOrigins or ExposeHeaders"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := triggersapi.ValidateProps(&tt.props)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
			stack := awscdk.NewStack(newApp(), jsii.String("S"), nil)
			assert.PanicsWithError(t, `triggersapi "Api": invalid props:`+"\n"+err.Error(), func() {
				triggersapi.NewTriggersApi(stack, jsii.String("Api"), &tt.props)
			})
		})
	}
}

func TestValidatePropsAccepts(t *testing.T) {
	assert.NoError(t, triggersapi.ValidateProps(&triggersapi.TriggersApiProps{}))
	assert.NoError(t, triggersapi.ValidateProps(&triggersapi.TriggersApiProps{
		AuthorizerCacheTtl: awscdk.Duration_Hours(jsii.Number(1)), ThrottlingRateLimit: 10, ThrottlingBurstLimit: 10,
		RetentionDays: 3650, StageName: "prod_2",
		RateLimit: &triggersapi.RateLimitOptions{RequestsPerKey: 10, RequestsPerIP: 2e9, Window: awscdk.Duration_Minutes(jsii.Number(10))},
	}))
	tables := awscdk.NewStack(newApp(), jsii.String("Tables"), nil)
	keys := schema.APIKeys()
	keys.Name = "platform-keys"
	for _, table := range []dynamotable.ITable{
		triggersapi.NewApiKeysTable(tables, jsii.String("Keys"), nil),
		triggersapi.FromApiKeysTableAttributes(tables, jsii.String("Imported"), &triggersapi.ApiKeysTableAttributes{TableName: jsii.String("keys")}),
		dynamotable.NewTable(tables, jsii.String("Own"), &dynamotable.TableProps{Schema: &keys}),
	} {
		assert.NoError(t, triggersapi.ValidateProps(&triggersapi.TriggersApiProps{ApiKeysTable: table}), "an API-keys table")
	}
	assert.NoError(t, triggersapi.ValidateProps(&triggersapi.TriggersApiProps{
		WebAclArn: jsii.String("arn:aws:wafv2:us-east-1:1:regional/webacl/x/y"), RateLimit: &triggersapi.RateLimitOptions{Disabled: true},
	}), "an own web ACL with the built-in limits turned off")
	n := *awscdk.NewCfnParameter(awscdk.NewStack(newApp(), jsii.String("P"), nil), jsii.String("N"), &awscdk.CfnParameterProps{Type: jsii.String("Number")}).ValueAsNumber()
	assert.NoError(t, triggersapi.ValidateProps(&triggersapi.TriggersApiProps{Delivery: &triggersapi.DeliveryOptions{
		QueueVisibilityTimeout: awscdk.Duration_Seconds(&n), QueueRetention: awscdk.Duration_Seconds(&n),
	}}), "queue durations from a parameter are left to CloudFormation")
	assert.NoError(t, triggersapi.ValidateProps(&triggersapi.TriggersApiProps{Delivery: &triggersapi.DeliveryOptions{
		QueueVisibilityTimeout: awscdk.Duration_Hours(jsii.Number(12)), QueueRetention: awscdk.Duration_Days(jsii.Number(14)),
	}}), "SQS's limits themselves")
}

// A function's own variables cannot override the construct's.
func TestFunctionEnvironmentCannotOverrideTheConstructs(t *testing.T) {
	stack := awscdk.NewStack(newApp(), jsii.String("S"), nil)
	assert.PanicsWithError(t, `triggersapi ApiFunction: Environment "`+contract.EnvEventsTable+`" is set by the construct (the function reads it): remove it, or use the construct's prop for it`, func() {
		triggersapi.NewTriggersApi(stack, jsii.String("Api"), &triggersapi.TriggersApiProps{
			ApiFunction: &triggersapi.FunctionOptions{Environment: map[string]*string{contract.EnvEventsTable: jsii.String("other")}},
		})
	})
}

// The key sources follow the cache: the functions and the 401 agree with
// what API Gateway caches on.
func TestKeySourcesFollowTheAuthorizerCache(t *testing.T) {
	for _, tt := range []struct {
		ttl  awscdk.Duration
		want contract.KeySources
	}{
		{nil, contract.KeySourcesBearer},
		{awscdk.Duration_Seconds(jsii.Number(30)), contract.KeySourcesBearer},
		{awscdk.Duration_Seconds(jsii.Number(0)), contract.KeySourcesBearerOrHeader},
	} {
		stack := awscdk.NewStack(newApp(), jsii.String("S"), nil)
		api := triggersapi.NewTriggersApi(stack, jsii.String("Api"), &triggersapi.TriggersApiProps{AuthorizerCacheTtl: tt.ttl})
		assert.Equal(t, tt.want, api.KeySources())
		tmpl := assertions.Template_FromStack(stack, nil)
		for _, fn := range []string{"ApiApiFunction", "ApiAuthorizerFunction"} {
			fns := tmpl.FindResources(jsii.String("AWS::Lambda::Function"), nil)
			found := false
			for id, r := range *fns {
				if len(id) > len(fn) && id[:len(fn)] == fn && id[len(fn)] != 'L' && id[len(fn)] != 'S' {
					vars := (*r)["Properties"].(map[string]any)["Environment"].(map[string]any)["Variables"].(map[string]any)
					assert.Equal(t, string(tt.want), vars[contract.EnvAPIKeySources], id)
					found = true
				}
			}
			assert.True(t, found, fn)
		}
		tmpl.HasResourceProperties(jsii.String("AWS::ApiGateway::GatewayResponse"), map[string]any{
			"ResponseType":      "UNAUTHORIZED",
			"ResponseTemplates": map[string]any{"application/json": assertions.Match_StringLikeRegexp(jsii.String(regexp.QuoteMeta(tt.want.Hint())))},
		})
	}
}

// The construct is a real jsii construct: it takes tags, which reach its
// resources.
func TestTagsReachResources(t *testing.T) {
	stack := awscdk.NewStack(newApp(), jsii.String("S"), nil)
	api := triggersapi.NewTriggersApi(stack, jsii.String("Api"), nil)
	awscdk.Tags_Of(api).Add(jsii.String("team"), jsii.String("platform"), nil)
	tmpl := assertions.Template_FromStack(stack, nil)
	tmpl.AllResourcesProperties(jsii.String("AWS::Lambda::Function"), map[string]any{
		"Tags": assertions.Match_ArrayWith(&[]any{map[string]any{"Key": "team", "Value": "platform"}}),
	})
	tmpl.AllResourcesProperties(jsii.String("AWS::DynamoDB::Table"), map[string]any{
		"Tags": assertions.Match_ArrayWith(&[]any{map[string]any{"Key": "team", "Value": "platform"}}),
	})
}

// A whole Triggers service in one stack: the construct creates both tables
// when none are given. (Bundling is skipped in this example; cdk synth
// builds the three Go functions.)
func ExampleNewTriggersApi() {
	ctx := map[string]any{"aws:cdk:bundling-stacks": []any{}}
	app := awscdk.NewApp(&awscdk.AppProps{Context: &ctx})
	stack := awscdk.NewStack(app, jsii.String("Triggers"), nil)

	api := triggersapi.NewTriggersApi(stack, jsii.String("Api"), &triggersapi.TriggersApiProps{
		ThrottlingRateLimit:  50,
		ThrottlingBurstLimit: 100,
	})
	awscdk.NewCfnOutput(stack, jsii.String("Url"), &awscdk.CfnOutputProps{Value: api.Url()})

	tmpl := assertions.Template_FromStack(stack, nil)
	count := func(typ string) int { return len(*tmpl.FindResources(jsii.String(typ), nil)) }
	fmt.Println("functions:", count("AWS::Lambda::Function"))
	fmt.Println("routes:", count("AWS::ApiGateway::Method"))
	fmt.Println("tables:", count("AWS::DynamoDB::Table"))
	fmt.Println("queues:", count("AWS::SQS::Queue"))
	// Output:
	// functions: 3
	// routes: 30
	// tables: 2
	// queues: 3
}

// prebuiltDir writes dir/<fn>/bootstrap for each named function: a tiny
// linux/arm64 binary (Lambda never runs it in tests).
func prebuiltDir(t *testing.T, fns ...string) string {
	t.Helper()
	src := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(src, "go.mod"), []byte("module example.com/tiny\n\ngo 1.22\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(src, "main.go"), []byte("package main\n\nfunc main() {}\n"), 0o644))
	bin := filepath.Join(src, "bootstrap")
	cmd := exec.Command("go", golambda.BuildCommand(".", bin)...)
	cmd.Dir = src
	cmd.Env = append(os.Environ(), golambda.BuildEnv()...)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	raw, err := os.ReadFile(bin)
	require.NoError(t, err)
	dir := t.TempDir()
	for _, fn := range fns {
		require.NoError(t, os.MkdirAll(filepath.Join(dir, fn), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, fn, "bootstrap"), raw, 0o755))
	}
	return dir
}

// With prebuilt binaries (a directory, or a function's own Code), no Go
// command runs at synth: a go on PATH that only records its calls is never
// called, and every function's code is the prebuilt one.
func TestPrebuiltFunctionsRunNoGo(t *testing.T) {
	dir := prebuiltDir(t, "authorizer", "streamconsumer")
	fake := t.TempDir()
	calls := filepath.Join(fake, "calls")
	require.NoError(t, os.WriteFile(filepath.Join(fake, "go"), []byte("#!/bin/sh\necho \"$@\" >> "+calls+"\nexit 1\n"), 0o755))
	t.Setenv("PATH", fake+string(os.PathListSeparator)+os.Getenv("PATH"))

	stack := awscdk.NewStack(newApp(), jsii.String("S"), nil)
	bucket := awss3.Bucket_FromBucketName(stack, jsii.String("Artifacts"), jsii.String("ci-artifacts"))
	triggersapi.NewTriggersApi(stack, jsii.String("Api"), &triggersapi.TriggersApiProps{
		PrebuiltDir: dir,
		ApiFunction: &triggersapi.FunctionOptions{Code: awslambda.Code_FromBucket(bucket, jsii.String("api/v1.2.3.zip"), nil), MemoryMiB: 512},
	})
	tmpl := assertions.Template_FromStack(stack, nil)
	tmpl.ResourceCountIs(jsii.String("AWS::Lambda::Function"), jsii.Number(3))
	tmpl.HasResourceProperties(jsii.String("AWS::Lambda::Function"), map[string]any{
		"Code":       map[string]any{"S3Bucket": "ci-artifacts", "S3Key": "api/v1.2.3.zip"},
		"MemorySize": 512, "Description": "Triggers HTTP API v1",
	})
	for _, desc := range []string{"Triggers API-key authorizer", "Triggers stream consumer: new events to the delivery queue"} {
		tmpl.HasResourceProperties(jsii.String("AWS::Lambda::Function"), map[string]any{
			"Description": desc,
			"Code":        map[string]any{"S3Key": assertions.Match_StringLikeRegexp(jsii.String(`^[a-f0-9]{64}\.zip$`))},
		})
	}
	_, err := os.Stat(calls)
	assert.True(t, os.IsNotExist(err), "go was run: %v", err)
}

func TestPrebuiltDirValidation(t *testing.T) {
	dir := prebuiltDir(t, "api", "streamconsumer")
	err := triggersapi.ValidateProps(&triggersapi.TriggersApiProps{PrebuiltDir: dir})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "PrebuiltDir: no prebuilt binary at "+filepath.Join(dir, "authorizer", "bootstrap"))
	assert.Contains(t, err.Error(), "the main package is "+triggersapi.AuthorizerPackage)
	assert.NotContains(t, err.Error(), filepath.Join(dir, "api"), "the binaries present pass")

	stack := awscdk.NewStack(newApp(), jsii.String("S"), nil)
	assert.PanicsWithError(t, `triggersapi "Api": invalid props:`+"\n"+err.Error(), func() {
		triggersapi.NewTriggersApi(stack, jsii.String("Api"), &triggersapi.TriggersApiProps{PrebuiltDir: dir})
	})
	assert.NoError(t, triggersapi.ValidateProps(&triggersapi.TriggersApiProps{
		PrebuiltDir:        dir,
		AuthorizerFunction: &triggersapi.FunctionOptions{Code: awslambda.Code_FromBucket(awss3.Bucket_FromBucketName(stack, jsii.String("B"), jsii.String("ci-artifacts")), jsii.String("authorizer.zip"), nil)},
	}), "a function's own Code needs no binary in PrebuiltDir")

	// A prebuilt binary must match its function's architecture.
	all := prebuiltDir(t, "api", "authorizer", "streamconsumer")
	assert.NoError(t, triggersapi.ValidateProps(&triggersapi.TriggersApiProps{PrebuiltDir: all}))
	err = triggersapi.ValidateProps(&triggersapi.TriggersApiProps{PrebuiltDir: all,
		AuthorizerFunction: &triggersapi.FunctionOptions{Architecture: awslambda.Architecture_X86_64()}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), filepath.Join(all, "authorizer", "bootstrap")+" is built for EM_AARCH64, not linux/amd64 (the function runs on x86_64)")
	assert.NotContains(t, err.Error(), filepath.Join(all, "api"), "the arm64 functions take their arm64 binaries")
}

// With CloudWatchRole nil the CDK's feature flag decides, as for its own
// RestApi, and a missing role is a synth warning; an explicit value wins
// and says the deployer knows.
func TestCloudWatchRoleFollowsTheFeatureFlag(t *testing.T) {
	for _, tt := range []struct {
		name        string
		flag        any // nil: unset
		prop        *bool
		role, warns bool
	}{
		{"flag unset: the CDK's default creates it", nil, nil, true, false},
		{"flag false", false, nil, true, false},
		{"flag true: none, and a warning", true, nil, false, true},
		{"flag true, asked for", true, jsii.Bool(true), true, false},
		{"flag false, the account has one", false, jsii.Bool(false), false, false},
		{"flag true, the account has one", true, jsii.Bool(false), false, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := map[string]any{"aws:cdk:bundling-stacks": []any{}}
			if tt.flag != nil {
				ctx[triggersapi.FlagDisableCloudWatchRole] = tt.flag
			}
			stack := awscdk.NewStack(awscdk.NewApp(&awscdk.AppProps{Context: &ctx}), jsii.String("S"), nil)
			triggersapi.NewTriggersApi(stack, jsii.String("Api"), &triggersapi.TriggersApiProps{CloudWatchRole: tt.prop})
			tmpl := assertions.Template_FromStack(stack, nil)
			n := 0.0
			if tt.role {
				n = 1
			}
			tmpl.ResourceCountIs(jsii.String("AWS::ApiGateway::Account"), jsii.Number(n))
			warnings := assertions.Annotations_FromStack(stack).FindWarning(jsii.String("*"),
				assertions.Match_StringLikeRegexp(jsii.String("no API Gateway CloudWatch role is created")))
			assert.Equal(t, tt.warns, len(*warnings) > 0)
		})
	}
}

// Two APIs in one stack would share the default runtime metrics
// namespace, Triggers/<stack name>, mixing their metrics and alarms (found
// by review): the second fails synth naming the fix, unless it has a
// namespace of its own. One API per stack keeps the default.
func TestTwoApisInOneStackNeedTheirOwnNamespace(t *testing.T) {
	stack := awscdk.NewStack(newApp(), jsii.String("platform"), nil)
	a := triggersapi.NewTriggersApi(stack, jsii.String("TeamA"), nil)
	assert.Equal(t, "Triggers/platform", a.MetricsNamespace())
	assert.PanicsWithError(t, `triggersapi "TeamB": its metrics namespace "Triggers/platform" is that of TriggersApi "platform/TeamA" in the same stack: their runtime metrics and alarms would mix; give this one its own MetricsNamespace, such as "Triggers/platform/TeamB" (Triggers/<stack name> is the default of one API per stack)`, func() {
		triggersapi.NewTriggersApi(stack, jsii.String("TeamB"), nil)
	})
	assert.Panics(t, func() {
		triggersapi.NewTriggersApi(stack, jsii.String("TeamC"), &triggersapi.TriggersApiProps{MetricsNamespace: "Triggers/platform"})
	}, "an explicit namespace equal to the other's")
	b := triggersapi.NewTriggersApi(stack, jsii.String("TeamD"), &triggersapi.TriggersApiProps{MetricsNamespace: "Triggers/platform/TeamD"})
	assert.Equal(t, "Triggers/platform/TeamD", b.MetricsNamespace())
}

// The RestApi's name (the ApiName dimension) and the web ACL's metric
// name follow the stack's name, not its construct id: dev and prod
// deployed from one stack id under different stack names get metrics of
// their own (found by review: both were "TriggersApi-Triggers"). A stack
// named after its id, in an app or a stage, keeps the name it had.
func TestApiNameFollowsTheStackName(t *testing.T) {
	restApiName := func(stack awscdk.Stack) string {
		_, p := only(t, templateOf(stack), "AWS::ApiGateway::RestApi", "")
		return p["Name"].(string)
	}
	for _, c := range []struct {
		stackName, want string
	}{
		{"triggers-dev-api", "triggers-dev-api-Triggers"},
		{"triggers-prod-api", "triggers-prod-api-Triggers"},
		{"", "TriggersApi-Triggers"},
	} {
		var props *awscdk.StackProps
		if c.stackName != "" {
			props = &awscdk.StackProps{StackName: jsii.String(c.stackName)}
		}
		stack := awscdk.NewStack(newApp(), jsii.String("TriggersApi"), props)
		api := triggersapi.NewTriggersApi(stack, jsii.String("Triggers"), nil)
		assert.Equal(t, c.want, restApiName(stack), c.stackName)
		assert.Equal(t, "TriggersRateLimits-"+c.want, api.WafMetricName(), c.stackName)
	}
	stage := awscdk.NewStage(newApp(), jsii.String("Prod"), nil)
	stack := awscdk.NewStack(stage, jsii.String("Api"), nil)
	triggersapi.NewTriggersApi(stack, jsii.String("Triggers"), nil)
	assert.Equal(t, "Prod-Api-Triggers", restApiName(stack), "a stack in a stage, named Prod-Api")
}
