// Package tablegrant is the low-level grant behind the tables' intent
// grants (dynamotable's GrantReadData..., eventstore's GrantAppendEvents...,
// triggersapi's ApiKeysTable.GrantAuthorize): exact actions on exact ARNs,
// plus the KMS actions a customer-managed key needs. It is internal: users
// grant by intent.
package tablegrant

import (
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/triggers-dev/triggers/constructs/internal/cdkutil"
)

// Table is what a grant needs of a table (dynamotable.ITable has it).
type Table interface {
	EncryptionKey() awskms.IKey
	// TableArn is the table's ARN (tablecore reads it through jsii once).
	TableArn() *string
	TableIndexArn(indexName string) *string
}

// On says where a grant applies.
type On struct {
	// Table includes the table's ARN.
	Table bool
	// Indexes adds the ARNs of these GSIs (not a wildcard).
	Indexes []string
	// Write grants the KMS actions for writing (encrypt, data keys) rather
	// than for reading only, when the table has a customer-managed key.
	Write bool
}

// KMS actions for reading and writing an encrypted table, as aws-cdk grants them.
var (
	kmsRead  = []string{"kms:Decrypt", "kms:DescribeKey"}
	kmsWrite = []string{"kms:Decrypt", "kms:DescribeKey", "kms:Encrypt", "kms:ReEncrypt*", "kms:GenerateDataKey*"}
)

// Grant gives grantee exactly actions on the resources on names.
func Grant(t Table, grantee awsiam.IGrantable, on On, actions ...string) awsiam.Grant {
	var arns []*string
	if on.Table {
		arns = append(arns, t.TableArn())
	}
	for _, ix := range on.Indexes {
		arns = append(arns, t.TableIndexArn(ix))
	}
	g := awsiam.Grant_AddToPrincipal(&awsiam.GrantOnPrincipalOptions{
		Grantee:      grantee,
		Actions:      jsii.Strings(actions...),
		ResourceArns: &arns,
	})
	if key := t.EncryptionKey(); key != nil {
		ka := kmsRead
		if on.Write {
			ka = kmsWrite
		}
		g = g.Combine(key.Grant(grantee, *jsii.Strings(ka...)...))
		if on.Write {
			suppressKMSWildcards(grantee)
		}
	}
	return g
}

// suppressKMSWildcards records why the write grant's two KMS action
// families pass cdk-nag's wildcard rule, on the grantee and on its
// principal when they are constructs (a function and its role, or a
// role): those two findings only, nothing else of theirs.
func suppressKMSWildcards(grantee awsiam.IGrantable) {
	const reason = "kms:GenerateDataKey* and kms:ReEncrypt* are the action families DynamoDB uses with a customer-managed table key, as aws-cdk's own table grants give them; the statement names only the table's key"
	targets := []any{grantee}
	if p := grantee.GrantPrincipal(); p != nil {
		targets = append(targets, p)
	}
	done := map[string]bool{}
	for _, t := range targets {
		c, ok := t.(constructs.IConstruct)
		if !ok || done[*c.Node().Path()] {
			continue
		}
		done[*c.Node().Path()] = true
		cdkutil.Suppress(c, "AwsSolutions-IAM5", reason, "Action::kms:GenerateDataKey*", "Action::kms:ReEncrypt*")
	}
}
