package contract

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fixedRandom is a JitterSource that always returns its value.
type fixedRandom float64

func (f fixedRandom) Float64() float64 { return float64(f) }

func TestDefaultSchedule(t *testing.T) {
	s := DefaultRetrySchedule()
	assert.Equal(t, "5s,5m,30m,2h,5h,10h,10h", s.String())
	assert.Len(t, s, 7, "8 attempts")
	require.NoError(t, s.Validate())
	var total time.Duration
	for _, d := range s {
		total += d
	}
	assert.Equal(t, 27*time.Hour+35*time.Minute+5*time.Second, total)

	// A fresh copy each time.
	s[0] = time.Hour
	assert.Equal(t, 5*time.Second, DefaultRetrySchedule()[0])
}

func TestParseSchedule(t *testing.T) {
	tests := []struct {
		in     string
		want   string // String() of the result; "" for an error
		errHas string
	}{
		{"5s,5m,30m,2h,5h,10h,10h", "5s,5m,30m,2h,5h,10h,10h", ""},
		{"5s", "5s", ""},
		{" 5s , 1m30s,90m ", "5s,1m30s,1h30m", ""},
		{"1ms,1s", "1ms,1s", ""},
		{"24h", "24h", ""},
		{"10h,10h,10h", "10h,10h,10h", ""},
		{strings.Repeat("1s,", MaxRetryScheduleLen-1) + "1s", strings.Repeat("1s,", MaxRetryScheduleLen-1) + "1s", ""},
		{"", "", "empty"},
		{"   ", "", "empty"},
		{"5s,,5m", "", "element 2 is empty"},
		{"5s,5m,", "", "element 3 is empty"},
		{",5s", "", "element 1 is empty"},
		{"5s,5x,30m", "", `element 2 ("5x") is not a duration`},
		{"5", "", `element 1 ("5") is not a duration`},
		{"5s,1d", "", `element 2 ("1d") is not a duration`},
		{"0s", "", "element 1 (0s) is not positive"},
		{"5s,-5m", "", "element 2 (-5m) is not positive"},
		{"5s,25h", "", "element 2 (25h) is longer than 24h"},
		{"5m,30s", "", "element 2 (30s) is shorter than element 1 (5m); delays must not decrease"},
		{"5s,5m,30m,2h,5h,10h,9h", "", "element 7 (9h) is shorter than element 6 (10h)"},
		{strings.Repeat("1s,", MaxRetryScheduleLen) + "1s", "", "21 delays, at most 20 allowed"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseRetrySchedule(tt.in)
			if tt.want == "" {
				require.ErrorIs(t, err, ErrInvalidRetrySchedule, "ParseRetrySchedule(%q) = %v, want an error", tt.in, got)
				assert.Contains(t, err.Error(), tt.errHas)
				assert.Nil(t, got)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got.String())
			// String is read back to the same schedule.
			back, err := ParseRetrySchedule(got.String())
			require.NoError(t, err)
			assert.Equal(t, got, back)
		})
	}
}

func TestScheduleValidate(t *testing.T) {
	assert.ErrorContains(t, RetrySchedule{}.Validate(), "no delays")
	assert.ErrorContains(t, RetrySchedule(nil).Validate(), "no delays")
	assert.ErrorContains(t, RetrySchedule{time.Second, 0}.Validate(), "element 2 (0s) is not positive")
	assert.ErrorContains(t, RetrySchedule{MaxRetryDelay + 1}.Validate(), "element 1 (24h0m0.000000001s) is longer than 24h")
	assert.NoError(t, RetrySchedule{1, 1, MaxRetryDelay}.Validate())
}

func TestNextAttempts(t *testing.T) {
	s := DefaultRetrySchedule()
	mid := fixedRandom(0.5) // no jitter
	d, ok := s.Next(0, mid)
	assert.True(t, ok)
	assert.Zero(t, d, "the first attempt is at once")
	for attempt := 1; attempt <= len(s); attempt++ {
		d, ok := s.Next(attempt, mid)
		assert.True(t, ok, "Next(%d)", attempt)
		assert.Equal(t, s[attempt-1], d, "Next(%d, u=0.5)", attempt)
	}
	for _, attempt := range []int{8, 9, 100, -1, math.MinInt} {
		d, ok := s.Next(attempt, mid)
		assert.False(t, ok, "Next(%d) must give up", attempt)
		assert.Zero(t, d)
	}
	// Empty schedule: one attempt only.
	_, ok = RetrySchedule{}.Next(1, mid)
	assert.False(t, ok)
}

