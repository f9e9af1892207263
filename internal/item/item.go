// Package item reads events out of events-table items: the one mapping
// from a stored item (or a stream image converted to one) back to an
// event, shared by the store and the stream consumer. It imports only the
// SDK's attribute value types, so the stream consumer does not link the
// store. The write direction (an event to an item) is the store's.
package item

import (
	"strconv"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/triggers-dev/triggers/contract"
	"github.com/triggers-dev/triggers/internal/event"
	"github.com/triggers-dev/triggers/schema"
)

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
