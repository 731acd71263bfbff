package realcli

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestAPIKey is the API key every fresh HOME's environment carries; the model server accepts any.
const TestAPIKey = "sk-modelserver-test-key"

// Home is a fresh HOME for one CLI, holding only what a user of that CLI has, and the environment to run it
// with: HOME, PATH, a terminal, the API key and the variable that points the CLI at the model server.
type Home struct {
	CLI  CLI
	Dir  string
	Env  []string
	Base string // the model server's base URL
}

// GeminiSettings is gemini's settings file, relative to the HOME.
const GeminiSettings = ".gemini/settings.json"

// NewHome builds a fresh HOME for the pinned CLI c talking to the model server at baseURL (http://127.0.0.1:PORT):
//   - all: ~/.gitconfig with a name and e-mail (a user who commits has them);
//   - claude: ANTHROPIC_BASE_URL, ANTHROPIC_API_KEY, ~/.claude.json {"hasCompletedOnboarding": true} (without it
//     claude's first start runs an online onboarding check and exits);
//   - codex: OPENAI_API_KEY and ~/.codex/config.toml with openai_base_url = "<baseURL>/v1";
//   - gemini: GEMINI_API_KEY, GOOGLE_GEMINI_BASE_URL and ~/.gemini/settings.json selecting the "gemini-api-key"
//     auth (what choosing "Gemini API Key" in its auth dialog writes). Without it gemini takes the base URL for
//     its "gateway" auth, which 0.61 refuses headless: exit 41 "Invalid auth method selected.".
//
// Nothing else: dialogs a new user meets (trust, API-key confirmation, auth method) are left for the test.
func NewHome(t testing.TB, c CLI, baseURL string) *Home {
	t.Helper()
	cli := c.Name
	h := &Home{CLI: c, Dir: t.TempDir(), Base: baseURL}
	tmp := filepath.Join(h.Dir, ".tmp")
	// The pinned set's binaries first: ace, tmux and codex-gh find that version, never one installed by hand.
	h.Env = []string{
		"HOME=" + h.Dir, "PATH=" + filepath.Dir(c.Bin) + string(os.PathListSeparator) + os.Getenv("PATH"), "TERM=xterm-256color", "LANG=C.UTF-8", "USER=ace",
		"TMPDIR=" + tmp,
	}
	h.WriteFile(t, ".tmp/.keep", "")
	h.WriteFile(t, ".gitconfig", "[user]\n\tname = Ace Test\n\temail = ace@example.invalid\n[init]\n\tdefaultBranch = main\n")
	switch cli {
	case "claude":
		h.Env = append(h.Env, "ANTHROPIC_BASE_URL="+baseURL, "ANTHROPIC_API_KEY="+TestAPIKey)
		h.WriteFile(t, ".claude.json", `{"hasCompletedOnboarding": true}`+"\n")
	case "codex":
		h.Env = append(h.Env, "OPENAI_API_KEY="+TestAPIKey)
		h.WriteFile(t, ".codex/config.toml", fmt.Sprintf("openai_base_url = %q\n", baseURL+"/v1"))
	case "gemini":
		h.Env = append(h.Env, "GEMINI_API_KEY="+TestAPIKey, "GOOGLE_GEMINI_BASE_URL="+baseURL)
		h.WriteFile(t, GeminiSettings, `{"security": {"auth": {"selectedType": "gemini-api-key"}}}`+"\n")
	default:
		t.Fatalf("realcli: unknown CLI %q", cli)
	}
	return h
}

// WriteFile writes content to rel under the HOME, making directories.
func (h *Home) WriteFile(t testing.TB, rel, content string) {
	t.Helper()
	p := filepath.Join(h.Dir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
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

// Command runs bin with args in dir on this HOME's environment, stdin empty.
func (h *Home) Command(ctx context.Context, dir, bin string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	cmd.Env = append([]string(nil), h.Env...)
	return cmd
}
