package contract

import "time"

// EnvWebhookRoundHold bounds how long a started redelivery round holds its
// event's settles (a Go duration, at least MinRoundHold): until its task
// has recorded the round's attempts, the event is not settled from
// attempts that leave the round's subscriptions out. The construct sets it
// on the API and webhook functions from the retry queue (RoundHoldFor).
const EnvWebhookRoundHold = "WEBHOOK_ROUND_HOLD"

// Bounds of a round's hold.
const (
	// DefaultRoundHold is the hold when WEBHOOK_ROUND_HOLD is unset, and
	// the least RoundHoldFor gives: the retry queue's default task
	// lifetime (5 receives of 30 minutes) with room to spare.
	DefaultRoundHold = 6 * time.Hour
	// MinRoundHold is the least WEBHOOK_ROUND_HOLD the functions accept.
	MinRoundHold = time.Hour
)

// RoundHoldFor returns the hold of a round whose task lives on a retry
// queue for at most receives receives of visibility each (then goes to
// the dead-letter queue): that lifetime and an hour, at least
// DefaultRoundHold. A task that waits in a backlog longer than that before
// its first receive outlives the hold.
func RoundHoldFor(receives int, visibility time.Duration) time.Duration {
	return max(DefaultRoundHold, time.Duration(receives)*visibility+time.Hour)
}
