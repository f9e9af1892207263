// Attempt references: every delivery attempt has, besides its item in its
// event's attempts partition, a small item in its subscription's
// "attemptref#<tenant>#<subscription_id>" partition (sort key
// "<event_id>#<nnn>", keys and ttl only). A subscription's attempts are a
// Query on that partition and a BatchGetItem of the attempts it names:
// never a Scan, never a filter over a tenant's partition. The items carry
// no index attributes, so they cost the same in both events-table
// profiles.

package store

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/triggers-dev/triggers/contract"
	"github.com/triggers-dev/triggers/internal/backoff"
	"github.com/triggers-dev/triggers/internal/event"
	"github.com/triggers-dev/triggers/schema"
)

func attemptRefPartition(tenant, subscriptionID string) string {
	return contract.AttemptRefPrefix + contract.Key(tenant, subscriptionID)
}

// attemptRefSortKey is the sort key of attempt number of event eventID in
// its subscription's list: the number as three digits below 1000 ("007"),
// from 1000 as ':' and nine digits (":000001000"). ':' sorts after every
// digit, so the list's order is the numbers' order up to 999,999,999
// attempts (found by review: as "%03d", 1000 sorted between 100 and 101,
// and a newest-first page put attempt 999 before 1000). Numbers below 1000
// keep the key they always had.
func attemptRefSortKey(eventID string, number int) string {
	if number < 1000 {
		return contract.Key(eventID, fmt.Sprintf("%03d", number))
	}
	return contract.Key(eventID, fmt.Sprintf(":%09d", number))
}

// putAttemptRef writes attempt number of event eventID in subscription
// subscriptionID's list. The item is the same whoever writes it, so a
// repeat changes nothing.
func (st *Store) putAttemptRef(ctx context.Context, tenant, eventID, subscriptionID string, number int, ttl int64) error {
	_, err := st.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(st.table),
		Item: map[string]types.AttributeValue{
			schema.AttrUserID:           s(attemptRefPartition(tenant, subscriptionID)),
			schema.AttrTimestampEventID: s(attemptRefSortKey(eventID, number)),
			contract.AttrRecordType:     s(contract.RecordTypeAttemptRef),
			schema.AttrTTL:              n(ttl),
		},
	})
	if err != nil {
		return classify("list attempt under its subscription", err)
	}
	return nil
}

// attemptRef is one entry of a subscription's list.
type attemptRef struct {
	sortKey string
	eventID string
	number  int
}

// attemptKey names one attempt of a subscription: its event and number.
type attemptKey struct {
	eventID string
	number  int
}

func (r attemptRef) key() attemptKey { return attemptKey{r.eventID, r.number} }

// parseAttemptRef reads an entry's sort key: attemptRefSortKey's, or
// "%03d" for any number (an entry of 1000 or more written before
// attemptRefSortKey's ':' form).
func parseAttemptRef(sortKey string) (attemptRef, bool) {
	id, num, ok := strings.Cut(sortKey, contract.KeySeparator)
	if !ok {
		return attemptRef{}, false
	}
	nr, err := strconv.Atoi(strings.TrimPrefix(num, ":"))
	if err != nil || nr < 1 {
		return attemptRef{}, false
	}
	return attemptRef{sortKey: sortKey, eventID: id, number: nr}, true
}

// refRange is a Query of a subscription's list: up to limit entries,
// newest first unless ascending, after the sort key after (exclusive),
// within [from, to] when set. Entries whose ttl has passed are left out.
type refRange struct {
	ascending bool
	after     string
	from, to  string
	limit     int
}

// queryAttemptRefs returns one Query's entries and the sort key to
// continue after ("" at the end).
func (st *Store) queryAttemptRefs(ctx context.Context, tenant, subscriptionID string, r refRange) ([]attemptRef, string, error) {
	cond := "#pk = :pk"
	names := map[string]string{"#pk": schema.AttrUserID, "#ttl": schema.AttrTTL}
	values := map[string]types.AttributeValue{":pk": s(attemptRefPartition(tenant, subscriptionID)), ":now": n(st.now().Unix())}
	if r.from != "" || r.to != "" {
		cond += " AND #sk BETWEEN :from AND :to"
		names["#sk"] = schema.AttrTimestampEventID
		values[":from"], values[":to"] = s(r.from), s(r.to)
	}
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(st.table),
		KeyConditionExpression:    aws.String(cond),
		FilterExpression:          aws.String("#ttl >= :now"),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: values,
		ScanIndexForward:          aws.Bool(r.ascending),
		ConsistentRead:            aws.Bool(true),
		Limit:                     aws.Int32(int32(r.limit)),
	}
	if r.after != "" {
		in.ExclusiveStartKey = st.key(attemptRefPartition(tenant, subscriptionID), r.after)
	}
	out, err := st.db.Query(ctx, in)
	if err != nil {
		return nil, "", classify("list subscription attempts", err)
	}
	refs := make([]attemptRef, 0, len(out.Items))
	for _, it := range out.Items {
		if ref, ok := parseAttemptRef(getS(it, schema.AttrTimestampEventID)); ok {
			refs = append(refs, ref)
		}
	}
	return refs, getS(out.LastEvaluatedKey, schema.AttrTimestampEventID), nil
}

