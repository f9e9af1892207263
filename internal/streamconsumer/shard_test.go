package streamconsumer_test

import (
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/internal/shard"
	"github.com/triggers-dev/triggers/internal/streamconsumer"
)

// An event in one of a sharded tenant's shards is delivered as the
// tenant's.
func TestDecideMapsAShardToItsTenant(t *testing.T) {
	for _, k := range []int{0, 1, 31} {
		img := eventImage(shard.Partition("acme", k), "e1", "user.created", map[string]events.DynamoDBAttributeValue{})
		d, m, err := streamconsumer.Decide(record("INSERT", "1", img))
		require.NoError(t, err)
		assert.Equal(t, streamconsumer.Deliver, d, "shard %d", k)
		assert.Equal(t, "acme", m.Tenant, "shard %d", k)
	}
}
