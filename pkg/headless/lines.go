package headless

import (
	"bufio"
	"errors"
	"io"
)

// readLines calls fn with each line of r (without its newline, CR kept). A line longer than max is cut to max
// bytes and the rest of it skipped, so one giant line costs a raw event, never the rest of the stream — unlike
// bufio.Scanner, which stops at its first over-long line. fn may keep the slice.
func readLines(r io.Reader, max int, fn func([]byte)) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var cur []byte
	over := false
	for {
		frag, err := br.ReadSlice('\n')
		if len(frag) > 0 {
			end := len(frag) > 0 && frag[len(frag)-1] == '\n'
			if end {
				frag = frag[:len(frag)-1]
			}
			if !over {
				room := max - len(cur)
				if len(frag) > room {
					frag, over = frag[:room], true
				}
				cur = append(cur, frag...)
			}
			if end {
				fn(cur)
				cur, over = nil, false
			}
		}
		switch {
		case err == nil, errors.Is(err, bufio.ErrBufferFull):
		case errors.Is(err, io.EOF):
			if len(cur) > 0 || over {
				fn(cur)
			}
			return nil
		default:
			if len(cur) > 0 {
				fn(cur)
			}
			return err
		}
	}
}
