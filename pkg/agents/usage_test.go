package agents

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aceworks/ace/pkg/usage"
)

// recordedWorkdir is the working copy the recorded sessions ran in (testdata/sessions/README.md).
const recordedWorkdir = "/home/user/project"

// sessionHome is the recorded HOME of agent's tested version.
func sessionHome(t *testing.T, agent string) (Profile, string) {
	t.Helper()
	p, ok := Builtin(agent)
	if !ok {
		t.Fatalf("no agent %s", agent)
	}
	home := filepath.Join("testdata", "sessions", agent+"-"+p.Adapter().Tested.Oldest, "home")
	if _, err := os.Stat(home); err != nil {
		t.Fatalf("%s: no recorded sessions of the tested version: %v", agent, err)
	}
	return p, home
}

func stamp(t *testing.T, s string) time.Time {
	t.Helper()
	ts, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

// TestSessionUsageOfRealFiles reads the session files each CLI wrote in tmux (testdata/sessions): the sums are
// exactly what the model server billed for the three responses of the conversation, by kind and model; a
// moment between two responses leaves out the first; another working copy, or a moment after the last
// response, finds nothing.
func TestSessionUsageOfRealFiles(t *testing.T) {
	t.Parallel()
	cases := []struct {
		agent, model string
		all          usage.Usage
		// secondAt lies between the first and the second response; fromSecond is what the last two spent.
		secondAt   string
		fromSecond usage.Usage
	}{
		{"claude", "claude-opus-4-8",
			usage.Usage{InputTokens: 27782, OutputTokens: 39, CacheReadTokens: 37037, CacheWriteTokens: 9258},
			"2026-11-24T01:54:22.300Z", usage.Usage{InputTokens: 18555, OutputTokens: 27, CacheReadTokens: 24736, CacheWriteTokens: 6183}},
		{"codex", "gpt-6.1-sol",
			usage.Usage{InputTokens: 27564, OutputTokens: 39, CacheReadTokens: 27561},
			"2026-11-24T01:54:35.650Z", usage.Usage{InputTokens: 18469, OutputTokens: 27, CacheReadTokens: 18467}},
		{"gemini", "gemini-3.8-flash",
			usage.Usage{InputTokens: 19034, OutputTokens: 39, CacheReadTokens: 19032},
			"2026-11-24T01:54:58.700Z", usage.Usage{InputTokens: 12742, OutputTokens: 27, CacheReadTokens: 12740}},
	}
	for _, c := range cases {
		t.Run(c.agent, func(t *testing.T) {
			t.Parallel()
			p, home := sessionHome(t, c.agent)
			user := UserEnv{Home: home}
			got, err := p.SessionUsage(user, recordedWorkdir, time.Time{})
			if err != nil {
				t.Fatal(err)
			}
			want := Usage{Usage: c.all, Models: map[string]usage.Usage{c.model: c.all}, Sessions: 1}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("usage %+v, want %+v", got, want)
			}
			if again, _ := p.SessionUsage(user, recordedWorkdir, time.Time{}); !reflect.DeepEqual(again, got) {
				t.Errorf("read again: %+v, want the same %+v", again, got)
			}
			part, err := p.SessionUsage(user, recordedWorkdir, stamp(t, c.secondAt))
			if err != nil || part.Usage != c.fromSecond {
				t.Errorf("usage since %s = %+v, %v; want %+v", c.secondAt, part.Usage, err, c.fromSecond)
			}
			for name, u := range map[string]func() (Usage, error){
				"another working copy": func() (Usage, error) { return p.SessionUsage(user, "/home/user/other", time.Time{}) },
				"a parent folder":      func() (Usage, error) { return p.SessionUsage(user, "/home/user", time.Time{}) },
				"after the last one":   func() (Usage, error) { return p.SessionUsage(user, recordedWorkdir, stamp(t, "2026-11-25T00:00:00Z")) },
				"an empty home":        func() (Usage, error) { return p.SessionUsage(UserEnv{Home: t.TempDir()}, recordedWorkdir, time.Time{}) },
			} {
				if got, err := u(); err != nil || !reflect.DeepEqual(got, Usage{}) {
					t.Errorf("%s: %+v, %v; want nothing", name, got, err)
				}
			}
		})
	}
}

