// Package dynamotable turns a schema.Table into an AWS::DynamoDB::Table with
// safe defaults: on-demand billing (or provisioned with auto scaling on the
// table and every index), point-in-time recovery for 35 days, encryption at
// rest, deletion protection, RETAIN on removal and a generated name.
//
// It builds on the aws-cdk-go L2 awsdynamodb.Table (not TableV2): the seed's
// design is Table's shape, with Application Auto Scaling targets, and
// cdk-nag's DynamoDB rules inspect AWS::DynamoDB::Table only. With
// TableOptions.Replicas it builds a global table instead: the L2
// awsdynamodb.TableV2 (AWS::DynamoDB::GlobalTable), with the same schema and
// defaults, point-in-time recovery and encryption on every replica.
package dynamotable

import (
	"fmt"
	"slices"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/triggers-dev/triggers/constructs/internal/cdkutil"
	"github.com/triggers-dev/triggers/constructs/internal/tablecore"
	"github.com/triggers-dev/triggers/schema"
)

// ITable is a DynamoDB table described by a schema, made in this app or
// imported. Other constructs take an ITable so that both work.
type ITable interface {
	constructs.IConstruct
	// Resource returns the aws-cdk-go L2 table for anything this interface
	// does not cover.
	Resource() awsdynamodb.ITable
	// Schema returns the table's description.
	Schema() schema.Table
	// TableName returns the physical table name.
	TableName() *string
	// TableArn returns the table ARN.
	TableArn() *string
	// TableStreamArn returns the stream ARN, or nil when the table has no stream.
	TableStreamArn() *string
	// TableIndexArn returns the ARN of the named GSI; it panics on a name
	// the schema does not have.
	TableIndexArn(indexName string) *string
	// EncryptionKey returns the customer-managed key, or nil.
	EncryptionKey() awskms.IKey
	// GrantReadData lets grantee read items: ReadDataActions() on the table
	// and on every GSI of its schema (their ARNs, not a wildcard), plus
	// kms:Decrypt and kms:DescribeKey on a customer-managed key.
	GrantReadData(grantee awsiam.IGrantable) awsiam.Grant
	// GrantReadDataOnIndexes lets grantee query and scan the named GSIs
	// only: IndexReadActions() on their ARNs (not on the table). It panics on
	// a name the schema does not have.
	GrantReadDataOnIndexes(grantee awsiam.IGrantable, indexNames ...string) awsiam.Grant
	// GrantWriteData lets grantee write items: WriteDataActions() on the
	// table, plus the KMS actions for writing on a customer-managed key.
	GrantWriteData(grantee awsiam.IGrantable) awsiam.Grant
	// GrantReadWriteData is GrantReadData and GrantWriteData in one
	// statement: ReadWriteDataActions() on the table and every GSI.
	GrantReadWriteData(grantee awsiam.IGrantable) awsiam.Grant
	// GrantStreamRead lets grantee read the table's stream.
	GrantStreamRead(grantee awsiam.IGrantable) awsiam.Grant
	// Metric returns an AWS/DynamoDB metric of the table (TableName dimension).
	Metric(metricName string, opts *awscloudwatch.MetricOptions) awscloudwatch.Metric
	// MetricForIndex returns an AWS/DynamoDB metric of one GSI.
	MetricForIndex(indexName, metricName string, opts *awscloudwatch.MetricOptions) awscloudwatch.Metric
	// MetricSuccessfulRequestLatency returns SuccessfulRequestLatency for
	// one operation (PutItem, Query, GetItem, UpdateItem, ...), in milliseconds.
	MetricSuccessfulRequestLatency(operation string, opts *awscloudwatch.MetricOptions) awscloudwatch.Metric
	// MetricReadThrottleEvents returns the table's ReadThrottleEvents (sum).
	MetricReadThrottleEvents(opts *awscloudwatch.MetricOptions) awscloudwatch.Metric
	// MetricWriteThrottleEvents returns the table's WriteThrottleEvents (sum).
	MetricWriteThrottleEvents(opts *awscloudwatch.MetricOptions) awscloudwatch.Metric
	// MetricConsumedReadCapacityUnits returns ConsumedReadCapacityUnits (sum).
	MetricConsumedReadCapacityUnits(opts *awscloudwatch.MetricOptions) awscloudwatch.Metric
	// MetricConsumedWriteCapacityUnits returns ConsumedWriteCapacityUnits (sum).
	MetricConsumedWriteCapacityUnits(opts *awscloudwatch.MetricOptions) awscloudwatch.Metric
	// AddStreamConsumer attaches a function to the table's stream with safe
	// defaults (see StreamConsumerOptions).
	AddStreamConsumer(fn awslambda.IFunction, opts *StreamConsumerOptions) *StreamConsumer
}

