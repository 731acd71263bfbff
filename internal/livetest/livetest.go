// Package livetest holds the real-CLI tests every live adapter passes, run against each pinned version of its
// CLI in a loopback-only namespace on a fresh HOME (internal/realcli) with the scripted model server, and how
// each CLI runs in them (Claude, Codex, Gemini), which the live host's tests share (Case.Each).
package livetest

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aceworks/ace/internal/gittest"
	"github.com/aceworks/ace/internal/realcli"
	"github.com/aceworks/ace/pkg/live"
	"github.com/aceworks/ace/pkg/modelserver"
)

// Case is how one CLI runs in these tests.
type Case struct {
	CLI string // claude, codex or gemini
	// Argv is the command before the adapter's own flags: the pinned binary and the user's flags.
	Argv func(bin string) []string
	// Home adjusts the fresh HOME (variables, files) before the CLI starts; nil for none.
	Home func(t *testing.T, h *realcli.Home)
	// Subscriber turns the HOME into one whose account has a plan with a usage limit (claude's limit is a
	// subscriber's: an API key's 429 is retried); nil when the HOME's API key already has one.
	Subscriber func(t *testing.T, h *realcli.Home)
	Start      func(ctx context.Context, opts live.Options) (live.Conversation, error)
	// PromptOnly: the protocol reports every input token as input, cached or not (gemini).
	PromptOnly bool
	// Questions: the model can ask the human a question with options (claude's AskUserQuestion, codex's
	// request_user_input); gemini's protocol has no such request.
	Questions bool
	// LimitResets: the usage limit says when it resets (gemini's quota error does not).
	LimitResets bool
	// MidTurn is how the CLI takes the messages sent while a turn runs (its adapter's LiveMidTurn).
	MidTurn live.MidTurn
}

// Run runs every test here that cs's CLI can take, each a subtest (an adapter's TestLive).
func Run(t *testing.T, cs Case) {
	tests := []struct {
		name string
		run  func(*testing.T, Case)
		skip bool
	}{
		{"WithoutTheProtocol", WithoutTheProtocol, false},
		{"TwoTurns", TwoTurns, false},
		{"Question", Question, !cs.Questions},
		{"Limit", Limit, false},
		{"MidTurn", MidTurn, false},
		{"Resume", Resume, false},
		{"Interrupt", Interrupt, false},
		{"Crash", Crash, false},
		{"InterruptQuestion", InterruptQuestion, !cs.Questions},
	}
	for _, tc := range tests {
		if !tc.skip {
			t.Run(tc.name, func(t *testing.T) { tc.run(t, cs) })
		}
	}
}

// The user messages carry what a shell or a template would mangle: they must reach the model byte-exact.
const (
	Prompt1 = "Turn one: read IN.txt, then write OUT.txt. Keep \"quotes\", $HOME and `ticks` literal."
	Prompt2 = "Turn two, to the same process: a \\ backslash and 'single' quotes."
	// InContent is IN.txt, the file turn 1 reads; OutContent is OUT.txt, which it writes after asking permission.
	InContent  = "the input the model reads\n"
	OutContent = "written after the human allowed it\nline \"two\" with $HOME\n"
)

// run is one test case with one pinned CLI: a working copy with IN.txt, the model server, a fresh HOME.
type run struct {
	t   *testing.T
	cs  Case
	cli realcli.CLI
	dir string
	srv *modelserver.Server
	h   *realcli.Home
	ctx context.Context
}

