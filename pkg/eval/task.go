package eval

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/aceworks/ace/pkg/atomicfile"
	"github.com/aceworks/ace/pkg/workspace"
)

// Where a task comes from.
const (
	SourcePR     = "pr"     // a merged pull request that closed an issue
	SourceCommit = "commit" // a commit of the default branch, its message the task
)

// Where a task's check command comes from.
const (
	CheckFromVerify = "verify" // the repository workflow's verify command
	CheckFromFlag   = "flag"   // ace eval build --check
)

// Task is one line of a task set. The first fields are SWE-bench's and mean what they mean there (patch is the
// code part of the change, test_patch its test part; FAIL_TO_PASS and PASS_TO_PASS are left out: ace knows
// whether the check passed, not which tests); the others are ace's own.
type Task struct {
	InstanceID       string    `json:"instance_id"` // owner__name-<pr> or owner__name-<commit, 12 digits>
	Repo             string    `json:"repo"`
	BaseCommit       string    `json:"base_commit"`
	Patch            string    `json:"patch"`
	TestPatch        string    `json:"test_patch"`
	ProblemStatement string    `json:"problem_statement"` // the closed issues' titles and bodies, or the commit message
	CreatedAt        time.Time `json:"created_at"`        // the pull request's opening, or the commit's author date

	Source      string `json:"source"` // SourcePR or SourceCommit
	PR          int    `json:"pr,omitempty"`
	URL         string `json:"url,omitempty"`
	Issues      []int  `json:"issues,omitempty"`
	MergeCommit string `json:"merge_commit"` // the commit whose change the task is; BaseCommit is its first parent
	// TestFiles are the paths test_patch touches: the check puts them back as they were at the base before it
	// applies test_patch, so that what an agent did to them does not count.
	TestFiles []string `json:"test_files"`
	// Check is the hidden check's command (an argv, no shell), run in the working copy after Setup, with
	// CheckEnv, within CheckTimeoutSeconds.
	Check               []string          `json:"check"`
	CheckFrom           string            `json:"check_from"` // CheckFromVerify or CheckFromFlag
	CheckEnv            map[string]string `json:"check_env,omitempty"`
	Setup               [][]string        `json:"setup,omitempty"`
	CheckTimeoutSeconds float64           `json:"check_timeout_seconds"`
	// CheckSeconds is the longest of the checks that validated the task.
	CheckSeconds float64   `json:"check_seconds"`
	ValidatedAt  time.Time `json:"validated_at"`
}

// CheckTimeout is the check's time limit.
func (t *Task) CheckTimeout() time.Duration {
	return time.Duration(t.CheckTimeoutSeconds * float64(time.Second))
}

// valid says what makes a task read from a file unusable.
func (t *Task) valid() error {
	switch {
	case t.InstanceID == "":
		return errors.New("no instance_id")
	case !workspace.IsCommitID(t.BaseCommit):
		return fmt.Errorf("base_commit %q is not a commit id", t.BaseCommit)
	case t.TestPatch == "":
		return errors.New("no test_patch")
	case len(t.Check) == 0 || t.Check[0] == "":
		return errors.New("no check command")
	case t.CheckTimeoutSeconds <= 0:
		return errors.New("no check_timeout_seconds")
	}
	for _, p := range t.TestFiles {
		if err := checkPath(p); err != nil {
			return fmt.Errorf("test_files: %w", err)
		}
	}
	return nil
}

// WriteTasks replaces path with the task set, one JSON object a line, whole or not at all (atomicfile).
func WriteTasks(path string, tasks []Task) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // patches are full of < and >
	for i := range tasks {
		if err := enc.Encode(&tasks[i]); err != nil {
			return fmt.Errorf("task %s: %w", tasks[i].InstanceID, err)
		}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return atomicfile.Write(path, b.Bytes(), 0o644)
}

// ReadTasks reads a task set; a line that is no usable task is an error naming the file and the line.
func ReadTasks(path string) ([]Task, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 256<<20) // a line holds whole patches
	var out []Task
	for line := 1; sc.Scan(); line++ {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var t Task
		if err := json.Unmarshal(sc.Bytes(), &t); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, line, err)
		}
		if err := t.valid(); err != nil {
			return nil, fmt.Errorf("%s:%d: task %q: %w", path, line, t.InstanceID, err)
		}
		out = append(out, t)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return out, nil
}
