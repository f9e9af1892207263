package schema_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/schema"
)

func TestAPIKeysTable(t *testing.T) {
	tbl := schema.APIKeys()
	require.NoError(t, tbl.Validate())
	assert.Equal(t, schema.S(schema.AttrKeyHash), tbl.PartitionKey)
	assert.Nil(t, tbl.SortKey, "APIKeys().SortKey: want none")
	assert.Empty(t, tbl.TTLAttribute)
	assert.Equal(t, schema.StreamNone, tbl.Stream)

	ix, ok := tbl.Index(schema.TenantIndex)
	require.True(t, ok, "APIKeys() has no %s", schema.TenantIndex)
	assert.Equal(t, schema.S(schema.AttrTenantID), ix.PartitionKey)
	assert.Equal(t, schema.N(schema.AttrCreatedAt), *ix.SortKey)
	assert.Equal(t, schema.ProjectAll, ix.EffectiveProjection().Type)

	assert.Equal(t, []schema.Attribute{schema.N(schema.AttrCreatedAt), schema.S(schema.AttrKeyHash), schema.S(schema.AttrTenantID)}, tbl.KeyAttributes())

}

func TestAPIKeysFreshValue(t *testing.T) {
	a := schema.APIKeys()
	a.GlobalIndexes[0].Name = "changed"
	b := schema.APIKeys()
	assert.Equal(t, schema.TenantIndex, b.GlobalIndexes[0].Name, "APIKeys() shares state between calls")
}
