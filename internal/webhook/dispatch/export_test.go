package dispatch

import "time"

// CircuitHint is the end of subID's circuit as this dispatcher last
// opened or saw it (the in-memory hint that makes gate read the
// subscription again), for tests.
func CircuitHint(d *Dispatcher, tenant, subID string) time.Time {
	return d.circuits.until(tenant, subID)
}
