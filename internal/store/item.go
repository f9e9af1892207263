// Item mapping: an event and its table item, in the seed's exact shape.

package store

import (
	"fmt"

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

// itemFor returns the table item of e for tenant, shaped like seed 000.
func itemFor(tenant string, e event.Event) (map[string]types.AttributeValue, error) {
	payload, err := ToAttributeValue(e.Payload)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", event.ErrInvalidItem, err)
	}
	md := map[string]types.AttributeValue{
		contract.MetadataSourceIP:   s(e.Metadata.SourceIP),
		contract.MetadataAPIVersion: s(e.Metadata.APIVersion),
	}
	if e.Metadata.CorrelationID != "" {
		md[contract.MetadataCorrelationID] = s(e.Metadata.CorrelationID)
	}
	return map[string]types.AttributeValue{
		schema.AttrUserID:           s(tenant),
		schema.AttrTimestampEventID: s(e.SortKey()),
		schema.AttrEventID:          s(e.ID),
		schema.AttrEventType:        s(e.Type),
		schema.AttrPayload:          payload,
		schema.AttrStatus:           s(string(e.Status)),
		schema.AttrTimestamp:        s(e.Timestamp),
		schema.AttrTTL:              n(e.TTL),
		schema.AttrRetryCount:       n(int64(e.RetryCount)),
		schema.AttrMetadata:         &types.AttributeValueMemberM{Value: md},
		schema.AttrEventTypeTS:      s(contract.Key(e.Type, e.Timestamp)),
		schema.AttrStatusTS:         s(contract.Key(string(e.Status), e.Timestamp)),
	}, nil
}

// EventFromItem converts a table item back to an event
// (item.EventFromItem).
func EventFromItem(it map[string]types.AttributeValue) event.Event { return item.EventFromItem(it) }
