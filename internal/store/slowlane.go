// The slow lane: a subscription whose endpoint answered slowly is marked
// slow for a while (slow_until on its item), and each request to a slow
// endpoint first takes one of its tenant's few slow-lane slots, held in a
// small semaphore item per tenant ("slowlane#<tenant>", sort key "lane"):
// a map of holder token -> hold end (epoch milliseconds). A tenant's slow
// endpoints then hold at most that many function instances at a time,
// however many of them it has and however many events it sends.

package store

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/triggers-dev/triggers/contract"
	"github.com/triggers-dev/triggers/internal/event"
	"github.com/triggers-dev/triggers/schema"
)

// attrHolders is the slow-lane item's map of holders.
const attrHolders = "holders"

// slowLaneIdle keeps a slow-lane item this long past its latest hold
// (ttl): a tenant whose endpoints are no longer slow leaves nothing for
// good.
const slowLaneIdle = 24 * time.Hour

// slowLaneTries bounds AcquireSlowSlot's writes against concurrent
// changes of the holders.
const slowLaneTries = 3

func slowLanePartition(tenant string) string { return contract.SlowLanePrefix + tenant }

// MarkSlow marks the tenant's subscription id slow until until, on
// account of a request to url that was answered slowly: only while the
// subscription is on url's server (another path or query string of the
// same server counts, like OpenCircuit), and only when that moves the
// mark later. The mark is advisory: a subscription that is gone or moved
// to another server is not an error and keeps what it has.
func (st *Store) MarkSlow(ctx context.Context, tenant, id, url string, until time.Time) error {
	for try := 0; ; try++ {
		names := map[string]string{"#slow": attrSlowUntil, "#pk": schema.AttrUserID}
		values := map[string]types.AttributeValue{":until": n(until.UnixMilli())}
		cond := "attribute_exists(#pk) AND (attribute_not_exists(#slow) OR #slow < :until)"
		cond += onURL(url, names, values)
		_, err := st.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName:                           aws.String(st.table),
			Key:                                 st.key(subscriptionPartition(tenant), id),
			UpdateExpression:                    aws.String("SET #slow = :until"),
			ConditionExpression:                 aws.String(cond),
			ExpressionAttributeNames:            names,
			ExpressionAttributeValues:           values,
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		})
		var ccf *types.ConditionalCheckFailedException
		if errors.As(err, &ccf) {
			now := getS(ccf.Item, "url")
			if ccf.Item == nil || url == "" || now == url || !sameServer(url, now) || try >= maxUpdateRounds {
				return nil // gone, marked for longer, or another server
			}
			url = now // the same server under another path: it counts
			continue
		}
		if err != nil {
			return classify("mark subscription slow", err)
		}
		return nil
	}
}

