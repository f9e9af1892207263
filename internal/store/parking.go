// Parked attempts: the attempts to one subscription put off while its
// circuit is open, each an item in "parked#<tenant>#<subscription_id>"
// (sort key "<event_id>#<nnn>"), made when the circuit lets requests
// through again by the subscription's one wake task. The subscription
// item's wake marker (wake_owner, wake_until, wake_sent) says, once
// confirmed, that a wake task is queued and has not started yet, so that
// parkers send one wake per circuit, not one task per attempt.

package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/triggers-dev/triggers/contract"
	"github.com/triggers-dev/triggers/internal/event"
	"github.com/triggers-dev/triggers/schema"
)

// Attributes of the wake marker on a subscription item, and of a parked
// attempt.
const (
	attrWakeOwner = "wake_owner"
	attrWakeUntil = "wake_until" // epoch milliseconds
	attrWakeSent  = "wake_sent"  // true once the owner's wake task is sent
	// attrWakeStandby is true on a standby wake's marker (ClaimWake),
	// which any other wake's claim replaces.
	attrWakeStandby = "wake_standby"
	attrToken       = "token"
	attrAttempt     = "attempt"
)

func parkedPartition(tenant, subscriptionID string) string {
	return contract.ParkedPrefix + contract.Key(tenant, subscriptionID)
}

func parkedSortKey(eventID string, number int) string {
	return contract.Key(eventID, fmt.Sprintf("%03d", number))
}

// ParkAttempt parks attempt p (of event p.EventID to subscriptionID): it
// writes the parked item, replacing an earlier parking of the same attempt
// (and its token). It expires with the event (ttl, epoch seconds).
func (st *Store) ParkAttempt(ctx context.Context, tenant, subscriptionID string, p event.Parked, ttl int64) error {
	_, err := st.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(st.table),
		Item: map[string]types.AttributeValue{
			schema.AttrUserID:           s(parkedPartition(tenant, subscriptionID)),
			schema.AttrTimestampEventID: s(parkedSortKey(p.EventID, p.Number)),
			contract.AttrRecordType:     s(contract.RecordTypeParked),
			schema.AttrEventID:          s(p.EventID),
			attrAttempt:                 n(int64(p.Number)),
			attrToken:                   s(p.Token),
			schema.AttrTTL:              n(ttl),
		},
	})
	if err != nil {
		return classify("park attempt", err)
	}
	return nil
}

// ListParked returns up to limit of the attempts parked behind the
// subscription (a consistent read), oldest events' first within an
// event's id order.
func (st *Store) ListParked(ctx context.Context, tenant, subscriptionID string, limit int) ([]event.Parked, error) {
	out := []event.Parked{}
	pages := dynamodb.NewQueryPaginator(st.db, &dynamodb.QueryInput{
		TableName:                 aws.String(st.table),
		KeyConditionExpression:    aws.String("#pk = :pk"),
		ExpressionAttributeNames:  map[string]string{"#pk": schema.AttrUserID},
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": s(parkedPartition(tenant, subscriptionID))},
		ConsistentRead:            aws.Bool(true),
		Limit:                     aws.Int32(int32(limit)),
	})
	for len(out) < limit && pages.HasMorePages() {
		res, err := pages.NextPage(ctx)
		if err != nil {
			return nil, classify("list parked attempts", err)
		}
		for _, it := range res.Items {
			if len(out) == limit || getS(it, contract.AttrRecordType) != contract.RecordTypeParked {
				continue
			}
			out = append(out, event.Parked{EventID: getS(it, schema.AttrEventID), Number: int(getN(it, attrAttempt)), Token: getS(it, attrToken)})
		}
	}
	return out, nil
}

