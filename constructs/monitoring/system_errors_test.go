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
	_, props := synthStack(t, stack)

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
}