// fetchAttempts reads the attempts refs name (at most 100), with
// strongly consistent BatchGetItem calls, retrying unprocessed keys; an
// attempt that does not exist (its entry was written, its claim failed)
// or has expired is absent from the result.
func (st *Store) fetchAttempts(ctx context.Context, tenant, subscriptionID string, refs []attemptRef) (map[attemptKey]event.Attempt, error) {
	found := make(map[attemptKey]event.Attempt, len(refs))
	if len(refs) == 0 {
		return found, nil
	}
	pending := make([]map[string]types.AttributeValue, 0, len(refs))
	seen := map[attemptKey]bool{}
	for _, r := range refs {
		if !seen[r.key()] {
			seen[r.key()] = true
			pending = append(pending, st.key(attemptPartition(tenant, r.eventID), attemptSortKey(subscriptionID, r.number)))
		}
	}
	now := st.now().Unix()
	for calls := 1; ; calls++ {
		out, err := st.db.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{
			RequestItems: map[string]types.KeysAndAttributes{st.table: {Keys: pending, ConsistentRead: aws.Bool(true)}},
		})
		if err != nil {
			return nil, classify("read subscription attempts", err)
		}
		for _, it := range out.Responses[st.table] {
			if getS(it, contract.AttrRecordType) != contract.RecordTypeAttempt || getN(it, schema.AttrTTL) < now {
				continue
			}
			a, err := decodeAttempt(it)
			if err != nil {
				return nil, err
			}
			eventID := strings.TrimPrefix(getS(it, schema.AttrUserID), attemptPartition(tenant, ""))
			found[attemptKey{eventID, a.Number}] = a
		}
		if pending = out.UnprocessedKeys[st.table].Keys; len(pending) == 0 {
			return found, nil
		}
		if calls >= maxBatchAttempts {
			return nil, fmt.Errorf("read subscription attempts: %w: %d keys still unprocessed after %d BatchGetItem calls", event.ErrUnavailable, len(pending), calls)
		}
		if err := st.sleep(ctx, backoff.Delay(retryBase, calls)); err != nil {
			return nil, fmt.Errorf("read subscription attempts: %w: %v", event.ErrUnavailable, err)
		}
	}
}

// maxAttemptRounds bounds the Query calls behind one page of a
// subscription's attempts filtered by outcome: a page may then hold fewer
// than its limit, with a next position.
const maxAttemptRounds = 4

// ListSubscriptionAttempts returns a page of one subscription's attempts
// (q.Tenant's subscription q.SubscriptionID), newest event first and,
// within an event, latest attempt first; q.Outcome keeps only attempts
// with that outcome. Each page is Query calls on the subscription's list
// (at most maxAttemptRounds) and BatchGetItem calls for the attempts.
func (st *Store) ListSubscriptionAttempts(ctx context.Context, q event.AttemptsQuery) (event.AttemptsPage, error) {
	page := event.AttemptsPage{Attempts: []event.SubscriptionAttempt{}}
	// An attempt from 1000 listed before its entries took the ':' form
	// and claimed again since has two entries: it is shown once.
	listed := map[attemptKey]bool{}
	after := q.After
	for range maxAttemptRounds {
		need := q.Limit - len(page.Attempts)
		refs, next, err := st.queryAttemptRefs(ctx, q.Tenant, q.SubscriptionID, refRange{after: after, limit: need})
		if err != nil {
			return event.AttemptsPage{}, err
		}
		found, err := st.fetchAttempts(ctx, q.Tenant, q.SubscriptionID, refs)
		if err != nil {
			return event.AttemptsPage{}, err
		}
		for _, r := range refs {
			a, ok := found[r.key()]
			if ok && !listed[r.key()] && (q.Outcome == "" || a.Outcome == q.Outcome) {
				listed[r.key()] = true
				page.Attempts = append(page.Attempts, event.SubscriptionAttempt{EventID: r.eventID, Attempt: a})
			}
		}
		if next == "" {
			return page, nil
		}
		after = next
		if len(page.Attempts) >= q.Limit {
			break
		}
	}
	page.Next = after
	return page, nil
}

// SubscriptionEvents returns the ids of the tenant's events that have an
// attempt in subscription subscriptionID's list, with ids at or after from
// and before to (event ids, or bounds from event.IDFloor), oldest first,
// each once: one Query of at most limit entries of the list. next is the
// from that continues after them ("" when the range is done); it is past
// every entry of the last event read, so an event whose entries straddle
// two Queries is returned once. Expired entries are left out.
func (st *Store) SubscriptionEvents(ctx context.Context, tenant, subscriptionID, from, to string, limit int) (ids []string, next string, err error) {
	if from >= to || limit < 1 {
		return nil, "", nil
	}
	refs, last, err := st.queryAttemptRefs(ctx, tenant, subscriptionID, refRange{ascending: true, from: from, to: to, limit: limit})
	if err != nil {
		return nil, "", err
	}
	for _, r := range refs {
		if len(ids) == 0 || ids[len(ids)-1] != r.eventID {
			ids = append(ids, r.eventID)
		}
	}
	if last != "" {
		id, _, _ := strings.Cut(last, contract.KeySeparator)
		// "~" sorts after the separator and every digit: past id's entries,
		// before any later id.
		if next = id + "~"; next >= to {
			next = ""
		}
	}
	return ids, next, nil
}