func TestNextJitterBounds(t *testing.T) {
	s := RetrySchedule{5 * time.Second, 10 * time.Hour, 7} // 7 ns: d/5 = 1 ns
	tests := []struct {
		u        float64
		attempt  int
		want     time.Duration // exact
		maxBelow time.Duration // if non-zero: want want <= got < maxBelow
	}{
		{0, 1, 4 * time.Second, 0},
		{0.5, 1, 5 * time.Second, 0},
		{0.75, 1, 5*time.Second + 500*time.Millisecond, 0},
		{0.25, 2, 9 * time.Hour, 0},
		{0, 2, 8 * time.Hour, 0},
		{math.Nextafter(1, 0), 1, 5*time.Second + time.Second - 1, 0},
		{math.Nextafter(1, 0), 2, 12*time.Hour - 1, 0},
		{0.999, 2, 11*time.Hour + 59*time.Minute + 45*time.Second + 600*time.Millisecond, 0},
		{0, 3, 6, 0},
		{math.Nextafter(1, 0), 3, 7, 0}, // trunc toward zero: 7 + 0
		// A faulty source is clamped into [0, 1).
		{-3, 1, 4 * time.Second, 0},
		{math.NaN(), 1, 4 * time.Second, 0},
		{1, 1, 6*time.Second - 1, 0},
		{42, 2, 12*time.Hour - 1, 0},
		{math.Inf(1), 2, 12*time.Hour - 1, 0},
		{math.Inf(-1), 2, 8 * time.Hour, 0},
	}
	for _, tt := range tests {
		got, ok := s.Next(tt.attempt, fixedRandom(tt.u))
		require.True(t, ok)
		assert.Equal(t, tt.want, got, "Next(%d, u=%v) = %v, want %v", tt.attempt, tt.u, got, tt.want)
	}
}

func TestNextJitterStaysInBounds(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	s := DefaultRetrySchedule()
	seen := map[bool]bool{}
	for range 2000 {
		for attempt := 1; attempt <= len(s); attempt++ {
			d := s[attempt-1]
			got, ok := s.Next(attempt, rnd)
			require.True(t, ok)
			lo, hi := d-d/5, d+d/5
			require.True(t, lo <= got && got < hi, "Next(%d) = %v, want in [%v, %v)", attempt, got, lo, hi)
			seen[got > d] = true
		}
	}
	assert.Len(t, seen, 2, "jitter goes both ways")

	// Deterministic for a seeded source.
	a := rand.New(rand.NewPCG(7, 7))
	b := rand.New(rand.NewPCG(7, 7))
	for attempt := 1; attempt <= len(s); attempt++ {
		x, _ := s.Next(attempt, a)
		y, _ := s.Next(attempt, b)
		assert.Equal(t, x, y)
	}

	// nil uses the global source, still within bounds.
	got, ok := s.Next(1, nil)
	assert.True(t, ok)
	assert.True(t, got >= 4*time.Second && got < 6*time.Second, "Next(1, nil) = %v", got)
}

func TestNextNeverNegative(t *testing.T) {
	// Invalid schedules still give non-negative delays.
	s := RetrySchedule{-time.Hour, 0, math.MaxInt64}
	for attempt := 1; attempt <= 3; attempt++ {
		for _, u := range []float64{0, 0.5, math.Nextafter(1, 0)} {
			got, ok := s.Next(attempt, fixedRandom(u))
			assert.True(t, ok)
			assert.GreaterOrEqual(t, got, time.Duration(0), "Next(%d, u=%v)", attempt, u)
		}
	}
	got, _ := s.Next(3, fixedRandom(math.Nextafter(1, 0)))
	assert.Equal(t, time.Duration(math.MaxInt64), got, "saturates instead of overflowing")
}

func TestJitterFractionMatchesRule(t *testing.T) {
	d := 10 * time.Hour
	lo, _ := RetrySchedule{d}.Next(1, fixedRandom(0))
	assert.Equal(t, time.Duration(float64(d)*(1-RetryJitterFraction)), lo)
}

// Svix disables an endpoint after 5 days of failures; so do we by default.
func TestDefaultDisableAfterIsFiveDays(t *testing.T) {
	assert.Equal(t, 120*time.Hour, DefaultWebhookDisableAfter)
}

func FuzzParseSchedule(f *testing.F) {
	for _, s := range []string{"5s,5m,30m,2h,5h,10h,10h", "", "5s,,5m", "1ns", "24h,24h", "5m,30s", "-1s", "1h30m,1h30m0s"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		s, err := ParseRetrySchedule(in)
		if err != nil {
			return
		}
		if err := s.Validate(); err != nil {
			t.Fatalf("ParseRetrySchedule(%q) = %v, which does not validate: %v", in, s, err)
		}
		back, err := ParseRetrySchedule(s.String())
		if err != nil || back.String() != s.String() {
			t.Fatalf("ParseRetrySchedule(%q).String() = %q does not parse back: %v", in, s, err)
		}
		for attempt := 1; attempt <= len(s); attempt++ {
			for _, u := range []float64{0, 0.5, 0.9999999} {
				d, ok := s.Next(attempt, fixedRandom(u))
				if want := s[attempt-1]; !ok || d < want-want/5 || d >= want+want/5+1 {
					t.Fatalf("%v.Next(%d, %v) = %v, %v", s, attempt, u, d, ok)
				}
			}
		}
	})
}
