package local

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aceworks/ace/pkg/tracker"
)

func folder(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "issues"), 0o755)
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("repo.toml", "name = \"demo/hello\"\nremote = \"remote.git\"\n[permissions]\nreader = \"read\"\n")
	write("issues/1.md", "+++\ntitle = \"First\"\nlabels = [\"ace\"]\nauthor = \"you\"\ncreated = 2026-01-01T00:00:00Z\n+++\nDo the thing.\n")
	write("issues/2.md", "---\ntitle: Second\nlabels: [ace, other]\nauthor: me\ncreated: 2026-01-02T00:00:00Z\nlabeled_by: reader\n---\nYAML body\n")
	write("issues/3.md", "+++\ntitle = \"Closed\"\nlabels = [\"ace\"]\nstate = \"closed\"\n+++\n")
	return dir
}

func TestRoundTrip(t *testing.T) {
	ctx := context.Background()
	tr, err := New(folder(t))
	if err != nil {
		t.Fatal(err)
	}
	list, err := tr.ListLabeled(ctx, "demo/hello", "ace")
	if err != nil || len(list) != 2 || list[0].Number != 1 || list[1].Body != "YAML body\n" {
		t.Fatalf("list %+v %v", list, err)
	}
	if err := tr.AddLabels(ctx, "demo/hello", 1, "ace:running", "ace"); err != nil {
		t.Fatal(err)
	}
	if err := tr.RemoveLabel(ctx, "demo/hello", 1, "ace"); err != nil {
		t.Fatal(err)
	}
	is, err := tr.Issue(ctx, "demo/hello", 1)
	if err != nil || strings.Join(is.Labels, ",") != "ace:running" || is.Body != "Do the thing.\n" {
		t.Fatalf("issue %+v %v", is, err)
	}
	c, err := tr.CreateComment(ctx, "demo/hello", 1, "<!-- ace:status --> hi")
	if err != nil {
		t.Fatal(err)
	}
	before := time.Now()
	time.Sleep(5 * time.Millisecond)
	if _, err := tr.AddComment(ctx, "demo/hello", 1, "you", "an answer"); err != nil {
		t.Fatal(err)
	}
	if _, err := tr.EditComment(ctx, "demo/hello", c.ID, "<!-- ace:status --> edited"); err != nil {
		t.Fatal(err)
	}
	found, err := tr.FindComment(ctx, "demo/hello", 1, "<!-- ace:status -->")
	if err != nil || found == nil || found.Body != "<!-- ace:status --> edited" {
		t.Fatalf("find %+v %v", found, err)
	}
	since, _ := tr.Comments(ctx, "demo/hello", 1, before)
	if len(since) != 2 { // the answer, and the edited status comment
		t.Fatalf("comments since: %+v", since)
	}
	if who, _ := tr.Labeler(ctx, "demo/hello", 2, "ace"); who != "reader" {
		t.Fatalf("labeler %q", who)
	}
	if p, _ := tr.Permission(ctx, "demo/hello", "reader"); p.AtLeast(tracker.PermWrite) {
		t.Fatal("reader has write")
	}
	pr, err := tr.CreatePR(ctx, "demo/hello", tracker.NewPR{Title: "t", Body: "Closes #1", Head: "ace/1-x", Base: "main"})
	if err != nil {
		t.Fatal(err)
	}
	again, _ := tr.CreatePR(ctx, "demo/hello", tracker.NewPR{Title: "t", Head: "ace/1-x", Base: "main"})
	if again.Number != pr.Number {
		t.Fatal("second PR for the same head")
	}
	if f, _ := tr.FindPR(ctx, "demo/hello", "ace/1-x"); f == nil || f.Body != "Closes #1" {
		t.Fatalf("FindPR %+v", f)
	}
	if r, _ := tr.Repo(ctx, "demo/hello"); !filepath.IsAbs(r.CloneURL) {
		t.Fatalf("relative remote not resolved: %s", r.CloneURL)
	}
	if _, err := tr.Issue(ctx, "other/repo", 1); err == nil {
		t.Fatal("a foreign repository was accepted")
	}
}

func TestMalformedIssueNamesFileAndLine(t *testing.T) {
	dir := folder(t)
	os.WriteFile(filepath.Join(dir, "issues", "9.md"), []byte("+++\ntitle = \"ok\"\nlabels = [\"ace\"\nstate = \"open\"\n+++\n"), 0o644)
	tr, _ := New(dir)
	list, err := tr.ListLabeled(context.Background(), "demo/hello", "ace")
	if err == nil || !strings.Contains(err.Error(), "9.md:") {
		t.Fatalf("err = %v, want one naming 9.md and a line", err)
	}
	if len(list) != 2 {
		t.Fatalf("the good issues were not listed: %d", len(list))
	}
}

// TestConcurrentWritersLoseNothing adds labels and comments from goroutines and from another process at once.
func TestConcurrentWritersLoseNothing(t *testing.T) {
	dir := folder(t)
	if os.Getenv("ACE_LOCAL_HELPER") != "" {
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperWriter$")
	cmd.Env = append(os.Environ(), "ACE_LOCAL_HELPER="+dir)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tr, _ := New(dir)
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 10; i++ {
				if err := tr.AddLabels(context.Background(), "demo/hello", 1, fmt.Sprintf("g%d-%d", g, i)); err != nil {
					t.Error(err)
				}
				if _, err := tr.AddComment(context.Background(), "demo/hello", 1, "g", fmt.Sprintf("g%d-%d", g, i)); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("helper: %v", err)
	}
	is, _ := tr.Issue(context.Background(), "demo/hello", 1)
	cs, _ := tr.Comments(context.Background(), "demo/hello", 1, time.Time{})
	if len(is.Labels) != 1+40+20 || len(cs) != 60 {
		t.Fatalf("labels %d (want 61), comments %d (want 60)", len(is.Labels), len(cs))
	}
}

func TestHelperWriter(t *testing.T) {
	dir := os.Getenv("ACE_LOCAL_HELPER")
	if dir == "" {
		t.Skip("helper process only")
	}
	tr, err := New(dir)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 20; i++ {
		if err := tr.AddLabels(context.Background(), "demo/hello", 1, fmt.Sprintf("p-%d", i)); err != nil {
			t.Fatal(err)
		}
		if _, err := tr.AddComment(context.Background(), "demo/hello", 1, "p", fmt.Sprintf("p-%d", i)); err != nil {
			t.Fatal(err)
		}
	}
}
