package main

// Confidential input that stays off the command line: a flag's value is in
// `ps` and the shell's history, so the decryption key, an amount and a
// memo can come from a file, or from standard input with "-".

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
)

// Most a --*-file flag reads: a key is 64 hex digits, an amount under 100
// characters, a memo at most 1024 bytes; each with room for white space
// and a line ending.
const (
	maxKeyFile    = 4 << 10
	maxAmountFile = 4 << 10
	maxMemoFile   = 1024 + 2
)

// input is one --*-file flag: its name, what it holds, and its value.
type input struct {
	flag, what, path string
	max              int    // most bytes read
	limit            string // what the most is, said when a file holds more
	private          bool   // refused when group or others can read the file (a key)
}

// read returns the bytes of in: the file at its path, or standard input
// for "-" (which one flag of a command may claim). Errors name the flag
// and the file, never what it holds.
func (a *app) read(in input) ([]byte, error) {
	var r io.Reader
	if in.path == "-" {
		if a.stdinFor != "" {
			return nil, usagef("%s - and %s - both read standard input: give one of them a file", a.stdinFor, in.flag)
		}
		a.stdinFor = in.flag
		if a.terminal || isTerminal(a.stdin) {
			fmt.Fprintf(a.stderr, "Reading %s from standard input; end with Ctrl-D.\n", in.what)
		}
		r = a.stdin
	} else {
		f, err := os.Open(in.path)
		if err != nil {
			return nil, usagef("%s: %v", in.flag, err)
		}
		defer f.Close()
		if in.private {
			if err := checkPrivate(f, in.flag, in.what); err != nil {
				return nil, err
			}
		}
		r = f
	}
	b, err := io.ReadAll(io.LimitReader(r, int64(in.max)+1))
	if err != nil {
		return nil, usagef("%s %s: %v", in.flag, in.source(), err)
	}
	if len(b) > in.max {
		clear(b)
		return nil, usagef("%s %s holds more than %d bytes: %s", in.flag, in.source(), in.max, in.limit)
	}
	return b, nil
}

// source names where in reads from, for messages.
func (in input) source() string {
	if in.path == "-" {
		return "(standard input)"
	}
	return clean(in.path)
}

// checkPrivate refuses a regular file that group or others can read, as
// ssh refuses such a private key, saying how to fix it. Pipes and devices
// (process substitution, /dev/stdin) are not files anyone else opens by
// name, and Windows has no such mode bits.
func checkPrivate(f *os.File, flag, what string) error {
	if runtime.GOOS == "windows" {
		return nil
	}
	fi, err := f.Stat()
	if err != nil {
		return usagef("%s: %v", flag, err)
	}
	if perm := fi.Mode().Perm(); fi.Mode().IsRegular() && perm&0o077 != 0 {
		return usagef("%s %s can be read by group or others (mode %04o): %s must be private to you. Run: chmod 600 %s",
			flag, clean(f.Name()), perm, what, shellQuote(f.Name()))
	}
	return nil
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./~+=:@%,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(clean(s), "'", `'\''`) + "'"
}

// amountText is the amount an --amount-file holds: its text without the
// white space around it.
func amountText(b []byte) string { return strings.TrimSpace(string(b)) }

// memoText is the memo a --memo-file holds: its bytes as they are but for
// one final line ending ("\n" or "\r\n"), which an editor or echo adds.
func memoText(b []byte) string {
	s := string(b)
	if t, ok := strings.CutSuffix(s, "\n"); ok {
		s, _ = strings.CutSuffix(t, "\r")
	}
	return s
}
