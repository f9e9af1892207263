// Webhook delivery attempts: one item per attempt number of an event to a
// subscription, in the partition "attempt#<tenant>#<event_id>" (sort key
// "<subscription_id>#<nnn>"), and the redelivery rounds' markers
// ("round#<token>") in the same partition. An attempt is claimed before
// its request is sent (outcome pending, with a lease), then finished with
// its outcome by the claimant only: one number is one attempt, whoever
// handles its queue message and however often.

package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/triggers-dev/triggers/contract"
	"github.com/triggers-dev/triggers/internal/event"
	"github.com/triggers-dev/triggers/schema"
)

// Attributes of an attempt item beyond the seed's names.
const (
	attrOutcome    = "outcome"
	attrLeaseUntil = "lease_until" // epoch milliseconds, while pending
	attrOwner      = "owner"       // the claimant's token (kept once finished: its finisher)
	attrSends      = "sends"
	attrRound      = "round"
	attrFollowUp   = "followup"
	attrDeferrals  = "deferrals" // times put off (ScheduleAttempt)
	// attrScheduledBy is the token of the ScheduleAttempt call that last
	// recorded the attempt: the SDK's retry of that write, whose answer
	// was lost, finds its own write instead of counting a second
	// deferral.
	attrScheduledBy = "sched_by"
)

// roundPrefix starts the sort key of a redelivery round's marker.
const roundPrefix = "round#"

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
	LeaseUntil     int64  `dynamodbav:"lease_until,omitempty"`
	Owner          string `dynamodbav:"owner,omitempty"`
	Sends          int    `dynamodbav:"sends,omitempty"`
	Round          string `dynamodbav:"round,omitempty"`
	FollowUp       string `dynamodbav:"followup,omitempty"`
	URL            string `dynamodbav:"url,omitempty"`
	ProbeCooldown  int64  `dynamodbav:"probe_cooldown,omitempty"` // milliseconds
	Deferrals      int    `dynamodbav:"deferrals,omitempty"`
}

func (it attemptItem) attempt() event.Attempt {
	a := event.Attempt{
		SubscriptionID: it.SubscriptionID, Number: it.Number, Timestamp: it.Timestamp,
		Outcome: it.Outcome, StatusCode: it.StatusCode, LatencyMs: it.LatencyMs,
		Response: it.Response, Error: it.Error, NextAttemptAt: it.NextAttemptAt,
		Round: it.Round, Sends: it.Sends, FollowUp: it.FollowUp, URL: it.URL,
		ProbeCooldown: time.Duration(it.ProbeCooldown) * time.Millisecond,
		Deferrals:     it.Deferrals,
	}
	if it.LeaseUntil > 0 {
		a.LeaseUntil = time.UnixMilli(it.LeaseUntil).UTC()
	}
	return a
}

func decodeAttempt(item map[string]types.AttributeValue) (event.Attempt, error) {
	var it attemptItem
	if err := attributevalue.UnmarshalMap(item, &it); err != nil {
		return event.Attempt{}, fmt.Errorf("decode attempt: %w", err)
	}
	return it.attempt(), nil
}

func attemptPartition(tenant, eventID string) string {
	return contract.AttemptPrefix + contract.Key(tenant, eventID)
}

func attemptSortKey(subscriptionID string, number int) string {
	return contract.Key(subscriptionID, fmt.Sprintf("%03d", number))
}

