package assertions

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigateway"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscertificatemanager"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/jsii-runtime-go"

	"github.com/triggers-dev/triggers/constructs/dynamotable"
	"github.com/triggers-dev/triggers/constructs/eventstore"
	"github.com/triggers-dev/triggers/constructs/monitoring"
	"github.com/triggers-dev/triggers/constructs/triggersapi"
	_ "github.com/triggers-dev/triggers/internal/synth/jsiienv"
	"github.com/triggers-dev/triggers/internal/synth/jsiirt"
	"github.com/triggers-dev/triggers/internal/testkit/cdktest"
	_ "github.com/triggers-dev/triggers/internal/testkit/cdktest/skipvalidation" // TestCfnLint lints these templates; TestAppRunsQuietly validates the app once
	"github.com/triggers-dev/triggers/schema"
	"github.com/triggers-dev/triggers/stacks"
)

// Names of the test-only stacks, synthesized beside the real app's stacks.
const (
	stackProvisioned = "test-events-provisioned"
	stackCMK         = "test-events-cmk"
	stackConsumer    = "test-events-consumer"
	// stackTenantTypeIndex is seed 003's stack with the optional index on.
	stackTenantTypeIndex = "test-tenant-type-index"
	// stackApiOptions is a TriggersApi with every option set.
	stackApiOptions = "test-api-options"
	// stackMonitoringProvisioned monitors a provisioned table alone.
	stackMonitoringProvisioned = "test-monitoring-provisioned"
	// stackTableMonitoring is a TableMonitoring with every kind of alarm
	// (provisioned table with a GSI, a replica region).
	stackTableMonitoring = "test-table-monitoring"
	// stackLean is the lean events table profile (provisioned) with the
	// API and monitoring on it.
	stackLean = "test-events-lean"
	// stackFunctionOptions is a TriggersApi with webhooks whose functions
	// take the options of the CDK's Function: a VPC with a NAT (webhooks
	// from fixed addresses), provisioned concurrency, x86_64, layers, a
	// role and a log group of the deployer's; cdk-nag checks it too.
	stackFunctionOptions = "test-function-options"
	// stackTableOptions is an on-demand events table with every option of
	// the table surface, and an events table imported with its key;
	// cdk-nag checks it too.
	stackTableOptions = "test-table-options"
)

var (
	appStacks   []string // the real app's stacks, as stacks.Build makes them
	assemblyDir string
	templates   map[string]map[string]any
)

func TestMain(m *testing.M) {
	code, err := run(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, "assertions:", err)
		code = 1
	}
	os.Exit(code)
}

func run(m *testing.M) (int, error) {
	defer jsiirt.Close()
	dir, err := os.MkdirTemp("", "triggers-assertions-*")
	if err != nil {
		return 1, err
	}
	defer os.RemoveAll(dir)
	assemblyDir = filepath.Join(dir, "cdk.out")
	app, err := cdktest.NewApp(assemblyDir, map[string]any{"aws:cdk:version-reporting": false})
	if err != nil {
		return 1, err
	}
	cfg, err := stacks.ConfigFromContext(app)
	if err != nil {
		return 1, err
	}
	stacks.Build(app, cfg)
	// cdk-nag checks every stack of the real app (not the test variants).
	for _, c := range *app.Node().Children() {
		appStacks = append(appStacks, *c.Node().Id())
		stacks.CheckWithCdkNag(c)
	}
	buildTestStacks(app)
	if err := synth(app); err != nil {
		return 1, err
	}
	if templates, err = cdktest.Templates(assemblyDir); err != nil {
		return 1, err
	}
	return m.Run(), nil
}

// synth synthesizes the app; a validation failure (an unsuppressed
// cdk-nag finding, for one) returns the validation report as the error.
func synth(app awscdk.App) (err error) {
	defer func() {
		if r := recover(); r != nil {
			report, _ := os.ReadFile(filepath.Join(assemblyDir, "validation-report.json"))
			err = fmt.Errorf("synth failed: %v\n%s", r, report)
		}
	}()
	app.Synth(nil)
	return nil
}

