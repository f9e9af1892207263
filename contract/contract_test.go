package contract_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/triggers-dev/triggers/contract"
)

func TestPaths(t *testing.T) {
	want := []string{contract.PathEvents, contract.PathEventsBatch, contract.PathEvent, contract.PathInbox, contract.PathInboxAck,
		contract.PathEventAttempts, contract.PathEventRedeliver, contract.PathSubscriptions, contract.PathSubscription, contract.PathSubscriptionRotate,
		contract.PathSubscriptionAttempts, contract.PathSubscriptionRecover,
		contract.PathOpenAPI}
	if got := contract.Paths(); !slices.Equal(got, want) {
		t.Errorf("Paths() = %v, want %v", got, want)
	}
}

// Only the OpenAPI document is served without an API key.
func TestPublicRoutes(t *testing.T) {
	var public []string
	for _, r := range contract.Routes() {
		if r.Public() {
			public = append(public, r.String())
		}
	}
	if want := []string{"GET " + contract.PathOpenAPI}; !slices.Equal(public, want) {
		t.Errorf("public routes %q, want %q", public, want)
	}
	if (contract.Route{Method: contract.MethodPost, Path: contract.PathOpenAPI}).Public() {
		t.Errorf("POST %s is public: only the GET is", contract.PathOpenAPI)
	}
}

func TestPathParams(t *testing.T) {
	for path, want := range map[string][]string{
		contract.PathEvents:             nil,
		contract.PathEvent:              {contract.EventIDParam},
		contract.PathEventAttempts:      {contract.EventIDParam},
		contract.PathSubscriptionRotate: {contract.SubscriptionIDParam},
		"/a/{x}/b/{y}":                  {"x", "y"},
		"/a/{}/b":                       nil,
	} {
		if got := contract.PathParams(path); !slices.Equal(got, want) {
			t.Errorf("PathParams(%q) = %v, want %v", path, got, want)
		}
	}
}

func TestIsEventPartition(t *testing.T) {
	for pk, want := range map[string]bool{
		"tenant-a":                               true,
		"":                                       false,
		contract.IdempotencyPrefix + "t#h":       false,
		contract.SubscriptionPrefix + "tenant-a": false,
		contract.AttemptRefPrefix + "t#sub_x":    false,
		contract.SlowLanePrefix + "tenant-a":     false,
		contract.Key(contract.AttemptPrefix+"t", "id"): false,
	} {
		if got := contract.IsEventPartition(pk); got != want {
			t.Errorf("IsEventPartition(%q) = %v, want %v", pk, got, want)
		}
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

// The CDK app and the constructs link no runtime code: no AWS SDK service
// client, no aws-lambda-go, no handler or store package. They depend on
// contract/ and schema/ for names and shapes (and on internal/synth, the
// synth-time support), so importing a construct never drags a function's
// code into a consumer's CDK app.
func TestCDKAppLinksNoRuntime(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", "..", "../constructs/...", "../stacks/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	const mod = "github.com/triggers-dev/triggers/"
	deps := strings.Fields(string(out))
	if !slices.Contains(deps, mod+"contract") || !slices.Contains(deps, "github.com/aws/aws-cdk-go/awscdk/v2") {
		t.Fatalf("go list of the CDK app lists neither contract nor aws-cdk-go: %v", deps)
	}
	for _, p := range deps {
		switch {
		case strings.HasPrefix(p, "github.com/aws/aws-sdk-go-v2/service/"),
			strings.HasPrefix(p, "github.com/aws/aws-sdk-go-v2/feature/"),
			strings.HasPrefix(p, "github.com/aws/aws-lambda-go"),
			strings.HasPrefix(p, mod+"lambda/"),
			strings.HasPrefix(p, mod+"internal/") && !strings.HasPrefix(p, mod+"internal/synth/"):
			t.Errorf("the CDK app or a construct depends on %s: constructs use contract/ and schema/, never runtime code", p)
		}
	}
}
