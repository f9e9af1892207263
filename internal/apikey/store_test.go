package apikey_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/internal/apikey"
	"github.com/triggers-dev/triggers/internal/ddb/ddbtest"
	"github.com/triggers-dev/triggers/schema"
)

var db *ddbtest.Local

func TestMain(m *testing.M) { os.Exit(ddbtest.MainWith(m, &db, ddbtest.Options{NoStreams: true})) }

// The key store on DynamoDB Local: only the exact key authenticates (not a
// key differing in its last character, not its display prefix), only an
// active key of a valid tenant does, and revocation is idempotent.
func TestAuthenticateOnlyTheExactActiveKey(t *testing.T) {
	ctx := context.Background()
	table := db.CreateTable(t, schema.APIKeys())
	keys := apikey.NewStore(db.Client, table)
	key, k, err := keys.Create(ctx, "tenant-a", "ci")
	require.NoError(t, err)
	assert.Equal(t, apikey.Hash(key), k.Hash)
	assert.Equal(t, key[:12], k.Prefix)

	tenant, err := keys.Authenticate(ctx, key)
	require.NoError(t, err)
	assert.Equal(t, "tenant-a", tenant)

	last := key[len(key)-1]
	other := byte('A')
	if last == 'A' {
		other = 'B'
	}
	for name, bad := range map[string]string{
		"last character changed":  key[:len(key)-1] + string(other),
		"first random character":  key[:4] + string(other) + key[5:],
		"display prefix alone":    k.Prefix,
		"key without its last":    key[:len(key)-1],
		"key with one more":       key + "A",
		"hash instead of the key": k.Hash,
	} {
		_, err := keys.Authenticate(ctx, bad)
		assert.ErrorIs(t, err, apikey.ErrUnknown, name)
	}
	_, err = keys.Authenticate(ctx, "")
	assert.ErrorIs(t, err, apikey.ErrMissing)
	_, err = keys.Authenticate(ctx, strings.Repeat("a", 513))
	assert.ErrorIs(t, err, apikey.ErrUnknown)

	// Only hashes are stored: the key appears nowhere in the table (the
	// key's item, and the tenant's record, which lists the key's hash).
	out, err := db.Client.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(table)})
	require.NoError(t, err)
	require.Len(t, out.Items, 2)
	for _, item := range out.Items {
		for name, v := range item {
			switch v := v.(type) {
			case *types.AttributeValueMemberS:
				assert.NotContains(t, v.Value, key[12:], "attribute %s holds the key", name)
			case *types.AttributeValueMemberSS:
				for _, s := range v.Value {
					assert.NotContains(t, s, key[12:], "attribute %s holds the key", name)
				}
			}
		}
	}

	was, err := keys.Revoke(ctx, k.Hash)
	require.NoError(t, err)
	assert.True(t, was)
	_, err = keys.Authenticate(ctx, key)
	assert.ErrorIs(t, err, apikey.ErrRevoked)
	was, err = keys.Revoke(ctx, strings.ToUpper(k.Hash))
	require.NoError(t, err, "revoking again, with the hash in upper case")
	assert.False(t, was)
	_, err = keys.Revoke(ctx, strings.Repeat("0", 64))
	assert.ErrorIs(t, err, apikey.ErrNoSuchKey)
	// Anything but a hash is no key, not a DynamoDB error (a blank hash
	// is an invalid key value there), and never the tenant's record.
	for _, bad := range []string{"", " ", key, k.Hash + "0", schema.TenantRecordPrefix + "tenant-a"} {
		_, err = keys.Revoke(ctx, bad)
		assert.ErrorIs(t, err, apikey.ErrNoSuchKey, "%q", bad)
	}

	listed, err := keys.List(ctx, "tenant-a")
	require.NoError(t, err)
	require.Len(t, listed, 1)
	assert.Equal(t, apikey.StatusRevoked, listed[0].Status)
	assert.False(t, listed[0].RevokedAt.IsZero())
}

// A revocation whose answer DynamoDB lost (the SDK sends it again, and
// the resend finds the key revoked) reports the key as active before:
// the revocation is the caller's. It was reported "already revoked", as
// if someone else had revoked the key first (found by review).
func TestRevokeWithItsAnswerLostIsTheCallersRevocation(t *testing.T) {
	ctx := context.Background()
	table := db.CreateTable(t, schema.APIKeys())
	proxy, client := db.Faulty(t)
	keys := apikey.NewStore(client, table)
	key, k, err := keys.Create(ctx, "tenant-a", "ci")
	require.NoError(t, err)

	before := proxy.Calls("UpdateItem")
	proxy.LoseResponse("UpdateItem", 1)
	was, err := keys.Revoke(ctx, k.Hash)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, proxy.Calls("UpdateItem")-before, 2, "the SDK sent it again") // (a third if the resend outlasted its attempt)
	assert.True(t, was, "active before this revocation")
	_, err = keys.Authenticate(ctx, key)
	assert.ErrorIs(t, err, apikey.ErrRevoked)

	was, err = keys.Revoke(ctx, k.Hash)
	require.NoError(t, err)
	assert.False(t, was, "another revocation finds it revoked")
}

