package stacks

import (
	"slices"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsbackup"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/jsii-runtime-go"

	"github.com/triggers-dev/triggers/constructs/dynamotable"
	"github.com/triggers-dev/triggers/constructs/monitoring"
)

// SeedTableOperations returns the operations the seed stacks' dashboards
// graph and alarm on (latency per operation, SystemErrors): the reads of
// the access patterns (GetItem, Query; stacks/ACCESS_PATTERNS.md) and the
// single-item writes every seed describes. No seed uses batches,
// transactions or deletes; give TableMonitoring your own list if you do.
// It returns a new slice each call.
func SeedTableOperations() []string { return slices.Clone(seedTableOperations) }

var seedTableOperations = []string{"GetItem", "Query", "PutItem", "UpdateItem"}

// TablesMonitoring is the monitoring of a seed stack (ticketing, tenant,
// Ferryhook): one dashboard with a monitoring.TableMonitoring section per
// table, and every alarm sent to one topic.
type TablesMonitoring struct {
	// Dashboard shows every table of the stack, one section each. Its name
	// is "<system>-<env>", such as "ticketing-dev".
	Dashboard awscloudwatch.Dashboard
	// AlarmTopic receives every alarm's ALARM and OK notifications: the
	// topic given in DataStackProps.AlarmTopic, or the stack's own.
	AlarmTopic awssns.ITopic
	// Tables are the sections and alarms, by table id ("Events", ...).
	Tables map[string]*monitoring.TableMonitoring
}

// monitoredTable is one table of a stack to monitor.
type monitoredTable struct {
	id    string
	table dynamotable.ITable
	// insights adds the Contributor Insights section; set it when the
	// table has Contributor Insights on.
	insights bool
}

// DefaultEnv is the environment name when none is given (the
// triggers:env context key, the stacks' Env props).
const DefaultEnv = "dev"

// envName returns env, or DefaultEnv when it is empty.
func envName(env string) string {
	if env == "" {
		return DefaultEnv
	}
	return env
}

// monitorTables adds the stack's dashboard ("<system>-<env>"), one
// TableMonitoring section per table with alarms to topic (a new topic,
// AWS-managed key alias/aws/sns and TLS only, when topic is nil), and
// outputs AlarmTopicArn and DashboardName.
func monitorTables(stack awscdk.Stack, system, env string, topic awssns.ITopic, tables ...monitoredTable) *TablesMonitoring {
	name := system + "-" + envName(env)
	if topic == nil {
		topic = awssns.NewTopic(stack, jsii.String("AlarmTopic"), &awssns.TopicProps{
			DisplayName: jsii.String(name + " alarms"),
			EnforceSSL:  jsii.Bool(true),
			MasterKey:   awskms.Alias_FromAliasName(stack, jsii.String("SnsKey"), jsii.String("alias/aws/sns")),
		})
	}
	dash := awscloudwatch.NewDashboard(stack, jsii.String("Dashboard"), &awscloudwatch.DashboardProps{
		DashboardName:   jsii.String(name),
		DefaultInterval: awscdk.Duration_Hours(jsii.Number(3)),
	})
	// As in monitoring's dashboards: cfn-lint 1.51's schema predates the
	// dashboard's Tags (E3002); the ignore is scoped to this resource.
	dash.Node().DefaultChild().(awscdk.CfnResource).AddMetadata(jsii.String("cfn-lint"), map[string]any{
		"config": map[string]any{"ignore_checks": []string{"E3002"}},
	})
	m := &TablesMonitoring{Dashboard: dash, AlarmTopic: topic, Tables: map[string]*monitoring.TableMonitoring{}}
	for _, t := range tables {
		m.Tables[t.id] = monitoring.NewTableMonitoring(stack, jsii.String(t.id+"Monitoring"), &monitoring.TableMonitoringProps{
			Table:               t.table,
			Dashboard:           dash,
			AlarmTopic:          topic,
			Operations:          SeedTableOperations(),
			ContributorInsights: t.insights,
		})
	}
	stackName := *stack.StackName() // one jsii read for every export name
	awscdk.NewCfnOutput(stack, jsii.String("AlarmTopicArn"), &awscdk.CfnOutputProps{
		Value:       topic.TopicArn(),
		Description: jsii.String("SNS topic receiving every alarm of the stack's tables (subscribe your on-call here)"),
		ExportName:  jsii.String(stackName + "-AlarmTopicArn"),
	})
	awscdk.NewCfnOutput(stack, jsii.String("DashboardName"), &awscdk.CfnOutputProps{
		Value:       dash.DashboardName(),
		Description: jsii.String("CloudWatch dashboard of the stack's tables"),
		ExportName:  jsii.String(stackName + "-DashboardName"),
	})
	return m
}

// seed002Backup is seed 002's backup line ("On-Demand Backups: Weekly
// backups retained for 35 days") as an AWS Backup plan per table, all in
// one vault of the stack (AWS-managed key, retained), unless opts already
// has a Backup.
func seed002Backup(stack awscdk.Stack, opts dynamotable.TableOptions) dynamotable.TableOptions {
	if opts.Backup != nil {
		return opts
	}
	vault := awsbackup.NewBackupVault(stack, jsii.String("BackupVault"), &awsbackup.BackupVaultProps{
		RemovalPolicy: awscdk.RemovalPolicy_RETAIN,
	})
	opts.Backup = &dynamotable.BackupOptions{
		Vault: vault,
		Rules: []dynamotable.BackupRule{dynamotable.WeeklyBackupRule(awscdk.Duration_Days(jsii.Number(35)))},
	}
	return opts
}

// eventsTableOptions adds the Triggers events table's data protection and
// hot-key visibility to opts, each unless opts sets it:
//
//   - Backup: an AWS Backup plan with dynamotable.DefaultBackupRules (daily
//     at 05:00 UTC kept 35 days, monthly on the 1st kept 365 days) in the
//     table's own vault, in addition to PITR's 35 days: restores older than
//     PITR reaches, and copies outside DynamoDB's own continuous backups.
//   - Contributor Insights in THROTTLED_KEYS mode on the table and both
//     GSIs: the partition key is user_id (the tenant), so the rules name the
//     tenants whose requests are throttled, billed only when throttling
//     happens. Switch to ACCESSED_AND_THROTTLED_KEYS (no interruption) to
//     see the most accessed tenants too, billed per request.
func eventsTableOptions(opts dynamotable.TableOptions) dynamotable.TableOptions {
	if opts.Backup == nil {
		opts.Backup = &dynamotable.BackupOptions{}
	}
	if opts.ContributorInsights == nil {
		opts.ContributorInsights = jsii.Bool(true)
		opts.ContributorInsightsMode = awsdynamodb.ContributorInsightsMode_THROTTLED_KEYS
		// A global table sets Contributor Insights on GSIs per replica
		// (dynamotable refuses ContributorInsightsOnIndexes with Replicas).
		if len(opts.Replicas) == 0 {
			opts.ContributorInsightsOnIndexes = jsii.Bool(true)
		}
	}
	return opts
}
