// Package apikey creates, stores, checks and revokes API keys.
//
// A key is "trg_" followed by 43 base64url characters (32 random bytes).
// Only its SHA-256 hash is stored (hex, the table's partition key), with a
// short prefix for recognition, the tenant id, a status (active or
// revoked) and timestamps; the key itself is shown once, at creation.
package apikey

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/triggers-dev/triggers/contract"
	"github.com/triggers-dev/triggers/internal/ddb"
	"github.com/triggers-dev/triggers/internal/event"
	itemattr "github.com/triggers-dev/triggers/internal/item"
	"github.com/triggers-dev/triggers/internal/shard"
	"github.com/triggers-dev/triggers/schema"
)

// Key format.
const (
	Prefix       = "trg_"
	randomBytes  = 32
	keyLen       = len(Prefix) + 43
	displayChars = len(Prefix) + 8
	maxKeyLen    = 512
)

// Statuses of a key.
const (
	StatusActive  = "active"
	StatusRevoked = "revoked"
)

// Errors of Authenticate.
var (
	// ErrMissing: the request carries no key (401).
	ErrMissing = errors.New("missing API key")
	// ErrUnknown: no such key (401).
	ErrUnknown = errors.New("unknown API key")
	// ErrRevoked: the key was revoked (403).
	ErrRevoked = errors.New("revoked API key")
)

// Generate returns a new random API key.
func Generate() (string, error) {
	var b [randomBytes]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("read random bytes for an API key: %w", err)
	}
	return Prefix + base64.RawURLEncoding.EncodeToString(b[:]), nil
}

// Hash returns the hex SHA-256 of key, the table's partition key.
func Hash(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])
}

// DisplayPrefix returns the part of key that may be shown, logged and
// stored: the first 12 characters of a key of the generated length, and
// nothing for anything else (a short or malformed string may be a whole
// secret, or a typo of one).
func DisplayPrefix(key string) string {
	if len(key) != keyLen || !strings.HasPrefix(key, Prefix) {
		return ""
	}
	return key[:displayChars]
}

