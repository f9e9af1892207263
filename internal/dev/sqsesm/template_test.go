package sqsesm_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/internal/dev/motolocal/mototest"
	"github.com/triggers-dev/triggers/internal/dev/sqsesm"
)

// golden is the dev API stack as synthesized (kept identical to the real
// synth by the assertions golden test).
var golden = filepath.Join("..", "..", "..", "assertions", "testdata", "triggers-dev-api.json")

// The dev API stack's two webhook mappings, with the settings the
// construct synthesizes.
func TestReadTemplateDevAPI(t *testing.T) {
	tpl, err := sqsesm.ReadTemplate(golden)
	require.NoError(t, err)
	require.Len(t, tpl.Mappings, 2, "the delivery queue and the retry queue (the stream mapping is not an SQS source)")
	queues := map[string]bool{}
	for _, m := range tpl.Mappings {
		queues[m.Queue.LogicalID] = true
		assert.True(t, m.Enabled)
		assert.True(t, strings.HasPrefix(m.Function.LogicalID, "TriggersWebhooksFunction"), m.Function.LogicalID)
		assert.Equal(t, 10, m.Settings.BatchSize)
		assert.Equal(t, time.Second, m.Settings.MaximumBatchingWindow)
		assert.True(t, m.Settings.ReportBatchItemFailures)
		assert.Equal(t, 5*time.Minute, m.Settings.FunctionTimeout)
		assert.Equal(t, m.Function.Timeout, m.Settings.FunctionTimeout)
		assert.Equal(t, 30*time.Minute, m.Queue.VisibilityTimeout, "6 x the function timeout")
		require.NotNil(t, m.Queue.Redrive)
		assert.Equal(t, 5, m.Queue.Redrive.MaxReceiveCount)
		dlq, ok := tpl.Queues[m.Queue.Redrive.DeadLetterQueue]
		require.True(t, ok, "the DLQ %s is a queue of the template", m.Queue.Redrive.DeadLetterQueue)
		assert.Nil(t, dlq.Redrive)
		assert.Equal(t, 14*24*time.Hour, dlq.MessageRetentionPeriod)
		assert.Contains(t, m.Function.Env, "WEBHOOK_SCHEDULE")
	}
	assert.Len(t, queues, 2)
	for id, q := range tpl.Queues {
		if strings.HasPrefix(id, "TriggersWebhooksRetryQueue") {
			assert.Equal(t, 4*24*time.Hour, q.MessageRetentionPeriod)
		}
		if strings.HasPrefix(id, "TriggersDeliveryQueue") {
			assert.Equal(t, sqsesm.DefaultMessageRetentionPeriod, q.MessageRetentionPeriod, "the default when unset")
		}
	}
}

// A small template with every setting, as strings or numbers.
const custom = `{"Resources":{
 "Dlq":{"Type":"AWS::SQS::Queue","Properties":{}},
 "Q":{"Type":"AWS::SQS::Queue","Properties":{"VisibilityTimeout":"12","DelaySeconds":3,"MessageRetentionPeriod":600,"MaximumMessageSize":2048,
   "RedrivePolicy":{"deadLetterTargetArn":{"Fn::GetAtt":["Dlq","Arn"]},"maxReceiveCount":"4"}}},
 "Fn":{"Type":"AWS::Lambda::Function","Properties":{"Timeout":10,"ReservedConcurrentExecutions":7,"Environment":{"Variables":{"A":"b","Q":{"Ref":"Q"}}}}},
 "Other":{"Type":"AWS::Lambda::Function","Properties":{}},
 "M":{"Type":"AWS::Lambda::EventSourceMapping","Properties":{"EventSourceArn":{"Fn::GetAtt":"Q.Arn"},"FunctionName":{"Fn::GetAtt":["Fn","Arn"]},
   "BatchSize":50,"MaximumBatchingWindowInSeconds":4,"ScalingConfig":{"MaximumConcurrency":3}}},
 "N":{"Type":"AWS::Lambda::EventSourceMapping","Properties":{"EventSourceArn":{"Fn::GetAtt":["Dlq","Arn"]},"FunctionName":{"Ref":"Other"},"Enabled":false}},
 "S":{"Type":"AWS::Lambda::EventSourceMapping","Properties":{"EventSourceArn":{"Fn::ImportValue":"stream"},"FunctionName":{"Ref":"Other"},"StartingPosition":"LATEST"}}
}}`

