package triggersapi_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/triggers-dev/triggers/schema"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/jsii-runtime-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/constructs/dynamotable"
	"github.com/triggers-dev/triggers/constructs/eventstore"
	"github.com/triggers-dev/triggers/constructs/triggersapi"
	"github.com/triggers-dev/triggers/contract"
)

// webhookCode is prebuilt code for the webhook function: these tests are
// about the construct, not about building lambda/webhooks (the assertions
// package builds the real app's, by import path).
func webhookCode(stack awscdk.Stack) *triggersapi.FunctionOptions {
	bucket := awss3.Bucket_FromBucketName(stack, jsii.String("Artifacts"), jsii.String("ci-artifacts"))
	return &triggersapi.FunctionOptions{Code: awslambda.Code_FromBucket(bucket, jsii.String("webhooks.zip"), nil)}
}

// webhookStack is a stack with an events table, a StreamDelivery whose
// queue the webhook function may consume, and a WebhookDelivery "W" with o
// (its Function.Code set unless given).
func webhookStack(t *testing.T, tableProps *eventstore.EventsTableProps, o triggersapi.WebhookOptions) (awscdk.Stack, *triggersapi.WebhookDelivery, map[string]any) {
	t.Helper()
	stack := awscdk.NewStack(newApp(), jsii.String("S"), nil)
	events := eventstore.NewEventsTable(stack, jsii.String("Events"), tableProps)
	d := triggersapi.NewStreamDelivery(stack, jsii.String("D"), &triggersapi.StreamDeliveryProps{
		EventsTable:     events,
		DeliveryOptions: triggersapi.DeliveryOptions{QueueVisibilityTimeout: awscdk.Duration_Hours(jsii.Number(2))},
	})
	if o.Function == nil {
		o.Function = webhookCode(stack)
	} else if o.Function.Code == nil {
		o.Function.Code = webhookCode(stack).Code
	}
	w := triggersapi.NewWebhookDelivery(stack, jsii.String("W"), &triggersapi.WebhookDeliveryProps{
		EventsTable: events, DeliveryQueue: d.DeliveryQueue(), WebhookOptions: o,
	})
	return stack, w, templateOf(stack)
}

func templateOf(stack awscdk.Stack) map[string]any {
	return *assertions.Template_FromStack(stack, nil).ToJSON()
}

// resources returns the template's resources of type typ whose logical id
// starts with prefix.
func resources(tp map[string]any, typ, prefix string) map[string]map[string]any {
	out := map[string]map[string]any{}
	for id, r := range tp["Resources"].(map[string]any) {
		m := r.(map[string]any)
		if m["Type"] == typ && strings.HasPrefix(id, prefix) {
			out[id] = m
		}
	}
	return out
}

// only returns the one resource of type typ starting with prefix.
func only(t *testing.T, tp map[string]any, typ, prefix string) (string, map[string]any) {
	t.Helper()
	rs := resources(tp, typ, prefix)
	require.Len(t, rs, 1, "%s %s*", typ, prefix)
	for id, r := range rs {
		return id, r["Properties"].(map[string]any)
	}
	return "", nil
}

// refName names what an IAM resource or property points at: the logical
// id it references (its hash cut off at the prefix the caller knows),
// with any suffix joined after it ("/index/..."), else its JSON.
func refName(v any) string {
	switch m := v.(type) {
	case map[string]any:
		if ga, ok := m["Fn::GetAtt"].([]any); ok {
			return ga[0].(string)
		}
		if ref, ok := m["Ref"].(string); ok {
			return ref
		}
		if join, ok := m["Fn::Join"].([]any); ok {
			var parts []string
			for _, p := range join[1].([]any) {
				if s, ok := p.(string); ok {
					parts = append(parts, s)
				} else {
					parts = append(parts, refName(p))
				}
			}
			return strings.Join(parts, "")
		}
	case string:
		return m
	}
	raw, _ := json.Marshal(v)
	return string(raw)
}

// grants returns a role's statements (from every policy attached to it)
// as sorted "Effect action on resource" lines.
func grants(tp map[string]any, roleID string) []string {
	var out []string
	for _, p := range resources(tp, "AWS::IAM::Policy", "") {
		props := p["Properties"].(map[string]any)
		attached := false
		for _, r := range props["Roles"].([]any) {
			attached = attached || refName(r) == roleID
		}
		if !attached {
			continue
		}
		for _, st := range props["PolicyDocument"].(map[string]any)["Statement"].([]any) {
			s := st.(map[string]any)
			for _, a := range asList(s["Action"]) {
				for _, r := range asList(s["Resource"]) {
					out = append(out, fmt.Sprintf("%s %s on %s", s["Effect"], a, refName(r)))
				}
			}
		}
	}
	sort.Strings(out)
	return out
}

func asList(v any) []any {
	if l, ok := v.([]any); ok {
		return l
	}
	return []any{v}
}

func allow(actions []string, on ...string) []string {
	var out []string
	for _, a := range actions {
		for _, r := range on {
			out = append(out, "Allow "+a+" on "+r)
		}
	}
	return out
}

func sorted(parts ...[]string) []string {
	var out []string
	for _, p := range parts {
		out = append(out, p...)
	}
	sort.Strings(out)
	return out
}

