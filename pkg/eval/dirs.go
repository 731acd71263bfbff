package eval

import (
	"path/filepath"
	"strings"
)

// DefaultTasks is where ace eval build writes repo's task set, and ace eval run reads it, under ace's root.
func DefaultTasks(root, repo string) string {
	owner, name, _ := strings.Cut(repo, "/")
	return filepath.Join(root, "eval", owner, name, "tasks.jsonl")
}

// DirBeside is ace eval run's directory for a task set: run/ beside it. The default one (beside DefaultTasks) is
// the repository's latest eval, which agent.default = "auto" reads.
func DirBeside(tasks string) string { return filepath.Join(filepath.Dir(tasks), runDir) }

// runDir names DirBeside's directory.
const runDir = "run"
