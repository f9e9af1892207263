// Status changes: conditional updates along the event status machine.

package store

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/triggers-dev/triggers/contract"
	"github.com/triggers-dev/triggers/internal/event"
	"github.com/triggers-dev/triggers/internal/item"
	"github.com/triggers-dev/triggers/schema"
)

// transition is the update of one status change, for UpdateItem or a
// transaction.
type transition struct {
	key       map[string]types.AttributeValue
	update    string
	condition string
	names     map[string]string
	values    map[string]types.AttributeValue
}

// transitionUpdate builds the conditional update that moves event id in
// partition (the tenant's own or one of its shards) from one of from to
// to. A tok other than "" is written to schema.AttrChangedBy with the
// change (TransitionOnce). A seenRC of 0 or more makes the change
// conditional on retry_count being seenRC (StartRetry). ok is false for
// an id that cannot be an event's.
func (st *Store) transitionUpdate(partition, id string, from []event.Status, to event.Status, tok string, seenRC int) (transition, bool) {
	ts, err := event.ParseID(id)
	if err != nil {
		return transition{}, false
	}
	stamp := event.FormatTime(ts)
	names := map[string]string{
		"#status": schema.AttrStatus,
		"#sts":    schema.AttrStatusTS,
		"#ttl":    schema.AttrTTL,
	}
	values := map[string]types.AttributeValue{
		":to":  s(string(to)),
		":sts": s(contract.Key(string(to), stamp)),
		":now": n(st.now().Unix()),
	}
	update := "SET #status = :to, #sts = :sts"
	if to == event.Retrying {
		names["#rc"] = schema.AttrRetryCount
		values[":one"] = n(1)
		update += ", #rc = #rc + :one"
	}
	if st.lean && to == event.Delivered {
		// The sparse StatusIndex keeps undelivered events only: removing
		// the key deletes the event's small entry there.
		delete(values, ":sts")
		update = "SET #status = :to REMOVE #sts"
	}
	in := make([]string, len(from))
	for i, f := range from {
		k := ":from" + strconv.Itoa(i)
		values[k] = s(string(f))
		in[i] = k
	}
	condition := "#ttl >= :now AND #status IN (" + strings.Join(in, ", ") + ")"
	if tok != "" {
		names["#by"] = schema.AttrChangedBy
		values[":tok"] = s(tok)
		update = strings.Replace(update, "SET #status = :to", "SET #status = :to, #by = :tok", 1)
		// A resend never applies the change again, even when the status
		// has come back to one of from since (failed, moved to retrying
		// by a retry, then back by this resend; found by review).
		condition += " AND (attribute_not_exists(#by) OR #by <> :tok)"
	}
	if seenRC >= 0 {
		names["#rc"] = schema.AttrRetryCount
		values[":seen"] = n(int64(seenRC))
		condition += " AND #rc = :seen"
	}
	return transition{
		key:       st.key(partition, contract.Key(stamp, id)),
		update:    update,
		condition: condition,
		names:     names,
		values:    values,
	}, true
}

// Transition moves the tenant's event id to status to, provided its
// current status is one of from. One UpdateItem whose condition checks the
// current status (and that the event exists and has not expired), so
// concurrent updates cannot both succeed from the same state. status and
// status#timestamp change together; moving to retrying increments
// retry_count. In the lean profile a move to delivered removes
// status#timestamp instead (the sparse index). Errors: event.ErrNotFound, or *event.TransitionError with
// the current status when the condition fails on an existing event. On a
// sharded table it tries the partitions candidates names, in turn, while
// the event is not found.
func (st *Store) Transition(ctx context.Context, tenant, id string, from []event.Status, to event.Status) (event.Event, error) {
	if _, err := event.ParseID(id); err != nil {
		return event.Event{}, event.ErrNotFound
	}
	if len(from) == 0 {
		cur, err := st.Get(ctx, tenant, id)
		if err != nil {
			return event.Event{}, err
		}
		return event.Event{}, &event.TransitionError{From: cur.Status, To: to}
	}
	return st.transitionIn(ctx, tenant, id, from, to, "", -1)
}

