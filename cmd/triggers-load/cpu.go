package main

import (
	"syscall"
	"time"

	"github.com/triggers-dev/triggers/internal/dev/procstat"
)

// cpuTimes returns the CPU time (user + system) used so far by this
// process and by the process pid (DynamoDB Local's JVM); 0 where it
// cannot be read (not Linux).
func cpuTimes(pid int) (self, other time.Duration) {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		self = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	if pid > 0 {
		other = procstat.CPU(pid)
	}
	return self, other
}
