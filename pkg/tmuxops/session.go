package tmuxops

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// ErrSessionExists is returned by NewSession when the session is already there.
var ErrSessionExists = errors.New("tmux session already exists")

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9_-]+`)

// maxNameLen keeps session names readable in `tmux ls` and status lines.
const maxNameLen = 48

// SessionName is the session of repo's issue: "ace-<name>-<issue>" where name is the repository name. Characters
// tmux does not accept in names ('.', ':') and anything else unusual are replaced; when that (or the length bound)
// changed the name, a short hash of the full repository is appended so that two repositories never share one.
func SessionName(repo string, issue int) string { return sessionName(repo, issue, false) }

// QualifiedSessionName is SessionName with a hash of owner/repo always in it: for a repository whose plain name
// another repository (a fork, another owner's namesake) already uses for the same issue number.
func QualifiedSessionName(repo string, issue int) string { return sessionName(repo, issue, true) }

func sessionName(repo string, issue int, qualify bool) string {
	_, name, ok := strings.Cut(repo, "/")
	if !ok {
		name = repo
	}
	clean := strings.Trim(unsafeName.ReplaceAllString(name, "_"), "_")
	changed := clean != name
	if len(clean) > maxNameLen {
		clean, changed = clean[:maxNameLen], true
	}
	if changed || clean == "" || qualify {
		sum := sha256.Sum256([]byte(repo))
		clean += "_" + hex.EncodeToString(sum[:3])
	}
	return "ace-" + clean + "-" + strconv.Itoa(issue)
}

// SessionSpec describes an agent session.
type SessionSpec struct {
	Name string
	Dir  string
	// Argv is the agent's command, run without a shell.
	Argv []string
	// Env holds plain variables; Secrets holds secret ones. Both reach the agent only through the env file.
	Env     map[string]string
	Secrets map[string]string
	Width   int
	Height  int
	// HistoryLimit is the scrollback kept by the pane.
	HistoryLimit int
	// LogPath, when set, receives the pane's output (capped at TranscriptCap bytes).
	LogPath string
	// Launcher is the argv prefix of the program that reads the env file and execs Argv (`ace __launch`).
	Launcher []string
	// RuntimeDir holds env files (created 0700); they live only until the launcher reads them.
	RuntimeDir string
}

// TranscriptCap bounds a session transcript: an agent that prints forever must not fill the disk.
const TranscriptCap = 64 << 20

// NewSession starts spec's agent in a new detached session with remain-on-exit on, so that a crash's last
// screen and exit status stay readable. A session that did not start leaves no env file.
func (c *Client) NewSession(ctx context.Context, spec SessionSpec) error {
	if ok, err := c.HasSession(ctx, spec.Name); err != nil {
		return err
	} else if ok {
		return fmt.Errorf("%s: %w", spec.Name, ErrSessionExists)
	}
	w, h := spec.Width, spec.Height
	if w <= 0 {
		w = 220
	}
	if h <= 0 {
		h = 50
	}
	hist := spec.HistoryLimit
	if hist <= 0 {
		hist = 50000
	}
	// Options the pane needs from birth are set globally first (the socket is ace's own), in the same invocation.
	args := []string{"start-server", ";",
		"set-option", "-g", "history-limit", strconv.Itoa(hist), ";",
		"set-option", "-g", "remain-on-exit", "on", ";",
		"new-session", "-d", "-s", spec.Name, "-c", spec.Dir, "-x", strconv.Itoa(w), "-y", strconv.Itoa(h), "--"}
	if err := c.launch(ctx, spec, args); err != nil {
		return fmt.Errorf("start session %s: %w", spec.Name, err)
	}
	return nil
}

// Respawn restarts the agent in spec's existing session (after a crash), with a fresh env file.
func (c *Client) Respawn(ctx context.Context, spec SessionSpec) error {
	args := []string{"respawn-pane", "-k", "-t", paneTarget(spec.Name), "-c", spec.Dir, "--"}
	if err := c.launch(ctx, spec, args); err != nil {
		return fmt.Errorf("restart the agent in %s: %w", spec.Name, err)
	}
	return nil
}

// launch runs the tmux command (ending in "--") that starts spec's pane with the launcher's command line and
// the transcript's pipe. The env file is removed when tmux fails: no launcher will ever read it.
func (c *Client) launch(ctx context.Context, spec SessionSpec, args []string) error {
	cmd, envFile, err := launchArgv(spec)
	if err != nil {
		return err
	}
	args = append(args, cmd...)
	if spec.LogPath != "" {
		pipe, err := pipeArgs(spec.Name, spec.LogPath)
		if err != nil {
			removeEnvFile(envFile)
			return fmt.Errorf("transcript: %w", err)
		}
		args = append(append(args, ";"), pipe...)
	}
	if _, err := c.run(ctx, nil, args...); err != nil {
		removeEnvFile(envFile)
		return err
	}
	return nil
}

func removeEnvFile(path string) {
	if path != "" {
		_ = os.Remove(path)
	}
}

// launchArgv writes the env file and returns the pane command, Launcher ENVFILE -- ARGV…, and the file ("" when
// there are no variables to inject).
func launchArgv(spec SessionSpec) ([]string, string, error) {
	if len(spec.Argv) == 0 {
		return nil, "", errors.New("empty agent command")
	}
	if len(spec.Env)+len(spec.Secrets) == 0 {
		return spec.Argv, "", nil
	}
	if len(spec.Launcher) == 0 || spec.RuntimeDir == "" {
		return nil, "", errors.New("variables to inject but no launcher or runtime dir")
	}
	vars := map[string]string{}
	for k, v := range spec.Env {
		vars[k] = v
	}
	for k, v := range spec.Secrets {
		vars[k] = v
	}
	path, err := WriteEnvFile(spec.RuntimeDir, vars)
	if err != nil {
		return nil, "", err
	}
	out := append([]string{}, spec.Launcher...)
	out = append(out, path, "--")
	return append(out, spec.Argv...), path, nil
}

// TakeEnvFile reads and deletes an env file WriteEnvFile wrote: its variables are read once, by the program they
// are for (the launchers).
func TakeEnvFile(path string) (map[string]string, error) {
	data, err := os.ReadFile(path)
	os.Remove(path)
	if err != nil {
		return nil, fmt.Errorf("read env file: %w", err)
	}
	var vars map[string]string
	if err := json.Unmarshal(data, &vars); err != nil {
		return nil, fmt.Errorf("env file: %w", err)
	}
	return vars, nil
}

// WriteEnvFile writes vars as a 0600 file in dir (made 0700) for LaunchMain to read and delete, and returns its
// path. The headless runner uses it too, so that secrets reach agents the same way whichever runner starts them.
// Its name carries this process's Tag: a file whose writer is gone and that no launcher has read is a start
// that did not happen (SweepRuntime).
func WriteEnvFile(dir string, vars map[string]string) (string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return "", err
	}
	data, err := json.Marshal(vars)
	if err != nil {
		return "", err
	}
	f, err := os.CreateTemp(dir, RuntimeName("env", ""))
	if err != nil {
		return "", fmt.Errorf("write env file: %w", err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(f.Name())
		return "", fmt.Errorf("write env file: %w", err)
	}
	if err := f.Close(); err != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("write env file: %w", err)
	}
	return f.Name(), nil
}

// LaunchMain is the body of `ace __launch ENVFILE -- ARGV…`: it reads and deletes the env file, then replaces
// itself with ARGV with those variables added to its environment. Secrets thus reach the agent's environment
// without ever appearing in a command line.
func LaunchMain(args []string) int {
	if len(args) < 3 || args[1] != "--" {
		fmt.Fprintln(os.Stderr, "usage: ace __launch ENVFILE -- COMMAND [ARGS…]")
		return 2
	}
	vars, err := TakeEnvFile(args[0])
	if err != nil {
		fmt.Fprintf(os.Stderr, "ace: %v\n", err)
		return 127
	}
	env := os.Environ()
	for k, v := range vars {
		env = append(env, k+"="+v)
	}
	return execve(args[2:], env)
}

// HasSession reports whether a session named exactly name exists (over the control connection when there is
// one: a monitor asks before each look at a screen).
func (c *Client) HasSession(ctx context.Context, name string) (bool, error) {
	_, err := c.query(ctx, "has-session", "-t", target(name))
	if err == nil {
		return true, nil
	}
	var te *Error
	if noServer(err) || (errors.As(err, &te) && strings.Contains(te.Stderr, "can't find session")) {
		return false, nil
	}
	return false, err
}

// Sessions lists session names starting with prefix (over the control connection when there is one).
func (c *Client) Sessions(ctx context.Context, prefix string) ([]string, error) {
	out, err := c.query(ctx, "list-sessions", "-F", "#{session_name}")
	if err != nil {
		if noServer(err) {
			return nil, nil
		}
		return nil, err
	}
	var names []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if l != "" && strings.HasPrefix(l, prefix) {
			names = append(names, l)
		}
	}
	return names, nil
}

// SessionDirs are the sessions starting with prefix, each with the directory it was started in (new-session -c).
func (c *Client) SessionDirs(ctx context.Context, prefix string) (map[string]string, error) {
	out, err := c.run(ctx, nil, "list-sessions", "-F", "#{session_name}"+fieldSep+"#{session_path}")
	if err != nil {
		if noServer(err) {
			return nil, nil
		}
		return nil, err
	}
	dirs := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if name, dir, ok := strings.Cut(l, fieldSep); ok && strings.HasPrefix(name, prefix) {
			dirs[name] = dir
		}
	}
	return dirs, nil
}

// PipeToFile appends the session's output to path, capped at TranscriptCap bytes.
func (c *Client) PipeToFile(ctx context.Context, name, path string) error {
	args, err := pipeArgs(name, path)
	if err != nil {
		return err
	}
	if _, err := c.run(ctx, nil, args...); err != nil {
		return fmt.Errorf("transcript of %s: %w", name, err)
	}
	return nil
}

// pipeArgs is the pipe-pane command that appends the pane's output to path. Chained after new-session or
// respawn-pane in the same tmux invocation, it is in place before the server reads the agent's first bytes.
func pipeArgs(name, path string) ([]string, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	// head buffers its output when it writes to a file, which would hold back the last few KiB of a quiet
	// agent (ace logs -f, the compaction threshold); stdbuf -o0 makes it write each read at once.
	unbuffered := ""
	if _, err := exec.LookPath("stdbuf"); err == nil {
		unbuffered = "stdbuf -o0 "
	}
	cmd := fmt.Sprintf("exec %shead -c %d >> %s", unbuffered, TranscriptCap, shellQuote(path))
	return []string{"pipe-pane", "-t", paneTarget(name), cmd}, nil
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// AttachArgv is the command that attaches a terminal to the session.
func (c *Client) AttachArgv(name string) []string {
	return []string{c.tmux, "-L", c.socket, "attach-session", "-t", target(name)}
}