// ValidHash reports whether h is a key's hash as Hash returns it: 64
// lower-case hexadecimal characters.
func ValidHash(h string) bool {
	if len(h) != 2*sha256.Size {
		return false
	}
	for i := 0; i < len(h); i++ {
		if c := h[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// MaxDescriptionLen is the most bytes a key's description may hold.
const MaxDescriptionLen = 1024

// descriptionRule ends the errors of CheckDescription: what a key's
// description may be.
var descriptionRule = fmt.Sprintf("use one line of visible text, at most %d bytes: no control characters, bidirectional controls, line or paragraph separators or invisible format characters (the zero-width joiner U+200D and non-joiner U+200C are kept)", MaxDescriptionLen)

// CheckDescription returns nil when d may be a key's description, else
// an error saying why: valid UTF-8 of at most MaxDescriptionLen bytes,
// one line of visible text by the rule of a subscription's description
// (contract.DescriptionRefusal): no control character, bidirectional
// control, line or paragraph separator or invisible format character,
// but the zero-width non-joiner and joiner, the Mongolian vowel separator
// and the visible prepended concatenation marks. A listing prints such a
// description as it is. Only control characters were refused: a
// bidirectional control showed triggers-keys list's text in another
// order than it held ("Trojan Source", CVE-2021-42574), and an invisible
// one made two descriptions that look the same differ. The error names
// the character's class, its code point and its place, counted in
// characters from 1, never the description itself.
func CheckDescription(d string) error {
	if len(d) > MaxDescriptionLen {
		return fmt.Errorf("description is %d bytes: %s", len(d), descriptionRule)
	}
	if !utf8.ValidString(d) {
		return fmt.Errorf("description is not valid UTF-8: %s", descriptionRule)
	}
	n := 0
	for _, r := range d {
		n++
		if class := contract.DescriptionRefusal(r); class != "" {
			return fmt.Errorf("description holds the %s %U at character %d: %s", class, r, n, descriptionRule)
		}
	}
	return nil
}

// ValidDescription reports whether d may be a key's description
// (CheckDescription).
func ValidDescription(d string) bool { return CheckDescription(d) == nil }

// Key is a stored key's record; never the key itself.
type Key struct {
	Hash        string
	Prefix      string
	TenantID    string
	Status      string
	Description string
	CreatedAt   time.Time
	RevokedAt   time.Time
	// Shards is the tenant's sharding (write and read shard counts,
	// shard.Config), the same on every key of the tenant that is not
	// revoked (a revoked key keeps the counts it had); zero counts
	// mean one shard. Shards.Write is the write count from ShardsFrom
	// on; see ShardsAt.
	Shards shard.Config
	// ShardsPrev is the write count before ShardsFrom while a growth of
	// the write count is pending (SetShards: zero means one shard), and
	// ShardsFrom the time the growth takes effect; ShardsFrom is zero
	// when Shards.Write applies already (and for keys of earlier
	// versions).
	ShardsPrev int
	ShardsFrom time.Time
}

// ShardsAt returns the sharding k gives a request authorized at t: the
// read count, and the write count in effect at t (ShardsPrev before
// ShardsFrom, Shards.Write from then on). Zero counts mean one shard.
func (k Key) ShardsAt(t time.Time) shard.Config {
	c := k.Shards
	if !k.ShardsFrom.IsZero() && t.Before(k.ShardsFrom) {
		c.Write = k.ShardsPrev
	}
	return c
}

// DB is the part of the DynamoDB client the key store uses.
type DB interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
	Scan(ctx context.Context, in *dynamodb.ScanInput, optFns ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error)
	TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error)
}

// Store keeps API keys in the table of schema.APIKeys.
type Store struct {
	db          DB
	table       string
	now         func() time.Time
	switchDelay time.Duration
}

// Option configures a Store.
type Option func(*Store)

// WithClock sets the store's clock (default time.Now): the time Principal
// evaluates a pending growth of the write count at, and the time SetShards
// and Create start from.
func WithClock(now func() time.Time) Option { return func(s *Store) { s.now = now } }

// WithShardSwitchDelay sets how long after SetShards a growth of a
// tenant's write count takes effect (default DefaultShardSwitchDelay):
// the authorizer cache TTL of the deployment plus ShardSwitchMargin. Zero
// makes it take effect at once, which is safe only while no request has
// used the tenant's keys (no authorizer answer can be cached): a fresh
// tenant of a local or test environment.
func WithShardSwitchDelay(d time.Duration) Option {
	return func(s *Store) { s.switchDelay = max(0, d) }
}

// NewStore returns a key store on table.
func NewStore(db DB, table string, opts ...Option) *Store {
	s := &Store{db: db, table: table, now: time.Now, switchDelay: DefaultShardSwitchDelay}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Create makes a new active key for tenant and returns it; the caller must
// show it once: only its hash is stored. The key takes the sharding the
// tenant's record and other keys carry (SetShards), so every key of a
// tenant writes and reads the same shards; it is written with the
// tenant's record in one transaction (ErrShardsChanged when concurrent
// changes of the tenant kept winning). A tenant has at most
// MaxKeysPerTenant keys that are not revoked: Create refuses another, and
// writes nothing. The description must pass CheckDescription (its error
// is returned, nothing written).
func (s *Store) Create(ctx context.Context, tenant, description string) (string, Key, error) {
	if !event.ValidTenantID(tenant) {
		return "", Key{}, fmt.Errorf("tenant id %q is invalid: use 1-128 characters of [A-Za-z0-9_.:-], starting with a letter or digit", tenant)
	}
	if err := CheckDescription(description); err != nil {
		return "", Key{}, err
	}
	key, err := Generate()
	if err != nil {
		return "", Key{}, err
	}
	k := Key{
		Hash:        Hash(key),
		Prefix:      DisplayPrefix(key),
		TenantID:    tenant,
		Status:      StatusActive,
		Description: description,
		CreatedAt:   s.now().UTC().Truncate(time.Millisecond),
	}
	item := map[string]types.AttributeValue{
		schema.AttrKeyHash:   &types.AttributeValueMemberS{Value: k.Hash},
		schema.AttrKeyPrefix: &types.AttributeValueMemberS{Value: k.Prefix},
		schema.AttrTenantID:  &types.AttributeValueMemberS{Value: tenant},
		schema.AttrKeyStatus: &types.AttributeValueMemberS{Value: StatusActive},
		schema.AttrCreatedAt: &types.AttributeValueMemberN{Value: strconv.FormatInt(k.CreatedAt.UnixMilli(), 10)},
	}
	if description != "" {
		item[schema.AttrDescription] = &types.AttributeValueMemberS{Value: description}
	}
	for range maxTenantAttempts {
		r, err := s.readTenant(ctx, tenant)
		if err != nil {
			return "", Key{}, err
		}
		if len(r.keys) >= MaxKeysPerTenant {
			// Past it, every SetShards of the tenant would be refused.
			return "", Key{}, fmt.Errorf("tenant %q has %d API keys that are not revoked, the most it may have (a change of its sharding writes them all in one transaction): revoke unused keys first", tenant, len(r.keys))
		}
		k.Shards, k.ShardsPrev, k.ShardsFrom = r.cfg, 0, time.Time{}
		delete(item, schema.AttrShards)
		delete(item, schema.AttrReadShards)
		delete(item, schema.AttrShardsPrev)
		delete(item, schema.AttrShardsFrom)
		if k.Shards.Write > 0 {
			item[schema.AttrShards] = &types.AttributeValueMemberN{Value: strconv.Itoa(k.Shards.Write)}
		}
		if k.Shards.Read > 0 {
			item[schema.AttrReadShards] = &types.AttributeValueMemberN{Value: strconv.Itoa(k.Shards.Read)}
		}
		if r.pending(s.now()) {
			// A growth not in effect yet: the new key waits for it as
			// the others do, or its answers would write to shards that
			// cached answers of the others do not read.
			k.ShardsPrev, k.ShardsFrom = r.prev, r.from
			item[schema.AttrShardsPrev] = &types.AttributeValueMemberN{Value: strconv.Itoa(max(1, r.prev))}
			item[schema.AttrShardsFrom] = &types.AttributeValueMemberN{Value: strconv.FormatInt(r.from.UnixMilli(), 10)}
		}
		// The key and the tenant's record (its keys, version) in one
		// transaction: a SetShards of the tenant meanwhile makes this
		// start again with the new counts (shards.go).
		_, err = s.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
			s.tenantWrite(tenant, r, r.cfg, nil, append(slices.Clone(r.keys), k.Hash)),
			{Put: &types.Put{
				TableName:                aws.String(s.table),
				Item:                     item,
				ConditionExpression:      aws.String("attribute_not_exists(#h)"),
				ExpressionAttributeNames: map[string]string{"#h": schema.AttrKeyHash},
			}},
		}})
		if tenantRaced(err) {
			continue
		}
		if err != nil {
			return "", Key{}, fmt.Errorf("store API key: %w", err)
		}
		return key, k, nil
	}
	return "", Key{}, ErrShardsChanged
}

