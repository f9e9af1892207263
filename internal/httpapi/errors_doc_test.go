package httpapi_test

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

// docs/api.md's Errors section names every error code the API answers
// with (the codes of this package and of package event's input errors):
// clients switch on them. Found by review: the webhook routes' codes
// (invalid_subscription, invalid_target, webhooks_disabled, conflict) and
// invalid_body were missing from it.
func TestErrorsSectionNamesEveryCode(t *testing.T) {
	section := docstest.Section(t, "docs/api.md", "\n## Errors\n", "\n## ")

	codes := map[string]bool{}
	literal := regexp.MustCompile(`code: +"([a-z_]+)"`)
	constant := regexp.MustCompile(`\bCode[A-Z][A-Za-z]* += +"([a-z_]+)"`)
	for _, pattern := range []string{"*.go", "../event/*.go"} {
		files, err := filepath.Glob(pattern)
		require.NoError(t, err)
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			src, err := os.ReadFile(f)
			require.NoError(t, err)
			for _, re := range []*regexp.Regexp{literal, constant} {
				for _, m := range re.FindAllStringSubmatch(string(src), -1) {
					codes[m[1]] = true
				}
			}
		}
	}
	delete(codes, "client_closed_request") // logged, never sent: nobody listens
	require.Contains(t, codes, "invalid_target", "the scan finds package event's codes")
	require.Contains(t, codes, "webhooks_disabled", "the scan finds this package's codes")
	for code := range codes {
		assert.True(t, strings.Contains(section, "`"+code+"`"), "docs/api.md's Errors section does not name %s", code)
	}
}
