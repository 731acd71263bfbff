package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// Wrap returns argv run inside the box s describes. The box's first process is ace's own (`__box`, BoxMain):
// it starts the forwarder to the proxy, then runs argv as its child.
func (h *Host) Wrap(s Spec, argv []string) (*Box, error) {
	return h.wrapWith(s, argv, nil)
}

// wrapWith is Wrap with more flags for ace __box (a probe's).
func (h *Host) wrapWith(s Spec, argv, boxArgs []string) (*Box, error) {
	if len(argv) == 0 {
		return nil, errors.New("sandbox: empty command")
	}
	if s.WorkDir == "" || s.Home == "" {
		return nil, errors.New("sandbox: a box needs a working copy and a home")
	}
	self := s.Self
	if self == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("sandbox: locate ace: %w", err)
		}
		self = exe
	}
	env, proxyURL, err := s.environ()
	if err != nil {
		return nil, err
	}
	inner := []string{SelfPath, ChildArg}
	if s.ProxySocket != "" {
		fi, err := os.Stat(s.ProxySocket)
		if err != nil {
			return nil, fmt.Errorf("sandbox: proxy socket: %w", err)
		}
		if fi.Mode().Type() != os.ModeSocket {
			return nil, fmt.Errorf("sandbox: proxy socket %s is not a socket", s.ProxySocket)
		}
		if err := onlySockets(s); err != nil {
			return nil, err
		}
		port := s.ProxyPort
		if port == 0 {
			port = DefaultProxyPort
		}
		inner = append(inner, "--proxy-socket", ProxyDir+"/"+filepath.Base(s.ProxySocket), "--proxy-listen", "127.0.0.1:"+strconv.Itoa(port))
		for _, f := range s.Forward {
			if f < MinForwardPort || f > 65535 || f == port {
				return nil, fmt.Errorf("sandbox: cannot forward port %d (ports %d–65535 but the proxy's own, %d)", f, MinForwardPort, port)
			}
			inner = append(inner, "--forward", strconv.Itoa(f))
		}
		if s.ReportSocket != "" {
			inner = append(append(inner, "--report-socket", ProxyDir+"/"+ReportSocketName), newPolicy(s).args()...)
		}
	} else if len(s.Forward) > 0 || s.ReportSocket != "" {
		return nil, errors.New("sandbox: forwarded ports and recorded files need the proxy")
	}
	inner = append(append(append(inner, boxArgs...), "--"), argv...)
	args, err := h.bwrapArgs(s, self, inner)
	if err != nil {
		return nil, err
	}
	return &Box{Argv: append([]string{h.bwrap}, args...), Env: env, ProxyURL: proxyURL}, nil
}

// onlySockets checks that the proxy socket's directory, which the box sees, holds nothing but ace's sockets: the
// proxy's and the report socket, which must be there when the box reports to it.
func onlySockets(s Spec) error {
	dir := filepath.Dir(s.ProxySocket)
	report := filepath.Join(dir, ReportSocketName)
	if s.ReportSocket != "" && s.ReportSocket != report {
		return fmt.Errorf("sandbox: the report socket must be %s, beside the proxy's", report)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("sandbox: proxy socket: %w", err)
	}
	found := false
	for _, e := range ents {
		switch e.Name() {
		case filepath.Base(s.ProxySocket):
		case ReportSocketName:
			found = true
		default:
			return fmt.Errorf("sandbox: the proxy socket's directory %s holds %s, which the box would see: it must hold only ace's sockets", dir, e.Name())
		}
	}
	if s.ReportSocket != "" && !found {
		return fmt.Errorf("sandbox: no report socket at %s", report)
	}
	return nil
}
