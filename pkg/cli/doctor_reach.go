package cli

import (
	"context"

	"github.com/aceworks/ace/pkg/agents"
	"github.com/aceworks/ace/pkg/runbox"
)

// checkReach says whether agent p reaches each endpoint its configuration names, the way its runs will: from a
// box like theirs where they are boxed (runbox.CheckReach). What the box keeps out fails (its fix is a line of
// ace.toml); what the network does not answer warns (a gateway down now may be up when the run starts).
func checkReach(ctx context.Context, c *check, app *App, p agents.Profile) {
	if a := p.Adapter(); a != nil && a.Internal {
		return
	}
	res, err := runbox.CheckReach(ctx, app.Config, p, executable())
	if err != nil {
		c.warn("reach "+p.Name, err.Error())
		return
	}
	for _, r := range res {
		switch {
		case r.OK:
			c.ok("reach "+p.Name, r.String())
		case r.Config:
			c.fail("reach "+p.Name, r.String())
		default:
			c.warn("reach "+p.Name, r.String())
		}
	}
}
