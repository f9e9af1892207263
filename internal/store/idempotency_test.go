package store_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/contract"
	"github.com/triggers-dev/triggers/internal/ddb/ddbtest"
	"github.com/triggers-dev/triggers/internal/event"
	"github.com/triggers-dev/triggers/internal/store"
	"github.com/triggers-dev/triggers/schema"
)

// conflictingClient returns a client whose TransactWriteItems calls
// (counted in calls) are cancelled by a TransactionConflict on their
// first item while conflicts, counted down, lasts, then reach the engine.
func conflictingClient(calls, conflicts *atomic.Int32) *dynamodb.Client {
	return db.FaultClient(func(op string, _ []byte) *http.Response {
		if op != "TransactWriteItems" {
			return nil
		}
		calls.Add(1)
		if conflicts.Add(-1) >= 0 {
			return cancelled("TransactionConflict", "None")
		}
		return nil
	})
}

// cancelled is DynamoDB's TransactionCanceledException with one
// cancellation reason per transaction item (codes such as "None",
// "ConditionalCheckFailed", "TransactionConflict").
func cancelled(codes ...string) *http.Response {
	reasons := make([]map[string]string, len(codes))
	for i, c := range codes {
		reasons[i] = map[string]string{"Code": c}
	}
	r := ddbtest.AWSJSON(map[string]any{
		"__type":              "com.amazonaws.dynamodb.v20120810#TransactionCanceledException",
		"Message":             "Transaction cancelled, please refer cancellation reasons for specific reasons",
		"CancellationReasons": reasons,
	})
	r.StatusCode = 400
	return r
}

// A key whose record has expired (but that DynamoDB has not deleted yet)
// is free again: the new request stores a new event and the record now
// names it.
func TestExpiredIdempotencyRecordIsReplaced(t *testing.T) {
	ctx := context.Background()
	table := db.CreateTable(t, schema.Events())
	st := store.New(db.Client, table)
	first := newEvent(t, "t", map[string]any{"v": json.Number("1")})
	_, created, err := st.PutIdempotent(ctx, "tenant-a", first, "k", "h1")
	require.NoError(t, err)
	require.True(t, created)

	later := store.New(db.Client, table, store.WithClock(func() time.Time { return time.Unix(first.TTL+1, 0) }))
	second := newEvent(t, "t", map[string]any{"v": json.Number("2")})
	got, created, err := later.PutIdempotent(ctx, "tenant-a", second, "k", "h2")
	require.NoError(t, err, "another request hash is fine once the key expired")
	assert.True(t, created)
	assert.Equal(t, second.ID, got.ID)
	rec := recordOf(t, table, "tenant-a", "k")
	assert.Equal(t, second.ID, attrS(rec, schema.AttrEventID))
	assert.Equal(t, second.SortKey(), attrS(rec, contract.AttrEventKey))
	assert.Equal(t, "h2", attrS(rec, contract.AttrRequestHash))
	assert.Equal(t, second.Timestamp, attrS(rec, contract.AttrCreatedAt))

	// At its ttl second the record still holds.
	atTTL := store.New(db.Client, table, store.WithClock(func() time.Time { return time.Unix(second.TTL, 0) }))
	got, created, err = atTTL.PutIdempotent(ctx, "tenant-a", newEvent(t, "t", map[string]any{}), "k", "h2")
	require.NoError(t, err)
	assert.False(t, created)
	assert.Equal(t, second.ID, got.ID)
}

func recordOf(t *testing.T, table, tenant, key string) map[string]types.AttributeValue {
	t.Helper()
	out, err := db.Client.GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName: aws.String(table), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{
			schema.AttrUserID:           &types.AttributeValueMemberS{Value: store.IdempotencyPartition(tenant, key)},
			schema.AttrTimestampEventID: &types.AttributeValueMemberS{Value: "idempotency"},
		},
	})
	require.NoError(t, err)
	require.NotNil(t, out.Item)
	return out.Item
}

