// Command triggers-keys creates, lists and revokes Triggers API keys, on
// AWS or against a local DynamoDB endpoint.
//
//	triggers-keys [-table NAME] [-endpoint-url URL] [-region R] COMMAND [flags]
//
// Commands:
//
//	create -tenant ID [-description TEXT]   create a key; it is printed once
//	list [-tenant ID] [-json]               list keys (never the keys themselves)
//	revoke -hash HASH | -key-stdin          revoke a key (the key itself is read from stdin, never argv)
//	shards -tenant ID -count N [-authorizer-cache-ttl D]
//	                                        write the tenant's new events to N shards, 1-32 (docs/sharding.md);
//	                                        a growth takes effect D (the deployed authorizer cache TTL,
//	                                        default 300s) plus a minute later, the read count at once
//	reseal-secrets -events-table NAME -secrets-key KEY [-kms-endpoint-url URL] [-dry-run] [-scan-events]
//	                                        seal in place the webhook signing secrets stored in
//	                                        plain text (written before secrets were sealed)
//	create-table                            create the API-keys table (local use)
//
// The table defaults to $API_KEYS_TABLE; credentials and region come from
// the usual AWS configuration chain. Exit status: 0 done, 2 a usage error
// (nothing was read or written), 1 a failure of the operation.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/kms"

	"github.com/triggers-dev/triggers/contract"
	"github.com/triggers-dev/triggers/internal/apikey"
	"github.com/triggers-dev/triggers/internal/ddb"
	"github.com/triggers-dev/triggers/internal/ddb/ddbconfig"
	"github.com/triggers-dev/triggers/internal/event"
	"github.com/triggers-dev/triggers/internal/shard"
	"github.com/triggers-dev/triggers/internal/store"
	"github.com/triggers-dev/triggers/internal/webhook/secretbox"
	"github.com/triggers-dev/triggers/schema"
)

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Getenv))
}

const usage = `usage: triggers-keys [-table NAME] [-endpoint-url URL] [-region REGION] COMMAND [flags]

commands:
  create -tenant ID [-description TEXT]   create a key for a tenant; the key is shown once. A
                                          tenant has at most 99 keys that are not revoked
  list [-tenant ID] [-json]               list keys: hash, prefix, tenant, status, dates
  revoke -hash HASH | -key-stdin          revoke a key (idempotent); HASH is the 64 hex characters
                                          list shows; -key-stdin reads the key from standard
                                          input, so it stays out of argv and history. The key
                                          works until its cached authorizer answers expire: up
                                          to the authorizer cache TTL (docs/runbook.md)
  shards -tenant ID -count N [-authorizer-cache-ttl D]
                                          write the tenant's new events to N shards (1-32) on
                                          every key of the tenant; its inbox keeps reading the
                                          most shards it ever had, from now on. A growth of the
                                          write count takes effect D plus a minute later, once
                                          every cached authorizer answer that still reads the
                                          old count has expired: give the API's authorizer
                                          cache TTL (AuthorizerCacheTtl; default 300s) as D
                                          (docs/sharding.md)
  reseal-secrets -events-table NAME -secrets-key KEY [-kms-endpoint-url URL] [-dry-run] [-scan-events]
                                          seal in place, with the webhook secrets key (the
                                          stack's WEBHOOK_SECRETS_KEY), every signing secret
                                          stored in plain text ("whsec_...", written before
                                          secrets were sealed) in the subscriptions of every
                                          tenant with an API key: the same secrets keep signing,
                                          receivers change nothing (docs/runbook.md)
  create-table                            create the API-keys table if missing (local use)

global flags:
`

