//go:build linux

package sqslocal

import (
	"os/exec"
	"syscall"
)

// setProcAttr puts the engine in its own process group (a terminal's
// Ctrl-C reaches only the parent, which then stops it in order) and asks
// the kernel to SIGKILL it when the parent dies.
func setProcAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

func terminate(cmd *exec.Cmd) {
	// Negative pid: the whole process group the engine leads.
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
}

func killProcess(cmd *exec.Cmd) {
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	_ = cmd.Process.Kill()
}
