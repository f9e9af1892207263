// Paging: inbox queries on the table or an index, one page at a time.

package store

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/triggers-dev/triggers/contract"
	"github.com/triggers-dev/triggers/internal/event"
	"github.com/triggers-dev/triggers/schema"
)

// List returns one inbox page. It queries the key that serves the filter:
// the table (status=all), StatusIndex (a status, begins_with
// "status#"), or EventTypeIndex (an event type, begins_with "type#", with
// a filter on status unless all). Every query has a Limit and a filter
// hiding expired events; short pages caused by filters are topped up with
// at most a few more Query calls.
func (st *Store) List(ctx context.Context, q event.InboxQuery) (event.Page, error) {
	names := map[string]string{"#pk": schema.AttrUserID, "#ttl": schema.AttrTTL}
	values := map[string]types.AttributeValue{
		":pk":  s(q.Tenant),
		":now": n(st.now().Unix()),
	}
	in := &dynamodb.QueryInput{
		TableName:              aws.String(st.table),
		KeyConditionExpression: aws.String("#pk = :pk"),
		ScanIndexForward:       aws.Bool(q.Ascending),
	}
	filter := "#ttl >= :now"
	indexAttr := ""
	switch {
	case q.EventType != "":
		in.IndexName = aws.String(schema.EventTypeIndex)
		indexAttr = schema.AttrEventTypeTS
		in.KeyConditionExpression = aws.String("#pk = :pk AND begins_with(#ik, :prefix)")
		names["#ik"] = indexAttr
		values[":prefix"] = s(q.EventType + contract.KeySeparator)
		if q.Status != "" {
			filter += " AND #status = :status"
			names["#status"] = schema.AttrStatus
			values[":status"] = s(string(q.Status))
		}
	case q.Status != "":
		in.IndexName = aws.String(schema.StatusIndex)
		indexAttr = schema.AttrStatusTS
		in.KeyConditionExpression = aws.String("#pk = :pk AND begins_with(#ik, :prefix)")
		names["#ik"] = indexAttr
		values[":prefix"] = s(string(q.Status) + contract.KeySeparator)
	}
	in.FilterExpression = aws.String(filter)
	in.ExpressionAttributeNames = names
	in.ExpressionAttributeValues = values
	if q.After != nil {
		in.ExclusiveStartKey = st.key(q.Tenant, q.After.SortKey)
		if indexAttr != "" {
			in.ExclusiveStartKey[indexAttr] = s(q.After.IndexKey)
		}
	}
	limit := q.Limit
	if limit < 1 || limit > event.MaxLimit {
		limit = event.DefaultLimit
	}
	page := event.Page{Events: make([]event.Event, 0, limit)}
	for round := 0; ; round++ {
		in.Limit = aws.Int32(int32(limit - len(page.Events)))
		out, err := st.db.Query(ctx, in)
		if err != nil {
			return event.Page{}, classify("query inbox", err)
		}
		for _, item := range out.Items {
			if q.StoredPayloads {
				page.Events = append(page.Events, EventFromItemStored(item))
			} else {
				page.Events = append(page.Events, EventFromItem(item))
			}
		}
		if out.LastEvaluatedKey == nil {
			return page, nil
		}
		if len(page.Events) >= limit || round+1 >= st.maxListRounds {
			page.Next = &event.Position{SortKey: getS(out.LastEvaluatedKey, schema.AttrTimestampEventID)}
			if indexAttr != "" {
				page.Next.IndexKey = getS(out.LastEvaluatedKey, indexAttr)
			}
			return page, nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}