func TestWebhookDeliveryDefaults(t *testing.T) {
	_, w, tp := webhookStack(t, nil, triggersapi.WebhookOptions{})
	assert.Equal(t, "5s,5m,30m,2h,5h,10h,10h", w.Schedule())
	assert.Equal(t, "Triggers/S", w.MetricsNamespace())
	m := w.MetricWebhookAttempts("failed", nil)
	assert.Equal(t, []string{"Triggers/S", contract.MetricWebhookAttempts, "Sum", "failed"},
		[]string{*m.Namespace(), *m.MetricName(), *m.Statistic(), (*m.Dimensions())[contract.DimensionOutcome].(string)})
	d := w.MetricSubscriptionsDisabled(nil)
	assert.Equal(t, []string{"Triggers/S", contract.MetricSubscriptionsDisabled, "Sum"}, []string{*d.Namespace(), *d.MetricName(), *d.Statistic()})

	// The retry queue and its DLQ: encrypted, TLS only, a visibility
	// timeout of 6 x the function's 5 minutes.
	tableID, _ := only(t, tp, "AWS::DynamoDB::Table", "Events")
	retryID, retry := only(t, tp, "AWS::SQS::Queue", "WRetryQueue")
	dlqID, dlq := only(t, tp, "AWS::SQS::Queue", "WRetryDLQ")
	assert.Equal(t, 1800.0, retry["VisibilityTimeout"])
	assert.Equal(t, 345600.0, retry["MessageRetentionPeriod"], "4 days")
	assert.Equal(t, 1048576.0, retry["MaximumMessageSize"])
	assert.Equal(t, map[string]any{"deadLetterTargetArn": map[string]any{"Fn::GetAtt": []any{dlqID, "Arn"}}, "maxReceiveCount": 5.0}, retry["RedrivePolicy"])
	assert.Equal(t, 1209600.0, dlq["MessageRetentionPeriod"], "the DLQ keeps 14 days")
	for id, q := range map[string]map[string]any{retryID: retry, dlqID: dlq} {
		assert.Equal(t, true, q["SqsManagedSseEnabled"], id)
	}
	for _, id := range []string{retryID, dlqID} {
		found := false
		for _, pol := range resources(tp, "AWS::SQS::QueuePolicy", "") {
			p := pol["Properties"].(map[string]any)
			if refName(p["Queues"].([]any)[0]) != id {
				continue
			}
			found = true
			st := p["PolicyDocument"].(map[string]any)["Statement"].([]any)[0].(map[string]any)
			assert.Equal(t, "Deny", st["Effect"], id)
			assert.Equal(t, map[string]any{"Bool": map[string]any{"aws:SecureTransport": "false"}}, st["Condition"], id)
		}
		assert.True(t, found, "%s refuses requests without TLS", id)
	}

	// The function: Go on arm64, 5 minutes, its own log group, env from
	// package contract.
	fnID, fn := only(t, tp, "AWS::Lambda::Function", "WFunction")
	assert.Equal(t, "provided.al2023", fn["Runtime"])
	assert.Equal(t, []any{"arm64"}, fn["Architectures"])
	assert.Equal(t, 300.0, fn["Timeout"])
	assert.Equal(t, 256.0, fn["MemorySize"])
	assert.Equal(t, 30.0, fn["ReservedConcurrentExecutions"], "delivery never takes more of the account's concurrency")
	_, lg := only(t, tp, "AWS::Logs::LogGroup", "WFunctionLogGroup")
	assert.Equal(t, 30.0, lg["RetentionInDays"])
	keyID, _ := only(t, tp, "AWS::KMS::Key", "WSecretsKey")
	assert.Equal(t, map[string]any{
		contract.EnvWebhookSecretsKey:            map[string]any{"Fn::GetAtt": []any{keyID, "Arn"}},
		contract.EnvEventsTable:                  map[string]any{"Ref": tableID},
		contract.EnvWebhookQueueURL:              map[string]any{"Ref": retryID},
		contract.EnvWebhookSchedule:              "5s,5m,30m,2h,5h,10h,10h",
		contract.EnvWebhookTimeout:               "10s",
		contract.EnvWebhookDisableAfter:          "120h0m0s",
		contract.EnvMetricsNamespace:             "Triggers/S",
		contract.EnvLogLevel:                     "info",
		contract.EnvWebhookParallel:              "20",
		contract.EnvWebhookBreakerThreshold:      "5",
		contract.EnvWebhookBreakerCooldown:       "30s",
		contract.EnvWebhookSlowAfter:             "5s",
		contract.EnvWebhookRoundHold:             "6h0m0s",
		contract.EnvWebhookSlowLaneAfter:         "1s",
		contract.EnvWebhookTenantSlowConcurrency: "4",
	}, fn["Environment"].(map[string]any)["Variables"])
	assert.NotContains(t, fn["Environment"].(map[string]any)["Variables"], contract.EnvWebhookEndpointRate, "no rate cap by default")
	assert.NotContains(t, fn["Environment"].(map[string]any)["Variables"], contract.EnvWebhookAllowPrivate, "never set by the constructs")

	// Event sources on the delivery queue and the retry queue.
	deliveryID, _ := only(t, tp, "AWS::SQS::Queue", "DDeliveryQueue")
	esms := resources(tp, "AWS::Lambda::EventSourceMapping", "WFunction")
	var sources []string
	maxConcurrency := map[string]any{}
	for id, r := range esms {
		p := r["Properties"].(map[string]any)
		sources = append(sources, refName(p["EventSourceArn"]))
		maxConcurrency[refName(p["EventSourceArn"])] = p["ScalingConfig"].(map[string]any)["MaximumConcurrency"]
		assert.Equal(t, map[string]any{"Ref": fnID}, p["FunctionName"], id)
		assert.Equal(t, 10.0, p["BatchSize"], id)
		assert.Equal(t, 1.0, p["MaximumBatchingWindowInSeconds"], id)
		assert.Equal(t, []any{"ReportBatchItemFailures"}, p["FunctionResponseTypes"], id)
	}
	assert.ElementsMatch(t, []string{deliveryID, retryID}, sources)
	assert.Equal(t, map[string]any{deliveryID: 20.0, retryID: 10.0}, maxConcurrency,
		"new events and retries have instances of their own, within the reserved concurrency")

	// IAM, action by action: the table's ARN only (no index), send on
	// the retry queue, consume both queues (from the event sources), its
	// own log group.
	roleID, _ := only(t, tp, "AWS::IAM::Role", "WFunctionServiceRole")
	lgID, _ := only(t, tp, "AWS::Logs::LogGroup", "WFunctionLogGroup")
	consume := []string{"sqs:ReceiveMessage", "sqs:ChangeMessageVisibility", "sqs:GetQueueUrl", "sqs:DeleteMessage", "sqs:GetQueueAttributes"}
	assert.Equal(t, sorted(
		allow([]string{"logs:CreateLogStream", "logs:PutLogEvents"}, lgID),
		allow(triggersapi.WebhookEventsTableActions(), tableID),
		allow([]string{"sqs:SendMessage"}, retryID),
		allow(consume, deliveryID, retryID),
		allow([]string{"kms:Decrypt"}, keyID),
	), grants(tp, roleID))
	assert.Equal(t, []string{"dynamodb:GetItem", "dynamodb:Query", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem", "dynamodb:ConditionCheckItem"}, triggersapi.WebhookEventsTableActions())
}

func TestWebhookDeliveryCustomerManagedKey(t *testing.T) {
	stack := awscdk.NewStack(newApp(), jsii.String("S"), nil)
	key := awskms.NewKey(stack, jsii.String("Key"), &awskms.KeyProps{EnableKeyRotation: jsii.Bool(true)})
	events := eventstore.NewEventsTable(stack, jsii.String("Events"), &eventstore.EventsTableProps{TableOptions: dynamotable.TableOptions{EncryptionKey: key}})
	queue := awssqs.NewQueue(stack, jsii.String("Deliveries"), &awssqs.QueueProps{VisibilityTimeout: awscdk.Duration_Minutes(jsii.Number(30))})
	triggersapi.NewWebhookDelivery(stack, jsii.String("W"), &triggersapi.WebhookDeliveryProps{
		EventsTable: events, DeliveryQueue: queue, WebhookOptions: triggersapi.WebhookOptions{Function: webhookCode(stack)},
	})
	tp := templateOf(stack)
	roleID, _ := only(t, tp, "AWS::IAM::Role", "WFunctionServiceRole")
	keyID, _ := only(t, tp, "AWS::KMS::Key", "Key")
	got := grants(tp, roleID)
	for _, a := range []string{"kms:Decrypt", "kms:DescribeKey", "kms:Encrypt", "kms:ReEncrypt*", "kms:GenerateDataKey*"} {
		assert.Contains(t, got, "Allow "+a+" on "+keyID, "the table's key, for reading and writing items")
	}
}

func TestWebhookDeliveryOptions(t *testing.T) {
	mins := func(n float64) awscdk.Duration { return awscdk.Duration_Minutes(jsii.Number(n)) }
	_, w, tp := webhookStack(t, nil, triggersapi.WebhookOptions{
		Function:               &triggersapi.FunctionOptions{MemoryMiB: 512, Timeout: mins(2)},
		ReservedConcurrency:    20,
		DeliveryMaxConcurrency: 12,
		RetryMaxConcurrency:    8,
		Parallel:               12,
		CircuitBreaker:         &triggersapi.CircuitBreakerOptions{Threshold: 3, Cooldown: mins(5), SlowAfter: awscdk.Duration_Millis(jsii.Number(2500))},
		EndpointRateLimit:      25,
		SlowLane:               &triggersapi.SlowLaneOptions{After: awscdk.Duration_Millis(jsii.Number(1500)), TenantConcurrency: 3},
		Schedule:               []awscdk.Duration{awscdk.Duration_Seconds(jsii.Number(30)), mins(1), mins(90), awscdk.Duration_Hours(jsii.Number(24))},
		Timeout:                awscdk.Duration_Seconds(jsii.Number(5)),
		DisableAfter:           awscdk.Duration_Hours(jsii.Number(36)),
		MaxReceiveCount:        3,
		LogLevel:               "debug",
	})
	assert.Equal(t, "30s,1m,1h30m,24h", w.Schedule())
	_, fn := only(t, tp, "AWS::Lambda::Function", "WFunction")
	assert.Equal(t, 120.0, fn["Timeout"])
	assert.Equal(t, 512.0, fn["MemorySize"])
	assert.Equal(t, 20.0, fn["ReservedConcurrentExecutions"])
	env := fn["Environment"].(map[string]any)["Variables"].(map[string]any)
	assert.Equal(t, "30s,1m,1h30m,24h", env[contract.EnvWebhookSchedule])
	assert.Equal(t, "5s", env[contract.EnvWebhookTimeout])
	assert.Equal(t, "36h0m0s", env[contract.EnvWebhookDisableAfter])
	assert.Equal(t, "debug", env[contract.EnvLogLevel])
	assert.Equal(t, "12", env[contract.EnvWebhookParallel])
	assert.Equal(t, "3", env[contract.EnvWebhookBreakerThreshold])
	assert.Equal(t, "5m0s", env[contract.EnvWebhookBreakerCooldown])
	assert.Equal(t, "2.5s", env[contract.EnvWebhookSlowAfter])
	assert.Equal(t, "25", env[contract.EnvWebhookEndpointRate])
	assert.Equal(t, "1.5s", env[contract.EnvWebhookSlowLaneAfter])
	assert.Equal(t, "3", env[contract.EnvWebhookTenantSlowConcurrency])
	assert.Equal(t, contract.RoundHoldFor(3, 12*time.Minute).String(), env[contract.EnvWebhookRoundHold], "3 receives of 12 minutes, at least the default")
	var got []any
	for _, r := range resources(tp, "AWS::Lambda::EventSourceMapping", "WFunction") {
		got = append(got, r["Properties"].(map[string]any)["ScalingConfig"].(map[string]any)["MaximumConcurrency"])
	}
	assert.ElementsMatch(t, []any{12.0, 8.0}, got)
	_, retry := only(t, tp, "AWS::SQS::Queue", "WRetryQueue")
	assert.Equal(t, 720.0, retry["VisibilityTimeout"], "6 x 2 minutes")
	assert.Equal(t, 3.0, retry["RedrivePolicy"].(map[string]any)["maxReceiveCount"])
}

// Bad options fail at construct time, naming the value and the fix, both
// alone and through TriggersApiProps.Webhooks.
func TestWebhookOptionsValidation(t *testing.T) {
	secs := func(n float64) awscdk.Duration { return awscdk.Duration_Seconds(jsii.Number(n)) }
	hours := func(n float64) awscdk.Duration { return awscdk.Duration_Hours(jsii.Number(n)) }
	tests := []struct {
		name string
		o    triggersapi.WebhookOptions
		want string
	}{
		{"timeout too short", triggersapi.WebhookOptions{Timeout: awscdk.Duration_Millis(jsii.Number(500))}, "Timeout 500ms is outside 1s-30s"},
		{"timeout too long", triggersapi.WebhookOptions{Timeout: secs(45)}, "Timeout 45s is outside 1s-30s"},
		{"empty schedule", triggersapi.WebhookOptions{Schedule: []awscdk.Duration{}}, `Schedule "" is invalid (no delays; want at least one retry): give 1 to 20 delays`},
		{"schedule too long", triggersapi.WebhookOptions{Schedule: repeat(secs(5), 21)}, `Schedule "` + strings.Repeat("5s,", 20) + `5s" is invalid (21 delays, at most 20 allowed)`},
		{"schedule step over a day", triggersapi.WebhookOptions{Schedule: []awscdk.Duration{secs(5), hours(25)}}, `Schedule "5s,25h" is invalid (element 2 (25h) is longer than 24h)`},
		{"schedule decreasing", triggersapi.WebhookOptions{Schedule: []awscdk.Duration{awscdk.Duration_Minutes(jsii.Number(5)), secs(30)}}, `Schedule "5m,30s" is invalid (element 2 (30s) is shorter than element 1 (5m); delays must not decrease)`},
		{"disable after under an hour", triggersapi.WebhookOptions{DisableAfter: awscdk.Duration_Minutes(jsii.Number(30))}, "DisableAfter 30m0s is outside 1h-2160h"},
		{"disable after over 90 days", triggersapi.WebhookOptions{DisableAfter: awscdk.Duration_Days(jsii.Number(91))}, "DisableAfter 2184h0m0s is outside 1h-2160h"},
		{"receive count below one", triggersapi.WebhookOptions{MaxReceiveCount: -1}, "MaxReceiveCount -1 is outside 1-1000"},
		{"log level", triggersapi.WebhookOptions{LogLevel: "verbose"}, `LogLevel "verbose" is invalid: use debug, info, warn or error`},
		{"memory", triggersapi.WebhookOptions{Function: &triggersapi.FunctionOptions{MemoryMiB: 64}}, "Function.MemoryMiB 64 is outside 128-10240"},
		{"function shorter than a request and its writes", triggersapi.WebhookOptions{Function: &triggersapi.FunctionOptions{Timeout: secs(12)}}, "Function.Timeout 12s is shorter than the webhook Timeout 10s plus 3s for an attempt's store writes: the function would never start an attempt; raise Function.Timeout to at least 13s"},
		{"reserved concurrency below the event sources'", triggersapi.WebhookOptions{ReservedConcurrency: 25}, "ReservedConcurrency 25 is less than DeliveryMaxConcurrency 20 + RetryMaxConcurrency 10 = 30: the event sources would be throttled; raise ReservedConcurrency to at least 30"},
		{"reserved concurrency below raised event sources", triggersapi.WebhookOptions{DeliveryMaxConcurrency: 40}, "ReservedConcurrency 30 is less than DeliveryMaxConcurrency 40 + RetryMaxConcurrency 10 = 50"},
		{"reserved concurrency too high", triggersapi.WebhookOptions{ReservedConcurrency: 1001}, "ReservedConcurrency 1001 is outside 1-1000"},
		{"event source concurrency below two", triggersapi.WebhookOptions{RetryMaxConcurrency: 1}, "RetryMaxConcurrency 1 is outside 2-1000: an SQS event source's MaximumConcurrency is 2 to 1000"},
		{"fractional concurrency", triggersapi.WebhookOptions{DeliveryMaxConcurrency: 2.5}, "DeliveryMaxConcurrency 2.5 is outside 2-1000"},
		{"parallel", triggersapi.WebhookOptions{Parallel: 21}, "Parallel 21 is outside 1-20"},
		{"endpoint rate", triggersapi.WebhookOptions{EndpointRateLimit: -2}, "EndpointRateLimit -2 is outside 1-10000"},
		{"breaker threshold", triggersapi.WebhookOptions{CircuitBreaker: &triggersapi.CircuitBreakerOptions{Threshold: 1001}}, "CircuitBreaker.Threshold 1001 is outside 1-1000"},
		{"breaker cooldown", triggersapi.WebhookOptions{CircuitBreaker: &triggersapi.CircuitBreakerOptions{Cooldown: hours(2)}}, "CircuitBreaker.Cooldown 2h0m0s is outside 1s-1h"},
		{"slow after the request timeout", triggersapi.WebhookOptions{CircuitBreaker: &triggersapi.CircuitBreakerOptions{SlowAfter: secs(11)}}, "CircuitBreaker.SlowAfter 11s is outside 100ms-10s (the webhook Timeout)"},
		{"slow lane after the request timeout", triggersapi.WebhookOptions{SlowLane: &triggersapi.SlowLaneOptions{After: secs(11)}}, "SlowLane.After 11s is outside 100ms-10s (the webhook Timeout): a request answered after that long marks its endpoint slow (default 1s); set SlowLane.Disable to turn the slow lane off"},
		{"slow lane after too short", triggersapi.WebhookOptions{SlowLane: &triggersapi.SlowLaneOptions{After: awscdk.Duration_Millis(jsii.Number(50))}}, "SlowLane.After 50ms is outside 100ms-10s"},
		{"slow lane concurrency", triggersapi.WebhookOptions{SlowLane: &triggersapi.SlowLaneOptions{TenantConcurrency: 1001}}, "SlowLane.TenantConcurrency 1001 is outside 1-1000: give how many requests to one tenant's slow endpoints may be in flight at once (default 4)"},
		{"slow lane as wide as the delivery queue's", triggersapi.WebhookOptions{ReservedConcurrency: 50, RetryMaxConcurrency: 30, SlowLane: &triggersapi.SlowLaneOptions{TenantConcurrency: 20}}, "SlowLane.TenantConcurrency 20 is not less than DeliveryMaxConcurrency 20: one tenant's slow endpoints could still hold every delivery instance; lower it (default 4, or DeliveryMaxConcurrency - 1 when that is less) or set SlowLane.Disable"},
		{"slow lane as wide as the retry queue's", triggersapi.WebhookOptions{SlowLane: &triggersapi.SlowLaneOptions{TenantConcurrency: 10}}, "SlowLane.TenantConcurrency 10 is not less than RetryMaxConcurrency 10: the attempts the slow lane puts off are made on the retry queue, so one tenant's slow endpoints could hold every retry instance, every tenant's retries waiting; lower it (default 4, or the narrower queue's maximum concurrency minus 1 when that is less), raise RetryMaxConcurrency, or set SlowLane.Disable"},
		{"slow lane concurrency token", triggersapi.WebhookOptions{SlowLane: &triggersapi.SlowLaneOptions{TenantConcurrency: numberToken("Lane")}}, "SlowLane.TenantConcurrency is a token: give a literal, read by the function from an environment variable written at synth"},
		{"slow lane after token", triggersapi.WebhookOptions{SlowLane: &triggersapi.SlowLaneOptions{After: awscdk.Duration_Seconds(jsii.Number(numberToken("LaneAfter")))}}, "SlowLane.After is a token: give a literal duration"},
		{"the function's own reserved concurrency", triggersapi.WebhookOptions{Function: &triggersapi.FunctionOptions{ReservedConcurrency: jsii.Number(20)}}, "Function.ReservedConcurrency 20 is not used for the webhook function: set ReservedConcurrency"},
		{"function over 15 minutes", triggersapi.WebhookOptions{Function: &triggersapi.FunctionOptions{Timeout: awscdk.Duration_Minutes(jsii.Number(16))}}, "Function.Timeout 16m0s is outside 1s-15m: Lambda runs an invocation for 1 second to 15 minutes; give a timeout in that range"},
		{"parallel token", triggersapi.WebhookOptions{Parallel: numberToken("Parallel")}, "Parallel is a token: give a literal, read by the function from an environment variable written at synth: give how many attempts one message makes at once (default 20)"},
		{"endpoint rate token", triggersapi.WebhookOptions{EndpointRateLimit: numberToken("Rate")}, "EndpointRateLimit is a token: give a literal, read by the function from an environment variable written at synth"},
		{"breaker threshold token", triggersapi.WebhookOptions{CircuitBreaker: &triggersapi.CircuitBreakerOptions{Threshold: numberToken("Threshold")}}, "CircuitBreaker.Threshold is a token: give a literal, read by the function from an environment variable written at synth"},
		// Found by review: the message said the function reads its own
		// timeout as a Go duration string; it is the queues' visibility
		// timeouts and the round hold, made at synth, that need it.
		{"function timeout token", triggersapi.WebhookOptions{Function: &triggersapi.FunctionOptions{Timeout: awscdk.Duration_Seconds(jsii.Number(numberToken("FnTimeout")))}},
			"Function.Timeout is a token: give a literal duration (the retry and delivery queues' visibility timeouts are 6 times it, and a round's hold, WEBHOOK_ROUND_HOLD, follows from them, all computed at synth; default 5m)"},
		{"receive count token", triggersapi.WebhookOptions{MaxReceiveCount: numberToken("Receives")}, "MaxReceiveCount is a token: give a literal (it sets how long a round's hold lasts, WEBHOOK_ROUND_HOLD, computed at synth; default 5)"},
		{"secrets key alias", triggersapi.WebhookOptions{SecretsKey: awskms.Alias_FromAliasName(awscdk.NewStack(newApp(), jsii.String("A"), nil), jsii.String("K"), jsii.String("alias/mine"))}, "SecretsKey is an alias: give the key itself"},
		{"removal policy of a given key", triggersapi.WebhookOptions{
			SecretsKey:              awskms.Key_FromKeyArn(awscdk.NewStack(newApp(), jsii.String("B"), nil), jsii.String("K"), jsii.String("arn:aws:kms:eu-west-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab")),
			SecretsKeyRemovalPolicy: awscdk.RemovalPolicy_DESTROY,
		}, "SecretsKeyRemovalPolicy DESTROY is set with SecretsKey"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stack := awscdk.NewStack(newApp(), jsii.String("S"), nil)
			events := eventstore.NewEventsTable(stack, jsii.String("Events"), nil)
			queue := awssqs.NewQueue(stack, jsii.String("Q"), &awssqs.QueueProps{VisibilityTimeout: hours(12)})
			func() {
				defer func() {
					r := recover()
					require.NotNil(t, r, "NewWebhookDelivery accepted %s", tt.name)
					msg := fmt.Sprint(r)
					assert.Contains(t, msg, `webhookdelivery "W": invalid props:`)
					assert.Contains(t, msg, "\n"+tt.want)
				}()
				triggersapi.NewWebhookDelivery(stack, jsii.String("W"), &triggersapi.WebhookDeliveryProps{EventsTable: events, DeliveryQueue: queue, WebhookOptions: tt.o})
			}()
			o := tt.o
			err := triggersapi.ValidateProps(&triggersapi.TriggersApiProps{Webhooks: &o})
			require.Error(t, err)
			assert.Contains(t, err.Error(), "Webhooks."+tt.want)
		})
	}
	// The defaults' edges are accepted.
	assert.NoError(t, triggersapi.ValidateProps(&triggersapi.TriggersApiProps{Webhooks: &triggersapi.WebhookOptions{
		Timeout: secs(30), Schedule: append(repeat(secs(1), 19), hours(24)), DisableAfter: hours(1), MaxReceiveCount: 1,
		Function:            &triggersapi.FunctionOptions{Timeout: secs(33)},
		ReservedConcurrency: 4, DeliveryMaxConcurrency: 2, RetryMaxConcurrency: 2, Parallel: 20, EndpointRateLimit: 10000,
		CircuitBreaker: &triggersapi.CircuitBreakerOptions{Threshold: 1000, Cooldown: hours(1), SlowAfter: secs(30)},
	}}))
	assert.NoError(t, triggersapi.ValidateProps(&triggersapi.TriggersApiProps{Webhooks: &triggersapi.WebhookOptions{
		CircuitBreaker: &triggersapi.CircuitBreakerOptions{DisableSlowAfter: true, SlowAfter: secs(99)},
	}}), "a slow watch turned off is not checked")
	assert.NoError(t, triggersapi.ValidateProps(&triggersapi.TriggersApiProps{Webhooks: &triggersapi.WebhookOptions{
		ReservedConcurrency: 40, RetryMaxConcurrency: 20,
		SlowLane: &triggersapi.SlowLaneOptions{After: secs(10), TenantConcurrency: 19},
	}}), "the slow lane's edges")
	assert.NoError(t, triggersapi.ValidateProps(&triggersapi.TriggersApiProps{Webhooks: &triggersapi.WebhookOptions{
		SlowLane: &triggersapi.SlowLaneOptions{After: awscdk.Duration_Millis(jsii.Number(100)), TenantConcurrency: 1},
	}}), "the slow lane's lower edges")
	assert.NoError(t, triggersapi.ValidateProps(&triggersapi.TriggersApiProps{Webhooks: &triggersapi.WebhookOptions{
		SlowLane: &triggersapi.SlowLaneOptions{Disable: true, After: secs(99), TenantConcurrency: 5000},
	}}), "a slow lane turned off is not checked")
	assert.NoError(t, triggersapi.ValidateProps(&triggersapi.TriggersApiProps{Webhooks: &triggersapi.WebhookOptions{}}))
}

// numberToken is a number known only at deploy time: a Number
// CfnParameter's ValueAsNumber, in a stack of its own.
func numberToken(id string) float64 {
	stack := awscdk.NewStack(newApp(), jsii.String("Params"+id), nil)
	return *awscdk.NewCfnParameter(stack, jsii.String(id), &awscdk.CfnParameterProps{Type: jsii.String("Number")}).ValueAsNumber()
}

// Deploy-time concurrencies (CfnParameter values) reach the template as
// references to the parameters, never replaced by the defaults (found by
// review: every number token was dropped silently).
func TestWebhookConcurrencyTokensReachTheTemplate(t *testing.T) {
	stack := awscdk.NewStack(newApp(), jsii.String("S"), nil)
	num := func(id string) float64 {
		return *awscdk.NewCfnParameter(stack, jsii.String(id), &awscdk.CfnParameterProps{Type: jsii.String("Number")}).ValueAsNumber()
	}
	events := eventstore.NewEventsTable(stack, jsii.String("Events"), nil)
	d := triggersapi.NewStreamDelivery(stack, jsii.String("D"), &triggersapi.StreamDeliveryProps{
		EventsTable:     events,
		DeliveryOptions: triggersapi.DeliveryOptions{QueueVisibilityTimeout: awscdk.Duration_Hours(jsii.Number(2))},
	})
	triggersapi.NewWebhookDelivery(stack, jsii.String("W"), &triggersapi.WebhookDeliveryProps{
		EventsTable: events, DeliveryQueue: d.DeliveryQueue(), WebhookOptions: triggersapi.WebhookOptions{
			Function:               webhookCode(stack),
			ReservedConcurrency:    num("Reserved"),
			DeliveryMaxConcurrency: num("DeliveryMax"),
			RetryMaxConcurrency:    num("RetryMax"),
		},
	})
	tp := templateOf(stack)
	_, fn := only(t, tp, "AWS::Lambda::Function", "WFunction")
	assert.Equal(t, map[string]any{"Ref": "Reserved"}, fn["ReservedConcurrentExecutions"])
	var got []any
	for _, r := range resources(tp, "AWS::Lambda::EventSourceMapping", "WFunction") {
		got = append(got, r["Properties"].(map[string]any)["ScalingConfig"].(map[string]any)["MaximumConcurrency"])
	}
	assert.ElementsMatch(t, []any{map[string]any{"Ref": "DeliveryMax"}, map[string]any{"Ref": "RetryMax"}}, got)
}

func repeat(d awscdk.Duration, n int) []awscdk.Duration {
	out := make([]awscdk.Duration, n)
	for i := range out {
		out[i] = d
	}
	return out
}

// The webhook function consumes the delivery queue: its visibility
// timeout must cover 6 function timeouts.
func TestWebhookDeliveryChecksTheDeliveryQueueVisibility(t *testing.T) {
	stack := awscdk.NewStack(newApp(), jsii.String("S"), nil)
	events := eventstore.NewEventsTable(stack, jsii.String("Events"), nil)
	d := triggersapi.NewStreamDelivery(stack, jsii.String("D"), &triggersapi.StreamDeliveryProps{EventsTable: events})
	assert.PanicsWithError(t, `webhookdelivery "W": the delivery queue's visibility timeout 30s is under 6 x the webhook function's timeout (5m0s) = 30m0s: raise it (DeliveryOptions.QueueVisibilityTimeout; TriggersApi does so itself when Webhooks is set and QueueVisibilityTimeout is not)`, func() {
		triggersapi.NewWebhookDelivery(stack, jsii.String("W"), &triggersapi.WebhookDeliveryProps{EventsTable: events, DeliveryQueue: d.DeliveryQueue()})
	})
	// An imported queue cannot be checked; it is the caller's to size.
	imported := awssqs.Queue_FromQueueArn(stack, jsii.String("Imported"), jsii.String("arn:aws:sqs:eu-west-1:111122223333:deliveries"))
	assert.NotPanics(t, func() {
		triggersapi.NewWebhookDelivery(stack, jsii.String("W2"), &triggersapi.WebhookDeliveryProps{EventsTable: events, DeliveryQueue: imported, WebhookOptions: triggersapi.WebhookOptions{Function: webhookCode(stack)}})
	})

	err := triggersapi.ValidateProps(&triggersapi.TriggersApiProps{
		Delivery: &triggersapi.DeliveryOptions{QueueVisibilityTimeout: awscdk.Duration_Minutes(jsii.Number(10))},
		Webhooks: &triggersapi.WebhookOptions{},
	})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "Delivery.QueueVisibilityTimeout 10m0s is under 6 x the webhook function's timeout (5m0s) = 30m0s")
	assert.NoError(t, triggersapi.ValidateProps(&triggersapi.TriggersApiProps{
		Delivery: &triggersapi.DeliveryOptions{QueueVisibilityTimeout: awscdk.Duration_Minutes(jsii.Number(10))},
	}), "without webhooks the delivery queue is yours to size")

	for _, missing := range []*triggersapi.WebhookDeliveryProps{nil, {EventsTable: events}} {
		assert.Panics(t, func() { triggersapi.NewWebhookDelivery(stack, jsii.String("X"), missing) })
	}
}

