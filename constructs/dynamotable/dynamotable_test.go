package dynamotable_test

import (
	"fmt"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/constructs/dynamotable"
	"github.com/triggers-dev/triggers/constructs/internal/tablecore"
	_ "github.com/triggers-dev/triggers/internal/synth/jsiienv"
	"github.com/triggers-dev/triggers/internal/synth/jsiirt"
	"github.com/triggers-dev/triggers/schema"
)

func TestMain(m *testing.M) { jsiirt.RunTests(m) }

func events() *schema.Table {
	s := schema.Events()
	return &s
}

func TestValidatePropsRejects(t *testing.T) {
	badSchema := schema.Events()
	badSchema.GlobalIndexes[1].Name = schema.EventTypeIndex
	ttlKey := schema.Events()
	ttlKey.TTLAttribute = schema.AttrUserID
	prov := dynamotable.Provisioned
	tests := []struct {
		name  string
		props *dynamotable.TableProps
		want  string
	}{
		{"nil props", nil, "props.Schema is required"},
		{"no schema", &dynamotable.TableProps{}, "props.Schema is required"},
		{"duplicate index names", &dynamotable.TableProps{Schema: &badSchema}, `index name "EventTypeIndex" is used twice`},
		{"TTL attribute is a key", &dynamotable.TableProps{Schema: &ttlKey}, `TTL attribute "user_id" of table "events" is also a primary key attribute`},
		{"unknown billing", &dynamotable.TableProps{Schema: events(), TableOptions: dynamotable.TableOptions{Billing: "FREE"}}, `billing "FREE" is unknown: use dynamotable.OnDemand or dynamotable.Provisioned`},
		{"scaling with on-demand", &dynamotable.TableProps{Schema: events(), TableOptions: dynamotable.TableOptions{ReadScaling: &dynamotable.Scaling{MaxCapacity: 10}}}, "ReadScaling is set but billing is on-demand: set Billing: dynamotable.Provisioned, or remove ReadScaling"},
		{"min greater than max", &dynamotable.TableProps{Schema: events(), TableOptions: dynamotable.TableOptions{Billing: prov, WriteScaling: &dynamotable.Scaling{MinCapacity: 200, MaxCapacity: 100}}}, "WriteScaling.MinCapacity 200 is greater than MaxCapacity 100: raise MaxCapacity or lower MinCapacity"},
		{"default min greater than max", &dynamotable.TableProps{Schema: events(), TableOptions: dynamotable.TableOptions{Billing: prov, ReadScaling: &dynamotable.Scaling{MaxCapacity: 3}}}, "ReadScaling.MinCapacity 5 is greater than MaxCapacity 3"},
		{"negative min", &dynamotable.TableProps{Schema: events(), TableOptions: dynamotable.TableOptions{Billing: prov, ReadScaling: &dynamotable.Scaling{MinCapacity: -1}}}, "ReadScaling.MinCapacity -1 is below 1"},
		{"target below 20", &dynamotable.TableProps{Schema: events(), TableOptions: dynamotable.TableOptions{Billing: prov, ReadScaling: &dynamotable.Scaling{TargetUtilizationPercent: 10}}}, "ReadScaling.TargetUtilizationPercent 10 is outside 20-90"},
		{"target above 90", &dynamotable.TableProps{Schema: events(), TableOptions: dynamotable.TableOptions{Billing: prov, WriteScaling: &dynamotable.Scaling{TargetUtilizationPercent: 95}}}, "WriteScaling.TargetUtilizationPercent 95 is outside 20-90"},
		{"fractional capacity", &dynamotable.TableProps{Schema: events(), TableOptions: dynamotable.TableOptions{Billing: prov, ReadScaling: &dynamotable.Scaling{MinCapacity: 5.5, MaxCapacity: 10}}}, "ReadScaling.MinCapacity 5.5 is not a whole number"},
		{"fractional max capacity", &dynamotable.TableProps{Schema: events(), TableOptions: dynamotable.TableOptions{Billing: prov, WriteScaling: &dynamotable.Scaling{MaxCapacity: 99.9}}}, "WriteScaling.MaxCapacity 99.9 is not a whole number"},
		{"recovery period above 35", &dynamotable.TableProps{Schema: events(), TableOptions: dynamotable.TableOptions{RecoveryPeriodDays: 36}}, "RecoveryPeriodDays 36 is outside 1-35"},
		{"recovery period below 1", &dynamotable.TableProps{Schema: events(), TableOptions: dynamotable.TableOptions{RecoveryPeriodDays: -3}}, "RecoveryPeriodDays -3 is outside 1-35"},
		{"fractional recovery period", &dynamotable.TableProps{Schema: events(), TableOptions: dynamotable.TableOptions{RecoveryPeriodDays: 1.5}}, "RecoveryPeriodDays 1.5 is outside 1-35"},
		{"recovery period without PITR", &dynamotable.TableProps{Schema: events(), TableOptions: dynamotable.TableOptions{PointInTimeRecovery: jsii.Bool(false), RecoveryPeriodDays: 7}}, "RecoveryPeriodDays 7 is set but PointInTimeRecovery is off"},
		{"unknown table class", &dynamotable.TableProps{Schema: events(), TableOptions: dynamotable.TableOptions{TableClass: "GLACIER"}}, `TableClass "GLACIER" is unknown: use awsdynamodb.TableClass_STANDARD (the default) or awsdynamodb.TableClass_STANDARD_INFREQUENT_ACCESS`},
		{"max read on provisioned", &dynamotable.TableProps{Schema: events(), TableOptions: dynamotable.TableOptions{Billing: prov, MaxReadRequestUnits: 100}}, "MaxReadRequestUnits 100 is set but billing is provisioned: a provisioned table is capped by ReadScaling.MaxCapacity; remove MaxReadRequestUnits, or use on-demand billing"},
		{"max write on provisioned", &dynamotable.TableProps{Schema: events(), TableOptions: dynamotable.TableOptions{Billing: prov, MaxWriteRequestUnits: 100}}, "MaxWriteRequestUnits 100 is set but billing is provisioned: a provisioned table is capped by WriteScaling.MaxCapacity"},
		{"negative max read", &dynamotable.TableProps{Schema: events(), TableOptions: dynamotable.TableOptions{MaxReadRequestUnits: -1}}, "MaxReadRequestUnits -1 is not a whole number of at least 1"},
		{"fractional max write", &dynamotable.TableProps{Schema: events(), TableOptions: dynamotable.TableOptions{MaxWriteRequestUnits: 10.5}}, "MaxWriteRequestUnits 10.5 is not a whole number of at least 1"},
		{"empty warm throughput", &dynamotable.TableProps{Schema: events(), TableOptions: dynamotable.TableOptions{WarmThroughput: &dynamotable.WarmThroughput{}}}, "WarmThroughput sets neither ReadUnitsPerSecond nor WriteUnitsPerSecond: give the peak units per second to pre-warm for, or remove WarmThroughput"},
		{"warm reads below the start", &dynamotable.TableProps{Schema: events(), TableOptions: dynamotable.TableOptions{WarmThroughput: &dynamotable.WarmThroughput{ReadUnitsPerSecond: 5000}}}, "WarmThroughput.ReadUnitsPerSecond 5000 is below 12000, the warm throughput every new table and index starts with: give the peak you expect (at least 12000), or leave it 0"},
		{"warm writes below the start", &dynamotable.TableProps{Schema: events(), TableOptions: dynamotable.TableOptions{WarmThroughput: &dynamotable.WarmThroughput{WriteUnitsPerSecond: 1000}}}, "WarmThroughput.WriteUnitsPerSecond 1000 is below 4000"},
		{"fractional warm writes", &dynamotable.TableProps{Schema: events(), TableOptions: dynamotable.TableOptions{WarmThroughput: &dynamotable.WarmThroughput{WriteUnitsPerSecond: 4000.5}}}, "WarmThroughput.WriteUnitsPerSecond 4000.5 is not a whole number"},
		{"warm above the cap", &dynamotable.TableProps{Schema: events(), TableOptions: dynamotable.TableOptions{MaxWriteRequestUnits: 5000, WarmThroughput: &dynamotable.WarmThroughput{WriteUnitsPerSecond: 8000}}}, "WarmThroughput.WriteUnitsPerSecond 8000 is above MaxWriteRequestUnits 5000: the table never serves more than its maximum, so the pre-warming is paid for nothing; lower WarmThroughput.WriteUnitsPerSecond or raise MaxWriteRequestUnits"},
		{"empty resource policy", &dynamotable.TableProps{Schema: events(), TableOptions: dynamotable.TableOptions{ResourcePolicy: awsiam.NewPolicyDocument(nil)}}, "ResourcePolicy has no statements: add the statements that let other accounts in, or remove ResourcePolicy"},
		{"resource policy to anyone", &dynamotable.TableProps{Schema: events(), TableOptions: dynamotable.TableOptions{ResourcePolicy: policy(&awsiam.PolicyStatementProps{
			Sid: jsii.String("Open"), Principals: &[]awsiam.IPrincipal{awsiam.NewAnyPrincipal()}, Actions: jsii.Strings("dynamodb:GetItem"), Resources: jsii.Strings("*"),
		})}}, `ResourcePolicy statement "Open" allows every principal ("*") without a Condition: anyone in any AWS account could use the table; name the principals (awsiam.NewAccountPrincipal, awsiam.NewArnPrincipal), or add a Condition such as aws:PrincipalOrgID`},
		{"resource policy to the star principal", &dynamotable.TableProps{Schema: events(), TableOptions: dynamotable.TableOptions{ResourcePolicy: policy(&awsiam.PolicyStatementProps{
			Principals: &[]awsiam.IPrincipal{awsiam.NewStarPrincipal()}, Actions: jsii.Strings("dynamodb:Query"), Resources: jsii.Strings("*"),
		})}}, `ResourcePolicy statement 0 allows every principal ("*") without a Condition`},
		{"resource policy without principal", &dynamotable.TableProps{Schema: events(), TableOptions: dynamotable.TableOptions{ResourcePolicy: policy(&awsiam.PolicyStatementProps{
			Actions: jsii.Strings("dynamodb:GetItem"), Resources: jsii.Strings("*"),
		})}}, "ResourcePolicy statement 0 names no principal: a resource policy says who it lets in; add Principals (awsiam.NewAccountPrincipal, awsiam.NewArnPrincipal)"},
		{"resource policy with another service's action", &dynamotable.TableProps{Schema: events(), TableOptions: dynamotable.TableOptions{ResourcePolicy: policy(&awsiam.PolicyStatementProps{
			Principals: &[]awsiam.IPrincipal{awsiam.NewAccountPrincipal(jsii.String("222222222222"))}, Actions: jsii.Strings("dynamodb:GetItem", "s3:GetObject"), Resources: jsii.Strings("*"),
		})}}, `ResourcePolicy statement 0 has action "s3:GetObject": a table's resource policy takes dynamodb: actions only`},
		{"resource policy without actions", &dynamotable.TableProps{Schema: events(), TableOptions: dynamotable.TableOptions{ResourcePolicy: policy(&awsiam.PolicyStatementProps{
			Principals: &[]awsiam.IPrincipal{awsiam.NewAccountPrincipal(jsii.String("222222222222"))}, Resources: jsii.Strings("*"),
		})}}, "ResourcePolicy statement 0 has no actions: list the dynamodb: actions it allows or denies"},
		{"resource policy over 20 KB", &dynamotable.TableProps{Schema: events(), TableOptions: dynamotable.TableOptions{ResourcePolicy: bigPolicy()}}, "over DynamoDB's limit of 20480: merge statements"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := dynamotable.ValidateProps(tt.props)
			require.Error(t, err, "ValidateProps = nil, want an error containing %q", tt.want)
			assert.Contains(t, err.Error(), tt.want)

			// NewTable fails the same way, naming the construct, and adds nothing.
			stack := awscdk.NewStack(awscdk.NewApp(nil), jsii.String("S"), nil)
			assert.PanicsWithError(t, `dynamotable "Bad": invalid props:`+"\n"+err.Error(), func() {
				dynamotable.NewTable(stack, jsii.String("Bad"), tt.props)
			})
			assert.Nil(t, stack.Node().TryFindChild(jsii.String("Bad")), "no construct is left behind")
		})
	}
}

