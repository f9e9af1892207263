package contract

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"time"
)

// Limits of a valid RetrySchedule.
const (
	// MaxRetryScheduleLen is the most retries a schedule may hold (so at most
	// MaxRetryScheduleLen+1 attempts).
	MaxRetryScheduleLen = 20
	// MaxRetryDelay is the longest delay of one step, the last step of the
	// Standard Webhooks example schedule.
	MaxRetryDelay = 24 * time.Hour
)

// RetryJitterFraction is the jitter of RetrySchedule.Next: a delay d becomes a
// uniformly drawn value in [d - d*RetryJitterFraction, d + d*RetryJitterFraction).
const RetryJitterFraction = 0.2

// ErrInvalidRetrySchedule is wrapped by every error of ParseRetrySchedule and
// RetrySchedule.Validate.
var ErrInvalidRetrySchedule = errors.New("invalid retry schedule")

// RetrySchedule is a retry schedule: element i is the delay between attempt
// i+1 failing and attempt i+2. The first attempt is made at once, so a
// schedule of n delays allows n+1 attempts; after the last delay's attempt
// fails, delivery gives up.
//
// A valid schedule (Validate) has 1 to MaxRetryScheduleLen delays, each
// positive and at most MaxRetryDelay, in non-decreasing order: a backoff never
// speeds up, which also catches a typo such as "5m,30s" for "5m,30m".
// Equal neighbours are fine (DefaultRetrySchedule ends with 10h,10h).
type RetrySchedule []time.Duration

// DefaultRetrySchedule returns Svix's retry schedule, which the Standard
// Webhooks specification cites as its example: at once, then after 5
// seconds, 5 minutes, 30 minutes, 2 hours, 5 hours, 10 hours and 10
// hours; 8 attempts over about 27.6 hours, then give up. Each call
// returns a new slice, so callers may modify it.
func DefaultRetrySchedule() RetrySchedule {
	return RetrySchedule{
		5 * time.Second,
		5 * time.Minute,
		30 * time.Minute,
		2 * time.Hour,
		5 * time.Hour,
		10 * time.Hour,
		10 * time.Hour,
	}
}

// ParseRetrySchedule parses a comma-separated list of delays in the syntax of
// time.ParseDuration, such as "5s,5m,30m,2h" (spaces around an element
// are ignored), and validates the result (see RetrySchedule). Errors wrap
// ErrInvalidRetrySchedule and name the bad element by position and text.
func ParseRetrySchedule(s string) (RetrySchedule, error) {
	if strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf("%w: empty; want comma-separated delays such as \"5s,5m,30m\"", ErrInvalidRetrySchedule)
	}
	elems := strings.Split(s, ",")
	if len(elems) > MaxRetryScheduleLen {
		return nil, fmt.Errorf("%w: %d delays, at most %d allowed", ErrInvalidRetrySchedule, len(elems), MaxRetryScheduleLen)
	}
	sched := make(RetrySchedule, 0, len(elems))
	for i, e := range elems {
		e = strings.TrimSpace(e)
		if e == "" {
			return nil, fmt.Errorf("%w: element %d is empty", ErrInvalidRetrySchedule, i+1)
		}
		d, err := time.ParseDuration(e)
		if err != nil {
			return nil, fmt.Errorf("%w: element %d (%.40q) is not a duration such as \"30s\" or \"2h\"", ErrInvalidRetrySchedule, i+1, e)
		}
		sched = append(sched, d)
	}
	if err := sched.Validate(); err != nil {
		return nil, err
	}
	return sched, nil
}