// A mapping on an alias (provisioned concurrency) runs the aliased
// function with that function's settings.
func TestMappingOnAnAlias(t *testing.T) {
	tpl, err := sqsesm.ParseTemplate([]byte(`{"Resources":{
 "Q":{"Type":"AWS::SQS::Queue","Properties":{}},
 "Fn":{"Type":"AWS::Lambda::Function","Properties":{"Timeout":20,"Environment":{"Variables":{"A":"b"}}}},
 "Ver":{"Type":"AWS::Lambda::Version","Properties":{"FunctionName":{"Ref":"Fn"}}},
 "Live":{"Type":"AWS::Lambda::Alias","Properties":{"FunctionName":{"Ref":"Fn"},"FunctionVersion":{"Fn::GetAtt":["Ver","Version"]},"Name":"live"}},
 "M":{"Type":"AWS::Lambda::EventSourceMapping","Properties":{"EventSourceArn":{"Fn::GetAtt":["Q","Arn"]},"FunctionName":{"Ref":"Live"}}}
}}`))
	require.NoError(t, err)
	require.Len(t, tpl.Mappings, 1)
	m := tpl.Mappings[0]
	assert.Equal(t, "Fn", m.Function.LogicalID)
	assert.Equal(t, 20*time.Second, m.Settings.FunctionTimeout)
	assert.Equal(t, "b", m.Function.Env["A"])

	_, err = sqsesm.ParseTemplate([]byte(`{"Resources":{
 "Q":{"Type":"AWS::SQS::Queue","Properties":{}},
 "Live":{"Type":"AWS::Lambda::Alias","Properties":{"FunctionName":"made-elsewhere","Name":"live"}},
 "M":{"Type":"AWS::Lambda::EventSourceMapping","Properties":{"EventSourceArn":{"Fn::GetAtt":["Q","Arn"]},"FunctionName":{"Ref":"Live"}}}
}}`))
	assert.ErrorContains(t, err, "want a Ref (or Fn::GetAtt Arn) to a function of this template, or to one of its aliases")
}

func TestParseTemplateSettings(t *testing.T) {
	tpl, err := sqsesm.ParseTemplate([]byte(custom))
	require.NoError(t, err)
	require.Len(t, tpl.Mappings, 2)
	m, n := tpl.Mappings[0], tpl.Mappings[1]
	assert.Equal(t, "M", m.LogicalID)
	assert.Equal(t, sqsesm.Settings{BatchSize: 50, MaximumBatchingWindow: 4 * time.Second, MaximumConcurrency: 3, FunctionTimeout: 10 * time.Second}, m.Settings)
	assert.Equal(t, 3, m.Concurrency())
	assert.Equal(t, sqsesm.Queue{LogicalID: "Q", VisibilityTimeout: 12 * time.Second, Delay: 3 * time.Second, MessageRetentionPeriod: 10 * time.Minute,
		MaximumMessageSize: 2048, Redrive: &sqsesm.Redrive{DeadLetterQueue: "Dlq", MaxReceiveCount: 4}}, m.Queue)
	assert.Equal(t, "Fn", m.Function.LogicalID)
	assert.Equal(t, map[string]any{"A": "b", "Q": map[string]any{"Ref": "Q"}}, m.Function.Env)
	assert.Equal(t, m.Function, tpl.Functions["Fn"])
	assert.Contains(t, tpl.Functions, "Other")

	// Defaults: CloudFormation's and Lambda's.
	assert.Equal(t, "N", n.LogicalID)
	assert.False(t, n.Enabled)
	assert.Equal(t, sqsesm.Settings{BatchSize: 10, FunctionTimeout: 3 * time.Second}, n.Settings)
	assert.Equal(t, sqsesm.Queue{LogicalID: "Dlq", VisibilityTimeout: 30 * time.Second, MessageRetentionPeriod: 4 * 24 * time.Hour}, n.Queue)
	assert.Equal(t, sqsesm.DefaultConcurrency, n.Concurrency())
	m.Settings.MaximumConcurrency = 0
	assert.Equal(t, 7, m.Concurrency(), "the function's reserved concurrency when the mapping sets none")
}

