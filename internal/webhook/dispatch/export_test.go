package dispatch

import (
	"context"
	"time"
)

// CircuitHint is the end of subID's circuit as this dispatcher last
// opened or saw it (the in-memory hint that makes gate read the
// subscription again), for tests.
func CircuitHint(d *Dispatcher, tenant, subID string) time.Time {
	return d.circuits.until(tenant, subID)
}

// WakeSlotIn reports whether ctx carries a slow-lane slot a wake took
// for its attempt (wakeInLane), for tests.
func WakeSlotIn(ctx context.Context) bool {
	_, ok := ctx.Value(slotKey{}).(*heldSlot)
	return ok
}
