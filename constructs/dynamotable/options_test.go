package dynamotable_test

import (
	"encoding/json"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/constructs/dynamotable"
	"github.com/triggers-dev/triggers/schema"
)

// crossAccountReads is a resource policy letting one role of another
// account read the table.
func crossAccountReads() awsiam.PolicyDocument {
	return policy(&awsiam.PolicyStatementProps{
		Sid:        jsii.String("ReportingReads"),
		Principals: &[]awsiam.IPrincipal{awsiam.NewArnPrincipal(jsii.String("arn:aws:iam::222222222222:role/reporting"))},
		Actions:    jsii.Strings("dynamodb:GetItem", "dynamodb:Query"),
		Resources:  jsii.Strings("*"),
	})
}

// Every option of an on-demand table reaches AWS::DynamoDB::Table: the
// cap and warm throughput on the table and on each GSI, the table class,
// the resource policy as given, the customer-managed key, contributor
// insights and deletion protection. Grants keep their exact actions and
// add the KMS statement; none lands in the resource policy.
func TestEveryOptionReachesTheTemplate(t *testing.T) {
	stack := awscdk.NewStack(awscdk.NewApp(nil), jsii.String("S"), nil)
	key := awskms.NewKey(stack, jsii.String("Key"), &awskms.KeyProps{EnableKeyRotation: jsii.Bool(true)})
	table := dynamotable.NewTable(stack, jsii.String("T"), &dynamotable.TableProps{Schema: events(), TableOptions: dynamotable.TableOptions{
		TableClass:           awsdynamodb.TableClass_STANDARD_INFREQUENT_ACCESS,
		MaxReadRequestUnits:  20000,
		MaxWriteRequestUnits: 8000,
		WarmThroughput:       &dynamotable.WarmThroughput{ReadUnitsPerSecond: 15000, WriteUnitsPerSecond: 6000},
		ResourcePolicy:       crossAccountReads(),
		EncryptionKey:        key,
		ContributorInsights:  jsii.Bool(true),
		DeletionProtection:   jsii.Bool(true),
	}})
	reader := awsiam.NewRole(stack, jsii.String("Reader"), &awsiam.RoleProps{AssumedBy: awsiam.NewServicePrincipal(jsii.String("lambda.amazonaws.com"), nil)})
	table.GrantReadWriteData(reader)
	table.GrantStreamRead(reader)

	tmpl := assertions.Template_FromStack(stack, nil)
	ondemand := map[string]any{"MaxReadRequestUnits": 20000, "MaxWriteRequestUnits": 8000}
	warm := map[string]any{"ReadUnitsPerSecond": 15000, "WriteUnitsPerSecond": 6000}
	index := func(name string) map[string]any {
		return map[string]any{"IndexName": name, "OnDemandThroughput": ondemand, "WarmThroughput": warm}
	}
	tmpl.HasResourceProperties(jsii.String("AWS::DynamoDB::Table"), map[string]any{
		"BillingMode":                      "PAY_PER_REQUEST",
		"TableClass":                       "STANDARD_INFREQUENT_ACCESS",
		"OnDemandThroughput":               ondemand,
		"WarmThroughput":                   warm,
		"DeletionProtectionEnabled":        true,
		"ContributorInsightsSpecification": map[string]any{"Enabled": true},
		"SSESpecification": map[string]any{
			"SSEEnabled": true, "SSEType": "KMS",
			"KMSMasterKeyId": map[string]any{"Fn::GetAtt": []any{*stack.GetLogicalId(key.Node().DefaultChild().(awskms.CfnKey)), "Arn"}},
		},
		"GlobalSecondaryIndexes": []any{index(schema.EventTypeIndex), index(schema.StatusIndex)},
		"ResourcePolicy": map[string]any{"PolicyDocument": map[string]any{
			"Version": "2012-10-17",
			"Statement": []any{map[string]any{
				"Sid": "ReportingReads", "Effect": "Allow", "Resource": "*",
				"Action":    []any{"dynamodb:GetItem", "dynamodb:Query"},
				"Principal": map[string]any{"AWS": "arn:aws:iam::222222222222:role/reporting"},
			}},
		}},
	})

	// The grants are the role's own: the resource policy is exactly as given.
	raw, err := json.Marshal(tmpl.FindResources(jsii.String("AWS::DynamoDB::Table"), nil))
	require.NoError(t, err)
	assert.Equal(t, 1, countOf(string(raw), `"Sid":"ReportingReads"`))
	assert.NotContains(t, string(raw), "Reader", "no grant went into the table's resource policy")
	var got [][]string
	for _, s := range statements(t, tmpl, "Reader") {
		got = append(got, actionsOf(s))
	}
	assert.Contains(t, got, dynamotable.ReadWriteDataActions())
	assert.Contains(t, got, []string{"kms:Decrypt", "kms:DescribeKey", "kms:Encrypt", "kms:ReEncrypt*", "kms:GenerateDataKey*"}, "the write grant's KMS actions")
	assertions.Annotations_FromStack(stack).HasNoWarning(jsii.String("*"), assertions.Match_AnyValue())
}