// Values that only resolve on deployment, or that CloudFormation would
// refuse, fail with the resource and the property named.
func TestParseTemplateErrors(t *testing.T) {
	edit := func(f func(res map[string]any)) string {
		var tpl map[string]any
		require.NoError(t, json.Unmarshal([]byte(custom), &tpl))
		f(tpl["Resources"].(map[string]any))
		b, _ := json.Marshal(tpl)
		return string(b)
	}
	props := func(res map[string]any, id string) map[string]any {
		return res[id].(map[string]any)["Properties"].(map[string]any)
	}
	for _, tc := range []struct {
		name, template string
		want           []string
	}{
		{"not JSON", `{`, []string{"not JSON"}},
		{"no resources", `{}`, []string{"no Resources"}},
		{"batch size from a parameter", edit(func(r map[string]any) { props(r, "M")["BatchSize"] = map[string]any{"Ref": "Size"} }),
			[]string{"event source mapping M", "BatchSize", `{"Ref":"Size"} only resolves on deployment`}},
		{"batch over 10 without window", edit(func(r map[string]any) { delete(props(r, "M"), "MaximumBatchingWindowInSeconds") }),
			[]string{"BatchSize 50 is over 10", "batching window"}},
		{"visibility out of range", edit(func(r map[string]any) { props(r, "Q")["VisibilityTimeout"] = 43201 }),
			[]string{"queue Q", "VisibilityTimeout", "0 to 43200"}},
		{"visibility under the function timeout", edit(func(r map[string]any) { props(r, "Fn")["Timeout"] = 13 }),
			[]string{"event source mapping M", "visibility timeout 12s is less than function Fn's timeout 13s", "Lambda refuses"}},
		{"fractional timeout", edit(func(r map[string]any) { props(r, "Fn")["Timeout"] = 1.5 }),
			[]string{"function Fn", "Timeout", "whole number"}},
		{"DLQ outside the template", edit(func(r map[string]any) {
			props(r, "Q")["RedrivePolicy"] = map[string]any{"deadLetterTargetArn": "arn:aws:sqs:us-east-1:1:x", "maxReceiveCount": 2}
		}), []string{"queue Q", "deadLetterTargetArn"}},
		{"queue outside the template", edit(func(r map[string]any) {
			props(r, "M")["EventSourceArn"] = "arn:aws:sqs:us-east-1:123456789012:elsewhere"
		}),
			[]string{"event source mapping M", "outside this template"}},
		{"function outside the template", edit(func(r map[string]any) { props(r, "M")["FunctionName"] = "some-function" }),
			[]string{"event source mapping M", "FunctionName"}},
		{"FIFO", edit(func(r map[string]any) { props(r, "Q")["FifoQueue"] = true }), []string{"queue Q", "FIFO"}},
		{"filter", edit(func(r map[string]any) { props(r, "M")["FilterCriteria"] = map[string]any{} }), []string{"FilterCriteria"}},
		{"concurrency 1", edit(func(r map[string]any) { props(r, "M")["ScalingConfig"] = map[string]any{"MaximumConcurrency": 1} }),
			[]string{"MaximumConcurrency", "2 to 1000"}},
		{"unknown response type", edit(func(r map[string]any) { props(r, "M")["FunctionResponseTypes"] = []any{"Other"} }),
			[]string{"FunctionResponseTypes"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := sqsesm.ParseTemplate([]byte(tc.template))
			require.Error(t, err)
			for _, w := range tc.want {
				assert.ErrorContains(t, err, w)
			}
		})
	}
	_, err := sqsesm.ReadTemplate("/nonexistent/api.template.json")
	assert.ErrorContains(t, err, "does not exist: run make synth")
}