// TransitionOnce is Transition for a caller that has to tell its own
// change from another's, such as a client's PATCH of the event: the
// write carries a token of this call (schema.AttrChangedBy), and its
// condition refuses an item that has it: when the SDK sends the write
// again because DynamoDB's answer was lost, the resend is refused (even
// where the status has come back to one of from since) and finds the
// call's own token, and the event is returned as it now is, not as a
// *event.TransitionError (a 409 for a change the caller made). The same
// condition refuses a late copy of the write (a try that timed out and
// lands after the SDK's retry and after later changes). The token stays
// on the item (19 bytes more on it and on its copies in indexes that
// project it), which is why the ack, which tells its own changes apart
// otherwise (already_delivered) and moves every event, uses Transition.
// The webhook dispatcher's retry move uses StartRetry, which adds the
// retry_count it read to the condition (later retries overwrite the
// token).
func (st *Store) TransitionOnce(ctx context.Context, tenant, id string, from []event.Status, to event.Status) (event.Event, error) {
	if _, err := event.ParseID(id); err != nil {
		return event.Event{}, event.ErrNotFound
	}
	if len(from) == 0 {
		return st.Transition(ctx, tenant, id, from, to)
	}
	return st.transitionIn(ctx, tenant, id, from, to, callToken(), -1)
}

// StartRetry moves the tenant's event e, as the caller read it, from
// failed to retrying (incrementing retry_count): a webhook retry's move
// once its attempt is claimed. It is TransitionOnce's move, also
// conditional on retry_count still being e.RetryCount, so that a late
// copy of the write (a try that timed out and lands after the SDK's
// retry) is refused even after later retries moved and settled the event
// again, overwriting the token (found by the crash harness's late
// copies: the copy of an early retry's move left the event retrying for
// good). A move between the caller's read and the write makes the
// change a *event.TransitionError, as a status moved meanwhile does.
func (st *Store) StartRetry(ctx context.Context, tenant string, e event.Event) (event.Event, error) {
	if _, err := event.ParseID(e.ID); err != nil {
		return event.Event{}, event.ErrNotFound
	}
	return st.transitionIn(ctx, tenant, e.ID, []event.Status{event.Failed}, event.Retrying, callToken(), max(e.RetryCount, 0))
}

// transitionIn is Transition over the partitions of the tenant that may
// hold id, its write carrying tok unless that is "", conditional on
// retry_count being seenRC unless that is negative.
func (st *Store) transitionIn(ctx context.Context, tenant, id string, from []event.Status, to event.Status, tok string, seenRC int) (event.Event, error) {
	var e event.Event
	err := event.ErrNotFound
	for _, pk := range st.candidates(ctx, tenant, id) {
		if e, err = st.transition(ctx, pk, id, from, to, tok, seenRC); !errors.Is(err, event.ErrNotFound) {
			break
		}
	}
	return e, err
}

// transition is Transition in one partition.
func (st *Store) transition(ctx context.Context, partition, id string, from []event.Status, to event.Status, tok string, seenRC int) (event.Event, error) {
	tr, ok := st.transitionUpdate(partition, id, from, to, tok, seenRC)
	if !ok {
		return event.Event{}, event.ErrNotFound
	}
	out, err := st.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                           aws.String(st.table),
		Key:                                 tr.key,
		UpdateExpression:                    aws.String(tr.update),
		ConditionExpression:                 aws.String(tr.condition),
		ExpressionAttributeNames:            tr.names,
		ExpressionAttributeValues:           tr.values,
		ReturnValues:                        types.ReturnValueAllNew,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if err != nil {
		var ccf *types.ConditionalCheckFailedException
		if errors.As(err, &ccf) {
			if tok != "" && ccf.Item != nil && getS(ccf.Item, schema.AttrChangedBy) == tok {
				// This call's own change, its answer lost: the SDK sent
				// it again.
				return item.EventFromItem(ccf.Item), nil
			}
			err := st.transitionFailed(ccf.Item, id, to)
			if errors.Is(err, event.ErrNotFound) {
				return event.Event{}, err
			}
			return item.EventFromItem(ccf.Item), err // the event as it is
		}
		return event.Event{}, classify("update event status", err)
	}
	return item.EventFromItem(out.Attributes), nil
}

