package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf16"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/contract"
	"github.com/triggers-dev/triggers/internal/apikey"
	"github.com/triggers-dev/triggers/internal/ddb/ddbtest"
	"github.com/triggers-dev/triggers/internal/dev/kmslocal/kmstest"
	"github.com/triggers-dev/triggers/internal/event"
	"github.com/triggers-dev/triggers/internal/store"
	"github.com/triggers-dev/triggers/internal/webhook"
	"github.com/triggers-dev/triggers/internal/webhook/secretbox"
	"github.com/triggers-dev/triggers/schema"
)

var db *ddbtest.Local

func TestMain(m *testing.M) {
	code := ddbtest.MainWith(m, &db, ddbtest.Options{NoStreams: true})
	kmstest.Stop()
	os.Exit(code)
}

func cli(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	return cliIn(t, "", args...)
}

// cliIn runs the command with stdin as its standard input.
func cliIn(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(context.Background(), append([]string{"-endpoint-url", db.Endpoint}, args...), strings.NewReader(stdin), &out, &errOut, func(string) string { return "" })
	return code, out.String(), errOut.String()
}

func TestKeyLifecycle(t *testing.T) {
	table := ddbtest.TableName("keys-" + t.Name())
	code, out, errOut := cli(t, "-table", table, "create-table")
	require.Equal(t, 0, code, "create-table: %s", errOut)
	assert.Contains(t, out, "created table")
	code, out, _ = cli(t, "-table", table, "create-table")
	require.Equal(t, 0, code)
	assert.Contains(t, out, "exists")

	code, out, errOut = cli(t, "-table", table, "create", "-tenant", "tenant-a", "-description", "ci")
	require.Equal(t, 0, code, "create: %s", errOut)
	assert.Contains(t, errOut, "not shown again")
	key := regexp.MustCompile(`api_key: (trg_\S+)`).FindStringSubmatch(out)
	require.Len(t, key, 2, "create printed no key: %s", out)
	hash := apikey.Hash(key[1])
	assert.Contains(t, out, hash)

	keys := apikey.NewStore(db.Client, table)
	tenant, err := keys.Authenticate(context.Background(), key[1])
	require.NoError(t, err)
	assert.Equal(t, "tenant-a", tenant)

	_, _, _ = cli(t, "-table", table, "create", "-tenant", "tenant-b")
	code, out, _ = cli(t, "-table", table, "list")
	require.Equal(t, 0, code)
	assert.Contains(t, out, hash)
	assert.Contains(t, out, "tenant-b")
	assert.NotContains(t, out, key[1], "list printed a key")

	code, out, _ = cli(t, "-table", table, "list", "-tenant", "tenant-a", "-json")
	require.Equal(t, 0, code)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 1, "%s", out)
	var k map[string]any
	require.NoError(t, json.Unmarshal([]byte(lines[0]), &k))
	assert.Equal(t, hash, k["hash"])
	assert.Equal(t, "active", k["status"])
	assert.Equal(t, "ci", k["description"])
	assert.Equal(t, apikey.DisplayPrefix(key[1]), k["prefix"])

	code, out, errOut = cli(t, "-table", table, "revoke", "-hash", hash)
	require.Equal(t, 0, code)
	assert.Contains(t, out, "revoked "+hash)
	// The operator learns that the key is not refused at once.
	assert.Contains(t, errOut, "up to the authorizer cache TTL")
	assert.Contains(t, errOut, "flush the stage's authorizer cache")
	code, out, _ = cliIn(t, key[1]+"\n", "-table", table, "revoke", "-key-stdin")
	require.Equal(t, 0, code)
	assert.Contains(t, out, "already revoked")
	_, err = keys.Authenticate(context.Background(), key[1])
	assert.ErrorIs(t, err, apikey.ErrRevoked)

	code, _, errOut = cli(t, "-table", table, "revoke", "-hash", strings.Repeat("0", 64))
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "no key")
}

