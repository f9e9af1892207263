// Webhook subscriptions and delivery attempts: records in partitions no
// tenant can own ("subscription#<tenant>", "attempt#<tenant>#<event_id>"),
// without index attributes, so they never appear in an inbox query or an
// index, and the stream consumer skips them (contract.IsEventPartition).

package store

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/triggers-dev/triggers/contract"
	"github.com/triggers-dev/triggers/internal/backoff"
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
	FailingSinceUs  int64    `dynamodbav:"failing_since_us,omitempty"`
	LastSuccess     int64    `dynamodbav:"last_success,omitempty"`
	LastSuccessUs   int64    `dynamodbav:"last_success_us,omitempty"`
	Consecutive     int      `dynamodbav:"consecutive_failures,omitempty"`
	OpenUntil       int64    `dynamodbav:"circuit_open_until,omitempty"`
	ProbeUntil      int64    `dynamodbav:"probe_until,omitempty"`
	OpenFor         int64    `dynamodbav:"circuit_open_for,omitempty"`
	SlowUntil       int64    `dynamodbav:"slow_until,omitempty"`
	WakeUntil       int64    `dynamodbav:"wake_until,omitempty"`
	WakeSent        bool     `dynamodbav:"wake_sent,omitempty"`
	Secrets         []string `dynamodbav:"secrets"`
	SecretsExpire   []int64  `dynamodbav:"secrets_expire,omitempty"`
	PreviousExpires int64    `dynamodbav:"previous_expires,omitempty"`
	PatchBy         string   `dynamodbav:"patch_by,omitempty"`
	PatchPrev       string   `dynamodbav:"patch_prev,omitempty"`
}

// Attributes of a subscription item: the current run of failures' start
// and the latest success, epoch microseconds (the attempts' times as
// recorded, so that a failure and a success within a second are ordered:
// failing_since_us, last_success_us) and also epoch seconds (the only
// ones before: still written for a version not yet updated or rolled
// back, and read when the microseconds are absent: see runStart and
// condFailureIsNewer); the circuit breaker's failures
// since the latest success; the end of an open circuit and of a
// half-open probe's hold, epoch milliseconds; the rate
// cap's window (epoch seconds) and its count.
const (
	attrFailingSince   = "failing_since"
	attrFailingSinceUs = "failing_since_us"
	attrLastSuccess    = "last_success"
	attrLastSuccessUs  = "last_success_us"
	attrCount          = "count"
	attrConsecutive    = "consecutive_failures"
	attrOpenUntil      = "circuit_open_until"
	attrProbeUntil     = "probe_until"
	attrOpenFor        = "circuit_open_for" // milliseconds: the latest opening's cooldown
	attrRateWindow     = "rate_window"
	attrRateCount      = "rate_count"
	attrSlowUntil      = "slow_until" // epoch milliseconds: MarkSlow
	// attrLastFailure is the token of the SubscriptionFailed call that
	// counted the latest failure: the SDK's retry of its write, whose
	// answer was lost, finds it and does not count the failure again.
	attrLastFailure = "last_failure"
	// attrLastSuccessBy is the token of the SubscriptionSucceeded call
	// that recorded the latest success (its retry finds it).
	attrLastSuccessBy = "last_success_by"
	// attrProbeBy is the token of the AcquireProbe call that took the
	// latest probe.
	attrProbeBy = "probe_by"
	// attrDisabledBy is the token of the SubscriptionFailed call that
	// disabled the subscription.
	attrDisabledBy = "disabled_by"
	// attrOpenBy is the token of the OpenCircuit call that set the
	// circuit's latest opening.
	attrOpenBy = "open_by"
	// attrClosedBy is the open_by a success found when it closed the
	// circuit (SubscriptionSucceeded; "" when none was ever opened): a
	// late copy of that opening is refused (OpenCircuit).
	attrClosedBy = "closed_by"
	// attrOpenPrev is the open_by an opening replaced (an opening for
	// longer over one still in force), and attrClosedPrev the open_prev
	// a success found when it closed the circuit: a late copy of the
	// replaced opening, landing after a success of a request in flight
	// before both, is refused too.
	attrOpenPrev   = "open_prev"
	attrClosedPrev = "closed_prev"
	// attrRateBy is the token of the TakeRateToken call that counted the
	// latest request of the rate window.
	attrRateBy = "rate_by"
	// attrPatchBy is the token of the UpdateSubscription call that made
	// the latest change through the API: each change is conditional on
	// the token it read, so a late copy of an older change is refused.
	attrPatchBy = "patch_by"
	// attrPatchPrev is the patch_by the latest change replaced: the
	// change before it. A call whose answer was lost and another change
	// landed before the SDK's resend finds its token there.
	attrPatchPrev = "patch_prev"
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
	if since, ok := runStart(it.FailingSince, it.FailingSinceUs); ok {
		sub.FailingSince = event.FormatTime(since)
	}
	switch {
	case len(it.SecretsExpire) > 0 && (it.PreviousExpires == 0 || it.PreviousExpires == it.SecretsExpire[0]):
		for _, sec := range it.SecretsExpire {
			sub.PreviousExpires = append(sub.PreviousExpires, time.Unix(sec, 0))
		}
	case it.PreviousExpires > 0:
		// Written by the version before secrets_expire (which a
		// rotation also keeps writing as secrets_expire[0]): the overlap
		// of Secrets[1] alone. A secrets_expire that disagrees is stale,
		// left by an earlier rotation of this version before one of the
		// previous version (found by review).
		sub.PreviousExpires = []time.Time{time.Unix(it.PreviousExpires, 0)}
	}
	sub.ConsecutiveFailures = it.Consecutive
	if it.OpenUntil > 0 {
		sub.CircuitOpenUntil = time.UnixMilli(it.OpenUntil).UTC()
	}
	if it.ProbeUntil > 0 {
		sub.ProbeUntil = time.UnixMilli(it.ProbeUntil).UTC()
	}
	sub.CircuitCooldown = time.Duration(it.OpenFor) * time.Millisecond
	if it.SlowUntil > 0 {
		sub.SlowUntil = time.UnixMilli(it.SlowUntil).UTC()
	}
	if it.WakeSent && it.WakeUntil > 0 {
		sub.WakeQueuedUntil = time.UnixMilli(it.WakeUntil).UTC()
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
			return true, subscriptionLimitError(getN(reasons[0].Item, attrCount))
		case failedCheck(reasons, 0):
			// No counter yet: count the tenant's subscriptions once.
			return true, st.initSubscriptionCount(ctx, tenant)
		}
		return false, nil
	})
}

// CheckSubscriptionLimit fails with CreateSubscription's
// *event.InputError when the tenant already holds
// event.MaxSubscriptions, from one consistent read of its counter. It lets
// a create stop before it seals a secret (a KMS call, or a 503 while KMS
// is down) for a tenant at the limit; CreateSubscription still enforces
// the limit exactly. A tenant without a counter yet passes.
func (st *Store) CheckSubscriptionLimit(ctx context.Context, tenant string) error {
	out, err := st.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:                aws.String(st.table),
		Key:                      st.key(subscriptionPartition(tenant), contract.SubscriptionCountKey),
		ConsistentRead:           aws.Bool(true),
		ProjectionExpression:     aws.String("#c"),
		ExpressionAttributeNames: map[string]string{"#c": attrCount},
	})
	if err != nil {
		return classify("count subscriptions", err)
	}
	if held := getN(out.Item, attrCount); held >= event.MaxSubscriptions {
		return subscriptionLimitError(held)
	}
	return nil
}

