package assertions

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/internal/testkit/cdktest"
)

// A TriggersApi with every option set: each reaches the template.
func TestApiOptions(t *testing.T) {
	tp := tmpl(t, stackApiOptions)

	t.Run("creates its own tables when none are given", func(t *testing.T) {
		assert.Len(t, cdktest.Resources(tp, "AWS::DynamoDB::Table"), 2)
		one(t, tp, "AWS::DynamoDB::Table", "TriggersEvents")
		one(t, tp, "AWS::DynamoDB::Table", "TriggersApiKeys")
	})
	t.Run("authorizer without cache has no identity source", func(t *testing.T) {
		_, auth := one(t, tp, "AWS::ApiGateway::Authorizer", "TriggersAuthorizer")
		p := cdktest.Props(auth)
		assert.Equal(t, 0.0, p["AuthorizerResultTtlInSeconds"])
		assert.NotContains(t, p, "IdentitySource", "X-Api-Key works too: the authorizer reads both headers")
		for _, fn := range []string{"TriggersApiFunction", "TriggersAuthorizerFunction"} {
			_, f := one(t, tp, "AWS::Lambda::Function", fn)
			env := cdktest.Props(f)["Environment"].(map[string]any)["Variables"].(map[string]any)
			assert.Equal(t, "authorization,x-api-key", env["API_KEY_SOURCES"], fn)
		}
	})
	t.Run("stage", func(t *testing.T) {
		_, st := one(t, tp, "AWS::ApiGateway::Stage", "TriggersApiDeploymentStage")
		p := cdktest.Props(st)
		assert.Equal(t, "v1stage", p["StageName"])
		assert.Equal(t, true, p["TracingEnabled"])
		ms := p["MethodSettings"].([]any)[0].(map[string]any)
		assert.Equal(t, "INFO", ms["LoggingLevel"])
		assert.Equal(t, 50.0, ms["ThrottlingRateLimit"])
		assert.Equal(t, 75.0, ms["ThrottlingBurstLimit"])
		_, lg := one(t, tp, "AWS::Logs::LogGroup", "TriggersAccessLogs")
		assert.Equal(t, 90.0, cdktest.Props(lg)["RetentionInDays"])
		assert.Empty(t, cdktest.Resources(tp, "AWS::ApiGateway::Account"), "CloudWatchRole: false")
	})
	t.Run("CORS preflight on every resource", func(t *testing.T) {
		n := 0
		for _, m := range cdktest.Resources(tp, "AWS::ApiGateway::Method") {
			p := cdktest.Props(m)
			if p["HttpMethod"] == "OPTIONS" {
				n++
				assert.Equal(t, "NONE", p["AuthorizationType"], "preflight needs no key")
				assert.Contains(t, jsonOf(p["Integration"]), "https://app.example.com")
			}
		}
		// root, v1, events, batch, {event_id}, attempts, redeliver,
		// inbox, ack, subscriptions, {subscription_id}, rotate, attempts
		// (of a subscription), recover (of a subscription), openapi.json
		assert.Equal(t, 15, n, "the root and every resource")
		assert.Len(t, cdktest.Resources(tp, "AWS::ApiGateway::Resource"), n-1)
	})
	t.Run("CORS on the answers", func(t *testing.T) {
		// The preflight allows the API's own request headers.
		for _, m := range cdktest.Resources(tp, "AWS::ApiGateway::Method") {
			if p := cdktest.Props(m); p["HttpMethod"] == "OPTIONS" {
				assert.Contains(t, jsonOf(p["Integration"]), "Idempotency-Key,X-Correlation-Id")
				break
			}
		}
		// The function names the allowed origin in its answers.
		_, fn := one(t, tp, "AWS::Lambda::Function", "TriggersApiFunction")
		vars := cdktest.Props(fn)["Environment"].(map[string]any)["Variables"].(map[string]any)
		assert.Equal(t, "https://app.example.com", vars["CORS_ALLOW_ORIGINS"])
		assert.NotContains(t, vars, "CORS_ALLOW_CREDENTIALS")
		// So do API Gateway's own answers.
		for id, r := range cdktest.Resources(tp, "AWS::ApiGateway::GatewayResponse") {
			h := cdktest.Props(r)["ResponseParameters"].(map[string]any)
			assert.Equal(t, "'https://app.example.com'", h["gatewayresponse.header.Access-Control-Allow-Origin"], id)
			assert.Equal(t, "'Retry-After, X-Request-Id, X-Correlation-Id, Location'", h["gatewayresponse.header.Access-Control-Expose-Headers"], id)
			assert.Equal(t, "'Origin'", h["gatewayresponse.header.Vary"], id)
		}
	})
	t.Run("custom domain and web ACL", func(t *testing.T) {
		_, dn := one(t, tp, "AWS::ApiGateway::DomainName", "TriggersApiCustomDomain")
		assert.Equal(t, "api.example.com", cdktest.Props(dn)["DomainName"])
		assert.Len(t, cdktest.Resources(tp, "AWS::ApiGateway::BasePathMapping"), 1)
		_, waf := one(t, tp, "AWS::WAFv2::WebACLAssociation", "TriggersWebAcl")
		assert.Equal(t, "arn:aws:wafv2:us-east-1:111111111111:regional/webacl/triggers/abc", cdktest.Props(waf)["WebACLArn"])
		assert.Empty(t, cdktest.Resources(tp, "AWS::WAFv2::WebACL"), "the given web ACL replaces the rate-limit one")
	})
	t.Run("functions", func(t *testing.T) {
		_, fn := one(t, tp, "AWS::Lambda::Function", "TriggersApiFunction")
		p := cdktest.Props(fn)
		assert.Equal(t, 1024.0, p["MemorySize"])
		assert.Equal(t, 20.0, p["Timeout"])
		assert.Equal(t, 50.0, p["ReservedConcurrentExecutions"])
		assert.Equal(t, "7", p["Environment"].(map[string]any)["Variables"].(map[string]any)["RETENTION_DAYS"])
		for id, f := range cdktest.Resources(tp, "AWS::Lambda::Function") {
			assert.Equal(t, map[string]any{"Mode": "Active"}, cdktest.Props(f)["TracingConfig"], id)
		}
		_, lg := one(t, tp, "AWS::Logs::LogGroup", "TriggersApiFunctionLogGroup")
		assert.Equal(t, 90.0, cdktest.Props(lg)["RetentionInDays"])
		// Tracing adds the X-Ray actions, which take no resource ARN.
		sts := roleStatements(t, tp, "TriggersApiFunctionServiceRole")
		var xray bool
		for _, s := range sts {
			for _, a := range s.Actions {
				if a == "xray:PutTraceSegments" {
					xray = true
					assert.Equal(t, []any{"*"}, s.Resources)
				}
			}
		}
		assert.True(t, xray, "X-Ray permissions with tracing")
	})
	t.Run("delivery", func(t *testing.T) {
		_, esm := one(t, tp, "AWS::Lambda::EventSourceMapping", "TriggersConsumerFunction")
		p := cdktest.Props(esm)
		assert.Equal(t, 10.0, p["BatchSize"])
		assert.Equal(t, 3.0, p["MaximumRetryAttempts"])
		assert.Equal(t, 21600.0, p["MaximumRecordAgeInSeconds"])
		assert.Equal(t, 2.0, p["ParallelizationFactor"])
		_, q := one(t, tp, "AWS::SQS::Queue", "TriggersDeliveryQueue")
		rp := cdktest.Props(q)["RedrivePolicy"].(map[string]any)
		assert.Equal(t, 3.0, rp["maxReceiveCount"])
	})
	require.NotEmpty(t, tp)
}
