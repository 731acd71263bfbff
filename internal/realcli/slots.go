package realcli

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
)

// EnvSlots sets how many real CLIs the tests of one machine run at once, across every test process (Slot).
const EnvSlots = "ACE_REALCLI_SLOTS"

// Slots is how many real CLIs run at once: $ACE_REALCLI_SLOTS, or one per core. A real CLI takes about a core
// while it starts (node loading its bundle) and little once it waits for the model; one per core keeps a case
// from starving another, as it did when the packages' cases all ran at once (see README, Tests).
func Slots() (int, error) {
	v := os.Getenv(EnvSlots)
	if v == "" {
		return runtime.NumCPU(), nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("%s=%q: want a whole number of real CLIs at once, 1 or more", EnvSlots, v)
	}
	return n, nil
}
