package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
)

func open(t *testing.T, path string) *Store {
	t.Helper()
	s, err := Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestRunRoundTripAndOptimisticUpdate(t *testing.T) {
	forEachBackend(t, testRunRoundTripAndOptimisticUpdate)
}

func testRunRoundTripAndOptimisticUpdate(t *testing.T, fresh func(*testing.T) target) {
	ctx := context.Background()
	s := openAt(t, fresh(t))
	r := &Run{Repo: "acme/widgets", Issue: 193, Attempt: 1, Agent: "codex", Step: "claim", Status: StatusActive,
		State: RunState{Title: "Fix it"}}
	if err := s.CreateRun(ctx, r); err != nil {
		t.Fatal(err)
	}
	stale, err := s.GetRun(ctx, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	r.Step, r.Branch = "prepare_workspace", "ace/193-fix-it"
	if err := s.UpdateRun(ctx, r, &Event{Kind: "transition", Step: r.Step, Message: "claim → prepare_workspace"}); err != nil {
		t.Fatal(err)
	}
	stale.Step = "monitor"
	if err := s.UpdateRun(ctx, stale, nil); !errors.Is(err, ErrConflict) {
		t.Fatalf("stale update: err = %v, want ErrConflict", err)
	}
	got, err := s.LatestRun(ctx, "acme/widgets", 193)
	if err != nil {
		t.Fatal(err)
	}
	if got.Step != "prepare_workspace" || got.Branch != "ace/193-fix-it" || got.State.Title != "Fix it" || got.Version != 2 {
		t.Fatalf("read back %+v", got)
	}
	evs, err := s.Events(ctx, r.ID)
	if err != nil || len(evs) != 1 || evs[0].Message != "claim → prepare_workspace" {
		t.Fatalf("events %+v, %v", evs, err)
	}
	if _, err := s.LatestRun(ctx, "acme/widgets", 1); !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing run: %v", err)
	}
	if n, _ := s.CountActive(ctx); n != 1 {
		t.Fatalf("active = %d", n)
	}
	runs, err := s.ListRuns(ctx, Filter{Statuses: []Status{StatusDone}})
	if err != nil || len(runs) != 0 {
		t.Fatalf("done runs %v %v", runs, err)
	}
}

// TestConcurrentProcessesCreateEachAttemptOnce: two processes and many goroutines create the first run of the
// same 20 issues at once (a foreground ace run and a dispatch pass opening one issue): each attempt is created
// exactly once, the others are refused (a unique violation of either database is ErrConflict), and nobody sees
// "database is locked".
func TestConcurrentProcessesCreateEachAttemptOnce(t *testing.T) {
	forEachBackend(t, testConcurrentProcessesCreateEachAttemptOnce)
}

func testConcurrentProcessesCreateEachAttemptOnce(t *testing.T, fresh func(*testing.T) target) {
	where := fresh(t)
	openAt(t, where) // create the schema first
	var wg sync.WaitGroup
	outs := make([][]byte, 2)
	for i := range outs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command(os.Args[0], "-test.run=^TestHelperClaimer$")
			cmd.Env = append(os.Environ(), "ACE_STORE_HELPER="+where.String(), "ACE_STORE_OWNER=p"+strconv.Itoa(i))
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Errorf("helper %d: %v\n%s", i, err, out)
			}
			outs[i] = out
		}()
	}
	wg.Wait()
	s := openAt(t, where)
	total := 0
	for issue := 1; issue <= 20; issue++ {
		runs, err := s.ListRuns(context.Background(), Filter{Repo: "o/r", Issue: issue})
		if err != nil || len(runs) != 1 {
			t.Fatalf("issue %d has %d runs (%v), want exactly 1", issue, len(runs), err)
		}
		total++
	}
	var won int
	for _, o := range outs {
		var n int
		fmt.Sscanf(lastLine(string(o)), "won %d", &n)
		won += n
	}
	if won != 20 {
		t.Fatalf("runs created across processes = %d, want exactly 20 (outputs %q)", won, outs)
	}
}

func TestHelperClaimer(t *testing.T) {
	where := os.Getenv("ACE_STORE_HELPER")
	if where == "" {
		t.Skip("helper process only")
	}
	s := openAt(t, targetOf(where))
	owner := os.Getenv("ACE_STORE_OWNER")
	var mu sync.Mutex
	won := 0
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for issue := 1; issue <= 20; issue++ {
				r := &Run{Repo: "o/r", Issue: issue, Attempt: 1, Agent: fmt.Sprintf("%s-%d", owner, g), Step: "claim", Status: StatusActive}
				err := s.CreateRun(context.Background(), r)
				if err != nil && !errors.Is(err, ErrConflict) {
					t.Error(err)
					return
				}
				if err == nil {
					mu.Lock()
					won++
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	fmt.Printf("won %d\n", won)
}

func lastLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, "won ") {
			return l
		}
	}
	return ""
}
