package tracker

import (
	"slices"
	"testing"
)

func TestClosingIssuesReadsGitHubsKeywords(t *testing.T) {
	for text, want := range map[string][]int{
		"Fixes #12":                           {12},
		"fixed #3, closes #3 and Resolves #1": {1, 3},
		"Closes: #10":                         {10},
		"closes acme/widgets#7":               {7},
		"closes other/repo#7":                 nil,
		"see #4; this fixes nothing":          nil,
		"prefixes #5":                         nil,
		"CLOSE #6\nresolve #0":                {6},
		"Fixes#8":                             nil,
	} {
		if got := ClosingIssues("acme/widgets", text); !slices.Equal(got, want) {
			t.Errorf("ClosingIssues(%q) = %v, want %v", text, got, want)
		}
	}
}
