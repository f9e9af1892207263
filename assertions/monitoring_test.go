package assertions

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/contract"
	"github.com/triggers-dev/triggers/internal/testkit/cdktest"
)

// metricLine renders one CloudWatch metric (an alarm's MetricStat or a
// dashboard metric array) as "namespace name stat [dimension names]",
// period included when it is not 300.
func metricLine(ns, name, stat string, period float64, dims []string) string {
	sort.Strings(dims)
	s := fmt.Sprintf("%s %s %s [%s]", ns, name, stat, strings.Join(dims, ","))
	if period != 300 {
		s += fmt.Sprintf(" period=%v", period)
	}
	return s
}

// alarmShape is what an alarm watches and when it fires.
type alarmShape struct {
	Metrics    []string // metricLine of each metric, sorted
	Expression string   // math expressions, if any, sorted and joined by " | "
	Threshold  float64
	Evals      float64
	Datapoints float64
	Comparison string
	Missing    string
}

func shapeOfAlarm(t *testing.T, p map[string]any) alarmShape {
	t.Helper()
	s := alarmShape{
		Evals:      p["EvaluationPeriods"].(float64),
		Comparison: p["ComparisonOperator"].(string), Missing: p["TreatMissingData"].(string),
	}
	if th, ok := p["Threshold"].(float64); ok { // none: an anomaly detection alarm
		s.Threshold = th
	}
	var exprs []string
	if d, ok := p["DatapointsToAlarm"].(float64); ok {
		s.Datapoints = d
	}
	queries, ok := p["Metrics"].([]any)
	require.True(t, ok, "alarm uses metric data queries")
	for _, q := range queries {
		qm := q.(map[string]any)
		if e, ok := qm["Expression"].(string); ok {
			exprs = append(exprs, e)
			continue
		}
		ms := qm["MetricStat"].(map[string]any)
		metric := ms["Metric"].(map[string]any)
		var dims []string
		dimensions, _ := metric["Dimensions"].([]any) // none: a metric without dimensions
		for _, d := range dimensions {
			dm := d.(map[string]any)
			name := dm["Name"].(string)
			if v, ok := dm["Value"].(string); ok && (name == "Operation" || name == "GlobalSecondaryIndexName" || name == "Route" || name == "Outcome") {
				name += "=" + v
			}
			dims = append(dims, name)
		}
		s.Metrics = append(s.Metrics, metricLine(metric["Namespace"].(string), metric["MetricName"].(string), ms["Stat"].(string), ms["Period"].(float64), dims))
	}
	sort.Strings(s.Metrics)
	sort.Strings(exprs)
	s.Expression = strings.Join(exprs, " | ")
	return s
}

func ddbOps(name, stat string) []string {
	var out []string
	for _, op := range []string{"BatchGetItem", "DeleteItem", "GetItem", "PutItem", "Query", "TransactWriteItems", "UpdateItem"} {
		out = append(out, metricLine("AWS/DynamoDB", name, stat, 300, []string{"Operation=" + op, "TableName"}))
	}
	sort.Strings(out)
	return out
}

func throttleMetrics(index string) []string {
	dims := []string{"TableName"}
	if index != "" {
		dims = append(dims, "GlobalSecondaryIndexName="+index)
	}
	return []string{
		metricLine("AWS/DynamoDB", "ReadThrottleEvents", "Sum", 300, dims),
		metricLine("AWS/DynamoDB", "WriteThrottleEvents", "Sum", 300, dims),
	}
}

const (
	gteOp = "GreaterThanOrEqualToThreshold"
	gtOp  = "GreaterThanThreshold"
)

func lambdaMetric(name, stat string) []string {
	return []string{metricLine("AWS/Lambda", name, stat, 300, []string{"FunctionName"})}
}

var apiDims = []string{"ApiName", "Stage"}

// apiKeysSystemErrors are the API-keys table's SystemErrors metrics: one
// per operation the runtime calls on it.
func apiKeysSystemErrors() []string {
	var out []string
	for _, op := range []string{"GetItem", "PutItem", "Query", "Scan", "TransactWriteItems", "UpdateItem"} {
		out = append(out, metricLine("AWS/DynamoDB", "SystemErrors", "Sum", 300, []string{"Operation=" + op, "TableName"}))
	}
	sort.Strings(out)
	return out
}

// ticket is the service of the alarms of severity ticket: in no
// composite, they notify the ticket topic themselves.
const ticket = ""

