package store_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/contract"
	"github.com/triggers-dev/triggers/internal/event"
	"github.com/triggers-dev/triggers/internal/store"
	"github.com/triggers-dev/triggers/schema"
)

// healthWorld is a table with subscriptions whose health the tests record
// at chosen times.
type healthWorld struct {
	t     *testing.T
	table string
	st    *store.Store
}

func newHealthWorld(t *testing.T, ids ...string) healthWorld {
	table := db.CreateTable(t, schema.Events())
	w := healthWorld{t: t, table: table, st: store.New(db.Client, table)}
	for _, id := range ids {
		require.NoError(t, w.st.CreateSubscription(context.Background(), "tenant-a", newSub(id)))
	}
	return w
}

func (w healthWorld) succeeded(id string, at time.Time) {
	w.t.Helper()
	_, err := w.st.SubscriptionSucceeded(context.Background(), "tenant-a", id, "", at)
	require.NoError(w.t, err)
}

func (w healthWorld) failed(id string, at time.Time, disableAfter time.Duration) event.FailureRun {
	w.t.Helper()
	run, err := w.st.SubscriptionFailed(context.Background(), "tenant-a", id, "", at, disableAfter, "r")
	require.NoError(w.t, err)
	return runChecked(w.t, w.st, "tenant-a", id, run)
}

// runChecked checks run.Since, the start of the run of failures the
// failure counted in: the subscription's failing_since as stored, or zero
// when it counted nothing; and returns run without it, for comparing
// the rest.
func runChecked(t *testing.T, st *store.Store, tenant, id string, run event.FailureRun) event.FailureRun {
	t.Helper()
	if run.Consecutive == 0 {
		assert.True(t, run.Since.IsZero(), "a failure that counted nothing counted in no run: since %v", run.Since)
	} else {
		sub, err := st.GetSubscription(context.Background(), tenant, id)
		require.NoError(t, err)
		assert.Equal(t, sub.FailingSince, event.FormatTime(run.Since), "the run's start, as stored")
	}
	run.Since = time.Time{}
	return run
}

func (w healthWorld) get(id string) event.Subscription {
	w.t.Helper()
	sub, err := w.st.GetSubscription(context.Background(), "tenant-a", id)
	require.NoError(w.t, err)
	return sub
}

// raw reads the subscription item as stored.
func (w healthWorld) raw(id string) map[string]types.AttributeValue {
	w.t.Helper()
	out, err := db.Client.GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName: aws.String(w.table), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{
			schema.AttrUserID:           &types.AttributeValueMemberS{Value: contract.SubscriptionPrefix + "tenant-a"},
			schema.AttrTimestampEventID: &types.AttributeValueMemberS{Value: id},
		},
	})
	require.NoError(w.t, err)
	return out.Item
}

// setRaw sets number attributes of the subscription item and removes
// others, as the version before them (or a version not yet updated)
// writes them.
func (w healthWorld) setRaw(id string, set map[string]int64, remove ...string) {
	w.t.Helper()
	names, values := map[string]string{}, map[string]types.AttributeValue{}
	expr, i := "", 0
	for a, v := range set {
		i++
		k := strconv.Itoa(i)
		names["#a"+k], values[":v"+k] = a, &types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
		if expr == "" {
			expr = "SET "
		} else {
			expr += ", "
		}
		expr += "#a" + k + " = :v" + k
	}
	for j, a := range remove {
		k := "r" + strconv.Itoa(j)
		names["#"+k] = a
		if j == 0 {
			expr += " REMOVE "
		} else {
			expr += ", "
		}
		expr += "#" + k
	}
	in := &dynamodb.UpdateItemInput{
		TableName: aws.String(w.table),
		Key: map[string]types.AttributeValue{
			schema.AttrUserID:           &types.AttributeValueMemberS{Value: contract.SubscriptionPrefix + "tenant-a"},
			schema.AttrTimestampEventID: &types.AttributeValueMemberS{Value: id},
		},
		UpdateExpression: aws.String(expr), ExpressionAttributeNames: names,
	}
	if len(values) > 0 {
		in.ExpressionAttributeValues = values
	}
	_, err := db.Client.UpdateItem(context.Background(), in)
	require.NoError(w.t, err)
}

