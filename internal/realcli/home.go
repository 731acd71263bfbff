package realcli

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aceworks/ace/pkg/modelserver"
)

// TestAPIKey is the API key every fresh HOME's environment carries; the model server accepts any.
const TestAPIKey = modelserver.APIKey

// Home is a fresh HOME for one CLI, holding only what a user of that CLI has, and the environment to run it
// with: HOME, PATH, a terminal, the API key and the variable that points the CLI at the model server.
type Home struct {
	CLI  CLI
	Dir  string
	Env  []string
	Base string // the model server's base URL
}

// GeminiSettings is gemini's settings file, relative to the HOME.
const GeminiSettings = modelserver.GeminiSettings

// NewHome builds a fresh HOME for the pinned CLI c talking to the model server at baseURL (http://127.0.0.1:PORT),
// with what modelserver.ClientFor says that CLI needs and nothing else: dialogs a new user meets (trust, API-key
// confirmation, auth method) are left for the test.
func NewHome(t testing.TB, c CLI, baseURL string) *Home {
	t.Helper()
	h, err := MakeHome(t.TempDir(), c, baseURL)
	if err != nil {
		t.Fatalf("realcli: %v", err)
	}
	return h
}

// MakeHome is NewHome outside a test (bench/live): the fresh HOME is dir, which should be empty.
func MakeHome(dir string, c CLI, baseURL string) (*Home, error) {
	h := &Home{CLI: c, Dir: dir, Base: baseURL}
	client, err := modelserver.ClientFor(c.Name, baseURL, false)
	if err != nil {
		return nil, err
	}
	tmp := filepath.Join(h.Dir, ".tmp")
	// The pinned set's binaries first: ace, tmux and codex-gh find that version, never one installed by hand.
	h.Env = append([]string{
		"HOME=" + h.Dir, "PATH=" + filepath.Dir(c.Bin) + string(os.PathListSeparator) + os.Getenv("PATH"), "TERM=xterm-256color", "LANG=C.UTF-8", "USER=ace",
		"TMPDIR=" + tmp,
	}, client.Env...)
	if err := h.writeFile(".tmp/.keep", ""); err != nil {
		return nil, err
	}
	for rel, content := range client.Files {
		if err := h.writeFile(rel, content); err != nil {
			return nil, err
		}
	}
	return h, nil
}

// WriteFile writes content to rel under the HOME, making directories.
func (h *Home) WriteFile(t testing.TB, rel, content string) {
	t.Helper()
	if err := h.writeFile(rel, content); err != nil {
		t.Fatal(err)
	}
}

func (h *Home) writeFile(rel, content string) error {
	p := filepath.Join(h.Dir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return err
	}
	return os.WriteFile(p, []byte(content), 0o600)
}

// Setenv adds or replaces KEY=value in the environment.
func (h *Home) Setenv(key, value string) {
	for i, kv := range h.Env {
		if strings.HasPrefix(kv, key+"=") {
			h.Env[i] = key + "=" + value
			return
		}
	}
	h.Env = append(h.Env, key+"="+value)
}

// Unsetenv removes KEY from the environment.
func (h *Home) Unsetenv(key string) {
	h.Env = slices.DeleteFunc(h.Env, func(kv string) bool { return strings.HasPrefix(kv, key+"=") })
}

// Command runs bin with args in dir on this HOME's environment, stdin empty.
func (h *Home) Command(ctx context.Context, dir, bin string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	cmd.Env = append([]string(nil), h.Env...)
	return cmd
}
