package monitoring_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/jsii-runtime-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/constructs/archive"
	"github.com/triggers-dev/triggers/constructs/dynamotable"
	"github.com/triggers-dev/triggers/constructs/eventstore"
	"github.com/triggers-dev/triggers/constructs/monitoring"
	_ "github.com/triggers-dev/triggers/internal/synth/jsiienv"
	"github.com/triggers-dev/triggers/internal/synth/jsiirt"
)

func TestMain(m *testing.M) { jsiirt.RunTests(m) }

func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestValidatePropsRejects(t *testing.T) {
	stack := awscdk.NewStack(awscdk.NewApp(nil), jsii.String("S"), nil)
	table := eventstore.NewEventsTable(stack, jsii.String("Events"), nil)
	mins := func(n float64) awscdk.Duration { return awscdk.Duration_Minutes(jsii.Number(n)) }
	// An archive that gives records up after 1 hour: the default
	// iterator age threshold (1 hour) would page too late.
	impatient := archive.NewExpiredEventsArchive(stack, jsii.String("Archive"), &archive.ExpiredEventsArchiveProps{
		EventsTable: table,
		Stream:      &dynamotable.StreamConsumerOptions{MaxRecordAge: awscdk.Duration_Hours(jsii.Number(1))},
		Function: &archive.FunctionOptions{Code: awslambda.Code_FromBucket(
			awss3.Bucket_FromBucketName(stack, jsii.String("Artifacts"), jsii.String("ci-artifacts")), jsii.String("archiver.zip"), nil)},
	})
	tests := []struct {
		name  string
		props *monitoring.TriggersMonitoringProps
		want  string
	}{
		{"nothing to monitor", &monitoring.TriggersMonitoringProps{}, "give props.EventsTable or props.Api"},
		{"nil props", nil, "give props.EventsTable or props.Api"},
		{"archive name not a name", &monitoring.TriggersMonitoringProps{EventsTable: table, MoreArchives: map[string]*archive.ExpiredEventsArchive{"data stack": nil}},
			`MoreArchives name "data stack" is not a name: use letters and digits, starting with a capital (it starts the archive's alarm ids), such as Data`},
		{"archive missing", &monitoring.TriggersMonitoringProps{EventsTable: table, MoreArchives: map[string]*archive.ExpiredEventsArchive{"Data": nil}},
			`MoreArchives["Data"] is nil: give the archive, or remove the name`},
		{"negative latency", &monitoring.TriggersMonitoringProps{EventsTable: table, Thresholds: &monitoring.Thresholds{PutItemLatencyP99Ms: -5}}, "Thresholds.PutItemLatencyP99Ms -5 is negative"},
		{"percent above 100", &monitoring.TriggersMonitoringProps{EventsTable: table, Thresholds: &monitoring.Thresholds{ConsumedCapacityPercent: 120}}, "Thresholds.ConsumedCapacityPercent 120 is above 100"},
		{"token threshold", &monitoring.TriggersMonitoringProps{EventsTable: table, Thresholds: &monitoring.Thresholds{Api5xxPercent: numberParam(stack, "Api5xx")}},
			"Thresholds.Api5xxPercent is a token: give a literal (thresholds are written into the alarms' descriptions and some are scaled at synth, so a deploy-time value cannot be used)"},
		{"token traffic drop band", &monitoring.TriggersMonitoringProps{EventsTable: table, Thresholds: &monitoring.Thresholds{TrafficDropStdDevs: numberParam(stack, "Band"), TrafficDropPeriods: numberParam(stack, "Periods")}},
			"Thresholds.TrafficDropStdDevs is a token: give a literal"},
		{"token events table threshold", &monitoring.TriggersMonitoringProps{EventsTable: table, EventsTableThresholds: &monitoring.TableThresholds{SystemErrors: numberParam(stack, "SystemErrors")}},
			"EventsTableThresholds.SystemErrors is a token: give a literal"},
		{"5xx percent above 100", &monitoring.TriggersMonitoringProps{EventsTable: table, Thresholds: &monitoring.Thresholds{Api5xxPercent: 101}}, "Thresholds.Api5xxPercent 101 is above 100"},
		{"seconds period", &monitoring.TriggersMonitoringProps{EventsTable: table, Period: awscdk.Duration_Seconds(jsii.Number(90))}, "Period 90 seconds is invalid"},
		{"period above a day", &monitoring.TriggersMonitoringProps{EventsTable: table, Period: mins(2000)}, "Period 120000 seconds is invalid"},
		{"reserved namespace", &monitoring.TriggersMonitoringProps{EventsTable: table, MetricsNamespace: "AWS/Triggers"}, "MetricsNamespace: metrics namespace \"AWS/Triggers\" starts with AWS/"},
		// Found by review: it failed naming the placeholder's '$'.
		{"namespace from a parameter", &monitoring.TriggersMonitoringProps{EventsTable: table, MetricsNamespace: *awscdk.NewCfnParameter(stack, jsii.String("Namespace"), nil).ValueAsString()},
			"MetricsNamespace is a token: give the literal namespace the runtime writes to (it is written into the dashboard's SEARCH expressions at synth), or leave it unset for the Api's"},
		{"unknown billing", &monitoring.TriggersMonitoringProps{EventsTable: table, Billing: "cheap"}, `Billing "cheap" is unknown`},
		{"duration percent above 100", &monitoring.TriggersMonitoringProps{EventsTable: table, Thresholds: &monitoring.Thresholds{DurationPercentOfTimeout: 120}}, "Thresholds.DurationPercentOfTimeout 120 is above 100"},
		{"concurrency percent above 100", &monitoring.TriggersMonitoringProps{EventsTable: table, Thresholds: &monitoring.Thresholds{ConcurrencyPercent: 101}}, "Thresholds.ConcurrencyPercent 101 is above 100"},
		{"4xx percent above 100", &monitoring.TriggersMonitoringProps{EventsTable: table, Thresholds: &monitoring.Thresholds{Api4xxPercent: 150}}, "Thresholds.Api4xxPercent 150 is above 100"},
		{"negative inbox latency", &monitoring.TriggersMonitoringProps{EventsTable: table, Thresholds: &monitoring.Thresholds{InboxLatencyP95Ms: -1}}, "Thresholds.InboxLatencyP95Ms -1 is negative"},
		{"negative account limit", &monitoring.TriggersMonitoringProps{EventsTable: table, Thresholds: &monitoring.Thresholds{AccountConcurrencyLimit: -10}}, "Thresholds.AccountConcurrencyLimit -10 is negative"},
		{"negative throttles", &monitoring.TriggersMonitoringProps{EventsTable: table, Thresholds: &monitoring.Thresholds{LambdaThrottles: -1}}, "Thresholds.LambdaThrottles -1 is negative"},
		{"negative queue age", &monitoring.TriggersMonitoringProps{EventsTable: table, Thresholds: &monitoring.Thresholds{DeliveryQueueAgeSeconds: -1}}, "Thresholds.DeliveryQueueAgeSeconds -1 is negative"},
		{"negative events table threshold", &monitoring.TriggersMonitoringProps{EventsTable: table, EventsTableThresholds: &monitoring.TableThresholds{WriteThrottleEvents: -2}}, "EventsTableThresholds.WriteThrottleEvents -2 is negative"},
		{"events table percent above 100", &monitoring.TriggersMonitoringProps{EventsTable: table, EventsTableThresholds: &monitoring.TableThresholds{ConsumedCapacityPercent: 101}}, "EventsTableThresholds.ConsumedCapacityPercent 101 is above 100"},
		{"latency of an operation the runtime does not call", &monitoring.TriggersMonitoringProps{EventsTable: table, EventsTableThresholds: &monitoring.TableThresholds{LatencyMs: map[string]float64{"Scan": 100}}},
			`EventsTableThresholds.LatencyMs has "Scan", which is not monitored: the events table's operations are PutItem, TransactWriteItems, GetItem, Query, UpdateItem, BatchGetItem, DeleteItem; remove it`},
		{"latency without a threshold", &monitoring.TriggersMonitoringProps{EventsTable: table, EventsTableThresholds: &monitoring.TableThresholds{LatencyMs: map[string]float64{"Query": 0}}},
			`EventsTableThresholds.LatencyMs["Query"] is 0: give the p99 threshold in milliseconds`},
		{"replication without replicas", &monitoring.TriggersMonitoringProps{EventsTable: table, EventsTableThresholds: &monitoring.TableThresholds{ReplicationLatencyMs: 5000}},
			"EventsTableThresholds.ReplicationLatencyMs 5000 is given, but the events table has no replicas: remove it"},
		{"deprecated and new disagree", &monitoring.TriggersMonitoringProps{EventsTable: table,
			Thresholds:            &monitoring.Thresholds{PutItemLatencyP99Ms: 25, ThrottleEvents: 2},
			EventsTableThresholds: &monitoring.TableThresholds{LatencyMs: map[string]float64{"PutItem": 30}, WriteThrottleEvents: 2}},
			`Thresholds.PutItemLatencyP99Ms 25 (deprecated) and EventsTableThresholds.LatencyMs["PutItem"] 30 disagree: drop Thresholds.PutItemLatencyP99Ms`},
		{"archive alarm too late", &monitoring.TriggersMonitoringProps{EventsTable: table, Archive: impatient},
			"Thresholds.ArchiveIteratorAgeSeconds 3600 is not well below the archive's maximum record age (3600 s): the alarm would page with less than half of the mapping's retry window left; use at most 1800"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := monitoring.ValidateProps(tt.props)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
			assert.PanicsWithError(t, `monitoring "Mon": invalid props:`+"\n"+err.Error(), func() {
				monitoring.NewTriggersMonitoring(stack, jsii.String("Mon"), tt.props)
			})
		})
	}
	assert.NoError(t, monitoring.ValidateProps(&monitoring.TriggersMonitoringProps{
		EventsTable: table, Period: mins(1), Thresholds: &monitoring.Thresholds{ConsumedCapacityPercent: 100},
	}))
	assert.NoError(t, monitoring.ValidateProps(&monitoring.TriggersMonitoringProps{
		EventsTable: table, Archive: impatient, Thresholds: &monitoring.Thresholds{ArchiveIteratorAgeSeconds: 900},
	}))
	// The deprecated fields and their replacements may be given together
	// when they agree.
	assert.NoError(t, monitoring.ValidateProps(&monitoring.TriggersMonitoringProps{
		EventsTable:           table,
		Thresholds:            &monitoring.Thresholds{ThrottleEvents: 2, PutItemLatencyP99Ms: 25},
		EventsTableThresholds: &monitoring.TableThresholds{ReadThrottleEvents: 2, LatencyMs: map[string]float64{"PutItem": 25, "Query": 40}},
	}))
}

