package assertions

import (
	"encoding/json"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/constructs/eventstore"
	"github.com/triggers-dev/triggers/constructs/triggersapi"
	"github.com/triggers-dev/triggers/contract"
	"github.com/triggers-dev/triggers/internal/testkit/cdktest"
)

const apiStack = "triggers-dev-api"

// Logical ids of the stateful resources, pinned: a change would replace
// the table (orphaned by RETAIN), the queue (losing its messages) or the
// secret (invalidating every cursor).
var pinnedLogicalIDs = map[string]map[string]string{
	dataStack: {"Events948F067E": "AWS::DynamoDB::Table", "ApiKeys3C34A7E6": "AWS::DynamoDB::Table"},
	apiStack: {
		"TriggersDeliveryQueueEA8CDACA":  "AWS::SQS::Queue",
		"TriggersDeliveryDLQ16074B17":    "AWS::SQS::Queue",
		"TriggersStreamFailures6A669BFA": "AWS::SQS::Queue",
		"TriggersCursorSecretABBC42CB":   "AWS::SecretsManager::Secret",
		// Replacing the key would strand every sealed webhook secret.
		"TriggersWebhooksSecretsKey172A42A9": "AWS::KMS::Key",
		"TriggersAccessLogsD561BF9D":         "AWS::Logs::LogGroup",
	},
}

func TestStatefulLogicalIDsArePinned(t *testing.T) {
	for stack, ids := range pinnedLogicalIDs {
		res := tmpl(t, stack)["Resources"].(map[string]any)
		for id, typ := range ids {
			r, ok := res[id].(map[string]any)
			if assert.True(t, ok, "%s has %s", stack, id) {
				assert.Equal(t, typ, r["Type"], "%s/%s", stack, id)
			}
		}
	}
}

// resourceKind names what an IAM resource points at, so that statements
// can be compared by meaning across cross-stack references.
func resourceKind(v any) string {
	s := jsonOf(v)
	switch {
	case s == `"*"`:
		return "*"
	case strings.Contains(s, "/index/EventTypeIndex"):
		return "EventsTable/index/EventTypeIndex"
	case strings.Contains(s, "/index/StatusIndex"):
		return "EventsTable/index/StatusIndex"
	case strings.Contains(s, "Events948F067EStreamArn"):
		return "EventsTable/stream"
	case strings.Contains(s, "Events948F067EArn"):
		return "EventsTable"
	case strings.Contains(s, "ApiKeys3C34A7E6Arn"):
		return "ApiKeysTable"
	case strings.Contains(s, "TriggersCursorSecret"):
		return "CursorSecret"
	case strings.Contains(s, "TriggersDeliveryQueue"):
		return "DeliveryQueue"
	case strings.Contains(s, "TriggersWebhooksSecretsKey"):
		return "WebhookSecretsKey"
	case strings.Contains(s, "TriggersWebhooksRetryQueue"):
		return "WebhookRetryQueue"
	case strings.Contains(s, "TriggersStreamFailures"):
		return "StreamFailures"
	case strings.Contains(s, "FunctionLogGroup"):
		var ga struct {
			GetAtt []string `json:"Fn::GetAtt"`
		}
		if json.Unmarshal([]byte(s), &ga) == nil && len(ga.GetAtt) == 2 {
			return "LogGroup:" + ga.GetAtt[0]
		}
	}
	return s
}

// grantsOf returns a role's permissions as sorted "action on kind" lines.
func grantsOf(t *testing.T, stack, rolePrefix string) []string {
	t.Helper()
	var out []string
	for _, st := range roleStatements(t, tmpl(t, stack), rolePrefix) {
		require.Equal(t, "Allow", st.Effect)
		for _, a := range st.Actions {
			for _, r := range st.Resources {
				out = append(out, a+" on "+resourceKind(r))
			}
		}
	}
	sort.Strings(out)
	return out
}

