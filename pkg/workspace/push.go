package workspace

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/capability"
)

// A push sends the run's branch, as the working copy has it, to the remote of ace's record — never to the copy's
// origin, pushurl, url rewrites or proxies, which are the agent's — with the credential the tracker gives that
// remote (Auth: its token to its own host only). The copy's objects are read by git in a box (workgit.go): it resolves the branch,
// says which of the remote's commits the copy has, and writes the pack to its stdout; ace on the host only
// streams those bytes to the remote (remote.go). It never forces: a branch that moved on the remote is an error.

// packMax bounds a pack ace streams (GitHub refuses a push over 2 GiB).
const packMax = 2 << 30

// Push sends the run's branch to the remote of ace's record, authenticating in memory as the tracker says that
// remote is to be (Auth).
func (w *Workspace) Push(ctx context.Context) error {
	if err := w.push(ctx); err != nil {
		return fmt.Errorf("push %s to %s: %w", w.Branch, redactURL(w.RemoteURL), err)
	}
	return nil
}

func (w *Workspace) push(ctx context.Context) error {
	head, err := w.Head(ctx)
	if err != nil {
		return err
	}
	user, secret := w.m.credentialFor(w.RemoteURL)
	rem, err := dialRemote(ctx, w.RemoteURL, user, secret)
	if err != nil {
		return err
	}
	defer rem.Close()
	adv, err := rem.advertised(ctx)
	if err != nil {
		return err
	}
	ref := plumbing.NewBranchReferenceName(w.Branch)
	old, onRemote := adv.References[ref.String()]
	if onRemote && old.String() == head {
		return nil // up to date
	}
	haves, err := w.present(ctx, advertisedHashes(adv))
	if err != nil {
		return err
	}
	if onRemote {
		contains := haves[old.String()]
		if contains {
			if contains, err = w.isAncestor(ctx, old.String(), head); err != nil {
				return err
			}
		}
		if !contains {
			return fmt.Errorf("the branch moved on the remote (it is at %s, which %s in the working copy does not "+
				"contain): ace never forces a push", old, w.Branch)
		}
	}
	req := packp.NewReferenceUpdateRequestFromCapabilities(adv.Capabilities)
	req.Commands = []*packp.Command{{Name: ref, Old: old, New: plumbing.NewHash(head)}}
	req.Packfile, err = w.pack(ctx, head, haves, adv.Capabilities.Supports(capability.OFSDelta))
	if err != nil {
		return err
	}
	return rem.send(ctx, req)
}

// advertisedHashes are the commits (and peeled tags) the remote has.
func advertisedHashes(adv *packp.AdvRefs) []string {
	seen := map[string]bool{}
	for _, m := range []map[string]plumbing.Hash{adv.References, adv.Peeled} {
		for _, h := range m {
			if !h.IsZero() {
				seen[h.String()] = true
			}
		}
	}
	out := make([]string, 0, len(seen))
	for h := range seen {
		out = append(out, h)
	}
	sort.Strings(out)
	return out
}

// present is the subset of hashes the working copy has.
func (w *Workspace) present(ctx context.Context, hashes []string) (map[string]bool, error) {
	have := map[string]bool{}
	if len(hashes) == 0 {
		return have, nil
	}
	out, err := w.git(ctx, strings.NewReader(strings.Join(hashes, "\n")+"\n"), "cat-file", "--batch-check=%(objectname)")
	if err != nil {
		return nil, err
	}
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) == 1 && isHash(f[0]) {
			have[f[0]] = true // a missing one reads "<hash> missing"
		}
	}
	return have, nil
}

// isAncestor reports whether commit a is an ancestor of commit b in the working copy.
func (w *Workspace) isAncestor(ctx context.Context, a, b string) (bool, error) {
	_, err := w.git(ctx, nil, "merge-base", "--is-ancestor", a, b)
	if exitCode(err) == 1 {
		return false, nil
	}
	return err == nil, err
}

// pack is the pack of what head has that haves do not, as git writes it in its box: a stream that ends with an
// error when git failed or the pack grew past packMax.
func (w *Workspace) pack(ctx context.Context, head string, haves map[string]bool, ofsDelta bool) (io.ReadCloser, error) {
	var in strings.Builder
	in.WriteString(head + "\n")
	for h := range haves {
		in.WriteString("^" + h + "\n")
	}
	args := []string{"pack-objects", "--revs", "--stdout", "-q"}
	if ofsDelta {
		args = append(args, "--delta-base-offset")
	}
	c, err := w.command(ctx, strings.NewReader(in.String()), args...)
	if err != nil {
		return nil, err
	}
	out, err := c.cmd.StdoutPipe()
	if err != nil {
		c.cancel()
		return nil, err
	}
	if err := c.cmd.Start(); err != nil {
		c.cancel()
		return nil, fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
	}
	return &packStream{c: c, r: out}, nil
}

// packStream is git pack-objects' output, read to its end once.
type packStream struct {
	c    *workCmd
	r    io.Reader
	n    int64
	done bool
	err  error
}

func (s *packStream) Read(p []byte) (int, error) {
	if s.done {
		return 0, s.endErr()
	}
	n, err := s.r.Read(p)
	s.n += int64(n)
	switch {
	case s.n > packMax:
		s.stop(fmt.Errorf("the pack is over %d GiB: ace does not push it", packMax>>30))
		return 0, s.err
	case errors.Is(err, io.EOF):
		s.done, s.err = true, s.c.wait()
		if s.err != nil && !errors.Is(s.err, ErrRefused) && s.c.ctx.Err() == nil {
			// Objects the branch needs are not there (or not readable): no retry brings them.
			s.err = refusedf("the run's branch cannot be packed for the push: %v", s.err)
		}
		return n, s.endErr()
	}
	return n, err
}

func (s *packStream) endErr() error {
	if s.err != nil {
		return s.err
	}
	return io.EOF
}

// stop ends git before its end: its box killed, the reason kept.
func (s *packStream) stop(why error) {
	if s.done {
		return
	}
	s.done = true
	s.c.cancel()
	_ = s.c.cmd.Wait()
	s.err = why
}

// Close ends git when the pack was not read to its end (a push that failed half-way).
func (s *packStream) Close() error {
	s.stop(errors.New("the push ended before the pack"))
	return nil
}

// exitCode is the exit status of a command err came from, or -1.
func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	return -1
}