func TestValidatePropsAcceptsTokens(t *testing.T) {
	stack := awscdk.NewStack(awscdk.NewApp(nil), jsii.String("S"), nil)
	max := awscdk.NewCfnParameter(stack, jsii.String("Max"), &awscdk.CfnParameterProps{Type: jsii.String("Number")})
	props := &dynamotable.TableProps{Schema: events(), TableOptions: dynamotable.TableOptions{
		Billing: dynamotable.Provisioned, ReadScaling: &dynamotable.Scaling{MaxCapacity: *max.ValueAsNumber()},
	}}
	assert.NoError(t, dynamotable.ValidateProps(props), "a deploy-time value is not checked at synth")
	assert.NoError(t, dynamotable.ValidateProps(&dynamotable.TableProps{Schema: events(), TableOptions: dynamotable.TableOptions{
		MaxWriteRequestUnits: *max.ValueAsNumber(), WarmThroughput: &dynamotable.WarmThroughput{WriteUnitsPerSecond: *max.ValueAsNumber()},
	}}), "deploy-time maximums and warm throughput are not checked at synth")
}

// policy returns a resource policy of one statement.
func policy(st *awsiam.PolicyStatementProps) awsiam.PolicyDocument {
	return awsiam.NewPolicyDocument(&awsiam.PolicyDocumentProps{Statements: &[]awsiam.PolicyStatement{awsiam.NewPolicyStatement(st)}})
}

