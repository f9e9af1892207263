package monitoring_test

import (
	"encoding/json"
	"sort"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/constructs/dynamotable"
	"github.com/triggers-dev/triggers/constructs/eventstore"
	"github.com/triggers-dev/triggers/constructs/monitoring"
)

// synthStack synthesizes stack once and returns its resources by logical
// id and a function from a construct to its resource's properties.
func synthStack(t *testing.T, stack awscdk.Stack) (map[string]map[string]any, func(constructs.IConstruct) map[string]any) {
	t.Helper()
	resources := map[string]map[string]any{}
	for id, r := range (*assertions.Template_FromStack(stack, nil).ToJSON())["Resources"].(map[string]any) {
		resources[id] = r.(map[string]any)
	}
	return resources, func(c constructs.IConstruct) map[string]any {
		id := *stack.GetLogicalId(c.Node().DefaultChild().(awscdk.CfnElement))
		require.Contains(t, resources, id)
		return resources[id]["Properties"].(map[string]any)
	}
}

// dashboardWidgets parses a dashboard's body (tokens rendered as JSON with
// single quotes) into its widgets, positions left out.
func dashboardWidgets(t *testing.T, props map[string]any) []map[string]any {
	t.Helper()
	var b strings.Builder
	for _, part := range props["DashboardBody"].(map[string]any)["Fn::Join"].([]any)[1].([]any) {
		if s, ok := part.(string); ok {
			b.WriteString(s)
		} else {
			j, _ := json.Marshal(part)
			b.WriteString(strings.ReplaceAll(string(j), `"`, `'`))
		}
	}
	var body struct {
		Widgets []map[string]any `json:"widgets"`
	}
	require.NoError(t, json.Unmarshal([]byte(b.String()), &body), "dashboard body is JSON")
	for _, w := range body.Widgets {
		delete(w, "x")
		delete(w, "y")
	}
	return body.Widgets
}

