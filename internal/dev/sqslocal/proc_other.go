//go:build !linux

package sqslocal

import (
	"os"
	"os/exec"
)

func setProcAttr(*exec.Cmd) {}

func terminate(cmd *exec.Cmd) { _ = cmd.Process.Signal(os.Interrupt) }

func killProcess(cmd *exec.Cmd) { _ = cmd.Process.Kill() }
