package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/aceworks/ace/pkg/agentcheck"

	"github.com/spf13/cobra"

	"github.com/aceworks/ace/pkg/agents"
	"github.com/aceworks/ace/pkg/sandbox"
	"github.com/aceworks/ace/pkg/service"
	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/tmuxops"
	"github.com/aceworks/ace/pkg/tracker"
	"github.com/aceworks/ace/pkg/workflow"
)

func newCmdDoctor(app *App) *cobra.Command {
	return &cobra.Command{
		Use:   "doctor",
		Short: "Check that ace can work here: tmux, git, agent CLIs, token, workspace, store",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runDoctor(cmd.Context(), app)
		},
	}
}

type check struct {
	app    *App
	failed bool
}

func (c *check) ok(what, detail string) { fmt.Fprintf(c.app.Stdout, "ok    %-22s %s\n", what, detail) }
func (c *check) warn(what, detail string) {
	fmt.Fprintf(c.app.Stdout, "warn  %-22s %s\n", what, detail)
}
func (c *check) fail(what, detail string) {
	c.failed = true
	fmt.Fprintf(c.app.Stdout, "FAIL  %-22s %s\n", what, detail)
}

// headlessOnly reports whether every agent the configuration uses runs with the headless runner.
func headlessOnly(app *App) bool {
	for _, name := range app.Config.AgentNames() {
		if p, err := service.Profile(app.Config, name); err != nil || p.Runner != store.RunnerExec {
			return false
		}
	}
	return true
}

var tmuxVersion = regexp.MustCompile(`tmux (\d+)\.(\d+)`)

func runDoctor(ctx context.Context, app *App) error {
	c := &check{app: app}
	if out, err := exec.CommandContext(ctx, "tmux", "-V").Output(); err != nil && headlessOnly(app) {
		c.warn("tmux", "not found; every configured agent runs headless (runner exec), so none needs it")
	} else if err != nil {
		c.fail("tmux", "not found; install: "+agents.InstallHint("tmux"))
	} else if m := tmuxVersion.FindStringSubmatch(string(out)); m == nil {
		c.warn("tmux", "unrecognised version "+string(out))
	} else if maj, _ := strconv.Atoi(m[1]); maj < 3 || (maj == 3 && atoi(m[2]) < 2) {
		c.fail("tmux", fmt.Sprintf("version %s.%s is too old: ace needs 3.2 or newer", m[1], m[2]))
	} else {
		c.ok("tmux", m[0])
	}
	if out, err := exec.CommandContext(ctx, "git", "--version").Output(); err != nil {
		c.fail("git", "not found; install: "+agents.InstallHint("git"))
	} else {
		c.ok("git", string(trimNL(out)))
	}
	// A warning, not a failure, until runs are boxed: nothing needs bwrap yet.
	if h, err := sandbox.Detect(ctx); err != nil {
		c.warn("sandbox", err.Error())
	} else {
		c.ok("sandbox", h.String()+": per-run boxes work")
		checkRecorder(ctx, c, h)
	}
	for _, name := range app.Config.AgentNames() {
		checkAgent(ctx, c, app, name)
	}
	switch got, err := service.CheckTracker(ctx, app.Config, app.Secrets, app.Logger); {
	case errors.Is(err, tracker.ErrUnreachable):
		c.warn("tracker", c.app.Redactor.Redact(err.Error()))
	case err != nil:
		c.fail("tracker", c.app.Redactor.Redact(err.Error()))
	default:
		c.ok("tracker", got)
	}
	root := app.Config.Workspace.Root
	if err := os.MkdirAll(root, 0o700); err != nil {
		c.fail("workspace root", err.Error())
	} else if f, err := os.CreateTemp(root, ".doctor-*"); err != nil {
		c.fail("workspace root", root+" is not writable: "+err.Error())
	} else {
		f.Close()
		os.Remove(f.Name())
		c.ok("workspace root", root)
		if st, err := app.openStore(ctx); err != nil {
			c.fail("store", err.Error())
		} else {
			c.ok("store", st.Where())
			checkLeftovers(ctx, c, app, st)
			st.Close()
		}
	}
	if c.failed {
		return fmt.Errorf("doctor found problems: %w", ErrMissingDependency)
	}
	return nil
}

// checkAgent reports an agent's CLI (where it is, its version against the one its adapter was tested with),
// the sign-in it will use and whether it reaches what its configuration names.
func checkAgent(ctx context.Context, c *check, app *App, name string) {
	p, err := service.Profile(app.Config, name)
	if err != nil {
		c.fail("agent "+name, err.Error())
		return
	}
	if a := p.Adapter(); a != nil && a.Internal {
		c.ok("agent "+name, "built into ace")
		return
	}
	in, err := p.CheckInstalled(ctx)
	switch {
	case in.Path == "":
		exe := p.Program()
		if hint := installHint(exe, p.InstallHint); hint != "" {
			c.fail("agent "+name, exe+" not found; install: "+hint)
		} else {
			c.fail("agent "+name, exe+" not found (agents."+name+".command)")
		}
	case err != nil:
		c.warn("agent "+name, in.Path+": "+err.Error())
	case in.Drift() && in.Tested.Place(in.Version) < 0:
		c.warn("agent "+name, fmt.Sprintf("%s %s is older than the oldest release ace supports (%s): upgrade (%s)",
			in.Path, in.Version, in.Tested.Oldest, installHint(p.Program(), p.InstallHint)+"@"+in.Tested.Newest))
	case in.Drift():
		c.warn("agent "+name, fmt.Sprintf("%s %s is newer than the newest release ace was tested with (%s): its "+
			"screens may have changed (a screen ace cannot place goes to a human on the issue); or install %s",
			in.Path, in.Version, in.Tested.Newest, installHint(p.Program(), p.InstallHint)+"@"+in.Tested.Newest))
	case in.Tested.Oldest != "" && in.Version != "":
		c.ok("agent "+name, fmt.Sprintf("%s %s (inside the tested range %s)", in.Path, in.Version, in.Tested))
	case in.Version != "":
		c.ok("agent "+name, in.Path+" "+in.Version)
	default:
		c.ok("agent "+name, in.Path)
	}
	if agentcheck.Checkable(p) == nil && in.Version != "" {
		lastCheck(c, app, name, in.Version)
		newestRelease(ctx, c, app, p, in.Version)
	}
	auth, err := p.SignIn(ctx, app.Secrets, agents.CurrentUser())
	switch {
	case err != nil:
		c.fail("sign-in "+name, err.Error())
	case auth.Method != "":
		c.ok("sign-in "+name, auth.Method+" ("+auth.Detail+")")
	}
	checkReach(ctx, c, app, p) // doctor_reach.go
}

