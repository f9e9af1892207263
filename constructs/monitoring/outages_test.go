package monitoring_test

import (
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/jsii-runtime-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/constructs/dynamotable"
	"github.com/triggers-dev/triggers/constructs/eventstore"
	"github.com/triggers-dev/triggers/constructs/monitoring"
	"github.com/triggers-dev/triggers/constructs/triggersapi"
)

// outageStack is a service like the app's: the events table in an AWS
// Backup plan, the API with its rate-limit web ACL and its own API-keys
// table, and its monitoring with the given thresholds.
func outageStack(t *testing.T, th *monitoring.Thresholds, rateLimit *triggersapi.RateLimitOptions) (awscdk.Stack, *triggersapi.TriggersApi, *monitoring.TriggersMonitoring) {
	t.Helper()
	ctx := map[string]any{"aws:cdk:bundling-stacks": []any{}}
	stack := awscdk.NewStack(awscdk.NewApp(&awscdk.AppProps{Context: &ctx}), jsii.String("S"), nil)
	events := eventstore.NewEventsTable(stack, jsii.String("Events"), &eventstore.EventsTableProps{
		TableOptions: dynamotable.TableOptions{Backup: &dynamotable.BackupOptions{}},
	})
	api := triggersapi.NewTriggersApi(stack, jsii.String("Triggers"), &triggersapi.TriggersApiProps{EventsTable: events, RateLimit: rateLimit})
	m := monitoring.NewTriggersMonitoring(stack, jsii.String("Monitoring"), &monitoring.TriggersMonitoringProps{Api: api, Thresholds: th})
	return stack, api, m
}

// compositeMembers returns the logical ids of the alarms a composite
// alarm's rule names.
func compositeMembers(t *testing.T, props map[string]any) []string {
	t.Helper()
	var ids []string
	for _, part := range props["AlarmRule"].(map[string]any)["Fn::Join"].([]any)[1].([]any) {
		if m, ok := part.(map[string]any); ok {
			ids = append(ids, m["Fn::GetAtt"].([]any)[0].(string))
		}
	}
	return ids
}

// expressions returns the alarm's metric math expressions by query id.
func expressions(props map[string]any) map[string]string {
	out := map[string]string{}
	for _, q := range props["Metrics"].([]any) {
		qm := q.(map[string]any)
		if e, ok := qm["Expression"].(string); ok {
			out[qm["Id"].(string)] = e
		}
	}
	return out
}

// The all-401 outage (every key refused: an API-keys table restored
// empty) pages: AuthorizerDenialRate watches the share of 401/403 among
// requests, is a member of the API's composite alarm, and that composite
// notifies the alarm topic. The traffic-drop alarm pages the same way.
func TestAllRequestsRefusedPages(t *testing.T) {
	stack, _, m := outageStack(t, nil, nil)
	resources, props := synthStack(t, stack)

	denial := props(m.Alarm("AuthorizerDenialRate"))
	assert.Equal(t, 50.0, denial["Threshold"])
	assert.Equal(t, "GreaterThanThreshold", denial["ComparisonOperator"])
	assert.Equal(t, 3.0, denial["EvaluationPeriods"])
	assert.Equal(t, 2.0, denial["DatapointsToAlarm"])
	assert.Equal(t, "notBreaching", denial["TreatMissingData"])
	assert.Contains(t, expressions(denial), "expr_1")
	assert.Equal(t, "IF(requests >= 100, 100 * FILL(auth, 0) / requests, 0)", expressions(denial)["expr_1"])
	metrics := jsonOf(denial["Metrics"])
	assert.Contains(t, metrics, `"MetricName":"AuthFailures"`)
	assert.Contains(t, metrics, `"MetricName":"Count"`)
	assert.True(t, strings.HasSuffix(denial["AlarmDescription"].(string), "#authorizer-denial-rate"), denial["AlarmDescription"])
	assert.NotContains(t, denial, "AlarmActions", "the composite pages")

	api := props(m.Composite(monitoring.ServiceApi))
	members := compositeMembers(t, api)
	id := func(a awscloudwatch.Alarm) string {
		return *stack.GetLogicalId(a.Node().DefaultChild().(awscdk.CfnElement))
	}
	assert.Contains(t, members, id(m.Alarm("AuthorizerDenialRate")), "an all-401 outage pages")
	assert.Contains(t, members, id(m.Alarm("ApiTrafficDrop")), "a traffic drop pages")
	topic := id2(stack, m.AlarmTopic)
	assert.Equal(t, []any{map[string]any{"Ref": topic}}, api["AlarmActions"])
	assert.Equal(t, monitoring.SeverityPage, m.Severity("AuthorizerDenialRate"))
	assert.Equal(t, monitoring.SeverityPage, m.Severity("ApiTrafficDrop"))
	require.NotEmpty(t, resources)
}

