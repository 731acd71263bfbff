package procs

import (
	"syscall"
	"time"
)

// OwnCPU is the user and system time of this process and of the children it has waited for: what a command of
// ace's cost in CPU, which unlike wall time does not grow with what else the machine runs.
func OwnCPU() time.Duration {
	var total time.Duration
	for _, who := range []int{syscall.RUSAGE_SELF, syscall.RUSAGE_CHILDREN} {
		var ru syscall.Rusage
		if syscall.Getrusage(who, &ru) == nil {
			total += time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		}
	}
	return total
}
