//go:build !linux

package kmslocal

import (
	"os"
	"os/exec"
)

func setProcAttr(*exec.Cmd) {}

func terminate(cmd *exec.Cmd) { _ = cmd.Process.Signal(os.Interrupt) }

func killProcess(cmd *exec.Cmd) { _ = cmd.Process.Kill() }

// lockFile is a no-op where flock is unavailable; run go test -p 1 the first
// time there.
func lockFile(string) (func(), error) { return func() {}, nil }
