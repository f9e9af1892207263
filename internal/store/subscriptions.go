// Webhook subscriptions and delivery attempts: records in partitions no
// tenant can own ("subscription#<tenant>", "attempt#<tenant>#<event_id>"),
// without index attributes, so they never appear in an inbox query or an
// index, and the stream consumer skips them (contract.IsEventPartition).

package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/triggers-dev/triggers/contract"
	"github.com/triggers-dev/triggers/internal/event"
	"github.com/triggers-dev/triggers/schema"
)

// subscriptionItem is a subscription as stored.
type subscriptionItem struct {
	PK              string   `dynamodbav:"user_id"`
	SK              string   `dynamodbav:"timestamp#event_id"`
	RecordType      string   `dynamodbav:"record_type"`
	URL             string   `dynamodbav:"url"`
	EventTypes      []string `dynamodbav:"event_types"`
	Description     string   `dynamodbav:"description,omitempty"`
	CreatedAt       string   `dynamodbav:"created_at"`
	Disabled        bool     `dynamodbav:"disabled"`
	DisabledReason  string   `dynamodbav:"disabled_reason,omitempty"`
	FailingSince    int64    `dynamodbav:"failing_since,omitempty"`
	LastSuccess     int64    `dynamodbav:"last_success,omitempty"`
	Secrets         []string `dynamodbav:"secrets"`
	PreviousExpires int64    `dynamodbav:"previous_expires,omitempty"`
}

// Attributes of a subscription item: the current run of failures' start
// and the latest success, epoch seconds.
const (
	attrFailingSince = "failing_since"
	attrLastSuccess  = "last_success"
	attrCount        = "count"
)

func subscriptionPartition(tenant string) string { return contract.SubscriptionPrefix + tenant }

func (it subscriptionItem) subscription() event.Subscription {
	sub := event.Subscription{
		ID: it.SK, URL: it.URL, EventTypes: it.EventTypes, Description: it.Description,
		CreatedAt: it.CreatedAt, Disabled: it.Disabled, DisabledReason: it.DisabledReason,
		Secrets: it.Secrets,
	}
	if sub.EventTypes == nil {
		sub.EventTypes = []string{}
	}
	if it.FailingSince > 0 {
		sub.FailingSince = event.FormatTime(time.Unix(it.FailingSince, 0))
	}
	if it.PreviousExpires > 0 {
		sub.PreviousExpires = time.Unix(it.PreviousExpires, 0)
	}
	return sub
}

// CreateSubscription stores a new subscription for tenant. It fails with
// *event.InputError (code invalid_subscription) when the tenant already
// holds event.MaxSubscriptions. The limit is exact under concurrency: a
// counter item in the tenant's subscriptions partition is incremented,
// conditionally on staying within the limit, in the same transaction that
// writes the subscription.
func (st *Store) CreateSubscription(ctx context.Context, tenant string, sub event.Subscription) error {
	item, err := attributevalue.MarshalMap(subscriptionItem{
		PK: subscriptionPartition(tenant), SK: sub.ID, RecordType: contract.RecordTypeSubscription,
		URL: sub.URL, EventTypes: sub.EventTypes, Description: sub.Description, CreatedAt: sub.CreatedAt,
		Secrets: sub.Secrets,
	})
	if err != nil {
		return fmt.Errorf("encode subscription: %w", err)
	}
	items := []types.TransactWriteItem{
		{Update: &types.Update{
			TableName:                           aws.String(st.table),
			Key:                                 st.key(subscriptionPartition(tenant), contract.SubscriptionCountKey),
			UpdateExpression:                    aws.String("SET #c = #c + :one"),
			ConditionExpression:                 aws.String("#c < :max"),
			ExpressionAttributeNames:            map[string]string{"#c": attrCount},
			ExpressionAttributeValues:           map[string]types.AttributeValue{":one": n(1), ":max": n(event.MaxSubscriptions)},
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		}},
		{Put: &types.Put{
			TableName:                aws.String(st.table),
			Item:                     item,
			ConditionExpression:      aws.String("attribute_not_exists(#pk)"),
			ExpressionAttributeNames: map[string]string{"#pk": schema.AttrUserID},
		}},
	}
	return st.transact(ctx, "create subscription", &items, func(reasons []types.CancellationReason) (bool, error) {
		switch {
		case failedCheck(reasons, 0) && reasons[0].Item != nil:
			return true, &event.InputError{Code: event.CodeInvalidSubscription, Message: fmt.Sprintf("this tenant already has %d subscriptions, the most it may hold: delete one first", getN(reasons[0].Item, attrCount))}
		case failedCheck(reasons, 0):
			// No counter yet: count the tenant's subscriptions once.
			return true, st.initSubscriptionCount(ctx, tenant)
		}
		return false, nil
	})
}

