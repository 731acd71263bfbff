package eval

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/aceworks/ace/pkg/workspace"
)

// CutBase makes dir, which must not exist, a bare repository that holds commit's history and nothing else: the
// objects commit reaches, copied out of mirror as one pack, and one branch, branch, at commit — no other ref,
// no tag, no reflog, no alternates. An eval run's remote is such a repository: its working copy, cloned from it,
// cannot hold an object, a ref or a file from after the task's base, however the agent looks. It is built aside
// and renamed into place, so that one that exists is whole.
func CutBase(ctx context.Context, mirror, commit, branch, dir string) (err error) {
	if !workspace.IsCommitID(commit) {
		return fmt.Errorf("cut the base: %q is not a commit id", commit)
	}
	if branch == "" || strings.HasPrefix(branch, "-") {
		return fmt.Errorf("cut the base: branch %q", branch)
	}
	tmp := dir + ".partial"
	if err := os.RemoveAll(tmp); err != nil {
		return err
	}
	defer func() {
		if err != nil {
			os.RemoveAll(tmp)
		}
	}()
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return err
	}
	if _, err := git(ctx, filepath.Dir(dir), nil, "init", "-q", "--bare", "--initial-branch="+branch, tmp); err != nil {
		return err
	}
	if err := copyHistory(ctx, mirror, commit, tmp); err != nil {
		return fmt.Errorf("copy the history of %s: %w", commit, err)
	}
	if _, err := git(ctx, tmp, nil, "update-ref", "--no-deref", "refs/heads/"+branch, commit); err != nil {
		return err
	}
	if err := os.RemoveAll(filepath.Join(tmp, "logs")); err != nil { // update-ref may have begun a reflog
		return err
	}
	return os.Rename(tmp, dir)
}

// copyHistory streams the objects commit reaches in mirror (git pack-objects --revs) into the bare repository
// to (git index-pack): only those objects cross, whatever else the mirror holds.
func copyHistory(ctx context.Context, mirror, commit, to string) error {
	pack := exec.CommandContext(ctx, "git", "--git-dir", mirror, "pack-objects", "--revs", "--stdout", "-q")
	pack.Stdin = strings.NewReader(commit + "\n")
	index := exec.CommandContext(ctx, "git", "--git-dir", to, "index-pack", "--stdin")
	out, err := pack.StdoutPipe()
	if err != nil {
		return err
	}
	index.Stdin = out
	var packErr, indexErr strings.Builder
	pack.Stderr, index.Stderr = &packErr, &indexErr
	env := append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "GIT_OPTIONAL_LOCKS=0")
	pack.Env, index.Env = env, env
	if err := pack.Start(); err != nil {
		return err
	}
	if err := index.Run(); err != nil {
		_ = pack.Process.Kill()
		_ = pack.Wait()
		return fmt.Errorf("git index-pack: %w: %s", err, strings.TrimSpace(indexErr.String()))
	}
	if err := pack.Wait(); err != nil {
		return fmt.Errorf("git pack-objects: %w: %s", err, strings.TrimSpace(packErr.String()))
	}
	if _, err := git(ctx, to, nil, "cat-file", "-e", commit+"^{commit}"); err != nil {
		return errors.New("the copied history lacks the commit itself")
	}
	return nil
}
