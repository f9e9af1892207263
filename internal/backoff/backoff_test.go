package backoff_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/triggers-dev/triggers/internal/backoff"
)

func TestDelayBounds(t *testing.T) {
	base := 10 * time.Millisecond
	for attempt := -1; attempt <= 9; attempt++ {
		d := base << min(max(attempt, 0), backoff.MaxDoublings)
		seen := map[time.Duration]bool{}
		for range 200 {
			got := backoff.Delay(base, attempt)
			assert.GreaterOrEqual(t, got, d/2, "attempt %d", attempt)
			assert.LessOrEqual(t, got, d, "attempt %d", attempt)
			seen[got] = true
		}
		assert.Greater(t, len(seen), 1, "attempt %d: the delay is jittered", attempt)
	}
	assert.LessOrEqual(t, backoff.Delay(base, 1000), base<<backoff.MaxDoublings, "growth is capped")
}

func TestSleepEndsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	assert.ErrorIs(t, backoff.Sleep(ctx, time.Hour), context.Canceled)
	assert.NoError(t, backoff.Sleep(context.Background(), time.Millisecond))
}