func pairs(actions []string, kinds ...string) []string {
	var out []string
	for _, a := range actions {
		for _, k := range kinds {
			out = append(out, a+" on "+k)
		}
	}
	return out
}

// Every function's role holds exactly what its code calls: action by
// action, resource by resource, nothing else.
func TestFunctionPermissions(t *testing.T) {
	logs := []string{"logs:CreateLogStream", "logs:PutLogEvents"}
	tests := []struct {
		role, logGroup string
		want           [][]string
	}{
		{"TriggersApiFunctionServiceRole", "TriggersApiFunctionLogGroup34AA95AD", [][]string{
			pairs(eventstore.AppendActions(), "EventsTable"),
			pairs(eventstore.ReadInboxActions(), "EventsTable", "EventsTable/index/EventTypeIndex", "EventsTable/index/StatusIndex"),
			pairs(eventstore.UpdateStatusActions(), "EventsTable"),
			pairs([]string{"secretsmanager:DescribeSecret", "secretsmanager:GetSecretValue"}, "CursorSecret"),
			// Webhooks are on in the app: delete a subscription, queue a redelivery.
			pairs(triggersapi.ApiWebhookActions(), "EventsTable"),
			pairs([]string{"sqs:SendMessage"}, "WebhookRetryQueue"),
			// It seals new signing secrets; it cannot open them.
			pairs([]string{"kms:Encrypt"}, "WebhookSecretsKey"),
		}},
		{"TriggersAuthorizerFunctionServiceRole", "TriggersAuthorizerFunctionLogGroup8D4C1F3D", [][]string{
			pairs([]string{"dynamodb:GetItem"}, "ApiKeysTable"),
		}},
		{"TriggersConsumerFunctionServiceRole", "TriggersConsumerFunctionLogGroup92380674", [][]string{
			pairs([]string{"sqs:SendMessage", "sqs:GetQueueAttributes", "sqs:GetQueueUrl"}, "DeliveryQueue", "StreamFailures"),
			pairs([]string{"dynamodb:DescribeStream", "dynamodb:GetRecords", "dynamodb:GetShardIterator"}, "EventsTable/stream"),
			pairs([]string{"dynamodb:ListStreams"}, "*"),
		}},
	}
	for _, tt := range tests {
		t.Run(tt.role, func(t *testing.T) {
			set := map[string]bool{}
			for _, p := range pairs(logs, "LogGroup:"+tt.logGroup) {
				set[p] = true
			}
			for _, w := range tt.want {
				for _, p := range w {
					set[p] = true
				}
			}
			want := keys(set)
			sort.Strings(want)
			got := grantsOf(t, apiStack, tt.role)
			// GetItem appears in several grants; compare as sets.
			assert.Equal(t, want, dedupe(got))
		})
	}
	// No role uses an AWS managed policy.
	for id, r := range cdktest.Resources(tmpl(t, apiStack), "AWS::IAM::Role") {
		if strings.Contains(id, "CloudWatchRole") {
			continue // API Gateway's account logging role (suppressed in cdk-nag, with reason)
		}
		assert.NotContains(t, cdktest.Props(r), "ManagedPolicyArns", id)
	}
}

func dedupe(s []string) []string {
	var out []string
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}

