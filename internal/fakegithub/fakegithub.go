// Package fakegithub is a fake GitHub REST API on httptest for tests: the real response shapes (field names as
// go-github reads them), mounted under /api/v3/ so that absolute-URL bugs show, with ETags and 304s, tokens
// mapped to users, issue events, collaborator permissions, pull requests, fault injection and request counters.
package fakegithub

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Server is the fake. All methods are safe for concurrent use.
type Server struct {
	srv *httptest.Server

	mu       sync.Mutex
	users    map[string]string // token → login
	repos    map[string]*repo
	faults   []Fault
	nextID   int64
	requests int
	full     int
	notMod   int
	byPath   map[string]int
}

type repo struct {
	fullName, defaultBranch, cloneURL string
	labels                            map[string]bool
	perms                             map[string]string
	issues                            map[int]*issue
	pulls                             []*pull
	nextNum                           int
	gitDir                            string // bare repository whose branches give pull requests their head SHA
	checks                            []*checkRun
	statuses                          []*commitStatus
}

type issue struct {
	Number   int
	Title    string
	Body     string
	Author   string
	State    string
	Labels   []string
	Created  time.Time
	Updated  time.Time
	IsPR     bool
	Comments []*Comment
	Events   []event
}

// Comment is a stored comment.
type Comment struct {
	ID      int64
	Author  string
	Body    string
	Created time.Time
	Updated time.Time
}

type event struct {
	ID    int64
	Kind  string
	Label string
	Actor string
	At    time.Time
}

type pull struct {
	Number         int
	Title          string
	Body           string
	Head           string
	Base           string
	Draft          bool
	State          string
	Merged         bool
	MergedAt       time.Time
	HeadSHA        string // set by a test; "" follows the branch in the repository's git dir
	BaseSHA        string // set by a test; "" omits it
	MergeCommit    string // the merge's commit on the base branch ("" until a test names one)
	Author         string
	Created        time.Time
	Updated        time.Time
	Mergeable      *bool
	MergeableState string
	Reviews        []*review
	ReviewComments []*reviewComment
}

// PR is a pull request as tests see it.
type PR struct {
	Number                  int
	Title, Body, Head, Base string
	Draft                   bool
	URL                     string
}

// IssueSnapshot is an issue's state as tests see it.
type IssueSnapshot struct {
	Title  string
	State  string
	Labels []string
}

// Fault is a canned response served instead of the real one to the next matching request.
type Fault struct {
	Status int
	Header map[string]string
	Body   string
	Path   string // substring of the request path to match; "" matches any request
	Method string // "" matches any method
	// Hold, when set, makes the matching request wait until Hold is closed and then be served as usual (Status and
	// the rest are not used): a test catches ace in the middle of what it does.
	Hold <-chan struct{}
}

// New starts a fake GitHub, closed at the end of the test.
func New(t testing.TB) *Server {
	s := Start()
	t.Cleanup(s.Stop)
	return s
}

// Start starts a fake GitHub outside a test (a benchmark counts the requests ace makes); Stop stops it.
func Start() *Server {
	s := &Server{users: map[string]string{}, repos: map[string]*repo{}, byPath: map[string]int{}, nextID: 1000}
	top := http.NewServeMux()
	top.Handle("/api/v3/", http.StripPrefix("/api/v3", s.routes()))
	top.HandleFunc("GET /_logs/", s.serveLog)
	s.srv = httptest.NewServer(top)
	return s
}

// Stop stops the server.
func (s *Server) Stop() { s.srv.Close() }

// URL is the API base URL, for github.api_url.
func (s *Server) URL() string { return s.srv.URL + "/api/v3/" }

// AddUser maps token to login.
func (s *Server) AddUser(login, token string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.users[token] = login
}

// RepoOptions describe a repository.
type RepoOptions struct {
	DefaultBranch string
	CloneURL      string
}