// A table's monitoring with a topic given: no topic is created, the
// table's composite alarm (any of the table's alarms) is the only alarm
// that notifies the given one, and the period applies to every alarm.
func TestGivenTopicAndPeriod(t *testing.T) {
	stack := awscdk.NewStack(awscdk.NewApp(nil), jsii.String("S"), nil)
	table := eventstore.NewEventsTable(stack, jsii.String("Events"), nil)
	topic := awssns.Topic_FromTopicArn(stack, jsii.String("OnCall"), jsii.String("arn:aws:sns:eu-west-1:111111111111:on-call"))
	m := monitoring.NewTriggersMonitoring(stack, jsii.String("Monitoring"), &monitoring.TriggersMonitoringProps{
		EventsTable: table, AlarmTopic: topic, Period: awscdk.Duration_Minutes(jsii.Number(1)),
	})
	tmpl := assertions.Template_FromStack(stack, nil)
	tmpl.ResourceCountIs(jsii.String("AWS::SNS::Topic"), jsii.Number(0))
	alarms := *tmpl.FindResources(jsii.String("AWS::CloudWatch::Alarm"), nil)
	require.Len(t, alarms, len(m.Alarms))
	require.Len(t, alarms, 8, "table and 2 GSIs read and write throttles, PutItem latency, system errors (on demand: no capacity alarms)")
	composites := *tmpl.FindResources(jsii.String("AWS::CloudWatch::CompositeAlarm"), nil)
	require.Len(t, composites, 1, "one service: the table")
	for id, c := range composites {
		props := (*c)["Properties"].(map[string]any)
		assert.Equal(t, []any{"arn:aws:sns:eu-west-1:111111111111:on-call"}, props["AlarmActions"], id)
		assert.Equal(t, []any{"arn:aws:sns:eu-west-1:111111111111:on-call"}, props["OKActions"], id)
		assert.Contains(t, jsonOf(props["AlarmRule"]), "ALARM(", id)
		assert.Contains(t, props["AlarmDescription"], "#composite-alarms-one-page-per-service", id)
	}
	require.NotNil(t, m.Composite(monitoring.ServiceTable))
	assert.Nil(t, m.Composite(monitoring.ServiceApi), "no API monitored")
	for id, a := range alarms {
		props := (*a)["Properties"].(map[string]any)
		assert.NotContains(t, props, "AlarmActions", "%s: the composite alarm notifies", id)
		assert.NotContains(t, props, "OKActions", id)
		for _, q := range props["Metrics"].([]any) {
			if ms, ok := q.(map[string]any)["MetricStat"].(map[string]any); ok {
				assert.Equal(t, 60.0, ms["Period"], id)
			}
		}
	}
	assert.NotNil(t, m.Alarm("PutItemLatency"))
	assert.Nil(t, m.Alarm("ReadCapacity"), "no capacity alarm on demand")
}

