package gittest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestHTTPServerCloneAndPushNeedTheToken(t *testing.T) {
	root := t.TempDir()
	BareRepo(t, filepath.Join(root, "acme"), "widgets", nil)
	srv := NewHTTPServer(t, root, "s3cret-token")
	url := srv.URL("acme/widgets.git")

	work := t.TempDir()
	bad := exec.Command("git", "-c", "credential.helper=", "clone", "-q", strings.Replace(url, "http://", "http://x:wrong@", 1), filepath.Join(work, "bad"))
	bad.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0")
	if out, err := bad.CombinedOutput(); err == nil {
		t.Fatalf("clone with a wrong token succeeded: %s", out)
	}
	if srv.Denied() == 0 {
		t.Fatal("wrong token was not counted as denied")
	}

	authed := strings.Replace(url, "http://", "http://x-access-token:s3cret-token@", 1)
	dir := filepath.Join(work, "good")
	Run(t, work, "clone", "-q", authed, dir)
	if err := os.WriteFile(filepath.Join(dir, "new.txt"), []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	Run(t, dir, "add", "new.txt")
	Run(t, dir, "commit", "-q", "-m", "add new.txt")
	Run(t, dir, "push", "-q", "origin", "HEAD:refs/heads/feature")
	if srv.Pushes() != 1 {
		t.Fatalf("pushes = %d, want 1", srv.Pushes())
	}
	got := Run(t, filepath.Join(root, "acme", "widgets.git"), "log", "--format=%s", "-1", "feature")
	if got != "add new.txt" {
		t.Fatalf("remote feature branch head = %q", got)
	}
}