// Two webhook deliveries in one stack would share the default metrics
// namespace and mix their webhook metrics (dimensioned by outcome and
// reason only) and alarms: the second fails synth naming the fix,
// whether it is standalone or a TriggersApi's, unless it has a namespace
// of its own. A standalone delivery beside an API without webhooks keeps
// the default (the API's own metrics have other names).
func TestTwoWebhookDeliveriesInOneStackNeedTheirOwnNamespace(t *testing.T) {
	stack := awscdk.NewStack(newApp(), jsii.String("S"), nil)
	code := webhookCode(stack)
	api := triggersapi.NewTriggersApi(stack, jsii.String("Api"), &triggersapi.TriggersApiProps{
		Webhooks: &triggersapi.WebhookOptions{Function: code},
	})
	queue := awssqs.NewQueue(stack, jsii.String("Q"), &awssqs.QueueProps{VisibilityTimeout: awscdk.Duration_Hours(jsii.Number(1))})
	props := func(ns string) *triggersapi.WebhookDeliveryProps {
		return &triggersapi.WebhookDeliveryProps{EventsTable: api.EventsTable(), DeliveryQueue: queue, MetricsNamespace: ns,
			WebhookOptions: triggersapi.WebhookOptions{Function: code}}
	}
	assert.PanicsWithError(t, `webhookdelivery "W": its metrics namespace "Triggers/S" is that of WebhookDelivery "S/Api/Webhooks" in the same stack: their webhook metrics (dimensioned by outcome and reason only) and alarms would mix; give one of them its own MetricsNamespace (WebhookDeliveryProps.MetricsNamespace, or TriggersApiProps.MetricsNamespace for the one a TriggersApi makes), such as "Triggers/S/W"`, func() {
		triggersapi.NewWebhookDelivery(stack, jsii.String("W"), props(""))
	})
	w := triggersapi.NewWebhookDelivery(stack, jsii.String("W2"), props("Triggers/S/W2"))
	assert.Equal(t, "Triggers/S/W2", w.MetricsNamespace())
	assert.Panics(t, func() { triggersapi.NewWebhookDelivery(stack, jsii.String("W3"), props("Triggers/S/W2")) }, "an explicit namespace equal to another's")

	// A standalone delivery first, then an API with webhooks in the default namespace.
	other := awscdk.NewStack(newApp(), jsii.String("T"), nil)
	events := eventstore.NewEventsTable(other, jsii.String("Events"), nil)
	q := awssqs.NewQueue(other, jsii.String("Q"), &awssqs.QueueProps{VisibilityTimeout: awscdk.Duration_Hours(jsii.Number(1))})
	code = webhookCode(other)
	triggersapi.NewWebhookDelivery(other, jsii.String("Push"), &triggersapi.WebhookDeliveryProps{EventsTable: events, DeliveryQueue: q,
		WebhookOptions: triggersapi.WebhookOptions{Function: code}})
	assert.PanicsWithError(t, `webhookdelivery "Webhooks": its metrics namespace "Triggers/T" is that of WebhookDelivery "T/Push" in the same stack: their webhook metrics (dimensioned by outcome and reason only) and alarms would mix; give one of them its own MetricsNamespace (WebhookDeliveryProps.MetricsNamespace, or TriggersApiProps.MetricsNamespace for the one a TriggersApi makes), such as "Triggers/T/Webhooks"`, func() {
		triggersapi.NewTriggersApi(other, jsii.String("Api"), &triggersapi.TriggersApiProps{EventsTable: events,
			Webhooks: &triggersapi.WebhookOptions{Function: code}})
	})

	// Beside an API without webhooks, the default is fine.
	plain := awscdk.NewStack(newApp(), jsii.String("U"), nil)
	bare := triggersapi.NewTriggersApi(plain, jsii.String("Api"), nil)
	assert.NotPanics(t, func() {
		triggersapi.NewWebhookDelivery(plain, jsii.String("Push"), &triggersapi.WebhookDeliveryProps{EventsTable: bare.EventsTable(),
			DeliveryQueue:  awssqs.NewQueue(plain, jsii.String("Q"), &awssqs.QueueProps{VisibilityTimeout: awscdk.Duration_Hours(jsii.Number(1))}),
			WebhookOptions: triggersapi.WebhookOptions{Function: webhookCode(plain)}})
	})
}