// copyTree copies the files under src to dst, passing each file's path (relative) and content through edit.
func copyTree(t *testing.T, src, dst string, edit func(rel string, b []byte) (string, []byte)) {
	t.Helper()
	err := filepath.WalkDir(src, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, b = edit(rel, b)
		out := filepath.Join(dst, rel)
		if err := os.MkdirAll(filepath.Dir(out), 0o700); err != nil {
			return err
		}
		return os.WriteFile(out, b, 0o600)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// renamed is a session file's path with tag in its name, after the prefix the CLI looks for.
func renamed(rel, tag string) string {
	dir, base := filepath.Split(rel)
	for _, prefix := range []string{"rollout-", "session-"} {
		if rest, ok := strings.CutPrefix(base, prefix); ok {
			return dir + prefix + tag + "-" + rest
		}
	}
	return dir + tag + "-" + base
}

// TestSessionUsageAddsSessions: a second session in the working copy (an agent started again) adds its
// usage; a resumed claude session, which repeats the earlier responses in a file of its own, does not count
// them twice.
func TestSessionUsageAddsSessions(t *testing.T) {
	t.Parallel()
	for _, agent := range []string{"claude", "codex", "gemini"} {
		t.Run(agent, func(t *testing.T) {
			t.Parallel()
			p, recorded := sessionHome(t, agent)
			home := t.TempDir()
			same := func(rel string, b []byte) (string, []byte) { return rel, b }
			copyTree(t, recorded, home, same)
			one, err := p.SessionUsage(UserEnv{Home: home}, recordedWorkdir, time.Time{})
			if err != nil {
				t.Fatal(err)
			}
			// The second session's file has another name, and its responses other request ids.
			copyTree(t, recorded, home, func(rel string, b []byte) (string, []byte) {
				if strings.HasSuffix(rel, ".json") {
					return rel, b
				}
				return renamed(rel, "again"), bytes.ReplaceAll(b, []byte("req_modelserver_"), []byte("req_again_"))
			})
			two, err := p.SessionUsage(UserEnv{Home: home}, recordedWorkdir, time.Time{})
			if err != nil {
				t.Fatal(err)
			}
			var want usage.Usage
			want.Add(one.Usage)
			want.Add(one.Usage)
			if two.Usage != want || two.Sessions != 2 {
				t.Errorf("two sessions: %+v, want %+v in 2 sessions", two, want)
			}
			if agent != "claude" {
				return
			}
			copyTree(t, recorded, home, func(rel string, b []byte) (string, []byte) {
				return renamed(rel, "resumed"), b
			})
			if three, _ := p.SessionUsage(UserEnv{Home: home}, recordedWorkdir, time.Time{}); three.Usage != want {
				t.Errorf("with a resumed copy: %+v, want %+v still", three.Usage, want)
			}
		})
	}
}

// TestSessionUsageFindsTheConfigDir: an isolated home is <root>/homes/<agent>; in the user's home, a variable
// of the agent's env moves the config dir (CLAUDE_CONFIG_DIR), before the user's own.
func TestSessionUsageFindsTheConfigDir(t *testing.T) {
	t.Parallel()
	p, recorded := sessionHome(t, "claude")
	want, err := p.SessionUsage(UserEnv{Home: recorded}, recordedWorkdir, time.Time{})
	if err != nil || want.Tokens() == 0 {
		t.Fatalf("recorded usage %+v, %v", want, err)
	}
	root := t.TempDir()
	same := func(rel string, b []byte) (string, []byte) { return rel, b }
	copyTree(t, recorded, filepath.Join(root, "homes", "claude"), same)
	user := UserEnv{Home: t.TempDir(), Getenv: func(string) string { return "" }}

	iso := p
	iso.Home = "isolated"
	if got, _ := iso.SessionUsage(AgentHome(iso, root, user), recordedWorkdir, time.Time{}); got.Usage != want.Usage {
		t.Errorf("isolated home: %+v, want %+v", got.Usage, want.Usage)
	}
	if got, _ := p.SessionUsage(AgentHome(p, root, user), recordedWorkdir, time.Time{}); got.Tokens() != 0 {
		t.Errorf("the user's empty home: %+v, want nothing", got)
	}
	moved := p
	moved.Env = map[string]string{"CLAUDE_CONFIG_DIR": filepath.Join(root, "homes", "claude", ".claude")}
	user.Getenv = func(k string) string { return "/elsewhere/" + k }
	if got, _ := moved.SessionUsage(AgentHome(moved, root, user), recordedWorkdir, time.Time{}); got.Usage != want.Usage {
		t.Errorf("CLAUDE_CONFIG_DIR in the agent's env: %+v, want %+v", got.Usage, want.Usage)
	}
	custom := Profile{Name: "mine", Command: "mine"}
	if _, err := custom.SessionUsage(user, recordedWorkdir, time.Time{}); err != ErrNoSessionUsage {
		t.Errorf("a custom agent: %v, want ErrNoSessionUsage", err)
	}
}

// TestSessionUsageInABoxHome: a boxed run's home is its agent's to write. Its sessions count as the CLI wrote
// them; a session file the agent swapped for a link out of the home, or a FIFO, is refused (listed, not
// counted, not waited on) and the rest still count; a config dir swapped for a link out of the home is refused
// whole.
func TestSessionUsageInABoxHome(t *testing.T) {
	t.Parallel()
	for _, agent := range []string{"claude", "codex", "gemini"} {
		t.Run(agent, func(t *testing.T) {
			t.Parallel()
			p, recorded := sessionHome(t, agent)
			want, err := p.SessionUsage(UserEnv{Home: recorded}, recordedWorkdir, time.Time{})
			if err != nil || want.Tokens() == 0 {
				t.Fatalf("recorded usage %+v, %v", want, err)
			}
			home := t.TempDir()
			copyTree(t, recorded, home, func(rel string, b []byte) (string, []byte) { return rel, b })
			box := UserEnv{Home: home, Box: true}
			if got, err := p.SessionUsage(box, recordedWorkdir, time.Time{}); err != nil || got.Usage != want.Usage || len(got.Refused) != 0 {
				t.Fatalf("in a box home: %+v, %v; want %+v", got, err, want.Usage)
			}
			// Beside the real sessions: a link to a secret and a FIFO, named as session files are.
			secret := filepath.Join(t.TempDir(), "secret.jsonl")
			if err := os.WriteFile(secret, []byte(`{"type":"assistant"}`+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			var sessionDir string
			_ = filepath.WalkDir(home, func(path string, d fs.DirEntry, err error) error {
				if err == nil && !d.IsDir() && strings.HasSuffix(path, ".jsonl") && sessionDir == "" {
					sessionDir = filepath.Dir(path)
				}
				return nil
			})
			if sessionDir == "" {
				t.Fatal("no session file in the recorded home")
			}
			base := map[string]string{"claude": "", "codex": "rollout-", "gemini": "session-"}[agent]
			if err := os.Symlink(secret, filepath.Join(sessionDir, base+"linked.jsonl")); err != nil {
				t.Fatal(err)
			}
			if err := syscall.Mkfifo(filepath.Join(sessionDir, base+"fifo.jsonl"), 0o600); err != nil {
				t.Fatal(err)
			}
			got, err := p.SessionUsage(box, recordedWorkdir, time.Time{})
			if err != nil || got.Usage != want.Usage || len(got.Refused) != 2 {
				t.Errorf("with a link and a FIFO: %+v, %v; want %+v and both refused", got, err, want.Usage)
			}
			// The config dir itself moved out of the home, and a link left in its place.
			dir := p.Adapter().ConfigDir(home, nil)
			moved := filepath.Join(t.TempDir(), "moved")
			if err := os.Rename(dir, moved); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(moved, dir); err != nil {
				t.Fatal(err)
			}
			if got, err := p.SessionUsage(box, recordedWorkdir, time.Time{}); got.Tokens() != 0 || (err == nil && len(got.Refused) == 0) {
				t.Errorf("a config dir linked out of the home: %+v, %v; want it refused", got, err)
			}
		})
	}
}
