package ddb

import (
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/triggers-dev/triggers/schema"
)

// CreateTableInput returns the aws-sdk-go-v2 request that creates the table
// under the physical name tableName, on demand, as local development and
// tests do on DynamoDB Local. TTL is not part of CreateTable: apply
// UpdateTimeToLiveInput after the table is active.
func CreateTableInput(t schema.Table, tableName string) *dynamodb.CreateTableInput {
	in := &dynamodb.CreateTableInput{
		TableName:   aws.String(tableName),
		BillingMode: types.BillingModePayPerRequest,
		KeySchema:   keySchema(t.PartitionKey, t.SortKey),
	}
	for _, a := range t.KeyAttributes() {
		in.AttributeDefinitions = append(in.AttributeDefinitions, types.AttributeDefinition{
			AttributeName: aws.String(a.Name),
			AttributeType: types.ScalarAttributeType(a.Type),
		})
	}
	for _, ix := range t.GlobalIndexes {
		p := ix.EffectiveProjection()
		proj := &types.Projection{ProjectionType: types.ProjectionType(p.Type)}
		if len(p.NonKeyAttributes) > 0 {
			proj.NonKeyAttributes = append([]string(nil), p.NonKeyAttributes...)
		}
		in.GlobalSecondaryIndexes = append(in.GlobalSecondaryIndexes, types.GlobalSecondaryIndex{
			IndexName:  aws.String(ix.Name),
			KeySchema:  keySchema(ix.PartitionKey, ix.SortKey),
			Projection: proj,
		})
	}
	if t.Stream != schema.StreamNone {
		in.StreamSpecification = &types.StreamSpecification{
			StreamEnabled:  aws.Bool(true),
			StreamViewType: types.StreamViewType(t.Stream),
		}
	}
	return in
}

// UpdateTimeToLiveInput returns the request that enables TTL on the table,
// or nil when the schema has no TTL attribute.
func UpdateTimeToLiveInput(t schema.Table, tableName string) *dynamodb.UpdateTimeToLiveInput {
	if t.TTLAttribute == "" {
		return nil
	}
	return &dynamodb.UpdateTimeToLiveInput{
		TableName: aws.String(tableName),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{
			AttributeName: aws.String(t.TTLAttribute),
			Enabled:       aws.Bool(true),
		},
	}
}

func keySchema(pk schema.Attribute, sk *schema.Attribute) []types.KeySchemaElement {
	ks := []types.KeySchemaElement{{AttributeName: aws.String(pk.Name), KeyType: types.KeyTypeHash}}
	if sk != nil {
		ks = append(ks, types.KeySchemaElement{AttributeName: aws.String(sk.Name), KeyType: types.KeyTypeRange})
	}
	return ks
}