// subscriptionLimitError answers a create for a tenant holding held
// subscriptions, the limit or more.
func subscriptionLimitError(held int64) error {
	return &event.InputError{Code: event.CodeInvalidSubscription, Message: fmt.Sprintf("this tenant already has %d subscriptions, the most it may hold: delete one first", held)}
}

// initSubscriptionCount writes the tenant's subscription counter, unless
// another writer did, from the subscriptions stored (tables written before
// the counter existed). Every create needs the counter, so none can slip
// in between the count and the write. A delete can: the counter is
// written in one transaction with a check that each subscription counted
// still exists, and counted again when one does not (a delete between the
// count and the write left the counter one too high for good, the tenant
// refused a create below the limit; found by review). A delete after it
// finds the counter and decrements it (deleteSubscription).
func (st *Store) initSubscriptionCount(ctx context.Context, tenant string) error {
	for try := 1; ; try++ {
		subs, err := st.ListSubscriptions(ctx, tenant)
		if err != nil {
			return err
		}
		items := []types.TransactWriteItem{{Put: &types.Put{
			TableName: aws.String(st.table),
			Item: map[string]types.AttributeValue{
				schema.AttrUserID:           s(subscriptionPartition(tenant)),
				schema.AttrTimestampEventID: s(contract.SubscriptionCountKey),
				contract.AttrRecordType:     s(contract.RecordTypeSubscriptionCount),
				attrCount:                   n(int64(len(subs))),
			},
			ConditionExpression:      aws.String("attribute_not_exists(#pk)"),
			ExpressionAttributeNames: map[string]string{"#pk": schema.AttrUserID},
		}}}
		// A transaction takes 100 items: a tenant holding more (only
		// possible before the limit was exact) is counted unchecked.
		if len(subs) < 100 {
			for _, sub := range subs {
				items = append(items, types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{
					TableName:                aws.String(st.table),
					Key:                      st.key(subscriptionPartition(tenant), sub.ID),
					ConditionExpression:      aws.String("attribute_exists(#pk)"),
					ExpressionAttributeNames: map[string]string{"#pk": schema.AttrUserID},
				}})
			}
		}
		_, err = st.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
		var tce *types.TransactionCanceledException
		switch {
		case err == nil:
			return nil
		case !errors.As(err, &tce):
			return classify("count subscriptions", err)
		case failedCheck(tce.CancellationReasons, 0):
			return nil // another writer counted them
		case try >= transactTries:
			// Changed under it at every try: try again later.
			return fmt.Errorf("%w: count subscriptions: %d tries: %v", event.ErrUnavailable, try, err)
		}
		// A subscription counted was deleted meanwhile, or another
		// transaction met this one: count again.
		if err := st.sleep(ctx, backoff.Delay(retryBase, try)); err != nil {
			return classify("count subscriptions", err)
		}
	}
}

// SubscriptionTenants returns, sorted, every tenant that holds a
// subscription (or its counter) in the table, from a scan of the whole
// table: it reads every item, and costs the table's size in read
// capacity (eventually consistent: half a unit per 4 KB). It is for
// operator tools that must not miss a tenant (triggers-keys
// reseal-secrets -scan-events), not for requests.
// The store's client must also scan (a *dynamodb.Client does; API leaves
// Scan out, as no request path may).
func (st *Store) SubscriptionTenants(ctx context.Context) ([]string, error) {
	scanner, ok := st.db.(dynamodb.ScanAPIClient)
	if !ok {
		return nil, fmt.Errorf("scan for subscription tenants: the store's client (%T) cannot scan", st.db)
	}
	pages := dynamodb.NewScanPaginator(scanner, &dynamodb.ScanInput{
		TableName:                 aws.String(st.table),
		ProjectionExpression:      aws.String("#pk"),
		FilterExpression:          aws.String("begins_with(#pk, :p)"),
		ExpressionAttributeNames:  map[string]string{"#pk": schema.AttrUserID},
		ExpressionAttributeValues: map[string]types.AttributeValue{":p": s(contract.SubscriptionPrefix)},
	})
	seen := map[string]bool{}
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, classify("scan for subscription tenants", err)
		}
		for _, it := range page.Items {
			seen[strings.TrimPrefix(getS(it, schema.AttrUserID), contract.SubscriptionPrefix)] = true
		}
	}
	return slices.Sorted(maps.Keys(seen)), nil
}

// ListSubscriptions returns the tenant's subscriptions, ordered by id.
func (st *Store) ListSubscriptions(ctx context.Context, tenant string) ([]event.Subscription, error) {
	var out []event.Subscription
	pages := dynamodb.NewQueryPaginator(st.db, &dynamodb.QueryInput{
		TableName:                 aws.String(st.table),
		KeyConditionExpression:    aws.String("#pk = :pk"),
		ExpressionAttributeNames:  map[string]string{"#pk": schema.AttrUserID},
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": s(subscriptionPartition(tenant))},
		ConsistentRead:            aws.Bool(true),
	})
	for pages.HasMorePages() {
		res, err := pages.NextPage(ctx)
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
	}
	return out, nil
}

// GetSubscription returns one of the tenant's subscriptions, or
// event.ErrSubscriptionNotFound.
func (st *Store) GetSubscription(ctx context.Context, tenant, id string) (event.Subscription, error) {
	it, err := st.getSubscriptionItem(ctx, tenant, id)
	if err != nil {
		return event.Subscription{}, err
	}
	return it.subscription(), nil
}

// getSubscriptionItem reads one of the tenant's subscriptions as stored
// (a strongly consistent read), or event.ErrSubscriptionNotFound.
func (st *Store) getSubscriptionItem(ctx context.Context, tenant, id string) (subscriptionItem, error) {
	if id == contract.SubscriptionCountKey {
		return subscriptionItem{}, event.ErrSubscriptionNotFound
	}
	res, err := st.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(st.table),
		Key:            st.key(subscriptionPartition(tenant), id),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return subscriptionItem{}, classify("read subscription", err)
	}
	if len(res.Item) == 0 {
		return subscriptionItem{}, event.ErrSubscriptionNotFound
	}
	var it subscriptionItem
	if err := attributevalue.UnmarshalMap(res.Item, &it); err != nil {
		return subscriptionItem{}, fmt.Errorf("decode subscription: %w", err)
	}
	return it, nil
}

// DeleteSubscription removes one of the tenant's subscriptions and
// decrements the tenant's subscription counter, in one transaction;
// deleting an unknown one is event.ErrSubscriptionNotFound.
func (st *Store) DeleteSubscription(ctx context.Context, tenant, id string) error {
	return st.deleteSubscription(ctx, tenant, id, "")
}