// Monitoring of the events table alone: a dashboard, an encrypted alarm
// topic, and alarms on read and write throttling (table and each GSI),
// PutItem p99 latency and system errors; capacity alarms too in
// provisioned mode.
func ExampleNewTriggersMonitoring() {
	stack := awscdk.NewStack(awscdk.NewApp(nil), jsii.String("Data"), nil)
	events := eventstore.NewEventsTable(stack, jsii.String("Events"), &eventstore.EventsTableProps{
		TableOptions: dynamotable.TableOptions{Billing: dynamotable.Provisioned},
	})
	mon := monitoring.NewTriggersMonitoring(stack, jsii.String("Monitoring"), &monitoring.TriggersMonitoringProps{
		EventsTable:           events,
		DashboardName:         "triggers-prod",
		EventsTableThresholds: &monitoring.TableThresholds{LatencyMs: map[string]float64{"PutItem": 25}},
	})
	tmpl := assertions.Template_FromStack(stack, nil)
	tmpl.HasResourceProperties(jsii.String("AWS::CloudWatch::Alarm"), map[string]any{
		"Threshold": 25, "ComparisonOperator": "GreaterThanThreshold", "EvaluationPeriods": 3,
	})
	fmt.Println(len(mon.Alarms), "alarms")
	// Output: 14 alarms
}

