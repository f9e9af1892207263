// Package stacks composes the reusable constructs into deployable stacks,
// one file per system of the specs. Build adds every stack to an app.
package stacks

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/triggers-dev/triggers/contract"
	"github.com/triggers-dev/triggers/schema"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"

	"github.com/triggers-dev/triggers/constructs/archive"
	"github.com/triggers-dev/triggers/constructs/dynamotable"
	"github.com/triggers-dev/triggers/constructs/eventstore"
	"github.com/triggers-dev/triggers/constructs/monitoring"
	"github.com/triggers-dev/triggers/constructs/triggersapi"
)

// Context keys the app reads (cdk.json or `cdk synth -c key=value`).
const (
	// ContextEnv selects the environment named in stack names: dev,
	// staging, prod, or another name of lowercase letters, digits and '-'.
	ContextEnv = "triggers:env"
	// ContextBilling selects the events table billing: on-demand or provisioned.
	ContextBilling = "triggers:billing"
	// ContextTenantEventTypeIndex adds seed 003's optional event-type-index: true or false.
	ContextTenantEventTypeIndex = "tenant:event-type-index"
	// ContextEventsTableName and ContextEventsTableStreamArn point the API
	// stack at another events table (one restored with PITR, say) by name
	// and stream ARN; give both or neither (TriggersApiStackProps.EventsTable).
	ContextEventsTableName      = "triggers:events-table-name"
	ContextEventsTableStreamArn = "triggers:events-table-stream-arn"
	// ContextEventsProfile selects the events table's profile: seed (the
	// default) or lean (schema.EventsProfile, docs/capacity.md). Choose it
	// before the first deployment: a deployed table keeps its indexes.
	ContextEventsProfile = "triggers:events-profile"
	// ContextCloudWatchRole says whether the API stack creates API
	// Gateway's account-level CloudWatch role: true (the default) or false
	// when another stack of the account and region owns it.
	ContextCloudWatchRole = "triggers:cloudwatch-role"
	// ContextEventsSharding lets the events table's tenants be sharded
	// (eventstore.EventsTableProps.Sharding, docs/sharding.md): true or
	// false (the default). Also for a table named by EventsTableName.
	ContextEventsSharding = "triggers:events-sharding"
)

// Context keys of a multi-region deployment (docs/multi-region.md): the
// same app deployed once per region, each run naming its region.
const (
	// ContextRegion is the region of the triggers data and API stacks,
	// such as "us-east-1". Default: unset, environment-agnostic stacks
	// (the region of the deploying credentials).
	ContextRegion = "triggers:region"
	// ContextReplicaRegions lists, comma-separated, the other regions of
	// the data stack's events and API-keys tables (global tables,
	// dynamotable.TableOptions.Replicas). Needs ContextRegion.
	ContextReplicaRegions = "triggers:replica-regions"
	// ContextWriterRegion is the one region whose API accepts writes
	// (triggersapi.TriggersApiProps.WriterRegion): ContextRegion or one
	// of ContextReplicaRegions. The same value in every region's run.
	ContextWriterRegion = "triggers:writer-region"
	// ContextApiKeysTableName points the API stack at an existing API-keys
	// table by name (not ARN): in a replica region, the global table's
	// replica there (the name the primary's data stack outputs as
	// ApiKeysTableName); in a single-region run, a restored API-keys table
	// (docs/runbook.md, "PITR restore").
	ContextApiKeysTableName = "triggers:api-keys-table-name"
	// ContextCursorSecretName makes the API stack sign inbox cursors with
	// this existing Secrets Manager secret (by name) instead of one of its
	// own: the same secret, replicated to every region, keeps cursors
	// valid across a failover (docs/multi-region.md).
	ContextCursorSecretName = "triggers:cursor-secret-name"
)

// Environments returns the usual values of ContextEnv; any name matching
// ^[a-z][a-z0-9-]{0,15}$ is accepted (a team's "qa", "perf"...). It
// returns a new slice each call.
func Environments() []string { return slices.Clone(environments) }