// each runs fn for every pinned version of cs.CLI, in parallel, each inside a loopback-only namespace with the
// model server playing sc (its Dir set to the working copy).
func (cs Case) each(t *testing.T, sc modelserver.Scenario, fn func(r *run)) {
	for _, c := range realcli.Pinned(t, cs.CLI) {
		t.Run(c.Label(), func(t *testing.T) {
			t.Parallel()
			realcli.Require(t, c)
			if !realcli.Enter(t) {
				return
			}
			r := &run{t: t, cs: cs, cli: c, dir: gittest.WorkRepo(t)}
			if err := os.WriteFile(filepath.Join(r.dir, "IN.txt"), []byte(InContent), 0o644); err != nil {
				t.Fatal(err)
			}
			sc.Dir = r.dir
			r.srv = modelserver.Start(t, sc)
			r.h = realcli.NewHome(t, c, r.srv.URL())
			if cs.Home != nil {
				cs.Home(t, r.h)
			}
			ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
			defer cancel()
			r.ctx = ctx
			t.Cleanup(func() {
				if t.Failed() {
					for i, q := range r.srv.Requests() {
						t.Logf("request %d: %s %s status=%d side=%v turn=%d users=%q", i, q.Method, q.Path, q.Status, q.Side, q.Turn, q.UserTexts)
					}
				}
			})
			fn(r)
		})
	}
}

// start starts a conversation (resuming resume unless empty) that ends with the test at the latest.
func (r *run) start(resume string) live.Conversation {
	r.t.Helper()
	begin := time.Now()
	conv, err := r.cs.Start(r.ctx, live.Options{Argv: r.cs.Argv(r.cli.Bin), Env: r.h.Env, Dir: r.dir, Resume: resume})
	if err != nil {
		r.t.Fatalf("start %s: %v", r.cli.Label(), err)
	}
	r.t.Cleanup(func() { _ = conv.Close() })
	r.t.Logf("%s: handshake took %s, session %s, pid %d", r.cli.Label(), time.Since(begin).Round(time.Millisecond),
		conv.SessionID(), conv.PID())
	if conv.SessionID() == "" {
		r.t.Errorf("no session ID after the handshake")
	}
	return conv
}

// close ends conv and checks that it exited cleanly and left no process of its group behind.
func (r *run) close(conv live.Conversation) {
	r.t.Helper()
	pid := conv.PID()
	if err := conv.Close(); err != nil {
		r.t.Errorf("close: %v", err)
	}
	if live.GroupAlive(pid) {
		r.t.Errorf("a process of group %d still runs after Close", pid)
	}
}

// turn is what one turn showed.
type turn struct {
	events []live.Event
	done   live.TurnDone
}

// send sends text and collects the turn's events, answering permission requests with onPermission and
// questions with onQuestion (a nil handler fails the test when it is needed).
func (r *run) send(conv live.Conversation, name, text string, onPermission func(live.Permission), onQuestion func(live.Question)) turn {
	r.t.Helper()
	start := time.Now()
	if err := conv.Send(r.ctx, text); err != nil {
		r.t.Fatalf("%s: send: %v", name, err)
	}
	tn := r.await(conv, name, onPermission, onQuestion)
	r.t.Logf("%s took %s: %s", name, time.Since(start).Round(time.Millisecond), summary(tn.events))
	return tn
}

func (r *run) await(conv live.Conversation, name string, onPermission func(live.Permission), onQuestion func(live.Question)) turn {
	r.t.Helper()
	var tn turn
	for {
		select {
		case e, ok := <-conv.Events():
			if !ok {
				r.t.Fatalf("%s: the events ended before the turn did: %s", name, summary(tn.events))
			}
			tn.events = append(tn.events, e)
			switch e := e.(type) {
			case live.Permission:
				if onPermission == nil {
					r.t.Errorf("%s: unexpected permission request for %s %q", name, e.Tool, e.Input)
					_ = e.Deny(r.ctx, "not in this test")
					continue
				}
				onPermission(e)
			case live.Question:
				if onQuestion == nil {
					r.t.Errorf("%s: unexpected question %+v", name, e.Asks)
					continue
				}
				onQuestion(e)
			case live.Exit:
				r.t.Fatalf("%s: the CLI exited mid-turn: %v\n%s", name, e.Err, e.Stderr)
			case live.TurnDone:
				tn.done = e
				return tn
			}
		case <-r.ctx.Done():
			r.t.Fatalf("%s: no end of turn: %v; events so far: %s", name, r.ctx.Err(), summary(tn.events))
		}
	}
}

