package serve

import (
	"context"
	"net/http"
	"time"

	"github.com/aceworks/ace/pkg/workflow"
)

// fleet reads every host's slots — agents working and kept idle against poll.max_concurrent, runs waiting for a
// slot, working copies held — and the queue of labelled issues no host had a slot for.
func (s *Server) fleet(ctx context.Context) (workflow.Fleet, error) {
	return workflow.ReadFleet(ctx, s.o.Store, s.o.DeadAfter, time.Now())
}

// getHosts is GET /api/v1/hosts: {"hosts": […], "queue": […]}.
func (s *Server) getHosts(w http.ResponseWriter, r *http.Request) {
	f, err := s.fleet(r.Context())
	if err != nil {
		s.fail(w, err)
		return
	}
	s.writeJSON(w, http.StatusOK, f)
}
