package assertions

import (
	"path/filepath"
	"sort"
	"testing"

	"github.com/triggers-dev/triggers/internal/cdktest"
)

// Every synthesized stack matches its golden snapshot.
func TestGoldenSnapshots(t *testing.T) {
	names := keys(templates)
	sort.Strings(names)
	for _, name := range names {
		t.Run(name, func(t *testing.T) { cdktest.Golden(t, name, templates[name]) })
	}
}

// Every synthesized template passes cfn-lint with no errors.
func TestCfnLint(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join(assemblyDir, "*.template.json"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no templates in %s: %v", assemblyDir, err)
	}
	cdktest.CfnLint(t, paths...)
}
