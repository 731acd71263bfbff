package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/aceworks/ace/bench/internal/benchkit"
	"github.com/aceworks/ace/internal/fakegithub"
	"github.com/aceworks/ace/internal/realcli"
	"github.com/aceworks/ace/pkg/modelserver"
	"github.com/aceworks/ace/pkg/workflow"
)

// The forge of every world: one repository, one issue, ace's token and the human's.
const (
	repo       = "acme/widgets"
	issueN     = 193
	botToken   = "ghs_benchLiveBotToken0123456789"
	humanToken = "ghp_benchLiveHumanToken987654321"
)

// The model's question and the human's answer (in their own words: the menu's free-text option on claude).
const (
	question = "Should the greeting be formal or casual?"
	answer   = "Formal, please: Good day."
)

// turns is the model's script: read the task, ask, then write the file, commit and follow ace's done protocol.
// menu: the CLI asks with its question tool (claude in tmux and live); otherwise with ace's .ace/QUESTION file.
func turns(menu bool) []modelserver.Turn {
	ts := []modelserver.Turn{modelserver.ReadFile("ACE_TASK.md")}
	if menu {
		ts = append(ts, modelserver.Ask(question, "Formal", "Casual"))
	} else {
		ts = append(ts, modelserver.WriteFile(".ace/QUESTION", question+"\n"),
			modelserver.Text("I wrote my question to .ace/QUESTION and wait for the answer."))
	}
	return append(ts,
		modelserver.WriteFile("GREETING.md", "Good day.\n"),
		modelserver.Shell(`git add GREETING.md && git commit -q -m "Add a formal GREETING.md"`),
		modelserver.WriteFile(".ace/DONE", "Added a formal GREETING.md.\n"))
}

// world is one run's installation, inside the benchmark's loopback-only namespace: the scripted model server,
// a fake GitHub holding the repository and its (not yet labelled) issue, the repository's bare remote, a fresh
// HOME for the CLI, and ace as a process of its own (aceMain) on its own tmux socket.
type world struct {
	dir     string
	runner  string
	cli     realcli.CLI
	srv     *modelserver.Server
	gh      *fakegithub.Server
	home    *realcli.Home
	socket  string
	records string
	// cpuFile is where ace writes its CPU when asked, cpuAsked how many times it was.
	cpuFile  string
	cpuAsked int
	ace      *exec.Cmd
	aceDone  chan error
	logFile  *os.File
}

func newWorld(ctx context.Context, dir, exe, runner string, c realcli.CLI, o options) (w *world, err error) {
	w = &world{dir: dir, runner: runner, cli: c, socket: "ace-bench-live-" + filepath.Base(dir),
		records: filepath.Join(dir, "helpers.jsonl"), cpuFile: filepath.Join(dir, "ace-cpu.json")}
	defer func() {
		if err != nil {
			w.close()
		}
	}()
	root := filepath.Join(dir, "root")
	menu := c.Name == "claude" && runner != "exec"
	w.srv, err = modelserver.New(modelserver.Scenario{
		Dir: filepath.Join(root, "worktrees", "acme", "widgets", strconv.Itoa(issueN)), Turns: turns(menu), Final: "All done.",
	})
	if err != nil {
		return w, err
	}
	if err := os.MkdirAll(filepath.Join(dir, "home"), 0o700); err != nil {
		return w, err
	}
	if w.home, err = realcli.MakeHome(filepath.Join(dir, "home"), c, w.srv.URL()); err != nil {
		return w, err
	}

	remote := filepath.Join(dir, "remote", "widgets.git")
	if err := benchkit.SeedRemote(ctx, filepath.Join(dir, "seed"), remote, "# widgets\n"); err != nil {
		return w, err
	}
	w.gh = fakegithub.Start()
	w.gh.AddUser("ace-bot", botToken)
	w.gh.AddUser("alice", humanToken)
	w.gh.AddRepo(repo, fakegithub.RepoOptions{DefaultBranch: "main", CloneURL: remote})
	w.gh.SetGitDir(repo, remote)
	w.gh.SetPermission(repo, "alice", "write")
	w.gh.AddIssue(repo, fakegithub.IssueOptions{Number: issueN, Title: "Add a greeting", Author: "alice",
		Body: "Please add GREETING.md with a greeting. Ask whether it should be formal or casual."})

	spec := aceSpec{Root: root, Runner: runner, CLI: c.Name, GitHub: w.gh.URL(), Socket: w.socket, Records: w.records,
		CPU: w.cpuFile, Poll: o.poll, Timeout: o.timeout}
	b, err := json.Marshal(spec)
	if err != nil {
		return w, err
	}
	specPath := filepath.Join(dir, "ace-spec.json")
	if err := os.WriteFile(specPath, b, 0o600); err != nil {
		return w, err
	}
	if w.logFile, err = os.Create(filepath.Join(dir, "ace.log")); err != nil {
		return w, err
	}
	w.ace = exec.Command(exe, aceArg, specPath)
	w.ace.Dir = dir
	w.ace.Env = w.env()
	w.ace.Stdout, w.ace.Stderr = w.logFile, w.logFile
	if err := w.ace.Start(); err != nil {
		return w, fmt.Errorf("start ace: %w", err)
	}
	w.aceDone = make(chan error, 1)
	go func() { w.aceDone <- w.ace.Wait() }()
	return w, nil
}

