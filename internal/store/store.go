// Package store keeps events in the DynamoDB events table of seed 000.
//
// Items have exactly the seed's shape (user_id, timestamp#event_id,
// event_id, event_type, payload, status, timestamp, ttl, retry_count,
// metadata, event_type#timestamp, status#timestamp); attribute and index
// names come from package schema. Besides events the table holds
// idempotency records in partitions no tenant can own (see
// IdempotencyPartition). Every read hides items whose ttl has passed,
// because DynamoDB deletes expired items up to days late.
package store

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/triggers-dev/triggers/contract"
	"github.com/triggers-dev/triggers/internal/ddberr"
	"github.com/triggers-dev/triggers/internal/event"
	"github.com/triggers-dev/triggers/schema"
)

// API is the part of the DynamoDB client the store uses.
type API interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
	BatchWriteItem(ctx context.Context, in *dynamodb.BatchWriteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error)
	TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error)
}

// Idempotency records live in partition "idempotency#<tenant>#<hash>"
// with sort key "idempotency". Tenant ids never contain '#'
// (event.ValidTenantID), so no tenant partition can start with this prefix.
const (
	IdempotencyPrefix  = contract.IdempotencyPrefix
	idempotencySortKey = contract.IdempotencySortKey
)

// Attributes of idempotency records (besides user_id, timestamp#event_id
// and ttl). Records have no event_type, status#timestamp or
// event_type#timestamp, so they never appear in the indexes.
const (
	AttrRecordType  = contract.AttrRecordType
	AttrEventKey    = contract.AttrEventKey
	AttrRequestHash = contract.AttrRequestHash
	AttrCreatedAt   = contract.AttrCreatedAt

	// RecordTypeIdempotency is the record_type of idempotency records.
	RecordTypeIdempotency = contract.RecordTypeIdempotency
)

// IdempotencyPartition returns the partition key of the idempotency record
// for tenant and client key: the key is hashed, so any client string works.
func IdempotencyPartition(tenant, key string) string {
	sum := sha256.Sum256([]byte(key))
	return IdempotencyPrefix + contract.Key(tenant, base64.RawURLEncoding.EncodeToString(sum[:]))
}

// IsIdempotencyRecord reports whether a table item (a stream image, say)
// is an idempotency record rather than an event.
func IsIdempotencyRecord(item map[string]types.AttributeValue) bool {
	return strings.HasPrefix(getS(item, schema.AttrUserID), IdempotencyPrefix)
}

// Store reads and writes events in one table.
type Store struct {
	db    API
	table string
	now   func() time.Time
	// maxListRounds bounds the Query calls behind one inbox page.
	maxListRounds int
	// sleep waits between retries; tests may shorten it.
	sleep func(context.Context, time.Duration) error
}

// Option configures a Store.
type Option func(*Store)

// WithClock sets the clock used for ttl filters (default time.Now).
func WithClock(now func() time.Time) Option { return func(s *Store) { s.now = now } }

// New returns a store for the events table named table.
func New(db API, table string, opts ...Option) *Store {
	s := &Store{db: db, table: table, now: time.Now, maxListRounds: 5, sleep: sleepCtx}
	for _, o := range opts {
		o(s)
	}
	return s
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func backoff(attempt int) time.Duration {
	base := 10 * time.Millisecond << min(attempt, 5)
	return base/2 + rand.N(base/2+1)
}

// Item returns the table item of event e for tenant, shaped exactly like
// the example item of seed 000.
func Item(tenant string, e event.Event) (map[string]types.AttributeValue, error) {
	return itemFor(tenant, e)
}

// itemFor returns the table item of e for tenant, shaped like seed 000.
func itemFor(tenant string, e event.Event) (map[string]types.AttributeValue, error) {
	payload, err := ToAttributeValue(e.Payload)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", event.ErrInvalidItem, err)
	}
	md := map[string]types.AttributeValue{
		contract.MetadataSourceIP:   s(e.Metadata.SourceIP),
		contract.MetadataAPIVersion: s(e.Metadata.APIVersion),
	}
	if e.Metadata.CorrelationID != "" {
		md[contract.MetadataCorrelationID] = s(e.Metadata.CorrelationID)
	}
	return map[string]types.AttributeValue{
		schema.AttrUserID:           s(tenant),
		schema.AttrTimestampEventID: s(e.SortKey()),
		schema.AttrEventID:          s(e.ID),
		schema.AttrEventType:        s(e.Type),
		schema.AttrPayload:          payload,
		schema.AttrStatus:           s(string(e.Status)),
		schema.AttrTimestamp:        s(e.Timestamp),
		schema.AttrTTL:              n(e.TTL),
		schema.AttrRetryCount:       n(int64(e.RetryCount)),
		schema.AttrMetadata:         &types.AttributeValueMemberM{Value: md},
		schema.AttrEventTypeTS:      s(contract.Key(e.Type, e.Timestamp)),
		schema.AttrStatusTS:         s(contract.Key(string(e.Status), e.Timestamp)),
	}, nil
}

