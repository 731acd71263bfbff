package agent

import (
	"testing"
	"time"
)

func TestParseReset(t *testing.T) {
	t.Parallel()
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Skip("no zone database:", err)
	}
	now := time.Date(2025, 3, 4, 18, 40, 0, 0, time.UTC)
	cases := []struct {
		clock ResetClock
		in    string
		now   time.Time
		want  time.Time
		ok    bool
	}{
		{ClockZoned, "7:17pm (UTC)", now, time.Date(2025, 3, 4, 19, 17, 0, 0, time.UTC), true},
		{ClockZoned, "7pm (UTC)", now, time.Date(2025, 3, 4, 19, 0, 0, 0, time.UTC), true},
		// Earlier today is tomorrow's; a reset that passed under a minute ago is still today's.
		{ClockZoned, "6:17pm (UTC)", now, time.Date(2025, 3, 5, 18, 17, 0, 0, time.UTC), true},
		{ClockZoned, "6:40pm (UTC)", now.Add(30 * time.Second), time.Date(2025, 3, 4, 18, 40, 0, 0, time.UTC), true},
		{ClockZoned, "12:05am (UTC)", now, time.Date(2025, 3, 5, 0, 5, 0, 0, time.UTC), true},
		{ClockZoned, "8:30pm (Europe/Berlin)", now, time.Date(2025, 3, 4, 20, 30, 0, 0, berlin), true},
		{ClockZoned, "Mar 9, 7pm (UTC)", now, time.Date(2025, 3, 9, 19, 0, 0, 0, time.UTC), true},
		{ClockZoned, "7:17PM (UTC)", now, time.Date(2025, 3, 4, 19, 17, 0, 0, time.UTC), true},
		{ClockZoned, "7:17pm (Mars/Olympus)", now, time.Time{}, false},
		{ClockZoned, "soon", now, time.Time{}, false},
		{ClockLocal, "7:35 PM", now.In(time.Local), time.Date(2025, 3, 4, 19, 35, 0, 0, time.Local), true},
		{ClockLocal, "12:00 PM", time.Date(2025, 3, 4, 9, 0, 0, 0, time.Local), time.Date(2025, 3, 4, 12, 0, 0, 0, time.Local), true},
		{ClockLocal, "13:00 PM", now, time.Time{}, false},
		{ClockRFC3339, "2025-03-04T18:41:05Z", now, time.Date(2025, 3, 4, 18, 41, 5, 0, time.UTC), true},
		{ClockRFC3339, "nope", now, time.Time{}, false},
		{"", "7pm (UTC)", now, time.Time{}, false},
	}
	for _, c := range cases {
		got, ok := ParseReset(c.clock, c.in, c.now)
		if ok != c.ok || !got.Equal(c.want) {
			t.Errorf("ParseReset(%s, %q) = %v, %v; want %v, %v", c.clock, c.in, got, ok, c.want, c.ok)
		}
	}
}