func TestUsageErrors(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{nil, "usage"},
		{[]string{"list"}, "no table"},
		{[]string{"-table", "t", "frobnicate"}, "unknown command"},
		{[]string{"-table", "t", "create"}, "-tenant is required"},
		{[]string{"-table", "t", "revoke"}, "exactly one"},
		{[]string{"-table", "t", "revoke", "-hash", "a", "-key-stdin"}, "exactly one"},
		// The secret never goes in argv: shell history, ps, audit logs.
		{[]string{"-table", "t", "revoke", "-key", "trg_secret"}, "-key-stdin"},
		{[]string{"-table", "t", "revoke", "-key-stdin"}, "no key on standard input"},
		{[]string{"-table", "t", "list", "extra"}, "unexpected arguments"},
		{[]string{"-table", "t", "list", "-tenant", "acme "}, `-tenant "acme " is not a valid tenant id`},
		{[]string{"-table", "t", "shards", "-count", "4"}, "-tenant is required"},
		{[]string{"-table", "t", "shards", "-tenant", "acme"}, "-count 0 is invalid: give the tenant's write shard count, 1 to 32"},
		{[]string{"-table", "t", "shards", "-tenant", "acme", "-count", "33"}, "-count 33 is invalid"},
		{[]string{"-table", "t", "shards", "-tenant", "acme", "-count", "-1"}, "-count -1 is invalid"},
		{[]string{"-table", "t", "shards", "-tenant", "acme", "-count", "x"}, "invalid value"},
		{[]string{"-table", "t", "shards", "-tenant", "acme", "-count", "4", "-authorizer-cache-ttl", "2h"}, "-authorizer-cache-ttl 2h0m0s is invalid"},
		{[]string{"-table", "t", "shards", "-tenant", "acme", "-count", "4", "-authorizer-cache-ttl", "-1s"}, "-authorizer-cache-ttl -1s is invalid"},
	}
	for _, tt := range tests {
		code, _, errOut := cli(t, tt.args...)
		assert.Equal(t, 2, code, "triggers-keys %q", tt.args)
		assert.Contains(t, errOut, tt.want, "triggers-keys %q", tt.args)
	}
	code, _, errOut := cli(t, "-table", ddbtest.TableName("k"), "create", "-tenant", "bad#tenant")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "invalid")
}

// shards: a growth prints its switch time, which is the authorizer cache
// TTL (-authorizer-cache-ttl, default the construct's) plus the margin
// after the change, and the write count until then; a shrink is at once.
func TestShardsGrowthWaitsForTheAuthorizerCache(t *testing.T) {
	table := ddbtest.TableName("keys-" + t.Name())
	code, _, errOut := cli(t, "-table", table, "create-table")
	require.Equal(t, 0, code, "create-table: %s", errOut)
	code, _, errOut = cli(t, "-table", table, "create", "-tenant", "acme")
	require.Equal(t, 0, code, "create: %s", errOut)

	switchTime := func(out string) time.Time {
		t.Helper()
		m := regexp.MustCompile(`from (\S+);`).FindStringSubmatch(out)
		require.Len(t, m, 2, "no switch time in %q", out)
		at, err := time.Parse(time.RFC3339, m[1])
		require.NoError(t, err)
		return at
	}
	// The switch is the command's time plus the wait, printed to the
	// second: between the times before and after the command.
	assertSwitch := func(before, after time.Time, wait time.Duration, out string) {
		t.Helper()
		at := switchTime(out)
		lo, hi := before.Add(wait).Truncate(time.Second), after.Add(wait)
		assert.False(t, at.Before(lo) || at.After(hi), "switch at %s, want between %s and %s", at, lo, hi)
	}
	before := time.Now()
	code, out, errOut := cli(t, "-table", table, "shards", "-tenant", "acme", "-count", "4")
	require.Equal(t, 0, code, "shards: %s", errOut)
	assert.Contains(t, out, "read_shards: 4")
	assert.Contains(t, out, "; 1 until then)")
	assertSwitch(before, time.Now(), contract.DefaultAuthorizerCacheSeconds*time.Second+apikey.ShardSwitchMargin, out)

	before = time.Now()
	code, out, errOut = cli(t, "-table", table, "shards", "-tenant", "acme", "-count", "8", "-authorizer-cache-ttl", "1h")
	require.Equal(t, 0, code, "shards: %s", errOut)
	assertSwitch(before, time.Now(), time.Hour+apikey.ShardSwitchMargin, out)
	assert.Contains(t, out, "read_shards: 8")
	assert.Contains(t, out, "; 1 until then)")

	code, out, errOut = cli(t, "-table", table, "shards", "-tenant", "acme", "-count", "1")
	require.Equal(t, 0, code, "shards: %s", errOut)
	assert.Equal(t, "tenant: acme\nshards: 1 (write)\nread_shards: 8\n", out)
}

