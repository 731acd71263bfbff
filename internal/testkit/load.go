package testkit

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// LoadCPU keeps the machine busy beside the test: n CPUs' worth of other runnable work for as long as t runs. It
// starts n busy loops, each in a session of its own as the tmux servers of a test run are (the scheduler shares
// the CPU between sessions first), ended by PID when t ends. A case that depends on the machine being idle shows
// here, not in CI.
//
// The loops top the machine up rather than add to it: while the rest of the machine already keeps n CPUs busy
// (the whole suite running beside the test, as in CI) they are paused, and they resume as soon as it does not.
// Either way the test meets a machine at least n CPUs busy; the suite does not lose n CPUs to loops for the
// test's whole length.
func LoadCPU(t testing.TB, n int) {
	t.Helper()
	loops := make([]*exec.Cmd, 0, n)
	for range n {
		// A loop ends itself once this process is gone: a test binary killed or panicking runs no cleanup, and
		// its loops, in sessions of their own, were left behind stopped or spinning.
		cmd := exec.Command("sh", "-c", fmt.Sprintf("while kill -0 %d 2>/dev/null; do :; done", os.Getpid()))
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := cmd.Start(); err != nil {
			t.Fatalf("start a busy loop: %v", err)
		}
		loops = append(loops, cmd)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		topUp(ctx, loops, n)
	}()
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		for _, cmd := range loops {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
}

// topUp pauses the loops while the rest of the machine keeps n CPUs busy and lets them run while it does not,
// looking every 50 ms at the kernel's count of runnable tasks averaged over the last five looks.
func topUp(ctx context.Context, loops []*exec.Cmd, n int) {
	running := true
	var window []float64
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		runnable, err := procsRunning()
		if err != nil {
			continue // without the count the loops stay as they are
		}
		others := float64(runnable - 1) // this look's own thread is running as it reads
		if running {
			others -= float64(len(loops))
		}
		window = append(window, others)
		if len(window) > 5 {
			window = window[1:]
		}
		var sum float64
		for _, v := range window {
			sum += v
		}
		busy := sum/float64(len(window)) >= float64(n)
		if busy == running { // busy and running: pause; idle and paused: resume
			sig := syscall.SIGSTOP
			if !busy {
				sig = syscall.SIGCONT
			}
			for _, cmd := range loops {
				_ = cmd.Process.Signal(sig)
			}
			running = !busy
			window = window[:0]
		}
	}
}

// procsRunning reads the number of runnable tasks from /proc/stat.
func procsRunning() (int, error) {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "procs_running "); ok {
			return strconv.Atoi(strings.TrimSpace(v))
		}
	}
	return 0, fmt.Errorf("no procs_running in /proc/stat")
}

// BusyShell is a shell command that works on the CPU for d without a line of output, as a build or a test suite
// that prints only when it ends: a fixed amount of work (about 20 ms on an idle CPU) then 60 ms of rest, over and
// over — a quarter of a core on an idle machine, and as a task that sleeps most of the time, close to that on a
// loaded one. Enough to count as work; not a core taken from the suite.
func BusyShell(d time.Duration) string {
	return fmt.Sprintf("timeout %.1f sh -c 'while :; do i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done; sleep 0.06; done'",
		d.Seconds())
}