// AcquireSlowSlot takes one of the tenant's limit slow-lane slots for
// token until until, and reports whether it did. Holders whose hold ended
// at least event.HoldSkewMargin before now (a request whose instance died
// before releasing it) are removed to make room: the holder's request is
// bounded by the hold's end on its own clock, which may run behind this
// caller's now. The common case is one conditional write; a full lane is
// that write refused (with the holders read back); reclaiming expired
// holds is one more.
func (st *Store) AcquireSlowSlot(ctx context.Context, tenant, token string, now, until time.Time, limit int) (bool, error) {
	key := st.key(slowLanePartition(tenant), contract.SlowLaneKey)
	ttl := n(until.Add(slowLaneIdle).Unix())
	var ccf *types.ConditionalCheckFailedException
	for range slowLaneTries {
		names := map[string]string{"#h": attrHolders, "#t": token, "#ttl": schema.AttrTTL}
		_, err := st.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName:                           aws.String(st.table),
			Key:                                 key,
			UpdateExpression:                    aws.String("SET #h.#t = :until, #ttl = :ttl"),
			ConditionExpression:                 aws.String("size(#h) < :cap"),
			ExpressionAttributeNames:            names,
			ExpressionAttributeValues:           map[string]types.AttributeValue{":until": n(until.UnixMilli()), ":ttl": ttl, ":cap": n(int64(limit))},
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		})
		if err == nil {
			return true, nil
		}
		if !errors.As(err, &ccf) {
			return false, classify("acquire slow-lane slot", err)
		}
		if holdsSlot(ccf.Item, token) {
			return true, nil
		}
		holders, ok := ccf.Item[attrHolders].(*types.AttributeValueMemberM)
		if !ok {
			// No lane yet (or no holders map): start it with this holder.
			_, err := st.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
				TableName:                aws.String(st.table),
				Key:                      key,
				UpdateExpression:         aws.String("SET #rt = :rt, #h = :m, #ttl = :ttl"),
				ConditionExpression:      aws.String("attribute_not_exists(#h)"),
				ExpressionAttributeNames: map[string]string{"#rt": contract.AttrRecordType, "#h": attrHolders, "#ttl": schema.AttrTTL},
				ExpressionAttributeValues: map[string]types.AttributeValue{
					":rt": s(contract.RecordTypeSlowLane), ":ttl": ttl,
					":m": &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{token: n(until.UnixMilli())}},
				},
				ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
			})
			if errors.As(err, &ccf) {
				if holdsSlot(ccf.Item, token) {
					return true, nil
				}
				continue // another acquirer started it: count in it
			}
			if err != nil {
				return false, classify("acquire slow-lane slot", err)
			}
			return true, nil
		}
		// Full: make room from the holds that ended, if any, in the same
		// write that takes the slot, conditional on each removed hold
		// still being the one read (a holder that renewed keeps it).
		names = map[string]string{"#h": attrHolders, "#t": token, "#ttl": schema.AttrTTL}
		values := map[string]types.AttributeValue{":until": n(until.UnixMilli()), ":ttl": ttl}
		var conds, removes []string
		expired := 0
		reclaim := now.Add(-event.HoldSkewMargin).UnixMilli() // holds that ended by then
		for _, holder := range sortedKeys(holders.Value) {
			v, ok := holders.Value[holder].(*types.AttributeValueMemberN)
			if !ok {
				continue
			}
			end, err := strconv.ParseInt(v.Value, 10, 64)
			if err != nil || end > reclaim {
				continue
			}
			k := strconv.Itoa(expired)
			expired++
			names["#e"+k], values[":e"+k] = holder, v
			conds = append(conds, "#h.#e"+k+" = :e"+k)
			removes = append(removes, "#h.#e"+k)
		}
		if expired == 0 {
			return false, nil // every slot is held
		}
		values[":cap"] = n(int64(limit + expired))
		_, err = st.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName:                           aws.String(st.table),
			Key:                                 key,
			UpdateExpression:                    aws.String("SET #h.#t = :until, #ttl = :ttl REMOVE " + strings.Join(removes, ", ")),
			ConditionExpression:                 aws.String(strings.Join(conds, " AND ") + " AND size(#h) < :cap"),
			ExpressionAttributeNames:            names,
			ExpressionAttributeValues:           values,
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		})
		if err == nil {
			return true, nil
		}
		if !errors.As(err, &ccf) {
			return false, classify("acquire slow-lane slot", err)
		}
		if holdsSlot(ccf.Item, token) {
			return true, nil
		}
		// The holders changed meanwhile: look again.
	}
	return false, nil
}

// holdsSlot reports whether the lane item holds a slot under token: a
// write of AcquireSlowSlot refused because token's own write took effect
// (the SDK's retry of a write whose answer was lost; refused, the slot
// stayed taken by nobody until its hold ended, and with one slot the lane
// was shut: found by review). token is new for each call.
func holdsSlot(item map[string]types.AttributeValue, token string) bool {
	holders, ok := item[attrHolders].(*types.AttributeValueMemberM)
	if !ok {
		return false
	}
	_, held := holders.Value[token]
	return held
}

// ReleaseSlowSlot gives back the tenant's slow-lane slot held by token.
// Releasing a token that holds no slot (never acquired, reclaimed after
// its hold ended, released already) is a no-op.
func (st *Store) ReleaseSlowSlot(ctx context.Context, tenant, token string) error {
	_, err := st.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                aws.String(st.table),
		Key:                      st.key(slowLanePartition(tenant), contract.SlowLaneKey),
		UpdateExpression:         aws.String("REMOVE #h.#t"),
		ConditionExpression:      aws.String("attribute_exists(#h.#t)"),
		ExpressionAttributeNames: map[string]string{"#h": attrHolders, "#t": token},
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return nil
	}
	if err != nil {
		return classify("release slow-lane slot", err)
	}
	return nil
}