func atoi(s string) int { n, _ := strconv.Atoi(s); return n }

func trimNL(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}

func installHint(exe, profileHint string) string {
	if h := agents.InstallHint(filepath.Base(exe)); h != "" {
		return h
	}
	return profileHint
}

// lastCheck says what the last `ace agents check` of this version found, or that none ran: a version ace has
// not checked here may have moved its screens.
func lastCheck(c *check, app *App, name, version string) {
	results, err := agentcheck.Last(app.Config.Workspace.Root)
	if err != nil {
		c.warn("check "+name, err.Error())
		return
	}
	for _, r := range results {
		if r.Agent != name || r.Version != version {
			continue
		}
		when := r.CheckedAt.Local().Format(time.DateTime)
		if r.OK() {
			c.ok("check "+name, fmt.Sprintf("ace agents check held for %s on %s", version, when))
			return
		}
		var failed []string
		for _, s := range r.Steps() {
			if !s.OK {
				failed = append(failed, s.Name)
			}
		}
		c.warn("check "+name, fmt.Sprintf("ace agents check failed for %s on %s (%s): run it again to see the screens",
			version, when, strings.Join(failed, ", ")))
		return
	}
	c.warn("check "+name, fmt.Sprintf("%s %s not checked here yet: run `ace agents check %s` (offline, about a minute)", name, version, name))
}

// newestRelease says whether the npm registry has a newer release of the agent's CLI than the installed one,
// and whether `ace agents check --newest` checked it here. A registry that does not answer (offline) leaves it
// unknown, which is no problem.
func newestRelease(ctx context.Context, c *check, app *App, p agents.Profile, installed string) {
	a := p.Adapter()
	if a == nil || a.Package == "" {
		return
	}
	reg := agentcheck.Registry{Timeout: 5 * time.Second}
	newest, err := reg.Latest(ctx, a.Package)
	switch {
	case err != nil:
		c.ok("release "+p.Name, "newer releases unknown (the npm registry did not answer)")
		return
	case agents.CompareVersions(newest, installed) <= 0:
		c.ok("release "+p.Name, installed+" is the newest on the npm registry")
		return
	}
	results, _ := agentcheck.Last(app.Config.Workspace.Root)
	for _, r := range results {
		if r.Agent != p.Name || r.Version != newest {
			continue
		}
		when := r.CheckedAt.Local().Format(time.DateTime)
		if r.OK() {
			c.ok("release "+p.Name, fmt.Sprintf("%s %s is out (you have %s); checked here on %s, every check held: safe to "+
				"upgrade (npm install -g %s@%s)", p.Name, newest, installed, when, a.Package, newest))
		} else {
			c.warn("release "+p.Name, fmt.Sprintf("%s %s is out (you have %s); checked here on %s and it did not hold: stay on "+
				"%s (`ace agents check --newest %s` shows the screens)", p.Name, newest, installed, when, installed, p.Name))
		}
		return
	}
	c.warn("release "+p.Name, fmt.Sprintf("%s %s is out (you have %s), not checked here: `ace agents check --newest %s` "+
		"before you upgrade", p.Name, newest, installed, p.Name))
}

// checkRecorder says whether boxes record the file-system attempts they keep agents from (sandbox.Host.CheckRecorder).
func checkRecorder(ctx context.Context, c *check, h *sandbox.Host) {
	exe, err := os.Executable()
	if err == nil {
		err = h.CheckRecorder(ctx, exe)
	}
	if err != nil {
		c.warn("sandbox recorder", err.Error()+"; boxes still keep agents from those paths")
		return
	}
	c.ok("sandbox recorder", "file attempts the boxes keep agents from are recorded (seccomp user notification)")
}

// checkLeftovers names what crashed ace processes left on this host (ace clean removes it): a warning each.
func checkLeftovers(ctx context.Context, c *check, app *App, st *store.Store) {
	runs, err := st.ListRuns(ctx, store.Filter{})
	if err != nil {
		c.warn("crash leftovers", "cannot list the runs: "+err.Error())
		return
	}
	left, err := workflow.CrashLeftovers(ctx, app.Config.Workspace.Root, tmuxops.New(app.Config.Tmux.Socket), runs, false)
	if err != nil {
		c.warn("crash leftovers", err.Error())
	}
	for _, l := range left {
		c.warn("crash leftover", l.String()+"; ace clean removes it")
	}
	evalLeft, evalErr := evalLeftovers(ctx, app, false)
	if evalErr != nil {
		c.warn("crash leftovers", evalErr.Error())
	}
	for _, l := range evalLeft {
		c.warn("crash leftover", l+"; ace clean removes it")
	}
	if len(left)+len(evalLeft) == 0 && err == nil && evalErr == nil {
		c.ok("crash leftovers", "none")
	}
}
