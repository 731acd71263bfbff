package serve

import (
	"net/http"

	"github.com/aceworks/ace/pkg/eval"
)

// evals is GET /api/v1/evals: "Agents on this repository" — per repository with an eval, its latest one summed up
// by agent (solve rate with its 95% interval, cost per solved task, median time), as ace eval report sums it.
// On a fleet (Options.SharedEvals) the evals are those its hosts share through the store, whichever host ran them,
// as ace eval report and agent.default = "auto" read them (eval.LatestAll). A repository whose results cannot be
// read is left out and logged; the others are still shown.
func (s *Server) evals(w http.ResponseWriter, r *http.Request) {
	evals, err := eval.LatestAll(r.Context(), s.o.Root, s.o.SharedEvals)
	if err != nil {
		s.log.WarnContext(r.Context(), "read the evals", "err", err)
	}
	if evals == nil {
		evals = []eval.Latest{}
	}
	s.writeJSON(w, http.StatusOK, map[string]any{"evals": evals})
}