// initSubscriptionCount writes the tenant's subscription counter, unless
// another writer did, from the subscriptions stored (tables written before
// the counter existed). Every create needs the counter, so none can slip
// in between the count and the write.
func (st *Store) initSubscriptionCount(ctx context.Context, tenant string) error {
	subs, err := st.ListSubscriptions(ctx, tenant)
	if err != nil {
		return err
	}
	_, err = st.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(st.table),
		Item: map[string]types.AttributeValue{
			schema.AttrUserID:           s(subscriptionPartition(tenant)),
			schema.AttrTimestampEventID: s(contract.SubscriptionCountKey),
			contract.AttrRecordType:     s(contract.RecordTypeSubscriptionCount),
			attrCount:                   n(int64(len(subs))),
		},
		ConditionExpression:      aws.String("attribute_not_exists(#pk)"),
		ExpressionAttributeNames: map[string]string{"#pk": schema.AttrUserID},
	})
	var ccf *types.ConditionalCheckFailedException
	if err != nil && !errors.As(err, &ccf) {
		return classify("count subscriptions", err)
	}
	return nil
}

// ListSubscriptions returns the tenant's subscriptions, ordered by id.
func (st *Store) ListSubscriptions(ctx context.Context, tenant string) ([]event.Subscription, error) {
	var out []event.Subscription
	var start map[string]types.AttributeValue
	for {
		res, err := st.db.Query(ctx, &dynamodb.QueryInput{
			TableName:                 aws.String(st.table),
			KeyConditionExpression:    aws.String("#pk = :pk"),
			ExpressionAttributeNames:  map[string]string{"#pk": schema.AttrUserID},
			ExpressionAttributeValues: map[string]types.AttributeValue{":pk": s(subscriptionPartition(tenant))},
			ConsistentRead:            aws.Bool(true),
			ExclusiveStartKey:         start,
		})
		if err != nil {
			return nil, classify("list subscriptions", err)
		}
		for _, item := range res.Items {
			if getS(item, contract.AttrRecordType) != contract.RecordTypeSubscription {
				continue // the counter
			}
			var it subscriptionItem
			if err := attributevalue.UnmarshalMap(item, &it); err != nil {
				return nil, fmt.Errorf("decode subscription: %w", err)
			}
			out = append(out, it.subscription())
		}
		if len(res.LastEvaluatedKey) == 0 {
			return out, nil
		}
		start = res.LastEvaluatedKey
	}
}

// GetSubscription returns one of the tenant's subscriptions, or
// event.ErrSubscriptionNotFound.
func (st *Store) GetSubscription(ctx context.Context, tenant, id string) (event.Subscription, error) {
	if id == contract.SubscriptionCountKey {
		return event.Subscription{}, event.ErrSubscriptionNotFound
	}
	res, err := st.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(st.table),
		Key:            st.key(subscriptionPartition(tenant), id),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return event.Subscription{}, classify("read subscription", err)
	}
	if len(res.Item) == 0 {
		return event.Subscription{}, event.ErrSubscriptionNotFound
	}
	var it subscriptionItem
	if err := attributevalue.UnmarshalMap(res.Item, &it); err != nil {
		return event.Subscription{}, fmt.Errorf("decode subscription: %w", err)
	}
	return it.subscription(), nil
}