// CreateQueues makes the dev API stack's queues on the engine with the
// template's attributes, the redrive pointing at the local DLQ; a second
// call finds the same queues.
func TestCreateQueues(t *testing.T) {
	tpl, err := sqsesm.ReadTemplate(golden)
	require.NoError(t, err)
	prefix := mototest.QueueName("cq") + "-"
	ctx := context.Background()
	made, err := tpl.CreateQueues(ctx, engine.SQS, prefix)
	require.NoError(t, err)
	require.Len(t, made, len(tpl.Queues))
	for _, m := range tpl.Mappings {
		lq := made[m.Queue.LogicalID]
		assert.Equal(t, sqsesm.QueueName(prefix, m.Queue.LogicalID), lq.Name)
		out, err := engine.SQS.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(lq.URL), AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameAll}})
		require.NoError(t, err)
		assert.Equal(t, "1800", out.Attributes["VisibilityTimeout"])
		assert.Equal(t, lq.ARN, out.Attributes["QueueArn"])
		var rp struct {
			Target string `json:"deadLetterTargetArn"`
			Max    any    `json:"maxReceiveCount"`
		}
		require.NoError(t, json.Unmarshal([]byte(out.Attributes["RedrivePolicy"]), &rp))
		assert.Equal(t, made[m.Queue.Redrive.DeadLetterQueue].ARN, rp.Target)
		assert.EqualValues(t, "5", toString(rp.Max))
	}
	again, err := tpl.CreateQueues(ctx, engine.SQS, prefix)
	require.NoError(t, err)
	assert.Equal(t, made, again)
}

func toString(v any) string {
	b, _ := json.Marshal(v)
	return strings.Trim(string(b), `"`)
}

func TestQueueName(t *testing.T) {
	assert.Equal(t, "dev-Q_1", sqsesm.QueueName("dev-", "Q_1"))
	assert.Equal(t, "a-b-Q", sqsesm.QueueName("a.b/", "Q"))
	assert.Len(t, sqsesm.QueueName(strings.Repeat("p", 70), strings.Repeat("q", 70)), 80)
}

// A function's environment resolves the template's queues to the local
// ones; overrides replace what only resolves on deployment.
func TestFunctionEnvironment(t *testing.T) {
	fn := sqsesm.Function{LogicalID: "Fn", Env: map[string]any{
		"LIT": "x", "URL": map[string]any{"Ref": "Q"}, "ARN": map[string]any{"Fn::GetAtt": []any{"Q", "Arn"}},
		"NAME": map[string]any{"Fn::GetAtt": "Q.QueueName"}, "TABLE": map[string]any{"Fn::ImportValue": "t"}, "SECRET": map[string]any{"Ref": "Secret"},
	}}
	queues := map[string]sqsesm.LocalQueue{"Q": {Name: "dev-Q", URL: "http://127.0.0.1:1/123456789012/dev-Q", ARN: "arn:aws:sqs:us-east-1:123456789012:dev-Q"}}
	_, err := fn.Environment(queues, nil)
	require.Error(t, err)
	assert.ErrorContains(t, err, `function Fn: environment [SECRET={"Ref":"Secret"} TABLE={"Fn::ImportValue":"t"}] only resolves on deployment`)

	getenv, err := fn.Environment(queues, map[string]string{"TABLE": "local-table", "SECRET": "", "LIT": "overridden", "EXTRA": "e"})
	require.NoError(t, err)
	for k, want := range map[string]string{"LIT": "overridden", "URL": queues["Q"].URL, "ARN": queues["Q"].ARN, "NAME": "dev-Q", "TABLE": "local-table", "SECRET": "", "EXTRA": "e", "UNSET": ""} {
		assert.Equal(t, want, getenv(k), k)
	}
}
