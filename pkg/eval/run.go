package eval

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/aceworks/ace/pkg/usage"
)

// This part runs the task set (ace eval run): each task × agent × run is an item, run through ace's own graph by a
// Driver (the engine, which this package does not import) with a Recorder for its tracker and RunWorkspaces for
// its working copies; once the run has ended, what it pushed to its cut base is its work, scored by the task's
// hidden check in a box. Each item's result is written as soon as it is scored, so that a rerun after ace was
// killed does only what is left.

// Driver runs item n's issue of repo through ace's graph with agent until it ends: a new run, or the item's run
// that a killed ace left unfinished (resumed where it stopped), or the one that ended before its result was
// written. agent is as --agents names it: NAME, or NAME@VERSION, the agent ace eval run makes to run that release
// of NAME's CLI.
type Driver interface {
	Drive(ctx context.Context, repo string, n int, agent string) (RunEnd, error)
}

// RunEnd is what the driver says of a run that ended.
type RunEnd struct {
	RunID  int64
	Status string // done, failed, cancelled
	Error  string
	Branch string // the run's branch, pushed to the item's cut base when the run got that far
	// Started and Ended bound the run's wall time.
	Started, Ended time.Time
	Usage          usage.Usage
	// Turns counts the agent's turns (a headless or live turn ended; in tmux: the prompt, nudges and answers typed).
	Turns, Nudges, Questions int
	CLIVersion, Model        string
}

// Check results of RunResult.Check besides "pass", "fail" and "timeout".
const (
	CheckNoChange  = "no change"      // the run pushed nothing: there was nothing to check
	CheckNoApply   = "does not apply" // the work or the test patch did not apply to a fresh copy of the base
	CheckNotScored = "not scored"     // the run does not count (Invalid says why)
	checkPass      = "pass"
	checkFail      = "fail"
	checkTimeout   = "timeout"
)

// RunResult is one item's: how its run ended, its work, what the hidden check said of it, what it cost.
type RunResult struct {
	Item
	Repo   string `json:"repo"`
	RunID  int64  `json:"run_id"`
	Status string `json:"status"`
	Error  string `json:"error,omitempty"`
	// Solved: the hidden check passed on the run's work.
	Solved      bool   `json:"solved"`
	Check       string `json:"check"`
	CheckDetail string `json:"check_detail,omitempty"`
	// Invalid says why the result does not count: the agent's CLI was not the release asked for, or the run ended
	// before its agent had a turn.
	Invalid     string      `json:"invalid,omitempty"`
	Host        string      `json:"host,omitempty"` // the ace host that ran it (a fleet's hosts share an eval)
	Patch       string      `json:"patch"`          // the run's work: its branch against the base
	Usage       usage.Usage `json:"usage"`
	WallSeconds float64     `json:"wall_seconds"`
	Turns       int         `json:"turns"`
	Nudges      int         `json:"nudges"`
	Questions   int         `json:"questions"`
	CLIVersion  string      `json:"cli_version,omitempty"`
	Model       string      `json:"model,omitempty"`
	ScoredAt    time.Time   `json:"scored_at"`
}

// RunSet is the items of an eval directory and the tasks they run: what the recorder and the working copies
// look items up in.
type RunSet struct {
	Plan  *Plan
	Tasks map[string]*Task // by instance id
}

// Task is item n and its task.
func (s *RunSet) Task(n int) (Item, *Task, error) {
	it, ok := s.Plan.Item(n)
	if !ok {
		return Item{}, nil, fmt.Errorf("no eval item %d", n)
	}
	t := s.Tasks[it.InstanceID]
	if t == nil {
		return Item{}, nil, fmt.Errorf("eval item %d: task %s is not in the task set", n, it.InstanceID)
	}
	return it, t, nil
}

// RunOptions configure Run.
type RunOptions struct {
	Repo string
	Dir  string // the eval directory: plan.json, results/, items/
	// Book keeps the items and results: nil for the eval directory's own (Set.Plan and results/); a SharedBook
	// shares them with the other hosts of a fleet.
	Book Book
	// Host names this host in a result.
	Host   string
	Set    *RunSet
	Agents []AgentSpec
	Runs   int
	// Jobs is how many items run at once.
	Jobs       int
	Driver     Driver
	Workspaces *RunWorkspaces
	// Checker scores the work (each job's copy gets a home of its own).
	Checker Checker
	// Keep keeps each item's working copy and cut base once scored (by default they are removed: the result
	// holds the work).
	Keep bool
	// OnResult hears each item's result as it is written, one call at a time; done results found are not told.
	OnResult func(RunResult)
	// Poll is how often a host whose items are all held by other hosts looks for their results (a shared book;
	// default 1s): it takes over an item whose host's lease ran out.
	Poll   time.Duration
	Logger *slog.Logger
}

