// Package store keeps events in the DynamoDB events table of seed 000.
//
// Items have the seed's shape (user_id, timestamp#event_id, event_id,
// event_type, payload, status, timestamp, ttl, retry_count, metadata,
// event_type#timestamp, status#timestamp), plus origin_region on a
// global table and chg_by once a status was changed through
// TransitionOnce (docs/seed-deviations.md); attribute and index names
// come from package schema. Besides events the table holds
// idempotency records in partitions no tenant can own (see
// IdempotencyPartition). Every read hides items whose ttl has passed,
// because DynamoDB deletes expired items up to days late.
package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/triggers-dev/triggers/contract"
	"github.com/triggers-dev/triggers/internal/backoff"
	"github.com/triggers-dev/triggers/internal/ddb"
	"github.com/triggers-dev/triggers/internal/event"
	"github.com/triggers-dev/triggers/internal/item"
	"github.com/triggers-dev/triggers/internal/shard"
	"github.com/triggers-dev/triggers/schema"
)

// API is the part of the DynamoDB client the store uses.
type API interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
	TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error)
	DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
	BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error)
}

// Store reads and writes events in one table.
type Store struct {
	db    API
	table string
	now   func() time.Time
	// maxListRounds bounds the Query calls behind one inbox page.
	maxListRounds int
	// pageBytes bounds the sum of an inbox page's event.WireSize
	// (event.MaxPageWireBytes).
	pageBytes int
	// roundHold is how long a started redelivery round holds its event's
	// settles (WithRoundHold).
	roundHold time.Duration
	// sleep waits between retries; tests may shorten it.
	sleep func(context.Context, time.Duration) error
	// lean is schema.ProfileLean: items without event_type#timestamp, no
	// status#timestamp once delivered, inbox pages from the index's keys.
	lean bool
	// origin, when set, is written into every new event item
	// (schema.AttrOriginRegion).
	origin string
	// sharded: the table takes write sharding (WithSharding); tenants'
	// shard counts come with each request's context (package shard).
	sharded bool
}

// Option configures a Store.
type Option func(*Store)

// WithProfile sets the events table's profile (default schema.ProfileSeed;
// see schema.EventsFor). It must match the table's indexes: a seed store
// on a lean table fails its event-type queries, a lean store on a seed
// table leaves delivered events in StatusIndex.
func WithProfile(p schema.EventsProfile) Option {
	return func(s *Store) { s.lean = p == schema.ProfileLean }
}

// WithOriginRegion writes region into every new event item as
// schema.AttrOriginRegion, so that the stream consumers of a global table
// deliver each event only in the region that accepted it. Default: no
// origin attribute (a single-region table; the item counts as local
// everywhere).
func WithOriginRegion(region string) Option {
	return func(s *Store) { s.origin = region }
}

// WithSharding turns on write sharding for the table (see package
// shard): a tenant whose context (shard.WithConfig) carries more than one
// write shard has its new events spread over its shards by the shard
// number in their ids, and its inbox reads and merges every read shard.
// Without it every event is in the tenant's own partition, whatever the
// context says.
func WithSharding(on bool) Option {
	return func(s *Store) { s.sharded = on }
}

// New returns a store for the events table named table.
func New(db API, table string, opts ...Option) *Store {
	s := &Store{db: db, table: table, now: time.Now, maxListRounds: 5, pageBytes: event.MaxPageWireBytes, roundHold: contract.DefaultRoundHold, sleep: backoff.Sleep}
	for _, o := range opts {
		o(s)
	}
	return s
}

// retryBase is the first retry delay (see backoff.Delay).
const retryBase = 10 * time.Millisecond

func (st *Store) key(tenant, sortKey string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		schema.AttrUserID:           s(tenant),
		schema.AttrTimestampEventID: s(sortKey),
	}
}

// partitionFor returns the partition key of a new event of tenant with
// id: the shard named in the id (shard.Of) when the table is sharded and
// the context gives the tenant more than one write shard, else the
// tenant's own partition.
func (st *Store) partitionFor(ctx context.Context, tenant, id string) string {
	if !st.sharded {
		return tenant
	}
	if c, ok := shard.FromContext(ctx); ok && c.Write > 1 {
		return shard.Partition(tenant, shard.Of(id))
	}
	return tenant
}

// candidates returns the partitions that may hold the tenant's event id,
// in the order to look (shard.Candidates): only the tenant's own unless
// the table is sharded.
func (st *Store) candidates(ctx context.Context, tenant, id string) []string {
	if !st.sharded {
		return []string{tenant}
	}
	read := 0
	if c, ok := shard.FromContext(ctx); ok {
		read = c.Read
	}
	ks := shard.Candidates(id, read)
	out := make([]string, len(ks))
	for i, k := range ks {
		out[i] = shard.Partition(tenant, k)
	}
	return out
}

