// Package cursor encodes inbox positions as opaque, authenticated cursors.
//
// A cursor is base64url (no padding) of a small JSON position followed by a
// 32-byte HMAC-SHA256 tag. The tag covers a version, the tenant id, the
// query shape (status, event type, order) and the position, so a cursor
// that was edited, forged without the secret, issued to another tenant or
// issued for another query fails to decode. The tenant id is not in the
// cursor itself; only its MAC binds it.
package cursor

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"

	"github.com/triggers-dev/triggers/internal/event"
	"github.com/triggers-dev/triggers/internal/shard"
)

// MinSecretBytes is the shortest secret a Codec accepts.
const MinSecretBytes = 32

// maxCursorChars bounds what Decode looks at; real cursors are ~250 chars,
// those of a tenant with shard.MaxShards shards under 2,000.
const maxCursorChars = 2048

const version = "triggers-cursor-v1"

// ErrInvalid is returned for any cursor that does not verify.
var ErrInvalid = errors.New("invalid cursor")

// Codec signs and verifies cursors with one secret.
type Codec struct {
	secret []byte
}

// New returns a codec for secret, which must be at least MinSecretBytes
// long.
func New(secret []byte) (*Codec, error) {
	if len(secret) < MinSecretBytes {
		return nil, errors.New("cursor secret is too short: use at least 32 random bytes")
	}
	return &Codec{secret: append([]byte(nil), secret...)}, nil
}

func (c *Codec) mac(tenant, shape string, body []byte) []byte {
	h := hmac.New(sha256.New, c.secret)
	for _, part := range []string{version, tenant, shape} {
		h.Write([]byte(part))
		h.Write([]byte{0})
	}
	h.Write(body)
	return h.Sum(nil)
}

// Encode returns the cursor for position p of the query shape for tenant.
func (c *Codec) Encode(tenant, shape string, p event.Position) string {
	body, _ := json.Marshal(p) // a struct of strings always marshals
	out := append(body, c.mac(tenant, shape, body)...)
	return base64.RawURLEncoding.EncodeToString(out)
}

// Decode verifies cursor for tenant and shape and returns its position, or
// ErrInvalid.
func (c *Codec) Decode(tenant, shape, cursor string) (event.Position, error) {
	p, err := c.decode(tenant, shape, cursor)
	if err != nil {
		return event.Position{}, err
	}
	// Defence in depth: a verified cursor always holds a valid sort key
	// (or, merged from shards, valid positions).
	if len(p.Shards) > 0 {
		if err := checkShards(p); err != nil {
			return event.Position{}, err
		}
		return p, nil
	}
	if err := checkSortKey(p.SortKey); err != nil {
		return event.Position{}, err
	}
	return p, nil
}

// checkShards checks the position of a page merged from shards: at most
// shard.MaxShards entries, each an event id, ShardDone, ShardStart or
// empty, and a
// sort key (the last event of the page) unless there was none yet.
func checkShards(p event.Position) error {
	if len(p.Shards) > shard.MaxShards {
		return ErrInvalid
	}
	if p.SortKey == "" && p.IndexKey != "" {
		return ErrInvalid
	}
	if p.SortKey != "" {
		if err := checkSortKey(p.SortKey); err != nil {
			return err
		}
	}
	for _, v := range p.Shards {
		if v == "" || v == event.ShardDone || v == event.ShardStart {
			continue
		}
		if _, err := event.ParseID(v); err != nil {
			return ErrInvalid
		}
	}
	return nil
}

// checkSortKey checks that sk is a valid timestamp#event_id.
func checkSortKey(sk string) error {
	i := strings.LastIndexByte(sk, '#')
	if i < 0 {
		return ErrInvalid
	}
	if want, err := event.SortKeyForID(sk[i+1:]); err != nil || want != sk {
		return ErrInvalid
	}
	return nil
}

// EncodeKey returns the cursor for key, a position in a list other than
// the inbox (a subscription's attempts), for the query shape for tenant.
// The shape must name the list, so that no cursor of one list is
// accepted by another.
func (c *Codec) EncodeKey(tenant, shape, key string) string {
	return c.Encode(tenant, shape, event.Position{SortKey: key})
}

// DecodeKey verifies cursor for tenant and shape and returns its key,
// provided valid accepts it (defence in depth), or ErrInvalid.
func (c *Codec) DecodeKey(tenant, shape, cursor string, valid func(string) bool) (string, error) {
	p, err := c.decode(tenant, shape, cursor)
	if err != nil || p.IndexKey != "" || len(p.Shards) > 0 || !valid(p.SortKey) {
		return "", ErrInvalid
	}
	return p.SortKey, nil
}

func (c *Codec) decode(tenant, shape, cursor string) (event.Position, error) {
	if cursor == "" || len(cursor) > maxCursorChars || strings.ContainsAny(cursor, "=+/") {
		return event.Position{}, ErrInvalid
	}
	raw, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil || len(raw) <= sha256.Size {
		return event.Position{}, ErrInvalid
	}
	body, tag := raw[:len(raw)-sha256.Size], raw[len(raw)-sha256.Size:]
	if !hmac.Equal(tag, c.mac(tenant, shape, body)) {
		return event.Position{}, ErrInvalid
	}
	var p event.Position
	if err := json.Unmarshal(body, &p); err != nil {
		return event.Position{}, ErrInvalid
	}
	return p, nil
}