// run is the whole command; it returns the exit code.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	global := flag.NewFlagSet("triggers-keys", flag.ContinueOnError)
	global.SetOutput(stderr)
	table := global.String("table", getenv(contract.EnvAPIKeysTable), "API-keys table name (default $API_KEYS_TABLE)")
	endpoint := global.String("endpoint-url", getenv(contract.EnvDynamoDBEndpoint), "DynamoDB endpoint, such as http://localhost:8000 for DynamoDB Local (default $DYNAMODB_ENDPOINT, else AWS)")
	region := global.String("region", "", "AWS region (default: from the AWS configuration; us-east-1 with -endpoint-url)")
	global.Usage = func() {
		fmt.Fprint(stderr, usage)
		global.PrintDefaults()
	}
	if err := global.Parse(args); err != nil {
		return 2
	}
	if global.NArg() == 0 {
		global.Usage()
		return 2
	}
	cmd, rest := global.Arg(0), global.Args()[1:]
	if *table == "" {
		fmt.Fprintln(stderr, "triggers-keys: no table: pass -table NAME or set API_KEYS_TABLE")
		return 2
	}
	client, err := ddbconfig.NewClient(ctx, ddb.Options{EndpointURL: *endpoint, Region: *region})
	if err != nil {
		fmt.Fprintf(stderr, "triggers-keys: %v\n", err)
		return 1
	}
	keys := apikey.NewStore(client, *table)

	fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	switch cmd {
	case "create":
		tenant := fs.String("tenant", "", "tenant id (required)")
		desc := fs.String("description", "", "one line of visible text stored with the key (no control characters, bidirectional controls, line or paragraph separators or invisible format characters; at most 1024 bytes)")
		if fs.Parse(rest) != nil || !noArgs(fs, stderr) {
			return 2
		}
		if *tenant == "" {
			fmt.Fprintln(stderr, "triggers-keys create: -tenant is required")
			return 2
		}
		if err := apikey.CheckDescription(*desc); err != nil {
			fmt.Fprintf(stderr, "triggers-keys create: -%v\n", err)
			return 2
		}
		key, k, err := keys.Create(ctx, *tenant, *desc)
		if err != nil {
			fmt.Fprintf(stderr, "triggers-keys create: %v\n", err)
			return 1
		}
		fmt.Fprintf(stdout, "api_key: %s\nhash:    %s\ntenant:  %s\n", key, k.Hash, k.TenantID)
		fmt.Fprintln(stderr, "Store the key now: it is not shown again and only its SHA-256 hash is kept.")
		return 0
	case "shards":
		tenant := fs.String("tenant", "", "tenant id (required)")
		count := fs.Int("count", 0, "write shard count, 1-32 (required)")
		cacheTTL := fs.Duration("authorizer-cache-ttl", contract.DefaultAuthorizerCacheSeconds*time.Second,
			"the deployed API's authorizer cache TTL (TriggersApiProps.AuthorizerCacheTtl, 0-1h): a growth of the write count takes effect this plus "+apikey.ShardSwitchMargin.String()+" after the change")
		if fs.Parse(rest) != nil || !noArgs(fs, stderr) {
			return 2
		}
		if *tenant == "" {
			fmt.Fprintln(stderr, "triggers-keys shards: -tenant is required")
			return 2
		}
		if *count < 1 || *count > shard.MaxShards {
			fmt.Fprintf(stderr, "triggers-keys shards: -count %d is invalid: give the tenant's write shard count, 1 to %d\n", *count, shard.MaxShards)
			return 2
		}
		if *cacheTTL < 0 || *cacheTTL > contract.MaxAuthorizerCacheSeconds*time.Second {
			fmt.Fprintf(stderr, "triggers-keys shards: -authorizer-cache-ttl %v is invalid: give the API's authorizer cache TTL, 0s to 1h\n", *cacheTTL)
			return 2
		}
		keys := apikey.NewStore(client, *table, apikey.WithShardSwitchDelay(*cacheTTL+apikey.ShardSwitchMargin))
		cfg, err := keys.SetShards(ctx, *tenant, *count)
		if err != nil {
			fmt.Fprintf(stderr, "triggers-keys shards: %v\n", err)
			return 1
		}
		if cfg.From.IsZero() {
			fmt.Fprintf(stdout, "tenant: %s\nshards: %d (write)\nread_shards: %d\n", *tenant, cfg.Write, cfg.Read)
		} else {
			fmt.Fprintf(stdout, "tenant: %s\nshards: %d (write, from %s; %d until then)\nread_shards: %d\n", *tenant, cfg.Write, cfg.From.UTC().Format(time.RFC3339), max(1, cfg.Prev), cfg.Read)
		}
		fmt.Fprintln(stderr, "Handlers see the change within the authorizer cache TTL (a growth of the write count from the time above); the events table needs EVENTS_SHARDING=on.")
		return 0
	case "list":
		tenant := fs.String("tenant", "", "only this tenant's keys (default: all, by Scan)")
		asJSON := fs.Bool("json", false, "print JSON lines")
		if fs.Parse(rest) != nil || !noArgs(fs, stderr) {
			return 2
		}
		if *tenant != "" && !event.ValidTenantID(*tenant) {
			// No key can belong to it: an empty list would hide the typo.
			fmt.Fprintf(stderr, "triggers-keys list: -tenant %q is not a valid tenant id (1-128 characters of A-Z a-z 0-9 _ . : -, starting with a letter or digit)\n", *tenant)
			return 2
		}
		list, err := keys.List(ctx, *tenant)
		if err != nil {
			fmt.Fprintf(stderr, "triggers-keys list: %v\n", err)
			return 1
		}
		if *asJSON {
			for _, k := range list {
				_, _ = stdout.Write(jsonLine(jsonKey(k)))
			}
			return 0
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "HASH\tPREFIX\tTENANT\tSTATUS\tCREATED\tREVOKED\tDESCRIPTION")
		for _, k := range list {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", k.Hash, k.Prefix, k.TenantID, k.Status, stamp(k.CreatedAt), stamp(k.RevokedAt), oneLine(k.Description))
		}
		_ = tw.Flush()
		return 0
	case "revoke":
		hash := fs.String("hash", "", "hash of the key, as list shows it")
		fromStdin := fs.Bool("key-stdin", false, "read the key itself from standard input (one line)")
		argvKey := fs.String("key", "", "refused: a key in argv lands in shell history and process lists; use -key-stdin")
		if fs.Parse(rest) != nil || !noArgs(fs, stderr) {
			return 2
		}
		if *argvKey != "" {
			fmt.Fprintln(stderr, "triggers-keys revoke: -key puts the secret in argv (shell history, ps): pipe it to -key-stdin instead, or pass -hash")
			return 2
		}
		if (*hash == "") == !*fromStdin {
			fmt.Fprintln(stderr, "triggers-keys revoke: pass exactly one of -hash or -key-stdin")
			return 2
		}
		if !*fromStdin {
			// Never echo a value that is not a hash: it may be the key
			// itself, given to the wrong flag.
			h := strings.ToLower(strings.TrimSpace(*hash))
			if !apikey.ValidHash(h) {
				fmt.Fprint(stderr, "triggers-keys revoke: -hash takes the key's hash: 64 hexadecimal characters, as list shows them")
				if strings.HasPrefix(strings.TrimSpace(*hash), apikey.Prefix) {
					fmt.Fprint(stderr, "; that is an API key, not its hash: pipe it to -key-stdin instead (it is in your shell history now)")
				}
				fmt.Fprintln(stderr)
				return 2
			}
			*hash = h
		}
		if *fromStdin {
			line, err := bufio.NewReader(io.LimitReader(stdin, 4096)).ReadString('\n')
			key := strings.TrimSpace(line)
			if key == "" {
				fmt.Fprintf(stderr, "triggers-keys revoke: no key on standard input (%v): echo \"$KEY\" | triggers-keys revoke -key-stdin\n", err)
				return 2
			}
			*hash = apikey.Hash(key)
		}
		was, err := keys.Revoke(ctx, *hash)
		if errors.Is(err, apikey.ErrNoSuchKey) {
			fmt.Fprintf(stderr, "triggers-keys revoke: no key with hash %s\n", *hash)
			return 1
		}
		if err != nil {
			fmt.Fprintf(stderr, "triggers-keys revoke: %v\n", err)
			return 1
		}
		if was {
			fmt.Fprintf(stdout, "revoked %s\n", strings.ToLower(*hash))
		} else {
			fmt.Fprintf(stdout, "already revoked %s\n", strings.ToLower(*hash))
		}
		fmt.Fprintln(stderr, revokeNote)
		return 0
	case "reseal-secrets":
		events := fs.String("events-table", getenv(contract.EnvEventsTable), "events table name (default $EVENTS_TABLE)")
		secretsKey := fs.String("secrets-key", getenv(contract.EnvWebhookSecretsKey), "KMS key (ARN, id or alias) that seals webhook secrets (default $"+contract.EnvWebhookSecretsKey+")")
		kmsEndpoint := fs.String("kms-endpoint-url", "", "KMS endpoint, such as local-kms's (default: AWS)")
		dryRun := fs.Bool("dry-run", false, "count and list the subscriptions to seal; change nothing")
		scanEvents := fs.Bool("scan-events", false, "also find the tenants holding subscriptions by scanning the whole events table (tenants whose API-key items were deleted by hand); it reads every item: the table's size in read capacity")
		if fs.Parse(rest) != nil || !noArgs(fs, stderr) {
			return 2
		}
		if *events == "" || *secretsKey == "" {
			fmt.Fprintln(stderr, "triggers-keys reseal-secrets: -events-table and -secrets-key are required")
			return 2
		}
		awsCfg, err := ddbconfig.LoadConfig(ctx, ddb.Options{EndpointURL: *endpoint, Region: *region})
		if err != nil {
			fmt.Fprintf(stderr, "triggers-keys reseal-secrets: %v\n", err)
			return 1
		}
		kmsClient := kms.NewFromConfig(awsCfg, func(o *kms.Options) {
			if *kmsEndpoint != "" {
				o.BaseEndpoint = kmsEndpoint
			}
		})
		box, err := secretbox.New(kmsClient, *secretsKey, secretbox.Options{})
		if err != nil {
			fmt.Fprintf(stderr, "triggers-keys reseal-secrets: %v\n", err)
			return 1
		}
		stats, err := resealSecrets(ctx, keys, store.New(client, *events), box, *dryRun, *scanEvents, stdout)
		verb := "sealed"
		if *dryRun {
			verb = "to seal"
		}
		fmt.Fprintf(stdout, "%d tenants, %d subscriptions, %d %s, %d changed meanwhile, %d with an invalid secret\n", stats.tenants, stats.subscriptions, stats.sealed, verb, stats.raced, stats.invalid)
		if err != nil {
			fmt.Fprintf(stderr, "triggers-keys reseal-secrets: %v (run it again: what is sealed stays sealed)\n", err)
			return 1
		}
		if stats.invalid > 0 {
			fmt.Fprintf(stderr, "triggers-keys reseal-secrets: %d subscriptions hold a plain-text value that is not a valid secret (listed above, left as they are): rotate them\n", stats.invalid)
			return 1
		}
		return 0
	case "create-table":
		if fs.Parse(rest) != nil || !noArgs(fs, stderr) {
			return 2
		}
		created, err := ddb.CreateTable(ctx, client, schema.APIKeys(), *table, true)
		if err != nil {
			fmt.Fprintf(stderr, "triggers-keys create-table: %v\n", err)
			return 1
		}
		if created {
			fmt.Fprintf(stdout, "created table %s\n", *table)
		} else {
			fmt.Fprintf(stdout, "table %s exists\n", *table)
		}
		return 0
	}
	fmt.Fprintf(stderr, "triggers-keys: unknown command %q\n", cmd)
	global.Usage()
	return 2
}

