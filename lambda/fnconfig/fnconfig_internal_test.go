package fnconfig

import "testing"

func TestIsRegionName(t *testing.T) {
	for s, want := range map[string]bool{
		"us-east-1": true, "ap-southeast-2": true, "us-gov-west-1": true, "eu-central-2": true,
		"US-EAST-1": false, "us-east1": false, "useast-1": false, "u-east-1": false, "us--1": false, "us-east-": false, "-east-1": false, "us-east-1a": false, "": false,
	} {
		if got := isRegionName(s); got != want {
			t.Errorf("isRegionName(%q) = %v, want %v", s, got, want)
		}
	}
}
