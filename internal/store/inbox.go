// Paging: inbox queries on the table or an index, one page at a time.

package store

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/triggers-dev/triggers/contract"
	"github.com/triggers-dev/triggers/internal/backoff"
	"github.com/triggers-dev/triggers/internal/ddb"
	"github.com/triggers-dev/triggers/internal/event"
	"github.com/triggers-dev/triggers/internal/item"
	"github.com/triggers-dev/triggers/internal/shard"
	"github.com/triggers-dev/triggers/schema"
)

// List returns one inbox page. It queries the key that serves the filter:
// the table (status=all), StatusIndex (a status, begins_with
// "status#"), or EventTypeIndex (an event type, begins_with "type#", with
// a filter on status unless all). In the lean profile (WithProfile) there
// is no EventTypeIndex and StatusIndex holds neither delivered events nor
// payloads: a status other than delivered queries StatusIndex (with a
// filter on event_type when one is asked for) and then reads the events
// themselves (fetchEvents); status=delivered and all query the table with
// filters. Every query has a Limit and a filter
// hiding expired events; short pages caused by filters are topped up with
// at most a few more Query calls.
//
// On a sharded table (WithSharding), a tenant whose context reads more
// than one shard (or whose cursor names several) gets a page merged from
// all its shards (listSharded).
func (st *Store) List(ctx context.Context, q event.InboxQuery) (event.Page, error) {
	if st.sharded {
		read := 1
		if c, ok := shard.FromContext(ctx); ok {
			read = c.Read
		}
		if q.After != nil {
			read = max(read, len(q.After.Shards))
		}
		if read > 1 {
			return st.listSharded(ctx, q, read)
		}
	}
	iq := st.inboxQuery(q, q.Tenant)
	in := iq.in
	switch {
	case q.After == nil:
	case q.After.SortKey != "":
		in.ExclusiveStartKey = st.key(q.Tenant, q.After.SortKey)
		if iq.indexAttr != "" {
			in.ExclusiveStartKey[iq.indexAttr] = s(q.After.IndexKey)
		}
	case len(q.After.Shards) > 0:
		// A merged page that took no event (its rounds ran out on a
		// filter) has no position of its own, only its shards' (with
		// sharding turned off since, or the tenant's context reading one
		// shard): the tenant's own partition, shard 0, goes on from its
		// entry.
		switch p := q.After.Shards[0]; p {
		case event.ShardDone:
			return event.Page{Events: []event.Event{}}, nil
		case event.ShardStart:
		default:
			sk, _ := event.SortKeyForID(p) // the cursor was checked
			in.ExclusiveStartKey = st.startKey(q.Tenant, iq.indexAttr, sk, iq.indexPrefix)
		}
	}
	limit := pageLimit(q)
	page := event.Page{Events: make([]event.Event, 0, limit)}
	budget := st.pageBytes
	for round := 0; ; round++ {
		in.Limit = aws.Int32(int32(limit - len(page.Events)))
		// A page of 50 events is 70 KB of JSON at 1 KB each: decoded in
		// one pass (ddb.FastQueryDecoding), not the SDK's two.
		out, err := st.db.Query(ctx, in, ddb.FastQueryDecoding)
		if err != nil {
			return event.Page{}, classify("query inbox", err)
		}
		items := out.Items
		if iq.fetch {
			if items, err = st.fetchEvents(ctx, q, q.Tenant, items); err != nil {
				return event.Page{}, err
			}
		}
		for _, it := range items {
			e := item.EventFromItem(it)
			if budget -= e.WireSize(); budget < 0 && len(page.Events) > 0 {
				// The answer would outgrow Lambda's response limit: the
				// page ends before e, which the next page starts with.
				last := page.Events[len(page.Events)-1]
				page.Next = &event.Position{SortKey: last.SortKey()}
				if iq.indexAttr != "" {
					page.Next.IndexKey = iq.indexPrefix + last.Timestamp
				}
				return page, nil
			}
			page.Events = append(page.Events, e)
		}
		if out.LastEvaluatedKey == nil {
			return page, nil
		}
		if len(page.Events) >= limit || round+1 >= st.maxListRounds {
			page.Next = &event.Position{SortKey: getS(out.LastEvaluatedKey, schema.AttrTimestampEventID)}
			if iq.indexAttr != "" {
				page.Next.IndexKey = getS(out.LastEvaluatedKey, iq.indexAttr)
			}
			return page, nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

// pageLimit is q's page size, the default when out of range.
func pageLimit(q event.InboxQuery) int {
	if q.Limit < 1 || q.Limit > event.MaxLimit {
		return event.DefaultLimit
	}
	return q.Limit
}

// inboxQuery is the Query of an inbox page in one partition, without its
// start key and limit.
type inboxQuery struct {
	in *dynamodb.QueryInput
	// indexAttr is the index's sort key attribute ("" on the table), and
	// indexPrefix the begins_with prefix on it: an event's index key is
	// indexPrefix + its timestamp.
	indexAttr, indexPrefix string
	// fetch: the query reads a lean StatusIndex, which holds keys,
	// event_type and ttl only; the events come from the table after it.
	fetch bool
}

// inboxQuery builds the Query of q on partition (see List for the keys
// and filters).
func (st *Store) inboxQuery(q event.InboxQuery, partition string) inboxQuery {
	names := map[string]string{"#pk": schema.AttrUserID, "#ttl": schema.AttrTTL}
	values := map[string]types.AttributeValue{
		":pk":  s(partition),
		":now": n(st.now().Unix()),
	}
	iq := inboxQuery{in: &dynamodb.QueryInput{
		TableName:              aws.String(st.table),
		KeyConditionExpression: aws.String("#pk = :pk"),
		ScanIndexForward:       aws.Bool(q.Ascending),
	}}
	in := iq.in
	filter := "#ttl >= :now"
	useIndex := func(name, attr, prefix string) {
		in.IndexName = aws.String(name)
		iq.indexAttr = attr
		iq.indexPrefix = prefix + contract.KeySeparator
		in.KeyConditionExpression = aws.String("#pk = :pk AND begins_with(#ik, :prefix)")
		names["#ik"] = attr
		values[":prefix"] = s(iq.indexPrefix)
	}
	filterOn := func(attr, value string) {
		k := map[string]string{schema.AttrStatus: "status", schema.AttrEventType: "et"}[attr]
		filter += " AND #" + k + " = :" + k
		names["#"+k] = attr
		values[":"+k] = s(value)
	}
	// An if chain, not a tagless switch: a case condition gets no
	// coverage block, which hides it from mutation testing.
	if st.lean {
		// No EventTypeIndex; StatusIndex holds every status but delivered.
		if q.Status != "" && q.Status != event.Delivered {
			useIndex(schema.StatusIndex, schema.AttrStatusTS, string(q.Status))
			iq.fetch = true
		} else if q.Status != "" {
			filterOn(schema.AttrStatus, string(q.Status))
		}
		if q.EventType != "" {
			filterOn(schema.AttrEventType, q.EventType)
		}
	} else if q.EventType != "" {
		useIndex(schema.EventTypeIndex, schema.AttrEventTypeTS, q.EventType)
		if q.Status != "" {
			filterOn(schema.AttrStatus, string(q.Status))
		}
	} else if q.Status != "" {
		useIndex(schema.StatusIndex, schema.AttrStatusTS, string(q.Status))
	}
	in.FilterExpression = aws.String(filter)
	in.ExpressionAttributeNames = names
	in.ExpressionAttributeValues = values
	return iq
}

const (
	// maxBatchAttempts bounds the BatchGetItem calls for one set of keys
	// (the first and its retries of unprocessed keys).
	maxBatchAttempts = 6
)

// fetchEvents reads the events whose keys a lean StatusIndex query
// returned, in the query's order, with strongly consistent BatchGetItem
// calls (a read unit per event up to 4 KB): an eventually consistent read
// could miss an event the index already lists, and the page's cursor
// would then move past it for good. It retries unprocessed keys with
// backoff. An event gone from the table since the query (its ttl passed,
// DynamoDB deleted it) is left out, as is one whose status is no longer
// the one asked for (acked since): the table is fresher than the index.
func (st *Store) fetchEvents(ctx context.Context, q event.InboxQuery, partition string, keys []map[string]types.AttributeValue) ([]map[string]types.AttributeValue, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	// One page's keys: at most event.MaxLimit (100), BatchGetItem's limit.
	bySortKey := make(map[string]map[string]types.AttributeValue, len(keys))
	pending := make([]map[string]types.AttributeValue, len(keys))
	for i, k := range keys {
		pending[i] = st.key(partition, getS(k, schema.AttrTimestampEventID))
	}
	for calls := 1; ; calls++ {
		out, err := st.db.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{
			RequestItems: map[string]types.KeysAndAttributes{st.table: {Keys: pending, ConsistentRead: aws.Bool(true)}},
		})
		if err != nil {
			return nil, classify("read inbox events", err)
		}
		for _, it := range out.Responses[st.table] {
			bySortKey[getS(it, schema.AttrTimestampEventID)] = it
		}
		if pending = out.UnprocessedKeys[st.table].Keys; len(pending) == 0 {
			break
		}
		if calls >= maxBatchAttempts {
			return nil, fmt.Errorf("read inbox events: %w: %d keys still unprocessed after %d BatchGetItem calls", event.ErrUnavailable, len(pending), calls)
		}
		if err := st.sleep(ctx, backoff.Delay(retryBase, calls)); err != nil {
			return nil, fmt.Errorf("read inbox events: %w: %v", event.ErrUnavailable, err)
		}
	}
	items := make([]map[string]types.AttributeValue, 0, len(keys))
	for _, k := range keys {
		it, ok := bySortKey[getS(k, schema.AttrTimestampEventID)]
		if ok && getS(it, schema.AttrStatus) == string(q.Status) {
			items = append(items, it)
		}
	}
	return items, nil
}
