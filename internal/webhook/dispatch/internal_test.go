package dispatch

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/triggers-dev/triggers/contract"
	"github.com/triggers-dev/triggers/internal/event"
)

// A malformed task's body is quoted in the error cut at n characters.
func TestTruncate(t *testing.T) {
	if got := truncate("short", 200); got != "short" {
		t.Errorf("truncate(short) = %q", got)
	}
	long := strings.Repeat("x", 201)
	if got, want := truncate(long, 200), strings.Repeat("x", 200)+"..."; got != want {
		t.Errorf("truncate(201 x) = %q, want %q", got, want)
	}
	if got := truncate(long[:200], 200); got != long[:200] {
		t.Errorf("exactly n characters are kept whole, got %q", got)
	}
}

// The cache of open circuits stays bounded: once it holds maxCircuits, an
// opening forgets the circuits whose open period ended more than the
// longest cooldown before the new one's end, and keeps the others.
func TestOpenCircuitsStayBounded(t *testing.T) {
	c := circuits{open: map[circuitKey]time.Time{}}
	t0 := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	for i := range maxCircuits - 1 {
		c.opened("acme", "old"+strconv.Itoa(i), t0)
	}
	c.opened("acme", "recent", t0.Add(2*MaxBreakerCooldown))
	if len(c.open) != maxCircuits {
		t.Fatalf("%d circuits before the cache is full, want %d", len(c.open), maxCircuits)
	}
	// Full: the next opening, 2 cooldowns later, forgets those that ended
	// before until - MaxBreakerCooldown (the old ones), not the recent one.
	until := t0.Add(2*MaxBreakerCooldown + time.Second)
	c.opened("acme", "new", until)
	if _, ok := c.open[circuitKey{"acme", "recent"}]; !ok {
		t.Error("a circuit open until after until - MaxBreakerCooldown was forgotten")
	}
	if got := c.open[circuitKey{"acme", "new"}]; !got.Equal(until) {
		t.Errorf("the new circuit is open until %v, want %v", got, until)
	}
	if len(c.open) != 2 {
		t.Errorf("%d circuits left, want 2 (the recent and the new)", len(c.open))
	}
	// An opening that is no later than the one recorded changes nothing.
	c.opened("acme", "new", until.Add(-time.Minute))
	if got := c.open[circuitKey{"acme", "new"}]; !got.Equal(until) {
		t.Errorf("an earlier end replaced the later one: %v", got)
	}
}

// fixedJitter is a jitter source that always draws u.
type fixedJitter float64

func (u fixedJitter) Float64() float64 { return float64(u) }

// A receiver's Retry-After lengthens the wait up to the schedule's longest
// step and never shortens it, also when the jittered step is already
// longer than that step (found by review: 13 h cut an 11 h 57 min wait to
// 10 h).
func TestRetryAfterNeverShortensTheWait(t *testing.T) {
	for _, u := range []float64{0, 0.5, 0.99} {
		d := &Dispatcher{cfg: Config{Schedule: contract.DefaultRetrySchedule(), Rand: fixedJitter(u)}}
		longest := d.cfg.Schedule[len(d.cfg.Schedule)-1]
		for n := 1; n < len(d.cfg.Schedule); n++ {
			without, ok := d.next(n, 0)
			if !ok {
				t.Fatalf("u=%v: attempt %d has no retry", u, n)
			}
			for _, ra := range []time.Duration{time.Second, without, without + time.Minute, 13 * time.Hour, 100 * time.Hour} {
				with, _ := d.next(n, ra)
				want := max(without, min(ra, longest))
				if with != want {
					t.Errorf("u=%v attempt %d: Retry-After %s gives %s, want %s (without it: %s)", u, n, ra, with, want, without)
				}
			}
		}
	}
}

// The longest lane waiter is the one waiting since earliest; a record
// without Since (an earlier version's) is compared by its refused count;
// a tie is no longer wait (the first read, by subscription id, keeps the
// turn).
func TestWaitedLonger(t *testing.T) {
	t0 := time.Unix(1_900_000_000, 0)
	w := func(refused int, since time.Time) event.LaneWaiter {
		return event.LaneWaiter{SubscriptionID: "s", Refused: refused, Since: since}
	}
	for _, tt := range []struct {
		name string
		a, b event.LaneWaiter
		want bool
	}{
		{"since earlier, refused less", w(1, t0), w(5, t0.Add(time.Second)), true},
		{"since later, refused more", w(5, t0.Add(time.Second)), w(1, t0), false},
		{"same since", w(3, t0), w(1, t0), false},
		{"a without since, refused more", w(2, time.Time{}), w(1, t0), true},
		{"b without since, refused more", w(1, t0), w(2, time.Time{}), false},
		{"neither, same refused", w(2, time.Time{}), w(2, time.Time{}), false},
	} {
		if got := waitedLonger(tt.a, tt.b); got != tt.want {
			t.Errorf("%s: waitedLonger = %v, want %v", tt.name, got, tt.want)
		}
	}
}
