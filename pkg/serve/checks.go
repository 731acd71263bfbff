package serve

import (
	"net/http"
	"time"

	"github.com/aceworks/ace/pkg/agentcheck"
)

// AgentCheck is the last `ace agents check` of one CLI version, as the API and the dashboard show it.
type AgentCheck struct {
	Agent     string    `json:"agent"`
	Version   string    `json:"version"`
	OK        bool      `json:"ok"`
	CheckedAt time.Time `json:"checked_at"`
	// Failed names the steps that did not hold, with what the check saw.
	Failed []agentcheck.Step `json:"failed,omitempty"`
}

// checks reads the last check of each CLI version kept under the workspace root.
func (s *Server) checks() ([]AgentCheck, error) {
	results, err := agentcheck.Last(s.o.Root)
	if err != nil {
		return nil, err
	}
	out := make([]AgentCheck, 0, len(results))
	for _, r := range results {
		c := AgentCheck{Agent: r.Agent, Version: r.Version, OK: r.OK(), CheckedAt: r.CheckedAt}
		for _, st := range r.Steps() {
			if !st.OK {
				c.Failed = append(c.Failed, st)
			}
		}
		out = append(out, c)
	}
	return out, nil
}

// agentChecks is GET /api/v1/agents/checks: the last `ace agents check` per CLI and version.
func (s *Server) agentChecks(w http.ResponseWriter, _ *http.Request) {
	checks, err := s.checks()
	if err != nil {
		s.fail(w, err)
		return
	}
	s.writeJSON(w, http.StatusOK, map[string]any{"checks": checks})
}
