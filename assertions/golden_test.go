package assertions

import (
	"path/filepath"
	"testing"

	"github.com/triggers-dev/triggers/internal/testkit/cdktest"
)

// Every synthesized stack matches its golden snapshot, and every snapshot
// file still has a synthesized stack (a removed or renamed stack fails
// instead of leaving a snapshot nobody checks).
func TestGoldenSnapshots(t *testing.T) {
	cdktest.GoldenAll(t, templates)
}

// Every synthesized template passes cfn-lint with no errors.
func TestCfnLint(t *testing.T) {
	t.Parallel() // a child process, like TestAppRunsQuietly's: they overlap
	paths, err := filepath.Glob(filepath.Join(assemblyDir, "*.template.json"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no templates in %s: %v", assemblyDir, err)
	}
	cdktest.CfnLint(t, paths...)
}
