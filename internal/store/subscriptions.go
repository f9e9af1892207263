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
	Secrets         []string `dynamodbav:"secrets"`
	PreviousExpires int64    `dynamodbav:"previous_expires,omitempty"`
}

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
// holds event.MaxSubscriptions (a soft limit: two concurrent creates may
// both pass it).
func (st *Store) CreateSubscription(ctx context.Context, tenant string, sub event.Subscription) error {
	subs, err := st.ListSubscriptions(ctx, tenant)
	if err != nil {
		return err
	}
	if len(subs) >= event.MaxSubscriptions {
		return &event.InputError{Code: event.CodeInvalidSubscription, Message: fmt.Sprintf("this tenant already has %d subscriptions, the most it may hold: delete one first", len(subs))}
	}
	item, err := attributevalue.MarshalMap(subscriptionItem{
		PK: subscriptionPartition(tenant), SK: sub.ID, RecordType: contract.RecordTypeSubscription,
		URL: sub.URL, EventTypes: sub.EventTypes, Description: sub.Description, CreatedAt: sub.CreatedAt,
		Secrets: sub.Secrets,
	})
	if err != nil {
		return fmt.Errorf("encode subscription: %w", err)
	}
	_, err = st.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:           aws.String(st.table),
		Item:                item,
		ConditionExpression: aws.String("attribute_not_exists(#pk)"),
		ExpressionAttributeNames: map[string]string{
			"#pk": schema.AttrUserID,
		},
	})
	if err != nil {
		return classify("create subscription", err)
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

// DeleteSubscription removes one of the tenant's subscriptions; deleting
// an unknown one is event.ErrSubscriptionNotFound.
func (st *Store) DeleteSubscription(ctx context.Context, tenant, id string) error {
	_, err := st.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName:                aws.String(st.table),
		Key:                      st.key(subscriptionPartition(tenant), id),
		ConditionExpression:      aws.String("attribute_exists(#pk)"),
		ExpressionAttributeNames: map[string]string{"#pk": schema.AttrUserID},
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return event.ErrSubscriptionNotFound
	}
	if err != nil {
		return classify("delete subscription", err)
	}
	return nil
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

// SubscriptionSucceeded clears the subscription's run of failures.
func (st *Store) SubscriptionSucceeded(ctx context.Context, tenant, id string) error {
	_, err := st.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                aws.String(st.table),
		Key:                      st.key(subscriptionPartition(tenant), id),
		UpdateExpression:         aws.String("REMOVE #fs"),
		ConditionExpression:      aws.String("attribute_exists(#pk)"),
		ExpressionAttributeNames: map[string]string{"#fs": "failing_since", "#pk": schema.AttrUserID},
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return event.ErrSubscriptionNotFound
	}
	if err != nil {
		return classify("update subscription", err)
	}
	return nil
}

