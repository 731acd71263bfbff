// Package github is the GitHub tracker: go-github v62 over oauth2, with conditional requests (ETag, 304),
// rate-limit and failure retries, pagination, and typed errors.
package github

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	gh "github.com/google/go-github/v62/github"
	"golang.org/x/oauth2"

	"github.com/aceworks/ace/pkg/tracker"
)

// Options configure a Client.
type Options struct {
	// APIURL is "" for api.github.com, else a GitHub Enterprise (or test) API URL such as "https://ghe/api/v3/".
	APIURL string
	Token  string
	// HTTPClient supplies the base transport (default http.DefaultTransport).
	HTTPClient *http.Client
	Logger     *slog.Logger
	MaxRetries int           // default 4
	MaxWait    time.Duration // longest wait for a rate-limit reset; default 5m
	// Sleep waits between retries (a seam for tests); default a timer on ctx.
	Sleep func(context.Context, time.Duration) error
	// LabelColor is the colour of labels ace creates; default "5319e7".
	LabelColor string
	// CacheDir keeps conditional-request entries (ETag and body) across processes; "" = memory only. Entries
	// are keyed by URL and a hash of the token, never the token itself.
	CacheDir string
	// LogBudget is the most bytes of a failed Actions job's log that PRState keeps (its tail); default 16 KiB,
	// negative reads no logs.
	LogBudget int
}

// Client is the GitHub tracker.
type Client struct {
	gh    *gh.Client
	plain *http.Client // no token: for signed download URLs such as job logs
	o     Options
	mu    sync.Mutex
	login string
	// checks memoizes what a completed failed check run said beyond its output (annotations, log tail).
	checks     map[int64]checkDetail
	checkOrder []int64
}

type checkDetail struct {
	annotations []tracker.Annotation
	logTail     string
}

// maxCheckDetails bounds the memo of failed checks.
const maxCheckDetails = 256

func (c *Client) checkDetail(id int64) (checkDetail, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	d, ok := c.checks[id]
	return d, ok
}

func (c *Client) rememberCheck(id int64, d checkDetail) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.checks[id]; !ok {
		c.checkOrder = append(c.checkOrder, id)
	}
	c.checks[id] = d
	for len(c.checkOrder) > maxCheckDetails {
		delete(c.checks, c.checkOrder[0])
		c.checkOrder = c.checkOrder[1:]
	}
}

// New returns a client. No request is made until a method is called.
func New(_ context.Context, o Options) (*Client, error) {
	if o.Token == "" {
		return nil, errors.New("no GitHub token: set one of github.token_env")
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.MaxRetries <= 0 {
		o.MaxRetries = 4
	}
	if o.MaxWait <= 0 {
		o.MaxWait = 5 * time.Minute
	}
	if o.Sleep == nil {
		o.Sleep = sleepCtx
	}
	if o.LabelColor == "" {
		o.LabelColor = "5319e7"
	}
	if o.LogBudget == 0 {
		o.LogBudget = 16 << 10
	}
	base := http.DefaultTransport
	if o.HTTPClient != nil && o.HTTPClient.Transport != nil {
		base = o.HTTPClient.Transport
	}
	auth := &oauth2.Transport{Source: oauth2.StaticTokenSource(&oauth2.Token{AccessToken: o.Token}), Base: base}
	rt := &retrier{
		next:       &etagCache{next: auth, max: 2048, entries: map[string]*cached{}, dir: o.CacheDir},
		maxRetries: o.MaxRetries, maxWait: o.MaxWait, sleep: o.Sleep, log: o.Logger, now: time.Now,
	}
	c := gh.NewClient(&http.Client{Transport: rt, Timeout: 60 * time.Second})
	if o.APIURL != "" {
		u := o.APIURL
		if !strings.HasSuffix(u, "/") {
			u += "/"
		}
		var err error
		if c, err = c.WithEnterpriseURLs(u, u); err != nil {
			return nil, fmt.Errorf("github.api_url %q: %w", o.APIURL, err)
		}
		// WithEnterpriseURLs appends api/v3/ when missing; a test server mounted elsewhere keeps its URL.
		c.BaseURL, _ = c.BaseURL.Parse(u)
	}
	plain := &http.Client{Transport: base, Timeout: 60 * time.Second}
	return &Client{gh: c, plain: plain, o: o, checks: map[int64]checkDetail{}}, nil
}

// wrap turns go-github errors into tracker errors that say what to do.
func wrap(op string, resp *gh.Response, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, errRateLimited) {
		return &tracker.Error{Op: op, Status: 403, Message: "rate limit exhausted; try again after it resets", Kind: tracker.ErrForbidden}
	}
	var ge *gh.ErrorResponse
	if errors.As(err, &ge) && ge.Response != nil {
		e := &tracker.Error{Op: op, Status: ge.Response.StatusCode, Message: ge.Message}
		for _, d := range ge.Errors {
			if d.Message != "" {
				e.Message += "; " + d.Message
			} else if d.Code != "" {
				e.Message += "; " + d.Code
			}
		}
		switch ge.Response.StatusCode {
		case 401:
			e.Kind = tracker.ErrUnauthorized
			e.Message += " (check the token named in github.token_env)"
		case 403:
			e.Kind = tracker.ErrForbidden
		case 404:
			e.Kind = tracker.ErrNotFound
		case 422:
			e.Kind = tracker.ErrValidation
		}
		return e
	}
	if resp != nil && resp.StatusCode == 404 {
		return &tracker.Error{Op: op, Status: 404, Kind: tracker.ErrNotFound}
	}
	return fmt.Errorf("%s: %w", op, err)
}

