package workflow

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/aceworks/ace/pkg/headless"
	"github.com/aceworks/ace/pkg/store"
)

// stuck is the headless runner's part of liveness (liveness.go), for a turn that is running: its signs are the
// agent's process tree, its stream and raw output, its session files and traffic, and the working copy. Once
// every one has been flat for stuck_after, the turn is looked at once more (it may have ended meanwhile), and a
// human is asked with its last output. A headless turn takes no input: the human's answer is the next turn, so
// a turn still flat for stuck_after once the answer waits is ended for it (asking again would only repeat the
// question).
func (x *execRunner) stuck(ctx context.Context, r *store.Run, st *headless.Status) (Result, bool, error) {
	debug := filepath.Join(x.execLogDir(r), execName(r)+".debug.log")
	p, due := x.alive.look(r, func() vitals {
		v := vitals{root: headless.ParseProc(r.State.ExecProc).PID, files: []string{r.State.Transcript, debug, x.execStatusPath(r)}}
		if st != nil && st.AgentPID > 0 {
			v.root, v.withRoot = st.AgentPID, true
		}
		if prof, err := x.agent.profile(r); err == nil {
			v.dirs = x.agent.sessionDirs(r, prof)
		}
		return v
	})
	if slices.ContainsFunc(p.moved, func(s string) bool { return s == sigTraffic || s == sigWork }) {
		x.pulse(ctx, r, p.moved)
	}
	if !due || !x.execAlive(ctx, r) {
		return Result{}, false, nil
	}
	st = x.execStatus(ctx, r)
	if r.State.ExecPending != "" {
		x.killAgent(st)
		x.alive.forget(r.ID)
		x.core.eventData(ctx, r, EventStuck, fmt.Sprintf("stuck: the turn showed no sign of work for %s (%s); ended it, so "+
			"that the human's answer goes as the next turn", x.now().Sub(p.first.At).Round(time.Second),
			flatLine(p.first, p.last)), "")
		return Stay(x.cfg.Monitor.Interval.Duration), true, nil
	}
	out := lastWords(st)
	if tail := fileTail(debug, 2048); tail != "" {
		out = strings.TrimSpace(out + "\n\nits raw output, last lines:\n" + tail)
	}
	res, err := x.alive.toHuman(ctx, r, p, "headless", out)
	return res, true, err
}

// pulse tells run r's supervisor that the agent works where it cannot see (headless.Spec.Pulse): its traffic
// through the run's proxy, its working copy. A turn silent on its stream is then not idle.
func (x *execRunner) pulse(ctx context.Context, r *store.Run, moved []string) {
	if err := os.WriteFile(x.execPulsePath(r), []byte(strings.Join(moved, ", ")+"\n"), 0o600); err != nil {
		x.log.WarnContext(ctx, "headless pulse", "run", r.ID, "err", err)
	}
}

// fileTail is the end of the file at path, at most n bytes from a line's start ("" when it cannot be read).
func fileTail(path string, n int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return ""
	}
	off := max(fi.Size()-n, 0)
	b, err := io.ReadAll(io.NewSectionReader(f, off, fi.Size()-off))
	if err != nil {
		return ""
	}
	s := string(b)
	if off > 0 {
		if i := strings.IndexByte(s, '\n'); i >= 0 {
			s = s[i+1:]
		}
	}
	return strings.TrimSpace(s)
}
