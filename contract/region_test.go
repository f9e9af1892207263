package contract_test

import (
	"testing"

	"github.com/triggers-dev/triggers/contract"
)

func TestValidRegionName(t *testing.T) {
	for s, want := range map[string]bool{
		"us-east-1": true, "ap-southeast-2": true, "us-gov-west-1": true, "eu-central-2": true,
		"US-EAST-1": false, "us-east1": false, "useast-1": false, "u-east-1": false, "us--1": false, "us-east-": false,
		"-east-1": false, "us-east-1a": false, "us-east-1 ": false, "Virginia": false, "": false,
	} {
		if got := contract.ValidRegionName(s); got != want {
			t.Errorf("ValidRegionName(%q) = %v, want %v", s, got, want)
		}
	}
}
