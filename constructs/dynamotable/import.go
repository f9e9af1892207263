package dynamotable

import (
	"fmt"

	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/triggers-dev/triggers/constructs/internal/cdkutil"
	"github.com/triggers-dev/triggers/constructs/internal/tablecore"
	"github.com/triggers-dev/triggers/schema"
)

// TableAttributes identify a table made elsewhere (another stack or app).
type TableAttributes struct {
	// Schema describes the table. Required: grants and metrics take index
	// names from it.
	Schema *schema.Table
	// TableName is the physical name. Give TableName or TableArn.
	TableName *string
	// TableArn is the table ARN. Give TableName or TableArn.
	TableArn *string
	// TableStreamArn is the stream ARN; needed to read the stream.
	//
	// Default: no stream access.
	TableStreamArn *string
	// EncryptionKey is the table's customer-managed key, if any.
	//
	// Default: AWS-managed encryption (no KMS grants).
	EncryptionKey awskms.IKey
}

// imported is a table made elsewhere, seen through its schema.
type imported struct {
	constructs.Construct
	*tablecore.Accessors
}

func (t *imported) AddStreamConsumer(fn awslambda.IFunction, opts *StreamConsumerOptions) *StreamConsumer {
	return AddStreamConsumer(t, fn, opts)
}

// FromTableAttributes imports a table made elsewhere as an ITable.
func FromTableAttributes(scope constructs.Construct, id *string, attrs *TableAttributes) ITable {
	t := &imported{Accessors: &tablecore.Accessors{}}
	importTable(t, t.Accessors, scope, id, attrs)
	return t
}

// ImportInto imports a table made elsewhere as FromTableAttributes does
// into accessors, new ones that self embeds, with self as the construct at
// scope/id: the import of this module's tables with types of their own
// (eventstore.FromEventsTableAttributes,
// triggersapi.FromApiKeysTableAttributes). Accessors already set panic.
// Code outside this module cannot make accessors (package tablecore is
// internal): it uses FromTableAttributes.
func ImportInto(self constructs.Construct, accessors *tablecore.Accessors, scope constructs.Construct, id *string, attrs *TableAttributes) {
	if accessors == nil || accessors.Resource() != nil {
		panic(fmt.Errorf("dynamotable %q: ImportInto takes new accessors (&tablecore.Accessors{}), not nil or ones already set", cdkutil.Deref(id)))
	}
	importTable(self, accessors, scope, id, attrs)
}

// importTable imports a table into t, registering self (the struct that
// embeds t) as the construct, so that types extending it can be used as a
// scope.
func importTable(self constructs.Construct, t *tablecore.Accessors, scope constructs.Construct, id *string, attrs *TableAttributes) {
	if attrs == nil || attrs.Schema == nil {
		panic(fmt.Errorf("dynamotable %q: attrs.Schema is required: pass the imported table's description", cdkutil.Deref(id)))
	}
	if attrs.TableName == nil && attrs.TableArn == nil {
		panic(fmt.Errorf("dynamotable %q: give attrs.TableName or attrs.TableArn to identify the imported table", cdkutil.Deref(id)))
	}
	if err := attrs.Schema.Validate(); err != nil {
		panic(fmt.Errorf("dynamotable %q: invalid schema:\n%w", cdkutil.Deref(id), err))
	}
	constructs.NewConstruct_Override(self, scope, id)
	names := make([]*string, 0, len(attrs.Schema.GlobalIndexes))
	for _, ix := range attrs.Schema.GlobalIndexes {
		names = append(names, jsii.String(ix.Name))
	}
	l2 := awsdynamodb.Table_FromTableAttributes(self, jsii.String("Resource"), &awsdynamodb.TableAttributes{
		TableName:      attrs.TableName,
		TableArn:       attrs.TableArn,
		TableStreamArn: attrs.TableStreamArn,
		EncryptionKey:  attrs.EncryptionKey,
		GlobalIndexes:  &names,
	})
	tablecore.InitAccessors(t, l2, *attrs.Schema, attrs.EncryptionKey)
}
