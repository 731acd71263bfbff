package headless

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/aceworks/ace/pkg/procs"
)

// A turn silent on its stream is not idle while it works: a build or a test suite running for minutes prints
// nothing until it ends, and a model answering slowly through a tool neither. Before it ends a turn for
// Spec.IdleTimeout, the supervisor looks at what it can see itself — the CPU time of the agent's process tree,
// by the same measure as ace's liveness (procs.Busy) — and at Spec.Pulse, which ace writes when it sees the agent
// work where the supervisor cannot: traffic through the run's proxy, its session files, its working copy. With
// either moved since the last look, the turn gets IdleTimeout more.

// signs is one look at a turn's signs of work.
type signs struct {
	at    time.Time
	cpu   time.Duration // the agent's process tree's CPU time
	pulse time.Time     // when ace last wrote Spec.Pulse (zero: never)
}

// look reads the signs of the agent whose process is pid.
func (s *supervisor) look(pid int) signs {
	g := signs{at: time.Now(), cpu: procs.TreeCPU(pid, true)}
	if s.spec.Pulse != "" {
		if fi, err := os.Stat(s.spec.Pulse); err == nil {
			g.pulse = fi.ModTime()
		}
	}
	return g
}

// moved is the look from which silence counts, after a line of output: taken anew at most once a second, as
// output can come by the thousand lines.
func (s *supervisor) moved(last signs, pid int) signs {
	if time.Since(last.at) < time.Second {
		return last
	}
	return s.look(pid)
}

// working says what showed work between two looks at a silent turn, "" when nothing did.
func working(before, now signs) string {
	var why []string
	if cpu := now.cpu - before.cpu; procs.Busy(cpu, now.at.Sub(before.at)) {
		why = append(why, fmt.Sprintf("its process tree used %.1f s of CPU", cpu.Seconds()))
	}
	if now.pulse.After(before.pulse) {
		why = append(why, "ace saw it work (its traffic, session files or working copy)")
	}
	return strings.Join(why, " and ")
}
