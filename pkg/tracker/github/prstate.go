package github

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"

	gh "github.com/google/go-github/v62/github"

	"github.com/aceworks/ace/pkg/tracker"
)

var _ tracker.PRReader = (*Client)(nil)

// PRState reads a pull request's whole state in six conditional requests (the pull request, check runs and
// combined status of its head, reviews, review comments, conversation), so that an unchanged pull request costs
// six 304s. A failed check's annotations and job log are read once: a completed check run never changes.
func (c *Client) PRState(ctx context.Context, repo string, number int) (*tracker.PRState, error) {
	o, n, err := split(repo)
	if err != nil {
		return nil, err
	}
	op := fmt.Sprintf("pull request %s#%d", repo, number)
	p, resp, err := c.gh.PullRequests.Get(ctx, o, n, number)
	if err != nil {
		return nil, wrap("get "+op, resp, err)
	}
	st := &tracker.PRState{Number: p.GetNumber(), URL: p.GetHTMLURL(), State: p.GetState(), Merged: p.GetMerged(),
		Mergeable: p.Mergeable, MergeableState: p.GetMergeableState(), HeadSHA: p.GetHead().GetSHA(),
		HeadRef: p.GetHead().GetRef(), Base: p.GetBase().GetRef()}
	if st.State == "closed" {
		return st, nil // nothing more matters once it is merged or closed
	}
	if st.HeadSHA != "" {
		if err := c.readChecks(ctx, o, n, st); err != nil {
			return nil, err
		}
		if err := c.readStatuses(ctx, o, n, st); err != nil {
			return nil, err
		}
	}
	if st.Reviews, err = c.reviews(ctx, o, n, number); err != nil {
		return nil, err
	}
	if st.ReviewComments, err = c.reviewComments(ctx, o, n, number); err != nil {
		return nil, err
	}
	if st.Comments, err = c.Comments(ctx, repo, number, zeroTime); err != nil {
		return nil, err
	}
	return st, nil
}

func (c *Client) readChecks(ctx context.Context, o, n string, st *tracker.PRState) error {
	opt := &gh.ListCheckRunsOptions{ListOptions: gh.ListOptions{PerPage: 100}}
	for {
		res, resp, err := c.gh.Checks.ListCheckRunsForRef(ctx, o, n, st.HeadSHA, opt)
		if err != nil {
			return wrap("check runs of "+st.HeadSHA, resp, err)
		}
		for _, cr := range res.CheckRuns {
			if cr.GetStatus() != "completed" {
				st.Pending = true
				continue
			}
			if !tracker.CheckFailed(cr.GetConclusion()) {
				continue
			}
			fc, err := c.failedCheck(ctx, o, n, cr)
			if err != nil {
				return err
			}
			st.FailedChecks = append(st.FailedChecks, fc)
		}
		if resp.NextPage == 0 {
			return nil
		}
		opt.Page = resp.NextPage
	}
}

// failedCheck completes a failed check with its annotations and, for an Actions job, its log tail. Both are
// final once the check completed, so they are read once per check run.
func (c *Client) failedCheck(ctx context.Context, o, n string, cr *gh.CheckRun) (tracker.FailedCheck, error) {
	out := cr.GetOutput()
	fc := tracker.FailedCheck{ID: cr.GetID(), Name: cr.GetName(), Conclusion: cr.GetConclusion(), Title: out.GetTitle(),
		Summary: out.GetSummary(), Text: out.GetText(), URL: cr.GetHTMLURL()}
	if done, ok := c.checkDetail(fc.ID); ok {
		fc.Annotations, fc.LogTail = done.annotations, done.logTail
		return fc, nil
	}
	if out.GetAnnotationsCount() > 0 {
		opt := &gh.ListOptions{PerPage: 100}
		for {
			as, resp, err := c.gh.Checks.ListCheckRunAnnotations(ctx, o, n, fc.ID, opt)
			if err != nil {
				return fc, wrap(fmt.Sprintf("annotations of check %q", fc.Name), resp, err)
			}
			for _, a := range as {
				fc.Annotations = append(fc.Annotations, tracker.Annotation{Path: a.GetPath(), StartLine: a.GetStartLine(),
					EndLine: a.GetEndLine(), Level: a.GetAnnotationLevel(), Title: a.GetTitle(), Message: a.GetMessage()})
			}
			if resp.NextPage == 0 {
				break
			}
			opt.Page = resp.NextPage
		}
	}
	if cr.GetApp().GetSlug() == "github-actions" && c.o.LogBudget > 0 {
		// An Actions check run's id is its job's id.
		tail, err := c.jobLogTail(ctx, o, n, fc.ID)
		if err != nil {
			c.o.Logger.WarnContext(ctx, "job log unavailable", "check", fc.Name, "job", fc.ID, "err", err)
		}
		fc.LogTail = tail
	}
	c.rememberCheck(fc.ID, checkDetail{annotations: fc.Annotations, logTail: fc.LogTail})
	return fc, nil
}