// RunSummary is what Run did.
type RunSummary struct {
	Items   int // task × agent × run
	Skipped int // scored before
	// Elsewhere counts the results other hosts of a fleet scored meanwhile.
	Elsewhere int
	Results   []RunResult
}

// Run runs every item of the task set × agents × runs that has no result yet, Jobs at a time, and returns the
// results of all of them (those of earlier runs, and of the other hosts sharing the book, too). With a shared
// book it ends once every item has a result: it runs those no other live host holds, and waits for the others,
// taking over any whose host's lease runs out.
func Run(ctx context.Context, o RunOptions) (*RunSummary, error) {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Runs <= 0 || o.Jobs <= 0 || len(o.Agents) == 0 {
		return nil, errors.New("eval run: no runs, jobs or agents")
	}
	if o.Book == nil {
		o.Book = &fileBook{dir: o.Dir, plan: o.Set.Plan}
	}
	if o.Poll <= 0 {
		o.Poll = time.Second
	}
	var keys []Item
	for _, id := range taskOrder(o.Set) {
		for _, a := range o.Agents {
			for run := 1; run <= o.Runs; run++ {
				keys = append(keys, Item{InstanceID: id, Agent: a.String(), Run: run})
			}
		}
	}
	items, err := o.Book.Number(ctx, keys)
	if err != nil {
		return nil, fmt.Errorf("the eval's plan: %w", err)
	}
	for _, it := range items {
		o.Set.Plan.put(it)
	}
	sum := &RunSummary{Items: len(items)}
	done, err := o.Book.Results(ctx)
	if err != nil {
		return nil, err
	}
	var todo []Item
	before := map[int]bool{}
	for _, it := range items {
		if r, ok := done[it.N]; ok {
			sum.Results = append(sum.Results, r)
			sum.Skipped++
			before[it.N] = true
		} else {
			todo = append(todo, it)
		}
	}
	here := map[int]bool{}
	for len(todo) > 0 {
		took, err := o.pass(ctx, todo, sum, here)
		if ctx.Err() != nil {
			return sum, ctx.Err()
		}
		if err != nil {
			return sum, err
		}
		if done, err = o.Book.Results(ctx); err != nil {
			return sum, err
		}
		todo = slices.DeleteFunc(todo, func(it Item) bool { _, ok := done[it.N]; return ok })
		if len(todo) > 0 && took == 0 {
			// Every item left is another host's, running: look again in a while.
			select {
			case <-ctx.Done():
				return sum, ctx.Err()
			case <-time.After(o.Poll):
			}
		}
	}
	sum.Results = sum.Results[:0]
	for _, it := range items {
		sum.Results = append(sum.Results, done[it.N])
		if !here[it.N] && !before[it.N] {
			sum.Elsewhere++
		}
	}
	return sum, nil
}

// pass runs the items of todo this host can hold, Jobs at a time, and says how many it held; here gets the
// numbers of those it scored.
func (o *RunOptions) pass(ctx context.Context, todo []Item, sum *RunSummary, here map[int]bool) (int, error) {
	scratch := filepath.Join(o.Dir, "check")
	var mu sync.Mutex
	var firstErr error
	took := 0
	next := make(chan Item)
	var wg sync.WaitGroup
	for w := range min(o.Jobs, max(len(todo), 1)) {
		c := o.Checker
		c.Home = filepath.Join(scratch, fmt.Sprintf("slot-%d", w), "home")
		wg.Add(1)
		go func() {
			defer wg.Done()
			for it := range next {
				release, ok, err := o.Book.Hold(ctx, it.N)
				var r RunResult
				if err == nil && ok {
					r, err = o.item(ctx, it, &c, filepath.Join(scratch, fmt.Sprintf("slot-%d", w), "work"))
					release()
				}
				mu.Lock()
				if ok {
					took++
				}
				switch {
				case err != nil:
					if firstErr == nil && ctx.Err() == nil {
						firstErr = fmt.Errorf("item %d (%s): %w", it.N, it.Key(), err)
					}
				case ok:
					sum.Results = append(sum.Results, r)
					here[it.N] = true
					if o.OnResult != nil {
						o.OnResult(r)
					}
				}
				mu.Unlock()
			}
		}()
	}
	for _, it := range todo {
		if ctx.Err() != nil {
			break
		}
		next <- it
	}
	close(next)
	wg.Wait()
	return took, firstErr
}

