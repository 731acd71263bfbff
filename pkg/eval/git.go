package eval

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"

	"github.com/aceworks/ace/pkg/workspace"
)

// git runs git in dir (a working copy) or, with a dir ending in .git, on that bare repository (the mirror), with
// stdin when given. Pathspecs are literal: a file of the repository's may be named like a glob or a magic
// pathspec. Diffs never run the user's external diff or text conversion programs.
func git(ctx context.Context, dir string, stdin []byte, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	if strings.HasSuffix(dir, ".git") {
		cmd.Args = append([]string{"git", "--git-dir", dir}, args...)
	} else {
		cmd.Dir = dir
	}
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "GIT_LITERAL_PATHSPECS=1", "GIT_OPTIONAL_LOCKS=0")
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git %s: %w: %s", strings.Join(firstArgs(args), " "), err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// firstArgs are the arguments an error names: not a long list of files.
func firstArgs(args []string) []string {
	for i, a := range args {
		if a == "--" {
			return args[:i]
		}
	}
	return args
}

func gitText(ctx context.Context, dir string, args ...string) (string, error) {
	out, err := git(ctx, dir, nil, args...)
	return strings.TrimSpace(string(out)), err
}

// nulList splits git's -z output.
func nulList(b []byte) []string {
	var out []string
	for _, s := range bytes.Split(b, []byte{0}) {
		if len(s) > 0 {
			out = append(out, string(s))
		}
	}
	return out
}

// hasCommit reports whether the mirror holds commit.
func hasCommit(ctx context.Context, mirror, commit string) bool {
	_, err := git(ctx, mirror, nil, "cat-file", "-e", commit+"^{commit}")
	return err == nil
}

// HasCommit says whether the mirror holds commit, and if not, that it must be fetched first.
func HasCommit(ctx context.Context, mirror, commit string) error {
	if !workspace.IsCommitID(commit) || !hasCommit(ctx, mirror, commit) {
		return fmt.Errorf("commit %q is not in the mirror %s", commit, mirror)
	}
	return nil
}

// parents are a commit's parents, first parent first.
func parents(ctx context.Context, mirror, commit string) ([]string, error) {
	line, err := gitText(ctx, mirror, "rev-list", "--parents", "-n", "1", commit)
	if err != nil {
		return nil, err
	}
	f := strings.Fields(line)
	if len(f) == 0 || f[0] != commit {
		return nil, fmt.Errorf("rev-list of %s said %q", commit, line)
	}
	return f[1:], nil
}

// changedFiles are the paths that differ between base and commit, renames as a deletion and an addition.
func changedFiles(ctx context.Context, mirror, base, commit string) ([]string, error) {
	out, err := git(ctx, mirror, nil, "diff", "--name-only", "-z", "--no-renames", base, commit)
	if err != nil {
		return nil, err
	}
	return nulList(out), nil
}

// diffOf is the patch from base to commit of files, as `git apply` takes it (binary files included).
func diffOf(ctx context.Context, mirror, base, commit string, files []string) (string, error) {
	if len(files) == 0 {
		return "", nil
	}
	out, err := git(ctx, mirror, nil, append(patchArgs(base, commit), files...)...)
	return string(out), err
}

// patchArgs are git diff's arguments for the patch from base to commit as `git apply` takes it (binary files
// included, no renames), with neither the user's external diff nor text conversion; pathspecs may follow.
func patchArgs(base, commit string) []string {
	return []string{"diff", "--binary", "--full-index", "--no-renames", "--no-ext-diff", "--no-textconv", "--no-color",
		"--src-prefix=a/", "--dst-prefix=b/", base, commit, "--"}
}

// readAt reads path at commit in the mirror; found is false when the commit has no such file.
func readAt(ctx context.Context, mirror, commit, path string) (data []byte, found bool, err error) {
	ls, err := gitText(ctx, mirror, "ls-tree", commit, "--", path)
	if err != nil || ls == "" {
		return nil, false, err
	}
	data, err = git(ctx, mirror, nil, "cat-file", "blob", commit+":"+path)
	return data, err == nil, err
}

// applyPatch applies patch to the working copy dir. git apply refuses paths outside the working tree, into .git
// and through symbolic links; the error says which file did not apply.
func applyPatch(ctx context.Context, dir, patch string) error {
	if patch == "" {
		return nil
	}
	_, err := git(ctx, dir, []byte(patch), "apply", "--binary", "--whitespace=nowarn", "-")
	return err
}