// reseal-secrets seals in place the signing secrets stored in plain text,
// in every subscription of every tenant with a key, each so that it opens
// to the same secret with the subscription's own context; sealed secrets,
// their overlaps and other tenants' items stay as they are; a dry run
// changes nothing; a second run finds nothing to seal; no secret is ever
// printed.
func TestResealSecrets(t *testing.T) {
	ctx := context.Background()
	keysTable, events, st, kms, key := resealSetUp(t)
	box, err := secretbox.New(kms.Client, key, secretbox.Options{})
	require.NoError(t, err)

	now := time.Now().UTC()
	plain := map[string]webhook.Secret{}
	sub := func(tenant, id string, secrets ...string) {
		t.Helper()
		require.NoError(t, st.CreateSubscription(ctx, tenant, event.Subscription{
			ID: id, URL: "https://hooks.example.com/" + id, EventTypes: []string{}, CreatedAt: event.FormatTime(now), Secrets: secrets,
		}))
	}
	newPlain := func(name string) string {
		plain[name] = webhook.NewSecret()
		return plain[name].Encode()
	}
	sub("tenant-a", "sub_plain", newPlain("a1"))
	// A plain secret rotated once: sealed new one, plain previous one
	// signing until its overlap ends.
	sub("tenant-a", "sub_mixed", newPlain("a2"))
	sealedNew, err := box.Seal(ctx, "tenant-a", "sub_mixed", webhook.NewSecret())
	require.NoError(t, err)
	overlap := now.Add(24 * time.Hour).Truncate(time.Second)
	_, err = st.RotateSecret(ctx, "tenant-a", "sub_mixed", sealedNew, now, overlap)
	require.NoError(t, err)
	sealedB, err := box.Seal(ctx, "tenant-b", "sub_sealed", webhook.NewSecret())
	require.NoError(t, err)
	sub("tenant-b", "sub_sealed", sealedB)
	sub("tenant-nokey", "sub_orphan", newPlain("c1"))

	args := []string{"-table", keysTable, "reseal-secrets", "-events-table", events, "-secrets-key", key, "-kms-endpoint-url", kms.Endpoint}
	code, out, errOut := cli(t, append(args, "-dry-run")...)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "2 tenants, 3 subscriptions, 2 to seal, 0 changed meanwhile, 0 with an invalid secret")
	got, err := st.GetSubscription(ctx, "tenant-a", "sub_plain")
	require.NoError(t, err)
	assert.Equal(t, []string{plain["a1"].Encode()}, got.Secrets, "a dry run changes nothing")

	code, out, errOut = cli(t, args...)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "2 tenants, 3 subscriptions, 2 sealed, 0 changed meanwhile, 0 with an invalid secret")
	assert.Contains(t, out, "sealed 1 plain-text secret(s): tenant tenant-a subscription sub_plain")
	assert.Contains(t, out, "sealed 1 plain-text secret(s): tenant tenant-a subscription sub_mixed")
	assert.NotContains(t, out+errOut, webhook.SecretPrefix, "no secret printed")

	opens := func(tenant, id, stored string, want webhook.Secret) {
		t.Helper()
		require.True(t, strings.HasPrefix(stored, secretbox.Prefix), "%s/%s: sealed: %.12s", tenant, id, stored)
		sec, err := box.Open(ctx, tenant, id, stored)
		require.NoError(t, err)
		assert.Equal(t, want, sec, "%s/%s opens to the same secret", tenant, id)
	}
	got, err = st.GetSubscription(ctx, "tenant-a", "sub_plain")
	require.NoError(t, err)
	require.Len(t, got.Secrets, 1)
	opens("tenant-a", "sub_plain", got.Secrets[0], plain["a1"])
	got, err = st.GetSubscription(ctx, "tenant-a", "sub_mixed")
	require.NoError(t, err)
	require.Len(t, got.Secrets, 2)
	assert.Equal(t, sealedNew, got.Secrets[0], "a sealed secret is left as it is")
	opens("tenant-a", "sub_mixed", got.Secrets[1], plain["a2"])
	require.Len(t, got.PreviousExpires, 1)
	assert.True(t, overlap.Equal(got.PreviousExpires[0]), "the overlap stays: %s", got.PreviousExpires[0])
	got, err = st.GetSubscription(ctx, "tenant-b", "sub_sealed")
	require.NoError(t, err)
	assert.Equal(t, []string{sealedB}, got.Secrets)
	got, err = st.GetSubscription(ctx, "tenant-nokey", "sub_orphan")
	require.NoError(t, err)
	assert.Equal(t, []string{plain["c1"].Encode()}, got.Secrets, "a tenant without a key is not listed")

	code, out, errOut = cli(t, args...)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "2 tenants, 3 subscriptions, 0 sealed, 0 changed meanwhile, 0 with an invalid secret", "nothing left to seal")

	// -scan-events finds the tenant without a key by its subscriptions
	// (found by review: its plain secret was left, and the summary did
	// not name it).
	code, out, errOut = cli(t, append(args, "-scan-events")...)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "3 tenants, 4 subscriptions, 1 sealed, 0 changed meanwhile, 0 with an invalid secret")
	assert.Contains(t, out, "sealed 1 plain-text secret(s): tenant tenant-nokey subscription sub_orphan")
	got, err = st.GetSubscription(ctx, "tenant-nokey", "sub_orphan")
	require.NoError(t, err)
	require.Len(t, got.Secrets, 1)
	opens("tenant-nokey", "sub_orphan", got.Secrets[0], plain["c1"])

	code, _, errOut = cli(t, "-table", keysTable, "reseal-secrets", "-events-table", events)
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "-secrets-key are required")
}

