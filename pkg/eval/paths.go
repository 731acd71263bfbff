package eval

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
)

// testDirs are directory names whose files are tests, fixtures of tests or their data.
var testDirs = []string{"test", "tests", "testing", "__tests__", "spec", "specs", "e2e", "testdata"}

// IsTestPath reports whether a changed file belongs to the tests: below a directory named like testDirs, or
// named as the common test runners name their files (foo_test.go, test_foo.py, foo_test.py, foo.test.ts,
// foo.spec.js, foo_spec.rb, FooTest.java, conftest.py).
func IsTestPath(p string) bool {
	dirs := strings.Split(p, "/")
	base := dirs[len(dirs)-1]
	for _, d := range dirs[:len(dirs)-1] {
		if slices.Contains(testDirs, strings.ToLower(d)) {
			return true
		}
	}
	stem := strings.TrimSuffix(base, path.Ext(base))
	lower := strings.ToLower(stem)
	switch {
	case strings.EqualFold(base, "conftest.py"):
		return true
	case strings.HasPrefix(lower, "test_") || strings.HasPrefix(lower, "test-"):
		return true
	case strings.HasSuffix(lower, "_test") || strings.HasSuffix(lower, "-test") || strings.HasSuffix(lower, ".test"):
		return true
	case strings.HasSuffix(lower, ".spec") || strings.HasSuffix(lower, "_spec"):
		return true
	case strings.HasSuffix(stem, "Test") || strings.HasSuffix(stem, "Tests"):
		return true
	}
	return false
}

// isDocPath reports whether a changed file is documentation, which alone does not make a change a fix: it goes
// into the gold patch with the code, but a change needs code besides to be a candidate.
func isDocPath(p string) bool {
	dirs := strings.Split(p, "/")
	base := dirs[len(dirs)-1]
	for _, d := range dirs[:len(dirs)-1] {
		if d == "docs" || d == "doc" {
			return true
		}
	}
	switch strings.ToLower(path.Ext(base)) {
	case ".md", ".markdown", ".rst", ".adoc", ".txt":
		return true
	}
	upper := strings.ToUpper(base)
	for _, name := range []string{"LICENSE", "LICENCE", "CHANGELOG", "CHANGES", "AUTHORS", "NOTICE"} {
		if strings.HasPrefix(upper, name) {
			return true
		}
	}
	return false
}

// checkPath refuses a path of a change that must not be written into a working copy: a repository's history is
// hostile input, and a crafted tree can hold names git itself would never make.
func checkPath(p string) error {
	if p == "" || len(p) > 4096 {
		return errors.New("an empty or over-long path")
	}
	if strings.HasPrefix(p, "/") {
		return fmt.Errorf("absolute path %q", p)
	}
	for _, r := range p {
		if r < 0x20 || r == 0x7f {
			return fmt.Errorf("path %q holds a control character", p)
		}
	}
	for _, c := range strings.Split(p, "/") {
		switch {
		case c == "" || c == "." || c == "..":
			return fmt.Errorf("path %q has a %q component", p, c)
		case strings.EqualFold(strings.TrimRight(c, ". "), ".git"):
			return fmt.Errorf("path %q reaches into .git", p)
		}
	}
	return nil
}
