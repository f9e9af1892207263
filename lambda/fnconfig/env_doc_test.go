package fnconfig_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/internal/testkit/docstest"
)

// docs/runtime.md's Configuration table names every environment variable
// package contract declares (contract.Env*), itself or through a
// wildcard such as `WEBHOOK_BREAKER_*`: it is where an operator looks a
// function's variable up. Found by review: DELIVERY_QUEUE_URL, the stream
// consumer's one required variable, was missing from it.
func TestRuntimeDocNamesEveryEnvironmentVariable(t *testing.T) {
	section := docstest.Section(t, "docs/runtime.md", "\n## Configuration (environment)\n", "\n## ")

	var wildcards []string
	for _, m := range regexp.MustCompile("`([A-Z][A-Z0-9_]*_)\\*`").FindAllStringSubmatch(section, -1) {
		wildcards = append(wildcards, m[1])
	}
	files, err := filepath.Glob("../../contract/*.go")
	require.NoError(t, err)
	decl := regexp.MustCompile(`\bEnv[A-Z][A-Za-z0-9]* += +"([A-Z][A-Z0-9_]*)"`)
	var names []string
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		require.NoError(t, err)
		for _, m := range decl.FindAllStringSubmatch(string(src), -1) {
			names = append(names, m[1])
		}
	}
	require.Contains(t, names, "EVENTS_TABLE", "the scan finds contract's variables")
	for _, name := range names {
		named := strings.Contains(section, "`"+name+"`")
		for _, w := range wildcards {
			named = named || strings.HasPrefix(name, w)
		}
		assert.True(t, named, "docs/runtime.md's Configuration table does not name %s", name)
	}
}
