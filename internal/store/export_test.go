package store

import "time"

// WithClock sets the clock of the ttl filters (default time.Now), so the
// tests see items expire without waiting for the wall clock. Nothing
// outside the tests sets it.
func WithClock(now func() time.Time) Option { return func(s *Store) { s.now = now } }

// WithPageBytes sets the bound of an inbox page's event.WireSize (default
// event.MaxPageWireBytes), so the tests cut pages with small events.
func WithPageBytes(n int) Option { return func(s *Store) { s.pageBytes = n } }

// FirstRoundLimit is firstRoundLimit, for its table test.
var FirstRoundLimit = firstRoundLimit
