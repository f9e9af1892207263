package docstest_test

import (
	"strings"
	"testing"

	"github.com/triggers-dev/triggers/internal/testkit/docstest"
)

// A section runs from its start to the first end after it, and is found
// from any package folder (the module's root is looked up).
func TestSection(t *testing.T) {
	s := docstest.Section(t, "docs/api.md", "\n## Errors\n", "\n## ")
	if !strings.Contains(s, "`invalid_payload`") || strings.Contains(s, "\n## ") {
		t.Fatalf("the Errors section of docs/api.md, up to the next heading, got:\n%s", s)
	}
	if got := docstest.Section(t, "go.mod", "module ", "\n"); got != "github.com/triggers-dev/triggers" {
		t.Fatalf("module line: %q", got)
	}
}
