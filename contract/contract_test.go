package contract_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/triggers-dev/triggers/contract"
	"github.com/triggers-dev/triggers/internal/apikey"
	"github.com/triggers-dev/triggers/internal/emf"
	"github.com/triggers-dev/triggers/lambda/fnconfig"
)

// The runtime's own names are the contract's (a compile-time alias would
// make these trivially true; apikey.EnvSources is still its own constant,
// so this keeps the two in step).
func TestRuntimeUsesTheContractNames(t *testing.T) {
	for _, tt := range []struct{ name, got, want string }{
		{"apikey.EnvSources", apikey.EnvSources, contract.EnvAPIKeySources},
		{"fnconfig.EnvAPIKeySources", fnconfig.EnvAPIKeySources, contract.EnvAPIKeySources},
		{"fnconfig.EnvEventsTable", fnconfig.EnvEventsTable, contract.EnvEventsTable},
		{"fnconfig.EnvDeliveryQueueURL", fnconfig.EnvDeliveryQueueURL, contract.EnvDeliveryQueueURL},
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

// Package contract stays a leaf: standard library only, so the Lambda
// binaries that import it (through fnconfig, emf, httpapi) stay small and
// never pull in jsii or the CDK.
func TestContractIsALeaf(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, p := range strings.Fields(string(out)) {
		if p != "github.com/triggers-dev/triggers/contract" {
			t.Errorf("contract depends on %s: it must import the standard library only", p)
		}
	}
	out, err = exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", "../lambda/api", "../lambda/authorizer", "../lambda/streamconsumer").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	deps := strings.Fields(string(out))
	if !slices.Contains(deps, "github.com/triggers-dev/triggers/contract") {
		t.Errorf("no Lambda main imports contract")
	}
	for _, p := range deps {
		if strings.Contains(p, "jsii") || strings.Contains(p, "aws-cdk-go") || strings.Contains(p, "constructs-go") {
			t.Errorf("a Lambda main depends on %s", p)
		}
	}
}
