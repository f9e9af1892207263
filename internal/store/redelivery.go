// Redelivery rounds: a failed event moves to retrying together with a
// marker naming the round, so the round's queued task and the API request
// that queued it agree on whether it started, whichever gets there first.

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

// attrRoundRunning marks a redelivery round whose task has not recorded
// its attempts yet (FinishRound removes it): the event must not settle
// meanwhile, from attempts that leave the round's subscriptions out. It
// holds until the epoch second it holds, the store's round hold
// (WithRoundHold) after the round was asked for. Markers written before it
// existed have none and never hold a settle.
const attrRoundRunning = "round_running_until"

// attrHoldBy is the token of the HoldFirstRound call that last held a
// first round, and attrHoldEnded the token of the hold FinishRound ended:
// a late copy of a hold's write (a try that timed out, landing after the
// SDK's retry and after the round finished) finds its own token ended
// and is refused.
const (
	attrHoldBy    = "hold_by"
	attrHoldEnded = "hold_ended"
)

// WithRoundHold sets how long a started redelivery round holds its
// event's settles (default contract.DefaultRoundHold): its task has run by
// then, unless its message went to the retry queue's dead-letter queue or
// a dispatcher of a version without rounds' markers handled it (during a
// deployment, after a rollback), which never finishes it. Past it the
// event's next settle (another message of the event) goes by its attempts
// again. The construct sets contract.RoundHoldFor the retry queue.
func WithRoundHold(d time.Duration) Option {
	return func(s *Store) {
		if d > 0 {
			s.roundHold = d
		}
	}
}

// StartRedelivery starts redelivery round token of the tenant's event e,
// as read when the round was asked for: the event moves from failed to
// retrying (retry_count + 1), provided its retry_count is still
// e.RetryCount, and the round's marker (time at, expiring with the event,
// running until FinishRound) is written, both in one transaction. Errors: event.ErrRoundStarted,
// event.ErrNotFound, *event.TransitionError (the event is not failed),
// event.ErrRoundSuperseded, or the classified DynamoDB error. On a sharded
// table it tries the partitions candidates names, in turn, while the event
// is not found (each try is one transaction: a miss writes nothing).
func (st *Store) StartRedelivery(ctx context.Context, tenant string, e event.Event, token string, at time.Time) error {
	err := event.ErrNotFound
	for _, pk := range st.candidates(ctx, tenant, e.ID) {
		if err = st.startRedelivery(ctx, tenant, pk, e, token, at); !errors.Is(err, event.ErrNotFound) {
			break
		}
	}
	return err
}

// startRedelivery is StartRedelivery with the event in partition.
func (st *Store) startRedelivery(ctx context.Context, tenant, partition string, e event.Event, token string, at time.Time) error {
	id := e.ID
	tr, ok := st.transitionUpdate(partition, id, []event.Status{event.Failed}, event.Retrying, "", -1)
	if !ok || token == "" {
		return event.ErrNotFound
	}
	tr.condition += " AND #rc = :rc0"
	tr.names["#rc"] = schema.AttrRetryCount
	tr.values[":rc0"] = n(int64(e.RetryCount))
	items := []types.TransactWriteItem{
		{Update: &types.Update{
			TableName:                           aws.String(st.table),
			Key:                                 tr.key,
			UpdateExpression:                    aws.String(tr.update),
			ConditionExpression:                 aws.String(tr.condition),
			ExpressionAttributeNames:            tr.names,
			ExpressionAttributeValues:           tr.values,
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		}},
		{Put: &types.Put{
			TableName: aws.String(st.table),
			Item: map[string]types.AttributeValue{
				schema.AttrUserID:           s(attemptPartition(tenant, id)),
				schema.AttrTimestampEventID: s(roundPrefix + token),
				contract.AttrRecordType:     s(contract.RecordTypeRedelivery),
				contract.AttrCreatedAt:      s(event.FormatTime(at)),
				schema.AttrTTL:              n(e.TTL),
				attrRoundRunning:            n(at.Add(st.roundHold).Unix()),
			},
			ConditionExpression:      aws.String("attribute_not_exists(#pk)"),
			ExpressionAttributeNames: map[string]string{"#pk": schema.AttrUserID},
		}},
	}
	return st.transact(ctx, "start redelivery", &items, func(reasons []types.CancellationReason) (bool, error) {
		switch {
		case failedCheck(reasons, 1):
			return true, event.ErrRoundStarted
		case failedCheck(reasons, 0):
			err := st.transitionFailed(reasons[0].Item, id, event.Retrying)
			if te, ok := errors.AsType[*event.TransitionError](err); ok && te.From == event.Failed {
				return true, event.ErrRoundSuperseded
			}
			return true, err
		}
		return false, nil
	})
}

