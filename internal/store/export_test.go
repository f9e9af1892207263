package store

import "time"

// WithClock sets the clock of the ttl filters (default time.Now), so the
// tests see items expire without waiting for the wall clock. Nothing
// outside the tests sets it.
func WithClock(now func() time.Time) Option { return func(s *Store) { s.now = now } }

// FirstRoundLimit is firstRoundLimit, for its table test.
var FirstRoundLimit = firstRoundLimit