// ClaimAttempt claims attempt c.Number of the tenant's event eventID to
// c.SubscriptionID: it creates the attempt as pending, or makes a
// scheduled one pending, or takes over a pending attempt whose lease
// ended before c.At (its claimant died), and counts one more send. claimed is false when the attempt exists and may
// not be taken; a then is the attempt as recorded (finished, or pending
// under a live lease). The attempt expires with the event (ttl, epoch
// seconds). The attempt's entry in its subscription's list
// (ListSubscriptionAttempts) is written first, so every attempt has one.
// A claim that finds the attempt pending under c.Owner (the retry of a
// claim whose answer was lost) is claimed. c.Owner must be new for each
// claim.
func (st *Store) ClaimAttempt(ctx context.Context, tenant, eventID string, c event.AttemptClaim, ttl int64) (a event.Attempt, claimed bool, err error) {
	values := map[string]types.AttributeValue{
		":rt": s(contract.RecordTypeAttempt), ":sub": s(c.SubscriptionID), ":n": n(int64(c.Number)),
		":ts": s(event.FormatTime(c.At)), ":pending": s(event.OutcomePending),
		":lease": n(c.LeaseUntil.UnixMilli()), ":now": n(c.At.UnixMilli()), ":owner": s(c.Owner),
		":ttl": n(ttl), ":one": n(1),
	}
	names := map[string]string{
		"#pk": schema.AttrUserID, "#rt": contract.AttrRecordType, "#sub": "subscription_id", "#n": "attempt",
		"#ts": schema.AttrTimestamp, "#o": attrOutcome, "#lease": attrLeaseUntil, "#owner": attrOwner,
		"#ttl": schema.AttrTTL, "#sends": attrSends,
	}
	names["#next"], names["#f"] = "next_attempt_at", attrFollowUp
	values[":scheduled"] = s(event.OutcomeScheduled)
	update := "SET #rt = :rt, #sub = :sub, #n = :n, #ts = :ts, #o = :pending, #lease = :lease, #owner = :owner, #ttl = :ttl REMOVE #next, #f ADD #sends :one"
	if c.Round != "" {
		names["#round"] = attrRound
		values[":round"] = s(c.Round)
		update = strings.Replace(update, " REMOVE", ", #round = if_not_exists(#round, :round) REMOVE", 1)
	}
	if err := st.putAttemptRef(ctx, tenant, eventID, c.SubscriptionID, c.Number, ttl); err != nil {
		return event.Attempt{}, false, err
	}
	out, err := st.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                           aws.String(st.table),
		Key:                                 st.key(attemptPartition(tenant, eventID), attemptSortKey(c.SubscriptionID, c.Number)),
		UpdateExpression:                    aws.String(update),
		ConditionExpression:                 aws.String("attribute_not_exists(#pk) OR #o = :scheduled OR (#o = :pending AND #lease < :now)"),
		ExpressionAttributeNames:            names,
		ExpressionAttributeValues:           values,
		ReturnValues:                        types.ReturnValueAllNew,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) && ccf.Item != nil {
		a, err := decodeAttempt(ccf.Item)
		// The claim is c.Owner's already: the SDK's retry of a claim
		// whose answer was lost. (Refused, the dispatcher left its own
		// claim to lapse and the message to come back: the attempt
		// waited a lease and a visibility timeout.)
		own := err == nil && a.Outcome == event.OutcomePending && getS(ccf.Item, attrOwner) == c.Owner
		return a, own, err
	}
	if err != nil {
		return event.Attempt{}, false, classify("claim attempt", err)
	}
	a, err = decodeAttempt(out.Attributes)
	return a, err == nil, err
}

// FinishAttempt records the outcome of attempt a (its subscription and
// number), claimed by owner: outcome, status, latency, response, error,
// next_attempt_at, the URL the request went to, a probe's cooldown and
// timestamp; the claim's lease ends and owner stays on the attempt. It
// fails with event.ErrLeaseLost unless the attempt is pending under owner
// or already finished by owner with this outcome and timestamp: the
// SDK's retry of a write whose answer was lost finds its own write done
// and succeeds. (It failed the condition, and the dispatcher took the
// outcome for another claimant's: a failed attempt's retry was never
// queued and its event settled failed; found by the crash harness's lost
// answers.)
func (st *Store) FinishAttempt(ctx context.Context, tenant, eventID string, a event.Attempt, owner string) error {
	sets := []string{"#o = :o", "#ts = :ts", "#lat = :lat"}
	names := map[string]string{"#o": attrOutcome, "#ts": schema.AttrTimestamp, "#lat": "latency_ms", "#owner": attrOwner, "#lease": attrLeaseUntil}
	values := map[string]types.AttributeValue{
		":o": s(a.Outcome), ":ts": s(a.Timestamp), ":lat": n(a.LatencyMs),
		":owner": s(owner), ":pending": s(event.OutcomePending),
	}
	opt := func(name, attr string, v types.AttributeValue) {
		sets = append(sets, "#"+name+" = :"+name)
		names["#"+name] = attr
		values[":"+name] = v
	}
	if a.StatusCode != 0 {
		opt("sc", "status_code", n(int64(a.StatusCode)))
	}
	if a.Response != "" {
		opt("resp", "response", s(a.Response))
	}
	if a.Error != "" {
		opt("err", "error", s(a.Error))
	}
	if a.NextAttemptAt != "" {
		opt("next", "next_attempt_at", s(a.NextAttemptAt))
	}
	if a.URL != "" {
		opt("url", "url", s(a.URL))
	}
	if a.ProbeCooldown > 0 {
		opt("probe", "probe_cooldown", n(a.ProbeCooldown.Milliseconds()))
	}
	_, err := st.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(st.table),
		Key:                       st.key(attemptPartition(tenant, eventID), attemptSortKey(a.SubscriptionID, a.Number)),
		UpdateExpression:          aws.String("SET " + strings.Join(sets, ", ") + " REMOVE #lease"),
		ConditionExpression:       aws.String("#owner = :owner AND (#o = :pending OR (#o = :o AND #ts = :ts))"),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: values,
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return event.ErrLeaseLost
	}
	if err != nil {
		return classify("record attempt", err)
	}
	return nil
}

