package assertions

import (
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/constructs/triggersapi"
	"github.com/triggers-dev/triggers/contract"
	"github.com/triggers-dev/triggers/internal/testkit/cdktest"
)

// Webhook push delivery is on in the app's API stack
// (stacks.NewTriggersApiStack): a WebhookDelivery with id "Webhooks"
// under TriggersApi, with WebhookOptions' defaults.

// The retry queues are stateful (a replaced queue loses its tasks): their
// logical ids are pinned.
var pinnedWebhookLogicalIDs = map[string]string{
	"TriggersWebhooksRetryQueueA414745A": "AWS::SQS::Queue",
	"TriggersWebhooksRetryDLQAEE8C5C7":   "AWS::SQS::Queue",
}

func TestWebhookRetryQueuesArePinned(t *testing.T) {
	res := tmpl(t, apiStack)["Resources"].(map[string]any)
	for id, typ := range pinnedWebhookLogicalIDs {
		r, ok := res[id].(map[string]any)
		if assert.True(t, ok, "%s has %s", apiStack, id) {
			assert.Equal(t, typ, r["Type"], id)
		}
	}
}

func TestWebhookFunction(t *testing.T) {
	tp := tmpl(t, apiStack)
	id, fn := one(t, tp, "AWS::Lambda::Function", "TriggersWebhooksFunction")
	p := cdktest.Props(fn)
	assert.Equal(t, "provided.al2023", p["Runtime"])
	assert.Equal(t, []any{"arm64"}, p["Architectures"])
	assert.Equal(t, 300.0, p["Timeout"], "5 minutes: a batch may wait on several 10 s webhook requests")
	assert.Equal(t, 256.0, p["MemorySize"])
	assert.Equal(t, float64(triggersapi.DefaultWebhookReservedConcurrency), p["ReservedConcurrentExecutions"])
	retryID, _ := one(t, tp, "AWS::SQS::Queue", "TriggersWebhooksRetryQueue")
	keyID := mustID(t, tp, "AWS::KMS::Key", "TriggersWebhooksSecretsKey")
	env := p["Environment"].(map[string]any)["Variables"].(map[string]any)
	assert.Contains(t, jsonOf(env[contract.EnvEventsTable]), "Events948F067E", "the data stack's events table")
	delete(env, contract.EnvEventsTable)
	assert.Equal(t, map[string]any{
		contract.EnvWebhookQueueURL:              map[string]any{"Ref": retryID},
		contract.EnvWebhookSchedule:              "5s,5m,30m,2h,5h,10h,10h",
		contract.EnvWebhookTimeout:               "10s",
		contract.EnvWebhookDisableAfter:          "120h0m0s",
		contract.EnvMetricsNamespace:             "Triggers/" + apiStack,
		contract.EnvLogLevel:                     "info",
		contract.EnvWebhookSecretsKey:            map[string]any{"Fn::GetAtt": []any{keyID, "Arn"}},
		contract.EnvWebhookParallel:              "20",
		contract.EnvWebhookBreakerThreshold:      "5",
		contract.EnvWebhookBreakerCooldown:       "30s",
		contract.EnvWebhookSlowAfter:             "5s",
		contract.EnvWebhookRoundHold:             "6h0m0s",
		contract.EnvWebhookSlowLaneAfter:         "1s",
		contract.EnvWebhookTenantSlowConcurrency: "4",
	}, env, "%s: no %s (local development only), no %s (no rate cap by default)", id, contract.EnvWebhookAllowPrivate, contract.EnvWebhookEndpointRate)

	// The API function queues redeliveries on the same queue.
	_, apiFn := one(t, tp, "AWS::Lambda::Function", "TriggersApiFunction")
	assert.Equal(t, map[string]any{"Ref": retryID}, cdktest.Props(apiFn)["Environment"].(map[string]any)["Variables"].(map[string]any)[contract.EnvWebhookQueueURL])
	// ... and seals new secrets with the same key.
	assert.Equal(t, map[string]any{"Fn::GetAtt": []any{keyID, "Arn"}}, cdktest.Props(apiFn)["Environment"].(map[string]any)["Variables"].(map[string]any)[contract.EnvWebhookSecretsKey])
}