// DeleteGoneSubscription removes a subscription whose target answered
// 410 Gone at url, as DeleteSubscription does, on condition that the
// subscription still points there: one moved to another URL since (a
// PATCH while the request was under way) is kept, and the call is
// event.ErrSubscriptionMoved. An empty url (an attempt recorded before
// attempts kept theirs) deletes it wherever it points.
func (st *Store) DeleteGoneSubscription(ctx context.Context, tenant, id, url string) error {
	return st.deleteSubscription(ctx, tenant, id, url)
}

func (st *Store) deleteSubscription(ctx context.Context, tenant, id, url string) error {
	if id == contract.SubscriptionCountKey {
		return event.ErrSubscriptionNotFound
	}
	del := &types.Delete{
		TableName:                           aws.String(st.table),
		Key:                                 st.key(subscriptionPartition(tenant), id),
		ConditionExpression:                 aws.String("attribute_exists(#pk)"),
		ExpressionAttributeNames:            map[string]string{"#pk": schema.AttrUserID},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}
	if url != "" {
		del.ConditionExpression = aws.String("attribute_exists(#pk) AND #url = :url")
		del.ExpressionAttributeNames["#url"] = "url"
		del.ExpressionAttributeValues = map[string]types.AttributeValue{":url": s(url)}
	}
	decrement := &types.Update{
		TableName:                           aws.String(st.table),
		Key:                                 st.key(subscriptionPartition(tenant), contract.SubscriptionCountKey),
		UpdateExpression:                    aws.String("SET #c = #c - :one"),
		ConditionExpression:                 aws.String("#c > :zero"),
		ExpressionAttributeNames:            map[string]string{"#c": attrCount},
		ExpressionAttributeValues:           map[string]types.AttributeValue{":one": n(1), ":zero": n(0)},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}
	items := []types.TransactWriteItem{
		{Delete: del},
		{Update: decrement},
	}
	return st.transact(ctx, "delete subscription", &items, func(reasons []types.CancellationReason) (bool, error) {
		switch {
		case failedCheck(reasons, 0) && len(reasons[0].Item) > 0:
			return true, event.ErrSubscriptionMoved
		case failedCheck(reasons, 0):
			return true, event.ErrSubscriptionNotFound
		case failedCheck(reasons, 1) && items[1].ConditionCheck != nil:
			// The counter was written since: decrement it.
			items[1] = types.TransactWriteItem{Update: decrement}
			return true, nil
		case failedCheck(reasons, 1) && len(reasons[1].Item) == 0:
			// No counter (a table written before it existed): delete
			// while there is none, and the next create counts what is
			// left. (Dropping the counter's part altogether let a count
			// written meanwhile keep this subscription.)
			items[1] = types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{
				TableName:                aws.String(st.table),
				Key:                      st.key(subscriptionPartition(tenant), contract.SubscriptionCountKey),
				ConditionExpression:      aws.String("attribute_not_exists(#pk)"),
				ExpressionAttributeNames: map[string]string{"#pk": schema.AttrUserID},
			}}
			return true, nil
		case failedCheck(reasons, 1):
			// A counter at 0 with subscriptions left (counted by an
			// older version): delete without going below 0.
			items = items[:1]
			return true, nil
		}
		return false, nil
	})
}

// ReplaceSecrets replaces the subscription's stored secrets with next, on
// condition that they are still old (the same secrets in the same order:
// their overlaps, secrets_expire and previous_expires, stay as they are):
// what resealing plain-text secrets in place does (triggers-keys
// reseal-secrets). A rotation since it was read is ErrRotationConflict,
// a subscription gone ErrSubscriptionNotFound. Secrets that are next
// already are no conflict: the SDK's retry of the write, whose answer was
// lost (it reported a reseal done as raced; found by review).
func (st *Store) ReplaceSecrets(ctx context.Context, tenant, id string, old, next []string) error {
	if len(next) != len(old) {
		return fmt.Errorf("replace the secrets of subscription %s: %d secrets for %d", id, len(next), len(old))
	}
	nextAV, err := attributevalue.Marshal(next)
	if err != nil {
		return err
	}
	oldAV, err := attributevalue.Marshal(old)
	if err != nil {
		return err
	}
	_, err = st.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                           aws.String(st.table),
		Key:                                 st.key(subscriptionPartition(tenant), id),
		UpdateExpression:                    aws.String("SET #sec = :next"),
		ConditionExpression:                 aws.String("#sec = :old OR #sec = :next"),
		ExpressionAttributeNames:            map[string]string{"#sec": "secrets"},
		ExpressionAttributeValues:           map[string]types.AttributeValue{":next": nextAV, ":old": oldAV},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		if ccf.Item == nil {
			return event.ErrSubscriptionNotFound
		}
		return event.ErrRotationConflict
	}
	if err != nil {
		return classify("replace subscription secrets", err)
	}
	return nil
}