// A standalone WebhookDelivery's MetricsNamespace is checked as
// TriggersApi's is (found by review: "AWS/Webhooks" or one with a '$'
// synthesized, and the webhook function refused its configuration at
// every start: no webhook was delivered).
func TestWebhookDeliveryMetricsNamespaceIsChecked(t *testing.T) {
	stack := awscdk.NewStack(newApp(), jsii.String("S"), nil)
	events := eventstore.NewEventsTable(stack, jsii.String("Events"), nil)
	queue := awssqs.NewQueue(stack, jsii.String("Q"), &awssqs.QueueProps{VisibilityTimeout: awscdk.Duration_Hours(jsii.Number(1))})
	code := webhookCode(stack)
	const fix = ` (the webhook function would refuse it at every start): give your own namespace, or leave it unset for Triggers/<stack name>`
	for i, tt := range []struct{ ns, why string }{
		{"AWS/Webhooks", `metrics namespace "AWS/Webhooks" starts with AWS/, which is reserved for AWS services: use for example Triggers/prod`},
		{"Triggers/$x", `metrics namespace "Triggers/$x" has the character '$': use letters, digits and . - _ / # : space`},
	} {
		id := fmt.Sprint("W", i)
		assert.PanicsWithError(t, `webhookdelivery "`+id+`": invalid props:`+"\nMetricsNamespace: "+tt.why+fix, func() {
			triggersapi.NewWebhookDelivery(stack, jsii.String(id), &triggersapi.WebhookDeliveryProps{EventsTable: events, DeliveryQueue: queue, MetricsNamespace: tt.ns,
				WebhookOptions: triggersapi.WebhookOptions{Function: code}})
		}, tt.ns)
	}
	// A token cannot be checked nor compared: it fails naming the fix,
	// not its placeholder's '$'.
	ns := awscdk.NewCfnParameter(stack, jsii.String("Namespace"), nil).ValueAsString()
	assert.PanicsWithError(t, `webhookdelivery "WT": invalid props:`+"\n"+`MetricsNamespace is a token: give a literal namespace, or leave it unset for Triggers/<stack name> (it is checked at synth, since the functions refuse a bad one at every start, and compared with the stack's other namespaces)`, func() {
		triggersapi.NewWebhookDelivery(stack, jsii.String("WT"), &triggersapi.WebhookDeliveryProps{EventsTable: events, DeliveryQueue: queue, MetricsNamespace: *ns,
			WebhookOptions: triggersapi.WebhookOptions{Function: code}})
	})
}

