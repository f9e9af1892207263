// Idempotency records: one per tenant and Idempotency-Key, written in the
// same transaction as the event they name.

package store

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/triggers-dev/triggers/contract"
	"github.com/triggers-dev/triggers/internal/backoff"
	"github.com/triggers-dev/triggers/internal/event"
	"github.com/triggers-dev/triggers/internal/item"
	"github.com/triggers-dev/triggers/internal/shard"
	"github.com/triggers-dev/triggers/schema"
)

// IdempotencyPartition returns the partition key of the idempotency record
// for tenant and client key: the key is hashed, so any client string works.
func IdempotencyPartition(tenant, key string) string {
	sum := sha256.Sum256([]byte(key))
	return contract.IdempotencyPrefix + contract.Key(tenant, base64.RawURLEncoding.EncodeToString(sum[:]))
}

// PutIdempotent stores e unless tenant already used idempotency key key. It
// writes the event and an idempotency record in one transaction, both
// conditional on not existing (an expired record may be replaced). When
// the key was used before, it returns the original event and created
// false; requestHash must then match the original's, or the result is
// event.ErrIdempotencyMismatch. Concurrent requests with one key store one
// event: the losers of a transaction conflict retry and then find the
// record.
func (st *Store) PutIdempotent(ctx context.Context, tenant string, e event.Event, key, requestHash string) (event.Event, bool, error) {
	partition := st.partitionFor(ctx, tenant, e.ID)
	record := map[string]types.AttributeValue{
		schema.AttrUserID:           s(IdempotencyPartition(tenant, key)),
		schema.AttrTimestampEventID: s(contract.IdempotencySortKey),
		contract.AttrRecordType:     s(contract.RecordTypeIdempotency),
		schema.AttrEventID:          s(e.ID),
		contract.AttrEventKey:       s(e.SortKey()),
		contract.AttrRequestHash:    s(requestHash),
		contract.AttrCreatedAt:      s(e.Timestamp),
		schema.AttrTTL:              n(e.TTL),
	}
	if partition != tenant {
		// The record stays one per tenant and key; it names the shard
		// its event went to, which a later shard count cannot recompute.
		record[AttrEventPartition] = s(partition)
	}
	names := map[string]string{"#pk": schema.AttrUserID}
	item := st.itemFor(partition, e)
	// input builds each try's request afresh, as transact does: the
	// record's condition reads the clock at that try (an expired record
	// found on a retry is replaced), and the SDK's idempotency-token
	// middleware writes a ClientRequestToken into the input it is given,
	// so a reused input sent every retry with the first try's token,
	// which DynamoDB treats as the same request (found by review).
	input := func() *dynamodb.TransactWriteItemsInput {
		return &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
			{Put: &types.Put{
				TableName:                aws.String(st.table),
				Item:                     item,
				ConditionExpression:      aws.String("attribute_not_exists(#pk)"),
				ExpressionAttributeNames: names,
			}},
			{Put: &types.Put{
				TableName:                           aws.String(st.table),
				Item:                                record,
				ConditionExpression:                 aws.String("attribute_not_exists(#pk) OR #ttl < :now"),
				ExpressionAttributeNames:            map[string]string{"#pk": schema.AttrUserID, "#ttl": schema.AttrTTL},
				ExpressionAttributeValues:           map[string]types.AttributeValue{":now": n(st.now().Unix())},
				ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
			}},
		}}
	}
	const attempts = 10
	for attempt := 0; ; attempt++ {
		_, err := st.db.TransactWriteItems(ctx, input())
		if err == nil {
			return e, true, nil
		}
		var tce *types.TransactionCanceledException
		if !errors.As(err, &tce) {
			return event.Event{}, false, classify("put event with idempotency key", err)
		}
		reasons := tce.CancellationReasons
		if len(reasons) == 2 && aws.ToString(reasons[1].Code) == "ConditionalCheckFailed" {
			orig, err := st.original(ctx, tenant, key, requestHash, reasons[1].Item)
			switch {
			case err == nil:
				return orig, false, nil
			case !errors.Is(err, errRecordGone):
				return event.Event{}, false, err
			case attempt >= attempts:
				return event.Event{}, false, fmt.Errorf("%w: idempotency record keeps changing", event.ErrUnavailable)
			}
		} else if !hasReason(reasons, "TransactionConflict") || attempt >= attempts {
			return event.Event{}, false, classifyCancel("put event with idempotency key", err, reasons)
		}
		if err := st.sleep(ctx, backoff.Delay(retryBase, attempt)); err != nil {
			return event.Event{}, false, classify("put event with idempotency key", err)
		}
	}
}

// AttrEventPartition is the idempotency record's attribute naming the
// partition of its event when that is one of the tenant's shards (absent:
// the tenant's own partition).
const AttrEventPartition = "event_partition"

// eventPartition returns the partition of the event an idempotency record
// of tenant names: its event_partition if it is one of the tenant's
// shards, else the tenant's own.
func eventPartition(tenant string, rec map[string]types.AttributeValue) string {
	pk := getS(rec, AttrEventPartition)
	if t, k := shard.TenantOf(pk); t == tenant && k > 0 {
		return pk
	}
	return tenant
}

var errRecordGone = errors.New("idempotency record vanished")

// original returns the event an idempotency record points to. rec is the
// record from the cancellation reason, or nil to read it.
func (st *Store) original(ctx context.Context, tenant, key, requestHash string, rec map[string]types.AttributeValue) (event.Event, error) {
	if rec == nil {
		out, err := st.db.GetItem(ctx, &dynamodb.GetItemInput{
			TableName:      aws.String(st.table),
			Key:            st.key(IdempotencyPartition(tenant, key), contract.IdempotencySortKey),
			ConsistentRead: aws.Bool(true),
		})
		if err != nil {
			return event.Event{}, classify("read idempotency record", err)
		}
		rec = out.Item
	}
	if rec == nil || getN(rec, schema.AttrTTL) < st.now().Unix() {
		return event.Event{}, errRecordGone
	}
	if getS(rec, contract.AttrRequestHash) != requestHash {
		return event.Event{}, event.ErrIdempotencyMismatch
	}
	out, err := st.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(st.table),
		Key:            st.key(eventPartition(tenant, rec), getS(rec, contract.AttrEventKey)),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return event.Event{}, classify("read original event", err)
	}
	if out.Item == nil {
		return event.Event{}, fmt.Errorf("%w: the event of this idempotency key no longer exists", event.ErrIdempotencyMismatch)
	}
	return item.EventFromItem(out.Item), nil
}

func hasReason(reasons []types.CancellationReason, code string) bool {
	for _, r := range reasons {
		if aws.ToString(r.Code) == code {
			return true
		}
	}
	return false
}

func classifyCancel(op string, err error, reasons []types.CancellationReason) error {
	switch {
	case hasReason(reasons, "ThrottlingError"), hasReason(reasons, "ProvisionedThroughputExceeded"), hasReason(reasons, "TransactionConflict"):
		return fmt.Errorf("%w: %v", event.ErrUnavailable, err)
	case hasReason(reasons, "ValidationError"), hasReason(reasons, "ItemCollectionSizeLimitExceeded"):
		return fmt.Errorf("%w: %v", event.ErrInvalidItem, err)
	}
	return fmt.Errorf("%s: %w", op, err)
}