// RotateSecret makes secret the subscription's newest signing secret at
// now; the newest it replaces keeps signing until overlapUntil, and each
// older one whose overlap has not ended at now keeps its own, up to
// event.MaxSigningSecrets in all (the oldest dropped first). Two
// concurrent rotations cannot both win: the update is conditional on the
// secrets read. secret must be new to this call: a retry that finds it
// the newest secret already is this rotation's own (an answer lost).
func (st *Store) RotateSecret(ctx context.Context, tenant, id, secret string, now, overlapUntil time.Time) (event.Subscription, error) {
	cur, err := st.GetSubscription(ctx, tenant, id)
	if err != nil {
		return event.Subscription{}, err
	}
	secrets, expire := []string{secret}, []int64{}
	if len(cur.Secrets) > 0 {
		secrets, expire = append(secrets, cur.Secrets[0]), append(expire, overlapUntil.Unix())
	}
	for i, sec := range cur.Secrets[min(1, len(cur.Secrets)):] {
		if len(secrets) == event.MaxSigningSecrets {
			break
		}
		if i < len(cur.PreviousExpires) && now.Before(cur.PreviousExpires[i]) {
			secrets, expire = append(secrets, sec), append(expire, cur.PreviousExpires[i].Unix())
		}
	}
	next, err := attributevalue.Marshal(secrets)
	if err != nil {
		return event.Subscription{}, err
	}
	old, err := attributevalue.Marshal(cur.Secrets)
	if err != nil {
		return event.Subscription{}, err
	}
	update := "SET #sec = :next REMOVE #se, #pe"
	values := map[string]types.AttributeValue{":next": next, ":old": old}
	if len(expire) > 0 {
		// previous_expires keeps the overlap of Secrets[1] for the
		// version before secrets_expire (a webhook function not yet
		// updated, or rolled back, reads only it: found by review).
		update = "SET #sec = :next, #se = :se, #pe = :pe"
		values[":pe"] = n(expire[0])
		if values[":se"], err = attributevalue.Marshal(expire); err != nil {
			return event.Subscription{}, err
		}
	}
	res, err := st.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                           aws.String(st.table),
		Key:                                 st.key(subscriptionPartition(tenant), id),
		UpdateExpression:                    aws.String(update),
		ConditionExpression:                 aws.String("#sec = :old"),
		ExpressionAttributeNames:            map[string]string{"#sec": "secrets", "#se": "secrets_expire", "#pe": "previous_expires"},
		ExpressionAttributeValues:           values,
		ReturnValues:                        types.ReturnValueAllNew,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		if ccf.Item == nil {
			// Deleted since it was read: an unknown id, not a race of
			// two rotations (found by review: it answered 409).
			return event.Subscription{}, event.ErrSubscriptionNotFound
		}
		var it subscriptionItem
		if err := attributevalue.UnmarshalMap(ccf.Item, &it); err == nil && len(it.Secrets) > 0 && it.Secrets[0] == secret {
			// This rotation's own write (secret is new and sealed with a
			// nonce of its own): the SDK's retry of an update whose
			// answer was lost. Before, the client got a 409 for a
			// rotation that took place, and never saw the new secret.
			return it.subscription(), nil
		}
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

// runStart returns the start of a run of failures stored as fs (epoch
// seconds) and fsUs (epoch microseconds), and whether a run is under way.
// The seconds decide whether there is one: the version before knew only
// them, and removes only them when a success ends the run (or a PATCH
// clears it), so microseconds without seconds are a run it ended. The
// microseconds count when they fall in the seconds' second; otherwise
// (absent: a run begun by the version before, or left from a run it
// ended before starting this one) the run began at the seconds.
func runStart(fs, fsUs int64) (time.Time, bool) {
	if fs <= 0 {
		return time.Time{}, false
	}
	if fsUs > 0 && fsUs/1_000_000 == fs {
		return time.UnixMicro(fsUs).UTC(), true
	}
	return time.Unix(fs, 0).UTC(), true
}

// laterSuccess reports whether subscription item it records a success
// after at: in microseconds, or in a later second (a success recorded by
// the version before, which writes the seconds alone).
func laterSuccess(it map[string]types.AttributeValue, at time.Time) bool {
	return getN(it, attrLastSuccess) > at.Unix() || getN(it, attrLastSuccessUs) > at.UnixMicro()
}

// Conditions on a subscription's health, with #ls, #lsu, #fs and #fsu
// its latest success and run start in seconds and microseconds, and :s
// and :us the time of the success or failure being recorded. Where the
// microseconds are recorded they decide; the seconds still hold them back
// from a later second (a success recorded meanwhile by the version
// before). Where only the seconds are (written by the version before),
// they compare as they did: by whole seconds, a success winning within
// its second. At the same instant a success wins over a failure, in
// either order: a failure is newer than the latest success only when
// strictly after it, and a success ends a run that began at its instant.
const (
	// condNoLaterSuccess: no success after :us is recorded.
	condNoLaterSuccess = "(attribute_not_exists(#ls) OR #ls <= :s) AND (attribute_not_exists(#lsu) OR #lsu <= :us)"
	// condFailureIsNewer: every success recorded is before :us.
	condFailureIsNewer = "((attribute_not_exists(#lsu) AND (attribute_not_exists(#ls) OR #ls < :s))" +
		" OR (#lsu < :us AND (attribute_not_exists(#ls) OR #ls <= :s)))"
	// condRunNotLater: no run, or one that began at or before :us.
	condRunNotLater = "(attribute_not_exists(#fs) OR (#fs <= :s AND (attribute_not_exists(#fsu) OR #fsu <= :us)))"
)

// SubscriptionSucceeded records a delivery at at (to the microsecond) by
// a request to url: it ends the subscription's run of failures and closes
// its circuit, unless that run began after at (a later failure), and
// remembers at as the latest success. Applying the same or an older
// success again changes nothing, so a redelivered queue message may
// repeat it. A success and a failure at the same instant: the success
// wins. A success of a server the subscription has left since (a PATCH
// of url to another server during the request) changes nothing: it says
// nothing of the new server, whose circuit a slow request may have
// opened. An empty url: wherever the subscription points.
//
// closed reports whether this call ended a run of failures or an open
// (or half-open) circuit: false when there was none (a healthy
// subscription's delivery: the common case, so that the dispatcher's
// follow-up of a closing, a write, is not made for every delivery),
// when a later success or a run that began after at is recorded, or when
// the subscription has left url's server (the caller then keeps what it
// knows of the circuit: found by review, the dispatcher forgot a circuit
// it had opened on the new server). It is true when the SDK's retry of
// its write, whose answer was lost, finds the write done, or refused by
// a run begun since but made (it may have ended one: the caller's
// follow-up then finds nothing at worst). A later success recorded
// before the resend overwrites the token: both then report false, and
// the backlog parked behind the circuit goes at the circuit's wake.
func (st *Store) SubscriptionSucceeded(ctx context.Context, tenant, id, url string, at time.Time) (closed bool, err error) {
	key := st.key(subscriptionPartition(tenant), id)
	values := map[string]types.AttributeValue{":s": n(at.Unix()), ":us": n(at.UnixMicro())}
	tok := callToken()
	for try := 0; ; try++ {
		names := map[string]string{"#fs": attrFailingSince, "#fsu": attrFailingSinceUs, "#ls": attrLastSuccess, "#lsu": attrLastSuccessUs,
			"#pk": schema.AttrUserID, "#cf": attrConsecutive, "#open": attrOpenUntil, "#probe": attrProbeUntil, "#for": attrOpenFor, "#lsb": attrLastSuccessBy,
			"#ob": attrOpenBy, "#cb": attrClosedBy, "#op": attrOpenPrev, "#cp": attrClosedPrev}
		vals := maps.Clone(values)
		vals[":tok"], vals[":none"] = s(tok), s("")
		cond := "attribute_exists(#pk) AND " + condNoLaterSuccess + " AND " + condRunNotLater
		cond += onURL(url, names, vals)
		// ALL_OLD: what the update removed tells whether it ended
		// anything (a returned value costs no capacity).
		var out *dynamodb.UpdateItemOutput
		out, err = st.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName:                           aws.String(st.table),
			Key:                                 key,
			UpdateExpression:                    aws.String("SET #ls = :s, #lsu = :us, #lsb = :tok, #cb = if_not_exists(#ob, :none), #cp = if_not_exists(#op, :none) REMOVE #fs, #fsu, #cf, #open, #probe, #for"),
			ConditionExpression:                 aws.String(cond),
			ExpressionAttributeNames:            names,
			ExpressionAttributeValues:           vals,
			ReturnValues:                        types.ReturnValueAllOld,
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		})
		var ccf *types.ConditionalCheckFailedException
		if errors.As(err, &ccf) {
			if ccf.Item == nil {
				return false, event.ErrSubscriptionNotFound
			}
			if getS(ccf.Item, attrLastSuccessBy) == tok {
				// This call's success, its answer lost, and a failure
				// that began a run after at recorded before the SDK's
				// resend, which that run refuses: the write may have
				// ended a run all the same (found by review: reported
				// false, the backlog parked behind the circuit waited for
				// the circuit's wake).
				return true, nil
			}
			if now := getS(ccf.Item, "url"); url != "" && now != url {
				if !sameServer(url, now) || try >= maxUpdateRounds {
					return false, nil // another server's success
				}
				url = now // the same server under another path: it counts
				continue
			}
			if laterSuccess(ccf.Item, at) {
				return false, nil // a later success is recorded
			}
			// A run of failures began after at: keep it, remember the success.
			_, err = st.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
				TableName:        aws.String(st.table),
				Key:              key,
				UpdateExpression: aws.String("SET #ls = :s, #lsu = :us"),
				ConditionExpression: aws.String("attribute_exists(#pk) AND (attribute_not_exists(#ls) OR #ls <= :s)" +
					" AND (attribute_not_exists(#lsu) OR #lsu < :us)"),
				ExpressionAttributeNames:  map[string]string{"#ls": attrLastSuccess, "#lsu": attrLastSuccessUs, "#pk": schema.AttrUserID},
				ExpressionAttributeValues: values,
			})
			if errors.As(err, &ccf) {
				return false, nil
			}
			if err != nil {
				return false, classify("update subscription", err)
			}
			return false, nil
		}
		if err != nil {
			return false, classify("update subscription", err)
		}
		// This call's success recorded already (its token): the SDK's
		// retry of this write, whose answer was lost, finds the item as
		// the write left it. The write may have ended a run, so it
		// reports closed (the caller's follow-up, an earlier wake, costs
		// a write that finds nothing when nothing is parked); before, the
		// backlog parked behind the circuit waited for the circuit's
		// wake (found by review).
		if getS(out.Attributes, attrLastSuccessBy) == tok {
			return true, nil
		}
		return endedFailures(out.Attributes), nil
	}
}

