package workspace

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/client"

	"github.com/aceworks/ace/pkg/sanitize"
)

// remote is the receiving end of a push: what it has, and the update with its pack.
type remote interface {
	advertised(ctx context.Context) (*packp.AdvRefs, error)
	send(ctx context.Context, req *packp.ReferenceUpdateRequest) error
	Close() error
}

// dialRemote reaches the remote at rawURL: git's smart HTTP by ace's own client (the pack streams, never held in
// memory whole), a repository on this machine (a file URL or a path: a local tracker's) through git receive-pack,
// ssh through go-git's transport. secret, when not "", is sent with user as basic auth: the caller decided it
// belongs there.
func dialRemote(ctx context.Context, rawURL, user, secret string) (remote, error) {
	ep, err := transport.NewEndpoint(rawURL)
	if err != nil {
		return nil, fmt.Errorf("remote %s: %w", redactURL(rawURL), err)
	}
	switch ep.Protocol {
	case "http", "https":
		return newHTTPRemote(ep.String(), user, secret), nil
	case "file":
		return startLocalRemote(ctx, ep.Path)
	}
	cl, err := client.NewClient(ep)
	if err != nil {
		return nil, err
	}
	s, err := cl.NewReceivePackSession(ep, nil)
	if err != nil {
		return nil, err
	}
	return &sessionRemote{s}, nil
}

// sessionRemote is a go-git receive-pack session.
type sessionRemote struct{ s transport.ReceivePackSession }

func (r *sessionRemote) advertised(ctx context.Context) (*packp.AdvRefs, error) {
	return r.s.AdvertisedReferencesContext(ctx)
}

func (r *sessionRemote) send(ctx context.Context, req *packp.ReferenceUpdateRequest) error {
	defer req.Packfile.Close()
	rep, err := r.s.ReceivePack(ctx, req)
	if err != nil {
		return err
	}
	if rep != nil {
		return rep.Error()
	}
	return nil
}

func (r *sessionRemote) Close() error { return r.s.Close() }

// localRemote is a repository on this machine, the user's own (a local tracker's remote), reached as git reaches
// it: git receive-pack, the pack written to its stdin, its report read from its stdout. It ends with the push,
// killed if the push failed half-way (go-git's own file transport waits for it then, and it for the rest of the
// pack: for ever).
type localRemote struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    io.Reader
	stderr *capped
	ended  bool
}

