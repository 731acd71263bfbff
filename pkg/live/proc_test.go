package live_test

import (
	"bufio"
	"os"
	"testing"
	"time"

	"github.com/aceworks/ace/pkg/live"
)

func TestProcLinesAndStop(t *testing.T) {
	p, err := live.StartProc(live.Options{Argv: []string{"cat"}, Env: os.Environ(), Dir: t.TempDir()})
	if err != nil {
		t.Skipf("no cat: %v", err)
	}
	if err := p.WriteLine([]byte(`{"a":1}`)); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(p.Stdout()).ReadString('\n')
	if err != nil || line != "{\"a\":1}\n" {
		t.Fatalf("read %q, %v", line, err)
	}
	if err := p.Stop(); err != nil { // cat ends at EOF on stdin
		t.Fatalf("stop: %v", err)
	}
	if live.GroupAlive(p.PID()) {
		t.Errorf("cat's group still runs")
	}
}

func TestProcStopEndsWhatIgnoresStdinAndItsChildren(t *testing.T) {
	// A shell that ignores SIGTERM and EOF, with a child of its own in the background.
	p, err := live.StartProc(live.Options{Argv: []string{"sh", "-c", `trap "" TERM; sleep 60 & while :; do sleep 1; done`},
		Env: os.Environ(), Dir: t.TempDir(), Grace: 300 * time.Millisecond})
	if err != nil {
		t.Skipf("no sh: %v", err)
	}
	start := time.Now()
	if err := p.Stop(); err == nil {
		t.Errorf("stop of a killed shell returned nil")
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("stop took %s", took)
	}
	if live.GroupAlive(p.PID()) {
		t.Errorf("the group of %d still runs after Stop", p.PID())
	}
}
