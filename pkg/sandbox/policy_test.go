package sandbox

import (
	"slices"
	"testing"
)

// TestPolicy: what a box records — a hidden path read or written (but not a path mounted below it), a write
// outside its writable paths, another process's /proc entry — and what it does not.
func TestPolicy(t *testing.T) {
	p := newPolicy(Spec{
		WorkDir: "/r/worktrees/o/1", Home: "/r/boxes/1/homes/claude",
		ReadOnly:  []string{"/r/mirrors/o.git/objects", "/home/u/.nvm/versions/node/v22", "/opt/tool"},
		ReadWrite: []string{"/home/u/.claude/.credentials.json"},
		Hide:      []string{"/r", "/home/u", "/etc/ace/secrets.env"},
		Lookups:   []string{"CLAUDE.md", ".claude", "../escape", "/abs"},
	})
	inBox := func(pid int) bool { return pid < 100 }
	for _, c := range []struct {
		path  string
		write bool
		want  AttemptKind // "" records nothing
	}{
		{"/home/u/.ssh/id_ed25519", false, AttemptHidden},
		{"/home/u/.ssh", false, AttemptHidden},
		{"/r/worktrees/o/2/NOTES.md", false, AttemptHidden},
		{"/r/ace.db", false, AttemptHidden},
		{"/r/homes/codex/auth.json", true, AttemptHidden},
		{"/etc/ace/secrets.env", false, AttemptHidden},
		{"/r/worktrees/o/1/main.go", false, ""},
		{"/r/worktrees/o/1/main.go", true, ""},
		{"/r/worktrees/o/10/main.go", false, AttemptHidden}, // a sibling whose name starts the same
		{"/r/worktrees/o", false, ""},                       // a parent of the box's own mounts: shows only them
		{"/r", false, ""},
		{"/home/u", false, ""},
		{"/r/worktrees/o", true, AttemptHidden}, // making it (it exists: the notifier drops that) or writing in it
		{"/r/worktrees/o/x", true, AttemptHidden},
		// What the CLI looks up in each parent of its working copy, and only there.
		{"/r/worktrees/CLAUDE.md", false, ""},
		{"/home/u/.claude/CLAUDE.md", false, ""},
		{"/home/u/.claude/rules/style.md", false, ""},
		{"/home/u/.claude/CLAUDE.md", true, AttemptHidden},
		{"/home/u/.ssh/CLAUDE.md", false, AttemptHidden}, // ~/.ssh is no parent of the box's paths
		{"/r/homes/codex/.claude/.credentials.json", false, AttemptHidden},
		{"/home/u/CLAUDE.md.bak", false, AttemptHidden},
		{"/r/boxes/1/homes/claude/.claude.json", true, ""},
		{"/r/mirrors/o.git/objects/pack/p.pack", false, ""},
		{"/r/mirrors/o.git/objects/pwned", true, AttemptWrite},
		{"/r/mirrors/o.git/config", false, AttemptHidden},
		{"/home/u/.nvm/versions/node/v22/bin/node", false, ""},
		{"/home/u/.claude/.credentials.json", true, ""},
		{"/usr/lib/libc.so.6", false, ""},
		{"/usr/pwned", true, AttemptWrite},
		{"/pwned", true, AttemptWrite},
		{"/opt/tool/cache", true, AttemptWrite},
		{"/nonexistent/config", false, ""},
		{"/tmp/scratch", true, ""},
		{"/dev/null", true, ""},
		{"/sys/kernel/debug/tracing/trace_marker", true, ""},
		{"/proc/4242/environ", false, AttemptProc},
		{"/proc/4242", false, AttemptProc},
		{"/proc/7/environ", false, ""},
		{"/proc/self/oom_score_adj", true, ""},
		{"/proc/meminfo", false, ""},
		{"/proc/0042/environ", false, ""}, // not a PID's name
	} {
		got, ok := p.classify(c.path, c.write, inBox)
		if got != c.want || ok != (c.want != "") {
			t.Errorf("classify(%s, write=%v) = %q, %v; want %q", c.path, c.write, got, ok, c.want)
		}
	}
	// ace __box gets the policy as flags: the read-only paths below a hidden one only.
	want := []string{"--hide", "/r", "--hide", "/home/u", "--hide", "/etc/ace/secrets.env",
		"--rw", "/r/worktrees/o/1", "--rw", "/r/boxes/1/homes/claude", "--rw", "/tmp", "--rw", "/dev",
		"--rw", "/home/u/.claude/.credentials.json",
		"--ro", "/r/mirrors/o.git/objects", "--ro", "/home/u/.nvm/versions/node/v22",
		"--lookup", "CLAUDE.md", "--lookup", ".claude"}
	if got := p.args(); !slices.Equal(got, want) {
		t.Errorf("args = %q\nwant %q", got, want)
	}
}
