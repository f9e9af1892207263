// Package backoff is the one retry-delay helper of the runtime: exponential
// delays with jitter, and a sleep that ends early with its context. The
// store uses it between BatchGetItem rounds and idempotency re-reads, the
// stream consumer between SQS SendMessageBatch rounds.
package backoff

import (
	"context"
	"math/rand/v2"
	"time"
)

// MaxDoublings caps the growth: attempt 5 and later wait about base<<5.
const MaxDoublings = 5

// Delay returns how long to wait before retry attempt (0 for the first
// retry) with the given base: d = base << min(attempt, MaxDoublings),
// with "equal jitter", a uniform value in [d/2, d], so that concurrent
// callers that failed together do not retry together. A negative attempt
// counts as 0.
func Delay(base time.Duration, attempt int) time.Duration {
	d := base << min(max(attempt, 0), MaxDoublings)
	return d/2 + rand.N(d/2+1)
}

// Sleep waits d, or less when ctx ends first; it then returns ctx.Err().
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