// TwoTurns holds a two-turn conversation with one CLI process for each pinned version of cs.CLI: turn 1 reads a
// file with the CLI's file tool and writes another, the write asking for permission, which is allowed through
// the protocol; turn 2 is a second user message to the same live process. It checks the events, the file, the
// messages at the model byte for byte, and each turn's usage against what the model server billed for it.
func TwoTurns(t *testing.T, cs Case) {
	cs.each(t, modelserver.Scenario{Turns: []modelserver.Turn{
		modelserver.ReadFile("IN.txt"),
		modelserver.WriteFile("OUT.txt", OutContent),
		modelserver.Text("Turn one done."),
		modelserver.Text("Turn two answer."),
	}}, func(r *run) {
		t := r.t
		begin := time.Now()
		conv := r.start("")
		t1 := r.send(conv, "turn 1", Prompt1, func(p live.Permission) {
			if !strings.Contains(p.Input, "OUT.txt") && !strings.Contains(p.Title, "OUT.txt") {
				t.Errorf("permission for %s %q %q: not the write of OUT.txt", p.Tool, p.Title, p.Input)
			}
			if err := p.Allow(r.ctx); err != nil {
				t.Errorf("allow: %v", err)
			}
			if err := p.Allow(r.ctx); err == nil {
				t.Errorf("a second answer to the same permission request was taken")
			}
		}, nil)
		if got, err := os.ReadFile(filepath.Join(r.dir, "OUT.txt")); err != nil || string(got) != OutContent {
			t.Errorf("OUT.txt = %q, %v; want %q", got, err, OutContent)
		}
		check(t, "turn 1", t1, 1, 2, "Turn one done.")
		if cs.CLI == "codex" && t1.done.Model == "" {
			t.Errorf("turn 1 names no model: codex's thread says which, and its usage is priced by it")
		}
		t2 := r.send(conv, "turn 2", Prompt2, nil, nil)
		check(t, "turn 2", t2, 0, 0, "Turn two answer.")

		for _, p := range []string{Prompt1, Prompt2} {
			if !r.srv.SawUserText(p) {
				t.Errorf("the model did not get %q byte-exact; user texts: %q", p, r.srv.UserTexts())
			}
		}
		if !r.srv.SawToolOutput(strings.TrimSpace(InContent)) {
			t.Errorf("the model was not shown IN.txt; tool outputs: %q", r.srv.ToolOutputs())
		}
		// Each turn's usage is what the server billed for the scripted requests of that turn (turns 0-2, then 3).
		r.checkUsage("turn 1", t1, 0, 2)
		r.checkUsage("turn 2", t2, 3, 3)
		r.close(conv)
		t.Logf("%s: whole conversation %s", r.cli.Label(), time.Since(begin).Round(time.Millisecond))
	})
}

// Question has the model ask the human a question with options (claude's AskUserQuestion, codex's
// request_user_input); the answer is free text, and the model must get it byte-exact as the tool's result, in the
// same turn.
func Question(t *testing.T, cs Case) {
	const answer = "None of them: \"teal\", as in $TEAL."
	cs.each(t, modelserver.Scenario{Turns: []modelserver.Turn{
		modelserver.Ask("Which colour should the button be?", "Red", "Blue"),
		modelserver.Text("Teal it is."),
	}}, func(r *run) {
		conv := r.start("")
		asked := 0
		tn := r.send(conv, "turn 1", "Ask me which colour the button should be.", nil, func(q live.Question) {
			asked++
			if len(q.Asks) != 1 || q.Asks[0].Text != "Which colour should the button be?" ||
				strings.Join(q.Asks[0].Options, ",") != "Red,Blue" {
				r.t.Errorf("question %+v, want the scripted one with options Red, Blue", q.Asks)
			}
			if err := q.Answer(r.ctx, answer); err != nil {
				r.t.Errorf("answer: %v", err)
			}
		})
		if asked != 1 {
			r.t.Errorf("%d questions, want 1", asked)
		}
		// No tool call need show: codex's question is its request alone, not an item.
		check(r.t, "turn 1", tn, 0, 0, "Teal it is.")
		if !r.srv.SawToolOutput(answer) {
			r.t.Errorf("the model did not get the answer %q; tool outputs: %q", answer, r.srv.ToolOutputs())
		}
		r.close(conv)
	})
}