var environments = []string{DefaultEnv, "staging", "prod"}

// Config is what the app reads from context.
type Config struct {
	// Env names the environment: dev, staging or prod. Default: dev.
	Env string
	// Billing is the events table billing mode. Default: on-demand.
	Billing dynamotable.Billing
	// TenantEventTypeIndex adds seed 003's optional event-type-index. Default: false.
	TenantEventTypeIndex bool
	// EventsTableName and EventsTableStreamArn, when set, point the API
	// stack at that events table instead of the data stack's. Default: "".
	EventsTableName, EventsTableStreamArn string
	// EventsProfile is the events table's profile, also of a table named
	// by EventsTableName. Default: schema.ProfileSeed.
	EventsProfile schema.EventsProfile
	// NoCloudWatchRole leaves API Gateway's account-level CloudWatch role
	// to another stack. Default: false (the API stack creates it).
	NoCloudWatchRole bool
	// EventsSharding lets the events table's tenants be sharded, also of
	// a table named by EventsTableName. Default: false.
	EventsSharding bool
	// Region is the triggers stacks' region. Default: "" (environment-agnostic).
	Region string
	// ReplicaRegions are the data stack's tables' other regions. Default: none.
	ReplicaRegions []string
	// WriterRegion is TriggersApiProps.WriterRegion. Default: "" (single region).
	WriterRegion string
	// ApiKeysTableName, when set, points the API stack at that API-keys
	// table instead of the data stack's. Default: "".
	ApiKeysTableName string
	// CursorSecretName, when set, names the secret signing inbox cursors.
	// Default: "" (the API stack generates one).
	CursorSecretName string
}

var envRE = regexp.MustCompile(`^[a-z][a-z0-9-]{0,15}$`)

// ConfigFromContext reads Config from the app's context and validates it.
func ConfigFromContext(app awscdk.App) (Config, error) {
	cfg := Config{Env: DefaultEnv, Billing: dynamotable.OnDemand}
	node := app.Node() // one jsii read for every key
	if v := node.TryGetContext(jsii.String(ContextEnv)); v != nil {
		s, ok := v.(string)
		if !ok || !envRE.MatchString(s) {
			return cfg, fmt.Errorf("context %s=%v is not an environment name: use %s, or another name of lowercase letters, digits and '-' (at most 16, starting with a letter)", ContextEnv, v, strings.Join(environments, ", "))
		}
		cfg.Env = s
	}
	if v := node.TryGetContext(jsii.String(ContextBilling)); v != nil {
		switch v {
		case "on-demand":
			cfg.Billing = dynamotable.OnDemand
		case "provisioned":
			cfg.Billing = dynamotable.Provisioned
		default:
			return cfg, fmt.Errorf("context %s=%v is unknown: use on-demand or provisioned", ContextBilling, v)
		}
	}
	if v := node.TryGetContext(jsii.String(ContextTenantEventTypeIndex)); v != nil {
		switch v {
		case true, "true":
			cfg.TenantEventTypeIndex = true
		case false, "false":
		default:
			return cfg, fmt.Errorf("context %s=%v is not a boolean: use true or false", ContextTenantEventTypeIndex, v)
		}
	}
	name, _ := node.TryGetContext(jsii.String(ContextEventsTableName)).(string)
	if err := checkTableName(ContextEventsTableName, name, "scripts/restore-drill.sh prints it"); err != nil {
		return cfg, err
	}
	arn, _ := node.TryGetContext(jsii.String(ContextEventsTableStreamArn)).(string)
	if (name == "") != (arn == "") || (arn != "" && !strings.Contains(arn, ":table/"+name+"/stream/")) {
		return cfg, fmt.Errorf("context %s=%q and %s=%q must be given together, the stream ARN being that table's (arn:aws:dynamodb:<region>:<account>:table/<name>/stream/<label>): scripts/restore-drill.sh prints both", ContextEventsTableName, name, ContextEventsTableStreamArn, arn)
	}
	cfg.EventsTableName, cfg.EventsTableStreamArn = name, arn
	cfg.EventsProfile = schema.ProfileSeed
	if v := node.TryGetContext(jsii.String(ContextEventsProfile)); v != nil {
		s, _ := v.(string)
		p, err := schema.ParseEventsProfile(s)
		if err != nil || s == "" {
			return cfg, fmt.Errorf("context %s=%v is unknown: use %s (the default) or %s", ContextEventsProfile, v, schema.ProfileSeed, schema.ProfileLean)
		}
		cfg.EventsProfile = p
	}
	if v := node.TryGetContext(jsii.String(ContextCloudWatchRole)); v != nil {
		switch v {
		case true, "true":
		case false, "false":
			cfg.NoCloudWatchRole = true
		default:
			return cfg, fmt.Errorf("context %s=%v is not a boolean: use true (the API stack creates API Gateway's CloudWatch role) or false (another stack of the account owns it)", ContextCloudWatchRole, v)
		}
	}
	if v := node.TryGetContext(jsii.String(ContextEventsSharding)); v != nil {
		switch v {
		case true, "true":
			cfg.EventsSharding = true
		case false, "false":
		default:
			return cfg, fmt.Errorf("context %s=%v is not a boolean: use true (tenants may be sharded: docs/sharding.md) or false (the default)", ContextEventsSharding, v)
		}
	}
	if err := regionsFromContext(app, &cfg); err != nil {
		return cfg, err
	}
	return cfg, nil
}