// Table is a DynamoDB table built from a schema. Its main child, with id
// "Resource", is the awsdynamodb.Table, or for a table with Replicas the
// awsdynamodb.TableV2. Besides ITable it has L2() (the awsdynamodb.Table),
// CfnTable() (escape hatch) and Billing(); a global table has L2V2(),
// CfnGlobalTable() and ReplicaRegions() instead of L2() and CfnTable().
type Table struct {
	constructs.Construct
	*tablecore.Core
}

// The IAM actions behind the intent grants are aws-cdk's data actions
// without the stream ones (GrantStreamRead grants those).

// ReadDataActions returns the actions that read items (GrantReadData). It
// returns a new slice each call.
func ReadDataActions() []string { return slices.Clone(tablecore.ReadDataActions) }

// IndexReadActions returns the actions that read a GSI
// (GrantReadDataOnIndexes). It returns a new slice each call.
func IndexReadActions() []string { return slices.Clone(tablecore.IndexReadActions) }

// WriteDataActions returns the actions that write items (GrantWriteData).
// It returns a new slice each call.
func WriteDataActions() []string { return slices.Clone(tablecore.WriteDataActions) }

// ReadWriteDataActions returns the actions of both (GrantReadWriteData).
// It returns a new slice each call.
func ReadWriteDataActions() []string { return slices.Clone(tablecore.ReadWriteDataActions) }

// NewTable creates a table from props.Schema. It panics with an error naming
// every bad prop and its fix when props are invalid (see ValidateProps).
func NewTable(scope constructs.Construct, id *string, props *TableProps) *Table {
	t := &Table{Core: &tablecore.Core{}}
	buildTable(t, t.Core, scope, id, props)
	return t
}

// BuildInto builds the table of props as NewTable does into core, a new
// core that self embeds, with self as the construct at scope/id. It is how
// this module's tables with types of their own (eventstore.EventsTable,
// triggersapi.ApiKeysTable) are built: self, not an inner Table, is the
// construct jsii knows, so it works as a scope and with Tags_Of. A core
// already built panics: a table's state is set once. Code outside this
// module cannot make a core (package tablecore is internal): it uses
// NewTable.
func BuildInto(self constructs.Construct, core *tablecore.Core, scope constructs.Construct, id *string, props *TableProps) {
	if core == nil || core.Accessors != nil {
		panic(fmt.Errorf("dynamotable %q: BuildInto takes a new core (&tablecore.Core{}), not nil or one already built", cdkutil.Deref(id)))
	}
	buildTable(self, core, scope, id, props)
}

// Billing returns the billing mode in force.
func (t *Table) Billing() Billing { return Billing(t.BillingMode()) }

// AddStreamConsumer attaches fn to the table's stream (see the package
// function AddStreamConsumer).
func (t *Table) AddStreamConsumer(fn awslambda.IFunction, opts *StreamConsumerOptions) *StreamConsumer {
	return AddStreamConsumer(t, fn, opts)
}

