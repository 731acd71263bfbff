package fakegithub

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"net/http"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aceworks/ace/pkg/tracker"
)

// What a pull request goes through after it is opened: check runs (with annotations and Actions job logs) and
// commit statuses on its head commit, reviews and line comments, merge and close. The JSON is what GitHub
// serves and go-github v62 decodes.

type checkRun struct {
	ID          int64
	HeadSHA     string
	Name        string
	Status      string
	Conclusion  string
	Title       string
	Summary     string
	Text        string
	Annotations []Annotation
	Log         string // the Actions job log; "" means the check is not an Actions job
}

type commitStatus struct {
	ID          int64
	SHA         string
	Context     string
	State       string
	Description string
	TargetURL   string
}

type review struct {
	ID        int64
	Author    string
	State     string
	Body      string
	Submitted time.Time
	CommitID  string
}

type reviewComment struct {
	ID        int64
	ReviewID  int64
	Author    string
	Body      string
	Path      string
	Line      int
	DiffHunk  string
	InReplyTo int64
	Created   time.Time
	CommitID  string
}

// Annotation is a check run's annotation of a file's lines.
type Annotation struct {
	Path      string
	StartLine int
	EndLine   int
	Level     string // notice, warning, failure (default failure)
	Title     string
	Message   string
}

// CheckRun describes a check run on a commit. Status defaults to "completed"; Log, when set, makes it a GitHub
// Actions job whose log is served at /actions/jobs/{id}/logs.
type CheckRun struct {
	HeadSHA     string
	Name        string
	Status      string
	Conclusion  string // success, failure, timed_out, cancelled, …
	Title       string
	Summary     string
	Text        string
	Annotations []Annotation
	Log         string
}

// SetGitDir names the bare repository whose branches are the repository's: a pull request's head SHA then
// follows pushes to its branch.
func (s *Server) SetGitDir(fullName, dir string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.repos[fullName].gitDir = dir
}

// AddCheckRun records a check run and returns its id (which is also its Actions job id).
func (s *Server) AddCheckRun(fullName string, c CheckRun) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c.Status == "" {
		c.Status = "completed"
	}
	s.nextID++
	rp := s.repos[fullName]
	rp.checks = append(rp.checks, &checkRun{ID: s.nextID, HeadSHA: c.HeadSHA, Name: c.Name, Status: c.Status,
		Conclusion: c.Conclusion, Title: c.Title, Summary: c.Summary, Text: c.Text, Annotations: c.Annotations, Log: c.Log})
	return s.nextID
}

// AddStatus records a commit status (state: pending, success, failure, error) on sha.
func (s *Server) AddStatus(fullName, sha, context, state, description string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextID++
	rp := s.repos[fullName]
	rp.statuses = append(rp.statuses, &commitStatus{ID: s.nextID, SHA: sha, Context: context, State: state,
		Description: description, TargetURL: fmt.Sprintf("%s/%s/status/%d", s.srv.URL, fullName, s.nextID)})
}

// LineComment is a review comment on a line of a pull request's diff.
type LineComment struct {
	Path     string
	Line     int
	Body     string
	DiffHunk string
}

// AddReview submits a review by user (state APPROVED, CHANGES_REQUESTED or COMMENTED) with line comments and
// returns its id.
func (s *Server) AddReview(fullName string, number int, user, state, body string, comments ...LineComment) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	rv, p := s.stageReview(fullName, number, user, state, body, comments)
	p.Reviews = append(p.Reviews, rv)
	return rv.ID
}

// AddReviewInTwo adds a review's line comments now and returns what adds the review itself: a review submitted
// between a reader's two requests (the reviews, then the review comments) shows its comments without itself.
func (s *Server) AddReviewInTwo(fullName string, number int, user, state, body string, comments ...LineComment) (publish func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rv, p := s.stageReview(fullName, number, user, state, body, comments)
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		p.Reviews = append(p.Reviews, rv)
	}
}

// stageReview makes a review and adds its line comments, with s.mu held; the caller lists the review.
func (s *Server) stageReview(fullName string, number int, user, state, body string, comments []LineComment) (*review, *pull) {
	rp := s.repos[fullName]
	p := rp.pull(number)
	sha := s.headSHA(rp, p)
	s.nextID++
	now := time.Now().UTC()
	rv := &review{ID: s.nextID, Author: user, State: state, Body: body, Submitted: now, CommitID: sha}
	for _, c := range comments {
		s.nextID++
		p.ReviewComments = append(p.ReviewComments, &reviewComment{ID: s.nextID, ReviewID: rv.ID, Author: user, Body: c.Body,
			Path: c.Path, Line: c.Line, DiffHunk: c.DiffHunk, Created: now, CommitID: sha})
	}
	return rv, p
}

