package dynamotable_test

import (
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/jsii-runtime-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/constructs/dynamotable"
	"github.com/triggers-dev/triggers/schema"
)

// One function consuming two tables' streams with default options shares
// one failure queue, the one its first consumer made under the id it
// always had (found by review: the second AddStreamConsumer panicked
// with a duplicate construct id "SFn8C14A72DStreamFailures"). Its role may send to
// it.
func TestOneFunctionTwoStreamsShareTheFailureQueue(t *testing.T) {
	stack := awscdk.NewStack(awscdk.NewApp(nil), jsii.String("S"), nil)
	a, b := schema.Events(), schema.Events()
	b.Name = "other"
	ta := dynamotable.NewTable(stack, jsii.String("A"), &dynamotable.TableProps{Schema: &a})
	tb := dynamotable.NewTable(stack, jsii.String("B"), &dynamotable.TableProps{Schema: &b})
	fn := awslambda.NewFunction(stack, jsii.String("Fn"), &awslambda.FunctionProps{
		Runtime: awslambda.Runtime_NODEJS_22_X(), Handler: jsii.String("index.handler"),
		Code: awslambda.Code_FromInline(jsii.String("x")),
	})
	first := ta.AddStreamConsumer(fn, nil)
	var second *dynamotable.StreamConsumer
	require.NotPanics(t, func() { second = tb.AddStreamConsumer(fn, nil) })
	assert.Equal(t, *first.FailureQueue.Node().Path(), *second.FailureQueue.Node().Path())
	assert.Equal(t, "S/SFn8C14A72DStreamFailures", *second.FailureQueue.Node().Path())

	tp := *assertions.Template_FromStack(stack, nil).ToJSON()
	var queues, mappings []string
	var sendTo []any
	for id, r := range tp["Resources"].(map[string]any) {
		r := r.(map[string]any)
		p, _ := r["Properties"].(map[string]any)
		switch r["Type"] {
		case "AWS::SQS::Queue":
			queues = append(queues, id)
		case "AWS::Lambda::EventSourceMapping":
			mappings = append(mappings, id)
			assert.Equal(t, map[string]any{"OnFailure": map[string]any{"Destination": map[string]any{"Fn::GetAtt": []any{"SFn8C14A72DStreamFailuresCD047E64", "Arn"}}}}, p["DestinationConfig"], id)
		case "AWS::IAM::Policy":
			for _, st := range p["PolicyDocument"].(map[string]any)["Statement"].([]any) {
				st := st.(map[string]any)
				switch act := st["Action"].(type) {
				case []any:
					if act[0] == "sqs:SendMessage" {
						sendTo = append(sendTo, st["Resource"])
					}
				}
			}
		}
	}
	assert.Equal(t, []string{"SFn8C14A72DStreamFailuresCD047E64"}, queues, "one failure queue, the first consumer's logical id")
	assert.Len(t, mappings, 2)
	assert.Equal(t, []any{map[string]any{"Fn::GetAtt": []any{"SFn8C14A72DStreamFailuresCD047E64", "Arn"}}}, sendTo, "one grant to send to the shared queue")
}

// RetryAttempts 0 takes the default, 10 retries (it cannot turn retries
// off), and the accepted range is 1-10000 (found by review: the godoc
// said "0-10000", as if 0 were no retries).
func TestStreamRetryAttemptsZeroIsTheDefault(t *testing.T) {
	stack := awscdk.NewStack(awscdk.NewApp(nil), jsii.String("S"), nil)
	sc := schema.Events()
	table := dynamotable.NewTable(stack, jsii.String("A"), &dynamotable.TableProps{Schema: &sc})
	fn := awslambda.NewFunction(stack, jsii.String("Fn"), &awslambda.FunctionProps{
		Runtime: awslambda.Runtime_NODEJS_22_X(), Handler: jsii.String("index.handler"),
		Code: awslambda.Code_FromInline(jsii.String("x")),
	})
	table.AddStreamConsumer(fn, &dynamotable.StreamConsumerOptions{RetryAttempts: 0})
	assertions.Template_FromStack(stack, nil).HasResourceProperties(jsii.String("AWS::Lambda::EventSourceMapping"), map[string]any{
		"MaximumRetryAttempts": float64(dynamotable.DefaultStreamRetryAttempts),
	})
	assert.PanicsWithError(t, `stream consumer of table "events": RetryAttempts -1 is outside 1-10000`, func() {
		table.AddStreamConsumer(fn, &dynamotable.StreamConsumerOptions{RetryAttempts: -1})
	})
}