// UnparkAttempt removes parked attempt p, provided it still carries p's
// token: false when it was parked again since (it carries another
// token). An item no longer there (another wake of the subscription,
// running at the same time, made the attempt and removed it; or it
// expired) is true: p is no longer parked, and was not parked again (a
// wake that took false for it stopped as if a parker had queued the next
// wake, and so did the other wake for another attempt: the attempts past
// their page stayed parked with no wake to come; found by review).
func (st *Store) UnparkAttempt(ctx context.Context, tenant, subscriptionID string, p event.Parked) (bool, error) {
	_, err := st.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName:                 aws.String(st.table),
		Key:                       st.key(parkedPartition(tenant, subscriptionID), parkedSortKey(p.EventID, p.Number)),
		ConditionExpression:       aws.String("attribute_not_exists(#pk) OR #t = :t"),
		ExpressionAttributeNames:  map[string]string{"#t": attrToken, "#pk": schema.AttrUserID},
		ExpressionAttributeValues: map[string]types.AttributeValue{":t": s(p.Token)},
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return false, nil
	}
	if err != nil {
		return false, classify("unpark attempt", err)
	}
	return true, nil
}

// ClaimWake sets the subscription's wake marker to owner, pending (not
// yet confirmed sent), live until until: true when the caller must now
// send owner's wake task and then confirm it (ConfirmWake). It is refused
// (false) while another owner's confirmed marker is live at now (that
// wake is queued and has not started, and makes every attempt parked
// before it starts) unless that owner is prev (the wake handing over to
// its successor). A pending marker, or one no longer live, is taken over.
// So is a standby wake's marker, whichever claim comes: standby claims the
// marker for a wake queued only in case the attempts it is for are not
// made by the wake already making them (another instance's, which may
// die), and any other wake does its work. A standby claim is refused by
// a confirmed marker as any claim is. (A standby wake's confirmed marker
// refused the wake that the wake making the attempts queued next, for the
// attempts past its page, which then waited for the standby wake, an
// attempt's time later: found by review.) A subscription that no longer
// exists is event.ErrSubscriptionNotFound.
func (st *Store) ClaimWake(ctx context.Context, tenant, subscriptionID, owner, prev string, standby bool, until, now time.Time) (bool, error) {
	cond := "attribute_exists(#pk) AND #rt = :sub AND (attribute_not_exists(#s) OR #u < :now OR #b = :true"
	values := map[string]types.AttributeValue{
		":o": s(owner), ":u": n(until.UnixMilli()), ":now": n(now.UnixMilli()), ":sub": s(contract.RecordTypeSubscription),
		":true": &types.AttributeValueMemberBOOL{Value: true},
	}
	update := "SET #o = :o, #u = :u REMOVE #s, #b"
	if standby {
		update = "SET #o = :o, #u = :u, #b = :true REMOVE #s"
	}
	if prev != "" {
		cond += " OR #o = :prev"
		values[":prev"] = s(prev)
	}
	_, err := st.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                           aws.String(st.table),
		Key:                                 st.key(subscriptionPartition(tenant), subscriptionID),
		UpdateExpression:                    aws.String(update),
		ConditionExpression:                 aws.String(cond + ")"),
		ExpressionAttributeNames:            map[string]string{"#o": attrWakeOwner, "#u": attrWakeUntil, "#s": attrWakeSent, "#b": attrWakeStandby, "#pk": schema.AttrUserID, "#rt": contract.AttrRecordType},
		ExpressionAttributeValues:           values,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	return claimed("claim wake", err)
}

// claimed is the outcome of a conditional claim of a subscription's wake
// marker (ALL_OLD on a failed condition): refused, or
// event.ErrSubscriptionNotFound when the item is no subscription.
func claimed(op string, err error) (bool, error) {
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		if getS(ccf.Item, contract.AttrRecordType) != contract.RecordTypeSubscription {
			return false, event.ErrSubscriptionNotFound
		}
		return false, nil
	}
	if err != nil {
		return false, classify(op, err)
	}
	return true, nil
}

