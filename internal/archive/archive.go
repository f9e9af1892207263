// Package archive keeps the events that DynamoDB's TTL expires: it reads
// the events table's stream (view NEW_AND_OLD_IMAGES), picks the REMOVE
// records DynamoDB itself made when an item's ttl passed (user identity
// type "Service", principal "dynamodb.amazonaws.com"), converts each old
// image into the event's public JSON (exactly what GET /v1/events/{id}
// returned for it, numbers with every digit) and writes them to S3 as
// gzip-compressed JSON lines, one object per tenant and day of a batch:
//
//	<prefix>tenant=<tenant>/date=<YYYY-MM-DD>/<batch id>.jsonl.gz
//
// date is the UTC day of the event's timestamp (when it was ingested), so
// an audit of one tenant's day reads one folder. The batch id is derived
// from the records' sequence numbers: a retried batch writes the same
// objects again, byte for byte.
//
// Deletions by a user or an application (no TTL identity) and the records
// that are not events (idempotency records, webhook subscriptions and
// attempts: contract.IsEventPartition) are not archived; INSERT and MODIFY
// records are ignored.
//
// The conversion (IsTTLExpiry, Convert, Build) is pure; Archiver writes
// through Putter (PutObject only), which *s3.Client implements.
package archive

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/triggers-dev/triggers/contract"
	"github.com/triggers-dev/triggers/internal/event"
	"github.com/triggers-dev/triggers/internal/item"
	"github.com/triggers-dev/triggers/internal/shard"
	"github.com/triggers-dev/triggers/internal/streamconsumer"
	"github.com/triggers-dev/triggers/schema"
)

// The user identity DynamoDB puts on the REMOVE records of TTL deletions.
const (
	TTLIdentityType      = "Service"
	TTLIdentityPrincipal = "dynamodb.amazonaws.com"
)

// ErrMalformed marks a TTL record that can never be archived: no old image
// (the stream's view is KEYS_ONLY or NEW_IMAGE), an image that does not
// convert, an item missing an event's attributes, or one in a partition
// that is no tenant id.
var ErrMalformed = errors.New("malformed TTL record")

// IsTTLExpiry reports whether r is the REMOVE record of a TTL deletion.
func IsTTLExpiry(r events.DynamoDBEventRecord) bool {
	return r.EventName == string(events.DynamoDBOperationTypeRemove) &&
		r.UserIdentity != nil &&
		r.UserIdentity.Type == TTLIdentityType &&
		r.UserIdentity.PrincipalID == TTLIdentityPrincipal
}

// Line is one archived event: its public JSON and where it goes.
type Line struct {
	// Tenant is the event's tenant (the item's user_id).
	Tenant string
	// Day is the UTC day of the event's timestamp, YYYY-MM-DD.
	Day string
	// EventID is the event's event_id.
	EventID string
	// SequenceNumber is the stream record's sequence number.
	SequenceNumber string
	// JSON is the event as the HTTP API returns it, without a newline.
	JSON []byte
}

