package github

import (
	"context"
	"sort"
	"time"

	gh "github.com/google/go-github/v62/github"

	"github.com/aceworks/ace/pkg/tracker"
)

var _ tracker.MergedLister = (*Client)(nil)

// MergedPRs lists repo's pull requests merged at or after since, newest merge first. GitHub lists closed pull
// requests by their last update, newest first: the listing stops at the first one updated before since, as a
// pull request is updated when it is merged.
func (c *Client) MergedPRs(ctx context.Context, repo string, since time.Time) ([]tracker.MergedPR, error) {
	o, n, err := split(repo)
	if err != nil {
		return nil, err
	}
	opt := &gh.PullRequestListOptions{State: "closed", Sort: "updated", Direction: "desc", ListOptions: gh.ListOptions{PerPage: 100}}
	var out []tracker.MergedPR
	for {
		page, resp, err := c.gh.PullRequests.List(ctx, o, n, opt)
		if err != nil {
			return nil, wrap("list merged pull requests of "+repo, resp, err)
		}
		for _, p := range page {
			if !since.IsZero() && p.GetUpdatedAt().Before(since) {
				return sortMerged(out), nil
			}
			if p.MergedAt == nil || (!since.IsZero() && p.GetMergedAt().Before(since)) {
				continue
			}
			out = append(out, tracker.MergedPR{Number: p.GetNumber(), URL: p.GetHTMLURL(), Title: p.GetTitle(), Body: p.GetBody(),
				Author: p.GetUser().GetLogin(), Base: p.GetBase().GetRef(), BaseSHA: p.GetBase().GetSHA(),
				HeadSHA: p.GetHead().GetSHA(), MergeCommit: p.GetMergeCommitSHA(), CreatedAt: p.GetCreatedAt().Time,
				MergedAt: p.GetMergedAt().Time, Closes: tracker.ClosingIssues(repo, p.GetTitle()+"\n"+p.GetBody())})
		}
		if resp.NextPage == 0 {
			return sortMerged(out), nil
		}
		opt.Page = resp.NextPage
	}
}

func sortMerged(prs []tracker.MergedPR) []tracker.MergedPR {
	sort.SliceStable(prs, func(i, j int) bool { return prs[i].MergedAt.After(prs[j].MergedAt) })
	return prs
}
