package monitoring

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"

	"github.com/triggers-dev/triggers/constructs/archive"
	"github.com/triggers-dev/triggers/constructs/dynamotable"
	"github.com/triggers-dev/triggers/constructs/internal/cdkutil"
	"github.com/triggers-dev/triggers/contract"
)

// ValidateProps reports every problem with props, each naming the bad value
// and the fix. NewTriggersMonitoring panics with this error. Thresholds
// must be literals: a token (a CfnParameter's ValueAsNumber) is refused
// (thresholdLiteralWhy).
func ValidateProps(p *TriggersMonitoringProps) error {
	if p == nil || (p.EventsTable == nil && p.Api == nil) {
		return errors.New("give props.EventsTable or props.Api: there is nothing to monitor")
	}
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if t := p.Thresholds; t != nil {
		for _, f := range []struct {
			name string
			v    float64
			max  float64
		}{
			{"PutItemLatencyP99Ms", t.PutItemLatencyP99Ms, 0},
			{"ThrottleEvents", t.ThrottleEvents, 0},
			{"SystemErrors", t.SystemErrors, 0},
			{"ConsumedCapacityPercent", t.ConsumedCapacityPercent, 100},
			{"LambdaErrors", t.LambdaErrors, 0},
			{"Api5xxPercent", t.Api5xxPercent, 100},
			{"ApiLatencyP99Ms", t.ApiLatencyP99Ms, 0},
			{"IteratorAgeSeconds", t.IteratorAgeSeconds, 0},
			{"LambdaThrottles", t.LambdaThrottles, 0},
			{"DurationPercentOfTimeout", t.DurationPercentOfTimeout, 100},
			{"ConcurrencyPercent", t.ConcurrencyPercent, 100},
			{"AccountConcurrencyLimit", t.AccountConcurrencyLimit, 0},
			{"Api4xxPercent", t.Api4xxPercent, 100},
			{"DeliveryQueueAgeSeconds", t.DeliveryQueueAgeSeconds, 0},
			{"InboxLatencyP95Ms", t.InboxLatencyP95Ms, 0},
			{"WebhookFailurePercent", t.WebhookFailurePercent, 100},
			{"WebhookFailureMinAttempts", t.WebhookFailureMinAttempts, 0},
			{"ArchiveIteratorAgeSeconds", t.ArchiveIteratorAgeSeconds, 0},
			{"AuthorizerDenialPercent", t.AuthorizerDenialPercent, 100},
			{"AuthorizerDenialMinRequests", t.AuthorizerDenialMinRequests, 0},
			{"WafBlockedRequests", t.WafBlockedRequests, 0},
			{"BackupJobsFailed", t.BackupJobsFailed, 0},
		} {
			switch {
			case cdkutil.IsNumberToken(f.v):
				bad("Thresholds.%s is a token: give a literal (%s)", f.name, thresholdLiteralWhy)
			case f.v < 0:
				bad("Thresholds.%s %v is negative: give a positive threshold, or 0 for the default", f.name, f.v)
			case f.max > 0 && f.v > f.max:
				bad("Thresholds.%s %v is above %v: it is a percentage", f.name, f.v, f.max)
			}
		}
	}
	errs = append(errs, trafficDropErrors(p)...)
	errs = append(errs, eventsTableThresholdErrors(p)...)
	errs = append(errs, apiKeysTableThresholdErrors(p)...)
	if p.Period != nil && !cdkutil.IsDurationToken(p.Period) {
		s := *p.Period.ToSeconds(&awscdk.TimeConversionOptions{Integral: jsii.Bool(false)})
		if s < 60 || s > 86400 || int64(s)%60 != 0 || s != float64(int64(s)) {
			bad("Period %v seconds is invalid: use whole minutes from 1 minute to 1 day (DynamoDB and API Gateway publish per minute)", s)
		}
	}
	if ns := p.MetricsNamespace; ns != "" {
		if *awscdk.Token_IsUnresolved(jsii.String(ns)) {
			bad("MetricsNamespace is a token: give the literal namespace the runtime writes to (it is written into the dashboard's SEARCH expressions at synth), or leave it unset for the Api's")
		} else if err := contract.ValidMetricsNamespace(ns); err != nil {
			bad("MetricsNamespace: %v", err)
		}
	}
	archives := map[string]*archive.ExpiredEventsArchive{"": p.Archive}
	for name, a := range p.MoreArchives {
		switch {
		case !archiveNameRE.MatchString(name):
			bad("MoreArchives name %q is not a name: use letters and digits, starting with a capital (it starts the archive's alarm ids), such as Data", name)
		case a == nil:
			bad("MoreArchives[%q] is nil: give the archive, or remove the name", name)
		case a == p.Archive:
			bad("MoreArchives[%q] is Archive itself: it is monitored once already; remove it", name)
		default:
			archives[name] = a
		}
	}
	for _, name := range slices.Sorted(maps.Keys(archives)) {
		a := archives[name]
		if a == nil || a.MaxRecordAge() == nil || cdkutil.IsDurationToken(a.MaxRecordAge()) {
			continue
		}
		th := p.Thresholds.withDefaults().ArchiveIteratorAgeSeconds
		age := *a.MaxRecordAge().ToSeconds(&awscdk.TimeConversionOptions{Integral: jsii.Bool(false)})
		if th > age/2 {
			bad("Thresholds.ArchiveIteratorAgeSeconds %v is not well below the archive's maximum record age (%v s): the alarm would page with less than half of the mapping's retry window left; use at most %v (default 3600)", th, age, age/2)
		}
	}
	if p.Billing != "" && p.Billing != dynamotable.OnDemand && p.Billing != dynamotable.Provisioned {
		bad("Billing %q is unknown: use dynamotable.OnDemand or dynamotable.Provisioned", p.Billing)
	}
	if n := p.DashboardName; n != "" && !*awscdk.Token_IsUnresolved(jsii.String(n)) {
		query := longestQueryName()
		switch {
		case !tableDashboardNameRE.MatchString(n):
			bad("DashboardName %q is invalid: use 1-255 characters of A-Z, a-z, 0-9, '-' and '_'", n)
		case p.Api != nil && len(n)+1+len(query) > maxQueryNameLen:
			bad("DashboardName %q is %d characters: with Api it starts the saved Logs Insights queries' names (%s/%s is %d), which CloudWatch Logs takes up to %d characters; use at most %d",
				n, len(n), n, query, len(n)+1+len(query), maxQueryNameLen, maxQueryNameLen-1-len(query))
		}
	}
	return errors.Join(errs...)
}