// endedFailures reports whether a subscription item, as it was before a
// success removed them, had a run of failures, a failure count or a
// circuit (open, half-open with its probe, or its cooldown) recorded.
func endedFailures(old map[string]types.AttributeValue) bool {
	for _, a := range []string{attrFailingSince, attrFailingSinceUs, attrConsecutive, attrOpenUntil, attrProbeUntil, attrOpenFor} {
		if _, ok := old[a]; ok {
			return true
		}
	}
	return false
}

// SubscriptionFailed records a failure at at (to the microsecond) of a
// request to url: the
// run of failures starts at unless one is under way, and the failure
// counts towards the circuit breaker, unless a success at or after at is
// recorded (the failure is older news: nothing changes and Consecutive
// is 0) or the subscription has moved to another server than url's since
// (a PATCH during the request: its new endpoint's breaker starts afresh,
// the old one's failure is not counted there either). An empty url
// counts the failure wherever the subscription points. The breaker's
// count is a heuristic: a failure recorded again (its queue message
// handled twice) counts again. When the run has lasted disableAfter or
// more, the subscription is disabled with reason (Disabled: this call did
// it; exactly one caller does), provided that run still stands: a success
// that ended it, or a PATCH to another server that cleared it, since the
// failure was counted leaves it enabled. The SDK's retry of a write
// whose answer was lost finds its own write (the call's token): the
// failure is counted once, and the disabling is this call's.
func (st *Store) SubscriptionFailed(ctx context.Context, tenant, id, url string, at time.Time, disableAfter time.Duration, reason string) (event.FailureRun, error) {
	var res *dynamodb.UpdateItemOutput
	// Whether a run is under way decides the write: one that goes on
	// keeps its start, a new one is written whole (its seconds and
	// microseconds together, replacing microseconds left by a run the
	// version before ended). Guessed first as under way (every failure of
	// a run but its first), and decided again when the condition says
	// otherwise.
	underWay, switches := true, 0
	// Each write carries the call's token, and none counts a failure the
	// token already counted: the SDK's retry of a write whose answer was
	// lost found the failure counted and counted it again (an ADD), or
	// found the run it had begun and, written the other way, counted it
	// again; the circuit then opened a failure early (found by review).
	tok := callToken()
	var attrs map[string]types.AttributeValue
	for try := 0; ; {
		names := map[string]string{"#fs": attrFailingSince, "#ls": attrLastSuccess, "#lsu": attrLastSuccessUs, "#pk": schema.AttrUserID, "#cf": attrConsecutive, "#lf": attrLastFailure}
		values := map[string]types.AttributeValue{":s": n(at.Unix()), ":us": n(at.UnixMicro()), ":one": n(1), ":tok": s(tok)}
		cond := "attribute_exists(#pk) AND (attribute_not_exists(#lf) OR #lf <> :tok) AND " + condFailureIsNewer
		update := "SET #lf = :tok ADD #cf :one"
		if underWay {
			cond += " AND attribute_exists(#fs)"
		} else {
			cond += " AND attribute_not_exists(#fs)"
			names["#fsu"] = attrFailingSinceUs
			update = "SET #fs = :s, #fsu = :us, #lf = :tok ADD #cf :one"
		}
		cond += onURL(url, names, values)
		var err error
		res, err = st.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName:                           aws.String(st.table),
			Key:                                 st.key(subscriptionPartition(tenant), id),
			UpdateExpression:                    aws.String(update),
			ConditionExpression:                 aws.String(cond),
			ExpressionAttributeNames:            names,
			ExpressionAttributeValues:           values,
			ReturnValues:                        types.ReturnValueAllNew,
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		})
		var ccf *types.ConditionalCheckFailedException
		if errors.As(err, &ccf) {
			if ccf.Item == nil {
				return event.FailureRun{}, event.ErrSubscriptionNotFound
			}
			if getS(ccf.Item, attrLastFailure) == tok {
				attrs = ccf.Item // counted: the item as this call left it
				break
			}
			if has := getN(ccf.Item, attrFailingSince) > 0; has != underWay {
				// The run started or ended meanwhile, or was guessed
				// wrong: write it the other way.
				if switches++; switches > maxUpdateRounds {
					return event.FailureRun{}, fmt.Errorf("update subscription %s: %w: its failing run kept starting and ending", id, event.ErrUnavailable)
				}
				underWay = has
				continue
			}
			now := getS(ccf.Item, "url")
			if url == "" || now == url || !sameServer(url, now) || try >= maxUpdateRounds {
				// Older news than a success, or another server's.
				return event.FailureRun{}, nil
			}
			url = now // the same server under another path: it counts
			try++
			continue
		}
		if err != nil {
			return event.FailureRun{}, classify("update subscription", err)
		}
		attrs = res.Attributes
		break
	}
	run := event.FailureRun{Consecutive: int(getN(attrs, attrConsecutive))}
	since, _ := runStart(getN(attrs, attrFailingSince), getN(attrs, attrFailingSinceUs))
	run.Since = since
	if at.Sub(since) < disableAfter {
		return run, nil
	}
	// Only while the run measured stands: a success that ended it, or a
	// PATCH to another server that cleared it, between the two writes
	// leaves the subscription enabled (found by review: it was disabled
	// all the same, the moved one for its old server's failure).
	// The run is its start as stored: its seconds, and its microseconds
	// where it has them (a run begun by the version before has none).
	// A subscription this call disabled already (its token: the SDK's
	// retry of the write, whose answer was lost) is reported disabled:
	// before, the retry failed the condition and the disabling went
	// without its metric and alarm, and the attempt's retry was queued
	// (found by review). Only this call's: the reason is no token (every
	// failure of a run at one status code has the same), and another
	// failure must not report the disabling again.
	cond := "attribute_exists(#pk) AND (#d <> :t OR #db = :tok) AND #fs = :fs"
	names := map[string]string{"#d": "disabled", "#dr": "disabled_reason", "#db": attrDisabledBy, "#pk": schema.AttrUserID, "#fs": attrFailingSince}
	values := map[string]types.AttributeValue{
		":t": &types.AttributeValueMemberBOOL{Value: true}, ":r": s(reason), ":fs": n(getN(attrs, attrFailingSince)), ":tok": s(tok),
	}
	if us := getN(attrs, attrFailingSinceUs); us > 0 {
		cond += " AND #fsu = :fsu"
		names["#fsu"], values[":fsu"] = attrFailingSinceUs, n(us)
	}
	_, err := st.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                           aws.String(st.table),
		Key:                                 st.key(subscriptionPartition(tenant), id),
		UpdateExpression:                    aws.String("SET #d = :t, #dr = :r, #db = :tok"),
		ConditionExpression:                 aws.String(cond),
		ExpressionAttributeNames:            names,
		ExpressionAttributeValues:           values,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		// Disabled by this call all the same: a success that ended the
		// run between the disabling and the SDK's resend of it (its
		// answer lost) fails the resend's #fs condition, and the success
		// does not enable the subscription again (found by review: the
		// disabling went without its metric and alarm).
		d, _ := ccf.Item["disabled"].(*types.AttributeValueMemberBOOL)
		run.Disabled = d != nil && d.Value && getS(ccf.Item, attrDisabledBy) == tok
		return run, nil
	}
	if err != nil {
		return event.FailureRun{}, classify("disable subscription", err)
	}
	run.Disabled = true
	return run, nil
}

