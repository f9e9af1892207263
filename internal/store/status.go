// Status changes: conditional updates along the event status machine.

package store

import (
	"context"
	"errors"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/triggers-dev/triggers/contract"
	"github.com/triggers-dev/triggers/internal/event"
	"github.com/triggers-dev/triggers/schema"
)

// Transition moves the tenant's event id to status to, provided its
// current status is one of from. One UpdateItem whose condition checks the
// current status (and that the event exists and has not expired), so
// concurrent updates cannot both succeed from the same state. status and
// status#timestamp change together; moving to retrying increments
// retry_count. In the lean profile a move to delivered removes
// status#timestamp instead (the sparse index). Errors: event.ErrNotFound, or *event.TransitionError with
// the current status when the condition fails on an existing event.
func (st *Store) Transition(ctx context.Context, tenant, id string, from []event.Status, to event.Status) (event.Event, error) {
	ts, err := event.ParseID(id)
	if err != nil {
		return event.Event{}, event.ErrNotFound
	}
	if len(from) == 0 {
		cur, err := st.Get(ctx, tenant, id)
		if err != nil {
			return event.Event{}, err
		}
		return event.Event{}, &event.TransitionError{From: cur.Status, To: to}
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
	out, err := st.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                           aws.String(st.table),
		Key:                                 st.key(tenant, contract.Key(stamp, id)),
		UpdateExpression:                    aws.String(update),
		ConditionExpression:                 aws.String("#ttl >= :now AND #status IN (" + strings.Join(in, ", ") + ")"),
		ExpressionAttributeNames:            names,
		ExpressionAttributeValues:           values,
		ReturnValues:                        types.ReturnValueAllNew,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if err != nil {
		var ccf *types.ConditionalCheckFailedException
		if errors.As(err, &ccf) {
			if ccf.Item == nil {
				return event.Event{}, event.ErrNotFound
			}
			old := EventFromItem(ccf.Item)
			if old.Expired(st.now()) || old.ID != id {
				return event.Event{}, event.ErrNotFound
			}
			return old, &event.TransitionError{From: old.Status, To: to}
		}
		return event.Event{}, classify("update event status", err)
	}
	return EventFromItem(out.Attributes), nil
}