// A stored record whose status is missing or unknown (a "suspended" key
// written by another tool, say), or whose tenant id is invalid, does not
// authenticate: only "active" lets a key in.
func TestOnlyActiveKeysOfValidTenantsAuthenticate(t *testing.T) {
	ctx := context.Background()
	table := db.CreateTable(t, schema.APIKeys())
	keys := apikey.NewStore(db.Client, table)
	put := func(key string, attrs map[string]string) {
		item := map[string]types.AttributeValue{schema.AttrKeyHash: &types.AttributeValueMemberS{Value: apikey.Hash(key)}}
		for k, v := range attrs {
			item[k] = &types.AttributeValueMemberS{Value: v}
		}
		_, err := db.Client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: item})
		require.NoError(t, err)
	}
	put("trg_nostatus", map[string]string{schema.AttrTenantID: "tenant-a"})
	put("trg_suspended", map[string]string{schema.AttrTenantID: "tenant-a", schema.AttrKeyStatus: "suspended"})
	put("trg_activecase", map[string]string{schema.AttrTenantID: "tenant-a", schema.AttrKeyStatus: "Active"})
	put("trg_badtenant", map[string]string{schema.AttrTenantID: "idempotency#x", schema.AttrKeyStatus: apikey.StatusActive})
	put("trg_notenant", map[string]string{schema.AttrKeyStatus: apikey.StatusActive})
	put("trg_good", map[string]string{schema.AttrTenantID: "tenant-a", schema.AttrKeyStatus: apikey.StatusActive})
	for _, k := range []string{"trg_nostatus", "trg_suspended", "trg_activecase", "trg_badtenant", "trg_notenant"} {
		_, err := keys.Authenticate(ctx, k)
		assert.ErrorIs(t, err, apikey.ErrUnknown, k)
	}
	tenant, err := keys.Authenticate(ctx, "trg_good")
	require.NoError(t, err)
	assert.Equal(t, "tenant-a", tenant)

	// Revoking revokes a key item of any other status, or none (it was
	// answered "already revoked" and left as it was); once revoked, a
	// second revocation changes nothing.
	for _, k := range []string{"trg_nostatus", "trg_suspended", "trg_activecase"} {
		revoked, err := keys.Revoke(ctx, apikey.Hash(k))
		require.NoError(t, err, k)
		assert.True(t, revoked, k)
		_, err = keys.Authenticate(ctx, k)
		assert.ErrorIs(t, err, apikey.ErrRevoked, k)
		revoked, err = keys.Revoke(ctx, apikey.Hash(k))
		require.NoError(t, err, k)
		assert.False(t, revoked, "%s: already revoked", k)
	}

	// Keys are looked up up to 512 characters (the longest a request may
	// carry), not beyond.
	long := "trg_" + strings.Repeat("k", 508)
	put(long, map[string]string{schema.AttrTenantID: "tenant-a", schema.AttrKeyStatus: apikey.StatusActive})
	tenant, err = keys.Authenticate(ctx, long)
	require.NoError(t, err, "a stored key of 512 characters")
	assert.Equal(t, "tenant-a", tenant)
	put(long+"k", map[string]string{schema.AttrTenantID: "tenant-a", schema.AttrKeyStatus: apikey.StatusActive})
	_, err = keys.Authenticate(ctx, long+"k")
	assert.ErrorIs(t, err, apikey.ErrUnknown, "a key of 513 characters is not looked up")
}

// List returns one tenant's keys, newest first, with their descriptions,
// or every tenant's with an empty tenant.
func TestListKeys(t *testing.T) {
	ctx := context.Background()
	keys := apikey.NewStore(db.Client, db.CreateTable(t, schema.APIKeys()))
	_, a1, err := keys.Create(ctx, "tenant-a", "ci deploy")
	require.NoError(t, err)
	_, a2, err := keys.Create(ctx, "tenant-a", "")
	require.NoError(t, err)
	_, b1, err := keys.Create(ctx, "tenant-b", "other")
	require.NoError(t, err)

	got, err := keys.List(ctx, "tenant-a")
	require.NoError(t, err)
	byHash := map[string]apikey.Key{}
	for _, k := range got {
		byHash[k.Hash] = k
	}
	assert.Len(t, got, 2, "tenant-a's keys")
	assert.Equal(t, "ci deploy", byHash[a1.Hash].Description)
	assert.Equal(t, "", byHash[a2.Hash].Description)
	assert.NotContains(t, byHash, b1.Hash, "List(tenant-a) returned tenant-b's key")

	all, err := keys.List(ctx, "")
	require.NoError(t, err)
	assert.Len(t, all, 3, "every tenant's keys")

	missing := apikey.NewStore(db.Client, "no-such-table")
	_, err = missing.List(ctx, "")
	assert.ErrorContains(t, err, "list API keys: ")
	_, err = missing.List(ctx, "tenant-a")
	assert.ErrorContains(t, err, "list API keys of tenant-a: ")
}

