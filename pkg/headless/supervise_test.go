package headless_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aceworks/ace/internal/testkit"
	"github.com/aceworks/ace/pkg/agents"
	"github.com/aceworks/ace/pkg/fakeagent"
	"github.com/aceworks/ace/pkg/headless"
	"github.com/aceworks/ace/pkg/sandbox"
	"github.com/aceworks/ace/pkg/usage"
)

// TestMain lets the test binary be the supervisor and the fake headless agent, as ace is in production.
func TestMain(m *testing.M) {
	os.Exit(testkit.Main(m, nil, testkit.Commands(map[string]func([]string) int{
		"__headless":     func(args []string) int { return headless.SupervisorMain(agents.Parsers(), args) },
		"demo-agent":     fakeagent.Main,
		sandbox.ChildArg: sandbox.BoxMain,
	})))
}

type turn struct {
	t      *testing.T
	dir    string
	spec   headless.Spec
	secret string
}

// newTurn prepares a turn of the fake headless agent printing format's stream and following script.
func newTurn(t *testing.T, format, script string) *turn {
	t.Helper()
	dir := t.TempDir()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	scriptPath := filepath.Join(dir, "script.txt")
	if err := os.WriteFile(scriptPath, []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	work := filepath.Join(dir, "work")
	if err := os.MkdirAll(work, 0o700); err != nil {
		t.Fatal(err)
	}
	return &turn{t: t, dir: dir, secret: "s3cr3t-value-for-test", spec: headless.Spec{
		Argv:          []string{exe, "demo-agent", "headless", "--format", format, "--script", scriptPath},
		Env:           map[string]string{"PLAIN": "plain-value"},
		Dir:           work,
		Prompt:        "Do the task.\nSecond line with $HOME and `backticks`.",
		Format:        format,
		TranscriptDir: filepath.Join(dir, "logs"),
		Orphan:        filepath.Join(dir, "logs", "orphan.jsonl"),
		StatusPath:    filepath.Join(dir, "status.json"),
		Turn:          1,
		IdleTimeout:   30 * time.Second,
		TurnTimeout:   60 * time.Second,
		KillGrace:     500 * time.Millisecond,
	}}
}

// start launches the supervisor and registers its end, by PID, with the test.
func (tu *turn) start() headless.Proc {
	tu.t.Helper()
	if tu.spec.SecretsFile == "" {
		b, _ := json.Marshal(map[string]string{"TEST_SECRET": tu.secret})
		tu.spec.SecretsFile = filepath.Join(tu.dir, "secrets.json")
		if err := os.WriteFile(tu.spec.SecretsFile, b, 0o600); err != nil {
			tu.t.Fatal(err)
		}
	}
	exe, _ := os.Executable()
	p, err := headless.Start([]string{exe, "__headless"}, tu.spec, filepath.Join(tu.dir, "run"), filepath.Join(tu.dir, "debug.log"), tu.lock())
	if err != nil {
		tu.t.Fatal(err)
	}
	tu.t.Cleanup(func() {
		if st, err := headless.ReadStatus(tu.spec.StatusPath); err == nil {
			_ = headless.Proc{PID: st.AgentPID, Start: st.AgentStart}.Signal(syscall.SIGKILL)
		}
		_ = p.Signal(syscall.SIGKILL)
	})
	return p
}

func (tu *turn) lock() string { return filepath.Join(tu.dir, "turn.lock") }

func (tu *turn) running() bool {
	tu.t.Helper()
	running, err := headless.Running(tu.lock())
	if err != nil {
		tu.t.Fatal(err)
	}
	return running
}

// wait returns the status once the supervisor has ended (not a timing assertion: the deadline only bounds a hung test).
func (tu *turn) wait(p headless.Proc) *headless.Status {
	tu.t.Helper()
	// The lock, not the PID, says the supervisor is gone: its leader thread can show as a zombie while the other
	// threads still hold its files.
	testkit.WaitFor(tu.t, "the supervisor to end", 30*time.Second, func() bool { return !p.Alive() && !tu.running() })
	st, err := headless.ReadStatus(tu.spec.StatusPath)
	if err != nil {
		tu.t.Fatal(err)
	}
	return st
}

func (tu *turn) file(path string) string {
	tu.t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tu.t.Fatal(err)
	}
	return string(b)
}