// ClaimEarlierWake sets the subscription's wake marker to owner, pending,
// live until until, in place of another wake's confirmed marker that is
// live past after (after is until or later: that wake is due later than
// owner's): true when the caller must now send owner's wake task and then
// confirm it (ConfirmWake). It is for a wake that need not wait for the
// queued one: a delivery closed the subscription's circuit, and the
// attempts parked behind it would otherwise wait for the circuit's wake
// (due when the circuit was to close, plus its spread, and up to a whole
// cooldown when a request in flight as the circuit opened succeeded: one
// whose slowness opened it).
// False, nothing changed, when there is no such marker: no wake queued
// (nothing parked, or a wake running makes what is), a pending marker (its
// parker is sending that wake), a standby's (the attempts are being made),
// or a wake due no later than after says. The replaced wake, when it
// starts, stops at owner's confirmed marker (TakeWake) while owner's wake
// has not started; once it has, it runs and finds what is parked then.
// The marker pending under owner already is owner's (the SDK's retry of
// the write, whose answer was lost: refused, its wake was never sent and
// the backlog waited for the later one; found by review); owner must be
// new for each call.
// A subscription that no longer exists is event.ErrSubscriptionNotFound.
func (st *Store) ClaimEarlierWake(ctx context.Context, tenant, subscriptionID, owner string, until, after time.Time) (bool, error) {
	if after.Before(until) {
		after = until
	}
	_, err := st.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                           aws.String(st.table),
		Key:                                 st.key(subscriptionPartition(tenant), subscriptionID),
		UpdateExpression:                    aws.String("SET #o = :o, #u = :u REMOVE #s"),
		ConditionExpression:                 aws.String("attribute_exists(#pk) AND #rt = :sub AND ((attribute_exists(#s) AND attribute_not_exists(#b) AND #u > :after) OR (#o = :o AND attribute_not_exists(#s)))"),
		ExpressionAttributeNames:            map[string]string{"#o": attrWakeOwner, "#u": attrWakeUntil, "#s": attrWakeSent, "#b": attrWakeStandby, "#pk": schema.AttrUserID, "#rt": contract.AttrRecordType},
		ExpressionAttributeValues:           map[string]types.AttributeValue{":o": s(owner), ":u": n(until.UnixMilli()), ":after": n(after.UnixMilli()), ":sub": s(contract.RecordTypeSubscription)},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	return claimed("claim earlier wake", err)
}

// ConfirmWake confirms owner's pending marker once its wake task is sent:
// false when the marker is no longer owner's pending one (its wake has
// started and taken it, or another parker took it over; its wake is then
// one more wake, which is harmless).
func (st *Store) ConfirmWake(ctx context.Context, tenant, subscriptionID, owner string) (bool, error) {
	_, err := st.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(st.table),
		Key:                       st.key(subscriptionPartition(tenant), subscriptionID),
		UpdateExpression:          aws.String("SET #s = :true"),
		ConditionExpression:       aws.String("#o = :o AND attribute_not_exists(#s)"),
		ExpressionAttributeNames:  map[string]string{"#o": attrWakeOwner, "#s": attrWakeSent},
		ExpressionAttributeValues: map[string]types.AttributeValue{":o": s(owner), ":true": &types.AttributeValueMemberBOOL{Value: true}},
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return false, nil
	}
	if err != nil {
		return false, classify("confirm wake", err)
	}
	return true, nil
}

// TakeWake removes the subscription's wake marker as owner's wake task
// starts: false (nothing changed) when another owner's confirmed marker is
// live at now, so that wake, queued and not started, makes the parked
// attempts and this one may stop. A standby wake's marker (ClaimWake)
// too: a wake that ran past it would queue the next standby, whose marker
// the next copy would run past in turn (the crash harness's doubled
// messages made the wakes grow without end while an attempt stayed
// claimed by a stopped invocation). A subscription that no longer exists
// has no marker: true.
func (st *Store) TakeWake(ctx context.Context, tenant, subscriptionID, owner string, now time.Time) (bool, error) {
	_, err := st.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                           aws.String(st.table),
		Key:                                 st.key(subscriptionPartition(tenant), subscriptionID),
		UpdateExpression:                    aws.String("REMOVE #o, #u, #s, #b"),
		ConditionExpression:                 aws.String("attribute_exists(#pk) AND (attribute_not_exists(#s) OR #u < :now OR #o = :o)"),
		ExpressionAttributeNames:            map[string]string{"#o": attrWakeOwner, "#u": attrWakeUntil, "#s": attrWakeSent, "#b": attrWakeStandby, "#pk": schema.AttrUserID},
		ExpressionAttributeValues:           map[string]types.AttributeValue{":o": s(owner), ":now": n(now.UnixMilli())},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return len(ccf.Item) == 0, nil
	}
	if err != nil {
		return false, classify("take wake", err)
	}
	return true, nil
}