// revokeNote is what revoke says on stderr after a revocation: the key
// keeps working until the gateway's cached answers for it expire.
const revokeNote = "The key still works until the API's cached authorizer answer for it expires: up to the authorizer cache TTL (AuthorizerCacheTtl, default 300s) from now, on AWS and under make dev. To end it at once on AWS, flush the stage's authorizer cache (docs/runbook.md, Revoking an API key)."

func noArgs(fs *flag.FlagSet, stderr io.Writer) bool {
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "triggers-keys %s: unexpected arguments %q\n", fs.Name(), fs.Args())
		return false
	}
	return true
}

// oneLine returns a stored description as list's table prints it: as it
// is when it is valid (apikey.ValidDescription), else quoted with Go's
// escapes (strconv.Quote escapes every character that is not printable,
// so every one contract.DescriptionRefusal refuses), so that a control
// character in one written by an earlier version or by hand cannot start
// a row of its own, nor a bidirectional control reorder the row, nor an
// invisible character hide.
func oneLine(d string) string {
	if apikey.ValidDescription(d) {
		return d
	}
	return strconv.Quote(d)
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

// jsonLine returns k as list -json prints it: one line of JSON in which
// every character contract.DescriptionRefusal refuses is a \u escape (a
// surrogate pair above U+FFFF). encoding/json escapes C0 controls and
// U+2028/U+2029 only; a description stored before the rule could bring a
// C1 control (U+009B starts a terminal escape sequence), DEL, a
// bidirectional control or an invisible character to the terminal as it
// is. Outside its strings JSON is ASCII without controls, so each such
// character is in a string, where the escape decodes to the same text: a
// program reads the description exactly as stored.
func jsonLine(k keyJSON) []byte {
	data, _ := json.Marshal(k) // a struct of strings: it cannot fail
	out := contract.EscapeJSON(data, func(r rune) bool { return contract.DescriptionRefusal(r) != "" })
	return append(out, '\n')
}

type keyJSON struct {
	Hash        string `json:"hash"`
	Prefix      string `json:"prefix"`
	TenantID    string `json:"tenant_id"`
	Status      string `json:"status"`
	Description string `json:"description,omitempty"`
	CreatedAt   string `json:"created_at"`
	RevokedAt   string `json:"revoked_at,omitempty"`
}

func jsonKey(k apikey.Key) keyJSON {
	out := keyJSON{Hash: k.Hash, Prefix: k.Prefix, TenantID: k.TenantID, Status: k.Status, Description: k.Description, CreatedAt: stamp(k.CreatedAt)}
	if !k.RevokedAt.IsZero() {
		out.RevokedAt = stamp(k.RevokedAt)
	}
	return out
}
