package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// recipeCall is one curl of the recipe, with the line it came from.
type recipeCall struct {
	line                 int
	method, url, body    string
	headers              map[string]string
	status               int // 0: the connection gave no answer
	replayed, answerBody string
}

var (
	recipeMethod = regexp.MustCompile(`-X (\w+)`)
	recipeURL    = regexp.MustCompile(`'?localhost:12180(/[^\s']*)'?`)
	recipeBody   = regexp.MustCompile(`-d '([^']*)'`)
	recipeHeader = regexp.MustCompile(`-H ["']([^"']+)["']`)
	recipeJQ     = regexp.MustCompile(`^(\w+)=\$\(jq -r '\.accounts\[(\d+)\]\.(\w+)' start\.json\)`)
)

// TestTestingDocBinaryRecipe runs the shell recipe of docs/testing.md,
// "From another language: the binary", against this binary: its flags,
// the seed of "Seed a world in one call", the jq read of the start line
// and every curl, each on a new connection as curl makes it (a for loop
// runs its body as many times as it says), and checks what its comments
// promise: a 503, then no answer, then the first answer replayed; exactly
// one transfer, confirmed a block later; new keys after the reset. No curl
// or jq is needed: the lines are read, not run by a shell.
func TestTestingDocBinaryRecipe(t *testing.T) {
	doc, err := os.ReadFile("../../docs/testing.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	seedJSON := between(t, text, "fakeserver.ParseSeed([]byte(`", "`))")
	section := between(t, text, "## From another language: the binary", "\n## ")
	block := between(t, section, "```sh\n", "```")
	firstLine := strings.Count(text[:strings.Index(text, block)], "\n") + 1

	seedPath := filepath.Join(t.TempDir(), "seed.json")
	if err := os.WriteFile(seedPath, []byte(seedJSON), 0o600); err != nil {
		t.Fatal(err)
	}
	var r *running
	vars := map[string]string{}
	var calls []*recipeCall
	lines := strings.Split(block, "\n")
	repeat := 1
	for i := 0; i < len(lines); i++ {
		l, n := lines[i], firstLine+i
		for strings.HasSuffix(l, "\\") && i+1 < len(lines) {
			i++
			l = strings.TrimSuffix(l, "\\") + " " + strings.TrimSpace(lines[i])
		}
		cmd, _, _ := strings.Cut(l, " #")
		cmd = strings.TrimSpace(cmd)
		switch {
		case cmd == "" || strings.HasPrefix(cmd, "#") || strings.HasPrefix(cmd, "go install ") || strings.HasPrefix(cmd, "until "):
		case strings.HasPrefix(cmd, "confpay-fakeserver "):
			flags, _, _ := strings.Cut(cmd, ">") // the redirect and the & are the shell's
			args := strings.Fields(flags)[1:]
			for j, a := range args {
				if a == "seed.json" {
					args[j] = seedPath
				}
			}
			r = launch(t, append([]string{"-addr", "127.0.0.1:0", "-log-level", "off"}, args...)...)
		case recipeJQ.MatchString(cmd):
			m := recipeJQ.FindStringSubmatch(cmd)
			var start struct {
				Accounts []map[string]any `json:"accounts"`
			}
			if err := json.Unmarshal(r.line, &start); err != nil {
				t.Fatal(err)
			}
			idx, _ := strconv.Atoi(m[2])
			v, _ := start.Accounts[idx][m[3]].(string)
			if v == "" {
				t.Fatalf("docs/testing.md:%d: the start line has no accounts[%d].%s", n, idx, m[3])
			}
			vars["$"+m[1]] = v
		case strings.HasPrefix(cmd, "for ") && strings.HasSuffix(cmd, "; do"):
			words := strings.Fields(strings.TrimSuffix(cmd, "; do"))
			repeat = len(words) - 3 // for x in a b c
		case cmd == "done":
			repeat = 1
		case strings.HasPrefix(cmd, "curl "):
			if r == nil {
				t.Fatalf("docs/testing.md:%d: curl before the server starts", n)
			}
			for range repeat {
				c := &recipeCall{line: n, method: "GET", headers: map[string]string{}}
				if m := recipeURL.FindStringSubmatch(cmd); m != nil {
					c.url = r.url + m[1]
				} else {
					t.Fatalf("docs/testing.md:%d: no localhost:12180 URL in %q", n, cmd)
				}
				if m := recipeBody.FindStringSubmatch(cmd); m != nil {
					c.body, c.method = m[1], "POST"
				}
				if m := recipeMethod.FindStringSubmatch(cmd); m != nil {
					c.method = m[1]
				}
				for _, m := range recipeHeader.FindAllStringSubmatch(cmd, -1) {
					name, value, _ := strings.Cut(m[1], ": ")
					for k, v := range vars {
						value = strings.ReplaceAll(value, k, v)
					}
					c.headers[name] = value
				}
				calls = append(calls, c)
			}
		default:
			t.Fatalf("docs/testing.md:%d: the test does not know %q: teach it, or change the recipe", n, cmd)
		}
	}
	if r == nil || len(calls) != 10 {
		t.Fatalf("the recipe started the server %v and made %d calls, want 10: the doc and this test drifted", r != nil, len(calls))
	}

	hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}} // a connection per call, as curl
	for _, c := range calls {
		req, err := http.NewRequest(c.method, c.url, strings.NewReader(c.body))
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range c.headers {
			req.Header.Set(k, v)
		}
		resp, err := hc.Do(req)
		if err != nil {
			continue // status 0: no answer
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		c.status, c.replayed, c.answerBody = resp.StatusCode, resp.Header.Get("Idempotent-Replayed"), string(b)
	}
	got := make([]int, len(calls))
	for i, c := range calls {
		got[i] = c.status
	}
	want := []int{201, 201, 503, 0, 201, 200, 200, 200, 200, 200}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("statuses %v, want %v (docs/testing.md:%d: %s)", got, want, calls[i].line, calls[i].answerBody)
		}
	}
	if calls[4].replayed != "true" {
		t.Errorf("docs/testing.md:%d: the third attempt is not a replay", calls[4].line)
	}
	var list struct {
		Transfers []struct {
			Status string `json:"status"`
		} `json:"transfers"`
	}
	if err := json.Unmarshal([]byte(calls[6].answerBody), &list); err != nil || len(list.Transfers) != 1 || list.Transfers[0].Status != "confirmed" {
		t.Errorf("docs/testing.md:%d: want exactly one transfer, confirmed: %s", calls[6].line, calls[6].answerBody)
	}
	if !strings.Contains(calls[9].answerBody, `"test_key"`) || strings.Contains(calls[9].answerBody, vars["$KEY"]) {
		t.Errorf("docs/testing.md:%d: the reset's answer does not hold new keys", calls[9].line)
	}
}

// between returns what lies between the first from and the next to (or
// the end).
func between(t *testing.T, s, from, to string) string {
	t.Helper()
	_, after, ok := strings.Cut(s, from)
	if !ok {
		t.Fatalf("%q not found", from)
	}
	in, _, ok := strings.Cut(after, to)
	if !ok {
		return after
	}
	return in
}