// OpenCircuit opens the subscription's circuit until until, an opening
// for cooldown (remembered as the subscription's CircuitCooldown, which a
// failed probe doubles), decided at at (for a failed probe, its
// attempt's time, taken before its claim and request; for a run of
// failures that reached the threshold, the run's start; for a request
// still unanswered after SlowAfter, when its watch fired), or keeps it
// open if it already is for longer; it ends any probe's hold. A success
// at or after at (SubscriptionSucceeded's at: a request started since got
// through; for a run, the success ended it) refuses it (opened false), as
// SubscriptionFailed does not count a failure older than a success
// (found by review: the decision was taken as until - cooldown, the time
// of the call, so a failed probe's follow-up applied again after a stop,
// once another probe had succeeded meanwhile, reopened the circuit that
// success had closed, for up to the doubled cooldown).
//
// url is the target of the request that calls for it: a subscription
// moved to another server than url's since (a PATCH during the request)
// is not opened, and the call is event.ErrSubscriptionMoved (its new
// endpoint's breaker starts afresh, as SubscriptionFailed does not count
// the failure there either); an empty url opens it wherever it points.
// opened reports whether this call moved the end. A subscription that no
// longer exists is not an error.
//
// The opening carries this call's token (open_by): the SDK's retry of the
// write, whose answer was lost, is refused and finds the opening its own,
// reported as opened (it once reported nothing opened: no CircuitOpened
// metric, no log line). A late copy of the opening (its first try held on
// the network past the SDK's retry) that lands after a success closed the
// circuit is refused instead of opening it again for the cooldown (found
// by review) by either of two conditions: no success is recorded at or
// after at (the probe that closes a circuit starts after its cooldown,
// after at), and the success that closed the circuit did not close this
// very opening (closed_by, the open_by it found: for a success of a
// request already in flight when the opening was decided), or the one it
// replaced (closed_prev, the open_prev it found: for a late copy of an
// opening a longer one replaced, landing after a success of a request in
// flight before both; found by review). Left: a late copy of an opening
// replaced twice before such a success.
func (st *Store) OpenCircuit(ctx context.Context, tenant, id, url string, at, until time.Time, cooldown time.Duration) (opened bool, err error) {
	tok := callToken()
	for try := 0; ; try++ {
		names := map[string]string{"#open": attrOpenUntil, "#for": attrOpenFor, "#probe": attrProbeUntil, "#pk": schema.AttrUserID, "#ob": attrOpenBy, "#cb": attrClosedBy,
			"#lsu": attrLastSuccessUs, "#op": attrOpenPrev, "#cp": attrClosedPrev}
		values := map[string]types.AttributeValue{":until": n(until.UnixMilli()), ":for": n(cooldown.Milliseconds()), ":tok": s(tok), ":dec": n(at.UnixMicro()), ":none": s("")}
		cond := "attribute_exists(#pk) AND (attribute_not_exists(#open) OR #open < :until) AND (attribute_not_exists(#cb) OR #cb <> :tok)" +
			" AND (attribute_not_exists(#cp) OR #cp <> :tok) AND (attribute_not_exists(#lsu) OR #lsu < :dec)"
		cond += onURL(url, names, values)
		_, err = st.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName:                           aws.String(st.table),
			Key:                                 st.key(subscriptionPartition(tenant), id),
			UpdateExpression:                    aws.String("SET #open = :until, #for = :for, #op = if_not_exists(#ob, :none), #ob = :tok REMOVE #probe"),
			ConditionExpression:                 aws.String(cond),
			ExpressionAttributeNames:            names,
			ExpressionAttributeValues:           values,
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		})
		var ccf *types.ConditionalCheckFailedException
		if errors.As(err, &ccf) {
			now := getS(ccf.Item, "url")
			switch {
			case getS(ccf.Item, attrOpenBy) == tok, getS(ccf.Item, attrOpenPrev) == tok:
				return true, nil // this call's opening, its answer lost (and replaced since)
			case ccf.Item == nil || url == "" || now == url || try >= maxUpdateRounds:
				return false, nil // gone, or open for longer already
			case !sameServer(url, now):
				return false, event.ErrSubscriptionMoved
			}
			url = now // the same server under another path: it opens
			continue
		}
		if err != nil {
			return false, classify("open circuit", err)
		}
		return true, nil
	}
}

// AcquireProbe takes the half-open subscription's probe until until:
// true for exactly one caller while its circuit's open time has passed at
// now and no other probe holds it; false while the circuit is open, a
// probe holds it, or the subscription is gone. A probe holds it until
// event.HoldSkewMargin past its hold's end by now: the holder bounds its
// request by the end on its own clock, which may run behind this
// caller's.
func (st *Store) AcquireProbe(ctx context.Context, tenant, id string, now, until time.Time) (bool, error) {
	// The hold carries this call's token: the SDK's retry of the write,
	// whose answer was lost, finds the probe its own (refused, nobody
	// made the probe until the hold ended; found by review).
	_, err := st.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:        aws.String(st.table),
		Key:              st.key(subscriptionPartition(tenant), id),
		UpdateExpression: aws.String("SET #probe = :until, #pb = :tok"),
		ConditionExpression: aws.String("attribute_exists(#pk) AND (attribute_not_exists(#open) OR #open <= :now)" +
			" AND (attribute_not_exists(#probe) OR #probe <= :lapsed OR #pb = :tok)"),
		ExpressionAttributeNames: map[string]string{"#open": attrOpenUntil, "#probe": attrProbeUntil, "#pk": schema.AttrUserID, "#pb": attrProbeBy},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":now": n(now.UnixMilli()), ":until": n(until.UnixMilli()),
			":lapsed": n(now.Add(-event.HoldSkewMargin).UnixMilli()), ":tok": s(callToken()),
		},
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return false, nil
	}
	if err != nil {
		return false, classify("acquire probe", err)
	}
	return true, nil
}