func TestLambdaFunctions(t *testing.T) {
	tp := tmpl(t, apiStack)
	want := map[string]struct {
		memory, timeout float64
		env             []string
	}{
		"TriggersApiFunction":        {256, 10, []string{contract.EnvEventsTable, contract.EnvCursorSecretARN, contract.EnvRetentionDays, contract.EnvMetricsNamespace, contract.EnvAPIKeySources, contract.EnvWebhookQueueURL, contract.EnvWebhookSecretsKey, contract.EnvWebhookRoundHold}},
		"TriggersAuthorizerFunction": {256, 5, []string{contract.EnvAPIKeysTable, contract.EnvAPIKeySources}},
		"TriggersConsumerFunction":   {256, 30, []string{contract.EnvDeliveryQueueURL, contract.EnvDeadLetterQueueURL}},
		// Webhooks are on in the app (assertions/webhooks_test.go).
		"TriggersWebhooksFunction": {256, 300, []string{contract.EnvEventsTable, contract.EnvWebhookQueueURL, contract.EnvWebhookSchedule,
			contract.EnvWebhookTimeout, contract.EnvWebhookDisableAfter, contract.EnvMetricsNamespace, contract.EnvLogLevel, contract.EnvWebhookSecretsKey,
			contract.EnvWebhookParallel, contract.EnvWebhookBreakerThreshold, contract.EnvWebhookBreakerCooldown, contract.EnvWebhookSlowAfter, contract.EnvWebhookRoundHold,
			contract.EnvWebhookSlowLaneAfter, contract.EnvWebhookTenantSlowConcurrency}},
	}
	fns := cdktest.Resources(tp, "AWS::Lambda::Function")
	require.Len(t, fns, len(want))
	for prefix, w := range want {
		id, r := one(t, tp, "AWS::Lambda::Function", prefix)
		p := cdktest.Props(r)
		assert.Equal(t, "provided.al2023", p["Runtime"], id)
		assert.Equal(t, []any{"arm64"}, p["Architectures"], id)
		assert.Equal(t, "bootstrap", p["Handler"], id)
		assert.Equal(t, w.memory, p["MemorySize"], id)
		assert.Equal(t, w.timeout, p["Timeout"], id)
		assert.NotContains(t, p, "TracingConfig", "%s: X-Ray off by default", id)
		var env []string
		for k := range p["Environment"].(map[string]any)["Variables"].(map[string]any) {
			env = append(env, k)
		}
		assert.ElementsMatch(t, w.env, env, id)
		lc := p["LoggingConfig"].(map[string]any)
		assert.Equal(t, "JSON", lc["LogFormat"], id)
		lgID, lg := one(t, tp, "AWS::Logs::LogGroup", prefix+"LogGroup")
		assert.Equal(t, map[string]any{"Ref": lgID}, lc["LogGroup"], id)
		assert.Equal(t, 30.0, cdktest.Props(lg)["RetentionInDays"], lgID)
		assert.Contains(t, jsonOf(p["Role"]), prefix+"ServiceRole", "%s runs with its own role", id)
	}
	env := cdktest.Props(fns[mustID(t, tp, "AWS::Lambda::Function", "TriggersApiFunction")])["Environment"].(map[string]any)["Variables"].(map[string]any)
	assert.Equal(t, "30", env[contract.EnvRetentionDays])
	assert.Equal(t, "Triggers/triggers-dev-api", env[contract.EnvMetricsNamespace], "one metrics namespace per environment")
	assert.Contains(t, jsonOf(env[contract.EnvEventsTable]), "Events948F067E", "EVENTS_TABLE is the data stack's events table")
	assert.Equal(t, map[string]any{"Ref": "TriggersCursorSecretABBC42CB"}, env[contract.EnvCursorSecretARN])
	// With the cache on (the default), both functions accept the key from
	// the Authorization header only: exactly the cache's identity source.
	assert.Equal(t, string(contract.KeySourcesBearer), env[contract.EnvAPIKeySources])
	authEnv := cdktest.Props(fns[mustID(t, tp, "AWS::Lambda::Function", "TriggersAuthorizerFunction")])["Environment"].(map[string]any)["Variables"].(map[string]any)
	assert.Equal(t, string(contract.KeySourcesBearer), authEnv[contract.EnvAPIKeySources])
}

func mustID(t *testing.T, tp map[string]any, typ, prefix string) string {
	id, _ := one(t, tp, typ, prefix)
	return id
}