// expectedAlarms of the environment's monitoring (triggers-dev-api), by
// logical id prefix, with their runbook anchors and services (composite
// alarm; ticket for the alarms that notify the ticket topic). The Duration thresholds are 80 % of each function's timeout
// (API 10 s, authorizer 5 s, consumer 30 s, webhook 300 s:
// TestAlarmThresholdsFollowTheFunctions ties them to the template); the
// concurrency ones 90 % of the default account limit 1000.
var expectedAlarms = map[string]struct {
	shape   alarmShape
	anchor  string
	service string
}{
	"MonitoringReadThrottleEvents":                {alarmShape{throttleMetrics("")[:1], "", 1, 1, 1, gteOp, "notBreaching"}, "dynamodb-table-read-throttling", "Table"},
	"MonitoringWriteThrottleEvents":               {alarmShape{throttleMetrics("")[1:], "", 1, 1, 1, gteOp, "notBreaching"}, "dynamodb-table-write-throttling", "Table"},
	"MonitoringEventTypeIndexReadThrottleEvents":  {alarmShape{throttleMetrics("EventTypeIndex")[:1], "", 1, 1, 1, gteOp, "notBreaching"}, "dynamodb-gsi-read-throttling", "Table"},
	"MonitoringEventTypeIndexWriteThrottleEvents": {alarmShape{throttleMetrics("EventTypeIndex")[1:], "", 1, 1, 1, gteOp, "notBreaching"}, "dynamodb-gsi-write-throttling", "Table"},
	"MonitoringStatusIndexReadThrottleEvents":     {alarmShape{throttleMetrics("StatusIndex")[:1], "", 1, 1, 1, gteOp, "notBreaching"}, "dynamodb-gsi-read-throttling", "Table"},
	"MonitoringStatusIndexWriteThrottleEvents":    {alarmShape{throttleMetrics("StatusIndex")[1:], "", 1, 1, 1, gteOp, "notBreaching"}, "dynamodb-gsi-write-throttling", "Table"},
	"MonitoringPutItemLatency":                    {alarmShape{[]string{metricLine("AWS/DynamoDB", "SuccessfulRequestLatency", "p99", 300, []string{"Operation=PutItem", "TableName"})}, "", 20, 3, 3, gtOp, "notBreaching"}, "dynamodb-request-latency", "Table"},
	"MonitoringSystemErrors":                      {alarmShape{ddbOps("SystemErrors", "Sum"), "FILL(e0, 0) + FILL(e1, 0) + FILL(e2, 0) + FILL(e3, 0) + FILL(e4, 0) + FILL(e5, 0) + FILL(e6, 0)", 1, 1, 1, gteOp, "notBreaching"}, "dynamodb-system-errors", "Table"},
	"MonitoringApiFunctionErrors":                 {alarmShape{lambdaMetric("Errors", "Sum"), "", 1, 1, 1, gteOp, "notBreaching"}, "lambda-errors", "Functions"},
	"MonitoringAuthorizerFunctionErrors":          {alarmShape{lambdaMetric("Errors", "Sum"), "", 1, 1, 1, gteOp, "notBreaching"}, "lambda-errors", "Functions"},
	"MonitoringConsumerFunctionErrors":            {alarmShape{lambdaMetric("Errors", "Sum"), "", 1, 1, 1, gteOp, "notBreaching"}, "lambda-errors", "Functions"},
	"MonitoringApiFunctionThrottles":              {alarmShape{lambdaMetric("Throttles", "Sum"), "", 1, 3, 2, gteOp, "notBreaching"}, "lambda-throttles", "Functions"},
	"MonitoringAuthorizerFunctionThrottles":       {alarmShape{lambdaMetric("Throttles", "Sum"), "", 1, 3, 2, gteOp, "notBreaching"}, "lambda-throttles", "Functions"},
	"MonitoringConsumerFunctionThrottles":         {alarmShape{lambdaMetric("Throttles", "Sum"), "", 1, 3, 2, gteOp, "notBreaching"}, "lambda-throttles", "Functions"},
	"MonitoringApiFunctionDuration":               {alarmShape{lambdaMetric("Duration", "p99"), "", 8000, 3, 3, gtOp, "notBreaching"}, "lambda-duration-near-timeout", "Functions"},
	"MonitoringAuthorizerFunctionDuration":        {alarmShape{lambdaMetric("Duration", "p99"), "", 4000, 3, 3, gtOp, "notBreaching"}, "lambda-duration-near-timeout", "Functions"},
	"MonitoringConsumerFunctionDuration":          {alarmShape{lambdaMetric("Duration", "p99"), "", 24000, 3, 3, gtOp, "notBreaching"}, "lambda-duration-near-timeout", "Functions"},
	"MonitoringApiFunctionConcurrency":            {alarmShape{lambdaMetric("ConcurrentExecutions", "Maximum"), "", 900, 3, 3, gtOp, "notBreaching"}, "lambda-concurrency-near-limit", "Functions"},
	"MonitoringAuthorizerFunctionConcurrency":     {alarmShape{lambdaMetric("ConcurrentExecutions", "Maximum"), "", 900, 3, 3, gtOp, "notBreaching"}, "lambda-concurrency-near-limit", "Functions"},
	"MonitoringConsumerFunctionConcurrency":       {alarmShape{lambdaMetric("ConcurrentExecutions", "Maximum"), "", 900, 3, 3, gtOp, "notBreaching"}, "lambda-concurrency-near-limit", "Functions"},
	"MonitoringWebhookFunctionErrors":             {alarmShape{lambdaMetric("Errors", "Sum"), "", 1, 1, 1, gteOp, "notBreaching"}, "lambda-errors", "Functions"},
	"MonitoringWebhookFunctionThrottles":          {alarmShape{lambdaMetric("Throttles", "Sum"), "", 1, 3, 2, gteOp, "notBreaching"}, "lambda-throttles", "Functions"},
	"MonitoringWebhookFunctionDuration":           {alarmShape{lambdaMetric("Duration", "p99"), "", 240000, 3, 3, gtOp, "notBreaching"}, "lambda-duration-near-timeout", "Functions"},
	"MonitoringWebhookFunctionConcurrency":        {alarmShape{lambdaMetric("ConcurrentExecutions", "Maximum"), "", 27, 3, 3, gtOp, "notBreaching"}, "lambda-concurrency-near-limit", "Functions"},
	"MonitoringIteratorAge":                       {alarmShape{lambdaMetric("IteratorAge", "Maximum"), "", 60000, 2, 2, gtOp, "notBreaching"}, "stream-iterator-age", "Functions"},
	"MonitoringApi5xxRate":                        {alarmShape{[]string{metricLine("AWS/ApiGateway", "5XXError", "Sum", 300, apiDims), metricLine("AWS/ApiGateway", "Count", "Sum", 300, apiDims)}, "IF(requests > 0, 100 * errors / requests, 0)", 1, 3, 2, gtOp, "notBreaching"}, "api-5xx-rate", "Api"},
	"MonitoringApi4xxRate": {alarmShape{sorted([]string{
		metricLine("AWS/ApiGateway", "4XXError", "Sum", 300, apiDims), metricLine("AWS/ApiGateway", "Count", "Sum", 300, apiDims),
		metricLine("Triggers/triggers-dev-api", "AuthFailures", "Sum", 300, nil),
	}), "IF(requests > 0, 100 * (e4 - FILL(auth, 0)) / requests, 0)", 5, 3, 3, gtOp, "notBreaching"}, "api-4xx-rate", "Api"},
	"MonitoringApiLatency":              {alarmShape{[]string{metricLine("AWS/ApiGateway", "Latency", "p99", 300, apiDims)}, "", 1000, 3, 3, gtOp, "notBreaching"}, "api-p99-latency", "Api"},
	"MonitoringInboxLatency":            {alarmShape{[]string{metricLine("Triggers/triggers-dev-api", "RequestLatency", "p95", 300, []string{"Route=GET /v1/inbox"})}, "", 50, 3, 3, gtOp, "notBreaching"}, "inbox-query-latency", "Api"},
	"MonitoringDeliveryQueueAge":        {alarmShape{[]string{metricLine("AWS/SQS", "ApproximateAgeOfOldestMessage", "Maximum", 300, []string{"QueueName"})}, "", 600, 3, 3, gtOp, "ignore"}, "delivery-queue-age", "Queues"},
	"MonitoringDeliveryDlqNotEmpty":     {alarmShape{[]string{metricLine("AWS/SQS", "ApproximateNumberOfMessagesVisible", "Maximum", 300, []string{"QueueName"})}, "", 1, 1, 1, gteOp, "ignore"}, "delivery-dlq-not-empty", "Queues"},
	"MonitoringStreamFailuresNotEmpty":  {alarmShape{[]string{metricLine("AWS/SQS", "ApproximateNumberOfMessagesVisible", "Maximum", 300, []string{"QueueName"})}, "", 1, 1, 1, gteOp, "ignore"}, "stream-failures-not-empty", "Queues"},
	"MonitoringWebhookRetryDlqNotEmpty": {alarmShape{[]string{metricLine("AWS/SQS", "ApproximateNumberOfMessagesVisible", "Maximum", 300, []string{"QueueName"})}, "", 1, 1, 1, gteOp, "ignore"}, "webhook-retry-dlq-not-empty", "Queues"},
	"MonitoringWebhookFailures": {alarmShape{sorted([]string{
		metricLine("Triggers/triggers-dev-api", "WebhookAttempts", "Sum", 300, []string{"Outcome=delivered"}),
		metricLine("Triggers/triggers-dev-api", "WebhookAttempts", "Sum", 300, []string{"Outcome=failed"}),
		metricLine("Triggers/triggers-dev-api", "WebhookAttempts", "Sum", 300, []string{"Outcome=gone"}),
	}), "IF(FILL(d, 0) + FILL(f, 0) + FILL(g, 0) >= 20, 100 * FILL(f, 0) / (FILL(d, 0) + FILL(f, 0) + FILL(g, 0)), 0)", 50, 3, 3, gtOp, "notBreaching"}, "webhook-failures", "Queues"},
	"MonitoringSubscriptionsDisabled": {alarmShape{[]string{metricLine("Triggers/triggers-dev-api", "SubscriptionsDisabled", "Sum", 300, nil)}, "", 1, 1, 1, gteOp, "notBreaching"}, "subscriptions-disabled", "Queues"},
	"MonitoringArchiverErrors":        {alarmShape{lambdaMetric("Errors", "Sum"), "", 1, 1, 1, gteOp, "notBreaching"}, "archive-of-expired-events", "Functions"},
	"MonitoringArchiverIteratorAge":   {alarmShape{lambdaMetric("IteratorAge", "Maximum"), "", 3600000, 3, 3, gtOp, "notBreaching"}, "archive-of-expired-events", "Functions"},
	// Messages a replay holds are in flight: counted too (found by review:
	// it cleared while a killed replay hid them).
	"MonitoringArchiveFailuresNotEmpty": {alarmShape{sorted([]string{
		metricLine("AWS/SQS", "ApproximateNumberOfMessagesNotVisible", "Maximum", 300, []string{"QueueName"}),
		metricLine("AWS/SQS", "ApproximateNumberOfMessagesVisible", "Maximum", 300, []string{"QueueName"}),
	}), "visible + inflight", 1, 1, 1, gteOp, "ignore"}, "archive-failures-not-empty", "Queues"},
	// Silent outages: the traffic drop (anomaly detection: no threshold,
	// the band) and the share of requests refused 401/403 page with the
	// API, as do the API-keys table's throttling and system errors.
	"MonitoringApiTrafficDrop": {alarmShape{[]string{metricLine("AWS/ApiGateway", "Count", "Sum", 300, apiDims)}, "ANOMALY_DETECTION_BAND(m0, 3) | FILL(requests, 0)", 0, 3, 3, "LessThanLowerThreshold", "notBreaching"}, "api-traffic-drop", "Api"},
	"MonitoringAuthorizerDenialRate": {alarmShape{sorted([]string{
		metricLine("AWS/ApiGateway", "Count", "Sum", 300, apiDims), metricLine("Triggers/triggers-dev-api", "AuthFailures", "Sum", 300, nil),
	}), "IF(requests >= 100, 100 * FILL(auth, 0) / requests, 0)", 50, 3, 2, gtOp, "notBreaching"}, "authorizer-denial-rate", "Api"},
	"MonitoringApiKeysTableReadThrottleEvents":             {alarmShape{throttleMetrics("")[:1], "", 1, 1, 1, gteOp, "notBreaching"}, "dynamodb-table-read-throttling", "Api"},
	"MonitoringApiKeysTableWriteThrottleEvents":            {alarmShape{throttleMetrics("")[1:], "", 1, 1, 1, gteOp, "notBreaching"}, "dynamodb-table-write-throttling", "Api"},
	"MonitoringApiKeysTableTenantIndexReadThrottleEvents":  {alarmShape{throttleMetrics("TenantIndex")[:1], "", 1, 1, 1, gteOp, "notBreaching"}, "dynamodb-gsi-read-throttling", "Api"},
	"MonitoringApiKeysTableTenantIndexWriteThrottleEvents": {alarmShape{throttleMetrics("TenantIndex")[1:], "", 1, 1, 1, gteOp, "notBreaching"}, "dynamodb-gsi-write-throttling", "Api"},
	"MonitoringApiKeysTableSystemErrors":                   {alarmShape{apiKeysSystemErrors(), "FILL(e0, 0) + FILL(e1, 0) + FILL(e2, 0) + FILL(e3, 0) + FILL(e4, 0) + FILL(e5, 0)", 1, 1, 1, gteOp, "notBreaching"}, "dynamodb-system-errors", "Api"},
	// Tickets: the events table's backup vault, the rate-limit web ACL.
	"MonitoringBackupJobsFailed": {alarmShape{[]string{
		metricLine("AWS/Backup", "NumberOfBackupJobsExpired", "Sum", 300, []string{"BackupVaultName"}),
		metricLine("AWS/Backup", "NumberOfBackupJobsFailed", "Sum", 300, []string{"BackupVaultName"}),
	}, "FILL(failed, 0) + FILL(expired, 0)", 1, 1, 1, gteOp, "notBreaching"}, "aws-backup-job-failures", ticket},
	"MonitoringWafBlockedRequests": {alarmShape{[]string{metricLine("AWS/WAFV2", "BlockedRequests", "Sum", 300, []string{"Region", "Rule", "WebACL"})}, "", 1000, 3, 2, gteOp, "notBreaching"}, "waf-blocked-requests", ticket},
}

