package conformance

import (
	"context"
	"net/http"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/internal/shard"
	"github.com/triggers-dev/triggers/schema"
)

// TestLocalRunShardsTenantA checks that the local run really serves
// tenant A sharded (-shards): its events are spread over its shards'
// partitions, and one id in each is read back, so the rest of the suite
// runs the contract against a sharded tenant and an unsharded one.
func TestLocalRunShardsTenantA(t *testing.T) {
	tg := api(t)
	if !tg.local || *flagShards <= 1 {
		t.Skip("the local run with -shards > 1 only")
	}
	var ids []string
	for i := 0; i < 24; i++ {
		ids = append(ids, tg.post(t, tg.key, "sharding.check", `{"i":1}`).ID)
	}
	used := 0
	for k := 0; k < *flagShards; k++ {
		out, err := db.Client.Query(context.Background(), &dynamodb.QueryInput{
			TableName:                 aws.String(tg.events),
			KeyConditionExpression:    aws.String("#pk = :pk"),
			ExpressionAttributeNames:  map[string]string{"#pk": schema.AttrUserID},
			ExpressionAttributeValues: map[string]types.AttributeValue{":pk": &types.AttributeValueMemberS{Value: shard.Partition("conformance-a", k)}},
			Select:                    types.SelectCount,
		})
		require.NoError(t, err)
		if out.Count > 0 {
			used++
		}
	}
	assert.Greater(t, used, 1, "24 events of tenant A went to one partition")
	for _, id := range ids {
		r := tg.do(t, "GET", "/v1/events/"+id, bearer(tg.key), nil)
		require.Equal(t, http.StatusOK, r.Status, "%s", r)
	}
}