// buildTable builds the table into t, registering self (the struct that
// embeds t) as the construct, so that constructs extending Table
// (eventstore.EventsTable) can be used as a scope, with Tags_Of, and
// wherever jsii expects a construct.
func buildTable(self constructs.Construct, t *tablecore.Core, scope constructs.Construct, id *string, props *TableProps) {
	err := ValidateProps(props)
	if props != nil && props.Schema != nil {
		err = replicaErrors(err, props, awscdk.Stack_Of(scope).Region())
	}
	if err != nil {
		panic(fmt.Errorf("dynamotable %q: invalid props:\n%w", cdkutil.Deref(id), err))
	}
	t.Accessors = &tablecore.Accessors{}
	constructs.NewConstruct_Override(self, scope, id)
	billing := props.Billing
	if billing == "" {
		billing = OnDemand
	}

	pitr := props.PointInTimeRecovery == nil || *props.PointInTimeRecovery
	days := props.RecoveryPeriodDays
	if days == 0 {
		days = DefaultRecoveryPeriodDays
	}
	removal := props.RemovalPolicy
	if removal == "" {
		removal = awscdk.RemovalPolicy_RETAIN
	}
	var res awsdynamodb.ITable
	if len(props.Replicas) > 0 {
		res = buildGlobalTable(self, t, props, billing, removal)
	} else {
		res = buildSingleRegionTable(self, t, props, billing, removal, pitr, days)
	}

	if props.Backup != nil && !props.Backup.Disabled {
		buildBackup(self, res, props.EncryptionKey, props.Backup)
	}

	ann := awscdk.Annotations_Of(self)
	for _, w := range SchemaWarnings(*props.Schema) {
		ann.AddWarningV2(jsii.String(w.ID), jsii.String(w.Message))
	}
	if !pitr {
		ann.AddWarningV2(jsii.String("triggers:pitr-off"), jsii.String("point-in-time recovery is off: the table cannot be restored after a bad write or delete; remove PointInTimeRecovery: false unless the data is disposable"))
	}
	if props.DeletionProtection != nil && !*props.DeletionProtection {
		ann.AddWarningV2(jsii.String("triggers:deletion-protection-off"), jsii.String("deletion protection is off: one API call can delete the table and its data"))
	}
	if props.ResourcePolicy != nil && props.EncryptionKey == nil {
		ann.AddWarningV2(jsii.String("triggers:resource-policy-aws-managed-key"), jsii.String("the resource policy lets other accounts in, but the table is encrypted with the AWS-managed key, which no other account can use: their reads and writes are denied; give an EncryptionKey and allow them on it, or acknowledge this warning when the policy names only this account's principals"))
	}
	if removal == awscdk.RemovalPolicy_DESTROY {
		ann.AddWarningV2(jsii.String("triggers:removal-destroy"), jsii.String("removal policy DESTROY deletes the table and its data when it leaves the stack; use RETAIN (the default) for real data"))
		if props.DeletionProtection == nil || *props.DeletionProtection {
			ann.AddWarningV2(jsii.String("triggers:destroy-with-deletion-protection"), jsii.String("removal policy DESTROY with deletion protection on: deleting the stack fails on this table; set DeletionProtection: jsii.Bool(false) too, or keep RETAIN"))
		}
	}
}