func startLocalRemote(ctx context.Context, path string) (*localRemote, error) {
	cmd := exec.CommandContext(ctx, "git", "receive-pack", path)
	for _, kv := range os.Environ() { // git's own variables of ace's would be taken for the remote's
		if !strings.HasPrefix(kv, "GIT_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	r := &localRemote{cmd: cmd, stderr: &capped{max: gitErrMax}}
	cmd.Stderr = r.stderr
	var err error
	if r.in, err = cmd.StdinPipe(); err != nil {
		return nil, err
	}
	if r.out, err = cmd.StdoutPipe(); err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("git receive-pack %s: %w", path, err)
	}
	return r, nil
}

func (r *localRemote) advertised(context.Context) (*packp.AdvRefs, error) {
	adv := packp.NewAdvRefs()
	if err := adv.Decode(r.out); err != nil && !errors.Is(err, packp.ErrEmptyAdvRefs) {
		return nil, fmt.Errorf("the references of %s: %w: %s", r.cmd.Args[2], err, sanitize.Line(r.stderr.String()))
	}
	return adv, nil
}

func (r *localRemote) send(_ context.Context, req *packp.ReferenceUpdateRequest) error {
	defer req.Packfile.Close()
	if err := req.Encode(r.in); err != nil {
		return err
	}
	if err := r.in.Close(); err != nil {
		return err
	}
	rep := packp.NewReportStatus()
	if err := rep.Decode(r.out); err != nil {
		return fmt.Errorf("the answer of %s: %w: %s", r.cmd.Args[2], err, sanitize.Line(r.stderr.String()))
	}
	if err := rep.Error(); err != nil {
		return err
	}
	r.ended = true
	if err := r.cmd.Wait(); err != nil {
		return fmt.Errorf("git receive-pack %s: %w: %s", r.cmd.Args[2], err, sanitize.Line(r.stderr.String()))
	}
	return nil
}

// Close ends receive-pack where the push did not: it is waiting for a pack that will not come.
func (r *localRemote) Close() error {
	if !r.ended {
		r.ended = true
		_ = r.cmd.Process.Kill()
		_ = r.cmd.Wait()
	}
	return nil
}

// httpRemote speaks git's smart HTTP to one repository.
type httpRemote struct {
	base         string // the repository's URL, without a trailing slash
	user, secret string
	client       *http.Client
}

func newHTTPRemote(base, user, secret string) *httpRemote {
	h := &httpRemote{base: strings.TrimSuffix(base, "/"), user: user, secret: secret}
	h.client = &http.Client{CheckRedirect: func(req *http.Request, via []*http.Request) error {
		// A renamed repository redirects to its new name on the same host; nothing else is followed.
		if len(via) >= 5 {
			return errors.New("stopped after 5 redirects")
		}
		if from := via[0].URL; !strings.EqualFold(req.URL.Host, from.Host) || req.URL.Scheme != from.Scheme {
			return fmt.Errorf("redirected to %s://%s: ace pushes only to %s://%s", req.URL.Scheme, req.URL.Host, from.Scheme, from.Host)
		}
		return nil
	}}
	return h
}

func (h *httpRemote) Close() error { return nil }

// do makes one request of the repository, path below its URL.
func (h *httpRemote) do(ctx context.Context, method, path, contentType string, body io.Reader) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, h.base+path, body)
	if err != nil {
		return nil, err
	}
	req.Header.Set("User-Agent", "git/2 (ace)")
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if h.secret != "" {
		req.SetBasicAuth(h.user, h.secret)
	}
	res, err := h.client.Do(req)
	if err != nil {
		return nil, err
	}
	if res.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(res.Body, 512))
		res.Body.Close()
		if res.StatusCode == http.StatusUnauthorized || res.StatusCode == http.StatusForbidden {
			return nil, fmt.Errorf("%s %s: authentication failed (%s)", method, redactURL(h.base), res.Status)
		}
		return nil, fmt.Errorf("%s %s: %s: %s", method, redactURL(h.base), res.Status, sanitize.Line(string(b)))
	}
	return res, nil
}

func (h *httpRemote) advertised(ctx context.Context) (*packp.AdvRefs, error) {
	res, err := h.do(ctx, http.MethodGet, "/info/refs?service=git-receive-pack", "", nil)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	if ct := res.Header.Get("Content-Type"); ct != "application/x-git-receive-pack-advertisement" {
		return nil, fmt.Errorf("%s does not speak git's smart HTTP (Content-Type %q)", redactURL(h.base), ct)
	}
	// A redirect (a renamed repository) moves the pack to where the references came from.
	if p := res.Request.URL; strings.HasSuffix(p.Path, "/info/refs") {
		h.base = p.Scheme + "://" + p.Host + strings.TrimSuffix(p.Path, "/info/refs")
	}
	adv := packp.NewAdvRefs()
	if err := adv.Decode(res.Body); err != nil && !errors.Is(err, packp.ErrEmptyAdvRefs) {
		return nil, fmt.Errorf("the references of %s: %w", redactURL(h.base), err)
	}
	return adv, nil
}

// send posts the update with its pack, streamed as git writes it.
func (h *httpRemote) send(ctx context.Context, req *packp.ReferenceUpdateRequest) error {
	pr, pw := io.Pipe()
	encoded := make(chan struct{})
	go func() {
		defer close(encoded)
		pw.CloseWithError(req.Encode(pw))
	}()
	res, err := h.do(ctx, http.MethodPost, "/git-receive-pack", "application/x-git-receive-pack-request", pr)
	pr.CloseWithError(errors.New("the request ended")) // the encoder stops at its next write, if it has not ended
	<-encoded
	req.Packfile.Close() // after the encoder: the pack is read by one goroutine at a time
	if err != nil {
		return err
	}
	defer res.Body.Close()
	rep := packp.NewReportStatus()
	if err := rep.Decode(res.Body); err != nil {
		return fmt.Errorf("the answer of %s: %w", redactURL(h.base), err)
	}
	return rep.Error()
}