// maxQueryNameLen is the longest name CloudWatch Logs takes for a saved
// query.
const maxQueryNameLen = 255

// longestQueryName is the longest of queryNames (the first in order of
// those as long).
func longestQueryName() string {
	var out string
	for _, n := range slices.Sorted(maps.Values(queryNames)) {
		if len(n) > len(out) {
			out = n
		}
	}
	return out
}

// eventsTableThresholdErrors reports the problems of EventsTableThresholds
// (as TableMonitoring's thresholds, plus: latency only for the events
// table's Operations(), a threshold for any operation but PutItem, no
// replication threshold) and its disagreements with the deprecated table
// fields of Thresholds.
func eventsTableThresholdErrors(p *TriggersMonitoringProps) []error {
	e := p.EventsTableThresholds
	if e == nil {
		return nil
	}
	ops := map[string]bool{}
	for _, op := range operations {
		ops[op] = true
	}
	errs := tableThresholdErrors(e, "EventsTableThresholds", ops, "the events table's operations are "+strings.Join(operations, ", ")+"; remove it")
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	for _, op := range tableSortedKeys(e.LatencyMs) {
		if e.LatencyMs[op] == 0 && op != "PutItem" && ops[op] {
			bad("EventsTableThresholds.LatencyMs[%q] is 0: give the p99 threshold in milliseconds (only PutItem has a default, 20)", op)
		}
	}
	if e.ReplicationLatencyMs != 0 && len(replicaRegionsOf(monitoredEventsTable(p), nil)) == 0 {
		bad("EventsTableThresholds.ReplicationLatencyMs %v is given, but the events table has no replicas: remove it (TriggersMonitoring alarms on ReplicationLatency of an events table built with dynamotable.TableOptions.Replicas; TableMonitoring's ReplicaRegions monitor another global table)", e.ReplicationLatencyMs)
	}
	t := p.Thresholds
	if t == nil {
		return errs
	}
	for _, f := range []struct {
		old, new string
		was, is  float64
	}{
		{"ThrottleEvents", "ReadThrottleEvents", t.ThrottleEvents, e.ReadThrottleEvents},
		{"ThrottleEvents", "WriteThrottleEvents", t.ThrottleEvents, e.WriteThrottleEvents},
		{"SystemErrors", "SystemErrors", t.SystemErrors, e.SystemErrors},
		{"ConsumedCapacityPercent", "ConsumedCapacityPercent", t.ConsumedCapacityPercent, e.ConsumedCapacityPercent},
		{"PutItemLatencyP99Ms", `LatencyMs["PutItem"]`, t.PutItemLatencyP99Ms, e.LatencyMs["PutItem"]},
	} {
		if f.was != 0 && f.is != 0 && f.was != f.is {
			bad("Thresholds.%s %v (deprecated) and EventsTableThresholds.%s %v disagree: drop Thresholds.%s", f.old, f.was, f.new, f.is, f.old)
		}
	}
	return errs
}