func id2(stack awscdk.Stack, topic awssns.ITopic) string {
	return *stack.GetLogicalId(topic.Node().DefaultChild().(awscdk.CfnElement))
}

// ApiTrafficDrop is an anomaly detection alarm on the API's request count
// with missing periods filled with zeros: below the band for 3 periods,
// 3 standard deviations wide by default; both are props.
func TestTrafficDropAnomalyAlarm(t *testing.T) {
	for _, tt := range []struct {
		name           string
		th             *monitoring.Thresholds
		stdDevs, evals float64
	}{
		{"defaults", nil, 3, 3},
		{"given", &monitoring.Thresholds{TrafficDropStdDevs: 2.5, TrafficDropPeriods: 6}, 2.5, 6},
	} {
		t.Run(tt.name, func(t *testing.T) {
			stack, _, m := outageStack(t, tt.th, nil)
			_, props := synthStack(t, stack)
			p := props(m.Alarm("ApiTrafficDrop"))
			assert.Equal(t, "LessThanLowerThreshold", p["ComparisonOperator"])
			assert.Equal(t, tt.evals, p["EvaluationPeriods"])
			assert.Equal(t, tt.evals, p["DatapointsToAlarm"])
			assert.Equal(t, "notBreaching", p["TreatMissingData"])
			assert.NotContains(t, p, "Threshold", "the band is the threshold")
			exprs := expressions(p)
			band, ok := exprs[p["ThresholdMetricId"].(string)]
			require.True(t, ok, "ThresholdMetricId names the band: %v", exprs)
			var filled string
			for qid, e := range exprs {
				if strings.HasPrefix(e, "FILL(") {
					filled = qid
					assert.Equal(t, "FILL(requests, 0)", e)
				}
			}
			require.NotEmpty(t, filled, "the request count with missing periods as zeros: %v", exprs)
			assert.Equal(t, "ANOMALY_DETECTION_BAND("+filled+", "+jsonOf(tt.stdDevs)+")", band)
			assert.Contains(t, jsonOf(p["Metrics"]), `"MetricName":"Count"`)
			assert.Contains(t, p["AlarmDescription"], "#api-traffic-drop")
		})
	}
}

// The API-keys table gets the events table's table alarms (same construct
// ids under ApiKeysTable, so the same runbook sections), on its own table,
// paging with the API.
func TestApiKeysTableAlarms(t *testing.T) {
	stack, api, m := outageStack(t, nil, nil)
	_, props := synthStack(t, stack)
	table := *stack.GetLogicalId(api.ApiKeysTable().Resource().Node().DefaultChild().(awscdk.CfnElement))
	members := compositeMembers(t, props(m.Composite(monitoring.ServiceApi)))
	for _, id := range []string{"ReadThrottleEvents", "WriteThrottleEvents", "TenantIndexReadThrottleEvents", "TenantIndexWriteThrottleEvents", "SystemErrors"} {
		a := m.Alarm("ApiKeys" + id)
		require.NotNil(t, a, id)
		assert.Equal(t, id, *a.Node().Id(), "the construct id is the events table's")
		assert.Equal(t, "Monitoring/ApiKeysTable/"+id, strings.TrimPrefix(*a.Node().Path(), "S/"))
		p := props(a)
		assert.Contains(t, jsonOf(p["Metrics"]), `{"Ref":"`+table+`"}`, "%s watches the API-keys table", id)
		assert.Contains(t, p["AlarmDescription"], "DynamoDB table apikeys:")
		assert.Contains(t, members, *stack.GetLogicalId(a.Node().DefaultChild().(awscdk.CfnElement)), "%s pages with the API", id)
		assert.Equal(t, monitoring.SeverityPage, m.Severity("ApiKeys"+id))
	}
	assert.Nil(t, m.Alarm("ApiKeysGetItemLatency"), "no latency alarm unless asked")
	// Its graphs are told apart from the events table's by their titles.
	titles := map[string]int{}
	for _, w := range dashboardWidgets(t, props(m.Dashboard)) {
		if p, ok := w["properties"].(map[string]any); ok {
			if title, ok := p["title"].(string); ok {
				titles[title]++
			}
		}
	}
	for title, n := range titles {
		assert.Equal(t, 1, n, "one widget titled %q", title)
	}
	for _, title := range []string{"API keys: Throttle events (table and each GSI)", "API keys: Errors", "API keys: SuccessfulRequestLatency GetItem (ms)", "Throttle events (table and each GSI)"} {
		assert.Contains(t, titles, title)
	}
	assert.Equal(t, []string{"GetItem", "PutItem", "UpdateItem", "Query", "Scan", "TransactWriteItems"}, monitoring.ApiKeysOperations())
	sysErr := expressions(props(m.Alarm("ApiKeysSystemErrors")))
	assert.Contains(t, sysErr, "expr_1")
	assert.Equal(t, "FILL(e0, 0) + FILL(e1, 0) + FILL(e2, 0) + FILL(e3, 0) + FILL(e4, 0) + FILL(e5, 0)", sysErr["expr_1"], "summed over the operations the runtime calls, each 0 when it published nothing")
}

