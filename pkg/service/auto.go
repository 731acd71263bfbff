package service

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/aceworks/ace/pkg/eval"
	"github.com/aceworks/ace/pkg/store"
)

// chooseAgent is agent.default = "auto" (workflow.Options.ChooseAgent): the agent with the best solve rate per
// dollar in the repository's latest eval — the results of ace eval run where it keeps them by default (latestEval) — among
// those with agent.auto_min_runs scored runs that solved something; "" when none qualifies (or there is no eval).
// An agent the eval ran at a pinned release (claude@2.1.332) is chosen by its name: runs use the installed CLI.
func (s *Service) chooseAgent(ctx context.Context, repo string) (agent, why string, err error) {
	results, err := s.latestEval(ctx, repo)
	if err != nil || len(results) == 0 {
		return "", "", err
	}
	c, ok := eval.Summarize(results).Best(s.Config.Agent.AutoMinRuns)
	if !ok {
		return "", "", nil
	}
	var latest time.Time
	for _, r := range results {
		if r.ScoredAt.After(latest) {
			latest = r.ScoredAt
		}
	}
	agent, _, _ = strings.Cut(c.Agent, "@")
	return agent, fmt.Sprintf("the eval of %s recommends %s: %s", latest.UTC().Format("2006-01-02"), c.Agent, c.Why), nil
}

// latestEval are the results of the repository's latest eval (eval.LatestResults): a fleet's from its store.
func (s *Service) latestEval(ctx context.Context, repo string) ([]eval.RunResult, error) {
	return eval.LatestResults(ctx, s.Root, repo, s.SharedEvals())
}

// SharedEvals is the store where a fleet's hosts keep the evals they share (its store on PostgreSQL, which
// ace eval run's shared book writes to), or nil on one host, whose evals are its eval directories' files.
func (s *Service) SharedEvals() eval.SharedEvals {
	if s.Store.Kind() != store.PostgreSQL {
		return nil
	}
	return s.Store
}
