package cdkutil

import (
	"math"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"
	"github.com/stretchr/testify/assert"

	_ "github.com/triggers-dev/triggers/internal/synth/jsiienv" // before any jsii package
	"github.com/triggers-dev/triggers/internal/synth/jsiirt"
)

func TestMain(m *testing.M) { jsiirt.RunTests(m) }

// IsNumberToken answers as aws-cdk-lib's Token.isUnresolved does for the
// same float64, for tokens the library makes and for plain numbers,
// including ones near the marker.
func TestIsNumberTokenAgreesWithTheLibrary(t *testing.T) {
	tokens := []float64{
		*awscdk.Token_AsNumber(awscdk.Aws_ACCOUNT_ID()),
		*awscdk.Token_AsNumber(awscdk.Aws_REGION()),
		*awscdk.Token_AsNumber(awscdk.Fn_GetAtt(jsii.String("R"), jsii.String("Count"))),
	}
	plain := []float64{0, 1, -1, 12000, 0.5, 1e300, -1e300, math.MaxFloat64, -math.MaxFloat64,
		math.Float64frombits(0xFBFE_FFFF_FFFF_FFFF), math.Float64frombits(0xFC00_0000_0000_0000),
		math.Float64frombits(0x7BFF_0000_0000_0001)}
	for _, v := range tokens {
		assert.True(t, *awscdk.Token_IsUnresolved(jsii.Number(v)), "the library's token %v", v)
		assert.True(t, IsNumberToken(v), "the library's token %v", v)
	}
	for _, v := range plain {
		assert.Equal(t, *awscdk.Token_IsUnresolved(jsii.Number(v)), IsNumberToken(v), "%v", v)
		assert.False(t, IsNumberToken(v), "%v", v)
	}
}
