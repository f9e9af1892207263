package dynamotable

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsbackup"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"

	"github.com/triggers-dev/triggers/constructs/internal/cdkutil"
)

// BackupOptions puts the table in an AWS Backup plan: snapshots on a
// schedule, each kept for its rule's retention, in a backup vault. It adds
// to point-in-time recovery (at most 35 days back) backups kept longer,
// in a vault with its own access policy and lifecycle.
type BackupOptions struct {
	// Rules are the plan's rules: when to back up and how long to keep
	// each backup. An empty, non-nil slice is an error.
	//
	// Default: DefaultBackupRules(): daily at 05:00 UTC kept 35 days, and
	// monthly on the 1st at 05:00 UTC kept 365 days.
	Rules []BackupRule
	// Vault stores the backups. Give one vault to several tables (a stack's
	// tables, for example) to keep their backups in one place.
	//
	// Default: a new vault (child "Backup/Vault" of the table), encrypted
	// with the AWS-managed key for AWS Backup (aws/backup), RETAIN on
	// removal.
	Vault awsbackup.IBackupVault
	// Disabled leaves the table out of any plan, as a nil Backup does. It
	// turns off the plan of stacks that add one by default
	// (stacks.NewTriggersDataStack's events table, NewTicketingStack).
	//
	// Default: false.
	Disabled bool
}

// BackupRule is one rule of a backup plan: a schedule and a retention.
type BackupRule struct {
	// Name names the rule in the plan: 1-50 characters of A-Z, a-z, 0-9,
	// '-', '_' and '.', unique in the plan.
	//
	// Default: "Rule<n>", n being the rule's position from 1.
	Name string
	// Schedule is when a backup starts: a cron schedule in UTC
	// (awsevents.Schedule_Cron), at most once an hour. AWS Backup takes no
	// rate() expressions. Required.
	//
	// Default: none (required).
	Schedule awsevents.Schedule
	// DeleteAfter is how long each backup is kept: whole days, at least 1
	// day and at least the time between two runs of Schedule (else there
	// are times with no backup). Required: a backup kept forever costs
	// forever.
	//
	// Default: none (required).
	DeleteAfter awscdk.Duration
	// MoveToColdStorageAfter moves each backup to cold storage after this
	// long. AWS Backup keeps a backup in cold storage at least 90 days, so
	// DeleteAfter must be at least this plus 90 days. DynamoDB backups move
	// to cold storage only when the account has opted in to AWS Backup's
	// advanced DynamoDB backup features.
	//
	// Default: never (warm storage for the whole retention).
	MoveToColdStorageAfter awscdk.Duration
}

// ColdStorageMinimumDays is how long AWS Backup keeps a backup in cold
// storage at the least.
const ColdStorageMinimumDays = 90

// DefaultBackupRules are the rules of a backup plan when
// BackupOptions.Rules is nil: daily at 05:00 UTC kept 35 days (as long as
// PITR reaches back), and monthly on the 1st at 05:00 UTC kept 365 days.
// On the 1st both rules are due at once; AWS Backup then takes one backup,
// kept for the longer retention.
func DefaultBackupRules() []BackupRule {
	return []BackupRule{
		DailyBackupRule(awscdk.Duration_Days(jsii.Number(35))),
		MonthlyBackupRule(awscdk.Duration_Days(jsii.Number(365))),
	}
}

// DailyBackupRule is a rule named "Daily": every day at 05:00 UTC, each
// backup kept for keep.
func DailyBackupRule(keep awscdk.Duration) BackupRule {
	return BackupRule{Name: "Daily", DeleteAfter: keep,
		Schedule: awsevents.Schedule_Cron(&awsevents.CronOptions{Minute: jsii.String("0"), Hour: jsii.String("5")})}
}

// WeeklyBackupRule is a rule named "Weekly": every Sunday at 05:00 UTC,
// each backup kept for keep (seed 002: weekly, kept 35 days).
func WeeklyBackupRule(keep awscdk.Duration) BackupRule {
	return BackupRule{Name: "Weekly", DeleteAfter: keep,
		Schedule: awsevents.Schedule_Cron(&awsevents.CronOptions{Minute: jsii.String("0"), Hour: jsii.String("5"), WeekDay: jsii.String("SUN")})}
}

