// Package item maps events to events-table items and back: FromEvent
// builds the item the store writes, EventFromItem reads a stored item (or
// a stream image converted to one) back to an event. The store, the stream
// consumer and the archiver share it; it imports only the SDK's attribute
// value types, so the stream consumer and the archiver do not link the
// store.
package item

import (
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/triggers-dev/triggers/contract"
	"github.com/triggers-dev/triggers/internal/event"
	"github.com/triggers-dev/triggers/schema"
)

// FromEvent returns the table item of event e for tenant: the write
// direction of EventFromItem. For schema.ProfileSeed it is shaped exactly
// like the example item of seed 000; schema.ProfileLean leaves out
// event_type#timestamp (there is no EventTypeIndex) and, once the event is
// delivered, status#timestamp (the sparse StatusIndex holds undelivered
// events only). The payload attribute holds e.Payload as it is (the empty
// map for nil), so the item shares its attribute values with e.
func FromEvent(tenant string, e event.Event, profile schema.EventsProfile) map[string]types.AttributeValue {
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
	it := map[string]types.AttributeValue{
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
	}
	if profile == schema.ProfileLean {
		delete(it, schema.AttrEventTypeTS)
		if e.Status == event.Delivered {
			delete(it, schema.AttrStatusTS)
		}
	}
	return it
}

// EventFromItem converts a table item back to an event. The payload is the
// payload attribute's map as it is (nil, the empty object, when the item
// has no map there).
func EventFromItem(item map[string]types.AttributeValue) event.Event {
	e := eventFields(item)
	if m, ok := item[schema.AttrPayload].(*types.AttributeValueMemberM); ok {
		e.Payload = m.Value
	}
	return e
}

// eventFields reads every attribute of an event but the payload.
func eventFields(item map[string]types.AttributeValue) event.Event {
	e := event.Event{
		ID:         GetS(item, schema.AttrEventID),
		Type:       GetS(item, schema.AttrEventType),
		Status:     event.Status(GetS(item, schema.AttrStatus)),
		Timestamp:  GetS(item, schema.AttrTimestamp),
		RetryCount: int(GetN(item, schema.AttrRetryCount)),
		TTL:        GetN(item, schema.AttrTTL),
	}
	if md, ok := item[schema.AttrMetadata].(*types.AttributeValueMemberM); ok {
		e.Metadata = event.Metadata{
			SourceIP:      GetS(md.Value, contract.MetadataSourceIP),
			APIVersion:    GetS(md.Value, contract.MetadataAPIVersion),
			CorrelationID: GetS(md.Value, contract.MetadataCorrelationID),
		}
	}
	return e
}

// GetS returns the string attribute name of item, or "".
func GetS(item map[string]types.AttributeValue, name string) string {
	if v, ok := item[name].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

// GetN returns the integer attribute name of item, or 0.
func GetN(item map[string]types.AttributeValue, name string) int64 {
	if v, ok := item[name].(*types.AttributeValueMemberN); ok {
		i, err := strconv.ParseInt(v.Value, 10, 64)
		if err == nil {
			return i
		}
	}
	return 0
}
