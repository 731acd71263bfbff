package e2e_test

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aceworks/ace/internal/fakegithub"
	"github.com/aceworks/ace/internal/realcli"
	"github.com/aceworks/ace/pkg/config"
	"github.com/aceworks/ace/pkg/modelserver"
	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/workflow"
)

// unreachableAfter is the cases' monitor.unreachable_after: short, so that a case ends in well under a minute.
const unreachableAfter = 15 * time.Second

// realCLIsUnreachable: each real CLI, on each runner, pointed at its model the way a user points it at a
// gateway on this machine (claude's and gemini's environment, codex's own config.toml), boxed, with the gateway
// down (nothing listens on its port). The CLI retries its API; the run says so (an unreachable event naming the
// destination) and, within monitor.unreachable_after and a little, goes to a human on the issue with a comment
// naming the destination — not to a timeout. The box records no file attempt meanwhile: a CLI's retries are an
// ordinary run's.
func realCLIsUnreachable(t *testing.T, cs *realcli.Cases) {
	for _, c := range realcli.PinnedAll(t) {
		for _, runner := range []string{"tmux", "exec", "live"} {
			cs.Run(c.Label()+"/"+runner, c, func(t *testing.T) {
				runUnreachable(t, c, runner)
			})
		}
	}
}

func runUnreachable(t *testing.T, c realcli.CLI, runner string) {
	toml := fmt.Sprintf("[agent]\ndefault = %q\n\n[agents.%s]\nauto_approve = true\n", c.Name, c.Name)
	if runner != "tmux" {
		toml += fmt.Sprintf("runner = %q\n", runner)
	}
	w := newRealWorld(t, c, toml, "Please add GREETING.md.", []modelserver.Turn{modelserver.ReadFile("ACE_TASK.md")},
		func(cfg *config.Config) { cfg.Monitor.UnreachableAfter = config.D(unreachableAfter) })
	u, err := url.Parse(w.srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	dest := "127.0.0.1:" + u.Port()
	w.srv.Close() // the gateway is down: its port stays configured, nothing listens on it
	start := time.Now()
	r := w.drive(workflow.UntilSettled, 3*time.Minute)
	took := time.Since(start)
	ev := w.events(r)
	t.Logf("%s %s: to a human after %s; events:\n%s", c.Label(), runner, took.Round(time.Millisecond), ev)
	if r.Status != store.StatusWaitingInput {
		t.Fatalf("run %s at %s (%s), want waiting_input: a human asked\n%s", r.Status, r.Step, r.Error, w.report(r))
	}
	if !strings.Contains(ev, "unreachable: "+c.Name+" cannot reach its model ("+dest) {
		t.Errorf("no unreachable event names %s", dest)
	}
	asked := slices.ContainsFunc(w.gh.Comments(testRepo, testIssue), func(cm fakegithub.Comment) bool {
		return !strings.Contains(cm.Body, workflow.StatusMarker) && strings.Contains(cm.Body, "cannot reach its model ("+dest)
	})
	if !asked {
		t.Errorf("no question on the issue names %s:\n%s", dest, comments(w))
	}
	if !slices.Contains(w.gh.Issue(testRepo, testIssue).Labels, "ace:needs-input") {
		t.Errorf("labels %v lack ace:needs-input", w.gh.Issue(testRepo, testIssue).Labels)
	}
	if strings.Contains(ev, "box-file:") {
		t.Errorf("a CLI retrying its model recorded file attempts:\n%s", ev)
	}
	if strings.Contains(ev, "nudge") || strings.Contains(ev, "restart") || strings.Contains(ev, "monitor.timeout") {
		t.Errorf("the run was nudged, restarted or timed out rather than asking:\n%s", ev)
	}
	// The bound: from the first sign that the CLI cannot reach its model to the question, monitor.unreachable_after
	// and the monitor's next look (a tmux run's job sleeps up to a quiet interval between looks).
	first, question := eventAt(t, w, r, "unreachable"), eventAt(t, w, r, "question")
	if gap, limit := question.Sub(first), unreachableAfter+30*time.Second; gap > limit {
		t.Errorf("a human was asked %s after the first sign, want within %s", gap.Round(time.Second), limit)
	}
}

// eventAt is when the run's first event of kind was recorded.
func eventAt(t *testing.T, w *realWorld, r *store.Run, kind string) time.Time {
	t.Helper()
	evs, err := w.svc.Store.Events(t.Context(), r.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		if e.Kind == kind {
			return e.Time
		}
	}
	t.Fatalf("no %s event", kind)
	return time.Time{}
}

// comments are the issue's comments, for a failure's message.
func comments(w *realWorld) string {
	var b strings.Builder
	for _, c := range w.gh.Comments(testRepo, testIssue) {
		fmt.Fprintf(&b, "--- %s:\n%s\n", c.Author, c.Body)
	}
	return b.String()
}
