package e2e_test

import (
	"context"
	"encoding/json"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aceworks/ace/internal/testkit"
	"github.com/aceworks/ace/pkg/config"
	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/workflow"
)

// stuckAfter is monitor.stuck_after in these cases: the "minutes" of a user's run, made short.
const stuckAfter = 2 * time.Second

// stuckTune gives the world a short stuck_after and nothing else that would end the wait: no nudge (idle_after),
// no timeout, no headless idle kill within the case.
func stuckTune(c *config.Config) {
	c.Monitor.StuckAfter = config.D(stuckAfter)
	c.Monitor.IdleAfter = config.D(5 * time.Minute)
	c.Monitor.ExecIdleTimeout = config.D(5 * time.Minute)
	c.Monitor.ExecTurnTimeout = config.D(10 * time.Minute)
}

// neverSeen is a dialog no CLI drew before, drawn mid-turn by the scripted agent, which then does nothing.
const neverSeen = `Something changed in this session\nPress Enter to carry on · F9 to give up`

// TestStuckRunsGoToAHuman: the scripted agent works a moment (a second: long enough for delivery to see the
// prompt taken, as a real CLI's first request is), then draws a dialog ace never saw (the tmux runner: as its
// screen; headless: on stderr) and does nothing, or says "esc to interrupt" for ever while nothing moves.
func TestStuckRunsGoToAHuman(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, script, runner string
		want                 []string // in the question on the issue
	}{
		{"tmux-never-seen-dialog", "say working on it\nbusy 1s\nstall " + neverSeen, "tmux",
			[]string{"a screen ace does not know", "Something changed in this session", "Press Enter to carry on"}},
		{"tmux-busy-forever", "say working on it\nbusy 1s\nhang", "tmux",
			[]string{"says it is working, but nothing has moved", "esc to interrupt"}},
		{"exec-never-seen-dialog", "say working on it\nstall " + neverSeen + "\n" + workScript, "exec",
			[]string{"shown no sign of work", "Something changed in this session"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var w *world
			if tc.runner == "exec" {
				w = newHeadlessWorld(t, "claude", tc.script, stuckTune)
			} else {
				w = newWorld(t, tc.script, stuckTune)
			}
			r := w.run(workflow.UntilSettled)
			if r.Status != store.StatusWaitingInput {
				t.Fatalf("run %s at %s (%s), want it waiting for a human", r.Status, r.Step, r.Error)
			}
			var q string
			for _, c := range w.gh.Comments(testRepo, testIssue) {
				if strings.Contains(c.Body, "needs input") {
					q = c.Body
				}
			}
			for _, s := range tc.want {
				if !strings.Contains(q, s) {
					t.Errorf("the question on the issue lacks %q:\n%s", s, q)
				}
			}
			evs, err := w.svc.Store.Events(context.Background(), r.ID)
			if err != nil {
				t.Fatal(err)
			}
			var prompt, stuck *store.Event
			for i, e := range evs {
				switch e.Kind {
				case string(workflow.EventPrompt), string(workflow.EventSession):
					if prompt == nil || tc.runner == "tmux" && e.Kind == string(workflow.EventPrompt) {
						prompt = &evs[i]
					}
				case string(workflow.EventStuck):
					stuck = &evs[i]
				}
			}
			if stuck == nil || prompt == nil {
				t.Fatalf("no stuck event after the prompt: %+v", evs)
			}
			var data struct {
				Flat string `json:"flat"`
				Now  struct {
					Screen uint64 `json:"screen"`
				} `json:"now"`
			}
			if err := json.Unmarshal([]byte(stuck.Data), &data); err != nil || !strings.Contains(data.Flat, "CPU") ||
				!strings.Contains(data.Flat, "working copy unchanged") {
				t.Errorf("the stuck event names no flat signals: %q (%v)", stuck.Data, err)
			}
			// Flat for stuck_after, then one look more: well within the agent's time (monitor.timeout, idle_after).
			if took := stuck.Time.Sub(prompt.Time); took < stuckAfter || took > stuckAfter+20*time.Second {
				t.Errorf("the human was asked %s after the prompt, want about stuck_after (%s)", took, stuckAfter)
			}
			if r.Nudges != 0 {
				t.Errorf("%d nudges: a stuck agent is not an idle one", r.Nudges)
			}
			if tc.runner != "exec" {
				return
			}
			// Headless, the answer is the next turn: the stalled turn, still flat, is ended for it.
			w.gh.AddComment(testRepo, testIssue, "alice", "Carry on.")
			r = w.run(untilEnded)
			if r.Status != store.StatusDone {
				t.Fatalf("after the answer the run ended %s at %s (%s), want done", r.Status, r.Step, r.Error)
			}
			if turns := w.turns(); len(turns) != 2 || turns[1].Prompt != "Carry on." {
				t.Errorf("turns %+v, want the answer as the second", turns)
			}
		})
	}
}

// TestSpinningStuckAgentGoesToAHuman: an agent that says "esc to interrupt" for ever while its renderer redraws
// the busy line at 15 % of a core — gemini 0.61 at "Thinking..." after its model had answered, 11 % — with
// nothing else moving, beside busy loops, goes to a human: a spinner's redraws are no work. stuck_after is long
// enough here that the looks are seconds apart, as a user's are (within seconds, cpuSlack covers any spinner).
func TestSpinningStuckAgentGoesToAHuman(t *testing.T) {
	t.Parallel()
	const stuckAfter = 16 * time.Second
	w := newWorld(t, "say working on it\nbusy 1s\nhang 15%", func(c *config.Config) {
		stuckTune(c)
		c.Monitor.StuckAfter = config.D(stuckAfter)
	})
	testkit.LoadCPU(t, runtime.NumCPU())
	start := time.Now()
	r := w.run(workflow.UntilSettled)
	evs, err := w.svc.Store.Events(context.Background(), r.ID)
	if err != nil {
		t.Fatal(err)
	}
	stuck := slices.ContainsFunc(evs, func(e store.Event) bool { return e.Kind == string(workflow.EventStuck) })
	if r.Status != store.StatusWaitingInput || !stuck {
		t.Fatalf("run %s at %s (%s), want it waiting for a human, stuck: %+v", r.Status, r.Step, r.Error, evs)
	}
	t.Logf("asked a human %s after the start (stuck_after %s)", time.Since(start).Round(time.Millisecond), stuckAfter)
}

// TestWorkingAgentIsNeverStuck: an agent whose screen says working while its working copy changes now and then
// (a slow build writing its output) is never called stuck, however long stuck_after's multiple it works.
func TestWorkingAgentIsNeverStuck(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString("say working on it\n")
	for range 6 {
		b.WriteString("busy 1500ms\nappend build.log line\\n\n")
	}
	b.WriteString(workScript)
	w := newWorld(t, b.String(), stuckTune)
	r := w.run(workflow.UntilSettled)
	if r.Status != store.StatusDone {
		t.Fatalf("run %s at %s (%s), want done", r.Status, r.Step, r.Error)
	}
	evs, _ := w.svc.Store.Events(context.Background(), r.ID)
	for _, e := range evs {
		if e.Kind == string(workflow.EventStuck) {
			t.Errorf("called stuck while it worked: %s", e.Message)
		}
	}
}
