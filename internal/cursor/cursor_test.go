package cursor_test

import (
	"crypto/sha256"
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/internal/cursor"
	"github.com/triggers-dev/triggers/internal/event"
)

var secret = []byte("0123456789abcdef0123456789abcdef")

func position(t testing.TB) event.Position {
	id, ts, err := event.NewID(time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC), nil)
	require.NoError(t, err)
	sk := event.FormatTime(ts) + "#" + id
	return event.Position{SortKey: sk, IndexKey: "received#" + event.FormatTime(ts)}
}

func TestRoundTripAndBinding(t *testing.T) {
	c, err := cursor.New(secret)
	require.NoError(t, err)
	p := position(t)
	enc := c.Encode("tenant-a", "shape-1", p)
	assert.Regexp(t, `^[A-Za-z0-9_-]+$`, enc, "cursor is not base64url")
	got, err := c.Decode("tenant-a", "shape-1", enc)
	require.NoError(t, err)
	assert.Equal(t, p, got)
	assert.NotContains(t, enc, base64.RawURLEncoding.EncodeToString([]byte("tenant-a")))

	other, err := cursor.New([]byte(strings.Repeat("z", 32)))
	require.NoError(t, err)
	raw, _ := base64.RawURLEncoding.DecodeString(enc)
	flipped := append([]byte(nil), raw...)
	flipped[len(flipped)-1] ^= 0x01
	bodyFlip := append([]byte(nil), raw...)
	bodyFlip[5] ^= 0x01
	tests := []struct {
		name                  string
		codec                 *cursor.Codec
		tenant, shape, cursor string
	}{
		{"other tenant", c, "tenant-b", "shape-1", enc},
		{"other shape", c, "tenant-a", "shape-2", enc},
		{"other secret", other, "tenant-a", "shape-1", enc},
		{"tag flipped", c, "tenant-a", "shape-1", base64.RawURLEncoding.EncodeToString(flipped)},
		{"body flipped", c, "tenant-a", "shape-1", base64.RawURLEncoding.EncodeToString(bodyFlip)},
		{"padded", c, "tenant-a", "shape-1", enc + "=="},
		{"std alphabet", c, "tenant-a", "shape-1", strings.NewReplacer("-", "+", "_", "/").Replace(enc) + "+"},
		{"truncated", c, "tenant-a", "shape-1", enc[:len(enc)-2]},
		{"empty", c, "tenant-a", "shape-1", ""},
		{"short", c, "tenant-a", "shape-1", "AAAA"},
		{"huge", c, "tenant-a", "shape-1", strings.Repeat("A", 5000)},
	}
	for _, tt := range tests {
		_, err := tt.codec.Decode(tt.tenant, tt.shape, tt.cursor)
		assert.ErrorIs(t, err, cursor.ErrInvalid, tt.name)
	}
}

func TestSignedGarbageIsStillRejected(t *testing.T) {
	c, err := cursor.New(secret)
	require.NoError(t, err)
	for _, p := range []event.Position{{SortKey: "no-hash"}, {SortKey: "2026-01-01T00:00:00.000000Z#not-an-id"}, {}} {
		enc := c.Encode("t", "s", p)
		_, err := c.Decode("t", "s", enc)
		assert.ErrorIs(t, err, cursor.ErrInvalid, "position %+v", p)
	}
}

func TestNewRejectsShortSecret(t *testing.T) {
	_, err := cursor.New([]byte("short"))
	assert.Error(t, err)
}

// FuzzDecode: Decode never panics, and whatever it accepts re-encodes to
// the same cursor (only Encode's output verifies).
func FuzzDecode(f *testing.F) {
	c, err := cursor.New(secret)
	if err != nil {
		f.Fatal(err)
	}
	good := c.Encode("tenant-a", "shape", position(f))
	f.Add("tenant-a", "shape", good)
	f.Add("tenant-b", "shape", good)
	f.Add("tenant-a", "shape", good[:len(good)-1])
	f.Add("tenant-a", "shape", "")
	f.Add("tenant-a", "shape", "eyJzIjoiIn0")
	f.Fuzz(func(t *testing.T, tenant, shape, s string) {
		p, err := c.Decode(tenant, shape, s)
		if err != nil {
			return
		}
		if again := c.Encode(tenant, shape, p); again != s {
			t.Fatalf("Decode accepted %q, which Encode writes as %q", s, again)
		}
	})
}