// Attributes of a lane waiter (contract.LaneWaiterPrefix).
const (
	attrWaiterOwner   = "owner"
	attrWaiterRefused = "refused"
	attrWaiterSince   = "since" // epoch milliseconds
)

// AddLaneWaiter records that w's subscription waits for a turn in
// tenant's slow lane: its wake found the lane full and its next wake,
// w.Owner's, is queued. The record replaces the subscription's earlier
// one and lapses at until (its ttl, and no longer listed: the wake it
// names has run by then).
func (st *Store) AddLaneWaiter(ctx context.Context, tenant string, w event.LaneWaiter, until time.Time) error {
	item := st.key(slowLanePartition(tenant), contract.LaneWaiterPrefix+w.SubscriptionID)
	item[contract.AttrRecordType] = s(contract.RecordTypeLaneWaiter)
	item[attrWaiterOwner] = s(w.Owner)
	item[attrWaiterRefused] = n(int64(w.Refused))
	item[attrWaiterSince] = n(w.Since.UnixMilli())
	item[schema.AttrTTL] = n(until.Unix())
	if _, err := st.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(st.table), Item: item}); err != nil {
		return classify("add slow-lane waiter", err)
	}
	return nil
}

// LaneWaiters returns up to limit of the subscriptions waiting for a turn
// in tenant's slow lane at now (a consistent read), in subscription id
// order; records whose ttl has passed are left out (DynamoDB deletes
// expired items within days, not at once), and do not count against
// limit: the read goes on past them (it stopped at limit items, lapsed
// ones included, so lapsed records of deleted subscriptions could hide
// the live waiters behind them; found by review).
func (st *Store) LaneWaiters(ctx context.Context, tenant string, now time.Time, limit int) ([]event.LaneWaiter, error) {
	out := []event.LaneWaiter{}
	pages := dynamodb.NewQueryPaginator(st.db, &dynamodb.QueryInput{
		TableName:                 aws.String(st.table),
		KeyConditionExpression:    aws.String("#pk = :pk AND begins_with(#sk, :w)"),
		ExpressionAttributeNames:  map[string]string{"#pk": schema.AttrUserID, "#sk": schema.AttrTimestampEventID},
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": s(slowLanePartition(tenant)), ":w": s(contract.LaneWaiterPrefix)},
		ConsistentRead:            aws.Bool(true),
		Limit:                     aws.Int32(int32(limit)),
	})
	for len(out) < limit && pages.HasMorePages() {
		res, err := pages.NextPage(ctx)
		if err != nil {
			return nil, classify("list slow-lane waiters", err)
		}
		for _, it := range res.Items {
			if len(out) == limit || getS(it, contract.AttrRecordType) != contract.RecordTypeLaneWaiter || getN(it, schema.AttrTTL) <= now.Unix() {
				continue
			}
			out = append(out, event.LaneWaiter{
				SubscriptionID: strings.TrimPrefix(getS(it, schema.AttrTimestampEventID), contract.LaneWaiterPrefix),
				Owner:          getS(it, attrWaiterOwner),
				Refused:        int(getN(it, attrWaiterRefused)),
				Since:          sinceOf(it),
			})
		}
	}
	return out, nil
}

// RemoveLaneWaiter removes subscriptionID's lane waiter record while it
// names owner (a record a later wake of the subscription wrote stays);
// removing one that is not there, or names another owner, is a no-op.
func (st *Store) RemoveLaneWaiter(ctx context.Context, tenant, subscriptionID, owner string) error {
	_, err := st.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName:                 aws.String(st.table),
		Key:                       st.key(slowLanePartition(tenant), contract.LaneWaiterPrefix+subscriptionID),
		ConditionExpression:       aws.String("#o = :o"),
		ExpressionAttributeNames:  map[string]string{"#o": attrWaiterOwner},
		ExpressionAttributeValues: map[string]types.AttributeValue{":o": s(owner)},
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return nil
	}
	if err != nil {
		return classify("remove slow-lane waiter", err)
	}
	return nil
}

// sinceOf is a lane waiter record's Since: zero on a record written
// before it had one.
func sinceOf(it map[string]types.AttributeValue) time.Time {
	if _, ok := it[attrWaiterSince]; !ok {
		return time.Time{}
	}
	return time.UnixMilli(getN(it, attrWaiterSince)).UTC()
}