func TestRestApiRoutesAndAuthorizer(t *testing.T) {
	tp := tmpl(t, apiStack)
	_, api := one(t, tp, "AWS::ApiGateway::RestApi", "TriggersApi")
	assert.Equal(t, map[string]any{"Types": []any{"REGIONAL"}}, cdktest.Props(api)["EndpointConfiguration"])
	// Bodies reach the function byte for byte (base64), so invalid UTF-8
	// is refused by the function, not turned into U+FFFD on the way.
	assert.Equal(t, []any{"application/json"}, cdktest.Props(api)["BinaryMediaTypes"])

	authID, auth := one(t, tp, "AWS::ApiGateway::Authorizer", "TriggersAuthorizer")
	ap := cdktest.Props(auth)
	assert.Equal(t, "REQUEST", ap["Type"])
	// Pinned: the cache key is the Authorization header, and nothing else;
	// the functions read the key from exactly that header (TestLambdaFunctions).
	assert.Equal(t, "method.request.header.Authorization", ap["IdentitySource"])
	assert.Equal(t, 300.0, ap["AuthorizerResultTtlInSeconds"], "default cache TTL = revocation delay")
	assert.Contains(t, jsonOf(ap["AuthorizerUri"]), "TriggersAuthorizerFunction")

	// Resource paths by logical id, to name each method's route.
	paths := map[string]string{}
	resources := cdktest.Resources(tp, "AWS::ApiGateway::Resource")
	var pathOf func(id string) string
	pathOf = func(id string) string {
		if p, ok := paths[id]; ok {
			return p
		}
		p := cdktest.Props(resources[id])
		parent := ""
		if ref, ok := p["ParentId"].(map[string]any)["Ref"].(string); ok {
			parent = pathOf(ref)
		}
		paths[id] = parent + "/" + p["PathPart"].(string)
		return paths[id]
	}
	var routes []string
	for _, m := range cdktest.Resources(tp, "AWS::ApiGateway::Method") {
		p := cdktest.Props(m)
		ref := p["ResourceId"].(map[string]any)["Ref"].(string)
		route := p["HttpMethod"].(string) + " " + pathOf(ref)
		routes = append(routes, route)
		if (contract.Route{Method: p["HttpMethod"].(string), Path: pathOf(ref)}).Public() {
			// The OpenAPI document: no authorizer runs for it.
			assert.Equal(t, "NONE", p["AuthorizationType"], route)
			assert.NotContains(t, p, "AuthorizerId", route)
		} else {
			assert.Equal(t, "CUSTOM", p["AuthorizationType"], route)
			assert.Equal(t, map[string]any{"Ref": authID}, p["AuthorizerId"], route)
		}
		integ := p["Integration"].(map[string]any)
		assert.Equal(t, "AWS_PROXY", integ["Type"], route)
		assert.Contains(t, jsonOf(integ["Uri"]), "TriggersApiFunction", route)
		assert.Contains(t, p, "RequestValidatorId", route)
		// Every path parameter is required ({event_id}, {subscription_id}).
		if params := contract.PathParams(pathOf(ref)); len(params) > 0 {
			want := map[string]any{}
			for _, name := range params {
				want["method.request.path."+name] = true
			}
			assert.Equal(t, want, p["RequestParameters"], route)
		} else {
			assert.NotContains(t, p, "RequestParameters", route)
		}
	}
	var want []string
	for _, r := range contract.Routes() {
		want = append(want, r.Method+" "+r.Path)
	}
	// Every other method on a known resource reaches the function, which
	// answers 405 with Allow, as the local server does.
	for _, p := range contract.Paths() {
		want = append(want, "ANY "+p)
	}
	assert.ElementsMatch(t, want, routes, "the contract's routes, ANY on each resource, and no others (no CORS OPTIONS by default)")

	// One invoke permission per function, each scoped to this API: the API
	// function's to any method of any stage (not two per method, which
	// would crowd its resource policy), the authorizer's to the authorizer.
	perms := cdktest.Resources(tp, "AWS::Lambda::Permission")
	require.Len(t, perms, 2)
	for id, perm := range perms {
		p := cdktest.Props(perm)
		assert.Equal(t, "apigateway.amazonaws.com", p["Principal"], id)
		assert.Equal(t, "lambda:InvokeFunction", p["Action"], id)
		arn := jsonOf(p["SourceArn"])
		assert.Contains(t, arn, `{"Ref":"`+mustID(t, tp, "AWS::ApiGateway::RestApi", "TriggersApi")+`"}`, id)
		switch fn := jsonOf(p["FunctionName"]); {
		case strings.Contains(fn, "TriggersApiFunction"):
			assert.True(t, strings.HasSuffix(arn, `"/*/*/*"]]}`), "%s: %s", id, arn)
		case strings.Contains(fn, "TriggersAuthorizerFunction"):
			assert.Contains(t, arn, `"/authorizers/",{"Ref":"`+authID+`"}`, id)
		default:
			t.Errorf("%s: permission for an unexpected function %s", id, fn)
		}
	}

	_, v := one(t, tp, "AWS::ApiGateway::RequestValidator", "TriggersApiParams")
	assert.Equal(t, true, cdktest.Props(v)["ValidateRequestParameters"])
}