// Ticket alarms notify the ticket topic themselves, on ALARM and OK, and
// are in no composite alarm: backup job failures of the events table's
// vault and the rate-limit web ACL's blocked requests.
func TestTicketAlarms(t *testing.T) {
	stack, _, m := outageStack(t, &monitoring.Thresholds{WafBlockedRequests: 250}, nil)
	_, props := synthStack(t, stack)
	ticketTopic := []any{map[string]any{"Ref": id2(stack, m.TicketTopic)}}
	var inComposites []string
	for _, svc := range monitoring.Services() {
		if c := m.Composite(svc); c != nil {
			inComposites = append(inComposites, compositeMembers(t, props(c))...)
		}
	}
	for _, id := range []string{"BackupJobsFailed", "WafBlockedRequests"} {
		a := m.Alarm(id)
		require.NotNil(t, a, id)
		p := props(a)
		assert.Equal(t, ticketTopic, p["AlarmActions"], id)
		assert.Equal(t, ticketTopic, p["OKActions"], id)
		assert.True(t, strings.HasPrefix(p["AlarmDescription"].(string), "Ticket: "), id)
		assert.NotContains(t, inComposites, *stack.GetLogicalId(a.Node().DefaultChild().(awscdk.CfnElement)), "%s pages nobody", id)
		assert.Equal(t, monitoring.SeverityTicket, m.Severity(id))
	}
	backup := props(m.Alarm("BackupJobsFailed"))
	assert.Equal(t, "FILL(failed, 0) + FILL(expired, 0)", expressions(backup)["expr_1"])
	bm := jsonOf(backup["Metrics"])
	for _, name := range []string{"NumberOfBackupJobsFailed", "NumberOfBackupJobsExpired"} {
		assert.Contains(t, bm, `"MetricName":"`+name+`","Namespace":"AWS/Backup"`)
	}
	assert.Contains(t, bm, `"Name":"BackupVaultName"`)
	assert.Equal(t, 1.0, backup["Threshold"])
	assert.Contains(t, backup["AlarmDescription"], "#aws-backup-job-failures")

	waf := props(m.Alarm("WafBlockedRequests"))
	assert.Equal(t, 250.0, waf["Threshold"])
	assert.Equal(t, "GreaterThanOrEqualToThreshold", waf["ComparisonOperator"])
	assert.Equal(t, 3.0, waf["EvaluationPeriods"])
	assert.Equal(t, 2.0, waf["DatapointsToAlarm"])
	wm := jsonOf(waf["Metrics"])
	assert.Contains(t, wm, `"MetricName":"BlockedRequests","Namespace":"AWS/WAFV2"`)
	// The web ACL's own metric name (found by review: a constant, shared by
	// every Triggers API of the account and region).
	assert.Contains(t, wm, `{"Name":"WebACL","Value":"`+triggersapi.RateLimitsMetricName+`-`+*stack.StackName()+`-Triggers"}`)
	assert.Contains(t, wm, `{"Name":"Rule","Value":"ALL"}`)
	assert.Contains(t, wm, `{"Name":"Region","Value":{"Ref":"AWS::Region"}}`)
	assert.Contains(t, waf["AlarmDescription"], "#waf-blocked-requests")

	// The ticket topic is encrypted and TLS only, as the alarm topic.
	tp := assertions.Template_FromStack(stack, nil)
	tp.ResourceCountIs(jsii.String("AWS::SNS::Topic"), jsii.Number(2))
}

