package gemini

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestSameMinute(t *testing.T) {
	home := t.TempDir()
	env := []string{"HOME=/elsewhere", "HOME=" + home} // the last one counts, as in exec
	id := "7787ca63-8e9c-4660-ade5-fac65a224956"
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := sameMinute(ctx, env, id); err != nil {
		t.Fatalf("no session file: %v, want no wait", err)
	}
	now := time.Now().UTC()
	if now.Second() >= 59 {
		time.Sleep(2 * time.Second) // keep the file's minute and the check's the same
		now = time.Now().UTC()
	}
	chats := filepath.Join(home, ".gemini", "tmp", "project", "chats")
	if err := os.MkdirAll(chats, 0o700); err != nil {
		t.Fatal(err)
	}
	name := "session-" + now.Format("2006-01-02T15-04") + "-" + id[:8] + ".jsonl"
	if err := os.WriteFile(filepath.Join(chats, name), []byte("{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := sameMinute(ctx, env, id); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a session file of this minute: %v, want a wait cut short by the context", err)
	}
	if err := sameMinute(context.Background(), []string{"GEMINI_CLI_HOME=" + t.TempDir(), "HOME=" + home}, id); err != nil {
		t.Fatalf("GEMINI_CLI_HOME elsewhere: %v, want no wait", err)
	}
}
