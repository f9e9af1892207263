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
// entry per shard read: the id of the last event taken from that shard
// (the shard resumes after it), ShardDone when the shard has no more
// events, or "" when the shard resumes after SortKey and IndexKey, which
// are then the last event of the merged page (empty before any). A shard
// beyond the list (the tenant reads more shards since) resumes there too.
type Position struct {
	SortKey  string   `json:"s"`
	IndexKey string   `json:"i,omitempty"`
	Shards   []string `json:"p,omitempty"`
}

// ShardDone marks a shard with no more events in Position.Shards.
const ShardDone = "-"

// Page is one page of events.
type Page struct {
	Events []Event
	// Next is nil on the last page.
	Next *Position
}
