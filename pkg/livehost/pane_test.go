package livehost

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aceworks/ace/internal/livetest"
	"github.com/aceworks/ace/internal/testkit"
	"github.com/aceworks/ace/pkg/modelserver"
	"github.com/aceworks/ace/pkg/tmuxops"
	"github.com/aceworks/ace/pkg/usage"
)

// typed is the line the human types into the pane: the tty and the host must pass it on byte for byte.
const typed = "Typed in the pane: a 'quoted' line with $HOME and \"more\"."

func TestPaneClaude(t *testing.T) { paneTest(t, livetest.Claude) }
func TestPaneCodex(t *testing.T)  { paneTest(t, livetest.Codex) }
func TestPaneGemini(t *testing.T) { paneTest(t, livetest.Gemini) }

// paneTest runs the live host as ace does, in a tmux pane through the env-file launcher, with each pinned
// version of a real CLI: the task goes in through the Client, the write's permission is allowed through it, a
// line typed into the pane reaches the model as the next message, the pane shows the conversation, and SIGTERM
// stops the host cleanly.
func paneTest(t *testing.T, cs livetest.Case) {
	needTmux(t)
	cs.Each(t, modelserver.Scenario{Turns: []modelserver.Turn{
		modelserver.ReadFile("IN.txt"),
		modelserver.WriteFile("OUT.txt", livetest.OutContent),
		modelserver.Text("Turn one done."),
		modelserver.Text("Answer to the typed line."),
	}}, func(t *testing.T, e livetest.Env) {
		begin := time.Now()
		p := startPane(t, cs, e)
		ctx, c := e.Ctx, p.client
		if err := c.Send(ctx, livetest.Prompt1); err != nil {
			t.Fatalf("send the task: %v", err)
		}
		p.waitTurns("turn 1 to end", 1, true)
		t.Logf("turn 1 ended after %s", time.Since(begin).Round(time.Millisecond))
		if got, err := os.ReadFile(filepath.Join(e.Dir, "OUT.txt")); err != nil || string(got) != livetest.OutContent {
			t.Errorf("OUT.txt = %q, %v; want %q", got, err, livetest.OutContent)
		}
		p.typeLine(typed)
		p.waitTurns("the typed line's turn to end", 2, true)
		if !e.Server.SawUserText(typed) {
			t.Errorf("the typed line did not reach the model byte-exact; user texts %q", e.Server.UserTexts())
		}
		screen := p.screen()
		for _, want := range []string{"● Turn one done.", "? permission ", "✓ allowed (ace)", "▶ you: " + typed, "● Answer to the typed line.", "■ turn completed"} {
			if !strings.Contains(screen, want) {
				t.Errorf("the pane does not show %q", want)
			}
		}
		t.Logf("the pane after %s:\n%s", time.Since(begin).Round(time.Millisecond), screen)

		if err := syscall.Kill(p.hostPID, syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		testkit.WaitFor(t, "the host to stop", 30*time.Second, func() bool {
			_, err := c.Status(ctx)
			return errors.Is(err, ErrNotRunning)
		})
		checkTranscript(t, cs, e, p.spec.Transcript)
	})
}

// checkTranscript checks what the host recorded: the session, the task from ace, exactly one permission allowed
// by ace, the typed line from the terminal, each turn's usage as the server billed it, the exit on SIGTERM, and
// no secret.
func checkTranscript(t *testing.T, cs livetest.Case, e livetest.Env, path string) {
	t.Helper()
	recs, err := ReadTranscript(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	k := byKind(recs)
	users, perms, answered, done := k[KindUser], k[KindPermission], k[KindAnswered], k[KindTurnDone]
	for _, r := range append(k[KindError], k[KindLimit]...) {
		t.Errorf("record %+v", r)
	}
	t.Logf("transcript: %s", kinds(recs))
	if recs[0].Kind != KindSession || recs[0].SessionID == "" {
		t.Errorf("first record %+v, want the session", recs[0])
	}
	if len(users) != 2 || users[0].Text != livetest.Prompt1 || users[0].From != FromAce || users[1].Text != typed || users[1].From != FromTerminal {
		t.Errorf("user records %+v", users)
	}
	if len(perms) != 1 || len(answered) != 1 || answered[0].ID != perms[0].ID || answered[0].From != FromAce {
		t.Errorf("permissions %+v answered %+v", perms, answered)
	}
	for i, turns := range [][2]int{{0, 2}, {3, 3}} {
		b := cs.Billed(e.Server, turns[0], turns[1])
		want := usage.Usage{InputTokens: b.InputTokens, OutputTokens: b.OutputTokens, CacheReadTokens: b.CachedTokens,
			CacheWriteTokens: b.CacheWriteTokens}
		if i >= len(done) || done[i].Status != "completed" || done[i].Usage == nil || *done[i].Usage != want {
			t.Errorf("turn %d: %+v, want completed with the usage billed, %+v", i+1, done[min(i, len(done)-1)], want)
		}
	}
	if last := recs[len(recs)-1]; last.Kind != KindExit || last.Text != "stopped by terminated" {
		t.Errorf("last record %+v, want the exit on SIGTERM", last)
	}
	if b, _ := os.ReadFile(path); strings.Contains(string(b), modelserver.APIKey) {
		t.Errorf("the API key is in the transcript")
	}
}

func needTmux(t *testing.T) {
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed")
	}
}

// pane is the live host running in a tmux pane, and the test's ways to it.
type pane struct {
	t       *testing.T
	ctx     context.Context
	spec    Spec
	tmux    *tmuxops.Client
	client  *Client
	hostPID int
}

// startPane starts the host in a tmux session "live" on a tmux server of its own, as the live runner does: the
// pane runs `ace __launch ENVFILE -- ace __live SPECFILE`, the launcher putting the API key in the environment.
// The server and every process below it are killed by PID when the test ends; the pane is logged if it failed.
func startPane(t *testing.T, cs livetest.Case, e livetest.Env) *pane {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	runDir := t.TempDir()
	p := &pane{t: t, ctx: e.Ctx, spec: Spec{Agent: cs.CLI, Argv: cs.Argv(e.CLI.Bin), Dir: e.Dir,
		Transcript: filepath.Join(runDir, "live", "transcript.jsonl"), Socket: filepath.Join(runDir, "host.sock")}}
	p.client = Dial(p.spec.Socket)
	env := []string{"TMUX_TMPDIR=" + filepath.Join(runDir, "tmux")}
	secrets := map[string]string{}
	for _, kv := range e.Home.Env {
		if k, v, _ := strings.Cut(kv, "="); v == modelserver.APIKey {
			secrets[k] = v
			p.spec.SecretNames = append(p.spec.SecretNames, k)
		} else {
			env = append(env, kv)
		}
	}
	if err := os.MkdirAll(filepath.Join(runDir, "tmux"), 0o700); err != nil {
		t.Fatal(err)
	}
	specPath := filepath.Join(runDir, "spec.json")
	if err := WriteSpec(specPath, p.spec); err != nil {
		t.Fatal(err)
	}
	// The tmux server gets the HOME's environment and nothing of the test's: the pane inherits it.
	p.tmux = tmuxops.New("livehost", tmuxops.WithExec(func(ctx context.Context, name string, args ...string) *exec.Cmd {
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Env = env
		return cmd
	}))
	t.Cleanup(func() {
		if t.Failed() {
			screen, _ := p.tmux.Capture(context.Background(), "live", 500)
			t.Logf("the pane:\n%s", screen)
		}
		if err := p.tmux.KillServer(context.Background()); err != nil {
			t.Errorf("kill the tmux server: %v", err)
		}
	})
	if err := p.tmux.NewSession(e.Ctx, tmuxops.SessionSpec{Name: "live", Dir: e.Dir, Argv: []string{exe, ChildArg, specPath},
		Secrets: secrets, Width: 200, Height: 60, Launcher: []string{exe, "__launch"},
		RuntimeDir: filepath.Join(runDir, "env")}); err != nil {
		t.Fatal(err)
	}
	panes, err := p.tmux.Panes(e.Ctx)
	if err != nil || len(panes) != 1 {
		t.Fatalf("panes %+v, %v", panes, err)
	}
	p.hostPID = panes[0].PID
	p.waitStatus("the host's socket", func(Status) bool { return true })
	return p
}

func (p *pane) waitStatus(what string, cond func(Status) bool) Status {
	p.t.Helper()
	return waitStatus(p.t, p.client, what, 2*time.Minute, cond)
}

// waitTurns waits until n turns have ended, allowing through the client each permission asked meanwhile when
// allow is set.
func (p *pane) waitTurns(what string, n int, allow bool) Status {
	p.t.Helper()
	return p.waitStatus(what, func(s Status) bool {
		for _, r := range s.Pending {
			if allow && r.Kind == KindPermission {
				if err := p.client.Allow(p.ctx, r.ID, true); err != nil {
					p.t.Errorf("allow %s: %v", r.ID, err)
				}
			}
		}
		return s.Turns >= n
	})
}

// typeLine types text into the pane and presses Enter.
func (p *pane) typeLine(text string) {
	p.t.Helper()
	if err := p.tmux.SendKeys(p.ctx, "live", "-l", text); err != nil {
		p.t.Fatal(err)
	}
	if err := p.tmux.SendKeys(p.ctx, "live", "Enter"); err != nil {
		p.t.Fatal(err)
	}
}

// screen is the pane's screen and scrollback.
func (p *pane) screen() string {
	p.t.Helper()
	s, err := p.tmux.Capture(p.ctx, "live", 500)
	if err != nil {
		p.t.Fatal(err)
	}
	return s
}

// A question answered by a line typed into the pane, and Ctrl-C in the pane interrupting a turn that waits for
// a permission (which claude withdraws), with claude.
func TestPaneQuestionAndCtrlC(t *testing.T) {
	needTmux(t)
	const answer = "None of them: \"teal\", as in $TEAL."
	cs := livetest.Claude
	cs.Each(t, modelserver.Scenario{Turns: []modelserver.Turn{
		modelserver.Ask("Which colour should the button be?", "Red", "Blue"),
		modelserver.Text("Teal it is."),
		modelserver.WriteFile("OUT.txt", livetest.OutContent),
	}}, func(t *testing.T, e livetest.Env) {
		p := startPane(t, cs, e)
		ctx, c := e.Ctx, p.client
		pending := func(kind string) func(Status) bool {
			return func(s Status) bool { return len(s.Pending) == 1 && s.Pending[0].Kind == kind }
		}
		if err := c.Send(ctx, "Ask me which colour the button should be."); err != nil {
			t.Fatal(err)
		}
		p.waitStatus("the question", pending(KindQuestion))
		p.typeLine(answer)
		p.waitTurns("the question's turn to end", 1, false)
		if !e.Server.SawToolOutput(answer) {
			t.Errorf("the model did not get the typed answer %q; tool outputs %q", answer, e.Server.ToolOutputs())
		}

		if err := c.Send(ctx, "Now write OUT.txt."); err != nil {
			t.Fatal(err)
		}
		p.waitStatus("the permission", pending(KindPermission))
		if err := p.tmux.SendKeys(ctx, "live", "C-c"); err != nil {
			t.Fatal(err)
		}
		if s := p.waitTurns("the interrupted turn to end", 2, false); s.Busy || len(s.Pending) != 0 {
			t.Errorf("after Ctrl-C: %+v", s)
		}
		if _, err := os.Stat(filepath.Join(e.Dir, "OUT.txt")); err == nil {
			t.Errorf("OUT.txt was written although its permission was never given")
		}
		recs, _ := ReadTranscript(p.spec.Transcript, 0)
		t.Logf("transcript: %s", kinds(recs))
		k := byKind(recs)
		q, a, done := k[KindQuestion], k[KindAnswered], k[KindTurnDone]
		if len(q) != 1 || q[0].Text != "Which colour should the button be?" || strings.Join(q[0].Options, ",") != "Red,Blue" {
			t.Errorf("question records %+v", q)
		}
		if len(a) != 1 || a[0].Text != answer || a[0].From != FromTerminal {
			t.Errorf("answered records %+v", a)
		}
		if len(done) != 2 || done[1].Status != "interrupted" {
			t.Errorf("turn_done records %+v", done)
		}
		// claude withdrew the permission its interrupted turn waited on.
		if p, w := k[KindPermission], k[KindWithdrawn]; len(p) != 1 || len(w) != 1 || w[0].ID != p[0].ID || w[0].Seq > done[1].Seq {
			t.Errorf("permission records %+v, withdrawn records %+v", p, w)
		}
	})
}

func byKind(recs []Record) map[string][]Record {
	m := map[string][]Record{}
	for _, r := range recs {
		m[r.Kind] = append(m[r.Kind], r)
	}
	return m
}