func countOf(s, sub string) int {
	n := 0
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			n++
		}
	}
	return n
}

// Options left unset keep the template free of their properties, so a
// table of earlier releases synthesizes unchanged; Standard set
// explicitly is written out.
func TestUnsetOptionsStayOutOfTheTemplate(t *testing.T) {
	stack := awscdk.NewStack(awscdk.NewApp(nil), jsii.String("S"), nil)
	plain := dynamotable.NewTable(stack, jsii.String("T"), &dynamotable.TableProps{Schema: events()})
	dynamotable.NewTable(stack, jsii.String("Std"), &dynamotable.TableProps{Schema: events(), TableOptions: dynamotable.TableOptions{
		TableClass: awsdynamodb.TableClass_STANDARD, WarmThroughput: &dynamotable.WarmThroughput{WriteUnitsPerSecond: 5000},
	}})
	tables := assertions.Template_FromStack(stack, nil).FindResources(jsii.String("AWS::DynamoDB::Table"), nil)
	for id, r := range *tables {
		raw, err := json.Marshal(r)
		require.NoError(t, err)
		if id == *stack.GetLogicalId(plain.CfnTable()) {
			for _, prop := range []string{"TableClass", "OnDemandThroughput", "WarmThroughput", "ResourcePolicy", "KMSMasterKeyId"} {
				assert.NotContains(t, string(raw), prop)
			}
			continue
		}
		assert.Contains(t, string(raw), `"TableClass":"STANDARD"`)
		assert.Contains(t, string(raw), `"WarmThroughput":{"WriteUnitsPerSecond":5000}`, "only the direction set")
		assert.NotContains(t, string(raw), "OnDemandThroughput")
	}
}

// A resource policy on a table under the AWS-managed key warns: other
// accounts cannot use that key.
func TestResourcePolicyWithAWSManagedKeyWarns(t *testing.T) {
	stack := awscdk.NewStack(awscdk.NewApp(nil), jsii.String("S"), nil)
	dynamotable.NewTable(stack, jsii.String("T"), &dynamotable.TableProps{Schema: events(), TableOptions: dynamotable.TableOptions{ResourcePolicy: crossAccountReads()}})
	assertions.Annotations_FromStack(stack).HasWarning(jsii.String("/S/T"), assertions.Match_StringLikeRegexp(jsii.String(`AWS-managed key.*\[ack: triggers:resource-policy-aws-managed-key\]`)))
}

