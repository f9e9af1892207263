package assertions

import (
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/constructs/dynamotable"
	"github.com/triggers-dev/triggers/constructs/eventstore"
	"github.com/triggers-dev/triggers/internal/testkit/cdktest"
	"github.com/triggers-dev/triggers/stacks"
)

// importedKeyArn is the customer-managed key of the events table that
// stackTableOptions imports.
const importedKeyArn = "arn:aws:kms:us-east-1:111111111111:key/1234abcd-12ab-34cd-56ef-1234567890ab"

// buildTableOptionsStack adds stackTableOptions: an on-demand events
// table with every option of the table surface set (Standard-IA, on-demand
// maximums, warm throughput, contributor insights on the table and its
// indexes, deletion protection, a cross-account resource policy, a
// customer-managed key), and an events table of another stack imported
// with its key; each intent is granted on both. cdk-nag checks it.
func buildTableOptionsStack(app awscdk.App) {
	s := awscdk.NewStack(app, jsii.String(stackTableOptions), nil)
	key := awskms.NewKey(s, jsii.String("Key"), &awskms.KeyProps{EnableKeyRotation: jsii.Bool(true)})
	events := eventstore.NewEventsTable(s, jsii.String("Events"), &eventstore.EventsTableProps{TableOptions: dynamotable.TableOptions{
		TableClass:                   awsdynamodb.TableClass_STANDARD_INFREQUENT_ACCESS,
		MaxReadRequestUnits:          24000,
		MaxWriteRequestUnits:         8000,
		WarmThroughput:               &dynamotable.WarmThroughput{ReadUnitsPerSecond: 24000, WriteUnitsPerSecond: 8000},
		ContributorInsights:          jsii.Bool(true),
		ContributorInsightsMode:      awsdynamodb.ContributorInsightsMode_THROTTLED_KEYS,
		ContributorInsightsOnIndexes: jsii.Bool(true),
		DeletionProtection:           jsii.Bool(true),
		EncryptionKey:                key,
		ResourcePolicy: awsiam.NewPolicyDocument(&awsiam.PolicyDocumentProps{Statements: &[]awsiam.PolicyStatement{
			awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
				Sid:        jsii.String("ReportingAccountReads"),
				Principals: &[]awsiam.IPrincipal{awsiam.NewArnPrincipal(jsii.String("arn:aws:iam::222222222222:role/reporting"))},
				Actions:    jsii.Strings("dynamodb:GetItem", "dynamodb:Query"),
				Resources:  jsii.Strings("*"),
			}),
		}}),
	}})
	imported := eventstore.FromEventsTableAttributes(s, jsii.String("Imported"), &eventstore.EventsTableAttributes{
		TableName:      jsii.String("events-elsewhere"),
		TableStreamArn: jsii.String("arn:aws:dynamodb:us-east-1:111111111111:table/events-elsewhere/stream/2025-11-11T10:00:00.000"),
		EncryptionKey:  awskms.Key_FromKeyArn(s, jsii.String("ImportedKey"), jsii.String(importedKeyArn)),
	})
	for _, intent := range []string{"Append", "ReadInbox", "UpdateStatus", "Stream"} {
		for _, on := range []struct {
			prefix string
			table  eventstore.IEventsTable
		}{{"Local", events}, {"Imported", imported}} {
			role := awsiam.NewRole(s, jsii.String(on.prefix+intent+"Role"), &awsiam.RoleProps{
				AssumedBy: awsiam.NewServicePrincipal(jsii.String("lambda.amazonaws.com"), nil),
			})
			grant(on.table, intent, role)
			if intent == "Stream" {
				cdknag.NagSuppressions_AddResourceSuppressions(role, &[]*cdknag.NagPackSuppression{{
					Id:        jsii.String("AwsSolutions-IAM5"),
					Reason:    jsii.String("dynamodb:ListStreams supports no resource-level permissions; the stream read grant is scoped to the table's stream ARN"),
					AppliesTo: &[]any{"Resource::*"},
				}}, jsii.Bool(true))
			}
		}
	}
	stacks.CheckWithCdkNag(s)
}