func TestSupervisorTurn(t *testing.T) {
	t.Parallel()
	for _, format := range []string{"claude", "codex", "gemini"} {
		t.Run(format, func(t *testing.T) {
			tu := newTurn(t, format, "say Hello.\nsh echo $PLAIN $TEST_SECRET\nwarn stderr has $TEST_SECRET\ndone ok\n")
			st := tu.wait(tu.start())
			if st.Outcome != headless.OutcomeExited || st.ExitCode != 0 || !st.Done || st.SessionID == "" {
				t.Fatalf("status %+v", st)
			}
			want := filepath.Join(tu.spec.TranscriptDir, st.SessionID+".jsonl")
			if st.Transcript != want {
				t.Errorf("transcript %q, want %q", st.Transcript, want)
			}
			raw := tu.file(want)
			f, _ := os.Open(want)
			defer f.Close()
			tr, err := agents.Parsers().ParseAll(format, f)
			if err != nil {
				t.Fatal(err)
			}
			if tr.SessionID != st.SessionID || tr.Raw != 0 || st.Raw != 0 || st.Events != len(tr.Events) {
				t.Errorf("transcript session %q raw %d, status %+v", tr.SessionID, tr.Raw, st)
			}
			if tr.Events[0].Kind != headless.KindInit {
				t.Errorf("first event %+v, want init: the lines before the session id must come first", tr.Events[0])
			}
			if !strings.Contains(raw, "plain-value [redacted]") || strings.Contains(raw, tu.secret) {
				t.Errorf("transcript does not show the env with the secret redacted:\n%s", raw)
			}
			if !strings.Contains(st.StderrTail, "stderr has [redacted]") {
				t.Errorf("stderr tail %q", st.StderrTail)
			}
			if debug := tu.file(filepath.Join(tu.dir, "debug.log")); strings.Contains(debug, tu.secret) ||
				!strings.Contains(debug, "[stderr] stderr has [redacted]") || !strings.Contains(debug, "[stdout] {") {
				t.Errorf("debug log:\n%s", debug)
			}
			if _, err := os.Stat(tu.spec.SecretsFile); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("secrets file left behind: %v", err)
			}
			if st.Usage.OutputTokens == 0 || st.LastText != "Done: ok" {
				t.Errorf("usage %+v, last text %q", st.Usage, st.LastText)
			}
		})
	}
}

func TestSupervisorPromptOnStdin(t *testing.T) {
	t.Parallel()
	tu := newTurn(t, "claude", "done ok\n")
	record := filepath.Join(tu.dir, "record.jsonl")
	tu.spec.Argv = append(tu.spec.Argv, "--record", record)
	tu.wait(tu.start())
	var rec struct {
		Prompt string   `json:"prompt"`
		Argv   []string `json:"argv"`
	}
	if err := json.Unmarshal([]byte(tu.file(record)), &rec); err != nil {
		t.Fatal(err)
	}
	if rec.Prompt != tu.spec.Prompt {
		t.Errorf("prompt %q, want %q byte-exact", rec.Prompt, tu.spec.Prompt)
	}
	for _, a := range rec.Argv {
		if strings.Contains(a, "Do the task") || strings.Contains(a, tu.secret) {
			t.Errorf("argv carries the prompt or a secret: %q", rec.Argv)
		}
	}
}

func TestSupervisorIdleTimeout(t *testing.T) {
	t.Parallel()
	tu := newTurn(t, "codex", "say Thinking.\nhang\n")
	tu.spec.IdleTimeout = 300 * time.Millisecond
	st := tu.wait(tu.start())
	if st.Outcome != headless.OutcomeIdleTimeout || st.ExitCode == 0 {
		t.Fatalf("status %+v, want an idle timeout with a non-zero exit", st)
	}
	if agent := (headless.Proc{PID: st.AgentPID, Start: st.AgentStart}); agent.Alive() {
		t.Error("the agent outlived its supervisor")
	}
	if raw := tu.file(st.Transcript); !strings.Contains(raw, "Thinking.") {
		t.Errorf("transcript lost the output before the timeout:\n%s", raw)
	}
}

// TestSupervisorEndsAnAgentThatLingersAfterItsResult: an agent that reported its turn's result and then does not
// exit (gemini 0.61 under load printed its result and stayed for minutes) is ended after the spec's exit grace,
// long before the idle timeout, its result kept: the turn ended as the agent said.
func TestSupervisorEndsAnAgentThatLingersAfterItsResult(t *testing.T) {
	t.Parallel()
	tu := newTurn(t, "gemini", "say Writing it.\nlinger\ndone ok\n")
	tu.spec.ExitGrace = 300 * time.Millisecond
	tu.spec.IdleTimeout = time.Hour // only the result's grace can end the turn within the wait
	st := tu.wait(tu.start())
	if st.Outcome != headless.OutcomeLingered || st.ResultStatus != "success" || st.ResultError {
		t.Fatalf("status %+v, want the agent ended after its successful result", st)
	}
	if agent := (headless.Proc{PID: st.AgentPID, Start: st.AgentStart}); agent.Alive() {
		t.Error("the agent outlived its supervisor")
	}
}