// Every alarm: metric, statistic, period, threshold, evaluation periods,
// missing-data treatment, no actions of its own (its service's composite
// alarm pages) and a description linking to an existing runbook section.
func TestAlarms(t *testing.T) {
	tp := tmpl(t, apiStack)
	alarms := cdktest.Resources(tp, "AWS::CloudWatch::Alarm")
	anchors := runbook(t).anchors
	require.Len(t, alarms, len(expectedAlarms), "alarm count")
	ticketTopic, _ := one(t, tp, "AWS::SNS::Topic", "MonitoringTicketTopic")
	for prefix, want := range expectedAlarms {
		t.Run(prefix, func(t *testing.T) {
			_, a := one(t, tp, "AWS::CloudWatch::Alarm", prefix)
			p := cdktest.Props(a)
			assert.Equal(t, want.shape, shapeOfAlarm(t, p))
			desc := p["AlarmDescription"].(string)
			if want.service == ticket {
				topic := []any{map[string]any{"Ref": ticketTopic}}
				assert.Equal(t, topic, p["AlarmActions"], "a ticket alarm notifies the ticket topic")
				assert.Equal(t, topic, p["OKActions"], "on OK too")
				assert.True(t, strings.HasPrefix(desc, "Ticket: "), desc)
			} else {
				assert.NotContains(t, p, "AlarmActions", "the composite alarm pages, not the member")
				assert.NotContains(t, p, "OKActions", "the composite alarm notifies OK")
			}
			assert.Contains(t, desc, "Runbook: https://github.com/triggers-dev/triggers/blob/main/docs/runbook.md#"+want.anchor)
			assert.True(t, anchors[want.anchor], "docs/runbook.md has a section for #%s", want.anchor)
		})
	}
	_, topic := one(t, tp, "AWS::SNS::Topic", "MonitoringAlarmTopic")
	assert.Contains(t, jsonOf(cdktest.Props(topic)["KmsMasterKeyId"]), ":alias/aws/sns", "encrypted with the AWS-managed key")
}

