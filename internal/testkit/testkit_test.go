package testkit

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// fatalT records a Fatalf and ends its goroutine, as testing.T does.
type fatalT struct {
	testing.TB
	msg string
}

func (f *fatalT) Helper() {}
func (f *fatalT) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func TestWaitFor(t *testing.T) {
	t.Parallel()
	polls := 0
	WaitFor(t, "the third poll", time.Second, func() bool { polls++; return polls == 3 })

	ft := &fatalT{TB: t}
	done := make(chan struct{})
	start := time.Now()
	go func() {
		defer close(done)
		WaitFor(ft, "what never comes", 50*time.Millisecond, func() bool { return false })
	}()
	<-done
	if took := time.Since(start); took < 50*time.Millisecond || !strings.Contains(ft.msg, "what never comes") {
		t.Errorf("after %s: %q", took, ft.msg)
	}
}

func TestBuffer(t *testing.T) {
	t.Parallel()
	var b Buffer
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 100 {
				fmt.Fprint(&b, "x")
				_ = b.String()
			}
		})
	}
	wg.Wait()
	if got := b.String(); got != strings.Repeat("x", 400) {
		t.Errorf("%d bytes, want 400", len(got))
	}
}

func TestChildren(t *testing.T) {
	var got []string
	cmds := Commands(map[string]func([]string) int{"echo": func(a []string) int { got = a; return 7 }})
	if code, ok := cmds([]string{"echo", "a", "b"}); !ok || code != 7 || !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("echo: %d %v %q", code, ok, got)
	}
	for _, args := range [][]string{nil, {"other"}} {
		if _, ok := cmds(args); ok {
			t.Errorf("%q played a program", args)
		}
	}

	saved := os.Args
	t.Cleanup(func() { os.Args = saved })
	exe, _ := os.Executable()
	ace := As("ace", func() int { got = os.Args; return 3 })
	if _, ok := ace([]string{"echo"}); ok {
		t.Error("As played another name")
	}
	if code, ok := ace([]string{"ace", "ls", "--json"}); !ok || code != 3 || !slices.Equal(got, []string{exe, "ls", "--json"}) {
		t.Errorf("ace: %d %v %q", code, ok, got)
	}
}