// TriggersApi composes a WebhookDelivery only when Webhooks is set.
func TestTriggersApiWebhooks(t *testing.T) {
	off := awscdk.NewStack(newApp(), jsii.String("Off"), nil)
	api := triggersapi.NewTriggersApi(off, jsii.String("Api"), nil)
	assert.Nil(t, api.Webhooks())
	var iface triggersapi.ITriggersApi = api
	assert.Nil(t, iface.Webhooks())
	tp := templateOf(off)
	assert.Empty(t, resources(tp, "AWS::Lambda::Function", "ApiWebhooks"))
	_, dq := only(t, tp, "AWS::SQS::Queue", "ApiDeliveryQueue")
	assert.NotContains(t, dq, "VisibilityTimeout", "SQS's default 30 s, unchanged")
	_, apiFn := only(t, tp, "AWS::Lambda::Function", "ApiApiFunction")
	assert.NotContains(t, apiFn["Environment"].(map[string]any)["Variables"], contract.EnvWebhookQueueURL)

	on := awscdk.NewStack(newApp(), jsii.String("On"), nil)
	api = triggersapi.NewTriggersApi(on, jsii.String("Api"), &triggersapi.TriggersApiProps{
		Webhooks: &triggersapi.WebhookOptions{Function: webhookCode(on)},
	})
	require.NotNil(t, api.Webhooks())
	assert.Equal(t, "On/Api/Webhooks", *api.Webhooks().Node().Path())
	tp = templateOf(on)
	retryID, _ := only(t, tp, "AWS::SQS::Queue", "ApiWebhooksRetryQueue")
	only(t, tp, "AWS::SQS::Queue", "ApiWebhooksRetryDLQ")
	deliveryID, dq := only(t, tp, "AWS::SQS::Queue", "ApiDeliveryQueue")
	assert.Equal(t, 1800.0, dq["VisibilityTimeout"], "6 x the webhook function's timeout")
	_, fn := only(t, tp, "AWS::Lambda::Function", "ApiWebhooksFunction")
	env := fn["Environment"].(map[string]any)["Variables"].(map[string]any)
	assert.Equal(t, "Triggers/On", env[contract.EnvMetricsNamespace], "the API's metrics namespace")
	var sources []string
	for _, r := range resources(tp, "AWS::Lambda::EventSourceMapping", "ApiWebhooksFunction") {
		sources = append(sources, refName(r["Properties"].(map[string]any)["EventSourceArn"]))
	}
	assert.ElementsMatch(t, []string{deliveryID, retryID}, sources)

	// The API function learns the retry queue and may send to it, nothing
	// more; it may delete subscriptions (items of the events table).
	apiFnID, apiFn := only(t, tp, "AWS::Lambda::Function", "ApiApiFunction")
	assert.Equal(t, map[string]any{"Ref": retryID}, apiFn["Environment"].(map[string]any)["Variables"].(map[string]any)[contract.EnvWebhookQueueURL], apiFnID)
	_, webhookFn := only(t, tp, "AWS::Lambda::Function", "ApiWebhooksFunction")
	assert.Equal(t, webhookFn["Environment"].(map[string]any)["Variables"].(map[string]any)[contract.EnvWebhookRoundHold],
		apiFn["Environment"].(map[string]any)["Variables"].(map[string]any)[contract.EnvWebhookRoundHold], "rounds the API starts hold as long as the webhook function's")
	assert.Equal(t, "6h0m0s", apiFn["Environment"].(map[string]any)["Variables"].(map[string]any)[contract.EnvWebhookRoundHold])
	roleID, _ := only(t, tp, "AWS::IAM::Role", "ApiApiFunctionServiceRole")
	tableID, _ := only(t, tp, "AWS::DynamoDB::Table", "ApiEvents")
	offTp := templateOf(off)
	offRoleID, _ := only(t, offTp, "AWS::IAM::Role", "ApiApiFunctionServiceRole")
	before := grants(offTp, offRoleID)
	var added []string
	for _, g := range grants(tp, roleID) {
		if !slices.Contains(before, g) {
			added = append(added, g)
		}
	}
	keyID, _ := only(t, tp, "AWS::KMS::Key", "ApiWebhooksSecretsKey")
	assert.Equal(t, []string{"Allow dynamodb:DeleteItem on " + tableID, "Allow kms:Encrypt on " + keyID, "Allow sqs:SendMessage on " + retryID}, added)
	assert.Equal(t, map[string]any{"Fn::GetAtt": []any{keyID, "Arn"}}, apiFn["Environment"].(map[string]any)["Variables"].(map[string]any)[contract.EnvWebhookSecretsKey], "the API function seals with the webhook delivery's key")
	assert.Equal(t, []kmsGrant{
		{roleID, "kms:Encrypt", keyID},
		{mustOnly(t, tp, "AWS::IAM::Role", "ApiWebhooksFunctionServiceRole"), "kms:Decrypt", keyID},
	}, kmsGrants(t, tp, keyID), "the API function seals, the webhook function opens, nobody else")
	assert.Equal(t, []string{"dynamodb:DeleteItem"}, triggersapi.ApiWebhookActions())
}