// SetHeadSHA pins a pull request's head SHA (instead of following its branch).
func (s *Server) SetHeadSHA(fullName string, number int, sha string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.repos[fullName].pull(number).HeadSHA = sha
}

// HeadSHA is a pull request's head commit as the API reports it.
func (s *Server) HeadSHA(fullName string, number int) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp := s.repos[fullName]
	return s.headSHA(rp, rp.pull(number))
}

// SetMergeable sets what GitHub computed about merging: mergeable nil is "not computed yet"; state is
// clean, dirty (a conflict), blocked, behind, unstable or unknown.
func (s *Server) SetMergeable(fullName string, number int, mergeable *bool, state string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.repos[fullName].pull(number)
	p.Mergeable, p.MergeableState = mergeable, state
}

// MergePR merges a pull request and, as GitHub does, closes the issues its body says it closes.
func (s *Server) MergePR(fullName string, number int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp := s.repos[fullName]
	p := rp.pull(number)
	if p.HeadSHA == "" {
		p.HeadSHA = s.headSHA(rp, p) // frozen at the merge
	}
	p.State, p.Merged, p.MergedAt = "closed", true, time.Now().UTC()
	p.Updated = p.MergedAt
	rp.closeMerged(p)
}

// closeMerged closes a merged pull request's own issue entry and, as GitHub does, the issues its title or body
// closes.
func (rp *repo) closeMerged(p *pull) {
	if is := rp.issues[p.Number]; is != nil {
		is.State = "closed"
	}
	for _, n := range tracker.ClosingIssues(rp.fullName, p.Title+"\n"+p.Body) {
		if is := rp.issues[n]; is != nil && !is.IsPR {
			is.State, is.Updated = "closed", p.MergedAt
		}
	}
}

// MergedPR is a pull request merged before the test began, as its repository's history has it.
type MergedPR struct {
	Number      int // 0 takes the next free number
	Title, Body string
	Author      string
	Head, Base  string // branch names; Base defaults to the repository's default branch
	HeadSHA     string
	BaseSHA     string
	MergeCommit string
	Created     time.Time
	MergedAt    time.Time
}

// AddMergedPR records a merged pull request (and its issue entry), closes the issues it closes, and returns its
// number.
func (s *Server) AddMergedPR(fullName string, m MergedPR) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp := s.repos[fullName]
	if m.Number == 0 {
		m.Number = rp.nextNum
	}
	rp.nextNum = max(rp.nextNum, m.Number+1)
	if m.Base == "" {
		m.Base = rp.defaultBranch
	}
	if m.MergedAt.IsZero() {
		m.MergedAt = time.Now().UTC()
	}
	if m.Created.IsZero() {
		m.Created = m.MergedAt.Add(-time.Hour)
	}
	p := &pull{Number: m.Number, Title: m.Title, Body: m.Body, Head: m.Head, Base: m.Base, State: "closed", Merged: true,
		MergedAt: m.MergedAt, HeadSHA: m.HeadSHA, BaseSHA: m.BaseSHA, MergeCommit: m.MergeCommit, Author: m.Author,
		Created: m.Created, Updated: m.MergedAt, MergeableState: "unknown"}
	rp.pulls = append(rp.pulls, p)
	rp.issues[p.Number] = &issue{Number: p.Number, Title: p.Title, Body: p.Body, Author: m.Author, State: "closed",
		Created: m.Created, Updated: m.MergedAt, IsPR: true}
	rp.closeMerged(p)
	return p.Number
}

// sortedPulls orders pull requests as GitHub's list does for sort (created, updated) and direction (asc, desc;
// desc by default); without sort they stay in the order they were opened.
func sortedPulls(pulls []*pull, by, direction string) []*pull {
	out := slices.Clone(pulls)
	key := func(p *pull) time.Time { return p.Created }
	switch by {
	case "":
		return out
	case "updated":
		key = func(p *pull) time.Time { return p.Updated }
	}
	slices.SortStableFunc(out, func(a, b *pull) int {
		c := key(a).Compare(key(b))
		if direction != "asc" {
			c = -c
		}
		return c
	})
	return out
}