// EventFromItem converts a table item back to an event.
func EventFromItem(item map[string]types.AttributeValue) event.Event {
	e := event.Event{
		ID:         getS(item, schema.AttrEventID),
		Type:       getS(item, schema.AttrEventType),
		Status:     event.Status(getS(item, schema.AttrStatus)),
		Timestamp:  getS(item, schema.AttrTimestamp),
		RetryCount: int(getN(item, schema.AttrRetryCount)),
		TTL:        getN(item, schema.AttrTTL),
	}
	if p, ok := FromAttributeValue(item[schema.AttrPayload]).(map[string]any); ok {
		e.Payload = p
	} else {
		e.Payload = map[string]any{}
	}
	if md, ok := item[schema.AttrMetadata].(*types.AttributeValueMemberM); ok {
		e.Metadata = event.Metadata{
			SourceIP:      getS(md.Value, contract.MetadataSourceIP),
			APIVersion:    getS(md.Value, contract.MetadataAPIVersion),
			CorrelationID: getS(md.Value, contract.MetadataCorrelationID),
		}
	}
	return e
}

func (st *Store) key(tenant, sortKey string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		schema.AttrUserID:           s(tenant),
		schema.AttrTimestampEventID: s(sortKey),
	}
}

// Put stores a new event (PutItem, conditional on the key being new).
func (st *Store) Put(ctx context.Context, tenant string, e event.Event) error {
	item, err := itemFor(tenant, e)
	if err != nil {
		return err
	}
	_, err = st.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                           aws.String(st.table),
		Item:                                item,
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

// PutIdempotent stores e unless tenant already used idempotency key key. It
// writes the event and an idempotency record in one transaction, both
// conditional on not existing (an expired record may be replaced). When
// the key was used before, it returns the original event and created
// false; requestHash must then match the original's, or the result is
// event.ErrIdempotencyMismatch. Concurrent requests with one key store one
// event: the losers of a transaction conflict retry and then find the
// record.
func (st *Store) PutIdempotent(ctx context.Context, tenant string, e event.Event, key, requestHash string) (event.Event, bool, error) {
	item, err := itemFor(tenant, e)
	if err != nil {
		return event.Event{}, false, err
	}
	record := map[string]types.AttributeValue{
		schema.AttrUserID:           s(IdempotencyPartition(tenant, key)),
		schema.AttrTimestampEventID: s(idempotencySortKey),
		AttrRecordType:              s(RecordTypeIdempotency),
		schema.AttrEventID:          s(e.ID),
		AttrEventKey:                s(e.SortKey()),
		AttrRequestHash:             s(requestHash),
		AttrCreatedAt:               s(e.Timestamp),
		schema.AttrTTL:              n(e.TTL),
	}
	names := map[string]string{"#pk": schema.AttrUserID}
	in := &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
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
	const attempts = 10
	for attempt := 0; ; attempt++ {
		_, err := st.db.TransactWriteItems(ctx, in)
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
			return event.Event{}, false, classifyCancel(err, reasons)
		}
		if err := st.sleep(ctx, backoff(attempt)); err != nil {
			return event.Event{}, false, classify("put event with idempotency key", err)
		}
	}
}

var errRecordGone = errors.New("idempotency record vanished")

