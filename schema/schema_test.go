package schema

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestEventsSchemaIsValid(t *testing.T) {
	require.NoError(t, Events().Validate())
}

func TestEventsReturnsFreshValue(t *testing.T) {
	a := Events()
	a.GlobalIndexes[0].Name = "changed"
	assert.Equal(t, EventTypeIndex, Events().GlobalIndexes[0].Name)
}

func TestValidateRejects(t *testing.T) {
	manyIndexes := Events()
	manyIndexes.GlobalIndexes = nil
	for i := 0; i < 21; i++ {
		manyIndexes.GlobalIndexes = append(manyIndexes.GlobalIndexes, Index{Name: fmt.Sprintf("Index%02d", i), PartitionKey: S("user_id")})
	}
	tests := []struct {
		name   string
		mutate func(*Table)
		want   string
	}{
		{"empty table name", func(t *Table) { t.Name = " " }, "table name is empty"},
		{"empty partition key", func(t *Table) { t.PartitionKey.Name = "" }, "partition key of table \"events\" has an empty name"},
		{"bad key type", func(t *Table) { t.PartitionKey.Type = "SS" }, `has type "SS": use schema.String, schema.Number or schema.Binary`},
		{"long key name", func(t *Table) { t.PartitionKey.Name = strings.Repeat("k", 256) }, "is 256 bytes: key attribute names are at most 255 bytes"},
		{"sort key equals partition key", func(t *Table) { t.SortKey = Ptr(S("user_id")) }, `sort key "user_id" of table "events" is also its partition key`},
		{"more than 20 GSIs", func(t *Table) { *t = manyIndexes }, "has 21 global secondary indexes: DynamoDB allows at most 20, remove 1"},
		{"duplicate index names", func(t *Table) { t.GlobalIndexes[1].Name = EventTypeIndex }, `index name "EventTypeIndex" is used twice`},
		{"short index name", func(t *Table) { t.GlobalIndexes[0].Name = "ix" }, `index name "ix" of table "events" is 2 characters: index names are 3-255 characters`},
		{"bad index name characters", func(t *Table) { t.GlobalIndexes[0].Name = "by type" }, "has characters DynamoDB rejects"},
		{"conflicting attribute types", func(t *Table) { t.GlobalIndexes[0].SortKey = Ptr(N(AttrTimestampEventID)) }, `attribute "timestamp#event_id" of table "events" is declared both S and N`},
		{"include without attributes", func(t *Table) { t.GlobalIndexes[0].Projection = Include() }, "has projection INCLUDE with no attributes"},
		{"non-key attributes with ALL", func(t *Table) {
			t.GlobalIndexes[0].Projection = Projection{Type: ProjectAll, NonKeyAttributes: []string{"a"}}
		}, "lists non-key attributes with projection ALL"},
		{"duplicate projected attribute", func(t *Table) { t.GlobalIndexes[0].Projection = Include("a", "a") }, `projects attribute "a" twice or empty`},
		{"unknown projection", func(t *Table) { t.GlobalIndexes[0].Projection = Projection{Type: "SOME"} }, `has projection type "SOME"`},
		{"more than 100 projected attributes", func(t *Table) {
			var attrs []string
			for i := 0; i < 101; i++ {
				attrs = append(attrs, fmt.Sprintf("a%d", i))
			}
			t.GlobalIndexes[0].Projection = Include(attrs...)
		}, "projects 101 non-key attributes across its indexes: DynamoDB allows at most 100"},
		{"TTL on the partition key", func(t *Table) { t.TTLAttribute = AttrUserID }, `TTL attribute "user_id" of table "events" is also a primary key attribute`},
		{"TTL on the sort key", func(t *Table) { t.TTLAttribute = AttrTimestampEventID }, "is also a primary key attribute"},
		{"TTL on a string index key", func(t *Table) { t.TTLAttribute = AttrStatusTS }, `TTL attribute "status#timestamp" of table "events" is an index key of type S`},
		{"unknown stream view", func(t *Table) { t.Stream = "NEW" }, `stream view "NEW" of table "events" is unknown`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tab := Events()
			tt.mutate(&tab)
			err := tab.Validate()
			require.Error(t, err, "Validate() = nil, want an error containing %q", tt.want)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

func TestValidateReportsEveryProblem(t *testing.T) {
	tab := Events()
	tab.Name = ""
	tab.TTLAttribute = AttrUserID
	tab.Stream = "X"
	err := tab.Validate()
	require.Error(t, err)
	for _, want := range []string{"table name is empty", "is also a primary key attribute", `stream view "X"`} {
		assert.Contains(t, err.Error(), want)
	}
}

func TestValidateAcceptsNumberTTLIndexKey(t *testing.T) {
	tab := Table{Name: "t", PartitionKey: S("pk"), TTLAttribute: "exp",
		GlobalIndexes: []Index{{Name: "ByExpiry", PartitionKey: S("kind"), SortKey: Ptr(N("exp"))}}}
	assert.NoError(t, tab.Validate())
}

func TestKeyAttributes(t *testing.T) {
	got := Events().KeyAttributes()
	want := []Attribute{S(AttrEventTypeTS), S(AttrStatusTS), S(AttrTimestampEventID), S(AttrUserID)}
	assert.Equal(t, want, got)
}

func TestCatalogTablesAreValidAndUniquelyNamed(t *testing.T) {
	seen := map[string]bool{}
	for _, tab := range Catalog() {
		assert.NoError(t, tab.Validate(), "table %s", tab.Name)
		assert.False(t, seen[tab.Name], "table name %s twice in the catalog", tab.Name)
		seen[tab.Name] = true
	}
}

func TestEventsProfiles(t *testing.T) {
	for _, in := range []string{"", "seed"} {
		p, err := ParseEventsProfile(in)
		require.NoError(t, err)
		require.Equal(t, ProfileSeed, p)
	}
	p, err := ParseEventsProfile("lean")
	require.NoError(t, err)
	require.Equal(t, ProfileLean, p)
	_, err = ParseEventsProfile("Lean")
	require.ErrorContains(t, err, `profile "Lean" is not known: use "seed" (the default) or "lean"`)

	require.Equal(t, Events(), EventsFor(ProfileSeed))
	require.Equal(t, Events(), EventsFor(""))
	lean := EventsFor(ProfileLean)
	require.NoError(t, lean.Validate())
	require.Len(t, lean.GlobalIndexes, 1)
	idx := lean.GlobalIndexes[0]
	require.Equal(t, StatusIndex, idx.Name)
	require.Equal(t, AttrStatusTS, idx.SortKey.Name)
	require.Equal(t, Include(AttrEventType, AttrTTL), idx.Projection)
	require.True(t, idx.Sparse)
	// The rest of the table is the seed's.
	require.Equal(t, "events-lean", lean.Name)
	lean.Name, lean.GlobalIndexes = Events().Name, Events().GlobalIndexes
	require.Equal(t, Events(), lean)
	require.Panics(t, func() { EventsFor("other") })
}
