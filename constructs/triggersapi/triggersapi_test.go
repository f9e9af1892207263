package triggersapi_test

import (
	"fmt"
	"os"
	"regexp"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/constructs/triggersapi"
	"github.com/triggers-dev/triggers/internal/apikey"
	_ "github.com/triggers-dev/triggers/internal/jsiienv"
	"github.com/triggers-dev/triggers/internal/jsiirt"
)

func TestMain(m *testing.M) {
	code := m.Run()
	jsiirt.Close()
	os.Exit(code)
}

// newApp returns an app that skips bundling the functions.
func newApp() awscdk.App {
	ctx := map[string]any{"aws:cdk:bundling-stacks": []any{}}
	return awscdk.NewApp(&awscdk.AppProps{Context: &ctx})
}

func TestValidatePropsRejects(t *testing.T) {
	secs := func(n float64) awscdk.Duration { return awscdk.Duration_Seconds(jsii.Number(n)) }
	tests := []struct {
		name  string
		props triggersapi.TriggersApiProps
		want  string
	}{
		{"cache above an hour", triggersapi.TriggersApiProps{AuthorizerCacheTtl: secs(3601)}, "AuthorizerCacheTtl 3601 seconds is outside 0-3600"},
		{"negative rate", triggersapi.TriggersApiProps{ThrottlingRateLimit: -1}, "ThrottlingRateLimit -1 is negative"},
		{"negative burst", triggersapi.TriggersApiProps{ThrottlingBurstLimit: -5, ThrottlingRateLimit: 1}, "ThrottlingBurstLimit -5 is negative"},
		{"burst below rate", triggersapi.TriggersApiProps{ThrottlingRateLimit: 500}, "ThrottlingBurstLimit 200 is below ThrottlingRateLimit 500"},
		{"retention zero days", triggersapi.TriggersApiProps{RetentionDays: -2}, "RetentionDays -2 is outside 1-3650"},
		{"retention too long", triggersapi.TriggersApiProps{RetentionDays: 4000}, "RetentionDays 4000 is outside 1-3650"},
		{"bad stage name", triggersapi.TriggersApiProps{StageName: "prod stage"}, `StageName "prod stage" is invalid`},
		{"tiny memory", triggersapi.TriggersApiProps{ApiFunction: &triggersapi.FunctionOptions{MemoryMiB: 64}}, "ApiFunction.MemoryMiB 64 is outside 128-10240"},
		{"huge authorizer memory", triggersapi.TriggersApiProps{AuthorizerFunction: &triggersapi.FunctionOptions{MemoryMiB: 20000}}, "AuthorizerFunction.MemoryMiB 20000 is outside 128-10240"},
		{"receive count", triggersapi.TriggersApiProps{Delivery: &triggersapi.DeliveryOptions{MaxReceiveCount: 5000}}, "Delivery.MaxReceiveCount 5000 is outside 1-1000"},
		{"rate limit and own web ACL", triggersapi.TriggersApiProps{WebAclArn: jsii.String("arn:aws:wafv2:us-east-1:1:regional/webacl/x/y"), RateLimit: &triggersapi.RateLimitOptions{RequestsPerKey: 100}}, "RateLimit and WebAclArn are both set"},
		{"per-key limit below WAF's minimum", triggersapi.TriggersApiProps{RateLimit: &triggersapi.RateLimitOptions{RequestsPerKey: 5}}, "RateLimit.RequestsPerKey 5 is outside 10-2000000000"},
		{"fractional per-IP limit", triggersapi.TriggersApiProps{RateLimit: &triggersapi.RateLimitOptions{RequestsPerIP: 100.5}}, "RateLimit.RequestsPerIP 100.5 is outside"},
		{"window WAF does not support", triggersapi.TriggersApiProps{RateLimit: &triggersapi.RateLimitOptions{Window: awscdk.Duration_Minutes(jsii.Number(3))}}, "RateLimit.Window 180 seconds is not one of 1, 2, 5 or 10 minutes"},
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
	assert.NoError(t, triggersapi.ValidateProps(&triggersapi.TriggersApiProps{
		WebAclArn: jsii.String("arn:aws:wafv2:us-east-1:1:regional/webacl/x/y"), RateLimit: &triggersapi.RateLimitOptions{Disabled: true},
	}), "an own web ACL with the built-in limits turned off")
}

// The key sources follow the cache: the functions and the 401 agree with
// what API Gateway caches on.
func TestKeySourcesFollowTheAuthorizerCache(t *testing.T) {
	for _, tt := range []struct {
		ttl  awscdk.Duration
		want apikey.Sources
	}{
		{nil, apikey.SourceBearer},
		{awscdk.Duration_Seconds(jsii.Number(30)), apikey.SourceBearer},
		{awscdk.Duration_Seconds(jsii.Number(0)), apikey.SourceBearerOrHeader},
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
					assert.Equal(t, string(tt.want), vars[triggersapi.EnvAPIKeySources], id)
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
	// routes: 11
	// tables: 2
	// queues: 3
}
