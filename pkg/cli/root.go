// Package cli is ace's command line: thin cobra commands that parse flags and call the engine. One file per
// command (newCmdX); the exit codes live in one switch (exitCode).
package cli

import (
	"context"
	"errors"
	"fmt"
	"github.com/aceworks/ace/pkg/agentcheck"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/aceworks/ace/pkg/agents"
	"github.com/aceworks/ace/pkg/config"
	"github.com/aceworks/ace/pkg/fakeagent"
	"github.com/aceworks/ace/pkg/headless"
	"github.com/aceworks/ace/pkg/livehost"
	"github.com/aceworks/ace/pkg/logging"
	"github.com/aceworks/ace/pkg/sandbox"
	"github.com/aceworks/ace/pkg/secrets"
	"github.com/aceworks/ace/pkg/tmuxops"
)

// App is what every command shares: configuration, logging, secrets and the output streams.
type App struct {
	Config     *config.Config
	ConfigPath string
	Logger     *slog.Logger
	Redactor   *secrets.Redactor
	Secrets    *secrets.Resolver
	Stdout     io.Writer
	Stderr     io.Writer
	Getenv     func(string) string

	configFlag string
	logLevel   string
	logFormat  string
}

// Child runs the program a tmux pane or the headless runner starts ace's executable as (args: os.Args[1:]): the
// secret-injecting launcher, the headless supervisor, the live host, the fake agent, the box's launcher and its
// first process inside. ok is false for any other command line.
// Dispatched before cobra so that their arguments and exit codes pass untouched; test and benchmark binaries that
// stand in for ace's executable call it first too.
func Child(args []string) (code int, ok bool) {
	if len(args) == 0 {
		return 0, false
	}
	switch args[0] {
	case "__launch":
		return tmuxops.LaunchMain(args[1:]), true
	case "__headless":
		return headless.SupervisorMain(agents.Parsers(), args[1:]), true
	case "demo-agent":
		return fakeagent.Main(args[1:]), true
	case agentcheck.ChildArg:
		return agentcheck.ChildMain(args[1:]), true
	case livehost.ChildArg:
		return livehost.Main(args[1:]), true
	case sandbox.LaunchArg:
		return sandbox.LaunchMain(args[1:]), true
	case sandbox.ChildArg:
		return sandbox.BoxMain(args[1:]), true
	}
	return 0, false
}

// Main runs ace with os.Args and returns the process exit code.
func Main() int {
	if code, ok := Child(os.Args[1:]); ok {
		return code
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	app := &App{Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv}
	return app.Run(ctx, os.Args[1:])
}

// Run executes one command line and returns its exit code.
func (a *App) Run(ctx context.Context, args []string) int {
	root := a.newRoot()
	root.SetArgs(args)
	root.SetOut(a.Stdout)
	root.SetErr(a.Stderr)
	err := root.ExecuteContext(ctx)
	code := exitCode(err, ctx)
	if err != nil && code != exitInterrupted {
		msg := err.Error()
		if a.Redactor != nil {
			msg = a.Redactor.Redact(msg)
		}
		fmt.Fprintln(a.Stderr, "ace: "+msg)
	}
	return code
}

func (a *App) newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:   "ace",
		Short: "Issue-driven coding agents in tmux: from a labelled issue to a pull request",
		Long: `ace turns GitHub issues into pull requests: for each issue it claims it, clones the repository into a
working copy of its own, writes ACE_TASK.md, starts a coding agent (Codex, Claude Code, Gemini CLI or any
command) in a tmux session, delivers the prompt, watches the agent, and pushes a branch with a pull request.

Start with: ace demo`,
		SilenceUsage:      true,
		SilenceErrors:     true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error { return a.setup(cmd) },
	}
	root.PersistentFlags().StringVar(&a.configFlag, "config", "", "config `file` (default: $ACE_CONFIG, $XDG_CONFIG_HOME/ace/ace.toml, ~/.config/ace/ace.toml, ./ace.toml)")
	root.PersistentFlags().StringVar(&a.logLevel, "log-level", "info", "log `level`: debug, info, warn, error")
	root.PersistentFlags().StringVar(&a.logFormat, "log-format", "text", "log `format`: text (for people) or json (for machines)")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &FlagError{err} })
	root.AddCommand(
		newCmdRun(a), newCmdPoll(a), newCmdLs(a), newCmdShow(a), newCmdPeek(a), newCmdLogs(a), newCmdSend(a),
		newCmdAttach(a), newCmdNudge(a), newCmdStop(a), newCmdClean(a), newCmdCron(a), newCmdDemo(a),
		newCmdDoctor(a), newCmdConfig(a), newCmdVersion(a), newCmdMemory(a), newCmdServe(a), newCmdHosts(a), newCmdUsage(a),
		newCmdAgents(a), newCmdEval(a),
	)
	root.AddCommand(exitCodesTopic())
	return root
}

