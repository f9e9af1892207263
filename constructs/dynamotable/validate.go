package dynamotable

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/jsii-runtime-go"

	"github.com/triggers-dev/triggers/constructs/internal/cdkutil"
)

// Limits on props that AWS enforces.
const (
	minTargetUtilization = 20
	maxTargetUtilization = 90
	minRecoveryDays      = 1
	maxRecoveryDays      = 35
	// Every new table and GSI starts warm at these units per second:
	// pre-warming below them does nothing.
	minWarmReadUnits  = 12000
	minWarmWriteUnits = 4000
)

// isToken reports whether v is an unresolved CDK token (a value known only at
// deploy time); such values are not validated at synth.
func isToken(v float64) bool { return cdkutil.IsNumberToken(v) }

// ValidateProps reports every problem with props, each naming the bad value
// and the fix. NewTable panics with this error; call it yourself to check
// props without building anything.
func ValidateProps(props *TableProps) error {
	if props == nil || props.Schema == nil {
		return errors.New("props.Schema is required: pass a table description such as schema.Events()")
	}
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if err := props.Schema.Validate(); err != nil {
		errs = append(errs, err)
	}
	switch props.Billing {
	case "", OnDemand, Provisioned:
	default:
		bad("billing %q is unknown: use dynamotable.OnDemand or dynamotable.Provisioned", props.Billing)
	}
	for _, dim := range []struct {
		name string
		s    *Scaling
	}{{"ReadScaling", props.ReadScaling}, {"WriteScaling", props.WriteScaling}} {
		if dim.s == nil {
			continue
		}
		if props.Billing != Provisioned {
			bad("%s is set but billing is on-demand: set Billing: dynamotable.Provisioned, or remove %s", dim.name, dim.name)
			continue
		}
		s := dim.s.withDefaults()
		if !isToken(s.MinCapacity) && s.MinCapacity < 1 {
			bad("%s.MinCapacity %v is below 1: provisioned capacity is at least 1 unit", dim.name, s.MinCapacity)
		}
		if !isToken(s.MinCapacity) && !isToken(s.MaxCapacity) && s.MinCapacity > s.MaxCapacity {
			bad("%s.MinCapacity %v is greater than MaxCapacity %v: raise MaxCapacity or lower MinCapacity", dim.name, s.MinCapacity, s.MaxCapacity)
		}
		for _, c := range []struct {
			name string
			v    float64
		}{{"MinCapacity", s.MinCapacity}, {"MaxCapacity", s.MaxCapacity}} {
			if !isToken(c.v) && c.v != float64(int64(c.v)) {
				bad("%s.%s %v is not a whole number: capacity units are whole", dim.name, c.name, c.v)
			}
		}
		if t := s.TargetUtilizationPercent; !isToken(t) && (t < minTargetUtilization || t > maxTargetUtilization) {
			bad("%s.TargetUtilizationPercent %v is outside %d-%d: DynamoDB auto scaling accepts targets from %d to %d percent", dim.name, t, minTargetUtilization, maxTargetUtilization, minTargetUtilization, maxTargetUtilization)
		}
	}
	pitr := props.PointInTimeRecovery == nil || *props.PointInTimeRecovery
	if d := props.RecoveryPeriodDays; d != 0 && !isToken(d) {
		switch {
		case !pitr:
			bad("RecoveryPeriodDays %v is set but PointInTimeRecovery is off: turn PITR on or remove RecoveryPeriodDays", d)
		case d < minRecoveryDays || d > maxRecoveryDays || d != float64(int(d)):
			bad("RecoveryPeriodDays %v is outside %d-%d: PITR keeps whole days from %d to %d", d, minRecoveryDays, maxRecoveryDays, minRecoveryDays, maxRecoveryDays)
		}
	}
	ci := props.ContributorInsights != nil && *props.ContributorInsights
	switch props.ContributorInsightsMode {
	case "", awsdynamodb.ContributorInsightsMode_ACCESSED_AND_THROTTLED_KEYS, awsdynamodb.ContributorInsightsMode_THROTTLED_KEYS:
		if props.ContributorInsightsMode != "" && !ci {
			bad("ContributorInsightsMode %q is set but ContributorInsights is off: set ContributorInsights: jsii.Bool(true), or remove ContributorInsightsMode", props.ContributorInsightsMode)
		}
	default:
		bad("ContributorInsightsMode %q is unknown: use awsdynamodb.ContributorInsightsMode_ACCESSED_AND_THROTTLED_KEYS or awsdynamodb.ContributorInsightsMode_THROTTLED_KEYS", props.ContributorInsightsMode)
	}
	if props.ContributorInsightsOnIndexes != nil && *props.ContributorInsightsOnIndexes && !ci {
		bad("ContributorInsightsOnIndexes is set but ContributorInsights is off: set ContributorInsights: jsii.Bool(true), or remove ContributorInsightsOnIndexes")
	}
	errs = append(errs, validateThroughput(&props.TableOptions)...)
	switch props.TableClass {
	case "", awsdynamodb.TableClass_STANDARD, awsdynamodb.TableClass_STANDARD_INFREQUENT_ACCESS:
	default:
		bad("TableClass %q is unknown: use awsdynamodb.TableClass_STANDARD (the default) or awsdynamodb.TableClass_STANDARD_INFREQUENT_ACCESS", props.TableClass)
	}
	if props.ResourcePolicy != nil {
		errs = append(errs, validateResourcePolicy(props.ResourcePolicy)...)
	}
	if props.Backup != nil {
		errs = append(errs, validateBackup(props.Backup)...)
	}
	return errors.Join(errs...)
}

