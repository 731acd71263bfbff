package service_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aceworks/ace/internal/pgtest"
	"github.com/aceworks/ace/internal/testkit/acetest"
	"github.com/aceworks/ace/pkg/config"
	"github.com/aceworks/ace/pkg/eval"
	"github.com/aceworks/ace/pkg/service"
	"github.com/aceworks/ace/pkg/workflow"
)

// TestAutoAgentIsTheEvalsBest: with agent.default = "auto" an issue that chooses no agent goes to the agent with
// the best solve rate per dollar in the repository's latest eval (its results where ace eval run keeps them),
// and the run's state and event log say why; an agent the issue asks for is kept; without an eval whose agents
// have agent.auto_min_runs scored runs, the run goes to agent.auto_otherwise, saying so.
func TestAutoAgentIsTheEvalsBest(t *testing.T) {
	t.Parallel()
	in := acetest.New(t, "done ok\n")
	cfg := in.Cfg
	cfg.Agents["cheap"], cfg.Agents["dear"] = cfg.Agents["fake"], cfg.Agents["fake"]
	cfg.Agent = config.AgentDefaults{Default: config.AgentAuto, AutoOtherwise: "fake", AutoMinRuns: 3}
	svc := acetest.Open(t, service.Options{Config: cfg, Secrets: acetest.Secrets(map[string]string{"GITHUB_TOKEN": "ghs_test"}), Executable: in.Exe})
	ctx := context.Background()
	open := func(issue int, agent string) (string, string, string) {
		t.Helper()
		r, err := svc.Engine.Open(ctx, workflow.Request{Repo: acetest.Repo, Issue: issue, Agent: agent})
		if err != nil {
			t.Fatal(err)
		}
		evs, err := svc.Store.Events(ctx, r.ID)
		if err != nil || len(evs) == 0 {
			t.Fatalf("events: %v, %v", evs, err)
		}
		return r.Agent, r.State.AgentAuto, evs[len(evs)-1].Message
	}

	if agent, why, ev := open(1, ""); agent != "fake" || !strings.Contains(why, "no eval of acme/widgets recommends") ||
		!strings.Contains(ev, `with agent fake (agent.default = "auto": no eval`) {
		t.Errorf("without an eval: agent %s (%q), event %q", agent, why, ev)
	}
	dir := filepath.Join(cfg.Workspace.Root, "eval", "acme", "widgets", "run", "results")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	n := 0
	add := func(agent string, runs, solved int, cost float64) {
		for i := range runs {
			n++
			r := eval.RunResult{Item: eval.Item{N: n, InstanceID: fmt.Sprintf("t%d", i), Agent: agent, Run: 1}, Repo: acetest.Repo,
				Solved: i < solved, ScoredAt: time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC)}
			r.Usage.CostUSD = cost
			b, _ := json.Marshal(r)
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprint(n)+".json"), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	add("dear@1.0.0", 4, 4, 1)    // 1 solved per dollar
	add("cheap@2.0.0", 4, 2, 0.1) // 5 solved per dollar
	add("fake", 2, 2, 0.01)       // too few runs
	agent, why, ev := open(2, "")
	if agent != "cheap" || !strings.Contains(why, "the eval of 2026-11-20 recommends cheap@2.0.0: solved 2 of 4 runs") ||
		!strings.Contains(ev, "with agent cheap (agent.default") {
		t.Errorf("with an eval: agent %s (%q), event %q", agent, why, ev)
	}
	if agent, why, _ := open(3, "dear"); agent != "dear" || why != "" {
		t.Errorf("an agent asked for: %s (%q)", agent, why)
	}
}

// TestAutoAgentOnAFleetIsTheSharedEvalsBest: with the store on PostgreSQL, agent.default = "auto" reads the
// repository's eval from the fleet's store, where ace eval run on any host keeps its results (eval.SharedBook),
// though this host's root holds none.
func TestAutoAgentOnAFleetIsTheSharedEvalsBest(t *testing.T) {
	t.Parallel()
	in := pgConfig(t, pgtest.URL(t))
	cfg := in.Cfg
	cfg.Agents["cheap"], cfg.Agents["dear"] = cfg.Agents["fake"], cfg.Agents["fake"]
	cfg.Agent = config.AgentDefaults{Default: config.AgentAuto, AutoOtherwise: "fake", AutoMinRuns: 3}
	svc := openService(t, cfg, in.Exe)
	ctx := context.Background()
	// Another host's eval of the repository in its default directory (run/), scored into the shared store.
	book := &eval.SharedBook{Store: svc.Store, Name: eval.SharedName(acetest.Repo, "/elsewhere/eval/acme/widgets/run"), Host: "beta"}
	var items []eval.Item
	for i := range 4 {
		for _, a := range []string{"dear", "cheap"} {
			items = append(items, eval.Item{InstanceID: fmt.Sprintf("t%d", i), Agent: a, Run: 1})
		}
	}
	items, err := book.Number(ctx, items)
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range items {
		r := eval.RunResult{Item: it, Repo: acetest.Repo, Host: "beta", ScoredAt: time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)}
		r.Solved, r.Usage.CostUSD = true, 1 // dear: 1 solved per dollar
		if it.Agent == "cheap" {
			r.Solved, r.Usage.CostUSD = it.InstanceID < "t2", 0.1 // cheap: 5 solved per dollar
		}
		if err := book.Write(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	r, err := svc.Engine.Open(ctx, workflow.Request{Repo: acetest.Repo, Issue: acetest.Issue})
	if err != nil {
		t.Fatal(err)
	}
	if r.Agent != "cheap" || !strings.Contains(r.State.AgentAuto, "the eval of 2026-11-21 recommends cheap: solved 2 of 4 runs") {
		t.Errorf("agent %s (%q), want cheap from the fleet's eval", r.Agent, r.State.AgentAuto)
	}
}
