// Package docstest reads parts of the repository's docs, for the tests
// that keep a doc and the code in step (every error code named, every
// environment variable, every header a receiver gets).
package docstest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Section returns the text of file (a path from the module's root, such
// as "docs/api.md") after the first occurrence of start, up to the first
// occurrence of end after it (to the end of the file when there is none):
// "\n## " ends a section at the next heading, "\n\n" a paragraph at its
// end. It fails t when the file cannot be read or holds no start.
func Section(t testing.TB, file, start, end string) string {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join(root(t), file))
	if err != nil {
		t.Fatalf("docstest: %v", err)
	}
	_, section, ok := strings.Cut(string(doc), start)
	if !ok {
		t.Fatalf("docstest: %s holds no %q", file, start)
	}
	section, _, _ = strings.Cut(section, end)
	return section
}

// root is the module's root: the nearest folder above the test's working
// directory (its package's folder) holding go.mod.
func root(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatalf("docstest: %v", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatalf("docstest: no go.mod above the working directory")
		}
		dir = parent
	}
}
