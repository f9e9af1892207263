package ddb_test

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/internal/ddb"
	"github.com/triggers-dev/triggers/schema"
)

func TestCreateTableInput(t *testing.T) {
	in := ddb.CreateTableInput(schema.Events(), "events-test")
	assert.Equal(t, "events-test", aws.ToString(in.TableName))
	assert.Equal(t, types.BillingModePayPerRequest, in.BillingMode)
	assert.Equal(t, []types.KeySchemaElement{
		{AttributeName: aws.String(schema.AttrUserID), KeyType: types.KeyTypeHash},
		{AttributeName: aws.String(schema.AttrTimestampEventID), KeyType: types.KeyTypeRange},
	}, in.KeySchema)
	require.Len(t, in.GlobalSecondaryIndexes, 2)
	assert.Equal(t, schema.EventTypeIndex, aws.ToString(in.GlobalSecondaryIndexes[0].IndexName))
	assert.Equal(t, types.ProjectionTypeAll, in.GlobalSecondaryIndexes[1].Projection.ProjectionType)
	assert.Equal(t, types.StreamViewTypeNewAndOldImages, in.StreamSpecification.StreamViewType)
	assert.Len(t, in.AttributeDefinitions, 4)

	ttl := ddb.UpdateTimeToLiveInput(schema.Events(), "events-test")
	require.NotNil(t, ttl)
	assert.Equal(t, schema.AttrTTL, aws.ToString(ttl.TimeToLiveSpecification.AttributeName))
	assert.True(t, aws.ToBool(ttl.TimeToLiveSpecification.Enabled))

	noTTL := schema.Table{Name: "t", PartitionKey: schema.S("pk")}
	assert.Nil(t, ddb.UpdateTimeToLiveInput(noTTL, "t"))
	assert.Nil(t, ddb.CreateTableInput(noTTL, "t").StreamSpecification)

	inc := schema.Table{Name: "t", PartitionKey: schema.S("pk"), GlobalIndexes: []schema.Index{{Name: "ByX", PartitionKey: schema.N("x"), Projection: schema.Include("a", "b")}}}
	gsi := ddb.CreateTableInput(inc, "t").GlobalSecondaryIndexes[0]
	assert.Equal(t, types.ProjectionTypeInclude, gsi.Projection.ProjectionType)
	assert.Equal(t, []string{"a", "b"}, gsi.Projection.NonKeyAttributes)
	assert.Len(t, gsi.KeySchema, 1)
}

func TestCreateTableInputAPIKeys(t *testing.T) {
	tbl := schema.APIKeys()
	in := ddb.CreateTableInput(tbl, "keys-x")
	assert.Equal(t, "keys-x", aws.ToString(in.TableName))
	assert.Len(t, in.KeySchema, 1)
	assert.Len(t, in.GlobalSecondaryIndexes, 1)
	assert.Nil(t, in.StreamSpecification)
	assert.Nil(t, ddb.UpdateTimeToLiveInput(tbl, "keys-x"))
}
