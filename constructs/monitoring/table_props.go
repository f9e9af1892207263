package monitoring

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/jsii-runtime-go"

	"github.com/triggers-dev/triggers/constructs/dynamotable"
	"github.com/triggers-dev/triggers/constructs/internal/cdkutil"
)

// TableOperations returns the operations TableMonitoring graphs and alarms
// on by default: SuccessfulRequestLatency p50/p99/average per operation,
// and SystemErrors summed over them. It returns a new slice each call.
func TableOperations() []string { return slices.Clone(tableOperations) }

var tableOperations = []string{"GetItem", "PutItem", "Query", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems"}

// tableLatencyDefaults are the default thresholds (average
// SuccessfulRequestLatency, ms) of the latency alarms. DynamoDB serves
// single-item operations in single-digit milliseconds; queries, batches and
// transactions touch more items.
var tableLatencyDefaults = map[string]float64{
	"GetItem": 10, "PutItem": 15, "UpdateItem": 15, "DeleteItem": 15,
	"Query": 25, "BatchWriteItem": 50, "TransactWriteItems": 50,
}

// tableLatencyOtherDefault is the latency threshold of an operation
// tableLatencyDefaults does not list.
const tableLatencyOtherDefault = 50

// DefaultTableLatencyMs returns the default threshold, in milliseconds, of
// the latency alarm on operation: GetItem 10; PutItem, UpdateItem and
// DeleteItem 15; Query 25; BatchWriteItem, TransactWriteItems and any other
// operation 50.
func DefaultTableLatencyMs(operation string) float64 {
	if v, ok := tableLatencyDefaults[operation]; ok {
		return v
	}
	return tableLatencyOtherDefault
}

// tableKnownOperations are the values of the Operation dimension DynamoDB
// publishes SuccessfulRequestLatency and SystemErrors with.
var tableKnownOperations = map[string]bool{
	"GetItem": true, "PutItem": true, "UpdateItem": true, "DeleteItem": true, "Query": true, "Scan": true,
	"BatchGetItem": true, "BatchWriteItem": true, "TransactGetItems": true, "TransactWriteItems": true,
	"ExecuteStatement": true, "BatchExecuteStatement": true, "ExecuteTransaction": true, "GetRecords": true,
}

// TableThresholds are the thresholds of a table's alarms: TableMonitoring's
// (TableMonitoringProps.Thresholds) and the events table's in
// TriggersMonitoring (TriggersMonitoringProps.EventsTableThresholds, which
// documents its different windows and latency alarms). A zero field takes
// its default. The windows below are TableMonitoring's, in periods of
// TableMonitoringProps.Period (default 1 minute).
type TableThresholds struct {
	// ReadThrottleEvents alarms when ReadThrottleEvents (Sum) of the table,
	// or of one GSI, reaches it in 3 of 5 periods. One alarm for the table
	// and one per GSI.
	//
	// Default: 1.
	ReadThrottleEvents float64
	// WriteThrottleEvents alarms when WriteThrottleEvents (Sum) of the
	// table, or of one GSI, reaches it in 3 of 5 periods. One alarm for the
	// table and one per GSI (a throttled GSI throttles the table's writes).
	//
	// Default: 1.
	WriteThrottleEvents float64
	// SystemErrors alarms when SystemErrors (HTTP 500 from DynamoDB),
	// summed over the monitored operations, reach it in 3 of 5 periods.
	//
	// Default: 1.
	SystemErrors float64
	// LatencyMs maps an operation to the threshold of its latency alarm:
	// average SuccessfulRequestLatency above it, in milliseconds, for 5 of 5
	// periods. One alarm per monitored operation; a key must be one of
	// TableMonitoringProps.Operations.
	//
	// Default: DefaultTableLatencyMs(operation) for each operation.
	LatencyMs map[string]float64
	// ConsumedCapacityPercent alarms (provisioned billing only) when consumed
	// read or write capacity of the table, or of one GSI, stays above this
	// share of its provisioned capacity for 5 of 5 periods: auto scaling is
	// at its maximum or too slow.
	//
	// Default: 80.
	ConsumedCapacityPercent float64
	// ReplicationLatencyMs alarms (one alarm per replica region) when the
	// average ReplicationLatency to that region exceeds it for 5 of 5
	// periods.
	//
	// Default: 10000 (10 s; same-continent replicas typically take 0.5-2.5 s).
	ReplicationLatencyMs float64
}

func (t *TableThresholds) withDefaults(ops []string) TableThresholds {
	out := TableThresholds{
		ReadThrottleEvents: 1, WriteThrottleEvents: 1, SystemErrors: 1,
		ConsumedCapacityPercent: 80, ReplicationLatencyMs: 10000,
		LatencyMs: map[string]float64{},
	}
	for _, op := range ops {
		out.LatencyMs[op] = DefaultTableLatencyMs(op)
	}
	if t == nil {
		return out
	}
	set := func(dst *float64, v float64) {
		if v != 0 {
			*dst = v
		}
	}
	set(&out.ReadThrottleEvents, t.ReadThrottleEvents)
	set(&out.WriteThrottleEvents, t.WriteThrottleEvents)
	set(&out.SystemErrors, t.SystemErrors)
	set(&out.ConsumedCapacityPercent, t.ConsumedCapacityPercent)
	set(&out.ReplicationLatencyMs, t.ReplicationLatencyMs)
	for op, v := range t.LatencyMs {
		if v != 0 {
			out.LatencyMs[op] = v
		}
	}
	return out
}

// TableMonitoringProps configures TableMonitoring.
type TableMonitoringProps struct {
	// Table is the table to monitor, made with dynamotable (or a construct
	// built on it, such as eventstore.EventsTable) or imported with
	// dynamotable.FromTableAttributes. Its GSIs come from its schema.
	// Required.
	Table dynamotable.ITable
	// Billing decides whether provisioned capacity is graphed next to
	// consumed capacity and whether the consumed-capacity alarms are added.
	//
	// Default: the table's own billing when it was made with dynamotable,
	// else on demand (consumed capacity only).
	Billing dynamotable.Billing
	// Dashboard receives the widgets. Give it to put several tables (or a
	// whole service) on one dashboard.
	//
	// Default: a new dashboard, named DashboardName.
	Dashboard awscloudwatch.Dashboard
	// DashboardName names the new dashboard (1-255 characters of
	// [A-Za-z0-9_-]). Not allowed together with Dashboard.
	//
	// Default: a name CloudFormation generates.
	DashboardName string
	// AlarmTopic receives every alarm's ALARM and OK notifications. Not
	// allowed together with AlarmAction.
	//
	// Default: no topic (see AlarmAction).
	AlarmTopic awssns.ITopic
	// AlarmAction is run on every alarm's ALARM and OK transitions (an
	// awscloudwatchactions.SnsAction, an SSM OpsItem action, ...). Not
	// allowed together with AlarmTopic.
	//
	// Default: none; the alarms change state on the dashboard and in the
	// CloudWatch console only. Unlike TriggersMonitoring this construct
	// creates no topic: one per table would scatter notifications.
	AlarmAction awscloudwatch.IAlarmAction
	// Thresholds of the alarms.
	//
	// Default: see TableThresholds.
	Thresholds *TableThresholds
	// Operations whose SuccessfulRequestLatency is graphed and alarmed on
	// and whose SystemErrors are summed. Each must be a DynamoDB operation
	// name as the Operation dimension spells it.
	//
	// Default: TableOperations().
	Operations []string
	// ReplicaRegions are the regions of the table's replicas (global
	// table). Each gets a ReplicationLatency graph line and alarm. Give
	// them for a table made global elsewhere (an import).
	//
	// Default: the table's ReplicaRegions() when it is a dynamotable
	// global table (TableOptions.Replicas), else none (no replication
	// metrics).
	ReplicaRegions []string
	// ContributorInsights adds a Contributor Insights section to the
	// dashboard. Set it when the table has Contributor Insights enabled
	// (dynamotable.TableOptions.ContributorInsights); ITable does not
	// expose that setting. DynamoDB names its rules
	// DynamoDBContributorInsights-{PKC,PKT,SKC,SKT}-<table>-<creation
	// timestamp in ms> (PKC/SKC most accessed partition/partition+sort
	// keys, PKT/SKT most throttled), and the timestamp is not known at
	// synth time: without ContributorInsightsRuleNames the section says
	// how to find them.
	//
	// Default: false.
	ContributorInsights bool
	// ContributorInsightsRuleNames are the table's Contributor Insights
	// rule names (from `aws dynamodb describe-contributor-insights
	// --table-name <table>`); each gets a graph of its top contributor and
	// its number of unique contributors. Giving them implies
	// ContributorInsights.
	//
	// Default: none.
	ContributorInsightsRuleNames []string
	// RunbookURL is the runbook each alarm description links to, with a
	// section anchor appended after '#'.
	//
	// Default: DefaultRunbookURL.
	RunbookURL string
	// Period of every metric and alarm, in whole minutes (DynamoDB
	// publishes per minute).
	//
	// Default: 1 minute.
	Period awscdk.Duration
}

var (
	tableDashboardNameRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,255}$`)
	tableRegionRE        = regexp.MustCompile(`^[a-z]{2}(-[a-z]+)+-[0-9]+$`)
	tableRuleNameRE      = regexp.MustCompile(`^[\x20-\x26\x28-\x7E]{1,128}$`)
)

// ValidateTableMonitoringProps reports every problem with props, each
// naming the bad value and the fix. NewTableMonitoring panics with this
// error. Unresolved string tokens (a dashboard name, a region, a rule
// name) are not checked; thresholds must be literals: a number token (a
// CfnParameter's ValueAsNumber) is refused, since each threshold is written
// into its alarm's description and some are scaled at synth.
func ValidateTableMonitoringProps(p *TableMonitoringProps) error {
	if p == nil || p.Table == nil {
		return errors.New("give props.Table: the dynamotable.ITable to monitor")
	}
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	unresolved := func(s string) bool { return *awscdk.Token_IsUnresolved(jsii.String(s)) }

	ops := p.Operations
	if ops == nil {
		ops = tableOperations
	} else if len(ops) == 0 {
		bad("Operations is empty: leave it nil for the default (%s) or name at least one operation", strings.Join(tableOperations, ", "))
	}
	seen := map[string]bool{}
	for _, op := range ops {
		switch {
		case seen[op]:
			bad("Operations lists %q twice: list each operation once", op)
		case !tableKnownOperations[op]:
			bad("Operations: %q is not a DynamoDB operation with latency metrics: use one of %s", op, strings.Join(tableSortedKeys(tableKnownOperations), ", "))
		}
		seen[op] = true
	}
	errs = append(errs, tableThresholdErrors(p.Thresholds, "Thresholds", seen, "add it to Operations or remove it")...)
	if p.Period != nil && !cdkutil.IsDurationToken(p.Period) {
		s := *p.Period.ToSeconds(&awscdk.TimeConversionOptions{Integral: jsii.Bool(false)})
		if s < 60 || s > 86400 || int64(s)%60 != 0 || s != float64(int64(s)) {
			bad("Period %v seconds is invalid: use whole minutes from 1 minute to 1 day (DynamoDB publishes per minute)", s)
		}
	}
	if p.Billing != "" && p.Billing != dynamotable.OnDemand && p.Billing != dynamotable.Provisioned {
		bad("Billing %q is unknown: use dynamotable.OnDemand or dynamotable.Provisioned", p.Billing)
	}
	if p.Dashboard != nil && p.DashboardName != "" {
		bad("DashboardName %q is given with Dashboard: the widgets go to the given dashboard; drop one of them", p.DashboardName)
	} else if p.DashboardName != "" && !unresolved(p.DashboardName) && !tableDashboardNameRE.MatchString(p.DashboardName) {
		bad("DashboardName %q is invalid: use 1-255 characters of A-Z, a-z, 0-9, '-' and '_'", p.DashboardName)
	}
	if p.AlarmTopic != nil && p.AlarmAction != nil {
		bad("AlarmTopic and AlarmAction are both given: give one (wrap the topic in awscloudwatchactions.NewSnsAction to combine it with other actions elsewhere)")
	}
	seenRegion := map[string]bool{}
	for _, r := range p.ReplicaRegions {
		switch {
		case unresolved(r):
		case seenRegion[r]:
			bad("ReplicaRegions lists %q twice: list each replica region once", r)
		case !tableRegionRE.MatchString(r):
			bad("ReplicaRegions: %q is not a region name: use names like \"eu-west-1\"", r)
		}
		seenRegion[r] = true
	}
	for _, n := range p.ContributorInsightsRuleNames {
		if !unresolved(n) && !tableRuleNameRE.MatchString(n) {
			bad("ContributorInsightsRuleNames: %q is not a rule name: copy the names from `aws dynamodb describe-contributor-insights` (1-128 printable ASCII characters, no quote)", n)
		}
	}
	if p.RunbookURL != "" && strings.Contains(p.RunbookURL, "#") {
		bad("RunbookURL %q has a '#': give the page without an anchor; each alarm appends its own section anchor", p.RunbookURL)
	}
	return errors.Join(errs...)
}

// tableThresholdErrors reports every problem with t, given as the prop
// named field ("Thresholds", "EventsTableThresholds"): negative thresholds,
// a percentage above 100, a latency threshold for an operation not in
// monitored (fix says what to do instead).
func tableThresholdErrors(t *TableThresholds, field string, monitored map[string]bool, fix string) []error {
	if t == nil {
		return nil
	}
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	for _, f := range []struct {
		name string
		v    float64
		max  float64
	}{
		{"ReadThrottleEvents", t.ReadThrottleEvents, 0},
		{"WriteThrottleEvents", t.WriteThrottleEvents, 0},
		{"SystemErrors", t.SystemErrors, 0},
		{"ConsumedCapacityPercent", t.ConsumedCapacityPercent, 100},
		{"ReplicationLatencyMs", t.ReplicationLatencyMs, 0},
	} {
		switch {
		case cdkutil.IsNumberToken(f.v):
			bad("%s.%s is a token: give a literal (%s)", field, f.name, thresholdLiteralWhy)
		case f.v < 0:
			bad("%s.%s %v is negative: give a positive threshold, or 0 for the default", field, f.name, f.v)
		case f.max > 0 && f.v > f.max:
			bad("%s.%s %v is above %v: it is a percentage", field, f.name, f.v, f.max)
		}
	}
	for _, op := range tableSortedKeys(t.LatencyMs) {
		v := t.LatencyMs[op]
		if !monitored[op] {
			bad("%s.LatencyMs has %q, which is not monitored: %s", field, op, fix)
		}
		if cdkutil.IsNumberToken(v) {
			bad("%s.LatencyMs[%q] is a token: give a literal (%s)", field, op, thresholdLiteralWhy)
		} else if v < 0 {
			bad("%s.LatencyMs[%q] %v is negative: give a positive threshold in milliseconds, or 0 for the default", field, op, v)
		}
	}
	return errs
}

// thresholdLiteralWhy says why a threshold must be a literal.
const thresholdLiteralWhy = "thresholds are written into the alarms' descriptions and some are scaled at synth, so a deploy-time value cannot be used"

func tableSortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