// A repeat returns the original event as it is now (its status included),
// read from the table; when that event is gone the key cannot be reused
// for something else: the answer is the mismatch error, saying why.
func TestIdempotentRepeatReturnsTheOriginal(t *testing.T) {
	ctx := context.Background()
	table := db.CreateTable(t, schema.Events())
	st := store.New(db.Client, table)
	e := newEvent(t, "t", map[string]any{"v": json.Number("1")})
	_, _, err := st.PutIdempotent(ctx, "tenant-a", e, "k", "h")
	require.NoError(t, err)
	_, err = st.Transition(ctx, "tenant-a", e.ID, []event.Status{event.Received}, event.Failed)
	require.NoError(t, err)

	got, created, err := st.PutIdempotent(ctx, "tenant-a", newEvent(t, "t", map[string]any{}), "k", "h")
	require.NoError(t, err)
	assert.False(t, created)
	want := e
	want.Status = event.Failed
	assert.Equal(t, want, got)

	// The same key of another tenant is another key.
	other := newEvent(t, "t", map[string]any{})
	got, created, err = st.PutIdempotent(ctx, "tenant-b", other, "k", "h")
	require.NoError(t, err)
	assert.True(t, created)
	assert.Equal(t, other.ID, got.ID)

	_, err = db.Client.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(table), Key: map[string]types.AttributeValue{
		schema.AttrUserID: &types.AttributeValueMemberS{Value: "tenant-a"}, schema.AttrTimestampEventID: &types.AttributeValueMemberS{Value: e.SortKey()},
	}})
	require.NoError(t, err)
	_, created, err = st.PutIdempotent(ctx, "tenant-a", newEvent(t, "t", map[string]any{}), "k", "h")
	assert.False(t, created)
	require.ErrorIs(t, err, event.ErrIdempotencyMismatch)
	assert.Contains(t, err.Error(), "the event of this idempotency key no longer exists")
}

// Transaction conflicts (another transaction on the same items) are
// retried; when they never stop, the answer is unavailable (503), not a
// 500. A condition failure whose record has vanished by the time it is
// read is retried too.
func TestIdempotentPutRetriesConflicts(t *testing.T) {
	ctx := context.Background()
	table := db.CreateTable(t, schema.Events())
	var calls, conflicts atomic.Int32
	conflicts.Store(3)
	client := conflictingClient(&calls, &conflicts)
	st := store.New(client, table)
	e := newEvent(t, "t", map[string]any{})
	got, created, err := st.PutIdempotent(ctx, "tenant-a", e, "k", "h")
	require.NoError(t, err)
	assert.True(t, created)
	assert.Equal(t, e.ID, got.ID)
	assert.Equal(t, int32(4), calls.Load(), "3 conflicts, then the write")
	assert.Len(t, scan(t, table), 2)

	// Conflicts that never end: 11 attempts, then unavailable.
	calls.Store(0)
	conflicts.Store(1000)
	_, created, err = st.PutIdempotent(ctx, "tenant-a", newEvent(t, "t", map[string]any{}), "k2", "h")
	assert.False(t, created)
	require.ErrorIs(t, err, event.ErrUnavailable)
	assert.Equal(t, int32(11), calls.Load())
	assert.Len(t, scan(t, table), 2, "nothing written")
}

