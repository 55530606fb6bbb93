package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"unicode"
	"unicode/utf8"

	"golang.org/x/term"
)

// ANSI colours. Every one has the same length, so a column whose cells are
// all painted keeps its alignment in a tabwriter.
const (
	red    = "\x1b[31m"
	green  = "\x1b[32m"
	yellow = "\x1b[33m"
	plain  = "\x1b[39m"
	reset  = "\x1b[0m"
)

// isTerminal reports whether w (a stream: stdin, stdout or stderr) is a
// terminal. A character device is not enough: /dev/null, where cron,
// systemd, CI and docker run without -i put standard input, is one too.
func isTerminal(w any) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// colorOn reports whether to paint what goes to w: only on a terminal,
// never with NO_COLOR set (no-color.org) or TERM=dumb.
func (a *app) colorOn(w io.Writer) bool {
	return (a.terminal || isTerminal(w)) && a.env("NO_COLOR") == "" && a.env("TERM") != "dumb"
}

// paint colours s for w when colour is on.
func (a *app) paint(w io.Writer, color, s string) string {
	if !a.colorOn(w) {
		return s
	}
	return color + s + reset
}

// statusColor picks the colour of a status word.
func statusColor(s string) string {
	switch s {
	case "confirmed", "approved", "succeeded", "active", "valid":
		return green
	case "failed", "rejected", "disabled", "expired":
		return red
	case "pending", "pending_approval", "paused":
		return yellow
	}
	return plain
}

// status paints a status word for a table column: every cell of the column
// is painted, with colours of equal length, so the column stays aligned.
func (a *app) status(s string) string { return a.paint(a.stdout, statusColor(s), clean(s)) }

// printJSON writes v as indented JSON on stdout.
func (a *app) printJSON(v any) error {
	enc := json.NewEncoder(a.stdout)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// table writes aligned rows: a header, then one row per line. Cells are
// cleaned of control characters first.
type table struct {
	tw *tabwriter.Writer
}

func (a *app) newTable(header ...string) *table {
	t := &table{tw: tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', 0)}
	h := append([]string{}, header...)
	for i, c := range h {
		if c == "STATUS" { // painted like its cells, to keep the column aligned
			h[i] = a.paint(a.stdout, plain, c)
		}
	}
	t.row(h...)
	return t
}

// row adds a row; cells must already be cleaned (or painted) text.
func (t *table) row(cells ...string) { fmt.Fprintln(t.tw, strings.Join(cells, "\t")) }

func (t *table) flush() error { return t.tw.Flush() }

// fields writes label/value pairs aligned, for one object.
func (a *app) fields(pairs ...[2]string) error {
	tw := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', 0)
	for _, p := range pairs {
		fmt.Fprintf(tw, "%s\t%s\n", p[0], p[1])
	}
	return tw.Flush()
}

// clean makes text from the service or a counterparty safe to print:
// control characters (escape sequences, tabs, newlines), bidirectional
// overrides and invalid UTF-8 are written as Go escapes, so a memo cannot
// move the cursor, recolour the terminal or break a table.
func clean(s string) string {
	ok := true
	for _, r := range s {
		if !safeRune(r) {
			ok = false
			break
		}
	}
	if ok && utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for i, r := range s {
		switch {
		case r == utf8.RuneError && !strings.HasPrefix(s[i:], "\uFFFD"):
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case safeRune(r):
			b.WriteRune(r)
		default:
			q := fmt.Sprintf("%+q", string(r))
			b.WriteString(q[1 : len(q)-1])
		}
	}
	return b.String()
}

func safeRune(r rune) bool {
	switch {
	case unicode.IsControl(r):
		return false
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069, r == 0x200e, r == 0x200f:
		return false
	}
	return true
}

// short cuts s to n runes with an ellipsis, for table cells.
func short(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// orDash is s, or "-" when empty.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// yesNo writes a boolean for people.
func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