// ruleAlarms returns the logical ids of the alarms a composite alarm's rule
// names, and the rule with each alarm replaced by its logical id.
func ruleAlarms(t *testing.T, rule any) ([]string, string) {
	t.Helper()
	var ids []string
	var b strings.Builder
	switch r := rule.(type) {
	case string:
		return nil, r
	case map[string]any:
		parts := r["Fn::Join"].([]any)[1].([]any)
		for _, part := range parts {
			switch x := part.(type) {
			case string:
				b.WriteString(x)
			case map[string]any:
				id := x["Fn::GetAtt"].([]any)[0].(string)
				ids = append(ids, id)
				b.WriteString(id)
			}
		}
	}
	sort.Strings(ids)
	return ids, b.String()
}

// One composite alarm per service: its rule is "any member in ALARM", it
// pages the topic on ALARM and OK, and its members are exactly that
// service's alarms.
func TestCompositeAlarms(t *testing.T) {
	tp := tmpl(t, apiStack)
	topicID, _ := one(t, tp, "AWS::SNS::Topic", "MonitoringAlarmTopic")
	composites := cdktest.Resources(tp, "AWS::CloudWatch::CompositeAlarm")
	require.Len(t, composites, 4, "table, functions, API, queues")
	for _, svc := range []string{"Table", "Functions", "Api", "Queues"} {
		t.Run(svc, func(t *testing.T) {
			_, c := one(t, tp, "AWS::CloudWatch::CompositeAlarm", "Monitoring"+svc+"Composite")
			p := cdktest.Props(c)
			topic := []any{map[string]any{"Ref": topicID}}
			assert.Equal(t, topic, p["AlarmActions"], "pages on ALARM")
			assert.Equal(t, topic, p["OKActions"], "and on OK")
			assert.Contains(t, p["AlarmDescription"], "Runbook: https://github.com/triggers-dev/triggers/blob/main/docs/runbook.md#composite-alarms-one-page-per-service")
			ids, rule := ruleAlarms(t, p["AlarmRule"])
			var want []string
			for prefix, a := range expectedAlarms {
				if a.service == svc {
					id, _ := one(t, tp, "AWS::CloudWatch::Alarm", prefix)
					want = append(want, id)
				}
			}
			assert.Equal(t, sorted(want), ids, "members")
			assert.Equal(t, len(ids)-1, strings.Count(rule, `") OR ALARM("`), "any member: %s", rule)
			assert.Equal(t, len(ids), strings.Count(rule, `ALARM("`), "members in ALARM state: %s", rule)
			assert.NotContains(t, rule, " AND ", rule)
		})
	}
}

// 401/403 responses are counted from the access log (and subtracted from
// the 4XX alarm): a JSON metric filter on the stage's access log group.
func TestAuthFailuresMetricFilter(t *testing.T) {
	tp := tmpl(t, apiStack)
	_, f := one(t, tp, "AWS::Logs::MetricFilter", "MonitoringAuthFailuresFilter")
	p := cdktest.Props(f)
	logsID, _ := one(t, tp, "AWS::Logs::LogGroup", "TriggersAccessLogs")
	assert.Equal(t, map[string]any{"Ref": logsID}, p["LogGroupName"])
	assert.Equal(t, `{ ($.status = "401") || ($.status = "403") }`, p["FilterPattern"])
	assert.Equal(t, []any{map[string]any{
		"MetricName": "AuthFailures", "MetricNamespace": "Triggers/triggers-dev-api", "MetricValue": "1", "DefaultValue": 0.0, "Unit": "Count",
	}}, p["MetricTransformations"])
}

