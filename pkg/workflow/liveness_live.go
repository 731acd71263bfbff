package workflow

import (
	"context"

	"github.com/aceworks/ace/pkg/store"
)

// stuck is the live runner's part of liveness (liveness.go), for a running turn that waits on nothing the
// conversation asked: its signs are the CLI's process tree below the host, the host's transcript, the CLI's
// session files and traffic, the working copy and the pane. Once every one has been flat for stuck_after, the
// host is asked once more: a permission or question pending now goes the usual way (Observe), else a human is
// asked with the pane.
func (l *liveRunner) stuck(ctx context.Context, r *store.Run) (Result, bool, error) {
	p, due := l.alive.look(r, func() vitals {
		_, _, _, transcript, _ := l.liveFiles(r)
		v := vitals{files: []string{transcript}}
		if pane, ok, err := l.panes.pane(ctx, r.Session); err == nil && ok {
			v.root = pane.PID // the host, whose own CPU answers ace's looks: only the CLI below it counts
		}
		if prof, err := l.agent.profile(r); err == nil {
			v.dirs = l.agent.sessionDirs(r, prof)
		}
		v.screen, _ = l.panes.screen(ctx, r, 0)
		return v
	})
	if !due {
		return Result{}, false, nil
	}
	st, err := l.client(r).Status(ctx)
	if err != nil || !st.Busy || len(st.Pending) > 0 {
		l.alive.forget(r.ID)
		return Result{}, false, nil // gone, idle or asking: Observe takes it
	}
	screen, _ := l.panes.screen(ctx, r, 0)
	res, err := l.alive.toHuman(ctx, r, p, "busy", screen)
	return res, true, err
}
