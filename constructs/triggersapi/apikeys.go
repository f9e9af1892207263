package triggersapi

import (
	"slices"

	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/constructs-go/constructs/v10"

	"github.com/triggers-dev/triggers/constructs/dynamotable"
	"github.com/triggers-dev/triggers/constructs/internal/tablecore"
	"github.com/triggers-dev/triggers/constructs/internal/tablegrant"
	"github.com/triggers-dev/triggers/schema"
)

// AuthorizeActions returns what the authorizer does with the API-keys
// table: one GetItem by key hash. It returns a new slice each call.
func AuthorizeActions() []string { return slices.Clone(authorizeActions) }

var authorizeActions = []string{"dynamodb:GetItem"}

// IApiKeysTable is the API-keys table (schema.APIKeys(): key hash ->
// tenant), made here or imported.
type IApiKeysTable interface {
	dynamotable.ITable
	// GrantAuthorize lets grantee look API keys up, as the authorizer
	// does: exactly AuthorizeActions() on the table (no index, no write).
	GrantAuthorize(grantee awsiam.IGrantable) awsiam.Grant
}

// ApiKeysTableProps configures an ApiKeysTable; the schema is fixed
// (schema.APIKeys()). A nil props takes every default (see
// dynamotable.TableOptions: on-demand, PITR, RETAIN, deletion protection).
type ApiKeysTableProps struct {
	dynamotable.TableOptions
}

// ApiKeysTable is the table of API keys, stored as SHA-256 hashes with
// their tenant and status. TriggersApi creates one with id "ApiKeys" unless
// given one; the stateful stack creates its own (stacks.TriggersDataStack).
// Its main child, with id "Resource", is the awsdynamodb.Table, so the
// table's logical id is the one a dynamotable.Table with the same scope and
// id has.
type ApiKeysTable struct {
	constructs.Construct
	*tablecore.Core
}

// NewApiKeysTable creates the API-keys table.
func NewApiKeysTable(scope constructs.Construct, id *string, props *ApiKeysTableProps) *ApiKeysTable {
	if props == nil {
		props = &ApiKeysTableProps{}
	}
	sc := schema.APIKeys()
	t := &ApiKeysTable{Core: &tablecore.Core{}}
	dynamotable.BuildInto(t, t.Core, scope, id, &dynamotable.TableProps{Schema: &sc, TableOptions: props.TableOptions})
	return t
}

// Billing returns the billing mode in force.
func (t *ApiKeysTable) Billing() dynamotable.Billing { return dynamotable.Billing(t.BillingMode()) }

// AddStreamConsumer attaches fn to the table's stream (the API-keys schema
// has none: it panics saying so).
func (t *ApiKeysTable) AddStreamConsumer(fn awslambda.IFunction, opts *dynamotable.StreamConsumerOptions) *dynamotable.StreamConsumer {
	return dynamotable.AddStreamConsumer(t, fn, opts)
}

// GrantAuthorize lets grantee look API keys up (AuthorizeActions()).
func (t *ApiKeysTable) GrantAuthorize(grantee awsiam.IGrantable) awsiam.Grant {
	return grantAuthorize(t, grantee)
}

// ApiKeysTableAttributes identify an API-keys table made elsewhere.
type ApiKeysTableAttributes struct {
	// TableName is the physical name. Give TableName or TableArn.
	TableName *string
	// TableArn is the table ARN. Give TableName or TableArn.
	TableArn *string
	// EncryptionKey is the table's customer-managed key, if any.
	//
	// Default: AWS-managed encryption (no KMS grants).
	EncryptionKey awskms.IKey
}

type importedApiKeys struct {
	constructs.Construct
	*tablecore.Accessors
}

func (t *importedApiKeys) AddStreamConsumer(fn awslambda.IFunction, opts *dynamotable.StreamConsumerOptions) *dynamotable.StreamConsumer {
	return dynamotable.AddStreamConsumer(t, fn, opts)
}

func (t *importedApiKeys) GrantAuthorize(grantee awsiam.IGrantable) awsiam.Grant {
	return grantAuthorize(t, grantee)
}

// FromApiKeysTableAttributes imports an API-keys table made elsewhere.
func FromApiKeysTableAttributes(scope constructs.Construct, id *string, attrs *ApiKeysTableAttributes) IApiKeysTable {
	if attrs == nil {
		attrs = &ApiKeysTableAttributes{}
	}
	sc := schema.APIKeys()
	t := &importedApiKeys{Accessors: &tablecore.Accessors{}}
	dynamotable.ImportInto(t, t.Accessors, scope, id, &dynamotable.TableAttributes{
		Schema: &sc, TableName: attrs.TableName, TableArn: attrs.TableArn, EncryptionKey: attrs.EncryptionKey,
	})
	return t
}

func grantAuthorize(t dynamotable.ITable, grantee awsiam.IGrantable) awsiam.Grant {
	return tablegrant.Grant(t, grantee, tablegrant.On{Table: true}, authorizeActions...)
}