// A plain-text value that is not a valid secret (a previous secret the
// webhook function skips) is reported by subscription and place, never by
// value, and left as it is; the run goes on to the other subscriptions and
// tenants, and ends with status 1. The dry run reports it too.
func TestResealSecretsGoesOnPastAnInvalidSecret(t *testing.T) {
	ctx := context.Background()
	keysTable, events, st, kms, key := resealSetUp(t)
	now := event.FormatTime(time.Now())
	good := webhook.NewSecret()
	require.NoError(t, st.CreateSubscription(ctx, "tenant-a", event.Subscription{ID: "sub_bad", URL: "https://hooks.example.com/a", EventTypes: []string{}, CreatedAt: now,
		Secrets: []string{webhook.NewSecret().Encode(), "whsec_AAAA"}}))
	require.NoError(t, st.CreateSubscription(ctx, "tenant-b", event.Subscription{ID: "sub_good", URL: "https://hooks.example.com/b", EventTypes: []string{}, CreatedAt: now,
		Secrets: []string{good.Encode()}}))

	args := []string{"-table", keysTable, "reseal-secrets", "-events-table", events, "-secrets-key", key, "-kms-endpoint-url", kms.Endpoint}
	code, out, errOut := cli(t, append(args, "-dry-run")...)
	assert.Equal(t, 1, code)
	assert.Contains(t, out, "left as is, tenant tenant-a subscription sub_bad: secret 2 is not a valid secret")
	assert.Contains(t, out, "2 tenants, 2 subscriptions, 1 to seal, 0 changed meanwhile, 1 with an invalid secret")

	code, out, errOut = cli(t, args...)
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "1 subscriptions hold a plain-text value that is not a valid secret")
	assert.Contains(t, out, "2 tenants, 2 subscriptions, 1 sealed, 0 changed meanwhile, 1 with an invalid secret")
	assert.NotContains(t, out+errOut, "whsec_", "no value printed")
	got, err := st.GetSubscription(ctx, "tenant-b", "sub_good")
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(got.Secrets[0], secretbox.Prefix), "the run went on to tenant-b")
	box, err := secretbox.New(kms.Client, key, secretbox.Options{})
	require.NoError(t, err)
	sec, err := box.Open(ctx, "tenant-b", "sub_good", got.Secrets[0])
	require.NoError(t, err)
	assert.Equal(t, good, sec)
	bad, err := st.GetSubscription(ctx, "tenant-a", "sub_bad")
	require.NoError(t, err)
	assert.Equal(t, "whsec_AAAA", bad.Secrets[1], "left as is")
}

