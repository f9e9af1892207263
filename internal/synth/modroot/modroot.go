// Package modroot finds the root of a Go module on disk: the nearest
// directory at or above a starting point that holds go.mod (and, when
// asked, other files such as package.json). It is the one copy used by the
// Lambda bundler (constructs/golambda), the DynamoDB Local launcher and the
// test helpers; it imports only the standard library.
package modroot

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Find returns the nearest directory at or above dir that holds go.mod and
// every file named in also.
func Find(dir string, also ...string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	want := append([]string{"go.mod"}, also...)
	for d := abs; ; {
		if holdsAll(d, want) {
			return d, nil
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", fmt.Errorf("no directory at or above %s holds %s", abs, strings.Join(want, " and "))
		}
		d = parent
	}
}

// FromWorkingDir is Find from the working directory.
func FromWorkingDir(also ...string) (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	return Find(wd, also...)
}

func holdsAll(dir string, names []string) bool {
	for _, n := range names {
		if _, err := os.Stat(filepath.Join(dir, n)); err != nil {
			return false
		}
	}
	return true
}
