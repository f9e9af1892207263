package schema

// Attribute names of the events table (seed 000). The store, the stream
// consumer and the constructs all take them from here.
const (
	AttrUserID           = "user_id"
	AttrTimestampEventID = "timestamp#event_id"
	AttrEventID          = "event_id"
	AttrEventType        = "event_type"
	AttrPayload          = "payload"
	AttrStatus           = "status"
	AttrTimestamp        = "timestamp"
	AttrTTL              = "ttl"
	AttrRetryCount       = "retry_count"
	AttrMetadata         = "metadata"
	AttrEventTypeTS      = "event_type#timestamp"
	AttrStatusTS         = "status#timestamp"
)

// Index names of the events table.
const (
	EventTypeIndex = "EventTypeIndex"
	StatusIndex    = "StatusIndex"
)

// Events returns the events table of seeds 000 and 001: partition key
// user_id, sort key timestamp#event_id, EventTypeIndex and StatusIndex (both
// projecting ALL), TTL on ttl and a NEW_AND_OLD_IMAGES stream. Each call
// returns a fresh value that the caller may modify.
//
// The seeds ask for NEW_IMAGE; the old image is what lets the archive
// (internal/archive) keep the events TTL deletes (story 001 AC3): see
// docs/seed-deviations.md. The delivery consumer reads NewImage either way.
func Events() Table {
	return Table{
		Name:         "events",
		PartitionKey: S(AttrUserID),
		SortKey:      Ptr(S(AttrTimestampEventID)),
		GlobalIndexes: []Index{
			{Name: EventTypeIndex, PartitionKey: S(AttrUserID), SortKey: Ptr(S(AttrEventTypeTS)), Projection: All()},
			{Name: StatusIndex, PartitionKey: S(AttrUserID), SortKey: Ptr(S(AttrStatusTS)), Projection: All()},
		},
		TTLAttribute: AttrTTL,
		Stream:       StreamNewAndOldImages,
	}
}
