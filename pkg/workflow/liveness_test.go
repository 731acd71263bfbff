package workflow

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/aceworks/ace/pkg/config"
	"github.com/aceworks/ace/pkg/store"
)

// TestScreenPrintIgnoresClocksAndSpinners: claude waiting for ever redraws its spinner, its clock and its token
// count each second; that is the same screen. Anything else on it is a change.
func TestScreenPrintIgnoresClocksAndSpinners(t *testing.T) {
	a := "● Bash(git commit)\n  ⎿  Waiting…\n\n✽ Shimmying… (1m 42s · ↓ 70 tokens)\n  esc to interrupt"
	b := "● Bash(git commit)\n  ⎿  Waiting…\n\n✶ Shimmying… (1m 43s · ↓ 71 tokens)\n  esc to interrupt"
	c := "● Bash(git commit)\n  ⎿  Done\n\n✶ Shimmying… (1m 43s · ↓ 71 tokens)\n  esc to interrupt"
	if screenPrint(a) != screenPrint(b) {
		t.Error("a clock, a token count and a spinner moved the screen's print")
	}
	if screenPrint(a) == screenPrint(c) {
		t.Error("a changed line left the screen's print as it was")
	}
	if screenPrint("") != 0 || screenPrint(a) == 0 {
		t.Error("no screen must print 0, a screen never")
	}
}

// TestMoved: what counts as a sign of work between two looks.
func TestMoved(t *testing.T) {
	t0 := time.Unix(1000, 0)
	base := signals{At: t0, Up: 100, Down: 200, Proxied: true, CPU: time.Second, Work: 1, Screen: 2}
	look := func(f func(*signals)) []string {
		s := base
		s.At = t0.Add(30 * time.Second)
		f(&s)
		return moved(base, s)
	}
	for _, tc := range []struct {
		name string
		f    func(*signals)
		want []string
	}{
		{"nothing", func(*signals) {}, nil},
		{"a byte from the model", func(s *signals) { s.Down++ }, []string{sigTraffic}},
		{"a spinner's CPU (2.4 % of a core)", func(s *signals) { s.CPU += 720 * time.Millisecond }, nil},
		{"a build's CPU", func(s *signals) { s.CPU += 10 * time.Second }, []string{sigCPU}},
		{"a session file grew", func(s *signals) { s.Files.Bytes += 10 }, []string{sigFiles}},
		{"the working copy", func(s *signals) { s.Work = 3 }, []string{sigWork}},
		{"the screen", func(s *signals) { s.Screen = 4 }, []string{sigScreen}},
	} {
		if got := look(tc.f); !slices.Equal(got, tc.want) {
			t.Errorf("%s: moved %v, want %v", tc.name, got, tc.want)
		}
	}
	unboxed := base
	unboxed.Proxied, unboxed.Down = false, 0
	if got := moved(unboxed, unboxed); got != nil {
		t.Errorf("an unboxed run without traffic counts moved %v", got)
	}
}

// TestWorkPrint: a file written, or appended to, in the working copy changes its print; .git's objects do not,
// its index does.
func TestWorkPrint(t *testing.T) {
	dir := t.TempDir()
	write := func(rel, s string) {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a.txt", "a")
	write(".git/objects/ab/cdef", "x")
	before := workPrint(dir)
	write(".git/objects/ab/0123", "y")
	if workPrint(dir) != before {
		t.Error("a git object moved the working copy's print")
	}
	write(".git/index", "i")
	after := workPrint(dir)
	if after == before {
		t.Error("git's index did not move the print")
	}
	write("a.txt", "ab")
	if workPrint(dir) == after {
		t.Error("a file grown in the working copy did not move the print")
	}
}

// TestLookNamesWhatMoved: a look that reads the signals names what moved since the look before (what the headless
// runner passes to its supervisor as a pulse); one answered from the record names nothing, so that old news is
// not passed on as new.
func TestLookNamesWhatMoved(t *testing.T) {
	cfg := config.Default()
	now := time.Unix(1000, 0)
	e := withParts(&Engine{cfg: cfg, o: Options{Config: cfg, Now: func() time.Time { return now }}})
	r := &store.Run{ID: 7, Workdir: t.TempDir()}
	none := func() vitals { return vitals{} }
	if p, _ := e.alive.look(r, none); p.moved != nil {
		t.Errorf("the first look names %v as moved", p.moved)
	}
	if err := os.WriteFile(filepath.Join(r.Workdir, "built.o"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	now = now.Add(time.Minute)
	if p, _ := e.alive.look(r, none); !slices.Equal(p.moved, []string{sigWork}) {
		t.Errorf("after the working copy changed, moved = %v", p.moved)
	}
	if p, _ := e.alive.look(r, none); p.moved != nil {
		t.Errorf("a look from the record names %v as moved", p.moved)
	}
	now = now.Add(time.Minute)
	if p, _ := e.alive.look(r, none); p.moved != nil {
		t.Errorf("a look with nothing changed names %v as moved", p.moved)
	}
}
