package workspace

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
)

// makeCopy makes the working copy of spec in dir from the mirror. It is built in dir+".partial" and renamed
// into place when whole, so that a working copy that exists is a finished one: a process killed half-way
// leaves only the partial directory, which the next attempt removes.
//
// The copy costs one git process, `git clone --shared` with its checkout (go-git's checkout of a large tree is
// many times slower; nothing here touches the network or a credential); the rest — the working branch, origin's
// real URL, ace's own keys, the excludes, ace's record — is written in process, as `git worktree add` is one
// process too. No agent has had the copy yet: this is the last git ace runs on it outside a box (workgit.go).
func (m *Manager) makeCopy(ctx context.Context, spec Spec, mirror, dir string) (err error) {
	tmp := dir + ".partial"
	if err := os.RemoveAll(tmp); err != nil {
		return fmt.Errorf("remove an unfinished working copy: %w", err)
	}
	defer func() {
		if err != nil {
			os.RemoveAll(tmp)
		}
	}()
	share := "--shared"
	if m.o.OwnObjects {
		share = "--no-local" // objects copied through upload-pack: what the mirror's branches reach, no alternates
	}
	args := []string{"clone", "-q", share, "--branch", spec.BaseBranch}
	for _, kv := range [][2]string{
		// The mirror stays reachable as "mirror"; origin becomes the real remote below, without credentials.
		{"remote.mirror.url", mirror},
		{"remote.mirror.fetch", "+refs/heads/*:refs/remotes/mirror/*"},
		{"ace.base", spec.BaseBranch},
		{"ace.repo", spec.Repo},
	} {
		args = append(args, "-c", kv[0]+"="+kv[1])
	}
	if _, err := m.git(ctx, filepath.Dir(dir), append(args, "--", mirror, tmp)...); err != nil {
		return fmt.Errorf("clone %s from its mirror: %w", spec.Repo, err)
	}
	r, err := openShared(tmp)
	if err != nil {
		return fmt.Errorf("open the new working copy: %w", err)
	}
	// Base and start are read from the clone's own refs, the mirror as the clone saw it.
	baseRef, err := r.Reference(plumbing.NewRemoteReferenceName("origin", spec.BaseBranch), true)
	if err != nil {
		return fmt.Errorf("base branch %s: %w", spec.BaseBranch, err)
	}
	base := baseRef.Hash()
	cfg, err := r.Config()
	if err != nil {
		return err
	}
	origin := cfg.Remotes["origin"]
	if origin == nil {
		return errors.New("the new working copy has no origin")
	}
	origin.URLs = []string{spec.RemoteURL}
	cfg.Raw.Section("ace").SetOption("basecommit", base.String())
	// ace's files are excluded by a file of its own (exclude.go), named where the copy will be.
	cfg.Raw.Section("core").SetOption("excludesFile", aceExcludeFile(dir))
	if err := m.writeExcludeFile(ctx, tmp, DefaultExcludes); err != nil {
		return fmt.Errorf("exclude ace's files from commits: %w", err)
	}
	if err := r.SetConfig(cfg); err != nil {
		return fmt.Errorf("configure working copy: %w", err)
	}
	branch := plumbing.NewBranchReferenceName(spec.Branch)
	// A branch pushed by an earlier attempt continues where it stopped; a new one starts at base, which the
	// clone has checked out already, so that only HEAD has to move.
	if prev, err := r.Reference(plumbing.NewRemoteReferenceName("origin", spec.Branch), true); err == nil && prev.Hash() != base {
		if _, err := m.git(ctx, tmp, "checkout", "-q", "-b", spec.Branch, prev.Hash().String()); err != nil {
			return fmt.Errorf("check out %s: %w", spec.Branch, err)
		}
	} else {
		if err := r.Storer.SetReference(plumbing.NewHashReference(branch, base)); err != nil {
			return fmt.Errorf("create branch %s: %w", spec.Branch, err)
		}
		if err := r.Storer.SetReference(plumbing.NewSymbolicReference(plumbing.HEAD, branch)); err != nil {
			return fmt.Errorf("switch to branch %s: %w", spec.Branch, err)
		}
	}
	// The record first: a copy in place always has one (a record without its copy is made again with it).
	rec := record{Repo: spec.Repo, Issue: spec.Issue, RemoteURL: spec.RemoteURL, BaseBranch: spec.BaseBranch,
		BaseCommit: base.String(), Branch: spec.Branch}
	if err := m.writeRecord(dir, rec); err != nil {
		return fmt.Errorf("ace's record of the working copy: %w", err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		return fmt.Errorf("move the new working copy into place: %w", err)
	}
	return nil
}

// withExcludes returns the exclude file old with the patterns it lacks appended under "# ace", and whether it
// changed.
func withExcludes(old []byte, patterns []string) ([]byte, bool) {
	have := map[string]bool{}
	for _, l := range strings.Split(string(old), "\n") {
		have[strings.TrimSpace(l)] = true
	}
	var add []string
	for _, p := range patterns {
		if !have[p] {
			add = append(add, p)
			have[p] = true
		}
	}
	if len(add) == 0 {
		return old, false
	}
	prefix := ""
	if len(old) > 0 && !strings.HasSuffix(string(old), "\n") {
		prefix = "\n"
	}
	return []byte(string(old) + prefix + "# ace\n" + strings.Join(add, "\n") + "\n"), true
}
