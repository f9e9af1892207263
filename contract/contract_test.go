package contract_test

import (
	"slices"
	"testing"

	"github.com/triggers-dev/triggers/contract"
	"github.com/triggers-dev/triggers/internal/apikey"
	"github.com/triggers-dev/triggers/internal/appconfig"
	"github.com/triggers-dev/triggers/internal/emf"
)

// The runtime's own names are the contract's (a compile-time alias would
// make these trivially true; apikey.EnvSources is still its own constant,
// so this keeps the two in step).
func TestRuntimeUsesTheContractNames(t *testing.T) {
	for _, tt := range []struct{ name, got, want string }{
		{"apikey.EnvSources", apikey.EnvSources, contract.EnvAPIKeySources},
		{"appconfig.EnvAPIKeySources", appconfig.EnvAPIKeySources, contract.EnvAPIKeySources},
		{"appconfig.EnvEventsTable", appconfig.EnvEventsTable, contract.EnvEventsTable},
		{"appconfig.EnvDeliveryQueueURL", appconfig.EnvDeliveryQueueURL, contract.EnvDeliveryQueueURL},
		{"emf.MetricEventsIngested", emf.MetricEventsIngested, contract.MetricEventsIngested},
		{"emf.MetricEventsRejected", emf.MetricEventsRejected, contract.MetricEventsRejected},
		{"emf.DimensionReason", emf.DimensionReason, contract.DimensionReason},
	} {
		if tt.got != tt.want {
			t.Errorf("%s = %q, want %q (contract)", tt.name, tt.got, tt.want)
		}
	}
}

func TestPaths(t *testing.T) {
	want := []string{contract.PathEvents, contract.PathEventsBatch, contract.PathEvent, contract.PathInbox, contract.PathInboxAck}
	if got := contract.Paths(); !slices.Equal(got, want) {
		t.Errorf("Paths() = %v, want %v", got, want)
	}
}
