package dynamotable

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"

	"github.com/triggers-dev/triggers/schema"
)

// Billing selects how the table pays for throughput.
type Billing string

const (
	// OnDemand bills per request (PAY_PER_REQUEST) and needs no capacity planning.
	OnDemand Billing = "PAY_PER_REQUEST"
	// Provisioned bills for provisioned capacity, scaled by Application Auto Scaling.
	Provisioned Billing = "PROVISIONED"
)

// Defaults applied when a prop is left unset. They follow seed 001.
const (
	DefaultMinCapacity              = 5
	DefaultMaxCapacity              = 100
	DefaultTargetUtilizationPercent = 70
	DefaultRecoveryPeriodDays       = 35
)

// Scaling is one auto-scaled dimension (read or write) of a provisioned table
// or index: Application Auto Scaling keeps consumed capacity near
// TargetUtilizationPercent of provisioned capacity, between MinCapacity and
// MaxCapacity. A zero field takes its default.
type Scaling struct {
	// MinCapacity is the lowest provisioned capacity, in capacity units.
	//
	// Default: 5.
	MinCapacity float64
	// MaxCapacity is the highest provisioned capacity, in capacity units.
	//
	// Default: 100.
	MaxCapacity float64
	// TargetUtilizationPercent is the target tracking policy's target, 20-90.
	//
	// Default: 70.
	TargetUtilizationPercent float64
}

// TableProps configures a Table.
type TableProps struct {
	// Schema describes keys, indexes, TTL attribute and stream. Required.
	Schema *schema.Table
	TableOptions
}

// TableOptions are the settings of a table other than its schema. Constructs
// for one fixed schema (such as eventstore.EventsTable) take these.
type TableOptions struct {
	// Billing is OnDemand or Provisioned.
	//
	// Default: OnDemand.
	Billing Billing
	// ReadScaling sets read auto scaling for the table and every GSI; used
	// only when Billing is Provisioned.
	//
	// Default: 5-100 RCU at 70% utilization.
	ReadScaling *Scaling
	// WriteScaling sets write auto scaling for the table and every GSI; used
	// only when Billing is Provisioned.
	//
	// Default: 5-100 WCU at 70% utilization.
	WriteScaling *Scaling
	// PointInTimeRecovery turns continuous backups on or off.
	//
	// Default: true.
	PointInTimeRecovery *bool
	// RecoveryPeriodDays is how far back PITR can restore, 1-35 days.
	//
	// Default: 35.
	RecoveryPeriodDays float64
	// EncryptionKey is a customer-managed KMS key for encryption at rest.
	//
	// Default: the AWS-managed key for DynamoDB (aws/dynamodb).
	EncryptionKey awskms.IKey
	// DeletionProtection stops the table from being deleted by any API call.
	//
	// Default: true.
	DeletionProtection *bool
	// ContributorInsights enables CloudWatch Contributor Insights (most
	// accessed and most throttled keys); it is billed per event.
	//
	// Default: false.
	ContributorInsights *bool
	// ContributorInsightsMode chooses what Contributor Insights records:
	// awsdynamodb.ContributorInsightsMode_ACCESSED_AND_THROTTLED_KEYS (every
	// request's keys: the most accessed and the most throttled keys) or
	// awsdynamodb.ContributorInsightsMode_THROTTLED_KEYS (only throttled
	// requests: which keys, so which tenants, hit a partition's limits,
	// billed only when throttling happens). Needs ContributorInsights.
	// Changing it does not interrupt the table.
	//
	// Default: DynamoDB's default, ACCESSED_AND_THROTTLED_KEYS (the
	// template leaves Mode out).
	ContributorInsightsMode awsdynamodb.ContributorInsightsMode
	// ContributorInsightsOnIndexes enables Contributor Insights, with the
	// same mode, on every GSI too (a throttled GSI throttles the table's
	// writes). Needs ContributorInsights.
	//
	// Default: false (the table only).
	ContributorInsightsOnIndexes *bool
	// Backup puts the table in an AWS Backup plan (rules, vault, selection
	// of this table and the role AWS Backup assumes), for backups kept
	// longer than point-in-time recovery's 35 days. Give
	// &dynamotable.BackupOptions{} for the default rules and a new vault.
	//
	// Default: nil, no backup plan (point-in-time recovery only).
	Backup *BackupOptions
	// RemovalPolicy says what CloudFormation does with the table when it
	// leaves the stack.
	//
	// Default: awscdk.RemovalPolicy_RETAIN.
	RemovalPolicy awscdk.RemovalPolicy
}