// SubscriptionFailed records a failure at now: the run of failures starts
// now unless one is under way. When the run has lasted disableAfter or
// more, the subscription is disabled with reason; disabled reports
// whether this call disabled it (exactly one caller does).
func (st *Store) SubscriptionFailed(ctx context.Context, tenant, id string, now time.Time, disableAfter time.Duration, reason string) (disabled bool, err error) {
	res, err := st.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(st.table),
		Key:                       st.key(subscriptionPartition(tenant), id),
		UpdateExpression:          aws.String("SET #fs = if_not_exists(#fs, :now)"),
		ConditionExpression:       aws.String("attribute_exists(#pk)"),
		ExpressionAttributeNames:  map[string]string{"#fs": "failing_since", "#pk": schema.AttrUserID},
		ExpressionAttributeValues: map[string]types.AttributeValue{":now": n(now.Unix())},
		ReturnValues:              types.ReturnValueAllNew,
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return false, event.ErrSubscriptionNotFound
	}
	if err != nil {
		return false, classify("update subscription", err)
	}
	since := getN(res.Attributes, "failing_since")
	if now.Sub(time.Unix(since, 0)) < disableAfter {
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

// attemptItem is a delivery attempt as stored.
type attemptItem struct {
	PK             string `dynamodbav:"user_id"`
	SK             string `dynamodbav:"timestamp#event_id"`
	RecordType     string `dynamodbav:"record_type"`
	SubscriptionID string `dynamodbav:"subscription_id"`
	Number         int    `dynamodbav:"attempt"`
	Timestamp      string `dynamodbav:"timestamp"`
	Outcome        string `dynamodbav:"outcome"`
	StatusCode     int    `dynamodbav:"status_code,omitempty"`
	LatencyMs      int64  `dynamodbav:"latency_ms"`
	Response       string `dynamodbav:"response,omitempty"`
	Error          string `dynamodbav:"error,omitempty"`
	NextAttemptAt  string `dynamodbav:"next_attempt_at,omitempty"`
	TTL            int64  `dynamodbav:"ttl"`
}

func attemptPartition(tenant, eventID string) string {
	return contract.AttemptPrefix + contract.Key(tenant, eventID)
}

func attemptSortKey(subscriptionID string, number int) string {
	return contract.Key(subscriptionID, fmt.Sprintf("%03d", number))
}

// PutAttempt records attempt a of the tenant's event eventID; it expires
// with the event (ttl, epoch seconds). Recording the same attempt number
// twice keeps the first record and reports recorded false.
func (st *Store) PutAttempt(ctx context.Context, tenant, eventID string, a event.Attempt, ttl int64) (recorded bool, err error) {
	item, err := attributevalue.MarshalMap(attemptItem{
		PK: attemptPartition(tenant, eventID), SK: attemptSortKey(a.SubscriptionID, a.Number),
		RecordType: contract.RecordTypeAttempt, SubscriptionID: a.SubscriptionID, Number: a.Number,
		Timestamp: a.Timestamp, Outcome: a.Outcome, StatusCode: a.StatusCode, LatencyMs: a.LatencyMs,
		Response: a.Response, Error: a.Error, NextAttemptAt: a.NextAttemptAt, TTL: ttl,
	})
	if err != nil {
		return false, fmt.Errorf("encode attempt: %w", err)
	}
	_, err = st.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                aws.String(st.table),
		Item:                     item,
		ConditionExpression:      aws.String("attribute_not_exists(#pk)"),
		ExpressionAttributeNames: map[string]string{"#pk": schema.AttrUserID},
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return false, nil
	}
	if err != nil {
		return false, classify("record attempt", err)
	}
	return true, nil
}

// ListAttempts returns every recorded attempt of the tenant's event,
// ordered by subscription id and attempt number; expired ones are hidden.
func (st *Store) ListAttempts(ctx context.Context, tenant, eventID string) ([]event.Attempt, error) {
	out := []event.Attempt{}
	var start map[string]types.AttributeValue
	for {
		res, err := st.db.Query(ctx, &dynamodb.QueryInput{
			TableName:                aws.String(st.table),
			KeyConditionExpression:   aws.String("#pk = :pk"),
			FilterExpression:         aws.String("#ttl >= :now"),
			ExpressionAttributeNames: map[string]string{"#pk": schema.AttrUserID, "#ttl": schema.AttrTTL},
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":pk": s(attemptPartition(tenant, eventID)), ":now": n(st.now().Unix()),
			},
			ConsistentRead:    aws.Bool(true),
			ExclusiveStartKey: start,
		})
		if err != nil {
			return nil, classify("list attempts", err)
		}
		for _, item := range res.Items {
			var it attemptItem
			if err := attributevalue.UnmarshalMap(item, &it); err != nil {
				return nil, fmt.Errorf("decode attempt: %w", err)
			}
			out = append(out, event.Attempt{
				SubscriptionID: it.SubscriptionID, Number: it.Number, Timestamp: it.Timestamp,
				Outcome: it.Outcome, StatusCode: it.StatusCode, LatencyMs: it.LatencyMs,
				Response: it.Response, Error: it.Error, NextAttemptAt: it.NextAttemptAt,
			})
		}
		if len(res.LastEvaluatedKey) == 0 {
			return out, nil
		}
		start = res.LastEvaluatedKey
	}
}
