package monitoring_test

import (
	"regexp"
	"testing"

	"github.com/aws/jsii-runtime-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/constructs/dynamotable"
	"github.com/triggers-dev/triggers/constructs/monitoring"
)

// DynamoDB publishes SystemErrors per operation, and only for an operation
// that failed with HTTP 500; CloudWatch metric math gives no datapoint for
// a period in which one term of a sum has none. A sum of the bare
// per-operation metrics therefore had a datapoint only in a period where
// every monitored operation failed (never, for an operation the
// application does not call): one PutItem failing with 500 did not fire
// the alarm. Each term must count as 0 when its operation published
// nothing, so that any one operation's errors reach the threshold.
func TestSystemErrorsAlarmSeesOneOperationsErrors(t *testing.T) {
	stack, _, m := outageStack(t, nil, nil)
	tm := monitoring.NewTableMonitoring(stack, jsii.String("OrdersMonitoring"), &monitoring.TableMonitoringProps{
		Table: dynamotable.NewTable(stack, jsii.String("Orders"), &dynamotable.TableProps{Schema: &ordersSchema}),
	})
	resources, props := synthStack(t, stack)

	for _, tt := range []struct {
		name string
		p    map[string]any
		ops  int
	}{
		{"events table", props(m.Alarm("SystemErrors")), len(monitoring.Operations())},
		{"API-keys table", props(m.Alarm("ApiKeysSystemErrors")), len(monitoring.ApiKeysOperations())},
		{"TableMonitoring", props(tm.Alarm("SystemErrors")), len(monitoring.TableOperations())},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var ids []string
			var expr string
			for _, q := range tt.p["Metrics"].([]any) {
				qm := q.(map[string]any)
				if e, ok := qm["Expression"].(string); ok {
					expr = e
					continue
				}
				ms := qm["MetricStat"].(map[string]any)["Metric"].(map[string]any)
				require.Equal(t, "SystemErrors", ms["MetricName"])
				ids = append(ids, qm["Id"].(string))
			}
			require.Len(t, ids, tt.ops, "one SystemErrors metric per operation")
			for _, id := range ids {
				all := regexp.MustCompile(`\b`+id+`\b`).FindAllStringIndex(expr, -1)
				filled := regexp.MustCompile(`FILL\(`+id+`, 0\)`).FindAllStringIndex(expr, -1)
				assert.NotEmpty(t, all, "%s is summed in %q", id, expr)
				assert.Len(t, filled, len(all), "%s counts as 0 when its operation published nothing: %q", id, expr)
			}
		})
	}

	// The same stack's percentile alarms (the API's p99 latency, the
	// inbox's p95, the functions' p99 duration, the tables' p99 request
	// latency) ignore periods with too few samples, as a sparse metric's
	// percentile is a handful of requests (on a quiet deployment each may
	// be a cold start); the others are left at CloudWatch's default.
	t.Run("percentiles of sparse data", func(t *testing.T) {
		var percentiles []string
		for id, r := range resources {
			if r["Type"] != "AWS::CloudWatch::Alarm" {
				continue
			}
			p := r["Properties"].(map[string]any)
			stat, _ := p["ExtendedStatistic"].(string)
			if ms, ok := p["Metrics"].([]any); ok && len(ms) == 1 {
				// One metric with a label: CDK writes it as a query.
				stat, _ = ms[0].(map[string]any)["MetricStat"].(map[string]any)["Stat"].(string)
			}
			if regexp.MustCompile(`^p[0-9]`).MatchString(stat) {
				percentiles = append(percentiles, id)
				assert.Equal(t, "ignore", p["EvaluateLowSampleCountPercentile"], "%s (%s)", id, stat)
			} else {
				assert.NotContains(t, p, "EvaluateLowSampleCountPercentile", id)
			}
		}
		assert.GreaterOrEqual(t, len(percentiles), 4, "percentile alarms: %v", percentiles)
	})
}