func TestStageSettings(t *testing.T) {
	tp := tmpl(t, apiStack)
	_, st := one(t, tp, "AWS::ApiGateway::Stage", "TriggersApiDeploymentStage")
	p := cdktest.Props(st)
	assert.Equal(t, "live", p["StageName"])
	assert.Equal(t, false, p["TracingEnabled"])
	assert.Equal(t, []any{map[string]any{
		"DataTraceEnabled": false, "HttpMethod": "*", "LoggingLevel": "ERROR", "MetricsEnabled": true,
		"ResourcePath": "/*", "ThrottlingBurstLimit": 200.0, "ThrottlingRateLimit": 100.0,
	}}, p["MethodSettings"])
	als := p["AccessLogSetting"].(map[string]any)
	assert.Equal(t, map[string]any{"Fn::GetAtt": []any{"TriggersAccessLogsD561BF9D", "Arn"}}, als["DestinationArn"])
	var fields map[string]string
	// $context.error.messageString is a quoted, escaped JSON string: the
	// format is JSON once API Gateway substitutes it.
	format := als["Format"].(string)
	assert.Contains(t, format, `"errorMessage":$context.error.messageString`, "the error message escaped, never raw text inside quotes")
	require.NoError(t, json.Unmarshal([]byte(strings.ReplaceAll(format, "$context.error.messageString", `"m"`)), &fields), "the access log format is JSON")
	for _, k := range []string{"requestId", "ip", "httpMethod", "resourcePath", "status", "tenant", "latency", "integrationLatency"} {
		assert.Contains(t, fields, k)
	}
	assert.Equal(t, "$context.authorizer.tenantId", fields["tenant"], "the tenant the authorizer returned")
	_, lg := one(t, tp, "AWS::Logs::LogGroup", "TriggersAccessLogs")
	assert.Equal(t, 30.0, cdktest.Props(lg)["RetentionInDays"])
	assert.Equal(t, "Retain", lg["DeletionPolicy"])
	// Execution logs need the account-level CloudWatch role.
	one(t, tp, "AWS::ApiGateway::Account", "TriggersApiAccount")
	// Per-tenant rate limits by default: a WAF web ACL on the stage with a
	// rule per Authorization value and a rule per address, after one
	// refusing bodies the function could never receive (413).
	aclID, acl := one(t, tp, "AWS::WAFv2::WebACL", "TriggersRateLimits")
	ap := cdktest.Props(acl)
	assert.Equal(t, "REGIONAL", ap["Scope"])
	assert.Equal(t, map[string]any{"Allow": map[string]any{}}, ap["DefaultAction"])
	rules := ap["Rules"].([]any)
	require.Len(t, rules, 3)
	tooLarge := rules[0].(map[string]any)
	assert.Equal(t, "BodyTooLarge", tooLarge["Name"])
	assert.Equal(t, 0.0, tooLarge["Priority"])
	assert.Equal(t, map[string]any{"SizeConstraintStatement": map[string]any{
		"FieldToMatch": map[string]any{"SingleHeader": map[string]any{"Name": "content-length"}}, "ComparisonOperator": "GT", "Size": 6.0,
		"TextTransformations": []any{map[string]any{"Priority": 0.0, "Type": "NONE"}},
	}}, tooLarge["Statement"], "a Content-Length of 7 digits or more: 1,000,000 bytes and up")
	assert.Equal(t, map[string]any{"ResponseCode": 413.0, "CustomResponseBodyKey": "tooLarge",
		"ResponseHeaders": []any{map[string]any{"Name": "X-Request-Id", "Value": triggersapi.WafRequestID}}}, tooLarge["Action"].(map[string]any)["Block"].(map[string]any)["CustomResponse"])
	tooLargeBody := ap["CustomResponseBodies"].(map[string]any)["tooLarge"].(map[string]any)
	assert.Equal(t, "APPLICATION_JSON", tooLargeBody["ContentType"])
	assert.Contains(t, tooLargeBody["Content"], `"code":"payload_too_large"`)
	rules = rules[1:]
	perKey := rules[0].(map[string]any)
	assert.Equal(t, "PerApiKey", perKey["Name"])
	assert.Equal(t, map[string]any{"RateBasedStatement": map[string]any{
		"Limit": 6000.0, "EvaluationWindowSec": 300.0, "AggregateKeyType": "CUSTOM_KEYS",
		"CustomKeys": []any{map[string]any{"Header": map[string]any{"Name": "authorization", "TextTransformations": []any{map[string]any{"Priority": 0.0, "Type": "NONE"}}}}},
	}}, perKey["Statement"])
	perIP := rules[1].(map[string]any)
	assert.Equal(t, "PerAddress", perIP["Name"])
	assert.Equal(t, map[string]any{"RateBasedStatement": map[string]any{"Limit": 30000.0, "EvaluationWindowSec": 300.0, "AggregateKeyType": "IP"}}, perIP["Statement"])
	for _, r := range rules {
		block := r.(map[string]any)["Action"].(map[string]any)["Block"].(map[string]any)["CustomResponse"].(map[string]any)
		assert.Equal(t, 429.0, block["ResponseCode"])
		assert.Equal(t, []any{map[string]any{"Name": "Retry-After", "Value": "60"}, map[string]any{"Name": "X-Request-Id", "Value": triggersapi.WafRequestID}}, block["ResponseHeaders"])
	}
	body := ap["CustomResponseBodies"].(map[string]any)["throttled"].(map[string]any)
	assert.Equal(t, "APPLICATION_JSON", body["ContentType"])
	assert.Contains(t, body["Content"], `"code":"throttled"`)
	assert.Contains(t, body["Content"], `"request_id":"`+triggersapi.WafRequestID+`"`, "the contract's request id: the web ACL's")
	_, assoc := one(t, tp, "AWS::WAFv2::WebACLAssociation", "TriggersRateLimitAssociation")
	assert.Equal(t, map[string]any{"Fn::GetAtt": []any{aclID, "Arn"}}, cdktest.Props(assoc)["WebACLArn"])
	assert.Empty(t, cdktest.Resources(tp, "AWS::ApiGateway::DomainName"), "no custom domain unless given")
}