var secretNameRE = regexp.MustCompile(`^[A-Za-z0-9/_+=.@-]{1,512}$`)

// tableNameRE is DynamoDB's rule for a table name.
var tableNameRE = regexp.MustCompile(`^[A-Za-z0-9_.-]{3,255}$`)

// checkTableName refuses a context value key=name that DynamoDB would not
// take as a table name (an ARN, most likely: the stack would then grant
// and read a table named after the ARN); where tells where the name is.
func checkTableName(key, name, where string) error {
	if name == "" || tableNameRE.MatchString(name) {
		return nil
	}
	return fmt.Errorf("context %s=%s is not a table name: give the table's name (3-255 letters, digits and _.-), not its ARN; %s", key, name, where)
}

// regionsFromContext reads and checks the multi-region keys into cfg.
func regionsFromContext(app awscdk.App, cfg *Config) error {
	node := app.Node()
	str := func(key string) (string, error) {
		v := node.TryGetContext(jsii.String(key))
		if v == nil {
			return "", nil
		}
		s, ok := v.(string)
		if !ok {
			return "", fmt.Errorf("context %s=%v is not a string: give it as -c %s=<value>", key, v, key)
		}
		return strings.TrimSpace(s), nil
	}
	region, err := str(ContextRegion)
	if err != nil {
		return err
	}
	if region != "" && !contract.ValidRegionName(region) {
		return fmt.Errorf("context %s=%s is not a region name: use one such as us-east-1", ContextRegion, region)
	}
	cfg.Region = region
	replicas, err := str(ContextReplicaRegions)
	if err != nil {
		return err
	}
	if replicas != "" {
		if region == "" {
			return fmt.Errorf("context %s=%s needs %s: a global table's replicas are relative to the data stack's region; add -c %s=<primary region>", ContextReplicaRegions, replicas, ContextRegion, ContextRegion)
		}
		for _, r := range strings.Split(replicas, ",") {
			r = strings.TrimSpace(r)
			switch {
			case !contract.ValidRegionName(r):
				return fmt.Errorf("context %s=%s: %q is not a region name: list regions comma-separated, such as eu-west-1,ap-southeast-2", ContextReplicaRegions, replicas, r)
			case r == region:
				return fmt.Errorf("context %s=%s lists %s, the stacks' own region (%s): the table's first replica is there already; remove it", ContextReplicaRegions, replicas, r, ContextRegion)
			case slices.Contains(cfg.ReplicaRegions, r):
				return fmt.Errorf("context %s=%s lists %s twice: remove one", ContextReplicaRegions, replicas, r)
			}
			cfg.ReplicaRegions = append(cfg.ReplicaRegions, r)
		}
	}
	if cfg.ApiKeysTableName, err = str(ContextApiKeysTableName); err != nil {
		return err
	}
	if err := checkTableName(ContextApiKeysTableName, cfg.ApiKeysTableName, "the data stack outputs it as ApiKeysTableName"); err != nil {
		return err
	}
	if arn := cfg.EventsTableStreamArn; region != "" && arn != "" && !strings.Contains(arn, ":dynamodb:"+region+":") {
		return fmt.Errorf("context %s=%s is not a stream of %s=%s: a replica's stream ARN names its own region; take the one of %s (aws dynamodb describe-table --region %s --query Table.LatestStreamArn)", ContextEventsTableStreamArn, arn, ContextRegion, region, region, region)
	}
	if cfg.CursorSecretName, err = str(ContextCursorSecretName); err != nil {
		return err
	}
	if n := cfg.CursorSecretName; n != "" && !secretNameRE.MatchString(n) {
		return fmt.Errorf("context %s=%s is not a secret name: give the name (letters, digits and /_+=.@-), not an ARN", ContextCursorSecretName, n)
	}
	writer, err := str(ContextWriterRegion)
	if err != nil {
		return err
	}
	if writer != "" {
		switch {
		case !contract.ValidRegionName(writer):
			return fmt.Errorf("context %s=%s is not a region name: use one such as us-east-1", ContextWriterRegion, writer)
		case region == "":
			return fmt.Errorf("context %s=%s needs %s: name the region this run deploys (-c %s=<region>)", ContextWriterRegion, writer, ContextRegion, ContextRegion)
		case len(cfg.ReplicaRegions) > 0 && writer != region && !slices.Contains(cfg.ReplicaRegions, writer):
			return fmt.Errorf("context %s=%s is neither %s=%s nor one of %s=%s: the writer must hold a replica of the events table; name one of those regions", ContextWriterRegion, writer, ContextRegion, region, ContextReplicaRegions, replicas)
		case len(cfg.ReplicaRegions) == 0 && writer != region && (cfg.EventsTableName == "" || cfg.ApiKeysTableName == ""):
			return fmt.Errorf("context %s=%s is another region than %s=%s, with no %s: this is a replica region's run; give the global tables' replicas here with -c %s=<name> -c %s=<this region's stream ARN> -c %s=<name> (the primary's data stack outputs the names; docs/multi-region.md)", ContextWriterRegion, writer, ContextRegion, region, ContextReplicaRegions, ContextEventsTableName, ContextEventsTableStreamArn, ContextApiKeysTableName)
		}
		cfg.WriterRegion = writer
	}
	return nil
}