// TakeRateToken counts one request to the subscription's endpoint in the
// second of now: the endpoint's rate cap, shared by every instance. It
// returns 0 when the request is among the first limit of its second (it
// may go), else how many places past the limit it came (ahead): its turn
// comes ceil(ahead/limit) seconds on, so a backlog of n requests is spread
// over n/limit seconds in one pass instead of all of them coming back
// every second (found by review: the retry queue shared by every tenant
// then did about n²/(2 x limit) handlings for one endpoint's backlog).
// Every call counts, past the limit too. A subscription that is gone, or a
// window already past now's second (another instance's clock ahead), gives
// 1: wait a second.
func (st *Store) TakeRateToken(ctx context.Context, tenant, id string, now time.Time, limit int) (ahead int, err error) {
	return st.takeRateToken(ctx, tenant, id, now, limit, callToken())
}

// takeRateToken is TakeRateToken under the call's token tok: each count
// carries it (rate_by), so the SDK's retry of a write whose answer was
// lost finds its own count and does not count the request again (a
// request counted twice put off a request of the same second a second
// late).
func (st *Store) takeRateToken(ctx context.Context, tenant, id string, now time.Time, limit int, tok string) (ahead int, err error) {
	key := st.key(subscriptionPartition(tenant), id)
	names := map[string]string{"#w": attrRateWindow, "#c": attrRateCount, "#pk": schema.AttrUserID, "#rb": attrRateBy}
	// The common case: the window is this second.
	out, err := st.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                           aws.String(st.table),
		Key:                                 key,
		UpdateExpression:                    aws.String("SET #rb = :tok ADD #c :one"),
		ConditionExpression:                 aws.String("attribute_exists(#pk) AND #w = :w AND (attribute_not_exists(#rb) OR #rb <> :tok)"),
		ExpressionAttributeNames:            names,
		ExpressionAttributeValues:           map[string]types.AttributeValue{":w": n(now.Unix()), ":one": n(1), ":tok": s(tok)},
		ReturnValues:                        types.ReturnValueUpdatedNew,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var ccf *types.ConditionalCheckFailedException
	if !errors.As(err, &ccf) {
		if err != nil {
			return 0, classify("take rate token", err)
		}
		return max(0, int(getN(out.Attributes, attrRateCount))-limit), nil
	}
	switch {
	case ccf.Item == nil || getN(ccf.Item, attrRateWindow) > now.Unix():
		return 1, nil // gone, or a later second is counting
	case getN(ccf.Item, attrRateWindow) == now.Unix():
		// This call's own count (the only way the window can be this
		// second and the condition fail): its answer was lost.
		return max(0, int(getN(ccf.Item, attrRateCount))-limit), nil
	}
	// An older window (or none): start this second's, unless another
	// caller just did.
	_, err = st.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                           aws.String(st.table),
		Key:                                 key,
		UpdateExpression:                    aws.String("SET #w = :w, #c = :one, #rb = :tok"),
		ConditionExpression:                 aws.String("attribute_exists(#pk) AND (attribute_not_exists(#w) OR #w < :w)"),
		ExpressionAttributeNames:            names,
		ExpressionAttributeValues:           map[string]types.AttributeValue{":w": n(now.Unix()), ":one": n(1), ":tok": s(tok)},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if errors.As(err, &ccf) {
		if getS(ccf.Item, attrRateBy) == tok && getN(ccf.Item, attrRateWindow) == now.Unix() {
			return max(0, int(getN(ccf.Item, attrRateCount))-limit), nil // its own start, answer lost
		}
		// Lost the race for the new window: count in it like anyone.
		return st.takeRateToken(ctx, tenant, id, now, limit, tok)
	}
	if err != nil {
		return 0, classify("take rate token", err)
	}
	return 0, nil
}

// callToken returns the token a subscription write carries for its call
// (last_failure, last_success_by, disabled_by, open_by, probe_by,
// rate_by): 13 base32 characters, 65 random bits, which tell a call's own
// write from any other call's on the item. Half of rand.Text: the tokens
// ride on the subscription item that every delivery writes, and 13 bytes
// fewer each keep more items under a 1 KB write unit (a subscription with
// one sealed secret and every token is about 840 bytes with full-length
// tokens).
func callToken() string { return rand.Text()[:13] }

// ReasonDisabledByAPI is the disabled_reason of a subscription disabled
// through UpdateSubscription.
const ReasonDisabledByAPI = "disabled through the API"

// maxUpdateRounds bounds UpdateSubscription's tries against concurrent
// changes of the subscription (its enabled state, other changes through
// the API), and the other subscription writes' tries against its URL
// moving to another path of the same server.
const maxUpdateRounds = 3

