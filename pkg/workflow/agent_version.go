package workflow

import (
	"context"
	"fmt"
	"time"

	"github.com/aceworks/ace/pkg/agents"
	"github.com/aceworks/ace/pkg/store"
)

// recordCLIVersion notes on the run which version of its agent's CLI it started, against the releases ace was
// tested with: ace show, ace ls --json and the status comment carry it, and one outside the range is an event
// (its screens may have moved: `ace agents check` tells). A probe that fails or hangs costs the run nothing.
func (e *Engine) recordCLIVersion(ctx context.Context, r *store.Run, prof agents.Profile) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	in, err := e.versions.Of(ctx, prof)
	if err != nil || in.Version == "" {
		if err != nil {
			e.log.DebugContext(ctx, "agent CLI version unknown", "agent", prof.Name, "err", err)
		}
		return
	}
	v := &store.CLIVersion{Version: in.Version}
	if in.Tested.Oldest != "" {
		v.Tested, v.Place = in.Tested.String(), in.Tested.Place(in.Version)
	}
	if old := r.State.AgentCLI; old != nil && *old == *v {
		return
	}
	r.State.AgentCLI = v
	if v.Place != 0 {
		e.event(ctx, r, "agent-version", fmt.Sprintf("%s %s: outside the tested range; run `ace agents check %s` to see whether ace still drives it",
			prof.Name, v, prof.Name))
	}
}
