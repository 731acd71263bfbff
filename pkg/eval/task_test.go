package eval

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func sampleTask() Task {
	return Task{InstanceID: "acme__calc-12", Repo: "acme/calc", BaseCommit: strings.Repeat("a", 40),
		Patch: "diff --git a/lib/x.sh b/lib/x.sh\n<html> & \x1b[31m\n", TestPatch: "diff --git a/tests/t.sh b/tests/t.sh\n",
		ProblemStatement: "crash\n\nsteps: `x < y`", CreatedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Source: SourcePR, PR: 12,
		Issues: []int{11}, MergeCommit: strings.Repeat("b", 40), TestFiles: []string{"tests/t.sh"}, Check: []string{"sh", "run-tests.sh"},
		CheckFrom: CheckFromVerify, CheckEnv: map[string]string{"A": "1"}, Setup: [][]string{{"npm", "ci"}}, CheckTimeoutSeconds: 60,
		CheckSeconds: 1.5, ValidatedAt: time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)}
}

// TestTaskSetRoundTrips: a task set reads back as written, with SWE-bench's names for SWE-bench's fields.
func TestTaskSetRoundTrips(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "set", "tasks.jsonl")
	a, b := sampleTask(), sampleTask()
	b.InstanceID, b.Source, b.PR, b.Issues = "acme__calc-0123456789ab", SourceCommit, 0, nil
	if err := WriteTasks(path, []Task{a, b}); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines, want 2:\n%s", len(lines), data)
	}
	for _, field := range []string{`"instance_id":"acme__calc-12"`, `"repo":"acme/calc"`, `"base_commit":`, `"patch":`, `"test_patch":`,
		`"problem_statement":`, `"created_at":"2026-01-02T03:04:05Z"`, `<html> & `} {
		if !strings.Contains(lines[0], field) {
			t.Errorf("the first line lacks %s:\n%s", field, lines[0])
		}
	}
	got, err := ReadTasks(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || !reflect.DeepEqual(got[0], a) || !reflect.DeepEqual(got[1], b) {
		t.Fatalf("read back\n%+v\nwant\n%+v\n%+v", got, a, b)
	}
}

// TestReadTasksNamesTheBadLine: a line that is no usable task is an error with the file and the line.
func TestReadTasksNamesTheBadLine(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bad := sampleTask()
	bad.TestFiles = []string{"../../etc/passwd"}
	for name, second := range map[string]string{
		"json":      "{not json",
		"base":      `{"instance_id":"x","base_commit":"main","test_patch":"p","check":["true"],"check_timeout_seconds":1}`,
		"test file": "",
	} {
		line := ":3:" // after a blank line
		if second == "" {
			line = ":2:"
		}
		path := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".jsonl")
		if err := WriteTasks(path, []Task{sampleTask()}); err != nil {
			t.Fatal(err)
		}
		if second == "" {
			if err := WriteTasks(path, []Task{sampleTask(), bad}); err != nil {
				t.Fatal(err)
			}
		} else {
			f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
			f.WriteString("\n" + second + "\n")
			f.Close()
		}
		_, err := ReadTasks(path)
		if err == nil || !strings.Contains(err.Error(), path+line) {
			t.Errorf("%s: %v, want an error naming %s%s", name, err, path, line)
		}
	}
}
