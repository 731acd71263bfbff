package serve

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"
	"time"
)

const tokenCookie = "ace_token"

// secure wraps every route: request bodies are bounded, state-changing requests must come from the dashboard's
// own origin (or from a client that is no browser), and with a token configured every request but /healthz,
// the webhook and the login page carries it.
func (s *Server) secure(next http.Handler) http.Handler {
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.writeError(w, http.StatusForbidden, "cross-origin request refused")
	}))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Referrer-Policy", "no-referrer")
		w.Header().Set("X-Frame-Options", "DENY")
		if r.Body != nil {
			r.Body = http.MaxBytesReader(w, r.Body, s.o.MaxBody)
		}
		if r.URL.Path == "/webhook/github" {
			next.ServeHTTP(w, r) // authenticated by its signature; GitHub is another origin
			return
		}
		if r.URL.Path != "/healthz" && r.URL.Path != "/login" && !strings.HasPrefix(r.URL.Path, "/assets/") && !s.authorized(r) {
			if r.URL.Path == "/" {
				http.Redirect(w, r, "/login", http.StatusSeeOther)
				return
			}
			w.Header().Set("WWW-Authenticate", `Bearer realm="ace"`)
			s.writeError(w, http.StatusUnauthorized, "a valid token is required")
			return
		}
		cop.Handler(next).ServeHTTP(w, r)
	})
}

// authorized reports whether r carries the token (any request does when none is configured).
func (s *Server) authorized(r *http.Request) bool {
	if s.o.Token == "" {
		return true
	}
	if v, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok && s.tokenOK(v) {
		return true
	}
	c, err := r.Cookie(tokenCookie)
	return err == nil && s.tokenOK(c.Value)
}

// tokenOK compares in constant time (over digests, so the length does not show either).
func (s *Server) tokenOK(got string) bool {
	a, b := sha256.Sum256([]byte(got)), sha256.Sum256([]byte(s.o.Token))
	return subtle.ConstantTimeCompare(a[:], b[:]) == 1
}

// login shows the token form (GET) or checks the token and sets the dashboard's cookie (POST).
func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	if s.o.Token == "" {
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	if r.Method == http.MethodPost {
		if err := r.ParseForm(); err != nil {
			s.writeError(w, http.StatusBadRequest, "bad form")
			return
		}
		if s.tokenOK(r.PostForm.Get("token")) {
			http.SetCookie(w, &http.Cookie{Name: tokenCookie, Value: r.PostForm.Get("token"), Path: "/", HttpOnly: true,
				SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil, MaxAge: int((30 * 24 * time.Hour).Seconds())})
			http.Redirect(w, r, "/", http.StatusSeeOther)
			return
		}
		w.WriteHeader(http.StatusUnauthorized)
		s.render(w, "login", map[string]any{"Error": "That token is not the one this server was started with."})
		return
	}
	s.render(w, "login", map[string]any{})
}
