package realcli

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestTakeSlotHoldsAtMostN: of two slots, two takers get one each; a third gets none while they hold theirs,
// and the one freed as soon as it is.
func TestTakeSlotHoldsAtMostN(t *testing.T) {
	dir := t.TempDir()
	a, i, err := takeSlot(t.Context(), dir, 2)
	if err != nil || i != 0 {
		t.Fatalf("first slot %d, %v", i, err)
	}
	b, j, err := takeSlot(t.Context(), dir, 2)
	if err != nil || j != 1 {
		t.Fatalf("second slot %d, %v", j, err)
	}
	defer b.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 3*slotPoll)
	defer cancel()
	if f, k, err := takeSlot(ctx, dir, 2); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a third taker got slot %d (%v, %v) while both were held", k, f, err)
	}
	got := make(chan int)
	go func() {
		f, k, err := takeSlot(t.Context(), dir, 2)
		if err != nil {
			t.Error(err)
		} else {
			defer f.Close()
		}
		got <- k
	}()
	_ = a.Close()
	select {
	case k := <-got:
		if k != 0 {
			t.Errorf("the waiting taker got slot %d, want the freed 0", k)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the waiting taker did not get the freed slot")
	}
}

func TestSlotsFromTheEnvironment(t *testing.T) {
	t.Setenv(EnvSlots, "3")
	if n, err := Slots(); n != 3 || err != nil {
		t.Errorf("Slots() = %d, %v; want 3", n, err)
	}
	for _, bad := range []string{"0", "-1", "two"} {
		t.Setenv(EnvSlots, bad)
		if _, err := Slots(); err == nil {
			t.Errorf("%s=%s: no error", EnvSlots, bad)
		}
	}
}