// Thresholds that depend on the functions follow them: test-api-options'
// API function has a 20 s timeout and reserved concurrency 50, and its
// monitoring asks for 75 % of the timeout and 80 % of the limit (account
// limit 400 for the functions without reserved concurrency).
func TestAlarmThresholdsFollowTheFunctions(t *testing.T) {
	threshold := func(tp map[string]any, prefix string) float64 {
		_, a := one(t, tp, "AWS::CloudWatch::Alarm", prefix)
		return cdktest.Props(a)["Threshold"].(float64)
	}
	timeout := func(tp map[string]any, prefix string) float64 {
		_, f := one(t, tp, "AWS::Lambda::Function", prefix)
		return cdktest.Props(f)["Timeout"].(float64)
	}
	dev := tmpl(t, apiStack)
	for fn, resource := range map[string]string{"Api": "TriggersApiFunction", "Authorizer": "TriggersAuthorizerFunction", "Consumer": "TriggersConsumerFunction", "Webhook": "TriggersWebhooksFunction"} {
		assert.Equal(t, 0.8*1000*timeout(dev, resource), threshold(dev, "Monitoring"+fn+"FunctionDuration"), fn)
	}
	o := tmpl(t, stackApiOptions)
	assert.Equal(t, 20.0, timeout(o, "TriggersApiFunction"))
	assert.Equal(t, 15000.0, threshold(o, "MonitoringApiFunctionDuration"), "75 % of 20 s")
	assert.Equal(t, 0.75*1000*timeout(o, "TriggersAuthorizerFunction"), threshold(o, "MonitoringAuthorizerFunctionDuration"))
	assert.Equal(t, 40.0, threshold(o, "MonitoringApiFunctionConcurrency"), "80 % of the reserved 50")
	assert.Equal(t, 320.0, threshold(o, "MonitoringAuthorizerFunctionConcurrency"), "80 % of the account limit 400")
	assert.Equal(t, 40.0, threshold(o, "MonitoringInboxLatency"))
	_, api := one(t, o, "AWS::CloudWatch::Alarm", "MonitoringApiFunctionConcurrency")
	assert.Contains(t, cdktest.Props(api)["AlarmDescription"], "reserved concurrency (50)")
	// The given topic receives the composite alarms' notifications.
	for id, c := range cdktest.Resources(o, "AWS::CloudWatch::CompositeAlarm") {
		assert.Equal(t, []any{"arn:aws:sns:us-east-1:111111111111:on-call"}, cdktest.Props(c)["AlarmActions"], id)
	}
	assert.Empty(t, cdktest.Resources(o, "AWS::SNS::Topic"), "no topic made when one is given")
}

// A provisioned table monitored alone: capacity alarms for the table and
// each GSI, read and write, custom thresholds and runbook; no function,
// API or queue alarms.
func TestAlarmsProvisionedTableOnly(t *testing.T) {
	tp := tmpl(t, stackMonitoringProvisioned)
	alarms := cdktest.Resources(tp, "AWS::CloudWatch::Alarm")
	var ids []string
	for id := range alarms {
		ids = append(ids, regexp.MustCompile(`[0-9A-F]{8}$`).ReplaceAllString(id, ""))
	}
	sort.Strings(ids)
	assert.Equal(t, []string{
		"MonitoringEventTypeIndexReadCapacity", "MonitoringEventTypeIndexReadThrottleEvents", "MonitoringEventTypeIndexWriteCapacity",
		"MonitoringEventTypeIndexWriteThrottleEvents", "MonitoringPutItemLatency", "MonitoringReadCapacity", "MonitoringReadThrottleEvents",
		"MonitoringStatusIndexReadCapacity", "MonitoringStatusIndexReadThrottleEvents", "MonitoringStatusIndexWriteCapacity",
		"MonitoringStatusIndexWriteThrottleEvents", "MonitoringSystemErrors", "MonitoringWriteCapacity", "MonitoringWriteThrottleEvents",
	}, ids)
	_, c := one(t, tp, "AWS::CloudWatch::CompositeAlarm", "MonitoringTableComposite")
	members, _ := ruleAlarms(t, cdktest.Props(c)["AlarmRule"])
	assert.Len(t, members, len(ids), "the table's composite alarm has every alarm")
	assert.Len(t, cdktest.Resources(tp, "AWS::CloudWatch::CompositeAlarm"), 1, "one service: the table")
	_, lat := one(t, tp, "AWS::CloudWatch::Alarm", "MonitoringPutItemLatency")
	assert.Equal(t, 25.0, cdktest.Props(lat)["Threshold"])
	assert.Contains(t, cdktest.Props(lat)["AlarmDescription"], "Runbook: https://runbooks.example.com/triggers#dynamodb-request-latency")

	cap := map[string][]string{
		"MonitoringReadCapacity":               {"AWS/DynamoDB ConsumedReadCapacityUnits Sum [TableName]", "AWS/DynamoDB ProvisionedReadCapacityUnits Average [TableName]"},
		"MonitoringWriteCapacity":              {"AWS/DynamoDB ConsumedWriteCapacityUnits Sum [TableName]", "AWS/DynamoDB ProvisionedWriteCapacityUnits Average [TableName]"},
		"MonitoringEventTypeIndexReadCapacity": {"AWS/DynamoDB ConsumedReadCapacityUnits Sum [GlobalSecondaryIndexName=EventTypeIndex,TableName]", "AWS/DynamoDB ProvisionedReadCapacityUnits Average [GlobalSecondaryIndexName=EventTypeIndex,TableName]"},
		"MonitoringStatusIndexWriteCapacity":   {"AWS/DynamoDB ConsumedWriteCapacityUnits Sum [GlobalSecondaryIndexName=StatusIndex,TableName]", "AWS/DynamoDB ProvisionedWriteCapacityUnits Average [GlobalSecondaryIndexName=StatusIndex,TableName]"},
	}
	for prefix, metrics := range cap {
		_, a := one(t, tp, "AWS::CloudWatch::Alarm", prefix)
		s := shapeOfAlarm(t, cdktest.Props(a))
		assert.Equal(t, alarmShape{metrics, "100 * (c / PERIOD(c)) / FILL(p, REPEAT)", 85, 3, 3, gtOp, "notBreaching"}, s, prefix)
	}
	assert.Empty(t, cdktest.Resources(tp, "AWS::Logs::QueryDefinition"), "queries need the API's log groups")
}

// dashboard parses the dashboard body (tokens replaced by readable
// placeholders) into its widgets.
func dashboard(t *testing.T, stack string) []map[string]any {
	t.Helper()
	_, d := one(t, tmpl(t, stack), "AWS::CloudWatch::Dashboard", "MonitoringDashboard")
	var b strings.Builder
	for _, part := range cdktest.Props(d)["DashboardBody"].(map[string]any)["Fn::Join"].([]any)[1].([]any) {
		if s, ok := part.(string); ok {
			b.WriteString(s)
		} else {
			b.WriteString(strings.ReplaceAll(jsonOf(part), `"`, `'`))
		}
	}
	var body struct {
		Widgets []map[string]any `json:"widgets"`
	}
	require.NoError(t, json.Unmarshal([]byte(b.String()), &body), "dashboard body is JSON")
	return body.Widgets
}

