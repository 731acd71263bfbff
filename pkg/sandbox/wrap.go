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
		if ents, err := os.ReadDir(filepath.Dir(s.ProxySocket)); err != nil || len(ents) != 1 {
			return nil, fmt.Errorf("sandbox: the proxy socket %s must be alone in its directory, which the box sees", s.ProxySocket)
		}
		port := s.ProxyPort
		if port == 0 {
			port = DefaultProxyPort
		}
		inner = append(inner, "--proxy-socket", ProxyDir+"/"+filepath.Base(s.ProxySocket), "--proxy-listen", "127.0.0.1:"+strconv.Itoa(port))
		for _, f := range s.Forward {
			if f <= 0 || f > 65535 || f == port {
				return nil, fmt.Errorf("sandbox: cannot forward port %d (the proxy's own is %d)", f, port)
			}
			inner = append(inner, "--forward", strconv.Itoa(f))
		}
	} else if len(s.Forward) > 0 {
		return nil, errors.New("sandbox: forwarded ports need the proxy")
	}
	inner = append(append(inner, "--"), argv...)
	args, err := h.bwrapArgs(s, self, inner)
	if err != nil {
		return nil, err
	}
	return &Box{Argv: append([]string{h.bwrap}, args...), Env: env, ProxyURL: proxyURL}, nil
}
