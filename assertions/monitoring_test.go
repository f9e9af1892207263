package assertions

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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
	Expression string   // math expression, if any
	Threshold  float64
	Evals      float64
	Datapoints float64
	Comparison string
	Missing    string
}

func shapeOfAlarm(t *testing.T, p map[string]any) alarmShape {
	t.Helper()
	s := alarmShape{
		Threshold: p["Threshold"].(float64), Evals: p["EvaluationPeriods"].(float64),
		Comparison: p["ComparisonOperator"].(string), Missing: p["TreatMissingData"].(string),
	}
	if d, ok := p["DatapointsToAlarm"].(float64); ok {
		s.Datapoints = d
	}
	queries, ok := p["Metrics"].([]any)
	require.True(t, ok, "alarm uses metric data queries")
	for _, q := range queries {
		qm := q.(map[string]any)
		if e, ok := qm["Expression"].(string); ok {
			s.Expression = e
			continue
		}
		ms := qm["MetricStat"].(map[string]any)
		metric := ms["Metric"].(map[string]any)
		var dims []string
		for _, d := range metric["Dimensions"].([]any) {
			dm := d.(map[string]any)
			name := dm["Name"].(string)
			if v, ok := dm["Value"].(string); ok && (name == "Operation" || name == "GlobalSecondaryIndexName") {
				name += "=" + v
			}
			dims = append(dims, name)
		}
		s.Metrics = append(s.Metrics, metricLine(metric["Namespace"].(string), metric["MetricName"].(string), ms["Stat"].(string), ms["Period"].(float64), dims))
	}
	sort.Strings(s.Metrics)
	return s
}