// transitionFailed is the error of a status change whose condition failed
// on old, the item as it was (nil when there is none).
func (st *Store) transitionFailed(old map[string]types.AttributeValue, id string, to event.Status) error {
	if old == nil {
		return event.ErrNotFound
	}
	e := item.EventFromItem(old)
	if e.Expired(st.now()) || e.ID != id {
		return event.ErrNotFound
	}
	return &event.TransitionError{From: e.Status, To: to}
}

// maxSettleLatest bounds the attempts Settle checks (a transaction holds
// at most 100 items, one of them the event).
const maxSettleLatest = 99

// settleChecks returns the attempts of latest that Settle checks: all of
// them, or, past maxSettleLatest (an event attempted to more than 99
// subscriptions over its life, as subscriptions come and go: at most
// event.MaxSubscriptions exist at once), the ones a concurrent next
// attempt can follow first. Those are an attempt with a retry due
// (NextAttemptAt set), then the most recently finished: a next attempt
// follows its predecessor's end, and a subscription deleted long ago
// gets none (its queued retries are abandoned). Before, the first 99 by
// subscription id were checked, and a stale decision could go unseen.
func settleChecks(latest []event.Attempt) []event.Attempt {
	if len(latest) <= maxSettleLatest {
		return latest
	}
	ranked := slices.Clone(latest)
	slices.SortStableFunc(ranked, func(a, b event.Attempt) int {
		if ar, br := a.NextAttemptAt != "", b.NextAttemptAt != ""; ar != br {
			if ar {
				return -1
			}
			return 1
		}
		return strings.Compare(b.Timestamp, a.Timestamp) // newest first (TimeLayout sorts in time order)
	})
	return ranked[:maxSettleLatest]
}

// Settle moves the tenant's event id from status from to to, as one
// transition, provided that for every attempt in latest no attempt with
// the next number exists: the caller decided on to from exactly those
// latest attempts, and a concurrent attempt makes that decision stale.
// One TransactWriteItems: the status update (conditional as in
// Transition) and a condition check per attempt. Errors:
// event.ErrNotFound, *event.TransitionError (the status is no longer
// from), event.ErrStaleAttempts, or the classified DynamoDB error. On a
// sharded table it tries the partitions candidates names, in turn, while
// the event is not found.
func (st *Store) Settle(ctx context.Context, tenant, id string, from, to event.Status, latest []event.Attempt) error {
	err := event.ErrNotFound
	for _, pk := range st.candidates(ctx, tenant, id) {
		if err = st.settle(ctx, tenant, pk, id, from, to, latest); !errors.Is(err, event.ErrNotFound) {
			break
		}
	}
	return err
}

// settle is Settle in one partition.
func (st *Store) settle(ctx context.Context, tenant, partition, id string, from, to event.Status, latest []event.Attempt) error {
	tr, ok := st.transitionUpdate(partition, id, []event.Status{from}, to, "", -1)
	if !ok {
		return event.ErrNotFound
	}
	latest = settleChecks(latest)
	items := make([]types.TransactWriteItem, 0, 1+len(latest))
	items = append(items, types.TransactWriteItem{Update: &types.Update{
		TableName:                           aws.String(st.table),
		Key:                                 tr.key,
		UpdateExpression:                    aws.String(tr.update),
		ConditionExpression:                 aws.String(tr.condition),
		ExpressionAttributeNames:            tr.names,
		ExpressionAttributeValues:           tr.values,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}})
	for _, a := range latest {
		items = append(items, types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{
			TableName:                aws.String(st.table),
			Key:                      st.key(attemptPartition(tenant, id), attemptSortKey(a.SubscriptionID, a.Number+1)),
			ConditionExpression:      aws.String("attribute_not_exists(#pk)"),
			ExpressionAttributeNames: map[string]string{"#pk": schema.AttrUserID},
		}})
	}
	return st.transact(ctx, "settle event status", &items, func(reasons []types.CancellationReason) (bool, error) {
		switch {
		case failedCheck(reasons, 0):
			return true, st.transitionFailed(reasons[0].Item, id, to)
		case hasReason(reasons, "ConditionalCheckFailed"):
			return true, event.ErrStaleAttempts
		}
		return false, nil
	})
}
