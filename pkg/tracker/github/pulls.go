package github

import (
	"context"
	"errors"
	"net/url"
	"strings"

	gh "github.com/google/go-github/v62/github"

	"github.com/aceworks/ace/pkg/tracker"
)

func toPR(p *gh.PullRequest) *tracker.PullRequest {
	return &tracker.PullRequest{Number: p.GetNumber(), URL: p.GetHTMLURL(), State: p.GetState(), Head: p.GetHead().GetRef(),
		Base: p.GetBase().GetRef(), Title: p.GetTitle(), Body: p.GetBody(), Draft: p.GetDraft()}
}

// FindPR returns the open pull request for head, or nil.
func (c *Client) FindPR(ctx context.Context, repo, head string) (*tracker.PullRequest, error) {
	o, n, err := split(repo)
	if err != nil {
		return nil, err
	}
	prs, resp, err := c.gh.PullRequests.List(ctx, o, n, &gh.PullRequestListOptions{State: "open", Head: o + ":" + head})
	if err != nil {
		return nil, wrap("find pull request for "+head, resp, err)
	}
	for _, p := range prs {
		if p.GetHead().GetRef() == head {
			return toPR(p), nil
		}
	}
	return nil, nil
}

// CreatePR opens a pull request; when GitHub says one already exists for the head, that one is returned.
func (c *Client) CreatePR(ctx context.Context, repo string, pr tracker.NewPR) (*tracker.PullRequest, error) {
	o, n, err := split(repo)
	if err != nil {
		return nil, err
	}
	p, resp, err := c.gh.PullRequests.Create(ctx, o, n, &gh.NewPullRequest{Title: &pr.Title, Body: &pr.Body, Head: &pr.Head,
		Base: &pr.Base, Draft: &pr.Draft})
	if err == nil {
		return toPR(p), nil
	}
	werr := wrap("open pull request for "+pr.Head, resp, err)
	if errors.Is(werr, tracker.ErrValidation) && strings.Contains(werr.Error(), "already exists") {
		existing, ferr := c.FindPR(ctx, repo, pr.Head)
		if ferr == nil && existing != nil {
			return existing, nil
		}
	}
	return nil, werr
}

// CompareURL is GitHub's page of the change from base to head in repo (a best-of pull request links the attempts
// it did not come from).
func (c *Client) CompareURL(repo, base, head string) string {
	host := GitHost(c.o.APIURL)
	if host == "" {
		return ""
	}
	u := url.URL{Scheme: "https", Host: host, Path: "/" + repo + "/compare/" + base + "..." + head}
	return u.String()
}
