package dynamotable_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/jsii-runtime-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/constructs/dynamotable"
	"github.com/triggers-dev/triggers/schema"
)

// Grants by intent: readers get the table and its indexes, writers the
// table only.
func ExampleNewTable_grants() {
	app := awscdk.NewApp(nil)
	stack := awscdk.NewStack(app, jsii.String("Grants"), nil)
	sc := schema.Events()
	table := dynamotable.NewTable(stack, jsii.String("Events"), &dynamotable.TableProps{Schema: &sc})

	reader := awsiam.NewRole(stack, jsii.String("Reader"), &awsiam.RoleProps{AssumedBy: awsiam.NewAccountRootPrincipal()})
	table.GrantReadData(reader)
	writer := awsiam.NewRole(stack, jsii.String("Writer"), &awsiam.RoleProps{AssumedBy: awsiam.NewAccountRootPrincipal()})
	table.GrantWriteData(writer)

	fmt.Println(dynamotable.ReadDataActions())
	fmt.Println(dynamotable.WriteDataActions())
	// Output:
	// [dynamodb:BatchGetItem dynamodb:ConditionCheckItem dynamodb:DescribeTable dynamodb:GetItem dynamodb:Query dynamodb:Scan]
	// [dynamodb:BatchWriteItem dynamodb:DeleteItem dynamodb:DescribeTable dynamodb:PutItem dynamodb:UpdateItem]
}

// statements returns the policy statements of role's default policy, as
// (actions, resources) with resources rendered as JSON.
func statements(t *testing.T, tmpl assertions.Template, role string) []map[string]any {
	t.Helper()
	raw, err := json.Marshal(tmpl.FindResources(jsii.String("AWS::IAM::Policy"), nil))
	require.NoError(t, err)
	var policies map[string]map[string]any
	require.NoError(t, json.Unmarshal(raw, &policies))
	for id, m := range policies {
		props := m["Properties"].(map[string]any)
		if !strings.HasPrefix(id, role+"DefaultPolicy") {
			continue
		}
		var out []map[string]any
		for _, s := range props["PolicyDocument"].(map[string]any)["Statement"].([]any) {
			out = append(out, s.(map[string]any))
		}
		return out
	}
	t.Fatalf("no policy for role %s", role)
	return nil
}

func actionsOf(s map[string]any) []string {
	switch a := s["Action"].(type) {
	case string:
		return []string{a}
	case []any:
		out := make([]string, len(a))
		for i, v := range a {
			out[i] = v.(string)
		}
		return out
	}
	return nil
}

// TestIntentGrants checks each intent grant's actions, resources (the
// table, every index or only the named ones) and KMS actions.
func TestIntentGrants(t *testing.T) {
	app := awscdk.NewApp(nil)
	stack := awscdk.NewStack(app, jsii.String("IntentGrants"), nil)
	sc := schema.Events()
	key := awskms.NewKey(stack, jsii.String("Key"), nil)
	table := dynamotable.NewTable(stack, jsii.String("Events"), &dynamotable.TableProps{Schema: &sc, TableOptions: dynamotable.TableOptions{EncryptionKey: key}})
	role := func(id string) awsiam.Role {
		return awsiam.NewRole(stack, jsii.String(id), &awsiam.RoleProps{AssumedBy: awsiam.NewAccountRootPrincipal()})
	}
	table.GrantReadData(role("Read"))
	table.GrantReadDataOnIndexes(role("ReadIndex"), schema.StatusIndex)
	table.GrantWriteData(role("Write"))
	table.GrantReadWriteData(role("ReadWrite"))
	assert.PanicsWithError(t, `table "events" has no index "Nope": use one of EventTypeIndex, StatusIndex`, func() {
		table.GrantReadDataOnIndexes(role("Bad"), "Nope")
	})
	tmpl := assertions.Template_FromStack(stack, nil)

	tests := []struct {
		role      string
		actions   []string
		resources int // table and index ARNs
		kms       []string
	}{
		{"Read", dynamotable.ReadDataActions(), 3, []string{"kms:Decrypt", "kms:DescribeKey"}},
		{"ReadIndex", []string{"dynamodb:Query", "dynamodb:Scan"}, 1, []string{"kms:Decrypt", "kms:DescribeKey"}},
		{"Write", dynamotable.WriteDataActions(), 1, []string{"kms:Decrypt", "kms:DescribeKey", "kms:Encrypt", "kms:ReEncrypt*", "kms:GenerateDataKey*"}},
		{"ReadWrite", dynamotable.ReadWriteDataActions(), 3, []string{"kms:Decrypt", "kms:DescribeKey", "kms:Encrypt", "kms:ReEncrypt*", "kms:GenerateDataKey*"}},
	}
	for _, tt := range tests {
		t.Run(tt.role, func(t *testing.T) {
			st := statements(t, tmpl, tt.role)
			require.Len(t, st, 2, "one DynamoDB and one KMS statement")
			assert.Equal(t, tt.actions, actionsOf(st[0]))
			res, ok := st[0]["Resource"].([]any)
			if !ok {
				res = []any{st[0]["Resource"]}
			}
			assert.Len(t, res, tt.resources)
			if tt.role == "ReadIndex" {
				b, _ := json.Marshal(res)
				assert.Contains(t, string(b), "/index/StatusIndex")
				assert.NotContains(t, string(b), "EventTypeIndex")
			}
			assert.Equal(t, tt.kms, actionsOf(st[1]))
		})
	}
}
