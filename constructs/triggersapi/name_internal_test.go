package triggersapi

import (
	"strings"
	"testing"
)

func TestUniqueName(t *testing.T) {
	for path, want := range map[string]string{
		"triggers-prod-api/Triggers": "triggers-prod-api-Triggers",
		"Stage/My Stack/Api v1":      "Stage-My-Stack-Api-v1",
		"s/a.b_c":                    "s-a.b_c",
	} {
		if got := uniqueName(path); got != want {
			t.Errorf("uniqueName(%q) = %q, want %q", path, got, want)
		}
	}
	long := strings.Repeat("x", 120)
	a, b := uniqueName(long+"/A"), uniqueName(long+"/B")
	if len(a) != 100 || a == b || !strings.HasPrefix(a, strings.Repeat("x", 81)+"-A-") {
		t.Errorf("long paths: %q (%d), %q", a, len(a), b)
	}
}
