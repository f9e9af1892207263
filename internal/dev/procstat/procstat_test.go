package procstat_test

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/triggers-dev/triggers/internal/dev/procstat"
)

// This process's CPU time grows while it works; a process that does not
// exist has none.
func TestCPU(t *testing.T) {
	before := procstat.CPU(os.Getpid())
	x := 0
	for i := 0; procstat.CPU(os.Getpid()) <= before && i < 1e9; i++ {
		x += i % 7
	}
	assert.Greater(t, procstat.CPU(os.Getpid()), before, "busy work counted (x=%d)", x)
	assert.Zero(t, procstat.CPU(-1))
}
