package dynamotable_test

import (
	"encoding/json"
	"sort"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsbackup"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/jsii-runtime-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/constructs/dynamotable"
	"github.com/triggers-dev/triggers/schema"
)

func days(n float64) awscdk.Duration { return awscdk.Duration_Days(jsii.Number(n)) }

func cron(o awsevents.CronOptions) awsevents.Schedule { return awsevents.Schedule_Cron(&o) }

func withBackup(b *dynamotable.BackupOptions) *dynamotable.TableProps {
	return &dynamotable.TableProps{Schema: events(), TableOptions: dynamotable.TableOptions{Backup: b}}
}

func TestBackupValidation(t *testing.T) {
	daily := cron(awsevents.CronOptions{Minute: jsii.String("0"), Hour: jsii.String("5")})
	tests := []struct {
		name  string
		rules []dynamotable.BackupRule
		want  string
	}{
		{"no rules", []dynamotable.BackupRule{}, "Backup.Rules is empty: leave it nil for dynamotable.DefaultBackupRules() or give at least one rule"},
		{"no schedule", []dynamotable.BackupRule{{DeleteAfter: days(7)}}, "Backup.Rules[0] (Rule1): Schedule is required"},
		{"rate schedule", []dynamotable.BackupRule{{Schedule: awsevents.Schedule_Rate(awscdk.Duration_Hours(jsii.Number(12))), DeleteAfter: days(7)}},
			`Backup.Rules[0] (Rule1): schedule "rate(12 hours)" is not a cron expression: AWS Backup schedules are cron(`},
		{"every five minutes", []dynamotable.BackupRule{{Schedule: awsevents.Schedule_Expression(jsii.String("cron(0/5 * * * ? *)")), DeleteAfter: days(7)}},
			`schedule "cron(0/5 * * * ? *)" runs more than once an hour (minutes "0/5"): AWS Backup runs a rule at most once an hour`},
		{"five fields", []dynamotable.BackupRule{{Schedule: awsevents.Schedule_Expression(jsii.String("cron(0 5 * * ?)")), DeleteAfter: days(7)}},
			`schedule "cron(0 5 * * ?)" has 5 fields: AWS Backup schedules have 6`},
		{"both days", []dynamotable.BackupRule{{Schedule: awsevents.Schedule_Expression(jsii.String("cron(0 5 1 * MON *)")), DeleteAfter: days(7)}},
			`sets both day-of-month "1" and day-of-week "MON": one of them must be '?'`},
		{"bad hour", []dynamotable.BackupRule{{Schedule: awsevents.Schedule_Expression(jsii.String("cron(0 25 * * ? *)")), DeleteAfter: days(7)}},
			`has an invalid hours field: "25" is not a value from 0 to 23`},
		{"no retention", []dynamotable.BackupRule{{Schedule: daily}}, "Backup.Rules[0] (Rule1): DeleteAfter is required"},
		{"retention under a day", []dynamotable.BackupRule{{Schedule: daily, DeleteAfter: awscdk.Duration_Hours(jsii.Number(12))}},
			"DeleteAfter 12 hours is invalid: AWS Backup keeps backups for whole days, at least 1"},
		{"weekly kept 3 days", []dynamotable.BackupRule{dynamotable.WeeklyBackupRule(days(3))},
			"Backup.Rules[0] (Weekly): DeleteAfter 3 days is shorter than the time between two backups of its schedule (weekly, up to 7 days apart): there would be times with no backup to restore; keep backups at least 7 days or back up more often"},
		{"monthly kept 14 days", []dynamotable.BackupRule{dynamotable.MonthlyBackupRule(days(14))},
			"(Monthly): DeleteAfter 14 days is shorter than the time between two backups of its schedule (monthly, up to 31 days apart)"},
		{"yearly kept 90 days", []dynamotable.BackupRule{{Name: "Yearly", Schedule: cron(awsevents.CronOptions{Minute: jsii.String("0"), Hour: jsii.String("5"), Day: jsii.String("1"), Month: jsii.String("1")}), DeleteAfter: days(90)}},
			"(Yearly): DeleteAfter 90 days is shorter than the time between two backups of its schedule (yearly, up to 372 days apart)"},
		{"cold storage too short", []dynamotable.BackupRule{{Name: "Monthly", Schedule: cron(awsevents.CronOptions{Minute: jsii.String("0"), Hour: jsii.String("5"), Day: jsii.String("1")}), DeleteAfter: days(100), MoveToColdStorageAfter: days(30)}},
			"Backup.Rules[0] (Monthly): DeleteAfter 100 days is less than 90 days after MoveToColdStorageAfter 30 days: AWS Backup keeps a backup in cold storage at least 90 days; set DeleteAfter to at least 120 days or remove MoveToColdStorageAfter"},
		{"duplicate names", []dynamotable.BackupRule{dynamotable.DailyBackupRule(days(7)), dynamotable.DailyBackupRule(days(35))},
			`Backup.Rules[1] (Daily): name "Daily" is used twice`},
		{"bad name", []dynamotable.BackupRule{{Name: "daily backups", Schedule: daily, DeleteAfter: days(7)}},
			`name "daily backups" is invalid: use 1-50 characters`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := dynamotable.ValidateProps(withBackup(&dynamotable.BackupOptions{Rules: tt.rules}))
			require.Error(t, err, "ValidateProps = nil, want an error containing %q", tt.want)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

func TestBackupValidationAccepts(t *testing.T) {
	for name, rules := range map[string][]dynamotable.BackupRule{
		"defaults":           nil,
		"seed 002 weekly 35": {dynamotable.WeeklyBackupRule(days(35))},
		"weekdays":           {{Schedule: awsevents.Schedule_Expression(jsii.String("cron(0 5 ? * MON-FRI *)")), DeleteAfter: days(3)}},
		"every 6 hours":      {{Schedule: awsevents.Schedule_Expression(jsii.String("cron(0 0/6 * * ? *)")), DeleteAfter: days(1)}},
		"cold storage":       {{Schedule: dynamotable.MonthlyBackupRule(nil).Schedule, DeleteAfter: days(365), MoveToColdStorageAfter: days(30)}},
		"last day of month":  {{Schedule: awsevents.Schedule_Expression(jsii.String("cron(0 5 L * ? *)")), DeleteAfter: days(31)}},
	} {
		assert.NoError(t, dynamotable.ValidateProps(withBackup(&dynamotable.BackupOptions{Rules: rules})), name)
	}
}

func TestContributorInsightsValidation(t *testing.T) {
	for want, opts := range map[string]dynamotable.TableOptions{
		`ContributorInsightsMode "THROTTLED_KEYS" is set but ContributorInsights is off`: {ContributorInsightsMode: awsdynamodb.ContributorInsightsMode_THROTTLED_KEYS},
		`ContributorInsightsMode "HOT_KEYS" is unknown`:                                  {ContributorInsights: jsii.Bool(true), ContributorInsightsMode: "HOT_KEYS"},
		"ContributorInsightsOnIndexes is set but ContributorInsights is off":             {ContributorInsights: jsii.Bool(false), ContributorInsightsOnIndexes: jsii.Bool(true)},
	} {
		err := dynamotable.ValidateProps(&dynamotable.TableProps{Schema: events(), TableOptions: opts})
		if assert.Error(t, err, want) {
			assert.Contains(t, err.Error(), want)
		}
	}
}

// One stack: a table with the default plan and its own vault (and a
// customer-managed key), two tables sharing a given vault with custom
// rules, a table without backup and with Contributor Insights on its
// indexes in throttled-keys mode.
func TestBackupAndInsightsSynth(t *testing.T) {
	stack := awscdk.NewStack(awscdk.NewApp(nil), jsii.String("S"), nil)
	key := awskms.NewKey(stack, jsii.String("Key"), &awskms.KeyProps{EnableKeyRotation: jsii.Bool(true)})
	def := dynamotable.NewTable(stack, jsii.String("Main"), &dynamotable.TableProps{Schema: events(), TableOptions: dynamotable.TableOptions{
		EncryptionKey: key, Backup: &dynamotable.BackupOptions{},
	}})
	vault := awsbackup.NewBackupVault(stack, jsii.String("SharedVault"), nil)
	shared := dynamotable.TableOptions{Backup: &dynamotable.BackupOptions{Vault: vault, Rules: []dynamotable.BackupRule{
		dynamotable.WeeklyBackupRule(days(35)),
		{Name: "Archive", Schedule: dynamotable.MonthlyBackupRule(nil).Schedule, DeleteAfter: days(730), MoveToColdStorageAfter: days(90)},
	}}}
	users, tickets := schema.TicketingUsers(), schema.TicketingTickets()
	u := dynamotable.NewTable(stack, jsii.String("Users"), &dynamotable.TableProps{Schema: &users, TableOptions: shared})
	tk := dynamotable.NewTable(stack, jsii.String("Tickets"), &dynamotable.TableProps{Schema: &tickets, TableOptions: shared})
	plain := dynamotable.NewTable(stack, jsii.String("Plain"), &dynamotable.TableProps{Schema: events(), TableOptions: dynamotable.TableOptions{
		ContributorInsights: jsii.Bool(true), ContributorInsightsMode: awsdynamodb.ContributorInsightsMode_THROTTLED_KEYS, ContributorInsightsOnIndexes: jsii.Bool(true),
	}})
	off := dynamotable.NewTable(stack, jsii.String("Off"), &dynamotable.TableProps{Schema: events(), TableOptions: dynamotable.TableOptions{
		Backup: &dynamotable.BackupOptions{Disabled: true, Rules: []dynamotable.BackupRule{}},
	}})
	tmpl := assertions.Template_FromStack(stack, nil)
	raw := tmpl.ToJSON()
	resources := (*raw)["Resources"].(map[string]any)
	idOf := func(tbl *dynamotable.Table) string {
		return *stack.GetLogicalId(tbl.CfnTable())
	}

	// Accessors.
	require.NotNil(t, def.Backup())
	require.NotNil(t, u.Backup())
	assert.Nil(t, plain.Backup(), "no Backup prop, no plan")
	assert.Nil(t, off.Backup(), "Disabled: no plan, and its rules are not checked")
	assert.Nil(t, dynamotable.BackupOf(nil))
	assert.Equal(t, vault, u.Backup().Vault, "the given vault is used")

	// Vaults: the shared one and the default table's own, AWS-managed key, retained.
	tmpl.ResourceCountIs(jsii.String("AWS::Backup::BackupVault"), jsii.Number(2))
	ownVault := *stack.GetLogicalId(def.Backup().Vault.Node().DefaultChild().(awscdk.CfnElement))
	assert.True(t, strings.HasPrefix(ownVault, "MainBackupVault"), ownVault)
	v := resources[ownVault].(map[string]any)
	assert.Equal(t, "Retain", v["DeletionPolicy"])
	assert.NotContains(t, v["Properties"], "EncryptionKeyArn", "AWS-managed key (aws/backup)")

	// Plans: one per table with a backup.
	tmpl.ResourceCountIs(jsii.String("AWS::Backup::BackupPlan"), jsii.Number(3))
	type rule struct {
		Name, Schedule string
		Delete, Cold   float64
		Vault          string
	}
	planRules := func(tbl *dynamotable.Table) []rule {
		id := *stack.GetLogicalId(tbl.Backup().Plan.Node().DefaultChild().(awscdk.CfnElement))
		bp := resources[id].(map[string]any)["Properties"].(map[string]any)["BackupPlan"].(map[string]any)
		assert.Regexp(t, `^[A-Za-z0-9\-_.]{1,50}$`, bp["BackupPlanName"])
		var out []rule
		for _, r := range bp["BackupPlanRule"].([]any) {
			rm := r.(map[string]any)
			lc := rm["Lifecycle"].(map[string]any)
			rr := rule{Name: rm["RuleName"].(string), Schedule: rm["ScheduleExpression"].(string), Delete: lc["DeleteAfterDays"].(float64)}
			if c, ok := lc["MoveToColdStorageAfterDays"]; ok {
				rr.Cold = c.(float64)
			}
			rr.Vault = jsonOf(rm["TargetBackupVault"])
			out = append(out, rr)
		}
		return out
	}
	ownVaultRef := jsonOf(map[string]any{"Fn::GetAtt": []any{ownVault, "BackupVaultName"}})
	assert.Equal(t, []rule{
		{"Daily", "cron(0 5 * * ? *)", 35, 0, ownVaultRef},
		{"Monthly", "cron(0 5 1 * ? *)", 365, 0, ownVaultRef},
	}, planRules(def), "default rules: daily kept 35 days, monthly kept 365")
	sharedRef := jsonOf(map[string]any{"Fn::GetAtt": []any{*stack.GetLogicalId(vault.Node().DefaultChild().(awscdk.CfnElement)), "BackupVaultName"}})
	for _, tbl := range []*dynamotable.Table{u, tk} {
		assert.Equal(t, []rule{
			{"Weekly", "cron(0 5 ? * SUN *)", 35, 0, sharedRef},
			{"Archive", "cron(0 5 1 * ? *)", 730, 90, sharedRef},
		}, planRules(tbl))
	}

	// Selections: each plan selects exactly its table, with its own role.
	sel := tmpl.FindResources(jsii.String("AWS::Backup::BackupSelection"), nil)
	require.Len(t, *sel, 3)
	selected := map[string]string{}
	for _, s := range *sel {
		bs := (*s)["Properties"].(map[string]any)["BackupSelection"].(map[string]any)
		res := bs["Resources"].([]any)
		require.Len(t, res, 1)
		table := res[0].(map[string]any)["Fn::GetAtt"].([]any)[0].(string)
		role := bs["IamRoleArn"].(map[string]any)["Fn::GetAtt"].([]any)[0].(string)
		selected[table] = role
	}
	for _, tbl := range []*dynamotable.Table{def, u, tk} {
		role, ok := selected[idOf(tbl)]
		require.True(t, ok, "table %s is selected", idOf(tbl))
		assert.Equal(t, *stack.GetLogicalId(tbl.Backup().Role.Node().DefaultChild().(awscdk.CfnElement)), role)
		r := resources[role].(map[string]any)["Properties"].(map[string]any)
		assert.NotContains(t, r, "ManagedPolicyArns", "no AWS managed policy")
		assert.Equal(t, "backup.amazonaws.com", r["AssumeRolePolicyDocument"].(map[string]any)["Statement"].([]any)[0].(map[string]any)["Principal"].(map[string]any)["Service"])
	}

	// The role's inline policy: exact actions on this table, its backups and the vault.
	policyOf := func(role string) map[string][]string {
		out := map[string][]string{}
		for _, p := range resources {
			pm := p.(map[string]any)
			if pm["Type"] != "AWS::IAM::Policy" {
				continue
			}
			props := pm["Properties"].(map[string]any)
			if jsonOf(props["Roles"]) != jsonOf([]any{map[string]any{"Ref": role}}) {
				continue
			}
			for _, s := range props["PolicyDocument"].(map[string]any)["Statement"].([]any) {
				sm := s.(map[string]any)
				var acts []string
				switch a := sm["Action"].(type) {
				case string:
					acts = []string{a}
				case []any:
					for _, x := range a {
						acts = append(acts, x.(string))
					}
				}
				sort.Strings(acts)
				out[jsonOf(sm["Resource"])] = append(out[jsonOf(sm["Resource"])], acts...)
			}
		}
		return out
	}
	defID := idOf(def)
	got := policyOf(selected[defID])
	arn := map[string]any{"Fn::GetAtt": []any{defID, "Arn"}}
	assert.Equal(t, []string{"dynamodb:CreateBackup", "dynamodb:DescribeTable", "dynamodb:ListTagsOfResource", "dynamodb:StartAwsBackupJob"}, got[jsonOf(arn)])
	assert.Equal(t, []string{"dynamodb:DeleteBackup", "dynamodb:DescribeBackup"}, got[jsonOf(map[string]any{"Fn::Join": []any{"", []any{arn, "/backup/*"}}})])
	assert.Equal(t, []string{"backup:CopyIntoBackupVault", "backup:DescribeBackupVault"}, got[jsonOf(map[string]any{"Fn::GetAtt": []any{ownVault, "BackupVaultArn"}})])
	keyID := *stack.GetLogicalId(key.Node().DefaultChild().(awscdk.CfnElement))
	assert.Equal(t, []string{"kms:CreateGrant", "kms:Decrypt", "kms:DescribeKey", "kms:GenerateDataKey"}, got[jsonOf(map[string]any{"Fn::GetAtt": []any{keyID, "Arn"}})], "the table's customer-managed key")
	assert.Len(t, got, 4, "nothing else: %v", got)
	assert.Len(t, policyOf(selected[idOf(u)]), 3, "no KMS statement for an AWS-managed table key")

	// Contributor Insights: throttled keys on the table and each GSI.
	ci := resources[idOf(plain)].(map[string]any)["Properties"].(map[string]any)
	want := map[string]any{"Enabled": true, "Mode": "THROTTLED_KEYS"}
	assert.Equal(t, want, ci["ContributorInsightsSpecification"])
	for _, g := range ci["GlobalSecondaryIndexes"].([]any) {
		assert.Equal(t, want, g.(map[string]any)["ContributorInsightsSpecification"], g.(map[string]any)["IndexName"])
	}
	// Tables without Contributor Insights have no specification at all.
	assert.NotContains(t, resources[idOf(u)].(map[string]any)["Properties"], "ContributorInsightsSpecification")

	// The cold storage rule warns about the account opt-in.
	warnings := assertions.Annotations_FromStack(stack).FindWarning(jsii.String("*"), assertions.Match_StringLikeRegexp(jsii.String("moves DynamoDB backups to cold storage")))
	assert.Len(t, *warnings, 2, "one per table with the Archive rule")
}

func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