// taskOrder is the set's tasks in a stable order.
func taskOrder(s *RunSet) []string {
	ids := make([]string, 0, len(s.Tasks))
	for id := range s.Tasks {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// item runs one item to its end, scores its work in work (a directory of the job's) and writes its result.
func (o *RunOptions) item(ctx context.Context, it Item, c *Checker, work string) (RunResult, error) {
	_, t, err := o.Set.Task(it.N)
	if err != nil {
		return RunResult{}, err
	}
	spec, _ := ParseAgents(it.Agent)
	end, err := o.Driver.Drive(ctx, o.Repo, it.N, it.Agent)
	if err != nil {
		return RunResult{}, err
	}
	r := RunResult{Item: it, Repo: o.Repo, Host: o.Host, RunID: end.RunID, Status: end.Status, Error: end.Error, Usage: end.Usage,
		WallSeconds: end.Ended.Sub(end.Started).Seconds(), Turns: end.Turns, Nudges: end.Nudges, Questions: end.Questions,
		CLIVersion: end.CLIVersion, Model: end.Model}
	switch want := spec[0].Version; {
	case want != "" && end.CLIVersion != want:
		r.Invalid = fmt.Sprintf("%s ran release %q, not %s", spec[0].Name, end.CLIVersion, want)
	case end.Status != "done" && end.Turns == 0:
		// Its agent never had a turn (ace could not make its working copy, say): the run says nothing of it.
		r.Invalid = "the run ended before its agent had a turn: " + end.Error
	}
	remote := o.Workspaces.Remote(it.N)
	if r.Patch, err = pushedWork(ctx, remote, t.BaseCommit, end.Branch); err != nil {
		return RunResult{}, err
	}
	switch {
	case r.Invalid != "":
		r.Check = CheckNotScored
	case r.Patch == "":
		r.Check = CheckNoChange
	default:
		if err := o.score(ctx, &r, t, c, remote, work); err != nil {
			return RunResult{}, err
		}
	}
	r.ScoredAt = time.Now().UTC()
	if err := o.Book.Write(ctx, r); err != nil {
		return RunResult{}, err
	}
	if !o.Keep {
		if err := removeTree(o.Workspaces.ItemDir(it.N)); err != nil {
			o.Logger.WarnContext(ctx, "remove an eval item's working copy", "item", it.N, "err", err)
		}
	}
	return r, nil
}

// score runs the task's hidden check on the work: a fresh copy of the cut base at the base commit (ace's own,
// never the agent's .git), the work applied as a patch, then Checker.Check (the test files reset, the test patch
// applied, the check in a box).
func (o *RunOptions) score(ctx context.Context, r *RunResult, t *Task, c *Checker, remote, work string) error {
	for _, d := range []string{work, c.Home} {
		if err := removeTree(d); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(filepath.Dir(work), 0o755); err != nil {
		return err
	}
	if _, err := git(ctx, filepath.Dir(work), nil, "clone", "-q", "--no-local", "--no-checkout", "--", remote, work); err != nil {
		return err
	}
	if _, err := git(ctx, work, nil, "checkout", "-q", "--detach", t.BaseCommit); err != nil {
		return err
	}
	if err := applyPatch(ctx, work, r.Patch); err != nil {
		r.Check, r.CheckDetail = CheckNoApply, "the work: "+err.Error()
		return nil
	}
	out, err := c.Check(ctx, work, t)
	if err != nil {
		return err
	}
	switch {
	case !out.Applied:
		r.Check, r.CheckDetail = CheckNoApply, "the test patch: "+out.Why
	case out.Passed:
		r.Check, r.Solved = checkPass, true
	case out.TimedOut:
		r.Check = checkTimeout
	default:
		r.Check, r.CheckDetail = checkFail, lastLines(out.Output)
	}
	return nil
}

// pushedWork is what the run pushed to its cut base: its branch against the base commit ("" when it pushed
// nothing). The cut base is ace's repository; the agent only ever sent it objects.
func pushedWork(ctx context.Context, remote, base, branch string) (string, error) {
	if branch == "" {
		return "", nil
	}
	ref := "refs/heads/" + branch
	if _, err := git(ctx, remote, nil, "rev-parse", "--verify", "-q", ref+"^{commit}"); err != nil {
		return "", nil // never pushed
	}
	out, err := git(ctx, remote, nil, patchArgs(base, ref)...)
	return string(out), err
}

// resultPath is where item n's result is kept.
func resultPath(dir string, n int) string {
	return filepath.Join(dir, "results", strconv.Itoa(n)+".json")
}
