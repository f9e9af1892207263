package item_test

import (
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"

	"github.com/triggers-dev/triggers/internal/event"
	"github.com/triggers-dev/triggers/internal/event/eventtest"
	"github.com/triggers-dev/triggers/internal/item"
	"github.com/triggers-dev/triggers/schema"
)

func names(it map[string]types.AttributeValue) []string {
	var out []string
	for k := range it {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// The seed profile writes every attribute of seed 000's item; the lean
// one leaves out event_type#timestamp always and status#timestamp once
// the event is delivered. Each item reads back as the event.
func TestFromEventProfiles(t *testing.T) {
	e := event.Event{
		ID: "id-1", Type: "order.paid", Status: event.Received, Timestamp: "2026-01-02T03:04:05.000006Z",
		RetryCount: 2, TTL: 1798031571, Payload: eventtest.Payload(t, `{"n":1.50,"l":[true,null,{}]}`),
		Metadata: event.Metadata{SourceIP: "192.0.2.1", APIVersion: "v1", CorrelationID: "c"},
	}
	all := []string{
		schema.AttrEventID, schema.AttrEventType, schema.AttrEventTypeTS, schema.AttrMetadata, schema.AttrPayload, schema.AttrRetryCount,
		schema.AttrStatus, schema.AttrStatusTS, schema.AttrTimestamp, schema.AttrTimestampEventID, schema.AttrTTL, schema.AttrUserID,
	}
	slices.Sort(all)
	without := func(drop ...string) []string {
		return slices.DeleteFunc(slices.Clone(all), func(n string) bool { return slices.Contains(drop, n) })
	}
	delivered := e
	delivered.Status = event.Delivered
	for _, tc := range []struct {
		name    string
		e       event.Event
		profile schema.EventsProfile
		want    []string
	}{
		{"seed", e, schema.ProfileSeed, all},
		{"seed delivered", delivered, schema.ProfileSeed, all},
		{"lean", e, schema.ProfileLean, without(schema.AttrEventTypeTS)},
		{"lean delivered", delivered, schema.ProfileLean, without(schema.AttrEventTypeTS, schema.AttrStatusTS)},
	} {
		it := item.FromEvent("tenant-a", tc.e, tc.profile)
		assert.Equal(t, tc.want, names(it), tc.name)
		assert.Equal(t, tc.e, item.EventFromItem(it), tc.name)
		assert.Equal(t, &types.AttributeValueMemberS{Value: "tenant-a"}, it[schema.AttrUserID], tc.name)
		assert.Equal(t, &types.AttributeValueMemberS{Value: "2026-01-02T03:04:05.000006Z#id-1"}, it[schema.AttrTimestampEventID], tc.name)
		assert.Equal(t, &types.AttributeValueMemberN{Value: "1798031571"}, it[schema.AttrTTL], tc.name)
		assert.Equal(t, &types.AttributeValueMemberN{Value: "2"}, it[schema.AttrRetryCount], tc.name)
	}
	it := item.FromEvent("tenant-a", e, schema.ProfileSeed)
	assert.Equal(t, &types.AttributeValueMemberS{Value: "order.paid#2026-01-02T03:04:05.000006Z"}, it[schema.AttrEventTypeTS])
	assert.Equal(t, &types.AttributeValueMemberS{Value: "received#2026-01-02T03:04:05.000006Z"}, it[schema.AttrStatusTS])
}

// A nil payload is stored as the empty map, and an item without a
// payload map reads back with a nil one; the metadata map holds
// correlation_id only when there is one.
func TestFromEventEmptyParts(t *testing.T) {
	e := event.Event{ID: "id-1", Type: "t", Status: event.Received, Timestamp: "2026-01-02T03:04:05.000006Z", Metadata: event.Metadata{SourceIP: "192.0.2.1", APIVersion: "v1"}}
	it := item.FromEvent("tenant-a", e, schema.ProfileSeed)
	assert.Equal(t, &types.AttributeValueMemberM{Value: event.Payload{}}, it[schema.AttrPayload])
	md := it[schema.AttrMetadata].(*types.AttributeValueMemberM).Value
	assert.Equal(t, []string{"api_version", "source_ip"}, names(md))
	delete(it, schema.AttrPayload)
	got := item.EventFromItem(it)
	assert.Nil(t, got.Payload)
	assert.Equal(t, e, got)
}
