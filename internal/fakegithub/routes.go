package fakegithub

import (
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

func (s *Server) routes() *http.ServeMux {
	m := http.NewServeMux()
	m.HandleFunc("GET /user", s.serve(func(_ http.ResponseWriter, _ *http.Request, login string) (int, any) {
		return 200, map[string]any{"login": login, "id": 1, "type": "User"}
	}))
	m.HandleFunc("GET /repos/{owner}/{repo}", s.serve(s.withRepo(func(_ http.ResponseWriter, r *http.Request, rp *repo, _ string) (int, any) {
		return 200, map[string]any{"full_name": rp.fullName, "name": r.PathValue("repo"), "default_branch": rp.defaultBranch,
			"clone_url": rp.cloneURL, "private": false, "owner": map[string]any{"login": r.PathValue("owner")}}
	})))
	m.HandleFunc("GET /repos/{owner}/{repo}/issues", s.serve(s.withRepo(s.listIssues)))
	m.HandleFunc("GET /repos/{owner}/{repo}/issues/{n}", s.serve(s.withIssue(func(_ http.ResponseWriter, _ *http.Request, rp *repo, is *issue, _ string) (int, any) {
		return 200, s.issueJSON(rp, is)
	})))
	m.HandleFunc("PATCH /repos/{owner}/{repo}/issues/{n}", s.serve(s.withIssue(func(_ http.ResponseWriter, r *http.Request, rp *repo, is *issue, _ string) (int, any) {
		var in struct{ State string }
		json.NewDecoder(r.Body).Decode(&in)
		if in.State != "" {
			is.State = in.State
		}
		return 200, s.issueJSON(rp, is)
	})))
	m.HandleFunc("GET /repos/{owner}/{repo}/issues/{n}/comments", s.serve(s.withIssue(func(w http.ResponseWriter, r *http.Request, _ *repo, is *issue, _ string) (int, any) {
		var since time.Time
		if v := r.URL.Query().Get("since"); v != "" {
			since, _ = time.Parse(time.RFC3339, v)
		}
		var out []map[string]any
		for _, c := range is.Comments {
			if since.IsZero() || !c.Updated.Before(since) {
				out = append(out, commentJSON(c))
			}
		}
		return 200, nonNil(paginate(w, r, out))
	})))
	m.HandleFunc("POST /repos/{owner}/{repo}/issues/{n}/comments", s.serve(s.withIssue(func(_ http.ResponseWriter, r *http.Request, _ *repo, is *issue, login string) (int, any) {
		var in struct{ Body string }
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.Body == "" {
			return 422, apiError("Validation Failed")
		}
		return 201, commentJSON(s.comment(is, login, in.Body))
	})))
	m.HandleFunc("PATCH /repos/{owner}/{repo}/issues/comments/{id}", s.serve(s.withRepo(func(_ http.ResponseWriter, r *http.Request, rp *repo, login string) (int, any) {
		id, _ := strconv.ParseInt(r.PathValue("id"), 10, 64)
		var in struct{ Body string }
		json.NewDecoder(r.Body).Decode(&in)
		for _, is := range rp.issues {
			for _, c := range is.Comments {
				if c.ID == id {
					if c.Author != login {
						return 403, apiError("Must have admin rights to Repository.")
					}
					c.Body, c.Updated = in.Body, time.Now().UTC()
					return 200, commentJSON(c)
				}
			}
		}
		return 404, apiError("Not Found")
	})))
	m.HandleFunc("POST /repos/{owner}/{repo}/issues/{n}/labels", s.serve(s.withIssue(func(_ http.ResponseWriter, r *http.Request, rp *repo, is *issue, login string) (int, any) {
		var in []string
		body := json.NewDecoder(r.Body)
		if err := body.Decode(&in); err != nil {
			return 422, apiError("Invalid request")
		}
		for _, l := range in {
			rp.labels[l] = true
			if !slices.Contains(is.Labels, l) {
				s.label(is, l, login)
			}
		}
		return 200, labelsJSON(is.Labels)
	})))
	m.HandleFunc("DELETE /repos/{owner}/{repo}/issues/{n}/labels/{name}", s.serve(s.withIssue(func(_ http.ResponseWriter, r *http.Request, _ *repo, is *issue, login string) (int, any) {
		name := r.PathValue("name")
		if !slices.Contains(is.Labels, name) {
			return 404, apiError("Label does not exist")
		}
		is.Labels = slices.DeleteFunc(is.Labels, func(l string) bool { return l == name })
		s.nextID++
		is.Events = append(is.Events, event{ID: s.nextID, Kind: "unlabeled", Label: name, Actor: login, At: time.Now().UTC()})
		return 200, labelsJSON(is.Labels)
	})))
	m.HandleFunc("GET /repos/{owner}/{repo}/labels/{name}", s.serve(s.withRepo(func(_ http.ResponseWriter, r *http.Request, rp *repo, _ string) (int, any) {
		if !rp.labels[r.PathValue("name")] {
			return 404, apiError("Not Found")
		}
		return 200, map[string]any{"name": r.PathValue("name"), "color": "ededed"}
	})))
	m.HandleFunc("POST /repos/{owner}/{repo}/labels", s.serve(s.withRepo(func(_ http.ResponseWriter, r *http.Request, rp *repo, _ string) (int, any) {
		var in struct{ Name, Color string }
		json.NewDecoder(r.Body).Decode(&in)
		if rp.labels[in.Name] {
			return 422, map[string]any{"message": "Validation Failed", "errors": []any{map[string]any{"resource": "Label", "code": "already_exists", "field": "name"}}}
		}
		rp.labels[in.Name] = true
		return 201, map[string]any{"name": in.Name, "color": in.Color}
	})))
	m.HandleFunc("GET /repos/{owner}/{repo}/issues/{n}/events", s.serve(s.withIssue(func(w http.ResponseWriter, r *http.Request, _ *repo, is *issue, _ string) (int, any) {
		var out []map[string]any
		for _, e := range is.Events {
			out = append(out, map[string]any{"id": e.ID, "event": e.Kind, "label": map[string]any{"name": e.Label},
				"actor": map[string]any{"login": e.Actor}, "created_at": e.At.Format(time.RFC3339)})
		}
		return 200, nonNil(paginate(w, r, out))
	})))
	m.HandleFunc("GET /repos/{owner}/{repo}/collaborators/{user}/permission", s.serve(s.withRepo(func(_ http.ResponseWriter, r *http.Request, rp *repo, _ string) (int, any) {
		p, ok := rp.perms[r.PathValue("user")]
		if !ok {
			p = "none"
		}
		return 200, map[string]any{"permission": p, "user": map[string]any{"login": r.PathValue("user")}}
	})))
	m.HandleFunc("GET /repos/{owner}/{repo}/pulls", s.serve(s.withRepo(func(w http.ResponseWriter, r *http.Request, rp *repo, _ string) (int, any) {
		head := r.URL.Query().Get("head")
		state := r.URL.Query().Get("state")
		var out []map[string]any
		for _, p := range sortedPulls(rp.pulls, r.URL.Query().Get("sort"), r.URL.Query().Get("direction")) {
			if head != "" && r.PathValue("owner")+":"+p.Head != head {
				continue
			}
			if state != "" && state != "all" && p.State != state {
				continue
			}
			out = append(out, s.pullJSON(rp, p))
		}
		return 200, nonNil(paginate(w, r, out))
	})))
	m.HandleFunc("POST /repos/{owner}/{repo}/pulls", s.serve(s.withRepo(func(_ http.ResponseWriter, r *http.Request, rp *repo, login string) (int, any) {
		var in struct {
			Title, Body, Head, Base string
			Draft                   bool
		}
		json.NewDecoder(r.Body).Decode(&in)
		head := in.Head
		if _, b, ok := strings.Cut(head, ":"); ok {
			head = b
		}
		for _, p := range rp.pulls {
			if p.Head == head && p.State == "open" {
				return 422, map[string]any{"message": "Validation Failed", "errors": []any{map[string]any{"resource": "PullRequest",
					"code": "custom", "message": "A pull request already exists for " + r.PathValue("owner") + ":" + head + "."}}}
			}
		}
		if in.Title == "" || head == "" || in.Base == "" {
			return 422, apiError("Validation Failed")
		}
		now := time.Now().UTC()
		p := &pull{Number: rp.nextNum, Title: in.Title, Body: in.Body, Head: head, Base: in.Base, Draft: in.Draft, State: "open",
			MergeableState: "clean", Author: login, Created: now, Updated: now}
		rp.nextNum++
		rp.pulls = append(rp.pulls, p)
		// A pull request is an issue too: its conversation is the issue's comments.
		rp.issues[p.Number] = &issue{Number: p.Number, Title: p.Title, Body: p.Body, Author: login, State: "open",
			Created: now, Updated: now, IsPR: true}
		return 201, s.pullJSON(rp, p)
	})))
	s.pullRoutes(m)
	return m
}

type repoHandler func(w http.ResponseWriter, r *http.Request, rp *repo, login string) (int, any)
type issueHandler func(w http.ResponseWriter, r *http.Request, rp *repo, is *issue, login string) (int, any)

func (s *Server) withRepo(h repoHandler) handler {
	return func(w http.ResponseWriter, r *http.Request, login string) (int, any) {
		rp, ok := s.repos[r.PathValue("owner")+"/"+r.PathValue("repo")]
		if !ok {
			return 404, apiError("Not Found")
		}
		return h(w, r, rp, login)
	}
}

func (s *Server) withIssue(h issueHandler) handler {
	return s.withRepo(func(w http.ResponseWriter, r *http.Request, rp *repo, login string) (int, any) {
		n, _ := strconv.Atoi(r.PathValue("n"))
		is, ok := rp.issues[n]
		if !ok {
			return 404, apiError("Not Found")
		}
		return h(w, r, rp, is, login)
	})
}

func (s *Server) listIssues(w http.ResponseWriter, r *http.Request, rp *repo, _ string) (int, any) {
	q := r.URL.Query()
	state := q.Get("state")
	if state == "" {
		state = "open"
	}
	var want []string
	if l := q.Get("labels"); l != "" {
		want = strings.Split(l, ",")
	}
	var out []map[string]any
	for _, is := range sortedIssues(rp) {
		if state != "all" && is.State != state {
			continue
		}
		ok := true
		for _, l := range want {
			ok = ok && slices.Contains(is.Labels, l)
		}
		if ok {
			out = append(out, s.issueJSON(rp, is))
		}
	}
	return 200, nonNil(paginate(w, r, out))
}

func (s *Server) issueJSON(rp *repo, is *issue) map[string]any {
	m := map[string]any{
		"number": is.Number, "title": is.Title, "body": is.Body, "state": is.State,
		"user": map[string]any{"login": is.Author}, "labels": labelsJSON(is.Labels),
		"html_url":   s.htmlURL(rp.fullName, "issues", is.Number),
		"created_at": is.Created.Format(time.RFC3339), "updated_at": is.Updated.Format(time.RFC3339),
		"comments": len(is.Comments),
	}
	if is.IsPR {
		m["pull_request"] = map[string]any{"url": s.htmlURL(rp.fullName, "pull", is.Number)}
	}
	return m
}

func (s *Server) pullJSON(rp *repo, p *pull) map[string]any {
	owner, _, _ := strings.Cut(rp.fullName, "/")
	base := map[string]any{"ref": p.Base, "label": owner + ":" + p.Base}
	if p.BaseSHA != "" {
		base["sha"] = p.BaseSHA
	}
	m := map[string]any{"number": p.Number, "title": p.Title, "body": p.Body, "state": p.State, "draft": p.Draft,
		"html_url": s.htmlURL(rp.fullName, "pull", p.Number), "merged": p.Merged,
		"user": map[string]any{"login": p.Author},
		"head": map[string]any{"ref": p.Head, "label": owner + ":" + p.Head, "sha": s.headSHA(rp, p)},
		"base": base, "merged_at": nil, "closed_at": nil, "merge_commit_sha": nil}
	if !p.Created.IsZero() {
		m["created_at"], m["updated_at"] = p.Created.Format(time.RFC3339), p.Updated.Format(time.RFC3339)
	}
	if !p.MergedAt.IsZero() {
		m["merged_at"], m["closed_at"] = p.MergedAt.Format(time.RFC3339), p.MergedAt.Format(time.RFC3339)
	}
	if p.MergeCommit != "" {
		m["merge_commit_sha"] = p.MergeCommit
	}
	return m
}

func commentJSON(c *Comment) map[string]any {
	return map[string]any{"id": c.ID, "body": c.Body, "user": map[string]any{"login": c.Author},
		"created_at": c.Created.Format(time.RFC3339Nano), "updated_at": c.Updated.Format(time.RFC3339Nano)}
}

func labelsJSON(labels []string) []map[string]any {
	out := []map[string]any{}
	for _, l := range labels {
		out = append(out, map[string]any{"name": l})
	}
	return out
}

func nonNil(v []map[string]any) []map[string]any {
	if v == nil {
		return []map[string]any{}
	}
	return v
}
