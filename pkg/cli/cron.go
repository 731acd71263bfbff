package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

func newCmdCron(app *App) *cobra.Command {
	var install bool
	cmd := &cobra.Command{
		Use:   "cron [--install]",
		Short: "Print a crontab line and a systemd user timer for `ace poll --once`",
		Long: `Cron prints two ways to run "ace poll --once" unattended, with the paths of this ace and its config:
a crontab entry, and a systemd user service + timer. --install writes the systemd units to
~/.config/systemd/user and enables the timer (systemd must be running for your user).

Secrets: cron and systemd do not see your shell's environment. Put tokens in the secrets file
([secrets] file, mode 0600) or fetch them with [secrets.commands].`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			u := app.cronUnits()
			if install {
				return installTimer(cmd.Context(), app.Stdout, u)
			}
			printCron(app.Stdout, u)
			return nil
		},
	}
	cmd.Flags().BoolVar(&install, "install", false, "install and enable the systemd user timer")
	return cmd
}

// cronUnits holds what both schedulers need: the command line, PATH (tmux, git and agents must be found) and the
// period.
type cronUnits struct {
	Argv   []string
	Path   string
	Every  time.Duration
	LogDir string
}

func (a *App) cronUnits() cronUnits {
	argv := []string{executable()}
	if a.ConfigPath != "" {
		if p, err := filepath.Abs(a.ConfigPath); err == nil {
			argv = append(argv, "--config", p)
		}
	}
	argv = append(argv, "--log-format", "json", "poll", "--once")
	every := a.Config.Poll.Interval.Duration
	if every < time.Minute {
		every = time.Minute
	}
	return cronUnits{Argv: argv, Path: os.Getenv("PATH"), Every: every, LogDir: filepath.Join(a.Config.Workspace.Root, "logs")}
}

func (u cronUnits) commandLine() string {
	q := make([]string, len(u.Argv))
	for i, a := range u.Argv {
		q[i] = shellQuote(a)
	}
	return strings.Join(q, " ")
}

func (u cronUnits) service() string {
	return fmt.Sprintf(`[Unit]
Description=ace poll: one reconcile pass over labelled issues and active runs

[Service]
Type=oneshot
Environment=PATH=%s
ExecStart=%s
`, u.Path, u.commandLine())
}

func (u cronUnits) timer() string {
	return fmt.Sprintf(`[Unit]
Description=Run ace poll every %s

[Timer]
OnBootSec=1min
OnUnitInactiveSec=%ds
Persistent=true

[Install]
WantedBy=timers.target
`, u.Every, int(u.Every.Seconds()))
}

func printCron(w io.Writer, u cronUnits) {
	minutes := int(u.Every.Minutes())
	fmt.Fprintf(w, "# crontab -e\nPATH=%s\n*/%d * * * * %s >> %s 2>&1\n\n", u.Path, minutes, u.commandLine(),
		shellQuote(filepath.Join(u.LogDir, "poll.log")))
	fmt.Fprintf(w, "# ~/.config/systemd/user/ace-poll.service\n%s\n", u.service())
	fmt.Fprintf(w, "# ~/.config/systemd/user/ace-poll.timer\n%s\n", u.timer())
	fmt.Fprintf(w, "# then: systemctl --user daemon-reload && systemctl --user enable --now ace-poll.timer\n")
	fmt.Fprintf(w, "# (or: ace cron --install)\n")
}

func installTimer(ctx context.Context, w io.Writer, u cronUnits) error {
	systemctl, err := exec.LookPath("systemctl")
	if err != nil {
		return errors.New("systemctl not found: use the crontab line from `ace cron` instead")
	}
	cfgDir, err := os.UserConfigDir()
	if err != nil {
		return err
	}
	dir := filepath.Join(cfgDir, "systemd", "user")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for name, body := range map[string]string{"ace-poll.service": u.service(), "ace-poll.timer": u.timer()} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			return err
		}
		fmt.Fprintf(w, "wrote %s\n", filepath.Join(dir, name))
	}
	for _, args := range [][]string{{"--user", "daemon-reload"}, {"--user", "enable", "--now", "ace-poll.timer"}} {
		out, err := exec.CommandContext(ctx, systemctl, args...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("systemctl %s: %w: %s (is systemd running for your user? the crontab line from `ace cron` works without it)",
				strings.Join(args, " "), err, strings.TrimSpace(string(out)))
		}
	}
	fmt.Fprintln(w, "enabled ace-poll.timer; see it with: systemctl --user list-timers ace-poll.timer")
	return nil
}

// shellQuote quotes s for sh (crontab lines run through /bin/sh).
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r == '/' || r == '-' || r == '_' || r == '.' || r == '=' || r == ':' || r == ',' ||
			(r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9'))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