// A lean events table (eventstore.EventsTableProps.Profile) is named to
// the functions that read and write it (EVENTS_PROFILE), and the API
// function may read its inbox pages (BatchGetItem); a sharded one
// (Sharding, also on an import) turns EVENTS_SHARDING on in both; a seed,
// unsharded table sets nothing, so seed templates are as before.
func TestEventsProfileReachesTheFunctions(t *testing.T) {
	stack := awscdk.NewStack(newApp(), jsii.String("Lean"), nil)
	table := eventstore.NewEventsTable(stack, jsii.String("Events"), &eventstore.EventsTableProps{Profile: schema.ProfileLean, Sharding: true})
	triggersapi.NewTriggersApi(stack, jsii.String("Api"), &triggersapi.TriggersApiProps{
		EventsTable: table,
		Webhooks:    &triggersapi.WebhookOptions{Function: webhookCode(stack)},
	})
	tp := templateOf(stack)
	for _, fn := range []string{"ApiApiFunction", "ApiWebhooksFunction"} {
		_, f := only(t, tp, "AWS::Lambda::Function", fn)
		assert.Equal(t, "lean", f["Environment"].(map[string]any)["Variables"].(map[string]any)[contract.EnvEventsProfile], fn)
		assert.Equal(t, "on", f["Environment"].(map[string]any)["Variables"].(map[string]any)[contract.EnvEventsSharding], fn)
	}
	tableID, _ := only(t, tp, "AWS::DynamoDB::Table", "Events")
	roleID, _ := only(t, tp, "AWS::IAM::Role", "ApiApiFunctionServiceRole")
	assert.Contains(t, grants(tp, roleID), "Allow dynamodb:BatchGetItem on "+tableID)

	seed := awscdk.NewStack(newApp(), jsii.String("Seed"), nil)
	triggersapi.NewTriggersApi(seed, jsii.String("Api"), &triggersapi.TriggersApiProps{
		Webhooks: &triggersapi.WebhookOptions{Function: webhookCode(seed)},
	})
	tp = templateOf(seed)
	for _, fn := range []string{"ApiApiFunction", "ApiWebhooksFunction"} {
		_, f := only(t, tp, "AWS::Lambda::Function", fn)
		assert.NotContains(t, f["Environment"].(map[string]any)["Variables"], contract.EnvEventsProfile, fn)
		assert.NotContains(t, f["Environment"].(map[string]any)["Variables"], contract.EnvEventsSharding, fn)
	}
	roleID, _ = only(t, tp, "AWS::IAM::Role", "ApiApiFunctionServiceRole")
	for _, g := range grants(tp, roleID) {
		assert.NotContains(t, g, "BatchGetItem")
	}

	imported := awscdk.NewStack(newApp(), jsii.String("Imported"), nil)
	triggersapi.NewTriggersApi(imported, jsii.String("Api"), &triggersapi.TriggersApiProps{
		EventsTable: eventstore.FromEventsTableAttributes(imported, jsii.String("Events"), &eventstore.EventsTableAttributes{
			TableName: jsii.String("events"), TableStreamArn: jsii.String("arn:aws:dynamodb:eu-west-1:111111111111:table/events/stream/2026-11-26T00:00:00.000"), Sharding: true,
		}),
	})
	_, f := only(t, templateOf(imported), "AWS::Lambda::Function", "ApiApiFunction")
	assert.Equal(t, "on", f["Environment"].(map[string]any)["Variables"].(map[string]any)[contract.EnvEventsSharding])
}

// Every path parameter of every route is required by the request
// validator: {event_id} and {subscription_id}.
func TestEveryPathParameterIsRequired(t *testing.T) {
	stack := awscdk.NewStack(newApp(), jsii.String("S"), nil)
	triggersapi.NewTriggersApi(stack, jsii.String("Api"), nil)
	tp := templateOf(stack)
	// Each resource's full path, from its parents (the root resource is
	// no AWS::ApiGateway::Resource: its path is "").
	props := map[string]map[string]any{}
	for id, r := range resources(tp, "AWS::ApiGateway::Resource", "") {
		props[id] = r["Properties"].(map[string]any)
	}
	var pathOf func(id string) string
	pathOf = func(id string) string {
		p, ok := props[id]
		if !ok {
			return ""
		}
		return pathOf(refName(p["ParentId"])) + "/" + p["PathPart"].(string)
	}
	checked := map[string]bool{}
	for id, m := range resources(tp, "AWS::ApiGateway::Method", "") {
		p := m["Properties"].(map[string]any)
		path := pathOf(refName(p["ResourceId"]))
		var want map[string]any
		if ps := contract.PathParams(path); len(ps) > 0 {
			want = map[string]any{}
			for _, name := range ps {
				want["method.request.path."+name] = true
			}
		}
		if want == nil {
			assert.NotContains(t, p, "RequestParameters", id)
			continue
		}
		assert.Equal(t, want, p["RequestParameters"], "%s %s", id, path)
		for k := range want {
			checked[k] = true
		}
	}
	assert.Equal(t, map[string]bool{"method.request.path.event_id": true, "method.request.path.subscription_id": true}, checked)
}