// resealSetUp makes an API-keys table with keys for tenant-a and tenant-b,
// an events table (and its store) and a KMS key of the test's own.
func resealSetUp(t *testing.T) (keysTable, events string, st *store.Store, kms *kmstest.Local, key string) {
	t.Helper()
	keysTable = ddbtest.TableName("keys-" + t.Name())
	code, _, errOut := cli(t, "-table", keysTable, "create-table")
	require.Equal(t, 0, code, errOut)
	for _, tenant := range []string{"tenant-a", "tenant-b"} {
		code, _, errOut = cli(t, "-table", keysTable, "create", "-tenant", tenant)
		require.Equal(t, 0, code, errOut)
	}
	events = db.CreateTable(t, schema.Events())
	kms = kmstest.Shared(t)
	return keysTable, events, store.New(db.Client, events), kms, kms.Key(t)
}

// revoke -hash takes a hash as list shows it (64 hex characters, any case,
// blanks around it ignored) and refuses anything else as a usage error,
// without echoing it: a key passed by mistake (the secret itself) is never
// printed back, and a blank or malformed value reads nothing. Before, a
// key given to -hash was printed in "no key with hash trg_...", and a
// blank -hash reached DynamoDB and failed with its ValidationException.
func TestRevokeRefusesWhatIsNotAHash(t *testing.T) {
	key, err := apikey.Generate()
	require.NoError(t, err)
	table := ddbtest.TableName("keys-" + t.Name())
	code, _, errOut := cli(t, "-table", table, "create-table")
	require.Equal(t, 0, code, "create-table: %s", errOut)
	for _, bad := range []string{key, " ", "abc", strings.Repeat("g", 64), strings.Repeat("a", 65), "tenant#acme"} {
		code, out, errOut := cli(t, "-table", table, "revoke", "-hash", bad)
		assert.Equal(t, 2, code, "-hash %q: %s", bad, errOut)
		assert.Contains(t, errOut, "-hash takes the key's hash: 64 hexadecimal characters, as list shows them", "-hash %q", bad)
		assert.NotContains(t, out+errOut, key[len(apikey.Prefix):], "the key was printed back")
	}
	code, _, errOut = cli(t, "-table", table, "revoke", "-hash", key)
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "that is an API key, not its hash")

	// A valid hash, in any case and with blanks around it, still works.
	code, out, errOut := cli(t, "-table", table, "create", "-tenant", "acme")
	require.Equal(t, 0, code, "create: %s", errOut)
	hash := regexp.MustCompile(`hash: +([0-9a-f]{64})`).FindStringSubmatch(out)
	require.Len(t, hash, 2, "%s", out)
	code, out, errOut = cli(t, "-table", table, "revoke", "-hash", " "+strings.ToUpper(hash[1])+" ")
	require.Equal(t, 0, code, "revoke: %s", errOut)
	assert.Equal(t, "revoked "+hash[1]+"\n", out)
}