// Without a web ACL of its own (rate limits off) the API has no WAF alarm,
// and a table without a backup plan no backup alarm.
func TestNoWafNoBackupAlarm(t *testing.T) {
	ctx := map[string]any{"aws:cdk:bundling-stacks": []any{}}
	stack := awscdk.NewStack(awscdk.NewApp(&awscdk.AppProps{Context: &ctx}), jsii.String("S"), nil)
	api := triggersapi.NewTriggersApi(stack, jsii.String("Triggers"), &triggersapi.TriggersApiProps{RateLimit: &triggersapi.RateLimitOptions{Disabled: true}})
	topic := awssns.Topic_FromTopicArn(stack, jsii.String("Tickets"), jsii.String("arn:aws:sns:eu-west-1:111111111111:tickets"))
	m := monitoring.NewTriggersMonitoring(stack, jsii.String("Monitoring"), &monitoring.TriggersMonitoringProps{Api: api, TicketTopic: topic})
	assert.Nil(t, m.Alarm("WafBlockedRequests"))
	assert.Nil(t, m.Alarm("BackupJobsFailed"))
	assert.NotNil(t, m.Alarm("AuthorizerDenialRate"))
	assert.Equal(t, topic, m.TicketTopic)
	assertions.Template_FromStack(stack, nil).ResourceCountIs(jsii.String("AWS::SNS::Topic"), jsii.Number(1))
}