// DeleteSubscription removes one of the tenant's subscriptions and
// decrements the tenant's subscription counter, in one transaction;
// deleting an unknown one is event.ErrSubscriptionNotFound.
func (st *Store) DeleteSubscription(ctx context.Context, tenant, id string) error {
	if id == contract.SubscriptionCountKey {
		return event.ErrSubscriptionNotFound
	}
	items := []types.TransactWriteItem{
		{Delete: &types.Delete{
			TableName:                aws.String(st.table),
			Key:                      st.key(subscriptionPartition(tenant), id),
			ConditionExpression:      aws.String("attribute_exists(#pk)"),
			ExpressionAttributeNames: map[string]string{"#pk": schema.AttrUserID},
		}},
		{Update: &types.Update{
			TableName:                 aws.String(st.table),
			Key:                       st.key(subscriptionPartition(tenant), contract.SubscriptionCountKey),
			UpdateExpression:          aws.String("SET #c = #c - :one"),
			ConditionExpression:       aws.String("#c > :zero"),
			ExpressionAttributeNames:  map[string]string{"#c": attrCount},
			ExpressionAttributeValues: map[string]types.AttributeValue{":one": n(1), ":zero": n(0)},
		}},
	}
	return st.transact(ctx, "delete subscription", &items, func(reasons []types.CancellationReason) (bool, error) {
		switch {
		case failedCheck(reasons, 0):
			return true, event.ErrSubscriptionNotFound
		case failedCheck(reasons, 1):
			// No counter (a table written before it existed): the next
			// create counts what is left.
			items = items[:1]
			return true, nil
		}
		return false, nil
	})
}

// RotateSecret makes secret the subscription's newest signing secret; its
// previous newest keeps signing until overlapUntil, older ones are
// dropped. Two concurrent rotations cannot both win: the update is
// conditional on the secrets read.
func (st *Store) RotateSecret(ctx context.Context, tenant, id, secret string, overlapUntil time.Time) (event.Subscription, error) {
	cur, err := st.GetSubscription(ctx, tenant, id)
	if err != nil {
		return event.Subscription{}, err
	}
	secrets := []string{secret}
	if len(cur.Secrets) > 0 {
		secrets = append(secrets, cur.Secrets[0])
	}
	next, err := attributevalue.Marshal(secrets)
	if err != nil {
		return event.Subscription{}, err
	}
	old, err := attributevalue.Marshal(cur.Secrets)
	if err != nil {
		return event.Subscription{}, err
	}
	res, err := st.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                aws.String(st.table),
		Key:                      st.key(subscriptionPartition(tenant), id),
		UpdateExpression:         aws.String("SET #sec = :next, #pe = :pe"),
		ConditionExpression:      aws.String("#sec = :old"),
		ExpressionAttributeNames: map[string]string{"#sec": "secrets", "#pe": "previous_expires"},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":next": next, ":old": old, ":pe": n(overlapUntil.Unix()),
		},
		ReturnValues: types.ReturnValueAllNew,
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return event.Subscription{}, event.ErrRotationConflict
	}
	if err != nil {
		return event.Subscription{}, classify("rotate subscription secret", err)
	}
	var it subscriptionItem
	if err := attributevalue.UnmarshalMap(res.Attributes, &it); err != nil {
		return event.Subscription{}, fmt.Errorf("decode subscription: %w", err)
	}
	return it.subscription(), nil
}