// AddRepo creates repository fullName ("owner/name").
func (s *Server) AddRepo(fullName string, o RepoOptions) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if o.DefaultBranch == "" {
		o.DefaultBranch = "main"
	}
	s.repos[fullName] = &repo{fullName: fullName, defaultBranch: o.DefaultBranch, cloneURL: o.CloneURL,
		labels: map[string]bool{}, perms: map[string]string{}, issues: map[int]*issue{}, nextNum: 1}
}

// SetPermission gives user a role ("read", "write", "admin", …) on the repository.
func (s *Server) SetPermission(fullName, user, perm string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.repos[fullName].perms[user] = perm
}

// IssueOptions describe an issue; Number 0 takes the next free number.
type IssueOptions struct {
	Number  int
	Title   string
	Body    string
	Author  string
	Labels  []string
	Created time.Time
	IsPR    bool
}

// AddIssue creates an issue (or, with IsPR, a pull request as the issues API lists it) and returns its number.
func (s *Server) AddIssue(fullName string, o IssueOptions) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.repos[fullName]
	if o.Number == 0 {
		o.Number = r.nextNum
	}
	if o.Number >= r.nextNum {
		r.nextNum = o.Number + 1
	}
	if o.Created.IsZero() {
		o.Created = time.Now().UTC()
	}
	r.issues[o.Number] = &issue{Number: o.Number, Title: o.Title, Body: o.Body, Author: o.Author, State: "open",
		Labels: slices.Clone(o.Labels), Created: o.Created, Updated: o.Created, IsPR: o.IsPR}
	return o.Number
}

// Label applies label to an issue as actor, recording a labeled event.
func (s *Server) Label(fullName string, number int, label, actor string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.label(s.repos[fullName].issues[number], label, actor)
}

func (s *Server) label(is *issue, label, actor string) {
	if !slices.Contains(is.Labels, label) {
		is.Labels = append(is.Labels, label)
	}
	s.nextID++
	is.Events = append(is.Events, event{ID: s.nextID, Kind: "labeled", Label: label, Actor: actor, At: time.Now().UTC()})
	is.Updated = time.Now().UTC()
}

// Unlabel removes a label as actor.
func (s *Server) Unlabel(fullName string, number int, label, actor string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	is := s.repos[fullName].issues[number]
	is.Labels = slices.DeleteFunc(is.Labels, func(l string) bool { return l == label })
	s.nextID++
	is.Events = append(is.Events, event{ID: s.nextID, Kind: "unlabeled", Label: label, Actor: actor, At: time.Now().UTC()})
	is.Updated = time.Now().UTC()
}

// Close closes an issue.
func (s *Server) Close(fullName string, number int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	is := s.repos[fullName].issues[number]
	is.State = "closed"
	is.Updated = time.Now().UTC()
}

// AddComment comments on an issue as user.
func (s *Server) AddComment(fullName string, number int, user, body string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.comment(s.repos[fullName].issues[number], user, body).ID
}

func (s *Server) comment(is *issue, user, body string) *Comment {
	s.nextID++
	now := time.Now().UTC()
	c := &Comment{ID: s.nextID, Author: user, Body: body, Created: now, Updated: now}
	is.Comments = append(is.Comments, c)
	return c
}

// Issue returns an issue's state.
func (s *Server) Issue(fullName string, number int) IssueSnapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	is := s.repos[fullName].issues[number]
	return IssueSnapshot{Title: is.Title, State: is.State, Labels: slices.Clone(is.Labels)}
}

// Comments returns an issue's comments, oldest first.
func (s *Server) Comments(fullName string, number int) []Comment {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Comment
	for _, c := range s.repos[fullName].issues[number].Comments {
		out = append(out, *c)
	}
	return out
}