// Every option of the table surface reaches the events table: the
// maximums and warm throughput on the table and on each GSI, the table
// class, contributor insights everywhere, deletion protection, the
// resource policy exactly as given (no grant lands in it) and the key.
func TestEventsTableEveryOption(t *testing.T) {
	tp := tmpl(t, stackTableOptions)
	p := cdktest.Props(eventsTable(t, stackTableOptions))
	keyID, _ := one(t, tp, "AWS::KMS::Key", "Key")
	assert.Equal(t, "PAY_PER_REQUEST", p["BillingMode"])
	assert.Equal(t, "STANDARD_INFREQUENT_ACCESS", p["TableClass"])
	assert.Equal(t, true, p["DeletionProtectionEnabled"])
	assert.JSONEq(t, `{"SSEEnabled":true,"SSEType":"KMS","KMSMasterKeyId":{"Fn::GetAtt":["`+keyID+`","Arn"]}}`, jsonOf(p["SSESpecification"]))
	const ondemand, warm, insights = `{"MaxReadRequestUnits":24000,"MaxWriteRequestUnits":8000}`, `{"ReadUnitsPerSecond":24000,"WriteUnitsPerSecond":8000}`, `{"Enabled":true,"Mode":"THROTTLED_KEYS"}`
	assert.JSONEq(t, ondemand, jsonOf(p["OnDemandThroughput"]))
	assert.JSONEq(t, warm, jsonOf(p["WarmThroughput"]))
	assert.JSONEq(t, insights, jsonOf(p["ContributorInsightsSpecification"]))
	gsis := p["GlobalSecondaryIndexes"].([]any)
	require.Len(t, gsis, 2)
	for _, g := range gsis {
		gm := g.(map[string]any)
		assert.JSONEq(t, ondemand, jsonOf(gm["OnDemandThroughput"]), "%s", gm["IndexName"])
		assert.JSONEq(t, warm, jsonOf(gm["WarmThroughput"]), "%s", gm["IndexName"])
		assert.JSONEq(t, insights, jsonOf(gm["ContributorInsightsSpecification"]), "%s", gm["IndexName"])
	}
	assert.JSONEq(t, `{"PolicyDocument":{"Version":"2012-10-17","Statement":[{
		"Sid":"ReportingAccountReads","Effect":"Allow","Resource":"*",
		"Action":["dynamodb:GetItem","dynamodb:Query"],
		"Principal":{"AWS":"arn:aws:iam::222222222222:role/reporting"}}]}}`, jsonOf(p["ResourcePolicy"]))
}

// The intent grants keep their exact actions on both the table built here
// and the imported one, and add the KMS actions on each table's own key:
// read-only intents (and the stream reader) get decrypt, the others the
// write set too.
func TestEventsTableOptionsGrants(t *testing.T) {
	tp := tmpl(t, stackTableOptions)
	keyID, _ := one(t, tp, "AWS::KMS::Key", "Key")
	read := []string{"kms:Decrypt", "kms:DescribeKey"}
	write := []string{"kms:Decrypt", "kms:DescribeKey", "kms:Encrypt", "kms:GenerateDataKey*", "kms:ReEncrypt*"}
	tests := []struct {
		intent  string
		actions []string
		kms     []string
	}{
		{"Append", eventstore.AppendActions(), write},
		{"ReadInbox", eventstore.ReadInboxActions(), read},
		{"UpdateStatus", eventstore.UpdateStatusActions(), write},
		{"Stream", nil, nil},
	}
	for _, prefix := range []string{"Local", "Imported"} {
		for _, tt := range tests {
			t.Run(prefix+"/"+tt.intent, func(t *testing.T) {
				var ddb, kms []statement
				for _, s := range roleStatements(t, tp, prefix+tt.intent+"Role") {
					if strings.HasPrefix(s.Actions[0], "kms:") {
						kms = append(kms, s)
					} else {
						ddb = append(ddb, s)
					}
				}
				require.NotEmpty(t, ddb)
				require.Len(t, kms, 1, "one KMS statement, on the table's key")
				if prefix == "Local" {
					assert.Equal(t, []any{map[string]any{"Fn::GetAtt": []any{keyID, "Arn"}}}, kms[0].Resources)
				} else {
					assert.Equal(t, []any{importedKeyArn}, kms[0].Resources)
				}
				if tt.actions == nil {
					assert.Equal(t, read, kms[0].Actions, "the stream reader decrypts only")
					return
				}
				require.Len(t, ddb, 1)
				assert.Equal(t, sorted(tt.actions), ddb[0].Actions)
				assert.Equal(t, tt.kms, kms[0].Actions)
			})
		}
	}
}