// Validate reports whether s is a valid schedule (see RetrySchedule). The
// error wraps ErrInvalidRetrySchedule and names the first bad element by
// position (from 1).
func (s RetrySchedule) Validate() error {
	if len(s) == 0 {
		return fmt.Errorf("%w: no delays; want at least one retry", ErrInvalidRetrySchedule)
	}
	if len(s) > MaxRetryScheduleLen {
		return fmt.Errorf("%w: %d delays, at most %d allowed", ErrInvalidRetrySchedule, len(s), MaxRetryScheduleLen)
	}
	for i, d := range s {
		if d <= 0 {
			return fmt.Errorf("%w: element %d (%s) is not positive", ErrInvalidRetrySchedule, i+1, formatDelay(d))
		}
		if d > MaxRetryDelay {
			return fmt.Errorf("%w: element %d (%s) is longer than %s", ErrInvalidRetrySchedule, i+1, formatDelay(d), formatDelay(MaxRetryDelay))
		}
		if i > 0 && d < s[i-1] {
			return fmt.Errorf("%w: element %d (%s) is shorter than element %d (%s); delays must not decrease", ErrInvalidRetrySchedule, i+1, formatDelay(d), i, formatDelay(s[i-1]))
		}
	}
	return nil
}

// String returns s in the syntax of ParseRetrySchedule, with each delay in its
// shortest form ("5s,5m,30m,2h,5h,10h,10h" for DefaultRetrySchedule).
func (s RetrySchedule) String() string {
	parts := make([]string, len(s))
	for i, d := range s {
		parts[i] = formatDelay(d)
	}
	return strings.Join(parts, ",")
}

// formatDelay is d.String() without zero minutes and seconds: "2h", not
// "2h0m0s"; "1h30m", not "1h30m0s". time.ParseDuration reads it back.
func formatDelay(d time.Duration) string {
	t := d.String()
	if strings.HasSuffix(t, "m0s") {
		t = strings.TrimSuffix(t, "0s")
	}
	if strings.HasSuffix(t, "h0m") {
		t = strings.TrimSuffix(t, "0m")
	}
	return t
}

// DefaultWebhookDisableAfter is how long an endpoint may fail without a success
// before its subscription is disabled (Svix disables after 5 days).
const DefaultWebhookDisableAfter = 5 * 24 * time.Hour

// JitterSource is a source of uniform random numbers in [0, 1). A
// *math/rand/v2.Rand is one; tests can pass a fixed value.
type JitterSource interface {
	Float64() float64
}

// Next returns the delay to wait after attempt number attempt (counting
// from 1) has failed, and whether there is a next attempt at all. Next(0)
// is (0, true): the first attempt is made at once. For 1 <= attempt <=
// len(s) the delay is s[attempt-1] with jitter; beyond that, or for a
// negative attempt, it returns (0, false): give up.
//
// The jitter rule: with u drawn from rnd, the delay d becomes
//
//	d + trunc((2u - 1) * (d / 5))
//
// that is a uniform value in [d - d/5, d + d/5), ±20% (RetryJitterFraction),
// so many deliveries that failed together do not retry together. The
// result is never negative (it is at least d - d/5 > 0 for a positive d;
// a non-positive step of an invalid schedule gives 0). rnd may be nil for
// math/rand/v2's global source; a u outside [0, 1) (or NaN) from a faulty
// source is clamped into it.
func (s RetrySchedule) Next(attempt int, rnd JitterSource) (time.Duration, bool) {
	if attempt < 0 || attempt > len(s) {
		return 0, false
	}
	if attempt == 0 {
		return 0, true
	}
	d := s[attempt-1]
	var u float64
	if rnd != nil {
		u = rnd.Float64()
	} else {
		u = rand.Float64()
	}
	if math.IsNaN(u) {
		u = 0
	}
	u = min(max(u, 0), math.Nextafter(1, 0))
	span := d / 5 // RetryJitterFraction, in integer arithmetic
	j := time.Duration((2*u - 1) * float64(span))
	if j > 0 && d > math.MaxInt64-j { // only for absurd delays of invalid schedules
		return math.MaxInt64, true
	}
	// A non-positive step of an invalid schedule gives at most 0.
	return max(d+j, 0), true
}
