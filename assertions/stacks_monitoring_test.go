package assertions

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/constructs/monitoring"
	"github.com/triggers-dev/triggers/internal/testkit/cdktest"
	"github.com/triggers-dev/triggers/schema"
	"github.com/triggers-dev/triggers/stacks"
)

// seedMonitored lists, per seed stack, its dashboard name and its tables
// (logical id, schema): what stacks.monitorTables must cover.
var seedMonitored = []struct {
	stack, dashboard string
	tables           map[string]schema.Table
	insights         map[string]bool // tables with a Contributor Insights section
}{
	{"ticketing-dev-data", "ticketing-dev", map[string]schema.Table{
		"Events948F067E": schema.TicketingEvents(), "RegistrationsE002A2BA": schema.TicketingRegistrations(),
		"TicketsB51CEDFD": schema.TicketingTickets(), "Users10139FB0": schema.TicketingUsers(),
	}, nil},
	{"tenant-dev-data", "tenant-dev", map[string]schema.Table{
		"Events948F067E": schema.TenantEvents(false), "TenantApiKeys2C2C5AF5": schema.APIKeys(),
	}, map[string]bool{"Events948F067E": true}},
	{stackTenantTypeIndex, "tenant-dev", map[string]schema.Table{
		"Events948F067E": schema.TenantEvents(true), "TenantApiKeys2C2C5AF5": schema.APIKeys(),
	}, map[string]bool{"Events948F067E": true}},
	{"ferryhook-dev-data", "ferryhook-dev", map[string]schema.Table{
		"Events948F067E": schema.FerryhookEvents(), "Main139A74C6": schema.FerryhookMain(),
	}, nil},
}

// wantTableAlarm is what one TableMonitoring alarm must be.
type wantTableAlarm struct {
	threshold   float64
	cmp         string
	evals, dps  float64
	statistic   string
	anchor      string
	missingData string
}

// expectedTableAlarms returns, by "<metric>/<index or operation>", the
// alarms TableMonitoring makes for an on-demand table of sc with the seed
// stacks' operations and default thresholds.
func expectedTableAlarms(sc schema.Table) map[string]wantTableAlarm {
	want := map[string]wantTableAlarm{
		"ReadThrottleEvents/":  {1, "GreaterThanOrEqualToThreshold", 5, 3, "Sum", monitoring.RunbookTableReadThrottling, "notBreaching"},
		"WriteThrottleEvents/": {1, "GreaterThanOrEqualToThreshold", 5, 3, "Sum", monitoring.RunbookTableWriteThrottling, "notBreaching"},
		"SystemErrors/":        {1, "GreaterThanOrEqualToThreshold", 5, 3, "Sum", monitoring.RunbookTableSystemErrors, "notBreaching"},
	}
	for _, ix := range sc.GlobalIndexes {
		want["ReadThrottleEvents/"+ix.Name] = wantTableAlarm{1, "GreaterThanOrEqualToThreshold", 5, 3, "Sum", monitoring.RunbookIndexReadThrottling, "notBreaching"}
		want["WriteThrottleEvents/"+ix.Name] = wantTableAlarm{1, "GreaterThanOrEqualToThreshold", 5, 3, "Sum", monitoring.RunbookIndexWriteThrottling, "notBreaching"}
	}
	for _, op := range stacks.SeedTableOperations() {
		want["SuccessfulRequestLatency/"+op] = wantTableAlarm{monitoring.DefaultTableLatencyMs(op), "GreaterThanThreshold", 5, 5, "Average", monitoring.RunbookTableLatency, "notBreaching"}
	}
	return want
}