func (s *Scaling) withDefaults() Scaling {
	out := Scaling{MinCapacity: DefaultMinCapacity, MaxCapacity: DefaultMaxCapacity, TargetUtilizationPercent: DefaultTargetUtilizationPercent}
	if s == nil {
		return out
	}
	if s.MinCapacity != 0 {
		out.MinCapacity = s.MinCapacity
	}
	if s.MaxCapacity != 0 {
		out.MaxCapacity = s.MaxCapacity
	}
	if s.TargetUtilizationPercent != 0 {
		out.TargetUtilizationPercent = s.TargetUtilizationPercent
	}
	return out
}

// validateThroughput checks the on-demand maximums and the warm
// throughput.
func validateThroughput(o *TableOptions) []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	whole := func(v float64) bool { return v == float64(int64(v)) }
	for _, m := range []struct {
		name, scaling string
		v             float64
	}{{"MaxReadRequestUnits", "ReadScaling", o.MaxReadRequestUnits}, {"MaxWriteRequestUnits", "WriteScaling", o.MaxWriteRequestUnits}} {
		switch {
		case m.v == 0 || isToken(m.v):
		case o.Billing == Provisioned:
			bad("%s %v is set but billing is provisioned: a provisioned table is capped by %s.MaxCapacity; remove %s, or use on-demand billing", m.name, m.v, m.scaling, m.name)
		case m.v < 1 || !whole(m.v):
			bad("%s %v is not a whole number of at least 1: give the most request units per second the table may use, or leave it 0 for no cap", m.name, m.v)
		}
	}
	w := o.WarmThroughput
	if w == nil {
		return errs
	}
	if w.ReadUnitsPerSecond == 0 && w.WriteUnitsPerSecond == 0 {
		bad("WarmThroughput sets neither ReadUnitsPerSecond nor WriteUnitsPerSecond: give the peak units per second to pre-warm for, or remove WarmThroughput")
	}
	for _, d := range []struct {
		name, max string
		v, min    float64
		maxV      float64
	}{
		{"ReadUnitsPerSecond", "MaxReadRequestUnits", w.ReadUnitsPerSecond, minWarmReadUnits, o.MaxReadRequestUnits},
		{"WriteUnitsPerSecond", "MaxWriteRequestUnits", w.WriteUnitsPerSecond, minWarmWriteUnits, o.MaxWriteRequestUnits},
	} {
		if d.v == 0 || isToken(d.v) {
			continue
		}
		switch {
		case d.v < d.min:
			bad("WarmThroughput.%s %v is below %v, the warm throughput every new table and index starts with: give the peak you expect (at least %v), or leave it 0", d.name, d.v, d.min, d.min)
		case !whole(d.v):
			bad("WarmThroughput.%s %v is not a whole number: warm throughput is in whole units per second", d.name, d.v)
		case d.maxV != 0 && !isToken(d.maxV) && d.v > d.maxV:
			bad("WarmThroughput.%s %v is above %s %v: the table never serves more than its maximum, so the pre-warming is paid for nothing; lower WarmThroughput.%s or raise %s", d.name, d.v, d.max, d.maxV, d.name, d.max)
		}
	}
	return errs
}

