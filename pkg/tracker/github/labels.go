package github

import (
	"context"
	"errors"
	"fmt"

	gh "github.com/google/go-github/v62/github"

	"github.com/aceworks/ace/pkg/tracker"
)

// AddLabels creates labels the repository lacks (with ace's colour) and adds them; present labels are fine.
func (c *Client) AddLabels(ctx context.Context, repo string, number int, labels ...string) error {
	o, n, err := split(repo)
	if err != nil {
		return err
	}
	for _, l := range labels {
		if err := c.ensureLabel(ctx, o, n, l); err != nil {
			return err
		}
	}
	_, resp, err := c.gh.Issues.AddLabelsToIssue(ctx, o, n, number, labels)
	return wrap(fmt.Sprintf("add labels %v to %s#%d", labels, repo, number), resp, err)
}

func (c *Client) ensureLabel(ctx context.Context, owner, name, label string) error {
	_, resp, err := c.gh.Issues.GetLabel(ctx, owner, name, label)
	if err == nil {
		return nil
	}
	if werr := wrap("get label "+label, resp, err); !errors.Is(werr, tracker.ErrNotFound) {
		return werr
	}
	color := c.o.LabelColor
	_, resp, err = c.gh.Issues.CreateLabel(ctx, owner, name, &gh.Label{Name: &label, Color: &color})
	if werr := wrap("create label "+label, resp, err); werr != nil && !errors.Is(werr, tracker.ErrValidation) {
		return werr // 422: someone created it meanwhile
	}
	return nil
}

// RemoveLabel removes a label; one that is not on the issue is no error.
func (c *Client) RemoveLabel(ctx context.Context, repo string, number int, label string) error {
	o, n, err := split(repo)
	if err != nil {
		return err
	}
	resp, err := c.gh.Issues.RemoveLabelForIssue(ctx, o, n, number, label)
	if werr := wrap(fmt.Sprintf("remove label %s from %s#%d", label, repo, number), resp, err); werr != nil && !errors.Is(werr, tracker.ErrNotFound) {
		return werr
	}
	return nil
}

// Labeler is the actor of the latest "labeled" event for label.
func (c *Client) Labeler(ctx context.Context, repo string, number int, label string) (string, error) {
	o, n, err := split(repo)
	if err != nil {
		return "", err
	}
	opt := &gh.ListOptions{PerPage: 100}
	who := ""
	for {
		evs, resp, err := c.gh.Issues.ListIssueEvents(ctx, o, n, number, opt)
		if err != nil {
			return "", wrap(fmt.Sprintf("events of %s#%d", repo, number), resp, err)
		}
		for _, e := range evs {
			if e.GetEvent() == "labeled" && e.GetLabel().GetName() == label {
				who = e.GetActor().GetLogin()
			}
		}
		if resp.NextPage == 0 {
			return who, nil
		}
		opt.Page = resp.NextPage
	}
}

// Permission is user's role on repo; a non-collaborator has "none" (or "read" on public repositories).
func (c *Client) Permission(ctx context.Context, repo, user string) (tracker.Permission, error) {
	o, n, err := split(repo)
	if err != nil {
		return "", err
	}
	p, resp, err := c.gh.Repositories.GetPermissionLevel(ctx, o, n, user)
	if err != nil {
		werr := wrap(fmt.Sprintf("permission of %s on %s", user, repo), resp, err)
		if errors.Is(werr, tracker.ErrNotFound) {
			return tracker.PermNone, nil
		}
		return "", werr
	}
	return tracker.Permission(p.GetPermission()), nil
}