// Limit has the account hit its usage limit: the turn ends with a Limit (and its reset time where the protocol
// tells it: LimitResets), the process stays, and after the reset a message to the same process gets its answer.
func Limit(t *testing.T, cs Case) {
	wantReset := cs.LimitResets
	cs.each(t, modelserver.Scenario{Turns: []modelserver.Turn{modelserver.Text("Back after the reset.")}}, func(r *run) {
		if cs.Subscriber != nil {
			cs.Subscriber(r.t, r.h)
		}
		// The window starts with the first model request and ends a few seconds later: the reset it announces.
		started := r.srv.FailFor(4*time.Second, modelserver.Failure{Kind: modelserver.UsageLimit})
		conv := r.start("")
		tn := r.send(conv, "limited turn", "This hits the limit.", nil, nil)
		var limits []live.Limit
		for _, e := range tn.events {
			if l, ok := e.(live.Limit); ok {
				limits = append(limits, l)
			}
		}
		<-started
		end := r.srv.Window()
		switch {
		case len(limits) != 1:
			r.t.Errorf("%d limit events, want 1: %s", len(limits), summary(tn.events))
		case wantReset && limits[0].ResetsAt.Sub(end).Abs() > time.Minute:
			r.t.Errorf("limit resets at %s, the server said %s", limits[0].ResetsAt, end)
		case !wantReset && !limits[0].ResetsAt.IsZero():
			r.t.Errorf("limit resets at %s, the protocol has no reset time", limits[0].ResetsAt)
		}
		if tn.done.Stop != live.Failed || tn.done.Err == "" {
			r.t.Errorf("the limited turn did not fail: %+v", tn.done)
		}
		time.Sleep(time.Until(end) + 200*time.Millisecond)
		after := r.send(conv, "after the reset", "Go on after the reset.", nil, nil)
		check(r.t, "after the reset", after, 0, 0, "Back after the reset.")
		r.close(conv)
	})
}

// MidTurn sends two more messages while turn 1 waits for a permission: the CLI must deliver each to the model
// byte-exact, as a user text of its own, after turn 1, without losing the turn. With OneTurn they start the next
// turn together (two turns in all), with TurnEach each is a turn of its own (three).
func MidTurn(t *testing.T, cs Case) {
	mids := []string{"Mid-turn message number 42.", "A second one, with \"quotes\" and $HOME."}
	turns := 2
	if cs.MidTurn == live.TurnEach {
		turns = 1 + len(mids)
	}
	cs.each(t, modelserver.Scenario{Turns: []modelserver.Turn{
		modelserver.WriteFile("OUT.txt", OutContent),
		modelserver.Text("Turn one done."),
		modelserver.Text("Answer to the queued message."),
	}}, func(r *run) {
		conv := r.start("")
		tn := r.send(conv, "turn 1", Prompt1, func(p live.Permission) {
			for _, m := range mids {
				if err := conv.Send(r.ctx, m); err != nil {
					r.t.Errorf("send mid-turn: %v", err)
				}
			}
			if err := p.Allow(r.ctx); err != nil {
				r.t.Errorf("allow: %v", err)
			}
		}, nil)
		all := tn.events
		for i := 1; i < turns; i++ {
			all = append(all, r.await(conv, "queued turn", nil, nil).events...)
		}
		r.t.Logf("events: %s", summary(all))
		if got, err := os.ReadFile(filepath.Join(r.dir, "OUT.txt")); err != nil || string(got) != OutContent {
			r.t.Errorf("OUT.txt = %q, %v; want %q", got, err, OutContent)
		}
		for _, m := range mids {
			if !r.srv.SawUserText(m) {
				r.t.Errorf("the model did not get the mid-turn message %q byte-exact; user texts %q", m, r.srv.UserTexts())
			}
		}
		// Nothing more arrives: the turns are over.
		select {
		case e := <-conv.Events():
			r.t.Errorf("an event after the last turn: %s", summary([]live.Event{e}))
		case <-time.After(time.Second):
		}
		r.close(conv)
	})
}

