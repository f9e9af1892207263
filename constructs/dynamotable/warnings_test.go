package dynamotable

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/triggers-dev/triggers/schema"
)

func TestSchemaWarnings(t *testing.T) {
	tests := []struct {
		name  string
		table schema.Table
		want  []string // warning ids
	}{
		{"events table is clean", schema.Events(), nil},
		{"api keys by hash are clean", schema.APIKeys(), nil},
		{"plain api key as key", schema.Table{Name: "k", PartitionKey: schema.S("api_key")}, []string{"triggers:secret-in-key"}},
		{"token in an index key", schema.Table{Name: "k", PartitionKey: schema.S("id"),
			GlobalIndexes: []schema.Index{{Name: "ByToken", PartitionKey: schema.S("session-token")}}}, []string{"triggers:secret-in-key"}},
		{"hashed secret is fine", schema.Table{Name: "k", PartitionKey: schema.S("api_key_hash")}, nil},
		{"keyId is not a secret", schema.Table{Name: "k", PartitionKey: schema.S("keyId")}, nil},
		{"status-partitioned index", schema.TicketingEvents(), []string{"triggers:low-cardinality-index-key"}},
		{"status as sort key is fine", schema.TicketingTickets(), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var ids []string
			for _, w := range SchemaWarnings(tt.table) {
				ids = append(ids, w.ID)
				assert.NotEmpty(t, w.Message)
			}
			assert.Equal(t, tt.want, ids, "SchemaWarnings(%s)", tt.table.Name)
		})
	}
}