// bigPolicy returns a valid resource policy over DynamoDB's 20 KB.
func bigPolicy() awsiam.PolicyDocument {
	var sts []awsiam.PolicyStatement
	for i := range 200 {
		sts = append(sts, awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid:        jsii.String(fmt.Sprintf("Reader%d", i)),
			Principals: &[]awsiam.IPrincipal{awsiam.NewArnPrincipal(jsii.String(fmt.Sprintf("arn:aws:iam::222222222222:role/reader-%d", i)))},
			Actions:    jsii.Strings("dynamodb:GetItem", "dynamodb:Query"),
			Resources:  jsii.Strings("*"),
		}))
	}
	return awsiam.NewPolicyDocument(&awsiam.PolicyDocumentProps{Statements: &sts})
}

// Sensible values of the throughput, class and policy options pass,
// including an Allow to "*" narrowed by a Condition and a Deny to "*".
func TestValidatePropsAcceptsOptions(t *testing.T) {
	doc := awsiam.NewPolicyDocument(&awsiam.PolicyDocumentProps{Statements: &[]awsiam.PolicyStatement{
		awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Principals: &[]awsiam.IPrincipal{awsiam.NewAnyPrincipal()}, Actions: jsii.Strings("dynamodb:GetItem"), Resources: jsii.Strings("*"),
			Conditions: &map[string]any{"StringEquals": map[string]any{"aws:PrincipalOrgID": "o-abc123"}},
		}),
		awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Effect: awsiam.Effect_DENY, Principals: &[]awsiam.IPrincipal{awsiam.NewAnyPrincipal()}, Actions: jsii.Strings("dynamodb:DeleteItem"), Resources: jsii.Strings("*"),
		}),
	}})
	assert.NoError(t, dynamotable.ValidateProps(&dynamotable.TableProps{Schema: events(), TableOptions: dynamotable.TableOptions{
		TableClass:          awsdynamodb.TableClass_STANDARD_INFREQUENT_ACCESS,
		MaxReadRequestUnits: 12000, MaxWriteRequestUnits: 4000,
		WarmThroughput: &dynamotable.WarmThroughput{ReadUnitsPerSecond: 12000, WriteUnitsPerSecond: 4000},
		ResourcePolicy: doc,
	}}))
	assert.NoError(t, dynamotable.ValidateProps(&dynamotable.TableProps{Schema: events(), TableOptions: dynamotable.TableOptions{
		Billing: dynamotable.Provisioned, WarmThroughput: &dynamotable.WarmThroughput{WriteUnitsPerSecond: 10000},
	}}), "a provisioned table can be pre-warmed too")
}