// buildTestStacks adds the variants the real app does not deploy by default:
// provisioned billing, a customer-managed key with every option set, and a
// stack that imports the events table and grants each intent to a role.
func buildTestStacks(app awscdk.App) {
	p := awscdk.NewStack(app, jsii.String(stackProvisioned), nil)
	eventstore.NewEventsTable(p, jsii.String("Events"), &eventstore.EventsTableProps{
		TableOptions: dynamotable.TableOptions{Billing: dynamotable.Provisioned},
	})

	c := awscdk.NewStack(app, jsii.String(stackCMK), nil)
	key := awskms.NewKey(c, jsii.String("Key"), &awskms.KeyProps{EnableKeyRotation: jsii.Bool(true)})
	events := eventstore.NewEventsTable(c, jsii.String("Events"), &eventstore.EventsTableProps{
		TableOptions: dynamotable.TableOptions{
			EncryptionKey:       key,
			ContributorInsights: jsii.Bool(true),
			RecoveryPeriodDays:  7,
			Billing:             dynamotable.Provisioned,
			ReadScaling:         &dynamotable.Scaling{MinCapacity: 10, MaxCapacity: 400, TargetUtilizationPercent: 50},
			WriteScaling:        &dynamotable.Scaling{MinCapacity: 20, MaxCapacity: 800, TargetUtilizationPercent: 60},
		},
	})
	// The construct is a real jsii construct: it takes tags and children.
	awscdk.Tags_Of(events).Add(jsii.String("owner"), jsii.String("platform-team"), nil)
	awscdk.NewCfnOutput(events, jsii.String("ChildOutput"), &awscdk.CfnOutputProps{Value: events.TableName()})
	for _, intent := range []string{"Append", "ReadInbox", "UpdateStatus", "Stream"} {
		role := awsiam.NewRole(c, jsii.String("Local"+intent+"Role"), &awsiam.RoleProps{
			AssumedBy: awsiam.NewServicePrincipal(jsii.String("lambda.amazonaws.com"), nil),
		})
		grant(events, intent, role)
	}

	stacks.NewTenantStack(app, jsii.String(stackTenantTypeIndex), &stacks.TenantStackProps{EventTypeIndex: true})

	o := awscdk.NewStack(app, jsii.String(stackApiOptions), nil)
	cert := awscertificatemanager.Certificate_FromCertificateArn(o, jsii.String("Cert"), jsii.String("arn:aws:acm:us-east-1:111111111111:certificate/abc"))
	optionsApi := triggersapi.NewTriggersApi(o, jsii.String("Triggers"), &triggersapi.TriggersApiProps{
		StageName:            "v1stage",
		AuthorizerCacheTtl:   awscdk.Duration_Seconds(jsii.Number(0)),
		ThrottlingRateLimit:  50,
		ThrottlingBurstLimit: 75,
		LogRetention:         awslogs.RetentionDays_THREE_MONTHS,
		ExecutionLogging:     awsapigateway.MethodLoggingLevel_INFO,
		CloudWatchRole:       jsii.Bool(false),
		Tracing:              true,
		Cors:                 &awsapigateway.CorsOptions{AllowOrigins: jsii.Strings("https://app.example.com")},
		DomainName:           &awsapigateway.DomainNameOptions{DomainName: jsii.String("api.example.com"), Certificate: cert},
		WebAclArn:            jsii.String("arn:aws:wafv2:us-east-1:111111111111:regional/webacl/triggers/abc"),
		RetentionDays:        7,
		ApiFunction:          &triggersapi.FunctionOptions{MemoryMiB: 1024, Timeout: awscdk.Duration_Seconds(jsii.Number(20)), ReservedConcurrency: jsii.Number(50)},
		Delivery: &triggersapi.DeliveryOptions{
			Stream:          &dynamotable.StreamConsumerOptions{BatchSize: 10, RetryAttempts: 3, MaxRecordAge: awscdk.Duration_Hours(jsii.Number(6)), ParallelizationFactor: 2},
			MaxReceiveCount: 3,
		},
	})

	// Its monitoring: thresholds read from the functions (timeout 20 s,
	// reserved concurrency 50 for the API function), an on-call topic.
	monitoring.NewTriggersMonitoring(o, jsii.String("Monitoring"), &monitoring.TriggersMonitoringProps{
		Api:        optionsApi,
		AlarmTopic: awssns.Topic_FromTopicArn(o, jsii.String("OnCall"), jsii.String("arn:aws:sns:us-east-1:111111111111:on-call")),
		Thresholds: &monitoring.Thresholds{DurationPercentOfTimeout: 75, ConcurrencyPercent: 80, AccountConcurrencyLimit: 400, InboxLatencyP95Ms: 40},
	})

	tm := awscdk.NewStack(app, jsii.String(stackTableMonitoring), nil)
	orders := dynamotable.NewTable(tm, jsii.String("Orders"), &dynamotable.TableProps{
		Schema: &schema.Table{
			Name:          "orders",
			PartitionKey:  schema.S("customer_id"),
			SortKey:       schema.Ptr(schema.S("order_id")),
			GlobalIndexes: []schema.Index{{Name: "ByEmail", PartitionKey: schema.S("email")}},
		},
		TableOptions: dynamotable.TableOptions{Billing: dynamotable.Provisioned},
	})
	monitoring.NewTableMonitoring(tm, jsii.String("OrdersMonitoring"), &monitoring.TableMonitoringProps{
		Table: orders, ReplicaRegions: []string{"eu-west-1"},
	})

	mp := awscdk.NewStack(app, jsii.String(stackMonitoringProvisioned), nil)
	provisioned := eventstore.NewEventsTable(mp, jsii.String("Events"), &eventstore.EventsTableProps{
		TableOptions: dynamotable.TableOptions{Billing: dynamotable.Provisioned},
	})
	monitoring.NewTriggersMonitoring(mp, jsii.String("Monitoring"), &monitoring.TriggersMonitoringProps{
		EventsTable:           provisioned,
		EventsTableThresholds: &monitoring.TableThresholds{LatencyMs: map[string]float64{"PutItem": 25}, ConsumedCapacityPercent: 85},
		RunbookURL:            "https://runbooks.example.com/triggers",
	})

	buildFunctionOptionsStack(app)
	buildTableOptionsStack(app)

	l := awscdk.NewStack(app, jsii.String(stackLean), nil)
	lean := eventstore.NewEventsTable(l, jsii.String("Events"), &eventstore.EventsTableProps{
		Profile:      schema.ProfileLean,
		TableOptions: dynamotable.TableOptions{Billing: dynamotable.Provisioned},
	})
	leanApi := triggersapi.NewTriggersApi(l, jsii.String("Triggers"), &triggersapi.TriggersApiProps{EventsTable: lean, CloudWatchRole: jsii.Bool(true)})
	monitoring.NewTriggersMonitoring(l, jsii.String("Monitoring"), &monitoring.TriggersMonitoringProps{Api: leanApi})

	i := awscdk.NewStack(app, jsii.String(stackConsumer), nil)
	imported := eventstore.FromEventsTableAttributes(i, jsii.String("Events"), &eventstore.EventsTableAttributes{
		TableName:      jsii.String("events-made-elsewhere"),
		TableStreamArn: jsii.String("arn:aws:dynamodb:us-east-1:111111111111:table/events-made-elsewhere/stream/2025-11-11T10:00:00.000"),
	})
	for _, intent := range []string{"Append", "ReadInbox", "UpdateStatus", "Stream"} {
		role := awsiam.NewRole(i, jsii.String(intent+"Role"), &awsiam.RoleProps{
			AssumedBy: awsiam.NewServicePrincipal(jsii.String("lambda.amazonaws.com"), nil),
		})
		grant(imported, intent, role)
	}
}

func grant(t eventstore.IEventsTable, intent string, role awsiam.IRole) {
	switch intent {
	case "Append":
		t.GrantAppendEvents(role)
	case "ReadInbox":
		t.GrantReadInbox(role)
	case "UpdateStatus":
		t.GrantUpdateStatus(role)
	case "Stream":
		t.GrantStreamRead(role)
	}
}

// tmpl returns the named stack's template or fails the test.
func tmpl(t *testing.T, stack string) map[string]any {
	t.Helper()
	tp, ok := templates[stack]
	if !ok {
		t.Fatalf("no template for stack %q; have %v", stack, keys(templates))
	}
	return tp
}

// assemblyManifest is the part of cloud assembly's manifest.json the tests read.
type assemblyManifest struct {
	Artifacts map[string]struct {
		Type       string         `json:"type"`
		Properties map[string]any `json:"properties"`
		Metadata   map[string][]struct {
			Type string `json:"type"`
			Data any    `json:"data"`
		} `json:"metadata"`
	} `json:"artifacts"`
}

func manifest(t *testing.T) assemblyManifest {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(assemblyDir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m assemblyManifest
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