// Interrupt interrupts turn 1 while its write waits for permission: the turn ends without the write, the
// permission request is withdrawn (an answer to it fails), and the same process takes the next message.
func Interrupt(t *testing.T, cs Case) {
	cs.each(t, modelserver.Scenario{Turns: []modelserver.Turn{
		modelserver.WriteFile("OUT.txt", OutContent),
		modelserver.Text("After the interrupt."),
	}}, func(r *run) {
		conv := r.start("")
		var asked []live.Permission
		tn := r.send(conv, "turn 1", Prompt1, func(p live.Permission) {
			asked = append(asked, p)
			if err := conv.Interrupt(r.ctx); err != nil {
				r.t.Errorf("interrupt: %v", err)
			}
		}, nil)
		if len(asked) != 1 {
			r.t.Fatalf("%d permission requests, want 1", len(asked))
		}
		if tn.done.Stop != live.Interrupted || tn.done.Err != "" {
			r.t.Errorf("interrupted turn ended %+v, want %q without an error", tn.done, live.Interrupted)
		}
		r.withdrawn(conv, asked[0].ID, tn.events)
		if err := asked[0].Allow(r.ctx); !errors.Is(err, live.ErrWithdrawn) {
			r.t.Errorf("allowing the withdrawn permission: %v, want ErrWithdrawn", err)
		}
		if _, err := os.Stat(filepath.Join(r.dir, "OUT.txt")); err == nil {
			r.t.Errorf("OUT.txt was written although its permission was never given")
		}
		// A CLI that forgets the interrupted call asks for it again: denied.
		next := r.send(conv, "turn 2", "Go on without writing.", func(p live.Permission) {
			_ = p.Deny(r.ctx, "not now")
		}, nil)
		var texts []string
		for _, e := range next.events {
			if x, ok := e.(live.Text); ok {
				texts = append(texts, x.Text)
			}
		}
		if len(texts) == 0 || texts[len(texts)-1] != "After the interrupt." || next.done.Err != "" {
			r.t.Errorf("after the interrupt: texts %q, done %+v", texts, next.done)
		}
		r.close(conv)
	})
}

// InterruptQuestion interrupts a turn whose question waits for the human: the question is withdrawn, an answer to
// it fails, and the next message gets its answer.
func InterruptQuestion(t *testing.T, cs Case) {
	cs.each(t, modelserver.Scenario{Turns: []modelserver.Turn{
		modelserver.Ask("Which colour should the button be?", "Red", "Blue"),
		modelserver.Text("After the interrupt."),
	}}, func(r *run) {
		conv := r.start("")
		var asked []live.Question
		tn := r.send(conv, "turn 1", "Ask me which colour the button should be.", nil, func(q live.Question) {
			asked = append(asked, q)
			if err := conv.Interrupt(r.ctx); err != nil {
				r.t.Errorf("interrupt: %v", err)
			}
		})
		if len(asked) != 1 {
			r.t.Fatalf("%d questions, want 1", len(asked))
		}
		if tn.done.Stop != live.Interrupted {
			r.t.Errorf("interrupted turn ended %+v, want %q", tn.done, live.Interrupted)
		}
		r.withdrawn(conv, asked[0].ID, tn.events)
		if err := asked[0].Answer(r.ctx, "Red"); !errors.Is(err, live.ErrWithdrawn) {
			r.t.Errorf("answering the withdrawn question: %v, want ErrWithdrawn", err)
		}
		// The conversation goes on (and claude, whose last turn failed, exits 0 after a good one).
		check(r.t, "turn 2", r.send(conv, "turn 2", "Go on without asking.", nil, nil), 0, 0, "After the interrupt.")
		r.close(conv)
	})
}