func alarmIDs(alarms map[string]awscloudwatch.Alarm) []string {
	ids := make([]string, 0, len(alarms))
	for id := range alarms {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// The events table's section and alarms in TriggersMonitoring are
// TableMonitoring's: for the same table, operations and period, the same
// widgets (identical, heading and alarm status aside) and the same alarm
// ids, metrics, thresholds and runbook sections. Only the windows, the
// latency alarms (p99 of PutItem rather than the average of every
// operation) and the actions differ.
func TestEventsTableMonitoredAsAnyTable(t *testing.T) {
	stack := awscdk.NewStack(awscdk.NewApp(nil), jsii.String("S"), nil)
	events := eventstore.NewEventsTable(stack, jsii.String("Events"), &eventstore.EventsTableProps{
		TableOptions: dynamotable.TableOptions{Billing: dynamotable.Provisioned},
	})
	minute := awscdk.Duration_Minutes(jsii.Number(1))
	svc := monitoring.NewTriggersMonitoring(stack, jsii.String("Monitoring"), &monitoring.TriggersMonitoringProps{
		EventsTable: events, Period: minute,
	})
	tbl := monitoring.NewTableMonitoring(stack, jsii.String("EventsMonitoring"), &monitoring.TableMonitoringProps{
		Table: events, Operations: monitoring.Operations(), Period: minute,
	})
	_, props := synthStack(t, stack)

	var want []string
	for _, id := range alarmIDs(tbl.Alarms) {
		if !strings.HasSuffix(id, "Latency") || id == "PutItemLatency" {
			want = append(want, id)
		}
	}
	assert.Equal(t, want, alarmIDs(svc.Alarms), "TableMonitoring's alarms, latency of PutItem only")
	assert.Len(t, want, 2+4+1+1+2+4, "throttles of the table and 2 GSIs, PutItem latency, system errors, capacity of the table and 2 GSIs")

	anchor := func(p map[string]any) string {
		d := p["AlarmDescription"].(string)
		return d[strings.LastIndex(d, "#")+1:]
	}
	for _, id := range want {
		t.Run(id, func(t *testing.T) {
			s, a := props(svc.Alarm(id)), props(tbl.Alarm(id))
			assert.Equal(t, anchor(a), anchor(s), "one runbook section")
			assert.True(t, strings.HasPrefix(s["AlarmDescription"].(string), "DynamoDB table events: "), s["AlarmDescription"])
			assert.Equal(t, a["ComparisonOperator"], s["ComparisonOperator"])
			assert.Equal(t, a["TreatMissingData"], s["TreatMissingData"])
			assert.NotContains(t, s, "AlarmActions", "the composite alarm notifies")
			if id == "PutItemLatency" {
				assert.Equal(t, 20.0, s["Threshold"], "seed 001's p99 target")
				assert.Equal(t, "p99", s["Metrics"].([]any)[0].(map[string]any)["MetricStat"].(map[string]any)["Stat"])
				assert.Equal(t, "Average", a["Metrics"].([]any)[0].(map[string]any)["MetricStat"].(map[string]any)["Stat"])
				return
			}
			assert.Equal(t, a["Threshold"], s["Threshold"], "same default")
			assert.Equal(t, a["Metrics"], s["Metrics"], "same metrics")
			switch {
			case strings.HasSuffix(id, "ThrottleEvents") || id == "SystemErrors":
				assert.Equal(t, []any{1.0, 1.0}, []any{s["DatapointsToAlarm"], s["EvaluationPeriods"]}, "any period (seed 001: any throttling)")
				assert.Equal(t, []any{3.0, 5.0}, []any{a["DatapointsToAlarm"], a["EvaluationPeriods"]})
			default: // capacity
				assert.Equal(t, []any{3.0, 3.0}, []any{s["DatapointsToAlarm"], s["EvaluationPeriods"]})
				assert.Equal(t, []any{5.0, 5.0}, []any{a["DatapointsToAlarm"], a["EvaluationPeriods"]})
			}
		})
	}

	// The widgets: TriggersMonitoring's dashboard starts with the table's
	// section, then its alarm row; TableMonitoring's ends with its alarm
	// status.
	sw, tw := dashboardWidgets(t, props(svc.Dashboard)), dashboardWidgets(t, props(tbl.Dashboard))
	require.Greater(t, len(tw), 2)
	section := tw[1 : len(tw)-1]
	require.Greater(t, len(sw), len(section))
	assert.Equal(t, "## Events table (DynamoDB)", sw[0]["properties"].(map[string]any)["markdown"])
	assert.Equal(t, "## DynamoDB table events", tw[0]["properties"].(map[string]any)["markdown"])
	assert.Equal(t, section, sw[1:1+len(section)], "identical widgets")
	assert.Equal(t, "## Alarms", sw[1+len(section)]["properties"].(map[string]any)["markdown"])
	var titles []string
	for _, w := range section {
		titles = append(titles, w["properties"].(map[string]any)["title"].(string))
	}
	assert.Equal(t, []string{
		"Capacity (table)", "Capacity (GSI EventTypeIndex)", "Capacity (GSI StatusIndex)", "Throttle events (table and each GSI)",
		"SuccessfulRequestLatency PutItem (ms)", "SuccessfulRequestLatency TransactWriteItems (ms)",
		"SuccessfulRequestLatency GetItem (ms)", "SuccessfulRequestLatency Query (ms)", "SuccessfulRequestLatency UpdateItem (ms)",
		"SuccessfulRequestLatency BatchGetItem (ms)", "SuccessfulRequestLatency DeleteItem (ms)",
		"Errors", "TTL deletions (attribute ttl)",
	}, titles)
}

// The deprecated table fields of Thresholds make the same alarms as
// EventsTableThresholds; a latency threshold for another operation adds
// its p99 alarm.
func TestEventsTableThresholds(t *testing.T) {
	var composite string // the table's composite alarm of "Current", as JSON
	alarms := func(name string, p monitoring.TriggersMonitoringProps) map[string]map[string]any {
		stack := awscdk.NewStack(awscdk.NewApp(nil), jsii.String(name), nil)
		p.EventsTable = eventstore.NewEventsTable(stack, jsii.String("Events"), &eventstore.EventsTableProps{
			TableOptions: dynamotable.TableOptions{Billing: dynamotable.Provisioned},
		})
		m := monitoring.NewTriggersMonitoring(stack, jsii.String("Monitoring"), &p)
		_, props := synthStack(t, stack)
		out := map[string]map[string]any{}
		for id, a := range m.Alarms {
			out[id] = props(a)
		}
		composite = jsonOf(props(m.Composite(monitoring.ServiceTable))["AlarmRule"])
		return out
	}
	old := alarms("Deprecated", monitoring.TriggersMonitoringProps{
		Thresholds: &monitoring.Thresholds{ThrottleEvents: 3, SystemErrors: 2, ConsumedCapacityPercent: 70, PutItemLatencyP99Ms: 25},
	})
	cur := alarms("Current", monitoring.TriggersMonitoringProps{
		EventsTableThresholds: &monitoring.TableThresholds{
			ReadThrottleEvents: 3, WriteThrottleEvents: 3, SystemErrors: 2, ConsumedCapacityPercent: 70,
			LatencyMs: map[string]float64{"PutItem": 25, "Query": 40},
		},
	})
	for id, want := range map[string]float64{
		"ReadThrottleEvents": 3, "WriteThrottleEvents": 3, "StatusIndexReadThrottleEvents": 3, "EventTypeIndexWriteThrottleEvents": 3,
		"SystemErrors": 2, "ReadCapacity": 70, "StatusIndexWriteCapacity": 70, "PutItemLatency": 25,
	} {
		require.Contains(t, old, id)
		require.Contains(t, cur, id)
		assert.Equal(t, want, old[id]["Threshold"], "deprecated: %s", id)
		assert.Equal(t, want, cur[id]["Threshold"], "current: %s", id)
	}
	assert.NotContains(t, old, "QueryLatency")
	require.Contains(t, cur, "QueryLatency")
	q := cur["QueryLatency"]
	assert.Equal(t, 40.0, q["Threshold"])
	stat := q["Metrics"].([]any)[0].(map[string]any)["MetricStat"].(map[string]any)
	assert.Equal(t, "p99", stat["Stat"])
	assert.Contains(t, q["AlarmDescription"], "#"+monitoring.RunbookTableLatency)
	assert.Contains(t, composite, "MonitoringQueryLatency", "a member of the table's composite alarm")
	assert.Len(t, cur, len(old)+1)
}
