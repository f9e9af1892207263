package assertions

import (
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/internal/testkit/cdktest"
)

// backupRule is one rule of a synthesized AWS::Backup::BackupPlan.
type backupRule struct {
	Name, Schedule  string
	DeleteAfterDays float64
	Vault           string // logical id of the target vault
}

var (
	dailyMonthly = []backupRule{
		{"Daily", "cron(0 5 * * ? *)", 35, ""},
		{"Monthly", "cron(0 5 1 * ? *)", 365, ""},
	}
	seed002Weekly = []backupRule{{"Weekly", "cron(0 5 ? * SUN *)", 35, ""}}
)

// wantBackups lists every backup plan of the app, by stack: the table it
// selects (logical id), its rules, and the vault's logical id prefix (the
// table's own vault, or the stack's shared one). A stack not listed has
// no backup plan, and a plan not listed fails the test.
var wantBackups = map[string]map[string]struct {
	rules []backupRule
	vault string
}{
	dataStack: {
		// The events table: PITR plus daily kept 35 days and monthly kept a
		// year (stacks.eventsTableOptions); the API-keys table: PITR only.
		"Events948F067E": {dailyMonthly, "EventsBackupVault"},
	},
	"ticketing-dev-data": {
		// Seed 002: weekly backups retained for 35 days, one shared vault.
		"Events948F067E":        {seed002Weekly, "BackupVault"},
		"RegistrationsE002A2BA": {seed002Weekly, "BackupVault"},
		"TicketsB51CEDFD":       {seed002Weekly, "BackupVault"},
		"Users10139FB0":         {seed002Weekly, "BackupVault"},
	},
	"tenant-dev-data":    {},
	"ferryhook-dev-data": {},
}

