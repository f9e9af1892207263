//go:build linux

package assertions

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/internal/synth/jsiienv"
)

// TestKernelRunsWithoutRelay: the jsii kernel that synthesized this
// package's app (TestMain) is a child of this process, started by
// jsiienv's direct mode, not behind @jsii/runtime's relay process.
func TestKernelRunsWithoutRelay(t *testing.T) {
	if os.Getenv(jsiienv.EnvRelay) == "1" {
		t.Fatalf("%s=1 is set: this test checks direct mode", jsiienv.EnvRelay)
	}
	var cmdlines []string
	tasks, err := filepath.Glob("/proc/self/task/*/children")
	require.NoError(t, err)
	for _, task := range tasks {
		b, err := os.ReadFile(task)
		require.NoError(t, err)
		for _, pid := range strings.Fields(string(b)) {
			if _, err := strconv.Atoi(pid); err != nil {
				continue
			}
			c, err := os.ReadFile("/proc/" + pid + "/cmdline")
			if err != nil {
				continue // it has exited meanwhile
			}
			cmdlines = append(cmdlines, strings.ReplaceAll(strings.TrimRight(string(c), "\x00"), "\x00", " "))
		}
	}
	var kernel []string
	for _, c := range cmdlines {
		assert.NotContains(t, c, "bin/jsii-runtime.js", "the relay process runs")
		if strings.Contains(c, "lib/program.js") {
			kernel = append(kernel, c)
		}
	}
	require.Len(t, kernel, 1, "one jsii kernel among this process's children: %q", cmdlines)
	assert.Contains(t, kernel[0], "--require "+filepath.Dir(jsiienv.DirectNode)+"/preload-")
}