// The webhook function's role, action by action: the events table's ARN
// (no index), send on the retry queue, consume both queues (the event
// sources' grants), its own log group; nothing else.
func TestWebhookFunctionPermissions(t *testing.T) {
	consume := []string{"sqs:ChangeMessageVisibility", "sqs:DeleteMessage", "sqs:GetQueueAttributes", "sqs:GetQueueUrl", "sqs:ReceiveMessage"}
	logGroup := mustID(t, tmpl(t, apiStack), "AWS::Logs::LogGroup", "TriggersWebhooksFunctionLogGroup")
	var want []string
	for _, p := range [][]string{
		pairs([]string{"logs:CreateLogStream", "logs:PutLogEvents"}, "LogGroup:"+logGroup),
		pairs(triggersapi.WebhookEventsTableActions(), "EventsTable"),
		pairs([]string{"sqs:SendMessage"}, "WebhookRetryQueue"),
		pairs(consume, "DeliveryQueue", "WebhookRetryQueue"),
		pairs([]string{"kms:Decrypt"}, "WebhookSecretsKey"),
	} {
		want = append(want, p...)
	}
	sort.Strings(want)
	assert.Equal(t, want, grantsOf(t, apiStack, "TriggersWebhooksFunctionServiceRole"))
	assert.Equal(t, []string{"dynamodb:GetItem", "dynamodb:Query", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem", "dynamodb:ConditionCheckItem"}, triggersapi.WebhookEventsTableActions())
}

func TestWebhookEventSourcesAndQueues(t *testing.T) {
	tp := tmpl(t, apiStack)
	fnID, fn := one(t, tp, "AWS::Lambda::Function", "TriggersWebhooksFunction")
	timeout := cdktest.Props(fn)["Timeout"].(float64)
	var sources []string
	for id, esm := range cdktest.Resources(tp, "AWS::Lambda::EventSourceMapping") {
		p := cdktest.Props(esm)
		if jsonOf(p["FunctionName"]) != `{"Ref":"`+fnID+`"}` {
			continue
		}
		sources = append(sources, resourceKind(p["EventSourceArn"]))
		assert.Equal(t, 10.0, p["BatchSize"], id)
		assert.Equal(t, 1.0, p["MaximumBatchingWindowInSeconds"], id)
		assert.Equal(t, []any{"ReportBatchItemFailures"}, p["FunctionResponseTypes"], id)
	}
	sort.Strings(sources)
	assert.Equal(t, []string{"DeliveryQueue", "WebhookRetryQueue"}, sources, "the webhook function consumes the delivery queue and the retry queue")

	queues := cdktest.Resources(tp, "AWS::SQS::Queue")
	retryID := mustID(t, tp, "AWS::SQS::Queue", "TriggersWebhooksRetryQueue")
	dlqID := mustID(t, tp, "AWS::SQS::Queue", "TriggersWebhooksRetryDLQ")
	retry, dlq := cdktest.Props(queues[retryID]), cdktest.Props(queues[dlqID])
	// AWS's guidance for SQS event sources: visibility at least 6 x the
	// function's timeout, on both queues it consumes.
	for _, q := range []string{retryID, "TriggersDeliveryQueueEA8CDACA"} {
		v, _ := cdktest.Props(queues[q])["VisibilityTimeout"].(float64)
		assert.GreaterOrEqual(t, v, 6*timeout, "%s visibility timeout", q)
	}
	assert.Equal(t, 1800.0, cdktest.Props(queues["TriggersDeliveryQueueEA8CDACA"])["VisibilityTimeout"], "raised from 30 s because webhooks consume it")
	assert.Equal(t, map[string]any{"deadLetterTargetArn": map[string]any{"Fn::GetAtt": []any{dlqID, "Arn"}}, "maxReceiveCount": 5.0}, retry["RedrivePolicy"])
	assert.Equal(t, 345600.0, retry["MessageRetentionPeriod"])
	assert.Equal(t, 1209600.0, dlq["MessageRetentionPeriod"], "the DLQ keeps 14 days")
	for id, q := range map[string]map[string]any{retryID: retry, dlqID: dlq} {
		assert.Equal(t, true, q["SqsManagedSseEnabled"], id)
		assert.NotContains(t, q, "DelaySeconds", "%s: delays are per message", id)
		tls := false
		for _, pol := range cdktest.Resources(tp, "AWS::SQS::QueuePolicy") {
			pp := cdktest.Props(pol)
			if jsonOf(pp["Queues"]) != `[{"Ref":"`+id+`"}]` {
				continue
			}
			st := pp["PolicyDocument"].(map[string]any)["Statement"].([]any)[0].(map[string]any)
			tls = st["Effect"] == "Deny" && jsonOf(st["Condition"]) == `{"Bool":{"aws:SecureTransport":"false"}}`
		}
		assert.True(t, tls, "%s refuses requests without TLS", id)
	}

	outs := tmpl(t, apiStack)["Outputs"].(map[string]any)
	for _, o := range []string{"WebhookRetryQueueUrl", "WebhookRetryDeadLetterQueueUrl"} {
		out, ok := outs[o].(map[string]any)
		if assert.True(t, ok, "output %s", o) {
			assert.Equal(t, map[string]any{"Name": apiStack + "-" + o}, out["Export"], o)
			assert.True(t, strings.Contains(jsonOf(out["Value"]), "TriggersWebhooksRetry"), o)
		}
	}
}

// The synthesized template itself keeps webhook delivery's limits
// consistent, whatever the props: the function's reserved concurrency
// covers both event sources' maximum concurrency (or they would be
// throttled), each queue it consumes keeps a message invisible for at
// least 6 function timeouts (AWS's guidance for SQS event sources, and
// longer than any claim an invocation holds), and the function's timeout
// leaves an attempt its request timeout plus the store margin (the
// function starts no attempt with less left).
func TestWebhookLimitsInTheTemplate(t *testing.T) {
	tp := tmpl(t, apiStack)
	fnID, fn := one(t, tp, "AWS::Lambda::Function", "TriggersWebhooksFunction")
	p := cdktest.Props(fn)
	reserved, _ := p["ReservedConcurrentExecutions"].(float64)
	timeout, _ := p["Timeout"].(float64)
	env := p["Environment"].(map[string]any)["Variables"].(map[string]any)
	request, err := time.ParseDuration(env[contract.EnvWebhookTimeout].(string))
	require.NoError(t, err)
	assert.GreaterOrEqual(t, time.Duration(timeout)*time.Second, request+contract.WebhookStoreMargin,
		"the function's timeout leaves one attempt its request timeout and the store margin")

	queues := cdktest.Resources(tp, "AWS::SQS::Queue")
	total := 0.0
	n := 0
	for id, esm := range cdktest.Resources(tp, "AWS::Lambda::EventSourceMapping") {
		ep := cdktest.Props(esm)
		if jsonOf(ep["FunctionName"]) != `{"Ref":"`+fnID+`"}` {
			continue
		}
		n++
		sc, _ := ep["ScalingConfig"].(map[string]any)
		max, _ := sc["MaximumConcurrency"].(float64)
		assert.GreaterOrEqual(t, max, 2.0, "%s: MaximumConcurrency set, at least SQS's minimum of 2", id)
		total += max
		arn := jsonOf(ep["EventSourceArn"])
		found := false
		for qid, q := range queues {
			if strings.Contains(arn, `"`+qid+`"`) {
				found = true
				v, _ := cdktest.Props(q)["VisibilityTimeout"].(float64)
				assert.GreaterOrEqual(t, v, 6*timeout, "%s: visibility timeout of %s", id, qid)
			}
		}
		assert.True(t, found, "%s: its queue %s is in the stack", id, arn)
	}
	assert.Equal(t, 2, n, "the delivery and retry queues' event sources")
	assert.Greater(t, reserved, 0.0, "the webhook function has reserved concurrency")
	assert.LessOrEqual(t, total, reserved, "the event sources' maximum concurrency fits in the function's reserved concurrency")
	assert.Equal(t, float64(triggersapi.DefaultWebhookDeliveryMaxConcurrency+triggersapi.DefaultWebhookRetryMaxConcurrency), total)

	// The API and the authorizer keep capacity: they reserve none (they
	// use the account's unreserved pool, which delivery cannot take).
	for _, prefix := range []string{"TriggersApiFunction", "TriggersAuthorizerFunction"} {
		_, f := one(t, tp, "AWS::Lambda::Function", prefix)
		assert.NotContains(t, cdktest.Props(f), "ReservedConcurrentExecutions", prefix)
	}
}

// DELETE /v1/subscriptions/{subscription_id} reaches the API function
// with its path parameter required. (TestRestApiRoutesAndAuthorizer
// compares every method with contract.Routes() and checks every path
// parameter.)
func TestWebhookRoutes(t *testing.T) {
	tp := tmpl(t, apiStack)
	n := 0
	for id, m := range cdktest.Resources(tp, "AWS::ApiGateway::Method") {
		p := cdktest.Props(m)
		if p["HttpMethod"] != contract.MethodDelete {
			continue
		}
		n++
		assert.Equal(t, map[string]any{"method.request.path." + contract.SubscriptionIDParam: true}, p["RequestParameters"], id)
		assert.Contains(t, jsonOf(p["Integration"]), "TriggersApiFunction", id)
	}
	assert.Equal(t, 1, n, "one DELETE route")
}

// Who can use the key that seals webhook signing secrets, proved on the
// synthesized app: every IAM policy of every stack (AWS::IAM::Policy,
// AWS::IAM::ManagedPolicy, roles' inline policies) is read, and every
// statement allowing a KMS action (or "*") on that key (or on "*") is
// listed. Exactly two exist: the webhook function's role may decrypt
// (it signs), the API function's role may encrypt (it makes secrets);
// both only for the secrets' encryption context. No other role (the
// stream consumer, the archiver, backups, inbox readers, ...) gets
// anything. The key policy is CDK's default: one statement giving the
// account root kms:*, which lets IAM policies in this account grant the
// key (and no principal uses the key through the key policy alone); an
// administrator with kms:* on "*" in their own IAM policy can use it too.
func TestWebhookSecretsKeyUsers(t *testing.T) {
	api := tmpl(t, apiStack)
	keyID := mustID(t, api, "AWS::KMS::Key", "TriggersWebhooksSecretsKey")
	key := api["Resources"].(map[string]any)[keyID].(map[string]any)
	assert.Equal(t, "Retain", key["DeletionPolicy"])
	assert.Equal(t, "Retain", key["UpdateReplacePolicy"])
	props := cdktest.Props(key)
	assert.Equal(t, true, props["EnableKeyRotation"])
	statements := props["KeyPolicy"].(map[string]any)["Statement"].([]any)
	require.Len(t, statements, 1, "CDK's default key policy only: %s", jsonOf(statements))
	root := statements[0].(map[string]any)
	assert.Equal(t, "Allow", root["Effect"])
	assert.Equal(t, "kms:*", root["Action"])
	assert.Equal(t, "*", root["Resource"])
	assert.Contains(t, jsonOf(root["Principal"]), `":root"`, "the account itself, delegating to IAM")

	hash := regexp.MustCompile(`[0-9A-F]{8}$`)
	var users []string
	for _, stack := range appStacks {
		tp := tmpl(t, stack)
		scan := func(roles []any, doc any) {
			for _, st := range doc.(map[string]any)["Statement"].([]any) {
				s := st.(map[string]any)
				for _, a := range asStrings(s["Action"]) {
					if a != "*" && !strings.HasPrefix(a, "kms:") {
						continue
					}
					for _, r := range asAny(s["Resource"]) {
						rs := jsonOf(r)
						if rs != `"*"` && !strings.Contains(rs, "TriggersWebhooksSecretsKey") {
							continue
						}
						assert.Equal(t, "Allow", s["Effect"], rs)
						assert.JSONEq(t, jsonOf(triggersapi.SecretsKeyConditions()), jsonOf(s["Condition"]), "%s %s on %s: only for the secrets' encryption context", stack, a, rs)
						for _, role := range roles {
							name := hash.ReplaceAllString(strings.Trim(jsonOf(role), `{}"Ref:`), "")
							users = append(users, stack+" "+name+" "+a+" on "+resourceKind(r))
						}
					}
				}
			}
		}
		for _, typ := range []string{"AWS::IAM::Policy", "AWS::IAM::ManagedPolicy"} {
			for id, p := range cdktest.Resources(tp, typ) {
				pp := cdktest.Props(p)
				assert.Empty(t, pp["Users"], "%s/%s: no user policies", stack, id)
				assert.Empty(t, pp["Groups"], "%s/%s: no group policies", stack, id)
				roles, _ := pp["Roles"].([]any)
				scan(roles, pp["PolicyDocument"])
			}
		}
		for id, r := range cdktest.Resources(tp, "AWS::IAM::Role") {
			inline, _ := cdktest.Props(r)["Policies"].([]any)
			for _, pol := range inline {
				scan([]any{map[string]any{"Ref": id}}, pol.(map[string]any)["PolicyDocument"])
			}
		}
	}
	sort.Strings(users)
	assert.Equal(t, []string{
		apiStack + " TriggersApiFunctionServiceRole kms:Encrypt on WebhookSecretsKey",
		apiStack + " TriggersWebhooksFunctionServiceRole kms:Decrypt on WebhookSecretsKey",
	}, users)
}

func asStrings(v any) []string {
	var out []string
	for _, x := range asAny(v) {
		out = append(out, x.(string))
	}
	return out
}

func asAny(v any) []any {
	if l, ok := v.([]any); ok {
		return l
	}
	return []any{v}
}