// UpdateSubscription applies p to one of the tenant's subscriptions at now
// and returns it as stored. The write is one conditional UpdateItem: on
// the subscription existing (a concurrent delete gives
// event.ErrSubscriptionNotFound, never a half-written item) and on its
// enabled state being the one the patch was decided on.
//
// A new URL is a new endpoint: its breaker starts closed (failure count,
// failing run, open circuit, probe, rate window, slow mark and the old
// circuit's wake marker are cleared).
// Re-enabling a disabled subscription (Disabled false) clears its failing
// run and reason and leaves its circuit half-open at now: the next
// delivery is a single probe, the attempts behind it wait for it (parked),
// and a failed probe opens the circuit again. Disabled true disables it
// (ReasonDisabledByAPI).
//
// The write is also conditional on the token of the change it read
// (patch_by, attrPatchBy) and writes its own: a copy of it that reaches
// DynamoDB late (its attempt timed out on the network, the SDK's retry
// made the change, and a later PATCH another) is refused instead of
// putting the older change back over the newer one (an endpoint's old
// URL, a subscription enabled again after it was disabled). A retry that
// finds its own token is the change made, its answer lost; so is one
// that finds it as the token the latest change replaced (patch_prev):
// another change landed between the write and the SDK's resend, and the
// resend answers with the subscription as stored, both changes in it
// (before, it read again and applied its change a second time, over the
// other one). Two changes landing in that interval re-apply it.
func (st *Store) UpdateSubscription(ctx context.Context, tenant, id string, p event.SubscriptionPatch, now time.Time) (event.Subscription, error) {
	if id == contract.SubscriptionCountKey {
		return event.Subscription{}, event.ErrSubscriptionNotFound
	}
	tok := callToken()
	for range maxUpdateRounds {
		curItem, err := st.getSubscriptionItem(ctx, tenant, id)
		if err != nil {
			return event.Subscription{}, err
		}
		cur := curItem.subscription()
		names := map[string]string{"#pk": schema.AttrUserID, "#rt": contract.AttrRecordType, "#d": "disabled", "#pb": attrPatchBy}
		values := map[string]types.AttributeValue{
			":sub": s(contract.RecordTypeSubscription), ":was": &types.AttributeValueMemberBOOL{Value: cur.Disabled},
		}
		cond := "attribute_exists(#pk) AND #rt = :sub AND #d = :was AND attribute_not_exists(#pb)"
		if curItem.PatchBy != "" {
			cond = "attribute_exists(#pk) AND #rt = :sub AND #d = :was AND #pb = :pb0"
			values[":pb0"] = s(curItem.PatchBy)
		}
		sets, removes := map[string]types.AttributeValue{}, map[string]bool{}
		if p.URL != nil {
			sets["url"] = s(*p.URL)
			if !sameServer(*p.URL, cur.URL) {
				// The wake marker goes with the circuit: it names the old
				// circuit's wake, due when that circuit would have closed
				// (up to MaxBreakerCooldown away), and while confirmed it
				// refuses the wake of every attempt parked behind the new
				// server (a slow lane's put-off waited for the old wake
				// instead of at most 30 s: found by review). The old wake
				// still runs, an extra wake, which is harmless.
				for _, a := range []string{attrConsecutive, attrFailingSince, attrFailingSinceUs, attrOpenUntil, attrOpenFor, attrProbeUntil, attrRateWindow, attrRateCount, attrSlowUntil, attrWakeOwner, attrWakeUntil, attrWakeSent, attrWakeStandby} {
					removes[a] = true
				}
			}
		}
		if p.EventTypes != nil {
			filter, err := attributevalue.Marshal(*p.EventTypes)
			if err != nil {
				return event.Subscription{}, err
			}
			sets["event_types"] = filter
		}
		if p.Description != nil {
			if *p.Description == "" {
				removes["description"] = true
			} else {
				sets["description"] = s(*p.Description)
			}
		}
		switch {
		case p.Disabled != nil && !*p.Disabled && cur.Disabled:
			sets["disabled"] = &types.AttributeValueMemberBOOL{Value: false}
			sets[attrOpenUntil] = n(now.UnixMilli())
			// The wake marker goes too: a wake that ran while the
			// subscription was disabled closed its parked attempts without
			// taking the marker, which would refuse the wake of an attempt
			// parked behind the probe (an extra wake is harmless).
			for _, a := range []string{"disabled_reason", attrConsecutive, attrFailingSince, attrFailingSinceUs, attrOpenFor, attrProbeUntil, attrWakeOwner, attrWakeUntil, attrWakeSent, attrWakeStandby} {
				removes[a] = true
			}
			delete(removes, attrOpenUntil)
		case p.Disabled != nil && *p.Disabled && !cur.Disabled:
			sets["disabled"] = &types.AttributeValueMemberBOOL{Value: true}
			sets["disabled_reason"] = s(ReasonDisabledByAPI)
			delete(removes, "disabled_reason")
		}
		expr := ""
		i := 0
		for _, a := range sortedKeys(sets) {
			i++
			k := fmt.Sprintf("a%d", i)
			names["#"+k], values[":"+k] = a, sets[a]
			expr = joinClause(expr, "SET", "#"+k+" = :"+k)
		}
		rem := ""
		for _, a := range sortedKeys(removes) {
			i++
			k := fmt.Sprintf("a%d", i)
			names["#"+k] = a
			rem = joinClause(rem, "REMOVE", "#"+k)
		}
		if expr == "" && rem == "" {
			return cur, nil // disabled asked for as it already is
		}
		expr = joinClause(expr, "SET", "#pb = :pb")
		values[":pb"] = s(tok)
		if curItem.PatchBy != "" {
			names["#pp"] = attrPatchPrev
			expr = joinClause(expr, "SET", "#pp = :pb0")
		}
		res, err := st.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName:                           aws.String(st.table),
			Key:                                 st.key(subscriptionPartition(tenant), id),
			UpdateExpression:                    aws.String(strings.TrimSpace(expr + " " + rem)),
			ConditionExpression:                 aws.String(cond),
			ExpressionAttributeNames:            names,
			ExpressionAttributeValues:           values,
			ReturnValues:                        types.ReturnValueAllNew,
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		})
		var ccf *types.ConditionalCheckFailedException
		if errors.As(err, &ccf) {
			if len(ccf.Item) == 0 {
				return event.Subscription{}, event.ErrSubscriptionNotFound
			}
			var it subscriptionItem
			if err := attributevalue.UnmarshalMap(ccf.Item, &it); err == nil && (it.PatchBy == tok || it.PatchPrev == tok) {
				// This call's change, made by an earlier try whose
				// answer was lost (and, with patch_prev, another change
				// made after it).
				return it.subscription(), nil
			}
			continue // enabled, disabled or changed through the API meanwhile: decide again
		}
		if err != nil {
			return event.Subscription{}, classify("update subscription", err)
		}
		var it subscriptionItem
		if err := attributevalue.UnmarshalMap(res.Attributes, &it); err != nil {
			return event.Subscription{}, fmt.Errorf("decode subscription: %w", err)
		}
		return it.subscription(), nil
	}
	return event.Subscription{}, fmt.Errorf("update subscription %s: %w: it kept changing (enabled, disabled or changed through the API)", id, event.ErrUnavailable)
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// joinClause appends part to an update expression clause (SET or REMOVE).
func joinClause(clause, verb, part string) string {
	if clause == "" {
		return verb + " " + part
	}
	return clause + ", " + part
}

// onURL returns the condition that the subscription still points at url,
// the URL a request of the delivery path went to, adding its name and
// value ("" for an empty url: wherever it points). The callers decide on
// a failed condition themselves: another URL of the same server is tried
// again with that URL (sameServer), another server is left alone.
func onURL(url string, names map[string]string, values map[string]types.AttributeValue) string {
	if url == "" {
		return ""
	}
	names["#url"], values[":url"] = "url", s(url)
	return " AND #url = :url"
}

// sameServer reports whether webhook URLs a and b name the same server:
// the same scheme, host (case-insensitive) and port (the scheme's default
// when absent), whatever their paths and queries. A URL of another server
// is a new endpoint, with a closed breaker; one of the same server keeps
// the breaker's state (its failures, its failing run, its open circuit and
// rate window): a PATCH of the path or query string alone (?r=1, ?r=2...)
// re-armed a hanging endpoint's circuit at will, each time for another
// round of requests held for the whole timeout, and restarted the run that
// DisableAfter counts (found by review).
func sameServer(a, b string) bool {
	ua, errA := url.Parse(a)
	ub, errB := url.Parse(b)
	if errA != nil || errB != nil {
		return a == b
	}
	// The host without a final dot (the same DNS name fully qualified),
	// the port as a number (":0443" is 443), so that another spelling of
	// the same server does not clear the breaker either (found by
	// review). Another name for the same address (wildcard DNS) is another
	// server: the breaker is per name.
	host := func(u *url.URL) string {
		h := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
		if a, err := netip.ParseAddr(h); err == nil {
			return a.Unmap().String() // one spelling per IP address (::1111, 0:0::1111...)
		}
		return h
	}
	port := func(u *url.URL) int {
		if p, err := strconv.Atoi(u.Port()); err == nil {
			return p
		}
		switch strings.ToLower(u.Scheme) {
		case "https":
			return 443
		case "http":
			return 80
		}
		return -1
	}
	return strings.EqualFold(ua.Scheme, ub.Scheme) && host(ua) == host(ub) && port(ua) == port(ub)
}