// Authenticate returns the tenant of the presented key: ErrMissing for an
// empty key, ErrUnknown for a key not in the table (or malformed), and
// ErrRevoked for a revoked one. One GetItem on the key's hash.
func (s *Store) Authenticate(ctx context.Context, key string) (string, error) {
	p, err := s.Principal(ctx, key)
	return p.Tenant, err
}

// Principal is who an API key authenticates: the tenant and its sharding
// at the time of the lookup (normalized: counts of at least 1; the write
// count is the previous one while a growth is pending: Key.ShardsAt).
type Principal struct {
	Tenant string
	Shards shard.Config
}

// Principal is Authenticate with the tenant's sharding.
func (s *Store) Principal(ctx context.Context, key string) (Principal, error) {
	tenant, cfg, err := s.lookup(ctx, key)
	return Principal{Tenant: tenant, Shards: cfg}, err
}

func (s *Store) lookup(ctx context.Context, key string) (string, shard.Config, error) {
	var none shard.Config
	if key == "" {
		return "", none, ErrMissing
	}
	if len(key) > maxKeyLen {
		return "", none, ErrUnknown
	}
	in := &dynamodb.GetItemInput{
		TableName: aws.String(s.table),
		Key:       map[string]types.AttributeValue{schema.AttrKeyHash: &types.AttributeValueMemberS{Value: Hash(key)}},
	}
	out, err := s.db.GetItem(ctx, in)
	if err == nil && out.Item == nil && DisplayPrefix(key) != "" {
		// A key of the generated shape that the eventually consistent
		// read did not find may have been created a moment ago (a
		// pipeline that creates a key and uses it at once): read it
		// again, consistently, before refusing it. Only misses of
		// well-formed keys pay for the second read.
		in.ConsistentRead = aws.Bool(true)
		out, err = s.db.GetItem(ctx, in)
	}
	if err != nil {
		if ddb.Unavailable(err) {
			return "", none, fmt.Errorf("look up API key: %w: %v", event.ErrUnavailable, err)
		}
		return "", none, fmt.Errorf("look up API key: %w", err)
	}
	if out.Item == nil {
		return "", none, ErrUnknown
	}
	k := keyFromItem(out.Item)
	if k.Status == StatusRevoked {
		return "", none, ErrRevoked
	}
	if k.Status != StatusActive || !event.ValidTenantID(k.TenantID) {
		return "", none, ErrUnknown
	}
	// The write count in effect now: an answer given before a growth's
	// time carries the previous count (and is cached with it for the
	// TTL, which is safe: every read count covers it).
	return k.TenantID, k.ShardsAt(s.now()).Normalize(), nil
}