func TestIdempotentPutVanishingRecord(t *testing.T) {
	ctx := context.Background()
	table := db.CreateTable(t, schema.Events())
	var calls, vanish atomic.Int32
	vanish.Store(2)
	client := db.FaultClient(func(op string, _ []byte) *http.Response {
		if op != "TransactWriteItems" {
			return nil
		}
		calls.Add(1)
		if vanish.Add(-1) >= 0 {
			// The record's condition failed, and no record comes back
			// with the reason: the store reads it, finds nothing and
			// tries again.
			return cancelled("None", "ConditionalCheckFailed")
		}
		return nil
	})
	st := store.New(client, table)
	e := newEvent(t, "t", map[string]any{})
	got, created, err := st.PutIdempotent(ctx, "tenant-a", e, "k", "h")
	require.NoError(t, err)
	assert.True(t, created)
	assert.Equal(t, e.ID, got.ID)
	assert.Equal(t, int32(3), calls.Load())

	calls.Store(0)
	vanish.Store(1000)
	_, created, err = st.PutIdempotent(ctx, "tenant-a", newEvent(t, "t", map[string]any{}), "k2", "h")
	assert.False(t, created)
	require.ErrorIs(t, err, event.ErrUnavailable)
	assert.Contains(t, err.Error(), "idempotency record keeps changing")
	assert.Equal(t, int32(11), calls.Load())
}

// Every cancellation reason maps to the error the API answers with.
func TestIdempotentPutCancellationReasons(t *testing.T) {
	ctx := context.Background()
	table := db.CreateTable(t, schema.Events())
	cases := []struct {
		codes []string
		want  error // nil: neither unavailable nor invalid (a 500)
	}{
		{[]string{"ThrottlingError", "None"}, event.ErrUnavailable},
		{[]string{"None", "ProvisionedThroughputExceeded"}, event.ErrUnavailable},
		{[]string{"ValidationError", "None"}, event.ErrInvalidItem},
		{[]string{"ItemCollectionSizeLimitExceeded", "None"}, event.ErrInvalidItem},
		{[]string{"ConditionalCheckFailed", "None"}, nil},
		{[]string{"None", "ConditionalCheckFailed", "None"}, nil},
		{[]string{"SomethingNew", "None"}, nil},
	}
	for _, c := range cases {
		var calls atomic.Int32
		client := db.FaultClient(func(op string, _ []byte) *http.Response {
			if op != "TransactWriteItems" {
				return nil
			}
			calls.Add(1)
			return cancelled(c.codes...)
		})
		st := store.New(client, table)
		_, created, err := st.PutIdempotent(ctx, "tenant-a", newEvent(t, "t", map[string]any{}), "k", "h")
		assert.False(t, created)
		require.Error(t, err, "%v", c.codes)
		assert.Equal(t, int32(1), calls.Load(), "%v: not retried", c.codes)
		for _, e := range []error{event.ErrUnavailable, event.ErrInvalidItem} {
			assert.Equal(t, e == c.want, errorIs(err, e), "%v: %v", c.codes, err)
		}
		if c.want == nil {
			assert.Contains(t, err.Error(), "put event with idempotency key: ", "%v", c.codes)
		}
	}
	// An error that is not a cancellation is classified like any other.
	client := db.FaultClient(func(op string, _ []byte) *http.Response {
		if op == "TransactWriteItems" {
			return ddbtest.AWSError("ResourceNotFoundException", "Requested resource not found")
		}
		return nil
	})
	_, _, err := store.New(client, table).PutIdempotent(ctx, "tenant-a", newEvent(t, "t", map[string]any{}), "k", "h")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "put event with idempotency key: ")
	assert.NotErrorIs(t, err, event.ErrUnavailable)
	assert.Empty(t, scan(t, table))
}

// A condition failure whose reason carries no copy of the record (as
// DynamoDB sends when it does not return old items) is resolved by
// reading the record: the original event comes back without another
// transaction.
func TestIdempotentRepeatReadsTheRecordWhenTheReasonHasNone(t *testing.T) {
	ctx := context.Background()
	table := db.CreateTable(t, schema.Events())
	e := newEvent(t, "t", map[string]any{})
	_, _, err := store.New(db.Client, table).PutIdempotent(ctx, "tenant-a", e, "k", "h")
	require.NoError(t, err)
	var transactions, reads atomic.Int32
	client := db.FaultClient(func(op string, _ []byte) *http.Response {
		switch op {
		case "TransactWriteItems":
			transactions.Add(1)
			return cancelled("None", "ConditionalCheckFailed")
		case "GetItem":
			reads.Add(1)
		}
		return nil
	})
	got, created, err := store.New(client, table).PutIdempotent(ctx, "tenant-a", newEvent(t, "t", map[string]any{}), "k", "h")
	require.NoError(t, err)
	assert.False(t, created)
	assert.Equal(t, e, got)
	assert.Equal(t, int32(1), transactions.Load())
	assert.Equal(t, int32(2), reads.Load(), "the record, then its event")
}