// widgetLines renders a graph widget's metrics as lines: visible metrics as
// metricLine (dimension names only), math expressions as "expr: ...".
// Metrics hidden behind an expression are not listed.
func widgetLines(w map[string]any) (title string, left, right []string) {
	props := w["properties"].(map[string]any)
	title, _ = props["title"].(string)
	if _, ok := props["metrics"]; !ok { // an alarm widget: the alarm's metrics and band
		if a, ok := props["annotations"].(map[string]any)["alarms"].([]any); ok {
			left = append(left, fmt.Sprintf("alarm widget (%d alarm)", len(a)))
		}
		return title, left, nil
	}
	for _, m := range props["metrics"].([]any) {
		arr := m.([]any)
		opts, _ := arr[len(arr)-1].(map[string]any)
		if v, ok := opts["visible"].(bool); ok && !v {
			continue
		}
		var line string
		if e, ok := opts["expression"].(string); ok {
			line = "expr: " + e
		} else {
			var ns, name string
			var dims []string
			i := 0
			for _, x := range arr[:len(arr)-1] {
				s, _ := x.(string)
				switch {
				case s == ".":
					// repeats the previous line's value; not used by CDK
				case i == 0:
					ns = s
				case i == 1:
					name = s
				case i%2 == 0:
					if s == "Operation" || s == "GlobalSecondaryIndexName" || s == "Route" || s == "Outcome" {
						s += "=" + arr[i+1].(string)
					}
					dims = append(dims, s)
				}
				i++
			}
			stat, _ := opts["stat"].(string)
			if stat == "" {
				stat = "Average" // the dashboard's default, which CDK leaves out
			}
			line = metricLine(ns, name, stat, 300, dims)
		}
		if opts["yAxis"] == "right" {
			right = append(right, line)
		} else {
			left = append(left, line)
		}
	}
	return title, left, right
}

