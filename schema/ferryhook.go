package schema

// Tables of Ferryhook, the webhook relay (seed 004): single-table designs
// with generic key attributes (PK, SK, GSIn PK/SK).

// Index names of the Ferryhook tables.
const (
	FerryhookGSI1 = "GSI1"
	FerryhookGSI2 = "GSI2"
	FerryhookGSI3 = "GSI3"
	// FerryhookTTLAttribute is the events table's TTL attribute (epoch seconds).
	FerryhookTTLAttribute = "expiresAt"
)

// FerryhookMain is ferryhook-main: users, sources, connections and API keys
// under PK/SK; GSI1 email lookup, GSI2 API-key-hash lookup, GSI3 source
// lookup, each projecting ALL (the seed does not say; every lookup needs the
// whole item).
func FerryhookMain() Table {
	return Table{
		Name:         "ferryhook-main",
		PartitionKey: S("PK"),
		SortKey:      Ptr(S("SK")),
		GlobalIndexes: []Index{
			{Name: FerryhookGSI1, PartitionKey: S("GSI1PK"), SortKey: Ptr(S("GSI1SK")), Projection: All(), Sparse: true},
			{Name: FerryhookGSI2, PartitionKey: S("GSI2PK"), SortKey: Ptr(S("GSI2SK")), Projection: All(), Sparse: true},
			{Name: FerryhookGSI3, PartitionKey: S("GSI3PK"), SortKey: Ptr(S("GSI3SK")), Projection: All(), Sparse: true},
		},
	}
}

// FerryhookEvents is ferryhook-events: events and delivery attempts under
// PK/SK, GSI1 event-by-id lookup, TTL on expiresAt. GSI1 projects KEYS_ONLY
// (the seed does not say): an event's headers and body reach 256 KB, and
// projecting ALL would store and bill every body twice; a lookup by id
// queries GSI1 for the keys, then reads the item with GetItem.
func FerryhookEvents() Table {
	return Table{
		Name:         "ferryhook-events",
		PartitionKey: S("PK"),
		SortKey:      Ptr(S("SK")),
		GlobalIndexes: []Index{
			{Name: FerryhookGSI1, PartitionKey: S("GSI1PK"), SortKey: Ptr(S("GSI1SK")), Projection: KeysOnly(), Sparse: true},
		},
		TTLAttribute: FerryhookTTLAttribute,
	}
}