// List returns the keys of tenant (TenantIndex, newest first), or of all
// tenants when tenant is empty (a Scan: the table is small and this is an
// operator's tool).
func (s *Store) List(ctx context.Context, tenant string) ([]Key, error) {
	var keys []Key
	var start map[string]types.AttributeValue
	for {
		var items []map[string]types.AttributeValue
		var last map[string]types.AttributeValue
		if tenant != "" {
			out, err := s.db.Query(ctx, &dynamodb.QueryInput{
				TableName:                 aws.String(s.table),
				IndexName:                 aws.String(schema.TenantIndex),
				KeyConditionExpression:    aws.String("#t = :t"),
				ExpressionAttributeNames:  map[string]string{"#t": schema.AttrTenantID},
				ExpressionAttributeValues: map[string]types.AttributeValue{":t": &types.AttributeValueMemberS{Value: tenant}},
				ScanIndexForward:          aws.Bool(false),
				ExclusiveStartKey:         start,
			})
			if err != nil {
				return nil, fmt.Errorf("list API keys of %s: %w", tenant, err)
			}
			items, last = out.Items, out.LastEvaluatedKey
		} else {
			out, err := s.db.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(s.table), ExclusiveStartKey: start})
			if err != nil {
				return nil, fmt.Errorf("list API keys: %w", err)
			}
			items, last = out.Items, out.LastEvaluatedKey
		}
		for _, it := range items {
			if k := keyFromItem(it); !strings.HasPrefix(k.Hash, schema.TenantRecordPrefix) {
				keys = append(keys, k)
			}
		}
		if last == nil {
			return keys, nil
		}
		start = last
	}
}

// ErrNoSuchKey is returned by Revoke for a hash that is not in the table.
var ErrNoSuchKey = errors.New("no API key with this hash")

// Revoke marks the key with hash revoked. It reports whether the key was
// active before; revoking a revoked key again is not an error. The write
// carries a token of the call (schema.AttrRevokedBy): when DynamoDB's
// answer is lost and the SDK sends it again, the resend that finds the
// key revoked finds its own token, and the revocation is still this
// call's (it was reported "already revoked"; found by review). hash may be
// in any case, with blanks around it; anything but a hash (ValidHash once
// so normalized: a tenant's record, a blank, the key itself) is
// ErrNoSuchKey, without a request.
func (s *Store) Revoke(ctx context.Context, hash string) (bool, error) {
	hash = strings.ToLower(strings.TrimSpace(hash))
	if !ValidHash(hash) {
		return false, ErrNoSuchKey
	}
	// Any key item not yet revoked, whatever its status (an item written
	// by hand with another status used to be answered "already revoked"
	// and left as it was).
	tok := rand.Text()
	_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                aws.String(s.table),
		Key:                      map[string]types.AttributeValue{schema.AttrKeyHash: &types.AttributeValueMemberS{Value: hash}},
		UpdateExpression:         aws.String("SET #s = :revoked, #r = :now, #by = :tok"),
		ConditionExpression:      aws.String("attribute_exists(#h) AND (attribute_not_exists(#s) OR #s <> :revoked)"),
		ExpressionAttributeNames: map[string]string{"#h": schema.AttrKeyHash, "#s": schema.AttrKeyStatus, "#r": schema.AttrRevokedAt, "#by": schema.AttrRevokedBy},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":revoked": &types.AttributeValueMemberS{Value: StatusRevoked}, ":now": &types.AttributeValueMemberN{Value: strconv.FormatInt(s.now().UnixMilli(), 10)},
			":tok": &types.AttributeValueMemberS{Value: tok},
		},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		if ccf.Item == nil {
			return false, ErrNoSuchKey
		}
		return itemattr.GetS(ccf.Item, schema.AttrRevokedBy) == tok, nil // this call's own revocation, its answer lost
	}
	if err != nil {
		return false, fmt.Errorf("revoke API key: %w", err)
	}
	return true, nil
}

func keyFromItem(item map[string]types.AttributeValue) Key {
	str := func(n string) string {
		if v, ok := item[n].(*types.AttributeValueMemberS); ok {
			return v.Value
		}
		return ""
	}
	ms := func(n string) time.Time {
		if v, ok := item[n].(*types.AttributeValueMemberN); ok {
			if i, err := strconv.ParseInt(v.Value, 10, 64); err == nil {
				return time.UnixMilli(i).UTC()
			}
		}
		return time.Time{}
	}
	num := func(n string) int64 {
		if v, ok := item[n].(*types.AttributeValueMemberN); ok {
			if i, err := strconv.ParseInt(v.Value, 10, 64); err == nil && i > 0 && i <= shard.MaxShards {
				return i
			}
		}
		return 0
	}
	return Key{
		Hash:        str(schema.AttrKeyHash),
		Prefix:      str(schema.AttrKeyPrefix),
		TenantID:    str(schema.AttrTenantID),
		Status:      str(schema.AttrKeyStatus),
		Description: str(schema.AttrDescription),
		CreatedAt:   ms(schema.AttrCreatedAt),
		RevokedAt:   ms(schema.AttrRevokedAt),
		Shards:      shard.Config{Write: int(num(schema.AttrShards)), Read: int(num(schema.AttrReadShards))},
		ShardsPrev:  int(num(schema.AttrShardsPrev)),
		ShardsFrom:  ms(schema.AttrShardsFrom),
	}
}