// MonthlyBackupRule is a rule named "Monthly": the 1st of every month at
// 05:00 UTC, each backup kept for keep.
func MonthlyBackupRule(keep awscdk.Duration) BackupRule {
	return BackupRule{Name: "Monthly", DeleteAfter: keep,
		Schedule: awsevents.Schedule_Cron(&awsevents.CronOptions{Minute: jsii.String("0"), Hour: jsii.String("5"), Day: jsii.String("1")})}
}

// BackupActions returns what the backup role may do on the table
// (dynamodb:StartAwsBackupJob for accounts with AWS Backup's advanced
// DynamoDB features, dynamodb:CreateBackup for the others). It returns a
// new slice each call.
func BackupActions() []string { return slices.Clone(backupActions) }

var backupActions = []string{"dynamodb:CreateBackup", "dynamodb:DescribeTable", "dynamodb:ListTagsOfResource", "dynamodb:StartAwsBackupJob"}

// Backup is the AWS Backup plan of one table (child "Backup" of the table):
// the vault, the plan with its rules, the selection of the table and the
// role AWS Backup assumes for it.
type Backup struct {
	constructs.Construct
	// Plan is the backup plan (child "Plan").
	Plan awsbackup.BackupPlan
	// Vault stores the backups: the one given in BackupOptions.Vault, or
	// the one made (child "Vault").
	Vault awsbackup.IBackupVault
	// Selection puts the table in the plan (child "Plan/Selection").
	Selection awsbackup.BackupSelection
	// Role is what AWS Backup assumes to back up the table (child "Role"):
	// BackupActions() on the table only, the backups' own describe and
	// delete, the vault's copy-in, and the table's customer-managed key if
	// any. No AWS managed policy.
	Role awsiam.Role
}

// BackupPlanArn returns the plan's ARN.
func (b *Backup) BackupPlanArn() *string { return b.Plan.BackupPlanArn() }

// BackupVaultArn returns the vault's ARN.
func (b *Backup) BackupVaultArn() *string { return b.Vault.BackupVaultArn() }

// backups maps each table (its L2 resource) to its Backup.
var backups sync.Map

// BackupOf returns the backup plan NewTable made for t, or nil when t has
// none (no Backup prop, or a table imported with FromTableAttributes).
func BackupOf(t ITable) *Backup {
	if t == nil || t.Resource() == nil {
		return nil
	}
	if b, ok := backups.Load(t.Resource()); ok {
		return b.(*Backup)
	}
	return nil
}

// Backup returns the table's backup plan, or nil (see BackupOf).
func (t *Table) Backup() *Backup { return BackupOf(t) }