// replicaRun reports whether cfg deploys a replica region of the global
// tables: both replicas imported by name, no replica regions of its own,
// and a writer region, which every run of a multi-region service names
// (the writer may be this region, after a failover). A single-region
// service names none (TriggersApiProps.WriterRegion's default), so its
// run that swaps in restored tables, both of them even, is not a replica
// run; one that names its own region as the writer cannot be told from a
// replica region's after a failover, and is taken for one.
func (c Config) replicaRun() bool {
	return len(c.ReplicaRegions) == 0 && c.EventsTableName != "" && c.ApiKeysTableName != "" && c.WriterRegion != ""
}

// Build adds every stack of the app for cfg.
func Build(app awscdk.App, cfg Config) {
	var env *awscdk.Environment // environment-agnostic unless triggers:region names one
	if cfg.Region != "" {
		env = &awscdk.Environment{Region: jsii.String(cfg.Region)}
	}
	var tableOpts dynamotable.TableOptions
	for _, r := range cfg.ReplicaRegions {
		tableOpts.Replicas = append(tableOpts.Replicas, dynamotable.Replica{Region: r})
	}
	data := NewTriggersDataStack(app, jsii.String(StackName("triggers", cfg.Env, "data")), &TriggersDataStackProps{
		StackProps: awscdk.StackProps{
			Description: jsii.String(fmt.Sprintf("Triggers %s: stateful resources (events and API-keys tables). Seeds 000/001/003.", cfg.Env)),
			Env:         env,
		},
		Env:            cfg.Env,
		Billing:        cfg.Billing,
		EventsProfile:  cfg.EventsProfile,
		EventsSharding: cfg.EventsSharding,
		TableOptions:   tableOpts,
	})
	var apiKeys *triggersapi.ApiKeysTableAttributes
	if cfg.ApiKeysTableName != "" {
		apiKeys = &triggersapi.ApiKeysTableAttributes{TableName: jsii.String(cfg.ApiKeysTableName)}
	}
	NewTriggersApiStack(app, jsii.String(StackName("triggers", cfg.Env, "api")), &TriggersApiStackProps{
		StackProps: awscdk.StackProps{
			Description: jsii.String(fmt.Sprintf("Triggers %s: stateless resources (API Gateway, Lambda functions, stream delivery).", cfg.Env)),
			Env:         env,
		},
		Data:             data,
		Env:              cfg.Env,
		EventsTable:      importedEvents(cfg),
		ApiKeysTable:     apiKeys,
		CursorSecretName: cfg.CursorSecretName,
		CloudWatchRole:   jsii.Bool(!cfg.NoCloudWatchRole),
		Api:              triggersapi.TriggersApiProps{WriterRegion: cfg.WriterRegion},
		// A replica region's run: the global table's replica here has
		// Contributor Insights as the primary's (each replica takes the
		// table's setting), so the region's dashboard gets its section. A
		// restored table has none (a restore does not carry it over).
		Monitoring: monitoring.TriggersMonitoringProps{ContributorInsights: cfg.replicaRun() && data.EventsContributorInsights,
			MoreArchives: swappedOut(cfg, data)},
	})
	dataProps := func(system, desc string) DataStackProps {
		return DataStackProps{Env: cfg.Env, StackProps: awscdk.StackProps{
			Description: jsii.String(fmt.Sprintf("%s %s: %s", system, cfg.Env, desc)),
		}}
	}
	NewTicketingStack(app, jsii.String(StackName("ticketing", cfg.Env, "data")),
		ptr(dataProps("Event ticketing", "Events, Registrations, Tickets and Users tables. Seed 002.")))
	NewTenantStack(app, jsii.String(StackName("tenant", cfg.Env, "data")), &TenantStackProps{
		DataStackProps: dataProps("Tenant", "TenantApiKeys and Events tables. Seed 003."),
		EventTypeIndex: cfg.TenantEventTypeIndex,
	})
	NewFerryhookStack(app, jsii.String(StackName("ferryhook", cfg.Env, "data")),
		ptr(dataProps("Ferryhook", "ferryhook-main and ferryhook-events tables. Seed 004.")))
}