// Bad thresholds of the new alarms fail with the value and the fix.
func TestValidateOutageThresholds(t *testing.T) {
	stack := awscdk.NewStack(awscdk.NewApp(nil), jsii.String("S"), nil)
	table := eventstore.NewEventsTable(stack, jsii.String("Events"), nil)
	th := func(t monitoring.Thresholds) *monitoring.TriggersMonitoringProps {
		return &monitoring.TriggersMonitoringProps{EventsTable: table, Thresholds: &t}
	}
	for _, tt := range []struct {
		name  string
		props *monitoring.TriggersMonitoringProps
		want  string
	}{
		{"negative band", th(monitoring.Thresholds{TrafficDropStdDevs: -1}), "Thresholds.TrafficDropStdDevs -1 is negative: give the band width in standard deviations"},
		{"band too wide", th(monitoring.Thresholds{TrafficDropStdDevs: 12}), "Thresholds.TrafficDropStdDevs 12 is above 10"},
		{"fractional periods", th(monitoring.Thresholds{TrafficDropPeriods: 2.5}), "Thresholds.TrafficDropPeriods 2.5 is not a whole number of periods"},
		{"periods over a day", th(monitoring.Thresholds{TrafficDropPeriods: 300}), "Thresholds.TrafficDropPeriods 300 times the period (300 s) is more than a day, which CloudWatch refuses for a period under an hour: use at most 288"},
		{"periods over a day, 59-minute period", &monitoring.TriggersMonitoringProps{EventsTable: table, Period: awscdk.Duration_Minutes(jsii.Number(59)), Thresholds: &monitoring.Thresholds{TrafficDropPeriods: 25}},
			"Thresholds.TrafficDropPeriods 25 times the period (3540 s) is more than a day, which CloudWatch refuses for a period under an hour: use at most 24"},
		{"periods over 7 days, 1-hour period", &monitoring.TriggersMonitoringProps{EventsTable: table, Period: awscdk.Duration_Hours(jsii.Number(1)), Thresholds: &monitoring.Thresholds{TrafficDropPeriods: 169}},
			"Thresholds.TrafficDropPeriods 169 times the period (3600 s) is more than 7 days, which CloudWatch refuses: use at most 168"},
		{"denial percent", th(monitoring.Thresholds{AuthorizerDenialPercent: 150}), "Thresholds.AuthorizerDenialPercent 150 is above 100: it is a percentage"},
		{"negative minimum", th(monitoring.Thresholds{AuthorizerDenialMinRequests: -5}), "Thresholds.AuthorizerDenialMinRequests -5 is negative"},
		{"negative waf", th(monitoring.Thresholds{WafBlockedRequests: -1}), "Thresholds.WafBlockedRequests -1 is negative"},
		{"negative webhook minimum", th(monitoring.Thresholds{WebhookFailureMinAttempts: -1}), "Thresholds.WebhookFailureMinAttempts -1 is negative"},
		{"negative backup", th(monitoring.Thresholds{BackupJobsFailed: -1}), "Thresholds.BackupJobsFailed -1 is negative"},
		{"api keys latency of an operation not called", &monitoring.TriggersMonitoringProps{EventsTable: table, ApiKeysTableThresholds: &monitoring.TableThresholds{LatencyMs: map[string]float64{"BatchWriteItem": 10}}},
			`ApiKeysTableThresholds.LatencyMs has "BatchWriteItem", which is not monitored: the runtime calls GetItem, PutItem, UpdateItem, Query, Scan, TransactWriteItems on the API-keys table; remove it`},
		{"api keys latency without threshold", &monitoring.TriggersMonitoringProps{EventsTable: table, ApiKeysTableThresholds: &monitoring.TableThresholds{LatencyMs: map[string]float64{"GetItem": 0}}},
			`ApiKeysTableThresholds.LatencyMs["GetItem"] is 0: give the p99 threshold in milliseconds`},
		{"api keys negative throttles", &monitoring.TriggersMonitoringProps{EventsTable: table, ApiKeysTableThresholds: &monitoring.TableThresholds{ReadThrottleEvents: -1}},
			"ApiKeysTableThresholds.ReadThrottleEvents -1 is negative"},
		{"api keys replicas", &monitoring.TriggersMonitoringProps{EventsTable: table, ApiKeysTableThresholds: &monitoring.TableThresholds{ReplicationLatencyMs: 100}},
			"ApiKeysTableThresholds.ReplicationLatencyMs 100 is given, but TriggersMonitoring monitors no replicas"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := monitoring.ValidateProps(tt.props)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
	assert.NoError(t, monitoring.ValidateProps(th(monitoring.Thresholds{TrafficDropStdDevs: 10, TrafficDropPeriods: 288, AuthorizerDenialPercent: 100})))
	// From a period of an hour up, CloudWatch evaluates up to 7 days (it
	// was refused past a day, with the reason of shorter periods).
	assert.NoError(t, monitoring.ValidateProps(&monitoring.TriggersMonitoringProps{EventsTable: table, Period: awscdk.Duration_Hours(jsii.Number(1)),
		Thresholds: &monitoring.Thresholds{TrafficDropPeriods: 168}}))
	assert.NoError(t, monitoring.ValidateProps(&monitoring.TriggersMonitoringProps{EventsTable: table, ApiKeysTableThresholds: &monitoring.TableThresholds{LatencyMs: map[string]float64{"GetItem": 15}}}))
}

// An API-keys latency threshold adds its p99 alarm.
func TestApiKeysLatencyAlarm(t *testing.T) {
	ctx := map[string]any{"aws:cdk:bundling-stacks": []any{}}
	stack := awscdk.NewStack(awscdk.NewApp(&awscdk.AppProps{Context: &ctx}), jsii.String("S"), nil)
	api := triggersapi.NewTriggersApi(stack, jsii.String("Triggers"), nil)
	m := monitoring.NewTriggersMonitoring(stack, jsii.String("Monitoring"), &monitoring.TriggersMonitoringProps{
		Api: api, ApiKeysTableThresholds: &monitoring.TableThresholds{LatencyMs: map[string]float64{"GetItem": 15}, WriteThrottleEvents: 5},
	})
	_, props := synthStack(t, stack)
	p := props(m.Alarm("ApiKeysGetItemLatency"))
	assert.Equal(t, 15.0, p["Threshold"])
	assert.Contains(t, jsonOf(p["Metrics"]), `"Stat":"p99"`)
	assert.Equal(t, 5.0, props(m.Alarm("ApiKeysWriteThrottleEvents"))["Threshold"])
	assert.Equal(t, 1.0, props(m.Alarm("ApiKeysReadThrottleEvents"))["Threshold"])
}
