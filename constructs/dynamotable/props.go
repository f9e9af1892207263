package dynamotable

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
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

// WarmThroughput is the read and write throughput a table and each of its
// GSIs can serve at once, without throttling, from the first request:
// pre-warming for a known peak (a launch, a migration, a backfill). Every
// new table and index starts at 12,000 read and 4,000 write units per
// second and DynamoDB raises these values as traffic grows; a value set
// here is charged once, when the table is pre-warmed, and can never be
// lowered again. A zero field leaves that direction as DynamoDB keeps it.
type WarmThroughput struct {
	// ReadUnitsPerSecond is the reads per second (strongly consistent 4
	// KB reads) to be ready for: at least 12,000.
	//
	// Default: 0, reads not pre-warmed.
	ReadUnitsPerSecond float64
	// WriteUnitsPerSecond is the writes per second (1 KB writes) to be
	// ready for: at least 4,000.
	//
	// Default: 0, writes not pre-warmed.
	WriteUnitsPerSecond float64
}

// TableOptions are the settings of a table other than its schema. Constructs
// for one fixed schema (such as eventstore.EventsTable) take these.
//
// In a global table (TableV2 with replicas) some of these are set per
// replica, each region's own: TableClass, ContributorInsights (and its
// mode, and per index), DeletionProtection, PointInTimeRecovery,
// ResourcePolicy, MaxReadRequestUnits and the provisioned read capacity.
// The others hold for the whole global table: Billing, WriteScaling,
// MaxWriteRequestUnits, WarmThroughput, and the encryption (one key per
// region, of the same kind).
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
	// MaxReadRequestUnits caps an on-demand table's reads: at most this
	// many read request units per second, on the table and, each on its
	// own, on every GSI; requests above it are throttled
	// (ReadThrottleEvents). A cost guard against a runaway client. Whole
	// number, at least 1; on-demand billing only (a provisioned table is
	// capped by ReadScaling.MaxCapacity).
	//
	// Default: 0, no cap (the account's per-table quota).
	MaxReadRequestUnits float64
	// MaxWriteRequestUnits caps an on-demand table's writes: at most this
	// many write request units per second, on the table and, each on its
	// own, on every GSI (a write to the table is a write to each GSI the
	// item appears in); requests above it are throttled
	// (WriteThrottleEvents). Whole number, at least 1; on-demand billing
	// only (a provisioned table is capped by WriteScaling.MaxCapacity).
	//
	// Default: 0, no cap (the account's per-table quota).
	MaxWriteRequestUnits float64
	// WarmThroughput pre-warms the table and every GSI (a cold GSI
	// throttles the table's writes) for a known peak: ReadUnitsPerSecond
	// at least 12,000, WriteUnitsPerSecond at least 4,000 (what every new
	// table starts with), neither above MaxReadRequestUnits or
	// MaxWriteRequestUnits. Pre-warming is charged once and cannot be
	// undone; removing the prop later leaves the table warm.
	//
	// Default: nil, DynamoDB's own warm throughput.
	WarmThroughput *WarmThroughput
	// TableClass is the storage class: awsdynamodb.TableClass_STANDARD or
	// awsdynamodb.TableClass_STANDARD_INFREQUENT_ACCESS. Standard-IA
	// stores data for about 60% less and charges about 25% more per read
	// and write: it pays when storage is the larger part of the table's
	// bill (as a rule of thumb, storage costing more than half of what
	// reads and writes cost), as for a table that keeps years of rarely
	// read items. A write-heavy table whose items expire within weeks,
	// such as the events table, is cheaper on Standard. Changing it does
	// not interrupt the table.
	//
	// Default: Standard (the template leaves TableClass out).
	TableClass awsdynamodb.TableClass
	// EncryptionKey is a customer-managed KMS key for encryption at rest.
	// Every grant then adds the KMS actions its intent needs on this key
	// (kms:Decrypt and kms:DescribeKey to read; kms:Encrypt,
	// kms:ReEncrypt* and kms:GenerateDataKey* too to write). An import
	// gives the key in its attributes (TableAttributes.EncryptionKey).
	//
	// Default: the AWS-managed key for DynamoDB (aws/dynamodb), no KMS
	// grants.
	EncryptionKey awskms.IKey
	// ResourcePolicy is the table's resource-based policy, for access from
	// other accounts (this account's roles get grants instead). It covers
	// the table and its indexes (not the stream). Each statement names
	// its principals (accounts, roles, users), only dynamodb: actions,
	// and Resources "*" (the table itself: the table's own ARN would be a
	// circular reference in the template). An Allow to every principal
	// ("*") needs a Condition. Other accounts cannot decrypt a table
	// under the AWS-managed key: give an EncryptionKey and allow them on
	// it. At most 20 KB.
	//
	// Default: nil, no resource policy.
	ResourcePolicy awsiam.PolicyDocument
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
	// Replicas makes the table a global table: an
	// AWS::DynamoDB::GlobalTable (aws-cdk's awsdynamodb.TableV2) with a
	// replica in the stack's region, built from the options above, and
	// one in each Replica's region, with the same schema, GSIs, TTL and
	// stream, point-in-time recovery and encryption. Each Replica may
	// override the settings DynamoDB keeps per replica (see Replica). The
	// stack needs a concrete region (awscdk.StackProps.Env), and a
	// customer-managed EncryptionKey a key in each replica's region
	// (Replica.EncryptionKey). A schema without a stream gets one
	// (NEW_AND_OLD_IMAGES), which replication needs; the table still
	// offers no stream to consumers. docs/multi-region.md says how the
	// service runs on a global table: one writer region at a time.
	//
	// Default: nil, an AWS::DynamoDB::Table in the stack's region only.
	Replicas []Replica
	// RemovalPolicy says what CloudFormation does with the table when it
	// leaves the stack.
	//
	// Default: awscdk.RemovalPolicy_RETAIN.
	RemovalPolicy awscdk.RemovalPolicy
}