// ClosePR closes a pull request without merging it.
func (s *Server) ClosePR(fullName string, number int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp := s.repos[fullName]
	p := rp.pull(number)
	p.State, p.Updated = "closed", time.Now().UTC()
	if is := rp.issues[number]; is != nil {
		is.State = "closed"
	}
}

func (r *repo) pull(number int) *pull {
	for _, p := range r.pulls {
		if p.Number == number {
			return p
		}
	}
	panic(fmt.Sprintf("fakegithub: %s has no pull request #%d", r.fullName, number))
}

// headSHA reads the head branch from the git dir (pushes move it), else a stable made-up SHA.
func (s *Server) headSHA(rp *repo, p *pull) string {
	if p.HeadSHA != "" {
		return p.HeadSHA
	}
	if rp.gitDir != "" {
		out, err := exec.Command("git", "--git-dir", rp.gitDir, "rev-parse", "--verify", "-q", "refs/heads/"+p.Head).Output()
		if err == nil {
			return strings.TrimSpace(string(out))
		}
	}
	sum := sha1.Sum([]byte(rp.fullName + "#" + p.Head))
	return hex.EncodeToString(sum[:])
}

func (s *Server) pullRoutes(m *http.ServeMux) {
	m.HandleFunc("GET /repos/{owner}/{repo}/pulls/{n}", s.serve(s.withPull(func(_ http.ResponseWriter, _ *http.Request, rp *repo, p *pull) (int, any) {
		out := s.pullJSON(rp, p)
		out["mergeable_state"] = p.MergeableState
		if p.Mergeable != nil {
			out["mergeable"] = *p.Mergeable
		} else {
			out["mergeable"] = nil
		}
		return 200, out
	})))
	m.HandleFunc("GET /repos/{owner}/{repo}/pulls/{n}/reviews", s.serve(s.withPull(func(w http.ResponseWriter, r *http.Request, rp *repo, p *pull) (int, any) {
		var out []map[string]any
		for _, rv := range p.Reviews {
			out = append(out, map[string]any{"id": rv.ID, "user": map[string]any{"login": rv.Author}, "body": rv.Body,
				"state": rv.State, "submitted_at": rv.Submitted.Format(time.RFC3339Nano), "commit_id": rv.CommitID,
				"html_url": s.htmlURL(rp.fullName, "pull", p.Number) + fmt.Sprintf("#pullrequestreview-%d", rv.ID)})
		}
		return 200, nonNil(paginate(w, r, out))
	})))
	m.HandleFunc("GET /repos/{owner}/{repo}/pulls/{n}/comments", s.serve(s.withPull(func(w http.ResponseWriter, r *http.Request, rp *repo, p *pull) (int, any) {
		var out []map[string]any
		for _, c := range p.ReviewComments {
			m := map[string]any{"id": c.ID, "pull_request_review_id": c.ReviewID, "user": map[string]any{"login": c.Author},
				"body": c.Body, "path": c.Path, "line": c.Line, "original_line": c.Line, "side": "RIGHT",
				"diff_hunk": c.DiffHunk, "commit_id": c.CommitID, "created_at": c.Created.Format(time.RFC3339Nano),
				"updated_at": c.Created.Format(time.RFC3339Nano),
				"html_url":   s.htmlURL(rp.fullName, "pull", p.Number) + fmt.Sprintf("#discussion_r%d", c.ID)}
			if c.InReplyTo != 0 {
				m["in_reply_to_id"] = c.InReplyTo
			}
			out = append(out, m)
		}
		return 200, nonNil(paginate(w, r, out))
	})))
	m.HandleFunc("GET /repos/{owner}/{repo}/commits/{ref}/check-runs", s.serve(s.withRepo(func(w http.ResponseWriter, r *http.Request, rp *repo, _ string) (int, any) {
		var out []map[string]any
		for _, c := range rp.checks {
			if c.HeadSHA == r.PathValue("ref") {
				out = append(out, s.checkJSON(rp, c))
			}
		}
		total := len(out)
		return 200, map[string]any{"total_count": total, "check_runs": nonNil(paginate(w, r, out))}
	})))
	m.HandleFunc("GET /repos/{owner}/{repo}/check-runs/{id}/annotations", s.serve(s.withRepo(func(w http.ResponseWriter, r *http.Request, rp *repo, _ string) (int, any) {
		c := rp.check(r.PathValue("id"))
		if c == nil {
			return 404, apiError("Not Found")
		}
		var out []map[string]any
		for _, a := range c.Annotations {
			level := a.Level
			if level == "" {
				level = "failure"
			}
			end := a.EndLine
			if end == 0 {
				end = a.StartLine
			}
			out = append(out, map[string]any{"path": a.Path, "start_line": a.StartLine, "end_line": end,
				"annotation_level": level, "title": a.Title, "message": a.Message, "blob_href": ""})
		}
		return 200, nonNil(paginate(w, r, out))
	})))
	// GitHub answers a job's logs with a redirect to a short-lived download URL that takes no token.
	m.HandleFunc("GET /repos/{owner}/{repo}/actions/jobs/{id}/logs", s.serve(s.withRepo(func(w http.ResponseWriter, r *http.Request, rp *repo, _ string) (int, any) {
		c := rp.check(r.PathValue("id"))
		if c == nil || c.Log == "" {
			return 404, apiError("Not Found")
		}
		w.Header().Set("Location", fmt.Sprintf("%s/_logs/%s/%d.txt", s.srv.URL, rp.fullName, c.ID))
		return http.StatusFound, nil
	})))
	m.HandleFunc("GET /repos/{owner}/{repo}/commits/{ref}/status", s.serve(s.withRepo(func(_ http.ResponseWriter, r *http.Request, rp *repo, _ string) (int, any) {
		ref := r.PathValue("ref")
		latest := map[string]*commitStatus{} // the newest status of each context counts
		var order []string
		for _, st := range rp.statuses {
			if st.SHA != ref {
				continue
			}
			if _, ok := latest[st.Context]; !ok {
				order = append(order, st.Context)
			}
			latest[st.Context] = st
		}
		state := "success"
		if len(order) == 0 {
			state = "pending"
		}
		var out []map[string]any
		for _, ctx := range order {
			st := latest[ctx]
			switch {
			case st.State == "failure" || st.State == "error":
				state = "failure"
			case st.State == "pending" && state != "failure":
				state = "pending"
			}
			out = append(out, map[string]any{"id": st.ID, "context": st.Context, "state": st.State,
				"description": st.Description, "target_url": st.TargetURL})
		}
		return 200, map[string]any{"state": state, "sha": ref, "total_count": len(out), "statuses": nonNil(out)}
	})))
}