var zeroTime time.Time

func split(repo string) (string, string, error) { return tracker.SplitRepo(repo) }

func (c *Client) Self(ctx context.Context) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.login != "" {
		return c.login, nil
	}
	u, resp, err := c.gh.Users.Get(ctx, "")
	if err != nil {
		return "", wrap("who am I", resp, err)
	}
	c.login = u.GetLogin()
	return c.login, nil
}

func (c *Client) Repo(ctx context.Context, repo string) (*tracker.Repo, error) {
	o, n, err := split(repo)
	if err != nil {
		return nil, err
	}
	r, resp, err := c.gh.Repositories.Get(ctx, o, n)
	if err != nil {
		return nil, wrap("get repository "+repo, resp, err)
	}
	return &tracker.Repo{FullName: r.GetFullName(), DefaultBranch: r.GetDefaultBranch(), CloneURL: r.GetCloneURL(), Private: r.GetPrivate()}, nil
}

func toIssue(repo string, i *gh.Issue) tracker.Issue {
	var labels []string
	for _, l := range i.Labels {
		labels = append(labels, l.GetName())
	}
	return tracker.Issue{Repo: repo, Number: i.GetNumber(), Title: i.GetTitle(), Body: i.GetBody(), Author: i.GetUser().GetLogin(),
		URL: i.GetHTMLURL(), State: i.GetState(), Labels: labels, CreatedAt: i.GetCreatedAt().Time,
		UpdatedAt: i.GetUpdatedAt().Time, IsPR: i.IsPullRequest()}
}

func (c *Client) Issue(ctx context.Context, repo string, number int) (*tracker.Issue, error) {
	o, n, err := split(repo)
	if err != nil {
		return nil, err
	}
	i, resp, err := c.gh.Issues.Get(ctx, o, n, number)
	if err != nil {
		return nil, wrap(fmt.Sprintf("get issue %s#%d", repo, number), resp, err)
	}
	iss := toIssue(repo, i)
	return &iss, nil
}

func (c *Client) ListLabeled(ctx context.Context, repo, label string) ([]tracker.Issue, error) {
	o, n, err := split(repo)
	if err != nil {
		return nil, err
	}
	opt := &gh.IssueListByRepoOptions{State: "open", Labels: []string{label}, Sort: "created", Direction: "asc",
		ListOptions: gh.ListOptions{PerPage: 100}}
	var out []tracker.Issue
	for {
		page, resp, err := c.gh.Issues.ListByRepo(ctx, o, n, opt)
		if err != nil {
			return nil, wrap("list issues of "+repo+" labelled "+label, resp, err)
		}
		for _, i := range page {
			if !i.IsPullRequest() {
				out = append(out, toIssue(repo, i))
			}
		}
		if resp.NextPage == 0 {
			return out, nil
		}
		opt.Page = resp.NextPage
	}
}

func (c *Client) Comments(ctx context.Context, repo string, number int, since time.Time) ([]tracker.Comment, error) {
	o, n, err := split(repo)
	if err != nil {
		return nil, err
	}
	opt := &gh.IssueListCommentsOptions{Sort: gh.String("created"), Direction: gh.String("asc"), ListOptions: gh.ListOptions{PerPage: 100}}
	if !since.IsZero() {
		opt.Since = &since
	}
	var out []tracker.Comment
	for {
		page, resp, err := c.gh.Issues.ListComments(ctx, o, n, number, opt)
		if err != nil {
			return nil, wrap(fmt.Sprintf("list comments of %s#%d", repo, number), resp, err)
		}
		for _, cm := range page {
			out = append(out, toComment(cm))
		}
		if resp.NextPage == 0 {
			return out, nil
		}
		opt.Page = resp.NextPage
	}
}

func toComment(c *gh.IssueComment) tracker.Comment {
	return tracker.Comment{ID: c.GetID(), Author: c.GetUser().GetLogin(), Body: c.GetBody(), URL: c.GetHTMLURL(),
		CreatedAt: c.GetCreatedAt().Time, UpdatedAt: c.GetUpdatedAt().Time}
}

func (c *Client) CreateComment(ctx context.Context, repo string, number int, body string) (*tracker.Comment, error) {
	o, n, err := split(repo)
	if err != nil {
		return nil, err
	}
	cm, resp, err := c.gh.Issues.CreateComment(ctx, o, n, number, &gh.IssueComment{Body: &body})
	if err != nil {
		return nil, wrap(fmt.Sprintf("comment on %s#%d", repo, number), resp, err)
	}
	out := toComment(cm)
	return &out, nil
}

func (c *Client) EditComment(ctx context.Context, repo string, id int64, body string) (*tracker.Comment, error) {
	o, n, err := split(repo)
	if err != nil {
		return nil, err
	}
	cm, resp, err := c.gh.Issues.EditComment(ctx, o, n, id, &gh.IssueComment{Body: &body})
	if err != nil {
		return nil, wrap(fmt.Sprintf("edit comment %d on %s", id, repo), resp, err)
	}
	out := toComment(cm)
	return &out, nil
}

func (c *Client) FindComment(ctx context.Context, repo string, number int, marker string) (*tracker.Comment, error) {
	self, err := c.Self(ctx)
	if err != nil {
		return nil, err
	}
	cs, err := c.Comments(ctx, repo, number, time.Time{})
	if err != nil {
		return nil, err
	}
	for _, cm := range cs {
		if strings.EqualFold(cm.Author, self) && strings.Contains(cm.Body, marker) {
			return &cm, nil
		}
	}
	return nil, nil
}