// Every backup plan of the app: its selection (exactly one table), its
// rules (schedule, retention, target vault), the vault (AWS-managed key,
// retained) and the role AWS Backup assumes (this table only, no AWS
// managed policy).
func TestBackupPlans(t *testing.T) {
	for stack, tables := range wantBackups {
		t.Run(stack, func(t *testing.T) {
			tp := tmpl(t, stack)
			resources := tp["Resources"].(map[string]any)
			plans := cdktest.Resources(tp, "AWS::Backup::BackupPlan")
			selections := cdktest.Resources(tp, "AWS::Backup::BackupSelection")
			assert.Len(t, plans, len(tables), "one plan per table with backups")
			assert.Len(t, selections, len(tables), "one selection per plan")

			seen := map[string]bool{}
			for selID, sel := range selections {
				bs := cdktest.Props(sel)["BackupSelection"].(map[string]any)
				res := bs["Resources"].([]any)
				require.Len(t, res, 1, "%s selects one table", selID)
				table := getAtt(t, res[0], "Arn")
				want, ok := tables[table]
				if !assert.True(t, ok, "%s selects %s, which should have no plan", selID, table) {
					continue
				}
				seen[table] = true

				// The plan and its rules.
				planID := getAtt(t, cdktest.Props(sel)["BackupPlanId"], "BackupPlanId")
				bp := cdktest.Props(resources[planID].(map[string]any))["BackupPlan"].(map[string]any)
				assert.Regexp(t, `^[A-Za-z0-9\-_.]{1,50}$`, bp["BackupPlanName"])
				var rules []backupRule
				vaults := map[string]bool{}
				for _, r := range bp["BackupPlanRule"].([]any) {
					rm := r.(map[string]any)
					lc := rm["Lifecycle"].(map[string]any)
					assert.NotContains(t, lc, "MoveToColdStorageAfterDays", "no cold storage: it needs the account's opt-in")
					vault := getAtt(t, rm["TargetBackupVault"], "BackupVaultName")
					vaults[vault] = true
					rules = append(rules, backupRule{rm["RuleName"].(string), rm["ScheduleExpression"].(string), lc["DeleteAfterDays"].(float64), ""})
				}
				assert.Equal(t, want.rules, rules, "%s rules", table)
				require.Len(t, vaults, 1, "%s: every rule targets one vault", table)

				// The vault: AWS-managed key, retained.
				for vault := range vaults {
					assert.True(t, strings.HasPrefix(vault, want.vault), "%s backs up to %s, want %s*", table, vault, want.vault)
					v := resources[vault].(map[string]any)
					assert.Equal(t, "AWS::Backup::BackupVault", v["Type"])
					assert.Equal(t, "Retain", v["DeletionPolicy"], vault)
					assert.Equal(t, "Retain", v["UpdateReplacePolicy"], vault)
					assert.NotContains(t, cdktest.Props(v), "EncryptionKeyArn", "%s: AWS Backup's AWS-managed key", vault)

					// The role: assumed by AWS Backup, least privilege on this table.
					role := getAtt(t, bs["IamRoleArn"], "Arn")
					rp := cdktest.Props(resources[role].(map[string]any))
					assert.NotContains(t, rp, "ManagedPolicyArns", "%s: no AWS managed policy", role)
					assert.Equal(t, "backup.amazonaws.com", jsonPath(rp, "AssumeRolePolicyDocument", "Statement", 0, "Principal", "Service"))
					arn := map[string]any{"Fn::GetAtt": []any{table, "Arn"}}
					assert.ElementsMatch(t, []statement{
						{"Allow", []string{"dynamodb:CreateBackup", "dynamodb:DescribeTable", "dynamodb:ListTagsOfResource", "dynamodb:StartAwsBackupJob"}, []any{arn}},
						{"Allow", []string{"dynamodb:DeleteBackup", "dynamodb:DescribeBackup"}, []any{map[string]any{"Fn::Join": []any{"", []any{arn, "/backup/*"}}}}},
						{"Allow", []string{"backup:CopyIntoBackupVault", "backup:DescribeBackupVault"}, []any{map[string]any{"Fn::GetAtt": []any{vault, "BackupVaultArn"}}}},
					}, roleStatements(t, tp, role), "%s backup role", table)
				}
			}
			assert.Len(t, seen, len(tables), "every table with a plan is selected: %v", keys(seen))
		})
	}
	// No other stack of the app has a plan.
	for _, stack := range appStacks {
		if _, ok := wantBackups[stack]; !ok {
			assert.Empty(t, cdktest.Resources(tmpl(t, stack), "AWS::Backup::BackupPlan"), "%s has a plan this test does not cover", stack)
		}
	}
}

// The vaults hold the backups: their logical ids are pinned like the
// tables' (a changed id creates a new, empty vault and orphans the old).
func TestBackupVaultLogicalIDsPinned(t *testing.T) {
	want := map[string][]string{
		dataStack:            {"EventsBackupVaultA0F12E01"},
		"ticketing-dev-data": {"BackupVault3A9C5852"},
		"tenant-dev-data":    nil,
		"ferryhook-dev-data": nil,
	}
	for stack, ids := range want {
		got := keys(cdktest.Resources(tmpl(t, stack), "AWS::Backup::BackupVault"))
		sort.Strings(got)
		assert.Equal(t, ids, nilIfEmpty(got), stack)
	}
}

func nilIfEmpty(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
}

// getAtt returns the logical id of {"Fn::GetAtt": [id, attr]} or {"Ref": id}.
func getAtt(t *testing.T, v any, attr string) string {
	t.Helper()
	m, ok := v.(map[string]any)
	if !ok {
		t.Fatalf("want a reference to %s, got %s", attr, jsonOf(v))
	}
	if ga, ok := m["Fn::GetAtt"].([]any); ok && len(ga) == 2 && ga[1] == attr {
		return ga[0].(string)
	}
	if ref, ok := m["Ref"].(string); ok {
		return ref
	}
	t.Fatalf("want a reference to %s, got %s", attr, jsonOf(v))
	return ""
}

// jsonPath walks maps (string keys) and lists (int indexes).
func jsonPath(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case int:
			l, _ := v.([]any)
			if k >= len(l) {
				return nil
			}
			v = l[k]
		}
	}
	return v
}