// Convert turns the REMOVE record of a TTL deletion into its Line. ok is
// false for records that are not archived: anything but a TTL deletion,
// and records that are not events (idempotency records, webhook
// subscriptions and attempts). An error wraps ErrMalformed.
func Convert(r events.DynamoDBEventRecord) (line Line, ok bool, err error) {
	if !IsTTLExpiry(r) {
		return Line{}, false, nil
	}
	img := r.Change.OldImage
	// A record that is not an event is skipped by its partition key
	// alone, even when the stream carries no old image of it.
	for _, keys := range []map[string]events.DynamoDBAttributeValue{r.Change.Keys, img} {
		if pk, found := keys[schema.AttrUserID]; found {
			if v, err := streamconsumer.AttributeValue(pk); err == nil {
				if sv, ok := v.(*types.AttributeValueMemberS); ok && !contract.IsEventPartition(sv.Value) {
					return Line{}, false, nil
				}
			}
		}
	}
	if len(img) == 0 {
		return Line{}, false, fmt.Errorf("%w: TTL REMOVE record without an old image (stream view type %q): the stream must be NEW_AND_OLD_IMAGES or OLD_IMAGE", ErrMalformed, r.Change.StreamViewType)
	}
	it, err := streamconsumer.Item(img)
	if err != nil {
		return Line{}, false, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	for _, name := range []string{schema.AttrUserID, schema.AttrEventID, schema.AttrEventType, schema.AttrStatus, schema.AttrTimestamp} {
		if v, ok := it[name].(*types.AttributeValueMemberS); !ok || v.Value == "" {
			return Line{}, false, fmt.Errorf("%w: attribute %q is missing, empty or not a string", ErrMalformed, name)
		}
	}
	if _, ok := it[schema.AttrPayload].(*types.AttributeValueMemberM); !ok {
		return Line{}, false, fmt.Errorf("%w: attribute %q is missing or not a map", ErrMalformed, schema.AttrPayload)
	}
	e := item.EventFromItem(it)
	ts, err := time.Parse(time.RFC3339Nano, e.Timestamp)
	if err != nil {
		return Line{}, false, fmt.Errorf("%w: timestamp %q is not RFC 3339", ErrMalformed, e.Timestamp)
	}
	body, err := streamconsumer.MarshalEvent(e)
	if err != nil {
		return Line{}, false, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	// A sharded tenant's events are archived under the tenant. A
	// partition that is no tenant's is no event the API wrote, and its
	// object key could pass S3's 1,024 bytes (a tenant id has at most 128
	// characters that need no escaping).
	pk := it[schema.AttrUserID].(*types.AttributeValueMemberS).Value
	tenant, _ := shard.TenantOf(pk)
	if !event.ValidTenantID(tenant) {
		return Line{}, false, fmt.Errorf("%w: partition %.140q is not a tenant id (1-128 characters of [A-Za-z0-9_.:-], starting with a letter or digit)", ErrMalformed, pk)
	}
	return Line{
		Tenant:         tenant,
		Day:            ts.UTC().Format(time.DateOnly),
		EventID:        e.ID,
		SequenceNumber: r.Change.SequenceNumber,
		JSON:           body,
	}, true, nil
}

// Object is one S3 object of the archive: the lines of one tenant and day
// of a batch.
type Object struct {
	// Key is <prefix>tenant=<tenant>/date=<day>/<batch id>.jsonl.gz.
	Key string
	// Body is the gzip-compressed JSON lines, each ending in "\n".
	Body []byte
	// Tenant and Day are the object's partition.
	Tenant, Day string
	// SequenceNumbers are the records the object holds, in stream order.
	SequenceNumbers []string
	// EventIDs are the events the object holds, in the same order.
	EventIDs []string
}

// Build groups lines (in stream order) by tenant and day and returns one
// object per group, ordered by key. The same lines always give the same
// keys and bodies.
func Build(prefix string, lines []Line) ([]Object, error) {
	groups := map[[2]string][]Line{}
	var order [][2]string
	for _, l := range lines {
		g := [2]string{l.Tenant, l.Day}
		if _, seen := groups[g]; !seen {
			order = append(order, g)
		}
		groups[g] = append(groups[g], l)
	}
	out := make([]Object, 0, len(order))
	for _, g := range order {
		ls := groups[g]
		o := Object{Tenant: g[0], Day: g[1]}
		var raw bytes.Buffer
		for _, l := range ls {
			raw.Write(l.JSON)
			raw.WriteByte('\n')
			o.SequenceNumbers = append(o.SequenceNumbers, l.SequenceNumber)
			o.EventIDs = append(o.EventIDs, l.EventID)
		}
		o.Key = Key(prefix, o.Tenant, o.Day, o.SequenceNumbers)
		var err error
		if o.Body, err = Gzip(raw.Bytes()); err != nil {
			return nil, err
		}
		out = append(out, o)
	}
	slices.SortFunc(out, func(a, b Object) int { return strings.Compare(a.Key, b.Key) })
	return out, nil
}

// Key returns the object key of the records seqs (in stream order) of
// tenant's day: prefix + "tenant=<tenant>/date=<day>/<batch id>.jsonl.gz".
// The batch id is the first sequence number, "-", and the first 16 hex
// digits of the SHA-256 of all of them (one per line): the same records
// give the same key, so a retried batch overwrites its objects. The tenant
// is path-escaped (tenant ids are [A-Za-z0-9_.:-], which stay as they are).
func Key(prefix, tenant, day string, seqs []string) string {
	h := sha256.Sum256([]byte(strings.Join(seqs, "\n")))
	first := ""
	if len(seqs) > 0 {
		first = seqs[0]
	}
	return fmt.Sprintf("%stenant=%s/date=%s/%s-%s.jsonl.gz", prefix, url.PathEscape(tenant), day, first, hex.EncodeToString(h[:8]))
}

// Gzip compresses b deterministically (no name, no modification time).
func Gzip(b []byte) ([]byte, error) {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	if _, err := zw.Write(b); err != nil {
		return nil, fmt.Errorf("gzip: %w", err)
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("gzip: %w", err)
	}
	return buf.Bytes(), nil
}