// Every widget of the environment's dashboard, by title, with its metrics.
func TestDashboardWidgets(t *testing.T) {
	widgets := dashboard(t, apiStack)
	got := map[string][2][]string{}
	var sections []string
	for _, w := range widgets {
		switch w["type"] {
		case "text":
			sections = append(sections, w["properties"].(map[string]any)["markdown"].(string))
		case "metric":
			title, left, right := widgetLines(w)
			_, dup := got[title]
			require.False(t, dup, "two widgets titled %q", title)
			got[title] = [2][]string{left, right}
		}
	}
	require.Len(t, sections, 12)
	assert.True(t, strings.HasPrefix(sections[1], "### Contributor Insights (events)\n"), "the events table's Contributor Insights (on in the data stack): %q", sections[1])
	assert.Contains(t, sections[1], "ContributorInsightsRuleNames")
	sections = append(sections[:1:1], sections[2:]...)
	assert.Equal(t, []string{"## Events table (DynamoDB)", "## Lambda functions", "## API Gateway", "## Traffic and authorization (silent outages)",
		"## API-keys table (DynamoDB)", "## Rate limits (AWS WAF)", "## Delivery queues (SQS)", "## Runtime (embedded metric format)",
		"## Archive of expired events", "## Backups (AWS Backup)", "## Alarms"}, sections)

	lat := func(op string) [2][]string {
		var l []string
		for _, p := range []string{"p50", "p95", "p99", "Average"} {
			l = append(l, metricLine("AWS/DynamoDB", "SuccessfulRequestLatency", p, 300, []string{"Operation=" + op, "TableName"}))
		}
		return [2][]string{l, nil}
	}
	fn := func(name string, consumer bool) map[string][2][]string {
		right := []string{metricLine("AWS/Lambda", "ConcurrentExecutions", "Maximum", 300, []string{"FunctionName"})}
		title := name + ": concurrency"
		if consumer {
			right = append(right, metricLine("AWS/Lambda", "IteratorAge", "Maximum", 300, []string{"FunctionName"}))
			title += ", iterator age"
		}
		return map[string][2][]string{
			name + ": invocations, errors, throttles": {{
				metricLine("AWS/Lambda", "Invocations", "Sum", 300, []string{"FunctionName"}),
				metricLine("AWS/Lambda", "Errors", "Sum", 300, []string{"FunctionName"}),
				metricLine("AWS/Lambda", "Throttles", "Sum", 300, []string{"FunctionName"}),
			}, nil},
			name + ": duration (ms)": {{
				metricLine("AWS/Lambda", "Duration", "p50", 300, []string{"FunctionName"}),
				metricLine("AWS/Lambda", "Duration", "p95", 300, []string{"FunctionName"}),
				metricLine("AWS/Lambda", "Duration", "p99", 300, []string{"FunctionName"}),
			}, nil},
			title: {right, nil},
		}
	}
	api := []string{"ApiName", "Stage"}
	want := map[string][2][]string{
		"Capacity (table)":                                 {{"expr: r/PERIOD(r)", "expr: w/PERIOD(w)"}, nil},
		"Capacity (GSI EventTypeIndex)":                    {{"expr: r/PERIOD(r)", "expr: w/PERIOD(w)"}, nil},
		"Capacity (GSI StatusIndex)":                       {{"expr: r/PERIOD(r)", "expr: w/PERIOD(w)"}, nil},
		"Throttle events (table and each GSI)":             {append(append(throttleMetrics(""), throttleMetrics("EventTypeIndex")...), throttleMetrics("StatusIndex")...), nil},
		"SuccessfulRequestLatency PutItem (ms)":            lat("PutItem"),
		"SuccessfulRequestLatency TransactWriteItems (ms)": lat("TransactWriteItems"),
		"SuccessfulRequestLatency GetItem (ms)":            lat("GetItem"),
		"SuccessfulRequestLatency Query (ms)":              lat("Query"),
		"SuccessfulRequestLatency UpdateItem (ms)":         lat("UpdateItem"),
		"SuccessfulRequestLatency BatchGetItem (ms)":       lat("BatchGetItem"),
		"SuccessfulRequestLatency DeleteItem (ms)":         lat("DeleteItem"),
		"Errors": {
			{"expr: FILL(e0, 0) + FILL(e1, 0) + FILL(e2, 0) + FILL(e3, 0) + FILL(e4, 0) + FILL(e5, 0) + FILL(e6, 0)", metricLine("AWS/DynamoDB", "ConditionalCheckFailedRequests", "Sum", 300, []string{"TableName"}), metricLine("AWS/DynamoDB", "TransactionConflict", "Sum", 300, []string{"TableName"})},
			{metricLine("AWS/DynamoDB", "UserErrors", "Sum", 300, nil)},
		},
		"TTL deletions (attribute ttl)":          {{metricLine("AWS/DynamoDB", "TimeToLiveDeletedItemCount", "Sum", 300, []string{"TableName"})}, nil},
		"Requests and errors":                    {{metricLine("AWS/ApiGateway", "Count", "Sum", 300, api)}, {metricLine("AWS/ApiGateway", "4XXError", "Sum", 300, api), metricLine("AWS/ApiGateway", "5XXError", "Sum", 300, api)}},
		"Latency (ms)":                           {{metricLine("AWS/ApiGateway", "Latency", "p95", 300, api), metricLine("AWS/ApiGateway", "Latency", "p99", 300, api)}, nil},
		"Integration latency (ms)":               {{metricLine("AWS/ApiGateway", "IntegrationLatency", "p95", 300, api), metricLine("AWS/ApiGateway", "IntegrationLatency", "p99", 300, api)}, nil},
		"Delivery queue depth":                   {{metricLine("AWS/SQS", "ApproximateNumberOfMessagesVisible", "Maximum", 300, []string{"QueueName"})}, nil},
		"Delivery queue: oldest message age (s)": {{metricLine("AWS/SQS", "ApproximateAgeOfOldestMessage", "Maximum", 300, []string{"QueueName"})}, nil},
		"Dead-letter queues": {{
			metricLine("AWS/SQS", "ApproximateNumberOfMessagesVisible", "Maximum", 300, []string{"QueueName"}),
			metricLine("AWS/SQS", "ApproximateNumberOfMessagesVisible", "Maximum", 300, []string{"QueueName"}),
			metricLine("AWS/SQS", "ApproximateNumberOfMessagesVisible", "Maximum", 300, []string{"QueueName"}),
		}, nil},
		"Webhook retry queue": {{
			metricLine("AWS/SQS", "ApproximateNumberOfMessagesVisible", "Maximum", 300, []string{"QueueName"}),
			metricLine("AWS/SQS", "ApproximateNumberOfMessagesDelayed", "Maximum", 300, []string{"QueueName"}),
		}, nil},
		"Events ingested":                      {{metricLine("Triggers/triggers-dev-api", "EventsIngested", "Sum", 300, nil)}, nil},
		"Events rejected by reason":            {{`expr: SEARCH('{"Triggers/triggers-dev-api",Reason} MetricName="EventsRejected"', 'Sum', 300)`}, nil},
		"4XX: client errors and auth failures": {{"expr: e4 - FILL(auth, 0)", metricLine("Triggers/triggers-dev-api", "AuthFailures", "Sum", 300, nil)}, nil},
		"Inbox query latency (ms), GET /v1/inbox": {{
			metricLine("Triggers/triggers-dev-api", "RequestLatency", "p50", 300, []string{"Route=GET /v1/inbox"}),
			metricLine("Triggers/triggers-dev-api", "RequestLatency", "p95", 300, []string{"Route=GET /v1/inbox"}),
			metricLine("Triggers/triggers-dev-api", "RequestLatency", "p99", 300, []string{"Route=GET /v1/inbox"}),
		}, nil},
		"Request latency p95 by route (ms)": {{`expr: SEARCH('{"Triggers/triggers-dev-api",Route} MetricName="RequestLatency"', 'p95', 300)`}, nil},
		"Webhook attempts by outcome": {{
			metricLine("Triggers/triggers-dev-api", "WebhookAttempts", "Sum", 300, []string{"Outcome=delivered"}),
			metricLine("Triggers/triggers-dev-api", "WebhookAttempts", "Sum", 300, []string{"Outcome=failed"}),
			metricLine("Triggers/triggers-dev-api", "WebhookAttempts", "Sum", 300, []string{"Outcome=gone"}),
		}, nil},
		"Subscriptions disabled":              {{metricLine("Triggers/triggers-dev-api", "SubscriptionsDisabled", "Sum", 300, nil)}, nil},
		"Webhook attempts deferred by reason": {{`expr: SEARCH('{"Triggers/triggers-dev-api",Reason} MetricName="WebhookDeferred"', 'Sum', 300)`}, nil},
		"Endpoint circuits opened":            {{metricLine("Triggers/triggers-dev-api", "WebhookCircuitsOpened", "Sum", 300, nil)}, nil},
		"Archiver: invocations, errors":       {{metricLine("AWS/Lambda", "Invocations", "Sum", 300, []string{"FunctionName"}), metricLine("AWS/Lambda", "Errors", "Sum", 300, []string{"FunctionName"})}, nil},
		"Archiver: iterator age (ms)":         {{metricLine("AWS/Lambda", "IteratorAge", "Maximum", 300, []string{"FunctionName"})}, nil},
		"Archive failure queue":               {{metricLine("AWS/SQS", "ApproximateNumberOfMessagesVisible", "Maximum", 300, []string{"QueueName"}), metricLine("AWS/SQS", "ApproximateNumberOfMessagesNotVisible", "Maximum", 300, []string{"QueueName"})}, nil},
		// Silent outages.
		"Requests and the band expected for this hour and weekday": {{"alarm widget (1 alarm)"}, nil},
		"Requests refused 401/403 (%)":                             {{"expr: IF(requests >= 100, 100 * FILL(auth, 0) / requests, 0)"}, nil},
		"WAF: allowed and blocked requests": {{
			metricLine("AWS/WAFV2", "AllowedRequests", "Sum", 300, []string{"Region", "Rule", "WebACL"}),
			metricLine("AWS/WAFV2", "BlockedRequests", "Sum", 300, []string{"Region", "Rule", "WebACL"}),
		}, nil},
		"Backup jobs of the events table's vault": {{
			metricLine("AWS/Backup", "NumberOfBackupJobsCompleted", "Sum", 300, []string{"BackupVaultName"}),
			metricLine("AWS/Backup", "NumberOfBackupJobsFailed", "Sum", 300, []string{"BackupVaultName"}),
			metricLine("AWS/Backup", "NumberOfBackupJobsExpired", "Sum", 300, []string{"BackupVaultName"}),
		}, nil},
		// The API-keys table: the events table's graphs, titled apart.
		"API keys: Capacity (table)":                                 {{"expr: r/PERIOD(r)", "expr: w/PERIOD(w)"}, nil},
		"API keys: Capacity (GSI TenantIndex)":                       {{"expr: r/PERIOD(r)", "expr: w/PERIOD(w)"}, nil},
		"API keys: Throttle events (table and each GSI)":             {append(throttleMetrics(""), throttleMetrics("TenantIndex")...), nil},
		"API keys: SuccessfulRequestLatency GetItem (ms)":            lat("GetItem"),
		"API keys: SuccessfulRequestLatency PutItem (ms)":            lat("PutItem"),
		"API keys: SuccessfulRequestLatency UpdateItem (ms)":         lat("UpdateItem"),
		"API keys: SuccessfulRequestLatency Query (ms)":              lat("Query"),
		"API keys: SuccessfulRequestLatency Scan (ms)":               lat("Scan"),
		"API keys: SuccessfulRequestLatency TransactWriteItems (ms)": lat("TransactWriteItems"),
		"API keys: Errors": {
			{"expr: FILL(e0, 0) + FILL(e1, 0) + FILL(e2, 0) + FILL(e3, 0) + FILL(e4, 0) + FILL(e5, 0)", metricLine("AWS/DynamoDB", "ConditionalCheckFailedRequests", "Sum", 300, []string{"TableName"}), metricLine("AWS/DynamoDB", "TransactionConflict", "Sum", 300, []string{"TableName"})},
			{metricLine("AWS/DynamoDB", "UserErrors", "Sum", 300, nil)},
		},
	}
	for k, v := range fn("API", false) {
		want[k] = v
	}
	for k, v := range fn("Authorizer", false) {
		want[k] = v
	}
	for k, v := range fn("Webhook", false) {
		want[k] = v
	}
	for k, v := range fn("Stream consumer", true) {
		want[k] = v
	}
	assert.Equal(t, keysSorted(want), keysSorted(got), "widget titles")
	// The tenants whose endpoints' circuits opened: the webhook function's
	// log lines, grouped by tenant (no metric per tenant).
	var logWidgets []string
	for _, w := range widgets {
		if w["type"] == "log" {
			p := w["properties"].(map[string]any)
			logWidgets = append(logWidgets, p["title"].(string)+": "+jsonOf(p["query"]))
		}
	}
	require.Len(t, logWidgets, 1)
	assert.Contains(t, logWidgets[0], "Circuits opened by tenant: ")
	assert.Contains(t, logWidgets[0], "TriggersWebhooksFunctionLogGroup")
	assert.Contains(t, logWidgets[0], `filter `+contract.LogFieldMsg+` = \"`+contract.LogMsgCircuitOpened+`\"`)
	assert.Contains(t, logWidgets[0], "by "+contract.LogFieldTenant)
	for title, w := range want {
		assert.Equal(t, w, got[title], "widget %q", title)
	}
	// The UserErrors line says it is account-level.
	assert.Contains(t, jsonOf(widgets), "UserErrors (account-level")
}