func ddbOps(name, stat string) []string {
	var out []string
	for _, op := range []string{"BatchWriteItem", "GetItem", "PutItem", "Query", "TransactWriteItems", "UpdateItem"} {
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

// expectedAlarms of the environment's monitoring (triggers-dev-api), by
// logical id prefix, with their runbook anchors.
var expectedAlarms = map[string]struct {
	shape  alarmShape
	anchor string
}{
	"MonitoringTableThrottles":           {alarmShape{throttleMetrics(""), "a + b", 1, 1, 1, gteOp, "notBreaching"}, "table-or-index-throttling"},
	"MonitoringEventTypeIndexThrottles":  {alarmShape{throttleMetrics("EventTypeIndex"), "a + b", 1, 1, 1, gteOp, "notBreaching"}, "table-or-index-throttling"},
	"MonitoringStatusIndexThrottles":     {alarmShape{throttleMetrics("StatusIndex"), "a + b", 1, 1, 1, gteOp, "notBreaching"}, "table-or-index-throttling"},
	"MonitoringPutItemLatency":           {alarmShape{[]string{metricLine("AWS/DynamoDB", "SuccessfulRequestLatency", "p99", 300, []string{"Operation=PutItem", "TableName"})}, "", 20, 3, 3, gtOp, "notBreaching"}, "putitem-latency"},
	"MonitoringSystemErrors":             {alarmShape{ddbOps("SystemErrors", "Sum"), "e0 + e1 + e2 + e3 + e4 + e5", 1, 1, 1, gteOp, "notBreaching"}, "dynamodb-system-errors"},
	"MonitoringApiFunctionErrors":        {alarmShape{[]string{metricLine("AWS/Lambda", "Errors", "Sum", 300, []string{"FunctionName"})}, "", 1, 1, 1, gteOp, "notBreaching"}, "lambda-errors"},
	"MonitoringAuthorizerFunctionErrors": {alarmShape{[]string{metricLine("AWS/Lambda", "Errors", "Sum", 300, []string{"FunctionName"})}, "", 1, 1, 1, gteOp, "notBreaching"}, "lambda-errors"},
	"MonitoringConsumerFunctionErrors":   {alarmShape{[]string{metricLine("AWS/Lambda", "Errors", "Sum", 300, []string{"FunctionName"})}, "", 1, 1, 1, gteOp, "notBreaching"}, "lambda-errors"},
	"MonitoringIteratorAge":              {alarmShape{[]string{metricLine("AWS/Lambda", "IteratorAge", "Maximum", 300, []string{"FunctionName"})}, "", 60000, 2, 2, gtOp, "notBreaching"}, "stream-iterator-age"},
	"MonitoringApi5xxRate":               {alarmShape{[]string{metricLine("AWS/ApiGateway", "5XXError", "Sum", 300, []string{"ApiName", "Stage"}), metricLine("AWS/ApiGateway", "Count", "Sum", 300, []string{"ApiName", "Stage"})}, "IF(requests > 0, 100 * errors / requests, 0)", 1, 3, 2, gtOp, "notBreaching"}, "api-5xx-rate"},
	"MonitoringApiLatency":               {alarmShape{[]string{metricLine("AWS/ApiGateway", "Latency", "p99", 300, []string{"ApiName", "Stage"})}, "", 1000, 3, 3, gtOp, "notBreaching"}, "api-p99-latency"},
	"MonitoringDeliveryDlqNotEmpty":      {alarmShape{[]string{metricLine("AWS/SQS", "ApproximateNumberOfMessagesVisible", "Maximum", 300, []string{"QueueName"})}, "", 1, 1, 1, gteOp, "ignore"}, "delivery-dlq-not-empty"},
	"MonitoringStreamFailuresNotEmpty":   {alarmShape{[]string{metricLine("AWS/SQS", "ApproximateNumberOfMessagesVisible", "Maximum", 300, []string{"QueueName"})}, "", 1, 1, 1, gteOp, "ignore"}, "stream-failures-not-empty"},
}

// runbookAnchors returns the GitHub anchors of docs/runbook.md's headings.
func runbookAnchors(t *testing.T) map[string]bool {
	t.Helper()
	root, err := cdktest.ModuleRoot()
	require.NoError(t, err)
	raw, err := os.ReadFile(filepath.Join(root, "docs", "runbook.md"))
	require.NoError(t, err)
	anchors := map[string]bool{}
	strip := regexp.MustCompile(`[^a-z0-9 _-]`)
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(line, "#") {
			h := strings.ToLower(strings.TrimSpace(strings.TrimLeft(line, "#")))
			anchors[strings.ReplaceAll(strip.ReplaceAllString(h, ""), " ", "-")] = true
		}
	}
	return anchors
}

// Every alarm: metric, statistic, period, threshold, evaluation periods,
// missing-data treatment, actions and a description linking to an existing
// runbook section.
func TestAlarms(t *testing.T) {
	tp := tmpl(t, apiStack)
	alarms := cdktest.Resources(tp, "AWS::CloudWatch::Alarm")
	topicID, _ := one(t, tp, "AWS::SNS::Topic", "MonitoringAlarmTopic")
	anchors := runbookAnchors(t)
	require.Len(t, alarms, len(expectedAlarms), "alarm count")
	for prefix, want := range expectedAlarms {
		t.Run(prefix, func(t *testing.T) {
			_, a := one(t, tp, "AWS::CloudWatch::Alarm", prefix)
			p := cdktest.Props(a)
			assert.Equal(t, want.shape, shapeOfAlarm(t, p))
			topic := []any{map[string]any{"Ref": topicID}}
			assert.Equal(t, topic, p["AlarmActions"], "alarm action")
			assert.Equal(t, topic, p["OKActions"], "OK action")
			desc := p["AlarmDescription"].(string)
			assert.Contains(t, desc, "Runbook: https://github.com/triggers-dev/triggers/blob/main/docs/runbook.md#"+want.anchor)
			assert.True(t, anchors[want.anchor], "docs/runbook.md has a section for #%s", want.anchor)
		})
	}
	_, topic := one(t, tp, "AWS::SNS::Topic", "MonitoringAlarmTopic")
	assert.Contains(t, jsonOf(cdktest.Props(topic)["KmsMasterKeyId"]), ":alias/aws/sns", "encrypted with the AWS-managed key")
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
		"MonitoringEventTypeIndexReadCapacity", "MonitoringEventTypeIndexThrottles", "MonitoringEventTypeIndexWriteCapacity",
		"MonitoringPutItemLatency", "MonitoringReadCapacity", "MonitoringStatusIndexReadCapacity", "MonitoringStatusIndexThrottles",
		"MonitoringStatusIndexWriteCapacity", "MonitoringSystemErrors", "MonitoringTableThrottles", "MonitoringWriteCapacity",
	}, ids)
	_, lat := one(t, tp, "AWS::CloudWatch::Alarm", "MonitoringPutItemLatency")
	assert.Equal(t, 25.0, cdktest.Props(lat)["Threshold"])
	assert.Contains(t, cdktest.Props(lat)["AlarmDescription"], "Runbook: https://runbooks.example.com/triggers#putitem-latency")

	cap := map[string][]string{
		"MonitoringReadCapacity":               {"AWS/DynamoDB ConsumedReadCapacityUnits Sum [TableName]", "AWS/DynamoDB ProvisionedReadCapacityUnits Average [TableName]"},
		"MonitoringWriteCapacity":              {"AWS/DynamoDB ConsumedWriteCapacityUnits Sum [TableName]", "AWS/DynamoDB ProvisionedWriteCapacityUnits Average [TableName]"},
		"MonitoringEventTypeIndexReadCapacity": {"AWS/DynamoDB ConsumedReadCapacityUnits Sum [GlobalSecondaryIndexName=EventTypeIndex,TableName]", "AWS/DynamoDB ProvisionedReadCapacityUnits Average [GlobalSecondaryIndexName=EventTypeIndex,TableName]"},
		"MonitoringStatusIndexWriteCapacity":   {"AWS/DynamoDB ConsumedWriteCapacityUnits Sum [GlobalSecondaryIndexName=StatusIndex,TableName]", "AWS/DynamoDB ProvisionedWriteCapacityUnits Average [GlobalSecondaryIndexName=StatusIndex,TableName]"},
	}
	for prefix, metrics := range cap {
		_, a := one(t, tp, "AWS::CloudWatch::Alarm", prefix)
		s := shapeOfAlarm(t, cdktest.Props(a))
		assert.Equal(t, alarmShape{metrics, "100 * (c / PERIOD(c)) / p", 85, 3, 3, gtOp, "notBreaching"}, s, prefix)
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
					if s == "Operation" || s == "GlobalSecondaryIndexName" {
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
	assert.Equal(t, []string{"## Events table (DynamoDB)", "## Lambda functions", "## API Gateway", "## Delivery queues (SQS)", "## Runtime (embedded metric format)"}, sections)

	lat := func(op string) [2][]string {
		var l []string
		for _, p := range []string{"p50", "p95", "p99"} {
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
		"Read capacity":                                    {{"expr: m/PERIOD(m)"}, nil},
		"Write capacity":                                   {{"expr: m/PERIOD(m)"}, nil},
		"Throttle events (table and each GSI)":             {append(append(throttleMetrics(""), throttleMetrics("EventTypeIndex")...), throttleMetrics("StatusIndex")...), nil},
		"SuccessfulRequestLatency PutItem (ms)":            lat("PutItem"),
		"SuccessfulRequestLatency BatchWriteItem (ms)":     lat("BatchWriteItem"),
		"SuccessfulRequestLatency TransactWriteItems (ms)": lat("TransactWriteItems"),
		"SuccessfulRequestLatency GetItem (ms)":            lat("GetItem"),
		"SuccessfulRequestLatency Query (ms)":              lat("Query"),
		"SuccessfulRequestLatency UpdateItem (ms)":         lat("UpdateItem"),
		"Errors": {
			{"expr: e0 + e1 + e2 + e3 + e4 + e5", metricLine("AWS/DynamoDB", "ConditionalCheckFailedRequests", "Sum", 300, []string{"TableName"})},
			{metricLine("AWS/DynamoDB", "UserErrors", "Sum", 300, nil)},
		},
		"TTL deletions":                          {{metricLine("AWS/DynamoDB", "TimeToLiveDeletedItemCount", "Sum", 300, []string{"TableName"})}, nil},
		"Requests and errors":                    {{metricLine("AWS/ApiGateway", "Count", "Sum", 300, api)}, {metricLine("AWS/ApiGateway", "4XXError", "Sum", 300, api), metricLine("AWS/ApiGateway", "5XXError", "Sum", 300, api)}},
		"Latency (ms)":                           {{metricLine("AWS/ApiGateway", "Latency", "p95", 300, api), metricLine("AWS/ApiGateway", "Latency", "p99", 300, api)}, nil},
		"Integration latency (ms)":               {{metricLine("AWS/ApiGateway", "IntegrationLatency", "p95", 300, api), metricLine("AWS/ApiGateway", "IntegrationLatency", "p99", 300, api)}, nil},
		"Delivery queue depth":                   {{metricLine("AWS/SQS", "ApproximateNumberOfMessagesVisible", "Maximum", 300, []string{"QueueName"})}, nil},
		"Delivery queue: oldest message age (s)": {{metricLine("AWS/SQS", "ApproximateAgeOfOldestMessage", "Maximum", 300, []string{"QueueName"})}, nil},
		"Dead-letter queues":                     {{metricLine("AWS/SQS", "ApproximateNumberOfMessagesVisible", "Maximum", 300, []string{"QueueName"}), metricLine("AWS/SQS", "ApproximateNumberOfMessagesVisible", "Maximum", 300, []string{"QueueName"})}, nil},
		"Events ingested":                        {{metricLine("Triggers/triggers-dev-api", "EventsIngested", "Sum", 300, nil)}, nil},
		"Events rejected by reason":              {{`expr: SEARCH('{Triggers/triggers-dev-api,Reason} MetricName="EventsRejected"', 'Sum', 300)`}, nil},
	}
	for k, v := range fn("API", false) {
		want[k] = v
	}
	for k, v := range fn("Authorizer", false) {
		want[k] = v
	}
	for k, v := range fn("Stream consumer", true) {
		want[k] = v
	}
	assert.Equal(t, keysSorted(want), keysSorted(got), "widget titles")
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
	assert.Equal(t, []string{"expr: m/PERIOD(m)", metricLine("AWS/DynamoDB", "ProvisionedReadCapacityUnits", "Average", 300, []string{"TableName"})}, got["Read capacity"])
	assert.Equal(t, []string{"expr: m/PERIOD(m)", metricLine("AWS/DynamoDB", "ProvisionedWriteCapacityUnits", "Average", 300, []string{"TableName"})}, got["Write capacity"])
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
		"triggers-dev/errors-by-code":             {[]string{"ispresent(error_code)", "count(*) as errors by error_code, status", "sort errors desc"}, 1},
		"triggers-dev/busiest-tenants":            {[]string{"count(*) as requests by tenant", "sort requests desc", "limit 20"}, 1},
		"triggers-dev/one-correlation-id":         {[]string{`correlation_id = "REPLACE-WITH-CORRELATION-ID"`, "sort @timestamp asc"}, 3},
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