// A description is one line of text: create refuses control characters
// (a newline or tab in it made list print rows of its own, which could
// pass for another key's, "active" next to a revoked key's hash) and more
// than 1024 bytes, before writing anything; list prints a stored one that
// holds control characters quoted, on its key's line.
func TestDescriptionIsOneLineOfText(t *testing.T) {
	table := ddbtest.TableName("keys-" + t.Name())
	code, _, errOut := cli(t, "-table", table, "create-table")
	require.Equal(t, 0, code, "create-table: %s", errOut)
	forged := "ok\n" + strings.Repeat("f", 64) + "  trg_xxxxxxxx  acme    active"
	for _, bad := range []string{forged, "a\tb", "a\rb", "a\x00b", "\xff", strings.Repeat("d", 1025)} {
		code, out, errOut := cli(t, "-table", table, "create", "-tenant", "acme", "-description", bad)
		assert.Equal(t, 2, code, "-description %q: %s", bad, errOut)
		assert.Contains(t, errOut, "triggers-keys create: -description ")
		assert.Contains(t, errOut, ": use one line of visible text, at most 1024 bytes")
		assert.NotContains(t, out, "api_key")
	}
	code, out, _ := cli(t, "-table", table, "list", "-json")
	require.Equal(t, 0, code)
	assert.Empty(t, out, "a refused key was written")
	code, _, errOut = cli(t, "-table", table, "create", "-tenant", "acme", "-description", "zapier prod – ünïcode ok "+strings.Repeat("d", 990))
	require.Equal(t, 0, code, "create: %s", errOut)

	// A description with a newline written by an earlier version (or by
	// hand) stays on its key's line.
	_, err := db.Client.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(table), Item: map[string]types.AttributeValue{
		schema.AttrKeyHash: &types.AttributeValueMemberS{Value: apikey.Hash("trg_old")}, schema.AttrTenantID: &types.AttributeValueMemberS{Value: "acme"},
		schema.AttrKeyStatus: &types.AttributeValueMemberS{Value: apikey.StatusRevoked}, schema.AttrCreatedAt: &types.AttributeValueMemberN{Value: "1"},
		schema.AttrDescription: &types.AttributeValueMemberS{Value: forged},
	}})
	require.NoError(t, err)
	code, out, _ = cli(t, "-table", table, "list")
	require.Equal(t, 0, code)
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	assert.Len(t, lines, 3, "a header and one line per key: %s", out)
	assert.Contains(t, out, `"ok\n`+strings.Repeat("f", 64))
}