func TestSupervisorTurnTimeout(t *testing.T) {
	t.Parallel()
	// The agent keeps talking, so only the absolute bound can end it.
	tu := newTurn(t, "gemini", strings.Repeat("say still busy\nbusy 50ms\n", 200))
	tu.spec.TurnTimeout = 400 * time.Millisecond
	tu.spec.IdleTimeout = 10 * time.Second
	st := tu.wait(tu.start())
	if st.Outcome != headless.OutcomeTurnTimeout {
		t.Fatalf("status %+v, want a turn timeout", st)
	}
}

func TestSupervisorCrashWithoutSession(t *testing.T) {
	t.Parallel()
	// A CLI that dies before printing its session: the lines are kept under the orphan name, the exit recorded.
	tu := newTurn(t, "claude", "")
	tu.spec.Argv = []string{"/bin/sh", "-c", "echo 'not json'; echo 'Invalid API key' >&2; exit 41"}
	st := tu.wait(tu.start())
	if st.Outcome != headless.OutcomeExited || st.ExitCode != 41 || st.SessionID != "" || st.Raw != 1 {
		t.Fatalf("status %+v", st)
	}
	if !strings.Contains(st.StderrTail, "Invalid API key") || st.Transcript != tu.spec.Orphan {
		t.Errorf("stderr tail %q, transcript %q", st.StderrTail, st.Transcript)
	}
	if raw := tu.file(tu.spec.Orphan); raw != "not json\n" {
		t.Errorf("orphan transcript %q", raw)
	}
}

func TestSupervisorResumeAppends(t *testing.T) {
	t.Parallel()
	tu := newTurn(t, "gemini", "say one\n---\nsay two\n")
	first := tu.wait(tu.start())
	tu.spec.SessionID, tu.spec.Turn, tu.spec.SecretsFile = first.SessionID, 2, ""
	tu.spec.Argv = append(tu.spec.Argv, "--resume", first.SessionID)
	second := tu.wait(tu.start())
	if second.SessionID != first.SessionID || second.Transcript != first.Transcript || second.Turn != 2 {
		t.Fatalf("first %+v second %+v", first, second)
	}
	f, _ := os.Open(second.Transcript)
	defer f.Close()
	tr, _ := agents.Parsers().ParseAll("gemini", f)
	var said []string
	for _, e := range tr.Events {
		if e.Kind == headless.KindAssistant {
			said = append(said, e.Text)
		}
	}
	if strings.Join(said, ",") != "one,two" {
		t.Errorf("assistant messages %q: both turns should be in one transcript", said)
	}
}

func TestSupervisorStopKillsAgent(t *testing.T) {
	t.Parallel()
	tu := newTurn(t, "claude", "say Working.\nhang\n")
	p := tu.start()
	var st *headless.Status
	testkit.WaitFor(t, "the agent to start", 30*time.Second, func() bool {
		st, _ = headless.ReadStatus(tu.spec.StatusPath)
		return st != nil && st.SessionID != ""
	})
	if running, err := headless.Running(tu.lock()); err != nil || !running {
		t.Fatalf("Running = %v, %v while the supervisor runs", running, err)
	}
	exe, _ := os.Executable()
	if _, err := headless.Start([]string{exe, "__headless"}, tu.spec, tu.dir, filepath.Join(tu.dir, "debug.log"), tu.lock()); !errors.Is(err, headless.ErrRunning) {
		t.Fatalf("a second supervisor for the same lock: %v, want ErrRunning", err)
	}
	if err := p.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	st = tu.wait(p)
	if running, err := headless.Running(tu.lock()); err != nil || running {
		t.Errorf("Running = %v, %v after the supervisor ended", running, err)
	}
	if st.Outcome != headless.OutcomeStopped {
		t.Errorf("outcome %q, want stopped", st.Outcome)
	}
	if (headless.Proc{PID: st.AgentPID, Start: st.AgentStart}).Alive() {
		t.Error("the agent survived its supervisor's stop")
	}
}