// tryRecorder is the engine's client, seeing each TransactWriteItems
// input as the store hands it over, before the SDK reads it.
type tryRecorder struct {
	*dynamodb.Client
	inputs []*dynamodb.TransactWriteItemsInput
	tokens []*string // each input's ClientRequestToken on entry
}

func (r *tryRecorder) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	r.inputs = append(r.inputs, in)
	r.tokens = append(r.tokens, in.ClientRequestToken)
	return r.Client.TransactWriteItems(ctx, in, optFns...)
}

// Each try of an idempotent put is a request of its own: a new input
// without the previous try's ClientRequestToken (the SDK writes the token
// it generates into the input it is given), a token of its own on the
// wire, and the record's :now read from the clock at that try. The store
// sent the first try's input every time: every retry after a conflict
// carried the first token, which DynamoDB takes for the same request, and
// the first try's :now (found by review).
func TestIdempotentPutRetriesAreNewRequests(t *testing.T) {
	ctx := context.Background()
	table := db.CreateTable(t, schema.Events())
	var conflicts atomic.Int32
	conflicts.Store(3)
	type wire struct {
		Token string `json:"ClientRequestToken"`
		Items []struct {
			Put struct {
				Values map[string]struct{ N string } `json:"ExpressionAttributeValues"`
			}
		} `json:"TransactItems"`
	}
	var sent []wire
	rec := &tryRecorder{Client: db.FaultClient(func(op string, body []byte) *http.Response {
		if op != "TransactWriteItems" {
			return nil
		}
		var w wire
		if err := json.Unmarshal(body, &w); err != nil {
			t.Errorf("request body: %v", err)
		}
		sent = append(sent, w)
		if conflicts.Add(-1) >= 0 {
			return cancelled("TransactionConflict", "None")
		}
		return nil
	})}
	var clock atomic.Int64
	clock.Store(time.Now().Unix())
	st := store.New(rec, table, store.WithClock(func() time.Time { return time.Unix(clock.Add(1), 0) }))
	e := newEvent(t, "t", map[string]any{})
	got, created, err := st.PutIdempotent(ctx, "tenant-a", e, "k", "h")
	require.NoError(t, err)
	require.True(t, created)
	assert.Equal(t, e.ID, got.ID)

	require.Len(t, rec.inputs, 4, "3 conflicts, then the write")
	require.Len(t, sent, 4, "one request on the wire per try: no SDK retry")
	tokens := map[string]bool{}
	var prevNow int64
	for i, in := range rec.inputs {
		assert.Nil(t, rec.tokens[i], "try %d: the input carries no token of an earlier try", i+1)
		for j, earlier := range rec.inputs[:i] {
			assert.False(t, earlier == in, "try %d reuses try %d's input", i+1, j+1)
		}
		assert.NotEmpty(t, sent[i].Token, "try %d: the SDK sends a token", i+1)
		assert.False(t, tokens[sent[i].Token], "try %d sends an earlier try's token %s", i+1, sent[i].Token)
		tokens[sent[i].Token] = true
		require.Len(t, sent[i].Items, 2)
		now, err := strconv.ParseInt(sent[i].Items[1].Put.Values[":now"].N, 10, 64)
		require.NoError(t, err, "try %d: :now", i+1)
		assert.Greater(t, now, prevNow, "try %d: :now is read from the clock again", i+1)
		prevNow = now
	}
	assert.Equal(t, clock.Load(), prevNow, "the last try's :now is the clock's latest reading")
	assert.Len(t, scan(t, table), 2, "the event and its record")
}
