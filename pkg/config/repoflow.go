package config

import (
	"errors"
	"fmt"
	"path"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"text/template"
	"time"

	"github.com/aceworks/ace/pkg/secrets"
)

// WorkflowFile is where a repository keeps its workflow, on its default branch. ace reads it from its mirror,
// never from a working copy an agent can edit.
const WorkflowFile = ".ace/workflow.toml"

// RepoWorkflow is what a repository asks of ace: its file (WorkflowFile) merged under the operator's
// [repos."owner/name"] table in ace.toml, whose keys win.
type RepoWorkflow struct {
	// Agent and Model replace agent.default and the agent's model for this repository's runs (an agent chosen
	// by label or --agent still wins).
	Agent string `toml:"agent"`
	Model string `toml:"model"`
	// Setup runs in order in each new working copy, before the agent starts: argv lists, or strings split
	// without a shell.
	Setup        []Command `toml:"setup"`
	SetupTimeout Duration  `toml:"setup_timeout"`
	// Verify runs in the working copy when the agent says it is done, before the pull request opens.
	Verify        Command  `toml:"verify"`
	VerifyTimeout Duration `toml:"verify_timeout"`
	// Env holds plain variables for setup and verify.
	Env map[string]string `toml:"env"`
	// EnvFiles are written into the working copy (and git-excluded) before setup, from ace's secret sources.
	EnvFiles []EnvFile `toml:"env_files"`
	// Secrets are the names a repository's own file may put in its env files: only ace.toml grants them.
	Secrets []string `toml:"secrets"`
	// Template is Go text/template over the issue (.Title .Body .Number .Repo .URL, all sanitized); what it
	// renders goes into ACE_TASK.md as the repository's instructions.
	Template string `toml:"template"`
	// Labels are put on the pull request ace opens.
	Labels []string       `toml:"labels"`
	PR     RepoPRWorkflow `toml:"pr"`
	// Sandbox adds to [sandbox] for this repository's runs (its package registries, say), or sets its mode.
	// Only ace.toml sets it: a repository's own file must not open its agents' box.
	Sandbox SandboxConfig `toml:"sandbox"`
}

// RepoPRWorkflow overrides [pr] keys for one repository.
type RepoPRWorkflow struct {
	// MaxRounds bounds both the verify rounds before the pull request and the follow-up rounds after it; 0 keeps
	// pr.max_rounds.
	MaxRounds int `toml:"max_rounds"`
}

// EnvFile is one file of NAME=value lines, each value a secret resolved by name.
type EnvFile struct {
	Path    string   `toml:"path"`
	Secrets []string `toml:"secrets"`
}

// Command is an argv: written as a list of strings, or as one string split on spaces and quotes (no shell).
type Command []string

// UnmarshalTOML accepts ["go", "test", "./..."] and "go test ./...".
func (c *Command) UnmarshalTOML(v any) error {
	switch x := v.(type) {
	case string:
		argv, err := secrets.SplitCommand(x)
		if err != nil {
			return fmt.Errorf("command %q: %w", x, err)
		}
		*c = argv
	case []any:
		argv := make([]string, 0, len(x))
		for _, a := range x {
			s, ok := a.(string)
			if !ok {
				return fmt.Errorf("a command list holds strings only, not %T", a)
			}
			argv = append(argv, s)
		}
		*c = argv
	default:
		return fmt.Errorf("a command is a string or a list of strings, not %T", v)
	}
	return nil
}

// String is the command as a human would type it.
func (c Command) String() string {
	parts := make([]string, len(c))
	for i, a := range c {
		if a == "" || strings.ContainsAny(a, " \t\"'\\") {
			a = fmt.Sprintf("%q", a)
		}
		parts[i] = a
	}
	return strings.Join(parts, " ")
}

// Defaults of a workflow's time limits.
const (
	DefaultSetupTimeout  = 10 * time.Minute
	DefaultVerifyTimeout = 10 * time.Minute
)

// ParseWorkflow reads a repository's workflow file. name (the file, as a human should find it) heads every error,
// with the line of the key at fault.
func ParseWorkflow(name string, data []byte) (*RepoWorkflow, error) {
	w := &RepoWorkflow{}
	if err := decode(name, data, w, nil); err != nil {
		return nil, err
	}
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, &Error{File: name, Line: lineOf(data, strings.Split(key, ".")), Key: key, Msg: fmt.Sprintf(format, args...)})
	}
	w.validate("", bad)
	if !reflect.DeepEqual(w.Sandbox, SandboxConfig{}) {
		bad("sandbox", "a repository's own file cannot change its agents' sandbox: set [repos.%q.sandbox] in ace.toml", "owner/name")
	}
	return w, errors.Join(errs...)
}

