package schema

import "fmt"

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
	// AttrOriginRegion is the region whose API accepted the event, written
	// only when the service runs on a global table (its API has a writer
	// region). A stream consumer delivers a record only in the region it
	// names; an item without it counts as local (docs/multi-region.md).
	AttrOriginRegion = "origin_region"
	// AttrChangedBy is the token of the last status change made through
	// store.TransitionOnce (the API's PATCH of the event, the webhook
	// dispatcher's retrying and failed moves): the SDK's resend of that
	// write, its answer lost, recognises it as its own, and a late copy
	// of it is refused. The ack and Settle leave it as it is.
	AttrChangedBy = "chg_by"
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

// EventsProfile is the layout of the events table's indexes and items:
// what DynamoDB writes on every ingest and status change (see
// docs/capacity.md). It is chosen when the table is created: the indexes
// of a deployed table cannot change projection in place.
type EventsProfile string

// Events table profiles.
const (
	// ProfileSeed is seeds 000 and 001: EventTypeIndex and StatusIndex both
	// project ALL and every item carries both index keys. The default.
	ProfileSeed EventsProfile = "seed"
	// ProfileLean writes each event fewer times: no EventTypeIndex (its
	// key attribute is not written), and StatusIndex projects only the
	// keys, event_type and ttl and is sparse: a delivered event has no
	// status#timestamp, so an ack deletes one small index entry instead of
	// moving a whole copy of the event. Inbox pages read the index and
	// then the events (BatchGetItem); status=delivered and event-type
	// queries without a status read the table with a filter.
	ProfileLean EventsProfile = "lean"
)

// ParseEventsProfile returns the profile named s ("" is ProfileSeed), or
// an error naming the value and the choices.
func ParseEventsProfile(s string) (EventsProfile, error) {
	switch EventsProfile(s) {
	case "", ProfileSeed:
		return ProfileSeed, nil
	case ProfileLean:
		return ProfileLean, nil
	}
	return "", fmt.Errorf("events table profile %q is not known: use %q (the default) or %q", s, ProfileSeed, ProfileLean)
}

// EventsFor returns the events table of profile p: Events for
// ProfileSeed (and ""), the lean layout for ProfileLean (named
// "events-lean" in the catalog). It panics on any
// other value (check it with ParseEventsProfile).
func EventsFor(p EventsProfile) Table {
	t := Events()
	switch p {
	case "", ProfileSeed:
	case ProfileLean:
		t.Name = "events-lean"
		t.GlobalIndexes = []Index{
			{Name: StatusIndex, PartitionKey: S(AttrUserID), SortKey: Ptr(S(AttrStatusTS)),
				Projection: Include(AttrEventType, AttrTTL), Sparse: true},
		}
	default:
		panic(fmt.Sprintf("schema.EventsFor: unknown profile %q", p))
	}
	return t
}