func buildBackup(scope constructs.Construct, res awsdynamodb.ITable, key awskms.IKey, opts *BackupOptions) *Backup {
	b := &Backup{}
	constructs.NewConstruct_Override(b, scope, jsii.String("Backup"))
	b.Vault = opts.Vault
	if b.Vault == nil {
		// No EncryptionKey: AWS Backup encrypts with its AWS-managed key.
		b.Vault = awsbackup.NewBackupVault(b, jsii.String("Vault"), &awsbackup.BackupVaultProps{
			RemovalPolicy: awscdk.RemovalPolicy_RETAIN,
		})
	}
	rules := opts.Rules
	if rules == nil {
		rules = DefaultBackupRules()
	}
	planRules := make([]awsbackup.BackupPlanRule, 0, len(rules))
	for i, r := range rules {
		if r.MoveToColdStorageAfter != nil {
			awscdk.Annotations_Of(b).AddWarningV2(jsii.String("triggers:backup-cold-storage"), jsii.String(fmt.Sprintf("backup rule %s moves DynamoDB backups to cold storage: AWS Backup does so only when the account has opted in to its advanced DynamoDB backup features (AWS Backup console > Settings); otherwise the backups stay in warm storage", r.name(i))))
		}
		planRules = append(planRules, awsbackup.NewBackupPlanRule(&awsbackup.BackupPlanRuleProps{
			RuleName:               jsii.String(r.name(i)),
			ScheduleExpression:     r.Schedule,
			DeleteAfter:            r.DeleteAfter,
			MoveToColdStorageAfter: r.MoveToColdStorageAfter,
		}))
	}
	b.Plan = awsbackup.NewBackupPlan(b, jsii.String("Plan"), &awsbackup.BackupPlanProps{
		BackupVault:     b.Vault,
		BackupPlanRules: &planRules,
	})
	// A plan name unique in the account, as a generated physical name
	// would be; the construct id "Plan" would repeat for every table.
	b.Plan.Node().DefaultChild().(awsbackup.CfnBackupPlan).AddPropertyOverride(
		jsii.String("BackupPlan.BackupPlanName"),
		awscdk.Names_UniqueResourceName(b.Plan, &awscdk.UniqueResourceNameOptions{MaxLength: jsii.Number(50), AllowedSpecialCharacters: jsii.String("-_.")}))

	b.Role = awsiam.NewRole(b, jsii.String("Role"), &awsiam.RoleProps{
		AssumedBy:   awsiam.NewServicePrincipal(jsii.String("backup.amazonaws.com"), nil),
		Description: jsii.String("AWS Backup backs up one DynamoDB table with this role"),
	})
	b.Role.AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings(backupActions...),
		Resources: jsii.Strings(*res.TableArn()),
	}))
	backupArns := *res.TableArn() + "/backup/*"
	b.Role.AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings("dynamodb:DeleteBackup", "dynamodb:DescribeBackup"),
		Resources: jsii.Strings(backupArns),
	}))
	b.Role.AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings("backup:CopyIntoBackupVault", "backup:DescribeBackupVault"),
		Resources: jsii.Strings(*b.Vault.BackupVaultArn()),
	}))
	if key != nil {
		key.Grant(b.Role, jsii.String("kms:CreateGrant"), jsii.String("kms:Decrypt"), jsii.String("kms:DescribeKey"), jsii.String("kms:GenerateDataKey"))
	}
	cdkutil.Suppress(b.Role, "AwsSolutions-IAM5",
		"DynamoDB names each backup of a table <table ARN>/backup/<id>, unknown before it exists: AWS Backup describes and deletes (at the end of retention) this table's backups only",
		cdknag.RegexAppliesTo{Regex: jsii.String(`/^Resource::<[A-Za-z0-9]+\.Arn>\/backup\/\*$/`)})

	b.Selection = b.Plan.AddSelection(jsii.String("Selection"), &awsbackup.BackupSelectionOptions{
		Resources:                  &[]awsbackup.BackupResource{awsbackup.BackupResource_FromDynamoDbTable(res)},
		Role:                       b.Role,
		DisableDefaultBackupPolicy: jsii.Bool(true),
	})
	backups.Store(awsdynamodb.ITable(res), b)
	return b
}

func (r BackupRule) name(i int) string {
	if r.Name != "" {
		return r.Name
	}
	return "Rule" + strconv.Itoa(i+1)
}

var backupRuleNameRE = regexp.MustCompile(`^[A-Za-z0-9\-_.]{1,50}$`)