// maxResourcePolicyBytes is DynamoDB's limit on a resource policy,
// whitespace included.
const maxResourcePolicyBytes = 20 * 1024

// validateResourcePolicy checks what can be known of a resource policy at
// synth: each statement names principals and only dynamodb: actions, no
// unconditional Allow to every principal, and the size limit. Values that
// are tokens are not checked.
func validateResourcePolicy(doc awsiam.PolicyDocument) []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if *doc.IsEmpty() {
		return []error{errors.New("ResourcePolicy has no statements: add the statements that let other accounts in, or remove ResourcePolicy")}
	}
	raw, err := json.Marshal(doc.ToJSON())
	if err != nil {
		return []error{fmt.Errorf("ResourcePolicy cannot be rendered as JSON (%v): build it with awsiam.NewPolicyDocument and awsiam.NewPolicyStatement", err)}
	}
	if len(raw) > maxResourcePolicyBytes {
		bad("ResourcePolicy is %d bytes, over DynamoDB's limit of %d: merge statements (one statement can list several principals and actions)", len(raw), maxResourcePolicyBytes)
	}
	var parsed struct {
		Statement []map[string]any
	}
	if err := json.Unmarshal(raw, &parsed); err != nil {
		return append(errs, fmt.Errorf("ResourcePolicy is not a policy document (%v): build it with awsiam.NewPolicyDocument and awsiam.NewPolicyStatement", err))
	}
	for i, st := range parsed.Statement {
		name := fmt.Sprintf("%d", i)
		if sid, ok := st["Sid"].(string); ok && sid != "" {
			name = fmt.Sprintf("%q", sid)
		}
		_, hasPrincipal := st["Principal"]
		_, hasNotPrincipal := st["NotPrincipal"]
		if !hasPrincipal && !hasNotPrincipal {
			bad("ResourcePolicy statement %s names no principal: a resource policy says who it lets in; add Principals (awsiam.NewAccountPrincipal, awsiam.NewArnPrincipal)", name)
		}
		actions := policyStrings(st["Action"])
		if len(actions) == 0 && st["NotAction"] == nil {
			bad("ResourcePolicy statement %s has no actions: list the dynamodb: actions it allows or denies", name)
		}
		for _, a := range actions {
			if !isTokenString(a) && !strings.HasPrefix(strings.ToLower(a), "dynamodb:") {
				bad("ResourcePolicy statement %s has action %q: a table's resource policy takes dynamodb: actions only (KMS access is granted on the key)", name, a)
			}
		}
		_, conditional := st["Condition"]
		if st["Effect"] == "Allow" && !conditional && principalIsAnyone(st["Principal"]) {
			bad("ResourcePolicy statement %s allows every principal (\"*\") without a Condition: anyone in any AWS account could use the table; name the principals (awsiam.NewAccountPrincipal, awsiam.NewArnPrincipal), or add a Condition such as aws:PrincipalOrgID", name)
		}
	}
	return errs
}

// principalIsAnyone reports whether a rendered Principal element is "*" or
// has "*" among its AWS principals.
func principalIsAnyone(p any) bool {
	switch v := p.(type) {
	case string:
		return v == "*"
	case map[string]any:
		for _, s := range policyStrings(v["AWS"]) {
			if s == "*" {
				return true
			}
		}
	}
	return false
}

// policyStrings returns a policy element that is a string or a list of
// strings as a list; other values (tokens rendered as objects) are left
// out.
func policyStrings(v any) []string {
	switch x := v.(type) {
	case string:
		return []string{x}
	case []any:
		var out []string
		for _, e := range x {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// isTokenString reports whether s holds an unresolved CDK token.
func isTokenString(s string) bool {
	return *awscdk.Token_IsUnresolved(jsii.String(s))
}