// ScheduleAttempt records attempt a (its subscription, number, round,
// timestamp and NextAttemptAt) as scheduled, not sent: new, or a
// scheduled one moved to a.NextAttemptAt, or a pending one whose claim
// lapsed before a.Timestamp (its claimant died); its task is then to be
// queued again (FollowUp cleared). scheduled is false when the attempt
// exists otherwise (pending under a live claim, or finished); it is then
// returned as recorded. The attempt expires with the event (ttl). Like
// ClaimAttempt it first writes the attempt's entry in its subscription's
// list. Each call that records it counts one more deferral (the
// attempt's Deferrals), once: the write carries the call's token, and the
// SDK's retry of it, its answer lost, finds its own write (counted twice,
// the slow lane's backoff grew a step; found by review).
func (st *Store) ScheduleAttempt(ctx context.Context, tenant, eventID string, a event.Attempt, ttl int64) (cur event.Attempt, scheduled bool, err error) {
	names := map[string]string{
		"#pk": schema.AttrUserID, "#rt": contract.AttrRecordType, "#sub": "subscription_id", "#n": "attempt",
		"#ts": schema.AttrTimestamp, "#o": attrOutcome, "#next": "next_attempt_at", "#ttl": schema.AttrTTL,
		"#f": attrFollowUp, "#lat": "latency_ms", "#dc": attrDeferrals, "#by": attrScheduledBy,
	}
	tok := callToken()
	values := map[string]types.AttributeValue{
		":rt": s(contract.RecordTypeAttempt), ":sub": s(a.SubscriptionID), ":n": n(int64(a.Number)),
		":ts": s(a.Timestamp), ":scheduled": s(event.OutcomeScheduled), ":next": s(a.NextAttemptAt),
		":ttl": n(ttl), ":zero": n(0), ":pending": s(event.OutcomePending), ":one": n(1), ":tok": s(tok),
	}
	at, err := time.Parse(time.RFC3339Nano, a.Timestamp)
	if err != nil {
		return event.Attempt{}, false, fmt.Errorf("schedule attempt: timestamp: %w", err)
	}
	values[":now"] = n(at.UnixMilli())
	names["#lease"], names["#owner"] = attrLeaseUntil, attrOwner
	update := "SET #rt = :rt, #sub = :sub, #n = :n, #ts = :ts, #o = :scheduled, #next = :next, #ttl = :ttl, #lat = :zero, #by = :tok"
	if a.Round != "" {
		names["#round"] = attrRound
		values[":round"] = s(a.Round)
		update += ", #round = if_not_exists(#round, :round)"
	}
	if err := st.putAttemptRef(ctx, tenant, eventID, a.SubscriptionID, a.Number, ttl); err != nil {
		return event.Attempt{}, false, err
	}
	out, err := st.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                           aws.String(st.table),
		Key:                                 st.key(attemptPartition(tenant, eventID), attemptSortKey(a.SubscriptionID, a.Number)),
		UpdateExpression:                    aws.String(update + " REMOVE #f, #lease, #owner ADD #dc :one"),
		ConditionExpression:                 aws.String("attribute_not_exists(#pk) OR (#o = :scheduled AND (attribute_not_exists(#by) OR #by <> :tok)) OR (#o = :pending AND #lease < :now)"),
		ExpressionAttributeNames:            names,
		ExpressionAttributeValues:           values,
		ReturnValues:                        types.ReturnValueAllNew,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) && ccf.Item != nil {
		cur, err := decodeAttempt(ccf.Item)
		// Scheduled by this call: its own write, the answer lost.
		own := cur.Outcome == event.OutcomeScheduled && getS(ccf.Item, attrScheduledBy) == tok
		return cur, own && err == nil, err
	}
	if err != nil {
		return event.Attempt{}, false, classify("schedule attempt", err)
	}
	cur, err = decodeAttempt(out.Attributes)
	return cur, err == nil, err
}

// MarkFollowUp records the follow-up state of the tenant's finished
// attempt (subscriptionID, number): event.FollowUpQueued once the task
// continuing its chain is queued (the next attempt's after a failure),
// event.FollowUpDone once a failure without a next attempt was acted on.
// A finished attempt stays as it is, so the mark needs no condition on
// it; a scheduled attempt's own follow-up is MarkScheduledFollowUp's. An
// attempt that no longer exists (expired with its event) is not an
// error.
func (st *Store) MarkFollowUp(ctx context.Context, tenant, eventID, subscriptionID string, number int, state string) error {
	_, err := st.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(st.table),
		Key:                       st.key(attemptPartition(tenant, eventID), attemptSortKey(subscriptionID, number)),
		UpdateExpression:          aws.String("SET #f = :q"),
		ConditionExpression:       aws.String("attribute_exists(#pk)"),
		ExpressionAttributeNames:  map[string]string{"#f": attrFollowUp, "#pk": schema.AttrUserID},
		ExpressionAttributeValues: map[string]types.AttributeValue{":q": s(state)},
	})
	var ccf *types.ConditionalCheckFailedException
	if err != nil && !errors.As(err, &ccf) {
		return classify("mark attempt follow-up", err)
	}
	return nil
}