// A success and a failure within the same second are ordered by their
// attempts' times (to the microsecond, as event.FormatTime records them),
// whichever order their queue messages are handled in. Before, both were
// stored in whole seconds: a failure 0.6 s after a success was taken as
// older news (no run, not counted by the breaker), and a success handled
// late ended the run of failures that began after it in its second.
func TestSubscriptionHealthWithinASecond(t *testing.T) {
	w := newHealthWorld(t, "sub_a", "sub_b", "sub_c", "sub_d", "sub_e", "sub_f")
	sec := time.Unix(1_900_000_000, 0)
	ms := func(n int) time.Time { return sec.Add(time.Duration(n) * time.Millisecond) }

	// A success at .200, then a failure at .800: the failure starts a run
	// and counts for the breaker.
	w.succeeded("sub_a", ms(200))
	assert.Equal(t, event.FailureRun{Consecutive: 1}, w.failed("sub_a", ms(800), time.Hour), "a failure after the latest success")
	assert.Equal(t, event.FormatTime(ms(800)), w.get("sub_a").FailingSince, "the run starts at the failure, to the microsecond")
	assert.Equal(t, event.FailureRun{Consecutive: 2}, w.failed("sub_a", ms(900), time.Hour))
	assert.Equal(t, 2, w.get("sub_a").ConsecutiveFailures)

	// The same two handled the other way round: the late success is older
	// than the run, which it keeps (with its count); it is remembered.
	assert.Equal(t, event.FailureRun{Consecutive: 1}, w.failed("sub_b", ms(800), time.Hour))
	assert.Equal(t, event.FailureRun{Consecutive: 2}, w.failed("sub_b", ms(900), time.Hour))
	w.succeeded("sub_b", ms(200))
	sub := w.get("sub_b")
	assert.Equal(t, event.FormatTime(ms(800)), sub.FailingSince, "a success older than the run keeps it")
	assert.Equal(t, 2, sub.ConsecutiveFailures, "and its count")
	assert.Equal(t, event.FailureRun{Consecutive: 3}, w.failed("sub_b", ms(950), time.Hour))

	// A failure at .200 and a success at .800: the success ends the run,
	// in either order.
	w.failed("sub_c", ms(200), time.Hour)
	w.succeeded("sub_c", ms(800))
	assert.Empty(t, w.get("sub_c").FailingSince, "a later success ends the run")
	assert.Zero(t, w.get("sub_c").ConsecutiveFailures)
	w.succeeded("sub_d", ms(800))
	assert.Equal(t, event.FailureRun{}, w.failed("sub_d", ms(200), 0), "a failure older than the latest success counts nothing, disables nothing")
	assert.Empty(t, w.get("sub_d").FailingSince)

	// The same instant, to the microsecond: the success wins, in either
	// order (as it did for the same second before).
	at := sec.Add(500*time.Millisecond + 7*time.Microsecond)
	w.succeeded("sub_e", at)
	assert.Equal(t, event.FailureRun{}, w.failed("sub_e", at, 0), "a failure at the instant of the latest success is not newer than it")
	assert.Empty(t, w.get("sub_e").FailingSince)
	assert.Equal(t, event.FailureRun{Consecutive: 1}, w.failed("sub_e", at.Add(time.Microsecond), time.Hour), "a microsecond later is")
	w.failed("sub_f", at, time.Hour)
	w.succeeded("sub_f", at)
	assert.Empty(t, w.get("sub_f").FailingSince, "a success at the instant the run began ends it")
	assert.Zero(t, w.get("sub_f").ConsecutiveFailures)
}

// DisableAfter is counted from the run's first failure to the
// microsecond: before, from the start of its second, so a run that began
// at .800 disabled the subscription up to 0.8 s early.
func TestSubscriptionDisableAfterToTheMicrosecond(t *testing.T) {
	w := newHealthWorld(t, "sub_a")
	const after = time.Hour
	t0 := time.Unix(1_900_000_000, 0).Add(800 * time.Millisecond)
	assert.Equal(t, event.FailureRun{Consecutive: 1}, w.failed("sub_a", t0, after))
	assert.Equal(t, event.FailureRun{Consecutive: 2}, w.failed("sub_a", t0.Add(after-time.Microsecond), after), "a microsecond short of the period")
	assert.False(t, w.get("sub_a").Disabled)
	assert.Equal(t, event.FailureRun{Consecutive: 3, Disabled: true}, w.failed("sub_a", t0.Add(after), after), "the whole period")
	assert.True(t, w.get("sub_a").Disabled)
}

