//go:build !linux

package motoserver

import "os/exec"

func setProcAttr(*exec.Cmd) {}

func terminate(cmd *exec.Cmd) { _ = cmd.Process.Kill() }

func killProcess(cmd *exec.Cmd) { _ = cmd.Process.Kill() }