func ptr[T any](v T) *T { return &v }

// importedEvents returns the attributes of the events table cfg names, or
// nil for the data stack's own.
func importedEvents(cfg Config) *eventstore.EventsTableAttributes {
	if cfg.EventsTableName == "" {
		return nil
	}
	return &eventstore.EventsTableAttributes{TableName: jsii.String(cfg.EventsTableName), TableStreamArn: jsii.String(cfg.EventsTableStreamArn), Profile: cfg.EventsProfile, Sharding: cfg.EventsSharding}
}

// StackName joins a system, an environment and a part into a stack name,
// such as "triggers-dev-data".
func StackName(system, env, part string) string {
	if part == "" {
		return system + "-" + env
	}
	return system + "-" + env + "-" + part
}

// swappedOut returns the data stack's own archive to watch beside the
// API stack's in a restore swap (an imported events table in a run that
// is no replica region's): it still archives what TTL deletes from the
// table the restored one replaced (it was unmonitored). None otherwise: a
// replica region's API stack depends on no data stack of its region.
func swappedOut(cfg Config, data *TriggersDataStack) map[string]*archive.ExpiredEventsArchive {
	if cfg.EventsTableName == "" || cfg.replicaRun() || data.Archive == nil {
		return nil
	}
	return map[string]*archive.ExpiredEventsArchive{"Data": data.Archive}
}
