package jsiienv_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestImportsNoOS: jsiienv must initialize before package os (and so
// before any jsii package, which captures the environment), which Go's
// initialization order gives only while nothing it imports imports os.
func TestImportsNoOS(t *testing.T) {
	for _, goos := range []string{"linux", "darwin", "windows"} {
		cmd := exec.Command("go", "list", "-deps", ".")
		cmd.Env = append(cmd.Environ(), "GOOS="+goos)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
		require.NotContains(t, strings.Fields(string(out)), "os", "GOOS=%s: jsiienv imports os, directly or not", goos)
	}
}
