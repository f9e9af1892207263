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
// said "0-10000", as if 0 were no retries). The default MaxRecordAge
// keeps to the bound a given one must: 23 hours, an hour inside the
// stream's 24 (it was 24 hours, the stream's whole retention, so a record
// still failing was trimmed before Lambda gave it up).
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
		"MaximumRetryAttempts":      float64(dynamotable.DefaultStreamRetryAttempts),
		"MaximumRecordAgeInSeconds": float64(23 * 3600),
	})
	assert.Less(t, dynamotable.MaxStreamMaxRecordAgeHours, dynamotable.StreamRetentionHours)
	assert.LessOrEqual(t, dynamotable.DefaultStreamMaxRecordAgeHours, dynamotable.MaxStreamMaxRecordAgeHours)
	assert.PanicsWithError(t, `stream consumer of table "events": RetryAttempts -1 is not a whole number from 1 to 10000: give how many times a failing batch is retried, or 0 for the default`, func() {
		table.AddStreamConsumer(fn, &dynamotable.StreamConsumerOptions{RetryAttempts: -1})
	})
}

// Each bad option of a stream consumer fails synth naming the value and
// the fix; tokens pass to the template. Found by review: a BatchSize,
// RetryAttempts or ParallelizationFactor that was not whole (10.5)
// synthesized and CloudFormation refuses it at deploy (integers), and a
// MaxBatchingWindow or MaxRecordAge that was not whole seconds failed
// inside the CDK ("'1500 millis' cannot be converted into a whole number
// of seconds"), naming neither the option nor the fix.
func TestStreamConsumerOptionsValidation(t *testing.T) {
	stack := awscdk.NewStack(awscdk.NewApp(nil), jsii.String("S"), nil)
	sc := schema.Events()
	table := dynamotable.NewTable(stack, jsii.String("A"), &dynamotable.TableProps{Schema: &sc})
	newFn := func(id string) awslambda.Function {
		return awslambda.NewFunction(stack, jsii.String(id), &awslambda.FunctionProps{
			Runtime: awslambda.Runtime_NODEJS_22_X(), Handler: jsii.String("index.handler"),
			Code: awslambda.Code_FromInline(jsii.String("x")),
		})
	}
	fn := newFn("Fn")
	for msg, o := range map[string]dynamotable.StreamConsumerOptions{
		`BatchSize 10.5 is not a whole number from 1 to 10000: give the most records per invocation, or 0 for the default (100)`:                           {BatchSize: 10.5},
		`BatchSize 20000 is not a whole number from 1 to 10000`:                                                                                            {BatchSize: 20000},
		`RetryAttempts 2.5 is not a whole number from 1 to 10000: give how many times a failing batch is retried, or 0 for the default`:                    {RetryAttempts: 2.5},
		`ParallelizationFactor 2.5 is not a whole number from 1 to 10: give the batches processed at once per shard, or 0 for the default (1)`:             {ParallelizationFactor: 2.5},
		`MaxBatchingWindow 1.5s is not whole seconds from 0s to 5m0s: Lambda waits whole seconds, at most 5 minutes, to fill a batch; give one such as 2s`: {MaxBatchingWindow: awscdk.Duration_Millis(jsii.Number(1500))},
		`MaxBatchingWindow 6m0s is not whole seconds from 0s to 5m0s`:                                                                                      {MaxBatchingWindow: awscdk.Duration_Minutes(jsii.Number(6))},
		`MaxRecordAge 1m30.5s is not whole seconds from 1m0s to 23h0m0s: Lambda gives up records by whole seconds of age`: {
			MaxRecordAge: awscdk.Duration_Millis(jsii.Number(90500))},
		`MaxRecordAge 30s is not whole seconds from 1m0s to 23h0m0s`: {MaxRecordAge: awscdk.Duration_Seconds(jsii.Number(30))},
		// DynamoDB keeps stream records 24 hours: at 24 hours or more a
		// record still failing is trimmed before Lambda gives it up, and
		// the failure queue's description of it (stream positions) points
		// at nothing. Found by review: up to 7 days (Lambda's own limit)
		// synthesized.
		`MaxRecordAge 23h0m1s is not whole seconds from 1m0s to 23h0m0s: Lambda gives up records by whole seconds of age, and DynamoDB keeps stream records 24 hours: ` +
			`a record still failing then is trimmed before it is given up, and the failure queue describes records by stream position only; ` +
			`at most 23 hours (MaxStreamMaxRecordAgeHours) leaves an hour to read a given-up record back from the stream; give one such as 23h0m0s`: {
			MaxRecordAge: awscdk.Duration_Seconds(jsii.Number(23*3600 + 1))},
		`MaxRecordAge 24h0m0s is not whole seconds from 1m0s to 23h0m0s`:  {MaxRecordAge: awscdk.Duration_Hours(jsii.Number(24))},
		`MaxRecordAge 168h0m0s is not whole seconds from 1m0s to 23h0m0s`: {MaxRecordAge: awscdk.Duration_Days(jsii.Number(7))},
	} {
		t.Run(msg, func(t *testing.T) {
			defer func() {
				err, _ := recover().(error)
				require.Error(t, err, "synth passed")
				assert.Contains(t, err.Error(), `stream consumer of table "events": `+msg)
			}()
			table.AddStreamConsumer(fn, &o)
		})
	}
	// Several bad options are reported together.
	assert.PanicsWithError(t, "stream consumer of table \"events\": BatchSize 0.5 is not a whole number from 1 to 10000: give the most records per invocation, or 0 for the default (100)\n"+
		"ParallelizationFactor 11 is not a whole number from 1 to 10: give the batches processed at once per shard, or 0 for the default (1)", func() {
		table.AddStreamConsumer(fn, &dynamotable.StreamConsumerOptions{BatchSize: 0.5, ParallelizationFactor: 11})
	})

	// Numbers and a window from a parameter reach the template (the CDK
	// itself refuses a MaxRecordAge token).
	n := *awscdk.NewCfnParameter(stack, jsii.String("N"), &awscdk.CfnParameterProps{Type: jsii.String("Number")}).ValueAsNumber()
	table.AddStreamConsumer(newFn("Tokens"), &dynamotable.StreamConsumerOptions{BatchSize: n, RetryAttempts: n, ParallelizationFactor: n,
		MaxBatchingWindow: awscdk.Duration_Seconds(&n)})
	// Lambda's limits themselves are accepted, and a MaxRecordAge of 23
	// hours, the most the stream's retention leaves room for.
	table.AddStreamConsumer(newFn("Highest"), &dynamotable.StreamConsumerOptions{BatchSize: 10000, RetryAttempts: 10000, ParallelizationFactor: 10,
		MaxBatchingWindow: awscdk.Duration_Minutes(jsii.Number(5)), MaxRecordAge: awscdk.Duration_Hours(jsii.Number(23))})
	table.AddStreamConsumer(newFn("Lowest"), &dynamotable.StreamConsumerOptions{BatchSize: 1, RetryAttempts: 1, ParallelizationFactor: 1,
		MaxBatchingWindow: awscdk.Duration_Seconds(jsii.Number(0)), MaxRecordAge: awscdk.Duration_Minutes(jsii.Number(1))})
	ref := map[string]any{"Ref": "N"}
	tp := assertions.Template_FromStack(stack, nil)
	tp.HasResourceProperties(jsii.String("AWS::Lambda::EventSourceMapping"), map[string]any{
		"BatchSize": ref, "MaximumRetryAttempts": ref, "ParallelizationFactor": ref, "MaximumBatchingWindowInSeconds": ref,
	})
	tp.HasResourceProperties(jsii.String("AWS::Lambda::EventSourceMapping"), map[string]any{
		"BatchSize": float64(10000), "MaximumRecordAgeInSeconds": float64(23 * 3600),
	})
}
