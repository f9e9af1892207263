package store

import (
	"strconv"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/triggers-dev/triggers/internal/event"
	"github.com/triggers-dev/triggers/internal/item"
	"github.com/triggers-dev/triggers/schema"
)

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }

func n(v int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
}

// itemFor returns the table item of e in partition (the tenant or one of
// its shards) in the store's profile (item.FromEvent).
func (st *Store) itemFor(partition string, e event.Event) map[string]types.AttributeValue {
	profile := schema.ProfileSeed
	if st.lean {
		profile = schema.ProfileLean
	}
	it := item.FromEvent(partition, e, profile)
	if st.origin != "" {
		it[schema.AttrOriginRegion] = s(st.origin)
	}
	return it
}

func getS(it map[string]types.AttributeValue, name string) string { return item.GetS(it, name) }

func getN(it map[string]types.AttributeValue, name string) int64 { return item.GetN(it, name) }
