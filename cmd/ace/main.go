// Command ace turns issues into pull requests with coding agents in tmux. See `ace help`.
package main

import (
	"os"

	"github.com/aceworks/ace/pkg/cli"
)

func main() { os.Exit(cli.Main()) }
