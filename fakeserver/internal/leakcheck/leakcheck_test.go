package leakcheck

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestContainsToken(t *testing.T) {
	cases := []struct {
		text, figure string
		want         bool
	}{
		{`{"amount":"100"}`, "100", true},
		{`sent 100 USDG`, "100", true},
		{`100`, "100", true},
		{`{"n":100}`, "100", true},
		{`aB100xY`, "100", false},
		{`1000`, "100", false},
		{`0.100`, "100", false},
		{`100.5`, "100", false},
		{`x-100`, "100", false},
		{`x_100`, "100", false},
		{`12.5 and 12.50`, "12.50", true},
		{`1100 then 100`, "100", true},
		{``, "100", false},
		{`you hold 12.5.`, "12.5", true},
		{`you hold 12.5. Done`, "12.5", true},
		{`"sent 100."`, "100", true},
		{`12.5.1`, "12.5", false},
		{`delta -100`, "100", true},
		{`"delta":-100}`, "100", true},
		{`tr-100`, "100", false},
	}
	for _, c := range cases {
		if got := Contains([]byte(c.text), c.figure); got != c.want {
			t.Errorf("Contains(%q, %q) = %v, want %v", c.text, c.figure, got, c.want)
		}
	}
	if Contains([]byte("abc"), "") {
		t.Error("the empty figure matched")
	}
}

func TestRecorderFindsBodyAndHeader(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Figure", "77.5")
		fmt.Fprint(w, `{"amount":"4242"}`)
	}))
	defer srv.Close()
	rec := New(srv.Client().Transport)
	resp, err := rec.Client().Get(srv.URL + "/x")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != `{"amount":"4242"}` {
		t.Fatalf("the caller saw %q", b)
	}
	if rec.Len() != 1 {
		t.Fatalf("Len = %d", rec.Len())
	}
	if l := rec.Find("GMT"); len(l) != 0 {
		t.Fatalf("the Date header was searched: %+v", l)
	}
	leaks := rec.Find("4242", "77.5", "999")
	if len(leaks) != 2 {
		t.Fatalf("leaks = %+v", leaks)
	}
	if leaks[0].Where != "body" || leaks[0].Figure != "4242" || leaks[0].Path != "/x" || leaks[1].Where != "header X-Figure" || leaks[1].Figure != "77.5" {
		t.Fatalf("leaks = %+v", leaks)
	}

	// Check fails the test for each leak; run it against a fake TB.
	ft := &fakeTB{}
	rec.Check(ft, "4242")
	if len(ft.errs) != 1 || !strings.Contains(ft.errs[0], "4242") {
		t.Fatalf("Check reported %q", ft.errs)
	}
	ft = &fakeTB{}
	rec.Check(ft, "31337")
	if len(ft.errs) != 0 {
		t.Fatalf("Check reported %q for a figure that is absent", ft.errs)
	}
	rec.Reset()
	ft = &fakeTB{}
	rec.Check(ft, "31337")
	if len(ft.errs) != 1 {
		t.Fatal("Check over no traffic passed")
	}
}

type fakeTB struct {
	testing.TB
	errs []string
}

func (f *fakeTB) Helper() {}
func (f *fakeTB) Errorf(format string, args ...any) {
	f.errs = append(f.errs, fmt.Sprintf(format, args...))
}

func FuzzContains(f *testing.F) {
	f.Add([]byte(`{"amount":"100"}`), "100")
	f.Add([]byte(`aB100xY`), "100")
	f.Add([]byte(``), "")
	f.Fuzz(func(t *testing.T, b []byte, fig string) {
		got := Contains(b, fig)
		if got && !strings.Contains(string(b), fig) {
			t.Fatal("matched a figure that is not there")
		}
	})
}
