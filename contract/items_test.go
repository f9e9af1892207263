package contract_test

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"

	"github.com/triggers-dev/triggers/contract"
	"github.com/triggers-dev/triggers/internal/event"
	"github.com/triggers-dev/triggers/internal/item"
	"github.com/triggers-dev/triggers/internal/store"
	"github.com/triggers-dev/triggers/schema"
)

// The store and the domain build their keys and stored names from the
// contract: a changed separator or name changes both sides at once.
func TestStoredNamesComeFromTheContract(t *testing.T) {
	assert.Equal(t, "2026-01-02T03:04:05.000006Z#id-1", contract.Key("2026-01-02T03:04:05.000006Z", "id-1"))
	e := event.Event{ID: "id-1", Timestamp: "2026-01-02T03:04:05.000006Z"}
	assert.Equal(t, contract.Key(e.Timestamp, e.ID), e.SortKey())
	p := store.IdempotencyPartition("tenant-a", "k")
	assert.Regexp(t, `^idempotency#tenant-a#[A-Za-z0-9_-]{43}$`, p)
	assert.True(t, event.ValidTenantID("tenant-a") && !event.ValidTenantID("a"+contract.KeySeparator+"b"), "tenant ids never hold the key separator")
	it := item.FromEvent("tenant-a", event.Event{ID: "id-1", Timestamp: e.Timestamp, Status: event.Received, Type: "t", Metadata: event.Metadata{SourceIP: "192.0.2.1", APIVersion: "v1", CorrelationID: "c"}}, schema.ProfileSeed)
	md := item.EventFromItem(it).Metadata
	assert.Equal(t, event.Metadata{SourceIP: "192.0.2.1", APIVersion: "v1", CorrelationID: "c"}, md)
	for _, k := range []string{contract.MetadataSourceIP, contract.MetadataAPIVersion, contract.MetadataCorrelationID} {
		assert.Contains(t, it["metadata"].(*types.AttributeValueMemberM).Value, k)
	}
}