// Workflow merges a repository's file (nil: none) under ace.toml's [repos."owner/name"] table and fills the
// defaults. A secret the file names must be granted by that table.
func (c *Config) Workflow(repo string, file *RepoWorkflow) (RepoWorkflow, error) {
	over := c.Repos[repo]
	var w RepoWorkflow
	if file != nil {
		w = *file
		for _, n := range w.secretNames() {
			if !slices.Contains(over.Secrets, n) {
				return RepoWorkflow{}, &Error{File: WorkflowFile, Key: "env_files", Msg: fmt.Sprintf(
					"secret %q is not granted to %s (list it in ace.toml under [repos.%q] secrets)", n, repo, repo)}
			}
		}
	}
	pick := func(dst *string, v string) {
		if v != "" {
			*dst = v
		}
	}
	pick(&w.Agent, over.Agent)
	pick(&w.Model, over.Model)
	pick(&w.Template, over.Template)
	if over.Setup != nil {
		w.Setup = over.Setup
	}
	if over.Verify != nil {
		w.Verify = over.Verify
	}
	if over.SetupTimeout.Duration > 0 {
		w.SetupTimeout = over.SetupTimeout
	}
	if over.VerifyTimeout.Duration > 0 {
		w.VerifyTimeout = over.VerifyTimeout
	}
	if over.Env != nil {
		env := map[string]string{}
		for k, v := range w.Env {
			env[k] = v
		}
		for k, v := range over.Env {
			env[k] = v
		}
		w.Env = env
	}
	if over.EnvFiles != nil {
		w.EnvFiles = over.EnvFiles
	}
	if over.Labels != nil {
		w.Labels = over.Labels
	}
	if over.PR.MaxRounds > 0 {
		w.PR.MaxRounds = over.PR.MaxRounds
	}
	w.Sandbox = over.Sandbox // never the file's (ParseWorkflow refuses it)
	if w.SetupTimeout.Duration <= 0 {
		w.SetupTimeout = D(DefaultSetupTimeout)
	}
	if w.VerifyTimeout.Duration <= 0 {
		w.VerifyTimeout = D(DefaultVerifyTimeout)
	}
	if w.PR.MaxRounds <= 0 {
		w.PR.MaxRounds = c.PR.MaxRounds
	}
	return w, nil
}

// secretNames are the secrets the workflow's env files ask for, sorted.
func (w *RepoWorkflow) secretNames() []string {
	var out []string
	for _, f := range w.EnvFiles {
		for _, n := range f.Secrets {
			if !slices.Contains(out, n) {
				out = append(out, n)
			}
		}
	}
	sort.Strings(out)
	return out
}

// SecretNames are the secrets a merged workflow needs (its env files').
func (w *RepoWorkflow) SecretNames() []string { return w.secretNames() }

var envNameRe = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// validate checks a workflow's meaning; prefix is "" for a file, `repos."owner/name".` for ace.toml.
func (w *RepoWorkflow) validate(prefix string, bad func(key, format string, args ...any)) {
	if w.Agent != "" && strings.ContainsAny(w.Agent, " /") {
		bad(prefix+"agent", "%q is not an agent name", w.Agent)
	}
	for i, c := range w.Setup {
		if len(c) == 0 || strings.TrimSpace(c[0]) == "" {
			bad(prefix+"setup", "command %d is empty", i+1)
		}
	}
	if w.Verify != nil && (len(w.Verify) == 0 || strings.TrimSpace(w.Verify[0]) == "") {
		bad(prefix+"verify", "empty command")
	}
	for k, d := range map[string]Duration{prefix + "setup_timeout": w.SetupTimeout, prefix + "verify_timeout": w.VerifyTimeout} {
		if d.Duration < 0 {
			bad(k, "must not be negative, is %s", d.Duration)
		}
	}
	for k := range w.Env {
		if !envNameRe.MatchString(k) {
			bad(prefix+"env", "%q is not a variable name", k)
		}
	}
	for i, f := range w.EnvFiles {
		p := path.Clean(f.Path)
		if f.Path == "" || path.IsAbs(f.Path) || p == "." || strings.HasPrefix(p, "../") || p == ".." ||
			p == ".git" || strings.HasPrefix(p, ".git/") || strings.HasPrefix(p, ".ace/") || strings.Contains(f.Path, "\\") {
			bad(prefix+"env_files.path", "env file %d: %q must be a relative path inside the working copy (not under .git or .ace)", i+1, f.Path)
		}
		for _, n := range f.Secrets {
			if !envNameRe.MatchString(n) {
				bad(prefix+"env_files.secrets", "%q is not a variable name", n)
			}
		}
	}
	for _, l := range w.Labels {
		if strings.TrimSpace(l) == "" {
			bad(prefix+"labels", "empty label")
		}
	}
	if w.PR.MaxRounds < 0 {
		bad(prefix+"pr.max_rounds", "must not be negative, is %d", w.PR.MaxRounds)
	}
	if w.Template != "" {
		if _, err := ParseTemplate(w.Template); err != nil {
			bad(prefix+"template", "%v", err)
		}
	}
}

// ParseTemplate parses a workflow's prompt template; a field the issue does not have is an error when it runs.
func ParseTemplate(text string) (*template.Template, error) {
	return template.New("template").Option("missingkey=error").Parse(text)
}

// validateRepos checks the [repos."owner/name"] tables.
func (c *Config) validateRepos(bad func(key, format string, args ...any)) {
	names := make([]string, 0, len(c.Repos))
	for n := range c.Repos {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		key := fmt.Sprintf("repos.%q", n)
		if !repoRe.MatchString(n) {
			bad(key, "%q is not owner/name", n)
			continue
		}
		w := c.Repos[n]
		w.validate(key+".", bad)
	}
}
