package event

// InboxQuery is one inbox query: a tenant's events, newest or oldest
// first, optionally filtered by status or event type, one page at a time.
type InboxQuery struct {
	Tenant string
	// Status filters by status; empty means all.
	Status Status
	// EventType filters by type; empty means all.
	EventType string
	Ascending bool
	// Limit is the page size (1-100).
	Limit int
	// After continues after this position (from a previous Page.Next).
	After *Position
}

// Position is where a page ended: the table sort key and, for index
// queries, the index sort key of the last evaluated item.
//
// A page merged from several shards of a tenant also carries Shards, one
// entry per shard read: an event id (the shard resumes after that key:
// the last event taken from it, or the last key it evaluated),
// ShardStart when the shard starts at its beginning, ShardDone when it has
// no more events. A shard beyond the list (the tenant reads more shards
// since) resumes after SortKey and IndexKey, the last event of the merged
// pages so far (empty before any), or at its beginning.
type Position struct {
	SortKey  string   `json:"s"`
	IndexKey string   `json:"i,omitempty"`
	Shards   []string `json:"p,omitempty"`
}

// ShardDone marks a shard with no more events in Position.Shards, and
// ShardStart one that starts at its beginning.
const (
	ShardDone  = "-"
	ShardStart = "+"
)

// Page is one page of events.
type Page struct {
	Events []Event
	// Next is nil on the last page.
	Next *Position
}