// The archive's alarms say how its mapping retries: until the maximum
// record age by default, a bounded number of times when
// Stream.RetryAttempts bounds them. (Found by review: with bounded
// retries they still promised the maximum age.)
func TestArchiveAlarmsFollowTheRetries(t *testing.T) {
	stack := awscdk.NewStack(awscdk.NewApp(nil), jsii.String("S"), nil)
	table := eventstore.NewEventsTable(stack, jsii.String("Events"), nil)
	code := &archive.FunctionOptions{Code: awslambda.Code_FromBucket(
		awss3.Bucket_FromBucketName(stack, jsii.String("Artifacts"), jsii.String("ci-artifacts")), jsii.String("archiver.zip"), nil)}
	bounded := archive.NewExpiredEventsArchive(stack, jsii.String("Bounded"), &archive.ExpiredEventsArchiveProps{
		EventsTable: table, Function: code, Stream: &dynamotable.StreamConsumerOptions{RetryAttempts: 10}})
	unbounded := archive.NewExpiredEventsArchive(stack, jsii.String("Unbounded"), &archive.ExpiredEventsArchiveProps{EventsTable: table, Function: code})
	// A token's number is negative, as the unlimited -1 is.
	deployTime := archive.NewExpiredEventsArchive(stack, jsii.String("DeployTime"), &archive.ExpiredEventsArchiveProps{
		EventsTable: table, Function: code, Stream: &dynamotable.StreamConsumerOptions{RetryAttempts: numberParam(stack, "Retries")}})
	m := monitoring.NewTriggersMonitoring(stack, jsii.String("M"), &monitoring.TriggersMonitoringProps{
		EventsTable: table, Archive: bounded, MoreArchives: map[string]*archive.ExpiredEventsArchive{"Other": unbounded, "Param": deployTime}})
	description := func(id string) string {
		a, ok := m.Alarms[id]
		require.True(t, ok, id)
		return *a.Node().DefaultChild().(awscloudwatch.CfnAlarm).AlarmDescription()
	}
	assert.Contains(t, description("ArchiverErrors"), "retries them 10 times at most (Stream.RetryAttempts), or until they are 20 h old if sooner")
	assert.Contains(t, description("ArchiverIteratorAge"), "The mapping retries 10 times at most")
	assert.Contains(t, description("OtherArchiverErrors"), "retries them until they are 20 h old")
	assert.NotContains(t, description("OtherArchiverErrors"), "times at most")
	assert.Contains(t, description("ParamArchiverErrors"), "retries them as many times as Stream.RetryAttempts says (a deploy-time value), or until they are 20 h old if sooner")
}
