package dynamotable

import (
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"
	"github.com/stretchr/testify/assert"
)

// A MaxRecordAge known only at deploy time (a duration of a parameter) is
// not checked at synth: the bound of 23 hours applies to literal values.
func TestStreamMaxRecordAgeTokenIsNotChecked(t *testing.T) {
	stack := awscdk.NewStack(awscdk.NewApp(nil), jsii.String("S"), nil)
	n := awscdk.NewCfnParameter(stack, jsii.String("N"), &awscdk.CfnParameterProps{Type: jsii.String("Number")}).ValueAsNumber()
	assert.NoError(t, StreamConsumerOptions{MaxRecordAge: awscdk.Duration_Seconds(n)}.validate())
	assert.NoError(t, StreamConsumerOptions{MaxRecordAge: awscdk.Duration_Hours(n)}.validate())
}
