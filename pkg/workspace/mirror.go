package workspace

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/gofrs/flock"
)

// The mirror is cloned and fetched by the git CLI, which is as fast as a plain `git clone` (go-git took about
// twice as long on the standard benchmark repository). The credential reaches git only through its environment:
// userEnv and tokenEnv hold it, and credentialHelper, a helper given as configuration in the environment
// (GIT_CONFIG_COUNT, after an empty value that drops every helper from the user's own configuration, so that
// none of them can store it), prints it when git asks. It is never in an argument, a URL or a file.
const (
	userEnv          = "ACE_GIT_USER"
	tokenEnv         = "ACE_GIT_TOKEN"
	credentialHelper = `!f() { test "$1" = get || exit 0; echo "username=$` + userEnv + `"; echo "password=$` + tokenEnv + `"; }; f`
)

// mirrorConfig keeps git from ever deleting objects of the mirror on its own: working copies borrow them
// through alternates, and a gc after a pruned branch could take away what one of them still needs.
var mirrorConfig = []string{"-c", "gc.auto=0", "-c", "maintenance.auto=false"}

// syncMirror creates or fetches the bare mirror of spec's repository under a per-mirror lock.
func (m *Manager) syncMirror(ctx context.Context, spec Spec) (string, error) {
	mirror, err := m.mirrorPath(spec.Repo)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(mirror), 0o755); err != nil {
		return "", err
	}
	asked := time.Now()
	lock := flock.New(mirror + ".lock")
	if ok, err := lock.TryLockContext(ctx, 50*time.Millisecond); err != nil || !ok {
		return "", fmt.Errorf("lock mirror %s: %w", mirror, errors.Join(err, ctx.Err()))
	}
	defer lock.Unlock()
	if _, err := os.Stat(mirror); err == nil {
		if isBareRepo(mirror) && fetchedSince(mirror, asked) {
			// Another run fetched the mirror while this one waited for the lock: what it got is at least as new
			// as what this one asked for. Twenty runs of one repository starting at once fetch once or twice.
			return mirror, nil
		}
		if isBareRepo(mirror) {
			began := time.Now()
			args := append(slices.Clone(mirrorConfig), "fetch", "-q", "--prune", "--no-tags", "--no-write-fetch-head",
				"--", spec.RemoteURL, "+refs/heads/*:refs/heads/*")
			if _, err := m.remoteGit(ctx, mirror, spec, args...); err != nil {
				return "", fmt.Errorf("fetch %s into its mirror: %w", redactURL(spec.RemoteURL), err)
			}
			markFetched(mirror, began)
			return mirror, nil
		}
		aside := fmt.Sprintf("%s.broken-%s", mirror, time.Now().UTC().Format("20060102T150405.000"))
		m.o.Logger.WarnContext(ctx, "mirror is broken; moving it aside", "dir", mirror, "to", aside)
		if err := os.Rename(mirror, aside); err != nil {
			return "", fmt.Errorf("move broken mirror aside: %w", err)
		}
	}
	start := time.Now()
	// Cloned aside and renamed into place: a process killed mid-clone must not leave a mirror that opens but has
	// no remote or half its objects. Under the lock, a leftover from such a kill is ours to remove.
	tmp := mirror + ".partial"
	if err := os.RemoveAll(tmp); err != nil {
		return "", fmt.Errorf("remove an unfinished mirror: %w", err)
	}
	// --no-local: a remote given as a path is copied through upload-pack like any other, never hard-linked.
	args := append(slices.Clone(mirrorConfig), "clone", "-q", "--bare", "--no-local")
	args = append(args, mirrorConfig...) // written into the new mirror's config as well
	if _, err := m.remoteGit(ctx, filepath.Dir(mirror), spec, append(args, "--", spec.RemoteURL, tmp)...); err != nil {
		os.RemoveAll(tmp)
		return "", fmt.Errorf("mirror %s: %w", redactURL(spec.RemoteURL), err)
	}
	if err := os.Rename(tmp, mirror); err != nil {
		return "", fmt.Errorf("move the new mirror into place: %w", err)
	}
	markFetched(mirror, start)
	m.o.Logger.InfoContext(ctx, "created mirror", "repo", spec.Repo, "took", time.Since(start).Round(time.Millisecond))
	return mirror, nil
}

// fetchedSince reports whether the mirror's last fetch (or clone) began after t. The stamp sits beside the
// mirror, and only a fetch made under the mirror's lock writes it.
func fetchedSince(mirror string, t time.Time) bool {
	fi, err := os.Stat(mirror + ".fetched")
	return err == nil && fi.ModTime().After(t)
}

// markFetched records that a fetch begun at began has completed: runs that asked after began need another.
func markFetched(mirror string, began time.Time) {
	stamp := mirror + ".fetched"
	if err := os.WriteFile(stamp, nil, 0o644); err == nil {
		_ = os.Chtimes(stamp, began, began)
	}
}

// isBareRepo reports whether dir holds a bare repository git can open: HEAD, objects/ and refs/ present.
func isBareRepo(dir string) bool {
	for _, p := range []string{"HEAD", "objects", "refs", "config"} {
		if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
			return false
		}
	}
	return true
}

// remoteGit runs a git command that talks to spec's remote. Its credential (Auth), if any, is handed over in
// the environment for credentialHelper; errors carry git's message, never the secret.
func (m *Manager) remoteGit(ctx context.Context, dir string, spec Spec, args ...string) (string, error) {
	user, secret := m.credentialFor(spec.RemoteURL)
	env, err := credentialEnv(os.Environ(), spec.RemoteURL, user, secret)
	if err != nil {
		return "", err
	}
	cmd := exec.CommandContext(ctx, m.o.GitPath, args...)
	cmd.Dir = dir
	cmd.Env = env
	// git starts helpers (git-remote-https, index-pack); a cancelled context ends them all, not only git.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		if secret != "" {
			msg = strings.ReplaceAll(msg, secret, "[redacted]")
		}
		return "", fmt.Errorf("%w: %s", err, msg)
	}
	return strings.TrimSpace(string(out)), nil
}

// credentialEnv returns environ for a git that talks to url: prompts off, and for an http(s) url with a token,
// credentialHelper configured and the user and token in userEnv and tokenEnv. Configuration that environ already
// passes through GIT_CONFIG_COUNT is replaced, as are any userEnv and tokenEnv in it.
func credentialEnv(environ []string, url, user, token string) ([]string, error) {
	if strings.ContainsAny(token+user, "\x00\r\n") {
		return nil, errors.New("the git credential holds a control character")
	}
	env := make([]string, 0, len(environ)+8)
	for _, kv := range environ {
		k, _, _ := strings.Cut(kv, "=")
		if k == tokenEnv || k == userEnv || k == "GIT_CONFIG_COUNT" || strings.HasPrefix(k, "GIT_CONFIG_KEY_") || strings.HasPrefix(k, "GIT_CONFIG_VALUE_") ||
			k == "GIT_TERMINAL_PROMPT" || k == "GIT_ASKPASS" || k == "SSH_ASKPASS" {
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "GIT_TERMINAL_PROMPT=0")
	if token == "" || !strings.HasPrefix(url, "http") {
		return append(env, "GIT_CONFIG_COUNT=0"), nil
	}
	return append(env, "GIT_CONFIG_COUNT=2",
		"GIT_CONFIG_KEY_0=credential.helper", "GIT_CONFIG_VALUE_0=",
		"GIT_CONFIG_KEY_1=credential.helper", "GIT_CONFIG_VALUE_1="+credentialHelper,
		userEnv+"="+user, tokenEnv+"="+token), nil
}