func TestProcIdentity(t *testing.T) {
	t.Parallel()
	cmd := exec.Command("/bin/sh", "-c", "exit 0")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := headless.ProcOf(cmd.Process.Pid)
	// Until Wait reaps it the exited child is a zombie, which must not count as alive.
	deadline := time.Now().Add(10 * time.Second)
	for p.Alive() && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if p.Alive() {
		t.Error("a zombie counts as alive")
	}
	_ = cmd.Wait()

	self := headless.ProcOf(os.Getpid())
	if !self.Alive() || self.Start == 0 {
		t.Fatalf("this process: %+v alive=%v", self, self.Alive())
	}
	if got := headless.ParseProc(self.String()); got != self {
		t.Errorf("ParseProc(%q) = %+v", self.String(), got)
	}
	reused := headless.Proc{PID: self.PID, Start: self.Start + 1}
	if reused.Alive() {
		t.Error("a PID with another start time (reused) counts as alive")
	}
	if (headless.ParseProc("garbage") != headless.Proc{}) {
		t.Error("ParseProc accepted garbage")
	}
}

func TestRender(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	for _, e := range []headless.Event{
		{Kind: headless.KindInit, SessionID: "abc", Model: "m1"},
		{Kind: headless.KindUser, Text: "Fix it"},
		{Kind: headless.KindAssistant, Text: "Looking.\nSecond line."},
		{Kind: headless.KindToolCall, Tool: "Bash", Input: `{"command":"go test ./..."}`},
		{Kind: headless.KindToolResult, Output: "--- FAIL: TestX\nFAIL\n", IsError: true},
		{Kind: headless.KindRaw, Raw: "panic: boom"},
		{Kind: headless.KindResult, Status: "error", IsError: true, Text: "max turns", Usage: &headless.Usage{Usage: usage.Usage{InputTokens: 10, OutputTokens: 5}}},
	} {
		if err := headless.Render(&b, e); err != nil {
			t.Fatal(err)
		}
	}
	want := `── session abc (model m1)
user: Fix it
agent: Looking.
       Second line.
  → Bash {"command":"go test ./..."}
  ← error: --- FAIL: TestX … (+1 lines)
  ? panic: boom
■ turn ended: error (10 in, 5 out tokens)
error: max turns
`
	if b.String() != want {
		t.Errorf("rendered:\n%s\nwant:\n%s", b.String(), want)
	}
}

// TestSupervisorEndsLeftoverDaemons: a process the agent started in a session of its own (as codex leaves its
// app-server) is ended with the turn.
func TestSupervisorEndsLeftoverDaemons(t *testing.T) {
	t.Parallel()
	tu := newTurn(t, "codex", "")
	pidFile := filepath.Join(tu.dir, "daemon.pid")
	script := "sh setsid sleep 1000 >/dev/null 2>&1 </dev/null & echo $! > " + pidFile + "\ndone ok\n"
	if err := os.WriteFile(tu.spec.Argv[6], []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	st := tu.wait(tu.start())
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	daemon := headless.ProcOf(pid)
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	if st.Outcome != headless.OutcomeExited || st.ExitCode != 0 {
		t.Errorf("status %+v", st)
	}
	if daemon.Alive() {
		t.Error("the daemon the agent left behind outlived the turn")
	}
}

func TestSupervisorStartFailure(t *testing.T) {
	t.Parallel()
	tu := newTurn(t, "claude", "")
	tu.spec.Argv = []string{filepath.Join(tu.dir, "no-such-cli")}
	st := tu.wait(tu.start())
	if st.Outcome != headless.OutcomeStartFailed || !st.Done || !strings.Contains(st.StderrTail, "no-such-cli") {
		t.Fatalf("status %+v", st)
	}
	if _, err := os.Stat(tu.spec.SecretsFile); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("secrets file left behind: %v", err)
	}
}

func TestSupervisorFollowsForkedSession(t *testing.T) {
	t.Parallel()
	tu := newTurn(t, "claude", "say one\n---\nsay two\n")
	first := tu.wait(tu.start())
	tu.spec.SessionID, tu.spec.Turn, tu.spec.SecretsFile = first.SessionID, 2, ""
	tu.spec.Argv = append(tu.spec.Argv, "--resume", first.SessionID, "--fork")
	second := tu.wait(tu.start())
	if second.SessionID == first.SessionID || second.SessionID == "" {
		t.Fatalf("session %q after a forking resume of %q: the next turn must resume the new one", second.SessionID, first.SessionID)
	}
	if second.Transcript != first.Transcript {
		t.Errorf("transcript %q, want the conversation's file %q", second.Transcript, first.Transcript)
	}
}
