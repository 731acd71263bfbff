// Package tracker is the issue tracker as ace needs it — issues, comments, labels, permissions, pull
// requests — with two implementations: GitHub (tracker/github) and a folder of Markdown files (tracker/local).
package tracker

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Issue is an issue (or, in listings, a pull request: IsPR).
type Issue struct {
	Repo      string
	Number    int
	Title     string
	Body      string
	Author    string
	URL       string
	State     string // "open" or "closed"
	Labels    []string
	CreatedAt time.Time
	UpdatedAt time.Time
	IsPR      bool
}

// Comment is an issue comment.
type Comment struct {
	ID        int64
	Author    string
	Body      string
	URL       string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Repo is what ace needs to know about a repository.
type Repo struct {
	FullName      string
	DefaultBranch string
	CloneURL      string
	Private       bool
}

// PullRequest is an opened pull request.
type PullRequest struct {
	Number int
	URL    string
	State  string
	Head   string
	Base   string
	Title  string
	Body   string
	Draft  bool
}

// NewPR is a pull request to open.
type NewPR struct {
	Title string
	Body  string
	Head  string
	Base  string
	Draft bool
}

// Permission is a user's role on a repository, as GitHub names them.
type Permission string

// Permissions from weakest to strongest.
const (
	PermNone     Permission = "none"
	PermRead     Permission = "read"
	PermTriage   Permission = "triage"
	PermWrite    Permission = "write"
	PermMaintain Permission = "maintain"
	PermAdmin    Permission = "admin"
)

var permOrder = []Permission{PermNone, PermRead, PermTriage, PermWrite, PermMaintain, PermAdmin}

// AtLeast reports whether p is min or stronger. Unknown permissions count as none.
func (p Permission) AtLeast(min Permission) bool {
	return slices.Index(permOrder, p) >= slices.Index(permOrder, min) && slices.Index(permOrder, p) >= 0
}

// Tracker is the issue tracker. Implementations return the sentinel errors below (wrapped) so callers can tell
// "retry later" from "give up".
type Tracker interface {
	Issue(ctx context.Context, repo string, number int) (*Issue, error)
	// Comments lists comments created or updated after since (zero: all), oldest first.
	Comments(ctx context.Context, repo string, number int, since time.Time) ([]Comment, error)
	// ListLabeled lists open issues (never pull requests) carrying label, oldest first.
	ListLabeled(ctx context.Context, repo, label string) ([]Issue, error)
	// AddLabels adds labels, creating missing repository labels; adding a label that is there is no error.
	AddLabels(ctx context.Context, repo string, number int, labels ...string) error
	// RemoveLabel removes a label; a label that is not there is no error.
	RemoveLabel(ctx context.Context, repo string, number int, label string) error
	CreateComment(ctx context.Context, repo string, number int, body string) (*Comment, error)
	EditComment(ctx context.Context, repo string, id int64, body string) (*Comment, error)
	// FindComment returns the authenticated user's comment containing marker, or nil.
	FindComment(ctx context.Context, repo string, number int, marker string) (*Comment, error)
	// Labeler returns who applied label last ("" if unknown).
	Labeler(ctx context.Context, repo string, number int, label string) (string, error)
	Permission(ctx context.Context, repo, user string) (Permission, error)
	Repo(ctx context.Context, repo string) (*Repo, error)
	// FindPR returns the open pull request whose head is branch, or nil.
	FindPR(ctx context.Context, repo, head string) (*PullRequest, error)
	// CreatePR opens a pull request; one that exists for the head is returned instead.
	CreatePR(ctx context.Context, repo string, pr NewPR) (*PullRequest, error)
	// Self is the login ace acts as.
	Self(ctx context.Context) (string, error)
}

// Sentinel errors every tracker wraps.
var (
	ErrNotFound     = errors.New("not found")
	ErrUnauthorized = errors.New("unauthorized")
	ErrForbidden    = errors.New("forbidden")
	ErrValidation   = errors.New("rejected as invalid")
	// ErrUnreachable is a check of the tracker (ace doctor) that could not tell: the tracker did not answer, or
	// answered in a way that says nothing of ace's credential.
	ErrUnreachable = errors.New("unreachable")
)

// Error is a tracker failure with its HTTP status (0 for non-HTTP trackers).
type Error struct {
	Status  int
	Op      string
	Message string
	Kind    error // one of the sentinels, or nil
}

func (e *Error) Error() string {
	msg := e.Op
	if e.Status != 0 {
		msg += fmt.Sprintf(": HTTP %d", e.Status)
	}
	if e.Message != "" {
		msg += ": " + e.Message
	}
	return msg
}

// Is matches the sentinel the error is of.
func (e *Error) Is(target error) bool { return e.Kind != nil && target == e.Kind }

// SplitRepo splits "owner/name".
func SplitRepo(repo string) (owner, name string, err error) {
	owner, name, ok := strings.Cut(repo, "/")
	if !ok || owner == "" || name == "" || strings.Contains(name, "/") {
		return "", "", fmt.Errorf("repository %q is not owner/name", repo)
	}
	return owner, name, nil
}
