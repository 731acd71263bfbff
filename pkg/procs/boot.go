package procs

import (
	"os"
	"strings"
)

// BootID is this boot of the machine's kernel (/proc/sys/kernel/random/boot_id): another one says the host
// restarted since it was read. "" where it cannot be read.
func BootID() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}