// API Gateway's own errors have the contract's JSON shape.
func TestGatewayResponses(t *testing.T) {
	tp := tmpl(t, apiStack)
	want := map[string][2]string{ // type -> status, code
		"UNAUTHORIZED": {"401", "unauthorized"}, "ACCESS_DENIED": {"403", "forbidden"},
		"MISSING_AUTHENTICATION_TOKEN": {"404", "not_found"}, "THROTTLED": {"429", "throttled"},
		"REQUEST_TOO_LARGE": {"413", "payload_too_large"}, "BAD_REQUEST_PARAMETERS": {"400", "invalid_parameter"},
		"AUTHORIZER_FAILURE": {"503", "unavailable"}, "AUTHORIZER_CONFIGURATION_ERROR": {"503", "unavailable"},
		"DEFAULT_4XX": {"", "bad_request"}, "DEFAULT_5XX": {"", "internal"},
	}
	got := map[string]bool{}
	for id, r := range cdktest.Resources(tp, "AWS::ApiGateway::GatewayResponse") {
		p := cdktest.Props(r)
		typ := p["ResponseType"].(string)
		w, ok := want[typ]
		require.True(t, ok, "unexpected gateway response %s (%s)", typ, id)
		got[typ] = true
		if w[0] != "" {
			assert.Equal(t, w[0], p["StatusCode"], typ)
		}
		body := p["ResponseTemplates"].(map[string]any)["application/json"].(string)
		// API Gateway's own message goes in escaped ($context.error.
		// messageString, already quoted), never as raw text in quotes.
		assert.NotContains(t, body, `"$context.error.message"`, typ)
		assert.NotContains(t, body, `$context.error.validationErrorString`, typ)
		var parsed map[string]any
		assert.NoError(t, json.Unmarshal([]byte(strings.ReplaceAll(body, "$context.error.messageString", `"m"`)), &parsed), "%s: the template is JSON once substituted: %s", typ, body)
		assert.Contains(t, body, `"code":"`+w[1]+`"`, typ)
		assert.Contains(t, body, `"request_id":"$context.requestId"`, typ)
		headers := p["ResponseParameters"].(map[string]any)
		assert.Equal(t, "'application/json'", headers["gatewayresponse.header.Content-Type"], typ)
		assert.Equal(t, "context.requestId", headers["gatewayresponse.header.X-Request-Id"], "%s: every response carries X-Request-Id", typ)
		if typ == "THROTTLED" || typ == "AUTHORIZER_FAILURE" || typ == "AUTHORIZER_CONFIGURATION_ERROR" {
			assert.Equal(t, "'1'", headers["gatewayresponse.header.Retry-After"], typ)
		} else {
			assert.NotContains(t, headers, "gatewayresponse.header.Retry-After", typ)
		}
		if typ == "UNAUTHORIZED" {
			assert.Contains(t, body, `"message":"`+contract.KeySourcesBearer.Hint()+`"`, "the 401 states the deployment's rules exactly")
		}
	}
	assert.Len(t, got, len(want))
}