// original returns the event an idempotency record points to. rec is the
// record from the cancellation reason, or nil to read it.
func (st *Store) original(ctx context.Context, tenant, key, requestHash string, rec map[string]types.AttributeValue) (event.Event, error) {
	if rec == nil {
		out, err := st.db.GetItem(ctx, &dynamodb.GetItemInput{
			TableName:      aws.String(st.table),
			Key:            st.key(IdempotencyPartition(tenant, key), idempotencySortKey),
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
	if getS(rec, AttrRequestHash) != requestHash {
		return event.Event{}, event.ErrIdempotencyMismatch
	}
	out, err := st.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(st.table),
		Key:            st.key(tenant, getS(rec, AttrEventKey)),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return event.Event{}, classify("read original event", err)
	}
	if out.Item == nil {
		return event.Event{}, fmt.Errorf("%w: the event of this idempotency key no longer exists", event.ErrIdempotencyMismatch)
	}
	return EventFromItem(out.Item), nil
}

func hasReason(reasons []types.CancellationReason, code string) bool {
	for _, r := range reasons {
		if aws.ToString(r.Code) == code {
			return true
		}
	}
	return false
}

func classifyCancel(err error, reasons []types.CancellationReason) error {
	switch {
	case hasReason(reasons, "ThrottlingError"), hasReason(reasons, "ProvisionedThroughputExceeded"), hasReason(reasons, "TransactionConflict"):
		return fmt.Errorf("%w: %v", event.ErrUnavailable, err)
	case hasReason(reasons, "ValidationError"), hasReason(reasons, "ItemCollectionSizeLimitExceeded"):
		return fmt.Errorf("%w: %v", event.ErrInvalidItem, err)
	}
	return fmt.Errorf("put event with idempotency key: %w", err)
}

// PutBatch stores up to 25 events with BatchWriteItem, retrying
// unprocessed items with backoff. It returns one error per event (nil when
// stored). If DynamoDB rejects the whole batch as invalid (one item too
// large, say), each event is stored alone so the others still succeed.
func (st *Store) PutBatch(ctx context.Context, tenant string, events []event.Event) []error {
	errs := make([]error, len(events))
	if len(events) == 0 {
		return errs
	}
	pending := map[string]int{} // sort key -> index
	var reqs []types.WriteRequest
	for i, e := range events {
		item, err := itemFor(tenant, e)
		if err != nil {
			errs[i] = err
			continue
		}
		pending[e.SortKey()] = i
		reqs = append(reqs, types.WriteRequest{PutRequest: &types.PutRequest{Item: item}})
	}
	const rounds = 6
	for round := 0; len(reqs) > 0; round++ {
		out, err := st.db.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{
			RequestItems: map[string][]types.WriteRequest{st.table: reqs},
		})
		if err != nil {
			err = classify("batch write events", err)
			if errors.Is(err, event.ErrInvalidItem) {
				for _, i := range pending {
					errs[i] = st.Put(ctx, tenant, events[i])
				}
				return errs
			}
			for _, i := range pending {
				errs[i] = err
			}
			return errs
		}
		// Everything not returned as unprocessed is stored.
		reqs = out.UnprocessedItems[st.table]
		left := make(map[string]int, len(reqs))
		for _, r := range reqs {
			if r.PutRequest == nil {
				continue
			}
			k := getS(r.PutRequest.Item, schema.AttrTimestampEventID)
			left[k] = pending[k]
		}
		pending = left
		if len(reqs) == 0 {
			break
		}
		if round+1 >= rounds {
			for _, i := range pending {
				errs[i] = fmt.Errorf("%w: item still unprocessed after %d BatchWriteItem rounds", event.ErrUnavailable, rounds)
			}
			break
		}
		if err := st.sleep(ctx, backoff(round+1)); err != nil {
			for _, i := range pending {
				errs[i] = fmt.Errorf("%w: %v", event.ErrUnavailable, err)
			}
			break
		}
	}
	return errs
}

// Get returns the tenant's event with id: one strongly consistent GetItem
// on the key derived from the id (event.SortKeyForID). A malformed id, a
// missing event, another tenant's event and an expired event are all
// event.ErrNotFound.
func (st *Store) Get(ctx context.Context, tenant, id string) (event.Event, error) {
	sk, err := event.SortKeyForID(id)
	if err != nil {
		return event.Event{}, event.ErrNotFound
	}
	out, err := st.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(st.table),
		Key:            st.key(tenant, sk),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return event.Event{}, classify("get event", err)
	}
	if out.Item == nil {
		return event.Event{}, event.ErrNotFound
	}
	e := EventFromItem(out.Item)
	if e.Expired(st.now()) {
		return event.Event{}, event.ErrNotFound
	}
	return e, nil
}

// Transition moves the tenant's event id to status to, provided its
// current status is one of from. One UpdateItem whose condition checks the
// current status (and that the event exists and has not expired), so
// concurrent updates cannot both succeed from the same state. status and
// status#timestamp change together; moving to retrying increments
// retry_count. Errors: event.ErrNotFound, or *event.TransitionError with
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

// Query is one inbox query.
type Query struct {
	Tenant string
	// Status filters by status; empty means all.
	Status event.Status
	// EventType filters by type; empty means all.
	EventType string
	Ascending bool
	// Limit is the page size (1-100).
	Limit int
	// After continues after this position (from a previous Page.Next).
	After *Position
}

