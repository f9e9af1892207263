// Package dynamotable turns a schema.Table into an AWS::DynamoDB::Table with
// safe defaults: on-demand billing (or provisioned with auto scaling on the
// table and every index), point-in-time recovery for 35 days, encryption at
// rest, deletion protection, RETAIN on removal and a generated name.
//
// It builds on the aws-cdk-go L2 awsdynamodb.Table (not TableV2): the seed's
// design is Table's shape, with Application Auto Scaling targets, and
// cdk-nag's DynamoDB rules inspect AWS::DynamoDB::Table only.
package dynamotable

import (
	"fmt"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/triggers-dev/triggers/constructs/internal/tablegrant"
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
	// GrantReadData lets grantee read items: ReadDataActions on the table
	// and on every GSI of its schema (their ARNs, not a wildcard), plus
	// kms:Decrypt and kms:DescribeKey on a customer-managed key.
	GrantReadData(grantee awsiam.IGrantable) awsiam.Grant
	// GrantReadDataOnIndexes lets grantee query and scan the named GSIs
	// only: IndexReadActions on their ARNs (not on the table). It panics on
	// a name the schema does not have.
	GrantReadDataOnIndexes(grantee awsiam.IGrantable, indexNames ...string) awsiam.Grant
	// GrantWriteData lets grantee write items: WriteDataActions on the
	// table, plus the KMS actions for writing on a customer-managed key.
	GrantWriteData(grantee awsiam.IGrantable) awsiam.Grant
	// GrantReadWriteData is GrantReadData and GrantWriteData in one
	// statement: ReadWriteDataActions on the table and every GSI.
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
// "Resource", is the awsdynamodb.Table.
type Table struct {
	constructs.Construct
	*Core
}

// Core holds a built table's state and methods. Table embeds it, and so do
// constructs that extend Table (embed constructs.Construct and *Core, then
// call NewTable_Override). Only the outermost struct may embed
// constructs.Construct: jsii registers it with its embedded fields.
type Core struct {
	*Accessors
	resource awsdynamodb.Table
	billing  Billing
}

// Accessors implements the ITable methods on top of an L2 table; Table and
// Imported embed it. It is exported only because jsii requires embedded
// fields of a construct to be exported.
type Accessors struct {
	l2     awsdynamodb.ITable
	schema schema.Table
	key    awskms.IKey
}

// NewTable creates a table from props.Schema. It panics with an error naming
// every bad prop and its fix when props are invalid (see ValidateProps).
func NewTable(scope constructs.Construct, id *string, props *TableProps) *Table {
	t := &Table{Core: &Core{}}
	NewTable_Override(t, t.Core, scope, id, props)
	return t
}

// NewTable_Override builds the table into t, registering self (the struct
// that embeds t) as the construct. It lets other constructs extend Table and
// still be used as a scope, with Tags_Of, and wherever jsii expects a
// construct.
func NewTable_Override(self constructs.Construct, t *Core, scope constructs.Construct, id *string, props *TableProps) {
	if err := ValidateProps(props); err != nil {
		panic(fmt.Errorf("dynamotable %q: invalid props:\n%w", deref(id), err))
	}
	sc := *props.Schema
	t.Accessors = &Accessors{schema: sc, key: props.EncryptionKey}
	constructs.NewConstruct_Override(self, scope, id)
	t.billing = props.Billing
	if t.billing == "" {
		t.billing = OnDemand
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
	if sc.TTLAttribute != "" {
		tp.TimeToLiveAttribute = jsii.String(sc.TTLAttribute)
	}
	if sc.Stream != schema.StreamNone {
		tp.Stream = awsdynamodb.StreamViewType(sc.Stream)
	}
	if props.ContributorInsights != nil && *props.ContributorInsights {
		tp.ContributorInsightsSpecification = &awsdynamodb.ContributorInsightsSpecification{Enabled: jsii.Bool(true)}
	}
	read, write := props.ReadScaling.withDefaults(), props.WriteScaling.withDefaults()
	if t.billing == Provisioned {
		tp.BillingMode = awsdynamodb.BillingMode_PROVISIONED
		tp.ReadCapacity = jsii.Number(read.MinCapacity)
		tp.WriteCapacity = jsii.Number(write.MinCapacity)
	} else {
		tp.BillingMode = awsdynamodb.BillingMode_PAY_PER_REQUEST
	}
	res := awsdynamodb.NewTable(self, jsii.String("Resource"), tp)
	t.resource = res
	t.l2 = res

	for _, ix := range sc.GlobalIndexes {
		p := ix.EffectiveProjection()
		gp := &awsdynamodb.GlobalSecondaryIndexProps{
			IndexName:      jsii.String(ix.Name),
			PartitionKey:   l2Attr(&ix.PartitionKey),
			SortKey:        l2Attr(ix.SortKey),
			ProjectionType: awsdynamodb.ProjectionType(p.Type),
		}
		if len(p.NonKeyAttributes) > 0 {
			gp.NonKeyAttributes = jsii.Strings(p.NonKeyAttributes...)
		}
		if t.billing == Provisioned {
			gp.ReadCapacity = jsii.Number(read.MinCapacity)
			gp.WriteCapacity = jsii.Number(write.MinCapacity)
		}
		res.AddGlobalSecondaryIndex(gp)
	}

	if t.billing == Provisioned {
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

	ann := awscdk.Annotations_Of(self)
	for _, w := range SchemaWarnings(sc) {
		ann.AddWarningV2(jsii.String(w.ID), jsii.String(w.Message))
	}
	if !pitr {
		ann.AddWarningV2(jsii.String("triggers:pitr-off"), jsii.String("point-in-time recovery is off: the table cannot be restored after a bad write or delete; remove PointInTimeRecovery: false unless the data is disposable"))
	}
	if props.DeletionProtection != nil && !*props.DeletionProtection {
		ann.AddWarningV2(jsii.String("triggers:deletion-protection-off"), jsii.String("deletion protection is off: one API call can delete the table and its data"))
	}
	if removal == awscdk.RemovalPolicy_DESTROY {
		ann.AddWarningV2(jsii.String("triggers:removal-destroy"), jsii.String("removal policy DESTROY deletes the table and its data when it leaves the stack; use RETAIN (the default) for real data"))
		if props.DeletionProtection == nil || *props.DeletionProtection {
			ann.AddWarningV2(jsii.String("triggers:destroy-with-deletion-protection"), jsii.String("removal policy DESTROY with deletion protection on: deleting the stack fails on this table; set DeletionProtection: jsii.Bool(false) too, or keep RETAIN"))
		}
	}
}

// L2 returns the underlying awsdynamodb.Table with its full API.
func (t *Core) L2() awsdynamodb.Table { return t.resource }

// Billing returns the billing mode in force.
func (t *Core) Billing() Billing { return t.billing }

// CfnTable returns the AWS::DynamoDB::Table resource, for escape-hatch overrides.
func (t *Core) CfnTable() awsdynamodb.CfnTable {
	return t.resource.Node().DefaultChild().(awsdynamodb.CfnTable)
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

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// Resource returns the aws-cdk-go L2 table.
func (b *Accessors) Resource() awsdynamodb.ITable { return b.l2 }

// Schema returns the table's description.
func (b *Accessors) Schema() schema.Table       { return b.schema }
func (b *Accessors) TableName() *string         { return b.l2.TableName() }
func (b *Accessors) TableArn() *string          { return b.l2.TableArn() }
func (b *Accessors) TableStreamArn() *string    { return b.l2.TableStreamArn() }
func (b *Accessors) EncryptionKey() awskms.IKey { return b.key }

func (b *Accessors) TableIndexArn(indexName string) *string {
	if _, ok := b.schema.Index(indexName); !ok {
		panic(fmt.Errorf("table %q has no index %q: use one of %s", b.schema.Name, indexName, strings.Join(b.indexNames(), ", ")))
	}
	return jsii.String(*b.l2.TableArn() + "/index/" + indexName)
}

func (b *Accessors) indexNames() []string {
	names := make([]string, 0, len(b.schema.GlobalIndexes))
	for _, ix := range b.schema.GlobalIndexes {
		names = append(names, ix.Name)
	}
	return names
}

// IAM actions behind the intent grants: aws-cdk's data actions without the
// stream ones (GrantStreamRead grants those).
var (
	// ReadDataActions read items (GrantReadData).
	ReadDataActions = []string{"dynamodb:BatchGetItem", "dynamodb:ConditionCheckItem", "dynamodb:DescribeTable", "dynamodb:GetItem", "dynamodb:Query", "dynamodb:Scan"}
	// IndexReadActions read a GSI (GrantReadDataOnIndexes).
	IndexReadActions = []string{"dynamodb:Query", "dynamodb:Scan"}
	// WriteDataActions write items (GrantWriteData).
	WriteDataActions = []string{"dynamodb:BatchWriteItem", "dynamodb:DeleteItem", "dynamodb:DescribeTable", "dynamodb:PutItem", "dynamodb:UpdateItem"}
	// ReadWriteDataActions are both (GrantReadWriteData).
	ReadWriteDataActions = []string{"dynamodb:BatchGetItem", "dynamodb:BatchWriteItem", "dynamodb:ConditionCheckItem", "dynamodb:DeleteItem", "dynamodb:DescribeTable", "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:Query", "dynamodb:Scan", "dynamodb:UpdateItem"}
)

func (b *Accessors) GrantReadData(grantee awsiam.IGrantable) awsiam.Grant {
	return tablegrant.Grant(b, grantee, tablegrant.On{Table: true, Indexes: b.indexNames()}, ReadDataActions...)
}

func (b *Accessors) GrantReadDataOnIndexes(grantee awsiam.IGrantable, indexNames ...string) awsiam.Grant {
	if len(indexNames) == 0 {
		panic(fmt.Errorf("table %q: GrantReadDataOnIndexes needs at least one index name: use one of %s, or GrantReadData for the table", b.schema.Name, strings.Join(b.indexNames(), ", ")))
	}
	return tablegrant.Grant(b, grantee, tablegrant.On{Indexes: indexNames}, IndexReadActions...)
}

func (b *Accessors) GrantWriteData(grantee awsiam.IGrantable) awsiam.Grant {
	return tablegrant.Grant(b, grantee, tablegrant.On{Table: true, Write: true}, WriteDataActions...)
}

func (b *Accessors) GrantReadWriteData(grantee awsiam.IGrantable) awsiam.Grant {
	return tablegrant.Grant(b, grantee, tablegrant.On{Table: true, Indexes: b.indexNames(), Write: true}, ReadWriteDataActions...)
}

func (b *Accessors) GrantStreamRead(grantee awsiam.IGrantable) awsiam.Grant {
	if b.schema.Stream == schema.StreamNone {
		panic(fmt.Errorf("table %q has no stream: set Stream in its schema (for example schema.StreamNewImage) before granting stream reads", b.schema.Name))
	}
	return b.l2.GrantStreamRead(grantee)
}

func (b *Accessors) Metric(metricName string, opts *awscloudwatch.MetricOptions) awscloudwatch.Metric {
	return b.l2.Metric(jsii.String(metricName), opts)
}

func (b *Accessors) MetricForIndex(indexName, metricName string, opts *awscloudwatch.MetricOptions) awscloudwatch.Metric {
	if _, ok := b.schema.Index(indexName); !ok {
		panic(fmt.Errorf("table %q has no index %q: use one of %s", b.schema.Name, indexName, strings.Join(b.indexNames(), ", ")))
	}
	o := awscloudwatch.MetricOptions{}
	if opts != nil {
		o = *opts
	}
	dims := map[string]*string{"TableName": b.l2.TableName(), "GlobalSecondaryIndexName": jsii.String(indexName)}
	if o.DimensionsMap != nil {
		for k, v := range *o.DimensionsMap {
			dims[k] = v
		}
	}
	o.DimensionsMap = &dims
	if o.Statistic == nil {
		o.Statistic = jsii.String("Sum")
	}
	return awscloudwatch.NewMetric(&awscloudwatch.MetricProps{
		Namespace: jsii.String("AWS/DynamoDB"), MetricName: jsii.String(metricName),
		DimensionsMap: o.DimensionsMap, Statistic: o.Statistic, Period: o.Period, Label: o.Label,
		Color: o.Color, Unit: o.Unit, Region: o.Region, Account: o.Account,
	})
}

func (b *Accessors) MetricSuccessfulRequestLatency(operation string, opts *awscloudwatch.MetricOptions) awscloudwatch.Metric {
	o := awscloudwatch.MetricOptions{}
	if opts != nil {
		o = *opts
	}
	dims := map[string]*string{"TableName": b.l2.TableName(), "Operation": jsii.String(operation)}
	o.DimensionsMap = &dims
	if o.Statistic == nil {
		o.Statistic = jsii.String("Average")
	}
	return b.l2.Metric(jsii.String("SuccessfulRequestLatency"), &o)
}

func (b *Accessors) sum(name string, opts *awscloudwatch.MetricOptions) awscloudwatch.Metric {
	o := awscloudwatch.MetricOptions{}
	if opts != nil {
		o = *opts
	}
	if o.Statistic == nil {
		o.Statistic = jsii.String("Sum")
	}
	return b.l2.Metric(jsii.String(name), &o)
}

func (b *Accessors) MetricReadThrottleEvents(opts *awscloudwatch.MetricOptions) awscloudwatch.Metric {
	return b.sum("ReadThrottleEvents", opts)
}

func (b *Accessors) MetricWriteThrottleEvents(opts *awscloudwatch.MetricOptions) awscloudwatch.Metric {
	return b.sum("WriteThrottleEvents", opts)
}

func (b *Accessors) MetricConsumedReadCapacityUnits(opts *awscloudwatch.MetricOptions) awscloudwatch.Metric {
	return b.sum("ConsumedReadCapacityUnits", opts)
}

func (b *Accessors) MetricConsumedWriteCapacityUnits(opts *awscloudwatch.MetricOptions) awscloudwatch.Metric {
	return b.sum("ConsumedWriteCapacityUnits", opts)
}