// Put stores a new event (PutItem, conditional on the key being new), in
// the partition partitionFor picks.
func (st *Store) Put(ctx context.Context, tenant string, e event.Event) error {
	_, err := st.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                           aws.String(st.table),
		Item:                                st.itemFor(st.partitionFor(ctx, tenant, e.ID), e),
		ConditionExpression:                 aws.String("attribute_not_exists(#pk)"),
		ExpressionAttributeNames:            map[string]string{"#pk": schema.AttrUserID},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) && ccf.Item != nil && getS(ccf.Item, schema.AttrEventID) == e.ID {
		// The key is new (it holds a fresh random event id), so an item
		// already under it with this id is our own write: the SDK retried
		// a PutItem whose first response was lost after it succeeded.
		return nil
	}
	if err != nil {
		return classify("put event", err)
	}
	return nil
}

// Get returns the tenant's event with id: one strongly consistent GetItem
// on the key derived from the id (event.SortKeyForID). A malformed id, a
// missing event, another tenant's event and an expired event are all
// event.ErrNotFound. On a sharded table it reads the shard the id names
// and, if the event is not there, the tenant's own partition
// (candidates): an event written before the tenant was sharded.
func (st *Store) Get(ctx context.Context, tenant, id string) (event.Event, error) {
	sk, err := event.SortKeyForID(id)
	if err != nil {
		return event.Event{}, event.ErrNotFound
	}
	for _, pk := range st.candidates(ctx, tenant, id) {
		out, err := st.db.GetItem(ctx, &dynamodb.GetItemInput{
			TableName:      aws.String(st.table),
			Key:            st.key(pk, sk),
			ConsistentRead: aws.Bool(true),
		})
		if err != nil {
			return event.Event{}, classify("get event", err)
		}
		if out.Item == nil {
			continue
		}
		e := item.EventFromItem(out.Item)
		if e.Expired(st.now()) {
			return event.Event{}, event.ErrNotFound
		}
		return e, nil
	}
	return event.Event{}, event.ErrNotFound
}

// classify wraps DynamoDB errors as event.ErrUnavailable (throttling that
// outlasted the SDK's retries, retry quota exhausted, network failures) or
// event.ErrInvalidItem (DynamoDB rejected the item), else with context.
//
// On the calls that write items the store built from client input
// (PutItem, TransactWriteItems; the SDK names the
// operation in the error), every ValidationException about values blames
// the item (ddb.InvalidWrite), so no rejected payload becomes a 500;
// elsewhere only the messages ddb.InvalidItem knows do.
func classify(op string, err error) error {
	if ddb.Unavailable(err) {
		return fmt.Errorf("%s: %w: %v", op, event.ErrUnavailable, err)
	}
	invalid := ddb.InvalidItem
	if writesItems(err) {
		invalid = ddb.InvalidWrite
	}
	if msg, ok := invalid(err); ok {
		return fmt.Errorf("%s: %w: %s", op, event.ErrInvalidItem, msg)
	}
	return fmt.Errorf("%s: %w", op, err)
}

// writesItems reports whether err comes from a DynamoDB call that writes
// whole items built by the store.
func writesItems(err error) bool {
	var oe *smithy.OperationError
	if !errors.As(err, &oe) {
		return false
	}
	switch oe.Operation() {
	case "PutItem", "TransactWriteItems":
		return true
	}
	return false
}

// transactTries bounds the TransactWriteItems calls of one transact: a
// transaction cancelled by a concurrent one (TransactionConflict) is
// retried with backoff.
const transactTries = 8

// transact runs *items as one TransactWriteItems. When DynamoDB cancels
// it, cancelled sees the reasons first, at every try: handled true ends
// the call with err, or, with a nil err, runs *items again at once
// (cancelled changed them). Otherwise a TransactionConflict is retried
// with backoff and other reasons are classified. At most transactTries
// runs in all.
func (st *Store) transact(ctx context.Context, op string, items *[]types.TransactWriteItem, cancelled func(reasons []types.CancellationReason) (handled bool, err error)) error {
	for try := 1; ; try++ {
		_, err := st.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: *items})
		if err == nil {
			return nil
		}
		var tce *types.TransactionCanceledException
		if !errors.As(err, &tce) {
			return classify(op, err)
		}
		reasons := tce.CancellationReasons
		// The reasons first, at every try: a failed condition on the
		// last one is still its answer (a tenant at the limit, a
		// subscription gone), not a 500 (found by review).
		handled, herr := cancelled(reasons)
		if handled && herr != nil {
			return herr
		}
		switch {
		case try >= transactTries && handled:
			// Changed under it at every try: try again later.
			return fmt.Errorf("%w: %s: %d tries: %v", event.ErrUnavailable, op, try, err)
		case try >= transactTries, !handled && !hasReason(reasons, "TransactionConflict"):
			return classifyCancel(op, err, reasons)
		case handled:
			continue
		}
		if err := st.sleep(ctx, backoff.Delay(retryBase, try)); err != nil {
			return classify(op, err)
		}
	}
}

// failedCheck reports whether reason i of a cancelled transaction is a
// failed condition.
func failedCheck(reasons []types.CancellationReason, i int) bool {
	return len(reasons) > i && aws.ToString(reasons[i].Code) == "ConditionalCheckFailed"
}