func TestStreamDelivery(t *testing.T) {
	tp := tmpl(t, apiStack)
	_, esm := one(t, tp, "AWS::Lambda::EventSourceMapping", "TriggersConsumerFunction")
	p := cdktest.Props(esm)
	assert.Equal(t, 100.0, p["BatchSize"])
	assert.Equal(t, true, p["BisectBatchOnFunctionError"])
	assert.Equal(t, float64(triggersapi.StreamRetryAttempts), p["MaximumRetryAttempts"], "retries bounded by record age in practice")
	assert.Equal(t, 21600.0, p["MaximumRecordAgeInSeconds"], "6 h, well inside the stream's 24 h")
	assert.Equal(t, 1.0, p["ParallelizationFactor"])
	assert.Equal(t, "TRIM_HORIZON", p["StartingPosition"])
	assert.Equal(t, []any{"ReportBatchItemFailures"}, p["FunctionResponseTypes"])
	assert.Equal(t, map[string]any{"Filters": []any{map[string]any{"Pattern": `{"eventName":["INSERT"]}`}}}, p["FilterCriteria"])
	assert.Equal(t, map[string]any{"OnFailure": map[string]any{"Destination": map[string]any{"Fn::GetAtt": []any{"TriggersStreamFailures6A669BFA", "Arn"}}}}, p["DestinationConfig"])
	assert.Contains(t, jsonOf(p["EventSourceArn"]), "Events948F067EStreamArn", "reads the events table's stream")

	queues := cdktest.Resources(tp, "AWS::SQS::Queue")
	require.Len(t, queues, 5, "delivery queue and DLQ, stream failures, webhook retry queue and DLQ")
	for id, q := range queues {
		qp := cdktest.Props(q)
		assert.Equal(t, true, qp["SqsManagedSseEnabled"], "%s encrypted", id)
	}
	dq := cdktest.Props(queues["TriggersDeliveryQueueEA8CDACA"])
	assert.Equal(t, map[string]any{"deadLetterTargetArn": map[string]any{"Fn::GetAtt": []any{"TriggersDeliveryDLQ16074B17", "Arn"}}, "maxReceiveCount": 5.0}, dq["RedrivePolicy"])
	assert.Equal(t, 1048576.0, dq["MaximumMessageSize"], "an event's JSON can exceed 256 KiB")
	assert.Equal(t, 1048576.0, cdktest.Props(queues["TriggersDeliveryDLQ16074B17"])["MaximumMessageSize"])
	assert.Equal(t, 1209600.0, cdktest.Props(queues["TriggersDeliveryDLQ16074B17"])["MessageRetentionPeriod"], "DLQ keeps 14 days")
	assert.Equal(t, 1209600.0, cdktest.Props(queues["TriggersStreamFailures6A669BFA"])["MessageRetentionPeriod"])

	// Every queue refuses requests without TLS.
	policies := cdktest.Resources(tp, "AWS::SQS::QueuePolicy")
	require.Len(t, policies, 5)
	for id, pol := range policies {
		pp := cdktest.Props(pol)
		st := pp["PolicyDocument"].(map[string]any)["Statement"].([]any)[0].(map[string]any)
		assert.Equal(t, "Deny", st["Effect"], id)
		assert.Equal(t, "sqs:*", st["Action"], id)
		assert.Equal(t, map[string]any{"Bool": map[string]any{"aws:SecureTransport": "false"}}, st["Condition"], id)
	}
}