// Webhook delivery alone, on the delivery queue of a StreamDelivery: a
// queue of its own for retries, and the API's role may queue redeliveries.
// (The prebuilt code stands for the webhook function's binary; without
// it the function is built at synth from WebhooksPackage.)
func ExampleNewWebhookDelivery() {
	ctx := map[string]any{"aws:cdk:bundling-stacks": []any{}}
	app := awscdk.NewApp(&awscdk.AppProps{Context: &ctx})
	stack := awscdk.NewStack(app, jsii.String("Webhooks"), nil)
	events := eventstore.NewEventsTable(stack, jsii.String("Events"), nil)
	d := triggersapi.NewStreamDelivery(stack, jsii.String("Delivery"), &triggersapi.StreamDeliveryProps{
		EventsTable:     events,
		DeliveryOptions: triggersapi.DeliveryOptions{QueueVisibilityTimeout: awscdk.Duration_Minutes(jsii.Number(30))},
	})
	bucket := awss3.Bucket_FromBucketName(stack, jsii.String("Artifacts"), jsii.String("ci-artifacts"))
	w := triggersapi.NewWebhookDelivery(stack, jsii.String("Push"), &triggersapi.WebhookDeliveryProps{
		EventsTable:   events,
		DeliveryQueue: d.DeliveryQueue(),
		WebhookOptions: triggersapi.WebhookOptions{
			Schedule: []awscdk.Duration{awscdk.Duration_Seconds(jsii.Number(30)), awscdk.Duration_Minutes(jsii.Number(10)), awscdk.Duration_Hours(jsii.Number(2))},
			Function: &triggersapi.FunctionOptions{Code: awslambda.Code_FromBucket(bucket, jsii.String("webhooks.zip"), nil)},
		},
	})
	fmt.Println("schedule:", w.Schedule())
	tmpl := assertions.Template_FromStack(stack, nil)
	fmt.Println("queues:", len(*tmpl.FindResources(jsii.String("AWS::SQS::Queue"), nil)))
	fmt.Println("event source mappings:", len(*tmpl.FindResources(jsii.String("AWS::Lambda::EventSourceMapping"), nil)))
	// Output:
	// schedule: 30s,10m,2h
	// queues: 5
	// event source mappings: 3
}

// kmsGrant is one IAM grant of a KMS action on a key: the role holding
// it, the action, the key's logical id.
type kmsGrant struct{ role, action, key string }

func mustOnly(t *testing.T, tp map[string]any, typ, prefix string) string {
	t.Helper()
	id, _ := only(t, tp, typ, prefix)
	return id
}

// kmsGrants enumerates every IAM policy of the template (AWS::IAM::Policy,
// AWS::IAM::ManagedPolicy, a role's inline Policies) and returns, sorted,
// each role's KMS (or "*") actions on key or on "*". Every statement
// found must carry SecretsKeyConditions.
func kmsGrants(t *testing.T, tp map[string]any, key string) []kmsGrant {
	t.Helper()
	var out []kmsGrant
	scan := func(roles []any, doc any) {
		for _, st := range doc.(map[string]any)["Statement"].([]any) {
			s := st.(map[string]any)
			for _, a := range asList(s["Action"]) {
				action := a.(string)
				if action != "*" && !strings.HasPrefix(action, "kms:") {
					continue
				}
				for _, r := range asList(s["Resource"]) {
					name := refName(r)
					if name != key && name != "*" {
						continue
					}
					assert.Equal(t, "Allow", s["Effect"])
					want, _ := json.Marshal(triggersapi.SecretsKeyConditions())
					got, _ := json.Marshal(s["Condition"])
					assert.JSONEq(t, string(want), string(got), "%s on %s: the encryption-context conditions", action, name)
					for _, role := range roles {
						out = append(out, kmsGrant{refName(role), action, name})
					}
				}
			}
		}
	}
	for _, typ := range []string{"AWS::IAM::Policy", "AWS::IAM::ManagedPolicy"} {
		for _, p := range resources(tp, typ, "") {
			props := p["Properties"].(map[string]any)
			roles, _ := props["Roles"].([]any)
			assert.Empty(t, props["Users"], "no user policies")
			assert.Empty(t, props["Groups"], "no group policies")
			scan(roles, props["PolicyDocument"])
		}
	}
	for id, r := range resources(tp, "AWS::IAM::Role", "") {
		props := r["Properties"].(map[string]any)
		inline, _ := props["Policies"].([]any)
		for _, pol := range inline {
			scan([]any{id}, pol.(map[string]any)["PolicyDocument"])
		}
	}
	sort.Slice(out, func(i, j int) bool { return fmt.Sprint(out[i]) < fmt.Sprint(out[j]) })
	return out
}

// The secrets key: made by default with rotation, retained; its key
// policy is CDK's default (the account root, delegating to IAM); only the
// webhook function may decrypt with it, under the encryption-context
// conditions, and nothing else in the stack may use it.
func TestWebhookSecretsKey(t *testing.T) {
	_, w, tp := webhookStack(t, nil, triggersapi.WebhookOptions{})
	keyID, key := only(t, tp, "AWS::KMS::Key", "WSecretsKey")
	assert.Equal(t, true, key["EnableKeyRotation"])
	raw := tp["Resources"].(map[string]any)[keyID].(map[string]any)
	assert.Equal(t, "Retain", raw["DeletionPolicy"])
	assert.Equal(t, "Retain", raw["UpdateReplacePolicy"])
	statements := key["KeyPolicy"].(map[string]any)["Statement"].([]any)
	require.Len(t, statements, 1, "only CDK's default statement: %v", statements)
	root := statements[0].(map[string]any)
	assert.Equal(t, "kms:*", root["Action"])
	assert.Contains(t, fmt.Sprint(root["Principal"]), ":root", "the account, which delegates to IAM policies")
	assert.NotNil(t, w.SecretsKey())

	roleID := mustOnly(t, tp, "AWS::IAM::Role", "WFunctionServiceRole")
	assert.Equal(t, []kmsGrant{{roleID, "kms:Decrypt", keyID}}, kmsGrants(t, tp, keyID))

	// The stream consumer's role (the table's stream reader) gets nothing.
	consumer := mustOnly(t, tp, "AWS::IAM::Role", "DConsumerFunctionServiceRole")
	for _, g := range grants(tp, consumer) {
		assert.NotContains(t, g, "kms:", consumer)
	}

	// GrantSealSecrets and GrantOpenSecrets, to roles of yours.
	stack := awscdk.NewStack(newApp(), jsii.String("S"), nil)
	w2 := triggersapi.NewWebhookDelivery(stack, jsii.String("W"), &triggersapi.WebhookDeliveryProps{
		EventsTable:    eventstore.NewEventsTable(stack, jsii.String("Events"), nil),
		DeliveryQueue:  awssqs.NewQueue(stack, jsii.String("Q"), &awssqs.QueueProps{VisibilityTimeout: awscdk.Duration_Hours(jsii.Number(1))}),
		WebhookOptions: triggersapi.WebhookOptions{Function: webhookCode(stack), SecretsKeyRemovalPolicy: awscdk.RemovalPolicy_DESTROY},
	})
	sealer := awsiam.NewRole(stack, jsii.String("Sealer"), &awsiam.RoleProps{AssumedBy: awsiam.NewServicePrincipal(jsii.String("lambda.amazonaws.com"), nil)})
	w2.GrantSealSecrets(sealer)
	tp = templateOf(stack)
	keyID = mustOnly(t, tp, "AWS::KMS::Key", "WSecretsKey")
	assert.Equal(t, "Delete", tp["Resources"].(map[string]any)[keyID].(map[string]any)["DeletionPolicy"])
	assert.Equal(t, []kmsGrant{
		{mustOnly(t, tp, "AWS::IAM::Role", "Sealer"), "kms:Encrypt", keyID},
		{mustOnly(t, tp, "AWS::IAM::Role", "WFunctionServiceRole"), "kms:Decrypt", keyID},
	}, kmsGrants(t, tp, keyID))
}

