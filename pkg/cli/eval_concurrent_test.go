package cli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/aceworks/ace/internal/testkit"
	"github.com/aceworks/ace/pkg/eval"
	"github.com/aceworks/ace/pkg/tmuxops"
)

// TestTwoEvalsAtOnceKeepTheirSessions: two evals of one repository, in two directories, run at once on one host
// with an agent in tmux. Each numbers its items for itself, so both runs are item 1 of acme/calc and their
// sessions have the same name; with both agents alive at the same time (each waits, once started, until the
// other has started too), each eval's run stays in its own session and working copy: both end with their own
// result, the fix solved.
func TestTwoEvalsAtOnceKeepTheirSessions(t *testing.T) {
	t.Parallel()
	ew := newEvalWorld(t)
	tasks, err := eval.ReadTasks(ew.tasks)
	if err != nil {
		t.Fatal(err)
	}
	if err := eval.WriteTasks(ew.tasks, tasks[:1]); err != nil {
		t.Fatal(err)
	}
	// The agents' scripts are where the boxes see them, read-only: the go-ahead is a file the test makes there.
	scripts := ew.scripts
	goAhead := filepath.Join(scripts, "go")
	script := fmt.Sprintf("sh mkdir -p .ace && touch .ace/started && i=0 && while [ ! -e %s ] && [ $i -lt 900 ]; do sleep 0.1; i=$((i+1)); done\n"+
		"sh sh %s\ndone applied the fix\n", goAhead, filepath.Join(scripts, "fix.sh"))
	if err := os.WriteFile(filepath.Join(scripts, "tmuxfixer.txt"), []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := ew.cfg + fmt.Sprintf("[agents.fake]\nrunner = \"tmux\"\ncommand = %q\n"+
		"env = { GIT_AUTHOR_NAME = \"fake\", GIT_AUTHOR_EMAIL = \"fake@ace.invalid\", GIT_COMMITTER_NAME = \"fake\", GIT_COMMITTER_EMAIL = \"fake@ace.invalid\" }\n",
		"ace demo-agent --script "+filepath.Join(scripts, "tmuxfixer.txt"))
	if err := os.WriteFile(filepath.Join(ew.dir, "ace.toml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	dirs := []string{ew.evalIn, filepath.Join(ew.dir, "eval-2")}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = tmuxops.New(eval.Socket(ew.socket, dirs[1])).KillServer(ctx)
	})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	type started struct {
		out, errOut fmt.Stringer
		exited      chan error
	}
	var evals []started
	for _, dir := range dirs {
		cmd, out, errOut := ew.ace(ctx, "eval", "run", "--tasks", ew.tasks, "--dir", dir, "--agents", "fake", "--json")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		e := started{out: out, errOut: errOut, exited: make(chan error, 1)}
		go func() { e.exited <- cmd.Wait() }()
		evals = append(evals, e)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, dir := range dirs {
				sock := eval.Socket(ew.socket, dir)
				out, _ := exec.Command("tmux", "-L", sock, "list-sessions").CombinedOutput()
				screen, _ := exec.Command("tmux", "-L", sock, "capture-pane", "-p", "-t", "ace-calc-1").CombinedOutput()
				t.Logf("the eval in %s: sessions on %s:\n%s\nace-calc-1's screen:\n%s", dir, sock, out, screen)
			}
		}
	})
	// Both agents are alive at once: each has started in its own working copy.
	testkit.WaitFor(t, "both evals' agents started", 2*time.Minute, func() bool {
		for i, dir := range dirs {
			select {
			case err := <-evals[i].exited:
				t.Fatalf("the eval in %s ended before both agents started: %v\n%s\n%s", dir, err, evals[i].out, evals[i].errOut)
			default:
			}
			if _, err := os.Stat(filepath.Join(dir, "items", "1", "ace", "worktrees", "acme", "calc", "1", ".ace", "started")); err != nil {
				return false
			}
		}
		return true
	})
	if err := os.WriteFile(goAhead, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for i, dir := range dirs {
		var err error
		select {
		case err = <-evals[i].exited:
		case <-ctx.Done():
			t.Fatalf("the eval in %s did not end: %v\n%s", dir, ctx.Err(), evals[i].errOut)
		}
		if err != nil {
			t.Fatalf("the eval in %s: %v\n%s\n%s", dir, err, evals[i].out, evals[i].errOut)
		}
		var results []eval.RunResult
		if err := json.Unmarshal([]byte(evals[i].out.String()), &results); err != nil {
			t.Fatalf("the eval in %s: %v\n%s", dir, err, evals[i].out)
		}
		if len(results) != 1 || !results[0].Solved || results[0].Status != "done" || results[0].N != 1 {
			t.Errorf("the eval in %s: %+v", dir, results)
		}
		if kept, err := eval.ReadResults(dir); err != nil || len(kept) != 1 || !kept[0].Solved {
			t.Errorf("the results kept in %s: %+v, %v", dir, kept, err)
		}
	}
}
