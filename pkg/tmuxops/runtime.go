package tmuxops

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/aceworks/ace/pkg/procs"
)

// Runtime files: what ace writes under <root>/run for one start, for the program it starts to read and delete —
// an env file (an agent's variables and secrets, for the launchers and the headless supervisor) and a headless
// turn's spec. One left behind belongs to a start that did not happen: the ace that wrote it died before it
// started the program, or the program never ran (its pane died first, its server was killed).

// RuntimeName is the os.CreateTemp pattern of a runtime file of kind ("env", "headless") ending in ext: the
// writer's procs.Tag names it, so that a later ace knows a file whose writer is gone.
func RuntimeName(kind, ext string) string { return kind + "-" + procs.Tag() + "-*" + ext }

// runtimePatterns match the runtime files in their directory (older aces named theirs without a tag).
var runtimePatterns = []string{"env-*", "headless-*.json"}

const (
	// launchGrace is how long a runtime file may wait for its program after its writer died: a tmux command or
	// a fork under way when ace was killed still starts the launcher, which reads the file within moments.
	launchGrace = 5 * time.Second
	// unreadAfter is how long a runtime file of a live writer may stay unread: its program would have read it
	// long before.
	unreadAfter = 10 * time.Minute
)

// Leftover is a runtime file no program will read, and why.
type Leftover struct {
	Path string
	Why  string
}

// RuntimeLeftovers lists the runtime files in dir that no start will read: no process names the file in its
// command line (a launcher about to read it), it is older than launchGrace, and its writer is gone or it has
// waited unreadAfter. recheck is when a file not yet a leftover may have become one (0: none is waiting).
func RuntimeLeftovers(dir string, now time.Time) (left []Leftover, recheck time.Duration) {
	var files []string
	for _, p := range runtimePatterns {
		m, _ := filepath.Glob(filepath.Join(dir, p))
		files = append(files, m...)
	}
	if len(files) == 0 {
		return nil, 0
	}
	inFlight := namedInCommandLines(files)
	later := func(d time.Duration) {
		if d > 0 && (recheck == 0 || d < recheck) {
			recheck = d
		}
	}
	for _, f := range files {
		fi, err := os.Lstat(f)
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		age := now.Sub(fi.ModTime())
		tag := runtimeTag(filepath.Base(f))
		switch {
		case inFlight[f]:
			later(launchGrace)
		case age < launchGrace:
			later(launchGrace - age)
		case tag != "" && procs.TagGone(tag):
			pid, _, _ := strings.Cut(tag, ".")
			left = append(left, Leftover{Path: f, Why: "written by ace " + pid + ", which died before its program read it"})
		case age >= unreadAfter:
			left = append(left, Leftover{Path: f, Why: fmt.Sprintf("unread for %s", age.Round(time.Minute))})
		default:
			later(unreadAfter - age)
		}
	}
	return left, recheck
}

// SweepRuntime removes RuntimeLeftovers(dir) and returns them, with when to look again.
func SweepRuntime(dir string) (removed []Leftover, recheck time.Duration) {
	left, recheck := RuntimeLeftovers(dir, time.Now())
	for _, l := range left {
		if err := os.Remove(l.Path); err == nil {
			removed = append(removed, l)
		}
	}
	return removed, recheck
}

// runtimeTag is the writer's tag in a runtime file's name ("env-<tag>-<random>"); "" for an older name.
func runtimeTag(name string) string {
	_, rest, _ := strings.Cut(name, "-")
	tag, _, ok := strings.Cut(rest, "-")
	if !ok || !strings.Contains(tag, ".") {
		return ""
	}
	return tag
}

// namedInCommandLines are the files some live process names in its command line: `ace __launch ENVFILE`,
// `ace __box-launch ENVFILE`, `ace __headless SPECFILE` before they have read it.
func namedInCommandLines(files []string) map[string]bool {
	out := map[string]bool{}
	for _, p := range procs.All() {
		for _, a := range procs.Cmdline(p) {
			if slices.Contains(files, a) {
				out[a] = true
			}
		}
	}
	return out
}