func TestValidatePropsAcceptsDefaults(t *testing.T) {
	assert.NoError(t, dynamotable.ValidateProps(&dynamotable.TableProps{Schema: events()}))
	assert.NoError(t, dynamotable.ValidateProps(&dynamotable.TableProps{Schema: events(), TableOptions: dynamotable.TableOptions{
		Billing: dynamotable.Provisioned, ReadScaling: &dynamotable.Scaling{MinCapacity: 1, MaxCapacity: 1, TargetUtilizationPercent: 20},
		WriteScaling: &dynamotable.Scaling{TargetUtilizationPercent: 90}, RecoveryPeriodDays: 1,
	}}))
}

// Risky settings synthesize, with a warning that says what is at stake.
func TestRiskySettingsWarn(t *testing.T) {
	stack := awscdk.NewStack(awscdk.NewApp(nil), jsii.String("S"), nil)
	dynamotable.NewTable(stack, jsii.String("Scratch"), &dynamotable.TableProps{Schema: events(), TableOptions: dynamotable.TableOptions{
		PointInTimeRecovery: jsii.Bool(false), DeletionProtection: jsii.Bool(false), RemovalPolicy: awscdk.RemovalPolicy_DESTROY,
	}})
	ann := assertions.Annotations_FromStack(stack)
	for _, want := range []string{"point-in-time recovery is off", "deletion protection is off", "removal policy DESTROY"} {
		ann.HasWarning(jsii.String("/S/Scratch"), assertions.Match_StringLikeRegexp(jsii.String(want)))
	}
	tmpl := assertions.Template_FromStack(stack, nil)
	tmpl.HasResource(jsii.String("AWS::DynamoDB::Table"), map[string]any{
		"DeletionPolicy": "Delete",
		"Properties": map[string]any{
			"DeletionProtectionEnabled":        false,
			"PointInTimeRecoverySpecification": map[string]any{"PointInTimeRecoveryEnabled": false},
		},
	})
}

