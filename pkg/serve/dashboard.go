package serve

import (
	"bytes"
	"embed"
	"html/template"
	"io/fs"
	"net/http"
	"strconv"
	"strings"
	"time"
)

//go:embed assets
var assets embed.FS

var pages = template.Must(template.New("").Funcs(template.FuncMap{
	"age":    age,
	"status": func(s string) string { return strings.ReplaceAll(s, "_", "-") },
}).ParseFS(assets, "assets/*.html"))

func assetHandler() http.Handler {
	sub, _ := fs.Sub(assets, "assets")
	fsrv := http.StripPrefix("/assets/", http.FileServerFS(sub))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, ".html") {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Cache-Control", "no-cache")
		fsrv.ServeHTTP(w, r)
	})
}

// dashboard is GET /: the runs, rendered on the server (usable before any script runs), then kept live by
// assets/app.js over the event stream.
func (s *Server) dashboard(w http.ResponseWriter, r *http.Request) {
	runs, err := s.runs(r.Context(), false)
	if err != nil {
		s.fail(w, err)
		return
	}
	counts := map[string]int{}
	for _, run := range runs {
		counts[run.Status]++
	}
	checks, err := s.checks()
	if err != nil {
		s.log.WarnContext(r.Context(), "read the agent checks", "err", err)
	}
	fleet, err := s.fleet(r.Context())
	if err != nil {
		s.log.WarnContext(r.Context(), "read the hosts' slots", "err", err)
	}
	now := time.Now()
	s.render(w, "index", map[string]any{"Runs": runs, "Counts": counts, "Host": s.o.Host, "Now": now,
		"Checks": checks, "Hosts": fleet.Hosts, "Queue": fleet.DescribeQueue(now)})
}

// render executes a page with its content security policy: the page's own scripts and styles only.
func (s *Server) render(w http.ResponseWriter, name string, data any) {
	var b bytes.Buffer
	if err := pages.ExecuteTemplate(&b, name+".html", data); err != nil {
		s.fail(w, err)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
	_, _ = w.Write([]byte(s.o.Redactor.Redact(b.String())))
}

// age renders how long ago t was the way people read ages: 45s, 12m, 3h, 2d.
func age(t time.Time) string {
	d := time.Since(t)
	switch {
	case d < time.Minute:
		return itoa(int(d.Seconds())) + "s"
	case d < time.Hour:
		return itoa(int(d.Minutes())) + "m"
	case d < 48*time.Hour:
		return itoa(int(d.Hours())) + "h"
	default:
		return itoa(int(d.Hours()/24)) + "d"
	}
}

func itoa(n int) string { return strconv.Itoa(max(n, 0)) }
