package contract_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/triggers-dev/triggers/contract"
)

// A round's hold covers its task's life on the retry queue and an hour,
// never less than the default.
func TestRoundHoldFor(t *testing.T) {
	assert.Equal(t, 6*time.Hour, contract.RoundHoldFor(5, 30*time.Minute), "the defaults: 2.5 h of receives")
	assert.Equal(t, 11*time.Hour, contract.RoundHoldFor(20, 30*time.Minute))
	assert.Equal(t, 8*time.Hour+30*time.Minute, contract.RoundHoldFor(5, 90*time.Minute), "a 15-minute function")
	assert.Equal(t, contract.DefaultRoundHold, contract.RoundHoldFor(1, time.Minute))
}