// DESTROY with deletion protection left on cannot be deleted with its stack.
func TestDestroyWithDeletionProtectionWarns(t *testing.T) {
	stack := awscdk.NewStack(awscdk.NewApp(nil), jsii.String("S"), nil)
	dynamotable.NewTable(stack, jsii.String("T"), &dynamotable.TableProps{Schema: events(), TableOptions: dynamotable.TableOptions{
		RemovalPolicy: awscdk.RemovalPolicy_DESTROY,
	}})
	assertions.Annotations_FromStack(stack).HasWarning(jsii.String("/S/T"), assertions.Match_StringLikeRegexp(jsii.String("deleting the stack fails on this table")))
}

// Schema risks reach the construct as synth warnings, and a reviewed one
// can be acknowledged.
func TestSchemaWarningsThroughNewTable(t *testing.T) {
	stack := awscdk.NewStack(awscdk.NewApp(nil), jsii.String("S"), nil)
	keys := schema.Table{Name: "keys", PartitionKey: schema.S("api_key")}
	byStatus := schema.Table{Name: "orders", PartitionKey: schema.S("id"), GlobalIndexes: []schema.Index{
		{Name: "ByStatus", PartitionKey: schema.S("status"), Projection: schema.KeysOnly()},
	}}
	dynamotable.NewTable(stack, jsii.String("Keys"), &dynamotable.TableProps{Schema: &keys})
	dynamotable.NewTable(stack, jsii.String("Orders"), &dynamotable.TableProps{Schema: &byStatus})
	acked := dynamotable.NewTable(stack, jsii.String("Acked"), &dynamotable.TableProps{Schema: &byStatus})
	awscdk.Annotations_Of(acked).AcknowledgeWarning(jsii.String("triggers:low-cardinality-index-key"), jsii.String("reviewed"))
	ann := assertions.Annotations_FromStack(stack)
	ann.HasWarning(jsii.String("/S/Keys"), assertions.Match_StringLikeRegexp(jsii.String("api_key.*\\[ack: triggers:secret-in-key\\]")))
	ann.HasWarning(jsii.String("/S/Orders"), assertions.Match_StringLikeRegexp(jsii.String("ByStatus.*\\[ack: triggers:low-cardinality-index-key\\]")))
	ann.HasNoWarning(jsii.String("/S/Acked"), assertions.Match_AnyValue())
}

func TestSafeDefaultsDoNotWarn(t *testing.T) {
	stack := awscdk.NewStack(awscdk.NewApp(nil), jsii.String("S"), nil)
	dynamotable.NewTable(stack, jsii.String("T"), &dynamotable.TableProps{Schema: events()})
	assertions.Annotations_FromStack(stack).HasNoWarning(jsii.String("*"), assertions.Match_AnyValue())
}