// A key's description follows the rule of a subscription's
// (contract.DescriptionRefusal): create refuses a bidirectional control
// (it shows list's text in another order than it holds, "Trojan Source"),
// a line or paragraph separator or an invisible format character, naming
// its class, code point and place, and writes nothing; the characters
// written text needs pass. list prints a stored description that holds
// them (written earlier, or by hand) escaped, in the table and in -json,
// whose value still decodes to the stored text.
func TestDescriptionIsVisibleText(t *testing.T) {
	table := ddbtest.TableName("keys-" + t.Name())
	code, _, errOut := cli(t, "-table", table, "create-table")
	require.Equal(t, 0, code, "create-table: %s", errOut)
	for _, c := range []struct{ desc, want string }{
		{"prod \u202Egnp.exe", "holds the bidirectional control character U+202E at character 6"},
		{"\u2066ci\u2069", "holds the bidirectional control character U+2066 at character 1"},
		{"ci\u200Fdeploy", "holds the bidirectional control character U+200F at character 3"},
		{"line\u2028break", "holds the line or paragraph separator U+2028 at character 5"},
		{"para\u2029break", "holds the line or paragraph separator U+2029 at character 5"},
		{"zapier\u200Bprod", "holds the invisible format character U+200B at character 7"},
		{"soft\u00ADhyphen", "holds the invisible format character U+00AD at character 5"},
		{"\uFEFFbom", "holds the invisible format character U+FEFF at character 1"},
		{"flag \U0001F3F4\U000E0067\U000E0062\U000E007F", "holds the invisible format character U+E0067 at character 7"},
		{"c1 \u009B31m", "holds the control character U+009B at character 4"},
	} {
		code, out, errOut := cli(t, "-table", table, "create", "-tenant", "acme", "-description", c.desc)
		assert.Equal(t, 2, code, "-description %+q: %s", c.desc, errOut)
		assert.Contains(t, errOut, "triggers-keys create: -description "+c.want+": use one line of visible text, at most 1024 bytes: no control characters, bidirectional controls, line or paragraph separators or invisible format characters", "%+q", c.desc)
		assert.NotContains(t, out, "api_key")
	}
	code, out, _ := cli(t, "-table", table, "list", "-json")
	require.Equal(t, 0, code)
	assert.Empty(t, out, "a refused key was written")

	// Kept: the zero-width joiner and non-joiner (emoji sequences,
	// Persian), the Mongolian vowel separator and the visible Arabic
	// number sign; printed as they are.
	kept := "family \U0001F468\u200D\U0001F469\u200D\U0001F467 \u0645\u06CC\u200C\u062E\u0648\u0627\u0647\u0645 \u1820\u180E\u1820 \u0600\u0661\u0662 \u05E9\u05DC\u05D5\u05DD"
	code, _, errOut = cli(t, "-table", table, "create", "-tenant", "acme", "-description", kept)
	require.Equal(t, 0, code, "create: %s", errOut)
	code, out, _ = cli(t, "-table", table, "list")
	require.Equal(t, 0, code)
	assert.Contains(t, out, kept)

	// One stored before this rule (or by hand) is escaped: forged holds
	// no control character, so only the rule quotes it; c1 holds the
	// C1 controls that encoding/json writes as they are (the CSI U+009B
	// starts a terminal's escape sequence as ESC [ does).
	forged := "invoice \u202Egnp.exe\u202C\u2028acme active \u200Bx\u2066 \U000E0041"
	c1 := "c1 \u009B31m \u0085\u007F"
	for hash, d := range map[string]string{apikey.Hash("trg_forged"): forged, apikey.Hash("trg_c1"): c1} {
		_, err := db.Client.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(table), Item: map[string]types.AttributeValue{
			schema.AttrKeyHash: &types.AttributeValueMemberS{Value: hash}, schema.AttrTenantID: &types.AttributeValueMemberS{Value: "acme"},
			schema.AttrKeyStatus: &types.AttributeValueMemberS{Value: apikey.StatusRevoked}, schema.AttrCreatedAt: &types.AttributeValueMemberN{Value: "1"},
			schema.AttrDescription: &types.AttributeValueMemberS{Value: d},
		}})
		require.NoError(t, err)
	}
	code, out, _ = cli(t, "-table", table, "list")
	require.Equal(t, 0, code)
	assert.Empty(t, refusedIn(out), "list printed refused characters as they are: %+q", out)
	assert.Contains(t, out, `"invoice \u202egnp.exe\u202c\u2028acme active \u200bx\u2066 \U000e0041"`)
	assert.Contains(t, out, `"c1 \u009b31m \u0085\x7f"`)
	assert.Len(t, strings.Split(strings.TrimSuffix(out, "\n"), "\n"), 4, "a header and one line per key: %s", out)

	// -json escapes them too (\u escapes, which decode to the stored
	// text): a reader sees each one, a program reads the description
	// exactly as stored.
	code, out, _ = cli(t, "-table", table, "list", "-json")
	require.Equal(t, 0, code)
	assert.Empty(t, refusedIn(out), "list -json printed refused characters as they are: %+q", out)
	assert.Contains(t, out, `"description":"invoice \u202egnp.exe\u202c\u2028acme active \u200bx\u2066 \udb40\udc41"`)
	assert.Contains(t, out, `"description":"c1 \u009b31m \u0085\u007f"`)
	descs := map[string]string{}
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		var k struct{ Hash, Description string }
		require.NoError(t, json.Unmarshal([]byte(line), &k), "%s", line)
		descs[k.Hash] = k.Description
	}
	assert.Len(t, descs, 3)
	assert.Equal(t, forged, descs[apikey.Hash("trg_forged")], "-json changed the stored text")
	assert.Equal(t, c1, descs[apikey.Hash("trg_c1")], "-json changed the stored text")
	assert.Contains(t, slices.Collect(maps.Values(descs)), kept)
}

