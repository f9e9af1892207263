//go:build linux

package dynamotest

import (
	"os/exec"
	"syscall"
)

// setProcAttr puts DynamoDB Local in its own process group and asks the
// kernel to SIGKILL it when the test binary dies.
func setProcAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

func killProcess(cmd *exec.Cmd) {
	// Negative pid: the whole process group the JVM leads.
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	_ = cmd.Process.Kill()
}