// withdrawn waits until request id was withdrawn: among seen, the events of its turn, or (codex, which resolves
// its requests after the turn's end) the next events.
func (r *run) withdrawn(conv live.Conversation, id string, seen []live.Event) {
	r.t.Helper()
	for _, e := range seen {
		if w, ok := e.(live.Withdrawn); ok && w.ID == id {
			return
		}
	}
	for {
		select {
		case e := <-conv.Events():
			if w, ok := e.(live.Withdrawn); ok && w.ID == id {
				return
			}
			r.t.Logf("while waiting for the withdrawal: %s", summary([]live.Event{e}))
		case <-time.After(30 * time.Second):
			r.t.Fatalf("request %s was not withdrawn; its turn: %s", id, summary(seen))
		}
	}
}

// Crash kills the CLI between turns: the events end with an Exit that says so, and Send fails.
func Crash(t *testing.T, cs Case) {
	cs.each(t, modelserver.Scenario{Turns: []modelserver.Turn{modelserver.Text("Still here.")}}, func(r *run) {
		conv := r.start("")
		check(r.t, "turn 1", r.send(conv, "turn 1", Prompt1, nil, nil), 0, 0, "Still here.")
		if err := syscall.Kill(conv.PID(), syscall.SIGKILL); err != nil {
			r.t.Fatal(err)
		}
		var exit *live.Exit
		for e := range conv.Events() {
			if x, ok := e.(live.Exit); ok {
				exit = &x
			}
		}
		if exit == nil || exit.Err == nil || !strings.Contains(exit.Err.Error(), "killed") {
			r.t.Errorf("exit event %+v, want one saying the CLI was killed", exit)
		}
		if err := conv.Send(r.ctx, "anyone there?"); err == nil {
			r.t.Errorf("Send to a dead CLI succeeded")
		}
		if live.GroupAlive(conv.PID()) {
			r.t.Errorf("a process of the killed CLI's group still runs")
		}
		_ = conv.Close()
	})
}

