// The inbox of a sharded tenant: every shard queried, pages merged.

package store

import (
	"context"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/triggers-dev/triggers/internal/ddb"
	"github.com/triggers-dev/triggers/internal/event"
	"github.com/triggers-dev/triggers/internal/item"
	"github.com/triggers-dev/triggers/internal/shard"
	"github.com/triggers-dev/triggers/schema"
)

// maxShardQueries bounds the Query calls of one page in flight at once.
const maxShardQueries = 8

// shardCursor is one shard's part of a merged page.
type shardCursor struct {
	partition string
	in        *dynamodb.QueryInput
	// buf holds events read and not yet taken, in the query's order.
	buf []event.Event
	// resume is the shard's entry of the next cursor while buf is not
	// empty: the last event taken from it, else where it started (an id
	// or event.ShardStart), never relative to the moving boundary. last is the sort key of the last item the shard evaluated
	// (its LastEvaluatedKey), "" before its first query.
	resume, last string
	// exhausted: the shard's last query had no LastEvaluatedKey.
	exhausted bool
	// fed: the shard's last query buffered an event (one the filter
	// kept and not ahead of the cursor).
	fed bool
	// tail is the sort key of the last item the shard's queries
	// returned in this page: where an exhausted shard's next page starts.
	tail string
	// skipAhead, when set, is the timestamp of the cursor's last event:
	// events strictly ahead of it are skipped.
	skipAhead string
}

func (c *shardCursor) done() bool { return c.exhausted && len(c.buf) == 0 }

