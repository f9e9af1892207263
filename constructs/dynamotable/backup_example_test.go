package dynamotable_test

import (
	"fmt"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsbackup"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/jsii-runtime-go"

	"github.com/triggers-dev/triggers/constructs/dynamotable"
	"github.com/triggers-dev/triggers/schema"
)

// Two tables backed up weekly (kept 35 days) into one vault, and
// Contributor Insights on throttled keys only, on the table and its GSIs.
func ExampleBackupOptions() {
	app := awscdk.NewApp(nil)
	stack := awscdk.NewStack(app, jsii.String("Shop"), nil)
	vault := awsbackup.NewBackupVault(stack, jsii.String("BackupVault"), nil)
	opts := dynamotable.TableOptions{
		Backup: &dynamotable.BackupOptions{
			Vault: vault,
			Rules: []dynamotable.BackupRule{dynamotable.WeeklyBackupRule(awscdk.Duration_Days(jsii.Number(35)))},
		},
		ContributorInsights:          jsii.Bool(true),
		ContributorInsightsMode:      awsdynamodb.ContributorInsightsMode_THROTTLED_KEYS,
		ContributorInsightsOnIndexes: jsii.Bool(true),
	}
	users, tickets := schema.TicketingUsers(), schema.TicketingTickets()
	u := dynamotable.NewTable(stack, jsii.String("Users"), &dynamotable.TableProps{Schema: &users, TableOptions: opts})
	dynamotable.NewTable(stack, jsii.String("Tickets"), &dynamotable.TableProps{Schema: &tickets, TableOptions: opts})

	tmpl := assertions.Template_FromStack(stack, nil)
	count := func(typ string) int { return len(*tmpl.FindResources(jsii.String(typ), nil)) }
	fmt.Println("vaults:", count("AWS::Backup::BackupVault"))
	fmt.Println("plans:", count("AWS::Backup::BackupPlan"))
	fmt.Println("selections:", count("AWS::Backup::BackupSelection"))
	fmt.Println("users' vault is the shared one:", u.Backup().Vault == vault)
	// Output:
	// vaults: 1
	// plans: 2
	// selections: 2
	// users' vault is the shared one: true
}

// Bad rules fail at synth with the rule and the fix.
func ExampleValidateProps_backup() {
	s := schema.Events()
	err := dynamotable.ValidateProps(&dynamotable.TableProps{Schema: &s, TableOptions: dynamotable.TableOptions{
		Backup: &dynamotable.BackupOptions{Rules: []dynamotable.BackupRule{dynamotable.WeeklyBackupRule(awscdk.Duration_Days(jsii.Number(3)))}},
	}})
	fmt.Println(err)
	// Output:
	// Backup.Rules[0] (Weekly): DeleteAfter 3 days is shorter than the time between two backups of its schedule (weekly, up to 7 days apart): there would be times with no backup to restore; keep backups at least 7 days or back up more often
}