// Items written by the version before hold the run's start and the latest
// success in epoch seconds only (failing_since, last_success): they are
// read and compared by whole seconds, as before, until this version
// records the subscription's health again, to the microsecond from then
// on; it keeps writing the seconds too. A version not yet updated (or
// rolled back), which reads and writes the seconds alone, may still act
// on an item meanwhile: the microseconds it leaves behind do not undo
// what it did.
func TestSubscriptionHealthFromSecondsAttributes(t *testing.T) {
	w := newHealthWorld(t, "sub_a", "sub_b", "sub_c", "sub_d")
	const after = time.Hour
	const sec0 = int64(1_900_000_000)
	sec := time.Unix(sec0, 0)
	ms := func(n int) time.Time { return sec.Add(time.Duration(n) * time.Millisecond) }

	// A run begun before the upgrade goes on from its second, and
	// DisableAfter counts from it.
	w.setRaw("sub_a", map[string]int64{"failing_since": sec0, "last_success": sec0 - 100, "consecutive_failures": 2})
	assert.Equal(t, event.FormatTime(sec), w.get("sub_a").FailingSince)
	assert.Equal(t, event.FailureRun{Consecutive: 3}, w.failed("sub_a", sec.Add(after-time.Microsecond), after), "the run goes on, short of the period")
	assert.Equal(t, event.FormatTime(sec), w.get("sub_a").FailingSince, "the run keeps its start")
	assert.NotContains(t, w.raw("sub_a"), "failing_since_us", "nor is it given another")
	assert.Equal(t, event.FailureRun{Consecutive: 4, Disabled: true}, w.failed("sub_a", sec.Add(after), after), "the whole period since its second")

	// A success in the second such a run began ends it (by whole seconds,
	// as before); from then on its failures and successes are ordered to
	// the microsecond.
	w.setRaw("sub_b", map[string]int64{"failing_since": sec0, "consecutive_failures": 1})
	w.succeeded("sub_b", ms(500))
	sub := w.get("sub_b")
	assert.Empty(t, sub.FailingSince)
	assert.Zero(t, sub.ConsecutiveFailures)
	item := w.raw("sub_b")
	assert.Equal(t, strconv.FormatInt(sec0, 10), attrN(item, "last_success"), "the seconds are still written")
	assert.Equal(t, strconv.FormatInt(ms(500).UnixMicro(), 10), attrN(item, "last_success_us"))
	assert.Equal(t, event.FailureRun{}, w.failed("sub_b", ms(400), after), "older than the success")
	assert.Equal(t, event.FailureRun{Consecutive: 1}, w.failed("sub_b", ms(600), after), "newer, in its second")
	assert.Equal(t, event.FormatTime(ms(600)), w.get("sub_b").FailingSince)
	item = w.raw("sub_b")
	assert.Equal(t, strconv.FormatInt(sec0, 10), attrN(item, "failing_since"), "the seconds are still written")
	assert.Equal(t, strconv.FormatInt(ms(600).UnixMicro(), 10), attrN(item, "failing_since_us"))

	// A success recorded before the upgrade wins over a failure in its
	// second (by whole seconds, as before); a failure in a later second
	// starts a run, which a late success in that second but before it
	// keeps.
	w.setRaw("sub_c", map[string]int64{"last_success": sec0})
	assert.Equal(t, event.FailureRun{}, w.failed("sub_c", ms(500), after), "in the second of the success")
	assert.Empty(t, w.get("sub_c").FailingSince)
	assert.Equal(t, event.FailureRun{Consecutive: 1}, w.failed("sub_c", ms(1200), after))
	w.succeeded("sub_c", ms(1100))
	assert.Equal(t, event.FormatTime(ms(1200)), w.get("sub_c").FailingSince, "a success older than the run keeps it")
	assert.Equal(t, strconv.FormatInt(ms(1100).UnixMicro(), 10), attrN(w.raw("sub_c"), "last_success_us"), "and is remembered")

	// The version before, beside this one: its success at sec0+5 ends the
	// run this one began at .300 (it removes the seconds, not the
	// microseconds) and is seen by its second.
	w.succeeded("sub_d", ms(100))
	w.failed("sub_d", ms(300), after)
	w.setRaw("sub_d", map[string]int64{"last_success": sec0 + 5}, "failing_since", "consecutive_failures")
	assert.Empty(t, w.get("sub_d").FailingSince, "the run it ended is over")
	assert.Equal(t, event.FailureRun{}, w.failed("sub_d", ms(4900), after), "a failure before its success's second")
	assert.Equal(t, event.FailureRun{Consecutive: 1}, w.failed("sub_d", ms(6200), after), "a failure after it starts a new run")
	assert.Equal(t, event.FormatTime(ms(6200)), w.get("sub_d").FailingSince, "at its own time, not the run it ended")
	// It ends that one too and starts another at sec0+8: the microseconds
	// left from .6200 are not that run's start.
	w.setRaw("sub_d", map[string]int64{"last_success": sec0 + 7}, "failing_since", "consecutive_failures")
	w.setRaw("sub_d", map[string]int64{"failing_since": sec0 + 8, "consecutive_failures": 1})
	assert.Equal(t, event.FormatTime(sec.Add(8*time.Second)), w.get("sub_d").FailingSince)
	w.succeeded("sub_d", ms(7500))
	assert.Equal(t, event.FormatTime(sec.Add(8*time.Second)), w.get("sub_d").FailingSince, "a success before the run's second keeps it")
	assert.Equal(t, event.FailureRun{Consecutive: 2}, w.failed("sub_d", sec.Add(8*time.Second+after-time.Microsecond), after))
	assert.Equal(t, event.FailureRun{Consecutive: 3, Disabled: true}, w.failed("sub_d", sec.Add(8*time.Second+after), after), "DisableAfter counts from that run's second")
}