// setup loads configuration and builds logging and secrets before any command runs.
func (a *App) setup(cmd *cobra.Command) error {
	var level slog.Level
	if err := level.UnmarshalText([]byte(a.logLevel)); err != nil {
		return &FlagError{fmt.Errorf("--log-level: %q is not debug, info, warn or error", a.logLevel)}
	}
	if a.logFormat != "text" && a.logFormat != "json" {
		return &FlagError{fmt.Errorf("--log-format: %q is not text or json", a.logFormat)}
	}
	a.Redactor = secrets.NewRedactor()
	a.Logger = logging.New(a.Stderr, a.logFormat, level, a.Redactor)
	if skipConfig(cmd) {
		a.Config = config.Default()
		return nil
	}
	cfg, path, err := config.Load(a.configFlag, a.Getenv)
	if err != nil {
		return err
	}
	a.Config, a.ConfigPath = cfg, path
	a.Secrets = secrets.NewResolver(secrets.Options{
		File: cfg.Secrets.File, Commands: cfg.Secrets.Commands, CommandTimeout: cfg.Secrets.CommandTimeout.Duration,
		Redactor: a.Redactor,
	})
	return nil
}

// skipConfig: commands that must work with a broken or absent configuration.
func skipConfig(cmd *cobra.Command) bool {
	for c := cmd; c != nil; c = c.Parent() {
		switch c.Name() {
		case "version", "completion", "exit-codes", "demo", "validate":
			return true
		}
	}
	return false
}

// FlagError is a usage mistake: exit code 2.
type FlagError struct{ Err error }

func (e *FlagError) Error() string { return e.Err.Error() }
func (e *FlagError) Unwrap() error { return e.Err }

func flagErrorf(format string, args ...any) error { return &FlagError{fmt.Errorf(format, args...)} }

// Exit codes, documented in `ace help exit-codes`.
const (
	exitOK          = 0
	exitError       = 1
	exitUsage       = 2
	exitConfig      = 3
	exitNotFound    = 4
	exitMissingDep  = 5
	exitInterrupted = 130
)

// ErrMissingDependency marks a missing program or credential (doctor).
var ErrMissingDependency = errors.New("a required dependency is missing")

func exitCode(err error, ctx context.Context) int {
	var fe *FlagError
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, context.Canceled) || ctx.Err() != nil:
		return exitInterrupted
	case errors.As(err, &fe) || isCobraUsage(err):
		return exitUsage
	case errors.Is(err, config.ErrInvalid):
		return exitConfig
	case isNotFound(err):
		return exitNotFound
	case errors.Is(err, ErrMissingDependency):
		return exitMissingDep
	}
	return exitError
}

// isCobraUsage recognises cobra's own argument errors, which are plain errors.
func isCobraUsage(err error) bool {
	s := err.Error()
	return strings.HasPrefix(s, "unknown command") || strings.HasPrefix(s, "accepts ") ||
		strings.HasPrefix(s, "requires ") || strings.Contains(s, "unknown flag") || strings.Contains(s, "unknown shorthand")
}

func exitCodesTopic() *cobra.Command {
	return &cobra.Command{
		Use:   "exit-codes",
		Short: "What ace's exit codes mean",
		Long: `ace exits with:
  0    success
  1    an error (the message says what went wrong)
  2    a usage mistake: unknown command or flag, missing argument
  3    the configuration is invalid (the message names file:line and the key)
  4    not found: no run for that issue, no such issue
  5    a required dependency is missing (ace doctor: tmux, git, an agent CLI, a token)
  130  interrupted (Ctrl-C); agents keep running in tmux`,
	}
}
