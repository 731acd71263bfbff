package workflow

import (
	"context"
	"time"

	"github.com/aceworks/ace/pkg/memory"
	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/tmuxops"
	"github.com/aceworks/ace/pkg/tracker"
	"github.com/aceworks/ace/pkg/workspace"
)

// Store is the part of the state store the engine uses.
type Store interface {
	CreateRun(ctx context.Context, r *store.Run) error
	GetRun(ctx context.Context, id int64) (*store.Run, error)
	LatestRun(ctx context.Context, repo string, issue int) (*store.Run, error)
	ListRuns(ctx context.Context, f store.Filter) ([]*store.Run, error)
	UpdateRun(ctx context.Context, r *store.Run, ev *store.Event) error
	AppendEvent(ctx context.Context, runID int64, ev store.Event) error
	TakeSlot(ctx context.Context, r *store.Run, capacity int) (store.SlotTake, error)
	SetSlot(ctx context.Context, r *store.Run, to store.Slot, from ...store.Slot) (bool, error)
	SetQueue(ctx context.Context, repos []string, waiting []store.Queued) error
	Heartbeat(ctx context.Context, h store.Host) error
	Prune(ctx context.Context, cutoff time.Time) (int, error)
	Hosts(ctx context.Context) ([]store.Host, error)
}

// runLister is the store as a part that only reads runs in some statuses holds it (the panes, the usage limits).
type runLister interface {
	ListRuns(ctx context.Context, f store.Filter) ([]*store.Run, error)
}

// Tracker is the issue tracker as the engine sees it: issues, comments, labels, permissions, pull requests, and
// what a run's agent may have of it (its secret, its endpoints). The engine knows no tracker by name.
type Tracker interface {
	Issue(ctx context.Context, repo string, number int) (*tracker.Issue, error)
	Comments(ctx context.Context, repo string, number int, since time.Time) ([]tracker.Comment, error)
	ListLabeled(ctx context.Context, repo, label string) ([]tracker.Issue, error)
	Labeler(ctx context.Context, repo string, number int, label string) (string, error)
	AddLabels(ctx context.Context, repo string, number int, labels ...string) error
	RemoveLabel(ctx context.Context, repo string, number int, label string) error
	CreateComment(ctx context.Context, repo string, number int, body string) (*tracker.Comment, error)
	EditComment(ctx context.Context, repo string, id int64, body string) (*tracker.Comment, error)
	FindComment(ctx context.Context, repo string, number int, marker string) (*tracker.Comment, error)
	Permission(ctx context.Context, repo, user string) (tracker.Permission, error)
	Repo(ctx context.Context, repo string) (*tracker.Repo, error)
	FindPR(ctx context.Context, repo, head string) (*tracker.PullRequest, error)
	CreatePR(ctx context.Context, repo string, pr tracker.NewPR) (*tracker.PullRequest, error)
	Self(ctx context.Context) (string, error)
	// Secret is what the tracker acts with (GitHub's token; "" for none): an agent's tools for the tracker get
	// it, the repository's memory never does.
	Secret() string
	// Endpoints are the tracker's URLs a boxed agent may reach.
	Endpoints() []tracker.Endpoint
}

// Workspaces provisions and reopens per-issue working copies.
type Workspaces interface {
	Prepare(ctx context.Context, spec workspace.Spec) (*workspace.Workspace, error)
	Open(ctx context.Context, repo string, issue int) (*workspace.Workspace, error)
}

// Sessions is tmux as the engine uses it.
type Sessions interface {
	NewSession(ctx context.Context, spec tmuxops.SessionSpec) error
	Respawn(ctx context.Context, spec tmuxops.SessionSpec) error
	HasSession(ctx context.Context, name string) (bool, error)
	Deliver(ctx context.Context, name, text string, o tmuxops.DeliverOptions) error
	Paste(ctx context.Context, name, text string) error
	SendKeys(ctx context.Context, name string, keys ...string) error
	Capture(ctx context.Context, name string, historyLines int) (string, error)
	Panes(ctx context.Context) ([]tmuxops.Pane, error)
	PipeToFile(ctx context.Context, name, path string) error
	Kill(ctx context.Context, name string) error
	ServerPID(ctx context.Context) (int, error)
}

// Secrets resolves named secrets; values never leave memory except into an agent's environment.
type Secrets interface {
	ResolveAll(ctx context.Context, names []string) (map[string]string, error)
}

// Memory is the per-repository memory: copied into each working copy, added to when a run ends.
type Memory interface {
	CopyIn(ctx context.Context, repo, workdir string, secrets ...string) (memory.Merged, error)
	MergeBack(ctx context.Context, repo, workdir string, secrets ...string) (memory.Merged, error)
	Record(ctx context.Context, repo string, e memory.Entry) error
}