// serveLog serves the job logs the redirects point at; it is mounted outside the API, as GitHub's are.
func (s *Server) serveLog(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests++
	s.byPath[r.Method+" "+r.URL.Path]++
	rest := strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/_logs/"), ".txt")
	i := strings.LastIndex(rest, "/")
	if i < 0 {
		http.NotFound(w, r)
		return
	}
	rp, ok := s.repos[rest[:i]]
	if !ok {
		http.NotFound(w, r)
		return
	}
	c := rp.check(rest[i+1:])
	if c == nil || c.Log == "" {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "text/plain")
	fmt.Fprint(w, c.Log)
}

func (r *repo) check(id string) *checkRun {
	n, _ := strconv.ParseInt(id, 10, 64)
	for _, c := range r.checks {
		if c.ID == n {
			return c
		}
	}
	return nil
}

func (s *Server) checkJSON(rp *repo, c *checkRun) map[string]any {
	m := map[string]any{"id": c.ID, "head_sha": c.HeadSHA, "name": c.Name, "status": c.Status,
		"html_url":    fmt.Sprintf("%s/%s/runs/%d", s.srv.URL, rp.fullName, c.ID),
		"details_url": fmt.Sprintf("%s/%s/actions/runs/1/job/%d", s.srv.URL, rp.fullName, c.ID),
		"output": map[string]any{"title": c.Title, "summary": c.Summary, "text": c.Text,
			"annotations_count": len(c.Annotations),
			"annotations_url":   fmt.Sprintf("%s/api/v3/repos/%s/check-runs/%d/annotations", s.srv.URL, rp.fullName, c.ID)}}
	if c.Status == "completed" {
		m["conclusion"] = c.Conclusion
	} else {
		m["conclusion"] = nil
	}
	app := "ci-app"
	if c.Log != "" {
		app = "github-actions"
	}
	m["app"] = map[string]any{"slug": app, "name": app}
	return m
}

type pullHandler func(w http.ResponseWriter, r *http.Request, rp *repo, p *pull) (int, any)

func (s *Server) withPull(h pullHandler) handler {
	return s.withRepo(func(w http.ResponseWriter, r *http.Request, rp *repo, _ string) (int, any) {
		n, _ := strconv.Atoi(r.PathValue("n"))
		for _, p := range rp.pulls {
			if p.Number == n {
				return h(w, r, rp, p)
			}
		}
		return 404, apiError("Not Found")
	})
}
