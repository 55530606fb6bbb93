package rules

import (
	"errors"
	"time"
)

// Hours is a daily window of minutes in UTC, both ends inclusive: from the
// start of minute Start to the end of minute End. When Start is after End
// the window wraps past midnight. Start never equals End.
type Hours struct {
	Start, End int // minutes since midnight, 0..1439
}

// AllDay is the default window, "00:00-23:59".
var AllDay = Hours{Start: 0, End: 23*60 + 59}

var (
	errHoursShape = errors.New(`must be "HH:MM-HH:MM" (24-hour, two digits each)`)
	errHoursRange = errors.New("has an hour above 23 or a minute above 59")
	errHoursEmpty = errors.New("start and end must differ")
)

// ParseHours parses "HH:MM-HH:MM": exactly two digits each, hours 00-23,
// minutes 00-59, start different from end.
func ParseHours(s string) (Hours, error) {
	if len(s) != len("HH:MM-HH:MM") || s[2] != ':' || s[5] != '-' || s[8] != ':' {
		return Hours{}, errHoursShape
	}
	start, err := parseClock(s[0:5])
	if err != nil {
		return Hours{}, err
	}
	end, err := parseClock(s[6:11])
	if err != nil {
		return Hours{}, err
	}
	if start == end {
		return Hours{}, errHoursEmpty
	}
	return Hours{Start: start, End: end}, nil
}

// parseClock parses "HH:MM" (the colon already checked) as minutes.
func parseClock(s string) (int, error) {
	for _, i := range []int{0, 1, 3, 4} {
		if s[i] < '0' || s[i] > '9' {
			return 0, errHoursShape
		}
	}
	h := int(s[0]-'0')*10 + int(s[1]-'0')
	m := int(s[3]-'0')*10 + int(s[4]-'0')
	if h > 23 || m > 59 {
		return 0, errHoursRange
	}
	return h*60 + m, nil
}

// String writes the window as "HH:MM-HH:MM".
func (h Hours) String() string {
	b := make([]byte, 0, 11)
	b = appendClock(b, h.Start)
	b = append(b, '-')
	return string(appendClock(b, h.End))
}

func appendClock(b []byte, m int) []byte {
	hh, mm := m/60, m%60
	return append(b, byte('0'+hh/10), byte('0'+hh%10), ':', byte('0'+mm/10), byte('0'+mm%10))
}

// Contains reports whether t (taken in UTC) falls in the window. Only the
// minute counts: "09:00-17:00" contains 17:00:59 and not 17:01:00.
func (h Hours) Contains(t time.Time) bool {
	t = t.UTC()
	m := t.Hour()*60 + t.Minute()
	if h.Start <= h.End {
		return h.Start <= m && m <= h.End
	}
	return m >= h.Start || m <= h.End
}