// Every character contract.DescriptionRefusal refuses is escaped by
// list, in the table (oneLine) and in -json (jsonLine, whose value
// decodes to the stored text), and every other one is printed as it is
// (in -json, but for the characters JSON itself escapes: " \\ < > &).
func TestListEscapesEveryRefusedCharacter(t *testing.T) {
	var kept []rune
	wrong := 0
	for r := rune(0); r <= unicode.MaxRune && wrong < 10; r++ {
		if utf16.IsSurrogate(r) {
			continue // not a character: a stored string cannot hold it
		}
		d := "a" + string(r) + "b"
		if contract.DescriptionRefusal(r) == "" {
			if row := oneLine(d); row != d {
				t.Errorf("oneLine(%+q) = %+q, want it as it is", d, row)
				wrong++
			}
			if !strings.ContainsRune(`"\<>&`, r) {
				kept = append(kept, r)
			}
			continue
		}
		if err := jsonEscapes(d); err != nil || len(refusedIn(oneLine(d))) > 0 {
			t.Errorf("%U: oneLine = %+q, jsonLine: %v", r, oneLine(d), err)
			wrong++
		}
	}
	for len(kept) > 0 && wrong < 10 {
		n := min(len(kept), 4096)
		d := string(kept[:n])
		kept = kept[n:]
		line := jsonLine(keyJSON{Description: d})
		if !strings.Contains(string(line), `"description":"`+d+`"`) {
			t.Errorf("jsonLine changed a character of %U-%U that is kept", []rune(d)[0], []rune(d)[n-1])
			wrong++
		}
	}
}

// jsonEscapes reports whether jsonLine writes d with no character
// contract.DescriptionRefusal refuses, as JSON that decodes to d.
func jsonEscapes(d string) error {
	line := jsonLine(keyJSON{Description: d})
	if r := refusedIn(strings.TrimSuffix(string(line), "\n")); len(r) > 0 || !strings.HasSuffix(string(line), "}\n") {
		return fmt.Errorf("%+q holds %v as they are", line, r)
	}
	var back keyJSON
	if err := json.Unmarshal(line, &back); err != nil || back.Description != d {
		return fmt.Errorf("%+q decodes to %+q, %v", line, back.Description, err)
	}
	return nil
}

// refusedIn returns the characters of s, line breaks aside, that
// contract.DescriptionRefusal refuses.
func refusedIn(s string) []string {
	var out []string
	for _, r := range s {
		if r != '\n' && contract.DescriptionRefusal(r) != "" {
			out = append(out, fmt.Sprintf("%U", r))
		}
	}
	return out
}