// jobLogTail follows the logs redirect without the token (the download URL is signed and may be another host)
// and keeps the last LogBudget bytes, cut at a line start when there is one.
func (c *Client) jobLogTail(ctx context.Context, o, n string, jobID int64) (string, error) {
	u, resp, err := c.gh.Actions.GetWorkflowJobLogs(ctx, o, n, jobID, 1)
	if err != nil {
		return "", wrap(fmt.Sprintf("logs of job %d", jobID), resp, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return "", err
	}
	lr, err := c.plain.Do(req)
	if err != nil {
		return "", fmt.Errorf("download job log: %w", err)
	}
	defer lr.Body.Close()
	if lr.StatusCode != http.StatusOK {
		return "", fmt.Errorf("download job log: HTTP %d", lr.StatusCode)
	}
	return readTail(lr.Body, c.o.LogBudget)
}

// readTail keeps the last budget bytes of r (logs can be large; only their end says why a job failed).
func readTail(r io.Reader, budget int) (string, error) {
	buf := make([]byte, 0, 2*budget)
	chunk := make([]byte, 32<<10)
	cut := false
	for {
		k, err := r.Read(chunk)
		buf = append(buf, chunk[:k]...)
		if len(buf) > budget {
			buf = append(buf[:0], buf[len(buf)-budget:]...)
			cut = true
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", fmt.Errorf("read job log: %w", err)
		}
	}
	s := string(buf)
	if cut {
		if i := strings.IndexByte(s, '\n'); i >= 0 && i < len(s)-1 {
			s = s[i+1:]
		}
	}
	return s, nil
}

func (c *Client) readStatuses(ctx context.Context, o, n string, st *tracker.PRState) error {
	cs, resp, err := c.gh.Repositories.GetCombinedStatus(ctx, o, n, st.HeadSHA, &gh.ListOptions{PerPage: 100})
	if err != nil {
		return wrap("commit status of "+st.HeadSHA, resp, err)
	}
	for _, s := range cs.Statuses {
		switch s.GetState() {
		case "failure", "error":
			st.FailedStatuses = append(st.FailedStatuses, tracker.FailedStatus{Context: s.GetContext(), State: s.GetState(),
				Description: s.GetDescription(), TargetURL: s.GetTargetURL()})
		case "pending":
			st.Pending = true
		}
	}
	return nil
}

func (c *Client) reviews(ctx context.Context, o, n string, number int) ([]tracker.Review, error) {
	opt := &gh.ListOptions{PerPage: 100}
	var out []tracker.Review
	for {
		rs, resp, err := c.gh.PullRequests.ListReviews(ctx, o, n, number, opt)
		if err != nil {
			return nil, wrap(fmt.Sprintf("reviews of %s/%s#%d", o, n, number), resp, err)
		}
		for _, r := range rs {
			out = append(out, tracker.Review{ID: r.GetID(), Author: r.GetUser().GetLogin(), State: r.GetState(),
				Body: r.GetBody(), SubmittedAt: r.GetSubmittedAt().Time})
		}
		if resp.NextPage == 0 {
			return out, nil
		}
		opt.Page = resp.NextPage
	}
}

func (c *Client) reviewComments(ctx context.Context, o, n string, number int) ([]tracker.ReviewComment, error) {
	opt := &gh.PullRequestListCommentsOptions{Sort: "created", Direction: "asc", ListOptions: gh.ListOptions{PerPage: 100}}
	var out []tracker.ReviewComment
	for {
		cs, resp, err := c.gh.PullRequests.ListComments(ctx, o, n, number, opt)
		if err != nil {
			return nil, wrap(fmt.Sprintf("review comments of %s/%s#%d", o, n, number), resp, err)
		}
		for _, cm := range cs {
			line := cm.GetLine()
			if line == 0 {
				line = cm.GetOriginalLine() // the line moved out of the diff: where it was commented
			}
			out = append(out, tracker.ReviewComment{ID: cm.GetID(), ReviewID: cm.GetPullRequestReviewID(),
				Author: cm.GetUser().GetLogin(), Body: cm.GetBody(), Path: cm.GetPath(), Line: line,
				DiffHunk: cm.GetDiffHunk(), InReplyTo: cm.GetInReplyTo(), CreatedAt: cm.GetCreatedAt().Time})
		}
		if resp.NextPage == 0 {
			return out, nil
		}
		opt.Page = resp.NextPage
	}
}