// env is ace's environment, as a user's shell on the fresh HOME would give it: this process's, without what
// points a CLI at a model service or tmux at a server, then the HOME's (HOME, PATH with the pinned CLI first,
// the model server's URL and key) and ace's token.
func (w *world) env() []string {
	drop := append([]string{"TMUX", "TMUX_PANE", "CI"}, modelserver.ProviderVariables...)
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		homes := func(h string) bool { return strings.HasPrefix(h, k+"=") }
		if !slices.Contains(drop, k) && !slices.ContainsFunc(w.home.Env, homes) {
			env = append(env, kv)
		}
	}
	return append(append(env, w.home.Env...), "GITHUB_TOKEN="+botToken)
}

// aceCPU asks ace's process for the CPU it has used (SIGUSR1: reportCPU) and waits for the answer: its own, and
// that of the children it waited for.
func (w *world) aceCPU() (aceUsage, error) {
	w.cpuAsked++
	if err := w.ace.Process.Signal(syscall.SIGUSR1); err != nil {
		return aceUsage{}, fmt.Errorf("ask ace for its CPU: %w", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		var u aceUsage
		b, err := os.ReadFile(w.cpuFile)
		if err == nil && json.Unmarshal(b, &u) == nil && u.N >= w.cpuAsked {
			return u, nil
		}
		if time.Now().After(deadline) {
			return aceUsage{}, fmt.Errorf("ace did not tell its CPU within 10s (%s)", w.cpuFile)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// waitFor polls cond every 10 ms until it holds, ace exits or ctx ends.
func (w *world) waitFor(ctx context.Context, what string, cond func() bool) error {
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting until %s: %w", what, ctx.Err())
		case err := <-w.aceDone:
			w.aceDone <- err
			return fmt.Errorf("waiting until %s: ace exited: %w", what, err)
		case <-t.C:
		}
	}
	return nil
}

// asked reports whether ace has posted the question and parked the run for an answer: the status comment says
// so once the run's question time is set, so an answer after it counts.
func (w *world) asked() bool {
	q, waiting := false, false
	for _, c := range w.gh.Comments(repo, issueN) {
		q = q || strings.Contains(c.Body, "<!-- ace:question:") && strings.Contains(c.Body, question)
		waiting = waiting || strings.Contains(c.Body, workflow.StatusMarker) && strings.Contains(c.Body, "waiting for your answer")
	}
	return q && waiting
}

// questions counts the questions ace posted.
func (w *world) questions() int {
	n := 0
	for _, c := range w.gh.Comments(repo, issueN) {
		if strings.Contains(c.Body, "<!-- ace:question:") {
			n++
		}
	}
	return n
}

// answerArrived returns when the model server received the first model request carrying the answer: as a
// user message, or as a tool's result (claude's question tool).
func (w *world) answerArrived() (at time.Time, ok bool) {
	// The log is in the order the responses ended: the first to arrive is the earliest.
	for _, r := range w.srv.ModelRequests() {
		if (slices.ContainsFunc(r.UserTexts, carries) || slices.ContainsFunc(r.ToolOutputs, carries)) && (!ok || r.At.Before(at)) {
			at, ok = r.At, true
		}
	}
	return at, ok
}

func carries(s string) bool { return strings.Contains(s, answer) }

// stopAce ends ace's process by its PID: SIGTERM (its queue stops, its tmux server and the processes under it
// end), SIGKILL if it has not exited within grace.
func (w *world) stopAce(grace time.Duration) error {
	if w.ace == nil || w.ace.Process == nil {
		return nil
	}
	select {
	case err := <-w.aceDone:
		w.aceDone <- err
		return nil
	default:
	}
	_ = w.ace.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-w.aceDone:
		w.aceDone <- err
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return fmt.Errorf("ace exited with %w (its log: %s)", err, filepath.Join(w.dir, "ace.log"))
		}
		return err
	case <-time.After(grace):
		_ = w.ace.Process.Kill()
		err := <-w.aceDone
		w.aceDone <- err
		return fmt.Errorf("ace did not stop within %s: killed", grace)
	}
}

// close ends ace, then by PID whatever the world left running, and stops its servers.
func (w *world) close() []string {
	if err := w.stopAce(45 * time.Second); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
	}
	left := sweep()
	if w.gh != nil {
		w.gh.Stop()
	}
	if w.srv != nil {
		w.srv.Close()
	}
	if w.logFile != nil {
		w.logFile.Close()
	}
	return left
}

// saveRequests writes the model server's log of requests to the run's directory: when each arrived, what it was.
func (w *world) saveRequests() error {
	var b strings.Builder
	for _, r := range w.srv.Requests() {
		fmt.Fprintf(&b, "%s %s %s status=%d side=%v turn=%d final=%v\n", r.At.Format("15:04:05.000"), r.Method, r.Path,
			r.Status, r.Side, r.Turn, r.Final)
	}
	if err := os.WriteFile(filepath.Join(w.dir, "model-requests.txt"), []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("save the model's requests: %w", err)
	}
	return nil
}

// logTail is the end of ace's log, for a run that failed, without the dispatch passes.
func (w *world) logTail(lines int) string {
	b, err := os.ReadFile(filepath.Join(w.dir, "ace.log"))
	if err != nil {
		return ""
	}
	ls := slices.DeleteFunc(strings.Split(strings.TrimRight(string(b), "\n"), "\n"), func(l string) bool {
		return strings.Contains(l, `msg="dispatch pass"`)
	})
	if len(ls) > lines {
		ls = ls[len(ls)-lines:]
	}
	return strings.Join(ls, "\n")
}
