//go:build !linux

package dynamotest

import "os/exec"

func setProcAttr(*exec.Cmd) {}

func killProcess(cmd *exec.Cmd) { _ = cmd.Process.Kill() }
