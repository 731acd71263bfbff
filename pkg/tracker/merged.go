package tracker

import (
	"context"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// MergedPR is a merged pull request as a source of tasks (ace eval build): what it closed and where its change
// is in git.
type MergedPR struct {
	Number int
	URL    string
	Title  string
	Body   string
	Author string
	// Base is the branch it was merged into; BaseSHA the base commit the tracker last compared it with.
	Base    string
	BaseSHA string
	HeadSHA string
	// MergeCommit is the commit the merge made on Base: a merge commit, the squashed commit, or the last commit of
	// a rebase.
	MergeCommit string
	CreatedAt   time.Time
	MergedAt    time.Time
	// Closes are the issues of the same repository its title or body closes (ClosingIssues).
	Closes []int
}

// MergedLister is a tracker that lists merged pull requests. GitHub implements it, and the local folder tracker
// for the pull requests whose file names their merge commit.
type MergedLister interface {
	// MergedPRs lists the pull requests of repo merged at or after since (zero: all of them), newest merge first.
	MergedPRs(ctx context.Context, repo string, since time.Time) ([]MergedPR, error)
}

// closingRe is GitHub's closing keywords before an issue reference: "Fixes #12", "closes: #3",
// "Resolves owner/repo#7".
var closingRe = regexp.MustCompile(`(?i)\b(?:close[sd]?|fix(?:e[sd])?|resolve[sd]?)\s*:?\s+([A-Za-z0-9._-]+/[A-Za-z0-9._-]+)?#(\d+)\b`)

// ClosingIssues returns, in ascending order and once each, the issues of repo that text closes on merge as
// GitHub reads it: a closing keyword before #N or before repo#N (a reference to another repository closes
// nothing here).
func ClosingIssues(repo, text string) []int {
	var out []int
	for _, m := range closingRe.FindAllStringSubmatch(text, -1) {
		if m[1] != "" && !strings.EqualFold(m[1], repo) {
			continue
		}
		n, err := strconv.Atoi(m[2])
		if err != nil || n <= 0 {
			continue
		}
		out = append(out, n)
	}
	slices.Sort(out)
	return slices.Compact(out)
}
