package main

import (
	"bytes"
	"context"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The harness, briefly, end to end: every function under lambda/ and the
// floor are built, started twice each and reach `next` without a network
// call. Times are not asserted. (The linux/arm64 build for the sizes is
// TestBuildsAsDeployed's.)
func TestMeasuresEveryFunction(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts every function")
	}
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	fns, err := Functions(root)
	require.NoError(t, err)
	require.Contains(t, fns, "api")
	require.Contains(t, fns, "streamconsumer")

	rep, err := measure(context.Background(), 2, false, nil)
	require.NoError(t, err)
	want := append([]string{Floor}, fns...)
	var got []string
	for _, r := range rep.Results {
		got = append(got, r.Name)
		n, first := r.Failures()
		assert.Zero(t, n, "%s did not reach next: %v", r.Name, first)
		assert.Len(t, r.Inits(), 2, r.Name)
		assert.Zero(t, r.Conns(), "%s opened a connection before its first next", r.Name)
	}
	assert.Equal(t, want, got)

	var out bytes.Buffer
	rep.Print(&out)
	t.Log("\n" + out.String())
	rows := map[string]int{}
	for _, line := range strings.Split(out.String(), "\n") {
		if f := strings.Fields(line); len(f) > 0 {
			rows[f[0]]++
		}
	}
	for _, fn := range want {
		assert.Equal(t, 1, rows[fn], "%s: a row\n%s", fn, out.String())
	}
}

// The sizes are those of deployed binaries: linux/arm64, stripped.
func TestBuildsAsDeployed(t *testing.T) {
	bins, err := Build(context.Background(), "../..", t.TempDir(), "linux", "arm64", nil)
	require.NoError(t, err)
	f, err := elf.Open(bins[Floor])
	require.NoError(t, err)
	defer f.Close()
	assert.Equal(t, elf.EM_AARCH64, f.Machine)
	assert.Nil(t, f.Section(".symtab"), "stripped (-s)")
	assert.Nil(t, f.Section(".debug_info"), "no DWARF (-w)")

	var out bytes.Buffer
	Report{Results: []Result{{Name: Floor}, {Name: "api"}}, Sizes: map[string]int64{Floor: 5_000_000, "api": 10_000_001}}.Print(&out)
	assert.Regexp(t, `(?m)^\s+api\s+10000001\s+10\.00\s+<= 10 MB\s+MISS`, out.String())
}

// The check itself can fail: a function that calls the network before its
// first next is counted, and one that exits is reported with its stderr.
func TestSeesNetworkAtInitAndFailedStarts(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command("go", append(append([]string{"build"}, buildFlags...), "-o", filepath.Join(dir, "netinit"), "./testdata/netinit")...)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	exit := filepath.Join(dir, "exit")
	require.NoError(t, os.WriteFile(exit, []byte("#!/bin/sh\necho 'exit: configuration: EVENTS_TABLE is not set' >&2\nexit 1\n"), 0o755))

	h, err := NewHarness()
	require.NoError(t, err)
	defer h.Close()
	h.Timeout = 30 * time.Second
	run := h.Start(Floor, filepath.Join(dir, "netinit"))
	require.NoError(t, run.Err)
	assert.Equal(t, 1, run.Conns)
	assert.Positive(t, run.Init)

	run = h.Start(Floor, exit)
	require.Error(t, run.Err)
	assert.Contains(t, run.Err.Error(), "exited before its first next")
	assert.Contains(t, run.Err.Error(), "EVENTS_TABLE is not set")

	run = h.Start("nosuchfunction", exit)
	assert.ErrorContains(t, run.Err, "no environment for lambda/nosuchfunction")
}

func TestQuantile(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		var d []time.Duration
		for _, x := range v {
			d = append(d, time.Duration(x)*time.Millisecond)
		}
		return d
	}
	for _, tt := range []struct {
		in   []time.Duration
		q    float64
		want time.Duration
	}{
		{nil, 0.5, 0},
		{ms(7), 0.9, 7 * time.Millisecond},
		{ms(3, 1, 2), 0.5, 2 * time.Millisecond},
		{ms(4, 1, 3, 2), 0.5, 2 * time.Millisecond},
		{ms(10, 1, 2, 3, 4, 5, 6, 7, 8, 9), 0.9, 9 * time.Millisecond},
		{ms(10, 1, 2, 3, 4, 5, 6, 7, 8, 9), 1, 10 * time.Millisecond},
	} {
		if got := Quantile(tt.in, tt.q); got != tt.want {
			t.Errorf("Quantile(%v, %v) = %v, want %v", tt.in, tt.q, got, tt.want)
		}
	}
}