// Every alarm of the seed stacks: one set per table (throttles of the table
// and each GSI, SystemErrors over the monitored operations, latency per
// operation), each with its metric, statistic, threshold, comparison,
// periods, missing-data treatment, runbook anchor and the stack's topic on
// ALARM and OK. No other alarm exists in these stacks.
func TestStacksMonitoringAlarms(t *testing.T) {
	for _, s := range seedMonitored {
		t.Run(s.stack, func(t *testing.T) {
			tp := tmpl(t, s.stack)
			topicID, _ := one(t, tp, "AWS::SNS::Topic", "AlarmTopic")
			topicRef := []any{map[string]any{"Ref": topicID}}

			got := map[string]map[string]bool{} // table -> alarm keys
			for id, r := range cdktest.Resources(tp, "AWS::CloudWatch::Alarm") {
				p := cdktest.Props(r)
				assert.Equal(t, topicRef, p["AlarmActions"], "%s: ALARM goes to the stack's topic", id)
				assert.Equal(t, topicRef, p["OKActions"], "%s: OK goes to the stack's topic", id)

				var table, key, stat string
				metrics, _ := p["Metrics"].([]any)
				expr := ""
				var stats []map[string]any
				for _, m := range metrics {
					mm := m.(map[string]any)
					if e, ok := mm["Expression"].(string); ok {
						expr = e
					} else {
						stats = append(stats, mm["MetricStat"].(map[string]any))
					}
				}
				if len(metrics) == 0 { // a plain metric alarm
					stats = []map[string]any{{"Metric": map[string]any{"Namespace": p["Namespace"], "MetricName": p["MetricName"], "Dimensions": p["Dimensions"]}, "Period": p["Period"], "Stat": p["Statistic"]}}
				}
				require.NotEmpty(t, stats, id)
				var ops []string
				for _, ms := range stats {
					metric := ms["Metric"].(map[string]any)
					assert.Equal(t, "AWS/DynamoDB", metric["Namespace"], id)
					assert.EqualValues(t, 60, ms["Period"], id)
					dims := dimensions(metric["Dimensions"])
					table = refOf(dims["TableName"])
					stat, _ = ms["Stat"].(string)
					extra := ""
					if v, ok := dims["GlobalSecondaryIndexName"]; ok {
						extra = v.(string)
					}
					if v, ok := dims["Operation"]; ok {
						extra = v.(string)
						ops = append(ops, extra)
					}
					key = metric["MetricName"].(string) + "/" + extra
				}
				if expr != "" {
					// SystemErrors summed over the monitored operations.
					assert.Equal(t, "SystemErrors/", strings.SplitAfter(key, "/")[0], id)
					assert.Equal(t, "Sum", stat, id)
					sort.Strings(ops)
					assert.Equal(t, sorted(stacks.SeedTableOperations()), ops, "%s sums SystemErrors over the monitored operations", id)
					var terms []string
					for i := range ops {
						terms = append(terms, fmt.Sprintf("FILL(e%d, 0)", i)) // 0 for an operation without errors
					}
					assert.Equal(t, strings.Join(terms, " + "), expr, id)
					key = "SystemErrors/"
				} else {
					require.Len(t, stats, 1, id)
				}
				sc, ok := s.tables[table]
				if !assert.True(t, ok, "%s: alarm on a table of the stack (got %q)", id, table) {
					continue
				}
				want, ok := expectedTableAlarms(sc)[key]
				if !assert.True(t, ok, "%s: unexpected alarm %s on %s", id, key, table) {
					continue
				}
				if got[table] == nil {
					got[table] = map[string]bool{}
				}
				assert.False(t, got[table][key], "%s: %s on %s twice", id, key, table)
				got[table][key] = true

				assert.EqualValues(t, want.threshold, p["Threshold"], "%s %s threshold", table, key)
				assert.Equal(t, want.cmp, p["ComparisonOperator"], "%s %s", table, key)
				assert.EqualValues(t, want.evals, p["EvaluationPeriods"], "%s %s", table, key)
				assert.EqualValues(t, want.dps, p["DatapointsToAlarm"], "%s %s", table, key)
				assert.Equal(t, want.missingData, p["TreatMissingData"], "%s %s", table, key)
				if want.statistic != "" {
					assert.Equal(t, want.statistic, stat, "%s %s statistic", table, key)
				}
				desc := jsonOf(p["AlarmDescription"])
				assert.Contains(t, desc, "DynamoDB table "+sc.Name+":", "%s %s", table, key)
				assert.Contains(t, desc, "#"+want.anchor, "%s %s links its runbook section", table, key)
			}
			for table, sc := range s.tables {
				want := expectedTableAlarms(sc)
				assert.Len(t, got[table], len(want), "%s (%s): every expected alarm, got %v", table, sc.Name, keys(got[table]))
			}
		})
	}
}

// One dashboard per seed stack, named <system>-<env>, with a section per
// table (and the Contributor Insights section of the tables that have
// them on), and one alarm topic: AWS-managed key, TLS only, output with
// the dashboard name.
func TestStacksMonitoringDashboardsAndTopics(t *testing.T) {
	for _, s := range seedMonitored {
		t.Run(s.stack, func(t *testing.T) {
			tp := tmpl(t, s.stack)
			dashes := cdktest.Resources(tp, "AWS::CloudWatch::Dashboard")
			require.Len(t, dashes, 1, "one dashboard for the whole stack")
			for _, d := range dashes {
				p := cdktest.Props(d)
				assert.Equal(t, s.dashboard, p["DashboardName"])
				body := jsonOf(p["DashboardBody"])
				for id, sc := range s.tables {
					assert.Contains(t, body, `## DynamoDB table `+sc.Name, "section of %s", id)
					assert.Contains(t, body, `Alarms (`+sc.Name+`)`, "alarm status of %s", id)
					assert.Equal(t, s.insights[id], strings.Contains(body, "Contributor Insights ("+sc.Name+")"), "Contributor Insights section of %s", id)
				}
			}

			topicID, topic := one(t, tp, "AWS::SNS::Topic", "AlarmTopic")
			assert.Contains(t, jsonOf(cdktest.Props(topic)["KmsMasterKeyId"]), "alias/aws/sns")
			tls := false
			for _, pol := range cdktest.Resources(tp, "AWS::SNS::TopicPolicy") {
				pp := cdktest.Props(pol)
				if jsonOf(pp["Topics"]) == jsonOf([]any{map[string]any{"Ref": topicID}}) && strings.Contains(jsonOf(pp["PolicyDocument"]), `"aws:SecureTransport":"false"`) {
					tls = true
				}
			}
			assert.True(t, tls, "the topic refuses requests without TLS")

			outputs := tp["Outputs"].(map[string]any)
			assert.Equal(t, map[string]any{"Ref": topicID}, outputs["AlarmTopicArn"].(map[string]any)["Value"])
			assert.Contains(t, outputs, "DashboardName")
		})
	}
}

func dimensions(v any) map[string]any {
	out := map[string]any{}
	for _, d := range v.([]any) {
		dm := d.(map[string]any)
		out[dm["Name"].(string)] = dm["Value"]
	}
	return out
}

func refOf(v any) string {
	if m, ok := v.(map[string]any); ok {
		if r, ok := m["Ref"].(string); ok {
			return r
		}
	}
	return fmt.Sprint(v)
}