// SubscriptionSucceeded records a delivery at at: it ends the
// subscription's run of failures unless that run began after at (a later
// failure), and remembers at as the latest success. Applying the same or
// an older success again changes nothing, so a redelivered queue message
// may repeat it.
func (st *Store) SubscriptionSucceeded(ctx context.Context, tenant, id string, at time.Time) error {
	key := st.key(subscriptionPartition(tenant), id)
	names := map[string]string{"#fs": attrFailingSince, "#ls": attrLastSuccess, "#pk": schema.AttrUserID}
	values := map[string]types.AttributeValue{":at": n(at.Unix())}
	_, err := st.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                           aws.String(st.table),
		Key:                                 key,
		UpdateExpression:                    aws.String("SET #ls = :at REMOVE #fs"),
		ConditionExpression:                 aws.String("attribute_exists(#pk) AND (attribute_not_exists(#ls) OR #ls <= :at) AND (attribute_not_exists(#fs) OR #fs <= :at)"),
		ExpressionAttributeNames:            names,
		ExpressionAttributeValues:           values,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		switch {
		case ccf.Item == nil:
			return event.ErrSubscriptionNotFound
		case getN(ccf.Item, attrLastSuccess) > at.Unix():
			return nil // a later success is recorded
		}
		// A run of failures began after at: keep it, remember the success.
		delete(names, "#fs")
		_, err = st.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName:                 aws.String(st.table),
			Key:                       key,
			UpdateExpression:          aws.String("SET #ls = :at"),
			ConditionExpression:       aws.String("attribute_exists(#pk) AND (attribute_not_exists(#ls) OR #ls < :at)"),
			ExpressionAttributeNames:  names,
			ExpressionAttributeValues: values,
		})
		if errors.As(err, &ccf) {
			return nil
		}
	}
	if err != nil {
		return classify("update subscription", err)
	}
	return nil
}

// SubscriptionFailed records a failure at at: the run of failures starts
// at unless one is under way, or a success at or after at is recorded
// (the failure is older news: nothing changes). When the run has lasted
// disableAfter or more, the subscription is disabled with reason;
// disabled reports whether this call disabled it (exactly one caller
// does).
func (st *Store) SubscriptionFailed(ctx context.Context, tenant, id string, at time.Time, disableAfter time.Duration, reason string) (disabled bool, err error) {
	res, err := st.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                           aws.String(st.table),
		Key:                                 st.key(subscriptionPartition(tenant), id),
		UpdateExpression:                    aws.String("SET #fs = if_not_exists(#fs, :at)"),
		ConditionExpression:                 aws.String("attribute_exists(#pk) AND (attribute_not_exists(#ls) OR #ls < :at)"),
		ExpressionAttributeNames:            map[string]string{"#fs": attrFailingSince, "#ls": attrLastSuccess, "#pk": schema.AttrUserID},
		ExpressionAttributeValues:           map[string]types.AttributeValue{":at": n(at.Unix())},
		ReturnValues:                        types.ReturnValueAllNew,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		if ccf.Item == nil {
			return false, event.ErrSubscriptionNotFound
		}
		return false, nil
	}
	if err != nil {
		return false, classify("update subscription", err)
	}
	since := getN(res.Attributes, attrFailingSince)
	if at.Sub(time.Unix(since, 0)) < disableAfter {
		return false, nil
	}
	_, err = st.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                aws.String(st.table),
		Key:                      st.key(subscriptionPartition(tenant), id),
		UpdateExpression:         aws.String("SET #d = :t, #dr = :r"),
		ConditionExpression:      aws.String("attribute_exists(#pk) AND #d <> :t"),
		ExpressionAttributeNames: map[string]string{"#d": "disabled", "#dr": "disabled_reason", "#pk": schema.AttrUserID},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":t": &types.AttributeValueMemberBOOL{Value: true}, ":r": s(reason),
		},
	})
	if errors.As(err, &ccf) {
		return false, nil
	}
	if err != nil {
		return false, classify("disable subscription", err)
	}
	return true, nil
}