func TestApiStackOutputs(t *testing.T) {
	outs := tmpl(t, apiStack)["Outputs"].(map[string]any)
	for _, o := range []string{"ApiUrl", "DeliveryQueueUrl", "DeliveryDeadLetterQueueUrl", "StreamFailureQueueUrl", "CursorSecretArn", "AlarmTopicArn", "TicketTopicArn"} {
		out, ok := outs[o].(map[string]any)
		if assert.True(t, ok, "output %s", o) {
			assert.Equal(t, map[string]any{"Name": apiStack + "-" + o}, out["Export"], o)
		}
	}
	assert.Contains(t, jsonOf(outs["ApiUrl"].(map[string]any)["Value"]), "execute-api")
	dataOuts := tmpl(t, dataStack)["Outputs"].(map[string]any)
	for _, o := range []string{"EventsTableName", "EventsTableArn", "EventsTableStreamArn", "ApiKeysTableName"} {
		assert.Contains(t, dataOuts, o)
	}
}

// Our own check beside cdk-nag (whose DynamoDB rules miss tables made
// through some paths): every table of every stack has PITR and encryption.
func TestEveryTableHasPITRAndEncryption(t *testing.T) {
	n := 0
	for stack, tp := range templates {
		for id, r := range cdktest.Resources(tp, "AWS::DynamoDB::Table") {
			n++
			p := cdktest.Props(r)
			pitr, _ := p["PointInTimeRecoverySpecification"].(map[string]any)
			assert.Equal(t, true, pitr["PointInTimeRecoveryEnabled"], "%s/%s PITR", stack, id)
			sse, _ := p["SSESpecification"].(map[string]any)
			assert.Equal(t, true, sse["SSEEnabled"], "%s/%s encryption", stack, id)
		}
	}
	assert.Greater(t, n, 10, "tables checked")
}
