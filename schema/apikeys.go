package schema

// Attribute names of the API-keys table (seed 003, TenantApiKeys).
//
// Deviation from seed 003: the seed keys the table by the API key itself
// (pk = api_key, sk = "meta"). Here the partition key is key_hash, the
// hex SHA-256 of the key, and there is no sort key: a leaked table or
// backup then reveals no usable key, and the constant sort key added
// nothing. key_prefix keeps the first characters of the key so people can
// recognise it.
const (
	AttrKeyHash   = "key_hash"
	AttrKeyPrefix = "key_prefix"
	AttrTenantID  = "tenant_id"
	AttrKeyStatus = "status"
	AttrCreatedAt = "created_at"
	AttrRevokedAt = "revoked_at"
	// AttrRevokedBy is the token of the revocation that revoked the key:
	// the SDK's resend of that write, its answer lost, recognises it as
	// its own (internal/apikey Revoke).
	AttrRevokedBy   = "revoked_by"
	AttrDescription = "description"
	// AttrShards is the number of shards a tenant's new events are
	// written to (absent: 1), AttrReadShards the number its inbox reads
	// (absent: AttrShards); every key of a tenant that is not revoked
	// carries the same values (a revoked one keeps those it had), and so
	// does the tenant's record (key_hash "tenant#<tenant>", which
	// serializes changes of the tenant's keys: internal/apikey).
	AttrShards     = "shards"
	AttrReadShards = "read_shards"
	// AttrShardsPrev and AttrShardsFrom make a growth of the write count
	// two-phase: AttrReadShards covers the new count at once, but before
	// AttrShardsFrom (epoch milliseconds: the change's time plus the
	// authorizer cache TTL and a margin) new events still go to
	// AttrShardsPrev shards (absent: 1), and to AttrShards from then on.
	// Both absent (no growth pending, or a record of an earlier
	// version): AttrShards applies.
	AttrShardsPrev = "shards_prev"
	AttrShardsFrom = "shards_from"
)

// A tenant's record in the API-keys table: key_hash is TenantRecordPrefix
// and the tenant id (a key's hash is hex: the two never meet), with the
// tenant's AttrShards and AttrReadShards, the hashes of its keys
// (AttrTenantKeyHashes, a string set) and a version (AttrTenantVersion)
// that every key creation and sharding change moves on (internal/apikey).
// It has no tenant_id, so TenantIndex never lists it.
const (
	TenantRecordPrefix  = "tenant#"
	AttrTenantKeyHashes = "key_hashes"
	AttrTenantVersion   = "version"
)

// TenantIndex lists a tenant's keys, newest first by created_at.
const TenantIndex = "TenantIndex"

// APIKeys returns the API-keys table: partition key key_hash (S), no sort
// key, no TTL, no stream, and TenantIndex (tenant_id, created_at as epoch
// milliseconds) projecting ALL for listing a tenant's keys. Each call
// returns a fresh value that the caller may modify.
func APIKeys() Table {
	return Table{
		Name:         "apikeys",
		PartitionKey: S(AttrKeyHash),
		GlobalIndexes: []Index{
			{Name: TenantIndex, PartitionKey: S(AttrTenantID), SortKey: Ptr(N(AttrCreatedAt)), Projection: All()},
		},
	}
}
