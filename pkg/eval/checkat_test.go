package eval

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/aceworks/ace/internal/gittest"
	"github.com/aceworks/ace/pkg/config"
)

// TestTasksAreCheckedByTheirBasesWorkflow: each candidate's check is the workflow file as its base commit had it
// — no file there, a verify of one timeout, a later one with a setup — never the head's; a base without a verify
// command is dropped as DropNoCheck (unless --check gives one to all).
func TestTasksAreCheckedByTheirBasesWorkflow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	repo := gittest.WorkRepo(t) // its first commit has no workflow file
	commit := func(workflow string) string {
		if err := os.MkdirAll(filepath.Join(repo, ".ace"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(repo, config.WorkflowFile), []byte(workflow), 0o644); err != nil {
			t.Fatal(err)
		}
		gittest.Run(t, repo, "add", "-A")
		gittest.Run(t, repo, "commit", "-q", "-m", "workflow")
		return gittest.Run(t, repo, "rev-parse", "HEAD")
	}
	none := gittest.Run(t, repo, "rev-parse", "HEAD")
	early := commit("verify = \"sh early.sh\"\nverify_timeout = \"1m\"\n")
	late := commit("setup = [\"make deps\"]\nverify = \"sh late.sh\"\nverify_timeout = \"2m\"\n")

	b := &builder{o: Options{Config: config.Default(), Repo: "acme/x"}, repo: "acme/x", mirror: filepath.Join(repo, ".git"), branch: "main"}
	if err := b.resolveCheck(ctx); err != nil || !slices.Equal(b.check, []string{"sh", "late.sh"}) {
		t.Fatalf("the head's check %v: %v", b.check, err)
	}
	cands := []*candidate{{task: Task{BaseCommit: early}}, {task: Task{BaseCommit: late}}, {task: Task{BaseCommit: none}},
		{task: Task{BaseCommit: early}}}
	if err := b.setChecks(ctx, cands); err != nil {
		t.Fatal(err)
	}
	e, l, n := cands[0], cands[1], cands[2]
	if !slices.Equal(e.task.Check, []string{"sh", "early.sh"}) || len(e.task.Setup) != 0 || e.task.CheckTimeout() != time.Minute ||
		e.noCheck != "" || !slices.Equal(cands[3].task.Check, e.task.Check) {
		t.Errorf("the early base's task: check %v, setup %v, timeout %s, %q", e.task.Check, e.task.Setup, e.task.CheckTimeout(), e.noCheck)
	}
	if !slices.Equal(l.task.Check, []string{"sh", "late.sh"}) || len(l.task.Setup) != 1 || l.task.CheckTimeout() != 2*time.Minute {
		t.Errorf("the late base's task: check %v, setup %v, timeout %s", l.task.Check, l.task.Setup, l.task.CheckTimeout())
	}
	if n.noCheck == "" || len(n.task.Check) != 0 {
		t.Errorf("a base without a workflow: check %v, noCheck %q", n.task.Check, n.noCheck)
	}
	if r := b.validate(ctx, nil, n); r.Kept || r.Reason != DropNoCheck {
		t.Errorf("a base without a workflow is %+v, want dropped as %s", r, DropNoCheck)
	}

	b.o.Check = []string{"sh", "mine.sh"}
	n = &candidate{task: Task{BaseCommit: none}}
	if err := b.setChecks(ctx, []*candidate{n}); err != nil || n.noCheck != "" || !slices.Equal(n.task.Check, b.o.Check) {
		t.Errorf("--check at a base without a workflow: %v, %q, %v", n.task.Check, n.noCheck, err)
	}
}