func TestImportValidation(t *testing.T) {
	stack := awscdk.NewStack(awscdk.NewApp(nil), jsii.String("S"), nil)
	assert.PanicsWithError(t, `dynamotable "I": attrs.Schema is required: pass the imported table's description`, func() {
		dynamotable.FromTableAttributes(stack, jsii.String("I"), &dynamotable.TableAttributes{TableName: jsii.String("x")})
	})
	assert.PanicsWithError(t, `dynamotable "I": give attrs.TableName or attrs.TableArn to identify the imported table`, func() {
		dynamotable.FromTableAttributes(stack, jsii.String("I"), &dynamotable.TableAttributes{Schema: events()})
	})
	invalid := schema.Events()
	invalid.GlobalIndexes[1].Name = schema.EventTypeIndex
	assert.PanicsWithError(t, "dynamotable \"I\": invalid schema:\nindex name \"EventTypeIndex\" is used twice in table \"events\": give each index its own name", func() {
		dynamotable.FromTableAttributes(stack, jsii.String("I"), &dynamotable.TableAttributes{Schema: &invalid, TableName: jsii.String("x")})
	})
	imp := dynamotable.FromTableAttributes(stack, jsii.String("I"), &dynamotable.TableAttributes{Schema: events(), TableName: jsii.String("made-elsewhere")})
	assert.Equal(t, "made-elsewhere", *imp.TableName())
	assert.PanicsWithError(t, `table "events" has no index "Nope": use one of EventTypeIndex, StatusIndex`, func() { imp.TableIndexArn("Nope") })
	assert.Panics(t, func() { imp.MetricForIndex("Nope", "ReadThrottleEvents", nil) }, "a metric of an index the table does not have")
	noStream := schema.Table{Name: "plain", PartitionKey: schema.S("pk")}
	plain := dynamotable.FromTableAttributes(stack, jsii.String("P"), &dynamotable.TableAttributes{Schema: &noStream, TableName: jsii.String("plain")})
	assert.PanicsWithError(t, `table "plain" has no stream: set Stream in its schema (for example schema.StreamNewImage) before granting stream reads`, func() {
		plain.GrantStreamRead(nil)
	})
}

// ownTable is a table construct with a type of its own, as
// eventstore.EventsTable is.
type ownTable struct {
	constructs.Construct
	*tablecore.Core
}

type ownImport struct {
	constructs.Construct
	*tablecore.Accessors
}

// BuildInto and ImportInto make a table construct of another type, which is
// the construct itself (its path, its children), and set a table's state
// once: a core or accessors already set, or nil, panic naming the fix.
func TestBuildIntoAndImportIntoSetATableOnce(t *testing.T) {
	stack := awscdk.NewStack(awscdk.NewApp(nil), jsii.String("S"), nil)
	own := &ownTable{Core: &tablecore.Core{}}
	dynamotable.BuildInto(own, own.Core, stack, jsii.String("Own"), &dynamotable.TableProps{Schema: events()})
	assert.Equal(t, "S/Own/Resource", *own.Node().DefaultChild().Node().Path())
	assert.Equal(t, string(dynamotable.OnDemand), own.BillingMode())
	assert.PanicsWithError(t, `dynamotable "Again": BuildInto takes a new core (&tablecore.Core{}), not nil or one already built`, func() {
		dynamotable.BuildInto(&ownTable{Core: own.Core}, own.Core, stack, jsii.String("Again"), &dynamotable.TableProps{Schema: events()})
	})
	assert.PanicsWithError(t, `dynamotable "Nil": BuildInto takes a new core (&tablecore.Core{}), not nil or one already built`, func() {
		dynamotable.BuildInto(&ownTable{}, nil, stack, jsii.String("Nil"), &dynamotable.TableProps{Schema: events()})
	})

	imp := &ownImport{Accessors: &tablecore.Accessors{}}
	dynamotable.ImportInto(imp, imp.Accessors, stack, jsii.String("Imp"), &dynamotable.TableAttributes{Schema: events(), TableName: jsii.String("made-elsewhere")})
	assert.Equal(t, "made-elsewhere", *imp.TableName())
	assert.Equal(t, "S/Imp", *imp.Node().Path())
	assert.PanicsWithError(t, `dynamotable "Again": ImportInto takes new accessors (&tablecore.Accessors{}), not nil or ones already set`, func() {
		dynamotable.ImportInto(&ownImport{Accessors: imp.Accessors}, imp.Accessors, stack, jsii.String("Again"), &dynamotable.TableAttributes{Schema: events(), TableName: jsii.String("other")})
	})
	assert.Equal(t, "made-elsewhere", *imp.TableName(), "the failed import changed nothing")
	assert.PanicsWithError(t, `dynamotable "Again": ImportInto takes new accessors (&tablecore.Accessors{}), not nil or ones already set`, func() {
		dynamotable.ImportInto(&ownImport{}, nil, stack, jsii.String("Again"), &dynamotable.TableAttributes{Schema: events(), TableName: jsii.String("other")})
	})
}