// maxTrafficDropStdDevs is the widest anomaly band TrafficDropStdDevs
// takes: beyond it the band's lower edge sits at zero and the alarm
// could never fire.
const maxTrafficDropStdDevs = 10

// trafficDropErrors reports the problems of the traffic-drop alarm's
// band width and window (CloudWatch refuses an alarm whose evaluation
// periods span more than a day).
func trafficDropErrors(p *TriggersMonitoringProps) []error {
	t := p.Thresholds
	if t == nil {
		return nil
	}
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	switch {
	case cdkutil.IsNumberToken(t.TrafficDropStdDevs):
		bad("Thresholds.TrafficDropStdDevs is a token: give a literal (%s)", thresholdLiteralWhy)
	case t.TrafficDropStdDevs < 0:
		bad("Thresholds.TrafficDropStdDevs %v is negative: give the band width in standard deviations (e.g. 2 to 4), or 0 for the default 3", t.TrafficDropStdDevs)
	case t.TrafficDropStdDevs > maxTrafficDropStdDevs:
		bad("Thresholds.TrafficDropStdDevs %v is above %v: so wide a band never has its lower edge above zero, so the alarm could never fire; use 2 to 4 (default 3)", t.TrafficDropStdDevs, maxTrafficDropStdDevs)
	}
	n := t.TrafficDropPeriods
	switch {
	case cdkutil.IsNumberToken(n):
		bad("Thresholds.TrafficDropPeriods is a token: give a literal (%s)", thresholdLiteralWhy)
	case n < 0 || n != float64(int64(n)):
		bad("Thresholds.TrafficDropPeriods %v is not a whole number of periods: give 1 or more, or 0 for the default 3", n)
	case n > 0 && p.Period != nil && !cdkutil.IsDurationToken(p.Period):
		s := *p.Period.ToSeconds(&awscdk.TimeConversionOptions{Integral: jsii.Bool(false)})
		// CloudWatch's limit on an alarm's evaluation range: 1 day for
		// a period under an hour, 7 days from an hour up (PutMetricAlarm).
		switch {
		case s < 3600 && n*s > 86400:
			bad("Thresholds.TrafficDropPeriods %v times the period (%v s) is more than a day, which CloudWatch refuses for a period under an hour: use at most %v", n, s, int64(86400/s))
		case n*s > 604800:
			bad("Thresholds.TrafficDropPeriods %v times the period (%v s) is more than 7 days, which CloudWatch refuses: use at most %v", n, s, int64(604800/s))
		}
	case n > 0 && n*300 > 86400:
		bad("Thresholds.TrafficDropPeriods %v times the period (300 s) is more than a day, which CloudWatch refuses for a period under an hour: use at most 288", n)
	}
	return errs
}

// apiKeysTableThresholdErrors reports the problems of
// ApiKeysTableThresholds (as TableMonitoring's thresholds; latency only
// for ApiKeysOperations(); no replicas).
func apiKeysTableThresholdErrors(p *TriggersMonitoringProps) []error {
	e := p.ApiKeysTableThresholds
	if e == nil {
		return nil
	}
	ops := map[string]bool{}
	for _, op := range apiKeysOperations {
		ops[op] = true
	}
	errs := tableThresholdErrors(e, "ApiKeysTableThresholds", ops, "the runtime calls "+strings.Join(apiKeysOperations, ", ")+" on the API-keys table; remove it")
	for _, op := range tableSortedKeys(e.LatencyMs) {
		if e.LatencyMs[op] == 0 && ops[op] {
			errs = append(errs, fmt.Errorf("ApiKeysTableThresholds.LatencyMs[%q] is 0: give the p99 threshold in milliseconds (the API-keys table has no default latency alarm)", op))
		}
	}
	if e.ReplicationLatencyMs != 0 {
		errs = append(errs, fmt.Errorf("ApiKeysTableThresholds.ReplicationLatencyMs %v is given, but TriggersMonitoring monitors no replicas: remove it", e.ReplicationLatencyMs))
	}
	return errs
}

// monitoredEventsTable is EventsTable, else the Api's, else nil.
func monitoredEventsTable(p *TriggersMonitoringProps) dynamotable.ITable {
	if p.EventsTable != nil {
		return p.EventsTable
	}
	if p.Api != nil {
		return p.Api.EventsTable()
	}
	return nil
}

// archiveNameRE is a MoreArchives name: it starts alarm ids.
var archiveNameRE = regexp.MustCompile(`^[A-Z][A-Za-z0-9]{0,31}$`)
