package realcli_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aceworks/ace/internal/gittest"
	"github.com/aceworks/ace/internal/realcli"
	"github.com/aceworks/ace/pkg/agents"
	"github.com/aceworks/ace/pkg/modelserver"
	"github.com/aceworks/ace/pkg/usage"
)

// TestSessionUsage runs each CLI in tmux on a fresh HOME through a scripted task (read a file, say something and
// write one, answer) and reads what it spent from the session files it wrote (agents.Profile.SessionUsage): the
// tokens of every kind must be exactly what the model server billed for the conversation. Side requests (a
// session title) are billed too, but no CLI records them in its sessions. ACE_RECORD_SESSIONS=1 keeps the
// session files, trimmed, as pkg/agents/testdata/sessions/<cli>-<version>/ (see the README there).
func TestSessionUsage(t *testing.T) {
	for _, c := range realcli.PinnedAll(t) {
		cli, bin := c.Name, c.Bin
		t.Run(c.Label(), func(t *testing.T) {
			t.Parallel()
			realcli.Require(t, c)
			version := c.Version
			fixtures, _ := filepath.Abs(filepath.Join("..", "..", "pkg", "agents", "testdata", "sessions", cli+"-"+version))
			if !realcli.Enter(t) {
				return
			}
			repo := gittest.WorkRepo(t)
			if err := os.WriteFile(filepath.Join(repo, "NOTES.md"), []byte("Some notes.\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			want := "written from tmux\n"
			srv := modelserver.Start(t, modelserver.Scenario{Dir: repo, Final: "All done.", Turns: []modelserver.Turn{
				modelserver.ReadFile("NOTES.md"),
				// claude writes the text and the tool call as two lines of one response.
				modelserver.WriteFile("TMUX.md", want).Saying("Writing the file now."),
			}})
			h := realcli.NewHome(t, c, srv.URL())
			if cli == "gemini" {
				h.Setenv("GEMINI_CLI_TRUST_WORKSPACE", "true") // as ace runs it (gemini.runEnv, pkg/agents/gemini)
			}
			start := time.Now()
			tm := startTmux(t, h, repo, bin)
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
			defer cancel()
			answered := func() bool {
				for _, r := range srv.ModelRequests() {
					if r.Final {
						return true
					}
				}
				return false
			}
			passed, _ := driveScreens(ctx, t, tm, interactive[cli], prompt, answered)
			if ctx.Err() != nil {
				t.Fatalf("the script did not end after screens %v; screen now:\n%s", passed, tm.capture(t))
			}
			if got, err := os.ReadFile(filepath.Join(repo, "TMUX.md")); err != nil || string(got) != want {
				t.Errorf("TMUX.md = %q, %v", got, err)
			}

			prof, _ := agents.Builtin(cli)
			served := srv.Served()
			wantTok := usage.Usage{InputTokens: served.InputTokens, OutputTokens: served.OutputTokens,
				CacheReadTokens: served.CacheReadTokens, CacheWriteTokens: served.CacheWriteTokens}
			// The CLI writes the last response's usage after drawing its answer: wait for the file to say it.
			var got agents.Usage
			for ctx.Err() == nil {
				var err error
				if got, err = prof.SessionUsage(agents.UserEnv{Home: h.Dir}, repo, start); err != nil {
					t.Fatal(err)
				}
				if got.Usage == wantTok {
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
			t.Logf("served %+v (side requests %+v); the sessions say %+v", served, srv.SideUsage(), got)
			if got.Usage != wantTok || got.Sessions != 1 || len(got.Models) != 1 {
				t.Fatalf("session usage %+v, want %+v in one session of one model", got, wantTok)
			}
			if wantTok.InputTokens == 0 || wantTok.OutputTokens == 0 || wantTok.CacheReadTokens == 0 {
				t.Errorf("the model server billed a zero count: %+v", served)
			}
			if later, err := prof.SessionUsage(agents.UserEnv{Home: h.Dir}, repo, time.Now()); err != nil || later.Tokens() != 0 {
				t.Errorf("usage since now = %+v, %v; want none", later, err)
			}
			if os.Getenv("ACE_RECORD_SESSIONS") != "" {
				recordSessions(t, cli, h.Dir, repo, srv.URL(), fixtures)
			}
		})
	}
}

// The recorded files stand for a user's HOME and working copy at these paths (as testdata/real's screens do).
const (
	recordedHome    = "/home/user"
	recordedWorkdir = "/home/user/project"
)

// recordSessions copies the session files cli wrote under home into dir/home, their paths and contents moved
// from home and repo to recordedHome and recordedWorkdir, the server's address replaced, and every string over
// 300 characters (system prompts, tool schemas, encrypted reasoning) cut short. Token counts stay as they are.
func recordSessions(t *testing.T, cli, home, repo, server, dir string) {
	t.Helper()
	var files []string // relative to home
	var rename func(rel string) string
	replace := []string{repo, recordedWorkdir, home, recordedHome, server, "<SERVER>"}
	switch cli {
	case "claude":
		files = glob(t, home, ".claude/projects/*/*.jsonl")
		from, to := claudeDirName(repo), claudeDirName(recordedWorkdir)
		rename = func(rel string) string { return strings.Replace(rel, "/"+from+"/", "/"+to+"/", 1) }
	case "codex":
		files = glob(t, home, ".codex/sessions/*/*/*/rollout-*.jsonl")
		rename = func(rel string) string { return rel }
	case "gemini":
		// The chats sit under the project's short name in projects.json (its folder's base name); the
		// recorded one is "project", and the header's projectHash is the recorded path's.
		files = glob(t, home, ".gemini/tmp/*/chats/session-*.jsonl")
		files = append(files, ".gemini/projects.json")
		short := filepath.Base(filepath.Dir(filepath.Dir(files[0])))
		rename = func(rel string) string {
			return strings.Replace(rel, ".gemini/tmp/"+short+"/", ".gemini/tmp/project/", 1)
		}
		replace = append(replace, hash(repo), hash(recordedWorkdir), `"`+short+`"`, `"project"`,
			"/.gemini/tmp/"+short+"/", "/.gemini/tmp/project/", "/.gemini/tmp/"+short+`\n`, `/.gemini/tmp/project\n`)
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	r := strings.NewReplacer(replace...)
	for _, rel := range files {
		b, err := os.ReadFile(filepath.Join(home, rel))
		if err != nil {
			t.Fatal(err)
		}
		out := trimJSONLines(t, []byte(r.Replace(string(b))))
		dst := filepath.Join(dir, "home", rename(rel))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, out, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("recorded %s", dst)
	}
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			b, _ := os.ReadFile(path)
			for _, leak := range []string{filepath.Dir(home), filepath.Dir(repo), "127.0.0.1", realcli.TestAPIKey} {
				if bytes.Contains(b, []byte(leak)) {
					t.Errorf("%s still holds %s", path, leak)
				}
			}
		}
		return nil
	})
}

func glob(t *testing.T, home, pattern string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(home, pattern))
	if err != nil || len(m) == 0 {
		t.Fatalf("no %s in the HOME (%v)", pattern, err)
	}
	for i, p := range m {
		m[i], _ = filepath.Rel(home, p)
	}
	return m
}

// claudeDirName is claude's folder name for a short path.
func claudeDirName(path string) string {
	return regexp.MustCompile(`[^a-zA-Z0-9]`).ReplaceAllString(path, "-")
}

func hash(path string) string {
	h := sha256.Sum256([]byte(path))
	return hex.EncodeToString(h[:])
}

// jsonString matches a JSON string literal.
var jsonString = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)

// trimJSONLines cuts every JSON string over 300 characters short, leaving the rest of the text as it is.
func trimJSONLines(t *testing.T, b []byte) []byte {
	t.Helper()
	return jsonString.ReplaceAllFunc(b, func(lit []byte) []byte {
		if len(lit) <= 300 {
			return lit
		}
		var s string
		if err := json.Unmarshal(lit, &s); err != nil {
			t.Fatalf("not a JSON string: %.80s…: %v", lit, err)
		}
		r := []rune(s)
		if len(r) <= 300 {
			return lit
		}
		var out bytes.Buffer
		enc := json.NewEncoder(&out)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(string(r[:300]) + "…"); err != nil {
			t.Fatal(err)
		}
		return bytes.TrimSuffix(out.Bytes(), []byte("\n"))
	})
}