// PRs returns the repository's pull requests opened through the API.
func (s *Server) PRs(fullName string) []PR {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []PR
	for _, p := range s.repos[fullName].pulls {
		out = append(out, PR{Number: p.Number, Title: p.Title, Body: p.Body, Head: p.Head, Base: p.Base, Draft: p.Draft,
			URL: s.htmlURL(fullName, "pull", p.Number)})
	}
	return out
}

// Inject queues faults, served in order to the requests they match.
func (s *Server) Inject(f ...Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = append(s.faults, f...)
}

// Counts reports requests served: all of them, full 2xx responses to GETs, and 304s.
func (s *Server) Counts() (total, full, notModified int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests, s.full, s.notMod
}

// PathCount reports how many requests hit paths containing sub.
func (s *Server) PathCount(sub string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for p, c := range s.byPath {
		if strings.Contains(p, sub) {
			n += c
		}
	}
	return n
}

func (s *Server) htmlURL(fullName, kind string, n int) string {
	return fmt.Sprintf("%s/%s/%s/%d", s.srv.URL, fullName, kind, n)
}

// handler is one API endpoint: it runs under s.mu and returns a status and a JSON-able body.
type handler func(w http.ResponseWriter, r *http.Request, login string) (int, any)

func (s *Server) serve(h handler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.requests++
		s.byPath[r.Method+" "+r.URL.Path]++
		for i, f := range s.faults {
			if (f.Path == "" || strings.Contains(r.URL.Path, f.Path)) && (f.Method == "" || f.Method == r.Method) {
				s.faults = append(s.faults[:i], s.faults[i+1:]...)
				if f.Hold != nil {
					s.mu.Unlock()
					select {
					case <-f.Hold:
					case <-r.Context().Done():
					}
					s.mu.Lock()
					break
				}
				for k, v := range f.Header {
					w.Header().Set(k, v)
				}
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(f.Status)
				fmt.Fprint(w, f.Body)
				return
			}
		}
		tok := strings.TrimSpace(strings.TrimPrefix(strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer"), "token"))
		login, ok := s.users[tok]
		if !ok {
			writeJSON(w, http.StatusUnauthorized, apiError("Bad credentials"))
			return
		}
		status, body := h(w, r, login)
		data, _ := json.Marshal(body)
		if r.Method == http.MethodGet && status == http.StatusOK {
			sum := sha256.Sum256(data)
			etag := `"` + hex.EncodeToString(sum[:8]) + `"`
			w.Header().Set("ETag", etag)
			if r.Header.Get("If-None-Match") == etag {
				s.notMod++
				w.WriteHeader(http.StatusNotModified)
				return
			}
			s.full++
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-RateLimit-Limit", "5000")
		w.Header().Set("X-RateLimit-Remaining", "4999")
		w.WriteHeader(status)
		w.Write(data)
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func apiError(msg string) map[string]any {
	return map[string]any{"message": msg, "documentation_url": "https://docs.github.com/rest"}
}

// paginate serves page/per_page of items with a Link header for the next page.
func paginate[T any](w http.ResponseWriter, r *http.Request, items []T) []T {
	per, _ := strconv.Atoi(r.URL.Query().Get("per_page"))
	if per <= 0 {
		per = 30
	}
	page, _ := strconv.Atoi(r.URL.Query().Get("page"))
	if page <= 0 {
		page = 1
	}
	start := (page - 1) * per
	if start > len(items) {
		start = len(items)
	}
	end := min(start+per, len(items))
	if end < len(items) {
		q := r.URL.Query()
		q.Set("page", strconv.Itoa(page+1))
		q.Set("per_page", strconv.Itoa(per))
		u := *r.URL
		u.RawQuery = q.Encode()
		w.Header().Set("Link", fmt.Sprintf(`<http://%s/api/v3%s>; rel="next"`, r.Host, u.String()))
	}
	return items[start:end]
}

func sortedIssues(r *repo) []*issue {
	out := make([]*issue, 0, len(r.issues))
	for _, is := range r.issues {
		out = append(out, is)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Number < out[j].Number })
	return out
}
