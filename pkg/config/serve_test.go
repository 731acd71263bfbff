package config

import (
	"strings"
	"testing"
)

func TestServeAndNotifyValidation(t *testing.T) {
	t.Parallel()
	cases := []struct{ data, want string }{
		{"[serve]\naddr = \"0.0.0.0:7777\"\n", "serve.token_env: empty"},
		{"[serve]\naddr = \"7777\"\n", "serve.addr:"},
		{"[serve]\nmax_body_bytes = 10\n", "serve.max_body_bytes:"},
		{"[[notify]]\nkind = \"email\"\nurl = \"http://127.0.0.1:1/x\"\n", "notify[0].kind:"},
		{"[[notify]]\nkind = \"slack\"\n", "notify[0].url: empty"},
		{"[[notify]]\nkind = \"ntfy\"\nurl = \"ftp://x\"\n", "notify[0].url:"},
		{"[[notify]]\nkind = \"webhook\"\nurl = \"http://127.0.0.1:1/x\"\nevents = [\"lunch\"]\n", "notify[0].events[0]:"},
	}
	for _, c := range cases {
		cfg, err := Parse("x.toml", []byte(c.data))
		if err == nil {
			err = cfg.Validate()
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want %q", c.data, err, c.want)
		}
	}
	ok := "[serve]\naddr = \"0.0.0.0:7777\"\ntoken_env = \"ACE_TOKEN\"\n[[notify]]\nkind = \"slack\"\nurl_env = \"SLACK_URL\"\nevents = [\"failed\"]\n"
	cfg, err := Parse("x.toml", []byte(ok))
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("valid serve and notify configuration refused: %v", err)
	}
}
