package agentcheck

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// Print writes the results as a table: per agent its version against the tested range and the network it
// ran in, then a line per step (ok, FAIL, or the phase's error), with the saved screen of a failed step.
func Print(w io.Writer, results []Result) {
	for _, res := range results {
		head := res.Agent
		if res.Version != "" {
			head += " " + res.Version
		}
		if len(res.Reports) > 0 {
			r := res.Reports[0]
			switch {
			case r.Tested == "" || r.Version == "":
			case r.Place < 0:
				head += " (older than the tested range " + r.Tested + ")"
			case r.Place > 0:
				head += " (newer than the tested range " + r.Tested + ")"
			default:
				head += " (inside the tested range " + r.Tested + ")"
			}
			if r.Network != "" {
				head += ", " + r.Network
			}
		}
		fmt.Fprintln(w, head)
		for _, c := range res.Reach {
			mark := "ok  "
			switch {
			case !c.OK && c.Config:
				mark = "FAIL"
			case !c.OK:
				mark = "warn"
			}
			fmt.Fprintf(w, "  %s  %-9s %s\n", mark, "reach", c)
		}
		for _, rep := range res.Reports {
			if rep.Error != "" {
				fmt.Fprintf(w, "  FAIL  %-9s %s\n", orDash(rep.Phase), rep.Error)
				continue
			}
			for _, s := range rep.Steps {
				mark := "ok  "
				if !s.OK {
					mark = "FAIL"
				}
				fmt.Fprintf(w, "  %s  %-9s %s\n", mark, s.Name, s.Detail)
				if s.Screen != "" {
					fmt.Fprintf(w, "        %-9s screen: %s\n", "", s.Screen)
				}
			}
			if !rep.OK() && rep.Dir != "" {
				fmt.Fprintf(w, "        %-9s ace's log: %s\n", "", strings.TrimSuffix(rep.Dir, "/")+"/ace.log")
			}
			if rep.Took > 0 {
				fmt.Fprintf(w, "        %-9s the %s phase took %s\n", "", rep.Phase, rep.Took.Round(100*time.Millisecond))
			}
		}
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