// An imported table with a customer-managed key grants the KMS actions
// with every intent; without the key it grants none.
func TestImportedTableWithKeyGrantsKMS(t *testing.T) {
	stack := awscdk.NewStack(awscdk.NewApp(nil), jsii.String("S"), nil)
	key := awskms.Key_FromKeyArn(stack, jsii.String("Key"), jsii.String("arn:aws:kms:us-east-1:111111111111:key/1234abcd-12ab-34cd-56ef-1234567890ab"))
	withKey := dynamotable.FromTableAttributes(stack, jsii.String("WithKey"), &dynamotable.TableAttributes{Schema: events(), TableName: jsii.String("events-elsewhere"), EncryptionKey: key})
	plain := dynamotable.FromTableAttributes(stack, jsii.String("Plain"), &dynamotable.TableAttributes{Schema: events(), TableName: jsii.String("events-plain")})
	role := func(id string) awsiam.Role {
		return awsiam.NewRole(stack, jsii.String(id), &awsiam.RoleProps{AssumedBy: awsiam.NewServicePrincipal(jsii.String("lambda.amazonaws.com"), nil)})
	}
	withKey.GrantReadData(role("Read"))
	withKey.GrantWriteData(role("Write"))
	plain.GrantReadWriteData(role("PlainRole"))
	tmpl := assertions.Template_FromStack(stack, nil)
	for _, tt := range []struct {
		role string
		kms  []string
	}{
		{"Read", []string{"kms:Decrypt", "kms:DescribeKey"}},
		{"Write", []string{"kms:Decrypt", "kms:DescribeKey", "kms:Encrypt", "kms:ReEncrypt*", "kms:GenerateDataKey*"}},
	} {
		st := statements(t, tmpl, tt.role)
		require.Len(t, st, 2, "%s: one DynamoDB and one KMS statement", tt.role)
		assert.Equal(t, tt.kms, actionsOf(st[1]), tt.role)
		assert.Equal(t, "arn:aws:kms:us-east-1:111111111111:key/1234abcd-12ab-34cd-56ef-1234567890ab", st[1]["Resource"], tt.role)
	}
	assert.Len(t, statements(t, tmpl, "PlainRole"), 1, "no KMS statement without a key")
}

// Grants on a table with a customer-managed key pass cdk-nag: the write
// grants' two KMS action families are suppressed on the grantee with a
// reason, and only those.
func TestCustomerManagedKeyGrantsPassCdkNag(t *testing.T) {
	stack := awscdk.NewStack(awscdk.NewApp(nil), jsii.String("S"), nil)
	key := awskms.NewKey(stack, jsii.String("Key"), &awskms.KeyProps{EnableKeyRotation: jsii.Bool(true)})
	table := dynamotable.NewTable(stack, jsii.String("T"), &dynamotable.TableProps{Schema: events(), TableOptions: dynamotable.TableOptions{EncryptionKey: key}})
	writer := awsiam.NewRole(stack, jsii.String("Writer"), &awsiam.RoleProps{AssumedBy: awsiam.NewServicePrincipal(jsii.String("lambda.amazonaws.com"), nil)})
	table.GrantReadWriteData(writer)
	wild := awsiam.NewRole(stack, jsii.String("Wild"), &awsiam.RoleProps{AssumedBy: awsiam.NewServicePrincipal(jsii.String("lambda.amazonaws.com"), nil)})
	table.GrantWriteData(wild)
	wild.AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{Actions: jsii.Strings("kms:Get*"), Resources: jsii.Strings(*key.KeyArn())}))
	awscdk.Aspects_Of(stack).Add(cdknag.NewAwsSolutionsChecks(nil), nil)
	ann := assertions.Annotations_FromStack(stack)
	ann.HasNoError(jsii.String("/S/Writer/DefaultPolicy/Resource"), assertions.Match_AnyValue())
	ann.HasError(jsii.String("/S/Wild/DefaultPolicy/Resource"), assertions.Match_StringLikeRegexp(jsii.String(`AwsSolutions-IAM5\[Action::kms:Get\*\]`)))
	ann.HasNoError(jsii.String("/S/Wild/DefaultPolicy/Resource"), assertions.Match_StringLikeRegexp(jsii.String(`GenerateDataKey`)))
}
