package realcli

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
)

// EnvSlots sets how many real CLIs the tests of one machine run at once, across every test process (Slot).
const EnvSlots = "ACE_REALCLI_SLOTS"

// slotsPerCore: a real-CLI case keeps about a sixth of a core busy (a core while its CLI starts, little while it
// waits for the scripted model and ace for its screens: 1.4 s to 5.5 s of CPU in 9 s to 40 s of a case, measured
// with cpuacct on 2 cores), so four per core use about two thirds of the machine and leave the rest of the suite
// the rest. One per core made the 119 cases take 28 minutes; no bound ran e2e's all at once (load
// average over 100 on 2 cores), and which cases overlapped decided each one's load.
const slotsPerCore = 4

// Slots is how many real CLIs run at once: $ACE_REALCLI_SLOTS, or slotsPerCore per core.
func Slots() (int, error) {
	v := os.Getenv(EnvSlots)
	if v == "" {
		return slotsPerCore * runtime.NumCPU(), nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("%s=%q: want a whole number of real CLIs at once, 1 or more", EnvSlots, v)
	}
	return n, nil
}
