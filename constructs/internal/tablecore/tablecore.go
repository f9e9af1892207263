// Package tablecore holds the state and the ITable methods shared by every
// table construct of this module (dynamotable.Table and its imports,
// eventstore.EventsTable, triggersapi.ApiKeysTable). The construct structs
// embed *Core or *Accessors: jsii needs a construct's embedded fields
// exported, and an exported field of a type from an internal package keeps
// them out of the public API. Package dynamotable builds each Core
// (dynamotable.BuildInto) and imports each table into its Accessors
// (dynamotable.ImportInto).
//
// The exported methods of Core and Accessors are promoted to the public
// construct types, so every one of them is public API: only ITable's
// methods and read-only accessors are methods. What sets their state
// (InitAccessors, SetResource) is a function of this package, which no
// code outside the module can call.
package tablecore

import (
	"fmt"
	"slices"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/jsii-runtime-go"

	"github.com/triggers-dev/triggers/constructs/internal/tablegrant"
	"github.com/triggers-dev/triggers/schema"
)

// Accessors implements the ITable methods on top of an L2 table.
type Accessors struct {
	l2     awsdynamodb.ITable
	schema schema.Table
	key    awskms.IKey
	// name and arn are the L2 table's tableName and tableArn, read through
	// jsii on first use and kept: both are fixed once the table exists (a
	// token or the imported name), and monitoring reads the name for every
	// metric it builds.
	name, arn *string
}

// InitAccessors sets what b's methods read. It keeps its own copy of sc,
// so later changes to the caller's schema do not reach the table.
func InitAccessors(b *Accessors, l2 awsdynamodb.ITable, sc schema.Table, key awskms.IKey) {
	b.l2, b.schema, b.key = l2, cloneSchema(sc), key
	b.name, b.arn = nil, nil
}

// cloneSchema returns a deep copy of t: nothing of the result shares
// memory with t.
func cloneSchema(t schema.Table) schema.Table {
	t.SortKey = cloneAttr(t.SortKey)
	t.GlobalIndexes = slices.Clone(t.GlobalIndexes)
	for i := range t.GlobalIndexes {
		ix := &t.GlobalIndexes[i]
		ix.SortKey = cloneAttr(ix.SortKey)
		ix.Projection.NonKeyAttributes = slices.Clone(ix.Projection.NonKeyAttributes)
	}
	return t
}

func cloneAttr(a *schema.Attribute) *schema.Attribute {
	if a == nil {
		return nil
	}
	c := *a
	return &c
}

// Core is a table built here: Accessors plus the L2 table (an
// awsdynamodb.Table, or an awsdynamodb.TableV2 for a global table), the
// billing mode and the replica regions.
type Core struct {
	*Accessors
	resource awsdynamodb.Table
	global   awsdynamodb.TableV2
	billing  string
	replicas []string
}

// SetResource records the built table in c.
func SetResource(c *Core, res awsdynamodb.Table, billing string) {
	c.resource, c.billing = res, billing
}

// SetGlobalResource records the built global table in c, with the regions
// of its replicas (the stack's region not included).
func SetGlobalResource(c *Core, res awsdynamodb.TableV2, billing string, replicaRegions []string) {
	c.global, c.billing, c.replicas = res, billing, slices.Clone(replicaRegions)
}

// L2 returns the underlying awsdynamodb.Table with its full API. A global
// table has none: it panics, naming L2V2.
func (c *Core) L2() awsdynamodb.Table {
	if c.global != nil {
		panic(fmt.Errorf("table %q is a global table (replicas in %s): it is an awsdynamodb.TableV2, use L2V2() and CfnGlobalTable()", c.schema.Name, strings.Join(c.replicas, ", ")))
	}
	return c.resource
}

// L2V2 returns the underlying awsdynamodb.TableV2 of a global table, or
// nil for a table without replicas (see L2).
func (c *Core) L2V2() awsdynamodb.TableV2 { return c.global }

// BillingMode returns the billing mode in force (PAY_PER_REQUEST or PROVISIONED).
func (c *Core) BillingMode() string { return c.billing }

// ReplicaRegions returns the regions of a global table's replicas, the
// stack's own region not included; nil for a table without replicas. It
// returns a new slice each call.
func (c *Core) ReplicaRegions() []string { return slices.Clone(c.replicas) }

// CfnTable returns the AWS::DynamoDB::Table resource, for escape-hatch
// overrides. A global table has none: it panics, naming CfnGlobalTable.
func (c *Core) CfnTable() awsdynamodb.CfnTable {
	return c.L2().Node().DefaultChild().(awsdynamodb.CfnTable)
}

// CfnGlobalTable returns a global table's AWS::DynamoDB::GlobalTable
// resource, for escape-hatch overrides; it panics on a table without
// replicas (use CfnTable).
func (c *Core) CfnGlobalTable() awsdynamodb.CfnGlobalTable {
	if c.global == nil {
		panic(fmt.Errorf("table %q has no replicas: it is an AWS::DynamoDB::Table, use CfnTable()", c.schema.Name))
	}
	return c.global.Node().DefaultChild().(awsdynamodb.CfnGlobalTable)
}

// IndexNames returns the schema's GSI names.
func (b *Accessors) IndexNames() []string { return b.indexNames() }

// Resource returns the aws-cdk-go L2 table.
func (b *Accessors) Resource() awsdynamodb.ITable { return b.l2 }

// Schema returns a copy of the table's description: changing it does not
// change the table.
func (b *Accessors) Schema() schema.Table { return cloneSchema(b.schema) }

func (b *Accessors) TableName() *string {
	if b.name == nil {
		b.name = b.l2.TableName()
	}
	return jsii.String(*b.name)
}

func (b *Accessors) TableArn() *string {
	if b.arn == nil {
		b.arn = b.l2.TableArn()
	}
	return jsii.String(*b.arn)
}

func (b *Accessors) TableStreamArn() *string    { return b.l2.TableStreamArn() }
func (b *Accessors) EncryptionKey() awskms.IKey { return b.key }

func (b *Accessors) TableIndexArn(indexName string) *string {
	if _, ok := b.schema.Index(indexName); !ok {
		panic(fmt.Errorf("table %q has no index %q: use one of %s", b.schema.Name, indexName, strings.Join(b.indexNames(), ", ")))
	}
	return jsii.String(*b.TableArn() + "/index/" + indexName)
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
	dims := map[string]*string{"TableName": b.TableName(), "GlobalSecondaryIndexName": jsii.String(indexName)}
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
	dims := map[string]*string{"TableName": b.TableName(), "Operation": jsii.String(operation)}
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
