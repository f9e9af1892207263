package event_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/internal/event"
)

func TestIDFloorBoundsIDsByTime(t *testing.T) {
	at := time.Date(2026, 3, 1, 12, 0, 0, 123456000, time.UTC)
	floor := event.IDFloor(at)
	got, err := event.ParseID(floor)
	require.NoError(t, err, "ParseID(IDFloor(%s))", at)
	assert.Equal(t, at, got, "ParseID(IDFloor(%s))", at)
	for _, random := range [][]byte{bytes.Repeat([]byte{0}, 8), bytes.Repeat([]byte{0xff}, 8)} {
		for _, c := range []struct {
			d     time.Duration
			after bool
		}{{-time.Microsecond, false}, {-time.Hour, false}, {0, true}, {time.Microsecond, true}, {time.Hour, true}} {
			id, _, err := event.NewID(at.Add(c.d), bytes.NewReader(random))
			require.NoError(t, err)
			assert.Equal(t, c.after, id >= floor, "NewID(%s%+v) = %s >= IDFloor(%s) = %s", at, c.d, id, at, floor)
		}
	}
	assert.Equal(t, "00000000-0000-7000-8000-000000000000", event.IDFloor(time.Unix(-5, 0)), "IDFloor before 1970")
	_, err = event.ParseID(event.IDFloor(time.Date(12000, 1, 1, 0, 0, 0, 0, time.UTC)))
	assert.NoError(t, err, "IDFloor after year 9999 is still an id")
}
