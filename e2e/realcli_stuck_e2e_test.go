package e2e_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aceworks/ace/internal/realcli"
	"github.com/aceworks/ace/pkg/config"
	"github.com/aceworks/ace/pkg/modelserver"
	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/workflow"
)

// pinnedClaude is each pinned claude release.
func pinnedClaude(t *testing.T) []realcli.CLI { return realcli.Pinned(t, "claude") }

// claudeTOML is the user's ace.toml for claude on runner, with more agent settings (key = value lines).
func claudeTOML(runner string, more ...string) string {
	toml := testPrices + "\n[agent]\ndefault = \"claude\"\n\n[agents.claude]\n"
	if runner != "tmux" {
		toml += fmt.Sprintf("runner = %q\n", runner)
	}
	if runner != "exec" {
		toml += "auto_approve = true\n"
	}
	return toml + strings.Join(more, "\n") + "\n"
}

// startRealWorld is openRealWorldOn with its queue working.
func startRealWorld(t *testing.T, c realcli.CLI, toml string, sc modelserver.Scenario, tune ...func(*config.Config)) *realWorld {
	t.Helper()
	w := openRealWorldOn(t, c, toml, strings.Join(realIssueBody, "\n"), sc, tune...)
	if err := w.svc.StartQueue(context.Background()); err != nil {
		t.Fatalf("start the job queue: %v", err)
	}
	return w
}

// realCLIBehindAGateway: claude behind a gateway that does not pass its side requests (its auto-mode
// classifier refused), set up as its gateway users set it up (nonessential traffic off), runs from the issue to
// a pull request in each runner. 2.1.332 in tmux draws "Auto mode can't check actions in this session"
// mid-turn: ace (auto_approve) stays in auto mode, and approves the commit that then asks.
func realCLIBehindAGateway(t *testing.T, cs *realcli.Cases) {
	for _, c := range pinnedClaude(t) {
		for _, runner := range []string{"tmux", "exec", "live"} {
			cs.Run(c.Label()+"/"+runner, c, func(t *testing.T) {
				turns := append([]modelserver.Turn{modelserver.ReadFile("ACE_TASK.md")}, commitTurns()...)
				w := startRealWorld(t, c, claudeTOML(runner, `env = { CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC = "1" }`),
					modelserver.Scenario{Turns: turns, Gateway: true})
				r := w.drive(workflow.UntilSettled, 3*time.Minute)
				if r.Status != store.StatusDone || r.PRNumber == 0 {
					t.Fatalf("run %s at %s (%s), want a pull request\n%s", r.Status, r.Step, r.Error, w.report(r))
				}
				evs := w.events(r)
				if runner == "tmux" && c.Version == "2.1.332" && !strings.Contains(evs, "auto-mode-check") {
					t.Errorf("2.1.332 in tmux: no auto-mode-check dialog answered:\n%s", evs)
				}
				if strings.Contains(evs, " stuck: ") {
					t.Errorf("called stuck:\n%s", evs)
				}
			})
		}
	}
}

// realCLIStuckOrSlow: claude waiting for ever on a model that never answers — its screen says working (in
// tmux, its clock and spinner still move), its conversation shows the turn running — goes to a human within
// stuck_after; the same claude with a model that answers one byte at a time, for several times stuck_after,
// is never called stuck and gets to its pull request.
//
// gemini in tmux at "Thinking..." on a model that never answers goes to a human too, with stuck_after long enough
// that the looks are seconds apart, as a user's are: its renderer redraws the line at about 11 % of a core, which
// liveness took for work for ever (3 minutes without a stuck event). gemini 0.61 abandons the request after 60 s
// and asks again 6 s later: stuck_after stays under that.
func realCLIStuckOrSlow(t *testing.T, cs *realcli.Cases) {
	const stuckAfter = 4 * time.Second
	for _, c := range append(pinnedClaude(t), realcli.Pinned(t, "gemini")...) {
		for _, runner := range []string{"tmux", "live"} {
			for _, model := range []string{"hang", "drip"} {
				if c.Name == "gemini" && (runner != "tmux" || model != "hang") {
					continue // the model server drips Anthropic answers only
				}
				cs.Run(c.Label()+"/"+runner+"/"+model, c, func(t *testing.T) {
					turns := []modelserver.Turn{modelserver.ReadFile("ACE_TASK.md")}
					if model == "hang" {
						turns = append(turns, modelserver.Hang())
					} else {
						work := commitTurns()
						// 60 bytes a quarter of a second apart: 15 s of an answer, nearly four times stuck_after.
						work[0] = work[0].Dripping(250*time.Millisecond, 60)
						turns = append(turns, work...)
					}
					toml, after := claudeTOML(runner), stuckAfter
					if c.Name == "gemini" {
						toml = "[agent]\ndefault = \"gemini\"\n\n[agents.gemini]\nauto_approve = true\n"
						after = 40 * time.Second // looks 5 s apart: the spinner's CPU shows above cpuSlack
					}
					w := startRealWorld(t, c, toml, modelserver.Scenario{Turns: turns},
						func(cfg *config.Config) { cfg.Monitor.StuckAfter = config.D(after) })
					r := w.drive(workflow.UntilSettled, 3*time.Minute)
					evs := w.events(r)
					if model == "drip" {
						if r.Status != store.StatusDone || r.PRNumber == 0 || strings.Contains(evs, " stuck: ") {
							t.Fatalf("run %s at %s (%s), want a pull request and never stuck\n%s", r.Status, r.Step, r.Error, w.report(r))
						}
						return
					}
					if r.Status != store.StatusWaitingInput || !strings.Contains(evs, " stuck: ") {
						t.Fatalf("run %s at %s (%s), want a human asked about a stuck agent\n%s", r.Status, r.Step, r.Error, w.report(r))
					}
					q := ""
					for _, cm := range w.gh.Comments(testRepo, testIssue) {
						if strings.Contains(cm.Body, "needs input") {
							q = cm.Body
						}
					}
					if !strings.Contains(q, "says it is working, but nothing has moved") || !strings.Contains(q, "ACE_TASK.md") {
						t.Errorf("the question does not say the agent is stuck, with its screen:\n%s", q)
					}
				})
			}
		}
	}
}