// In provisioned mode the capacity widgets add provisioned lines.
func TestDashboardProvisionedLines(t *testing.T) {
	got := map[string][]string{}
	for _, w := range dashboard(t, stackMonitoringProvisioned) {
		if w["type"] == "metric" {
			title, left, _ := widgetLines(w)
			got[title] = left
		}
	}
	assert.Equal(t, []string{
		"expr: r/PERIOD(r)", "expr: w/PERIOD(w)",
		metricLine("AWS/DynamoDB", "ProvisionedReadCapacityUnits", "Average", 300, []string{"TableName"}),
		metricLine("AWS/DynamoDB", "ProvisionedWriteCapacityUnits", "Average", 300, []string{"TableName"}),
	}, got["Capacity (table)"])
	for _, ix := range []string{"EventTypeIndex", "StatusIndex"} {
		assert.Equal(t, []string{
			"expr: r/PERIOD(r)", "expr: w/PERIOD(w)",
			metricLine("AWS/DynamoDB", "ProvisionedReadCapacityUnits", "Average", 300, []string{"GlobalSecondaryIndexName=" + ix, "TableName"}),
			metricLine("AWS/DynamoDB", "ProvisionedWriteCapacityUnits", "Average", 300, []string{"GlobalSecondaryIndexName=" + ix, "TableName"}),
		}, got["Capacity (GSI "+ix+")"], ix)
	}
	assert.NotContains(t, got, "Events ingested", "no runtime section without the API")
}

// The saved Logs Insights queries seed 001 asks for.
func TestSavedQueries(t *testing.T) {
	tp := tmpl(t, apiStack)
	qs := cdktest.Resources(tp, "AWS::Logs::QueryDefinition")
	byName := map[string]map[string]any{}
	for _, q := range qs {
		p := cdktest.Props(q)
		byName[p["Name"].(string)] = p
	}
	want := map[string]struct {
		contains []string
		groups   int
	}{
		"triggers-dev/ingest-latency-percentiles": {[]string{`msg = "request"`, `path like /^\/v1\/events/`, "pct(duration_ms, 99)", "by bin(5m)"}, 1},
		"triggers-dev/latency-by-route":           {[]string{`msg = "request" and ispresent(route)`, "pct(duration_ms, 50) as p50, pct(duration_ms, 95) as p95, pct(duration_ms, 99) as p99, count(*) as requests by route", "sort p95 desc"}, 1},
		"triggers-dev/errors-by-code":             {[]string{"ispresent(error_code)", "count(*) as errors by error_code, status", "sort errors desc"}, 1},
		"triggers-dev/busiest-tenants":            {[]string{"count(*) as requests by tenant", "sort requests desc", "limit 20"}, 1},
		"triggers-dev/one-correlation-id":         {[]string{`correlation_id = "REPLACE-WITH-CORRELATION-ID"`, "sort @timestamp asc"}, 3},
		"triggers-dev/webhook-circuits-by-tenant": {[]string{`filter msg = "circuit opened"`, "by tenant, bin(1h)"}, 1},
	}
	assert.Equal(t, keysSorted(want), keysSorted(byName))
	for name, w := range want {
		p := byName[name]
		for _, c := range w.contains {
			assert.Contains(t, p["QueryString"], c, name)
		}
		assert.Len(t, p["LogGroupNames"], w.groups, name)
	}
}

func keysSorted[V any](m map[string]V) []string {
	k := keys(m)
	sort.Strings(k)
	return k
}