// listSharded returns one inbox page of a tenant with read shards: it
// queries every shard that may hold the next events (in parallel, at
// most maxShardQueries at once; each with about twice its share of the
// page in the first round, firstRoundLimit; after, a shard that ran dry of
// the events its last query gave with the page's remaining limit, one
// whose last query gave none, all filtered out, with its share of that
// remaining limit),
// and merges them in the page's order by sort key (timestamp#event_id).
// An event is taken only when no shard can still hold an earlier one:
// every other shard either has a buffered event after it or has already
// evaluated past its timestamp; otherwise the shards in the way are
// queried again, up to maxListRounds rounds, plus one for each shard the
// first round's limit cut short after it gave events (each may run dry at
// its own point of the merge; asked again for what the page still needs,
// it cannot run dry again but for a filter or DynamoDB's 1 MB page), so
// an unfiltered page is as full as when every shard was asked for the
// whole page, and a filtered one costs its maxListRounds rounds of about
// twice the page's remaining limit each: a filter that empties the shards
// got no extra rounds, nor the whole page from every shard in each (32
// shards took 37 rounds of 32 Queries for one empty page; found by
// review). The next cursor holds each shard's position
// (event.Position.Shards).
func (st *Store) listSharded(ctx context.Context, q event.InboxQuery, read int) (event.Page, error) {
	limit := pageLimit(q)
	var boundary event.Position
	if q.After != nil {
		boundary = event.Position{SortKey: q.After.SortKey, IndexKey: q.After.IndexKey}
	}
	var prefix string
	shards := make([]*shardCursor, read)
	for k := range shards {
		pk := shard.Partition(q.Tenant, k)
		iq := st.inboxQuery(q, pk)
		prefix = iq.indexPrefix
		c := &shardCursor{partition: pk, in: iq.in}
		if q.After != nil && k < len(q.After.Shards) {
			c.resume = q.After.Shards[k]
		}
		switch {
		case c.resume == event.ShardDone:
			c.exhausted = true
		case c.resume == event.ShardStart:
		case c.resume != "":
			sk, _ := event.SortKeyForID(c.resume) // the cursor was checked
			c.in.ExclusiveStartKey = st.startKey(pk, iq.indexAttr, sk, iq.indexPrefix)
		case boundary.SortKey != "":
			// A shard new to the cursor starts after its position.
			c.resume = idOfSortKey(boundary.SortKey)
			c.in.ExclusiveStartKey = st.key(pk, boundary.SortKey)
			if iq.indexAttr != "" {
				c.in.ExclusiveStartKey[iq.indexAttr] = s(boundary.IndexKey)
			}
		default:
			c.resume = event.ShardStart
		}
		if boundary.SortKey != "" {
			// Events strictly ahead of the last one served were written
			// after the pages already served (or were in flight then):
			// listing them now would break the order, so, as in one
			// partition, they are not in this pass.
			c.skipAhead = timestampOfSortKey(boundary.SortKey)
		}
		shards[k] = c
	}
	iq := st.inboxQuery(q, q.Tenant)
	// before reports whether an event with sort key a comes before one
	// with sort key b in the page's order.
	before := func(a, b string) bool {
		if q.Ascending {
			return a < b
		}
		return a > b
	}
	page := event.Page{Events: make([]event.Event, 0, limit)}
	rounds := st.maxListRounds
	budget, full := st.pageBytes, false
	for round := 0; ; round++ {
		var need []*shardCursor
		for _, c := range shards {
			if len(c.buf) == 0 && !c.exhausted && (round == 0 || c.blocks(shards, before)) {
				need = append(need, c)
			}
		}
		remaining := limit - len(page.Events)
		share := firstRoundLimit(remaining, len(need))
		perShard := func(c *shardCursor) int {
			if round > 0 && c.fed {
				return remaining // ran dry of what it gave: the page's rest
			}
			return share
		}
		if err := st.queryShards(ctx, q, iq, need, perShard, before); err != nil {
			return event.Page{}, err
		}
		if round == 0 && share < limit {
			for _, c := range need {
				if !c.exhausted && c.fed {
					rounds++ // cut short by the first round's limit
				}
			}
		}
		for len(page.Events) < limit {
			var best *shardCursor
			for _, c := range shards {
				if len(c.buf) > 0 && (best == nil || before(c.buf[0].SortKey(), best.buf[0].SortKey())) {
					best = c
				}
			}
			if best == nil || blocked(best.buf[0], shards, before) {
				break
			}
			e := best.buf[0]
			if budget -= e.WireSize(); budget < 0 && len(page.Events) > 0 {
				full = true // past Lambda's response limit: e starts the next page
				break
			}
			best.buf = best.buf[1:]
			best.resume = e.ID
			page.Events = append(page.Events, e)
			boundary = event.Position{SortKey: e.SortKey()}
			if iq.indexAttr != "" {
				boundary.IndexKey = prefix + e.Timestamp
			}
		}
		all := true
		for _, c := range shards {
			all = all && c.done()
		}
		if all {
			return page, nil
		}
		if len(page.Events) >= limit || full || round+1 >= rounds {
			next := boundary
			next.Shards = make([]string, read)
			for k, c := range shards {
				switch {
				// A shard read to its end is not done for the pass: an
				// event written to it later (the newest, oldest-first) or
				// entering the view behind the reader (a status view)
				// comes after the last item it returned, as in one
				// partition; marked done ("-"), it was never read again
				// (found by review). The next page queries it again from
				// there: one more small Query per such shard and page.
				case c.done() && c.tail != "":
					next.Shards[k] = idOfSortKey(c.tail)
				case c.done() && c.resume == event.ShardStart && next.SortKey != "":
					// Empty from its start (a shard a growth just added):
					// on from the page's position, as a shard new to the
					// cursor; from its start again, every page re-read
					// the events written there since, all ahead of the
					// reader and skipped, and gave empty pages (found by
					// review).
					next.Shards[k] = idOfSortKey(next.SortKey)
				case c.done() && c.resume != "" && c.resume != event.ShardDone:
					next.Shards[k] = c.resume // read to its end before this page
				case c.done():
					next.Shards[k] = event.ShardDone // a cursor's own "-"
				case len(c.buf) == 0 && c.last != "":
					// Everything the shard evaluated was taken or
					// filtered out: resume after its last evaluated key.
					next.Shards[k] = idOfSortKey(c.last)
				case len(c.buf) > 0 && c.resume == event.ShardStart && next.SortKey != "" && c.buf[0].Timestamp != timestampOfSortKey(next.SortKey):
					// The shard gave the pass nothing yet: its buffered
					// events all come after the page's position, and
					// nothing was before them when it was read. On from
					// that position, as a shard new to the cursor; from
					// its start again, every page re-read the events
					// written there since (newest-first: all ahead of the
					// reader, skipped) and gave empty pages (found by
					// review). Not when its next event has the position's
					// timestamp: an index orders such ties as it likes.
					next.Shards[k] = idOfSortKey(next.SortKey)
				default:
					next.Shards[k] = c.resume
				}
			}
			page.Next = &next
			return page, nil
		}
	}
}