// validateBackup reports every problem of opts.
func validateBackup(opts *BackupOptions) []error {
	if opts.Disabled {
		return nil
	}
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if opts.Rules != nil && len(opts.Rules) == 0 {
		bad("Backup.Rules is empty: leave it nil for dynamotable.DefaultBackupRules() or give at least one rule")
	}
	names := map[string]bool{}
	for i, r := range opts.Rules {
		name := r.name(i)
		where := fmt.Sprintf("Backup.Rules[%d] (%s)", i, name)
		if !backupRuleNameRE.MatchString(name) {
			bad("%s: name %q is invalid: use 1-50 characters of A-Z, a-z, 0-9, '-', '_' and '.'", where, name)
		} else if names[name] {
			bad("%s: name %q is used twice: give each rule its own name", where, name)
		}
		names[name] = true

		var interval *cronInterval
		if r.Schedule == nil {
			bad("%s: Schedule is required: give a cron schedule such as awsevents.Schedule_Cron(&awsevents.CronOptions{Minute: jsii.String(\"0\"), Hour: jsii.String(\"5\")})", where)
		} else if expr := *r.Schedule.ExpressionString(); !*awscdk.Token_IsUnresolved(jsii.String(expr)) {
			iv, err := parseBackupCron(expr)
			if err != nil {
				bad("%s: schedule %q %v", where, expr, err)
			} else {
				interval = &iv
			}
		}

		del, delOK := wholeDays(r.DeleteAfter)
		switch {
		case r.DeleteAfter == nil:
			bad("%s: DeleteAfter is required: give how long to keep each backup, such as awscdk.Duration_Days(jsii.Number(35)) (a backup kept forever costs forever)", where)
		case !delOK:
		case del < 1 || del != float64(int64(del)):
			bad("%s: DeleteAfter %s is invalid: AWS Backup keeps backups for whole days, at least 1", where, human(r.DeleteAfter))
		case interval != nil && del < interval.days:
			bad("%s: DeleteAfter %s is shorter than the time between two backups of its schedule (%s, up to %v days apart): there would be times with no backup to restore; keep backups at least %v days or back up more often", where, human(r.DeleteAfter), interval.desc, interval.days, interval.days)
		}
		if r.MoveToColdStorageAfter != nil {
			cold, coldOK := wholeDays(r.MoveToColdStorageAfter)
			switch {
			case !coldOK:
			case cold < 1 || cold != float64(int64(cold)):
				bad("%s: MoveToColdStorageAfter %s is invalid: give whole days, at least 1", where, human(r.MoveToColdStorageAfter))
			case delOK && r.DeleteAfter != nil && del < cold+ColdStorageMinimumDays:
				bad("%s: DeleteAfter %s is less than %d days after MoveToColdStorageAfter %s: AWS Backup keeps a backup in cold storage at least %d days; set DeleteAfter to at least %v days or remove MoveToColdStorageAfter", where, human(r.DeleteAfter), ColdStorageMinimumDays, human(r.MoveToColdStorageAfter), ColdStorageMinimumDays, cold+ColdStorageMinimumDays)
			}
		}
	}
	return errs
}

// wholeDays returns d in days; ok is false for nil or unresolved durations
// (not checked at synth).
func wholeDays(d awscdk.Duration) (days float64, ok bool) {
	if d == nil || *d.IsUnresolved() {
		return 0, false
	}
	return *d.ToDays(&awscdk.TimeConversionOptions{Integral: jsii.Bool(false)}), true
}

func human(d awscdk.Duration) string { return *d.ToHumanString() }

// cronInterval is the longest time between two runs of a schedule.
type cronInterval struct {
	days float64
	desc string
}

var weekdayNames = map[string]int{"SUN": 1, "MON": 2, "TUE": 3, "WED": 4, "THU": 5, "FRI": 6, "SAT": 7}

var monthNames = map[string]int{"JAN": 1, "FEB": 2, "MAR": 3, "APR": 4, "MAY": 5, "JUN": 6, "JUL": 7, "AUG": 8, "SEP": 9, "OCT": 10, "NOV": 11, "DEC": 12}