// Resume ends a one-turn conversation and continues it in a new process from its SessionID: the model gets the
// earlier turn as history, and the session keeps its ID.
func Resume(t *testing.T, cs Case) {
	cs.each(t, modelserver.Scenario{Turns: []modelserver.Turn{
		modelserver.Text("First process answer."),
		modelserver.Text("Second process answer."),
	}}, func(r *run) {
		conv := r.start("")
		check(r.t, "turn 1", r.send(conv, "turn 1", Prompt1, nil, nil), 0, 0, "First process answer.")
		id := conv.SessionID()
		r.close(conv)
		conv = r.start(id)
		if conv.SessionID() != id {
			r.t.Errorf("resumed session %q, want %q", conv.SessionID(), id)
		}
		t2 := r.send(conv, "turn 2", Prompt2, nil, nil)
		check(r.t, "turn 2", t2, 0, 0, "Second process answer.")
		// The resumed process counts its own turn only, not the history it was given back.
		r.checkUsage("turn 2", t2, 1, 1)
		// The scenario's second turn is only played to a request whose history holds the first.
		last := r.srv.ModelRequests()
		if n := len(last); n == 0 || last[n-1].Turn != 1 || !contains(last[n-1].UserTexts, Prompt1) {
			r.t.Errorf("the resumed request did not carry the first turn: %+v", last)
		}
		r.close(conv)
	})
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// checkUsage compares a turn's usage with what the server billed for the scripted turns first..last.
func (r *run) checkUsage(name string, tn turn, first, last int) {
	r.t.Helper()
	if want := r.cs.Billed(r.srv, first, last); tn.done.Usage != want {
		r.t.Errorf("%s usage = %+v, the server billed %+v", name, tn.done.Usage, want)
	}
}

// check asserts a turn's events: permissions asked, tool calls at least, the final text, no error.
func check(t *testing.T, name string, tn turn, permissions, minTools int, text string) {
	t.Helper()
	var perms, tools int
	var texts []string
	for _, e := range tn.events {
		switch e := e.(type) {
		case live.Permission:
			perms++
		case live.ToolCall:
			tools++
		case live.Text:
			texts = append(texts, e.Text)
		case live.Limit, live.Error:
			t.Errorf("%s: %s", name, summary([]live.Event{e}))
		}
	}
	if perms != permissions {
		t.Errorf("%s: %d permission requests, want %d", name, perms, permissions)
	}
	if tools < minTools {
		t.Errorf("%s: %d tool calls, want at least %d", name, tools, minTools)
	}
	if len(texts) == 0 || texts[len(texts)-1] != text {
		t.Errorf("%s: texts %q, want the last to be %q", name, texts, text)
	}
	if tn.done.Stop != live.Completed || tn.done.Err != "" {
		t.Errorf("%s ended %s: %s", name, tn.done.Stop, tn.done.Err)
	}
}

func summary(events []live.Event) string {
	var parts []string
	for _, e := range events {
		switch e := e.(type) {
		case live.Text:
			parts = append(parts, "text "+trim(e.Text))
		case live.ToolCall:
			parts = append(parts, "tool "+e.Name+" "+trim(e.Input))
		case live.ToolResult:
			parts = append(parts, "result "+e.ID+" "+trim(e.Output))
		case live.Permission:
			parts = append(parts, "permission "+e.Tool+" "+trim(e.Input))
		case live.Question:
			parts = append(parts, "question")
		case live.Withdrawn:
			parts = append(parts, "withdrawn "+e.ID)
		case live.Limit:
			reset := "no reset time"
			if !e.ResetsAt.IsZero() {
				reset = "resets " + e.ResetsAt.Format(time.TimeOnly)
			}
			parts = append(parts, "limit ("+reset+") "+trim(e.Message))
		case live.Error:
			parts = append(parts, "error "+trim(e.Message))
		case live.TurnDone:
			parts = append(parts, "done "+e.Stop+" ("+e.Reason+") "+trim(e.Err))
		case live.Exit:
			parts = append(parts, "exit")
		}
	}
	return strings.Join(parts, " | ")
}

func trim(s string) string {
	s = strings.ReplaceAll(s, "\n", "⏎")
	if r := []rune(s); len(r) > 80 {
		return string(r[:80]) + "…"
	}
	return s
}

// WithoutTheProtocol: a program that is not the CLI in its protocol mode fails Start with ErrHandshake, whether
// it exits at once or never answers, and is ended.
func WithoutTheProtocol(t *testing.T, c Case) {
	for name, argv := range map[string][]string{
		"exits":  {"sh", "-c", "echo 'error: unknown option' >&2; exit 2", "sh"},
		"silent": {"sh", "-c", "exec sleep 30", "sh"}, // the adapter's flags become its arguments
	} {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
			defer cancel()
			start := time.Now()
			_, err := c.Start(ctx, live.Options{Argv: argv, Env: os.Environ(), Dir: t.TempDir(), Grace: 100 * time.Millisecond})
			if !errors.Is(err, live.ErrHandshake) {
				t.Fatalf("Start = %v, want ErrHandshake", err)
			}
			if took := time.Since(start); took > 3*time.Second {
				t.Errorf("Start took %s to give up", took)
			}
		})
	}
}