// MarkScheduledFollowUp records that the task or the parking of the
// tenant's scheduled attempt (subscriptionID, number) is queued
// (event.FollowUpQueued), provided the attempt is still scheduled as it
// was put off the deferrals-th time (its Deferrals as ScheduleAttempt
// returned it). A mark that comes late, once the attempt was claimed (by
// its wake or its task), finished, or put off again, would say "queued" of
// a follow-up that is not (the failure's retry, the new put-off's task),
// and a copy of a message would then skip it: the retry was lost (found by
// review). Such a mark, or one of an attempt that no longer exists, writes
// nothing and is not an error. deferrals 0 names an attempt scheduled
// before deferrals were counted.
func (st *Store) MarkScheduledFollowUp(ctx context.Context, tenant, eventID, subscriptionID string, number, deferrals int) error {
	cond := "#o = :scheduled AND #dc = :dc"
	values := map[string]types.AttributeValue{":q": s(event.FollowUpQueued), ":scheduled": s(event.OutcomeScheduled), ":dc": n(int64(deferrals))}
	if deferrals == 0 {
		cond = "#o = :scheduled AND attribute_not_exists(#dc)"
		delete(values, ":dc")
	}
	_, err := st.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(st.table),
		Key:                       st.key(attemptPartition(tenant, eventID), attemptSortKey(subscriptionID, number)),
		UpdateExpression:          aws.String("SET #f = :q"),
		ConditionExpression:       aws.String(cond),
		ExpressionAttributeNames:  map[string]string{"#f": attrFollowUp, "#o": attrOutcome, "#dc": attrDeferrals},
		ExpressionAttributeValues: values,
	})
	var ccf *types.ConditionalCheckFailedException
	if err != nil && !errors.As(err, &ccf) {
		return classify("mark scheduled attempt follow-up", err)
	}
	return nil
}

// ListAttempts returns every recorded attempt of the tenant's event,
// pending ones included, ordered by subscription id and attempt number;
// expired ones are hidden.
func (st *Store) ListAttempts(ctx context.Context, tenant, eventID string) ([]event.Attempt, error) {
	out := []event.Attempt{}
	err := st.queryAttemptPartition(ctx, tenant, eventID, func(item map[string]types.AttributeValue) error {
		if getS(item, contract.AttrRecordType) != contract.RecordTypeAttempt {
			return nil
		}
		a, err := decodeAttempt(item)
		if err == nil {
			out = append(out, a)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// SettleAttempts returns what settling the tenant's event id goes by, from
// one read of its attempts' partition: its attempts, as ListAttempts, and
// whether a redelivery round of it is running (started, its attempts not
// all recorded yet: StartRedelivery, FinishRound; for at most the round
// hold, WithRoundHold),
// during which it must not settle.
func (st *Store) SettleAttempts(ctx context.Context, tenant, eventID string) (attempts []event.Attempt, roundRunning bool, err error) {
	attempts = []event.Attempt{}
	err = st.queryAttemptPartition(ctx, tenant, eventID, func(item map[string]types.AttributeValue) error {
		switch getS(item, contract.AttrRecordType) {
		case contract.RecordTypeRedelivery:
			if until := getN(item, attrRoundRunning); until > st.now().Unix() {
				roundRunning = true
			}
		case contract.RecordTypeAttempt:
			a, err := decodeAttempt(item)
			if err != nil {
				return err
			}
			attempts = append(attempts, a)
		}
		return nil
	})
	if err != nil {
		return nil, false, err
	}
	return attempts, roundRunning, nil
}

func (st *Store) queryAttemptPartition(ctx context.Context, tenant, eventID string, each func(map[string]types.AttributeValue) error) error {
	pages := dynamodb.NewQueryPaginator(st.db, &dynamodb.QueryInput{
		TableName:                aws.String(st.table),
		KeyConditionExpression:   aws.String("#pk = :pk"),
		FilterExpression:         aws.String("#ttl >= :now"),
		ExpressionAttributeNames: map[string]string{"#pk": schema.AttrUserID, "#ttl": schema.AttrTTL},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk": s(attemptPartition(tenant, eventID)), ":now": n(st.now().Unix()),
		},
		ConsistentRead: aws.Bool(true),
	})
	for pages.HasMorePages() {
		res, err := pages.NextPage(ctx)
		if err != nil {
			return classify("list attempts", err)
		}
		for _, item := range res.Items {
			if err := each(item); err != nil {
				return err
			}
		}
	}
	return nil
}