// parseBackupCron checks an AWS Backup schedule, cron(minutes hours
// day-of-month month day-of-week year) in UTC, and returns the longest
// time between two of its runs. The error completes the sentence
// "schedule <expr> ...".
func parseBackupCron(expr string) (cronInterval, error) {
	inner, ok := strings.CutPrefix(expr, "cron(")
	if !ok || !strings.HasSuffix(inner, ")") {
		return cronInterval{}, fmt.Errorf("is not a cron expression: AWS Backup schedules are cron(minutes hours day-of-month month day-of-week year) in UTC (rate() is not accepted); use awsevents.Schedule_Cron")
	}
	f := strings.Fields(strings.TrimSuffix(inner, ")"))
	if len(f) != 6 {
		return cronInterval{}, fmt.Errorf("has %d fields: AWS Backup schedules have 6 (minutes hours day-of-month month day-of-week year)", len(f))
	}
	minute, hour, dom, month, dow := f[0], f[1], f[2], f[3], f[4]
	if (dom == "?") == (dow == "?") {
		return cronInterval{}, fmt.Errorf("sets both day-of-month %q and day-of-week %q: one of them must be '?'", dom, dow)
	}
	if _, err := cronValues(minute, 0, 59, nil); err != nil {
		return cronInterval{}, fmt.Errorf("has an invalid minutes field: %v", err)
	}
	if mins, _ := cronValues(minute, 0, 59, nil); len(mins) != 1 {
		return cronInterval{}, fmt.Errorf("runs more than once an hour (minutes %q): AWS Backup runs a rule at most once an hour; give one minute", minute)
	}
	hours, err := cronValues(hour, 0, 23, nil)
	if err != nil {
		return cronInterval{}, fmt.Errorf("has an invalid hours field: %v", err)
	}
	months, err := cronValues(month, 1, 12, monthNames)
	if err != nil {
		return cronInterval{}, fmt.Errorf("has an invalid month field: %v", err)
	}
	// Longest gap, in days, between run days; then refine by hours.
	var gapDays float64
	var desc string
	switch {
	case len(months) < 12:
		gapDays = float64(cyclicGap(months, 12)) * 31
		desc = "some months only"
		if len(months) == 1 {
			desc = "yearly"
		}
	case dom != "?" && dom != "*":
		if strings.ContainsAny(dom, "LW") {
			gapDays, desc = 31, "monthly"
			break
		}
		days, err := cronValues(dom, 1, 31, nil)
		if err != nil {
			return cronInterval{}, fmt.Errorf("has an invalid day-of-month field: %v", err)
		}
		// Days 29-31 are skipped in shorter months: count from the last
		// day every month has.
		last := days[len(days)-1]
		gapDays = float64(cyclicGap(days, 31))
		if last > 28 {
			gapDays += float64(last - 28)
		}
		desc = "monthly"
		if len(days) > 1 {
			desc = "some days of the month"
		}
	case dow != "?" && dow != "*":
		if strings.ContainsAny(dow, "L#") {
			gapDays, desc = 35, "monthly"
			break
		}
		days, err := cronValues(dow, 1, 7, weekdayNames)
		if err != nil {
			return cronInterval{}, fmt.Errorf("has an invalid day-of-week field: %v", err)
		}
		gapDays = float64(cyclicGap(days, 7))
		desc = "weekly"
		if len(days) > 1 {
			desc = "some days of the week"
		}
	default:
		gapDays, desc = 1, "daily"
	}
	if gapDays == 1 && len(hours) > 1 {
		return cronInterval{days: float64(cyclicGap(hours, 24)) / 24, desc: "several times a day"}, nil
	}
	return cronInterval{days: gapDays, desc: desc}, nil
}

// cronValues expands one cron field (*, n, a-b, a/b, a-b/c, lists, names)
// into its sorted values.
func cronValues(field string, lo, hi int, names map[string]int) ([]int, error) {
	num := func(s string) (int, error) {
		if v, ok := names[strings.ToUpper(s)]; ok {
			return v, nil
		}
		v, err := strconv.Atoi(s)
		if err != nil || v < lo || v > hi {
			return 0, fmt.Errorf("%q is not a value from %d to %d", s, lo, hi)
		}
		return v, nil
	}
	set := map[int]bool{}
	for _, part := range strings.Split(field, ",") {
		rng, stepS, hasStep := strings.Cut(part, "/")
		step := 1
		if hasStep {
			s, err := strconv.Atoi(stepS)
			if err != nil || s < 1 {
				return nil, fmt.Errorf("step %q is not a positive number", stepS)
			}
			step = s
		}
		from, to := lo, hi
		switch {
		case rng == "*":
		case strings.Contains(rng, "-"):
			a, b, _ := strings.Cut(rng, "-")
			var err error
			if from, err = num(a); err != nil {
				return nil, err
			}
			if to, err = num(b); err != nil {
				return nil, err
			}
			if from > to {
				return nil, fmt.Errorf("range %q runs backwards", rng)
			}
		default:
			v, err := num(rng)
			if err != nil {
				return nil, err
			}
			from = v
			if !hasStep {
				to = v
			}
		}
		for v := from; v <= to; v += step {
			set[v] = true
		}
	}
	out := make([]int, 0, len(set))
	for v := range set {
		out = append(out, v)
	}
	sort.Ints(out)
	return out, nil
}

// cyclicGap is the longest distance between consecutive values of sorted
// vals on a cycle of length n.
func cyclicGap(vals []int, n int) int {
	if len(vals) == 0 {
		return n
	}
	gap := vals[0] + n - vals[len(vals)-1]
	for i := 1; i < len(vals); i++ {
		if d := vals[i] - vals[i-1]; d > gap {
			gap = d
		}
	}
	return gap
}
