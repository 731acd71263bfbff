package main

import (
	"maps"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync"
)

// ghProxy stands between the hosts and the fake GitHub and counts each request by endpoint: those GitHub bills
// against a token's 5,000 an hour, and the 304s it answers to conditional requests, which it does not.
type ghProxy struct {
	srv *httptest.Server
	mu  sync.Mutex
	c   ghCounts
}

// ghCounts are requests by endpoint ("GET /repos/{owner}/{repo}/issues/{n}").
type ghCounts struct {
	billed, notModified map[string]int
}

func newGHProxy(api string) (*ghProxy, error) {
	u, err := url.Parse(api)
	if err != nil {
		return nil, err
	}
	target := &url.URL{Scheme: u.Scheme, Host: u.Host}
	p := &ghProxy{c: ghCounts{billed: map[string]int{}, notModified: map[string]int{}}}
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.ModifyResponse = func(resp *http.Response) error {
		route := resp.Request.Method + " " + routeOf(resp.Request.URL.Path)
		p.mu.Lock()
		if resp.StatusCode == http.StatusNotModified {
			p.c.notModified[route]++
		} else {
			p.c.billed[route]++
		}
		p.mu.Unlock()
		return nil
	}
	p.srv = httptest.NewServer(rp)
	return p, nil
}

// URL is the API base URL the hosts use.
func (p *ghProxy) URL() string { return p.srv.URL + "/api/v3/" }

func (p *ghProxy) close() { p.srv.Close() }

func (p *ghProxy) counts() ghCounts {
	p.mu.Lock()
	defer p.mu.Unlock()
	return ghCounts{billed: maps.Clone(p.c.billed), notModified: maps.Clone(p.c.notModified)}
}

// routeOf names an API path by its shape: the /api/v3 prefix dropped, the repository as {owner}/{repo}, numbers
// as {n}, commit SHAs as {sha}.
func routeOf(path string) string {
	parts := strings.Split(strings.TrimPrefix(path, "/api/v3"), "/")
	for i, s := range parts {
		switch {
		case i == 2 && parts[1] == "repos":
			parts[i] = "{owner}"
		case i == 3 && parts[1] == "repos":
			parts[i] = "{repo}"
		case s != "" && strings.Trim(s, "0123456789") == "":
			parts[i] = "{n}"
		case len(s) == 40 && strings.Trim(s, "0123456789abcdef") == "":
			parts[i] = "{sha}"
		}
	}
	return strings.Join(parts, "/")
}

func (g ghCounts) sub(o ghCounts) ghCounts {
	d := ghCounts{billed: map[string]int{}, notModified: map[string]int{}}
	for k, v := range g.billed {
		if n := v - o.billed[k]; n > 0 {
			d.billed[k] = n
		}
	}
	for k, v := range g.notModified {
		if n := v - o.notModified[k]; n > 0 {
			d.notModified[k] = n
		}
	}
	return d
}

// dispatchList is the request of a dispatch pass, one per repository: its labelled issues.
const dispatchList = "GET /repos/{owner}/{repo}/issues"

// split separates the requests of dispatch passes from those of runs.
func (g ghCounts) split() (runs, dispatch ghCounts) {
	runs = ghCounts{billed: maps.Clone(g.billed), notModified: maps.Clone(g.notModified)}
	dispatch = ghCounts{billed: map[string]int{dispatchList: g.billed[dispatchList]},
		notModified: map[string]int{dispatchList: g.notModified[dispatchList]}}
	delete(runs.billed, dispatchList)
	delete(runs.notModified, dispatchList)
	return runs, dispatch
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// top lists the endpoints of m by count, most first.
func top(m map[string]int, n int) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int {
		if m[a] != m[b] {
			return m[b] - m[a]
		}
		return strings.Compare(a, b)
	})
	return keys[:min(n, len(keys))]
}