// RedeliveryRound reports whether redelivery round token of the tenant's
// event id was started, and when.
func (st *Store) RedeliveryRound(ctx context.Context, tenant, id, token string) (started bool, at time.Time, err error) {
	out, err := st.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(st.table),
		Key:            st.key(attemptPartition(tenant, id), roundPrefix+token),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return false, time.Time{}, classify("read redelivery round", err)
	}
	if len(out.Item) == 0 {
		return false, time.Time{}, nil
	}
	at, err = time.Parse(time.RFC3339Nano, getS(out.Item, contract.AttrCreatedAt))
	if err != nil {
		return false, time.Time{}, fmt.Errorf("redelivery round %q: created_at: %w", token, err)
	}
	return true, at, nil
}

// HoldFirstRound marks the first delivery round of the tenant's event id
// as running, from at until the store's round hold (WithRoundHold) after
// it or until FinishRound(event.FirstRound): meanwhile SettleAttempts
// reports a round running and no settle moves the event, so a retry of
// one subscription coming due cannot settle the event from attempts that
// leave out a subscription whose first attempt the round has not
// recorded yet (its message back after a fault). The marker is the
// event's "round#first" item, expiring with the event (ttl); holding it
// again (a run of the round that found no hold running, after an
// earlier one's was ended) writes a new end. One write, made only by a
// round that queues or marks a follow-up (dispatch: a failure's retry, a
// put-off attempt, a failure for good). It carries the call's token, and
// a hold FinishRound has ended is not made again by a late copy of its
// write (found by review: the copy landed after the round's end and held
// the event's settles for the round hold, 6 hours, so a retry's
// delivery in the meantime left the event failed).
func (st *Store) HoldFirstRound(ctx context.Context, tenant, id string, at time.Time, ttl int64) error {
	_, err := st.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:           aws.String(st.table),
		Key:                 st.key(attemptPartition(tenant, id), roundPrefix+event.FirstRound),
		UpdateExpression:    aws.String("SET #rt = :rt, #at = if_not_exists(#at, :at), #ttl = :ttl, #running = :until, #by = :tok"),
		ConditionExpression: aws.String("attribute_not_exists(#ended) OR #ended <> :tok"),
		ExpressionAttributeNames: map[string]string{
			"#rt": contract.AttrRecordType, "#at": contract.AttrCreatedAt, "#ttl": schema.AttrTTL, "#running": attrRoundRunning,
			"#by": attrHoldBy, "#ended": attrHoldEnded,
		},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":rt": s(contract.RecordTypeRedelivery), ":at": s(event.FormatTime(at)), ":ttl": n(ttl),
			":until": n(at.Add(st.roundHold).Unix()), ":tok": s(callToken()),
		},
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return nil // held by this call, and ended since (its answer was lost)
	}
	if err != nil {
		return classify("hold first delivery round", err)
	}
	return nil
}

// FinishRound records that redelivery round token of the tenant's event
// id (or its first round: event.FirstRound) has recorded an attempt for
// each of its subscriptions: the event may
// settle again (SettleAttempts). Finishing it again, or a round without a
// marker (expired, or named before markers existed), changes nothing.
func (st *Store) FinishRound(ctx context.Context, tenant, id, token string) error {
	names := map[string]string{"#running": attrRoundRunning, "#pk": schema.AttrUserID}
	update := "REMOVE #running"
	var values map[string]types.AttributeValue
	if token == event.FirstRound {
		// The hold it ends is not made again by a late copy of its write
		// (HoldFirstRound).
		names["#by"], names["#ended"] = attrHoldBy, attrHoldEnded
		values = map[string]types.AttributeValue{":none": s("")}
		update = "SET #ended = if_not_exists(#by, :none) REMOVE #running"
	}
	_, err := st.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(st.table),
		Key:                       st.key(attemptPartition(tenant, id), roundPrefix+token),
		UpdateExpression:          aws.String(update),
		ConditionExpression:       aws.String("attribute_exists(#pk)"),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: values,
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return nil
	}
	if err != nil {
		return classify("finish redelivery round", err)
	}
	return nil
}