// A key of your own: no key is made; the function reads and decrypts
// with yours.
func TestWebhookSecretsKeyGiven(t *testing.T) {
	arn := "arn:aws:kms:eu-west-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab"
	stack := awscdk.NewStack(newApp(), jsii.String("S"), nil)
	events := eventstore.NewEventsTable(stack, jsii.String("Events"), nil)
	queue := awssqs.NewQueue(stack, jsii.String("Q"), &awssqs.QueueProps{VisibilityTimeout: awscdk.Duration_Hours(jsii.Number(1))})
	w := triggersapi.NewWebhookDelivery(stack, jsii.String("W"), &triggersapi.WebhookDeliveryProps{
		EventsTable: events, DeliveryQueue: queue,
		WebhookOptions: triggersapi.WebhookOptions{Function: webhookCode(stack), SecretsKey: awskms.Key_FromKeyArn(stack, jsii.String("Mine"), jsii.String(arn))},
	})
	tp := templateOf(stack)
	assert.Empty(t, resources(tp, "AWS::KMS::Key", ""))
	assert.Equal(t, arn, *w.SecretsKey().KeyArn())
	_, fn := only(t, tp, "AWS::Lambda::Function", "WFunction")
	assert.Equal(t, arn, fn["Environment"].(map[string]any)["Variables"].(map[string]any)[contract.EnvWebhookSecretsKey])
	assert.Equal(t, []kmsGrant{{mustOnly(t, tp, "AWS::IAM::Role", "WFunctionServiceRole"), "kms:Decrypt", arn}}, kmsGrants(t, tp, arn))
}

// The slow-endpoint watch can be turned off.
func TestWebhookSlowAfterOff(t *testing.T) {
	_, _, tp := webhookStack(t, nil, triggersapi.WebhookOptions{CircuitBreaker: &triggersapi.CircuitBreakerOptions{DisableSlowAfter: true}})
	_, fn := only(t, tp, "AWS::Lambda::Function", "WFunction")
	assert.Equal(t, "off", fn["Environment"].(map[string]any)["Variables"].(map[string]any)[contract.EnvWebhookSlowAfter])
}

// The slow lane can be turned off: the function is told so, and gets no
// concurrency for it.
func TestWebhookSlowLaneOff(t *testing.T) {
	_, _, tp := webhookStack(t, nil, triggersapi.WebhookOptions{SlowLane: &triggersapi.SlowLaneOptions{Disable: true}})
	_, fn := only(t, tp, "AWS::Lambda::Function", "WFunction")
	env := fn["Environment"].(map[string]any)["Variables"].(map[string]any)
	assert.Equal(t, "off", env[contract.EnvWebhookSlowLaneAfter])
	assert.NotContains(t, env, contract.EnvWebhookTenantSlowConcurrency)
}

// On a global events table with a writer region, the API function is told
// the writer region (WRITER_REGION), and the delivery consumer gets only
// this region's new events: its INSERT filter combined with the origin
// filters (origin_region equal to the stack's region, or absent).
func TestWriterRegionOnAGlobalTable(t *testing.T) {
	stack := awscdk.NewStack(newApp(), jsii.String("Global"), &awscdk.StackProps{
		Env: &awscdk.Environment{Account: jsii.String("111111111111"), Region: jsii.String("us-east-1")},
	})
	table := eventstore.NewEventsTable(stack, jsii.String("Events"), &eventstore.EventsTableProps{TableOptions: dynamotable.TableOptions{
		Replicas: []dynamotable.Replica{{Region: "eu-west-1"}},
	}})
	triggersapi.NewTriggersApi(stack, jsii.String("Api"), &triggersapi.TriggersApiProps{EventsTable: table, WriterRegion: "us-east-1"})
	tp := templateOf(stack)
	_, f := only(t, tp, "AWS::Lambda::Function", "ApiApiFunction")
	assert.Equal(t, "us-east-1", f["Environment"].(map[string]any)["Variables"].(map[string]any)[contract.EnvWriterRegion])
	var filtered []any
	for _, r := range resources(tp, "AWS::Lambda::EventSourceMapping", "") {
		if fc, ok := r["Properties"].(map[string]any)["FilterCriteria"]; ok {
			filtered = append(filtered, fc)
		}
	}
	require.Len(t, filtered, 1, "one stream consumer, filtered")
	assert.Equal(t, map[string]any{"Filters": []any{
		map[string]any{"Pattern": `{"dynamodb":{"NewImage":{"origin_region":{"S":["us-east-1"]}}},"eventName":["INSERT"]}`},
		map[string]any{"Pattern": `{"dynamodb":{"NewImage":{"origin_region":[{"exists":false}]}},"eventName":["INSERT"]}`},
	}}, filtered[0])
}

// A retry queue whose tasks outlive the default hold (a 15-minute
// function, so a 90-minute visibility, and 20 receives) gives rounds a
// hold of 31 h: its task lifetime and an hour.
func TestRoundHoldFollowsTheRetryQueue(t *testing.T) {
	_, _, tp := webhookStack(t, nil, triggersapi.WebhookOptions{
		Function:        &triggersapi.FunctionOptions{Timeout: awscdk.Duration_Minutes(jsii.Number(15))},
		MaxReceiveCount: 20,
	})
	_, fn := only(t, tp, "AWS::Lambda::Function", "WFunction")
	env := fn["Environment"].(map[string]any)["Variables"].(map[string]any)
	_, retry := only(t, tp, "AWS::SQS::Queue", "WRetryQueue")
	assert.Equal(t, 5400.0, retry["VisibilityTimeout"])
	assert.Equal(t, 20.0, retry["RedrivePolicy"].(map[string]any)["maxReceiveCount"])
	assert.Equal(t, "31h0m0s", env[contract.EnvWebhookRoundHold])
}

// The slow lane's default width (4) is narrowed below a lower
// DeliveryMaxConcurrency: with 2 to 4 delivery instances, the default lane
// let one tenant's slow endpoints hold every one of them, what synth
// refuses for a TenantConcurrency given (found by review: the default
// passed without SlowLane, and SlowLaneOptions{} with only After set
// failed synth on a TenantConcurrency never given). A TenantConcurrency
// given is still checked. The same holds for RetryMaxConcurrency, whose
// queue's wakes make the attempts the lane put off (the lane was checked
// against the delivery queue only: RetryMaxConcurrency 4 let one tenant's
// slow endpoints hold every retry instance).
func TestWebhookSlowLaneDefaultNarrowsBelowDeliveryMax(t *testing.T) {
	for _, tt := range []struct {
		name string
		o    triggersapi.WebhookOptions
		want string
	}{
		{"no SlowLane", triggersapi.WebhookOptions{DeliveryMaxConcurrency: 3}, "2"},
		{"SlowLane without TenantConcurrency", triggersapi.WebhookOptions{DeliveryMaxConcurrency: 2, SlowLane: &triggersapi.SlowLaneOptions{After: awscdk.Duration_Seconds(jsii.Number(2))}}, "1"},
		{"a wide delivery queue keeps the default", triggersapi.WebhookOptions{DeliveryMaxConcurrency: 5}, "4"},
		{"a narrow retry queue", triggersapi.WebhookOptions{RetryMaxConcurrency: 3}, "2"},
		{"the narrower of the two", triggersapi.WebhookOptions{DeliveryMaxConcurrency: 4, RetryMaxConcurrency: 2}, "1"},
		{"a wide retry queue keeps the default", triggersapi.WebhookOptions{RetryMaxConcurrency: 5}, "4"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o := tt.o
			require.NoError(t, triggersapi.ValidateProps(&triggersapi.TriggersApiProps{Webhooks: &o}))
			_, _, tp := webhookStack(t, nil, o)
			_, fn := only(t, tp, "AWS::Lambda::Function", "WFunction")
			env := fn["Environment"].(map[string]any)["Variables"].(map[string]any)
			assert.Equal(t, tt.want, env[contract.EnvWebhookTenantSlowConcurrency], "the slow lane's width with DeliveryMaxConcurrency %v", o.DeliveryMaxConcurrency)
		})
	}
	err := triggersapi.ValidateProps(&triggersapi.TriggersApiProps{Webhooks: &triggersapi.WebhookOptions{
		DeliveryMaxConcurrency: 3, SlowLane: &triggersapi.SlowLaneOptions{TenantConcurrency: 3},
	}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "SlowLane.TenantConcurrency 3 is not less than DeliveryMaxConcurrency 3")
	// The retry queue, where the wakes make the attempts the lane put
	// off, bounds it too: a lane as wide as it let one tenant hold every
	// retry instance.
	err = triggersapi.ValidateProps(&triggersapi.TriggersApiProps{Webhooks: &triggersapi.WebhookOptions{
		RetryMaxConcurrency: 4, SlowLane: &triggersapi.SlowLaneOptions{TenantConcurrency: 4},
	}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "SlowLane.TenantConcurrency 4 is not less than RetryMaxConcurrency 4: the attempts the slow lane puts off are made on the retry queue")
	require.NoError(t, triggersapi.ValidateProps(&triggersapi.TriggersApiProps{Webhooks: &triggersapi.WebhookOptions{
		RetryMaxConcurrency: 5, SlowLane: &triggersapi.SlowLaneOptions{TenantConcurrency: 4},
	}}))
}