// firstRoundLimit is each shard's Limit in a page's first round, when
// shards shards are queried for a page of limit events: about twice a
// shard's share of the page, as ids spread a tenant's events evenly over its
// shards, so the round reads at most about 2 x limit items, not shards x
// limit. A shard whose share of the page ran short blocks the merge and is
// queried again for what the page still needs (listSharded's later
// rounds, which allow one more round per shard the limit cut), so the
// limit changes how many items and rounds a page takes, not which events
// an unfiltered page lists.
func firstRoundLimit(limit, shards int) int {
	if shards <= 1 {
		return limit
	}
	return min(limit, (2*limit+shards-1)/shards+1)
}

// blocks reports whether shard c, which has nothing buffered and is not
// exhausted, may hold an event before the next one the merge would take.
func (c *shardCursor) blocks(shards []*shardCursor, before func(a, b string) bool) bool {
	var head *event.Event
	for _, o := range shards {
		if len(o.buf) > 0 && (head == nil || before(o.buf[0].SortKey(), head.SortKey())) {
			head = &o.buf[0]
		}
	}
	return head == nil || !aheadOf(*head, c, before)
}

// blocked reports whether some shard with nothing buffered may still hold
// an event before e.
func blocked(e event.Event, shards []*shardCursor, before func(a, b string) bool) bool {
	for _, c := range shards {
		if len(c.buf) == 0 && !c.exhausted && !aheadOf(e, c, before) {
			return true
		}
	}
	return false
}

// aheadOf reports whether e comes strictly before every event shard c has
// not evaluated yet: its timestamp is before that of c's last evaluated
// key. Equal timestamps are not ahead (index keys hold timestamps only,
// so an index orders events of one microsecond as it likes).
func aheadOf(e event.Event, c *shardCursor, before func(a, b string) bool) bool {
	if c.last == "" {
		return false
	}
	return before(e.Timestamp, timestampOfSortKey(c.last))
}

// queryShards runs the next Query of each shard c in need, in parallel (at
// most maxShardQueries at once), with Limit limit(c), and buffers the
// events.
func (st *Store) queryShards(ctx context.Context, q event.InboxQuery, iq inboxQuery, need []*shardCursor, limit func(c *shardCursor) int, before func(a, b string) bool) error {
	if len(need) == 0 {
		return nil
	}
	errs := make([]error, len(need))
	sem := make(chan struct{}, maxShardQueries)
	var wg sync.WaitGroup
	for i, c := range need {
		n := limit(c)
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			errs[i] = st.queryShard(ctx, q, iq, c, n, before)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// queryShard runs shard c's next Query and buffers its events.
func (st *Store) queryShard(ctx context.Context, q event.InboxQuery, iq inboxQuery, c *shardCursor, limit int, before func(a, b string) bool) error {
	c.in.Limit = aws.Int32(int32(max(limit, 1)))
	out, err := st.db.Query(ctx, c.in, ddb.FastQueryDecoding)
	if err != nil {
		return classify("query inbox", err)
	}
	items := out.Items
	if iq.fetch {
		if items, err = st.fetchEvents(ctx, q, c.partition, items); err != nil {
			return err
		}
	}
	if n := len(out.Items); n > 0 {
		c.tail = getS(out.Items[n-1], schema.AttrTimestampEventID)
	}
	c.fed = false
	for _, it := range items {
		e := item.EventFromItem(it)
		if c.skipAhead != "" && before(e.Timestamp, c.skipAhead) {
			continue
		}
		c.buf = append(c.buf, e)
		c.fed = true
	}
	if out.LastEvaluatedKey == nil {
		c.exhausted = true
		return nil
	}
	c.last = getS(out.LastEvaluatedKey, schema.AttrTimestampEventID)
	c.in.ExclusiveStartKey = out.LastEvaluatedKey
	return nil
}

// startKey is the ExclusiveStartKey after the event with sort key sk in
// partition pk, on the table or the index whose key attribute is
// indexAttr (its key: prefix + the event's timestamp).
func (st *Store) startKey(pk, indexAttr, sk, prefix string) map[string]types.AttributeValue {
	k := st.key(pk, sk)
	if indexAttr != "" {
		k[indexAttr] = s(prefix + timestampOfSortKey(sk))
	}
	return k
}

// timestampOfSortKey and idOfSortKey split timestamp#event_id.
func timestampOfSortKey(sk string) string {
	if i := len(sk) - len("00000000-0000-0000-0000-000000000000") - 1; i > 0 {
		return sk[:i]
	}
	return sk
}

func idOfSortKey(sk string) string {
	if i := len(sk) - len("00000000-0000-0000-0000-000000000000"); i > 0 {
		return sk[i:]
	}
	return sk
}
