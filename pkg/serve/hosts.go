package serve

import (
	"context"
	"net/http"
	"time"

	"github.com/aceworks/ace/pkg/workflow"
)

// hosts reads every host's slots: live agents against poll.max_concurrent, waiting rounds, working copies held.
func (s *Server) hosts(ctx context.Context) ([]workflow.HostSlots, error) {
	return workflow.FleetSlots(ctx, s.o.Store, s.o.DeadAfter, time.Now())
}

// getHosts is GET /api/v1/hosts.
func (s *Server) getHosts(w http.ResponseWriter, r *http.Request) {
	hosts, err := s.hosts(r.Context())
	if err != nil {
		s.fail(w, err)
		return
	}
	if hosts == nil {
		hosts = []workflow.HostSlots{}
	}
	s.writeJSON(w, http.StatusOK, map[string]any{"hosts": hosts})
}
