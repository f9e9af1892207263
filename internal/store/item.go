// Item mapping: an event and its table item, in the seed's exact shape.

package store

import (
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/triggers-dev/triggers/contract"
	"github.com/triggers-dev/triggers/internal/event"
	"github.com/triggers-dev/triggers/internal/item"
	"github.com/triggers-dev/triggers/schema"
)

// Item returns the table item of event e for tenant, shaped exactly like
// the example item of seed 000.
func Item(tenant string, e event.Event) (map[string]types.AttributeValue, error) {
	return itemFor(tenant, e)
}

// itemFor returns the table item of e for tenant in the store's profile:
// seed 000's shape, or for schema.ProfileLean without
// event_type#timestamp (there is no EventTypeIndex) and, once delivered,
// without status#timestamp (the sparse StatusIndex holds undelivered
// events only).
func (st *Store) itemFor(tenant string, e event.Event) (map[string]types.AttributeValue, error) {
	it, err := itemFor(tenant, e)
	if err == nil && st.lean {
		delete(it, schema.AttrEventTypeTS)
		if e.Status == event.Delivered {
			delete(it, schema.AttrStatusTS)
		}
	}
	return it, err
}

// itemFor returns the table item of e for tenant, shaped like seed 000.
// The payload attribute holds e.Payload as it is (the empty map for nil).
func itemFor(tenant string, e event.Event) (map[string]types.AttributeValue, error) {
	// The item's own maps' members, allocated together.
	ms := make([]types.AttributeValueMemberM, 2)
	ms[0].Value = e.Payload
	if e.Payload == nil {
		ms[0].Value = event.Payload{}
	}
	// The item's own values, allocated together.
	ss := make([]types.AttributeValueMemberS, 0, 11)
	str := func(v string) types.AttributeValue {
		ss = append(ss, types.AttributeValueMemberS{Value: v})
		return &ss[len(ss)-1]
	}
	// The three keys and the ttl in one string: contract.Key of each.
	var b strings.Builder
	sep := contract.KeySeparator
	b.Grow(len(e.Timestamp)*3 + len(e.ID) + len(e.Type) + len(e.Status) + 3*len(sep) + 20)
	for _, part := range [...]string{e.Timestamp, sep, e.ID} {
		b.WriteString(part)
	}
	n1 := b.Len()
	for _, part := range [...]string{e.Type, sep, e.Timestamp} {
		b.WriteString(part)
	}
	n2 := b.Len()
	for _, part := range [...]string{string(e.Status), sep, e.Timestamp} {
		b.WriteString(part)
	}
	n3 := b.Len()
	var num [20]byte
	b.Write(strconv.AppendInt(num[:0], e.TTL, 10))
	keys := b.String()
	sortKey, typeKey, statusKey, ttl := keys[:n1], keys[n1:n2], keys[n2:n3], keys[n3:]
	ns := make([]types.AttributeValueMemberN, 2)
	ns[0].Value = ttl
	ns[1].Value = strconv.Itoa(e.RetryCount)
	md := make(map[string]types.AttributeValue, 3)
	ms[1].Value = md
	md[contract.MetadataSourceIP] = str(e.Metadata.SourceIP)
	md[contract.MetadataAPIVersion] = str(e.Metadata.APIVersion)
	if e.Metadata.CorrelationID != "" {
		md[contract.MetadataCorrelationID] = str(e.Metadata.CorrelationID)
	}
	return map[string]types.AttributeValue{
		schema.AttrUserID:           str(tenant),
		schema.AttrTimestampEventID: str(sortKey),
		schema.AttrEventID:          str(e.ID),
		schema.AttrEventType:        str(e.Type),
		schema.AttrPayload:          &ms[0],
		schema.AttrStatus:           str(string(e.Status)),
		schema.AttrTimestamp:        str(e.Timestamp),
		schema.AttrTTL:              &ns[0],
		schema.AttrRetryCount:       &ns[1],
		schema.AttrMetadata:         &ms[1],
		schema.AttrEventTypeTS:      str(typeKey),
		schema.AttrStatusTS:         str(statusKey),
	}, nil
}

// EventFromItem converts a table item back to an event
// (item.EventFromItem).
func EventFromItem(it map[string]types.AttributeValue) event.Event { return item.EventFromItem(it) }