func TestCreateRefusesInvalidTenants(t *testing.T) {
	keys := apikey.NewStore(db.Client, db.CreateTable(t, schema.APIKeys()))
	for _, tenant := range []string{"", "a#b", "-leading", strings.Repeat("a", 129)} {
		_, _, err := keys.Create(context.Background(), tenant, "")
		assert.ErrorContains(t, err, "invalid", "%q", tenant)
	}
}

// Create refuses a description that is not one line of visible text
// (a character contract.DescriptionRefusal refuses: control characters,
// bidirectional controls, line or paragraph separators, invisible format
// characters; invalid UTF-8; more than MaxDescriptionLen bytes), saying
// why, and writes nothing.
func TestCreateRefusesInvalidDescriptions(t *testing.T) {
	ctx := context.Background()
	keys := apikey.NewStore(db.Client, db.CreateTable(t, schema.APIKeys()))
	for d, why := range map[string]string{
		"a\nb":      "description holds the control character U+000A at character 2: ",
		"a\tb":      "description holds the control character U+0009 at character 2: ",
		"\x1b[31m":  "description holds the control character U+001B at character 1: ",
		"ab\u202Ec": "description holds the bidirectional control character U+202E at character 3: ",
		"a\u2028b":  "description holds the line or paragraph separator U+2028 at character 2: ",
		"a\u200Bb":  "description holds the invisible format character U+200B at character 2: ",
		"\xff":      "description is not valid UTF-8: ",
		strings.Repeat("d", apikey.MaxDescriptionLen+1): "description is 1025 bytes: ",
	} {
		_, _, err := keys.Create(ctx, "tenant-a", d)
		assert.ErrorContains(t, err, why+"use one line of visible text, at most 1024 bytes", "%+.40q", d)
	}
	listed, err := keys.List(ctx, "")
	require.NoError(t, err)
	assert.Empty(t, listed)
	_, _, err = keys.Create(ctx, "tenant-a", strings.Repeat("d", apikey.MaxDescriptionLen))
	assert.NoError(t, err)
}

// laggingDB answers eventually consistent reads of the hashes in fresh
// with no item, as a replica that has not yet seen a key created a moment
// ago does (DynamoDB Local is always consistent), and counts the reads.
type laggingDB struct {
	apikey.DB
	fresh              map[string]bool
	reads, consistents int
}

func (l *laggingDB) GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	l.reads++
	if aws.ToBool(in.ConsistentRead) {
		l.consistents++
	} else if l.fresh[in.Key[schema.AttrKeyHash].(*types.AttributeValueMemberS).Value] {
		return &dynamodb.GetItemOutput{}, nil
	}
	return l.DB.GetItem(ctx, in, optFns...)
}

// A key used right after it was created authenticates although the
// authorizer's eventually consistent read does not see it yet: a miss of a
// key of the generated shape is read again, consistently (before, it was
// a 401, which a pipeline creating a key and using it at once could
// meet). A found key costs one eventually consistent read, and a
// malformed one never a second read.
func TestAKeyJustCreatedAuthenticates(t *testing.T) {
	ctx := context.Background()
	table := db.CreateTable(t, schema.APIKeys())
	key, k, err := apikey.NewStore(db.Client, table).Create(ctx, "tenant-a", "ci")
	require.NoError(t, err)
	lag := &laggingDB{DB: db.Client, fresh: map[string]bool{k.Hash: true}}
	keys := apikey.NewStore(lag, table)

	tenant, err := keys.Authenticate(ctx, key)
	require.NoError(t, err, "a key created a moment ago")
	assert.Equal(t, "tenant-a", tenant)
	assert.Equal(t, 2, lag.reads)
	assert.Equal(t, 1, lag.consistents)

	lag.fresh, lag.reads, lag.consistents = nil, 0, 0
	_, err = keys.Authenticate(ctx, key)
	require.NoError(t, err)
	assert.Equal(t, 1, lag.reads, "a key found at once: one read")
	assert.Equal(t, 0, lag.consistents, "eventually consistent")

	other, err := apikey.Generate()
	require.NoError(t, err)
	lag.reads, lag.consistents = 0, 0
	_, err = keys.Authenticate(ctx, other)
	assert.ErrorIs(t, err, apikey.ErrUnknown, "a well-formed key that does not exist")
	assert.Equal(t, 1, lag.consistents, "refused only after a consistent read")

	lag.reads, lag.consistents = 0, 0
	_, err = keys.Authenticate(ctx, "not-a-key")
	assert.ErrorIs(t, err, apikey.ErrUnknown)
	assert.Equal(t, 1, lag.reads, "a malformed key: one read")
	assert.Equal(t, 0, lag.consistents)
}
