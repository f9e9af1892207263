package event

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/triggers-dev/triggers/contract"
)

// Event ids are UUIDv7 (RFC 9562) with method 3 of section 6.2: the 12-bit
// rand_a field holds the microseconds within the millisecond
// (0-999). The id therefore carries the event's exact timestamp at
// microsecond precision, and the table sort key timestamp#event_id can be
// derived from the id alone: reading an event by id is one GetItem.

// maxIDMillis is 9999-12-31T23:59:59.999Z: later times would not format
// with a four-digit year, and lexical order of the sort key would break.
const maxIDMillis = 253402300799999

// ErrInvalidID is returned by ParseID for anything but a canonical Triggers
// event id.
var ErrInvalidID = errors.New("invalid event id")

// NewID returns a new event id for time now and the microsecond timestamp
// it encodes. r supplies the random bits; nil means crypto/rand.
func NewID(now time.Time, r io.Reader) (string, time.Time, error) {
	if r == nil {
		r = rand.Reader
	}
	us := now.UnixMicro()
	ms := us / 1000
	if ms < 0 || ms > maxIDMillis {
		return "", time.Time{}, fmt.Errorf("time %s is outside the range of event ids", now)
	}
	sub := us % 1000
	var b [16]byte
	if _, err := io.ReadFull(r, b[8:]); err != nil {
		return "", time.Time{}, fmt.Errorf("read random bits for an event id: %w", err)
	}
	b[0] = byte(ms >> 40)
	b[1] = byte(ms >> 32)
	b[2] = byte(ms >> 24)
	b[3] = byte(ms >> 16)
	b[4] = byte(ms >> 8)
	b[5] = byte(ms)
	b[6] = 0x70 | byte(sub>>8)
	b[7] = byte(sub)
	b[8] = 0x80 | b[8]&0x3f
	return formatUUID(b), time.UnixMicro(us).UTC(), nil
}

const hexDigits = "0123456789abcdef"

func formatUUID(b [16]byte) string {
	var out [36]byte
	j := 0
	for i, c := range b {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			out[j] = '-'
			j++
		}
		out[j] = hexDigits[c>>4]
		out[j+1] = hexDigits[c&0xf]
		j += 2
	}
	return string(out[:])
}

// ParseID checks that s is a canonical event id (lowercase UUIDv7, RFC 4122
// variant, rand_a below 1000) and returns the timestamp it encodes.
func ParseID(s string) (time.Time, error) {
	if len(s) != 36 {
		return time.Time{}, ErrInvalidID
	}
	var b [16]byte
	j := 0
	for i := 0; i < 36; i++ {
		if i == 8 || i == 13 || i == 18 || i == 23 {
			if s[i] != '-' {
				return time.Time{}, ErrInvalidID
			}
			continue
		}
		v := unhex(s[i])
		if v > 15 {
			return time.Time{}, ErrInvalidID
		}
		if j%2 == 0 {
			b[j/2] = v << 4
		} else {
			b[j/2] |= v
		}
		j++
	}
	if b[6]>>4 != 7 || b[8]>>6 != 2 {
		return time.Time{}, ErrInvalidID
	}
	sub := int64(b[6]&0x0f)<<8 | int64(b[7])
	if sub > 999 {
		return time.Time{}, ErrInvalidID
	}
	ms := int64(b[0])<<40 | int64(b[1])<<32 | int64(b[2])<<24 | int64(b[3])<<16 | int64(b[4])<<8 | int64(b[5])
	if ms > maxIDMillis {
		return time.Time{}, ErrInvalidID
	}
	return time.UnixMicro(ms*1000 + sub).UTC(), nil
}

// SortKeyForID returns the table sort key (timestamp#event_id) of the event
// with id, derived from the id alone.
func SortKeyForID(id string) (string, error) {
	ts, err := ParseID(id)
	if err != nil {
		return "", err
	}
	return contract.Key(FormatTime(ts), id), nil
}

func unhex(c byte) byte {
	if '0' <= c && c <= '9' {
		return c - '0'
	}
	if 'a' <= c && c <= 'f' {
		return c - 'a' + 10
	}
	return 255
}

// IDFloor returns the least event id of time t (microseconds, random bits
// zero): every event id of time t or later sorts at or after it, every id
// of an earlier time before it. A range of ids from IDFloor(a) up to
// IDFloor(b) holds the events of [a, b). t is clamped to the range of
// event ids.
func IDFloor(t time.Time) string {
	us := min(max(t.UnixMicro(), 0), maxIDMillis*1000+999)
	ms, sub := us/1000, us%1000
	var b [16]byte
	b[0] = byte(ms >> 40)
	b[1] = byte(ms >> 32)
	b[2] = byte(ms >> 24)
	b[3] = byte(ms >> 16)
	b[4] = byte(ms >> 8)
	b[5] = byte(ms)
	b[6] = 0x70 | byte(sub>>8)
	b[7] = byte(sub)
	b[8] = 0x80
	return formatUUID(b)
}