// Position is where a page ended: the table sort key and, for index
// queries, the index sort key of the last evaluated item.
type Position struct {
	SortKey  string `json:"s"`
	IndexKey string `json:"i,omitempty"`
}

// Page is one page of events.
type Page struct {
	Events []event.Event
	// Next is nil on the last page.
	Next *Position
}

// List returns one inbox page. It queries the key that serves the filter:
// the table (status=all), StatusIndex (a status, begins_with
// "status#"), or EventTypeIndex (an event type, begins_with "type#", with
// a filter on status unless all). Every query has a Limit and a filter
// hiding expired events; short pages caused by filters are topped up with
// at most a few more Query calls.
func (st *Store) List(ctx context.Context, q Query) (Page, error) {
	names := map[string]string{"#pk": schema.AttrUserID, "#ttl": schema.AttrTTL}
	values := map[string]types.AttributeValue{
		":pk":  s(q.Tenant),
		":now": n(st.now().Unix()),
	}
	in := &dynamodb.QueryInput{
		TableName:              aws.String(st.table),
		KeyConditionExpression: aws.String("#pk = :pk"),
		ScanIndexForward:       aws.Bool(q.Ascending),
	}
	filter := "#ttl >= :now"
	indexAttr := ""
	switch {
	case q.EventType != "":
		in.IndexName = aws.String(schema.EventTypeIndex)
		indexAttr = schema.AttrEventTypeTS
		in.KeyConditionExpression = aws.String("#pk = :pk AND begins_with(#ik, :prefix)")
		names["#ik"] = indexAttr
		values[":prefix"] = s(q.EventType + contract.KeySeparator)
		if q.Status != "" {
			filter += " AND #status = :status"
			names["#status"] = schema.AttrStatus
			values[":status"] = s(string(q.Status))
		}
	case q.Status != "":
		in.IndexName = aws.String(schema.StatusIndex)
		indexAttr = schema.AttrStatusTS
		in.KeyConditionExpression = aws.String("#pk = :pk AND begins_with(#ik, :prefix)")
		names["#ik"] = indexAttr
		values[":prefix"] = s(string(q.Status) + contract.KeySeparator)
	}
	in.FilterExpression = aws.String(filter)
	in.ExpressionAttributeNames = names
	in.ExpressionAttributeValues = values
	if q.After != nil {
		in.ExclusiveStartKey = st.key(q.Tenant, q.After.SortKey)
		if indexAttr != "" {
			in.ExclusiveStartKey[indexAttr] = s(q.After.IndexKey)
		}
	}
	limit := q.Limit
	if limit < 1 || limit > event.MaxLimit {
		limit = event.DefaultLimit
	}
	page := Page{Events: make([]event.Event, 0, limit)}
	for round := 0; ; round++ {
		in.Limit = aws.Int32(int32(limit - len(page.Events)))
		out, err := st.db.Query(ctx, in)
		if err != nil {
			return Page{}, classify("query inbox", err)
		}
		for _, item := range out.Items {
			page.Events = append(page.Events, EventFromItem(item))
		}
		if out.LastEvaluatedKey == nil {
			return page, nil
		}
		if len(page.Events) >= limit || round+1 >= st.maxListRounds {
			page.Next = &Position{SortKey: getS(out.LastEvaluatedKey, schema.AttrTimestampEventID)}
			if indexAttr != "" {
				page.Next.IndexKey = getS(out.LastEvaluatedKey, indexAttr)
			}
			return page, nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

// classify wraps DynamoDB errors as event.ErrUnavailable (throttling that
// outlasted the SDK's retries, retry quota exhausted, network failures) or
// event.ErrInvalidItem (DynamoDB rejected the item), else with context.
//
// On the calls that write items the store built from client input
// (PutItem, BatchWriteItem, TransactWriteItems; the SDK names the
// operation in the error), every ValidationException about values blames
// the item (ddberr.InvalidWrite), so no rejected payload becomes a 500;
// elsewhere only the messages ddberr.InvalidItem knows do.
func classify(op string, err error) error {
	if ddberr.Unavailable(err) {
		return fmt.Errorf("%s: %w: %v", op, event.ErrUnavailable, err)
	}
	invalid := ddberr.InvalidItem
	if writesItems(err) {
		invalid = ddberr.InvalidWrite
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
	case "PutItem", "BatchWriteItem", "TransactWriteItems":
		return true
	}
	return false
}
