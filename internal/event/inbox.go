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
type Position struct {
	SortKey  string `json:"s"`
	IndexKey string `json:"i,omitempty"`
}

// Page is one page of events.
type Page struct {
	Events []Event
	// Next is nil on the last page.
	Next *Position
}