// buildSingleRegionTable builds props as an awsdynamodb.Table (an
// AWS::DynamoDB::Table) with id "Resource" under self, and records it in t.
func buildSingleRegionTable(self constructs.Construct, t *tablecore.Core, props *TableProps, billing Billing, removal awscdk.RemovalPolicy, pitr bool, days float64) awsdynamodb.Table {
	sc := *props.Schema
	tp := &awsdynamodb.TableProps{
		PartitionKey:       l2Attr(&sc.PartitionKey),
		SortKey:            l2Attr(sc.SortKey),
		DeletionProtection: jsii.Bool(props.DeletionProtection == nil || *props.DeletionProtection),
		RemovalPolicy:      removal,
		PointInTimeRecoverySpecification: &awsdynamodb.PointInTimeRecoverySpecification{
			PointInTimeRecoveryEnabled: jsii.Bool(pitr),
		},
	}
	if pitr {
		tp.PointInTimeRecoverySpecification.RecoveryPeriodInDays = jsii.Number(days)
	}
	if props.EncryptionKey != nil {
		tp.Encryption = awsdynamodb.TableEncryption_CUSTOMER_MANAGED
		tp.EncryptionKey = props.EncryptionKey
	} else {
		tp.Encryption = awsdynamodb.TableEncryption_AWS_MANAGED
	}
	// The template keeps only what is set: a table with every default
	// synthesizes as it did before these options existed.
	if props.TableClass != "" {
		tp.TableClass = props.TableClass
	}
	if props.ResourcePolicy != nil {
		tp.ResourcePolicy = props.ResourcePolicy
	}
	maxRead, maxWrite := optionalNumber(props.MaxReadRequestUnits), optionalNumber(props.MaxWriteRequestUnits)
	tp.MaxReadRequestUnits, tp.MaxWriteRequestUnits = maxRead, maxWrite
	var warm *awsdynamodb.WarmThroughput
	if w := props.WarmThroughput; w != nil {
		warm = &awsdynamodb.WarmThroughput{
			ReadUnitsPerSecond:  optionalNumber(w.ReadUnitsPerSecond),
			WriteUnitsPerSecond: optionalNumber(w.WriteUnitsPerSecond),
		}
		tp.WarmThroughput = warm
	}
	if sc.TTLAttribute != "" {
		tp.TimeToLiveAttribute = jsii.String(sc.TTLAttribute)
	}
	if sc.Stream != schema.StreamNone {
		tp.Stream = awsdynamodb.StreamViewType(sc.Stream)
	}
	var indexInsights *awsdynamodb.ContributorInsightsSpecification
	if props.ContributorInsights != nil && *props.ContributorInsights {
		tp.ContributorInsightsSpecification = &awsdynamodb.ContributorInsightsSpecification{Enabled: jsii.Bool(true), Mode: props.ContributorInsightsMode}
		if props.ContributorInsightsOnIndexes != nil && *props.ContributorInsightsOnIndexes {
			indexInsights = tp.ContributorInsightsSpecification
		}
	}
	read, write := props.ReadScaling.withDefaults(), props.WriteScaling.withDefaults()
	if billing == Provisioned {
		tp.BillingMode = awsdynamodb.BillingMode_PROVISIONED
		tp.ReadCapacity = jsii.Number(read.MinCapacity)
		tp.WriteCapacity = jsii.Number(write.MinCapacity)
	} else {
		tp.BillingMode = awsdynamodb.BillingMode_PAY_PER_REQUEST
	}
	res := awsdynamodb.NewTable(self, jsii.String("Resource"), tp)
	tablecore.InitAccessors(t.Accessors, res, sc, props.EncryptionKey)
	tablecore.SetResource(t, res, string(billing))

	for _, ix := range sc.GlobalIndexes {
		p := ix.EffectiveProjection()
		gp := &awsdynamodb.GlobalSecondaryIndexProps{
			IndexName:                        jsii.String(ix.Name),
			PartitionKey:                     l2Attr(&ix.PartitionKey),
			SortKey:                          l2Attr(ix.SortKey),
			ProjectionType:                   awsdynamodb.ProjectionType(p.Type),
			ContributorInsightsSpecification: indexInsights,
			// Each GSI has its own cap and warm throughput; the table's
			// apply to every one of them.
			MaxReadRequestUnits:  maxRead,
			MaxWriteRequestUnits: maxWrite,
			WarmThroughput:       warm,
		}
		if len(p.NonKeyAttributes) > 0 {
			gp.NonKeyAttributes = jsii.Strings(p.NonKeyAttributes...)
		}
		if billing == Provisioned {
			gp.ReadCapacity = jsii.Number(read.MinCapacity)
			gp.WriteCapacity = jsii.Number(write.MinCapacity)
		}
		res.AddGlobalSecondaryIndex(gp)
	}

	if billing == Provisioned {
		scale := func(target awsdynamodb.IScalableTableAttribute, s Scaling) {
			target.ScaleOnUtilization(&awsdynamodb.UtilizationScalingProps{
				TargetUtilizationPercent: jsii.Number(s.TargetUtilizationPercent),
			})
		}
		enable := func(s Scaling) *awsdynamodb.EnableScalingProps {
			return &awsdynamodb.EnableScalingProps{MinCapacity: jsii.Number(s.MinCapacity), MaxCapacity: jsii.Number(s.MaxCapacity)}
		}
		scale(res.AutoScaleReadCapacity(enable(read)), read)
		scale(res.AutoScaleWriteCapacity(enable(write)), write)
		for _, ix := range sc.GlobalIndexes {
			scale(res.AutoScaleGlobalSecondaryIndexReadCapacity(jsii.String(ix.Name), enable(read)), read)
			scale(res.AutoScaleGlobalSecondaryIndexWriteCapacity(jsii.String(ix.Name), enable(write)), write)
		}
	}
	return res
}

// optionalNumber returns nil for 0 (unset), so the template leaves the
// property out.
func optionalNumber(v float64) *float64 {
	if v == 0 {
		return nil
	}
	return jsii.Number(v)
}

func l2Attr(a *schema.Attribute) *awsdynamodb.Attribute {
	if a == nil {
		return nil
	}
	var typ awsdynamodb.AttributeType
	switch a.Type {
	case schema.Number:
		typ = awsdynamodb.AttributeType_NUMBER
	case schema.Binary:
		typ = awsdynamodb.AttributeType_BINARY
	default:
		typ = awsdynamodb.AttributeType_STRING
	}
	return &awsdynamodb.Attribute{Name: jsii.String(a.Name), Type: typ}
}
