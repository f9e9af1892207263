// Package item reads events out of events-table items: the one mapping
// from a stored item (or a stream image converted to one) back to an
// event, shared by the store and the stream consumer. It imports only the
// SDK's attribute value types, so the stream consumer does not link the
// store. The write direction (an event to an item) is the store's.
package item

import (
	"encoding/base64"
	"encoding/json"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/triggers-dev/triggers/contract"
	"github.com/triggers-dev/triggers/internal/avjson"
	"github.com/triggers-dev/triggers/internal/event"
	"github.com/triggers-dev/triggers/schema"
)

// EventFromItem converts a table item back to an event, its payload
// decoded to Payload.
func EventFromItem(item map[string]types.AttributeValue) event.Event {
	e := eventFields(item)
	if p, ok := FromAttributeValue(item[schema.AttrPayload]).(map[string]any); ok {
		e.Payload = p
	} else {
		e.Payload = map[string]any{}
	}
	return e
}

// EventFromItemStored converts a table item back to an event like
// EventFromItem, but leaves the payload in stored form: Stored is the
// payload attribute's map (avjson.Payload, the empty object when the item
// has no map there) and Payload is nil. Its JSON (event.Event.AppendJSON)
// is EventFromItem's, without building the map[string]any.
func EventFromItemStored(item map[string]types.AttributeValue) event.Event {
	e := eventFields(item)
	if m, ok := item[schema.AttrPayload].(*types.AttributeValueMemberM); ok {
		e.Stored = avjson.Payload(m.Value)
	} else {
		e.Stored = avjson.Payload(nil)
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

// FromAttributeValue converts a DynamoDB attribute value back to decoded
// JSON; numbers become json.Number with DynamoDB's digits. Sets become
// arrays and binary values base64 strings (the API never writes them).
func FromAttributeValue(av types.AttributeValue) any {
	switch x := av.(type) {
	case *types.AttributeValueMemberNULL:
		return nil
	case *types.AttributeValueMemberBOOL:
		return x.Value
	case *types.AttributeValueMemberS:
		return x.Value
	case *types.AttributeValueMemberN:
		return json.Number(x.Value)
	case *types.AttributeValueMemberM:
		m := make(map[string]any, len(x.Value))
		for k, e := range x.Value {
			m[k] = FromAttributeValue(e)
		}
		return m
	case *types.AttributeValueMemberL:
		l := make([]any, len(x.Value))
		for i, e := range x.Value {
			l[i] = FromAttributeValue(e)
		}
		return l
	case *types.AttributeValueMemberSS:
		l := make([]any, len(x.Value))
		for i, e := range x.Value {
			l[i] = e
		}
		return l
	case *types.AttributeValueMemberNS:
		l := make([]any, len(x.Value))
		for i, e := range x.Value {
			l[i] = json.Number(e)
		}
		return l
	case *types.AttributeValueMemberB:
		return base64.StdEncoding.EncodeToString(x.Value)
	case *types.AttributeValueMemberBS:
		l := make([]any, len(x.Value))
		for i, e := range x.Value {
			l[i] = base64.StdEncoding.EncodeToString(e)
		}
		return l
	}
	return nil
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
