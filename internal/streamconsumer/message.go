package streamconsumer

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/triggers-dev/triggers/contract"
	"github.com/triggers-dev/triggers/internal/event"
	"github.com/triggers-dev/triggers/internal/item"
	"github.com/triggers-dev/triggers/internal/shard"
	"github.com/triggers-dev/triggers/schema"
)

// Names of the SQS message attributes every delivery message carries
// (both of data type String).
const (
	AttrTenant    = "tenant"
	AttrEventType = "event_type"
)

// Message is one event to deliver: the event's public JSON and the
// values of its message attributes.
type Message struct {
	// Tenant is the event's tenant (the item's user_id).
	Tenant string
	// EventType is the event's event_type.
	EventType string
	// EventID is the event's event_id; consumers deduplicate by it.
	EventID string
	// Body is the event's JSON as the HTTP API returns it (MarshalEvent).
	Body []byte
}

// size is the message's size as SQS counts it: body plus every
// attribute's name, data type and value.
func (m Message) size() int {
	const str = len("String")
	return len(m.Body) + len(AttrTenant) + str + len(m.Tenant) + len(AttrEventType) + str + len(m.EventType)
}

// MarshalEvent returns the public JSON of e: the bytes the HTTP API writes
// for the event (encoding/json with HTML escaping off), without the
// trailing newline. The only difference: the noncharacters U+FFFE and
// U+FFFF, which SQS refuses in a message body, are written as the JSON
// escapes \ufffe and \uffff, which decode to the same string.
func MarshalEvent(e event.Event) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(e); err != nil {
		return nil, fmt.Errorf("encode event %s: %w", e.ID, err)
	}
	b := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	// Outside strings JSON is ASCII, so these runes only occur inside
	// strings, where the escapes mean the same.
	b = bytes.ReplaceAll(b, []byte("\uFFFE"), []byte(`\ufffe`))
	b = bytes.ReplaceAll(b, []byte("\uFFFF"), []byte(`\uffff`))
	return b, nil
}

// Decision is what the consumer does with one stream record.
type Decision int

// The decisions of Decide.
const (
	// Deliver: an inserted event; send it.
	Deliver Decision = iota
	// Skip: not a new event (MODIFY, REMOVE including TTL deletions, or
	// another record of the table: idempotency, subscription, attempt).
	Skip
)

// Decide classifies a stream record. For an inserted event it returns
// Deliver and the message; MODIFY and REMOVE records and idempotency
// records give Skip. A record that can never be delivered (an INSERT
// without a new image, an image that does not convert, an item missing
// an event's attributes) is an error wrapping ErrMalformed.
func Decide(r events.DynamoDBEventRecord) (Decision, Message, error) {
	if r.EventName != string(events.DynamoDBOperationTypeInsert) {
		return Skip, Message{}, nil
	}
	img := r.Change.NewImage
	if len(img) == 0 {
		return Skip, Message{}, fmt.Errorf("%w: INSERT record without a new image (stream view type %q): the stream must be NEW_IMAGE or NEW_AND_OLD_IMAGES", ErrMalformed, r.Change.StreamViewType)
	}
	// Look at the partition key first, so that the table's other records
	// (idempotency records, webhook subscriptions and attempts: their
	// partitions contain '#', which no tenant id does) are skipped even
	// if the rest of their image were odd.
	if pk, ok := img[schema.AttrUserID]; ok {
		if v, err := AttributeValue(pk); err == nil {
			if sv, ok := v.(*types.AttributeValueMemberS); ok && !contract.IsEventPartition(sv.Value) {
				return Skip, Message{}, nil
			}
		}
	}
	it, err := Item(img)
	if err != nil {
		return Skip, Message{}, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	for _, name := range []string{schema.AttrUserID, schema.AttrEventID, schema.AttrEventType, schema.AttrStatus, schema.AttrTimestamp} {
		if v, ok := it[name].(*types.AttributeValueMemberS); !ok || v.Value == "" {
			return Skip, Message{}, fmt.Errorf("%w: attribute %q is missing, empty or not a string", ErrMalformed, name)
		}
	}
	if _, ok := it[schema.AttrPayload].(*types.AttributeValueMemberM); !ok {
		return Skip, Message{}, fmt.Errorf("%w: attribute %q is missing or not a map", ErrMalformed, schema.AttrPayload)
	}
	e := item.EventFromItem(it)
	body, err := MarshalEvent(e)
	if err != nil {
		return Skip, Message{}, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	// A sharded tenant's events are in its shards' partitions.
	tenant, _ := shard.TenantOf(it[schema.AttrUserID].(*types.AttributeValueMemberS).Value)
	return Deliver, Message{Tenant: tenant, EventType: e.Type, EventID: e.ID, Body: body}, nil
}