// Every byte of a cursor counts: flipping any one bit of any byte of the
// decoded cursor (body or tag), or cutting the tag short by any amount, is
// refused. (A MAC check comparing only part of the tag would pass some.)
func TestEveryByteIsAuthenticated(t *testing.T) {
	c, err := cursor.New(secret)
	require.NoError(t, err)
	p := position(t)
	sk := p.SortKey
	good := c.Encode("tenant-a", "shape", p)
	raw, err := base64.RawURLEncoding.DecodeString(good)
	require.NoError(t, err)
	_, err = c.Decode("tenant-a", "shape", good)
	require.NoError(t, err)

	for i := range raw {
		for _, bit := range []byte{0x01, 0x80} {
			mut := append([]byte(nil), raw...)
			mut[i] ^= bit
			_, err := c.Decode("tenant-a", "shape", base64.RawURLEncoding.EncodeToString(mut))
			assert.ErrorIs(t, err, cursor.ErrInvalid, "byte %d of %d flipped (bit %#x) was accepted", i, len(raw), bit)
		}
	}
	for cut := 1; cut <= sha256.Size; cut++ {
		_, err := c.Decode("tenant-a", "shape", base64.RawURLEncoding.EncodeToString(raw[:len(raw)-cut]))
		assert.ErrorIs(t, err, cursor.ErrInvalid, "tag cut by %d bytes was accepted", cut)
	}
	// The tag alone, or the body with another cursor's tag, is refused.
	_, err = c.Decode("tenant-a", "shape", base64.RawURLEncoding.EncodeToString(raw[len(raw)-sha256.Size:]))
	assert.ErrorIs(t, err, cursor.ErrInvalid)
	other := c.Encode("tenant-a", "shape", event.Position{SortKey: sk})
	otherRaw, _ := base64.RawURLEncoding.DecodeString(other)
	spliced := append(append([]byte(nil), raw[:len(raw)-sha256.Size]...), otherRaw[len(otherRaw)-sha256.Size:]...)
	_, err = c.Decode("tenant-a", "shape", base64.RawURLEncoding.EncodeToString(spliced))
	assert.ErrorIs(t, err, cursor.ErrInvalid)
}

// Decode reads cursors of up to 2048 characters: one of exactly 2048 is
// decoded, the next length base64 can give (2050) is refused unread.
func TestCursorLengthLimit(t *testing.T) {
	c, err := cursor.New(secret)
	require.NoError(t, err)
	at := func(chars int) (event.Position, string) {
		p := position(t)
		for pad := 0; pad < 4096; pad++ {
			p.IndexKey = strings.Repeat("x", pad)
			if enc := c.Encode("tenant-a", "shape-1", p); len(enc) >= chars {
				require.Equal(t, chars, len(enc), "no cursor of %d characters", chars)
				return p, enc
			}
		}
		t.Fatalf("no cursor of %d characters", chars)
		return p, ""
	}
	p, enc := at(2048)
	got, err := c.Decode("tenant-a", "shape-1", enc)
	require.NoError(t, err, "a valid cursor of 2048 characters")
	assert.Equal(t, p, got)
	_, enc = at(2050)
	_, err = c.Decode("tenant-a", "shape-1", enc)
	assert.ErrorIs(t, err, cursor.ErrInvalid, "a valid cursor of 2050 characters")
}

func TestShardedPositions(t *testing.T) {
	c, err := cursor.New(secret)
	require.NoError(t, err)
	p := position(t)
	ids := make([]string, 32)
	for i := range ids {
		id, _, err := event.NewID(time.Now(), nil)
		require.NoError(t, err)
		ids[i] = id
	}
	ids[3], ids[5], ids[7] = event.ShardDone, "", event.ShardStart
	p.Shards = ids
	enc := c.Encode("tenant-a", "shape-1", p)
	assert.Less(t, len(enc), 2000, "a 32-shard cursor fits the 2048-character limit")
	got, err := c.Decode("tenant-a", "shape-1", enc)
	require.NoError(t, err)
	assert.Equal(t, p, got)
	// Before any event was taken there is no boundary.
	got, err = c.Decode("tenant-a", "shape-1", c.Encode("tenant-a", "shape-1", event.Position{Shards: []string{"", event.ShardDone}}))
	require.NoError(t, err)
	assert.Equal(t, []string{"", event.ShardDone}, got.Shards)

	// A single-shard position is encoded as before: no "p".
	raw, _ := base64.RawURLEncoding.DecodeString(c.Encode("tenant-a", "shape-1", position(t)))
	assert.NotContains(t, string(raw[:len(raw)-sha256.Size]), `"p"`)

	for name, bad := range map[string]event.Position{
		"not an id":       {SortKey: p.SortKey, Shards: []string{"x"}},
		"too many shards": {SortKey: p.SortKey, Shards: make([]string, 33)},
		"bad boundary":    {SortKey: "nope", Shards: []string{""}},
		"index, no key":   {IndexKey: "received#x", Shards: []string{""}},
	} {
		_, err := c.Decode("tenant-a", "shape-1", c.Encode("tenant-a", "shape-1", bad))
		assert.ErrorIs(t, err, cursor.ErrInvalid, name)
		_, err = c.DecodeKey("tenant-a", "shape-1", c.Encode("tenant-a", "shape-1", bad), func(string) bool { return true })
		assert.ErrorIs(t, err, cursor.ErrInvalid, name)
	}
}
