package realcli_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aceworks/ace/internal/gittest"
	"github.com/aceworks/ace/internal/realcli"
	"github.com/aceworks/ace/pkg/modelserver"
)

// prompt carries what a shell or a template would mangle; it must reach the model byte-exact.
const prompt = "Fix \"the quotes\", keep $HOME and ${USER} literal, run `git status` later.\n" +
	"Second line: a \\ backslash and 'single' quotes."

// headlessArgs is each CLI's headless command as a user runs it (prompt in argv), and the flags it needs here.
func headlessArgs(cli string) []string {
	switch cli {
	case "claude":
		return []string{"-p", prompt, "--output-format", "stream-json", "--verbose", "--permission-mode", "acceptEdits"}
	case "codex":
		return []string{"exec", "--json", "--sandbox", "workspace-write", prompt}
	default:
		return []string{"-p", prompt, "--output-format", "stream-json", "--approval-mode", "yolo"}
	}
}

func TestHeadlessWritesFile(t *testing.T) {
	for _, c := range realcli.PinnedAll(t) {
		cli, bin := c.Name, c.Bin
		t.Run(c.Label(), func(t *testing.T) {
			t.Parallel()
			realcli.Require(t, c)
			if !realcli.Enter(t) {
				return
			}
			repo := gittest.WorkRepo(t)
			want := "hello from the scripted model\nline \"two\" with $HOME\n"
			srv := modelserver.Start(t, modelserver.Scenario{
				Dir:   repo,
				Turns: []modelserver.Turn{modelserver.WriteFile("NOTES.md", want)},
				Final: "All done.",
			})
			h := realcli.NewHome(t, c, srv.URL())
			switch cli {
			case "gemini":
				h.Setenv("GEMINI_CLI_TRUST_WORKSPACE", "true")
			}
			ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
			defer cancel()
			start := time.Now()
			cmd := h.Command(ctx, repo, bin, headlessArgs(cli)...)
			out, err := cmd.CombinedOutput()
			t.Logf("%s exited after %s: %v", cli, time.Since(start).Round(time.Millisecond), err)
			defer func() {
				if t.Failed() {
					t.Logf("output:\n%s", out)
					dumpRequests(t, srv)
					return
				}
				if os.Getenv("MODELSERVER_DUMP") != "" {
					dumpRequests(t, srv)
				}
				for _, r := range srv.Requests() {
					t.Logf("%s %s status=%d side=%v turn=%d final=%v tools=%d", r.Method, r.Path, r.Status, r.Side, r.Turn, r.Final, len(r.Tools))
				}
			}()
			if err != nil {
				t.Fatalf("%s: %v", cli, err)
			}
			got, err := os.ReadFile(filepath.Join(repo, "NOTES.md"))
			if err != nil {
				t.Fatalf("the scripted write did not happen: %v", err)
			}
			if string(got) != want {
				t.Errorf("NOTES.md = %q, want %q", got, want)
			}
			if !srv.SawUserText(prompt) {
				t.Errorf("the prompt did not reach the model byte-exact; user texts: %q", srv.UserTexts())
			}
			if !strings.Contains(string(out), "All done.") {
				t.Errorf("the final text is not in the output")
			}
		})
	}
}

func dumpRequests(t *testing.T, srv *modelserver.Server) {
	t.Helper()
	for i, r := range srv.Requests() {
		if d := os.Getenv("MODELSERVER_DUMP"); d != "" {
			_ = os.WriteFile(filepath.Join(d, t.Name()[strings.LastIndex(t.Name(), "/")+1:]+"-"+strconv.Itoa(i)+".json"), r.RawBody, 0o644)
		}
		hdr, _ := json.Marshal(r.Header)
		t.Logf("request %d: %s %s?%s status=%d side=%v turn=%d tools=%v\n  headers=%s\n  body=%.3000s",
			i, r.Method, r.Path, r.Query, r.Status, r.Side, r.Turn, r.Tools, hdr, r.RawBody)
	}
}
