package contract

import (
	"strconv"
	"strings"
)

// Stored items: the names inside events-table items that more than one
// side reads. The store writes them; the stream consumer and replay tools
// read stream images of them; seed 000 fixes the metadata map's names.
const (
	// MetadataSourceIP, MetadataAPIVersion and MetadataCorrelationID are
	// the keys of an event item's metadata map.
	MetadataSourceIP      = "source_ip"
	MetadataAPIVersion    = "api_version"
	MetadataCorrelationID = "correlation_id"

	// IdempotencyPrefix starts the partition key of idempotency records,
	// "idempotency#<tenant>#<hash of the client key>". Tenant ids never
	// contain KeySeparator, so no tenant partition can start with it.
	IdempotencyPrefix = "idempotency" + KeySeparator
	// IdempotencySortKey is the sort key of every idempotency record.
	IdempotencySortKey = "idempotency"
	// AttrRecordType marks items that are not events; RecordTypeIdempotency
	// is its value on idempotency records.
	AttrRecordType        = "record_type"
	RecordTypeIdempotency = "idempotency"
	// AttrEventKey, AttrRequestHash and AttrCreatedAt are the idempotency
	// record's pointer to its event's sort key, the hash of the request
	// that created it, and its creation time.
	AttrEventKey    = "event_key"
	AttrRequestHash = "request_hash"
	AttrCreatedAt   = "created_at"
)

// Partitions of the other records the events table holds besides events
// and idempotency records (webhook delivery). Like IdempotencyPrefix they
// contain KeySeparator, which no tenant id does.
const (
	// SubscriptionPrefix starts a tenant's subscriptions partition,
	// "subscription#<tenant>"; the sort key is the subscription id.
	SubscriptionPrefix = "subscription" + KeySeparator
	// AttemptPrefix starts an event's attempts partition,
	// "attempt#<tenant>#<event_id>"; the sort key is
	// "<subscription_id>#<attempt, 3 digits>".
	AttemptPrefix = "attempt" + KeySeparator
	// RecordTypeSubscription and RecordTypeAttempt are their record_type.
	RecordTypeSubscription = "subscription"
	RecordTypeAttempt      = "attempt"
	// RecordTypeSubscriptionCount is the record_type of the item counting
	// a tenant's subscriptions (sort key SubscriptionCountKey in the
	// subscriptions partition), which caps them exactly.
	RecordTypeSubscriptionCount = "subscription_count"
	SubscriptionCountKey        = KeySeparator + "count"
	// ParkedPrefix starts the partition of the attempts parked behind one
	// subscription's open circuit, "parked#<tenant>#<subscription_id>";
	// the sort key is "<event_id>#<attempt, 3 digits>".
	ParkedPrefix = "parked" + KeySeparator
	// RecordTypeParked is a parked attempt's record_type.
	RecordTypeParked = "parked"
	// AttemptRefPrefix starts the partition that lists one subscription's
	// attempts, "attemptref#<tenant>#<subscription_id>": an item per
	// attempt, sort key "<event_id>#<attempt, 3 digits>", holding only
	// keys and ttl (the attempt itself stays in its event's attempts
	// partition). Event ids are UUIDv7, so the sort key orders attempts
	// by their event's time.
	AttemptRefPrefix = "attemptref" + KeySeparator
	// RecordTypeAttemptRef is the record_type of such an item.
	RecordTypeAttemptRef = "attempt_ref"
	// RecordTypeRedelivery is the record_type of a redelivery round's
	// marker in the event's attempts partition (sort key
	// "round#<token>"): the round was started.
	RecordTypeRedelivery = "redelivery"
	// SlowLanePrefix starts the partition of a tenant's slow lane,
	// "slowlane#<tenant>": one item (sort key SlowLaneKey, record_type
	// RecordTypeSlowLane) holding the map of the slots taken by requests
	// to the tenant's slow endpoints (holder token -> hold end, epoch
	// milliseconds).
	SlowLanePrefix = "slowlane" + KeySeparator
	// SlowLaneKey is the sort key of a tenant's slow-lane item.
	SlowLaneKey = "lane"
	// RecordTypeSlowLane is the slow-lane item's record_type.
	RecordTypeSlowLane = "slow_lane"
	// LaneWaiterPrefix starts the sort key of a subscription waiting for
	// its turn in its tenant's slow lane, "wait#<subscription_id>", in the
	// lane's partition (record_type RecordTypeLaneWaiter): its wake found
	// the lane full, and the wake that frees slots next hands the turn to
	// the longest waiter. It holds the owner of the subscription's queued
	// wake, how many of its wakes in a row were refused, and a ttl.
	LaneWaiterPrefix = "wait" + KeySeparator
	// RecordTypeLaneWaiter is the record_type of a lane waiter.
	RecordTypeLaneWaiter = "lane_waiter"
)

// IsEventPartition reports whether a partition key (user_id) is a
// tenant's events partition: tenant ids never contain KeySeparator, every
// other record's partition does.
func IsEventPartition(userID string) bool {
	return userID != "" && !strings.Contains(userID, KeySeparator)
}

// KeySeparator joins the parts of composite keys: timestamp#event_id (the
// table's sort key), event_type#timestamp and status#timestamp (the index
// sort keys), and the idempotency partitions.
const KeySeparator = "#"

// Key joins parts into a composite key: Key(ts, id) is "ts#id".
func Key(parts ...string) string { return strings.Join(parts, KeySeparator) }

// MaxShards is the largest number of partitions a sharded tenant's events
// are spread over (docs/sharding.md).
const MaxShards = 32

// ShardSeparator joins a tenant id and a shard number in an events
// partition key. It is not a character of tenant ids, nor KeySeparator.
const ShardSeparator = "~"

// ShardPartition returns the partition key value (user_id) of shard k of
// tenant: the tenant itself for k = 0, else "<tenant>~<k>".
func ShardPartition(tenant string, k int) string {
	if k <= 0 {
		return tenant
	}
	return tenant + ShardSeparator + strconv.Itoa(k)
}

// TenantOfPartition returns the tenant and shard number of an events
// partition key (user_id; the inverse of ShardPartition): the tenant of
// every event of a sharded tenant is found this way, not by reading
// user_id as it is. A key without a shard suffix is shard 0.
func TenantOfPartition(partition string) (tenant string, k int) {
	i := strings.LastIndex(partition, ShardSeparator)
	if i < 0 {
		return partition, 0
	}
	k, err := strconv.Atoi(partition[i+1:])
	if err != nil || k <= 0 || k >= MaxShards || strconv.Itoa(k) != partition[i+1:] {
		return partition, 0
	}
	return partition[:i], k
}
